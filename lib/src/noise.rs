//! Noise as braid describes it, for both engines: the form the parasites
//! take (the `noise` key: [`NoiseForm`]), where each goes and how hard it
//! works ([`NoisePlan`], built by `plan`), and what each measured on itself
//! ([`NoiseReport`], in the run report). `parasites` starts them beside a
//! real run; the simulator models them as time stolen from a virtual core;
//! the `braid-noise` crate is the parasite program itself.

use std::path::PathBuf;
use std::sync::Arc;

use braid_noise::trace::Trace;
use serde::{Deserialize, Serialize};

/// How the parasites run (the `noise` key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NoiseForm {
    /// No parasites.
    None,
    /// A child process (`braid __parasite`), as on the paper's ARCHER.
    Process,
    /// A thread inside braid, as on the paper's Cirrus.
    Thread,
    /// A recorded trace replayed on each noisy core (`CORE:FILE`), in a
    /// thread inside braid.
    Trace,
}

/// Where each replayed trace starts (both engines).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NoiseOffsets {
    /// Each core at its own offset into its trace, drawn from `seed`.
    Independent,
    /// Every core at the same offset, drawn from `seed` (LogGOPSim's
    /// `--noise-cosched`): the detours line up when the traces are one.
    Cosched,
}

/// How hard one parasite works.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Work iterations per burst, as given.
    Iterations(u64),
    /// A duty cycle; the parasite calibrates itself on its core.
    Duty(f64),
    /// A recorded trace, replayed in a loop from `offset_ns` into it.
    Trace(Replay),
}

/// A trace to replay, read and checked when the run is planned.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Replay {
    /// The trace's file, as named in `noise_cores`.
    pub file: PathBuf,
    /// Its detours.
    #[serde(skip)]
    pub trace: Arc<Trace>,
    /// Where in the trace the replay starts, ns.
    pub offset_ns: u64,
    /// The share of the core the trace takes over its span.
    pub lost_share: f64,
}

/// One parasite: its core, how long it sleeps between bursts, and how hard
/// it works.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParasitePlan {
    /// The logical CPU it is pinned to.
    pub core: usize,
    /// Its sleep between bursts, microseconds.
    pub sleep_us: u64,
    /// How hard it works.
    pub level: Level,
}

/// The parasites of a run: their form, and each one's core and level.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NoisePlan {
    /// Thread, process or trace.
    #[serde(rename = "mode")]
    pub form: NoiseForm,
    /// One per noisy core.
    pub parasites: Vec<ParasitePlan>,
}

/// What one parasite did, measured on itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParasiteReport {
    /// The logical CPU it ran on.
    pub core: usize,
    /// Its sleep between bursts, microseconds.
    pub sleep_us: u64,
    /// Work iterations per burst (as given, or as calibrated for a duty).
    pub work_iters: u64,
    /// The duty cycle asked for, if one was.
    pub requested_duty: Option<f64>,
    /// The trace replayed, if any (its bursts are its detours played).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<ReplayedTrace>,
    /// Bursts (or detours) begun.
    pub bursts: u64,
    /// Share of the core the parasite took: its work time over its lifetime
    /// (for a replayed trace, the CPU time its detours took).
    pub measured_duty: f64,
    /// Its lifetime, seconds.
    pub elapsed_s: f64,
}

/// Which trace a parasite replayed, from where, and the share of the core
/// it takes as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayedTrace {
    /// The trace's file.
    pub file: PathBuf,
    /// Where the replay started, ns into the trace.
    pub offset_ns: u64,
    /// The share of the core the trace takes over its span.
    pub lost_share: f64,
}

impl ReplayedTrace {
    /// The replay's file, offset and share.
    pub fn of(replay: &Replay) -> ReplayedTrace {
        ReplayedTrace {
            file: replay.file.clone(),
            offset_ns: replay.offset_ns,
            lost_share: replay.lost_share,
        }
    }
}

/// What the parasites of a run did, as they measured it (the report's
/// `noise`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoiseReport {
    /// Thread, process or trace.
    #[serde(rename = "mode")]
    pub form: NoiseForm,
    /// One per noisy core.
    pub parasites: Vec<ParasiteReport>,
}

impl ParasiteReport {
    /// What the parasite `plan` did: `work_iters` per burst (as it
    /// calibrated itself, or as the simulator charges them), `bursts` begun,
    /// the share of its core it took and over how long. Both engines report
    /// a parasite through this one constructor.
    pub fn new(
        plan: &ParasitePlan,
        work_iters: u64,
        bursts: u64,
        measured_duty: f64,
        elapsed_s: f64,
    ) -> ParasiteReport {
        ParasiteReport {
            core: plan.core,
            sleep_us: plan.sleep_us,
            work_iters,
            requested_duty: match plan.level {
                Level::Duty(d) => Some(d),
                Level::Iterations(_) | Level::Trace(_) => None,
            },
            trace: match &plan.level {
                Level::Trace(r) => Some(ReplayedTrace::of(r)),
                _ => None,
            },
            bursts,
            measured_duty,
            elapsed_s,
        }
    }
}
