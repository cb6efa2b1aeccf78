//! The simulator's bookkeeping: counts, owners, each thread's set and what
//! a move left to pay ([`Board`]), as the schedule core reads and writes
//! them, and the balancer's turns and calls in virtual time ([`Calls`]).

use super::clock::PS_PER_S;
use crate::policy::Learns;
use crate::schedule::{self, Caller, Rotation};
use crate::subdomain::Subdomain;

/// What a move leaves a subdomain's next update to pay, as bits of one
/// byte.
pub(crate) struct Pending;

impl Pending {
    /// Moved across sockets: `remote_cell_ns` (the runtime's re-homing copy).
    pub(crate) const SOCKETS: u8 = 1;
    /// Moved to another core: `cold_cell_ns` (unless it crossed sockets).
    pub(crate) const COLD: u8 = 2;
    /// Moved to another node: a latency and its cells' bytes.
    pub(crate) const NODES: u8 = 4;
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Board {
    pub(crate) counts: Vec<u64>,
    pub(crate) owners: Vec<usize>,
    /// Each thread's set as the balancer keeps it.
    pub(crate) sets: Vec<Vec<usize>>,
    /// Whether a thread's set changed since it last copied it.
    pub(crate) dirty: Vec<bool>,
    /// What each subdomain's next update pays for a move since its last
    /// ([`Pending`]: one byte, so that the common case, nothing, is one
    /// look).
    pub(crate) pending: Vec<u8>,
    /// Whether a move marks [`Pending::COLD`] (`cold_cell_ns` is not 0).
    pub(crate) marks_cold: bool,
    /// Subdomain updates each thread has made.
    pub(crate) updates: Vec<u64>,
    /// The node of each thread's core (all 0 on one node).
    pub(crate) nodes: Vec<usize>,
    /// Owner changes so far (what a subdomain's network cost depends on).
    pub(crate) moves: u64,
    /// Object loads, when measured: each subdomain's virtual time spent
    /// updating it and the nominal (full-speed) cost of those updates, and
    /// each thread's nominal work and the virtual time it took, all in ps.
    pub(crate) loads: Option<Loads>,
}

/// What the simulator measures of object loads (see `schedule::loads`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Loads {
    pub(crate) busy_ps: Vec<u64>,
    pub(crate) work_ps: Vec<f64>,
    pub(crate) core: Vec<(f64, u64)>,
    /// Whether balancers see the loads as measured (busy time at the
    /// owner's speed, as the runtime's) rather than the nominal work:
    /// then with each subdomain's domain and cells, to share out a
    /// thread's time at home as the runtime does ([`Loads::add`]).
    pub(crate) measured: Option<Slabs>,
}

/// Each subdomain's domain, cells and the nominal cost of its last
/// update (0 before its first).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Slabs {
    pub(crate) domains: Vec<usize>,
    pub(crate) cells: Vec<f64>,
    pub(crate) last_ps: Vec<f64>,
}

impl Slabs {
    pub(crate) fn of(problem: &crate::problem::Problem) -> Slabs {
        Slabs {
            domains: problem.subs.iter().map(|g| g.domain).collect(),
            cells: problem.subs.iter().map(|g| g.cells() as f64).collect(),
            last_ps: vec![0.0; problem.subs.len()],
        }
    }
}

impl Loads {
    /// An update of `sub` by thread `t` that cost `nominal_ps` and took
    /// `took_ps`; `set` is what `t` holds.
    ///
    /// Measured, an update at home (a subdomain of `t`'s own domain) is
    /// busy time shared out over the subdomains `t` holds there, each by
    /// its nominal cost, as the runtime's slab pass shares its time
    /// (`subdomain::slab`: the pass's time by cells, a workload's extra
    /// work each region's own): a burst that falls in it weighs on all of
    /// them, not on the one it fell in. A subdomain away from home is
    /// swept on its own, in both.
    pub(crate) fn add(
        &mut self,
        sub: usize,
        t: usize,
        nominal_ps: f64,
        took_ps: u64,
        set: &[usize],
    ) {
        let Loads {
            busy_ps, measured, ..
        } = self;
        match measured {
            Some(slabs) if slabs.domains[sub] == t => {
                slabs.last_ps[sub] = nominal_ps;
                // One not yet updated weighs as this one would at its size.
                let per_cell = nominal_ps / slabs.cells[sub].max(1.0);
                let weight = |h: usize| {
                    let last = slabs.last_ps[h];
                    if last > 0.0 {
                        last
                    } else {
                        per_cell * slabs.cells[h]
                    }
                };
                let home = || set.iter().filter(|&&h| slabs.domains[h] == t);
                let total: f64 = home().map(|&h| weight(h)).sum();
                if total > 0.0 {
                    for &h in home() {
                        busy_ps[h] += (took_ps as f64 * weight(h) / total).round() as u64;
                    }
                } else {
                    busy_ps[sub] += took_ps;
                }
            }
            _ => busy_ps[sub] += took_ps,
        }
        self.work_ps[sub] += nominal_ps;
        self.core[t].0 += nominal_ps;
        self.core[t].1 += took_ps;
    }
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
            pending: vec![0; n],
            marks_cold: false,
            nodes: vec![0; problem.threads],
            moves: 0,
            loads: None,
        }
    }

    /// Starts measuring object loads; balancers see them `measured` (as
    /// the runtime does, its subdomains' slabs given) or from the cost
    /// model.
    pub(crate) fn measure_loads(&mut self, measured: Option<Slabs>) {
        let (n, threads) = (self.counts.len(), self.updates.len());
        self.loads = Some(Loads {
            busy_ps: vec![0; n],
            work_ps: vec![0.0; n],
            core: vec![(0.0, 0); threads],
            measured,
        });
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
    fn busy_s(&self, sub: usize) -> Option<f64> {
        Some(self.loads.as_ref()?.busy_ps[sub] as f64 / PS_PER_S)
    }
    fn work_s(&self, sub: usize) -> Option<f64> {
        let loads = self.loads.as_ref().filter(|l| l.measured.is_none())?;
        Some(loads.work_ps[sub] / PS_PER_S)
    }
    fn core_time(&self, t: usize) -> Option<(f64, f64)> {
        let (work, took) = self.loads.as_ref()?.core[t];
        Some((work / PS_PER_S, took as f64 / PS_PER_S))
    }
}

impl schedule::Sets for Board {
    fn set_owner(&mut self, sub: usize, to: usize) {
        if self.marks_cold {
            self.pending[sub] |= Pending::COLD;
        }
        if self.nodes[self.owners[sub]] != self.nodes[to] {
            self.pending[sub] |= Pending::NODES;
        }
        self.owners[sub] = to;
        self.moves += 1;
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
        self.pending[sub] |= Pending::SOCKETS;
    }
}

/// The board, plus the subdomains' residuals when the simulation computes
/// them.
pub(super) struct SimView<'a> {
    pub(super) board: &'a Board,
    pub(super) subs: &'a [Subdomain],
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
    fn busy_s(&self, sub: usize) -> Option<f64> {
        self.board.busy_s(sub)
    }
    fn work_s(&self, sub: usize) -> Option<f64> {
        self.board.work_s(sub)
    }
    fn core_time(&self, t: usize) -> Option<(f64, f64)> {
        self.board.core_time(t)
    }
}

/// The balancer's schedule and caller, as the schedule core defines them.
pub(crate) struct Calls {
    pub(crate) rotation: Rotation,
    pub(crate) caller: Caller,
}

impl Calls {
    /// Balances if it is thread `t`'s turn at virtual time `now`; a call
    /// costs `cost(learned, moves)` picoseconds, `learned` being how it
    /// learned what it decided on if it balanced all threads together
    /// ([`Caller::learned`]), `moves` how many it made. `subs` are the
    /// subdomains when the simulation computes residuals (else empty).
    /// Returns the call's cost if it called.
    pub(crate) fn maybe_call(
        &mut self,
        t: usize,
        now: u64,
        cost: impl FnOnce(Option<Learns>, usize) -> u64,
        board: &mut Board,
        thread_sockets: &[usize],
        subs: &[Subdomain],
    ) -> Option<u64> {
        if !self.rotation.is_due(t, now) {
            return None;
        }
        let nodes = std::mem::take(&mut board.nodes);
        let view = SimView { board, subs };
        let groups = self.caller.groups(thread_sockets, &nodes);
        let moves = self.caller.decide(&view, groups, now as f64 / PS_PER_S);
        board.nodes = nodes;
        self.caller.apply(&moves, thread_sockets, board);
        let cost = cost(self.caller.learned(), moves.len());
        self.caller.spent(cost as f64 / PS_PER_S);
        if let Some(s) = self.caller.next_interval_s() {
            self.rotation.set_interval((s * PS_PER_S) as u64);
        }
        self.rotation.advance(t, now);
        Some(cost)
    }
}
