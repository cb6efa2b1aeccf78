//! When a run stops, and what happens when the cheap convergence estimate
//! is refuted by the residual recomputed from the assembled grid.

use crate::engine::StopReason;

/// The limits a run stops at: each thread's update budget, and the time
/// limit in ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StopRule {
    pub budget: u64,
    pub time_limit: Option<u64>,
}

/// What an engine sees at one look, for [`StopRule::first`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Verdicts {
    pub interrupted: bool,
    /// The most updates any thread has made, if this look counts them.
    pub most_updates: Option<u64>,
    /// The tick now, if this look watches the time limit.
    pub now: Option<u64>,
}

impl StopRule {
    /// Whether a thread with `updates` subdomain updates has spent its budget.
    pub(crate) fn budget_spent(&self, updates: u64) -> bool {
        updates >= self.budget
    }

    pub(crate) fn time_up(&self, now: u64) -> bool {
        self.time_limit.is_some_and(|limit| now >= limit)
    }

    /// The reason to stop at this look, in the order the report prefers:
    /// an interrupt, the budget, the time limit, then convergence, whose
    /// test (`converged`, possibly costly) runs only when nothing else
    /// stops the run.
    pub(crate) fn first(
        &self,
        v: Verdicts,
        converged: impl FnOnce() -> bool,
    ) -> Option<StopReason> {
        if v.interrupted {
            Some(StopReason::Interrupted)
        } else if v.most_updates.is_some_and(|u| self.budget_spent(u)) {
            Some(StopReason::MaxIterations)
        } else if v.now.is_some_and(|now| self.time_up(now)) {
            Some(StopReason::TimeLimit)
        } else if converged() {
            Some(StopReason::Converged)
        } else {
            None
        }
    }
}

/// How far below the grid's measured miss a refuted line is cut: the run
/// then ends just past its target. Every engine cuts the same way. The
/// runtime once cut at least 4x ("to make a second refutation unlikely"),
/// which ran a refuted run on to about half its target: about 1900 more
/// sweeps at 150² a thread, 7% of the run, where a restart costs one grid
/// assembly (2026-11-27, 15 interleaved pairs of time to 1e-4: async(1)
/// 0.973, async(4) 0.925, split 1.007 of the 4x cut's; refuted runs ended
/// at 7-9.7e-5 instead of 5e-5, a few refuted twice). Across ranks the 4x
/// cut had cost 15% (docs/across-nodes.md).
pub(crate) const REFUTED_MARGIN: f64 = 0.95;

/// The line the residual estimate (sum of the subdomains' last squared
/// local residuals) must reach before the grid is checked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct EstimateLine {
    line_sq: f64,
}

impl EstimateLine {
    /// `(||r0|| x tolerance)^2`; without a tolerance, a line never met.
    pub(crate) fn new(r0: f64, tolerance: Option<f64>) -> Self {
        EstimateLine {
            line_sq: tolerance.map_or(f64::NEG_INFINITY, |tol| (r0 * tol).powi(2)),
        }
    }

    pub(crate) fn met(&self, estimate_sq: f64) -> bool {
        estimate_sq <= self.line_sq
    }

    /// The line, squared (`-inf` without a tolerance).
    pub(crate) fn line_sq(&self) -> f64 {
        self.line_sq
    }

    /// The estimate said converged but the grid's relative residual is
    /// `residual`, above `tolerance`: the line is cut by the measured ratio
    /// times [`REFUTED_MARGIN`].
    pub(crate) fn tighten(&mut self, tolerance: f64, residual: f64) {
        self.line_sq *= (tolerance / residual).powi(2) * REFUTED_MARGIN;
    }

    /// For an engine that keeps the line in an atomic.
    pub(crate) fn to_bits(self) -> u64 {
        self.line_sq.to_bits()
    }

    pub(crate) fn from_bits(bits: u64) -> Self {
        EstimateLine {
            line_sq: f64::from_bits(bits),
        }
    }
}

/// How an epoch that stopped for `stop` ends the run, given the residual
/// recomputed from the grid: `None` when the convergence estimate was
/// refuted and budget remains (run another epoch), else the reason to
/// report. A refuted estimate with the budget spent is reported as the
/// budget, never as convergence.
pub(crate) fn epoch_end(
    stop: StopReason,
    residual: f64,
    tolerance: f64,
    budget_spent: bool,
) -> Option<StopReason> {
    let refuted = stop == StopReason::Converged && residual > tolerance;
    match (refuted, budget_spent) {
        (false, _) => Some(stop),
        (true, true) => Some(StopReason::MaxIterations),
        (true, false) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refuted_estimate_with_the_budget_spent_ends_as_max_iterations() {
        use StopReason::*;
        assert_eq!(epoch_end(Converged, 2e-4, 1e-4, true), Some(MaxIterations));
        assert_eq!(epoch_end(Converged, 2e-4, 1e-4, false), None);
        assert_eq!(epoch_end(Converged, 5e-5, 1e-4, true), Some(Converged));
        assert_eq!(epoch_end(TimeLimit, 2e-4, 1e-4, false), Some(TimeLimit));
        assert_eq!(
            epoch_end(MaxIterations, 2e-4, 1e-4, true),
            Some(MaxIterations)
        );
    }

    #[test]
    fn an_interrupt_outranks_every_other_reason() {
        let rule = StopRule {
            budget: 1,
            time_limit: Some(0),
        };
        let all = Verdicts {
            interrupted: true,
            most_updates: Some(5),
            now: Some(5),
        };
        assert_eq!(rule.first(all, || true), Some(StopReason::Interrupted));
    }

    #[test]
    fn the_convergence_test_runs_only_when_nothing_else_stops_the_run() {
        let rule = StopRule {
            budget: 1,
            time_limit: None,
        };
        let spent = Verdicts {
            most_updates: Some(1),
            ..Verdicts::default()
        };
        let r = rule.first(spent, || panic!("checked the grid needlessly"));
        assert_eq!(r, Some(StopReason::MaxIterations));
    }

    #[test]
    fn a_refutation_cuts_the_line_by_the_measured_miss_and_the_margin() {
        let mut line = EstimateLine::new(1.0, Some(1.0));
        line.tighten(1.0, 2.0);
        assert_eq!(line.line_sq, 0.25 * REFUTED_MARGIN);
        // A near miss is cut nearly as little (no 4x floor).
        let mut near = EstimateLine::new(1.0, Some(1.0));
        near.tighten(1.0, 1.05);
        assert!(near.line_sq > 0.8, "{}", near.line_sq);
    }
}

#[cfg(test)]
mod examples {
    //! The documented behaviour of this module's items, as the examples
    //! their docs would show (rustdoc runs doc examples of public items
    //! only).

    #[test]
    fn the_most_urgent_stop_wins() {
        use crate::engine::StopReason::*;
        use crate::schedule::{StopRule, Verdicts};
        let rule = StopRule {
            budget: 10,
            time_limit: Some(100),
        };
        let look = |most, now| Verdicts {
            interrupted: false,
            most_updates: Some(most),
            now: Some(now),
        };
        assert_eq!(rule.first(look(10, 100), || true), Some(MaxIterations));
        assert_eq!(rule.first(look(9, 100), || true), Some(TimeLimit));
        assert_eq!(rule.first(look(9, 99), || true), Some(Converged));
        assert_eq!(rule.first(look(9, 99), || false), None);
    }

    #[test]
    fn a_refuted_line_is_cut_below_what_the_grid_said() {
        use crate::schedule::EstimateLine;
        let mut line = EstimateLine::new(10.0, Some(0.1)); // ||r0|| = 10
        assert!(line.met(1.0) && !line.met(1.1));
        line.tighten(0.1, 0.2); // the grid said 0.2: the line falls below 0.25
        assert!(!line.met(0.25) && line.met(0.23));
        assert!(!EstimateLine::new(10.0, None).met(0.0));
    }
}
