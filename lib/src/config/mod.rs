//! Run configuration: the `config.txt` format (`key = value`, `#` comments),
//! `KEY=VALUE` overrides, paper labels applied on top, and the checks that
//! need no hardware. Every bad input becomes a [`ConfigError`] naming the key
//! and, for a file, the line.

use std::fmt;
use std::path::{Path, PathBuf};

mod keys;
mod parser;
mod recheck;
mod values;

pub use keys::{Config, document};
pub(crate) use keys::{KEYS, run_only, sim_only};
pub use values::AutoOr;
pub(crate) use values::NoiseCore;

use crate::limits::*;
use crate::policy::Scope;
use crate::policy::{LbStrategy, Named};
use crate::variant::{
    BalancerKey, BalancerKind, LabelBalancer, Mode, Pick, Strategy, Variant, VariantError,
};

/// Where a setting came from, for error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A line of a configuration file.
    File {
        /// The file.
        path: PathBuf,
        /// Its line, from 1.
        line: usize,
    },
    /// A `KEY=VALUE` override on the command line, as given.
    Override(String),
    /// A default in the key table.
    Default,
    /// A field of a file braid reads back (a report, a results file).
    Field {
        /// The file.
        file: PathBuf,
        /// The field, as a JSON path (`config.time_limit`).
        field: String,
    },
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File { path, line } => write!(f, "{}:{line}", path.display()),
            Origin::Override(text) => write!(f, "override `{text}`"),
            Origin::Default => write!(f, "the default"),
            Origin::Field { file, field } => write!(f, "{}: field `{field}`", file.display()),
        }
    }
}

/// A configuration that cannot be read: each names the key and where it
/// was set.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file cannot be read (missing, special, too large, not text).
    #[error("cannot read config file {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A line that is not `key = value`.
    #[error("{origin}: expected `key = value`, got `{text}`")]
    Syntax {
        /// Where.
        origin: Origin,
        /// The line or argument.
        text: String,
    },
    /// A key braid does not know.
    #[error("{origin}: unknown key `{key}`{}", unknown_key_hint(key))]
    UnknownKey {
        /// Where.
        origin: Origin,
        /// The key.
        key: String,
    },
    /// A key set twice in one file.
    #[error("{origin}: key `{key}` is set twice (first on line {first})")]
    Duplicate {
        /// Where the second one is.
        origin: Origin,
        /// The key.
        key: String,
        /// The line of the first.
        first: usize,
    },
    /// A key overridden twice on one command line.
    #[error("override `{key}` is given twice (overrides {first} and {second})")]
    DuplicateOverride {
        /// The key.
        key: String,
        /// Which overrides, from 1.
        first: usize,
        /// The second of them.
        second: usize,
    },
    /// A value outside the key's type or bounds.
    #[error("{origin}: `{key}`: {expected}, got `{value}`")]
    BadValue {
        /// Where.
        origin: Origin,
        /// The key.
        key: &'static str,
        /// The value, cut to 80 characters.
        value: String,
        /// What the key takes.
        expected: String,
    },
    /// A paper label that does not parse.
    #[error(transparent)]
    Variant(#[from] VariantError),
}

impl Config {
    /// Reads a config file over the defaults.
    pub fn from_file(path: &Path) -> Result<Config, ConfigError> {
        let text = braid_noise::files::read_text(path, MAX_TEXT_BYTES).map_err(|source| {
            ConfigError::Io {
                path: path.to_path_buf(),
                source,
            }
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
                text: braid_noise::files::excerpt(raw.trim()),
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

    /// The files this configuration names (noise traces, an XML topology)
    /// read from `dir` instead of the working directory: what a process
    /// started in `dir` will open.
    pub fn with_files_from(&self, dir: &Path) -> Config {
        let mut cfg = self.clone();
        for trace in cfg.noise_cores.iter_mut().filter_map(|c| c.trace.as_mut()) {
            *trace = dir.join(&*trace);
        }
        if let crate::topology::SimTopology::Xml { xml } = &mut cfg.sim_topology {
            *xml = dir.join(&*xml);
        }
        cfg.workload = cfg.workload.with_file_from(dir);
        cfg.lb_strategy = cfg.lb_strategy.with_file_from(dir);
        cfg.balancer = cfg.balancer.with_file_from(dir);
        cfg.lb_model = cfg.lb_model.as_ref().map(|m| dir.join(m));
        cfg
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
            text: braid_noise::files::excerpt(text),
        })?;
        self.set(key, value, origin)
    }

    /// Sets mode, staleness, subdomains and balancing from a paper label.
    pub fn apply_variant(&mut self, label: &str) -> Result<(), ConfigError> {
        let v = Variant::parse(label)?;
        self.mode = v.mode();
        self.staleness = v.staleness();
        self.subdomains = v.subdomains();
        self.balancer = BalancerKey::of(v.balancer().map_or(BalancerKind::None, |b| b.kind()));
        // A label names its whole balancer: an unbalanced one (or auto)
        // leaves no strategy.
        self.lb_strategy = LbStrategy::of(Strategy::PROGRESSIVE);
        if let Some(b) = v.balancer() {
            self.lb_interval = b.interval;
            if let Pick::One(n) = b.pick {
                self.lb_strategy = LbStrategy::of(n.strategy);
                if let Scope::Hybrid { period } = n.scope {
                    self.hybrid_period = period;
                }
            }
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
        match self.mode {
            Mode::Sync => match self.pick() {
                None => Variant::Sync,
                Some(pick) => Variant::Bulk {
                    subdomains: self.subdomains,
                    balancer: LabelBalancer {
                        pick,
                        interval: self.lb_interval,
                    },
                },
            },
            Mode::Ssync => Variant::Ssync {
                staleness: self.staleness,
            },
            Mode::Async => Variant::Async {
                subdomains: self.subdomains,
                balancer: self.pick().map(|pick| LabelBalancer {
                    pick,
                    interval: self.lb_interval,
                }),
            },
        }
    }

    /// The configured balancer, if any: one strategy over a scope, or auto.
    pub fn pick(&self) -> Option<Pick> {
        match self.balancer.kind {
            BalancerKind::None => None,
            BalancerKind::Auto => Some(Pick::Auto),
            BalancerKind::Learned => Some(Pick::Learned),
            _ => self.scope().map(|scope| {
                Pick::One(Named {
                    strategy: self.lb_strategy.kind,
                    scope,
                })
            }),
        }
    }

    /// The scope of `balancer` (none for none and auto).
    pub fn scope(&self) -> Option<Scope> {
        match self.balancer.kind {
            BalancerKind::None | BalancerKind::Auto | BalancerKind::Learned => None,
            BalancerKind::Split => Some(Scope::Split),
            BalancerKind::Joint => Some(Scope::Joint),
            BalancerKind::Hybrid => Some(Scope::Hybrid {
                period: self.hybrid_period,
            }),
        }
    }
}

/// "did you mean" when a known key is one slip away, else every key.
fn unknown_key_hint(key: &str) -> String {
    match crate::suggest::closest(key, KEYS.iter().map(|k| k.name)) {
        Some(k) => format!("; did you mean `{k}`? (`braid config` lists every key)"),
        None => format!(
            " (known keys: {})",
            KEYS.iter().map(|k| k.name).collect::<Vec<_>>().join(", ")
        ),
    }
}

fn split_pair(text: &str) -> Option<(&str, &str)> {
    let (k, v) = text.split_once('=')?;
    let (k, v) = (k.trim(), v.trim());
    (!k.is_empty() && !v.is_empty()).then_some((k, v))
}

#[cfg(test)]
mod tests;
