//! Charm++'s GreedyLB (Kale et al., "A Framework for Collective
//! Personalized Communication" and charm-runtime-adaptive-lb.txt) on
//! measured rates.
//!
//! GreedyLB takes the objects heaviest first and gives each to the least
//! loaded processor. Here every subdomain weighs the same, and a thread's
//! "load" is how slowly it would update each of its subdomains: in each
//! group (all threads for `joint`; each socket for `split`; for `hybrid`,
//! each socket, and all of them every `period`-th call) the subdomains are
//! dealt one at a time to the thread that, holding one more, would still
//! update each of its subdomains fastest (`rate / (held + 1)`, rates from
//! `Snapshot::rates`). The result gives each thread subdomains in proportion
//! to its rate, as evenly as whole subdomains allow.
//!
//! Departures from GreedyLB, which reassigns everything from scratch:
//! * **Only what changes moves.** A thread above its share gives its least
//!   updated subdomains (they gain most from a faster owner) to the threads
//!   below theirs, fastest first.
//! * **Ties stay put**: a subdomain goes to its current owner when that is
//!   as good as any, so equally fast threads never trade, and rates that
//!   differ by less than one subdomain's share (`(n + 1) / n`) move nothing.
//! * **Thresholds**: a thread keeps at least `min(held, low_threshold)`
//!   subdomains and receives only up to `high_threshold` (or what it holds,
//!   if more).
//!
//! Nothing moves until rates are known (the first call).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::{Bounds, Move, Named, Owned, Policy, Snapshot, Strategy, by_group};

#[derive(Debug, Clone)]
pub struct Greedy {
    pub bounds: Bounds,
}

impl Policy for Greedy {
    fn decide(&self, snap: &Snapshot<'_>) -> Vec<Move> {
        by_group(snap, self.bounds.scope, |group, held| {
            let weights: Vec<f64> = group.iter().map(|&t| snap.rates[t]).collect();
            let bounds = (self.bounds.low, self.bounds.high);
            let target = apportion(group, held, &weights, bounds);
            realise(snap, group, held, &target, &weights)
        })
    }

    fn name(&self) -> Named {
        self.bounds.named(Strategy::Greedy)
    }
}

/// How many subdomains each member of `group` should hold: each member's
/// share of the group's subdomains by `weights` (estimated as below),
/// kept within its bounds (it keeps `min(held, low)` and receives up to
/// `max(held, high)`); then the subdomains left over are dealt one at a
/// time to the member with the highest `weight / (n + 1)` (ties to a member
/// still below what it holds now, then to the earlier member), or, if the
/// bounds took too many, taken back one at a time from the member with the
/// lowest `weight / n` (ties to one at or above what it holds now, then the
/// later). Both through a heap, so a call costs `O(T log T)` for `T`
/// members, not a scan of the group per subdomain.
pub(super) fn apportion(
    group: &[usize],
    held: &[usize],
    weights: &[f64],
    (low, high): (usize, usize),
) -> Vec<usize> {
    let now: Vec<usize> = group.iter().map(|&t| held[t]).collect();
    let total: usize = now.iter().sum();
    let floor: Vec<usize> = now.iter().map(|&h| h.min(low)).collect();
    let cap: Vec<usize> = now.iter().map(|&h| h.max(high)).collect();
    let weight: f64 = weights.iter().sum();
    // Dealing by `weight / (n + 1)` ends where each member holds about
    // `floor(weight / lambda)`, and rounding down loses half a subdomain per
    // member on average: so start from `lambda = weight / (total + T/2)`,
    // and only a few subdomains are left to deal or take back.
    let share = |seats: f64, i: usize| {
        let share = if weight > 0.0 {
            (weights[i] / weight * seats).floor() as usize
        } else {
            now[i]
        };
        share.clamp(floor[i], cap[i])
    };
    let mut seats = total as f64 + group.len() as f64 / 2.0;
    let mut n: Vec<usize> = (0..group.len()).map(|i| share(seats, i)).collect();
    // The bounds shift the count; a few corrections, each spread over the
    // members the bounds left free, take most of that back.
    for _ in 0..3 {
        let free: f64 = (0..group.len())
            .filter(|&i| n[i] > floor[i] && n[i] < cap[i])
            .map(|i| weights[i])
            .sum();
        let off = total as f64 - n.iter().sum::<usize>() as f64;
        if free <= 0.0 || off.abs() < 2.0 {
            break;
        }
        seats += off * weight / free;
        n = (0..group.len()).map(|i| share(seats, i)).collect();
    }
    let mut placed: usize = n.iter().sum();
    // The next subdomain goes to the greatest (weight / (n + 1), below what
    // it holds now, earlier member).
    let give =
        |n: &[usize], i: usize| Rank(weights[i] / (n[i] + 1) as f64, n[i] < now[i], Reverse(i));
    let mut heap: BinaryHeap<Rank> = BinaryHeap::new();
    if placed < total {
        heap.extend(
            (0..group.len())
                .filter(|&i| n[i] < cap[i])
                .map(|i| give(&n, i)),
        );
    }
    while placed < total {
        // Caps are at least what each holds, so every subdomain finds one.
        let Some(Rank(_, _, Reverse(i))) = heap.pop() else {
            break;
        };
        n[i] += 1;
        placed += 1;
        if n[i] < cap[i] {
            heap.push(give(&n, i));
        }
    }
    // The bounds took too many: the least deserving (the lowest weight / n,
    // above what it holds now, later member) gives one back.
    let keep =
        |n: &[usize], i: usize| Reverse(Rank(weights[i] / n[i] as f64, n[i] <= now[i], Reverse(i)));
    let mut heap: BinaryHeap<Reverse<Rank>> = BinaryHeap::new();
    if placed > total {
        heap.extend(
            (0..group.len())
                .filter(|&i| n[i] > floor[i])
                .map(|i| keep(&n, i)),
        );
    }
    while placed > total {
        let Some(Reverse(Rank(_, _, Reverse(i)))) = heap.pop() else {
            break;
        };
        n[i] -= 1;
        placed -= 1;
        if n[i] > floor[i] {
            heap.push(keep(&n, i));
        }
    }
    n
}

/// A member's claim to the next subdomain: its rate per subdomain, whether
/// it is below what it holds now, and (reversed) its place in the group.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Rank(f64, bool, Reverse<usize>);

impl Eq for Rank {}

impl PartialOrd for Rank {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Rank {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0
            .total_cmp(&other.0)
            .then(self.1.cmp(&other.1))
            .then(self.2.cmp(&other.2))
    }
}

/// The moves that bring `group` to `target`: each member above its target
/// gives its least updated subdomains, in order, to the members below
/// theirs, the highest `weights` first.
pub(super) fn realise(
    snap: &Snapshot<'_>,
    group: &[usize],
    held: &[usize],
    target: &[usize],
    weights: &[f64],
) -> Vec<Move> {
    let mut receivers: Vec<usize> = (0..group.len())
        .filter(|&i| target[i] > held[group[i]])
        .collect();
    if receivers.is_empty() {
        return Vec::new();
    }
    receivers.sort_by(|&a, &b| weights[b].total_cmp(&weights[a]).then(a.cmp(&b)));
    let mut wants = receivers
        .into_iter()
        .flat_map(|i| std::iter::repeat_n(group[i], target[i] - held[group[i]]));
    let owned = Owned::of(snap);
    let mut moves = Vec::new();
    for (i, &from) in group.iter().enumerate() {
        let surplus = held[from].saturating_sub(target[i]);
        if surplus == 0 {
            continue;
        }
        for sub in owned.least_updated(snap, from, surplus) {
            let Some(to) = wants.next() else {
                return moves;
            };
            moves.push(Move { sub, from, to });
        }
    }
    moves
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::policy::Scope;

    pub(in crate::policy) fn greedy(scope: Scope) -> Greedy {
        Greedy {
            bounds: Bounds {
                scope,
                low: 2,
                high: 6,
            },
        }
    }

    /// 2 threads x 4 subdomains (thread 0's behind), rates `r0`, `r1`.
    pub(in crate::policy) fn two(r0: f64, r1: f64) -> (Vec<u64>, Vec<usize>, Vec<f64>) {
        let counts = vec![50, 40, 45, 48, 90, 95, 91, 99];
        let owners = (0..8).map(|s| s / 4).collect();
        (counts, owners, vec![r0, r1])
    }

    fn decide(p: &dyn Policy, counts: &[u64], owners: &[usize], rates: &[f64]) -> Vec<Move> {
        p.decide(&Snapshot {
            rates,
            ..Snapshot::of(counts, owners, &[0, 0])
        })
    }

    #[test]
    fn subdomains_go_in_proportion_to_rates_least_updated_first() {
        // 8 subdomains at rates 50 : 100 -> 8/3 : 16/3, dealt as 3 : 5.
        let (counts, owners, rates) = two(50.0, 100.0);
        let moves = decide(&greedy(Scope::Joint), &counts, &owners, &rates);
        assert_eq!(
            moves,
            [Move {
                sub: 1,
                from: 0,
                to: 1
            }]
        );
        // 10 : 100 -> thread 0 keeps only its low threshold, 2.
        let (counts, owners, rates) = two(10.0, 100.0);
        let moves = decide(&greedy(Scope::Joint), &counts, &owners, &rates);
        let subs: Vec<usize> = moves.iter().map(|m| m.sub).collect();
        assert_eq!(subs, [1, 2]);
        assert!(moves.iter().all(|m| m.from == 0 && m.to == 1));
    }

    #[test]
    fn rates_within_one_subdomains_share_move_nothing() {
        // 4 each: a 20% faster thread would update 5 at 120/5 = 24 each,
        // slower than the other's 100/4 = 25 now, so nothing moves.
        for (r0, r1) in [(100.0, 100.0), (100.0, 120.0), (120.0, 100.0)] {
            let (counts, owners, rates) = two(r0, r1);
            assert!(decide(&greedy(Scope::Joint), &counts, &owners, &rates).is_empty());
        }
        let (counts, owners, _) = two(1.0, 1.0);
        assert!(decide(&greedy(Scope::Joint), &counts, &owners, &[]).is_empty());
        assert!(decide(&greedy(Scope::Joint), &counts, &owners, &[0.0, 0.0]).is_empty());
    }

    #[test]
    fn the_thresholds_bound_what_a_thread_keeps_and_receives() {
        let (counts, owners, rates) = two(0.0, 100.0);
        let keeps_three = Greedy {
            bounds: Bounds {
                low: 3,
                ..greedy(Scope::Joint).bounds
            },
            ..greedy(Scope::Joint)
        };
        assert_eq!(decide(&keeps_three, &counts, &owners, &rates).len(), 1);
        let full = Greedy {
            bounds: Bounds {
                high: 5,
                ..greedy(Scope::Joint).bounds
            },
            ..greedy(Scope::Joint)
        };
        assert_eq!(decide(&full, &counts, &owners, &rates).len(), 1);
    }

    #[test]
    fn split_balances_each_socket_alone() {
        // Thread 0 slow on socket 0; socket 1 quiet: only 0 -> 1 moves.
        let counts = vec![
            10, 12, 14, 16, 50, 52, 54, 56, 60, 61, 62, 63, 55, 56, 57, 58,
        ];
        let owners: Vec<usize> = (0..16).map(|s| s / 4).collect();
        let rates = [10.0, 100.0, 100.0, 100.0];
        let moves = greedy(Scope::Split).decide(&Snapshot {
            rates: &rates,
            ..Snapshot::of(&counts, &owners, &[0, 0, 1, 1])
        });
        assert_eq!(moves.len(), 2);
        assert!(moves.iter().all(|m| m.from == 0 && m.to == 1));
    }

    /// The properties every strategy keeps, on pseudo-random snapshots:
    /// moves take only the donor's own subdomains, each subdomain at most
    /// once, never leave a donor below the low threshold nor fill a
    /// receiver beyond the high one, and stay within a group.
    pub(in crate::policy) fn keeps_the_rules(
        make: impl Fn(Scope, usize, usize) -> Box<dyn Policy>,
    ) {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut moved = 0;
        for round in 0..400 {
            let threads = 2 + (next() % 6) as usize;
            let owners: Vec<usize> = (0..threads * 4)
                .map(|_| (next() % threads as u64) as usize)
                .collect();
            let counts: Vec<u64> = owners.iter().map(|_| next() % 100).collect();
            let residuals: Vec<f64> = owners.iter().map(|_| (next() % 1000) as f64).collect();
            let sockets: Vec<usize> = (0..threads).map(|t| t % 2).collect();
            let rates: Vec<f64> = (0..threads).map(|_| (next() % 1000) as f64).collect();
            let history: Vec<Vec<f64>> = (0..4)
                .map(|_| (0..threads).map(|_| (next() % 100) as f64).collect())
                .collect();
            let scope = [Scope::Joint, Scope::Split, Scope::Hybrid { period: 2 }][round % 3];
            let (low, high) = (1, 7);
            let p = make(scope, low, high);
            for call in 1..=2 {
                let snap = Snapshot {
                    rates: &rates,
                    residuals: &residuals,
                    history: &history,
                    call,
                    ..Snapshot::of(&counts, &owners, &sockets)
                };
                let moves = p.decide(&snap);
                let mut held = snap.held();
                let mut seen = vec![false; counts.len()];
                let joint = snap.groups(scope).len() == 1;
                for m in moves {
                    assert_eq!(owners[m.sub], m.from, "{p:?} moved another's subdomain");
                    assert!(!seen[m.sub], "{p:?} moved a subdomain twice");
                    seen[m.sub] = true;
                    held[m.from] -= 1;
                    held[m.to] += 1;
                    assert!(held[m.from] >= low, "{p:?} left a thread below low");
                    assert!(held[m.to] <= high, "{p:?} filled a thread beyond high");
                    assert!(joint || sockets[m.from] == sockets[m.to], "{p:?} crossed");
                    moved += 1;
                }
            }
        }
        assert!(moved > 0, "no snapshot moved anything");
    }

    /// With rates that do not change, applying a strategy's moves call
    /// after call comes to rest within `within` calls and stays there: no
    /// strategy trades subdomains back and forth on a steady run.
    pub(in crate::policy) fn comes_to_rest(within: usize, make: impl Fn(Scope) -> Box<dyn Policy>) {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..200 {
            let threads = 2 + (next() % 7) as usize;
            let subs = threads * (2 + (next() % 6) as usize);
            let mut owners: Vec<usize> = (0..subs).map(|s| s * threads / subs).collect();
            let counts: Vec<u64> = (0..subs).map(|_| next() % 100).collect();
            let residuals: Vec<f64> = (0..subs).map(|_| (next() % 1000) as f64).collect();
            let sockets: Vec<usize> = (0..threads).map(|t| t % 2).collect();
            // Half the rounds draw rates from three values, so that exact
            // ties (a quiet run's equal rates) are common.
            let rates: Vec<f64> = (0..threads)
                .map(|_| match round % 4 {
                    0 | 1 => (1 + next() % 1000) as f64,
                    _ => (100 * (1 + next() % 3)) as f64,
                })
                .collect();
            let history = vec![rates.clone(); 4];
            let scope = [Scope::Joint, Scope::Split][round % 2];
            let p = make(scope);
            let mut quiet_calls = 0;
            for call in 1..=within as u64 + 2 {
                let moves = p.decide(&Snapshot {
                    rates: &rates,
                    residuals: &residuals,
                    history: &history,
                    call,
                    ..Snapshot::of(&counts, &owners, &sockets)
                });
                if moves.is_empty() {
                    quiet_calls += 1;
                } else {
                    assert_eq!(quiet_calls, 0, "{p:?} moved again after resting");
                    assert!(call as usize <= within, "{p:?} still moving at call {call}");
                }
                for m in moves {
                    owners[m.sub] = m.to;
                }
            }
            assert!(quiet_calls >= 2, "{p:?} never came to rest");
        }
    }

    #[test]
    fn greedy_comes_to_rest_after_one_call_at_steady_rates() {
        comes_to_rest(1, |scope| Box::new(greedy(scope)));
    }

    #[test]
    fn greedy_moves_only_donors_subdomains_within_thresholds_and_groups() {
        keeps_the_rules(|scope, low_threshold, high_threshold| {
            Box::new(Greedy {
                bounds: Bounds {
                    scope,
                    low: low_threshold,
                    high: high_threshold,
                },
            })
        });
    }
}
