//! Turns a configuration and a machine into a runnable plan: the problem,
//! the selected topology, where each thread is pinned, and the runtime
//! settings. Every check that needs the machine lives here.

use crate::config::{AutoOr, Config, ConfigError, NoiseMode};
use crate::noise::{Level, NoisePlan, ParasitePlan};
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
    #[error(
        "`noise_cores`: core {core} is not available or named twice (available: {available}; \
         auto is the core of the thread next to the source)"
    )]
    NoiseCore { core: usize, available: String },
}

#[derive(Debug, Clone)]
pub struct Plan {
    /// The configuration with `threads` resolved.
    pub config: Config,
    pub problem: Problem,
    pub topology: Topology,
    pub placement: Placement,
    pub settings: Settings,
    /// Parasites to run next to the solve, if any.
    pub noise: Option<NoisePlan>,
}

impl Plan {
    pub fn new(config: &Config, machine: &Topology) -> Result<Plan, PlanError> {
        config.validate()?;
        let topology = machine.select(&config.cores, &config.sockets)?;
        let threads = match config.threads {
            AutoOr::Auto => topology.physical_cores(),
            AutoOr::Value(n) => n,
        };
        let placement = topology.place(threads, config.oversubscribe)?;
        let mut config = config.clone();
        config.threads = AutoOr::Value(threads);
        config.validate()?;
        let problem = Problem::new(config.domain_size, threads, config.subdomains)?;
        let settings = Settings::from_config(&config, &problem);
        let noise = noise_plan(&config, &problem, &placement, machine)?;
        Ok(Plan {
            config,
            problem,
            topology,
            placement,
            settings,
            noise,
        })
    }
}

/// Where the parasites go. `auto` is the paper's placement: the core of the
/// thread whose domain touches the source. Any core of the machine may be
/// named, whether a worker uses it or not.
fn noise_plan(
    cfg: &Config,
    problem: &Problem,
    placement: &Placement,
    machine: &Topology,
) -> Result<Option<NoisePlan>, PlanError> {
    if cfg.noise == NoiseMode::None {
        return Ok(None);
    }
    let level = |duty: Option<f64>| match duty {
        Some(d) => Level::Duty(d),
        None => Level::Iterations(cfg.noise_work_iters),
    };
    let parasite = |core: usize, duty: Option<f64>| ParasitePlan {
        core,
        sleep_us: cfg.noise_sleep_us,
        level: level(duty),
    };
    let available = machine.cores();
    let mut parasites: Vec<ParasitePlan> = Vec::new();
    for c in &cfg.noise_cores {
        let core = match c.core {
            AutoOr::Auto => placement.cores[problem.source_domain()],
            AutoOr::Value(core) => core,
        };
        if !available.contains(&core) || parasites.iter().any(|p| p.core == core) {
            return Err(PlanError::NoiseCore {
                core,
                available: crate::topology::format_list(&available),
            });
        }
        parasites.push(parasite(core, c.duty));
    }
    Ok(Some(NoisePlan {
        mode: cfg.noise,
        parasites,
    }))
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
    fn auto_noise_goes_on_the_core_of_the_source_domains_thread() {
        let cfg = Config {
            noise: NoiseMode::Thread,
            threads: AutoOr::Value(4),
            ..Config::default()
        };
        // 4 threads tile 2 x 2; the north row holds domains 0 and 1, and the
        // middle one of that row is domain 1 -> thread 1 -> core 1.
        let plan = Plan::new(&cfg, &Topology::uniform(2, 2)).unwrap();
        let noise = plan.noise.unwrap();
        assert_eq!(noise.parasites.len(), 1);
        assert_eq!(noise.parasites[0].core, plan.placement.cores[1]);
        assert_eq!(noise.parasites[0].level, Level::Iterations(10_000));
    }

    #[test]
    fn noise_on_a_missing_core_is_named() {
        let mut cfg = Config {
            noise: NoiseMode::Process,
            ..Config::default()
        };
        cfg.apply_override("noise_cores=1:0.19, 7").unwrap();
        let e = Plan::new(&cfg, &Topology::uniform(1, 2)).unwrap_err();
        assert!(e.to_string().contains("core 7"), "{e}");
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
