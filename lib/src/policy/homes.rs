//! Where each subdomain is cheapest to update, and what a move costs when
//! it takes one away from there: the price every strategy's decision pays
//! for leaving a thread's slab.
//!
//! A thread sweeps the subdomains of its own domain side by side in one
//! pass over one buffer (`subdomain/slab.rs`): they share the pass's own
//! cost and each row's. A subdomain moved to another thread is swept there
//! on its own and pays both whole, so it costs `1 + away_cost` times what
//! it costs at home (the cost model's ratio, `sim/mod.rs`: at 75 x 75
//! cells here about 1.3). Two things follow, and both engines (and ranks)
//! get them from the one schedule core:
//!
//! * **A guest goes home first** ([`homeward`]). When a strategy moves a
//!   subdomain from `A` to `B` and `A` holds a guest whose home is `B`, the
//!   guest goes instead: the same count of subdomains changes hands, and
//!   both threads get cheaper. Measured before this (2026-11-28, 2 threads,
//!   150² each, a 19% parasite on core 0): split and greedy moved one of
//!   the noisy thread's subdomains away, then, when the other thread
//!   looked slower with five, one of *its own* back, until the two domains
//!   had swapped most of their subdomains (6-21 moves a run, the run
//!   0.78 of plain async(4)'s speed).
//! * **A move must pay for leaving home** ([`Shift`]). A rate-based
//!   strategy predicts the receiver's per-subdomain rate after a move from
//!   its work per sweep counted in home updates: a guest costs `1 +
//!   away_cost`, so taking a subdomain from its home must win back that
//!   much more, while sending a guest home costs the receiver only 1.
//!
//! A subdomain's home is the domain it starts in: ids are `domain x
//! subdomains_per_domain + k` (`problem.rs`), and thread `t` starts with
//! domain `t`.

use super::{Move, Snapshot};

/// Each subdomain's home thread and the price of updating it elsewhere.
///
/// ```
/// use braid::Homes;
/// let h = Homes { per_domain: 4, away_cost: 0.3 };
/// assert_eq!((h.of(0), h.of(5)), (Some(0), Some(1)));
/// assert_eq!(h.cost(5, 1), 1.0);
/// assert!((h.cost(5, 0) - 1.3).abs() < 1e-12);
/// assert_eq!(Homes::NONE.of(5), None);
/// assert_eq!(Homes::NONE.cost(5, 0), 1.0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Homes {
    /// Subdomains per domain; 0 = no subdomain has a home (every thread is
    /// as good as another, as in tests built by hand).
    pub per_domain: usize,
    /// What an update away from home costs over one at home, less 1 (0 =
    /// nothing: the printed algorithms' view).
    pub away_cost: f64,
}

impl Default for Homes {
    fn default() -> Self {
        Homes::NONE
    }
}

impl Homes {
    /// No homes: every subdomain costs the same everywhere.
    pub const NONE: Homes = Homes {
        per_domain: 0,
        away_cost: 0.0,
    };

    /// Whether a move is priced by where it takes a subdomain (homes, and
    /// a cost away from them); else every shift is [`Shift::counted`].
    pub fn prices(&self) -> bool {
        self.per_domain > 0 && self.away_cost != 0.0
    }

    /// Subdomain `s`'s home thread, if subdomains have homes.
    pub fn of(&self, s: usize) -> Option<usize> {
        (self.per_domain > 0).then(|| s / self.per_domain)
    }

    /// What an update of `s` costs on thread `t`, in updates at home.
    pub fn cost(&self, s: usize, t: usize) -> f64 {
        match self.of(s) {
            Some(home) if home != t => 1.0 + self.away_cost,
            _ => 1.0,
        }
    }

    /// Thread `t`'s work per sweep in updates at home, for the subdomains
    /// `owners` gives it (its count, for no homes or no away cost).
    pub fn work(&self, owners: &[usize], t: usize) -> f64 {
        owners
            .iter()
            .enumerate()
            .filter(|&(_, &o)| o == t)
            .map(|(s, _)| self.cost(s, t))
            .sum()
    }

    /// A guest of `from` whose home is `to`, if `from` holds one as
    /// `owner` says (the lowest id).
    pub(crate) fn guest_of(
        &self,
        from: usize,
        to: usize,
        subs: usize,
        owner: impl Fn(usize) -> usize,
    ) -> Option<usize> {
        if self.per_domain == 0 || from == to {
            return None;
        }
        let home = to * self.per_domain..((to + 1) * self.per_domain).min(subs);
        home.into_iter().find(|&s| owner(s) == from)
    }
}

/// What a move of one subdomain from `from` to `to` does to the receiver:
/// how many subdomains each holds, and the receiver's work per sweep (in
/// updates at home) now and after. A rate-based strategy predicts from it
/// (`jitter::improves_beyond_by`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shift {
    /// Subdomains the receiver holds now.
    pub n_to: usize,
    /// Subdomains the donor holds now.
    pub n_from: usize,
    /// The receiver's work per sweep now.
    pub work_to: f64,
    /// ... and with the subdomain it receives.
    pub work_to_after: f64,
}

impl Shift {
    /// Equal costs everywhere: the receiver's work is its count.
    ///
    /// ```
    /// use braid::Shift;
    /// let s = Shift::counted(4, 4);
    /// assert_eq!((s.work_to, s.work_to_after), (4.0, 5.0));
    /// ```
    pub fn counted(n_to: usize, n_from: usize) -> Shift {
        Shift {
            n_to,
            n_from,
            work_to: n_to as f64,
            work_to_after: (n_to + 1) as f64,
        }
    }

    /// A move from `from` (holding `n_from`) to `to`, which holds
    /// `to_subs`, as `homes` prices it, with the owners `owner` gives (a
    /// call's own moves included): the receiver's work now, and after it
    /// takes a guest of `from`'s back home if `from` holds one
    /// ([`homeward`] makes that the subdomain that moves), else one that
    /// is away at `to`.
    pub fn priced(
        homes: &Homes,
        (to, to_subs): (usize, &[usize]),
        (from, n_from): (usize, usize),
        subs: usize,
        owner: impl Fn(usize) -> usize,
    ) -> Shift {
        let n_to = to_subs.len();
        if !homes.prices() {
            return Shift::counted(n_to, n_from);
        }
        let work_to: f64 = to_subs.iter().map(|&s| homes.cost(s, to)).sum();
        let added = match homes.guest_of(from, to, subs, owner) {
            Some(_) => 1.0,
            None => 1.0 + homes.away_cost,
        };
        Shift {
            n_to,
            n_from,
            work_to,
            work_to_after: work_to + added,
        }
    }
}

/// A move from `from` to `to` in `snap`, priced when its homes price
/// moves (then `owned` lists each thread's subdomains), else counted.
pub(crate) fn shift_in(
    snap: &Snapshot<'_>,
    owned: Option<&super::Owned>,
    held: &[usize],
    (to, from): (usize, usize),
) -> Shift {
    match owned {
        None => Shift::counted(held[to], held[from]),
        Some(owned) => Shift::priced(
            &snap.homes,
            (to, owned.of_thread(to)),
            (from, held[from]),
            snap.counts.len(),
            |s| snap.owners[s],
        ),
    }
}

/// `moves` with every subdomain that would leave `A` for `B` replaced by a
/// guest of `A`'s whose home is `B`, where `A` holds one that nothing else
/// in `moves` moves and that weighs about as much (the work is uniform, or
/// their measured loads are within 2%): the same numbers change hands and
/// the guest goes home (the top of this file). Moves are applied in order,
/// so each sees the owners the earlier ones leave.
///
/// ```
/// use braid::{Homes, Move, Snapshot, homeward};
/// // Thread 0 holds subdomain 2, whose home is thread 1.
/// let owners = [0, 0, 0, 1];
/// let snap = Snapshot { homes: Homes { per_domain: 2, away_cost: 0.3 }, uniform_work: true,
///                       ..Snapshot::of(&[5, 5, 5, 5], &owners, &[0, 0]) };
/// let moves = homeward(&snap, vec![Move { sub: 0, from: 0, to: 1 }]);
/// assert_eq!(moves, vec![Move { sub: 2, from: 0, to: 1 }]);
/// ```
pub fn homeward(snap: &Snapshot<'_>, moves: Vec<Move>) -> Vec<Move> {
    let homes = snap.homes;
    if homes.per_domain == 0 || moves.is_empty() {
        return moves;
    }
    let mut owners = snap.owners.to_vec();
    let mut out = Vec::with_capacity(moves.len());
    for (i, m) in moves.iter().enumerate() {
        let mut sub = m.sub;
        if homes.of(sub) != Some(m.to) {
            let moved_later = |s: usize| moves[i..].iter().any(|n| n.sub == s);
            let alike = |g: usize| {
                snap.uniform_work
                    || snap.loads.len() != owners.len()
                    || (snap.loads[g] - snap.loads[sub]).abs()
                        <= 0.02 * snap.loads[g].max(snap.loads[sub])
            };
            let guest = homes.guest_of(m.from, m.to, owners.len(), |s| {
                if moved_later(s) || !alike(s) {
                    usize::MAX
                } else {
                    owners[s]
                }
            });
            if let Some(g) = guest {
                sub = g;
            }
        }
        owners[sub] = m.to;
        out.push(Move {
            sub,
            from: m.from,
            to: m.to,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mv(sub: usize, from: usize, to: usize) -> Move {
        Move { sub, from, to }
    }

    fn snap<'a>(owners: &'a [usize], per_domain: usize) -> Snapshot<'a> {
        Snapshot {
            homes: Homes {
                per_domain,
                away_cost: 0.3,
            },
            uniform_work: true,
            ..Snapshot::of(&[0; 8][..owners.len()], owners, &[0, 0])
        }
    }

    #[test]
    fn a_guest_goes_home_instead_of_a_subdomain_leaving_its_own() {
        // Thread 0 holds 4, 5 (thread 1's); a move 0 -> 1 of 0 sends 4 home.
        let owners = [0, 0, 0, 0, 0, 0, 1, 1];
        let s = snap(&owners, 4);
        let m = homeward(&s, vec![mv(1, 0, 1)]);
        assert_eq!(m, vec![mv(4, 0, 1)]);
        // Two moves: both guests go home, one each.
        let m = homeward(&s, vec![mv(1, 0, 1), mv(2, 0, 1)]);
        assert_eq!(m, vec![mv(4, 0, 1), mv(5, 0, 1)]);
        // A third finds no guest left: the strategy's own pick moves.
        let m = homeward(&s, vec![mv(1, 0, 1), mv(2, 0, 1), mv(3, 0, 1)]);
        assert_eq!(m[2], mv(3, 0, 1));
    }

    #[test]
    fn a_move_home_a_guest_moved_elsewhere_or_no_homes_stay_as_decided() {
        let owners = [0, 0, 0, 0, 0, 1, 1, 1];
        // Already going home.
        let s = snap(&owners, 4);
        let home = vec![mv(4, 0, 1)];
        assert_eq!(homeward(&s, home.clone()), home);
        // The guest itself moves later in the call: not taken twice.
        let both = vec![mv(0, 0, 1), mv(4, 0, 1)];
        assert_eq!(homeward(&s, both.clone()), both);
        // No homes: nothing changes.
        let none = Snapshot {
            homes: Homes::NONE,
            ..s
        };
        let m = vec![mv(1, 0, 1)];
        assert_eq!(homeward(&none, m.clone()), m);
    }

    #[test]
    fn a_guest_of_another_weight_does_not_stand_in() {
        let owners = [0, 0, 0, 0, 0, 1, 1, 1];
        let loads = [1.0, 1.0, 1.0, 1.0, 3.0, 1.0, 1.0, 1.0];
        let s = Snapshot {
            uniform_work: false,
            loads: &loads,
            ..snap(&owners, 4)
        };
        let m = vec![mv(1, 0, 1)];
        assert_eq!(homeward(&s, m.clone()), m);
    }

    #[test]
    fn a_receivers_work_counts_its_guests_and_what_it_takes() {
        let h = Homes {
            per_domain: 2,
            away_cost: 0.5,
        };
        // Thread 1 holds 2, 3 (home) and 1 (thread 0's); thread 0 holds 0.
        let owners = [0, 1, 1, 1];
        let owner = |s: usize| owners[s];
        // 0 -> 1: thread 1's work 1.5 + 2, taking 0 away: + 1.5.
        let s = Shift::priced(&h, (1, &[1, 2, 3]), (0, 1), 4, owner);
        assert_eq!((s.work_to, s.work_to_after), (3.5, 5.0));
        // 1 -> 0: thread 1 holds 1, thread 0's own, which goes home: + 1.
        let s = Shift::priced(&h, (0, &[0]), (1, 3), 4, owner);
        assert_eq!((s.work_to, s.work_to_after), (1.0, 2.0));
        // No away cost: counts.
        let free = Homes {
            away_cost: 0.0,
            ..h
        };
        let s = Shift::priced(&free, (1, &[1, 2, 3]), (0, 1), 4, owner);
        assert_eq!(s, Shift::counted(3, 1));
    }
}
