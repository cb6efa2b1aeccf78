//! `--lb-data DIR`: a run's object loads as DARMA vt LB data files, one per
//! thread, that follow vt's schema; in a real run a thread's task times add
//! up to the time it was busy; a directory that cannot be made is refused
//! before the run.

use crate::common;

use common::{braid, scratch};
use serde_json::Value;
use std::path::Path;

use common::json;

/// The files in `dir`, `data.0.json` first, each checked against vt's
/// schema.
fn lb_files(dir: &Path, threads: usize) -> Vec<Value> {
    (0..threads)
        .map(|t| {
            let file = json(&dir.join(format!("data.{t}.json")));
            assert_eq!(braid::check_lb_data(&file), Ok(()), "data.{t}.json");
            assert_eq!(file["metadata"]["rank"], t);
            file
        })
        .collect()
}

#[test]
fn a_real_runs_tasks_and_time_ahead_add_up_to_each_threads_busy_time() {
    // Beside this file's other tests (simulations on the same two cores)
    // a thread once lost 5% of a run to something neither its updates nor
    // its core's wait account for (0.259 s of 0.273 s); a run gets three
    // attempts. Accounting that loses time (a phase's updates, or the
    // core's wait under load) fails all three. On the Zen 5 VM the run
    // took 0.10 s, and in a CI run beside a release build all three lost
    // 5-12% (6-13 ms each, stalls of that size): 15,000 iterations keep it
    // near the 0.27 s for which the 5% was set.
    // (`scratch` numbers each call's directory.)
    common::in_one_of_three(|| tasks_add_up(&scratch("lbdata_run")));
}

/// A phase's `user_defined` number `key`.
fn phase_f64(phase: &Value, key: &str) -> f64 {
    phase["user_defined"][key]
        .as_f64()
        .expect("braid's phase keys")
}

fn tasks_add_up(dir: &Path) -> Result<(), String> {
    // One big subdomain per thread, in async: a thread is busy updating
    // from the first phase to the last (those two also hold its start and
    // its end, and are left out).
    let r = braid(
        dir,
        &[
            "run",
            "--lb-data",
            "lb",
            "--variant",
            "async(1)",
            "threads=2",
            "domain_size=300",
            "max_iterations=15000",
        ],
    );
    assert_eq!(r.status, Some(0), "{}", r.stderr);
    for (t, file) in lb_files(&dir.join("lb"), 2).iter().enumerate() {
        let phases = file["phases"].as_array().unwrap();
        assert!(phases.len() > 10, "{} phases", phases.len());
        // No thread's tasks add up to more than their phase.
        for p in phases {
            let tasks = common::task_seconds(std::slice::from_ref(p), true)
                + common::task_seconds(std::slice::from_ref(p), false);
            let window = phase_f64(p, "window_s");
            assert!(tasks <= window * (1.0 + 1e-9), "{tasks} s in {p}");
        }
        let middle = &phases[1..phases.len() - 1];
        let span: f64 = middle.iter().map(|p| phase_f64(p, "window_s")).sum();
        let ahead: f64 = middle.iter().map(|p| phase_f64(p, "ahead_s")).sum();
        // The subdomains' own work at the slowest thread's pace, the noise
        // (the time the thread waited for its core) and the time it ran
        // ahead add up to the time it was busy.
        let (own, noise) = (
            common::task_seconds(middle, true),
            common::task_seconds(middle, false),
        );
        if ((own + noise + ahead) / span - 1.0).abs() >= 0.05 {
            return Err(format!(
                "thread {t}: tasks {own} s + noise {noise} s + ahead {ahead} s in {span} s"
            ));
        }
    }
    Ok(())
}

#[test]
fn an_analysis_tool_sees_the_imbalance_an_async_run_had() {
    // A hotspot twice as costly, plain async: every thread is busy all the
    // time, the heavy one advancing more slowly. Per phase, the rank loads
    // (all of a file's tasks, as LBAF sums them) are out of balance as the
    // run was. In the simulator, in the median phase, max over mean is
    // within 5% of the report's workload model (how much the heaviest
    // thread's sweep exceeds the even share). A real update's cost is not
    // exactly its factor (measured quiet: the median phase within 1.5% of
    // the imbalance the report's busy times price, docs/lb-data.md), and on
    // a busy machine the threads take turns on the cores: a phase in which
    // one made no update has a pace of 0, and its waiting is its noise
    // task. What that cannot break: over the run, the hot thread's
    // subdomains' tasks outweigh the other's by at least a third of the
    // model's imbalance, in one of three runs.
    let run = |engine: &str, dir: &Path| -> (f64, Vec<(usize, f64)>, [f64; 2]) {
        let r = braid(
            dir,
            &[
                engine,
                "--json",
                "r.json",
                "--lb-data",
                "lb",
                "--variant",
                "async(4)",
                "threads=2",
                "workload=hotspot(2,0.25,0.25,0.3)",
                "domain_size=150",
                "max_iterations=3000",
                "tolerance=0",
            ],
        );
        assert_eq!(r.status, Some(0), "{}", r.stderr);
        let report = json(&dir.join("r.json"));
        let model = report["workload_model"]["heaviest_thread"]
            .as_f64()
            .unwrap()
            - 1.0;
        let files = lb_files(&dir.join("lb"), 2);
        let phases = files[0]["phases"].as_array().unwrap().len();
        let own = |t: usize| common::task_seconds(files[t]["phases"].as_array().unwrap(), true);
        let sums = [own(0), own(1)];
        // Each phase with work: its heaviest rank and its imbalance.
        let imbalance = (0..phases)
            .filter_map(|k| {
                let loads: Vec<f64> = files
                    .iter()
                    .map(|f| {
                        let p = std::slice::from_ref(&f["phases"][k]);
                        common::task_seconds(p, true) + common::task_seconds(p, false)
                    })
                    .collect();
                let mean = loads.iter().sum::<f64>() / loads.len() as f64;
                let heaviest = (loads[1] > loads[0]) as usize;
                (mean > 0.0).then(|| (heaviest, loads[heaviest] / mean - 1.0))
            })
            .collect();
        (model, imbalance, sums)
    };
    let median = |all: &[(usize, f64)]| {
        let mut v: Vec<f64> = all.iter().map(|x| x.1).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (model, sim, _) = run("sim", &scratch("lbdata_imbalance_sim"));
    let hot = sim[sim.len() / 2].0;
    assert!(
        (median(&sim) / model - 1.0).abs() < 0.05,
        "sim: median imbalance {}, the model's {model} ({sim:?})",
        median(&sim)
    );
    common::in_one_of_three(|| {
        let (_, _, sums) = run("run", &scratch("lbdata_imbalance_run"));
        let over = sums[hot] / sums[1 - hot] - 1.0;
        match over >= model / 3.0 {
            true => Ok(()),
            false => Err(format!(
                "run: thread {hot}'s tasks {} s against {} s, {over:+.3} (model {model:.3})",
                sums[hot],
                sums[1 - hot]
            )),
        }
    });
}

#[test]
fn a_simulation_writes_one_file_per_thread_with_its_socket_and_node() {
    let dir = scratch("lbdata_sim");
    let r = braid(
        &dir,
        &[
            "sim",
            "--lb-data",
            "lb",
            "--variant",
            "async(4)+joint(0.0001)",
            "sim_topology=host:2 pack:2 core:2",
            "threads=8",
            "max_iterations=500",
        ],
    );
    assert_eq!(r.status, Some(0), "{}", r.stderr);
    let files = lb_files(&dir.join("lb"), 8);
    for (t, f) in files.iter().enumerate() {
        let node = &f["metadata"]["shared_node"];
        assert_eq!(node["id"], t / 4, "thread {t}");
        assert_eq!(node["num_nodes"], 2);
        assert_eq!(node["size"], 4);
        assert_eq!(f["metadata"]["attributes"]["socket"], t / 2);
    }
    assert!(!dir.join("lb").join("data.8.json").exists());
}

#[test]
fn an_lb_data_directory_that_cannot_be_made_is_refused_before_the_run() {
    let dir = scratch("lbdata_bad");
    std::fs::write(dir.join("file"), "").unwrap();
    let r = braid(&dir, &["sim", "--lb-data", "file/lb", "max_iterations=10"]);
    assert_eq!(r.status, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("--lb-data"), "{}", r.stderr);
    assert!(!r.stderr.contains("simulating"), "it ran: {}", r.stderr);
    // One that exists but takes no files (even as root): found before the
    // run, not after it.
    for engine in ["run", "sim"] {
        let r = braid(
            &dir,
            &[engine, "--lb-data", "/proc/self", "max_iterations=10"],
        );
        assert_eq!(r.status, Some(2), "{engine}: {}", r.stderr);
        assert!(r.stderr.contains("cannot write into"), "{}", r.stderr);
        assert!(!r.stderr.contains("LB data of"), "it ran: {}", r.stderr);
    }
    // A folder whose data.1.json is a directory: found before the run.
    std::fs::create_dir_all(dir.join("taken/data.1.json")).unwrap();
    for engine in ["run", "sim"] {
        let args = [
            engine,
            "--lb-data",
            "taken",
            "threads=2",
            "max_iterations=10",
        ];
        let r = braid(&dir, &args);
        assert_eq!(r.status, Some(2), "{engine}: {}", r.stderr);
        assert!(
            r.stderr.contains("data.1.json is not a file"),
            "{}",
            r.stderr
        );
        assert!(!r.stderr.contains("LB data of"), "it ran: {}", r.stderr);
    }
}

/// `braid sim ARGS` recording LB data into `lb`, then replaying it with
/// `workload=lbdata:lb` in place of the recording's own workload: the two
/// times to solution.
fn recorded_and_replayed(dir: &Path, args: &[&str], workload: &str) -> (f64, f64) {
    let run = |workload: &str, extra: &[&str]| {
        let mut all = vec!["sim", "--json", "r.json", "numerics=true", "tolerance=1e-4"];
        all.extend_from_slice(args);
        all.push(workload);
        all.extend_from_slice(extra);
        let r = braid(dir, &all);
        assert_eq!(r.status, Some(0), "{all:?}: {}", r.stderr);
        json(&dir.join("r.json"))["time_to_solution_s"]
            .as_f64()
            .expect("it converged")
    };
    let _ = std::fs::remove_dir_all(dir.join("lb"));
    let recorded = run(workload, &["--lb-data", "lb"]);
    (recorded, run("workload=lbdata:lb", &[]))
}

#[test]
fn a_simulation_replayed_from_its_own_lb_data_reaches_the_same_time_to_solution() {
    let dir = scratch("lbdata_replay");
    let common = [
        "threads=4",
        "domain_size=64",
        "max_iterations=100000",
        "noise=thread",
        "noise_cores=1:0.3",
    ];
    // A fixed hotspot balanced by joint under noise, and a hotspot that
    // moves: the replay reads each phase's costs as the recording had them.
    for (variant, workload) in [
        ("async(4)+joint(0.0005)", "workload=hotspot(4,0.3,0.3,0.2)"),
        ("async(4)", "workload=moving(4,0.2,0.5,0.15,0.0001,0)"),
    ] {
        let mut args = common.to_vec();
        args.extend(["--variant", variant]);
        let (recorded, replayed) = recorded_and_replayed(&dir, &args, workload);
        assert!(
            (replayed / recorded - 1.0).abs() < 0.01,
            "{variant} {workload}: recorded {recorded} s, replayed {replayed} s"
        );
    }
}

#[test]
fn a_real_run_replays_lb_data_and_bad_lb_data_is_refused_naming_file_phase_and_field() {
    let dir = scratch("lbdata_read");
    let r = braid(
        &dir,
        &[
            "sim",
            "--lb-data",
            "lb",
            "threads=2",
            "workload=hotspot(4,0.3,0.3,0.2)",
            "max_iterations=300",
        ],
    );
    assert_eq!(r.status, Some(0), "{}", r.stderr);
    let r = braid(
        &dir,
        &[
            "run",
            "threads=2",
            "workload=lbdata:lb",
            "max_iterations=300",
        ],
    );
    assert_eq!(r.status, Some(0), "{}", r.stderr);
    // A count of updates below 0 (braid's key in vt's free-form
    // user_defined): named, not read as "not recorded".
    let file = dir.join("lb").join("data.1.json");
    let whole = std::fs::read(&file).unwrap();
    let mut v = json(&file);
    v["phases"][2]["tasks"][0]["user_defined"]["updates"] = serde_json::json!(-5);
    std::fs::write(&file, v.to_string()).unwrap();
    let r = braid(&dir, &["sim", "threads=2", "workload=lbdata:lb"]);
    assert_eq!(r.status, Some(2), "{}", r.stderr);
    for part in ["data.1.json", "phase 2", "user_defined.updates is -5"] {
        assert!(r.stderr.contains(part), "no {part}: {}", r.stderr);
    }
    std::fs::write(&file, whole).unwrap();
    // One field of one task made an integer where vt's schema wants a float.
    let mut v = json(&file);
    v["phases"][2]["tasks"][0]["time"] = serde_json::json!(1);
    std::fs::write(&file, v.to_string()).unwrap();
    for engine in ["run", "sim"] {
        let r = braid(&dir, &[engine, "threads=2", "workload=lbdata:lb"]);
        assert_eq!(r.status, Some(2), "{}", r.stderr);
        for part in ["data.1.json", "phase 2", "phases[2].tasks[0].time"] {
            assert!(r.stderr.contains(part), "{engine}: no {part}: {}", r.stderr);
        }
    }
    let r = braid(&dir, &["sim", "workload=lbdata:nowhere"]);
    assert_eq!(r.status, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("nowhere"), "{}", r.stderr);
}

#[test]
fn a_recording_wider_than_the_real_engines_sweeps_is_refused_by_run_and_simulated() {
    // vt's own kind of file (no updates): two tasks, a thousand times apart.
    let dir = scratch("lbdata_wide");
    std::fs::create_dir_all(dir.join("vt")).unwrap();
    let task = |id: u64, time: f64| {
        serde_json::json!({
            "entity": {"type": "object", "seq_id": id, "home": 0, "migratable": true, "collection_id": 7},
            "node": 0, "resource": "cpu", "time": time
        })
    };
    let file = serde_json::json!({"type": "LBDatafile", "metadata": {"rank": 0},
        "phases": [{"id": 0, "tasks": [task(0, 1e-4), task(1, 1e-1)]}]});
    std::fs::write(dir.join("vt").join("data.0.json"), file.to_string()).unwrap();
    let r = braid(
        &dir,
        &["run", "threads=1", "subdomains=2", "workload=lbdata:vt"],
    );
    assert_eq!(r.status, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("braid sim"), "{}", r.stderr);
    let r = braid(
        &dir,
        &[
            "sim",
            "threads=1",
            "subdomains=2",
            "workload=lbdata:vt",
            "max_iterations=50",
        ],
    );
    assert_eq!(r.status, Some(0), "{}", r.stderr);
}

/// A directory of two PEs over four tasks, each task making 3000 updates
/// a phase (so phase 1 begins at progress 3000, long enough for a busy
/// machine's monitor to sample phase 0): phase 0 puts tasks 0-2 on PE 0,
/// phase 1 only task 0.
fn owners_dir(dir: &Path) -> std::path::PathBuf {
    let owners = dir.join("owners");
    std::fs::create_dir_all(&owners).unwrap();
    let task = |id: u64, pe: u64| {
        serde_json::json!({
            "entity": {"type": "object", "seq_id": id, "home": 0, "migratable": true, "collection_id": 0},
            "node": pe, "resource": "cpu", "time": 0.001, "user_defined": {"updates": 3000}
        })
    };
    let phases = |pe: u64, first: &[u64], second: &[u64]| {
        serde_json::json!([
            {"id": 0, "tasks": first.iter().map(|&t| task(t, pe)).collect::<Vec<_>>()},
            {"id": 1, "tasks": second.iter().map(|&t| task(t, pe)).collect::<Vec<_>>()},
        ])
    };
    for (pe, first, second) in [(0, &[0, 1, 2][..], &[0][..]), (1, &[3][..], &[1, 2, 3][..])] {
        let file = serde_json::json!({"type": "LBDatafile", "phases": phases(pe, first, second)});
        std::fs::write(owners.join(format!("data.{pe}.json")), file.to_string()).unwrap();
    }
    owners
}

#[test]
fn prescribed_owners_are_applied_exactly_phase_by_phase_in_both_engines() {
    let dir = scratch("lbdata_prescribed");
    owners_dir(&dir);
    for engine in ["sim", "run"] {
        let r = braid(
            &dir,
            &[
                engine,
                "--json",
                "r.json",
                "threads=2",
                "subdomains=2",
                "domain_size=200",
                "balancer=joint",
                "lb_strategy=prescribed:owners",
                "lb_interval=0.0001",
                "trace_interval=0.0001",
                "max_iterations=6000",
            ],
        );
        assert_eq!(r.status, Some(0), "{engine}: {}", r.stderr);
        let report = json(&dir.join("r.json"));
        let owners = |v: &Value| -> Vec<u64> {
            v.as_array()
                .unwrap()
                .iter()
                .map(|o| o.as_u64().unwrap())
                .collect()
        };
        // After the last phase's call, its owners; before it, the first's.
        assert_eq!(owners(&report["owners"]), vec![0, 1, 1, 1], "{engine}");
        let trace = report["trace"].as_array().unwrap();
        let progress = |s: &Value| {
            let c = s["counts"].as_array().unwrap();
            c.iter().map(|c| c.as_u64().unwrap()).sum::<u64>() as f64 / c.len() as f64
        };
        assert!(
            trace
                .iter()
                .filter(|s| progress(s) < 3000.0)
                .any(|s| owners(&s["owners"]) == vec![0, 0, 0, 1]),
            "{engine}: the first phase's owners were never in force"
        );
        // Nothing else moved: from the domains' owners (0, 0, 1, 1) one
        // subdomain to the first phase's, then two to the second's.
        assert_eq!(report["lb"]["moves"], 3, "{engine}");
    }
}

#[test]
fn lb_data_written_compressed_reads_back_and_a_folder_of_another_run_is_refused() {
    let dir = scratch("lbdata_brotli");
    let sim = |threads: &str, extra: &[&str]| {
        let mut args = vec!["sim", "--lb-data", "lb", threads, "max_iterations=300"];
        args.extend_from_slice(extra);
        braid(&dir, &args)
    };
    let r = sim("threads=4", &["--lb-data-compress"]);
    assert_eq!(r.status, Some(0), "{}", r.stderr);
    let bytes = std::fs::read(dir.join("lb/data.0.json")).unwrap();
    assert_ne!(bytes.first(), Some(&b'{'), "not compressed");
    let replay = braid(
        &dir,
        &[
            "sim",
            "threads=4",
            "max_iterations=300",
            "workload=lbdata:lb",
        ],
    );
    assert_eq!(replay.status, Some(0), "{}", replay.stderr);
    // A run of 2 threads would leave data.2 and data.3 beside its own.
    let r = sim("threads=2", &[]);
    assert_eq!(r.status, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains("data.2.json to data.3.json") && !r.stderr.contains("simulating"),
        "{}",
        r.stderr
    );
    // The same run again overwrites its own files.
    assert_eq!(sim("threads=4", &[]).status, Some(0));
}
