//! A plan driven on its engine, for the command line and for programs that
//! use braid as a library alike: real threads with the plan's parasites
//! beside them, or the simulator; and the report made of what came out.
//!
//! A real run's parasites are started here and nowhere else ([`Beside`]):
//! before the solve (a parasite that cannot start stops the run before it
//! begins) and stopped after it, whoever drives the run (one process,
//! each rank of a run across ranks, the calibration's measured runs).

use crate::busy::Before;
use crate::engine::Outcome;
use crate::noise::NoiseReport;
use crate::parasites::{self, StartError};
use crate::plan::{Plan, Target};
use crate::report::Report;
use crate::{runtime, sim};

/// Runs `plan` on its engine: real threads (with the plan's parasites
/// started beside them and stopped after), or the simulator. Returns the
/// report and the outcome it was made from (which holds the final grid).
///
/// ```
/// use braid::{Config, Plan};
/// let mut config = Config::default();
/// config.apply_overrides(&["domain_size=16", "max_iterations=20"]).unwrap();
/// let plan = Plan::simulated(&config).unwrap();
/// let (report, _) = braid::run(&plan).unwrap();
/// assert_eq!(report.threads, 36); // the default sim_topology: 2 x 18 cores
/// assert_eq!(report.subdomain_updates.iter().max(), Some(&20));
/// ```
pub fn run(plan: &Plan) -> Result<(Report, Outcome), StartError> {
    match &plan.target {
        Target::Simulator(sim) => {
            let (outcome, noise) = sim::run(
                &plan.problem,
                &plan.placement,
                &plan.settings,
                sim,
                plan.noise.as_ref(),
            );
            Ok((Report::new(plan, &outcome, noise), outcome))
        }
        Target::Threads => {
            let parasites = Beside::start(plan)?;
            let before = Before::now();
            let outcome = runtime::run(&plan.problem, &plan.placement, &plan.settings);
            let machine = before.until_now(&plan.placement.cores, &outcome.thread_core_time);
            let mut report = Report::new(plan, &outcome, parasites.stop());
            report.machine = Some(machine);
            Ok((report, outcome))
        }
    }
}

/// A real run's parasites, as its plan asks for them, running beside it
/// until [`Beside::stop`] (or a drop, on an error path, which stops them
/// too).
pub struct Beside(Option<parasites::Running>);

impl Beside {
    /// Starts the parasites `plan` asks for (none for a quiet plan, or on
    /// a rank that does not lead its node), each calibrated when its level
    /// is a duty cycle.
    pub fn start(plan: &Plan) -> Result<Beside, StartError> {
        match &plan.noise {
            Some(noise) => Ok(Beside(Some(parasites::start(noise)?))),
            None => Ok(Beside(None)),
        }
    }

    /// Stops them and returns what each measured on itself.
    pub fn stop(self) -> Option<NoiseReport> {
        self.0.and_then(parasites::Running::stop)
    }
}
