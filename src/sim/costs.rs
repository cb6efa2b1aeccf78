//! The simulator's cost model: what an update, a barrier, a balancer call
//! and a parasite's work iteration cost in virtual time. The values come
//! from the `sim_*` configuration keys (`Config::sim_costs`), whose defaults
//! were measured on this project's machine with `braid sim --calibrate`.

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
}
