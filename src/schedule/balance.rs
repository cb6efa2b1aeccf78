//! The balancer's schedule: the threads take turns in round robin, one call
//! per interval ([`Rotation`]); a call snapshots the run, asks the policy,
//! and applies its moves ([`Caller`]).

use std::sync::Arc;

use super::{Sets, View};
use crate::engine::LbStats;
use crate::policy::{Move, Policy, Snapshot};

/// Whose turn it is to call the balancer, and from when.
///
/// ```
/// use braid::schedule::Rotation;
/// let mut r = Rotation::new(3, 10);
/// assert!(r.is_due(0, 0) && !r.is_due(1, 0));
/// r.advance(0, 4);
/// assert_eq!((r.turn(), r.due()), (1, 14));
/// assert!(!r.is_due(1, 13) && r.is_due(1, 14));
/// r.advance(1, 20);
/// r.advance(2, 30);
/// assert_eq!(r.turn(), 0); // round robin
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rotation {
    threads: usize,
    interval: u64,
    turn: usize,
    due: u64,
}

impl Rotation {
    /// Thread 0 may call at once; then one call per `interval` ticks.
    pub fn new(threads: usize, interval: u64) -> Self {
        Rotation {
            threads: threads.max(1),
            interval,
            turn: 0,
            due: 0,
        }
    }

    /// The thread that may call next.
    pub fn turn(&self) -> usize {
        self.turn
    }

    /// The tick from which that call is due.
    pub fn due(&self) -> u64 {
        self.due
    }

    /// Whether thread `t` calls the balancer at tick `now`.
    pub fn is_due(&self, t: usize, now: u64) -> bool {
        Self::is_due_at(self.turn, self.due, t, now)
    }

    /// The same rule on a turn and due tick read from elsewhere (the
    /// runtime's lock-free fast path reads them from atomics).
    pub fn is_due_at(turn: usize, due: u64, t: usize, now: u64) -> bool {
        turn == t && now >= due
    }

    /// Thread `t` called at tick `now`: the next thread's turn, one interval
    /// on (counted from the call's start, so a call's cost does not delay
    /// the next).
    pub fn advance(&mut self, t: usize, now: u64) {
        self.turn = (t + 1) % self.threads;
        self.due = now.saturating_add(self.interval);
    }
}

/// The caller's side of a balancer call: the policy, what it needs to
/// remember between calls, and the tally of what it did.
#[derive(Debug)]
pub struct Caller {
    policy: Arc<dyn Policy>,
    stats: LbStats,
    counts: Vec<u64>,
    owners: Vec<usize>,
    /// Each thread's update total at the previous call, and its progress
    /// since.
    last_updates: Vec<u64>,
    progress: Vec<u64>,
    /// `progress` per second since the previous call.
    rates: Vec<f64>,
    residuals: Vec<f64>,
    /// Seconds (engine clock) at the previous call.
    last_s: f64,
}

impl Caller {
    pub fn new(policy: Arc<dyn Policy>) -> Self {
        Caller {
            policy,
            stats: LbStats::default(),
            counts: Vec::new(),
            owners: Vec::new(),
            last_updates: Vec::new(),
            progress: Vec::new(),
            rates: Vec::new(),
            residuals: Vec::new(),
            last_s: 0.0,
        }
    }

    /// One call at `now_s` seconds of the engine's clock: snapshots `view`,
    /// measures each thread's progress and rate since the previous call,
    /// asks the policy, and returns its moves (to be applied with
    /// [`Caller::apply`] once the view is released).
    pub fn decide(&mut self, view: &impl View, thread_sockets: &[usize], now_s: f64) -> Vec<Move> {
        self.stats.calls += 1;
        let n = view.subdomains();
        self.counts.clear();
        self.counts.extend((0..n).map(|s| view.count(s)));
        self.owners.clear();
        self.owners.extend((0..n).map(|s| view.owner(s)));
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
        self.last_s = now_s;
        self.rates.clear();
        if since_last_s > 0.0 {
            let rate = |&p: &u64| p as f64 / since_last_s;
            self.rates.extend(self.progress.iter().map(rate));
        }
        self.policy.decide(&Snapshot {
            counts: &self.counts,
            owners: &self.owners,
            thread_sockets,
            progress: &self.progress,
            rates: &self.rates,
            residuals: &self.residuals,
            since_last_s,
            call: self.stats.calls,
        })
    }

    /// Applies `moves` in order and counts them.
    pub fn apply(&mut self, moves: &[Move], thread_sockets: &[usize], sets: &mut impl Sets) {
        for &m in moves {
            apply(m, sets);
            self.stats.moves += 1;
            if thread_sockets[m.from] != thread_sockets[m.to] {
                self.stats.cross_socket_moves += 1;
                sets.crossed_sockets(m.sub);
            }
        }
    }

    /// Adds the time a call took (measured by the runtime, charged by the
    /// simulator), in seconds.
    pub fn spent(&mut self, seconds: f64) {
        self.stats.time_s += seconds;
    }

    pub fn stats(&self) -> &LbStats {
        &self.stats
    }
}

/// One move, in the order the handoff protocol needs.
pub fn apply(m: Move, sets: &mut impl Sets) {
    sets.set_owner(m.sub, m.to);
    sets.remove(m.from, m.sub);
    sets.add(m.to, m.sub);
    sets.changed(m.from);
    sets.changed(m.to);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plain board: what the simulator keeps, in miniature.
    #[derive(Default)]
    struct Board {
        counts: Vec<u64>,
        owners: Vec<usize>,
        updates: Vec<u64>,
        sets: Vec<Vec<usize>>,
        log: Vec<String>,
    }

    impl View for Board {
        fn subdomains(&self) -> usize {
            self.counts.len()
        }
        fn count(&self, s: usize) -> u64 {
            self.counts[s]
        }
        fn owner(&self, s: usize) -> usize {
            self.owners[s]
        }
        fn threads(&self) -> usize {
            self.updates.len()
        }
        fn thread_updates(&self, t: usize) -> u64 {
            self.updates[t]
        }
    }

    impl Sets for Board {
        fn set_owner(&mut self, s: usize, to: usize) {
            self.owners[s] = to;
            self.log.push(format!("owner {s}->{to}"));
        }
        fn remove(&mut self, t: usize, s: usize) {
            self.sets[t].retain(|&x| x != s);
            self.log.push(format!("remove {s} from {t}"));
        }
        fn add(&mut self, t: usize, s: usize) {
            self.sets[t].push(s);
            self.log.push(format!("add {s} to {t}"));
        }
        fn changed(&mut self, t: usize) {
            self.log.push(format!("changed {t}"));
        }
        fn crossed_sockets(&mut self, s: usize) {
            self.log.push(format!("crossed {s}"));
        }
    }

    #[derive(Debug)]
    struct MoveFirstOfThread0;
    impl Policy for MoveFirstOfThread0 {
        fn decide(&self, snap: &Snapshot<'_>) -> Vec<Move> {
            let sub = snap.owners.iter().position(|&o| o == 0);
            sub.map(|sub| Move {
                sub,
                from: 0,
                to: 1,
            })
            .into_iter()
            .collect()
        }
    }

    #[test]
    fn a_move_writes_the_owner_before_the_sets_and_tells_both_threads() {
        let mut b = Board {
            counts: vec![0; 2],
            owners: vec![0, 1],
            updates: vec![0, 0],
            sets: vec![vec![0], vec![1]],
            ..Board::default()
        };
        let mut c = Caller::new(Arc::new(MoveFirstOfThread0));
        let moves = c.decide(&b, &[0, 1], 1.0);
        c.apply(&moves, &[0, 1], &mut b);
        assert_eq!(
            b.log,
            [
                "owner 0->1",
                "remove 0 from 0",
                "add 0 to 1",
                "changed 0",
                "changed 1",
                "crossed 0"
            ]
        );
        assert_eq!(b.sets, [vec![], vec![1, 0]]);
        assert_eq!(
            (
                c.stats().calls,
                c.stats().moves,
                c.stats().cross_socket_moves
            ),
            (1, 1, 1)
        );
    }

    /// What the policy saw: progress, rates and the time since the last call.
    type Seen = (Vec<u64>, Vec<f64>, f64);

    #[derive(Debug)]
    struct Records(std::sync::Mutex<Vec<Seen>>);
    impl Policy for Records {
        fn decide(&self, snap: &Snapshot<'_>) -> Vec<Move> {
            let seen = (
                snap.progress.to_vec(),
                snap.rates.to_vec(),
                snap.since_last_s,
            );
            self.0.lock().unwrap().push(seen);
            Vec::new()
        }
    }

    #[test]
    fn the_policy_sees_each_threads_updates_and_rate_since_the_previous_call() {
        let rec = Arc::new(Records(Default::default()));
        let mut c = Caller::new(rec.clone());
        let mut b = Board {
            counts: vec![0; 2],
            owners: vec![0, 1],
            updates: vec![5, 3],
            sets: vec![vec![0], vec![1]],
            ..Board::default()
        };
        c.decide(&b, &[0, 0], 0.5);
        b.updates = vec![9, 10];
        c.decide(&b, &[0, 0], 2.5);
        let seen = rec.0.lock().unwrap();
        assert_eq!(seen[0], (vec![5, 3], vec![10.0, 6.0], 0.5));
        assert_eq!(seen[1], (vec![4, 7], vec![2.0, 3.5], 2.0));
    }
}
