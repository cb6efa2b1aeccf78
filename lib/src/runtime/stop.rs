//! The stop flag every wait loop watches, and the one way to idle.
//!
//! # Protocol: the stop
//!
//! **State.** One `AtomicU8`: 0 = running, else the code of the first
//! [`StopReason`]. It goes 0 -> reason once per epoch (the monitor resets it
//! between epochs, when no worker is running).
//!
//! **Operations.**
//! * `request`: `compare_exchange(0 -> reason, AcqRel)`. Only the first
//!   request of an epoch succeeds, so the report says why the run *first*
//!   had to stop; later ones change nothing.
//! * `is_set`/`reason`: `load(Acquire)`. Whatever the requester wrote before
//!   its request (the barrier leader's verdict, a worker's last count) is
//!   visible to a thread that sees the flag.
//!
//! **Who requests.** A worker at its budget or on a panic (caught in
//! `worker::run`), the barrier leader (budget, convergence), the monitor
//! (time limit, residual estimate, SIGINT/SIGTERM).
//!
//! **Why no thread waits forever.** Every loop that can wait (the barrier,
//! the staleness gate's idling, the stall hook's [`StopFlag::sleep`], the
//! slow hook's spin) re-reads the flag on each turn, and the monitor sets it
//! at the time limit or on a signal whatever the workers do. The monitor
//! itself waits only for `finished == threads`, which every worker reaches:
//! the increment sits after `catch_unwind`, so a panicking worker counts too.
//! A stop becomes visible to a spinning waiter within one `Idler` step
//! (at most 50 us of sleep).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::sync::AtomicU8;

use crossbeam_utils::Backoff;

use crate::engine::StopReason;

const RUNNING: u8 = 0;

/// The flag stores a reason as its index in [`StopReason::ALL`] plus one.
fn code(reason: StopReason) -> u8 {
    reason as u8 + 1
}

fn from_code(code: u8) -> Option<StopReason> {
    StopReason::ALL.get(code.checked_sub(1)? as usize).copied()
}

#[derive(Debug)]
pub(crate) struct StopFlag(AtomicU8);

impl Default for StopFlag {
    fn default() -> Self {
        StopFlag(AtomicU8::new(RUNNING))
    }
}

impl StopFlag {
    pub(crate) fn request(&self, reason: StopReason) {
        let _ = self
            .0
            .compare_exchange(RUNNING, code(reason), Ordering::AcqRel, Ordering::Acquire);
    }

    pub(crate) fn is_set(&self) -> bool {
        self.0.load(Ordering::Acquire) != RUNNING
    }

    pub(crate) fn reason(&self) -> Option<StopReason> {
        from_code(self.0.load(Ordering::Acquire))
    }

    /// Clears the flag for the next epoch of a run.
    pub(crate) fn reset(&self) {
        self.0.store(RUNNING, Ordering::Release);
    }

    /// Sleeps up to `d`, returning early once the flag is set.
    #[cfg(test)]
    pub(crate) fn sleep(&self, d: Duration) {
        self.sleep_while(d, || true);
    }

    /// Sleeps up to `d` while `keep` holds, returning early once the flag
    /// is set.
    pub(crate) fn sleep_while(&self, d: Duration, keep: impl Fn() -> bool) {
        let end = Instant::now() + d;
        while !self.is_set() && keep() {
            let now = Instant::now();
            if now >= end {
                return;
            }
            std::thread::sleep((end - now).min(Duration::from_millis(1)));
        }
    }
}

/// How long a waiter keeps the core before it starts sleeping. A sync
/// iteration on a 300x300 domain takes ~30 us, so a waiter that slept at
/// once would double it; one that never slept would burn a noisy core.
#[cfg_attr(feature = "loom", allow(dead_code))]
const SPIN_BEFORE_SLEEP: Duration = Duration::from_millis(2);

/// Waiting, one step at a time: spin, then yield (so that oversubscribed
/// threads let the one they wait for run), and only after
/// [`SPIN_BEFORE_SLEEP`] sleep briefly. Callers re-check their condition and
/// the stop flag between steps; `reset` when the wait is over.
#[derive(Debug, Default)]
pub(crate) struct Idler {
    backoff: Backoff,
    since: Option<Instant>,
}

impl Idler {
    /// Under loom, a yield: the model checker's cue to run another thread.
    #[cfg(feature = "loom")]
    pub(crate) fn idle(&mut self) {
        loom::thread::yield_now();
    }

    #[cfg(not(feature = "loom"))]
    pub(crate) fn idle(&mut self) {
        if !self.backoff.is_completed() {
            self.backoff.snooze();
            return;
        }
        let since = *self.since.get_or_insert_with(Instant::now);
        if since.elapsed() < SPIN_BEFORE_SLEEP {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(50));
        }
    }

    pub(crate) fn reset(&mut self) {
        self.backoff.reset();
        self.since = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_reason_wins_until_reset() {
        let f = StopFlag::default();
        assert_eq!(f.reason(), None);
        f.request(StopReason::TimeLimit);
        f.request(StopReason::Converged);
        assert_eq!(f.reason(), Some(StopReason::TimeLimit));
        f.reset();
        assert!(!f.is_set());
    }

    #[test]
    fn every_reason_survives_the_flag() {
        // ALL lists every variant at its own index, so codes round-trip.
        for (i, r) in StopReason::ALL.into_iter().enumerate() {
            assert_eq!(r as usize, i);
            let f = StopFlag::default();
            f.request(r);
            assert_eq!(f.reason(), Some(r));
        }
    }

    #[test]
    fn sleep_returns_once_stopped() {
        let f = StopFlag::default();
        f.request(StopReason::MaxIterations);
        let t = Instant::now();
        f.sleep(Duration::from_secs(3600));
        assert!(t.elapsed() < Duration::from_secs(3600));
    }
}
