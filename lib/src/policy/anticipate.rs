//! ULBA, the Underloading Load BalancerSettings Approach (Boulmier et al.,
//! anticipating-load-imbalance-ulba.txt), on measured object loads.
//!
//! ULBA watches each processing element's *workload increase rate* (WIR)
//! and, at a balancing step, gives the elements whose workload keeps
//! growing faster than the others' a fraction `alpha` *less* than their
//! even share (its Eq. 6), so that they take longer to become the
//! bottleneck again; the others share what they gave. In each group (as
//! for [`super::Greedy`]):
//!
//! 1. a thread's **WIR** is the growth per interval of the summed load of
//!    the subdomains it holds now, over the last `history` intervals
//!    (`Snapshot::load_history`): the growth of its objects, not of its set,
//!    so moves made by the balancer do not count as growth, and a mean over
//!    the window, since a region grows by whole subdomains, in steps;
//! 2. a thread is **overloading** when its WIR is more than the band (at
//!    least [`BAND`], and at least the measured jitter's: `jitter.rs`) of
//!    the group's mean thread load above the group's mean WIR (ULBA marks
//!    outliers by a z-score above 3, which a handful of threads cannot
//!    reach), at the latest interval and the two before (a load that jumps
//!    in one interval is no growth);
//! 3. the subdomains are dealt as [`super::Greedy`] deals them, with an
//!    overloading thread's speed counted `1 - alpha` times: its sweep ends
//!    `alpha` shorter than even, the others' a little longer.
//!
//! With `alpha = 0`, or while no thread's load grows, this is Greedy; under
//! noise alone object loads do not grow, so it is Greedy there too. Before
//! loads are measured (a snapshot with rates only) a thread counts as
//! overloading when its rate was more than [`BAND`] below its group's mean
//! in each of the last `history` intervals (`Snapshot::history`).
//! Departures from ULBA: the unloading is rounded to whole subdomains, and
//! the balancer is called at its interval (`lb_interval = auto` gives
//! Menon's, ULBA's `sigma+` at `alpha = 0`).

use std::sync::Arc;

use super::objects::{Weights, greedy};
use super::{Bounds, Move, Named, Policy, Snapshot, Entry, Settings, Strategy, by_group};

/// How far above the group's mean growth (as a share of its mean thread
/// load), or below its mean rate, a thread must be to count as
/// overloading: measurement jitter must not.
pub(super) const BAND: f64 = 0.02;

/// ULBA on measured object loads (the top of this file says how).
#[derive(Debug, Clone)]
pub struct Anticipate {
    /// Scope and thresholds.
    pub bounds: Bounds,
    /// The fraction of its even share an overloading thread gives up, in
    /// [0, 1).
    pub alpha: f64,
    /// Intervals of growth before a thread counts as overloading.
    pub history: usize,
}

impl Policy for Anticipate {
    fn decide(&self, snap: &Snapshot<'_>) -> Vec<Move> {
        let Some(w) = Weights::of(snap) else {
            return Vec::new();
        };
        by_group(snap, self.bounds.scope, |group, held| {
            let capacity: Vec<f64> = self
                .overloading_beyond(snap, group, w.band())
                .iter()
                .map(|&over| if over { 1.0 - self.alpha } else { 1.0 })
                .collect();
            greedy(snap, &w, group, held, &self.bounds, &capacity)
        })
    }

    fn name(&self) -> Named {
        self.bounds.named(Strategy::ANTICIPATE)
    }

    fn reads_loads(&self) -> bool {
        true
    }
}

impl Anticipate {
    /// Which members of `group` are overloading (see the top of this file).
    pub fn overloading(&self, snap: &Snapshot<'_>, group: &[usize]) -> Vec<bool> {
        self.overloading_beyond(snap, group, BAND)
    }

    /// [`Self::overloading`] by more than `band` (at least [`BAND`]: the
    /// measured jitter's, `jitter.rs`).
    fn overloading_beyond(&self, snap: &Snapshot<'_>, group: &[usize], band: f64) -> Vec<bool> {
        if snap.load_history.is_empty() {
            return self.slow_by_rates(snap, group, band);
        }
        let (k, h) = (self.history, snap.load_history);
        let mut over = vec![k > 0 && h.len() > k; group.len()];
        if !over.iter().any(|&o| o) {
            return over;
        }
        // Each member's objects now (growth is of these, wherever they were).
        let mut sets: Vec<Vec<usize>> = vec![Vec::new(); group.len()];
        for (s, &o) in snap.owners.iter().enumerate() {
            if let Some(i) = group.iter().position(|&t| t == o) {
                sets[i].push(s);
            }
        }
        let sum = |loads: &[f64], i: usize| sets[i].iter().map(|&s| loads[s]).sum::<f64>();
        // WIR: the mean growth per interval over the window ending `back`
        // intervals ago (a region grows by whole subdomains, so growth comes
        // in steps). Overloading at the latest interval and, where the
        // window reaches, at the two before: a load that jumps in one
        // interval (a sweep preempted by another program) is an end point
        // of one of these windows at most, and no growth.
        let mark = |back: usize, over: &mut [bool]| {
            let end = h.len() - 1 - back;
            let (latest, first) = (&h[end], &h[end - k]);
            let mean_load = (0..group.len()).map(|i| sum(latest, i)).sum::<f64>();
            let mean_load = mean_load / group.len() as f64;
            let wir: Vec<f64> = (0..group.len())
                .map(|i| (sum(latest, i) - sum(first, i)) / k as f64)
                .collect();
            let mean = wir.iter().sum::<f64>() / group.len() as f64;
            for (o, g) in over.iter_mut().zip(&wir) {
                *o &= *g - mean > band * mean_load;
            }
        };
        for back in (0..3).take_while(|&b| h.len() > k + b) {
            mark(back, &mut over);
        }
        over
    }

    /// Before loads are measured: which members were slower than the
    /// group's mean rate by more than `band` in each of the last `history`
    /// intervals.
    fn slow_by_rates(&self, snap: &Snapshot<'_>, group: &[usize], band: f64) -> Vec<bool> {
        let k = self.history;
        let h = snap.history;
        let mut slow = vec![k > 0 && h.len() >= k; group.len()];
        if !slow.iter().any(|&s| s) {
            return slow;
        }
        for rates in &h[h.len() - k..] {
            let mean = group.iter().map(|&g| rates[g]).sum::<f64>() / group.len() as f64;
            for (i, &t) in group.iter().enumerate() {
                slow[i] &= rates[t] < (1.0 - band) * mean;
            }
        }
        slow
    }
}


impl Strategy {
    /// ULBA's anticipation ([`Anticipate`]).
    pub const ANTICIPATE: Strategy = Strategy(&ENTRY);
}

/// Its line in the registry (`policy/mod.rs`).
pub(super) const ENTRY: Entry = Entry {
    name: "anticipate",
    build: |s: &Settings<'_>| Ok(Arc::new(Anticipate {
        bounds: s.bounds,
        alpha: s.alpha,
        history: s.history,
    })),
};

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
    fn before_loads_are_measured_a_thread_slow_for_history_intervals_is_unloaded() {
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
        // 3.1 : 4.9, so one of its subdomains goes.
        let moves = decide(&anticipate(0.3, 3), 3);
        assert_eq!(moves.len(), 1, "{moves:?}");
        assert!(moves[0].from == 0 && moves[0].to == 1, "{moves:?}");
        // Slow for only 2 of the 3 intervals asked for: not yet.
        assert!(decide(&anticipate(0.3, 3), 2).is_empty());
        // alpha 0 is Greedy.
        assert!(decide(&anticipate(0.0, 3), 3).is_empty());
    }

    /// 2 threads x 4 subdomains of load 1 at equal speeds; thread 0's
    /// subdomain 0 has grown by `growth` in each of the last 3 intervals
    /// and is now `1 + 3 growth` (so thread 0 is already that much heavier).
    fn grown(p: &dyn Policy, growth: f64) -> Vec<Move> {
        let counts = [0; 8];
        let owners: Vec<usize> = (0..8).map(|s| s / 4).collect();
        let history: Vec<Vec<f64>> = (0..4)
            .map(|k| {
                let mut loads = vec![1.0; 8];
                loads[0] += growth * k as f64;
                loads
            })
            .collect();
        let loads = history[3].clone();
        p.decide(&Snapshot {
            rates: &[1.0, 1.0],
            loads: &loads,
            speeds: &[1.0, 1.0],
            load_history: &history,
            history: crate::policy::steady(&[1.0, 1.0]),
            ..Snapshot::of(&counts, &owners, &[0, 0])
        })
    }

    /// As [`grown`] but with the same loads in every interval: thread 0 is
    /// as heavy now, but its load does not grow.
    fn steady(p: &dyn Policy, extra: f64) -> Vec<Move> {
        let counts = [0; 8];
        let owners: Vec<usize> = (0..8).map(|s| s / 4).collect();
        let mut loads = vec![1.0; 8];
        loads[0] += extra;
        let history = vec![loads.clone(); 4];
        p.decide(&Snapshot {
            rates: &[1.0, 1.0],
            loads: &loads,
            speeds: &[1.0, 1.0],
            load_history: &history,
            history: crate::policy::steady(&[1.0, 1.0]),
            ..Snapshot::of(&counts, &owners, &[0, 0])
        })
    }

    #[test]
    fn a_thread_whose_load_grows_is_unloaded_and_a_steady_one_left_alone() {
        // Thread 0 at 4.9 against 4: Greedy can do no better than move
        // nothing (any unit subdomain would make thread 1 the 5.0 one).
        let g = Greedy {
            bounds: anticipate(0.0, 3).bounds,
        };
        assert!(grown(&g, 0.3).is_empty());
        // Growing by 0.3 an interval (7% of the mean load) over 3:
        // unloaded, one unit subdomain goes from 0 to 1, ahead of the growth.
        let moves = grown(&anticipate(0.3, 3), 0.3);
        assert_eq!(moves.len(), 1, "{moves:?}");
        assert!(moves[0].from == 0 && moves[0].to == 1, "{moves:?}");
        // Just as heavy, but steady: left alone.
        assert!(steady(&anticipate(0.3, 3), 0.9).is_empty());
        // Growth within the band of the mean load is jitter.
        assert!(grown(&anticipate(0.3, 3), 0.01).is_empty());
        // alpha 0 is Greedy.
        assert!(grown(&anticipate(0.0, 3), 0.3).is_empty());
        // Fewer intervals measured than the history asks: not yet.
        assert!(grown(&anticipate(0.3, 4), 0.3).is_empty());
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
