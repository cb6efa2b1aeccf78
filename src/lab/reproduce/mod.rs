//! `braid reproduce`: every published figure and table (`plots/published.toml`)
//! rerun with today's binary and compared with its committed records, so
//! that what the README and the manual show is what braid computes now.
//!
//! For each set, each suite is run again into `results/reproduce/` (a rerun
//! interrupted is resumed, as `braid experiment` resumes) and compared with
//! its committed records ([`compare`]): a simulated suite value for value,
//! a real-machine suite (only with `--machine`, on a machine that should be
//! quiet) setting by setting against the committed runs' 95% intervals. A
//! committed record that an uncommitted build wrote, or whose suite's
//! definition changed since, fails too: nobody could rebuild it.
//!
//! `--update` (from a build of a clean commit only) writes each rerun
//! suite's records in its committed place, compressed, and redraws the
//! set's figures from them, so that records, figures and the text that
//! quotes them move in one change.

pub(crate) mod compare;
pub(crate) mod manifest;

use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::lab::experiment::results::{self, Record};
use crate::lab::experiment::suite::LoadedSuite;
use crate::lab::experiment::{self, ExperimentError};
use crate::lab::plot::PlotError;
use braid::Build;
use braid::EngineKind;
use braid::Interrupt;
use compare::{Agreement, Exact};
use manifest::{Manifest, Set};

#[derive(Debug, Error)]
pub(crate) enum ReproduceError {
    #[error("{path}: {message}")]
    Manifest { path: PathBuf, message: String },
    #[error("no published set `{name}`{hint} (the sets: {known})")]
    UnknownSet {
        name: String,
        hint: String,
        known: String,
    },
    #[error(
        "--update writes committed records only from a build of a clean commit; this is {0}: \
         commit the change, build again, and rerun"
    )]
    NotReproducible(Build),
    #[error(transparent)]
    Experiment(#[from] ExperimentError),
    #[error(transparent)]
    Plot(#[from] PlotError),
    #[error(transparent)]
    Learn(#[from] crate::lab::learn::LearnError),
    #[error("cannot write {path}: {message}")]
    Write { path: PathBuf, message: String },
    #[error("interrupted by signal {0}")]
    Interrupted(i32),
}

impl ReproduceError {
    /// True when the user's input is at fault (exit status 2).
    pub(crate) fn is_bad_input(&self) -> bool {
        match self {
            ReproduceError::Manifest { .. }
            | ReproduceError::UnknownSet { .. }
            | ReproduceError::NotReproducible(_) => true,
            ReproduceError::Experiment(e) => e.is_bad_input(),
            ReproduceError::Plot(e) => e.is_bad_input(),
            ReproduceError::Learn(_) => true,
            ReproduceError::Write { .. } | ReproduceError::Interrupted(_) => false,
        }
    }
}

/// What `braid reproduce` was asked.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    /// braid's repository (where `plots/published.toml` is).
    pub root: PathBuf,
    /// The sets to rerun (all when empty).
    pub names: Vec<String>,
    /// Only the sets marked quick.
    pub quick: bool,
    /// Rerun the real-machine suites too.
    pub machine: bool,
    /// Write the reruns' records and redraw the figures.
    pub update: bool,
    /// Only redraw each set's figures from its committed records (after a
    /// change to how a figure is drawn): nothing is rerun or compared.
    pub redraw: bool,
    /// Where the reruns' results files go.
    pub out: PathBuf,
}

/// How one suite of a set fared.
#[derive(Debug, Clone)]
pub(crate) enum Verdict {
    /// Simulated: every sample value for value.
    Reproduced(usize),
    /// Simulated: what moved.
    Moved(Exact),
    /// Real: each setting's interval then and now, and whether this
    /// machine is another than the one the records were made on.
    Machine {
        agreements: Vec<Agreement>,
        note: String,
    },
    /// Not rerun, and why.
    NotRerun(String),
}

/// One suite's outcome, with what is wrong with its committed records.
#[derive(Debug, Clone)]
pub(crate) struct SuiteOutcome {
    pub suite: String,
    pub engine: Option<EngineKind>,
    pub samples: usize,
    pub verdict: Verdict,
    /// Why its committed records cannot stand (an uncommitted build, the
    /// suite changed since, no records), if they cannot.
    pub unpublishable: Vec<String>,
}

impl SuiteOutcome {
    /// Whether this suite fails the check.
    pub(crate) fn failed(&self) -> bool {
        !self.unpublishable.is_empty()
            || match &self.verdict {
                Verdict::Moved(_) => true,
                Verdict::Machine { agreements, .. } => agreements.iter().any(|a| !a.agrees()),
                Verdict::Reproduced(_) | Verdict::NotRerun(_) => false,
            }
    }
}

/// One set's outcome.
#[derive(Debug, Clone)]
pub(crate) struct SetOutcome {
    pub name: String,
    pub about: String,
    pub suites: Vec<SuiteOutcome>,
    /// What else was compared or written (the learned model, the figures).
    pub notes: Vec<(bool, String)>,
    /// Whether its records were rewritten (`--update`): what moved is then
    /// what was regenerated, and only a write that failed fails it.
    pub updated: bool,
}

impl SetOutcome {
    pub(crate) fn failed(&self) -> bool {
        (!self.updated && self.suites.iter().any(SuiteOutcome::failed))
            || self.notes.iter().any(|(ok, _)| !ok)
    }
}

/// Reruns the asked sets, handing each set's outcome to `show` as it is
/// done (a long rerun says what it found as it goes).
pub(crate) fn reproduce(
    opts: &Options,
    interrupt: &Interrupt,
    mut show: impl FnMut(&SetOutcome),
) -> Result<Vec<SetOutcome>, ReproduceError> {
    let manifest = Manifest::read(&opts.root)?;
    let sets = manifest.select(&opts.names, opts.quick)?;
    let build = Build::this();
    if opts.update && !build.reproducible() {
        return Err(ReproduceError::NotReproducible(build));
    }
    // Every suite file is read before anything runs: a typo fails now.
    for set in &sets {
        for suite in &set.suites {
            LoadedSuite::load(&Set::suite_file(&opts.root, suite), None)?;
        }
    }
    let mut out = Vec::new();
    for set in sets {
        let outcome = match opts.redraw {
            true => redraw(opts, set)?,
            false => one_set(opts, set, interrupt)?,
        };
        show(&outcome);
        out.push(outcome);
    }
    Ok(out)
}

/// Reruns one set's suites, compares, and (with `--update`) writes.
fn one_set(opts: &Options, set: &Set, interrupt: &Interrupt) -> Result<SetOutcome, ReproduceError> {
    let mut outcome = SetOutcome {
        name: set.name.clone(),
        about: set.about.clone(),
        suites: Vec::new(),
        notes: Vec::new(),
        updated: false,
    };
    if let (Some(file), Some(made_by)) = (&set.file, &set.made_by) {
        outcome
            .suites
            .push(measurement(&opts.root.join(file), made_by));
        return Ok(outcome);
    }
    // A learned set's held-out suites run the chooser its training
    // suites train: training first, then the model, then the rest.
    let (first, then): (Vec<&String>, Vec<&String>) = match &set.learn {
        Some(l) => set.suites.iter().partition(|s| l.train.contains(s)),
        None => (set.suites.iter().collect(), Vec::new()),
    };
    let mut reruns: Vec<(String, PathBuf)> = Vec::new();
    for (k, group) in [first, then].into_iter().enumerate() {
        if group.is_empty() {
            continue;
        }
        let from = reruns.len();
        for suite in group {
            let (o, rerun) = one_suite(opts, set, suite, interrupt)?;
            if let Some(r) = rerun {
                reruns.push((suite.clone(), r));
            }
            outcome.suites.push(o);
        }
        if opts.update {
            update(opts, set, &reruns[from..], &mut outcome)?;
            outcome.updated = true;
        }
        if let Some(learn) = &set.learn
            && k == 0
            && !learn.train.is_empty()
        {
            outcome.notes.push(train(opts, set, learn, &reruns)?);
        }
    }
    if let Some(learn) = &set.learn {
        outcome.notes.extend(regrets(opts, set, learn, &reruns)?);
    }
    Ok(outcome)
}

/// Redraws a set's figures from its committed records (a learned set's
/// regrets evaluated again from them), rerunning nothing.
fn redraw(opts: &Options, set: &Set) -> Result<SetOutcome, ReproduceError> {
    let mut outcome = SetOutcome {
        name: set.name.clone(),
        about: set.about.clone(),
        suites: Vec::new(),
        notes: Vec::new(),
        updated: false,
    };
    let Some(figures) = &set.figures else {
        return Ok(outcome);
    };
    let inputs: Vec<PathBuf> = match &set.file {
        Some(file) => vec![opts.root.join(file)],
        None => (set.suites.iter())
            .filter_map(|s| set.records_of(&opts.root, s))
            .collect(),
    };
    if let Some(learn) = &set.learn {
        let update = Options {
            update: true,
            ..opts.clone()
        };
        outcome.notes.extend(regrets(&update, set, learn, &[])?);
        return Ok(outcome);
    }
    let dir = opts.root.join(figures);
    let written = match &set.file {
        Some(file) => {
            let fail = |message: String| ReproduceError::Write {
                path: file.clone(),
                message,
            };
            let kind = crate::lab::plot::input::kind(&inputs[0]).map_err(fail)?;
            crate::lab::own::OwnFigure::read(&inputs[0], kind)
                .and_then(|f| {
                    let f = f.ok_or_else(|| crate::lab::own::OwnError::Draw {
                        path: inputs[0].clone(),
                        message: "a results file, not a measurement".into(),
                    })?;
                    f.draw(&dir)
                })
                .map_err(|e| fail(e.to_string()))?
        }
        None => crate::lab::plot::plot_all(&inputs, &dir, false)?,
    };
    outcome.notes.push((
        true,
        format!("redrew {} file(s) in {}", written.len(), figures.display()),
    ));
    Ok(outcome)
}

/// A measurement reproduce does not rerun: named with when, where and by
/// which build it was made.
fn measurement(file: &Path, made_by: &str) -> SuiteOutcome {
    let mut o = SuiteOutcome {
        suite: file.display().to_string(),
        engine: None,
        samples: 0,
        verdict: Verdict::NotRerun(format!("a measurement on a machine: `{made_by}` makes it")),
        unpublishable: Vec::new(),
    };
    let text = match braid_noise::files::read_text(file, braid::MAX_TEXT_BYTES) {
        Ok(t) => t,
        Err(e) => {
            o.unpublishable.push(format!("cannot read it: {e}"));
            return o;
        }
    };
    let value: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    let build = value
        .get("build")
        .or_else(|| value.get("provenance").and_then(|p| p.get("build")))
        .and_then(|b| serde_json::from_value::<Build>(b.clone()).ok())
        .unwrap_or_default();
    let date = (value.get("date"))
        .and_then(|d| d.as_str())
        .map(|d| d[..d.len().min(10)].to_string())
        .unwrap_or_else(|| "an unknown date".into());
    if let Verdict::NotRerun(why) = &mut o.verdict {
        why.push_str(&format!(" (measured {date} by {build})"));
    }
    if !build.reproducible() {
        o.unpublishable
            .push(format!("written by {build}, which nobody can build again"));
    }
    o
}

/// Reruns one suite (if its engine may run here) and compares it with its
/// committed records; returns the outcome and the rerun's results file.
fn one_suite(
    opts: &Options,
    set: &Set,
    name: &str,
    interrupt: &Interrupt,
) -> Result<(SuiteOutcome, Option<PathBuf>), ReproduceError> {
    let suite = LoadedSuite::load(&Set::suite_file(&opts.root, name), None)?;
    let engine = suite.suite.engine;
    let mut outcome = SuiteOutcome {
        suite: name.to_string(),
        engine: Some(engine),
        samples: suite.samples().len(),
        verdict: Verdict::NotRerun(String::new()),
        unpublishable: Vec::new(),
    };
    let path = set
        .records_of(&opts.root, name)
        .expect("checked: a records folder");
    let committed = match path.is_file() {
        true => read(&path)?,
        false => {
            outcome
                .unpublishable
                .push(format!("no committed records ({})", path.display()));
            Vec::new()
        }
    };
    outcome
        .unpublishable
        .extend(unpublishable(&opts.root, &committed, &suite.digest()));
    if engine == EngineKind::Run && !opts.machine {
        outcome.verdict = Verdict::NotRerun(machine_note(&committed, false));
        return Ok((outcome, None));
    }
    let rerun_path = opts.out.join(format!("{name}.jsonl"));
    let rerun = rerun_suite(&suite, &rerun_path, interrupt)?;
    outcome.verdict = match engine {
        EngineKind::Sim => {
            let e = compare::exact(&committed, &rerun);
            match e.reproduced() {
                true => Verdict::Reproduced(e.compared),
                false => Verdict::Moved(e),
            }
        }
        EngineKind::Run => Verdict::Machine {
            agreements: compare::within_intervals(&committed, &rerun),
            note: machine_note(&committed, true),
        },
    };
    Ok((outcome, Some(rerun_path)))
}

/// Runs `suite` into `path`, resuming a rerun of this build and this
/// definition, starting over from any other; returns its records.
fn rerun_suite(
    suite: &LoadedSuite,
    path: &Path,
    interrupt: &Interrupt,
) -> Result<Vec<Record>, ReproduceError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| ReproduceError::Write {
            path: dir.to_path_buf(),
            message: e.to_string(),
        })?;
    }
    eprintln!(
        "braid reproduce: running suite `{}` into {}",
        suite.suite.name,
        path.display()
    );
    // A simulated suite's samples run one per core: each is a process of
    // its own, and a simulation's result does not depend on its neighbour.
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let summary = match experiment::run(suite, path, interrupt, jobs) {
        Err(ExperimentError::OtherBuild { .. } | ExperimentError::OtherSuite { .. }) => {
            eprintln!(
                "braid reproduce: {} holds another build's or definition's rerun: starting over",
                path.display()
            );
            std::fs::remove_file(path).map_err(|e| ReproduceError::Write {
                path: path.to_path_buf(),
                message: e.to_string(),
            })?;
            experiment::run(suite, path, interrupt, jobs)?
        }
        other => other?,
    };
    if let Some(signal) = summary.interrupted {
        return Err(ReproduceError::Interrupted(signal));
    }
    read(path)
}

/// Every record of a results file (compressed or not).
fn read(path: &Path) -> Result<Vec<Record>, ReproduceError> {
    Ok(results::read_numbered(path)?
        .into_iter()
        .map(|(_, r)| r)
        .collect())
}

/// Why committed records cannot stand: a build nobody can make again, a
/// commit that is not in this repository's history, a suite changed since.
fn unpublishable(root: &Path, committed: &[Record], digest: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut builds: Vec<&Build> = Vec::new();
    for r in committed {
        if !builds.contains(&&r.provenance.build) {
            builds.push(&r.provenance.build);
        }
    }
    for b in &builds {
        if !b.reproducible() {
            out.push(format!("written by {b}, which nobody can build again"));
        } else if ancestor(root, &b.commit) == Some(false) {
            out.push(format!(
                "written by {b}, a commit that is not in this checkout's history"
            ));
        }
    }
    if builds.len() > 1 {
        out.push(format!("written by {} builds, not one", builds.len()));
    }
    if committed.iter().any(|r| r.suite_digest != digest) {
        out.push(
            "the suite's file was changed since its records were written (its digest differs)"
                .into(),
        );
    }
    out
}

/// Whether `commit` is an ancestor of HEAD in the checkout at `root`
/// (`None` when git cannot tell: no git, no checkout, a shallow clone).
fn ancestor(root: &Path, commit: &str) -> Option<bool> {
    let status = std::process::Command::new("git")
        .args(["merge-base", "--is-ancestor", commit, "HEAD"])
        .current_dir(root)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .ok()?;
    match status.code() {
        Some(0) => Some(true),
        Some(1) => Some(false),
        _ => None,
    }
}

/// Where and when the committed real runs were made, and (after a rerun)
/// whether this machine is another.
fn machine_note(committed: &[Record], rerun: bool) -> String {
    let Some(first) = committed.first() else {
        return String::new();
    };
    let p = &first.provenance;
    let date = &p.date[..p.date.len().min(10)];
    let date = if date.is_empty() {
        "an unknown date"
    } else {
        date
    };
    let here = crate::lab::experiment::provenance::cpu_model();
    match rerun {
        false => format!(
            "a real machine's runs (recorded {date} on {}): `braid reproduce --machine` reruns \
             them here",
            p.cpu_model
        ),
        true if here != p.cpu_model => format!(
            "recorded on {}, rerun on {here}: another machine, so another interval",
            p.cpu_model
        ),
        true => String::new(),
    }
}

/// Writes each rerun suite's records in its committed place and redraws
/// the set's figures from the committed records.
fn update(
    opts: &Options,
    set: &Set,
    reruns: &[(String, PathBuf)],
    outcome: &mut SetOutcome,
) -> Result<(), ReproduceError> {
    for (suite, rerun) in reruns {
        let loaded = LoadedSuite::load(&Set::suite_file(&opts.root, suite), None)?;
        let mut records = read(rerun)?;
        let order: Vec<String> = loaded.samples().iter().map(|s| s.key()).collect();
        records.sort_by_key(|r| order.iter().position(|k| *k == r.key));
        let failed = records
            .iter()
            .filter(|r| r.status != results::Status::Ok)
            .count();
        let dest = set.records_of(&opts.root, suite).expect("a records folder");
        if failed > 0 {
            outcome.notes.push((
                false,
                format!("{suite}: {failed} sample(s) failed: its records are not updated"),
            ));
            continue;
        }
        results::write_compressed(&dest, &records).map_err(|e| ReproduceError::Write {
            path: dest.clone(),
            message: e.to_string(),
        })?;
        outcome.notes.push((
            true,
            format!("wrote {} ({} records)", dest.display(), records.len()),
        ));
    }
    // A learned set's figures are its regrets ([`learned`]).
    let Some(figures) = set.figures.as_ref().filter(|_| set.learn.is_none()) else {
        return Ok(());
    };
    let drawn_from: Vec<PathBuf> = (set.suites.iter())
        .filter_map(|s| set.records_of(&opts.root, s))
        .filter(|p| p.is_file())
        .collect();
    if drawn_from.is_empty() {
        return Ok(());
    }
    let written = crate::lab::plot::plot_all(&drawn_from, &opts.root.join(figures), false)?;
    outcome.notes.push((
        true,
        format!("redrew {} file(s) in {}", written.len(), figures.display()),
    ));
    Ok(())
}

/// The records of `suite` a learned set reads: the rerun's, else the
/// committed ones.
fn records_for(opts: &Options, set: &Set, reruns: &[(String, PathBuf)], suite: &str) -> PathBuf {
    reruns
        .iter()
        .find(|(s, _)| s == suite)
        .map(|(_, p)| p.clone())
        .unwrap_or_else(|| set.records_of(&opts.root, suite).expect("a records folder"))
}

/// A learned set's chooser trained again on its training suites' records
/// (the rerun's, else the committed ones) and compared with the committed
/// model; with `--update`, written in its place, before the held-out
/// suites that run it are rerun.
fn train(
    opts: &Options,
    set: &Set,
    learn: &manifest::Learn,
    reruns: &[(String, PathBuf)],
) -> Result<(bool, String), ReproduceError> {
    use crate::lab::learn as l;
    use braid::Model;
    let committed = opts.root.join(&learn.model);
    let files: Vec<PathBuf> = (learn.train.iter())
        .map(|s| records_for(opts, set, reruns, s))
        .collect();
    let old = Model::read(&committed).ok();
    let k = old.as_ref().map_or(1, |m| m.k);
    let trained = l::train(&l::instances(&files)?, k, |_, _| {})?.model;
    let same = old.is_some_and(|m| {
        (m.points, m.classes, m.mean, m.scale, m.k)
            == (
                trained.points.clone(),
                trained.classes.clone(),
                trained.mean.clone(),
                trained.scale.clone(),
                trained.k,
            )
    });
    let name = learn.model.display();
    Ok(match (same, opts.update) {
        (true, _) => (true, format!("{name}: trained again, the same")),
        (false, true) => {
            l::write(&trained, &committed)?;
            (true, format!("{name}: trained again and written"))
        }
        (false, false) => (false, format!("{name}: trained again, it moved")),
    })
}

/// A learned set's chooser (the committed model) evaluated on each
/// held-out suite's records, its regret figure drawn and compared with the
/// committed one; with `--update`, the figure and its table written.
fn regrets(
    opts: &Options,
    set: &Set,
    learn: &manifest::Learn,
    reruns: &[(String, PathBuf)],
) -> Result<Vec<(bool, String)>, ReproduceError> {
    use crate::lab::learn as l;
    let Some(figures) = &set.figures else {
        return Ok(Vec::new());
    };
    let committed_model = opts.root.join(&learn.model);
    let model = braid::Model::read(&committed_model).map_err(|e| ReproduceError::Write {
        path: committed_model.clone(),
        message: e.to_string(),
    })?;
    let mut notes = Vec::new();
    for suite in &learn.evaluate {
        let file = records_for(opts, set, reruns, suite);
        let e = l::evaluate(
            &model,
            &l::instances(std::slice::from_ref(&file))?,
            |_, _| {},
        )?;
        let scratch = opts.out.join(format!("regrets-{}", set.name));
        std::fs::create_dir_all(&scratch).map_err(|e| ReproduceError::Write {
            path: scratch.clone(),
            message: e.to_string(),
        })?;
        // Named for the suite, as the committed figure is.
        let named = scratch.join(format!("{suite}.jsonl"));
        let drawn = crate::lab::regrets::draw(&e, &learn.model, &[named], &scratch)?;
        let committed = opts.root.join(figures).join(format!("regret-{suite}"));
        let same = drawn.iter().all(|f| {
            let ext = f.extension().map(|x| x.to_string_lossy().to_string());
            let kept = committed.with_extension(ext.unwrap_or_default());
            f.extension().is_some_and(|x| x == "png")
                || std::fs::read(f).ok() == std::fs::read(&kept).ok()
        });
        let shown = committed.display();
        notes.push(match (same, opts.update) {
            (true, _) => (true, format!("{shown}: drawn again, the same")),
            (false, true) => {
                for f in &drawn {
                    let dest = opts.root.join(figures).join(f.file_name().expect("a file"));
                    std::fs::copy(f, &dest).map_err(|e| ReproduceError::Write {
                        path: dest.clone(),
                        message: e.to_string(),
                    })?;
                }
                (true, format!("{shown}: drawn again and written"))
            }
            (false, false) => (false, format!("{shown}: drawn again, it moved")),
        });
    }
    Ok(notes)
}

impl std::fmt::Display for SetOutcome {
    /// The set as a table: a row per suite (reproduced, moved and by how
    /// much, not rerun and why), then what moved most, suite by suite.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let verdict = match (self.failed(), self.updated) {
            (true, _) => "FAILED",
            (false, true) => "updated",
            (false, false) => "ok",
        };
        writeln!(f, "\n## {} ({verdict}): {}\n", self.name, self.about)?;
        writeln!(f, "| suite | engine | samples | verdict |")?;
        writeln!(f, "|---|---|---|---|")?;
        for s in &self.suites {
            let engine = s.engine.map_or("-", |e| e.command());
            let mut cell = match &s.verdict {
                Verdict::Reproduced(n) => format!("reproduced: {n} of {n} value for value"),
                Verdict::Moved(e) => moved_cell(e),
                Verdict::Machine { agreements, .. } => {
                    let off = agreements.iter().filter(|a| !a.agrees()).count();
                    match off {
                        0 => format!(
                            "agrees: {} settings x measures within the committed intervals",
                            agreements.len()
                        ),
                        n => format!(
                            "moved: {n} of {} outside the committed intervals",
                            agreements.len()
                        ),
                    }
                }
                Verdict::NotRerun(why) => format!("not rerun: {why}"),
            };
            if let Verdict::Machine { note, .. } = &s.verdict
                && !note.is_empty()
            {
                cell.push_str(&format!("; {note}"));
            }
            for why in &s.unpublishable {
                cell.push_str(&format!("; CANNOT STAND: {why}"));
            }
            writeln!(f, "| {} | {engine} | {} | {cell} |", s.suite, s.samples)?;
        }
        for s in &self.suites {
            match &s.verdict {
                Verdict::Moved(e) => {
                    writeln!(
                        f,
                        "\n{}: what moved (samples it moved in; its largest change):",
                        s.suite
                    )?;
                    for k in e.by_kind().iter().take(8) {
                        let largest = k.largest.as_ref().map_or(String::new(), |(r, key)| {
                            format!("{:+.3}% ({key})", 100.0 * r)
                        });
                        writeln!(f, "  {:<40} {:>5}  {largest}", k.kind, k.samples)?;
                    }
                }
                Verdict::Machine { agreements, .. } => {
                    let off: Vec<&Agreement> = agreements.iter().filter(|a| !a.agrees()).collect();
                    if !off.is_empty() {
                        writeln!(
                            f,
                            "\n{}: outside the committed interval (median [95%], then and now):",
                            s.suite
                        )?;
                        for a in off.iter().take(12) {
                            writeln!(
                                f,
                                "  {} {}: {:.4} [{:.4}, {:.4}] ({} runs) -> {:.4} [{:.4}, {:.4}] ({} runs)",
                                a.setting,
                                a.measure,
                                a.committed.median,
                                a.committed.low,
                                a.committed.high,
                                a.committed.runs,
                                a.rerun.median,
                                a.rerun.low,
                                a.rerun.high,
                                a.rerun.runs
                            )?;
                        }
                    }
                }
                _ => {}
            }
        }
        for (ok, note) in &self.notes {
            writeln!(f, "{} {note}", if *ok { "-" } else { "- FAILED:" })?;
        }
        Ok(())
    }
}

/// A moved suite's verdict in a cell: how many samples moved, and the
/// largest change of the measure a reader looks at first.
fn moved_cell(e: &Exact) -> String {
    let mut parts = Vec::new();
    if !e.moved.is_empty() {
        let values: usize = e.moved.iter().map(|m| m.count).sum();
        parts.push(format!(
            "{} of {} samples moved ({values} values)",
            e.moved.len(),
            e.compared
        ));
    }
    if !e.missing.is_empty() {
        parts.push(format!(
            "{} committed samples not in the suite now",
            e.missing.len()
        ));
    }
    if !e.extra.is_empty() {
        parts.push(format!("{} samples new in the suite", e.extra.len()));
    }
    if !e.status.is_empty() {
        parts.push(format!(
            "{} samples finished in one run and failed in the other",
            e.status.len()
        ));
    }
    if let Some(k) = e.by_kind().first()
        && let Some((r, key)) = &k.largest
    {
        parts.push(format!("{} by up to {:+.2}% ({key})", k.kind, 100.0 * r));
    }
    format!("MOVED: {}", parts.join("; "))
}
