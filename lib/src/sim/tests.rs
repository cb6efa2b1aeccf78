use std::time::Duration;

use super::*;
use crate::config::Config;
use crate::engine::StopReason;
use crate::plan::Plan;
use crate::problem::Side;
use crate::schedule;
use crate::subdomain::EdgeVersion;

pub(super) fn run_plan(plan: &Plan) -> (Outcome, Option<NoiseReport>) {
    let sim = plan.sim().expect("a simulated plan");
    run(
        &plan.problem,
        &plan.placement,
        &plan.settings,
        sim,
        plan.noise.as_ref(),
    )
}

/// What the cost model charges an update of `s` in its home slab at
/// workload factor `f`, in seconds: its share of the slab pass's own cost,
/// its rows' (each shared with the subdomains beside it) and its cells'.
pub(crate) fn home_s(plan: &Plan, s: usize, f: f64) -> f64 {
    let c = &plan.sim().unwrap().costs;
    let (p, g) = (&plan.problem, &plan.problem.subs[s]);
    let update = c.update_ns / p.subdomains_per_domain() as f64;
    let rows = g.height as f64 * c.row_ns / p.sub_cols as f64;
    (update + (rows + g.cells() as f64 * c.cell_ns) * f) * 1e-9
}

/// Simulates `overrides` in async with a recording balancer called every
/// `every` of virtual time: the plan, the outcome and what the balancer saw.
fn run_recorded(
    overrides: &[String],
    every: Duration,
) -> (Plan, Outcome, std::sync::Arc<crate::policy::Recorder>) {
    use crate::engine::{BalancerSettings, Scheme};
    let mut cfg = Config::default();
    cfg.apply_overrides(overrides).unwrap();
    let mut plan = Plan::simulated(&cfg).unwrap();
    let recorder = std::sync::Arc::new(crate::policy::Recorder::default());
    plan.settings.scheme = Scheme::Async {
        balancer: Some(BalancerSettings::every(recorder.clone(), every)),
    };
    let (out, _) = run_plan(&plan);
    (plan, out, recorder)
}

#[test]
fn the_policy_sees_virtual_rates_and_the_residuals_when_they_are_computed() {
    for (numerics, tolerance) in [("false", "0"), ("true", "1e-9")] {
        let overrides = [
            "numerics=".to_string() + numerics,
            "tolerance=".to_string() + tolerance,
            "max_iterations=50".into(),
            "domain_size=16".into(),
            "cores=0,1,2,3".into(),
        ];
        let (_, _, recorder) = run_recorded(&overrides, Duration::from_micros(5));
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

/// Two threads, a 2 x 4 map workload (2 domains side by side, 4
/// subdomains each), a 30% parasite on core 0; the map in a scratch
/// directory `scratch`, kept while the returned guard lives.
fn mapped_beside_a_parasite(scratch: &str) -> (braid_testkit::Scratch, Vec<String>) {
    let dir = braid_testkit::scratch_dir(scratch);
    let map = dir.join("map.txt");
    std::fs::write(&map, "1 4 2.5 1\n1 1 1 3\n").unwrap();
    let overrides = vec![
        format!("workload=map:{}", map.display()),
        "max_iterations=2000".into(),
        "domain_size=64".into(),
        "threads=2".into(),
        "noise=thread".into(),
        "noise_cores=0:0.3".into(),
    ];
    (dir, overrides)
}

#[test]
fn measured_loads_are_the_cost_model_exactly() {
    let (_dir, overrides) = mapped_beside_a_parasite("sim-loads");
    let (plan, out, recorder) = run_recorded(&overrides, Duration::from_micros(200));
    // At home (nothing moves).
    let want: Vec<f64> = (0..8)
        .map(|s| home_s(&plan, s, plan.settings.workload.factor(s, 0.0)))
        .collect();
    let seen = recorder.loads.lock().unwrap();
    assert!(seen.len() > 3, "{} calls", seen.len());
    // Every call after the first interval sees the cost model's loads, the
    // quiet core at full speed, and the noisy one (core 0, at 30%) at its
    // share on the whole (an interval may fall between two bursts).
    for (loads, speeds) in &seen[1..] {
        for (got, want) in loads.iter().zip(&want) {
            assert!((got - want).abs() <= 1e-12 * want, "{got} vs {want}");
        }
        assert_eq!(speeds[1], 1.0);
    }
    let noisy = seen[1..].iter().map(|(_, v)| v[0]).sum::<f64>() / (seen.len() - 1) as f64;
    assert!((noisy - 0.7).abs() < 0.05, "noisy core at {noisy}");
    // And the report's busy time is the updates at those costs, stretched
    // on the noisy core.
    let busy = out.subdomain_busy_s.expect("loads measured");
    for s in 0..8 {
        let nominal = out.subdomain_updates[s] as f64 * want[s];
        let quiet = plan.problem.subs[s].domain == 1;
        match quiet {
            true => assert!((busy[s] - nominal).abs() <= 1e-9 * nominal, "{s}"),
            false => assert!(busy[s] > 1.1 * nominal, "{s}"),
        }
    }
}

#[test]
fn measured_loads_are_the_time_at_home_shared_out_as_the_runtime_measures_it() {
    // As above, but the balancer sees loads as the runtime measures them.
    let (_dir, mut overrides) = mapped_beside_a_parasite("sim-measured-loads");
    overrides.push("sim_loads=measured".into());
    let (plan, out, recorder) = run_recorded(&overrides, Duration::from_micros(200));
    let want: Vec<f64> = (0..8)
        .map(|s| home_s(&plan, s, plan.settings.workload.factor(s, 0.0)))
        .collect();
    let seen = recorder.loads.lock().unwrap();
    assert!(seen.len() > 3, "{} calls", seen.len());
    // Each load is this interval's busy time at its owner's speed in the
    // interval: a pass cut by the call aside, the cost model's.
    let mut off = 0.0f64;
    for (loads, _) in &seen[1..] {
        for (s, (got, want)) in loads.iter().zip(&want).enumerate() {
            assert!((got / want - 1.0).abs() < 0.05, "{s}: {got} vs {want}");
            off = off.max((got / want - 1.0).abs());
        }
    }
    assert!(off > 1e-6, "measured loads that are the model's exactly");
    // The noisy core's busy time: the parasite's bursts shared out over
    // its slab by cost, not charged to the updates they fell in, so each
    // of its subdomains is stretched alike (the cost model's loads, run
    // beside this, leave each burst where it fell).
    let stretch = |out: &Outcome, s: usize| {
        out.subdomain_busy_s.as_ref().unwrap()[s] / (out.subdomain_updates[s] as f64 * want[s])
    };
    let noisy: Vec<usize> = (0..8)
        .filter(|&s| plan.problem.subs[s].domain == 0)
        .collect();
    let spread = |out: &Outcome| {
        let v: Vec<f64> = noisy.iter().map(|&s| stretch(out, s)).collect();
        v.iter().copied().fold(0.0, f64::max) / v.iter().copied().fold(f64::MAX, f64::min)
    };
    assert!(noisy.iter().all(|&s| stretch(&out, s) > 1.1));
    overrides.pop();
    let (_, exact, _) = run_recorded(&overrides, Duration::from_micros(200));
    assert!(
        spread(&out) < 1.02 && spread(&exact) > spread(&out),
        "measured {} exact {}",
        spread(&out),
        spread(&exact)
    );
}

#[test]
fn a_growing_workload_is_charged_at_the_progress_of_each_update() {
    // Nothing is heavy at the start; the region (r = 0.16 p cells) covers
    // the centre subdomains of the 4 x 4 layout first and the whole grid
    // (r = 45.3) from 283 iterations of progress on.
    let overrides = [
        "workload=growing(4, 0.5, 0.5, 0, 0.0025)".to_string(),
        "max_iterations=600".into(),
        "domain_size=64".into(),
        "threads=1".into(),
        "subdomains=16".into(),
    ];
    let (plan, _, recorder) = run_recorded(&overrides, Duration::from_micros(20));
    let seen = recorder.loads.lock().unwrap();
    assert!(seen.len() > 4, "{} calls", seen.len());
    let at = |f: f64| home_s(&plan, 0, f);
    let near = |got: f64, want: f64| (got - want).abs() <= 1e-9 * want;
    let (first, last) = (&seen[1].0, &seen[seen.len() - 1].0);
    // At the first call the region has hardly begun: the corners are at 1
    // and the centre a little above it; at the last it covers everything.
    assert!(near(first[0], at(1.0)), "{first:?}");
    assert!(first.iter().all(|&l| l < at(1.05)), "{first:?}");
    assert!(last.iter().all(|&l| near(l, at(4.0))), "{last:?}");
    // On the way, a centre subdomain is heavier than a corner one.
    let (centre, corner) = (5, 0);
    assert!(
        seen.iter()
            .any(|(l, ..)| l[centre] > at(1.5) && l[corner] < l[centre]),
        "the region never weighed the centre before the corners"
    );
}

#[test]
fn across_nodes_an_update_pays_its_remote_edges_and_a_move_its_cells() {
    let mut cfg = Config::default();
    cfg.apply_overrides(&[
        "sim_topology=host:2 pack:1 core:2".to_string(),
        "threads=4".into(),
        "subdomains=1".into(),
        "domain_size=10".into(),
        "sim_node_latency_ns=1000".into(),
        "sim_node_byte_ns=0.5".into(),
    ])
    .unwrap();
    let plan = Plan::simulated(&cfg).unwrap();
    let mut e = Simulation::of_plan(&plan);
    assert_eq!(e.board.nodes, [0, 0, 1, 1]);
    // Domain 0 (top left) sends its south edge to domain 2 on node 1.
    assert_eq!(e.node_cost(0), 8.0 * 10.0 * 0.5);
    // Moved to thread 2 on node 1: now its east edge (to domain 1)
    // crosses, its south one does not, and the move is paid once.
    schedule::Sets::set_owner(&mut e.board, 0, 2);
    assert_ne!(e.board.pending[0] & board::Pending::NODES, 0);
    assert_eq!(
        e.node_cost(0),
        8.0 * 10.0 * 0.5 + 1000.0 + 8.0 * 100.0 * 0.5
    );
    e.board.pending[0] = 0;
    assert_eq!(e.node_cost(0), 8.0 * 10.0 * 0.5);
    // A move within a node is free of the network.
    schedule::Sets::set_owner(&mut e.board, 1, 0);
    assert_eq!(e.board.pending[1] & board::Pending::NODES, 0);
}

#[test]
fn simulated_sync_stops_at_the_first_sweep_whose_residual_meets_the_target() {
    // As the runtime: residual rounds, the same stop as every sweep.
    for (per, tol) in [("1", "1e-3"), ("4", "3e-4")] {
        let plan = plan_of(&[
            "mode=sync",
            "numerics=true",
            "domain_size=12",
            "cores=0,1,2,3",
            &format!("subdomains={per}"),
            &format!("tolerance={tol}"),
            "max_iterations=1000000",
        ]);
        let (out, _) = run_plan(&plan);
        let k =
            crate::problem::first_iteration_meeting(&plan.problem, tol.parse().unwrap(), 100_000)
                .unwrap();
        assert_eq!(out.stop, StopReason::Converged);
        let n: u64 = per.parse().unwrap();
        assert_eq!(
            *out.thread_updates.iter().max().unwrap(),
            (k as u64 + 1) * n
        );
        assert_eq!(
            out.grid.unwrap(),
            crate::problem::sequential_jacobi(&plan.problem, k + 1)
        );
    }
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

/// A simulation of `overrides` (one subdomain per thread), set up and not
/// run.
fn plan_of(overrides: &[&str]) -> Plan {
    let mut cfg = Config::default();
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    cfg.apply_overrides(&o).unwrap();
    Plan::simulated(&cfg).unwrap()
}

#[test]
fn an_edge_sent_to_another_node_arrives_after_loggp_time_and_is_read_only_then() {
    // Two threads, one per node, side by side: domain 0's east edge (10
    // cells, 80 bytes) is what domain 1 reads on its west.
    let plan = plan_of(&[
        "sim_topology=host:2 pack:1 core:1",
        "threads=2",
        "subdomains=1",
        "domain_size=10",
        "numerics=true",
        "tolerance=1e-3",
        "sim_node_latency_ns=1000",
        "sim_node_byte_ns=0.5",
        "sim_node_overhead_ns=100",
        "sim_node_gap_ns=300",
    ]);
    let mut e = Simulation::of_plan(&plan);
    let west_of_1 = |e: &mut Simulation<'_>, now: u64| {
        let net = e
            .network
            .as_mut()
            .expect("numbers across nodes in async age");
        net.aged(1, 1, now, &e.subs, &e.board)[Side::West.index()].map(|b| b[0])
    };
    let initial = west_of_1(&mut e, 0).expect("a neighbour on another node is aged");
    // Domain 0 updated: its edges change, and leave at 5 us.
    e.subs[0]
        .lock()
        .begin_update(&e.subs, EdgeVersion::Latest, None);
    e.subs[0].lock().finish_update();
    let mut sent = Vec::new();
    e.subs[0].export_edge(Side::East, &mut sent);
    assert_ne!(sent[1], initial, "the update changed the edge");
    let t = 5_000_000; // ps
    let (net, subs, board) = (e.network.as_mut().unwrap(), &e.subs, &e.board);
    net.send(0, 0, t, subs, board);
    // o + (80 - 1) G + L + o = 100 + 39.5 + 1000 + 100 ns; a second send
    // from the same thread waits g + (80 - 1) G = 339.5 ns for the wire.
    let arrives = t + 1_239_500;
    assert_eq!(west_of_1(&mut e, arrives - 1), Some(initial));
    assert_eq!(west_of_1(&mut e, arrives), Some(sent[1]));
    let (net, subs, board) = (e.network.as_mut().unwrap(), &e.subs, &e.board);
    e.subs[0]
        .lock()
        .begin_update(subs, EdgeVersion::Latest, None);
    e.subs[0].lock().finish_update();
    let mut again = Vec::new();
    subs[0].export_edge(Side::East, &mut again);
    net.send(0, 0, t, subs, board);
    let queued = t + 339_500 + 1_239_500;
    assert_eq!(west_of_1(&mut e, queued - 1), Some(sent[1]));
    assert_eq!(west_of_1(&mut e, queued), Some(again[1]));
    // On one node the neighbour is read as it is: nothing aged.
    schedule::Sets::set_owner(&mut e.board, 1, 0);
    let net = e.network.as_mut().unwrap();
    assert_eq!(net.aged(1, 0, queued, &e.subs, &e.board), [None; 4]);
}

/// Subdomain updates and virtual seconds to solve at 64 nodes of one core,
/// one 8 x 8 subdomain each, with a latency of `latency_ns`; and the
/// report's bytes.
fn solve_at_64_nodes(latency_ns: &str) -> (u64, f64, String) {
    let latency = format!("sim_node_latency_ns={latency_ns}");
    let plan = plan_of(&[
        "sim_topology=host:64 pack:1 core:1",
        "threads=64",
        "subdomains=1",
        "domain_size=8",
        "numerics=true",
        "tolerance=1e-3",
        "max_iterations=100000",
        "sim_node_byte_ns=0",
        &latency,
    ]);
    let (out, _) = run_plan(&plan);
    assert_eq!(out.stop, StopReason::Converged, "latency {latency_ns}");
    let bytes = format!(
        "{:?}",
        (
            &out.subdomain_updates,
            out.elapsed_s,
            out.residual,
            &out.grid
        )
    );
    (out.subdomain_updates.iter().sum(), out.elapsed_s, bytes)
}

#[test]
fn latency_that_ages_ghosts_slows_async_convergence_at_64_nodes_reproducibly() {
    // In async an update does not pay the latency (only a move or a sync
    // barrier does): all it changes is how old the edges read across nodes
    // are. So the extra updates and time are the ghosts' age alone.
    let (fresh, fresh_s, _) = solve_at_64_nodes("0");
    let (aged, aged_s, bytes) = solve_at_64_nodes("20000");
    assert!(
        aged > 3 * fresh,
        "{aged} updates aged against {fresh} fresh"
    );
    assert!(
        aged_s > 3.0 * fresh_s,
        "{aged_s} s aged against {fresh_s} s fresh"
    );
    let (again, _, bytes_again) = solve_at_64_nodes("20000");
    assert_eq!(
        (again, bytes_again),
        (aged, bytes),
        "same inputs, same bytes"
    );
}

#[test]
fn a_call_across_nodes_pays_for_what_it_learns_and_one_within_a_node_does_not() {
    let mean_call_ns = |balancer: &str| {
        let plan = plan_of(&[
            "sim_topology=host:2 pack:1 core:2",
            "threads=4",
            "max_iterations=200",
            "mode=async",
            "subdomains=4",
            "lb_interval=0.00001",
            balancer,
        ]);
        let (out, _) = run_plan(&plan);
        let lb = out.lb.expect("a balanced run reports its calls");
        assert!(lb.calls > 5, "{balancer}: {} calls", lb.calls);
        lb.time_s / lb.calls as f64 * 1e9
    };
    let c = crate::plan::sim_costs(&Config::default());
    let gather = network::call_ps(crate::policy::Learns::Everything, &c, 2, 4, 16, 0) as f64 / 1e3;
    let near = |got: f64, want: f64| (got - want).abs() < 1e-6 * want;
    // Split balances each socket alone: no network.
    let split = mean_call_ns("balancer=split");
    assert!(near(split, c.balancer_ns), "{split} ns");
    let joint = mean_call_ns("balancer=joint");
    assert!(near(joint, c.balancer_ns + gather), "{joint} ns");
}

#[test]
fn growth_tied_to_threads_changes_a_run_only_once_subdomains_move() {
    // One thread in eight grows fast. Unbalanced, growth tied to its
    // thread is growth tied to its cells, to the picosecond; balanced at
    // the barrier, greedy moves subdomains off it, and from then on the
    // thread's growth follows it, not them: another run.
    let run = |variant: &str, workload: &str| {
        let mut cfg = Config::default();
        cfg.apply_variant(variant).unwrap();
        let overrides = [
            format!("workload={workload}"),
            "numerics=false".into(),
            "sim_topology=pack:1 core:8".into(),
            "domain_size=32".into(),
            "max_iterations=60".into(),
            "sim_balancer_ns=2000".into(),
            "lb_history=1".into(),
        ];
        cfg.apply_overrides(&overrides).unwrap();
        run_plan(&Plan::simulated(&cfg).unwrap()).0
    };
    let (cells, threads) = (
        "overloading(0.125, 0.5, 1)",
        "overloading-threads(0.125, 0.5, 1)",
    );
    let plain = (run("async(4)", cells), run("async(4)", threads));
    assert_eq!(plain.0.elapsed_s, plain.1.elapsed_s);
    let balanced = (
        run("sync(4)+greedy(degradation)", cells),
        run("sync(4)+greedy(degradation)", threads),
    );
    assert!(balanced.0.lb.as_ref().unwrap().moves > 0);
    assert_ne!(balanced.0.elapsed_s, balanced.1.elapsed_s);
}

/// `sync(16)+greedy(degradation)` in ULBA's bulk setting (the ulba-*-sim
/// suites': 256 threads, an iteration all work) under `workload`, with
/// `more` overrides on top.
fn ulba_greedy(workload: &str, more: &[&str]) -> Outcome {
    let mut cfg = Config::default();
    cfg.apply_variant("sync(16)+greedy(degradation)").unwrap();
    let workload = format!("workload={workload}");
    let mut overrides = vec![
        workload.as_str(),
        "numerics=false",
        "sim_topology=pack:8 core:32",
        "domain_size=64",
        "max_iterations=100",
        "lb_history=1",
        "sim_barrier_ns=0",
        "sim_update_ns=0",
        "sim_row_ns=0",
        "sim_cell_ns=1.6943",
    ];
    overrides.extend_from_slice(more);
    cfg.apply_overrides(&overrides).unwrap();
    run_plan(&Plan::simulated(&cfg).unwrap()).0
}

#[test]
fn with_lb_recent_1_greedy_reads_a_growing_thread_as_it_is_and_calls_no_idle_balancer() {
    // ULBA's setting (ulba-work-sim's first instance): 3 of 256 threads
    // grow, an iteration is all work, greedy called by ULBA's trigger.
    // Reading each load as its second lowest of the last four, greedy
    // finds nothing worth moving at some calls after the window fills;
    // reading the last interval's, it moves at each of them, and the run
    // is shorter.
    let run = |recent: &str| {
        ulba_greedy(
            "overloading-threads(0.01, 0.165, 0.81)",
            &["sim_balancer_ns=10000", recent],
        )
    };
    // Calls after the first two (which measure the window) that moved nothing.
    let idle = |out: &Outcome| {
        let effort = &out.lb.as_ref().unwrap().effort;
        effort.iter().skip(3).filter(|e| e.moves == 0).count()
    };
    let (lagging, current) = (run("lb_recent=4"), run("lb_recent=1"));
    assert!(idle(&lagging) >= 2, "{} idle calls", idle(&lagging));
    assert_eq!(idle(&current), 0);
    assert!(current.elapsed_s < 0.95 * lagging.elapsed_s);
}

#[test]
fn with_lb_window_1_greedy_moves_at_the_first_call_that_has_measured_an_interval() {
    // ULBA's own setting (ulba-own-sim's third instance, a call costing 3
    // iterations): with braid's window, greedy's first two calls after the
    // start only measure, and its first move comes at the third, well into
    // the run; with one interval, the first call after the start moves,
    // and the run is shorter.
    let run = |window: &str| {
        ulba_greedy(
            "overloading-threads(0.01, 0.045, 0.91)",
            &[
                "sim_balancer_ns=20820",
                "lb_recent=1",
                "sim_remote_cell_ns=0",
                "low_threshold=1",
                "high_threshold=64",
                window,
            ],
        )
    };
    // The calls before the first that moved anything (the start's included).
    let waited = |out: &Outcome| {
        let effort = &out.lb.as_ref().unwrap().effort;
        effort.iter().take_while(|e| e.moves == 0).count()
    };
    let (windowed, first) = (run("lb_window=3"), run("lb_window=1"));
    assert_eq!(waited(&windowed), 3);
    assert_eq!(waited(&first), 1);
    assert!(first.elapsed_s < 0.95 * windowed.elapsed_s);
}
