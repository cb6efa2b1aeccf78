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
//! It reads update counts only, as the paper prints it, never object loads:
//! under a workload a heavy subdomain's thread falls behind and its counts
//! say so without a clock (docs/workloads.md compares it with the
//! load-based strategies).
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
//!
//! Where braid departs from the printed algorithm by default (each can be
//! turned off: `lb_min_gap = 0`, `lb_predict = false`), measured in the
//! simulator at 2 x 18 cores with the `tts-sim` settings:
//! * **Thresholds** default to `subdomains - 2` (at least 1) and
//!   `subdomains + 2` (`Config::low_threshold`/`high_threshold`): the
//!   paper's fixed 2 and 6 were tuned for 4 subdomains, and at 8 no thread
//!   could ever receive one.
//! * **Dead band** (`min_gap`, default 2, `DEFAULT_MIN_GAP`): a pair whose
//!   count gap is at most `min_gap` is skipped. Quiet, the printed algorithm
//!   moves on every difference: split made 4374 moves and cost +1.6% time to
//!   solution; with any band of 2 or more it makes none (2, 4, 8, 16 and 32
//!   measured alike, so the smallest is the default).
//! * **Predicted moves** (`predict`): a pair is balanced only when the
//!   receiver, with one more subdomain, would still update each of its
//!   subdomains faster than the donor does now, `r_to / (n_to + 1) > r_from
//!   / n_from`, by the threads' rates over the window and beyond their
//!   jitter ([`super::improves_beyond`]: until 2026-11-26 by the last
//!   interval's progress alone, on which quiet 2-thread runs moved up to 16
//!   subdomains in 5000 iterations). The printed algorithm moves work from a core losing
//!   19% (81/4 = 20.25 per subdomain) to one that then runs its subdomains
//!   at 100/5 = 20, so the imbalance moves on and never settles: split lost
//!   +3.1% to +3.4% under 19% noise against plain async's +0.3% / +2.0%. With
//!   prediction it makes 23-29 moves and loses +0.9% (next to the source)
//!   and +0.6% (centre core, where plain async loses +2.0%); at 50% on the
//!   centre core +1.8% against +9.9%. The dead band is not enough on its
//!   own: at bands up to 32 the noisy runs still made 2200-2300 moves and
//!   lost as much. Hybrid's cross-socket move is predicted the same way.

use std::sync::Arc;

use crate::rng::SplitMix64;

use super::{Bounds, Move, Named, Policy, Snapshot, Entry, Settings, Strategy};

/// Which threads are balanced together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// All threads together; subdomains may cross sockets.
    Joint,
    /// Each socket on its own; nothing crosses sockets.
    Split,
    /// Split, plus one cross-socket move every `period` calls.
    Hybrid {
        /// Calls between cross-socket moves (`hybrid_period`).
        period: u64,
    },
}

impl Scope {
    /// Whether call number `call` balances all threads together (joint;
    /// hybrid on every `period`-th call) rather than each group alone.
    ///
    /// ```
    /// use braid::Scope;
    /// assert!(Scope::Joint.joint_at(1));
    /// assert!(!Scope::Split.joint_at(5));
    /// let h = Scope::Hybrid { period: 5 };
    /// assert_eq!((h.joint_at(4), h.joint_at(5)), (false, true));
    /// ```
    pub fn joint_at(self, call: u64) -> bool {
        match self {
            Scope::Joint => true,
            Scope::Split => false,
            Scope::Hybrid { period } => period > 0 && call.is_multiple_of(period),
        }
    }
}

/// The paper's Algorithm 1 with braid's departures, each of which can be
/// turned off (the top of this file says which, and why).
#[derive(Debug, Clone)]
pub struct Progressive {
    /// Scope and thresholds.
    pub bounds: Bounds,
    /// Most/least updated pairs looked at per call (`pairs`).
    pub pairs: usize,
    /// The dead band: a pair whose count gap is at most this is left alone.
    pub min_gap: u64,
    /// Move only when the receiver, holding one more subdomain, would still
    /// update each of its subdomains faster than the donor does now (by
    /// their progress since the last call).
    pub predict: bool,
    /// Seeds hybrid's cross-socket pick (with the call number).
    pub seed: u64,
}

impl Policy for Progressive {
    fn decide(&self, snap: &Snapshot<'_>) -> Vec<Move> {
        if snap.counts.is_empty() {
            return Vec::new();
        }
        let groups = match self.bounds.scope {
            Scope::Joint => Grouping::Joint,
            Scope::Split | Scope::Hybrid { .. } => Grouping::BySocket,
        };
        let mut w = Working::new(snap, groups, self.pairs.max(1));
        for g in 0..w.ends.len() {
            self.pairs_pass(&mut w, g);
        }
        if let Scope::Hybrid { period } = self.bounds.scope
            && period > 0
            && snap.call.is_multiple_of(period)
        {
            self.cross_socket(&mut w);
        }
        w.moves
    }

    fn name(&self) -> Named {
        self.bounds.named(Strategy::PROGRESSIVE)
    }

    /// As printed (`predict` off), Algorithm 1 moves the subdomain line 8
    /// finds; braid's form lets a guest go home in its place (`homes.rs`).
    fn sends_guests_home(&self) -> bool {
        self.predict
    }
}

impl Progressive {
    /// Algorithm 1 as the paper prints it, at its 4 subdomains per thread:
    /// 6 pairs, thresholds 2 and 6, no dead band, no prediction, seed 0.
    ///
    /// ```
    /// use braid::{Progressive, Scope};
    /// let p = Progressive { seed: 7, ..Progressive::as_printed(Scope::Joint) };
    /// assert_eq!((p.pairs, p.bounds.low, p.bounds.high, p.min_gap), (6, 2, 6, 0));
    /// ```
    pub fn as_printed(scope: Scope) -> Self {
        Progressive {
            bounds: Bounds {
                scope,
                low: 2,
                high: 6,
            },
            pairs: 6,
            min_gap: 0,
            predict: false,
            seed: 0,
        }
    }

    /// Algorithm 1 over group `g` (all subdomains, or one socket's).
    fn pairs_pass(&self, w: &mut Working<'_>, g: usize) {
        let ends = &w.ends[g];
        let k = self.pairs.min(ends.members / 2);
        // Line 1's order: `ends` holds the first and last k of it.
        let pairs: Vec<(usize, usize)> = (0..k)
            .map(|i| (sub_of(ends.top[i]), sub_of(ends.bottom[i])))
            .collect();
        for (top_sub, bot_sub) in pairs {
            if w.counts[top_sub].saturating_sub(w.counts[bot_sub]) <= self.min_gap {
                continue;
            }
            let (top_thread, bot_thread) = (w.owner(top_sub), w.owner(bot_sub));
            if top_thread == bot_thread
                || w.num_subs[top_thread] >= self.bounds.high
                || w.num_subs[bot_thread] <= self.bounds.low
                || (self.predict && !w.move_helps(bot_thread, top_thread))
            {
                continue;
            }
            if let Some(send) = w.most_updated_of(bot_thread, bot_sub) {
                w.move_sub(send, top_thread);
            }
        }
    }

    /// Hybrid's periodic move from the slowest socket to the fastest.
    fn cross_socket(&self, w: &mut Working<'_>) {
        let snap = w.snap;
        // Owners from the start of the call are exact here: the split pass
        // before this never moves a subdomain to another socket.
        let mut sum = vec![0u128; snap.sockets()];
        let mut num = vec![0u64; snap.sockets()];
        for (&count, &t) in snap.counts.iter().zip(snap.owners) {
            sum[snap.thread_sockets[t]] += u128::from(count);
            num[snap.thread_sockets[t]] += 1;
        }
        let avg = |s: usize| sum[s] as f64 / num[s] as f64;
        let populated: Vec<usize> = (0..sum.len()).filter(|&s| num[s] > 0).collect();
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
        let (low, high) = (self.bounds.low, self.bounds.high);
        let pick = |sock: usize, ok: &dyn Fn(usize) -> bool| -> Vec<usize> {
            (0..snap.threads())
                .filter(|&t| snap.thread_sockets[t] == sock && ok(w.num_subs[t]))
                .collect()
        };
        let donors = pick(slow, &|n| n > low);
        let receivers = pick(fast, &|n| n < high);
        if donors.is_empty() || receivers.is_empty() {
            return;
        }
        let mut rng = SplitMix64(self.seed ^ snap.call.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let donor = donors[rng.below(donors.len())];
        let receiver = receivers[rng.below(receivers.len())];
        if self.predict && !w.move_helps(donor, receiver) {
            return;
        }
        let owned = w.subs_of(donor);
        let sub = owned[rng.below(owned.len())];
        w.move_sub(sub, receiver);
    }
}

/// Algorithm 1's sort key: more updates first, then lower id. Packed so
/// that ordering keys needs no lookup.
fn key(count: u64, sub: usize) -> u128 {
    (u128::from(u64::MAX - count) << 64) | sub as u128
}

fn sub_of(key: u128) -> usize {
    key as u64 as usize
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Grouping {
    Joint,
    BySocket,
}

/// The `k` first and `k` last keys of one group in sort order.
///
/// Gathered in two linear passes, most keys rejected by one comparison:
/// the top end scanning ids upwards and the bottom end downwards, so that a
/// run of equal counts (every count is 0 when a run starts) offers keys in
/// the order that gets rejected, instead of inserting every one of them.
#[derive(Debug, Default)]
struct Ends {
    /// Smallest keys (most updated), ascending.
    top: Vec<u128>,
    /// Largest keys (least updated), descending.
    bottom: Vec<u128>,
    members: usize,
}

impl Ends {
    /// Scans `keys` (in the top end's order) for the top end. Keys are
    /// unique, so comparing with `<=` against the current limit is exact.
    #[inline(always)]
    fn scan_top(&mut self, keys: impl Iterator<Item = u128>, k: usize) {
        let limit = |top: &Vec<u128>| if top.len() < k { u128::MAX } else { top[k - 1] };
        let mut lim = limit(&self.top);
        for key in keys {
            self.members += 1;
            if key <= lim {
                insert_sorted(&mut self.top, key, k, |x, key| x < key);
                lim = limit(&self.top);
            }
        }
    }

    #[inline(always)]
    fn scan_bottom(&mut self, keys: impl Iterator<Item = u128>, k: usize) {
        let limit = |bottom: &Vec<u128>| if bottom.len() < k { 0 } else { bottom[k - 1] };
        let mut lim = limit(&self.bottom);
        for key in keys {
            if key >= lim {
                insert_sorted(&mut self.bottom, key, k, |x, key| x > key);
                lim = limit(&self.bottom);
            }
        }
    }
}

/// Inserts `key` after every `x` with `before(x, key)`, keeping `k` keys.
#[cold]
fn insert_sorted(list: &mut Vec<u128>, key: u128, k: usize, before: fn(u128, u128) -> bool) {
    let at = list.partition_point(|&x| before(x, key));
    list.insert(at, key);
    list.truncate(k);
}

/// What one call knows, as its own moves change it.
struct Working<'a> {
    snap: &'a Snapshot<'a>,
    counts: &'a [u64],
    ends: Vec<Ends>,
    num_subs: Vec<usize>,
    /// Subdomains by owner at the start of the call, built on first use
    /// (CSR: `members[start[t]..start[t + 1]]`).
    lists: std::cell::OnceCell<(Vec<usize>, Vec<usize>)>,
    /// This call's moves, in order; they override `snap.owners`.
    moves: Vec<Move>,
}

impl<'a> Working<'a> {
    fn new(snap: &'a Snapshot<'a>, grouping: Grouping, k: usize) -> Self {
        let threads = snap.threads();
        let groups = match grouping {
            Grouping::Joint => 1,
            Grouping::BySocket => snap.sockets(),
        };
        // Owners come in long runs (a thread's subdomains are mostly
        // consecutive): find them once, then scan each run with its group
        // and thread fixed, instead of two dependent loads per subdomain.
        let mut runs: Vec<(usize, usize, usize)> = Vec::new();
        for (s, &t) in snap.owners.iter().enumerate() {
            match runs.last_mut() {
                Some((_, end, owner)) if *owner == t => *end = s + 1,
                _ => runs.push((s, s + 1, t)),
            }
        }
        let group = |t: usize| match grouping {
            Grouping::Joint => 0,
            Grouping::BySocket => snap.thread_sockets[t],
        };
        let mut ends: Vec<Ends> = (0..groups).map(|_| Ends::default()).collect();
        let mut num_subs = vec![0; threads];
        for &(start, end, t) in &runs {
            num_subs[t] += end - start;
            let counts = snap.counts[start..end].iter().enumerate();
            ends[group(t)].scan_top(counts.map(|(s, &c)| key(c, start + s)), k);
        }
        for &(start, end, t) in runs.iter().rev() {
            let counts = snap.counts[start..end].iter().enumerate().rev();
            ends[group(t)].scan_bottom(counts.map(|(s, &c)| key(c, start + s)), k);
        }
        Working {
            snap,
            counts: snap.counts,
            ends,
            num_subs,
            lists: std::cell::OnceCell::new(),
            moves: Vec::new(),
        }
    }

    /// Thread `t`'s subdomains at the start of the call.
    fn original_subs(&self, t: usize) -> &[usize] {
        let (start, members) = self.lists.get_or_init(|| {
            let snap = self.snap;
            let mut start = vec![0; snap.threads() + 1];
            for &t in snap.owners {
                start[t + 1] += 1;
            }
            for t in 0..snap.threads() {
                start[t + 1] += start[t];
            }
            let mut fill = start.clone();
            let mut members = vec![0; snap.owners.len()];
            for (s, &t) in snap.owners.iter().enumerate() {
                members[fill[t]] = s;
                fill[t] += 1;
            }
            (start, members)
        });
        &members[start[t]..start[t + 1]]
    }

    fn owner(&self, sub: usize) -> usize {
        self.moves
            .iter()
            .rev()
            .find(|m| m.sub == sub)
            .map_or(self.snap.owners[sub], |m| m.to)
    }

    /// Thread `t`'s subdomains now.
    fn subs_of(&self, t: usize) -> Vec<usize> {
        let original = self.original_subs(t).iter().copied();
        let moved_in = self.moves.iter().filter(|m| m.to == t).map(|m| m.sub);
        let mut subs: Vec<usize> = original
            .chain(moved_in)
            .filter(|&s| self.owner(s) == t)
            .collect();
        subs.sort_unstable();
        subs.dedup();
        subs
    }

    /// FindMostUpdatedSubd(t), other than `except`.
    fn most_updated_of(&self, t: usize, except: usize) -> Option<usize> {
        let original = self.original_subs(t).iter().copied();
        let moved_in = self.moves.iter().filter(|m| m.to == t).map(|m| m.sub);
        original
            .chain(moved_in)
            .filter(|&s| s != except && self.owner(s) == t)
            .min_by_key(|&s| key(self.counts[s], s))
    }

    /// Whether moving one subdomain from `from` to `to` is predicted to
    /// help: `to`'s per-subdomain rate with one more subdomain stays above
    /// `from`'s now. Rates are each thread's updates since the last call,
    /// which this call's own moves do not change. Unknown progress (an
    /// empty or all-zero slice) predicts nothing and allows the move.
    fn move_helps(&self, from: usize, to: usize) -> bool {
        let snap = self.snap;
        let (nf, nt) = (self.num_subs[from], self.num_subs[to]);
        // The receiver's list only when moves are priced by it.
        let shift = match snap.homes.prices() {
            false => super::Shift::counted(nt, nf),
            true => super::Shift::priced(
                &snap.homes,
                (to, &self.subs_of(to)),
                (from, nf),
                snap.counts.len(),
                |s| self.owner(s),
            ),
        };
        super::improves_beyond_by(snap.history, snap.reading.window, to, from, shift)
    }

    fn move_sub(&mut self, sub: usize, to: usize) {
        let from = self.owner(sub);
        self.num_subs[from] -= 1;
        self.num_subs[to] += 1;
        self.moves.push(Move { sub, from, to });
    }
}


impl Strategy {
    /// The paper's Algorithm 1 ([`Progressive`]).
    pub const PROGRESSIVE: Strategy = Strategy(&ENTRY);
}

/// Its line in the registry (`policy/mod.rs`).
pub(super) const ENTRY: Entry = Entry {
    name: "progressive",
    build: |s: &Settings<'_>| Ok(Arc::new(Progressive {
        bounds: s.bounds,
        pairs: s.pairs,
        min_gap: s.min_gap,
        predict: s.predict,
        seed: s.seed,
    })),
};

#[cfg(test)]
mod tests;
