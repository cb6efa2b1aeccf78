//! Suite files: what an experiment runs. A suite is TOML naming variants
//! (paper labels), noise off/on, repetitions, the engine and key overrides;
//! it expands into an ordered list of samples, each with a stable key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::ExperimentError;
use braid::EngineKind;
use braid::{MAX_SAMPLES, MAX_SECONDS, MAX_TEXT_BYTES};

/// Which of the paper's figures a suite feeds; `braid plot` draws by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Figure {
    /// Figure 3: iteration rate against spread.
    Landscape,
    /// Figures 4 and 5 and Table 2: time to solution, quiet and noisy.
    Tts,
    /// Figure 2: one traced balanced run.
    Braid,
    /// When balancing pays off: time-to-solution increase against noise
    /// duty, one panel per noisy placement (needs `[payoff]`).
    Payoff,
    /// The effort metric over time, one line per balanced variant.
    Effort,
    /// Strategies under workloads: time to solution over plain async's
    /// and spread, per workload (needs `workloads`).
    Workloads,
    /// ULBA's claim: the distribution over workload instances of the gain
    /// of `anticipate` at its best `lb_alpha` over the standard strategies
    /// (needs `workloads` and a `[sweep]` of `lb_alpha`).
    Gains,
    /// Balancing as the nodes grow: a call's cost and the moves per call
    /// against the simulated nodes (needs the sim engine and a `[sweep]` of
    /// `sim_topology`).
    Scale,
}

/// A suite as written in its TOML file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Suite {
    pub name: String,
    pub figure: Figure,
    pub engine: EngineKind,
    /// Paper labels, e.g. "ssync(30)", "async(4)+hybrid(0.001,500)".
    pub variants: Vec<String>,
    /// Noise settings to run each variant under: `[false, true]` for both.
    #[serde(default = "quiet_only")]
    pub noise: Vec<bool>,
    #[serde(default = "one")]
    pub repetitions: u32,
    /// A sample still running after this many seconds is killed and
    /// recorded as failed.
    #[serde(default = "default_timeout")]
    pub timeout_s: f64,
    /// `KEY = VALUE` (any braid key) for every sample.
    #[serde(default)]
    pub set: BTreeMap<String, toml::Value>,
    /// `KEY = VALUE` added when noise is on.
    #[serde(default = "default_noise_set")]
    pub noise_set: BTreeMap<String, toml::Value>,
    /// The payoff map's noise levels: instead of `noise`, each variant runs
    /// quiet and at every placement x duty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payoff: Option<Payoff>,
    /// A command that starts each sample's `braid run`, e.g. `"mpirun -n
    /// 4"`: its words (split at spaces, no quoting), then braid and the
    /// sample's arguments. For runs across MPI ranks (feature `mpi`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launcher: Option<String>,
    /// A directory (relative to the suite file's) under which each sample
    /// writes its LB data (`--lb-data`), in a folder named for the sample
    /// ([`Sample::folder`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lb_data: Option<PathBuf>,
    /// Whether that LB data is written brotli-compressed
    /// (`--lb-data-compress`, as vt writes by default).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lb_data_compress: bool,
    /// `workload` values to run each variant under (an axis; absent = the
    /// configuration's, usually uniform).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workloads: Vec<String>,
    /// `KEY = [VALUES]`: each variant runs at every combination (an axis,
    /// e.g. `lb_alpha = [0.1, 0.2, 0.3]`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sweep: BTreeMap<String, Vec<toml::Value>>,
    /// The variants the sweep applies to (absent = all); the others run
    /// once per workload, at the configuration's values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub swept_variants: Vec<String>,
    /// A calibration `braid validate` wrote (relative to the suite file's
    /// directory): its `KEY = VALUE` lines apply to every sample before
    /// `[set]` (engine `sim` only), and its lines are part of the suite's
    /// digest, so results state which calibration they rest on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<PathBuf>,
}

/// Where and how hard the payoff map's noise goes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Payoff {
    /// Shares of a core the noise takes, each in (0, 1).
    #[serde(default)]
    pub duties: Vec<f64>,
    /// Named sets of noisy cores, in panel order.
    #[serde(default)]
    pub placements: Vec<Placement>,
    /// The application's imbalance, one panel each: a workload whose
    /// factor `F` runs at every one of `factors` (quiet).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workloads: Vec<Imbalance>,
}

/// A named workload of growing intensity: `shape` with `F` replaced by
/// each of `factors`, e.g. `hotspot(F, 0.5, 0.5, 0.1)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Imbalance {
    pub name: String,
    pub shape: String,
    pub factors: Vec<f64>,
}

impl Imbalance {
    /// The `workload` value at factor `f`.
    pub(crate) fn at(&self, f: f64) -> String {
        self.shape.replace('F', &f.to_string())
    }
}

/// A named set of noisy cores: `auto` (next to the source) or a list of
/// core ids like "0,1,2,3".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Placement {
    pub name: String,
    pub cores: String,
}

impl Placement {
    /// The `noise_cores` value for this placement at `duty`.
    pub(crate) fn noise_cores(&self, duty: f64) -> String {
        self.cores
            .split(',')
            .map(|c| format!("{}:{duty}", c.trim()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn quiet_only() -> Vec<bool> {
    vec![false]
}
fn one() -> u32 {
    1
}
fn default_timeout() -> f64 {
    600.0
}
fn default_noise_set() -> BTreeMap<String, toml::Value> {
    BTreeMap::from([
        ("noise".to_string(), toml::Value::from("process")),
        ("noise_cores".to_string(), toml::Value::from("auto:0.19")),
    ])
}

/// One run of one variant under one noise setting.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Sample {
    pub variant: String,
    pub noise: bool,
    pub repetition: u32,
    /// Payoff suites: the noisy placement's name and the duty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duty: Option<f64>,
    /// The `workload` it runs under, when the suite has that axis (or a
    /// payoff imbalance panel).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
    /// Payoff imbalance panels: the workload's factor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub factor: Option<f64>,
    /// The swept keys' values.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sweep: BTreeMap<String, String>,
}

impl Sample {
    /// The sample's folder name: its [key](Self::key) with every character
    /// but letters, digits, `.`, `+`, `-` and `_` as `_`, then 8 hex digits
    /// of the key's hash (FNV-1a), so that two keys that read the same once
    /// cleaned keep apart.
    pub(crate) fn folder(&self) -> String {
        let key = self.key();
        let clean: String = key
            .chars()
            .map(|c| match c {
                'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '+' | '-' | '_' => c,
                _ => '_',
            })
            .collect();
        let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        format!("{clean}-{:08x}", hash as u32)
    }

    /// Identifies the sample within its suite (what resuming skips). The
    /// parts for workloads and sweeps are added only when present, so the
    /// keys of older suites stay what they were.
    pub(crate) fn key(&self) -> String {
        let noise = match (&self.placement, self.duty, self.factor) {
            (Some(p), Some(d), _) => format!("{p} @ {d}"),
            (Some(p), None, Some(f)) => format!("{p} x {f}"),
            _ if self.noise => "noise".into(),
            _ => "quiet".into(),
        };
        let mut key = format!("{} | {noise} | {}", self.variant, self.repetition);
        if let (Some(w), None) = (&self.workload, self.factor) {
            key.push_str(&format!(" | {w}"));
        }
        for (k, v) in &self.sweep {
            key.push_str(&format!(" | {k}={v}"));
        }
        key
    }
}

/// A suite read from disk, where it lives, and its expansion.
#[derive(Debug, Clone)]
pub(crate) struct LoadedSuite {
    pub suite: Suite,
    pub path: PathBuf,
    /// The `calibration` file's lines as `KEY=VALUE` overrides (empty
    /// without one).
    pub calibrated: Vec<String>,
    /// Each payoff placement's index by name, made at the first look (a
    /// suite of 10^5 placements looks each sample's up).
    pub places: std::sync::OnceLock<std::collections::HashMap<String, usize>>,
    /// [`LoadedSuite::digest`], made at the first ask (every record
    /// carries it; a suite of 10^5 placements took milliseconds a record
    /// to serialize again).
    pub digest: std::sync::OnceLock<String>,
}

impl LoadedSuite {
    pub(crate) fn load(path: &Path, repeat: Option<u32>) -> Result<LoadedSuite, ExperimentError> {
        let text = braid_noise::files::read_text(path, MAX_TEXT_BYTES).map_err(|e| {
            ExperimentError::Read {
                path: path.to_path_buf(),
                source: e,
            }
        })?;
        let bad = |message| ExperimentError::BadSuite {
            path: path.to_path_buf(),
            message,
        };
        let mut suite = parse(&text).map_err(bad)?;
        if let Some(n) = repeat {
            suite.repetitions = n;
        }
        // Checked before the samples are expanded into memory.
        suite.samples_within_bound().map_err(bad)?;
        let calibrated = match &suite.calibration {
            None => Vec::new(),
            Some(_) if suite.engine != EngineKind::Sim => {
                return Err(bad(
                    "`calibration` sets the simulator's costs: it needs engine = \"sim\"".into(),
                ));
            }
            Some(file) => {
                let dir = path.parent().unwrap_or(Path::new(""));
                let text = braid_noise::files::read_text(&dir.join(file), MAX_TEXT_BYTES)
                    .map_err(|e| bad(format!("`calibration` {}: {e}", file.display())))?;
                calibration_lines(&text).map_err(|line| {
                    bad(format!(
                        "`calibration` {}: line {line} is not KEY = VALUE",
                        file.display()
                    ))
                })?
            }
        };
        let loaded = LoadedSuite {
            suite,
            path: path.to_path_buf(),
            calibrated,
            places: Default::default(),
            digest: Default::default(),
        };
        // Each sample is known by its key (resume skips a key done, plot
        // groups by it): two samples with one key would lose one.
        let mut keys = std::collections::HashSet::new();
        if let Some(twice) = loaded.samples().into_iter().find(|s| !keys.insert(s.key())) {
            return Err(bad(format!(
                "sample `{}` comes twice: a variant, noise level, duty, placement name, \
                 workload or swept value is listed more than once; list each once",
                twice.key()
            )));
        }
        Ok(loaded)
    }

    /// Samples in run order: repetitions outermost and each variant's quiet
    /// and noisy runs next to each other, so an interrupted suite still
    /// holds matched pairs and slow drift of the machine spreads evenly.
    /// Workloads and swept values, when a suite has them, are the next
    /// axes in: every variant runs each workload at every sweep setting.
    pub(crate) fn samples(&self) -> Vec<Sample> {
        let s = &self.suite;
        let workloads: Vec<Option<&String>> = match s.workloads.is_empty() {
            true => vec![None],
            false => s.workloads.iter().map(Some).collect(),
        };
        let sweeps = sweep_settings(&s.sweep);
        let once = [BTreeMap::new()];
        let mut out = Vec::new();
        for repetition in 0..s.repetitions {
            for &workload in &workloads {
                for variant in &s.variants {
                    let swept = s.swept_variants.is_empty() || s.swept_variants.contains(variant);
                    for sweep in if swept { &sweeps[..] } else { &once[..] } {
                        let sample = |noise, placement: Option<&str>, duty| Sample {
                            variant: variant.clone(),
                            noise,
                            repetition,
                            placement: placement.map(str::to_string),
                            duty,
                            workload: workload.cloned(),
                            factor: None,
                            sweep: sweep.clone(),
                        };
                        let Some(p) = &s.payoff else {
                            out.extend(s.noise.iter().map(|&n| sample(n, None, None)));
                            continue;
                        };
                        out.push(sample(false, None, None));
                        for place in &p.placements {
                            for &d in &p.duties {
                                out.push(sample(true, Some(&place.name), Some(d)));
                            }
                        }
                        for w in &p.workloads {
                            for &f in &w.factors {
                                out.push(Sample {
                                    workload: Some(w.at(f)),
                                    factor: Some(f),
                                    ..sample(false, Some(&w.name), None)
                                });
                            }
                        }
                    }
                }
            }
        }
        out
    }

    /// The `KEY=VALUE` overrides of a sample, suite keys first.
    pub(crate) fn overrides(&self, sample: &Sample) -> Vec<String> {
        let s = &self.suite;
        let noisy = sample.noise.then_some(&s.noise_set);
        // A payoff placement says which cores are noisy: it stands in for
        // `[noise_set]`'s `noise_cores` (the default's `auto:0.19`, say).
        let placed = sample.placement.is_some() && sample.duty.is_some();
        let noisy = noisy
            .into_iter()
            .flatten()
            .filter(|(k, _)| !(placed && k.as_str() == "noise_cores"));
        let mut out: Vec<String> = self.calibrated.clone();
        out.extend(
            s.set
                .iter()
                .chain(noisy)
                .map(|(k, v)| format!("{k}={}", value_text(v))),
        );
        let level = s
            .payoff
            .as_ref()
            .zip(sample.placement.as_ref())
            .zip(sample.duty);
        let index = |p: &Payoff| {
            self.places.get_or_init(|| {
                let names = p.placements.iter().enumerate();
                names.map(|(i, q)| (q.name.clone(), i)).collect()
            })
        };
        if let Some(((p, name), duty)) = level
            && let Some(&i) = index(p).get(name)
        {
            let place = &p.placements[i];
            out.push(format!("noise_cores={}", place.noise_cores(duty)));
        }
        if let Some(w) = &sample.workload {
            out.push(format!("workload={w}"));
        }
        out.extend(sample.sweep.iter().map(|(k, v)| format!("{k}={v}")));
        out
    }

    /// A digest of everything that defines the samples' meaning except the
    /// repetition count, so `--repeat` can extend a results file but an
    /// edited suite cannot append to one.
    pub(crate) fn digest(&self) -> String {
        let made = self.digest.get_or_init(|| {
            let mut s = self.suite.clone();
            s.repetitions = 0;
            let mut canonical = serde_json::to_string(&s).expect("a suite serializes");
            // A recalibration is another suite, not more samples of this one.
            for line in &self.calibrated {
                canonical.push('\n');
                canonical.push_str(line);
            }
            format!("{:016x}", fnv1a(canonical.as_bytes()))
        });
        made.clone()
    }

    /// Where the samples run: the suite's own directory, so that a
    /// `config.txt` next to the suite (if any) is the base configuration.
    pub(crate) fn dir(&self) -> PathBuf {
        match self.path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        }
    }
}

/// A calibration file's `KEY = VALUE` lines as overrides (comments and
/// blank lines skipped); the number of the first line that is not one.
fn calibration_lines(text: &str) -> Result<Vec<String>, usize> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let (key, value) = line.split_once('=').ok_or(i + 1)?;
        let (key, value) = (key.trim(), value.trim());
        if key.is_empty() || value.is_empty() {
            return Err(i + 1);
        }
        out.push(format!("{key}={value}"));
    }
    Ok(out)
}

/// Every combination of the swept keys' values (one empty setting when
/// nothing is swept), in key order then value order.
fn sweep_settings(sweep: &BTreeMap<String, Vec<toml::Value>>) -> Vec<BTreeMap<String, String>> {
    sweep
        .iter()
        .fold(vec![BTreeMap::new()], |settings, (k, values)| {
            settings
                .iter()
                .flat_map(|s| {
                    values.iter().map(move |v| {
                        let mut s = s.clone();
                        s.insert(k.clone(), value_text(v));
                        s
                    })
                })
                .collect()
        })
}

/// Checks a name that is or may become part of a file's name (a suite's,
/// a published set's): not empty, no path separator, not `.` or `..` nor
/// starting with a dot, no NUL or other control character.
pub(crate) fn file_name_part(what: &str, name: &str) -> Result<(), String> {
    let problem = if name.trim().is_empty() {
        "is empty"
    } else if name.contains(['/', '\\']) {
        "holds a path separator"
    } else if name.starts_with('.') {
        "starts with a dot (`..` would leave its folder)"
    } else if name.chars().any(char::is_control) {
        "holds a control character"
    } else {
        return Ok(());
    };
    Err(format!(
        "{what} `{}` {problem}: a name becomes part of file names, so it is letters, digits, \
         `-`, `_` and `.` (e.g. tts-sim)",
        name.escape_debug()
    ))
}

impl Suite {
    /// Refuses a suite of more than [`MAX_SAMPLES`] samples, saying how
    /// they multiply.
    fn samples_within_bound(&self) -> Result<(), String> {
        let levels = match &self.payoff {
            Some(p) => {
                1 + p.duties.len() as u64 * p.placements.len() as u64
                    + p.workloads
                        .iter()
                        .map(|w| w.factors.len() as u64)
                        .sum::<u64>()
            }
            None => self.noise.len() as u64,
        };
        let workloads = self.workloads.len().max(1) as u64;
        let sweeps = self
            .sweep
            .values()
            .fold(1u64, |n, v| n.saturating_mul(v.len() as u64));
        let samples = (self.variants.len() as u64)
            .saturating_mul(levels)
            .saturating_mul(workloads)
            .saturating_mul(sweeps)
            .saturating_mul(u64::from(self.repetitions));
        if samples > MAX_SAMPLES {
            return Err(format!(
                "{} variant(s) x {levels} noise setting(s) x {workloads} workload(s) x {sweeps} \
                 swept setting(s) x {} repetition(s) = {samples} samples, more than \
                 {MAX_SAMPLES}; use fewer",
                self.variants.len(),
                self.repetitions
            ));
        }
        Ok(())
    }
}

fn parse(text: &str) -> Result<Suite, String> {
    let suite: Suite = toml::from_str(text).map_err(|e| e.to_string())?;
    file_name_part("`name`", &suite.name)?;
    if suite.variants.is_empty() {
        return Err("`variants` is empty: name at least one paper label".into());
    }
    one_spelling_each(&suite)?;
    if let Some(p) = &suite.payoff {
        check_payoff(p)?;
    }
    if suite.figure == Figure::Payoff && suite.payoff.is_none() {
        return Err("figure = \"payoff\" needs a [payoff] table (duties, placements)".into());
    }
    if suite.noise.is_empty() {
        return Err("`noise` is empty: use [false], [true] or [false, true]".into());
    }
    if suite.repetitions == 0 {
        return Err("`repetitions` must be at least 1".into());
    }
    if let Some(launcher) = &suite.launcher {
        check_launcher(launcher, suite.engine)?;
    }
    if !(suite.timeout_s > 0.0 && suite.timeout_s <= MAX_SECONDS) {
        return Err(format!(
            "`timeout_s` must be a number of seconds above 0 and at most {MAX_SECONDS:e}, got {}",
            suite.timeout_s
        ));
    }
    check_sweep(&suite)?;
    if let Some(v) = suite
        .swept_variants
        .iter()
        .find(|v| !suite.variants.contains(v))
    {
        return Err(format!("`swept_variants`: `{v}` is not one of `variants`"));
    }
    check_figure(&suite)?;
    for (k, v) in suite.set.iter().chain(&suite.noise_set) {
        if matches!(
            v,
            toml::Value::Array(_) | toml::Value::Table(_) | toml::Value::Datetime(_)
        ) {
            return Err(format!(
                "`{k}`: a braid key takes a string, number or boolean"
            ));
        }
    }
    Ok(suite)
}

/// Variants and workloads are compared by meaning, not spelling: each
/// listed once.
fn one_spelling_each(suite: &Suite) -> Result<(), String> {
    // Compared by meaning, not spelling: `async(4)+joint(0.001)` and
    // `async( 4 ) + joint( 1e-3 )` would run twice under two keys. A label
    // that does not parse is refused where every sample is planned.
    let mut labels: Vec<(&String, braid::Variant)> = Vec::new();
    for v in &suite.variants {
        let Ok(parsed) = braid::Variant::parse(v) else {
            continue;
        };
        // The same spelling twice is the sample key's check, below.
        if let Some((first, _)) = labels.iter().find(|(l, p)| *p == parsed && *l != v) {
            return Err(format!(
                "`variants`: `{first}` and `{v}` are one variant spelled two ways: it would run \
                 twice under two labels; list it once"
            ));
        }
        labels.push((v, parsed));
    }
    let mut workloads: Vec<(&String, braid::WorkloadSpec)> = Vec::new();
    for w in &suite.workloads {
        let spec = braid::WorkloadSpec::parse(w).map_err(|e| format!("`workloads`: `{w}`: {e}"))?;
        if let Some((first, _)) = workloads.iter().find(|(n, s)| *s == spec && *n != w) {
            return Err(format!(
                "`workloads`: `{first}` and `{w}` are one workload spelled two ways: it would \
                 run twice under two names; list it once"
            ));
        }
        workloads.push((w, spec));
    }
    Ok(())
}

/// A `[payoff]` table: duties and placements, or workloads, each named
/// so that a sample's key reads as its parts.
fn check_payoff(p: &Payoff) -> Result<(), String> {
    let noise = !p.duties.is_empty() && !p.placements.is_empty();
    if !noise && p.workloads.is_empty() {
        return Err("`payoff` needs at least one duty and one placement, or a workload".into());
    }
    if p.duties.is_empty() != p.placements.is_empty() {
        return Err("`payoff` needs both duties and placements, or neither".into());
    }
    // A sample's key joins the names with ` | `, ` @ ` and ` x `: a
    // name holding one would read as two parts of another sample's.
    let names = p
        .placements
        .iter()
        .map(|q| ("placement", &q.name))
        .chain(p.workloads.iter().map(|w| ("workload", &w.name)));
    for (what, name) in names {
        let clash = ['|', '@'].iter().any(|c| name.contains(*c)) || name.contains(" x ");
        if name.trim().is_empty() || clash {
            return Err(format!(
                "`payoff` {what} name `{name}`: a name must not be empty or hold `|`, `@` \
                 or ` x ` (they separate the parts of a sample's key)"
            ));
        }
    }
    for w in &p.workloads {
        if w.factors.is_empty() || !w.shape.contains('F') {
            return Err(format!(
                "`payoff.workloads` `{}`: needs factors and a shape with F in it, e.g. \
                 \"hotspot(F, 0.5, 0.5, 0.1)\"",
                w.name
            ));
        }
        for &f in &w.factors {
            braid::WorkloadSpec::parse(&w.at(f))
                .map_err(|e| format!("`payoff.workloads` `{}` at {f}: {e}", w.name))?;
        }
    }
    if let Some(d) = p.duties.iter().find(|d| !(**d > 0.0 && **d < 1.0)) {
        return Err(format!(
            "`payoff.duties`: {d} is not strictly between 0 and 1"
        ));
    }
    Ok(())
}

/// A launcher is a command here, for real runs.
fn check_launcher(launcher: &str, engine: EngineKind) -> Result<(), String> {
    let Some(program) = launcher.split_whitespace().next() else {
        return Err("`launcher` is empty: name a command, e.g. \"mpirun -n 4\"".into());
    };
    if !is_a_command(program) {
        return Err(format!(
            "`launcher`: `{program}` is not a command here (no such file, and not on PATH)"
        ));
    }
    if engine != EngineKind::Run {
        return Err("`launcher` starts real runs: it needs engine = \"run\"".into());
    }
    Ok(())
}

/// Every swept key has values, each a string, number or boolean.
fn check_sweep(suite: &Suite) -> Result<(), String> {
    for (k, values) in &suite.sweep {
        if values.is_empty() {
            return Err(format!("`sweep.{k}` is empty: give at least one value"));
        }
        if let Some(v) = values.iter().find(|v| {
            matches!(
                v,
                toml::Value::Array(_) | toml::Value::Table(_) | toml::Value::Datetime(_)
            )
        }) {
            return Err(format!(
                "`sweep.{k}`: {v} is not a string, number or boolean"
            ));
        }
    }
    Ok(())
}

/// What each figure needs of the suite.
fn check_figure(suite: &Suite) -> Result<(), String> {
    if matches!(suite.figure, Figure::Workloads | Figure::Gains) && suite.workloads.is_empty() {
        return Err(format!(
            "figure = \"{}\" needs `workloads`",
            if suite.figure == Figure::Gains {
                "gains"
            } else {
                "workloads"
            }
        ));
    }
    if suite.figure == Figure::Gains && !suite.sweep.contains_key("lb_alpha") {
        return Err("figure = \"gains\" needs a [sweep] of lb_alpha".into());
    }
    if suite.figure == Figure::Scale
        && (suite.engine != EngineKind::Sim || !suite.sweep.contains_key("sim_topology"))
    {
        return Err(
            "figure = \"scale\" needs engine = \"sim\" and a [sweep] of sim_topology".into(),
        );
    }
    Ok(())
}

fn value_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// FNV-1a, 64 bit: a stable digest (std's hashers may change between
/// releases, and results files outlive builds).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests;

/// Whether `program` names a file to run: as a path (with a `/`) or
/// found on `PATH`, as the shell and `Command` look it up. Checked when a
/// suite loads, so that a launcher that is not there stops the suite
/// before it writes anything.
fn is_a_command(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        return runnable(std::path::Path::new(program));
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| runnable(&dir.join(program))))
}
