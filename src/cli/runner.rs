//! One run from the command line to its outputs: the configuration (a
//! file, a label and overrides; or a report whose measured speeds are
//! replayed), the plan for its engine, the run itself (`drive::run`, the
//! library's path), the report, and the files it writes. Across MPI
//! ranks, each rank's share of the same.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;

use braid::Config;
use braid::Interrupt;
use braid::NoiseForm;
use braid::Plan;
use braid::Report;
use braid::run;
use braid::{EngineKind, MeasuredSpeeds, Outcome, StopReason};
use braid_noise::files::AtomicFile;

/// Why a command did not finish as asked; the command line maps each kind
/// to its exit status.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The user's input is at fault (a key, a file, a label).
    BadInput(anyhow::Error),
    /// Something else went wrong (writing a file, a worker's panic).
    Failed(anyhow::Error),
    /// A signal ended it; the report says how far it got.
    Interrupted { signal: i32, error: anyhow::Error },
    /// The run ended, reported, without reaching its `tolerance`.
    Missed(anyhow::Error),
}

pub(crate) use braid::EXIT_MISSED;

impl Failure {
    /// The error to print.
    pub(crate) fn error(&self) -> &anyhow::Error {
        match self {
            Failure::BadInput(e)
            | Failure::Failed(e)
            | Failure::Missed(e)
            | Failure::Interrupted { error: e, .. } => e,
        }
    }
}

fn bad_input(error: impl Into<anyhow::Error>) -> Failure {
    Failure::BadInput(error.into())
}

impl From<anyhow::Error> for Failure {
    fn from(error: anyhow::Error) -> Self {
        Failure::Failed(error)
    }
}

/// What the command line asks of a run: where its configuration comes
/// from and where its outputs go.
#[derive(Debug, Default)]
pub(crate) struct Request {
    /// The configuration file (default: `./config.txt` if present).
    pub config: Option<PathBuf>,
    /// A paper label applied over the file.
    pub variant: Option<String>,
    /// The JSON report's file (`-` = stdout).
    pub json: Option<PathBuf>,
    /// The final grid's `.npy` file.
    pub grid: Option<PathBuf>,
    /// The directory for the LB data files (`--lb-data`).
    pub lb_data: Option<PathBuf>,
    /// How the LB data files are written (`--lb-data-compress`).
    pub lb_data_encoding: braid::LbEncoding,
    /// `KEY=VALUE` overrides, applied last.
    pub overrides: Vec<String>,
    /// For the simulator: a report whose measured speeds to replay.
    pub replay: Option<PathBuf>,
}

/// `braid run` or `braid sim`: plans, runs and publishes one run (or this
/// rank's part of one, under a launcher).
pub(crate) fn command(req: &Request, engine: EngineKind) -> Result<(), Failure> {
    if let Some(ranks) = launched_ranks() {
        if engine != EngineKind::Run || req.replay.is_some() {
            return Err(bad_input(anyhow::anyhow!(
                "launched as one of {ranks} ranks: only `braid run` runs across ranks (the \
                 simulator runs in one process)"
            )));
        }
        return across_ranks(req, ranks);
    }
    let mut plan = match &req.replay {
        Some(file) => {
            let (cfg, speeds) = replayed(file, req)?;
            Plan::replaying(&cfg, Some(speeds)).map_err(bad_input)?
        }
        None => {
            let cfg = load_config(req)?;
            // Recorded loads of millions of tasks take seconds to read
            // and check: say so before the plan does it.
            let read = match (cfg.workload.file(), &cfg.lb_strategy.file) {
                (Some(_), _) => Some(format!("the workload {}", cfg.workload)),
                (None, Some(dir)) => Some(format!("the owners in {}", dir.display())),
                (None, None) => None,
            };
            match read {
                Some(what) => {
                    eprintln!("braid: reading {what}...");
                    heartbeat(&format!("reading {what}"), || plan_for(&cfg, engine))?
                }
                None => plan_for(&cfg, engine)?,
            }
        }
    };
    if req.grid.is_some() {
        plan.check_grid().map_err(bad_input)?;
    }
    warn_ignored(&plan);
    let (json, grid) = open_outputs(req)?;
    let lb_data = lb_data_dir(req, &mut plan)?;
    // From here on, Ctrl-C or SIGTERM ends the run cleanly: it stops, the
    // parasites are reaped, and the report and grid are still written.
    plan.settings.interrupt = install_interrupt()?;
    eprintln!(
        "braid: {} {} on {} thread(s), {} x {} grid...",
        match engine {
            EngineKind::Run => "running",
            EngineKind::Sim => "simulating",
        },
        plan.config.variant(),
        plan.problem.threads,
        plan.problem.height,
        plan.problem.width
    );
    let watch = crate::watch::Watch::start(plan.settings.progress.clone(), watch_limits(&plan));
    let ran = run(&plan);
    drop(watch);
    let (report, outcome) = ran.map_err(bad_input)?;
    if outcome.stop == StopReason::ClockRange {
        // Its times are capped, not measured: no report is better than a
        // wrong one.
        return Err(bad_input(clock_range()));
    }
    publish(req, &report, &outcome, json, grid)?;
    write_lb_data(lb_data, req, &plan, &report, &outcome)?;
    ending(&plan, &outcome)
}

/// `work`'s value, with a line on stderr every [`HEARTBEAT`] while it
/// runs, so a step of many seconds (a recording of a gigabyte read and
/// checked) is never silent.
fn heartbeat<T>(what: &str, work: impl FnOnce() -> T) -> T {
    let (done, ticks) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|s| {
        s.spawn(move || {
            let start = std::time::Instant::now();
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                ticks.recv_timeout(HEARTBEAT)
            {
                eprintln!(
                    "braid: still {what}: {:.0} s",
                    start.elapsed().as_secs_f64()
                );
            }
        });
        let out = work();
        drop(done);
        out
    })
}

/// How often [`heartbeat`] speaks.
const HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(2);

/// `--lb-data DIR`: created now (a bad path fails before the run), and the
/// plan's trace set to record loads, in windows of `trace_interval`, else
/// the balancer's fixed interval, else [`LB_DATA_WINDOW`].
fn lb_data_dir(req: &Request, plan: &mut Plan) -> Result<Option<PathBuf>, Failure> {
    let Some(dir) = &req.lb_data else {
        return Ok(None);
    };
    std::fs::create_dir_all(dir)
        .with_context(|| format!("--lb-data: cannot create the directory {}", dir.display()))
        .map_err(bad_input)?;
    // A directory that exists but takes no files (read-only, /proc) would
    // fail only after the run: a file is created and removed now.
    let probe = dir.join(format!(".braid-write-check-{}", std::process::id()));
    std::fs::File::create(&probe)
        .with_context(|| {
            format!(
                "--lb-data: cannot write into the directory {}",
                dir.display()
            )
        })
        .map_err(bad_input)?;
    let _ = std::fs::remove_file(&probe);
    // Files of a run with more processing elements would stay beside this
    // run's, and a reader would take the mix for one recording.
    let pes = plan.placement.threads();
    let stale = braid::LbDataFiles {
        dir: dir.clone(),
        stem: "data".into(),
    };
    let stale: Vec<usize> = stale
        .numbers()
        .map_err(bad_input)?
        .into_iter()
        .filter(|&n| n >= pes)
        .collect();
    if let (Some(first), Some(last)) = (stale.first(), stale.last()) {
        let names = match first == last {
            true => format!("data.{first}.json"),
            false => format!("data.{first}.json to data.{last}.json"),
        };
        return Err(bad_input(anyhow::anyhow!(
            "--lb-data: {} holds {names}, which this run of {pes} thread(s) would not \
             overwrite: the folder would mix two recordings. Remove them or choose another folder",
            dir.display()
        )));
    }
    // A `data.N.json` this run would replace must be a file: a directory
    // or a device of that name would fail only after the run.
    if let Some(taken) = (0..pes)
        .map(|n| dir.join(format!("data.{n}.json")))
        .find(|p| std::fs::symlink_metadata(p).is_ok_and(|m| !m.is_file()))
    {
        return Err(bad_input(anyhow::anyhow!(
            "--lb-data: {} is not a file (a directory or a special file), so this run's \
             LB data could not be written there: remove it or choose another folder",
            taken.display()
        )));
    }
    record_loads(plan);
    Ok(Some(dir.clone()))
}

/// Sets the plan's trace to record loads (see [`lb_data_dir`]).
fn record_loads(plan: &mut Plan) {
    let s = &mut plan.settings;
    s.trace_loads = true;
    if s.trace_interval.is_none() {
        let interval = match s.scheme.balancer().map(|b| b.interval) {
            Some(braid::Interval::Seconds(secs)) if secs > 0.0 => {
                std::time::Duration::from_secs_f64(secs)
            }
            _ => LB_DATA_WINDOW,
        };
        s.trace_interval = Some(interval);
    }
}

/// A phase of LB data when neither `trace_interval` nor a balancer's
/// interval says.
const LB_DATA_WINDOW: std::time::Duration = std::time::Duration::from_millis(1);

/// Writes the LB data files of a run recorded for them.
fn write_lb_data(
    dir: Option<PathBuf>,
    req: &Request,
    plan: &Plan,
    report: &Report,
    outcome: &Outcome,
) -> Result<(), Failure> {
    let Some(dir) = dir else {
        return Ok(());
    };
    let nodes = thread_nodes(plan, report);
    let places = braid::Places {
        sockets: &report.thread_sockets,
        nodes: &nodes,
    };
    let window_s = plan
        .settings
        .trace_interval
        .unwrap_or(LB_DATA_WINDOW)
        .as_secs_f64();
    let phases = braid::lb_data_files(&plan.problem, &outcome.trace, &places, window_s)
        .and_then(|files| {
            braid::write_lb_data(&dir, &files, req.lb_data_encoding)?;
            Ok(files.first().map_or(0, braid::LbFile::phases))
        })
        .with_context(|| format!("--lb-data {}", dir.display()))
        .map_err(Failure::Failed)?;
    eprintln!("braid: LB data of {phases} phase(s) in {}", dir.display());
    Ok(())
}

/// Each thread's node: the simulator's, or across ranks its rank's host
/// (numbered in order of first appearance); else all 0.
fn thread_nodes(plan: &Plan, report: &Report) -> Vec<usize> {
    if let Some(sim) = plan.sim() {
        return sim.nodes.clone();
    }
    match &report.ranks {
        Some(info) => info.thread_nodes(),
        None => vec![0; report.threads],
    }
}

/// What the progress line measures a run against.
fn watch_limits(plan: &Plan) -> crate::watch::Limits {
    let s = &plan.settings;
    crate::watch::Limits {
        budget: s.update_budget,
        per_thread: (plan.problem.subs.len() / plan.problem.threads.max(1)) as u64,
        time_limit: s.time_limit.map(|d| d.as_secs_f64()),
        tolerance: s.tolerance,
        engine: plan.engine(),
    }
}

/// Names the keys set for the other engine: a setting that changes
/// nothing should not pass for one that did.
fn warn_ignored(plan: &Plan) {
    let keys = plan.ignored_keys();
    if keys.is_empty() {
        return;
    }
    let (engine, other) = match plan.engine() {
        EngineKind::Run => ("braid run", "they are the simulator's (braid sim)"),
        EngineKind::Sim => ("braid sim", "the simulator does not model them"),
    };
    eprintln!(
        "braid: warning: {engine} ignores {}: {other}",
        keys.join(", ")
    );
}

fn install_interrupt() -> Result<Interrupt, Failure> {
    Ok(Interrupt::install().context("cannot install the SIGINT/SIGTERM handlers")?)
}

/// `braid sim --calibrate`: the costs of runs like the request's on this
/// machine, printed as config lines.
pub(crate) fn calibrate(req: &Request) -> Result<(), Failure> {
    let cfg = load_config(req)?;
    show(&crate::lab::calibrate::measure(&cfg, crate::lab::calibrate::For::Simulated).to_string());
    Ok(())
}

/// The configuration file (or the defaults), the label, then the overrides.
pub(crate) fn load_config(req: &Request) -> Result<Config, Failure> {
    let mut cfg = match &req.config {
        Some(path) => Config::from_file(path).map_err(bad_input)?,
        None if Path::new("config.txt").exists() => {
            Config::from_file(Path::new("config.txt")).map_err(bad_input)?
        }
        None => Config::default(),
    };
    if let Some(label) = &req.variant {
        cfg.apply_variant(label).map_err(bad_input)?;
    }
    cfg.apply_overrides(&req.overrides).map_err(bad_input)?;
    Ok(cfg)
}

/// The plan of a run for `engine`, with every check made before anything
/// starts.
fn plan_for(cfg: &Config, engine: EngineKind) -> Result<Plan, Failure> {
    match engine {
        EngineKind::Run => braid::Topology::detect()
            .map_err(braid::PlanError::from)
            .and_then(|machine| Plan::new(cfg, &machine)),
        EngineKind::Sim => Plan::simulated(cfg),
    }
    .map_err(bad_input)
}

/// `--replay-speeds`: the report's configuration, noise and the slow hook
/// off (the measured speeds hold them), then `--variant` and the overrides;
/// and the speeds.
fn replayed(file: &Path, req: &Request) -> Result<(Config, MeasuredSpeeds), Failure> {
    let context = || format!("--replay-speeds {}", file.display());
    // Read as it is parsed: memory for the report, not for its text too;
    // at most what a run's report holds.
    let input = braid_noise::files::open_buffered(file, braid::MAX_RECORD_BYTES)
        .with_context(context)
        .map_err(bad_input)?;
    let mut json = serde_json::Deserializer::from_reader(input);
    let report: Report = serde_path_to_error::deserialize(&mut json)
        .map_err(|e| anyhow::anyhow!("field `{}`: {}", e.path(), e.inner()))
        .with_context(|| format!("{}: not a braid run report", context()))
        .map_err(bad_input)?;
    // A report from elsewhere is checked as a configuration typed here.
    let cfg = report
        .config
        .rechecked(file)
        .with_context(context)
        .map_err(bad_input)?;
    if report.threads == 0 || report.threads > braid::MAX_THREADS {
        return Err(bad_input(anyhow::anyhow!(
            "{}: field `threads`: {} is not from 1 to {}",
            context(),
            report.threads,
            braid::MAX_THREADS
        )));
    }
    let samples = report.trace.as_deref().unwrap_or_default();
    let speeds = MeasuredSpeeds::from_trace(file.to_path_buf(), report.threads, samples)
        .with_context(context)
        .map_err(bad_input)?;
    let mut cfg = cfg;
    // The simulated machine is the one the threads ran on: the sockets
    // they used, each with as many cores as its busiest socket's threads
    // (not the default 2 x 18, which would spread two threads over two
    // sockets that one held). A `sim_topology=` override still wins.
    cfg.sim_topology = replayed_machine(&report.thread_sockets, report.threads)
        .map_err(|e| bad_input(anyhow::anyhow!("{}: {e}", context())))?;
    // The threads that ran: across ranks the report's configuration
    // holds one rank's, the report the whole run's.
    cfg.threads = braid::AutoOr::Value(report.threads);
    cfg.noise = NoiseForm::None;
    cfg.noise_cores = Config::default().noise_cores;
    cfg.slow = None;
    if let Some(label) = &req.variant {
        cfg.apply_variant(label).map_err(bad_input)?;
    }
    cfg.apply_overrides(&req.overrides).map_err(bad_input)?;
    Ok((cfg, speeds))
}

/// `pack:S core:C pu:1` for threads that ran on `thread_sockets`: S the
/// sockets used, C the most threads any of them held.
fn replayed_machine(
    thread_sockets: &[usize],
    threads: usize,
) -> Result<braid::SimTopology, String> {
    let mut used = thread_sockets.to_vec();
    used.sort_unstable();
    let mut per_socket: Vec<usize> = Vec::new();
    for pair in used.chunk_by(|a, b| a == b) {
        per_socket.push(pair.len());
    }
    let sockets = per_socket.len().max(1);
    let cores = per_socket.iter().copied().max().unwrap_or(threads).max(1);
    let text = format!("pack:{sockets} core:{cores} pu:1");
    braid::SyntheticTopology::parse(&text, braid::MAX_CPUS)
        .map(braid::SimTopology::Synthetic)
        .map_err(|e| format!("field `thread_sockets`: {e}"))
}

/// An output chosen on the command line, opened before the run so that a
/// bad path fails in a second, not after a long run. A file is written to a
/// temporary sibling and renamed into place when complete
/// ([`braid_noise::files::AtomicFile`]), so a failure leaves no partial file.
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

/// Checks and opens `--json` and `--grid` before the run, so a bad path
/// costs nothing.
fn open_outputs(req: &Request) -> Result<(Option<Output>, Option<Output>), Failure> {
    if req.grid.as_deref() == Some(Path::new("-")) {
        return Err(bad_input(anyhow::anyhow!(
            "--grid needs a file name, not `-`"
        )));
    }
    if let (Some(j), Some(g)) = (&req.json, &req.grid)
        && same_file(j, g)
    {
        return Err(bad_input(anyhow::anyhow!(
            "--json and --grid name the same file ({}); give each its own",
            g.display()
        )));
    }
    let open = |path: &Option<PathBuf>, what| path.as_deref().map(|p| Output::open(p, what));
    Ok((
        open(&req.json, "report").transpose()?,
        open(&req.grid, "grid").transpose()?,
    ))
}

/// Prints `text` on stdout. A reader that went away (`braid config | head`)
/// is not an error: what braid had to write to files is written regardless.
pub(crate) fn show(text: &str) {
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

/// Prints the summary (to stderr when the report goes to stdout) and
/// writes the outputs.
fn publish(
    req: &Request,
    report: &Report,
    outcome: &Outcome,
    json: Option<Output>,
    grid: Option<Output>,
) -> Result<(), Failure> {
    if req.json.as_deref() == Some(Path::new("-")) {
        eprint!("{report}");
    } else {
        show(&report.to_string());
    }
    write_outputs(json, grid, report, outcome)
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

/// The end of a run that was reported: an interrupt, a failure for a run
/// that failed (a worker's panic, a simulated deadlock), a refusal for a
/// simulation past its clock's range, or a tolerance missed.
fn ending(plan: &Plan, outcome: &Outcome) -> Result<(), Failure> {
    let missed = match plan.settings.tolerance {
        Some(tol) if !outcome.converged => Some(tol),
        _ => None,
    };
    match (plan.settings.interrupt.signal(), outcome.stop) {
        (Some(signal), _) => Err(Failure::Interrupted {
            signal,
            error: anyhow::anyhow!(
                "interrupted by signal {signal}; the report says how far it got"
            ),
        }),
        (None, StopReason::ClockRange) => Err(bad_input(clock_range())),
        (None, stop) if stop.is_failure() => Err(anyhow::anyhow!(
            "the run ended with {}; see the report",
            serde_json::to_value(stop).map_or_else(|_| format!("{stop:?}"), |v| v.to_string())
        )
        .into()),
        (None, _) => match missed {
            Some(tol) => Err(Failure::Missed(anyhow::anyhow!(
                "the run stopped ({}) before its residual reached tolerance = {tol:e}; exit \
                 status {EXIT_MISSED}",
                serde_json::to_value(outcome.stop)
                    .map_or_else(|_| format!("{:?}", outcome.stop), |v| v.to_string())
            ))),
            None => Ok(()),
        },
    }
}

/// Why a simulation that reached the clock's range is refused, and what
/// to change.
pub(crate) fn clock_range() -> anyhow::Error {
    anyhow::anyhow!(
        "the simulated time reached the virtual clock's range ({:.1e} s), past which it is not \
         exact: set time_limit (at most 1e6 s), lower max_iterations, or make sim_speed, the \
         sim_* costs or the noise less extreme",
        braid::SIM_RANGE_S
    )
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

/// How many ranks a launcher (`mpirun`, `mpiexec`) started this process
/// among, from its environment, without starting MPI: more than one means
/// a run across ranks.
fn launched_ranks() -> Option<usize> {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.parse().ok())
        .filter(|&n: &usize| n > 1)
}

#[cfg(not(feature = "mpi"))]
fn across_ranks(_: &Request, ranks: usize) -> Result<(), Failure> {
    Err(bad_input(anyhow::anyhow!(
        "launched as one of {ranks} ranks, but this braid was built without the `mpi` \
         feature: build it with `cargo build --release --features mpi`"
    )))
}

/// `mpirun -n R braid run ...`: this rank's part of a run across ranks
/// (the library's `RankSession`). Every rank plans and checks the same configuration;
/// a rank that cannot start makes them all stop before anything runs, and
/// only rank 0 prints and writes the outputs.
#[cfg(feature = "mpi")]
fn across_ranks(req: &Request, _: usize) -> Result<(), Failure> {
    use braid::Beside;
    use braid::Numbers;
    let session = braid::RankSession::start().map_err(bad_input)?;
    let leads = session.leads_node();
    let loaded = load_config(req);
    // Ranks the launcher left on the same cores share them out (unless
    // `cores` names this rank's cores). A collective: every rank calls it,
    // whether its configuration loaded or not (`all_ranks_agree` below
    // stops them all then).
    let threads = match loaded.as_ref().map(|c| &c.threads) {
        Ok(braid::AutoOr::Value(t)) => Some(*t),
        _ => None,
    };
    let share = session.core_share(&braid::allowed_cores(), threads);
    // Noise is per node: planned below, by the rank that leads each node.
    let planned = loaded.and_then(|cfg| {
        let quiet = Config {
            noise: NoiseForm::None,
            noise_cores: Config::default().noise_cores,
            ..cfg.clone()
        };
        // The share restricts the machine this rank plans on, not the
        // configuration: the report keeps `cores` as the user set it.
        let mut plan = match (share, &cfg.cores) {
            (Some(share), braid::AutoOr::Auto) => {
                let machine = braid::Topology::detect().map_err(bad_input)?;
                let mine = machine.clone().restricted_to(&share).unwrap_or(machine);
                Plan::new(&quiet, &mine).map_err(bad_input)?
            }
            _ => plan_for(&quiet, EngineKind::Run)?,
        };
        let node = match leads {
            true => Some(braid::Topology::detect_node().map_err(bad_input)?),
            false => None,
        };
        plan.plan_node_noise(&cfg, node.as_ref())
            .map_err(bad_input)?;
        Ok(plan)
    });
    let mut plan = all_ranks_agree(&session, planned)?;
    let ranks = session
        .plan(&mut plan, req.grid.is_some())
        .map_err(bad_input)?;
    // Rank 0 gathers the whole grid at the end if it is to be written:
    // about what one process running the whole problem holds.
    let gathers = match (session.rank, &req.grid) {
        (0, Some(_)) => plan.check_memory(Numbers::Held).map_err(bad_input),
        _ => Ok(()),
    };
    all_ranks_agree(&session, gathers)?;
    let outputs = match session.rank {
        0 => open_outputs(req),
        _ => Ok((None, None)),
    };
    let (json, grid) = all_ranks_agree(&session, outputs)?;
    // Every rank records the loads (they are summed in the exchanges);
    // rank 0 alone creates the directory and writes the files.
    let lb_data = match session.rank {
        0 => lb_data_dir(req, &mut plan),
        _ => {
            if req.lb_data.is_some() {
                record_loads(&mut plan);
            }
            Ok(None)
        }
    };
    let lb_data = all_ranks_agree(&session, lb_data)?;
    plan.settings.interrupt = install_interrupt()?;
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
    // Each node's parasites, started by its leader; every rank waits for
    // all of them (a parasite that cannot start stops the whole run).
    let started = Beside::start(&plan).map_err(bad_input);
    let parasites = all_ranks_agree(&session, started)?;
    let watch = (session.rank == 0)
        .then(|| crate::watch::Watch::start(plan.settings.progress.clone(), watch_limits(&plan)));
    let outcome = ranks.run(&plan);
    drop(watch);
    // Rank 0 reports its own node's parasites.
    let noise = parasites.stop();
    if session.rank == 0 {
        let report = Report::new(&plan, &outcome, noise);
        publish(req, &report, &outcome, json, grid)?;
        write_lb_data(lb_data, req, &plan, &report, &outcome)?;
    }
    ending(&plan, &outcome)
}

/// This rank's `own` result, once every rank has said whether it can go on:
/// a rank that cannot must not leave the others waiting for it.
#[cfg(feature = "mpi")]
fn all_ranks_agree<T>(session: &braid::RankSession, own: Result<T, Failure>) -> Result<T, Failure> {
    let all = session.all_ok(own.is_ok());
    match own {
        Ok(_) if !all => Err(bad_input(anyhow::anyhow!(
            "another rank refused the run (its message says why)"
        ))),
        own => own,
    }
}
