//! What the simulator takes besides the [`Settings`](super::Settings): the
//! virtual machine its threads run on ([`SimSettings`]), built by `plan`
//! from the `sim_*` keys, and its cost model ([`SimCosts`]): what an update,
//! a barrier, a balancer call and a parasite's work iteration cost in
//! virtual time. The costs' defaults were measured on this project's
//! machine with `braid sim --calibrate`.

use std::sync::Arc;

use super::{MeasuredSpeeds, Numbers};
use crate::noise::NoisePlan;

/// The simulated machine of one plan: what each thread's virtual core is
/// like, what an operation costs, and what the simulation holds.
#[derive(Debug, Clone)]
pub struct SimSettings {
    /// What each operation costs in virtual time.
    pub costs: SimCosts,
    /// The grid's numbers (`numerics = true`), or counts only.
    pub numbers: Numbers,
    /// The speed factor of each thread's core (`sim_speed`; 1 = nominal).
    pub speeds: Vec<f64>,
    /// The node of each thread's core (all 0 on one node).
    pub nodes: Vec<usize>,
    /// The parasites on the simulated cores, if any.
    pub noise: Option<NoisePlan>,
    /// Speeds a real run measured, replayed on its threads' cores
    /// (`braid sim --replay-speeds`).
    pub replayed: Option<Arc<MeasuredSpeeds>>,
}

/// The simulator's costs, in nanoseconds of virtual time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimCosts {
    /// Per cell of a subdomain update.
    pub cell_ns: f64,
    /// Per subdomain update, besides its cells (halo exchange, bookkeeping).
    pub update_ns: f64,
    /// Per balancer call.
    pub balancer_ns: f64,
    /// Extra per cell for the first update of a subdomain after it moved to
    /// another socket (cold caches, remote memory).
    pub remote_cell_ns: f64,
    /// Per barrier (sync).
    pub barrier_ns: f64,
    /// Per work iteration of a noise parasite.
    pub noise_iter_ns: f64,
    /// Cost per cell of an update that also computes its local residual
    /// (runs with a tolerance), as a multiple of `cell_ns`.
    pub residual_factor: f64,
    /// Across nodes: per message (a sync iteration's exchange, a move).
    pub node_latency_ns: f64,
    /// Across nodes: per byte of an edge sent or of a moved subdomain.
    pub node_byte_ns: f64,
    /// Across nodes: a message's CPU overhead at each end (LogGP's o).
    pub node_overhead_ns: f64,
    /// Across nodes: the least gap between two messages a thread sends
    /// (LogGP's g).
    pub node_gap_ns: f64,
}
