//! braid: a shared-memory asynchronous 2D Jacobi solver with progressive
//! load balancing (Zarins & Weiland, IA3 2017), built for experiments on
//! multi-socket nodes.
//!
//! As a library: configure a run, plan it on a machine (checked whole),
//! run it on either engine, and read its report.
//!
//! ```
//! use braid::{Config, Plan};
//!
//! let mut config = Config::default();
//! config.apply_variant("async(4)+split(0.001)").unwrap();
//! config.apply_overrides(&["domain_size=24", "max_iterations=100"]).unwrap();
//! // The simulator's 2 x 18 cores; `Plan::new(&config, &Topology::detect()?)`
//! // plans real threads on this machine instead.
//! let plan = Plan::simulated(&config).unwrap();
//! let (report, _outcome) = braid::run(&plan).unwrap();
//! assert_eq!(report.variant, "async(4)+split(0.001)");
//! assert!(report.iteration_rate > 0.0);
//! ```
//!
//! # How the crate is laid out
//!
//! Data flows one way, and `tests/integration/layers.rs` holds every module to it: a
//! module imports only modules of earlier levels (docs/architecture.md).
//!
//! ```text
//! config -> plan -> engine: runtime | sim -> report -> experiment -> plot
//!             \-> noise plan -> parasites beside a real run
//! drive: plan -> engine -> report ([`run`]); the lab above it; cli on top
//! ```
//!
//! * `config`: `config.txt`, overrides and labels into a typed [`Config`].
//! * `plan`: the configuration on a machine, checked whole: the
//!   `problem` (geometry), the `topology` (sockets, cores, placement),
//!   the `noise` plan, the `engine` settings (for the simulator also its
//!   virtual machine).
//! * The engines: `runtime` (pinned threads, atomics, wall clock) and
//!   `sim` (virtual cores, virtual clock). Both drive one scheduling
//!   core, call the pure balancing decisions of `policy`, update
//!   subdomains with the `kernel`, and return an [`Outcome`];
//!   neither imports the other.
//! * `report`: an outcome with its plan, as one typed value (`forecast`
//!   adds the slowest-mode forecast). `drive` holds [`run`], plan ->
//!   engine -> report, with a real run's parasites beside it.
//!   `lbdata` writes a traced outcome as DARMA vt's LB data files and
//!   checks such files against vt's schema.
//! * Shared vocabulary: `variant` (paper labels), `engine` (what
//!   engines take and give), `noise` (how noise is described).
//!
//! Every module is private: what a user of the crate reaches is listed
//! below, re-exported at the root, in one place. The `braid` program
//! (the crate `braid-cli` at the repository's root: the command line and
//! the lab's suites, figures, tables, learned chooser, calibration and
//! validation) is built on this API alone; this crate does not know it
//! exists.

mod build;
mod busy;
mod child;
mod choice;
mod config;
mod drive;
mod engine;
mod forecast;
mod interrupt;
mod lbdata;
mod limits;
mod noise;
mod parasites;
mod plan;
mod policy;
pub mod probe;
mod problem;
#[cfg(feature = "mpi")]
mod ranks;
mod report;
mod rng;
mod runtime;
mod schedule;
mod sim;
mod subdomain;
mod suggest;
mod topology;
mod trace;
mod variant;
mod workload;

/// The 5-point Jacobi stencil sweeps (the `braid-kernel` crate).
pub use braid_kernel as kernel;

// Configure: `config.txt`, overrides and paper labels into a typed Config.
pub use choice::WithFile;
pub use config::{AutoOr, Config, ConfigError, document as config_document};
pub use variant::{BalancerKey, BalancerKind, Interval, Mode, Pick, Variant};
pub use workload::{Workload, WorkloadSpec, forms as workload_forms};

// Plan: the configuration on a machine, checked whole.
pub use noise::{NoiseForm, NoisePlan, ParasiteReport};
pub use plan::{Bytes, Plan, PlanError, sim_costs};
pub use problem::{Neighbour, Problem, SubdomainGeom, residual_norm, sequential_jacobi};
pub use topology::{
    Placement, SimTopology, Socket, SyntheticTopology, Topology, TopologyError, allowed_cores,
    format_list,
};

// Run: either engine, and what engines take and give.
pub use drive::{Beside, run};
pub use engine::{
    BalancerSettings, Clock, CoreTime, EFFORT_SAMPLES, Effort, EngineKind, Jitter, LbStats,
    MeasuredSpeeds, Numbers, Outcome, Policies, Progress, ProgressNow, Ran, RanksInfo, Scheme,
    SimCosts, StopReason, Tried, host_nodes,
};
pub use parasites::StartError;
#[cfg(feature = "mpi")]
pub use ranks::{Ranks, RanksError, Session as RankSession};
pub use runtime::MONITOR_PERIOD;
pub use sim::clock::RANGE_S as SIM_RANGE_S;
pub use sim::run as simulate;
pub use sim::slab_shape::blocks as slab_blocks;
pub use trace::TraceSample;

// Balance: the pure decisions, and what a policy of one's own builds on.
pub use policy::learned::{FEATURES, Learner, MAX_K, Model};
pub use policy::{
    Anticipate, Bounds, Greedy, HISTORY, Homes, LbStrategy, MIN_INTERVALS, Move, Named, Policy,
    Progressive, RECENT, Reading, Refine, ResidualFirst, Scope, Shift, Snapshot, Steal, Strategy,
    homeward, improves_beyond, improves_beyond_by, measured_away, paying,
};

// Report: an outcome with its plan, and the forecast beside it.
pub use build::Build;
pub use forecast::{Forecast, WorkloadForecast, mode_share, workload as forecast_workload};
pub use report::{EXIT_MISSED, Report};

// DARMA vt's LB data: written from a traced run, read as a workload.
pub use lbdata::read::schema::check as check_lb_data;
pub use lbdata::read::{Files as LbDataFiles, fill_gaps, phase_at, read_dir as read_lb_data};
pub use lbdata::write::{
    Encoding as LbEncoding, LbFile, Places, files as lb_data_files, write as write_lb_data,
};

// The process around a run: bounds, signals, children, the machine's load.
pub use busy::{CpuLoad, MachineLoad, busy_now, iso8601};
pub use child::{die_with_parent, kill_group};
pub use interrupt::Interrupt;
pub use limits::{
    MAX_CPUS, MAX_RECORD_BYTES, MAX_RESULTS_BYTES, MAX_SAMPLES, MAX_SECONDS, MAX_TEXT_BYTES,
    MAX_THREADS,
};
pub use rng::SplitMix64;
pub use suggest::{closest, hint};
