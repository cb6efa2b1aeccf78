//! The command line of a parasite, shared by the `braid-noise` binary and
//! `braid __parasite` (the process form that `braid run` starts).

use std::io::{Read, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clap::Args;

use crate::{Calibration, NoiseError, Rhythm, pin, run};

#[derive(Debug, Clone, Args)]
pub struct NoiseArgs {
    /// Core to pin the parasite to
    #[arg(long, required_unless_present = "calibrate")]
    pub core: Option<usize>,
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
    if args.until_stdin_closes && args.json {
        // Tell the parent the parasite is calibrated and about to start.
        say(&serde_json::json!({ "ready": { "work_iters": work_iters } }).to_string());
    }
    if args.until_stdin_closes {
        let stop = Arc::clone(&stop);
        let parasite = std::thread::current();
        std::thread::spawn(move || {
            let mut sink = [0u8; 64];
            let mut stdin = std::io::stdin();
            while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
            stop.store(true, Ordering::Relaxed);
            parasite.unpark(); // cut the current sleep short
        });
    }
    let stats = run(rhythm, &stop, duration);
    if args.json {
        say(&serde_json::to_string(&stats).expect("serialisable"));
    } else {
        say(&format!(
            "{} bursts of {} iterations in {:.3} s: measured duty cycle {:.1}%",
            stats.bursts,
            rhythm.work_iters,
            stats.elapsed_s,
            100.0 * stats.duty
        ));
    }
    Ok(())
}

/// Prints a line, ignoring a closed stdout: a parasite whose parent died
/// has no one to tell, and must not panic onto the shared stderr.
fn say(line: &str) {
    let _ = writeln!(std::io::stdout().lock(), "{line}");
}
