//! `braid learn` and `balancer = learned:MODEL.json`: a chooser trained on
//! a suite's simulated samples names, on the training instances, the
//! strategy that was best there; the model file is small and readable; a
//! learned simulation is deterministic; bad models and results are
//! refused.

use crate::common;

use common::{braid, scratch};
use serde_json::Value;
use std::path::Path;

use common::json;

/// Six imbalanced instances on a small simulated machine, each run with
/// three fixed strategies.
const SUITE: &str = r#"
name = "learn-tiny"
figure = "workloads"
engine = "sim"
variants = ["async(4)+split(0.0002)", "async(4)+steal(0.0002)", "async(4)+greedy(0.0002)"]
workloads = [
    "hotspot(4, 0.2, 0.2, 0.15)", "hotspot(3, 0.8, 0.6, 0.3)", "random(1, 4)",
    "random(1.5, 2)", "moving(5, 0.3, 0.5, 0.2, 0.001, 0)", "growing(4, 0.5, 0.5, 0.05, 0.0005)",
]
repetitions = 1
timeout_s = 120

[set]
numerics = true
tolerance = 1e-3
threads = 8
sim_topology = "pack:2 core:4"
domain_size = 24
max_iterations = 1000000
"#;

/// The suite run, a model trained on it, and the instances' labels (the
/// strategy with the least time to solution per workload; of equal times,
/// the first name in order).
fn trained(dir: &Path) -> Vec<(String, String)> {
    std::fs::write(dir.join("tiny.toml"), SUITE).unwrap();
    let r = braid(dir, &["experiment", "tiny.toml", "--out", "tiny.jsonl"]);
    assert_eq!(r.status, Some(0), "{}", r.stderr);
    let r = braid(dir, &["learn", "tiny.jsonl", "--out", "model.json"]);
    assert_eq!(r.status, Some(0), "{}", r.stderr);
    assert!(
        r.stdout.contains("trained on 6 instance(s)"),
        "{}",
        r.stdout
    );
    let mut best: Vec<(String, String, f64)> = Vec::new();
    for line in std::fs::read_to_string(dir.join("tiny.jsonl"))
        .unwrap()
        .lines()
    {
        let rec: Value = serde_json::from_str(line).unwrap();
        let report = &rec["report"];
        let workload = report["config"]["workload"].as_str().unwrap().to_string();
        let tts = report["time_to_solution_s"].as_f64().expect("converged");
        let name = report["lb"]["ran"][0]["balancer"]
            .as_str()
            .unwrap()
            .to_string();
        match best.iter_mut().find(|b| b.0 == workload) {
            // Equal times go to the first label in order, as braid learn
            // breaks them (the instance's label is then well defined).
            Some(b) if tts < b.2 || (tts == b.2 && name < b.1) => *b = (workload, name, tts),
            Some(_) => {}
            None => best.push((workload, name, tts)),
        }
    }
    // Beside every accuracy, the baseline: always naming the commonest
    // best strategy, right on its share of the instances.
    let most = best
        .iter()
        .map(|b| best.iter().filter(|c| c.1 == b.1).count())
        .max()
        .unwrap();
    let baseline = format!(": {:.1}%;", 100.0 * most as f64 / best.len() as f64);
    let said = r.stdout.split("always naming the commonest, ").nth(1);
    assert!(
        said.is_some_and(|t| t.contains(&baseline)),
        "{baseline} in {}",
        r.stdout
    );
    best.into_iter().map(|(w, n, _)| (w, n)).collect()
}

#[test]
fn a_chooser_trained_on_a_suite_names_the_best_strategy_on_its_training_instances() {
    let dir = scratch("learned_train");
    let labels = trained(&dir);
    assert_eq!(labels.len(), 6);
    // The model: small, readable, braid's seven features.
    let model = json(&dir.join("model.json"));
    assert_eq!(model["kind"], "braid-knn");
    assert_eq!(model["features"].as_array().unwrap().len(), 7);
    // Up to 8 states per instance, along its best strategy's run.
    let points = model["points"].as_array().unwrap().len();
    assert!((6..=6 * 8).contains(&points), "{points} points");
    assert!(std::fs::metadata(dir.join("model.json")).unwrap().len() < 16 << 10);
    // Run learned on each training instance: the strategy it runs from its
    // first call is the instance's label.
    let mut right = 0;
    for (workload, label) in &labels {
        let mut args: Vec<String> = [
            "sim",
            "--json",
            "r.json",
            "--variant",
            "async(4)+learned(0.0002)",
            "lb_model=model.json",
            "numerics=true",
            "tolerance=1e-3",
            "threads=8",
            "sim_topology=pack:2 core:4",
            "domain_size=24",
            "max_iterations=1000000",
        ]
        .map(String::from)
        .into();
        args.push(format!("workload={workload}"));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = braid(&dir, &args);
        assert_eq!(r.status, Some(0), "{}", r.stderr);
        let report = json(&dir.join("r.json"));
        let first = report["lb"]["ran"][0]["balancer"].as_str().unwrap();
        right += usize::from(first == label);
    }
    assert!(
        right * 10 >= labels.len() * 9,
        "{right} of {} right",
        labels.len()
    );
    // Evaluated on the same instances, the regrets drawn: a row per
    // balancer, named; a directory that is not there is refused before any
    // probe runs.
    std::fs::create_dir_all(dir.join("figs")).unwrap();
    let evaluate = |plot: &str| {
        let args = [
            "learn",
            "--evaluate",
            "model.json",
            "tiny.jsonl",
            "--plot",
            plot,
        ];
        braid(&dir, &args)
    };
    let r = evaluate("figs");
    assert_eq!(r.status, Some(0), "{}", r.stderr);
    let svg = std::fs::read_to_string(dir.join("figs/regret-tiny.svg")).unwrap();
    for name in ["split", "steal", "greedy"] {
        assert!(
            svg.contains(&format!(">\n{name}\n<")) || svg.contains(&format!(">\n{name} (")),
            "{name}"
        );
    }
    assert!(dir.join("figs/regret-tiny.png").is_file());
    let r = evaluate("nowhere");
    assert_eq!(r.status, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains("--plot nowhere: no such directory"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("probed"), "{}", r.stderr);
}

#[test]
fn a_learned_simulation_is_deterministic_and_bad_models_are_refused() {
    let dir = scratch("learned_determinism");
    let labels = trained(&dir);
    let run = |out: &str| {
        let workload = format!("workload={}", labels[0].0);
        let r = braid(
            &dir,
            &[
                "sim",
                "--json",
                out,
                "balancer=learned:model.json",
                "numerics=true",
                "tolerance=1e-3",
                "threads=8",
                "sim_topology=pack:2 core:4",
                "domain_size=24",
                &workload,
            ],
        );
        assert_eq!(r.status, Some(0), "{}", r.stderr);
        let mut v = json(&dir.join(out));
        v["config"]["balancer"] = Value::Null;
        v
    };
    assert_eq!(run("a.json"), run("b.json"));
    // A model that is not one, a missing one, and one named twice.
    std::fs::write(dir.join("bad.json"), r#"{"kind": "braid-knn"}"#).unwrap();
    for (args, part) in [
        (vec!["sim", "balancer=learned:bad.json"], "bad.json"),
        (vec!["sim", "balancer=learned:nowhere.json"], "nowhere.json"),
        (
            vec!["sim", "--variant", "async(4)+learned(0.001)"],
            "learned:MODEL.json",
        ),
        (
            vec!["sim", "balancer=learned:model.json", "lb_model=bad.json"],
            "two models",
        ),
        (
            vec!["learn", "nowhere.jsonl", "--out", "m.json"],
            "nowhere.jsonl",
        ),
        // A folder that takes no files (even as root) is found before the
        // probes, not after them.
        (
            vec![
                "learn",
                "tiny.jsonl",
                "--evaluate",
                "model.json",
                "--plot",
                "/proc/self",
            ],
            "--plot /proc/self: cannot write into it",
        ),
        (
            vec!["learn", "tiny.jsonl", "--out", "/proc/self/m.json"],
            "cannot write beside it",
        ),
    ] {
        let r = braid(&dir, &args);
        assert_eq!(r.status, Some(2), "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(part), "{args:?}: {}", r.stderr);
    }
}
