//! One worker thread: pin, then sweep its subdomains until told to stop.
//!
//! # Protocol: the staleness gate (ssync)
//!
//! **State.** Each subdomain's `count` (`AtomicU64`, written only under its
//! cells' lock, with Release; read by anyone with Acquire).
//!
//! **The gate.** Holding `s`'s lock, a thread computes
//! `lag = max over neighbours n of count(s) - count(n)` and updates `s` only
//! if `lag <= staleness`. Under the lock `count(s)` cannot move, and every
//! `count(n)` only grows, so the lag can only shrink while the update runs:
//! the gate cannot be fooled by a stale read. Hence at every instant
//! `count(s) - count(n) <= staleness + 1` (the `+ 1` is the update the gate
//! just admitted). The report's `max_staleness_seen` is the largest lag the
//! gate admitted; a test checks the invariant with an independent observer
//! thread that reads pairs of counts at single instants.
//!
//! **Why ssync cannot deadlock.** A subdomain whose neighbours lag too far
//! is skipped, not waited on; a thread idles (watching the stop flag) only
//! when it can update none of its subdomains. The globally least-updated
//! subdomain has lag 0 and can always be updated by its owner, and every
//! subdomain has an owner that sweeps it, so some thread always progresses
//! until the run stops.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::peers::from_urgency;
use super::sleep::Waiting;
use super::waits;
use super::{Crossing, Idler, Shared, StopReason};
use crate::engine::{Residual, Stall};
use crate::schedule::residual::Ask;
use crate::schedule::{Gate, Verdicts};
use crate::subdomain::{EdgeVersion, Job, Slab, SlabGuard, Todo};
use crate::variant::Mode;

/// Runs worker `t` to the end. A panic inside it is caught here: the run
/// stops with `WorkerPanic` (so no other thread waits for this one, and the
/// report says why), and the worker counts as finished either way. The
/// panic's message has gone to stderr through the panic hook.
pub(super) fn run(sh: &Shared<'_>, t: usize) {
    // Set once the thread is on its core: before that a new thread waits
    // on its parent's core, which says nothing about the machine.
    let mut pinned_at = None;
    // Unwind safety: what a panicking update leaves behind is one
    // subdomain's half-written `next` buffer, which is never published (the
    // swap comes after the sweep), and counters that only ever grow.
    let result =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(sh, t, &mut pinned_at)));
    if result.is_err() {
        sh.stop.request(StopReason::WorkerPanic);
    }
    let Some((born, waited_before)) = pinned_at else {
        sh.finished.fetch_add(1, Ordering::Release);
        return;
    };
    let life = born.elapsed().as_nanos() as u64;
    sh.life_ns[t].fetch_add(life, Ordering::Relaxed);
    sh.live_waits[t].close();
    match (waited_before, waits::own_ns()) {
        (Some(b), Some(a)) => {
            // Saturates at u64::MAX, which marks "unknown": never reached
            // by nanoseconds a run can wait.
            let _ = sh.waited_ns[t].fetch_update(Ordering::Release, Ordering::Relaxed, |w| {
                (w != u64::MAX).then(|| w.saturating_add(a.saturating_sub(b)))
            });
        }
        _ => sh.waited_ns[t].store(u64::MAX, Ordering::Release),
    }
    sh.finished.fetch_add(1, Ordering::Release);
}

fn work(sh: &Shared<'_>, t: usize, pinned_at: &mut Option<(std::time::Instant, Option<u64>)>) {
    let core = core_affinity::CoreId {
        id: sh.placement.cores[t],
    };
    if core_affinity::set_for_current(core) {
        sh.pinned.fetch_add(1, Ordering::Relaxed);
    }
    let waited = waits::own_ns();
    if let Some(base) = waited {
        sh.live_waits[t].open(base);
    }
    *pinned_at = Some((std::time::Instant::now(), waited));
    let mut w = Worker::new(sh, t);
    let mut set = sh.assignment.current(t);
    // First touch, now that this thread is pinned: its cells go on its node.
    if let Some(slab) = w.home {
        slab.lock().touch(sh.problem, sh.subs, t);
    }
    let mut idler = Idler::default();
    // In one process, a worker that found nothing to update waits for
    // another thread's update count to move: spinning, then asleep
    // (`sleep.rs`). Across ranks a neighbour's progress also arrives
    // through the monitor's exchanges, which wake no one: there it idles.
    let mut resting: Option<Waiting> = None;
    let updates = || -> u64 {
        sh.thread_updates
            .iter()
            .map(|u| u.load(Ordering::SeqCst))
            .sum()
    };
    w.sample_core();
    while !sh.stop.is_set() {
        sh.assignment.refresh(t, &mut set);
        w.sample_core_if_called();
        if let Some(b) = &sh.balancer {
            let now = || sh.start.elapsed().as_nanos() as u64;
            let moved = b.maybe_call(t, now, &sh.view(), &sh.assignment, &sh.placement.sockets);
            if moved.is_some_and(|m| m > 0) {
                sh.cut_trace();
            }
        }
        // While resting, the counts before the sweep: what the sleep
        // below waits to see move.
        let before = resting.as_ref().map(|_| updates());
        let Some(progressed) = w.sweep(&set) else {
            break;
        };
        match w.mode {
            Mode::Sync => {
                if w.cross_barrier() == Crossing::Stop {
                    break;
                }
            }
            Mode::Ssync | Mode::Async if progressed => {
                idler.reset();
                resting = None;
            }
            Mode::Ssync | Mode::Async if sh.peers.is_some() => idler.idle(),
            Mode::Ssync | Mode::Async => {
                // (After the first futile sweep, the counts now: a move
                // since that sweep is caught at the next one, or wakes.)
                let seen = before.unwrap_or_else(updates);
                resting
                    .get_or_insert_with(Waiting::default)
                    .wait(&sh.idle, || updates() == seen && !sh.stop.is_set());
            }
        }
        // Across ranks, the monitor that exchanges the edges may share this
        // core: a monitor that has not exchanged for two of its periods is
        // offered the core (woken, it would otherwise wait out the worker's
        // time slice, ~4 ms here: 250 exchanges/s instead of thousands).
        // Not at every sweep: on a core shared with other programs a yield
        // hands the rest of the slice to them, so a thread with short
        // sweeps lost more to yielding than one with long ones (beside two
        // CPU hogs, a thread slowed 3x made 20 times the updates of a quick
        // one). But at every sweep where the run's own threads share the
        // core (of this rank or another on this node): they then take turns
        // sweep by sweep, and the rates the balancer measures over a
        // millisecond stay smooth (taking turns by time slices, hybrid
        // across 2 ranks of 2 threads on one core each moved 55-84
        // subdomains instead of 3-4 and took 20% longer; on 4 ranks of one
        // thread, two to a core, joint made 776 moves and took 1.23x plain
        // async's time).
        if sh.peers.is_some() && w.mode != Mode::Sync && (w.shares_core || sh.monitor_is_late()) {
            std::thread::yield_now();
        }
    }
    sh.max_lag[t].store(w.max_lag, Ordering::Relaxed);
    // Every edge current as the epoch ends: a stopped run's exact residual
    // reads them all, and the slab publishes no side between two regions
    // while both are in it.
    if let Some(slab) = w.home {
        slab.lock().settle(sh.subs);
    }
}

/// Whether another thread of the run, of any rank on thread `t`'s node, is
/// pinned to `t`'s core (across ranks; in one process there are no peers
/// and this is never asked).
fn shares_core(sh: &Shared<'_>, t: usize) -> bool {
    let Some(peers) = sh.peers else {
        return false;
    };
    let (cores, nodes) = (&sh.placement.cores, peers.thread_nodes());
    (0..cores.len()).any(|o| o != t && cores[o] == cores[t] && nodes[o] == nodes[t])
}

/// One worker's settings and running tallies.
struct Worker<'s, 'a> {
    sh: &'s Shared<'a>,
    t: usize,
    mode: Mode,
    gate: Gate,
    version: EdgeVersion,
    residual: Residual,
    my_socket: Option<usize>,
    stall: Option<Stall>,
    slow: Option<f64>,
    /// Subdomain updates this thread has made (over all epochs).
    done: u64,
    max_lag: u64,
    /// The slow hook spins a multiple of the fastest update seen, per cell:
    /// wall time of a single update includes time preempted by an
    /// oversubscribed neighbour, and spinning for that would feed on itself.
    fastest_cell_ns: f64,
    /// This thread's domain's slab (`subdomain/slab.rs`), and per region of
    /// it: whether it was live at the last pass, what this pass does with
    /// it, and the workload's cost factor.
    home: Option<&'a Slab>,
    live: Vec<bool>,
    todo: Vec<Todo>,
    factors: Vec<f64>,
    /// Whether another of the run's threads (of any rank on this node) is
    /// pinned to this one's core: oversubscribed on purpose.
    shares_core: bool,
    /// Whether updates are timed (object loads), and when the balancer's
    /// next call was due at this thread's last CPU-time sample.
    timed: bool,
    due_seen: u64,
}

impl<'s, 'a> Worker<'s, 'a> {
    fn new(sh: &'s Shared<'a>, t: usize) -> Self {
        let settings = sh.settings;
        let mode = settings.mode();
        Worker {
            sh,
            t,
            mode,
            gate: Gate {
                staleness: settings.scheme.staleness(),
            },
            version: match mode {
                Mode::Sync => EdgeVersion::Own,
                Mode::Ssync | Mode::Async => EdgeVersion::Latest,
            },
            residual: settings.residual(),
            my_socket: sh.placement.sockets.get(t).copied(),
            stall: settings.stall.filter(|s| s.thread == t),
            slow: settings.slow.filter(|s| s.thread == t).map(|s| s.factor),
            done: sh.thread_updates[t].load(Ordering::Relaxed),
            max_lag: sh.max_lag[t].load(Ordering::Relaxed),
            fastest_cell_ns: f64::INFINITY,
            home: sh.subs.slab(t),
            live: Vec::new(),
            todo: Vec::new(),
            factors: Vec::new(),
            shares_core: shares_core(sh, t),
            timed: sh.clocks.is_some(),
            due_seen: u64::MAX,
        }
    }

    /// Samples this thread's CPU time, when the run measures loads.
    fn sample_core(&mut self) {
        if let Some(clocks) = &self.sh.clocks {
            clocks[self.t].sample(self.sh.start.elapsed().as_nanos() as u64);
        }
    }

    /// Samples this thread's CPU time once per balancer interval: when the
    /// next call's due time has changed since the last sample (one load of
    /// a shared atomic per sweep; the sample itself is a system call).
    fn sample_core_if_called(&mut self) {
        let (Some(due), true) = (self.sh.balancer_due_ns(), self.timed) else {
            return;
        };
        if due != self.due_seen {
            self.due_seen = due;
            self.sample_core();
        }
    }

    /// One pass over `set`: the home slab's regions first, as one sweep,
    /// then every other subdomain on its own. Whether any update was made,
    /// or `None` once the run is to stop.
    fn sweep(&mut self, set: &[usize]) -> Option<bool> {
        if self.sh.stop.is_set() {
            return None;
        }
        let mut progressed = match self.home {
            Some(slab) => self.slab_pass(slab)?,
            None => false,
        };
        let first = self.home.map_or(0, |slab| slab.subdomains().start);
        for &s in set {
            if self.sh.stop.is_set() {
                return None;
            }
            // Swept in the slab just now.
            if self.live.get(s.wrapping_sub(first)) == Some(&true) {
                continue;
            }
            if self.try_update(s) {
                progressed = true;
                if self.budget_spent() {
                    return None;
                }
            }
        }
        Some(progressed)
    }

    /// Whether this thread has spent its update budget (and if so, the stop
    /// is requested). Sync's barrier looks at budgets itself.
    fn budget_spent(&self) -> bool {
        let spent = self.mode != Mode::Sync && self.sh.rule.budget_spent(self.done);
        if spent {
            self.sh.stop.request(StopReason::MaxIterations);
        }
        spent
    }

    /// One pass over the home slab (`subdomain/slab.rs`): subdomains moved
    /// away leave it and those moved back come in, then every live one
    /// the gate admits is updated, adjacent ones as one block. Whether any
    /// was updated, or `None` once the run is to stop.
    fn slab_pass(&mut self, slab: &'a Slab) -> Option<bool> {
        let sh = self.sh;
        // Sync never shares the slab with a worker; otherwise one held by
        // another thread (a subdomain leaving it) is skipped this pass.
        let mut g = match self.mode {
            Mode::Sync => slab.lock(),
            Mode::Ssync | Mode::Async => match slab.try_lock() {
                Some(g) => g,
                None => return Some(false),
            },
        };
        let range = slab.subdomains();
        self.settle_homes(&mut g, range.clone());
        let uniform = sh.settings.workload.is_uniform();
        let ask = Ask::from_bits(sh.residual_ask.load(Ordering::Relaxed));
        self.choose_regions(&g, range.clone(), uniform, ask);
        let stopped = || sh.stop.is_set();
        let job = Job {
            todo: &self.todo,
            round: match ask {
                Ask::Round(n) | Ask::Every(n) => n,
            },
            version: self.version,
            work: (!uniform).then_some(&self.factors[..]),
            clocked: self.slow.is_some() || self.timed || !uniform,
            timed: self.timed,
            stopped: &stopped,
        };
        // The stall hook, if the update it names is in this pass. It ends at
        // the stop, or once one of the pass's subdomains is moved to another
        // rank: such a move waits for the pass (`migrate`), and a stall that
        // outlasted it would hold every rank.
        let (done, todo) = (self.done, &self.todo);
        let updates = todo.iter().filter(|&&d| d != Todo::Skip).count() as u64;
        let pause = || {
            if let Some(st) = self
                .stall
                .filter(|st| (done..done + updates).contains(&st.after))
            {
                let here = || {
                    range
                        .clone()
                        .zip(todo)
                        .filter(|&(_, &d)| d != Todo::Skip)
                        .all(|(s, _)| sh.local.contains(&sh.subs[s].owner()))
                };
                sh.stop
                    .sleep_while(Duration::from_secs_f64(st.seconds), here);
            }
        };
        let swept = g.pass(sh.subs, &job, pause);
        drop(g);
        self.max_lag = self.max_lag.max(swept.lag);
        if let Some(took) = swept.took {
            let spun = self.slow_down(took, swept.cells);
            // A slow core's updates take longer: the spin is the regions'
            // busy time, shared by cells, as the pass's own is.
            if self.timed && spun > 0 {
                for (s, _) in range.zip(&self.todo).filter(|&(_, &d)| d != Todo::Skip) {
                    let share = spun as f64 * sh.subs[s].geom.cells() as f64;
                    sh.subs[s].add_busy_ns((share / swept.cells as f64) as u64);
                }
            }
        }
        self.count(swept.updates);
        if self.budget_spent() {
            return None;
        }
        Some(swept.updates > 0)
    }

    /// Records `updates` more updates by this thread, and wakes the
    /// workers that sleep for want of something to update (SeqCst: the
    /// protocol at the top of `sleep.rs`).
    fn count(&mut self, updates: u64) {
        self.done += updates;
        self.sh.thread_updates[self.t].store(self.done, Ordering::SeqCst);
        self.sh.idle.wake_if_asleep();
    }

    /// The slab's regions follow their owners: one this thread no longer
    /// owns leaves it (exported to its own buffers), one it owns again that
    /// sits away from home comes back.
    fn settle_homes(&self, g: &mut SlabGuard<'a>, range: std::ops::Range<usize>) {
        let (sh, t) = (self.sh, self.t);
        for s in range {
            let sub = &sh.subs[s];
            let owner = sub.owner();
            if g.is_live(s) && owner != t {
                g.export(sh.subs, sh.problem, s, t);
            } else if !g.is_live(s) && owner == t {
                let held = match self.mode {
                    Mode::Sync => Some(sub.lock()),
                    Mode::Ssync | Mode::Async => sub.try_lock(),
                };
                if let Some(mut held) = held
                    && !held.is_home()
                {
                    g.import(sh.problem, s, &mut held, t);
                }
            }
        }
    }

    /// What the pass does with each of the slab's regions: skip it (not
    /// live here, or not admitted by the gate), sweep it, or sweep it with
    /// the residual; and each one's workload factor. The budget is exact: a
    /// pass that would overrun it leaves its last regions for a pass that
    /// never comes (sync's barrier counts whole iterations itself).
    fn choose_regions(
        &mut self,
        g: &SlabGuard<'a>,
        range: std::ops::Range<usize>,
        uniform: bool,
        ask: Ask,
    ) {
        let (sh, t) = (self.sh, self.t);
        let n = range.len();
        self.live.resize(n, false);
        self.todo.resize(n, Todo::Skip);
        self.factors.resize(n, 1.0);
        for (k, s) in range.enumerate() {
            self.live[k] = g.is_live(s);
            self.todo[k] = Todo::Skip;
            if !self.live[k] {
                continue;
            }
            // Under the slab's lock the own count cannot move, and
            // neighbours only advance: the lag can only shrink. Only ssync's
            // gate reads it first; the halo reads it anyway (`Swept::lag`).
            let sub = &sh.subs[s];
            let lag = match self.gate.staleness {
                Some(_) => sub.lag(sh.subs),
                None => 0,
            };
            if !self.gate.admits(t, sub.owner(), lag) {
                continue;
            }
            self.todo[k] = match self.residual_for(s, ask) {
                Some(_) => Todo::Residual,
                None => Todo::Sweep,
            };
            if !uniform {
                self.factors[k] = self.work_factor(s);
            }
        }
        if self.mode != Mode::Sync {
            let mut room = sh.rule.budget.saturating_sub(self.done);
            for d in self.todo.iter_mut().filter(|d| **d != Todo::Skip) {
                if room == 0 {
                    *d = Todo::Skip;
                } else {
                    room -= 1;
                }
            }
        }
    }

    /// Whether this update of subdomain `s` computes its residual, and for
    /// which round: with a target, as the residual schedule asks
    /// (`schedule::residual`).
    fn residual_for(&self, s: usize, ask: Ask) -> Option<u64> {
        match self.residual {
            Residual::Compute => ask.computes(self.sh.subs[s].residual_round()),
            Residual::Skip => None,
        }
    }

    /// The workload's cost factor of subdomain `s` now.
    fn work_factor(&self, s: usize) -> f64 {
        let workload = &self.sh.settings.workload;
        match workload.moves() {
            true => workload.factor(s, self.sh.progress()),
            false => workload.factor(s, 0.0),
        }
    }

    /// Updates subdomain `s`, whose cells are on their own, if this thread
    /// may now; whether it did.
    fn try_update(&mut self, s: usize) -> bool {
        let (sh, t) = (self.sh, self.t);
        let sub = &sh.subs[s];
        // Sync never shares a subdomain; otherwise one held by another
        // thread (being handed over) is skipped, not waited for.
        let locked = match self.mode {
            Mode::Sync => Some(sub.lock()),
            Mode::Ssync | Mode::Async => sub.try_lock(),
        };
        let Some(mut cells) = locked else {
            return false;
        };
        if cells.is_home() {
            // Its cells are in its home slab. This thread's own slab updates
            // its own; a subdomain moved here from another's is taken out by
            // whoever gets that slab first, its thread or this one (sync
            // cannot wait for the other: this iteration needs it).
            let domain = sub.geom.domain;
            if domain == t || sub.owner() != t {
                return false;
            }
            drop(cells);
            let Some(slab) = sh.subs.slab(domain) else {
                return false;
            };
            let slab = match self.mode {
                Mode::Sync => Some(slab.lock()),
                Mode::Ssync | Mode::Async => slab.try_lock(),
            };
            let Some(mut slab) = slab else {
                return false;
            };
            if slab.is_live(s) {
                slab.export(sh.subs, sh.problem, s, t);
            }
            drop(slab);
            let relocked = match self.mode {
                Mode::Sync => Some(sub.lock()),
                Mode::Ssync | Mode::Async => sub.try_lock(),
            };
            match relocked {
                Some(c) if !c.is_home() => cells = c,
                _ => return false,
            }
        }
        // Under the lock the own count cannot move, and neighbours only
        // advance, so the lag can only shrink during the update. A
        // subdomain moved away is skipped; the new set arrives next sweep.
        // Only ssync's gate reads the lag first; the halo reads it anyway.
        let lag = match self.gate.staleness {
            Some(_) => sub.lag(sh.subs),
            None => 0,
        };
        if !self.gate.admits(t, sub.owner(), lag) {
            return false;
        }
        // Memory follows its thread: cells last written first by a thread
        // on another socket are copied into this thread's memory.
        cells.ensure_touched(sh.problem, t);
        let toucher = sub.first_toucher();
        if toucher != t && sh.placement.sockets.get(toucher).copied() != self.my_socket {
            cells.rehome(t);
            sh.rehomes.fetch_add(1, Ordering::Relaxed);
        }
        let done = self.done;
        // The stall ends at the stop, or once the subdomain is moved to
        // another rank: such a move waits for the update in flight
        // (`migrate`), and a stall that outlasted it would hold every rank.
        let pause = || {
            if let Some(st) = self.stall.filter(|st| st.after == done) {
                let here = || sh.local.contains(&sub.owner());
                sh.stop
                    .sleep_while(Duration::from_secs_f64(st.seconds), here);
            }
        };
        // The clock is read only for the slow hook and for object loads: a
        // vDSO call per update is measurable at small subdomains.
        let began = (self.slow.is_some() || self.timed).then(Instant::now);
        let work = self.work_factor(s);
        let stopped = || sh.stop.is_set();
        let ask = Ask::from_bits(sh.residual_ask.load(Ordering::Relaxed));
        let round = self.residual_for(s, ask);
        let read = cells.update(sh.subs, self.version, round, work, stopped, pause);
        // The slow hook's spin is part of the update's busy time: a slow
        // core's updates take longer.
        if let Some(began) = began {
            self.slow_down(began.elapsed(), sub.geom.cells() as u64);
            if self.timed {
                cells.add_busy(began.elapsed().as_nanos() as u64);
            }
        }
        drop(cells);
        self.count(1);
        self.max_lag = self.max_lag.max(lag).max(read);
        true
    }

    /// The slow hook: after updates of `cells` cells that took `took`,
    /// spins `factor` times what the fastest update seen would take for
    /// them, on this thread's CPU clock. Wall time would count time the
    /// thread spent preempted as slowness, so on a busy machine the slow
    /// thread would be hardly slower than the others; CPU time makes it
    /// `1 + factor` times slower under any fair scheduling. Returns the
    /// nanoseconds it spun.
    fn slow_down(&mut self, took: Duration, cells: u64) -> u64 {
        let Some(factor) = self.slow else {
            return 0;
        };
        let per_cell = took.as_nanos() as f64 / cells.max(1) as f64;
        self.fastest_cell_ns = self.fastest_cell_ns.min(per_cell);
        let spin = (self.fastest_cell_ns * cells as f64 * factor) as u64;
        let began = Instant::now();
        let until = braid_noise::thread_cpu_ns().saturating_add(spin);
        while braid_noise::thread_cpu_ns() < until && !self.sh.stop.is_set() {
            std::hint::spin_loop();
        }
        began.elapsed().as_nanos() as u64
    }

    /// The end of a sync iteration. The barrier's leader looks once every
    /// thread has arrived: then the counts and the local residuals are exact.
    fn cross_barrier(&self) -> Crossing {
        let sh = self.sh;
        sh.barrier.wait(&sh.stop, || {
            // Across ranks, every rank's leader exchanges this iteration's
            // edges and decides on what all ranks agree (see `peers`).
            if let Some(peers) = sh.peers {
                let wish = from_urgency(sh.wish.load(Ordering::Relaxed));
                return sh.exchange(peers, wish);
            }
            let look = Verdicts {
                most_updates: Some(sh.most_updates()),
                ..Verdicts::default()
            };
            sh.rule.first(look, || sh.estimate_met())
        })
    }
}
