//! `--lb-data DIR`: a run's object loads as DARMA vt LB data files, one per
//! thread, that follow vt's schema; in a real run a thread's task times add
//! up to the time it was busy; a directory that cannot be made is refused
//! before the run.

mod common;

use common::{braid, scratch};
use serde_json::Value;
use std::path::Path;

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The files in `dir`, `data.0.json` first, each checked against vt's
/// schema.
fn lb_files(dir: &Path, threads: usize) -> Vec<Value> {
    (0..threads)
        .map(|t| {
            let file = json(&dir.join(format!("data.{t}.json")));
            assert_eq!(braid::lbfile::schema::check(&file), Ok(()), "data.{t}.json");
            assert_eq!(file["metadata"]["rank"], t);
            file
        })
        .collect()
}

#[test]
fn a_real_runs_task_times_add_up_to_each_threads_busy_time() {
    let dir = scratch("lbdata_run");
    // One big subdomain per thread, in async: a thread is busy updating
    // from the first phase to the last (those two also hold its start and
    // its end, and are left out).
    let r = braid(
        &dir,
        &[
            "run",
            "--json",
            "r.json",
            "--lb-data",
            "lb",
            "--variant",
            "async(1)",
            "threads=2",
            "domain_size=300",
            "max_iterations=6000",
        ],
    );
    assert_eq!(r.status, Some(0), "{}", r.stderr);
    let report = json(&dir.join("r.json"));
    let trace = report["trace"].as_array().unwrap();
    let at = |k: usize| match k {
        0 => 0.0,
        k => trace[k - 1]["t_s"].as_f64().unwrap(),
    };
    for (t, file) in lb_files(&dir.join("lb"), 2).iter().enumerate() {
        let phases = file["phases"].as_array().unwrap();
        assert_eq!(phases.len(), trace.len());
        assert!(phases.len() > 10, "{} phases", phases.len());
        let middle = &phases[1..phases.len() - 1];
        let span: f64 = (2..phases.len()).map(|k| at(k) - at(k - 1)).sum();
        // The subdomains' own work and the noise (the time the thread
        // waited for its core) add up to the time it was busy.
        let (own, noise) = (
            common::task_seconds(middle, true),
            common::task_seconds(middle, false),
        );
        assert!(
            ((own + noise) / span - 1.0).abs() < 0.05,
            "thread {t}: tasks {own} s + noise {noise} s in {span} s"
        );
    }
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
}
