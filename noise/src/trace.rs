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
        Ok(Trace {
            detours,
            span_ns: span.unwrap_or(end).max(end),
            comments,
        })
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

/// Replays `trace` on the calling thread (pin it first): busy on the clock
/// for each detour's length from its start, asleep in between, looping from the
/// start while `duration` (if any) lasts. Returns the busy ns it spent.
pub fn replay(trace: &Trace, duration: Option<Duration>, stop: &AtomicBool) -> u64 {
    let start = Instant::now();
    let limit = duration.map(|d| d.as_nanos().min(u64::MAX as u128) as u64);
    let span = trace.span_ns.max(1);
    let mut busy = 0u64;
    let mut lap = 0u64;
    loop {
        for d in &trace.detours {
            let at = lap * span + d.start_ns;
            if limit.is_some_and(|l| at >= l) || stop.load(Ordering::Relaxed) {
                return busy;
            }
            let now = start.elapsed().as_nanos() as u64;
            if at > now {
                std::thread::sleep(Duration::from_nanos(at - now));
            }
            // Busy for the detour's whole length from when the sleep really
            // ended (a wake-up is late by tens of us): the share lost is
            // what a replay must reproduce; the next start is absolute, so
            // lateness does not accumulate.
            let began = start.elapsed().as_nanos() as u64;
            let until = (began + d.duration_ns).min(limit.unwrap_or(u64::MAX));
            let mut x = 0u64;
            while (start.elapsed().as_nanos() as u64) < until {
                x = black_box(x.wrapping_add(1));
            }
            busy += (start.elapsed().as_nanos() as u64).saturating_sub(began);
        }
        lap += 1;
        if limit.is_none_or(|l| lap * span >= l) {
            return busy;
        }
    }
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
