//! Where a sample came from: enough to tell, months later, which build on
//! which machine with which settings produced a number.

use serde::{Deserialize, Serialize};
use serde_json::value::{RawValue, to_raw_value};

use crate::config::Config;
use crate::topology::Topology;

/// The configuration, machine and calibration are kept as the JSON text
/// they were written as: nothing reads them back, and parsed into values
/// they took ten times their text (a plot of 30,000 records 460 MB).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Provenance {
    pub braid_version: String,
    /// `git describe`-style revision of the source braid was built from,
    /// `-dirty` if it had uncommitted changes; "unknown" outside a checkout.
    pub git_revision: String,
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
    /// `reported`: whether the record holds the sample's report (which then
    /// holds its configuration and machine).
    pub(crate) fn new(
        config: &Config,
        topology: &Topology,
        noise_calibration: Option<&braid_noise::Calibration>,
        reported: bool,
    ) -> Provenance {
        Provenance {
            braid_version: env!("CARGO_PKG_VERSION").to_string(),
            git_revision: env!("BRAID_GIT_REVISION").to_string(),
            cpu_model: cpu_model(),
            hostname: std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "unknown".into()),
            config: (!reported).then(|| to_raw_value(config).expect("a config serializes")),
            topology: (!reported).then(|| to_raw_value(topology).expect("a topology serializes")),
            noise_calibration: noise_calibration
                .map(|c| to_raw_value(c).expect("a calibration serializes")),
        }
    }

    #[cfg(test)]
    pub(crate) fn for_tests() -> Provenance {
        Provenance::new(
            &Config::default(),
            &Topology::detect().unwrap(),
            None,
            false,
        )
    }
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
