//! The costs `braid validate` calibrates, as the simulation charges them:
//! each exactly as configured, and nothing when configured at 0.

use super::*;
use crate::config::Config;
use crate::plan::Plan;
use crate::schedule::Sets;
use crate::sim::tests::run_plan;
use crate::sim::timeline::Interference;

/// A simulated plan of 2 threads on a small grid, with `overrides` (and
/// `variant=LABEL` applied as a label).
fn plan(overrides: &[&str]) -> Plan {
    let mut cfg = Config::default();
    cfg.apply_overrides(&["threads=2", "domain_size=32", "max_iterations=50"])
        .unwrap();
    for o in overrides {
        match o.strip_prefix("variant=") {
            Some(label) => cfg.apply_variant(label).unwrap(),
            None => cfg.apply_overrides(&[o]).unwrap(),
        }
    }
    Plan::simulated(&cfg).unwrap()
}

fn simulation(plan: &Plan) -> Simulation<'_> {
    Simulation::of_plan(plan)
}

/// What the cost model says an update of `s` costs with `owners`, in ps:
/// at home its share of its slab's pass and its own part, away the
/// update's and its rows' costs whole.
fn priced(p: &Plan, s: usize, owners: &[usize]) -> f64 {
    let c = &p.sim().unwrap().costs;
    let g = &p.problem.subs[s];
    let remote = g.edge_cells_from(|n| owners[n] != owners[s]) as f64;
    let away = match owners[s] == g.domain {
        true => {
            let (n, cols) = (p.problem.subdomains_per_domain(), p.problem.sub_cols);
            c.update_ns / n as f64 + c.home_update_ns + g.height as f64 * c.row_ns / cols as f64
        }
        false => c.update_ns + g.height as f64 * c.row_ns,
    };
    (away + g.cells() as f64 * c.cell_ns + remote * c.remote_edge_ns) * 1e3
}

#[test]
fn an_update_pays_its_rows_and_the_edges_it_reads_from_other_threads() {
    let p = plan(&["sim_row_ns=10", "sim_remote_edge_ns=4", "subdomains=4"]);
    let mut sim = simulation(&p);
    let first = sim.board.owners.clone();
    for s in 0..first.len() {
        let want = priced(&p, s, &first);
        assert!((sim.cost(s) - want).abs() <= 1e-6 * want, "subdomain {s}");
    }
    // Subdomain 0 on thread 1: its own edges and its neighbours' change.
    sim.board.set_owner(0, 1);
    let moved = sim.board.owners.clone();
    let mut changed = 0;
    for s in 0..moved.len() {
        let want = priced(&p, s, &moved);
        changed += usize::from(want != priced(&p, s, &first));
        assert!(
            (sim.cost(s) - want).abs() <= 1e-6 * want,
            "subdomain {s} after the move"
        );
    }
    assert!(changed >= 2, "the move changed {changed} prices");
}

#[test]
fn each_subdomain_of_a_home_pass_pays_its_own_part_so_sub_splitting_costs_time() {
    // 4 subdomains a domain: each pays 50 ns of its own at home, not away
    // (where the update's whole cost stands for it).
    let p = plan(&["subdomains=4", "sim_home_update_ns=50"]);
    let mut sim = simulation(&p);
    let owners = sim.board.owners.clone();
    for s in 0..owners.len() {
        let want = priced(&p, s, &owners);
        assert!((sim.cost(s) - want).abs() <= 1e-6 * want, "subdomain {s}");
    }
    let home = sim.cost(0);
    sim.board.set_owner(0, 1);
    assert_eq!(sim.cost(0), priced(&p, 0, &sim.board.owners));
    assert!(sim.cost(0) > home);
    // A run: each thread's 50 iterations pay it once per subdomain it
    // sweeps, so a domain split four ways pays it four times a pass.
    let elapsed = |variant: &str, own: &str| {
        let p = plan(&[variant, own, "numerics=false", "tolerance=0"]);
        run_plan(&p).0.elapsed_s
    };
    for (variant, per_pass) in [("variant=async(1)", 1.0), ("variant=async(4)", 4.0)] {
        let more =
            elapsed(variant, "sim_home_update_ns=50") - elapsed(variant, "sim_home_update_ns=0");
        assert!(
            (more - 50.0 * per_pass * 50e-9).abs() < 1e-9,
            "{variant}: {more} s more"
        );
    }
}

#[test]
fn a_slab_left_with_a_hole_pays_its_extra_block_over_the_subdomains_it_holds() {
    // 2 x 2 subdomains a domain; the north-west one of domain 0 leaves, and
    // the three left are swept as two blocks (the north-east alone, the
    // south row): each pays a third of a block more.
    let p = plan(&["subdomains=4", "sim_block_ns=300"]);
    let mut sim = simulation(&p);
    let before: Vec<f64> = (0..8).map(|s| sim.cost(s)).collect();
    sim.board.set_owner(0, 1);
    for (s, was) in before.iter().enumerate().take(4).skip(1) {
        let extra = sim.cost(s) - was;
        assert!(
            (extra - 100.0 * 1e3).abs() < 1e-6,
            "subdomain {s}: {extra} ps more"
        );
    }
    // The other domain's slab is whole: its own subdomains pay nothing more.
    for (s, &was) in before.iter().enumerate().skip(4) {
        assert_eq!(sim.cost(s), was, "subdomain {s}");
    }
    // Without the cost, a hole changes no price at home.
    let q = plan(&["subdomains=4"]);
    let mut sim = simulation(&q);
    let before: Vec<f64> = (1..4).map(|s| sim.cost(s)).collect();
    sim.board.set_owner(0, 1);
    assert_eq!((1..4).map(|s| sim.cost(s)).collect::<Vec<_>>(), before);
}

#[test]
fn a_moved_subdomain_pays_the_cold_cache_at_its_next_update_only() {
    // Without costs of its own away from its slab, to see the cache's.
    let p = plan(&[
        "sim_cold_cell_ns=0.5",
        "sim_remote_cell_ns=2",
        "sim_update_ns=0",
        "sim_row_ns=0",
    ]);
    let mut sim = simulation(&p);
    let before = sim.cost(0);
    let cells = p.problem.subs[0].cells() as f64;
    sim.board.set_owner(0, 1);
    assert_eq!(sim.cost(0), before + cells * 0.5 * 1e3);
    // Its update by its new owner ends: the cache is warm again.
    sim.threads[1].current = Some(0);
    sim.complete(1);
    assert_eq!(sim.cost(0), before);
    // Across sockets the remote cost is paid instead of the cold one.
    sim.board.set_owner(0, 0);
    sim.board.crossed_sockets(0);
    assert_eq!(sim.cost(0), before + cells * 2.0 * 1e3);
}

#[test]
fn without_a_cold_cost_a_move_changes_no_price_but_away_from_home() {
    let p = plan(&["sim_update_ns=0", "sim_row_ns=0"]);
    let mut sim = simulation(&p);
    let before = sim.cost(0);
    sim.board.set_owner(0, 1);
    assert_eq!(sim.board.pending[0], 0, "marked although the cost is 0");
    assert_eq!(sim.cost(0).to_bits(), before.to_bits());
    // With a pass's own cost: a quarter of it at home (4 subdomains a
    // domain), all of it away.
    let p = plan(&["sim_update_ns=400", "sim_row_ns=0", "subdomains=4"]);
    let mut sim = simulation(&p);
    let before = sim.cost(0);
    sim.board.set_owner(0, 1);
    assert_eq!(sim.cost(0), before + 300.0 * 1e3);
    sim.board.set_owner(0, 0);
    assert_eq!(sim.cost(0), before);
}

#[test]
fn each_parasite_burst_takes_the_switch_on_top_of_its_work() {
    for (switch, extra_ps) in [("0", 0), ("30000", 30_000_000)] {
        let p = plan(&[
            "noise=thread",
            "noise_cores=0:0.2",
            &format!("sim_noise_switch_ns={switch}"),
        ]);
        let sim = p.sim().unwrap();
        let timelines =
            super::super::cores::timelines(&p.placement, &p.settings, sim, p.noise.as_ref());
        let sleep = p.noise.as_ref().unwrap().parasites[0].sleep_us * 1_000_000;
        let work = step(0.2 / 0.8 * sleep as f64);
        assert_eq!(
            timelines[0].interference,
            Interference::Rhythm {
                sleep,
                work: work + extra_ps
            },
            "switch {switch}"
        );
        assert_eq!(timelines[1].interference, Interference::None);
    }
}

/// A quiet core's speed that wanders (10% per 0.1 ms window, 5% lasting
/// between cores) makes the counts drift apart, but it is no imbalance a
/// move fixes (at 4 subdomains a receiver must be 25% faster): the
/// balancer, deciding on its window beyond the jitter (`policy::jitter`),
/// moves nothing, as without jitter. Deciding on one interval, it moved
/// work back and forth on the wander.
#[test]
fn quiet_threads_with_jitter_drift_apart_and_move_no_work() {
    let run = |jitter: &str| {
        let p = plan(&[
            "variant=async(4)+split(0.0001)",
            "sim_topology=pack:1 core:4",
            "threads=4",
            "max_iterations=3000",
            &format!("sim_jitter={jitter}"),
        ]);
        let (out, _) = run_plan(&p);
        let moves = out.lb.map_or(0, |l| l.moves);
        let spread = out.subdomain_updates.iter().max().unwrap()
            - out.subdomain_updates.iter().min().unwrap();
        (moves, spread)
    };
    let (still, even) = run("none");
    assert_eq!(still, 0, "moves without jitter");
    let (moves, spread) = run("0.1:0.0001:0.05");
    assert!(moves <= 1, "{moves} moves on jitter");
    assert!(
        spread > 10 * even.max(1),
        "spread {spread} with jitter, {even} without"
    );
    // Same seed, same run.
    assert_eq!(run("0.1:0.0001:0.05"), (moves, spread));
}

#[test]
fn with_a_monitor_the_estimate_is_looked_at_once_a_period() {
    let tts = |monitor: &str| {
        let p = plan(&[
            "numerics=true",
            "tolerance=1e-3",
            "max_iterations=1000000",
            &format!("sim_monitor_s={monitor}"),
        ]);
        let (out, _) = run_plan(&p);
        assert!(out.converged, "monitor {monitor}");
        out.time_to_solution_s.unwrap()
    };
    let every_event = tts("0");
    assert!(
        every_event < 0.05,
        "{every_event} s: the period below must be longer"
    );
    // The first look is at the start; the next a period later, long after
    // the estimate was met, asks for a residual round, and the one after
    // reads it (`schedule::residual`): the run stops at a look.
    let monitored = tts("0.05");
    assert!(
        (0.1..0.101).contains(&monitored),
        "{monitored} s against {every_event}"
    );
}

#[test]
fn with_every_calibrated_cost_the_same_seed_gives_the_same_run() {
    let run = |seed: &str| {
        let p = plan(&[
            "variant=async(4)+split(0.0005)",
            "numerics=true",
            "tolerance=1e-3",
            "max_iterations=1000000",
            "noise=thread",
            "noise_cores=0:0.2",
            "sim_row_ns=10",
            "sim_remote_edge_ns=4",
            "sim_cold_cell_ns=0.5",
            "sim_noise_switch_ns=30000",
            "sim_jitter=0.08:0.0005:0.02",
            "sim_monitor_s=0.001",
            seed,
        ]);
        let (out, _) = run_plan(&p);
        let grid: Vec<u64> = out
            .grid
            .as_ref()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect();
        (
            out.elapsed_s.to_bits(),
            out.subdomain_updates.clone(),
            out.owners.clone(),
            out.lb.map(|l| l.moves),
            grid,
        )
    };
    let first = run("seed=1");
    assert_eq!(first, run("seed=1"));
    assert_ne!(first.0, run("seed=2").0, "the seed draws the jitter");
}
