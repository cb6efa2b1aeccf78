//! `braid validate`: checks the simulator against this machine before a
//! study trusts it at scale. It calibrates the simulator's costs on the
//! machine (`braid sim --calibrate`), runs a small matrix of variants and
//! conditions in both engines, and compares time to solution, each
//! variant's ratio to its plain counterpart, noisy over quiet, and the
//! spread, with a verdict on each ([`rows`]). It writes the calibration as
//! a config fragment that later runs and suites take, and the whole
//! comparison as a file a study can cite.

mod rows;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::lab::calibrate;
use crate::lab::experiment::provenance::Provenance;
use crate::lab::plot::PlotError;
use crate::lab::plot::agreement::{Agreement, Line, Panel};
use braid::Interrupt;
use braid::Interval;
use braid::Report;
use braid::{Config, ConfigError};
use braid::{Plan, PlanError};
use braid::{Topology, TopologyError};
use braid_noise::files::AtomicFile;
pub(crate) use rows::{Row, Stats, Verdict};

/// What `braid validate` was asked.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    /// Fewer repetitions: minutes, not tens of minutes.
    pub quick: bool,
    /// Where the calibration, the table and the results go.
    pub out: PathBuf,
    /// The recorded noise trace of the third condition (`None`: the trace
    /// braid ships, if it is found from here; else that condition is left
    /// out).
    pub trace: Option<PathBuf>,
}

/// The trace braid ships, from the repository's root.
pub(crate) const SHIPPED_TRACE: &str = "noise/traces/vm-parasite19-core0.trace";

/// The duty of the parasite condition: the paper's noisy core.
const PARASITE_DUTY: f64 = 0.19;

/// Why a validation did not finish.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ValidateError {
    /// The configuration or the trace cannot make the matrix's runs.
    #[error("{0}")]
    Config(#[from] ConfigError),
    #[error("{0}")]
    Plan(#[from] PlanError),
    #[error("{0}")]
    Topology(#[from] TopologyError),
    #[error("--trace {}: {}", .0.display(), .1)]
    NoTrace(PathBuf, &'static str),
    /// A run could not start its parasites.
    #[error("{0}")]
    Start(#[from] braid::StartError),
    /// A signal stopped it; nothing was written.
    #[error("stopped by signal {0} before the matrix was done: nothing written")]
    Interrupted(i32),
    /// `--out` cannot take the results (found before anything runs).
    #[error("--out: cannot write {}: {source}", path.display())]
    Out {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The results could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The figure could not be drawn or written.
    #[error("{0}")]
    Figure(#[from] PlotError),
    /// A `validation.json` to redraw that is not one.
    #[error("{}: not a readable validation.json of `braid validate`: {problem}", path.display())]
    NotValidation { path: PathBuf, problem: String },
}

impl ValidateError {
    /// Whether the user's input is at fault (exit status 2).
    pub(crate) fn is_bad_input(&self) -> bool {
        matches!(
            self,
            ValidateError::Config(_)
                | ValidateError::Plan(_)
                | ValidateError::Topology(_)
                | ValidateError::NoTrace(..)
                | ValidateError::Out { .. }
                | ValidateError::NotValidation { .. }
        ) || matches!(self, ValidateError::Figure(e) if e.is_bad_input())
    }
}

/// A condition the matrix runs every variant under.
#[derive(Debug, Clone, PartialEq)]
enum Condition {
    Quiet,
    /// A `braid-noise` parasite at this duty on a worker's core.
    Parasite(f64),
    /// A recorded trace replayed on a worker's core.
    Trace(PathBuf),
}

impl Condition {
    fn name(&self) -> String {
        match self {
            Condition::Quiet => "quiet".into(),
            Condition::Parasite(d) => format!("parasite {:.0}%", d * 100.0),
            Condition::Trace(p) => format!(
                "trace {}",
                p.file_name().map_or("?".into(), |f| f.to_string_lossy())
            ),
        }
    }

    fn overrides(&self) -> Vec<String> {
        match self {
            Condition::Quiet => vec!["noise=none".into(), "noise_cores=auto".into()],
            Condition::Parasite(d) => vec!["noise=thread".into(), format!("noise_cores=auto:{d}")],
            Condition::Trace(p) => vec![
                "noise=trace".into(),
                format!("noise_cores=auto:{}", p.display()),
            ],
        }
    }
}

/// The matrix: the variants, the conditions, and how often each real run
/// is repeated (the simulator's runs take as many seeds).
struct Matrix {
    variants: Vec<String>,
    conditions: Vec<Condition>,
    repetitions: usize,
}

impl Matrix {
    fn new(cfg: &Config, opts: &Options) -> Result<Matrix, ValidateError> {
        let interval = match cfg.lb_interval {
            Interval::Seconds(s) if s > 0.0 => s,
            _ => 0.001,
        };
        let mut conditions = vec![Condition::Quiet, Condition::Parasite(PARASITE_DUTY)];
        match &opts.trace {
            Some(p) if !p.exists() => {
                return Err(ValidateError::NoTrace(p.clone(), "no such file"));
            }
            Some(p) if !p.is_file() => {
                return Err(ValidateError::NoTrace(p.clone(), "not a regular file"));
            }
            Some(p) => conditions.push(Condition::Trace(p.clone())),
            None if Path::new(SHIPPED_TRACE).is_file() => {
                conditions.push(Condition::Trace(SHIPPED_TRACE.into()));
            }
            None => eprintln!(
                "braid validate: {SHIPPED_TRACE} is not here (run from braid's repository, or \
                 give --trace FILE): the trace condition is left out"
            ),
        }
        Ok(Matrix {
            variants: vec![
                "async(1)".into(),
                "async(4)".into(),
                format!("async(4)+split({interval})"),
                format!("async(4)+greedy({interval})"),
            ],
            conditions,
            repetitions: if opts.quick { 3 } else { 7 },
        })
    }

    /// The plain variant each one is compared with: async(4) with
    /// async(1) (the cost of sub-splitting), a balanced variant with
    /// async(4).
    fn base(&self, variant: usize) -> Option<usize> {
        match variant {
            0 => None,
            1 => Some(0),
            _ => Some(1),
        }
    }
}

/// How far the quiet plain row's real time may lie from the simulator's
/// before the summary says the machine drifted: a calibrated simulator
/// lands within 1-6% of it on a steady machine.
const DRIFT: f64 = 0.10;

/// What a validation found: cited by suites and papers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Validation {
    /// When it ran (UTC).
    pub date: String,
    pub provenance: Provenance,
    pub quick: bool,
    /// Real runs of each variant under each condition.
    pub repetitions: usize,
    /// The simulated machine: this one's sockets and cores.
    pub sim_topology: String,
    /// The calibration, as the config lines written to `calibration.txt`.
    pub calibration: Vec<String>,
    /// The configuration every run started from (variant and noise set
    /// per row).
    pub config: Config,
    pub rows: Vec<Row>,
}

/// Calibrates, runs the matrix in both engines, and writes
/// `calibration.txt`, `validation.md` and `validation.json` into
/// `opts.out`; prints the table. Each run is planned before any starts, so
/// a bad key or trace fails at once.
pub(crate) fn validate(
    cfg: &Config,
    opts: &Options,
    interrupt: &Interrupt,
) -> Result<Validation, ValidateError> {
    let machine = Topology::detect()?;
    let base = validation_base(cfg);
    let matrix = Matrix::new(&base, opts)?;
    let sim_topology = format!(
        "pack:{} core:{}",
        machine.sockets.len(),
        machine
            .sockets
            .iter()
            .map(|s| s.cores.len())
            .max()
            .unwrap_or(1)
    );
    // Checked before anything runs: every real and simulated sample plans.
    for v in &matrix.variants {
        for c in &matrix.conditions {
            Plan::new(&real_config(&base, v, c)?, &machine)?;
            Plan::simulated(&sim_config(&base, v, c, &[], &sim_topology, 0)?)?;
        }
    }
    // And the outputs can be written, before minutes of runs depend on it.
    writable(&opts.out)?;
    eprintln!("braid validate: calibrating the simulator on this machine...");
    let measured = calibrate::measure(&base, calibrate::For::ThisMachine);
    let calibration = measured.overrides();
    let real = run_real(&base, &matrix, &machine, interrupt)?;
    let on = (&calibration[..], sim_topology.as_str());
    let sim = run_simulated(&base, &matrix, on, &real, interrupt)?;
    let rows = rows_of(&matrix, &real, &sim);
    let validation = Validation {
        date: braid::iso8601(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
        ),
        provenance: Provenance::new(None, None),
        quick: opts.quick,
        repetitions: matrix.repetitions,
        sim_topology,
        calibration: measured.to_string().lines().map(str::to_string).collect(),
        config: base,
        rows,
    };
    write(&validation, &opts.out)?;
    Ok(validation)
}

/// The configuration every run of a validation starts from: to a
/// tolerance (1e-4 if it has none), or to a time limit as a guard.
fn validation_base(cfg: &Config) -> Config {
    let mut base = cfg.clone();
    if base.tolerance == 0.0 {
        base.tolerance = 1e-4;
        eprintln!("braid validate: no tolerance set: comparing times to a 1e-4 residual");
    }
    base.max_iterations = base.max_iterations.max(1_000_000_000);
    if base.time_limit == 0.0 {
        base.time_limit = 120.0;
    }
    base
}

/// The matrix's real runs, interleaved: every variant and condition sees
/// the machine as it is through the whole matrix. By cell (condition
/// major), each cell's repetitions.
fn run_real(
    base: &Config,
    matrix: &Matrix,
    machine: &Topology,
    interrupt: &Interrupt,
) -> Result<Vec<Vec<Report>>, ValidateError> {
    let (nv, nc) = (matrix.variants.len(), matrix.conditions.len());
    let mut real: Vec<Vec<Report>> = vec![Vec::new(); nv * nc];
    let total = nv * nc * matrix.repetitions;
    let mut done = 0;
    for _ in 0..matrix.repetitions {
        for (c, condition) in matrix.conditions.iter().enumerate() {
            for (v, variant) in matrix.variants.iter().enumerate() {
                let plan = Plan::new(&real_config(base, variant, condition)?, machine)?;
                let report = run(plan, interrupt)?;
                done += 1;
                eprintln!(
                    "braid validate: real {done}/{total}: {} {variant}: {}",
                    condition.name(),
                    report
                        .time_to_solution_s
                        .map_or("no solution".into(), |t| format!("{t:.3} s"))
                );
                real[c * nv + v].push(report);
            }
        }
    }
    Ok(real)
}

/// The matrix simulated `on` the calibration's lines and the simulated
/// machine, a seed for each real repetition, each run limited by its
/// cell's real runs' times.
fn run_simulated(
    base: &Config,
    matrix: &Matrix,
    (calibration, sim_topology): (&[String], &str),
    real: &[Vec<Report>],
    interrupt: &Interrupt,
) -> Result<Vec<Vec<Report>>, ValidateError> {
    let (nv, nc, reps) = (
        matrix.variants.len(),
        matrix.conditions.len(),
        matrix.repetitions,
    );
    let mut sim: Vec<Vec<Report>> = vec![Vec::new(); nv * nc];
    for (c, condition) in matrix.conditions.iter().enumerate() {
        eprintln!(
            "braid validate: simulating {} ({} variants x {reps} seeds)...",
            condition.name(),
            nv
        );
        for (v, variant) in matrix.variants.iter().enumerate() {
            let limit = sim_time_limit(&real[c * nv + v]);
            for seed in 0..reps as u64 {
                let mut cfg =
                    sim_config(base, variant, condition, calibration, sim_topology, seed)?;
                cfg.apply_overrides(&[format!("time_limit={limit}")])?;
                sim[c * nv + v].push(run(Plan::simulated(&cfg)?, interrupt)?);
            }
        }
    }
    Ok(sim)
}

/// A row per cell, each compared with its variant's base and with the
/// quiet condition's row.
fn rows_of(matrix: &Matrix, real: &[Vec<Report>], sim: &[Vec<Report>]) -> Vec<Row> {
    let (nv, nc) = (matrix.variants.len(), matrix.conditions.len());
    let cell = |c: usize, v: usize| c * nv + v;
    let mut rows: Vec<Row> = Vec::new();
    for (c, condition) in matrix.conditions.iter().enumerate() {
        for (v, variant) in matrix.variants.iter().enumerate() {
            rows.push(row(condition, variant, &real[cell(c, v)], &sim[cell(c, v)]));
        }
    }
    for c in 0..nc {
        for v in 0..nv {
            let b = matrix.base(v).map(|b| rows[cell(c, b)].clone());
            let q = (c > 0).then(|| rows[cell(0, v)].clone());
            rows[cell(c, v)].compare(b.as_ref(), q.as_ref());
        }
    }
    rows
}

/// Runs `plan` on its engine, stopped by `interrupt`: its report, or why
/// the validation stops.
fn run(mut plan: Plan, interrupt: &Interrupt) -> Result<Report, ValidateError> {
    plan.settings.interrupt = interrupt.clone();
    let (report, _) = braid::run(&plan)?;
    match interrupt.signal() {
        Some(signal) => Err(ValidateError::Interrupted(signal)),
        None => Ok(report),
    }
}

/// Virtual seconds a simulated sample may take: [`SIM_TIME_FACTOR`] times
/// the longest of its real runs. A simulation that does not reach the
/// tolerance then ends as a row without a solution in well under a second
/// of real time; under the real runs' 120 s guard, read as virtual time,
/// one ran for hours (a `braid validate --quick` seen to hang in CI,
/// 2026-11-28, was such a simulation, its stack in `sim::jitter`).
fn sim_time_limit(real: &[Report]) -> f64 {
    let longest = real.iter().map(|r| r.elapsed_s).fold(0.0, f64::max);
    (SIM_TIME_FACTOR * longest).clamp(1e-3, 120.0)
}

/// How much longer than its real runs a simulated sample may take.
const SIM_TIME_FACTOR: f64 = 20.0;

/// A real run of `variant` under `condition`.
fn real_config(base: &Config, variant: &str, condition: &Condition) -> Result<Config, ConfigError> {
    let mut cfg = base.clone();
    cfg.apply_variant(variant)?;
    cfg.apply_overrides(&condition.overrides())?;
    Ok(cfg)
}

/// The same run in the simulator, on this machine's sockets and cores,
/// with the numbers (for the residual), calibrated, seeded.
fn sim_config(
    base: &Config,
    variant: &str,
    condition: &Condition,
    calibration: &[String],
    sim_topology: &str,
    seed: u64,
) -> Result<Config, ConfigError> {
    let mut cfg = real_config(base, variant, condition)?;
    cfg.apply_overrides(calibration)?;
    cfg.apply_overrides(&[
        format!("sim_topology={sim_topology}"),
        "numerics=true".into(),
        format!("seed={seed}"),
    ])?;
    Ok(cfg)
}

/// One row from its runs: times to solution of those that reached the
/// tolerance, the median spread and moves.
fn row(condition: &Condition, variant: &str, real: &[Report], sim: &[Report]) -> Row {
    let times = |rs: &[Report]| {
        Stats::of(
            &rs.iter()
                .filter_map(|r| r.time_to_solution_s)
                .collect::<Vec<_>>(),
        )
    };
    let median_of = |rs: &[Report], f: &dyn Fn(&Report) -> f64| {
        Stats::of(&rs.iter().map(f).collect::<Vec<_>>()).map_or(0.0, |s| s.median)
    };
    let spread = |r: &Report| r.spread as f64;
    let moves = |r: &Report| r.lb.as_ref().map_or(0.0, |l| l.moves as f64);
    Row {
        condition: condition.name(),
        variant: variant.to_string(),
        real: times(real),
        sim: times(sim),
        real_runs: real.iter().map(|r| r.time_to_solution_s).collect(),
        real_spread: median_of(real, &spread),
        sim_spread: median_of(sim, &spread),
        real_moves: median_of(real, &moves),
        sim_moves: median_of(sim, &moves),
        time: None,
        base: None,
        over_base: None,
        over_quiet: None,
    }
}

impl Validation {
    /// The figure: times, ratios to the base and noisy over quiet, each
    /// row's real median with the machine's interval and the tolerance,
    /// and the simulator's median.
    pub(crate) fn figure(&self) -> Agreement {
        let cpu: Vec<&str> = self
            .provenance
            .cpu_model
            .split_whitespace()
            .take(4)
            .collect();
        let runs = self.repetitions;
        let panel = |title: &str,
                     unit: &str,
                     (tolerance, ratio): (f64, bool),
                     pick: &dyn Fn(&Row) -> Option<rows::Compared>| {
            let mut rows: Vec<Line> = self
                .rows
                .iter()
                .filter_map(|r| {
                    let c = pick(r)?;
                    Some(Line {
                        // "trace vm-parasite19-core0.trace": "trace".
                        condition: match r.condition.strip_prefix("trace ") {
                            Some(_) => "trace".into(),
                            None => r.condition.clone(),
                        },
                        variant: r.variant.clone(),
                        real: c.real,
                        interval: c.interval,
                        sim: c.sim,
                        verdict: c.verdict.word().to_string(),
                    })
                })
                .collect();
            // A figure's height grows with its rows: past the most a page
            // holds, the panel says how many it left to the table.
            let mut title = title.to_string();
            if rows.len() > FIGURE_ROWS {
                title = format!(
                    "{title} (the first {FIGURE_ROWS} of {} rows; every row is in validation.md)",
                    rows.len()
                );
                rows.truncate(FIGURE_ROWS);
            }
            Panel {
                title,
                unit: unit.into(),
                tolerance,
                ratio,
                rows,
            }
        };
        let panels = vec![
            panel(
                "time to solution",
                "seconds to a relative residual of the tolerance (lower is better)",
                (rows::TIME_TOLERANCE, false),
                &|r| r.time,
            ),
            panel(
                "over its plain variant: async(4) over async(1), a balanced one over async(4)",
                "ratio of times to solution (below 1: faster than its plain variant)",
                (rows::RATIO_TOLERANCE, true),
                &|r| r.over_base,
            ),
            panel(
                "noisy over quiet",
                "ratio of times to solution (what the noise cost)",
                (rows::RATIO_TOLERANCE, true),
                &|r| r.over_quiet,
            ),
        ];
        Agreement {
            headline: format!(
                "braid validate, {}: the simulator against {} ({runs} real runs a row, {runs} seeds)",
                &self.date[..self.date.len().min(10)],
                cpu.join(" ")
            ),
            panels: panels.into_iter().filter(|p| !p.rows.is_empty()).collect(),
        }
    }

    /// The table, a line counting the verdicts, and one saying what the
    /// machine's runs resolve.
    pub(crate) fn summary(&self) -> String {
        let count = |pick: &dyn Fn(&Row) -> Option<rows::Compared>| {
            let all: Vec<Verdict> = self
                .rows
                .iter()
                .filter_map(|r| pick(r).map(|c| c.verdict))
                .collect();
            let agree = all.iter().filter(|v| **v == Verdict::Agrees).count();
            let sign = all.iter().filter(|v| **v == Verdict::Disagrees).count();
            let scatter = all.iter().filter(|v| **v == Verdict::Scatter).count();
            (agree, sign, scatter, all.len())
        };
        let (t, _, _, tn) = count(&|r| r.time);
        let (b, bs, bc, bn) = count(&|r| r.over_base);
        let (q, qs, qc, qn) = count(&|r| r.over_quiet);
        let drift = self.drift().map_or(String::new(), |d| d + "\n");
        format!(
            "{}\nagreement (within the tolerance or the machine's 95% interval, whichever is \
             wider): time to solution within 15% in {t} of {tn} rows; ratio to the base within 5% \
             in {b} of {bn} ({bs} of opposite sign, {bc} more where the machine cannot tell the \
             side); noisy over quiet within 5% in {q} of {qn} ({qs} of opposite sign, {qc} more \
             where it cannot tell)\n{}\n{drift}",
            rows::table(&self.rows),
            self.resolution()
        )
    }

    /// A line saying the machine changed between the calibration and the
    /// real runs, if the quiet plain row says so. That row is the setting
    /// the calibration measured, so a time off there by more than
    /// [`DRIFT`] is the machine's drift, not the model's: on this
    /// project's shared VMs a neighbour's load made every real time
    /// 18-28% higher than a calibration taken minutes before.
    fn drift(&self) -> Option<String> {
        let row = self
            .rows
            .iter()
            .find(|r| r.condition == "quiet" && r.base.is_none())?;
        let c = row.time?;
        let off = c.real / c.sim - 1.0;
        (off.abs() > DRIFT).then(|| {
            format!(
                "warning: quiet {} took {:.3} s on the machine and {:.3} s in the simulator \
                 ({:+.0}%), and that is the setting the calibration measured: the machine was {} \
                 during the real runs than while it was calibrated, so the verdicts above compare \
                 two machines; rerun when the machine is steady",
                row.variant,
                c.real,
                c.sim,
                off * 100.0,
                if off > 0.0 { "slower" } else { "faster" }
            )
        })
    }

    /// How many runs the verdicts rest on and what they resolve: the
    /// median half width of the machine's intervals, for times and for
    /// ratios, and about how many runs a row would resolve the ratios'
    /// 5% (the width shrinks as one over the root of the runs).
    fn resolution(&self) -> String {
        let widths = |pick: &dyn Fn(&Row) -> Vec<Option<rows::Compared>>| {
            let w: Vec<f64> = self
                .rows
                .iter()
                .flat_map(pick)
                .flatten()
                .filter_map(|c| c.resolution())
                .collect();
            crate::lab::bootstrap::median(w)
        };
        let time = widths(&|r| vec![r.time]);
        let ratio = widths(&|r| vec![r.over_base, r.over_quiet]);
        let runs = self.repetitions;
        let mut line = format!(
            "resolution: {runs} real runs a row, interleaved; the machine's 95% intervals are \
             +-{:.1}% of a time (median over rows) and +-{:.1}% of a ratio",
            time * 100.0,
            ratio * 100.0
        );
        if ratio > rows::RATIO_TOLERANCE {
            let needed = (runs as f64 * (ratio / rows::RATIO_TOLERANCE).powi(2)).ceil();
            line += &format!(": a ratio's 5% takes about {needed:.0} runs a row on this machine");
        }
        line
    }
}

/// Whether files can be written into `out` (created if missing): a
/// temporary sibling of each output is made and removed.
fn writable(out: &Path) -> Result<(), ValidateError> {
    let failed = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ValidateError::Out { path, source }
    };
    std::fs::create_dir_all(out).map_err(failed(out))?;
    for name in [
        "calibration.txt",
        "validation.md",
        "validation.json",
        "validation.png",
        "validation.svg",
    ] {
        let path = out.join(name);
        drop(AtomicFile::create(&path).map_err(failed(&path))?);
    }
    Ok(())
}

/// `calibration.txt` (config lines), `validation.md` (the table),
/// `validation.json` (everything) and `validation.png` and `.svg` (the
/// figure), each written whole or not at all.
fn write(v: &Validation, out: &Path) -> Result<(), ValidateError> {
    let failed = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ValidateError::Write { path, source }
    };
    std::fs::create_dir_all(out).map_err(failed(out))?;
    let header = format!(
        "# braid validate, {} on {} ({}); cite validation.json beside this file\n",
        v.date, v.provenance.hostname, v.provenance.cpu_model
    );
    let files = [
        ("calibration.txt", header + &v.calibration.join("\n") + "\n"),
        (
            "validation.md",
            format!("# braid validate, {}\n\n{}", v.date, v.summary()),
        ),
        (
            "validation.json",
            serde_json::to_string_pretty(v).expect("a validation serializes") + "\n",
        ),
    ];
    for (name, text) in files {
        let path = out.join(name);
        let mut file = AtomicFile::create(&path).map_err(failed(&path))?;
        std::io::Write::write_all(&mut file, text.as_bytes()).map_err(failed(&path))?;
        file.commit().map_err(failed(&path))?;
    }
    v.figure().draw(out, "validation")?;
    Ok(())
}

/// The most rows a panel of the figure draws (a full matrix has 12 to 20;
/// a figure of thousands would take gigabytes to draw and say nothing).
const FIGURE_ROWS: usize = 40;

/// The most a `validation.json` holds: `braid validate` writes tens of
/// KiB (a full matrix is under 100 KiB).
const MAX_BYTES: u64 = 16 << 20;

/// The validation in `path`, read by its own reader: too large or
/// malformed, it is named as a `validation.json` with the field at fault.
pub(crate) fn read(path: &Path) -> Result<Validation, ValidateError> {
    crate::lab::plot::read_own(path, "validation.json", MAX_BYTES).map_err(|e| {
        ValidateError::NotValidation {
            path: path.to_path_buf(),
            problem: match e {
                PlotError::NotReadable { problem, .. } => problem,
                e => e.to_string(),
            },
        }
    })
}

/// Draws `validation.png` and `.svg` into `out` from a validation read
/// from a `validation.json` (`braid plot` on one), with `validation.md`,
/// its table, and `calibration.csv`, the calibration's values; the files
/// written.
pub(crate) fn redraw(v: &Validation, out: &Path) -> Result<Vec<PathBuf>, ValidateError> {
    let table = out.join("validation.md");
    braid_noise::files::write_atomic(&table, |w| {
        let text = format!("# braid validate, {}\n\n{}", v.date, v.summary());
        std::io::Write::write_all(w, text.as_bytes())
    })
    .map_err(|source| ValidateError::Write {
        path: table.clone(),
        source,
    })?;
    let mut written = vec![table];
    if v.rows.len() > FIGURE_ROWS {
        eprintln!(
            "braid: plot: the validation figure draws the first {FIGURE_ROWS} of its {} rows \
             in each panel; validation.md has every row",
            v.rows.len()
        );
    }
    written.extend(v.figure().draw(out, "validation")?);
    // The calibration's values, key by key, for the docs that quote them.
    let mut rows = vec![vec!["key".to_string(), "value".to_string()]];
    for line in &v.calibration {
        let line = line.split('#').next().unwrap_or("").trim();
        if let Some((k, val)) = line.split_once('=') {
            rows.push(vec![k.trim().to_string(), val.trim().to_string()]);
        }
    }
    written.push(
        crate::lab::plot::write_csv(out, "calibration", &rows).map_err(|e| {
            ValidateError::Write {
                path: out.join("calibration.csv"),
                source: std::io::Error::other(e.to_string()),
            }
        })?,
    );
    Ok(written)
}

#[cfg(test)]
mod limit_tests {
    use super::*;

    /// A simulated sample may take 20 times its longest real run, within
    /// [1 ms, 120 s] of virtual time, never the real runs' 120 s guard
    /// whatever they took.
    #[test]
    fn a_simulated_sample_may_take_twenty_times_its_longest_real_run() {
        let report = |elapsed_s: f64| -> Report {
            let cfg = Config::default();
            let plan = Plan::simulated(&cfg).unwrap();
            let (mut r, _) = braid::run(&plan).unwrap();
            r.elapsed_s = elapsed_s;
            r
        };
        let (a, b) = (report(0.010), report(0.025));
        assert!((sim_time_limit(&[a.clone(), b.clone()]) - 0.5).abs() < 1e-12);
        assert_eq!(sim_time_limit(&[]), 1e-3);
        assert_eq!(sim_time_limit(&[report(60.0)]), 120.0);
    }
}

#[cfg(test)]
mod drift_tests {
    use super::*;

    #[test]
    fn the_summary_warns_when_the_quiet_plain_row_is_off_from_its_own_calibration() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/plots/validate/data/validation.json"
        );
        let text = std::fs::read_to_string(path).expect("the committed validation");
        let mut v: Validation = serde_json::from_str(&text).expect("a validation");
        assert!(
            v.drift().is_none(),
            "a steady machine's validation: {:?}",
            v.drift()
        );
        assert!(!v.summary().contains("warning"));
        let row = v
            .rows
            .iter_mut()
            .find(|r| r.condition == "quiet" && r.base.is_none())
            .expect("the quiet plain row");
        let time = row.time.as_mut().expect("its time");
        time.real = time.sim * 1.2;
        let warned = v.summary();
        assert!(warned.contains("warning: quiet async(1)"), "{warned}");
        assert!(
            warned.contains("(+20%)") && warned.contains("slower"),
            "{warned}"
        );
    }
}
