//! Whole runs through the `braid` command line, on real threads. Only what
//! holds on a busy 2-core machine is asserted; threads beyond the cores are
//! oversubscribed on purpose.

use crate::common;

use braid::{Problem, residual_norm, sequential_jacobi};
use std::time::Duration;

use common::{braid, braid_within, report, scratch};
use ndarray::Array2;
use ndarray_npy::read_npy;

#[test]
fn sync_equals_sequential_jacobi_bit_for_bit() {
    let dir = scratch("sync_bits");
    for threads in [1, 2, 3] {
        for subdomains in [1, 4, 6] {
            let grid = dir.join(format!("g{threads}_{subdomains}.npy"));
            let r = report(
                &dir,
                &[
                    "--variant",
                    "sync",
                    "--grid",
                    grid.to_str().unwrap(),
                    &format!("threads={threads}"),
                    &format!("subdomains={subdomains}"),
                    "oversubscribe=true",
                    "domain_size=13",
                    "max_iterations=57",
                ],
            );
            assert_eq!(r["stop_reason"], "max_iterations");
            let got: Array2<f64> = read_npy(&grid).unwrap();
            let want = sequential_jacobi(&Problem::new(13, threads, subdomains).unwrap(), 57);
            assert_eq!(got.dim(), want.dim());
            let differ = common::bits_differing(&got, &want);
            assert_eq!(differ, 0, "{threads} threads x {subdomains} subdomains");
        }
    }
}

#[test]
fn every_scheme_reaches_the_target_and_the_grid_backs_it() {
    let dir = scratch("converge");
    for variant in ["async(1)", "async(4)", "ssync(1)", "ssync(30)", "sync"] {
        let grid = dir.join("g.npy");
        let r = report(
            &dir,
            &[
                "--variant",
                variant,
                "--grid",
                grid.to_str().unwrap(),
                "threads=2",
                "oversubscribe=true",
                "domain_size=16",
                "tolerance=1e-6",
                "max_iterations=1000000",
            ],
        );
        assert_eq!(r["converged"], true, "{variant}: {r}");
        assert!(r["time_to_solution_s"].as_f64().unwrap() > 0.0, "{variant}");
        // Recompute the residual from the grid file ourselves.
        let g: Array2<f64> = read_npy(&grid).unwrap();
        let p = Problem::new(16, 2, r["subdomains"].as_u64().unwrap() as usize).unwrap();
        let rel = residual_norm(&g) / residual_norm(&p.initial_grid());
        assert!(rel <= 1e-6, "{variant}: grid residual {rel}");
        // (serde_json's default float parser may differ in the last bit)
        let reported = r["residual"].as_f64().unwrap();
        assert!(
            (reported - rel).abs() <= 1e-12 * rel,
            "{variant}: {reported} vs {rel}"
        );
    }
}

/// The residual estimate sums every subdomain's last local residual; one
/// that has none yet must not count as 0. Here the only thread stalls for
/// 50 ms inside its first update, so the monitor looks (every 1 ms) while
/// three of its four subdomains have never been updated. With 0 for them,
/// the first subdomain's residual alone met a loose target, the grid refuted
/// it and the run went on past the target (under heavy noise on this
/// machine, a thread held off its core at the start did the same and runs
/// went on to 1e-8 for a 1e-4 target, five times as long).
#[test]
fn no_run_is_called_converged_before_every_subdomain_has_a_residual() {
    let dir = scratch("run_unseen");
    for _ in 0..3 {
        let r = report(
            &dir,
            &[
                "--variant",
                "async(4)",
                "threads=1",
                "tolerance=0.6",
                "stall=0@1:0.05",
            ],
        );
        assert_eq!(r["stop_reason"], "converged");
        assert_eq!(r["refuted_estimates"], 0, "{}", r["residual"]);
    }
}

#[test]
fn ssync_records_the_largest_lag_and_it_never_exceeds_the_bound() {
    let dir = scratch("ssync_lag");
    for n in [1, 3, 30] {
        let r = report(
            &dir,
            &[
                "--variant",
                &format!("ssync({n})"),
                "subdomains=4",
                "threads=3",
                "oversubscribe=true",
                "domain_size=20",
                "max_iterations=400",
            ],
        );
        let seen = r["max_staleness_seen"].as_u64().unwrap();
        assert!(seen <= n, "ssync({n}) saw a lag of {seen}");
        let counts: Vec<u64> = serde_json::from_value(r["subdomain_updates"].clone()).unwrap();
        assert!(counts.iter().all(|&c| c > 0));
    }
}

#[test]
fn no_mode_hangs_when_a_thread_stalls_inside_an_update() {
    let dir = scratch("stall");
    // Thread 0 stalls for an hour inside its 6th update; only the stop flag
    // can release it. The budget is out of reach, so only the time limit can
    // end the run: every wait (barrier, staleness gate, the stall itself)
    // must watch the stop flag.
    for variant in ["sync", "ssync(2)", "async(4)", "async(1)"] {
        // Fails in 30 s, not an hour, if a wait ignores the flag.
        let run = braid_within(
            &dir,
            &[
                "run",
                "--json",
                "-",
                "--variant",
                variant,
                "threads=3",
                "oversubscribe=true",
                "domain_size=10",
                "max_iterations=100000000",
                "stall=0@5:3600",
                "time_limit=1",
            ],
            Duration::from_secs(30),
            None,
        );
        assert_eq!(run.status, Some(0), "{variant}: {}", run.stderr);
        let r: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        let threads: Vec<u64> = serde_json::from_value(r["thread_updates"].clone()).unwrap();
        // A thread sweeps its own domain's subdomains in one pass: it
        // finishes the pass its 6th update is in (of as many updates as it
        // has subdomains, ssync's gate admitting), and stops.
        let per = r["subdomains"].as_u64().unwrap();
        assert!(
            (6..=5 + per).contains(&threads[0]),
            "{variant}: the stalled thread finishes its pass and stops: {}",
            threads[0]
        );
        assert_eq!(r["stop_reason"], "time_limit", "{variant}");
    }
}

#[test]
fn the_run_stops_when_one_thread_has_done_max_iterations_times_subdomains() {
    let dir = scratch("budget");
    for variant in ["sync", "ssync(5)", "async(4)", "async(1)"] {
        let r = report(
            &dir,
            &["--variant", variant, "domain_size=12", "max_iterations=300"],
        );
        let subdomains = r["subdomains"].as_u64().unwrap();
        let threads: Vec<u64> = serde_json::from_value(r["thread_updates"].clone()).unwrap();
        assert_eq!(threads.iter().max(), Some(&(300 * subdomains)), "{variant}");
        assert_eq!(r["stop_reason"], "max_iterations");
    }
}

#[test]
fn the_report_has_every_documented_field() {
    let dir = scratch("fields");
    let r = report(&dir, &["domain_size=8", "max_iterations=10"]);
    for key in [
        "variant",
        "mode",
        "staleness",
        "subdomains",
        "threads",
        "sockets",
        "cores",
        "grid",
        "elapsed_s",
        "subdomain_updates",
        "thread_updates",
        "spread",
        "iteration_rate",
        "cell_updates_per_s",
        "time_to_solution_s",
        "residual",
        "converged",
        "max_staleness_seen",
        "config",
    ] {
        assert!(r.get(key).is_some(), "report lacks `{key}`");
    }
    for key in ["domain_size", "rows", "cols", "height", "width"] {
        assert!(r["grid"].get(key).is_some(), "grid lacks `{key}`");
    }
    assert_eq!(r["time_to_solution_s"], serde_json::Value::Null);
    assert_eq!(r["variant"], "async(4)");
}

#[test]
fn bad_input_exits_2_with_a_message_naming_the_key() {
    let dir = scratch("bad");
    std::fs::write(dir.join("bad.txt"), "threads = 2\n\nmode = turbo\n").unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["run", "threads=0"], "threads"),
        (&["run", "tolerance=-1"], "tolerance"),
        (&["run", "threads=64"], "oversubscribe"),
        (&["run", "domain_size=2", "subdomains=9"], "subdomains"),
        (&["run", "frobnicate=1"], "frobnicate"),
        (&["run", "--variant", "async(four)"], "async(four)"),
        (&["run", "--config", "bad.txt"], "bad.txt:3"),
        (&["run", "--config", "missing.txt"], "missing.txt"),
        (&["run", "cores=999"], "`cores`: CPU 999"),
        (&["run", "--json", "no/such/dir/r.json"], "no/such/dir"),
    ];
    for (args, needle) in cases {
        let r = braid(&dir, args);
        assert_eq!(r.status, Some(2), "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(needle), "{args:?}: {}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "{args:?}: {}", r.stderr);
    }
}

#[test]
fn out_of_range_input_is_refused_in_bounded_time_and_memory() {
    let dir = scratch("bounds");
    std::fs::write(
        dir.join("bom.txt"),
        "\u{feff}threads = 1\nmax_iterations = 5\n",
    )
    .unwrap();
    let cases: &[(&[&str], &str)] = &[
        // Durations a Duration cannot hold.
        (&["run", "time_limit=1e300"], "`time_limit`"),
        (&["run", "lb_interval=1e300"], "`lb_interval`"),
        (&["run", "trace_interval=1e300"], "`trace_interval`"),
        (&["run", "stall=0@1:1e300"], "`stall`"),
        (&["run", "slow=0:1e300"], "`slow`"),
        (&["run", "--variant", "async(4)+split(1e300)"], "interval"),
        // Lists, ranges and counts that would be expanded in memory.
        (&["run", "cores=0-18446744073709551615"], "`cores`"),
        (&["run", "cores=0-1000000000"], "`cores`"),
        (
            &["sim", "sim_topology=pack:100000 core:100000"],
            "`sim_topology`",
        ),
        (
            &["sim", "sim_topology=pack:4294967296 core:4294967296"],
            "`sim_topology`",
        ),
        // Products that would wrap.
        (
            &["run", "max_iterations=4611686018427387904"],
            "`max_iterations`",
        ),
        (
            &["run", "noise_sleep_us=18446744073709551615"],
            "`noise_sleep_us`",
        ),
        // Memory the machine does not have, estimated before allocating.
        (&["run", "domain_size=1000000"], "memory_limit"),
        (
            &["run", "domain_size=3000", "memory_limit=0.01"],
            "memory_limit",
        ),
        (
            &["sim", "numerics=true", "domain_size=1000000"],
            "memory_limit",
        ),
        // The smaller ones.
        (
            &["run", "threads=1", "threads=2"],
            "`threads` is given twice",
        ),
        (&["run", "--json", "x.out", "--grid", "x.out"], "same file"),
        (&["run", "--config", "/dev/zero"], "not a regular file"),
    ];
    for (args, needle) in cases {
        let r = braid_within(&dir, args, Duration::from_secs(20), Some(2 << 30));
        assert_eq!(r.status, Some(2), "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(needle), "{args:?}: {}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "{args:?}: {}", r.stderr);
    }
    // A missing file's cause is said once.
    let r = braid(&dir, &["run", "--config", "missing.txt"]);
    assert_eq!(r.stderr.matches("No such file").count(), 1, "{}", r.stderr);
    // A byte-order mark is not part of the first key.
    let r = braid(&dir, &["run", "--config", "bom.txt"]);
    assert_eq!(r.status, Some(0), "{}", r.stderr);
}

#[test]
fn topology_says_what_it_found_and_how() {
    let r = braid(&scratch("topo"), &["topology"]);
    assert_eq!(r.status, Some(0));
    assert!(r.stdout.contains("socket 0: cores"), "{}", r.stdout);
}

#[test]
fn braid_config_prints_the_shipped_config_and_it_runs_as_the_defaults() {
    let dir = scratch("config_cmd");
    let r = braid(&dir, &["config"]);
    assert_eq!(r.status, Some(0), "{}", r.stderr);
    let shipped = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config.txt"));
    assert_eq!(r.stdout, shipped.unwrap());
    // Edited and fed back, it configures a run: the printed keys are live.
    let edited = r
        .stdout
        .replace("max_iterations = 5000", "max_iterations = 7");
    std::fs::write(dir.join("mine.txt"), edited).unwrap();
    let rep = report(&dir, &["--config", "mine.txt", "threads=1"]);
    assert_eq!(rep["config"]["max_iterations"], 7);
    assert_eq!(rep["thread_updates"][0], 7 * 4);
}

#[cfg(not(feature = "mpi"))]
#[test]
fn a_rank_of_an_mpi_job_is_refused_without_the_mpi_feature() {
    // What mpirun sets for each rank; without the feature each rank would
    // run the whole problem alone and write the same files.
    let dir = scratch("no_mpi");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_braid"));
    cmd.args(["run", "max_iterations=10"])
        .current_dir(&dir)
        .env("OMPI_COMM_WORLD_SIZE", "2");
    let r = common::wait_for(cmd, common::HANG);
    assert_eq!(r.status, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("--features mpi"), "{}", r.stderr);
}
