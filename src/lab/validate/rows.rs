//! What `braid validate` compares: each variant's runs in both engines
//! under one condition ([`Row`]), the verdicts on them (against the
//! machine's own 95% intervals as well as a tolerance), and the table it
//! prints.

use serde::{Deserialize, Serialize};

use crate::lab::bootstrap::{interval, median};

/// How far the simulator may be from the machine and still agree, unless
/// the machine's own interval is wider: ratios (sub-splitting, balanced
/// over plain, noisy over quiet) within 5%, absolute times to solution
/// within 15%.
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
        let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        let min = v.iter().copied().reduce(f64::min)?;
        Some(Stats {
            median: median(v.iter().copied()),
            min,
            max: v.iter().copied().fold(min, f64::max),
            n: v.len(),
        })
    }
}

/// What the two engines say of one quantity, and whether they agree.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct Compared {
    pub real: f64,
    pub sim: f64,
    /// The machine's 95% bootstrap interval for `real`, over its runs (a
    /// ratio's runs drawn by round, both sides of it together); `None`
    /// where no resample has a value.
    pub interval: Option<(f64, f64)>,
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
    /// Outside the tolerance and the interval, a ratio on the other side
    /// of 1 than the machine's, but the machine's own runs cannot tell its
    /// side: its interval holds 1.
    Scatter,
    /// Outside the tolerance and the interval, and a ratio says faster in
    /// one engine and slower in the other, where the machine's interval
    /// lies on one side of 1.
    Disagrees,
}

impl Verdict {
    /// `sim` against `real`: it agrees within `tolerance` of it (relative)
    /// or inside the machine's `interval` for it, whichever is wider; for
    /// a ratio (`around_one`), also whether both are on the same side of
    /// 1, and whether the machine's interval can tell.
    pub(crate) fn of(
        real: f64,
        sim: f64,
        tolerance: f64,
        around_one: bool,
        interval: Option<(f64, f64)>,
    ) -> Verdict {
        let inside = |x: f64| interval.is_some_and(|(lo, hi)| lo <= x && x <= hi);
        if (sim / real - 1.0).abs() <= tolerance || inside(sim) {
            Verdict::Agrees
        } else if !around_one || (real >= 1.0) == (sim >= 1.0) {
            Verdict::SameSign
        } else if inside(1.0) {
            Verdict::Scatter
        } else {
            Verdict::Disagrees
        }
    }

    /// The verdict as the table and the figure word it.
    pub(crate) fn word(self) -> &'static str {
        match self {
            Verdict::Agrees => "agrees",
            Verdict::SameSign => "off",
            Verdict::Scatter => "off (scatter)",
            Verdict::Disagrees => "SIGN",
        }
    }
}

impl Compared {
    fn new(
        real: f64,
        sim: f64,
        tolerance: f64,
        around_one: bool,
        interval: Option<(f64, f64)>,
    ) -> Compared {
        Compared {
            real,
            sim,
            interval,
            verdict: Verdict::of(real, sim, tolerance, around_one, interval),
        }
    }

    /// The interval's half width over the value: the smallest relative
    /// difference the machine's runs resolve.
    pub(crate) fn resolution(&self) -> Option<f64> {
        self.interval.map(|(lo, hi)| (hi - lo) / 2.0 / self.real)
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
    /// Each real run's time to solution, round by round (`None`: it did
    /// not reach the tolerance): what the machine's intervals are drawn
    /// from, a ratio's two rows by the same rounds.
    #[serde(default)]
    pub real_runs: Vec<Option<f64>>,
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
    /// base row and to the quiet row when given, each against the
    /// machine's interval for it.
    pub(crate) fn compare(&mut self, base: Option<&Row>, quiet: Option<&Row>) {
        let of = |s: Option<Stats>| s.map(|s| s.median);
        let pair = |r: &Row| Some((of(r.real)?, of(r.sim)?));
        let runs = &self.real_runs;
        // The median of the drawn rounds that reached the tolerance.
        let drawn = |runs: &[Option<f64>], ix: &[usize]| median(ix.iter().filter_map(|&i| runs[i]));
        let own_interval = interval(runs.len(), |ix| drawn(runs, ix));
        self.time =
            pair(self).map(|(r, s)| Compared::new(r, s, TIME_TOLERANCE, false, own_interval));
        let own = pair(self);
        let ratio = |other: Option<&Row>| {
            let other = other?;
            let (r, s) = own?;
            let (r0, s0) = pair(other)?;
            // Drawn by round: a drift the whole round shared leaves the
            // ratio alone.
            let rounds = runs.len().min(other.real_runs.len());
            let spread = interval(rounds, |ix| drawn(runs, ix) / drawn(&other.real_runs, ix));
            Some(Compared::new(r / r0, s / s0, RATIO_TOLERANCE, true, spread))
        };
        self.over_base = ratio(base);
        self.over_quiet = ratio(quiet);
        self.base = base.map(|b| b.variant.clone());
    }
}

/// The table `braid validate` prints: one line per row, real against
/// simulated, each real value with the machine's 95% interval for it.
pub(crate) fn table(rows: &[Row]) -> String {
    let mut out = String::from(
        "| condition | variant | real s [95%] | sim s | time | over base real [95%] / sim | over quiet real [95%] / sim | spread real / sim | moves real / sim |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    let within = |x: f64, i: Option<(f64, f64)>, d: usize| match i {
        Some((lo, hi)) => format!("{x:.d$} [{lo:.d$}, {hi:.d$}]"),
        None => format!("{x:.d$}"),
    };
    let compared = |c: Option<Compared>| {
        c.map_or("-".to_string(), |c| {
            format!(
                "{} / {:.3} {}",
                within(c.real, c.interval, 3),
                c.sim,
                c.verdict.word()
            )
        })
    };
    for r in rows {
        let real = match (r.real, r.time) {
            (None, _) => "no solution".to_string(),
            (Some(s), t) => within(s.median, t.and_then(|t| t.interval), 3),
        };
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
            real,
            sim,
            time,
            compared(r.over_base),
            compared(r.over_quiet),
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
            real_runs: real.iter().map(|&t| Some(t)).collect(),
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
        let tight = Some((1.09, 1.11));
        assert_eq!(Verdict::of(1.0, 1.04, 0.05, true, None), Verdict::Agrees);
        assert_eq!(Verdict::of(1.2, 1.1, 0.05, true, None), Verdict::SameSign);
        assert_eq!(Verdict::of(1.1, 0.9, 0.05, true, tight), Verdict::Disagrees);
        // Unless the machine's own interval cannot tell the side of 1.
        let wide = Some((0.95, 1.3));
        assert_eq!(Verdict::of(1.1, 0.9, 0.05, true, wide), Verdict::Scatter);
        // A time has no sign: off, never a sign disagreement.
        assert_eq!(Verdict::of(1.1, 0.5, 0.15, false, None), Verdict::SameSign);
    }

    #[test]
    fn inside_the_machines_interval_agrees_where_it_is_wider_than_the_tolerance() {
        // 12% off, outside 5%, but inside what the machine resolves.
        assert_eq!(
            Verdict::of(1.2, 1.056, 0.05, true, Some((1.0, 1.4))),
            Verdict::Agrees
        );
        // The interval narrower than the tolerance takes nothing away.
        assert_eq!(
            Verdict::of(1.2, 1.25, 0.05, true, Some((1.19, 1.21))),
            Verdict::Agrees
        );
        assert_eq!(
            Verdict::of(1.2, 1.3, 0.05, true, Some((1.19, 1.21))),
            Verdict::SameSign
        );
    }

    #[test]
    fn a_sign_disagreement_needs_an_interval_on_one_side_of_one() {
        // Slower than its base in every round: the machine can tell.
        let base = row("async(4)", &[1.0, 1.05, 1.1, 1.0, 1.05], &[1.0]);
        let mut apart = row(
            "async(4)+split(0.001)",
            &[1.2, 1.25, 1.3, 1.2, 1.25],
            &[0.9],
        );
        apart.compare(Some(&base), None);
        let b = apart.over_base.unwrap();
        assert_eq!(b.verdict, Verdict::Disagrees, "{b:?}");
        assert!(b.interval.unwrap().0 > 1.0);
        // Faster in one round of five: it cannot.
        let mut mixed = row(
            "async(4)+split(0.001)",
            &[0.95, 1.25, 1.3, 1.2, 1.25],
            &[0.9],
        );
        mixed.compare(Some(&base), None);
        assert_eq!(mixed.over_base.unwrap().verdict, Verdict::Scatter);
    }

    #[test]
    fn a_ratios_interval_draws_both_rows_by_round() {
        // The machine slowed down over the rounds, both variants alike:
        // their times scatter by 50%, their ratio not at all.
        let base = row("async(4)", &[1.0, 1.2, 1.5, 1.1, 1.3], &[1.0]);
        let times: Vec<f64> = [1.0, 1.2, 1.5, 1.1, 1.3].iter().map(|t| 1.1 * t).collect();
        let mut r = row("async(4)+split(0.001)", &times, &[1.0]);
        r.compare(Some(&base), None);
        let b = r.over_base.unwrap();
        let (lo, hi) = b.interval.unwrap();
        assert!((lo - 1.1).abs() < 1e-9 && (hi - 1.1).abs() < 1e-9, "{b:?}");
        // The time's own interval shows the scatter.
        let (lo, hi) = r.time.unwrap().interval.unwrap();
        assert!(hi / lo > 1.15, "{lo} {hi}");
        assert!(r.time.unwrap().resolution().unwrap() > 0.07);
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
            t.contains("| quiet | async(4) | 1.500 [1.400, 1.600] | 1.100 | -27% off |"),
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
