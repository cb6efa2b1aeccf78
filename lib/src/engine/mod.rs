//! What every engine takes and gives: the run [`Settings`] that `plan`
//! builds (and, for the simulator, the virtual machine of [`simulated`]),
//! and the [`Outcome`] that the threaded runtime and the virtual-time
//! simulator both return and `report` reads. Neither engine owns these
//! types, so neither imports the other, and a third driver (MPI ranks)
//! plugs in behind the same ones.

mod outcome;
mod progress;
pub(crate) mod simulated;
pub(crate) mod speeds;

pub(crate) use crate::trace::TraceSample;
pub(crate) use crate::variant::Interval;
pub use outcome::{
    Clock, CoreTime, EFFORT_SAMPLES, Effort, LbStats, Outcome, Ran, RanksInfo, StopReason, Tried,
    host_nodes,
};
pub use progress::{Progress, ProgressNow};
pub use simulated::{Jitter, SimCosts};
pub(crate) use simulated::{SimLoads, SimSettings};
pub use speeds::MeasuredSpeeds;

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::interrupt::Interrupt;
use crate::policy::{Gate, Homes, Policy};
use crate::variant::Mode;
use crate::workload::Workload;

/// Which engine runs a plan: `braid run` or `braid sim` (and the `engine`
/// of a suite, as its TOML spells it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    /// Real pinned threads on this machine (`braid run`).
    Run,
    /// The deterministic simulator, in virtual time (`braid sim`).
    Sim,
}

impl EngineKind {
    /// The braid command that runs it.
    ///
    /// ```
    /// use braid::EngineKind;
    /// assert_eq!(EngineKind::Sim.command(), "sim");
    /// ```
    pub fn command(self) -> &'static str {
        match self {
            EngineKind::Run => "run",
            EngineKind::Sim => "sim",
        }
    }
}

/// Whether an engine holds the grid's numbers (the runtime always does; the
/// simulator only with `numerics = true`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Numbers {
    /// Every cell's value: the real arithmetic, a residual, a final grid.
    Held,
    /// Update counts only (the simulator's fast mode).
    Counted,
}

/// How a run synchronises, with what only that scheme needs: a staleness
/// bound only in ssync, a balancer only in async.
#[derive(Debug, Clone)]
pub enum Scheme {
    /// Global barrier after every iteration: sequential Jacobi, bit for bit.
    Sync,
    /// A subdomain runs at most `staleness` updates ahead of a neighbour.
    Ssync {
        /// The bound, in updates.
        staleness: u64,
    },
    /// No waiting; optionally balanced.
    Async {
        /// The balancer, if any.
        balancer: Option<BalancerSettings>,
    },
    /// A barrier after every iteration, balanced at the barrier: a call
    /// stalls every thread (the simulator only; `plan` refuses it for real
    /// threads).
    Bulk {
        /// The balancer.
        balancer: BalancerSettings,
    },
}

impl Scheme {
    /// ```
    /// use braid::Scheme;
    /// use braid::Mode;
    /// assert_eq!(Scheme::Ssync { staleness: 3 }.mode(), Mode::Ssync);
    /// assert_eq!(Scheme::Async { balancer: None }.staleness(), None);
    /// ```
    pub fn mode(&self) -> Mode {
        match self {
            Scheme::Sync | Scheme::Bulk { .. } => Mode::Sync,
            Scheme::Ssync { .. } => Mode::Ssync,
            Scheme::Async { .. } => Mode::Async,
        }
    }

    /// The staleness bound, in ssync only.
    pub fn staleness(&self) -> Option<u64> {
        match self {
            Scheme::Ssync { staleness } => Some(*staleness),
            _ => None,
        }
    }

    /// The balancer, in a balanced async or bulk-synchronous run only.
    pub fn balancer(&self) -> Option<&BalancerSettings> {
        match self {
            Scheme::Async { balancer } => balancer.as_ref(),
            Scheme::Bulk { balancer } => Some(balancer),
            _ => None,
        }
    }
}

/// A balancer as an engine runs it: its policies and how often the threads
/// call it (the label's [`LabelBalancer`](crate::variant::LabelBalancer),
/// built by `plan`).
#[derive(Debug, Clone)]
pub struct BalancerSettings {
    /// Which policy each call asks.
    pub policies: Policies,
    /// How long from one call to the next.
    pub interval: Interval,
    /// What `split` and `hybrid` keep moves within.
    pub group: Group,
    /// Each subdomain's home thread and what it costs away from it, as
    /// every call's decision sees them (`policy::Homes`).
    pub homes: Homes,
    /// Each subdomain's share of the solver's slowest error mode
    /// (`forecast::sub_shares`), which weighs the loss rate the effort and
    /// `lb_interval = auto` measure; `None`: every subdomain alike.
    pub mode_shares: Option<Arc<[f64]>>,
    /// What a call's moves must pass once its strategy decided
    /// (`lb_gate`; `policy::paying`).
    pub gate: Gate,
    /// What a subdomain away from home costs over at home, less 1, until
    /// the engine has measured a guest (the cost model's).
    pub away_prior: f64,
    /// How decisions read the window (`lb_window`, `lb_recent`;
    /// [`Snapshot::reading`](crate::policy::Snapshot::reading)).
    pub reading: crate::policy::Reading,
}

impl BalancerSettings {
    /// One policy at a fixed interval, grouping by socket, with no homes.
    pub fn every(policy: Arc<dyn Policy>, interval: Duration) -> Self {
        BalancerSettings {
            policies: Policies::One(policy),
            interval: Interval::Seconds(interval.as_secs_f64()),
            group: Group::Socket,
            homes: Homes::NONE,
            mode_shares: None,
            gate: Gate::None,
            away_prior: 0.0,
            reading: crate::policy::Reading::DEFAULT,
        }
    }
}

/// The groups of threads a scoped balancer (`split`, `hybrid`) keeps its
/// moves within (`lb_group`): what the policy sees as each thread's socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Group {
    /// The thread's socket (the paper's).
    #[default]
    Socket,
    /// The thread's node: its host (across ranks; one node in one
    /// process) or the simulator's `host:N` level.
    Node,
}

impl Group {
    /// Whether this is the default (reports leave the default out, so
    /// that they read as before the key existed).
    pub fn is_socket(&self) -> bool {
        *self == Group::Socket
    }

    /// The groups a policy sees: `sockets` or `nodes`, one per thread.
    pub(crate) fn pick<'a>(self, sockets: &'a [usize], nodes: &'a [usize]) -> &'a [usize] {
        match self {
            Group::Socket => sockets,
            Group::Node => nodes,
        }
    }
}

/// Which policy a balancer call asks.
#[derive(Debug, Clone)]
pub enum Policies {
    /// This one, at every call.
    One(Arc<dyn Policy>),
    /// `balancer = auto`: one of these at a time, chosen while running by
    /// measured effort (`schedule::choose`).
    Auto(Vec<Arc<dyn Policy>>),
    /// `balancer = learned`: one of these at each call, the one the
    /// learner names (its classes, in order) for the call's features.
    Learned(Vec<Arc<dyn Policy>>, Arc<crate::policy::learned::Learner>),
}

/// Whether updates also compute their local residual (only runs with a
/// residual target need it; it costs about 15% more per cell).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Residual {
    /// The plain sweep.
    Skip,
    /// The sweep with the local residual fused in.
    Compute,
}

/// A test hook: thread `thread` stalls for `seconds` inside its update
/// number `after` (counted in subdomain updates), holding that subdomain.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stall {
    /// The thread, from 0.
    pub thread: usize,
    /// Its update at which it stalls.
    pub after: u64,
    /// For how long.
    pub seconds: f64,
}

/// A test hook: after each of its updates, thread `thread` spins for
/// `factor` times that update's duration, like a core `1 + factor` times
/// slower.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Slow {
    /// The thread, from 0.
    pub thread: usize,
    /// Its extra time per update, as a multiple of the update's own.
    pub factor: f64,
}

/// What a balancer's caller measures between calls ([`Settings::measure`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Measure {
    /// Object loads and thread speeds, as well as rates.
    pub loads: bool,
    /// Whether the application's work is uniform, so that loads that
    /// differ between threads are the machine's.
    pub uniform_work: bool,
}

impl Measure {
    /// Rates only, uniform work.
    pub const RATES: Measure = Measure {
        loads: false,
        uniform_work: true,
    };
}

/// What an engine needs to know to run a plan.
#[derive(Debug, Clone)]
pub struct Settings {
    /// sync, ssync or async, with what each needs.
    pub scheme: Scheme,
    /// Subdomain updates after which a thread stops the run.
    pub update_budget: u64,
    /// Relative residual target, if any.
    pub tolerance: Option<f64>,
    /// When the run stops regardless, if ever.
    pub time_limit: Option<Duration>,
    /// How often counts and owners are sampled; `None` = no trace.
    pub trace_interval: Option<Duration>,
    /// Whether the trace also samples object loads and each thread's time
    /// off its core (`--lb-data`): then loads are measured.
    pub trace_loads: bool,
    /// The stall test hook, if set.
    pub stall: Option<Stall>,
    /// The slow test hook, if set.
    pub slow: Option<Slow>,
    /// What each subdomain's update costs (`workload`).
    pub workload: Workload,
    /// Set by SIGINT/SIGTERM (when the CLI installed it): stops the run.
    pub interrupt: Interrupt,
    /// Where the engine publishes how far it has got (read by the command
    /// line's progress line).
    pub progress: Progress,
}

impl Settings {
    /// `scheme` until a thread has made `update_budget` subdomain updates:
    /// no residual target, time limit, trace or test hook.
    pub fn plain(scheme: Scheme, update_budget: u64) -> Settings {
        Settings {
            scheme,
            update_budget,
            tolerance: None,
            time_limit: None,
            trace_interval: None,
            trace_loads: false,
            stall: None,
            slow: None,
            workload: Workload::uniform(),
            interrupt: Interrupt::none(),
            progress: Progress::default(),
        }
    }

    /// What a balancer's caller measures between calls: object loads
    /// ([`Self::measures_loads`]), and whether the work is uniform.
    pub fn measure(&self) -> Measure {
        Measure {
            loads: self.measures_loads(),
            uniform_work: self.workload.is_uniform(),
        }
    }

    /// Whether the engine measures object loads (each subdomain's time
    /// updating, and each thread's speed): only when something reads them,
    /// a workload that is not uniform or a balancer whose policy does, so
    /// that a plain run reads no clock it does not need.
    pub fn measures_loads(&self) -> bool {
        let reads = |b: &BalancerSettings| match &b.policies {
            // The gate forecasts with loads and speeds.
            _ if b.gate == Gate::Payoff => true,
            Policies::One(p) => p.reads_loads(),
            Policies::Auto(ps) => ps.iter().any(|p| p.reads_loads()),
            // Its features are made of loads.
            Policies::Learned(..) => true,
        };
        self.trace_loads || !self.workload.is_uniform() || self.scheme.balancer().is_some_and(reads)
    }

    /// The scheme's mode.
    pub fn mode(&self) -> Mode {
        self.scheme.mode()
    }

    /// Whether updates compute their residual: with a target only.
    pub fn residual(&self) -> Residual {
        match self.tolerance {
            Some(_) => Residual::Compute,
            None => Residual::Skip,
        }
    }
}
