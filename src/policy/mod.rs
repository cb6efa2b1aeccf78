//! Balancing decisions as pure functions: a [`Snapshot`] of the run in, a
//! list of [`Move`]s out. No clocks, threads or atomics here, so the real
//! runtime and the virtual-time simulator call the very same code, and every
//! decision can be tested on hand-made snapshots.
//!
//! A strategy implements [`Policy`]. The paper's Algorithm 1 in its joint,
//! split and hybrid forms is [`Progressive`]; other strategies (greedy,
//! refine, anticipatory...) plug in behind the same trait. A strategy's
//! fields are its settings: `plan` builds it from the configuration, which
//! this module never sees.

mod progressive;
mod steal;

pub use progressive::{Progressive, Scope};
pub use steal::Steal;

/// What a balancer sees: one consistent-enough view of the run.
#[derive(Debug, Clone, Copy)]
pub struct Snapshot<'a> {
    /// Update count of every subdomain.
    pub counts: &'a [u64],
    /// Owning thread of every subdomain.
    pub owners: &'a [usize],
    /// Socket index of every thread.
    pub thread_sockets: &'a [usize],
    /// Subdomain updates each thread made since the previous call (since
    /// the start, at the first): its measured speed over the last interval.
    /// Empty when unknown.
    pub progress: &'a [u64],
    /// Each thread's update rate over the same interval: `progress` per
    /// second of the engine's clock (wall or virtual). Empty when unknown
    /// (no time has passed yet).
    pub rates: &'a [f64],
    /// Each subdomain's squared local residual as its last update computed
    /// it. Empty when the run computes none (no residual target; or a
    /// simulation that only counts).
    pub residuals: &'a [f64],
    /// Seconds since the previous call (since the start, at the first).
    pub since_last_s: f64,
    /// 1-based number of this balancer call.
    pub call: u64,
}

impl<'a> Snapshot<'a> {
    /// The first call's view of counts and owners alone, nothing measured
    /// yet (tests and benchmarks build on it).
    ///
    /// ```
    /// use braid::policy::Snapshot;
    /// let s = Snapshot::of(&[3, 1], &[0, 1], &[0, 0]);
    /// assert_eq!((s.threads(), s.sockets(), s.call), (2, 1, 1));
    /// assert!(s.progress.is_empty() && s.rates.is_empty());
    /// ```
    pub fn of(counts: &'a [u64], owners: &'a [usize], thread_sockets: &'a [usize]) -> Self {
        Snapshot {
            counts,
            owners,
            thread_sockets,
            progress: &[],
            rates: &[],
            residuals: &[],
            since_last_s: 0.0,
            call: 1,
        }
    }
}

impl Snapshot<'_> {
    pub fn threads(&self) -> usize {
        self.thread_sockets.len()
    }

    pub fn sockets(&self) -> usize {
        self.thread_sockets.iter().max().map_or(0, |&s| s + 1)
    }
}

/// Subdomain `sub` goes from thread `from` to thread `to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Move {
    pub sub: usize,
    pub from: usize,
    pub to: usize,
}

/// A balancing strategy.
pub trait Policy: Send + Sync + std::fmt::Debug {
    /// The moves to make, in order; a pure function of the snapshot.
    fn decide(&self, snapshot: &Snapshot<'_>) -> Vec<Move>;
}

/// What one call saw: progress, rates, residuals, seconds since the last.
#[cfg(test)]
pub(crate) type Seen = (Vec<u64>, Vec<f64>, Vec<f64>, f64);

/// A policy that moves nothing and keeps what each call saw (tests of what
/// the engines measure).
#[cfg(test)]
#[derive(Debug, Default)]
pub(crate) struct Recorder {
    pub(crate) seen: std::sync::Mutex<Vec<Seen>>,
}

#[cfg(test)]
impl Policy for Recorder {
    fn decide(&self, s: &Snapshot<'_>) -> Vec<Move> {
        let seen = (
            s.progress.to_vec(),
            s.rates.to_vec(),
            s.residuals.to_vec(),
            s.since_last_s,
        );
        self.seen.lock().unwrap().push(seen);
        Vec::new()
    }
}

/// `lb_min_gap = auto`: how far apart (in updates) the two subdomains of a
/// pair must be before Algorithm 1 moves anything. Measured: see the top of
/// `progressive.rs`.
pub const DEFAULT_MIN_GAP: u64 = 2;
