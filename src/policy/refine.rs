//! Charm++'s RefineLB (charm-runtime-adaptive-lb.txt) on measured rates.
//!
//! RefineLB leaves a good assignment alone and only moves objects off the
//! overloaded processors, heaviest processor first, onto the least loaded,
//! until no processor is more than a tolerance above the average. Here a
//! thread's load is the time it takes to update each of its subdomains once,
//! `held / rate`, and the average is the group's ideal, `sum(held) /
//! sum(rate)` (what every thread's would be if subdomains went in proportion
//! to rates). In each group (as for [`super::Greedy`]), repeatedly:
//!
//! 1. the **donor** is the most loaded thread holding more than
//!    `low_threshold`; stop when its load is within `tolerance` of the ideal
//!    (`load <= (1 + tolerance) * ideal`);
//! 2. the **receiver** is the thread that would be least loaded with one
//!    more subdomain, among those with a rate and fewer than
//!    `high_threshold`; stop unless that is below the donor's load now (the
//!    move would not lower the maximum);
//! 3. the donor's least updated subdomain moves to the receiver.
//!
//! Each move takes from the current maximum, so few moves settle the group.
//! Departures: subdomains weigh the same (RefineLB weighs objects by their
//! measured time), and a subdomain moves at most once per call, so a donor
//! gives only what it held when the call began.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::{Bounds, Move, Named, Owned, Policy, Snapshot, Strategy, by_group};

/// A donor's own subdomains, least updated on top: (count, id).
type Donor = BinaryHeap<Reverse<(u64, usize)>>;

/// Charm++ RefineLB's idea on measured rates (the top of this file says how).
#[derive(Debug, Clone)]
pub struct Refine {
    /// Scope and thresholds.
    pub bounds: Bounds,
    /// How far above the ideal load a thread may stay (0.1 = 10%).
    pub tolerance: f64,
}

impl Policy for Refine {
    fn decide(&self, snap: &Snapshot<'_>) -> Vec<Move> {
        by_group(snap, self.bounds.scope, |group, held| {
            self.refine(snap, group, held.to_vec())
        })
    }

    fn name(&self) -> Named {
        self.bounds.named(Strategy::Refine)
    }
}

impl Refine {
    /// The moves in `group`; `held` is every thread's count, updated as
    /// the moves are decided.
    fn refine(&self, snap: &Snapshot<'_>, group: &[usize], mut held: Vec<usize>) -> Vec<Move> {
        let mut moves = Vec::new();
        let rate = |t: usize| snap.rates[t];
        let load = |t: usize, n: usize| match (n, rate(t) > 0.0) {
            (0, _) => 0.0,
            (_, true) => n as f64 / rate(t),
            (_, false) => f64::INFINITY,
        };
        let total_rate: f64 = group.iter().map(|&t| rate(t)).sum();
        if total_rate <= 0.0 {
            return moves;
        }
        let ideal = group.iter().map(|&t| held[t]).sum::<usize>() as f64 / total_rate;
        // Each donor's own subdomains as a min-heap by (count, id), built
        // when it first gives (in time linear in what it holds).
        let mut owned: Option<Owned> = None;
        let mut own: Vec<Option<Donor>> = vec![None; held.len()];
        loop {
            let donor = group
                .iter()
                .copied()
                .filter(|&t| {
                    held[t] > self.bounds.low && own[t].as_ref().is_none_or(|h| !h.is_empty())
                })
                .max_by(|&a, &b| {
                    load(a, held[a])
                        .total_cmp(&load(b, held[b]))
                        .then(b.cmp(&a))
                });
            let Some(from) = donor else { return moves };
            let worst = load(from, held[from]);
            if worst <= (1.0 + self.tolerance) * ideal {
                return moves;
            }
            let receiver = group
                .iter()
                .copied()
                .filter(|&t| t != from && rate(t) > 0.0 && held[t] < self.bounds.high)
                .min_by(|&a, &b| {
                    load(a, held[a] + 1)
                        .total_cmp(&load(b, held[b] + 1))
                        .then(a.cmp(&b))
                });
            let Some(to) = receiver.filter(|&t| load(t, held[t] + 1) < worst) else {
                return moves;
            };
            let owned = owned.get_or_insert_with(|| Owned::of(snap));
            let heap = own[from].get_or_insert_with(|| {
                let subs = owned.of_thread(from).iter();
                subs.map(|&s| Reverse((snap.counts[s], s))).collect()
            });
            let Some(Reverse((_, sub))) = heap.pop() else {
                return moves;
            };
            moves.push(Move { sub, from, to });
            held[from] -= 1;
            held[to] += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::greedy::tests::{comes_to_rest, keeps_the_rules, two};
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
