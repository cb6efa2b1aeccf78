//! A run across MPI ranks (feature `mpi`): `mpirun -n R braid run ...`.
//!
//! [`Session`] starts MPI and turns one rank's plan into its part of the
//! global run: the grid is `R` times bigger, rank `r` runs domains `r T ..
//! (r + 1) T`, and the placement lists every rank's cores. [`Ranks`]
//! implements the runtime's [`Peers`] over MPI; the protocol (what an
//! exchange carries, why sync stays bit for bit, how ranks agree on the
//! stop, why none hangs) is written in `runtime/peers.rs`.
//!
//! Every call here goes through rsmpi's safe API. Edges travel by
//! non-blocking sends and receives, the wishes by non-blocking all-reduces,
//! completed by testing with short sleeps: the exchanging thread (the
//! monitor, or in sync the barrier's leader) shares a core with a worker and
//! must not spin on it the way a blocking MPI wait does. Only one thread of
//! a rank calls MPI at a time (the leader in sync, the monitor otherwise, the
//! main thread between epochs), so `MPI_THREAD_SERIALIZED` suffices.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mpi::Threading;
use mpi::collective::SystemOperation;
use mpi::datatype::PartitionMut;
use mpi::environment::Universe;
use mpi::request::{Request, Scope};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use ndarray::Array2;

use crate::engine::{Outcome, RanksInfo};
use crate::plan::Plan;
use crate::problem::{Neighbour, Problem, Side};
use crate::runtime::peers::{Peers, Wish, from_urgency, owner_ranks, urgency};
use crate::subdomain::{Subdomain, Subdomains};
use crate::topology::Placement;

/// The tag of edge messages (one message per peer and exchange; MPI keeps
/// messages of one sender and tag in order).
const EDGES: i32 = 7;
/// The tag of subdomains moving between ranks (`runtime/migrate.rs`).
const MIGRATE: i32 = 8;
/// The tag of a gossip call's inform letters (`runtime/wire.rs`).
const GOSSIP: i32 = 9;
/// How long a sync exchange spins (yielding) before it sleeps between
/// tests: a crossing on a small domain takes tens of microseconds, and the
/// rank's other threads wait at the barrier meanwhile. The monitor of an
/// ssync/async run does not spin: a worker needs the core.
const SPIN: Duration = Duration::from_micros(50);
const POLL: Duration = Duration::from_micros(20);
/// The exit code of a job this rank aborts (a worker panicked).
const ABORT_CODE: i32 = 70;

/// Why a run across ranks cannot start.
#[derive(Debug, thiserror::Error)]
pub enum RanksError {
    /// MPI was started before.
    #[error("MPI was already initialised")]
    Initialised,
    /// The MPI library cannot let one thread at a time call it.
    #[error(
        "the MPI library offers only {0:?} threading; braid needs Serialized (one thread at a time)"
    )]
    Threading(Threading),
    /// The ranks resolved `threads` differently.
    #[error(
        "the ranks resolved different thread counts ({counts:?}): set `threads` to one number, \
         the threads of each rank"
    )]
    ThreadsDiffer {
        /// Each rank's threads.
        counts: Vec<u64>,
    },
    /// The ranks' domains do not tile a grid.
    #[error("the global grid cannot be built: {0}")]
    Decomposition(#[from] crate::problem::DecompositionError),
    /// The grid is too large for one gather.
    #[error(
        "the grid holds {cells} cells, more than one MPI gather carries (2^31 - 1): run \
         without --grid"
    )]
    TooManyCells {
        /// The grid's cells.
        cells: usize,
    },
}

/// MPI, started for the life of a run (finalised when dropped).
pub struct Session {
    universe: Universe,
    /// This rank, from 0.
    pub rank: usize,
    /// How many ranks the run has.
    pub size: usize,
}

impl Session {
    /// Starts MPI with one thread at a time calling it.
    pub fn start() -> Result<Session, RanksError> {
        let (universe, threading) =
            mpi::initialize_with_threading(Threading::Serialized).ok_or(RanksError::Initialised)?;
        if threading < Threading::Serialized {
            return Err(RanksError::Threading(threading));
        }
        let world = universe.world();
        Ok(Session {
            rank: world.rank() as usize,
            size: world.size() as usize,
            universe,
        })
    }

    /// Whether this rank leads its node: the lowest rank on its host, which
    /// starts the node's parasites.
    pub fn leads_node(&self) -> bool {
        let hosts = self.hosts();
        hosts.iter().position(|h| *h == hosts[self.rank]) == Some(self.rank)
    }

    /// This rank's share of its host's cores, when the launcher left it
    /// the same cores as other ranks on its host (`--bind-to none`, or a
    /// socket binding with several ranks a socket): those ranks split
    /// `allowed` into contiguous shares, in rank order, as hybrid MPI +
    /// threads codes do, so that they do not all pin to its first core.
    /// `None` when no other rank on this host has the same cores (the
    /// launcher's binding is respected as it is).
    pub fn core_share(&self, allowed: &[usize], threads: Option<usize>) -> Option<Vec<usize>> {
        let hosts = self.hosts();
        // Each rank's mask, as a fixed-size bitmap of the CPU ids it holds.
        let words = crate::topology::CPU_SET_SIZE.div_ceil(64);
        let mut mask = vec![0u64; words];
        for &c in allowed.iter().filter(|&&c| c < words * 64) {
            mask[c / 64] |= 1 << (c % 64);
        }
        let all = self.gather_all(&mask);
        let same: Vec<usize> = (0..self.size)
            .filter(|&r| {
                hosts[r] == hosts[self.rank] && all[r * words..(r + 1) * words] == mask[..]
            })
            .collect();
        let n = same.len();
        if n < 2 || allowed.is_empty() {
            return None;
        }
        let i = same
            .iter()
            .position(|&r| r == self.rank)
            .expect("this rank is in its set");
        Some(share(allowed, i, n, threads))
    }

    /// Whether every rank says `ok` (a rank that cannot start must not
    /// leave the others waiting for it).
    pub fn all_ok(&self, ok: bool) -> bool {
        let mut all = 0u8;
        self.universe
            .world()
            .all_reduce_into(&u8::from(ok), &mut all, SystemOperation::min());
        all == 1
    }

    /// Turns this rank's `plan` (its threads, its cores) into its part of
    /// the global run: the global problem, every rank's placement (sockets
    /// numbered rank by rank), and the routes of the edges between ranks.
    /// What runs across ranks at all was checked when the plan was built
    /// (`Plan::check_across_ranks`).
    pub fn plan(&self, plan: &mut Plan, wants_grid: bool) -> Result<Ranks, RanksError> {
        let threads = plan.placement.threads();
        let counts = self.gather_all(&[threads as u64]);
        if counts.iter().any(|&c| c != threads as u64) {
            return Err(RanksError::ThreadsDiffer { counts });
        }
        plan.placement = self.global_placement(&plan.placement);
        let p = &plan.problem;
        plan.problem = Problem::new(
            p.domain_size,
            threads * self.size,
            p.subdomains_per_domain(),
        )?;
        let problem = &plan.problem;
        let spd = problem.subdomains_per_domain();
        // A gather's counts are i32, and balancing may move any share of
        // the grid onto one rank: the whole grid must fit in one.
        let cells: usize = problem.subs.iter().map(|g| g.cells()).sum();
        if wants_grid && cells > i32::MAX as usize {
            return Err(RanksError::TooManyCells { cells });
        }
        let owner_rank: Vec<usize> = (0..problem.subs.len())
            .map(|sub| sub / (threads * spd))
            .collect();
        let routes = routes(problem, self.rank, self.size, &owner_rank);
        Ok(Ranks {
            rank: self.rank,
            size: self.size,
            threads,
            wants_grid,
            routes: std::sync::Mutex::new(routes),
            hosts: self.hosts(),
            cores: plan
                .placement
                .cores
                .chunks(threads)
                .map(<[usize]>::to_vec)
                .collect(),
            exchanges: AtomicU64::new(0),
            sent: AtomicU64::new(0),
            gathered: AtomicU64::new(0),
            migrated: AtomicU64::new(0),
            spin: match plan.settings.mode() {
                crate::variant::Mode::Sync => SPIN,
                _ => Duration::ZERO,
            },
        })
    }

    /// Every rank's placement, rank by rank, each rank's sockets numbered
    /// after the previous rank's.
    fn global_placement(&self, own: &Placement) -> Placement {
        let threads = own.threads();
        let cores = self.gather_all(&to_u64(&own.cores));
        let sockets = self.gather_all(&to_u64(&own.sockets));
        let per_rank = sockets.iter().max().map_or(1, |&s| s + 1);
        Placement {
            cores: cores.iter().map(|&c| c as usize).collect(),
            sockets: sockets
                .iter()
                .enumerate()
                .map(|(i, &s)| ((i / threads) as u64 * per_rank + s) as usize)
                .collect(),
        }
    }

    /// The host each rank runs on.
    fn hosts(&self) -> Vec<String> {
        let name = mpi::environment::processor_name().unwrap_or_default();
        let mut padded = [0u8; 64];
        for (p, b) in padded.iter_mut().zip(name.bytes()) {
            *p = b;
        }
        let mut names = vec![0u8; 64 * self.size];
        self.universe
            .world()
            .all_gather_into(&padded[..], &mut names[..]);
        names
            .chunks(64)
            .map(|c| {
                String::from_utf8_lossy(c)
                    .trim_end_matches('\0')
                    .to_string()
            })
            .collect()
    }

    /// Every rank's `mine` (all of equal length), rank by rank.
    fn gather_all(&self, mine: &[u64]) -> Vec<u64> {
        let mut all = vec![0u64; mine.len() * self.size];
        self.universe.world().all_gather_into(mine, &mut all[..]);
        all
    }
}

/// Share `i` of `n` of `cores` for a rank that runs `threads` threads
/// (`None`: as many as its share holds). Without a count, or when every
/// rank's threads fit on a core of their own: contiguous shares, in order
/// (without a count the first `len % n` one core longer). A rank wanting
/// more than its fair share gets `threads` cores from `i x threads`,
/// wrapping around: ranks overlap as little as they can, and no rank puts
/// two of its own threads on one core. With fewer cores than wanted, the
/// rank's threads are all of them, core `i mod len` first.
fn share(cores: &[usize], i: usize, n: usize, threads: Option<usize>) -> Vec<usize> {
    let len = cores.len();
    match threads {
        None if len >= n => {
            let (base, extra) = (len / n, len % n);
            let start = i * base + i.min(extra);
            let end = start + base + usize::from(i < extra);
            cores[start..end].to_vec()
        }
        None => vec![cores[i % len]],
        Some(t) => {
            let t = t.clamp(1, len);
            (0..t).map(|k| cores[(i * t + k) % len]).collect()
        }
    }
}

fn to_u64(v: &[usize]) -> Vec<u64> {
    v.iter().map(|&x| x as u64).collect()
}

/// What `rank` sends to and receives from each of its `size - 1` peers
/// in an exchange, when subdomain `s` is on rank `owner_rank[s]`.
fn routes(problem: &Problem, rank: usize, size: usize, owner_rank: &[usize]) -> Vec<Route> {
    (0..size)
        .filter(|&q| q != rank)
        .map(|q| Route {
            peer: q as i32,
            send: edges_between(problem, rank, q, owner_rank),
            recv: edges_between(problem, q, rank, owner_rank),
        })
        .filter(|r| !r.send.is_empty())
        .collect()
}

/// The edges of rank `from`'s subdomains that a subdomain on rank `to`
/// reads, in the one order both ends enumerate: by subdomain id, then side.
fn edges_between(
    problem: &Problem,
    from: usize,
    to: usize,
    owner_rank: &[usize],
) -> Vec<(usize, Side)> {
    problem
        .subs
        .iter()
        .filter(|g| owner_rank[g.id] == from)
        .flat_map(|g| {
            Side::ALL
                .into_iter()
                .filter_map(move |side| match g.neighbour(side) {
                    Neighbour::Sub(n) if owner_rank[n] == to => Some((g.id, side)),
                    _ => None,
                })
        })
        .collect()
}

/// What this rank sends to one peer, and receives from it, in each exchange.
#[derive(Debug)]
struct Route {
    peer: i32,
    /// Our subdomains' edges that the peer reads.
    send: Vec<(usize, Side)>,
    /// The peer's subdomains' edges that ours read: ghosts here.
    recv: Vec<(usize, Side)>,
}

/// Every subdomain's seconds as the rank that holds it (`mine`, here)
/// measured them, on every rank. Seconds are never negative: each rank's
/// own, zero elsewhere, then the maximum.
fn owners_seconds(world: &SimpleCommunicator, seconds: &[f64], mine: &[bool]) -> Vec<f64> {
    let own: Vec<f64> = seconds
        .iter()
        .zip(mine)
        .map(|(&x, &m)| if m { x } else { 0.0 })
        .collect();
    let mut all = vec![0.0f64; own.len()];
    world.all_reduce_into(&own[..], &mut all[..], SystemOperation::max());
    all
}

/// The edges this rank sends, peer by peer (each route's edges exported
/// in order), and room for those it receives.
fn edge_buffers(routes: &[Route], subs: &[Subdomain]) -> (Vec<Vec<u64>>, Vec<Vec<u64>>) {
    let sends = routes
        .iter()
        .map(|r| {
            let mut b = Vec::new();
            for &(s, side) in &r.send {
                subs[s].export_edge(side, &mut b);
            }
            b
        })
        .collect();
    let recvs = routes
        .iter()
        .map(|r| {
            let len = r.recv.iter().map(|&(n, side)| 1 + subs[n].edge_len(side));
            vec![0; len.sum()]
        })
        .collect();
    (sends, recvs)
}

/// The edges received, peer by peer, into the subdomains they belong to.
fn import_edges(routes: &[Route], subs: &[Subdomain], recvs: &[Vec<u64>]) {
    for (r, b) in routes.iter().zip(recvs) {
        let mut at = 0;
        for &(n, side) in &r.recv {
            let len = 1 + subs[n].edge_len(side);
            subs[n].import_edge(side, &b[at..at + len]);
            at += len;
        }
    }
}

/// This rank's peers (see `runtime/peers.rs`), as [`Session::plan`] sets
/// them up for one run.
pub struct Ranks {
    rank: usize,
    size: usize,
    threads: usize,
    /// Whether rank 0 gathers the grid at the end (`--grid`).
    wants_grid: bool,
    /// Where edges go, from the owners as of the last move between ranks
    /// (only the exchanging thread uses them: the lock is never contended).
    routes: std::sync::Mutex<Vec<Route>>,
    hosts: Vec<String>,
    cores: Vec<Vec<usize>>,
    exchanges: AtomicU64,
    sent: AtomicU64,
    gathered: AtomicU64,
    migrated: AtomicU64,
    /// [`SPIN`] in sync, nothing otherwise.
    spin: Duration,
}

impl Ranks {
    /// Runs `plan`'s share of this rank to the end, with its peers: the
    /// whole run's outcome on every rank; only rank 0's has the grid.
    pub fn run(&self, plan: &Plan) -> crate::engine::Outcome {
        crate::runtime::run_ranks(&plan.problem, &plan.placement, &plan.settings, self)
    }

    /// Every rank's peak resident memory so far, in bytes, rank by rank
    /// (Linux's `VmHWM`; 0 where it cannot be read.)
    fn gather_peak_rss(&self) -> Vec<u64> {
        let status =
            braid_noise::files::read_text(std::path::Path::new("/proc/self/status"), 1 << 16);
        let kib = status
            .ok()
            .and_then(|t| {
                let line = t.lines().find(|l| l.starts_with("VmHWM:"))?;
                line.split_whitespace().nth(1)?.parse::<u64>().ok()
            })
            .unwrap_or(0);
        let mut all = vec![0u64; self.size];
        SimpleCommunicator::world().all_gather_into(&(kib * 1024), &mut all[..]);
        all
    }
}

/// Waits for every request, leaving the core to others while it waits.
fn complete<'a, D: ?Sized, S: Scope<'a>>(mut pending: Vec<Request<'a, D, S>>, spin: Duration) {
    let began = Instant::now();
    while !pending.is_empty() {
        pending = pending.into_iter().filter_map(|r| r.test().err()).collect();
        if pending.is_empty() {
            break;
        }
        if began.elapsed() < spin {
            std::thread::yield_now();
        } else {
            std::thread::sleep(POLL);
        }
    }
}

impl Peers for Ranks {
    fn threads(&self) -> Range<usize> {
        self.rank * self.threads..(self.rank + 1) * self.threads
    }

    fn thread_nodes(&self) -> Vec<usize> {
        crate::engine::host_nodes(&self.hosts, self.threads)
    }

    fn start(&self) {
        SimpleCommunicator::world().barrier();
    }

    fn exchange(&self, subs: &[Subdomain], wish: Wish, sums: &mut [f64]) -> Wish {
        let world = SimpleCommunicator::world();
        let routes = self.routes.lock().expect("routes");
        let (sends, mut recvs) = edge_buffers(&routes, subs);
        // All reduced by their maximum: the least round as the greatest
        // complement.
        let codes = [
            urgency(wish.stop),
            wish.most_updates,
            wish.now_ns,
            u64::MAX - wish.round,
        ];
        let mut all_codes = [0u64; 4];
        // The estimate, the residual rounds' sums and `sums` in one sum.
        let mut mine = Vec::with_capacity(3 + sums.len());
        mine.extend([wish.estimate_sq, wish.at_sum, wish.count_sum]);
        mine.extend_from_slice(sums);
        let mut summed = vec![0.0f64; mine.len()];
        mpi::request::scope(|sc| {
            let mut pending = Vec::new();
            for (r, b) in routes.iter().zip(&sends) {
                let to = world.process_at_rank(r.peer);
                pending.push(to.immediate_send_with_tag(sc, &b[..], EDGES));
            }
            for (r, b) in routes.iter().zip(recvs.iter_mut()) {
                let from = world.process_at_rank(r.peer);
                pending.push(from.immediate_receive_into_with_tag(sc, &mut b[..], EDGES));
            }
            pending.push(world.immediate_all_reduce_into(
                sc,
                &codes[..],
                &mut all_codes[..],
                SystemOperation::max(),
            ));
            let sum = world.immediate_all_reduce_into(
                sc,
                &mine[..],
                &mut summed[..],
                SystemOperation::sum(),
            );
            complete(pending, self.spin);
            complete(vec![sum], self.spin);
        });
        import_edges(&routes, subs, &recvs);
        let bytes: usize = sends.iter().map(|b| b.len() * 8).sum();
        self.sent.fetch_add(bytes as u64, Ordering::Relaxed);
        self.exchanges.fetch_add(1, Ordering::Relaxed);
        sums.copy_from_slice(&summed[3..]);
        Wish {
            stop: from_urgency(all_codes[0]),
            estimate_sq: summed[0],
            round: u64::MAX - all_codes[3],
            at_sum: summed[1],
            count_sum: summed[2],
            most_updates: all_codes[1],
            now_ns: all_codes[2],
        }
    }

    fn sum(&self, values: &mut [f64]) {
        let world = SimpleCommunicator::world();
        let v = values.to_vec();
        mpi::request::scope(|sc| {
            let b = world.immediate_all_reduce_into(sc, &v[..], values, SystemOperation::sum());
            complete(vec![b], self.spin);
        });
    }

    fn reduce(&self, sums: &mut [f64], maxes: &mut [f64]) {
        let world = SimpleCommunicator::world();
        let (s, m) = (sums.to_vec(), maxes.to_vec());
        mpi::request::scope(|sc| {
            let a = world.immediate_all_reduce_into(sc, &s[..], sums, SystemOperation::sum());
            let b = world.immediate_all_reduce_into(sc, &m[..], maxes, SystemOperation::max());
            complete(vec![a, b], self.spin);
        });
    }

    fn post(&self, sends: &[(usize, Vec<u64>)], from: &[usize]) -> Vec<Vec<u64>> {
        let world = SimpleCommunicator::world();
        let mut received: Vec<Option<Vec<u64>>> = vec![None; from.len()];
        mpi::request::scope(|sc| {
            let pending: Vec<_> = sends
                .iter()
                .map(|(to, words)| {
                    let p = world.process_at_rank(*to as i32);
                    p.immediate_send_with_tag(sc, &words[..], GOSSIP)
                })
                .collect();
            // Lengths as they come: a matched probe per sender, polled as
            // `complete` polls (one message per sender and round, and MPI
            // keeps one sender's messages of a tag in order).
            let began = Instant::now();
            while received.iter().any(Option::is_none) {
                let mut got = false;
                for (r, slot) in from.iter().zip(received.iter_mut()) {
                    if slot.is_none() {
                        let p = world.process_at_rank(*r as i32);
                        if let Some(probed) = p.immediate_matched_probe_with_tag(GOSSIP) {
                            *slot = Some(probed.matched_receive_vec::<u64>().0);
                            got = true;
                        }
                    }
                }
                if got || received.iter().all(Option::is_some) {
                    continue;
                }
                if began.elapsed() < self.spin {
                    std::thread::yield_now();
                } else {
                    std::thread::sleep(POLL);
                }
            }
            complete(pending, self.spin);
        });
        received
            .into_iter()
            .map(Option::unwrap_or_default)
            .collect()
    }

    fn migrate(&self, sends: &[(usize, Vec<u64>)], recvs: &[(usize, usize)]) -> Vec<Vec<u64>> {
        let world = SimpleCommunicator::world();
        let mut received: Vec<Vec<u64>> = recvs.iter().map(|&(_, len)| vec![0; len]).collect();
        mpi::request::scope(|sc| {
            let mut pending = Vec::new();
            for (to, words) in sends {
                let p = world.process_at_rank(*to as i32);
                pending.push(p.immediate_send_with_tag(sc, &words[..], MIGRATE));
            }
            for ((from, _), buf) in recvs.iter().zip(received.iter_mut()) {
                let p = world.process_at_rank(*from as i32);
                pending.push(p.immediate_receive_into_with_tag(sc, &mut buf[..], MIGRATE));
            }
            complete(pending, self.spin);
        });
        let bytes: usize = sends.iter().map(|(_, w)| w.len() * 8).sum();
        self.migrated.fetch_add(bytes as u64, Ordering::Relaxed);
        received
    }

    fn reroute(&self, problem: &Problem, owner_rank: &[usize]) {
        *self.routes.lock().expect("routes") = routes(problem, self.rank, self.size, owner_rank);
    }

    fn gather(&self, problem: &Problem, subs: &Subdomains) -> Option<Array2<f64>> {
        let world = SimpleCommunicator::world();
        let root = world.process_at_rank(0);
        // Each rank's cells, its subdomains in id order: every rank knows
        // every owner, so rank 0 knows where each arrives.
        let on = owner_ranks(subs, self.threads);
        let cells = |rank: usize| -> usize {
            (subs.iter().zip(&on))
                .filter(|&(_, &r)| r == rank)
                .map(|(s, _)| s.geom.cells())
                .sum()
        };
        let mut mine = Vec::with_capacity(cells(self.rank));
        for (s, _) in subs.iter().zip(&on).filter(|&(_, &r)| r == self.rank) {
            subs.interior_into(problem, s.geom.id, &mut mine);
        }
        if self.rank != 0 {
            self.gathered
                .fetch_add(mine.len() as u64 * 8, Ordering::Relaxed);
            root.gather_varcount_into(&mine[..]);
            return None;
        }
        let counts: Vec<i32> = (0..self.size).map(|r| cells(r) as i32).collect();
        let displs: Vec<i32> = counts
            .iter()
            .scan(0, |at, &c| {
                let d = *at;
                *at += c;
                Some(d)
            })
            .collect();
        let mut all = vec![0.0; counts.iter().map(|&c| c as usize).sum()];
        let mut at: Vec<usize> = displs.iter().map(|&d| d as usize).collect();
        {
            let mut part = PartitionMut::new(&mut all[..], counts, displs);
            root.gather_varcount_into_root(&mine[..], &mut part);
        }
        let mut grid = problem.initial_grid();
        for (g, &r) in problem.subs.iter().zip(&on) {
            crate::subdomain::place_interior(&mut grid, g, &all[at[r]..at[r] + g.cells()]);
            at[r] += g.cells();
        }
        Some(grid)
    }

    fn wants_grid(&self) -> bool {
        self.wants_grid
    }

    fn merge(&self, out: &mut Outcome) {
        let world = SimpleCommunicator::world();
        let threads = self.threads();
        let mine: Vec<bool> = {
            let owners = &out.owners;
            owners
                .iter()
                .map(|&o| o / self.threads == self.rank)
                .collect()
        };
        // Each rank's own entries, zero elsewhere, then the maximum of all.
        let max_of = |v: Vec<u64>| {
            let mut all = vec![0u64; v.len()];
            world.all_reduce_into(&v[..], &mut all[..], SystemOperation::max());
            all
        };
        let own = |v: &[u64], keep: &dyn Fn(usize) -> bool| -> Vec<u64> {
            let mut v = v.to_vec();
            for (i, x) in v.iter_mut().enumerate() {
                if !keep(i) {
                    *x = 0;
                }
            }
            v
        };
        let my_sub = |s: usize| mine[s];
        out.subdomain_updates = max_of(own(&out.subdomain_updates, &my_sub));
        if let Some(busy) = out.subdomain_busy_s.as_mut() {
            *busy = owners_seconds(&world, busy, &mine);
        }
        out.thread_updates = max_of(own(&out.thread_updates, &|t| threads.contains(&t)));
        // Every rank applied every move: the owners are the same on all.
        let touchers = max_of(own(&to_u64(&out.first_touchers), &my_sub));
        out.first_touchers = touchers.into_iter().map(|t| t as usize).collect();
        let mut v = [0u64; 2];
        world.all_reduce_into(
            &[out.max_staleness_seen, u64::from(!out.pinned)][..],
            &mut v[..],
            SystemOperation::max(),
        );
        out.max_staleness_seen = v[0];
        out.pinned = v[1] == 0;
        let mut sums = [0u64; 4];
        world.all_reduce_into(
            &[
                out.rehomes,
                self.sent.load(Ordering::Relaxed),
                self.gathered.load(Ordering::Relaxed),
                self.migrated.load(Ordering::Relaxed),
            ][..],
            &mut sums[..],
            SystemOperation::sum(),
        );
        out.rehomes = sums[0];
        // Rank 0's clock, on every rank.
        let mut elapsed = out.elapsed_s;
        world.process_at_rank(0).broadcast_into(&mut elapsed);
        out.elapsed_s = elapsed;
        out.time_to_solution_s = out.converged.then_some(elapsed);
        out.ranks = Some(RanksInfo {
            ranks: self.size,
            threads_per_rank: self.threads,
            hosts: self.hosts.clone(),
            cores: self.cores.clone(),
            exchanges: self.exchanges.load(Ordering::Relaxed),
            halo_bytes: sums[1],
            gathered_bytes: sums[2],
            migrated_bytes: sums[3],
            moves_across: 0,
            peak_rss_bytes: self.gather_peak_rss(),
            termination_delay_s: None,
        });
    }

    fn abort(&self) -> ! {
        SimpleCommunicator::world().abort(ABORT_CODE)
    }
}

#[cfg(test)]
mod tests {
    use super::share;

    #[test]
    fn ranks_on_the_same_cores_take_contiguous_shares_covering_them_once() {
        let cores: Vec<usize> = (0..10).collect();
        let shares: Vec<Vec<usize>> = (0..4).map(|i| share(&cores, i, 4, None)).collect();
        // 10 cores over 4 ranks: 3, 3, 2, 2, in order, each core once.
        assert_eq!(
            shares,
            [vec![0, 1, 2], vec![3, 4, 5], vec![6, 7], vec![8, 9]]
        );
        // Fewer cores than ranks: core i mod len each (oversubscribed).
        let two = [4, 6];
        let few: Vec<Vec<usize>> = (0..4).map(|i| share(&two, i, 4, None)).collect();
        assert_eq!(few, [vec![4], vec![6], vec![4], vec![6]]);
        // With a thread count: blocks of it, disjoint while they fit.
        let two_each: Vec<Vec<usize>> = (0..3).map(|i| share(&cores, i, 3, Some(2))).collect();
        assert_eq!(two_each, [vec![0, 1], vec![2, 3], vec![4, 5]]);
        // More than fit: each rank still has its threads on cores of their
        // own, ranks overlapping, as evenly as the wrap-around makes them.
        let over: Vec<Vec<usize>> = (0..2).map(|i| share(&two, i, 2, Some(2))).collect();
        assert_eq!(over, [vec![4, 6], vec![4, 6]]);
        let one_each: Vec<Vec<usize>> = (0..4).map(|i| share(&two, i, 4, Some(1))).collect();
        assert_eq!(one_each, [vec![4], vec![6], vec![4], vec![6]]);
    }
}
