//! Where a sample came from: enough to tell, months later, which build on
//! which machine with which settings produced a number.

use serde::{Deserialize, Serialize};
use serde_json::value::{RawValue, to_raw_value};

use braid::Build;
use braid::Config;
use braid::Topology;

/// The configuration, machine and calibration are kept as the JSON text
/// they were written as: nothing reads them back, and parsed into values
/// they took ten times their text (a plot of 30,000 records 460 MB).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(from = "Written")]
pub(crate) struct Provenance {
    /// The braid that ran the sample: its version, commit and whether the
    /// tree was clean.
    pub build: Build,
    /// When the sample finished (UTC, ISO 8601).
    pub date: String,
    pub cpu_model: String,
    pub hostname: String,
    /// The effective configuration of the sample (suite base, variant and
    /// overrides applied); only when there is no report, whose `config`
    /// holds it (a record stores nothing twice).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<Box<RawValue>>,
    /// The machine the engine ran on (synthetic for `sim`); only when there
    /// is no report, whose `topology` holds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<Box<RawValue>>,
    /// The noise loop's calibration on this machine, measured once per
    /// suite invocation (real engine), or null.
    pub noise_calibration: Option<Box<RawValue>>,
}

impl Provenance {
    /// `unreported`: the configuration and machine of a sample whose record
    /// holds no report (which would hold them), to keep here instead.
    pub(crate) fn new(
        unreported: Option<(&Config, &Topology)>,
        noise_calibration: Option<&braid_noise::Calibration>,
    ) -> Provenance {
        Provenance {
            build: Build::this(),
            date: now_iso8601(),
            cpu_model: cpu_model(),
            hostname: std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "unknown".into()),
            config: unreported.map(|(c, _)| to_raw_value(c).expect("a config serializes")),
            topology: unreported.map(|(_, t)| to_raw_value(t).expect("a topology serializes")),
            noise_calibration: noise_calibration
                .map(|c| to_raw_value(c).expect("a calibration serializes")),
        }
    }

    #[cfg(test)]
    pub(crate) fn for_tests() -> Provenance {
        Provenance::new(
            Some((&Config::default(), &Topology::detect().unwrap())),
            None,
        )
    }
}

/// What a record's provenance is read from: today's fields, or the
/// `braid_version` and `git_revision` that records written before
/// 2026-12-01 held instead of `build` (and no date).
#[derive(Deserialize)]
struct Written {
    #[serde(default)]
    build: Option<Build>,
    #[serde(default)]
    braid_version: Option<String>,
    #[serde(default)]
    git_revision: Option<String>,
    #[serde(default)]
    date: String,
    cpu_model: String,
    hostname: String,
    #[serde(default)]
    config: Option<Box<RawValue>>,
    #[serde(default)]
    topology: Option<Box<RawValue>>,
    #[serde(default)]
    noise_calibration: Option<Box<RawValue>>,
}

impl From<Written> for Provenance {
    fn from(w: Written) -> Provenance {
        let build = w.build.unwrap_or_else(|| match &w.git_revision {
            Some(rev) => Build::from_revision(w.braid_version.as_deref().unwrap_or("unknown"), rev),
            None => Build::unknown(),
        });
        Provenance {
            build,
            date: w.date,
            cpu_model: w.cpu_model,
            hostname: w.hostname,
            config: w.config,
            topology: w.topology,
            noise_calibration: w.noise_calibration,
        }
    }
}

/// Now, in UTC, as ISO 8601 (to the second).
pub(crate) fn now_iso8601() -> String {
    braid::iso8601(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64()),
    )
}

pub(crate) fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}
