//! Each thread's virtual core, as the settings describe it: its speed
//! (`sim_speed`, the `slow` hook, `sim_jitter`), the parasite on it as
//! time stolen from it, and the speeds a real run measured, when replayed.

use std::sync::Arc;

use super::clock::step;
use super::jitter::Wander;
use super::steps::Steps;
use super::timeline::{Detours, Interference, Timeline};
use crate::engine::{MeasuredSpeeds, Settings, SimSettings};
use crate::noise::{Level, NoisePlan};
use crate::topology::Placement;

/// Each thread's virtual core: its speed (`sim_speed`, the `slow` hook)
/// and the noise on it: its parasite's rhythm as (sleep, work)
/// picoseconds, or its trace.
pub(super) fn timelines(
    placement: &Placement,
    settings: &Settings,
    sim: &SimSettings,
    noise: Option<&NoisePlan>,
) -> Vec<Timeline> {
    let interference = |core: usize| -> Interference {
        let Some(parasite) = noise.and_then(|n| n.parasites.iter().find(|q| q.core == core)) else {
            return Interference::None;
        };
        let sleep = parasite.sleep_us as f64 * 1e6;
        let work = match &parasite.level {
            Level::Iterations(iters) => *iters as f64 * sim.costs.noise_iter_ns * 1e3,
            Level::Duty(d) => d / (1.0 - d) * sleep,
            Level::Trace(r) => {
                let switch = sim.costs.noise_switch_ns.round() as u64;
                return Interference::Trace(Arc::new(Detours::new(&r.trace, r.offset_ns, switch)));
            }
        };
        // A worker loses the switches and its cold cache on top of the
        // parasite's work (0 adds exactly 0).
        let switch = if work > 0.0 {
            sim.costs.noise_switch_ns * 1e3
        } else {
            0.0
        };
        Interference::Rhythm {
            sleep: step(sleep),
            work: step(work + switch),
        }
    };
    let timeline = |t: usize| {
        let core = placement.cores[t];
        let mut speed = sim.speeds[t];
        if let Some(slow) = settings.slow.filter(|s| s.thread == t) {
            speed /= 1.0 + slow.factor;
        }
        Timeline {
            speed,
            interference: interference(core),
            steps: None,
            jitter: sim
                .jitter
                .map(|(j, seed)| Box::new(Wander::new(j, seed, core))),
        }
    };
    (0..placement.threads()).map(timeline).collect()
}

/// Gives each core the speeds a run measured for its thread: a factor that
/// makes an update of the mean subdomain, `unit_ps` nominal picoseconds,
/// take what the run's did.
pub(super) fn replay(timelines: &mut [Timeline], measured: &MeasuredSpeeds, unit_ps: f64) {
    for (tl, rates) in timelines.iter_mut().zip(&measured.rates) {
        tl.steps = Some(Arc::new(Steps::new(&measured.ends_s, rates, unit_ps)));
    }
}
