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
//! **The end of an epoch.** Once all ranks agree, each waits for its
//! workers, then the cells are gathered on rank 0: a consistent state,
//! since no rank's workers run until the residual of that grid, computed on
//! rank 0 exactly as in one process, has been broadcast. "Converged" is
//! declared only on that residual; a refuted estimate tightens the line the
//! same way on every rank (the same residual), and a new epoch starts
//! everywhere. This stops the computation to check, where JACK2's snapshot
//! does not; it is exact, and cheap next to a run's length.
//!
//! **Why no rank hangs.** Every exchange is matched: each rank makes the
//! same sequence of exchanges (one per crossing in sync, one per round in
//! async, ended by the same agreed verdict), then the same gather. A rank
//! whose worker panics aborts the whole job (`MPI_Abort`), as does a rank
//! that is killed (mpirun's behaviour), rather than leave its peers waiting.

use std::ops::Range;

use ndarray::Array2;

use crate::engine::{Outcome, StopReason};
use crate::problem::Problem;
use crate::schedule::{EstimateLine, StopRule, Verdicts};
use crate::subdomain::Subdomain;

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
    /// Called once by every rank before the clock starts.
    fn start(&self);
    /// One exchange of edges and wishes (see the module's protocol).
    fn exchange(&self, subs: &[Subdomain], wish: Wish) -> Wish;
    /// The end of an epoch: the whole grid on rank 0 (`None` elsewhere).
    fn gather(&self, problem: &Problem, subs: &[Subdomain]) -> Option<Array2<f64>>;
    /// Rank 0's `residual` on every rank, and the most updates of any
    /// thread.
    fn share(&self, residual: f64, most_updates: u64) -> (f64, u64);
    /// Sums `counts` and `values` over all ranks, element by element, in
    /// place: every rank gets the sums (the balancer's view, `migrate`).
    fn sum(&self, counts: &mut [u64], values: &mut [f64]);
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
/// same on every rank, since every rank has the same `all`, rule and line.
pub(crate) fn verdict(rule: &StopRule, line: &EstimateLine, all: Wish) -> Option<StopReason> {
    let look = Verdicts {
        interrupted: all.stop == Some(StopReason::Interrupted),
        most_updates: Some(all.most_updates),
        now: None,
    };
    rule.first(look, || false)
        .or(all.stop)
        .or_else(|| line.met(all.estimate_sq).then_some(StopReason::Converged))
}

/// The rank each subdomain's owner runs on, `per_rank` threads to a rank:
/// every rank computes the same from the same owners.
pub(crate) fn owner_ranks(subs: &[Subdomain], per_rank: usize) -> Vec<usize> {
    subs.iter().map(|s| s.owner() / per_rank).collect()
}

/// Ranks as threads of one process, exchanging through shared memory: the
/// runtime's side of the protocol, checked without MPI (on every `cargo
/// test`); `tests/mpi.rs` checks the MPI side under mpirun.
#[cfg(test)]
mod tests;

#[cfg(test)]
mod examples {
    //! The documented behaviour of this module's items, as the examples
    //! their docs would show (rustdoc runs doc examples of public items
    //! only).

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
            most_updates,
            now_ns: 0,
        };
        assert_eq!(verdict(&rule, &line, all(None, 1.0, 3)), None);
        assert_eq!(verdict(&rule, &line, all(None, 0.01, 3)), Some(Converged));
        assert_eq!(
            verdict(&rule, &line, all(Some(TimeLimit), 0.01, 3)),
            Some(TimeLimit)
        );
        assert_eq!(
            verdict(&rule, &line, all(Some(TimeLimit), 1.0, 10)),
            Some(MaxIterations)
        );
        assert_eq!(
            verdict(&rule, &line, all(Some(Interrupted), 1.0, 10)),
            Some(Interrupted)
        );
    }
}
