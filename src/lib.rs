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
//! Data flows one way, and `tests/layers.rs` holds every module to it: a
//! module imports only modules of earlier levels (docs/architecture.md).
//!
//! ```text
//! config -> plan -> engine: runtime | sim -> report -> experiment -> plot
//!             \-> noise plan -> parasites beside a real run
//! drive: plan -> engine -> report ([`run`]); the lab above it; cli on top
//! ```
//!
//! * [`config`]: `config.txt`, overrides and labels into a typed [`Config`].
//! * [`plan`]: the configuration on a machine, checked whole: the
//!   [`problem`] (geometry), the [`topology`] (sockets, cores, placement),
//!   the [`noise`] plan, the [`engine`] settings (for the simulator also its
//!   virtual machine).
//! * The engines: [`runtime`] (pinned threads, atomics, wall clock) and
//!   [`sim`] (virtual cores, virtual clock). Both drive one scheduling
//!   core, call the pure balancing decisions of [`policy`], update
//!   subdomains with the [`kernel`], and return an [`engine::Outcome`];
//!   neither imports the other.
//! * [`report`]: an outcome with its plan, as one typed value ([`forecast`]
//!   adds the slowest-mode forecast). [`drive`] holds [`run`], plan ->
//!   engine -> report, with a real run's parasites beside it.
//!   [`lbdata`] writes a traced outcome as DARMA vt's LB data files and
//!   checks such files against vt's schema.
//! * Shared vocabulary: [`variant`] (paper labels), [`engine`] (what
//!   engines take and give), [`noise`] (how noise is described).
//!
//! The lab (`src/lab/`: suites, figures, tables, the learned chooser,
//! calibration, validation) and the command line (`src/cli/`) are the
//! `braid` program's own, as are the scheduling core, subdomains and MPI
//! ranks.

#![warn(missing_docs)]

pub mod build;
pub mod busy;
pub(crate) mod child;
pub mod choice;
pub(crate) mod cli;
pub mod config;
pub mod drive;
pub mod engine;
pub mod interrupt;
pub use braid_kernel as kernel;
pub mod forecast;
pub(crate) mod lab;
pub mod lbdata;
pub(crate) mod limits;
pub mod noise;
pub(crate) mod parasites;
pub mod plan;
/// The roofline figure the speed benchmark draws.
pub use lab::plot::roofline;
/// The speed benchmark's ratios against references and goals, and their figure.
pub use lab::plot::speed;
pub mod policy;
pub mod probe;
pub mod problem;
#[cfg(feature = "mpi")]
pub(crate) mod ranks;
pub mod report;
pub(crate) mod rng;
pub mod runtime;
pub(crate) mod schedule;
pub mod sim;
pub(crate) mod subdomain;
pub mod suggest;
pub mod topology;
pub mod trace;
pub mod variant;
pub(crate) mod watch;
pub mod workload;

pub use config::Config;
pub use drive::run;
pub use parasites::StartError;
pub use plan::Plan;
pub use report::Report;

/// The `braid` command line: parses the process's arguments, runs the
/// command, and returns its exit status (what the `braid` binary runs).
pub fn main() -> std::process::ExitCode {
    cli::main()
}

/// A fresh, empty directory for a unit test, `braid-NAME-PID-N` under the
/// system's temporary directory, removed with everything in it when the
/// guard drops (a test run leaves nothing in /tmp, pass or fail).
#[cfg(test)]
pub(crate) struct Scratch(std::path::PathBuf);

#[cfg(test)]
impl std::ops::Deref for Scratch {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

#[cfg(test)]
impl AsRef<std::path::Path> for Scratch {
    fn as_ref(&self) -> &std::path::Path {
        &self.0
    }
}

#[cfg(test)]
impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// See [`Scratch`]: numbered per call, since tests run in parallel and
/// may share a name.
#[cfg(test)]
pub(crate) fn scratch_dir(name: &str) -> Scratch {
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("braid-{name}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    Scratch(dir)
}

#[cfg(test)]
mod scratch_tests {
    #[test]
    fn a_scratch_directory_is_gone_with_its_files_when_the_test_is_done() {
        let (a, b) = (super::scratch_dir("same"), super::scratch_dir("same"));
        assert_ne!(a.to_path_buf(), b.to_path_buf(), "one directory per call");
        std::fs::create_dir_all(a.join("deep")).unwrap();
        std::fs::write(a.join("deep/file"), "x").unwrap();
        let path = a.to_path_buf();
        drop(a);
        assert!(!path.exists(), "{} outlived its test", path.display());
        assert!(
            b.exists(),
            "dropping one scratch directory left the other alone"
        );
    }
}
