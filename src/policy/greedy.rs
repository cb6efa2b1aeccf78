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

/// Charm++ GreedyLB's idea on measured rates (the top of this file says how).
#[derive(Debug, Clone)]
pub struct Greedy {
    /// Scope and thresholds.
    pub bounds: Bounds,
}

impl Policy for Greedy {
    fn decide(&self, snap: &Snapshot<'_>) -> Vec<Move> {
        by_group(snap, self.bounds.scope, |group, held| {
            let weights: Vec<f64> = group.iter().map(|&t| snap.rates[t]).collect();
            let target = apportion(group, held, &weights, &self.bounds);
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
    bounds: &Bounds,
) -> Vec<usize> {
    let now: Vec<usize> = group.iter().map(|&t| held[t]).collect();
    let a = Apportion {
        total: now.iter().sum(),
        floor: now.iter().map(|&h| h.min(bounds.low)).collect(),
        cap: now.iter().map(|&h| h.max(bounds.high)).collect(),
        weight: weights.iter().sum(),
        weights,
        now,
    };
    let mut n = a.by_weight();
    a.deal(&mut n);
    a.take_back(&mut n);
    n
}

/// One group's apportioning: what each member holds now, its bounds, and
/// its weight.
struct Apportion<'a> {
    now: Vec<usize>,
    total: usize,
    floor: Vec<usize>,
    cap: Vec<usize>,
    weights: &'a [f64],
    weight: f64,
}

impl Apportion<'_> {
    /// Each member's share by weight, within its bounds. Dealing by
    /// `weight / (n + 1)` ends where each member holds about `floor(weight /
    /// lambda)`, and rounding down loses half a subdomain per member on
    /// average: so start from `lambda = weight / (total + T/2)`, and only a
    /// few subdomains are left to deal or take back. The bounds shift the
    /// count; a few corrections, each spread over the members the bounds
    /// left free, take most of that back.
    fn by_weight(&self) -> Vec<usize> {
        let members = self.now.len();
        let share = |seats: f64, i: usize| {
            let share = if self.weight > 0.0 {
                (self.weights[i] / self.weight * seats).floor() as usize
            } else {
                self.now[i]
            };
            share.clamp(self.floor[i], self.cap[i])
        };
        let mut seats = self.total as f64 + members as f64 / 2.0;
        let mut n: Vec<usize> = (0..members).map(|i| share(seats, i)).collect();
        for _ in 0..3 {
            let free: f64 = (0..members)
                .filter(|&i| n[i] > self.floor[i] && n[i] < self.cap[i])
                .map(|i| self.weights[i])
                .sum();
            let off = self.total as f64 - n.iter().sum::<usize>() as f64;
            if free <= 0.0 || off.abs() < 2.0 {
                break;
            }
            seats += off * self.weight / free;
            n = (0..members).map(|i| share(seats, i)).collect();
        }
        n
    }

    /// Deals the subdomains not yet placed: the next goes to the greatest
    /// (weight / (n + 1), below what it holds now, earlier member).
    fn deal(&self, n: &mut [usize]) {
        let mut placed: usize = n.iter().sum();
        let give = |n: &[usize], i: usize| {
            Rank(
                self.weights[i] / (n[i] + 1) as f64,
                n[i] < self.now[i],
                Reverse(i),
            )
        };
        let mut heap: BinaryHeap<Rank> = BinaryHeap::new();
        if placed < self.total {
            heap.extend(
                (0..n.len())
                    .filter(|&i| n[i] < self.cap[i])
                    .map(|i| give(n, i)),
            );
        }
        while placed < self.total {
            // Caps are at least what each holds, so every subdomain finds one.
            let Some(Rank(_, _, Reverse(i))) = heap.pop() else {
                break;
            };
            n[i] += 1;
            placed += 1;
            if n[i] < self.cap[i] {
                heap.push(give(n, i));
            }
        }
    }

    /// When the bounds took too many: the least deserving (the lowest
    /// weight / n, above what it holds now, later member) gives one back.
    fn take_back(&self, n: &mut [usize]) {
        let mut placed: usize = n.iter().sum();
        let keep = |n: &[usize], i: usize| {
            Reverse(Rank(
                self.weights[i] / n[i] as f64,
                n[i] <= self.now[i],
                Reverse(i),
            ))
        };
        let mut heap: BinaryHeap<Reverse<Rank>> = BinaryHeap::new();
        if placed > self.total {
            heap.extend(
                (0..n.len())
                    .filter(|&i| n[i] > self.floor[i])
                    .map(|i| keep(n, i)),
            );
        }
        while placed > self.total {
            let Some(Reverse(Rank(_, _, Reverse(i)))) = heap.pop() else {
                break;
            };
            n[i] -= 1;
            placed -= 1;
            if n[i] > self.floor[i] {
                heap.push(keep(n, i));
            }
        }
    }
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
pub(super) mod tests;
