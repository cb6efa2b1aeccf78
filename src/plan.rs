//! Turns a configuration and a machine into a runnable plan: the problem,
//! the selected topology, where each thread is pinned, and the runtime
//! settings. Every check that needs the machine lives here.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use braid_noise::trace::Trace;

use crate::config::{AutoOr, Config, ConfigError, NoiseCore, NoiseMode, NoiseOffsets};
use crate::engine::{Balancing, Chosen, Interval, Scheme, Settings};
use crate::interrupt::Interrupt;
use crate::limits::{MAX_SECONDS, MAX_TRACE_BYTES};
use crate::noise::{Level, NoisePlan, ParasitePlan, Replay};
use crate::policy::{
    Anticipate, Greedy, Named, Policy, Progressive, Refine, ResidualFirst, Scope, Steal,
};
use crate::problem::{DecompositionError, Problem};
use crate::rng::SplitMix64;
use crate::sim::speeds::MeasuredSpeeds;
use crate::topology::{Placement, Topology, TopologyError};
use crate::variant::{Choice, Mode, Strategy};

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Topology(#[from] TopologyError),
    #[error("`subdomains`/`domain_size`: {0}")]
    Decomposition(#[from] DecompositionError),
    #[error(
        "`noise_cores`: core {core} is not available or named twice (available: {available}; \
         auto is the core of the thread next to the source)"
    )]
    NoiseCore { core: usize, available: String },
    #[error("`noise_cores`: trace {file}: {message}")]
    NoiseTrace { file: PathBuf, message: String },
    #[error(
        "`threads` x `subdomains` = {total} subdomains, more than braid handles ({max}); \
         use fewer threads or subdomains"
    )]
    TooManySubdomains { total: u128, max: usize },
    #[error(
        "`memory_limit`: this run needs about {needed} (grids, subdomains and trace), more than \
         the {limit} {which}; use a smaller domain_size, or set memory_limit = GIB to allow it"
    )]
    Memory {
        needed: Bytes,
        limit: Bytes,
        which: &'static str,
    },
}

/// A number of bytes, printed in MiB or GiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Bytes(pub u64);

impl std::fmt::Display for Bytes {
    /// ```
    /// use braid::plan::Bytes;
    /// assert_eq!(Bytes(3 << 29).to_string(), "1.5 GiB");
    /// assert_eq!(Bytes(5 << 20).to_string(), "5.0 MiB");
    /// ```
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let b = self.0 as f64;
        if b >= (1u64 << 30) as f64 {
            write!(f, "{:.1} GiB", b / (1u64 << 30) as f64)
        } else {
            write!(f, "{:.1} MiB", b / (1u64 << 20) as f64)
        }
    }
}

/// Whether an engine holds the grid's numbers (the runtime always does; the
/// simulator only with `numerics = true`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Numbers {
    Held,
    Counted,
}

#[derive(Debug, Clone)]
pub struct Plan {
    /// The configuration with `threads` resolved.
    pub config: Config,
    pub problem: Problem,
    pub topology: Topology,
    pub placement: Placement,
    pub settings: Settings,
    /// Parasites to run next to the solve, if any.
    pub noise: Option<NoisePlan>,
    /// Per-thread speeds a run measured, for the simulator to replay
    /// (`braid sim --replay-speeds`); set after planning.
    pub speeds: Option<Arc<MeasuredSpeeds>>,
}

impl Plan {
    pub fn new(config: &Config, machine: &Topology) -> Result<Plan, PlanError> {
        config.validate()?;
        let topology = machine.select(
            config.cores.value().map(Vec::as_slice),
            config.sockets.value().copied(),
        )?;
        let threads = match config.threads {
            AutoOr::Auto => topology.physical_cores(),
            AutoOr::Value(n) => n,
        };
        let placement = topology.place(threads, config.oversubscribe)?;
        let mut config = config.clone();
        config.threads = AutoOr::Value(threads);
        config.validate()?;
        let total = threads as u128 * config.subdomains as u128;
        if total > MAX_TOTAL_SUBDOMAINS as u128 {
            return Err(PlanError::TooManySubdomains {
                total,
                max: MAX_TOTAL_SUBDOMAINS,
            });
        }
        let problem = Problem::new(config.domain_size, threads, config.subdomains)?;
        let settings = settings(&config, &problem);
        let noise = noise_plan(&config, &problem, &placement, machine)?;
        Ok(Plan {
            config,
            problem,
            topology,
            placement,
            settings,
            noise,
            speeds: None,
        })
    }
}

/// What an engine needs, taken from the configuration.
fn settings(cfg: &Config, problem: &Problem) -> Settings {
    let seconds = |s: f64| (s > 0.0).then(|| Duration::from_secs_f64(s));
    Settings {
        scheme: match cfg.mode {
            Mode::Sync => Scheme::Sync,
            Mode::Ssync => Scheme::Ssync {
                staleness: cfg.staleness,
            },
            Mode::Async => Scheme::Async {
                balancing: balancing(cfg),
            },
        },
        // Both factors are bounded (crate::limits), so this cannot wrap.
        update_budget: cfg
            .max_iterations
            .saturating_mul(problem.subdomains_per_domain() as u64),
        tolerance: (cfg.tolerance > 0.0).then_some(cfg.tolerance),
        time_limit: seconds(cfg.time_limit),
        trace_interval: seconds(cfg.trace_interval),
        stall: cfg.stall,
        slow: cfg.slow,
        interrupt: Interrupt::none(),
    }
}

/// The balancing the configuration asks for, if any.
fn balancing(cfg: &Config) -> Option<Balancing> {
    let policy = match cfg.choice()? {
        Choice::One(named) => Chosen::One(policy(cfg, named)),
        Choice::Auto => Chosen::Auto(
            cfg.lb_candidates
                .iter()
                .map(|&named| policy(cfg, named))
                .collect(),
        ),
    };
    let interval = match cfg.lb_interval {
        AutoOr::Value(s) => Interval::Every(Duration::from_secs_f64(s)),
        AutoOr::Auto => Interval::Auto,
    };
    Some(Balancing { policy, interval })
}

/// The policy `named` with its settings from the configuration (a hybrid
/// candidate takes `hybrid_period`).
fn policy(cfg: &Config, named: Named) -> Arc<dyn Policy> {
    let scope = match named.scope {
        Scope::Hybrid { .. } => Scope::Hybrid {
            period: cfg.hybrid_period,
        },
        s => s,
    };
    let (low_threshold, high_threshold) = (cfg.low_threshold(), cfg.high_threshold());
    match named.strategy {
        Strategy::Progressive => Arc::new(Progressive {
            scope,
            pairs: cfg.pairs,
            low_threshold,
            high_threshold,
            min_gap: cfg
                .lb_min_gap
                .value()
                .copied()
                .unwrap_or(crate::policy::DEFAULT_MIN_GAP),
            predict: cfg.lb_predict,
            seed: cfg.seed,
        }),
        Strategy::Steal => Arc::new(Steal {
            scope,
            low_threshold,
            high_threshold,
        }),
        Strategy::Greedy => Arc::new(Greedy {
            scope,
            low_threshold,
            high_threshold,
        }),
        Strategy::Refine => Arc::new(Refine {
            scope,
            low_threshold,
            high_threshold,
            tolerance: cfg.lb_tolerance,
        }),
        Strategy::Anticipate => Arc::new(Anticipate {
            scope,
            low_threshold,
            high_threshold,
            alpha: cfg.lb_alpha,
            history: cfg.lb_history,
        }),
        Strategy::Residual => Arc::new(ResidualFirst {
            scope,
            low_threshold,
            high_threshold,
        }),
    }
}

/// Subdomains of a whole run: their geometry is built before the memory
/// check, so this bounds it (about 100 bytes each).
pub const MAX_TOTAL_SUBDOMAINS: usize = 1 << 22;

impl Plan {
    /// What the simulator holds for this plan: the grid's numbers with
    /// `numerics = true`, else only counts.
    pub fn sim_numbers(&self) -> Numbers {
        if self.config.numerics {
            Numbers::Held
        } else {
            Numbers::Counted
        }
    }

    /// Bytes a run of this plan allocates, roughly, from above: per
    /// subdomain its two padded buffers, published edges and bookkeeping;
    /// the initial, assembled and residual grids; and the trace, when a time
    /// limit bounds it.
    pub fn memory_needed(&self, numbers: Numbers) -> Bytes {
        let p = &self.problem;
        let subs = p.subs.len() as u128;
        let mut bytes = subs * 1024; // locks, counters, geometry, trace rows
        if numbers == Numbers::Held {
            let cells: u128 = p
                .subs
                .iter()
                .map(|g| (g.height as u128 + 2) * (g.width as u128 + 2))
                .sum();
            let edges: u128 = p
                .subs
                .iter()
                .map(|g| 2 * (g.height + g.width) as u128)
                .sum();
            let grid = (p.height as u128 + 2) * (p.width as u128 + 2);
            bytes += 8 * (2 * cells + 2 * edges + 3 * grid);
        }
        let (limit, every) = (self.config.time_limit, self.config.trace_interval);
        if limit > 0.0 && every > 0.0 {
            let samples = (limit / every).ceil().min(1e30) as u128 + 1;
            bytes += samples * subs * 16;
        }
        Bytes(bytes.min(u64::MAX as u128) as u64)
    }

    /// Refuses a run that would need more memory than `memory_limit` (or,
    /// for `auto`, than the machine has available now).
    pub fn check_memory(&self, numbers: Numbers) -> Result<(), PlanError> {
        let needed = self.memory_needed(numbers);
        let (limit, which) = match self.config.memory_limit {
            AutoOr::Value(gib) => (
                Bytes((gib * (1u64 << 30) as f64).min(u64::MAX as f64) as u64),
                "set by memory_limit",
            ),
            AutoOr::Auto => match available_memory() {
                Some(b) => (b, "this machine has available"),
                None => return Ok(()), // cannot tell: do not guess
            },
        };
        if needed > limit {
            return Err(PlanError::Memory {
                needed,
                limit,
                which,
            });
        }
        Ok(())
    }
}

/// `MemAvailable` from /proc/meminfo (Linux); `None` elsewhere.
fn available_memory() -> Option<Bytes> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(Bytes(kib.saturating_mul(1024)))
}

/// Where the parasites go. `auto` is the paper's placement: the core of the
/// thread whose domain touches the source. Any core of the machine may be
/// named, whether a worker uses it or not.
fn noise_plan(
    cfg: &Config,
    problem: &Problem,
    placement: &Placement,
    machine: &Topology,
) -> Result<Option<NoisePlan>, PlanError> {
    if cfg.noise == NoiseMode::None {
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
                    trace: Arc::new(trace),
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
        mode: cfg.noise,
        parasites,
    }))
}

/// Reads and checks a trace to replay: the selfish format, and a span both
/// engines can count in (picoseconds in the simulator).
fn load_trace(file: &Path) -> Result<Trace, PlanError> {
    let bad = |message: String| PlanError::NoiseTrace {
        file: file.to_path_buf(),
        message,
    };
    let text = crate::files::read_text(file, MAX_TRACE_BYTES).map_err(|e| bad(e.to_string()))?;
    let trace = Trace::parse(&text).map_err(|e| bad(e.to_string()))?;
    if trace.span_ns as f64 > MAX_SECONDS * 1e9 {
        return Err(bad(format!(
            "it spans {} ns, more than braid replays ({MAX_SECONDS} s)",
            trace.span_ns
        )));
    }
    Ok(trace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_threads_take_every_selected_core() {
        let plan = Plan::new(&Config::default(), &Topology::uniform(2, 3)).unwrap();
        assert_eq!(plan.config.threads, AutoOr::Value(6));
        assert_eq!(plan.placement.sockets, vec![0, 0, 0, 1, 1, 1]);
        assert_eq!(plan.settings.update_budget, 5000 * 4);
    }

    #[test]
    fn more_threads_than_cores_need_oversubscribe() {
        let mut cfg = Config {
            threads: AutoOr::Value(3),
            ..Config::default()
        };
        let e = Plan::new(&cfg, &Topology::uniform(1, 2)).unwrap_err();
        assert!(e.to_string().contains("oversubscribe"), "{e}");
        cfg.oversubscribe = true;
        assert!(Plan::new(&cfg, &Topology::uniform(1, 2)).is_ok());
    }

    #[test]
    fn auto_noise_goes_on_the_core_of_the_source_domains_thread() {
        let cfg = Config {
            noise: NoiseMode::Thread,
            threads: AutoOr::Value(4),
            ..Config::default()
        };
        // 4 threads tile 2 x 2; the north row holds domains 0 and 1, and the
        // middle one of that row is domain 1 -> thread 1 -> core 1.
        let plan = Plan::new(&cfg, &Topology::uniform(2, 2)).unwrap();
        let noise = plan.noise.unwrap();
        assert_eq!(noise.parasites.len(), 1);
        assert_eq!(noise.parasites[0].core, plan.placement.cores[1]);
        assert_eq!(noise.parasites[0].level, Level::Iterations(10_000));
    }

    #[test]
    fn noise_on_a_missing_core_is_named() {
        let mut cfg = Config {
            noise: NoiseMode::Process,
            ..Config::default()
        };
        cfg.apply_override("noise_cores=1:0.19, 7").unwrap();
        let e = Plan::new(&cfg, &Topology::uniform(1, 2)).unwrap_err();
        assert!(e.to_string().contains("core 7"), "{e}");
    }

    #[test]
    fn a_run_bigger_than_the_memory_limit_is_refused_before_it_allocates() {
        let mut cfg = Config {
            threads: AutoOr::Value(1),
            ..Config::default()
        };
        let plan = Plan::new(&cfg, &Topology::uniform(1, 1)).unwrap();
        // 300 x 300 in 4 pieces: 2 buffers of ~151^2 cells each, 3 grids.
        let needed = plan.memory_needed(Numbers::Held).0;
        assert!((3_500_000..4_500_000).contains(&needed), "{needed}");
        assert!(plan.memory_needed(Numbers::Counted).0 < 10_000);
        cfg.memory_limit = AutoOr::Value(0.001); // 1 MiB
        let plan = Plan::new(&cfg, &Topology::uniform(1, 1)).unwrap();
        let e = plan.check_memory(Numbers::Held).unwrap_err().to_string();
        assert!(e.contains("memory_limit") && e.contains("MiB"), "{e}");
        assert!(plan.check_memory(Numbers::Counted).is_ok());
        // Two million cells a side: about 100 TB, whatever the machine has.
        cfg.domain_size = 2_000_000;
        cfg.memory_limit = AutoOr::Auto;
        let plan = Plan::new(&cfg, &Topology::uniform(1, 1)).unwrap();
        if available_memory().is_some() {
            let e = plan.check_memory(Numbers::Held).unwrap_err().to_string();
            assert!(e.contains("available"), "{e}");
        }
    }

    #[test]
    fn too_many_subdomains_are_refused_before_the_geometry_is_built() {
        let cfg = Config {
            threads: AutoOr::Value(64),
            subdomains: 1 << 17,
            domain_size: 1 << 10,
            oversubscribe: true,
            ..Config::default()
        };
        let e = Plan::new(&cfg, &Topology::uniform(1, 1)).unwrap_err();
        assert!(matches!(e, PlanError::TooManySubdomains { .. }), "{e}");
    }

    #[test]
    fn a_split_that_does_not_fit_is_named() {
        let cfg = Config {
            domain_size: 2,
            subdomains: 9,
            ..Config::default()
        };
        let e = Plan::new(&cfg, &Topology::uniform(1, 1)).unwrap_err();
        assert!(e.to_string().contains("subdomains"), "{e}");
    }
}
