//! A suite's records rerun today against its committed ones: the
//! simulator's value for value (wall time and provenance aside: the
//! simulator is deterministic, so any other difference is a result that
//! moved), a real machine's per setting against the machine's own 95%
//! interval (its runs scatter; they are compared, not matched).

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use crate::lab::bootstrap;
use crate::lab::experiment::results::{Record, Status};
use crate::lab::experiment::suite::Sample;

/// One value that moved.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Change {
    /// Its place in the report, `time_to_solution_s`,
    /// `subdomain_updates[17]`, `config.sim_row_ns`.
    pub field: String,
    pub old: String,
    pub new: String,
    /// `new / old - 1` for numbers (none when `old` is 0 or either is not
    /// a number).
    pub relative: Option<f64>,
}

impl Change {
    /// The field without its indices (`subdomain_updates[]`): what a
    /// summary counts.
    pub(crate) fn kind(&self) -> String {
        let mut out = String::new();
        let mut skip = false;
        for c in self.field.chars() {
            match c {
                '[' => {
                    skip = true;
                    out.push('[');
                }
                ']' => {
                    skip = false;
                    out.push(']');
                }
                _ if skip => {}
                c => out.push(c),
            }
        }
        out
    }
}

/// A sample whose report moved.
#[derive(Debug, Clone)]
pub(crate) struct MovedSample {
    pub key: String,
    /// Values that moved, all of them counted.
    pub count: usize,
    /// The ones a reader needs first: those that moved most, by relative
    /// change, then any that are not numbers.
    pub first: Vec<Change>,
}

/// The measures the figures and tables read, which a summary names first.
const HEADLINE: [&str; 5] = [
    "time_to_solution_s",
    "iteration_rate",
    "spread",
    "lb.moves",
    "elapsed_s",
];

/// Where a kind of value stands in [`HEADLINE`] (after it: the rest).
fn rank(kind: &str) -> usize {
    HEADLINE
        .iter()
        .position(|h| *h == kind)
        .unwrap_or(HEADLINE.len())
}

/// How many changes a moved sample keeps to show.
const SHOWN: usize = 8;

/// What an exact comparison found.
#[derive(Debug, Clone, Default)]
pub(crate) struct Exact {
    /// Samples compared (in both sets, finished in both).
    pub compared: usize,
    pub moved: Vec<MovedSample>,
    /// Keys in the committed records only, or in the rerun only.
    pub missing: Vec<String>,
    pub extra: Vec<String>,
    /// Keys that finished in one set and failed in the other.
    pub status: Vec<String>,
}

impl Exact {
    /// Whether every sample reproduced value for value.
    pub(crate) fn reproduced(&self) -> bool {
        self.moved.is_empty()
            && self.missing.is_empty()
            && self.extra.is_empty()
            && self.status.is_empty()
    }

    /// Per kind of value that moved: in how many samples, and the largest
    /// relative change with the sample it is in; the measures the figures
    /// read first.
    pub(crate) fn by_kind(&self) -> Vec<KindMoved> {
        let mut kinds: BTreeMap<String, (usize, Option<(f64, String)>)> = BTreeMap::new();
        for m in &self.moved {
            let mut seen: Vec<String> = Vec::new();
            for c in &m.first {
                let kind = c.kind();
                let entry = kinds.entry(kind.clone()).or_default();
                if !seen.contains(&kind) {
                    entry.0 += 1;
                    seen.push(kind);
                }
                if let Some(r) = c.relative
                    && entry.1.as_ref().is_none_or(|(b, _)| r.abs() > b.abs())
                {
                    entry.1 = Some((r, m.key.clone()));
                }
            }
        }
        let mut out: Vec<KindMoved> = kinds
            .into_iter()
            .map(|(kind, (samples, largest))| KindMoved {
                kind,
                samples,
                largest,
            })
            .collect();
        // The measures a figure reads first, in [`HEADLINE`]'s order; then
        // other numbers, the largest change first; then what is not a
        // number (a list that grew, a null that is now a value), the most
        // samples first.
        out.sort_by(|a, b| {
            let size = |x: &KindMoved| x.largest.as_ref().map_or(-1.0, |r| r.0.abs());
            rank(&a.kind)
                .cmp(&rank(&b.kind))
                .then(size(b).total_cmp(&size(a)))
                .then(b.samples.cmp(&a.samples))
        });
        out
    }
}

/// One kind of value that moved (`subdomain_updates[]`): in how many
/// samples, and its largest relative change with the sample it is in.
#[derive(Debug, Clone)]
pub(crate) struct KindMoved {
    pub kind: String,
    pub samples: usize,
    pub largest: Option<(f64, String)>,
}

/// Compares two runs of one simulated suite sample by sample: every value
/// of every report, its configuration key by key (so that a key an older
/// braid did not write reads as its default, as the report reader takes
/// it), the build and the provenance aside.
pub(crate) fn exact(committed: &[Record], rerun: &[Record]) -> Exact {
    let by_key = |rs: &[Record]| -> HashMap<String, Record> {
        rs.iter().map(|r| (r.key.clone(), r.clone())).collect()
    };
    let (old, new) = (by_key(committed), by_key(rerun));
    let mut out = Exact::default();
    for r in committed {
        if !new.contains_key(&r.key) {
            out.missing.push(r.key.clone());
        }
    }
    for r in rerun {
        let Some(o) = old.get(&r.key) else {
            out.extra.push(r.key.clone());
            continue;
        };
        match (&o.report, &r.report, o.status, r.status) {
            (Some(a), Some(b), Status::Ok, Status::Ok) => {
                out.compared += 1;
                let changes = differences(a, b);
                if !changes.is_empty() {
                    out.moved.push(MovedSample {
                        key: r.key.clone(),
                        count: changes.len(),
                        first: first_shown(changes),
                    });
                }
            }
            (_, _, Status::Failed, Status::Failed) => out.compared += 1,
            _ => out.status.push(r.key.clone()),
        }
    }
    out
}

/// Every value in which two reports differ, the build aside.
pub(crate) fn differences(a: &braid::Report, b: &braid::Report) -> Vec<Change> {
    let value = |r: &braid::Report| -> Value {
        let mut v = serde_json::to_value(r).expect("a report serializes");
        if let Value::Object(m) = &mut v {
            m.remove("build");
            m.remove("config");
        }
        v
    };
    let mut out = Vec::new();
    // Configurations key by key, each read as the report reader reads it.
    let config = |r: &braid::Report| serde_json::to_value(&r.config).expect("a config serializes");
    diff("config", &config(a), &config(b), &mut out);
    diff("", &value(a), &value(b), &mut out);
    out
}

fn diff(path: &str, a: &Value, b: &Value, out: &mut Vec<Change>) {
    let at = |k: &str| match path.is_empty() {
        true => k.to_string(),
        false => format!("{path}.{k}"),
    };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                diff(&at(k), v, y.get(k).unwrap_or(&Value::Null), out);
            }
            for (k, v) in y.iter().filter(|(k, _)| !x.contains_key(*k)) {
                diff(&at(k), &Value::Null, v, out);
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                diff(&format!("{path}[{i}]"), p, q, out);
            }
        }
        (Value::Array(x), Value::Array(y)) => out.push(Change {
            field: path.to_string(),
            old: format!("{} items", x.len()),
            new: format!("{} items", y.len()),
            relative: None,
        }),
        _ if a == b => {}
        _ => out.push(Change {
            field: path.to_string(),
            old: short(a),
            new: short(b),
            relative: match (a.as_f64(), b.as_f64()) {
                (Some(x), Some(y)) if x != 0.0 => Some(y / x - 1.0),
                _ => None,
            },
        }),
    }
}

/// A value as a reader sees it in a line: a long one cut short.
fn short(v: &Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(40) {
        Some((i, _)) => format!("{}...", &text[..i]),
        None => text,
    }
}

/// The changes shown of a sample: the largest relative ones, then those
/// that are not numbers, [`SHOWN`] in all (but every kind of value at least
/// once, so that a summary counts each kind that moved).
fn first_shown(mut changes: Vec<Change>) -> Vec<Change> {
    changes.sort_by(|a, b| {
        let size = |c: &Change| c.relative.map_or(-1.0, f64::abs);
        rank(&a.kind())
            .cmp(&rank(&b.kind()))
            .then(size(b).total_cmp(&size(a)))
    });
    let mut out: Vec<Change> = Vec::new();
    let mut kinds: Vec<String> = Vec::new();
    for c in changes {
        let kind = c.kind();
        let new_kind = !kinds.contains(&kind);
        if out.len() < SHOWN || new_kind {
            if new_kind {
                kinds.push(kind);
            }
            out.push(c);
        }
    }
    out
}

/// A real machine's setting, rerun: its median and 95% interval then and
/// now, for one measure.
#[derive(Debug, Clone)]
pub(crate) struct Agreement {
    /// The sample's key without its repetition.
    pub setting: String,
    pub measure: &'static str,
    pub committed: Interval,
    pub rerun: Interval,
}

/// A median and its 95% bootstrap interval over some runs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Interval {
    pub median: f64,
    pub low: f64,
    pub high: f64,
    pub runs: usize,
}

impl Interval {
    fn of(values: &[f64]) -> Option<Interval> {
        let (low, high) = bootstrap::interval(values.len(), |ix| {
            bootstrap::median(ix.iter().map(|&i| values[i]))
        })?;
        Some(Interval {
            median: bootstrap::median(values.iter().copied()),
            low,
            high,
            runs: values.len(),
        })
    }
}

impl Agreement {
    /// Whether the two intervals overlap: the rerun cannot be told from
    /// the committed runs.
    pub(crate) fn agrees(&self) -> bool {
        self.rerun.low <= self.committed.high && self.committed.low <= self.rerun.high
    }
}

/// A measure read from a report.
type Measure = fn(&braid::Report) -> Option<f64>;

/// The measures a real run's figures read.
const MEASURES: [(&str, Measure); 3] = [
    ("time to solution (s)", |r| r.time_to_solution_s),
    ("iteration rate", |r| Some(r.iteration_rate)),
    ("spread", |r| Some(r.spread as f64)),
];

/// Compares two runs of one real-machine suite setting by setting: each
/// measure's median and 95% interval over the repetitions then and now.
pub(crate) fn within_intervals(committed: &[Record], rerun: &[Record]) -> Vec<Agreement> {
    let setting = |s: &Sample| {
        Sample {
            repetition: 0,
            ..s.clone()
        }
        .key()
    };
    let mut settings: Vec<String> = Vec::new();
    for r in committed {
        let s = setting(&r.sample);
        if !settings.contains(&s) {
            settings.push(s);
        }
    }
    let mut out = Vec::new();
    for s in settings {
        let of = |rs: &[Record], measure: Measure| -> Vec<f64> {
            rs.iter()
                .filter(|r| setting(&r.sample) == s)
                .filter_map(|r| measure(r.report.as_ref()?))
                .filter(|v| v.is_finite())
                .collect()
        };
        for (name, measure) in MEASURES {
            let (then, now) = (of(committed, measure), of(rerun, measure));
            if let (Some(c), Some(n)) = (Interval::of(&then), Interval::of(&now)) {
                out.push(Agreement {
                    setting: s.clone(),
                    measure: name,
                    committed: c,
                    rerun: n,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::experiment::suite::Figure;
    use braid::Config;
    use braid::EngineKind;
    use braid::Plan;

    fn record(variant: &str, repetition: u32, tts: f64) -> Record {
        let mut cfg = Config::default();
        cfg.apply_overrides(&["numerics=false", "max_iterations=2", "domain_size=8"])
            .unwrap();
        let (mut report, _) = braid::run(&Plan::simulated(&cfg).unwrap()).unwrap();
        report.time_to_solution_s = Some(tts);
        let sample = Sample {
            variant: variant.into(),
            repetition,
            ..Sample::default()
        };
        let mut r = Record::for_tests(Figure::Tts, EngineKind::Sim, sample, Some(report));
        r.key = r.sample.key();
        r
    }

    #[test]
    fn the_same_reports_reproduce_whatever_their_builds_and_wall_times() {
        let a = vec![record("async(4)", 0, 1.0), record("sync", 0, 2.0)];
        let mut b = a.clone();
        b[0].wall_s = 9.0;
        b[1].provenance.build.commit = "another".into();
        b[1].report.as_mut().unwrap().build.commit = "another".into();
        let e = exact(&a, &b);
        assert!(e.reproduced(), "{e:?}");
        assert_eq!(e.compared, 2);
    }

    #[test]
    fn a_moved_value_is_named_with_its_sample_and_its_relative_change() {
        let a = vec![record("async(4)", 0, 1.0), record("sync", 0, 2.0)];
        let mut b = a.clone();
        b[1].report.as_mut().unwrap().time_to_solution_s = Some(2.5);
        b[1].report.as_mut().unwrap().config.sim_row_ns = 0.0;
        let e = exact(&a, &b);
        assert!(!e.reproduced());
        assert_eq!(e.moved.len(), 1);
        let m = &e.moved[0];
        assert_eq!((m.key.as_str(), m.count), ("sync | quiet | 0", 2));
        assert_eq!(m.first[0].field, "time_to_solution_s");
        assert!((m.first[0].relative.unwrap() - 0.25).abs() < 1e-12);
        assert!(m.first.iter().any(|c| c.field == "config.sim_row_ns"));
        let kinds = e.by_kind();
        assert_eq!(kinds[0].kind, "time_to_solution_s");
        // A sample run only once is named too.
        let e = exact(&a, &b[..1]);
        assert_eq!(e.missing, ["sync | quiet | 0"]);
    }

    #[test]
    fn lists_that_moved_count_once_per_kind_and_are_shown_by_their_largest() {
        let c = |field: &str, relative| Change {
            field: field.into(),
            old: "1".into(),
            new: "2".into(),
            relative: Some(relative),
        };
        let shown = first_shown(
            (0..20)
                .map(|i| c(&format!("subdomain_updates[{i}]"), i as f64 / 100.0))
                .chain([c("lb.time_s", 0.001)])
                .collect(),
        );
        assert_eq!(shown.len(), SHOWN + 1, "every kind at least once");
        assert_eq!(shown[0].field, "subdomain_updates[19]");
        assert_eq!(shown[0].kind(), "subdomain_updates[]");
        assert!(shown.iter().any(|c| c.field == "lb.time_s"));
    }

    #[test]
    fn a_rerun_agrees_when_its_interval_overlaps_the_committed_one() {
        let runs = |base: f64| -> Vec<Record> {
            (0..5)
                .map(|i| record("async(4)", i, base + 0.01 * f64::from(i)))
                .collect()
        };
        let agree = within_intervals(&runs(1.0), &runs(1.02));
        let tts = agree
            .iter()
            .find(|a| a.measure.starts_with("time"))
            .unwrap();
        assert_eq!(tts.setting, "async(4) | quiet | 0");
        assert!(tts.agrees());
        let apart = within_intervals(&runs(1.0), &runs(1.5));
        assert!(
            !apart
                .iter()
                .find(|a| a.measure.starts_with("time"))
                .unwrap()
                .agrees()
        );
    }
}
