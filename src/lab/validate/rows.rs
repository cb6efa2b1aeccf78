//! What `braid validate` compares: each variant's runs in both engines
//! under one condition ([`Row`]), the verdicts on them, and the table it
//! prints.

use serde::{Deserialize, Serialize};

/// How far the simulator may be from the machine and still agree: ratios
/// (sub-splitting, balanced over plain, noisy over quiet) within 5%,
/// absolute times to solution within 15%.
pub(crate) const RATIO_TOLERANCE: f64 = 0.05;
pub(crate) const TIME_TOLERANCE: f64 = 0.15;

/// The median and range of a quantity over repetitions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct Stats {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// How many values (runs that reached the tolerance).
    pub n: usize,
}

impl Stats {
    /// `None` for no values.
    pub(crate) fn of(values: &[f64]) -> Option<Stats> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Stats {
            median,
            min: v[0],
            max: v[n - 1],
            n,
        })
    }
}

/// What the two engines say of one quantity, and whether they agree.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct Compared {
    pub real: f64,
    pub sim: f64,
    pub verdict: Verdict,
}

/// A verdict on one quantity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Verdict {
    /// Within the tolerance.
    Agrees,
    /// Outside the tolerance, but a ratio's sign (faster or slower) is the
    /// same in both engines.
    SameSign,
    /// Outside the tolerance, a ratio on the other side of 1 than the
    /// machine's, but the machine's own runs cannot tell its side: the two
    /// variants' real times overlap.
    Scatter,
    /// Outside the tolerance, and a ratio says faster in one engine and
    /// slower in the other, where the machine's runs do not overlap.
    Disagrees,
}

impl Verdict {
    /// `sim` against `real`, within `tolerance` of it (relative); for a
    /// ratio (`around_one`), also whether both are on the same side of 1.
    ///
    /// `overlap`: whether the real runs of the two things compared
    /// overlap, so that the machine cannot tell the ratio's side of 1.
    pub(crate) fn of(
        real: f64,
        sim: f64,
        tolerance: f64,
        around_one: bool,
        overlap: bool,
    ) -> Verdict {
        if (sim / real - 1.0).abs() <= tolerance {
            Verdict::Agrees
        } else if !around_one || (real >= 1.0) == (sim >= 1.0) {
            Verdict::SameSign
        } else if overlap {
            Verdict::Scatter
        } else {
            Verdict::Disagrees
        }
    }

    fn word(self) -> &'static str {
        match self {
            Verdict::Agrees => "agrees",
            Verdict::SameSign => "off",
            Verdict::Scatter => "off (scatter)",
            Verdict::Disagrees => "SIGN",
        }
    }
}

impl Compared {
    fn new(real: f64, sim: f64, tolerance: f64, around_one: bool, overlap: bool) -> Compared {
        Compared {
            real,
            sim,
            verdict: Verdict::of(real, sim, tolerance, around_one, overlap),
        }
    }
}

/// One variant under one condition, in both engines.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Row {
    pub condition: String,
    pub variant: String,
    /// Times to solution, seconds.
    pub real: Option<Stats>,
    pub sim: Option<Stats>,
    /// Spread (most minus fewest updates of a subdomain), medians.
    pub real_spread: f64,
    pub sim_spread: f64,
    /// Balancer moves, medians.
    pub real_moves: f64,
    pub sim_moves: f64,
    /// Simulated time to solution against real, within 15%.
    pub time: Option<Compared>,
    /// The variant it is compared with (async(4) against async(1), a
    /// balanced variant against its plain one), if any.
    pub base: Option<String>,
    /// This variant's time over the base's, in each engine.
    pub over_base: Option<Compared>,
    /// This variant's time under this condition over its time quiet.
    pub over_quiet: Option<Compared>,
}

impl Row {
    /// Compares the engines' medians: the time, and the ratios to the
    /// base row and to the quiet row when given.
    pub(crate) fn compare(&mut self, base: Option<&Row>, quiet: Option<&Row>) {
        let median = |s: Option<Stats>| s.map(|s| s.median);
        let pair = |r: &Row| Some((median(r.real)?, median(r.sim)?));
        self.time = pair(self).map(|(r, s)| Compared::new(r, s, TIME_TOLERANCE, false, false));
        let (own, range) = (pair(self), self.real);
        let ratio = |other: Option<&Row>| {
            let other = other?;
            let (r, s) = own?;
            let (r0, s0) = pair(other)?;
            let (a, b) = (range?, other.real?);
            let overlap = a.min <= b.max && b.min <= a.max;
            Some(Compared::new(
                r / r0,
                s / s0,
                RATIO_TOLERANCE,
                true,
                overlap,
            ))
        };
        self.over_base = ratio(base);
        self.over_quiet = ratio(quiet);
        self.base = base.map(|b| b.variant.clone());
    }
}

/// The table `braid validate` prints: one line per row, real against
/// simulated.
pub(crate) fn table(rows: &[Row]) -> String {
    let mut out = String::from(
        "| condition | variant | real s (range) | sim s | time | over base real / sim | over quiet real / sim | spread real / sim | moves real / sim |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    let secs = |s: Option<Stats>| {
        s.map_or("no solution".to_string(), |s| {
            format!("{:.3} ({:.3}-{:.3})", s.median, s.min, s.max)
        })
    };
    let compared = |c: Option<Compared>, digits: usize| {
        c.map_or("-".to_string(), |c| {
            format!(
                "{:.d$} / {:.d$} {}",
                c.real,
                c.sim,
                c.verdict.word(),
                d = digits
            )
        })
    };
    for r in rows {
        let sim = r
            .sim
            .map_or("no solution".to_string(), |s| format!("{:.3}", s.median));
        let time = r.time.map_or("-".to_string(), |c| {
            format!(
                "{:+.0}% {}",
                (c.sim / c.real - 1.0) * 100.0,
                c.verdict.word()
            )
        });
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {:.0} / {:.0} | {:.0} / {:.0} |\n",
            r.condition,
            r.variant,
            secs(r.real),
            sim,
            time,
            compared(r.over_base, 3),
            compared(r.over_quiet, 3),
            r.real_spread,
            r.sim_spread,
            r.real_moves,
            r.sim_moves,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(variant: &str, real: &[f64], sim: &[f64]) -> Row {
        Row {
            condition: "quiet".into(),
            variant: variant.into(),
            real: Stats::of(real),
            sim: Stats::of(sim),
            real_spread: 0.0,
            sim_spread: 0.0,
            real_moves: 0.0,
            sim_moves: 0.0,
            time: None,
            base: None,
            over_base: None,
            over_quiet: None,
        }
    }

    #[test]
    fn stats_are_the_median_and_range_of_the_finite_values() {
        let s = Stats::of(&[3.0, f64::NAN, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.n), (2.0, 1.0, 3.0, 3));
        assert_eq!(Stats::of(&[1.0, 2.0]).unwrap().median, 1.5);
        assert_eq!(Stats::of(&[]), None);
    }

    #[test]
    fn a_ratio_within_five_percent_agrees_and_one_across_one_disagrees() {
        assert_eq!(Verdict::of(1.0, 1.04, 0.05, true, false), Verdict::Agrees);
        assert_eq!(Verdict::of(1.2, 1.1, 0.05, true, false), Verdict::SameSign);
        assert_eq!(Verdict::of(1.1, 0.9, 0.05, true, false), Verdict::Disagrees);
        // Unless the machine's own runs cannot tell the side of 1.
        assert_eq!(Verdict::of(1.1, 0.9, 0.05, true, true), Verdict::Scatter);
        // A time has no sign: off, never a sign disagreement.
        assert_eq!(Verdict::of(1.1, 0.5, 0.15, false, false), Verdict::SameSign);
    }

    #[test]
    fn a_sign_disagreement_needs_real_runs_that_do_not_overlap() {
        let base = row("async(4)", &[1.0, 1.05, 1.1], &[1.0]);
        let mut apart = row("async(4)+split(0.001)", &[1.2, 1.25, 1.3], &[0.9]);
        apart.compare(Some(&base), None);
        assert_eq!(apart.over_base.unwrap().verdict, Verdict::Disagrees);
        let mut overlapping = row("async(4)+split(0.001)", &[1.08, 1.25, 1.3], &[0.9]);
        overlapping.compare(Some(&base), None);
        assert_eq!(overlapping.over_base.unwrap().verdict, Verdict::Scatter);
    }

    #[test]
    fn rows_compare_their_times_and_their_ratios_to_base_and_quiet() {
        let base = row("async(1)", &[1.0, 1.0, 1.0], &[0.9]);
        let quiet = row("async(4)", &[1.2], &[1.0]);
        let mut r = row("async(4)", &[1.5, 1.4, 1.6], &[1.1]);
        r.compare(Some(&base), Some(&quiet));
        let time = r.time.unwrap();
        assert_eq!((time.real, time.sim), (1.5, 1.1));
        assert_eq!(time.verdict, Verdict::SameSign); // 27% under
        let b = r.over_base.unwrap();
        assert!((b.real - 1.5).abs() < 1e-12 && (b.sim - 1.1 / 0.9).abs() < 1e-12);
        let q = r.over_quiet.unwrap();
        assert!((q.real - 1.25).abs() < 1e-12 && (q.sim - 1.1).abs() < 1e-12);
        assert_eq!(r.base.as_deref(), Some("async(1)"));
        let t = table(&[r]);
        assert!(
            t.contains("| quiet | async(4) | 1.500 (1.400-1.600) | 1.100 | -27% off |"),
            "{t}"
        );
    }

    #[test]
    fn a_row_without_a_solution_in_one_engine_has_no_verdicts() {
        let mut r = row("async(4)", &[], &[1.0]);
        r.compare(None, None);
        assert_eq!((r.time, r.over_base, r.over_quiet), (None, None, None));
        assert!(table(&[r]).contains("no solution"));
    }
}
