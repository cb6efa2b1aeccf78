//! Figure 3: iteration rate (x) against update spread (y), one point per
//! variant and noise setting at the medians, with 25th-75th percentile bars;
//! one panel per engine.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::look::{draw_mark, look};
use super::stats::Five;
use super::{
    Chart, Draw, DrawResult, FONT, Frame, Key, Mark, Stroke, TEXT, by_engine, chart, mesh,
    noise_label, num, panel_title, seconds, variant_colours,
};
use crate::lab::experiment::results::Record;
use braid::EngineKind;

struct Point {
    variant: usize,
    noise: bool,
    rate: Five,
    spread: Five,
    /// Each run's (rate, spread), drawn on a real machine's panel.
    runs: Vec<(f64, f64)>,
    /// The median of the runs' moves (none without a balancer).
    moves: Option<f64>,
}

struct Panel {
    title: String,
    noise: String,
    virtual_time: bool,
    /// `run` or `sim`, for the CSV.
    engine: &'static str,
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
                    let moves: Vec<f64> = group
                        .iter()
                        .filter_map(|r| Some(r.report.as_ref()?.lb.as_ref()?.moves as f64))
                        .collect();
                    let runs = rate.iter().copied().zip(spread.iter().copied()).collect();
                    if let (Some(r), Some(s)) = (Five::of(&rate), Five::of(&spread)) {
                        points.push(Point {
                            variant: vi,
                            noise,
                            rate: r,
                            spread: s,
                            runs,
                            moves: super::stats::quantile(&moves, 0.5),
                        });
                    }
                }
            }
            panels.push(Panel {
                title: panel_title(first),
                noise: noise_label(&of),
                virtual_time: engine == EngineKind::Sim,
                engine: engine.command(),
                points,
            });
        }
        Landscape { variants, panels }
    }

    /// The figure as CSV rows, a header first: per engine, variant and
    /// noise, the runs, the rate's and the spread's median and quartiles,
    /// and the median moves.
    pub(super) fn rows(&self) -> Vec<Vec<String>> {
        let mut out = vec![
            [
                "engine",
                "variant",
                "noise",
                "runs",
                "rate",
                "rate_q1",
                "rate_q3",
                "spread",
                "spread_q1",
                "spread_q3",
                "moves",
            ]
            .map(String::from)
            .to_vec(),
        ];
        let c = |x: f64, d: usize| super::cell(Some(x), d);
        for p in &self.panels {
            for q in &p.points {
                out.push(vec![
                    p.engine.to_string(),
                    self.variants[q.variant].clone(),
                    if q.noise { "noisy" } else { "quiet" }.to_string(),
                    q.runs.len().to_string(),
                    c(q.rate.median, 1),
                    c(q.rate.q1, 1),
                    c(q.rate.q3, 1),
                    c(q.spread.median, 1),
                    c(q.spread.q1, 1),
                    c(q.spread.q3, 1),
                    super::cell(q.moves, 1),
                ]);
            }
        }
        out
    }
}

/// The legend's strip right of the panels, pixels.
const LEGEND_PX: u32 = 340;
/// A panel's width and height, pixels: with the legend, the figure is
/// 1180 px wide, readable at page width.
const PANEL_PX: (u32, u32) = (840, 600);

impl Draw for Landscape {
    fn size(&self) -> (u32, u32) {
        (
            PANEL_PX.0 + LEGEND_PX,
            PANEL_PX.1 * self.panels.len().max(1) as u32,
        )
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE)?;
        let (panels, keys) = root.split_horizontally(PANEL_PX.0);
        // Panels stacked, one engine above the other.
        let areas = panels.split_evenly((self.panels.len().max(1), 1));
        for (p, area) in self.panels.iter().zip(&areas) {
            self.draw_panel(p, area)?;
        }
        let (_, keys) = keys.split_vertically(60);
        super::draw_keys(&keys, &self.keys(), TEXT)
    }
}

impl Landscape {
    /// One legend for the figure: each variant's marker, then what filled
    /// and open mean.
    fn keys(&self) -> Vec<Key> {
        let colours = variant_colours(&self.variants);
        let mut keys: Vec<Key> = self
            .variants
            .iter()
            .enumerate()
            .map(|(vi, v)| Key::new(v.clone(), colours[vi], Stroke::None, look(v).mark))
            .collect();
        keys.push(Key::new("filled: quiet", BLACK, Stroke::None, Mark::Circle));
        let noise = self
            .panels
            .first()
            .map_or("noise".to_string(), |p| p.noise.clone());
        // A long noise label (a trace's file name) takes two lines, to stay
        // inside the legend's strip.
        let (first, rest) = match noise.split_once(" (") {
            Some((a, b)) if noise.len() > 30 => (a.to_string(), Some(format!("({b}"))),
            _ => (noise.clone(), None),
        };
        keys.push(Key {
            open: true,
            ..Key::new(format!("open: {first}"), BLACK, Stroke::None, Mark::Circle)
        });
        if let Some(rest) = rest {
            keys.push(Key::new(rest, BLACK, Stroke::None, Mark::None));
        }
        keys.push(Key::new(
            "bars: quartiles",
            BLACK,
            Stroke::Solid,
            Mark::None,
        ));
        if self.panels.iter().any(|p| !p.virtual_time) {
            keys.push(Key {
                open: true,
                ..Key::new(
                    "small: each run (machine)",
                    BLACK,
                    Stroke::None,
                    Mark::Circle,
                )
            });
        }
        let nested = self
            .panels
            .iter()
            .any(|p| sizes(p, Scale::of(p)).iter().any(|&s| s != MARK));
        if nested {
            keys.push(Key::new(
                "nested: equal values, at their place",
                BLACK,
                Stroke::None,
                Mark::None,
            ));
        }
        keys
    }

    fn draw_panel<DB: DrawingBackend>(&self, p: &Panel, area: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let scale = Scale::of(p);
        let mut chart = axes(p, area, scale)?;
        let colours = variant_colours(&self.variants);
        for q in &p.points {
            let c = colours[q.variant];
            let (x, y) = (q.rate.median, scale.y(q.spread.median));
            chart.draw_series([
                PathElement::new(vec![(q.rate.q1, y), (q.rate.q3, y)], c.stroke_width(2)),
                PathElement::new(
                    vec![(x, scale.y(q.spread.q1)), (x, scale.y(q.spread.q3))],
                    c.stroke_width(2),
                ),
            ])?;
        }
        // A machine's runs scatter: each is drawn, small, under its median.
        if !p.virtual_time {
            for q in &p.points {
                let (c, mark) = (colours[q.variant], look(&self.variants[q.variant]).mark);
                for &(rate, spread) in &q.runs {
                    draw_mark(&mut chart, mark, (rate, scale.y(spread)), (0, 2), c, true)?;
                }
            }
        }
        // Medians at their place; equal ones nested, the larger drawn first.
        let size = sizes(p, scale);
        let mut order: Vec<usize> = (0..p.points.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(size[i]));
        for i in order {
            let q = &p.points[i];
            let v = &self.variants[q.variant];
            let pt = (q.rate.median, scale.y(q.spread.median));
            draw_mark(
                &mut chart,
                look(v).mark,
                pt,
                (0, size[i]),
                colours[q.variant],
                q.noise,
            )?;
        }
        Ok(())
    }
}

/// The y axis: linear, or log10 of the spread when it spans decades (a few
/// variants far above the rest would squash the rest into the bottom). On
/// the log axis a spread of 0 has a place of its own below 1 ([`ZERO`]),
/// with its own line and label, and a median between 0 and 1 lies between
/// the two.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Scale {
    log: bool,
}

/// Where a spread of 0 sits on the log axis (1 is at 0).
const ZERO: f64 = -0.6;

impl Scale {
    fn of(p: &Panel) -> Scale {
        let hi = p.points.iter().map(|q| q.spread.q3).fold(1.0, f64::max);
        let lo = p
            .points
            .iter()
            .map(|q| q.spread.median.max(1.0))
            .fold(f64::MAX, f64::min);
        Scale {
            log: hi / lo >= 30.0,
        }
    }

    fn y(self, spread: f64) -> f64 {
        match self.log {
            true if spread < 1.0 => ZERO * (1.0 - spread.max(0.0)),
            true => spread.log10(),
            false => spread,
        }
    }
}

/// A marker's size, pixels.
const MARK: i32 = 6;

/// Each point's marker size: [`MARK`], or, for medians drawn on one spot
/// (within half a per cent of both axes), nested sizes, so that every one
/// shows as a ring around the next at the data's own place (setting them
/// apart sideways would move them along the rate axis).
fn sizes(p: &Panel, scale: Scale) -> Vec<i32> {
    let span = |f: &dyn Fn(&Point) -> f64| {
        let (lo, hi) = p
            .points
            .iter()
            .map(f)
            .fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v), b.max(v)));
        (hi - lo).max(1e-12)
    };
    let (sx, sy) = (
        span(&|q| q.rate.median),
        span(&|q| scale.y(q.spread.median)),
    );
    let mut size = vec![MARK; p.points.len()];
    let mut done = vec![false; p.points.len()];
    for i in 0..p.points.len() {
        if done[i] {
            continue;
        }
        let near = |j: usize| {
            let (a, b) = (&p.points[i], &p.points[j]);
            (a.rate.median - b.rate.median).abs() <= 0.005 * sx
                && (scale.y(a.spread.median) - scale.y(b.spread.median)).abs() <= 0.005 * sy
        };
        let group: Vec<usize> = (i..p.points.len())
            .filter(|&j| !done[j] && near(j))
            .collect();
        let k = group.len() as i32;
        for (n, &j) in group.iter().enumerate() {
            size[j] = MARK + 3 * (k - 1 - n as i32);
            done[j] = true;
        }
    }
    size
}

/// The panel's axes, sized to its whiskers.
fn axes<'a, DB: DrawingBackend>(
    p: &Panel,
    area: &DrawingArea<DB, Shift>,
    scale: Scale,
) -> Result<Chart<'a, DB>, Box<dyn std::error::Error + Send + Sync>>
where
    DB::ErrorType: 'static,
{
    let (x0, x1) = p.points.iter().fold((f64::MAX, f64::MIN), |(a, b), q| {
        (a.min(q.rate.q1), b.max(q.rate.q3))
    });
    let pad = ((x1 - x0) * 0.08).max(x1.abs() * 0.01).max(1e-9);
    let frame = Frame {
        caption: 22,
        margin: 18,
        x_labels: 60,
        y_labels: 80,
    };
    // Linear: at least 10 updates tall, so that whole-number ticks never
    // repeat. Log: from 1 update (or 0, below it) to above the highest
    // quartile.
    let top = p.points.iter().map(|q| q.spread.q3).fold(10.0, f64::max);
    let zero = p.points.iter().any(|q| q.spread.q1 < 1.0);
    let y = match scale.log {
        true if zero => (ZERO - 0.2)..(scale.y(top) + 0.2),
        true => -0.1..(scale.y(top) + 0.2),
        false => (-0.04 * top)..(top * 1.1),
    };
    let mut chart = chart(area, &p.title, frame, (x0 - pad)..(x1 + pad), y)?;
    let per = seconds(p.virtual_time).trim_end_matches('s');
    let y_desc = match scale.log {
        true => "update spread (subdomain updates, log scale, lower is better)",
        false => "update spread (subdomain updates, lower is better)",
    };
    // Below 1 the log axis is not a log axis: no tick there (0 has its own
    // line and label, drawn below).
    let log_label = |v: &f64| {
        let n = 10f64.powf(*v);
        match n {
            _ if *v < -1e-9 => String::new(),
            n if n >= 100.0 => format!("{:.0}", (n / 10.0).round() * 10.0),
            n => format!("{n:.0}"),
        }
    };
    let lin_label = |v: &f64| format!("{v:.0}");
    let y_label: &dyn Fn(&f64) -> String = match scale.log {
        true => &log_label,
        false => &lin_label,
    };
    mesh(&mut chart)
        .x_desc(format!(
            "iteration rate (iterations per thread per {per}, higher is better)"
        ))
        .y_desc(y_desc)
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(y_label)
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    if scale.log && zero {
        // Its own line across the panel, and its label where the ticks'
        // are, left of the axis.
        let (x0, x1) = (x0 - pad, x1 + pad);
        chart.draw_series([PathElement::new(
            vec![(x0, ZERO), (x1, ZERO)],
            BLACK.mix(0.4).stroke_width(1),
        )])?;
        let (px, py) = chart.backend_coord(&(x0, ZERO));
        let (bx, by) = area.get_base_pixel();
        let font = (FONT, TEXT)
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Right, VPos::Center));
        area.draw(&Text::new("0", (px - bx - 10, py - by), font))?;
    }
    Ok(chart)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spread_of_0_has_its_own_place_below_1_on_a_log_axis() {
        let log = Scale { log: true };
        assert_eq!(log.y(1.0), 0.0);
        assert_eq!(log.y(0.0), ZERO);
        assert!(ZERO < log.y(0.5) && log.y(0.5) < 0.0);
        assert_eq!(log.y(100.0), 2.0);
        assert_eq!(Scale { log: false }.y(0.0), 0.0);
    }

    #[test]
    fn panels_stack_so_the_figure_stays_within_page_width() {
        let panel = |title: &str| Panel {
            title: title.into(),
            noise: "noise".into(),
            virtual_time: false,
            engine: "run",
            points: Vec::new(),
        };
        let two = Landscape {
            variants: vec!["sync".into()],
            panels: vec![panel("run"), panel("sim")],
        };
        let (w, h) = two.size();
        assert!(w <= 1200, "{w} px wide");
        assert_eq!(h, 2 * PANEL_PX.1);
    }
}
