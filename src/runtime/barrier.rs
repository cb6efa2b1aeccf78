//! A barrier that also decides, once per crossing, whether the run goes on,
//! and that never keeps a thread once the stop flag is set.
//!
//! # Protocol: the barrier
//!
//! **State.** `arrived` (threads at the barrier in this crossing) and
//! `generation` (crossings completed), both `AtomicUsize`; and the shared
//! stop flag.
//!
//! **Operations, per thread and crossing.**
//! 1. `g = generation.load(Acquire)`, *before* arriving: the crossing it
//!    waits for is the one after `g`.
//! 2. `arrived.fetch_add(1, AcqRel)`. The thread that brings it to `threads`
//!    is the leader; all others' arrivals (and every write they made before
//!    them: their updates and published edges) happen-before the leader's
//!    read-modify-write, because the increments form one release sequence.
//! 3. Leader: `arrived.store(0, Relaxed)`; runs the `leader` closure, which
//!    sees the quiescent state of exactly this iteration (sync mode tests
//!    convergence here); `stop.request(reason)` if it says so; then
//!    `generation.fetch_add(1, Release)`.
//! 4. Others: wait until `generation.load(Acquire) != g` *or* the stop
//!    flag is set: spinning first, then sleeping (below).
//! 5. Everyone returns `Stop` if the flag is set, else `Continue`.
//!
//! **Why every thread of a crossing gets the same answer.** The leader sets
//! the flag before it moves the generation (Release), and a waiter that sees
//! the new generation (Acquire) therefore sees the flag.
//!
//! **Why it can be reused.** A waiter leaves only after seeing the new
//! generation, which was released after `arrived` went back to 0; its next
//! `fetch_add` comes later in `arrived`'s modification order than that
//! store, so it counts from 0. And a thread cannot lap the others: the next
//! crossing needs all of them to arrive again.
//!
//! **A waiter sleeps, it does not poll.** A waiter spins for [`SPIN`] (a
//! running partner arrives within that), then sleeps
//! on a condition variable: under its lock it looks at the generation and
//! the flag once more and, if neither moved, sleeps until woken or for
//! [`NAP`]. The leader, after step 3's `fetch_add`, takes the same lock and
//! wakes every sleeper. No wake-up is lost: a waiter's last look and its
//! falling asleep are one step under the lock, and the leader takes the
//! lock after moving the generation, so either the look sees the new
//! generation or the waiter is asleep when the leader wakes it. A stop set
//! by anyone but the leader wakes no one; a sleeper sees it within
//! [`NAP`]. Why sleep: on a busy machine a partner preempted by another
//! process keeps a polling waiter burning its own core's share, which the
//! kernel's scheduler then charges to it, so both waited longer at every
//! crossing; a waiter blocked in the kernel costs nothing and is run as
//! soon as it is woken (measured: docs/speed.md, 2026-11-28).
//!
//! **Why no thread waits forever.** A waiter waits only for the last
//! arrival or for the stop flag. A thread that never arrives (stalled in a
//! hook, or panicked) does not hold the others: the monitor sets the flag at
//! the time limit (or the panicking worker sets it), and step 4 watches it.
//!
//! **Checked** by the tests below and, on loom's atomics, by
//! `loom_tests` (two threads, two crossings, every interleaving).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

use super::stop::StopFlag;
use super::sync::AtomicUsize;
use crate::engine::StopReason;

#[derive(Debug)]
pub(crate) struct StopBarrier {
    threads: usize,
    arrived: CachePadded<AtomicUsize>,
    generation: CachePadded<AtomicUsize>,
    /// Where a waiter that spun in vain sleeps until the leader wakes it.
    sleep: Sleep,
}

/// How long a sleeping waiter sleeps at most before it looks at the stop
/// flag again (the leader wakes it as soon as the crossing is complete).
#[cfg_attr(feature = "loom", allow(dead_code))]
const NAP: Duration = Duration::from_micros(200);

/// A waiter's sleep, blocking in the kernel (a futex, through
/// `parking_lot`) instead of polling: see "A waiter sleeps" above.
#[derive(Debug, Default)]
struct Sleep {
    lock: parking_lot::Mutex<()>,
    woken: parking_lot::Condvar,
    /// Waiters asleep now, and sleepers the leaders have woken (tests).
    #[cfg(test)]
    #[cfg_attr(feature = "loom", allow(dead_code))]
    asleep: AtomicUsize,
    #[cfg(test)]
    wakes: AtomicUsize,
}

impl Sleep {
    /// The leader, after moving the generation: wakes every sleeper.
    /// Taking the lock first orders the move before any sleeper's last
    /// look, which it makes under the lock.
    fn wake_all(&self) {
        drop(self.lock.lock());
        let _woken = self.woken.notify_all();
        #[cfg(test)]
        self.wakes.fetch_add(_woken, Ordering::SeqCst);
    }

    /// Sleeps on `guard` until woken or for [`NAP`].
    #[cfg_attr(feature = "loom", allow(dead_code))]
    fn nap(&self, guard: &mut parking_lot::MutexGuard<'_, ()>) {
        #[cfg(test)]
        self.asleep.fetch_add(1, Ordering::SeqCst);
        self.woken.wait_for(guard, NAP);
        #[cfg(test)]
        self.asleep.fetch_sub(1, Ordering::SeqCst);
    }
}

/// How long a waiter spins before it sleeps: a running partner arrives
/// well within it (a sync iteration's threads differ by microseconds), and
/// a sleep and its wake-up cost tens of microseconds each.
#[cfg_attr(feature = "loom", allow(dead_code))]
const SPIN: Duration = Duration::from_micros(50);

/// One waiter's state in one crossing: spinning first, then sleeping.
#[derive(Default)]
struct Waiting {
    /// When it began to spin, once it has looked at the clock.
    since: Option<Instant>,
    spins: u32,
}

impl Waiting {
    /// Waits a little while `still` holds: spins (no yield, which would
    /// hand the core to whatever else runs there for a time slice) for
    /// [`SPIN`], then sleeps until woken or for [`NAP`].
    #[cfg(not(feature = "loom"))]
    fn wait(&mut self, sleep: &Sleep, still: impl Fn() -> bool) {
        // The clock is read once in 64 spins.
        self.spins = self.spins.wrapping_add(1);
        if !self.spins.is_multiple_of(64) {
            std::hint::spin_loop();
            return;
        }
        let since = *self.since.get_or_insert_with(Instant::now);
        if since.elapsed() < SPIN {
            return;
        }
        let mut guard = sleep.lock.lock();
        if still() {
            sleep.nap(&mut guard);
        }
    }

    /// Under loom, a yield: the model checker's cue to run another thread
    /// (the sleep is `parking_lot`'s, which loom does not model).
    #[cfg(feature = "loom")]
    fn wait(&mut self, _sleep: &Sleep, _still: impl Fn() -> bool) {
        let _ = (self.since, self.spins);
        loom::thread::yield_now();
    }
}

/// What a thread does after the barrier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Crossing {
    Continue,
    Stop,
}

impl StopBarrier {
    pub(crate) fn new(threads: usize) -> Self {
        StopBarrier {
            threads,
            arrived: CachePadded::new(AtomicUsize::new(0)),
            generation: CachePadded::new(AtomicUsize::new(0)),
            sleep: Sleep::default(),
        }
    }

    pub(crate) fn wait(
        &self,
        stop: &StopFlag,
        leader: impl FnOnce() -> Option<StopReason>,
    ) -> Crossing {
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.threads {
            self.arrived.store(0, Ordering::Relaxed);
            if let Some(reason) = leader() {
                stop.request(reason);
            }
            self.generation.fetch_add(1, Ordering::Release);
            self.sleep.wake_all();
        } else {
            let mut waiting = Waiting::default();
            while self.generation.load(Ordering::Acquire) == generation {
                if stop.is_set() {
                    return Crossing::Stop;
                }
                waiting.wait(&self.sleep, || {
                    self.generation.load(Ordering::Acquire) == generation && !stop.is_set()
                });
            }
        }
        if stop.is_set() {
            Crossing::Stop
        } else {
            Crossing::Continue
        }
    }
}

#[cfg(test)]
mod tests;

/// Model checks of the barrier itself (its real code, on loom's atomics):
/// `cargo test --features loom --lib loom`.
#[cfg(all(test, feature = "loom"))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;
    use loom::sync::atomic::AtomicUsize as Work;

    /// Two threads cross twice. The first leader's relaxed write is seen by
    /// both after the crossing (the generation's Release/Acquire carries
    /// it), the barrier is reusable (`arrived` is back to 0 for the second
    /// crossing), and the second leader's stop reaches both.
    #[test]
    fn loom_the_barrier_publishes_the_leaders_work_and_decision_and_is_reusable() {
        loom::model(|| {
            let barrier = Arc::new(StopBarrier::new(2));
            let stop = Arc::new(StopFlag::default());
            let work = Arc::new(Work::new(0));
            let threads: Vec<_> = (0..2)
                .map(|_| {
                    let (b, stop, work) = (barrier.clone(), stop.clone(), work.clone());
                    loom::thread::spawn(move || {
                        let first = b.wait(&stop, || {
                            work.store(1, Ordering::Relaxed);
                            None
                        });
                        assert_eq!(first, Crossing::Continue);
                        assert_eq!(work.load(Ordering::Relaxed), 1);
                        b.wait(&stop, || Some(StopReason::Converged))
                    })
                })
                .collect();
            for t in threads {
                assert_eq!(t.join().unwrap(), Crossing::Stop);
            }
            assert_eq!(stop.reason(), Some(StopReason::Converged));
        });
    }

    /// A thread that never arrives cannot keep the other waiting once the
    /// stop flag is set, whenever it is set.
    #[test]
    fn loom_a_stop_releases_a_waiter_whose_partner_never_comes() {
        loom::model(|| {
            let barrier = Arc::new(StopBarrier::new(2));
            let stop = Arc::new(StopFlag::default());
            let waiter = {
                let (b, stop) = (barrier.clone(), stop.clone());
                loom::thread::spawn(move || b.wait(&stop, || None))
            };
            stop.request(StopReason::TimeLimit);
            assert_eq!(waiter.join().unwrap(), Crossing::Stop);
        });
    }
}
