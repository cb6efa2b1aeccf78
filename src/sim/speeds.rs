//! Speeds a run measured, replayed in the simulator (`braid sim
//! --replay-speeds REPORT.json`): braid's answer to Charm++'s `+LBDump` /
//! `+LBSim`. The same measured conditions, replayed deterministically
//! against another balancer, interval or dead band.
//!
//! A run with `trace_interval` > 0 samples every subdomain's count and owner
//! ([`TraceSample`]). A thread's updates in an interval are the count
//! increases of the subdomains it owns at the interval's end (a subdomain
//! moved within the interval counts for its new owner: an error of a few
//! updates per move). Its rate over the interval is those updates over the
//! interval's length; the simulator makes the core of that thread work at
//! that rate from then on, whoever owns the work: the measured conditions
//! belong to the core. After the last sample the last rate holds.

use std::path::PathBuf;

use crate::engine::TraceSample;

/// Each thread's measured update rate over each sampled interval.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasuredSpeeds {
    /// The report they come from.
    pub source: PathBuf,
    /// End of each interval, seconds from the start of the run.
    pub ends_s: Vec<f64>,
    /// `rates[thread][interval]`: updates per second.
    pub rates: Vec<Vec<f64>>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpeedsError {
    #[error("it has no trace: record the run with trace_interval > 0 (e.g. 0.01)")]
    NoTrace,
    #[error("sample {sample} does not follow the one before it (time or counts go back)")]
    Disorder { sample: usize },
    #[error("sample {sample} has {got} subdomains or owners, the run {want}")]
    Shape {
        sample: usize,
        got: usize,
        want: usize,
    },
    #[error("sample {sample} names thread {owner}, but the run had {threads}")]
    Owner {
        sample: usize,
        owner: usize,
        threads: usize,
    },
}

impl MeasuredSpeeds {
    /// The rates of `threads` threads over `samples` (counts from zero at
    /// time zero before the first).
    ///
    /// ```
    /// use braid::engine::TraceSample;
    /// use braid::sim::speeds::MeasuredSpeeds;
    /// let at = |t_s, counts: Vec<u64>, owners| TraceSample { t_s, counts, owners };
    /// let s = MeasuredSpeeds::from_trace(
    ///     "r.json".into(),
    ///     2,
    ///     &[at(0.5, vec![10, 20], vec![0, 1]), at(1.0, vec![15, 40], vec![0, 1])],
    /// )
    /// .unwrap();
    /// assert_eq!(s.rates, vec![vec![20.0, 10.0], vec![40.0, 40.0]]);
    /// ```
    pub fn from_trace(
        source: PathBuf,
        threads: usize,
        samples: &[TraceSample],
    ) -> Result<MeasuredSpeeds, SpeedsError> {
        let Some(first) = samples.first() else {
            return Err(SpeedsError::NoTrace);
        };
        let subs = first.counts.len();
        let mut rates = vec![Vec::with_capacity(samples.len()); threads];
        let mut ends_s = Vec::with_capacity(samples.len());
        let (mut t0, mut before) = (0.0, vec![0u64; subs]);
        for (k, s) in samples.iter().enumerate() {
            let sample = k + 1;
            if s.counts.len() != subs || s.owners.len() != subs {
                return Err(SpeedsError::Shape {
                    sample,
                    got: s.counts.len().min(s.owners.len()),
                    want: subs,
                });
            }
            if s.t_s.is_nan() || s.t_s <= t0 || s.counts.iter().zip(&before).any(|(a, b)| a < b) {
                return Err(SpeedsError::Disorder { sample });
            }
            let mut done = vec![0u64; threads];
            for ((&c, &b), &owner) in s.counts.iter().zip(&before).zip(&s.owners) {
                let Some(d) = done.get_mut(owner) else {
                    return Err(SpeedsError::Owner {
                        sample,
                        owner,
                        threads,
                    });
                };
                *d += c - b;
            }
            for (r, d) in rates.iter_mut().zip(done) {
                r.push(d as f64 / (s.t_s - t0));
            }
            ends_s.push(s.t_s);
            (t0, before) = (s.t_s, s.counts.clone());
        }
        Ok(MeasuredSpeeds {
            source,
            ends_s,
            rates,
        })
    }

    pub fn threads(&self) -> usize {
        self.rates.len()
    }
}

/// One core's speed over virtual time: a factor on its nominal speed in
/// each interval, the last holding on.
#[derive(Debug, Clone, PartialEq)]
pub struct Steps {
    /// End of each interval, ps.
    pub until_ps: Vec<u64>,
    pub factor: Vec<f64>,
}

/// Slowest factor a replayed core gets: an interval with no updates at all
/// (a thread stalled whole) makes its core this slow, not stopped.
pub const MIN_FACTOR: f64 = 1e-3;

impl Steps {
    /// The factors that make an update of `unit_ps` nominal picoseconds
    /// take `1 / rate` seconds in each interval.
    pub fn new(ends_s: &[f64], rates: &[f64], unit_ps: f64) -> Steps {
        Steps {
            until_ps: ends_s
                .iter()
                .map(|&t| (t * super::timeline::PS).round() as u64)
                .collect(),
            factor: rates
                .iter()
                .map(|&r| (r * unit_ps / super::timeline::PS).max(MIN_FACTOR))
                .collect(),
        }
    }

    /// The factor at time `t` (ps).
    pub fn at(&self, t: u64) -> f64 {
        let i = self.until_ps.partition_point(|&u| u <= t);
        self.factor[i.min(self.factor.len() - 1)]
    }

    /// When work of `work_ps` (at factor 1) that starts at `start` ends,
    /// each interval's factor applying to the part done in it. Taking the
    /// factor at the start for the whole update instead made an update that
    /// began in an interval where the thread was off its core (factor
    /// [`MIN_FACTOR`]) last a thousand times too long: replays of runs on a
    /// busy machine came out up to 4x too slow.
    ///
    /// ```
    /// use braid::sim::speeds::Steps;
    /// // Stalled until 1000 ps, then full speed.
    /// let s = Steps { until_ps: vec![1000, 10_000], factor: vec![1e-3, 1.0] };
    /// assert_eq!(s.finish(0, 100.0), 1099); // 1 ps of work while stalled
    /// assert_eq!(s.finish(2000, 100.0), 2100);
    /// assert_eq!(s.finish(20_000, 100.0), 20_100); // the last factor holds
    /// ```
    pub fn finish(&self, start: u64, work_ps: f64) -> u64 {
        let mut i = self.until_ps.partition_point(|&u| u <= start);
        let (mut t, mut left) = (start as f64, work_ps);
        while i < self.until_ps.len() {
            let (end, f) = (self.until_ps[i] as f64, self.factor[i]);
            let room = (end - t) * f;
            if left <= room {
                return (t + left / f).round() as u64;
            }
            left -= room;
            t = end;
            i += 1;
        }
        let f = self.factor[self.factor.len() - 1];
        (t + left / f).round() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(t_s: f64, counts: Vec<u64>, owners: Vec<usize>) -> TraceSample {
        TraceSample {
            t_s,
            counts,
            owners,
        }
    }

    #[test]
    fn a_moved_subdomain_counts_for_its_new_owner() {
        let s = MeasuredSpeeds::from_trace(
            "r".into(),
            2,
            &[
                at(1.0, vec![10, 10, 10], vec![0, 0, 1]),
                at(2.0, vec![20, 30, 15], vec![0, 1, 1]),
            ],
        )
        .unwrap();
        assert_eq!(s.rates, vec![vec![20.0, 10.0], vec![10.0, 25.0]]);
        assert_eq!(s.ends_s, vec![1.0, 2.0]);
    }

    #[test]
    fn broken_traces_are_refused() {
        let e = |samples: &[TraceSample]| MeasuredSpeeds::from_trace("r".into(), 2, samples);
        assert_eq!(e(&[]), Err(SpeedsError::NoTrace));
        assert_eq!(
            e(&[at(1.0, vec![5], vec![0]), at(1.0, vec![6], vec![0])]),
            Err(SpeedsError::Disorder { sample: 2 })
        );
        assert_eq!(
            e(&[at(1.0, vec![5], vec![0]), at(2.0, vec![4], vec![0])]),
            Err(SpeedsError::Disorder { sample: 2 })
        );
        assert!(matches!(
            e(&[at(1.0, vec![5], vec![2])]),
            Err(SpeedsError::Owner { owner: 2, .. })
        ));
        assert!(matches!(
            e(&[at(1.0, vec![5], vec![0]), at(2.0, vec![6, 1], vec![0, 0])]),
            Err(SpeedsError::Shape { sample: 2, .. })
        ));
    }

    #[test]
    fn steps_hold_each_rate_over_its_interval_and_the_last_after() {
        // An update of 1 us nominal: 1e6 updates/s is full speed.
        let s = Steps::new(&[1.0, 2.0], &[1e6, 5e5], 1e6);
        assert_eq!(s.at(0), 1.0);
        assert_eq!(s.at(999_999_999_999), 1.0);
        assert_eq!(s.at(1_000_000_000_000), 0.5);
        assert_eq!(s.at(9_000_000_000_000), 0.5);
        assert_eq!(Steps::new(&[1.0], &[0.0], 1e6).at(0), MIN_FACTOR);
    }
}
