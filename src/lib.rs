//! braid: a shared-memory asynchronous 2D Jacobi solver with progressive
//! load balancing (Zarins & Weiland, IA3 2017), built for experiments on
//! multi-socket nodes.
//!
//! Data flows one way: a module imports only those to its left and the
//! shared vocabulary below, never one to its right. (`config` parses straight
//! into the leaf types it configures: `engine`'s hooks, `sim::SimCosts`,
//! `topology::SyntheticTopology`; those leaves import nothing from braid.)
//!
//! ```text
//! config -> plan -> engine: runtime | sim -> report -> experiment -> plot
//!             \-> noise (parasites beside the engines)      cli drives it all
//! ```
//!
//! * [`config`]: `config.txt`, overrides and labels into a typed [`config::Config`].
//! * [`plan`]: the configuration on a machine: [`problem`] (geometry),
//!   [`topology`] (sockets, cores, placement), [`noise`] (parasites), the
//!   policy and the [`engine::Settings`].
//! * The engines: [`runtime`] (pinned threads, atomics, wall clock) and
//!   [`sim`] (virtual cores, virtual clock). Both drive the one
//!   [`schedule`] core, call the pure [`policy`], update [`subdomain`]s
//!   with the [`kernel`], and return an [`engine::Outcome`]; neither
//!   imports the other (one test in `runtime` drives both balancers side by
//!   side). [`calibrate`] measures the runtime's costs for the simulator.
//!   Across MPI ranks (feature `mpi`), `ranks` gives the runtime its peers
//!   (`runtime::peers`): the same runtime, one process per rank.
//! * [`report`]: an outcome with its plan, as one typed value ([`model`]
//!   adds the slowest-mode forecast); [`experiment`] runs suites of them and
//!   [`plot`] draws the figures.
//! * Shared vocabulary, imported anywhere: [`variant`] (paper labels),
//!   [`engine`] (what engines take and give), [`limits`] (every bound).
//! * At the edges: [`cli`], [`files`] (atomic writes, bounded reads),
//!   [`interrupt`] (SIGINT/SIGTERM), [`child`] (processes that die with
//!   their parent).

pub mod calibrate;
pub mod child;
pub mod cli;
pub mod config;
pub mod engine;
pub mod experiment;
pub mod files;
pub mod interrupt;
pub mod kernel;
pub mod limits;
pub mod model;
pub mod noise;
pub mod parasites;
pub mod plan;
pub mod plot;
pub mod policy;
pub mod problem;
#[cfg(feature = "mpi")]
pub mod ranks;
pub mod report;
pub mod rng;
pub mod runner;
pub mod runtime;
pub mod schedule;
pub mod sim;
pub mod subdomain;
pub mod topology;
pub mod variant;

pub use config::Config;
pub use plan::Plan;
pub use report::Report;
pub use runner::run;
