//! The balancer a configuration asks for, built: each strategy with its
//! settings from the keys (`lb_*`, `pairs`, the thresholds, `seed`).

use std::sync::Arc;

use crate::config::Config;
use crate::engine::{Balancer, Policies};
use crate::policy::{
    Anticipate, Bounds, Gossip, Greedy, Named, Policy, Progressive, Refine, ResidualFirst, Scope,
    Steal,
};
use crate::variant::{Pick, Strategy};

/// The balancer the configuration asks for, if any.
pub(super) fn balancer(cfg: &Config) -> Option<Balancer> {
    let policies = match cfg.pick()? {
        Pick::One(named) => Policies::One(policy(cfg, named)),
        Pick::Auto => Policies::Auto(
            cfg.lb_candidates
                .iter()
                .map(|&named| policy(cfg, named))
                .collect(),
        ),
    };
    Some(Balancer {
        policies,
        interval: cfg.lb_interval,
        group: cfg.lb_group,
    })
}

/// The policy `named` with its settings from the configuration (a hybrid
/// candidate takes `hybrid_period`).
fn policy(cfg: &Config, named: Named) -> Arc<dyn Policy> {
    let scope = match named.scope {
        Scope::Hybrid { .. } => Scope::Hybrid {
            period: cfg.hybrid_period,
        },
        s => s,
    };
    let bounds = Bounds {
        scope,
        low: cfg.low_threshold(),
        high: cfg.high_threshold(),
    };
    match named.strategy {
        Strategy::Progressive => Arc::new(Progressive {
            bounds,
            pairs: cfg.pairs,
            min_gap: cfg
                .lb_min_gap
                .value()
                .copied()
                .unwrap_or(crate::policy::DEFAULT_MIN_GAP),
            predict: cfg.lb_predict,
            seed: cfg.seed,
        }),
        Strategy::Steal => Arc::new(Steal { bounds }),
        Strategy::Greedy => Arc::new(Greedy { bounds }),
        Strategy::Refine => Arc::new(Refine {
            bounds,
            tolerance: cfg.lb_tolerance,
        }),
        Strategy::Anticipate => Arc::new(Anticipate {
            bounds,
            alpha: cfg.lb_alpha,
            history: cfg.lb_history,
        }),
        Strategy::Residual => Arc::new(ResidualFirst { bounds }),
        Strategy::Gossip => Arc::new(Gossip {
            bounds,
            fanout: 2,
            rounds: 0,
            seed: cfg.seed,
        }),
    }
}
