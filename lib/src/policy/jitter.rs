//! The jitter a trigger must see past: how much what a strategy reads
//! (thread rates, object loads) scatters from interval to interval, and
//! the tests that move a subdomain only for an imbalance larger than that.
//!
//! A rate measured over one millisecond swings with where the machine's
//! own noise fell in it: on this machine a quiet thread's rate over 1 ms
//! varies by several percent, and a single preempted interval halves it.
//! Deciding on the last interval alone, quiet uniform runs moved work on
//! that jitter (2026-11-26, 2 threads, 5000 iterations: split up to 16
//! moves, greedy up to 125, and back again). So every strategy now decides
//! on its window ([`super::HISTORY`] intervals):
//!
//! * **Rate-based** (Algorithm 1's predicted moves, stealing, the residual
//!   strategy, hybrid's cross-socket move): a move from `from` (holding
//!   `n_from`) to `to` must help over several intervals, not in one. In each
//!   interval `i` its predicted gain is `g_i = ln(r_to,i / (n_to + 1)) -
//!   ln(r_from,i / n_from)` (the receiver, with one more subdomain, against
//!   the donor now; with `lb_away_cost`, the receiver's work per sweep
//!   counted in updates at home, a guest costing more: `homes.rs`,
//!   [`improves_beyond_by`]); the move is made when the gain in all but a quarter
//!   of the last [`RECENT`] intervals (the second lowest of four) is
//!   positive and more than [`Z`] standard errors above zero: a one-sided
//!   test that the imbalance it removes is real ([`improves_beyond`]). Not
//!   the mean, since a thread that lost its core for an interval or two
//!   (measured in quiet runs here: rates of 2% of the other thread's for 2
//!   ms, the scheduler's time slice) is an outlier, not a trend.
//! * **Load-based** (greedy, refine, anticipate, gossip): they decide on
//!   each subdomain's load and each thread's rate over the last [`RECENT`]
//!   intervals, taken the same way (the second lowest load, the second
//!   highest rate: [`recent`]), and their band, the share by which a
//!   decision must shorten the longest sweep (2% before), is at least [`Z`]
//!   times the pooled relative scatter of the threads' sweep loads over the
//!   window ([`band`]).
//!
//! The scatter is measured robustly over the whole window: the smaller of
//! the median absolute deviations of the values and of their successive
//! differences (`1.4826 x median |x - median x|`, the differences' over
//! `sqrt 2`: each a standard deviation under independent jitter). A change
//! of level (noise that starts) makes one outlying difference and a region
//! that grows makes every difference the same, so neither counts as
//! jitter, where the variance about the mean would count both and hide
//! them; one outlying interval moves the deviation of the values not at
//! all. Nothing
//! moves before the window holds `lb_window` intervals ([`MIN_INTERVALS`]
//! unless configured: [`Reading`]). A real imbalance is consistent from
//! interval to interval, so it passes within a few calls of its start
//! (tested in both engines).

use super::Snapshot;
use super::homes::Shift;

/// Standard errors a mean gain must exceed (one-sided): about a 5% chance
/// of a move on pure jitter per pair and call at the window's length, and
/// far less in a quiet run, where a move must also beat `n / (n + 1)`.
pub(crate) const Z: f64 = 2.0;

/// Intervals measured before any strategy moves anything, unless
/// `lb_window` says otherwise.
pub const MIN_INTERVALS: usize = 3;

/// How a decision reads its window of measurements: the intervals it
/// waits for before anything moves (`lb_window`), and the last ones a
/// load-based decision reads each load and speed over (`lb_recent`). The
/// defaults defend against a real machine's jitter; `{ window: 1, recent:
/// 1 }` reads exact loads as the printed algorithms do, from the first
/// interval on.
///
/// ```
/// use braid::{MIN_INTERVALS, RECENT, Reading};
/// assert_eq!(Reading::DEFAULT, Reading { window: MIN_INTERVALS, recent: RECENT });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reading {
    /// Intervals measured before any strategy moves anything.
    pub window: usize,
    /// The last intervals a load-based decision reads each load (speed)
    /// over, a quarter in from the low (high) end: [`recent`].
    pub recent: usize,
}

impl Reading {
    /// braid's defence against jitter: [`MIN_INTERVALS`] and [`RECENT`].
    pub const DEFAULT: Reading = Reading {
        window: MIN_INTERVALS,
        recent: RECENT,
    };
}

/// The last intervals whose mean gain a rate-based move is judged on: few
/// enough that an imbalance that starts is caught within as many calls;
/// and, unless `lb_recent` says otherwise, those a load-based one reads
/// each load and speed over ([`recent`]).
pub const RECENT: usize = 4;

/// A gain for a donor that made no progress in an interval (a stalled
/// thread): large, but finite, so that the window's mean stays a number.
const STALLED_GAIN: f64 = 7.0;

/// Whether moving one subdomain from thread `from` (holding `n_from`) to
/// thread `to` (holding `n_to`) helps beyond the jitter of their rates
/// over the window `history` (see the top of this file).
///
/// ```
/// use braid::improves_beyond;
/// // Steady rates, the receiver twice as fast: 4 -> 5 subdomains still gains.
/// let steady = vec![vec![100.0, 50.0]; 4];
/// assert!(improves_beyond(&steady, 0, 4, 1, 4));
/// // Equal rates that jitter by 30% now and then: never worth a move.
/// let quiet = vec![vec![100.0, 100.0], vec![100.0, 70.0], vec![100.0, 100.0], vec![70.0, 100.0]];
/// assert!(!improves_beyond(&quiet, 0, 4, 1, 4));
/// // Two intervals are not a window yet.
/// assert!(!improves_beyond(&steady[..2], 0, 4, 1, 4));
/// // A donor that became half as fast three intervals ago: caught.
/// let mut onset = vec![vec![100.0, 100.0]; 5];
/// onset.extend(vec![vec![100.0, 50.0]; 3]);
/// assert!(improves_beyond(&onset, 0, 4, 1, 4));
/// ```
pub fn improves_beyond(
    history: &[Vec<f64>],
    to: usize,
    n_to: usize,
    from: usize,
    n_from: usize,
) -> bool {
    improves_beyond_by(
        history,
        MIN_INTERVALS,
        to,
        from,
        Shift::counted(n_to, n_from),
    )
}

/// [`improves_beyond`] for a move whose receiver's work per sweep changes
/// as `shift` says (a subdomain away from its home costs more, `homes.rs`):
/// its per-subdomain rate after the move is its rate in work over its work
/// per sweep then, `r_to x (work_to / n_to) / work_to_after`; and
/// nothing moves before `history` holds `window` intervals.
///
/// ```
/// use braid::{Shift, improves_beyond_by};
/// // The donor at 0.78 of the receiver's speed: one more subdomain at home
/// // cost pays (1/5 > 0.78/4), one that costs 1.3 away does not (1/5.3 < 0.78/4).
/// let rates = vec![vec![100.0, 78.0]; 4];
/// assert!(improves_beyond_by(&rates, 3, 0, 1, Shift::counted(4, 4)));
/// let away = Shift { work_to_after: 5.3, ..Shift::counted(4, 4) };
/// assert!(!improves_beyond_by(&rates, 3, 0, 1, away));
/// ```
pub fn improves_beyond_by(
    history: &[Vec<f64>],
    window: usize,
    to: usize,
    from: usize,
    shift: Shift,
) -> bool {
    let Shift {
        n_to,
        n_from,
        work_to,
        work_to_after,
    } = shift;
    let k = history.len();
    if k < window.max(1) || n_from == 0 || work_to_after <= 0.0 {
        return false;
    }
    // The receiver's work per update now (1 when it holds nothing).
    let per_update = match n_to {
        0 => 1.0,
        n => work_to / n as f64,
    };
    let mut gains = Vec::with_capacity(k);
    for rates in history {
        let (Some(&r_to), Some(&r_from)) = (rates.get(to), rates.get(from)) else {
            return false;
        };
        let (a, b) = (r_to * per_update / work_to_after, r_from / n_from as f64);
        gains.push(match (a > 0.0, b > 0.0) {
            (true, true) => (a / b).ln(),
            (true, false) => STALLED_GAIN,
            // A receiver that made no progress in the interval (it lost its
            // core): as far from helping as can be, in that interval.
            (false, _) => -STALLED_GAIN,
        });
    }
    // Low in the recent gains: an interval or two in which a thread lost
    // its core (a rate near 0) are outliers, not a trend.
    let mut recent = gains[k.saturating_sub(RECENT)..].to_vec();
    let low = quantile(&mut recent, Tail::Low);
    let sd = jitter_sd(&gains).unwrap_or(0.0);
    low > 0.0 && low > Z * sd / (recent.len() as f64).sqrt()
}

/// The standard deviation of the jitter in `values`, robustly (see the top
/// of this file): the smaller of two median absolute deviations, of the
/// values and of their successive differences, each scaled to a standard
/// deviation under independent jitter. A change of level or a trend moves
/// the first and not the second; one outlying interval makes two outlying
/// differences, which a short window's second cannot outvote, but not the
/// first. `None` for fewer than two values.
fn jitter_sd(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let mad = |v: &mut [f64]| {
        let mid = median(v);
        let mut dev: Vec<f64> = v.iter().map(|x| (x - mid).abs()).collect();
        1.4826 * median(&mut dev)
    };
    let mut d: Vec<f64> = values.windows(2).map(|w| w[1] - w[0]).collect();
    let by_differences = mad(&mut d) / std::f64::consts::SQRT_2;
    let by_values = mad(&mut values.to_vec());
    Some(by_differences.min(by_values))
}

/// The median of `v` (reordered; the mean of the middle two for an even
/// count).
pub(crate) fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n % 2 {
        1 => v[n / 2],
        _ => 0.5 * (v[n / 2 - 1] + v[n / 2]),
    }
}

/// Which tail of the recent intervals an outlier would fall in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tail {
    /// Outliers are high (a load inflated by a preemption): take a low
    /// value, the second lowest of four.
    Low,
    /// Outliers are low (a rate in an interval the thread lost its core):
    /// the second highest of four.
    High,
}

/// `v`'s value a quarter in from `tail` (reordered): the second of four,
/// the first of three or fewer.
pub(crate) fn quantile(v: &mut [f64], tail: Tail) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match tail {
        Tail::Low => v[n / 4],
        Tail::High => v[n - 1 - n / 4],
    }
}

/// Each entry over the last `n` rows of `window` ([`RECENT`] unless
/// `lb_recent` says otherwise), a quarter in from `tail` (`last` when the
/// window has none): what a load-based strategy decides on.
pub(crate) fn recent(window: &[Vec<f64>], last: &[f64], tail: Tail, n: usize) -> Vec<f64> {
    let rows = &window[window.len().saturating_sub(n.max(1))..];
    if rows.is_empty() {
        return last.to_vec();
    }
    (0..last.len())
        .map(|i| {
            let mut v: Vec<f64> = rows.iter().filter_map(|r| r.get(i).copied()).collect();
            match v.is_empty() {
                true => last[i],
                false => quantile(&mut v, tail),
            }
        })
        .collect()
}

/// Thread `t`'s mean rate over the window (its last rate without one):
/// whom a rate-based strategy picks as the receiver, so that one fast
/// interval does not make a thread the receiver.
pub(crate) fn window_rate(snap: &Snapshot<'_>, t: usize) -> f64 {
    let h = snap.history;
    match h.len() {
        0 => snap.rates.get(t).copied().unwrap_or(0.0),
        k => h.iter().filter_map(|r| r.get(t)).sum::<f64>() / k as f64,
    }
}

/// The squared relative scatter of `values` ([`jitter_sd`] over the mean,
/// squared), if there are two or more and their mean is positive.
fn cv2(values: impl Iterator<Item = f64>) -> Option<f64> {
    let values: Vec<f64> = values.collect();
    let mean = values.iter().sum::<f64>() / values.len().max(1) as f64;
    if mean.is_nan() || mean <= 0.0 {
        return None;
    }
    Some((jitter_sd(&values)? / mean).powi(2))
}

/// Each thread's relative scatter (squared) over the window: of its summed
/// object load (its current subdomains', interval by interval) where loads
/// are measured, else of its rate. `None` for a thread with fewer than two
/// intervals or nothing measured.
pub(crate) fn scatter2(snap: &Snapshot<'_>, measured: bool) -> Vec<Option<f64>> {
    let threads = snap.threads();
    if measured {
        let sums: Vec<Vec<f64>> = snap
            .load_history
            .iter()
            .map(|loads| super::sums_by_thread(snap.owners, loads, threads))
            .collect();
        return (0..threads)
            .map(|t| cv2(sums.iter().map(|row| row[t])))
            .collect();
    }
    (0..threads)
        .map(|t| cv2(snap.history.iter().filter_map(|r| r.get(t).copied())))
        .collect()
}

/// Whether the window is long enough to decide on: `lb_window`
/// ([`Reading::window`]) intervals measured (of rates, which every call measures; object loads
/// start a call or two later, and across ranks, where a call decided apart
/// measures only its own, not at all).
pub(crate) fn enough(snap: &Snapshot<'_>) -> bool {
    snap.history.len() >= snap.reading.window
}

/// The band a load-based decision must beat: at least `floor`, and at
/// least [`Z`] times the pooled relative scatter of the threads' sweep
/// loads (`scatter2`, the root of their mean; threads without one left
/// out).
pub(crate) fn band(floor: f64, scatter2: &[Option<f64>]) -> f64 {
    let (n, sum) = scatter2
        .iter()
        .flatten()
        .fold((0usize, 0.0), |(n, s), v| (n + 1, s + v));
    match n {
        0 => floor,
        n => floor.max(Z * (sum / n as f64).sqrt()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_moves_before_the_window_holds_lb_window_intervals() {
        // A donor at half the receiver's rate, as steady as can be.
        let steady = vec![vec![100.0, 50.0]; 3];
        for window in 1..=3 {
            for k in 1..=3 {
                let moves = improves_beyond_by(&steady[..k], window, 0, 1, Shift::counted(4, 4));
                assert_eq!(moves, k >= window, "window {window}, {k} intervals");
            }
        }
        let (counts, owners) = ([0u64; 2], [0usize, 1]);
        let mut snap = Snapshot::of(&counts, &owners, &[0, 0]);
        snap.history = &steady[..1];
        assert!(!enough(&snap));
        snap.reading.window = 1;
        assert!(enough(&snap));
    }

    #[test]
    fn a_real_imbalance_passes_and_jitter_does_not() {
        // A core at half speed, measured with 10% jitter: passes.
        let slow: Vec<Vec<f64>> = [1.0, 1.1, 0.9, 1.05, 0.95]
            .iter()
            .map(|j| vec![100.0 * j, 50.0 / j])
            .collect();
        assert!(improves_beyond(&slow, 0, 4, 1, 4));
        // 19% slower: holding one more, the fast thread would be slower per
        // subdomain than the slow one is now (0.2 < 0.2025): no gain.
        let mild = vec![vec![100.0, 81.0]; 5];
        assert!(!improves_beyond(&mild, 0, 4, 1, 4));
        // One interval in which the donor was preempted: not a trend.
        let blip = vec![
            vec![100.0, 100.0],
            vec![100.0, 100.0],
            vec![100.0, 20.0],
            vec![100.0, 100.0],
        ];
        assert!(!improves_beyond(&blip, 0, 4, 1, 4));
        // A donor that stalls throughout gives.
        assert!(improves_beyond(&vec![vec![100.0, 0.0]; 3], 0, 4, 1, 4));
        // A receiver that stalled in one interval of three: not a window
        // the move helps in all but a quarter of.
        assert!(!improves_beyond(
            &[vec![100.0, 10.0], vec![0.0, 10.0], vec![100.0, 10.0]],
            0,
            4,
            1,
            4
        ));
        // ... but one of four is an outlier.
        assert!(improves_beyond(
            &[
                vec![100.0, 10.0],
                vec![0.0, 10.0],
                vec![100.0, 10.0],
                vec![100.0, 10.0]
            ],
            0,
            4,
            1,
            4
        ));
    }

    #[test]
    fn the_band_is_the_jitter_it_must_see_past() {
        assert_eq!(band(0.02, &[]), 0.02);
        assert_eq!(band(0.02, &[None, Some(0.0)]), 0.02);
        // 5% scatter: twice that.
        let b = band(0.02, &[Some(0.0025), Some(0.0025), None]);
        assert!((b - 0.1).abs() < 1e-12, "{b}");
        assert_eq!(cv2([2.0, 2.0, 2.0].into_iter()), Some(0.0));
        assert_eq!(cv2([2.0].into_iter()), None);
        assert_eq!(cv2([0.0, 0.0].into_iter()), None);
    }

    #[test]
    fn a_change_of_level_or_a_trend_is_not_jitter_and_alternation_is() {
        let step = [100.0, 100.0, 100.0, 100.0, 90.0, 90.0, 90.0, 90.0];
        assert_eq!(jitter_sd(&step), Some(0.0));
        let trend = [4.0, 4.3, 4.6, 4.9, 5.2];
        assert!(jitter_sd(&trend).unwrap() < 1e-9);
        // Independent jitter of sd 1 (a fixed sample): about 1.
        let noise = [0.3, -1.2, 0.8, 1.9, -0.4, -1.1, 0.6, 0.1, -0.9, 1.4];
        let sd = jitter_sd(&noise).unwrap();
        assert!((0.5..2.0).contains(&sd), "{sd}");
        assert_eq!(jitter_sd(&[1.0]), None);
    }
}
