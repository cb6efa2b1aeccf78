//! `braid sim --calibrate`: measures on this machine the costs the simulator
//! charges, for runs like the configuration's, and prints them as
//! `config.txt` lines. Each is measured where it arises: whole updates at
//! several sizes, a move's first update on another core, the balancer call
//! at the run's size, and a quiet real run's jitter.

use std::fmt;
use std::time::Instant;

use braid::Plan;
use braid::Problem;
use braid::Topology;
use braid::probe;
use braid::{AutoOr, Config};
use braid::{Jitter, MeasuredSpeeds, SimCosts};
use braid::{Policy, Progressive, Scope, Snapshot};

/// Measured costs, and what could not be measured here.
pub(crate) struct Measured {
    pub(crate) costs: SimCosts,
    /// How a quiet real thread's rate jitters over one balancer interval,
    /// if the run could be made.
    pub(crate) jitter: Option<Jitter>,
    /// Whether the machine had two sockets to measure `remote_cell_ns`.
    remote_measured: bool,
    /// Whether real runs like the configuration's could be made to time
    /// updates (else the update costs are the defaults).
    updates_measured: bool,
    /// Whether real runs with a parasite could be made.
    switch_measured: bool,
    /// Whether real runs with a subdomain moved could be made.
    block_measured: bool,
    /// The sub-splits the update costs were fitted on: subdomains per
    /// thread, rows, cells, ns per update in a real run's home slab and on
    /// its own.
    updates: Vec<(usize, f64, f64, f64, f64)>,
    /// The size the balancer call was measured at: threads, subdomains.
    balancer_size: (usize, usize),
    /// The simulated machine a calibration was carried to, and its
    /// threads ([`For::Simulated`]).
    carried: Option<(String, usize)>,
}

/// The median; of an even count, the mean of the middle two (the upper
/// one alone, as this took before 2026-11-29, biased every two-sample
/// measurement to its larger value).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n % 2 {
        0 if n > 0 => 0.5 * (v[n / 2 - 1] + v[n / 2]),
        _ => v[n / 2],
    }
}

/// Measures every cost for runs like `cfg` (its threads, subdomains and
/// balancer interval) on this machine: a few seconds.
/// Which machine a calibration is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum For {
    /// This one (`braid validate` compares the simulator with it).
    ThisMachine,
    /// The simulated machine of the configuration (`sim_topology`, `braid
    /// sim --calibrate`): what is measured per core carries as it is, the
    /// balancer's decision is timed at that machine's size on one core
    /// here, and what cannot be measured here is stated as assumed.
    Simulated,
}

pub(crate) fn measure(cfg: &Config, target: For) -> Measured {
    let machine = Topology::detect().ok();
    // Each step says what it measures as it starts (on stderr): the whole
    // takes seconds, and tens at a large simulated machine.
    let step = |what: &str| eprintln!("braid: calibrating: {what}...");
    // Real runs first, while this thread may still use every CPU they
    // would.
    step("the jitter of quiet real threads");
    let jitter = machine.as_ref().and_then(|m| jitter(cfg, m));
    step("the cost of an edge read from another thread");
    let remote_edge = machine.as_ref().and_then(|m| remote_edge_ns(cfg, m));
    let fit = machine
        .as_ref()
        .and_then(|m| update_fit(cfg, m, remote_edge.unwrap_or(0.0), &step));
    step("what a parasite's burst costs a worker");
    let switch = machine.as_ref().and_then(|m| noise_switch_ns(cfg, m));
    step("the cost of a slab's extra block");
    let block = machine.as_ref().and_then(|m| block_ns(cfg, m));
    let jitter = jitter.map(|j| Jitter {
        core_sd: fit.as_ref().map_or(0.0, |f| f.core_sd.min(1.0)),
        ..j
    });
    // The rest on a thread of its own pinned to the first CPU: the
    // caller keeps every CPU it had (`braid validate` runs real runs after).
    std::thread::scope(|s| {
        s.spawn(|| {
            step("updates on their own, a move's cold cells, the balancer and a barrier");
            let mut measured =
                pinned_costs(cfg, machine.as_ref(), jitter, fit, switch, remote_edge);
            if target == For::Simulated {
                step("the balancer at the simulated machine's size");
                carry(cfg, &mut measured);
            }
            measured.costs.block_ns = block.unwrap_or(0.0);
            measured.block_measured = block.is_some();
            measured
        })
        .join()
        .expect("the calibration thread does not panic")
    })
}

/// The costs measured on one pinned thread (and a second for the barrier
/// and the moves), with the real runs' results.
fn pinned_costs(
    cfg: &Config,
    machine: Option<&Topology>,
    jitter: Option<Jitter>,
    fit: Option<UpdateFit>,
    switch: Option<f64>,
    remote_edge: Option<f64>,
) -> Measured {
    let cpus = machine.map(Topology::cores).unwrap_or_default();
    let first = cpus.first().copied().unwrap_or(0);
    let _ = core_affinity::set_for_current(core_affinity::CoreId { id: first });
    let mut costs = braid::sim_costs(&Config::default());
    let mut guests = Vec::new();
    if let Some(fit) = &fit {
        let on_own = on_their_own(cfg);
        (costs.home_update_ns, costs.cell_ns) =
            home_costs(cfg, &fit.points, on_own.update_ns, on_own.row_ns);
        costs.row_ns = on_own.row_ns;
        costs.update_ns = on_own.update_ns;
        costs.residual_factor = on_own.residual_factor;
        guests = on_own.ns;
    }
    // A move within a socket: the next core of the first socket.
    let sockets = machine.map_or(&[][..], |m| &m.sockets[..]);
    let pu = |socket: &braid::Socket, core: usize| socket.cores.get(core)?.first().copied();
    if let Some(other) = sockets.first().and_then(|s| pu(s, 1)) {
        costs.cold_cell_ns = probe::cold_cell_ns(first, other);
    }
    let remote = sockets.get(1).and_then(|s| pu(s, 0));
    if let Some(other) = remote {
        costs.remote_cell_ns = probe::cold_cell_ns(first, other);
    }
    let threads = match (cfg.threads, machine) {
        (AutoOr::Value(n), _) => n,
        (AutoOr::Auto, Some(m)) => m.physical_cores(),
        (AutoOr::Auto, None) => 1,
    };
    let subdomains = threads * cfg.subdomains;
    costs.balancer_ns = balancer_ns(threads, cfg.subdomains);
    let other = sockets
        .iter()
        .flat_map(|s| s.cores.iter().filter_map(|c| c.first().copied()))
        .find(|&cpu| cpu != first);
    costs.barrier_ns = probe::barrier_ns(other);
    costs.noise_iter_ns = braid_noise::Calibration::measure().ns_per_iter;
    costs.noise_switch_ns = switch.unwrap_or(0.0);
    costs.remote_edge_ns = remote_edge.unwrap_or(0.0);
    Measured {
        costs,
        jitter,
        remote_measured: remote.is_some(),
        updates_measured: fit.is_some(),
        switch_measured: switch.is_some(),
        block_measured: false,
        updates: fit.as_ref().map_or_else(Vec::new, |f| {
            f.points
                .iter()
                .zip(guests.iter().chain(std::iter::repeat(&f64::NAN)))
                .map(|((k, p), g)| (*k, p.rows, p.cells, p.ns, *g))
                .collect()
        }),
        balancer_size: (threads, subdomains),
        carried: None,
    }
}

/// Carries `measured` to the configuration's simulated machine: the
/// balancer's decision, a pure function, timed on one core here at that
/// machine's threads and subdomains; every per-core cost as it is.
fn carry(cfg: &Config, measured: &mut Measured) {
    let Ok(plan) = Plan::simulated(cfg) else {
        return;
    };
    let threads = plan.placement.threads();
    let per = cfg.subdomains.max(1);
    measured.costs.balancer_ns = balancer_ns(threads, per);
    measured.balancer_size = (threads, threads * per);
    measured.carried = Some((cfg.sim_topology.to_string(), threads));
}

/// What a subdomain's update costs in a real run's home slab: the runs
/// measured.
struct UpdateFit {
    /// Subdomains per thread, and the run's median.
    points: Vec<(usize, Point)>,
    /// How far each thread's mean rate is from its run's mean, as a
    /// relative standard deviation over every run: what some cores lose
    /// for the whole run (the monitor, the system).
    core_sd: f64,
}

/// Sub-splits the update cost is fitted on, subdomains per thread: from
/// the whole domain to small pieces.
const SPLITS: [usize; 5] = [1, 2, 4, 9, 16];

/// The weight of the configuration's own sub-split in the fit: the size
/// its runs will use is the one to get right.
const OWN_WEIGHT: f64 = 10.0;

/// One subdomain's mean rows and cells, and what one of its updates cost
/// inside a real run, in nanoseconds.
#[derive(Debug, Clone)]
struct Point {
    rows: f64,
    cells: f64,
    ns: f64,
    /// Its weight in the fit.
    weight: f64,
    /// The mean cells of edges a subdomain reads from another thread's.
    remote_cells: f64,
    /// Each thread's mean rate over the run's mean, less 1.
    threads: Vec<f64>,
}

/// Times updates where they arise: quiet, unbalanced real runs like `cfg`
/// at each of [`SPLITS`], three times, interleaved. A thread's updates per
/// second in its steady windows give what one update costs with
/// everything a worker does around it (halo, publication, counters), which
/// an update timed alone does not see. A thread sweeps the subdomains of
/// its own domain together in its slab (`subdomain/slab.rs`), so what an
/// update costs there is its cells' share of the pass: the fit is of the
/// cell cost alone. `None` if the runs cannot be made here.
fn update_fit(
    cfg: &Config,
    machine: &Topology,
    remote_edge_ns: f64,
    step: &dyn Fn(&str),
) -> Option<UpdateFit> {
    let splits: Vec<usize> = SPLITS
        .iter()
        .copied()
        .filter(|&k| cfg.domain_size / (k as f64).sqrt().ceil() as usize >= 8)
        .collect();
    let mut runs: Vec<Vec<Point>> = vec![Vec::new(); splits.len()];
    for round in 1..=3 {
        step(&format!(
            "updates inside real runs, round {round} of 3 (splits {splits:?})"
        ));
        for (i, &k) in splits.iter().enumerate() {
            runs[i].push(in_situ(cfg, machine, k)?);
        }
    }
    let deviations: Vec<f64> = runs
        .iter()
        .flatten()
        .flat_map(|p| p.threads.iter().copied())
        .collect();
    let core_sd =
        (deviations.iter().map(|d| d * d).sum::<f64>() / deviations.len().max(1) as f64).sqrt();
    // The remote edges are charged apart: what is left is the update's own.
    let pick = |runs: &[Point]| Point {
        ns: median(runs.iter().map(|p| p.ns).collect()) - runs[0].remote_cells * remote_edge_ns,
        ..runs[0].clone()
    };
    let points: Vec<Point> = runs.iter().map(|r| pick(r)).collect();
    Some(UpdateFit {
        points: splits.iter().copied().zip(points).collect(),
        core_sd,
    })
}

fn in_situ(cfg: &Config, machine: &Topology, k: usize) -> Option<Point> {
    let split = Config {
        subdomains: k,
        ..cfg.clone()
    };
    let (plan, outcome) = real_run(&split, machine, 0.15, &[], 0.005, |_| {})?;
    let speeds = rates(&plan, &outcome)?;
    let rates: Vec<f64> = speeds
        .rates
        .iter()
        .flat_map(|r| steady(r).iter().copied())
        .filter(|&r| r > 0.0)
        .collect();
    if rates.is_empty() {
        return None;
    }
    let means: Vec<f64> = speeds
        .rates
        .iter()
        .map(|r| steady(r).iter().sum::<f64>() / steady(r).len().max(1) as f64)
        .collect();
    let mean = means.iter().sum::<f64>() / means.len() as f64;
    let subs = &plan.problem.subs;
    let n = subs.len() as f64;
    Some(Point {
        rows: subs.iter().map(|g| g.height as f64).sum::<f64>() / n,
        cells: subs.iter().map(|g| g.cells() as f64).sum::<f64>() / n,
        ns: 1e9 / median(rates),
        weight: if k == cfg.subdomains { OWN_WEIGHT } else { 1.0 },
        remote_cells: subs
            .iter()
            .map(|g| g.edge_cells_from(|n| subs[n].domain != g.domain) as f64)
            .sum::<f64>()
            / n,
        threads: means.iter().map(|m| m / mean - 1.0).collect(),
    })
}

/// What an update costs a subdomain swept on its own (one moved away from
/// its home slab) besides its cells, and what computing its residual adds.
struct OnOwn {
    update_ns: f64,
    row_ns: f64,
    residual_factor: f64,
    /// Per sub-split of [`SPLITS`] measured, ns per update on its own.
    ns: Vec<f64>,
}

/// Times updates of subdomains on their own, on this (pinned) thread: two
/// domains like `cfg`'s at each sub-split, every subdomain updated in turn
/// as a worker's guests are (halo filled and edges published on every
/// side), the median of 9 rounds per update; then fits each as
/// `update + rows x row + cells x cell` and keeps the first two: what a
/// subdomain away from its slab pays besides its cells. Its cells' own
/// price is the in-situ fit's: one thread alone has the memory to itself
/// and sweeps faster per cell than the threads of a run do. At the
/// configuration's split, what computing the residual adds per cell is a
/// factor on this thread's cell cost.
fn on_their_own(cfg: &Config) -> OnOwn {
    let splits: Vec<usize> = SPLITS
        .iter()
        .copied()
        .filter(|&k| cfg.domain_size / (k as f64).sqrt().ceil() as usize >= 8)
        .collect();
    let time = |k: usize, round: Option<u64>| -> Option<(Point, f64)> {
        let p = Problem::new(cfg.domain_size, 2, k).ok()?;
        let ns = probe::update_ns(&p, round);
        let n = p.subs.len() as f64;
        let point = Point {
            rows: p.subs.iter().map(|g| g.height as f64).sum::<f64>() / n,
            cells: p.subs.iter().map(|g| g.cells() as f64).sum::<f64>() / n,
            ns,
            weight: if k == cfg.subdomains { OWN_WEIGHT } else { 1.0 },
            remote_cells: 0.0,
            threads: Vec::new(),
        };
        Some((point, ns))
    };
    let points: Vec<Point> = splits
        .iter()
        .filter_map(|&k| time(k, None))
        .map(|p| p.0)
        .collect();
    let [update_ns, row_ns, cell_ns] = least_squares_nonneg(&points, [true; 3]);
    let own = time(cfg.subdomains, None).zip(time(cfg.subdomains, Some(1)));
    let residual_factor = match own {
        Some(((p, plain), (_, with))) if cell_ns > 0.0 && p.cells > 0.0 => {
            (1.0 + (with - plain) / (p.cells * cell_ns)).max(1.0)
        }
        _ => braid::sim_costs(&Config::default()).residual_factor,
    };
    OnOwn {
        update_ns,
        row_ns,
        residual_factor,
        ns: points.iter().map(|p| p.ns).collect(),
    }
}

/// A quiet, unbalanced run that stops after `seconds`.
fn quiet_overrides(seconds: f64) -> Vec<String> {
    [
        "noise=none",
        "balancer=none",
        "tolerance=0",
        "max_iterations=1000000000",
        "slow=none",
        "stall=none",
        "workload=uniform",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([format!("time_limit={seconds}")])
    .collect()
}

/// A real, unbalanced run like `cfg` for `seconds`, quiet unless `noise`
/// (`KEY=VALUE` lines) adds a parasite, traced every `trace_s`, with
/// `adjust` applied to its plan: the plan and what it did (its parasites
/// started beside it and stopped after). `None` if it cannot be made here.
fn real_run(
    cfg: &Config,
    machine: &Topology,
    seconds: f64,
    noise: &[String],
    trace_s: f64,
    adjust: impl FnOnce(&mut Plan),
) -> Option<(Plan, braid::Outcome)> {
    let mut run = cfg.clone();
    run.apply_overrides(&quiet_overrides(seconds)).ok()?;
    run.apply_overrides(noise).ok()?;
    run.trace_interval = trace_s;
    let mut plan = Plan::new(&run, machine).ok()?;
    adjust(&mut plan);
    let (_, outcome) = braid::run(&plan).ok()?;
    Some((plan, outcome))
}

/// Each thread's rates in the trace's windows.
fn rates(plan: &Plan, outcome: &braid::Outcome) -> Option<MeasuredSpeeds> {
    let threads = plan.placement.threads();
    MeasuredSpeeds::from_trace("calibration".into(), threads, &outcome.trace).ok()
}

/// A thread's rates without the first two windows (the threads start) and
/// the last (cut short).
fn steady(rates: &[f64]) -> &[f64] {
    rates.get(2..rates.len().saturating_sub(1)).unwrap_or(&[])
}

/// Least squares of `ns = update + rows x row + cells x cell` in relative
/// terms (each point's error over its `ns`: the smallest update counts as
/// much as the largest) and weighted, with no cost below 0: a cost the unconstrained
/// fit makes negative (the machine's scatter) is held at 0 and the others
/// refitted.
#[cfg(test)]
fn fit_costs(points: &[Point]) -> [f64; 3] {
    least_squares_nonneg(points, [true; 3])
}

/// [`least_squares`] over the costs `free` marks, a cost the fit makes
/// negative held at 0 and the others refitted.
fn least_squares_nonneg(points: &[Point], mut free: [bool; 3]) -> [f64; 3] {
    loop {
        let coef = least_squares(points, free);
        match (0..3).find(|&i| free[i] && coef[i] < 0.0) {
            Some(i) => free[i] = false,
            None => return coef,
        }
    }
}

/// A home subdomain's own cost per update and the cell cost in a home
/// slab: what best fits the in-situ `points` (subdomains per thread,
/// median) once each has paid its share of its slab's pass, `update_ns /
/// k` and `row_ns / columns` per row, as the simulator charges it
/// (`sim::simulation`'s `price`): `home_update_ns + cells x cell_ns`, so
/// that what a pass costs more for each subdomain it holds (measured here:
/// 16-62 ns a subdomain, 1-4% of a 150 x 150 pass split four ways) is not
/// spread over the cells of every split.
fn home_costs(cfg: &Config, points: &[(usize, Point)], update_ns: f64, row_ns: f64) -> (f64, f64) {
    let shared: Vec<Point> = points
        .iter()
        .filter_map(|(k, p)| {
            let cols = Problem::new(cfg.domain_size, 2, *k).ok()?.sub_cols as f64;
            let share = update_ns / *k as f64 + p.rows * row_ns / cols;
            Some(Point {
                ns: (p.ns - share).max(1.0),
                ..p.clone()
            })
        })
        .collect();
    let [own, _, cell] = least_squares_nonneg(&shared, [true, false, true]);
    (own, cell)
}

/// Relative least squares over the costs marked free (the others 0), by
/// the normal equations (at most 3 x 3).
fn least_squares(points: &[Point], free: [bool; 3]) -> [f64; 3] {
    let idx: Vec<usize> = (0..3).filter(|&i| free[i]).collect();
    let k = idx.len();
    let mut a = vec![vec![0.0; k + 1]; k];
    for p in points {
        let basis = [1.0 / p.ns, p.rows / p.ns, p.cells / p.ns];
        for (r, &i) in idx.iter().enumerate() {
            for (c, &j) in idx.iter().enumerate() {
                a[r][c] += p.weight * basis[i] * basis[j];
            }
            a[r][k] += p.weight * basis[i];
        }
    }
    // Gauss-Jordan elimination with partial pivoting.
    for col in 0..k {
        let pivot = (col..k)
            .max_by(|&x, &y| a[x][col].abs().total_cmp(&a[y][col].abs()))
            .unwrap_or(col);
        a.swap(col, pivot);
        let pivot_row = a[col].clone();
        if pivot_row[col] == 0.0 {
            continue;
        }
        for (r, row) in a.iter_mut().enumerate() {
            if r != col {
                let f = row[col] / pivot_row[col];
                for (x, p) in row.iter_mut().zip(&pivot_row).skip(col) {
                    *x -= f * p;
                }
            }
        }
    }
    let mut coef = [0.0; 3];
    for (r, &i) in idx.iter().enumerate() {
        coef[i] = if a[r][r] == 0.0 {
            0.0
        } else {
            a[r][k] / a[r][r]
        };
    }
    coef
}

/// What reading an edge from a subdomain another thread owns costs, per
/// cell: a quiet real run like `cfg` for 0.3 s with loads measured; each
/// subdomain's time per update against the cells of its edges other
/// threads own, fitted by least squares (`cost = a + b x cells`, `b` at
/// least 0). `None` if the run cannot be made, or every subdomain has as
/// many such cells as every other (nothing to fit).
fn remote_edge_ns(cfg: &Config, machine: &Topology) -> Option<f64> {
    let (plan, outcome) = real_run(cfg, machine, 0.3, &[], 0.05, |plan| {
        plan.settings.trace_loads = true;
    })?;
    // From the second sample on: the first holds the threads' start.
    let (first, last) = (outcome.trace.get(1)?, outcome.trace.last()?);
    let subs = &plan.problem.subs;
    let points: Vec<(f64, f64)> = subs
        .iter()
        .filter_map(|g| {
            let updates = last.counts[g.id].checked_sub(first.counts[g.id])?;
            let busy = last.busy_s.get(g.id)? - first.busy_s.get(g.id)?;
            let remote = g.edge_cells_from(|n| last.owners[n] != last.owners[g.id]) as f64;
            (updates > 0).then(|| (remote, busy * 1e9 / updates as f64))
        })
        .collect();
    let n = points.len() as f64;
    let (mx, my) = points
        .iter()
        .fold((0.0, 0.0), |(x, y), p| (x + p.0 / n, y + p.1 / n));
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| (sxy / sxx).max(0.0))
}

/// The duty of the parasite the switch cost is measured under.
const SWITCH_DUTY: f64 = 0.19;
/// Interleaved quiet and noisy pairs the switch cost is the median of: a
/// pair's quiet ratio of the threads' rates scatters by about 3% here, so
/// two pairs (as until 2026-11-29) read 31-55 us where 5 read 20-25.
const SWITCH_PAIRS: usize = 5;

/// What a worker loses besides each parasite burst on its core (the
/// switches, its caches refilled after), in nanoseconds: real runs like
/// `cfg` for 0.3 s, quiet and with a `SWITCH_DUTY` parasite on the first
/// thread's core, [`SWITCH_PAIRS`] times each, interleaved. The first thread's rate against
/// the others' (or its own quiet rate, alone) gives the share of the core
/// it lost; the simulator's parasite takes `duty / (1 - duty)` of its sleep
/// per burst, and the switch is what makes up the rest. `None` if the runs
/// cannot be made here.
fn noise_switch_ns(cfg: &Config, machine: &Topology) -> Option<f64> {
    let mut losses = Vec::new();
    let mut sleep_ns = 0.0;
    for _ in 0..SWITCH_PAIRS {
        let (quiet, _) = noisy_run(cfg, machine, false)?;
        let (noisy, sleep) = noisy_run(cfg, machine, true)?;
        sleep_ns = sleep;
        // The first thread's rate over the reference, noisy against quiet.
        losses.push(1.0 - noisy / quiet);
    }
    let loss = median(losses).clamp(0.0, 0.99);
    let per_burst = |share: f64| share / (1.0 - share) * sleep_ns;
    Some((per_burst(loss) - per_burst(SWITCH_DUTY)).max(0.0))
}

/// What a home slab's pass pays per block beyond the first, in
/// nanoseconds: quiet real runs like `cfg` for 0.3 s, as they are and with
/// one subdomain of the first domain moved to the second thread at the
/// first call, [`SWITCH_PAIRS`] pairs interleaved. The first thread then
/// sweeps the subdomains it has left as more blocks; what its updates cost
/// more, times the subdomains it holds, over the blocks added, is a
/// block's cost (the cost model shares it the same way:
/// `sim::slab_shape`). The subdomain moved is, pair by pair, each of those
/// whose leaving adds the most blocks, and the cost their mean. `None` if no move adds a block (one subdomain a domain, or
/// a row of two), there is one thread, or the runs cannot be made here.
fn block_ns(cfg: &Config, machine: &Topology) -> Option<f64> {
    let plan = Plan::new(cfg, machine).ok()?;
    let p = &plan.problem;
    if plan.placement.threads() < 2 {
        return None;
    }
    let per = p.subdomains_per_domain();
    let shape = |away: usize| braid::slab_blocks(p.sub_rows, p.sub_cols, |k| k != away);
    let most = (0..per).map(shape).max()?;
    let added = most.checked_sub(1).filter(|&b| b > 0)? as f64;
    // Every subdomain whose leaving adds as many blocks, in turn: which one
    // leaves matters (a block left to start mid-line sweeps slower).
    let candidates: Vec<usize> = (0..per).filter(|&k| shape(k) == most).collect();
    let held = (per - 1) as f64;
    let first_ns = |moved: Option<usize>| -> Option<f64> {
        let (_, outcome) = real_run(cfg, machine, 0.3, &[], 0.0, |plan| {
            if let Some(away) = moved {
                let policy = std::sync::Arc::new(OneMove { sub: away, to: 1 });
                plan.settings.scheme = braid::Scheme::Async {
                    balancer: Some(braid::BalancerSettings::every(
                        policy,
                        std::time::Duration::from_millis(1),
                    )),
                };
            }
        })?;
        let updates = *outcome.thread_updates.first()?;
        (updates > 0).then(|| outcome.elapsed_s * 1e9 / updates as f64)
    };
    let pairs = SWITCH_PAIRS.max(candidates.len());
    let mut extra = Vec::new();
    for i in 0..pairs {
        let quiet = first_ns(None)?;
        let moved = first_ns(Some(candidates[i % candidates.len()]))?;
        extra.push(moved - quiet);
    }
    // The mean: the candidates' costs differ, and each is as likely to move.
    let mean = extra.iter().sum::<f64>() / extra.len() as f64;
    Some((mean * held / added).max(0.0))
}

/// A balancer that moves one subdomain to one thread and nothing else:
/// how [`block_ns`] leaves a hole in a slab.
#[derive(Debug)]
struct OneMove {
    sub: usize,
    to: usize,
}

impl Policy for OneMove {
    fn decide(&self, snap: &Snapshot<'_>) -> Vec<braid::Move> {
        match snap.owners.get(self.sub) {
            Some(&from) if from != self.to => vec![braid::Move {
                sub: self.sub,
                from,
                to: self.to,
            }],
            _ => Vec::new(),
        }
    }

    fn name(&self) -> braid::Named {
        braid::Named {
            strategy: braid::Strategy::PRESCRIBED,
            scope: Scope::Joint,
        }
    }

    fn sends_guests_home(&self) -> bool {
        false
    }
}

/// A real run like `cfg` for 0.3 s, with the parasite or not: the first
/// thread's rate over the others' mean (over its own, alone), and the
/// parasite's sleep in nanoseconds.
fn noisy_run(cfg: &Config, machine: &Topology, noisy: bool) -> Option<(f64, f64)> {
    let noise = match noisy {
        true => vec![
            "noise=thread".to_string(),
            format!("noise_cores={}:{SWITCH_DUTY}", machine.cores().first()?),
        ],
        false => Vec::new(),
    };
    let (plan, outcome) = real_run(cfg, machine, 0.3, &noise, 0.0, |_| {})?;
    let sleep_ns = plan
        .noise
        .as_ref()
        .and_then(|n| n.parasites.first())
        .map_or(0.0, |p| p.sleep_us as f64 * 1e3);
    let rates: Vec<f64> = outcome
        .thread_updates
        .iter()
        .map(|&u| u as f64 / outcome.elapsed_s.max(f64::MIN_POSITIVE))
        .collect();
    let (first, others) = rates.split_first()?;
    let reference = if others.is_empty() {
        1.0
    } else {
        others.iter().sum::<f64>() / others.len() as f64
    };
    (reference > 0.0).then(|| (first / reference, sleep_ns))
}

/// How a quiet real thread's rate jitters over one balancer interval:
/// runs like `cfg` (quiet, unbalanced, with a trace every interval) for
/// 0.3 s and takes the standard deviation of each thread's rate in each
/// interval over its mean rate, pooled. `None` if the run cannot be made
/// here (the config asks for more than this machine has, say).
fn jitter(cfg: &Config, machine: &Topology) -> Option<Jitter> {
    let every_s = match cfg.lb_interval {
        braid::Interval::Seconds(s) if s > 0.0 => s,
        _ => 0.001,
    };
    let (plan, outcome) = real_run(cfg, machine, 0.3, &[], every_s, |_| {})?;
    let speeds = rates(&plan, &outcome)?;
    let mut relative = Vec::new();
    for rates in &speeds.rates {
        let steady = steady(rates);
        let mean = steady.iter().sum::<f64>() / steady.len().max(1) as f64;
        if mean > 0.0 {
            relative.extend(steady.iter().map(|r| r / mean - 1.0));
        }
    }
    if relative.len() < 10 {
        return None;
    }
    let sd = (relative.iter().map(|d| d * d).sum::<f64>() / relative.len() as f64).sqrt();
    Some(Jitter {
        sd: sd.min(1.0),
        every_s,
        core_sd: 0.0,
    })
}

/// About the time each of [`balancer_ns`]'s repetitions takes: its first
/// call sets how many follow, so a call of 48 ms (4.2 million subdomains)
/// is timed once a repetition, not a thousand times.
const BALANCER_REP: std::time::Duration = std::time::Duration::from_millis(20);

/// A balancer call (Algorithm 1, joint) at the run's size: `threads`
/// threads of `per_thread` subdomains each; the median of 9 repetitions
/// of up to 1000 calls, as many as fit in [`BALANCER_REP`].
fn balancer_ns(threads: usize, per_thread: usize) -> f64 {
    let policy = Progressive::as_printed(Scope::Joint);
    let n = threads * per_thread;
    let owners: Vec<usize> = (0..n).map(|s| s / per_thread).collect();
    let sockets: Vec<usize> = vec![0; threads];
    let counts: Vec<u64> = (0..n).map(|s| (s as u64 * 7919) % 97).collect();
    median(
        (0..9)
            .map(|_| {
                let call = |call| {
                    std::hint::black_box(policy.decide(&Snapshot {
                        call,
                        ..Snapshot::of(&counts, &owners, &sockets)
                    }));
                };
                // A first call, untimed in the result, sets how many fit
                // in the repetition's time (no clock read between calls).
                let t = Instant::now();
                call(1);
                let one = t.elapsed().as_nanos().max(1);
                let calls = (BALANCER_REP.as_nanos() / one).clamp(1, 1000) as u64;
                let t = Instant::now();
                for c in 2..calls + 2 {
                    call(c);
                }
                t.elapsed().as_nanos() as f64 / calls as f64
            })
            .collect(),
    )
}

/// A `config.txt` line: its key, its value, and what measured it.
type Line = (&'static str, String, String);

impl Measured {
    /// Each cost as a `(key, value, what measured it)` line of config.
    pub(crate) fn lines(&self) -> Vec<Line> {
        let mut lines = self.update_lines();
        lines.extend(self.move_lines());
        lines.extend(self.machine_lines());
        lines
    }

    /// The costs of an update, at home and away.
    fn update_lines(&self) -> Vec<Line> {
        let c = &self.costs;
        let splits: Vec<String> = self.updates.iter().map(|u| u.0.to_string()).collect();
        let how = if self.updates_measured {
            format!(
                "inside quiet real runs like this one's, fitted over {} subdomains per thread",
                splits.join(", ")
            )
        } else {
            "NOT measured: real runs like this one's could not be made here; default kept".into()
        };
        let own = if self.updates_measured {
            format!(
                "subdomains swept on their own, timed on one thread over {} subdomains per thread",
                splits.join(", ")
            )
        } else {
            "NOT measured: real runs like this one's could not be made here; default kept".into()
        };
        vec![
            (
                "sim_cell_ns",
                format!("{:.4}", c.cell_ns),
                format!(
                    "per cell of an update in its home slab (besides its share of the slab's update and rows, and its own cost below), {how}"
                ),
            ),
            (
                "sim_home_update_ns",
                format!("{:.1}", c.home_update_ns),
                format!(
                    "per update of a subdomain in its home slab besides its share of the pass (its count, gate and edges), with sim_cell_ns {how}"
                ),
            ),
            (
                "sim_row_ns",
                format!("{:.3}", c.row_ns),
                format!("per row of an update away from its home slab, {own}"),
            ),
            (
                "sim_update_ns",
                format!("{:.0}", c.update_ns),
                format!("per update away from its home slab besides its rows and cells, {own}"),
            ),
            (
                "sim_residual_factor",
                format!("{:.3}", c.residual_factor),
                format!("an update's cells with the residual over without, {own}"),
            ),
        ]
    }

    /// What a move and a balancer call cost.
    fn move_lines(&self) -> Vec<Line> {
        let c = &self.costs;
        let (threads, subs) = self.balancer_size;
        let mut lines = vec![
            (
                "sim_remote_edge_ns",
                format!("{:.3}", c.remote_edge_ns),
                "per cell of an edge read from another thread's subdomain, quiet real runs like this one's".into(),
            ),
            (
                "sim_cold_cell_ns",
                format!("{:.4}", c.cold_cell_ns),
                "per cell, a first update on another core after a move".into(),
            ),
            (
                "sim_balancer_ns",
                format!("{:.0}", c.balancer_ns),
                format!("one Algorithm 1 call, {threads} threads, {subs} subdomains"),
            ),
        ];
        lines.push(if self.remote_measured {
            (
                "sim_remote_cell_ns",
                format!("{:.4}", c.remote_cell_ns),
                "per cell, a first update on another socket after a move".into(),
            )
        } else {
            (
                "sim_remote_cell_ns",
                format!("{:.3}", c.remote_cell_ns),
                "NOT measured: this machine has one socket; default kept".into(),
            )
        });
        lines
    }

    /// What the machine around a run costs: barriers, noise, blocks, the
    /// monitor, the jitter.
    fn machine_lines(&self) -> Vec<Line> {
        let c = &self.costs;
        let mut lines = Vec::new();
        lines.extend([
            (
                "sim_barrier_ns",
                format!("{:.0}", c.barrier_ns),
                match &self.carried {
                    Some((_, n)) if *n > 2 => format!(
                        "a barrier crossing, 2 threads; ASSUMED the same at {n} (a crossing of \
                         {n} threads cannot be timed on this machine's cores)"
                    ),
                    _ => "a barrier crossing, 2 threads".into(),
                },
            ),
            (
                "sim_noise_iter_ns",
                format!("{:.3}", c.noise_iter_ns),
                "a noise work iteration".into(),
            ),
        ]);
        lines.push((
            "sim_block_ns",
            format!("{:.0}", c.block_ns),
            if self.block_measured {
                "per block beyond the first of a home slab's pass, real runs like this one's with a subdomain moved".into()
            } else {
                "NOT measured: no single move adds a block to a slab here, or real runs could not be made".into()
            },
        ));
        lines.push((
            "sim_noise_switch_ns",
            format!("{:.0}", c.noise_switch_ns),
            if self.switch_measured {
                format!("a worker's loss per parasite burst besides the burst, {SWITCH_DUTY} duty, real runs like this one's")
            } else {
                "NOT measured: real runs with a parasite could not be made here".into()
            },
        ));
        lines.push((
            "sim_monitor_s",
            format!("{}", braid::MONITOR_PERIOD.as_secs_f64()),
            "how often braid run's monitor looks at the residual estimate (its period, not measured)".into(),
        ));
        lines.push(match self.jitter {
            Some(j) => (
                "sim_jitter",
                format!("{:.4}:{}:{:.4}", j.sd, j.every_s, j.core_sd),
                "quiet real threads: a rate's sd over one balancer interval, and a thread's mean rate's over all".into(),
            ),
            None => (
                "sim_jitter",
                "none".into(),
                "NOT measured: a quiet run of this configuration could not be made here".into(),
            ),
        });
        lines
    }

    /// The costs as `KEY=VALUE` overrides.
    pub(crate) fn overrides(&self) -> Vec<String> {
        self.lines()
            .into_iter()
            .map(|(k, v, _)| format!("{k}={v}"))
            .collect()
    }
}

impl fmt::Display for Measured {
    /// The costs as `config.txt` lines, each with what measured it: a
    /// fragment later runs and suites can take as they are.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "# measured by braid sim --calibrate")?;
        if let Some((machine, threads)) = &self.carried {
            writeln!(
                f,
                "# carried to sim_topology = {machine} ({threads} threads): per-core costs as \
                 measured on this machine's cores, the balancer timed at that size on one core, \
                 what this machine cannot show marked ASSUMED or NOT measured"
            )?;
        }
        for (k, rows, cells, home, own) in &self.updates {
            writeln!(
                f,
                "# {k} subdomain(s) per thread ({rows:.1} rows, {cells:.0} cells): {home:.0} ns \
                 per update in its home slab inside real runs, {own:.0} on its own"
            )?;
        }
        for (key, value, why) in self.lines() {
            writeln!(f, "{key} = {value}   # {why}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_calibration_carried_to_a_simulated_node_times_the_balancer_at_its_size() {
        let cfg = Config::default(); // pack:2 core:18, 4 subdomains a thread
        let mut m = Measured {
            costs: braid::sim_costs(&cfg),
            jitter: None,
            remote_measured: false,
            updates_measured: false,
            switch_measured: false,
            block_measured: false,
            updates: Vec::new(),
            balancer_size: (2, 8),
            carried: None,
        };
        assert!(!m.to_string().contains("ASSUMED"));
        carry(&cfg, &mut m);
        assert_eq!(m.balancer_size, (36, 144));
        assert!(m.costs.balancer_ns > 0.0);
        let text = m.to_string();
        assert!(
            text.contains("# carried to sim_topology = pack:2 core:18"),
            "{text}"
        );
        assert!(
            text.contains("one Algorithm 1 call, 36 threads, 144 subdomains"),
            "{text}"
        );
        assert!(text.contains("ASSUMED the same at 36"), "{text}");
    }

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(median(vec![0.30, 0.24]), 0.27);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    fn point(rows: f64, cells: f64, ns: f64) -> Point {
        Point {
            rows,
            cells,
            ns,
            weight: 1.0,
            remote_cells: 0.0,
            threads: Vec::new(),
        }
    }

    /// Updates of the sub-splits' shapes at known costs.
    fn at(update: f64, row: f64, cell: f64) -> Vec<Point> {
        [
            (150.0, 22500.0),
            (150.0, 11250.0),
            (75.0, 5625.0),
            (50.0, 2500.0),
            (37.5, 1406.0),
        ]
        .iter()
        .map(|&(r, c)| point(r, c, update + r * row + c * cell))
        .collect()
    }

    #[test]
    fn the_fit_recovers_the_costs_updates_were_made_of() {
        let [u, r, c] = fit_costs(&at(300.0, 8.0, 0.25));
        assert!((u - 300.0).abs() < 1e-6 && (r - 8.0).abs() < 1e-8 && (c - 0.25).abs() < 1e-10);
    }

    #[test]
    fn the_home_fit_recovers_a_subdomains_own_cost_apart_from_its_cells() {
        // In-situ updates of 150 x 150 split 1 to 16 ways, each paying its
        // share of the pass (update / k, each row's row / columns), its own
        // 40 ns and its cells at 0.15 ns.
        let cfg = Config {
            domain_size: 150,
            ..Config::default()
        };
        let (update, row) = (135.0, 3.0);
        let made = |own: f64| -> Vec<(usize, Point)> {
            [1, 2, 4, 9, 16]
                .iter()
                .map(|&k| {
                    let p = Problem::new(150, 2, k).unwrap();
                    let (rows, cells) = (p.subs[0].height as f64, p.subs[0].cells() as f64);
                    let share = update / k as f64 + rows * row / p.sub_cols as f64;
                    (k, point(rows, cells, share + own + cells * 0.15))
                })
                .collect()
        };
        let (own, cell) = home_costs(&cfg, &made(40.0), update, row);
        assert!(
            (own - 40.0).abs() < 1e-6 && (cell - 0.15).abs() < 1e-9,
            "{own} {cell}"
        );
        // With no cost of its own, none is fitted.
        let (own, cell) = home_costs(&cfg, &made(0.0), update, row);
        assert!(
            own.abs() < 1e-6 && (cell - 0.15).abs() < 1e-9,
            "{own} {cell}"
        );
    }

    #[test]
    fn a_cost_the_fit_would_make_negative_is_held_at_zero() {
        // Shorter updates than the cells alone: no per-update cost.
        let mut points = at(0.0, 8.0, 0.25);
        for p in &mut points {
            p.ns -= 50.0;
        }
        let [u, r, c] = fit_costs(&points);
        assert_eq!(u, 0.0);
        assert!(r >= 0.0 && c > 0.0);
    }

    #[test]
    fn the_runs_own_split_weighs_more_in_the_fit() {
        // One point off the others' line: with weight it is fitted closer.
        let mut points = at(300.0, 8.0, 0.25);
        points[2].ns *= 1.1;
        let miss = |pts: &[Point]| {
            let [u, r, c] = fit_costs(pts);
            let p = &pts[2];
            ((u + p.rows * r + p.cells * c) / p.ns - 1.0).abs()
        };
        let even = miss(&points);
        points[2].weight = OWN_WEIGHT;
        assert!(
            miss(&points) < even / 2.0,
            "{} against {even}",
            miss(&points)
        );
    }
}
