//! ULBA's trigger for a bulk-synchronous run (`lb_interval = degradation`;
//! anticipating-load-imbalance-ulba.txt, its Algorithm 1, after Zhai et
//! al.): the first iteration after a call is the reference; each iteration
//! after it adds to the degradation the median of the last three
//! iterations' times less the reference's; a call is due once the
//! degradation reaches what a call costs on average (the stall every
//! thread waits out at the barrier), then the count starts again.
//!
//! Times are in seconds, as the engine measures them (the simulator's
//! virtual ones). The rule is in iterations, so only a bulk-synchronous
//! run (`sync(n)+BALANCER(degradation)`) uses it.

/// The degradation since the last call, and what calls have cost.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Degradation {
    /// The first iteration's time since the last call (ULBA's `ref_time`).
    reference: Option<f64>,
    /// The last three iterations' times, oldest first.
    recent: Vec<f64>,
    /// The sum of `median(recent) - reference` since the last call.
    lost: f64,
    /// What a call is taken to cost until one has been measured.
    prior: f64,
    /// The calls' summed cost, and how many.
    spent: (f64, u64),
}

impl Degradation {
    /// Before any call, a call is taken to cost `prior` seconds (the
    /// configured cost of a decision).
    pub(crate) fn new(prior: f64) -> Self {
        Degradation {
            reference: None,
            recent: Vec::with_capacity(3),
            lost: 0.0,
            prior,
            spent: (0.0, 0),
        }
    }

    /// An iteration took `seconds` (its slowest thread's work).
    pub(crate) fn iteration(&mut self, seconds: f64) {
        if self.recent.len() == 3 {
            self.recent.remove(0);
        }
        self.recent.push(seconds);
        let reference = *self.reference.get_or_insert(seconds);
        let mut sorted = [0.0; 3];
        let sorted = &mut sorted[..self.recent.len()];
        sorted.copy_from_slice(&self.recent);
        sorted.sort_by(f64::total_cmp);
        self.lost += sorted[sorted.len() / 2] - reference;
    }

    /// The mean cost of a call so far (the prior before the first).
    pub(crate) fn call_cost(&self) -> f64 {
        match self.spent {
            (_, 0) => self.prior,
            (sum, n) => sum / n as f64,
        }
    }

    /// Whether the degradation has reached a call's cost.
    pub(crate) fn due(&self) -> bool {
        self.reference.is_some() && self.lost >= self.call_cost()
    }

    /// A call was made at the barrier and cost `seconds`: the count starts
    /// again at the next iteration.
    pub(crate) fn called(&mut self, seconds: f64) {
        self.spent.0 += seconds;
        self.spent.1 += 1;
        self.reference = None;
        self.lost = 0.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_is_due_once_the_iterations_lost_what_a_call_costs() {
        let mut d = Degradation::new(3.0);
        assert!(!d.due(), "nothing measured yet");
        // The reference is 10; then 11, 12, 13: medians 10.5 -> 11 -> 12
        // (the last three), so 0, 1, 2 lost: 3 by the fourth iteration.
        for t in [10.0, 11.0, 12.0] {
            d.iteration(t);
            assert!(!d.due(), "after {t}: {d:?}");
        }
        d.iteration(13.0);
        assert!(d.due(), "{d:?}");
        // A call that cost 1: from now on a call costs the mean of the
        // measured ones (the prior no longer counts), so the next is due
        // after a loss of 1.
        d.called(1.0);
        assert_eq!(d.call_cost(), 1.0);
        assert!(!d.due());
        d.iteration(10.0); // the new reference; the median of 12, 13, 10 is 12
        assert!(d.due(), "{d:?}");
    }

    #[test]
    fn iterations_that_stay_even_never_call() {
        let mut d = Degradation::new(1e-9);
        for _ in 0..1000 {
            d.iteration(0.5);
        }
        assert!(!d.due());
    }
}
