//! A subdomain's shared state: its cells, the edges it publishes to its
//! neighbours, its update counter and its last local residual.
//!
//! # Protocol
//!
//! * **Cells** sit behind a mutex. Only the thread holding it updates them, so
//!   a subdomain that changes owner is handed over whole: no update is lost or
//!   done twice, and the counter equals the updates done (the handoff
//!   protocol, with its one honest race, is in `runtime/balancer.rs`).
//! * **Edges** are how neighbours see the cells, without taking the lock
//!   (the edge publication protocol):
//!   - *State:* two copies of each side's outermost row/column, as
//!     `AtomicU64` bits, indexed by parity; and the `count`.
//!   - *Write* (the owner, under the cells' lock, in `finish_update`): update
//!     `c -> c + 1` stores copy `(c + 1) % 2` cell by cell (Relaxed), then
//!     `count.store(c + 1, Release)`. Sides on the boundary ring have no
//!     reader and are not written.
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
//! * **Memory follows its thread.** The real runtime builds subdomains
//!   [untouched](build_untouched) (edges published, cells not yet
//!   allocated); each worker allocates and first writes its own subdomains'
//!   cells after it is pinned ([`Subdomain::touch`]), so that Linux's
//!   first-touch policy puts them on its socket's NUMA node. A subdomain
//!   updated by a thread on another socket than the one that touched its
//!   memory is first copied into memory the new thread touches
//!   ([`Cells::rehome`], under the lock). `first_toucher` records who did it.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;
use parking_lot::Mutex;

use crate::engine::Residual;
use crate::kernel::{self, Block, Buffer};
use crate::problem::{Neighbour, Problem, Side, SubdomainGeom};

/// The cells of one subdomain: current and next values, both padded with the
/// halo, each row's interior on a cache line ([`Block::padded`]). The
/// boundary-ring parts of the halo are written once, at creation.
#[derive(Debug)]
pub(crate) struct Cells {
    cur: Buffer,
    next: Buffer,
    /// The fastest plain update of these cells seen, in ns (0: none yet):
    /// what a workload's extra work is measured against.
    fastest_ns: u64,
}

/// A subdomain's cells, locked: the only way to update them. It carries its
/// own subdomain, so the cells of one cannot be passed to another's update.
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
    /// The last update's squared local residual; infinite until the first
    /// update computes one, so that a residual estimate (their sum) cannot
    /// call a run converged while some subdomain has not been looked at.
    /// With 0 there, a thread held off its core at the start let the others'
    /// residuals alone meet the line: the estimate was refuted, its line cut
    /// by the (huge) miss, and the run went on to 1e-8 for a 1e-4 target.
    residual_sq: AtomicU64,
    owner: AtomicUsize,
    /// The thread whose writes first touched the current cells.
    toucher: AtomicUsize,
    /// Nanoseconds spent updating it, when the run measures object loads
    /// (written under the cells' lock, read by anyone).
    busy_ns: AtomicU64,
}

#[derive(Debug)]
pub(crate) struct Subdomain {
    pub geom: SubdomainGeom,
    cells: Mutex<Cells>,
    edges: [Edges; 2],
    stats: CachePadded<Stats>,
}

/// The words before the cells in [`Subdomain::pack`]: count, residual,
/// busy time.
const PACKED_HEAD: usize = 3;

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

/// How a subdomain's cells lie in memory: rows padded to whole cache lines,
/// each row's interior on one (measured: docs/speed.md).
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

impl Cells {
    /// Both buffers, halo included, from the initial global grid: the
    /// boundary parts of the halo never change afterwards.
    fn initial(problem: &Problem, geom: &SubdomainGeom) -> Cells {
        let b = layout(geom);
        let mut cur = Buffer::new(b, 0.0);
        for i in 0..b.h + 2 {
            for j in 0..b.w + 2 {
                cur[b.at(i, j)] = problem.initial_value(geom.row0 - 1 + i, geom.col0 - 1 + j);
            }
        }
        Cells {
            next: cur.clone(),
            cur,
            fastest_ns: 0,
        }
    }

    /// Not allocated yet (see [`Subdomain::touch`]): two buffers of an
    /// empty block, a few values each.
    fn untouched() -> Cells {
        let none = Block::tight(0, 0);
        Cells {
            cur: Buffer::new(none, 0.0),
            next: Buffer::new(none, 0.0),
            fastest_ns: 0,
        }
    }

    fn is_touched(&self) -> bool {
        !self.cur.block().is_empty()
    }

    /// Copies both buffers into memory this thread allocates and writes
    /// first (fresh pages: first touch places them on this thread's NUMA
    /// node), and frees the old ones.
    fn rehome(&mut self) {
        self.cur = self.cur.clone();
        self.next = self.next.clone();
    }
}

impl Subdomain {
    pub(crate) fn new(problem: &Problem, geom: &SubdomainGeom) -> Self {
        let cells = Cells::initial(problem, geom);
        let make_edges = || Edges {
            sides: Side::ALL.map(|side| {
                (0..geom.edge_cells(side))
                    .map(|_| AtomicU64::new(0))
                    .collect()
            }),
        };
        let sub = Subdomain {
            geom: geom.clone(),
            cells: Mutex::new(cells),
            edges: [make_edges(), make_edges()],
            stats: CachePadded::new(Stats {
                count: AtomicU64::new(0),
                residual_sq: AtomicU64::new(f64::INFINITY.to_bits()),
                owner: AtomicUsize::new(0),
                toucher: AtomicUsize::new(0),
                busy_ns: AtomicU64::new(0),
            }),
        };
        {
            let cells = sub.cells.lock();
            sub.publish(&cells.cur, 0);
            sub.publish(&cells.cur, 1);
        }
        sub.stats.owner.store(geom.domain, Ordering::Relaxed);
        sub.stats.toucher.store(usize::MAX, Ordering::Relaxed);
        sub
    }

    /// Allocates and fills the cells on the calling thread (`thread`), if
    /// they are not yet: a worker calls it for its subdomains after pinning.
    pub(crate) fn touch(&self, problem: &Problem, thread: usize) {
        self.lock().ensure_touched(problem, thread);
    }

    /// The thread that first wrote the current cells (`usize::MAX` when the
    /// calling thread of [`build`] did).
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

    /// Squared local residual seen by the last update (of the state before
    /// it); infinite before the first update that computes one.
    pub(crate) fn residual_sq(&self) -> f64 {
        f64::from_bits(self.stats.residual_sq.load(Ordering::Relaxed))
    }

    /// Seconds spent updating it so far (when measured).
    pub(crate) fn busy_s(&self) -> f64 {
        self.stats.busy_ns.load(Ordering::Relaxed) as f64 / 1e9
    }

    pub(crate) fn owner(&self) -> usize {
        self.stats.owner.load(Ordering::Acquire)
    }

    pub(crate) fn set_owner(&self, thread: usize) {
        self.stats.owner.store(thread, Ordering::Release);
    }

    /// Locks the cells for an update.
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

    /// Copies the interior into `out`, a padded global grid (nothing for
    /// cells never touched: `out` already holds the initial values).
    pub(crate) fn copy_into(&self, out: &mut ndarray::Array2<f64>) {
        let cells = self.cells.lock();
        if !cells.is_touched() {
            return;
        }
        let g = &self.geom;
        let b = layout(g);
        for i in 0..g.height {
            let row = &cells.cur[b.at(i + 1, 1)..b.at(i + 1, 1) + g.width];
            for (j, &v) in row.iter().enumerate() {
                out[[g.row0 + i, g.col0 + j]] = v;
            }
        }
    }

    /// Fills the halo with the neighbours' edges: of `version`, or on a
    /// side that `aged` gives, those bits (the simulator's network: what a
    /// neighbour on another node sent, as it arrives).
    fn fill_halo(
        &self,
        cur: &mut [f64],
        subs: &[Subdomain],
        version: EdgeVersion,
        own: u64,
        aged: &Aged<'_>,
    ) {
        let b = layout(&self.geom);
        for side in Side::ALL {
            let Neighbour::Sub(n) = self.geom.neighbour(side) else {
                continue;
            };
            if let Some(bits) = aged[side.index()] {
                for (c, &e) in halo(cur, b, side).zip(bits) {
                    *c = f64::from_bits(e);
                }
                continue;
            }
            let other = &subs[n];
            let v = match version {
                EdgeVersion::Own => own,
                EdgeVersion::Latest => other.count(),
            };
            let edge = &other.edges[(v % 2) as usize].sides[side.opposite().index()];
            // Zipped, so that no cell pays a bounds check.
            for (c, e) in halo(cur, b, side).zip(edge.iter()) {
                *c = f64::from_bits(e.load(Ordering::Relaxed));
            }
        }
    }

    /// Publishes the sides that a neighbouring subdomain reads (a side on
    /// the boundary ring has no reader).
    fn publish(&self, cur: &[f64], copy: usize) {
        let b = layout(&self.geom);
        let e = &self.edges[copy].sides;
        let store = |a: &AtomicU64, v: f64| a.store(v.to_bits(), Ordering::Relaxed);
        for side in Side::ALL {
            if self.geom.neighbour(side) == Neighbour::Boundary {
                continue;
            }
            for (a, &v) in e[side.index()].iter().zip(outermost(cur, b, side)) {
                store(a, v);
            }
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

    /// How many `u64`s [`Self::pack`] writes for this subdomain (both ranks
    /// of a move know it from the geometry alone).
    pub(crate) fn packed_len(&self) -> usize {
        let edges: usize = Side::ALL
            .into_iter()
            .filter(|&side| matches!(self.geom.neighbour(side), Neighbour::Sub(_)))
            .map(|side| 1 + self.edge_len(side))
            .sum();
        PACKED_HEAD + self.geom.cells() + edges
    }

    /// Appends everything another rank needs to go on updating this
    /// subdomain (`runtime/migrate.rs`): its count, last residual and busy
    /// time, its interior cells, and the edge each neighbour shows it, as
    /// this rank sees them. Takes the cells' lock, so it waits for an update
    /// in flight (the old owner's last one: the owner was changed first).
    pub(crate) fn pack(&self, problem: &Problem, subs: &[Subdomain], out: &mut Vec<u64>) {
        let cells = self.lock();
        out.push(self.stats.count.load(Ordering::Relaxed));
        out.push(self.stats.residual_sq.load(Ordering::Relaxed));
        out.push(self.stats.busy_ns.load(Ordering::Relaxed));
        let mut interior = Vec::with_capacity(self.geom.cells());
        cells.interior_into(problem, &mut interior);
        out.extend(interior.iter().map(|v| v.to_bits()));
        for side in Side::ALL {
            if let Neighbour::Sub(n) = self.geom.neighbour(side) {
                subs[n].export_edge(side.opposite(), out);
            }
        }
    }

    /// Installs what [`Self::pack`] wrote on another rank, for `thread`
    /// (whose rank this is) to update next: the cells (allocated here if
    /// they never were), the stats, the edges of the neighbours that
    /// `foreign` says another rank holds, then this subdomain's own edges
    /// in both copies and, last, its count with Release, as an update
    /// publishes them. The caller sets the owner afterwards.
    pub(crate) fn unpack(
        &self,
        problem: &Problem,
        subs: &[Subdomain],
        thread: usize,
        data: &[u64],
        foreign: impl Fn(usize) -> bool,
    ) {
        assert_eq!(
            data.len(),
            self.packed_len(),
            "a packed subdomain of the wrong size"
        );
        let mut held = self.lock();
        held.ensure_touched(problem, thread);
        let g = &self.geom;
        let (head, rest) = data.split_at(PACKED_HEAD);
        let (interior, mut edges) = rest.split_at(g.cells());
        let b = layout(g);
        for (i, row) in interior.chunks_exact(g.width).enumerate() {
            let at = b.at(i + 1, 1);
            for (c, &v) in held.cells.cur[at..at + g.width].iter_mut().zip(row) {
                *c = f64::from_bits(v);
            }
        }
        self.stats.toucher.store(thread, Ordering::Relaxed);
        self.stats.residual_sq.store(head[1], Ordering::Relaxed);
        self.stats.busy_ns.store(head[2], Ordering::Relaxed);
        for side in Side::ALL {
            if let Neighbour::Sub(n) = g.neighbour(side) {
                let len = 1 + self.edge_len(side);
                let (edge, more) = edges.split_at(len);
                if foreign(n) {
                    subs[n].import_edge_everywhere(side.opposite(), edge);
                }
                edges = more;
            }
        }
        self.publish(&held.cells.cur, 0);
        self.publish(&held.cells.cur, 1);
        self.stats.count.store(head[0], Ordering::Release);
    }

    /// Cells on `side`'s edge.
    pub(crate) fn edge_len(&self, side: Side) -> usize {
        self.edges[0].sides[side.index()].len()
    }

    /// Appends the interior cells, row by row (the initial values if they
    /// were never touched).
    #[cfg(any(test, feature = "mpi"))]
    pub(crate) fn interior_into(&self, problem: &Problem, out: &mut Vec<f64>) {
        self.lock().interior_into(problem, out);
    }

    /// `sum r^2` over the interior, `r = (N + S + W + E) - 4 u` as
    /// [`crate::problem::residual_norm`] computes it, of the cells as they
    /// are and the neighbours' latest published edges (a ghost's, across
    /// ranks): its part of the exact residual once every thread has stopped
    /// and the edges are settled (`runtime/peers.rs`).
    pub(crate) fn exact_residual_sq(&self, problem: &Problem, subs: &[Subdomain]) -> f64 {
        let mut held = self.lock();
        held.ensure_touched(problem, self.first_toucher());
        let g = &self.geom;
        let b = layout(g);
        let cur = &mut held.cells.cur;
        self.fill_halo(cur, subs, EdgeVersion::Latest, 0, &FRESH);
        crate::problem::residual_sq(g.height, g.width, |i, j| cur[b.at(i, j)])
    }

    /// Largest amount by which this subdomain's count is ahead of a
    /// neighbour's (0 when none is behind).
    pub(crate) fn lag(&self, subs: &[Subdomain]) -> u64 {
        crate::schedule::lag(self.count(), &self.geom.neighbours, |n| subs[n].count())
    }
}

impl Held<'_> {
    /// Appends the interior cells, row by row (the initial values if they
    /// were never touched).
    fn interior_into(&self, problem: &Problem, out: &mut Vec<f64>) {
        let g = &self.sub.geom;
        if !self.cells.is_touched() {
            for i in 0..g.height {
                out.extend((0..g.width).map(|j| problem.initial_value(g.row0 + i, g.col0 + j)));
            }
            return;
        }
        let b = layout(g);
        for i in 0..g.height {
            out.extend_from_slice(&self.cells.cur[b.at(i + 1, 1)..b.at(i + 1, 1) + g.width]);
        }
    }

    /// Allocates the cells on the calling thread (`thread`) if nobody has
    /// yet: a subdomain handed over before its first owner got to it is
    /// allocated by whoever updates it first.
    pub(crate) fn ensure_touched(&mut self, problem: &Problem, thread: usize) {
        if !self.cells.is_touched() {
            *self.cells = Cells::initial(problem, &self.sub.geom);
            self.sub.stats.toucher.store(thread, Ordering::Relaxed);
        }
    }

    /// Moves the cells into memory this thread touches first
    /// ([`Cells::rehome`]) and records it as their first toucher.
    pub(crate) fn rehome(&mut self, thread: usize) {
        self.cells.rehome();
        self.sub.stats.toucher.store(thread, Ordering::Relaxed);
    }

    /// One Jacobi update: [`Self::begin_update`] then [`Self::finish_update`],
    /// at cost factor `work` (the workload's, 1 for a plain update; the
    /// extra work ends early once `stopped` says so). `pause` runs between
    /// the two (a test hook to stall a thread inside an update).
    pub(crate) fn update(
        &mut self,
        subs: &[Subdomain],
        version: EdgeVersion,
        residual: Residual,
        work: f64,
        stopped: impl Fn() -> bool,
        pause: impl FnOnce(),
    ) {
        // A uniform run never reads the clock here, nor calls out: the
        // extra work is out of line.
        let began = (work > 1.0).then(Instant::now);
        self.begin_update(subs, version, residual);
        if let Some(began) = began {
            self.extra_work(residual, work, began.elapsed(), stopped);
        }
        pause();
        self.finish_update();
    }

    /// Adds the time an update took to this subdomain's busy time (the
    /// caller holds the lock, so nobody else writes it meanwhile).
    pub(crate) fn add_busy(&mut self, ns: u64) {
        let busy = &self.sub.stats.busy_ns;
        busy.store(busy.load(Ordering::Relaxed) + ns, Ordering::Relaxed);
    }

    /// A workload's extra work: an update of cost factor `work` (above 1;
    /// the caller checks) takes `work` times as long as a plain one. The
    /// plain update just made took `plain`; the fastest of those seen is the
    /// measure (a preempted one is not), and the extra part sweeps the
    /// cells again, a band of rows at a time, until it has taken `work - 1`
    /// times that. Time, not a count of sweeps: a sweep repeated at once
    /// finds its cells in cache, and costs from a third to all of the first
    /// one depending on the machine's caches, where the simulator charges a
    /// factor-`work` update `work` times the cells' cost. Each sweep
    /// rewrites the spare buffer with the very values the update computed
    /// (same inputs, same formula), so the result cannot change: real
    /// loads, stores and flops on the subdomain's own data. `black_box`
    /// keeps the compiler from seeing that the sweeps repeat.
    #[cold]
    #[inline(never)]
    fn extra_work(
        &mut self,
        residual: Residual,
        work: f64,
        plain: Duration,
        stopped: impl Fn() -> bool,
    ) {
        let cells = &mut *self.cells;
        let plain = plain.as_nanos() as u64;
        if cells.fastest_ns == 0 || plain < cells.fastest_ns {
            cells.fastest_ns = plain.max(1);
        }
        let target = Duration::from_nanos(((work - 1.0) * cells.fastest_ns as f64) as u64);
        let b = layout(&self.sub.geom);
        // Bands of an eighth of the rows: the time is checked between them.
        let band = b.h.div_ceil(8).max(1);
        let began = Instant::now();
        let mut row = 0;
        while began.elapsed() < target && !stopped() {
            let rows = band.min(b.h - row);
            let at = row * b.stride;
            let block = Block { h: rows, ..b };
            let (cur, next) = (&cells.cur[at..], &mut cells.next[at..]);
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

    /// Computes the next values into the spare buffer, reading the
    /// neighbours' edges as published now. Nothing is visible to others
    /// until [`Self::finish_update`].
    pub(crate) fn begin_update(
        &mut self,
        subs: &[Subdomain],
        version: EdgeVersion,
        residual: Residual,
    ) {
        self.begin_update_aged(subs, version, residual, &FRESH);
    }

    /// [`Self::begin_update`], reading the sides that `aged` gives from
    /// there instead of from the neighbours (the simulator's network).
    pub(crate) fn begin_update_aged(
        &mut self,
        subs: &[Subdomain],
        version: EdgeVersion,
        residual: Residual,
        aged: &Aged<'_>,
    ) {
        let sub = self.sub;
        let cells = &mut *self.cells;
        let b = layout(&sub.geom);
        let c = sub.stats.count.load(Ordering::Relaxed);
        sub.fill_halo(&mut cells.cur, subs, version, c, aged);
        if residual == Residual::Compute {
            let r = kernel::sweep_block_with_residual(&cells.cur, &mut cells.next, b);
            sub.stats.residual_sq.store(r.to_bits(), Ordering::Relaxed);
        } else {
            kernel::sweep_block(&cells.cur, &mut cells.next, b);
        }
    }

    /// Makes the values computed by [`Self::begin_update`] current and
    /// publishes them: edges first, then the count (`Release`).
    pub(crate) fn finish_update(&mut self) {
        let sub = self.sub;
        let cells = &mut *self.cells;
        let c = sub.stats.count.load(Ordering::Relaxed);
        std::mem::swap(&mut cells.cur, &mut cells.next);
        sub.publish(&cells.cur, ((c + 1) % 2) as usize);
        sub.stats.count.store(c + 1, Ordering::Release);
    }
}

/// All subdomains of a problem, in id order.
pub(crate) fn build(problem: &Problem) -> Vec<Subdomain> {
    problem
        .subs
        .iter()
        .map(|g| Subdomain::new(problem, g))
        .collect()
}

/// All subdomains of a problem with their edges published but their cells
/// not allocated: each owner [touches](Subdomain::touch) its own.
pub(crate) fn build_untouched(problem: &Problem) -> Vec<Subdomain> {
    // One subdomain's cells at a time: across ranks, a rank holds the
    // edges of the whole problem but never all its cells.
    problem
        .subs
        .iter()
        .map(|g| {
            let s = Subdomain::new(problem, g);
            *s.cells.lock() = Cells::untouched();
            s
        })
        .collect()
}

/// Writes a subdomain's interior cells, row by row as
/// [`Subdomain::interior_into`] gives them, into a padded global grid.
#[cfg(any(test, feature = "mpi"))]
pub(crate) fn place_interior(grid: &mut ndarray::Array2<f64>, g: &SubdomainGeom, cells: &[f64]) {
    assert_eq!(cells.len(), g.cells(), "an interior of the wrong size");
    for (i, row) in cells.chunks_exact(g.width).enumerate() {
        for (j, &v) in row.iter().enumerate() {
            grid[[g.row0 + i, g.col0 + j]] = v;
        }
    }
}

/// The padded global grid assembled from the subdomains' current cells.
pub(crate) fn assemble(problem: &Problem, subs: &[Subdomain]) -> ndarray::Array2<f64> {
    let mut grid = problem.initial_grid();
    for s in subs {
        s.copy_into(&mut grid);
    }
    grid
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::sequential_jacobi;

    /// Single-threaded, in-order sweeps with own-version edges are Jacobi.
    #[test]
    fn own_version_sweeps_equal_sequential_jacobi() {
        let p = Problem::new(6, 3, 4).unwrap();
        let subs = build(&p);
        for _ in 0..5 {
            // Update in reverse order so that some neighbours are already one
            // version ahead when read: the parity copies must hide that.
            for s in subs.iter().rev() {
                s.lock().update(
                    &subs,
                    EdgeVersion::Own,
                    Residual::Compute,
                    1.0,
                    || false,
                    || {},
                );
            }
        }
        assert_eq!(assemble(&p, &subs), sequential_jacobi(&p, 5));
    }

    #[test]
    fn lag_counts_how_far_ahead_of_the_slowest_neighbour() {
        let p = Problem::new(4, 2, 1).unwrap();
        let subs = build(&p);
        for _ in 0..3 {
            subs[0].lock().update(
                &subs,
                EdgeVersion::Latest,
                Residual::Skip,
                1.0,
                || false,
                || {},
            );
        }
        assert_eq!(subs[0].lag(&subs), 3);
        assert_eq!(subs[1].lag(&subs), 0);
    }
}
