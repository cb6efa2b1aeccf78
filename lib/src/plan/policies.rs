//! The balancer a configuration asks for, built: each strategy with its
//! settings from the keys (`lb_*`, `pairs`, the thresholds, `seed`), and
//! `prescribed`'s owners read from its directory.

use std::sync::Arc;

use super::PlanError;
use crate::config::Config;
use crate::engine::{BalancerSettings, Policies};
use crate::policy::learned::{Learner, Model};
use crate::policy::{
    Anticipate, Bounds, Gossip, Greedy, Homes, Named, Policy, Prescribed, Progressive, Refine,
    ResidualFirst, Scope, Steal,
};
use crate::problem::Problem;
use crate::variant::{Pick, Strategy};

/// The balancer the configuration asks for, if any.
pub(super) fn balancer(
    cfg: &Config,
    problem: &Problem,
) -> Result<Option<BalancerSettings>, PlanError> {
    let Some(pick) = cfg.pick() else {
        return Ok(None);
    };
    let policies = match pick {
        Pick::One(named) => Policies::One(policy(cfg, named, problem)?),
        Pick::Auto => Policies::Auto(
            cfg.lb_candidates
                .iter()
                .map(|&named| policy(cfg, named, problem))
                .collect::<Result<_, _>>()?,
        ),
        Pick::Learned => {
            let model = learned_model(cfg)?;
            let candidates = model
                .classes
                .iter()
                .map(|&named| policy(cfg, named, problem))
                .collect::<Result<_, _>>()?;
            Policies::Learned(candidates, Arc::new(Learner::new(Some(model), problem)))
        }
    };
    Ok(Some(BalancerSettings {
        policies,
        interval: cfg.lb_interval,
        group: cfg.lb_group,
        homes: homes(cfg, problem),
        mode_shares: Some(crate::forecast::sub_shares(problem).into()),
        gate: cfg.lb_gate,
        away_prior: model_away(cfg, problem),
        reading: crate::policy::Reading {
            window: cfg.lb_window,
            recent: cfg.lb_recent,
        },
    }))
}

/// Each subdomain's home and the price of leaving it (`lb_away_cost`;
/// auto: the cost model's, at the first subdomain's size).
fn homes(cfg: &Config, problem: &Problem) -> Homes {
    let away_cost = match cfg.lb_away_cost.value() {
        Some(&p) => p,
        None => model_away(cfg, problem),
    };
    Homes {
        per_domain: problem.subdomains_per_domain(),
        away_cost,
    }
}

/// What the cost model says a subdomain away from home costs over at
/// home, less 1, at the first subdomain's size.
fn model_away(cfg: &Config, problem: &Problem) -> f64 {
    problem.subs.first().map_or(0.0, |g| {
        super::sim_costs(cfg).away_cost(
            g.height,
            g.width,
            problem.subdomains_per_domain(),
            problem.sub_cols,
        )
    })
}

/// `learned`'s model, from the file `balancer` names.
fn learned_model(cfg: &Config) -> Result<Model, PlanError> {
    let fail = |message: String| PlanError::Invalid {
        key: "balancer",
        message,
    };
    let file = match (&cfg.balancer.file, &cfg.lb_model) {
        (Some(a), Some(b)) if a != b => {
            return Err(fail(format!(
                "balancer = learned:{} and lb_model = {} name two models",
                a.display(),
                b.display()
            )));
        }
        (Some(file), _) | (None, Some(file)) => file,
        (None, None) => {
            return Err(fail(
                "learned chooses by a model that braid learn wrote: write balancer = \
                 learned:MODEL.json (or lb_model = MODEL.json after a label)"
                    .into(),
            ));
        }
    };
    Model::read(file).map_err(|e| fail(format!("{}: {e}", file.display())))
}

/// `prescribed`'s owners, from the directory `lb_strategy` names.
fn prescribed(cfg: &Config, bounds: Bounds, problem: &Problem) -> Result<Prescribed, PlanError> {
    let fail = |message: String| PlanError::Invalid {
        key: "lb_strategy",
        message,
    };
    let Some(dir) = &cfg.lb_strategy.file else {
        return Err(fail(
            "prescribed applies the owners of a directory of LB data: write lb_strategy = \
             prescribed:DIR"
                .into(),
        ));
    };
    let recording = crate::lbdata::read::read_dir(dir).map_err(|e| fail(e.to_string()))?;
    Prescribed::new(bounds, &recording, problem.subs.len(), problem.threads)
        .map_err(|e| fail(format!("{}: {e}", dir.display())))
}

/// The policy `named` with its settings from the configuration (a hybrid
/// candidate takes `hybrid_period`).
fn policy(cfg: &Config, named: Named, problem: &Problem) -> Result<Arc<dyn Policy>, PlanError> {
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
    Ok(match named.strategy {
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
        Strategy::Prescribed => Arc::new(prescribed(cfg, bounds, problem)?),
    })
}
