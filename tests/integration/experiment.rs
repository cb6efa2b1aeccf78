//! `braid experiment` and `braid plot` through the command line: records,
//! resuming (after kill -9 too), refusal to mix suites, failures recorded,
//! bad input, and every figure drawn. Sim suites keep these fast and exact.

use crate::common;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{braid, scratch};
use serde_json::Value;

/// A small sim suite: 2 variants x quiet/noisy x `reps`.
fn suite(figure: &str, reps: u32, extra: &str) -> String {
    format!(
        r#"
name = "t-{figure}"
figure = "{figure}"
engine = "sim"
variants = ["async(4)", "async(4)+joint(0.001)"]
noise = [false, true]
repetitions = {reps}
[set]
sim_topology = "pack:2 core:3"
{extra}
[noise_set]
noise = "thread"
noise_cores = "auto:0.19"
"#
    )
}

fn write_suite(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("suite.toml");
    std::fs::write(&p, text).unwrap();
    p
}

fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn keys(recs: &[Value]) -> Vec<String> {
    recs.iter()
        .map(|r| r["key"].as_str().unwrap().to_string())
        .collect()
}

fn experiment(dir: &Path, args: &[&str]) -> common::Run {
    let mut all = vec!["experiment"];
    all.extend_from_slice(args);
    braid(dir, &all)
}

#[test]
fn a_suite_writes_one_record_per_sample_with_provenance_and_resumes_without_duplicates() {
    let dir = scratch("exp_resume");
    write_suite(&dir, &suite("landscape", 2, "max_iterations = 200"));
    let out = dir.join("r.jsonl");
    let out_s = out.to_str().unwrap();
    let r = experiment(&dir, &["suite.toml", "--out", out_s]);
    assert_eq!(r.status, Some(0), "{}", r.stderr);
    // Not a terminal: a line per sample, as a batch job's log wants, the
    // later ones with an ETA from the cost so far.
    for k in 1..=8 {
        assert!(
            r.stderr.contains(&format!("braid: [{k}/8] ")),
            "{k}: {}",
            r.stderr
        );
    }
    assert!(
        r.stderr
            .lines()
            .any(|l| l.starts_with("braid: [7/8]") && l.contains("ETA")),
        "{}",
        r.stderr
    );
    let recs = records(&out);
    assert_eq!(recs.len(), 8);
    assert_eq!(keys(&recs).iter().collect::<HashSet<_>>().len(), 8);
    let first = &recs[0];
    assert_eq!(first["status"], "ok");
    assert_eq!(first["engine"], "sim");
    assert_eq!(first["report"]["clock"], "virtual");
    let p = &first["provenance"];
    for k in ["date", "cpu_model", "hostname"] {
        assert!(!p[k].as_str().unwrap().is_empty(), "{k}");
    }
    // The build that ran it, in the record and in its report alike.
    assert_eq!(p["build"]["version"], env!("CARGO_PKG_VERSION"));
    assert!(p["build"]["commit"].as_str().is_some_and(|c| !c.is_empty()));
    assert!(p["build"]["clean"].is_boolean());
    assert_eq!(p["build"], first["report"]["build"]);
    // The configuration and machine are stored once, in the report.
    assert!(
        p.get("config").is_none() && p.get("topology").is_none(),
        "{p}"
    );
    assert_eq!(first["report"]["config"]["max_iterations"], 200);
    assert_eq!(first["report"]["topology"]["source"], "synthetic");

    // Again: nothing to do, the file is unchanged.
    let before = std::fs::read(&out).unwrap();
    let r = experiment(&dir, &["suite.toml", "--out", out_s]);
    assert_eq!(r.status, Some(0), "{}", r.stderr);
    assert!(r.stderr.contains("8 done before, 0 ok now"), "{}", r.stderr);
    assert_eq!(std::fs::read(&out).unwrap(), before);

    // --repeat extends the same file with the new repetitions only.
    let r = experiment(&dir, &["suite.toml", "--out", out_s, "--repeat", "3"]);
    assert_eq!(r.status, Some(0), "{}", r.stderr);
    let recs = records(&out);
    assert_eq!(recs.len(), 12);
    assert_eq!(keys(&recs).iter().collect::<HashSet<_>>().len(), 12);
}

#[test]
fn an_experiment_killed_with_sigkill_resumes_with_no_lost_or_duplicate_sample() {
    let dir = scratch("exp_kill");
    // Numerics make each sample take a while, so the kill lands mid-suite.
    write_suite(
        &dir,
        &suite(
            "tts",
            3,
            "numerics = true\ntolerance = 1e-4\ndomain_size = 24\nmax_iterations = 1000000",
        ),
    );
    let out = dir.join("r.jsonl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_braid"))
        .args(["experiment", "suite.toml", "--out", "r.jsonl"])
        .current_dir(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while records_if_any(&out) < 2 && start.elapsed() < common::HANG {
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let at_kill = records_if_any(&out);
    assert!((2..12).contains(&at_kill), "{at_kill} records at the kill");
    // And a write torn in the middle, as if the kill had landed there.
    let mut text = std::fs::read_to_string(&out).unwrap();
    let torn = text.lines().last().unwrap()[..40].to_string();
    text.push_str(&torn);
    std::fs::write(&out, text).unwrap();

    let r = experiment(&dir, &["suite.toml", "--out", "r.jsonl"]);
    assert_eq!(r.status, Some(0), "{}", r.stderr);
    let recs = records(&out);
    assert_eq!(recs.len(), 12);
    assert_eq!(keys(&recs).iter().collect::<HashSet<_>>().len(), 12);
    assert!(recs.iter().all(|r| r["status"] == "ok"));
}

fn records_if_any(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .map(|t| t.matches('\n').count())
        .unwrap_or(0)
}

#[test]
fn a_results_file_of_another_suite_definition_is_refused() {
    let dir = scratch("exp_other");
    write_suite(&dir, &suite("landscape", 1, "max_iterations = 100"));
    assert_eq!(
        experiment(&dir, &["suite.toml", "--out", "r.jsonl"]).status,
        Some(0)
    );
    let before = std::fs::read(dir.join("r.jsonl")).unwrap();
    write_suite(&dir, &suite("landscape", 1, "max_iterations = 101"));
    let r = experiment(&dir, &["suite.toml", "--out", "r.jsonl"]);
    assert_eq!(r.status, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("refusing"), "{}", r.stderr);
    assert_eq!(std::fs::read(dir.join("r.jsonl")).unwrap(), before);
}

#[test]
fn a_sample_that_hangs_is_killed_recorded_as_failed_and_the_suite_goes_on() {
    let dir = scratch("exp_fail");
    // Real engine, thread 0 stalls an hour in its 2nd update, no time
    // limit: sync waits at its barrier, so only the suite's timeout ends it;
    // async(4)'s other thread reaches the budget, which ends the stall.
    let text = r#"
name = "t-fail"
figure = "landscape"
engine = "run"
variants = ["sync", "async(4)"]
repetitions = 1
timeout_s = 3
[set]
threads = 2
oversubscribe = true
max_iterations = 50
stall = "0@2:3600"
"#;
    write_suite(&dir, text);
    let r = experiment(&dir, &["suite.toml", "--out", "r.jsonl"]);
    assert_eq!(r.status, Some(1), "{}", r.stderr);
    let recs = records(&dir.join("r.jsonl"));
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[0]["status"], "failed");
    assert!(
        recs[0]["error"].as_str().unwrap().contains("timed out"),
        "{}",
        recs[0]
    );
    assert_eq!(recs[0]["report"], Value::Null);
    assert_eq!(recs[0]["provenance"]["config"]["mode"], "sync");
    assert_eq!(recs[1]["status"], "ok", "{}", recs[1]);
    assert!(r.stderr.contains("1 failed"), "{}", r.stderr);

    // A rerun runs the failed sample again (and only it), says so, and
    // still exits 1 when it fails again.
    let r = experiment(&dir, &["suite.toml", "--out", "r.jsonl"]);
    assert_eq!(r.status, Some(1), "{}", r.stderr);
    assert!(
        r.stderr.contains("1 sample(s) failed before"),
        "{}",
        r.stderr
    );
    let recs = records(&dir.join("r.jsonl"));
    assert_eq!(recs.len(), 3);
    assert_eq!(recs[2]["key"], recs[0]["key"]);
    assert_eq!(recs[2]["status"], "failed");
}

#[test]
fn bad_suites_and_arguments_exit_2_naming_the_problem() {
    let dir = scratch("exp_bad");
    let cases: [(&str, &str); 5] = [
        (&suite("landscape", 1, "bogus_key = 1"), "bogus_key"),
        // A launcher that is not there: named, before anything is written.
        (
            &suite("landscape", 1, "").replace(
                "engine = \"sim\"",
                "engine = \"run\"\nlauncher = \"no-such-launcher-x -n 2\"",
            ),
            "`no-such-launcher-x` is not a command",
        ),
        (
            &suite("landscape", 1, "").replace("\"async(4)\",", "\"async(x)\","),
            "async(x)",
        ),
        (&suite("graph", 1, ""), "figure"),
        (&suite("landscape", 1, "threads = 99"), "threads"),
    ];
    for (text, needle) in cases {
        write_suite(&dir, text);
        let r = experiment(&dir, &["suite.toml", "--out", "r.jsonl"]);
        assert_eq!(r.status, Some(2), "{needle}: {}", r.stderr);
        assert!(r.stderr.contains(needle), "{needle}: {}", r.stderr);
        assert!(
            !dir.join("r.jsonl").exists(),
            "{needle}: nothing may be written"
        );
    }
    let r = experiment(&dir, &["missing.toml"]);
    assert_eq!(r.status, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("missing.toml"), "{}", r.stderr);
    let r = braid(&dir, &["plot", "missing.jsonl", "--out", "p"]);
    assert_eq!(r.status, Some(2), "{}", r.stderr);
    // Results files that cannot be opened are bad input, as for `run`.
    write_suite(&dir, &suite("landscape", 1, ""));
    for out in ["/proc/braid/r.jsonl", "/dev/full", "a/b/c/r.jsonl"] {
        let r = experiment(&dir, &["suite.toml", "--out", out]);
        assert_eq!(r.status, Some(2), "{out}: {}", r.stderr);
        assert!(
            r.stderr.contains(out.split('/').next_back().unwrap()),
            "{out}: {}",
            r.stderr
        );
    }
    assert!(!dir.join("a").exists(), "no directories made from the root");
    let r = experiment(&dir, &["suite.toml", "--repeat", "100000000"]);
    assert_eq!(r.status, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("samples"), "{}", r.stderr);
}

#[test]
fn plot_draws_every_figure_and_table_2_from_results() {
    let dir = scratch("exp_plot");
    let runs = [
        ("landscape", suite("landscape", 1, "max_iterations = 300")),
        (
            "tts",
            suite(
                "tts",
                1,
                "numerics = true\ntolerance = 1e-3\ndomain_size = 16\nmax_iterations = 1000000",
            ),
        ),
        (
            "braid",
            suite("braid", 1, "max_iterations = 2000\ntrace_interval = 0.001"),
        ),
    ];
    let mut files = Vec::new();
    for (name, text) in runs {
        write_suite(&dir, &text);
        let out = format!("{name}.jsonl");
        let r = experiment(&dir, &["suite.toml", "--out", &out]);
        assert_eq!(r.status, Some(0), "{name}: {}", r.stderr);
        files.push(out);
    }
    let mut args = vec!["plot"];
    args.extend(files.iter().map(String::as_str));
    args.extend(["--out", "plots"]);
    let r = braid(&dir, &args);
    assert_eq!(r.status, Some(0), "{}", r.stderr);
    let plots = dir.join("plots");
    for stem in ["landscape", "time-to-solution", "braid-sim"] {
        let png = std::fs::read(plots.join(format!("{stem}.png"))).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{stem}");
        let svg = std::fs::read_to_string(plots.join(format!("{stem}.svg"))).unwrap();
        assert!(
            svg.contains("simulator: 2 sockets, 6 threads"),
            "{stem}: the title names the engine and the node"
        );
        let label = if stem == "braid-sim" {
            "subdomain 0"
        } else {
            "async(4)+joint(0.001)"
        };
        assert!(svg.contains(label), "{stem}: labels are there");
    }
    let md = std::fs::read_to_string(plots.join("table2.md")).unwrap();
    let row = md
        .lines()
        .find(|l| l.starts_with("| sim | async(4) |"))
        .unwrap_or_else(|| panic!("{md}"));
    assert!(row.contains('%'), "{row}");
    let csv = std::fs::read_to_string(plots.join("table2.csv")).unwrap();
    assert_eq!(csv.lines().count(), 3, "{csv}");
}

#[test]
fn plot_names_the_file_line_and_field_of_a_bad_record_and_never_loops() {
    let dir = scratch("exp_plot_bad");
    write_suite(&dir, &suite("landscape", 1, "max_iterations = 200"));
    let r = experiment(&dir, &["suite.toml", "--out", "r.jsonl"]);
    assert_eq!(r.status, Some(0), "{}", r.stderr);
    let good = std::fs::read_to_string(dir.join("r.jsonl")).unwrap();
    // Plots a copy of the results with line 2's report changed by `change`:
    // refused with exit 2, naming the line and `field`, drawing nothing.
    let refused = |field: &str, change: &dyn Fn(&mut Value)| {
        let mut lines: Vec<Value> = good
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        change(&mut lines[1]["report"]);
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(dir.join("bad.jsonl"), text).unwrap();
        let r = braid(&dir, &["plot", "bad.jsonl", "--out", "p"]);
        assert_eq!(r.status, Some(2), "{field}: {}", r.stderr);
        for needle in ["bad.jsonl: line 2", field] {
            assert!(r.stderr.contains(needle), "{needle}: {}", r.stderr);
        }
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
        assert!(!dir.join("p").exists(), "nothing is drawn from bad records");
    };
    for (field, value) in [
        ("iteration_rate", Value::Null),
        ("spread", Value::from("many")),
        ("iteration_rate", Value::from(-1.0)),
        ("threads", Value::from(0)),
    ] {
        refused(field, &|report| report[field] = value.clone());
    }
    // A report without a field a figure reads, as an older or renamed
    // report would be: named, never drawn as a zero.
    for field in ["spread", "iteration_rate", "threads"] {
        refused(field, &|report| {
            report.as_object_mut().unwrap().remove(field);
        });
    }
    // An output directory that cannot be made is bad input, as for `run`.
    let r = braid(&dir, &["plot", "r.jsonl", "--out", "/proc/braid-plots"]);
    assert_eq!(r.status, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("/proc/braid-plots"), "{}", r.stderr);
}

#[test]
fn plot_of_braid_records_without_a_trace_says_so() {
    let dir = scratch("exp_plot_notrace");
    write_suite(&dir, &suite("braid", 1, "max_iterations = 200"));
    let r = experiment(&dir, &["suite.toml", "--out", "r.jsonl"]);
    assert_eq!(r.status, Some(0), "{}", r.stderr);
    let r = braid(&dir, &["plot", "r.jsonl", "--out", "p"]);
    assert_eq!(r.status, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("trace_interval"), "{}", r.stderr);
}

/// A figure that does not tell swept settings apart draws them together,
/// and `braid plot` says so; without a sweep it says nothing. The swept
/// records also read back whatever the swept key's JSON form (`sim_jitter`
/// is an object in a report; such records once failed to read).
#[test]
fn plot_says_when_a_figure_draws_swept_settings_together() {
    let dir = scratch("exp_swept");
    let sweep = "numerics = false\nmax_iterations = 200\n[sweep]\nsim_jitter = [\"none\", \"0.05:0.001\"]\n";
    write_suite(&dir, &suite("tts", 1, sweep));
    let r = experiment(&dir, &["suite.toml", "--out", "swept.jsonl"]);
    assert_eq!(r.status, Some(0), "{}", r.stderr);
    let r = braid(&dir, &["plot", "swept.jsonl", "--out", "p"]);
    assert_eq!(r.status, Some(0), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("the tts records hold 2 swept settings of sim_jitter"),
        "{}",
        r.stderr
    );
    write_suite(
        &dir,
        &suite("tts", 1, "numerics = false\nmax_iterations = 200\n"),
    );
    let r = experiment(&dir, &["suite.toml", "--out", "plain.jsonl"]);
    assert_eq!(r.status, Some(0), "{}", r.stderr);
    let r = braid(&dir, &["plot", "plain.jsonl", "--out", "q"]);
    assert_eq!(r.status, Some(0), "{}", r.stderr);
    assert!(!r.stderr.contains("swept"), "{}", r.stderr);
}

#[test]
fn plot_draws_the_payoff_map_with_the_models_forecast() {
    let dir = scratch("exp_payoff");
    let text = r#"
name = "t-payoff"
figure = "payoff"
engine = "sim"
variants = ["async(4)", "async(4)+split(0.001)"]
[set]
sim_topology = "pack:2 core:3"
numerics = true
tolerance = 1e-3
domain_size = 12
max_iterations = 1000000
[noise_set]
noise = "thread"
[payoff]
duties = [0.2, 0.5]
placements = [{ name = "centre", cores = "1" }, { name = "edge", cores = "auto" }]
"#;
    write_suite(&dir, text);
    let r = experiment(&dir, &["suite.toml", "--out", "r.jsonl"]);
    assert_eq!(r.status, Some(0), "{}", r.stderr);
    let recs = records(&dir.join("r.jsonl"));
    assert_eq!(recs.len(), 2 * 5);
    let noisy = recs.iter().find(|r| r["sample"]["duty"] == 0.5).unwrap();
    let model = &noisy["report"]["model"][0];
    assert!(model["plain_async_loss"].as_f64().unwrap() > 0.0, "{noisy}");
    let r = braid(&dir, &["plot", "r.jsonl", "--out", "p"]);
    assert_eq!(r.status, Some(0), "{}", r.stderr);
    let svg = std::fs::read_to_string(dir.join("p/payoff.svg")).unwrap();
    for needle in [
        "noise on: centre",
        "noise on: edge",
        "model: plain async",
        "async(4)+split(0.001)",
    ] {
        assert!(svg.contains(needle), "{needle}");
    }
}

#[test]
fn a_record_keeps_its_effort_series_coarsened_with_its_totals() {
    let dir = scratch("exp_effort");
    let args = [
        "--variant",
        "async(4)+split(0.0001)",
        "sim_topology=pack:1 core:4",
        "domain_size=32",
        "max_iterations=40000",
    ];
    let mut run = vec!["sim", "--json", "-"];
    run.extend_from_slice(&args);
    let direct = braid(&dir, &run);
    assert_eq!(direct.status, Some(0), "{}", direct.stderr);
    let direct: Value = serde_json::from_str(&direct.stdout).unwrap();
    write_suite(
        &dir,
        r#"
name = "effort"
figure = "effort"
engine = "sim"
variants = ["async(4)+split(0.0001)"]
[set]
sim_topology = "pack:1 core:4"
domain_size = 32
max_iterations = 40000
"#,
    );
    let r = experiment(&dir, &["suite.toml", "--out", "r.jsonl"]);
    assert_eq!(r.status, Some(0), "{}", r.stderr);
    let recorded = &records(&dir.join("r.jsonl"))[0]["report"];
    let series = |r: &Value| r["lb"]["effort"].as_array().unwrap().clone();
    let total = |r: &Value, k: &str| {
        series(r)
            .iter()
            .map(|e| e[k].as_f64().unwrap())
            .sum::<f64>()
    };
    assert!(series(&direct).len() > 120, "{}", series(&direct).len());
    assert!(series(recorded).len() <= 120, "{}", series(recorded).len());
    for k in ["interval_s", "lost_s", "cost_s"] {
        let (a, b) = (total(&direct, k), total(recorded, k));
        assert!(
            (a - b).abs() <= 1e-9 * a.abs().max(1e-12),
            "{k}: {a} then {b}"
        );
    }
}

#[test]
fn a_suite_with_lb_data_writes_each_samples_files_into_a_folder_of_its_own() {
    let dir = scratch("exp_lbdata");
    let text = suite("landscape", 1, "max_iterations = 200\nthreads = 2").replacen(
        "repetitions = 1",
        "repetitions = 1\nlb_data = \"lb\"",
        1,
    );
    write_suite(&dir, &text);
    let r = experiment(&dir, &["suite.toml", "--out", "r.jsonl"]);
    assert_eq!(r.status, Some(0), "{}", r.stderr);
    let folders: Vec<_> = std::fs::read_dir(dir.join("lb"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    // 2 variants x quiet and noisy: 4 samples, 4 folders of 2 files.
    assert_eq!(folders.len(), 4, "{folders:?}");
    for f in &folders {
        for t in 0..2 {
            let file = f.join(format!("data.{t}.json"));
            let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
            assert_eq!(braid::check_lb_data(&v), Ok(()), "{}", file.display());
        }
    }
    // Compressed, as vt writes them: read back whole.
    let text = text.replacen(
        "lb_data = \"lb\"",
        "lb_data = \"lbz\"\nlb_data_compress = true",
        1,
    );
    write_suite(&dir, &text);
    let r = experiment(&dir, &["suite.toml", "--out", "z.jsonl"]);
    assert_eq!(r.status, Some(0), "{}", r.stderr);
    for f in std::fs::read_dir(dir.join("lbz")).unwrap() {
        let f = f.unwrap().path();
        let first = std::fs::read(f.join("data.0.json")).unwrap()[0];
        assert_ne!(first, b'{', "{} is not compressed", f.display());
        assert_eq!(braid::read_lb_data(&f).unwrap().pes, 2);
    }
}

/// An effort suite of plain async only: its records are fine, but no
/// figure has a series to draw; `braid plot` says so with exit 2 rather
/// than writing nothing with exit 0.
#[test]
fn a_plot_with_nothing_to_draw_says_so_with_exit_2() {
    let dir = scratch("exp_nothing_drawn");
    let text = suite("effort", 1, "max_iterations = 200").replace(
        "[\"async(4)\", \"async(4)+joint(0.001)\"]",
        "[\"async(4)\"]",
    );
    let s = write_suite(&dir, &text);
    let out = dir.join("r.jsonl");
    let run = experiment(&dir, &[s.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    let plot = braid(
        &dir,
        &[
            "plot",
            out.to_str().unwrap(),
            "--out",
            dir.join("p").to_str().unwrap(),
        ],
    );
    assert_eq!(plot.status, Some(2), "{}", plot.stderr);
    assert!(
        plot.stderr.contains("nothing to draw") && plot.stderr.contains("\"effort\""),
        "{}",
        plot.stderr
    );
}

/// A simulated suite run two samples at a time: the first sample takes
/// far longer than the second (so the second finishes first), yet the
/// results file holds the records in the suite's order, the same file a
/// run one at a time writes, apart from wall times.
#[test]
fn samples_run_two_at_a_time_are_recorded_in_the_suites_order() {
    let dir = scratch("exp_jobs");
    write_suite(
        &dir,
        r#"
name = "t-jobs"
figure = "landscape"
engine = "sim"
variants = ["async(4)", "sync"]
noise = [false]
repetitions = 1
[set]
sim_topology = "pack:2 core:3"
numerics = true
domain_size = 32
[sweep]
max_iterations = [200000, 50, 60, 70]
"#,
    );
    let r = experiment(&dir, &["suite.toml", "--out", "two.jsonl", "--jobs", "2"]);
    assert_eq!(r.status, Some(0), "{}", r.stderr);
    // The log says when each finished: the long first sample last of its pair.
    let finished: Vec<&str> = r.stderr.lines().filter(|l| l.contains(": ok in")).collect();
    assert!(
        !finished[0].contains("max_iterations=200000"),
        "the long sample finished first: {finished:?}"
    );
    let r = experiment(&dir, &["suite.toml", "--out", "one.jsonl"]);
    assert_eq!(r.status, Some(0), "{}", r.stderr);
    let (two, one) = (
        records(&dir.join("two.jsonl")),
        records(&dir.join("one.jsonl")),
    );
    assert_eq!(keys(&two), keys(&one));
    assert_eq!(keys(&two).len(), 8);
    for (a, b) in two.iter().zip(&one) {
        assert_eq!(a["report"]["spread"], b["report"]["spread"]);
        assert_eq!(a["report"]["elapsed_s"], b["report"]["elapsed_s"]);
    }
}
