//! What the load-based strategies (greedy, refine, anticipate) balance:
//! object loads and thread speeds, and the time each thread takes to
//! sweep its set once at them. An asynchronous method keeps every
//! subdomain progressing at one rate when every thread's sweep takes as
//! long; that is the balance these strategies aim for.
//!
//! Thread `t`'s **sweep time** is `sum of its subdomains' loads / speed_t`
//! ([`Snapshot::loads`], [`Snapshot::speeds`]). Before loads are measured
//! (a snapshot with rates only) every subdomain weighs 1 and a thread's
//! speed is its measured rate: the sweep time is then `held / rate`, the
//! rate-based strategies' own measure.

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::{Bounds, Move, Owned, Snapshot, jitter, sums_by_thread};

/// How much a decision must shorten the group's longest sweep before
/// anything moves, at least: a move has a cost. Measured loads jitter more
/// than this on a real machine; the band then is that jitter's
/// ([`Weights::band`], `jitter.rs`).
pub(crate) const BAND: f64 = 0.02;

/// Loads and speeds, measured or stood in for, and the band a decision on
/// them must beat.
pub(crate) struct Weights<'a> {
    loads: Cow<'a, [f64]>,
    speeds: Cow<'a, [f64]>,
    band: f64,
}

impl<'a> Weights<'a> {
    /// The snapshot's loads and speeds, or unit loads and its rates;
    /// `None` when it has neither, or a window too short to tell a real
    /// imbalance from jitter (`lb_window`: [`super::Reading`]).
    pub(crate) fn of(snap: &Snapshot<'a>) -> Option<Weights<'a>> {
        // Measured loads only once a window of them is (the first
        // intervals are the run's start); rates stand in until then.
        let measured = Weights::measured(snap).filter(|_| {
            snap.loads.iter().any(|&l| l > 0.0) && snap.load_history.len() >= snap.reading.window
        });
        let w = measured.or_else(|| Weights::unit(snap))?;
        jitter::enough(snap).then_some(w)
    }

    /// The snapshot's loads and speeds, if it carries them (some may still
    /// be 0: not measured yet).
    /// Each subdomain's load is taken over the last intervals, so that an
    /// interval's blip (a thread preempted inside a sweep) moves nothing
    /// (`jitter.rs`), and it is the subdomain's own: a load is
    /// measured on the thread that updates it, and a thread that is slower
    /// per cell (a slower core, a busier cache) makes all its subdomains
    /// look heavier, which a move does not carry. Where the application's
    /// work is uniform ([`Snapshot::uniform_work`]: every subdomain costs
    /// the same, so what differs is the machine), each thread's typical
    /// load (the median of its subdomains') is taken as its per-cell cost
    /// and moved into its speed: a subdomain's load becomes its load
    /// relative to the others on its thread, times the threads' median
    /// cost, and the thread's speed is divided by its cost relative to that
    /// median ([`portable`]). Every sweep time is what it was; what changes
    /// is what a move is predicted to do. Measured on this machine: the two
    /// cores' per-cell costs differed by 12% over whole quiet runs, and
    /// greedy swapped two subdomains for two, back and forth, every few
    /// calls (2026-11-26). Under a workload a thread whose subdomains are
    /// all heavy would look slow instead, so there loads are taken as
    /// measured.
    pub(crate) fn measured(snap: &Snapshot<'a>) -> Option<Weights<'a>> {
        let carried = snap.loads.len() == snap.counts.len() && snap.speeds.len() == snap.threads();
        carried.then(|| {
            let loads = jitter::recent(
                snap.load_history,
                snap.loads,
                jitter::Tail::Low,
                snap.reading.recent,
            );
            let speeds = paired_speeds(snap, &loads);
            let (loads, speeds) = match snap.uniform_work {
                true => portable(snap.owners, loads, &speeds),
                false => (loads, speeds),
            };
            Weights {
                loads: Cow::Owned(loads),
                speeds: Cow::Owned(speeds),
                band: jitter::band(BAND, &jitter::scatter2(snap, true)),
            }
        })
    }

    /// Every subdomain at load 1 and each thread's rate as its speed (over
    /// the last intervals, as `jitter.rs` takes it), if the snapshot has
    /// rates.
    pub(crate) fn unit(snap: &Snapshot<'a>) -> Option<Weights<'a>> {
        (snap.rates.len() == snap.threads()).then(|| Weights {
            loads: Cow::Owned(vec![1.0; snap.counts.len()]),
            speeds: Cow::Owned(jitter::recent(
                snap.history,
                snap.rates,
                jitter::Tail::High,
                snap.reading.recent,
            )),
            band: jitter::band(BAND, &jitter::scatter2(snap, false)),
        })
    }

    /// The share by which a decision must shorten the longest sweep: at
    /// least [`BAND`], and at least [`super::Z`] times the threads' pooled
    /// relative scatter of sweep loads (or rates) over the window.
    pub(crate) fn band(&self) -> f64 {
        self.band
    }

    /// Subdomain `s`'s load.
    pub(crate) fn load(&self, s: usize) -> f64 {
        self.loads[s]
    }

    /// Thread `t`'s speed.
    pub(crate) fn speed(&self, t: usize) -> f64 {
        self.speeds[t]
    }

    /// The sweep time of `load` worth of subdomains on thread `t` at
    /// `capacity` of its speed (infinite on a thread that made no progress).
    pub(crate) fn time(&self, t: usize, load: f64, capacity: f64) -> f64 {
        let v = self.speeds[t] * capacity;
        match (load > 0.0, v > 0.0) {
            (false, _) => 0.0,
            (true, true) => load / v,
            (true, false) => f64::INFINITY,
        }
    }

    /// Each thread's summed load, as `owners` assign the subdomains.
    pub(crate) fn thread_loads(&self, owners: &[usize], threads: usize) -> Vec<f64> {
        sums_by_thread(owners, &self.loads, threads)
    }
}

/// Charm++ GreedyLB over one group: subdomains heaviest first, each to the
/// member whose sweep would then be shortest, at `capacity[i]` of member
/// `i`'s speed (ULBA's unloading scales it). Unlike GreedyLB, which deals
/// every object anew, the placement is then realised with the fewest
/// moves (subdomains of about one load are interchangeable, so each member
/// keeps its own as far as the placement's counts allow): a move costs
/// braid its cache and, across sockets, its memory, and dealing equal
/// loads from scratch would shuffle the whole grid. Members stay within their bounds (a member ends with at least
/// `min(held, low)` and at most `max(held, high)` subdomains). Nothing
/// moves unless the group's longest sweep shortens by more than the band
/// ([`Weights::band`]).
pub(crate) fn greedy(
    snap: &Snapshot<'_>,
    w: &Weights<'_>,
    group: &[usize],
    held: &[usize],
    bounds: &Bounds,
    capacity: &[f64],
) -> Vec<Move> {
    let m = Members {
        snap,
        w,
        group,
        capacity,
    };
    let sums = w.thread_loads(snap.owners, snap.threads());
    let now: Vec<f64> = group.iter().map(|&t| sums[t]).collect();
    let longest_now = m.longest(&now);
    let stalled_now = m.stalled(&now);
    let total: f64 = now.iter().sum();
    let speed: f64 = (0..group.len())
        .map(|i| w.speed(group[i]) * capacity[i])
        .sum();
    if speed <= 0.0 {
        return Vec::new();
    }
    // Already within the band of the even sweep: nothing to gain.
    let even = total / speed;
    if longest_now <= (1.0 + w.band) * even {
        return Vec::new();
    }
    let owned = Owned::of(snap);
    let floor: Vec<usize> = group.iter().map(|&t| held[t].min(bounds.low)).collect();
    let cap: Vec<usize> = group.iter().map(|&t| held[t].max(bounds.high)).collect();
    // Every subdomain of the group, heaviest first.
    let mut objects: Vec<usize> = group
        .iter()
        .flat_map(|&t| owned.of_thread(t).iter().copied())
        .collect();
    objects.sort_unstable_by(|&a, &b| w.load(b).total_cmp(&w.load(a)).then(a.cmp(&b)));
    // 1. GreedyLB's placement: each to the member whose sweep is then
    //    shortest (its owner when that is within the band of the best).
    let bin = lpt(w, group, capacity, &cap, &objects, |s| m.member(s));
    // 2. Realised with the fewest moves: subdomains of about one load
    //    (within the band) are interchangeable, so each member keeps as
    //    many of its own of each load as the placement gives it, and only
    //    the rest move, the least updated first, to the members with the
    //    shortest sweeps (lagging subdomains catch up there, as Algorithm
    //    1's moves make them).
    let to = realise(snap, w, group, capacity, &objects, &bin, |s| m.member(s));
    let mut outline = Outline::of(w, group.len(), &objects, to);
    let bounds = (floor.as_slice(), cap.as_slice());
    raise_to_floors(&m, &objects, &floor, &mut outline);
    keep_unneeded_home(&m, &objects, bounds, &mut outline);
    let held_now: Vec<usize> = group.iter().map(|&t| held[t]).collect();
    let (moves, load) = polished_or_refined(&m, &objects, bounds, outline, (now, held_now));
    if !shortens(
        longest_now,
        m.longest(&load),
        stalled_now,
        m.stalled(&load),
        w.band,
    ) {
        return Vec::new();
    }
    moves
}

/// A group under [`greedy`]: its members (threads), at `capacity[i]` of
/// member `i`'s speed.
struct Members<'a, 's, 'w> {
    snap: &'a Snapshot<'s>,
    w: &'a Weights<'w>,
    group: &'a [usize],
    capacity: &'a [f64],
}

impl Members<'_, '_, '_> {
    /// The member that owns subdomain `s`, if one does.
    fn member(&self, s: usize) -> Option<usize> {
        let t = self.snap.owners[s];
        self.group.iter().position(|&g| g == t)
    }

    /// Member `i`'s sweep of `load`.
    fn time(&self, i: usize, load: f64) -> f64 {
        self.w.time(self.group[i], load, self.capacity[i])
    }

    /// The longest sweep of the members holding `load`.
    fn longest(&self, load: &[f64]) -> f64 {
        (0..self.group.len())
            .map(|i| self.time(i, load[i]))
            .fold(0.0, f64::max)
    }

    /// Load on members that made no progress (their sweep never ends): a
    /// decision that leaves them less is better whatever the sweeps.
    fn stalled(&self, load: &[f64]) -> f64 {
        (0..self.group.len())
            .filter(|&i| self.w.speed(self.group[i]) * self.capacity[i] <= 0.0)
            .map(|i| load[i])
            .sum()
    }

    /// The moves that place each of `objects` on member `to[s]`.
    fn moves_to(&self, objects: &[usize], to: &[usize]) -> Vec<Move> {
        objects
            .iter()
            .filter(|&&s| self.group[to[s]] != self.snap.owners[s])
            .map(|&s| Move {
                sub: s,
                from: self.snap.owners[s],
                to: self.group[to[s]],
            })
            .collect()
    }
}

/// A placement in progress: each subdomain's member (`to`, indexed by
/// subdomain), and each member's load and count under it.
struct Outline {
    to: Vec<usize>,
    load: Vec<f64>,
    count: Vec<usize>,
}

impl Outline {
    fn of(w: &Weights<'_>, members: usize, objects: &[usize], to: Vec<usize>) -> Outline {
        let mut load = vec![0.0; members];
        let mut count = vec![0usize; members];
        for &s in objects {
            load[to[s]] += w.load(s);
            count[to[s]] += 1;
        }
        Outline { to, load, count }
    }

    /// Subdomain `s` (of load `load`) from member `from` to member `to`.
    fn shift(&mut self, s: usize, load: f64, from: usize, to: usize) {
        self.to[s] = to;
        self.load[from] -= load;
        self.load[to] += load;
        self.count[from] -= 1;
        self.count[to] += 1;
    }
}

/// Step 3: a member below its floor takes the lightest subdomains back from
/// the member with the longest sweep that can spare one (its own back
/// first).
fn raise_to_floors(m: &Members<'_, '_, '_>, objects: &[usize], floor: &[usize], o: &mut Outline) {
    for i in 0..m.group.len() {
        while o.count[i] < floor[i] {
            let Some(j) = (0..m.group.len())
                .filter(|&j| j != i && o.count[j] > floor[j])
                .max_by(|&a, &b| m.time(a, o.load[a]).total_cmp(&m.time(b, o.load[b])))
            else {
                break;
            };
            let back = objects
                .iter()
                .rev()
                .find(|&&s| o.to[s] == j && m.member(s) == Some(i));
            let Some(&s) = back.or_else(|| objects.iter().rev().find(|&&s| o.to[s] == j)) else {
                break;
            };
            o.shift(s, m.w.load(s), j, i);
        }
    }
}

/// Step 4: a move the plan does not need (its owner can take it back and stay
/// within the longest sweep) is not made; the most updated go back first,
/// so the lagging ones still move.
fn keep_unneeded_home(
    m: &Members<'_, '_, '_>,
    objects: &[usize],
    (floor, cap): (&[usize], &[usize]),
    o: &mut Outline,
) {
    let longest = m.longest(&o.load);
    let mut moved: Vec<usize> = objects
        .iter()
        .copied()
        .filter(|&s| m.group[o.to[s]] != m.snap.owners[s])
        .collect();
    moved.sort_unstable_by_key(|&s| (Reverse(m.snap.counts[s]), s));
    for s in moved {
        let (Some(home), r) = (m.member(s), o.to[s]) else {
            continue;
        };
        let back = m.time(home, o.load[home] + m.w.load(s));
        if back.is_finite() && back <= longest && o.count[r] > floor[r] && o.count[home] < cap[home]
        {
            o.shift(s, m.w.load(s), r, home);
        }
    }
}

/// Step 5: the outline polished by RefineLB within the band, or RefineLB from
/// where the group stands (`now`: its loads and counts), whichever is
/// better (fewer moves on a tie): its moves and the members' loads after
/// them. Both are RefineLB's fixed points, so the next call at the same
/// loads finds nothing better: no trading back.
fn polished_or_refined(
    m: &Members<'_, '_, '_>,
    objects: &[usize],
    bounds: (&[usize], &[usize]),
    outline: Outline,
    now: (Vec<f64>, Vec<usize>),
) -> (Vec<Move>, Vec<f64>) {
    let polish = |to: &mut [usize], load: Vec<f64>, count: Vec<usize>| {
        let mut gives = vec![Vec::new(); m.group.len()];
        for &s in objects {
            gives[to[s]].push(s);
        }
        let mut deal = Deal {
            load,
            count,
            gives: gives
                .into_iter()
                .map(|g| heaviest_least_updated_first(m.snap, m.w, g))
                .collect(),
        };
        for (s, _, r) in refine_deal(&mut deal, m.w, m.group, m.capacity, bounds, m.w.band) {
            to[s] = r;
        }
        deal.load
    };
    let Outline {
        mut to,
        load,
        count,
    } = outline;
    let load = polish(&mut to, load, count);
    let mut stay = to.clone();
    for &s in objects {
        stay[s] = m.member(s).unwrap_or(to[s]);
    }
    let refined = polish(&mut stay, now.0, now.1);
    let (a, b) = (m.moves_to(objects, &to), m.moves_to(objects, &stay));
    let a_better = (m.stalled(&load), m.longest(&load), a.len())
        < (m.stalled(&refined), m.longest(&refined), b.len());
    match a_better {
        true => (a, load),
        false => (b, refined),
    }
}

/// Loads as the subdomains' own and the threads' per-cell costs in their
/// speeds (see [`Weights::measured`]): each thread's cost is the median of
/// its subdomains' positive `loads`, the reference the median of those;
/// a subdomain's load is scaled by reference over its owner's cost, and the
/// owner's speed too. Threads' sums of load over speed are unchanged.
fn portable(owners: &[usize], loads: Vec<f64>, speeds: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let mut per: Vec<Vec<f64>> = vec![Vec::new(); speeds.len()];
    for (s, &o) in owners.iter().enumerate() {
        if let (Some(p), Some(&l)) = (per.get_mut(o), loads.get(s))
            && l > 0.0
            && l.is_finite()
        {
            p.push(l);
        }
    }
    let cost: Vec<Option<f64>> = per
        .iter_mut()
        .map(|p| (!p.is_empty()).then(|| jitter::median(p)))
        .collect();
    let mut all: Vec<f64> = cost.iter().flatten().copied().collect();
    if all.is_empty() {
        return (loads, speeds.to_vec());
    }
    let reference = jitter::median(&mut all);
    let scale = |t: usize| {
        cost.get(t)
            .copied()
            .flatten()
            .map_or(1.0, |c| reference / c)
    };
    let loads = loads
        .iter()
        .enumerate()
        .map(|(s, &l)| l * owners.get(s).map_or(1.0, |&o| scale(o)))
        .collect();
    let speeds = speeds
        .iter()
        .enumerate()
        .map(|(t, &v)| v * scale(t))
        .collect();
    (loads, speeds)
}

/// Each thread's speed read with `loads` (the decision's, over the recent
/// intervals), so that the time it predicts a thread takes to sweep its
/// set is one the thread took: the robust tail (second highest of four)
/// over [`Snapshot::speed_window`] of each interval's speed times how much
/// lighter `loads` make the thread's current set than that interval's
/// loads did. A load and a speed taken each over the window on its own do
/// not pair up: on a noisy core the intervals in which the parasite took
/// less of the core had slower updates (measured, docs/simulator.md), so
/// the lowest loads and the highest speed came from different intervals
/// and the thread looked faster than it had been in any of them, and
/// greedy gave it subdomains back. Only loads made with a speed (busy time
/// times it: `braid run`, `sim_loads = measured`) come with the window; a
/// cost model's loads carry none, and its decisions read
/// [`Snapshot::speeds`] as they are. Where loads held still over the
/// window each factor is exactly 1 and this is [`Snapshot::speeds`], bit
/// for bit. An interval before loads were measured counts at factor 1; a
/// thread holding nothing keeps [`Snapshot::speeds`].
fn paired_speeds(snap: &Snapshot<'_>, loads: &[f64]) -> Vec<f64> {
    let (rows, history) = (snap.speed_window, snap.load_history);
    let threads = snap.threads();
    if rows.is_empty() || history.is_empty() || snap.speeds.len() != threads {
        return snap.speeds.to_vec();
    }
    let set = |row: &[f64]| sums_by_thread(snap.owners, row, threads);
    let now = set(loads);
    // From the end: the last row of each is the last interval.
    let then: Vec<Option<Vec<f64>>> = (0..rows.len())
        .map(|k| {
            let back = rows.len() - k;
            (back <= history.len()).then(|| set(&history[history.len() - back]))
        })
        .collect();
    let mut per = Vec::with_capacity(rows.len());
    (0..threads)
        .map(|t| {
            if now[t] <= 0.0 {
                return snap.speeds[t];
            }
            per.clear();
            per.extend(rows.iter().zip(&then).filter_map(|(row, then)| {
                let v = *row.get(t)?;
                Some(match then.as_ref().map(|h| h[t]) {
                    Some(h) if h > 0.0 && h.is_finite() => v * (now[t] / h),
                    _ => v,
                })
            }));
            match per.is_empty() {
                true => snap.speeds[t],
                false => jitter::quantile(&mut per, jitter::Tail::High),
            }
        })
        .collect()
}

/// LPT (longest processing time first): `objects`, heaviest first, each to
/// the member of `group` whose sweep would then be shortest, or to
/// `owner(s)` when that is within the band of the best; a member takes no
/// more than `cap[i]`. Returns each subdomain's member (`usize::MAX` for
/// one not in `objects`).
fn lpt(
    w: &Weights<'_>,
    group: &[usize],
    capacity: &[f64],
    cap: &[usize],
    objects: &[usize],
    owner: impl Fn(usize) -> Option<usize>,
) -> Vec<usize> {
    let n = objects.iter().max().map_or(0, |&s| s + 1);
    let mut bin = vec![usize::MAX; n];
    let mut load = vec![0.0; group.len()];
    let mut count = vec![0usize; group.len()];
    // The shortest member, as a heap with lazy deletion: an entry counts
    // while its member's version is the one it was pushed with.
    let mut version = vec![0u64; group.len()];
    let entry =
        |load: f64, i: usize, v: u64| Reverse((Time(w.time(group[i], load, capacity[i])), i, v));
    let mut heap: BinaryHeap<_> = (0..group.len())
        .filter(|&i| cap[i] > 0)
        .map(|i| entry(0.0, i, 0))
        .collect();
    for &s in objects {
        let best = loop {
            let Some(Reverse((_, i, v))) = heap.pop() else {
                break None;
            };
            if v == version[i] && count[i] < cap[i] {
                break Some(i);
            }
        };
        let Some(best) = best else { break };
        let with = |i: usize| w.time(group[i], load[i] + w.load(s), capacity[i]);
        let i = owner(s)
            .filter(|&o| o != best && count[o] < cap[o] && with(o) <= (1.0 + w.band) * with(best))
            .unwrap_or(best);
        if i != best {
            heap.push(entry(load[best], best, version[best]));
        }
        load[i] += w.load(s);
        count[i] += 1;
        version[i] += 1;
        bin[s] = i;
        if count[i] < cap[i] {
            heap.push(entry(load[i], i, version[i]));
        }
    }
    bin
}

/// A placement `bin` (each subdomain's member) realised with the fewest
/// moves: `objects` (heaviest first) fall into classes of about one load
/// (within the band of the class's heaviest); in each class a member keeps
/// as many of its own as `bin` gives it, and the rest go, the least updated
/// first, to the members `bin` gives more, shortest sweep (by `bin`) first.
/// Each member ends with `bin`'s count of each class.
fn realise(
    snap: &Snapshot<'_>,
    w: &Weights<'_>,
    group: &[usize],
    capacity: &[f64],
    objects: &[usize],
    bin: &[usize],
    owner: impl Fn(usize) -> Option<usize>,
) -> Vec<usize> {
    let mut to = bin.to_vec();
    let mut sweep = vec![0.0; group.len()];
    for &s in objects {
        sweep[bin[s]] += w.load(s);
    }
    let sweep: Vec<f64> = (0..group.len())
        .map(|i| w.time(group[i], sweep[i], capacity[i]))
        .collect();
    let mut start = 0;
    while start < objects.len() {
        let top = w.load(objects[start]);
        let end = objects[start..]
            .iter()
            .position(|&s| w.load(s) < (1.0 - w.band) * top)
            .map_or(objects.len(), |k| start + k);
        let class = &objects[start..end];
        let mut wanted = vec![0usize; group.len()];
        for &s in class {
            wanted[bin[s]] += 1;
        }
        let mut surplus = Vec::new();
        for &s in class {
            match owner(s) {
                Some(o) if wanted[o] > 0 => {
                    wanted[o] -= 1;
                    to[s] = o;
                }
                _ => surplus.push(s),
            }
        }
        surplus.sort_unstable_by_key(|&s| (snap.counts[s], s));
        let mut takers: Vec<usize> = (0..group.len()).filter(|&i| wanted[i] > 0).collect();
        takers.sort_unstable_by(|&a, &b| sweep[a].total_cmp(&sweep[b]).then(a.cmp(&b)));
        let mut slots = takers
            .iter()
            .flat_map(|&i| std::iter::repeat_n(i, wanted[i]));
        for s in surplus {
            if let Some(i) = slots.next() {
                to[s] = i;
            }
        }
        start = end;
    }
    to
}

/// Whether a decision is worth making: it leaves less load on stalled
/// members, or as much and a longest sweep shorter by more than `band`
/// (infinite sweeps compare by the stalled load alone).
fn shortens(longest_now: f64, longest: f64, stalled_now: f64, stalled: f64, band: f64) -> bool {
    // Sums of the same loads in another order differ in the last bits.
    if (stalled - stalled_now).abs() > 1e-9 * stalled_now.max(stalled) {
        return stalled < stalled_now;
    }
    longest.is_finite() && longest < (1.0 - band) * longest_now
}

/// A sweep time, ordered (times are never NaN: loads and speeds are
/// finite and non-negative).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Time(f64);

impl Eq for Time {}

impl PartialOrd for Time {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Time {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// Charm++ RefineLB over one group: while the member with the longest
/// sweep is more than `tolerance` above the group's even sweep (its total
/// load over its total speed), one of that member's subdomains moves to the
/// member whose sweep would then be shortest: the heaviest that keeps the receiver
/// within the tolerance, or else the lightest, if the move shortens the
/// longest sweep by more than the band ([`Weights::band`]). A subdomain moves at most once per call; a donor keeps
/// more than `low` subdomains and a receiver holds fewer than `high`.
pub(crate) fn refine(
    snap: &Snapshot<'_>,
    w: &Weights<'_>,
    group: &[usize],
    held: &[usize],
    bounds: &Bounds,
    tolerance: f64,
) -> Vec<Move> {
    let sums = w.thread_loads(snap.owners, snap.threads());
    let capacity = vec![1.0; group.len()];
    let owned = Owned::of(snap);
    let mut deal = Deal {
        load: group.iter().map(|&t| sums[t]).collect(),
        count: group.iter().map(|&t| held[t]).collect(),
        gives: group
            .iter()
            .map(|&t| heaviest_least_updated_first(snap, w, owned.of_thread(t).to_vec()))
            .collect(),
    };
    let low = vec![bounds.low; group.len()];
    let high = vec![bounds.high; group.len()];
    // Within the jitter of even is even.
    let tolerance = tolerance.max(w.band);
    refine_deal(&mut deal, w, group, &capacity, (&low, &high), tolerance)
        .into_iter()
        .map(|(sub, from, to)| Move {
            sub,
            from: group[from],
            to: group[to],
        })
        .collect()
}

/// `subs` heaviest first, among equals the least updated first.
fn heaviest_least_updated_first(
    snap: &Snapshot<'_>,
    w: &Weights<'_>,
    mut subs: Vec<usize>,
) -> Vec<usize> {
    subs.sort_unstable_by(|&a, &b| {
        w.load(b)
            .total_cmp(&w.load(a))
            .then(snap.counts[a].cmp(&snap.counts[b]))
            .then(a.cmp(&b))
    });
    subs
}

/// A group's subdomains as dealt so far: each member's load and count, and
/// the subdomains each may still give, in the order it gives them.
struct Deal {
    load: Vec<f64>,
    count: Vec<usize>,
    gives: Vec<Vec<usize>>,
}

/// RefineLB's loop on `deal` (see [`refine`]), members at `capacity` of
/// their speed; a donor keeps more than `low[i]` subdomains and a receiver
/// holds fewer than `high[i]`. Returns the moves as `(subdomain, from
/// member, to member)`.
fn refine_deal(
    deal: &mut Deal,
    w: &Weights<'_>,
    group: &[usize],
    capacity: &[f64],
    (low, high): (&[usize], &[usize]),
    tolerance: f64,
) -> Vec<(usize, usize, usize)> {
    let speed: f64 = (0..group.len())
        .map(|i| w.speed(group[i]) * capacity[i])
        .sum();
    let mut moves = Vec::new();
    if speed <= 0.0 {
        return moves;
    }
    let even = deal.load.iter().sum::<f64>() / speed;
    let time = |i: usize, load: f64| w.time(group[i], load, capacity[i]);
    let Deal { load, count, gives } = deal;
    loop {
        let donor = (0..group.len())
            .filter(|&i| count[i] > low[i] && !gives[i].is_empty())
            .max_by(|&a, &b| {
                time(a, load[a])
                    .total_cmp(&time(b, load[b]))
                    .then(b.cmp(&a))
            });
        let Some(d) = donor else { return moves };
        let worst = time(d, load[d]);
        if worst <= (1.0 + tolerance) * even {
            return moves;
        }
        // The receiver whose sweep would be shortest with the donor's
        // lightest subdomain (the shortest now may be a slow member).
        let lightest = gives[d].last().map_or(0.0, |&s| w.load(s));
        let receiver = (0..group.len())
            .filter(|&i| i != d && count[i] < high[i] && w.speed(group[i]) * capacity[i] > 0.0)
            .min_by(|&a, &b| {
                time(a, load[a] + lightest)
                    .total_cmp(&time(b, load[b] + lightest))
                    .then(a.cmp(&b))
            });
        let Some(r) = receiver else { return moves };
        // A move must shorten the longest sweep by more than the band, or
        // equal sweeps (summed in another order, or jittering) trade
        // subdomains back and forth.
        let after = |s: usize| time(r, load[r] + w.load(s));
        let better = |s: usize| after(s) < (1.0 - w.band) * worst;
        let subs = &mut gives[d];
        let fits = subs
            .iter()
            .position(|&s| after(s) <= (1.0 + tolerance) * even && better(s));
        let pick = fits.or_else(|| {
            let last = subs.len().checked_sub(1)?;
            better(subs[last]).then_some(last)
        });
        let Some(k) = pick else { return moves };
        let s = subs.remove(k);
        moves.push((s, d, r));
        load[d] -= w.load(s);
        load[r] += w.load(s);
        count[d] -= 1;
        count[r] += 1;
    }
}
