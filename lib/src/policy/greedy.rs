//! Charm++'s GreedyLB (charm-runtime-adaptive-lb.txt) on measured object
//! loads and thread speeds.
//!
//! GreedyLB takes the objects heaviest first and gives each to the least
//! loaded processor, relying on the principle of persistence: what an
//! object cost in the last interval it costs in the next. Here an object is
//! a subdomain, its load its measured cost per update at full speed
//! ([`Snapshot::loads`]: the time it takes, and load is what a workload
//! changes, so that is the measure GreedyLB's placement needs), and a
//! thread's load the time it takes to sweep its set once, the sum of its
//! subdomains' loads over its measured speed ([`Snapshot::speeds`]: noise
//! makes a thread slow, not its objects heavy; see [`super::objects`]). In
//! each group (all threads for `joint`; each socket for `split`; for
//! `hybrid`, each socket, and all of them every `period`-th call) the
//! subdomains are placed, heaviest first, on the thread whose sweep is then
//! shortest.
//!
//! Departures from GreedyLB, which reassigns everything from scratch:
//! * **The fewest moves**: subdomains of about one load (within 2%) are
//!   interchangeable, so each thread keeps as many of its own as the
//!   placement gives it and only the rest move, the least updated first, to
//!   the threads with the shortest sweeps; a move the placement does not
//!   need is not made. Dealt from scratch, 144 equal subdomains on 36
//!   threads moved half the grid at every call.
//! * **Polished by RefineLB**, and RefineLB from the current assignment is
//!   the other candidate: the one with the shorter longest sweep is made.
//!   Both are RefineLB's fixed points, so at steady loads the next call
//!   finds nothing better and nothing trades back.
//! * **A dead band**: nothing moves unless the group's longest sweep would
//!   shorten by more than 2%, or while it is already within 2% of even.
//! * **Thresholds**: a thread ends with at least `min(held, low_threshold)`
//!   subdomains (its own are given back first) and at most
//!   `max(held, high_threshold)`.
//!
//! Before loads are measured every subdomain weighs 1 and a thread's speed
//! is its measured rate; nothing moves until rates are known. Balancing
//! the longest sweep is not what an asynchronous method needs under noise
//! alone: at 19% noise on one of 36 threads with 4 subdomains each, no
//! whole move shortens the longest sweep (4 / 0.81 against 5), so GreedyLB
//! moves nothing where Algorithm 1, balancing update counts, gains a
//! little (docs/workloads.md).

use std::sync::Arc;

use super::objects::{Weights, greedy};
use super::{Bounds, Move, Named, Policy, Snapshot, Entry, Settings, Strategy, by_group};

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
        self.bounds.named(Strategy::GREEDY)
    }

    fn reads_loads(&self) -> bool {
        true
    }
}

#[cfg(test)]
pub(super) mod tests;


impl Strategy {
    /// Charm++ GreedyLB's idea on measured rates ([`Greedy`]).
    pub const GREEDY: Strategy = Strategy(&ENTRY);
}

/// Its line in the registry (`policy/mod.rs`).
pub(super) const ENTRY: Entry = Entry {
    name: "greedy",
    build: |s: &Settings<'_>| Ok(Arc::new(Greedy { bounds: s.bounds })),
};
