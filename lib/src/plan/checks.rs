//! Every check a plan makes beyond one key's bounds, in one place: keys
//! that do not go together, the machine, and what each engine (the
//! simulator, MPI ranks) or output needs. Single values are bounded where
//! they are parsed (`config/keys.rs`); the command line checks only the
//! shape of its own arguments. Nothing else checks a configuration.

use super::{MAX_TOTAL_SUBDOMAINS, Plan, PlanError};
use crate::config::{AutoOr, Config};
use crate::engine::{Numbers, SimSettings};
use crate::limits::MAX_WORK_FACTOR;
use crate::noise::NoiseForm;
use crate::variant::{BalancerKind, Interval, Mode, Strategy};

fn invalid(key: &'static str, message: impl Into<String>) -> Result<(), PlanError> {
    Err(PlanError::Invalid {
        key,
        message: message.into(),
    })
}

/// Keys that are each within bounds but do not go together (no hardware
/// knowledge needed).
pub(super) fn cross_keys(cfg: &Config) -> Result<(), PlanError> {
    scheme(cfg)?;
    noise(cfg)?;
    thresholds(cfg)?;
    hooks(cfg)
}

/// The balancer and the staleness fit the mode; a strategy has a scope.
fn scheme(cfg: &Config) -> Result<(), PlanError> {
    if cfg.mode == Mode::Ssync && cfg.balancer != BalancerKind::None {
        return invalid(
            "balancer",
            "balancing needs mode = async, or mode = sync in the simulator (mode is ssync)",
        );
    }
    if cfg.balancer == BalancerKind::None && cfg.lb_strategy.kind != Strategy::PROGRESSIVE {
        return invalid(
            "lb_strategy",
            "a strategy needs a balancer scope: set balancer = joint|split|hybrid, or use a \
             label such as async(4)+steal(0.001)",
        );
    }
    if cfg.balancer == BalancerKind::Auto && cfg.lb_strategy.kind != Strategy::PROGRESSIVE {
        return invalid(
            "lb_strategy",
            "balancer = auto chooses among lb_candidates; name the strategies there \
             (e.g. lb_candidates = steal, greedy-split) and leave lb_strategy out",
        );
    }
    if cfg.balancer == BalancerKind::Learned && cfg.lb_strategy.kind != Strategy::PROGRESSIVE {
        return invalid(
            "lb_strategy",
            "balancer = learned chooses among its model's strategies; leave lb_strategy out",
        );
    }
    if cfg.lb_interval == Interval::Degradation
        && cfg.balancer != BalancerKind::None
        && cfg.mode != Mode::Sync
    {
        return invalid(
            "lb_interval",
            "degradation is ULBA's trigger, counted in iterations of a bulk-synchronous run: \
             use it with sync(n)+BALANCER(degradation) in braid sim, or auto here",
        );
    }
    if cfg.mode == Mode::Sync && cfg.staleness != 0 {
        return invalid(
            "staleness",
            "only ssync uses staleness; set it to 0 or use mode = ssync",
        );
    }
    Ok(())
}

/// A trace for every core of `noise = trace`; a rhythm that does something.
fn noise(cfg: &Config) -> Result<(), PlanError> {
    let untraced = cfg.noise_cores.iter().find(|c| c.trace.is_none());
    if let (NoiseForm::Trace, Some(c)) = (cfg.noise, untraced) {
        return invalid(
            "noise_cores",
            format!(
                "noise = trace replays a trace on each core: write core {} as CORE:FILE, \
                 e.g. auto:noise/traces/vm-parasite19-core0.trace",
                c.core
            ),
        );
    }
    let quiet = Config::default().noise_cores;
    if cfg.noise == NoiseForm::None && cfg.noise_cores != quiet {
        return invalid(
            "noise_cores",
            "names where parasites go, but noise = none, so none would run: add \
             noise=thread (or process, or trace) to inject it",
        );
    }
    let rhythm = cfg.noise_cores.iter().any(|c| c.trace.is_none());
    if cfg.noise != NoiseForm::None
        && rhythm
        && cfg.noise_sleep_us == 0
        && cfg.noise_work_iters == 0
    {
        return invalid(
            "noise_sleep_us",
            "noise_sleep_us and noise_work_iters cannot both be 0",
        );
    }
    Ok(())
}

/// Thresholds a balancer can move under: every thread starts with
/// `subdomains`, so a receiver needs fewer than the high threshold and a
/// donor more than the low one.
fn thresholds(cfg: &Config) -> Result<(), PlanError> {
    let (low, high) = (cfg.low_threshold(), cfg.high_threshold());
    if low >= high {
        return invalid(
            "low_threshold",
            format!("must be below high_threshold ({low} >= {high})"),
        );
    }
    if cfg.balancer == BalancerKind::None {
        return Ok(());
    }
    let n = cfg.subdomains;
    if high <= n {
        return invalid(
            "high_threshold",
            format!(
                "{high} <= subdomains ({n}): no thread could ever receive a subdomain, \
                 so the balancer would never move one (use auto: subdomains + 2)"
            ),
        );
    }
    if low >= n {
        return invalid(
            "low_threshold",
            format!(
                "{low} >= subdomains ({n}): no thread could ever give a subdomain away, \
                 so the balancer would never move one (use auto: subdomains - 2)"
            ),
        );
    }
    Ok(())
}

/// The test hooks name threads that exist (once `threads` is known).
fn hooks(cfg: &Config) -> Result<(), PlanError> {
    let AutoOr::Value(t) = cfg.threads else {
        return Ok(());
    };
    let hooks = [
        ("stall", cfg.stall.map(|s| s.thread)),
        ("slow", cfg.slow.map(|s| s.thread)),
    ];
    for (key, thread) in hooks {
        if let Some(thread) = thread.filter(|&th| th >= t) {
            return invalid(key, format!("thread {thread} does not exist ({t} threads)"));
        }
    }
    Ok(())
}

/// Real threads only: no more than this process may run on unless
/// oversubscribed (a captured topology can name more CPUs than it has),
/// and CPU ids pinning can name.
pub(super) fn runnable(
    placement: &crate::topology::Placement,
    oversubscribe: bool,
) -> Result<(), PlanError> {
    use crate::topology::TopologyError;
    let usable = crate::topology::usable_cpus();
    let threads = placement.threads();
    if threads > usable && !oversubscribe {
        return Err(TopologyError::MoreThanUsable { threads, usable }.into());
    }
    let limit = crate::topology::CPU_SET_SIZE;
    if let Some(&cpu) = placement.cores.iter().find(|&&c| c >= limit) {
        return Err(TopologyError::CpuId { cpu, limit }.into());
    }
    Ok(())
}

/// Real threads only: a sync run is balanced in the simulator only (its
/// workers have no call at their barrier).
pub(super) fn real_scheme(cfg: &Config) -> Result<(), PlanError> {
    if cfg.mode == Mode::Sync && cfg.balancer != BalancerKind::None {
        return invalid(
            "balancer",
            format!(
                "a sync run is balanced at its barrier in the simulator only: simulate `{}` \
                 with braid sim, or balance async(n) on real threads",
                cfg.variant()
            ),
        );
    }
    Ok(())
}

/// Subdomains of a whole run are bounded before their geometry is built.
pub(super) fn subdomain_count(threads: usize, subdomains: usize) -> Result<(), PlanError> {
    let total = threads as u128 * subdomains as u128;
    if total > MAX_TOTAL_SUBDOMAINS as u128 {
        return Err(PlanError::TooManySubdomains {
            total,
            max: MAX_TOTAL_SUBDOMAINS,
        });
    }
    Ok(())
}

/// What only the simulator needs: numbers for a residual target, a core
/// of its own for every thread, speeds for cores that exist, replayed
/// speeds of as many threads.
pub(super) fn simulated(plan: &Plan, sim: &SimSettings) -> Result<(), PlanError> {
    let cfg = &plan.config;
    if cfg.tolerance > 0.0 && sim.numbers == Numbers::Counted {
        return Err(PlanError::ToleranceNeedsNumerics);
    }
    if cfg.noise != NoiseForm::None
        && cfg.noise_sleep_us == 0
        && cfg.noise_cores.iter().any(|c| c.trace.is_none())
    {
        return invalid(
            "noise_sleep_us",
            "0: the simulator's parasite owns its core while it works, so one that never \
             sleeps would never let the thread there run; give it a sleep (the paper's is 200)",
        );
    }
    let cores = plan.topology.cores();
    let mut used = plan.placement.cores.clone();
    used.sort_unstable();
    used.dedup();
    if used.len() < plan.placement.threads() {
        return Err(PlanError::SimOversubscribed {
            threads: plan.placement.threads(),
            cores: cores.len(),
        });
    }
    if let Some(&(c, _)) = cfg.sim_speed.iter().find(|(c, _)| !cores.contains(c)) {
        return Err(PlanError::UnknownSimCore(c));
    }
    if let Some(m) = sim.replayed.as_deref()
        && m.threads() != plan.placement.threads()
    {
        return Err(PlanError::SpeedThreads {
            measured: m.threads(),
            threads: plan.placement.threads(),
        });
    }
    Ok(())
}

/// The real engine makes a subdomain cost more by sweeping it more: an
/// update cannot cost less than the one sweep that computes it.
pub(super) fn real_workload(plan: &Plan) -> Result<(), PlanError> {
    let least = plan.settings.workload.least_factor();
    if least < 1.0 {
        return invalid(
            "workload",
            format!(
                "braid run sweeps a subdomain f times per update, so f cannot be below 1, and \
                 `{}` has factors down to {least}; scale them up (random(1, 3) spreads loads \
                 as random(0.5, 1.5) does), or simulate it with braid sim",
                plan.config.workload
            ),
        );
    }
    let greatest = plan.settings.workload.greatest_factor();
    if greatest.is_infinite() {
        return invalid(
            "workload",
            format!(
                "braid run sweeps a subdomain f times per update, at most {MAX_WORK_FACTOR}, \
                 and the costs of `{}` grow for as long as the run goes; simulate it with \
                 braid sim",
                plan.config.workload
            ),
        );
    }
    if greatest > MAX_WORK_FACTOR {
        return invalid(
            "workload",
            format!(
                "braid run sweeps a subdomain f times per update, at most {MAX_WORK_FACTOR}, \
                 and the costs of `{}` span a factor of {greatest:.0} from the cheapest; \
                 simulate it with braid sim, which charges recorded seconds as they are",
                plan.config.workload
            ),
        );
    }
    Ok(())
}

/// A final grid exists to write.
pub(super) fn grid(plan: &Plan) -> Result<(), PlanError> {
    match plan.numbers() {
        Numbers::Held => Ok(()),
        Numbers::Counted => Err(PlanError::GridNeedsNumerics),
    }
}
