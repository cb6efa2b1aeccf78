//! Charm++'s GreedyLB (charm-runtime-adaptive-lb.txt) on measured object
//! loads and thread speeds.
//!
//! GreedyLB takes the objects heaviest first and gives each to the least
//! loaded processor, relying on the principle of persistence: what an
//! object cost in the last interval it costs in the next. Here an object is
//! a subdomain, its load its measured cost per update at full speed
//! ([`Snapshot::loads`]), and a thread's load the time it takes to sweep
//! its set once, the sum of its subdomains' loads over its measured speed
//! ([`Snapshot::speeds`]; see [`super::objects`]). In each group (all
//! threads for `joint`; each socket for `split`; for `hybrid`, each socket,
//! and all of them every `period`-th call) the subdomains are dealt,
//! heaviest first, to the thread whose sweep is shortest so far.
//!
//! Departures from GreedyLB, which reassigns everything from scratch:
//! * **Owners are kept when that is as good**: a subdomain stays with its
//!   owner when the owner's sweep with it is within 2% of the best, so
//!   jitter in the loads does not shuffle subdomains between equal threads.
//! * **A dead band**: nothing moves unless the group's longest sweep would
//!   shorten by more than 2%, or while it is already within 2% of even.
//! * **Thresholds**: a thread ends with at least `min(held, low_threshold)`
//!   subdomains (the lightest are taken back for it) and at most
//!   `max(held, high_threshold)`.
//!
//! Before loads are measured every subdomain weighs 1 and a thread's speed
//! is its measured rate; nothing moves until rates are known.

use super::objects::{Weights, greedy};
use super::{Bounds, Move, Named, Policy, Snapshot, Strategy, by_group};

/// Charm++ GreedyLB on measured object loads (the top of this file says how).
#[derive(Debug, Clone)]
pub struct Greedy {
    /// Scope and thresholds.
    pub bounds: Bounds,
}

impl Policy for Greedy {
    fn decide(&self, snap: &Snapshot<'_>) -> Vec<Move> {
        let Some(w) = Weights::of(snap) else {
            return Vec::new();
        };
        by_group(snap, self.bounds.scope, |group, held| {
            greedy(snap, &w, group, held, &self.bounds, &vec![1.0; group.len()])
        })
    }

    fn name(&self) -> Named {
        self.bounds.named(Strategy::Greedy)
    }

    fn reads_loads(&self) -> bool {
        true
    }
}

#[cfg(test)]
pub(super) mod tests;
