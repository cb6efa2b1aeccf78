//! A diffusive strategy without a global view: DARMA vt's TemperedLB (the
//! gossip balancer of Menon and Kalé's GrapevineLB), on braid's object loads
//! and thread speeds.
//!
//! The global strategies decide on every thread's load at once, which
//! across ranks costs an all-gather at every call. TemperedLB needs two
//! numbers per group from everyone (the mean and the longest sweep, a cheap
//! all-reduce) and otherwise only what a few random peers tell it:
//!
//! * **Only when it pays.** A group whose most loaded thread is within 5%
//!   of the mean is left alone (vt's `run_temperedlb_tolerance`), or within
//!   the measured jitter's band where that is wider (`jitter.rs`: twice the
//!   threads' pooled relative scatter over the window, agreed in the same
//!   reduce); nothing moves before the window is three intervals long.
//! * **Inform.** Every underloaded thread (sweep time below the mean) knows
//!   of itself. In each of `rounds` synchronous rounds, every thread tells
//!   `fanout` others of its group, drawn from the seed, the call, the round
//!   and itself, what it knows, and they add it to what they know. vt's
//!   default is rounds enough for the word to cover the group:
//!   `ceil(log_fanout(n))`.
//! * **Transfer.** Each overloaded thread (sweep time above the mean), on
//!   its own, offers its subdomains heaviest first. For each it draws a
//!   target among the underloaded threads *it knows of*, with probability
//!   proportional to how far each is below the mean as it heard (vt's
//!   original cumulative mass function; the draws seeded from the call and
//!   the donor), and moves the subdomain if the target's sweep, with it,
//!   stays shorter than its own without it (vt's ModifiedGrapevine
//!   criterion). It then counts the target as that much more loaded, and
//!   as holding one more, but only in its own view: two overloaded threads
//!   may both send to one target, which is what a decision on partial
//!   knowledge does.
//!
//! Loads and speeds are [`Snapshot::loads`] and [`Snapshot::speeds`] as the
//! load-based strategies read them ([`super::objects`]: before loads are
//! measured every subdomain weighs 1 and a thread's speed is its rate). A
//! call decides the same wherever it runs and the simulator reproduces
//! byte for byte. The thresholds hold for what a donor knows: it keeps
//! more than `low`, and sends only to a target it believes holds fewer
//! than `high`. Within each group of the scope (`joint`: all threads;
//! `split`: each socket or node; `hybrid`: those, and all every
//! `period`-th call).
//!
//! **Decided apart.** Every step above reads only the deciding thread's
//! own entries and what reaches it through a [`Wire`]. In one process (the
//! simulator, the runtime) the wire is [`Whole`] and nothing travels.
//! Across ranks the runtime hands each rank's policy a snapshot that is
//! exact only for its own threads and carries the means, the letters and
//! the moves between ranks (`runtime/wire.rs`): no rank learns every
//! thread's load. A test runs one call apart on three places, with every
//! other place's entries NaN, and requires the moves of the call decided
//! whole. The simulator charges those messages on its network
//! ([`Policy::learns`], `sim/network.rs`; docs/across-nodes.md compares
//! them with the global view).

use std::sync::Arc;

use super::jitter;
use super::objects::Weights;
use super::{Bounds, Learns, Move, Named, Owned, Policy, Snapshot, Entry, Settings, Strategy};
use crate::rng::SplitMix64;

/// vt's `run_temperedlb_tolerance`: a group whose most loaded thread is
/// within this share of the mean is left alone (measured rates jitter; a
/// move has a cost).
const TOLERANCE: f64 = 0.05;

/// TemperedLB's inform and transfer stages (the top of this file).
#[derive(Debug, Clone)]
pub(crate) struct Gossip {
    /// Scope and thresholds.
    pub bounds: Bounds,
    /// Peers each informed thread tells per round (vt's `f`: 2).
    pub fanout: usize,
    /// Inform rounds; 0 = enough to reach the group, `ceil(log_f(n))`.
    pub rounds: usize,
    /// The draws' seed (`seed`).
    pub seed: u64,
}

/// What a thread tells its peers of an underloaded thread: who it is, its
/// sweep time and speed at this call, and how many subdomains it holds
/// (what a donor weighs a move to it by).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Word {
    /// The underloaded thread.
    pub thread: usize,
    /// Its sweep time.
    pub time: f64,
    /// Its speed (measured, or its rate before loads are measured).
    pub speed: f64,
    /// Subdomains it holds.
    pub held: usize,
}

/// How the threads of one call reach each other. In one process every
/// thread's facts are in the snapshot and nothing travels ([`Whole`]);
/// across ranks each rank's snapshot holds only its own threads' facts,
/// and the runtime carries the rest (`runtime/migrate.rs`). The same
/// [`Gossip`] code decides in both, so a call across ranks makes the moves
/// the same call makes in one process.
pub trait Wire {
    /// Whether thread `t` decides here: its entries in the snapshot are its
    /// own measures.
    fn here(&self, t: usize) -> bool;
    /// Sums `sums` and takes the maximum of `maxes` over every place,
    /// element by element, in place; every place calls it with the same
    /// lengths, once per call.
    fn reduce(&mut self, sums: &mut [f64], maxes: &mut [f64]);
    /// One inform round. `pairs` are the round's `(teller, told)` thread
    /// pairs, the same at every place, in one order; `letters` are, for
    /// each pair whose teller is here and knows something and whose told
    /// thread is elsewhere, the told thread and the words (a pair within
    /// one place is merged there). Returns the letters from elsewhere to
    /// the threads here.
    fn post(
        &mut self,
        pairs: &[(usize, usize)],
        letters: Vec<(usize, Vec<Word>)>,
    ) -> Vec<(usize, Vec<Word>)>;
    /// Whether every thread is here and nothing travels: then what the
    /// donors heard is worked out backwards from them ([`Reach`]), which
    /// needs memory for the donors only, not for every thread's knowledge.
    fn whole(&self) -> bool {
        false
    }
}

/// The wire of one process: every thread is here, and a letter is read
/// where it is written.
#[derive(Debug, Default)]
pub(super) struct Whole;

impl Wire for Whole {
    fn here(&self, _: usize) -> bool {
        true
    }
    fn reduce(&mut self, _: &mut [f64], _: &mut [f64]) {}
    fn post(
        &mut self,
        _: &[(usize, usize)],
        letters: Vec<(usize, Vec<Word>)>,
    ) -> Vec<(usize, Vec<Word>)> {
        letters
    }
    fn whole(&self) -> bool {
        true
    }
}

impl Policy for Gossip {
    fn decide(&self, snap: &Snapshot<'_>) -> Vec<Move> {
        self.spread(snap, &mut Whole)
    }

    fn decide_apart(&self, snap: &Snapshot<'_>, wire: &mut dyn Wire) -> Option<Vec<Move>> {
        Some(self.spread(snap, wire))
    }

    fn decides_apart(&self) -> bool {
        true
    }

    fn name(&self) -> Named {
        self.bounds.named(Strategy::GOSSIP)
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

/// A group of one call, as every place agreed on it.
struct Group<'g> {
    members: &'g [usize],
    mean: f64,
    rounds: usize,
}

/// What every place agreed on in one reduce: which loads count (`way`: 0
/// measured, 1 unit), their weights and each thread's sweep time here,
/// and per group the sums and maxima [`Agreed::reduce`] lays out.
struct Agreed<'w> {
    w: Weights<'w>,
    time: Vec<f64>,
    way: usize,
    sums: Vec<f64>,
    maxes: Vec<f64>,
}

impl<'w> Agreed<'w> {
    /// Each thread's sweep time both ways, on measured loads and on unit
    /// loads at its rate, summed and maximised over every place: which one
    /// counts is agreed in the same reduce. `None` when neither way has
    /// weights.
    fn reduce(snap: &Snapshot<'w>, wire: &mut dyn Wire, groups: &[Vec<usize>]) -> Option<Self> {
        let (n, threads) = (snap.counts.len(), snap.threads());
        let measured = Weights::measured(snap);
        let unit = Weights::unit(snap);
        let times = |w: &Option<Weights<'_>>| -> Vec<f64> {
            let Some(w) = w else {
                return vec![0.0; threads];
            };
            let loads = w.thread_loads(snap.owners, threads);
            (0..threads)
                .map(|t| match wire.here(t) {
                    true => w.time(t, loads[t], 1.0),
                    false => 0.0,
                })
                .collect()
        };
        let (time_m, time_u) = (times(&measured), times(&unit));
        let scatter = [jitter::scatter2(snap, true), jitter::scatter2(snap, false)];
        let g = groups.len();
        // sums: per group, both ways, the times and the non-finite ones,
        // then both ways the threads' squared scatters over the window and
        // how many have one; maxes: whether any place measured loads, then
        // per group both ways the longest time.
        let mut sums = vec![0.0; 8 * g];
        let mut maxes = vec![0.0; 1 + 2 * g];
        let has_loads =
            measured.is_some() && (0..n).any(|s| wire.here(snap.owners[s]) && snap.loads[s] > 0.0);
        maxes[0] = f64::from(u8::from(has_loads));
        for (k, group) in groups.iter().enumerate() {
            for &t in group.iter().filter(|&&t| wire.here(t)) {
                for (way, time) in [&time_m, &time_u].into_iter().enumerate() {
                    match time[t].is_finite() {
                        true => sums[4 * k + way] += time[t],
                        false => sums[4 * k + 2 + way] += 1.0,
                    }
                    maxes[1 + 2 * k + way] = maxes[1 + 2 * k + way].max(time[t]);
                    if let Some(c) = scatter[way][t] {
                        sums[4 * g + 4 * k + way] += c;
                        sums[4 * g + 4 * k + 2 + way] += 1.0;
                    }
                }
            }
        }
        wire.reduce(&mut sums, &mut maxes);
        let way = usize::from(maxes[0] <= 0.0);
        let (w, time) = match (way, measured, unit) {
            (0, Some(m), _) => (m, time_m),
            (_, _, Some(u)) => (u, time_u),
            _ => return None,
        };
        Some(Agreed {
            w,
            time,
            way,
            sums,
            maxes,
        })
    }
}

impl Gossip {
    /// One call: the groups' means agreed, inform, then transfer; the moves
    /// of the donors here, by donor.
    ///
    /// Every decision that shapes what travels (whether loads are measured,
    /// which groups act, how many rounds, who tells whom) is taken on
    /// agreed numbers or on the seed, never on what one place alone knows,
    /// so every place makes the same collective calls.
    fn spread(&self, snap: &Snapshot<'_>, wire: &mut dyn Wire) -> Vec<Move> {
        let (n, threads) = (snap.counts.len(), snap.threads());
        if snap.rates.len() != threads || n == 0 {
            return Vec::new(); // no interval measured yet: the same everywhere
        }
        let groups = snap.groups(self.bounds.scope);
        let held = snap.held();
        let Some(agreed) = Agreed::reduce(snap, wire, &groups) else {
            return Vec::new();
        };
        // A window too short to tell an imbalance from jitter (the same
        // length everywhere: every place has made as many calls).
        if !jitter::enough(snap) {
            return Vec::new();
        }
        let active = self.active(&groups, &agreed);
        if active.is_empty() {
            return Vec::new();
        }
        let facts = underloaded(&active, wire, &agreed.w, &agreed.time, &held, threads);
        // The donors here with their group's mean, group by group.
        let time = &agreed.time;
        let donors: Vec<(usize, f64)> = active
            .iter()
            .flat_map(|g| {
                g.members
                    .iter()
                    .filter(|&&t| wire.here(t) && time[t] > g.mean)
                    .map(|&t| (t, g.mean))
            })
            .collect();
        let owned = Owned::of(snap);
        let mut moves = Vec::new();
        let mut offer = |(t, mean): (usize, f64), heard: Vec<Word>| {
            let mine = owned.of_thread(t);
            moves.extend(self.transfer(snap, &agreed.w, mean, (t, time[t], held[t]), mine, heard));
        };
        if wire.whole() {
            let under: Vec<Word> = facts.iter().flatten().copied().collect();
            let words = reach_words(threads, donors.len());
            for chunk in donors.chunks(64 * words) {
                let ts: Vec<usize> = chunk.iter().map(|&(t, _)| t).collect();
                let reach = Reach::back(self, snap.call, &active, threads, &ts);
                for (j, word) in chunk.chunks(64).enumerate() {
                    let lists = reach.heard_by(j, &under);
                    for (&donor, list) in word.iter().zip(lists) {
                        offer(donor, list.iter().map(|&k| under[k as usize]).collect());
                    }
                }
            }
        } else {
            let known = self.inform(snap, wire, &active, &facts);
            for &donor in &donors {
                offer(donor, known.words_in(known.row(donor.0)));
            }
        }
        moves.sort_by_key(|m| m.from); // stable: each donor's in its order
        moves
    }

    /// The groups whose longest sweep passes their mean by more than the
    /// tolerance (vt's, or the jitter's band where it is wider), with the
    /// rounds their inform stage takes.
    fn active<'g>(&self, groups: &'g [Vec<usize>], agreed: &Agreed<'_>) -> Vec<Group<'g>> {
        let (g, way) = (groups.len(), agreed.way);
        let (sums, maxes) = (&agreed.sums, &agreed.maxes);
        let fanout = self.fanout.max(1);
        groups
            .iter()
            .enumerate()
            .filter_map(|(k, members)| {
                let len = members.len();
                let mean = sums[4 * k + way] / len.max(1) as f64;
                let most = maxes[1 + 2 * k + way];
                // A thread that made no progress: nothing measured yet.
                let idle = sums[4 * k + 2 + way] > 0.0;
                // vt's tolerance, or the jitter's band where it is wider.
                let (c2, with) = (sums[4 * g + 4 * k + way], sums[4 * g + 4 * k + 2 + way]);
                let tolerance = match with > 0.0 {
                    true => TOLERANCE.max(jitter::Z * (c2 / with).sqrt()),
                    false => TOLERANCE,
                };
                let pays = len >= 2 && !idle && most > mean * (1.0 + tolerance);
                pays.then(|| Group {
                    members,
                    mean,
                    rounds: match self.rounds {
                        0 => rounds_to_cover(len, fanout),
                        r => r,
                    },
                })
            })
            .collect()
    }

    /// Whom teller `teller` (member `i` of `group`) tells in `round`, its
    /// `k`-th draw: the same pairs forwards ([`Self::inform`]) and
    /// backwards ([`Reach::back`]).
    fn told_in(&self, call: u64, round: usize, group: &Group<'_>, i: usize, k: usize) -> usize {
        let len = group.members.len();
        let at = told(self.seed, call, round, group.members[i], k, len - 1);
        group.members[if at >= i { at + 1 } else { at }]
    }

    /// The inform stage, every active group's rounds together: which
    /// underloaded threads each thread here knows of. Who tells whom is
    /// drawn from the seed, the call, the round and the teller alone, so
    /// every place knows every round's pairs. A teller here tells a thread
    /// here by merging what it knew at the round's start (bits); a thread
    /// elsewhere by a letter through the wire.
    ///
    /// Its table is threads x threads bits (537 MB at 65,536 threads), so
    /// it is used only where letters travel (across ranks); in one process
    /// [`Reach::back`] finds the same for the donors alone.
    fn inform(
        &self,
        snap: &Snapshot<'_>,
        wire: &mut dyn Wire,
        active: &[Group<'_>],
        facts: &[Option<Word>],
    ) -> Knowledge {
        let fanout = self.fanout.max(1);
        let mut known = Knowledge::new(snap.threads());
        for &word in facts.iter().flatten() {
            known.learn(word.thread, word);
        }
        let rounds = active.iter().map(|g| g.rounds).max().unwrap_or(0);
        let mut pairs = Vec::new();
        for round in 0..rounds {
            pairs.clear();
            for group in active.iter().filter(|g| round < g.rounds) {
                for (i, &teller) in group.members.iter().enumerate() {
                    for k in 0..fanout {
                        pairs.push((teller, self.told_in(snap.call, round, group, i, k)));
                    }
                }
            }
            let start = known.bits.clone();
            let words = known.words;
            let row = |a: usize| &start[a * words..(a + 1) * words];
            let mut letters = Vec::new();
            for &(a, b) in pairs.iter().filter(|&&(a, _)| wire.here(a)) {
                let what = row(a);
                if what.iter().all(|&x| x == 0) {
                    continue;
                }
                match wire.here(b) {
                    true => known.merge(b, what),
                    false => letters.push((b, known.words_in(what))),
                }
            }
            for (b, words) in wire.post(&pairs, letters) {
                for word in words {
                    known.learn(b, word);
                }
            }
        }
        known
    }

    /// The transfer stage of overloaded thread `t` (sweep `own`, holding
    /// `count`), on what it heard (`heard`, ascending): its subdomains
    /// heaviest first, each to a target drawn by how far below the mean it
    /// is as `t` believes, while the target, with it, stays below `t`
    /// (vt's ModifiedGrapevine criterion). `t` counts the target as that
    /// much more loaded in its own view only: two donors may both send to
    /// one target, which is what a decision on partial knowledge does.
    fn transfer(
        &self,
        snap: &Snapshot<'_>,
        w: &Weights<'_>,
        mean: f64,
        (t, mut own, mut count): (usize, f64, usize),
        mine: &[usize],
        heard: Vec<Word>,
    ) -> Vec<Move> {
        let mut rng = SplitMix64(
            self.seed ^ snap.call.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ mix(t as u64 + 1, 0xD1B5),
        );
        let mut mine = mine.to_vec();
        mine.sort_by(|&a, &b| w.load(b).total_cmp(&w.load(a)).then(a.cmp(&b)));
        let mut view = heard;
        let mut moves = Vec::new();
        for s in mine {
            if count <= self.bounds.low || own <= mean {
                break;
            }
            let Some(k) = draw(&view, mean, &mut rng) else {
                break;
            };
            let load = w.load(s);
            let give = w.time(t, load, 1.0);
            let take = match (load > 0.0, view[k].speed > 0.0) {
                (false, _) => 0.0,
                (true, true) => load / view[k].speed,
                (true, false) => f64::INFINITY,
            };
            if view[k].held >= self.bounds.high || view[k].time + take >= own {
                // ModifiedGrapevine refuses: the target, with it, would be
                // as loaded as the donor is now. vt tries the next object;
                // so does this.
                continue;
            }
            moves.push(Move {
                sub: s,
                from: t,
                to: view[k].thread,
            });
            own -= give;
            view[k].time += take;
            view[k].held += 1;
            count -= 1;
        }
        moves
    }
}

/// Each underloaded thread's word, by thread (`None` for the others): what
/// it knows of itself before the first round (the threads here only).
fn underloaded(
    active: &[Group<'_>],
    wire: &dyn Wire,
    w: &Weights<'_>,
    time: &[f64],
    held: &[usize],
    threads: usize,
) -> Vec<Option<Word>> {
    let mut facts = vec![None; threads];
    for group in active {
        for &t in group.members.iter().filter(|&&t| wire.here(t)) {
            if time[t] < group.mean {
                facts[t] = Some(Word {
                    thread: t,
                    time: time[t],
                    speed: w.speed(t),
                    held: held[t],
                });
            }
        }
    }
    facts
}

/// At most this many bytes for [`Reach`]'s two tables: donors beyond what
/// fits are taken in further chunks (each re-walks the rounds).
const REACH_BYTES: usize = 256 << 20;

/// `u64`s per thread in a chunk of [`Reach`]: enough for every donor, as
/// far as [`REACH_BYTES`] allows, and at least one (64 donors).
fn reach_words(threads: usize, donors: usize) -> usize {
    let fit = REACH_BYTES / (16 * threads.max(1));
    donors.div_ceil(64).min(fit).max(1)
}

/// Whom each of a chunk of donors has heard of after the last round,
/// worked out backwards. After the last round a donor knows what it knew
/// and what each thread that told it in that round knew at that round's
/// start, and so on back: thread `x` is *behind* donor `d` before round
/// `r` if `x = d`, or `x` is behind `d` before round `r + 1`, or `x` tells
/// in round `r` a thread behind `d` before round `r + 1`. What `d` hears
/// of is then every underloaded thread behind it before round 0: exactly
/// [`Knowledge`]'s row of `d` after the rounds (each round merges what the
/// teller knew at its start, and knowing only grows). One bit per
/// (thread, donor of the chunk) and a copy a round, instead of one per
/// (thread, thread): at one noisy node of 64 cores, 64 donors.
struct Reach {
    /// `u64`s per thread.
    words: usize,
    /// Thread `x`'s donors it is behind before round 0.
    behind: Vec<u64>,
}

impl Reach {
    /// The rounds of `active`, walked from the last to the first, for
    /// `donors` (at most 64 per `u64` of [`reach_words`]).
    fn back(g: &Gossip, call: u64, active: &[Group<'_>], threads: usize, donors: &[usize]) -> Self {
        let words = donors.len().div_ceil(64).max(1);
        let mut after = vec![0u64; threads * words];
        for (i, &d) in donors.iter().enumerate() {
            after[d * words + i / 64] |= 1 << (i % 64);
        }
        let mut before = after.clone();
        let fanout = g.fanout.max(1);
        let rounds = active.iter().map(|g| g.rounds).max().unwrap_or(0);
        for round in (0..rounds).rev() {
            before.copy_from_slice(&after);
            for group in active.iter().filter(|g| round < g.rounds) {
                for (i, &teller) in group.members.iter().enumerate() {
                    for k in 0..fanout {
                        let b = g.told_in(call, round, group, i, k);
                        let heard = &after[b * words..(b + 1) * words];
                        let row = &mut before[teller * words..(teller + 1) * words];
                        row.iter_mut().zip(heard).for_each(|(r, h)| *r |= h);
                    }
                }
            }
            std::mem::swap(&mut before, &mut after);
        }
        Reach {
            words,
            behind: after,
        }
    }

    /// What donor `i` of the chunk heard of, by thread (as
    /// [`Knowledge::words_in`] lists a row), of the underloaded threads'
    /// words `under` (ascending). Room for all of them at once: a donor
    /// hears of most, and growing the list copied it over and over (13%
    /// of a call at 10,000 nodes).
    #[cfg(test)]
    fn heard(&self, i: usize, under: &[Word]) -> Vec<Word> {
        let (j, bit) = (i / 64, 1u64 << (i % 64));
        let mut heard = Vec::with_capacity(under.len());
        heard.extend(
            under
                .iter()
                .filter(|w| self.behind[w.thread * self.words + j] & bit != 0),
        );
        heard
    }

    /// What each of the 64 donors of the chunk's `j`-th word heard of, as
    /// [`Self::heard`] lists it, but as indices into `under`: one pass
    /// over `under` for 64 donors, reading one `u64` of each thread's row,
    /// where a pass per donor read a cache line per underloaded thread for
    /// one bit of it (70% of a 4,096-node run's time, `perf`).
    fn heard_by(&self, j: usize, under: &[Word]) -> Vec<Vec<u32>> {
        let mut lists: Vec<Vec<u32>> = Vec::with_capacity(64);
        for (k, w) in under.iter().enumerate() {
            let mut bits = self.behind[w.thread * self.words + j];
            while bits != 0 {
                let b = bits.trailing_zeros() as usize;
                while lists.len() <= b {
                    lists.push(Vec::new());
                }
                lists[b].push(k as u32);
                bits &= bits - 1;
            }
        }
        lists.resize_with(64, Vec::new);
        lists
    }
}

/// What the threads here know: one bit per (thread, underloaded thread),
/// and the words of those heard of (every copy of a thread's word is the
/// same: its own, as it stood at the call).
struct Knowledge {
    /// `u64`s per thread.
    words: usize,
    bits: Vec<u64>,
    facts: Vec<Option<Word>>,
}

impl Knowledge {
    fn new(threads: usize) -> Self {
        let words = threads.div_ceil(64);
        Knowledge {
            words,
            bits: vec![0; threads * words],
            facts: vec![None; threads],
        }
    }

    /// Thread `b` now knows of `word`'s thread.
    fn learn(&mut self, b: usize, word: Word) {
        let u = word.thread;
        self.bits[b * self.words + u / 64] |= 1 << (u % 64);
        self.facts[u] = Some(word);
    }

    /// Thread `b` now also knows what `what` (a row of bits) names.
    fn merge(&mut self, b: usize, what: &[u64]) {
        let row = &mut self.bits[b * self.words..(b + 1) * self.words];
        row.iter_mut().zip(what).for_each(|(k, w)| *k |= w);
    }

    /// Thread `a`'s row of bits.
    fn row(&self, a: usize) -> &[u64] {
        &self.bits[a * self.words..(a + 1) * self.words]
    }

    /// The words a row of bits names, by thread.
    fn words_in(&self, row: &[u64]) -> Vec<Word> {
        let mut out = Vec::new();
        for (i, &x) in row.iter().enumerate() {
            let mut x = x;
            while x != 0 {
                let u = 64 * i + x.trailing_zeros() as usize;
                out.push(self.facts[u].expect("a thread known of has its word"));
                x &= x - 1;
            }
        }
        out
    }
}

/// Whom a teller tells: the `k`-th of its draws in `round` among the
/// `others` members of its group (an index that skips the teller), from
/// the seed, the call, the round and the teller only.
fn told(seed: u64, call: u64, round: usize, teller: usize, k: usize, others: usize) -> usize {
    let key = seed
        ^ call.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ mix(round as u64 + 1, 0xA24B)
        ^ mix(teller as u64 + 1, 0x9FB2)
        ^ mix(k as u64 + 1, 0x5851);
    SplitMix64(key).below(others)
}

/// `x` spread over the word by one SplitMix64 step keyed by `salt`.
fn mix(x: u64, salt: u64) -> u64 {
    SplitMix64(x.wrapping_mul(0xBF58_476D_1CE4_E5B9) ^ salt).next()
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

/// A target from `view` (the words heard, with what the donor added), with
/// probability proportional to how far below `mean` each is; `None` if
/// none is.
fn draw(view: &[Word], mean: f64, rng: &mut SplitMix64) -> Option<usize> {
    let room: f64 = view.iter().map(|w| (mean - w.time).max(0.0)).sum();
    if room <= 0.0 {
        return None;
    }
    let mut x = rng.unit() * room;
    for (k, w) in view.iter().enumerate() {
        let r = (mean - w.time).max(0.0);
        if r > 0.0 && x < r {
            return Some(k);
        }
        x -= r;
    }
    view.iter().rposition(|w| w.time < mean)
}


impl Strategy {
    /// DARMA vt's TemperedLB: gossip, then transfer (`Gossip`).
    pub const GOSSIP: Strategy = Strategy(&ENTRY);
}

/// Its line in the registry (`policy/mod.rs`).
pub(super) const ENTRY: Entry = Entry {
    name: "gossip",
    build: |s: &Settings<'_>| Ok(Arc::new(Gossip {
        bounds: s.bounds,
        fanout: 2,
        rounds: 0,
        seed: s.seed,
    })),
};

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

    fn decide_on(
        g: &Gossip,
        owners: &[usize],
        rates: &[f64],
        sockets: &[usize],
        call: u64,
        wire: &mut dyn Wire,
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
            history: crate::policy::steady(rates),
            loads: &[],
            speeds: &[],
            load_history: &[],
            speed_window: &[],
            uniform_work: false,
            homes: crate::policy::Homes::NONE,
            since_last_s: 1.0,
            call,
            reading: crate::policy::Reading::DEFAULT,
        };
        g.spread(&snap, wire)
    }

    fn decide(
        g: &Gossip,
        owners: &[usize],
        rates: &[f64],
        sockets: &[usize],
        call: u64,
    ) -> Vec<Move> {
        decide_on(g, owners, rates, sockets, call, &mut Whole)
    }

    #[test]
    fn the_donors_hear_backwards_what_every_thread_knows_forwards() {
        // Many donors (more than one u64 of them), groups of three sizes
        // (so of different rounds), every call's draws: the moves worked
        // out backwards from the donors are those of the whole table
        // filled forwards, round by round.
        let threads = 300;
        let owners: Vec<usize> = (0..4 * threads).map(|s| s / 4).collect();
        let mut rng = SplitMix64(11);
        let rates: Vec<f64> = (0..threads).map(|_| 20.0 + 100.0 * rng.unit()).collect();
        let sockets: Vec<usize> = (0..threads)
            .map(|t| match t {
                0..150 => 0,
                150..260 => 1,
                _ => 2,
            })
            .collect();
        for scope in [Scope::Joint, Scope::Split] {
            for (fanout, rounds) in [(2, 0), (1, 3), (3, 1)] {
                let g = Gossip {
                    bounds: Bounds {
                        scope,
                        low: 1,
                        high: 100,
                    },
                    fanout,
                    rounds,
                    seed: 3,
                };
                for call in 1..4 {
                    let back = decide_on(&g, &owners, &rates, &sockets, call, &mut Whole);
                    let mut forward = Listening::default();
                    let fwd = decide_on(&g, &owners, &rates, &sockets, call, &mut forward);
                    assert!(!forward.0.is_empty(), "the forward table was filled");
                    assert!(
                        back.len() > 64,
                        "{scope:?} {fanout} {rounds}: {}",
                        back.len()
                    );
                    assert_eq!(
                        back, fwd,
                        "{scope:?}, fanout {fanout}, rounds {rounds}, call {call}"
                    );
                }
            }
        }
        // Donors taken in chunks hear what they hear all at once.
        let groups = [Group {
            members: &(0..threads).collect::<Vec<_>>(),
            mean: 0.0,
            rounds: 4,
        }];
        let g = gossip();
        let donors: Vec<usize> = (0..threads).step_by(2).collect();
        let all = Reach::back(&g, 9, &groups, threads, &donors);
        let facts: Vec<Option<Word>> = (0..threads)
            .map(|t| {
                (t % 2 == 1).then_some(Word {
                    thread: t,
                    time: t as f64,
                    speed: 1.0,
                    held: 4,
                })
            })
            .collect();
        let under: Vec<Word> = facts.iter().flatten().copied().collect();
        for (c, chunk) in donors.chunks(64).enumerate() {
            let part = Reach::back(&g, 9, &groups, threads, chunk);
            let lists = part.heard_by(0, &under);
            let by_all = all.heard_by(c, &under);
            for (i, list) in lists.iter().enumerate().take(chunk.len()) {
                let heard = part.heard(i, &under);
                assert_eq!(heard, all.heard(64 * c + i, &under));
                assert!(!heard.is_empty() && heard.len() < threads / 2);
                // The same lists, 64 donors a pass, from either chunking.
                let listed: Vec<Word> = list.iter().map(|&k| under[k as usize]).collect();
                assert_eq!(listed, heard);
                assert_eq!(&by_all[i], list);
            }
        }
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

    /// A wire over [`Whole`] that keeps each round's pairs.
    #[derive(Default)]
    struct Listening(Vec<Vec<(usize, usize)>>);

    impl Wire for Listening {
        fn here(&self, t: usize) -> bool {
            Whole.here(t)
        }
        fn reduce(&mut self, sums: &mut [f64], maxes: &mut [f64]) {
            Whole.reduce(sums, maxes);
        }
        fn post(
            &mut self,
            pairs: &[(usize, usize)],
            letters: Vec<(usize, Vec<Word>)>,
        ) -> Vec<(usize, Vec<Word>)> {
            self.0.push(pairs.to_vec());
            Whole.post(pairs, letters)
        }
    }

    #[test]
    fn each_round_every_thread_tells_fanout_others_drawn_from_the_seed() {
        let (owners, rates, sockets) = snapshot_parts(16, 0.25);
        let snap = |call| {
            let held = vec![4; 16];
            let (o, r, so) = (owners.clone(), rates.clone(), sockets.clone());
            (o, r, so, held, call)
        };
        let rounds = |g: &Gossip, call| {
            let (o, r, so, held, call) = snap(call);
            let counts = vec![0; o.len()];
            let progress = vec![0; 16];
            let s = Snapshot {
                counts: &counts,
                owners: &o,
                thread_sockets: &so,
                held: &held,
                progress: &progress,
                rates: &r,
                residuals: &[],
                history: crate::policy::steady(&r),
                loads: &[],
                speeds: &[],
                load_history: &[],
                speed_window: &[],
                uniform_work: false,
                homes: crate::policy::Homes::NONE,
                since_last_s: 1.0,
                call,
                reading: crate::policy::Reading::DEFAULT,
            };
            let mut wire = Listening::default();
            g.decide_apart(&s, &mut wire);
            wire.0
        };
        let one = Gossip {
            rounds: 1,
            fanout: 1,
            ..gossip()
        };
        let heard = rounds(&one, 3);
        assert_eq!(heard.len(), 1);
        let tellers: Vec<usize> = heard[0].iter().map(|p| p.0).collect();
        assert_eq!(
            tellers,
            (0..16).collect::<Vec<_>>(),
            "each thread tells one"
        );
        assert!(heard[0].iter().all(|(a, b)| a != b), "never itself");
        // vt's default: rounds enough to cover the group, fanout 2 each.
        let all = rounds(&gossip(), 3);
        assert_eq!(all.len(), rounds_to_cover(16, 2));
        assert!(all.iter().all(|r| r.len() == 32));
        assert_eq!(all, rounds(&gossip(), 3), "drawn from the seed");
        assert_ne!(all, rounds(&gossip(), 4), "and the call");
    }

    /// What one place puts down at a meeting: sums, maxes, letters.
    type Put = (Vec<f64>, Vec<f64>, Vec<(usize, Vec<Word>)>);

    /// Places that each hold some threads' facts, meeting in memory.
    struct Hub {
        barrier: std::sync::Barrier,
        board: std::sync::Mutex<Vec<Put>>,
    }

    struct Place<'h> {
        hub: &'h Hub,
        threads: std::ops::Range<usize>,
        /// Every round's pairs as this place saw them.
        pairs: Vec<Vec<(usize, usize)>>,
    }

    impl Place<'_> {
        fn meet<T>(&self, put: Put, read: impl FnOnce(&[Put]) -> T) -> T {
            self.hub.board.lock().unwrap().push(put);
            self.hub.barrier.wait();
            let out = read(&self.hub.board.lock().unwrap());
            if self.hub.barrier.wait().is_leader() {
                self.hub.board.lock().unwrap().clear();
            }
            self.hub.barrier.wait();
            out
        }
    }

    impl Wire for Place<'_> {
        fn here(&self, t: usize) -> bool {
            self.threads.contains(&t)
        }
        fn reduce(&mut self, sums: &mut [f64], maxes: &mut [f64]) {
            let (s, m) = self.meet((sums.to_vec(), maxes.to_vec(), Vec::new()), |all| {
                let mut s = vec![0.0; sums.len()];
                let mut m = vec![f64::NEG_INFINITY; maxes.len()];
                for (ps, pm, _) in all {
                    s.iter_mut().zip(ps).for_each(|(a, b)| *a += b);
                    m.iter_mut().zip(pm).for_each(|(a, b)| *a = a.max(*b));
                }
                (s, m)
            });
            sums.copy_from_slice(&s);
            maxes.copy_from_slice(&m);
        }
        fn post(
            &mut self,
            pairs: &[(usize, usize)],
            letters: Vec<(usize, Vec<Word>)>,
        ) -> Vec<(usize, Vec<Word>)> {
            self.pairs.push(pairs.to_vec());
            let mine = self.threads.clone();
            self.meet((Vec::new(), Vec::new(), letters), |all| {
                all.iter()
                    .flat_map(|(_, _, l)| l.iter().filter(|(b, _)| mine.contains(b)).cloned())
                    .collect()
            })
        }
    }

    /// 12 threads on 3 places of 4, in 2 sockets that span places; thread
    /// 1 slow; 3 subdomains each, of loads that differ. At each place,
    /// every other place's entries are NaN: reading one would show.
    fn apart_against_whole(g: &Gossip, measured: bool, call: u64) {
        let threads = 12;
        let owners: Vec<usize> = (0..3 * threads).map(|s| s / 3).collect();
        let sockets: Vec<usize> = (0..threads).map(|t| usize::from(t >= 6)).collect();
        let mut rates = vec![90.0; threads];
        rates[1] = 20.0;
        rates[7] = 50.0;
        let loads: Vec<f64> = (0..owners.len())
            .map(|s| 1.0 + (s % 5) as f64 / 4.0)
            .collect();
        let mut speeds = vec![1.0; threads];
        speeds[1] = 0.3;
        speeds[7] = 0.6;
        let held = vec![3; threads];
        let (counts, progress) = (vec![0; owners.len()], vec![0; threads]);
        let snap =
            |rates: &[f64], loads: &[f64], speeds: &[f64], f: &mut dyn FnMut(&Snapshot<'_>)| {
                f(&Snapshot {
                    counts: &counts,
                    owners: &owners,
                    thread_sockets: &sockets,
                    held: &held,
                    progress: &progress,
                    rates,
                    residuals: &[],
                    history: crate::policy::steady(rates),
                    loads: if measured { loads } else { &[] },
                    speeds: if measured { speeds } else { &[] },
                    load_history: if measured {
                        crate::policy::steady(loads)
                    } else {
                        &[]
                    },
                    speed_window: if measured {
                        crate::policy::steady(speeds)
                    } else {
                        &[]
                    },
                    uniform_work: false,
                    homes: crate::policy::Homes::NONE,
                    since_last_s: 1.0,
                    call,
                    reading: crate::policy::Reading::DEFAULT,
                })
            };
        let mut whole = Vec::new();
        snap(&rates, &loads, &speeds, &mut |s| whole = g.decide(s));
        assert!(!whole.is_empty(), "nothing to compare: {measured} {call}");
        let hub = Hub {
            barrier: std::sync::Barrier::new(3),
            board: std::sync::Mutex::new(Vec::new()),
        };
        type Part = (Vec<Move>, Vec<Vec<(usize, usize)>>);
        let parts: Vec<Part> = std::thread::scope(|sc| {
            let hub = &hub;
            let places: Vec<_> = (0..3)
                .map(|p| {
                    let (rates, loads, speeds) = (&rates, &loads, &speeds);
                    let (owners, snap) = (&owners, &snap);
                    sc.spawn(move || {
                        let mine = 4 * p..4 * (p + 1);
                        let hide = |t: usize, x: f64| if mine.contains(&t) { x } else { f64::NAN };
                        let r: Vec<f64> = (0..threads).map(|t| hide(t, rates[t])).collect();
                        let sp: Vec<f64> = (0..threads).map(|t| hide(t, speeds[t])).collect();
                        let l: Vec<f64> = (0..loads.len())
                            .map(|s| hide(owners[s], loads[s]))
                            .collect();
                        let mut place = Place {
                            hub,
                            threads: mine.clone(),
                            pairs: Vec::new(),
                        };
                        let mut moves = Vec::new();
                        snap(&r, &l, &sp, &mut |s| {
                            moves = g.decide_apart(s, &mut place).unwrap();
                        });
                        assert!(moves.iter().all(|m| mine.contains(&m.from)));
                        (moves, place.pairs)
                    })
                })
                .collect();
            places.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(
            parts.iter().all(|p| p.1 == parts[0].1),
            "every place, the same pairs"
        );
        let apart: Vec<Move> = parts.into_iter().flat_map(|p| p.0).collect();
        assert_eq!(apart, whole, "measured {measured}, call {call}");
    }

    #[test]
    fn a_call_decided_apart_makes_the_moves_of_the_call_decided_whole() {
        for scope in [Scope::Joint, Scope::Split] {
            let g = Gossip {
                bounds: Bounds {
                    scope,
                    ..gossip().bounds
                },
                ..gossip()
            };
            for call in 1..6 {
                apart_against_whole(&g, true, call);
                apart_against_whole(&g, false, call);
            }
        }
    }

    #[test]
    fn the_rounds_cover_the_group() {
        assert_eq!(rounds_to_cover(1, 2), 0);
        assert_eq!(rounds_to_cover(3, 2), 1);
        assert_eq!(rounds_to_cover(4, 2), 2);
        assert_eq!(rounds_to_cover(2304, 2), 8);
    }
}
