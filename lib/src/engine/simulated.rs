//! What the simulator takes besides the [`Settings`](super::Settings): the
//! virtual machine its threads run on ([`SimSettings`]), built by `plan`
//! from the `sim_*` keys, and its cost model ([`SimCosts`]): what an update,
//! a barrier, a balancer call and a parasite's work iteration cost in
//! virtual time. The costs' defaults were measured on this project's
//! machine with `braid sim --calibrate`.

use std::sync::Arc;

use super::{MeasuredSpeeds, Numbers};

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
    /// How each core's speed wanders while nothing disturbs it
    /// (`sim_jitter`), and the seed of its draws.
    pub jitter: Option<(Jitter, u64)>,
    /// Seconds between the checks of the residual estimate, as the
    /// runtime's monitor makes them (`sim_monitor_s`); `None`: after every
    /// event.
    pub monitor_s: Option<f64>,
    /// The object loads a balancer sees (`sim_loads`).
    pub loads: SimLoads,
    /// Speeds a real run measured, replayed on its threads' cores
    /// (`braid sim --replay-speeds`).
    pub replayed: Option<Arc<MeasuredSpeeds>>,
}

/// The object loads the simulator's balancers see (`sim_loads`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SimLoads {
    /// Each subdomain's cost from the cost model: exact.
    #[default]
    Model,
    /// As `braid run` measures them: the virtual time a subdomain's
    /// updates took (the bursts and jitter that fell in them included) at
    /// its owner's speed over the interval.
    Measured,
}

impl SimLoads {
    /// The default, which reports leave out (so that reports written
    /// before the key existed read the same).
    pub fn is_model(&self) -> bool {
        *self == SimLoads::Model
    }
}

/// The simulator's costs, in nanoseconds of virtual time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimCosts {
    /// Per cell of a subdomain update.
    pub cell_ns: f64,
    /// Per subdomain update, besides its cells (halo exchange, bookkeeping).
    pub update_ns: f64,
    /// Per row of a subdomain update (the sweep's loop overhead and vector
    /// tail): why a small subdomain costs more per cell than a large one.
    pub row_ns: f64,
    /// Per cell of an edge an update reads from a subdomain another thread
    /// owns (its cache lines come from the other core).
    pub remote_edge_ns: f64,
    /// Per balancer call.
    pub balancer_ns: f64,
    /// Extra per cell for the first update of a subdomain after it moved to
    /// another core of the same socket (its cells are in the other core's
    /// caches).
    pub cold_cell_ns: f64,
    /// Per block beyond the first of a home slab's pass (some of its
    /// subdomains away), shared by the subdomains the pass sweeps.
    pub block_ns: f64,
    /// Per update of a subdomain in its home slab, besides its share of
    /// the pass (its count, gate and edges).
    pub home_update_ns: f64,
    /// Extra per cell for the first update of a subdomain after it moved to
    /// another socket (cold caches, remote memory).
    pub remote_cell_ns: f64,
    /// Per barrier (sync).
    pub barrier_ns: f64,
    /// Per work iteration of a noise parasite.
    pub noise_iter_ns: f64,
    /// What a worker loses besides a parasite's burst or a trace's detour
    /// on its core: the switches, and its caches refilled after.
    pub noise_switch_ns: f64,
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

impl SimCosts {
    /// What an update of a `rows` x `cols` subdomain costs swept on its
    /// own, away from its home slab, over one swept in the slab with the
    /// others of a domain split `per_domain` ways, `side_by_side` of them
    /// in a row, less 1: the model's price of leaving home, which the
    /// balancers weigh (`policy::Homes`). 0 when the model charges nothing
    /// per update or row.
    ///
    /// ```
    /// use braid::SimCosts;
    /// let c = braid::sim_costs(&braid::Config::default());
    /// // 75 x 75 of a domain split 2 x 2, at the default costs.
    /// let p = c.away_cost(75, 75, 4, 2);
    /// let (home, away) = (25.0 + 75.0 * 9.0 + 5625.0 * 0.29, 100.0 + 75.0 * 18.0 + 5625.0 * 0.29);
    /// assert!((p - (away / home - 1.0)).abs() < 1e-12);
    /// ```
    pub fn away_cost(
        &self,
        rows: usize,
        cols: usize,
        per_domain: usize,
        side_by_side: usize,
    ) -> f64 {
        let cells = (rows * cols) as f64 * self.cell_ns;
        let rows = rows as f64 * self.row_ns;
        let home = self.update_ns / per_domain.max(1) as f64
            + self.home_update_ns
            + rows / side_by_side.max(1) as f64
            + cells;
        let away = self.update_ns + rows + cells;
        match home > 0.0 {
            true => away / home - 1.0,
            false => 0.0,
        }
    }
}

/// How a quiet core's speed wanders (`sim_jitter`): in each window of
/// `every_s` virtual seconds its speed is `1 + sd x z` times its own, `z` a
/// standard normal drawn from the seed, the core and the window; and for
/// the whole run `1 + core_sd x z'`, `z'` drawn from the seed and the core.
/// Real threads' rates jitter so, and a balancer reads the counts they
/// leave: without it quiet simulated threads keep every count equal and a
/// balancer never moves, where quiet real ones do. The lasting part is what
/// a real run's own monitor and the system take from some cores more than
/// others.
///
/// ```
/// use braid::Jitter;
/// let j = Jitter { sd: 0.05, every_s: 0.001, core_sd: 0.0 };
/// assert_eq!(j.to_string(), "0.05:0.001");
/// let j = Jitter { core_sd: 0.02, ..j };
/// assert_eq!(j.to_string(), "0.05:0.001:0.02");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Jitter {
    /// Relative standard deviation of a window's speed.
    pub sd: f64,
    /// The window, in seconds.
    pub every_s: f64,
    /// Relative standard deviation of a core's lasting speed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub core_sd: f64,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

impl std::fmt::Display for Jitter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.sd, self.every_s)?;
        if self.core_sd != 0.0 {
            write!(f, ":{}", self.core_sd)?;
        }
        Ok(())
    }
}
