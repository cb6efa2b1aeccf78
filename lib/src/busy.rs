//! How busy the machine was around a real run, from Linux's `/proc`: the
//! load average when it started and, over the run, the share of each used
//! CPU that other processes took and that a hypervisor stole. A shared
//! machine makes timings slower and noisier; these say when that happened.
//!
//! Other processes' share of a CPU is the time braid's worker pinned there
//! was ready to run but waited while something else ran on its core
//! (Linux's per-thread `schedstat`, in nanoseconds), over the worker's
//! life. That is whatever else ran there: another process, braid's own
//! parasite on a noisy core (`noise`: the share then holds the noise asked
//! for), or, oversubscribed, braid's other threads on the same CPU. Steal
//! comes from `/proc/stat`, in clock ticks (10 ms on Linux).

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::engine::CoreTime;

/// A share over which a CPU counts as busy with other work (5%).
pub(crate) const BUSY_SHARE: f64 = 0.05;
/// `/proc/stat` is a few kB per hundred CPUs; more is not it.
const MAX_STAT_BYTES: u64 = 16 << 20;

/// How busy the machine was during one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineLoad {
    /// When the run started, seconds since 1970 (UTC).
    pub started_unix_s: f64,
    /// The 1-minute load average when it started (null if unreadable).
    pub load_avg_1m: Option<f64>,
    /// Each logical CPU a worker ran on, in order of CPU id.
    pub cpus: Vec<CpuLoad>,
}

/// One CPU over a run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CpuLoad {
    /// The logical CPU.
    pub cpu: usize,
    /// Share of its worker's time lost waiting while something else ran
    /// on it (0 to 1); null where the kernel does not say.
    pub lost_share: Option<f64>,
    /// Share of its time a hypervisor stole (0 to 1).
    pub steal_share: f64,
}

impl MachineLoad {
    /// Whether any used CPU but those in `noisy` (where braid's parasites
    /// ran on purpose) lost more than [`BUSY_SHARE`] to other work or to
    /// steal.
    ///
    /// ```
    /// use braid::{CpuLoad, MachineLoad};
    /// let cpu = |cpu, lost| CpuLoad { cpu, lost_share: Some(lost), steal_share: 0.0 };
    /// let m = MachineLoad { started_unix_s: 0.0, load_avg_1m: None, cpus: vec![cpu(0, 0.3), cpu(1, 0.01)] };
    /// assert!(m.busy(&[]));
    /// assert!(!m.busy(&[0])); // the parasite's own core
    /// ```
    pub fn busy(&self, noisy: &[usize]) -> bool {
        self.cpus
            .iter()
            .filter(|c| !noisy.contains(&c.cpu))
            .any(|c| c.lost_share.unwrap_or(0.0) > BUSY_SHARE || c.steal_share > BUSY_SHARE)
    }

    /// The largest share lost on a CPU not in `noisy`.
    pub fn most_lost(&self, noisy: &[usize]) -> f64 {
        self.cpus
            .iter()
            .filter(|c| !noisy.contains(&c.cpu))
            .filter_map(|c| c.lost_share)
            .fold(0.0, f64::max)
    }

    /// The mean steal share over the used CPUs.
    pub fn steal(&self) -> f64 {
        let n = self.cpus.len().max(1) as f64;
        self.cpus.iter().map(|c| c.steal_share).sum::<f64>() / n
    }
}

/// One CPU's clock ticks from `/proc/stat`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Ticks {
    /// user + nice + system + irq + softirq.
    busy: u64,
    steal: u64,
    /// Every field but guest time (already in user).
    total: u64,
}

/// The machine's state at the start of a run.
#[derive(Debug, Clone)]
pub(crate) struct Before {
    started: SystemTime,
    load_avg_1m: Option<f64>,
    ticks: BTreeMap<usize, Ticks>,
}

impl Before {
    /// Now. Nothing here fails a run: an unreadable `/proc` gives a load
    /// with no CPUs.
    pub(crate) fn now() -> Before {
        Before {
            started: SystemTime::now(),
            load_avg_1m: load_avg_1m(),
            ticks: cpu_ticks(),
        }
    }

    /// The load over the run since `self`, for workers pinned to `cores`
    /// (one per thread) with their `times` on those cores.
    pub(crate) fn until_now(&self, cores: &[usize], times: &[CoreTime]) -> MachineLoad {
        let after = cpu_ticks();
        let mut per_cpu: BTreeMap<usize, (f64, Option<f64>)> = BTreeMap::new();
        for (&cpu, time) in cores.iter().zip(times) {
            let (life, waited) = per_cpu.entry(cpu).or_insert((0.0, Some(0.0)));
            *life += time.life_s;
            *waited = waited.zip(time.waited_s).map(|(a, b)| a + b);
        }
        let cpus = per_cpu
            .iter()
            .filter_map(|(&cpu, &(life, waited))| {
                let steal = match (self.ticks.get(&cpu), after.get(&cpu)) {
                    (Some(b), Some(a)) if a.total > b.total => {
                        a.steal.saturating_sub(b.steal) as f64 / (a.total - b.total) as f64
                    }
                    _ => 0.0,
                };
                (life > 0.0).then(|| CpuLoad {
                    cpu,
                    lost_share: waited.map(|w| (w / life).clamp(0.0, 1.0)),
                    steal_share: steal.clamp(0.0, 1.0),
                })
            })
            .collect();
        MachineLoad {
            started_unix_s: self
                .started
                .duration_since(UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
            load_avg_1m: self.load_avg_1m,
            cpus,
        }
    }
}

/// What other work held each CPU over the last `window`, before anything
/// of braid's runs: `(cpu, busy share)` for CPUs busier than
/// [`BUSY_SHARE`], and the load average.
pub fn busy_now(window: std::time::Duration) -> (Vec<(usize, f64)>, Option<f64>) {
    let before = cpu_ticks();
    std::thread::sleep(window);
    let after = cpu_ticks();
    let busy = after
        .iter()
        .filter_map(|(&cpu, a)| {
            let b = before.get(&cpu)?;
            let total = a.total.saturating_sub(b.total) as f64;
            let share = a.busy.saturating_sub(b.busy) as f64 / total;
            (total > 0.0 && share > BUSY_SHARE).then_some((cpu, share))
        })
        .collect();
    (busy, load_avg_1m())
}

fn load_avg_1m() -> Option<f64> {
    let text = braid_noise::files::read_text(std::path::Path::new("/proc/loadavg"), 4096).ok()?;
    text.split_whitespace().next()?.parse().ok()
}

fn cpu_ticks() -> BTreeMap<usize, Ticks> {
    braid_noise::files::read_text(std::path::Path::new("/proc/stat"), MAX_STAT_BYTES)
        .map(|t| parse_stat(&t))
        .unwrap_or_default()
}

/// The `cpuN ...` lines of `/proc/stat`.
fn parse_stat(text: &str) -> BTreeMap<usize, Ticks> {
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let cpu = words.next()?.strip_prefix("cpu")?.parse().ok()?;
            let f: Vec<u64> = words.map_while(|w| w.parse().ok()).collect();
            let at = |i: usize| f.get(i).copied().unwrap_or(0);
            // user nice system idle iowait irq softirq steal guest guest_nice
            let busy = at(0) + at(1) + at(2) + at(5) + at(6);
            let steal = at(7);
            Some((
                cpu,
                Ticks {
                    busy,
                    steal,
                    total: busy + at(3) + at(4) + steal,
                },
            ))
        })
        .collect()
}

/// `2026-11-24T12:03:05Z` for seconds since 1970 (UTC), to the second.
pub fn iso8601(unix_s: f64) -> String {
    let secs = unix_s.max(0.0) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  10 0 10 100 0 0 0 0 0 0\n\
                        cpu0 50 5 20 400 10 1 4 10 7 0\n\
                        cpu1 1 0 1 98 0 0 0 0 0 0\n\
                        intr 123\n";

    #[test]
    fn stat_lines_give_each_cpus_busy_steal_and_total_ticks() {
        let t = parse_stat(STAT);
        assert_eq!(t.len(), 2, "the `cpu` summary line is not a CPU");
        assert_eq!(
            t[&0],
            Ticks {
                busy: 80,
                steal: 10,
                total: 500
            }
        );
        assert_eq!(
            t[&1],
            Ticks {
                busy: 2,
                steal: 0,
                total: 100
            }
        );
    }

    #[test]
    fn a_cpus_share_lost_is_its_workers_wait_over_their_life() {
        let before = Before {
            started: UNIX_EPOCH,
            load_avg_1m: Some(0.5),
            ticks: BTreeMap::new(),
        };
        let time = |life_s, waited: Option<f64>| CoreTime {
            life_s,
            waited_s: waited,
        };
        // Two threads oversubscribed on CPU 3, one alone on CPU 1.
        let m = before.until_now(
            &[3, 1, 3],
            &[
                time(2.0, Some(0.5)),
                time(1.0, Some(0.1)),
                time(2.0, Some(1.5)),
            ],
        );
        assert_eq!(m.cpus.iter().map(|c| c.cpu).collect::<Vec<_>>(), [1, 3]);
        assert!((m.cpus[0].lost_share.unwrap() - 0.1).abs() < 1e-12);
        assert!((m.cpus[1].lost_share.unwrap() - 0.5).abs() < 1e-12);
        // A thread whose wait is unknown makes its CPU's share unknown.
        let m = before.until_now(&[0, 0], &[time(1.0, Some(0.2)), time(1.0, None)]);
        assert_eq!(m.cpus[0].lost_share, None);
        assert!(!m.busy(&[]) && m.most_lost(&[]) == 0.0);
    }
}
