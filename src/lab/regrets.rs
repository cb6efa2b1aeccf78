//! A learned chooser's evaluation drawn as its regret figure: what `braid
//! learn --evaluate --plot` and `braid reproduce` both draw, above the
//! evaluation ([`super::learn`]) and the figure ([`super::plot::regret`]).

use std::path::{Path, PathBuf};

use super::learn::Evaluation;
use super::plot::PlotError;
use super::plot::regret::{RegretFigure, RegretRow};

/// The regrets of `e` (of `model` on `results`) drawn into `dir` as
/// `regret-STEM.png` and `.svg`, STEM the first results file's name
/// without its extensions.
pub(crate) fn draw(
    e: &Evaluation,
    model: &Path,
    results: &[PathBuf],
    dir: &Path,
) -> Result<Vec<PathBuf>, PlotError> {
    let name = |p: &Path| stem(p);
    let stem = format!("regret-{}", name(&results[0]));
    let inputs: Vec<String> = results.iter().map(|p| name(p)).collect();
    let figure = RegretFigure {
        headline: format!(
            "{} on {} held-out instance(s) ({})",
            model
                .file_name()
                .map_or_else(|| name(model), |n| n.to_string_lossy().into()),
            e.instances,
            inputs.join(", ")
        ),
        subtitle: format!(
            "the model named the best fixed strategy at its first call in {:.1}% (always naming \
             {}: {:.1}%)",
            100.0 * e.accuracy,
            e.baseline.0,
            100.0 * e.baseline.1
        ),
        rows: (e.regret.iter())
            .map(|r| RegretRow {
                name: r.balancer.clone(),
                variant: r.label.clone(),
                mean: r.mean,
                interval: r.interval,
                failed: r.failed,
            })
            .collect(),
    };
    let mut written = figure.draw(dir, &stem)?;
    written.push(super::plot::write_csv(dir, &stem, &rows(e))?);
    Ok(written)
}

/// The evaluation as CSV rows, a header first: each balancer's regret
/// (%, its 95% interval), the instances it converged and failed on; then
/// the model's accuracy and the commonest label's, as rows of their own.
fn rows(e: &Evaluation) -> Vec<Vec<String>> {
    let pct = |x: f64| format!("{:.3}", 100.0 * x);
    let mut out = vec![
        [
            "balancer",
            "variant",
            "converged",
            "failed",
            "regret_pct",
            "low_pct",
            "high_pct",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for r in &e.regret {
        out.push(vec![
            r.balancer.clone(),
            r.label.clone(),
            r.converged.to_string(),
            r.failed.to_string(),
            pct(r.mean),
            pct(r.interval.0),
            pct(r.interval.1),
        ]);
    }
    let share = |name: String, x: f64| {
        vec![
            name,
            String::new(),
            e.instances.to_string(),
            String::new(),
            pct(x),
            String::new(),
            String::new(),
        ]
    };
    out.push(share("accuracy: the model".into(), e.accuracy));
    out.push(share(
        format!("accuracy: always {}", e.baseline.0),
        e.baseline.1,
    ));
    out
}

/// A file's name without its extensions (`learn-test-sim` of
/// `learn-test-sim.jsonl.br`).
fn stem(p: &Path) -> String {
    let name = p
        .file_name()
        .map_or_else(|| p.display().to_string(), |s| s.to_string_lossy().into());
    match name.split_once('.') {
        Some((s, _)) if !s.is_empty() => s.to_string(),
        _ => name,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_figure_is_named_for_its_results_file_without_extensions() {
        use std::path::Path;
        assert_eq!(
            super::stem(Path::new("a/learn-test-sim.jsonl.br")),
            "learn-test-sim"
        );
        assert_eq!(super::stem(Path::new("results/x.jsonl")), "x");
    }
}
