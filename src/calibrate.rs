//! `braid sim --calibrate`: measures on this machine the costs the simulator
//! charges, and prints them as `config.txt` lines.

use std::fmt;
use std::time::Instant;

use crate::engine::Residual;
use crate::engine::SimCosts;
use crate::kernel::{self, Block, Buffer};
use crate::policy::{Policy, Progressive, Scope, Snapshot};
use crate::problem::Problem;
use crate::runtime::{StopBarrier, StopFlag};
use crate::subdomain::{self, EdgeVersion};

/// Measured costs, and how.
pub(crate) struct Measured(SimCosts);

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Takes about a second.
pub(crate) fn measure() -> Measured {
    core_affinity::set_for_current(core_affinity::CoreId { id: 0 });
    let mut costs = crate::plan::sim_costs(&crate::config::Config::default());
    costs.cell_ns = kernel_ns_per_cell();
    costs.residual_factor = residual_factor();
    costs.update_ns = update_ns(costs.cell_ns);
    costs.balancer_ns = balancer_ns();
    costs.barrier_ns = barrier_ns();
    costs.noise_iter_ns = braid_noise::Calibration::measure().ns_per_iter;
    Measured(costs)
}

/// The paper's split: a 150 x 150 subdomain, with its halo.
const SIDE: usize = 150;

/// Two buffers laid out as a subdomain's cells are.
fn buffers() -> (Buffer, Buffer) {
    let a = Buffer::new(Block::padded(SIDE, SIDE), 1.0);
    (a.clone(), a)
}

/// Seconds of `sweeps` sweeps, plain or with the residual fused in.
fn time_sweeps(a: &mut Buffer, b: &mut Buffer, sweeps: usize, residual: bool) -> f64 {
    let block = a.block();
    let t = Instant::now();
    for _ in 0..sweeps {
        if residual {
            std::hint::black_box(kernel::sweep_block_with_residual(a, b, block));
        } else {
            kernel::sweep_block(a, b, block);
        }
        std::mem::swap(a, b);
    }
    t.elapsed().as_secs_f64()
}

/// Kernel: ns per cell on a 150 x 150 subdomain.
fn kernel_ns_per_cell() -> f64 {
    let (mut a, mut b) = buffers();
    let per_run = (200 * SIDE * SIDE) as f64;
    median(
        (0..9)
            .map(|_| time_sweeps(&mut a, &mut b, 200, false) * 1e9 / per_run)
            .collect(),
    )
}

/// The sweep with the residual fused in, relative to the plain one,
/// interleaved so that both see the same machine.
fn residual_factor() -> f64 {
    let (mut a, mut b) = buffers();
    median(
        (0..9)
            .map(|_| {
                let plain = time_sweeps(&mut a, &mut b, 200, false);
                time_sweeps(&mut a, &mut b, 200, true) / plain
            })
            .collect(),
    )
}

/// A whole subdomain update minus its cells: halo, publication, counter.
fn update_ns(cell_ns: f64) -> f64 {
    let p = Problem::new(300, 4, 4).expect("valid");
    let subs = subdomain::build(&p);
    let s = &subs[5]; // an inner subdomain: four neighbours
    let cells = s.geom.cells() as f64;
    median(
        (0..9)
            .map(|_| {
                let t = Instant::now();
                for _ in 0..200 {
                    s.lock().update(
                        &subs,
                        EdgeVersion::Latest,
                        Residual::Skip,
                        1.0,
                        || false,
                        || {},
                    );
                }
                t.elapsed().as_nanos() as f64 / 200.0 - cells * cell_ns
            })
            .collect(),
    )
    .max(0.0)
}

/// A balancer call at paper scale: 36 threads x 4 subdomains.
fn balancer_ns() -> f64 {
    let policy = Progressive::as_printed(Scope::Joint);
    let owners: Vec<usize> = (0..144).map(|s| s / 4).collect();
    let sockets: Vec<usize> = (0..36).map(|t| t / 18).collect();
    let counts: Vec<u64> = (0..144).map(|s| (s as u64 * 7919) % 97).collect();
    median(
        (0..9)
            .map(|_| {
                let t = Instant::now();
                for call in 1..=1000 {
                    std::hint::black_box(policy.decide(&Snapshot {
                        call,
                        ..Snapshot::of(&counts, &owners, &sockets)
                    }));
                }
                t.elapsed().as_nanos() as f64 / 1000.0
            })
            .collect(),
    )
}

/// A barrier crossing with two threads.
fn barrier_ns() -> f64 {
    let barrier = StopBarrier::new(2);
    let stop = StopFlag::default();
    let crossings = 20_000;
    let t = Instant::now();
    std::thread::scope(|sc| {
        sc.spawn(|| {
            // Threads inherit the caller's pin: move to another core.
            let last = core_affinity::get_core_ids().and_then(|c| c.last().copied());
            if let Some(core) = last {
                core_affinity::set_for_current(core);
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

impl fmt::Display for Measured {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.0;
        writeln!(f, "# measured by braid sim --calibrate")?;
        writeln!(
            f,
            "sim_cell_ns = {:.3}   # kernel, 150 x 150 subdomain, one core",
            c.cell_ns
        )?;
        writeln!(
            f,
            "sim_update_ns = {:.0}   # a subdomain update besides its cells",
            c.update_ns
        )?;
        writeln!(
            f,
            "sim_balancer_ns = {:.0}   # one Algorithm 1 call, 36 threads x 4 subdomains",
            c.balancer_ns
        )?;
        writeln!(
            f,
            "sim_remote_cell_ns = {:.3}   # NOT measured: this machine has one socket; default kept",
            c.remote_cell_ns
        )?;
        writeln!(
            f,
            "sim_barrier_ns = {:.0}   # a barrier crossing, 2 threads",
            c.barrier_ns
        )?;
        writeln!(
            f,
            "sim_noise_iter_ns = {:.3}   # a noise work iteration",
            c.noise_iter_ns
        )?;
        writeln!(
            f,
            "sim_residual_factor = {:.3}   # residual sweep / plain sweep per cell, 150 x 150",
            c.residual_factor
        )
    }
}
