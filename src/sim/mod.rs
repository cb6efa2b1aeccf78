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
//! * Across nodes (`sim_topology = node:N ...`): an update also pays
//!   `node_byte_ns` per byte of each edge it sends to a subdomain owned on
//!   another node (the sender's share, as with a non-blocking send), the
//!   first update after a move to another node a `node_latency_ns` and its
//!   cells' bytes, and a sync iteration that spans nodes one latency more.
//!   In ssync/async the latency does not delay what a neighbour reads: the
//!   model charges the network's cost, not its staleness.
//! * ssync/async are discrete events, one pending completion per thread.
//!   With `numerics = true` an update computes at its start, reading its
//!   neighbours' edges as published at that virtual time, and publishes at
//!   its end (through [`subdomain::Held::begin_update`] and
//!   [`subdomain::Held::finish_update`], the runtime's own code). Completions at the
//!   same instant are all published before any update starts, threads in id
//!   order. Time is integer picoseconds: same inputs, same bytes out.

mod costs;
pub mod speeds;
pub mod timeline;

pub use costs::SimCosts;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::time::Duration;

use crate::engine::{Clock, Outcome, Residual, StopReason, TraceSample};
use crate::noise::{Applied, Level, NoiseReport, ReplayedTrace};
use crate::plan::{Numbers, Plan};
use crate::problem::residual_norm;
use crate::problem::{Neighbour, Side};
use crate::schedule::balance::start_interval;
use crate::schedule::{
    self, Caller, EstimateLine, Gate, Refutation, Rotation, Sampler, StopRule, Verdicts,
};
use crate::subdomain::{self, EdgeVersion, Subdomain};
use crate::topology::SimTopology;
use crate::variant::Mode;
use speeds::Steps;
use timeline::{Detours, Noise, PS, Timeline};

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
    #[error(
        "`threads`: the replayed speeds are of {measured} threads, this simulation has {threads}"
    )]
    SpeedThreads { measured: usize, threads: usize },
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
    if let Some(m) = plan.speeds.as_deref()
        && m.threads() != plan.placement.threads()
    {
        return Err(SimError::SpeedThreads {
            measured: m.threads(),
            threads: plan.placement.threads(),
        });
    }
    Ok(())
}

/// Simulates `plan` to the end. Call [`check`] first.
pub fn run(plan: &Plan) -> (Outcome, Option<NoiseReport>) {
    let mut e = Engine::new(plan);
    e.replay_speeds();
    match plan.settings.mode() {
        Mode::Sync => e.run_sync(),
        Mode::Ssync | Mode::Async => e.run_events(),
    }
    e.finish()
}

/// A virtual thread: its core, and where it is in its sweep.
struct Thread {
    timeline: Timeline,
    /// Its copy of its set, refreshed at the top of a sweep.
    set: Vec<usize>,
    pos: usize,
    /// Subdomains looked at since this thread last started one.
    scanned: usize,
    max_lag: u64,
    current: Option<usize>,
}

/// The simulator's scheduling state, in plain arrays: what the schedule
/// core reads ([`schedule::View`]) and a move writes ([`schedule::Sets`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Board {
    pub(crate) counts: Vec<u64>,
    pub(crate) owners: Vec<usize>,
    /// Each thread's set as the balancer keeps it.
    pub(crate) sets: Vec<Vec<usize>>,
    /// Whether a thread's set changed since it last copied it.
    pub(crate) dirty: Vec<bool>,
    /// Subdomains whose next update pays `remote_cell_ns` (moved across
    /// sockets since their last update).
    pub(crate) remote: Vec<bool>,
    /// Subdomain updates each thread has made.
    pub(crate) updates: Vec<u64>,
    /// The node of each thread's core (all 0 on one node).
    pub(crate) nodes: Vec<usize>,
    /// Subdomains whose next update pays for a move to another node.
    pub(crate) crossed_nodes: Vec<bool>,
}

impl Board {
    /// Every subdomain on the thread of its domain, as a run starts.
    pub(crate) fn new(problem: &crate::problem::Problem) -> Self {
        let n = problem.subs.len();
        let mut sets = vec![Vec::new(); problem.threads];
        for g in &problem.subs {
            sets[g.domain].push(g.id);
        }
        Board {
            counts: vec![0; n],
            owners: problem.subs.iter().map(|g| g.domain).collect(),
            dirty: vec![false; problem.threads],
            updates: vec![0; problem.threads],
            sets,
            remote: vec![false; n],
            nodes: vec![0; problem.threads],
            crossed_nodes: vec![false; n],
        }
    }
}

impl schedule::View for Board {
    fn subdomains(&self) -> usize {
        self.counts.len()
    }
    fn count(&self, sub: usize) -> u64 {
        self.counts[sub]
    }
    fn owner(&self, sub: usize) -> usize {
        self.owners[sub]
    }
    fn threads(&self) -> usize {
        self.updates.len()
    }
    fn thread_updates(&self, t: usize) -> u64 {
        self.updates[t]
    }
}

impl schedule::Sets for Board {
    fn set_owner(&mut self, sub: usize, to: usize) {
        if self.nodes[self.owners[sub]] != self.nodes[to] {
            self.crossed_nodes[sub] = true;
        }
        self.owners[sub] = to;
    }
    fn remove(&mut self, t: usize, sub: usize) {
        self.sets[t].retain(|&s| s != sub);
    }
    fn add(&mut self, t: usize, sub: usize) {
        self.sets[t].push(sub);
    }
    fn changed(&mut self, t: usize) {
        self.dirty[t] = true;
    }
    fn crossed_sockets(&mut self, sub: usize) {
        self.remote[sub] = true;
    }
}

/// The board, plus the subdomains' residuals when the simulation computes
/// them.
struct SimView<'a> {
    board: &'a Board,
    subs: &'a [Subdomain],
}

impl schedule::View for SimView<'_> {
    fn subdomains(&self) -> usize {
        self.board.subdomains()
    }
    fn count(&self, sub: usize) -> u64 {
        self.board.count(sub)
    }
    fn owner(&self, sub: usize) -> usize {
        self.board.owner(sub)
    }
    fn threads(&self) -> usize {
        self.board.threads()
    }
    fn thread_updates(&self, t: usize) -> u64 {
        self.board.thread_updates(t)
    }
    fn residual_sq(&self, sub: usize) -> Option<f64> {
        self.subs.get(sub).map(Subdomain::residual_sq)
    }
}

/// The balancer's schedule and caller, as the schedule core defines them.
pub(crate) struct Balance {
    pub(crate) rotation: Rotation,
    pub(crate) caller: Caller,
}

impl Balance {
    /// Balances if it is thread `t`'s turn at virtual time `now`; a call
    /// costs `cost` picoseconds. `subs` are the subdomains when the
    /// simulation computes residuals (else empty). Returns whether it called.
    pub(crate) fn maybe_call(
        &mut self,
        t: usize,
        now: u64,
        cost: u64,
        board: &mut Board,
        thread_sockets: &[usize],
        subs: &[Subdomain],
    ) -> bool {
        if !self.rotation.is_due(t, now) {
            return false;
        }
        let view = SimView { board, subs };
        let moves = self.caller.decide(&view, thread_sockets, now as f64 / PS);
        self.caller.apply(&moves, thread_sockets, board);
        self.caller.spent(cost as f64 / PS);
        if let Some(s) = self.caller.next_interval_s() {
            self.rotation.set_interval((s * PS) as u64);
        }
        self.rotation.advance(t, now);
        true
    }
}

struct Engine<'a> {
    plan: &'a Plan,
    costs: SimCosts,
    numbers: Numbers,
    residual: Residual,
    gate: Gate,
    rule: StopRule,
    subs: Vec<Subdomain>,
    cells: Vec<u64>,
    board: Board,
    busy: Vec<bool>,
    /// Whether the threads' cores are on more than one node.
    spans_nodes: bool,
    /// Updates that paid `remote_cell_ns` (the runtime's re-homing copies).
    rehomes: u64,
    threads: Vec<Thread>,
    now: u64,
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    balance: Option<Balance>,
    trace: Vec<TraceSample>,
    sampler: Option<Sampler>,
    stop: Option<StopReason>,
    r0: f64,
    line: EstimateLine,
    refuted: u32,
    verified: Option<(f64, ndarray::Array2<f64>)>,
}

fn ps(d: Duration) -> u64 {
    (d.as_secs_f64() * PS).round() as u64
}

/// Each thread's virtual core: its speed (`sim_speed`, the `slow` hook)
/// and the noise on it: its parasite's rhythm as (sleep, work)
/// picoseconds, or its trace.
fn timelines(plan: &Plan) -> Vec<Timeline> {
    let cfg = &plan.config;
    let noise_of = |core: usize| -> Noise {
        let Some(parasite) = plan
            .noise
            .as_ref()
            .and_then(|n| n.parasites.iter().find(|q| q.core == core))
        else {
            return Noise::Quiet;
        };
        let sleep = parasite.sleep_us as f64 * 1e6;
        let work = match &parasite.level {
            Level::Iterations(iters) => *iters as f64 * cfg.sim_noise_iter_ns * 1e3,
            Level::Duty(d) => d / (1.0 - d) * sleep,
            Level::Trace(r) => return Noise::Trace(Arc::new(Detours::new(&r.trace, r.offset_ns))),
        };
        Noise::Periodic {
            sleep: sleep.round() as u64,
            work: work.round() as u64,
        }
    };
    let timeline = |t: usize| {
        let core = plan.placement.cores[t];
        let mut speed = cfg
            .sim_speed
            .iter()
            .find(|(c, _)| *c == core)
            .map_or(1.0, |(_, f)| *f);
        if let Some(slow) = plan.settings.slow.filter(|s| s.thread == t) {
            speed /= 1.0 + slow.factor;
        }
        Timeline {
            speed,
            noise: noise_of(core),
            steps: None,
        }
    };
    (0..plan.placement.threads()).map(timeline).collect()
}

impl<'a> Engine<'a> {
    fn new(plan: &'a Plan) -> Self {
        let cfg = &plan.config;
        let settings = &plan.settings;
        let p = &plan.problem;
        let mut board = Board::new(p);
        if let SimTopology::Synthetic(t) = &cfg.sim_topology
            && t.nodes > 1
        {
            board.nodes = plan
                .placement
                .cores
                .iter()
                .map(|&pu| t.node_of_pu(pu))
                .collect();
        }
        let threads = timelines(plan)
            .into_iter()
            .zip(&board.sets)
            .map(|(timeline, set)| Thread {
                timeline,
                set: set.clone(),
                pos: 0,
                scanned: 0,
                max_lag: 0,
                current: None,
            })
            .collect();
        let numbers = plan.sim_numbers();
        let (subs, r0) = if numbers == Numbers::Held {
            let r0 = residual_norm(&p.initial_grid()).max(f64::MIN_POSITIVE);
            (subdomain::build(p), r0)
        } else {
            (Vec::new(), 1.0)
        };
        Engine {
            plan,
            costs: cfg.sim_costs(),
            numbers,
            residual: if numbers == Numbers::Held {
                settings.residual()
            } else {
                Residual::Skip
            },
            gate: Gate {
                staleness: settings.scheme.staleness(),
            },
            rule: StopRule {
                budget: settings.update_budget,
                time_limit: settings.time_limit.map(ps),
            },
            subs,
            cells: p.subs.iter().map(|g| g.cells() as u64).collect(),
            busy: vec![false; p.subs.len()],
            spans_nodes: board.nodes.iter().any(|&n| n != board.nodes[0]),
            board,
            rehomes: 0,
            threads,
            now: 0,
            heap: BinaryHeap::new(),
            balance: settings.scheme.balancing().map(|b| Balance {
                rotation: Rotation::new(p.threads, ps(start_interval(b.interval))),
                caller: Caller::new(b),
            }),
            trace: Vec::new(),
            sampler: settings.trace_interval.map(|every| Sampler::new(ps(every))),
            stop: None,
            r0,
            line: EstimateLine::new(r0, settings.tolerance),
            refuted: 0,
            verified: None,
        }
    }

    /// Gives each core the speeds a run measured for its thread, if the
    /// plan has them: a factor that makes the mean subdomain's update take
    /// what the run's did (see [`speeds`]).
    fn replay_speeds(&mut self) {
        let Some(m) = self.plan.speeds.as_deref() else {
            return;
        };
        let n = self.cells.len().max(1);
        let unit_ps = (0..self.cells.len()).map(|s| self.cost(s)).sum::<f64>() / n as f64;
        for (th, rates) in self.threads.iter_mut().zip(&m.rates) {
            th.timeline.steps = Some(Arc::new(Steps::new(&m.ends_s, rates, unit_ps)));
        }
    }

    /// Nominal cost of updating `s`, in picoseconds.
    fn cost(&self, s: usize) -> f64 {
        let c = &self.costs;
        let cells = self.cells[s] as f64;
        let node = if self.spans_nodes {
            self.node_cost(s)
        } else {
            0.0
        };
        let remote = if self.board.remote[s] {
            cells * c.remote_cell_ns
        } else {
            0.0
        };
        let cell_ns = if self.residual == Residual::Compute {
            c.cell_ns * c.residual_factor
        } else {
            c.cell_ns
        };
        (c.update_ns + cells * cell_ns + remote + node) * 1e3
    }

    /// What updating `s` costs across nodes, in nanoseconds: the bytes of
    /// each edge it sends to a subdomain owned on another node, and after a
    /// move to another node, a latency and the bytes of its cells.
    fn node_cost(&self, s: usize) -> f64 {
        let (c, b) = (&self.costs, &self.board);
        let here = b.nodes[b.owners[s]];
        let g = &self.plan.problem.subs[s];
        let mut bytes = 0;
        for side in Side::ALL {
            if let Neighbour::Sub(n) = g.neighbour(side)
                && b.nodes[b.owners[n]] != here
            {
                bytes += 8 * match side {
                    Side::North | Side::South => g.width,
                    Side::West | Side::East => g.height,
                };
            }
        }
        let mut ns = bytes as f64 * c.node_byte_ns;
        if b.crossed_nodes[s] {
            ns += c.node_latency_ns + 8.0 * self.cells[s] as f64 * c.node_byte_ns;
        }
        ns
    }

    /// Locks subdomain `s` and computes its next values (numerics only).
    fn begin(&self, s: usize, version: EdgeVersion) -> subdomain::Held<'_> {
        let mut cells = self.subs[s].lock();
        cells.begin_update(&self.subs, version, self.residual);
        cells
    }

    fn lag(&self, s: usize) -> u64 {
        let counts = &self.board.counts;
        schedule::lag(counts[s], &self.plan.problem.subs[s].neighbours, |n| {
            counts[n]
        })
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
                    if self.numbers == Numbers::Held {
                        // Own-version edges: order within an iteration is free.
                        self.begin(s, EdgeVersion::Own).finish_update();
                    }
                    let cost = self.cost(s);
                    let tl = &self.threads[t].timeline;
                    clock = tl.run(clock, cost);
                    self.board.counts[s] += 1;
                    self.board.updates[t] += 1;
                }
                end = end.max(clock);
            }
            // Across nodes, the iteration's exchange waits a latency more.
            let network = if self.spans_nodes {
                self.costs.node_latency_ns
            } else {
                0.0
            };
            self.now = end + ((self.costs.barrier_ns + network) * 1e3).round() as u64;
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
        if self.numbers == Numbers::Held {
            self.subs[s].lock().finish_update();
        }
        self.board.counts[s] += 1;
        self.busy[s] = false;
        self.rehomes += u64::from(self.board.remote[s]);
        self.board.remote[s] = false;
        self.board.crossed_nodes[s] = false;
        self.board.updates[t] += 1;
    }

    fn check_stop(&mut self) -> bool {
        let look = Verdicts {
            interrupted: self.plan.settings.interrupt.signal().is_some(),
            most_updates: self.board.updates.iter().max().copied(),
            now: Some(self.now),
        };
        let rule = self.rule;
        self.stop = rule.first(look, || self.estimate_met() && self.verify());
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
            if self.busy[s] {
                continue; // in flight on another thread: skipped, not waited for
            }
            let lag = self.lag(s);
            if !self.gate.admits(t, self.board.owners[s], lag) {
                continue;
            }
            if self.numbers == Numbers::Held {
                drop(self.begin(s, EdgeVersion::Latest)); // publishes at completion
            }
            let cost = self.cost(s);
            let tl = &self.threads[t].timeline;
            let end = tl.run(now, cost);
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
        self.refresh(t);
        let Some(balance) = &mut self.balance else {
            return now;
        };
        let cost = (self.costs.balancer_ns * 1e3).round() as u64;
        let sockets = &self.plan.placement.sockets;
        let subs: &[Subdomain] = match self.residual {
            Residual::Compute => &self.subs,
            Residual::Skip => &[],
        };
        if !balance.maybe_call(t, now, cost, &mut self.board, sockets, subs) {
            return now;
        }
        // The caller's own set may have changed: pick it up now.
        self.refresh(t);
        now + cost
    }

    /// Copies thread `t`'s set if the balancer changed it.
    fn refresh(&mut self, t: usize) {
        if self.board.dirty[t] {
            self.threads[t].set.clone_from(&self.board.sets[t]);
            self.board.dirty[t] = false;
        }
    }

    // ----- shared -------------------------------------------------------

    fn estimate_met(&self) -> bool {
        self.residual == Residual::Compute
            && self
                .line
                .met(self.subs.iter().map(Subdomain::residual_sq).sum::<f64>())
    }

    /// Recomputes the residual from the assembled grid; on a miss, tightens
    /// the estimate's threshold ([`Refutation::Free`]: a check costs no
    /// virtual time here).
    fn verify(&mut self) -> bool {
        let grid = subdomain::assemble(&self.plan.problem, &self.subs);
        let residual = residual_norm(&grid) / self.r0;
        let tol = self.plan.settings.tolerance.unwrap_or(f64::INFINITY);
        if residual <= tol {
            self.verified = Some((residual, grid));
            return true;
        }
        self.refuted += 1;
        self.line.tighten(tol, residual, Refutation::Free);
        false
    }

    fn sample(&mut self) {
        if let Some(s) = &mut self.sampler
            && s.due(self.now)
        {
            self.trace.push(TraceSample {
                t_s: self.now as f64 / PS,
                counts: self.board.counts.clone(),
                owners: self.board.owners.clone(),
            });
        }
    }

    fn finish(mut self) -> (Outcome, Option<NoiseReport>) {
        // Updates still in flight are not counted: the run ended first.
        let elapsed_s = self.now as f64 / PS;
        let (residual, grid) = match self.verified.take() {
            Some((r, g)) => (Some(r), Some(g)),
            None if self.numbers == Numbers::Held => {
                let g = subdomain::assemble(&self.plan.problem, &self.subs);
                (Some(residual_norm(&g) / self.r0), Some(g))
            }
            None => (None, None),
        };
        let converged = self
            .plan
            .settings
            .tolerance
            .is_some_and(|tol| residual.is_some_and(|r| r <= tol));
        let noise = self.plan.noise.as_ref().map(|n| NoiseReport {
            mode: n.mode,
            parasites: n
                .parasites
                .iter()
                .map(|q| {
                    let tl = Timeline {
                        noise: self
                            .threads
                            .iter()
                            .zip(&self.plan.placement.cores)
                            .find(|(_, c)| **c == q.core)
                            .map_or(Noise::Quiet, |(t, _)| t.timeline.noise.clone()),
                        ..Timeline::QUIET
                    };
                    let work_ps = match tl.noise {
                        Noise::Periodic { work, .. } => work,
                        _ => 0,
                    };
                    Applied {
                        core: q.core,
                        sleep_us: q.sleep_us,
                        work_iters: (work_ps as f64 / 1e3 / self.costs.noise_iter_ns).round()
                            as u64,
                        requested_duty: match q.level {
                            Level::Duty(d) => Some(d),
                            Level::Iterations(_) | Level::Trace(_) => None,
                        },
                        trace: match &q.level {
                            Level::Trace(r) => Some(ReplayedTrace::of(r)),
                            _ => None,
                        },
                        bursts: tl.bursts_by(self.now),
                        measured_duty: tl.stolen_share_by(self.now),
                        elapsed_s,
                    }
                })
                .collect(),
        });
        let outcome = Outcome {
            clock: Clock::Virtual,
            elapsed_s,
            stop: self.stop.unwrap_or(StopReason::MaxIterations),
            subdomain_updates: self.board.counts.clone(),
            thread_updates: self.board.updates.clone(),
            owners: self.board.owners.clone(),
            grid,
            residual,
            converged,
            time_to_solution_s: converged.then_some(elapsed_s),
            max_staleness_seen: self.threads.iter().map(|t| t.max_lag).max().unwrap_or(0),
            pinned: false,
            refuted_estimates: self.refuted,
            rehomes: self.rehomes,
            first_touchers: Vec::new(),
            lb: self.balance.as_ref().map(|b| b.caller.stats()),
            trace: std::mem::take(&mut self.trace),
            ranks: None,
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
    fn the_policy_sees_virtual_rates_and_the_residuals_when_they_are_computed() {
        use crate::engine::{Balancing, Scheme};
        use crate::policy::Recorder;
        for (numerics, tolerance) in [("false", "0"), ("true", "1e-9")] {
            let mut cfg = Config::default();
            cfg.apply_overrides(&[
                "numerics=".to_string() + numerics,
                "tolerance=".to_string() + tolerance,
                "max_iterations=50".into(),
                "domain_size=16".into(),
                "cores=0,1,2,3".into(),
            ])
            .unwrap();
            let mut plan =
                Plan::new(&cfg, &Topology::simulated(&cfg.sim_topology).unwrap()).unwrap();
            let recorder = std::sync::Arc::new(Recorder::default());
            plan.settings.scheme = Scheme::Async {
                balancing: Some(Balancing::every(recorder.clone(), Duration::from_micros(5))),
            };
            run(&plan);
            let seen = recorder.seen.lock().unwrap();
            assert!(seen.len() > 2, "{} calls", seen.len());
            let (progress, rates, residuals, since) = &seen[2];
            assert!(*since > 0.0);
            // A rate is that interval's progress per virtual second.
            for (p, r) in progress.iter().zip(rates) {
                assert!((*p as f64 / since - r).abs() <= 1e-9 * r.abs().max(1.0));
            }
            assert!(rates.iter().all(|&r| r > 0.0), "{rates:?}");
            match numerics {
                "true" => assert!(residuals.len() == 16 && residuals.iter().any(|&r| r > 0.0)),
                _ => assert!(residuals.is_empty()),
            }
        }
    }

    #[test]
    fn across_nodes_an_update_pays_its_remote_edges_and_a_move_its_cells() {
        let mut cfg = Config::default();
        cfg.apply_overrides(&[
            "sim_topology=node:2 pack:1 core:2".to_string(),
            "threads=4".into(),
            "subdomains=1".into(),
            "domain_size=10".into(),
            "sim_node_latency_ns=1000".into(),
            "sim_node_byte_ns=0.5".into(),
        ])
        .unwrap();
        let plan = Plan::new(&cfg, &Topology::simulated(&cfg.sim_topology).unwrap()).unwrap();
        let mut e = Engine::new(&plan);
        assert_eq!(e.board.nodes, [0, 0, 1, 1]);
        // Domain 0 (top left) sends its south edge to domain 2 on node 1.
        assert_eq!(e.node_cost(0), 8.0 * 10.0 * 0.5);
        // Moved to thread 2 on node 1: now its east edge (to domain 1)
        // crosses, its south one does not, and the move is paid once.
        schedule::Sets::set_owner(&mut e.board, 0, 2);
        assert!(e.board.crossed_nodes[0]);
        assert_eq!(
            e.node_cost(0),
            8.0 * 10.0 * 0.5 + 1000.0 + 8.0 * 100.0 * 0.5
        );
        e.board.crossed_nodes[0] = false;
        assert_eq!(e.node_cost(0), 8.0 * 10.0 * 0.5);
        // A move within a node is free of the network.
        schedule::Sets::set_owner(&mut e.board, 1, 0);
        assert!(!e.board.crossed_nodes[1]);
    }

    #[test]
    fn an_interrupt_stops_a_simulation_that_nothing_else_would() {
        for label in ["sync", "async(4)+joint(0.001)"] {
            let mut cfg = Config::default();
            cfg.apply_variant(label).unwrap();
            cfg.max_iterations = 1 << 40;
            let plan = Plan::new(&cfg, &Topology::simulated(&cfg.sim_topology).unwrap()).unwrap();
            plan.settings.interrupt.raise(2);
            let (out, _) = run(&plan);
            assert_eq!(out.stop, StopReason::Interrupted, "{label}");
        }
    }
}
