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

pub use progressive::{Progressive, Scope};

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
    /// 1-based number of this balancer call.
    pub call: u64,
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

/// `lb_min_gap = auto`: how far apart (in updates) the two subdomains of a
/// pair must be before Algorithm 1 moves anything. Measured: see the top of
/// `progressive.rs`.
pub const DEFAULT_MIN_GAP: u64 = 2;
