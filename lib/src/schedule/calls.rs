//! The balancer's schedule: the threads take turns in round robin, one call
//! per interval ([`Rotation`]); a call snapshots the run, asks the policy,
//! and applies its moves ([`Caller`]).

use std::sync::Arc;

use super::choose::Chooser;
use super::loads::LoadMeter;
use super::{Sets, View};
use crate::engine::{
    BalancerSettings, EFFORT_SAMPLES, Effort, Group, Interval, LbStats, Measure, Policies, Ran,
    Tried,
};
use crate::policy::jitter::median;
use crate::policy::learned::Learner;
use crate::policy::{
    AWAY_MEMORY, Gate, HISTORY, Homes, Learns, Move, Policy, Snapshot, Wire, homeward,
    measured_away, paying,
};

/// Whose turn it is to call the balancer, and from when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rotation {
    threads: usize,
    interval: u64,
    turn: usize,
    due: u64,
}

impl Rotation {
    /// Thread 0 may call at once; then one call per `interval` ticks.
    pub(crate) fn new(threads: usize, interval: u64) -> Self {
        Rotation {
            threads: threads.max(1),
            interval,
            turn: 0,
            due: 0,
        }
    }

    /// The thread that may call next.
    pub(crate) fn turn(&self) -> usize {
        self.turn
    }

    /// The tick from which that call is due.
    pub(crate) fn due(&self) -> u64 {
        self.due
    }

    /// Whether thread `t` calls the balancer at tick `now`.
    pub(crate) fn is_due(&self, t: usize, now: u64) -> bool {
        Self::is_due_at(self.turn, self.due, t, now)
    }

    /// The same rule on a turn and due tick read from elsewhere (the
    /// runtime's lock-free fast path reads them from atomics).
    pub(crate) fn is_due_at(turn: usize, due: u64, t: usize, now: u64) -> bool {
        turn == t && now >= due
    }

    /// From the next call on, `interval` ticks between calls
    /// (`lb_interval = auto`).
    pub(crate) fn set_interval(&mut self, interval: u64) {
        self.interval = interval;
    }

    /// Thread `t` called at tick `now`: the next thread's turn, one interval
    /// on (counted from the call's start, so a call's cost does not delay
    /// the next).
    pub(crate) fn advance(&mut self, t: usize, now: u64) {
        self.turn = (t + 1) % self.threads;
        self.due = now.saturating_add(self.interval);
    }
}

/// `lb_interval = auto`'s bounds, in sweeps (the time the threads take to
/// update each subdomain once, measured at every call), so that they scale
/// with the machine: never more often than this (a rate over fewer sweeps
/// is mostly the quantum of one update)...
pub(crate) const AUTO_MIN_SWEEPS: f64 = 4.0;
/// ...nor less often than this (so that noise that starts is noticed; at
/// paper scale a sweep takes about 27 us, so 0.1 s)...
pub(crate) const AUTO_MAX_SWEEPS: f64 = 4000.0;
/// ...and this many seconds until a rate is known (the paper's interval).
pub(crate) const AUTO_START_S: f64 = 1e-3;
/// Intervals the `auto` rule fits its loss rates over.
const AUTO_FIT: usize = 4;

/// The caller's side of a balancer call: the policy, what it needs to
/// remember between calls, and the tally of what it did.
///
/// **The effort metric.** For an interval of length `D` between two calls,
/// the effort-metric paper's Equation 5 is `(integral of u over D + C) / D`
/// with `u` the imbalance time per unit of time and `C` the cost of the
/// call that began the interval. In an asynchronous method no thread
/// waits; imbalance shows as threads that update their subdomains at
/// different rates, `rho_t = rate_t / held_t` against the mean `rho =
/// sum(rate) / sum(held)`. What that costs the solve is what the
/// slowest-mode model (`forecast`) says: its time per unit of progress is
/// the mode-weighted mean of the threads' sweep times, so the **loss
/// rate**, the seconds lost per second, is `u = rho sum(w_t / rho_t) /
/// sum(w_t) - 1` with `w_t` the share of the slowest mode the thread's
/// subdomains hold ([`loss_rate`]). A slow thread far from where the error
/// lives costs little, as plain async under noise next to the source
/// shows. Both rates are measured over the interval (`Snapshot::rates`),
/// so `u` is its mean over the interval and the time
/// lost in it is `u D`. `C` is the measured wall time of the call in the
/// runtime and `sim_balancer_ns` in the simulator. The effort, `u + C /
/// D`, is time lost per unit of time: the same on a machine uniformly ten
/// times slower. (Until 2026-11-28 braid integrated the slowest thread's
/// progress gap instead, `u D^2 / 2` with `u = 1 - min(rho_t) / rho`,
/// seconds squared against the call's seconds: its effort and its `auto`
/// interval changed with the unit of time, and the slowest thread counted
/// in full wherever its subdomains lay.)
///
/// **`lb_interval = auto`.** The effort-metric paper's criterion (after
/// Menon et al.): call again at the `tau` where `tau u(tau) - integral of u
/// over tau = C`. A loss rate that a call resets and that then grows as
/// `u0 + g x` gives `g tau^2 / 2 = C`, so `tau = sqrt(2 C / g)`; the part
/// `u0` a call cannot remove does not bring the next call sooner, since
/// calling again would not remove it either. braid measures `u` as the
/// mean over each interval, which for such a loss is `u0 + g D / 2`: a
/// least-squares line through the last [`AUTO_FIT`] intervals' `(D, u)`
/// has slope `g / 2`. Where the intervals are all alike, or the loss does
/// not grow with the interval, the next interval is twice the last (a
/// longer interval is how the rule learns whether the loss grows with it).
/// `C` is the mean measured cost of the calls so far. The interval is kept
/// within [`AUTO_MIN_SWEEPS`] and [`AUTO_MAX_SWEEPS`] sweeps and grows at
/// most twofold per call (one quiet interval is not proof that the run is
/// quiet). Every quantity is a ratio or scales with the machine's time, so
/// the same problem on a machine uniformly ten times slower makes the same
/// calls.
#[derive(Debug)]
pub(crate) struct Caller {
    candidates: Vec<Arc<dyn Policy>>,
    chooser: Option<Chooser>,
    learner: Option<Arc<Learner>>,
    auto_interval: bool,
    /// The candidate that made the last call.
    current: usize,
    /// What the policies see as each thread's socket (`lb_group`).
    group: Group,
    stats: LbStats,
    counts: Vec<u64>,
    owners: Vec<usize>,
    held: Vec<usize>,
    /// Each thread's update total at the previous call, and its progress
    /// since.
    last_updates: Vec<u64>,
    progress: Vec<u64>,
    /// `progress` per second since the previous call.
    rates: Vec<f64>,
    residuals: Vec<f64>,
    /// Each thread's rate over the last intervals, oldest first.
    history: Vec<Vec<f64>>,
    /// Seconds (engine clock) at the previous call, and its cost.
    last_s: f64,
    last_cost_s: f64,
    /// The moves counted when the last interval was measured: those since
    /// are the next interval's (its opening call's).
    measured_moves: u64,
    /// The last intervals' lengths and loss rates, oldest first, and the
    /// last one's sweep time (what `auto` fits and is bounded by).
    losses: Vec<(f64, f64)>,
    sweep_s: Option<f64>,
    /// Object loads and thread speeds, when something reads them.
    meter: Option<LoadMeter>,
    /// Whether calls are decided apart: the view is exact only for the
    /// threads here, so no effort is measured.
    apart: bool,
    /// Whether the application's work is uniform ([`Snapshot::uniform_work`]).
    uniform_work: bool,
    /// Where each subdomain is cheapest ([`Snapshot::homes`]).
    homes: Homes,
    /// Each subdomain's share of the slowest mode, if known, and each
    /// thread's at the last call (the loss rate's weights).
    mode_shares: Option<Arc<[f64]>>,
    thread_shares: Vec<f64>,
    /// What the moves must pass (`lb_gate`), and what a guest costs away
    /// from home: the prior, and the last calls' measurements.
    gate: Gate,
    away_prior: f64,
    away_seen: Vec<f64>,
    /// How decisions read the window ([`Snapshot::reading`]).
    reading: crate::policy::Reading,
}

impl Caller {
    /// A caller of `balancer`'s policies; what it measures for them
    /// ([`crate::engine::Settings::measure`]).
    pub(crate) fn new(balancer: &BalancerSettings, measure: Measure) -> Self {
        let loads = measure.loads;
        let (candidates, chooser, learner) = match &balancer.policies {
            Policies::One(p) => (vec![p.clone()], None, None),
            Policies::Auto(ps) => (ps.clone(), Some(Chooser::new(ps.len())), None),
            Policies::Learned(ps, l) => (ps.clone(), None, Some(l.clone())),
        };
        Caller {
            candidates,
            chooser,
            learner,
            auto_interval: balancer.interval == Interval::Auto,
            current: 0,
            group: balancer.group,
            stats: LbStats::default(),
            counts: Vec::new(),
            owners: Vec::new(),
            held: Vec::new(),
            last_updates: Vec::new(),
            progress: Vec::new(),
            rates: Vec::new(),
            residuals: Vec::new(),
            history: Vec::new(),
            last_s: 0.0,
            last_cost_s: 0.0,
            measured_moves: 0,
            losses: Vec::new(),
            sweep_s: None,
            meter: loads.then(LoadMeter::default),
            apart: false,
            uniform_work: measure.uniform_work,
            homes: balancer.homes,
            mode_shares: balancer.mode_shares.clone(),
            thread_shares: Vec::new(),
            gate: balancer.gate,
            away_prior: balancer.away_prior,
            away_seen: Vec::new(),
            reading: balancer.reading,
        }
    }

    /// A caller of one policy at a fixed interval.
    #[cfg(test)]
    pub(crate) fn of(policy: Arc<dyn Policy>) -> Self {
        Caller::new(
            &BalancerSettings {
                policies: Policies::One(policy),
                interval: Interval::Seconds(0.0),
                group: crate::engine::Group::Socket,
                homes: crate::policy::Homes::NONE,
                mode_shares: None,
                gate: crate::policy::Gate::None,
                away_prior: 0.0,
                reading: crate::policy::Reading::DEFAULT,
            },
            Measure::RATES,
        )
    }

    /// The groups this caller's policies see, one per thread: `sockets`
    /// or `nodes` (`lb_group`); pass them to [`Caller::decide`].
    pub(crate) fn groups<'a>(&self, sockets: &'a [usize], nodes: &'a [usize]) -> &'a [usize] {
        self.group.pick(sockets, nodes)
    }

    /// One call at `now_s` seconds of the engine's clock: snapshots `view`,
    /// measures each thread's progress and rate since the previous call and
    /// the effort of that interval, picks the policy, and returns its moves
    /// (to be applied with [`Caller::apply`] once the view is released).
    pub(crate) fn decide(
        &mut self,
        view: &impl View,
        thread_sockets: &[usize],
        now_s: f64,
    ) -> Vec<Move> {
        let since_last_s = self.take(view, now_s);
        // A learner names the candidate from this call's features (and
        // keeps the last one until it can).
        let learned = self.learner.as_ref().and_then(|l| {
            l.pick(&self.snapshot(thread_sockets, since_last_s))
                .filter(|&c| c < self.candidates.len())
        });
        self.choose(now_s, learned);
        let measured = match self.gate {
            Gate::Payoff => measured_away(&self.snapshot(thread_sockets, since_last_s)),
            Gate::None => None,
        };
        let away = self.away(measured);
        let snap = self.snapshot(thread_sockets, since_last_s);
        // Whatever the strategy picked, a guest goes home in its place.
        let policy = &self.candidates[self.current];
        let moves = match policy.sends_guests_home() {
            true => homeward(&snap, policy.decide(&snap)),
            false => policy.decide(&snap),
        };
        match (self.gate, &self.mode_shares) {
            (Gate::Payoff, Some(shares)) => paying(&snap, shares, away, moves),
            _ => moves,
        }
    }

    /// What a guest costs away from home as the gate takes it: the median
    /// of the last [`AWAY_MEMORY`] calls' measurements with a guest
    /// (`measured`, this one's, included), the prior before any.
    fn away(&mut self, measured: Option<f64>) -> f64 {
        if let Some(a) = measured {
            if self.away_seen.len() == AWAY_MEMORY {
                self.away_seen.remove(0);
            }
            self.away_seen.push(a);
        }
        match self.away_seen.is_empty() {
            true => self.away_prior,
            false => median(&mut self.away_seen.clone()),
        }
    }

    /// Whether calls can be decided apart ([`Caller::decide_apart`]): one
    /// policy that can, at a fixed interval. A chooser, a learner and the
    /// `auto` interval read every thread's rates, so every place would
    /// need the whole view to agree on them.
    pub(crate) fn decides_apart(&self) -> bool {
        self.candidates.len() == 1
            && self.chooser.is_none()
            && self.learner.is_none()
            && !self.auto_interval
            && self.candidates[0].decides_apart()
    }

    /// One call as [`Caller::decide`], where `view` is exact only for the
    /// threads `wire` says are here and their subdomains: their moves,
    /// learning the rest through `wire` ([`Policy::decide_apart`]). The
    /// effort is not measured (it needs every thread's rate). Only when
    /// [`Caller::decides_apart`].
    pub(crate) fn decide_apart(
        &mut self,
        view: &impl View,
        thread_sockets: &[usize],
        now_s: f64,
        wire: &mut dyn Wire,
    ) -> Vec<Move> {
        debug_assert!(self.decides_apart());
        self.apart = true;
        let since_last_s = self.take(view, now_s);
        self.choose(now_s, None);
        let snap = self.snapshot(thread_sockets, since_last_s);
        // A policy that cannot decide apart moves nothing, here as on
        // every other place (`decides_apart` keeps it from being asked).
        self.candidates[self.current]
            .decide_apart(&snap, wire)
            .unwrap_or_default()
    }

    /// Counts the call and takes `view` in: counts, owners, residuals,
    /// progress and rates since the previous call, loads. Returns the
    /// seconds since the previous call.
    fn take(&mut self, view: &impl View, now_s: f64) -> f64 {
        self.stats.calls += 1;
        let n = view.subdomains();
        self.counts.clear();
        self.counts.extend((0..n).map(|s| view.count(s)));
        self.owners.clear();
        self.held.clear();
        self.held.resize(view.threads(), 0);
        for s in 0..n {
            let o = view.owner(s);
            self.owners.push(o);
            self.held[o] += 1;
        }
        // All of them or none: a run computes every residual or no residual.
        self.residuals.clear();
        self.residuals
            .extend((0..n).map_while(|s| view.residual_sq(s)));
        if self.residuals.len() != n {
            self.residuals.clear();
        }
        self.last_updates.resize(view.threads(), 0);
        self.progress.clear();
        for (t, last) in self.last_updates.iter_mut().enumerate() {
            let now = view.thread_updates(t);
            self.progress.push(now.saturating_sub(*last));
            *last = now;
        }
        let since_last_s = now_s - self.last_s;
        self.rates.clear();
        if since_last_s > 0.0 {
            let rate = |&p: &u64| p as f64 / since_last_s;
            self.rates.extend(self.progress.iter().map(rate));
            self.measure(since_last_s);
        }
        self.last_s = now_s;
        if let Some(m) = &mut self.meter {
            m.measure(view, &self.owners);
        }
        since_last_s
    }

    /// What the policies see at this call.
    fn snapshot<'a>(&'a self, thread_sockets: &'a [usize], since_last_s: f64) -> Snapshot<'a> {
        Snapshot {
            counts: &self.counts,
            owners: &self.owners,
            thread_sockets,
            held: &self.held,
            progress: &self.progress,
            rates: &self.rates,
            residuals: &self.residuals,
            history: &self.history,
            loads: self.meter.as_ref().map_or(&[], |m| &m.loads),
            speeds: self.meter.as_ref().map_or(&[], |m| &m.speeds),
            load_history: self.meter.as_ref().map_or(&[], |m| &m.history),
            speed_window: self.meter.as_ref().map_or(&[], |m| m.speed_window()),
            uniform_work: self.uniform_work,
            homes: self.homes,
            since_last_s,
            call: self.stats.calls,
            reading: self.reading,
        }
    }

    /// The interval that just ended: the rates into the history,
    /// its loss rate and sweep time, and its effort.
    fn measure(&mut self, interval_s: f64) {
        // The oldest interval's buffer, once there are HISTORY, takes the newest.
        let mut rates = if self.history.len() == HISTORY {
            self.history.remove(0)
        } else {
            Vec::new()
        };
        rates.clone_from(&self.rates);
        self.history.push(rates);
        if self.apart {
            return; // rates of the threads here only: no gap to measure
        }
        self.thread_shares.clear();
        self.thread_shares.resize(self.held.len(), 0.0);
        match &self.mode_shares {
            Some(w) if w.len() == self.owners.len() => {
                for (s, &o) in self.owners.iter().enumerate() {
                    self.thread_shares[o] += w[s];
                }
            }
            _ => {
                for (share, &h) in self.thread_shares.iter_mut().zip(&self.held) {
                    *share = h as f64;
                }
            }
        }
        let loss = loss_rate(&self.rates, &self.held, &self.thread_shares);
        if self.losses.len() == AUTO_FIT {
            self.losses.remove(0);
        }
        self.losses.push((interval_s, loss));
        self.sweep_s = sweep_s(&self.rates, &self.held).or(self.sweep_s);
        let effort = Effort {
            t_s: self.last_s,
            interval_s,
            lost_s: loss * interval_s,
            cost_s: self.last_cost_s,
            moves: self.stats.moves - self.measured_moves,
        };
        self.measured_moves = self.stats.moves;
        if let Some(c) = &mut self.chooser {
            c.record(effort.lost_s + effort.cost_s, interval_s);
        }
        let series = &mut self.stats.effort;
        if series.len() == EFFORT_SAMPLES {
            let merged: Vec<Effort> = series.chunks(2).map(|p| p[0].merge(p[1])).collect();
            *series = merged;
        }
        series.push(effort);
    }

    /// Which candidate makes this call (`learned`'s, else the chooser's,
    /// else the current one); notes a switch in `ran`.
    fn choose(&mut self, now_s: f64, learned: Option<usize>) {
        let next = match (learned, &mut self.chooser) {
            (Some(c), _) => c,
            (None, Some(chooser)) => chooser.pick(),
            (None, None) => self.current,
        };
        if self.stats.ran.is_empty() || next != self.current {
            self.stats.ran.push(Ran {
                from_s: now_s,
                balancer: self.candidates[next].name(),
            });
        }
        self.current = next;
    }

    /// Applies `moves` in order and counts them.
    pub(crate) fn apply(&mut self, moves: &[Move], thread_sockets: &[usize], sets: &mut impl Sets) {
        for &m in moves {
            apply(m, sets);
            self.stats.moves += 1;
            if thread_sockets[m.from] != thread_sockets[m.to] {
                self.stats.cross_socket_moves += 1;
                sets.crossed_sockets(m.sub);
            }
        }
    }

    /// How the last call learned what it decided on, if it balanced all
    /// threads together; `None` if it balanced each group alone (a socket
    /// or a node: nothing to learn across nodes).
    pub(crate) fn learned(&self) -> Option<Learns> {
        let policy = &self.candidates[self.current];
        let joint = policy.name().scope.joint_at(self.stats.calls);
        joint.then(|| policy.learns())
    }

    /// Adds the time a call took (measured by the runtime, charged by the
    /// simulator), in seconds.
    pub(crate) fn spent(&mut self, seconds: f64) {
        self.stats.time_s += seconds;
        self.last_cost_s = seconds;
    }

    /// `lb_interval = auto`: seconds until the next call (the rule at the
    /// top of this type); `None` at a fixed interval.
    pub(crate) fn next_interval_s(&self) -> Option<f64> {
        let calls = self.stats.calls.max(1) as f64;
        self.auto_interval
            .then(|| auto_interval_s(self.stats.time_s / calls, &self.losses, self.sweep_s))
    }

    /// The tally, with each `balancer = auto` candidate's last measured
    /// effort.
    pub(crate) fn stats(&self) -> LbStats {
        let mut stats = self.stats.clone();
        if let Some(c) = &self.chooser {
            stats.tried = c
                .means()
                .iter()
                .zip(&self.candidates)
                .filter_map(|(m, p)| {
                    m.map(|effort| Tried {
                        balancer: p.name(),
                        effort,
                    })
                })
                .collect();
        }
        stats
    }
}

/// The interval before the first call has measured anything.
pub(crate) fn start_interval(interval: Interval) -> std::time::Duration {
    match interval {
        // Always due: the engine's barrier asks `schedule::degradation`.
        Interval::Degradation => std::time::Duration::ZERO,
        i => i
            .duration()
            .unwrap_or_else(|| std::time::Duration::from_secs_f64(AUTO_START_S)),
    }
}

/// Seconds until the next call: `sqrt(2 cost / g)` with `g / 2` the slope
/// of the mean loss rate against the interval's length over `losses`
/// (`(seconds, loss rate)`, oldest first), or twice the last interval
/// where no slope shows; at most twice the last, within the bounds in
/// sweeps of `sweep_s` seconds ([`AUTO_START_S`] before anything is
/// measured).
pub(crate) fn auto_interval_s(cost_s: f64, losses: &[(f64, f64)], sweep_s: Option<f64>) -> f64 {
    let (Some(&(last, _)), Some(sweep)) = (losses.last(), sweep_s) else {
        return AUTO_START_S;
    };
    let longer = 2.0 * last;
    let next = match loss_slope(losses) {
        Some(half_g) if half_g > 0.0 => (cost_s / half_g).sqrt().min(longer),
        _ => longer,
    };
    next.clamp(AUTO_MIN_SWEEPS * sweep, AUTO_MAX_SWEEPS * sweep)
}

/// The least-squares slope of the loss rate against the interval's length,
/// if the lengths differ by more than 5% of their mean (alike, they say
/// nothing of it).
fn loss_slope(losses: &[(f64, f64)]) -> Option<f64> {
    let n = losses.len() as f64;
    let mean_d = losses.iter().map(|l| l.0).sum::<f64>() / n;
    let mean_u = losses.iter().map(|l| l.1).sum::<f64>() / n;
    let sxx: f64 = losses.iter().map(|l| (l.0 - mean_d).powi(2)).sum();
    let sxy: f64 = losses.iter().map(|l| (l.0 - mean_d) * (l.1 - mean_u)).sum();
    (losses.len() >= 2 && sxx > n * (0.05 * mean_d).powi(2)).then(|| sxy / sxx)
}

/// The seconds the threads take to update each subdomain once, from
/// their rates over an interval: `sum(held) / sum(rate)`; `None` before
/// anything was updated.
fn sweep_s(rates: &[f64], held: &[usize]) -> Option<f64> {
    let (rate, subs): (f64, usize) = (rates.iter().sum(), held.iter().sum());
    (rate > 0.0 && subs > 0).then(|| subs as f64 / rate)
}

/// The loss rate cannot exceed this (a thread that made no progress at
/// all in an interval would make it infinite).
pub(crate) const MAX_LOSS: f64 = 10.0;

/// The loss rate: the seconds a run loses per second to its threads'
/// uneven progress, by the slowest-mode model (`forecast`): the solver's
/// time per unit of progress is the mode-weighted mean of its threads'
/// sweep times, so with `rho_t = rate_t / held_t` a thread's updates of
/// each of its subdomains per second, `rho = sum(rate) / sum(held)` their
/// mean and `w_t` the thread's share of the mode, `u = rho sum(w_t /
/// rho_t) / sum(w_t) - 1`, at least 0 and at most [`MAX_LOSS`]. With
/// every subdomain alike (`shares` its held counts) a thread weighs by
/// the subdomains it holds.
pub(crate) fn loss_rate(rates: &[f64], held: &[usize], shares: &[f64]) -> f64 {
    let (rate, subs): (f64, usize) = (rates.iter().sum(), held.iter().sum());
    let weight: f64 = shares.iter().sum();
    if rate <= 0.0 || subs == 0 || weight <= 0.0 {
        return 0.0;
    }
    let mean = rate / subs as f64;
    let mut slowness = 0.0;
    for ((&r, &h), &w) in rates.iter().zip(held).zip(shares) {
        if h == 0 || w == 0.0 {
            continue;
        }
        if r <= 0.0 {
            return MAX_LOSS;
        }
        slowness += w / weight * mean / (r / h as f64);
    }
    (slowness - 1.0).clamp(0.0, MAX_LOSS)
}

/// One move, in the order the handoff protocol needs.
pub(crate) fn apply(m: Move, sets: &mut impl Sets) {
    sets.set_owner(m.sub, m.to);
    sets.remove(m.from, m.sub);
    sets.add(m.to, m.sub);
    sets.changed(m.from);
    sets.changed(m.to);
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod examples {
    //! The documented behaviour of this module's items, as the examples
    //! their docs would show (rustdoc runs doc examples of public items
    //! only).

    #[test]
    fn threads_take_turns_one_interval_apart() {
        use crate::schedule::Rotation;
        let mut r = Rotation::new(3, 10);
        assert!(r.is_due(0, 0) && !r.is_due(1, 0));
        r.advance(0, 4);
        assert_eq!((r.turn(), r.due()), (1, 14));
        assert!(!r.is_due(1, 13) && r.is_due(1, 14));
        r.advance(1, 20);
        r.advance(2, 30);
        assert_eq!(r.turn(), 0); // round robin
    }

    #[test]
    fn the_auto_interval_balances_cost_against_the_growth_of_the_loss() {
        use crate::schedule::calls::{AUTO_MAX_SWEEPS, AUTO_START_S, auto_interval_s};
        let sweep = Some(25e-6);
        assert_eq!(auto_interval_s(20e-6, &[], None), AUTO_START_S);
        // A loss rate that grows by 0.1 per second (its mean over an
        // interval D is 0.05 D): a 20 us call is worth it every 20 ms.
        let ramp: Vec<(f64, f64)> = [0.01, 0.02, 0.03].map(|d| (d, 0.05 * d)).into();
        assert!((auto_interval_s(20e-6, &ramp, sweep) - 0.02).abs() < 1e-12);
        // The same with a part no call removes: the same interval.
        let floor: Vec<(f64, f64)> = ramp.iter().map(|&(d, u)| (d, u + 0.3)).collect();
        assert!((auto_interval_s(20e-6, &floor, sweep) - 0.02).abs() < 1e-12);
        // A loss that does not grow with the interval, or intervals all
        // alike: twice the last, up to the bound.
        let flat = [(0.01, 0.3), (0.02, 0.3), (0.04, 0.3)];
        assert!((auto_interval_s(20e-6, &flat, sweep) - 0.08).abs() < 1e-12);
        let alike = [(0.01, 0.1), (0.01, 0.3), (0.01, 0.2)];
        assert!((auto_interval_s(20e-6, &alike, sweep) - 0.02).abs() < 1e-12);
        let long = [(0.09, 0.3)];
        assert_eq!(
            auto_interval_s(20e-6, &long, sweep),
            AUTO_MAX_SWEEPS * 25e-6
        );
    }

    #[test]
    fn the_auto_interval_scales_with_the_machine() {
        use crate::schedule::calls::auto_interval_s;
        // Every time ten times longer, loss rates the same: ten times the
        // interval, whichever branch of the rule decides it.
        let cases: [&[(f64, f64)]; 3] = [
            &[(0.001, 0.01), (0.002, 0.05), (0.004, 0.06)],
            &[(0.001, 0.2), (0.002, 0.2)],
            &[(1e-5, 0.2)],
        ];
        for losses in cases {
            let slow: Vec<(f64, f64)> = losses.iter().map(|&(d, u)| (10.0 * d, u)).collect();
            let here = auto_interval_s(20e-6, losses, Some(25e-6));
            let there = auto_interval_s(200e-6, &slow, Some(250e-6));
            assert!(
                (there / here - 10.0).abs() < 1e-9,
                "{losses:?}: {here} -> {there}"
            );
        }
    }

    #[test]
    fn the_loss_rate_weighs_each_thread_by_its_share_of_the_slowest_mode() {
        use crate::schedule::calls::{MAX_LOSS, loss_rate};
        // Rates 50 and 100 at 4 subdomains each: rho_t 12.5 and 25 against
        // 18.75, so the threads take 1.5 and 0.75 of the even sweep time.
        let even = loss_rate(&[50.0, 100.0], &[4, 4], &[0.5, 0.5]);
        assert!((even - 0.125).abs() < 1e-12, "{even}");
        // The slow thread holding most of the mode loses more; holding
        // little of it, nothing.
        let central = loss_rate(&[50.0, 100.0], &[4, 4], &[0.9, 0.1]);
        assert!((central - (0.9 * 1.5 + 0.1 * 0.75 - 1.0)).abs() < 1e-12);
        assert_eq!(loss_rate(&[50.0, 100.0], &[4, 4], &[0.1, 0.9]), 0.0);
        assert_eq!(loss_rate(&[100.0, 100.0], &[4, 4], &[0.5, 0.5]), 0.0);
        // A thread that made no progress at all: the bound.
        assert_eq!(loss_rate(&[0.0, 100.0], &[4, 4], &[0.5, 0.5]), MAX_LOSS);
    }
}
