//! Timings of the engines' own parts on this machine, for the simulator's
//! calibration (`braid sim --calibrate`, the program's): a subdomain's
//! update on its own, a moved subdomain's first update on another core,
//! a barrier crossing. They time the very code the runtime runs, which is
//! why they live beside it rather than in the program.

use std::time::Instant;

use crate::policy::jitter::median;
use crate::problem::{Neighbour, Problem, SubdomainGeom};
use crate::runtime::{StopBarrier, StopFlag};
use crate::subdomain::{EdgeVersion, Subdomain, Subdomains};

/// Nanoseconds per update of `p`'s subdomains, each on its own (one
/// thread, the grid to itself), with the residual of `round` if given:
/// one sweep of them all to warm up, then the median of 9 sweeps.
pub fn update_ns(p: &Problem, round: Option<u64>) -> f64 {
    let subs = Subdomains::standalone(p);
    let update = |s: usize| {
        subs[s]
            .lock()
            .update(&subs, EdgeVersion::Latest, round, 1.0, || false, || {});
    };
    (0..subs.len()).for_each(update);
    let mut sweeps: Vec<f64> = (0..9)
        .map(|_| {
            let t = Instant::now();
            (0..subs.len()).for_each(update);
            t.elapsed().as_nanos() as f64 / subs.len() as f64
        })
        .collect();
    median(&mut sweeps)
}

/// The subdomain of `p` with the most neighbouring subdomains.
fn inner(p: &Problem) -> usize {
    let subs = |g: &SubdomainGeom| {
        g.neighbours
            .iter()
            .filter(|n| matches!(n, Neighbour::Sub(_)))
            .count()
    };
    p.subs.iter().max_by_key(|g| subs(g)).map_or(0, |g| g.id)
}

/// One update of `s` as a worker makes it, without the residual.
fn update_once(subs: &[Subdomain], s: usize) {
    subs[s]
        .lock()
        .update(subs, EdgeVersion::Latest, None, 1.0, || false, || {});
}

/// The extra nanoseconds per cell of a subdomain's first update on CPU
/// `to` after CPU `from` updated it (its cells in `from`'s caches), against
/// `to`'s next updates of it: a 150 x 150 subdomain, the median of 15
/// moves. The updating thread has just updated another subdomain, so its
/// code is warm, as a worker's is.
pub fn cold_cell_ns(from: usize, to: usize) -> f64 {
    let p = Problem::new(300, 4, 4).expect("valid");
    let subs = Subdomains::standalone(&p);
    let s = inner(&p);
    let other = (s + 1) % subs.len();
    let cells = subs[s].geom.cells() as f64;
    let pinned = |cpu: usize, work: &(dyn Fn() -> f64 + Sync)| -> f64 {
        std::thread::scope(|sc| {
            sc.spawn(|| {
                let _ = core_affinity::set_for_current(core_affinity::CoreId { id: cpu });
                work()
            })
            .join()
            .unwrap_or(0.0)
        })
    };
    let mut extra: Vec<f64> = (0..15)
        .map(|_| {
            pinned(from, &|| {
                for _ in 0..5 {
                    update_once(&subs, s);
                }
                0.0
            });
            pinned(to, &|| {
                for _ in 0..5 {
                    update_once(&subs, other);
                }
                let t = Instant::now();
                update_once(&subs, s);
                let cold = t.elapsed().as_nanos() as f64;
                let warm = median(
                    &mut (0..5)
                        .map(|_| {
                            let t = Instant::now();
                            update_once(&subs, s);
                            t.elapsed().as_nanos() as f64
                        })
                        .collect::<Vec<f64>>(),
                );
                cold - warm
            })
        })
        .collect();
    (median(&mut extra) / cells).max(0.0)
}

/// A barrier crossing with two threads.
///
/// The caller is pinned to `first`; the other thread goes to `other`, a
/// CPU of another core. (Until 2026-11-29 it asked for the last CPU the
/// caller's own affinity allowed, which the caller's pin had narrowed to
/// `first`: both threads shared one core and a crossing took a context
/// switch, 0.5 ms on the Zen 5 VM.)
pub fn barrier_ns(other: Option<usize>) -> f64 {
    let barrier = StopBarrier::new(2);
    let stop = StopFlag::default();
    let crossings = 20_000;
    let t = Instant::now();
    std::thread::scope(|sc| {
        sc.spawn(|| {
            if let Some(id) = other {
                core_affinity::set_for_current(core_affinity::CoreId { id });
            }
            for _ in 0..crossings {
                barrier.wait(&stop, || None);
            }
        });
        for _ in 0..crossings {
            barrier.wait(&stop, || None);
        }
    });
    t.elapsed().as_nanos() as f64 / crossings as f64
}
