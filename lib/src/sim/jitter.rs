//! A quiet core's wandering speed (`sim_jitter`): a factor on its speed in
//! each window of virtual time, drawn from the seed, the core and the
//! window, times a lasting factor of the core, so that it costs nothing to
//! hold and the same run gives the same bytes.

use super::clock::{RANGE_PS, step};
use crate::engine::Jitter;
use crate::rng::SplitMix64;

/// Slowest factor a window gets: a draw far out in the tail slows the core,
/// it never stops it.
const MIN_FACTOR: f64 = 0.1;

/// One core's jitter, ready to time work.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Wander {
    sd: f64,
    window_ps: u64,
    /// The seed and the core, mixed.
    key: u64,
    /// The core's lasting factor.
    lasting: f64,
}

impl Wander {
    /// Core `core`'s jitter under `seed`.
    pub(crate) fn new(jitter: Jitter, seed: u64, core: usize) -> Wander {
        let mut mix = SplitMix64(seed ^ (core as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93));
        let key = mix.next();
        Wander {
            sd: jitter.sd,
            window_ps: step(jitter.every_s * 1e12).max(1),
            key,
            lasting: (1.0 + jitter.core_sd * normal(&mut mix)).max(MIN_FACTOR),
        }
    }

    /// The speed factor of window `k`: the core's lasting factor times
    /// `1 + sd x z`, `z` a standard normal drawn from the window.
    pub(crate) fn factor(&self, k: u64) -> f64 {
        let mut r = SplitMix64(self.key ^ k.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        self.lasting * (1.0 + self.sd * normal(&mut r)).max(MIN_FACTOR)
    }

    /// When work of `work_ps` (at factor 1) that starts at `start` ends,
    /// each window's factor applying to the part done in it.
    pub(crate) fn finish(&self, start: u64, work_ps: f64) -> u64 {
        let w = self.window_ps;
        let mut k = start / w;
        let (mut t, mut left) = (start as f64, work_ps);
        loop {
            let f = self.factor(k);
            let end = ((k + 1) * w) as f64;
            let room = (end - t) * f;
            if left <= room || end >= RANGE_PS as f64 {
                return step(t + left / f);
            }
            left -= room;
            t = end;
            k += 1;
        }
    }
}

/// A standard normal draw (Box-Muller, from two uniform draws).
fn normal(r: &mut SplitMix64) -> f64 {
    let u1 = 1.0 - r.unit(); // (0, 1]: its logarithm is finite
    let u2 = r.unit();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wander(sd: f64) -> Wander {
        Wander::new(
            Jitter {
                sd,
                every_s: 1e-3,
                core_sd: 0.0,
            },
            7,
            0,
        )
    }

    #[test]
    fn the_factors_have_the_asked_spread_around_one() {
        let w = wander(0.05);
        let f: Vec<f64> = (0..20_000).map(|k| w.factor(k)).collect();
        let mean = f.iter().sum::<f64>() / f.len() as f64;
        let sd = (f.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / f.len() as f64).sqrt();
        assert!((mean - 1.0).abs() < 0.002, "mean {mean}");
        assert!((sd - 0.05).abs() < 0.002, "sd {sd}");
    }

    #[test]
    fn work_within_a_window_takes_its_factor_and_across_windows_each_ones_share() {
        let w = wander(0.2);
        let (f0, f1) = (w.factor(0), w.factor(1));
        assert_ne!(f0, f1, "each window draws its own");
        assert_eq!(w.finish(0, 1e6), step(1e6 / f0));
        // Work that fills window 0 at its factor, then 1e6 ps more in window 1.
        let window = 1e9; // 1 ms in ps
        let end = w.finish(0, window * f0 + 1e6);
        assert_eq!(end, step(window + 1e6 / f1));
    }

    #[test]
    fn cores_and_seeds_draw_apart_and_the_same_ones_draw_the_same() {
        let j = Jitter {
            sd: 0.1,
            every_s: 1e-3,
            core_sd: 0.0,
        };
        let a = Wander::new(j, 1, 0);
        assert_eq!(a.factor(5), Wander::new(j, 1, 0).factor(5));
        assert_ne!(a.factor(5), Wander::new(j, 1, 1).factor(5));
        assert_ne!(a.factor(5), Wander::new(j, 2, 0).factor(5));
    }
}
