//! Every subdomain's shared state: its cells, the edges it publishes to its
//! neighbours, its update counter and its last local residual; and the
//! home slabs ([`slab`]) in which a thread keeps the cells of the
//! subdomains of its own domain that it holds, to sweep them in one pass.
//!
//! # Where a subdomain's cells are
//!
//! Its [`Place`], behind its cells' mutex: **home**, in its domain's
//! [`Slab`] (the runtime's, while the domain's thread holds it; the slab's
//! protocol is in `slab.rs`), or **on its own**, in two padded buffers of
//! its own (a subdomain moved to another thread, every subdomain in the
//! simulator, and one whose domain's thread is on another rank). A place
//! changes only under both the slab's lock and the cells' lock, taken in
//! that order, so either lock alone shows it steady.
//!
//! # Protocol
//!
//! * **Cells** on their own sit behind the mutex. Only the thread holding it
//!   updates them, so a subdomain that changes owner is handed over whole:
//!   no update is lost or done twice, and the counter equals the updates
//!   done (the handoff protocol, with its one honest race, is in
//!   `runtime/calls.rs`; the slab's own in `slab.rs`).
//! * **Edges** are how neighbours see the cells, without taking the lock
//!   (the edge publication protocol):
//!   - *State:* two copies of each side's outermost row/column, as
//!     `AtomicU64` bits, indexed by parity; and the `count`.
//!   - *Write* (whoever updates it, under its cells' or its slab's lock):
//!     update `c -> c + 1` stores copy `(c + 1) % 2` cell by cell (Relaxed),
//!     then `count.store(c + 1, Release)`. Sides on the boundary ring have
//!     no reader and are not written; nor are the sides between two
//!     subdomains swept together in one slab (neither reads the other's
//!     copy; the slab publishes them before either leaves it).
//!   - *Read* (a neighbour, no lock, in `fill_halo`): picks a version `v`,
//!     then loads copy `v % 2` cell by cell (Relaxed).
//!   - `sync`: `v` is the reader's own count `k`. The neighbour wrote copy
//!     `k % 2` when it made version `k`, before the barrier the reader has
//!     since crossed (the barrier's AcqRel/Release-Acquire chain makes those
//!     stores visible), and cannot overwrite it before making version
//!     `k + 2`, which needs the next barrier, which needs the reader. So the
//!     reader sees exactly version `k`: this is what makes sync bit-for-bit
//!     Jacobi (tested against a sequential Jacobi on every engine).
//!   - `ssync`/`async`: `v = count.load(Acquire)` of the neighbour, which
//!     makes at least version `v`'s stores visible. A fast neighbour may
//!     already be overwriting that copy with version `v + 2`; every cell is
//!     one atomic, so the reader gets, cell by cell, a value of version `v`
//!     or later: exactly the asynchronous iteration's model. No `f64` is torn
//!     and no access is a data race; nothing is waited for.
//! * **Counter** and **residual** sit on their own cache line.
//! * **Memory follows its thread.** A slab is allocated and first written by
//!   its domain's thread after it is pinned ([`slab::SlabGuard::touch`]), so
//!   that Linux's first-touch policy puts it on that thread's NUMA node; a
//!   subdomain leaving it is copied into buffers of its own, and one updated
//!   by a thread on another socket than the one that touched those is first
//!   copied into memory the new thread touches ([`Held::rehome`], under the
//!   lock). `first_toucher` records who did it.

mod slab;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;
use parking_lot::Mutex;

pub(crate) use slab::{Job, Slab, SlabGuard, Todo};

use crate::engine::Residual;
use crate::problem::{Neighbour, Problem, Side, SubdomainGeom};
use braid_kernel::{self as kernel, Block, Buffer};

/// Where a subdomain's current values are (see the top of this file).
#[derive(Debug)]
enum Place {
    /// In its domain's slab.
    Home,
    /// In buffers of its own: current and next values, both padded with the
    /// halo, each row's interior on a cache line ([`Block::padded`]); the
    /// boundary-ring parts of the halo are written when they are filled.
    /// Empty blocks: not allocated yet (see [`Held::ensure_touched`]).
    Own { cur: Buffer, next: Buffer },
}

/// A subdomain's cells: where they are, and what its workload's extra work
/// is measured against.
#[derive(Debug)]
pub(crate) struct Cells {
    place: Place,
    /// The fastest plain update of these cells seen, in ns (0: none yet):
    /// what a workload's extra work is measured against.
    fastest_ns: u64,
}

/// A subdomain's cells, locked: the only way to update them on their own.
/// It carries its own subdomain, so the cells of one cannot be passed to
/// another's update.
pub(crate) struct Held<'a> {
    sub: &'a Subdomain,
    cells: parking_lot::MutexGuard<'a, Cells>,
}

/// One published copy of the four edges, as `f64` bits.
#[derive(Debug)]
struct Edges {
    sides: [Box<[AtomicU64]>; 4],
}

/// Hot counters of one subdomain, on their own cache line.
#[derive(Debug)]
struct Stats {
    count: AtomicU64,
    /// The last squared local residual computed; infinite until the first
    /// update that computes one, so that a residual estimate (their sum)
    /// cannot call a run converged while some subdomain has not been looked
    /// at. With 0 there, a thread held off its core at the start let the
    /// others' residuals alone meet the line: the estimate was refuted, its
    /// line cut by the (huge) miss, and the run went on to 1e-8 for a 1e-4
    /// target.
    residual_sq: AtomicU64,
    /// The count of the state whose residual `residual_sq` is, and the
    /// residual round it was computed for (`schedule::residual`; 0: none
    /// yet, state 0's being the problem's `r0`, never swept).
    residual_at: AtomicU64,
    residual_round: AtomicU64,
    owner: AtomicUsize,
    /// The thread whose writes first touched the current cells.
    toucher: AtomicUsize,
    /// Nanoseconds spent updating it, when the run measures object loads
    /// (written by its updater, under its cells' or its slab's lock; read by
    /// anyone).
    busy_ns: AtomicU64,
}

#[derive(Debug)]
pub(crate) struct Subdomain {
    pub geom: SubdomainGeom,
    cells: Mutex<Cells>,
    edges: [Edges; 2],
    stats: CachePadded<Stats>,
}

/// The words before the cells in [`Subdomains::pack`]: count, residual,
/// busy time, the count and the round the residual is of.
const PACKED_HEAD: usize = 5;

/// Per side (`Side::index`), the bits of a neighbour's edge to read instead
/// of what it has published: an edge as it arrived over the simulator's
/// network (`sim/network.rs`). `None`: read the neighbour.
pub(crate) type Aged<'a> = [Option<&'a [u64]>; 4];

/// No side aged: every side read from the neighbour.
const FRESH: Aged<'static> = [None; 4];

/// Which version of its neighbours' edges an update reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EdgeVersion {
    /// The version equal to the updating subdomain's own count (sync).
    Own,
    /// Whatever each neighbour has published last (ssync, async).
    Latest,
}

/// How a subdomain's cells lie in buffers of their own: rows padded to
/// whole cache lines, each row's interior on one (measured: `git show 333740e:docs/speed.md`).
fn layout(geom: &SubdomainGeom) -> Block {
    Block::padded(geom.height, geom.width)
}

/// Where the cells along `side` of a block lie, in edge order (west to
/// east, north to south): the first, the step between two, how many. At
/// `inset` 0 they are the halo; at 1 the outermost interior cells, what
/// the neighbour across `side` reads.
fn along(b: Block, side: Side, inset: usize) -> (usize, usize, usize) {
    match side {
        Side::North => (b.at(inset, 1), 1, b.w),
        Side::South => (b.at(b.h + 1 - inset, 1), 1, b.w),
        Side::West => (b.at(1, inset), b.stride, b.h),
        Side::East => (b.at(1, b.w + 1 - inset), b.stride, b.h),
    }
}

/// The halo cells on `side` of a block, in edge order.
fn halo(cur: &mut [f64], b: Block, side: Side) -> std::iter::StepBy<std::slice::IterMut<'_, f64>> {
    let (first, step, n) = along(b, side, 0);
    cur[first..first + (n - 1) * step + 1]
        .iter_mut()
        .step_by(step)
}

/// The interior cells along `side` of a block, in edge order.
fn outermost(cur: &[f64], b: Block, side: Side) -> std::iter::StepBy<std::slice::Iter<'_, f64>> {
    let (first, step, n) = along(b, side, 1);
    cur[first..first + (n - 1) * step + 1].iter().step_by(step)
}

/// Two buffers of `geom`'s layout holding the initial values, halo
/// included (the boundary ring's parts never change afterwards).
fn initial_buffers(problem: &Problem, geom: &SubdomainGeom) -> (Buffer, Buffer) {
    let b = layout(geom);
    let mut cur = Buffer::new(b, 0.0);
    for i in 0..b.h + 2 {
        for j in 0..b.w + 2 {
            cur[b.at(i, j)] = problem.initial_value(geom.row0 - 1 + i, geom.col0 - 1 + j);
        }
    }
    (cur.beside(), cur)
}

/// Two buffers of an empty block: cells not allocated yet.
fn untouched() -> Place {
    let none = Block::tight(0, 0);
    Place::Own {
        cur: Buffer::new(none, 0.0),
        next: Buffer::new(none, 0.0),
    }
}

impl Cells {
    fn is_touched(&self) -> bool {
        match &self.place {
            Place::Home => true,
            Place::Own { cur, .. } => !cur.block().is_empty(),
        }
    }
}

impl Subdomain {
    /// A subdomain whose cells are at `place`, its edges published from
    /// the initial values.
    fn new(problem: &Problem, geom: &SubdomainGeom, place: Place) -> Self {
        let make_edges = || Edges {
            sides: Side::ALL.map(|side| {
                (0..geom.edge_cells(side))
                    .map(|_| AtomicU64::new(0))
                    .collect()
            }),
        };
        let sub = Subdomain {
            geom: geom.clone(),
            cells: Mutex::new(Cells {
                place,
                fastest_ns: 0,
            }),
            edges: [make_edges(), make_edges()],
            stats: CachePadded::new(Stats {
                count: AtomicU64::new(0),
                residual_sq: AtomicU64::new(f64::INFINITY.to_bits()),
                residual_at: AtomicU64::new(0),
                residual_round: AtomicU64::new(0),
                owner: AtomicUsize::new(geom.domain),
                toucher: AtomicUsize::new(usize::MAX),
                busy_ns: AtomicU64::new(0),
            }),
        };
        // The initial edges, from a scratch copy of the initial values.
        let (cur, _) = initial_buffers(problem, geom);
        let b = layout(geom);
        sub.publish(&cur, b, 0, |_| false);
        sub.publish(&cur, b, 1, |_| false);
        sub
    }

    /// The thread that first wrote the current cells (`usize::MAX` when the
    /// calling thread of [`Subdomains::standalone`] did).
    pub(crate) fn first_toucher(&self) -> usize {
        self.stats.toucher.load(Ordering::Relaxed)
    }

    /// Updates done so far.
    pub(crate) fn count(&self) -> u64 {
        self.stats.count.load(Ordering::Acquire)
    }

    /// Sets the count as if that many updates had been made (tests that
    /// script a run's progress).
    #[cfg(test)]
    pub(crate) fn set_count(&self, count: u64) {
        self.stats.count.store(count, Ordering::Release);
    }

    /// The last squared local residual computed (of the state before the
    /// update that computed it); infinite before the first.
    pub(crate) fn residual_sq(&self) -> f64 {
        f64::from_bits(self.stats.residual_sq.load(Ordering::Relaxed))
    }

    /// The count of the state whose residual [`Self::residual_sq`] is (0:
    /// none yet).
    pub(crate) fn residual_at(&self) -> u64 {
        self.stats.residual_at.load(Ordering::Relaxed)
    }

    /// The residual round [`Self::residual_sq`] was computed for (0: none
    /// yet).
    pub(crate) fn residual_round(&self) -> u64 {
        self.stats.residual_round.load(Ordering::Relaxed)
    }

    /// Records the residual of the state it is at now, computed for
    /// `round` (before its update's count is published, so that whoever
    /// sees the count sees it).
    fn set_residual(&self, round: u64, residual_sq: f64) {
        self.stats
            .residual_sq
            .store(residual_sq.to_bits(), Ordering::Relaxed);
        let at = self.stats.count.load(Ordering::Relaxed);
        self.stats.residual_at.store(at, Ordering::Relaxed);
        self.stats.residual_round.store(round, Ordering::Relaxed);
    }

    /// Seconds spent updating it so far (when measured).
    pub(crate) fn busy_s(&self) -> f64 {
        self.stats.busy_ns.load(Ordering::Relaxed) as f64 / 1e9
    }

    /// Adds `ns` to its busy time (by its updater: nobody else writes it).
    pub(crate) fn add_busy_ns(&self, ns: u64) {
        let busy = &self.stats.busy_ns;
        busy.store(busy.load(Ordering::Relaxed) + ns, Ordering::Relaxed);
    }

    pub(crate) fn owner(&self) -> usize {
        self.stats.owner.load(Ordering::Acquire)
    }

    pub(crate) fn set_owner(&self, thread: usize) {
        self.stats.owner.store(thread, Ordering::Release);
    }

    /// Locks the cells.
    pub(crate) fn lock(&self) -> Held<'_> {
        Held {
            sub: self,
            cells: self.cells.lock(),
        }
    }

    /// Locks the cells if nobody holds them.
    pub(crate) fn try_lock(&self) -> Option<Held<'_>> {
        Some(Held {
            sub: self,
            cells: self.cells.try_lock()?,
        })
    }

    /// Fills the halo of block `b` (at the start of `cur`) with the
    /// neighbours' edges: of `version`, or on a side that `aged` gives,
    /// those bits (the simulator's network: what a neighbour on another
    /// node sent, as it arrives). A neighbour `inside(n)` is left alone:
    /// its cells are already there (a slab's). Returns, reading
    /// [`EdgeVersion::Latest`], how far this subdomain is ahead of its
    /// furthest-behind neighbour ([`Self::lag`], from the counts it read
    /// anyway: another thread's count is a cache miss); 0 reading its own.
    fn fill_halo(
        &self,
        cur: &mut [f64],
        b: Block,
        subs: &[Subdomain],
        version: EdgeVersion,
        aged: &Aged<'_>,
        inside: impl Fn(usize) -> bool,
    ) -> u64 {
        let own = self.stats.count.load(Ordering::Relaxed);
        let mut lag = 0;
        for side in Side::ALL {
            let Neighbour::Sub(n) = self.geom.neighbour(side) else {
                continue;
            };
            if inside(n) {
                if version == EdgeVersion::Latest {
                    lag = lag.max(own.saturating_sub(subs[n].count()));
                }
                continue;
            }
            if let Some(bits) = aged[side.index()] {
                for (c, &e) in halo(cur, b, side).zip(bits) {
                    *c = f64::from_bits(e);
                }
                if version == EdgeVersion::Latest {
                    lag = lag.max(own.saturating_sub(subs[n].count()));
                }
                continue;
            }
            let v = self.fill_side(cur, b, side, &subs[n], version, own);
            lag = lag.max(own.saturating_sub(v));
        }
        lag
    }

    /// Fills the halo on `side` of block `b` (at the start of `cur`) from
    /// neighbour `other`'s published edge: the version `own` (sync's), or
    /// its latest. Returns the version read.
    #[inline]
    fn fill_side(
        &self,
        cur: &mut [f64],
        b: Block,
        side: Side,
        other: &Subdomain,
        version: EdgeVersion,
        own: u64,
    ) -> u64 {
        let v = match version {
            EdgeVersion::Own => own,
            EdgeVersion::Latest => other.count(),
        };
        let edge = &other.edges[(v % 2) as usize].sides[side.opposite().index()];
        // Zipped, so that no cell pays a bounds check.
        for (c, e) in halo(cur, b, side).zip(edge.iter()) {
            *c = f64::from_bits(e.load(Ordering::Relaxed));
        }
        v
    }

    /// Publishes into `copy` the sides of block `b` (at the start of `cur`)
    /// that a neighbour reads: not those on the boundary ring (no reader),
    /// nor those facing a neighbour `inside(n)` (a slab's, which reads the
    /// cells themselves).
    fn publish(&self, cur: &[f64], b: Block, copy: usize, inside: impl Fn(usize) -> bool) {
        for side in Side::ALL {
            match self.geom.neighbour(side) {
                Neighbour::Sub(n) if !inside(n) => self.publish_side(cur, b, side, copy),
                _ => {}
            }
        }
    }

    /// Publishes one side of block `b` (at the start of `cur`) into `copy`.
    fn publish_side(&self, cur: &[f64], b: Block, side: Side, copy: usize) {
        let store = |a: &AtomicU64, v: f64| a.store(v.to_bits(), Ordering::Relaxed);
        for (a, &v) in self.edges[copy].sides[side.index()]
            .iter()
            .zip(outermost(cur, b, side))
        {
            store(a, v);
        }
    }

    /// Appends the latest published version of the edge on `side` (what
    /// the subdomain across it reads): its count, then its values as bits.
    /// A rank sends this to the peer that holds the subdomain across `side`
    /// (see `runtime/peers.rs`).
    pub(crate) fn export_edge(&self, side: Side, out: &mut Vec<u64>) {
        let v = self.count();
        out.push(v);
        let edge = &self.edges[(v % 2) as usize].sides[side.index()];
        out.extend(edge.iter().map(|a| a.load(Ordering::Relaxed)));
    }

    /// Stores a peer's [`Self::export_edge`] into this subdomain, a *ghost*
    /// here (a peer rank's, which no worker of this rank updates): the values
    /// into the copy of the count's parity, then the count with Release, as
    /// an update publishes them. Only the rank's exchanging thread calls it.
    #[cfg(any(test, feature = "mpi"))]
    pub(crate) fn import_edge(&self, side: Side, data: &[u64]) {
        let (&count, values) = data.split_first().expect("an edge starts with its count");
        let edge = &self.edges[(count % 2) as usize].sides[side.index()];
        assert_eq!(edge.len(), values.len(), "an edge of the wrong length");
        for (a, &v) in edge.iter().zip(values) {
            a.store(v, Ordering::Relaxed);
        }
        self.stats.count.store(count, Ordering::Release);
    }

    /// Stores a copy of a neighbour's edge that a subdomain arriving from
    /// another rank brought with it (`runtime/migrate.rs`): the values into
    /// *both* copies, so that a reader finds them whatever parity it picks,
    /// and the count raised to theirs if it is behind (a ghost's count only
    /// grows). Without it, the arrival would read this side of `n` as this
    /// rank last heard of it, which may be never: this rank may not have
    /// read that side before. Only the rank's exchanging thread calls it.
    pub(crate) fn import_edge_everywhere(&self, side: Side, data: &[u64]) {
        let (&count, values) = data.split_first().expect("an edge starts with its count");
        for copy in &self.edges {
            let edge = &copy.sides[side.index()];
            assert_eq!(edge.len(), values.len(), "an edge of the wrong length");
            for (a, &v) in edge.iter().zip(values) {
                a.store(v, Ordering::Relaxed);
            }
        }
        self.stats.count.fetch_max(count, Ordering::Release);
    }

    /// How many `u64`s [`Subdomains::pack`] writes for this subdomain (both
    /// ranks of a move know it from the geometry alone).
    pub(crate) fn packed_len(&self) -> usize {
        let edges: usize = Side::ALL
            .into_iter()
            .filter(|&side| matches!(self.geom.neighbour(side), Neighbour::Sub(_)))
            .map(|side| 1 + self.edge_len(side))
            .sum();
        PACKED_HEAD + self.geom.cells() + edges
    }

    /// Cells on `side`'s edge.
    pub(crate) fn edge_len(&self, side: Side) -> usize {
        self.edges[0].sides[side.index()].len()
    }

    /// Largest amount by which this subdomain's count is ahead of a
    /// neighbour's (0 when none is behind).
    pub(crate) fn lag(&self, subs: &[Subdomain]) -> u64 {
        crate::schedule::lag(self.count(), &self.geom.neighbours, |n| subs[n].count())
    }
}

impl Held<'_> {
    /// Whether the cells are in the home slab, not here: the slab's holder
    /// updates them ([`slab`]).
    pub(crate) fn is_home(&self) -> bool {
        matches!(self.cells.place, Place::Home)
    }

    /// The buffers of cells on their own.
    fn own(&mut self) -> (&mut Buffer, &mut Buffer) {
        match &mut self.cells.place {
            Place::Own { cur, next } => (cur, next),
            Place::Home => panic!(
                "the cells of subdomain {} are in its slab",
                self.sub.geom.id
            ),
        }
    }

    /// Appends the interior cells, row by row (the initial values if they
    /// were never touched). Cells on their own only.
    fn interior_into(&mut self, problem: &Problem, out: &mut Vec<f64>) {
        let g = &self.sub.geom;
        if !self.cells.is_touched() {
            for i in 0..g.height {
                out.extend((0..g.width).map(|j| problem.initial_value(g.row0 + i, g.col0 + j)));
            }
            return;
        }
        let b = layout(g);
        let (cur, _) = self.own();
        for i in 0..g.height {
            out.extend_from_slice(&cur[b.at(i + 1, 1)..b.at(i + 1, 1) + g.width]);
        }
    }

    /// Allocates cells of its own on the calling thread (`thread`) if nobody
    /// has yet: a subdomain handed over before its first owner got to it is
    /// allocated by whoever updates it first.
    pub(crate) fn ensure_touched(&mut self, problem: &Problem, thread: usize) {
        if !self.cells.is_touched() {
            let (cur, next) = initial_buffers(problem, &self.sub.geom);
            self.cells.place = Place::Own { cur, next };
            self.sub.stats.toucher.store(thread, Ordering::Relaxed);
        }
    }

    /// Moves cells of its own into memory this thread touches first (fresh
    /// pages: first touch places them on this thread's NUMA node), frees
    /// the old ones, and records this thread as their first toucher.
    pub(crate) fn rehome(&mut self, thread: usize) {
        let (cur, next) = self.own();
        *cur = cur.clone();
        // Half a page from the new `cur`, as every pair is (`Buffer::beside`).
        *next = next.copied_beside(cur);
        self.sub.stats.toucher.store(thread, Ordering::Relaxed);
    }

    /// One Jacobi update: [`Self::begin_update`] then [`Self::finish_update`],
    /// at cost factor `work` (the workload's, 1 for a plain update; the
    /// extra work ends early once `stopped` says so). `pause` runs between
    /// the two (a test hook to stall a thread inside an update). Returns
    /// the lag it read ([`Self::begin_update`]).
    pub(crate) fn update(
        &mut self,
        subs: &[Subdomain],
        version: EdgeVersion,
        round: Option<u64>,
        work: f64,
        stopped: impl Fn() -> bool,
        pause: impl FnOnce(),
    ) -> u64 {
        // A uniform run never reads the clock here, nor calls out: the
        // extra work is out of line.
        let began = (work > 1.0).then(Instant::now);
        let lag = self.begin_update(subs, version, round);
        let residual = match round {
            Some(_) => Residual::Compute,
            None => Residual::Skip,
        };
        if let Some(began) = began {
            let (b, fastest) = (layout(&self.sub.geom), &mut self.cells.fastest_ns);
            let plain = began.elapsed().as_nanos() as u64;
            if *fastest == 0 || plain < *fastest {
                *fastest = plain.max(1);
            }
            let target = extra_time(work, *fastest);
            let (cur, next) = self.own();
            extra_work(cur, next, b, residual, target, stopped);
        }
        pause();
        self.finish_update();
        lag
    }

    /// Adds the time an update took to this subdomain's busy time (the
    /// caller holds the lock, so nobody else writes it meanwhile).
    pub(crate) fn add_busy(&mut self, ns: u64) {
        self.sub.add_busy_ns(ns);
    }

    /// Computes the next values into the spare buffer, reading the
    /// neighbours' edges as published now, and with `round`, the local
    /// residual of the values it updates, for that residual round
    /// (`schedule::residual`). Nothing is visible to others until
    /// [`Self::finish_update`]. Returns, reading the latest edges, how far
    /// it is ahead of its furthest-behind neighbour as it read them
    /// ([`Subdomain::lag`]); 0 reading its own version.
    pub(crate) fn begin_update(
        &mut self,
        subs: &[Subdomain],
        version: EdgeVersion,
        round: Option<u64>,
    ) -> u64 {
        self.begin_update_aged(subs, version, round, &FRESH)
    }

    /// [`Self::begin_update`], reading the sides that `aged` gives from
    /// there instead of from the neighbours (the simulator's network).
    pub(crate) fn begin_update_aged(
        &mut self,
        subs: &[Subdomain],
        version: EdgeVersion,
        round: Option<u64>,
        aged: &Aged<'_>,
    ) -> u64 {
        let sub = self.sub;
        let b = layout(&sub.geom);
        let (cur, next) = self.own();
        let lag = sub.fill_halo(cur, b, subs, version, aged, |_| false);
        match round {
            Some(round) => {
                let r = kernel::sweep_block_with_residual(cur, next, b);
                sub.set_residual(round, r);
            }
            None => kernel::sweep_block(cur, next, b),
        }
        lag
    }

    /// Makes the values computed by [`Self::begin_update`] current and
    /// publishes them: edges first, then the count (`Release`).
    pub(crate) fn finish_update(&mut self) {
        let sub = self.sub;
        let b = layout(&sub.geom);
        let c = sub.stats.count.load(Ordering::Relaxed);
        let (cur, next) = self.own();
        std::mem::swap(cur, next);
        sub.publish(cur, b, ((c + 1) % 2) as usize, |_| false);
        sub.stats.count.store(c + 1, Ordering::Release);
    }
}

/// How long a workload's extra work on an update of cost factor `work`
/// takes, against the fastest plain update seen (`fastest_ns`).
fn extra_time(work: f64, fastest_ns: u64) -> Duration {
    Duration::from_nanos(((work - 1.0) * fastest_ns as f64) as u64)
}

/// A workload's extra work: an update of cost factor `work` (above 1; the
/// caller checks) takes `work` times as long as a plain one, so the extra
/// part sweeps the cells of block `b` again, a band of rows at a time,
/// until it has taken `target` (`(work - 1)` times the fastest plain update
/// seen: a preempted one is not the measure). Time, not a count of sweeps:
/// a sweep repeated at once finds its cells in cache, and costs from a
/// third to all of the first one depending on the machine's caches, where
/// the simulator charges a factor-`work` update `work` times the cells'
/// cost. Each sweep rewrites the spare buffer with the very values the
/// update computed (same inputs, same formula), so the result cannot
/// change: real loads, stores and flops on the subdomain's own data.
/// `black_box` keeps the compiler from seeing that the sweeps repeat.
#[cold]
#[inline(never)]
fn extra_work(
    cur: &[f64],
    next: &mut [f64],
    b: Block,
    residual: Residual,
    target: Duration,
    stopped: impl Fn() -> bool,
) {
    // Bands of an eighth of the rows: the time is checked between them.
    let band = b.h.div_ceil(8).max(1);
    let began = Instant::now();
    let mut row = 0;
    while began.elapsed() < target && !stopped() {
        let rows = band.min(b.h - row);
        let at = row * b.stride;
        let block = Block { h: rows, ..b };
        let (cur, next) = (&cur[at..], &mut next[at..]);
        match residual {
            Residual::Compute => {
                std::hint::black_box(kernel::sweep_block_with_residual(cur, next, block));
            }
            Residual::Skip => kernel::sweep_block(cur, next, block),
        }
        std::hint::black_box(&mut *next);
        row = (row + rows) % b.h;
    }
}

/// Every subdomain's shared state, and the home slabs of the domains whose
/// threads keep one. Derefs to the subdomains, in id order.
#[derive(Debug)]
pub(crate) struct Subdomains {
    subs: Vec<Subdomain>,
    /// By domain: its slab, where its thread keeps one.
    slabs: Vec<Option<Slab>>,
}

impl std::ops::Deref for Subdomains {
    type Target = [Subdomain];
    fn deref(&self) -> &[Subdomain] {
        &self.subs
    }
}

impl Subdomains {
    /// None at all (a simulation that only counts).
    pub(crate) fn none() -> Self {
        Subdomains {
            subs: Vec::new(),
            slabs: Vec::new(),
        }
    }

    /// Every subdomain with cells of its own, allocated and initialised
    /// here (the simulator, and tests).
    pub(crate) fn standalone(problem: &Problem) -> Self {
        let subs = problem
            .subs
            .iter()
            .map(|g| {
                let (cur, next) = initial_buffers(problem, g);
                Subdomain::new(problem, g, Place::Own { cur, next })
            })
            .collect();
        Subdomains {
            subs,
            slabs: (0..problem.threads).map(|_| None).collect(),
        }
    }

    /// The runtime's: each domain that `homes` picks gets a slab, which its
    /// thread allocates after pinning ([`SlabGuard::touch`]), holding its
    /// subdomains' cells; the others' subdomains have cells of their own, not
    /// allocated (across ranks, a rank holds the edges of the whole problem
    /// but never all its cells).
    pub(crate) fn with_slabs(problem: &Problem, homes: impl Fn(usize) -> bool) -> Self {
        let subs = problem
            .subs
            .iter()
            .map(|g| {
                let place = if homes(g.domain) {
                    Place::Home
                } else {
                    untouched()
                };
                Subdomain::new(problem, g, place)
            })
            .collect();
        Subdomains {
            subs,
            slabs: (0..problem.threads)
                .map(|d| homes(d).then(|| Slab::new(problem, d)))
                .collect(),
        }
    }

    /// Domain `domain`'s slab, if its thread keeps one here.
    pub(crate) fn slab(&self, domain: usize) -> Option<&Slab> {
        self.slabs.get(domain)?.as_ref()
    }

    /// Subdomain `s`'s slab, locked, if its cells are in it now. Takes the
    /// slab's lock first and the cells' second, the order every place
    /// change takes them in.
    fn slab_holding(&self, s: usize) -> Option<SlabGuard<'_>> {
        let slab = self.slab(self.subs[s].geom.domain)?;
        let guard = slab.lock();
        guard.is_live(s).then_some(guard)
    }

    /// Appends subdomain `s`'s interior cells, row by row (the initial
    /// values if they were never touched).
    pub(crate) fn interior_into(&self, problem: &Problem, s: usize, out: &mut Vec<f64>) {
        match self.slab_holding(s) {
            Some(slab) => slab.interior_into(problem, s, out),
            None => self.subs[s].lock().interior_into(problem, out),
        }
    }

    /// The padded global grid assembled from the subdomains' current cells.
    pub(crate) fn assemble(&self, problem: &Problem) -> ndarray::Array2<f64> {
        let mut grid = problem.initial_grid();
        let mut row = Vec::new();
        for s in 0..self.subs.len() {
            row.clear();
            self.interior_into(problem, s, &mut row);
            place_interior(&mut grid, &self.subs[s].geom, &row);
        }
        grid
    }

    /// `sum r^2` over subdomain `s`'s interior, `r = (N + S + W + E) - 4 u`
    /// as [`crate::problem::residual_norm`] computes it, of its cells as
    /// they are and its neighbours' latest edges (a ghost's, across ranks):
    /// its part of the exact residual once every thread has stopped and
    /// the edges are settled (`runtime/peers.rs`).
    pub(crate) fn exact_residual_sq(&self, problem: &Problem, s: usize) -> f64 {
        let sub = &self.subs[s];
        let g = &sub.geom;
        let b = layout(g);
        // Its cells with their halo, wherever they are, in a scratch block.
        let mut cur = Buffer::new(b, 0.0);
        let mut interior = Vec::with_capacity(g.cells());
        self.interior_into(problem, s, &mut interior);
        for i in 0..b.h + 2 {
            for j in 0..b.w + 2 {
                cur[b.at(i, j)] = problem.initial_value(g.row0 - 1 + i, g.col0 - 1 + j);
            }
        }
        for (i, row) in interior.chunks_exact(g.width).enumerate() {
            cur[b.at(i + 1, 1)..b.at(i + 1, 1) + g.width].copy_from_slice(row);
        }
        sub.fill_halo(&mut cur, b, self, EdgeVersion::Latest, &FRESH, |_| false);
        crate::problem::residual_sq(g.height, g.width, |i, j| cur[b.at(i, j)])
    }

    /// Appends everything another rank needs to go on updating subdomain
    /// `s` (`runtime/migrate.rs`): its count, last residual, busy time, the
    /// count and round that residual is of, its interior cells, and the edge each neighbour shows it, as this
    /// rank sees them. Takes its slab's lock and then its cells', so it
    /// waits for an update in flight (the old owner's last one: the owner
    /// was changed first); cells in the slab leave it first (which
    /// publishes the edges its neighbours there show it).
    pub(crate) fn pack(&self, problem: &Problem, s: usize, out: &mut Vec<u64>) {
        if let Some(mut slab) = self.slab_holding(s) {
            slab.export(self, problem, s, usize::MAX);
        }
        let sub = &self.subs[s];
        let mut cells = sub.lock();
        out.push(sub.stats.count.load(Ordering::Relaxed));
        out.push(sub.stats.residual_sq.load(Ordering::Relaxed));
        out.push(sub.stats.busy_ns.load(Ordering::Relaxed));
        out.push(sub.stats.residual_at.load(Ordering::Relaxed));
        out.push(sub.stats.residual_round.load(Ordering::Relaxed));
        let mut interior = Vec::with_capacity(sub.geom.cells());
        cells.interior_into(problem, &mut interior);
        out.extend(interior.iter().map(|v| v.to_bits()));
        for side in Side::ALL {
            if let Neighbour::Sub(n) = sub.geom.neighbour(side) {
                self.subs[n].export_edge(side.opposite(), out);
            }
        }
    }

    /// Installs what [`Self::pack`] wrote on another rank into subdomain
    /// `s`, for `thread` (whose rank this is) to update next: the cells (of
    /// its own, allocated here if they never were; `thread`, if `s` is of
    /// its own domain, takes them into its slab), the stats, the edges of
    /// the neighbours that `foreign` says another rank holds, then this
    /// subdomain's own edges in both copies and, last, its count with
    /// Release, as an update publishes them. The caller sets the owner
    /// afterwards.
    pub(crate) fn unpack(
        &self,
        problem: &Problem,
        s: usize,
        thread: usize,
        data: &[u64],
        foreign: impl Fn(usize) -> bool,
    ) {
        let sub = &self.subs[s];
        assert_eq!(
            data.len(),
            sub.packed_len(),
            "a packed subdomain of the wrong size"
        );
        assert!(
            self.slab_holding(s).is_none(),
            "subdomain {s} arrives while its cells are in its slab here"
        );
        let mut held = sub.lock();
        held.ensure_touched(problem, thread);
        let g = &sub.geom;
        let (head, rest) = data.split_at(PACKED_HEAD);
        let (interior, mut edges) = rest.split_at(g.cells());
        let b = layout(g);
        {
            let (cur, _) = held.own();
            for (i, row) in interior.chunks_exact(g.width).enumerate() {
                let at = b.at(i + 1, 1);
                for (c, &v) in cur[at..at + g.width].iter_mut().zip(row) {
                    *c = f64::from_bits(v);
                }
            }
        }
        sub.stats.toucher.store(thread, Ordering::Relaxed);
        sub.stats.residual_sq.store(head[1], Ordering::Relaxed);
        sub.stats.residual_at.store(head[3], Ordering::Relaxed);
        sub.stats.residual_round.store(head[4], Ordering::Relaxed);
        sub.stats.busy_ns.store(head[2], Ordering::Relaxed);
        for side in Side::ALL {
            if let Neighbour::Sub(n) = g.neighbour(side) {
                let len = 1 + sub.edge_len(side);
                let (edge, more) = edges.split_at(len);
                if foreign(n) {
                    self.subs[n].import_edge_everywhere(side.opposite(), edge);
                }
                edges = more;
            }
        }
        let (cur, _) = held.own();
        sub.publish(cur, b, 0, |_| false);
        sub.publish(cur, b, 1, |_| false);
        sub.stats.count.store(head[0], Ordering::Release);
    }
}

/// Writes a subdomain's interior cells, row by row as
/// [`Subdomains::interior_into`] gives them, into a padded global grid.
pub(crate) fn place_interior(grid: &mut ndarray::Array2<f64>, g: &SubdomainGeom, cells: &[f64]) {
    assert_eq!(cells.len(), g.cells(), "an interior of the wrong size");
    for (i, row) in cells.chunks_exact(g.width).enumerate() {
        for (j, &v) in row.iter().enumerate() {
            grid[[g.row0 + i, g.col0 + j]] = v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::sequential_jacobi;

    /// Single-threaded, in-order sweeps with own-version edges are Jacobi.
    #[test]
    fn own_version_sweeps_equal_sequential_jacobi() {
        let p = Problem::new(6, 3, 4).unwrap();
        let subs = Subdomains::standalone(&p);
        for _ in 0..5 {
            // Update in reverse order so that some neighbours are already one
            // version ahead when read: the parity copies must hide that.
            for s in subs.iter().rev() {
                s.lock()
                    .update(&subs, EdgeVersion::Own, Some(1), 1.0, || false, || {});
            }
        }
        assert_eq!(subs.assemble(&p), sequential_jacobi(&p, 5));
    }

    #[test]
    fn lag_counts_how_far_ahead_of_the_slowest_neighbour() {
        let p = Problem::new(4, 2, 1).unwrap();
        let subs = Subdomains::standalone(&p);
        for _ in 0..3 {
            subs[0]
                .lock()
                .update(&subs, EdgeVersion::Latest, None, 1.0, || false, || {});
        }
        assert_eq!(subs[0].lag(&subs), 3);
        assert_eq!(subs[1].lag(&subs), 0);
    }
}
