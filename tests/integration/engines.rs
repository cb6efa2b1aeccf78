//! The two engines against each other, through the CLI: on the same
//! configuration `braid run` and `braid sim` stop for the same reason at the
//! same limits, and in sync produce the same grid, bit for bit.

use crate::common;

use common::{braid, scratch};
use serde_json::Value;

fn report(dir: &std::path::Path, engine: &str, args: &[&str]) -> Value {
    let mut all = vec![engine, "--json", "-"];
    all.extend_from_slice(args);
    let run = braid(dir, &all);
    assert_eq!(run.status, Some(0), "braid {all:?}: {}", run.stderr);
    serde_json::from_str(&run.stdout).unwrap()
}

fn max_thread_updates(r: &Value) -> u64 {
    let updates = r["thread_updates"].as_array().unwrap();
    updates.iter().map(|u| u.as_u64().unwrap()).max().unwrap()
}

const BASE: [&str; 5] = [
    "threads=2",
    "oversubscribe=true",
    "domain_size=24",
    "numerics=true",
    "noise=none",
];

#[test]
fn both_engines_stop_at_the_same_budget_for_the_same_reason() {
    let dir = scratch("engines_budget");
    for variant in ["sync", "ssync(1)", "async(4)", "async(4)+joint(0.0001)"] {
        let mut args = BASE.to_vec();
        args.extend(["--variant", variant, "max_iterations=40"]);
        let (real, virt) = (report(&dir, "run", &args), report(&dir, "sim", &args));
        let per_thread = 40 * real["subdomains"].as_u64().unwrap();
        for r in [&real, &virt] {
            assert_eq!(r["stop_reason"], "max_iterations", "{variant}: {r}");
            assert_eq!(max_thread_updates(r), per_thread, "{variant}");
        }
        if variant == "sync" {
            assert_eq!(real["subdomain_updates"], virt["subdomain_updates"]);
        }
    }
}

#[test]
fn both_engines_converge_to_a_verified_residual_on_the_same_target() {
    let dir = scratch("engines_tolerance");
    for variant in ["sync", "ssync(1)", "async(4)"] {
        let mut args = BASE.to_vec();
        args.extend([
            "--variant",
            variant,
            "tolerance=0.001",
            "max_iterations=100000",
        ]);
        for engine in ["run", "sim"] {
            let r = report(&dir, engine, &args);
            assert_eq!(r["stop_reason"], "converged", "{engine} {variant}");
            let residual = r["residual"].as_f64().unwrap();
            assert!(residual <= 1e-3, "{engine} {variant}: {residual}");
        }
    }
}

#[test]
fn both_engines_compute_the_same_sync_grid_bit_for_bit() {
    let dir = scratch("engines_grid");
    let mut args = BASE.to_vec();
    args.extend(["--variant", "sync", "max_iterations=33", "--grid"]);
    let grid = |engine: &str| {
        let file = format!("{engine}.npy");
        let mut a = args.clone();
        a.push(&file);
        report(&dir, engine, &a);
        std::fs::read(dir.join(&file)).unwrap()
    };
    assert!(
        grid("run") == grid("sim"),
        "the two engines' sync grids differ"
    );
}
