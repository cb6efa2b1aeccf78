//! Balancing across ranks: one view that every rank holds, the same moves
//! on every rank, and subdomains that travel between ranks with their
//! cells.
//!
//! # Protocol: a balancer call across ranks
//!
//! **Who calls, and when.** Not the workers in turn, as in one process: the
//! rank's exchanging thread (the monitor in async, the barrier's leader in
//! sync), right after an exchange whose verdict is to go on. Each exchange
//! reduces every rank's clock to the latest (`Wish::now_ns`); every rank
//! asks its [`Rotation`] whether a call is due at the clock agreed by the
//! previous exchange, the same question at the same tick on every rank, so
//! either every rank calls in this exchange or none does.
//!
//! **One view, in the exchange's own sum.** A rank whose call is due adds
//! to the exchange's all-reduce a vector in which it has written only what
//! it owns: the count, last residual and busy time of each subdomain it
//! holds, the update total and CPU clock of each of its threads, and the
//! measured cost of its previous call (`Gathered::words`). Summed, that is
//! the whole view, with no collective of its own (a separate one doubled
//! the exchanging thread's waits: on 2 ranks here, `split(0.001)`, which
//! never moves between ranks, spent 0.44-0.52 s in calls of a 2.3 s run
//! and took 20-40% longer to solution). The owners themselves need no message: every rank applies every move, so
//! every rank's owner map is the same before and after each call. The
//! caller ([`Caller`], the same one-process schedule core) is therefore fed
//! the same numbers on every rank; it is deterministic, and its state (the
//! rates, the effort, the `auto` chooser, the `auto` interval, which reads
//! the mean cost of the calls, agreed as above) stays the same everywhere.
//! So every rank computes the same moves.
//!
//! **Or no view: decided apart.** A policy that can decide with only its
//! own threads' entries (`gossip`, the one strategy of the run at a fixed
//! interval: [`Caller::decides_apart`]) adds nothing to the exchange. At
//! the same due call, each rank's caller takes its own view (exact for its
//! threads and their subdomains, [`Shared::view`]) and the policy learns
//! the rest through the wire of `wire.rs`: the group means, inform letters
//! between ranks, then every rank's moves announced to all. Every rank then
//! holds the same moves, as above, and applies them below. Its effort is
//! not measured (that needs every thread's rate), and each rank counts its
//! own calls' cost.
//!
//! **Net moves.** A policy may move a subdomain twice in one call; only
//! where it starts and where it ends matter, so the moves are first reduced
//! to one per subdomain ([`net_moves`]).
//!
//! **A move within a rank** is the one-process handoff
//! (`runtime/calls.rs`), applied by this thread. **A move between ranks**,
//! from thread `A` on rank `P` to thread `B` on rank `Q`, in this same
//! exchange:
//!
//! 1. Every rank sets the owner to `B`, except `Q`, which waits for step 4.
//!    On `P`, `A` drops it from its set: from now on no worker of `P` starts
//!    an update of it (the owner check under the cells' lock fails).
//! 2. `P` packs it ([`Subdomain::pack`]), taking its cells' lock: that waits
//!    for the one update `A` may have begun before step 1 (the honest race
//!    of the one-process handoff), so the count packed is final and equals
//!    the updates made. The pack carries the count, the cells, and the edge
//!    each of its neighbours shows it, as `P` sees them.
//! 3. The packs travel ([`Peers::migrate`]): every rank sends and receives
//!    exactly the packs the (identical) net moves name, one message per
//!    pair of ranks, of a length both ends compute from the geometry.
//! 4. `Q` unpacks ([`Subdomain::unpack`]): cells, then the neighbours' edges
//!    it does not hold itself, then its own edges and count with Release;
//!    only then the owner `B` (Release) and `B`'s set. `B` starts from the
//!    count and cells `A` left.
//! 5. Every rank recomputes its edge routes from the new owners
//!    ([`Peers::reroute`]), used from the next exchange on.
//!
//! **No update is lost or done twice.** Between step 1 and step 4 nobody
//! can update the subdomain (on `P` the owner is not local, on `Q` it is
//! not yet set), the pack waits for an update in flight, and the count
//! travels with the cells that hold its updates: the count after the move
//! is the count before it, and every later update is `B`'s, under the lock.
//!
//! **No edge goes to the wrong owner.** Edges are addressed by subdomain,
//! not by rank, and the routes change between exchanges, identically on
//! every rank, so the two ends of every message agree on what it holds.
//! The last edges `P` sent of the moved subdomain went out in this very
//! exchange, before step 1, and are exactly what `Q` unpacks; what `Q`
//! sends from the next exchange on is newer. A ghost's count only grows
//! (`Subdomain::import_edge_everywhere` keeps the larger).
//!
//! **Sync stays sequential Jacobi.** In sync the leader calls this inside
//! the barrier, with every thread of every rank between iterations `k` and
//! `k + 1` and every edge of iteration `k` exchanged. The moved subdomain
//! arrives with its iteration-`k` cells and edges, and the neighbours'
//! iteration-`k` edges it will read: the next iteration reads exactly what
//! it would have read unmoved. Sync has no user balancer; the test balancer
//! that moves a subdomain back and forth at every crossing checks this bit
//! for bit (`peers/tests.rs`).
//!
//! **No rank hangs.** Every collective here is made by every rank in the
//! same exchange (the decision to call is shared, and so are the moves);
//! the only wait that is not a message is step 2's lock, held for one
//! update at most (the `stall` test hook, which holds a thread inside an
//! update until the run stops, also lets go once its subdomain leaves the
//! rank).
//!
//! **Checked** by the loom model below (steps 1, 2 and 4 against both
//! workers), by `peers/tests.rs` (ranks as threads: sync bit for bit while a
//! subdomain shuttles between ranks at every crossing; async counts that add
//! up) and by `tests/integration/mpi.rs` under mpirun.

use std::ops::Range;
use std::time::Instant;

use super::Shared;
use super::calls::Assignment;
use super::peers::{Peers, owner_ranks};
use super::wire::{RankWire, announce};
use crate::engine::{BalancerSettings, LbStats, Measure, Residual};
use crate::policy::Move;
use crate::schedule::calls::start_interval;
use crate::schedule::{self, Caller, Rotation};
use crate::subdomain::Subdomain;

/// The balancer of a run across ranks, held by the exchanging thread.
#[derive(Debug)]
pub(super) struct RankCalls {
    rotation: Rotation,
    caller: Caller,
    /// This rank's measured cost of its last call, agreed in the next one.
    last_cost_ns: u64,
    /// The clock the ranks agreed at the last exchange.
    agreed_ns: u64,
    /// Subdomains moved between ranks.
    across: u64,
    /// Whether calls are decided apart, without the view (`wire.rs`).
    apart: bool,
}

impl RankCalls {
    /// `measure`: what calls measure between them.
    pub(super) fn new(balancer: &BalancerSettings, measure: Measure) -> Self {
        let interval = start_interval(balancer.interval).as_nanos() as u64;
        let caller = Caller::new(balancer, measure);
        RankCalls {
            rotation: Rotation::new(1, interval),
            apart: caller.decides_apart(),
            caller,
            last_cost_ns: 0,
            agreed_ns: 0,
            across: 0,
        }
    }

    /// When the next call is due (ns on the agreed clock).
    pub(super) fn due_ns(&self) -> u64 {
        self.rotation.due()
    }

    /// Subdomains moved between ranks so far.
    pub(super) fn across(&self) -> u64 {
        self.across
    }

    pub(super) fn stats(&self) -> LbStats {
        self.caller.stats()
    }

    /// What this rank adds to the next exchange's sum: its part of the
    /// view if a call is due at the clock all ranks agreed last (so every
    /// rank adds one, or none does) and it is not decided apart, else
    /// nothing.
    pub(super) fn view_words(&self, sh: &Shared<'_>, peers: &dyn Peers) -> Vec<f64> {
        match self.rotation.is_due(0, self.agreed_ns) && !self.apart {
            true => Gathered::words(sh, peers, self.last_cost_ns),
            false => Vec::new(),
        }
    }

    /// After an exchange that agreed to go on, at the agreed `now_ns`,
    /// with `sums` the summed [`Self::view_words`]: a call if one was due
    /// (see the module's protocol). Returns whether it called.
    /// Whether the coming exchange ends with a call (asked on the clock
    /// agreed at the last one, as [`Self::after_exchange`] asks it), so
    /// that a trace recording loads samples at it.
    pub(super) fn calls_next(&self) -> bool {
        self.rotation.is_due(0, self.agreed_ns)
    }

    pub(super) fn after_exchange(
        &mut self,
        sh: &Shared<'_>,
        peers: &dyn Peers,
        now_ns: u64,
        sums: &[f64],
    ) -> bool {
        // The question `view_words` asked, on the clock agreed before.
        let due = self.rotation.is_due(0, self.agreed_ns);
        self.agreed_ns = now_ns;
        if !due {
            return false;
        }
        let began = Instant::now();
        let per_rank = peers.threads().len();
        let ranks = (sh.placement.threads() / per_rank).max(1);
        let now_s = now_ns as f64 / 1e9;
        let nodes = peers.thread_nodes();
        let groups = self.caller.groups(&sh.placement.sockets, &nodes);
        let (moves, owners) = if self.apart {
            // Each rank's own cost: no view carries the others'.
            if self.caller.stats().calls > 0 {
                self.caller.spent(self.last_cost_ns as f64 / 1e9);
            }
            let owners: Vec<usize> = sh.subs.iter().map(Subdomain::owner).collect();
            let local = peers.threads();
            let me = local.start / per_rank;
            let mut wire = RankWire {
                peers,
                local,
                per_rank,
            };
            let mine = self
                .caller
                .decide_apart(&sh.view(), groups, now_s, &mut wire);
            (announce(peers, &mine, ranks, me), owners)
        } else {
            let view = Gathered::of(sh, sums);
            // The calls' cost, as every rank's mean: the same on every rank.
            if self.caller.stats().calls > 0 {
                self.caller.spent(view.cost_ns as f64 / ranks as f64 / 1e9);
            }
            (self.caller.decide(&view, groups, now_s), view.owners)
        };
        let moves = net_moves(&moves, &owners);
        let local = peers.threads();
        let rank_of = |t: usize| t / per_rank;
        let mut sets = RankSets {
            subs: sh.subs,
            assignment: &sh.assignment,
            local: &local,
            arriving: Vec::new(),
        };
        for m in &moves {
            if !local.contains(&m.from) && local.contains(&m.to) {
                sets.arriving.push(*m);
            }
        }
        self.caller.apply(&moves, &sh.placement.sockets, &mut sets);
        let arriving = std::mem::take(&mut sets.arriving);
        let crossing: Vec<&Move> = moves
            .iter()
            .filter(|m| rank_of(m.from) != rank_of(m.to))
            .collect();
        if !crossing.is_empty() {
            self.carry(sh, peers, &crossing, &arriving, &rank_of);
            peers.reroute(sh.problem, &owner_ranks(sh.subs, per_rank));
            self.across += crossing.len() as u64;
        }
        self.rotation.advance(0, now_ns);
        if let Some(s) = self.caller.next_interval_s() {
            self.rotation.set_interval((s * 1e9) as u64);
        }
        self.last_cost_ns = began.elapsed().as_nanos() as u64;
        true
    }

    /// Steps 2-4 of the protocol: packs what leaves this rank, sends and
    /// receives, installs what arrives.
    fn carry(
        &self,
        sh: &Shared<'_>,
        peers: &dyn Peers,
        crossing: &[&Move],
        arriving: &[Move],
        rank_of: &impl Fn(usize) -> usize,
    ) {
        let local = peers.threads();
        let me = rank_of(local.start);
        // One message per pair of ranks, subdomains in the moves' order.
        let mut sends: Vec<(usize, Vec<u64>)> = Vec::new();
        let mut recvs: Vec<(usize, usize)> = Vec::new();
        for m in crossing {
            let sub = &sh.subs[m.sub];
            if rank_of(m.from) == me {
                let to = rank_of(m.to);
                let at = match sends.iter().position(|(r, _)| *r == to) {
                    Some(at) => at,
                    None => {
                        sends.push((to, Vec::new()));
                        sends.len() - 1
                    }
                };
                sh.subs.pack(sh.problem, m.sub, &mut sends[at].1);
            } else if rank_of(m.to) == me {
                let from = rank_of(m.from);
                match recvs.iter_mut().find(|(r, _)| *r == from) {
                    Some((_, len)) => *len += sub.packed_len(),
                    None => recvs.push((from, sub.packed_len())),
                }
            }
        }
        let received = peers.migrate(&sends, &recvs);
        let mut at = vec![0usize; recvs.len()];
        let foreign = |n: usize| !local.contains(&sh.subs[n].owner());
        for m in arriving {
            let from = rank_of(m.from);
            let i = recvs
                .iter()
                .position(|(r, _)| *r == from)
                .expect("an arrival has a sender");
            let sub = &sh.subs[m.sub];
            let len = sub.packed_len();
            sh.subs.unpack(
                sh.problem,
                m.sub,
                m.to,
                &received[i][at[i]..at[i] + len],
                foreign,
            );
            at[i] += len;
            sub.set_owner(m.to);
            sh.assignment.add(m.to, m.sub);
            sh.assignment.changed(m.to);
        }
    }
}

/// `moves` in order, reduced to one per subdomain: from its owner before
/// the call (`owners`) to its owner after all of them; none where those
/// are the same thread.
pub(super) fn net_moves(moves: &[Move], owners: &[usize]) -> Vec<Move> {
    let mut net: Vec<Move> = Vec::new();
    for m in moves {
        match net.iter_mut().find(|n| n.sub == m.sub) {
            Some(n) => n.to = m.to,
            None => net.push(Move {
                sub: m.sub,
                from: owners[m.sub],
                to: m.to,
            }),
        }
    }
    net.retain(|m| m.from != m.to);
    net
}

/// What a move writes on this rank (steps 1 and 4 of the protocol): owners
/// at once, except of a subdomain arriving here, which is installed first;
/// only this rank's threads' sets.
struct RankSets<'a> {
    subs: &'a [Subdomain],
    assignment: &'a Assignment,
    local: &'a Range<usize>,
    /// Moves that bring a subdomain here from another rank.
    arriving: Vec<Move>,
}

impl RankSets<'_> {
    fn arrives(&self, sub: usize) -> bool {
        self.arriving.iter().any(|m| m.sub == sub)
    }
}

impl schedule::Sets for RankSets<'_> {
    fn set_owner(&mut self, sub: usize, to: usize) {
        if !self.arrives(sub) {
            self.subs[sub].set_owner(to);
        }
    }
    fn remove(&mut self, t: usize, sub: usize) {
        if self.local.contains(&t) {
            self.assignment.remove(t, sub);
        }
    }
    fn add(&mut self, t: usize, sub: usize) {
        if self.local.contains(&t) && !self.arrives(sub) {
            self.assignment.add(t, sub);
        }
    }
    fn changed(&mut self, t: usize) {
        if self.local.contains(&t) {
            self.assignment.changed(t);
        }
    }
}

/// The run as all ranks see it at a call: each rank's own entries, summed.
struct Gathered {
    counts: Vec<u64>,
    owners: Vec<usize>,
    thread_updates: Vec<u64>,
    residuals: Option<Vec<f64>>,
    busy: Option<Vec<f64>>,
    /// Each thread's CPU and wall seconds, when the run measures loads.
    clocks: Option<Vec<(f64, f64)>>,
    /// The ranks' last calls' costs, summed.
    cost_ns: u64,
}

/// Where each part of the view lies in the words an exchange sums: the
/// counts (n), each thread's updates (threads), the calls' cost (1), then
/// the residuals (n, if computed), busy seconds (n) and each thread's CPU
/// and wall seconds (2 threads, if loads are measured). Counts are whole
/// numbers below 2^53, each one rank's entry among zeros: summed as `f64`
/// they are exact.
struct Layout {
    n: usize,
    threads: usize,
    residual: bool,
    loads: bool,
}

impl Layout {
    fn of(sh: &Shared<'_>) -> Layout {
        Layout {
            n: sh.subs.len(),
            threads: sh.thread_updates.len(),
            residual: sh.settings.residual() == Residual::Compute,
            loads: sh.clocks.is_some(),
        }
    }
    fn cost(&self) -> usize {
        self.n + self.threads
    }
    fn residuals(&self) -> usize {
        self.cost() + 1
    }
    fn busy(&self) -> usize {
        self.residuals() + if self.residual { self.n } else { 0 }
    }
    fn clocks(&self) -> usize {
        self.busy() + if self.loads { self.n } else { 0 }
    }
    fn len(&self) -> usize {
        self.clocks() + if self.loads { 2 * self.threads } else { 0 }
    }
}

impl Gathered {
    /// This rank's entries for what it owns, zeros elsewhere: what it adds
    /// to the exchange's sum.
    fn words(sh: &Shared<'_>, peers: &dyn Peers, last_cost_ns: u64) -> Vec<f64> {
        let at = Layout::of(sh);
        let local = peers.threads();
        let mut words = vec![0.0; at.len()];
        for (s, sub) in sh.subs.iter().enumerate() {
            if !local.contains(&sub.owner()) {
                continue;
            }
            words[s] = sub.count() as f64;
            if at.residual {
                words[at.residuals() + s] = sub.residual_sq();
            }
            if at.loads {
                words[at.busy() + s] = sub.busy_s();
            }
        }
        for t in local.clone() {
            let made = sh.thread_updates[t].load(std::sync::atomic::Ordering::Relaxed);
            words[at.n + t] = made as f64;
        }
        words[at.cost()] = last_cost_ns as f64;
        if let Some(clocks) = &sh.clocks {
            for t in local {
                let (cpu, wall) = clocks[t].seconds();
                words[at.clocks() + 2 * t] = cpu;
                words[at.clocks() + 2 * t + 1] = wall;
            }
        }
        words
    }

    /// The view from every rank's [`Gathered::words`], summed.
    fn of(sh: &Shared<'_>, sums: &[f64]) -> Gathered {
        let at = Layout::of(sh);
        assert_eq!(sums.len(), at.len(), "a view of another layout");
        let whole = |v: &[f64]| v.iter().map(|&x| x as u64).collect::<Vec<u64>>();
        let (n, threads) = (at.n, at.threads);
        Gathered {
            counts: whole(&sums[..n]),
            owners: sh.subs.iter().map(Subdomain::owner).collect(),
            thread_updates: whole(&sums[n..n + threads]),
            residuals: at
                .residual
                .then(|| sums[at.residuals()..at.residuals() + n].to_vec()),
            busy: at.loads.then(|| sums[at.busy()..at.busy() + n].to_vec()),
            clocks: at.loads.then(|| {
                let c = at.clocks();
                (0..threads)
                    .map(|t| (sums[c + 2 * t], sums[c + 2 * t + 1]))
                    .collect()
            }),
            cost_ns: sums[at.cost()] as u64,
        }
    }
}

impl schedule::View for Gathered {
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
        self.thread_updates.len()
    }
    fn thread_updates(&self, t: usize) -> u64 {
        self.thread_updates[t]
    }
    fn residual_sq(&self, sub: usize) -> Option<f64> {
        self.residuals.as_ref().map(|r| r[sub])
    }
    fn busy_s(&self, sub: usize) -> Option<f64> {
        self.busy.as_ref().map(|b| b[sub])
    }
    fn core_time(&self, t: usize) -> Option<(f64, f64)> {
        self.clocks.as_ref().map(|c| c[t])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn net_moves_keep_where_a_subdomain_starts_and_ends() {
        let owners = [0, 0, 1];
        let m = |sub, from, to| Move { sub, from, to };
        let moves = [m(0, 0, 1), m(2, 1, 0), m(0, 1, 2), m(2, 0, 1)];
        // Subdomain 0 goes 0 -> 1 -> 2; subdomain 2 goes 1 -> 0 -> 1: no move.
        assert_eq!(net_moves(&moves, &owners), vec![m(0, 0, 2)]);
    }
}

/// A model check of a move between ranks: `cargo test --features loom --lib
/// loom`. The old owner's worker (worker.rs: try_lock, owner check under the
/// lock, update, count with Release), the donor's steps 1-2 (owner first,
/// then the pack under the lock) and the receiver's step 4 (cells and count
/// under the lock, then the owner) with the new owner's worker, restated on
/// loom's primitives (the handoff model's `Sub` and `step`, shared): each
/// rank's copy of the subdomain is its own `Sub`.
#[cfg(all(test, feature = "loom"))]
mod loom_tests {
    use loom::sync::atomic::Ordering;

    use crate::runtime::calls::loom_tests::{Sub, step};

    /// Thread 0 (rank P) tries two updates while P's exchanging thread
    /// moves the subdomain to thread 1 (rank Q); Q installs it while thread
    /// 1 tries an update. In every interleaving: the pack holds every update
    /// P made and its count equals them; P makes none after the pack; the
    /// subdomain on Q ends with the packed updates plus thread 1's, and its
    /// count equals them.
    #[test]
    fn loom_a_subdomain_moved_between_ranks_loses_and_doubles_no_update() {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(3);
        model.check(|| {
            let (here, there) = (Sub::new(0), Sub::new(0));
            let old = {
                let here = here.clone();
                loom::thread::spawn(move || (0..2).filter(|_| step(&here, 0).0).count() as u64)
            };
            let new = {
                let there = there.clone();
                loom::thread::spawn(move || u64::from(step(&there, 1).0))
            };
            // Steps 1 and 2 on P: the owner, then the pack under the lock.
            here.owner.store(1, Ordering::Release);
            let packed = {
                let cells = here.cells.lock().unwrap();
                (*cells, here.count.load(Ordering::Acquire))
            };
            assert_eq!(packed.0, packed.1, "the packed count is the packed updates");
            // Step 4 on Q: cells and count under the lock, then the owner.
            {
                let mut cells = there.cells.lock().unwrap();
                *cells = packed.0;
                there.count.store(packed.1, Ordering::Release);
            }
            there.owner.store(1, Ordering::Release);
            let (made_here, made_there) = (old.join().unwrap(), new.join().unwrap());
            assert_eq!(
                *here.cells.lock().unwrap(),
                packed.0,
                "an update after the pack"
            );
            assert_eq!(made_here, packed.0);
            let final_there = *there.cells.lock().unwrap();
            assert_eq!(final_there, packed.0 + made_there);
            assert_eq!(there.count.load(Ordering::Acquire), final_there);
        });
    }
}
