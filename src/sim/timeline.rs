//! One simulated core's time: how long a piece of work takes on it, given
//! its speed and the parasite noise that steals part of it.
//!
//! Time is in integer picoseconds, so that a simulation is exactly
//! reproducible. A parasite with `sleep` and `work` phases repeats with
//! period `sleep + work`, starting with a sleep at time 0, and owns the core
//! during each work phase; a worker on that core progresses only during the
//! sleep phases (the paper's model of a noisy core).

/// Picoseconds per second.
pub const PS: f64 = 1e12;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timeline {
    /// Relative speed: work takes `1 / speed` of its nominal time.
    pub speed: f64,
    /// Parasite phases in picoseconds: `(sleep, work)`.
    pub noise: Option<(u64, u64)>,
}

impl Timeline {
    pub const QUIET: Timeline = Timeline {
        speed: 1.0,
        noise: None,
    };

    /// Nominal work in picoseconds, scaled by this core's speed.
    pub fn scaled(&self, nominal_ps: f64) -> u64 {
        (nominal_ps / self.speed).round().max(1.0) as u64
    }

    /// When work of `work_ps` (already scaled) that starts at `start` ends.
    pub fn finish(&self, start: u64, work_ps: u64) -> u64 {
        let Some((sleep, stolen)) = self.noise else {
            return start + work_ps;
        };
        if stolen == 0 {
            return start + work_ps;
        }
        let period = sleep + stolen;
        let (mut t, mut left) = (start, work_ps);
        loop {
            let pos = t % period;
            if pos >= sleep {
                t += period - pos; // the parasite holds the core until then
                continue;
            }
            let free = sleep - pos;
            if left <= free {
                return t + left;
            }
            left -= free;
            t += free;
        }
    }

    /// Share of the core the parasite takes.
    pub fn stolen_share(&self) -> f64 {
        match self.noise {
            Some((sleep, work)) if sleep + work > 0 => work as f64 / (sleep + work) as f64,
            _ => 0.0,
        }
    }

    /// Work phases the parasite has begun by time `t`.
    pub fn bursts_by(&self, t: u64) -> u64 {
        match self.noise {
            Some((sleep, work)) if sleep + work > 0 => {
                let period = sleep + work;
                t / period + u64::from(t % period > sleep)
            }
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quiet_core_takes_the_work_as_is() {
        assert_eq!(Timeline::QUIET.finish(5, 10), 15);
    }

    #[test]
    fn speed_scales_work() {
        let fast = Timeline {
            speed: 2.0,
            noise: None,
        };
        assert_eq!(fast.scaled(1000.0), 500);
    }

    #[test]
    fn work_skips_the_parasites_bursts() {
        // Sleep 80, work 20: free during [0, 80), [100, 180), ...
        let t = Timeline {
            speed: 1.0,
            noise: Some((80, 20)),
        };
        assert_eq!(t.finish(0, 50), 50);
        assert_eq!(t.finish(70, 20), 110); // 10 before the burst, 10 after
        assert_eq!(t.finish(85, 10), 110); // starts inside a burst
        assert_eq!(t.finish(0, 240), 280); // three whole sleeps: [0,80) [100,180) [200,280)
        assert!((t.stolen_share() - 0.2).abs() < 1e-12);
        assert_eq!(t.bursts_by(0), 0);
        assert_eq!(t.bursts_by(90), 1);
        assert_eq!(t.bursts_by(250), 2);
    }

    #[test]
    fn over_a_long_stretch_a_noisy_core_loses_its_share() {
        let t = Timeline {
            speed: 1.0,
            noise: Some((200_000_000, 46_000_000)),
        };
        let mut now = 0;
        for _ in 0..10_000 {
            now = t.finish(now, 6_750_000);
        }
        let ideal = 10_000.0 * 6_750_000.0;
        let loss = 1.0 - ideal / now as f64;
        assert!((loss - t.stolen_share()).abs() < 0.01, "{loss}");
    }
}
