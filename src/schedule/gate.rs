//! Which subdomain a thread may update: only one it owns (checked when the
//! update begins), never one held by another thread (skipped, not waited
//! for), and in ssync only one whose lag over its neighbours is within the
//! staleness bound.

use crate::problem::Neighbour;

/// How far a subdomain's count `own` is ahead of its furthest-behind
/// neighbour (0 when none is behind).
///
/// ```
/// use braid::problem::Neighbour::{Boundary, Sub};
/// let counts = [7, 4, 9];
/// assert_eq!(braid::schedule::lag(7, &[Sub(1), Sub(2), Boundary], |n| counts[n]), 3);
/// assert_eq!(braid::schedule::lag(7, &[Boundary], |n| counts[n]), 0);
/// ```
pub fn lag(own: u64, neighbours: &[Neighbour], count: impl Fn(usize) -> u64) -> u64 {
    neighbours
        .iter()
        .filter_map(|n| match *n {
            Neighbour::Sub(n) => Some(own.saturating_sub(count(n))),
            Neighbour::Boundary => None,
        })
        .max()
        .unwrap_or(0)
}

/// The admission rule for one update.
///
/// ```
/// use braid::schedule::Gate;
/// let ssync = Gate { staleness: Some(2) };
/// assert!(ssync.admits(0, 0, 2));
/// assert!(!ssync.admits(0, 0, 3)); // too far ahead of a neighbour
/// assert!(!ssync.admits(0, 1, 0)); // moved to thread 1
/// assert!(Gate { staleness: None }.admits(0, 0, 1_000));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gate {
    /// The ssync bound; `None` in sync and async.
    pub staleness: Option<u64>,
}

impl Gate {
    /// Whether thread `me` may update a subdomain now owned by `owner`
    /// whose lag is `lag`.
    pub fn admits(&self, me: usize, owner: usize, lag: u64) -> bool {
        owner == me && self.staleness.is_none_or(|bound| lag <= bound)
    }
}
