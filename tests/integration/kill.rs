//! Kill safety through the command line: SIGINT/SIGTERM end a run cleanly
//! (report and grid written, status 128 + signal); killing `braid
//! experiment`, even with SIGKILL, leaves no sample or parasite running.

use crate::common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{alive, live_children, scratch};

fn spawn(dir: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_braid"))
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("braid starts")
}

/// Waits until `pid` has `n` live descendants (children and their
/// children), then returns them.
fn descendants(pid: u32, n: usize) -> Vec<u32> {
    let t = Instant::now();
    loop {
        let mut all = Vec::new();
        let mut frontier = vec![pid];
        while let Some(p) = frontier.pop() {
            for c in live_children(p) {
                all.push(c);
                frontier.push(c);
            }
        }
        if all.len() >= n {
            return all;
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "only {all:?} below {pid}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal(child: &Child, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok);
}

fn wait(mut child: Child) -> (Option<i32>, String) {
    let t = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
            return (status.code(), err);
        }
        if t.elapsed() > common::HANG {
            let _ = child.kill();
            panic!("braid did not end after the signal");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn all_gone_within(pids: &[u32], limit: Duration) {
    let t = Instant::now();
    while pids.iter().any(|&p| alive(p)) {
        assert!(
            t.elapsed() < limit,
            "still alive after {limit:?}: {:?}",
            pids.iter().filter(|&&p| alive(p)).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn sigterm_and_sigint_end_a_run_with_its_report_grid_and_parasite_reaped() {
    for (sig, status) in [("-TERM", 143), ("-INT", 130)] {
        let dir = scratch("kill_run");
        let child = spawn(
            &dir,
            &[
                "run",
                "--json",
                "r.json",
                "--grid",
                "g.npy",
                "threads=1",
                "max_iterations=1000000000",
                "time_limit=100",
                "noise=process",
                "noise_cores=0",
            ],
        );
        let parasite = descendants(child.id(), 1);
        std::thread::sleep(Duration::from_millis(300));
        signal(&child, sig);
        let (code, err) = wait(child);
        assert_eq!(code, Some(status), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("r.json")).unwrap()).unwrap();
        assert_eq!(report["stop_reason"], "interrupted");
        assert!(report["noise"]["parasites"][0]["bursts"].as_u64().unwrap() > 0);
        assert!(std::fs::metadata(dir.join("g.npy")).unwrap().len() > 0);
        all_gone_within(&parasite, Duration::from_secs(2));
        // Nothing but the two outputs: no temporary left behind.
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2);
    }
}

/// A real-engine suite whose samples run long and start a parasite process.
const LONG_SUITE: &str = r#"
name = "t-kill"
figure = "landscape"
engine = "run"
variants = ["async(1)"]
noise = [true]
repetitions = 2
[set]
threads = 1
max_iterations = 1000000000
time_limit = 100
[noise_set]
noise = "process"
noise_cores = "0"
"#;

#[test]
fn killing_an_experiment_even_with_sigkill_kills_its_sample_and_parasite() {
    for sig in ["-KILL", "-TERM"] {
        let dir = scratch("kill_exp");
        std::fs::write(dir.join("suite.toml"), LONG_SUITE).unwrap();
        let child = spawn(&dir, &["experiment", "suite.toml", "--out", "r.jsonl"]);
        // The sample and its parasite.
        let below = descendants(child.id(), 2);
        signal(&child, sig);
        let (code, err) = wait(child);
        all_gone_within(&below, Duration::from_secs(2));
        let text = std::fs::read_to_string(dir.join("r.jsonl")).unwrap_or_default();
        assert_eq!(text, "", "the killed sample must not be recorded");
        if sig == "-TERM" {
            assert_eq!(code, Some(143), "{err}");
            assert!(err.contains("resume"), "{err}");
        }
    }
}

/// A command that outlives the tests' limit is killed, and the failure
/// says where its threads waited, so that a hang seen once in a busy CI
/// run can be diagnosed from its output.
#[test]
fn a_hung_command_is_killed_and_its_failure_says_where_its_threads_waited() {
    let mut cmd = Command::new("sleep");
    cmd.arg("600");
    let started = Instant::now();
    let run = std::panic::AssertUnwindSafe(|| common::wait_for(cmd, Duration::from_secs(1)));
    let failure =
        std::panic::catch_unwind(run).expect_err("a command that does not end fails the test");
    let message = failure
        .downcast_ref::<String>()
        .expect("the failure is a message");
    assert!(message.contains("did not end within 1s"), "{message}");
    assert!(
        message.contains("sleep") && message.contains("wchan"),
        "{message}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(120),
        "it was killed, not waited for"
    );
}
