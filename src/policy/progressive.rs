//! Progressive load balancing, the paper's Algorithm 1:
//!
//! ```text
//! 1  doms <- subdomains sorted by update count (descending)
//! 2  for i <- 0 to nPairs:
//! 3    topSubd <- doms[i];  4  botSubd <- doms[-1 - i]
//! 5    topThread <- topSubd.GetThread();  6  botThread <- botSubd.GetThread()
//! 7    if topThread.GetNumSubds() < highThresh and botThread.GetNumSubds() > lowThresh:
//! 8      subdToSend <- FindMostUpdatedSubd(botThread)   (other than botSubd)
//! 9      subdToSend.SetThread(topThread)
//! ```
//!
//! The fast thread (owner of the most updated subdomain) gets more work, the
//! slow one less, so the least updated subdomain speeds up; the moved one is
//! the slow thread's most updated *other* subdomain, usually near the mean.
//!
//! Choices where the paper is silent, all deterministic:
//! * ties in the sort go by subdomain id (lower id = "more updated");
//! * line 1 sorts once per call; lines 5-9 see the moves made earlier in the
//!   same call (as `SetThread` would);
//! * a pair whose two subdomains have the same count, or the same owner, is
//!   skipped: there is nothing to balance (as printed, Algorithm 1 would
//!   still move work between equally fast threads);
//! * at most `len / 2` pairs, so a pair never uses one subdomain twice;
//! * hybrid: on every `period`-th call (call numbers start at 1), after the
//!   per-socket pass, one subdomain moves from the socket whose subdomains
//!   have the fewest updates on average to the one with the most. Donor
//!   thread (above the low threshold), receiver (below the high one) and the
//!   subdomain are drawn by a PRNG seeded from `seed` and the call number.

use std::cmp::Reverse;

use super::{Move, Policy, Snapshot};

/// Which threads are balanced together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// All threads together; subdomains may cross sockets.
    Joint,
    /// Each socket on its own; nothing crosses sockets.
    Split,
    /// Split, plus one cross-socket move every `period` calls.
    Hybrid { period: u64 },
}

#[derive(Debug, Clone)]
pub struct Progressive {
    pub scope: Scope,
    pub pairs: usize,
    pub low_threshold: usize,
    pub high_threshold: usize,
    pub seed: u64,
}

impl Policy for Progressive {
    fn decide(&self, snap: &Snapshot<'_>) -> Vec<Move> {
        let mut w = Working::new(snap);
        let all = 0..snap.counts.len();
        match self.scope {
            Scope::Joint => self.pairs_pass(&mut w, all.collect()),
            Scope::Split | Scope::Hybrid { .. } => {
                for socket in 0..snap.sockets() {
                    let on_socket = all
                        .clone()
                        .filter(|&s| snap.thread_sockets[w.owners[s]] == socket)
                        .collect();
                    self.pairs_pass(&mut w, on_socket);
                }
                if let Scope::Hybrid { period } = self.scope
                    && period > 0
                    && snap.call % period == 0
                {
                    self.cross_socket(&mut w);
                }
            }
        }
        w.moves
    }
}

impl Progressive {
    /// Algorithm 1 over the subdomains `doms`.
    fn pairs_pass(&self, w: &mut Working<'_>, mut doms: Vec<usize>) {
        let n = doms.len();
        let k = self.pairs.min(n / 2);
        if k == 0 {
            return;
        }
        let counts = w.counts;
        // Descending count, ties by id: the order of line 1.
        let key = |s: &usize| (Reverse(counts[*s]), *s);
        // Only the k first and k last of the sorted order matter: select
        // them in O(n) instead of sorting everything.
        doms.select_nth_unstable_by_key(k - 1, key);
        let (top, rest) = doms.split_at_mut(k);
        top.sort_unstable_by_key(key);
        let bottom_start = rest.len() - k;
        if bottom_start > 0 {
            rest.select_nth_unstable_by_key(bottom_start, key);
        }
        let bottom = &mut rest[bottom_start..];
        bottom.sort_unstable_by_key(|s| Reverse(key(s)));
        for i in 0..k {
            let (top_sub, bot_sub) = (top[i], bottom[i]);
            if counts[top_sub] == counts[bot_sub] {
                continue;
            }
            let (top_thread, bot_thread) = (w.owners[top_sub], w.owners[bot_sub]);
            if top_thread == bot_thread
                || w.subs_of[top_thread].len() >= self.high_threshold
                || w.subs_of[bot_thread].len() <= self.low_threshold
            {
                continue;
            }
            let send = w.subs_of[bot_thread]
                .iter()
                .copied()
                .filter(|&s| s != bot_sub)
                .min_by_key(key);
            if let Some(send) = send {
                w.move_sub(send, top_thread);
            }
        }
    }

    /// Hybrid's periodic move from the slowest socket to the fastest.
    fn cross_socket(&self, w: &mut Working<'_>) {
        let sockets = w.snap.sockets();
        if sockets < 2 {
            return;
        }
        let mut sum = vec![0u128; sockets];
        let mut num = vec![0u64; sockets];
        for (s, &t) in w.owners.iter().enumerate() {
            let sock = w.snap.thread_sockets[t];
            sum[sock] += u128::from(w.counts[s]);
            num[sock] += 1;
        }
        let avg = |s: usize| sum[s] as f64 / num[s] as f64;
        let populated: Vec<usize> = (0..sockets).filter(|&s| num[s] > 0).collect();
        let by_avg = |a: &&usize, b: &&usize| avg(**a).total_cmp(&avg(**b)).then(a.cmp(b));
        let (Some(&slow), Some(&fast)) = (
            populated.iter().min_by(by_avg),
            populated.iter().max_by(by_avg),
        ) else {
            return;
        };
        if avg(slow) == avg(fast) {
            return;
        }
        let snap = w.snap;
        let (low, high) = (self.low_threshold, self.high_threshold);
        let pick = |sock: usize, ok: &dyn Fn(usize) -> bool| -> Vec<usize> {
            (0..snap.threads())
                .filter(|&t| snap.thread_sockets[t] == sock && ok(w.subs_of[t].len()))
                .collect()
        };
        let donors = pick(slow, &|n| n > low);
        let receivers = pick(fast, &|n| n < high);
        if donors.is_empty() || receivers.is_empty() {
            return;
        }
        let mut rng = SplitMix64(self.seed ^ w.snap.call.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let donor = donors[rng.below(donors.len())];
        let receiver = receivers[rng.below(receivers.len())];
        let sub = w.subs_of[donor][rng.below(w.subs_of[donor].len())];
        w.move_sub(sub, receiver);
    }
}

/// The assignment as moves of this call change it.
struct Working<'a> {
    snap: &'a Snapshot<'a>,
    counts: &'a [u64],
    owners: Vec<usize>,
    subs_of: Vec<Vec<usize>>,
    moves: Vec<Move>,
}

impl<'a> Working<'a> {
    fn new(snap: &'a Snapshot<'a>) -> Self {
        let mut subs_of = vec![Vec::new(); snap.threads()];
        for (s, &t) in snap.owners.iter().enumerate() {
            subs_of[t].push(s);
        }
        Working {
            snap,
            counts: snap.counts,
            owners: snap.owners.to_vec(),
            subs_of,
            moves: Vec::new(),
        }
    }

    fn move_sub(&mut self, sub: usize, to: usize) {
        let from = self.owners[sub];
        let list = &mut self.subs_of[from];
        let at = list
            .iter()
            .position(|&s| s == sub)
            .expect("owner lists agree");
        list.swap_remove(at);
        self.subs_of[to].push(sub);
        self.owners[sub] = to;
        self.moves.push(Move { sub, from, to });
    }
}

/// A tiny, well-known PRNG (Steele et al.'s SplitMix64): decisions must be
/// reproducible from the seed, and need nothing stronger.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paper(scope: Scope) -> Progressive {
        Progressive {
            scope,
            pairs: 6,
            low_threshold: 2,
            high_threshold: 6,
            seed: 7,
        }
    }

    fn decide(
        p: &Progressive,
        counts: &[u64],
        owners: &[usize],
        sockets: &[usize],
        call: u64,
    ) -> Vec<Move> {
        p.decide(&Snapshot {
            counts,
            owners,
            thread_sockets: sockets,
            call,
        })
    }

    /// 3 threads x 4 subdomains: thread t owns 4t..4t+4.
    fn owners_3x4() -> Vec<usize> {
        (0..12).map(|s| s / 4).collect()
    }

    #[test]
    fn the_slow_threads_most_updated_other_subdomain_goes_to_the_fast_thread() {
        // Thread 0 fast, thread 2 slow; sub 11 least updated, sub 8 the slow
        // thread's most updated.
        let counts = [50, 49, 48, 47, 30, 30, 30, 30, 20, 15, 12, 10];
        let p = Progressive {
            pairs: 1,
            ..paper(Scope::Joint)
        };
        let moves = decide(&p, &counts, &owners_3x4(), &[0, 0, 0], 1);
        assert_eq!(
            moves,
            vec![Move {
                sub: 8,
                from: 2,
                to: 0
            }]
        );
    }

    #[test]
    fn pairs_are_taken_from_both_ends_of_the_sorted_list() {
        let counts = [50, 49, 48, 47, 30, 30, 30, 30, 20, 15, 12, 10];
        let p = Progressive {
            pairs: 2,
            ..paper(Scope::Joint)
        };
        let moves = decide(&p, &counts, &owners_3x4(), &[0, 0, 0], 1);
        // Pair 0: (0, 11) -> 8 to thread 0. Pair 1: (1, 10): thread 2 now has
        // 3 subdomains (> 2), its most updated other than 10 is 9.
        assert_eq!(
            moves,
            vec![
                Move {
                    sub: 8,
                    from: 2,
                    to: 0
                },
                Move {
                    sub: 9,
                    from: 2,
                    to: 0
                }
            ]
        );
    }

    #[test]
    fn the_high_threshold_stops_a_full_fast_thread() {
        let counts = [50, 49, 48, 47, 30, 30, 30, 30, 20, 15, 12, 10];
        let p = Progressive {
            pairs: 1,
            high_threshold: 4,
            ..paper(Scope::Joint)
        };
        assert!(decide(&p, &counts, &owners_3x4(), &[0, 0, 0], 1).is_empty());
        let p = Progressive {
            pairs: 1,
            high_threshold: 5,
            ..paper(Scope::Joint)
        };
        assert_eq!(decide(&p, &counts, &owners_3x4(), &[0, 0, 0], 1).len(), 1);
    }

    #[test]
    fn the_low_threshold_keeps_a_slow_thread_from_emptying() {
        let counts = [50, 49, 48, 47, 30, 30, 30, 30, 20, 15, 12, 10];
        let p = Progressive {
            pairs: 6,
            low_threshold: 3,
            ..paper(Scope::Joint)
        };
        let moves = decide(&p, &counts, &owners_3x4(), &[0, 0, 0], 1);
        // Thread 2 may give only while it has more than 3: exactly one move.
        assert_eq!(moves.iter().filter(|m| m.from == 2).count(), 1);
        assert!(moves.iter().all(|m| m.from != 2 || m.sub != 11));
    }

    #[test]
    fn equal_counts_are_not_balanced() {
        let counts = [7; 12];
        assert!(decide(&paper(Scope::Joint), &counts, &owners_3x4(), &[0, 0, 0], 1).is_empty());
    }

    #[test]
    fn ties_are_broken_by_subdomain_id() {
        // Subs 0 and 4 tie at the top; sub 0 (lower id) ranks first, so
        // thread 0 receives. Subs 8..12 tie at the bottom; sub 11 ranks last.
        let counts = [9, 5, 5, 5, 9, 5, 5, 5, 1, 1, 1, 1];
        let p = Progressive {
            pairs: 1,
            ..paper(Scope::Joint)
        };
        let moves = decide(&p, &counts, &owners_3x4(), &[0, 0, 0], 1);
        assert_eq!(
            moves,
            vec![Move {
                sub: 8,
                from: 2,
                to: 0
            }]
        );
    }

    #[test]
    fn one_thread_never_moves_anything() {
        let counts = [9, 3, 1, 7];
        assert!(decide(&paper(Scope::Joint), &counts, &[0, 0, 0, 0], &[0], 1).is_empty());
    }

    #[test]
    fn more_pairs_than_half_the_subdomains_is_harmless() {
        let counts = [9, 3, 1, 7, 2];
        let p = Progressive {
            pairs: 100,
            low_threshold: 0,
            ..paper(Scope::Joint)
        };
        let moves = decide(&p, &counts, &[0, 0, 1, 1, 1], &[0, 0], 1);
        for m in &moves {
            assert_ne!(m.from, m.to);
        }
        assert!(moves.len() <= 2);
    }

    #[test]
    fn joint_moves_across_sockets_and_split_never_does() {
        // Socket 0: threads 0, 1 fast; socket 1: threads 2, 3 slow.
        let sockets = [0, 0, 1, 1];
        let owners: Vec<usize> = (0..16).map(|s| s / 4).collect();
        let counts: Vec<u64> = (0..16)
            .map(|s| if s < 8 { 100 + s } else { 10 + s })
            .collect();
        let joint = decide(&paper(Scope::Joint), &counts, &owners, &sockets, 1);
        assert!(joint.iter().any(|m| sockets[m.from] != sockets[m.to]));
        let split = decide(&paper(Scope::Split), &counts, &owners, &sockets, 1);
        assert!(!split.is_empty());
        assert!(split.iter().all(|m| sockets[m.from] == sockets[m.to]));
    }

    #[test]
    fn split_never_crosses_sockets_on_random_snapshots() {
        let mut rng = SplitMix64(1);
        let sockets = [0, 0, 0, 1, 1, 1];
        for _ in 0..500 {
            let owners: Vec<usize> = (0..24).map(|_| rng.below(6)).collect();
            let counts: Vec<u64> = (0..24).map(|_| rng.below(100) as u64).collect();
            let p = Progressive {
                low_threshold: 0,
                high_threshold: 24,
                ..paper(Scope::Split)
            };
            for m in decide(&p, &counts, &owners, &sockets, 1) {
                assert_eq!(sockets[m.from], sockets[m.to], "{m:?}");
            }
        }
    }

    #[test]
    fn hybrid_moves_one_subdomain_from_the_slowest_socket_every_kth_call() {
        let sockets = [0, 0, 1, 1];
        let owners: Vec<usize> = (0..16).map(|s| s / 4).collect();
        // Socket 1 (threads 2, 3) is behind on average; counts within each
        // socket are equal so the split pass has nothing to do.
        let counts: Vec<u64> = (0..16).map(|s| if s < 8 { 100 } else { 50 }).collect();
        let p = paper(Scope::Hybrid { period: 5 });
        for call in 1..=20 {
            let moves = decide(&p, &counts, &owners, &sockets, call);
            if call % 5 == 0 {
                assert_eq!(moves.len(), 1, "call {call}");
                let m = moves[0];
                assert_eq!((sockets[m.from], sockets[m.to]), (1, 0));
                assert_eq!(owners[m.sub], m.from);
            } else {
                assert!(moves.is_empty(), "call {call}: {moves:?}");
            }
        }
    }

    #[test]
    fn hybrid_with_one_socket_is_split() {
        let counts = [50, 49, 48, 47, 30, 30, 30, 30, 20, 15, 12, 10];
        let hybrid = decide(
            &paper(Scope::Hybrid { period: 1 }),
            &counts,
            &owners_3x4(),
            &[0, 0, 0],
            1,
        );
        let split = decide(&paper(Scope::Split), &counts, &owners_3x4(), &[0, 0, 0], 1);
        let joint = decide(&paper(Scope::Joint), &counts, &owners_3x4(), &[0, 0, 0], 1);
        assert_eq!(hybrid, split);
        assert_eq!(split, joint);
    }

    #[test]
    fn decisions_are_a_pure_function_of_the_snapshot() {
        let mut rng = SplitMix64(3);
        let sockets = [0, 0, 1, 1];
        let owners: Vec<usize> = (0..16).map(|s| s / 4).collect();
        let counts: Vec<u64> = (0..16).map(|_| rng.below(1000) as u64).collect();
        let p = paper(Scope::Hybrid { period: 1 });
        let a = decide(&p, &counts, &owners, &sockets, 9);
        assert_eq!(a, decide(&p, &counts, &owners, &sockets, 9));
        assert!(!a.is_empty());
    }

    #[test]
    fn selection_matches_a_full_sort() {
        // The O(n) selection must pick the same pairs as sorting everything.
        let mut rng = SplitMix64(5);
        for _ in 0..200 {
            let n = 2 + rng.below(40);
            let counts: Vec<u64> = (0..n).map(|_| rng.below(8) as u64).collect();
            let owners: Vec<usize> = (0..n).map(|s| s % 4).collect();
            let p = Progressive {
                pairs: 1 + rng.below(8),
                low_threshold: 0,
                high_threshold: n,
                ..paper(Scope::Joint)
            };
            let got = decide(&p, &counts, &owners, &[0; 4], 1);
            assert_eq!(got, reference(&p, &counts, &owners), "{counts:?}");
        }
    }

    /// Algorithm 1 written as plainly as possible, with a full sort.
    fn reference(p: &Progressive, counts: &[u64], owners: &[usize]) -> Vec<Move> {
        let mut doms: Vec<usize> = (0..counts.len()).collect();
        doms.sort_by_key(|&s| (Reverse(counts[s]), s));
        let mut owners = owners.to_vec();
        let mut moves = vec![];
        let n = doms.len();
        for i in 0..p.pairs.min(n / 2) {
            let (top, bot) = (doms[i], doms[n - 1 - i]);
            let (tt, bt) = (owners[top], owners[bot]);
            let num = |t: usize, o: &[usize]| o.iter().filter(|&&x| x == t).count();
            if counts[top] == counts[bot] || tt == bt {
                continue;
            }
            if num(tt, &owners) < p.high_threshold && num(bt, &owners) > p.low_threshold {
                let send = (0..n)
                    .filter(|&s| owners[s] == bt && s != bot)
                    .min_by_key(|&s| (Reverse(counts[s]), s));
                if let Some(s) = send {
                    owners[s] = tt;
                    moves.push(Move {
                        sub: s,
                        from: bt,
                        to: tt,
                    });
                }
            }
        }
        moves
    }
}
