//! `braid sim`: the same schedules and the same balancer as `braid run`, on
//! virtual cores with a virtual clock, so that paper-scale experiments run
//! anywhere and reproduce exactly.
//!
//! # Model
//!
//! * Each thread runs on its own virtual core ([`timeline`]): an update of a
//!   subdomain costs `update_ns + cells x cell_ns` (plus `cells x
//!   remote_cell_ns` for its first update after a move across sockets),
//!   divided by the core's speed, stretched by the core's parasite noise.
//! * A thread sweeps its set in order exactly as a runtime worker does: set
//!   refresh and balancer turn at the top of each sweep (round robin, every
//!   `lb_interval` virtual seconds, costing `balancer_ns`, deciding with the
//!   same [`crate::policy`] code), ssync's staleness gate, skipping
//!   subdomains it no longer owns or that are in flight elsewhere.
//! * sync: each iteration ends at the slowest thread plus `barrier_ns`.
//! * ssync/async are discrete events, one pending completion per thread.
//!   With `numerics = true` an update computes at its start, reading its
//!   neighbours' edges as published at that virtual time, and publishes at
//!   its end (through [`Subdomain::begin_update`] and
//!   [`Subdomain::finish_update`], the runtime's own code). Completions at the
//!   same instant are all published before any update starts, threads in id
//!   order. Time is integer picoseconds: same inputs, same bytes out.

pub mod calibrate;
pub mod timeline;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use crate::config::SimCosts;
use crate::noise::{Applied, Level, NoiseReport};
use crate::plan::Plan;
use crate::policy::{Policy, Snapshot};
use crate::problem::{Neighbour, residual_norm};
use crate::runtime::{Clock, LbStats, Outcome, StopReason, TraceSample};
use crate::subdomain::{self, EdgeVersion, Subdomain};
use crate::variant::Mode;
use timeline::{PS, Timeline};

/// After a refuted estimate, the squared threshold is cut by the measured
/// ratio times this, so the next estimate lands just past the target.
const REFUTED_MARGIN: f64 = 0.95;

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("`tolerance`: a residual target needs numerics = true in the simulator")]
    ToleranceNeedsNumerics,
    #[error(
        "`threads`: the simulator gives every thread its own core; {threads} threads on {cores} cores"
    )]
    Oversubscribed { threads: usize, cores: usize },
    #[error("`sim_speed`: core {0} is not in sim_topology")]
    UnknownCore(usize),
}

/// Checks what only the simulator cares about.
pub fn check(plan: &Plan) -> Result<(), SimError> {
    let cfg = &plan.config;
    if cfg.tolerance > 0.0 && !cfg.numerics {
        return Err(SimError::ToleranceNeedsNumerics);
    }
    let cores = plan.topology.cores().len();
    let mut used = plan.placement.cores.clone();
    used.sort_unstable();
    used.dedup();
    if used.len() < plan.placement.threads() {
        return Err(SimError::Oversubscribed {
            threads: plan.placement.threads(),
            cores,
        });
    }
    let all = plan.topology.cores();
    if let Some(&(c, _)) = cfg.sim_speed.iter().find(|(c, _)| !all.contains(c)) {
        return Err(SimError::UnknownCore(c));
    }
    Ok(())
}

/// Simulates `plan` to the end. Call [`check`] first.
pub fn run(plan: &Plan) -> (Outcome, Option<NoiseReport>) {
    let mut e = Engine::new(plan);
    match plan.settings.mode {
        Mode::Sync => e.run_sync(),
        Mode::Ssync | Mode::Async => e.run_events(),
    }
    e.finish()
}

struct Thread {
    timeline: Timeline,
    set: Vec<usize>,
    pos: usize,
    /// Subdomains looked at since this thread last started one.
    scanned: usize,
    dirty: bool,
    updates: u64,
    max_lag: u64,
    current: Option<usize>,
}

struct Engine<'a> {
    plan: &'a Plan,
    costs: SimCosts,
    numerics: bool,
    with_residual: bool,
    subs: Vec<Subdomain>,
    cells: Vec<u64>,
    counts: Vec<u64>,
    owners: Vec<usize>,
    busy: Vec<bool>,
    remote: Vec<bool>,
    /// Updates that paid `remote_cell_ns` (the runtime's re-homing copies).
    rehomes: u64,
    sets: Vec<Vec<usize>>,
    threads: Vec<Thread>,
    now: u64,
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    policy: Option<&'a dyn Policy>,
    lb: LbStats,
    turn: usize,
    next_lb: u64,
    lb_every: u64,
    /// Each thread's update total at the previous balancer call.
    last_updates: Vec<u64>,
    trace: Vec<TraceSample>,
    next_sample: u64,
    stop: Option<StopReason>,
    r0: f64,
    stop_line_sq: f64,
    refuted: u32,
    verified: Option<(f64, ndarray::Array2<f64>)>,
}

fn ps(d: Duration) -> u64 {
    (d.as_secs_f64() * PS).round() as u64
}

impl<'a> Engine<'a> {
    fn new(plan: &'a Plan) -> Self {
        let cfg = &plan.config;
        let p = &plan.problem;
        let n = p.subs.len();
        let threads = plan.placement.threads();
        let noise_of = |core: usize| -> Option<(u64, u64)> {
            let parasite = plan
                .noise
                .as_ref()?
                .parasites
                .iter()
                .find(|q| q.core == core)?;
            let sleep = parasite.sleep_us as f64 * 1e6;
            let work = match parasite.level {
                Level::Iterations(iters) => iters as f64 * cfg.sim_costs.noise_iter_ns * 1e3,
                Level::Duty(d) => d / (1.0 - d) * sleep,
            };
            Some((sleep.round() as u64, work.round() as u64))
        };
        let timeline = |t: usize| {
            let core = plan.placement.cores[t];
            let mut speed = cfg
                .sim_speed
                .iter()
                .find(|(c, _)| *c == core)
                .map_or(1.0, |(_, f)| *f);
            if let Some(slow) = cfg.slow.filter(|s| s.thread == t) {
                speed /= 1.0 + slow.factor;
            }
            Timeline {
                speed,
                noise: noise_of(core),
            }
        };
        let mut sets = vec![Vec::new(); threads];
        for g in &p.subs {
            sets[g.domain].push(g.id);
        }
        let subs = if cfg.numerics {
            subdomain::build(p)
        } else {
            Vec::new()
        };
        let r0 = if cfg.numerics {
            residual_norm(&p.initial_grid()).max(f64::MIN_POSITIVE)
        } else {
            1.0
        };
        Engine {
            plan,
            costs: cfg.sim_costs,
            numerics: cfg.numerics,
            with_residual: cfg.numerics && cfg.tolerance > 0.0,
            subs,
            cells: p.subs.iter().map(|g| g.cells() as u64).collect(),
            counts: vec![0; n],
            owners: p.subs.iter().map(|g| g.domain).collect(),
            busy: vec![false; n],
            remote: vec![false; n],
            rehomes: 0,
            threads: (0..threads)
                .map(|t| Thread {
                    timeline: timeline(t),
                    set: sets[t].clone(),
                    pos: 0,
                    scanned: 0,
                    dirty: false,
                    updates: 0,
                    max_lag: 0,
                    current: None,
                })
                .collect(),
            sets,
            now: 0,
            heap: BinaryHeap::new(),
            policy: plan.settings.policy.as_deref(),
            lb: LbStats::default(),
            turn: 0,
            next_lb: 0,
            last_updates: Vec::new(),
            lb_every: ps(plan.settings.lb_interval),
            trace: Vec::new(),
            next_sample: 0,
            stop: None,
            r0,
            stop_line_sq: (r0 * cfg.tolerance).powi(2),
            refuted: 0,
            verified: None,
        }
    }

    /// Nominal cost of updating `s`, in picoseconds.
    fn cost(&self, s: usize) -> f64 {
        let c = &self.costs;
        let cells = self.cells[s] as f64;
        let remote = if self.remote[s] {
            cells * c.remote_cell_ns
        } else {
            0.0
        };
        let cell_ns = if self.with_residual {
            c.cell_ns * c.residual_factor
        } else {
            c.cell_ns
        };
        (c.update_ns + cells * cell_ns + remote) * 1e3
    }

    /// Locks subdomain `s` and computes its next values (numerics only).
    fn begin(
        &self,
        s: usize,
        version: EdgeVersion,
    ) -> parking_lot::MutexGuard<'_, subdomain::Cells> {
        let sub = &self.subs[s];
        let mut cells = sub.lock();
        sub.begin_update(&mut cells, &self.subs, version, self.with_residual);
        cells
    }

    fn lag(&self, s: usize) -> u64 {
        let c = self.counts[s];
        self.plan.problem.subs[s]
            .neighbours
            .iter()
            .filter_map(|n| match n {
                Neighbour::Sub(n) => Some(c.saturating_sub(self.counts[*n])),
                Neighbour::Boundary => None,
            })
            .max()
            .unwrap_or(0)
    }

    // ----- sync ---------------------------------------------------------

    fn run_sync(&mut self) {
        loop {
            self.sample();
            let start = self.now;
            let mut end = start;
            for t in 0..self.threads.len() {
                let mut clock = start;
                for i in 0..self.threads[t].set.len() {
                    let s = self.threads[t].set[i];
                    if self.numerics {
                        // Own-version edges: order within an iteration is free.
                        self.subs[s].finish_update(&mut self.begin(s, EdgeVersion::Own));
                    }
                    let tl = self.threads[t].timeline;
                    clock = tl.finish(clock, tl.scaled(self.cost(s)));
                    self.counts[s] += 1;
                    self.threads[t].updates += 1;
                }
                end = end.max(clock);
            }
            self.now = end + (self.costs.barrier_ns * 1e3).round() as u64;
            if self.check_stop() {
                return;
            }
        }
    }

    // ----- ssync / async ------------------------------------------------

    fn run_events(&mut self) {
        for t in 0..self.threads.len() {
            self.start_next(t);
        }
        let mut batch = Vec::new();
        let mut waiting: Vec<usize> = Vec::new();
        while let Some(Reverse((time, t))) = self.heap.pop() {
            self.now = time;
            batch.clear();
            batch.push(t);
            while let Some(&Reverse((t2, th))) = self.heap.peek() {
                if t2 != time {
                    break;
                }
                self.heap.pop();
                batch.push(th);
            }
            for &t in &batch {
                self.complete(t);
            }
            self.sample();
            if self.check_stop() {
                return;
            }
            // Threads that found nothing to do retry whenever anything ends.
            waiting.retain(|&t| self.threads[t].current.is_none());
            let retry: Vec<usize> = batch.iter().copied().chain(waiting.drain(..)).collect();
            for t in retry {
                if !self.start_next(t) {
                    waiting.push(t);
                }
            }
            if self.heap.is_empty() {
                // Everyone waits on everyone: cannot happen with ssync (the
                // least updated subdomain can always go); reported as what
                // it is should a change ever break that.
                self.stop = Some(StopReason::Deadlock);
                return;
            }
        }
    }

    fn complete(&mut self, t: usize) {
        let s = self.threads[t]
            .current
            .take()
            .expect("a completion has an update");
        if self.numerics {
            let sub = &self.subs[s];
            sub.finish_update(&mut sub.lock());
        }
        self.counts[s] += 1;
        self.busy[s] = false;
        self.rehomes += u64::from(self.remote[s]);
        self.remote[s] = false;
        self.threads[t].updates += 1;
    }

    fn check_stop(&mut self) -> bool {
        let budget = self.plan.settings.update_budget;
        if self.plan.settings.interrupt.signal().is_some() {
            self.stop = Some(StopReason::Interrupted);
        } else if self.threads.iter().any(|t| t.updates >= budget) {
            self.stop = Some(StopReason::MaxIterations);
        } else if self.time_up() {
            self.stop = Some(StopReason::TimeLimit);
        } else if self.estimate_met() && self.verify() {
            self.stop = Some(StopReason::Converged);
        }
        self.stop.is_some()
    }

    /// Starts thread `t`'s next update at `self.now`; false if it has none
    /// it may start now.
    fn start_next(&mut self, t: usize) -> bool {
        let mut now = self.now;
        self.threads[t].scanned = 0;
        loop {
            if self.threads[t].pos >= self.threads[t].set.len() {
                self.threads[t].pos = 0;
                now = self.sweep_start(t, now);
                if self.threads[t].set.is_empty() {
                    return false;
                }
            }
            if self.threads[t].scanned > self.threads[t].set.len() {
                return false; // a whole sweep and nothing it may update
            }
            let th = &mut self.threads[t];
            let s = th.set[th.pos];
            th.pos += 1;
            th.scanned += 1;
            if self.owners[s] != t || self.busy[s] {
                continue;
            }
            let lag = self.lag(s);
            if self.plan.settings.mode == Mode::Ssync && lag > self.plan.settings.staleness {
                continue;
            }
            if self.numerics {
                drop(self.begin(s, EdgeVersion::Latest)); // publishes at completion
            }
            let tl = self.threads[t].timeline;
            let end = tl.finish(now, tl.scaled(self.cost(s)));
            let th = &mut self.threads[t];
            th.max_lag = th.max_lag.max(lag);
            th.current = Some(s);
            self.busy[s] = true;
            self.heap.push(Reverse((end, t)));
            return true;
        }
    }

    /// Top of a sweep: pick up a changed set, and balance if it is this
    /// thread's turn and a call is due. Returns the time after both.
    fn sweep_start(&mut self, t: usize, now: u64) -> u64 {
        if self.threads[t].dirty {
            self.threads[t].set = self.sets[t].clone();
            self.threads[t].dirty = false;
        }
        let Some(policy) = self.policy else {
            return now;
        };
        if self.turn != t || now < self.next_lb {
            return now;
        }
        self.lb.calls += 1;
        let sockets = &self.plan.placement.sockets;
        self.last_updates.resize(self.threads.len(), 0);
        let progress: Vec<u64> = self
            .threads
            .iter()
            .zip(&mut self.last_updates)
            .map(|(th, last)| {
                let p = th.updates - *last;
                *last = th.updates;
                p
            })
            .collect();
        let moves = policy.decide(&Snapshot {
            counts: &self.counts,
            owners: &self.owners,
            thread_sockets: sockets,
            progress: &progress,
            call: self.lb.calls,
        });
        for m in moves {
            self.owners[m.sub] = m.to;
            self.sets[m.from].retain(|&s| s != m.sub);
            self.sets[m.to].push(m.sub);
            self.threads[m.from].dirty = true;
            self.threads[m.to].dirty = true;
            self.lb.moves += 1;
            if sockets[m.from] != sockets[m.to] {
                self.lb.cross_socket_moves += 1;
                self.remote[m.sub] = true;
            }
        }
        let cost = (self.costs.balancer_ns * 1e3).round() as u64;
        self.lb.time_s += cost as f64 / PS;
        self.next_lb = now + self.lb_every;
        self.turn = (t + 1) % self.threads.len();
        // The caller's own set may have changed: pick it up now.
        if self.threads[t].dirty {
            self.threads[t].set = self.sets[t].clone();
            self.threads[t].dirty = false;
        }
        now + cost
    }

    // ----- shared -------------------------------------------------------

    fn time_up(&self) -> bool {
        self.plan
            .settings
            .time_limit
            .is_some_and(|limit| self.now >= ps(limit))
    }

    fn estimate_met(&self) -> bool {
        self.with_residual
            && self.subs.iter().map(Subdomain::residual_sq).sum::<f64>() <= self.stop_line_sq
    }

    /// Recomputes the residual from the assembled grid; on a miss, tightens
    /// the estimate's threshold by the measured ratio. Unlike the runtime,
    /// which tightens at least 4x to save restarts, a check costs no virtual
    /// time here, so a close threshold keeps time to solution from
    /// overshooting (a 4x cut would run on to about half the target).
    fn verify(&mut self) -> bool {
        let grid = subdomain::assemble(&self.plan.problem, &self.subs);
        let residual = residual_norm(&grid) / self.r0;
        let tol = self.plan.settings.tolerance;
        if residual <= tol {
            self.verified = Some((residual, grid));
            return true;
        }
        self.refuted += 1;
        self.stop_line_sq *= (tol / residual).powi(2) * REFUTED_MARGIN;
        false
    }

    fn sample(&mut self) {
        let Some(every) = self.plan.settings.trace_interval else {
            return;
        };
        if self.now >= self.next_sample {
            self.trace.push(TraceSample {
                t_s: self.now as f64 / PS,
                counts: self.counts.clone(),
                owners: self.owners.clone(),
            });
            self.next_sample = self.now + ps(every).max(1);
        }
    }

    fn finish(mut self) -> (Outcome, Option<NoiseReport>) {
        // Updates still in flight are not counted: the run ended first.
        let elapsed_s = self.now as f64 / PS;
        let (residual, grid) = match self.verified.take() {
            Some((r, g)) => (Some(r), Some(g)),
            None if self.numerics => {
                let g = subdomain::assemble(&self.plan.problem, &self.subs);
                (Some(residual_norm(&g) / self.r0), Some(g))
            }
            None => (None, None),
        };
        let tol = self.plan.settings.tolerance;
        let converged = tol > 0.0 && residual.is_some_and(|r| r <= tol);
        let noise = self.plan.noise.as_ref().map(|n| NoiseReport {
            mode: n.mode,
            parasites: n
                .parasites
                .iter()
                .map(|q| {
                    let tl = Timeline {
                        speed: 1.0,
                        noise: self
                            .threads
                            .iter()
                            .zip(&self.plan.placement.cores)
                            .find(|(_, c)| **c == q.core)
                            .and_then(|(t, _)| t.timeline.noise),
                    };
                    let work_ps = tl.noise.map_or(0, |(_, w)| w);
                    Applied {
                        core: q.core,
                        sleep_us: q.sleep_us,
                        work_iters: (work_ps as f64 / 1e3 / self.costs.noise_iter_ns).round()
                            as u64,
                        requested_duty: match q.level {
                            Level::Duty(d) => Some(d),
                            Level::Iterations(_) => None,
                        },
                        bursts: tl.bursts_by(self.now),
                        measured_duty: tl.stolen_share(),
                        elapsed_s,
                    }
                })
                .collect(),
        });
        let outcome = Outcome {
            clock: Clock::Virtual,
            elapsed_s,
            stop: self.stop.unwrap_or(StopReason::MaxIterations),
            subdomain_updates: self.counts.clone(),
            thread_updates: self.threads.iter().map(|t| t.updates).collect(),
            owners: self.owners.clone(),
            grid,
            residual,
            converged,
            time_to_solution_s: converged.then_some(elapsed_s),
            max_staleness_seen: self.threads.iter().map(|t| t.max_lag).max().unwrap_or(0),
            pinned: false,
            refuted_estimates: self.refuted,
            rehomes: self.rehomes,
            first_touchers: Vec::new(),
            lb: self.policy.map(|_| self.lb.clone()),
            trace: std::mem::take(&mut self.trace),
        };
        (outcome, noise)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::topology::Topology;

    #[test]
    fn an_interrupt_stops_a_simulation_that_nothing_else_would() {
        for label in ["sync", "async(4)+joint(0.001)"] {
            let mut cfg = Config::default();
            cfg.apply_variant(label).unwrap();
            cfg.max_iterations = 1 << 40;
            let plan = Plan::new(&cfg, &Topology::synthetic(cfg.sim_topology)).unwrap();
            plan.settings.interrupt.raise(2);
            let (out, _) = run(&plan);
            assert_eq!(out.stop, StopReason::Interrupted, "{label}");
        }
    }
}
