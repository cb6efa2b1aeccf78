//! Where a run's parasites go and how hard each works: the noise plan,
//! with every trace it replays read and checked before the run.

use std::path::Path;
use std::sync::{Arc, Mutex, Weak};

use braid_noise::trace::Trace;

use super::PlanError;
use crate::config::{AutoOr, Config, NoiseCore};
use crate::limits::MAX_TRACE_BYTES;
use crate::noise::{Level, NoiseForm, NoiseOffsets, NoisePlan, ParasitePlan, Replay};
use crate::problem::Problem;
use crate::rng::SplitMix64;
use crate::topology::{Placement, Topology};

/// Where the parasites go. `auto` is the paper's placement: the core of the
/// thread whose domain touches the source. Any core of the machine may be
/// named, whether a worker uses it or not.
pub(super) fn plan(
    cfg: &Config,
    problem: &Problem,
    placement: &Placement,
    machine: &Topology,
) -> Result<Option<NoisePlan>, PlanError> {
    if cfg.noise == NoiseForm::None {
        return Ok(None);
    }
    // Offsets into the traces: one draw per core, or one for all (cosched).
    let mut rng = SplitMix64(cfg.seed ^ 0x6E6F_6973_6520_6F66); // "noise of"
    let cosched = rng.next();
    let mut level = |c: &NoiseCore| -> Result<Level, PlanError> {
        Ok(match (&c.trace, c.duty) {
            (Some(file), _) => {
                let trace = load_trace(file)?;
                let draw = match cfg.noise_offsets {
                    NoiseOffsets::Independent => rng.next(),
                    NoiseOffsets::Cosched => cosched,
                };
                Level::Trace(Replay {
                    file: file.clone(),
                    offset_ns: draw % trace.span_ns.max(1),
                    lost_share: trace.lost_share(),
                    trace,
                })
            }
            (None, Some(d)) => Level::Duty(d),
            (None, None) => Level::Iterations(cfg.noise_work_iters),
        })
    };
    let available = machine.cores();
    let mut parasites: Vec<ParasitePlan> = Vec::new();
    for c in &cfg.noise_cores {
        let core = match c.core {
            AutoOr::Auto => placement.cores[problem.source_domain()],
            AutoOr::Value(core) => core,
        };
        if !available.contains(&core) || parasites.iter().any(|p| p.core == core) {
            return Err(PlanError::NoiseCore {
                core,
                available: crate::topology::format_list(&available),
            });
        }
        parasites.push(ParasitePlan {
            core,
            sleep_us: cfg.noise_sleep_us,
            level: level(c)?,
        });
    }
    Ok(Some(NoisePlan {
        form: cfg.noise,
        parasites,
    }))
}

/// Reads and checks a trace to replay: the selfish format, with times
/// bounded so that both engines can count in them (picoseconds in the
/// simulator), read a line at a time.
///
/// A trace already held (by this plan, on another core, or by a plan still
/// alive: a suite's check of its samples holds them all) is shared, not
/// read again, while its file is unchanged (same length and modification
/// time): one copy in memory, and a suite of 300 samples replaying one
/// trace reads it once.
fn load_trace(file: &Path) -> Result<Arc<Trace>, PlanError> {
    let bad = |message: String| PlanError::NoiseTrace {
        file: file.to_path_buf(),
        message,
    };
    let meta = std::fs::metadata(file).map_err(|e| bad(e.to_string()))?;
    let stamp = (file.to_path_buf(), meta.len(), meta.modified().ok());
    let mut held = HELD
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    held.retain(|(_, t)| t.strong_count() > 0);
    if let Some(trace) = held
        .iter()
        .find(|(s, _)| *s == stamp)
        .and_then(|(_, t)| t.upgrade())
    {
        return Ok(trace);
    }
    let lines =
        braid_noise::files::open_buffered(file, MAX_TRACE_BYTES).map_err(|e| bad(e.to_string()))?;
    let trace = Arc::new(Trace::read(lines).map_err(|e| bad(e.to_string()))?);
    held.push((stamp, Arc::downgrade(&trace)));
    Ok(trace)
}

/// A file's identity as [`load_trace`] knows it: path, length, modified.
type Stamp = (std::path::PathBuf, u64, Option<std::time::SystemTime>);

/// The traces read and still held somewhere, by their file's stamp.
static HELD: Mutex<Vec<(Stamp, Weak<Trace>)>> = Mutex::new(Vec::new());
