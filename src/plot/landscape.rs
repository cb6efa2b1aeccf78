//! Figure 3: iteration rate (x) against update spread (y), one point per
//! variant and noise setting at the medians, with 25th-75th percentile bars;
//! one panel per engine.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::stats::Five;
use super::{
    Chart, Draw, DrawResult, Frame, by_engine, chart, colour, legend, mesh, noise_label, num,
    panel_title, seconds, side_by_side,
};
use crate::engine::EngineKind;
use crate::experiment::results::Record;

struct Point {
    variant: usize,
    noise: bool,
    rate: Five,
    spread: Five,
}

struct Panel {
    title: String,
    noise: String,
    virtual_time: bool,
    points: Vec<Point>,
}

pub(super) struct Landscape {
    variants: Vec<String>,
    panels: Vec<Panel>,
}

/// Variant labels in order of first appearance (the suite's order).
pub(super) fn variant_order(records: &[&Record]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in records {
        if !out.contains(&r.sample.variant) {
            out.push(r.sample.variant.clone());
        }
    }
    out
}

impl Landscape {
    pub(super) fn new(records: &[&Record]) -> Landscape {
        let variants = variant_order(records);
        let mut panels = Vec::new();
        for (engine, of) in by_engine(records) {
            let first = of[0];
            let mut points = Vec::new();
            for (vi, v) in variants.iter().enumerate() {
                for noise in [false, true] {
                    let group: Vec<&Record> = of
                        .iter()
                        .copied()
                        .filter(|r| &r.sample.variant == v && r.sample.noise == noise)
                        .collect();
                    let rate: Vec<f64> = group
                        .iter()
                        .filter_map(|r| num(r, |rep| rep.iteration_rate))
                        .collect();
                    let spread: Vec<f64> = group
                        .iter()
                        .filter_map(|r| num(r, |rep| rep.spread as f64))
                        .collect();
                    if let (Some(rate), Some(spread)) = (Five::of(&rate), Five::of(&spread)) {
                        points.push(Point {
                            variant: vi,
                            noise,
                            rate,
                            spread,
                        });
                    }
                }
            }
            panels.push(Panel {
                title: panel_title(first),
                noise: noise_label(&of),
                virtual_time: engine == EngineKind::Sim,
                points,
            });
        }
        Landscape { variants, panels }
    }
}

impl Draw for Landscape {
    fn size(&self) -> (u32, u32) {
        (1000 * self.panels.len().max(1) as u32, 720)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        side_by_side(root, &self.panels, |p, area| self.draw_panel(p, area))
    }
}

impl Landscape {
    fn draw_panel<DB: DrawingBackend>(&self, p: &Panel, area: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let mut chart = axes(p, area)?;
        for q in &p.points {
            let c = colour(q.variant);
            let (x, y) = (q.rate.median, q.spread.median);
            chart.draw_series([
                PathElement::new(vec![(q.rate.q1, y), (q.rate.q3, y)], c.stroke_width(2)),
                PathElement::new(vec![(x, q.spread.q1), (x, q.spread.q3)], c.stroke_width(2)),
            ])?;
        }
        for (vi, v) in self.variants.iter().enumerate() {
            markers(&mut chart, p, vi, v)?;
        }
        chart
            .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())?
            .label("filled: quiet")
            .legend(|(x, y)| Circle::new((x + 7, y), 6, BLACK.filled()));
        chart
            .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())?
            .label(format!("open: {}", p.noise))
            .legend(|(x, y)| Circle::new((x + 7, y), 6, BLACK.stroke_width(2)));
        legend(&mut chart, SeriesLabelPosition::UpperLeft, 14)?;
        Ok(())
    }
}

/// The panel's axes, sized to its whiskers.
fn axes<'a, DB: DrawingBackend>(
    p: &Panel,
    area: &DrawingArea<DB, Shift>,
) -> Result<Chart<'a, DB>, Box<dyn std::error::Error + Send + Sync>>
where
    DB::ErrorType: 'static,
{
    let (x0, x1) = p.points.iter().fold((f64::MAX, f64::MIN), |(a, b), q| {
        (a.min(q.rate.q1), b.max(q.rate.q3))
    });
    let pad = ((x1 - x0) * 0.08).max(x1.abs() * 0.01).max(1e-9);
    // At least 10 updates tall, so that whole-number ticks never repeat.
    let y1 = p.points.iter().map(|q| q.spread.q3).fold(10.0, f64::max);
    let frame = Frame {
        caption: 22,
        margin: 18,
        x_labels: 60,
        y_labels: 80,
    };
    let (x, y) = ((x0 - pad)..(x1 + pad), (-0.04 * y1)..(y1 * 1.1));
    let mut chart = chart(area, &p.title, frame, x, y)?;
    let per = seconds(p.virtual_time).trim_end_matches('s');
    mesh(&mut chart, 17, 14)
        .x_desc(format!(
            "iteration rate (iterations per {per}, higher is better)"
        ))
        .y_desc("update spread (subdomain updates, lower is better)")
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| format!("{v:.0}"))
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    Ok(chart)
}

/// Variant `vi`'s points: shape by family (square: sync/ssync, circle:
/// plain async, triangle: balanced), so that 11 series stay apart even where
/// colours are close; filled quiet, open with noise.
fn markers<DB: DrawingBackend>(
    chart: &mut Chart<'_, DB>,
    p: &Panel,
    vi: usize,
    v: &str,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let at = |noise: bool| -> Vec<(f64, f64)> {
        p.points
            .iter()
            .filter(|q| q.variant == vi && q.noise == noise)
            .map(|q| (q.rate.median, q.spread.median))
            .collect()
    };
    let (quiet, noisy) = (at(false), at(true));
    if quiet.is_empty() && noisy.is_empty() {
        return Ok(());
    }
    let c = colour(vi);
    let (filled, open) = (c.filled(), c.stroke_width(3));
    match family(v) {
        0 => {
            let sq = |pt, st| EmptyElement::at(pt) + Rectangle::new([(-6, -6), (6, 6)], st);
            chart
                .draw_series(quiet.iter().map(|&pt| sq(pt, filled)))?
                .label(v)
                .legend(move |(x, y)| Rectangle::new([(x + 1, y - 6), (x + 13, y + 6)], filled));
            chart.draw_series(noisy.iter().map(|&pt| sq(pt, open)))?;
        }
        1 => {
            chart
                .draw_series(quiet.iter().map(|&pt| Circle::new(pt, 7, filled)))?
                .label(v)
                .legend(move |(x, y)| Circle::new((x + 7, y), 6, filled));
            chart.draw_series(noisy.iter().map(|&pt| Circle::new(pt, 7, open)))?;
        }
        _ => {
            chart
                .draw_series(quiet.iter().map(|&pt| TriangleMarker::new(pt, 9, filled)))?
                .label(v)
                .legend(move |(x, y)| TriangleMarker::new((x + 7, y), 8, filled));
            // TriangleMarker always fills: the open one is a path.
            let outline = vec![(0, -9), (8, 5), (-8, 5), (0, -9)];
            chart.draw_series(
                noisy
                    .iter()
                    .map(|&pt| EmptyElement::at(pt) + PathElement::new(outline.clone(), open)),
            )?;
        }
    }
    Ok(())
}

/// Marker family of a label: 0 sync/ssync, 1 plain async, 2 balanced.
pub(super) fn family(variant: &str) -> u8 {
    if variant.contains('+') {
        2
    } else if variant.starts_with("async") {
        1
    } else {
        0
    }
}
