//! Inputs inside the bounds give right answers, and files from elsewhere
//! are distrusted: each case asserts the exit status, that the message
//! names what is at fault, that nothing panics, and that the run ends in
//! seconds within a memory cap.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{Run, braid_within, scratch};
use serde_json::Value;

/// Every case ends within this, or the test fails (a FIFO, a loop).
const QUICK: Duration = Duration::from_secs(30);
/// Every case runs with its address space capped here: a runaway
/// allocation aborts instead of succeeding on a large machine.
const CAP: u64 = 4 << 30;

fn braid(dir: &Path, args: &[&str]) -> Run {
    braid_within(dir, args, QUICK, Some(CAP))
}

/// Exit 2, a message naming each of `names`, and no panic.
fn refused(out: &Run, names: &[&str]) {
    assert_eq!(out.status, Some(2), "{}", out.stderr);
    for n in names {
        assert!(out.stderr.contains(n), "`{n}` not named in: {}", out.stderr);
    }
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
}

fn json(out: &Run) -> Value {
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stderr))
}

// ----- 1. virtual time ------------------------------------------------------

/// The simulated seconds of 10 sync iterations with `keys` set.
fn sync_elapsed(dir: &Path, keys: &[&str]) -> f64 {
    let mut args = vec![
        "sim",
        "--json",
        "-",
        "--variant",
        "sync",
        "max_iterations=10",
    ];
    args.extend_from_slice(keys);
    let out = braid(dir, &args);
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    json(&out)["elapsed_s"].as_f64().unwrap()
}

#[test]
fn the_slowest_core_the_bounds_allow_gives_the_exact_time() {
    let dir = scratch("clock-exact");
    // One core at the slowest speed (1e-6): 10 sync iterations of 4
    // updates of 150 x 150 cells, each (300 + 22500 x 0.29) ns / 1e-6,
    // and a barrier of 4.5 us each.
    let elapsed = |speed: &str| {
        let speed = format!("sim_speed=0:{speed}");
        sync_elapsed(&dir, &[&speed, "sim_topology=pack:1 core:1"])
    };
    // Ten iterations of the updates' time U / speed and a 4.5 us barrier.
    let barriers = 10.0 * 4500e-9;
    let (fast, slow) = (elapsed("1"), elapsed("1e-6"));
    let want = (fast - barriers) * 1e6 + barriers;
    assert!((slow - want).abs() <= want * 1e-9, "{slow} vs {want}");
    // Below the bound is refused as a value.
    let out = braid(&dir, &["sim", "sim_speed=0:1e-7", "max_iterations=10"]);
    refused(&out, &["sim_speed"]);
}

#[test]
fn a_simulation_past_the_clocks_range_is_refused_and_one_inside_it_is_exact() {
    let dir = scratch("clock-range");
    // The costliest cell the bounds allow: 36 threads, 4 updates of 22500
    // s each per iteration. Ten iterations fit (9e5 s), a thousand do not.
    let elapsed = |cell: &str| sync_elapsed(&dir, &[&format!("sim_cell_ns={cell}")]);
    // 10 iterations x 4 updates x 22500 cells x 9e8 ns more per cell.
    let more = elapsed("1e9") - elapsed("1e8");
    assert!((more - 810_000.0).abs() < 1e-6, "{more}");
    let out = braid(
        &dir,
        &[
            "sim",
            "--json",
            "-",
            "--variant",
            "sync",
            "sim_cell_ns=1e9",
            "max_iterations=1000",
        ],
    );
    refused(&out, &["clock's range"]);
    assert!(
        out.stdout.is_empty(),
        "a report past the range: {}",
        out.stdout
    );
    // The longest time limit stops it exactly where the limit falls.
    let out = braid(
        &dir,
        &[
            "sim",
            "--json",
            "-",
            "--variant",
            "sync",
            "sim_cell_ns=1e9",
            "time_limit=1e6",
            "max_iterations=1000",
        ],
    );
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    let r = json(&out);
    assert_eq!(r["stop_reason"], "time_limit");
    // It stops after the iteration that passes 1e6 s: the 12th of ~90000 s.
    let got = r["elapsed_s"].as_f64().unwrap();
    assert!((got / 1.08e6 - 1.0).abs() < 1e-6, "{got}");
}

#[test]
fn a_core_the_noise_never_frees_is_refused_and_a_nearly_full_one_ends_at_once() {
    let dir = scratch("clock-noise");
    let out = braid(
        &dir,
        &[
            "sim",
            "noise=thread",
            "noise_cores=0",
            "noise_sleep_us=0",
            "max_iterations=10",
        ],
    );
    refused(&out, &["noise_sleep_us"]);
    // 1 us free in every 4000 s: one long update, answered in closed form
    // (a burst at a time would loop for hours).
    let out = braid(
        &dir,
        &[
            "sim",
            "noise=thread",
            "noise_cores=0",
            "noise_sleep_us=1",
            "noise_work_iters=1000000000000",
            "max_iterations=100",
        ],
    );
    assert!(matches!(out.status, Some(0 | 2)), "{}", out.stderr);
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
}

// ----- 2. files -------------------------------------------------------------

fn fifo(dir: &Path) -> Option<PathBuf> {
    let p = dir.join("fifo");
    let made = Command::new("mkfifo").arg(&p).status();
    made.is_ok_and(|s| s.success()).then_some(p)
}

#[test]
fn a_fifo_given_to_any_reader_is_refused_within_seconds() {
    let dir = scratch("fifo-readers");
    let Some(f) = fifo(&dir) else {
        eprintln!("skipped: mkfifo is not available");
        return;
    };
    let f = f.to_str().unwrap();
    let cases: Vec<Vec<String>> = vec![
        vec!["run".into(), "--config".into(), f.into()],
        vec!["experiment".into(), f.into()],
        vec!["sim".into(), "--replay-speeds".into(), f.into()],
        vec!["plot".into(), f.into()],
        vec![
            "sim".into(),
            "noise=trace".into(),
            format!("noise_cores=0:{f}"),
        ],
        vec!["sim".into(), format!("workload=map:{f}")],
    ];
    for case in cases {
        let args: Vec<&str> = case.iter().map(String::as_str).collect();
        let out = braid(&dir, &args);
        refused(&out, &["not a regular file"]);
    }
    // braid-noise's code, as `braid parasite` runs it.
    let out = braid(&dir, &["__parasite", "--replay", f, "--core", "0"]);
    refused(&out, &["not a regular file"]);
}

#[test]
fn braid_noise_records_over_no_device_and_reads_no_endless_file() {
    let dir = scratch("noise-device");
    let dev = dir.join("null-twin");
    let made = Command::new("mknod")
        .arg(&dev)
        .args(["c", "1", "3"])
        .status();
    if made.is_ok_and(|s| s.success()) {
        let out = braid(
            &dir,
            &[
                "__parasite",
                "--record",
                "null-twin",
                "--core",
                "0",
                "--duration",
                "0.05",
            ],
        );
        refused(&out, &["not a regular file"]);
        let kind = std::fs::metadata(&dev).unwrap().file_type();
        assert!(
            std::os::unix::fs::FileTypeExt::is_char_device(&kind),
            "the device was replaced"
        );
    } else {
        eprintln!("skipped the device: mknod is not permitted here");
    }
    let out = braid(
        &dir,
        &["__parasite", "--replay", "/dev/zero", "--core", "0"],
    );
    refused(&out, &["/dev/zero", "not a regular file"]);
}

#[test]
fn a_bad_line_is_quoted_short_however_long_it_is() {
    let dir = scratch("long-line");
    let trace = dir.join("long.trace");
    std::fs::write(&trace, format!("0\t{}\n", "9".repeat(1 << 20))).unwrap();
    let out = braid(&dir, &["sim", "noise=trace", "noise_cores=0:long.trace"]);
    refused(&out, &["long.trace", "line 1", "duration"]);
    assert!(
        out.stderr.len() < 2000,
        "{} bytes of error",
        out.stderr.len()
    );
    std::fs::write(dir.join("c.txt"), format!("{}\n", "x".repeat(1 << 20))).unwrap();
    let out = braid(&dir, &["run", "--config", "c.txt"]);
    refused(&out, &["c.txt:1"]);
    assert!(
        out.stderr.len() < 2000,
        "{} bytes of error",
        out.stderr.len()
    );
}

// ----- 3. reports read back -------------------------------------------------

/// A small traced simulation's report, edited by `edit`, at `dir/r.json`.
fn edited_report(dir: &Path, edit: impl FnOnce(&mut Value)) -> PathBuf {
    let out = braid(
        dir,
        &[
            "sim",
            "--json",
            "-",
            "domain_size=16",
            "max_iterations=200",
            "trace_interval=1e-5",
            "sim_topology=pack:1 core:4",
        ],
    );
    let mut r = json(&out);
    edit(&mut r);
    let path = dir.join("r.json");
    std::fs::write(&path, r.to_string()).unwrap();
    path
}

#[test]
fn a_hand_edited_report_is_checked_like_a_configuration() {
    let dir = scratch("replay-edited");
    edited_report(&dir, |r| r["config"]["time_limit"] = 1e300.into());
    let out = braid(&dir, &["sim", "--replay-speeds", "r.json"]);
    refused(&out, &["r.json", "config.time_limit"]);
    edited_report(&dir, |r| r["config"]["domain_size"] = (1u64 << 40).into());
    let out = braid(&dir, &["sim", "--replay-speeds", "r.json"]);
    refused(&out, &["r.json", "config.domain_size"]);
    edited_report(&dir, |r| r["threads"] = (u64::MAX - 5).into());
    let out = braid(&dir, &["sim", "--replay-speeds", "r.json"]);
    refused(&out, &["r.json", "threads"]);
    // Unedited, it replays.
    edited_report(&dir, |_| {});
    let out = braid(&dir, &["sim", "--replay-speeds", "r.json"]);
    assert_eq!(out.status, Some(0), "{}", out.stderr);
}

// ----- 4. plot --------------------------------------------------------------

/// `braid plot` reads a record at a time and keeps what its figure draws:
/// the 64 records of the committed scale suite with every report's lists
/// filled in (as a run with `report_lists = true` writes them: over 100 MB,
/// up to 262,144 subdomains a record) plot within 192 MB of address
/// space, where holding them whole took 262 MB of memory.
#[test]
fn plot_holds_a_record_at_a_time_not_the_whole_file() {
    let dir = scratch("plot-stream");
    let mut text = String::new();
    for mut r in common::record_lines(&common::repo().join("plots/scale/data/scale-sim.jsonl.br")) {
        let rep = &mut r["report"];
        if let Some(threads) = rep["threads"].as_u64() {
            let per = rep["subdomains"].as_u64().unwrap();
            let threads = threads as usize;
            let subs = threads * per as usize;
            rep["config"]["report_lists"] = true.into();
            rep["owners"] = (0..subs).map(|i| i / per as usize).collect();
            rep["subdomain_updates"] = (0..subs).map(|i| 1_000_000 + i).collect();
            rep["thread_updates"] = (0..threads).map(|t| 4_000_000 + t).collect();
            rep["cores"] = (0..threads).collect();
            rep["thread_sockets"] = (0..threads).map(|t| t / 32).collect();
        }
        text.push_str(&r.to_string());
        text.push('\n');
    }
    assert!(text.len() > 100_000_000, "{} bytes", text.len());
    std::fs::write(dir.join("big.jsonl"), text).unwrap();
    let args = ["plot", "big.jsonl", "--out", "figs"];
    let out = braid_within(&dir, &args, QUICK, Some(192 << 20));
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    assert!(dir.join("figs/scale.png").is_file());
}

/// The committed records of `file` (under plots/), edited, as `dir/in.jsonl`.
fn edited_records(dir: &Path, file: &str, edit: impl Fn(&mut Value)) -> PathBuf {
    let mut out = String::new();
    for mut r in common::record_lines(&common::repo().join(file)) {
        if !r["report"].is_null() {
            edit(&mut r["report"]);
        }
        out.push_str(&r.to_string());
        out.push('\n');
    }
    let path = dir.join("in.jsonl");
    std::fs::write(&path, out).unwrap();
    path
}

#[test]
fn plot_names_a_value_it_cannot_draw_instead_of_looping() {
    let dir = scratch("plot-values");
    type Edit = fn(&mut Value);
    let cases: [(&str, &str, Edit); 4] = [
        ("plots/data/tts-sim.jsonl.br", "time_to_solution_s", |r| {
            if !r["time_to_solution_s"].is_null() {
                r["time_to_solution_s"] = 0.0.into();
            }
        }),
        (
            "plots/data/payoff-sim.jsonl.br",
            "model.plain_async_loss",
            |r| {
                for m in r["model"].as_array_mut().into_iter().flatten() {
                    m["plain_async_loss"] = 1e308.into();
                }
            },
        ),
        (
            "plots/data/payoff-sim.jsonl.br",
            "model.ideal_balanced_loss",
            |r| {
                for m in r["model"].as_array_mut().into_iter().flatten() {
                    m["ideal_balanced_loss"] = (-1e308).into();
                }
            },
        ),
        (
            "plots/strategies/data/strategies-effort-sim.jsonl.br",
            "lb.effort.lost_s",
            |r| {
                for e in r["lb"]["effort"].as_array_mut().into_iter().flatten() {
                    e["lost_s"] = (-1.0).into();
                }
            },
        ),
    ];
    for (file, field, edit) in cases {
        edited_records(&dir, file, edit);
        let out = braid(&dir, &["plot", "in.jsonl", "--out", "figs"]);
        refused(&out, &["in.jsonl", "line", field]);
    }
    // A configuration out of its bounds is named as the keys name it.
    edited_records(&dir, "plots/data/tts-sim.jsonl.br", |r| {
        r["config"]["lb_interval"] = 1e300.into();
    });
    let out = braid(&dir, &["plot", "in.jsonl", "--out", "figs"]);
    refused(&out, &["in.jsonl", "config.lb_interval"]);
}

#[test]
fn an_axis_the_records_put_out_of_scale_is_bad_input_naming_the_figure() {
    // Finite and positive, so the records' own checks pass; the figure's
    // axis would run to 1e300 s. Bad input (exit 2), not a write failure.
    let dir = scratch("plot-scale");
    let first = std::cell::Cell::new(true);
    edited_records(&dir, "plots/data/tts-sim.jsonl.br", |r| {
        if !r["time_to_solution_s"].is_null() && first.replace(false) {
            r["time_to_solution_s"] = 1e300.into();
        }
    });
    let out = braid(&dir, &["plot", "in.jsonl", "--out", "figs"]);
    refused(
        &out,
        &[
            "time-to-solution.png",
            "axis would run from",
            "out of scale",
        ],
    );
}

#[test]
fn a_run_report_given_to_plot_or_table_is_named_for_what_it_is() {
    let dir = scratch("plot-report");
    let r = braid(&dir, &["run", "max_iterations=5", "--json", "rep.json"]);
    assert_eq!(r.status, Some(0), "{}", r.stderr);
    for command in [
        vec!["plot", "rep.json", "--out", "figs"],
        vec!["table", "rep.json"],
    ] {
        let out = braid(&dir, &command);
        refused(&out, &["rep.json", "braid run --json", "braid experiment"]);
    }
}

// ----- 6. pitfalls ----------------------------------------------------------

#[test]
fn noise_cores_without_noise_is_refused_with_the_fix() {
    let dir = scratch("pitfall-noise");
    for engine in ["run", "sim"] {
        let out = braid(&dir, &[engine, "noise_cores=0:0.19", "max_iterations=5"]);
        refused(&out, &["noise_cores", "noise=thread"]);
    }
}

#[test]
fn keys_the_engine_ignores_are_named_in_a_warning() {
    let dir = scratch("pitfall-ignored");
    let out = braid(
        &dir,
        &[
            "run",
            "numerics=true",
            "sim_topology=pack:1 core:2",
            "max_iterations=5",
            "domain_size=16",
        ],
    );
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    assert!(
        out.stderr.contains("warning") && out.stderr.contains("numerics, sim_topology"),
        "{}",
        out.stderr
    );
    let out = braid(
        &dir,
        &["sim", "stall=0@5:1", "max_iterations=5", "domain_size=16"],
    );
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    assert!(out.stderr.contains("ignores stall"), "{}", out.stderr);
    // The defaults, as config.txt spells them, warn about nothing.
    let out = braid(&dir, &["run", "max_iterations=5", "domain_size=16"]);
    assert!(!out.stderr.contains("warning"), "{}", out.stderr);
}

#[test]
fn a_missed_tolerance_exits_3_with_its_report_and_a_met_one_exits_0() {
    let dir = scratch("pitfall-missed");
    for engine in ["run", "sim"] {
        let base = [
            engine,
            "--json",
            "r.json",
            "domain_size=16",
            "numerics=true",
        ];
        let out = braid(
            &dir,
            &[&base[..], &["tolerance=1e-9", "max_iterations=20"]].concat(),
        );
        assert_eq!(out.status, Some(3), "{engine}: {}", out.stderr);
        assert!(out.stderr.contains("tolerance"), "{}", out.stderr);
        let r: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("r.json")).unwrap()).unwrap();
        assert_eq!(r["converged"], false);
        let out = braid(
            &dir,
            &[&base[..], &["tolerance=1e-2", "max_iterations=100000"]].concat(),
        );
        assert_eq!(out.status, Some(0), "{engine}: {}", out.stderr);
    }
}

#[test]
fn a_suite_counts_samples_that_missed_their_tolerance_and_refuses_repeated_ones() {
    let dir = scratch("pitfall-suite");
    std::fs::write(
        dir.join("s.toml"),
        "name = \"s\"\nengine = \"sim\"\nfigure = \"tts\"\nvariants = [\"sync\", \"async(4)\"]\n\
         noise = [false]\nrepetitions = 1\n[set]\ndomain_size = 16\nnumerics = true\n\
         tolerance = 1e-9\nmax_iterations = 20\n",
    )
    .unwrap();
    let out = braid(&dir, &["experiment", "s.toml", "--out", "s.jsonl"]);
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("2 of them stopped before their tolerance"),
        "{}",
        out.stderr
    );
    std::fs::write(
        dir.join("twice.toml"),
        "name = \"t\"\nengine = \"sim\"\nfigure = \"tts\"\nvariants = [\"sync\", \"sync\"]\n\
         noise = [false]\nrepetitions = 1\n",
    )
    .unwrap();
    let out = braid(&dir, &["experiment", "twice.toml", "--out", "t.jsonl"]);
    refused(&out, &["twice.toml", "sync | quiet | 0", "comes twice"]);
    assert!(!dir.join("t.jsonl").exists());
}

#[test]
fn a_grid_wider_than_memory_could_hold_is_simulated_without_allocating_it() {
    let dir = scratch("pitfall-memory");
    // 2^32 x 2^32 cells, counted only: a source row as wide as the grid
    // would be 32 GiB (past the cap this runs under).
    let out = braid(
        &dir,
        &[
            "sim",
            "domain_size=16777216",
            "sim_topology=pack:256 core:256",
            "max_iterations=1",
        ],
    );
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    let out = braid(
        &dir,
        &[
            "sim",
            "domain_size=16777216",
            "sim_topology=pack:256 core:256",
            "numerics=true",
            "max_iterations=1",
        ],
    );
    refused(&out, &["memory"]);
}

// ----- the files braid plot draws on their own ------------------------------

/// The committed validation, its rows repeated `times` (12 MB at 1400).
fn many_rowed_validation(dir: &Path, times: usize) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("plots/validate/data/validation.json")).unwrap();
    let mut v: Value = serde_json::from_str(&text).unwrap();
    let rows = v["rows"].as_array().unwrap().clone();
    let many: Vec<Value> = (0..times).flat_map(|_| rows.clone()).collect();
    v["rows"] = Value::Array(many);
    let path = dir.join("validation.json");
    std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
    path
}

/// The height of a PNG, from its header.
fn png_height(path: &Path) -> u32 {
    let bytes = std::fs::read(path).unwrap();
    u32::from_be_bytes(bytes[20..24].try_into().unwrap())
}

/// A validation of thousands of rows draws a figure of a page's height
/// (its memory was 5.9 GB at 15 MB) and says what it left to the table.
#[test]
fn a_validation_of_thousands_of_rows_draws_a_page_and_says_what_it_left_out() {
    let dir = scratch("validation-many-rows");
    many_rowed_validation(&dir, 1400);
    let args = ["plot", "validation.json", "--out", "drawn"];
    let out = braid_within(&dir, &args, QUICK, Some(512 << 20));
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    assert!(
        out.stderr.contains("draws the first 40 of its 16800 rows"),
        "{}",
        out.stderr
    );
    let height = png_height(&dir.join("drawn/validation.png"));
    assert!(height < 6000, "{height} px");
    let table = std::fs::read_to_string(dir.join("drawn/validation.md")).unwrap();
    assert!(table.lines().count() > 16800, "the table keeps every row");
}

/// A malformed validation, speed or roofline file is named as the kind it
/// is, with the field at fault, and leaves no output folder behind.
#[test]
fn a_malformed_measurement_is_named_as_its_kind_with_the_field() {
    let dir = scratch("malformed-measurements");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let copy = |from: &str, to: &str, edit: &dyn Fn(String) -> String| {
        let text = std::fs::read_to_string(root.join(from)).unwrap();
        std::fs::write(dir.join(to), edit(text)).unwrap();
    };
    let cut = |t: String| t[..t.len() / 2].to_string();
    copy(
        "plots/validate/data/validation.json",
        "validation.json",
        &cut,
    );
    copy("plots/speed/data/speed.json", "speed.json", &|t| {
        t.replacen("\"reps\": [", "\"reps\": [NaN, ", 1)
    });
    copy("plots/data/roofline.json", "roofline.json", &|_| {
        "null".into()
    });
    copy("plots/data/roofline.json", "big-roofline.json", &|t| {
        let pad = " ".repeat(2 << 20);
        t.replacen('{', &format!("{{{pad}"), 1)
    });
    for (file, said) in [
        (
            "validation.json",
            "not a readable validation.json of `braid validate`: cut short",
        ),
        (
            "speed.json",
            "not a readable speed.json: field `rows[0].reps",
        ),
        (
            "roofline.json",
            "not a readable roofline.json: invalid type: null",
        ),
        (
            "big-roofline.json",
            "larger than 1 MiB, the most a roofline.json braid writes holds",
        ),
    ] {
        let out = braid(&dir, &["plot", file, "--out", "figures"]);
        refused(&out, &[file, said]);
        assert!(
            !dir.join("figures").exists(),
            "{file}: figures/ left behind"
        );
    }
}

// ----- LB data --------------------------------------------------------------

/// A recording of small brotli files that each decompress to 200 MiB of
/// JSON is refused at the file that takes it past 512 MiB, in seconds and
/// within a memory cap, naming the bound (64 such files took 42-54 s).
#[test]
fn an_lb_data_recording_past_512_mib_of_json_is_refused_at_the_bound() {
    let dir = scratch("lbdata-gigabyte");
    let lb = dir.join("lb");
    std::fs::create_dir_all(&lb).unwrap();
    let mut json = b"{\"type\": \"LBDatafile\", \"phases\": []".to_vec();
    json.resize(200 << 20, b' ');
    json.push(b'}');
    let mut packed = Vec::new();
    let params = brotli::enc::BrotliEncoderParams {
        quality: 1,
        ..Default::default()
    };
    brotli::BrotliCompress(&mut json.as_slice(), &mut packed, &params).unwrap();
    drop(json);
    for pe in 0..8 {
        std::fs::write(lb.join(format!("data.{pe}.json")), &packed).unwrap();
    }
    let args = [
        "sim",
        "threads=8",
        "workload=lbdata:lb",
        "max_iterations=10",
    ];
    let out = braid_within(&dir, &args, QUICK, Some(1 << 30));
    refused(&out, &["data.2.json", "more than 512 MiB of JSON"]);
}

/// A results file of one line longer than any record is refused at the
/// bound by every reader of results, not held whole (a 4 GiB line would
/// have been).
#[test]
fn a_results_line_longer_than_any_record_is_refused_at_the_bound() {
    let dir = scratch("long-record-line");
    let mut line = b"{\"suite\": \"".to_vec();
    line.resize(300 << 20, b'x');
    line.extend_from_slice(b"\"}\n");
    std::fs::write(dir.join("long.jsonl"), &line).unwrap();
    drop(line);
    for args in [
        vec!["plot", "long.jsonl", "--out", "figs"],
        vec!["table", "long.jsonl"],
    ] {
        let out = braid_within(&dir, &args, QUICK, Some(1 << 30));
        refused(&out, &["long.jsonl: line 1", "longer than 256 MiB"]);
    }
}
