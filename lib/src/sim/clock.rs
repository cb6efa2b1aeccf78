//! The simulator's clock: integer picoseconds of virtual time, so that a
//! simulation is exactly reproducible (same inputs, same bytes out).
//!
//! The clock holds [`RANGE_PS`] (2^62 ps, about 4.6e6 s or 53 days). Every
//! step and every time the simulator makes is capped there ([`step`],
//! [`after`]); two times below the range add without overflow, so a capped
//! time is the only wrong one, and a simulation that reaches it stops with
//! [`StopReason::ClockRange`](crate::engine::StopReason::ClockRange), which
//! the command line refuses. Every time below the range is exact (to the
//! picosecond the cost model's floating point gives).

use std::time::Duration;

/// Picoseconds per second.
pub(crate) const PS_PER_S: f64 = 1e12;

/// The clock's range: a time at or past it is not exact.
pub(crate) const RANGE_PS: u64 = 1 << 62;

/// The clock's range in seconds, for messages.
pub const RANGE_S: f64 = RANGE_PS as f64 / PS_PER_S;

/// `d` in picoseconds, rounded, capped at the range.
pub(crate) fn ps(d: Duration) -> u64 {
    step(d.as_secs_f64() * PS_PER_S)
}

/// A span of `ps` picoseconds (not negative) as a clock step: rounded, and
/// capped at the range, so that it ends past the range from any start.
#[inline]
pub(crate) fn step(ps: f64) -> u64 {
    if ps < RANGE_PS as f64 {
        ps.round() as u64
    } else {
        RANGE_PS
    }
}

/// `start` plus `step`, capped at the range.
#[inline]
pub(crate) fn after(start: u64, step: u64) -> u64 {
    start.saturating_add(step).min(RANGE_PS)
}

/// Picoseconds in seconds.
pub(crate) fn seconds(ps: u64) -> f64 {
    ps as f64 / PS_PER_S
}

#[cfg(test)]
mod examples {
    //! The documented behaviour of this module's items, as the examples
    //! their docs would show (rustdoc runs doc examples of public items
    //! only).

    use super::*;

    #[test]
    fn a_duration_is_counted_in_picoseconds() {
        assert_eq!(ps(Duration::from_micros(3)), 3_000_000);
    }

    #[test]
    fn steps_and_sums_past_the_range_stop_at_the_range() {
        assert_eq!(step(1e30), RANGE_PS);
        assert_eq!(step(f64::INFINITY), RANGE_PS);
        assert_eq!(step(2.4), 2);
        assert_eq!(after(RANGE_PS - 1, 1), RANGE_PS);
        assert_eq!(after(u64::MAX, u64::MAX), RANGE_PS);
        assert_eq!(after(5, 7), 12);
        assert_eq!(ps(Duration::from_secs(u64::MAX)), RANGE_PS);
    }
}
