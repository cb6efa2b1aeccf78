//! A chooser's regret against the fixed strategies, as `braid learn
//! --evaluate` measured it on held-out instances: a row per balancer, best
//! on top, its mean regret (time to solution over the instance's best
//! fixed strategy's, less 1) with its 95% bootstrap interval over the
//! instances, each in its variant's colour and marker; a line at 0, the
//! best in hindsight on every instance.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::look::{draw_mark, look, variant_colours};
use super::{Draw, DrawResult, FONT, Frame, PlotError, TEXT, chart, mesh, register_font, render};

/// The figure: what was evaluated, and a row per balancer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RegretFigure {
    /// What the instances were, and how often the model named the best.
    pub headline: String,
    pub subtitle: String,
    pub rows: Vec<RegretRow>,
}

/// One balancer's regret.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RegretRow {
    /// Its name in the table (`greedy`, `learned`, `async(4)`).
    pub name: String,
    /// A label that ran it (its colour and marker, as in every figure).
    pub variant: String,
    /// Mean regret, and its 95% interval, as fractions.
    pub mean: f64,
    pub interval: (f64, f64),
    /// Instances it did not converge on (left out of its mean).
    pub failed: usize,
}

const HEADLINE_PX: u32 = 80;
const ROW_PX: u32 = 40;
const FRAME_PX: u32 = 110;
const LABELS_PX: u32 = 190;
const WIDTH: u32 = 1000;

impl RegretFigure {
    /// Writes `stem.png` and `stem.svg` into `dir`.
    pub(crate) fn draw(&self, dir: &Path, stem: &str) -> Result<Vec<PathBuf>, PlotError> {
        register_font();
        render(self, dir, stem)
    }

    /// The x axis, percent: every interval and 0, padded.
    fn x_range(&self) -> (f64, f64) {
        let ends = self
            .rows
            .iter()
            .flat_map(|r| [r.interval.0, r.interval.1, r.mean]);
        let (lo, hi) = ends
            .map(|x| 100.0 * x)
            .filter(|x| x.is_finite())
            .fold((0.0f64, 0.0f64), |(a, b), x| (a.min(x), b.max(x)));
        let pad = ((hi - lo) * 0.05).max(0.5);
        (lo - pad, hi + pad)
    }
}

impl Draw for RegretFigure {
    fn size(&self) -> (u32, u32) {
        (
            WIDTH,
            HEADLINE_PX + FRAME_PX + ROW_PX * self.rows.len().max(1) as u32,
        )
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE)?;
        let (top, plot) = root.split_vertically(HEADLINE_PX);
        let left = TextStyle::from((FONT, 22).into_font()).pos(Pos::new(HPos::Left, VPos::Top));
        top.draw(&Text::new(self.headline.clone(), (12, 10), left))?;
        let small = TextStyle::from((FONT, TEXT).into_font()).pos(Pos::new(HPos::Left, VPos::Top));
        top.draw(&Text::new(self.subtitle.clone(), (12, 44), small))?;
        let (x0, x1) = self.x_range();
        let n = self.rows.len() as f64;
        let frame = Frame {
            caption: 0,
            margin: 12,
            x_labels: 60,
            y_labels: LABELS_PX,
        };
        let mut chart = chart(&plot, "", frame, x0..x1, -0.6..(n - 0.4))?;
        mesh(&mut chart)
            .x_desc(
                "mean regret: time to solution over the best fixed strategy's, % (95% interval)",
            )
            .y_labels(0)
            .disable_y_mesh()
            .light_line_style(TRANSPARENT)
            .draw()?;
        chart.draw_series([PathElement::new(
            vec![(0.0, -0.6), (0.0, n - 0.4)],
            BLACK.mix(0.35).stroke_width(1),
        )])?;
        let labels: Vec<String> = self.rows.iter().map(|r| r.variant.clone()).collect();
        let colours = variant_colours(&labels);
        let font = TextStyle::from((FONT, TEXT).into_font());
        let base = plot.get_base_pixel();
        for (i, (r, colour)) in self.rows.iter().zip(colours).enumerate() {
            // Best on top, as the rows come.
            let y = n - 1.0 - i as f64;
            let (lo, hi) = (100.0 * r.interval.0, 100.0 * r.interval.1);
            let style = colour.stroke_width(2);
            chart.draw_series([
                PathElement::new(vec![(lo, y), (hi, y)], style),
                PathElement::new(vec![(lo, y - 0.2), (lo, y + 0.2)], style),
                PathElement::new(vec![(hi, y - 0.2), (hi, y + 0.2)], style),
            ])?;
            draw_mark(
                &mut chart,
                look(&r.variant).mark,
                (100.0 * r.mean, y),
                (0, 6),
                colour,
                false,
            )?;
            let name = match r.failed {
                0 => r.name.clone(),
                f => format!("{} ({f} unconverged)", r.name),
            };
            let (px, py) = chart.backend_coord(&(x0, y));
            plot.draw(&Text::new(
                name,
                (px - 12 - base.0, py - base.1),
                font.pos(Pos::new(HPos::Right, VPos::Center)),
            ))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_axis_holds_every_interval_and_zero() {
        let row = |mean: f64, lo: f64, hi: f64| RegretRow {
            name: "greedy".into(),
            variant: "async(4)+greedy(0.001)".into(),
            mean,
            interval: (lo, hi),
            failed: 0,
        };
        let f = RegretFigure {
            headline: String::new(),
            subtitle: String::new(),
            rows: vec![row(0.01, 0.004, 0.018), row(0.182, 0.104, 0.271)],
        };
        let (lo, hi) = f.x_range();
        assert!(lo < 0.0 && hi > 27.1 && hi < 30.0, "{lo} {hi}");
        let g = RegretFigure {
            rows: vec![row(-0.02, -0.05, 0.01)],
            ..f
        };
        let (lo, hi) = g.x_range();
        assert!(lo < -5.0 && hi > 1.0, "{lo} {hi}");
    }
}
