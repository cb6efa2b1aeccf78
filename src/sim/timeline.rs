//! One simulated core's time: how long a piece of work takes on it, given
//! its speed and the parasite noise that steals part of it.
//!
//! Time is in integer picoseconds, so that a simulation is exactly
//! reproducible. The noise owns the core for stretches of time and a worker
//! on that core progresses only outside them (the paper's model of a noisy
//! core). Two kinds:
//!
//! * [`Interference::Rhythm`]: a parasite with `sleep` and `work` phases
//!   repeats with period `sleep + work`, starting with a sleep at time 0,
//!   and owns the core during each work phase;
//! * [`Interference::Trace`]: a recorded trace's detours own the core, the
//!   trace looping over its span, started `offset` into it.

use std::sync::Arc;

use braid_noise::trace::Trace;

use super::steps::Steps;

/// What takes a simulated core away from its worker: the simulator's model
/// of a parasite (the noise of `noise_cores`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Interference {
    None,
    /// Parasite phases in picoseconds.
    Rhythm {
        sleep: u64,
        work: u64,
    },
    Trace(Arc<Detours>),
}

/// A trace's detours in picoseconds, ready to answer "when is the core
/// free": starts and ends ascending (detours do not overlap), the lost time
/// before each detour, the span it loops over and where it starts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Detours {
    starts: Vec<u64>,
    ends: Vec<u64>,
    /// `lost_before[i]`: the lost time of detours `0..i`.
    lost_before: Vec<u64>,
    span: u64,
    offset: u64,
}

impl Detours {
    /// `trace` (in ns) started `offset_ns` into it. The trace must leave
    /// some of its span free ([`Trace::parse`] checks) and span at most
    /// about 200 days (the plan checks).
    pub(crate) fn new(trace: &Trace, offset_ns: u64) -> Detours {
        let ps = |ns: u64| ns.saturating_mul(1000);
        let span = ps(trace.span_ns).max(1);
        let starts: Vec<u64> = trace.detours.iter().map(|d| ps(d.start_ns)).collect();
        let ends: Vec<u64> = trace
            .detours
            .iter()
            .map(|d| ps(d.start_ns.saturating_add(d.duration_ns)).min(span))
            .collect();
        let mut lost_before = Vec::with_capacity(starts.len() + 1);
        let mut lost = 0u64;
        for (s, e) in starts.iter().zip(&ends) {
            lost_before.push(lost);
            lost += e - s;
        }
        lost_before.push(lost);
        Detours {
            starts,
            ends,
            lost_before,
            span,
            offset: ps(offset_ns) % span,
        }
    }

    fn lost_per_lap(&self) -> u64 {
        *self.lost_before.last().unwrap_or(&0)
    }

    /// Detours begun before trace time `x` (laps included).
    fn begun_before(&self, x: u64) -> u64 {
        let n = self.starts.len() as u64;
        (x / self.span) * n + self.starts.partition_point(|&s| s < x % self.span) as u64
    }

    /// Time lost to detours in trace time `[0, x)`.
    fn lost_before(&self, x: u64) -> u64 {
        let pos = x % self.span;
        let i = self.ends.partition_point(|&e| e <= pos);
        let partial = match self.starts.get(i) {
            Some(&s) if s < pos => pos - s,
            _ => 0,
        };
        (x / self.span) * self.lost_per_lap() + self.lost_before[i] + partial
    }

    fn finish(&self, start: u64, work_ps: u64) -> u64 {
        let (mut t, mut left) = (start, work_ps);
        loop {
            let pos = (t + self.offset) % self.span;
            let i = self.ends.partition_point(|&e| e <= pos);
            let free = match self.starts.get(i) {
                Some(&s) if s <= pos => {
                    t += self.ends[i] - pos; // inside a detour: wait it out
                    continue;
                }
                Some(&s) => s - pos,
                None => self.span - pos,
            };
            if left <= free {
                return t + left;
            }
            left -= free;
            t += free;
        }
    }
}

/// When work of `work_ps` starting at `start` ends on a core whose parasite
/// sleeps `sleep` then works `stolen` (> 0), from time 0.
fn periodic_finish(sleep: u64, stolen: u64, start: u64, work_ps: u64) -> u64 {
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

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Timeline {
    /// Relative speed: work takes `1 / speed` of its nominal time.
    pub speed: f64,
    pub interference: Interference,
    /// Speeds a run measured on this core, over time, on top of `speed`
    /// (`--replay-speeds`).
    pub steps: Option<Arc<Steps>>,
}

impl Timeline {
    pub(crate) const QUIET: Timeline = Timeline {
        speed: 1.0,
        interference: Interference::None,
        steps: None,
    };

    /// Nominal work in picoseconds that starts at `at`, scaled by this
    /// core's speed then (an update is short next to a measured interval).
    /// Tests compare it with [`Self::run`], which integrates instead.
    #[cfg(test)]
    pub(crate) fn scaled(&self, nominal_ps: f64, at: u64) -> u64 {
        let speed = match &self.steps {
            None => self.speed,
            Some(s) => self.speed * s.at(at),
        };
        (nominal_ps / speed).round().max(1.0) as u64
    }

    /// When an update of `nominal_ps` that starts at `start` ends: at this
    /// core's speed, through its replayed speeds if it has them (interval by
    /// interval), stretched by its noise.
    #[inline]
    pub(crate) fn run(&self, start: u64, nominal_ps: f64) -> u64 {
        let work = match &self.steps {
            None => (nominal_ps / self.speed).round().max(1.0) as u64,
            Some(s) => (s.finish(start, nominal_ps / self.speed) - start).max(1),
        };
        self.finish(start, work)
    }

    /// When work of `work_ps` (already scaled) that starts at `start` ends.
    #[inline]
    pub(crate) fn finish(&self, start: u64, work_ps: u64) -> u64 {
        match &self.interference {
            &Interference::Rhythm { sleep, work } if work > 0 => {
                periodic_finish(sleep, work, start, work_ps)
            }
            Interference::Trace(d) => d.finish(start, work_ps),
            _ => start + work_ps,
        }
    }

    /// Share of the core the noise takes, in the long run.
    pub(crate) fn stolen_share(&self) -> f64 {
        match &self.interference {
            &Interference::Rhythm { sleep, work } if sleep + work > 0 => {
                work as f64 / (sleep + work) as f64
            }
            Interference::Trace(d) => d.lost_per_lap() as f64 / d.span as f64,
            _ => 0.0,
        }
    }

    /// Share of the core the noise took in `[0, t)`: for a trace, what this
    /// run's stretch of it held; for a rhythm, its long-run share.
    pub(crate) fn stolen_share_by(&self, t: u64) -> f64 {
        match &self.interference {
            Interference::Trace(d) if t > 0 => {
                (d.lost_before(d.offset + t) - d.lost_before(d.offset)) as f64 / t as f64
            }
            _ => self.stolen_share(),
        }
    }

    /// Work phases (or detours) the noise has begun by time `t`.
    pub(crate) fn bursts_by(&self, t: u64) -> u64 {
        match &self.interference {
            &Interference::Rhythm { sleep, work } if sleep + work > 0 => {
                let period = sleep + work;
                t / period + u64::from(t % period > sleep)
            }
            Interference::Trace(d) => d.begun_before(d.offset + t) - d.begun_before(d.offset),
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests;
