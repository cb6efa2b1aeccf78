//! The simulator against the machine, as `braid validate` found it: a
//! panel per quantity (time to solution, a variant over its plain one,
//! noisy over quiet), a line per row with the machine's median, its 95%
//! interval and the tolerance around it, and the simulator's value, so
//! that a reader sees at a glance which rows agree, by how much the others
//! miss, and how far the machine's own runs scatter.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::look::{draw_mark, look, variant_colours};
use super::{
    Draw, DrawResult, FONT, Frame, Key, Mark, PlotError, Stroke, TEXT, chart, draw_keys, mesh,
    register_font, render,
};

/// The figure: a headline and its panels, top to bottom.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Agreement {
    /// What was compared, when and on what.
    pub headline: String,
    pub panels: Vec<Panel>,
}

/// One quantity's rows.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Panel {
    pub title: String,
    /// The x axis's description.
    pub unit: String,
    /// The relative tolerance drawn around each real value.
    pub tolerance: f64,
    /// Whether the values are ratios (a line is drawn at 1).
    pub ratio: bool,
    pub rows: Vec<Line>,
}

/// One row: a variant under a condition, in both engines.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Line {
    /// The condition, as the row's label starts.
    pub condition: String,
    /// The variant's label (its colour and marker, as in every figure).
    pub variant: String,
    /// The machine's median, and its 95% interval.
    pub real: f64,
    pub interval: Option<(f64, f64)>,
    /// The simulator's median.
    pub sim: f64,
    /// The verdict, as the table words it.
    pub verdict: String,
}

/// Pixels of a row, of a panel's frame around its rows, of the headline
/// and of the legend's strip; the row labels' and the verdicts' columns.
const ROW_PX: u32 = 34;
const FRAME_PX: u32 = 150;
const HEADLINE_PX: u32 = 50;
const LEGEND_PX: u32 = 130;
const LABELS_PX: u32 = 400;
const VERDICT_PX: u32 = 140;
const WIDTH: u32 = 1200;

impl Agreement {
    /// Writes `stem.png` and `stem.svg` into `dir`.
    pub(crate) fn draw(&self, dir: &Path, stem: &str) -> Result<Vec<PathBuf>, PlotError> {
        register_font();
        render(self, dir, stem)
    }

    /// The variants in the order they first appear.
    fn variants(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for l in self.panels.iter().flat_map(|p| &p.rows) {
            if !out.contains(&l.variant) {
                out.push(l.variant.clone());
            }
        }
        out
    }

    /// The legend: how each engine's value is drawn, then the variants.
    fn keys(&self, colours: &[(String, RGBColor)]) -> Vec<Key> {
        let mut band = Key::new(
            "tolerance (15% of a time, 5% of a ratio)",
            TOLERANCE,
            Stroke::None,
            Mark::Square,
        );
        band.open = false;
        let mut sim = Key::new(
            "simulator: median of its seeds",
            BLACK,
            Stroke::None,
            Mark::Circle,
        );
        sim.open = true;
        let mut keys = vec![
            Key::new(
                "machine: median of its runs",
                BLACK,
                Stroke::None,
                Mark::Circle,
            ),
            Key::new(
                "machine: 95% interval (bootstrap)",
                BLACK,
                Stroke::Solid,
                Mark::None,
            ),
            sim,
            band,
        ];
        keys.extend(
            colours
                .iter()
                .map(|(v, c)| Key::new(v.clone(), *c, Stroke::None, look(v).mark)),
        );
        keys
    }
}

/// The tolerance band's grey: lighter than the models' mid grey.
const TOLERANCE: RGBColor = RGBColor(215, 215, 215);

impl Draw for Agreement {
    fn size(&self) -> (u32, u32) {
        let panels: u32 = self
            .panels
            .iter()
            .map(|p| FRAME_PX + ROW_PX * p.rows.len() as u32)
            .sum();
        (WIDTH, HEADLINE_PX + LEGEND_PX + panels)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE)?;
        let (top, mut rest) = root.split_vertically(HEADLINE_PX);
        top.draw(&Text::new(
            self.headline.clone(),
            (12, HEADLINE_PX as i32 / 2),
            TextStyle::from((FONT, 22).into_font()).pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
        let (keys, panels) = rest.split_vertically(LEGEND_PX);
        rest = panels;
        let variants = self.variants();
        let colours: Vec<(String, RGBColor)> = variants
            .iter()
            .cloned()
            .zip(variant_colours(&variants))
            .collect();
        draw_keys(&keys.margin(4, 0, 12, 0), &self.keys(&colours), TEXT)?;
        for p in &self.panels {
            let h = FRAME_PX + ROW_PX * p.rows.len() as u32;
            let (area, below) = rest.split_vertically(h);
            draw_panel(p, &area, &colours)?;
            rest = below;
        }
        Ok(())
    }
}

/// The x axis of a panel: every value, interval and band drawn, padded.
fn x_range(p: &Panel) -> (f64, f64) {
    let mut xs: Vec<f64> = Vec::new();
    for l in &p.rows {
        xs.extend([
            l.real * (1.0 - p.tolerance),
            l.real * (1.0 + p.tolerance),
            l.sim,
        ]);
        if let Some((lo, hi)) = l.interval {
            xs.extend([lo, hi]);
        }
    }
    if p.ratio {
        xs.push(1.0);
    }
    let xs: Vec<f64> = xs.into_iter().filter(|x| x.is_finite()).collect();
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let pad = ((hi - lo) * 0.05).max(hi.abs() * 0.01).max(1e-9);
    (lo - pad, hi + pad)
}

fn draw_panel<DB: DrawingBackend>(
    p: &Panel,
    area: &DrawingArea<DB, Shift>,
    colours: &[(String, RGBColor)],
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let (plot, verdicts) = area.split_horizontally(WIDTH - VERDICT_PX);
    let (x0, x1) = x_range(p);
    let n = p.rows.len() as f64;
    let frame = Frame {
        caption: 22,
        margin: 12,
        x_labels: 60,
        y_labels: LABELS_PX,
    };
    let mut chart = chart(&plot, &p.title, frame, x0..x1, -0.6..(n - 0.4))?;
    mesh(&mut chart)
        .x_desc(p.unit.clone())
        .y_labels(0)
        .disable_y_mesh()
        .light_line_style(TRANSPARENT)
        .x_label_formatter(&|v| format!("{v:.3}"))
        .draw()?;
    if p.ratio {
        chart.draw_series([PathElement::new(
            vec![(1.0, -0.6), (1.0, n - 0.4)],
            BLACK.mix(0.35).stroke_width(1),
        )])?;
    }
    let font = || TextStyle::from((FONT, TEXT).into_font());
    for (i, l) in p.rows.iter().enumerate() {
        // Rows run top to bottom in the table's order.
        let y = n - 1.0 - i as f64;
        let colour = colours
            .iter()
            .find(|(v, _)| *v == l.variant)
            .map_or(BLACK, |(_, c)| *c);
        let mark = look(&l.variant).mark;
        let (a, b) = (l.real * (1.0 - p.tolerance), l.real * (1.0 + p.tolerance));
        chart.draw_series([Rectangle::new(
            [(a, y - 0.32), (b, y + 0.32)],
            TOLERANCE.filled(),
        )])?;
        if let Some((lo, hi)) = l.interval {
            let style = BLACK.stroke_width(2);
            chart.draw_series([
                PathElement::new(vec![(lo, y), (hi, y)], style),
                PathElement::new(vec![(lo, y - 0.2), (lo, y + 0.2)], style),
                PathElement::new(vec![(hi, y - 0.2), (hi, y + 0.2)], style),
            ])?;
        }
        draw_mark(&mut chart, mark, (l.real, y), (0, 5), colour, false)?;
        draw_mark(&mut chart, mark, (l.sim, y), (0, 6), colour, true)?;
        // The row's name left of the axis, its verdict right of the panel.
        let (px, py) = chart.backend_coord(&(x0, y));
        let base = plot.get_base_pixel();
        plot.draw(&Text::new(
            format!("{} · {}", l.condition, l.variant),
            (px - 12 - base.0, py - base.1),
            font().pos(Pos::new(HPos::Right, VPos::Center)),
        ))?;
        let vb = verdicts.get_base_pixel();
        verdicts.draw(&Text::new(
            l.verdict.clone(),
            (6, py - vb.1),
            font().pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(real: f64, interval: Option<(f64, f64)>, sim: f64) -> Line {
        Line {
            condition: "quiet".into(),
            variant: "async(4)".into(),
            real,
            interval,
            sim,
            verdict: "agrees".into(),
        }
    }

    #[test]
    fn a_panels_axis_holds_every_value_its_band_and_one_for_a_ratio() {
        let p = Panel {
            title: "t".into(),
            unit: "u".into(),
            tolerance: 0.05,
            ratio: true,
            rows: vec![line(1.2, Some((1.1, 1.4)), 1.3), line(1.3, None, 1.25)],
        };
        let (lo, hi) = x_range(&p);
        // 1 (the ratio's line) is the lowest, 1.4 (an interval's end) the
        // highest, each inside the padding.
        assert!(lo < 1.0 && lo > 0.95 && hi > 1.4 && hi < 1.45, "{lo} {hi}");
        let time = Panel {
            ratio: false,
            tolerance: 0.15,
            rows: vec![line(0.2, None, 0.21)],
            ..p
        };
        let (lo, hi) = x_range(&time);
        // The band, 15% either side, sets both ends.
        assert!(
            lo < 0.17 && lo > 0.16 && hi > 0.23 && hi < 0.24,
            "{lo} {hi}"
        );
    }

    #[test]
    fn the_figure_is_sized_by_its_rows_and_lists_each_variant_once() {
        let p = |rows: usize| Panel {
            title: "t".into(),
            unit: "u".into(),
            tolerance: 0.05,
            ratio: true,
            rows: (0..rows).map(|_| line(1.0, None, 1.0)).collect(),
        };
        let a = Agreement {
            headline: "h".into(),
            panels: vec![p(12), p(9)],
        };
        assert_eq!(
            a.size(),
            (WIDTH, HEADLINE_PX + LEGEND_PX + 2 * FRAME_PX + 21 * ROW_PX)
        );
        assert_eq!(a.variants(), vec!["async(4)".to_string()]);
    }
}
