//! ULBA's claim in its own terms (anticipating-load-imbalance-ulba.txt,
//! Figs. 2 and 3): over many workload instances, the gain in time to
//! solution of the anticipating strategy at its best `lb_alpha` for that
//! instance over each standard strategy, as a histogram of instances. The
//! anticipating variants are those the suite sweeps `lb_alpha` for; the
//! others are the standard ones. Also written as CSV, one row per instance
//! and standard strategy. Runs of a fixed number of iterations (ULBA's
//! gamma) are compared by the time they took.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

use super::stats::quantile;
use super::{Draw, DrawResult, Frame, PlotError, TEXT, chart, legend, mesh, variant_colours};
use crate::lab::experiment::results::Record;
use braid::StopReason;
use braid_noise::files::write_atomic;

/// One instance against one standard strategy.
struct Gain {
    instance: String,
    standard: String,
    standard_s: f64,
    alpha: String,
    anticipate_s: f64,
    /// The balancer calls each made (medians over repetitions; none
    /// without a balancer's stats).
    standard_calls: Option<f64>,
    anticipate_calls: Option<f64>,
}

impl Gain {
    /// Percent of the standard strategy's time saved (negative: lost).
    fn percent(&self) -> f64 {
        100.0 * (1.0 - self.anticipate_s / self.standard_s)
    }
}

pub(super) struct Gains {
    /// Whether every run stopped at its iteration budget (then the times
    /// compared are those of a fixed number of iterations).
    fixed_iterations: bool,
    standards: Vec<String>,
    anticipating: String,
    gains: Vec<Gain>,
}

/// The median number of balancer calls the records made.
fn median_calls(records: &[&Record]) -> Option<f64> {
    let v: Vec<f64> = (records.iter())
        .filter_map(|r| Some(r.report.as_ref()?.lb.as_ref()?.calls as f64))
        .collect();
    quantile(&v, 0.5)
}

/// The median time to solution; for runs of a fixed number of
/// iterations (stopped by `max_iterations`, as ULBA's model runs its
/// gamma), the time they took.
fn median_tts(records: &[&Record]) -> Option<f64> {
    let v: Vec<f64> = records
        .iter()
        .filter_map(|r| {
            let report = r.report.as_ref()?;
            match (report.time_to_solution_s, report.stop_reason) {
                (Some(t), _) => Some(t),
                (None, StopReason::MaxIterations) => Some(report.elapsed_s),
                (None, _) => None,
            }
        })
        .collect();
    quantile(&v, 0.5)
}

impl Gains {
    pub(super) fn new(records: &[&Record]) -> Gains {
        let swept = |r: &Record| r.sample.sweep.contains_key("lb_alpha");
        let mut standards: Vec<String> = Vec::new();
        let mut anticipating = String::new();
        let mut instances: Vec<String> = Vec::new();
        for r in records {
            if swept(r) {
                anticipating.clone_from(&r.sample.variant);
            } else if !standards.contains(&r.sample.variant) {
                standards.push(r.sample.variant.clone());
            }
            if let Some(w) = &r.sample.workload
                && !instances.contains(w)
            {
                instances.push(w.clone());
            }
        }
        let mut gains = Vec::new();
        for w in &instances {
            let at = |keep: &dyn Fn(&Record) -> bool| -> Vec<&Record> {
                records
                    .iter()
                    .copied()
                    .filter(|r| r.sample.workload.as_ref() == Some(w) && keep(r))
                    .collect()
            };
            let mut alphas: Vec<String> = at(&swept)
                .iter()
                .filter_map(|r| r.sample.sweep.get("lb_alpha").cloned())
                .collect();
            alphas.sort();
            alphas.dedup();
            // The best alpha for this instance, chosen after the fact (as
            // ULBA's sweeps do).
            let best = alphas
                .iter()
                .filter_map(|a| {
                    let t = median_tts(&at(&|r| r.sample.sweep.get("lb_alpha") == Some(a)))?;
                    Some((a.clone(), t))
                })
                .min_by(|x, y| x.1.total_cmp(&y.1));
            let Some((alpha, anticipate_s)) = best else {
                continue;
            };
            let anticipate_calls =
                median_calls(&at(&|r| r.sample.sweep.get("lb_alpha") == Some(&alpha)));
            for s in &standards {
                let of = at(&|r| !swept(r) && &r.sample.variant == s);
                let Some(standard_s) = median_tts(&of) else {
                    continue;
                };
                gains.push(Gain {
                    instance: w.clone(),
                    standard: s.clone(),
                    standard_s,
                    alpha: alpha.clone(),
                    anticipate_s,
                    standard_calls: median_calls(&of),
                    anticipate_calls,
                });
            }
        }
        let fixed_iterations = records.iter().all(|r| {
            r.report
                .as_ref()
                .is_some_and(|p| p.stop_reason == StopReason::MaxIterations)
        });
        Gains {
            fixed_iterations,
            standards,
            anticipating,
            gains,
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.gains.is_empty()
    }

    /// ULBA's Fig. 3 from its own model beside these gains, if every
    /// instance is its application model (`overloading(v, x, y)`).
    pub(super) fn model(&self) -> Option<super::ulba_model::UlbaModel> {
        let gains: Vec<(String, String, f64)> = (self.gains.iter())
            .map(|g| (g.instance.clone(), g.standard.clone(), g.percent()))
            .collect();
        super::ulba_model::UlbaModel::new(&self.anticipating, &self.standards, &gains)
    }

    /// Per standard strategy, over all instances and over each share of
    /// overloaded threads (the first argument of an `overloading` or
    /// `overloading-threads` workload): the instances, the gain's median,
    /// mean, least and most (%), how many instances anticipate was faster
    /// on, and the calls each side made in all (each run's first call, at
    /// its start, left out).
    fn summary(&self) -> Vec<Vec<String>> {
        let share = |instance: &str| -> Option<String> {
            let (name, args) = instance.split_once('(')?;
            name.starts_with("overloading")
                .then(|| args.split(',').next().unwrap_or("").trim().to_string())
        };
        let mut groups: Vec<String> = vec!["all".into()];
        for g in &self.gains {
            if let Some(s) = share(&g.instance)
                && !groups.contains(&s)
            {
                groups.push(s);
            }
        }
        let mut out = vec![
            [
                "standard",
                "share",
                "instances",
                "median_pct",
                "mean_pct",
                "min_pct",
                "max_pct",
                "faster",
                "standard_calls",
                "anticipate_calls",
            ]
            .map(String::from)
            .to_vec(),
        ];
        for s in &self.standards {
            for group in &groups {
                let of: Vec<&Gain> = (self.gains.iter())
                    .filter(|g| &g.standard == s)
                    .filter(|g| group == "all" || share(&g.instance).as_ref() == Some(group))
                    .collect();
                if of.is_empty() {
                    continue;
                }
                let pct: Vec<f64> = of.iter().map(|g| g.percent()).collect();
                let calls = |f: fn(&Gain) -> Option<f64>| -> String {
                    let v: Option<Vec<f64>> = of.iter().map(|g| f(g).map(|c| c - 1.0)).collect();
                    v.map_or(String::new(), |v| format!("{}", v.iter().sum::<f64>()))
                };
                let c = |x: Option<f64>| super::cell(x, 3);
                out.push(vec![
                    s.clone(),
                    group.clone(),
                    of.len().to_string(),
                    c(quantile(&pct, 0.5)),
                    c(Some(pct.iter().sum::<f64>() / pct.len() as f64)),
                    c(quantile(&pct, 0.0)),
                    c(quantile(&pct, 1.0)),
                    pct.iter().filter(|&&p| p > 0.0).count().to_string(),
                    calls(|g| g.standard_calls),
                    calls(|g| g.anticipate_calls),
                ]);
            }
        }
        out
    }

    /// One row per instance and standard strategy, as `stem.csv`, and the
    /// summary per strategy and share of overloaded threads, as
    /// `stem-summary.csv`.
    pub(super) fn write_csv(&self, dir: &Path, stem: &str) -> Result<Vec<PathBuf>, PlotError> {
        let mut csv = String::from(
            "instance,standard,standard_tts_s,anticipate,best_lb_alpha,anticipate_tts_s,gain_percent\n",
        );
        for g in &self.gains {
            let _ = writeln!(
                csv,
                "\"{}\",{},{},{},{},{},{:.3}",
                g.instance,
                g.standard,
                g.standard_s,
                self.anticipating,
                g.alpha,
                g.anticipate_s,
                g.percent()
            );
        }
        let path = dir.join(format!("{stem}.csv"));
        write_atomic(&path, |f| f.write_all(csv.as_bytes())).map_err(|e| PlotError::Write {
            path: path.clone(),
            message: e.to_string(),
        })?;
        let summary = super::write_csv(dir, &format!("{stem}-summary"), &self.summary())?;
        Ok(vec![path, summary])
    }

    /// The histogram's bins: 1% wide, or the next round width (2, 5, 10,
    /// 20, 50, 100%) when the gains span more than 25 of them; over the
    /// gains' range and 0, on multiples of the width.
    fn bins(&self) -> (f64, f64, f64) {
        bins_of(self.gains.iter().map(Gain::percent))
    }
}

/// [`Gains::bins`] of these gains (%).
fn bins_of(gains: impl Iterator<Item = f64>) -> (f64, f64, f64) {
    let (lo, hi) = gains.fold((0.0f64, 0.0f64), |(a, b), g| (a.min(g), b.max(g)));
    let width = [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]
        .into_iter()
        .find(|w| (hi - lo) / w <= 25.0)
        .unwrap_or(100.0);
    let lo = (lo / width).floor() * width;
    let hi = ((hi / width).floor() + 1.0) * width;
    (lo, hi, width)
}

impl Draw for Gains {
    fn size(&self) -> (u32, u32) {
        (1000, 560)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE)?;
        let (lo, hi, width) = self.bins();
        let nbins = ((hi - lo) / width).round() as usize;
        let counts: Vec<Vec<usize>> = self
            .standards
            .iter()
            .map(|s| {
                let mut c = vec![0usize; nbins];
                for g in self.gains.iter().filter(|g| &g.standard == s) {
                    let b = ((g.percent() - lo) / width).floor() as usize;
                    c[b.min(nbins - 1)] += 1;
                }
                c
            })
            .collect();
        let top = counts.iter().flatten().copied().max().unwrap_or(1) as f64;
        let instances = self
            .gains
            .iter()
            .map(|g| g.instance.as_str())
            .collect::<std::collections::HashSet<_>>()
            .len();
        let frame = Frame {
            caption: 22,
            margin: 16,
            x_labels: 45,
            y_labels: 55,
        };
        let mut chart = chart(
            root,
            &format!(
                "{} at its best lb_alpha against the standard strategies, {instances} instances",
                self.anticipating
            ),
            frame,
            lo..hi,
            0.0..(top * 1.2 + 0.5),
        )?;
        mesh(&mut chart)
            .x_desc(match self.fixed_iterations {
                false => "gain in time to solution (%): positive = anticipating is faster",
                true => "gain in the time of the run's iterations (%): positive = anticipating is faster",
            })
            .y_desc("instances")
            .y_label_formatter(&|v| format!("{v:.0}"))
            .x_label_formatter(&|v| format!("{v:.1}"))
            .light_line_style(TRANSPARENT)
            .draw()?;
        let k = self.standards.len().max(1) as f64;
        let colours = variant_colours(&self.standards);
        for (si, s) in self.standards.iter().enumerate() {
            let c = colours[si];
            let bars = counts[si].iter().enumerate().map(|(b, &n)| {
                let x0 = lo + b as f64 * width + width * si as f64 / k;
                Rectangle::new([(x0, 0.0), (x0 + width / k, n as f64)], c.filled())
            });
            let label = format!("against {s}");
            chart
                .draw_series(bars)?
                .label(label)
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
        }
        let zero = [PathElement::new(
            vec![(0.0, 0.0), (0.0, top * 1.2 + 0.5)],
            BLACK.stroke_width(1),
        )];
        chart.draw_series(zero)?;
        legend(&mut chart, SeriesLabelPosition::UpperRight, TEXT)
    }
}

#[cfg(test)]
mod tests {
    use super::bins_of;

    #[test]
    fn bins_are_one_percent_wide_unless_the_gains_span_more_than_25() {
        // -0.2 .. 5.3%: 1% bins from -1 to 6, zero included.
        assert_eq!(bins_of([-0.2, 5.3, 0.59].into_iter()), (-1.0, 6.0, 1.0));
        // Gains all above 0 still start at 0.
        assert_eq!(bins_of([2.5, 3.5].into_iter()), (0.0, 4.0, 1.0));
        // 60% of span: 5% bins.
        let (lo, hi, w) = bins_of([-20.0, 40.0].into_iter());
        assert_eq!((lo, w), (-20.0, 5.0));
        assert!(hi > 40.0 && (hi - lo) / w <= 26.0, "{hi}");
    }
}
