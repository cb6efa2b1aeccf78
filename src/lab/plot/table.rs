//! Table 2: the time-to-solution increase when noise is added, per engine
//! and variant (medians), as Markdown and CSV, next to the paper's values.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::landscape::variant_order;
use super::stats::quantile;
use super::tts::{timed, times};
use super::{PlotError, by_engine};
use crate::lab::experiment::results::Record;
use braid::EngineKind;

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

/// A paper figure as a number for the CSV: `13%` is 0.13, and `<1%` is
/// 0.01 with the bound `<` in a column of its own (empty when exact).
fn paper_number(text: &str) -> (String, &'static str) {
    let (bound, digits) = match text.strip_prefix('<') {
        Some(rest) => ("<", rest),
        None => ("", text),
    };
    match digits.strip_suffix('%').and_then(|d| d.parse::<f64>().ok()) {
        Some(p) => ((p / 100.0).to_string(), bound),
        None => (String::new(), ""),
    }
}

pub(super) struct Line {
    pub engine: EngineKind,
    pub variant: String,
    pub quiet: Option<f64>,
    pub noisy: Option<f64>,
    /// The quartiles around each median.
    pub quiet_iqr: Option<(f64, f64)>,
    pub noisy_iqr: Option<(f64, f64)>,
    pub samples: (usize, usize),
    /// Samples that finished without reaching the target.
    pub unconverged: usize,
    /// Converged samples taken while other work held a core, and those
    /// whose machine was measured at all.
    pub busy: (usize, usize),
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
            let iqr = |t: &[f64]| Some((quantile(t, 0.25)?, quantile(t, 0.75)?));
            let flags: Vec<bool> = [false, true]
                .into_iter()
                .flat_map(|noise| timed(&of, v, noise))
                .filter_map(|(_, busy)| busy)
                .collect();
            out.push(Line {
                engine,
                variant: v.clone(),
                quiet: quantile(&q, 0.5),
                noisy: quantile(&n, 0.5),
                quiet_iqr: iqr(&q),
                noisy_iqr: iqr(&n),
                samples: (q.len(), n.len()),
                unconverged: total - q.len() - n.len(),
                busy: (flags.iter().filter(|&&b| b).count(), flags.len()),
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
    let noise = super::noise_label(records);
    let mut md = format!(
        "# Table 2: time to solution increase with {noise}\n\n\
         Medians of converged samples, with their quartiles; times in seconds (virtual for \
         `sim`). `busy`: samples taken while other work held more than 5% of a worker's core, \
         of those measured (`-`: not measured, as in the simulator); their times are not the \
         machine's.\n\n\
         | engine | variant | quiet (s) | noisy (s) | increase | samples quiet/noisy | not converged | busy | paper Cirrus | paper ARCHER |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    let mut csv = String::from(
        "engine,variant,quiet_s,quiet_q1_s,quiet_q3_s,noisy_s,noisy_q1_s,noisy_q3_s,increase,\
         samples_quiet,samples_noisy,unconverged,busy_samples,measured_samples,\
         paper_cirrus,paper_cirrus_bound,paper_archer,paper_archer_bound\n",
    );
    let with_iqr = |m: Option<f64>, iqr: Option<(f64, f64)>| match (m, iqr) {
        (Some(m), Some((a, b))) if b > a => format!("{m:.4} ({a:.4}-{b:.4})"),
        (m, _) => opt(m, |v| format!("{v:.4}")),
    };
    for l in &lines {
        let (c, a) = paper(&l.variant);
        let busy = match l.busy {
            (_, 0) => "-".to_string(),
            (b, m) => format!("{b}/{m}"),
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {}/{} | {} | {busy} | {c} | {a} |",
            l.engine.command(),
            l.variant,
            with_iqr(l.quiet, l.quiet_iqr),
            with_iqr(l.noisy, l.noisy_iqr),
            opt(l.increase(), |v| format!("{:+.1}%", 100.0 * v)),
            l.samples.0,
            l.samples.1,
            l.unconverged,
        );
        let num = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
        let (cv, cb) = paper_number(c);
        let (av, ab) = paper_number(a);
        let _ = writeln!(
            csv,
            "{},\"{}\",{},{},{},{},{},{},{},{},{},{},{},{},{cv},{cb},{av},{ab}",
            l.engine.command(),
            l.variant,
            num(l.quiet),
            num(l.quiet_iqr.map(|q| q.0)),
            num(l.quiet_iqr.map(|q| q.1)),
            num(l.noisy),
            num(l.noisy_iqr.map(|q| q.0)),
            num(l.noisy_iqr.map(|q| q.1)),
            num(l.increase()),
            l.samples.0,
            l.samples.1,
            l.unconverged,
            l.busy.0,
            l.busy.1,
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

#[cfg(test)]
mod tests {
    use super::paper_number;

    #[test]
    fn the_papers_figures_are_numbers_with_their_bounds_apart() {
        assert_eq!(paper_number("13%"), ("0.13".into(), ""));
        assert_eq!(paper_number("-2%"), ("-0.02".into(), ""));
        assert_eq!(paper_number("<1%"), ("0.01".into(), "<"));
        assert_eq!(paper_number(""), (String::new(), ""));
    }
}
