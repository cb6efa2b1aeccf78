//! `braid learn`: a strategy chooser trained on simulated samples
//! (AdaptiveLB's idea, with braid's simulator making the instances), and
//! its evaluation on held-out ones (`--evaluate`).
//!
//! An **instance** is a sample's configuration without its balancer
//! (`balancer`, `lb_strategy`, `hybrid_period`, `lb_candidates` at their
//! defaults): the results of one suite hold an instance once per balancer
//! it ran. Its **label** is the fixed strategy (`async(4)+greedy(0.001)`,
//! not plain async, auto or learned) with the least time to solution; an
//! instance where none converged is left out. Its **training points**
//! are the features (`policy::learned`) that the calls of its best
//! strategy see, [`POINTS_PER_INSTANCE`] of them evenly spaced over its run
//! from the first: a probe simulates the instance with that strategy and
//! measures them at every call. So the model knows the states each best
//! strategy leads through, not only where runs begin, and `learned`, which
//! asks at every call, keeps to a strategy once it has chosen it well.
//!
//! The classifier is k-nearest-neighbours, `k` 1 unless told (so that it
//! names each training instance's own best); training reports the
//! leave-one-out accuracy at 1, 3, 5 and 7, what it would do on instances
//! it has not seen.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::lab::experiment::results::{self, Record};
use braid::Config;
use braid::Named;
use braid::{BalancerKey, BalancerKind, Pick, Strategy, Variant};
use braid::{EngineKind, Policies, Scheme};
use braid::{FEATURES, Learner, Model};

/// Why learning cannot go on.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LearnError {
    /// A results file cannot be read.
    #[error("{0}")]
    Results(String),
    /// Nothing to learn from.
    #[error("{0}")]
    Empty(String),
    /// An instance that cannot be simulated.
    #[error("instance {instance}: {problem}")]
    Probe {
        /// Its configuration, shortly.
        instance: String,
        /// Why.
        problem: String,
    },
    /// The model cannot be read or written.
    #[error("{file}: {problem}")]
    Model {
        /// The file.
        file: PathBuf,
        /// Why.
        problem: String,
    },
}

/// One instance: its configuration and the time to solution of each
/// balancer that ran it.
#[derive(Debug, Clone)]
pub(crate) struct Instance {
    pub config: Config,
    /// By label, e.g. `async(4)+greedy(0.001)`; `None`: did not converge.
    pub tts: BTreeMap<String, Option<f64>>,
    /// The best fixed strategy and its label.
    pub best: Option<(Named, String)>,
}

/// The configuration without its balancer: what the instances share.
fn instance_key(cfg: &Config) -> (String, Config) {
    let mut c = cfg.clone();
    let defaults = Config::default();
    c.balancer = BalancerKey::of(BalancerKind::None);
    c.lb_strategy = defaults.lb_strategy;
    c.hybrid_period = defaults.hybrid_period;
    c.lb_candidates = defaults.lb_candidates;
    let key = serde_json::to_string(&c).unwrap_or_default();
    (key, c)
}

/// The instances of `files`' simulated samples, in the order of their
/// configurations, each with its best fixed strategy (on equal times the
/// first label in order): the same whatever order the records are in.
pub(crate) fn instances(files: &[PathBuf]) -> Result<Vec<Instance>, LearnError> {
    let mut out: Vec<Instance> = Vec::new();
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    for file in files {
        let records: Vec<(usize, Record)> =
            results::read_numbered(file).map_err(|e| LearnError::Results(e.to_string()))?;
        for (_, r) in records {
            let Some(report) = r.report.filter(|_| r.engine == EngineKind::Sim) else {
                continue;
            };
            let (key, config) = instance_key(&report.config);
            let i = *index.entry(key).or_insert_with(|| {
                out.push(Instance {
                    config,
                    tts: BTreeMap::new(),
                    best: None,
                });
                out.len() - 1
            });
            let tts = report.time_to_solution_s.filter(|_| report.converged);
            out[i].tts.insert(report.variant.clone(), tts);
            let fixed = match Variant::parse(&report.variant) {
                Ok(Variant::Async {
                    balancer: Some(b), ..
                }) => match b.pick {
                    Pick::One(named) if named.strategy != Strategy::PRESCRIBED => Some(named),
                    _ => None,
                },
                _ => None,
            };
            if let (Some(named), Some(t)) = (fixed, tts) {
                // Equal times go to the first label in order, whatever
                // order the records are in.
                let better = match &out[i].best {
                    Some((_, label)) => out[i].tts[label]
                        .is_none_or(|b| t < b || (t == b && report.variant < *label)),
                    None => true,
                };
                if better {
                    out[i].best = Some((named, report.variant.clone()));
                }
            }
        }
    }
    if out.is_empty() {
        return Err(LearnError::Empty(
            "the results hold no simulated sample (braid learn trains on braid sim's)".into(),
        ));
    }
    // In the instances' order, not the records': a results file written
    // several samples at a time holds them in the order they finished.
    let keys: Vec<String> = index.keys().cloned().collect();
    let mut slots: Vec<Option<Instance>> = out.into_iter().map(Some).collect();
    Ok(keys.iter().filter_map(|k| slots[index[k]].take()).collect())
}

/// The features a balancer call sees on `cfg` run with the balancer
/// `label` names, call after call (from the first that measured them): a
/// simulation in which a probe measures them at every call and `label`'s
/// strategy decides.
pub(crate) fn probe(cfg: &Config, label: &str) -> Result<Vec<[f64; FEATURES]>, LearnError> {
    let fail = |problem: String| LearnError::Probe {
        instance: cfg.workload.to_string(),
        problem,
    };
    let mut cfg = cfg.clone();
    cfg.apply_variant(label).map_err(|e| fail(e.to_string()))?;
    let mut plan = braid::Plan::simulated(&cfg).map_err(|e| fail(e.to_string()))?;
    let learner = Arc::new(Learner::new(None, &plan.problem));
    let Scheme::Async {
        balancer: Some(balancer),
    } = &mut plan.settings.scheme
    else {
        return Err(fail(format!("`{label}` has no balancer to probe")));
    };
    let Policies::One(policy) = &balancer.policies else {
        return Err(fail(format!("`{label}` is not one strategy")));
    };
    balancer.policies = Policies::Learned(vec![policy.clone()], learner.clone());
    braid::run(&plan).map_err(|e| fail(e.to_string()))?;
    let seen = learner.seen();
    if seen.is_empty() {
        return Err(fail("no balancer call measured its features".into()));
    }
    Ok(seen)
}

/// At most `n` of `calls`, evenly spaced, the first among them.
fn spaced<T: Copy>(calls: &[T], n: usize) -> Vec<T> {
    let step = calls.len().div_ceil(n.max(1)).max(1);
    calls.iter().step_by(step).copied().collect()
}

/// Training points per instance: its best strategy's calls, this many of
/// them evenly spaced over its run.
const POINTS_PER_INSTANCE: usize = 8;

/// What training gave: the model, and its accuracy.
#[derive(Debug)]
pub(crate) struct Trained {
    pub model: Model,
    pub instances: usize,
    /// Share of training instances it names the best for.
    pub training_accuracy: f64,
    /// The same, each left out of its own training, at `k` = 1, 3, 5, 7.
    pub leave_one_out: [(usize, f64); 4],
    /// What any accuracy must beat: the commonest best strategy of the
    /// instances, and the share always naming it gets right.
    pub baseline: (Named, f64),
}

/// The commonest of `labels` (the first of the commonest, in order of
/// first appearance) and its share; `None` for none.
fn commonest(labels: impl IntoIterator<Item = Named>) -> Option<(Named, f64)> {
    let mut counts: Vec<(Named, usize)> = Vec::new();
    let mut n = 0;
    for l in labels {
        n += 1;
        match counts.iter_mut().find(|(c, _)| *c == l) {
            Some((_, k)) => *k += 1,
            None => counts.push((l, 1)),
        }
    }
    let mut best: Option<(Named, usize)> = None;
    for (c, k) in counts {
        if best.is_none_or(|(_, b)| k > b) {
            best = Some((c, k));
        }
    }
    best.map(|(c, k)| (c, k as f64 / n as f64))
}

/// The 95% percentile-bootstrap interval of the mean of `values` (drawn
/// from a fixed seed, so that a run prints the same interval again);
/// `(x, x)` for one value.
fn bootstrap_mean(values: &[f64]) -> (f64, f64) {
    let mean = |ix: &[usize]| ix.iter().map(|&i| values[i]).sum::<f64>() / ix.len() as f64;
    crate::lab::bootstrap::interval(values.len(), mean).unwrap_or((f64::NAN, f64::NAN))
}

/// Trains on `instances` (those with a label), `k` neighbours voting;
/// `probed(done, of)` after each instance's probe.
pub(crate) fn train(
    instances: &[Instance],
    k: usize,
    mut probed: impl FnMut(usize, usize),
) -> Result<Trained, LearnError> {
    let of = instances.iter().filter(|i| i.best.is_some()).count();
    // Each instance's states under its best strategy, labelled with it;
    // the first of them is what any balancer's first call sees.
    let mut points: Vec<([f64; FEATURES], Named)> = Vec::new();
    let mut labelled: Vec<([f64; FEATURES], Named)> = Vec::new();
    // Which instance each point is of.
    let mut owner: Vec<usize> = Vec::new();
    for i in instances {
        let Some((named, label)) = &i.best else {
            continue;
        };
        let seen = probe(&i.config, label)?;
        probed(labelled.len() + 1, of);
        for x in spaced(&seen, POINTS_PER_INSTANCE) {
            points.push((x, *named));
            owner.push(labelled.len());
        }
        labelled.push((seen[0], *named));
    }
    if labelled.is_empty() {
        return Err(LearnError::Empty(
            "no instance has a fixed strategy that converged: nothing to label".into(),
        ));
    }
    // Whether an instance's first call is named right by a model of all
    // points (or of the other instances' points only).
    let accuracy = |k: usize, leave_out: bool| -> f64 {
        let right = (0..labelled.len())
            .filter(|&i| {
                let rest: Vec<_> = points
                    .iter()
                    .zip(&owner)
                    .filter(|&(_, &o)| !leave_out || o != i)
                    .map(|(p, _)| *p)
                    .collect();
                let Some(m) = Model::train(&rest, k) else {
                    return false;
                };
                m.classes[m.predict(&m.tree(), &labelled[i].0)] == labelled[i].1
            })
            .count();
        right as f64 / labelled.len() as f64
    };
    let model = Model::train(&points, k).expect("instances are there");
    let baseline = commonest(labelled.iter().map(|l| l.1)).expect("instances are there");
    Ok(Trained {
        baseline,
        training_accuracy: accuracy(k, false),
        leave_one_out: [1, 3, 5, 7].map(|k| (k, accuracy(k, true))),
        instances: labelled.len(),
        model,
    })
}

/// Writes `model` to `path` (whole or not at all).
pub(crate) fn write(model: &Model, path: &Path) -> Result<(), LearnError> {
    braid_noise::files::write_atomic(path, |w| {
        std::io::Write::write_all(w, model.to_text().as_bytes())
    })
    .map_err(|e| LearnError::Model {
        file: path.to_path_buf(),
        problem: format!("cannot write it: {e}"),
    })
}

/// How a model does on held-out instances.
#[derive(Debug)]
pub(crate) struct Evaluation {
    pub instances: usize,
    /// Share of labelled instances whose best it names.
    pub accuracy: f64,
    /// The commonest strategy of the model's training points, and the
    /// share of these instances that always naming it gets right.
    pub baseline: (Named, f64),
    /// Per balancer, best first: its mean regret over these instances.
    pub regret: Vec<Regret>,
}

/// One balancer's regret on held-out instances: its time to solution over
/// the instance's best, less 1.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Regret {
    /// The label without its interval, e.g. `greedy`.
    pub balancer: String,
    /// A whole label that ran it, e.g. `async(4)+greedy(0.001)`.
    pub label: String,
    /// Instances it ran and converged on, and those it did not converge on.
    pub converged: usize,
    pub failed: usize,
    /// Its mean regret over the converged ones, and that mean's 95%
    /// bootstrap interval over the instances.
    pub mean: f64,
    pub interval: (f64, f64),
}

/// `model` on `instances`; `probed(done, of)` after each instance's probe.
pub(crate) fn evaluate(
    model: &Model,
    instances: &[Instance],
    mut probed: impl FnMut(usize, usize),
) -> Result<Evaluation, LearnError> {
    let of = instances.iter().filter(|i| i.best.is_some()).count();
    let tree = model.tree();
    let (mut right, mut labelled) = (0, 0);
    let mut commonest_right = 0;
    let trained = commonest(model.points.iter().map(|p| model.classes[p.class]));
    let mut each: BTreeMap<String, (Vec<f64>, usize)> = BTreeMap::new();
    let mut labels: BTreeMap<String, String> = BTreeMap::new();
    for i in instances {
        let Some((named, best_label)) = &i.best else {
            continue;
        };
        labelled += 1;
        let x = probe(&i.config, best_label)?[0];
        probed(labelled, of);
        right += usize::from(model.classes[model.predict(&tree, &x)] == *named);
        commonest_right += usize::from(trained.is_some_and(|(c, _)| c == *named));
        let best = i.tts[best_label].expect("the best converged");
        for (label, tts) in &i.tts {
            labels.entry(short(label)).or_insert_with(|| label.clone());
            let e = each.entry(short(label)).or_default();
            match tts {
                Some(t) => e.0.push(t / best - 1.0),
                None => e.1 += 1,
            }
        }
    }
    if labelled == 0 {
        return Err(LearnError::Empty(
            "no instance has a fixed strategy that converged: nothing to compare with".into(),
        ));
    }
    let mut regret: Vec<Regret> = each
        .into_iter()
        .map(|(balancer, (regrets, failed))| Regret {
            label: labels[&balancer].clone(),
            balancer,
            converged: regrets.len(),
            failed,
            mean: regrets.iter().sum::<f64>() / regrets.len().max(1) as f64,
            interval: bootstrap_mean(&regrets),
        })
        .collect();
    regret.sort_by(|a, b| a.mean.total_cmp(&b.mean));
    let baseline = trained.expect("a model has points").0;
    Ok(Evaluation {
        instances: labelled,
        accuracy: right as f64 / labelled as f64,
        baseline: (baseline, commonest_right as f64 / labelled as f64),
        regret,
    })
}

/// A label without its interval: `async(4)+greedy(0.001)` -> `greedy`,
/// `async(4)` -> `async(4)` (plain).
fn short(label: &str) -> String {
    match label.split_once('+') {
        Some((_, b)) => b.split('(').next().unwrap_or(b).to_string(),
        None => label.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_commonest_label_and_its_share_are_the_baseline() {
        let n = |s: &str| s.parse::<Named>().unwrap();
        let labels = ["greedy", "split", "greedy", "refine"].map(n);
        assert_eq!(commonest(labels), Some((n("greedy"), 0.5)));
        // A tie goes to the first seen.
        assert_eq!(
            commonest(["split", "greedy"].map(n)),
            Some((n("split"), 0.5))
        );
        assert_eq!(commonest([]), None);
    }

    #[test]
    fn a_bootstrap_interval_holds_the_mean_and_widens_with_the_scatter() {
        let tight = [0.10, 0.11, 0.09, 0.10, 0.10, 0.11, 0.09, 0.10];
        let wide = [0.0, 0.2, 0.0, 0.2, 0.0, 0.2, 0.0, 0.2];
        let (a, b) = bootstrap_mean(&tight);
        let (c, d) = bootstrap_mean(&wide);
        assert!(a <= 0.10 && 0.10 <= b && c <= 0.10 && 0.10 <= d);
        assert!(b - a < 0.02 && d - c > 0.1, "{a} {b} {c} {d}");
        // The same values, the same interval; one value, a point.
        assert_eq!(bootstrap_mean(&wide), (c, d));
        assert_eq!(bootstrap_mean(&[0.3]), (0.3, 0.3));
    }

    #[test]
    fn a_label_is_shortened_to_its_balancer() {
        assert_eq!(short("async(4)+greedy(0.001)"), "greedy");
        assert_eq!(short("async(4)+hybrid(0.001,5)"), "hybrid");
        assert_eq!(short("async(4)"), "async(4)");
    }

    #[test]
    fn a_probe_measures_the_features_that_a_strategys_calls_see() {
        let mut cfg = Config::default();
        cfg.apply_overrides(&[
            "threads=4",
            "domain_size=32",
            "max_iterations=3000",
            "workload=hotspot(4,0.25,0.25,0.2)",
        ])
        .unwrap();
        let hot = probe(&cfg, "async(4)+greedy(0.0001)").unwrap();
        let mut flat = Config::default();
        flat.apply_overrides(&["threads=4", "domain_size=32", "max_iterations=3000"])
            .unwrap();
        let even = probe(&flat, "async(4)+greedy(0.0001)").unwrap();
        // A hotspot on one thread's domain: imbalance and overloaded
        // threads at first, which greedy then evens out.
        assert!(hot.len() > 10, "{} calls", hot.len());
        assert!(hot[0][2] > 1.2 && hot[0][1] > 0.0, "{:?}", hot[0]);
        assert!(hot[hot.len() - 1][2] < hot[0][2], "{:?}", hot.last());
        assert!(even[0][2] < 1.01 && even[0][1] == 0.0, "{:?}", even[0]);
        // Deterministic: the same instance, the same features.
        assert_eq!(probe(&cfg, "async(4)+greedy(0.0001)").unwrap(), hot);
        // A label without a balancer has nothing to probe.
        assert!(probe(&cfg, "async(4)").is_err());
    }

    /// A results file written two samples at a time holds its records in
    /// the order they finished: the instances, their order and their best
    /// strategy (two tied at one time) are the same either way.
    #[test]
    fn instances_and_their_best_do_not_depend_on_the_records_order() {
        use crate::lab::experiment::results::Record;
        use crate::lab::experiment::suite::{Figure, Sample};
        use braid::EngineKind;
        let record = |workload: &str, variant: &str, tts: f64| -> Record {
            let mut cfg = Config::default();
            cfg.apply_variant(variant).unwrap();
            cfg.apply_overrides(&[
                "threads=4",
                "domain_size=16",
                "max_iterations=5",
                &format!("workload={workload}"),
            ])
            .unwrap();
            let plan = braid::Plan::simulated(&cfg).unwrap();
            let (mut report, _) = braid::run(&plan).unwrap();
            report.time_to_solution_s = Some(tts);
            report.converged = true;
            let sample = Sample {
                variant: variant.into(),
                ..Sample::default()
            };
            Record::for_tests(Figure::Workloads, EngineKind::Sim, sample, Some(report))
        };
        let all = [
            record("hotspot(2, 0.5, 0.5, 0.1)", "async(4)+split(0.001)", 1.0),
            record("hotspot(2, 0.5, 0.5, 0.1)", "async(4)+greedy(0.001)", 1.0),
            record("random(1, 2)", "async(4)+steal(0.001)", 2.0),
            record("random(1, 2)", "async(4)+refine(0.001)", 1.5),
        ];
        let dir = braid_testkit::scratch_dir("learn-order");
        let write = |name: &str, order: &[usize]| -> PathBuf {
            let path = dir.join(name);
            let text: String = order
                .iter()
                .map(|&i| serde_json::to_string(&all[i]).unwrap() + "\n")
                .collect();
            std::fs::write(&path, text).unwrap();
            path
        };
        let seen = |path: PathBuf| -> Vec<(String, String)> {
            instances(&[path])
                .unwrap()
                .iter()
                .map(|i| (i.config.workload.to_string(), i.best.clone().unwrap().1))
                .collect()
        };
        let forward = seen(write("forward.jsonl", &[0, 1, 2, 3]));
        let backward = seen(write("backward.jsonl", &[3, 2, 1, 0]));
        assert_eq!(forward, backward);
        assert!(
            forward
                .iter()
                .any(|(_, best)| best == "async(4)+greedy(0.001)")
        );
        assert!(
            forward
                .iter()
                .any(|(_, best)| best == "async(4)+refine(0.001)")
        );
    }

    #[test]
    fn spacing_keeps_the_first_and_at_most_n() {
        assert_eq!(spaced(&[1, 2, 3, 4, 5, 6, 7], 3), vec![1, 4, 7]);
        assert_eq!(spaced(&[1, 2], 8), vec![1, 2]);
    }
}
