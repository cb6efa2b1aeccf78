//! `braid table`: results files as one tidy table, a flat row per sample
//! with the same documented columns for every suite, as CSV for pandas
//! (`pd.read_csv`) or a spreadsheet. The columns are [`COLUMNS`], in that
//! order; docs/experiments.md#tidy-tables documents each.
//!
//! CSV only: the Rust Parquet writer (`parquet` with `arrow`) adds minutes
//! of compilation on a 2-core machine for a table of a few hundred rows
//! that pandas reads as fast from CSV.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::lab::experiment::ExperimentError;
use crate::lab::experiment::results::{self, Record};
use braid::NoiseForm;
use braid::Scope;
use braid::{Pick, Variant};

/// The table's columns, in order. Empty cells are nulls (pandas: NaN).
pub(crate) const COLUMNS: [&str; 35] = [
    "suite",
    "engine",
    "figure",
    "key",
    "status",
    "variant",
    "scheme",
    "strategy",
    "scope",
    "interval_s",
    "workload",
    "noise",
    "placement",
    "noisy_cores",
    "duty_requested",
    "duty_measured",
    "noisy_duties",
    "repetition",
    "threads",
    "converged",
    "time_to_solution_s",
    "elapsed_s",
    "residual",
    "spread",
    "iteration_rate",
    "moves",
    "started",
    "started_unix_s",
    "load_avg_1m",
    "steal_share",
    "lost_share_max",
    "lost_shares",
    "busy",
    "wall_s",
    "error",
];

/// Writes the table of `inputs` to `out` (`-` = stdout); returns the rows.
pub(crate) fn write(inputs: &[PathBuf], out: &Path) -> Result<usize, TableError> {
    let mut rows = Vec::new();
    for path in inputs {
        for (_, r) in results::read_numbered(path)? {
            rows.push(row(&r));
        }
    }
    let write_all = |w: &mut dyn Write| -> Result<(), csv::Error> {
        let mut csv = csv::Writer::from_writer(w);
        csv.write_record(COLUMNS)?;
        for r in &rows {
            csv.write_record(r)?;
        }
        csv.flush()?;
        Ok(())
    };
    let failed = |e: &dyn std::fmt::Display| TableError::Write {
        path: out.to_path_buf(),
        message: e.to_string(),
    };
    if out == Path::new("-") {
        write_all(&mut std::io::stdout().lock()).map_err(|e| failed(&e))?;
    } else {
        let mut file = braid_noise::files::AtomicFile::create(out).map_err(|e| failed(&e))?;
        write_all(&mut file).map_err(|e| failed(&e))?;
        file.commit().map_err(|e| failed(&e))?;
    }
    Ok(rows.len())
}

/// Why there is no table.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TableError {
    #[error(transparent)]
    Results(#[from] ExperimentError),
    #[error("cannot write the table to {path}: {message}")]
    Write { path: PathBuf, message: String },
}

impl TableError {
    pub(crate) fn is_bad_input(&self) -> bool {
        match self {
            TableError::Results(e) => e.is_bad_input(),
            TableError::Write { .. } => true,
        }
    }
}

/// Each CPU's share of the run lost to others, `cpu:share` joined by
/// `;` (empty where it was not measured).
fn lost_shares(m: &braid::MachineLoad) -> String {
    m.cpus
        .iter()
        .map(|c| {
            format!(
                "{}:{}",
                c.cpu,
                c.lost_share.map(|s| s.to_string()).unwrap_or_default()
            )
        })
        .collect::<Vec<_>>()
        .join(";")
}

/// One record's row, in [`COLUMNS`] order.
fn row(r: &Record) -> Vec<String> {
    let rep = r.report.as_ref();
    let num = |x: Option<f64>| x.map(|x| x.to_string()).unwrap_or_default();
    let (scheme, strategy, scope, interval) = variant_parts(&r.sample.variant);
    let config = rep.map(|p| &p.config);
    let workload = r
        .sample
        .workload
        .clone()
        .or_else(|| config.map(|c| c.workload.to_string()))
        .unwrap_or_default();
    let noise_form = config.map(|c| c.noise).unwrap_or(NoiseForm::None);
    let parasites = rep
        .and_then(|p| p.noise.as_ref())
        .map(|n| n.parasites.as_slice())
        .unwrap_or_default();
    let joined = |f: &dyn Fn(&braid::ParasiteReport) -> Option<String>| {
        parasites
            .iter()
            .map(|p| f(p).unwrap_or_default())
            .collect::<Vec<_>>()
            .join(";")
    };
    let machine = rep.and_then(|p| p.machine.as_ref());
    let noisy = rep.map(|p| p.noisy_cpus()).unwrap_or_default();
    vec![
        r.suite.clone(),
        r.engine.command().to_string(),
        serde_plain(&r.figure),
        r.key.clone(),
        serde_plain(&r.status),
        r.sample.variant.clone(),
        scheme,
        strategy,
        scope,
        interval,
        workload,
        serde_plain(&noise_form),
        r.sample.placement.clone().unwrap_or_default(),
        joined(&|p| Some(p.core.to_string())),
        num(mean(parasites.iter().filter_map(requested))),
        num(mean(parasites.iter().map(|p| p.measured_duty))),
        joined(&|p| {
            let asked = requested(p).map(|d| d.to_string()).unwrap_or_default();
            Some(format!("{}:{asked}:{}", p.core, p.measured_duty))
        }),
        r.sample.repetition.to_string(),
        rep.map(|p| p.threads.to_string()).unwrap_or_default(),
        rep.map(|p| p.converged.to_string()).unwrap_or_default(),
        num(rep.and_then(|p| p.time_to_solution_s)),
        num(rep.map(|p| p.elapsed_s)),
        num(rep.and_then(|p| p.residual)),
        rep.map(|p| p.spread.to_string()).unwrap_or_default(),
        num(rep.map(|p| p.iteration_rate)),
        rep.map(|p| p.lb.as_ref().map_or(0, |lb| lb.moves).to_string())
            .unwrap_or_default(),
        machine
            .map(|m| braid::iso8601(m.started_unix_s))
            .unwrap_or_default(),
        num(machine.map(|m| m.started_unix_s)),
        num(machine.and_then(|m| m.load_avg_1m)),
        num(machine.map(|m| m.steal())),
        num(machine.map(|m| m.most_lost(&noisy))),
        machine.map(lost_shares).unwrap_or_default(),
        rep.and_then(|p| p.machine_busy())
            .map(|b| b.to_string())
            .unwrap_or_default(),
        r.wall_s.to_string(),
        r.error.clone().unwrap_or_default(),
    ]
}

/// The share of its core a parasite was asked to take: its duty, or for a
/// replayed trace the share the trace recorded.
fn requested(p: &braid::ParasiteReport) -> Option<f64> {
    p.requested_duty
        .or_else(|| p.trace.as_ref().map(|t| t.lost_share))
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0u32), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / f64::from(n))
}

/// A unit enum's serde name (`run`, `ok`, `thread`).
fn serde_plain(v: &impl serde::Serialize) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

/// `(scheme, strategy, scope, interval)` of a paper label; empty where the
/// label has none.
fn variant_parts(label: &str) -> (String, String, String, String) {
    let Ok(v) = Variant::parse(label) else {
        return Default::default();
    };
    let scheme = match v {
        Variant::Sync | Variant::Bulk { .. } => "sync",
        Variant::Ssync { .. } => "ssync",
        Variant::Async { .. } => "async",
    };
    let Some(b) = v.balancer() else {
        return (scheme.into(), String::new(), String::new(), String::new());
    };
    let interval = b.interval.to_string();
    let (strategy, scope) = match b.pick {
        Pick::Auto => ("auto".to_string(), String::new()),
        Pick::Learned => ("learned".to_string(), String::new()),
        Pick::One(n) => (
            n.strategy.name().to_string(),
            match n.scope {
                Scope::Joint => "joint",
                Scope::Split => "split",
                Scope::Hybrid { .. } => "hybrid",
            }
            .to_string(),
        ),
    };
    (scheme.into(), strategy, scope, interval)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_utc_dates() {
        assert_eq!(braid::iso8601(0.0), "1970-01-01T00:00:00Z");
        assert_eq!(braid::iso8601(951_782_400.0), "2000-02-29T00:00:00Z");
        assert_eq!(braid::iso8601(1_795_521_930.9), "2026-11-24T12:05:30Z");
    }

    #[test]
    fn a_label_splits_into_scheme_strategy_scope_and_interval() {
        let parts = |l| variant_parts(l);
        assert_eq!(
            parts("sync"),
            ("sync".into(), "".into(), "".into(), "".into())
        );
        assert_eq!(
            parts("async(4)+hybrid(0.001,500)"),
            (
                "async".into(),
                "progressive".into(),
                "hybrid".into(),
                "0.001".into()
            )
        );
        assert_eq!(
            parts("async(4)+greedy-split(auto)"),
            (
                "async".into(),
                "greedy".into(),
                "split".into(),
                "auto".into()
            )
        );
        assert_eq!(parts("async(4)+auto(0.001)").1, "auto");
    }

    #[test]
    fn every_row_has_every_column() {
        let r = Record {
            suite: "t".into(),
            suite_digest: "d".into(),
            figure: crate::lab::experiment::suite::Figure::Tts,
            engine: braid::EngineKind::Sim,
            sample: Default::default(),
            key: "k".into(),
            status: results::Status::Failed,
            error: Some("timed out".into()),
            wall_s: 1.0,
            provenance: crate::lab::experiment::provenance::Provenance::for_tests(),
            report: None,
        };
        let row = row(&r);
        assert_eq!(row.len(), COLUMNS.len());
        assert_eq!(row[4], "failed");
        assert_eq!(row[COLUMNS.len() - 1], "timed out");
    }
}
