//! What `braid experiment` shows while a suite runs: on a terminal a bar,
//! otherwise (a batch job's log) one line per finished sample; both with
//! an ETA from the measured cost of the samples done so far, by variant
//! (a balanced variant or a sync one can cost several times another).

use std::collections::HashMap;
use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// The progress of one invocation over the samples it runs.
pub(crate) struct SuiteProgress {
    bar: Option<ProgressBar>,
    /// Variants of the samples still to run, in order.
    left: Vec<String>,
    /// Seconds each variant's samples took so far: (sum, count).
    cost: HashMap<String, (f64, u32)>,
    done: usize,
    total: usize,
    /// Samples run at once: the ETA divides by it.
    jobs: usize,
}

impl SuiteProgress {
    /// `todo`: the variant of each sample to run; `total` and `skipped`
    /// count the suite's samples and those done before.
    pub(crate) fn new(
        todo: Vec<String>,
        total: usize,
        skipped: usize,
        jobs: usize,
    ) -> SuiteProgress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total as u64).with_position(skipped as u64);
            bar.set_style(
                ProgressStyle::with_template(
                    "{elapsed_precise} [{bar:30}] {pos}/{len} samples  {msg}",
                )
                .expect("a valid template")
                .progress_chars("=> "),
            );
            bar
        });
        SuiteProgress {
            bar,
            left: todo,
            cost: HashMap::new(),
            done: skipped,
            total,
            jobs: jobs.max(1),
        }
    }

    /// Sample `key` is starting.
    pub(crate) fn starting(&self, key: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(format!(
                "{}{key}",
                self.eta()
                    .map(|e| format!("ETA {e} · "))
                    .unwrap_or_default()
            ));
        }
    }

    /// The sample `key` of `variant` ended after `wall_s` seconds; `how`
    /// says how (ok, missed its tolerance, failed).
    pub(crate) fn finished(&mut self, key: &str, variant: &str, wall_s: f64, how: &str) {
        let c = self.cost.entry(variant.to_string()).or_insert((0.0, 0));
        c.0 += wall_s;
        c.1 += 1;
        if let Some(i) = self.left.iter().position(|v| v == variant) {
            self.left.remove(i);
        }
        self.done += 1;
        let eta = self
            .eta()
            .map(|e| format!(" · ETA {e}"))
            .unwrap_or_default();
        match &self.bar {
            Some(bar) => bar.inc(1),
            None => say(&format!(
                "braid: [{}/{}] {key}: {how} in {wall_s:.1} s{eta}",
                self.done, self.total
            )),
        }
    }

    /// A line that must not be drawn over by the bar.
    pub(crate) fn say(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.suspend(|| say(line)),
            None => say(line),
        }
    }

    /// The samples left, each at its variant's mean cost so far (or the
    /// mean over all variants, for one not run yet).
    fn eta(&self) -> Option<String> {
        let (sum, n) = self
            .cost
            .values()
            .fold((0.0, 0), |(s, n), &(cs, cn)| (s + cs, n + cn));
        // Nothing measured, or nothing left: no ETA (an empty sum of
        // floats is -0.0, which printed as `ETA -0 ms` on the last line).
        if n == 0 || self.left.is_empty() {
            return None;
        }
        let overall = sum / f64::from(n);
        let left: f64 = self
            .left
            .iter()
            .map(|v| self.cost.get(v).map_or(overall, |&(s, n)| s / f64::from(n)))
            .sum();
        Some(crate::watch::seconds(left / self.jobs as f64))
    }

    pub(crate) fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}

/// A line on stderr. A log that went away (`2>&1 | head`) must not stop
/// the suite: the results file is what matters.
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_eta_prices_each_sample_left_at_its_variants_cost() {
        let todo = ["sync", "async", "sync", "async", "new"]
            .map(String::from)
            .to_vec();
        let mut p = SuiteProgress {
            bar: None,
            left: todo,
            cost: HashMap::new(),
            done: 0,
            total: 5,
            jobs: 1,
        };
        assert_eq!(p.eta(), None, "nothing measured yet");
        p.finished("a", "sync", 30.0, "ok");
        p.finished("b", "async", 10.0, "ok");
        // Left: sync (30), async (10), new (the mean so far, 20).
        assert_eq!(p.eta().unwrap(), "1 min 0 s");
        for (key, variant) in [("c", "sync"), ("d", "async"), ("e", "new")] {
            p.finished(key, variant, 1.0, "ok");
        }
        assert_eq!(p.eta(), None, "nothing left");
    }
}
