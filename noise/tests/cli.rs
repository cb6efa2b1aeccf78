//! The `braid-noise` binary as a user runs it.

use std::process::Command;

fn noise(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_braid-noise"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn calibrate_prints_the_loop_the_sleep_and_the_duty() {
    let (code, out, _) = noise(&["--calibrate"]);
    assert_eq!(code, Some(0));
    assert!(out.contains("10000 iterations"), "{out}");
    assert!(out.contains("duty cycle"), "{out}");
    assert!(out.contains("--duty 0.19"), "{out}");
}

#[test]
fn a_timed_run_reports_its_measured_duty_as_json() {
    let (code, out, err) = noise(&[
        "--core",
        "0",
        "--duty",
        "0.2",
        "--duration",
        "0.2",
        "--json",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let stats: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert!(stats["bursts"].as_u64().unwrap() > 0);
    let duty = stats["duty"].as_f64().unwrap();
    assert!(duty > 0.0 && duty < 1.0);
}

#[test]
fn bad_values_exit_2_with_a_message() {
    for (args, needle) in [
        (&["--core", "0", "--duty", "1.5"][..], "duty"),
        (&["--core", "0", "--duty", "0"], "duty"),
        (&["--core", "100000", "--duration", "0.1"], "core 100000"),
        (
            &["--core", "0", "--sleep-us", "0", "--work-iters", "0"],
            "zero",
        ),
        (&["--sleep-us", "5"], "--core"),
        (&["--core", "0", "--duration", "nan"], "--duration"),
        (&["--core", "0", "--duration", "1e300"], "--duration"),
        (&["--core", "0", "--duration=-1"], "--duration"),
    ] {
        let (code, _, err) = noise(args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn duration_is_honoured_whatever_the_duty_or_the_sleep() {
    for args in [
        &["--core", "0", "--duty", "0.999999", "--duration", "0.3"][..],
        &[
            "--core",
            "0",
            "--sleep-us",
            "100000000",
            "--duration",
            "0.3",
        ],
    ] {
        let t = std::time::Instant::now();
        let (code, _, err) = noise(args);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        // Without the cut, a burst takes minutes, a sleep 100 s.
        assert!(t.elapsed().as_secs_f64() < 10.0, "{args:?}");
    }
}
