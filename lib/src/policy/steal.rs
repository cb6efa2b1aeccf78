//! Work stealing as it can exist in an asynchronous method: the paper's
//! future work ("a comparison with work stealing"), receiver-initiated.
//!
//! Classic work stealing (Blumofe and Leiserson) lets an idle worker take a
//! task from a random victim's queue. In an asynchronous iteration no thread
//! ever runs out of work, so "idle" becomes "fastest", and the task taken is
//! the one the run most needs done. At each call, in each group of threads
//! (all of them for `joint`; each socket for `split`; for `hybrid`, each
//! socket, and all of them on every `period`-th call):
//!
//! 1. the **receiver** is the thread with the highest measured rate over
//!    the window (`Snapshot::history`: its updates per second in each of
//!    the last intervals) that holds fewer than `high_threshold`
//!    subdomains;
//! 2. the **victim** is the least updated subdomain of the group that the
//!    receiver does not own;
//! 3. it moves when its owner holds more than `low_threshold` subdomains and
//!    is *slower*: the receiver, with one more subdomain, would still update
//!    each of its subdomains faster than the owner does now,
//!    `r_to / (n_to + 1) > r_from / n_from`, over the window and beyond its
//!    jitter ([`super::improves_beyond`]). Between equally fast threads that
//!    never holds, so a quiet run does not churn.
//!
//! At most one move per group per call; ties go to the lower thread or
//! subdomain id. Before the window is `lb_window` long ([`super::Reading`]) nothing
//! moves.
//! Departures from classic stealing: the victim is chosen by update count,
//! not at random, and the thief steals on a schedule (the balancer's turn),
//! not when it runs dry.

use std::sync::Arc;

use super::homes::shift_in;
use super::jitter::{improves_beyond_by, window_rate};
use super::{Bounds, Move, Named, Owned, Policy, Snapshot, Entry, Settings, Strategy, by_group};

/// Receiver-initiated stealing by measured rate (the top of this file says how).
#[derive(Debug, Clone)]
pub struct Steal {
    /// Scope and thresholds.
    pub bounds: Bounds,
}

impl Policy for Steal {
    fn decide(&self, snap: &Snapshot<'_>) -> Vec<Move> {
        by_group(snap, self.bounds.scope, |group, held| {
            self.steal_in(snap, group, held).into_iter().collect()
        })
    }

    fn name(&self) -> Named {
        self.bounds.named(Strategy::STEAL)
    }
}

impl Steal {
    /// The one move in `group`, if any.
    fn steal_in(&self, snap: &Snapshot<'_>, group: &[usize], held: &[usize]) -> Option<Move> {
        let rate = |t: usize| window_rate(snap, t);
        let to = group
            .iter()
            .copied()
            .filter(|&t| held[t] < self.bounds.high)
            .fold(None, |best: Option<usize>, t| match best {
                Some(b) if rate(b) >= rate(t) => Some(b),
                _ => Some(t),
            })?;
        // No slower member that may give: no pass over the subdomains
        // (nor, unless moves are priced, one to list the receiver's).
        let owned = snap.homes.prices().then(|| Owned::of(snap));
        let may_give = |t: usize| {
            let shift = shift_in(snap, owned.as_ref(), held, (to, t));
            t != to
                && held[t] > self.bounds.low
                && improves_beyond_by(snap.history, snap.reading.window, to, t, shift)
        };
        if !group.iter().any(|&t| may_give(t)) {
            return None;
        }
        let mut member = vec![false; held.len()];
        group.iter().for_each(|&t| member[t] = true);
        let sub = (0..snap.counts.len())
            .filter(|&s| snap.owners[s] != to && member[snap.owners[s]])
            .min_by_key(|&s| (snap.counts[s], s))?;
        let from = snap.owners[sub];
        may_give(from).then_some(Move { sub, from, to })
    }
}


impl Strategy {
    /// Receiver-initiated stealing by measured rate ([`Steal`]).
    pub const STEAL: Strategy = Strategy(&ENTRY);
}

/// Its line in the registry (`policy/mod.rs`).
pub(super) const ENTRY: Entry = Entry {
    name: "steal",
    build: |s: &Settings<'_>| Ok(Arc::new(Steal { bounds: s.bounds })),
};

#[cfg(test)]
mod tests;
