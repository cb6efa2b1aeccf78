//! The command line: parses arguments, hands each command to the module
//! that does it (a run to `runner`, a suite to `experiment`, figures to
//! `plot`), and maps failures to exit statuses (2 for bad input, 128 + N
//! for signal N, 1 for anything else).

pub(crate) mod runner;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};

use braid::EngineKind;
use braid::Interrupt;
use braid::Topology;
use runner::{Failure, Request};

#[derive(Debug, Parser)]
#[command(
    name = "braid",
    version,
    about = "Asynchronous 2D Jacobi with progressive load balancing",
    long_about = "Asynchronous 2D Jacobi with progressive load balancing.\n\n\
                  Without a command, runs `braid run` on ./config.txt."
)]
pub(crate) struct Cli {
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
    /// Results files as one tidy CSV table, a row per sample with the same
    /// columns for every suite (docs/experiments.md#tidy-tables).
    Table(TableArgs),
    /// Train a strategy chooser on simulated results (balancer =
    /// learned:MODEL.json), or evaluate one on held-out results
    /// (docs/learned.md).
    Learn(LearnArgs),
    /// Check the simulator against this machine: calibrate it, run a small
    /// matrix in both engines, print real against simulated with a verdict
    /// per row, and write the calibration and the results (docs/simulator.md,
    /// "Checking the simulator against this machine")
    Validate(ValidateArgs),
    /// Rerun every published figure's suites (plots/published.toml) with
    /// this binary and compare with their committed records: simulated ones
    /// value for value, real-machine ones (with --machine) against their
    /// intervals; exits 1 when a published result moved
    /// (docs/experiments.md#reproducing-every-published-result)
    Reproduce(ReproduceArgs),
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
struct ValidateArgs {
    /// 3 repetitions of each real run instead of 7 (about 30 s at
    /// domain_size=150 on 2 cores)
    #[arg(long)]
    quick: bool,
    /// Directory for calibration.txt, validation.md and validation.json
    #[arg(long, value_name = "DIR", default_value = "validation")]
    out: PathBuf,
    /// The recorded noise trace of the third condition [default:
    /// noise/traces/vm-parasite19-core0.trace, if run from braid's repository]
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Configuration file of the runs to validate [default: ./config.txt if
    /// present, else built-in defaults]
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Overrides of config keys, applied last (e.g. domain_size=64)
    #[arg(value_name = "KEY=VALUE")]
    overrides: Vec<String>,
}

#[derive(Debug, Args)]
struct ReproduceArgs {
    /// The published sets to rerun, by name (default: all of them)
    #[arg(value_name = "SET")]
    sets: Vec<String>,
    /// Only the quick sets: the simulated suites the README's figures rest
    /// on (about two minutes here; what .ci/run checks)
    #[arg(long)]
    quick: bool,
    /// Rerun the real-machine suites too, on this machine (quiet it first),
    /// and compare each setting with the committed runs' interval
    #[arg(long)]
    machine: bool,
    /// Write the reruns' records where the committed ones are and redraw
    /// the sets' figures (only from a build of a clean commit)
    #[arg(long)]
    update: bool,
    /// Only redraw every set's figures from its committed records (after a
    /// change to how figures are drawn); nothing is rerun or compared
    #[arg(long, conflicts_with_all = ["update", "machine"])]
    redraw: bool,
    /// Directory for the reruns' results files (a rerun interrupted resumes
    /// from them)
    #[arg(long, value_name = "DIR", default_value = "results/reproduce")]
    out: PathBuf,
}

#[derive(Debug, Args)]
struct TopologyArgs {
    /// Threads to place (default: one per physical core)
    #[arg(long)]
    threads: Option<usize>,
    /// Place more threads than CPUs, several per CPU (as `oversubscribe =
    /// true` in a run)
    #[arg(long)]
    oversubscribe: bool,
    /// Print the topology and the placement as JSON (`cores`: the logical
    /// CPU of each thread, as in the run report)
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct SimArgs {
    /// Measure the simulator's costs on this machine, for runs like the
    /// configuration's (its threads, subdomains, balancer interval), and
    /// print them as config lines, then exit
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
    /// Check the suite and every sample's configuration, then stop: nothing
    /// runs and nothing is written
    #[arg(long, conflicts_with_all = ["out", "jobs"])]
    check: bool,
    /// A simulated suite's samples run N at a time, each its own process
    /// (a real machine's always run one at a time) [default: 1]
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    jobs: u16,
}

#[derive(Debug, Args)]
struct PlotArgs {
    /// Results files written by `braid experiment`, or a `validation.json`
    /// of `braid validate` (redrawn as validation.png and .svg), or the
    /// `speed.json` and `roofline.json` of `cargo bench --bench compare`
    #[arg(value_name = "RESULTS.jsonl", required = true)]
    results: Vec<PathBuf>,
    /// Directory for the PNG, SVG, Markdown and CSV files (the default keeps
    /// clear of the committed plots/; `--out plots` redraws those)
    #[arg(long, value_name = "DIR", default_value = DEFAULT_PLOTS)]
    out: PathBuf,
    /// Records of one suite from several builds of braid: draw each build's
    /// on their own, into a folder of DIR named for the build (without it
    /// they are refused, so that no figure mixes two programs' numbers)
    #[arg(long)]
    apart: bool,
}

#[derive(Debug, Args)]
struct TableArgs {
    /// Results files written by `braid experiment`
    #[arg(value_name = "RESULTS.jsonl", required = true)]
    results: Vec<PathBuf>,
    /// The CSV file to write (`-`: standard output)
    #[arg(long, value_name = "FILE", default_value = "-")]
    csv: PathBuf,
}

#[derive(Debug, Args)]
struct LearnArgs {
    /// Results files of `braid experiment` with engine = "sim": each
    /// instance run with several fixed strategies
    #[arg(value_name = "RESULTS.jsonl", required = true)]
    results: Vec<PathBuf>,
    /// Where to write the trained model
    #[arg(long, value_name = "MODEL.json", required_unless_present = "evaluate")]
    out: Option<PathBuf>,
    /// Instead of training, evaluate this model on the results: its
    /// accuracy, and each balancer's regret against the best per instance
    #[arg(long, value_name = "MODEL.json", conflicts_with = "out")]
    evaluate: Option<PathBuf>,
    /// With --evaluate: also draw the regrets as `regret-STEM.png` and
    /// `.svg` in this directory (STEM: the first results file's)
    #[arg(long, value_name = "DIR", requires = "evaluate")]
    plot: Option<PathBuf>,
    /// Neighbours that vote (1: each training instance's own best)
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=braid::MAX_K as i64))]
    k: u16,
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
    /// Write the run's object loads as DARMA vt LB data files, one
    /// data.<PE>.json per thread, into DIR (created if missing); phases are
    /// trace_interval's windows, else the balancer's interval, else 1 ms
    #[arg(long, value_name = "DIR")]
    lb_data: Option<PathBuf>,
    /// Write the LB data brotli-compressed, as vt does by default (same
    /// names; vt, LBAF and braid read both)
    #[arg(long, requires = "lb_data")]
    lb_data_compress: bool,
    /// Overrides of config keys, applied last
    #[arg(value_name = "KEY=VALUE")]
    overrides: Vec<String>,
}

/// The exit status a failure deserves: 2 for bad input, 3 for a tolerance
/// missed, the shell's 128 + N for signal N, 1 for anything else.
fn status(f: &Failure) -> u8 {
    match f {
        Failure::BadInput(_) => 2,
        Failure::Failed(_) => 1,
        Failure::Missed(_) => runner::EXIT_MISSED,
        Failure::Interrupted { signal, .. } => Interrupt::exit_status(*signal),
    }
}

fn bad_input(error: impl Into<anyhow::Error>) -> Failure {
    Failure::BadInput(error.into())
}

impl RunArgs {
    fn request(self, replay: Option<PathBuf>) -> Request {
        Request {
            config: self.config,
            variant: self.variant,
            json: self.json,
            grid: self.grid,
            lb_data: self.lb_data,
            lb_data_encoding: match self.lb_data_compress {
                true => braid::LbEncoding::Brotli,
                false => braid::LbEncoding::Json,
            },
            overrides: self.overrides,
            replay,
        }
    }
}

/// The `braid` command line: parses the arguments, runs the command, and
/// exits with its status.
pub(crate) fn main() -> ExitCode {
    if let Some(hint) = missing_command(std::env::args_os().skip(1)) {
        eprintln!("braid: error: {hint}");
        return ExitCode::from(2);
    }
    let cli = Cli::parse();
    let result = match cli.command {
        None => runner::command(&RunArgs::default().request(None), EngineKind::Run),
        Some(Command::Run(args)) => runner::command(&args.request(None), EngineKind::Run),
        Some(Command::Sim(args)) if args.calibrate => runner::calibrate(&args.run.request(None)),
        Some(Command::Sim(args)) => {
            let replay = args.replay_speeds;
            runner::command(&args.run.request(replay), EngineKind::Sim)
        }
        Some(Command::Experiment(args)) => experiment(args),
        Some(Command::Plot(args)) => plot(args),
        Some(Command::Table(args)) => table(&args),
        Some(Command::Learn(args)) => learn(&args),
        Some(Command::Validate(args)) => validate(args),
        Some(Command::Reproduce(args)) => reproduce(args),
        Some(Command::Topology(args)) => topology(&args),
        Some(Command::Config) => {
            runner::show(&braid::config_document());
            Ok(())
        }
        Some(Command::Parasite(args)) => return braid_noise::cli::main_with(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("braid: error: {}", sentence(f.error()));
            ExitCode::from(status(&f))
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

/// `braid validate`: the simulator against this machine.
fn validate(args: ValidateArgs) -> Result<(), Failure> {
    let req = runner::Request {
        config: args.config,
        overrides: args.overrides,
        ..runner::Request::default()
    };
    let cfg = runner::load_config(&req)?;
    let opts = crate::lab::validate::Options {
        quick: args.quick,
        out: args.out,
        trace: args.trace,
    };
    let interrupt = Interrupt::install()
        .map_err(|e| Failure::Failed(anyhow::anyhow!("cannot install the signal handlers: {e}")))?;
    match crate::lab::validate::validate(&cfg, &opts, &interrupt) {
        Ok(v) => {
            runner::show(&v.summary());
            eprintln!(
                "braid validate: wrote calibration.txt, validation.md, validation.json and \
                 validation.png and .svg in {}",
                opts.out.display()
            );
            Ok(())
        }
        Err(crate::lab::validate::ValidateError::Interrupted(signal)) => {
            Err(Failure::Interrupted {
                signal,
                error: anyhow::anyhow!(
                    "braid validate stopped by signal {signal}: nothing written"
                ),
            })
        }
        Err(e) if e.is_bad_input() => Err(bad_input(anyhow::Error::new(e))),
        Err(e) => Err(Failure::Failed(anyhow::Error::new(e))),
    }
}

/// `braid reproduce`: every published result rerun and compared.
fn reproduce(args: ReproduceArgs) -> Result<(), Failure> {
    use crate::lab::reproduce::{self, Options, ReproduceError};
    let opts = Options {
        root: PathBuf::from("."),
        names: args.sets,
        quick: args.quick,
        machine: args.machine,
        update: args.update,
        redraw: args.redraw,
        out: args.out,
    };
    let interrupt = Interrupt::install()
        .map_err(|e| Failure::Failed(anyhow::anyhow!("cannot install the signal handlers: {e}")))?;
    let outcomes = match reproduce::reproduce(&opts, &interrupt, |o| {
        runner::show(&o.to_string());
    }) {
        Ok(o) => o,
        Err(ReproduceError::Interrupted(signal)) => {
            return Err(Failure::Interrupted {
                signal,
                error: anyhow::anyhow!(
                    "braid reproduce stopped by signal {signal}; run it again to resume"
                ),
            });
        }
        Err(e) if e.is_bad_input() => return Err(bad_input(anyhow::Error::new(e))),
        Err(e) => return Err(Failure::Failed(anyhow::Error::new(e))),
    };
    let failed: Vec<&str> = (outcomes.iter())
        .filter(|o| o.failed())
        .map(|o| o.name.as_str())
        .collect();
    eprintln!(
        "braid reproduce: {} set(s) checked, {} failed{}",
        outcomes.len(),
        failed.len(),
        match failed.is_empty() {
            true => String::new(),
            false => format!(" ({})", failed.join(", ")),
        }
    );
    match failed.is_empty() {
        true => Ok(()),
        false => Err(Failure::Failed(anyhow::anyhow!(
            "published results moved or cannot stand: regenerate them (braid reproduce --update \
             from a clean commit) with the text that quotes them, in one change"
        ))),
    }
}

/// `braid topology`: the machine, and where threads would go.
fn topology(args: &TopologyArgs) -> Result<(), Failure> {
    let topo = Topology::detect().map_err(bad_input)?;
    let threads = args.threads.unwrap_or_else(|| topo.physical_cores());
    if threads == 0 {
        return Err(bad_input(anyhow::anyhow!("--threads must be at least 1")));
    }
    let placement = topo.place(threads, args.oversubscribe).map_err(bad_input)?;
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
        let text = serde_json::to_string_pretty(&shown).map_err(|e| Failure::Failed(e.into()))?;
        runner::show(&format!("{text}\n"));
    } else {
        runner::show(&format!(
            "{topo}{threads} thread(s) pinned to CPUs {}\n",
            pinned_list(&placement)
        ));
    }
    Ok(())
}

/// `0-3 (socket 0), 4-7 (socket 1)`
fn pinned_list(p: &braid::Placement) -> String {
    let mut runs: Vec<(usize, Vec<usize>)> = Vec::new();
    for (&cpu, &socket) in p.cores.iter().zip(&p.sockets) {
        match runs.last_mut() {
            Some((s, cpus)) if *s == socket => cpus.push(cpu),
            _ => runs.push((socket, vec![cpu])),
        }
    }
    runs.iter()
        .map(|(s, cpus)| format!("{} (socket {s})", braid::format_list(cpus)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn experiment(args: ExperimentArgs) -> Result<(), Failure> {
    use crate::lab::experiment::{self, ExperimentError, suite::LoadedSuite};
    let classify = |e: ExperimentError| match e.is_bad_input() {
        true => Failure::BadInput(e.into()),
        false => Failure::Failed(e.into()),
    };
    if args.repeat == Some(0) {
        return Err(bad_input(anyhow::anyhow!("--repeat must be at least 1")));
    }
    let suite = LoadedSuite::load(&args.suite, args.repeat).map_err(classify)?;
    if args.check {
        experiment::check(&suite).map_err(classify)?;
        let n = suite.samples().len();
        eprintln!(
            "braid: suite `{}`: {n} sample(s), each configuration checked; nothing run",
            suite.suite.name
        );
        return Ok(());
    }
    let out = args.out.unwrap_or_else(|| {
        let stem = args.suite.file_stem().unwrap_or_default();
        Path::new("results").join(stem).with_extension("jsonl")
    });
    // Ctrl-C or SIGTERM kills the sample in flight (its whole process
    // group) and ends the suite; what finished stays in the results file.
    let interrupt = Interrupt::install().context("cannot install the SIGINT/SIGTERM handlers")?;
    let s = experiment::run(&suite, &out, &interrupt, usize::from(args.jobs)).map_err(classify)?;
    eprintln!(
        "braid: suite `{}`: {} sample(s): {} done before, {} ok now{}, {} failed{}; results in {}",
        suite.suite.name,
        s.total,
        s.skipped,
        s.ok,
        if s.missed > 0 {
            format!(" ({} of them stopped before their tolerance)", s.missed)
        } else {
            String::new()
        },
        s.failed,
        if s.retried > 0 {
            format!(" ({} run again after failing before)", s.retried)
        } else {
            String::new()
        },
        out.display()
    );
    if let Some(signal) = s.interrupted {
        return Err(Failure::Interrupted {
            signal,
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

/// `braid table`: the results as one CSV.
fn table(args: &TableArgs) -> Result<(), Failure> {
    let rows =
        crate::lab::table::write(&args.results, &args.csv).map_err(|e| match e.is_bad_input() {
            true => Failure::BadInput(e.into()),
            false => Failure::Failed(e.into()),
        })?;
    if args.csv != Path::new("-") {
        eprintln!("braid: {rows} row(s) written to {}", args.csv.display());
    }
    Ok(())
}

/// `braid learn`: train a chooser, or evaluate one.
fn learn(args: &LearnArgs) -> Result<(), Failure> {
    use crate::lab::learn;
    let bad = |e: learn::LearnError| Failure::BadInput(e.into());
    // What can be refused is refused before the probes run.
    let model = match &args.evaluate {
        Some(file) => Some(
            braid::Model::read(file)
                .with_context(|| format!("{}", file.display()))
                .map_err(bad_input)?,
        ),
        None => None,
    };
    learn_outputs_writable(args)?;
    let instances = learn::instances(&args.results).map_err(bad)?;
    eprintln!(
        "braid: {} instance(s); measuring their features in the simulator...",
        instances.len()
    );
    let probed = |done: usize, of: usize| eprint!("\rbraid: probed {done}/{of} instance(s)");
    if let Some(model) = &model {
        let e = learn::evaluate(model, &instances, probed).map_err(bad)?;
        eprintln!();
        return print_evaluation(args, &e);
    }
    let out = args
        .out
        .as_ref()
        .expect("clap requires --out without --evaluate");
    let t = learn::train(&instances, usize::from(args.k), probed).map_err(bad)?;
    eprintln!();
    learn::write(&t.model, out).map_err(bad)?;
    print_training(&t);
    eprintln!("braid: model written to {}", out.display());
    Ok(())
}

/// `--plot DIR` and `--out FILE` can be written, checked before the
/// probes run.
fn learn_outputs_writable(args: &LearnArgs) -> Result<(), Failure> {
    if let Some(dir) = &args.plot {
        if !dir.is_dir() {
            return Err(bad_input(anyhow::anyhow!(
                "--plot {}: no such directory",
                dir.display()
            )));
        }
        takes_files(dir)
            .with_context(|| format!("--plot {}: cannot write into it", dir.display()))
            .map_err(bad_input)?;
    }
    if let Some(out) = &args.out {
        let dir = out.parent().filter(|d| !d.as_os_str().is_empty());
        if dir.is_some_and(|d| !d.is_dir()) {
            return Err(bad_input(anyhow::anyhow!(
                "--out {}: its directory does not exist",
                out.display()
            )));
        }
        takes_files(dir.unwrap_or(Path::new(".")))
            .with_context(|| format!("--out {}: cannot write beside it", out.display()))
            .map_err(bad_input)?;
    }
    Ok(())
}

/// A held-out evaluation: its accuracy and baseline, the regrets table,
/// and with `--plot` their figures.
fn print_evaluation(args: &LearnArgs, ev: &crate::lab::learn::Evaluation) -> Result<(), Failure> {
    println!(
        "held-out accuracy: {:.1}% of {} instance(s) (the best fixed strategy named; \
         always naming the commonest of its training, {}: {:.1}%)",
        100.0 * ev.accuracy,
        ev.instances,
        ev.baseline.0,
        100.0 * ev.baseline.1
    );
    println!(
        "\n| balancer | instances | did not converge | mean regret | 95% interval (bootstrap) |"
    );
    println!("|---|---|---|---|---|");
    for r in &ev.regret {
        println!(
            "| {} | {} | {} | {:+.1}% | {:+.1}% to {:+.1}% |",
            r.balancer,
            r.converged,
            r.failed,
            100.0 * r.mean,
            100.0 * r.interval.0,
            100.0 * r.interval.1
        );
    }
    if let Some(dir) = &args.plot {
        let file = args.evaluate.as_deref().expect("clap requires --evaluate");
        let drawn = crate::lab::regrets::draw(ev, file, &args.results, dir).map_err(|e| match e
            .is_bad_input()
        {
            true => Failure::BadInput(e.into()),
            false => Failure::Failed(e.into()),
        })?;
        for path in drawn {
            eprintln!("braid: wrote {}", path.display());
        }
    }
    Ok(())
}

/// What a training made: its accuracies and strategies.
fn print_training(t: &crate::lab::learn::Trained) {
    let loo: Vec<String> = t
        .leave_one_out
        .iter()
        .map(|(k, a)| format!("k = {k}: {:.1}%", 100.0 * a))
        .collect();
    println!(
        "trained on {} instance(s), k = {}: {:.1}% right on them; each left out of its own \
         training, {}; always naming the commonest, {}: {:.1}%; {} strategies: {}",
        t.instances,
        t.model.k,
        100.0 * t.training_accuracy,
        loo.join(", "),
        t.baseline.0,
        100.0 * t.baseline.1,
        t.model.classes.len(),
        t.model
            .classes
            .iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
}

/// Whether `dir` takes new files (a read-only folder, /proc, a folder of
/// another user): a file is made and removed, so a command of many
/// seconds finds out before its work, not after it.
fn takes_files(dir: &Path) -> std::io::Result<()> {
    let probe = dir.join(format!(".braid-write-check-{}", std::process::id()));
    std::fs::File::create(&probe)?;
    std::fs::remove_file(&probe)
}

/// `braid threads=1`: a config override given before any command (clap
/// would answer with its hint to `--version`); the message names the
/// commands that take it.
fn missing_command(mut args: impl Iterator<Item = std::ffi::OsString>) -> Option<String> {
    let first = args.next()?;
    let first = first.to_str()?;
    let (key, _) = first.split_once('=')?;
    if key.is_empty() || key.starts_with('-') {
        return None;
    }
    let rest: Vec<String> = args.map(|a| a.to_string_lossy().into_owned()).collect();
    let all = std::iter::once(first.to_string())
        .chain(rest)
        .collect::<Vec<_>>()
        .join(" ");
    Some(format!(
        "`{first}` is a config override, which a command takes: did you mean \
         `braid run {all}` (or `braid sim {all}`)?"
    ))
}

fn plot(args: PlotArgs) -> Result<(), Failure> {
    // Folders this command makes: removed again (when still empty) should
    // it be refused, so a refusal leaves nothing behind.
    let made: Vec<PathBuf> = args
        .out
        .ancestors()
        .take_while(|d| !d.as_os_str().is_empty() && !d.exists())
        .map(Path::to_path_buf)
        .collect();
    let result = plot_into(&args);
    if result.is_err() {
        for dir in &made {
            let _ = std::fs::remove_dir(dir);
        }
    }
    result
}

fn plot_into(args: &PlotArgs) -> Result<(), Failure> {
    use crate::lab::own::OwnFigure;
    // Each file is read by the reader of its kind, and the files drawn on
    // their own (a validation.json, the benchmark's speed.json and
    // roofline.json) are read and checked before anything is written.
    let mut results = Vec::new();
    let mut own = Vec::new();
    for path in &args.results {
        let kind =
            crate::lab::plot::input::kind(path).map_err(|e| bad_input(anyhow::anyhow!(e)))?;
        match OwnFigure::read(path, kind).map_err(own_failure)? {
            Some(figure) => own.push(figure),
            None => results.push(path.clone()),
        }
    }
    // Our own default may be made whole (results/ is missing in a fresh
    // clone); a directory the user names must have an existing parent.
    if args.out == Path::new(DEFAULT_PLOTS) {
        std::fs::create_dir_all(&args.out)
            .with_context(|| format!("cannot create {DEFAULT_PLOTS}"))
            .map_err(bad_input)?;
    }
    let mut written = Vec::new();
    if !results.is_empty() {
        written =
            crate::lab::plot::plot_all(&results, &args.out, args.apart).map_err(|e| {
                match e.is_bad_input() {
                    true => Failure::BadInput(e.into()),
                    false => Failure::Failed(e.into()),
                }
            })?;
    }
    if !own.is_empty() && !args.out.is_dir() {
        std::fs::create_dir(&args.out)
            .with_context(|| format!("cannot create {}", args.out.display()))
            .map_err(bad_input)?;
    }
    for figure in &own {
        written.extend(figure.draw(&args.out).map_err(own_failure)?);
    }
    for path in written {
        runner::show(&format!("{}\n", path.display()));
    }
    Ok(())
}

fn own_failure(e: crate::lab::own::OwnError) -> Failure {
    match e.is_bad_input() {
        true => Failure::BadInput(e.into()),
        false => Failure::Failed(e.into()),
    }
}
