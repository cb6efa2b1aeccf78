//! Run configuration: the `config.txt` format (`key = value`, `#` comments),
//! `KEY=VALUE` overrides, paper labels applied on top, and the checks that
//! need no hardware. Every bad input becomes a [`ConfigError`] naming the key
//! and, for a file, the line.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::engine::{Slow, Stall};
use crate::limits::*;
use crate::sim::SimCosts;
use crate::topology::SyntheticTopology;
use crate::variant::{BalancerKind, Mode, Variant, VariantError};

/// `auto`, or a value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AutoOr<T> {
    Auto,
    Value(T),
}

impl<T: Serialize> Serialize for AutoOr<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            AutoOr::Auto => s.serialize_str("auto"),
            AutoOr::Value(v) => v.serialize(s),
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for AutoOr<T> {
    /// `"auto"`, or a value as `T` reads it (the inverse of `Serialize`).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Repr<T> {
            Value(T),
            Text(String),
        }
        match Repr::<T>::deserialize(d)? {
            Repr::Value(v) => Ok(AutoOr::Value(v)),
            Repr::Text(t) if t == "auto" => Ok(AutoOr::Auto),
            Repr::Text(t) => Err(serde::de::Error::custom(format!(
                "expected auto or a value, found `{t}`"
            ))),
        }
    }
}

impl<T> AutoOr<T> {
    /// The value, or `None` for `auto`.
    ///
    /// ```
    /// use braid::config::AutoOr;
    /// assert_eq!(AutoOr::Value(3).value(), Some(&3));
    /// assert_eq!(AutoOr::<u8>::Auto.value(), None);
    /// ```
    pub fn value(&self) -> Option<&T> {
        match self {
            AutoOr::Auto => None,
            AutoOr::Value(v) => Some(v),
        }
    }
}

impl<T: fmt::Display> fmt::Display for AutoOr<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AutoOr::Auto => write!(f, "auto"),
            AutoOr::Value(v) => write!(f, "{v}"),
        }
    }
}

/// Where the parasite noise runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NoiseMode {
    None,
    /// A child process (`braid __parasite`), as on the paper's ARCHER.
    Process,
    /// A thread inside braid, as on the paper's Cirrus.
    Thread,
}

/// One noisy core: its id and, optionally, the duty cycle to aim for
/// (otherwise `noise_sleep_us` / `noise_work_iters` as given).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct NoiseCore {
    /// `auto`: the core of the thread whose domain touches the source.
    pub core: AutoOr<usize>,
    pub duty: Option<f64>,
}

/// Everything a run needs to know, as typed values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Config {
    pub domain_size: usize,
    pub subdomains: usize,
    pub threads: AutoOr<usize>,
    pub mode: Mode,
    pub staleness: u64,
    pub max_iterations: u64,
    pub tolerance: f64,
    pub time_limit: f64,
    pub sockets: AutoOr<usize>,
    pub cores: AutoOr<Vec<usize>>,
    pub oversubscribe: bool,
    pub seed: u64,
    /// GiB a run may take; `auto` = the machine's available memory.
    pub memory_limit: AutoOr<f64>,
    pub balancer: BalancerKind,
    pub lb_interval: f64,
    pub hybrid_period: u64,
    pub pairs: usize,
    /// `auto`: `subdomains - 2` (at least 1), the paper's 2 at 4.
    pub low_threshold: AutoOr<usize>,
    /// `auto`: `subdomains + 2`, the paper's 6 at 4.
    pub high_threshold: AutoOr<usize>,
    /// A pair is balanced only when its count gap exceeds this; `auto`:
    /// `policy::DEFAULT_MIN_GAP` (resolved by `plan`).
    pub lb_min_gap: AutoOr<u64>,
    /// Move only when the move is predicted to help (see `policy`).
    pub lb_predict: bool,
    pub trace_interval: f64,
    pub stall: Option<Stall>,
    pub slow: Option<Slow>,
    pub noise: NoiseMode,
    pub noise_cores: Vec<NoiseCore>,
    pub noise_sleep_us: u64,
    pub noise_work_iters: u64,
    /// `braid sim`: do the real arithmetic (needed for residuals).
    pub numerics: bool,
    pub sim_topology: SyntheticTopology,
    /// `braid sim`: speed factor of listed cores (others 1.0); higher is faster.
    pub sim_speed: Vec<(usize, f64)>,
    #[serde(flatten)]
    pub sim_costs: SimCosts,
}

impl Default for Config {
    /// The paper's settings; `config.txt` repeats them with their docs.
    fn default() -> Self {
        Config {
            domain_size: 300,
            subdomains: 4,
            threads: AutoOr::Auto,
            mode: Mode::Async,
            staleness: 0,
            max_iterations: 5000,
            tolerance: 0.0,
            time_limit: 0.0,
            sockets: AutoOr::Auto,
            cores: AutoOr::Auto,
            oversubscribe: false,
            seed: 0,
            memory_limit: AutoOr::Auto,
            balancer: BalancerKind::None,
            lb_interval: 0.001,
            hybrid_period: 500,
            pairs: 6,
            low_threshold: AutoOr::Auto,
            high_threshold: AutoOr::Auto,
            lb_min_gap: AutoOr::Auto,
            lb_predict: true,
            trace_interval: 0.0,
            stall: None,
            slow: None,
            noise: NoiseMode::None,
            noise_cores: vec![NoiseCore {
                core: AutoOr::Auto,
                duty: None,
            }],
            noise_sleep_us: 200,
            noise_work_iters: 10_000,
            numerics: false,
            sim_topology: SyntheticTopology {
                sockets: 2,
                cores_per_socket: 18,
            },
            sim_speed: Vec::new(),
            sim_costs: SimCosts::default(),
        }
    }
}

/// Where a setting came from, for error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    File { path: PathBuf, line: usize },
    Override(String),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File { path, line } => write!(f, "{}:{line}", path.display()),
            Origin::Override(text) => write!(f, "override `{text}`"),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{origin}: expected `key = value`, got `{text}`")]
    Syntax { origin: Origin, text: String },
    #[error("{origin}: unknown key `{key}` (known keys: {})", KEYS.join(", "))]
    UnknownKey { origin: Origin, key: String },
    #[error("{origin}: key `{key}` is set twice (first on line {first})")]
    Duplicate {
        origin: Origin,
        key: String,
        first: usize,
    },
    #[error("override `{key}` is given twice (overrides {first} and {second})")]
    DuplicateOverride {
        key: String,
        first: usize,
        second: usize,
    },
    #[error("{origin}: `{key}`: {expected}, got `{value}`")]
    BadValue {
        origin: Origin,
        key: &'static str,
        value: String,
        expected: String,
    },
    #[error("`{key}`: {message}")]
    Invalid { key: &'static str, message: String },
    #[error(transparent)]
    Variant(#[from] VariantError),
}

/// Every key, in `config.txt` order.
pub const KEYS: &[&str] = &[
    "domain_size",
    "subdomains",
    "mode",
    "staleness",
    "max_iterations",
    "tolerance",
    "time_limit",
    "threads",
    "sockets",
    "cores",
    "oversubscribe",
    "seed",
    "memory_limit",
    "balancer",
    "lb_interval",
    "hybrid_period",
    "pairs",
    "low_threshold",
    "high_threshold",
    "lb_min_gap",
    "lb_predict",
    "trace_interval",
    "noise",
    "noise_cores",
    "noise_sleep_us",
    "noise_work_iters",
    "stall",
    "slow",
    "numerics",
    "sim_topology",
    "sim_speed",
    "sim_cell_ns",
    "sim_update_ns",
    "sim_balancer_ns",
    "sim_remote_cell_ns",
    "sim_barrier_ns",
    "sim_noise_iter_ns",
    "sim_residual_factor",
];

impl Config {
    /// Reads a config file over the defaults.
    pub fn from_file(path: &Path) -> Result<Config, ConfigError> {
        let text =
            crate::files::read_text(path, MAX_TEXT_BYTES).map_err(|source| ConfigError::Io {
                path: path.to_path_buf(),
                source,
            })?;
        let mut cfg = Config::default();
        cfg.apply_text(&text, path)?;
        Ok(cfg)
    }

    /// Applies the lines of a config file.
    pub fn apply_text(&mut self, text: &str, path: &Path) -> Result<(), ConfigError> {
        let mut seen: Vec<(String, usize)> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let origin = Origin::File {
                path: path.to_path_buf(),
                line: i + 1,
            };
            let (key, value) = split_pair(line).ok_or_else(|| ConfigError::Syntax {
                origin: origin.clone(),
                text: raw.trim().to_string(),
            })?;
            if let Some((_, first)) = seen.iter().find(|(k, _)| k == key) {
                return Err(ConfigError::Duplicate {
                    origin,
                    key: key.to_string(),
                    first: *first,
                });
            }
            seen.push((key.to_string(), i + 1));
            self.set(key, value, origin)?;
        }
        Ok(())
    }

    /// Applies `KEY=VALUE` overrides from the command line, in order; a key
    /// given twice is refused, as in a file.
    pub fn apply_overrides<S: AsRef<str>>(&mut self, texts: &[S]) -> Result<(), ConfigError> {
        let mut seen: Vec<(&str, usize)> = Vec::new();
        for (i, text) in texts.iter().enumerate() {
            let text = text.as_ref();
            self.apply_override(text)?;
            let key = split_pair(text).map_or("", |(k, _)| k);
            if let Some(&(_, first)) = seen.iter().find(|(k, _)| *k == key) {
                return Err(ConfigError::DuplicateOverride {
                    key: key.to_string(),
                    first: first + 1,
                    second: i + 1,
                });
            }
            seen.push((key, i));
        }
        Ok(())
    }

    /// Applies one `KEY=VALUE` override from the command line.
    pub fn apply_override(&mut self, text: &str) -> Result<(), ConfigError> {
        let origin = Origin::Override(text.to_string());
        let (key, value) = split_pair(text).ok_or_else(|| ConfigError::Syntax {
            origin: origin.clone(),
            text: text.to_string(),
        })?;
        self.set(key, value, origin)
    }

    /// Sets mode, staleness, subdomains and balancing from a paper label.
    pub fn apply_variant(&mut self, label: &str) -> Result<(), ConfigError> {
        let v = Variant::parse(label)?;
        self.mode = v.mode;
        self.staleness = v.staleness;
        self.subdomains = v.subdomains;
        self.balancer = v.balancer;
        if v.balancer != BalancerKind::None {
            self.lb_interval = v.lb_interval;
        }
        if v.balancer == BalancerKind::Hybrid {
            self.hybrid_period = v.hybrid_period;
        }
        Ok(())
    }

    /// `low_threshold`, resolved: `subdomains - 2`, at least 1 (the paper's
    /// 2 at 4 subdomains).
    pub fn low_threshold(&self) -> usize {
        match self.low_threshold {
            AutoOr::Value(n) => n,
            AutoOr::Auto => self.subdomains.saturating_sub(2).max(1),
        }
    }

    /// `high_threshold`, resolved: `subdomains + 2` (the paper's 6 at 4).
    pub fn high_threshold(&self) -> usize {
        match self.high_threshold {
            AutoOr::Value(n) => n,
            AutoOr::Auto => self.subdomains + 2,
        }
    }

    /// The paper label of this configuration.
    pub fn variant(&self) -> Variant {
        Variant {
            mode: self.mode,
            staleness: self.staleness,
            subdomains: self.subdomains,
            balancer: self.balancer,
            lb_interval: self.lb_interval,
            hybrid_period: self.hybrid_period,
        }
    }

    fn set(&mut self, key: &str, value: &str, origin: Origin) -> Result<(), ConfigError> {
        let p = Parser { value, origin };
        match key {
            "domain_size" => self.domain_size = p.count("domain_size", MAX_DOMAIN_SIZE)?,
            "subdomains" => self.subdomains = p.count("subdomains", MAX_SUBDOMAINS)?,
            "threads" => self.threads = p.auto_or(|p| p.count("threads", MAX_THREADS))?,
            "mode" => {
                self.mode = match value {
                    "sync" => Mode::Sync,
                    "ssync" => Mode::Ssync,
                    "async" => Mode::Async,
                    _ => return Err(p.bad("mode", "one of sync, ssync, async")),
                }
            }
            "staleness" => self.staleness = p.whole("staleness")?,
            "max_iterations" => {
                self.max_iterations = p.within("max_iterations", 1, MAX_ITERATIONS)?
            }
            "tolerance" => self.tolerance = p.number("tolerance", "a number", 1.0)?,
            "time_limit" => self.time_limit = p.seconds("time_limit", " (0 = none)")?,
            "sockets" => self.sockets = p.auto_or(|p| p.count("sockets", MAX_CPUS))?,
            "cores" => self.cores = p.auto_or(|p| p.core_list())?,
            "oversubscribe" => {
                self.oversubscribe = match value {
                    "true" => true,
                    "false" => false,
                    _ => return Err(p.bad("oversubscribe", "true or false")),
                }
            }
            "seed" => self.seed = p.whole("seed")?,
            "memory_limit" => {
                self.memory_limit = p.auto_or(|p| p.number("memory_limit", "GiB", 1e9))?
            }
            "balancer" => {
                self.balancer = match value {
                    "none" => BalancerKind::None,
                    "split" => BalancerKind::Split,
                    "joint" => BalancerKind::Joint,
                    "hybrid" => BalancerKind::Hybrid,
                    _ => return Err(p.bad("balancer", "one of none, split, joint, hybrid")),
                }
            }
            "lb_interval" => self.lb_interval = p.seconds("lb_interval", "")?,
            "hybrid_period" => self.hybrid_period = p.positive("hybrid_period")? as u64,
            "pairs" => self.pairs = p.positive("pairs")?,
            "low_threshold" => {
                self.low_threshold = p.auto_or(|p| {
                    p.within("low_threshold", 0, MAX_SUBDOMAINS as u64)
                        .map(|n| n as usize)
                })?
            }
            "high_threshold" => {
                self.high_threshold = p.auto_or(|p| p.count("high_threshold", MAX_SUBDOMAINS))?
            }
            "lb_predict" => {
                self.lb_predict = match value {
                    "true" => true,
                    "false" => false,
                    _ => return Err(p.bad("lb_predict", "true or false")),
                }
            }
            "lb_min_gap" => {
                self.lb_min_gap = p.auto_or(|p| p.within("lb_min_gap", 0, MAX_ITERATIONS))?
            }
            "trace_interval" => {
                self.trace_interval = p.seconds("trace_interval", " (0 = no trace)")?
            }
            "stall" => self.stall = p.stall()?,
            "slow" => self.slow = p.slow()?,
            "noise" => {
                self.noise = match value {
                    "none" => NoiseMode::None,
                    "process" => NoiseMode::Process,
                    "thread" => NoiseMode::Thread,
                    _ => return Err(p.bad("noise", "one of none, process, thread")),
                }
            }
            "noise_cores" => self.noise_cores = p.noise_cores()?,
            "noise_sleep_us" => {
                self.noise_sleep_us = p.within("noise_sleep_us", 0, MAX_NOISE_SLEEP_US)?
            }
            "noise_work_iters" => {
                self.noise_work_iters = p.within("noise_work_iters", 0, MAX_NOISE_WORK_ITERS)?
            }
            "numerics" => {
                self.numerics = match value {
                    "true" => true,
                    "false" => false,
                    _ => return Err(p.bad("numerics", "true or false")),
                }
            }
            "sim_topology" => self.sim_topology = p.synthetic()?,
            "sim_speed" => self.sim_speed = p.speeds()?,
            "sim_cell_ns" => self.sim_costs.cell_ns = p.cost("sim_cell_ns")?,
            "sim_update_ns" => self.sim_costs.update_ns = p.cost("sim_update_ns")?,
            "sim_balancer_ns" => self.sim_costs.balancer_ns = p.cost("sim_balancer_ns")?,
            "sim_remote_cell_ns" => self.sim_costs.remote_cell_ns = p.cost("sim_remote_cell_ns")?,
            "sim_barrier_ns" => self.sim_costs.barrier_ns = p.cost("sim_barrier_ns")?,
            "sim_noise_iter_ns" => self.sim_costs.noise_iter_ns = p.cost("sim_noise_iter_ns")?,
            "sim_residual_factor" => {
                self.sim_costs.residual_factor =
                    p.number("sim_residual_factor", "a multiple of sim_cell_ns", 1e3)?;
            }
            _ => {
                return Err(ConfigError::UnknownKey {
                    origin: p.origin,
                    key: key.to_string(),
                });
            }
        }
        Ok(())
    }

    /// Checks that need no hardware knowledge.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |key, message: String| Err(ConfigError::Invalid { key, message });
        if self.mode != Mode::Async && self.balancer != BalancerKind::None {
            return invalid(
                "balancer",
                format!("balancing needs mode = async (mode is {:?})", self.mode).to_lowercase(),
            );
        }
        if self.mode == Mode::Sync && self.staleness != 0 {
            return invalid(
                "staleness",
                "only ssync uses staleness; set it to 0 or use mode = ssync".into(),
            );
        }
        if self.noise != NoiseMode::None && self.noise_sleep_us == 0 && self.noise_work_iters == 0 {
            return invalid(
                "noise_sleep_us",
                "noise_sleep_us and noise_work_iters cannot both be 0".into(),
            );
        }
        let (low, high) = (self.low_threshold(), self.high_threshold());
        if low >= high {
            return invalid(
                "low_threshold",
                format!("must be below high_threshold ({low} >= {high})"),
            );
        }
        // Every thread starts with `subdomains`: a receiver needs fewer than
        // the high threshold, a donor more than the low one.
        if self.balancer != BalancerKind::None {
            let n = self.subdomains;
            if high <= n {
                return invalid(
                    "high_threshold",
                    format!(
                        "{high} <= subdomains ({n}): no thread could ever receive a subdomain, \
                         so the balancer would never move one (use auto: subdomains + 2)"
                    ),
                );
            }
            if low >= n {
                return invalid(
                    "low_threshold",
                    format!(
                        "{low} >= subdomains ({n}): no thread could ever give a subdomain away, \
                         so the balancer would never move one (use auto: subdomains - 2)"
                    ),
                );
            }
        }
        if let AutoOr::Value(t) = self.threads {
            let hooks = [
                ("stall", self.stall.map(|s| s.thread)),
                ("slow", self.slow.map(|s| s.thread)),
            ];
            for (key, thread) in hooks {
                if let Some(thread) = thread.filter(|&th| th >= t) {
                    return invalid(key, format!("thread {thread} does not exist ({t} threads)"));
                }
            }
        }
        Ok(())
    }
}

fn split_pair(text: &str) -> Option<(&str, &str)> {
    let (k, v) = text.split_once('=')?;
    let (k, v) = (k.trim(), v.trim());
    (!k.is_empty() && !v.is_empty()).then_some((k, v))
}

/// Parses one value, producing errors that name the key.
struct Parser<'a> {
    value: &'a str,
    origin: Origin,
}

impl Parser<'_> {
    fn bad(&self, key: &'static str, expected: impl Into<String>) -> ConfigError {
        // Long values (a pasted file, say) are cut in the message.
        let mut value: String = self.value.chars().take(80).collect();
        if value.len() < self.value.len() {
            value.push_str("...");
        }
        ConfigError::BadValue {
            origin: self.origin.clone(),
            key,
            value,
            expected: expected.into(),
        }
    }

    fn whole(&self, key: &'static str) -> Result<u64, ConfigError> {
        self.value
            .parse()
            .map_err(|_| self.bad(key, "a whole number >= 0"))
    }

    /// A whole number in `lo..=hi`.
    fn within(&self, key: &'static str, lo: u64, hi: u64) -> Result<u64, ConfigError> {
        self.value
            .parse()
            .ok()
            .filter(|n: &u64| (lo..=hi).contains(n))
            .ok_or_else(|| self.bad(key, format!("a whole number from {lo} to {hi}")))
    }

    fn positive(&self, key: &'static str) -> Result<usize, ConfigError> {
        self.value
            .parse()
            .ok()
            .filter(|&n: &usize| n > 0)
            .ok_or_else(|| self.bad(key, "a whole number >= 1"))
    }

    /// A count of things braid allocates: `1..=max`.
    fn count(&self, key: &'static str, max: usize) -> Result<usize, ConfigError> {
        self.within(key, 1, max as u64).map(|n| n as usize)
    }

    /// A finite number in `0..=max`; `unit` names what it counts.
    fn number(&self, key: &'static str, unit: &str, max: f64) -> Result<f64, ConfigError> {
        self.number_noted(key, unit, max, "")
    }

    fn seconds(&self, key: &'static str, what: &str) -> Result<f64, ConfigError> {
        self.number_noted(key, "seconds", MAX_SECONDS, what)
    }

    /// A finite number in `0..=max`; the message ends with `note`.
    fn number_noted(
        &self,
        key: &'static str,
        unit: &str,
        max: f64,
        note: &str,
    ) -> Result<f64, ConfigError> {
        self.value
            .parse()
            .ok()
            .filter(|f: &f64| (0.0..=max).contains(f))
            .ok_or_else(|| self.bad(key, format!("{unit} from 0 to {max:e}{note}")))
    }

    fn auto_or<T>(
        &self,
        f: impl FnOnce(&Self) -> Result<T, ConfigError>,
    ) -> Result<AutoOr<T>, ConfigError> {
        if self.value == "auto" {
            Ok(AutoOr::Auto)
        } else {
            f(self).map(AutoOr::Value)
        }
    }

    /// `0,2,4-7`
    fn core_list(&self) -> Result<Vec<usize>, ConfigError> {
        let bad = || {
            self.bad(
                "cores",
                format!("auto or a list of CPU ids below {MAX_CPUS} like 0,2,4-7"),
            )
        };
        let id = |s: &str| {
            s.trim()
                .parse::<usize>()
                .ok()
                .filter(|&c| c < MAX_CPUS)
                .ok_or_else(bad)
        };
        let mut cores = Vec::new();
        for part in self.value.split(',') {
            match part.split_once('-') {
                Some((a, b)) => {
                    let (a, b) = (id(a)?, id(b)?);
                    if a > b || cores.len() + (b - a) >= MAX_CPUS {
                        return Err(bad());
                    }
                    cores.extend(a..=b);
                }
                None => cores.push(id(part)?),
            }
            if cores.len() > MAX_CPUS {
                return Err(bad());
            }
        }
        let mut sorted = cores.clone();
        sorted.sort_unstable();
        sorted.dedup();
        if sorted.len() != cores.len() {
            return Err(self.bad("cores", "a list without repeated cores"));
        }
        Ok(cores)
    }

    /// `none` or `THREAD@AFTER:SECONDS`
    fn stall(&self) -> Result<Option<Stall>, ConfigError> {
        if self.value == "none" {
            return Ok(None);
        }
        let bad = || {
            self.bad(
                "stall",
                format!(
                    "none or THREAD@UPDATES:SECONDS (SECONDS up to {MAX_SECONDS:e}), e.g. 0@100:2.5"
                ),
            )
        };
        let (thread, rest) = self.value.split_once('@').ok_or_else(bad)?;
        let (after, seconds) = rest.split_once(':').ok_or_else(bad)?;
        let seconds: f64 = seconds.parse().map_err(|_| bad())?;
        if !(seconds.is_finite() && (0.0..=MAX_SECONDS).contains(&seconds)) {
            return Err(bad());
        }
        Ok(Some(Stall {
            thread: thread.parse().map_err(|_| bad())?,
            after: after.parse().map_err(|_| bad())?,
            seconds,
        }))
    }
}

impl Parser<'_> {
    fn cost(&self, key: &'static str) -> Result<f64, ConfigError> {
        self.number(key, "nanoseconds", MAX_COST_NS)
    }

    /// `pack:2 core:18` (hwloc's synthetic syntax)
    fn synthetic(&self) -> Result<SyntheticTopology, ConfigError> {
        let bad = || {
            self.bad(
                "sim_topology",
                format!(
                    "levels like `pack:2 core:18` with counts >= 1, at most {MAX_CPUS} cores in all"
                ),
            )
        };
        let (mut sockets, mut cores) = (1usize, 1usize);
        let mut levels = 0;
        for level in self.value.split_whitespace() {
            let (kind, n) = level.split_once(':').ok_or_else(bad)?;
            let n: usize = n.parse().ok().filter(|&n| n > 0).ok_or_else(bad)?;
            match kind.to_ascii_lowercase().as_str() {
                "pack" | "package" | "socket" => {
                    sockets = sockets.checked_mul(n).ok_or_else(bad)?
                }
                "machine" | "group" | "numa" | "node" | "l3" | "l3cache" | "l2" | "l2cache"
                | "l1" | "l1cache" | "core" | "pu" => {
                    cores = cores.checked_mul(n).ok_or_else(bad)?
                }
                _ => return Err(bad()),
            }
            levels += 1;
        }
        if levels == 0 || sockets.checked_mul(cores).is_none_or(|n| n > MAX_CPUS) {
            return Err(bad());
        }
        Ok(SyntheticTopology {
            sockets,
            cores_per_socket: cores,
        })
    }

    /// `uniform` or `CORE:FACTOR, ...`
    fn speeds(&self) -> Result<Vec<(usize, f64)>, ConfigError> {
        if self.value == "uniform" {
            return Ok(Vec::new());
        }
        let bad = || {
            self.bad(
                "sim_speed",
                format!(
                    "uniform, or CORE:FACTOR with CORE below {MAX_CPUS} and FACTOR in (0, {MAX_FACTOR:e}], e.g. 3:0.95, 7:1.05"
                ),
            )
        };
        self.value
            .split(',')
            .map(|part| {
                let (c, f) = part.trim().split_once(':').ok_or_else(bad)?;
                let f: f64 = f.trim().parse().map_err(|_| bad())?;
                if !(f > 0.0 && f <= MAX_FACTOR) {
                    return Err(bad());
                }
                let c: usize = c.trim().parse().map_err(|_| bad())?;
                if c >= MAX_CPUS {
                    return Err(bad());
                }
                Ok((c, f))
            })
            .collect()
    }

    /// `1:0.19, 3:0.05`, `1, 3` (the default rhythm) or `auto[:DUTY]`
    fn noise_cores(&self) -> Result<Vec<NoiseCore>, ConfigError> {
        let bad = || {
            self.bad(
                "noise_cores",
                "a list of CORE or CORE:DUTY (CORE a number or auto, DUTY in (0, 1)), e.g. auto:0.19, 3:0.05",
            )
        };
        let mut cores: Vec<NoiseCore> = Vec::new();
        for part in self.value.split(',') {
            let (core, duty) = match part.trim().split_once(':') {
                Some((c, d)) => {
                    let d: f64 = d.trim().parse().map_err(|_| bad())?;
                    if !(d > 0.0 && d < 1.0) {
                        return Err(bad());
                    }
                    (c, Some(d))
                }
                None => (part.trim(), None),
            };
            let core = match core.trim() {
                "auto" => AutoOr::Auto,
                c => AutoOr::Value(
                    c.parse()
                        .ok()
                        .filter(|&c: &usize| c < MAX_CPUS)
                        .ok_or_else(bad)?,
                ),
            };
            if cores.iter().any(|c| c.core == core) {
                return Err(self.bad("noise_cores", "each core at most once"));
            }
            cores.push(NoiseCore { core, duty });
        }
        Ok(cores)
    }

    /// `none` or `THREAD:FACTOR`
    fn slow(&self) -> Result<Option<Slow>, ConfigError> {
        if self.value == "none" {
            return Ok(None);
        }
        let bad = || {
            self.bad(
                "slow",
                format!("none or THREAD:FACTOR with FACTOR from 0 to {MAX_FACTOR:e}, e.g. 0:1.0"),
            )
        };
        let (thread, factor) = self.value.split_once(':').ok_or_else(bad)?;
        let factor: f64 = factor.parse().map_err(|_| bad())?;
        if !(factor.is_finite() && (0.0..=MAX_FACTOR).contains(&factor)) {
            return Err(bad());
        }
        Ok(Some(Slow {
            thread: thread.parse().map_err(|_| bad())?,
            factor,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        let mut c = Config::default();
        c.apply_text(text, Path::new("test.txt"))?;
        c.validate()?;
        Ok(c)
    }

    #[test]
    fn the_shipped_config_parses_to_the_defaults() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config.txt");
        assert_eq!(Config::from_file(&path).unwrap(), Config::default());
    }

    #[test]
    fn the_shipped_config_documents_every_key_once_in_key_list_order() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config.txt");
        let text = std::fs::read_to_string(path).unwrap();
        let keys: Vec<&str> = text
            .lines()
            .filter_map(|l| l.split('#').next()?.split_once('='))
            .map(|(k, _)| k.trim())
            .collect();
        assert_eq!(keys, KEYS);
        // And each is documented: a comment above its line (two related
        // keys may share one).
        let lines: Vec<&str> = text.lines().collect();
        for key in KEYS {
            let mut at = lines
                .iter()
                .position(|l| l.starts_with(&format!("{key} ")))
                .unwrap();
            while at > 0 && lines[at - 1].contains('=') && !lines[at - 1].starts_with('#') {
                at -= 1;
            }
            assert!(
                at > 0 && lines[at - 1].starts_with('#'),
                "`{key}` has no comment"
            );
        }
    }

    #[test]
    fn every_key_in_the_key_list_is_accepted() {
        let c = Config::default();
        let json = serde_json::to_value(&c).unwrap();
        let fields: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        let mut keys = KEYS.to_vec();
        keys.sort_unstable();
        let mut fields = fields;
        fields.sort_unstable();
        assert_eq!(keys, fields);
    }

    #[test]
    fn comments_blank_lines_and_spaces_are_ignored() {
        let c = parse("# a comment\n\n  threads = 3   # trailing\nmode=ssync\nstaleness = 30\n")
            .unwrap();
        assert_eq!(c.threads, AutoOr::Value(3));
        assert_eq!(c.mode, Mode::Ssync);
        assert_eq!(c.staleness, 30);
    }

    #[test]
    fn errors_name_the_key_and_the_line() {
        let cases = [
            ("threads = 0", "test.txt:1", "`threads`"),
            ("\nthreads = two", "test.txt:2", "`threads`"),
            ("tolerance = -1e-6", "test.txt:1", "`tolerance`"),
            ("tolerance = nan", "test.txt:1", "`tolerance`"),
            ("mode = fast", "test.txt:1", "`mode`"),
            ("cores = 3-1", "test.txt:1", "`cores`"),
            ("cores = 1,1", "test.txt:1", "`cores`"),
            ("colour = red", "test.txt:1", "`colour`"),
            ("threads 2", "test.txt:1", "key = value"),
            ("threads = 2\nthreads = 3", "test.txt:2", "`threads`"),
            ("stall = 0@x:1", "test.txt:1", "`stall`"),
            ("slow = 0:-1", "test.txt:1", "`slow`"),
            ("slow = 1", "test.txt:1", "`slow`"),
            ("noise = loud", "test.txt:1", "`noise`"),
            ("noise_cores = 1:1.5", "test.txt:1", "`noise_cores`"),
            ("noise_cores = 1:0", "test.txt:1", "`noise_cores`"),
            ("noise_cores = 1, 1", "test.txt:1", "`noise_cores`"),
            (
                "sim_topology = pack:0 core:4",
                "test.txt:1",
                "`sim_topology`",
            ),
            ("sim_topology = blob:2", "test.txt:1", "`sim_topology`"),
            ("sim_speed = 1:0", "test.txt:1", "`sim_speed`"),
            ("sim_cell_ns = -1", "test.txt:1", "`sim_cell_ns`"),
            ("numerics = yes", "test.txt:1", "`numerics`"),
        ];
        for (text, at, key) in cases {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.contains(at) && e.contains(key), "{text:?} -> {e}");
        }
    }

    #[test]
    fn impossible_combinations_are_rejected() {
        for (text, key) in [
            ("mode = sync\nbalancer = joint", "balancer"),
            ("mode = sync\nstaleness = 3", "staleness"),
            ("low_threshold = 6\nhigh_threshold = 6", "low_threshold"),
            ("balancer = split\nhigh_threshold = 4", "high_threshold"),
            (
                "balancer = joint\nsubdomains = 8\nlow_threshold = 2\nhigh_threshold = 6",
                "never",
            ),
            ("balancer = joint\nlow_threshold = 4", "low_threshold"),
            ("threads = 2\nstall = 2@1:1", "stall"),
            ("threads = 2\nslow = 5:1", "slow"),
            (
                "noise = thread\nnoise_sleep_us = 0\nnoise_work_iters = 0",
                "noise_sleep_us",
            ),
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.contains(key), "{text:?} -> {e}");
        }
    }

    #[test]
    fn overrides_and_variants_apply_in_order() {
        let mut c = Config::default();
        c.apply_variant("async(4) + hybrid(0.01, 50)").unwrap();
        assert_eq!(c.variant().to_string(), "async(4)+hybrid(0.01,50)");
        c.apply_variant("ssync(30)").unwrap();
        c.apply_override("subdomains=2").unwrap();
        assert_eq!((c.mode, c.staleness, c.subdomains), (Mode::Ssync, 30, 2));
        assert_eq!(c.balancer, BalancerKind::None);
        let e = c.apply_override("threads=").unwrap_err().to_string();
        assert!(e.contains("override `threads=`"), "{e}");
    }

    #[test]
    fn noise_cores_take_levels_per_core() {
        let c = parse("noise = process\nnoise_cores = 1:0.19, 3:0.05, 4").unwrap();
        assert_eq!(c.noise, NoiseMode::Process);
        let at = |core, duty| NoiseCore {
            core: AutoOr::Value(core),
            duty,
        };
        assert_eq!(
            c.noise_cores,
            vec![at(1, Some(0.19)), at(3, Some(0.05)), at(4, None)]
        );
        let c = parse("noise = thread\nnoise_cores = auto:0.19").unwrap();
        let auto = NoiseCore {
            core: AutoOr::Auto,
            duty: Some(0.19),
        };
        assert_eq!(c.noise_cores, vec![auto]);
    }

    #[test]
    fn synthetic_topologies_follow_hwlocs_syntax() {
        let c = parse("sim_topology = pack:2 l3:1 core:18 pu:1").unwrap();
        assert_eq!(
            (c.sim_topology.sockets, c.sim_topology.cores_per_socket),
            (2, 18)
        );
        let c = parse("sim_topology = package:4 core:6").unwrap();
        assert_eq!(c.sim_topology.to_string(), "pack:4 core:6");
    }

    #[test]
    fn core_lists_accept_ranges() {
        let c = parse("cores = 0, 2-4,7").unwrap();
        assert_eq!(c.cores, AutoOr::Value(vec![0, 2, 3, 4, 7]));
    }
}
