//! The simulator's clock: integer picoseconds of virtual time, so that a
//! simulation is exactly reproducible (same inputs, same bytes out).

use std::time::Duration;

/// Picoseconds per second.
pub(crate) const PS_PER_S: f64 = 1e12;

/// `d` in picoseconds, rounded.
pub(crate) fn ps(d: Duration) -> u64 {
    (d.as_secs_f64() * PS_PER_S).round() as u64
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

    #[test]
    fn a_duration_is_counted_in_picoseconds() {
        use std::time::Duration;
        assert_eq!(crate::sim::clock::ps(Duration::from_micros(3)), 3_000_000);
    }
}
