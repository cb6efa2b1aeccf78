//! What an engine gives back: the [`Outcome`] of a run (counts, owners,
//! the final grid and residual, why it stopped), with what the balancer did
//! ([`LbStats`], [`Effort`]) and the trace of counts over time
//! ([`TraceSample`], from `crate::trace`). `report` reads it; neither
//! engine reads another's.

use ndarray::Array2;
use serde::{Deserialize, Serialize};

use crate::policy::Named;
use crate::trace::TraceSample;

/// Which clock a run's times are on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Clock {
    /// The real runtime: wall-clock seconds.
    Wall,
    /// The simulator: virtual seconds.
    Virtual,
}

/// Why a run stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The residual target was met.
    Converged,
    /// A thread did `max_iterations x subdomains` subdomain updates.
    MaxIterations,
    /// `time_limit` seconds passed.
    TimeLimit,
    /// A worker thread panicked (its message went to stderr).
    WorkerPanic,
    /// SIGINT or SIGTERM arrived.
    Interrupted,
    /// Simulator only: every thread waits on another, which the schedules
    /// rule out; reported rather than hidden, should a change break that.
    Deadlock,
    /// Simulator only: the virtual clock reached its range (about 4.6e6 s),
    /// past which its times are not exact; the command line refuses the
    /// run rather than report them.
    ClockRange,
}

impl StopReason {
    /// Every reason, in declaration order.
    pub const ALL: [StopReason; 7] = [
        StopReason::Converged,
        StopReason::MaxIterations,
        StopReason::TimeLimit,
        StopReason::WorkerPanic,
        StopReason::Interrupted,
        StopReason::Deadlock,
        StopReason::ClockRange,
    ];

    /// Whether the run failed (the CLI exits non-zero after reporting).
    ///
    /// ```
    /// use braid::StopReason;
    /// assert!(StopReason::WorkerPanic.is_failure());
    /// assert!(!StopReason::TimeLimit.is_failure());
    /// ```
    pub fn is_failure(self) -> bool {
        matches!(
            self,
            StopReason::WorkerPanic | StopReason::Deadlock | StopReason::ClockRange
        )
    }
}

/// What the balancer did over a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LbStats {
    /// Balancer calls.
    pub calls: u64,
    /// Subdomains moved.
    pub moves: u64,
    /// Of those, the moves to a thread on another socket.
    pub cross_socket_moves: u64,
    /// Time spent inside balancer calls, all threads together.
    pub time_s: f64,
    /// The effort metric per balancing interval, in time order (adjacent
    /// intervals merged pairwise when a run has more than
    /// [`EFFORT_SAMPLES`] of them).
    #[serde(default)]
    pub effort: Vec<Effort>,
    /// Which balancer ran from when: one entry, or one per switch of
    /// `balancer = auto`.
    #[serde(default)]
    pub ran: Vec<Ran>,
    /// `balancer = auto`: each candidate's effort when last measured.
    #[serde(default)]
    pub tried: Vec<Tried>,
}

impl LbStats {
    /// Merges adjacent effort samples pairwise until at most `max` remain
    /// (totals are kept).
    ///
    /// ```
    /// use braid::{Effort, LbStats};
    /// let e = Effort { t_s: 0.0, interval_s: 1.0, lost_s: 0.5, cost_s: 0.0, moves: 1 };
    /// let mut lb = LbStats { calls: 5, moves: 0, cross_socket_moves: 0, time_s: 0.0,
    ///     effort: vec![e; 5], ran: vec![], tried: vec![] };
    /// lb.coarsen(2);
    /// assert_eq!(lb.effort.len(), 2);
    /// assert_eq!(lb.effort.iter().map(|e| e.interval_s).sum::<f64>(), 5.0);
    /// assert_eq!(lb.effort.iter().map(|e| e.moves).sum::<u64>(), 5);
    /// ```
    pub fn coarsen(&mut self, max: usize) {
        let max = max.max(1);
        while self.effort.len() > max {
            self.effort = self
                .effort
                .chunks(2)
                .map(|p| {
                    p.iter()
                        .copied()
                        .reduce(Effort::merge)
                        .expect("a chunk is not empty")
                })
                .collect();
        }
    }
}

/// Effort samples a report keeps at most.
pub const EFFORT_SAMPLES: usize = 2048;

/// One balancing interval's effort (the effort metric's Equation 5, with
/// the loss rate as the imbalance; see `schedule::calls`'s `Caller`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Effort {
    /// When the interval began, seconds.
    pub t_s: f64,
    /// Its length, seconds.
    pub interval_s: f64,
    /// The time it lost to imbalance: its mean loss rate times its length,
    /// seconds.
    pub lost_s: f64,
    /// The cost of the call that began it, seconds.
    pub cost_s: f64,
    /// The subdomains the call that began it moved (0 in records written
    /// before 2026-11-29, which did not keep them).
    #[serde(default)]
    pub moves: u64,
}

impl Effort {
    /// `(lost + cost) / interval`: time lost per unit of time.
    ///
    /// ```
    /// use braid::Effort;
    /// let e = Effort { t_s: 0.0, interval_s: 0.01, lost_s: 0.0003, cost_s: 0.0001, moves: 2 };
    /// assert!((e.effort() - 0.04).abs() < 1e-12);
    /// ```
    pub fn effort(&self) -> f64 {
        if self.interval_s > 0.0 {
            (self.lost_s + self.cost_s) / self.interval_s
        } else {
            0.0
        }
    }

    /// Two adjacent intervals as one.
    pub fn merge(self, next: Effort) -> Effort {
        Effort {
            t_s: self.t_s,
            interval_s: self.interval_s + next.interval_s,
            lost_s: self.lost_s + next.lost_s,
            cost_s: self.cost_s + next.cost_s,
            moves: self.moves + next.moves,
        }
    }
}

/// A balancer that ran from `from_s` on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ran {
    /// From when, seconds.
    pub from_s: f64,
    /// Which balancer.
    pub balancer: Named,
}

/// A candidate of `balancer = auto` and its mean effort over its last trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tried {
    /// The candidate.
    pub balancer: Named,
    /// Its mean effort (time lost per unit of time).
    pub effort: f64,
}

/// Everything a finished run measured (by the runtime or the simulator).
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Wall or virtual.
    pub clock: Clock,
    /// How long the run took on that clock, seconds.
    pub elapsed_s: f64,
    /// Why it stopped.
    pub stop: StopReason,
    /// Each subdomain's updates.
    pub subdomain_updates: Vec<u64>,
    /// Each thread's subdomain updates.
    pub thread_updates: Vec<u64>,
    /// Final owner of each subdomain.
    pub owners: Vec<usize>,
    /// The final padded grid (`None` when a simulation only counted).
    pub grid: Option<Array2<f64>>,
    /// `||r|| / ||r0||` recomputed from `grid`.
    pub residual: Option<f64>,
    /// Whether `residual` met the target.
    pub converged: bool,
    /// `elapsed_s`, when converged.
    pub time_to_solution_s: Option<f64>,
    /// Largest lag of a subdomain over a neighbour seen at any update.
    pub max_staleness_seen: u64,
    /// Whether every thread could be pinned to its core.
    pub pinned: bool,
    /// Epochs whose convergence estimate the recomputed residual refuted.
    pub refuted_estimates: u32,
    /// Updates that first moved a subdomain's cells to its new owner's
    /// socket (runtime: copied into memory the new owner touched first;
    /// simulator: charged `sim_remote_cell_ns` per cell).
    pub rehomes: u64,
    /// The thread that first wrote each subdomain's current cells (runtime
    /// only; empty in the simulator): a check that memory follows its thread.
    pub first_touchers: Vec<usize>,
    /// What the balancer did, if there was one.
    pub lb: Option<LbStats>,
    /// Samples of every subdomain's count and owner, if asked for.
    pub trace: Vec<TraceSample>,
    /// A run across MPI ranks: who ran where, and what crossed between them.
    pub ranks: Option<RanksInfo>,
    /// Seconds spent updating each subdomain (virtual in the simulator),
    /// when the run measured object loads (a workload that is not uniform,
    /// or a balancer that reads loads).
    pub subdomain_busy_s: Option<Vec<f64>>,
    /// Each worker thread's time on its core (runtime only; empty in the
    /// simulator).
    pub thread_core_time: Vec<CoreTime>,
}

/// A worker thread's wall time and the part of it the scheduler kept it
/// waiting for its core while something else ran there.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CoreTime {
    /// Seconds from the thread's start to its end, over every epoch.
    pub life_s: f64,
    /// Seconds it was runnable but waiting on its core's run queue (Linux's
    /// `/proc/thread-self/schedstat`); `None` where that cannot be read.
    pub waited_s: Option<f64>,
}

/// A run across MPI ranks (`mpirun -n R braid run`, feature `mpi`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RanksInfo {
    /// How many ranks.
    pub ranks: usize,
    /// Threads each rank ran.
    pub threads_per_rank: usize,
    /// The host each rank ran on.
    pub hosts: Vec<String>,
    /// The logical CPUs each rank's threads were pinned to.
    pub cores: Vec<Vec<usize>>,
    /// Exchanges of edges (rank 0's count: one per sync iteration, one per
    /// round in ssync/async, and one at each epoch's end that settles the
    /// edges for the exact residual).
    pub exchanges: u64,
    /// Bytes of edges and counts sent between ranks, all ranks summed.
    pub halo_bytes: u64,
    /// Bytes of cells gathered on rank 0 (once, at the end, for `--grid`).
    pub gathered_bytes: u64,
    /// Subdomains the balancer moved from one rank to another...
    #[serde(default)]
    pub moves_across: u64,
    /// ...and the bytes they took with them (cells, count, edges).
    #[serde(default)]
    pub migrated_bytes: u64,
    /// Each rank's peak resident memory (bytes, `getrusage`'s maxrss): a
    /// rank holds its own cells and every subdomain's edges, and rank 0 the
    /// whole grid only for `--grid`.
    #[serde(default)]
    pub peak_rss_bytes: Vec<u64>,
    /// A converged run's termination delay: seconds from when the true
    /// residual met the tolerance (inferred from the agreed estimates,
    /// `runtime::peers::termination_delay`) to the end of the run.
    #[serde(default)]
    pub termination_delay_s: Option<f64>,
}

impl RanksInfo {
    /// Each thread's node, numbered in the order the hosts first appear.
    pub fn thread_nodes(&self) -> Vec<usize> {
        host_nodes(&self.hosts, self.threads_per_rank)
    }
}

/// The node of each of `threads` threads of each rank, for ranks on
/// `hosts` (one per rank): nodes numbered from 0 in the order their host
/// first appears.
///
/// ```
/// use braid::host_nodes;
/// let hosts = ["b", "a", "b"].map(String::from);
/// assert_eq!(host_nodes(&hosts, 2), [0, 0, 1, 1, 0, 0]);
/// ```
pub fn host_nodes(hosts: &[String], threads: usize) -> Vec<usize> {
    let mut names: Vec<&String> = Vec::new();
    let mut nodes = Vec::with_capacity(hosts.len() * threads);
    for host in hosts {
        let node = match names.iter().position(|n| *n == host) {
            Some(i) => i,
            None => {
                names.push(host);
                names.len() - 1
            }
        };
        nodes.extend(std::iter::repeat_n(node, threads));
    }
    nodes
}
