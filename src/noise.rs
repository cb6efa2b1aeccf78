//! Parasite noise during a run: where it goes, starting it in the form the
//! configuration asks for (a thread, or a child process running
//! `braid __parasite`), at the level it asks for (a rhythm, a duty cycle,
//! or a recorded trace replayed from a seeded offset), and collecting what
//! each parasite measured on itself.
//!
//! # Lifetime
//!
//! A run's parasites start (and calibrate, when a duty cycle is asked for)
//! before the solve and stop after it. A child process stops when its
//! standard input closes; braid holds the only write end of that pipe, and
//! the kernel closes it however braid ends (return, error, panic, Ctrl-C,
//! SIGTERM, SIGKILL), so a parasite cannot outlive its run. Dropping
//! [`Running`] also stops threads and kills children, for error paths.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use braid_noise::trace::Trace;
use braid_noise::{Calibration, NoiseStats, Rhythm};
use serde::{Deserialize, Serialize};

use crate::config::NoiseMode;

/// How hard one parasite works.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Work iterations per burst, as given.
    Iterations(u64),
    /// A duty cycle; the parasite calibrates itself on its core.
    Duty(f64),
    /// A recorded trace, replayed in a loop from `offset_ns` into it.
    Trace(Replay),
}

/// A trace to replay, read and checked when the run is planned.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Replay {
    pub file: PathBuf,
    #[serde(skip)]
    pub trace: Arc<Trace>,
    pub offset_ns: u64,
    pub lost_share: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParasitePlan {
    pub core: usize,
    pub sleep_us: u64,
    pub level: Level,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NoisePlan {
    pub mode: NoiseMode,
    pub parasites: Vec<ParasitePlan>,
}

/// What one parasite did, measured on itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Applied {
    pub core: usize,
    pub sleep_us: u64,
    pub work_iters: u64,
    pub requested_duty: Option<f64>,
    /// The trace replayed, if any (its bursts are its detours played).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<ReplayedTrace>,
    pub bursts: u64,
    /// Share of the core the parasite took: its work time over its lifetime
    /// (for a replayed trace, the CPU time its detours took).
    pub measured_duty: f64,
    pub elapsed_s: f64,
}

/// Which trace a parasite replayed, from where, and the share of the core
/// it takes as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayedTrace {
    pub file: PathBuf,
    pub offset_ns: u64,
    pub lost_share: f64,
}

impl ReplayedTrace {
    pub fn of(replay: &Replay) -> ReplayedTrace {
        ReplayedTrace {
            file: replay.file.clone(),
            offset_ns: replay.offset_ns,
            lost_share: replay.lost_share,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoiseReport {
    pub mode: NoiseMode,
    pub parasites: Vec<Applied>,
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("noise on core {core}: {source}")]
    Parasite {
        core: usize,
        source: braid_noise::NoiseError,
    },
    #[error("cannot start the parasite process for core {core}: {reason}")]
    Process { core: usize, reason: String },
}

enum Parasite {
    Thread {
        stop: Arc<AtomicBool>,
        handle: Option<JoinHandle<NoiseStats>>,
    },
    Process {
        child: Child,
        stdin: Option<ChildStdin>,
        stdout: BufReader<ChildStdout>,
    },
}

/// Parasites that are running.
pub struct Running {
    mode: NoiseMode,
    parasites: Vec<(ParasitePlan, u64, Parasite)>,
}

/// Starts every parasite of `plan` and returns once all are running.
pub fn start(plan: &NoisePlan) -> Result<Running, StartError> {
    let mut running = Running {
        mode: plan.mode,
        parasites: Vec::new(),
    };
    for p in &plan.parasites {
        let (iters, parasite) = match plan.mode {
            NoiseMode::None => continue,
            NoiseMode::Thread | NoiseMode::Trace => start_thread(p)?,
            NoiseMode::Process => start_process(p)?,
        };
        running.parasites.push((p.clone(), iters, parasite));
    }
    Ok(running)
}

fn start_thread(p: &ParasitePlan) -> Result<(u64, Parasite), StartError> {
    let stop = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (plan, thread_stop) = (p.clone(), Arc::clone(&stop));
    let handle = std::thread::Builder::new()
        .name(format!("braid-noise-{}", p.core))
        .spawn(move || {
            let iters = braid_noise::pin(plan.core).and_then(|()| match &plan.level {
                Level::Iterations(n) => Ok(*n),
                Level::Duty(d) => Calibration::measure().iters_for_duty(*d, plan.sleep_us),
                Level::Trace(_) => Ok(0),
            });
            let work_iters = match iters {
                Ok(n) => n,
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return NoiseStats::default();
                }
            };
            let _ = ready_tx.send(Ok(work_iters));
            if let Level::Trace(r) = &plan.level {
                return braid_noise::trace::replay(&r.trace, r.offset_ns, None, &thread_stop);
            }
            let rhythm = Rhythm {
                sleep_us: plan.sleep_us,
                work_iters,
            };
            braid_noise::run(rhythm, &thread_stop, None)
        })
        .map_err(|e| StartError::Process {
            core: p.core,
            reason: e.to_string(),
        })?;
    let iters = ready_rx
        .recv()
        .map_err(|_| StartError::Process {
            core: p.core,
            reason: "the parasite thread ended before it started".into(),
        })?
        .map_err(|source| StartError::Parasite {
            core: p.core,
            source,
        })?;
    Ok((
        iters,
        Parasite::Thread {
            stop,
            handle: Some(handle),
        },
    ))
}

fn start_process(p: &ParasitePlan) -> Result<(u64, Parasite), StartError> {
    let fail = |reason: String| StartError::Process {
        core: p.core,
        reason,
    };
    let exe = std::env::current_exe().map_err(|e| fail(e.to_string()))?;
    let mut cmd = Command::new(exe);
    // Besides the stdin pipe (which stops it within a burst), the kernel
    // kills it if braid dies; it stays in braid's process group, so a
    // timed-out sample's group kill takes it too.
    crate::child::die_with_parent(&mut cmd, false);
    cmd.arg("__parasite")
        .args(["--core", &p.core.to_string()])
        .args(["--sleep-us", &p.sleep_us.to_string()]);
    match &p.level {
        Level::Iterations(n) => cmd.args(["--work-iters", &n.to_string()]),
        Level::Duty(d) => cmd.args(["--duty", &d.to_string()]),
        Level::Trace(r) => cmd
            .arg("--replay")
            .arg(&r.file)
            .args(["--offset-ns", &r.offset_ns.to_string()]),
    };
    let mut child = cmd
        .args(["--until-stdin-closes", "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| fail(e.to_string()))?;
    let stdin = child.stdin.take();
    let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
    let mut line = String::new();
    let _ = stdout.read_line(&mut line);
    let ready: Option<u64> = serde_json::from_str::<serde_json::Value>(&line)
        .ok()
        .and_then(|v| v["ready"]["work_iters"].as_u64());
    let Some(iters) = ready else {
        let _ = child.kill();
        let status = child.wait().map(|s| s.to_string()).unwrap_or_default();
        return Err(fail(format!(
            "it did not start ({status}); see its message above"
        )));
    };
    Ok((
        iters,
        Parasite::Process {
            child,
            stdin,
            stdout,
        },
    ))
}

impl Running {
    /// Stops every parasite and returns what each measured.
    pub fn stop(mut self) -> Option<NoiseReport> {
        let mode = self.mode;
        let parasites: Vec<Applied> = self
            .parasites
            .drain(..)
            .map(|(plan, work_iters, parasite)| {
                let stats = finish(parasite);
                Applied {
                    core: plan.core,
                    sleep_us: plan.sleep_us,
                    work_iters,
                    requested_duty: match plan.level {
                        Level::Duty(d) => Some(d),
                        Level::Iterations(_) | Level::Trace(_) => None,
                    },
                    trace: match &plan.level {
                        Level::Trace(r) => Some(ReplayedTrace::of(r)),
                        _ => None,
                    },
                    bursts: stats.bursts,
                    measured_duty: stats.duty,
                    elapsed_s: stats.elapsed_s,
                }
            })
            .collect();
        (mode != NoiseMode::None).then_some(NoiseReport { mode, parasites })
    }
}

/// Stops one parasite and collects its statistics.
fn finish(parasite: Parasite) -> NoiseStats {
    match parasite {
        Parasite::Thread { stop, mut handle } => {
            stop.store(true, Ordering::Relaxed);
            if let Some(h) = &handle {
                h.thread().unpark(); // cut its sleep short
            }
            handle
                .take()
                .and_then(|h| h.join().ok())
                .unwrap_or_default()
        }
        Parasite::Process {
            mut child,
            stdin,
            mut stdout,
        } => {
            if let Some(mut stdin) = stdin {
                let _ = stdin.flush();
            } // dropped here: the pipe closes and the parasite stops
            let mut line = String::new();
            let _ = stdout.read_line(&mut line);
            let _ = child.wait();
            serde_json::from_str(&line).unwrap_or_default()
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        for (_, _, p) in self.parasites.drain(..) {
            match p {
                Parasite::Thread { stop, handle } => {
                    stop.store(true, Ordering::Relaxed);
                    if let Some(h) = handle {
                        h.thread().unpark();
                    }
                }
                Parasite::Process { mut child, .. } => {
                    let _ = child.kill();
                    let _ = child.wait();
                }
            }
        }
    }
}
