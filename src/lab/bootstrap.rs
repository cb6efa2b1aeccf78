//! Percentile-bootstrap intervals: how well a handful of runs pins a
//! statistic down. Resamples are drawn from a fixed seed, so a table
//! printed twice from the same runs shows the same intervals.

/// Resamples drawn for an interval.
pub(crate) const RESAMPLES: usize = 4000;

/// The 95% percentile-bootstrap interval of `statistic` over `n`
/// observations: `statistic` is handed each resample as the indices it
/// drew (with replacement, `n` of them), so that paired observations
/// (two variants' runs of one interleaved round) are drawn together.
/// `None` for no observations; a resample whose statistic is not finite
/// is left out.
pub(crate) fn interval(n: usize, statistic: impl Fn(&[usize]) -> f64) -> Option<(f64, f64)> {
    if n == 0 {
        return None;
    }
    let mut rng = braid::SplitMix64(0x5EED_B007);
    let mut drawn = vec![0; n];
    let mut values: Vec<f64> = (0..RESAMPLES)
        .filter_map(|_| {
            for d in drawn.iter_mut() {
                *d = rng.below(n);
            }
            Some(statistic(&drawn)).filter(|v| v.is_finite())
        })
        .collect();
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let last = values.len() - 1;
    let at = |q: f64| values[((q * last as f64).round() as usize).min(last)];
    Some((at(0.025), at(0.975)))
}

/// The median of `values` (NaN for none).
pub(crate) fn median(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.into_iter().collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_three_runs_has_an_interval_within_their_range() {
        let times = [1.0, 1.2, 1.1];
        let (lo, hi) = interval(3, |ix| median(ix.iter().map(|&i| times[i]))).unwrap();
        assert!(
            (1.0..=1.1).contains(&lo) && (1.1..=1.2).contains(&hi),
            "{lo} {hi}"
        );
        assert_eq!(median([2.0, 1.0, 4.0, 3.0]), 2.5);
        assert!(median([]).is_nan());
    }

    #[test]
    fn an_interval_narrows_with_more_runs_and_is_the_same_each_time() {
        // The same scatter, four times the runs: about half the width.
        let few: Vec<f64> = (0..6).map(|i| 1.0 + 0.1 * (i % 3) as f64).collect();
        let many: Vec<f64> = (0..24).map(|i| 1.0 + 0.1 * (i % 3) as f64).collect();
        let width = |v: &[f64]| {
            let (lo, hi) = interval(v.len(), |ix| {
                ix.iter().map(|&i| v[i]).sum::<f64>() / ix.len() as f64
            })
            .unwrap();
            hi - lo
        };
        assert!(
            width(&many) < 0.65 * width(&few),
            "{} {}",
            width(&many),
            width(&few)
        );
        assert_eq!(width(&few), width(&few));
        assert_eq!(interval(0, |_| 1.0), None);
        assert_eq!(interval(1, |_| 0.3), Some((0.3, 0.3)));
    }

    #[test]
    fn paired_draws_keep_a_shared_drift_out_of_a_ratio() {
        // Both variants drift together over the rounds, one 10% slower
        // throughout: drawn in pairs, their ratio is pinned at 1.1.
        let base: Vec<f64> = (0..8).map(|i| 1.0 + 0.1 * i as f64).collect();
        let slower: Vec<f64> = base.iter().map(|t| 1.1 * t).collect();
        let ratio = |ix: &[usize]| {
            median(ix.iter().map(|&i| slower[i])) / median(ix.iter().map(|&i| base[i]))
        };
        let (lo, hi) = interval(8, ratio).unwrap();
        assert!(
            (lo - 1.1).abs() < 1e-9 && (hi - 1.1).abs() < 1e-9,
            "{lo} {hi}"
        );
    }

    #[test]
    fn resamples_whose_statistic_is_not_finite_are_left_out() {
        assert_eq!(interval(3, |_| f64::NAN), None);
    }
}
