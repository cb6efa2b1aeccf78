//! Charm++'s RefineLB (charm-runtime-adaptive-lb.txt) on measured object
//! loads and thread speeds.
//!
//! RefineLB leaves a good assignment alone and only moves objects off the
//! overloaded processors, the heaviest first, onto underloaded ones, until
//! no processor is more than a tolerance above the average. Here a thread's
//! load is the time it takes to sweep its set once (its subdomains'
//! measured loads over its measured speed, [`super::objects`], for the
//! reasons [`super::Greedy`] gives) and the average is the group's even
//! sweep, its total load over its total speed. In each group (as for
//! [`super::Greedy`]), repeatedly:
//!
//! 1. the **donor** is the thread with the longest sweep that holds more
//!    than `low_threshold`; stop when it is within `tolerance` of even
//!    (`sweep <= (1 + tolerance) * even`), as every thread then is;
//! 2. the **receiver** is the thread, among those holding fewer than
//!    `high_threshold`, whose sweep would be shortest with the donor's
//!    lightest subdomain (the shortest now may be a slow thread);
//! 3. the donor's heaviest subdomain that keeps the receiver within the
//!    tolerance moves to it, or if none fits, its lightest, provided the
//!    move shortens the longest sweep by more than 2%; otherwise stop.
//!
//! Each move takes from the current maximum, so few moves settle the group.
//! Departures: a subdomain moves at most once per call, and the 2% margin
//! (equal loads summed in another order differ in their last bits, and
//! measured loads jitter: with a strict comparison, a static hotspot made
//! refine trade 4,400 subdomains between equal threads). Before loads are
//! measured every subdomain weighs 1 and a thread's speed is its rate.

use std::sync::Arc;

use super::objects::{Weights, refine};
use super::{Bounds, Move, Named, Policy, Snapshot, Entry, Settings, Strategy, by_group};

/// Charm++ RefineLB on measured object loads (the top of this file says how).
#[derive(Debug, Clone)]
pub struct Refine {
    /// Scope and thresholds.
    pub bounds: Bounds,
    /// How far above the even sweep a thread may stay (0.1 = 10%).
    pub tolerance: f64,
}

impl Policy for Refine {
    fn decide(&self, snap: &Snapshot<'_>) -> Vec<Move> {
        let Some(w) = Weights::of(snap) else {
            return Vec::new();
        };
        by_group(snap, self.bounds.scope, |group, held| {
            refine(snap, &w, group, held, &self.bounds, self.tolerance)
        })
    }

    fn name(&self) -> Named {
        self.bounds.named(Strategy::REFINE)
    }

    fn reads_loads(&self) -> bool {
        true
    }
}


impl Strategy {
    /// Charm++ RefineLB's ([`Refine`]).
    pub const REFINE: Strategy = Strategy(&ENTRY);
}

/// Its line in the registry (`policy/mod.rs`).
pub(super) const ENTRY: Entry = Entry {
    name: "refine",
    build: |s: &Settings<'_>| Ok(Arc::new(Refine {
        bounds: s.bounds,
        tolerance: s.tolerance,
    })),
};

#[cfg(test)]
mod tests {
    use super::super::greedy::tests::{
        comes_to_rest, keeps_the_rules, rests_on_measured_loads, two,
    };
    use super::*;
    use crate::policy::Scope;

    fn refine(tolerance: f64) -> Refine {
        Refine {
            bounds: Bounds {
                scope: Scope::Joint,
                low: 2,
                high: 6,
            },
            tolerance,
        }
    }

    fn decide(p: &Refine, rates: &[f64]) -> Vec<Move> {
        let (counts, owners, _) = two(0.0, 0.0);
        p.decide(&Snapshot {
            rates,
            history: crate::policy::steady(rates),
            ..Snapshot::of(&counts, &owners, &[0, 0])
        })
    }

    #[test]
    fn the_most_loaded_gives_its_least_updated_until_within_tolerance() {
        // Rates 50 : 100, 4 each: loads 0.08 and 0.04 against an ideal of
        // 8/150 = 0.053. One move: 3/50 = 0.06 (13% above) and 5/100 = 0.05.
        let moves = decide(&refine(0.2), &[50.0, 100.0]);
        assert_eq!(
            moves,
            [Move {
                sub: 1,
                from: 0,
                to: 1
            }]
        );
        // A 10% tolerance wants 0.0587 or less: 0.06 is not, but a second
        // move would leave the receiver at 6/100 = 0.06, no lower: stop.
        assert_eq!(decide(&refine(0.1), &[50.0, 100.0]), moves);
        // Within tolerance from the start: nothing.
        assert!(decide(&refine(0.5), &[50.0, 100.0]).is_empty());
    }

    #[test]
    fn equal_rates_and_unknown_rates_move_nothing() {
        assert!(decide(&refine(0.0), &[100.0, 100.0]).is_empty());
        assert!(decide(&refine(0.0), &[]).is_empty());
        assert!(decide(&refine(0.0), &[0.0, 0.0]).is_empty());
    }

    #[test]
    fn a_stalled_thread_gives_down_to_its_low_threshold_and_no_further() {
        let moves = decide(&refine(0.1), &[0.0, 100.0]);
        let subs: Vec<usize> = moves.iter().map(|m| m.sub).collect();
        assert_eq!(subs, [1, 2]);
        let keep3 = Refine {
            bounds: Bounds {
                low: 3,
                ..refine(0.1).bounds
            },
            ..refine(0.1)
        };
        assert_eq!(decide(&keep3, &[0.0, 100.0]).len(), 1);
        let full = Refine {
            bounds: Bounds {
                high: 5,
                ..refine(0.1).bounds
            },
            ..refine(0.1)
        };
        assert_eq!(decide(&full, &[0.0, 100.0]).len(), 1);
    }

    #[test]
    fn refine_stops_once_every_thread_is_within_tolerance_of_the_mean() {
        use super::super::greedy::tests::{loaded, sweeps};
        // 3 threads: thread 0 holds 6 units of load, the others 2 each.
        let counts = vec![0; 10];
        let mut owners = vec![0, 0, 0, 0, 0, 0, 1, 1, 2, 2];
        let loads = [1.0; 10];
        let speeds = [1.0; 3];
        let p = Refine {
            bounds: Bounds {
                low: 0,
                high: 10,
                ..refine(0.25).bounds
            },
            ..refine(0.25)
        };
        let snap = loaded(&counts, &owners, &[0, 0, 0], &loads, &speeds);
        let moves = p.decide(&snap);
        assert_eq!(moves.len(), 2, "{moves:?}");
        // Within 25% of the mean (10 / 3) now: 4, 3, 3.
        let t = sweeps(&snap, &moves);
        assert!(t.iter().all(|&x| x <= 1.25 * 10.0 / 3.0), "{t:?}");
        for m in moves {
            owners[m.sub] = m.to;
        }
        let snap = loaded(&counts, &owners, &[0, 0, 0], &loads, &speeds);
        assert!(
            p.decide(&snap).is_empty(),
            "it moved again within tolerance"
        );
        // A heavy subdomain goes whole: 3 on thread 0 beside 1 + 1 + 1.
        let loads = [3.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5];
        let owners = vec![0, 0, 0, 0, 1, 1, 1, 2, 2, 2];
        let snap = loaded(&counts, &owners, &[0, 0, 0], &loads, &speeds);
        let moves = p.decide(&snap);
        assert!(moves.iter().all(|m| m.sub != 0 && m.from == 0), "{moves:?}");
        let t = sweeps(&snap, &moves);
        assert!(t.iter().all(|&x| x <= 1.25 * 9.0 / 3.0), "{t:?}");
    }

    #[test]
    fn refine_moves_only_what_overfills_and_rests_on_measured_loads() {
        let p = Refine {
            bounds: Bounds {
                low: 1,
                ..refine(0.05).bounds
            },
            ..refine(0.05)
        };
        rests_on_measured_loads(12, &p);
    }

    #[test]
    fn refine_comes_to_rest_after_one_call_at_steady_rates() {
        comes_to_rest(1, |scope| {
            Box::new(Refine {
                bounds: Bounds {
                    scope,
                    ..refine(0.05).bounds
                },
                ..refine(0.05)
            })
        });
    }

    #[test]
    fn refine_moves_only_donors_subdomains_within_thresholds_and_groups() {
        keeps_the_rules(|scope, low_threshold, high_threshold| {
            Box::new(Refine {
                bounds: Bounds {
                    scope,
                    low: low_threshold,
                    high: high_threshold,
                },
                tolerance: 0.05,
            })
        });
    }
}
