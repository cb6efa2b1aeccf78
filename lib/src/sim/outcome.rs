//! The end of a simulation: the [`Outcome`] both engines return (counts,
//! owners, the verified grid and residual, what the balancer did), and
//! what each simulated parasite took from its core, as the runtime's
//! parasites report it.

use super::clock::{seconds, step};
use super::simulation::Simulation;
use super::timeline::{Interference, Timeline};
use crate::engine::{Clock, Numbers, Outcome, StopReason};
use crate::noise::{NoiseReport, ParasiteReport};
use crate::problem::residual_norm;

impl Simulation<'_> {
    /// The outcome at the clock's stop, and the noise report.
    pub(super) fn finish(mut self) -> (Outcome, Option<NoiseReport>) {
        // Updates still in flight are not counted: the run ended first.
        let elapsed_s = seconds(self.now);
        // The trace covers the whole run, its last partial window too.
        if self.trace.last().is_some_and(|l| l.t_s < elapsed_s) {
            self.push_sample();
        }
        let (residual, grid) = match self.verified.take() {
            Some((r, g)) => (Some(r), Some(g)),
            None if self.numbers == Numbers::Held => {
                let g = self.subs.assemble(self.problem);
                (Some(residual_norm(&g) / self.r0), Some(g))
            }
            None => (None, None),
        };
        let converged = self
            .settings
            .tolerance
            .is_some_and(|tol| residual.is_some_and(|r| r <= tol));
        let noise = self.noise_report(elapsed_s);
        let outcome = Outcome {
            clock: Clock::Virtual,
            elapsed_s,
            stop: self.stop.unwrap_or(StopReason::MaxIterations),
            subdomain_updates: self.board.counts.clone(),
            thread_updates: self.board.updates.clone(),
            owners: self.board.owners.clone(),
            grid,
            residual,
            converged,
            time_to_solution_s: converged.then_some(elapsed_s),
            max_staleness_seen: self.threads.iter().map(|t| t.max_lag).max().unwrap_or(0),
            pinned: false,
            refuted_estimates: self.refuted,
            rehomes: self.rehomes,
            first_touchers: Vec::new(),
            lb: self.balance.as_ref().map(|b| b.caller.stats()),
            trace: std::mem::take(&mut self.trace),
            ranks: None,
            thread_core_time: Vec::new(),
            subdomain_busy_s: self.board.loads.as_ref().map(|l| {
                l.busy_ps
                    .iter()
                    .map(|&ps| ps as f64 / super::clock::PS_PER_S)
                    .collect()
            }),
        };
        (outcome, noise)
    }

    /// Each parasite as its core's timeline saw it: a parasite on a core
    /// without a thread took nothing from a worker.
    fn noise_report(&self, elapsed_s: f64) -> Option<NoiseReport> {
        let noise = self.noise?;
        let parasites = noise
            .parasites
            .iter()
            .map(|q| {
                let tl = Timeline {
                    interference: self
                        .threads
                        .iter()
                        .zip(&self.placement.cores)
                        .find(|(_, c)| **c == q.core)
                        .map_or(Interference::None, |(t, _)| t.timeline.interference.clone()),
                    ..Timeline::QUIET
                };
                // The parasite's own work, without the switches its worker
                // lost around it.
                let switch = step(self.costs.noise_switch_ns * 1e3);
                let work_ps = match tl.interference {
                    Interference::Rhythm { work, .. } => work.saturating_sub(switch),
                    _ => 0,
                };
                let work_iters = (work_ps as f64 / 1e3 / self.costs.noise_iter_ns).round() as u64;
                ParasiteReport::new(
                    q,
                    work_iters,
                    tl.bursts_by(self.now),
                    tl.stolen_share_by(self.now),
                    elapsed_s,
                )
            })
            .collect();
        Some(NoiseReport {
            form: noise.form,
            parasites,
        })
    }
}
