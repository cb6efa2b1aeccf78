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

use super::clock::{RANGE_PS, after, step};
use super::jitter::Wander;
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
/// free": the trace itself (starts ascending, detours do not overlap), the
/// lost time before each detour, the span it loops over and where it
/// starts. Each detour's start, end and the free time before it are worked
/// out from those two, so a trace of millions of detours costs the
/// simulator 8 bytes a detour beside the trace the plan holds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Detours {
    trace: Arc<Trace>,
    /// `lost_before[i]`: the lost time of detours `0..i` (ps), `n + 1` of
    /// them.
    lost_before: Vec<u64>,
    span: u64,
    offset: u64,
}

fn ps(ns: u64) -> u64 {
    ns.saturating_mul(1000)
}

/// The first of `0..n` for which `below` is false, `below` being true up to
/// some point and false after it (a binary search over worked-out values).
fn first_not(n: usize, below: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if below(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

impl Detours {
    /// `trace` (in ns) started `offset_ns` into it. The trace must leave
    /// some of its span free and span at most 1e15 ns ([`Trace::parse`]
    /// checks both), so that every time here fits the clock.
    ///
    /// Each detour takes `switch_ns` more (`sim_noise_switch_ns`: what a
    /// worker loses to the switches and its cold cache around a detour), up
    /// to the next detour's start, unless that left none of the span free.
    pub(crate) fn new(trace: &Arc<Trace>, offset_ns: u64, switch_ns: u64) -> Detours {
        let span = ps(trace.span_ns).max(1);
        let d = &trace.detours;
        let lost_with = |switch: u64| -> Vec<u64> {
            let mut lost_before = Vec::with_capacity(d.len() + 1);
            let mut lost = 0u64;
            for (i, x) in d.iter().enumerate() {
                lost_before.push(lost);
                let next = d.get(i + 1).map_or(span, |n| ps(n.start_ns));
                let end = ps(x.start_ns.saturating_add(x.duration_ns)).min(span);
                let end = end.max(end.saturating_add(ps(switch)).min(next));
                lost += end - ps(x.start_ns);
            }
            lost_before.push(lost);
            lost_before
        };
        let mut lost_before = lost_with(switch_ns);
        if switch_ns > 0 && lost_before[d.len()] >= span {
            lost_before = lost_with(0);
        }
        Detours {
            trace: trace.clone(),
            lost_before,
            span,
            offset: ps(offset_ns) % span,
        }
    }

    fn len(&self) -> usize {
        self.trace.detours.len()
    }

    /// Detour `i`'s start (ps, trace time).
    fn start(&self, i: usize) -> u64 {
        ps(self.trace.detours[i].start_ns)
    }

    /// Detour `i`'s end, its switch included.
    fn end(&self, i: usize) -> u64 {
        self.start(i) + (self.lost_before[i + 1] - self.lost_before[i])
    }

    /// The first detour that ends after `pos` (or `len()`).
    fn ending_after(&self, pos: u64) -> usize {
        first_not(self.len(), |i| self.end(i) <= pos)
    }

    fn lost_per_lap(&self) -> u64 {
        *self.lost_before.last().unwrap_or(&0)
    }

    /// Detours begun before trace time `x` (laps included).
    fn begun_before(&self, x: u64) -> u64 {
        let n = self.len() as u64;
        let pos = x % self.span;
        (x / self.span).saturating_mul(n) + first_not(self.len(), |i| self.start(i) < pos) as u64
    }

    /// Time lost to detours in trace time `[0, x)`.
    fn lost_before(&self, x: u64) -> u64 {
        let pos = x % self.span;
        let i = self.ending_after(pos);
        let partial = match (i < self.len()).then(|| self.start(i)) {
            Some(s) if s < pos => pos - s,
            _ => 0,
        };
        (x / self.span) * self.lost_per_lap() + self.lost_before[i] + partial
    }

    /// When work of `work_ps` that starts at `start` ends, capped at the
    /// clock's range. Worked out from the lost time, not detour by detour:
    /// a long update on a trace of short detours costs a few searches, not
    /// a step per detour (which made one update loop for hours).
    fn finish(&self, start: u64, work_ps: u64) -> u64 {
        // The common case first: the work fits in the free stretch it
        // starts in (start < 2^62 and offset < span <= 1e18: no overflow).
        let pos = (start + self.offset) % self.span;
        let i = self.ending_after(pos);
        let free = match (i < self.len()).then(|| self.start(i)) {
            Some(s) if s > pos => s - pos,
            Some(_) => 0,
            None => self.span - pos,
        };
        if work_ps <= free {
            return after(start, work_ps);
        }
        let x0 = u128::from(start) + u128::from(self.offset);
        let target = self.free_before(x0) + u128::from(work_ps);
        let y = self.first_with_free(target);
        cap(y - u128::from(self.offset))
    }

    /// Free (undetoured) time in trace time `[0, x)`.
    fn free_before(&self, x: u128) -> u128 {
        let span = u128::from(self.span);
        let pos = (x % span) as u64;
        let i = self.ending_after(pos);
        let inside = match (i < self.len()).then(|| self.start(i)) {
            Some(s) if s < pos => pos - s,
            _ => 0,
        };
        (x / span) * u128::from(self.span - self.lost_per_lap())
            + u128::from(pos - self.lost_before[i] - inside)
    }

    /// The earliest trace time by which `target` (> 0) of free time has
    /// passed: the end of that much free time, before any detour after it.
    fn first_with_free(&self, target: u128) -> u128 {
        let per_lap = u128::from(self.span - self.lost_per_lap());
        let (mut lap, mut left) = (target / per_lap, target % per_lap);
        if left == 0 {
            lap -= 1; // it ends at the end of the lap before's last free stretch
            left = per_lap;
        }
        // The free time before detour i starts is starts[i] - lost_before[i];
        // the first detour that starts after `left` of it closes the stretch.
        let i = first_not(self.len(), |i| {
            u128::from(self.start(i) - self.lost_before[i]) < left
        });
        lap * u128::from(self.span) + left + u128::from(self.lost_before[i])
    }
}

/// A time in u128 as a clock time, capped at the clock's range.
fn cap(t: u128) -> u64 {
    u64::try_from(t).map_or(RANGE_PS, |t| t.min(RANGE_PS))
}

/// When work of `work_ps` starting at `start` ends on a core whose parasite
/// sleeps `sleep` then works `stolen` (> 0), from time 0; capped at the
/// clock's range (where it ends on a core that never sleeps: the plan
/// refuses one). In closed form: a step per period would loop for hours on
/// a long update.
fn periodic_finish(sleep: u64, stolen: u64, start: u64, work_ps: u64) -> u64 {
    if sleep == 0 {
        return RANGE_PS;
    }
    let (sleep, period) = (u128::from(sleep), u128::from(sleep) + u128::from(stolen));
    let mut t = u128::from(start);
    let mut pos = t % period;
    if pos >= sleep {
        t += period - pos; // the parasite holds the core until then
        pos = 0;
    }
    let free = sleep - pos;
    let left = u128::from(work_ps);
    if left <= free {
        return cap(t + left);
    }
    // The rest of this sleep, then whole periods, then what is left (1 to
    // `sleep`) in the sleep of the next.
    let left = left - free;
    t += free + u128::from(stolen);
    let whole = (left - 1) / sleep;
    cap(t + whole * period + (left - whole * sleep))
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Timeline {
    /// Relative speed: work takes `1 / speed` of its nominal time.
    pub speed: f64,
    pub interference: Interference,
    /// Speeds a run measured on this core, over time, on top of `speed`
    /// (`--replay-speeds`).
    pub steps: Option<Arc<Steps>>,
    /// How its speed wanders while quiet (`sim_jitter`), when no replayed
    /// speeds say it (boxed: a timeline is part of every virtual thread,
    /// and at 4096 threads 40 bytes more each cost 4% of a simulation).
    pub jitter: Option<Box<Wander>>,
}

impl Timeline {
    pub(crate) const QUIET: Timeline = Timeline {
        speed: 1.0,
        interference: Interference::None,
        steps: None,
        jitter: None,
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
    /// core's speed, through its replayed speeds or its jitter if it has
    /// them (interval by interval), stretched by its noise.
    #[inline]
    pub(crate) fn run(&self, start: u64, nominal_ps: f64) -> u64 {
        let work = match &self.steps {
            // At full speed the division is exact and only its latency is
            // paid: skipped (the same bits).
            None if self.jitter.is_none() && self.speed == 1.0 => step(nominal_ps).max(1),
            None if self.jitter.is_none() => step(nominal_ps / self.speed).max(1),
            None => self.jittered(start, nominal_ps),
            Some(s) => s
                .finish(start, nominal_ps / self.speed)
                .saturating_sub(start)
                .max(1),
        };
        self.finish(start, work)
    }

    /// The time `nominal_ps` of work takes from `start` on this core's
    /// jitter (kept out of line: the common core has none).
    #[inline(never)]
    fn jittered(&self, start: u64, nominal_ps: f64) -> u64 {
        self.jitter.as_ref().map_or(1, |w| {
            w.finish(start, nominal_ps / self.speed)
                .saturating_sub(start)
                .max(1)
        })
    }

    /// When work of `work_ps` (already scaled) that starts at `start` ends.
    #[inline]
    pub(crate) fn finish(&self, start: u64, work_ps: u64) -> u64 {
        match &self.interference {
            &Interference::Rhythm { sleep, work } if work > 0 => {
                periodic_finish(sleep, work, start, work_ps)
            }
            Interference::Trace(d) => d.finish(start, work_ps),
            _ => after(start, work_ps),
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
