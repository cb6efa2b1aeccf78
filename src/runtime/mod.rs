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

mod balancer;
mod barrier;
pub mod peers;
mod stop;
mod sync;
mod worker;

use std::ops::Range;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

pub use barrier::{Crossing, StopBarrier};
pub use stop::{Idler, StopFlag};

use crate::engine::{Clock, Outcome, Settings, StopReason, TraceSample};
use crate::problem::{Problem, residual_norm};
use crate::schedule::{EstimateLine, Refutation, Sampler, StopRule, Verdicts, epoch_end};
use crate::subdomain::{self, Subdomain};
use crate::topology::Placement;
use crate::variant::Mode;
use balancer::{Assignment, RunView, SharedBalancer};
use peers::{Peers, Wish, from_urgency, urgency, verdict};

/// How often the monitor looks at the run (and, across ranks in ssync and
/// async, exchanges the edges: measured on 2 ranks of 1 thread here, a pause
/// of 0.1 ms between exchanges took CPU from the workers and cost 12% more
/// time to solution than 1 ms; see `peers`).
const MONITOR_PERIOD: Duration = Duration::from_millis(1);

/// State shared by the workers and the monitor.
struct Shared<'a> {
    problem: &'a Problem,
    subs: &'a [Subdomain],
    settings: &'a Settings,
    placement: &'a Placement,
    stop: StopFlag,
    barrier: StopBarrier,
    thread_updates: Vec<CachePadded<AtomicU64>>,
    max_lag: Vec<CachePadded<AtomicU64>>,
    assignment: Assignment,
    balancer: Option<SharedBalancer>,
    rule: StopRule,
    start: Instant,
    /// The estimate's [`EstimateLine`], as bits (tightened between epochs).
    stop_line: AtomicU64,
    finished: AtomicUsize,
    pinned: AtomicUsize,
    /// Subdomains copied into a new owner's memory after a cross-socket move.
    rehomes: AtomicU64,
    /// The other ranks of a run across ranks, if any.
    peers: Option<&'a dyn Peers>,
    /// The threads this process runs (all of them without peers), and
    /// their subdomains.
    local: Range<usize>,
    local_subs: Range<usize>,
    /// Across ranks: the stop the monitor wants, left for the next exchange
    /// (sync), and the stop all ranks agreed (as [`urgency`] codes).
    wish: AtomicU64,
    agreed: AtomicU64,
}

impl Shared<'_> {
    /// This process's subdomains' last squared local residuals, summed.
    fn residual_sq_estimate(&self) -> f64 {
        self.subs[self.local_subs.clone()]
            .iter()
            .map(Subdomain::residual_sq)
            .sum()
    }

    /// What this rank brings to an exchange with its peers.
    fn wish(&self, stop: Option<StopReason>) -> Wish {
        Wish {
            stop,
            estimate_sq: self.residual_sq_estimate(),
            most_updates: self.most_updates(),
        }
    }

    /// One exchange with the peers; the agreed stop, if any, is recorded.
    fn exchange(&self, peers: &dyn Peers, stop: Option<StopReason>) -> Option<StopReason> {
        let all = peers.exchange(self.subs, self.wish(stop));
        let line = EstimateLine::from_bits(self.stop_line.load(Ordering::Relaxed));
        let agreed = verdict(&self.rule, &line, all);
        if agreed.is_some() {
            self.agreed.store(urgency(agreed), Ordering::Relaxed);
        }
        agreed
    }

    fn estimate_met(&self) -> bool {
        EstimateLine::from_bits(self.stop_line.load(Ordering::Relaxed))
            .met(self.residual_sq_estimate())
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
        }
    }
}

/// Runs `problem` on the threads of `placement` to the end.
pub fn run(problem: &Problem, placement: &Placement, settings: &Settings) -> Outcome {
    run_observed(problem, placement, settings, None, None)
}

/// Runs this rank's part of `problem` (the threads `peers.threads()` of the
/// global `placement`) to the end, with its peers (see [`peers`]). The
/// outcome is the whole run's on every rank; only rank 0's has the grid.
pub fn run_ranks(
    problem: &Problem,
    placement: &Placement,
    settings: &Settings,
    peers: &dyn Peers,
) -> Outcome {
    run_observed(problem, placement, settings, None, Some(peers))
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
) -> Outcome {
    assert_eq!(
        placement.threads(),
        problem.threads,
        "one thread per domain"
    );
    // Cells are allocated by their owners, after pinning (first touch).
    let subs = subdomain::build_untouched(problem);
    let r0 = residual_norm(&problem.initial_grid()).max(f64::MIN_POSITIVE);
    if let Some(p) = peers {
        p.start();
    }
    let shared = Shared::new(problem, &subs, settings, placement, r0, peers);
    let mut trace = Vec::new();
    let mut refuted = 0;
    let (stop, grid, residual) = loop {
        shared.stop.reset();
        shared.wish.store(0, Ordering::Relaxed);
        shared.agreed.store(0, Ordering::Relaxed);
        shared.finished.store(0, Ordering::Relaxed);
        shared.pinned.store(0, Ordering::Relaxed);
        run_epoch(&shared, &mut trace, observer);
        let (stop, grid, residual, spent) = match peers {
            None => {
                let stop = shared.stop.reason();
                let grid = subdomain::assemble(problem, &subs);
                let residual = residual_norm(&grid) / r0;
                (stop, Some(grid), residual, shared.budget_spent())
            }
            // Every rank ends the epoch on the stop all agreed, and on rank
            // 0's residual of the gathered grid.
            Some(p) => {
                let stop = from_urgency(shared.agreed.load(Ordering::Relaxed));
                let grid = p.gather(problem, &subs);
                let residual = grid.as_ref().map_or(0.0, |g| residual_norm(g) / r0);
                let (residual, most) = p.share(residual, shared.most_updates());
                (stop, grid, residual, shared.rule.budget_spent(most))
            }
        };
        let stop = stop.expect("an epoch ends only when stopped");
        // Without a target no epoch stops as converged, so none is refuted.
        let tolerance = settings.tolerance.unwrap_or(f64::INFINITY);
        if let Some(stop) = epoch_end(stop, residual, tolerance, spent) {
            break (stop, grid, residual);
        }
        // Tighten the estimate's threshold by how far off it was.
        refuted += 1;
        let mut line = EstimateLine::from_bits(shared.stop_line.load(Ordering::Relaxed));
        // Across ranks, a cut by the measured ratio: there the stale ghosts
        // make most async estimates optimistic, and a 4x cut ran them on to
        // about half the target (2 ranks here: 15% longer to solution).
        let how = match peers {
            Some(_) => Refutation::Free,
            None => Refutation::Restart,
        };
        line.tighten(tolerance, residual, how);
        shared.stop_line.store(line.to_bits(), Ordering::Relaxed);
    };
    let elapsed_s = shared.start.elapsed().as_secs_f64();
    let converged = settings.tolerance.is_some_and(|tol| residual <= tol);
    let mut outcome = Outcome {
        clock: Clock::Wall,
        elapsed_s,
        stop,
        subdomain_updates: subs.iter().map(Subdomain::count).collect(),
        thread_updates: load_all(&shared.thread_updates),
        owners: subs.iter().map(Subdomain::owner).collect(),
        grid,
        residual: Some(residual),
        converged,
        time_to_solution_s: converged.then_some(elapsed_s),
        max_staleness_seen: load_all(&shared.max_lag).into_iter().max().unwrap_or(0),
        pinned: shared.pinned.load(Ordering::Relaxed) == shared.local.len(),
        refuted_estimates: refuted,
        rehomes: shared.rehomes.load(Ordering::Relaxed),
        first_touchers: subs.iter().map(Subdomain::first_toucher).collect(),
        lb: shared.balancer.as_ref().map(SharedBalancer::stats),
        trace,
        ranks: None,
    };
    if let Some(p) = peers {
        p.merge(&mut outcome);
    }
    outcome
}

impl<'a> Shared<'a> {
    /// A run's shared state, its clock started; `r0` is `||r0||`.
    fn new(
        problem: &'a Problem,
        subs: &'a [Subdomain],
        settings: &'a Settings,
        placement: &'a Placement,
        r0: f64,
        peers: Option<&'a dyn Peers>,
    ) -> Self {
        let threads = placement.threads();
        let local = peers.map_or(0..threads, |p| p.threads());
        let spd = subs.len() / threads;
        Shared {
            problem,
            subs,
            settings,
            placement,
            stop: StopFlag::default(),
            barrier: StopBarrier::new(local.len()),
            thread_updates: (0..threads).map(|_| Default::default()).collect(),
            max_lag: (0..threads).map(|_| Default::default()).collect(),
            assignment: Assignment::new(subs, threads),
            balancer: settings
                .scheme
                .balancer()
                .map(|b| SharedBalancer::new(b, threads)),
            rule: StopRule {
                budget: settings.update_budget,
                time_limit: settings.time_limit.map(|d| d.as_nanos() as u64),
            },
            start: Instant::now(),
            stop_line: AtomicU64::new(EstimateLine::new(r0, settings.tolerance).to_bits()),
            finished: AtomicUsize::new(0),
            pinned: AtomicUsize::new(0),
            rehomes: AtomicU64::new(0),
            peers,
            local_subs: peers::subs_of(&local, spd),
            local,
            wish: AtomicU64::new(0),
            agreed: AtomicU64::new(0),
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
            let now = start.elapsed();
            // The workers watch their budgets, and in sync the barrier's
            // leader the estimate (whose local residuals are then exact).
            let look = Verdicts {
                interrupted: shared.settings.interrupt.signal().is_some(),
                most_updates: None,
                now: Some(now.as_nanos() as u64),
            };
            let converged = || mode != Mode::Sync && shared.estimate_met();
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
    });
}

/// Every subdomain's count and owner now, `now` into the run.
fn sample(shared: &Shared<'_>, now: Duration) -> TraceSample {
    TraceSample {
        t_s: now.as_secs_f64(),
        counts: shared.subs.iter().map(Subdomain::count).collect(),
        owners: shared.subs.iter().map(Subdomain::owner).collect(),
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
mod tests {
    use super::*;
    use crate::engine::{Balancer, Scheme, Slow};
    use crate::policy::Bounds;
    use crate::problem::sequential_jacobi;
    use crate::topology::Topology;
    use std::sync::Arc;

    fn settings(mode: Mode, staleness: u64, iterations: u64, subdomains: usize) -> Settings {
        let scheme = match mode {
            Mode::Sync => Scheme::Sync,
            Mode::Ssync => Scheme::Ssync { staleness },
            Mode::Async => Scheme::Async { balancer: None },
        };
        Settings::plain(scheme, iterations * subdomains as u64)
    }

    /// Async(4) with a busy balancer and thread 0 at half speed, so that
    /// subdomains move. Bounded by time, not a budget, so the balancer gets
    /// its turns however fast the machine runs the tiny subdomains.
    fn balanced(scope: crate::policy::Scope) -> Settings {
        let mut s = settings(Mode::Async, 0, u64::MAX / 8, 4);
        s.time_limit = Some(Duration::from_millis(300));
        s.scheme = Scheme::Async {
            balancer: Some(Balancer::every(
                Arc::new(crate::policy::Progressive {
                    bounds: Bounds {
                        scope,
                        low: 1,
                        high: 8,
                    },
                    pairs: 6,
                    min_gap: 0,
                    predict: false,
                    seed: 0,
                }),
                Duration::from_micros(100),
            )),
        };
        s.slow = Some(Slow {
            thread: 0,
            factor: 1.0,
        });
        s
    }

    fn run_small(threads: usize, subdomains: usize, s: &Settings) -> (Problem, Outcome) {
        let p = Problem::new(12, threads, subdomains).unwrap();
        let placement = Topology::uniform(1, 2).place(threads, true).unwrap();
        let out = run(&p, &placement, s);
        (p, out)
    }

    #[test]
    fn sync_equals_sequential_jacobi_bit_for_bit() {
        for threads in [1, 2, 3] {
            for subdomains in [1, 2, 4, 6] {
                let s = settings(Mode::Sync, 0, 37, subdomains);
                let (p, out) = run_small(threads, subdomains, &s);
                assert_eq!(
                    out.grid.unwrap(),
                    sequential_jacobi(&p, 37),
                    "{threads} threads, {subdomains} subdomains"
                );
                assert_eq!(out.stop, StopReason::MaxIterations);
                assert!(out.subdomain_updates.iter().all(|&c| c == 37));
            }
        }
    }

    #[test]
    fn the_run_stops_when_one_thread_spends_its_budget() {
        for mode in [Mode::Sync, Mode::Ssync, Mode::Async] {
            let s = settings(mode, 2, 25, 4);
            let (_, out) = run_small(3, 4, &s);
            assert_eq!(out.stop, StopReason::MaxIterations);
            assert_eq!(out.thread_updates.iter().max(), Some(&100), "{mode:?}");
        }
    }

    /// Runs a small problem with an observer thread beside the workers.
    fn run_watched(
        threads: usize,
        subdomains: usize,
        s: &Settings,
        observe: &(dyn Fn(&Shared<'_>) + Sync),
    ) -> Outcome {
        let p = Problem::new(12, threads, subdomains).unwrap();
        let placement = Topology::uniform(1, 2).place(threads, true).unwrap();
        run_observed(&p, &placement, s, Some(observe), None)
    }

    /// `count(b) - count(a)` at one instant, or `None` if `a` moved while
    /// `b` was read (counts only grow, so an unchanged `a` held still).
    fn gap_at_one_instant(a: &Subdomain, b: &Subdomain) -> Option<u64> {
        let before = a.count();
        let cb = b.count();
        (a.count() == before).then(|| cb.saturating_sub(before))
    }

    #[test]
    fn an_observer_never_sees_a_neighbour_lag_beyond_the_staleness_bound() {
        use std::sync::atomic::AtomicU64;
        for staleness in [0, 1, 3] {
            let (worst, looks) = (AtomicU64::new(0), AtomicU64::new(0));
            let observe = |sh: &Shared<'_>| {
                while !sh.stop.is_set() {
                    for sub in sh.subs {
                        for n in sub.geom.neighbours {
                            if let crate::problem::Neighbour::Sub(n) = n
                                && let Some(gap) = gap_at_one_instant(&sh.subs[n], sub)
                            {
                                worst.fetch_max(gap, Ordering::Relaxed);
                                looks.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                }
            };
            let s = settings(Mode::Ssync, staleness, 400, 4);
            let out = run_watched(3, 4, &s, &observe);
            assert_eq!(out.stop, StopReason::MaxIterations);
            assert!(
                looks.load(Ordering::Relaxed) > 0,
                "the observer saw nothing"
            );
            // The gate admits an update at a lag of at most `staleness`, so
            // right after it the gap is at most one more.
            let worst = worst.load(Ordering::Relaxed);
            assert!(
                worst <= staleness + 1,
                "ssync({staleness}): a gap of {worst}"
            );
        }
    }

    #[test]
    fn an_observer_never_sees_a_subdomain_in_two_threads_sets() {
        use std::sync::atomic::AtomicU64;
        let (doubled, looks) = (AtomicU64::new(0), AtomicU64::new(0));
        let observe = |sh: &Shared<'_>| {
            while !sh.stop.is_set() {
                let mut holders = vec![0u32; sh.subs.len()];
                for set in sh.assignment.all_at_once() {
                    for s in set {
                        holders[s] += 1;
                    }
                }
                if holders.iter().any(|&h| h > 1) {
                    doubled.fetch_add(1, Ordering::Relaxed);
                }
                looks.fetch_add(1, Ordering::Relaxed);
            }
        };
        let out = run_watched(3, 4, &balanced(crate::policy::Scope::Joint), &observe);
        let lb = out.lb.clone().unwrap();
        assert!(lb.moves > 0, "{lb:?}");
        assert!(looks.load(Ordering::Relaxed) > 0);
        assert_eq!(doubled.load(Ordering::Relaxed), 0);
        // And the end agrees: each subdomain's final owner holds it.
        assert!(out.owners.iter().all(|&t| t < 3));
    }

    #[test]
    fn a_panicking_worker_ends_the_run_with_a_report_not_a_hang() {
        #[derive(Debug)]
        struct Panics;
        impl crate::policy::Policy for Panics {
            fn decide(&self, _: &crate::policy::Snapshot<'_>) -> Vec<crate::policy::Move> {
                panic!("a policy bug");
            }
            fn name(&self) -> crate::policy::Named {
                "joint".parse().unwrap()
            }
        }
        let mut s = settings(Mode::Async, 0, u64::MAX / 8, 4);
        s.scheme = Scheme::Async {
            balancer: Some(Balancer::every(Arc::new(Panics), Duration::from_millis(1))),
        };
        let (_, out) = run_small(3, 4, &s);
        assert_eq!(out.stop, StopReason::WorkerPanic);
        assert!(out.grid.is_some());
    }

    #[test]
    fn an_interrupt_stops_a_run_that_nothing_else_would() {
        let s = settings(Mode::Sync, 0, u64::MAX / 8, 4);
        let interrupt = s.interrupt.clone();
        let raiser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            interrupt.raise(15);
        });
        let (_, out) = run_small(2, 4, &s);
        raiser.join().unwrap();
        assert_eq!(out.stop, StopReason::Interrupted);
    }

    #[test]
    fn each_subdomain_is_first_touched_by_its_owner_thread() {
        for mode in [Mode::Sync, Mode::Async] {
            let s = settings(mode, 0, 20, 4);
            let (p, out) = run_small(3, 4, &s);
            let owners: Vec<usize> = p.subs.iter().map(|g| g.domain).collect();
            assert_eq!(out.first_touchers, owners, "{mode:?}");
            assert_eq!(out.rehomes, 0);
        }
    }

    #[test]
    fn cells_follow_a_subdomain_across_sockets_but_not_within_one() {
        use crate::policy::Scope;
        // 4 threads on 2 virtual sockets (oversubscribed on purpose).
        let p = Problem::new(12, 4, 4).unwrap();
        let placement = Topology::uniform(2, 2).place(4, true).unwrap();
        for (scope, crosses) in [(Scope::Joint, true), (Scope::Split, false)] {
            let out = run(&p, &placement, &balanced(scope));
            let lb = out.lb.clone().unwrap();
            if crosses {
                assert!(lb.cross_socket_moves > 0, "{lb:?}");
                assert!(
                    out.rehomes > 0 && out.rehomes <= lb.cross_socket_moves,
                    "{out:?}"
                );
            } else {
                assert!(lb.moves > 0, "{lb:?}");
                assert_eq!(out.rehomes, 0);
            }
            // Every subdomain's cells were written first by a worker, never
            // by the thread that built the run.
            for (s, &toucher) in out.first_touchers.iter().enumerate() {
                assert!(toucher < 4, "subdomain {s} never touched by a worker");
            }
        }
    }

    #[test]
    fn the_policy_sees_wall_clock_rates_and_residuals_with_a_target() {
        let recorder = Arc::new(crate::policy::Recorder::default());
        let mut s = settings(Mode::Async, 0, u64::MAX / 8, 4);
        s.time_limit = Some(Duration::from_millis(100));
        s.tolerance = Some(1e-12);
        s.scheme = Scheme::Async {
            balancer: Some(Balancer::every(recorder.clone(), Duration::from_millis(5))),
        };
        // Big enough not to converge inside the time limit.
        let p = Problem::new(64, 2, 4).unwrap();
        let placement = Topology::uniform(1, 2).place(2, true).unwrap();
        let out = run(&p, &placement, &s);
        assert_eq!(out.stop, StopReason::TimeLimit);
        let seen = recorder.seen.lock().unwrap();
        assert!(seen.len() > 2, "{} calls", seen.len());
        let (progress, rates, residuals, since) = seen.last().unwrap();
        assert!(*since > 0.0);
        for (p, r) in progress.iter().zip(rates) {
            assert!((*p as f64 / since - r).abs() <= 1e-9 * r.abs().max(1.0));
        }
        assert_eq!(residuals.len(), 8);
        assert!(residuals.iter().any(|&r| r > 0.0), "{residuals:?}");
    }

    #[test]
    fn a_run_converges_to_a_verified_residual() {
        for mode in [Mode::Sync, Mode::Ssync, Mode::Async] {
            let mut s = settings(mode, 1, 1_000_000, 4);
            s.tolerance = Some(1e-3);
            let (_, out) = run_small(2, 4, &s);
            assert_eq!(out.stop, StopReason::Converged, "{mode:?}");
            let r = out.residual.unwrap();
            assert!(out.converged && r <= 1e-3, "{mode:?} {r}");
            assert!(out.time_to_solution_s.is_some());
        }
    }
}
