//! The residual as the load estimator: the paper quotes Bahi et al., "even
//! bigger gains could be gained by using the residual as a load estimator".
//!
//! A subdomain's local residual says how much work it still needs; a
//! thread's rate says how fast it does work. So the subdomains with the
//! largest residuals should sit on the fastest threads. In each group (as
//! for [`super::Greedy`]), at most one move per call:
//!
//! 1. the **receiver** is the thread that, holding one more subdomain, would
//!    update each of its subdomains fastest (`rate / (held + 1)`, the rate
//!    over the window), among those with fewer than `high_threshold`;
//! 2. the **candidates** are the group's subdomains whose owner is not the
//!    receiver, holds more than `low_threshold`, and is slower: the
//!    receiver with one more would still beat it per subdomain over the
//!    window, beyond its jitter (as in [`super::Steal`]), so equally fast
//!    threads never trade;
//! 3. the candidate with the **largest last local residual**
//!    (`Snapshot::residuals`) moves to the receiver.
//!
//! Where no residuals are computed (no `tolerance`, or a simulation without
//! `numerics`), the least updated candidate moves instead: the progress
//! deficit is the load estimate then, and this is [`super::Steal`] with
//! the receiver chosen per subdomain. Departures from Bahi et al., who
//! weight the partition by residual: one subdomain per call, and a
//! subdomain moves only towards a faster thread (a weighting by residuals,
//! which span orders of magnitude here, would pile the quiet subdomains
//! onto one thread and let their counts fall behind).

use std::sync::Arc;

use super::homes::shift_in;
use super::jitter::{improves_beyond_by, window_rate};
use super::{Bounds, Move, Named, Owned, Policy, Snapshot, Entry, Settings, Strategy, by_group};

/// The largest local residuals to the fastest threads, after Bahi et al. (the top of this file says how).
#[derive(Debug, Clone)]
pub struct ResidualFirst {
    /// Scope and thresholds.
    pub bounds: Bounds,
}

impl Policy for ResidualFirst {
    fn decide(&self, snap: &Snapshot<'_>) -> Vec<Move> {
        by_group(snap, self.bounds.scope, |group, held| {
            self.pick(snap, group, held).into_iter().collect()
        })
    }

    fn name(&self) -> Named {
        self.bounds.named(Strategy::RESIDUAL)
    }

    /// Which subdomain moves is this strategy's point: the largest residual.
    fn sends_guests_home(&self) -> bool {
        false
    }
}

impl ResidualFirst {
    fn pick(&self, snap: &Snapshot<'_>, group: &[usize], held: &[usize]) -> Option<Move> {
        let r: Vec<f64> = (0..snap.threads()).map(|t| window_rate(snap, t)).collect();
        let to = group
            .iter()
            .copied()
            .filter(|&t| held[t] < self.bounds.high)
            .max_by(|&a, &b| {
                let per = |t: usize| r[t] / (held[t] + 1) as f64;
                per(a).total_cmp(&per(b)).then(b.cmp(&a))
            })?;
        // Which threads may give: decided per thread, so that a call with
        // no slower donor costs no pass over the subdomains.
        // The receiver's list only when moves are priced by it.
        let owned = snap.homes.prices().then(|| Owned::of(snap));
        let shift = |from: usize| shift_in(snap, owned.as_ref(), held, (to, from));
        let mut donor = vec![false; held.len()];
        let mut any = false;
        for &from in group {
            donor[from] = from != to
                && held[from] > self.bounds.low
                && improves_beyond_by(snap.history, snap.reading.window, to, from, shift(from));
            any |= donor[from];
        }
        if !any {
            return None;
        }
        let candidates = (0..snap.counts.len()).filter(|&s| donor[snap.owners[s]]);
        let sub = if snap.residuals.len() == snap.counts.len() {
            let res = snap.residuals;
            candidates.max_by(|&a, &b| {
                res[a]
                    .total_cmp(&res[b])
                    .then(snap.counts[b].cmp(&snap.counts[a]))
                    .then(b.cmp(&a))
            })?
        } else {
            candidates.min_by_key(|&s| (snap.counts[s], s))?
        };
        Some(Move {
            sub,
            from: snap.owners[sub],
            to,
        })
    }
}


impl Strategy {
    /// The largest local residuals to the fastest threads ([`ResidualFirst`]).
    pub const RESIDUAL: Strategy = Strategy(&ENTRY);
}

/// Its line in the registry (`policy/mod.rs`).
pub(super) const ENTRY: Entry = Entry {
    name: "residual",
    build: |s: &Settings<'_>| Ok(Arc::new(ResidualFirst { bounds: s.bounds })),
};

#[cfg(test)]
mod tests {
    use super::super::greedy::tests::{comes_to_rest, keeps_the_rules, two};
    use super::*;
    use crate::policy::Scope;

    fn residual() -> ResidualFirst {
        ResidualFirst {
            bounds: Bounds {
                scope: Scope::Joint,
                low: 2,
                high: 6,
            },
        }
    }

    fn decide(rates: &[f64], residuals: &[f64]) -> Vec<Move> {
        let (counts, owners, _) = two(0.0, 0.0);
        residual().decide(&Snapshot {
            rates,
            residuals,
            history: crate::policy::steady(rates),
            ..Snapshot::of(&counts, &owners, &[0, 0])
        })
    }

    #[test]
    fn the_largest_residual_of_a_slower_thread_goes_to_the_fastest() {
        let res = [1.0, 2.0, 9.0, 3.0, 50.0, 60.0, 70.0, 80.0];
        let moves = decide(&[50.0, 100.0], &res);
        assert_eq!(
            moves,
            [Move {
                sub: 2,
                from: 0,
                to: 1
            }]
        );
        // Without residuals the least updated goes, as in stealing.
        assert_eq!(decide(&[50.0, 100.0], &[])[0].sub, 1);
    }

    #[test]
    fn equally_fast_threads_trade_nothing_whatever_the_residuals() {
        let res = [1.0, 2.0, 9.0, 3.0, 50.0, 60.0, 70.0, 80.0];
        assert!(decide(&[100.0, 100.0], &res).is_empty());
        assert!(decide(&[], &res).is_empty());
        // The slow one holds only its low threshold's worth: nothing.
        let counts = [1, 2, 3, 4, 5, 6];
        let owners = [0, 0, 1, 1, 1, 1];
        let s = Snapshot {
            rates: &[10.0, 100.0],
            ..Snapshot::of(&counts, &owners, &[0, 0])
        };
        assert!(residual().decide(&s).is_empty());
    }

    #[test]
    fn residual_comes_to_rest_at_steady_rates() {
        comes_to_rest(64, |scope| {
            Box::new(ResidualFirst {
                bounds: Bounds {
                    scope,
                    ..residual().bounds
                },
            })
        });
    }

    #[test]
    fn residual_moves_only_donors_subdomains_within_thresholds_and_groups() {
        keeps_the_rules(|scope, low_threshold, high_threshold| {
            Box::new(ResidualFirst {
                bounds: Bounds {
                    scope,
                    low: low_threshold,
                    high: high_threshold,
                },
            })
        });
    }
}
