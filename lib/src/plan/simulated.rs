//! The simulator's virtual machine for a plan: the cost of each operation
//! from the `sim_*` keys, each thread's core speed and node, the noise on
//! the cores, and the speeds a real run measured, when replayed.

use std::sync::Arc;

use super::Plan;
use crate::config::Config;
use crate::engine::{MeasuredSpeeds, Numbers, SimCosts, SimSettings};
use crate::topology::SimTopology;

/// The simulator's costs, from the `sim_*` keys.
pub fn sim_costs(cfg: &Config) -> SimCosts {
    SimCosts {
        cell_ns: cfg.sim_cell_ns,
        update_ns: cfg.sim_update_ns,
        row_ns: cfg.sim_row_ns,
        remote_edge_ns: cfg.sim_remote_edge_ns,
        cold_cell_ns: cfg.sim_cold_cell_ns,
        block_ns: cfg.sim_block_ns,
        home_update_ns: cfg.sim_home_update_ns,
        balancer_ns: cfg.sim_balancer_ns,
        remote_cell_ns: cfg.sim_remote_cell_ns,
        barrier_ns: cfg.sim_barrier_ns,
        noise_iter_ns: cfg.sim_noise_iter_ns,
        noise_switch_ns: cfg.sim_noise_switch_ns,
        residual_factor: cfg.sim_residual_factor,
        node_latency_ns: cfg.sim_node_latency_ns,
        node_byte_ns: cfg.sim_node_byte_ns,
        node_overhead_ns: cfg.sim_node_overhead_ns,
        node_gap_ns: cfg.sim_node_gap_ns,
    }
}

/// The virtual machine of `plan`, placed and noised as planned.
pub(super) fn settings(plan: &Plan, replayed: Option<Arc<MeasuredSpeeds>>) -> SimSettings {
    let cfg = &plan.config;
    let cores = &plan.placement.cores;
    let speeds = cores
        .iter()
        .map(|core| {
            cfg.sim_speed
                .iter()
                .find(|(c, _)| c == core)
                .map_or(1.0, |(_, f)| *f)
        })
        .collect();
    let nodes = match &cfg.sim_topology {
        SimTopology::Synthetic(t) if t.nodes > 1 => {
            cores.iter().map(|&pu| t.node_of_pu(pu)).collect()
        }
        _ => vec![0; cores.len()],
    };
    SimSettings {
        costs: sim_costs(cfg),
        numbers: if cfg.numerics {
            Numbers::Held
        } else {
            Numbers::Counted
        },
        speeds,
        nodes,
        // A replay's measured speeds already hold their jitter.
        jitter: cfg
            .sim_jitter
            .filter(|j| j.sd > 0.0 && replayed.is_none())
            .map(|j| (j, cfg.seed)),
        monitor_s: (cfg.sim_monitor_s > 0.0).then_some(cfg.sim_monitor_s),
        loads: cfg.sim_loads,
        replayed,
    }
}
