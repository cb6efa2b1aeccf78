//! A learned strategy chooser, after AdaptiveLB
//! (adaptive-lb-machine-learning.txt): seven features of the run measured
//! at a balancer call, and a k-nearest-neighbours classifier, trained
//! offline on simulated instances (`braid learn`), that names the strategy
//! for the features it is given (`balancer = learned:MODEL.json`).
//!
//! # The features, in braid's terms
//!
//! A thread's **load** is the time one sweep of its subdomains takes it:
//! the sum of their object loads (seconds per update at full speed) over
//! its speed (the share of a core it got). AdaptiveLB's processing element
//! is a thread; its load is what a BSP application would wait for.
//!
//! | # | AdaptiveLB | braid |
//! |---|---|---|
//! | 1 | average load of the PEs | mean thread load, seconds |
//! | 2 | percentage of PEs overloaded | share of threads whose load is above the mean by more than 5% (vt's tolerance) |
//! | 3 | imbalance | the greatest thread load over the mean |
//! | 4 | average idle time | mean share of a core that a thread lost (1 - speed): in async a thread never waits for another, so its idle time is what noise took |
//! | 5 | average object load | mean subdomain load, seconds per update |
//! | 6 | communication to computation ratio | bytes of halo a sweep of every subdomain sends over the seconds of its work |
//! | 7 | share of messages to other PEs | share of halo edges whose neighbour another thread owns |
//!
//! Features are measured only once rates and loads are (from the second
//! call). The classifier standardises each feature by its training mean
//! and spread, and takes the majority of the `k` nearest training points
//! (ties: the class with the nearer points; then the first class).

use std::path::Path;

use kiddo::KdTree;
use kiddo::SquaredEuclidean;
use serde::{Deserialize, Serialize};

use super::{Named, Snapshot};
use crate::problem::{Neighbour, Problem, Side};

/// How many features.
pub const FEATURES: usize = 7;

/// Their names, in order (the model file lists them).
pub(crate) const FEATURE_NAMES: [&str; FEATURES] = [
    "mean_thread_load_s",
    "overloaded_share",
    "imbalance",
    "mean_idle_share",
    "mean_object_load_s",
    "bytes_per_work_s",
    "off_thread_edge_share",
];

/// The least spread of each feature, in its own units: 0.01 for the
/// shares and the imbalance, none for times and bytes (1% of their mean
/// applies).
const SPREAD_FLOOR: [f64; FEATURES] = [0.0, 0.01, 0.01, 0.01, 0.0, 0.0, 0.01];

/// Each subdomain's halo edges: the neighbour and the bytes one update
/// sends it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Edges(Vec<Vec<(usize, f64)>>);

impl Edges {
    /// The halo edges of `problem`'s subdomains.
    pub(crate) fn of(problem: &Problem) -> Edges {
        Edges(
            problem
                .subs
                .iter()
                .map(|g| {
                    Side::ALL
                        .iter()
                        .filter_map(|&side| match g.neighbour(side) {
                            Neighbour::Sub(o) => Some((o, 8.0 * g.edge_cells(side) as f64)),
                            Neighbour::Boundary => None,
                        })
                        .collect()
                })
                .collect(),
        )
    }
}

/// The seven features of `snap`, or `None` until its rates and loads are
/// measured.
pub(crate) fn features(snap: &Snapshot<'_>, edges: &Edges) -> Option<[f64; FEATURES]> {
    let (threads, n) = (snap.threads(), snap.owners.len());
    if snap.loads.len() != n || snap.speeds.len() != threads || n == 0 || edges.0.len() != n {
        return None;
    }
    let mut own = vec![0.0; threads];
    for (s, &t) in snap.owners.iter().enumerate() {
        own[t] += snap.loads[s];
    }
    let load: Vec<f64> = own
        .iter()
        .zip(snap.speeds)
        .map(|(&w, &speed)| w / speed.max(1e-6))
        .collect();
    let mean = load.iter().sum::<f64>() / threads as f64;
    if mean.is_nan() || mean <= 0.0 {
        return None;
    }
    let overloaded = load.iter().filter(|&&l| l > 1.05 * mean).count() as f64 / threads as f64;
    let imbalance = load.iter().copied().fold(0.0, f64::max) / mean;
    let idle = snap.speeds.iter().map(|s| 1.0 - s.min(1.0)).sum::<f64>() / threads as f64;
    let work: f64 = snap.loads.iter().sum();
    let (mut bytes, mut messages, mut off) = (0.0, 0usize, 0usize);
    for (s, list) in edges.0.iter().enumerate() {
        for &(o, b) in list {
            bytes += b;
            messages += 1;
            off += usize::from(snap.owners[o] != snap.owners[s]);
        }
    }
    Some([
        mean,
        overloaded,
        imbalance,
        idle,
        work / n as f64,
        bytes / work.max(1e-12),
        off as f64 / messages.max(1) as f64,
    ])
}

/// A trained chooser: the training points, standardised, and their labels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    /// What this file is.
    pub kind: String,
    /// The neighbours that vote.
    pub k: usize,
    /// The features' names, in order.
    pub features: Vec<String>,
    /// Each feature's training mean and spread (points are stored
    /// standardised: `(x - mean) / scale`).
    pub mean: Vec<f64>,
    /// See `mean`.
    pub scale: Vec<f64>,
    /// The strategies it names, by label name.
    pub classes: Vec<Named>,
    /// The training points: standardised features and a class index.
    pub points: Vec<Point>,
    /// The braid that trained it (a model written before builds were
    /// recorded reads as unknown).
    #[serde(default)]
    pub build: crate::build::Build,
}

/// One training instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Its standardised features.
    pub x: [f64; FEATURES],
    /// The index of its best strategy in `classes`.
    pub class: usize,
}

/// Why a model cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// Not a readable file.
    #[error("cannot read it: {0}")]
    Read(std::io::Error),
    /// Not a model.
    #[error("not a braid model: {0}")]
    Content(String),
}

const KIND: &str = "braid-knn";

/// The most neighbours a model's vote may take (`braid learn --k` allows
/// 1 to 99): a file asking for more was not written by braid.
pub const MAX_K: usize = 99;

impl Model {
    /// Trains on `instances` (features, best strategy), with `k`
    /// neighbours voting; `None` without instances.
    pub fn train(instances: &[([f64; FEATURES], Named)], k: usize) -> Option<Model> {
        if instances.is_empty() {
            return None;
        }
        let count = instances.len() as f64;
        let mut mean = vec![0.0; FEATURES];
        let mut scale = vec![0.0; FEATURES];
        for (x, _) in instances {
            for f in 0..FEATURES {
                mean[f] += x[f] / count;
            }
        }
        for (x, _) in instances {
            for f in 0..FEATURES {
                scale[f] += (x[f] - mean[f]).powi(2) / count;
            }
        }
        // A spread is at least 1% of the mean's size, and a share's or a
        // ratio's at least 0.01: a feature that hardly varied in training
        // (a quiet machine's idle share, 1e-10 of jitter) would otherwise
        // swamp every distance once it does vary.
        for (f, s) in scale.iter_mut().enumerate() {
            *s = s.sqrt().max(0.01 * mean[f].abs()).max(SPREAD_FLOOR[f]);
            if *s == 0.0 {
                *s = 1.0;
            }
        }
        let mut classes: Vec<Named> = Vec::new();
        for (_, named) in instances {
            if !classes.contains(named) {
                classes.push(*named);
            }
        }
        let mut model = Model {
            kind: KIND.into(),
            k: k.max(1),
            features: FEATURE_NAMES.iter().map(|s| s.to_string()).collect(),
            mean,
            scale,
            classes,
            points: Vec::new(),
            build: crate::build::Build::this(),
        };
        model.points = instances
            .iter()
            .map(|(x, named)| Point {
                x: model.standardise(x),
                class: model.classes.iter().position(|c| c == named).unwrap_or(0),
            })
            .collect();
        Some(model)
    }

    fn standardise(&self, x: &[f64; FEATURES]) -> [f64; FEATURES] {
        std::array::from_fn(|f| (x[f] - self.mean[f]) / self.scale[f])
    }

    /// The model as `braid learn` writes it: JSON with one field per line
    /// and one point per line.
    pub fn to_text(&self) -> String {
        let mut out = String::from("{\n");
        out += &format!("  \"kind\": {},\n", json(&self.kind));
        out += &format!("  \"k\": {},\n", json(&self.k));
        out += &format!("  \"features\": {},\n", json(&self.features));
        out += &format!("  \"mean\": {},\n", json(&self.mean));
        out += &format!("  \"scale\": {},\n", json(&self.scale));
        out += &format!("  \"classes\": {},\n", json(&self.classes));
        out += &format!("  \"build\": {},\n", json(&self.build));
        out += "  \"points\": [\n";
        for (i, p) in self.points.iter().enumerate() {
            let comma = if i + 1 < self.points.len() { "," } else { "" };
            out += &format!("    {}{comma}\n", json(p));
        }
        out += "  ]\n}\n";
        out
    }

    /// Reads a model written by `braid learn`, checking its shape.
    pub fn read(path: &Path) -> Result<Model, ModelError> {
        let text = braid_noise::files::read_text(path, 64 << 20).map_err(ModelError::Read)?;
        let model: Model =
            serde_json::from_str(&text).map_err(|e| ModelError::Content(e.to_string()))?;
        let bad = |what: String| Err(ModelError::Content(what));
        if model.kind != KIND {
            return bad(format!("kind is `{}`, not `{KIND}`", model.kind));
        }
        if model.features != FEATURE_NAMES {
            return bad(format!(
                "its features are {:?}, not braid's {FEATURE_NAMES:?}",
                model.features
            ));
        }
        if model.mean.len() != FEATURES
            || model.scale.len() != FEATURES
            || model
                .scale
                .iter()
                .any(|s| s.is_nan() || *s <= 0.0 || s.is_infinite())
            || model.mean.iter().any(|m| !m.is_finite())
        {
            return bad("mean and scale need 7 finite numbers each, scales above 0".into());
        }
        if model.points.is_empty() || model.classes.is_empty() || model.k == 0 {
            return bad("no points, no classes, or k = 0".into());
        }
        if model.k > MAX_K {
            return bad(format!(
                "k = {} neighbours vote; braid learn writes 1 to {MAX_K}",
                model.k
            ));
        }
        if let Some(p) = model
            .points
            .iter()
            .position(|p| p.class >= model.classes.len())
        {
            return bad(format!(
                "point {p} names class {}, of {}",
                model.points[p].class,
                model.classes.len()
            ));
        }
        if model
            .points
            .iter()
            .any(|p| p.x.iter().any(|v| !v.is_finite()))
        {
            return bad("a point has a feature that is not a finite number".into());
        }
        Ok(model)
    }

    /// A k-d tree of the points (what [`Model::predict`] searches).
    pub fn tree(&self) -> Neighbours {
        Neighbours::of(&self.points)
    }

    /// The class the `k` nearest points to `x` elect (majority; ties: the
    /// class whose voters are nearer in sum; then the first class).
    pub fn predict(&self, near: &Neighbours, x: &[f64; FEATURES]) -> usize {
        let q = self.standardise(x);
        let mut votes = vec![(0usize, 0.0f64); self.classes.len()];
        for (point, distance) in near.nearest(&q, self.k.min(self.points.len())) {
            let c = self.points[point].class;
            votes[c].0 += 1;
            votes[c].1 += distance;
        }
        (0..self.classes.len())
            .max_by(|&a, &b| {
                let (va, vb) = (votes[a], votes[b]);
                va.0.cmp(&vb.0).then(vb.1.total_cmp(&va.1)).then(b.cmp(&a))
            })
            .unwrap_or(0)
    }
}

/// The points' positions in a k-d tree, each position once with the points
/// at it: the tree (kiddo's) refuses more than a leaf's 32 items at one
/// position, and a model may hold many identical points (the same instance
/// trained twice, or a feature that never varies).
#[derive(Debug)]
pub struct Neighbours {
    tree: KdTree<f64, FEATURES>,
    /// The points at each position, by the position's item in the tree.
    at: Vec<Vec<usize>>,
}

impl Neighbours {
    fn of(points: &[Point]) -> Neighbours {
        let mut index: std::collections::HashMap<[u64; FEATURES], usize> =
            std::collections::HashMap::new();
        let mut tree: KdTree<f64, FEATURES> = KdTree::with_capacity(points.len().max(1));
        let mut at: Vec<Vec<usize>> = Vec::new();
        for (i, p) in points.iter().enumerate() {
            // -0.0 and 0.0 are one position.
            let key = p.x.map(|v| (v + 0.0).to_bits());
            let item = *index.entry(key).or_insert_with(|| {
                tree.add(&p.x, at.len() as u64);
                at.push(Vec::new());
                at.len() - 1
            });
            at[item].push(i);
        }
        Neighbours { tree, at }
    }

    /// The `k` nearest points to `q` with their distances, nearest first:
    /// they lie at the `k` nearest positions at most.
    fn nearest(&self, q: &[f64; FEATURES], k: usize) -> impl Iterator<Item = (usize, f64)> + '_ {
        let mut positions = self
            .tree
            .nearest_n::<SquaredEuclidean>(q, k.min(self.at.len()));
        positions.sort_by(|a, b| a.distance.total_cmp(&b.distance));
        positions
            .into_iter()
            .flat_map(move |n| {
                let d = n.distance.sqrt();
                self.at[n.item as usize].iter().map(move |&p| (p, d))
            })
            .take(k)
    }
}

/// What a learned balancer consults at each call: the model and the
/// run's halo edges. A probe has no model: it keeps the features of every
/// call that measured them instead.
#[derive(Debug)]
pub struct Learner {
    model: Option<(Model, Neighbours)>,
    edges: Edges,
    seen: std::sync::Mutex<Vec<[f64; FEATURES]>>,
}

impl Learner {
    /// A chooser by `model` over `problem`'s subdomains (`None`: a probe
    /// that only measures).
    pub fn new(model: Option<Model>, problem: &Problem) -> Learner {
        Learner {
            model: model.map(|m| {
                let tree = m.tree();
                (m, tree)
            }),
            edges: Edges::of(problem),
            seen: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// The class the model names for `snap`'s features (an index into its
    /// classes), or `None` before they are measured or without a model.
    pub fn pick(&self, snap: &Snapshot<'_>) -> Option<usize> {
        let x = features(snap, &self.edges)?;
        let Some((model, tree)) = self.model.as_ref() else {
            self.seen.lock().unwrap_or_else(|e| e.into_inner()).push(x);
            return None;
        };
        Some(model.predict(tree, &x))
    }

    /// A probe's features, call after call.
    pub fn seen(&self) -> Vec<[f64; FEATURES]> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// A value as compact JSON, for [`Model::to_text`].
fn json(v: &impl Serialize) -> String {
    serde_json::to_string(v).expect("plain data serialises")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Scope;
    use crate::problem::Problem;

    fn named(s: &str) -> Named {
        s.parse().unwrap()
    }

    #[test]
    fn the_features_follow_their_definitions_on_a_hand_made_snapshot() {
        // Two threads of two subdomains each (a 2 x 2 grid of subdomains).
        let p = Problem::new(16, 2, 2).unwrap();
        let edges = Edges::of(&p);
        let owners: Vec<usize> = p.subs.iter().map(|g| g.domain).collect();
        let loads = [1e-6, 1e-6, 3e-6, 3e-6];
        let speeds = [1.0, 0.5];
        let mut snap = Snapshot::of(&[5, 5, 5, 5], &owners, &[0, 0]);
        snap.loads = &loads;
        snap.speeds = &speeds;
        let thread = |t: usize| {
            (0..4)
                .filter(|&s| owners[s] == t)
                .map(|s| loads[s])
                .sum::<f64>()
                / speeds[t]
        };
        let (a, b) = (thread(0), thread(1));
        let mean = (a + b) / 2.0;
        let f = features(&snap, &edges).unwrap();
        assert_eq!(f[0], mean);
        assert_eq!(f[1], 0.5);
        assert_eq!(f[2], a.max(b) / mean);
        assert_eq!(f[3], 0.25);
        assert_eq!(f[4], 2e-6);
        // The four subdomains lie in a row, each 8 wide and 16 high: three
        // inner boundaries, six edges of 16 cells of 8 bytes, over 8 us of
        // work; the middle boundary is between the threads: 2 edges of 6.
        assert_eq!(p.sub_grid(), (1, 4));
        assert!(
            (f[5] - 6.0 * 16.0 * 8.0 / 8e-6).abs() < 1e-6 * f[5],
            "{}",
            f[5]
        );
        assert!((f[6] - 2.0 / 6.0).abs() < 1e-12, "{}", f[6]);
        // Nothing measured yet: no features.
        assert_eq!(
            features(&Snapshot::of(&[5; 4], &owners, &[0, 0]), &edges),
            None
        );
    }

    #[test]
    fn the_nearest_points_elect_the_class_and_a_model_survives_its_file() {
        let at = |x: f64| [x, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0];
        let train = vec![
            (at(0.0), named("steal")),
            (at(0.1), named("steal")),
            (at(1.0), named("greedy")),
            (at(1.1), named("greedy")),
            (at(1.2), named("greedy")),
        ];
        let m = Model::train(&train, 3).unwrap();
        let tree = m.tree();
        assert_eq!(m.classes[m.predict(&tree, &at(0.05))], named("steal"));
        assert_eq!(m.classes[m.predict(&tree, &at(0.9))], named("greedy"));
        // On its own training points, with k = 1, it is always right.
        let one = Model::train(&train, 1).unwrap();
        let tree = one.tree();
        for (x, label) in &train {
            assert_eq!(one.classes[one.predict(&tree, x)], *label);
        }
        let dir = braid_testkit::scratch_dir("learned-model");
        let file = dir.join("m.json");
        std::fs::write(&file, m.to_text()).unwrap();
        assert_eq!(Model::read(&file).unwrap(), m);
        assert_eq!(m.to_text().lines().count(), 11 + m.points.len());
        let mut broken = m.clone();
        broken.points[0].class = 9;
        std::fs::write(&file, serde_json::to_string(&broken).unwrap()).unwrap();
        assert!(
            Model::read(&file)
                .unwrap_err()
                .to_string()
                .contains("point 0")
        );
        let mut greedy_k = m.clone();
        greedy_k.k = 1_000_000_000_000;
        std::fs::write(&file, serde_json::to_string(&greedy_k).unwrap()).unwrap();
        let e = Model::read(&file).unwrap_err().to_string();
        assert!(e.contains("k = 1000000000000"), "{e}");
        std::fs::write(&file, "{}").unwrap();
        assert!(Model::read(&file).is_err());
        assert_eq!(named("joint").scope, Scope::Joint);
    }

    #[test]
    fn a_model_of_many_identical_points_predicts_as_the_nearest_k_vote() {
        // 40 identical points (more than a k-d tree leaf holds at one
        // position: kiddo panicked "Cannot insert another item"), 25 steal
        // and 15 greedy, and 3 greedy points a little apart.
        let at = |x: f64| [x, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0];
        let mut train: Vec<_> = (0..40)
            .map(|i| (at(0.5), named(if i < 25 { "steal" } else { "greedy" })))
            .collect();
        train.extend((0..3).map(|i| (at(2.0 + i as f64), named("greedy"))));
        let m = Model::train(&train, 7).unwrap();
        let tree = m.tree();
        // The 7 nearest to 0.5 are 7 of the 40 at 0.5, taken in order:
        // steal's 25 come first, so steal wins; near 3.0 the three greedy
        // points and four at 0.5 (steal): steal 4 to 3.
        assert_eq!(m.classes[m.predict(&tree, &at(0.5))], named("steal"));
        assert_eq!(m.classes[m.predict(&tree, &at(3.0))], named("steal"));
        let near: Vec<_> = tree.nearest(&m.standardise(&at(3.0)), 7).collect();
        assert_eq!(near.len(), 7);
        assert!(near.windows(2).all(|w| w[0].1 <= w[1].1), "nearest first");
        // k beyond the points: every point, once.
        assert_eq!(tree.nearest(&m.standardise(&at(0.0)), 100).count(), 43);
    }
}
