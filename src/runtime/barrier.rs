//! A barrier that also decides, once per crossing, whether the run goes on,
//! and that never keeps a thread once the stop flag is set.
//!
//! # Protocol
//!
//! Each thread reads the generation, then increments `arrived`. The last to
//! arrive resets `arrived`, runs the `leader` closure (with every other
//! thread parked at the barrier, so it sees a quiescent state: sync mode uses
//! it to test convergence on exactly iteration k), sets the stop flag if the
//! leader says so, and only then bumps the generation (`Release`). Waiters
//! spin on the generation (`Acquire`) *and* on the stop flag: a stopped run
//! releases them even if some thread never arrives (stalled, or panicked).
//! Because the stop flag is set before the generation moves, every thread of
//! a crossing that the leader ended sees the same answer.

use std::sync::atomic::{AtomicUsize, Ordering};

use crossbeam_utils::CachePadded;

use super::stop::{Idler, StopFlag, StopReason};

#[derive(Debug)]
pub struct StopBarrier {
    threads: usize,
    arrived: CachePadded<AtomicUsize>,
    generation: CachePadded<AtomicUsize>,
}

/// What a thread does after the barrier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Crossing {
    Continue,
    Stop,
}

impl StopBarrier {
    pub fn new(threads: usize) -> Self {
        StopBarrier {
            threads,
            arrived: CachePadded::new(AtomicUsize::new(0)),
            generation: CachePadded::new(AtomicUsize::new(0)),
        }
    }

    pub fn wait(&self, stop: &StopFlag, leader: impl FnOnce() -> Option<StopReason>) -> Crossing {
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.threads {
            self.arrived.store(0, Ordering::Relaxed);
            if let Some(reason) = leader() {
                stop.request(reason);
            }
            self.generation.fetch_add(1, Ordering::Release);
        } else {
            let mut idler = Idler::default();
            while self.generation.load(Ordering::Acquire) == generation {
                if stop.is_set() {
                    return Crossing::Stop;
                }
                idler.idle();
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
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    #[test]
    fn no_thread_passes_before_all_arrive() {
        let threads = 3;
        let b = StopBarrier::new(threads);
        let stop = StopFlag::default();
        let phase = AtomicU64::new(0);
        let rounds = 200;
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| {
                    for r in 0..rounds {
                        // Everyone sees the same phase between two crossings.
                        assert_eq!(phase.load(Ordering::SeqCst), r);
                        b.wait(&stop, || None);
                        b.wait(&stop, || {
                            phase.fetch_add(1, Ordering::SeqCst);
                            None
                        });
                    }
                });
            }
        });
        assert_eq!(phase.load(Ordering::SeqCst), rounds);
    }

    #[test]
    fn the_leaders_decision_reaches_every_thread() {
        let b = StopBarrier::new(2);
        let stop = StopFlag::default();
        let outcomes = std::thread::scope(|s| {
            let h: Vec<_> = (0..2)
                .map(|_| s.spawn(|| b.wait(&stop, || Some(StopReason::Converged))))
                .collect();
            h.into_iter().map(|h| h.join().unwrap()).collect::<Vec<_>>()
        });
        assert_eq!(outcomes, vec![Crossing::Stop, Crossing::Stop]);
        assert_eq!(stop.reason(), Some(StopReason::Converged));
    }

    #[test]
    fn a_stop_releases_waiters_when_a_thread_never_arrives() {
        let b = StopBarrier::new(2);
        let stop = StopFlag::default();
        std::thread::scope(|s| {
            let waiter = s.spawn(|| b.wait(&stop, || None));
            std::thread::sleep(std::time::Duration::from_millis(20));
            stop.request(StopReason::TimeLimit);
            assert_eq!(waiter.join().unwrap(), Crossing::Stop);
        });
    }
}
