//! The command line of a parasite, shared by the `braid-noise` binary and
//! `braid __parasite` (the process form that `braid run` starts).

use std::io::{Read, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clap::Args;

use crate::{Calibration, NoiseError, Rhythm, pin, run};

/// The `braid-noise` command's arguments (also `braid noise`'s).
#[derive(Debug, Clone, Args)]
pub struct NoiseArgs {
    /// Core to pin the parasite (or the recorder, or the replay) to
    #[arg(long, required_unless_present = "calibrate")]
    pub core: Option<usize>,
    /// Record this core's noise instead (selfish detour: spin on the clock,
    /// keep every gap longer than --threshold-ns) into FILE, in netgauge's
    /// selfish format; needs --duration
    #[arg(long, value_name = "FILE", requires = "duration", conflicts_with_all = ["replay", "calibrate", "duty"])]
    pub record: Option<std::path::PathBuf>,
    /// Shortest gap that counts as a detour when recording, ns
    #[arg(long, default_value_t = 1000, requires = "record")]
    pub threshold_ns: u64,
    /// Replay a recorded trace on the core instead: busy through each detour
    /// at its start time, idle between; loops while --duration lasts (else
    /// plays it once, or loops until stdin closes with --until-stdin-closes)
    #[arg(long, value_name = "FILE", conflicts_with_all = ["calibrate", "duty"])]
    pub replay: Option<std::path::PathBuf>,
    /// Start the replay this far into the trace, ns (wraps around its span)
    #[arg(long, default_value_t = 0, requires = "replay")]
    pub offset_ns: u64,
    /// Microseconds of sleep between bursts
    #[arg(long, default_value_t = 200)]
    pub sleep_us: u64,
    /// Iterations of `sum = sum * a + b` per burst
    #[arg(long, default_value_t = 10_000, conflicts_with = "duty")]
    pub work_iters: u64,
    /// Duty cycle to aim for, in (0, 1): picks --work-iters on this machine
    #[arg(long)]
    pub duty: Option<f64>,
    /// Stop after this many seconds (default: run until stopped)
    #[arg(long)]
    pub duration: Option<f64>,
    /// Measure the work loop and the sleep here, print them and exit
    #[arg(long)]
    pub calibrate: bool,
    /// Stop when standard input closes (how `braid run` ties a parasite's
    /// life to its own: the pipe closes however braid ends, even on SIGKILL)
    #[arg(long)]
    pub until_stdin_closes: bool,
    /// Print the final statistics as one JSON line
    #[arg(long)]
    pub json: bool,
}

/// Runs the command `args` asks for and returns its exit status.
pub fn main_with(args: NoiseArgs) -> ExitCode {
    match run_args(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("braid-noise: error: {e}");
            ExitCode::from(2)
        }
    }
}

fn run_args(args: NoiseArgs) -> Result<(), NoiseError> {
    let duration = match args.duration {
        None => None,
        Some(d) if (0.0..=1e6).contains(&d) => Some(Duration::from_secs_f64(d)),
        Some(d) => return Err(NoiseError::Duration(d)),
    };
    if let Some(core) = args.core {
        pin(core)?;
    }
    if let Some(file) = &args.record {
        return record_to(
            file,
            args.core.unwrap_or(0),
            duration,
            args.threshold_ns,
            args.json,
        );
    }
    if let Some(file) = &args.replay {
        return replay_from(file, &args, duration);
    }
    if args.calibrate {
        let cal = Calibration::measure();
        let rhythm = Rhythm {
            sleep_us: args.sleep_us,
            work_iters: args.work_iters,
        };
        if args.json {
            say(&serde_json::to_string(&cal).expect("serialisable"));
        } else {
            println!(
                "{} iterations of sum = sum * a + b take {:.1} us ({:.2} ns each)",
                crate::DEFAULT_WORK_ITERS,
                cal.ns_per_iter * crate::DEFAULT_WORK_ITERS as f64 / 1e3,
                cal.ns_per_iter
            );
            println!("sleep(200 us) takes {:.1} us", cal.sleep_200us_actual_us);
            println!(
                "--sleep-us {} --work-iters {} gives a duty cycle of {:.1}%",
                rhythm.sleep_us,
                rhythm.work_iters,
                100.0 * cal.duty_of(rhythm)
            );
            println!(
                "--duty 0.19 (the paper's level) means --work-iters {}",
                cal.iters_for_duty(0.19, args.sleep_us)?
            );
        }
        return Ok(());
    }
    let work_iters = match args.duty {
        Some(duty) => Calibration::measure().iters_for_duty(duty, args.sleep_us)?,
        None => args.work_iters,
    };
    let rhythm = Rhythm {
        sleep_us: args.sleep_us,
        work_iters,
    };
    rhythm.check()?;
    let stop = Arc::new(AtomicBool::new(false));
    if args.until_stdin_closes {
        // Tell the parent the parasite is calibrated and about to start.
        ready(&args, work_iters);
        stop_when_stdin_closes(&stop);
    }
    let stats = run(rhythm, &stop, duration);
    tell(&args, &stats, || {
        format!(
            "{} bursts of {} iterations in {:.3} s: measured duty cycle {:.1}%",
            stats.bursts,
            rhythm.work_iters,
            stats.elapsed_s,
            100.0 * stats.duty
        )
    });
    Ok(())
}

/// `--record`: the trace, written whole (a temporary beside it, renamed),
/// and the share of the core lost.
fn record_to(
    file: &std::path::Path,
    core: usize,
    duration: Option<Duration>,
    threshold_ns: u64,
    json: bool,
) -> Result<(), NoiseError> {
    let duration = duration.expect("clap requires --duration with --record");
    let cannot = |e: std::io::Error| NoiseError::File {
        path: file.display().to_string(),
        message: e.to_string(),
    };
    // A path that cannot take the trace fails now, not after the
    // recording; the probe leaves nothing behind.
    drop(crate::files::AtomicFile::create_regular(file).map_err(cannot)?);
    let stop = AtomicBool::new(false);
    let limit = crate::trace::MAX_RECORDED_DETOURS;
    let mut trace = crate::trace::record(duration, threshold_ns, &stop, limit).map_err(|e| {
        NoiseError::File {
            path: file.display().to_string(),
            message: format!("--threshold-ns {threshold_ns}: {e}"),
        }
    })?;
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    trace.comments = vec![
        "braid-noise --record: selfish detours (start_ns<TAB>duration_ns)".into(),
        format!("host {}", host.trim()),
        format!("core {core}"),
        format!("threshold_ns {threshold_ns}"),
    ];
    // Written whole or not at all, and never over a device or a FIFO.
    crate::files::AtomicFile::create_regular(file)
        .and_then(|mut out| {
            let mut lines = std::io::BufWriter::new(&mut out);
            trace.write_text(&mut lines)?;
            lines.flush()?;
            drop(lines);
            out.commit()
        })
        .map_err(cannot)?;
    let (n, share) = (trace.detours.len(), trace.lost_share());
    if json {
        say(
            &serde_json::json!({ "detours": n, "lost_share": share, "span_ns": trace.span_ns })
                .to_string(),
        );
    } else {
        say(&format!(
            "{n} detours over {:.3} s on core {core}: {:.2}% of the core lost; written to {}",
            trace.span_ns as f64 / 1e9,
            100.0 * share,
            file.display()
        ));
    }
    Ok(())
}

/// `--replay`: plays a trace file on the (pinned) calling thread: once, for
/// `--duration`, or until stdin closes.
fn replay_from(
    file: &std::path::Path,
    args: &NoiseArgs,
    duration: Option<Duration>,
) -> Result<(), NoiseError> {
    let bad = |message: String| NoiseError::File {
        path: file.display().to_string(),
        message,
    };
    let lines = crate::files::open_buffered(file, crate::trace::MAX_TRACE_BYTES)
        .map_err(|e| bad(e.to_string()))?;
    let trace = crate::trace::Trace::read(lines).map_err(|e| bad(e.to_string()))?;
    let stop = Arc::new(AtomicBool::new(false));
    let duration = match duration {
        None if !args.until_stdin_closes => Some(Duration::from_nanos(trace.span_ns)),
        d => d,
    };
    if args.until_stdin_closes {
        ready(args, 0);
        stop_when_stdin_closes(&stop);
    }
    let stats = crate::trace::replay(&trace, args.offset_ns, duration, &stop);
    tell(args, &stats, || {
        format!(
            "replayed {} detours of a trace losing {:.2}% of the core: busy {:.3} s of {:.3} s ({:.2}%)",
            stats.bursts,
            100.0 * trace.lost_share(),
            stats.work_s,
            stats.elapsed_s,
            100.0 * stats.duty
        )
    });
    Ok(())
}

/// What a parasite did: one JSON line with `--json` (what `braid run`
/// reads), else `text`.
fn tell(args: &NoiseArgs, stats: &crate::NoiseStats, text: impl FnOnce() -> String) {
    if args.json {
        say(&serde_json::to_string(stats).expect("serialisable"));
    } else {
        say(&text());
    }
}

/// With `--json`, tells the parent (`braid run`) the parasite is about to
/// start.
fn ready(args: &NoiseArgs, work_iters: u64) {
    if args.json {
        say(&serde_json::json!({ "ready": { "work_iters": work_iters } }).to_string());
    }
}

/// Sets `stop` (and unparks the calling thread, to cut its wait short) when
/// standard input closes.
fn stop_when_stdin_closes(stop: &Arc<AtomicBool>) {
    let stop = Arc::clone(stop);
    let parasite = std::thread::current();
    std::thread::spawn(move || {
        let mut sink = [0u8; 64];
        let mut stdin = std::io::stdin();
        while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
        stop.store(true, Ordering::Relaxed);
        parasite.unpark();
    });
}

/// Prints a line, ignoring a closed stdout: a parasite whose parent died
/// has no one to tell, and must not panic onto the shared stderr.
fn say(line: &str) {
    let _ = writeln!(std::io::stdout().lock(), "{line}");
}
