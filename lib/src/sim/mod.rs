//! `braid sim`: the same schedules and the same balancer as `braid run`, on
//! virtual cores with a virtual clock, so that paper-scale experiments run
//! anywhere and reproduce exactly.
//!
//! # Model
//!
//! * Each thread runs on its own virtual core ([`timeline`]): an update of a
//!   subdomain moved away from its home thread, swept on its own, costs
//!   `update_ns + rows x row_ns + cells x cell_ns` (plus `cells x
//!   remote_cell_ns` for its first update after a move across sockets); one
//!   on its home thread, which the runtime sweeps together with the others
//!   of its domain there in one pass (`subdomain/slab.rs`), shares the
//!   pass's `update_ns` with them and each row's `row_ns` with those beside
//!   it, and pays `home_update_ns` of its own (its count, gate and edges):
//!   `update_ns / n + home_update_ns + rows x row_ns / columns + cells x
//!   cell_ns` for a domain split into `n` subdomains of `columns` side by
//!   side; with the residual (a
//!   residual round, `schedule::residual`) its cells cost `residual_factor`
//!   times as much; all divided by the core's speed, stretched by the
//!   core's parasite noise.
//! * A thread sweeps its set in order exactly as a runtime worker does: set
//!   refresh and balancer turn at the top of each sweep (round robin, every
//!   `lb_interval` virtual seconds, costing `balancer_ns`, deciding with the
//!   same `crate::policy` code), ssync's staleness gate, skipping
//!   subdomains it no longer owns or that are in flight elsewhere.
//! * What a real update pays besides, each 0 unless calibrated (`braid
//!   validate`): `remote_edge_ns` per cell of an edge another thread's
//!   subdomain holds, `cold_cell_ns` per cell of a moved
//!   subdomain's first update on another core, `noise_switch_ns` per
//!   parasite burst or trace detour; [`jitter`] wanders each core's speed;
//!   with `monitor_s` the estimate is looked at once a period, as the
//!   runtime's monitor does.
//! * sync: each iteration ends at the slowest thread plus `barrier_ns`.
//!   Balanced (`sync(n)+BALANCER(f)`), a call due is made at the barrier,
//!   by the thread whose turn it is, and every thread starts the next
//!   iteration after it; at `lb_interval = degradation` ULBA's trigger
//!   (`schedule::degradation`) says when one is due.
//! * Across nodes (`sim_topology = host:N ...`), LogGP's network
//!   ([`network`]): an update also pays `node_overhead_ns` and
//!   `node_byte_ns` per byte for each edge it sends to a subdomain owned
//!   on another node (the sender's share, as with a non-blocking send), the
//!   first update after a move to another node a `node_latency_ns` and its
//!   cells' bytes, and a sync iteration that spans nodes one latency more.
//!   In ssync/async, with numbers, what an update reads of a neighbour on
//!   another node is the edge as it was sent, once arrived. A balancer call
//!   that balances threads of several nodes together also pays for
//!   learning the loads (an all-gather, or gossip's rounds).
//! * ssync/async are discrete events, one pending completion per thread.
//!   With `numerics = true` an update computes at its start, reading its
//!   neighbours' edges as published at that virtual time, and publishes at
//!   its end (through `subdomain::Held::begin_update` and
//!   `subdomain::Held::finish_update`, the runtime's own code). Completions at the
//!   same instant are all published before any update starts, threads in id
//!   order. Time is integer picoseconds: same inputs, same bytes out.

mod board;
pub(crate) mod clock;
mod cores;
mod events;
mod growth;
mod jitter;
mod network;
mod outcome;
mod simulation;
pub(crate) mod slab_shape;
pub(crate) mod steps;
pub(crate) mod timeline;

use crate::engine::{Outcome, Settings, SimSettings};
use crate::noise::{NoisePlan, NoiseReport};
use crate::problem::Problem;
use crate::topology::Placement;
use crate::variant::Mode;
use simulation::Simulation;

/// The simulator's balancer bookkeeping, for the runtime's test that
/// drives both balancers through one script.
#[cfg(test)]
pub(crate) use board::{Board, Calls};

/// Simulates a run of `problem` on the threads of `placement`, on the
/// virtual machine `sim`, to the end (`plan` builds all four and checks
/// them together). Returns the outcome and what the simulated parasites
/// took, as the runtime's parasites report it.
pub fn run(
    problem: &Problem,
    placement: &Placement,
    settings: &Settings,
    sim: &SimSettings,
    noise: Option<&NoisePlan>,
) -> (Outcome, Option<NoiseReport>) {
    let mut s = Simulation::new(problem, placement, settings, sim, noise);
    s.replay_speeds();
    match settings.mode() {
        Mode::Sync => s.run_sync(),
        Mode::Ssync | Mode::Async => s.run_events(),
    }
    s.finish()
}

#[cfg(test)]
pub(crate) mod tests;
