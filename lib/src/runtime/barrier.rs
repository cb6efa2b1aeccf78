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
//! **A waiter sleeps, it does not poll.** A waiter spins for 500 us (a
//! running partner arrives within that, and a parasite's burst ends), then sleeps
//! until the leader, after step 3's `fetch_add`, wakes every sleeper
//! (`Sleep::wake_all`; why no wake-up is lost, and why not poll, at the
//! top of `sleep.rs`). A stop set by anyone but the leader wakes no one;
//! a sleeper sees it within one nap (200 us).
//!
//! **Why no thread waits forever.** A waiter waits only for the last
//! arrival or for the stop flag. A thread that never arrives (stalled in a
//! hook, or panicked) does not hold the others: the monitor sets the flag at
//! the time limit (or the panicking worker sets it), and step 4 watches it.
//!
//! **Checked** by the tests below and, on loom's atomics, by
//! `loom_tests` (two threads, two crossings, every interleaving).

use std::sync::atomic::Ordering;

use crossbeam_utils::CachePadded;

use super::sleep::{Sleep, Waiting};
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
