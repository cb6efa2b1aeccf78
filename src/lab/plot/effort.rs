//! The effort metric over time, one line per balancer (the effort-metric
//! paper's Figure 9): for each balancing interval, the time lost to
//! imbalance (the loss rate) plus the call's cost, per unit of time
//! (`engine::Effort`); one panel per engine. Each line is the suite's
//! first noisy record of its variant (else its first quiet one), its
//! intervals merged into [`BINS`] equal stretches of time.
//!
//! Under each effort panel, on the same time axis, the moves over time: a
//! row per variant with a bar at each call that moved subdomains (its
//! height the log of how many), and for a variant that chooses its
//! strategy as it goes (`auto`, `learned`) a row of which strategy it ran
//! when, each in its own variant's colour.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::landscape::variant_order;
use super::look::look;
use super::{
    Draw, DrawResult, FONT, Frame, Key, Mark, Stroke, TEXT, by_engine, chart, mesh, panel_title,
    seconds, variant_colours,
};
use crate::lab::experiment::results::Record;
use braid::Effort;
use braid::EngineKind;

/// Points per line.
const BINS: usize = 60;

struct Line {
    variant: usize,
    /// (interval start, effort in percent).
    points: Vec<(f64, f64)>,
    /// (call time, subdomains it moved), for the calls that moved some.
    moves: Vec<(f64, u64)>,
    /// When it ran which strategy, as the label of the figure's variant
    /// that runs it alone: for a chooser that switched, else empty.
    ran: Vec<(f64, String)>,
    /// When its last interval ended.
    end_s: f64,
    /// Every subdomain it moved (the last call's too, which opened no
    /// interval of the effort).
    total_moves: u64,
    /// Over the whole run: the share of its time lost to imbalance and
    /// the share its calls cost, and its calls.
    lost: f64,
    cost: f64,
    calls: u64,
}

struct Panel {
    title: String,
    virtual_time: bool,
    lines: Vec<Line>,
}

/// `field` summed over `series`, over the time the series spans.
fn share(series: &[Effort], field: impl Fn(&Effort) -> f64) -> f64 {
    let span: f64 = series.iter().map(|e| e.interval_s).sum();
    match span > 0.0 {
        true => series.iter().map(field).sum::<f64>() / span,
        false => 0.0,
    }
}

/// The calls of `series` that moved subdomains: (when, how many).
fn moving_calls(series: &[Effort]) -> Vec<(f64, u64)> {
    (series.iter())
        .filter(|e| e.moves > 0)
        .map(|e| (e.t_s, e.moves))
        .collect()
}

/// The label that runs `balancer` alone beside `variant` (a chooser's
/// label): `async(4)+auto(0.001)` and `greedy` give `async(4)+greedy(0.001)`.
fn alone(variant: &str, balancer: &str) -> String {
    match variant.split_once('+') {
        Some((scheme, b)) => {
            let interval = b.split_once('(').map_or("", |(_, i)| i);
            format!("{scheme}+{balancer}({interval}")
        }
        None => balancer.to_string(),
    }
}

pub(super) struct EffortOverTime {
    variants: Vec<String>,
    panels: Vec<Panel>,
}

/// Whether a record has an effort series to draw.
pub(super) fn has_effort(r: &Record) -> bool {
    r.report
        .as_ref()
        .and_then(|rep| rep.lb.as_ref())
        .is_some_and(|lb| lb.effort.len() >= 2)
}

/// `series` merged into at most `bins` stretches of equal time.
fn binned(series: &[Effort], bins: usize) -> Vec<(f64, f64)> {
    let end = series.last().map_or(0.0, |e| e.t_s + e.interval_s);
    let width = end / bins as f64;
    let mut out: Vec<(f64, f64)> = Vec::new();
    let mut acc: Option<Effort> = None;
    let mut bin = 0;
    for &e in series {
        let b = if width > 0.0 {
            ((e.t_s / width) as usize).min(bins - 1)
        } else {
            0
        };
        if b != bin
            && let Some(a) = acc.take()
        {
            out.push((a.t_s, 100.0 * a.effort()));
        }
        bin = b;
        acc = Some(acc.map_or(e, |a| a.merge(e)));
    }
    if let Some(a) = acc {
        out.push((a.t_s, 100.0 * a.effort()));
    }
    out
}

impl EffortOverTime {
    pub(super) fn new(records: &[&Record]) -> EffortOverTime {
        let records: Vec<&Record> = records.iter().copied().filter(|r| has_effort(r)).collect();
        let variants = variant_order(&records);
        let panels = by_engine(&records)
            .into_iter()
            .map(|(engine, of)| {
                let lines = variants
                    .iter()
                    .enumerate()
                    .filter_map(|(vi, v)| {
                        let mine = |noise| {
                            of.iter()
                                .find(|r| &r.sample.variant == v && r.sample.noise == noise)
                        };
                        let r = mine(true).or_else(|| mine(false))?;
                        let lb = r.report.as_ref()?.lb.as_ref()?;
                        let ran = match lb.ran.len() > 1 {
                            true => (lb.ran.iter())
                                .map(|x| (x.from_s, alone(v, &x.balancer.to_string())))
                                .collect(),
                            false => Vec::new(),
                        };
                        Some(Line {
                            variant: vi,
                            points: binned(&lb.effort, BINS),
                            moves: moving_calls(&lb.effort),
                            ran,
                            end_s: lb.effort.last().map_or(0.0, |e| e.t_s + e.interval_s),
                            total_moves: lb.moves,
                            lost: share(&lb.effort, |e| e.lost_s),
                            cost: share(&lb.effort, |e| e.cost_s),
                            calls: lb.calls,
                        })
                    })
                    .collect();
                Panel {
                    title: panel_title(of[0]),
                    virtual_time: engine == EngineKind::Sim,
                    lines,
                }
            })
            .collect();
        EffortOverTime { variants, panels }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.panels.is_empty()
    }

    /// The figure as CSV rows, a header first: per engine and variant, the
    /// run's share of time lost to imbalance and to its calls (%), its
    /// effort (their sum), calls and moves.
    pub(super) fn rows(&self) -> Vec<Vec<String>> {
        let mut out = vec![
            [
                "engine",
                "variant",
                "lost_pct",
                "cost_pct",
                "effort_pct",
                "calls",
                "moves",
            ]
            .map(String::from)
            .to_vec(),
        ];
        for p in &self.panels {
            for l in &p.lines {
                let pct = |x: f64| super::cell(Some(100.0 * x), 4);
                out.push(vec![
                    match p.virtual_time {
                        true => "sim",
                        false => "run",
                    }
                    .to_string(),
                    self.variants[l.variant].clone(),
                    pct(l.lost),
                    pct(l.cost),
                    pct(l.lost + l.cost),
                    l.calls.to_string(),
                    l.total_moves.to_string(),
                ]);
            }
        }
        out
    }

    fn draw_panel<DB: DrawingBackend>(&self, p: &Panel, area: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let (effort, moves) = area.split_vertically(EFFORT_PX);
        self.draw_effort(p, &effort)?;
        self.draw_moves(p, &moves)
    }

    /// A panel's time axis: to its last interval's end.
    fn time_axis(p: &Panel) -> std::ops::Range<f64> {
        let t1 = p.lines.iter().map(|l| l.end_s).fold(0.0f64, f64::max);
        0.0..t1.max(1e-9) * 1.02
    }

    fn draw_effort<DB: DrawingBackend>(
        &self,
        p: &Panel,
        area: &DrawingArea<DB, Shift>,
    ) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let pts = p.lines.iter().flat_map(|l| l.points.iter());
        let y1 = pts.fold(0.0f64, |y, &(_, b)| y.max(b));
        let (x, y) = (Self::time_axis(p), 0.0..(y1 * 1.1).max(1e-6));
        let mut chart = chart(area, &p.title, FRAME, x, y)?;
        mesh(&mut chart)
            .x_desc(format!("time ({})", seconds(p.virtual_time)))
            .y_desc("effort: % of time lost to imbalance and calls")
            .light_line_style(WHITE.mix(0.0))
            .draw()?;
        let colours = variant_colours(&self.variants);
        for (k, line) in p.lines.iter().enumerate() {
            let c = colours[line.variant];
            let pts = line.points.iter().copied();
            match self.under(p, k) {
                None => chart.draw_series(LineSeries::new(pts, c.stroke_width(2)))?,
                Some(_) => {
                    chart.draw_series(DashedLineSeries::new(pts, 6, 4, c.stroke_width(2)))?
                }
            };
        }
        Ok(())
    }

    /// The moves over time under the effort: a row per line, a bar per
    /// call that moved (its height the log of how many), and a row per
    /// chooser of which strategy it ran when.
    fn draw_moves<DB: DrawingBackend>(&self, p: &Panel, area: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let rows = rows(p);
        let n = rows.len().max(1) as f64;
        let mut chart = chart(
            area,
            "moves over time: a bar per call that moved (height: log of how many)",
            FRAME,
            Self::time_axis(p),
            0.0..n,
        )?;
        mesh(&mut chart)
            .x_desc(format!("time ({})", seconds(p.virtual_time)))
            .y_labels(0)
            .disable_y_mesh()
            .light_line_style(WHITE.mix(0.0))
            .draw()?;
        let colours = variant_colours(&self.variants);
        let colour_of = |label: &str| match self.variants.iter().position(|v| v == label) {
            Some(i) => colours[i],
            None => look(label).colour,
        };
        let most = (p.lines.iter().flat_map(|l| l.moves.iter()))
            .map(|m| m.1)
            .max()
            .unwrap_or(1);
        let height = |m: u64| 0.8 * ((1 + m) as f64).ln() / ((1 + most) as f64).ln();
        let names = short_names(&self.variants);
        let font = TextStyle::from((FONT, TEXT).into_font());
        let (bx, by) = area.get_base_pixel();
        for (k, row) in rows.iter().enumerate() {
            let base = n - k as f64 - 1.0;
            let (label, line) = match *row {
                Row::Moves(l) => {
                    let line = &p.lines[l];
                    (
                        format!("{}: {}", names[line.variant], line.total_moves),
                        line,
                    )
                }
                Row::Ran(l) => (format!("{} ran", names[p.lines[l].variant]), &p.lines[l]),
            };
            let c = colours[line.variant];
            match *row {
                Row::Moves(_) => {
                    chart.draw_series(std::iter::once(PathElement::new(
                        vec![(0.0, base + 0.1), (line.end_s, base + 0.1)],
                        RGBColor(200, 200, 200).stroke_width(1),
                    )))?;
                    chart.draw_series(line.moves.iter().map(|&(t, m)| {
                        PathElement::new(
                            vec![(t, base + 0.1), (t, base + 0.1 + height(m))],
                            c.stroke_width(2),
                        )
                    }))?;
                }
                Row::Ran(_) => {
                    let ends = (line.ran.iter().skip(1).map(|r| r.0)).chain([line.end_s]);
                    chart.draw_series(line.ran.iter().zip(ends).map(|((from, b), to)| {
                        Rectangle::new(
                            [(*from, base + 0.15), (to, base + 0.85)],
                            colour_of(b).filled(),
                        )
                    }))?;
                }
            }
            // The row's name, right-aligned in the axis's margin.
            let (x, y) = chart.backend_coord(&(0.0, base + 0.5));
            let (w, h) = area.estimate_text_size(&label, &font)?;
            let at = (x - bx - 10 - w as i32, y - by - h as i32 / 2);
            area.draw_text(&label, &font, at)?;
        }
        Ok(())
    }

    /// The series that line `k` of `p` lies on (every bin within 3% of the
    /// panel's height), if it is not the first of them: it is drawn dashed
    /// over it, and its legend entry says so.
    fn under(&self, p: &Panel, k: usize) -> Option<usize> {
        let top = p
            .lines
            .iter()
            .flat_map(|l| l.points.iter())
            .map(|q| q.1)
            .fold(0.0, f64::max);
        let by_bin: Vec<Vec<(f64, f64)>> = p
            .lines
            .iter()
            .map(|l| {
                l.points
                    .iter()
                    .enumerate()
                    .map(|(i, q)| (i as f64, q.1))
                    .collect()
            })
            .collect();
        super::coinciding(&by_bin, 0.03 * top)
            .into_iter()
            .find(|g| g[1..].contains(&k))
            .map(|g| p.lines[g[0]].variant)
    }

    /// One legend for the figure, each entry drawn as its line is.
    fn keys(&self) -> Vec<Key> {
        let mut keys = Vec::new();
        for (vi, v) in self.variants.iter().enumerate() {
            let under = self.panels.iter().find_map(|p| {
                let k = p.lines.iter().position(|l| l.variant == vi)?;
                self.under(p, k)
            });
            let (label, stroke) = match under {
                Some(u) => (
                    format!("{v}: on {}'s line (within 3%)", self.variants[u]),
                    Stroke::Dashed(6, 4),
                ),
                None => (v.clone(), Stroke::Solid),
            };
            if self
                .panels
                .iter()
                .any(|p| p.lines.iter().any(|l| l.variant == vi))
            {
                keys.push(Key::new(
                    label,
                    variant_colours(&self.variants)[vi],
                    stroke,
                    Mark::None,
                ));
            }
        }
        keys
    }
}

/// What a row of the moves holds: a line's moves, or which strategy a
/// chooser ran when.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Row {
    Moves(usize),
    Ran(usize),
}

/// A panel's rows of moves, its choosers' rows last.
fn rows(p: &Panel) -> Vec<Row> {
    let moves = (0..p.lines.len()).map(Row::Moves);
    let ran = (0..p.lines.len()).filter(|&l| !p.lines[l].ran.is_empty());
    moves.chain(ran.map(Row::Ran)).collect()
}

/// Each variant's name in a row of moves: its balancer without the
/// interval (`greedy`), or with it where two share a balancer
/// (`split(0.001)`, `split(auto)`).
fn short_names(variants: &[String]) -> Vec<String> {
    let balancer = |v: &str| v.split_once('+').map_or(v, |(_, b)| b).to_string();
    let bare = |v: &str| {
        balancer(v)
            .split('(')
            .next()
            .unwrap_or_default()
            .to_string()
    };
    variants
        .iter()
        .map(|v| {
            let shared = variants.iter().filter(|w| bare(w) == bare(v)).count() > 1;
            if shared { balancer(v) } else { bare(v) }
        })
        .collect()
}

/// Both charts of a panel share this frame, so their time axes line up;
/// the wide margin on the left holds the rows' names.
const FRAME: Frame = Frame {
    caption: 22,
    margin: 16,
    x_labels: 56,
    y_labels: 150,
};

/// The effort's chart, and the moves' frame and rows, pixels.
const EFFORT_PX: u32 = 480;
const MOVES_FRAME_PX: u32 = 110;
const ROW_PX: u32 = 32;

/// The legend's strip below the panels, pixels: one column, its labels long.
const LEGEND_PX: u32 = 290;

impl Draw for EffortOverTime {
    fn size(&self) -> (u32, u32) {
        let panels: u32 = (self.panels.iter())
            .map(|p| EFFORT_PX + MOVES_FRAME_PX + ROW_PX * rows(p).len() as u32)
            .sum();
        (1000, panels.max(EFFORT_PX) + LEGEND_PX)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE)?;
        let (_, h) = root.dim_in_pixel();
        let (mut panels, keys) = root.split_vertically(h - LEGEND_PX);
        for p in &self.panels {
            let px = EFFORT_PX + MOVES_FRAME_PX + ROW_PX * rows(p).len() as u32;
            let (area, rest) = panels.split_vertically(px);
            self.draw_panel(p, &area)?;
            panels = rest;
        }
        super::draw_keys(&keys, &self.keys(), TEXT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binning_keeps_the_time_weighted_effort() {
        let e = |t_s: f64, lost_s: f64| Effort {
            t_s,
            interval_s: 1.0,
            lost_s,
            cost_s: 0.0,
            moves: (lost_s * 10.0) as u64,
        };
        // Four intervals into two bins: (0.1 + 0.3) / 2 and (0.0 + 0.2) / 2.
        let series = [e(0.0, 0.1), e(1.0, 0.3), e(2.0, 0.0), e(3.0, 0.2)];
        let b = binned(&series, 2);
        assert_eq!(b.len(), 2);
        assert_eq!(b[0].0, 0.0);
        assert!(
            (b[0].1 - 20.0).abs() < 1e-9 && (b[1].1 - 10.0).abs() < 1e-9,
            "{b:?}"
        );
        // The calls that moved, each at its interval's start.
        assert_eq!(moving_calls(&series), [(0.0, 1), (1.0, 3), (3.0, 2)]);
    }

    #[test]
    fn a_rows_name_is_its_balancer_and_a_choosers_strategies_are_their_own_variants() {
        let labels = [
            "async(4)+split(0.001)",
            "async(4)+split(auto)",
            "async(4)+greedy(0.001)",
        ]
        .map(String::from);
        assert_eq!(
            short_names(&labels),
            ["split(0.001)", "split(auto)", "greedy"]
        );
        assert_eq!(
            alone("async(4)+auto(0.001)", "greedy-split"),
            "async(4)+greedy-split(0.001)"
        );
        // A chooser that switched gets a row of what it ran, after the moves.
        let line = |variant, ran: Vec<(f64, String)>| Line {
            variant,
            points: Vec::new(),
            moves: Vec::new(),
            ran,
            end_s: 1.0,
            total_moves: 0,
            lost: 0.0,
            cost: 0.0,
            calls: 0,
        };
        let p = Panel {
            title: String::new(),
            virtual_time: true,
            lines: vec![
                line(0, Vec::new()),
                line(1, vec![(0.0, "a".into()), (0.5, "b".into())]),
            ],
        };
        assert_eq!(rows(&p), [Row::Moves(0), Row::Moves(1), Row::Ran(1)]);
    }
}
