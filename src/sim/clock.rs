//! The simulator's clock: integer picoseconds of virtual time, so that a
//! simulation is exactly reproducible (same inputs, same bytes out).

use std::time::Duration;

/// Picoseconds per second.
pub const PS_PER_S: f64 = 1e12;

/// `d` in picoseconds, rounded.
///
/// ```
/// use std::time::Duration;
/// assert_eq!(braid::sim::clock::ps(Duration::from_micros(3)), 3_000_000);
/// ```
pub fn ps(d: Duration) -> u64 {
    (d.as_secs_f64() * PS_PER_S).round() as u64
}

/// Picoseconds in seconds.
pub fn seconds(ps: u64) -> f64 {
    ps as f64 / PS_PER_S
}
