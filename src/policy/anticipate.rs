//! ULBA, the Unloading Load Balancer Approach (Boulmier et al.,
//! anticipating-load-imbalance-ulba.txt), on progress.
//!
//! ULBA notices the processing elements whose workload keeps growing faster
//! than the others' (a property of their data, not of the last balancing)
//! and, at a balancing step, gives them a fraction `alpha` *less* than the
//! average, so that they take longer to become the bottleneck again. In an
//! asynchronous iteration the analogue is a thread that is persistently
//! slow: whatever it holds, its subdomains keep falling behind unless it
//! holds fewer than its share. In each group (as for [`super::Greedy`]):
//!
//! 1. a thread is **overloading** when, in each of the last `history`
//!    intervals (`Snapshot::history`: each thread's rate), its rate was more
//!    than [`BAND`] below the mean of the group's threads: its progress
//!    deficit grew at every one of those calls, or would have without the
//!    balancer;
//! 2. the subdomains are apportioned as [`super::Greedy`] does, by rate,
//!    except that an overloading thread's rate counts `1 - alpha` times: it
//!    is unloaded by a fraction `alpha` beyond what evens the rates now;
//! 3. only what changes moves, least updated subdomains first.
//!
//! With `alpha = 0` this is Greedy. Departures from ULBA: the workload is a
//! count of equal subdomains, so the unloading is rounded to whole
//! subdomains (and a fraction too small to change the rounding does
//! nothing); the growth is detected from measured rates rather than a
//! workload model (a thread's rate is its capacity, so the mark does not
//! flip back once it is unloaded, which would make it churn); and until
//! `history` intervals are known it acts as Greedy.

use super::greedy::{apportion, realise};
use super::{Bounds, Move, Named, Policy, Snapshot, Strategy, by_group};

/// How far below the group's mean per-subdomain rate a thread must be for
/// its deficit to count as growing (timing jitter must not).
pub(super) const BAND: f64 = 0.02;

/// ULBA's anticipation (the top of this file says what it does and where it departs from its source).
#[derive(Debug, Clone)]
pub struct Anticipate {
    /// Scope and thresholds.
    pub bounds: Bounds,
    /// Extra unloading of an overloading thread, in [0, 1).
    pub alpha: f64,
    /// Intervals of growing deficit before a thread counts as overloading.
    pub history: usize,
}

impl Policy for Anticipate {
    fn decide(&self, snap: &Snapshot<'_>) -> Vec<Move> {
        by_group(snap, self.bounds.scope, |group, held| {
            let slow = self.overloading(snap, group);
            let weights: Vec<f64> = group
                .iter()
                .zip(&slow)
                .map(|(&t, &slow)| {
                    let r = snap.rates[t];
                    if slow { r * (1.0 - self.alpha) } else { r }
                })
                .collect();
            let target = apportion(group, held, &weights, &self.bounds);
            realise(snap, group, held, &target, &weights)
        })
    }

    fn name(&self) -> Named {
        self.bounds.named(Strategy::Anticipate)
    }
}

impl Anticipate {
    /// Which members of `group` were slower than the group's mean by more
    /// than [`BAND`] in each of the last `history` intervals.
    pub fn overloading(&self, snap: &Snapshot<'_>, group: &[usize]) -> Vec<bool> {
        let k = self.history;
        let h = snap.history;
        let mut slow = vec![k > 0 && h.len() >= k; group.len()];
        if !slow.iter().any(|&s| s) {
            return slow;
        }
        for rates in &h[h.len() - k..] {
            let mean = group.iter().map(|&g| rates[g]).sum::<f64>() / group.len() as f64;
            for (i, &t) in group.iter().enumerate() {
                slow[i] &= rates[t] < (1.0 - BAND) * mean;
            }
        }
        slow
    }
}

#[cfg(test)]
mod tests {
    use super::super::Greedy;
    use super::super::greedy::tests::{comes_to_rest, greedy, keeps_the_rules};
    use super::*;
    use crate::policy::Scope;

    fn anticipate(alpha: f64, history: usize) -> Anticipate {
        Anticipate {
            bounds: Bounds {
                scope: Scope::Joint,
                low: 1,
                high: 8,
            },
            alpha,
            history,
        }
    }

    /// 2 threads x 4 subdomains, rates 90 : 100; `slow_for` intervals in
    /// which thread 0's rate was below thread 1's.
    fn decide(p: &dyn Policy, slow_for: usize) -> Vec<Move> {
        let counts = [50, 40, 45, 48, 90, 95, 91, 99];
        let owners: Vec<usize> = (0..8).map(|s| s / 4).collect();
        let mut history = vec![vec![100.0, 100.0]; 4];
        for rho in history.iter_mut().rev().take(slow_for) {
            rho[0] = 90.0;
        }
        p.decide(&Snapshot {
            rates: &[90.0, 100.0],
            history: &history,
            ..Snapshot::of(&counts, &owners, &[0, 0])
        })
    }

    #[test]
    fn a_thread_whose_deficit_keeps_growing_is_unloaded_beyond_even() {
        let low = |p: Greedy| Greedy {
            bounds: Bounds {
                low: 1,
                high: 8,
                ..p.bounds
            },
        };
        // 90 : 100 -> 8 dealt as 3.8 : 4.2, so 4 : 4: Greedy keeps.
        assert!(decide(&low(greedy(Scope::Joint)), 3).is_empty());
        // Overloading for the last 3 intervals, alpha 0.3: 63 : 100 ->
        // 3.1 : 4.9, so its least updated subdomain goes.
        let moves = decide(&anticipate(0.3, 3), 3);
        assert_eq!(
            moves,
            [Move {
                sub: 1,
                from: 0,
                to: 1
            }]
        );
        // Slow for only 2 of the 3 intervals asked for: not yet.
        assert!(decide(&anticipate(0.3, 3), 2).is_empty());
        // alpha 0 is Greedy.
        assert!(decide(&anticipate(0.0, 3), 3).is_empty());
    }

    #[test]
    fn jitter_within_the_band_is_not_a_growing_deficit() {
        let p = anticipate(0.3, 2);
        let group = [0, 1];
        let history = vec![vec![24.9, 25.1], vec![24.8, 25.2]];
        let s = Snapshot {
            rates: &[100.0, 100.0],
            history: &history,
            ..Snapshot::of(&[0, 0], &[0, 1], &[0, 0])
        };
        assert_eq!(p.overloading(&s, &group), [false, false]);
        let history = vec![vec![20.0, 25.0], vec![20.0, 25.0]];
        let s = Snapshot {
            history: &history,
            ..s
        };
        assert_eq!(p.overloading(&s, &group), [true, false]);
    }

    #[test]
    fn anticipate_comes_to_rest_after_one_call_at_steady_rates() {
        comes_to_rest(1, |scope| {
            let p = anticipate(0.3, 2);
            Box::new(Anticipate {
                bounds: Bounds { scope, ..p.bounds },
                ..p
            })
        });
    }

    #[test]
    fn anticipate_moves_only_donors_subdomains_within_thresholds_and_groups() {
        keeps_the_rules(|scope, low_threshold, high_threshold| {
            Box::new(Anticipate {
                bounds: Bounds {
                    scope,
                    low: low_threshold,
                    high: high_threshold,
                },
                alpha: 0.3,
                history: 2,
            })
        });
    }
}
