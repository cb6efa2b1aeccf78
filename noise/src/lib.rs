//! The paper's parasite noise (section 4.3): a loop pinned to one core that
//! alternates sleeping `sleep` and doing `work_iters` iterations of
//! `sum = sum * a + b`, so the core it shares loses a fixed share of its time.
//!
//! This crate owns the loop, its calibration on this machine, and the
//! conversion from a duty cycle to work iterations. It runs the loop on the
//! calling thread; `braid` runs it on a thread of its own or in a child
//! process, and the `braid-noise` binary runs it on its own.

pub mod cli;
pub mod files;
pub mod trace;

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

/// The paper's parameters: 200 us of sleep, 10000 work iterations.
pub const DEFAULT_SLEEP: Duration = Duration::from_micros(200);
/// See [`DEFAULT_SLEEP`]: the work iterations of one burst.
pub const DEFAULT_WORK_ITERS: u64 = 10_000;

/// One parasite's rhythm.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Rhythm {
    /// Microseconds of sleep between bursts.
    pub sleep_us: u64,
    /// Iterations of `sum = sum * a + b` in one burst.
    pub work_iters: u64,
}

impl Default for Rhythm {
    fn default() -> Self {
        Rhythm {
            sleep_us: DEFAULT_SLEEP.as_micros() as u64,
            work_iters: DEFAULT_WORK_ITERS,
        }
    }
}

/// Why a parasite cannot run as asked.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NoiseError {
    /// A duty cycle outside (0, 1).
    #[error("duty cycle must be strictly between 0 and 1, got {0}")]
    Duty(f64),
    /// Neither sleep nor work.
    #[error("sleep and work cannot both be zero")]
    Empty,
    /// A core this process may not run on.
    #[error("core {core} cannot be pinned to (this process runs on {available:?})")]
    Core {
        /// The core asked for.
        core: usize,
        /// The cores this process may run on.
        available: Vec<usize>,
    },
    /// A duration that is not a number of seconds from 0 to 1e6.
    #[error("--duration must be a number of seconds from 0 to 1e6, got {0}")]
    Duration(f64),
    /// A file that cannot be read or written.
    #[error("{path}: {message}")]
    File {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
}

impl Rhythm {
    /// Refuses a rhythm that neither sleeps nor works.
    pub fn check(&self) -> Result<(), NoiseError> {
        if self.sleep_us == 0 && self.work_iters == 0 {
            return Err(NoiseError::Empty);
        }
        Ok(())
    }
}

/// What a parasite did, measured on itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct NoiseStats {
    /// Work bursts done.
    pub bursts: u64,
    /// Seconds spent in work bursts.
    pub work_s: f64,
    /// Seconds from start to stop.
    pub elapsed_s: f64,
    /// `work_s / elapsed_s`: the share of the core the parasite took.
    pub duty: f64,
}

/// One burst of the paper's arithmetic. `black_box` on every step keeps the
/// compiler from folding the chain, as the paper's `-O0` build did.
#[inline(never)]
pub fn work(iters: u64) -> f64 {
    let (a, b) = (black_box(0.999_999), black_box(1e-6));
    let mut sum = 0.0f64;
    for _ in 0..iters {
        sum = black_box(sum * a + b);
    }
    sum
}

/// Work iterations between two looks at the stop flag and the clock inside
/// a burst: about 16 us here, so a burst of any length ends that soon after
/// the parasite is told to stop, or its duration is up.
const CHECK_EVERY: u64 = 4096;

/// Runs the parasite on this thread until `stop` is set or `duration` has
/// passed, whichever comes first, however long its sleep or burst: it sleeps
/// parked (whoever sets `stop` should `unpark` this thread to cut a sleep
/// short; otherwise the sleep ends at its time) and looks at `stop` and the
/// clock every [`CHECK_EVERY`] work iterations.
pub fn run(rhythm: Rhythm, stop: &AtomicBool, duration: Option<Duration>) -> NoiseStats {
    let start = Instant::now();
    let deadline = duration.and_then(|d| start.checked_add(d));
    let sleep = Duration::from_micros(rhythm.sleep_us);
    let over = |now: Instant| stop.load(Ordering::Relaxed) || deadline.is_some_and(|d| now >= d);
    let mut stats = NoiseStats::default();
    let mut sink = 0.0;
    while !over(Instant::now()) {
        if !sleep.is_zero() {
            let wake = Instant::now() + sleep;
            let wake = deadline.map_or(wake, |d| wake.min(d));
            loop {
                let now = Instant::now();
                if now >= wake || stop.load(Ordering::Relaxed) {
                    break;
                }
                std::thread::park_timeout(wake - now);
            }
            if over(Instant::now()) {
                break;
            }
        }
        let t = Instant::now();
        let mut left = rhythm.work_iters;
        while left > 0 {
            let n = left.min(CHECK_EVERY);
            sink += work(n);
            left -= n;
            if left > 0 && over(Instant::now()) {
                break;
            }
        }
        stats.work_s += t.elapsed().as_secs_f64();
        stats.bursts += 1;
    }
    black_box(sink);
    stats.elapsed_s = start.elapsed().as_secs_f64();
    stats.duty = if stats.elapsed_s > 0.0 {
        stats.work_s / stats.elapsed_s
    } else {
        0.0
    };
    stats
}

/// Pins the calling thread to `core`: any CPU the kernel lets it run on,
/// inside its inherited affinity mask or not (a node's parasites, started
/// by an MPI rank bound to one core, go on the node's other cores too).
pub fn pin(core: usize) -> Result<(), NoiseError> {
    // A cpu_set_t holds CPU_SETSIZE CPUs; libc asserts on more.
    if core < libc::CPU_SETSIZE as usize
        && core_affinity::set_for_current(core_affinity::CoreId { id: core })
    {
        return Ok(());
    }
    let available: Vec<usize> = core_affinity::get_core_ids()
        .unwrap_or_default()
        .into_iter()
        .map(|c| c.id)
        .collect();
    Err(NoiseError::Core { core, available })
}

/// How the loop runs on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Calibration {
    /// Nanoseconds per work iteration.
    pub ns_per_iter: f64,
    /// What `sleep(200 us)` really takes, in microseconds (timer slack and
    /// wake-up latency make it longer).
    pub sleep_200us_actual_us: f64,
}

impl Calibration {
    /// Measures the loop and the sleep on the calling thread (pin it first).
    /// Takes about a tenth of a second; the medians resist a noisy machine.
    pub fn measure() -> Calibration {
        let median = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        work(DEFAULT_WORK_ITERS); // warm up
        let per_iter: Vec<f64> = (0..31)
            .map(|_| {
                let t = Instant::now();
                black_box(work(DEFAULT_WORK_ITERS));
                t.elapsed().as_nanos() as f64 / DEFAULT_WORK_ITERS as f64
            })
            .collect();
        let sleeps: Vec<f64> = (0..101)
            .map(|_| {
                let t = Instant::now();
                std::thread::sleep(DEFAULT_SLEEP);
                t.elapsed().as_nanos() as f64 / 1e3
            })
            .collect();
        Calibration {
            ns_per_iter: median(per_iter),
            sleep_200us_actual_us: median(sleeps),
        }
    }

    /// Duty cycle that `rhythm` gives here.
    pub fn duty_of(&self, rhythm: Rhythm) -> f64 {
        let work = rhythm.work_iters as f64 * self.ns_per_iter / 1e3;
        let sleep = self.actual_sleep_us(rhythm.sleep_us);
        work / (work + sleep)
    }

    /// Work iterations that give duty cycle `duty` with `sleep_us` of sleep.
    pub fn iters_for_duty(&self, duty: f64, sleep_us: u64) -> Result<u64, NoiseError> {
        if !(duty > 0.0 && duty < 1.0) {
            return Err(NoiseError::Duty(duty));
        }
        let sleep = self.actual_sleep_us(sleep_us);
        let work_us = duty / (1.0 - duty) * sleep;
        Ok(((work_us * 1e3 / self.ns_per_iter).round() as u64).max(1))
    }

    /// A requested sleep plus the overshoot measured for 200 us.
    fn actual_sleep_us(&self, sleep_us: u64) -> f64 {
        if sleep_us == 0 {
            return 0.0;
        }
        sleep_us as f64 + (self.sleep_200us_actual_us - 200.0).max(0.0)
    }
}

/// The calling thread's CPU time, ns (0 if the clock cannot be read): what
/// a replayed detour must take from the core whatever else runs there, and
/// how braid measures a worker's share of its core.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_THREAD_CPUTIME_ID
    // is supported on every Linux braid runs on (it returns 0 on success).
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    (ts.tv_sec as u64).saturating_mul(1_000_000_000) + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests;
