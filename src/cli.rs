//! The command line: parses arguments, runs the command, and maps failures
//! to exit statuses (2 for bad input, 1 for anything else).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};

use crate::config::Config;
use crate::engine::{Outcome, StopReason};
use crate::files::AtomicFile;
use crate::interrupt::Interrupt;
use crate::plan::{Numbers, Plan};
use crate::report::Report;
use crate::runtime;
use crate::sim::speeds::MeasuredSpeeds;
use crate::topology::Topology;

#[derive(Debug, Parser)]
#[command(
    name = "braid",
    version,
    about = "Asynchronous 2D Jacobi with progressive load balancing",
    long_about = "Asynchronous 2D Jacobi with progressive load balancing.\n\n\
                  Without a command, runs `braid run` on ./config.txt."
)]
pub struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the solver on real, pinned threads.
    Run(RunArgs),
    /// Simulate a run in virtual time on a synthetic machine (same keys as
    /// `run`, plus numerics and sim_*); deterministic.
    Sim(SimArgs),
    /// Run a suite of samples (experiments/*.toml), each as its own process,
    /// appending one JSON line per sample to a results file; resumable.
    Experiment(ExperimentArgs),
    /// Draw the paper's figures and Table 2 from results files.
    Plot(PlotArgs),
    /// Print the sockets, physical cores and logical CPUs braid detects (and
    /// how), and where N threads would be pinned. BRAID_SYSFS_ROOT=DIR reads
    /// a captured sysfs tree (DIR/devices/system/cpu) instead of /sys.
    Topology(TopologyArgs),
    /// Print every configuration key with its documentation and default, as
    /// `config.txt` (`braid config > my.txt` starts a configuration).
    Config,
    /// The process form of the noise parasite (what `noise = process` runs).
    #[command(name = "__parasite", hide = true)]
    Parasite(braid_noise::cli::NoiseArgs),
}

#[derive(Debug, Args)]
struct TopologyArgs {
    /// Threads to place (default: one per physical core)
    #[arg(long)]
    threads: Option<usize>,
    /// Print the topology and the placement as JSON (`cores`: the logical
    /// CPU of each thread, as in the run report)
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct SimArgs {
    /// Measure the simulator's costs on this machine and print them as
    /// config lines, then exit
    #[arg(long)]
    calibrate: bool,
    /// Replay the per-thread speeds a run measured (its JSON report, from a
    /// run with trace_interval > 0) on the simulated cores, with that run's
    /// configuration (noise and slow off: the speeds hold them); KEY=VALUE and
    /// --variant change it, e.g. another balancer
    #[arg(long, value_name = "REPORT.json", conflicts_with_all = ["calibrate", "config"])]
    replay_speeds: Option<PathBuf>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Debug, Args)]
struct ExperimentArgs {
    /// The suite file, e.g. experiments/landscape-run.toml
    #[arg(value_name = "SUITE.toml")]
    suite: PathBuf,
    /// Results file to append to [default: results/<suite file name>.jsonl]
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Repetitions of every sample, instead of the suite's own
    #[arg(long, value_name = "N")]
    repeat: Option<u32>,
}

#[derive(Debug, Args)]
struct PlotArgs {
    /// Results files written by `braid experiment`
    #[arg(value_name = "RESULTS.jsonl", required = true)]
    results: Vec<PathBuf>,
    /// Directory for the PNG, SVG, Markdown and CSV files (the default keeps
    /// clear of the committed plots/; `--out plots` redraws those)
    #[arg(long, value_name = "DIR", default_value = DEFAULT_PLOTS)]
    out: PathBuf,
}

#[derive(Debug, Args, Default)]
struct RunArgs {
    /// Configuration file [default: ./config.txt if present, else built-in
    /// defaults, which are the same]
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Paper label, e.g. sync, "ssync(30)", "async(4)+hybrid(0.001,500)";
    /// sets mode, staleness, subdomains and balancer
    #[arg(long, value_name = "LABEL")]
    variant: Option<String>,
    /// Write the JSON report to FILE (`-` = stdout, and nothing else goes there)
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write the final grid, boundary ring included, as a .npy array of f64
    #[arg(long, value_name = "FILE.npy")]
    grid: Option<PathBuf>,
    /// Overrides of config keys, applied last
    #[arg(value_name = "KEY=VALUE")]
    overrides: Vec<String>,
}

/// A failure and the exit status it deserves.
struct Failure {
    status: u8,
    error: anyhow::Error,
}

fn bad_input(error: impl Into<anyhow::Error>) -> Failure {
    Failure {
        status: 2,
        error: error.into(),
    }
}

impl From<anyhow::Error> for Failure {
    fn from(error: anyhow::Error) -> Self {
        Failure { status: 1, error }
    }
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        None => run(RunArgs::default(), Engine::Real, None),
        Some(Command::Run(args)) => run(args, Engine::Real, None),
        Some(Command::Sim(args)) if args.calibrate => {
            print!("{}", crate::calibrate::measure());
            Ok(())
        }
        Some(Command::Sim(args)) => run(args.run, Engine::Sim, args.replay_speeds.as_deref()),
        Some(Command::Experiment(args)) => experiment(args),
        Some(Command::Plot(args)) => plot(args),
        Some(Command::Topology(args)) => topology(&args),
        Some(Command::Config) => {
            print!("{}", crate::config::document());
            Ok(())
        }
        Some(Command::Parasite(args)) => return braid_noise::cli::main_with(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("braid: error: {}", sentence(&f.error));
            ExitCode::from(f.status)
        }
    }
}

fn load_config(args: &RunArgs) -> Result<Config, Failure> {
    let mut cfg = match &args.config {
        Some(path) => Config::from_file(path).map_err(bad_input)?,
        None if Path::new("config.txt").exists() => {
            Config::from_file(Path::new("config.txt")).map_err(bad_input)?
        }
        None => Config::default(),
    };
    if let Some(label) = &args.variant {
        cfg.apply_variant(label).map_err(bad_input)?;
    }
    cfg.apply_overrides(&args.overrides).map_err(bad_input)?;
    Ok(cfg)
}

/// An output chosen on the command line, opened before the run so that a
/// bad path fails in a second, not after a long run. A file is written to a
/// temporary sibling and renamed into place when complete
/// ([`crate::files::AtomicFile`]), so a failure leaves no partial file.
/// Nothing is left on disk during the run: the probe's temporary is removed
/// at once, so a run killed mid-way leaves no file behind.
enum Output {
    Stdout,
    File(PathBuf),
}

impl Output {
    fn open(path: &Path, what: &str) -> Result<Output, Failure> {
        if path == Path::new("-") {
            return Ok(Output::Stdout);
        }
        AtomicFile::create(path)
            .with_context(|| format!("cannot create the {what} file {}", path.display()))
            .map_err(bad_input)?;
        Ok(Output::File(path.to_path_buf()))
    }

    fn write(
        self,
        what: &str,
        f: impl FnOnce(&mut dyn Write) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        match self {
            Output::Stdout => f(&mut std::io::stdout().lock()),
            Output::File(path) => AtomicFile::create(&path)
                .map_err(anyhow::Error::from)
                .and_then(|mut file| {
                    f(&mut file)?;
                    file.commit()?;
                    Ok(())
                })
                .with_context(|| format!("cannot write the {what} to {}", path.display())),
        }
    }
}

/// The message of an error and its causes, each cause once: a cause whose
/// text its parent already includes is not repeated.
fn sentence(error: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in error.chain() {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&cause);
        }
    }
    text
}

/// `braid topology`: the machine, and where threads would go.
fn topology(args: &TopologyArgs) -> Result<(), Failure> {
    let topo = Topology::detect();
    let threads = args.threads.unwrap_or_else(|| topo.physical_cores());
    if threads == 0 {
        return Err(bad_input(anyhow::anyhow!("--threads must be at least 1")));
    }
    let placement = topo.place(threads, false).map_err(bad_input)?;
    if args.json {
        #[derive(serde::Serialize)]
        struct Shown<'a> {
            topology: &'a Topology,
            threads: usize,
            cores: &'a [usize],
            thread_sockets: &'a [usize],
        }
        let shown = Shown {
            topology: &topo,
            threads,
            cores: &placement.cores,
            thread_sockets: &placement.sockets,
        };
        let text = serde_json::to_string_pretty(&shown).map_err(|e| Failure {
            status: 1,
            error: e.into(),
        })?;
        println!("{text}");
    } else {
        print!("{topo}");
        println!(
            "{threads} thread(s) pinned to CPUs {}",
            pinned_list(&placement)
        );
    }
    Ok(())
}

/// `0-3 (socket 0), 4-7 (socket 1)`
fn pinned_list(p: &crate::topology::Placement) -> String {
    let mut runs: Vec<(usize, Vec<usize>)> = Vec::new();
    for (&cpu, &socket) in p.cores.iter().zip(&p.sockets) {
        match runs.last_mut() {
            Some((s, cpus)) if *s == socket => cpus.push(cpu),
            _ => runs.push((socket, vec![cpu])),
        }
    }
    runs.iter()
        .map(|(s, cpus)| format!("{} (socket {s})", crate::topology::format_list(cpus)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Which engine runs the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Engine {
    Real,
    Sim,
}

/// How many ranks a launcher (`mpirun`, `mpiexec`) started this process
/// among, from its environment, without starting MPI: more than one means
/// a run across ranks.
fn launched_ranks() -> Option<usize> {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.parse().ok())
        .filter(|&n: &usize| n > 1)
}

fn run(args: RunArgs, engine: Engine, replay: Option<&Path>) -> Result<(), Failure> {
    if let Some(ranks) = launched_ranks() {
        if engine != Engine::Real || replay.is_some() {
            return Err(bad_input(anyhow::anyhow!(
                "launched as one of {ranks} ranks: only `braid run` runs across ranks (the \
                 simulator runs in one process)"
            )));
        }
        return across_ranks(args, ranks);
    }
    let (cfg, speeds) = match replay {
        Some(file) => {
            let (cfg, speeds) = replayed(file, &args)?;
            (cfg, Some(speeds))
        }
        None => (load_config(&args)?, None),
    };
    let mut plan = plan_for(&cfg, engine, &args, speeds)?;
    let (json, grid) = open_outputs(&args)?;
    // From here on, Ctrl-C or SIGTERM ends the run cleanly: it stops, the
    // parasites are reaped, and the report and grid are still written.
    plan.settings.interrupt = Interrupt::install()
        .context("cannot install the SIGINT/SIGTERM handlers")
        .map_err(Failure::from)?;
    eprintln!(
        "braid: {} {} on {} thread(s), {} x {} grid...",
        match engine {
            Engine::Real => "running",
            Engine::Sim => "simulating",
        },
        plan.config.variant(),
        plan.problem.threads,
        plan.problem.height,
        plan.problem.width
    );
    let (outcome, noise) = match engine {
        Engine::Real => {
            let parasites = match &plan.noise {
                Some(noise) => Some(crate::noise::start(noise).map_err(bad_input)?),
                None => None,
            };
            let outcome = runtime::run(&plan.problem, &plan.placement, &plan.settings);
            (outcome, parasites.and_then(crate::noise::Running::stop))
        }
        Engine::Sim => crate::sim::run(&plan),
    };
    let report = Report::new(&plan, &outcome, noise);
    publish(&args, &report, &outcome, json, grid)?;
    ending(plan.settings.interrupt.signal(), outcome.stop)
}

/// Prints the summary (to stderr when the report goes to stdout) and
/// writes the outputs.
fn publish(
    args: &RunArgs,
    report: &Report,
    outcome: &Outcome,
    json: Option<Output>,
    grid: Option<Output>,
) -> Result<(), Failure> {
    if args.json.as_deref() == Some(Path::new("-")) {
        eprint!("{report}");
    } else {
        print!("{report}");
    }
    write_outputs(json, grid, report, outcome)
}

#[cfg(not(feature = "mpi"))]
fn across_ranks(_: RunArgs, ranks: usize) -> Result<(), Failure> {
    Err(bad_input(anyhow::anyhow!(
        "launched as one of {ranks} ranks, but this braid was built without the `mpi` \
         feature: build it with `cargo build --release --features mpi`"
    )))
}

/// `mpirun -n R braid run ...`: this rank's part of a run across ranks
/// (`crate::ranks`). Every rank plans and checks the same configuration;
/// a rank that cannot start makes them all stop before anything runs, and
/// only rank 0 prints and writes the outputs.
#[cfg(feature = "mpi")]
fn across_ranks(args: RunArgs, _: usize) -> Result<(), Failure> {
    let session = crate::ranks::Session::start().map_err(bad_input)?;
    let planned = load_config(&args).and_then(|cfg| plan_for(&cfg, Engine::Real, &args, None));
    let mut plan = all_ranks_agree(&session, planned)?;
    let ranks = session.plan(&mut plan).map_err(bad_input)?;
    // Rank 0 gathers the whole grid at the end of each epoch: about what
    // one process running the whole problem holds.
    let gathers = match session.rank {
        0 => plan.check_memory(Numbers::Held).map_err(bad_input),
        _ => Ok(()),
    };
    all_ranks_agree(&session, gathers)?;
    let outputs = match session.rank {
        0 => open_outputs(&args),
        _ => Ok((None, None)),
    };
    let (json, grid) = all_ranks_agree(&session, outputs)?;
    plan.settings.interrupt = Interrupt::install()
        .context("cannot install the SIGINT/SIGTERM handlers")
        .map_err(Failure::from)?;
    if session.rank == 0 {
        eprintln!(
            "braid: running {} on {} ranks x {} thread(s), {} x {} grid...",
            plan.config.variant(),
            session.size,
            plan.placement.threads() / session.size,
            plan.problem.height,
            plan.problem.width
        );
    }
    let outcome = runtime::run_ranks(&plan.problem, &plan.placement, &plan.settings, &ranks);
    if session.rank == 0 {
        let report = Report::new(&plan, &outcome, None);
        publish(&args, &report, &outcome, json, grid)?;
    }
    ending(plan.settings.interrupt.signal(), outcome.stop)
}

/// This rank's `own` result, once every rank has said whether it can go on:
/// a rank that cannot must not leave the others waiting for it.
#[cfg(feature = "mpi")]
fn all_ranks_agree<T>(
    session: &crate::ranks::Session,
    own: Result<T, Failure>,
) -> Result<T, Failure> {
    let all = session.all_ok(own.is_ok());
    match own {
        Ok(_) if !all => Err(bad_input(anyhow::anyhow!(
            "another rank refused the run (its message says why)"
        ))),
        own => own,
    }
}

/// `--replay-speeds`: the report's configuration, noise and the slow hook
/// off (the measured speeds hold them), then `--variant` and the overrides;
/// and the speeds.
fn replayed(file: &Path, args: &RunArgs) -> Result<(Config, MeasuredSpeeds), Failure> {
    let context = || format!("--replay-speeds {}", file.display());
    let text = crate::files::read_text(file, crate::limits::MAX_RESULTS_BYTES)
        .with_context(context)
        .map_err(bad_input)?;
    let report: Report = serde_json::from_str(&text)
        .with_context(|| format!("{}: not a braid run report", context()))
        .map_err(bad_input)?;
    let samples = report.trace.as_deref().unwrap_or_default();
    let speeds = MeasuredSpeeds::from_trace(file.to_path_buf(), report.threads, samples)
        .with_context(context)
        .map_err(bad_input)?;
    let mut cfg = report.config;
    cfg.noise = crate::config::NoiseMode::None;
    cfg.slow = None;
    if let Some(label) = &args.variant {
        cfg.apply_variant(label).map_err(bad_input)?;
    }
    cfg.apply_overrides(&args.overrides).map_err(bad_input)?;
    Ok((cfg, speeds))
}

/// The plan of a run, with every check made before anything starts.
fn plan_for(
    cfg: &Config,
    engine: Engine,
    args: &RunArgs,
    speeds: Option<MeasuredSpeeds>,
) -> Result<Plan, Failure> {
    let machine = match engine {
        Engine::Real => Topology::detect(),
        Engine::Sim => Topology::simulated(&cfg.sim_topology).map_err(bad_input)?,
    };
    let mut plan = Plan::new(cfg, &machine).map_err(bad_input)?;
    plan.speeds = speeds.map(std::sync::Arc::new);
    let numbers = match engine {
        Engine::Sim => plan.sim_numbers(),
        Engine::Real => Numbers::Held,
    };
    plan.check_memory(numbers).map_err(bad_input)?;
    if engine == Engine::Sim {
        crate::sim::check(&plan).map_err(bad_input)?;
        if args.grid.is_some() && !plan.config.numerics {
            return Err(bad_input(anyhow::anyhow!(
                "--grid needs numerics = true in the simulator"
            )));
        }
    }
    Ok(plan)
}

/// Checks and opens `--json` and `--grid` before the run, so a bad path
/// costs nothing.
fn open_outputs(args: &RunArgs) -> Result<(Option<Output>, Option<Output>), Failure> {
    if args.grid.as_deref() == Some(Path::new("-")) {
        return Err(bad_input(anyhow::anyhow!(
            "--grid needs a file name, not `-`"
        )));
    }
    if let (Some(j), Some(g)) = (&args.json, &args.grid)
        && same_file(j, g)
    {
        return Err(bad_input(anyhow::anyhow!(
            "--json and --grid name the same file ({}); give each its own",
            g.display()
        )));
    }
    let open = |path: &Option<PathBuf>, what| path.as_deref().map(|p| Output::open(p, what));
    Ok((
        open(&args.json, "report").transpose()?,
        open(&args.grid, "grid").transpose()?,
    ))
}

/// Writes both outputs even if one fails, so no result is lost needlessly.
fn write_outputs(
    json: Option<Output>,
    grid: Option<Output>,
    report: &Report,
    outcome: &Outcome,
) -> Result<(), Failure> {
    let mut errors = Vec::new();
    if let Some(out) = json
        && let Err(e) = out.write("report", |w| {
            serde_json::to_writer_pretty(&mut *w, report)?;
            writeln!(w)?;
            Ok(())
        })
    {
        errors.push(e);
    }
    if let Some(out) = grid
        && let Err(e) = out.write("grid", |w| {
            let grid = outcome.grid.as_ref().ok_or_else(|| {
                anyhow::anyhow!("no grid: the simulation ran with numerics = false")
            })?;
            ndarray_npy::WriteNpyExt::write_npy(grid, w)?;
            Ok(())
        })
    {
        errors.push(e);
    }
    match errors.into_iter().next() {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

/// The exit of a run that was reported: an interrupt's status, or 1 for a
/// run that failed (a worker's panic, a simulated deadlock).
fn ending(signal: Option<i32>, stop: StopReason) -> Result<(), Failure> {
    match (signal, stop) {
        (Some(signal), _) => Err(Failure {
            status: Interrupt::exit_status(signal),
            error: anyhow::anyhow!(
                "interrupted by signal {signal}; the report says how far it got"
            ),
        }),
        (None, stop) if stop.is_failure() => Err(anyhow::anyhow!(
            "the run ended with {}; see the report",
            serde_json::to_value(stop).map_or_else(|_| format!("{stop:?}"), |v| v.to_string())
        )
        .into()),
        (None, _) => Ok(()),
    }
}

/// Whether two paths name one file (the same text, or the same existing
/// file by another name).
fn same_file(a: &Path, b: &Path) -> bool {
    a == b
        || match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
}

fn experiment(args: ExperimentArgs) -> Result<(), Failure> {
    use crate::experiment::{self, ExperimentError, suite::LoadedSuite};
    let classify = |e: ExperimentError| Failure {
        status: if e.is_bad_input() { 2 } else { 1 },
        error: e.into(),
    };
    if args.repeat == Some(0) {
        return Err(bad_input(anyhow::anyhow!("--repeat must be at least 1")));
    }
    let suite = LoadedSuite::load(&args.suite, args.repeat).map_err(classify)?;
    let out = args.out.unwrap_or_else(|| {
        let stem = args.suite.file_stem().unwrap_or_default();
        Path::new("results").join(stem).with_extension("jsonl")
    });
    // Ctrl-C or SIGTERM kills the sample in flight (its whole process
    // group) and ends the suite; what finished stays in the results file.
    let interrupt = Interrupt::install()
        .context("cannot install the SIGINT/SIGTERM handlers")
        .map_err(Failure::from)?;
    let s = experiment::run(&suite, &out, &interrupt).map_err(classify)?;
    eprintln!(
        "braid: suite `{}`: {} sample(s): {} done before, {} ok now, {} failed{}; results in {}",
        suite.suite.name,
        s.total,
        s.skipped,
        s.ok,
        s.failed,
        if s.retried > 0 {
            format!(" ({} run again after failing before)", s.retried)
        } else {
            String::new()
        },
        out.display()
    );
    if let Some(signal) = s.interrupted {
        return Err(Failure {
            status: Interrupt::exit_status(signal),
            error: anyhow::anyhow!(
                "interrupted by signal {signal}; the sample in flight was killed and is not \
                 recorded; run the same command to resume"
            ),
        });
    }
    if s.failed > 0 {
        return Err(anyhow::anyhow!(
            "{} sample(s) failed (recorded with their errors in {})",
            s.failed,
            out.display()
        )
        .into());
    }
    Ok(())
}

/// Where `braid plot` draws by default.
const DEFAULT_PLOTS: &str = "results/plots";

fn plot(args: PlotArgs) -> Result<(), Failure> {
    // Our own default may be made whole (results/ is missing in a fresh
    // clone); a directory the user names must have an existing parent.
    if args.out == Path::new(DEFAULT_PLOTS) {
        std::fs::create_dir_all(&args.out)
            .with_context(|| format!("cannot create {DEFAULT_PLOTS}"))
            .map_err(bad_input)?;
    }
    let written = crate::plot::plot_all(&args.results, &args.out).map_err(|e| Failure {
        status: if e.is_bad_input() { 2 } else { 1 },
        error: e.into(),
    })?;
    for path in written {
        println!("{}", path.display());
    }
    Ok(())
}
