//! Waiting that gives the core up: a waiter spins for [`SPIN`], then
//! sleeps in the kernel (a futex, through `parking_lot`) until whoever
//! ends its wait wakes it, or for [`NAP`] at most, so that it looks at the
//! stop flag again.
//!
//! Why not poll: on a busy machine a polling waiter keeps its core busy,
//! so the scheduler charges it and runs another program there, while the
//! thread it waits for, preempted by yet another, waits for a time slice;
//! every wait then costs about a slice (beside two CPU hogs, sync took
//! 49 s instead of 0.65 s and ssync(1) 16.7 s: the speed log, 2026-11-28,
//! `git show 333740e:docs/speed.md`).
//! A waiter blocked in the kernel costs nothing, and a wake-up puts it back
//! on its core at once.
//!
//! # Protocol: no wake-up is lost
//!
//! A sleeper takes the lock, counts itself in `asleep` (SeqCst), then
//! looks at its condition once more and, if it must still wait, sleeps on
//! the condition variable, which releases the lock only once it is
//! registered as a sleeper. Whoever ends a wait first makes its change
//! (the barrier's generation, a thread's update count), then:
//!
//! * [`Sleep::wake_all`] takes the lock and wakes every sleeper: a
//!   sleeper's last look and its falling asleep are one step under the
//!   lock, so either the look comes after the change (the lock orders
//!   them) or the sleeper is registered when the waker notifies.
//! * [`Sleep::wake_if_asleep`], for a change made with a SeqCst store,
//!   first reads `asleep` (SeqCst) and wakes only if someone sleeps. In
//!   the single total order of SeqCst operations either the sleeper's
//!   look comes after the waker's store (and sees the change) or the
//!   waker's read of `asleep` comes after the sleeper's increment (and
//!   wakes it, under the lock, as above). A look that misses the change
//!   therefore always meets a waker.
//!
//! The loom models keep a yield in place of the sleep (loom does not model
//! `parking_lot`); the tests next to the barrier and the worker check the
//! sleep itself.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long a sleeper sleeps at most before it looks at the stop flag
/// again (whoever ends its wait wakes it at once).
#[cfg_attr(feature = "loom", allow(dead_code))]
pub(crate) const NAP: Duration = Duration::from_micros(200);

/// How long a waiter spins before it sleeps: longer than what a running
/// partner or neighbour takes (a sync iteration's threads differ by
/// microseconds, an ssync(1) neighbour's next update is often tens of
/// microseconds away) and than a parasite's burst (about 50 us), shorter
/// than a time slice (milliseconds), which is what a sleep is for. With 50
/// us, quiet ssync(1) lost 19% and sync under the 19% parasite 30%
/// (the speed log, 2026-11-28, `git show 333740e:docs/speed.md`).
#[cfg_attr(feature = "loom", allow(dead_code))]
pub(crate) const SPIN: Duration = Duration::from_micros(500);

/// Where waiters sleep, and how many do (see the top of this file).
#[derive(Debug, Default)]
pub(crate) struct Sleep {
    lock: parking_lot::Mutex<()>,
    woken: parking_lot::Condvar,
    /// Waiters asleep now (or about to look once more and sleep).
    pub(crate) asleep: AtomicUsize,
    /// Sleepers the wakers have woken (tests).
    #[cfg(test)]
    pub(crate) wakes: AtomicUsize,
}

impl Sleep {
    /// Wakes every sleeper; call it after the change that ends their wait.
    pub(crate) fn wake_all(&self) {
        drop(self.lock.lock());
        let _woken = self.woken.notify_all();
        #[cfg(test)]
        self.wakes.fetch_add(_woken, Ordering::SeqCst);
    }

    /// [`Sleep::wake_all`] if anyone sleeps; call it after a SeqCst store
    /// of the change (the top of this file says why that is enough).
    pub(crate) fn wake_if_asleep(&self) {
        if self.asleep.load(Ordering::SeqCst) > 0 {
            self.wake_all();
        }
    }

    /// Sleeps until woken or for [`NAP`], unless `still` no longer holds
    /// when looked at under the lock.
    #[cfg_attr(feature = "loom", allow(dead_code))]
    fn nap_while(&self, still: impl Fn() -> bool) {
        let mut guard = self.lock.lock();
        self.asleep.fetch_add(1, Ordering::SeqCst);
        if still() {
            self.woken.wait_for(&mut guard, NAP);
        }
        self.asleep.fetch_sub(1, Ordering::SeqCst);
    }
}

/// One waiter's state in one wait: spinning first, then sleeping.
#[derive(Debug, Default)]
pub(crate) struct Waiting {
    /// When it began to spin, once it has looked at the clock.
    since: Option<Instant>,
    spins: u32,
}

impl Waiting {
    /// Waits a little while `still` holds: spins (no yield, which would
    /// hand the core to whatever else runs there for a time slice) for
    /// [`SPIN`], then sleeps until woken or for [`NAP`]. Callers look at
    /// their condition and the stop flag between calls.
    #[cfg(not(feature = "loom"))]
    pub(crate) fn wait(&mut self, sleep: &Sleep, still: impl Fn() -> bool) {
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
        sleep.nap_while(still);
    }

    /// Under loom, a yield: the model checker's cue to run another thread.
    #[cfg(feature = "loom")]
    pub(crate) fn wait(&mut self, _sleep: &Sleep, _still: impl Fn() -> bool) {
        let _ = (self.since, self.spins);
        loom::thread::yield_now();
    }
}

#[cfg(all(test, not(feature = "loom")))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    /// A waiter for a count to move stops spinning and sleeps, and the
    /// SeqCst store of the move with `wake_if_asleep` wakes it. Each round
    /// waits for the waiter to be asleep, however busy the machine; a
    /// waiter already awake at its nap's end when the count moves makes
    /// another round.
    #[test]
    fn a_waiter_for_a_count_sleeps_until_the_count_moves_and_wakes_it() {
        let sleep = Sleep::default();
        let count = AtomicU64::new(0);
        for round in 0..1000u64 {
            std::thread::scope(|s| {
                let waiter = s.spawn(|| {
                    let mut waiting = Waiting::default();
                    while count.load(Ordering::SeqCst) == round {
                        waiting.wait(&sleep, || count.load(Ordering::SeqCst) == round);
                    }
                });
                let start = Instant::now();
                while sleep.asleep.load(Ordering::SeqCst) == 0 {
                    assert!(start.elapsed() < Duration::from_secs(10), "never asleep");
                    std::thread::sleep(Duration::from_millis(1));
                }
                count.store(round + 1, Ordering::SeqCst);
                sleep.wake_if_asleep();
                waiter.join().unwrap();
            });
            if sleep.wakes.load(Ordering::SeqCst) > 0 {
                return;
            }
        }
        panic!("no store ever found a sleeper to wake");
    }
}
