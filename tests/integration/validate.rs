//! `braid validate` through the command line: on a tiny configuration it
//! calibrates, runs its matrix in both engines and writes a calibration
//! later runs take, a table and a citable file. Its verdicts depend on the
//! machine and are not asserted; their form is.

use crate::common;

use common::{braid, json, scratch};
use std::path::Path;

const TINY: &[&str] = &["threads=2", "domain_size=24", "tolerance=1e-3"];

#[test]
fn quick_validation_writes_a_calibration_runs_can_take_a_table_and_a_citable_file() {
    let dir = scratch("validate-quick");
    let out = dir.join("v");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut args = vec!["validate", "--quick", "--out", out.to_str().unwrap()];
    args.extend(TINY);
    // From the repository's root, where the shipped trace is.
    let run = braid(root, &args);
    assert_eq!(run.status, Some(0), "{}", run.stderr);

    // The table: a row per variant and condition, and the verdicts counted.
    let conditions = ["quiet", "parasite 19%", "trace vm-parasite19-core0.trace"];
    let variants = [
        "async(1)",
        "async(4)",
        "async(4)+split(0.001)",
        "async(4)+greedy(0.001)",
    ];
    for c in conditions {
        for v in variants {
            assert!(
                run.stdout.contains(&format!("| {c} | {v} | ")),
                "no row for {c} {v}:\n{}",
                run.stdout
            );
        }
    }
    assert!(
        run.stdout
            .contains("whichever is wider): time to solution within 15% in ")
    );
    let md = std::fs::read_to_string(out.join("validation.md")).unwrap();
    assert!(md.contains(&run.stdout), "validation.md holds the table");

    // The calibration: config lines every new cost is in, that a
    // simulation takes as its configuration.
    let cal = std::fs::read_to_string(out.join("calibration.txt")).unwrap();
    for key in [
        "sim_cell_ns",
        "sim_row_ns",
        "sim_update_ns",
        "sim_residual_factor",
        "sim_remote_edge_ns",
        "sim_cold_cell_ns",
        "sim_block_ns",
        "sim_home_update_ns",
        "sim_balancer_ns",
        "sim_noise_switch_ns",
        "sim_monitor_s",
        "sim_jitter",
    ] {
        assert!(cal.contains(&format!("\n{key} = ")), "no {key} in:\n{cal}");
    }
    let sim = braid(
        &dir,
        &[
            "sim",
            "--config",
            out.join("calibration.txt").to_str().unwrap(),
            "max_iterations=20",
            "domain_size=16",
            "--json",
            "r.json",
        ],
    );
    assert_eq!(sim.status, Some(0), "{}", sim.stderr);
    let report = json(&dir.join("r.json"));
    let cell = cal
        .lines()
        .find_map(|l| l.strip_prefix("sim_cell_ns = "))
        .and_then(|v| v.split_whitespace().next())
        .unwrap();
    assert_eq!(
        report["config"]["sim_cell_ns"].as_f64(),
        cell.parse::<f64>().ok()
    );

    // The citable file: when, on what, with which calibration, every row.
    let validation = json(&out.join("validation.json"));
    assert!(validation["date"].as_str().unwrap().ends_with('Z'));
    assert!(validation["provenance"]["cpu_model"].is_string());
    assert_eq!(validation["repetitions"], 3);
    assert_eq!(
        validation["sim_topology"]
            .as_str()
            .map(|t| t.starts_with("pack:")),
        Some(true)
    );
    assert!(validation["calibration"].as_array().unwrap().len() >= 10);
    let rows = validation["rows"].as_array().unwrap();
    assert_eq!(rows.len(), conditions.len() * variants.len());
    for r in rows {
        for key in [
            "condition",
            "variant",
            "real",
            "sim",
            "real_spread",
            "sim_spread",
        ] {
            assert!(r.get(key).is_some(), "a row without {key}: {r}");
        }
    }
    // async(4) is compared with async(1), a balanced variant with async(4),
    // and every noisy row with its quiet one.
    assert_eq!(rows[1]["base"], "async(1)");
    assert_eq!(rows[2]["base"], "async(4)");
    assert!(rows[0]["over_quiet"].is_null());
    // Each row keeps its real runs round by round, and each verdict the
    // machine's 95% interval it was judged against.
    for r in rows {
        assert_eq!(r["real_runs"].as_array().map(Vec::len), Some(3), "{r}");
    }
    let interval = &rows[1]["time"]["interval"];
    let (lo, hi) = (interval[0].as_f64().unwrap(), interval[1].as_f64().unwrap());
    let median = rows[1]["time"]["real"].as_f64().unwrap();
    assert!(lo <= median && median <= hi, "{interval} around {median}");
    assert!(
        run.stdout.contains("resolution: 3 real runs a row"),
        "{}",
        run.stdout
    );

    // The figure, and `braid plot` draws it again from validation.json.
    for name in ["validation.png", "validation.svg"] {
        assert!(out.join(name).is_file(), "no {name}");
    }
    let again = braid(
        &dir,
        &[
            "plot",
            out.join("validation.json").to_str().unwrap(),
            "--out",
            "redrawn",
        ],
    );
    assert_eq!(again.status, Some(0), "{}", again.stderr);
    assert_eq!(
        std::fs::read(dir.join("redrawn/validation.svg")).unwrap(),
        std::fs::read(out.join("validation.svg")).unwrap(),
        "the redrawn figure differs"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_missing_trace_or_a_bad_key_is_refused_before_anything_runs_or_is_written() {
    let dir = scratch("validate-bad");
    for (args, says) in [
        (
            vec!["--trace", "nowhere.trace"],
            "nowhere.trace: no such file",
        ),
        // A device (as a FIFO) exists, but is no trace file.
        (
            vec!["--trace", "/dev/null"],
            "/dev/null: not a regular file",
        ),
        (vec!["bogus=1"], "unknown key `bogus`"),
        (vec!["cores=0-99"], "`cores`"),
        (
            vec!["--out", "/proc/braid-validate"],
            "--out: cannot write /proc/braid-validate",
        ),
    ] {
        let mut all = vec!["validate", "--quick"];
        if !args.contains(&"--out") {
            all.extend(["--out", "v"]);
        }
        all.extend(args.iter().copied());
        all.extend(TINY);
        let run = braid(&dir, &all);
        assert_eq!(run.status, Some(2), "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(says), "{args:?}: {}", run.stderr);
        assert!(!dir.join("v").exists(), "{args:?} wrote its outputs");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
