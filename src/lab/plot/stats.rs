//! Order statistics for the plots (linear interpolation between ranks, as
//! numpy's default, so numbers match a quick check in Python).

/// The q-quantile (0..=1) of `v`; None when empty.
pub(super) fn quantile(v: &[f64], q: f64) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let pos = q.clamp(0.0, 1.0) * (s.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    Some(s[lo] + (s[hi] - s[lo]) * (pos - lo as f64))
}

/// Minimum, 25th, 50th, 75th percentile and maximum.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Five {
    pub min: f64,
    pub q1: f64,
    pub median: f64,
    pub q3: f64,
    pub max: f64,
}

impl Five {
    pub(super) fn of(v: &[f64]) -> Option<Five> {
        Some(Five {
            min: quantile(v, 0.0)?,
            q1: quantile(v, 0.25)?,
            median: quantile(v, 0.5)?,
            q3: quantile(v, 0.75)?,
            max: quantile(v, 1.0)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_like_numpy() {
        let v = [4.0, 1.0, 3.0, 2.0];
        assert_eq!(quantile(&v, 0.5), Some(2.5));
        assert_eq!(quantile(&v, 0.25), Some(1.75));
        assert_eq!(quantile(&v, 1.0), Some(4.0));
        assert_eq!(quantile(&[], 0.5), None);
        let f = Five::of(&[7.0]).unwrap();
        assert_eq!((f.min, f.median, f.max), (7.0, 7.0, 7.0));
    }
}
