//! The `braid` program on the braid library: the command line (`cli`) and
//! the lab (`lab`: suites of runs, figures, tables, the learned chooser,
//! the simulator's calibration and validation, every published result
//! rerun). It uses the library's public API alone (the `braid` crate in
//! `lib/`), which does not know this crate exists.

mod cli;
mod lab;
mod watch;

/// The roofline figure the speed benchmark draws.
pub use lab::plot::roofline;
/// The speed benchmark's ratios against references and goals, and their figure.
pub use lab::plot::speed;

/// The `braid` command line: parses the process's arguments, runs the
/// command, and returns its exit status (what the `braid` binary runs).
pub fn main() -> std::process::ExitCode {
    cli::main()
}
