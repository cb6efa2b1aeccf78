//! What a noisy core (or a workload) should cost, forecast before running
//! from the slowest error mode ([`noisy_core`], [`workload()`]): the model
//! behind "When does balancing pay off?" in docs/balancing.md.
//!
//! Jacobi on Laplace's equation converges as its slowest error mode,
//! `sin(pi i / (H + 1)) sin(pi j / (W + 1))` over the interior. A domain
//! updated at `1 - d` of the speed of the others (a core losing a share `d`
//! to noise) slows plain asynchronous iterations by about its share of that
//! mode's energy times its slowdown `d / (1 - d)`: a domain at the edge of
//! the grid weighs little, one in the centre much more. A perfect balancer
//! instead spreads the lost capacity over all T threads: `d / T`. So
//! balancing can pay only where the noisy domain's share of the mode is
//! above `1 / T`, or where the noise is heavy. Measured in the simulator at
//! 2 x 18 (tests/integration/sim.rs): the model says +2.2% for the centre core at 19%
//! (measured +2.0%), +9.2% at 50% (+9.9%), +0.21% next to the source (+0.26%).
//!
//! The same reading covers the application's own imbalance (a `workload`,
//! [`workload()`]). Plain async's time per unit of progress is the
//! mode-weighted mean of the threads' sweep times `sum_t share_t S_t` (the
//! noise forecast above is its special case, `S = 1 / (1 - d)` on one
//! thread). A perfect balancer gives every thread the even sweep, total
//! work over threads `W / T`, except that a subdomain cannot be split: a
//! subdomain heavier than the even share gets a thread to itself and sweeps
//! at its own cost, and the rest share the remaining threads evenly (water
//! filling); its time is again the mode-weighted mean of those sweeps, so
//! a heavy subdomain where the mode weighs little costs it little.

use serde::{Deserialize, Serialize};

use crate::problem::Problem;
use crate::workload::Workload;

/// The model's forecast for one noisy thread.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Forecast {
    /// The thread whose domain shares its core with the noise.
    pub thread: usize,
    /// The share of the core the noise takes.
    pub duty: f64,
    /// Its domain's share of the slowest mode's energy.
    pub mode_share: f64,
    /// Predicted time-to-solution increase of plain async.
    pub plain_async_loss: f64,
    /// Predicted increase with a perfect balancer (the capacity share).
    pub ideal_balanced_loss: f64,
}

/// `sum of sin^2(pi i / (n + 1))` for `i` in `from..to` (1-based rows).
fn sin2(n: usize, from: usize, to: usize) -> f64 {
    (from..to)
        .map(|i| {
            (std::f64::consts::PI * i as f64 / (n + 1) as f64)
                .sin()
                .powi(2)
        })
        .sum()
}

/// Domain `d`'s share of the slowest mode's energy (the mode is a product
/// of sines, so the share is a product of row and column shares).
///
/// ```
/// use braid::Problem;
/// let p = Problem::new(24, 36, 4).unwrap(); // 6 x 6 domains
/// let centre = braid::mode_share(&p, 14);
/// let corner = braid::mode_share(&p, 0);
/// assert!(centre > 0.09 && corner < 0.001);
/// ```
pub fn mode_share(p: &Problem, d: usize) -> f64 {
    let (r, c) = (d / p.cols, d % p.cols);
    let n = p.domain_size;
    let rows = sin2(p.height, 1 + r * n, 1 + (r + 1) * n) / sin2(p.height, 1, p.height + 1);
    let cols = sin2(p.width, 1 + c * n, 1 + (c + 1) * n) / sin2(p.width, 1, p.width + 1);
    rows * cols
}

/// Sums of [`sin2`] along one side of the grid, each span's computed once
/// (while no span of another length from the same line comes between)
/// and in the same order (so every share is the same to the bit as
/// [`mode_share`]'s and [`sub_share`]'s), over the whole side's once: a
/// share of every domain or subdomain costs the side and its distinct
/// spans, not the side for each (at 65,536 threads that was 10^10 sines).
struct SideSums {
    n: usize,
    total: f64,
    /// By the span's first line: the last span asked from there and its
    /// sum (a grid's subdomains share a few spans, asked in runs).
    spans: Vec<Option<(usize, f64)>>,
}

impl SideSums {
    fn new(n: usize) -> SideSums {
        SideSums {
            n,
            total: sin2(n, 1, n + 1),
            spans: vec![None; n + 2],
        }
    }

    /// `sin2(n, from, to) / sin2(n, 1, n + 1)`.
    fn share(&mut self, from: usize, to: usize) -> f64 {
        let n = self.n;
        let sum = match self.spans.get_mut(from) {
            Some(Some((t, sum))) if *t == to => *sum,
            Some(slot) => slot.insert((to, sin2(n, from, to))).1,
            None => sin2(n, from, to),
        };
        sum / self.total
    }
}

/// Every domain's [`mode_share`], in order.
pub(crate) fn mode_shares(p: &Problem) -> Vec<f64> {
    let (mut rows, mut cols) = (SideSums::new(p.height), SideSums::new(p.width));
    let n = p.domain_size;
    (0..p.threads)
        .map(|d| {
            let (r, c) = (d / p.cols, d % p.cols);
            rows.share(1 + r * n, 1 + (r + 1) * n) * cols.share(1 + c * n, 1 + (c + 1) * n)
        })
        .collect()
}

/// Every subdomain's [`sub_share`], in order (collected straight into
/// what keeps them: a vector, or a run's shared slice).
pub(crate) fn sub_shares<C: FromIterator<f64>>(p: &Problem) -> C {
    let (mut rows, mut cols) = (SideSums::new(p.height), SideSums::new(p.width));
    p.subs
        .iter()
        .map(|g| rows.share(g.row0, g.row0 + g.height) * cols.share(g.col0, g.col0 + g.width))
        .collect()
}

/// Subdomain `g`'s share of the slowest mode's energy (as [`mode_share`],
/// over its own rows and columns; `row0` and `col0` are 1-based).
#[cfg(test)]
pub(crate) fn sub_share(p: &Problem, g: &crate::problem::SubdomainGeom) -> f64 {
    let rows = sin2(p.height, g.row0, g.row0 + g.height) / sin2(p.height, 1, p.height + 1);
    let cols = sin2(p.width, g.col0, g.col0 + g.width) / sin2(p.width, 1, p.width + 1);
    rows * cols
}

/// The forecast for noise taking `duty` of thread `thread`'s core.
pub(crate) fn noisy_core(p: &Problem, thread: usize, duty: f64) -> Forecast {
    let share = mode_share(p, thread);
    Forecast {
        thread,
        duty,
        mode_share: share,
        plain_async_loss: share * duty / (1.0 - duty),
        ideal_balanced_loss: duty / p.threads as f64,
    }
}

/// The model's forecast for a run's workload (the top of this file).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WorkloadForecast {
    /// Total work over a uniform grid's: the time every strategy pays
    /// whatever the balance.
    pub work: f64,
    /// The heaviest thread's sweep over the even sweep `W / T`, as plain
    /// async deals the domains.
    pub heaviest_thread: f64,
    /// Predicted time-to-solution increase of plain async over a perfect
    /// spreading of the same work (`W / T` per sweep).
    pub plain_async_loss: f64,
    /// The increase a perfect balancer cannot avoid, over the even sweep:
    /// 0 when every subdomain fits in a thread's even share; a subdomain
    /// that does not sweeps alone at its own cost, weighted by its share of
    /// the slowest mode (the top of this file).
    pub ideal_balanced_loss: f64,
}

impl WorkloadForecast {
    /// Plain async's predicted time to solution over a uniform run's.
    pub fn plain_async_time(&self) -> f64 {
        self.work * (1.0 + self.plain_async_loss)
    }

    /// A perfect balancer's predicted time to solution over a uniform
    /// (plain) run's.
    pub fn ideal_balanced_time(&self) -> f64 {
        self.work * (1.0 + self.ideal_balanced_loss)
    }
}

/// The forecast for `workload` on `p` at equal core speeds, each quantity
/// averaged over progress `0..progress` (a workload that moves or grows
/// changes along the run; a fixed one is the same throughout).
///
/// ```
/// use braid::{Problem, Workload, WorkloadSpec, forecast_workload};
/// let p = Problem::new(24, 36, 4).unwrap();
/// let spec: WorkloadSpec = "hotspot(4, 0.5, 0.5, 0.1)".parse().unwrap();
/// let w = Workload::build(&spec, &p, 1).unwrap();
/// let f = forecast_workload(&p, &w, 1000.0);
/// assert!(f.plain_async_loss > f.ideal_balanced_loss);
/// ```
pub fn workload(p: &Problem, workload: &Workload, progress: f64) -> WorkloadForecast {
    // Midpoints of equal steps of progress (one for a fixed workload).
    let steps = if workload.moves() { 32 } else { 1 };
    let shares = mode_shares(p);
    let sub_shares: Vec<f64> = sub_shares(p);
    let uniform: f64 = p.subs.iter().map(|g| g.cells() as f64).sum();
    let mut sum = WorkloadForecast {
        work: 0.0,
        heaviest_thread: 0.0,
        plain_async_loss: 0.0,
        ideal_balanced_loss: 0.0,
    };
    for k in 0..steps {
        let at = progress.max(0.0) * (k as f64 + 0.5) / steps as f64;
        let mut sweep = vec![0.0; p.threads];
        let mut objects: Vec<(f64, f64)> = Vec::with_capacity(p.subs.len());
        for (s, g) in p.subs.iter().enumerate() {
            let w = workload.factor(s, at) * g.cells() as f64;
            sweep[g.domain] += w;
            objects.push((w, sub_shares[s]));
        }
        let total: f64 = sweep.iter().sum();
        let even = total / p.threads as f64;
        let weighted: f64 = shares.iter().zip(&sweep).map(|(a, s)| a * s).sum();
        sum.work += total / uniform;
        sum.heaviest_thread += sweep.iter().copied().fold(0.0, f64::max) / even;
        sum.plain_async_loss += weighted / even - 1.0;
        sum.ideal_balanced_loss += water_filled(objects, p.threads) / even - 1.0;
    }
    let n = steps as f64;
    WorkloadForecast {
        work: sum.work / n,
        heaviest_thread: sum.heaviest_thread / n,
        plain_async_loss: sum.plain_async_loss / n,
        ideal_balanced_loss: sum.ideal_balanced_loss / n,
    }
}

/// The mode-weighted sweep of a perfect balancer over `objects` (load,
/// mode share) on `threads` threads: each object heavier than the even
/// share of what is left sweeps alone, the rest evenly.
fn water_filled(mut objects: Vec<(f64, f64)>, threads: usize) -> f64 {
    objects.sort_by(|a, b| b.0.total_cmp(&a.0));
    let (mut left, mut k) = (objects.iter().map(|o| o.0).sum::<f64>(), threads);
    let mut weighted = 0.0;
    let mut i = 0;
    while i < objects.len() && k > 1 && objects[i].0 > left / k as f64 {
        weighted += objects[i].1 * objects[i].0;
        left -= objects[i].0;
        k -= 1;
        i += 1;
    }
    let rest: f64 = objects[i..].iter().map(|o| o.1).sum();
    weighted + rest * left / k.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_computed_together_are_the_ones_computed_alone_to_the_bit() {
        let p = Problem::new(24, 36, 4).unwrap();
        let alone: Vec<u64> = (0..36).map(|d| mode_share(&p, d).to_bits()).collect();
        let together: Vec<u64> = mode_shares(&p).iter().map(|x| x.to_bits()).collect();
        assert_eq!(alone, together);
        let alone: Vec<u64> = p.subs.iter().map(|g| sub_share(&p, g).to_bits()).collect();
        let together: Vec<u64> = sub_shares::<Vec<f64>>(&p)
            .iter()
            .map(|x| x.to_bits())
            .collect();
        assert_eq!(alone, together);
    }

    #[test]
    fn shares_sum_to_one_and_the_centre_weighs_most() {
        let p = Problem::new(24, 36, 4).unwrap();
        let shares: Vec<f64> = (0..36).map(|d| mode_share(&p, d)).collect();
        assert!((shares.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        let max = shares.iter().copied().fold(0.0, f64::max);
        assert!((max - shares[14]).abs() < 1e-12); // one of the four central domains
        assert!(shares[2] < 0.01 && shares[2] > 0.008, "{}", shares[2]);
    }

    #[test]
    fn the_forecast_matches_the_simulated_losses_at_paper_scale() {
        // Simulated at 2 x 18 (tests/integration/sim.rs): +2.04% and +9.89% for the
        // centre core at 19% and 50%, +0.26% next to the source.
        let p = Problem::new(24, 36, 4).unwrap();
        for (thread, duty, measured) in [(14, 0.19, 0.0204), (14, 0.5, 0.0989), (2, 0.19, 0.0026)] {
            let f = noisy_core(&p, thread, duty);
            let ratio = f.plain_async_loss / measured;
            assert!((0.7..1.3).contains(&ratio), "{thread} {duty}: {f:?}");
        }
        assert!((noisy_core(&p, 0, 0.19).ideal_balanced_loss - 0.19 / 36.0).abs() < 1e-15);
    }

    #[test]
    fn subdomain_shares_sum_to_their_domains() {
        let p = Problem::new(24, 36, 4).unwrap();
        for d in [0, 14, 35] {
            let subs: f64 = p
                .subs
                .iter()
                .filter(|g| g.domain == d)
                .map(|g| sub_share(&p, g))
                .sum();
            assert!((subs - mode_share(&p, d)).abs() < 1e-12, "{d}");
        }
    }

    #[test]
    fn a_perfect_balancer_pays_for_an_object_it_cannot_split_by_its_mode_share() {
        // Two threads, three objects: one of 4 at half the mode, two of 1.
        // Even is 3; the heavy one sweeps alone at 4 and the two light ones
        // share the other thread at 2: 0.5 x 4 + 0.5 x 2 = 3.
        assert!((water_filled(vec![(1.0, 0.25), (4.0, 0.5), (1.0, 0.25)], 2) - 3.0).abs() < 1e-12);
        // Where the heavy one weighs little in the mode, it costs little.
        assert!(water_filled(vec![(1.0, 0.45), (4.0, 0.1), (1.0, 0.45)], 2) < 3.0);
        // Nothing heavier than even: the even sweep.
        assert!((water_filled(vec![(1.0, 0.5), (1.0, 0.5)], 2) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn the_workload_forecast_matches_the_simulated_hotspot_at_paper_scale() {
        // Simulated at 2 x 18 (tests/integration/workload.rs's settings, 2026-11-28):
        // hotspot(4, 0.5, 0.5, 0.1) costs plain async(4) 0.546 s against a
        // uniform 0.415 s (x1.316).
        let p = Problem::new(24, 36, 4).unwrap();
        let spec: crate::workload::WorkloadSpec = "hotspot(4, 0.5, 0.5, 0.1)".parse().unwrap();
        let w = Workload::build(&spec, &p, 0).unwrap();
        let f = workload(&p, &w, 15_000.0);
        let ratio = f.plain_async_time() / (0.546 / 0.415);
        assert!((0.95..1.05).contains(&ratio), "{f:?}");
        // Every subdomain fits in a thread's even share: no unavoidable loss.
        assert!(f.ideal_balanced_loss.abs() < 1e-12, "{f:?}");
    }
}
