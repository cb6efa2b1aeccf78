use std::time::Duration;

use super::*;
use crate::config::Config;
use crate::engine::StopReason;
use crate::plan::Plan;
use crate::schedule;

fn run_plan(plan: &Plan) -> (Outcome, Option<NoiseReport>) {
    let sim = plan.sim.as_ref().expect("a simulated plan");
    run(&plan.problem, &plan.placement, &plan.settings, sim)
}

#[test]
fn the_policy_sees_virtual_rates_and_the_residuals_when_they_are_computed() {
    use crate::engine::{Balancer, Scheme};
    use crate::policy::Recorder;
    for (numerics, tolerance) in [("false", "0"), ("true", "1e-9")] {
        let mut cfg = Config::default();
        cfg.apply_overrides(&[
            "numerics=".to_string() + numerics,
            "tolerance=".to_string() + tolerance,
            "max_iterations=50".into(),
            "domain_size=16".into(),
            "cores=0,1,2,3".into(),
        ])
        .unwrap();
        let mut plan = Plan::simulated(&cfg).unwrap();
        let recorder = std::sync::Arc::new(Recorder::default());
        plan.settings.scheme = Scheme::Async {
            balancer: Some(Balancer::every(recorder.clone(), Duration::from_micros(5))),
        };
        run_plan(&plan);
        let seen = recorder.seen.lock().unwrap();
        assert!(seen.len() > 2, "{} calls", seen.len());
        let (progress, rates, residuals, since) = &seen[2];
        assert!(*since > 0.0);
        // A rate is that interval's progress per virtual second.
        for (p, r) in progress.iter().zip(rates) {
            assert!((*p as f64 / since - r).abs() <= 1e-9 * r.abs().max(1.0));
        }
        assert!(rates.iter().all(|&r| r > 0.0), "{rates:?}");
        match numerics {
            "true" => assert!(residuals.len() == 16 && residuals.iter().any(|&r| r > 0.0)),
            _ => assert!(residuals.is_empty()),
        }
    }
}

#[test]
fn across_nodes_an_update_pays_its_remote_edges_and_a_move_its_cells() {
    let mut cfg = Config::default();
    cfg.apply_overrides(&[
        "sim_topology=node:2 pack:1 core:2".to_string(),
        "threads=4".into(),
        "subdomains=1".into(),
        "domain_size=10".into(),
        "sim_node_latency_ns=1000".into(),
        "sim_node_byte_ns=0.5".into(),
    ])
    .unwrap();
    let plan = Plan::simulated(&cfg).unwrap();
    let sim = plan.sim.as_ref().unwrap();
    let mut e = Simulation::new(&plan.problem, &plan.placement, &plan.settings, sim);
    assert_eq!(e.board.nodes, [0, 0, 1, 1]);
    // Domain 0 (top left) sends its south edge to domain 2 on node 1.
    assert_eq!(e.node_cost(0), 8.0 * 10.0 * 0.5);
    // Moved to thread 2 on node 1: now its east edge (to domain 1)
    // crosses, its south one does not, and the move is paid once.
    schedule::Sets::set_owner(&mut e.board, 0, 2);
    assert!(e.board.crossed_nodes[0]);
    assert_eq!(
        e.node_cost(0),
        8.0 * 10.0 * 0.5 + 1000.0 + 8.0 * 100.0 * 0.5
    );
    e.board.crossed_nodes[0] = false;
    assert_eq!(e.node_cost(0), 8.0 * 10.0 * 0.5);
    // A move within a node is free of the network.
    schedule::Sets::set_owner(&mut e.board, 1, 0);
    assert!(!e.board.crossed_nodes[1]);
}

#[test]
fn an_interrupt_stops_a_simulation_that_nothing_else_would() {
    for label in ["sync", "async(4)+joint(0.001)"] {
        let mut cfg = Config::default();
        cfg.apply_variant(label).unwrap();
        cfg.max_iterations = 1 << 40;
        let plan = Plan::simulated(&cfg).unwrap();
        plan.settings.interrupt.raise(2);
        let (out, _) = run_plan(&plan);
        assert_eq!(out.stop, StopReason::Interrupted, "{label}");
    }
}
