//! When a run computes its residual: in rounds, on a schedule derived from
//! the convergence measured so far, so that a residual target costs a few
//! residual sweeps per thousand instead of one per update.
//!
//! A sweep that also sums its residual costs 11-19% more than a plain one
//! (the centre's load and the sum, in braid and in C alike: `git show
//! 333740e:docs/speed.md`),
//! and computed at every update that was what a tolerance cost a run: 0.80
//! to 0.89 of the rate without one.
//!
//! # Rounds
//!
//! Round `R` asks every subdomain for its local residual: each subdomain's
//! next update whose last residual is of an earlier round computes it, of
//! the state it updates ([`computes`]). The round is complete once every
//! subdomain's last residual is of round `R`; then, and only then, the
//! estimate (their sum) is looked at ([`ResidualSchedule::look`]): met, the
//! run stops (and if the grid refutes it, the round is looked at again
//! under the tightened line); else the next round is *issued* once the
//! progress (the mean count) reaches the point the schedule sets. State
//! 0's residual is the problem's `||r0||`, known without a sweep; the first
//! round is issued at progress one. One thread looks: sync's barrier leader
//! (every iteration), the monitor (every millisecond), across ranks the
//! exchanging thread on what all ranks agreed, the simulator after every
//! event.
//!
//! # Where the next round falls
//!
//! From the last two rounds, at mean counts `a < b` with squared estimates
//! `e_a` and `e_b`, the mean factor per sweep is `q = (e_b / e_a)^(1 / (b -
//! a))` (or, where that does not fall, as an asynchronous estimate may not
//! from one round to the next, the mean factor since the start, from
//! `||r0||`; the smaller of the two where both fall). For synchronous Jacobi on this problem `r_{k+1} = G r_k` with `G =
//! I - A / 4` symmetric (the diagonal is 4 everywhere), so `||r_k||` is
//! log-convex in `k`: by Cauchy-Schwarz, `||G^k r||^2 = <G^(k-1) r, G^(k+1)
//! r> <= ||G^(k-1) r|| ||G^(k+1) r||`, so the factor per sweep never falls,
//! and no later sweep shrinks the residual by more than `q`. The first
//! sweep whose residual can meet the line `L` is therefore at least `m =
//! log(L / e_b) / log(q)` sweeps after `b`. The next round is issued
//! `max(1, min(MAX_GAP, floor(SAFETY x m)))` sweeps after `b`: it cannot
//! skip the first sweep that meets the line. In sync every subdomain is at
//! the same count at the barrier where the leader issues a round, so the
//! round's residuals are of exactly that sweep, and **sync stops at exactly
//! the sweep it stopped at when every sweep computed its residual**: after
//! sweeping the first state `k` with `||r_k|| <= tolerance x ||r0||`,
//! ending with state `k + 1` (tested bit for bit in both engines).
//! `SAFETY = 1/2` covers rounding, which the argument ignores.
//! Asynchronous runs have no such bound (a round's residuals are of
//! different counts, against stale halos), and are looked at once a monitor
//! period, so their rounds are at least a period apart.
//!
//! # The last stretch
//!
//! Once the line is predicted within two looks' progress, every update
//! computes its residual again ([`Ask::Every`]) and every look reads the
//! latest estimate, as before rounds: a round's estimate would otherwise be
//! a period older than the look that reads it, and a run would stop a
//! period late. In sync a look comes every sweep, so this is the last two
//! sweeps at most.

use super::EstimateLine;

/// Sweeps between two rounds at most: the cost of a residual sweep
/// (0.11-0.19 of a plain one) over 64 sweeps is at most 0.3% of the rate.
pub(crate) const MAX_GAP: u64 = 64;

/// The share of the predicted sweeps to the line that the next round waits.
pub(crate) const SAFETY: f64 = 0.5;

/// What one look at a run sees of its residuals.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Look {
    /// The least round of every subdomain's last residual.
    pub done: u64,
    /// The mean count of the states those residuals are of.
    pub at: f64,
    /// Their sum.
    pub estimate_sq: f64,
    /// The mean count of the subdomains now.
    pub progress: f64,
}

/// What the subdomains are asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ask {
    /// Their residual once, for round `n` (0: none yet).
    Round(u64),
    /// Their residual at every update, from round `n` on.
    Every(u64),
}

impl Ask {
    /// As one word, for an engine that keeps it in an atomic.
    pub(crate) fn to_bits(self) -> u64 {
        match self {
            Ask::Round(n) => n,
            Ask::Every(n) => n | EVERY,
        }
    }

    pub(crate) fn from_bits(bits: u64) -> Self {
        match bits & EVERY {
            0 => Ask::Round(bits),
            _ => Ask::Every(bits & !EVERY),
        }
    }

    /// Whether an update of a subdomain whose last residual is of round
    /// `last` (0: none yet) computes its residual, and for which round.
    #[inline]
    pub(crate) fn computes(self, last: u64) -> Option<u64> {
        match self {
            Ask::Round(n) => (last < n).then_some(n),
            Ask::Every(n) => Some(n),
        }
    }
}

/// [`Ask::Every`]'s bit in [`Ask::to_bits`].
const EVERY: u64 = 1 << 63;

/// The schedule of residual rounds of one run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ResidualSchedule {
    /// The round the subdomains are asked for (0: none yet).
    round: u64,
    /// Whether that round's estimate has been looked at.
    looked: bool,
    /// Whether every update computes its residual now (the last stretch).
    every: bool,
    /// The progress at which the next round is issued.
    due: f64,
    /// The last round looked at: its mean count and its squared estimate.
    last: (f64, f64),
    /// State 0's squared residual.
    r0_sq: f64,
    /// The progress at the last look, and how far it came since the one
    /// before.
    looked_at: f64,
    per_look: f64,
}

impl ResidualSchedule {
    /// A run whose initial state's squared residual is `r0_sq`.
    pub(crate) fn new(r0_sq: f64) -> Self {
        ResidualSchedule {
            round: 0,
            looked: true,
            every: false,
            due: 1.0,
            last: (0.0, r0_sq),
            r0_sq,
            looked_at: 0.0,
            per_look: 0.0,
        }
    }

    /// What the subdomains are asked for.
    pub(crate) fn ask(&self) -> Ask {
        match self.every {
            false => Ask::Round(self.round),
            true => Ask::Every(self.round),
        }
    }

    /// Whether the round asked for has completed and not been looked at.
    fn pending(&self, done: u64) -> bool {
        !self.looked && done >= self.round
    }

    /// Whether [`Self::look`] reads the estimate, the least round of every
    /// subdomain's last residual being `done` (the caller may skip summing
    /// it otherwise, and pass anything).
    pub(crate) fn reads_estimate(&self, done: u64) -> bool {
        self.pending(done) || (self.every && done >= self.round)
    }

    /// One look at the run: whether a complete round's estimate meets
    /// `line`. A complete round that misses sets where the next is issued,
    /// and a round is issued once the progress is there.
    pub(crate) fn look(&mut self, seen: Look, line: &EstimateLine) -> bool {
        self.per_look = (seen.progress - self.looked_at).max(0.0);
        self.looked_at = seen.progress;
        // In the last stretch every look reads the latest estimate, once
        // every subdomain has computed one in it.
        let complete = match self.every {
            true => seen.done >= self.round,
            false => self.pending(seen.done),
        };
        if complete {
            if line.met(seen.estimate_sq) {
                return true;
            }
            self.looked = true;
            let (a, e_a) = self.last;
            let line_sq = line.line_sq();
            let rate = |span: f64, e_a: f64| falling(span, e_a, seen.estimate_sq);
            let per_sweep = match (rate(seen.at - a, e_a), rate(seen.at, self.r0_sq)) {
                (Some(last), Some(run)) => Some(last.min(run)),
                (last, run) => last.or(run),
            };
            let sweeps = per_sweep.and_then(|p| sweeps_to_line(p, seen.estimate_sq, line_sq));
            self.last = (seen.at, seen.estimate_sq);
            self.due = seen.at + sweeps.map_or(1, gap) as f64;
            // Into the last stretch while the line is predicted within two
            // looks' progress; out of it while it is not (early on, when the
            // residual falls fastest, the bound is loose).
            let near = sweeps.is_some_and(|s| s <= 2.0 * self.per_look);
            match (self.every, near) {
                (false, true) => {
                    self.every = true;
                    self.round += 1;
                    self.looked = false;
                    return false;
                }
                (true, false) => self.every = false,
                (true, true) => return false,
                (false, false) => {}
            }
        }
        if !self.every && self.looked && seen.progress >= self.due {
            self.round += 1;
            self.looked = false;
        }
        false
    }
}

fn usable(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

/// The log of the mean factor per sweep from squared estimate `e_a` to
/// `e_b`, `span` sweeps apart, if it falls.
fn falling(span: f64, e_a: f64, e_b: f64) -> Option<f64> {
    if !(span > 0.0 && usable(e_a) && usable(e_b)) {
        return None;
    }
    let per_sweep = (e_b / e_a).ln() / span;
    (per_sweep < 0.0).then_some(per_sweep)
}

/// The least number of sweeps before squared estimate `e` can meet the
/// line `line_sq`, falling by at most `per_sweep` (a log, negative) per
/// sweep (see the top of this file); infinite without a line.
fn sweeps_to_line(per_sweep: f64, e: f64, line_sq: f64) -> Option<f64> {
    if line_sq == f64::NEG_INFINITY {
        return Some(f64::INFINITY);
    }
    if !(usable(e) && usable(line_sq)) {
        return None;
    }
    Some(((line_sq / e).ln() / per_sweep).max(0.0))
}

/// The sweeps to the next round, for the line at least `sweeps` away.
fn gap(sweeps: f64) -> u64 {
    ((SAFETY * sweeps).floor().min(MAX_GAP as f64) as u64).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sync in miniature: at each barrier every subdomain is at count `k`;
    /// a round issued there is computed of state `k`, and looked at the
    /// next barrier. Returns the state whose residual stopped it and the
    /// rounds computed.
    fn sync_run(e: impl Fn(u64) -> f64, line: f64) -> (u64, u64) {
        let mut s = ResidualSchedule::new(e(0));
        let (mut last_round, mut last_at, mut rounds) = (0, 0, 0);
        for k in 0.. {
            let seen = Look {
                done: last_round,
                at: last_at as f64,
                estimate_sq: e(last_at),
                progress: k as f64,
            };
            if s.look(seen, &EstimateLine::from_bits(line.to_bits())) {
                return (last_at, rounds);
            }
            // The pass at count k.
            if let Some(round) = s.ask().computes(last_round) {
                (last_round, last_at) = (round, k);
                rounds += 1;
            }
        }
        unreachable!()
    }

    #[test]
    fn a_subdomain_computes_once_per_round_and_every_time_at_the_end() {
        assert_eq!(Ask::Round(3).computes(2), Some(3));
        assert_eq!(Ask::Round(1).computes(0), Some(1));
        assert_eq!(Ask::Round(3).computes(3), None, "already in this round");
        assert_eq!(Ask::Round(0).computes(0), None, "no round asked for yet");
        assert_eq!(Ask::Every(3).computes(3), Some(3));
        for a in [Ask::Round(0), Ask::Round(7), Ask::Every(0), Ask::Every(7)] {
            assert_eq!(Ask::from_bits(a.to_bits()), a);
        }
    }

    #[test]
    fn rounds_come_closer_as_the_line_nears_and_never_pass_it() {
        // A residual falling by 1% per sweep from 1: the line at 1e-4 (in
        // squares 1e-8) is first met by state 917 (0.99^(2k) <= 1e-8).
        let e = |k: u64| 0.99f64.powi(2 * k as i32);
        let line = 1e-8;
        let first = (0..).find(|&k| e(k) <= line).unwrap();
        let (stopped, rounds) = sync_run(e, line);
        assert_eq!(
            stopped, first,
            "the round that meets the line is its first sweep"
        );
        // Far fewer rounds than sweeps: 917 / 64 and a few near the line.
        assert!(rounds < first / 10, "{rounds} rounds for {first} sweeps");
    }

    #[test]
    fn a_slowing_residual_is_never_overtaken() {
        // Log-convex: fast at first, then slower and slower (two modes).
        let e = |k: u64| 0.5f64.powi(k as i32) + 1e-3 * 0.999f64.powi(k as i32);
        let line = 2e-4;
        let first = (0..).find(|&k| e(k) <= line).unwrap();
        assert_eq!(sync_run(e, line).0, first);
    }

    #[test]
    fn a_complete_round_is_looked_at_once_and_a_refuted_one_again() {
        let mut s = ResidualSchedule::new(1.0);
        let look = |done, estimate_sq, progress| Look {
            done,
            at: 1.0,
            estimate_sq,
            progress,
        };
        let line = |l: f64| EstimateLine::from_bits(l.to_bits());
        assert!(!s.look(look(0, 1.0, 1.0), &line(0.1)));
        assert_eq!(s.ask(), Ask::Round(1));
        assert!(
            !s.look(look(0, 1.0, 1.5), &line(0.1)),
            "round 1 not complete"
        );
        assert!(s.look(look(1, 0.05, 2.0), &line(0.1)), "complete and met");
        // Refuted by the grid: the line tightens and the round is looked at
        // again.
        assert!(
            !s.look(look(1, 0.05, 2.0), &line(0.01)),
            "looked at again, tighter"
        );
        assert_eq!(s.ask(), Ask::Round(2), "and the next issued");
    }

    #[test]
    fn near_the_line_every_update_computes_and_every_look_reads_the_latest() {
        // Async in miniature: 100 sweeps between looks, 1% per sweep.
        let e = |k: f64| 0.99f64.powf(2.0 * k);
        let line = EstimateLine::from_bits(1e-8f64.to_bits());
        let mut s = ResidualSchedule::new(1.0);
        let (mut done, mut at) = (0, 0.0);
        for look in 1.. {
            let progress = 100.0 * look as f64;
            let seen = Look {
                done,
                at,
                estimate_sq: e(at),
                progress,
            };
            if s.look(seen, &line) {
                // Met at the first look after the line (sweep 917), as when
                // every update computed it.
                assert_eq!(progress, 1000.0);
                return;
            }
            // Between two looks each subdomain computes once if asked, of
            // the state just after the look, or at every update, the last.
            match s.ask() {
                Ask::Round(n) if n > done => (done, at) = (n, progress + 1.0),
                Ask::Every(n) => (done, at) = (n, progress + 99.0),
                Ask::Round(_) => {}
            }
        }
    }

    #[test]
    fn a_residual_that_does_not_fall_is_looked_at_again_a_sweep_later() {
        let next = |span, e_a, e_b: f64, line| {
            let sweeps = falling(span, e_a, e_b).and_then(|p| sweeps_to_line(p, e_b, line));
            sweeps.map_or(1, gap)
        };
        assert_eq!(next(3.0, 1.0, 1.0, 1e-8), 1);
        assert_eq!(next(3.0, 1.0, 2.0, 1e-8), 1);
        assert_eq!(next(3.0, f64::INFINITY, 1.0, 1e-8), 1);
        assert_eq!(next(3.0, 1.0, 1e-9, 1e-8), 1, "already met");
        assert_eq!(next(0.0, 1.0, 0.5, 1e-8), 1, "no span");
        assert_eq!(next(1.0, 1.0, 0.5, 1e-60), MAX_GAP);
        assert_eq!(next(1.0, 1.0, 0.5, f64::NEG_INFINITY), MAX_GAP, "no line");
    }

    #[test]
    fn an_estimate_that_rises_for_a_round_falls_back_on_the_runs_mean() {
        // Async: a round's estimate above the last one's. Far from the
        // line, the mean since the start still spaces the rounds out, and
        // the last stretch does not start.
        let mut s = ResidualSchedule::new(1.0);
        let line = EstimateLine::from_bits(1e-30f64.to_bits());
        let look = |done, at, estimate_sq, progress| Look {
            done,
            at,
            estimate_sq,
            progress,
        };
        s.look(look(0, 0.0, 1.0, 1.0), &line);
        s.look(look(1, 1.0, 0.99, 200.0), &line);
        assert_eq!(s.ask(), Ask::Round(2));
        s.look(look(2, 201.0, 0.995, 400.0), &line);
        assert_eq!(s.ask(), Ask::Round(3), "{s:?}");
        assert_eq!(s.due, 201.0 + MAX_GAP as f64, "{s:?}");
    }
}
