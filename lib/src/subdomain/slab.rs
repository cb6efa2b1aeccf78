//! A thread's home slab: the cells of its own domain in one padded buffer
//! pair, so that the subdomains of that domain it holds are swept in one
//! pass, adjacent ones as one block, as a thread with one subdomain sweeps
//! its domain.
//!
//! Sub-splitting a domain costs a sweep of its own per subdomain: narrower
//! rows, and between every two subdomains a halo filled and an edge
//! published per update, though one thread holds both. Measured on this
//! machine (`git show 333740e:docs/speed.md`, 2026-11-26): `async(4)` ran at 0.80 of
//! `async(1)`'s rate at 150² per thread, 11% of it in the sweep's narrower
//! rows and 13% in halos and edges. In a slab, a thread that holds its whole
//! domain sweeps it as `async(1)` does, and still counts every subdomain's
//! updates on its own counter, keeps ssync's bound per subdomain, and hands
//! a subdomain over whole when a balancer moves it.
//!
//! # Layout
//!
//! `domain_size`² cells with a one-cell ring, rows padded to whole cache
//! lines ([`Block::padded`]), twice (current and next, swapped after each
//! pass). Region `k` is subdomain `first + k`'s rectangle. A region is
//! **live** when the subdomain's cells are here (its place is `Home`);
//! a region that is not live is scratch, whose border cells serve as the
//! halo of the live ones beside it.
//!
//! # Protocol: the slab
//!
//! **State.** The buffers, which of them is current, and which regions are
//! live, behind the slab's mutex; each subdomain's place behind its cells'
//! mutex (`mod.rs`). A place changes only with both locks held, slab first:
//! so the slab's holder sees every live region steady, and whoever holds a
//! subdomain's cells sees whether they are here.
//!
//! **A pass** (the domain's thread, `runtime/worker.rs`, holding the slab):
//! 1. every live region it no longer owns leaves ([`SlabGuard::export`]);
//!    every subdomain of the domain it owns again comes back when its cells
//!    are free ([`SlabGuard::import`]);
//! 2. for each live region to update ([`Todo`]): its halo on every side
//!    whose neighbour is not live here is filled from that neighbour's
//!    published edge (boundary-ring sides never change);
//! 3. the regions are swept, adjacent ones as one block; a live region not
//!    updated this pass (ssync's gate) has its cells copied to the next
//!    buffer, so that after the swap every live region is current;
//!    a block that starts mid cache line is swept from the line boundary
//!    before it (up to 7 columns more, [`Region::to_line`]);
//! 4. each updated region publishes the sides whose neighbour is not live
//!    here, then the buffers swap and each count is published (Release),
//!    as `Held::finish_update` does for cells on their own.
//!
//! **Leaving** (`export`, by whoever holds the slab: its thread, or across
//! ranks the exchanging thread packing it): its own sides and the sides of
//! the live regions facing it are published at their current versions (they
//! were not, while neither needed the other's copy), then its cells and
//! halo are copied into buffers of its own, and the region stops being live.
//! Its new owner finds its place `Own` under the cells' lock, and reads its
//! neighbours as any subdomain on its own does. Until then it skips it, as
//! it skips cells another thread holds (`runtime/calls.rs`: the honest
//! race is the same: the slab's thread may finish one more update of it).
//!
//! **Coming back** (`import`, the domain's thread only, holding the slab and
//! the cells): the cells are copied in and the region is live again; the
//! edges its last owner published stay current until the next pass
//! publishes newer ones.
//!
//! **Why no update is lost or doubled, and nobody waits.** The cells of a
//! subdomain are updated by the slab's holder while its place is `Home`, by
//! the holder of its cells while it is `Own`, and never both, since the
//! place changes only under both locks. Counts are published after the
//! cells, as for cells on their own. The slab's thread and the new owner
//! only ever `try_lock` (a worker skips what it cannot have); the only
//! blocking takes are the exchanging thread's `pack`, which waits for one
//! pass as it waits for one update, and reading a stopped run's cells.
//! Locks are taken slab first, cells second, everywhere.
//!
//! **Sync stays sequential Jacobi.** A pass reads every live neighbour's
//! cells as they are in the current buffer (version `k`, all regions being
//! at `k` between two barriers) and every other one's published version
//! `k` (`EdgeVersion::Own`), and writes the next buffer only: exactly what
//! one update per subdomain would read and write.
//!
//! **Why sweeping from the line before a block changes nothing.** The
//! columns a block gains ([`Region::to_line`]) are interior columns of
//! this slab (column 1 starts a line, so the ring is never among them),
//! and the sweep writes only the next buffer. Each gained cell is one of:
//! * a live region's that the pass updates: the block computes the same
//!   value from the same current buffer as that region's own sweep does;
//! * a live region's that the pass leaves alone (ssync's gate): the copy
//!   that follows the sweeps puts its value back;
//! * scratch (a region not live here): nothing reads it as a value. A live
//!   neighbour reads its border as halo only after step 2 fills it, every
//!   pass it is updated in; a region that leaves copies its halo, which
//!   its new owner fills before every update; a region that comes back
//!   overwrites it.
//!
//! So every live cell of the next buffer is what it would be without the
//! gained columns (tested: `a_block_swept_from_the_line_before_it_keeps_jacobi_exact`).

use std::time::{Duration, Instant};

use parking_lot::{Mutex, MutexGuard};

use super::{EdgeVersion, Held, Place, Subdomain, extra_time, extra_work, initial_buffers};
use crate::engine::Residual;
use crate::problem::{Neighbour, Problem, Side};
use braid_kernel::{self as kernel, Block, Buffer, LINE};

/// A rectangle of a slab: its first interior cell's coordinates in the
/// slab's padded block, and its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Region {
    row: usize,
    col: usize,
    h: usize,
    w: usize,
}

impl Region {
    /// Where the rectangle's halo corner sits in a buffer of layout `b`,
    /// and the rectangle as a block of its own with `b`'s stride: what the
    /// kernel sweeps and the edge helpers walk.
    fn view(&self, b: Block) -> (usize, Block) {
        (
            b.at(self.row - 1, self.col - 1),
            Block {
                h: self.h,
                w: self.w,
                stride: b.stride,
            },
        )
    }

    /// The same rows from the cache-line boundary at or before its first
    /// column: in a slab's padded block every row's column 1 starts a line
    /// ([`Block::padded`], [`Buffer`]), so the columns that start one are
    /// `1 + k * LINE`. A 75-wide block swept from column 76 reads and
    /// writes every vector across two lines and took 1087 ns against 860
    /// from column 73 (`git show 333740e:docs/speed.md`, 2026-11-29). The columns it adds lie
    /// in the same slab's interior (never its ring), and the pass makes
    /// them harmless (see the top of this file).
    fn to_line(self) -> Region {
        let back = (self.col - 1) % LINE;
        Region {
            col: self.col - back,
            w: self.w + back,
            ..self
        }
    }
}

/// What a pass does with a region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Todo {
    /// Nothing: not live, or not admitted (ssync's gate).
    Skip,
    /// One update.
    Sweep,
    /// One update that also computes its local residual (swept on its own:
    /// the residual is per subdomain).
    Residual,
}

/// One domain's slab (see the top of this file).
#[derive(Debug)]
pub(crate) struct Slab {
    /// Its subdomains are `first..first + regions.len()`.
    first: usize,
    /// The domain's split into subdomains: rows and columns of regions.
    sub_rows: usize,
    sub_cols: usize,
    regions: Vec<Region>,
    block: Block,
    /// Padded global coordinates of the slab's cell (0, 0).
    origin: (usize, usize),
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    /// Current and next values; `None` until its thread touches it (until
    /// then every live region holds the initial values).
    bufs: Option<[Buffer; 2]>,
    /// Which buffer is current.
    cur: usize,
    live: Vec<bool>,
    plan: Plan,
    wiring: Wiring,
    /// The fastest sweep seen, in ns per cell (0: none yet): what a
    /// workload's extra work is measured against.
    fastest_cell_ns: f64,
}

/// The blocks a pass sweeps, for the regions it sweeps without the
/// residual: cached, since a pass's regions rarely change.
#[derive(Debug, Default)]
struct Plan {
    key: Vec<Todo>,
    blocks: Vec<Region>,
}

/// Which sides of the live regions face a neighbour that is not live here
/// (filled from its published edge, and published), and which face one
/// that is (read in place): worked out when the live regions change, so
/// that a pass walks only the sides it touches.
#[derive(Debug, Default)]
struct Wiring {
    /// The live regions it was worked out for.
    live: Vec<bool>,
    /// (region, side, neighbour not live here).
    outside: Vec<(usize, Side, usize)>,
    /// (region, live neighbour): only their counts are read, for the lag.
    inside: Vec<(usize, usize)>,
}

impl Wiring {
    fn of(slab: &Slab, problem_subs: &[Subdomain], live: &[bool]) -> Wiring {
        let mut w = Wiring {
            live: live.to_vec(),
            ..Wiring::default()
        };
        for (k, _) in live.iter().enumerate().filter(|&(_, &l)| l) {
            for side in Side::ALL {
                if let Neighbour::Sub(n) = problem_subs[slab.first + k].geom.neighbour(side) {
                    if slab.subdomains().contains(&n) && live[n - slab.first] {
                        w.inside.push((k, n));
                    } else {
                        w.outside.push((k, side, n));
                    }
                }
            }
        }
        w
    }
}

/// What a pass did.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Swept {
    /// Subdomain updates made.
    pub updates: u64,
    /// Cells updated.
    pub cells: u64,
    /// The largest lag an updated region read ([`Subdomain::lag`]).
    pub lag: u64,
    /// How long the pass took (halos, sweeps, edges) but a workload's extra
    /// work, when clocked.
    pub took: Option<Duration>,
}

/// What the pass is asked to do.
pub(crate) struct Job<'j> {
    /// Per region.
    pub todo: &'j [Todo],
    /// The residual round a [`Todo::Residual`] computes for.
    pub round: u64,
    pub version: EdgeVersion,
    /// Each region's workload cost factor, when some is above 1.
    pub work: Option<&'j [f64]>,
    /// Whether to time the sweeps (the slow hook, object loads, workloads).
    pub clocked: bool,
    /// Whether to add each region's share of the time to its subdomain's
    /// busy time (object loads).
    pub timed: bool,
    /// Ends a workload's extra work early.
    pub stopped: &'j dyn Fn() -> bool,
}

/// A slab, locked.
pub(crate) struct SlabGuard<'a> {
    slab: &'a Slab,
    st: MutexGuard<'a, State>,
}

impl Slab {
    /// Domain `domain`'s slab, every region live, no cell allocated yet.
    pub(crate) fn new(problem: &Problem, domain: usize) -> Self {
        let n = problem.subdomains_per_domain();
        let first = domain * n;
        let g0 = &problem.subs[first];
        let origin = (g0.row0 - 1, g0.col0 - 1);
        let regions = problem.subs[first..first + n]
            .iter()
            .map(|g| Region {
                row: g.row0 - origin.0,
                col: g.col0 - origin.1,
                h: g.height,
                w: g.width,
            })
            .collect();
        Slab {
            first,
            sub_rows: problem.sub_rows,
            sub_cols: problem.sub_cols,
            regions,
            block: Block::padded(problem.domain_size, problem.domain_size),
            origin,
            state: Mutex::new(State {
                bufs: None,
                cur: 0,
                live: vec![true; n],
                plan: Plan::default(),
                wiring: Wiring::default(),
                fastest_cell_ns: 0.0,
            }),
        }
    }

    /// Its subdomains' ids.
    pub(crate) fn subdomains(&self) -> std::ops::Range<usize> {
        self.first..self.first + self.regions.len()
    }

    /// Locks it.
    pub(crate) fn lock(&self) -> SlabGuard<'_> {
        SlabGuard {
            slab: self,
            st: self.state.lock(),
        }
    }

    /// Locks it if nobody holds it.
    pub(crate) fn try_lock(&self) -> Option<SlabGuard<'_>> {
        Some(SlabGuard {
            slab: self,
            st: self.state.try_lock()?,
        })
    }

    fn view(&self, k: usize) -> (usize, Block) {
        self.regions[k].view(self.block)
    }

    /// What a pass sweeps for `todo`: [`Self::blocks`], each from the line
    /// boundary at or before its first column.
    fn sweeps(&self, todo: &[Todo]) -> Vec<Region> {
        self.blocks(todo).into_iter().map(Region::to_line).collect()
    }

    /// The blocks covering the regions `todo` sweeps without the residual:
    /// in each row of regions, every run of adjacent ones as one block, and
    /// runs spanning the same columns in consecutive rows as one.
    fn blocks(&self, todo: &[Todo]) -> Vec<Region> {
        let (rows, cols) = (self.sub_rows, self.sub_cols);
        let mut blocks: Vec<Region> = Vec::new();
        // The previous row's runs: (first column, end column, block).
        let mut above: Vec<(usize, usize, usize)> = Vec::new();
        for r in 0..rows {
            let mut here = Vec::new();
            let mut j = 0;
            while j < cols {
                if todo[r * cols + j] != Todo::Sweep {
                    j += 1;
                    continue;
                }
                let j0 = j;
                while j < cols && todo[r * cols + j] == Todo::Sweep {
                    j += 1;
                }
                let (a, z) = (self.regions[r * cols + j0], self.regions[r * cols + j - 1]);
                let w = z.col + z.w - a.col;
                match above.iter().find(|&&(b0, b1, _)| (b0, b1) == (j0, j)) {
                    Some(&(_, _, at)) => {
                        blocks[at].h += a.h;
                        here.push((j0, j, at));
                    }
                    None => {
                        blocks.push(Region { w, ..a });
                        here.push((j0, j, blocks.len() - 1));
                    }
                }
            }
            above = here;
        }
        blocks
    }
}

impl SlabGuard<'_> {
    /// Whether subdomain `s`'s cells are in this slab.
    pub(crate) fn is_live(&self, s: usize) -> bool {
        self.slab.subdomains().contains(&s) && self.st.live[s - self.slab.first]
    }

    /// Allocates and fills the buffers on the calling thread (`thread`),
    /// if they are not yet: the domain's thread calls it after pinning, so
    /// that first touch puts them on its NUMA node.
    pub(crate) fn touch(&mut self, problem: &Problem, subs: &[Subdomain], thread: usize) {
        if self.st.bufs.is_some() {
            return;
        }
        let (b, (r0, c0)) = (self.slab.block, self.slab.origin);
        let mut cur = Buffer::new(b, 0.0);
        for i in 0..b.h + 2 {
            for j in 0..b.w + 2 {
                cur[b.at(i, j)] = problem.initial_value(r0 + i, c0 + j);
            }
        }
        self.st.bufs = Some([cur.beside(), cur]);
        for s in self.slab.subdomains() {
            if self.is_live(s) {
                subs[s]
                    .stats
                    .toucher
                    .store(thread, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }

    /// Appends live subdomain `s`'s interior cells, row by row.
    pub(crate) fn interior_into(&self, problem: &Problem, s: usize, out: &mut Vec<f64>) {
        let r = self.slab.regions[s - self.slab.first];
        let Some(bufs) = &self.st.bufs else {
            let (r0, c0) = self.slab.origin;
            for i in 0..r.h {
                out.extend((0..r.w).map(|j| problem.initial_value(r0 + r.row + i, c0 + r.col + j)));
            }
            return;
        };
        let (cur, b) = (&bufs[self.st.cur], self.slab.block);
        for i in 0..r.h {
            let at = b.at(r.row + i, r.col);
            out.extend_from_slice(&cur[at..at + r.w]);
        }
    }

    /// Live subdomain `s` leaves the slab for cells of its own, written
    /// first by `thread` (see the top of this file).
    pub(crate) fn export(
        &mut self,
        subs: &[Subdomain],
        problem: &Problem,
        s: usize,
        thread: usize,
    ) {
        let slab = self.slab;
        let k = s - slab.first;
        let State {
            bufs, cur, live, ..
        } = &mut *self.st;
        assert!(live[k], "subdomain {s} is not in its slab");
        let sub = &subs[s];
        let mut held = sub.lock();
        held.cells.place = match bufs {
            None => {
                let (cur, next) = initial_buffers(problem, &sub.geom);
                Place::Own { cur, next }
            }
            Some(bufs) => {
                let src = &bufs[*cur];
                let (off, vb) = slab.view(k);
                // Its own sides at its version, and those its live
                // neighbours show it at theirs: neither side was published
                // while both were here.
                let c = sub.stats.count.load(std::sync::atomic::Ordering::Relaxed);
                sub.publish(&src[off..], vb, (c % 2) as usize, |_| false);
                for side in Side::ALL {
                    if let Neighbour::Sub(m) = sub.geom.neighbour(side)
                        && m != s
                        && slab.subdomains().contains(&m)
                        && live[m - slab.first]
                    {
                        let (moff, mvb) = slab.view(m - slab.first);
                        let n = &subs[m];
                        let v = n.stats.count.load(std::sync::atomic::Ordering::Relaxed);
                        n.publish_side(&src[moff..], mvb, side.opposite(), (v % 2) as usize);
                    }
                }
                // Its cells and halo, into buffers of its own.
                let b = super::layout(&sub.geom);
                let mut own = Buffer::new(b, 0.0);
                for i in 0..b.h + 2 {
                    let from = off + i * vb.stride;
                    own[b.at(i, 0)..b.at(i, 0) + b.w + 2]
                        .copy_from_slice(&src[from..from + b.w + 2]);
                }
                Place::Own {
                    next: own.beside(),
                    cur: own,
                }
            }
        };
        live[k] = false;
        sub.stats
            .toucher
            .store(thread, std::sync::atomic::Ordering::Relaxed);
    }

    /// Subdomain `s` of this slab's domain, whose cells of its own `held`
    /// holds, comes back into the slab (its domain's thread, `thread`, only;
    /// see the top of this file).
    pub(crate) fn import(
        &mut self,
        problem: &Problem,
        s: usize,
        held: &mut Held<'_>,
        thread: usize,
    ) {
        let slab = self.slab;
        let k = s - slab.first;
        assert!(!self.st.live[k], "subdomain {s} is in its slab already");
        let mut interior = Vec::with_capacity(held.sub.geom.cells());
        held.interior_into(problem, &mut interior);
        let State {
            bufs, cur, live, ..
        } = &mut *self.st;
        let dst = &mut bufs
            .as_mut()
            .expect("a slab is touched before it takes cells in")[*cur];
        let r = slab.regions[k];
        for (i, row) in interior.chunks_exact(r.w).enumerate() {
            let at = slab.block.at(r.row + i, r.col);
            dst[at..at + r.w].copy_from_slice(row);
        }
        held.cells.place = Place::Home;
        live[k] = true;
        held.sub
            .stats
            .toucher
            .store(thread, std::sync::atomic::Ordering::Relaxed);
    }

    /// Publishes every side of every live region at its current version:
    /// the sides between two live regions are not published while both are
    /// here, and a stopped run's exact residual reads every edge (the
    /// domain's thread, as it leaves an epoch).
    pub(crate) fn settle(&mut self, subs: &[Subdomain]) {
        let slab = self.slab;
        let State {
            bufs, cur, live, ..
        } = &*self.st;
        let Some(bufs) = bufs else {
            return;
        };
        for (k, &l) in live.iter().enumerate() {
            if l {
                let sub = &subs[slab.first + k];
                let (off, vb) = slab.view(k);
                let c = sub.stats.count.load(std::sync::atomic::Ordering::Relaxed);
                sub.publish(&bufs[*cur][off..], vb, (c % 2) as usize, |_| false);
            }
        }
    }

    /// One pass over the live regions (see the top of this file): each
    /// that `job.todo` names is updated once; `pause` runs between the
    /// sweeps and the publication (the stall test hook).
    pub(crate) fn pass(
        &mut self,
        subs: &[Subdomain],
        job: &Job<'_>,
        pause: impl FnOnce(),
    ) -> Swept {
        use std::sync::atomic::Ordering;
        let slab = self.slab;
        let n = slab.regions.len();
        assert_eq!(job.todo.len(), n, "a pass names every region");
        let mut done = Swept::default();
        for (k, &t) in job.todo.iter().enumerate() {
            if t != Todo::Skip {
                assert!(self.st.live[k], "a pass updates only live regions");
                done.updates += 1;
                let r = slab.regions[k];
                done.cells += (r.h * r.w) as u64;
            }
        }
        if done.updates == 0 {
            return done;
        }
        let State {
            bufs,
            cur,
            live,
            plan,
            wiring,
            fastest_cell_ns,
        } = &mut *self.st;
        let live: &[bool] = live;
        if wiring.live != live {
            *wiring = Wiring::of(slab, subs, live);
        }
        let [a, b] = bufs
            .as_mut()
            .expect("a slab is touched before its first pass");
        let (src, dst) = if *cur == 0 { (a, b) } else { (b, a) };
        let updated = |k: usize| job.todo[k] != Todo::Skip;
        let began = job.clocked.then(Instant::now);
        // 2. Halos from the neighbours that are not here.
        done.lag = halos(slab, subs, wiring, job, src);
        // 3. The sweeps: adjacent regions as one block; with the residual,
        // each region on its own.
        if plan.key != job.todo {
            plan.blocks = slab.sweeps(job.todo);
            plan.key.clear();
            plan.key.extend_from_slice(job.todo);
        }
        for block in &plan.blocks {
            let (off, vb) = block.view(slab.block);
            kernel::sweep_block(&src[off..], &mut dst[off..], vb);
        }
        for k in (0..n).filter(|&k| job.todo[k] == Todo::Residual) {
            let (off, vb) = slab.view(k);
            let r = kernel::sweep_block_with_residual(&src[off..], &mut dst[off..], vb);
            subs[slab.first + k].set_residual(job.round, r);
        }
        // A workload's extra work, measured against the fastest plain pass
        // per cell seen (halos and sweeps). Only such a pass reads the clock
        // here and allocates: a plain timed pass reads it at its start and
        // end alone.
        let extra = match (began, job.work) {
            (Some(began), Some(work)) => {
                let per_cell = began.elapsed().as_nanos() as f64 / done.cells as f64;
                if *fastest_cell_ns == 0.0 || per_cell < *fastest_cell_ns {
                    *fastest_cell_ns = per_cell.max(1e-3);
                }
                workload_extra(slab, job, work, *fastest_cell_ns, (&src[..], &mut dst[..]))
            }
            _ => Vec::new(),
        };
        // A live region this pass leaves alone keeps its values.
        for k in (0..n).filter(|&k| live[k] && !updated(k)) {
            let (off, vb) = slab.view(k);
            for i in 1..=vb.h {
                let at = off + i * vb.stride + 1;
                dst[at..at + vb.w].copy_from_slice(&src[at..at + vb.w]);
            }
        }
        pause();
        // 4. Publish, swap, count.
        for &(k, side, _) in wiring.outside.iter().filter(|&&(k, ..)| updated(k)) {
            let (off, vb) = slab.view(k);
            let sub = &subs[slab.first + k];
            let c = sub.stats.count.load(Ordering::Relaxed);
            sub.publish_side(&dst[off..], vb, side, ((c + 1) % 2) as usize);
        }
        *cur = 1 - *cur;
        // The whole pass's time but the extra work (which is each region's
        // own), shared out by cells: what each region's update took.
        if let Some(began) = began {
            let extra_all: Duration = extra.iter().sum();
            let plain = began.elapsed().saturating_sub(extra_all);
            done.took = Some(plain);
            if job.timed {
                share_busy(
                    slab,
                    subs,
                    job,
                    plain.as_nanos() as u64 as f64 / done.cells as f64,
                    &extra,
                );
            }
        }
        for k in (0..n).filter(|&k| updated(k)) {
            let count = &subs[slab.first + k].stats.count;
            count.store(count.load(Ordering::Relaxed) + 1, Ordering::Release);
        }
        done
    }
}

/// A pass's halos from the neighbours that are not in the slab, into
/// `src`; returns the largest lag an updated region read, from the counts
/// (another thread's count is a cache miss: read once).
fn halos(slab: &Slab, subs: &[Subdomain], wiring: &Wiring, job: &Job<'_>, src: &mut [f64]) -> u64 {
    use std::sync::atomic::Ordering;
    let updated = |k: usize| job.todo[k] != Todo::Skip;
    let mut lag = 0;
    for &(k, side, m) in wiring.outside.iter().filter(|&&(k, ..)| updated(k)) {
        let (off, vb) = slab.view(k);
        let sub = &subs[slab.first + k];
        let own = sub.stats.count.load(Ordering::Relaxed);
        let v = sub.fill_side(&mut src[off..], vb, side, &subs[m], job.version, own);
        lag = lag.max(own.saturating_sub(v));
    }
    if job.version == EdgeVersion::Latest {
        for &(k, m) in wiring.inside.iter().filter(|&&(k, _)| updated(k)) {
            let own = subs[slab.first + k].stats.count.load(Ordering::Relaxed);
            lag = lag.max(own.saturating_sub(subs[m].count()));
        }
    }
    lag
}

/// A workload's extra work on each updated region whose factor `work`
/// is above 1, measured against `fastest_cell_ns`, the fastest plain pass
/// per cell seen: how long each region's took.
fn workload_extra(
    slab: &Slab,
    job: &Job<'_>,
    work: &[f64],
    fastest_cell_ns: f64,
    (src, dst): (&[f64], &mut [f64]),
) -> Vec<Duration> {
    let n = slab.regions.len();
    let mut extra = vec![Duration::ZERO; n];
    for k in (0..n).filter(|&k| job.todo[k] != Todo::Skip && work[k] > 1.0) {
        let (off, vb) = slab.view(k);
        let plain = (fastest_cell_ns * (vb.h * vb.w) as f64) as u64;
        let residual = match job.todo[k] {
            Todo::Residual => Residual::Compute,
            _ => Residual::Skip,
        };
        let began = Instant::now();
        let target = extra_time(work[k], plain.max(1));
        extra_work(
            &src[off..],
            &mut dst[off..],
            vb,
            residual,
            target,
            job.stopped,
        );
        extra[k] = began.elapsed();
    }
    extra
}

/// Adds each updated region's share of a pass to its subdomain's busy
/// time: `per_cell` nanoseconds a cell of the pass, plus its own `extra`.
/// Nanoseconds per cell are converted once: a u128's conversion to f64 is
/// a library call (`__floattidf`), and with one per region, the extra's
/// vector and a third clock read, timing cost a plain pass about 2%
/// (`git show 333740e:docs/speed.md`, the log).
fn share_busy(slab: &Slab, subs: &[Subdomain], job: &Job<'_>, per_cell: f64, extra: &[Duration]) {
    let n = slab.regions.len();
    for k in (0..n).filter(|&k| job.todo[k] != Todo::Skip) {
        let r = slab.regions[k];
        let share = (per_cell * (r.h * r.w) as f64) as u64;
        let own = extra.get(k).map_or(0, |e| e.as_nanos() as u64);
        subs[slab.first + k].add_busy_ns(share + own);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::sequential_jacobi;
    use crate::subdomain::Subdomains;

    fn sweep_all(
        g: &mut SlabGuard<'_>,
        subs: &[Subdomain],
        todo: &[Todo],
        version: EdgeVersion,
    ) -> Swept {
        let stopped = || false;
        let job = Job {
            todo,
            round: 1,
            version,
            work: None,
            clocked: false,
            timed: false,
            stopped: &stopped,
        };
        g.pass(subs, &job, || {})
    }

    #[test]
    fn adjacent_regions_are_swept_as_one_block() {
        use Todo::{Residual as R, Skip as S, Sweep as W};
        let p = Problem::new(12, 1, 9).unwrap();
        let slab = Slab::new(&p, 0);
        let all = slab.blocks(&[W; 9]);
        assert_eq!(
            all,
            vec![Region {
                row: 1,
                col: 1,
                h: 12,
                w: 12
            }]
        );
        // Three in the middle row taken out: a band above and one below.
        let bands = slab.blocks(&[W, W, W, S, R, S, W, W, W]);
        assert_eq!(bands.len(), 2, "{bands:?}");
        assert_eq!((bands[0].h, bands[0].w, bands[1].row), (4, 12, 9));
        // An L: the left column and the top row.
        let l = slab.blocks(&[W, W, W, W, S, S, W, S, S]);
        assert_eq!(l.len(), 2, "{l:?}");
        assert_eq!((l[0].h, l[0].w), (4, 12));
        assert_eq!((l[1].row, l[1].h, l[1].w), (5, 8, 4));
    }

    #[test]
    fn slab_passes_equal_sequential_jacobi_bit_for_bit() {
        // Two domains, each in its own slab, one region of each left out of
        // the fused blocks now and then: sync's arithmetic exactly.
        for per in [1, 2, 4, 6] {
            let p = Problem::new(9, 2, per).unwrap();
            let subs = Subdomains::with_slabs(&p, |_| true);
            for d in 0..2 {
                subs.slab(d).unwrap().lock().touch(&p, &subs, d);
            }
            for it in 0..7 {
                for d in 0..2 {
                    let mut g = subs.slab(d).unwrap().lock();
                    let todo: Vec<Todo> = (0..per)
                        .map(|k| {
                            if (k + it) % 3 == 0 {
                                Todo::Residual
                            } else {
                                Todo::Sweep
                            }
                        })
                        .collect();
                    let done = sweep_all(&mut g, &subs, &todo, EdgeVersion::Own);
                    assert_eq!(done.updates, per as u64);
                }
            }
            assert_eq!(
                subs.assemble(&p),
                sequential_jacobi(&p, 7),
                "{per} per domain"
            );
        }
    }

    /// Two domains of `p` in slabs, swept `iterations` times as Jacobi's
    /// sync does; subdomain `away` of domain 0 leaves its slab before
    /// sweep `gone.start`, is updated on its own for the sweeps in `gone`,
    /// and comes back before sweep `gone.end`.
    fn away_and_back(
        p: &Problem,
        away: usize,
        gone: std::ops::Range<usize>,
        iterations: usize,
    ) -> Subdomains {
        let subs = Subdomains::with_slabs(p, |_| true);
        for d in 0..2 {
            subs.slab(d).unwrap().lock().touch(p, &subs, d);
        }
        let slab0 = subs.slab(0).unwrap();
        for it in 0..iterations {
            if it == gone.start {
                slab0.lock().export(&subs, p, away, 0);
            }
            if it == gone.end {
                let mut held = subs[away].lock();
                slab0.lock().import(p, away, &mut held, 0);
            }
            for d in 0..2 {
                let mut g = subs.slab(d).unwrap().lock();
                let todo: Vec<Todo> = g
                    .slab
                    .subdomains()
                    .map(|s| {
                        if g.is_live(s) {
                            Todo::Sweep
                        } else {
                            Todo::Skip
                        }
                    })
                    .collect();
                sweep_all(&mut g, &subs, &todo, EdgeVersion::Own);
            }
            if gone.contains(&it) {
                let mut held = subs[away].lock();
                assert!(!held.is_home());
                held.update(&subs, EdgeVersion::Own, None, 1.0, || false, || {});
            }
        }
        subs
    }

    #[test]
    fn a_region_that_leaves_and_comes_back_keeps_jacobi_exact() {
        // Subdomain 1 leaves domain 0's slab after two sweeps, is updated on
        // its own twice, and comes back: every sweep is still Jacobi's.
        let p = Problem::new(8, 2, 4).unwrap();
        let subs = away_and_back(&p, 1, 2..4, 6);
        assert!(subs.iter().all(|s| s.count() == 6));
        assert_eq!(subs.assemble(&p), sequential_jacobi(&p, 6));
    }

    #[test]
    fn every_block_a_pass_sweeps_starts_on_a_cache_line_and_covers_its_regions() {
        use Todo::{Skip as S, Sweep as W};
        // 3 x 3 regions 9 wide: columns 1, 10 and 19 of the padded block.
        let p = Problem::new(27, 1, 9).unwrap();
        let slab = Slab::new(&p, 0);
        for away in 0..9 {
            let todo: Vec<Todo> = (0..9).map(|k| if k == away { S } else { W }).collect();
            let blocks = slab.blocks(&todo);
            let sweeps = slab.sweeps(&todo);
            assert_eq!(blocks.len(), sweeps.len());
            for (b, s) in blocks.iter().zip(&sweeps) {
                assert_eq!((s.col - 1) % LINE, 0, "{away} away: {s:?} starts mid-line");
                assert!(
                    s.col >= 1 && s.col <= b.col && b.col - s.col < LINE,
                    "{s:?}"
                );
                assert_eq!((s.row, s.h, s.col + s.w), (b.row, b.h, b.col + b.w));
            }
        }
        // A block at column 1 is left as it is.
        assert_eq!(slab.sweeps(&[W; 9]), slab.blocks(&[W; 9]));
    }

    #[test]
    fn a_block_swept_from_the_line_before_it_keeps_jacobi_exact() {
        // Each region in turn leaves domain 0's slab and comes back, so that
        // the blocks left start mid-line and are swept from the line before
        // them, over scratch; in between, a pass that gates a live region
        // the widened sweep covers leaves its values alone.
        for (size, per) in [(20, 4), (27, 9)] {
            let p = Problem::new(size, 2, per).unwrap();
            for away in 0..per {
                let subs = away_and_back(&p, away, 1..4, 6);
                assert_eq!(
                    subs.assemble(&p),
                    sequential_jacobi(&p, 6),
                    "{size}² in {per}, subdomain {away} away"
                );
            }
        }
        // Region 0 gated while regions 1 and 2 (columns 10-27) are swept
        // from column 9, its last: it keeps its values.
        let p = Problem::new(27, 1, 9).unwrap();
        let subs = Subdomains::with_slabs(&p, |_| true);
        let slab = subs.slab(0).unwrap();
        slab.lock().touch(&p, &subs, 0);
        use Todo::{Skip as S, Sweep as W};
        let todo = [S, W, W, W, W, W, W, W, W];
        assert_eq!(slab.sweeps(&todo)[0].col, 9);
        let before = subs.assemble(&p);
        sweep_all(&mut slab.lock(), &subs, &todo, EdgeVersion::Own);
        let after = subs.assemble(&p);
        let g0 = &p.subs[0];
        for i in g0.row0..g0.row0 + g0.height {
            for j in g0.col0..g0.col0 + g0.width {
                assert_eq!(after[[i, j]], before[[i, j]], "({i}, {j})");
            }
        }
    }

    #[test]
    fn a_gated_region_keeps_its_values_across_the_swap() {
        let p = Problem::new(8, 1, 4).unwrap();
        let subs = Subdomains::with_slabs(&p, |_| true);
        let slab = subs.slab(0).unwrap();
        slab.lock().touch(&p, &subs, 0);
        let before = subs.assemble(&p);
        let mut g = slab.lock();
        use Todo::{Skip as S, Sweep as W};
        sweep_all(&mut g, &subs, &[W, S, S, S], EdgeVersion::Latest);
        drop(g);
        let after = subs.assemble(&p);
        let g1 = &p.subs[1];
        for i in g1.row0..g1.row0 + g1.height {
            for j in g1.col0..g1.col0 + g1.width {
                assert_eq!(after[[i, j]], before[[i, j]]);
            }
        }
        assert_eq!(
            subs.iter().map(Subdomain::count).collect::<Vec<_>>(),
            [1, 0, 0, 0]
        );
    }
}

/// A model check of a subdomain leaving its slab and coming back: `cargo
/// test --features loom --lib loom`. The domain's thread's pass
/// (`runtime/worker.rs`'s `slab_pass`: export what it no longer owns,
/// import what it owns again, update what is live and its own), a guest's
/// `try_update` (its cells if they are its own; else the slab, to export
/// them) and the balancer's moves, step for step on loom's `Mutex` and
/// atomics, since the real slab and cells sit behind parking_lot's mutex,
/// which loom cannot schedule. The cells are reduced to how many updates
/// were applied to them.
#[cfg(all(test, feature = "loom"))]
mod loom_tests {
    use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
    use loom::sync::{Arc, Mutex};

    /// The slab's state: whether the region is live, and its cells.
    struct Slab {
        live: bool,
        cells: u64,
    }

    /// The subdomain's cells of its own and their place.
    struct Cells {
        home: bool,
        cells: u64,
    }

    struct World {
        slab: Mutex<Slab>,
        sub: Mutex<Cells>,
        count: AtomicU64,
        owner: AtomicUsize,
        /// Set while someone applies an update: two at once is the bug.
        writing: AtomicBool,
    }

    impl World {
        /// One update of whichever copy the caller holds, then the count.
        fn apply(&self, cells: &mut u64) {
            assert!(!self.writing.swap(true, Ordering::AcqRel), "two writers");
            *cells += 1;
            self.writing.store(false, Ordering::Release);
            let c = self.count.load(Ordering::Relaxed);
            self.count.store(c + 1, Ordering::Release);
        }

        /// `SlabGuard::export`: under the slab, the cells' lock taken
        /// (slab first, cells second, as everywhere).
        fn export(&self, slab: &mut Slab) {
            let mut own = self.sub.lock().unwrap();
            own.cells = slab.cells;
            own.home = false;
            slab.live = false;
        }

        /// The domain's thread (0): one pass.
        fn pass(&self) -> bool {
            let Ok(mut slab) = self.slab.try_lock() else {
                return false;
            };
            let owner = self.owner.load(Ordering::Acquire);
            if slab.live && owner != 0 {
                self.export(&mut slab);
            } else if !slab.live
                && owner == 0
                && let Ok(mut own) = self.sub.try_lock()
                && !own.home
            {
                slab.cells = own.cells;
                own.home = true;
                slab.live = true;
            }
            if slab.live && self.owner.load(Ordering::Acquire) == 0 {
                let mut cells = slab.cells;
                self.apply(&mut cells);
                slab.cells = cells;
                return true;
            }
            false
        }

        /// A guest (thread 1): one `try_update`.
        fn try_update(&self) -> bool {
            let Ok(mut own) = self.sub.try_lock() else {
                return false;
            };
            if own.home {
                if self.owner.load(Ordering::Acquire) != 1 {
                    return false;
                }
                drop(own);
                let Ok(mut slab) = self.slab.try_lock() else {
                    return false;
                };
                if slab.live {
                    self.export(&mut slab);
                }
                drop(slab);
                match self.sub.try_lock() {
                    Ok(o) if !o.home => own = o,
                    _ => return false,
                }
            }
            if self.owner.load(Ordering::Acquire) != 1 {
                return false;
            }
            let mut cells = own.cells;
            self.apply(&mut cells);
            own.cells = cells;
            true
        }
    }

    /// The domain's thread makes three passes and the guest two tries
    /// while the balancer moves the subdomain to the guest and back. In
    /// every interleaving: never two writers, and the cells where they
    /// end (the slab if live, else their own) hold exactly the updates
    /// counted: none lost, none doubled, whichever copy each was applied to.
    #[test]
    fn loom_a_subdomain_leaving_and_rejoining_its_slab_loses_and_doubles_no_update() {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(3);
        model.check(|| {
            let w = Arc::new(World {
                slab: Mutex::new(Slab {
                    live: true,
                    cells: 0,
                }),
                sub: Mutex::new(Cells {
                    home: true,
                    cells: 0,
                }),
                count: AtomicU64::new(0),
                owner: AtomicUsize::new(0),
                writing: AtomicBool::new(false),
            });
            let home = {
                let w = w.clone();
                loom::thread::spawn(move || (0..3).filter(|_| w.pass()).count() as u64)
            };
            let guest = {
                let w = w.clone();
                loom::thread::spawn(move || (0..2).filter(|_| w.try_update()).count() as u64)
            };
            w.owner.store(1, Ordering::Release);
            w.owner.store(0, Ordering::Release);
            let done = home.join().unwrap() + guest.join().unwrap();
            let slab = w.slab.lock().unwrap();
            let own = w.sub.lock().unwrap();
            // Exactly one copy is the subdomain's.
            assert_eq!(slab.live, own.home);
            let cells = if slab.live { slab.cells } else { own.cells };
            assert_eq!(cells, done, "cells against updates made");
            assert_eq!(w.count.load(Ordering::Acquire), done);
        });
    }
}
