//! How far a run has got, as its engine last published it, for a watcher
//! on another thread (the command line's progress line). The engine stores
//! and the watcher loads with relaxed atomics: each field is a snapshot of
//! its own, nothing is derived from two fields agreeing, and a late value
//! only makes the line a moment older.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A shared handle: cloning shares it. The default is one that nobody
/// reads (a few relaxed stores per publish).
///
/// ```
/// use braid::Progress;
/// let p = Progress::default();
/// let seen = p.clone();
/// p.publish(120, 0.5, Some(0.25));
/// let now = seen.now();
/// assert_eq!(now.most_updates, 120);
/// assert_eq!(now.residual_sq, Some(0.25));
/// ```
#[derive(Debug, Clone, Default)]
pub struct Progress(Arc<Shared>);

#[derive(Debug, Default)]
struct Shared {
    most_updates: AtomicU64,
    /// f64 bits.
    clock_s: AtomicU64,
    /// f64 bits; NaN when the engine estimates no residual.
    residual_sq: AtomicU64,
    /// f64 bits: `||r0||`, set once at the start (0 = not yet).
    r0: AtomicU64,
}

/// One look at a [`Progress`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProgressNow {
    /// The most subdomain updates any thread has made.
    pub most_updates: u64,
    /// The engine's clock: wall seconds, or virtual in the simulator.
    pub clock_s: f64,
    /// The squared residual the convergence test estimates, if any.
    pub residual_sq: Option<f64>,
    /// `||r0||`, once the engine has said it.
    pub r0: Option<f64>,
}

impl ProgressNow {
    /// The estimated residual relative to the initial one.
    pub fn relative_residual(&self) -> Option<f64> {
        Some(self.residual_sq?.max(0.0).sqrt() / self.r0?)
    }
}

impl Progress {
    /// The engine's `||r0||`, once, before its first publish.
    pub fn start(&self, r0: f64) {
        self.0.r0.store(r0.to_bits(), Ordering::Relaxed);
    }

    /// What the engine has done by `clock_s` on its clock.
    pub fn publish(&self, most_updates: u64, clock_s: f64, residual_sq: Option<f64>) {
        self.0.most_updates.store(most_updates, Ordering::Relaxed);
        self.0.clock_s.store(clock_s.to_bits(), Ordering::Relaxed);
        let r = residual_sq.unwrap_or(f64::NAN);
        self.0.residual_sq.store(r.to_bits(), Ordering::Relaxed);
    }

    /// The latest of each field.
    pub fn now(&self) -> ProgressNow {
        let f = |a: &AtomicU64| f64::from_bits(a.load(Ordering::Relaxed));
        let r0 = f(&self.0.r0);
        let residual_sq = f(&self.0.residual_sq);
        ProgressNow {
            most_updates: self.0.most_updates.load(Ordering::Relaxed),
            clock_s: f(&self.0.clock_s),
            residual_sq: (!residual_sq.is_nan()).then_some(residual_sq),
            r0: (r0 > 0.0).then_some(r0),
        }
    }
}
