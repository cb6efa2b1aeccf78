//! `braid experiment`: runs a suite's samples, each as its own `braid run`
//! or `braid sim` process (isolation, fresh pinning), one at a time, and
//! appends one record per finished sample to a results file. See
//! [`suite`] for the file format and [`results`] for resuming.

mod progress;
pub(crate) mod provenance;
pub(crate) mod results;
pub(crate) mod suite;

use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use thiserror::Error;

use braid::Config;
use braid::EngineKind;
use braid::Interrupt;
use braid::Plan;
use braid::Report;
use braid::Topology;
use progress::SuiteProgress;
use provenance::Provenance;
use results::{Record, ResultsFile, Status};
use suite::{LoadedSuite, Sample};

#[derive(Debug, Error)]
pub(crate) enum ExperimentError {
    #[error("cannot read {path}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("suite {path}: {message}")]
    BadSuite { path: PathBuf, message: String },
    #[error(transparent)]
    Machine(#[from] braid::TopologyError),
    #[error("suite {path}: sample `{sample}`: {message}")]
    BadSample {
        path: PathBuf,
        sample: String,
        message: String,
    },
    #[error(
        "{path} holds results of suite `{theirs}` as defined differently; \
         refusing to mix them (use another --out, or move the file away)"
    )]
    OtherSuite { path: PathBuf, theirs: String },
    #[error(
        "{path} holds results of suite `{suite}` written by {theirs}; this is {ours}. A \
         results file holds one build's samples, so that no figure mixes two programs' \
         numbers: move it away, or use another --out"
    )]
    OtherBuild {
        path: PathBuf,
        suite: String,
        theirs: Box<braid::Build>,
        ours: Box<braid::Build>,
    },
    #[error(
        "{path} is being written by another braid experiment; wait for it or use another --out"
    )]
    Busy { path: PathBuf },
    #[error(
        "{path}: line {line} is not a record, and it is not the last line; fix or move the file"
    )]
    Corrupt { path: PathBuf, line: usize },
    #[error("{path}: line {line}: not a braid experiment record: {message}")]
    BadRecord {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("cannot open the results file {path}")]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write the results file {path}")]
    Results {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot start {exe}")]
    Spawn {
        exe: PathBuf,
        source: std::io::Error,
    },
}

impl ExperimentError {
    /// True when the user's input is at fault (exit status 2).
    pub(crate) fn is_bad_input(&self) -> bool {
        !matches!(
            self,
            ExperimentError::Results { .. } | ExperimentError::Spawn { .. }
        )
    }
}

/// Effort samples a results record keeps (a run's report keeps
/// [`braid::EFFORT_SAMPLES`]): adjacent intervals merged, so totals
/// are kept, and the effort figure (60 bins) still has two per bin.
const RECORD_EFFORT_SAMPLES: usize = 120;

/// What a finished invocation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Summary {
    pub total: usize,
    /// Samples the results file already held as done.
    pub skipped: usize,
    /// Of the samples run now, those that had failed before (retried).
    pub retried: usize,
    pub ok: usize,
    /// Of the `ok` samples, those that stopped before their tolerance.
    pub missed: usize,
    pub failed: usize,
    /// The signal that stopped the suite early, if one did; the sample in
    /// flight was killed with everything it started, and not recorded.
    pub interrupted: Option<i32>,
}

/// Runs every sample of `suite` not yet done in the results file at `out`
/// (samples recorded as failed run again), until done or `interrupt`; a
/// simulated suite's samples `jobs` at a time (each sample is a process of
/// its own, and the simulator's result does not depend on what else the
/// machine runs), a real machine's one at a time, whatever `jobs` says (its
/// threads are pinned, and a neighbour would be noise).
pub(crate) fn run(
    suite: &LoadedSuite,
    out: &Path,
    interrupt: &Interrupt,
    jobs: usize,
) -> Result<Summary, ExperimentError> {
    let samples = suite.samples();
    let machine = check(suite)?;
    let results::Opened {
        file,
        done,
        failed: failed_before,
        ..
    } = open_results(suite, out)?;
    let calibration = (suite.suite.engine == EngineKind::Run && suite.suite.noise.contains(&true))
        .then(braid_noise::Calibration::measure);
    let exe = std::env::current_exe().map_err(|source| ExperimentError::Spawn {
        exe: PathBuf::from("braid"),
        source,
    })?;

    let (todo, mut summary) = plan_resume(&samples, &done, &failed_before);
    if summary.retried > 0 {
        eprintln!(
            "braid: {} sample(s) failed before and run again",
            summary.retried
        );
    }
    let jobs = match suite.suite.engine {
        EngineKind::Sim => jobs.max(1),
        EngineKind::Run => {
            warn_if_busy();
            1
        }
    };
    let variants = todo.iter().map(|&i| samples[i].variant.clone()).collect();
    let mut shown = SuiteProgress::new(variants, samples.len(), summary.skipped, jobs);
    // Up to `jobs` samples run at once, each on a thread of its own that
    // waits for its process; records are appended in the suite's order
    // (one finished early waits for those before it), so that a results
    // file reads the same however many ran at once, and is whole up to its
    // last line at any moment.
    let (tx, rx) = std::sync::mpsc::channel();
    let mut records = InOrder::new(file, todo.clone());
    let mut queue = todo.into_iter();
    let mut running = 0;
    std::thread::scope(|scope| {
        loop {
            while running < jobs && records.failure.is_none() && summary.interrupted.is_none() {
                let Some(i) = queue.next() else { break };
                let sample = &samples[i];
                shown.starting(&sample.key());
                let (tx, exe) = (tx.clone(), &exe);
                scope.spawn(move || {
                    let started = Instant::now();
                    let end = run_sample(exe, suite, sample, interrupt);
                    let _ = tx.send((i, started.elapsed().as_secs_f64(), end));
                });
                running += 1;
            }
            if running == 0 {
                break;
            }
            let (i, wall_s, end) = rx.recv().expect("a sample's thread sends before it ends");
            running -= 1;
            let sample = &samples[i];
            let (status, error, report) = match end {
                Err(e) => {
                    records.failure.get_or_insert(e);
                    records.put(i, None);
                    continue;
                }
                Ok(SampleEnd::Report(report)) => (Status::Ok, None, Some(*report)),
                Ok(SampleEnd::Failed(e)) => (Status::Failed, Some(e), None),
                Ok(SampleEnd::Interrupted(signal)) => {
                    summary.interrupted = Some(signal);
                    records.put(i, None);
                    continue;
                }
            };
            let how = summary.tally(&error, &report);
            if let Some(e) = &error {
                shown.say(&format!("braid: sample `{}` failed: {e}", sample.key()));
            }
            let record = record_of(
                suite,
                sample,
                (&machine, calibration.as_ref()),
                wall_s,
                (status, error, report),
            );
            records.put(i, Some(record));
            shown.finished(&sample.key(), &sample.variant, wall_s, how);
        }
    });
    let failure = records.finish();
    shown.finish();
    match failure {
        Some(e) => Err(e),
        None => Ok(summary),
    }
}

impl Summary {
    /// Counts a finished sample: failed, or ok (and whether it missed its
    /// tolerance). What the progress line says of it.
    fn tally(&mut self, error: &Option<String>, report: &Option<Report>) -> &'static str {
        match (error, report) {
            (Some(_), _) => {
                self.failed += 1;
                "failed"
            }
            (None, Some(r)) if r.missed_tolerance() => {
                self.ok += 1;
                self.missed += 1;
                "missed its tolerance"
            }
            _ => {
                self.ok += 1;
                "ok"
            }
        }
    }
}

/// Records appended in the suite's order however the samples finish (one
/// finished early waits for those before it), so that a results file
/// reads the same however many ran at once, and is whole up to its last
/// line at any moment. `None` stands for a sample that ends without a
/// record (interrupted, or braid's own failure).
struct InOrder {
    file: ResultsFile,
    order: Vec<usize>,
    next: usize,
    ready: std::collections::BTreeMap<usize, Option<Record>>,
    /// The first failure to run or to record a sample.
    failure: Option<ExperimentError>,
}

impl InOrder {
    fn new(file: ResultsFile, order: Vec<usize>) -> InOrder {
        InOrder {
            file,
            order,
            next: 0,
            ready: Default::default(),
            failure: None,
        }
    }

    /// Sample `i`'s end, then every record whose turn has come.
    fn put(&mut self, i: usize, record: Option<Record>) {
        self.ready.insert(i, record);
        while let Some(r) = self.order.get(self.next).and_then(|i| self.ready.remove(i)) {
            self.next += 1;
            if let Some(r) = r
                && let Err(e) = self.file.append(&r)
            {
                self.failure.get_or_insert(e);
            }
        }
    }

    /// Stopped early (interrupted, or a failure): what finished is kept,
    /// in order. The first failure, if any.
    fn finish(mut self) -> Option<ExperimentError> {
        for r in std::mem::take(&mut self.ready).into_values().flatten() {
            if let Err(e) = self.file.append(&r) {
                self.failure.get_or_insert(e);
            }
        }
        self.failure
    }
}

/// The results file at `out`, opened to resume `suite`: a last line cut
/// short by an interrupted write is cut off, and said.
fn open_results(suite: &LoadedSuite, out: &Path) -> Result<results::Opened, ExperimentError> {
    let opened = ResultsFile::open(out, &suite.digest())?;
    if let Some(line) = opened.torn {
        eprintln!(
            "braid: {}: line {line} was cut short (a write interrupted): cut off, its sample runs again",
            out.display()
        );
    }
    Ok(opened)
}

/// A finished sample's record, its run's report coarsened to what a
/// record keeps. A sample without a report keeps its configuration and
/// machine in its provenance (a report holds them): made only then (a
/// suite of 10^5 samples keeps no configuration in between).
fn record_of(
    suite: &LoadedSuite,
    sample: &Sample,
    (machine, calibration): (&Topology, Option<&braid_noise::Calibration>),
    wall_s: f64,
    (status, error, report): (Status, Option<String>, Option<Report>),
) -> Record {
    let made = report
        .is_none()
        .then(|| sample_config(suite, sample).ok())
        .flatten()
        .map(|cfg| {
            let topology = match suite.suite.engine {
                EngineKind::Run => machine.clone(),
                EngineKind::Sim => {
                    Topology::simulated(&cfg.sim_topology).unwrap_or(machine.clone())
                }
            };
            (cfg, topology)
        });
    let provenance = Provenance::new(made.as_ref().map(|(c, t)| (c, t)), calibration);
    let report = report.map(|mut r| {
        if let Some(lb) = &mut r.lb {
            lb.coarsen(RECORD_EFFORT_SAMPLES);
        }
        r
    });
    Record {
        suite: suite.suite.name.clone(),
        suite_digest: suite.digest(),
        figure: suite.suite.figure,
        engine: suite.suite.engine,
        sample: sample.clone(),
        key: sample.key(),
        status,
        error,
        wall_s,
        provenance,
        report,
    }
}

/// Checks every sample's configuration as its own process would, before
/// anything runs, so that a typo fails in a second instead of as a results
/// file of failures; returns this machine. Neither the configurations nor
/// a simulated machine are kept (a suite of millions of simulated cores a
/// sample would hold gigabytes, and each sample's process is forked from
/// this one, whose size each fork copies). The checked plans' noise is
/// held until all are checked, so that a trace the samples share is read
/// once; a long check says how far it is.
pub(crate) fn check(suite: &LoadedSuite) -> Result<Topology, ExperimentError> {
    let samples = suite.samples();
    let machine = Topology::detect()?;
    let mut held = Vec::new();
    let mut shown = std::time::Instant::now();
    for (i, s) in samples.iter().enumerate() {
        let (_, noise) = effective_config(suite, s, &machine)?;
        held.push(noise);
        if shown.elapsed().as_secs_f64() >= 2.0 {
            eprintln!("braid: checked {}/{} samples...", i + 1, samples.len());
            shown = std::time::Instant::now();
        }
    }
    drop(held);
    Ok(machine)
}

/// Which samples still need running (by index), and the summary's start:
/// samples done before are skipped, and those that only failed run again.
fn plan_resume(
    samples: &[Sample],
    done: &HashSet<String>,
    failed_before: &HashSet<String>,
) -> (Vec<usize>, Summary) {
    let todo: Vec<usize> = (0..samples.len())
        .filter(|&i| !done.contains(&samples[i].key()))
        .collect();
    let retried = todo
        .iter()
        .filter(|&&i| failed_before.contains(&samples[i].key()))
        .count();
    let summary = Summary {
        total: samples.len(),
        skipped: samples.len() - todo.len(),
        retried,
        ok: 0,
        missed: 0,
        failed: 0,
        interrupted: None,
    };
    (todo, summary)
}

/// The configuration a sample's process will use, checked on the machine
/// it runs on as `braid run`/`braid sim` would check it, and its noise.
fn effective_config(
    suite: &LoadedSuite,
    sample: &Sample,
    machine: &Topology,
) -> Result<(Config, Option<braid::NoisePlan>), ExperimentError> {
    let bad = |message: String| ExperimentError::BadSample {
        path: suite.path.clone(),
        sample: sample.key(),
        message,
    };
    let cfg = sample_config(suite, sample)?;
    // Planned (and so checked) as the sample's own process will plan it;
    // the simulator's plan makes its machine from `sim_topology`.
    let plan = match suite.suite.engine {
        EngineKind::Run => Plan::new(&cfg, machine),
        EngineKind::Sim => Plan::simulated(&cfg),
    }
    .map_err(|e| bad(e.to_string()))?;
    Ok((cfg, plan.noise))
}

/// The configuration a sample's process will use: the suite's
/// `config.txt` (if any), the variant, the sample's overrides, and the
/// files it names read from the suite's directory.
fn sample_config(suite: &LoadedSuite, sample: &Sample) -> Result<Config, ExperimentError> {
    let bad = |message: String| ExperimentError::BadSample {
        path: suite.path.clone(),
        sample: sample.key(),
        message,
    };
    let base = suite.dir().join("config.txt");
    let mut cfg = if base.exists() {
        Config::from_file(&base).map_err(|e| bad(e.to_string()))?
    } else {
        Config::default()
    };
    cfg.apply_variant(&sample.variant)
        .map_err(|e| bad(e.to_string()))?;
    for o in suite.overrides(sample) {
        cfg.apply_override(&o).map_err(|e| bad(e.to_string()))?;
    }
    // The sample runs in the suite's directory: check the files it names
    // from there.
    Ok(cfg.with_files_from(&suite.dir()))
}

/// How one sample's process ended.
enum SampleEnd {
    Report(Box<Report>),
    /// Why there is no report: the exit status and the end of its stderr,
    /// or the timeout.
    Failed(String),
    /// braid itself got this signal; the sample was killed.
    Interrupted(i32),
}

/// The command that starts braid `exe` (under the suite's launcher, if
/// it has one), and the program it starts, for messages.
fn launched(exe: &Path, launcher: Option<&str>) -> (Command, PathBuf) {
    match launcher {
        Some(launcher) => {
            let mut words = launcher.split_whitespace();
            let program = words.next().expect("checked when loaded");
            let mut cmd = Command::new(program);
            cmd.args(words).arg(exe);
            (cmd, PathBuf::from(program))
        }
        None => (Command::new(exe), exe.to_path_buf()),
    }
}

/// Runs one sample's process in a process group of its own that dies with
/// braid (see `braid::kill_group`): a timeout or an interrupt kills the group,
/// parasites included, and a killed braid takes it down too.
fn run_sample(
    exe: &Path,
    suite: &LoadedSuite,
    sample: &Sample,
    interrupt: &Interrupt,
) -> Result<SampleEnd, ExperimentError> {
    let (mut cmd, started) = launched(exe, suite.suite.launcher.as_deref());
    braid::die_with_parent(&mut cmd, true);
    let mut child = cmd
        .arg(suite.suite.engine.command())
        .args(["--variant", &sample.variant, "--json", "-"])
        .args(suite.suite.lb_data.iter().flat_map(|dir| {
            let folder = suite.dir().join(dir).join(sample.folder());
            [
                std::ffi::OsString::from("--lb-data"),
                folder.into_os_string(),
            ]
        }))
        .args(
            (suite.suite.lb_data.is_some() && suite.suite.lb_data_compress)
                .then_some("--lb-data-compress"),
        )
        .args(suite.overrides(sample))
        .current_dir(suite.dir())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| ExperimentError::Spawn {
            exe: started,
            source,
        })?;
    // Both pipes are drained while the child runs, so it never blocks on
    // a full pipe.
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped")));
    let timeout = Duration::from_secs_f64(suite.suite.timeout_s);
    let waited = wait_until(&mut child, timeout, interrupt);
    let (stdout, stderr) = (
        stdout.join().unwrap_or_default(),
        stderr.join().unwrap_or_default(),
    );
    Ok(match waited {
        Waited::Interrupted(signal) => SampleEnd::Interrupted(signal),
        Waited::TimedOut => SampleEnd::Failed(format!(
            "timed out after {} s and was killed",
            suite.suite.timeout_s
        )),
        // A sample that missed its tolerance still reported: recorded, and
        // counted apart.
        Waited::Exited(status)
            if !status.success() && status.code() != Some(i32::from(braid::EXIT_MISSED)) =>
        {
            SampleEnd::Failed(format!("{status}: {}", last_lines(&stderr, 3)))
        }
        Waited::Exited(_) => match serde_json::from_str(&stdout) {
            Ok(report) => SampleEnd::Report(Box::new(report)),
            Err(e) => SampleEnd::Failed(format!(
                "its output is not a braid report ({e}): {}",
                last_lines(&stderr, 3)
            )),
        },
    })
}

enum Waited {
    Exited(std::process::ExitStatus),
    TimedOut,
    Interrupted(i32),
}

/// Waits for the child, watching the timeout and `interrupt`; at either it
/// kills the child's process group (and reaps the child).
fn wait_until(child: &mut Child, timeout: Duration, interrupt: &Interrupt) -> Waited {
    let start = Instant::now();
    loop {
        if let Some(signal) = interrupt.signal() {
            braid::kill_group(child);
            return Waited::Interrupted(signal);
        }
        match child.try_wait() {
            Ok(Some(status)) => return Waited::Exited(status),
            Ok(None) if start.elapsed() < timeout => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                braid::kill_group(child);
                return Waited::TimedOut;
            }
        }
    }
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" / ")
}

/// Says so when other work already holds this machine's CPUs: a real
/// engine's timings would be slower and noisier than the machine's.
fn warn_if_busy() {
    let (busy, load) = braid::busy_now(Duration::from_millis(500));
    if busy.is_empty() {
        return;
    }
    let cpus: Vec<String> = busy
        .iter()
        .map(|(cpu, share)| format!("CPU {cpu} {:.0}%", 100.0 * share))
        .collect();
    eprintln!(
        "braid: warning: the machine is busy before the suite starts ({}{}): timings will be \
         slower and noisier, and each record says how much of its cores other work took",
        cpus.join(", "),
        load.map(|l| format!("; load average {l:.2}"))
            .unwrap_or_default()
    );
}
