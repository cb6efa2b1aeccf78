//! What each figure reads from a report, checked before anything is drawn:
//! a record whose field is missing, null where a number belongs, negative,
//! not finite or of the wrong type is named by file, line and field, instead
//! of being drawn as a zero (or sending the axis code into a loop).

use std::path::Path;

use super::PlotError;
use crate::lab::experiment::results::Record;
use crate::lab::experiment::suite::Figure;
use braid::EngineKind;
use braid::Report;
use braid::TraceSample;

/// A value a figure reads, as the check sees it.
enum Field<'a> {
    /// A finite number >= 0.
    Number(f64),
    /// A finite number > 0, or none (a run that did not converge has no
    /// time to solution; figures divide by one that did).
    TimeOrNone(Option<f64>),
    /// A finite number from `lo` to `hi` (the model's shares and losses).
    Within(f64, f64, f64),
    /// A whole number >= 1.
    Count(usize),
    /// The trace of a braid figure: at least two samples, with equally long
    /// `counts` and `owners`.
    Trace(Option<&'a [TraceSample]>),
}

/// The fields `figure` reads from a report of `engine`. (Types were checked
/// when the record was read: a missing field or a string where a number
/// belongs is a [`crate::lab::experiment::ExperimentError::BadRecord`] naming
/// the field.)
fn needs(figure: Figure, engine: EngineKind, r: &Report) -> Vec<(&'static str, Field<'_>)> {
    let mut out = vec![("threads", Field::Count(r.threads))];
    if engine == EngineKind::Sim {
        out.push(("sockets", Field::Count(r.sockets)));
    }
    match figure {
        Figure::Landscape => out.extend([
            ("iteration_rate", Field::Number(r.iteration_rate)),
            ("spread", Field::Number(r.spread as f64)),
        ]),
        Figure::Tts | Figure::Payoff | Figure::Gains => {
            out.push((
                "time_to_solution_s",
                Field::TimeOrNone(r.time_to_solution_s),
            ));
            out.extend(model(r));
        }
        Figure::Workloads => out.extend([
            (
                "time_to_solution_s",
                Field::TimeOrNone(r.time_to_solution_s),
            ),
            ("spread", Field::Number(r.spread as f64)),
        ]),
        Figure::Braid => out.push(("trace", Field::Trace(r.trace.as_deref()))),
        Figure::Scale => {
            out.extend([
                ("iteration_rate", Field::Number(r.iteration_rate)),
                ("spread", Field::Number(r.spread as f64)),
            ]);
            if let Some(lb) = &r.lb {
                out.extend([
                    ("lb.calls", Field::Number(lb.calls as f64)),
                    ("lb.moves", Field::Number(lb.moves as f64)),
                    ("lb.time_s", Field::Number(lb.time_s)),
                ]);
            }
        }
        Figure::Effort => {
            for e in r.lb.iter().flat_map(|lb| &lb.effort) {
                out.extend([
                    ("lb.effort.t_s", Field::Number(e.t_s)),
                    ("lb.effort.interval_s", Field::Number(e.interval_s)),
                    ("lb.effort.lost_s", Field::Number(e.lost_s)),
                    ("lb.effort.cost_s", Field::Number(e.cost_s)),
                    (
                        "lb.effort (lost + cost over interval)",
                        Field::Number(e.effort()),
                    ),
                ]);
            }
        }
    }
    out
}

/// The model's forecasts the payoff figures draw: shares in [0, 1], and
/// losses no model gives beyond a thousandfold (a loss is a fraction).
fn model(r: &Report) -> Vec<(&'static str, Field<'static>)> {
    const LOSS: f64 = 1e3;
    let mut out = Vec::new();
    for m in &r.model {
        out.extend([
            ("model.duty", Field::Within(m.duty, 0.0, 1.0)),
            ("model.mode_share", Field::Within(m.mode_share, 0.0, 1.0)),
            (
                "model.plain_async_loss",
                Field::Within(m.plain_async_loss, -1.0, LOSS),
            ),
            (
                "model.ideal_balanced_loss",
                Field::Within(m.ideal_balanced_loss, -1.0, LOSS),
            ),
        ]);
    }
    if let Some(w) = &r.workload_model {
        out.extend([
            ("workload_model.work", Field::Within(w.work, 0.0, LOSS)),
            (
                "workload_model.heaviest_thread",
                Field::Within(w.heaviest_thread, 0.0, LOSS),
            ),
            (
                "workload_model.plain_async_loss",
                Field::Within(w.plain_async_loss, -1.0, LOSS),
            ),
            (
                "workload_model.ideal_balanced_loss",
                Field::Within(w.ideal_balanced_loss, -1.0, LOSS),
            ),
        ]);
    }
    out
}

/// Checks the report of a finished record read from `path` at `line`.
pub(super) fn record(path: &Path, line: usize, r: &Record) -> Result<(), PlotError> {
    let bad = |field: &str, problem: String| PlotError::BadField {
        path: path.to_path_buf(),
        line,
        field: field.to_string(),
        problem,
    };
    let Some(report) = r.report.as_ref() else {
        return Err(bad(
            "report",
            "missing in a record whose status is ok".into(),
        ));
    };
    // The configuration is checked as the keys are: a hand-edited value
    // out of bounds is named here, not drawn.
    report
        .config
        .rechecked(path)
        .map_err(|e| bad("config", e.to_string()))?;
    for (field, value) in needs(r.figure, r.engine, report) {
        let problem = match value {
            Field::Number(x) => number(x),
            Field::TimeOrNone(Some(t)) if t > 0.0 && t.is_finite() => None,
            Field::TimeOrNone(Some(t)) => Some(format!(
                "expected a time > 0 (figures divide by it), found {}",
                shown(t)
            )),
            Field::TimeOrNone(None) => None,
            Field::Within(x, lo, hi) if (lo..=hi).contains(&x) => None,
            Field::Within(x, lo, hi) => Some(format!(
                "expected a number from {lo} to {hi}, found {}",
                shown(x)
            )),
            Field::Count(n) if n >= 1 => None,
            Field::Count(n) => Some(format!("expected a whole number >= 1, found {n}")),
            Field::Trace(t) => trace(t),
        };
        if let Some(problem) = problem {
            return Err(bad(field, problem));
        }
    }
    Ok(())
}

fn number(x: f64) -> Option<String> {
    (!(x.is_finite() && x >= 0.0)).then(|| format!("expected a number >= 0, found {}", shown(x)))
}

/// A number as a message shows it: 1e308 in 5 characters, not 309.
fn shown(x: f64) -> String {
    if x == 0.0 || (1e-4..1e6).contains(&x.abs()) {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

fn trace(samples: Option<&[TraceSample]>) -> Option<String> {
    let Some(samples) = samples else {
        return Some("no trace (run with trace_interval > 0)".into());
    };
    if samples.len() < 2 {
        return Some(format!(
            "{} sample(s); a braid needs at least 2 (a smaller trace_interval or a longer run)",
            samples.len()
        ));
    }
    let n = samples[0].counts.len();
    for (i, s) in samples.iter().enumerate() {
        if !s.t_s.is_finite() || s.counts.len() != n || s.owners.len() != n {
            return Some(format!(
                "sample {i} needs a finite t_s and counts and owners as long as sample 0's"
            ));
        }
    }
    None
}
