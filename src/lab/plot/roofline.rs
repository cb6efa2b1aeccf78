//! The roofline of one core (`cargo bench --bench compare -- roofline`):
//! the measured ceilings (each cache level's and memory's bandwidth, the
//! FMA peak) and braid's kernel placed under them, on log-log axes of
//! arithmetic intensity (flop per byte) and Gflop/s.

use std::path::{Path, PathBuf};

use plotters::prelude::*;
use serde::{Deserialize, Serialize};

use super::{DESC, Draw, DrawResult, FONT, Key, Mark, Stroke, TEXT, colour, draw_keys, render};

/// A bandwidth ceiling: a cache level or memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ceiling {
    /// What it is ("L1", "memory").
    pub name: String,
    /// Bytes moved per second, read and written (GB/s).
    pub gb_per_s: f64,
}

/// One measured kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// What ran ("plain 150x150").
    pub label: String,
    /// Its flops per byte of compulsory traffic.
    pub flop_per_byte: f64,
    /// What it reached.
    pub gflops: f64,
}

/// A roofline to draw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Roofline {
    /// The caption's machine.
    pub machine: String,
    /// Bandwidth ceilings, smallest level first.
    pub ceilings: Vec<Ceiling>,
    /// The FMA peak, Gflop/s.
    pub peak_gflops: f64,
    /// The kernels measured.
    pub points: Vec<Point>,
    /// When it was measured (UTC, ISO 8601; empty in a file written
    /// before 2026-12-01).
    #[serde(default)]
    pub date: String,
    /// The braid that measured it (unknown in a file written before
    /// 2026-12-01).
    #[serde(default)]
    pub build: braid::Build,
}

impl Roofline {
    /// A roofline measured now on this machine, by this braid.
    pub fn measured(
        machine: String,
        ceilings: Vec<Ceiling>,
        peak_gflops: f64,
        points: Vec<Point>,
    ) -> Roofline {
        Roofline {
            machine,
            ceilings,
            peak_gflops,
            points,
            date: crate::lab::experiment::provenance::now_iso8601(),
            build: braid::Build::this(),
        }
    }

    /// Writes `stem.png`, `stem.svg`, `stem.csv` (the points and their
    /// shares of the roofs) and `stem-ceilings.csv` (the roofs) into `dir`.
    pub fn draw(&self, dir: &Path, stem: &str) -> Result<Vec<PathBuf>, String> {
        super::register_font();
        let mut files = render(self, dir, stem).map_err(|e| e.to_string())?;
        files.push(super::write_csv(dir, stem, &self.rows()).map_err(|e| e.to_string())?);
        let ceilings = format!("{stem}-ceilings");
        files.push(
            super::write_csv(dir, &ceilings, &self.ceiling_rows()).map_err(|e| e.to_string())?,
        );
        Ok(files)
    }

    /// The roofs as a table: each bandwidth ceiling in GB/s, then the FMA
    /// peak in Gflop/s.
    pub fn ceiling_rows(&self) -> Vec<Vec<String>> {
        let mut out = vec![vec!["ceiling".to_string(), "value".into(), "unit".into()]];
        for c in &self.ceilings {
            out.push(vec![
                c.name.clone(),
                format!("{:.1}", c.gb_per_s),
                "GB/s".into(),
            ]);
        }
        out.push(vec![
            "FMA peak".into(),
            format!("{:.1}", self.peak_gflops),
            "Gflop/s".into(),
        ]);
        out
    }

    /// Writes `stem.json` (what was measured, which `braid plot` draws
    /// again), `stem.png`, `stem.svg` and `stem.csv` into `dir`.
    pub fn write(&self, dir: &Path, stem: &str) -> Result<Vec<PathBuf>, String> {
        let mut files = vec![super::write_json(self, dir, stem)?];
        files.extend(self.draw(dir, stem)?);
        Ok(files)
    }
}

/// The most a `roofline.json` holds: the benchmark writes a few KiB.
const MAX_BYTES: u64 = 1 << 20;

/// The [`Roofline`] in `path`, read by its own reader: too large or
/// malformed, it is named as a `roofline.json` with the field at fault;
/// a value no log-log chart can place (an intensity or a rate that is not
/// positive, a ceiling without bandwidth) is refused by its field too.
pub(crate) fn read(path: &Path) -> Result<Roofline, super::PlotError> {
    let r: Roofline = super::read_own(path, "roofline.json", MAX_BYTES)?;
    r.placeable()
        .map_err(|problem| super::PlotError::NotReadable {
            path: path.to_path_buf(),
            kind: "roofline.json",
            problem,
        })?;
    Ok(r)
}

impl Roofline {
    /// Every value the log-log chart places is positive and finite
    /// (`Err` names the first that is not).
    fn placeable(&self) -> Result<(), String> {
        let bad = |field: String, v: f64| {
            Err(format!(
                "field `{field}`: {v} is not a positive number (the axes are logarithmic)"
            ))
        };
        if !(self.peak_gflops.is_finite() && self.peak_gflops > 0.0) {
            return bad("peak_gflops".into(), self.peak_gflops);
        }
        for (i, c) in self.ceilings.iter().enumerate() {
            if !(c.gb_per_s.is_finite() && c.gb_per_s > 0.0) {
                return bad(format!("ceilings[{i}].gb_per_s"), c.gb_per_s);
            }
        }
        for (i, p) in self.points.iter().enumerate() {
            for (name, v) in [("flop_per_byte", p.flop_per_byte), ("gflops", p.gflops)] {
                if !(v.is_finite() && v > 0.0) {
                    return bad(format!("points[{i}].{name}"), v);
                }
            }
        }
        Ok(())
    }
}

const X: std::ops::Range<f64> = 0.05..4.0;

/// The chart's and the legend strip's heights, pixels.
const CHART_PX: u32 = 620;
const LEGEND_PX: u32 = 190;

/// Each kernel in one colour and each size in one marker; points at their
/// own intensity (setting them apart sideways would move them along the
/// axis), those on one spot nested, the larger drawn first.
const MARK: i32 = 6;
const SIZE_MARKS: [Mark; 4] = [Mark::Circle, Mark::Triangle, Mark::Square, Mark::Diamond];

impl Roofline {
    /// Each point's marker size, colour and marker: a colour per kernel
    /// (the label's first word), a marker per size (the rank of its label
    /// among its kernel's), and nested sizes for points within 3% of each
    /// other on both axes.
    fn placed(&self) -> Vec<(i32, RGBColor, Mark)> {
        let kind = |p: &Point| p.label.split(' ').next().unwrap_or("").to_string();
        let mut kinds: Vec<String> = Vec::new();
        for p in &self.points {
            if !kinds.contains(&kind(p)) {
                kinds.push(kind(p));
            }
        }
        let near = |a: &Point, b: &Point| {
            (a.flop_per_byte / b.flop_per_byte).ln().abs() < 0.03
                && (a.gflops / b.gflops).ln().abs() < 0.03
        };
        self.points
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let later = (i + 1..self.points.len())
                    .filter(|&j| near(p, &self.points[j]))
                    .count() as i32;
                let k = kinds.iter().position(|x| *x == kind(p)).unwrap_or(0);
                let rank = (0..i).filter(|&j| kind(&self.points[j]) == kind(p)).count();
                (
                    MARK + 3 * later,
                    colour(self.ceilings.len() + k),
                    SIZE_MARKS[rank % SIZE_MARKS.len()],
                )
            })
            .collect()
    }

    /// The points as CSV rows, a header first: each kernel's intensity and
    /// Gflop/s, and its share of each roof at that intensity (the ceiling's
    /// bandwidth times the intensity, at most the peak).
    pub fn rows(&self) -> Vec<Vec<String>> {
        let mut head = vec![
            "kernel".to_string(),
            "flop_per_byte".into(),
            "gflops".into(),
        ];
        head.extend(self.ceilings.iter().map(|c| format!("{}_pct", c.name)));
        let mut out = vec![head];
        for p in &self.points {
            let mut row = vec![
                p.label.clone(),
                format!("{:.4}", p.flop_per_byte),
                format!("{:.3}", p.gflops),
            ];
            for c in &self.ceilings {
                let roof = (c.gb_per_s * p.flop_per_byte).min(self.peak_gflops);
                row.push(format!("{:.1}", 100.0 * p.gflops / roof));
            }
            out.push(row);
        }
        out
    }

    fn keys(&self) -> Vec<Key> {
        let mut keys: Vec<Key> = self
            .ceilings
            .iter()
            .enumerate()
            .map(|(i, c)| {
                Key::new(
                    format!("{} {:.0} GB/s", c.name, c.gb_per_s),
                    colour(i),
                    Stroke::Solid,
                    Mark::None,
                )
            })
            .collect();
        keys.push(Key::new(
            format!("FMA peak {:.0} Gflop/s", self.peak_gflops),
            BLACK,
            Stroke::Dashed(8, 4),
            Mark::None,
        ));
        for (p, (_, c, m)) in self.points.iter().zip(self.placed()) {
            keys.push(Key::new(
                format!("{}: {:.1} Gflop/s", p.label, p.gflops),
                c,
                Stroke::None,
                m,
            ));
        }
        keys
    }
}

impl Draw for Roofline {
    fn size(&self) -> (u32, u32) {
        (1100, CHART_PX + LEGEND_PX)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, plotters::coord::Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE)?;
        let (top, keys) = root.split_vertically(CHART_PX);
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
        let mut chart = ChartBuilder::on(&top)
            .caption(
                format!("Roofline of one core: {}", self.machine),
                (FONT, 22),
            )
            .margin(14)
            .x_label_area_size(60)
            .y_label_area_size(80)
            .build_cartesian_2d(X.log_scale(), y.log_scale())?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .disable_y_mesh()
            .x_label_formatter(&|x| one_two_five(*x))
            .y_label_formatter(&|y| one_two_five(*y))
            .x_desc("arithmetic intensity, flop per byte (8 read + 8 written per cell)")
            .y_desc("Gflop/s")
            .axis_desc_style((FONT, DESC))
            .label_style((FONT, TEXT))
            .draw()?;
        let steps: Vec<f64> = (0..=60)
            .map(|k| X.start * (X.end / X.start).powf(k as f64 / 60.0))
            .collect();
        for (i, c) in self.ceilings.iter().enumerate() {
            chart.draw_series(LineSeries::new(
                steps
                    .iter()
                    .map(|&x| (x, (c.gb_per_s * x).min(self.peak_gflops))),
                colour(i).stroke_width(2),
            ))?;
        }
        chart.draw_series(DashedLineSeries::new(
            [(X.start, self.peak_gflops), (X.end, self.peak_gflops)],
            8,
            4,
            BLACK.stroke_width(1),
        ))?;
        let placed = self.placed();
        let mut order: Vec<usize> = (0..self.points.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(placed[i].0));
        for i in order {
            let (p, (s, c, m)) = (&self.points[i], placed[i]);
            let at = EmptyElement::at((p.flop_per_byte, p.gflops));
            let style = c.filled();
            match m {
                Mark::Triangle => {
                    chart.draw_series([at + TriangleMarker::new((0, 0), s + 2, style)])?
                }
                Mark::Square => {
                    chart.draw_series([at + Rectangle::new([(-s, -s), (s, s)], style)])?
                }
                Mark::Diamond => chart.draw_series([at
                    + Polygon::new(
                        vec![(0, -s - 2), (s + 1, 0), (0, s + 2), (-s - 1, 0)],
                        style,
                    )])?,
                _ => chart.draw_series([at + Circle::new((0, 0), s, style)])?,
            };
        }
        draw_keys(&keys.margin(0, 0, 20, 0), &self.keys(), TEXT)
    }
}

/// A log axis's tick label at 1, 2 and 5 times a power of ten only: the
/// axis steps through every digit, and near the top of a decade (0.8, 0.9)
/// the labels run into each other.
fn one_two_five(v: f64) -> String {
    if !(v > 0.0 && v.is_finite()) {
        return String::new();
    }
    let mantissa = v / 10f64.powf(v.log10().floor());
    let shown = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .any(|m| (mantissa - m).abs() < 1e-6 * m);
    match shown {
        true => short(v),
        false => String::new(),
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

    /// One ceiling, one kernel.
    fn one_kernel() -> Roofline {
        Roofline::measured(
            "test".into(),
            vec![Ceiling {
                name: "L1".into(),
                gb_per_s: 200.0,
            }],
            100.0,
            vec![Point {
                label: "plain 24x24".into(),
                flop_per_byte: 0.25,
                gflops: 16.0,
            }],
        )
    }

    #[test]
    fn a_roofline_is_drawn_and_a_bad_one_is_refused() {
        let dir = braid_testkit::scratch_dir("roofline");
        let mut r = one_kernel();
        let files = r.draw(&dir, "roofline").unwrap();
        let images = files
            .iter()
            .filter(|f| !f.to_string_lossy().ends_with(".csv"));
        assert!(images.clone().count() == 2);
        assert!(
            images
                .into_iter()
                .all(|f| std::fs::metadata(f).unwrap().len() > 1000)
        );
        let csv = std::fs::read_to_string(dir.join("roofline.csv")).unwrap();
        assert_eq!(csv.lines().nth(1), Some("plain 24x24,0.2500,16.000,32.0"));
        // The roofs beside the points, so a page can quote them.
        let roofs = std::fs::read_to_string(dir.join("roofline-ceilings.csv")).unwrap();
        assert_eq!(
            roofs,
            "ceiling,value,unit\nL1,200.0,GB/s\nFMA peak,100.0,Gflop/s\n"
        );
        r.peak_gflops = f64::NAN;
        assert!(r.draw(&dir, "bad").is_err());
    }

    #[test]
    fn a_log_axis_labels_only_ones_twos_and_fives() {
        let shown: Vec<String> = [
            0.05, 0.06, 0.1, 0.2, 0.3, 0.5, 0.8, 0.9, 1.0, 2.0, 4.0, 500.0,
        ]
        .iter()
        .map(|&v| one_two_five(v))
        .filter(|l| !l.is_empty())
        .collect();
        assert_eq!(shown, ["0.05", "0.1", "0.2", "0.5", "1", "2", "500"]);
        assert_eq!(one_two_five(0.0), "");
    }

    #[test]
    fn a_roofline_written_is_read_back_whole() {
        let dir = braid_testkit::scratch_dir("roofline-json");
        let r = one_kernel();
        let files = r.write(&dir, "roofline").unwrap();
        // The JSON, the two images, the points and the roofs.
        assert_eq!(files.len(), 5);
        assert_eq!(read(&files[0]).unwrap(), r);
        let e = read(&files[1]).unwrap_err().to_string();
        assert!(e.contains("not a readable roofline.json"), "{e}");
    }

    /// An intensity of 0 or a negative rate has no place on log-log axes:
    /// refused by its field, before anything is drawn.
    #[test]
    fn a_point_the_axes_cannot_place_is_refused_by_its_field() {
        let dir = braid_testkit::scratch_dir("roofline-unplaceable");
        for (field, set) in [
            ("points[0].flop_per_byte", (0.0, 1.0)),
            ("points[0].gflops", (0.2, -3.0)),
        ] {
            let mut r = one_kernel();
            (r.points[0].flop_per_byte, r.points[0].gflops) = set;
            let path = dir.join("roofline.json");
            std::fs::write(&path, serde_json::to_string(&r).unwrap()).unwrap();
            let e = read(&path).unwrap_err().to_string();
            assert!(e.contains(&format!("field `{field}`")), "{e}");
        }
    }

    #[test]
    fn points_stay_at_their_intensity_each_kernel_a_colour_each_size_a_marker() {
        let point = |label: &str, flop_per_byte, gflops| Point {
            label: label.into(),
            flop_per_byte,
            gflops,
        };
        let r = Roofline::measured(
            "test".into(),
            Vec::new(),
            100.0,
            vec![
                point("plain 24x24", 0.25, 16.0),
                point("residual 24x24", 0.44, 16.0),
                point("plain 150x150", 0.25, 16.1),
                point("residual 150x150", 0.44, 30.0),
            ],
        );
        let placed = r.placed();
        // The two plain ones lie on one spot: nested, the first larger.
        assert!(placed[0].0 > placed[2].0, "{placed:?}");
        assert_eq!(placed[1].0, placed[3].0, "apart in Gflop/s: one size");
        // plain in one colour, residual in another; 24x24 and 150x150 in
        // two markers, the same for both kernels.
        assert_eq!(placed[0].1, placed[2].1);
        assert_ne!(placed[0].1, placed[1].1);
        assert_ne!(placed[0].2, placed[2].2);
        assert_eq!(placed[0].2, placed[1].2);
    }
}
