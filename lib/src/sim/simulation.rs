//! The simulator's event loop: sync as iterations that end at the slowest
//! thread plus a barrier; ssync and async as discrete events, one pending
//! completion per thread, each thread sweeping its set exactly as a runtime
//! worker does (set refresh and balancer turn at the top of a sweep, the
//! staleness gate, skipping what it no longer owns or what is in flight).

use super::board::{Board, Calls, Pending, Slabs};
use super::clock::{PS_PER_S, RANGE_PS, after, ps, seconds, step};
use super::cores;
use super::events::Events;
use super::growth::Growth;
use super::network::{self, Network};
use super::slab_shape;
use super::timeline::Timeline;
use crate::engine::{
    Numbers, Residual, Settings, SimCosts, SimLoads, SimSettings, StopReason, TraceSample,
};
use crate::noise::NoisePlan;
use crate::problem::{Neighbour, Problem, Side, residual_norm};
use crate::schedule::calls::start_interval;
use crate::schedule::degradation::Degradation;
use crate::schedule::{
    self, Caller, EstimateLine, Gate, ResidualSchedule, Rotation, Sampler, StopRule, Verdicts,
    residual::Look,
};
use crate::subdomain::{self, EdgeVersion, Subdomain, Subdomains};
use crate::topology::Placement;
use crate::variant::{Interval, Mode};

/// A simulation in progress: the run's state in plain arrays, each
/// thread's virtual core and place in its sweep, the event queue and the
/// clock.
pub(super) struct Simulation<'a> {
    pub(super) problem: &'a Problem,
    pub(super) placement: &'a Placement,
    pub(super) settings: &'a Settings,
    pub(super) sim: &'a SimSettings,
    /// The parasites on the virtual cores, if any.
    pub(super) noise: Option<&'a NoisePlan>,
    pub(super) costs: SimCosts,
    pub(super) numbers: Numbers,
    pub(super) residual: Residual,
    gate: Gate,
    rule: StopRule,
    pub(super) subs: Subdomains,
    cells: Vec<u64>,
    pub(super) board: Board,
    busy: Vec<bool>,
    /// Whether the threads' cores are on more than one node, and on how
    /// many.
    spans_nodes: bool,
    node_count: usize,
    /// The edges between nodes, when they age what an update reads
    /// (numbers across nodes, in ssync/async).
    pub(super) network: Option<Network>,
    /// Updates that paid `remote_cell_ns` (the runtime's re-homing copies).
    pub(super) rehomes: u64,
    pub(super) threads: Vec<Thread>,
    pub(super) now: u64,
    events: Events,
    pub(super) balance: Option<Calls>,
    /// ULBA's trigger, in a bulk-synchronous run at `lb_interval =
    /// degradation`: the barrier calls when it says so.
    degradation: Option<Degradation>,
    pub(super) trace: Vec<TraceSample>,
    sampler: Option<Sampler>,
    pub(super) stop: Option<StopReason>,
    pub(super) r0: f64,
    line: EstimateLine,
    /// The residual rounds (`schedule::residual`), as the runtime keeps them.
    schedule: ResidualSchedule,
    /// The monitor's period and its next look (ps), if the estimate is
    /// looked at as the runtime's monitor looks.
    monitor: Option<(u64, u64)>,
    pub(super) refuted: u32,
    pub(super) verified: Option<(f64, ndarray::Array2<f64>)>,
    /// Subdomain updates made so far, all threads (progress, for the
    /// workload, is this over the subdomains).
    done: u64,
    /// The most updates any thread has made (kept as they are counted: a
    /// scan of every thread's count at each event grows with the threads).
    most_updates: u64,
    /// Each subdomain's cost (ps) with no copy or move to pay, when that
    /// does not change with progress (`steady`): across nodes it holds the
    /// network's edge bytes for the owners as of `priced_at` moves.
    steady_ps: Vec<f64>,
    /// Whether `steady_ps` holds: the workload neither moves nor grows.
    steady: bool,
    /// The board's `moves` when `steady_ps` was priced.
    priced_at: u64,
    /// Whether prices depend on the owners (across nodes, or with remote
    /// edges charged): then a move reprices.
    owners_priced: bool,
    /// Looks since the last publish of progress, and when that was (wall).
    published: (u32, std::time::Instant),
    /// `overloading-threads`' growth, kept with its threads.
    growth: Option<Growth>,
}

/// Wall time between publishes of progress: the watcher looks less often.
const PUBLISH_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// A virtual thread: its core, and where it is in its sweep.
pub(super) struct Thread {
    pub(super) timeline: Timeline,
    /// Its copy of its set, refreshed at the top of a sweep.
    set: Vec<usize>,
    pos: usize,
    /// Subdomains looked at since this thread last started one.
    scanned: usize,
    pub(super) max_lag: u64,
    current: Option<usize>,
    /// When the current update began, and its nominal cost (ps).
    began: u64,
    nominal: f64,
}

impl<'a> Simulation<'a> {
    /// A simulated plan's simulation, ready to step (tests drive it by
    /// hand).
    #[cfg(test)]
    pub(super) fn of_plan(plan: &'a crate::plan::Plan) -> Self {
        let sim = plan.sim().expect("a simulated plan");
        Simulation::new(
            &plan.problem,
            &plan.placement,
            &plan.settings,
            sim,
            plan.noise.as_ref(),
        )
    }

    pub(super) fn new(
        problem: &'a Problem,
        placement: &'a Placement,
        settings: &'a Settings,
        sim: &'a SimSettings,
        noise: Option<&'a NoisePlan>,
    ) -> Self {
        let p = problem;
        let measure = settings.measure();
        let (board, threads) = board_and_threads(p, placement, settings, sim, noise);
        let numbers = sim.numbers;
        let (subs, r0) = if numbers == Numbers::Held {
            let r0 = residual_norm(&p.initial_grid()).max(f64::MIN_POSITIVE);
            (Subdomains::standalone(p), r0)
        } else {
            (Subdomains::none(), 1.0)
        };
        let mut sim = Simulation {
            problem,
            placement,
            settings,
            sim,
            noise,
            costs: sim.costs,
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
            steady_ps: Vec::new(),
            steady: false,
            priced_at: 0,
            owners_priced: false,
            busy: vec![false; p.subs.len()],
            spans_nodes: board.nodes.iter().any(|&n| n != board.nodes[0]),
            node_count: distinct(&board.nodes),
            network: None,
            board,
            rehomes: 0,
            threads,
            now: 0,
            events: Events::new(p.threads),
            balance: calls(p, settings, measure),
            degradation: settings
                .scheme
                .balancer()
                .filter(|b| b.interval == Interval::Degradation)
                .map(|_| Degradation::new(sim.costs.balancer_ns * 1e-9)),
            trace: Vec::new(),
            sampler: settings.trace_interval.map(|every| Sampler::new(ps(every))),
            stop: None,
            r0,
            line: EstimateLine::new(r0, settings.tolerance),
            schedule: ResidualSchedule::new(r0 * r0),
            // In sync the barrier's leader looks at every iteration.
            monitor: sim
                .monitor_s
                .filter(|_| settings.mode() != Mode::Sync)
                .map(|s| (step(s * PS_PER_S).max(1), 0)),
            refuted: 0,
            verified: None,
            done: 0,
            most_updates: 0,
            published: (0, std::time::Instant::now()),
            growth: None,
        };
        sim.started();
        sim
    }

    /// What the simulation sets up once its state exists: the growth of
    /// the threads' loads, the progress line, the network across nodes,
    /// and the first prices.
    fn started(&mut self) {
        let (p, settings) = (self.problem, self.settings);
        self.growth = (settings.workload.thread_growth()).map(|g| Growth::new(g, &self.board.sets));
        if self.numbers == Numbers::Held {
            settings.progress.start(self.r0);
        }
        if self.spans_nodes && self.numbers == Numbers::Held && settings.mode() != Mode::Sync {
            self.network = Some(Network::new(&self.costs, p, &self.subs));
        }
        self.steady = !settings.workload.moves();
        // A price changes with the owner where it depends on where a
        // subdomain is: across nodes, with remote edges, and away from its
        // home slab (which pays the update's own costs).
        let c = &self.costs;
        let away =
            c.update_ns > 0.0 || c.row_ns > 0.0 || c.block_ns > 0.0 || c.home_update_ns > 0.0;
        self.owners_priced = self.spans_nodes || self.costs.remote_edge_ns > 0.0 || away;
        self.reprice();
    }

    /// Gives each core the speeds a run measured for its thread, if the
    /// settings have them (see [`cores::replay`]).
    pub(super) fn replay_speeds(&mut self) {
        let Some(m) = self.sim.replayed.as_deref() else {
            return;
        };
        let n = self.cells.len().max(1);
        let unit_ps = (0..self.cells.len()).map(|s| self.cost(s)).sum::<f64>() / n as f64;
        let mut timelines: Vec<Timeline> =
            self.threads.iter().map(|t| t.timeline.clone()).collect();
        cores::replay(&mut timelines, m, unit_ps);
        for (th, tl) in self.threads.iter_mut().zip(timelines) {
            th.timeline = tl;
        }
    }

    /// Progress: the mean updates per subdomain so far.
    fn progress(&self) -> f64 {
        self.done as f64 / self.cells.len().max(1) as f64
    }

    /// Nominal cost of updating `s` now, in picoseconds: its cells' part
    /// times its workload factor, plus, away from its home slab, the
    /// update's own.
    #[inline]
    fn cost(&mut self, s: usize) -> f64 {
        // Runs on every update: the common case is a table look-up.
        if self.steady && self.board.pending[s] == 0 {
            // Without nodes or remote edges, prices do not depend on owners.
            if self.owners_priced && self.priced_at != self.board.moves {
                self.reprice();
            }
            return self.steady_ps[s];
        }
        self.cost_now(s)
    }

    /// Prices every subdomain with no copy or move to pay, for the owners
    /// as they are. With nothing on top (remote adds exactly 0, and one
    /// node's network 0 too), `price` gives the same bits as `cost_now`: a
    /// run's bytes do not depend on the table.
    fn reprice(&mut self) {
        let remote_edges = self.costs.remote_edge_ns > 0.0;
        self.steady_ps = (0..self.cells.len())
            .map(|s| {
                let mut node = if self.spans_nodes {
                    self.edge_ns(s)
                } else {
                    0.0
                };
                if remote_edges {
                    node += self.remote_edges_ns(s);
                }
                self.price(s, 0.0, 0.0, node)
            })
            .collect();
        self.priced_at = self.board.moves;
    }

    /// `cost` worked out in full, for a moving workload or a subdomain
    /// that pays a copy or the network.
    #[inline(never)]
    fn cost_now(&self, s: usize) -> f64 {
        let c = &self.costs;
        let node = if self.spans_nodes {
            self.node_cost(s)
        } else {
            0.0
        } + self.remote_edges_ns(s);
        let pending = self.board.pending[s];
        let remote = if pending & Pending::SOCKETS != 0 {
            self.cells[s] as f64 * c.remote_cell_ns
        } else if pending & Pending::COLD != 0 {
            self.cells[s] as f64 * c.cold_cell_ns
        } else {
            0.0
        };
        self.price(s, self.progress(), remote, node)
    }

    /// Cost in picoseconds of `s` at progress `p`, with a copy's and the
    /// network's nanoseconds on top (added in this order, for the bits): a
    /// recorded workload's seconds, or the cost model at the workload's
    /// factor.
    fn price(&self, s: usize, p: f64, remote_ns: f64, node_ns: f64) -> f64 {
        let c = &self.costs;
        let workload = &self.settings.workload;
        let own_ns = match workload.seconds(s, p) {
            Some(seconds) => seconds * 1e9,
            None => {
                // A subdomain on its home thread is swept in its slab with
                // the others there (`subdomain/slab.rs`): it shares the
                // pass's own cost with them, and each row's with those
                // beside it, and pays its own part of the pass (its count,
                // gate and edges); with some of them away, the pass's extra
                // blocks ([`slab_shape`]). On its own it pays an update's
                // and its rows'.
                let g = &self.problem.subs[s];
                let (update, row) = match self.board.owners[s] == g.domain {
                    true => {
                        let pr = self.problem.subdomains_per_domain() as f64;
                        let update = c.update_ns / pr + c.home_update_ns;
                        let update = match c.block_ns > 0.0 {
                            true => update + self.extra_blocks(g.domain) * c.block_ns,
                            false => update,
                        };
                        (update, c.row_ns / self.problem.sub_cols as f64)
                    }
                    false => (c.update_ns, c.row_ns),
                };
                let rows = g.height as f64 * row;
                update + (rows + self.cells[s] as f64 * c.cell_ns) * self.factor(s, p)
            }
        };
        (own_ns + remote_ns + node_ns) * 1e3
    }

    /// Subdomain `s`'s workload factor at progress `p`: the workload's, or
    /// with `overloading-threads` where its holders' growth put it.
    #[inline]
    fn factor(&self, s: usize, p: f64) -> f64 {
        match &self.growth {
            Some(g) => g.factor(s, p),
            None => self.settings.workload.factor(s, p),
        }
    }

    /// The blocks beyond the first that domain `d`'s slab is swept as,
    /// for the owners as they are, per subdomain it holds: each of them
    /// pays this many `block_ns` an update.
    fn extra_blocks(&self, d: usize) -> f64 {
        let p = self.problem;
        let first = d * p.subdomains_per_domain();
        let live = |k: usize| self.board.owners[first + k] == d;
        let blocks = slab_shape::blocks(p.sub_rows, p.sub_cols, live);
        let held = (0..p.subdomains_per_domain()).filter(|&k| live(k)).count();
        blocks.saturating_sub(1) as f64 / held.max(1) as f64
    }

    /// What updating `s` costs across nodes, in nanoseconds: the bytes of
    /// each edge it sends to a subdomain owned on another node, and after a
    /// move to another node, a latency and the bytes of its cells.
    pub(super) fn node_cost(&self, s: usize) -> f64 {
        let mut ns = self.edge_ns(s);
        if self.board.pending[s] & Pending::NODES != 0 {
            let c = &self.costs;
            ns += c.node_latency_ns + 8.0 * self.cells[s] as f64 * c.node_byte_ns;
        }
        ns
    }

    /// What reading its edges from subdomains other threads own adds to
    /// updating `s`, in nanoseconds (exactly 0 without that cost).
    fn remote_edges_ns(&self, s: usize) -> f64 {
        let c = self.costs.remote_edge_ns;
        if c == 0.0 {
            return 0.0;
        }
        let owners = &self.board.owners;
        let own = owners[s];
        self.problem.subs[s].edge_cells_from(|n| owners[n] != own) as f64 * c
    }

    /// The network's part of updating `s` for its edges alone, in
    /// nanoseconds: the sender's overhead and the bytes of each edge it
    /// sends to a subdomain owned on another node.
    fn edge_ns(&self, s: usize) -> f64 {
        let (c, b) = (&self.costs, &self.board);
        let here = b.nodes[b.owners[s]];
        let g = &self.problem.subs[s];
        let (mut bytes, mut messages) = (0, 0);
        for side in Side::ALL {
            if let Neighbour::Sub(n) = g.neighbour(side)
                && b.nodes[b.owners[n]] != here
            {
                messages += 1;
                bytes += 8 * g.edge_cells(side);
            }
        }
        // With o = 0 (the default) the sum is the bytes' alone, bit for bit.
        bytes as f64 * c.node_byte_ns + f64::from(messages) * c.node_overhead_ns
    }

    /// Whether the next update of `s` computes its residual, and for which
    /// round: with a target, once per residual round (`schedule::residual`),
    /// as the runtime's workers decide.
    fn residual_now(&self, s: usize) -> Option<u64> {
        match self.residual {
            Residual::Compute => self.schedule.ask().computes(self.subs[s].residual_round()),
            Residual::Skip => None,
        }
    }

    /// What computing its residual adds to an update of `s`, in
    /// picoseconds: its cells' part again, times `residual_factor - 1`
    /// (nothing under a recorded workload, whose times hold it already).
    fn residual_ps(&self, s: usize) -> f64 {
        let (c, p, workload) = (&self.costs, self.progress(), &self.settings.workload);
        if workload.seconds(s, p).is_some() {
            return 0.0;
        }
        let cells = self.cells[s] as f64 * c.cell_ns * (c.residual_factor - 1.0);
        cells * self.factor(s, p) * 1e3
    }

    /// Locks subdomain `s` and computes its next values (numerics only),
    /// for thread `t`: across nodes, what arrived of its neighbours there.
    /// `round`: the residual round it also computes its residual for.
    fn begin(
        &mut self,
        s: usize,
        t: usize,
        version: EdgeVersion,
        round: Option<u64>,
    ) -> subdomain::Held<'_> {
        let mut cells = self.subs[s].lock();
        match &mut self.network {
            Some(net) => {
                let here = self.board.nodes[t];
                let aged = net.aged(s, here, self.now, &self.subs, &self.board);
                cells.begin_update_aged(&self.subs, version, round, &aged);
            }
            None => {
                cells.begin_update(&self.subs, version, round);
            }
        }
        cells
    }

    fn lag(&self, s: usize) -> u64 {
        let counts = &self.board.counts;
        schedule::lag(counts[s], &self.problem.subs[s].neighbours, |n| counts[n])
    }

    // ----- sync ---------------------------------------------------------

    pub(super) fn run_sync(&mut self) {
        loop {
            self.sample();
            // Balanced (`sync(n)+...`): the call is made at the barrier,
            // and every thread waits for it.
            let due = self.degradation.as_ref().is_none_or(Degradation::due);
            let start = match self.balance {
                Some(_) if due => self.barrier_call(self.now),
                _ => self.now,
            };
            if let Some(d) = &mut self.degradation
                && due
            {
                // Due, the call is made (the rotation is always due).
                d.called(seconds(start - self.now));
            }
            let mut end = start;
            for t in 0..self.threads.len() {
                let mut clock = start;
                for i in 0..self.threads[t].set.len() {
                    let s = self.threads[t].set[i];
                    let mut extra = 0.0;
                    if self.numbers == Numbers::Held {
                        let round = self.residual_now(s);
                        if round.is_some() {
                            extra = self.residual_ps(s);
                        }
                        // Own-version edges: order within an iteration is free.
                        self.begin(s, t, EdgeVersion::Own, round).finish_update();
                    }
                    let cost = self.cost(s) + extra;
                    let tl = &self.threads[t].timeline;
                    let began = clock;
                    clock = tl.run(clock, cost);
                    if let Some(loads) = &mut self.board.loads {
                        loads.add(s, t, cost, clock - began, &self.board.sets[t]);
                    }
                    self.board.counts[s] += 1;
                    self.rehomes += u64::from(self.board.pending[s] & Pending::SOCKETS != 0);
                    self.board.pending[s] = 0;
                    self.count_update(t);
                }
                end = end.max(clock);
            }
            if let Some(d) = &mut self.degradation {
                d.iteration(seconds(end - start));
            }
            // The budget counts a domain's updates: a thread that holds
            // more subdomains after a move does not end the run sooner.
            let per_domain = self.problem.subdomains_per_domain() as u64;
            self.most_updates = self.board.counts.first().map_or(0, |&c| c * per_domain);
            // Across nodes, the iteration's exchange waits a latency more.
            let network = if self.spans_nodes {
                self.costs.node_latency_ns
            } else {
                0.0
            };
            self.now = after(end, step((self.costs.barrier_ns + network) * 1e3));
            if self.check_stop() {
                return;
            }
        }
    }

    /// A bulk-synchronous call at the barrier at `now`: the thread whose
    /// turn it is balances if a call is due (as at the top of its sweep in
    /// async), every thread picks up its set, and all start after the
    /// call. Returns when they start.
    fn barrier_call(&mut self, now: u64) -> u64 {
        let turn = self.balance.as_ref().map_or(0, |b| b.rotation.turn());
        let start = self.sweep_start(turn, now);
        for t in 0..self.threads.len() {
            self.refresh(t);
        }
        start
    }

    // ----- ssync / async ------------------------------------------------

    pub(super) fn run_events(&mut self) {
        for t in 0..self.threads.len() {
            self.start_next(t);
        }
        let mut batch = Vec::new();
        let mut waiting: Vec<usize> = Vec::new();
        // Reused from event to event: an allocation per event was 4% of a
        // simulation at 36 threads.
        let mut retry: Vec<usize> = Vec::new();
        while let Some((time, t)) = self.events.first() {
            self.now = time;
            batch.clear();
            batch.push(t);
            // Alone at its time (the common case), the thread keeps its
            // entry until its next update replaces it: one pass up the tree
            // per event instead of two.
            if self.events.tied() {
                self.events.clear(t);
                while let Some((t2, th)) = self.events.first() {
                    if t2 != time {
                        break;
                    }
                    self.events.clear(th);
                    batch.push(th);
                }
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
            retry.clear();
            retry.extend_from_slice(&batch);
            retry.append(&mut waiting);
            for &t in &retry {
                if !self.start_next(t) {
                    self.events.clear(t);
                    waiting.push(t);
                }
            }
            if self.events.first().is_none() {
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
            if let Some(net) = &mut self.network {
                net.send(s, t, self.now, &self.subs, &self.board);
            }
        }
        self.board.counts[s] += 1;
        self.busy[s] = false;
        self.rehomes += u64::from(self.board.pending[s] & Pending::SOCKETS != 0);
        self.board.pending[s] = 0;
        self.count_update(t);
        if let Some(loads) = &mut self.board.loads {
            let th = &self.threads[t];
            loads.add(s, t, th.nominal, self.now - th.began, &self.board.sets[t]);
        }
    }

    /// Counts an update by thread `t`.
    fn count_update(&mut self, t: usize) {
        let u = &mut self.board.updates[t];
        *u += 1;
        self.most_updates = self.most_updates.max(*u);
        self.done += 1;
    }

    fn check_stop(&mut self) -> bool {
        self.publish_progress();
        if self.now >= RANGE_PS {
            // Past the range a time is capped, not exact: refused.
            self.stop = Some(StopReason::ClockRange);
            return true;
        }
        let look = Verdicts {
            interrupted: self.settings.interrupt.signal().is_some(),
            most_updates: (!self.threads.is_empty()).then_some(self.most_updates),
            now: Some(self.now),
        };
        let rule = self.rule;
        self.stop = rule.first(look, || self.estimate_met() && self.verify());
        self.stop.is_some()
    }

    /// Every 64 looks, if [`PUBLISH_EVERY`] has passed: the most updates,
    /// the virtual clock and the residual estimate. Reads only; the
    /// simulation's bytes do not depend on it.
    fn publish_progress(&mut self) {
        self.published.0 += 1;
        if !self.published.0.is_multiple_of(64) || self.published.1.elapsed() < PUBLISH_EVERY {
            return;
        }
        self.published.1 = std::time::Instant::now();
        let residual_sq = (self.residual == Residual::Compute && self.settings.tolerance.is_some())
            .then(|| self.subs.iter().map(Subdomain::residual_sq).sum::<f64>());
        self.settings
            .progress
            .publish(self.most_updates, seconds(self.now), residual_sq);
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
            let mut extra = 0.0;
            if self.numbers == Numbers::Held {
                let round = self.residual_now(s);
                if round.is_some() {
                    extra = self.residual_ps(s);
                }
                drop(self.begin(s, t, EdgeVersion::Latest, round)); // publishes at completion
            }
            let cost = self.cost(s) + extra;
            let tl = &self.threads[t].timeline;
            let end = tl.run(now, cost);
            let th = &mut self.threads[t];
            th.max_lag = th.max_lag.max(lag);
            th.current = Some(s);
            th.began = now;
            th.nominal = cost;
            self.busy[s] = true;
            self.events.set(t, end);
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
        let cost = step(self.costs.balancer_ns * 1e3);
        let sockets = &self.placement.sockets;
        let subs: &[Subdomain] = match self.residual {
            Residual::Compute => &self.subs,
            Residual::Skip => &[],
        };
        let (costs, nodes, n) = (&self.costs, self.node_count, self.cells.len());
        let learning =
            |learns, moves| network::call_ps(learns, costs, nodes, sockets.len(), n, moves);
        let cost =
            |learned: Option<_>, moves| after(cost, learned.map_or(0, |l| learning(l, moves)));
        let board = &mut self.board;
        let moved = board.moves;
        let Some(cost) = balance.maybe_call(t, now, cost, board, sockets, subs) else {
            return now;
        };
        if self.board.moves != moved
            && let (Some(growth), Some(g)) =
                (&mut self.growth, self.settings.workload.thread_growth())
        {
            growth.moved(
                g,
                &self.board.sets,
                self.done as f64 / self.cells.len().max(1) as f64,
            );
        }
        if self.board.moves != moved && self.settings.trace_loads && self.sampler.is_some() {
            self.push_sample();
        }
        // The caller's own set may have changed: pick it up now.
        self.refresh(t);
        after(now, cost)
    }

    /// Copies thread `t`'s set if the balancer changed it.
    fn refresh(&mut self, t: usize) {
        if self.board.dirty[t] {
            self.threads[t].set.clone_from(&self.board.sets[t]);
            self.board.dirty[t] = false;
        }
    }

    // ----- shared -------------------------------------------------------

    /// Whether the residual estimate is met, looked at now: after every
    /// event, or with a monitor only at the first event of each of its
    /// periods, as the runtime's monitor looks.
    fn estimate_met(&mut self) -> bool {
        if self.residual != Residual::Compute {
            return false;
        }
        if let Some((period, next)) = &mut self.monitor {
            if self.now < *next {
                return false;
            }
            *next = (self.now / *period + 1) * *period;
        }
        // Only a complete round's estimate (`schedule::residual`), summed
        // only then.
        let done = self.subs.iter().map(Subdomain::residual_round).min();
        let done = done.unwrap_or(u64::MAX);
        let n = self.subs.len().max(1) as f64;
        let (at, estimate_sq) = match self.schedule.reads_estimate(done) {
            true => (
                self.subs
                    .iter()
                    .map(|s| s.residual_at() as f64)
                    .sum::<f64>()
                    / n,
                self.subs.iter().map(Subdomain::residual_sq).sum::<f64>(),
            ),
            false => (0.0, f64::INFINITY),
        };
        let seen = Look {
            done,
            at,
            estimate_sq,
            progress: self.progress(),
        };
        self.schedule.look(seen, &self.line)
    }

    /// Recomputes the residual from the assembled grid; on a miss, tightens
    /// the estimate's threshold as the runtime does (just past the target).
    fn verify(&mut self) -> bool {
        let grid = self.subs.assemble(self.problem);
        let residual = residual_norm(&grid) / self.r0;
        let tol = self.settings.tolerance.unwrap_or(f64::INFINITY);
        if residual <= tol {
            self.verified = Some((residual, grid));
            return true;
        }
        self.refuted += 1;
        self.line.tighten(tol, residual);
        false
    }

    fn sample(&mut self) {
        if let Some(s) = &mut self.sampler
            && s.due(self.now)
        {
            self.push_sample();
        }
    }

    /// A trace sample now, due or not: at the end, and where a call moved
    /// subdomains while loads are recorded (LB data's phases are cut
    /// there, so that no subdomain changes owner within one).
    pub(super) fn push_sample(&mut self) {
        {
            let loads = self
                .board
                .loads
                .as_ref()
                .filter(|_| self.settings.trace_loads);
            self.trace.push(TraceSample {
                t_s: seconds(self.now),
                counts: self.board.counts.clone(),
                owners: self.board.owners.clone(),
                // An update in flight has been busy since it began: so a
                // window's busy time is what it held (an update's own
                // work is counted when it ends).
                busy_s: loads.map_or_else(Vec::new, |l| {
                    let mut busy = l.busy_ps.clone();
                    for th in &self.threads {
                        if let Some(s) = th.current {
                            busy[s] += self.now.saturating_sub(th.began);
                        }
                    }
                    busy.into_iter().map(seconds).collect()
                }),
                work_s: loads.map_or_else(Vec::new, |l| {
                    l.work_ps.iter().map(|&w| w / PS_PER_S).collect()
                }),
                // Time stretched while working: what the core's noise took.
                lost_s: loads.map_or_else(Vec::new, |l| {
                    l.core
                        .iter()
                        .map(|&(work, took)| (took as f64 - work).max(0.0) / PS_PER_S)
                        .collect()
                }),
            });
        }
    }
}

/// The simulation's board (its subdomains' owners, nodes and, where the
/// run measures them, loads) and its threads on their cores' timelines.
fn board_and_threads(
    p: &Problem,
    placement: &Placement,
    settings: &Settings,
    sim: &SimSettings,
    noise: Option<&NoisePlan>,
) -> (Board, Vec<Thread>) {
    let mut board = Board::new(p);
    board.nodes.clone_from(&sim.nodes);
    board.marks_cold = sim.costs.cold_cell_ns > 0.0;
    let threads = cores::timelines(placement, settings, sim, noise)
        .into_iter()
        .zip(&board.sets)
        .map(|(timeline, set)| Thread {
            timeline,
            set: set.clone(),
            pos: 0,
            scanned: 0,
            max_lag: 0,
            current: None,
            began: 0,
            nominal: 0.0,
        })
        .collect();
    if settings.measure().loads {
        let measured = sim.loads == SimLoads::Measured;
        board.measure_loads(measured.then(|| Slabs::of(p)));
    }
    (board, threads)
}

/// The balancer's calls in virtual time, if the scheme has a balancer:
/// whose turn, and the caller that measures and asks the policy.
fn calls(p: &Problem, settings: &Settings, measure: crate::engine::Measure) -> Option<Calls> {
    settings.scheme.balancer().map(|b| Calls {
        rotation: Rotation::new(p.threads, ps(start_interval(b.interval))),
        caller: Caller::new(b, measure),
    })
}

/// How many distinct values `nodes` holds.
fn distinct(nodes: &[usize]) -> usize {
    let mut nodes = nodes.to_vec();
    nodes.sort_unstable();
    nodes.dedup();
    nodes.len()
}

#[cfg(test)]
mod tests;
