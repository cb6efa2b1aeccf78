//! The runtime's view of the other processes of a run across ranks: what a
//! rank shares with its peers, and how they agree on when the run stops.
//! The `ranks` module (feature `mpi`) implements [`Peers`] over MPI; a run
//! in one process has none, and the runtime then never calls these.
//!
//! # Protocol: a run across ranks
//!
//! **Who holds what.** Rank `r` of `R` runs threads (= domains) `r T ..
//! (r + 1) T` of the global problem, and starts with their subdomains; a
//! balancer may then move subdomains between ranks (`migrate.rs`), and every
//! rank applies every move, so all ranks hold the same owner map. Every
//! rank keeps every subdomain's edges and count; the cells only of its own. A neighbouring rank's subdomain that touches one of
//! ours is a *ghost*: only this rank's exchanging thread writes its edges
//! and count (never a worker: no thread owns it here), with the edge
//! publication protocol of `subdomain.rs` (values of copy `c % 2`, then
//! `count = c` with Release).
//!
//! **An exchange** ([`Peers::exchange`]) sends the latest published edge of
//! each of our subdomains that a peer's subdomain reads, with its count
//! (the routes follow the owner map: [`Peers::reroute`]); receives the
//! peer's into the ghosts; and reduces every rank's [`Wish`]: the most
//! urgent stop any rank wants ([`urgency`]), the sum of the local residual
//! estimates, the most updates of any thread, the latest clock. An
//! exchange that agrees to go on may then call the balancer (`migrate.rs`). Every rank gets the
//! same [`Wish`] back from the same exchange, so [`verdict`] gives every rank
//! the same answer in the same exchange: no rank stops while another waits
//! for it.
//!
//! * `sync`: the barrier's leader exchanges once per crossing, with every
//!   local thread arrived, so every edge sent is of this iteration `k` and
//!   every ghost receives exactly version `k` (into copy `k % 2`) before the
//!   leader releases the barrier: the next iteration reads exactly the
//!   values a one-process run reads, and sync stays sequential Jacobi bit
//!   for bit. The monitor never stops a sync run across ranks itself: it
//!   leaves its time limit or interrupt as a wish for the next crossing.
//! * `ssync`/`async`: the monitor exchanges in rounds, as fast as the peers
//!   answer, while the workers sweep; a worker reads whatever a ghost holds
//!   now, exactly as it reads a local neighbour. A worker at its budget sets
//!   only its own rank's flag; the monitor carries it as a wish to the next
//!   round, where all ranks agree. Ghost counts only grow (one sender, MPI's
//!   non-overtaking order), so ssync's gate, reading a ghost's count, sees at
//!   most the true lag: the bound holds across ranks.
//!
//! **The end of an epoch: the exact residual, never gathered.** Once all
//! ranks agree, each waits for its workers; then one more exchange
//! *settles* the edges: every rank sends the edges its subdomains last
//! published, and with every worker of every rank stopped, these are the
//! final values, so afterwards every ghost holds exactly the outermost
//! cells of the subdomain it stands for. The cells of all ranks, as they
//! are, form one state of the global grid (no update is half-applied: each
//! is made whole under its subdomain's lock before its worker stops), and
//! each rank computes `sum r^2` over the cells it owns, reading across its
//! edges what the settled ghosts hold: exactly the neighbours' cells of
//! that state. An all-reduce sums the parts; the residual is that sum's
//! root over `||r0||`, the same formula as one process's
//! [`crate::problem::residual_norm`] up to the order of the additions (a
//! relative difference near 1e-15; tested to 1e-12 against the gathered
//! grid). "Converged" is declared only on this residual, which is computed,
//! not estimated, from the state the run stopped in, so a false
//! convergence cannot be reported: a refuted estimate tightens the line the
//! same way on every rank (the same sum), and a new epoch starts
//! everywhere. Rank 0 holds the whole grid only if the run writes it
//! (`--grid`), gathered once at the end. This stops the computation to
//! check, where JACK2's snapshot does not; it is exact, and cheap next to a
//! run's length.
//!
//! **Why no rank hangs.** Every exchange is matched: each rank makes the
//! same sequence of exchanges (one per crossing in sync, one per round in
//! async, ended by the same agreed verdict), then the same settling
//! exchange and sum, and at the end the same gather if any. A rank
//! whose worker panics aborts the whole job (`MPI_Abort`), as does a rank
//! that is killed (mpirun's behaviour), rather than leave its peers waiting.

use std::ops::Range;

use ndarray::Array2;

use crate::engine::{Outcome, StopReason};
use crate::problem::Problem;
use crate::schedule::{StopRule, Verdicts};
use crate::subdomain::{Subdomain, Subdomains};

/// What one rank brings to an exchange; the same type carries what all
/// ranks agreed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Wish {
    /// The stop this rank wants now (its time limit, an interrupt, a worker
    /// at its budget); over all ranks, the most urgent.
    pub stop: Option<StopReason>,
    /// This rank's residual estimate (its subdomains' last squared local
    /// residuals, summed); over all ranks, their sum.
    pub estimate_sq: f64,
    /// The least residual round of this rank's subdomains' last residuals;
    /// over all ranks, the least: whether a round is complete
    /// (`schedule::residual`).
    pub round: u64,
    /// The sum of the counts this rank's subdomains' last residuals are of;
    /// over all ranks, their sum.
    pub at_sum: f64,
    /// The sum of this rank's subdomains' counts; over all ranks, their sum.
    pub count_sum: f64,
    /// Most subdomain updates of one of this rank's threads; over all
    /// ranks, the most.
    pub most_updates: u64,
    /// This rank's clock (ns since its start); over all ranks, the latest:
    /// the one clock every rank's balancer reads (`migrate`).
    pub now_ns: u64,
}

/// The other ranks of a run.
pub(crate) trait Peers: Sync {
    /// The global ids of the threads (and domains) this rank runs.
    fn threads(&self) -> Range<usize>;
    /// Each global thread's node (its rank's host, numbered in order of
    /// first appearance): what `lb_group = node` groups by.
    fn thread_nodes(&self) -> Vec<usize>;
    /// Called once by every rank before the clock starts.
    fn start(&self);
    /// One exchange of edges and wishes (see the module's protocol); the
    /// same all-reduce also sums `sums` over all ranks, element by element,
    /// in place (the balancer's view, `migrate`; empty on most exchanges,
    /// and of one length on every rank).
    fn exchange(&self, subs: &[Subdomain], wish: Wish, sums: &mut [f64]) -> Wish;
    /// The whole grid on rank 0 (`None` elsewhere), at the end of the run
    /// and only if [`Peers::wants_grid`].
    fn gather(&self, problem: &Problem, subs: &Subdomains) -> Option<Array2<f64>>;
    /// Whether the run's grid is to be written (`--grid`): otherwise no
    /// rank ever holds more than its own cells.
    fn wants_grid(&self) -> bool;
    /// Sums `values` over all ranks, element by element, in place: every
    /// rank gets the sums (the exact residual's parts).
    fn sum(&self, values: &mut [f64]);
    /// Sums `sums` and takes the maximum of `maxes` over all ranks, element
    /// by element, in place, the two in flight together (a gossip call's
    /// means, `wire.rs`).
    fn reduce(&self, sums: &mut [f64], maxes: &mut [f64]);
    /// Point to point, lengths as they come (`wire.rs`'s inform rounds):
    /// sends each `(rank, words)` and receives one message from each rank
    /// in `from`, returned in that order. Every rank calls it in the same
    /// round.
    fn post(&self, sends: &[(usize, Vec<u64>)], from: &[usize]) -> Vec<Vec<u64>>;
    /// Subdomains moving between ranks (`migrate`): sends each `(rank,
    /// words)` and receives, from each `(rank, length)`, that many words,
    /// returned in that order. Every rank calls it in the same exchange.
    fn migrate(&self, sends: &[(usize, Vec<u64>)], recvs: &[(usize, usize)]) -> Vec<Vec<u64>>;
    /// Owners changed: from the next exchange on, edges travel between the
    /// ranks that `owner_rank` (one per subdomain) now names.
    fn reroute(&self, problem: &Problem, owner_rank: &[usize]);
    /// Fills in what the other ranks' threads and subdomains did.
    fn merge(&self, outcome: &mut Outcome);
    /// Ends every rank of the job now (a worker panicked here).
    fn abort(&self) -> !;
}

/// How urgent a stop is: the most urgent of all ranks' wishes wins, in the
/// order [`StopRule::first`] prefers (a panic aborts the job before).
pub(crate) fn urgency(stop: Option<StopReason>) -> u64 {
    match stop {
        None => 0,
        Some(StopReason::Converged) => 1,
        Some(StopReason::TimeLimit) => 2,
        Some(StopReason::MaxIterations) => 3,
        Some(StopReason::Interrupted) => 4,
        Some(StopReason::WorkerPanic) => 5,
        Some(StopReason::Deadlock) => 6,
        Some(StopReason::ClockRange) => 7,
    }
}

/// The inverse of [`urgency`] (`None` for an unknown code).
pub(crate) fn from_urgency(code: u64) -> Option<StopReason> {
    StopReason::ALL
        .into_iter()
        .find(|&r| urgency(Some(r)) == code)
}

/// Whether, and why, the run stops after an exchange that agreed `all`: the
/// same on every rank, since every rank has the same `all`, rule and
/// residual schedule. `converged` looks at the agreed estimate (a complete
/// round's, against the line), only when nothing else stops the run.
pub(crate) fn verdict(
    rule: &StopRule,
    all: Wish,
    converged: impl FnOnce() -> bool,
) -> Option<StopReason> {
    let look = Verdicts {
        interrupted: all.stop == Some(StopReason::Interrupted),
        most_updates: Some(all.most_updates),
        now: None,
    };
    rule.first(look, || false)
        .or(all.stop)
        .or_else(|| converged().then_some(StopReason::Converged))
}

/// The termination delay of a converged run across ranks, inferred (see
/// `docs/across-nodes.md`): seconds from the exchange at which the true
/// residual met `tolerance` to `stop_ns`, the run's end. The true residual
/// is known only at the end (`residual`, relative, exact); before, each
/// exchange knows the ranks' agreed estimate (`log`: its clock and the
/// summed squared local residuals, oldest first, since the epoch began).
/// The estimate is scaled by the end's ratio of true to estimated, and the
/// first exchange whose scaled estimate is within the tolerance is taken as
/// the moment the target was met. In sync the local residuals are exact,
/// so the scaling is a constant and the moment is exact to an exchange;
/// in async the estimate reads stale ghosts, and the scaling assumes their
/// effect steady over the last stretch. `None` without a usable log.
pub(crate) fn termination_delay(
    log: &[(u64, f64)],
    residual: f64,
    tolerance: f64,
    stop_ns: u64,
) -> Option<f64> {
    let &(_, last) = log.last()?;
    if !(last > 0.0 && last.is_finite()) {
        return None;
    }
    let scale = residual / last.sqrt();
    let (met_ns, _) = log.iter().find(|(_, e)| scale * e.sqrt() <= tolerance)?;
    Some(stop_ns.saturating_sub(*met_ns) as f64 / 1e9)
}

/// The rank each subdomain's owner runs on, `per_rank` threads to a rank:
/// every rank computes the same from the same owners.
pub(crate) fn owner_ranks(subs: &[Subdomain], per_rank: usize) -> Vec<usize> {
    subs.iter().map(|s| s.owner() / per_rank).collect()
}

/// Ranks as threads of one process, exchanging through shared memory: the
/// runtime's side of the protocol, checked without MPI (on every `cargo
/// test`); `tests/integration/mpi.rs` checks the MPI side under mpirun.
#[cfg(test)]
mod tests;

#[cfg(test)]
mod examples {
    //! The documented behaviour of this module's items, as the examples
    //! their docs would show (rustdoc runs doc examples of public items
    //! only).

    #[test]
    fn the_delay_runs_from_the_first_scaled_estimate_within_the_tolerance() {
        use crate::runtime::peers::termination_delay;
        // Estimates whose roots fall 16, 8, 4, 2; the end's true residual
        // is 0.5 with the last root 2: scale 1/4, so 8 -> 2, 4 -> 1, 2 -> 0.5.
        let log = [(0, 256.0), (10, 64.0), (20, 16.0), (30, 4.0)];
        assert_eq!(termination_delay(&log, 0.5, 1.0, 50), Some(30e-9));
        assert_eq!(termination_delay(&log, 0.5, 0.5, 50), Some(20e-9));
        assert_eq!(termination_delay(&[], 0.5, 1.0, 50), None);
        assert_eq!(termination_delay(&[(0, f64::INFINITY)], 0.5, 1.0, 50), None);
    }

    #[test]
    fn urgency_orders_the_stops_and_round_trips() {
        use crate::engine::StopReason::*;
        use crate::runtime::peers::{from_urgency, urgency};
        assert!(urgency(Some(Interrupted)) > urgency(Some(MaxIterations)));
        assert!(urgency(Some(MaxIterations)) > urgency(Some(TimeLimit)));
        assert!(urgency(Some(TimeLimit)) > urgency(None));
        for r in [None, Some(Converged), Some(TimeLimit), Some(Interrupted)] {
            assert_eq!(from_urgency(urgency(r)), r);
        }
    }

    #[test]
    fn every_rank_reaches_the_same_verdict_from_the_same_wishes() {
        use crate::engine::StopReason::*;
        use crate::runtime::peers::{Wish, verdict};
        use crate::schedule::{EstimateLine, StopRule};
        let rule = StopRule {
            budget: 10,
            time_limit: None,
        };
        let line = EstimateLine::new(1.0, Some(0.1)); // met at 0.01
        let all = |stop, estimate_sq, most_updates| Wish {
            stop,
            estimate_sq,
            round: 1,
            at_sum: 0.0,
            count_sum: 0.0,
            most_updates,
            now_ns: 0,
        };
        let met = |w: Wish| move || line.met(w.estimate_sq);
        let v = |w: Wish| verdict(&rule, w, met(w));
        assert_eq!(v(all(None, 1.0, 3)), None);
        assert_eq!(v(all(None, 0.01, 3)), Some(Converged));
        assert_eq!(v(all(Some(TimeLimit), 0.01, 3)), Some(TimeLimit));
        assert_eq!(v(all(Some(TimeLimit), 1.0, 10)), Some(MaxIterations));
        assert_eq!(v(all(Some(Interrupted), 1.0, 10)), Some(Interrupted));
        // The estimate is not looked at when something else stops the run.
        let looked = std::cell::Cell::new(false);
        verdict(&rule, all(Some(TimeLimit), 0.01, 3), || {
            looked.set(true);
            true
        });
        assert!(!looked.get());
    }
}
