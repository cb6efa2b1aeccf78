//! Parsers for single values: each checks its bounds and names its key
//! (and, for a file, the line) in the error.

use std::path::PathBuf;

use super::{AutoOr, ConfigError, NoiseCore, Origin};
use crate::choice::{Choice, WithFile};
use crate::engine::{Jitter, Slow, Stall};
use crate::limits::*;
use crate::policy::{Named, Strategy};
use crate::topology::{SimTopology, SyntheticTopology};
use crate::variant::Interval;
use crate::workload::WorkloadSpec;

/// Parses one key's value, producing errors that name the key.
pub(super) struct Parser<'a> {
    key: &'static str,
    value: &'a str,
    origin: Origin,
}

impl<'a> Parser<'a> {
    pub(super) fn new(key: &'static str, value: &'a str, origin: Origin) -> Self {
        Parser { key, value, origin }
    }
}

impl Parser<'_> {
    fn bad(&self, expected: impl Into<String>) -> ConfigError {
        // Long values (a pasted file, say) are cut in the message.
        let mut value: String = self.value.chars().take(80).collect();
        if value.len() < self.value.len() {
            value.push_str("...");
        }
        ConfigError::BadValue {
            origin: self.origin.clone(),
            key: self.key,
            value,
            expected: expected.into(),
        }
    }

    pub(super) fn whole(&self) -> Result<u64, ConfigError> {
        self.value
            .parse()
            .map_err(|_| self.bad("a whole number >= 0"))
    }

    /// A whole number in `lo..=hi`.
    pub(super) fn within(&self, lo: u64, hi: u64) -> Result<u64, ConfigError> {
        self.value
            .parse()
            .ok()
            .filter(|n: &u64| (lo..=hi).contains(n))
            .ok_or_else(|| self.bad(format!("a whole number from {lo} to {hi}")))
    }

    pub(super) fn positive(&self) -> Result<usize, ConfigError> {
        self.value
            .parse()
            .ok()
            .filter(|&n: &usize| n > 0)
            .ok_or_else(|| self.bad("a whole number >= 1"))
    }

    /// A count of things braid allocates: `1..=max`.
    pub(super) fn count(&self, max: usize) -> Result<usize, ConfigError> {
        self.within(1, max as u64).map(|n| n as usize)
    }

    /// A finite number in `0..=max`; `unit` names what it counts.
    pub(super) fn number(&self, unit: &str, max: f64) -> Result<f64, ConfigError> {
        self.number_noted(unit, max, "")
    }

    pub(super) fn seconds(&self, what: &str) -> Result<f64, ConfigError> {
        self.number_noted("seconds", MAX_SECONDS, what)
    }

    /// A finite number in `0..=max`; the message ends with `note`.
    pub(super) fn number_noted(
        &self,
        unit: &str,
        max: f64,
        note: &str,
    ) -> Result<f64, ConfigError> {
        self.value
            .parse()
            .ok()
            .filter(|f: &f64| (0.0..=max).contains(f))
            .ok_or_else(|| self.bad(format!("{unit} from 0 to {max:e}{note}")))
    }

    /// Seconds between balancer calls, `auto` or `degradation`.
    pub(super) fn interval(&self) -> Result<Interval, ConfigError> {
        if self.value == "degradation" {
            return Ok(Interval::Degradation);
        }
        match self.auto_or(|p| p.seconds(" (or auto, or degradation)"))? {
            AutoOr::Auto => Ok(Interval::Auto),
            AutoOr::Value(s) => Ok(Interval::Seconds(s)),
        }
    }

    pub(super) fn auto_or<T>(
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
    pub(super) fn core_list(&self) -> Result<Vec<usize>, ConfigError> {
        let bad = || {
            self.bad(format!(
                "auto or a list of CPU ids below {MAX_CPUS} like 0,2,4-7"
            ))
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
            return Err(self.bad("a list without repeated cores"));
        }
        Ok(cores)
    }

    /// `none` or `THREAD@AFTER:SECONDS`
    pub(super) fn stall(&self) -> Result<Option<Stall>, ConfigError> {
        if self.value == "none" {
            return Ok(None);
        }
        let bad = || {
            self.bad(format!(
                "none or THREAD@UPDATES:SECONDS (SECONDS up to {MAX_SECONDS:e}), e.g. 0@100:2.5"
            ))
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
    pub(super) fn cost(&self) -> Result<f64, ConfigError> {
        self.number("nanoseconds", MAX_COST_NS)
    }

    /// `pack:2 core:18` (hwloc's synthetic syntax)
    /// hwloc's synthetic syntax, or `xml:FILE` (with the `hwloc` feature).
    pub(super) fn sim_topology(&self) -> Result<SimTopology, ConfigError> {
        if let Some(file) = self.value.strip_prefix("xml:") {
            if !cfg!(feature = "hwloc") {
                return Err(self.bad(
                    "a synthetic description: xml:FILE needs braid built with --features hwloc",
                ));
            }
            if file.trim().is_empty() {
                return Err(self.bad("xml:FILE, a file that `lstopo --of xml` wrote"));
            }
            return Ok(SimTopology::Xml {
                xml: PathBuf::from(file.trim()),
            });
        }
        SyntheticTopology::parse(self.value, MAX_SIM_CPUS)
            .map(SimTopology::Synthetic)
            .map_err(|why| {
                self.bad(format!(
                    "hwloc's synthetic syntax, like `pack:2 core:18 pu:1` or what `lstopo --of \
                     synthetic` prints, or xml:FILE with the hwloc feature ({why})"
                ))
            })
    }

    /// `uniform` or `CORE:FACTOR, ...`
    pub(super) fn speeds(&self) -> Result<Vec<(usize, f64)>, ConfigError> {
        if self.value == "uniform" {
            return Ok(Vec::new());
        }
        let bad = || {
            self.bad(format!(
                    "uniform, or CORE:FACTOR with CORE below {MAX_CPUS} and FACTOR from {:e} to {MAX_FACTOR:e}, e.g. 3:0.95, 7:1.05",
                    1.0 / MAX_FACTOR
                ),
            )
        };
        self.value
            .split(',')
            .map(|part| {
                let (c, f) = part.trim().split_once(':').ok_or_else(bad)?;
                let f: f64 = f.trim().parse().map_err(|_| bad())?;
                if !(1.0 / MAX_FACTOR..=MAX_FACTOR).contains(&f) {
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

    /// `1:0.19, 3:0.05`, `1, 3` (the default rhythm), `auto[:DUTY]` or
    /// `CORE:FILE` (a trace to replay: anything after the first `:` that is
    /// not a number).
    pub(super) fn noise_cores(&self) -> Result<Vec<NoiseCore>, ConfigError> {
        let bad = || {
            self.bad(
                "a list of CORE, CORE:DUTY or CORE:FILE (CORE a number or auto, DUTY in (0, 1), \
                 FILE a recorded trace), e.g. auto:0.19, 3:0.05",
            )
        };
        let mut cores: Vec<NoiseCore> = Vec::new();
        for part in self.value.split(',') {
            let (core, duty, trace) = match part.trim().split_once(':') {
                Some((c, level)) => match level.trim().parse::<f64>() {
                    Ok(d) if d > 0.0 && d < 1.0 => (c, Some(d), None),
                    Ok(d) if d > 1.0 && d < 100.0 => {
                        return Err(self.bad(format!(
                            "a duty is a fraction in (0, 1): {} for {d}%",
                            d / 100.0
                        )));
                    }
                    Ok(_) => return Err(bad()),
                    // `19%` is a duty written as a percentage, not a trace.
                    Err(_)
                        if level.trim().strip_suffix('%').is_some_and(|n| {
                            n.trim().parse::<f64>().is_ok_and(|d| d > 0.0 && d < 100.0)
                        }) =>
                    {
                        let n = level.trim().trim_end_matches('%').trim();
                        let d: f64 = n.parse().unwrap_or(0.0);
                        return Err(self.bad(format!(
                            "a duty is a fraction in (0, 1): {} for {n}%",
                            d / 100.0
                        )));
                    }
                    Err(_) if level.trim().is_empty() => return Err(bad()),
                    Err(_) => (c, None, Some(PathBuf::from(level.trim()))),
                },
                None => (part.trim(), None, None),
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
                return Err(self.bad("each core at most once"));
            }
            cores.push(NoiseCore { core, duty, trace });
        }
        Ok(cores)
    }

    /// `uniform`, `NAME(numbers)` or `map:FILE` (see [`WorkloadSpec`]).
    pub(super) fn workload(&self) -> Result<WorkloadSpec, ConfigError> {
        WorkloadSpec::parse(self.value)
            .map_err(|e| self.bad(format!("{} ({e})", crate::workload::forms())))
    }

    /// `none` or `THREAD:FACTOR`
    /// `none` or `SD:SECONDS[:CORE_SD]`, each SD from 0 to 1 and SECONDS
    /// from 1e-6 (a window far shorter than an update would cost a step per
    /// window).
    pub(super) fn jitter(&self) -> Result<Option<Jitter>, ConfigError> {
        if self.value == "none" {
            return Ok(None);
        }
        let bad = || {
            self.bad(format!(
                "none or SD:SECONDS[:CORE_SD] with each SD from 0 to 1 and SECONDS from 1e-6 \
                 to {MAX_SECONDS:e}, e.g. 0.05:0.001 or 0.05:0.001:0.02"
            ))
        };
        let parts: Vec<&str> = self.value.split(':').map(str::trim).collect();
        let number = |i: usize| -> Result<f64, ConfigError> {
            match parts.get(i) {
                Some(t) => t.parse().map_err(|_| bad()),
                None => Ok(0.0),
            }
        };
        if !(2..=3).contains(&parts.len()) {
            return Err(bad());
        }
        let (sd, every_s, core_sd) = (number(0)?, number(1)?, number(2)?);
        let share = 0.0..=1.0;
        if !(share.contains(&sd)
            && share.contains(&core_sd)
            && (1e-6..=MAX_SECONDS).contains(&every_s))
        {
            return Err(bad());
        }
        Ok(Some(Jitter {
            sd,
            every_s,
            core_sd,
        }))
    }

    pub(super) fn slow(&self) -> Result<Option<Slow>, ConfigError> {
        if self.value == "none" {
            return Ok(None);
        }
        let bad = || {
            self.bad(format!(
                "none or THREAD:FACTOR with FACTOR from 0 to {MAX_FACTOR:e}, e.g. 0:1.0"
            ))
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

impl Parser<'_> {
    /// One of the named options.
    pub(super) fn choice<T: Copy>(&self, options: &[(&str, T)]) -> Result<T, ConfigError> {
        options
            .iter()
            .find(|(name, _)| *name == self.value)
            .map(|&(_, v)| v)
            .ok_or_else(|| {
                let names: Vec<&str> = options.iter().map(|(n, _)| *n).collect();
                self.bad(format!("one of {}", names.join(", ")))
            })
    }

    /// `none`, or a file's path.
    pub(super) fn optional_path(&self) -> Result<Option<PathBuf>, ConfigError> {
        match self.value.trim() {
            "" => Err(self.bad("none or a file's path")),
            "none" => Ok(None),
            path => Ok(Some(PathBuf::from(path))),
        }
    }

    /// A name, or the one that carries a file with its file
    /// (`learned:MODEL.json`, `prescribed:DIR`; see [`WithFile`]).
    pub(super) fn with_file<K: Choice>(&self) -> Result<WithFile<K>, ConfigError> {
        self.value.parse().map_err(|e: String| self.bad(e))
    }

    /// A list of balancer names (`split, steal, greedy-split`), each once.
    pub(super) fn balancers(&self) -> Result<Vec<Named>, ConfigError> {
        let mut list: Vec<Named> = Vec::new();
        for name in self.value.split(',').map(str::trim) {
            let named: Named = name.parse().map_err(|()| {
                self.bad(format!(
                    "a list of balancer names: split, joint, hybrid, or a strategy ({}) \
                     alone or with -split or -hybrid; `{name}` is none of them",
                    Strategy::all()
                        .skip(1)
                        .map(|s| s.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?;
            if list.contains(&named) {
                return Err(self.bad(format!("each balancer at most once; `{name}` repeats")));
            }
            if named.strategy == Strategy::PRESCRIBED {
                return Err(self.bad(
                    "the strategies auto chooses from; prescribed owners are not chosen, \
                     they are applied (lb_strategy = prescribed:DIR with a balancer scope)",
                ));
            }
            list.push(named);
        }
        Ok(list)
    }

    pub(super) fn boolean(&self) -> Result<bool, ConfigError> {
        self.choice(&[("true", true), ("false", false)])
    }
}
