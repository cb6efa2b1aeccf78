//! The payoff map ("When does balancing pay off?"): time-to-solution
//! increase over the same variant run quiet (medians) against the noise
//! duty, one panel per noisy placement, and against a workload's cost
//! factor, one panel per named workload; one line per variant; dashed, the
//! slowest-mode model's forecast for plain async, and dotted, a perfect
//! balancer's (both from the reports' `model` or `workload_model`). Each
//! variant in its look (`look`: colour by family, marker by kind).

use plotters::coord::Shift;
use plotters::prelude::*;

use super::landscape::{family, variant_order};
use super::look::{draw_mark, look};
use super::stats::quantile;
use super::{
    Chart, Draw, DrawResult, FONT, Frame, Key, Mark, Stroke, TEXT, chart, mesh, variant_colours,
};
use crate::lab::experiment::results::Record;
use braid::EngineKind;
use braid::{Forecast, WorkloadForecast};

struct Panel {
    title: String,
    /// The x axis: the noise duty (%), or a workload's cost factor.
    x_desc: &'static str,
    /// Per variant (index into `variants`): (duty, increase %) points.
    lines: Vec<(usize, Vec<(f64, f64)>)>,
    /// Per variant, every repetition's point (real machines only: a
    /// simulation repeats itself).
    reps: Vec<(usize, Vec<(f64, f64)>)>,
    model: Vec<(f64, f64)>,
    ideal: Vec<(f64, f64)>,
    /// A row per point, quiet runs included: the figure's CSV.
    rows: Vec<Row>,
}

pub(super) struct PayoffMap {
    /// The figure's headline: what is compared, and where it ran.
    headline: String,
    variants: Vec<String>,
    panels: Vec<Panel>,
    /// What each series is compared with.
    baseline: Baseline,
}

/// The time a series' increase is measured from.
#[derive(Debug, Clone, PartialEq)]
enum Baseline {
    /// Each variant's own quiet run: the paper's payoff, for simulations,
    /// whose quiet runs are exact.
    OwnQuiet,
    /// One plain async variant's quiet median for every series: on a real
    /// machine each variant's own quiet median scatters by itself, so
    /// dividing by it would rank the baselines, not the variants (the
    /// quiet points, at 0, say where each variant starts).
    Reference(String),
}

/// What one point of a line stands for, as the figure's CSV lists it.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    variant: usize,
    /// The duty (%) or factor; none for the quiet run.
    x: Option<f64>,
    runs: usize,
    /// Medians of the runs that converged.
    tts_s: Option<f64>,
    increase_pct: Option<f64>,
    moves: Option<f64>,
}

/// Each variant's line (median per x), every repetition's point, and a
/// row per point for the CSV; the increase over its baseline in %:
/// `at(v, x)` the records of variant `v` at `x`, `quiet(v)` its quiet
/// ones, drawn at x = 0 when `baseline` is a reference.
fn series<'r>(
    variants: &[String],
    xs: &[f64],
    at: impl Fn(&str, f64) -> Vec<&'r Record>,
    quiet: impl Fn(&str) -> Vec<&'r Record>,
    baseline: &Baseline,
) -> SeriesOf {
    let times = |rs: &[&Record]| -> Vec<f64> { rs.iter().filter_map(|r| tts(r)).collect() };
    let moves = |rs: &[&Record]| -> Option<f64> {
        let m: Vec<f64> = (rs.iter())
            .filter_map(|r| Some(r.report.as_ref()?.lb.as_ref()?.moves as f64))
            .collect();
        quantile(&m, 0.5)
    };
    let reference = match baseline {
        Baseline::Reference(v) => quantile(&times(&quiet(v)), 0.5),
        Baseline::OwnQuiet => None,
    };
    let mut out = SeriesOf::default();
    for (vi, v) in variants.iter().enumerate() {
        let own = quiet(v);
        let Some(base) = reference.or_else(|| quantile(&times(&own), 0.5)) else {
            continue;
        };
        let up = |t: f64| 100.0 * (t / base - 1.0);
        let mut groups: Vec<(Option<f64>, Vec<&Record>)> =
            xs.iter().map(|&x| (Some(x), at(v, x))).collect();
        groups.insert(0, (None, own));
        for (x, rs) in &groups {
            if rs.is_empty() {
                continue;
            }
            let median = quantile(&times(rs), 0.5);
            out.rows.push(Row {
                variant: vi,
                x: *x,
                runs: rs.len(),
                tts_s: median,
                increase_pct: median.map(up),
                moves: moves(rs),
            });
        }
        // The quiet runs are drawn at 0 against a reference only: against
        // their own median they are 0 by definition.
        let drawn = |x: &Option<f64>| x.is_some() || reference.is_some();
        let pts: Vec<(f64, f64)> = (groups.iter())
            .filter(|(x, _)| drawn(x))
            .filter_map(|(x, rs)| Some((x.unwrap_or(0.0), up(quantile(&times(rs), 0.5)?))))
            .collect();
        if pts.is_empty() {
            continue;
        }
        if reference.is_some() {
            let all = (groups.iter())
                .flat_map(|(x, rs)| times(rs).into_iter().map(|t| (x.unwrap_or(0.0), up(t))))
                .collect();
            out.reps.push((vi, all));
        }
        out.lines.push((vi, pts));
    }
    out
}

/// Lines, repetitions and rows per variant ([`series`]).
#[derive(Default)]
struct SeriesOf {
    lines: Vec<(usize, Vec<(f64, f64)>)>,
    reps: Vec<(usize, Vec<(f64, f64)>)>,
    rows: Vec<Row>,
}

fn median_of(records: &[&&Record], f: impl Fn(&Record) -> Option<f64>) -> Option<f64> {
    let v: Vec<f64> = records.iter().filter_map(|r| f(r)).collect();
    quantile(&v, 0.5)
}

fn tts(r: &Record) -> Option<f64> {
    r.report.as_ref()?.time_to_solution_s
}

/// Sum of one field over the report's model forecasts.
fn model_sum(r: &Record, field: impl Fn(&Forecast) -> f64) -> Option<f64> {
    let model = &r.report.as_ref()?.model;
    (!model.is_empty()).then(|| model.iter().map(field).sum())
}

impl PayoffMap {
    pub(super) fn new(records: &[&Record]) -> PayoffMap {
        let variants = variant_order(records);
        // Records of a real machine are compared with plain async's quiet
        // time (the first plain async variant that has quiet runs).
        let real = records.iter().any(|r| r.engine == EngineKind::Run);
        let reference = (variants.iter())
            .filter(|v| family(v) == 1)
            .find(|v| !quiet_of(records, v).is_empty());
        let baseline = match (real, reference) {
            (true, Some(v)) => Baseline::Reference(v.clone()),
            _ => Baseline::OwnQuiet,
        };
        // Each suite's panels from its own records: a series and its
        // quiet baseline come from one suite run (runs.rs), never from two
        // suites that both ran a variant quiet.
        let mut suites: Vec<&str> = Vec::new();
        for r in records {
            if !suites.contains(&r.suite.as_str()) {
                suites.push(&r.suite);
            }
        }
        let panels = suites
            .iter()
            .flat_map(|suite| {
                let own: Vec<&Record> = (records.iter())
                    .copied()
                    .filter(|r| r.suite == *suite)
                    .collect();
                let mut panels = noise_panels(&own, &variants, &baseline);
                panels.extend(imbalance_panels(&own, &variants, &baseline));
                panels
            })
            .collect();
        PayoffMap {
            headline: headline(records, &baseline),
            variants,
            panels,
            baseline,
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.panels.iter().all(|p| p.lines.is_empty())
    }

    /// The figure as CSV rows, a header first: per panel, each variant's
    /// quiet run (x empty) and every point of its line, with its runs,
    /// median time to solution, increase over its baseline and median
    /// moves; then the model's two forecasts.
    pub(super) fn rows(&self) -> Vec<Vec<String>> {
        let mut out = vec![
            [
                "panel",
                "variant",
                "x",
                "runs",
                "tts_s",
                "increase_pct",
                "moves",
            ]
            .map(String::from)
            .to_vec(),
        ];
        for p in &self.panels {
            for r in &p.rows {
                out.push(vec![
                    p.title.clone(),
                    self.variants[r.variant].clone(),
                    super::cell(r.x, 2),
                    r.runs.to_string(),
                    super::cell(r.tts_s, 6),
                    super::cell(r.increase_pct, 3),
                    super::cell(r.moves, 1),
                ]);
            }
            for (name, line) in [
                ("model: plain async", &p.model),
                ("model: perfect balancer", &p.ideal),
            ] {
                for &(x, y) in line {
                    out.push(vec![
                        p.title.clone(),
                        name.to_string(),
                        super::cell(Some(x), 2),
                        String::new(),
                        String::new(),
                        super::cell(Some(y), 3),
                        String::new(),
                    ]);
                }
            }
        }
        out
    }
}

/// The noise panels of one suite's records, one per placement: each
/// variant's increase over its baseline against the duty.
fn noise_panels(records: &[&Record], variants: &[String], baseline: &Baseline) -> Vec<Panel> {
    let mut placements: Vec<String> = Vec::new();
    let mut duties: Vec<f64> = Vec::new();
    for r in records {
        if let (Some(p), Some(d)) = (&r.sample.placement, r.sample.duty) {
            if !placements.contains(p) {
                placements.push(p.clone());
            }
            if !duties.contains(&d) {
                duties.push(d);
            }
        }
    }
    duties.sort_by(f64::total_cmp);
    placements
        .iter()
        .map(|place| {
            let at = |v: &str, d: f64| -> Vec<&&Record> {
                records
                    .iter()
                    .filter(|r| {
                        r.sample.variant == v
                            && r.sample.placement.as_deref() == Some(place)
                            && r.sample.duty == Some(d)
                    })
                    .collect()
            };
            let percent: Vec<f64> = duties.iter().map(|d| d * 100.0).collect();
            let SeriesOf { lines, reps, rows } = series(
                variants,
                &percent,
                |v, x| at(v, x / 100.0).into_iter().copied().collect(),
                |v| quiet_of(records, v).into_iter().copied().collect(),
                baseline,
            );
            let forecast = |field: fn(&Forecast) -> f64| -> Vec<(f64, f64)> {
                duties
                    .iter()
                    .filter_map(|&d| {
                        let all: Vec<&&Record> = variants.iter().flat_map(|v| at(v, d)).collect();
                        Some((d * 100.0, 100.0 * median_of(&all, |r| model_sum(r, field))?))
                    })
                    .collect()
            };
            // The models forecast a variant's loss over its own quiet
            // run at scale; against a reference, on a machine of a
            // few threads, they do not apply.
            let modelled = *baseline == Baseline::OwnQuiet;
            Panel {
                title: format!("noise on: {place}"),
                x_desc: "noise duty on the noisy core(s) (%)",
                lines,
                reps,
                rows,
                model: if modelled {
                    forecast(|m| m.plain_async_loss)
                } else {
                    Vec::new()
                },
                ideal: if modelled {
                    forecast(|m| m.ideal_balanced_loss)
                } else {
                    Vec::new()
                },
            }
        })
        .collect()
}

/// What the figure compares, and on what: the simulated machine's shape,
/// or the real one's CPU.
fn headline(records: &[&Record], baseline: &Baseline) -> String {
    let shape = (records.iter().find_map(|r| r.report.as_ref())).map_or(String::new(), |r| {
        let s = if r.sockets == 1 { "" } else { "s" };
        format!("{} threads on {} socket{s}", r.threads, r.sockets)
    });
    match baseline {
        Baseline::OwnQuiet => format!(
            "What noise and imbalance add to each variant's time to solution (simulated, {shape})"
        ),
        Baseline::Reference(v) => {
            let cpu = super::machine_of(records).unwrap_or_else(|| "this machine".into());
            format!("Time to solution under noise, over {v}'s quiet median ({cpu}, {shape})")
        }
    }
}

/// The workloads' names, in the records' order, and their cost factors,
/// from the least.
fn workload_names_and_factors(records: &[&Record]) -> (Vec<String>, Vec<f64>) {
    let mut names: Vec<String> = Vec::new();
    let mut factors: Vec<f64> = Vec::new();
    for r in records {
        if let (Some(p), Some(f)) = (&r.sample.placement, r.sample.factor) {
            if !names.contains(p) {
                names.push(p.clone());
            }
            if !factors.contains(&f) {
                factors.push(f);
            }
        }
    }
    factors.sort_by(f64::total_cmp);
    (names, factors)
}

/// The application's imbalance, one panel per named workload: the
/// increase over the same variant's quiet uniform run against the
/// workload's cost factor; the model's lines from the reports'
/// `workload_model` (its work times its loss).
fn imbalance_panels(records: &[&Record], variants: &[String], baseline: &Baseline) -> Vec<Panel> {
    let (names, factors) = workload_names_and_factors(records);
    names
        .iter()
        .map(|name| {
            let at = |v: &str, f: f64| -> Vec<&&Record> {
                records
                    .iter()
                    .filter(|r| {
                        r.sample.variant == v
                            && r.sample.placement.as_deref() == Some(name)
                            && r.sample.factor == Some(f)
                    })
                    .collect()
            };
            let SeriesOf { lines, reps, rows } = series(
                variants,
                &factors,
                |v, f| at(v, f).into_iter().copied().collect(),
                |v| quiet_of(records, v).into_iter().copied().collect(),
                baseline,
            );
            // Each forecast from the run it describes: plain async's from
            // the plain runs, the perfect balancer's from the run with the
            // least progress (the best balanced: a workload that grows with
            // progress has grown least there).
            let forecast = |plain: bool, time: fn(&WorkloadForecast) -> f64| -> Vec<(f64, f64)> {
                factors
                    .iter()
                    .filter_map(|&f| {
                        let all: Vec<&&Record> = variants
                            .iter()
                            .filter(|v| !plain || family(v) == 1)
                            .flat_map(|v| at(v, f))
                            .collect();
                        let pick = match plain {
                            true => median_of(&all, |r| {
                                Some(time(&r.report.as_ref()?.workload_model?))
                            })?,
                            false => {
                                let least = all
                                    .iter()
                                    .min_by(|a, b| progress(a).total_cmp(&progress(b)))?;
                                time(&least.report.as_ref()?.workload_model?)
                            }
                        };
                        Some((f, 100.0 * (pick - 1.0)))
                    })
                    .collect()
            };
            let modelled = *baseline == Baseline::OwnQuiet;
            Panel {
                title: format!("the application's imbalance: {name}"),
                x_desc: "cost factor of the heavy region",
                lines,
                reps,
                rows,
                model: match modelled {
                    true => forecast(true, WorkloadForecast::plain_async_time),
                    false => Vec::new(),
                },
                ideal: match modelled {
                    true => forecast(false, WorkloadForecast::ideal_balanced_time),
                    false => Vec::new(),
                },
            }
        })
        .collect()
}

/// Variant `v`'s quiet records: no noise, no placement, no workload.
fn quiet_of<'a>(records: &'a [&'a Record], v: &str) -> Vec<&'a &'a Record> {
    records
        .iter()
        .filter(|r| r.sample.variant == v && !r.sample.noise && r.sample.placement.is_none())
        .collect()
}

/// A run's mean updates per subdomain (infinite without a report).
fn progress(r: &Record) -> f64 {
    r.report.as_ref().map_or(f64::INFINITY, |rep| {
        rep.subdomain_updates.iter().sum::<u64>() as f64 / rep.subdomain_updates.len().max(1) as f64
    })
}

/// Rows and columns for `n` panels: two per row.
fn grid(n: usize) -> (usize, usize) {
    let cols = n.clamp(1, 2);
    (n.div_ceil(cols).max(1), cols)
}

/// The headline's strip and the legend's below it, above the panels,
/// pixels.
const HEADLINE_PX: u32 = 40;
const LEGEND_PX: u32 = 165;
/// A panel, pixels: two side by side make a figure 1200 wide, legible at
/// a page's width.
const PANEL_PX: (u32, u32) = (600, 520);
/// The model's two forecasts' dashes: plain async, a perfect balancer.
const MODEL_DASH: (u32, u32) = (8, 5);
const IDEAL_DASH: (u32, u32) = (2, 4);
const GREY: RGBColor = RGBColor(90, 90, 90);

impl Draw for PayoffMap {
    fn size(&self) -> (u32, u32) {
        let (rows, cols) = grid(self.panels.len());
        (
            PANEL_PX.0 * cols as u32,
            PANEL_PX.1 * rows as u32 + HEADLINE_PX + LEGEND_PX,
        )
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE)?;
        let (head, rest) = root.split_vertically(HEADLINE_PX);
        head.draw(&Text::new(
            self.headline.clone(),
            (10, 10),
            TextStyle::from((FONT, 20).into_font()),
        ))?;
        let (top, rest) = rest.split_vertically(LEGEND_PX);
        super::draw_keys(&top, &self.keys(), TEXT)?;
        let areas = rest.split_evenly(grid(self.panels.len()));
        for (p, area) in self.panels.iter().zip(&areas) {
            self.draw_panel(p, area)?;
        }
        Ok(())
    }
}

impl PayoffMap {
    /// One legend for the whole figure: every variant in any panel, then
    /// the model's lines, each drawn as in the panels.
    fn keys(&self) -> Vec<Key> {
        let mut keys: Vec<Key> = (0..self.variants.len())
            .filter(|vi| {
                self.panels
                    .iter()
                    .any(|p| p.lines.iter().any(|(i, _)| i == vi))
            })
            .map(|vi| {
                let mark = look(&self.variants[vi]).mark;
                Key::new(
                    self.variants[vi].clone(),
                    variant_colours(&self.variants)[vi],
                    Stroke::Solid,
                    mark,
                )
            })
            .collect();
        if self.panels.iter().any(|p| !p.model.is_empty()) {
            let (d, g) = MODEL_DASH;
            keys.push(Key::new(
                "model: plain async",
                GREY,
                Stroke::Dashed(d, g),
                Mark::None,
            ));
        }
        if self.panels.iter().any(|p| !p.ideal.is_empty()) {
            let (d, g) = IDEAL_DASH;
            keys.push(Key::new(
                "model: perfect balancer",
                GREY,
                Stroke::Dashed(d, g),
                Mark::None,
            ));
        }
        if self.panels.iter().any(|p| !p.reps.is_empty()) {
            keys.push(Key {
                open: true,
                ..Key::new(
                    "small, open: each run; bar: least to most",
                    RGBColor(60, 60, 60),
                    Stroke::None,
                    Mark::Circle,
                )
            });
        }
        keys.push(Key::new(
            "dashed, nested: lies on another",
            RGBColor(60, 60, 60),
            Stroke::Dashed(4, 3),
            Mark::None,
        ));
        keys
    }

    fn draw_panel<DB: DrawingBackend>(&self, p: &Panel, area: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let (x1, y0, y1) = self.bounds(p);
        let off: Vec<String> = p
            .lines
            .iter()
            .filter_map(|(vi, pts)| {
                let worst = pts.iter().map(|q| q.1).fold(f64::MIN, f64::max);
                (worst > y1).then(|| format!("{} up to +{worst:.0}%", self.variants[*vi]))
            })
            .collect();
        let frame = Frame {
            caption: 22,
            margin: 16,
            x_labels: 50,
            y_labels: 78,
        };
        // Room above the top for what is off the scale: it is drawn at
        // `clip`, inside the frame and below the caption.
        let span = y1 - y0;
        let clip = y1 + 0.04 * span;
        // The x axis spans the data (duties from 10%, cost factors from
        // 1.5), with a margin either side.
        let x0 = (p.lines.iter().flat_map(|(_, pts)| pts.iter())).fold(x1, |x, &(a, _)| x.min(a));
        let pad = 0.08 * (x1 - x0).max(1.0);
        let x_end = x1 + pad;
        let (x, y) = ((x0 - pad)..x_end, (y0 - 0.05 * span)..(y1 + 0.1 * span));
        let mut chart = chart(area, &p.title, frame, x, y)?;
        let y_desc = match &self.baseline {
            Baseline::OwnQuiet => "time-to-solution increase over quiet (%)".to_string(),
            Baseline::Reference(v) => format!("time to solution over {v}'s quiet median (%)"),
        };
        mesh(&mut chart)
            .x_desc(p.x_desc)
            .y_desc(y_desc)
            .x_label_formatter(&|v| format!("{v:.0}"))
            .y_label_formatter(&|v| format!("{v:.1}"))
            .light_line_style(WHITE.mix(0.0))
            .draw()?;
        let series: Vec<Vec<(f64, f64)>> = p.lines.iter().map(|(_, pts)| pts.clone()).collect();
        let mut place = vec![(0usize, 1usize); series.len()];
        // Series closer than a marker's width (about 2% of the axis at this
        // height) at half their points or more would hide one another: the
        // later ones are dashed, and their markers set side by side.
        for group in super::coinciding_at(&series, 0.02 * span, 0.5) {
            for (j, &i) in group.iter().enumerate() {
                place[i] = (j, group.len());
            }
        }
        for (k, (vi, pts)) in p.lines.iter().enumerate() {
            if let Some((_, all)) = p.reps.iter().find(|(i, _)| i == vi) {
                self.draw_reps(&mut chart, *vi, all, clip)?;
            }
            self.draw_line(&mut chart, *vi, pts, clip, place[k])?;
        }
        draw_forecasts(&mut chart, p)?;
        if !off.is_empty() {
            let (px, py) = chart.backend_coord(&(x_end, clip));
            area.draw(&Text::new(
                format!("off the scale: {}", off.join(", ")),
                (
                    px - area.get_base_pixel().0 - 6,
                    // Below the clipped line's markers, clear of them.
                    py - area.get_base_pixel().1 + 14,
                ),
                TextStyle::from((FONT, TEXT).into_font()).pos(
                    plotters::style::text_anchor::Pos::new(
                        plotters::style::text_anchor::HPos::Right,
                        plotters::style::text_anchor::VPos::Top,
                    ),
                ),
            ))?;
        }
        Ok(())
    }
}

impl PayoffMap {
    /// The axes' ends: x to the largest duty; y to the asynchronous
    /// variants' and the model's range (sync loses ten times more and would
    /// flatten them; its points past the top are drawn at the edge, with a
    /// note), with room above.
    fn bounds(&self, p: &Panel) -> (f64, f64, f64) {
        let all = (p.lines.iter().chain(&p.reps))
            .filter(|(vi, _)| family(&self.variants[*vi]) > 0)
            .flat_map(|(_, pts)| pts.iter())
            .chain(&p.model)
            .chain(&p.ideal);
        let (x1, y0, top) = all.fold((0.0f64, 0.0f64, 1.0f64), |(x, lo, hi), &(a, b)| {
            (x.max(a), lo.min(b), hi.max(b))
        });
        let x1 = p
            .lines
            .iter()
            .flat_map(|(_, pts)| pts.iter())
            .fold(x1, |x, &(a, _)| x.max(a));
        (x1, y0, top * 1.05)
    }

    /// Variant `vi`'s colour and marker in this figure.
    fn drawn_as(&self, vi: usize) -> (RGBColor, Mark) {
        (
            variant_colours(&self.variants)[vi],
            look(&self.variants[vi]).mark,
        )
    }

    /// Variant `vi`'s repetitions, each a small open marker, and a bar from
    /// the least to the most at each x; placed as [`Self::draw_line`]
    /// places its line's markers.
    fn draw_reps<DB: DrawingBackend>(
        &self,
        chart: &mut Chart<'_, DB>,
        vi: usize,
        all: &[(f64, f64)],
        y1: f64,
    ) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let (c, mark) = self.drawn_as(vi);
        let mut xs: Vec<f64> = all.iter().map(|p| p.0).collect();
        xs.dedup();
        for x in xs {
            let ys = all.iter().filter(|p| p.0 == x).map(|p| p.1.min(y1));
            let (lo, hi) = ys.fold((f64::MAX, f64::MIN), |(a, b), y| (a.min(y), b.max(y)));
            let height = chart.backend_coord(&(x, hi)).1 - chart.backend_coord(&(x, lo)).1;
            chart.draw_series([EmptyElement::at((x, lo))
                + PathElement::new(vec![(0, 0), (0, height)], c.stroke_width(1))])?;
        }
        for &(x, y) in all {
            draw_mark(chart, mark, (x, y.min(y1)), (0, 3), c, true)?;
        }
        Ok(())
    }

    /// Variant `vi`'s line, its markers shaped by family, clipped at `y1`.
    /// `(j, of)`: it is the j-th of `of` series that lie on one another:
    /// past the first, its line is dashed over the one below, and its
    /// markers are nested inside those below, each at its own value
    /// (setting them side by side would move them along the x axis).
    fn draw_line<DB: DrawingBackend>(
        &self,
        chart: &mut Chart<'_, DB>,
        vi: usize,
        pts: &[(f64, f64)],
        y1: f64,
        (j, of): (usize, usize),
    ) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let (c, mark) = self.drawn_as(vi);
        let pts: Vec<(f64, f64)> = pts.iter().map(|&(x, y)| (x, y.min(y1))).collect();
        match j {
            0 => chart.draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))?,
            _ => chart.draw_series(DashedLineSeries::new(
                pts.iter().copied(),
                4,
                3,
                c.stroke_width(2),
            ))?,
        };
        let size = 5 + 3 * (of - 1 - j) as i32;
        for &pt in &pts {
            draw_mark(chart, mark, pt, (0, size), c, false)?;
        }
        Ok(())
    }
}

/// The model's two forecasts, dashed (plain async) and dotted (a perfect
/// balancer).
fn draw_forecasts<DB: DrawingBackend>(chart: &mut Chart<'_, DB>, p: &Panel) -> DrawResult
where
    DB::ErrorType: 'static,
{
    for (points, (dash, gap)) in [(&p.model, MODEL_DASH), (&p.ideal, IDEAL_DASH)] {
        if points.is_empty() {
            continue;
        }
        chart.draw_series(DashedLineSeries::new(
            points.iter().copied(),
            dash,
            gap,
            GREY.stroke_width(2),
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::experiment::suite::{Figure, Sample};
    use braid::Config;
    use braid::Plan;

    /// Records of `variant` on `engine` taking `times`, quiet or at a duty
    /// of 0.5 next to the source.
    fn records(engine: EngineKind, variant: &str, duty: Option<f64>, times: &[f64]) -> Vec<Record> {
        let mut cfg = Config::default();
        cfg.apply_overrides(&["numerics=false", "max_iterations=2", "domain_size=8"])
            .unwrap();
        let (report, _) = braid::run(&Plan::simulated(&cfg).unwrap()).unwrap();
        times
            .iter()
            .map(|&t| {
                let mut report = report.clone();
                report.time_to_solution_s = Some(t);
                let sample = Sample {
                    variant: variant.into(),
                    noise: duty.is_some(),
                    placement: duty.map(|_| "next".to_string()),
                    duty,
                    ..Sample::default()
                };
                Record::for_tests(Figure::Payoff, engine, sample, Some(report))
            })
            .collect()
    }

    fn map(engine: EngineKind) -> PayoffMap {
        let mut all = records(engine, "async(4)", None, &[1.0, 1.2, 1.1]);
        all.extend(records(
            engine,
            "async(4)+residual(0.001)",
            None,
            &[0.8, 0.9, 1.0],
        ));
        all.extend(records(engine, "async(4)", Some(0.5), &[1.3, 1.4, 1.5]));
        all.extend(records(
            engine,
            "async(4)+residual(0.001)",
            Some(0.5),
            &[1.0, 1.1, 1.2],
        ));
        PayoffMap::new(&all.iter().collect::<Vec<_>>())
    }

    fn close(a: &[(f64, f64)], b: &[(f64, f64)]) -> bool {
        a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|(p, q)| (p.0 - q.0).abs() < 1e-9 && (p.1 - q.1).abs() < 1e-9)
    }

    #[test]
    fn a_real_machines_series_are_all_measured_from_plain_asyncs_quiet_median_with_every_run() {
        let m = map(EngineKind::Run);
        assert_eq!(m.baseline, Baseline::Reference("async(4)".into()));
        let p = &m.panels[0];
        let residual = &p.lines.iter().find(|(vi, _)| *vi == 1).unwrap().1;
        // Quiet at 0: 0.9 over 1.1; noisy: 1.1 over 1.1.
        assert!(
            close(residual, &[(0.0, 100.0 * (0.9 / 1.1 - 1.0)), (50.0, 0.0)]),
            "{residual:?}"
        );
        let runs = &p.reps.iter().find(|(vi, _)| *vi == 1).unwrap().1;
        assert_eq!(runs.len(), 6, "every run, quiet and noisy");
        assert!(
            p.model.is_empty() && p.ideal.is_empty(),
            "no model on a real machine"
        );
    }

    #[test]
    fn a_simulations_series_are_measured_from_their_own_quiet_runs() {
        let m = map(EngineKind::Sim);
        assert_eq!(m.baseline, Baseline::OwnQuiet);
        let p = &m.panels[0];
        let residual = &p.lines.iter().find(|(vi, _)| *vi == 1).unwrap().1;
        assert!(
            close(residual, &[(50.0, 100.0 * (1.1 / 0.9 - 1.0))]),
            "{residual:?}"
        );
        assert!(p.reps.is_empty());
    }

    /// Two suites that both ran async(4) quiet: each panel divides by its
    /// own suite's quiet run, not by the two pooled (the README's payoff
    /// map once divided by the mean of two builds' quiet times).
    #[test]
    fn each_suites_panels_are_measured_from_that_suites_own_quiet_runs() {
        let suite = |name: &str, place: &str, quiet: f64, noisy: f64| -> Vec<Record> {
            let mut all = records(EngineKind::Sim, "async(4)", None, &[quiet]);
            all.extend(records(EngineKind::Sim, "async(4)", Some(0.5), &[noisy]));
            for r in &mut all {
                r.suite = name.into();
                if r.sample.placement.is_some() {
                    r.sample.placement = Some(place.into());
                }
            }
            all
        };
        let mut all = suite("one", "a", 1.0, 1.1);
        all.extend(suite("two", "b", 2.0, 2.4));
        let m = PayoffMap::new(&all.iter().collect::<Vec<_>>());
        assert_eq!(m.panels.len(), 2);
        let line = |p: &Panel| p.lines[0].1.clone();
        assert!(
            close(&line(&m.panels[0]), &[(50.0, 10.0)]),
            "{:?}",
            line(&m.panels[0])
        );
        assert!(
            close(&line(&m.panels[1]), &[(50.0, 20.0)]),
            "{:?}",
            line(&m.panels[1])
        );
    }
}
