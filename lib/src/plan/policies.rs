//! The balancer a configuration asks for, built: each strategy with its
//! settings from the keys (`lb_*`, `pairs`, the thresholds, `seed`), and
//! `prescribed`'s owners read from its directory.

use std::sync::Arc;

use super::PlanError;
use crate::choice::Choice;
use crate::config::Config;
use crate::engine::{BalancerSettings, Policies};
use crate::lbdata::read::Recording;
use crate::policy::learned::{Learner, Model};
use crate::policy::{Bounds, Homes, Named, Policy, Scope, Settings};
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
        mode_shares: Some(crate::forecast::sub_shares(problem)),
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

/// The LB data the file strategy (`prescribed:DIR`) applies, read from
/// its directory; `None` for every other strategy.
fn recording(cfg: &Config, strategy: Strategy) -> Result<Option<Recording>, PlanError> {
    let (with_file, word) = <Strategy as Choice>::WITH_FILE;
    if strategy != with_file {
        return Ok(None);
    }
    let Some(dir) = &cfg.lb_strategy.file else {
        return Err(lb_strategy(format!(
            "{name} applies the owners of a directory of LB data: write lb_strategy = \
             {name}:{word}",
            name = with_file.name()
        )));
    };
    crate::lbdata::read::read_dir(dir)
        .map(Some)
        .map_err(|e| lb_strategy(e.to_string()))
}

fn lb_strategy(message: String) -> PlanError {
    PlanError::Invalid {
        key: "lb_strategy",
        message,
    }
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
    let recording = recording(cfg, named.strategy)?;
    let settings = Settings {
        bounds: Bounds {
            scope,
            low: cfg.low_threshold(),
            high: cfg.high_threshold(),
        },
        pairs: cfg.pairs,
        min_gap: cfg
            .lb_min_gap
            .value()
            .copied()
            .unwrap_or(crate::policy::DEFAULT_MIN_GAP),
        predict: cfg.lb_predict,
        seed: cfg.seed,
        tolerance: cfg.lb_tolerance,
        alpha: cfg.lb_alpha,
        history: cfg.lb_history,
        recording: recording.as_ref(),
        subdomains: problem.subs.len(),
        threads: problem.threads,
    };
    named.strategy.build(&settings).map_err(|e| {
        lb_strategy(match &cfg.lb_strategy.file {
            Some(dir) if recording.is_some() => format!("{}: {e}", dir.display()),
            _ => e,
        })
    })
}
