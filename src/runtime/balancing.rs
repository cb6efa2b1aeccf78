//! Progressive balancing in the real runtime: who owns what, whose turn it
//! is to balance, and what the balancer did.
//!
//! # Protocol
//!
//! * **Turn.** Threads take turns, round robin. At the top of each sweep a
//!   thread checks (one relaxed load) whether it holds the turn; if so and
//!   `lb_interval` has passed since the last call, it runs the policy on a
//!   snapshot of counts and owners, applies the moves, and passes the turn
//!   on. Only the holder of the turn ever balances, so calls never overlap.
//! * **Handoff.** Applying a move sets the subdomain's owner (`Release`),
//!   then updates both threads' sets and marks them dirty. A thread picks up
//!   its new set at the start of its next sweep. Until then the old owner may
//!   still have the subdomain in its list: every thread checks the owner
//!   *under the subdomain's lock* before updating, so a subdomain is updated
//!   by exactly one thread at a time and only by its owner, and its counter
//!   equals the updates done: none lost, none doubled. A thread never blocks
//!   on another's subdomain: in async mode it `try_lock`s and skips.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;
use parking_lot::Mutex;
use serde::Serialize;

use crate::policy::{Policy, Snapshot};
use crate::subdomain::Subdomain;

/// Each thread's current subdomains, and whether they changed.
#[derive(Debug)]
pub(super) struct Assignment {
    sets: Vec<Mutex<Vec<usize>>>,
    dirty: Vec<CachePadded<AtomicBool>>,
}

impl Assignment {
    pub(super) fn new(subs: &[Subdomain], threads: usize) -> Self {
        let mut sets = vec![Vec::new(); threads];
        for s in subs {
            sets[s.owner()].push(s.geom.id);
        }
        Assignment {
            sets: sets.into_iter().map(Mutex::new).collect(),
            dirty: (0..threads)
                .map(|_| CachePadded::new(AtomicBool::new(true)))
                .collect(),
        }
    }

    /// Thread `t`'s set as it is now (a worker's starting point: the dirty
    /// flag says nothing to a thread that has no copy yet).
    pub(super) fn current(&self, t: usize) -> Vec<usize> {
        self.dirty[t].store(false, Ordering::Release);
        self.sets[t].lock().clone()
    }

    /// Every thread's set at one instant, dirty flags untouched (for an
    /// observer). All locks are held together, taken in thread order; a
    /// move holds one at a time, so this cannot deadlock with it.
    #[cfg(test)]
    pub(super) fn all_at_once(&self) -> Vec<Vec<usize>> {
        let guards: Vec<_> = self.sets.iter().map(|m| m.lock()).collect();
        guards.iter().map(|g| g.to_vec()).collect()
    }

    /// Copies thread `t`'s set into `set` if it changed since the last look.
    pub(super) fn refresh(&self, t: usize, set: &mut Vec<usize>) {
        // A plain load first: the flag is almost never set, and a swap is a
        // locked read-modify-write on every sweep.
        if self.dirty[t].load(Ordering::Relaxed) && self.dirty[t].swap(false, Ordering::Acquire) {
            set.clone_from(&self.sets[t].lock());
        }
    }

    fn apply(&self, subs: &[Subdomain], sub: usize, from: usize, to: usize) {
        subs[sub].set_owner(to);
        self.sets[from].lock().retain(|&s| s != sub);
        self.sets[to].lock().push(sub);
        self.dirty[from].store(true, Ordering::Release);
        self.dirty[to].store(true, Ordering::Release);
    }
}

/// What the balancer did over a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LbStats {
    pub calls: u64,
    pub moves: u64,
    pub cross_socket_moves: u64,
    /// Wall time spent inside balancer calls, all threads together.
    pub time_s: f64,
}

#[derive(Debug, Default)]
struct CallState {
    stats: LbStats,
    counts: Vec<u64>,
    owners: Vec<usize>,
}

#[derive(Debug)]
pub(super) struct Balancer {
    policy: Arc<dyn Policy>,
    interval: Duration,
    turn: CachePadded<AtomicUsize>,
    /// Nanoseconds since the run's start at which the next call is due.
    next_due_ns: CachePadded<AtomicU64>,
    state: Mutex<CallState>,
}

impl Balancer {
    pub(super) fn new(policy: Arc<dyn Policy>, interval: Duration) -> Self {
        Balancer {
            policy,
            interval,
            turn: CachePadded::new(AtomicUsize::new(0)),
            next_due_ns: CachePadded::new(AtomicU64::new(0)),
            state: Mutex::new(CallState::default()),
        }
    }

    /// Runs the balancer if it is thread `t`'s turn and a call is due.
    pub(super) fn maybe_call(
        &self,
        t: usize,
        start: Instant,
        subs: &[Subdomain],
        assignment: &Assignment,
        thread_sockets: &[usize],
    ) {
        if self.turn.load(Ordering::Acquire) != t {
            return;
        }
        let now = start.elapsed();
        if (now.as_nanos() as u64) < self.next_due_ns.load(Ordering::Relaxed) {
            return;
        }
        let began = Instant::now();
        let mut st = self.state.lock();
        let CallState {
            stats,
            counts,
            owners,
        } = &mut *st;
        stats.calls += 1;
        counts.clear();
        counts.extend(subs.iter().map(Subdomain::count));
        owners.clear();
        owners.extend(subs.iter().map(Subdomain::owner));
        let moves = self.policy.decide(&Snapshot {
            counts,
            owners,
            thread_sockets,
            call: stats.calls,
        });
        for m in moves {
            assignment.apply(subs, m.sub, m.from, m.to);
            stats.moves += 1;
            if thread_sockets[m.from] != thread_sockets[m.to] {
                stats.cross_socket_moves += 1;
            }
        }
        stats.time_s += began.elapsed().as_secs_f64();
        drop(st);
        self.next_due_ns
            .store((now + self.interval).as_nanos() as u64, Ordering::Relaxed);
        self.turn
            .store((t + 1) % thread_sockets.len(), Ordering::Release);
    }

    pub(super) fn stats(&self) -> LbStats {
        self.state.lock().stats.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::Problem;
    use crate::subdomain;

    #[test]
    fn a_worker_that_starts_again_gets_its_whole_set() {
        // Regression: a second epoch's workers once started with an empty
        // set, because the first epoch had already cleared the dirty flags.
        let p = Problem::new(8, 2, 4).unwrap();
        let subs = subdomain::build(&p);
        let a = Assignment::new(&subs, 2);
        assert_eq!(a.current(1), vec![4, 5, 6, 7]);
        assert_eq!(a.current(1), vec![4, 5, 6, 7]);
    }

    #[test]
    fn a_move_changes_the_owner_and_both_sets_and_marks_them_dirty() {
        let p = Problem::new(8, 2, 4).unwrap();
        let subs = subdomain::build(&p);
        let a = Assignment::new(&subs, 2);
        let (mut s0, mut s1) = (a.current(0), a.current(1));
        a.apply(&subs, 2, 0, 1);
        assert_eq!(subs[2].owner(), 1);
        a.refresh(0, &mut s0);
        a.refresh(1, &mut s1);
        assert_eq!(s0, vec![0, 1, 3]);
        assert_eq!(s1, vec![4, 5, 6, 7, 2]);
        // Nothing changed since: refresh leaves the copy alone.
        s1.clear();
        a.refresh(1, &mut s1);
        assert!(s1.is_empty());
    }
}
