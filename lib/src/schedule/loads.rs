//! Object loads, measured between balancer calls the same way in both
//! engines: each subdomain's cost per update at full speed, and each
//! thread's speed (Charm++'s object loads and processor speeds, for an
//! asynchronous method where objects are updated at different rates).
//!
//! Thread `t`'s **speed** is the full-speed work it got over the time that
//! passed ([`View::core_time`]: CPU time over wall time in the runtime, the
//! simulator's nominal cost over the virtual time its updates took), in
//! each of the last [`SPEED_WINDOW`] intervals, taken a quarter in from the
//! top (the second highest of four): noise comes in bursts, and one
//! interval's speed swings with where the bursts fell (0.57 to 1.0 for a
//! 30% parasite measured every 0.2 ms), and a thread may lose its core to
//! another program for a time slice, which would make a strategy trade
//! subdomains back and forth. Subdomain `s`'s **load** is its full-speed cost per
//! update: the simulator knows it ([`View::work_s`], the cost model), the
//! runtime takes the time spent updating it ([`View::busy_s`]) times its
//! owner's speed; either over the updates made in the interval. A
//! subdomain not updated in an interval keeps its last load; one never
//! updated has load 0.

use super::View;
use crate::policy::HISTORY;
use crate::policy::jitter::{Tail, quantile};

/// Intervals a thread's speed is measured over.
pub(crate) const SPEED_WINDOW: usize = 4;

/// What the last interval measured, and what the next needs to.
#[derive(Debug, Default)]
pub(crate) struct LoadMeter {
    /// At the previous call: each subdomain's count, busy and work seconds.
    counts: Vec<u64>,
    busy: Vec<f64>,
    work: Vec<f64>,
    /// At the previous call: each thread's `(full-speed, elapsed)` seconds.
    core: Vec<(f64, f64)>,
    pub(crate) loads: Vec<f64>,
    pub(crate) speeds: Vec<f64>,
    /// Each thread's speed in each of the last [`SPEED_WINDOW`] intervals,
    /// oldest first: what `speeds` is taken over.
    speed_window: Vec<Vec<f64>>,
    /// Whether the last interval's loads were made with its speeds (busy
    /// time times the owner's speed), not given by a cost model.
    made_with_speeds: bool,
    /// Loads over the last intervals, oldest first, from the first interval
    /// that measured every subdomain.
    pub(crate) history: Vec<Vec<f64>>,
}

impl LoadMeter {
    /// Measures the interval since the previous call; `owners` are each
    /// subdomain's owner now.
    pub(crate) fn measure(&mut self, view: &impl View, owners: &[usize]) {
        let (n, threads) = (view.subdomains(), view.threads());
        self.counts.resize(n, 0);
        self.busy.resize(n, 0.0);
        self.work.resize(n, 0.0);
        self.loads.resize(n, 0.0);
        self.core.resize(threads, (0.0, 0.0));
        let mut row = if self.speed_window.len() == SPEED_WINDOW {
            self.speed_window.remove(0)
        } else {
            Vec::new()
        };
        row.clear();
        for t in 0..threads {
            let now = view.core_time(t).unwrap_or((0.0, 0.0));
            row.push(speed((now.0 - self.core[t].0, now.1 - self.core[t].1)));
            self.core[t] = now;
        }
        self.speed_window.push(row);
        self.speeds.clear();
        let mut per = Vec::with_capacity(SPEED_WINDOW);
        for t in 0..threads {
            // A quarter in from the top of the window's speeds: an interval
            // or two in which the thread lost its core to another program
            // (2 ms, a time slice) is not what it will get (`policy::jitter`).
            per.clear();
            per.extend(self.speed_window.iter().map(|w| w[t]));
            self.speeds.push(quantile(&mut per, Tail::High));
        }
        self.made_with_speeds = false;
        for (s, &owner) in owners.iter().enumerate().take(n) {
            let count = view.count(s);
            let busy = view.busy_s(s).unwrap_or(0.0);
            let work = view.work_s(s);
            let updates = count.saturating_sub(self.counts[s]);
            self.made_with_speeds |= work.is_none();
            if updates > 0 {
                let full_speed = match work {
                    Some(w) => w - self.work[s],
                    // This interval's own speed: the busy time is its.
                    None => (busy - self.busy[s]) * speed_of(self.speed_window.last(), owner),
                };
                self.loads[s] = full_speed.max(0.0) / updates as f64;
            }
            self.counts[s] = count;
            self.busy[s] = busy;
            self.work[s] = work.unwrap_or(0.0);
        }
        // The history starts once every subdomain has a load: a first
        // measure is not growth from 0.
        if self.loads.iter().any(|&l| l <= 0.0) {
            return;
        }
        let mut oldest = if self.history.len() == HISTORY {
            self.history.remove(0)
        } else {
            Vec::new()
        };
        oldest.clone_from(&self.loads);
        self.history.push(oldest);
    }

    /// Each thread's speed in each of the last intervals, oldest first,
    /// where the loads were made with them ([`crate::policy::Snapshot::speed_window`]:
    /// a decision then reads each load with its own interval's speed);
    /// empty where a cost model gives the loads, which carry no speed.
    pub(crate) fn speed_window(&self) -> &[Vec<f64>] {
        match self.made_with_speeds {
            true => &self.speed_window,
            false => &[],
        }
    }
}

/// Full-speed work over the time it took (1 when nothing was measured:
/// a full-speed core).
fn speed((got, took): (f64, f64)) -> f64 {
    if took > 0.0 {
        (got / took).clamp(0.0, 1.0)
    } else {
        1.0
    }
}

/// Thread `t`'s speed in one interval's row.
fn speed_of(interval: Option<&Vec<f64>>, t: usize) -> f64 {
    interval.and_then(|i| i.get(t)).copied().unwrap_or(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two threads, two subdomains, every measure given.
    struct Stub {
        counts: Vec<u64>,
        owners: Vec<usize>,
        busy: Vec<f64>,
        work: Option<Vec<f64>>,
        core: Vec<(f64, f64)>,
    }

    impl View for Stub {
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
            self.core.len()
        }
        fn thread_updates(&self, _: usize) -> u64 {
            0
        }
        fn busy_s(&self, s: usize) -> Option<f64> {
            Some(self.busy[s])
        }
        fn work_s(&self, s: usize) -> Option<f64> {
            self.work.as_ref().map(|w| w[s])
        }
        fn core_time(&self, t: usize) -> Option<(f64, f64)> {
            Some(self.core[t])
        }
    }

    #[test]
    fn a_runtime_load_is_the_busy_time_per_update_at_its_owners_speed() {
        let mut v = Stub {
            counts: vec![10, 10],
            owners: vec![0, 1],
            busy: vec![1.0, 4.0],
            work: None,
            // Thread 1 got half its core.
            core: vec![(2.0, 2.0), (1.0, 2.0)],
        };
        let mut m = LoadMeter::default();
        m.measure(&v, &v.owners.clone());
        assert_eq!(m.speeds, [1.0, 0.5]);
        assert_eq!(m.loads, [0.1, 0.2]);
        // Loads made with speeds pair with them.
        assert_eq!(m.speed_window(), [vec![1.0, 0.5]]);
        // Next interval: subdomain 0 not updated keeps its load.
        v.counts = vec![10, 20];
        v.busy = vec![1.0, 6.0];
        v.core = vec![(4.0, 4.0), (3.0, 4.0)];
        m.measure(&v, &v.owners.clone());
        // Its load is this interval's (full speed: 2 s over 10 updates); its
        // speed is the window's taken a quarter in from the top: of a half
        // and a whole interval, the whole one (one slow interval is a blip).
        assert_eq!(m.loads, [0.1, 0.2]);
        assert_eq!(m.speeds, [1.0, 1.0]);
        assert_eq!(m.history.len(), 2);
        // Half speed in three of four intervals: half speed.
        for k in 0..3 {
            let t = 6.0 + 2.0 * k as f64;
            v.core = vec![(t, t), (3.0 + k as f64 + 1.0, t)];
            m.measure(&v, &v.owners.clone());
        }
        assert_eq!(m.speeds, [1.0, 0.5]);
    }

    #[test]
    fn a_simulated_load_is_the_cost_model() {
        let v = Stub {
            counts: vec![4, 2],
            owners: vec![0, 1],
            busy: vec![9.0, 9.0],
            work: Some(vec![4.0, 8.0]),
            core: vec![(1.0, 1.0), (1.0, 1.0)],
        };
        let mut m = LoadMeter::default();
        m.measure(&v, &v.owners.clone());
        assert_eq!(m.loads, [1.0, 4.0]);
        // A cost model's loads carry no speed.
        assert!(m.speed_window().is_empty());
    }

    #[test]
    fn the_history_starts_once_every_subdomain_is_measured() {
        let mut v = Stub {
            counts: vec![4, 0],
            owners: vec![0, 1],
            busy: vec![0.0, 0.0],
            work: Some(vec![4.0, 0.0]),
            core: vec![(1.0, 1.0), (1.0, 1.0)],
        };
        let mut m = LoadMeter::default();
        m.measure(&v, &v.owners.clone());
        assert_eq!(m.loads, [1.0, 0.0]);
        assert!(m.history.is_empty());
        v.counts = vec![8, 2];
        v.work = Some(vec![8.0, 8.0]);
        m.measure(&v, &v.owners.clone());
        assert_eq!(m.history, [vec![1.0, 4.0]]);
    }
}
