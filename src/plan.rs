//! Turns a configuration and a machine into a runnable plan: the problem,
//! the selected topology, where each thread is pinned, and the runtime
//! settings. Every check that needs the machine lives here.

use crate::config::{AutoOr, Config, ConfigError};
use crate::problem::{DecompositionError, Problem};
use crate::runtime::Settings;
use crate::topology::{Placement, Topology, TopologyError};

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Topology(#[from] TopologyError),
    #[error("`subdomains`/`domain_size`: {0}")]
    Decomposition(#[from] DecompositionError),
}

#[derive(Debug, Clone)]
pub struct Plan {
    /// The configuration with `threads` resolved.
    pub config: Config,
    pub problem: Problem,
    pub topology: Topology,
    pub placement: Placement,
    pub settings: Settings,
}

impl Plan {
    pub fn new(config: &Config, machine: &Topology) -> Result<Plan, PlanError> {
        config.validate()?;
        let topology = machine.select(&config.cores, &config.sockets)?;
        let threads = match config.threads {
            AutoOr::Auto => topology.cores().len(),
            AutoOr::Value(n) => n,
        };
        let placement = topology.place(threads, config.oversubscribe)?;
        let mut config = config.clone();
        config.threads = AutoOr::Value(threads);
        config.validate()?;
        let problem = Problem::new(config.domain_size, threads, config.subdomains)?;
        let settings = Settings::from_config(&config, &problem);
        Ok(Plan {
            config,
            problem,
            topology,
            placement,
            settings,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_threads_take_every_selected_core() {
        let plan = Plan::new(&Config::default(), &Topology::uniform(2, 3)).unwrap();
        assert_eq!(plan.config.threads, AutoOr::Value(6));
        assert_eq!(plan.placement.sockets, vec![0, 0, 0, 1, 1, 1]);
        assert_eq!(plan.settings.update_budget, 5000 * 4);
    }

    #[test]
    fn more_threads_than_cores_need_oversubscribe() {
        let mut cfg = Config {
            threads: AutoOr::Value(3),
            ..Config::default()
        };
        let e = Plan::new(&cfg, &Topology::uniform(1, 2)).unwrap_err();
        assert!(e.to_string().contains("oversubscribe"), "{e}");
        cfg.oversubscribe = true;
        assert!(Plan::new(&cfg, &Topology::uniform(1, 2)).is_ok());
    }

    #[test]
    fn a_split_that_does_not_fit_is_named() {
        let cfg = Config {
            domain_size: 2,
            subdomains: 9,
            ..Config::default()
        };
        let e = Plan::new(&cfg, &Topology::uniform(1, 1)).unwrap_err();
        assert!(e.to_string().contains("subdomains"), "{e}");
    }
}
