//! One simulated core's speed over virtual time, as a real run measured it
//! ([`MeasuredSpeeds`](crate::engine::MeasuredSpeeds)): a factor on its
//! nominal speed in each interval, the last holding on. The simulator makes
//! the core of a thread work at that thread's measured rate, whoever owns
//! the work: the measured conditions belong to the core.

use super::clock::{PS_PER_S, step};

/// One core's speed over virtual time: a factor on its nominal speed in
/// each interval, the last holding on.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Steps {
    /// End of each interval, ps.
    pub until_ps: Vec<u64>,
    pub factor: Vec<f64>,
}

/// Slowest factor a replayed core gets: an interval with no updates at all
/// (a thread stalled whole) makes its core this slow, not stopped.
pub(crate) const MIN_FACTOR: f64 = 1e-3;

impl Steps {
    /// The factors that make an update of `unit_ps` nominal picoseconds
    /// take `1 / rate` seconds in each interval.
    pub(crate) fn new(ends_s: &[f64], rates: &[f64], unit_ps: f64) -> Steps {
        Steps {
            until_ps: ends_s.iter().map(|&t| step(t * PS_PER_S)).collect(),
            factor: rates
                .iter()
                .map(|&r| (r * unit_ps / PS_PER_S).max(MIN_FACTOR))
                .collect(),
        }
    }

    /// The factor at time `t` (ps).
    #[cfg(test)]
    pub(crate) fn at(&self, t: u64) -> f64 {
        let i = self.until_ps.partition_point(|&u| u <= t);
        self.factor[i.min(self.factor.len() - 1)]
    }

    /// When work of `work_ps` (at factor 1) that starts at `start` ends,
    /// each interval's factor applying to the part done in it. Taking the
    /// factor at the start for the whole update instead made an update that
    /// began in an interval where the thread was off its core (factor
    /// [`MIN_FACTOR`]) last a thousand times too long: replays of runs on a
    /// busy machine came out up to 4x too slow.
    pub(crate) fn finish(&self, start: u64, work_ps: f64) -> u64 {
        let mut i = self.until_ps.partition_point(|&u| u <= start);
        let (mut t, mut left) = (start as f64, work_ps);
        while i < self.until_ps.len() {
            let (end, f) = (self.until_ps[i] as f64, self.factor[i]);
            let room = (end - t) * f;
            if left <= room {
                return step(t + left / f);
            }
            left -= room;
            t = end;
            i += 1;
        }
        let f = self.factor[self.factor.len() - 1];
        step(t + left / f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_hold_each_rate_over_its_interval_and_the_last_after() {
        // An update of 1 us nominal: 1e6 updates/s is full speed.
        let s = Steps::new(&[1.0, 2.0], &[1e6, 5e5], 1e6);
        assert_eq!(s.at(0), 1.0);
        assert_eq!(s.at(999_999_999_999), 1.0);
        assert_eq!(s.at(1_000_000_000_000), 0.5);
        assert_eq!(s.at(9_000_000_000_000), 0.5);
        assert_eq!(Steps::new(&[1.0], &[0.0], 1e6).at(0), MIN_FACTOR);
    }
}

#[cfg(test)]
mod examples {
    //! The documented behaviour of this module's items, as the examples
    //! their docs would show (rustdoc runs doc examples of public items
    //! only).

    #[test]
    fn work_is_integrated_interval_by_interval() {
        use crate::sim::steps::Steps;
        // Stalled until 1000 ps, then full speed.
        let s = Steps {
            until_ps: vec![1000, 10_000],
            factor: vec![1e-3, 1.0],
        };
        assert_eq!(s.finish(0, 100.0), 1099); // 1 ps of work while stalled
        assert_eq!(s.finish(2000, 100.0), 2100);
        assert_eq!(s.finish(20_000, 100.0), 20_100); // the last factor holds
    }
}
