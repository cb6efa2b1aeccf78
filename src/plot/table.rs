//! Table 2: the time-to-solution increase when noise is added, per engine
//! and variant (medians), as Markdown and CSV, next to the paper's values.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::landscape::variant_order;
use super::stats::quantile;
use super::tts::times;
use super::{PlotError, by_engine};
use crate::engine::EngineKind;
use crate::experiment::results::Record;

/// The paper's Table 2 (Cirrus, ARCHER), by label.
fn paper(variant: &str) -> (&'static str, &'static str) {
    match variant.replace(' ', "").as_str() {
        "sync" => ("13%", "18%"),
        "ssync(1)" => ("11%", "18%"),
        "ssync(30)" => ("11%", "18%"),
        "async(1)" => ("8%", "10%"),
        "async(4)" => ("9%", "11%"),
        "async(4)+split(0.001)" => ("1%", "<1%"),
        "async(4)+joint(0.001)" => ("1%", "1%"),
        "async(4)+hybrid(0.001,500)" => ("-2%", "1%"),
        _ => ("", ""),
    }
}

pub(super) struct Line {
    pub engine: EngineKind,
    pub variant: String,
    pub quiet: Option<f64>,
    pub noisy: Option<f64>,
    pub samples: (usize, usize),
    /// Samples that finished without reaching the target.
    pub unconverged: usize,
}

impl Line {
    pub(super) fn increase(&self) -> Option<f64> {
        Some(self.noisy? / self.quiet? - 1.0)
    }
}

pub(super) fn lines(records: &[&Record]) -> Vec<Line> {
    let variants = variant_order(records);
    let mut out = Vec::new();
    for (engine, of) in by_engine(records) {
        for v in &variants {
            let (q, n) = (times(&of, v, false), times(&of, v, true));
            let total = of.iter().filter(|r| &r.sample.variant == v).count();
            if total == 0 {
                continue;
            }
            out.push(Line {
                engine,
                variant: v.clone(),
                quiet: quantile(&q, 0.5),
                noisy: quantile(&n, 0.5),
                samples: (q.len(), n.len()),
                unconverged: total - q.len() - n.len(),
            });
        }
    }
    out
}

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map(f).unwrap_or_else(|| "-".into())
}

pub(super) fn write(records: &[&Record], dir: &Path) -> Result<Vec<PathBuf>, PlotError> {
    let lines = lines(records);
    let mut md = String::from(
        "# Table 2: time to solution increase when 19% noise is added to one core\n\n\
         Medians of converged samples; times in seconds (virtual for `sim`).\n\n\
         | engine | variant | quiet (s) | noisy (s) | increase | samples quiet/noisy | not converged | paper Cirrus | paper ARCHER |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    let mut csv = String::from(
        "engine,variant,quiet_s,noisy_s,increase,samples_quiet,samples_noisy,unconverged,paper_cirrus,paper_archer\n",
    );
    for l in &lines {
        let (c, a) = paper(&l.variant);
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {}/{} | {} | {c} | {a} |",
            l.engine.command(),
            l.variant,
            opt(l.quiet, |v| format!("{v:.4}")),
            opt(l.noisy, |v| format!("{v:.4}")),
            opt(l.increase(), |v| format!("{:+.1}%", 100.0 * v)),
            l.samples.0,
            l.samples.1,
            l.unconverged,
        );
        let _ = writeln!(
            csv,
            "{},\"{}\",{},{},{},{},{},{},{c},{a}",
            l.engine.command(),
            l.variant,
            opt(l.quiet, |v| v.to_string()),
            opt(l.noisy, |v| v.to_string()),
            opt(l.increase(), |v| v.to_string()),
            l.samples.0,
            l.samples.1,
            l.unconverged,
        );
    }
    let mut written = Vec::new();
    for (name, text) in [("table2.md", md), ("table2.csv", csv)] {
        let path = dir.join(name);
        braid_noise::files::write_atomic(&path, |w| w.write_all(text.as_bytes())).map_err(|e| {
            PlotError::Write {
                path: path.clone(),
                message: e.to_string(),
            }
        })?;
        written.push(path);
    }
    Ok(written)
}
