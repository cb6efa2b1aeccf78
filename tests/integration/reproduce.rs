//! `braid reproduce` through the CLI, on a published set of its own: a
//! scratch folder holding a manifest, a small simulated suite and its
//! committed records, as the repository holds `plots/published.toml`.

use crate::common;

use std::io::Write as _;
use std::path::Path;

use common::{braid, record_lines, scratch};
use serde_json::Value;

const SUITE: &str = r#"name = "tiny-sim"
figure = "tts"
engine = "sim"
variants = ["async(4)", "async(4)+joint(0.001)"]
noise = [false, true]
repetitions = 1
timeout_s = 120

[set]
threads = 4
numerics = true
domain_size = 16
tolerance = 1e-4
max_iterations = 1000000

[noise_set]
noise = "thread"
noise_cores = "1:0.5"
"#;

const MANIFEST: &str = r#"[[set]]
name = "tiny"
about = "a test's own"
suites = ["tiny-sim"]
records = "plots/data"
figures = "plots"
quick = true
"#;

/// `records` as a committed records file: one JSON line each, brotli.
fn commit_records(dir: &Path, records: &[Value]) {
    let file = std::fs::File::create(dir.join("plots/data/tiny-sim.jsonl.br")).unwrap();
    let mut w = brotli::CompressorWriter::new(file, 4096, 9, 22);
    for r in records {
        writeln!(w, "{r}").unwrap();
    }
}

/// A scratch repository whose one published set's records were just
/// written by this build, and whether this build is of a clean commit.
fn published_set(name: &str) -> (std::path::PathBuf, Vec<Value>, bool) {
    let dir = scratch(name);
    std::fs::create_dir_all(dir.join("experiments")).unwrap();
    std::fs::create_dir_all(dir.join("plots/data")).unwrap();
    std::fs::write(dir.join("experiments/tiny-sim.toml"), SUITE).unwrap();
    std::fs::write(dir.join("plots/published.toml"), MANIFEST).unwrap();
    let args = [
        "experiment",
        "experiments/tiny-sim.toml",
        "--out",
        "r.jsonl",
    ];
    let out = braid(&dir, &args);
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    let records = record_lines(&dir.join("r.jsonl"));
    assert_eq!(records.len(), 4);
    let clean = records[0]["report"]["build"]["clean"] == Value::Bool(true);
    commit_records(&dir, &records);
    (dir, records, clean)
}

#[test]
fn records_this_build_wrote_reproduce_value_for_value() {
    let (dir, _, clean) = published_set("reproduce-same");
    let out = braid(&dir, &["reproduce", "--quick"]);
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(all.contains("reproduced: 4 of 4 value for value"), "{all}");
    // Records of an uncommitted tree cannot stand, however well they agree.
    match clean {
        true => assert_eq!(out.status, Some(0), "{all}"),
        false => {
            assert_eq!(out.status, Some(1), "{all}");
            assert!(all.contains("uncommitted changes"), "{all}");
        }
    }
}

#[test]
fn a_committed_value_braid_no_longer_computes_fails_naming_its_sample() {
    let (dir, mut records, _) = published_set("reproduce-moved");
    let last = &mut records[3];
    let t = last["report"]["time_to_solution_s"].as_f64().unwrap();
    last["report"]["time_to_solution_s"] = (t * 1.5).into();
    commit_records(&dir, &records);
    let out = braid(&dir, &["reproduce", "--quick"]);
    let all = format!("{}{}", out.stdout, out.stderr);
    assert_eq!(out.status, Some(1), "{all}");
    assert!(all.contains("MOVED: 1 of 4 samples moved"), "{all}");
    assert!(
        all.contains("time_to_solution_s by up to -33.33% (async(4)+joint(0.001) | noise | 0)"),
        "{all}"
    );
}

#[test]
fn records_of_a_suite_changed_since_cannot_stand() {
    let (dir, _, _) = published_set("reproduce-changed");
    let changed = SUITE.replace("domain_size = 16", "domain_size = 17");
    std::fs::write(dir.join("experiments/tiny-sim.toml"), changed).unwrap();
    let out = braid(&dir, &["reproduce", "--quick"]);
    let all = format!("{}{}", out.stdout, out.stderr);
    assert_eq!(out.status, Some(1), "{all}");
    assert!(
        all.contains("the suite's file was changed since its records were written"),
        "{all}"
    );
}

#[test]
fn update_writes_records_only_from_a_clean_commit() {
    let (dir, _, clean) = published_set("reproduce-update");
    std::fs::remove_file(dir.join("plots/data/tiny-sim.jsonl.br")).unwrap();
    let out = braid(&dir, &["reproduce", "--quick", "--update"]);
    let all = format!("{}{}", out.stdout, out.stderr);
    let written = dir.join("plots/data/tiny-sim.jsonl.br");
    match clean {
        true => {
            assert_eq!(out.status, Some(0), "{all}");
            assert!(all.contains("## tiny (updated)"), "{all}");
            assert_eq!(record_lines(&written).len(), 4);
            assert!(dir.join("plots/time-to-solution.png").is_file());
        }
        false => {
            assert_eq!(out.status, Some(2), "{all}");
            assert!(all.contains("clean commit"), "{all}");
            assert!(!written.exists());
        }
    }
}
