//! Noise as it really is: a trace of detours, recorded with the "selfish
//! detour" method (netgauge's `-x noise`, FWQ/FTQ; Hoefler, Schneider and
//! Lumsdaine, SC10) and replayed on a core.
//!
//! The file format is netgauge's selfish output, which LogGOPSim's
//! `--noise-trace` also reads: `#` comment lines (braid writes the host,
//! core, threshold and duration there), then one detour per line,
//! `<start ns><TAB><duration ns>`, starts ascending from the start of the
//! recording. [`Trace::parse`] refuses anything else naming the line.

use std::hint::black_box;
use std::io::BufRead;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::NoiseStats;
use crate::files::excerpt;

/// One detour: the core was taken away from `start_ns` for `duration_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Detour {
    /// When, ns from the recording's start.
    pub start_ns: u64,
    /// For how long, ns.
    pub duration_ns: u64,
}

/// A recorded trace: its detours and how long the recording ran.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// The detours, in the file's order.
    pub detours: Vec<Detour>,
    /// Length of the recording, ns (`# duration_ns` in the file; else the
    /// end of the last detour).
    pub span_ns: u64,
    /// The `#` lines, without the `#` (but for `duration_ns`, which sets
    /// the span).
    pub comments: Vec<String>,
}

/// Why a trace cannot be read or replayed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TraceError {
    /// A line that is neither a detour nor a comment.
    #[error("line {line}: {problem} (expected `<start ns><TAB><duration ns>` or a `#` comment)")]
    Line {
        /// Its number, from 1.
        line: usize,
        /// What is wrong with it.
        problem: String,
    },
    /// No detours at all.
    #[error("no detours: the trace is empty")]
    Empty,
    /// Detours that leave no time to run.
    #[error("the detours take the whole {span_ns} ns: nothing else would ever run")]
    Whole {
        /// The recording's length, ns.
        span_ns: u64,
    },
    /// The file cannot be read.
    #[error("cannot read it: {0}")]
    Read(String),
}

/// The longest trace braid replays, and so the bound on every start,
/// duration and span: 1e15 ns (1e6 s, braid's longest duration). It keeps
/// every sum of a trace's times, and the simulator's picoseconds, far from
/// overflow.
pub const MAX_SPAN_NS: u64 = 1_000_000_000_000_000;

/// The largest trace file read: 256 MiB (about 16 million detours).
pub const MAX_TRACE_BYTES: u64 = 256 << 20;

impl Trace {
    /// Parses the selfish format. Starts must be whole non-negative numbers
    /// in ascending order, detours must not overlap, and every time is at
    /// most [`MAX_SPAN_NS`]; a `# duration_ns N` comment sets the span.
    ///
    /// ```
    /// use braid_noise::trace::Trace;
    /// let t = Trace::parse("# core 3\n100\t20\n500\t30\n").unwrap();
    /// assert_eq!((t.detours.len(), t.span_ns), (2, 530));
    /// assert!(Trace::parse("500\t30\n100\t20\n").unwrap_err().to_string().contains("line 2"));
    /// ```
    pub fn parse(text: &str) -> Result<Trace, TraceError> {
        Trace::read(text.as_bytes())
    }

    /// Parses the selfish format a line at a time from `input`: memory
    /// grows with the detours, not with a copy of the file.
    pub fn read(mut input: impl BufRead) -> Result<Trace, TraceError> {
        let mut detours: Vec<Detour> = Vec::new();
        let mut comments = Vec::new();
        let mut span: Option<u64> = None;
        let mut raw = String::new();
        for line in 1.. {
            raw.clear();
            match input.read_line(&mut raw) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => return Err(TraceError::Read(e.to_string())),
            }
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
                            .ok()
                            .filter(|&n| n <= MAX_SPAN_NS)
                            .ok_or_else(|| {
                                bad(format!(
                                    "`{}`: not a whole number of ns up to {MAX_SPAN_NS:e}",
                                    excerpt(c)
                                ))
                            })?,
                    );
                } else {
                    comments.push(c.to_string());
                }
                continue;
            }
            let mut fields = l.split_whitespace();
            let (Some(s), Some(d), None) = (fields.next(), fields.next(), fields.next()) else {
                return Err(bad(format!("`{}` is not two fields", excerpt(l))));
            };
            let num = |f: &str, what: &str| -> Result<u64, TraceError> {
                f.parse::<u64>()
                    .ok()
                    .filter(|&n| n <= MAX_SPAN_NS)
                    .ok_or_else(|| {
                        bad(format!(
                            "{what} `{}` is not a whole number of ns from 0 to {MAX_SPAN_NS:e}",
                            excerpt(f)
                        ))
                    })
            };
            let d = Detour {
                start_ns: num(s, "start")?,
                duration_ns: num(d, "duration")?,
            };
            if d.start_ns + d.duration_ns > MAX_SPAN_NS {
                return Err(bad(format!(
                    "ends at {} ns, past the longest trace braid replays ({MAX_SPAN_NS:e} ns)",
                    d.start_ns + d.duration_ns
                )));
            }
            if let Some(prev) = detours
                .last()
                .filter(|p| p.start_ns + p.duration_ns > d.start_ns)
            {
                return Err(bad(format!(
                    "starts at {} ns, before the previous detour ends ({} + {} ns): \
                     detours must be sorted and must not overlap",
                    d.start_ns, prev.start_ns, prev.duration_ns
                )));
            }
            detours.push(d);
        }
        // Held for the whole run: no doubling's slack (up to half again).
        detours.shrink_to_fit();
        // Bounded and not overlapping: every sum below is at most the span.
        let end = detours
            .last()
            .map(|d| d.start_ns + d.duration_ns)
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
        let mut out = Vec::new();
        self.write_text(&mut out).expect("a Vec takes every byte");
        String::from_utf8(out).expect("the text is ASCII and the comments UTF-8")
    }

    /// Writes [`Self::to_text`]'s text to `out` a line at a time (a
    /// recording of millions of detours is not held twice).
    pub fn write_text(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        for c in &self.comments {
            writeln!(out, "# {c}")?;
        }
        writeln!(out, "# duration_ns {}", self.span_ns)?;
        for d in &self.detours {
            writeln!(out, "{}\t{}", d.start_ns, d.duration_ns)?;
        }
        Ok(())
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

/// The most detours a recording keeps: as many as a trace file within
/// [`MAX_TRACE_BYTES`] can hold at about 24 bytes a line (a replay refuses
/// a larger file), so a threshold below the clock loop's own step (which
/// makes every reading a detour) is refused within a bounded memory.
pub const MAX_RECORDED_DETOURS: usize = (MAX_TRACE_BYTES / 24) as usize;

/// A recording that found more than `limit` detours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "more than {limit} detours in {after_ns} ns: the trace would not fit in a file a replay \
     reads; raise the threshold"
)]
pub struct TooManyDetours {
    /// The bound.
    pub limit: usize,
    /// When it was passed, ns into the recording.
    pub after_ns: u64,
}

/// Spins on the clock for `duration` on the calling thread (pin it first)
/// and keeps every gap between two readings longer than `threshold_ns`:
/// the time the core was taken away (the selfish detour benchmark). Stops
/// with an error past `limit` detours.
pub fn record(
    duration: Duration,
    threshold_ns: u64,
    stop: &AtomicBool,
    limit: usize,
) -> Result<Trace, TooManyDetours> {
    let start = Instant::now();
    let end_ns = duration.as_nanos().min(u64::MAX as u128) as u64;
    let mut detours = Vec::new();
    let mut last = 0u64;
    let mut spins = 0u32;
    loop {
        let now = start.elapsed().as_nanos() as u64;
        let gap = now - last;
        if gap > threshold_ns {
            if detours.len() == limit {
                return Err(TooManyDetours {
                    limit,
                    after_ns: now,
                });
            }
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
    Ok(Trace {
        detours,
        span_ns: last,
        comments: Vec::new(),
    })
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
    let (inside, played) = from_offset(trace, offset_ns % span);
    let (mut bursts, mut busy) = (0u64, 0u64);
    let mut lap = 0u64;
    'laps: loop {
        let rest = if lap == 0 { inside } else { None };
        for (at, length) in rest.into_iter().chain(played.clone()) {
            let at = lap.saturating_mul(span).saturating_add(at);
            if at >= limit || clock() >= limit || !wait_until(&clock, at, stop) {
                break 'laps;
            }
            busy += take_detour(&clock, length, limit, stop);
            bursts += 1;
        }
        if (lap + 1).saturating_mul(span) >= limit {
            break;
        }
        // A lap the replay fell a whole lap behind (a span shorter than a
        // detour's own overhead, or a starved core) is skipped, not played
        // late: the core loses what the trace says, and the loop ends with
        // the duration (a 2 ns span once looped for minutes).
        lap = (lap + 1).max(clock() / span);
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

/// A lap of `trace` replayed from `offset` (within its span), as `(start,
/// length)` from the offset: the rest of a detour the offset falls inside
/// (played on the first lap only), and every detour after it, then those
/// before it, one span later.
fn from_offset(
    trace: &Trace,
    offset: u64,
) -> (
    Option<(u64, u64)>,
    impl Iterator<Item = (u64, u64)> + Clone + '_,
) {
    let span = trace.span_ns.max(1);
    let first = trace.detours.partition_point(|d| d.start_ns < offset);
    let inside = first
        .checked_sub(1)
        .map(|i| &trace.detours[i])
        .filter(|d| d.start_ns + d.duration_ns > offset)
        .map(|d| (0, d.start_ns + d.duration_ns - offset));
    let played = trace.detours[first..]
        .iter()
        .map(move |d| (d.start_ns - offset, d.duration_ns))
        .chain(
            trace.detours[..first]
                .iter()
                .map(move |d| (d.start_ns + span - offset, d.duration_ns)),
        );
    (inside, played)
}

/// Parks until `clock` reaches `at`; false if `stop` came first.
fn wait_until(clock: &impl Fn() -> u64, at: u64, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = clock();
        if now >= at {
            return true;
        }
        std::thread::park_timeout(Duration::from_nanos(at - now));
    }
}

/// Takes a detour of `length` ns of this core's time and returns the CPU
/// time it took. It is counted on the thread's CPU clock from when the wait
/// really ended: a wake-up is late by tens of us, and a worker sharing the
/// core may preempt the replay mid-detour; either way the core loses what
/// the trace says. (The next start is absolute, so lateness does not
/// accumulate.) A starved replay gives up after 4x the length (plus 1 ms)
/// of wall time, or at `limit`, and any detour ends on `stop`.
fn take_detour(clock: &impl Fn() -> u64, length: u64, limit: u64, stop: &AtomicBool) -> u64 {
    let (wall0, cpu0) = (clock(), crate::thread_cpu_ns());
    let give_up = wall0
        .saturating_add(length.saturating_mul(4))
        .saturating_add(1_000_000)
        .min(limit);
    let mut x = 0u64;
    loop {
        for _ in 0..64 {
            x = black_box(x.wrapping_add(1));
        }
        if crate::thread_cpu_ns().saturating_sub(cpu0) >= length
            || clock() >= give_up
            || stop.load(Ordering::Relaxed)
        {
            break;
        }
    }
    crate::thread_cpu_ns().saturating_sub(cpu0)
}

#[cfg(test)]
mod tests;
