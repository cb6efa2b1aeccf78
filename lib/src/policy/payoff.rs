//! Whether a call's moves pay for themselves (`lb_gate = payoff`): each
//! move forecast in the solver's own time, with what the engine measured a
//! subdomain away from its home to cost.
//!
//! Why a gate. A strategy decides on rates or loads: it moves work from a
//! thread that is slower per subdomain to one that is faster. That spreads
//! progress, but it is not time to solution. Measured on real cores
//! (2026-11-28, 2 threads of 4 subdomains, 150² each, a 19% parasite on
//! core 0): split, greedy and steal moved, and ended 8-11% slower than
//! plain async(4). A guest, swept on its own outside its domain's slab,
//! measured 1.76 times the load of its home siblings, and the slowest-mode
//! model gives a perfect balancer only 2.2 points there: no whole move can
//! pay, and a balancer that cannot win must stay still (the speed log,
//! 2026-11-27 and 28, `git show 333740e:docs/speed.md`).
//!
//! **The forecast** is `forecast.rs`'s, asked of a move. Jacobi converges
//! as its slowest error mode, and an asynchronous run's time per unit of
//! progress is the mode-weighted mean of each subdomain's time per update,
//! its owner's pass: `T = sum_t w_t P_t`, where `w_t` is the mode's share
//! held by thread `t`'s subdomains and `P_t = W_t / k_t` its pass: `W_t`
//! its work per pass in updates at home (a guest counts `1 + a`; under a
//! workload each subdomain counts its measured load), `k_t` the work it
//! does per second, its updates per second over the window (bursty noise
//! averages out there) times its work per update. A move of `s` from `A`
//! to `B` takes `s`'s work off `A`'s pass, adds its work at `B` to `B`'s,
//! and carries its weight; it is made when `T` drops by more than
//! [`MARGIN`]. Moves are judged in order, each seeing the ones before it.
//!
//! **A guest's cost.** `s` costs `b_s` at home and `b_s (1 + a)` anywhere
//! else (`homes.rs`). `a` is measured by the engine where the work is
//! uniform: each guest's load over the mean load of the subdomains at
//! home on its thread (the same core, cache and speed), less 1, the median
//! over the guests ([`measured_away`]); the caller keeps the median of the
//! last [`AWAY_MEMORY`] calls that had a guest, and before any had one it
//! uses the cost model's (`lb_away_cost = auto`'s). A guest whose stay no
//! longer pays (the prior was too low, or the noise that sent it went)
//! goes home when that shortens `T` by more than [`MARGIN`].
//!
//! The gate reads only the snapshot, so both engines apply it alike (the
//! one schedule core, `schedule/calls.rs`). A call decided apart across
//! ranks sees only its own threads and is not gated.

use serde::{Deserialize, Serialize};

use super::jitter::{Tail, enough, median, recent, window_rate};
use super::{Move, Snapshot};

/// `lb_gate`: what a call's moves must pass once its strategy decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Gate {
    /// Every move the strategy makes is made.
    #[default]
    None,
    /// Only moves that shorten the forecast time ([`paying`]).
    Payoff,
}

impl Gate {
    /// Whether this is the default (reports leave it out, so that they
    /// read as before the key existed).
    pub fn is_none(&self) -> bool {
        *self == Gate::None
    }
}

/// How much shorter (as a share) the forecast time must get before a move
/// is made, or a guest sent home: what the forecast does not see (a move's
/// cold caches, the call itself) and its own error, so that a move near
/// the break-even is not made on one measurement and undone on the next.
pub(super) const MARGIN: f64 = 0.02;

/// Calls with a guest whose measured away costs the caller keeps.
pub(crate) const AWAY_MEMORY: usize = 4;

/// The smallest capacity a thread is taken to have, as a share of the
/// fastest's: a thread that made no progress is very slow, not infinitely.
const MIN_SPEED: f64 = 1e-3;

/// The moves of `moves` that shorten the forecast time by more than
/// [`MARGIN`], in order, each judged on the owners the earlier ones leave;
/// if none is, every guest whose going home shortens it by as much. `shares` is
/// each subdomain's share of the slowest mode (`forecast::sub_shares`),
/// `away` what a subdomain costs away from home over at home, less 1.
/// Before a window of rates is measured nothing is known to pay, and
/// nothing moves.
///
/// ```
/// use braid::{Homes, Move, Snapshot, paying};
/// // Two threads of two subdomains, equal mode shares; thread 0 updates
/// // at 0.6 of thread 1's rate.
/// let (owners, shares) = ([0, 0, 1, 1], [0.25; 4]);
/// let rates = [0.6, 1.0];
/// let window = vec![rates.to_vec(); 3];
/// let snap = Snapshot { rates: &rates, history: &window, uniform_work: true,
///                       homes: Homes { per_domain: 2, away_cost: 0.0 },
///                       ..Snapshot::of(&[5; 4], &owners, &[0, 0]) };
/// let give = vec![Move { sub: 0, from: 0, to: 1 }];
/// // With a guest at 1.2 of a home subdomain's work the move loses:
/// // T = 0.5 x 2 / 0.6 + 0.5 x 2 = 2.67 before, 0.25 x 1 / 0.6 + 0.75 x 3.2
/// // = 2.82 after.
/// assert!(paying(&snap, &shares, 0.2, give.clone()).is_empty());
/// // Thread 0 at 0.3 of the rate: 4.33 before, 3.23 after: it pays.
/// let (rates, window) = ([0.3, 1.0], vec![vec![0.3, 1.0]; 3]);
/// let snap = Snapshot { rates: &rates, history: &window, ..snap };
/// assert_eq!(paying(&snap, &shares, 0.2, give.clone()), give);
/// ```
pub fn paying(snap: &Snapshot<'_>, shares: &[f64], away: f64, moves: Vec<Move>) -> Vec<Move> {
    let Some(mut f) = Forecast::of(snap, shares, away) else {
        return Vec::new();
    };
    let mut kept = Vec::with_capacity(moves.len());
    for m in moves {
        let margin = MARGIN * f.total();
        if f.owners[m.sub] == m.from && m.from != m.to && f.gain(m.sub, m.to) > margin {
            f.apply(m.sub, m.to);
            kept.push(m);
        }
    }
    // A call that moved work sends nothing home: a guest going home to a
    // thread that just gave one away would only trade one guest for another.
    if !kept.is_empty() {
        return kept;
    }
    for s in 0..f.owners.len() {
        let Some(home) = snap.homes.of(s) else {
            continue;
        };
        let from = f.owners[s];
        if home != from && home < f.capacity.len() && f.gain(s, home) > MARGIN * f.total() {
            f.apply(s, home);
            kept.push(Move {
                sub: s,
                from,
                to: home,
            });
        }
    }
    kept
}

/// What a subdomain away from its home costs over one at home on the same
/// thread, less 1, as this snapshot measured it: for uniform work, the
/// median over the guests of each one's load over the mean load of the
/// subdomains at home on its owner; `None` without a guest beside home
/// subdomains, measured loads, or uniform work (a subdomain's own work
/// would then count as its cost away). At least 0: a guest loses its
/// slab's shared costs and never gains any.
///
/// ```
/// use braid::{Homes, Snapshot, measured_away};
/// // Subdomain 1 (home: thread 0) is away on thread 1, at 1.8 of the load
/// // of thread 1's own.
/// let (owners, loads) = ([0, 1, 1, 1], [1.0, 1.8, 1.0, 1.0]);
/// let snap = Snapshot { loads: &loads, uniform_work: true,
///                       homes: Homes { per_domain: 2, away_cost: 0.0 },
///                       ..Snapshot::of(&[5; 4], &owners, &[0, 0]) };
/// assert!((measured_away(&snap).unwrap() - 0.8).abs() < 1e-12);
/// let home = Snapshot { owners: &[0, 0, 1, 1], ..snap };
/// assert_eq!(measured_away(&home), None);
/// ```
pub fn measured_away(snap: &Snapshot<'_>) -> Option<f64> {
    let n = snap.owners.len();
    if !snap.uniform_work || snap.loads.len() != n || snap.homes.per_domain == 0 {
        return None;
    }
    let threads = snap.threads();
    let (mut sum, mut count) = (vec![0.0; threads], vec![0usize; threads]);
    for (s, &o) in snap.owners.iter().enumerate() {
        if snap.homes.of(s) == Some(o) && snap.loads[s] > 0.0 {
            sum[o] += snap.loads[s];
            count[o] += 1;
        }
    }
    let mut ratios: Vec<f64> = (0..n)
        .filter_map(|s| {
            let o = snap.owners[s];
            let guest = snap.homes.of(s) != Some(o);
            (guest && count[o] > 0 && snap.loads[s] > 0.0)
                .then(|| snap.loads[s] * count[o] as f64 / sum[o] - 1.0)
        })
        .collect();
    (!ratios.is_empty()).then(|| median(&mut ratios).max(0.0))
}

/// The forecast's state: each thread's pass (its work in updates at home,
/// over its capacity), its share of the mode.
struct Forecast<'a> {
    snap: &'a Snapshot<'a>,
    shares: &'a [f64],
    away: f64,
    owners: Vec<usize>,
    /// Each subdomain's work per update at home (1 for uniform work).
    base: Vec<f64>,
    work: Vec<f64>,
    weight: Vec<f64>,
    /// Work at home each thread does per second.
    capacity: Vec<f64>,
}

impl<'a> Forecast<'a> {
    fn of(snap: &'a Snapshot<'a>, shares: &'a [f64], away: f64) -> Option<Self> {
        let (n, threads) = (snap.owners.len(), snap.threads());
        if shares.len() != n || !enough(snap) || snap.rates.len() != threads {
            return None;
        }
        let away = away.max(0.0);
        let at_home = |s: usize| snap.homes.of(s).is_none_or(|h| h == snap.owners[s]);
        // What each subdomain's update is worth: the same for uniform work
        // (a slow core's loads would otherwise follow its subdomains),
        // else its measured load, at home.
        let base: Vec<f64> = match snap.uniform_work || snap.loads.len() != n {
            true => vec![1.0; n],
            false => {
                let loads = recent(
                    snap.load_history,
                    snap.loads,
                    Tail::Low,
                    snap.reading.recent,
                );
                (0..n)
                    .map(|s| match at_home(s) {
                        true => loads[s],
                        false => loads[s] / (1.0 + away),
                    })
                    .collect()
            }
        };
        let mut f = Forecast {
            snap,
            shares,
            away,
            owners: snap.owners.to_vec(),
            base,
            work: vec![0.0; threads],
            weight: vec![0.0; threads],
            capacity: vec![0.0; threads],
        };
        let mut held = vec![0usize; threads];
        for (s, &share) in shares.iter().enumerate() {
            let o = f.owners[s];
            f.work[o] += f.cost(s, o);
            f.weight[o] += share;
            held[o] += 1;
        }
        // A thread's updates per second over the window, each worth its
        // work per update: bursty noise averages out over the window.
        for (t, &h) in held.iter().enumerate().filter(|&(_, &h)| h > 0) {
            f.capacity[t] = window_rate(snap, t) * f.work[t] / h as f64;
        }
        let known: Vec<f64> = f.capacity.iter().copied().filter(|&c| c > 0.0).collect();
        let fallback = known.iter().sum::<f64>() / known.len().max(1) as f64;
        let floor = MIN_SPEED * known.iter().copied().fold(0.0, f64::max);
        for (c, &h) in f.capacity.iter_mut().zip(&held) {
            *c = match h {
                0 => fallback,
                _ => c.max(floor),
            };
        }
        (floor > 0.0).then_some(f)
    }

    /// `s`'s work per update on thread `t`.
    fn cost(&self, s: usize, t: usize) -> f64 {
        match self.snap.homes.of(s) {
            Some(h) if h != t => self.base[s] * (1.0 + self.away),
            _ => self.base[s],
        }
    }

    /// Thread `t`'s term of the forecast time with `work` and `weight`.
    fn term(&self, t: usize, work: f64, weight: f64) -> f64 {
        weight * work / self.capacity[t]
    }

    /// The forecast time now.
    fn total(&self) -> f64 {
        (0..self.capacity.len())
            .map(|t| self.term(t, self.work[t], self.weight[t]))
            .sum()
    }

    /// How much shorter the forecast time gets when `s` goes to `to`.
    fn gain(&self, s: usize, to: usize) -> f64 {
        let from = self.owners[s];
        let (w, c_from, c_to) = (self.shares[s], self.cost(s, from), self.cost(s, to));
        let before = self.term(from, self.work[from], self.weight[from])
            + self.term(to, self.work[to], self.weight[to]);
        let after = self.term(from, self.work[from] - c_from, self.weight[from] - w)
            + self.term(to, self.work[to] + c_to, self.weight[to] + w);
        before - after
    }

    fn apply(&mut self, s: usize, to: usize) {
        let from = self.owners[s];
        self.work[from] -= self.cost(s, from);
        self.weight[from] -= self.shares[s];
        self.work[to] += self.cost(s, to);
        self.weight[to] += self.shares[s];
        self.owners[s] = to;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Homes;

    const HOMES: Homes = Homes {
        per_domain: 4,
        away_cost: 0.0,
    };

    fn mv(sub: usize, from: usize, to: usize) -> Move {
        Move { sub, from, to }
    }

    /// Two threads of four subdomains each (as `owners` says), every
    /// subdomain an eighth of the mode, each thread doing `capacity` work
    /// at home per second over a steady window, a guest costing `1 + away`.
    fn pair(owners: &'static [usize], capacity: [f64; 2], away: f64) -> Snapshot<'static> {
        let rates: Vec<f64> = (0..2)
            .map(|t| {
                let mine = (0..8).filter(|&s| owners[s] == t);
                let work: f64 = mine
                    .clone()
                    .map(|s| HOMES.cost(s, t) + away * f64::from(u8::from(s / 4 != t)))
                    .sum();
                capacity[t] * mine.count() as f64 / work
            })
            .collect();
        Snapshot {
            rates: Box::leak(rates.clone().into_boxed_slice()),
            history: crate::policy::steady(&rates),
            uniform_work: true,
            homes: HOMES,
            ..Snapshot::of(&[9; 8], owners, &[0, 0])
        }
    }

    const EVEN: [f64; 8] = [0.125; 8];
    const HOME: [usize; 8] = [0, 0, 0, 0, 1, 1, 1, 1];

    #[test]
    fn a_move_off_a_parasites_core_that_a_guests_cost_outweighs_is_not_made() {
        // The measured case: the noisy core at 0.65 of the other's speed
        // and a guest at 1.76 times a home subdomain's load.
        let snap = pair(&HOME, [0.65, 1.0], 0.0);
        assert!(paying(&snap, &EVEN, 0.76, vec![mv(3, 0, 1)]).is_empty());
        // T = 5.08 before; 5.33 after with that guest, 4.92 with one at
        // 1.1 of a home subdomain's cost (3% shorter: it pays).
        assert_eq!(
            paying(&snap, &EVEN, 0.1, vec![mv(3, 0, 1)]),
            vec![mv(3, 0, 1)]
        );
        // At 1.2 it would win 1.9%, inside the margin.
        assert!(paying(&snap, &EVEN, 0.2, vec![mv(3, 0, 1)]).is_empty());
    }

    #[test]
    fn a_move_where_the_slowest_mode_weighs_little_does_not_pay() {
        // The noisy thread's subdomains hold almost none of the mode.
        let shares = [0.01, 0.01, 0.01, 0.01, 0.24, 0.24, 0.24, 0.24];
        let snap = pair(&HOME, [0.5, 1.0], 0.0);
        assert!(paying(&snap, &shares, 0.0, vec![mv(3, 0, 1)]).is_empty());
        assert_eq!(
            paying(&snap, &EVEN, 0.0, vec![mv(3, 0, 1)]),
            vec![mv(3, 0, 1)]
        );
    }

    #[test]
    fn each_move_sees_the_ones_before_it() {
        // Thread 0 at a third of the speed: T = 8 before, 6.5 after one
        // move, 6.0 after two; a third would leave thread 1 the slow one
        // (6.5).
        let snap = pair(&HOME, [1.0 / 3.0, 1.0], 0.0);
        let moves = vec![mv(3, 0, 1), mv(2, 0, 1), mv(1, 0, 1)];
        let kept = paying(&snap, &EVEN, 0.0, moves);
        assert_eq!(kept, vec![mv(3, 0, 1), mv(2, 0, 1)]);
    }

    #[test]
    fn a_guest_that_no_longer_pays_goes_home_and_one_that_does_stays() {
        // Subdomain 3 is away on thread 1 at 1.5 of its cost at home; both
        // threads at full speed now: T = 4.56 there, 4 at home.
        let owners: &[usize] = &[0, 0, 0, 1, 1, 1, 1, 1];
        let snap = pair(owners, [1.0, 1.0], 0.5);
        assert_eq!(paying(&snap, &EVEN, 0.5, vec![]), vec![mv(3, 1, 0)]);
        // Thread 0 still at half speed: 5.69 there, 6 at home.
        assert!(paying(&pair(owners, [0.5, 1.0], 0.5), &EVEN, 0.5, vec![]).is_empty());
    }

    #[test]
    fn nothing_moves_before_a_window_of_rates_is_measured() {
        let snap = pair(&HOME, [1.0 / 3.0, 1.0], 0.0);
        assert_eq!(
            paying(&snap, &EVEN, 0.0, vec![mv(3, 0, 1)]),
            vec![mv(3, 0, 1)]
        );
        let short = Snapshot {
            history: &snap.history[..2],
            ..snap
        };
        assert!(paying(&short, &EVEN, 0.0, vec![mv(3, 0, 1)]).is_empty());
    }

    #[test]
    fn a_guests_cost_is_measured_against_the_home_subdomains_on_its_own_thread() {
        // Thread 1's own subdomains measure 2.0 (a slower core's loads are
        // not normalised away entirely), its guest 3.0: away 0.5, not 2.
        let owners: &[usize] = &[0, 0, 0, 1, 1, 1, 1, 1];
        let loads = &[1.0, 1.0, 1.0, 3.0, 2.0, 2.0, 2.0, 2.0];
        let snap = Snapshot {
            loads,
            ..pair(owners, [1.0, 1.0], 0.0)
        };
        let a = measured_away(&snap).unwrap();
        assert!((a - 0.5).abs() < 1e-12, "{a}");
        let not_uniform = Snapshot {
            uniform_work: false,
            ..snap
        };
        assert_eq!(measured_away(&not_uniform), None);
    }
}
