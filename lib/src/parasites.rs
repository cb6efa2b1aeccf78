//! Parasites beside a real run: starting each one of a [`NoisePlan`] in
//! the form it asks for (a thread, or a child process running
//! `braid __parasite`), at its level (a rhythm, a duty cycle, or a recorded
//! trace replayed from a seeded offset), and collecting what each measured
//! on itself as a [`NoiseReport`].
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
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use braid_noise::{Calibration, NoiseStats, Rhythm};

use crate::noise::{Level, NoiseForm, NoisePlan, NoiseReport, ParasitePlan, ParasiteReport};

/// A parasite that could not start; the run does not start either.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The parasite itself failed (pinning, calibration).
    #[error("noise on core {core}: {source}")]
    Parasite {
        /// Its core.
        core: usize,
        /// What failed.
        source: braid_noise::NoiseError,
    },
    /// Its thread or process could not be started.
    #[error("cannot start the parasite process for core {core}: {reason}")]
    Process {
        /// Its core.
        core: usize,
        /// Why.
        reason: String,
    },
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
pub(crate) struct Running {
    form: NoiseForm,
    parasites: Vec<(ParasitePlan, u64, Parasite)>,
}

/// Starts every parasite of `plan` and returns once all are running.
pub(crate) fn start(plan: &NoisePlan) -> Result<Running, StartError> {
    let mut running = Running {
        form: plan.form,
        parasites: Vec::new(),
    };
    for p in &plan.parasites {
        let (iters, parasite) = match plan.form {
            NoiseForm::None => continue,
            NoiseForm::Thread | NoiseForm::Trace => start_thread(p)?,
            NoiseForm::Process => start_process(p)?,
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
    pub(crate) fn stop(mut self) -> Option<NoiseReport> {
        let form = self.form;
        let parasites: Vec<ParasiteReport> = self
            .parasites
            .drain(..)
            .map(|(plan, work_iters, parasite)| {
                let stats = finish(parasite);
                ParasiteReport::new(&plan, work_iters, stats.bursts, stats.duty, stats.elapsed_s)
            })
            .collect();
        (form != NoiseForm::None).then_some(NoiseReport { form, parasites })
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
