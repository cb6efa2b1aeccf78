//! `overloading-threads`' growth kept with its threads: each picked
//! thread's growth per unit of progress is spread over the subdomains it
//! holds at the time, and what a subdomain grew while it was there goes
//! with it when it moves (ULBA's model: its overloading PEs grow, and a
//! balancing step moves the load they hold, not their growth).
//!
//! A subdomain's factor at progress `p` is `1 + a p + grown + rate (p -
//! since)`: `grown` what it gained up to `since`, the last call that moved
//! anything, at the `rate` its holder gave it then. Nothing moves between
//! calls, so the factor is exact at every progress.

use crate::workload::ThreadGrowth;

/// Each subdomain's growth from its holders.
#[derive(Debug, Clone)]
pub(super) struct Growth {
    a: f64,
    grown: Vec<f64>,
    rate: Vec<f64>,
    since: f64,
}

impl Growth {
    /// At progress 0, every subdomain on its home thread.
    pub(super) fn new(g: &ThreadGrowth, sets: &[Vec<usize>]) -> Self {
        let n = sets.iter().map(Vec::len).sum();
        let mut growth = Growth {
            a: g.a,
            grown: vec![0.0; n],
            rate: vec![0.0; n],
            since: 0.0,
        };
        growth.spread(g, sets);
        growth
    }

    /// Subdomain `s`'s factor at progress `p`.
    #[inline]
    pub(super) fn factor(&self, s: usize, p: f64) -> f64 {
        1.0 + self.a * p + self.grown[s] + self.rate[s] * (p - self.since)
    }

    /// After a call moved subdomains at progress `p` (`sets`: each
    /// thread's subdomains now): what each grew so far stays with it, and
    /// from here each picked thread's growth is spread over what it holds.
    pub(super) fn moved(&mut self, g: &ThreadGrowth, sets: &[Vec<usize>], p: f64) {
        for (grown, rate) in self.grown.iter_mut().zip(&self.rate) {
            *grown += rate * (p - self.since);
        }
        self.since = p;
        self.spread(g, sets);
    }

    fn spread(&mut self, g: &ThreadGrowth, sets: &[Vec<usize>]) {
        for (t, set) in sets.iter().enumerate() {
            // A picked thread that holds nothing has nowhere to grow (the
            // balancers keep at least `low` on every thread).
            let rate = match g.over.get(t) {
                Some(true) if !set.is_empty() => g.m * g.per as f64 / set.len() as f64,
                _ => 0.0,
            };
            for &s in set {
                self.rate[s] = rate;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::Problem;
    use crate::workload::{Workload, WorkloadSpec};

    /// 8 threads of 4 subdomains, `overloading-threads(0.25, 0.4, 1)`: 2
    /// threads grow, every other subdomain stays at 1.
    fn setting() -> (Problem, Workload, Vec<Vec<usize>>) {
        let p = Problem::new(8, 8, 4).unwrap();
        let spec = WorkloadSpec::parse("overloading-threads(0.25, 0.4, 1)").unwrap();
        let w = Workload::build(&spec, &p, 3).unwrap();
        let sets = (0..8).map(|t| (4 * t..4 * t + 4).collect()).collect();
        (p, w, sets)
    }

    #[test]
    fn growth_tied_to_threads_stays_with_them_when_their_subdomains_move() {
        let (_, w, mut sets) = setting();
        let g = w.thread_growth().expect("overloading-threads");
        let over: Vec<usize> = (0..8).filter(|&t| g.over[t]).collect();
        assert_eq!(over.len(), 2);
        let mut growth = Growth::new(g, &sets);
        // Before any move: the workload's own factors.
        for s in 0..32 {
            assert_eq!(growth.factor(s, 3.0), w.factor(s, 3.0), "{s}");
        }
        // At progress 2, a growing thread gives 3 of its 4 subdomains to a
        // thread that does not grow.
        let (t, to) = (over[0], (0..8).find(|&t| !g.over[t]).unwrap());
        let given: Vec<usize> = sets[t].drain(1..).collect();
        sets[to].extend(&given);
        growth.moved(g, &sets, 2.0);
        let kept = sets[t][0];
        let rate = |s: usize| growth.factor(s, 5.0) - growth.factor(s, 4.0);
        // What they grew stays with them; from now on the thread's whole
        // growth goes to the one it kept.
        for &s in &given {
            assert!((growth.factor(s, 2.0) - w.factor(s, 2.0)).abs() < 1e-12);
            assert!(rate(s).abs() < 1e-12, "{s} still grows: {}", rate(s));
        }
        assert!((rate(kept) - 4.0 * g.m).abs() < 1e-12, "{}", rate(kept));
        // The grid grows as much either way: the total is the workload's.
        for p in [2.0, 3.5, 10.0] {
            let tied: f64 = (0..32).map(|s| growth.factor(s, p)).sum();
            let cells: f64 = w.factors(32, p).iter().sum();
            assert!(
                (tied - cells).abs() < 1e-9,
                "at {p}: {tied} against {cells}"
            );
        }
    }
}
