//! Strategies under workloads: per workload, each variant's time to
//! solution over plain async's (the reference: the first variant without
//! a balancer) and its spread, medians over repetitions; a grey bar marks
//! the model's perfect balancer (from the reference's `workload_model`).
//! Written as a figure and as a Markdown and CSV table that ranks the
//! variants by their mean ratio over the workloads.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

use super::landscape::{family, variant_order};
use super::look::{draw_mark, look};
use super::stats::quantile;
use super::{Draw, DrawResult, Frame, Key, PlotError, Stroke, TEXT, chart, mesh, variant_colours};
use crate::lab::experiment::results::Record;
use braid_noise::files::write_atomic;

/// One workload's column: per variant, the median ratio and spread.
struct Column {
    workload: String,
    ratio: Vec<Option<f64>>,
    /// Per variant, every run's time over the reference's median (real
    /// machines only: a simulation repeats itself).
    runs: Vec<Vec<f64>>,
    spread: Vec<Option<f64>>,
    /// The model's perfect balancer over its plain async, if known.
    ideal: Option<f64>,
}

pub(super) struct Workloads {
    variants: Vec<String>,
    reference: String,
    columns: Vec<Column>,
    virtual_time: bool,
    /// The machine a real run ran on, for the title.
    machine: Option<String>,
}

fn median(records: &[&Record], f: impl Fn(&Record) -> Option<f64>) -> Option<f64> {
    let v: Vec<f64> = records.iter().filter_map(|r| f(r)).collect();
    quantile(&v, 0.5)
}

fn tts(r: &Record) -> Option<f64> {
    r.report.as_ref()?.time_to_solution_s
}

/// The workloads in the order the records first name them.
pub(super) fn workload_order(records: &[&Record]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in records {
        if let Some(w) = &r.sample.workload
            && !out.contains(w)
        {
            out.push(w.clone());
        }
    }
    out
}

/// The model's perfect balancer over the reference's measured time at
/// workload `w`: the model's time over a uniform run's (from the report
/// with the least progress, the best balanced: a workload that grows with
/// progress has grown less there) times the reference's uniform time, when
/// the records have a uniform run; else the model's own ratio from the
/// reference's report.
fn ideal_ratio(records: &[&Record], reference: &str, w: &str, base: Option<f64>) -> Option<f64> {
    let at_w: Vec<&Record> = records
        .iter()
        .copied()
        .filter(|r| r.sample.workload.as_deref() == Some(w))
        .collect();
    let uniform: Vec<&Record> = records
        .iter()
        .copied()
        .filter(|r| {
            r.sample.variant == reference && r.sample.workload.as_deref() == Some("uniform")
        })
        .collect();
    let progress = |r: &Record| {
        let rep = r.report.as_ref()?;
        let n = rep.subdomain_updates.len().max(1) as f64;
        Some(rep.subdomain_updates.iter().sum::<u64>() as f64 / n)
    };
    let best = at_w
        .iter()
        .filter(|r| {
            r.report
                .as_ref()
                .is_some_and(|p| p.workload_model.is_some())
        })
        .min_by(|a, b| {
            let key = |r: &Record| progress(r).unwrap_or(f64::INFINITY);
            key(a).total_cmp(&key(b))
        })?;
    let model = best.report.as_ref()?.workload_model?;
    match median(&uniform, tts) {
        Some(u) => Some(model.ideal_balanced_time() * u / base?),
        None => {
            let plain = median(
                &at_w
                    .iter()
                    .copied()
                    .filter(|r| r.sample.variant == reference)
                    .collect::<Vec<_>>(),
                |r| Some(r.report.as_ref()?.workload_model?.plain_async_time()),
            )?;
            Some(model.ideal_balanced_time() / plain)
        }
    }
}

impl Workloads {
    pub(super) fn new(records: &[&Record]) -> Workloads {
        let variants = variant_order(records);
        let real = records.iter().any(|r| r.engine == braid::EngineKind::Run);
        let reference = variants
            .iter()
            .find(|v| family(v) == 1)
            .unwrap_or(&variants[0])
            .clone();
        let columns = workload_order(records)
            .into_iter()
            .map(|w| {
                let of = |v: &str| -> Vec<&Record> {
                    records
                        .iter()
                        .copied()
                        .filter(|r| r.sample.variant == v && r.sample.workload.as_ref() == Some(&w))
                        .collect()
                };
                let base_records = of(&reference);
                let base = median(&base_records, tts);
                let ratio = variants
                    .iter()
                    .map(|v| Some(median(&of(v), tts)? / base?))
                    .collect();
                let runs = (variants.iter())
                    .map(|v| match (real, base) {
                        (true, Some(b)) => {
                            of(v).iter().filter_map(|r| tts(r)).map(|t| t / b).collect()
                        }
                        _ => Vec::new(),
                    })
                    .collect();
                let spread = variants
                    .iter()
                    .map(|v| median(&of(v), |r| Some(r.report.as_ref()?.spread as f64)))
                    .collect();
                // The model forecasts a balancer at scale, not on a
                // machine of a few threads: no grey line for real runs.
                let ideal = match real {
                    true => None,
                    false => ideal_ratio(records, &reference, &w, base),
                };
                Column {
                    workload: w,
                    ratio,
                    runs,
                    spread,
                    ideal,
                }
            })
            .collect();
        Workloads {
            variants,
            reference,
            columns,
            virtual_time: records.iter().any(|r| r.engine == braid::EngineKind::Sim),
            machine: super::machine_of(records),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.columns
            .iter()
            .all(|c| c.ratio.iter().all(Option::is_none))
    }

    /// Each variant's mean ratio over the workloads where it finished.
    fn mean_ratio(&self, vi: usize) -> Option<f64> {
        let r: Vec<f64> = self.columns.iter().filter_map(|c| c.ratio[vi]).collect();
        (!r.is_empty()).then(|| r.iter().sum::<f64>() / r.len() as f64)
    }

    /// Variant indices, best mean ratio first (those with none last).
    fn ranking(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.variants.len()).collect();
        order.sort_by(|&a, &b| {
            let key = |v: usize| self.mean_ratio(v).unwrap_or(f64::INFINITY);
            key(a).total_cmp(&key(b)).then(a.cmp(&b))
        });
        order
    }

    /// The ranking as Markdown and CSV, `workloads.md` and `.csv` in `dir`.
    pub(super) fn write_table(&self, dir: &Path, stem: &str) -> Result<Vec<PathBuf>, PlotError> {
        let mut md = format!(
            "Time to solution over {}'s at the same workload (median; lower is better), \
             best mean first. ({} time.)\n\n| rank | variant |",
            self.reference,
            if self.virtual_time { "Virtual" } else { "Wall" }
        );
        let mut csv = String::from("variant,mean");
        for c in &self.columns {
            let _ = write!(md, " {} |", c.workload);
            let _ = write!(csv, ",\"{}\"", c.workload);
        }
        md.push_str(" mean |\n|---|---|");
        md.push_str(&"---|".repeat(self.columns.len() + 1));
        md.push('\n');
        csv.push('\n');
        let cell = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.3}"));
        for (rank, vi) in self.ranking().into_iter().enumerate() {
            let _ = write!(md, "| {} | {} |", rank + 1, self.variants[vi]);
            let _ = write!(csv, "{},{}", self.variants[vi], cell(self.mean_ratio(vi)));
            for c in &self.columns {
                let _ = write!(md, " {} |", cell(c.ratio[vi]));
                let _ = write!(csv, ",{}", cell(c.ratio[vi]));
            }
            let _ = writeln!(md, " {} |", cell(self.mean_ratio(vi)));
            csv.push('\n');
        }
        if self.columns.iter().any(|c| c.ideal.is_some()) {
            let ideal: Vec<String> = self.columns.iter().map(|c| cell(c.ideal)).collect();
            let _ = writeln!(
                md,
                "| | model: perfect balancer | {} | |",
                ideal.join(" | ")
            );
        }
        let mut out = Vec::new();
        for (ext, text) in [("md", md), ("csv", csv)] {
            let path = dir.join(format!("{stem}.{ext}"));
            write_atomic(&path, |f| f.write_all(text.as_bytes())).map_err(|e| {
                PlotError::Write {
                    path: path.clone(),
                    message: e.to_string(),
                }
            })?;
            out.push(path);
        }
        Ok(out)
    }
}

impl Draw for Workloads {
    fn size(&self) -> (u32, u32) {
        (1100, 900 + LEGEND_PX)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE)?;
        let (keys, rest) = root.split_vertically(LEGEND_PX);
        super::draw_keys(&keys, &self.keys(), TEXT)?;
        let (top, bottom) = rest.split_vertically(520);
        self.draw_ratios(&top)?;
        self.draw_spreads(&bottom)
    }
}

/// The legend's strip above the panels, pixels: a strip of its own, so
/// that it covers no point.
const LEGEND_PX: u32 = 110;

impl Workloads {
    /// One key per variant, in its look.
    fn keys(&self) -> Vec<Key> {
        let colours = variant_colours(&self.variants);
        (self.variants.iter().zip(colours))
            .map(|(v, c)| Key::new(v.clone(), c, Stroke::None, look(v).mark))
            .collect()
    }

    /// Where variant `vi`'s marker sits in column `c`: spread across the
    /// column so that the variants do not hide one another.
    fn x(&self, c: usize, vi: usize) -> f64 {
        let n = self.variants.len().max(1) as f64;
        c as f64 + 0.15 + 0.7 * (vi as f64 + 0.5) / n
    }

    fn frame() -> Frame {
        Frame {
            caption: 22,
            margin: 14,
            x_labels: 40,
            y_labels: 85,
        }
    }

    fn draw_ratios<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let values = self.columns.iter().flat_map(|c| {
            (c.ratio.iter().flatten())
                .chain(c.ideal.iter())
                .chain(c.runs.iter().flatten())
        });
        let (lo, hi) = values.fold((1.0f64, 1.0f64), |(a, b), &v| (a.min(v), b.max(v)));
        let pad = 0.08 * (hi - lo).max(0.02);
        // Enough decimals that no two ticks read the same (1.00, 1.00).
        let digits = super::tick_decimals((hi + 3.0 * pad) - (lo - pad)).max(2);
        let n = self.columns.len() as f64;
        let mut chart = chart(
            area,
            &match &self.machine {
                None => format!(
                    "time to solution over {}'s, per workload (grey: the model's perfect balancer)",
                    self.reference
                ),
                Some(m) => format!(
                    "{m}: time over {}'s median (big: median, small: each run)",
                    self.reference
                ),
            },
            Self::frame(),
            0.0..n,
            (lo - pad)..(hi + 3.0 * pad),
        )?;
        let names: Vec<String> = self.columns.iter().map(|c| c.workload.clone()).collect();
        mesh(&mut chart)
            .x_labels(self.columns.len() * 2 + 1)
            .x_label_formatter(&|x| {
                let c = x.floor();
                if (x - c - 0.5).abs() < 1e-9 && c >= 0.0 {
                    names.get(c as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_desc("ratio (median)")
            .y_label_formatter(&|v| format!("{v:.digits$}"))
            .disable_x_mesh()
            .light_line_style(TRANSPARENT)
            .draw()?;
        for (c, col) in self.columns.iter().enumerate() {
            if let Some(ideal) = col.ideal {
                let grey = RGBColor(120, 120, 120);
                chart.draw_series([PathElement::new(
                    vec![(c as f64 + 0.1, ideal), (c as f64 + 0.9, ideal)],
                    grey.stroke_width(3),
                )])?;
            }
        }
        for (vi, v) in self.variants.iter().enumerate() {
            let c = variant_colours(&self.variants)[vi];
            let pts: Vec<(f64, f64)> = self
                .columns
                .iter()
                .enumerate()
                .filter_map(|(ci, col)| Some((self.x(ci, vi), col.ratio[vi]?)))
                .collect();
            let mark = look(v).mark;
            for (ci, col) in self.columns.iter().enumerate() {
                for &t in &col.runs[vi] {
                    draw_mark(&mut chart, mark, (self.x(ci, vi), t), (0, 3), c, true)?;
                }
            }
            for &p in &pts {
                draw_mark(&mut chart, mark, p, (0, 5), c, false)?;
            }
        }
        Ok(())
    }

    fn draw_spreads<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let hi = self
            .columns
            .iter()
            .flat_map(|c| c.spread.iter().flatten())
            .fold(1.0f64, |a, &b| a.max(b));
        let n = self.columns.len() as f64;
        let mut chart = chart(
            area,
            "spread at the end (most minus fewest updates of a subdomain, median)",
            Self::frame(),
            0.0..n,
            0.0..(hi * 1.1),
        )?;
        let names: Vec<String> = self.columns.iter().map(|c| c.workload.clone()).collect();
        mesh(&mut chart)
            .x_labels(self.columns.len() * 2 + 1)
            .x_label_formatter(&|x| {
                let c = x.floor();
                if (x - c - 0.5).abs() < 1e-9 && c >= 0.0 {
                    names.get(c as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_desc("updates")
            .y_label_formatter(&|v| format!("{v:.0}"))
            .disable_x_mesh()
            .light_line_style(TRANSPARENT)
            .draw()?;
        for vi in 0..self.variants.len() {
            let c = variant_colours(&self.variants)[vi];
            let bars = self.columns.iter().enumerate().filter_map(|(ci, col)| {
                let x = self.x(ci, vi);
                let w = 0.3 / self.variants.len().max(1) as f64;
                Some(Rectangle::new(
                    [(x - w, 0.0), (x + w, col.spread[vi]?)],
                    c.filled(),
                ))
            });
            chart.draw_series(bars)?;
        }
        Ok(())
    }
}
