//! What each figure reads from a report, checked before anything is drawn:
//! a record whose field is missing, null where a number belongs, negative,
//! not finite or of the wrong type is named by file, line and field, instead
//! of being drawn as a zero (or sending the axis code into a loop).

use std::path::Path;

use serde_json::Value;

use super::PlotError;
use crate::experiment::results::Record;
use crate::experiment::suite::{Engine, Figure};

/// How a field must look.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// A finite number >= 0.
    Number,
    /// A finite number >= 0, or null (a run that did not converge has no
    /// time to solution).
    NumberOrNull,
    /// A whole number >= 1.
    Count,
    /// The trace of a braid figure: at least two samples, each with `t_s`
    /// and equally long `counts` and `owners`.
    Trace,
}

/// The fields `figure` reads from a report of `engine`.
fn needs(figure: Figure, engine: Engine) -> Vec<(&'static str, Kind)> {
    let mut out = vec![("threads", Kind::Count)];
    if engine == Engine::Sim {
        out.push(("sockets", Kind::Count));
    }
    match figure {
        Figure::Landscape => {
            out.extend([("iteration_rate", Kind::Number), ("spread", Kind::Number)])
        }
        Figure::Tts | Figure::Payoff => out.push(("time_to_solution_s", Kind::NumberOrNull)),
        Figure::Braid => out.push(("trace", Kind::Trace)),
    }
    out
}

/// Checks the report of a finished record read from `path` at `line`.
pub fn record(path: &Path, line: usize, r: &Record) -> Result<(), PlotError> {
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
    for (field, kind) in needs(r.figure, r.engine) {
        let v = report.get(field).unwrap_or(&Value::Null);
        let problem = match kind {
            Kind::Number => number(v),
            Kind::NumberOrNull if v.is_null() => None,
            Kind::NumberOrNull => number(v),
            Kind::Count => match v.as_u64() {
                Some(n) if n >= 1 => None,
                _ => Some(format!("expected a whole number >= 1, found {}", shown(v))),
            },
            Kind::Trace => trace(v),
        };
        if let Some(problem) = problem {
            return Err(bad(field, problem));
        }
    }
    Ok(())
}

fn number(v: &Value) -> Option<String> {
    match v.as_f64() {
        Some(x) if x.is_finite() && x >= 0.0 => None,
        _ => Some(format!("expected a number >= 0, found {}", shown(v))),
    }
}

fn trace(v: &Value) -> Option<String> {
    let Some(samples) = v.as_array() else {
        return Some(format!(
            "expected a trace (run with trace_interval > 0), found {}",
            shown(v)
        ));
    };
    if samples.len() < 2 {
        return Some(format!(
            "{} sample(s); a braid needs at least 2 (a smaller trace_interval or a longer run)",
            samples.len()
        ));
    }
    let len = |s: &Value, k: &str| -> Option<usize> {
        let a = s.get(k)?.as_array()?;
        a.iter().all(|x| x.as_u64().is_some()).then_some(a.len())
    };
    let first = len(&samples[0], "counts");
    for (i, s) in samples.iter().enumerate() {
        let t_ok = s
            .get("t_s")
            .and_then(Value::as_f64)
            .is_some_and(f64::is_finite);
        let counts = len(s, "counts");
        if !t_ok || counts.is_none() || counts != first || len(s, "owners") != counts {
            return Some(format!(
                "sample {i} needs t_s and counts and owners (whole numbers, as long as sample 0's)"
            ));
        }
    }
    None
}

/// A value as it appears in the file, cut short.
fn shown(v: &Value) -> String {
    match v {
        Value::Null => "null (or nothing)".into(),
        other => {
            let text = other.to_string();
            if text.chars().count() > 40 {
                format!("{}...", text.chars().take(40).collect::<String>())
            } else {
                text
            }
        }
    }
}
