//! `balancer = auto`: which candidate balancer makes the next call.
//!
//! The effort metric paper (informed-partitioning-effort-metric.txt,
//! section 3) proposes ranking balancers while the application runs by the
//! effort of each balancing interval, and notes that, by the principle of
//! persistence, the locally best one may stay best for a few intervals;
//! AdaptiveLB (adaptive-lb-machine-learning.txt) chooses the strategy at
//! run time from what it measures. The [`Chooser`] does the simplest thing
//! that fits both: **explore** each candidate for [`TRIAL`] calls, in
//! order, measuring the effort of the intervals that follow its calls (all
//! but the first, which still shows the previous candidate's doing);
//! **exploit** the one with the lowest mean effort for [`EXPLOIT`] calls;
//! then explore again, since noise changes.

/// Calls each candidate makes when explored.
pub(crate) const TRIAL: u64 = 8;
/// Calls the best candidate makes before the candidates are tried again.
pub(crate) const EXPLOIT: u64 = 96;

#[derive(Debug, Clone)]
pub(crate) struct Chooser {
    /// Mean effort of each candidate's last trial, once it has had one.
    means: Vec<Option<f64>>,
    current: usize,
    exploring: bool,
    /// Calls the current candidate has made in this phase.
    made: u64,
    /// Effort of the current trial so far: time lost plus costs, and time.
    lost: f64,
    time: f64,
}

impl Chooser {
    pub(crate) fn new(candidates: usize) -> Self {
        Chooser {
            means: vec![None; candidates.max(1)],
            current: 0,
            exploring: true,
            made: 0,
            lost: 0.0,
            time: 0.0,
        }
    }

    /// The interval after the current candidate's last call cost `lost`
    /// seconds (imbalance and call) over `time` seconds.
    pub(crate) fn record(&mut self, lost: f64, time: f64) {
        // The first interval of a trial follows the previous one's call.
        if self.exploring && self.made > 1 {
            self.lost += lost;
            self.time += time;
        }
    }

    /// The candidate that makes the coming call.
    pub(crate) fn pick(&mut self) -> usize {
        let n = self.means.len();
        let phase = if self.exploring { TRIAL } else { EXPLOIT };
        if self.made >= phase {
            if self.exploring {
                let mean = if self.time > 0.0 {
                    self.lost / self.time
                } else {
                    0.0
                };
                self.means[self.current] = Some(mean);
                (self.lost, self.time) = (0.0, 0.0);
            }
            if self.exploring && self.current + 1 < n {
                self.current += 1;
            } else if self.exploring {
                self.exploring = false;
                self.current = self.best();
            } else {
                self.exploring = true;
                self.current = 0;
            }
            self.made = 0;
        }
        self.made += 1;
        self.current
    }

    /// The candidate with the lowest measured mean (ties: the earlier).
    fn best(&self) -> usize {
        (0..self.means.len())
            .min_by(|&a, &b| {
                let m = |i: usize| self.means[i].unwrap_or(f64::INFINITY);
                m(a).total_cmp(&m(b)).then(a.cmp(&b))
            })
            .unwrap_or(0)
    }

    pub(crate) fn means(&self) -> &[Option<f64>] {
        &self.means
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `calls` calls where candidate `i` loses `effort(i, call)`.
    fn run(c: &mut Chooser, calls: u64, effort: impl Fn(usize, u64) -> f64) -> Vec<usize> {
        (0..calls)
            .map(|k| {
                let i = c.pick();
                c.record(effort(i, k), 1.0);
                i
            })
            .collect()
    }

    #[test]
    fn each_candidate_is_tried_then_the_lowest_effort_runs() {
        let mut c = Chooser::new(3);
        let ran = run(&mut c, 3 * TRIAL + EXPLOIT, |i, _| [0.2, 0.05, 0.1][i]);
        let tried: Vec<usize> = ran[..3 * TRIAL as usize].to_vec();
        let want: Vec<usize> = (0..3).flat_map(|i| [i; TRIAL as usize]).collect();
        assert_eq!(tried, want);
        assert!(ran[3 * TRIAL as usize..].iter().all(|&i| i == 1));
        let means: Vec<f64> = c.means().iter().map(|m| m.unwrap()).collect();
        for (m, want) in means.iter().zip([0.2, 0.05, 0.1]) {
            assert!((m - want).abs() < 1e-12, "{means:?}");
        }
    }

    #[test]
    fn the_first_interval_of_a_trial_is_not_counted_against_it() {
        // The very first interval is awful (in a run, the previous
        // candidate's doing); it must not count against candidate 0.
        let mut c = Chooser::new(2);
        let mut first = true;
        for _ in 0..2 * TRIAL {
            let i = c.pick();
            c.record(if first { 9.0 } else { 0.1 * (i + 1) as f64 }, 1.0);
            first = false;
        }
        assert_eq!(c.pick(), 0);
        assert!(
            (c.means()[0].unwrap() - 0.1).abs() < 1e-12,
            "{:?}",
            c.means()
        );
    }

    #[test]
    fn the_candidates_are_tried_again_after_exploiting_and_a_change_is_followed() {
        let mut c = Chooser::new(2);
        let phase = 2 * TRIAL + EXPLOIT;
        // Candidate 0 is best at first, candidate 1 after the first phase.
        let ran = run(&mut c, 2 * phase, |i, k| {
            let late = k >= phase;
            if (i == 0) != late { 0.1 } else { 0.3 }
        });
        assert_eq!(ran[(phase - 1) as usize], 0);
        assert_eq!(ran[(2 * phase - 1) as usize], 1);
    }
}

#[cfg(test)]
mod examples {
    //! The documented behaviour of this module's items, as the examples
    //! their docs would show (rustdoc runs doc examples of public items
    //! only).

    #[test]
    fn the_chooser_settles_on_the_candidate_with_the_least_effort() {
        use crate::schedule::choose::{Chooser, TRIAL};
        let mut c = Chooser::new(2);
        // Candidate 0 loses 30% of the time, candidate 1 only 10%.
        for _ in 0..2 * TRIAL {
            let now = c.pick();
            c.record(if now == 0 { 0.3 } else { 0.1 }, 1.0);
        }
        assert_eq!(c.pick(), 1);
        assert!(c.means()[0].unwrap() > c.means()[1].unwrap());
    }
}
