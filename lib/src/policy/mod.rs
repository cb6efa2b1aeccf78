//! Balancer decisions as pure functions: a [`Snapshot`] of the run in, a
//! list of [`Move`]s out. No clocks, threads or atomics here, so the real
//! runtime and the virtual-time simulator call the very same code, and every
//! decision can be tested on hand-made snapshots.
//!
//! A strategy implements [`Policy`]. The paper's Algorithm 1 in its joint,
//! split and hybrid forms is [`Progressive`]; the others come from the
//! balancing literature, each with its source at the top of its file:
//! [`Steal`], [`Greedy`], [`Refine`], [`Anticipate`], [`ResidualFirst`]. A
//! strategy's fields are its settings: its file builds it from
//! [`Settings`], which `plan` fills from the configuration this module
//! never sees. The registry of strategies is the `strategies!` list below.

mod homes;
pub(crate) mod jitter;
pub(crate) mod learned;
mod objects;
mod payoff;

/// The registry of strategies, Algorithm 1 first: each line names a
/// module that holds one strategy whole (its policy, its [`Strategy`]
/// constant and its `ENTRY`: name and constructor). Adding a strategy is
/// its file, its line here, and its colour in the figures' `look.rs`
/// (docs/architecture.md, "Adding a strategy").
macro_rules! strategies {
    ($($module:ident),* $(,)?) => {
        $(mod $module;)*

        impl Choice for Strategy {
            const NAMES: &'static [(&'static str, Strategy)] =
                &[$(($module::ENTRY.name, Strategy(&$module::ENTRY))),*];
            const WITH_FILE: (Strategy, &'static str) = (Strategy::PRESCRIBED, "DIR");
        }
    };
}

strategies! {
    progressive,
    steal,
    greedy,
    refine,
    anticipate,
    residual,
    gossip,
    prescribed,
}

pub use anticipate::Anticipate;
pub(crate) use gossip::rounds_to_cover;
pub(crate) use gossip::{Wire, Word};
pub use greedy::Greedy;
pub use homes::{Homes, Shift, homeward};
pub use jitter::{MIN_INTERVALS, RECENT, Reading, improves_beyond, improves_beyond_by};
pub(crate) use payoff::{AWAY_MEMORY, Gate};
pub use payoff::{measured_away, paying};
pub use progressive::{Progressive, Scope};
pub use refine::Refine;
pub use residual::ResidualFirst;
pub use steal::Steal;

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::choice::{Choice, WithFile};
use crate::lbdata::read::Recording;

/// The `lb_strategy` key: a strategy, and for `prescribed` the directory
/// of LB data whose owners it applies (`prescribed:DIR`).
///
/// ```
/// use braid::{LbStrategy, Strategy};
/// let s: LbStrategy = "prescribed:lb/run 1".parse().unwrap();
/// assert_eq!(s.kind, Strategy::PRESCRIBED);
/// assert_eq!(s.to_string(), "prescribed:lb/run 1");
/// assert_eq!("steal".parse::<LbStrategy>().unwrap(), LbStrategy::of(Strategy::STEAL));
/// assert!("prescribed:".parse::<LbStrategy>().is_err());
/// ```
pub type LbStrategy = WithFile<Strategy>;

/// Which balancing strategy runs (async only; `lb_strategy`): one entry
/// of the registry above, named by its constant (`Strategy::GREEDY`) or
/// its name (`"greedy".parse()`).
///
/// ```
/// use braid::Strategy;
/// assert_eq!(Strategy::GREEDY.name(), "greedy");
/// assert_eq!(Strategy::all().next(), Some(Strategy::PROGRESSIVE));
/// assert!(Strategy::all().all(|s| s != Strategy::PRESCRIBED));
/// ```
#[derive(Clone, Copy)]
pub struct Strategy(&'static Entry);

/// A strategy as the registry holds it.
pub(crate) struct Entry {
    /// Its name in labels and in `lb_strategy`.
    pub(crate) name: &'static str,
    /// It, built with the run's settings; an error says what is wrong
    /// with them.
    pub(crate) build: fn(&Settings<'_>) -> Result<Arc<dyn Policy>, String>,
}

/// What a strategy is built from: its bounds and the `lb_*` settings
/// strategies read (`plan` fills it from the configuration).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Settings<'a> {
    /// Scope and thresholds.
    pub(crate) bounds: Bounds,
    /// `pairs`.
    pub(crate) pairs: usize,
    /// `lb_min_gap` (auto: [`DEFAULT_MIN_GAP`]).
    pub(crate) min_gap: u64,
    /// `lb_predict`.
    pub(crate) predict: bool,
    /// `seed`.
    pub(crate) seed: u64,
    /// `lb_tolerance`.
    pub(crate) tolerance: f64,
    /// `lb_alpha`.
    pub(crate) alpha: f64,
    /// `lb_history`.
    pub(crate) history: usize,
    /// The LB data read from the file strategy's directory
    /// (`prescribed:DIR`); `None` for every other strategy.
    pub(crate) recording: Option<&'a Recording>,
    /// The run's subdomains.
    pub(crate) subdomains: usize,
    /// The run's threads.
    pub(crate) threads: usize,
}

impl PartialEq for Strategy {
    fn eq(&self, other: &Strategy) -> bool {
        self.0.name == other.0.name
    }
}

impl Eq for Strategy {}

impl fmt::Debug for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name)
    }
}

impl Serialize for Strategy {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0.name)
    }
}

impl<'de> Deserialize<'de> for Strategy {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Strategy, D::Error> {
        let name = String::deserialize(d)?;
        Strategy::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, s)| s)
            .ok_or_else(|| serde::de::Error::custom(format!("no strategy named `{name}`")))
    }
}

impl Strategy {
    /// Every strategy that needs nothing but the run (all but the one
    /// that applies a file's owners, `prescribed`), Algorithm 1 first.
    pub fn all() -> impl Iterator<Item = Strategy> {
        Strategy::NAMES
            .iter()
            .map(|&(_, s)| s)
            .filter(|&s| s != Strategy::WITH_FILE.0)
    }

    /// The name in labels and in `lb_strategy`.
    pub fn name(self) -> &'static str {
        self.0.name
    }

    /// This strategy, built with `settings`.
    pub(crate) fn build(self, settings: &Settings<'_>) -> Result<Arc<dyn Policy>, String> {
        (self.0.build)(settings)
    }
}

/// One balancer: a strategy over a scope, named as in labels without the
/// arguments. Algorithm 1 is named by its scope alone (the paper's `split`,
/// `joint`, `hybrid`); another strategy by its name (joint), or its name
/// with `-split` or `-hybrid`.
///
/// ```
/// use braid::{Named, Scope, Strategy};
/// let n: Named = "steal-split".parse().unwrap();
/// assert_eq!((n.strategy, n.scope), (Strategy::STEAL, Scope::Split));
/// assert_eq!("hybrid".parse::<Named>().unwrap().to_string(), "hybrid");
/// assert_eq!("greedy".parse::<Named>().unwrap().scope, Scope::Joint);
/// assert!("steal-".parse::<Named>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Named {
    /// Which strategy.
    pub strategy: Strategy,
    /// A hybrid scope parsed from a name has period 0 until the caller
    /// sets it (labels carry it; `hybrid_period` for candidates).
    pub scope: Scope,
}

impl fmt::Display for Named {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scope = match self.scope {
            Scope::Joint => "joint",
            Scope::Split => "split",
            Scope::Hybrid { .. } => "hybrid",
        };
        match (self.strategy, self.scope) {
            (s, _) if s == Strategy::PROGRESSIVE => f.write_str(scope),
            (s, Scope::Joint) => f.write_str(s.name()),
            (s, _) => write!(f, "{}-{scope}", s.name()),
        }
    }
}

impl Serialize for Named {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Named {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Named, D::Error> {
        let name = String::deserialize(d)?;
        name.parse()
            .map_err(|()| serde::de::Error::custom(format!("no balancer named `{name}`")))
    }
}

impl Named {
    /// Every name a label may give a balancer: `split`, `joint`, `hybrid`,
    /// and each other strategy alone or with `-split` or `-hybrid`.
    pub fn names() -> Vec<String> {
        let mut names: Vec<String> = ["split", "joint", "hybrid"].map(String::from).into();
        for s in Strategy::all().filter(|s| *s != Strategy::PROGRESSIVE) {
            for tail in ["", "-split", "-hybrid", "-joint"] {
                names.push(format!("{}{tail}", s.name()));
            }
        }
        names
    }
}

impl std::str::FromStr for Named {
    type Err = ();

    fn from_str(name: &str) -> Result<Named, ()> {
        let scope = |s: &str| match s {
            "joint" => Some(Scope::Joint),
            "split" => Some(Scope::Split),
            "hybrid" => Some(Scope::Hybrid { period: 0 }),
            _ => None,
        };
        if let Some(scope) = scope(name) {
            return Ok(Named {
                strategy: Strategy::PROGRESSIVE,
                scope,
            });
        }
        let (head, tail) = name.split_once('-').unwrap_or((name, "joint"));
        let strategy = Strategy::NAMES
            .iter()
            .map(|&(_, s)| s)
            .find(|s| *s != Strategy::PROGRESSIVE && s.name() == head)
            .ok_or(())?;
        Ok(Named {
            strategy,
            scope: scope(tail).ok_or(())?,
        })
    }
}

/// What a balancer sees: one consistent-enough view of the run.
#[derive(Debug, Clone, Copy)]
pub struct Snapshot<'a> {
    /// Update count of every subdomain.
    pub counts: &'a [u64],
    /// Owning thread of every subdomain.
    pub owners: &'a [usize],
    /// Socket index of every thread.
    pub thread_sockets: &'a [usize],
    /// How many subdomains each thread holds, as `owners` says (the engine
    /// counts them while it copies the owners, so that no strategy needs a
    /// pass of its own); empty: counted from `owners` when asked.
    pub held: &'a [usize],
    /// Subdomain updates each thread made since the previous call (since
    /// the start, at the first): its measured speed over the last interval.
    /// Empty when unknown.
    pub progress: &'a [u64],
    /// Each thread's update rate over the same interval: `progress` per
    /// second of the engine's clock (wall or virtual). Empty when unknown
    /// (no time has passed yet).
    pub rates: &'a [f64],
    /// Each subdomain's squared local residual as its last update computed
    /// it. Empty when the run computes none (no residual target; or a
    /// simulation that only counts).
    pub residuals: &'a [f64],
    /// Each thread's update rate (as `rates`) over each of the last
    /// intervals, oldest first, this interval (`rates`) last; at most
    /// [`HISTORY`] of them. Empty when unknown.
    pub history: &'a [Vec<f64>],
    /// Each subdomain's *object load*: seconds per update on a core at full
    /// speed, measured over the last interval (its time updating there,
    /// times its owner's speed, over its updates; a subdomain not updated
    /// in the interval keeps its last load). Empty unless measured
    /// ([`Policy::reads_loads`], or a workload that is not uniform).
    pub loads: &'a [f64],
    /// Each thread's speed over the last interval: the share of a full-speed
    /// core it got (its CPU time over wall time in `run`; its work at the
    /// nominal cost over the time it took in `sim`). Empty unless measured.
    pub speeds: &'a [f64],
    /// Each subdomain's load (as `loads`) over each of the last intervals,
    /// oldest first, `loads` last; at most [`HISTORY`] of them. Empty unless
    /// measured.
    pub load_history: &'a [Vec<f64>],
    /// Each thread's speed in each of the intervals `speeds` is taken over
    /// (as `speeds`, but each interval's own), oldest first; its last row
    /// is the interval of `loads`, as `load_history`'s last row is, so the
    /// two pair up from the end. A load-based decision reads a thread's
    /// speed with its loads interval by interval (`objects.rs`). Empty
    /// unless the loads were made with these speeds (a busy time times its
    /// owner's speed: `braid run`, `sim_loads = measured`); a cost model's
    /// loads carry no speed.
    pub speed_window: &'a [Vec<f64>],
    /// Whether the application's work is uniform (every cell costs the
    /// same: `workload = uniform`), so that measured loads that differ
    /// between threads are the machine's (a slower core), not the
    /// subdomains' (`objects.rs`).
    pub uniform_work: bool,
    /// Each subdomain's home thread and what it costs away from there
    /// ([`Homes`]; none in snapshots made by hand).
    pub homes: Homes,
    /// Seconds since the previous call (since the start, at the first).
    pub since_last_s: f64,
    /// 1-based number of this balancer call.
    pub call: u64,
    /// How the window is read: the intervals measured before anything
    /// moves (`lb_window`) and the last of them a load-based decision
    /// reads each load and speed over (`lb_recent`); [`Reading::DEFAULT`]
    /// unless configured. See `jitter.rs`.
    pub reading: Reading,
}

impl<'a> Snapshot<'a> {
    /// The first call's view of counts and owners alone, nothing measured
    /// yet (tests and benchmarks build on it).
    ///
    /// ```
    /// use braid::Snapshot;
    /// let s = Snapshot::of(&[3, 1], &[0, 1], &[0, 0]);
    /// assert_eq!((s.threads(), s.sockets(), s.call), (2, 1, 1));
    /// assert!(s.progress.is_empty() && s.rates.is_empty());
    /// ```
    pub fn of(counts: &'a [u64], owners: &'a [usize], thread_sockets: &'a [usize]) -> Self {
        Snapshot {
            counts,
            owners,
            thread_sockets,
            held: &[],
            progress: &[],
            rates: &[],
            residuals: &[],
            history: &[],
            loads: &[],
            speeds: &[],
            load_history: &[],
            speed_window: &[],
            uniform_work: false,
            homes: Homes::NONE,
            since_last_s: 0.0,
            call: 1,
            reading: Reading::DEFAULT,
        }
    }
}

impl Snapshot<'_> {
    /// How many threads.
    pub fn threads(&self) -> usize {
        self.thread_sockets.len()
    }

    /// How many sockets (one more than the highest socket index).
    pub fn sockets(&self) -> usize {
        self.thread_sockets.iter().max().map_or(0, |&s| s + 1)
    }

    /// How many subdomains each thread holds.
    pub fn held(&self) -> Vec<usize> {
        if self.held.len() == self.threads() {
            return self.held.to_vec();
        }
        let mut held = vec![0usize; self.threads()];
        for &o in self.owners {
            held[o] += 1;
        }
        held
    }

    /// The groups of threads balanced together at this call: all of them
    /// (`Joint`, and `Hybrid` on every `period`-th call), else one per
    /// socket.
    pub fn groups(&self, scope: Scope) -> Vec<Vec<usize>> {
        let threads = self.threads();
        if scope.joint_at(self.call) {
            return vec![(0..threads).collect()];
        }
        (0..self.sockets())
            .map(|s| {
                (0..threads)
                    .filter(|&t| self.thread_sockets[t] == s)
                    .collect()
            })
            .collect()
    }
}

/// Each thread's sum of `values` over the subdomains `owners` gives it
/// (in subdomain order; an owner or value out of range counts nothing):
/// a thread's load, interval by interval or now.
pub(crate) fn sums_by_thread(owners: &[usize], values: &[f64], threads: usize) -> Vec<f64> {
    let mut sum = vec![0.0; threads];
    for (s, &o) in owners.iter().enumerate() {
        if let (Some(t), Some(&v)) = (sum.get_mut(o), values.get(s)) {
            *t += v;
        }
    }
    sum
}

/// The frame every rate-based strategy shares: nothing before rates are
/// known; else `each(group, held)` for every group of threads balanced
/// together at this call, its moves in group order.
pub(crate) fn by_group(
    snap: &Snapshot<'_>,
    scope: Scope,
    mut each: impl FnMut(&[usize], &[usize]) -> Vec<Move>,
) -> Vec<Move> {
    if snap.rates.len() != snap.threads() || snap.counts.is_empty() {
        return Vec::new();
    }
    let held = snap.held();
    snap.groups(scope)
        .iter()
        .flat_map(|group| each(group, &held))
        .collect()
}

/// Every thread's subdomains, bucketed in one pass (one flat array).
pub(crate) struct Owned {
    start: Vec<usize>,
    subs: Vec<usize>,
}

impl Owned {
    pub(crate) fn of(snap: &Snapshot<'_>) -> Owned {
        let mut start = vec![0usize; snap.threads() + 1];
        for &o in snap.owners {
            start[o + 1] += 1;
        }
        for t in 0..snap.threads() {
            start[t + 1] += start[t];
        }
        let mut fill = start.clone();
        let mut subs = vec![0usize; snap.owners.len()];
        for (s, &o) in snap.owners.iter().enumerate() {
            subs[fill[o]] = s;
            fill[o] += 1;
        }
        Owned { start, subs }
    }

    pub(crate) fn of_thread(&self, t: usize) -> &[usize] {
        &self.subs[self.start[t]..self.start[t + 1]]
    }
}

/// Intervals of rates a snapshot carries at most.
pub const HISTORY: usize = 8;

/// What every strategy respects: which threads it balances together at a
/// call ([`Scope`]), and how many subdomains a thread may give away and
/// receive: a donor keeps more than `low`, a receiver holds fewer than
/// `high` (`low_threshold`, `high_threshold`).
///
/// ```
/// use braid::{Bounds, Scope, Strategy};
/// let b = Bounds { scope: Scope::Split, low: 2, high: 6 };
/// assert_eq!(b.named(Strategy::STEAL).to_string(), "steal-split");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Which threads are balanced together at a call.
    pub scope: Scope,
    /// A donor keeps more than this many subdomains.
    pub low: usize,
    /// A receiver holds fewer than this many.
    pub high: usize,
}

impl Bounds {
    /// `strategy` over this scope, as labels name it.
    pub fn named(self, strategy: Strategy) -> Named {
        Named {
            strategy,
            scope: self.scope,
        }
    }
}

/// Subdomain `sub` goes from thread `from` to thread `to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Move {
    /// The subdomain.
    pub sub: usize,
    /// Its owner now.
    pub from: usize,
    /// Its owner after the move.
    pub to: usize,
}

/// A balancing strategy.
pub trait Policy: Send + Sync + std::fmt::Debug {
    /// The moves to make, in order; a pure function of the snapshot.
    fn decide(&self, snapshot: &Snapshot<'_>) -> Vec<Move>;

    /// Its name in labels (`steal-split`), for reports.
    fn name(&self) -> Named;

    /// Whether a guest may go home in place of the subdomain it picks
    /// ([`homeward`]): yes, unless which subdomain moves is its point.
    fn sends_guests_home(&self) -> bool {
        true
    }

    /// Whether it reads [`Snapshot::loads`] and [`Snapshot::speeds`]: the
    /// engines measure them only then (or for a workload that is not
    /// uniform).
    fn reads_loads(&self) -> bool {
        false
    }

    /// How a call learns what it decides on when it balances threads of
    /// several nodes together: what a network charges for it.
    fn learns(&self) -> Learns {
        Learns::Everything
    }

    /// The moves of the threads here, deciding with only their entries of
    /// `snapshot` and learning the rest through `wire` (a call across
    /// ranks that gathers no view); `None`: this policy needs the whole
    /// view. Given [`Whole`], the same moves as [`Policy::decide`].
    fn decide_apart(&self, _snapshot: &Snapshot<'_>, _wire: &mut dyn Wire) -> Option<Vec<Move>> {
        None
    }

    /// Whether [`Policy::decide_apart`] decides (is not `None`).
    fn decides_apart(&self) -> bool {
        false
    }
}

/// How a strategy learns the loads it decides on, when its threads are on
/// several nodes (what the simulator's network prices, `sim/network.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Learns {
    /// Every thread's and subdomain's entries of the view, all-gathered:
    /// the global strategies.
    Everything,
    /// The mean load (an all-reduce of one number), then `rounds` rounds
    /// in which each thread tells `fanout` random peers what it knows
    /// (`Gossip`, the `gossip` strategy).
    Gossip {
        /// Peers told per round.
        fanout: usize,
        /// Rounds.
        rounds: usize,
    },
}

/// A window of [`MIN_INTERVALS`] intervals, each measuring `row`: rates or
/// loads held steady, as a snapshot's history (tests build snapshots by
/// hand; leaked, for the test's lifetime).
#[cfg(test)]
pub(crate) fn steady(row: &[f64]) -> &'static [Vec<f64>] {
    Box::leak(vec![row.to_vec(); MIN_INTERVALS].into_boxed_slice())
}

/// What one call saw: progress, rates, residuals, seconds since the last.
#[cfg(test)]
pub(crate) type Seen = (Vec<u64>, Vec<f64>, Vec<f64>, f64);

/// A policy that moves nothing and keeps what each call saw (tests of what
/// the engines measure).
#[cfg(test)]
#[derive(Debug, Default)]
pub(crate) struct Recorder {
    pub(crate) seen: std::sync::Mutex<Vec<Seen>>,
    /// The loads and speeds of each call.
    pub(crate) loads: std::sync::Mutex<Vec<(Vec<f64>, Vec<f64>)>>,
}

#[cfg(test)]
impl Policy for Recorder {
    fn decide(&self, s: &Snapshot<'_>) -> Vec<Move> {
        let seen = (
            s.progress.to_vec(),
            s.rates.to_vec(),
            s.residuals.to_vec(),
            s.since_last_s,
        );
        self.seen.lock().unwrap().push(seen);
        let loads = (s.loads.to_vec(), s.speeds.to_vec());
        self.loads.lock().unwrap().push(loads);
        Vec::new()
    }

    fn reads_loads(&self) -> bool {
        true
    }

    fn name(&self) -> Named {
        Named {
            strategy: Strategy::PROGRESSIVE,
            scope: Scope::Joint,
        }
    }
}

/// `lb_min_gap = auto`: how far apart (in updates) the two subdomains of a
/// pair must be before Algorithm 1 moves anything. Measured: see the top of
/// `progressive.rs`.
pub(crate) const DEFAULT_MIN_GAP: u64 = 2;

#[cfg(test)]
mod registry_tests {
    use super::*;

    /// A strategy is known by its name (equality, parsing, serde): two
    /// entries of the registry under one name would be one strategy.
    #[test]
    fn every_registered_strategy_has_a_name_of_its_own() {
        let names: Vec<&str> = Strategy::NAMES.iter().map(|(n, _)| *n).collect();
        for (i, n) in names.iter().enumerate() {
            assert!(!names[i + 1..].contains(n), "`{n}` is registered twice");
            assert_eq!(n.parse::<LbStrategy>().unwrap().kind.name(), *n);
        }
    }
}
