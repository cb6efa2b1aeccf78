//! The balancer in the real runtime: who owns what, whose turn it is to
//! balance ([`SharedCalls`]), and the subdomain handoff.
//!
//! # Protocol: the balancer's turn
//!
//! `turn` (`AtomicUsize`) names the thread that may balance; `next_due_ns`
//! (`AtomicU64`) when the next call is due. At the top of each sweep a
//! thread loads `turn` (Relaxed) and, if it is its own and the call is due,
//! takes the `state` mutex, checks again on the schedule core's
//! [`Rotation`] it guards (the atomics are only its published copy), runs
//! the policy on a snapshot of counts and owners ([`Caller`]), applies the
//! moves, and passes the turn on (`store`, Release). Only the holder of the
//! turn ever balances, and the re-check under the mutex makes even a stale
//! reading of `turn` harmless, so calls never overlap or repeat. No thread ever
//! waits for the turn: a thread that does not hold it just sweeps on. A
//! thread that has stopped never passes it on, which only matters once the
//! run is stopping anyway.
//!
//! # Protocol: the handoff
//!
//! **State, per subdomain:** its cells behind a mutex; its `owner`
//! (`AtomicUsize`); its `count` (`AtomicU64`). **Per thread:** its set (a
//! mutex-protected list) and a `dirty` flag (`AtomicBool`).
//!
//! **Moving subdomain `s` from thread A to thread B** (the schedule core's
//! `calls::apply` through [`Handoff`], by the holder of the turn): `owner.store(B, Release)`; remove `s` from
//! A's set; add it to B's (one set lock at a time); `dirty[A]`, `dirty[B]`
//! `store(true, Release)`. The cells' mutex is *not* taken.
//!
//! **An update of `s` by thread T** (worker.rs): `try_lock` the cells (skip
//! the subdomain if another thread holds them: a worker never blocks on a
//! handoff); `owner.load(Acquire)`, skip unless it is T; update; publish the
//! edges and `count.store(c + 1, Release)`; unlock.
//!
//! **Picking up a new set:** at the top of each sweep `dirty[T].load`
//! (Relaxed, the fast path) and, if set, `swap(false, Acquire)` and copy the
//! set under its lock.
//!
//! **Why no update is lost or doubled.** Every update of `s` happens under
//! its cells' mutex and increments its count exactly once, so the count
//! equals the updates applied, whoever did them, and no two updates of `s`
//! overlap. The mutex also orders them: each update starts from the cells
//! the previous one left.
//!
//! **The honest race.** Because `apply` does not take the cells' lock, the
//! old owner may be inside an update of `s` when the owner changes: it
//! completes that update (the owner check came before `set_owner`), and only
//! its next attempt sees the new owner and skips. So "only the owner updates"
//! holds at the moment each update *begins*, and a moved subdomain gets at
//! most one more update from its old owner. The new owner may meanwhile find
//! the cells locked and skip them for a sweep. Neither loses or doubles an
//! update; both are in the loom model below, which also shows that the race
//! does occur.
//!
//! **Why no thread waits forever.** Nothing in the handoff waits: cells are
//! `try_lock`ed in ssync/async (sync never balances and never shares a
//! subdomain), and the set and state mutexes are held only for a copy or a
//! policy call, never across a wait.
//!
//! **Checked** by `an_observer_never_sees_a_subdomain_in_two_threads_sets`
//! (runtime tests: all set locks held at once, so the view is one instant)
//! and by `loom_tests` here.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use crossbeam_utils::CachePadded;
use parking_lot::Mutex;

use crate::engine::{BalancerSettings, LbStats, Measure, Residual};
use crate::schedule::calls::start_interval;
use crate::schedule::{self, Caller, Rotation};
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

    /// Takes `sub` out of thread `t`'s set.
    pub(super) fn remove(&self, t: usize, sub: usize) {
        self.sets[t].lock().retain(|&s| s != sub);
    }

    /// Puts `sub` into thread `t`'s set.
    pub(super) fn add(&self, t: usize, sub: usize) {
        self.sets[t].lock().push(sub);
    }

    /// Tells thread `t` its set changed (it picks it up at its next sweep).
    pub(super) fn changed(&self, t: usize) {
        self.dirty[t].store(true, Ordering::Release);
    }

    /// Copies thread `t`'s set into `set` if it changed since the last look.
    pub(super) fn refresh(&self, t: usize, set: &mut Vec<usize>) {
        // A plain load first: the flag is almost never set, and a swap is a
        // locked read-modify-write on every sweep.
        if self.dirty[t].load(Ordering::Relaxed) && self.dirty[t].swap(false, Ordering::Acquire) {
            set.clone_from(&self.sets[t].lock());
        }
    }

    #[cfg(test)]
    fn apply(&self, subs: &[Subdomain], m: crate::policy::Move) {
        schedule::calls::apply(
            m,
            &mut Handoff {
                assignment: self,
                subs,
                moved: 0,
            },
        );
    }
}

/// The schedule core's view of a running run: counts and owners from the
/// subdomains' atomics, totals from the workers' counters.
pub(super) struct RunView<'a> {
    pub(super) subs: &'a [Subdomain],
    pub(super) thread_updates: &'a [CachePadded<AtomicU64>],
    /// Whether updates compute their local residuals.
    pub(super) residual: Residual,
    /// Each thread's last CPU-time sample, when the run measures loads.
    pub(super) clocks: Option<&'a [CachePadded<CoreClock>]>,
}

/// A thread's CPU time and the wall time when it took it (ns since the
/// run's start), as the thread last sampled them: its speed over an
/// interval is the ratio of their differences. Each worker writes its own,
/// once per balancer interval; the balancer's caller reads them all.
#[derive(Debug, Default)]
pub(super) struct CoreClock {
    cpu_ns: AtomicU64,
    wall_ns: AtomicU64,
}

impl CoreClock {
    /// The calling thread's CPU time now, at `wall_ns` into the run.
    pub(super) fn sample(&self, wall_ns: u64) {
        self.cpu_ns
            .store(braid_noise::thread_cpu_ns(), Ordering::Relaxed);
        self.wall_ns.store(wall_ns, Ordering::Relaxed);
    }

    /// The last sample: (CPU seconds, wall seconds).
    pub(super) fn seconds(&self) -> (f64, f64) {
        let cpu = self.cpu_ns.load(Ordering::Relaxed);
        let wall = self.wall_ns.load(Ordering::Relaxed);
        (cpu as f64 / 1e9, wall as f64 / 1e9)
    }
}

impl schedule::View for RunView<'_> {
    fn subdomains(&self) -> usize {
        self.subs.len()
    }
    fn count(&self, sub: usize) -> u64 {
        self.subs[sub].count()
    }
    fn owner(&self, sub: usize) -> usize {
        self.subs[sub].owner()
    }
    fn threads(&self) -> usize {
        self.thread_updates.len()
    }
    fn thread_updates(&self, t: usize) -> u64 {
        self.thread_updates[t].load(Ordering::Relaxed)
    }
    fn residual_sq(&self, sub: usize) -> Option<f64> {
        (self.residual == Residual::Compute).then(|| self.subs[sub].residual_sq())
    }
    fn busy_s(&self, sub: usize) -> Option<f64> {
        self.clocks.map(|_| self.subs[sub].busy_s())
    }
    fn core_time(&self, t: usize) -> Option<(f64, f64)> {
        Some(self.clocks?[t].seconds())
    }
}

/// A move as the handoff protocol makes it (see the top of this file): the
/// owner with Release, one set lock at a time, the dirty flags with
/// Release; the cells' lock is not taken.
struct Handoff<'a> {
    assignment: &'a Assignment,
    subs: &'a [Subdomain],
    /// Owners changed so far.
    moved: usize,
}

impl schedule::Sets for Handoff<'_> {
    fn set_owner(&mut self, sub: usize, to: usize) {
        self.subs[sub].set_owner(to);
        self.moved += 1;
    }
    fn remove(&mut self, t: usize, sub: usize) {
        self.assignment.remove(t, sub);
    }
    fn add(&mut self, t: usize, sub: usize) {
        self.assignment.add(t, sub);
    }
    fn changed(&mut self, t: usize) {
        self.assignment.changed(t);
    }
}

/// The schedule core's state, behind the call mutex.
#[derive(Debug)]
struct CallState {
    rotation: Rotation,
    caller: Caller,
}

#[derive(Debug)]
pub(super) struct SharedCalls {
    /// Published copies of the rotation's turn and due time (nanoseconds
    /// since the run's start), so that a thread whose turn it is not never
    /// takes the mutex.
    turn: CachePadded<AtomicUsize>,
    next_due_ns: CachePadded<AtomicU64>,
    state: Mutex<CallState>,
    /// Each thread's node: all on one (a process is on one host).
    nodes: Vec<usize>,
}

impl SharedCalls {
    /// `measure`: what calls measure between them.
    pub(super) fn new(balancer: &BalancerSettings, threads: usize, measure: Measure) -> Self {
        let interval = start_interval(balancer.interval);
        SharedCalls {
            turn: CachePadded::new(AtomicUsize::new(0)),
            next_due_ns: CachePadded::new(AtomicU64::new(0)),
            state: Mutex::new(CallState {
                rotation: Rotation::new(threads, interval.as_nanos() as u64),
                caller: Caller::new(balancer, measure),
            }),
            nodes: vec![0; threads],
        }
    }

    /// When the next call is due (ns since the run's start): it changes at
    /// every call, so a worker that sees it change knows an interval ended.
    pub(super) fn due_ns(&self) -> u64 {
        self.next_due_ns.load(Ordering::Relaxed)
    }

    /// Runs the balancer if it is thread `t`'s turn and a call is due at
    /// `now` (nanoseconds since the run's start; read only on the thread
    /// whose turn it is). Returns the subdomains it moved, if it called.
    pub(super) fn maybe_call(
        &self,
        t: usize,
        now: impl FnOnce() -> u64,
        view: &RunView<'_>,
        assignment: &Assignment,
        thread_sockets: &[usize],
    ) -> Option<usize> {
        let turn = self.turn.load(Ordering::Acquire);
        if turn != t {
            return None;
        }
        let now = now();
        if !Rotation::is_due_at(turn, self.next_due_ns.load(Ordering::Relaxed), t, now) {
            return None;
        }
        let began = Instant::now();
        let mut st = self.state.lock();
        // The published copies may be stale; the rotation itself is not.
        if !st.rotation.is_due(t, now) {
            return None;
        }
        let groups = st.caller.groups(thread_sockets, &self.nodes);
        let moves = st.caller.decide(view, groups, now as f64 / 1e9);
        let mut handoff = Handoff {
            assignment,
            subs: view.subs,
            moved: 0,
        };
        st.caller.apply(&moves, thread_sockets, &mut handoff);
        let moved = handoff.moved;
        st.caller.spent(began.elapsed().as_secs_f64());
        if let Some(s) = st.caller.next_interval_s() {
            st.rotation.set_interval((s * 1e9) as u64);
        }
        st.rotation.advance(t, now);
        let (turn, due) = (st.rotation.turn(), st.rotation.due());
        drop(st);
        self.next_due_ns.store(due, Ordering::Relaxed);
        self.turn.store(turn, Ordering::Release);
        Some(moved)
    }

    pub(super) fn stats(&self) -> LbStats {
        self.state.lock().caller.stats()
    }
}

#[cfg(test)]
mod tests;

/// A model check of the handoff: `cargo test --features loom --lib
/// loom`. The worker's side (try_lock, owner check under the
/// lock, update, count published with Release: worker.rs and
/// `Held::finish_update`) and the balancer's `set_owner` are restated
/// here on loom's Mutex and atomics, step for step, because the real cells
/// sit behind parking_lot's mutex, which loom cannot schedule.
#[cfg(all(test, feature = "loom"))]
pub(super) mod loom_tests {
    use std::sync::atomic::AtomicBool as SeenAnywhere;

    use loom::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
    use loom::sync::{Arc, Mutex};

    /// A subdomain (one rank's copy of it, in `migrate`'s model).
    pub(in crate::runtime) struct Sub {
        /// The cells, reduced to how many updates were applied to them.
        pub(in crate::runtime) cells: Mutex<u64>,
        pub(in crate::runtime) count: AtomicU64,
        pub(in crate::runtime) owner: AtomicUsize,
    }

    impl Sub {
        pub(in crate::runtime) fn new(owner: usize) -> Arc<Sub> {
            Arc::new(Sub {
                cells: Mutex::new(0),
                count: AtomicU64::new(0),
                owner: AtomicUsize::new(owner),
            })
        }
    }

    /// One worker step, as in worker.rs: skip a subdomain held by another
    /// thread or owned by another; else update it and publish the count.
    /// Returns (updated, whether the owner changed during the update).
    pub(in crate::runtime) fn step(sub: &Sub, me: usize) -> (bool, bool) {
        let Ok(mut cells) = sub.cells.try_lock() else {
            return (false, false);
        };
        if sub.owner.load(Ordering::Acquire) != me {
            return (false, false);
        }
        *cells += 1;
        let c = sub.count.load(Ordering::Relaxed);
        sub.count.store(c + 1, Ordering::Release);
        (true, sub.owner.load(Ordering::Acquire) != me)
    }

    static STRADDLED: SeenAnywhere = SeenAnywhere::new(false);

    /// Old owner 0 tries two updates and new owner 1 one, while the balancer
    /// hands the subdomain from 0 to 1. In every interleaving: the count
    /// equals the updates applied (none lost or doubled), thread 1 updates
    /// only after the handoff, and thread 0 updates after it at most by
    /// finishing the one update it had begun. That last case, the honest
    /// race, does occur.
    #[test]
    fn loom_a_handed_over_subdomain_loses_and_doubles_no_update() {
        // Every interleaving with up to 3 preemptions (tokio's CI uses 2):
        // unbounded, the model takes ten minutes on two cores.
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(3);
        model.check(|| {
            let sub = Sub::new(0);
            let moved = Arc::new(loom::sync::atomic::AtomicBool::new(false));
            let workers: Vec<_> = (0..2)
                .map(|me| {
                    let (sub, moved) = (sub.clone(), moved.clone());
                    loom::thread::spawn(move || {
                        let mut done = 0;
                        let mut straddled = 0;
                        for _ in 0..2 - me {
                            let moved_before = moved.load(Ordering::Acquire);
                            let (updated, changed) = step(&sub, me);
                            if updated {
                                done += 1;
                                // The new owner only ever updates after the move.
                                assert!(me == 0 || sub.owner.load(Ordering::Acquire) == 1);
                                // The old owner never starts an update after
                                // it has seen the move.
                                assert!(me == 1 || !moved_before);
                                straddled += u32::from(changed);
                            }
                        }
                        (done, straddled)
                    })
                })
                .collect();
            sub.owner.store(1, Ordering::Release); // set_owner
            moved.store(true, Ordering::Release);
            let results: Vec<(u64, u32)> = workers.into_iter().map(|w| w.join().unwrap()).collect();
            let applied = *sub.cells.lock().unwrap();
            assert_eq!(sub.count.load(Ordering::Acquire), applied);
            assert_eq!(results[0].0 + results[1].0, applied);
            assert!(results[0].1 <= 1);
            if results[0].1 > 0 {
                STRADDLED.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        });
        assert!(
            STRADDLED.load(std::sync::atomic::Ordering::Relaxed),
            "the model never showed an old owner finishing an update after the move"
        );
    }
}
