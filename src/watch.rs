//! The progress a `braid run` or `braid sim` shows while it works, on
//! stderr: on a terminal a line redrawn in place (indicatif); otherwise,
//! as in a batch job's log, a plain line every few seconds
//! (`BRAID_PROGRESS_S`, default 5). Each shows the iterations, the residual
//! estimate against its target, the elapsed time and, when the run has a
//! budget, a time limit or a target, an ETA from its recent pace.

use std::io::IsTerminal;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use braid::{EngineKind, Progress, ProgressNow};

/// The environment variable that sets the seconds between plain lines.
pub(crate) const EVERY_VAR: &str = "BRAID_PROGRESS_S";
/// Seconds between plain lines when [`EVERY_VAR`] is unset.
const EVERY_S: f64 = 5.0;
/// How often the terminal line is redrawn.
const REDRAW: Duration = Duration::from_millis(250);

/// What a run stops at, to turn counts into a share done.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Subdomain updates per thread (`u64::MAX`: none).
    pub budget: u64,
    /// Subdomains per thread, to show iterations.
    pub per_thread: u64,
    /// Seconds on the engine's clock.
    pub time_limit: Option<f64>,
    /// The relative residual target.
    pub tolerance: Option<f64>,
    pub engine: EngineKind,
}

/// A watcher thread; it ends when dropped (at once, not at its next tick).
pub(crate) struct Watch {
    done: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watch {
    /// Starts watching `progress` on stderr.
    pub(crate) fn start(progress: Progress, limits: Limits) -> Watch {
        let (done, ended) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("braid-progress".into())
            .spawn(move || match std::io::stderr().is_terminal() {
                true => terminal(&progress, limits, &ended),
                false => plain(&progress, limits, &ended, every()),
            })
            .ok();
        Watch {
            done: Some(done),
            thread,
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        drop(self.done.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// `BRAID_PROGRESS_S`, if it is a positive number of seconds.
fn every() -> Duration {
    std::env::var(EVERY_VAR)
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0 && *s <= 1e6)
        .map_or(Duration::from_secs_f64(EVERY_S), Duration::from_secs_f64)
}

/// Waits `tick`, or less when the run ends; false once it has.
fn tick(ended: &mpsc::Receiver<()>, tick: Duration) -> bool {
    matches!(
        ended.recv_timeout(tick),
        Err(mpsc::RecvTimeoutError::Timeout)
    )
}

fn terminal(progress: &Progress, limits: Limits, ended: &mpsc::Receiver<()>) {
    let bar =
        indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
    bar.set_style(
        indicatif::ProgressStyle::with_template("braid: {msg}").expect("a fixed template"),
    );
    let mut pace = Pace::new(Instant::now());
    while tick(ended, REDRAW) {
        let now = progress.now();
        bar.set_message(line(&now, limits, &mut pace));
    }
    bar.finish_and_clear();
}

fn plain(progress: &Progress, limits: Limits, ended: &mpsc::Receiver<()>, every: Duration) {
    let mut pace = Pace::new(Instant::now());
    while tick(ended, every) {
        // A closed stderr must not end the run: the report is what matters.
        use std::io::Write;
        let text = line(&progress.now(), limits, &mut pace);
        let _ = writeln!(std::io::stderr(), "braid: {text}");
    }
}

/// `iteration 1200 of 5000 (24%) · residual 3.2e-4, target 1e-6 · 2.1 s · ETA 6 s`
fn line(now: &ProgressNow, limits: Limits, pace: &mut Pace) -> String {
    let elapsed = pace.start.elapsed().as_secs_f64();
    let (done, by_residual) = share_done(now, limits).unzip();
    let mut parts = Vec::new();
    let iterations = now.most_updates / limits.per_thread.max(1);
    parts.push(match limits.budget {
        u64::MAX => format!("iteration {iterations}"),
        b => format!("iteration {iterations} of {}", b / limits.per_thread.max(1)),
    });
    // A share read off the residual's logarithm steers the ETA but is not
    // shown: its early per cents come fast and its late ones slowly.
    if let (Some(f), Some(false)) = (done, by_residual) {
        parts[0].push_str(&format!(" ({:.0}%)", 100.0 * f));
    }
    if let Some(r) = now.relative_residual() {
        let target = limits
            .tolerance
            .map(|t| format!(", target {t:.0e}"))
            .unwrap_or_default();
        parts.push(format!("residual {r:.1e}{target}"));
    }
    if limits.engine == EngineKind::Sim {
        parts.push(format!("{:.3} s simulated", now.clock_s));
    }
    parts.push(format!("{} elapsed", seconds(elapsed)));
    if let Some(eta) = done.and_then(|f| pace.eta(f)) {
        parts.push(format!("ETA {}", seconds(eta)));
    }
    parts.join(" · ")
}

/// The share of the run done, by whichever limit is nearest: the budget,
/// the time limit, or the residual on a log scale (Jacobi's error falls
/// geometrically once its fast modes are gone); and whether the residual
/// set it.
fn share_done(now: &ProgressNow, limits: Limits) -> Option<(f64, bool)> {
    let budget = (limits.budget != u64::MAX && limits.budget > 0)
        .then(|| now.most_updates as f64 / limits.budget as f64);
    let time = limits
        .time_limit
        .filter(|&t| t > 0.0)
        .map(|t| now.clock_s / t);
    let residual = match (now.relative_residual(), limits.tolerance) {
        (Some(r), Some(tol)) if r > 0.0 && tol > 0.0 && tol < 1.0 => Some(r.ln() / tol.ln()),
        _ => None,
    };
    [(budget, false), (time, false), (residual, true)]
        .into_iter()
        .filter_map(|(f, r)| Some((f?, r)))
        .filter(|(f, _)| f.is_finite())
        .map(|(f, r)| (f.clamp(0.0, 1.0), r))
        .reduce(|a, b| if b.0 > a.0 { b } else { a })
}

/// The recent pace of the share done, for an ETA: the rate since the
/// latest look at least a third of the elapsed time ago, so that the
/// start's pace (the residual's fast modes, the first page faults) fades
/// out.
struct Pace {
    start: Instant,
    looks: std::collections::VecDeque<(f64, f64)>,
}

impl Pace {
    fn new(start: Instant) -> Pace {
        Pace {
            start,
            looks: Default::default(),
        }
    }

    fn eta(&mut self, done: f64) -> Option<f64> {
        let t = self.start.elapsed().as_secs_f64();
        self.looks.push_back((t, done));
        while self.looks.len() > 2 && self.looks[1].0 <= t * 2.0 / 3.0 {
            self.looks.pop_front();
        }
        let &(t0, f0) = self.looks.front()?;
        let rate = (done - f0) / (t - t0);
        (t - t0 > 0.3 && rate > 0.0).then(|| (1.0 - done) / rate)
    }
}

/// `850 ms`, `4.2 s`, `3 min 5 s`: a duration as the progress lines show it.
pub(crate) fn seconds(s: f64) -> String {
    match s {
        s if s < 1.0 => format!("{:.0} ms", s * 1e3),
        s if s < 60.0 => format!("{s:.1} s"),
        s if s < 3600.0 => format!("{} min {} s", (s / 60.0) as u64, (s % 60.0) as u64),
        s => format!(
            "{} h {} min",
            (s / 3600.0) as u64,
            ((s % 3600.0) / 60.0) as u64
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            budget: 4000,
            per_thread: 4,
            time_limit: None,
            tolerance: Some(1e-6),
            engine: EngineKind::Run,
        }
    }

    fn at(updates: u64, residual: Option<f64>) -> ProgressNow {
        ProgressNow {
            most_updates: updates,
            clock_s: 1.0,
            residual_sq: residual.map(|r| r * r),
            r0: Some(1.0),
        }
    }

    #[test]
    fn the_nearest_limit_sets_the_share_done() {
        // A quarter of the budget, a third of the way down to 1e-6 on a
        // log scale: the residual is nearer.
        let (f, by_residual) = share_done(&at(1000, Some(1e-2)), limits()).unwrap();
        assert!((f - 1.0 / 3.0).abs() < 1e-12 && by_residual, "{f}");
        let (f, by_residual) = share_done(&at(3000, Some(1e-2)), limits()).unwrap();
        assert!((f - 0.75).abs() < 1e-12 && !by_residual, "{f}");
        let none = Limits {
            budget: u64::MAX,
            tolerance: None,
            ..limits()
        };
        assert_eq!(share_done(&at(3000, None), none), None);
    }

    #[test]
    fn the_line_shows_iterations_residual_and_target() {
        let mut pace = Pace::new(Instant::now());
        let l = line(&at(1200, Some(3.2e-4)), limits(), &mut pace);
        // The residual is nearer its target than the budget: no per cent.
        assert!(l.starts_with("iteration 300 of 1000 ·"), "{l}");
        assert!(l.contains("residual 3.2e-4, target 1e-6"), "{l}");
        assert!(l.contains("elapsed"), "{l}");
        let l = line(&at(3000, Some(0.1)), limits(), &mut pace);
        assert!(l.starts_with("iteration 750 of 1000 (75%)"), "{l}");
    }

    #[test]
    fn the_eta_follows_the_recent_pace() {
        let start = Instant::now() - Duration::from_secs(10);
        let mut pace = Pace::new(start);
        // Slow at first (10% in 6 s), then 10% a second.
        pace.looks.push_back((2.0, 0.02));
        pace.looks.push_back((6.0, 0.10));
        pace.looks.push_back((8.0, 0.30));
        let eta = pace.eta(0.50).unwrap();
        // From the look at 6 s (a third of 10 s is past the one at 2 s):
        // 0.4 in 4 s, 0.5 left, 5 s.
        assert!((eta - 5.0).abs() < 0.1, "{eta}");
    }
}
