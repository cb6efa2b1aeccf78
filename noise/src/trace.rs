//! Noise as it really is: a trace of detours, recorded with the "selfish
//! detour" method (netgauge's `-x noise`, FWQ/FTQ; Hoefler, Schneider and
//! Lumsdaine, SC10) and replayed on a core.
//!
//! The file format is netgauge's selfish output, which LogGOPSim's
//! `--noise-trace` also reads: `#` comment lines (braid writes the host,
//! core, threshold and duration there), then one detour per line,
//! `<start ns><TAB><duration ns>`, starts ascending from the start of the
//! recording. [`Trace::parse`] refuses anything else naming the line.

use std::fmt::Write as _;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::NoiseStats;

/// One detour: the core was taken away from `start_ns` for `duration_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Detour {
    pub start_ns: u64,
    pub duration_ns: u64,
}

/// A recorded trace: its detours and how long the recording ran.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    pub detours: Vec<Detour>,
    /// Length of the recording, ns (`# duration_ns` in the file; else the
    /// end of the last detour).
    pub span_ns: u64,
    /// The `#` lines, without the `#` (but for `duration_ns`, which sets
    /// the span).
    pub comments: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TraceError {
    #[error("line {line}: {problem} (expected `<start ns><TAB><duration ns>` or a `#` comment)")]
    Line { line: usize, problem: String },
    #[error("no detours: the trace is empty")]
    Empty,
    #[error("the detours take the whole {span_ns} ns: nothing else would ever run")]
    Whole { span_ns: u64 },
}

impl Trace {
    /// Parses the selfish format. Starts must be whole non-negative numbers
    /// in ascending order and detours must not overlap; a `# duration_ns N`
    /// comment sets the span.
    ///
    /// ```
    /// use braid_noise::trace::Trace;
    /// let t = Trace::parse("# core 3\n100\t20\n500\t30\n").unwrap();
    /// assert_eq!((t.detours.len(), t.span_ns), (2, 530));
    /// assert!(Trace::parse("500\t30\n100\t20\n").unwrap_err().to_string().contains("line 2"));
    /// ```
    pub fn parse(text: &str) -> Result<Trace, TraceError> {
        let mut detours: Vec<Detour> = Vec::new();
        let mut comments = Vec::new();
        let mut span: Option<u64> = None;
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let bad = |problem: String| TraceError::Line { line, problem };
            let l = raw.trim();
            if l.is_empty() {
                continue;
            }
            if let Some(c) = l.strip_prefix('#') {
                let c = c.trim();
                if let Some(v) = c.strip_prefix("duration_ns") {
                    let v = v.trim().trim_start_matches([':', '=']).trim();
                    span = Some(
                        v.parse()
                            .map_err(|_| bad(format!("`{c}`: not a whole number of ns")))?,
                    );
                } else {
                    comments.push(c.to_string());
                }
                continue;
            }
            let mut fields = l.split_whitespace();
            let (Some(s), Some(d), None) = (fields.next(), fields.next(), fields.next()) else {
                return Err(bad(format!("`{l}` is not two fields")));
            };
            let num = |f: &str, what: &str| -> Result<u64, TraceError> {
                f.parse::<u64>().map_err(|_| {
                    bad(format!(
                        "{what} `{f}` is not a whole non-negative number of ns"
                    ))
                })
            };
            let d = Detour {
                start_ns: num(s, "start")?,
                duration_ns: num(d, "duration")?,
            };
            let prev_end = detours
                .last()
                .map(|p| p.start_ns.saturating_add(p.duration_ns));
            if let Some(prev) = detours.last().filter(|_| prev_end > Some(d.start_ns)) {
                return Err(bad(format!(
                    "starts at {} ns, before the previous detour ends ({} + {} ns): \
                     detours must be sorted and must not overlap",
                    d.start_ns, prev.start_ns, prev.duration_ns
                )));
            }
            detours.push(d);
        }
        let end = detours
            .last()
            .map(|d| d.start_ns.saturating_add(d.duration_ns))
            .ok_or(TraceError::Empty)?;
        let trace = Trace {
            detours,
            span_ns: span.unwrap_or(end).max(end),
            comments,
        };
        let lost: u64 = trace.detours.iter().map(|d| d.duration_ns).sum();
        if lost >= trace.span_ns {
            return Err(TraceError::Whole {
                span_ns: trace.span_ns,
            });
        }
        Ok(trace)
    }

    /// The file: the comments, `# duration_ns`, then the detours.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for c in &self.comments {
            let _ = writeln!(out, "# {c}");
        }
        let _ = writeln!(out, "# duration_ns {}", self.span_ns);
        for d in &self.detours {
            let _ = writeln!(out, "{}\t{}", d.start_ns, d.duration_ns);
        }
        out
    }

    /// The share of the recording the core was away: detours over span.
    pub fn lost_share(&self) -> f64 {
        let lost: u64 = self.detours.iter().map(|d| d.duration_ns).sum();
        if self.span_ns == 0 {
            0.0
        } else {
            lost as f64 / self.span_ns as f64
        }
    }
}

/// Spins on the clock for `duration` on the calling thread (pin it first)
/// and keeps every gap between two readings longer than `threshold_ns`:
/// the time the core was taken away (the selfish detour benchmark).
/// Returns early, with what it has, when `stop` is set.
pub fn record(duration: Duration, threshold_ns: u64, stop: &AtomicBool) -> Trace {
    let start = Instant::now();
    let end_ns = duration.as_nanos().min(u64::MAX as u128) as u64;
    let mut detours = Vec::new();
    let mut last = 0u64;
    let mut spins = 0u32;
    loop {
        let now = start.elapsed().as_nanos() as u64;
        let gap = now - last;
        if gap > threshold_ns {
            detours.push(Detour {
                start_ns: last,
                duration_ns: gap,
            });
        }
        last = now;
        if now >= end_ns {
            break;
        }
        spins = spins.wrapping_add(1);
        if spins % 4096 == 0 && stop.load(Ordering::Relaxed) {
            break;
        }
    }
    Trace {
        detours,
        span_ns: last,
        comments: Vec::new(),
    }
}

/// Replays `trace` on the calling thread (pin it first), starting
/// `offset_ns` into it: busy on the clock for each detour's length from its
/// start (on this thread's CPU clock), parked in between, looping while `duration` lasts (without one,
/// until `stop`). Ends
/// within a detour of `stop` being set (unpark the thread to cut a wait
/// short). Returns what it did: detours played as bursts, the CPU time
/// they took as work.
pub fn replay(
    trace: &Trace,
    offset_ns: u64,
    duration: Option<Duration>,
    stop: &AtomicBool,
) -> NoiseStats {
    let start = Instant::now();
    let clock = || start.elapsed().as_nanos() as u64;
    let limit = duration.map_or(u64::MAX, |d| d.as_nanos().min(u64::MAX as u128) as u64);
    let span = trace.span_ns.max(1);
    let offset = offset_ns % span;
    let (mut bursts, mut busy) = (0u64, 0u64);
    // From the offset: the rest of a detour it falls inside (first lap
    // only), then the detours after it, then those before it a lap later.
    let first = trace.detours.partition_point(|d| d.start_ns < offset);
    let inside = first
        .checked_sub(1)
        .map(|i| &trace.detours[i])
        .filter(|d| d.start_ns + d.duration_ns > offset)
        .map(|d| (0, d.start_ns + d.duration_ns - offset));
    let played = trace.detours[first..]
        .iter()
        .map(|d| (d.start_ns - offset, d.duration_ns))
        .chain(
            trace.detours[..first]
                .iter()
                .map(|d| (d.start_ns + span - offset, d.duration_ns)),
        );
    'laps: for lap in 0.. {
        let rest = if lap == 0 { inside } else { None };
        for (at, length) in rest.into_iter().chain(played.clone()) {
            let at = (lap * span).saturating_add(at);
            if at >= limit {
                break 'laps;
            }
            loop {
                if stop.load(Ordering::Relaxed) {
                    break 'laps;
                }
                let now = clock();
                if now >= at {
                    break;
                }
                std::thread::park_timeout(Duration::from_nanos(at - now));
            }
            // Take the detour's length of this core's time, counted on the
            // thread's CPU clock from when the wait really ended: a wake-up
            // is late by tens of us, and a worker sharing the core may
            // preempt the replay mid-detour; either way the core loses what
            // the trace says. The next start is absolute, so lateness does
            // not accumulate. A starved replay gives up after 4x the length
            // (plus 1 ms) of wall time, and any detour ends on `stop`.
            let (wall0, cpu0) = (clock(), thread_cpu_ns());
            let give_up = wall0
                .saturating_add(length.saturating_mul(4))
                .saturating_add(1_000_000)
                .min(limit);
            let mut x = 0u64;
            loop {
                for _ in 0..64 {
                    x = black_box(x.wrapping_add(1));
                }
                if thread_cpu_ns().saturating_sub(cpu0) >= length
                    || clock() >= give_up
                    || stop.load(Ordering::Relaxed)
                {
                    break;
                }
            }
            busy += thread_cpu_ns().saturating_sub(cpu0);
            bursts += 1;
        }
        if (lap + 1).saturating_mul(span) >= limit {
            break;
        }
    }
    let elapsed_s = start.elapsed().as_secs_f64();
    NoiseStats {
        bursts,
        work_s: busy as f64 / 1e9,
        elapsed_s,
        duty: if elapsed_s > 0.0 {
            busy as f64 / 1e9 / elapsed_s
        } else {
            0.0
        },
    }
}

/// This thread's CPU time, ns: what a replayed detour must take from the
/// core, whatever else runs there.
fn thread_cpu_ns() -> u64 {
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
mod tests {
    use super::*;

    #[test]
    fn a_trace_round_trips_through_its_text() {
        let t = Trace {
            detours: vec![
                Detour {
                    start_ns: 10,
                    duration_ns: 5,
                },
                Detour {
                    start_ns: 100,
                    duration_ns: 50,
                },
            ],
            span_ns: 1000,
            comments: vec!["host x".into(), "core 2".into()],
        };
        let back = Trace::parse(&t.to_text()).unwrap();
        assert_eq!(back, t);
        assert!((back.lost_share() - 0.055).abs() < 1e-12);
    }

    #[test]
    fn bad_trace_files_are_refused_naming_the_line() {
        for (text, line, what) in [
            ("10\t5\n5\t1\n", 2, "sorted"),
            ("10\t5\n12\t1\n", 2, "overlap"),
            ("# ok\n-5\t1\n", 2, "non-negative"),
            ("10\tx\n", 1, "duration `x`"),
            ("10 5 7\n", 1, "two fields"),
            ("10\n", 1, "two fields"),
            ("# duration_ns lots\n", 1, "whole number"),
        ] {
            let e = Trace::parse(text).unwrap_err().to_string();
            assert!(
                e.contains(&format!("line {line}:")) && e.contains(what),
                "{text:?}: {e}"
            );
        }
        assert_eq!(Trace::parse("# only comments\n\n"), Err(TraceError::Empty));
        assert_eq!(Trace::parse(""), Err(TraceError::Empty));
        assert_eq!(
            Trace::parse("0\t5\n5\t5\n"),
            Err(TraceError::Whole { span_ns: 10 })
        );
    }

    #[test]
    fn the_thread_cpu_clock_runs_while_spinning_and_not_while_asleep() {
        let a = thread_cpu_ns();
        std::thread::sleep(Duration::from_millis(20));
        let b = thread_cpu_ns();
        let wall = Instant::now();
        let mut x = 0u64;
        while wall.elapsed() < Duration::from_millis(5) {
            x = black_box(x.wrapping_add(1));
        }
        let c = thread_cpu_ns();
        assert!(a > 0, "the clock reads");
        assert!(b - a < 10_000_000, "asleep: {} ns", b - a);
        assert!(c - b >= 1_000_000, "spinning 5 ms: {} ns", c - b);
    }

    #[test]
    fn a_replay_starts_at_its_offset_and_plays_each_detour_once_a_lap() {
        let ms = 1_000_000;
        let t =
            Trace::parse("0\t200000\n3000000\t200000\n6000000\t200000\n# duration_ns 9000000\n")
                .unwrap();
        assert_eq!(t.span_ns, 9 * ms);
        let stop = AtomicBool::new(false);
        // From 4 ms: the detour at 6 ms comes at 2 ms, then 0 at 5, 3 at 8.
        let lap = replay(&t, 4 * ms, Some(Duration::from_millis(9)), &stop);
        assert_eq!(lap.bursts, 3);
        let part = replay(&t, 4 * ms, Some(Duration::from_micros(4500)), &stop);
        assert_eq!(
            part.bursts, 1,
            "only the detour at 2 ms starts before 4.5 ms"
        );
        let two = replay(&t, 0, Some(Duration::from_millis(18)), &stop);
        assert_eq!(two.bursts, 6, "it loops");
        assert!(two.work_s >= 6.0 * 0.2e-3);
        stop.store(true, Ordering::Relaxed);
        assert_eq!(replay(&t, 0, None, &stop).bursts, 0, "a set stop ends it");
    }

    #[test]
    fn recording_lasts_its_duration_and_stops_when_told() {
        let stop = AtomicBool::new(false);
        let t = record(Duration::from_millis(20), 1_000_000, &stop);
        assert!(t.span_ns >= 20_000_000);
        stop.store(true, Ordering::Relaxed);
        let t = record(Duration::from_secs(60), 1_000_000, &stop);
        assert!(
            t.span_ns < 1_000_000_000,
            "a set stop flag ends the recording"
        );
    }
}
