//! `braid sim --replay-speeds`: a real run's measured speeds replayed in
//! the simulator reproduce that run, and can be replayed against another
//! balancer; bad reports are refused with exit 2.

use crate::common;

use common::{braid, in_one_of_three, scratch};
use serde_json::Value;
use std::path::PathBuf;

use common::json;

/// The real runs here each take both cores: one at a time, so that one
/// run's end is not another's start (the rates after a run's last sample are
/// not recorded).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The scratch directory, the real run's report and the replay's.
fn run_and_replay(name: &str, run: &[&str], replay: &[&str]) -> (PathBuf, Value, Value) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch(name);
    let mut args = vec![
        "run",
        "--json",
        "real.json",
        "threads=2",
        "trace_interval=0.002",
    ];
    args.extend_from_slice(run);
    let r = braid(&dir, &args);
    assert_eq!(r.status, Some(0), "{}", r.stderr);
    let mut args = vec!["sim", "--replay-speeds", "real.json", "--json", "sim.json"];
    args.extend_from_slice(replay);
    let s = braid(&dir, &args);
    assert_eq!(s.status, Some(0), "{}", s.stderr);
    assert!(
        s.stdout.contains("as its thread ran in real.json"),
        "{}",
        s.stdout
    );
    let (real, sim) = (json(&dir.join("real.json")), json(&dir.join("sim.json")));
    (dir, real, sim)
}

fn counts(r: &Value) -> Vec<f64> {
    r["thread_updates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_f64().unwrap())
        .collect()
}

#[test]
fn a_replayed_run_reproduces_its_counts_and_time() {
    // Whatever this machine did to the run, the replay holds it.
    in_one_of_three(|| {
        let (_, real, sim) = run_and_replay("replay_same", &["max_iterations=8000"], &[]);
        assert_eq!(sim["clock"], "virtual");
        assert_eq!(sim["variant"], real["variant"]);
        for (r, s) in counts(&real).iter().zip(counts(&sim)) {
            if (s / r - 1.0).abs() >= 0.03 {
                return Err(format!("counts: real {r}, replayed {s}"));
            }
        }
        // The replay knows the run up to its trace's last sample, taken
        // once the workers stopped (late if the sampler was preempted
        // then); the report's elapsed time also holds the report's
        // assembly after that. So the replay ends between the last
        // periodic sample (2 ms apart; the workers were still going) and
        // the last one.
        let samples = real["trace"].as_array().expect("a traced run");
        let times: Vec<f64> = samples.iter().map(|x| x["t_s"].as_f64().unwrap()).collect();
        let last = *times.last().unwrap();
        let before = times
            .iter()
            .copied()
            .filter(|&t| t < last - 0.001)
            .fold(0.0, f64::max);
        let (tr, ts) = (
            real["elapsed_s"].as_f64().unwrap(),
            sim["elapsed_s"].as_f64().unwrap(),
        );
        assert!(last <= tr, "traced to {last} s of {tr} s");
        if ts < 0.97 * before || ts > 1.03 * last {
            return Err(format!(
                "time: real between {before} s and {last} s (traced; {tr} s reported), \
                 replayed {ts} s"
            ));
        }
        Ok(())
    });
}

#[test]
fn measured_noise_replays_against_another_balancer() {
    // Thread 1's core at half speed, no balancer; replayed as it ran and
    // with joint. The two replays see the same measured speeds, so the
    // comparison holds however busy the machine was during the real run,
    // unless the machine's noise swamped the slowdown in it.
    in_one_of_three(|| {
        let (dir, real, sim) = run_and_replay(
            "replay_other",
            &["max_iterations=6000", "slow=1:1"],
            &["--variant", "async(4)+joint(0.001)"],
        );
        assert_eq!(real["lb"], Value::Null);
        assert_eq!(sim["config"]["slow"], Value::Null, "the speeds hold it");
        let plain = braid(
            &dir,
            &[
                "sim",
                "--replay-speeds",
                "real.json",
                "--json",
                "plain.json",
            ],
        );
        assert_eq!(plain.status, Some(0), "{}", plain.stderr);
        let plain = json(&dir.join("plain.json"));
        assert_eq!(plain["lb"], Value::Null);
        // Measured here: joint's spread is 0.05-0.25 of plain's on a busy
        // machine (two CPU hogs), and once, with the other tests beside,
        // 0.93 (the replay holds the run's measured speeds, and a busy
        // machine makes them jitter beyond what a balancer should move
        // on). Without joint it is 1.0, which is what this must catch.
        let moves = sim["lb"]["moves"].as_u64().unwrap();
        let (s, p) = (
            sim["spread"].as_u64().unwrap(),
            plain["spread"].as_u64().unwrap(),
        );
        if moves == 0 || 4 * s >= 3 * p {
            return Err(format!(
                "joint evens the progress the slow core lost: replayed as it ran {p}, \
                 with joint {s} in {moves} moves (real {})",
                real["spread"]
            ));
        }
        Ok(())
    });
}

#[test]
fn bad_reports_are_refused_with_exit_2() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch("replay_bad");
    let r = braid(
        &dir,
        &[
            "run",
            "--json",
            "untraced.json",
            "threads=2",
            "max_iterations=50",
        ],
    );
    assert_eq!(r.status, Some(0), "{}", r.stderr);
    let r = braid(
        &dir,
        &[
            "run",
            "--json",
            "traced.json",
            "threads=2",
            "max_iterations=3000",
            "trace_interval=0.001",
        ],
    );
    assert_eq!(r.status, Some(0), "{}", r.stderr);
    std::fs::write(dir.join("junk.json"), "{\"not\": \"a report\"}").unwrap();
    for (args, needle) in [
        (
            &["sim", "--replay-speeds", "untraced.json"][..],
            "trace_interval",
        ),
        (
            &["sim", "--replay-speeds", "junk.json"],
            "not a braid run report",
        ),
        (&["sim", "--replay-speeds", "missing.json"], "missing.json"),
        (
            &["sim", "--replay-speeds", "traced.json", "threads=3"],
            "replayed speeds are of 2 threads",
        ),
        (
            &[
                "sim",
                "--replay-speeds",
                "traced.json",
                "--config",
                "config.txt",
            ],
            "--config",
        ),
    ] {
        let r = braid(&dir, args);
        assert_eq!(r.status, Some(2), "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(needle), "{args:?}: {}", r.stderr);
    }
}
