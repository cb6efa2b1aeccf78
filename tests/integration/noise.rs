//! Parasite noise in whole runs: what the report records, bad values, and
//! the guarantee that a parasite never outlives its run, even a SIGKILLed one.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{alive, braid, live_children, report, scratch};

#[test]
fn the_report_records_the_noise_each_parasite_measured() {
    let dir = scratch("noise_report");
    for mode in ["thread", "process"] {
        let r = report(
            &dir,
            &[
                "--variant",
                "sync",
                "threads=2",
                "domain_size=100",
                "max_iterations=3000",
                &format!("noise={mode}"),
                "noise_cores=0:0.19, 1",
            ],
        );
        let noise = &r["noise"];
        assert_eq!(noise["mode"], mode);
        let parasites = noise["parasites"].as_array().unwrap();
        assert_eq!(parasites.len(), 2);
        assert_eq!(parasites[0]["core"], 0);
        assert_eq!(parasites[0]["requested_duty"], 0.19);
        assert_eq!(parasites[1]["core"], 1);
        assert_eq!(parasites[1]["work_iters"], 10000);
        assert_eq!(parasites[1]["requested_duty"], serde_json::Value::Null);
        for p in parasites {
            assert!(p["bursts"].as_u64().unwrap() > 0, "{p}");
            let duty = p["measured_duty"].as_f64().unwrap();
            assert!(duty > 0.0 && duty < 1.0, "{p}");
        }
    }
    let quiet = report(&dir, &["threads=2", "max_iterations=10"]);
    assert_eq!(quiet["noise"], serde_json::Value::Null);
}

/// CPU time (user + system, in clock ticks) of a process or thread, from
/// its `stat` file.
fn cpu_ticks(stat_path: &str) -> Option<u64> {
    let stat = std::fs::read_to_string(stat_path).ok()?;
    let f: Vec<&str> = stat[stat.rfind(')')? + 2..].split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the file: 12 and 13 here.
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// The CPU ticks the parasite of a running `braid run` (pid) has used so
/// far, seen from outside: a thread named braid-noise-*, or a child process.
fn parasite_ticks(pid: u32, mode: &str) -> Option<u64> {
    if mode == "thread" {
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
        tasks.flatten().find_map(|t| {
            let dir = t.path();
            let comm = std::fs::read_to_string(dir.join("comm")).ok()?;
            comm.starts_with("braid-noise")
                .then(|| cpu_ticks(dir.join("stat").to_str()?))
                .flatten()
        })
    } else {
        let child = *live_children(pid).first()?;
        cpu_ticks(&format!("/proc/{child}/stat"))
    }
}

#[test]
fn the_parasite_is_seen_burning_its_core_from_outside_the_run() {
    let dir = scratch("noise_seen");
    for mode in ["thread", "process"] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_braid"))
            .args([
                "run",
                "threads=1",
                "max_iterations=1000000000",
                "time_limit=1.5",
            ])
            .args([&format!("noise={mode}"), "noise_cores=0:0.5"])
            .current_dir(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // At a 50% duty the parasite burns a tick (10 ms) within 0.1 s of
        // its start; the run lasts 1.5 s. Not the parasite's own account:
        // the kernel's.
        let mut most = 0;
        while child.try_wait().unwrap().is_none() {
            most = most.max(parasite_ticks(child.id(), mode).unwrap_or(0));
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(most >= 5, "{mode}: the parasite used {most} tick(s) of CPU");
    }
}

#[test]
fn a_run_never_waits_out_its_parasites_sleep_or_burst() {
    let dir = scratch("noise_wait");
    for mode in ["thread", "process"] {
        for rhythm in ["noise_sleep_us=30000000", "noise_work_iters=100000000000"] {
            let t = Instant::now();
            let r = report(
                &dir,
                &[
                    "threads=1",
                    "max_iterations=50",
                    &format!("noise={mode}"),
                    rhythm,
                ],
            );
            // The parasite's sleep is 30 s, or its burst several minutes.
            assert!(t.elapsed() < Duration::from_secs(10), "{mode} {rhythm}");
            assert_eq!(r["stop_reason"], "max_iterations");
        }
    }
}

fn shipped_trace() -> String {
    format!(
        "{}/noise/traces/vm-parasite19-core0.trace",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn a_replayed_trace_is_reported_with_its_file_offset_and_share() {
    let dir = scratch("noise_trace");
    let entry = format!("noise_cores=1:{}", shipped_trace());
    for mode in ["trace", "process"] {
        let r = report(
            &dir,
            &[
                "--variant",
                "sync",
                "threads=2",
                "domain_size=100",
                "max_iterations=20000",
                &format!("noise={mode}"),
                &entry,
            ],
        );
        let p = &r["noise"]["parasites"][0];
        assert_eq!(p["trace"]["file"], shipped_trace(), "{p}");
        let whole = p["trace"]["lost_share"].as_f64().unwrap();
        assert!((whole - 0.248).abs() < 0.001, "{p}");
        assert!(p["trace"]["offset_ns"].as_u64().is_some(), "{p}");
        assert!(p["bursts"].as_u64().unwrap() > 10, "{p}");
        // What the replay took, on its CPU clock: never much more than the
        // trace says (a preempted detour is not counted twice), and on a
        // busy machine perhaps less.
        let took = p["measured_duty"].as_f64().unwrap();
        assert!(took > 0.5 * whole && took < whole + 0.05, "{mode}: {p}");
    }
}

#[test]
fn a_run_never_waits_out_a_traces_gap_or_detour() {
    let dir = scratch("noise_trace_wait");
    // 199 s quiet then 1 s away; 199 s away then 1 s quiet: wherever the
    // replay starts, it almost surely waits or works for minutes.
    let gap = dir.join("gap.trace");
    std::fs::write(
        &gap,
        "# duration_ns 200000000000\n199000000000\t1000000000\n",
    )
    .unwrap();
    let long = dir.join("long.trace");
    std::fs::write(&long, "# duration_ns 200000000000\n0\t199000000000\n").unwrap();
    for mode in ["trace", "process"] {
        for file in [&gap, &long] {
            let t = Instant::now();
            let r = report(
                &dir,
                &[
                    "threads=1",
                    "max_iterations=50",
                    &format!("noise={mode}"),
                    &format!("noise_cores=auto:{}", file.display()),
                    "noise_offsets=cosched",
                    "seed=0",
                ],
            );
            assert!(t.elapsed() < Duration::from_secs(10), "{mode} {file:?}");
            assert_eq!(r["stop_reason"], "max_iterations");
        }
    }
}

#[test]
fn auto_noise_sits_on_the_core_of_the_thread_next_to_the_source() {
    let dir = scratch("noise_auto");
    let r = report(&dir, &["threads=2", "max_iterations=200", "noise=thread"]);
    // 2 threads tile 1 x 2: the middle domain of the north row is domain 1.
    let cores: Vec<u64> = serde_json::from_value(r["cores"].clone()).unwrap();
    assert_eq!(r["noise"]["parasites"][0]["core"], cores[1]);
}

#[test]
fn bad_noise_settings_exit_2_naming_the_key() {
    let dir = scratch("noise_bad");
    for (args, needle) in [
        (&["run", "noise=loud"][..], "noise"),
        (&["run", "noise=thread", "noise_cores=0:1.5"], "noise_cores"),
        (&["run", "noise=thread", "noise_cores=0:0"], "noise_cores"),
        (&["run", "noise=process", "noise_cores=999"], "core 999"),
        (
            &["run", "noise=trace", "noise_cores=0:missing.trace"],
            "missing.trace",
        ),
        (&["run", "noise=trace", "noise_cores=0"], "CORE:FILE"),
        (
            &[
                "run",
                "noise=thread",
                "noise_sleep_us=0",
                "noise_work_iters=0",
            ],
            "noise_sleep_us",
        ),
    ] {
        let r = braid(&dir, args);
        assert_eq!(r.status, Some(2), "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(needle), "{args:?}: {}", r.stderr);
    }
}

/// Starts `braid run ARGS` with two process parasites (cores 0 and 1), output
/// discarded.
fn spawn_with_parasites(dir: &Path, args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_braid"))
        .arg("run")
        .args(args)
        .args(["noise=process", "noise_cores=0, 1"])
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn a_sigkilled_braid_leaves_no_parasite_behind() {
    let dir = scratch("noise_kill");
    let mut child = spawn_with_parasites(
        &dir,
        &[
            "threads=1",
            "domain_size=50",
            "max_iterations=1000000000",
            "time_limit=120",
        ],
    );
    let pid = child.id();
    // Wait for both parasites to be running.
    let start = Instant::now();
    let parasites = loop {
        let kids = live_children(pid);
        if kids.len() == 2 {
            break kids;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "parasites never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    child.kill().unwrap(); // SIGKILL: braid gets no chance to clean up
    child.wait().unwrap();
    let start = Instant::now();
    while parasites.iter().any(|&p| alive(p)) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "parasites {parasites:?} outlived their braid"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_finished_run_leaves_no_parasite_behind() {
    let dir = scratch("noise_clean");
    let mut child = spawn_with_parasites(
        &dir,
        &["threads=1", "domain_size=50", "max_iterations=20000"],
    );
    let pid = child.id();
    let mut seen = Vec::new();
    while child.try_wait().unwrap().is_none() {
        for p in live_children(pid) {
            if !seen.contains(&p) {
                seen.push(p);
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(child.wait().unwrap().success());
    // braid waited for its parasites before exiting: none is left running.
    assert!(seen.iter().all(|&p| !alive(p)), "{seen:?}");
}
