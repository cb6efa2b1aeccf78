//! How much memory a plan's run allocates, and the check against what the
//! machine (or `memory_limit`) allows, made before anything is allocated.

use super::{Plan, PlanError};
use crate::config::{AutoOr, Config};
use crate::engine::Numbers;

/// A number of bytes, printed in MiB or GiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Bytes(pub u64);

impl std::fmt::Display for Bytes {
    /// ```
    /// use braid::Bytes;
    /// assert_eq!(Bytes(3 << 29).to_string(), "1.5 GiB");
    /// assert_eq!(Bytes(5 << 20).to_string(), "5.0 MiB");
    /// ```
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let b = self.0 as f64;
        if b >= (1u64 << 30) as f64 {
            write!(f, "{:.1} GiB", b / (1u64 << 30) as f64)
        } else {
            write!(f, "{:.1} MiB", b / (1u64 << 20) as f64)
        }
    }
}

impl Plan {
    /// Bytes a run of this plan allocates, roughly, from above: per
    /// subdomain its two padded buffers, published edges and bookkeeping;
    /// the initial, assembled and residual grids; and the trace, when a time
    /// limit bounds it.
    pub fn memory_needed(&self, numbers: Numbers) -> Bytes {
        let p = &self.problem;
        let subs = p.subs.len() as u128;
        let mut bytes = subs * 1024; // locks, counters, geometry, trace rows
        if numbers == Numbers::Held {
            let cells: u128 = p
                .subs
                .iter()
                // Rows padded to whole cache lines, plus the aligning offset.
                .map(|g| (g.height as u128 + 2) * (g.width as u128 + 2).div_ceil(8) * 8 + 8)
                .sum();
            let edges: u128 = p
                .subs
                .iter()
                .map(|g| 2 * (g.height + g.width) as u128)
                .sum();
            let grid = (p.height as u128 + 2) * (p.width as u128 + 2);
            bytes += 8 * (2 * cells + 2 * edges + 3 * grid);
        }
        let (limit, every) = (self.config.time_limit, self.config.trace_interval);
        if limit > 0.0 && every > 0.0 {
            let samples = (limit / every).ceil().min(1e30) as u128 + 1;
            bytes += samples * subs * 16;
        }
        Bytes(bytes.min(u64::MAX as u128) as u64)
    }

    /// Refuses a run that would need more memory than `memory_limit` (or,
    /// for `auto`, than the machine has available now).
    pub fn check_memory(&self, numbers: Numbers) -> Result<(), PlanError> {
        within_limit(&self.config, self.memory_needed(numbers))
    }
}

/// What a run of `subs` subdomains needs before anything of it is built,
/// at least: their geometry and the 1 KiB each [`Plan::memory_needed`]
/// counts. Checked before the geometry is built, which for millions of
/// subdomains is itself gigabytes.
pub(super) fn check_subdomains(config: &Config, subs: u128) -> Result<(), PlanError> {
    let each = 1024 + std::mem::size_of::<crate::problem::SubdomainGeom>() as u128;
    within_limit(config, Bytes((subs * each).min(u64::MAX as u128) as u64))
}

/// `needed` against `memory_limit`, or what the machine has available now
/// (`auto`; nothing is refused where that cannot be read).
fn within_limit(config: &Config, needed: Bytes) -> Result<(), PlanError> {
    let (limit, which) = match config.memory_limit {
        AutoOr::Value(gib) => (
            Bytes((gib * (1u64 << 30) as f64).min(u64::MAX as f64) as u64),
            "set by memory_limit",
        ),
        AutoOr::Auto => match available_memory() {
            Some(b) => (b, "this machine has available"),
            None => return Ok(()), // cannot tell: do not guess
        },
    };
    if needed > limit {
        return Err(PlanError::Memory {
            needed,
            limit,
            which,
        });
    }
    Ok(())
}

/// `MemAvailable` from /proc/meminfo (Linux); `None` elsewhere. Read at
/// most once a second: a suite plans each of its samples before the first
/// runs, and 10^5 reads of /proc/meminfo took seconds.
pub(super) fn available_memory() -> Option<Bytes> {
    static LAST: std::sync::Mutex<Option<(std::time::Instant, Option<Bytes>)>> =
        std::sync::Mutex::new(None);
    let mut last = LAST
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    match *last {
        Some((at, b)) if at.elapsed() < std::time::Duration::from_secs(1) => b,
        _ => {
            let b = read_available();
            *last = Some((std::time::Instant::now(), b));
            b
        }
    }
}

fn read_available() -> Option<Bytes> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(Bytes(kib.saturating_mul(1024)))
}
