//! Figures 4 and 5: time-to-solution box plots per variant, quiet and
//! noisy side by side; one panel per engine. Boxes span the 25th-75th
//! percentiles with the median marked; whiskers reach the extremes.

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::landscape::variant_order;
use super::stats::Five;
use super::{
    Draw, DrawResult, FONT, Frame, Key, Mark, Stroke, TEXT, by_engine, chart, colour, mesh,
    noise_label, panel_title, seconds,
};
use crate::lab::experiment::results::Record;
use braid::EngineKind;

/// The legend's strip above the panels, pixels: a row per entry.
const LEGEND_PX: u32 = 110;

/// A sample taken while other work held a core.
const BUSY: RGBColor = RGBColor(200, 0, 0);

pub(super) struct Row {
    pub variant: String,
    pub quiet: Option<Five>,
    pub noisy: Option<Five>,
    /// Each converged sample's time, and whether the machine was busy then
    /// (None: not measured), quiet then noisy.
    pub samples: [Vec<(f64, Option<bool>)>; 2],
}

pub(super) struct Panel {
    title: String,
    noise: String,
    virtual_time: bool,
    pub rows: Vec<Row>,
}

pub(super) struct TimeToSolution {
    pub panels: Vec<Panel>,
}

impl TimeToSolution {
    /// One legend for the figure, above the panels.
    fn keys(&self) -> Vec<Key> {
        let mut noise: Vec<&str> = self.panels.iter().map(|p| p.noise.as_str()).collect();
        noise.dedup();
        let mut keys = vec![
            Key::new(
                "quiet (box: quartiles, bar: median)",
                colour(0),
                Stroke::None,
                Mark::Square,
            ),
            Key::new(
                format!("{} (box: quartiles, bar: median)", noise.join(" / ")),
                colour(1),
                Stroke::None,
                Mark::Square,
            ),
            Key::new(
                "one sample",
                RGBColor(77, 77, 77),
                Stroke::None,
                Mark::Circle,
            ),
        ];
        let busy = self
            .panels
            .iter()
            .flat_map(|p| p.rows.iter())
            .flat_map(|r| r.samples.iter().flatten())
            .filter(|s| s.1 == Some(true))
            .count();
        if busy > 0 {
            keys.push(Key::new(
                format!("one sample on a busy machine ({busy})"),
                BUSY,
                Stroke::None,
                Mark::Cross,
            ));
        }
        keys
    }
}

/// Times to solution of one variant under one noise setting (converged
/// samples only).
pub(super) fn times(records: &[&Record], variant: &str, noise: bool) -> Vec<f64> {
    timed(records, variant, noise)
        .into_iter()
        .map(|(t, _)| t)
        .collect()
}

/// [`times`], each with whether its machine was busy (None: not measured).
pub(super) fn timed(records: &[&Record], variant: &str, noise: bool) -> Vec<(f64, Option<bool>)> {
    records
        .iter()
        .filter(|r| r.sample.variant == variant && r.sample.noise == noise)
        .filter_map(|r| {
            let rep = r.report.as_ref()?;
            Some((rep.time_to_solution_s?, rep.machine_busy()))
        })
        .collect()
}

impl TimeToSolution {
    pub(super) fn new(records: &[&Record]) -> TimeToSolution {
        let variants = variant_order(records);
        let mut panels = Vec::new();
        for (engine, of) in by_engine(records) {
            let first = of[0];
            let rows: Vec<Row> = variants
                .iter()
                .map(|v| Row {
                    variant: v.clone(),
                    quiet: Five::of(&times(&of, v, false)),
                    noisy: Five::of(&times(&of, v, true)),
                    samples: [timed(&of, v, false), timed(&of, v, true)],
                })
                .filter(|r| r.quiet.is_some() || r.noisy.is_some())
                .collect();
            if !rows.is_empty() {
                panels.push(Panel {
                    title: panel_title(first),
                    noise: noise_label(&of),
                    virtual_time: engine == EngineKind::Sim,
                    rows,
                });
            }
        }
        TimeToSolution { panels }
    }
}

impl Draw for TimeToSolution {
    fn size(&self) -> (u32, u32) {
        let rows = self.panels.iter().map(|p| p.rows.len()).max().unwrap_or(1) as u32;
        // The legend's strip, and the panels one above the other.
        (
            1000,
            (200 + 70 * rows) * self.panels.len().max(1) as u32 + LEGEND_PX,
        )
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE)?;
        let (keys, panels) = root.split_vertically(LEGEND_PX);
        super::stacked(&panels, &self.panels, draw_panel)?;
        super::draw_keys(&keys.margin(6, 0, 200, 0), &self.keys(), TEXT)
    }
}

fn draw_panel<DB: DrawingBackend>(p: &Panel, area: &DrawingArea<DB, Shift>) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let all = p
        .rows
        .iter()
        .flat_map(|r| r.quiet.iter().chain(r.noisy.iter()));
    let fives: Vec<Five> = all.copied().collect();
    let (x0, x1) = axis_range(&fives);
    let clipped = fives.iter().filter(|f| f.max > x1).count();
    let pad = ((x1 - x0) * 0.08).max(x1.abs() * 0.02).max(1e-9);
    let left = (x0 - pad).max(0.0);
    let n = p.rows.len() as f64;
    let frame = Frame {
        caption: 22,
        margin: 18,
        x_labels: 60,
        y_labels: 240,
    };
    let mut chart = chart(area, &p.title, frame, left..(x1 + pad), -0.6..(n - 0.4))?;
    let unit = seconds(p.virtual_time);
    mesh(&mut chart)
        .x_desc(format!(
            "time to solution, relative residual 1e-4 ({unit}, lower is better)"
        ))
        .y_labels(0)
        .disable_y_mesh()
        .light_line_style(TRANSPARENT)
        .x_label_formatter(&|v| format!("{v:.3}"))
        .draw()?;
    let quiet = colour(0);
    let noisy = colour(1);
    for (i, row) in p.rows.iter().enumerate() {
        // Rows run top to bottom in suite order.
        let y = n - 1.0 - i as f64;
        for (k, (five, dy, c)) in [(row.quiet, 0.17, quiet), (row.noisy, -0.17, noisy)]
            .into_iter()
            .enumerate()
        {
            if let Some(f) = five {
                draw_box(&mut chart, f, y + dy, c, (x0, x1))?;
            }
            // Every sample, so that a few are not read as many; those taken
            // while other work held a core are crosses.
            for &(t, busy) in row.samples[k].iter().filter(|(t, _)| *t <= x1) {
                let at = (t, y + dy + 0.2);
                match busy {
                    Some(true) => chart.draw_series([Cross::new(at, 4, BUSY.stroke_width(2))])?,
                    _ => chart.draw_series([Circle::new(at, 2, BLACK.mix(0.7).filled())])?,
                };
            }
        }
        // The variant's name, right-aligned left of the axis.
        let (px, py) = chart.backend_coord(&(left, y));
        area.draw(&Text::new(
            row.variant.clone(),
            (
                px - 12 - area.get_base_pixel().0,
                py - area.get_base_pixel().1,
            ),
            TextStyle::from((FONT, TEXT).into_font()).pos(Pos::new(HPos::Right, VPos::Center)),
        ))?;
    }
    if clipped > 0 {
        let (px, py) = chart.backend_coord(&(left, -0.6));
        area.draw(&Text::new(
            format!("{clipped} box(es) with outliers past {x1:.3}: arrow heads at the edge"),
            (
                px - area.get_base_pixel().0 + 8,
                py - area.get_base_pixel().1 - 6,
            ),
            TextStyle::from((FONT, TEXT).into_font()).pos(Pos::new(HPos::Left, VPos::Bottom)),
        ))?;
    }
    Ok(())
}

/// One box and its whiskers at height `y`; a whisker past the axis's right
/// end `x1` stops there in an arrow head.
fn draw_box<DB: DrawingBackend>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    mut f: Five,
    y: f64,
    c: RGBColor,
    (x0, x1): (f64, f64),
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let (lo, hi) = (y - 0.13, y + 0.13);
    if f.max > x1 {
        f.max = x1;
        f.q3 = f.q3.min(x1);
        f.median = f.median.min(x1);
        let head = (x1 - x0) * 0.012;
        chart.draw_series([Polygon::new(
            vec![(x1, y), (x1 - head, lo + 0.04), (x1 - head, hi - 0.04)],
            c.filled(),
        )])?;
    }
    chart.draw_series([
        PathElement::new(vec![(f.min, y), (f.q1, y)], c.stroke_width(2)),
        PathElement::new(vec![(f.q3, y), (f.max, y)], c.stroke_width(2)),
        PathElement::new(
            vec![(f.min, lo + 0.06), (f.min, hi - 0.06)],
            c.stroke_width(2),
        ),
        PathElement::new(
            vec![(f.max, lo + 0.06), (f.max, hi - 0.06)],
            c.stroke_width(2),
        ),
        PathElement::new(vec![(f.median, lo), (f.median, hi)], BLACK.stroke_width(3)),
    ])?;
    chart.draw_series([Rectangle::new(
        [(f.q1, lo), (f.q3, hi)],
        c.mix(0.35).filled(),
    )])?;
    chart.draw_series([Rectangle::new([(f.q1, lo), (f.q3, hi)], c.stroke_width(2))])?;
    Ok(())
}

/// The x axis: from the smallest minimum to the largest maximum, except that
/// an outlier cannot stretch it: the right end stops at the highest Tukey
/// fence (q3 + 1.5 IQR) of any box, and never below the largest q3.
fn axis_range(fives: &[Five]) -> (f64, f64) {
    let lo = fives.iter().map(|f| f.min).fold(f64::MAX, f64::min);
    let max = fives.iter().map(|f| f.max).fold(f64::MIN, f64::max);
    let fence = fives
        .iter()
        .map(|f| f.q3 + 1.5 * (f.q3 - f.q1))
        .fold(f64::MIN, f64::max);
    let q3 = fives.iter().map(|f| f.q3).fold(f64::MIN, f64::max);
    (lo, max.min(fence.max(q3 * 1.02)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outlier_cannot_stretch_the_axis() {
        let tight = Five::of(&[1.0, 1.01, 1.02, 1.03, 1.04]).unwrap();
        let wild = Five::of(&[1.0, 1.01, 1.02, 1.03, 10.0]).unwrap();
        let (lo, hi) = axis_range(&[tight, wild]);
        assert_eq!(lo, 1.0);
        assert!(hi < 1.2, "{hi}");
        // Without outliers the axis covers everything.
        assert_eq!(axis_range(&[tight]), (1.0, 1.04));
    }
}
