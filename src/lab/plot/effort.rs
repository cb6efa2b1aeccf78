//! The effort metric over time, one line per balancer (the effort-metric
//! paper's Figure 9): for each balancing interval, the time lost to
//! imbalance (the loss rate) plus the call's cost, per unit of time
//! (`engine::Effort`); one panel per engine. Each line is the suite's
//! first noisy record of its variant (else its first quiet one), its
//! intervals merged into [`BINS`] equal stretches of time.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::landscape::variant_order;
use super::{
    Draw, DrawResult, Frame, Key, Mark, Stroke, TEXT, by_engine, chart, mesh, panel_title, seconds,
    variant_colours,
};
use crate::engine::Effort;
use crate::engine::EngineKind;
use crate::lab::experiment::results::Record;

/// Points per line.
const BINS: usize = 60;

struct Line {
    variant: usize,
    /// (interval start, effort in percent).
    points: Vec<(f64, f64)>,
}

struct Panel {
    title: String,
    virtual_time: bool,
    lines: Vec<Line>,
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
                        Some(Line {
                            variant: vi,
                            points: binned(&lb.effort, BINS),
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

    fn draw_panel<DB: DrawingBackend>(&self, p: &Panel, area: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let pts = p.lines.iter().flat_map(|l| l.points.iter());
        let (t1, y1) = pts.fold((0.0f64, 0.0f64), |(t, y), &(a, b)| (t.max(a), y.max(b)));
        let frame = Frame {
            caption: 22,
            margin: 16,
            x_labels: 56,
            y_labels: 76,
        };
        let (x, y) = (0.0..t1.max(1e-9) * 1.02, 0.0..(y1 * 1.1).max(1e-6));
        let mut chart = chart(area, &p.title, frame, x, y)?;
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

/// The legend's strip below the panels, pixels: one column, its labels long.
const LEGEND_PX: u32 = 290;

impl Draw for EffortOverTime {
    fn size(&self) -> (u32, u32) {
        (1000, 560 * self.panels.len().max(1) as u32 + LEGEND_PX)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE)?;
        let (_, h) = root.dim_in_pixel();
        let (panels, keys) = root.split_vertically(h - LEGEND_PX);
        super::stacked(&panels, &self.panels, |p, area| self.draw_panel(p, area))?;
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
    }
}
