//! The run report: every metric of a run (docs/architecture.md) as one
//! serialisable value,
//! and the human summary printed after a run.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::busy::MachineLoad;
use crate::config::Config;
use crate::engine::{Clock, LbStats, Outcome, RanksInfo, StopReason, TraceSample};
use crate::forecast::{Forecast, WorkloadForecast};
use crate::noise::NoiseReport;
use crate::plan::Plan;
use crate::topology::Topology;
use crate::variant::Mode;

/// The grid's shape.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GridInfo {
    /// Cells per side of each domain.
    pub domain_size: usize,
    /// Rows of domains.
    pub rows: usize,
    /// Columns of domains.
    pub cols: usize,
    /// Interior rows of the global grid.
    pub height: usize,
    /// Interior columns of the global grid.
    pub width: usize,
}

/// One run, as `--json` writes it and suites and plots read it back: what
/// ran, where, and everything it measured. docs/running.md lists the
/// fields a user reads most.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    /// The braid that ran it: version, commit, and whether its tree was
    /// clean (a report written before builds were recorded reads as
    /// unknown).
    #[serde(default)]
    pub build: crate::build::Build,
    /// `wall` for the real runtime, `virtual` for the simulator.
    pub clock: Clock,
    /// The paper label.
    pub variant: String,
    /// sync, ssync or async.
    pub mode: Mode,
    /// ssync's bound (0 otherwise).
    pub staleness: u64,
    /// Subdomains per domain.
    pub subdomains: usize,
    /// Threads (across ranks: all of them).
    pub threads: usize,
    /// Sockets of the selected topology.
    pub sockets: usize,
    /// Core of each thread.
    pub cores: Vec<usize>,
    /// Socket index of each thread.
    pub thread_sockets: Vec<usize>,
    /// Whether every thread was pinned (false in the simulator).
    pub pinned: bool,
    /// The machine as braid saw it.
    pub topology: Topology,
    /// The grid's shape.
    pub grid: GridInfo,
    /// Seconds the run took (virtual in the simulator).
    pub elapsed_s: f64,
    /// Why it stopped.
    pub stop_reason: StopReason,
    /// Each subdomain's updates.
    pub subdomain_updates: Vec<u64>,
    /// Seconds spent updating each subdomain over the run (virtual in the
    /// simulator): its object load. Null unless the run measured loads (a
    /// workload that is not uniform, or a balancer that reads loads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subdomain_busy_s: Option<Vec<f64>>,
    /// Each thread's subdomain updates.
    pub thread_updates: Vec<u64>,
    /// Each subdomain's final owner.
    pub owners: Vec<usize>,
    /// Most minus fewest subdomain updates.
    pub spread: u64,
    /// The least updated subdomain's count over the mean count: how far the
    /// slowest part of the grid fell behind (1 = not at all).
    pub slowest_progress: f64,
    /// What `slowest_progress` would be without balancing, from the noise
    /// alone: the noisiest worker core's `1 - duty` over the threads' mean
    /// speed. Null without noise on a worker core.
    pub slowest_progress_unbalanced: Option<f64>,
    /// Share of the threads' time spent in balancer calls; null without a
    /// balancer.
    pub lb_time_share: Option<f64>,
    /// Domain-equivalent iterations per thread per second.
    pub iteration_rate: f64,
    /// Cell updates per second, all threads together.
    pub cell_updates_per_s: f64,
    /// Seconds to the residual target; null unless converged.
    pub time_to_solution_s: Option<f64>,
    /// `||r|| / ||r0||` recomputed from the final grid; null when a
    /// simulation only counted.
    pub residual: Option<f64>,
    /// Whether the verified residual met the target.
    pub converged: bool,
    /// Convergence estimates the recomputed residual refuted.
    pub refuted_estimates: u32,
    /// Subdomains whose cells followed them to another socket (see
    /// `Outcome::rehomes`).
    #[serde(default)]
    pub rehomes: u64,
    /// The largest lag of a subdomain over a neighbour seen at an update.
    pub max_staleness_seen: u64,
    /// What the balancer did; null without one.
    pub lb: Option<LbStats>,
    /// Samples of every subdomain's count and owner over time (the braid
    /// plot), when `trace_interval` > 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<Vec<TraceSample>>,
    /// The noise actually applied, as the parasites measured it; null
    /// without noise.
    pub noise: Option<NoiseReport>,
    /// What the slowest-mode model predicts each noisy worker core costs
    /// ([`crate::forecast`]); empty without noise on a worker's core.
    #[serde(default)]
    pub model: Vec<Forecast>,
    /// What the model predicts the workload costs, over the run's progress
    /// ([`crate::forecast::workload`]); null for a uniform workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_model: Option<WorkloadForecast>,
    /// The report whose measured speeds a simulation replayed
    /// (`--replay-speeds`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speeds_from: Option<PathBuf>,
    /// A run across MPI ranks: hosts, each rank's cores, exchanges and
    /// bytes between ranks (`threads` and the per-thread and per-subdomain
    /// lists are then the whole run's, rank by rank).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks: Option<RanksInfo>,
    /// How busy the machine was during a real run: when it started, the
    /// load average, and each used CPU's share lost to other processes and
    /// to steal (null in the simulator and across ranks).
    #[serde(default)]
    pub machine: Option<MachineLoad>,
    /// The effective configuration (`threads` resolved).
    pub config: Config,
}

/// The exit status of a run or simulation that stopped (at
/// `max_iterations` or `time_limit`) before reaching its `tolerance`
/// ([`Report::missed_tolerance`]): its report is written, but a script
/// must not take it for a solution.
pub const EXIT_MISSED: u8 = 3;

/// The model's forecast for every parasite that shares a worker's core,
/// at the duty it was asked for (or, without one, the one it measured).
fn forecasts(plan: &Plan, noise: Option<&NoiseReport>) -> Vec<Forecast> {
    let Some(noise) = noise else {
        return Vec::new();
    };
    noise
        .parasites
        .iter()
        .filter_map(|a| {
            let thread = plan.placement.cores.iter().position(|&c| c == a.core)?;
            let duty = a.requested_duty.unwrap_or(a.measured_duty);
            (duty > 0.0 && duty < 1.0)
                .then(|| crate::forecast::noisy_core(&plan.problem, thread, duty))
        })
        .collect()
}

/// Without a balancer a noisy thread's subdomains advance at `1 - d` of an
/// unhindered thread's rate, and the mean at `1 - (sum of d) / T`.
fn unbalanced_progress(model: &[Forecast], threads: usize) -> Option<f64> {
    let worst = model
        .iter()
        .map(|m| m.duty)
        .fold(None, |a: Option<f64>, d| Some(a.map_or(d, |a| a.max(d))))?;
    let lost: f64 = model.iter().map(|m| m.duty).sum();
    Some((1.0 - worst) / (1.0 - lost / threads as f64))
}

impl Report {
    /// Whether the run had a `tolerance` and stopped before reaching it.
    pub fn missed_tolerance(&self) -> bool {
        self.config.tolerance > 0.0 && !self.converged
    }

    /// The report of `out`, a run of `plan`, with the noise it measured.
    pub fn new(plan: &Plan, out: &Outcome, noise: Option<NoiseReport>) -> Report {
        let p = &plan.problem;
        let total: u64 = out.subdomain_updates.iter().sum();
        let cells: u64 = p
            .subs
            .iter()
            .zip(&out.subdomain_updates)
            .map(|(g, &n)| g.cells() as u64 * n)
            .sum();
        let max = out.subdomain_updates.iter().copied().max().unwrap_or(0);
        let min = out.subdomain_updates.iter().copied().min().unwrap_or(0);
        let secs = out.elapsed_s.max(f64::MIN_POSITIVE);
        let model = forecasts(plan, noise.as_ref());
        Report {
            build: crate::build::Build::this(),
            clock: out.clock,
            variant: plan.config.variant().to_string(),
            mode: plan.config.mode,
            staleness: plan.config.staleness,
            subdomains: p.subdomains_per_domain(),
            threads: p.threads,
            sockets: plan.topology.sockets.len(),
            cores: plan.placement.cores.clone(),
            thread_sockets: plan.placement.sockets.clone(),
            pinned: out.pinned,
            topology: plan.topology.clone(),
            grid: GridInfo {
                domain_size: p.domain_size,
                rows: p.rows,
                cols: p.cols,
                height: p.height,
                width: p.width,
            },
            elapsed_s: out.elapsed_s,
            stop_reason: out.stop,
            subdomain_updates: out.subdomain_updates.clone(),
            subdomain_busy_s: out.subdomain_busy_s.clone(),
            thread_updates: out.thread_updates.clone(),
            owners: out.owners.clone(),
            spread: max - min,
            slowest_progress: if total > 0 {
                min as f64 * out.subdomain_updates.len() as f64 / total as f64
            } else {
                1.0
            },
            lb_time_share: out
                .lb
                .as_ref()
                .map(|lb| lb.time_s / (secs * p.threads as f64)),
            iteration_rate: total as f64
                / p.subdomains_per_domain() as f64
                / p.threads as f64
                / secs,
            cell_updates_per_s: cells as f64 / secs,
            time_to_solution_s: out.time_to_solution_s,
            residual: out.residual,
            converged: out.converged,
            refuted_estimates: out.refuted_estimates,
            rehomes: out.rehomes,
            max_staleness_seen: out.max_staleness_seen,
            lb: out.lb.clone(),
            trace: plan.settings.trace_interval.map(|_| out.trace.clone()),
            slowest_progress_unbalanced: unbalanced_progress(&model, p.threads),
            model,
            workload_model: (!plan.settings.workload.is_uniform()).then(|| {
                let progress = total as f64 / out.subdomain_updates.len().max(1) as f64;
                crate::forecast::workload(p, &plan.settings.workload, progress)
            }),
            noise,
            speeds_from: plan
                .sim()
                .and_then(|s| s.replayed.as_ref())
                .map(|m| m.source.clone()),
            ranks: out.ranks.clone(),
            machine: None,
            config: plan.config.clone(),
        }
        .listed(plan.config.report_lists)
    }

    /// The report without its lists per thread and per subdomain (and the
    /// machine's sockets) unless `lists`: `report_lists = false`.
    fn listed(mut self, lists: bool) -> Report {
        if !lists {
            self.cores = Vec::new();
            self.thread_sockets = Vec::new();
            self.topology.sockets = Vec::new();
            self.subdomain_updates = Vec::new();
            self.subdomain_busy_s = None;
            self.thread_updates = Vec::new();
            self.owners = Vec::new();
        }
        self
    }
}

impl fmt::Display for Report {
    /// The summary printed after a run: the run, then noise and balancing,
    /// then the residual.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_run(f)?;
        self.fmt_machine(f)?;
        self.fmt_noise_and_balancing(f)?;
        self.fmt_residual(f)
    }
}

impl Report {
    /// `cores 0-3`, `core 0`; across ranks each rank's own (`rank cores 0 |
    /// 0 | 1 | 1`), since ranks on different hosts share core numbers.
    fn cores_shown(&self) -> String {
        let list = |cores: &[usize]| {
            let mut cores = cores.to_vec();
            cores.sort_unstable();
            cores.dedup();
            crate::topology::format_list(&cores)
        };
        match &self.ranks {
            Some(r) => format!(
                "rank cores {}",
                r.cores
                    .iter()
                    .map(|c| list(c))
                    .collect::<Vec<_>>()
                    .join(" | ")
            ),
            None if self.cores.is_empty() => "cores not listed".into(),
            None => {
                let noun = match list(&self.cores).contains([',', '-']) {
                    true => "cores",
                    false => "core",
                };
                format!("{noun} {}", list(&self.cores))
            }
        }
    }

    fn fmt_run(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let min = self.subdomain_updates.iter().min().copied().unwrap_or(0);
        let max = self.subdomain_updates.iter().max().copied().unwrap_or(0);
        writeln!(
            f,
            "braid {} on {} thread(s), {} socket(s) [{}{}]",
            self.variant,
            self.threads,
            self.sockets,
            self.cores_shown(),
            match (self.clock, self.pinned) {
                (Clock::Virtual, _) => ", simulated in virtual time",
                (Clock::Wall, true) => ", pinned",
                (Clock::Wall, false) => ", NOT pinned",
            },
        )?;
        writeln!(
            f,
            "  grid           {} x {} cells ({} x {} domains of {}, {} subdomain(s) each)",
            self.grid.height,
            self.grid.width,
            self.grid.rows,
            self.grid.cols,
            self.grid.domain_size,
            self.subdomains
        )?;
        writeln!(
            f,
            "  stopped        {:?} after {:.3} s",
            self.stop_reason, self.elapsed_s
        )?;
        writeln!(
            f,
            "  iteration rate {:.1} iterations/thread/s ({:.3e} cell updates/s)",
            self.iteration_rate, self.cell_updates_per_s
        )?;
        match self.subdomain_updates.is_empty() {
            true => writeln!(f, "  spread         {} updates", self.spread)?,
            false => writeln!(
                f,
                "  spread         {} updates (min {min}, max {max})",
                self.spread
            )?,
        }
        writeln!(f, "  max staleness  {} updates", self.max_staleness_seen)?;
        if let Some(r) = &self.ranks {
            let mut hosts = r.hosts.clone();
            hosts.dedup();
            writeln!(
                f,
                "  ranks          {} x {} thread(s) on {}; {} exchanges, {:.3} MB of edges",
                r.ranks,
                r.threads_per_rank,
                hosts.join(", "),
                r.exchanges,
                r.halo_bytes as f64 / 1e6
            )?;
            if let Some(d) = r.termination_delay_s {
                writeln!(
                    f,
                    "  termination    {:.2} ms from the target met to the stop (inferred)",
                    d * 1e3
                )?;
            }
            if r.moves_across > 0 {
                writeln!(
                    f,
                    "  across ranks   {} subdomain(s) moved, {:.3} MB of cells",
                    r.moves_across,
                    r.migrated_bytes as f64 / 1e6
                )?;
            }
        }
        Ok(())
    }

    /// The logical CPUs braid's own parasites ran on.
    pub fn noisy_cpus(&self) -> Vec<usize> {
        self.noise
            .as_ref()
            .map(|n| n.parasites.iter().map(|p| p.core).collect())
            .unwrap_or_default()
    }

    /// Whether other work took more than [`crate::busy::BUSY_SHARE`] of a
    /// core a worker ran on (braid's own parasites aside); null when not
    /// measured (the simulator, runs across ranks).
    pub fn machine_busy(&self) -> Option<bool> {
        Some(self.machine.as_ref()?.busy(&self.noisy_cpus()))
    }

    fn fmt_machine(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(m) = &self.machine else {
            return Ok(());
        };
        let noisy = self.noisy_cpus();
        if !m.busy(&noisy) {
            return Ok(());
        }
        let lost: Vec<String> = m
            .cpus
            .iter()
            .filter(|c| !noisy.contains(&c.cpu))
            .filter_map(|c| Some(format!("CPU {} {:.0}%", c.cpu, 100.0 * c.lost_share?)))
            .collect();
        writeln!(
            f,
            "  machine        BUSY: other work took {} (steal {:.0}%); these timings are not \
             the machine's",
            lost.join(", "),
            100.0 * m.steal()
        )
    }

    /// Where each core's speed came from, and what each parasite did.
    fn fmt_noise(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.speeds_from {
            writeln!(
                f,
                "  speeds         each core as its thread ran in {}",
                file.display()
            )?;
        }
        if let Some(noise) = &self.noise {
            for p in &noise.parasites {
                if let Some(t) = &p.trace {
                    writeln!(
                        f,
                        "  noise          trace {} on core {} (from {:.3} s into it): {} detours, \
                         {:.1}% of the core ({:.1}% over the whole trace)",
                        t.file.display(),
                        p.core,
                        t.offset_ns as f64 / 1e9,
                        p.bursts,
                        100.0 * p.measured_duty,
                        100.0 * t.lost_share
                    )?;
                    continue;
                }
                writeln!(
                    f,
                    "  noise          {:?} on core {}: {} bursts of {} iterations, measured duty {:.1}%{}",
                    noise.form,
                    p.core,
                    p.bursts,
                    p.work_iters,
                    100.0 * p.measured_duty,
                    p.requested_duty
                        .map(|d| format!(" (asked {:.1}%)", 100.0 * d))
                        .unwrap_or_default()
                )?;
            }
        }
        Ok(())
    }

    fn fmt_noise_and_balancing(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_noise(f)?;
        for m in &self.model {
            writeln!(
                f,
                "  model          thread {}'s domain holds {:.2}% of the slowest mode: at {:.0}% \
                 noise plain async should lose ~{:.2}%, a perfect balancer {:.2}%",
                m.thread,
                100.0 * m.mode_share,
                100.0 * m.duty,
                100.0 * m.plain_async_loss,
                100.0 * m.ideal_balanced_loss
            )?;
        }
        if let Some(m) = &self.workload_model {
            writeln!(
                f,
                "  workload       {}: {:.3}x a uniform grid's work; the heaviest thread sweeps \
                 {:.2}x the even share",
                self.config.workload, m.work, m.heaviest_thread
            )?;
            writeln!(
                f,
                "  model          plain async should take ~{:.2}x a uniform run's time ({:+.1}% \
                 for the heaviest threads), a perfect balancer ~{:.2}x ({:+.1}% for subdomains \
                 heavier than a thread's share)",
                m.plain_async_time(),
                100.0 * m.plain_async_loss,
                m.ideal_balanced_time(),
                100.0 * m.ideal_balanced_loss
            )?;
        }
        if let Some(lb) = &self.lb {
            writeln!(
                f,
                "  balancer       {} calls, {} moves ({} across sockets), {:.3} ms in calls: \
                 {:.2}% of the threads' time",
                lb.calls,
                lb.moves,
                lb.cross_socket_moves,
                lb.time_s * 1e3,
                100.0 * self.lb_time_share.unwrap_or(0.0)
            )?;
            write_effort(f, lb)?;
        }
        writeln!(
            f,
            "  slowest part   subdomain at {:.1}% of the mean progress{}",
            100.0 * self.slowest_progress,
            match (self.slowest_progress_unbalanced, &self.lb) {
                (Some(u), Some(_)) =>
                    format!(" (without balancing, the noise alone: {:.1}%)", 100.0 * u),
                _ => String::new(),
            }
        )?;
        Ok(())
    }

    fn fmt_residual(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let target = self.config.tolerance;
        let Some(residual) = self.residual else {
            return writeln!(f, "  residual       not computed (numerics = false)");
        };
        match self.time_to_solution_s {
            Some(t) => writeln!(
                f,
                "  residual       {residual:.3e} (verified) <= {target:e}: solved in {t:.3} s",
            ),
            None if target > 0.0 => writeln!(
                f,
                "  residual       {residual:.3e} (verified): target {target:e} NOT reached",
            ),
            None => writeln!(f, "  residual       {residual:.3e} (verified)"),
        }
    }
}

/// The balancer's effort over the run, and what `balancer = auto` chose.
fn write_effort(f: &mut fmt::Formatter<'_>, lb: &LbStats) -> fmt::Result {
    let (lost, time) = lb.effort.iter().fold((0.0, 0.0), |(l, t), e| {
        (l + e.lost_s + e.cost_s, t + e.interval_s)
    });
    if time > 0.0 {
        let mean_interval = time / lb.effort.len() as f64;
        writeln!(
            f,
            "  effort         {:.3}% of the time lost to imbalance and calls; {:.2} ms apart",
            100.0 * lost / time,
            mean_interval * 1e3
        )?;
    }
    if !lb.tried.is_empty() {
        let ran: Vec<String> = lb
            .ran
            .iter()
            .map(|r| format!("{} from {:.3} s", r.balancer, r.from_s))
            .collect();
        let tried: Vec<String> = lb
            .tried
            .iter()
            .map(|t| format!("{} {:.3}%", t.balancer, 100.0 * t.effort))
            .collect();
        writeln!(f, "  auto           tried {}", tried.join(", "))?;
        let last = ran.len().saturating_sub(4);
        writeln!(
            f,
            "  auto ran       {}{}",
            if last > 0 { "..., " } else { "" },
            ran[last..].join(", ")
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_reads_back_as_it_was_written() {
        for label in ["sync", "async(4)+hybrid(0.001,3)"] {
            let mut cfg = Config::default();
            cfg.apply_variant(label).unwrap();
            cfg.apply_overrides(&[
                "max_iterations=50",
                "trace_interval=0.00001",
                "noise=thread",
                "numerics=true",
                "tolerance=0.5",
                "cores=0,1,2,3",
            ])
            .unwrap();
            let plan = Plan::simulated(&cfg).unwrap();
            let sim = plan.sim().unwrap();
            let (out, noise) = crate::sim::run(
                &plan.problem,
                &plan.placement,
                &plan.settings,
                sim,
                plan.noise.as_ref(),
            );
            let report = Report::new(&plan, &out, noise);
            let text = serde_json::to_string(&report).unwrap();
            let back: Report = serde_json::from_str(&text).unwrap();
            assert_eq!(serde_json::to_string(&back).unwrap(), text, "{label}");
            assert!(back.trace.is_some_and(|t| t.len() > 1), "{label}");
            assert!(back.noise.is_some() && !back.model.is_empty(), "{label}");
        }
    }
}
