//! The roofline of one core (`cargo bench --bench compare -- roofline`):
//! the measured ceilings (each cache level's and memory's bandwidth, the
//! FMA peak) and braid's kernel placed under them, on log-log axes of
//! arithmetic intensity (flop per byte) and Gflop/s.

use std::path::{Path, PathBuf};

use plotters::prelude::*;

use super::{Draw, DrawResult, FONT, colour, legend, render};

/// A bandwidth ceiling: a cache level or memory.
#[derive(Debug, Clone)]
pub struct Ceiling {
    /// What it is ("L1", "memory").
    pub name: String,
    /// Bytes moved per second, read and written (GB/s).
    pub gb_per_s: f64,
}

/// One measured kernel.
#[derive(Debug, Clone)]
pub struct Point {
    /// What ran ("plain 150x150").
    pub label: String,
    /// Its flops per byte of compulsory traffic.
    pub flop_per_byte: f64,
    /// What it reached.
    pub gflops: f64,
}

/// A roofline to draw.
#[derive(Debug, Clone)]
pub struct Roofline {
    /// The caption's machine.
    pub machine: String,
    /// Bandwidth ceilings, smallest level first.
    pub ceilings: Vec<Ceiling>,
    /// The FMA peak, Gflop/s.
    pub peak_gflops: f64,
    /// The kernels measured.
    pub points: Vec<Point>,
}

impl Roofline {
    /// Writes `stem.png` and `stem.svg` into `dir`.
    pub fn draw(&self, dir: &Path, stem: &str) -> Result<Vec<PathBuf>, String> {
        super::register_font();
        render(self, dir, stem).map_err(|e| e.to_string())
    }
}

const X: std::ops::Range<f64> = 0.05..4.0;

impl Draw for Roofline {
    fn size(&self) -> (u32, u32) {
        (900, 640)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, plotters::coord::Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE)?;
        let low = self
            .points
            .iter()
            .map(|p| p.gflops)
            .chain(self.ceilings.iter().map(|c| c.gb_per_s * X.start))
            .fold(f64::INFINITY, f64::min);
        let y = (low / 2.0)..(self.peak_gflops * 2.0);
        if !(y.start > 0.0 && y.end.is_finite() && y.start < y.end) {
            return Err(format!("a roofline from {} to {} Gflop/s", y.start, y.end).into());
        }
        let mut chart = ChartBuilder::on(root)
            .caption(
                format!("Roofline of one core: {}", self.machine),
                (FONT, 20),
            )
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(60)
            .build_cartesian_2d(X.log_scale(), y.log_scale())?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .disable_y_mesh()
            .x_label_formatter(&|x| short(*x))
            .y_label_formatter(&|y| short(*y))
            .x_desc("arithmetic intensity, flop per byte (8 read + 8 written per cell)")
            .y_desc("Gflop/s")
            .axis_desc_style((FONT, 15))
            .label_style((FONT, 13))
            .draw()?;
        let steps: Vec<f64> = (0..=60)
            .map(|k| X.start * (X.end / X.start).powf(k as f64 / 60.0))
            .collect();
        for (i, c) in self.ceilings.iter().enumerate() {
            let col = colour(i);
            chart
                .draw_series(LineSeries::new(
                    steps
                        .iter()
                        .map(|&x| (x, (c.gb_per_s * x).min(self.peak_gflops))),
                    col.stroke_width(2),
                ))?
                .label(format!("{} {:.0} GB/s", c.name, c.gb_per_s))
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], col.stroke_width(2)));
        }
        chart
            .draw_series(LineSeries::new(
                [(X.start, self.peak_gflops), (X.end, self.peak_gflops)],
                BLACK.stroke_width(1),
            ))?
            .label(format!("FMA peak {:.0} Gflop/s", self.peak_gflops))
            .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLACK.stroke_width(1)));
        // Points at one intensity lie close together: each gets its own
        // colour and a legend entry instead of a label beside it, and each
        // is drawn smaller than the one before, so that none hides another.
        let n = self.points.len() as i32;
        for (i, p) in self.points.iter().enumerate() {
            let col = colour(self.ceilings.len() + i);
            let radius = 4 + 2 * (n - 1 - i as i32).max(0);
            chart
                .draw_series([Circle::new(
                    (p.flop_per_byte, p.gflops),
                    radius,
                    col.filled(),
                )])?
                .label(format!("{}: {:.1} Gflop/s", p.label, p.gflops))
                .legend(move |(x, y)| Circle::new((x + 10, y), 5, col.filled()));
        }
        legend(&mut chart, SeriesLabelPosition::LowerRight, 14)
    }
}

/// A tick label without the float's noise: `0.3`, not `0.30000000000000004`.
fn short(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_roofline_is_drawn_and_a_bad_one_is_refused() {
        let dir = crate::scratch_dir("roofline");
        let mut r = Roofline {
            machine: "test".into(),
            ceilings: vec![Ceiling {
                name: "L1".into(),
                gb_per_s: 200.0,
            }],
            peak_gflops: 100.0,
            points: vec![Point {
                label: "plain 24x24".into(),
                flop_per_byte: 0.25,
                gflops: 16.0,
            }],
        };
        let files = r.draw(&dir, "roofline").unwrap();
        assert!(
            files
                .iter()
                .all(|f| std::fs::metadata(f).unwrap().len() > 1000)
        );
        r.peak_gflops = f64::NAN;
        assert!(r.draw(&dir, "bad").is_err());
    }
}
