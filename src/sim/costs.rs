//! The simulator's cost model: what an update, a barrier, a balancer call
//! and a parasite's work iteration cost in virtual time.

use serde::{Deserialize, Serialize};

/// The simulator's costs, in nanoseconds of virtual time. Defaults were
/// measured on this project's machine with `braid sim --calibrate`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SimCosts {
    /// Per cell of a subdomain update.
    #[serde(rename = "sim_cell_ns")]
    pub cell_ns: f64,
    /// Per subdomain update, besides its cells (halo exchange, bookkeeping).
    #[serde(rename = "sim_update_ns")]
    pub update_ns: f64,
    /// Per balancer call.
    #[serde(rename = "sim_balancer_ns")]
    pub balancer_ns: f64,
    /// Extra per cell for the first update of a subdomain after it moved to
    /// another socket (cold caches, remote memory).
    #[serde(rename = "sim_remote_cell_ns")]
    pub remote_cell_ns: f64,
    /// Per barrier (sync).
    #[serde(rename = "sim_barrier_ns")]
    pub barrier_ns: f64,
    /// Per work iteration of a noise parasite.
    #[serde(rename = "sim_noise_iter_ns")]
    pub noise_iter_ns: f64,
    /// Cost per cell of an update that also computes its local residual
    /// (runs with a tolerance), as a multiple of `cell_ns`.
    #[serde(rename = "sim_residual_factor")]
    pub residual_factor: f64,
}

impl Default for SimCosts {
    fn default() -> Self {
        SimCosts {
            cell_ns: 0.29,
            update_ns: 300.0,
            balancer_ns: 1800.0,
            remote_cell_ns: 0.60,
            barrier_ns: 4500.0,
            noise_iter_ns: 4.06,
            residual_factor: 1.15,
        }
    }
}
