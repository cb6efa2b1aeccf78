//! Speeds a run measured, for the simulator to replay (`braid sim
//! --replay-speeds REPORT.json`): braid's answer to Charm++'s `+LBDump` /
//! `+LBSim`. The same measured conditions, replayed deterministically
//! against another balancer, interval or dead band (the simulator's
//! `steps` turns them into core speeds over virtual time).
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

use super::TraceSample;

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

/// A trace that cannot be replayed; each names the sample at fault (from 1).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpeedsError {
    /// The run was not traced.
    #[error("it has no trace: record the run with trace_interval > 0 (e.g. 0.01)")]
    NoTrace,
    /// Time or a count goes back, or time is past braid's longest run.
    #[error(
        "sample {sample} does not follow the one before it (time or counts go back), or its \
         t_s is past 1e6 s"
    )]
    Disorder {
        /// The sample.
        sample: usize,
    },
    /// A sample of another size than the first.
    #[error("sample {sample} has {got} subdomains or owners, the run {want}")]
    Shape {
        /// The sample.
        sample: usize,
        /// Its subdomains.
        got: usize,
        /// The first sample's.
        want: usize,
    },
    /// An owner that is not a thread of the run.
    #[error("sample {sample} names thread {owner}, but the run had {threads}")]
    Owner {
        /// The sample.
        sample: usize,
        /// The owner named.
        owner: usize,
        /// The run's threads.
        threads: usize,
    },
}

impl MeasuredSpeeds {
    /// The rates of `threads` threads over `samples` (counts from zero at
    /// time zero before the first).
    ///
    /// ```
    /// use braid::TraceSample;
    /// use braid::MeasuredSpeeds;
    /// let at = |t_s, counts: Vec<u64>, owners| TraceSample {
    ///     t_s,
    ///     counts,
    ///     owners,
    ///     ..TraceSample::default()
    /// };
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
            if !(s.t_s > t0 && s.t_s <= crate::limits::MAX_SECONDS)
                || s.counts.iter().zip(&before).any(|(a, b)| a < b)
            {
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

    /// How many threads were measured.
    pub fn threads(&self) -> usize {
        self.rates.len()
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
            ..TraceSample::default()
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
}
