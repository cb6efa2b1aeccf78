//! Which subdomain a thread may update: only one it owns (checked when the
//! update begins), never one held by another thread (skipped, not waited
//! for), and in ssync only one whose lag over its neighbours is within the
//! staleness bound.

use crate::problem::Neighbour;

/// How far a subdomain's count `own` is ahead of its furthest-behind
/// neighbour (0 when none is behind).
pub(crate) fn lag(own: u64, neighbours: &[Neighbour], count: impl Fn(usize) -> u64) -> u64 {
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Gate {
    /// The ssync bound; `None` in sync and async.
    pub staleness: Option<u64>,
}

impl Gate {
    /// Whether thread `me` may update a subdomain now owned by `owner`
    /// whose lag is `lag`.
    pub(crate) fn admits(&self, me: usize, owner: usize, lag: u64) -> bool {
        owner == me && self.staleness.is_none_or(|bound| lag <= bound)
    }
}

#[cfg(test)]
mod examples {
    //! The documented behaviour of this module's items, as the examples
    //! their docs would show (rustdoc runs doc examples of public items
    //! only).

    #[test]
    fn the_lag_is_the_largest_over_any_neighbour() {
        use crate::problem::Neighbour::{Boundary, Sub};
        let counts = [7, 4, 9];
        assert_eq!(
            crate::schedule::lag(7, &[Sub(1), Sub(2), Boundary], |n| counts[n]),
            3
        );
        assert_eq!(crate::schedule::lag(7, &[Boundary], |n| counts[n]), 0);
    }

    #[test]
    fn the_gate_admits_owners_within_the_staleness() {
        use crate::schedule::Gate;
        let ssync = Gate { staleness: Some(2) };
        assert!(ssync.admits(0, 0, 2));
        assert!(!ssync.admits(0, 0, 3)); // too far ahead of a neighbour
        assert!(!ssync.admits(0, 1, 0)); // moved to thread 1
        assert!(Gate { staleness: None }.admits(0, 0, 1_000));
    }
}
