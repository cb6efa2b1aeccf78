//! Turns a configuration and a machine into a runnable plan: the problem,
//! the selected topology, where each thread is pinned, the engine's
//! settings (for the simulator also its virtual machine), and the noise.
//!
//! A plan is checked whole when it is built: every check that is not a
//! single key's bounds (those are parsed in `config/keys.rs`) lives in
//! [`checks`] and runs here, for the engine the plan is for. So a plan that
//! exists can run, and nothing downstream checks the configuration again.

mod checks;
mod memory;
mod noise;
mod policies;
mod simulated;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::config::{AutoOr, Config, ConfigError};
use crate::engine::{EngineKind, MeasuredSpeeds, Numbers, Scheme, Settings, SimSettings};
use crate::interrupt::Interrupt;
use crate::noise::NoisePlan;
use crate::problem::{DecompositionError, Problem};
use crate::topology::{Placement, Topology, TopologyError};
use crate::variant::Mode;
use crate::workload::Workload;

pub use memory::Bytes;
pub use simulated::sim_costs;

/// Why a configuration cannot run here.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// A key or value that does not parse.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Keys that are each within bounds but do not go together.
    #[error("`{key}`: {message}")]
    Invalid {
        /// The key to change.
        key: &'static str,
        /// Why, and what would do.
        message: String,
    },
    /// Cores, sockets or threads this machine cannot give.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// A split that does not fit the domain.
    #[error("`subdomains`/`domain_size`: {0}")]
    Decomposition(#[from] DecompositionError),
    /// A noisy core that is not there, or named twice.
    #[error(
        "`noise_cores`: core {core} is not available or named twice (available: {available}; \
         auto is the core of the thread next to the source)"
    )]
    NoiseCore {
        /// The core.
        core: usize,
        /// The cores there are.
        available: String,
    },
    /// A trace that cannot be replayed.
    #[error("`noise_cores`: trace {file}: {message}")]
    NoiseTrace {
        /// Its file.
        file: std::path::PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// More subdomains than braid builds.
    #[error(
        "`threads` x `subdomains` = {total} subdomains, more than braid handles ({max}); \
         use fewer threads or subdomains"
    )]
    TooManySubdomains {
        /// Asked for.
        total: u128,
        /// The bound.
        max: usize,
    },
    /// More memory than the machine (or `memory_limit`) allows.
    #[error(
        "`memory_limit`: this run needs about {needed} (grids, subdomains and trace), more than \
         the {limit} {which}; use a smaller domain_size, or set memory_limit = GIB to allow it"
    )]
    Memory {
        /// The run's estimate.
        needed: Bytes,
        /// The limit.
        limit: Bytes,
        /// Where the limit comes from.
        which: &'static str,
    },
    /// A residual target in a simulation that only counts.
    #[error("`tolerance`: a residual target needs numerics = true in the simulator")]
    ToleranceNeedsNumerics,
    /// Two simulated threads on one core.
    #[error(
        "`threads`: the simulator gives every thread its own core; {threads} threads on {cores} cores"
    )]
    SimOversubscribed {
        /// Threads asked for.
        threads: usize,
        /// Cores of the simulated machine.
        cores: usize,
    },
    /// A speed for a core the simulated machine does not have.
    #[error("`sim_speed`: core {0} is not in sim_topology")]
    UnknownSimCore(usize),
    /// Replayed speeds of another number of threads.
    #[error(
        "`threads`: the replayed speeds are of {measured} threads, this simulation has {threads}"
    )]
    SpeedThreads {
        /// Threads of the recorded run.
        measured: usize,
        /// Threads of this simulation.
        threads: usize,
    },
    /// A final grid asked of a simulation that only counts.
    #[error("--grid needs numerics = true in the simulator")]
    GridNeedsNumerics,
    /// A workload's map that cannot be read or does not fit.
    #[error("`workload`: {file}: {message}")]
    WorkloadMap {
        /// The map's file.
        file: std::path::PathBuf,
        /// What is wrong with it.
        message: String,
    },
}

/// A run, ready for its engine.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The configuration with `threads` resolved.
    pub config: Config,
    /// Where it runs: real threads or the simulator's virtual machine.
    pub target: Target,
    /// The grid, its decomposition and its subdomains.
    pub problem: Problem,
    /// The machine's selected sockets and cores.
    pub topology: Topology,
    /// Where each thread is pinned.
    pub placement: Placement,
    /// What the engine needs.
    pub settings: Settings,
    /// The noise: parasites beside a real run, or their rhythms on the
    /// simulator's virtual cores.
    pub noise: Option<NoisePlan>,
}

/// Where a plan runs. A simulated plan always carries its virtual machine,
/// so no engine has to guess one.
#[derive(Debug, Clone)]
pub enum Target {
    /// Real threads, pinned on this machine's cores.
    Threads,
    /// The simulator, on this virtual machine.
    Simulator(Box<SimSettings>),
}

impl Plan {
    /// A run on `machine`'s threads (`braid run`): checked, placed and
    /// within the memory the machine has.
    pub fn new(config: &Config, machine: &Topology) -> Result<Plan, PlanError> {
        let plan = Plan::placed(config, machine, EngineKind::Run)?;
        plan.check_memory(Numbers::Held)?;
        checks::real_workload(&plan)?;
        Ok(plan)
    }

    /// A run in the simulator (`braid sim`), on the machine `sim_topology`
    /// describes.
    pub fn simulated(config: &Config) -> Result<Plan, PlanError> {
        Plan::replaying(config, None)
    }

    /// A simulated run whose cores run at the speeds a real run measured
    /// (`braid sim --replay-speeds`), if given.
    pub fn replaying(config: &Config, speeds: Option<MeasuredSpeeds>) -> Result<Plan, PlanError> {
        // Said before the machine is: a thread count that differs from the
        // replayed run's is the mistake, not the cores it would need.
        if let (Some(speeds), crate::config::AutoOr::Value(threads)) = (&speeds, config.threads)
            && speeds.threads() != threads
        {
            return Err(PlanError::SpeedThreads {
                measured: speeds.threads(),
                threads,
            });
        }
        // A simulated machine of millions of cores, all of them threads:
        // refused before the machine is built (at 2^24 cores that alone
        // takes gigabytes), as it would be after.
        if let crate::topology::SimTopology::Synthetic(t) = &config.sim_topology
            && config.threads == AutoOr::Auto
            && config.cores.value().is_none()
            && config.sockets.value().is_none()
        {
            let threads = t.sockets * t.cores_per_socket;
            checks::subdomain_count(threads, config.subdomains)?;
            memory::check_subdomains(config, threads as u128 * config.subdomains as u128)?;
        }
        let machine = Topology::simulated(&config.sim_topology)?;
        let mut plan = Plan::placed(config, &machine, EngineKind::Sim)?;
        // Placed for the simulator; its machine is set just below.
        let sim = simulated::settings(&plan, speeds.map(Arc::new));
        plan.check_memory(sim.numbers)?;
        checks::simulated(&plan, &sim)?;
        plan.target = Target::Simulator(Box::new(sim));
        Ok(plan)
    }

    /// The checked configuration on `machine`: topology, placement,
    /// problem, settings and noise.
    fn placed(config: &Config, machine: &Topology, engine: EngineKind) -> Result<Plan, PlanError> {
        checks::cross_keys(config)?;
        let topology = machine.select(
            config.cores.value().map(Vec::as_slice),
            config.sockets.value().copied(),
        )?;
        let threads = match config.threads {
            AutoOr::Auto => topology.physical_cores(),
            AutoOr::Value(n) => n,
        };
        let placement = topology.place(threads, config.oversubscribe)?;
        if engine == EngineKind::Run {
            checks::runnable(&placement, config.oversubscribe)?;
            checks::real_scheme(config)?;
        }
        let mut config = config.clone();
        config.threads = AutoOr::Value(threads);
        checks::cross_keys(&config)?;
        checks::subdomain_count(threads, config.subdomains)?;
        memory::check_subdomains(&config, threads as u128 * config.subdomains as u128)?;
        let problem = Problem::new(config.domain_size, threads, config.subdomains)?;
        let workload = Workload::build(&config.workload, &problem, config.seed).map_err(|e| {
            PlanError::WorkloadMap {
                file: config
                    .workload
                    .file()
                    .unwrap_or(Path::new(""))
                    .to_path_buf(),
                message: e.to_string(),
            }
        })?;
        let settings = settings(&config, &problem, workload)?;
        let noise = noise::plan(&config, &problem, &placement, machine)?;
        Ok(Plan {
            config,
            target: Target::Threads,
            problem,
            topology,
            placement,
            settings,
            noise,
        })
    }

    /// The keys set away from their defaults that this plan's engine does
    /// not read: the simulator's under `braid run`, the runtime's test
    /// hook `stall` under `braid sim`. The command line warns about them.
    pub fn ignored_keys(&self) -> Vec<&'static str> {
        let ignored = match self.engine() {
            EngineKind::Run => crate::config::sim_only,
            EngineKind::Sim => crate::config::run_only,
        };
        self.config
            .changed_keys()
            .into_iter()
            .filter(|k| ignored(k))
            .collect()
    }

    /// Whether the engine holds the grid's numbers (a real run always; a
    /// simulation with `numerics = true`).
    pub fn numbers(&self) -> Numbers {
        self.sim().map_or(Numbers::Held, |s| s.numbers)
    }

    /// The engine the plan is for.
    pub fn engine(&self) -> EngineKind {
        match self.target {
            Target::Threads => EngineKind::Run,
            Target::Simulator(_) => EngineKind::Sim,
        }
    }

    /// The simulated machine, for a plan of the simulator.
    pub fn sim(&self) -> Option<&SimSettings> {
        match &self.target {
            Target::Threads => None,
            Target::Simulator(sim) => Some(sim),
        }
    }

    /// Checks that the final grid can be written (`--grid`): a simulation
    /// that only counts has none.
    pub fn check_grid(&self) -> Result<(), PlanError> {
        checks::grid(self)
    }

    /// A run across ranks: noise is per node. The rank that leads its node
    /// (`node` given) plans `config`'s parasites on the node's cores, where
    /// it will start them for every rank there; the others start none. Each
    /// rank's plan was built without noise (a rank bound to one core could
    /// not name the others); this puts the keys back for the report.
    #[cfg(feature = "mpi")]
    pub fn plan_node_noise(
        &mut self,
        config: &Config,
        node: Option<&Topology>,
    ) -> Result<(), PlanError> {
        self.config.noise = config.noise;
        self.config.noise_cores.clone_from(&config.noise_cores);
        self.noise = match node {
            Some(node) => noise::plan(config, &self.problem, &self.placement, node)?,
            None => None,
        };
        Ok(())
    }
}

/// Subdomains of a whole run: 2^24, a simulated machine of 2^22 cores at
/// 4 each. What they need is checked against the machine before their
/// geometry is built ([`memory`]).
pub(crate) const MAX_TOTAL_SUBDOMAINS: usize = 1 << 24;

/// What an engine needs, taken from the configuration.
fn settings(cfg: &Config, problem: &Problem, workload: Workload) -> Result<Settings, PlanError> {
    let seconds = |s: f64| (s > 0.0).then(|| Duration::from_secs_f64(s));
    Ok(Settings {
        scheme: match cfg.mode {
            Mode::Sync => match policies::balancer(cfg, problem)? {
                None => Scheme::Sync,
                Some(balancer) => Scheme::Bulk { balancer },
            },
            Mode::Ssync => Scheme::Ssync {
                staleness: cfg.staleness,
            },
            Mode::Async => Scheme::Async {
                balancer: policies::balancer(cfg, problem)?,
            },
        },
        // Both factors are bounded (crate::limits), so this cannot wrap.
        update_budget: cfg
            .max_iterations
            .saturating_mul(problem.subdomains_per_domain() as u64),
        tolerance: (cfg.tolerance > 0.0).then_some(cfg.tolerance),
        time_limit: seconds(cfg.time_limit),
        trace_interval: seconds(cfg.trace_interval),
        trace_loads: false,
        stall: cfg.stall,
        slow: cfg.slow,
        workload,
        interrupt: Interrupt::none(),
        progress: crate::engine::Progress::default(),
    })
}

#[cfg(test)]
mod tests;
