//! Recording and replaying noise on a real core (the selfish detour
//! method): a known parasite's bursts are found, and a replayed trace,
//! recorded again, loses the same share of the core.

use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use braid_noise::trace::{Trace, record};
use braid_noise::{Calibration, Rhythm, pin, run};

/// The tests that share a core with noise run one at a time: two at once
/// would be each other's noise.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The first core this process may run on: the recorder and the noise
/// share it, so that the noise takes time from the recorder.
fn a_core() -> usize {
    core_affinity::get_core_ids().unwrap()[0].id
}

#[test]
fn recording_finds_a_parasites_bursts_period_and_duration() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let core = a_core();
    let cal = Calibration::measure();
    // Bursts of about 500 us every 2.5 ms or so: short enough that the
    // scheduler lets a woken parasite finish one before the recorder's
    // turn comes back.
    let work_iters = (500_000.0 / cal.ns_per_iter) as u64;
    let rhythm = Rhythm {
        sleep_us: 2000,
        work_iters,
    };
    let parasite = std::thread::spawn(move || {
        pin(core).unwrap();
        run(
            rhythm,
            &AtomicBool::new(false),
            Some(Duration::from_millis(1020)),
        )
    });
    std::thread::sleep(Duration::from_millis(10));
    pin(core).unwrap();
    let trace = record(Duration::from_secs(1), 50_000, &AtomicBool::new(false));
    let stats = parasite.join().unwrap();
    let long: Vec<_> = trace
        .detours
        .iter()
        .filter(|d| d.duration_ns > 200_000)
        .collect();
    assert!(long.len() > 100, "{} long detours", long.len());
    let burst = stats.work_s / stats.bursts as f64 * 1e9;
    let period = stats.elapsed_s / stats.bursts as f64 * 1e9;
    let seen_burst = median(long.iter().map(|d| d.duration_ns as f64).collect());
    // Both periods are means over the same second: a late wake-up now and
    // then lengthens one period, on both sides alike.
    let (first, last) = (long[0], long[long.len() - 1]);
    let seen_period = (last.start_ns - first.start_ns) as f64 / (long.len() - 1) as f64;
    assert!(
        (seen_burst / burst - 1.0).abs() < 0.1,
        "burst: recorded {seen_burst:.0} ns, parasite measured {burst:.0} ns"
    );
    assert!(
        (seen_period / period - 1.0).abs() < 0.1,
        "period: recorded {seen_period:.0} ns, parasite measured {period:.0} ns"
    );
}

#[test]
fn a_replayed_trace_recorded_again_loses_the_same_share() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join(format!("braid-noise-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A made-up trace: 1 ms away every 5 ms, 20% of the core. Each replayed
    // detour also costs a wake-up and two switches (tens of us here), so
    // fewer, longer detours keep that small next to what is replayed.
    let mut text = String::from("# duration_ns 50000000\n");
    for k in 0..10 {
        text += &format!("{}\t1000000\n", 100_000 + k * 5_000_000);
    }
    let file = dir.join("made.trace");
    std::fs::write(&file, &text).unwrap();
    let original = Trace::parse(&text).unwrap();
    // The machine is shared: another job's burst during one of the two
    // recordings skews one attempt, not three.
    let want = original.lost_share();
    let mut seen = Vec::new();
    for _ in 0..3 {
        let (got, quiet) = replay_and_record(&file, &dir);
        seen.push(format!(
            "recorded again {:.1}% beyond the quiet core's {:.1}%",
            100.0 * got,
            100.0 * quiet
        ));
        if (got - want).abs() < 0.03 {
            std::fs::remove_dir_all(&dir).ok();
            return;
        }
    }
    panic!("replayed {:.1}%, but {}", 100.0 * want, seen.join("; "));
}

#[test]
fn bad_trace_files_are_refused_with_exit_2_naming_the_line() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join(format!("braid-noise-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, text, line) in [
        ("unsorted", "# x\n500\t10\n100\t10\n", 3),
        ("negative", "100\t-10\n", 1),
        ("words", "start\tduration\n", 1),
        ("empty", "# nothing here\n", 0),
    ] {
        let file = dir.join(name);
        std::fs::write(&file, text).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_braid-noise"))
            .args([
                "--core",
                &a_core().to_string(),
                "--replay",
                file.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        if line > 0 {
            assert!(err.contains(&format!("line {line}:")), "{name}: {err}");
        } else {
            assert!(err.contains("empty"), "{name}: {err}");
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Records this core quiet, then records it again while `file` replays
/// there: the share lost beyond the quiet core's, and the quiet share.
fn replay_and_record(file: &std::path::Path, dir: &std::path::Path) -> (f64, f64) {
    // What this core loses anyway (the machine's own detours, on a shared
    // VM a few percent), recorded the same way just before.
    let quiet = std::thread::scope(|s| {
        s.spawn(|| {
            pin(a_core()).unwrap();
            record(Duration::from_millis(500), 50_000, &AtomicBool::new(false)).lost_share()
        })
        .join()
        .unwrap()
    });
    let core = a_core().to_string();
    let file_s = file.to_str().unwrap();
    let mut replay = Command::new(env!("CARGO_BIN_EXE_braid-noise"))
        .args(["--core", &core, "--replay", file_s, "--duration", "1.6"])
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let again = dir.join("again.trace");
    let out = Command::new(env!("CARGO_BIN_EXE_braid-noise"))
        .args(["--core", &core, "--record", again.to_str().unwrap()])
        .args(["--duration", "1", "--threshold-ns", "50000", "--json"])
        .output()
        .unwrap();
    assert!(replay.wait().unwrap().success());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let recorded = Trace::parse(&std::fs::read_to_string(&again).unwrap()).unwrap();
    (recorded.lost_share() - quiet, quiet)
}
