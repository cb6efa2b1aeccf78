//! Helpers for running the `braid` binary in tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Generous: it only catches hangs, it times nothing.
pub(crate) const HANG: Duration = Duration::from_secs(120);

#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) status: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

/// Runs `braid ARGS` in `dir`, killing it if it hangs. The output is read
/// while the child runs, so a large report cannot fill the pipe and block it.
pub(crate) fn braid(dir: &Path, args: &[&str]) -> Run {
    braid_within(dir, args, HANG, None)
}

/// [`braid`], failing once `limit` has passed, and with its address space
/// capped at `memory` bytes when given (so a runaway allocation aborts
/// instead of succeeding on a big machine).
pub(crate) fn braid_within(dir: &Path, args: &[&str], limit: Duration, memory: Option<u64>) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_braid"));
    if let Some(bytes) = memory {
        use std::os::unix::process::CommandExt;
        // SAFETY: setrlimit is async-signal-safe and the closure only reads
        // a copied integer.
        unsafe {
            cmd.pre_exec(move || {
                let lim = libc::rlimit {
                    rlim_cur: bytes,
                    rlim_max: bytes,
                };
                if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    cmd.args(args).current_dir(dir);
    wait_for(cmd, limit)
}

/// Runs `cmd` to its end, reading its output while it runs; after `limit`
/// it is killed (TERM, then KILL: a launcher such as mpirun takes its
/// processes down on TERM) and the test fails.
pub(crate) fn wait_for(mut cmd: Command, limit: Duration) -> Run {
    let what = format!("{cmd:?}");
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("braid starts");
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()));
    let Output {
        status,
        stdout,
        stderr,
    } = match rx.recv_timeout(limit) {
        Ok(out) => out.expect("wait for braid"),
        Err(_) => {
            let stacks = stacks(pid);
            let _ = Command::new("kill").arg(pid.to_string()).status();
            std::thread::sleep(Duration::from_secs(2));
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("{what} did not end within {limit:?}; where its threads were:\n{stacks}");
        }
    };
    Run {
        status: status.code(),
        stdout: String::from_utf8(stdout).unwrap(),
        stderr: String::from_utf8(stderr).unwrap(),
    }
}

/// Where a hung process's threads (and its children's) wait: each
/// thread's name, state and kernel wait channel, and with gdb installed its
/// stack, so that a hang seen once can be diagnosed from the test's output.
fn stacks(pid: u32) -> String {
    let mut out = String::new();
    let children =
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    let pids = std::iter::once(pid.to_string())
        .chain(children.split_whitespace().map(str::to_string))
        .collect::<Vec<_>>();
    for p in &pids {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let dir = task.path();
            let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
            let state = read("stat")
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next().map(str::to_string))
                .unwrap_or_default();
            out += &format!(
                "  pid {p} thread {:?} {} state {state} wchan {}\n",
                task.file_name(),
                read("comm").trim(),
                read("wchan"),
            );
        }
        let gdb = Command::new("timeout")
            .args(["60", "gdb", "-p", p, "-batch", "-ex", "thread apply all bt"])
            .output();
        if let Some(g) = gdb.ok().filter(|g| g.status.success()) {
            let text = String::from_utf8_lossy(&g.stdout);
            let frames: Vec<&str> = text
                .lines()
                .filter(|l| l.starts_with("Thread ") || l.starts_with('#'))
                .collect();
            out += &frames.join("\n");
            out += "\n";
        }
    }
    out
}

/// Runs braid and parses the JSON report it prints on stdout.
pub(crate) fn report(dir: &Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["run", "--json", "-"];
    all.extend_from_slice(args);
    let run = braid(dir, &all);
    assert_eq!(run.status, Some(0), "braid {all:?} failed: {}", run.stderr);
    serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON report ({e}):\n{}", run.stdout))
}

/// A fresh scratch directory under the target dir.
pub(crate) fn scratch(name: &str) -> PathBuf {
    // Numbered per call: tests run in parallel and may share a name.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{n}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// How many cells of two grids differ in their bits (so -0.0 and 0.0
/// differ, as they would in a file).
pub(crate) fn bits_differing(a: &ndarray::Array2<f64>, b: &ndarray::Array2<f64>) -> usize {
    assert_eq!(a.dim(), b.dim());
    a.iter()
        .zip(b.iter())
        .filter(|(x, y)| x.to_bits() != y.to_bits())
        .count()
}

/// The `/proc/PID/stat` fields after the command name (which may hold
/// spaces): state, ppid, ...
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    Some(rest.split_whitespace().map(str::to_string).collect())
}

/// Whether `pid` is a live process (a zombie waiting for its reaper is not).
pub(crate) fn alive(pid: u32) -> bool {
    stat_fields(pid).is_some_and(|f| f.first().is_some_and(|s| s != "Z" && s != "X"))
}

/// The live (not zombie) children of `pid`, from /proc.
pub(crate) fn live_children(pid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|&p| {
            stat_fields(p).is_some_and(|f| f.get(1).map(String::as_str) == Some(&pid.to_string()))
                && alive(p)
        })
        .collect()
}

/// A JSON file, parsed.
pub(crate) fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Seconds of the tasks in LB data `phases`: the subdomains' (migratable)
/// ones if `subdomains`, else the noise's.
pub(crate) fn task_seconds(phases: &[serde_json::Value], subdomains: bool) -> f64 {
    phases
        .iter()
        .flat_map(|p| p["tasks"].as_array().expect("a phase's tasks"))
        .filter(|task| task["entity"]["migratable"] == subdomains)
        .map(|task| task["time"].as_f64().expect("a task's time"))
        .sum()
}

/// Up to three real runs for a check that one run's machine can spoil
/// (beside other tests and CPU hogs: a sampler preempted at the end, noise
/// that swamps an imposed slowdown, a balancer that rightly sees only
/// jitter): passes at the first run that holds, fails with every run's
/// reason. A behaviour that is broken fails all three.
pub(crate) fn in_one_of_three(mut attempt: impl FnMut() -> Result<(), String>) {
    let mut seen = Vec::new();
    for _ in 0..3 {
        match attempt() {
            Ok(()) => return,
            Err(why) => seen.push(why),
        }
    }
    panic!("no run of three held: {seen:#?}");
}

/// The repository's root.
pub(crate) fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under the repository's `plots/` whose name ends with
/// `suffix` (".png", ".jsonl.br"), at any depth, in no set order.
pub(crate) fn plots_ending_with(suffix: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![repo().join("plots")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.to_string_lossy().ends_with(suffix) {
                found.push(p);
            }
        }
    }
    found
}

/// The lines of a committed records file (`.jsonl.br`, brotli-compressed,
/// or a plain `.jsonl`), each a JSON record.
pub(crate) fn record_lines(path: &Path) -> Vec<serde_json::Value> {
    use std::io::Read;
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let text = match path.extension().is_some_and(|e| e == "br") {
        true => {
            let mut out = String::new();
            brotli::Decompressor::new(&bytes[..], 1 << 16)
                .read_to_string(&mut out)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            out
        }
        false => String::from_utf8(bytes).unwrap(),
    };
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// One published set of `plots/published.toml`: its suites' committed
/// records (or its measurement file), the folder its figures are in, and
/// the suites whose regrets `braid learn` draws there.
#[derive(Debug, Clone)]
pub(crate) struct Published {
    pub(crate) name: String,
    pub(crate) inputs: Vec<PathBuf>,
    pub(crate) figures: Option<String>,
    pub(crate) regrets: Vec<String>,
    pub(crate) learned: bool,
}

/// Every set `plots/published.toml` lists.
pub(crate) fn published() -> Vec<Published> {
    let text = std::fs::read_to_string(repo().join("plots/published.toml")).unwrap();
    let manifest: toml::Table = toml::from_str(&text).unwrap();
    let strings = |v: Option<&toml::Value>| -> Vec<String> {
        v.and_then(|v| v.as_array())
            .map(|a| a.iter().map(|s| s.as_str().unwrap().to_string()).collect())
            .unwrap_or_default()
    };
    manifest["set"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let records = s.get("records").and_then(|r| r.as_str());
            let mut inputs: Vec<PathBuf> = strings(s.get("suites"))
                .iter()
                .map(|suite| {
                    repo()
                        .join(records.unwrap())
                        .join(format!("{suite}.jsonl.br"))
                })
                .collect();
            if let Some(file) = s.get("file").and_then(|f| f.as_str()) {
                inputs.push(repo().join(file));
            }
            let learn = s.get("learn");
            Published {
                name: s["name"].as_str().unwrap().to_string(),
                inputs,
                figures: s.get("figures").and_then(|f| f.as_str()).map(String::from),
                regrets: strings(learn.and_then(|l| l.get("evaluate"))),
                learned: learn.is_some(),
            }
        })
        .collect()
}
