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
    Chart, Draw, DrawResult, FONT, Frame, Key, Mark, Stroke, chart, mesh, variant_colours,
};
use crate::forecast::{Forecast, WorkloadForecast};
use crate::lab::experiment::results::Record;

struct Panel {
    title: String,
    /// The x axis: the noise duty (%), or a workload's cost factor.
    x_desc: &'static str,
    /// Per variant (index into `variants`): (duty, increase %) points.
    lines: Vec<(usize, Vec<(f64, f64)>)>,
    model: Vec<(f64, f64)>,
    ideal: Vec<(f64, f64)>,
}

pub(super) struct PayoffMap {
    variants: Vec<String>,
    panels: Vec<Panel>,
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
        let panels = placements
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
                let lines = variants
                    .iter()
                    .enumerate()
                    .filter_map(|(vi, v)| {
                        let quiet: Vec<&&Record> = records
                            .iter()
                            .filter(|r| {
                                &r.sample.variant == v
                                    && !r.sample.noise
                                    && r.sample.placement.is_none()
                            })
                            .collect();
                        let q = median_of(&quiet, tts)?;
                        let pts: Vec<(f64, f64)> = duties
                            .iter()
                            .filter_map(|&d| {
                                Some((d * 100.0, 100.0 * (median_of(&at(v, d), tts)? / q - 1.0)))
                            })
                            .collect();
                        (!pts.is_empty()).then_some((vi, pts))
                    })
                    .collect();
                let forecast = |field: fn(&Forecast) -> f64| -> Vec<(f64, f64)> {
                    duties
                        .iter()
                        .filter_map(|&d| {
                            let all: Vec<&&Record> =
                                variants.iter().flat_map(|v| at(v, d)).collect();
                            Some((d * 100.0, 100.0 * median_of(&all, |r| model_sum(r, field))?))
                        })
                        .collect()
                };
                Panel {
                    title: format!("noise on: {place}"),
                    x_desc: "noise duty on the noisy core(s) (%)",
                    lines,
                    model: forecast(|m| m.plain_async_loss),
                    ideal: forecast(|m| m.ideal_balanced_loss),
                }
            })
            .chain(imbalance_panels(records, &variants))
            .collect();
        PayoffMap { variants, panels }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.panels.iter().all(|p| p.lines.is_empty())
    }
}

/// The application's imbalance, one panel per named workload: the
/// increase over the same variant's quiet uniform run against the
/// workload's cost factor; the model's lines from the reports'
/// `workload_model` (its work times its loss).
fn imbalance_panels(records: &[&Record], variants: &[String]) -> Vec<Panel> {
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
            let lines = variants
                .iter()
                .enumerate()
                .filter_map(|(vi, v)| {
                    let quiet: Vec<&&Record> = records
                        .iter()
                        .filter(|r| {
                            &r.sample.variant == v
                                && !r.sample.noise
                                && r.sample.placement.is_none()
                        })
                        .collect();
                    let q = median_of(&quiet, tts)?;
                    let pts: Vec<(f64, f64)> = factors
                        .iter()
                        .filter_map(|&f| Some((f, 100.0 * (median_of(&at(v, f), tts)? / q - 1.0))))
                        .collect();
                    (!pts.is_empty()).then_some((vi, pts))
                })
                .collect();
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
            Panel {
                title: format!("the application's imbalance: {name}"),
                x_desc: "cost factor of the heavy region",
                lines,
                model: forecast(true, WorkloadForecast::plain_async_time),
                ideal: forecast(false, WorkloadForecast::ideal_balanced_time),
            }
        })
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

/// The legend's strip above the panels, pixels.
const LEGEND_PX: u32 = 120;
/// The model's two forecasts' dashes: plain async, a perfect balancer.
const MODEL_DASH: (u32, u32) = (8, 5);
const IDEAL_DASH: (u32, u32) = (2, 4);
const GREY: RGBColor = RGBColor(90, 90, 90);

impl Draw for PayoffMap {
    fn size(&self) -> (u32, u32) {
        let (rows, cols) = grid(self.panels.len());
        (720 * cols as u32, 560 * rows as u32 + LEGEND_PX)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE)?;
        let (top, rest) = root.split_vertically(LEGEND_PX);
        super::draw_keys(&top, &self.keys(), 14)?;
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
        keys.push(Key::new(
            "dashed over a line: two series within 0.5%",
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
            caption: 20,
            margin: 16,
            x_labels: 50,
            y_labels: 60,
        };
        // Room above the top for what is off the scale: it is drawn at
        // `clip`, inside the frame and below the caption.
        let span = y1 - y0;
        let clip = y1 + 0.04 * span;
        let (x, y) = (0.0..(x1 * 1.08), (y0 - 0.05 * span)..(y1 + 0.1 * span));
        let mut chart = chart(area, &p.title, frame, x, y)?;
        mesh(&mut chart, 15, 13)
            .x_desc(p.x_desc)
            .y_desc("time-to-solution increase over quiet (%)")
            .x_label_formatter(&|v| format!("{v:.0}"))
            .y_label_formatter(&|v| format!("{v:.1}"))
            .light_line_style(WHITE.mix(0.0))
            .draw()?;
        let series: Vec<Vec<(f64, f64)>> = p.lines.iter().map(|(_, pts)| pts.clone()).collect();
        let mut place = vec![(0usize, 1usize); series.len()];
        for group in super::coinciding(&series, 0.005 * span) {
            for (j, &i) in group.iter().enumerate() {
                place[i] = (j, group.len());
            }
        }
        for (k, (vi, pts)) in p.lines.iter().enumerate() {
            self.draw_line(&mut chart, *vi, pts, clip, place[k])?;
        }
        draw_forecasts(&mut chart, p)?;
        if !off.is_empty() {
            let (px, py) = chart.backend_coord(&(x1 * 1.08, clip));
            area.draw(&Text::new(
                format!("off the scale: {}", off.join(", ")),
                (
                    px - area.get_base_pixel().0 - 6,
                    py - area.get_base_pixel().1 + 8,
                ),
                TextStyle::from((FONT, 13).into_font()).pos(
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
        let all = p
            .lines
            .iter()
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

    /// Variant `vi`'s line, its markers shaped by family, clipped at `y1`.
    /// `(j, of)`: it is the j-th of `of` series that lie on one another:
    /// past the first, its line is dashed over the one below, and each
    /// one's markers sit side by side.
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
        let c = variant_colours(&self.variants)[vi];
        let mark = look(&self.variants[vi]).mark;
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
        let dx = (2 * j as i32 - (of as i32 - 1)) * 6;
        for &pt in &pts {
            draw_mark(chart, mark, pt, (dx, 5), c, false)?;
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
