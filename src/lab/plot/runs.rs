//! Which suite runs a plot's records come from, and that no figure pools
//! two of them: a series and its baseline must come from one run of one
//! suite (one build of braid, one definition of the suite), or the figure
//! shows a ratio of two programs' numbers. `braid plot` refuses records of
//! one suite from two builds or two definitions, and records of two suites
//! that one figure would draw as one (the payoff map aside, whose panels
//! each come from their own suite); `--apart` draws each build's records on
//! their own instead, in a folder named for the build.

use std::collections::BTreeSet;

use super::PlotError;
use crate::lab::experiment::results::Record;
use crate::lab::experiment::suite::Figure;
use braid::Build;
use braid::EngineKind;

/// How a folder of `--apart`'s is named for a build: its commit's first
/// 12 digits, `-dirty` when the tree was not clean.
pub(super) fn folder(build: &Build) -> String {
    match build.clean {
        true => build.short().to_string(),
        false => format!("{}-dirty", build.short()),
    }
}

/// The builds the records come from, in the order first seen.
pub(super) fn builds(records: &[Record]) -> Vec<Build> {
    let mut out: Vec<Build> = Vec::new();
    for r in records {
        if !out.contains(&r.provenance.build) {
            out.push(r.provenance.build.clone());
        }
    }
    out
}

/// Refuses records that one figure would pool: one suite from two builds
/// or two definitions (digests), or two suites drawn by one figure of one
/// engine (the payoff map's panels each have their own suite, so it may
/// take several).
pub(super) fn check_not_pooled(records: &[Record]) -> Result<(), PlotError> {
    let mut suites: Vec<&str> = records.iter().map(|r| r.suite.as_str()).collect();
    suites.sort_unstable();
    suites.dedup();
    for suite in suites {
        let of = || records.iter().filter(|r| r.suite == suite);
        let mut builds: Vec<&Build> = Vec::new();
        for r in of() {
            if !builds.contains(&&r.provenance.build) {
                builds.push(&r.provenance.build);
            }
        }
        if builds.len() > 1 {
            return Err(PlotError::TwoBuilds {
                suite: suite.to_string(),
                builds: builds
                    .iter()
                    .map(|b| b.to_string())
                    .collect::<Vec<_>>()
                    .join("; "),
            });
        }
        let digests: BTreeSet<&str> = of().map(|r| r.suite_digest.as_str()).collect();
        if digests.len() > 1 {
            return Err(PlotError::TwoDefinitions {
                suite: suite.to_string(),
                digests: digests.into_iter().collect::<Vec<_>>().join(", "),
            });
        }
    }
    let mut drawn: Vec<(Figure, EngineKind, BTreeSet<&str>)> = Vec::new();
    for r in records.iter().filter(|r| r.figure != Figure::Payoff) {
        match drawn
            .iter_mut()
            .find(|(f, e, _)| *f == r.figure && *e == r.engine)
        {
            Some((_, _, s)) => {
                s.insert(r.suite.as_str());
            }
            None => drawn.push((r.figure, r.engine, BTreeSet::from([r.suite.as_str()]))),
        }
    }
    match drawn.into_iter().find(|(_, _, s)| s.len() > 1) {
        Some((figure, engine, suites)) => Err(PlotError::TwoSuites {
            figure: format!("{figure:?}").to_lowercase(),
            engine: engine.command().to_string(),
            suites: suites.into_iter().collect::<Vec<_>>().join(", "),
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::experiment::suite::Sample;

    fn record(suite: &str, figure: Figure, commit: &str) -> Record {
        let mut r = Record::for_tests(figure, EngineKind::Sim, Sample::default(), None);
        r.suite = suite.into();
        r.provenance.build.commit = commit.into();
        r
    }

    #[test]
    fn one_suite_from_two_builds_is_refused_naming_both() {
        let a = record("s", Figure::Landscape, "aaaaaaaaaaaaaaaa");
        let b = record("s", Figure::Landscape, "bbbbbbbbbbbbbbbb");
        let e = check_not_pooled(&[a.clone(), b.clone()]).unwrap_err();
        let said = e.to_string();
        assert!(
            said.contains("aaaaaaaaaaaa") && said.contains("bbbbbbbbbbbb"),
            "{said}"
        );
        assert!(check_not_pooled(&[a.clone(), a.clone()]).is_ok());
        assert_eq!(builds(&[a.clone(), b, a]).len(), 2);
    }

    #[test]
    fn one_suite_of_two_definitions_is_refused() {
        let a = record("s", Figure::Tts, "a");
        let mut b = a.clone();
        b.suite_digest = "other".into();
        assert!(matches!(
            check_not_pooled(&[a, b]),
            Err(PlotError::TwoDefinitions { .. })
        ));
    }

    #[test]
    fn two_suites_one_figure_would_pool_are_refused_but_payoff_panels_are_their_own() {
        let a = record("one", Figure::Landscape, "a");
        let b = record("two", Figure::Landscape, "a");
        assert!(matches!(
            check_not_pooled(&[a.clone(), b]),
            Err(PlotError::TwoSuites { .. })
        ));
        // Another figure, or another engine, is drawn on its own.
        let mut c = record("two", Figure::Landscape, "a");
        c.engine = EngineKind::Run;
        assert!(check_not_pooled(&[a.clone(), c]).is_ok());
        assert!(check_not_pooled(&[a, record("two", Figure::Tts, "a")]).is_ok());
        let p = record("p1", Figure::Payoff, "a");
        let q = record("p2", Figure::Payoff, "a");
        assert!(check_not_pooled(&[p, q]).is_ok());
    }
}
