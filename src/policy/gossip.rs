//! A diffusive strategy without a global view: DARMA vt's TemperedLB (the
//! gossip balancer of Menon and Kalé's GrapevineLB), on braid's object loads
//! and thread speeds.
//!
//! The global strategies decide on every thread's load at once, which
//! across ranks costs an all-gather at every call. TemperedLB needs one
//! number from everyone (the mean load, a cheap all-reduce) and otherwise
//! only what a few random peers tell it:
//!
//! * **Only when it pays.** A group whose most loaded thread is within 5%
//!   of the mean is left alone (vt's `run_temperedlb_tolerance`).
//! * **Inform.** Every underloaded thread (sweep time below the mean) knows
//!   of itself. In each of `rounds` synchronous rounds, every thread that
//!   knows of some underloaded ones tells `fanout` threads drawn at random,
//!   which add what they are told to what they know. vt's default is
//!   rounds enough for the word to cover the group: `ceil(log_fanout(n))`.
//! * **Transfer.** Each overloaded thread (sweep time above the mean), the
//!   most loaded first, offers its subdomains heaviest first. For each it
//!   draws a target among the underloaded threads *it knows of*, with
//!   probability proportional to how far each is below the mean as it last
//!   heard (vt's original cumulative mass function), and moves the
//!   subdomain if the target's sweep, with it, stays shorter than its own
//!   without it (vt's ModifiedGrapevine criterion). It then counts the
//!   target as that much more loaded, but only in its own view: two
//!   overloaded threads may both send to one target, which is what a
//!   decision on stale, partial knowledge does.
//!
//! Loads and speeds are [`Snapshot::loads`] and [`Snapshot::speeds`] as the
//! load-based strategies read them ([`super::objects`]: before loads are
//! measured every subdomain weighs 1 and a thread's speed is its rate). The
//! draws are seeded from `seed` and the call's number, so a call decides
//! the same on every rank and the simulator reproduces byte for byte. The
//! thresholds hold: a donor keeps more than `low`, a target holds fewer than
//! `high`. Within each group of the scope (`joint`: all threads; `split`:
//! each socket or node; `hybrid`: those, and all every `period`-th call).
//!
//! In braid every engine still hands the policy a whole snapshot (the
//! runtime across ranks sums it in an exchange), so the runtime does not
//! save the all-gather. The simulator charges what each way of learning
//! would cost on its network ([`Policy::learns`], `sim/network.rs`), and
//! the decisions are made on partial knowledge as here
//! (docs/across-nodes.md compares them).

use super::objects::Weights;
use super::{Bounds, Learns, Move, Named, Policy, Snapshot, Strategy, by_group};
use crate::rng::SplitMix64;

/// vt's `run_temperedlb_tolerance`: a group whose most loaded thread is
/// within this share of the mean is left alone (measured rates jitter; a
/// move has a cost).
const TOLERANCE: f64 = 0.05;

/// TemperedLB's inform and transfer stages (the top of this file).
#[derive(Debug, Clone)]
pub struct Gossip {
    /// Scope and thresholds.
    pub bounds: Bounds,
    /// Peers each informed thread tells per round (vt's `f`: 2).
    pub fanout: usize,
    /// Inform rounds; 0 = enough to reach the group, `ceil(log_f(n))`.
    pub rounds: usize,
    /// The draws' seed (`seed`).
    pub seed: u64,
}

impl Policy for Gossip {
    fn decide(&self, snap: &Snapshot<'_>) -> Vec<Move> {
        let Some(w) = Weights::of(snap) else {
            return Vec::new();
        };
        let mut rng = SplitMix64(self.seed ^ snap.call.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        by_group(snap, self.bounds.scope, |group, held| {
            self.within(snap, &w, group, held, &mut rng)
        })
    }

    fn name(&self) -> Named {
        self.bounds.named(Strategy::Gossip)
    }

    fn reads_loads(&self) -> bool {
        true
    }

    fn learns(&self) -> Learns {
        // The rounds a group of every thread takes (the calls that cross
        // nodes balance all threads together).
        Learns::Gossip {
            fanout: self.fanout.max(1),
            rounds: self.rounds,
        }
    }
}

impl Gossip {
    /// Inform, then transfer, among the threads of `group`.
    fn within(
        &self,
        snap: &Snapshot<'_>,
        w: &Weights<'_>,
        group: &[usize],
        held: &[usize],
        rng: &mut SplitMix64,
    ) -> Vec<Move> {
        let n = group.len();
        if n < 2 {
            return Vec::new();
        }
        let loads = w.thread_loads(snap.owners, snap.threads());
        let time: Vec<f64> = group.iter().map(|&t| w.time(t, loads[t], 1.0)).collect();
        if time.iter().any(|t| !t.is_finite()) {
            return Vec::new(); // a thread that made no progress: nothing measured yet
        }
        let mean = time.iter().sum::<f64>() / n as f64;
        let most = time.iter().copied().fold(0.0, f64::max);
        if most <= mean * (1.0 + TOLERANCE) {
            return Vec::new();
        }
        let known = self.inform(&time, mean, rng);
        // Each member's subdomains, heaviest first.
        let mut subs: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut member = vec![usize::MAX; snap.threads()];
        for (i, &t) in group.iter().enumerate() {
            member[t] = i;
        }
        for (s, &o) in snap.owners.iter().enumerate() {
            if member[o] != usize::MAX {
                subs[member[o]].push(s);
            }
        }
        for list in &mut subs {
            list.sort_by(|&a, &b| w.load(b).total_cmp(&w.load(a)).then(a.cmp(&b)));
        }
        let mut count: Vec<usize> = group.iter().map(|&t| held[t]).collect();
        let mut order: Vec<usize> = (0..n).filter(|&i| time[i] > mean).collect();
        order.sort_by(|&a, &b| time[b].total_cmp(&time[a]).then(a.cmp(&b)));
        let mut moves = Vec::new();
        for i in order {
            // What member `i` believes of the targets it heard of.
            let mut view: Vec<(usize, f64)> = known[i].iter().map(|&j| (j, time[j])).collect();
            let mut own = time[i];
            for &s in &subs[i] {
                if count[i] <= self.bounds.low || own <= mean {
                    break;
                }
                let Some(k) = draw(&view, mean, rng) else {
                    break;
                };
                let j = view[k].0;
                let (from, to) = (group[i], group[j]);
                let give = w.time(from, w.load(s), 1.0);
                let take = w.time(to, w.load(s), 1.0);
                if count[j] >= self.bounds.high || view[k].1 + take >= own {
                    // ModifiedGrapevine refuses: the target, with it, would
                    // be as loaded as the donor is now. vt tries the next
                    // object; so does this.
                    continue;
                }
                moves.push(Move { sub: s, from, to });
                own -= give;
                view[k].1 += take;
                count[i] -= 1;
                count[j] += 1;
            }
        }
        moves
    }

    /// The inform stage: who each member knows to be underloaded (member
    /// indices, ascending).
    fn inform(&self, time: &[f64], mean: f64, rng: &mut SplitMix64) -> Vec<Vec<usize>> {
        let n = time.len();
        let fanout = self.fanout.max(1);
        let rounds = match self.rounds {
            0 => rounds_to_cover(n, fanout),
            r => r,
        };
        // One bit per (member, underloaded member): what each knows.
        let words = n.div_ceil(64);
        let mut known = vec![0u64; n * words];
        for i in (0..n).filter(|&i| time[i] < mean) {
            known[i * words + i / 64] |= 1 << (i % 64);
        }
        for _ in 0..rounds {
            let told = known.clone();
            for i in 0..n {
                let what = &told[i * words..(i + 1) * words];
                if what.iter().all(|&w| w == 0) {
                    continue;
                }
                for _ in 0..fanout {
                    let mut peer = rng.below(n - 1);
                    if peer >= i {
                        peer += 1; // anyone but itself
                    }
                    for (k, &w) in known[peer * words..(peer + 1) * words].iter_mut().zip(what) {
                        *k |= w;
                    }
                }
            }
        }
        (0..n)
            .map(|i| {
                (0..n)
                    .filter(|&u| known[i * words + u / 64] >> (u % 64) & 1 == 1)
                    .collect()
            })
            .collect()
    }
}

/// `ceil(log_fanout(n))`: rounds after which word from one thread could
/// have reached every one of `n`.
pub(crate) fn rounds_to_cover(n: usize, fanout: usize) -> usize {
    let (mut reach, mut rounds) = (1usize, 0);
    while reach < n {
        reach = reach.saturating_mul(fanout + 1);
        rounds += 1;
    }
    rounds
}

/// A target from `view` ((member, load as heard)), with probability
/// proportional to how far below `mean` each is; `None` if none is.
fn draw(view: &[(usize, f64)], mean: f64, rng: &mut SplitMix64) -> Option<usize> {
    let room: f64 = view.iter().map(|&(_, t)| (mean - t).max(0.0)).sum();
    if room <= 0.0 {
        return None;
    }
    let mut x = rng.unit() * room;
    for (k, &(_, t)) in view.iter().enumerate() {
        let r = (mean - t).max(0.0);
        if r > 0.0 && x < r {
            return Some(k);
        }
        x -= r;
    }
    view.iter().rposition(|&(_, t)| t < mean)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Scope;

    fn gossip() -> Gossip {
        Gossip {
            bounds: Bounds {
                scope: Scope::Joint,
                low: 1,
                high: 100,
            },
            fanout: 2,
            rounds: 0,
            seed: 7,
        }
    }

    /// `threads` threads of 4 subdomains, thread 0 at `slow` of the others'
    /// rate, unit loads.
    fn snapshot_parts(threads: usize, slow: f64) -> (Vec<usize>, Vec<f64>, Vec<usize>) {
        let owners: Vec<usize> = (0..4 * threads).map(|s| s / 4).collect();
        let mut rates = vec![100.0; threads];
        rates[0] = 100.0 * slow;
        (owners, rates, vec![0; threads])
    }

    fn decide(
        g: &Gossip,
        owners: &[usize],
        rates: &[f64],
        sockets: &[usize],
        call: u64,
    ) -> Vec<Move> {
        let counts = vec![0; owners.len()];
        let held: Vec<usize> = (0..rates.len())
            .map(|t| owners.iter().filter(|&&o| o == t).count())
            .collect();
        let progress = vec![0; rates.len()];
        let snap = Snapshot {
            counts: &counts,
            owners,
            thread_sockets: sockets,
            held: &held,
            progress: &progress,
            rates,
            residuals: &[],
            history: &[],
            loads: &[],
            speeds: &[],
            load_history: &[],
            since_last_s: 1.0,
            call,
        };
        g.decide(&snap)
    }

    #[test]
    fn gossip_moves_work_off_the_slow_thread_to_threads_it_heard_of() {
        let (owners, rates, sockets) = snapshot_parts(16, 0.25);
        let moves = decide(&gossip(), &owners, &rates, &sockets, 1);
        assert!(!moves.is_empty());
        assert!(moves.iter().all(|m| m.from == 0 && m.to != 0), "{moves:?}");
        // Thread 0 sweeps 4 subdomains 4x slower: it keeps 1 (16 units of
        // time against the others' 4 to 5).
        assert_eq!(moves.len(), 3, "{moves:?}");
    }

    #[test]
    fn gossip_is_deterministic_and_its_draws_change_with_the_call() {
        let (owners, rates, sockets) = snapshot_parts(64, 0.1);
        let g = gossip();
        let a = decide(&g, &owners, &rates, &sockets, 5);
        assert_eq!(a, decide(&g, &owners, &rates, &sockets, 5));
        let targets = |m: &[Move]| m.iter().map(|m| m.to).collect::<Vec<_>>();
        let other = (6..12).map(|c| targets(&decide(&g, &owners, &rates, &sockets, c)));
        assert!(other.into_iter().any(|t| t != targets(&a)));
    }

    #[test]
    fn one_round_of_one_peer_spreads_the_word_only_so_far() {
        // Threads 1-3 underloaded; in one round each tells one peer.
        let g = Gossip {
            rounds: 1,
            fanout: 1,
            ..gossip()
        };
        let heard = g.inform(&[4.0, 1.0, 1.0, 1.0], 1.75, &mut SplitMix64(1));
        for (i, k) in heard.iter().enumerate().skip(1) {
            assert!(k.contains(&i), "{heard:?}");
        }
        let told: usize = heard.iter().map(Vec::len).sum();
        assert!(told <= 3 + 3, "three knew, three were told: {heard:?}");
        // Enough rounds, and everyone knows every underloaded thread.
        let all = gossip().inform(&[4.0, 1.0, 1.0, 1.0], 1.75, &mut SplitMix64(1));
        assert!(all.iter().all(|k| k.len() == 3 || k.len() == 2), "{all:?}");
    }

    #[test]
    fn the_rounds_cover_the_group() {
        assert_eq!(rounds_to_cover(1, 2), 0);
        assert_eq!(rounds_to_cover(3, 2), 1);
        assert_eq!(rounds_to_cover(4, 2), 2);
        assert_eq!(rounds_to_cover(2304, 2), 8);
    }
}
