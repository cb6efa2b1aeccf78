//! The real runtime: pinned worker threads updating subdomains under a
//! synchronisation scheme, a monitor on the calling thread, and the verified
//! end of a run.
//!
//! # Shape of a run
//!
//! A run is one or more *epochs*. In each, the workers run until the stop
//! flag is set; then the grid is assembled and its residual recomputed from
//! scratch. If the stop was for convergence, judged on the cheap estimate
//! (the sum of the subdomains' last local residuals, which in async mode were
//! computed against stale halos), but the recomputed residual misses the
//! target, a new epoch starts with a tighter estimate threshold. So a
//! reported time to solution is always backed by the assembled grid.
//!
//! # Who stops a run
//!
//! * sync: the barrier's leader, on exactly iteration k: convergence (the
//!   local residuals are then exact) or `max_iterations`;
//! * ssync/async: the worker that reaches its update budget, or the monitor
//!   when the residual estimate meets the threshold;
//! * the monitor, at `time_limit`; and a worker that panics.
//! * Across MPI ranks, none of these alone: each rank's wish goes into the
//!   next exchange, and all ranks stop on what they agree (`peers`).
//!
//! Every wait (barrier, staleness gate, the stall hook) watches the flag.

mod barrier;
mod calls;
mod migrate;
pub(crate) mod peers;
mod sleep;
mod stop;
mod sync;
mod trace;
mod waits;
mod wire;
mod worker;

use std::ops::Range;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

pub(crate) use barrier::{Crossing, StopBarrier};
pub(crate) use stop::{Idler, StopFlag};

use crate::engine::{
    BalancerSettings, Clock, CoreTime, Outcome, Settings, StopReason, TraceSample,
};
use crate::problem::{Problem, residual_norm};
use crate::schedule::residual::{Ask, Look};
use crate::schedule::{EstimateLine, ResidualSchedule, Sampler, StopRule, Verdicts, epoch_end};
use crate::subdomain::{Subdomain, Subdomains};
use crate::topology::Placement;
use crate::variant::Mode;
use calls::{Assignment, CoreClock, RunView, SharedCalls};
use migrate::RankCalls;
use peers::{Peers, Wish, from_urgency, urgency, verdict};
use trace::RankTrace;

/// How often the monitor looks at the run (and, across ranks in ssync and
/// async, exchanges the edges: measured on 2 ranks of 1 thread here, a pause
/// of 0.1 ms between exchanges took CPU from the workers and cost 12% more
/// time to solution than 1 ms; see `peers`).
pub const MONITOR_PERIOD: Duration = Duration::from_millis(1);

/// Exchanges whose estimates a run across ranks keeps: a minute at one
/// per millisecond (1 MB), enough to find when the target was met.
const ESTIMATES_KEPT: usize = 1 << 16;

/// State shared by the workers and the monitor.
struct Shared<'a> {
    problem: &'a Problem,
    subs: &'a Subdomains,
    settings: &'a Settings,
    placement: &'a Placement,
    stop: StopFlag,
    barrier: StopBarrier,
    /// Where a worker with nothing it may update sleeps until another
    /// thread's update count moves (`sleep.rs`; in one process).
    idle: sleep::Sleep,
    thread_updates: Vec<CachePadded<AtomicU64>>,
    /// Each worker thread's wall nanoseconds, over every epoch.
    life_ns: Vec<CachePadded<AtomicU64>>,
    /// Each worker thread's nanoseconds waiting for its core, over every
    /// epoch; `u64::MAX` once a read of schedstat failed.
    waited_ns: Vec<CachePadded<AtomicU64>>,
    /// Each worker thread's open epoch's wait, read live (`waits`).
    live_waits: Vec<CachePadded<waits::LiveWait>>,
    max_lag: Vec<CachePadded<AtomicU64>>,
    assignment: Assignment,
    /// The balancer the workers call in turn (one process).
    balancer: Option<SharedCalls>,
    /// Across ranks: the balancer the exchanging thread calls (`migrate`),
    /// and when its next call is due, published for the workers' CPU-time
    /// samples.
    rank_balancer: Option<parking_lot::Mutex<RankCalls>>,
    rank_due_ns: AtomicU64,
    /// Across ranks, with `trace_interval`: the samples the exchanges
    /// carried (`trace`).
    rank_trace: Option<parking_lot::Mutex<RankTrace>>,
    /// Across ranks: each exchange's agreed clock and estimate this epoch,
    /// the last [`ESTIMATES_KEPT`] (for the termination delay).
    estimates: parking_lot::Mutex<std::collections::VecDeque<(u64, f64)>>,
    rule: StopRule,
    start: Instant,
    /// The estimate's [`EstimateLine`], as bits (tightened between epochs).
    stop_line: AtomicU64,
    /// The residual rounds (`schedule::residual`): what the subdomains are
    /// asked for (an [`Ask`] as bits), which the workers read, and the
    /// schedule, which whoever looks at the estimate keeps (sync's barrier
    /// leader, the monitor, across ranks the exchanging thread).
    residual_ask: AtomicU64,
    residual_schedule: parking_lot::Mutex<ResidualSchedule>,
    finished: AtomicUsize,
    pinned: AtomicUsize,
    /// Subdomains copied into a new owner's memory after a cross-socket move.
    rehomes: AtomicU64,
    /// The other ranks of a run across ranks, if any.
    peers: Option<&'a dyn Peers>,
    /// The threads this process runs (all of them without peers); its
    /// subdomains are those they own, which across ranks changes as
    /// subdomains move between ranks.
    local: Range<usize>,
    /// Across ranks: the stop the monitor wants, left for the next exchange
    /// (sync), and the stop all ranks agreed (as [`urgency`] codes).
    wish: AtomicU64,
    agreed: AtomicU64,
    /// Each thread's CPU-time samples, when the run measures object loads
    /// (`Settings::measures_loads`): then every update is also timed.
    clocks: Option<Vec<CachePadded<CoreClock>>>,
    /// Progress (mean updates per subdomain of this process), as `f64`
    /// bits, published by the monitor for a workload that moves with it.
    progress: AtomicU64,
    /// Across ranks: when the monitor last exchanged (ns since the start).
    exchanged_ns: AtomicU64,
    /// Trace samples taken where a call moved subdomains ([`Shared::cut_trace`]),
    /// merged into the monitor's at each epoch's end.
    cuts: parking_lot::Mutex<Vec<TraceSample>>,
}

impl Shared<'_> {
    /// A trace sample now, if loads are recorded in one process: the
    /// caller's call just moved subdomains, and LB data's phases are cut
    /// there so that no subdomain changes owner within one. Moves are
    /// rare next to updates, and the lock is held for a push.
    fn cut_trace(&self) {
        let s = self.settings;
        if s.trace_loads && s.trace_interval.is_some() && self.peers.is_none() {
            let cut = sample(self, self.start.elapsed());
            self.cuts.lock().push(cut);
        }
    }

    /// This process's subdomains' last squared local residuals, summed.
    fn residual_sq_estimate(&self) -> f64 {
        self.local_subs().map(Subdomain::residual_sq).sum()
    }

    /// Seconds thread `t` has waited for its core so far (0 if unknown).
    fn waited_s(&self, t: usize) -> f64 {
        self.live_waits[t]
            .seconds(&self.waited_ns[t])
            .unwrap_or(0.0)
    }

    /// The subdomains this process's threads own now.
    fn local_subs(&self) -> impl Iterator<Item = &Subdomain> {
        self.subs.iter().filter(|s| self.local.contains(&s.owner()))
    }

    /// When the balancer's next call is due (ns), if the run balances.
    fn balancer_due_ns(&self) -> Option<u64> {
        match (&self.balancer, &self.rank_balancer) {
            (Some(b), _) => Some(b.due_ns()),
            (None, Some(_)) => Some(self.rank_due_ns.load(Ordering::Relaxed)),
            (None, None) => None,
        }
    }

    /// What this rank brings to an exchange with its peers.
    fn wish(&self, stop: Option<StopReason>) -> Wish {
        let (round, at_sum, count_sum) = self.residual_rounds();
        Wish {
            stop,
            estimate_sq: self.residual_sq_estimate(),
            round,
            at_sum,
            count_sum,
            most_updates: self.most_updates(),
            now_ns: self.start.elapsed().as_nanos() as u64,
        }
    }

    /// One exchange with the peers; the agreed stop, if any, is recorded.
    fn exchange(&self, peers: &dyn Peers, stop: Option<StopReason>) -> Option<StopReason> {
        let mut words = match &self.rank_balancer {
            Some(b) => b.lock().view_words(self, peers),
            None => Vec::new(),
        };
        let view_len = words.len();
        if let Some(t) = &self.rank_trace {
            let call = self
                .rank_balancer
                .as_ref()
                .is_some_and(|b| b.lock().calls_next());
            t.lock().words(
                self.subs,
                &self.local,
                |t| self.waited_s(t),
                call,
                &mut words,
            );
        }
        let all = peers.exchange(self.subs, self.wish(stop), &mut words);
        let (view, traced) = words.split_at(view_len);
        if let Some(t) = &self.rank_trace {
            t.lock().after_exchange(all.now_ns, traced);
        }
        let now = self.start.elapsed().as_nanos() as u64;
        self.exchanged_ns.store(now, Ordering::Relaxed);
        {
            let mut log = self.estimates.lock();
            if log.len() == ESTIMATES_KEPT {
                log.pop_front();
            }
            log.push_back((all.now_ns, all.estimate_sq));
        }
        let agreed = verdict(&self.rule, all, || {
            let subs = self.problem.subs.len();
            self.look_at(all.round, all.at_sum, all.count_sum, all.estimate_sq, subs)
        });
        if agreed.is_some() {
            self.agreed.store(urgency(agreed), Ordering::Relaxed);
        } else if let Some(b) = &self.rank_balancer {
            let mut b = b.lock();
            if b.after_exchange(self, peers, all.now_ns, view) {
                self.rank_due_ns.store(b.due_ns(), Ordering::Relaxed);
                if let Some(t) = &self.rank_trace {
                    t.lock().moved(all.now_ns, self.subs);
                }
            }
        }
        agreed
    }

    /// What this process's subdomains show of their residuals now: the
    /// least residual round, and the sums of the counts their residuals are
    /// of and of their counts (`schedule::residual`).
    fn residual_rounds(&self) -> (u64, f64, f64) {
        let (mut done, mut at, mut counts) = (u64::MAX, 0.0, 0.0);
        for s in self.local_subs() {
            done = done.min(s.residual_round());
            at += s.residual_at() as f64;
            counts += s.count() as f64;
        }
        (done, at, counts)
    }

    /// Whether the estimate meets the line, looked at only once the
    /// residual round asked for has completed; a complete round that misses
    /// sets where the next is issued, and a round is issued once the run
    /// is there (`schedule::residual`). `subs` subdomains show `done` (the
    /// least round), `at_sum` and `count_sum` (the sums of the counts their
    /// residuals are of and of their counts) and `estimate_sq`. One thread
    /// looks at a time: sync's barrier leader, the monitor, or across ranks
    /// the exchanging thread, on what all ranks agreed (so every rank keeps
    /// the same schedule).
    fn look_at(
        &self,
        done: u64,
        at_sum: f64,
        count_sum: f64,
        estimate_sq: f64,
        subs: usize,
    ) -> bool {
        if self.settings.tolerance.is_none() {
            return false;
        }
        let n = subs.max(1) as f64;
        let seen = Look {
            done,
            at: at_sum / n,
            estimate_sq,
            progress: count_sum / n,
        };
        let line = EstimateLine::from_bits(self.stop_line.load(Ordering::Relaxed));
        let mut schedule = self.residual_schedule.lock();
        let met = schedule.look(seen, &line);
        self.residual_ask
            .store(schedule.ask().to_bits(), Ordering::Relaxed);
        met
    }

    /// [`Self::look_at`] this process's own subdomains.
    fn estimate_met(&self) -> bool {
        let (done, at, counts) = self.residual_rounds();
        let n = self.local_subs().count();
        self.look_at(done, at, counts, self.residual_sq_estimate(), n)
    }

    fn most_updates(&self) -> u64 {
        self.thread_updates
            .iter()
            .map(|u| u.load(Ordering::Relaxed))
            .max()
            .unwrap_or(0)
    }

    fn budget_spent(&self) -> bool {
        self.rule.budget_spent(self.most_updates())
    }

    fn view(&self) -> RunView<'_> {
        RunView {
            subs: self.subs,
            thread_updates: &self.thread_updates,
            residual: self.settings.residual(),
            clocks: self.clocks.as_deref(),
        }
    }

    /// Publishes this process's progress, for a workload that moves with it.
    fn publish_progress(&self) {
        if !self.settings.workload.moves() {
            return;
        }
        let done: u64 = self.thread_updates[self.local.clone()]
            .iter()
            .map(|u| u.load(Ordering::Relaxed))
            .sum();
        let p = done as f64 / self.local_subs().count().max(1) as f64;
        self.progress.store(p.to_bits(), Ordering::Relaxed);
    }

    /// What the command line's progress line shows: the most updates, the
    /// clock and the residual estimate (across ranks, the whole run's as
    /// the last exchange agreed it: a rank holds only its own part).
    /// Returns the estimate it read, for the monitor's convergence test to
    /// reuse.
    fn show_progress(&self) -> Option<f64> {
        let estimate = match (self.peers, self.settings.tolerance) {
            (_, None) => None,
            (None, Some(_)) => Some(self.residual_sq_estimate()),
            (Some(_), Some(_)) => self.estimates.lock().back().map(|&(_, e)| e),
        };
        self.settings.progress.publish(
            self.most_updates(),
            self.start.elapsed().as_secs_f64(),
            estimate,
        );
        estimate
    }

    /// Whether the exchanging monitor is two periods behind: a worker
    /// sharing its core then offers it the core.
    fn monitor_is_late(&self) -> bool {
        let now = self.start.elapsed().as_nanos() as u64;
        let last = self.exchanged_ns.load(Ordering::Relaxed);
        now.saturating_sub(last) > 2 * MONITOR_PERIOD.as_nanos() as u64
    }

    /// Progress as last published.
    fn progress(&self) -> f64 {
        f64::from_bits(self.progress.load(Ordering::Relaxed))
    }
}

/// Runs `problem` on the threads of `placement` to the end.
pub(crate) fn run(problem: &Problem, placement: &Placement, settings: &Settings) -> Outcome {
    run_observed(problem, placement, settings, None, None, None)
}

/// Runs this rank's part of `problem` (the threads `peers.threads()` of the
/// global `placement`) to the end, with its peers (see [`peers`]). The
/// outcome is the whole run's on every rank; only rank 0's has the grid.
#[cfg(any(test, feature = "mpi"))]
pub(crate) fn run_ranks(
    problem: &Problem,
    placement: &Placement,
    settings: &Settings,
    peers: &dyn Peers,
) -> Outcome {
    run_observed(problem, placement, settings, None, Some(peers), None)
}

/// [`run_ranks`] with `balancer` in place of the scheme's (tests: a sync
/// run, which has none, that moves subdomains between ranks).
#[cfg(test)]
pub(crate) fn run_ranks_balanced(
    problem: &Problem,
    placement: &Placement,
    settings: &Settings,
    peers: &dyn Peers,
    balancer: &BalancerSettings,
) -> Outcome {
    run_observed(
        problem,
        placement,
        settings,
        None,
        Some(peers),
        Some(balancer),
    )
}

/// A thread beside the workers that looks at their shared state while they
/// run, until the stop flag is set (tests: an independent witness of what
/// the protocols promise, rather than the numbers the workers record).
type Observer<'o> = &'o (dyn Fn(&Shared<'_>) + Sync);

fn run_observed(
    problem: &Problem,
    placement: &Placement,
    settings: &Settings,
    observer: Option<Observer<'_>>,
    peers: Option<&dyn Peers>,
    balancer: Option<&BalancerSettings>,
) -> Outcome {
    assert_eq!(
        placement.threads(),
        problem.threads,
        "one thread per domain"
    );
    // Cells are allocated by their owners, after pinning (first touch):
    // each local thread's domain in its slab.
    let local = peers.map_or(0..placement.threads(), |p| p.threads());
    let subs = Subdomains::with_slabs(problem, |d| local.contains(&d));
    let r0 = problem.initial_residual_norm().max(f64::MIN_POSITIVE);
    if let Some(p) = peers {
        p.start();
    }
    settings.progress.start(r0);
    let balancer = balancer.or(settings.scheme.balancer());
    let shared = Shared::new(problem, &subs, settings, placement, r0, peers, balancer);
    let mut trace = Vec::new();
    let mut refuted = 0;
    let (stop, grid, residual) = loop {
        shared.new_epoch();
        run_epoch(&shared, &mut trace, observer);
        let end = shared.end_of_epoch(r0);
        // Without a target no epoch stops as converged, so none is refuted.
        let tolerance = settings.tolerance.unwrap_or(f64::INFINITY);
        if let Some(stop) = epoch_end(end.stop, end.residual, tolerance, end.spent) {
            break (stop, end.grid, end.residual);
        }
        refuted += 1;
        shared.tighten(tolerance, end.residual);
    };
    // Across ranks, the grid is gathered once, and only to be written.
    let grid = match peers {
        Some(p) if p.wants_grid() => p.gather(problem, &subs),
        _ => grid,
    };
    if let Some(t) = &shared.rank_trace {
        trace = std::mem::take(&mut t.lock().samples);
    }
    let mut outcome = shared.outcome(stop, grid, residual, refuted, trace);
    if let Some(p) = peers {
        p.merge(&mut outcome);
        if let Some(info) = outcome.ranks.as_mut() {
            if let Some(b) = &shared.rank_balancer {
                info.moves_across = b.lock().across();
            }
            let log: Vec<(u64, f64)> = shared.estimates.lock().iter().copied().collect();
            let stop_ns = (outcome.elapsed_s * 1e9) as u64;
            info.termination_delay_s = match (outcome.converged, settings.tolerance) {
                (true, Some(tol)) => peers::termination_delay(&log, residual, tol, stop_ns),
                _ => None,
            };
        }
    }
    outcome
}

/// How an epoch ended: the stop it was given, the grid (in one process;
/// across ranks none, see `peers`) and its residual, and whether the
/// update budget is spent.
struct EpochEnd {
    stop: StopReason,
    grid: Option<ndarray::Array2<f64>>,
    residual: f64,
    spent: bool,
}

impl Shared<'_> {
    /// Every flag of an epoch back to its start.
    fn new_epoch(&self) {
        self.stop.reset();
        self.estimates.lock().clear();
        self.wish.store(0, Ordering::Relaxed);
        self.agreed.store(0, Ordering::Relaxed);
        self.finished.store(0, Ordering::Relaxed);
        self.pinned.store(0, Ordering::Relaxed);
    }

    /// The stop, the grid and its residual relative to `r0`, once the
    /// workers of an epoch have stopped. Across ranks every rank ends the
    /// epoch on the stop all agreed, and on the exact residual all summed.
    fn end_of_epoch(&self, r0: f64) -> EpochEnd {
        let (stop, grid, residual, spent) = match self.peers {
            None => {
                let stop = self.stop.reason();
                let grid = self.subs.assemble(self.problem);
                let residual = residual_norm(&grid) / r0;
                (stop, Some(grid), residual, self.budget_spent())
            }
            Some(p) => {
                let stop = from_urgency(self.agreed.load(Ordering::Relaxed));
                // Settle the edges (every worker everywhere has stopped),
                // then the exact residual, summed (see `peers`).
                let mut traced = Vec::new();
                if let Some(t) = &self.rank_trace {
                    t.lock()
                        .last_words(self.subs, &self.local, |t| self.waited_s(t), &mut traced);
                }
                let all = p.exchange(self.subs, self.wish(None), &mut traced);
                if let Some(t) = &self.rank_trace {
                    t.lock().after_exchange(all.now_ns, &traced);
                }
                let mut sum = [self
                    .local_subs()
                    .map(|s| self.subs.exact_residual_sq(self.problem, s.geom.id))
                    .sum::<f64>()];
                p.sum(&mut sum);
                let residual = sum[0].sqrt() / r0;
                (
                    stop,
                    None,
                    residual,
                    self.rule.budget_spent(all.most_updates),
                )
            }
        };
        EpochEnd {
            stop: stop.expect("an epoch ends only when stopped"),
            grid,
            residual,
            spent,
        }
    }

    /// A refuted estimate: tightens its threshold by how far off it was
    /// (`schedule::REFUTED_MARGIN` says why no further).
    fn tighten(&self, tolerance: f64, residual: f64) {
        let mut line = EstimateLine::from_bits(self.stop_line.load(Ordering::Relaxed));
        line.tighten(tolerance, residual);
        self.stop_line.store(line.to_bits(), Ordering::Relaxed);
    }

    /// What the run measured, at its verified end.
    fn outcome(
        &self,
        stop: StopReason,
        grid: Option<ndarray::Array2<f64>>,
        residual: f64,
        refuted: u32,
        trace: Vec<TraceSample>,
    ) -> Outcome {
        let elapsed_s = self.start.elapsed().as_secs_f64();
        let converged = self.settings.tolerance.is_some_and(|tol| residual <= tol);
        Outcome {
            clock: Clock::Wall,
            elapsed_s,
            stop,
            subdomain_updates: self.subs.iter().map(Subdomain::count).collect(),
            thread_updates: load_all(&self.thread_updates),
            owners: self.subs.iter().map(Subdomain::owner).collect(),
            grid,
            residual: Some(residual),
            converged,
            time_to_solution_s: converged.then_some(elapsed_s),
            max_staleness_seen: load_all(&self.max_lag).into_iter().max().unwrap_or(0),
            pinned: self.pinned.load(Ordering::Relaxed) == self.local.len(),
            refuted_estimates: refuted,
            rehomes: self.rehomes.load(Ordering::Relaxed),
            first_touchers: self.subs.iter().map(Subdomain::first_toucher).collect(),
            lb: match (&self.balancer, &self.rank_balancer) {
                (Some(b), _) => Some(b.stats()),
                (None, Some(b)) => Some(b.lock().stats()),
                (None, None) => None,
            },
            trace,
            ranks: None,
            thread_core_time: self
                .life_ns
                .iter()
                .zip(&self.waited_ns)
                .map(|(life, waited)| {
                    let waited = waited.load(Ordering::Relaxed);
                    CoreTime {
                        life_s: life.load(Ordering::Relaxed) as f64 * 1e-9,
                        waited_s: (waited != u64::MAX).then_some(waited as f64 * 1e-9),
                    }
                })
                .collect(),
            subdomain_busy_s: self
                .clocks
                .as_ref()
                .map(|_| self.subs.iter().map(Subdomain::busy_s).collect()),
        }
    }
}

impl<'a> Shared<'a> {
    /// A run's shared state, its clock started; `r0` is `||r0||`.
    fn new(
        problem: &'a Problem,
        subs: &'a Subdomains,
        settings: &'a Settings,
        placement: &'a Placement,
        r0: f64,
        peers: Option<&'a dyn Peers>,
        balancer: Option<&BalancerSettings>,
    ) -> Self {
        let threads = placement.threads();
        let local = peers.map_or(0..threads, |p| p.threads());
        let measure = settings.measure();
        let loads = measure.loads;
        Shared {
            problem,
            subs,
            settings,
            placement,
            stop: StopFlag::default(),
            barrier: StopBarrier::new(local.len()),
            idle: sleep::Sleep::default(),
            thread_updates: (0..threads).map(|_| Default::default()).collect(),
            life_ns: (0..threads).map(|_| Default::default()).collect(),
            waited_ns: (0..threads).map(|_| Default::default()).collect(),
            live_waits: (0..threads).map(|_| Default::default()).collect(),
            max_lag: (0..threads).map(|_| Default::default()).collect(),
            assignment: Assignment::new(subs, threads),
            balancer: balancer
                .filter(|_| peers.is_none())
                .map(|b| SharedCalls::new(b, threads, measure)),
            rank_balancer: balancer
                .filter(|_| peers.is_some())
                .map(|b| parking_lot::Mutex::new(RankCalls::new(b, measure))),
            rank_due_ns: AtomicU64::new(0),
            rank_trace: settings
                .trace_interval
                .filter(|_| peers.is_some())
                .map(|every| {
                    let loads = settings.trace_loads;
                    let trace = RankTrace::new(every, loads, subs.len(), threads);
                    parking_lot::Mutex::new(trace)
                }),
            estimates: Default::default(),
            rule: StopRule {
                budget: settings.update_budget,
                time_limit: settings.time_limit.map(|d| d.as_nanos() as u64),
            },
            start: Instant::now(),
            stop_line: AtomicU64::new(EstimateLine::new(r0, settings.tolerance).to_bits()),
            residual_ask: AtomicU64::new(Ask::Round(0).to_bits()),
            residual_schedule: parking_lot::Mutex::new(ResidualSchedule::new(r0 * r0)),
            finished: AtomicUsize::new(0),
            pinned: AtomicUsize::new(0),
            rehomes: AtomicU64::new(0),
            peers,
            local,
            wish: AtomicU64::new(0),
            agreed: AtomicU64::new(0),
            clocks: loads.then(|| (0..threads).map(|_| Default::default()).collect()),
            progress: AtomicU64::new(0f64.to_bits()),
            exchanged_ns: AtomicU64::new(0),
            cuts: parking_lot::Mutex::new(Vec::new()),
        }
    }
}

fn load_all(v: &[CachePadded<AtomicU64>]) -> Vec<u64> {
    v.iter().map(|a| a.load(Ordering::Relaxed)).collect()
}

/// Runs the workers until the stop flag is set and all have left.
fn run_epoch(shared: &Shared<'_>, trace: &mut Vec<TraceSample>, observer: Option<Observer<'_>>) {
    let threads = shared.local.len();
    let start = shared.start;
    let mode = shared.settings.mode();
    let mut sampler = shared
        .settings
        .trace_interval
        .map(|every| Sampler::new(every.as_nanos() as u64));
    std::thread::scope(|scope| {
        if let Some(observe) = observer {
            scope.spawn(move || observe(shared));
        }
        for t in shared.local.clone() {
            std::thread::Builder::new()
                .name(format!("braid-worker-{t}"))
                .spawn_scoped(scope, move || worker::run(shared, t))
                .expect("cannot spawn a worker thread");
        }
        if let Some(peers) = shared.peers {
            monitor_ranks(shared, peers);
            return;
        }
        while shared.finished.load(Ordering::Acquire) < threads {
            std::thread::sleep(MONITOR_PERIOD);
            shared.publish_progress();
            let estimate = shared.show_progress();
            let now = start.elapsed();
            // The workers watch their budgets, and in sync the barrier's
            // leader the estimate (whose local residuals are then exact).
            let look = Verdicts {
                interrupted: shared.settings.interrupt.signal().is_some(),
                most_updates: None,
                now: Some(now.as_nanos() as u64),
            };
            // A complete residual round's estimate (sync's barrier leader
            // looks at its own).
            let converged = || mode != Mode::Sync && estimate.is_some() && shared.estimate_met();
            if let Some(reason) = shared.rule.first(look, converged) {
                shared.stop.request(reason);
            }
            if let Some(s) = &mut sampler
                && s.due(now.as_nanos() as u64)
            {
                trace.push(sample(shared, now));
            }
        }
        // And once the workers have stopped, so that the trace covers the
        // whole run: a monitor kept off its core by busy workers can take
        // its last regular sample long before the end, and a replay of the
        // run's speeds would have to guess the rest.
        let now = start.elapsed();
        if sampler.is_some() && trace.last().is_none_or(|l| now.as_secs_f64() > l.t_s) {
            trace.push(sample(shared, now));
        }
        let cuts = std::mem::take(&mut *shared.cuts.lock());
        if !cuts.is_empty() {
            trace.extend(cuts);
            trace.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
        }
    });
}

/// Every subdomain's count and owner now, `now` into the run, and with
/// `trace_loads` the loads so far.
fn sample(shared: &Shared<'_>, now: Duration) -> TraceSample {
    let loads = shared.settings.trace_loads;
    TraceSample {
        t_s: now.as_secs_f64(),
        counts: shared.subs.iter().map(Subdomain::count).collect(),
        owners: shared.subs.iter().map(Subdomain::owner).collect(),
        busy_s: match loads {
            true => shared.subs.iter().map(Subdomain::busy_s).collect(),
            false => Vec::new(),
        },
        lost_s: match loads {
            true => (0..shared.waited_ns.len())
                .map(|t| shared.waited_s(t))
                .collect(),
            false => Vec::new(),
        },
        work_s: Vec::new(),
    }
}

/// The monitor of a run across ranks: it never stops the run on its own
/// (see [`peers`]). In sync it leaves its verdict (time limit, interrupt) as
/// a wish for the barrier's next exchange; in ssync/async it exchanges in
/// rounds, one per [`MONITOR_PERIOD`], until all ranks agree, then waits
/// for its workers.
fn monitor_ranks(shared: &Shared<'_>, peers: &dyn Peers) {
    let threads = shared.local.len();
    let running = || shared.finished.load(Ordering::Acquire) < threads;
    let own_verdict = || {
        let look = Verdicts {
            interrupted: shared.settings.interrupt.signal().is_some(),
            most_updates: None,
            now: Some(shared.start.elapsed().as_nanos() as u64),
        };
        shared.rule.first(look, || false)
    };
    let abort_on_panic = || {
        if shared.stop.reason() == Some(StopReason::WorkerPanic) {
            peers.abort();
        }
    };
    if shared.settings.mode() == Mode::Sync {
        while running() {
            std::thread::sleep(MONITOR_PERIOD);
            shared.publish_progress();
            let _ = shared.show_progress();
            abort_on_panic();
            if let Some(reason) = own_verdict() {
                shared
                    .wish
                    .fetch_max(urgency(Some(reason)), Ordering::Relaxed);
            }
        }
        return;
    }
    loop {
        abort_on_panic();
        shared.publish_progress();
        let _ = shared.show_progress();
        // A worker at its budget has set this rank's flag: that is its wish.
        let wish = shared.stop.reason().or_else(own_verdict);
        if let Some(reason) = shared.exchange(peers, wish) {
            shared.stop.request(reason);
            break;
        }
        std::thread::sleep(MONITOR_PERIOD);
    }
    while running() {
        std::thread::sleep(MONITOR_PERIOD);
        abort_on_panic();
    }
}

#[cfg(test)]
mod tests;
