//! braid's speed as ratios against references measured in the same run,
//! interleaved rep by rep, median of the per-rep ratios. This machine is
//! shared and noisy: absolute numbers drift, ratios taken side by side do
//! much less.
//!
//! `cargo bench --bench compare [-- SECTION...] [--reps N]`, sections:
//! * `kernel`:   the stencil sweep, plain and with the residual, vs C loops
//!   (gcc -O3 -march=native), one pinned core, on a 300x300 domain, a
//!   150x150 subdomain and a 24x24 one (the simulator's);
//! * `sync`:     braid sync, 2 threads, vs an OpenMP synchronous Jacobi loop;
//! * `tts`:      time to solution (2 threads, 150x150 per thread, 1e-4):
//!   braid sync, async(1), async(4) and async(4) balanced by split, greedy
//!   and steal, quiet and beside a 19% parasite, against a C/OpenMP
//!   synchronous Jacobi with the residual fused into its sweep, and what a
//!   tolerance costs braid (iteration rate with it / without it);
//! * `subsplit`: async(4) vs async(1) iteration rate (the cost of splitting),
//!   at 150x150 and 300x300 per thread;
//! * `lb`:       async(4)+split(0.001) and +greedy(0.001) vs async(4)
//!   iteration rate, no noise, and the moves they make;
//! * `policy`:   the pure balancer's cost per call (Algorithm 1 joint and
//!   split, and every other strategy joint), for 16, 256 and 4096
//!   subdomains over 2, 36 and 256 threads;
//! * `noise`:    the slowdown from a parasite on the core of thread 0, for
//!   sync, async(4) and async(4)+joint(0.001): noisy / quiet iteration rate;
//! * `sim`:      the simulator's own speed: subdomain updates per real second
//!   counting only, and numerics' cell rate against the bare kernel;
//! * `roofline`: this core's cache and memory bandwidths and FMA peak,
//!   measured here, and the kernel (plain and with the residual) at the
//!   domain sizes braid uses, as a fraction of the bound of the level its
//!   blocks fit in; draws `target/roofline.png`. Fails loudly if a bound is
//!   not positive or the kernel beats its bound by more than 10% (a wrong
//!   bound).
//!
//! Every ratio is also kept rep by rep, with the goal an issue set for it,
//! in `target/speed.json`, and drawn as `target/speed.png` (the roofline as
//! `target/roofline.json` and `.png`); `braid plot target/speed.json`
//! draws either again.
//!
//! The C references are in `benches/c/` and built here with the system gcc.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use braid::Plan;
use braid::Report;
use braid::Topology;
use braid::kernel;
use braid::{
    Anticipate, Bounds, Greedy, Policy, Progressive, Refine, ResidualFirst, Scope, Snapshot, Steal,
};
use braid::{AutoOr, Config};
use braid_cli::speed::{Measure, PolicyCost, Speed, SpeedRow};

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let mut reps = 5;
    let mut sections = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--reps" {
            reps = it.next().and_then(|n| n.parse().ok()).expect("--reps N");
        } else {
            sections.push(a.as_str());
        }
    }
    let all = sections.is_empty();
    let want = |s: &str| all || sections.contains(&s);
    println!("braid speed ratios, median of {reps} interleaved reps (>= 1.0: braid is as fast)\n");
    let mut command = "cargo bench --bench compare --".to_string();
    for s in &sections {
        command += &format!(" {s}");
    }
    let mut speed = Speed::now(&format!("{command} --reps {reps}"));
    if want("kernel") {
        kernel_vs_c(reps, &mut speed);
    }
    if want("sync") {
        sync_vs_openmp(reps, &mut speed);
    }
    if want("tts") {
        time_to_solution(reps, &mut speed);
    }
    if want("subsplit") {
        subsplit_cost(reps, &mut speed);
    }
    if want("lb") {
        balancing_cost(reps, &mut speed);
    }
    if want("policy") {
        policy_cost(reps, &mut speed);
    }
    if want("noise") {
        noise_effect(reps);
    }
    if want("sim") {
        sim_speed(reps, &mut speed);
    }
    if want("roofline") {
        roofline(reps);
    }
    // What was compared, rep by rep, beside its figure: `braid plot
    // target/speed.json` draws it again.
    if !speed.rows.is_empty() || !speed.policy.is_empty() {
        match speed.write(out_dir(), "speed") {
            Ok(files) => println!("written: {}\n", files[0].display()),
            Err(e) => panic!("speed: cannot write the figure: {e}"),
        }
    }
}

/// Where the benchmark leaves its data and figures: `target/`.
fn out_dir() -> &'static Path {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent().unwrap_or(tmp)
}

/// A row of the speed figure: `what` in `group`, each rep's value.
fn row(
    group: &str,
    what: &str,
    variant: Option<&str>,
    reps: Vec<f64>,
    goal: Option<f64>,
) -> SpeedRow {
    SpeedRow {
        group: group.to_string(),
        what: what.to_string(),
        variant: variant.map(str::to_string),
        measure: Measure::Ratio,
        reps,
        goal,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

/// Compiles a C reference into the bench's scratch directory.
fn compile(source: &str, extra: &[&str]) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("benches/c")
        .join(source);
    let exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join(source.trim_end_matches(".c"));
    let status = Command::new("gcc")
        .args(["-O3", "-march=native", "-std=gnu11", "-o"])
        .arg(&exe)
        .arg(&src)
        .args(extra)
        .status()
        .expect("gcc is needed for the C references");
    assert!(status.success(), "gcc failed on {source}");
    exe
}

fn last_core() -> usize {
    *Topology::detect()
        .expect("this machine's topology")
        .cores()
        .last()
        .expect("a core")
}

fn kernel_vs_c(reps: usize, speed: &mut Speed) {
    let c = compile("stencil.c", &["-fopenmp-simd"]);
    let core = last_core();
    println!("kernel, single thread pinned to core {core}:\n");
    println!(
        "| block | sweep | braid Mcell/s | C Mcell/s | braid / C | braid residual / braid plain |"
    );
    println!("|---|---|---|---|---|---|");
    for (h, w, sweeps) in [
        (300, 300, 3000),
        (150, 150, 12000),
        (75, 75, 48000),
        (24, 24, 400_000),
    ] {
        let cells = (h * w * sweeps) as f64;
        // Per rep, interleaved: braid plain, C plain, braid residual, C residual.
        let mut rates: [Vec<f64>; 4] = Default::default();
        let (mut plain_ratio, mut res_ratio, mut res_cost) = (vec![], vec![], vec![]);
        for _ in 0..reps {
            let mut secs = [0.0; 4];
            for (k, residual) in [false, true].into_iter().enumerate() {
                secs[2 * k] = on_core(core, || time_rust_sweeps(h, w, sweeps, residual));
                let mode = if residual { "residual" } else { "plain" };
                let out = Command::new("taskset")
                    .args(["-c", &core.to_string()])
                    .arg(&c)
                    .args([h, w, sweeps, 1].map(|n| n.to_string()))
                    .arg(mode)
                    .output()
                    .expect("run the C stencil");
                secs[2 * k + 1] = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
            }
            for (r, s) in rates.iter_mut().zip(secs) {
                r.push(cells / s / 1e6);
            }
            plain_ratio.push(secs[1] / secs[0]);
            res_ratio.push(secs[3] / secs[2]);
            res_cost.push(secs[0] / secs[2]);
        }
        let [rp, cp, rr, cr] = rates.map(median);
        let cost = median(res_cost);
        println!(
            "| {h}x{w} | plain | {rp:.0} | {cp:.0} | {:.3} | |",
            median(plain_ratio.clone())
        );
        println!(
            "| {h}x{w} | with residual | {rr:.0} | {cr:.0} | {:.3} | {cost:.3} |",
            median(res_ratio.clone())
        );
        let group = "kernel on one core / C";
        speed.rows.push(row(
            group,
            &format!("plain, {h}x{w}"),
            None,
            plain_ratio,
            None,
        ));
        speed.rows.push(row(
            group,
            &format!("residual, {h}x{w}"),
            None,
            res_ratio,
            None,
        ));
    }
    println!();
}

fn on_core<T: Send>(core: usize, f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        s.spawn(|| {
            core_affinity::set_for_current(core_affinity::CoreId { id: core });
            f()
        })
        .join()
        .unwrap()
    })
}

/// braid's kernel on its own layout (a subdomain's: rows padded to whole
/// cache lines, each row's interior on one), the same data as the C's.
fn time_rust_sweeps(h: usize, w: usize, sweeps: usize, residual: bool) -> f64 {
    let block = kernel::Block::padded(h, w);
    let mut a = kernel::Buffer::new(block, 0.0);
    for (k, v) in a.iter_mut().enumerate() {
        *v = ((k * 7919) % 101) as f64 / 13.0;
    }
    let mut b = a.clone();
    kernel::sweep_block(&a, &mut b, block); // warm up, as the C does
    let mut total = 0.0;
    let t = Instant::now();
    for _ in 0..sweeps {
        if residual {
            total += kernel::sweep_block_with_residual(&a, &mut b, block);
        } else {
            kernel::sweep_block(&a, &mut b, block);
        }
        std::mem::swap(&mut a, &mut b);
    }
    let secs = t.elapsed().as_secs_f64();
    std::hint::black_box((&a, total));
    secs
}

/// A report for `label` on the default configuration, 2 threads.
fn braid_run(label: &str) -> Report {
    braid_run_with(label, &[])
}

/// Same, with `KEY=VALUE` overrides (noise included).
fn braid_run_with(label: &str, overrides: &[&str]) -> Report {
    let mut cfg = Config::default();
    cfg.apply_variant(label).unwrap();
    cfg.threads = AutoOr::Value(2);
    cfg.oversubscribe = true;
    for o in overrides {
        cfg.apply_override(o).unwrap();
    }
    let plan = Plan::new(&cfg, &Topology::detect().expect("this machine's topology")).unwrap();
    braid::run(&plan).unwrap().0
}

fn noise_effect(reps: usize) {
    println!("noise on the core of thread 0 (thread form), 2 threads, default config:\n");
    println!(
        "| variant | noise | quiet it/s | noisy it/s | noisy / quiet | parasite's measured duty |"
    );
    println!("|---|---|---|---|---|---|");
    for label in ["sync", "async(4)", "async(4)+joint(0.001)"] {
        for (name, level) in [
            ("default rhythm", "noise_cores=0"),
            ("duty 0.19", "noise_cores=0:0.19"),
        ] {
            let (mut quiet, mut noisy, mut ratios, mut duty) = (vec![], vec![], vec![], vec![]);
            for _ in 0..reps {
                let q = braid_run(label).iteration_rate;
                let n = braid_run_with(label, &["noise=thread", level]);
                ratios.push(n.iteration_rate / q);
                quiet.push(q);
                noisy.push(n.iteration_rate);
                duty.push(n.noise.unwrap().parasites[0].measured_duty);
            }
            println!(
                "| {label} | {name} | {:.0} | {:.0} | {:.3} | {:.1}% |",
                median(quiet),
                median(noisy),
                median(ratios),
                100.0 * median(duty)
            );
        }
    }
    println!();
}

fn sync_vs_openmp(reps: usize, speed: &mut Speed) {
    let omp = compile("jacobi_omp.c", &["-fopenmp"]);
    println!("sync, 2 threads, default config (300x600 grid, 5000 iterations):\n");
    println!("| braid sync Mcell/s | OpenMP Mcell/s | braid / OpenMP |");
    println!("|---|---|---|");
    let ratios = print_rates(reps, || {
        let r = braid_run("sync");
        let out = Command::new(&omp)
            .args([r.grid.height, r.grid.width, 5000].map(|n| n.to_string()))
            .env("OMP_NUM_THREADS", "2")
            .env("OMP_PROC_BIND", "close")
            .env("OMP_PLACES", "cores")
            .output()
            .expect("run the OpenMP reference");
        let rate: f64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        (r.cell_updates_per_s, rate)
    });
    // The goals of issue 30.
    let group = "sync, cell rate";
    let what = "2 threads, 300² each / OpenMP";
    speed
        .rows
        .push(row(group, what, Some("sync"), ratios, Some(0.95)));
    // One thread: the whole run (halo, counters, barrier of one) against
    // the bare C sweep on the same 300x300 domain, pinned to the same core.
    let c = compile("stencil.c", &["-fopenmp-simd"]);
    println!("sync, 1 thread, 300x300, whole run vs the C sweep alone:\n");
    println!("| braid sync Mcell/s | C sweep Mcell/s | braid / C |");
    println!("|---|---|---|");
    let ratios = print_rates(reps, || {
        let r = braid_run_with("sync", &["threads=1", "max_iterations=3000"]);
        let out = Command::new("taskset")
            .args(["-c", &r.cores[0].to_string()])
            .arg(&c)
            .args(["300", "300", "3000", "1", "plain"])
            .output()
            .expect("run the C stencil");
        let secs: f64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        (r.cell_updates_per_s, 300.0 * 300.0 * 3000.0 / secs)
    });
    let what = "1 thread, whole run / C sweep";
    speed
        .rows
        .push(row(group, what, Some("sync"), ratios, Some(0.95)));
}

/// Runs `rep` (braid's cell rate, the reference's) `reps` times and prints
/// the row `| braid Mcell/s | reference Mcell/s | braid / reference |` of
/// medians (the ratio's median is of the per-rep ratios); returns the
/// per-rep ratios.
fn print_rates(reps: usize, mut rep: impl FnMut() -> (f64, f64)) -> Vec<f64> {
    let (mut ours, mut theirs, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..reps {
        let (braid, reference) = rep();
        ratios.push(braid / reference);
        ours.push(braid / 1e6);
        theirs.push(reference / 1e6);
    }
    println!(
        "| {:.0} | {:.0} | {:.3} |\n",
        median(ours),
        median(theirs),
        median(ratios.clone())
    );
    ratios
}

/// The time-to-solution problem: 2 threads, 150 x 150 per thread, 1e-4.
const TTS: [&str; 4] = [
    "domain_size=150",
    "tolerance=1e-4",
    "max_iterations=1000000",
    "time_limit=120",
];

/// The C/OpenMP time-to-solution reference, on the grid written by
/// [`time_to_solution`]: seconds, sweeps, its own cell updates per second.
fn c_tts(omp: &Path, grid_file: &Path, height: usize, width: usize) -> (f64, f64, f64) {
    let out = Command::new(omp)
        .arg(grid_file)
        .args([height, width].map(|n| n.to_string()))
        .args(["1e-4", "1000000"])
        .env("OMP_NUM_THREADS", "2")
        .env("OMP_PROC_BIND", "close")
        .env("OMP_PLACES", "cores")
        .output()
        .expect("run the C/OpenMP time-to-solution reference");
    let text = String::from_utf8_lossy(&out.stdout);
    let f: Vec<f64> = text
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    assert!(f[2] <= 1e-4, "the C reference did not converge: {text}");
    (f[0], f[1], (height * width) as f64 * f[1] / f[0])
}

/// A `braid-noise` parasite pinned to `core` at duty `duty`, in this
/// process, for as long as the guard lives: braid and the C reference run
/// under the very same one.
struct Parasite {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    handle: Option<std::thread::JoinHandle<braid_noise::NoiseStats>>,
}

impl Parasite {
    fn start(core: usize, duty: f64) -> Parasite {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            braid_noise::pin(core).expect("pin the parasite");
            let sleep_us = braid_noise::DEFAULT_SLEEP.as_micros() as u64;
            let work_iters = braid_noise::Calibration::measure()
                .iters_for_duty(duty, sleep_us)
                .expect("a duty in (0, 1)");
            braid_noise::run(
                braid_noise::Rhythm {
                    sleep_us,
                    work_iters,
                },
                &flag,
                None,
            )
        });
        // Let it calibrate before anything is timed beside it.
        std::thread::sleep(std::time::Duration::from_millis(300));
        Parasite {
            stop,
            handle: Some(handle),
        }
    }

    /// Stops it and returns the duty it measured on itself.
    fn stop(mut self) -> f64 {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let h = self.handle.take().unwrap();
        h.thread().unpark();
        h.join().unwrap().duty
    }
}

fn time_to_solution(reps: usize, speed: &mut Speed) {
    let omp = compile("jacobi_tts.c", &["-fopenmp", "-lm"]);
    let problem = braid::Problem::new(150, 2, 1).unwrap();
    let grid = problem.initial_grid();
    let grid_file = Path::new(env!("CARGO_TARGET_TMPDIR")).join("tts-grid.f64");
    let bytes: Vec<u8> = grid.iter().flat_map(|v| v.to_ne_bytes()).collect();
    std::fs::write(&grid_file, bytes).expect("write the initial grid for the C reference");
    let variants = [
        "sync",
        "async(1)",
        "async(4)",
        "async(4)+split(0.001)",
        "async(4)+greedy(0.001)",
        "async(4)+steal(0.001)",
    ];
    for noisy in [false, true] {
        let parasite = noisy.then(|| Parasite::start(0, 0.19));
        if noisy {
            println!(
                "time to solution under noise: the same, with a braid-noise parasite at duty \
                 0.19 on core 0 beside both braid and the C reference:\n"
            );
        } else {
            println!(
                "time to solution, 2 threads, 150x150 per thread (150x300 grid), tolerance \
                 1e-4:\n"
            );
        }
        println!(
            "| variant | braid s | C/OpenMP sync s | braid iterations | C sweeps | C Mcell/s | \
             C / braid |"
        );
        println!("|---|---|---|---|---|---|---|");
        let mut rows: Vec<[Vec<f64>; 6]> = variants.iter().map(|_| Default::default()).collect();
        for _ in 0..reps {
            for (label, row) in variants.iter().zip(rows.iter_mut()) {
                let r = braid_run_with(label, &TTS);
                let braid_s = r.time_to_solution_s.expect("braid reaches 1e-4");
                let iterations =
                    r.thread_updates.iter().sum::<u64>() as f64 / (r.threads * r.subdomains) as f64;
                let (c_s, sweeps, rate) = c_tts(&omp, &grid_file, r.grid.height, r.grid.width);
                for (v, x) in row.iter_mut().zip([
                    braid_s,
                    c_s,
                    iterations,
                    sweeps,
                    rate / 1e6,
                    c_s / braid_s,
                ]) {
                    v.push(x);
                }
            }
        }
        let group = match noisy {
            false => "time to solution, quiet",
            true => "the same beside a 19% parasite",
        };
        // The issues' goals: the first three of issue 30 (quiet), the
        // rest of issue 42.
        let goal = |label: &str| match (noisy, label) {
            (false, "async(4)") => Some(0.95),
            (false, "async(4)+split(0.001)") => Some(1.05),
            _ => None,
        };
        // Each rep's C / braid time, by variant.
        let mut per_rep = Vec::new();
        for (label, measured) in variants.iter().zip(rows) {
            per_rep.push(measured[5].clone());
            let [b, c, bi, ci, rate, ratio] = measured.map(median);
            println!("| {label} | {b:.4} | {c:.4} | {bi:.0} | {ci:.0} | {rate:.0} | {ratio:.3} |");
            let what = format!("{label} / C");
            let reps = per_rep.last().unwrap().clone();
            speed
                .rows
                .push(row(group, &what, Some(label), reps, goal(label)));
        }
        // The balanced variants (the last three) against the plain ones,
        // rep by rep: the best and the worst of the rep's balanced runs.
        let of_rep = |k: usize, pick: fn(f64, f64) -> f64, start: f64, plain: usize| {
            let balanced = per_rep[3..].iter().map(|r| r[k]).fold(start, pick);
            balanced / per_rep[plain][k]
        };
        let best: Vec<f64> = (0..reps).map(|k| of_rep(k, f64::max, 0.0, 1)).collect();
        let worst: Vec<f64> = (0..reps)
            .map(|k| of_rep(k, f64::min, f64::INFINITY, 2))
            .collect();
        println!(
            "\nbest balanced over async(1): {:.3}; worst balanced over async(4): {:.3} \
             (medians of the reps' ratios)",
            median(best.clone()),
            median(worst.clone())
        );
        let goals = match noisy {
            true => (Some(0.98), Some(1.0)),
            false => (None, None),
        };
        let what = "best balanced / async(1)";
        speed.rows.push(row(group, what, None, best, goals.0));
        let what = "worst balanced / async(4)";
        speed.rows.push(row(group, what, None, worst, goals.1));
        if let Some(p) = parasite {
            println!(
                "\n(the parasite measured a duty of {:.3} on itself)",
                p.stop()
            );
        }
        println!();
    }
    println!(
        "what a tolerance costs (iteration rate with tolerance=1e-4 / without, same sweeps):\n"
    );
    println!("| variant | with it/s | without it/s | with / without |");
    println!("|---|---|---|---|");
    for label in ["sync", "async(1)", "async(4)"] {
        let (mut with, mut without, mut ratios) = (vec![], vec![], vec![]);
        let goal = (label == "async(1)").then_some(0.97);
        for _ in 0..reps {
            let w = braid_run_with(label, &TTS);
            let iterations = w.thread_updates.iter().max().unwrap() / w.subdomains as u64;
            let budget = format!("max_iterations={iterations}");
            let n = braid_run_with(label, &["domain_size=150", &budget]);
            ratios.push(w.iteration_rate / n.iteration_rate);
            with.push(w.iteration_rate);
            without.push(n.iteration_rate);
        }
        println!(
            "| {label} | {:.0} | {:.0} | {:.3} |",
            median(with),
            median(without),
            median(ratios.clone())
        );
        let group = "iteration rate with a tolerance";
        let what = format!("{label}, with / without");
        speed
            .rows
            .push(row(group, &what, Some(label), ratios, goal));
    }
    println!();
}

fn subsplit_cost(reps: usize, speed: &mut Speed) {
    println!("cost of sub-splitting, 2 threads, default config (5000 iterations):\n");
    println!("| per thread | async(4) it/s | async(1) it/s | async(4) / async(1) |");
    println!("|---|---|---|---|");
    for size in [150, 300] {
        let domain = format!("domain_size={size}");
        let (mut four, mut one, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..reps {
            let a4 = braid_run_with("async(4)", &[&domain]).iteration_rate;
            let a1 = braid_run_with("async(1)", &[&domain]).iteration_rate;
            ratios.push(a4 / a1);
            four.push(a4);
            one.push(a1);
        }
        println!(
            "| {size}x{size} | {:.0} | {:.0} | {:.3} |",
            median(four),
            median(one),
            median(ratios.clone())
        );
        let (group, what) = (
            "iteration rate",
            format!("async(4) / async(1), {size}² each"),
        );
        speed
            .rows
            .push(row(group, &what, Some("async(4)"), ratios, Some(0.98)));
    }
    println!();
}

fn balancing_cost(reps: usize, speed: &mut Speed) {
    println!(
        "cost of balancing, 2 threads, default config (300x300 per thread, 5000 iterations), \
         no noise: rate over async(4)'s, and the moves (median, most):\n"
    );
    println!("| variant | it/s | async(4) it/s | variant / async(4) | moves | most moves |");
    println!("|---|---|---|---|---|---|");
    for label in ["async(4)+split(0.001)", "async(4)+greedy(0.001)"] {
        let (mut rate, mut none, mut ratios, mut moves) = (vec![], vec![], vec![], vec![]);
        for _ in 0..reps {
            let r = braid_run(label);
            let n = braid_run("async(4)").iteration_rate;
            ratios.push(r.iteration_rate / n);
            rate.push(r.iteration_rate);
            none.push(n);
            moves.push(r.lb.as_ref().map_or(0, |lb| lb.moves) as f64);
        }
        let most = moves.iter().copied().fold(0.0, f64::max);
        println!(
            "| {label} | {:.0} | {:.0} | {:.3} | {:.0} | {most:.0} |",
            median(rate),
            median(none),
            median(ratios.clone()),
            median(moves)
        );
        let what = format!("{label} / async(4), quiet, most moves {most:.0}");
        speed.rows.push(row(
            "iteration rate",
            &what,
            Some(label),
            ratios,
            Some(0.98),
        ));
    }
    println!();
}

fn policy_cost(reps: usize, speed: &mut Speed) {
    println!(
        "pure balancer, microseconds per call (thresholds auto: subdomains per thread -2 and \
         +2; Algorithm 1 with the paper's 6 pairs; every other strategy joint, over uneven \
         rates; each call's moves applied):\n"
    );
    println!(
        "| subdomains | threads | joint | split (2 sockets) | steal | greedy | refine | \
         anticipate | residual |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for subs in [16usize, 256, 4096] {
        for threads in [2usize, 36, 256] {
            let owners: Vec<usize> = (0..subs).map(|s| s * threads / subs).collect();
            let sockets: Vec<usize> = (0..threads).map(|t| t * 2 / threads).collect();
            let cost = |p: &dyn Policy| {
                median(
                    (0..reps)
                        .map(|r| per_call(p, subs, &owners, &sockets, r as u64))
                        .collect(),
                )
            };
            // The thresholds `auto` gives: what each thread starts with, -2 and +2.
            let per = subs / threads;
            let bounds = Bounds {
                scope: Scope::Joint,
                low: per.saturating_sub(2).max(1),
                high: per + 2,
            };
            let printed = |scope| Progressive {
                bounds: Bounds { scope, ..bounds },
                ..Progressive::as_printed(scope)
            };
            let others: [&dyn Policy; 5] = [
                &Steal { bounds },
                &Greedy { bounds },
                &Refine {
                    bounds,
                    tolerance: 0.05,
                },
                &Anticipate {
                    bounds,
                    alpha: 0.3,
                    history: 3,
                },
                &ResidualFirst { bounds },
            ];
            let names = ["steal", "greedy", "refine", "anticipate", "residual"];
            let costs: Vec<(&str, f64)> = [
                ("joint", cost(&printed(Scope::Joint))),
                ("split (2 sockets)", cost(&printed(Scope::Split))),
            ]
            .into_iter()
            .chain(names.into_iter().zip(others.map(cost)))
            .collect();
            let mut row = format!("| {subs} | {threads} |");
            for (strategy, us) in costs {
                row += &format!(" {us:.2} |");
                speed.policy.push(PolicyCost {
                    subdomains: subs,
                    threads,
                    strategy: strategy.to_string(),
                    us_per_call: us,
                });
            }
            println!("{row}");
        }
    }
    println!();
}

/// Mean time of one call over many calls on drifting counts, with fixed
/// uneven rates, residuals and rate history (for the strategies that read
/// them), each call's moves applied before the next.
fn per_call(p: &dyn Policy, subs: usize, owners: &[usize], sockets: &[usize], seed: u64) -> f64 {
    let mut owners = owners.to_vec();
    // Counted once, then kept with the moves, as the schedule core does.
    let mut held = vec![0usize; sockets.len()];
    owners.iter().for_each(|&o| held[o] += 1);
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut counts: Vec<u64> = (0..subs).map(|_| 1000).collect();
    // Made before the clock starts: building them is not the policy's cost.
    let rates: Vec<f64> = (0..sockets.len())
        .map(|t| 100.0 + ((x >> (t % 32)) % 50) as f64)
        .collect();
    let residuals: Vec<f64> = (0..subs).map(|s| ((s * 7919) % 1000) as f64).collect();
    let history: Vec<Vec<f64>> = (0..braid::HISTORY)
        .map(|_| rates.iter().map(|r| r / 4.0).collect())
        .collect();
    let calls = 2000;
    let mut moves = 0;
    let t = Instant::now();
    for call in 1..=calls {
        // Counts drift as in a run: a few subdomains advance each call.
        for _ in 0..8 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            counts[(x % subs as u64) as usize] += x % 5;
        }
        let decided = p.decide(&Snapshot {
            call,
            rates: &rates,
            residuals: &residuals,
            history: &history,
            held: &held,
            ..Snapshot::of(&counts, &owners, sockets)
        });
        // Applied, as the schedule core does, so that calls see the
        // assignment the previous ones left.
        for m in &decided {
            owners[m.sub] = m.to;
            held[m.from] -= 1;
            held[m.to] += 1;
        }
        moves += decided.len();
    }
    std::hint::black_box(moves);
    t.elapsed().as_secs_f64() / calls as f64 * 1e6
}

/// One simulation on the paper's 2 x 18 machine; returns real seconds taken
/// and subdomain updates done.
fn simulate(label: &str, overrides: &[&str]) -> (f64, u64) {
    let mut cfg = Config::default();
    cfg.apply_variant(label).unwrap();
    cfg.apply_override("noise=thread").unwrap();
    cfg.apply_override("noise_cores=auto:0.19").unwrap();
    for o in overrides {
        cfg.apply_override(o).unwrap();
    }
    let plan = Plan::simulated(&cfg).unwrap();
    let sim = plan.sim().unwrap();
    let t = Instant::now();
    let (out, _) = braid::simulate(
        &plan.problem,
        &plan.placement,
        &plan.settings,
        sim,
        plan.noise.as_ref(),
    );
    (
        t.elapsed().as_secs_f64(),
        out.subdomain_updates.iter().sum(),
    )
}

fn sim_speed(reps: usize, speed: &mut Speed) {
    println!("simulator speed, one core, virtual cores with one at 19% noise:\n");
    println!(
        "| simulation | real time | subdomain updates / real s | vs bare kernel on the same data |"
    );
    println!("|---|---|---|---|");
    let machines: [(&str, &[&str]); 2] = [
        ("2 x 18, 5000 iterations", &[]),
        (
            "host:64 pack:2 core:32 (4096 threads), 1000 iterations",
            &["sim_topology=host:64 pack:2 core:32", "max_iterations=1000"],
        ),
    ];
    // Issue 47's goals, for every counts-only simulation.
    let goals = [3e7, 2e7];
    for ((machine, overrides), goal) in machines.into_iter().zip(goals) {
        for label in [
            "async(4)",
            "async(4)+joint(0.001)",
            "async(4)+split(0.001)",
            "sync",
        ] {
            let runs: Vec<(f64, u64)> = (0..reps).map(|_| simulate(label, overrides)).collect();
            let secs = median(runs.iter().map(|r| r.0).collect());
            let rates: Vec<f64> = runs.iter().map(|r| r.1 as f64 / r.0).collect();
            let rate = median(rates.clone());
            println!(
                "| {label}, counts only, {machine} | {:.3} s | {:.2e} | |",
                secs, rate
            );
            // Sync steps every thread at once and runs 5-10x faster than
            // any other: the table has it, the figure's axis is kept for
            // the rows the goal is about.
            if label == "sync" {
                continue;
            }
            let group = "simulator, counts only";
            let short = match machine.starts_with("host") {
                true => "4096 threads",
                false => "2 x 18",
            };
            speed.rows.push(SpeedRow {
                measure: Measure::UpdatesPerS,
                ..row(
                    group,
                    &format!("{label}, {short}"),
                    Some(label),
                    rates,
                    Some(goal),
                )
            });
        }
    }
    // Numerics: cells per real second against the bare kernel sweeping the
    // same data (one block per simulated subdomain, round robin): 36
    // domains do not fit in one core's caches, for the simulator or anyone.
    let blocks_rate = |blocks: usize, h: usize, w: usize| {
        let block = kernel::Block::padded(h, w);
        let mut bufs: Vec<(kernel::Buffer, kernel::Buffer)> = (0..blocks)
            .map(|_| {
                let a = kernel::Buffer::new(block, 1.0);
                (a.clone(), a)
            })
            .collect();
        let sweeps = 20;
        let t = Instant::now();
        for _ in 0..sweeps {
            for (a, b) in bufs.iter_mut() {
                kernel::sweep_block(a, b, block);
                std::mem::swap(a, b);
            }
        }
        (blocks * h * w * sweeps) as f64 / t.elapsed().as_secs_f64()
    };
    for label in ["async(4)", "sync"] {
        // Interleaved: each rep's simulation, then the kernel on its data.
        let (cells_per_update, blocks, side) = match label {
            "sync" => (300.0 * 300.0, 36, 300),
            _ => (150.0 * 150.0, 144, 150),
        };
        let (mut secs, mut rates, mut ratios) = (vec![], vec![], vec![]);
        for _ in 0..reps {
            let (s, updates) = simulate(label, &["numerics=true", "max_iterations=400"]);
            let rate = updates as f64 * cells_per_update / s;
            ratios.push(rate / blocks_rate(blocks, side, side));
            secs.push(s);
            rates.push(rate);
        }
        println!(
            "| {label}, numerics, 400 iterations | {:.3} s | {:.2e} cells/s | {:.3} |",
            median(secs),
            median(rates),
            median(ratios.clone())
        );
        let (group, what) = (
            "simulator, numerics",
            format!("{label}, 2 x 18 / bare kernel"),
        );
        speed
            .rows
            .push(row(group, &what, Some(label), ratios, None));
    }
    println!();
}

/// Flops per cell of the plain sweep (three additions, one multiplication)
/// and of braid's residual sweep (also `v - u` and a fused `acc + d * d`).
const PLAIN_FLOPS: f64 = 4.0;
const RESIDUAL_FLOPS: f64 = 7.0;
/// Compulsory traffic per cell: its value read once, its new value written.
const BYTES_PER_CELL: f64 = 16.0;

/// This core's data caches, smallest first: (name, bytes), from sysfs.
fn data_caches(core: usize) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for index in 0.. {
        let dir = PathBuf::from(format!(
            "/sys/devices/system/cpu/cpu{core}/cache/index{index}"
        ));
        let Ok(kind) = std::fs::read_to_string(dir.join("type")) else {
            break;
        };
        if kind.trim() == "Instruction" {
            continue;
        }
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
        let size = read("size");
        let size = size.trim();
        let bytes = match size.strip_suffix('K') {
            Some(k) => k.parse::<usize>().ok().map(|k| k << 10),
            None => size
                .strip_suffix('M')
                .and_then(|m| m.parse::<usize>().ok())
                .map(|m| m << 20),
        };
        if let Some(bytes) = bytes {
            out.push((format!("L{}", read("level").trim()), bytes));
        }
    }
    assert!(
        !out.is_empty(),
        "roofline: no data cache described under /sys/devices/system/cpu/cpu{core}/cache"
    );
    out
}

/// Bytes per second of `dst = 0.5 src + 0.25` over two arrays of `bytes`
/// in all, counting 8 read and 8 written per element (the stencil's
/// compulsory traffic per cell, counted the same way).
fn bandwidth(bytes: usize) -> f64 {
    let n = (bytes / 16).max(1024);
    let mut a = vec![1.0f64; n];
    let mut b = vec![1.0f64; n];
    let passes = (4usize << 30).div_ceil(16 * n).max(2);
    let pass = |src: &[f64], dst: &mut [f64]| {
        for (d, s) in dst.iter_mut().zip(src) {
            *d = 0.5 * s + 0.25;
        }
    };
    pass(&a, &mut b); // warm up: pages touched, caches filled
    let t = Instant::now();
    for _ in 0..passes / 2 {
        pass(&a, &mut b);
        pass(&b, &mut a);
    }
    let secs = t.elapsed().as_secs_f64();
    std::hint::black_box((&a, &b));
    (passes / 2 * 2 * 16 * n) as f64 / secs
}

/// Flops per second of 8 independent 8-lane chains of fused multiply-adds
/// (`x = 0.5 x + 0.25`, which stays normal): enough in flight to fill every
/// FMA pipe whatever its latency. The chains stay in registers: nothing
/// sees them until the loop is done.
fn fma_peak() -> f64 {
    const CHAINS: usize = 8;
    let mut acc = [[1.0f64; 8]; CHAINS];
    let (a, b) = (std::hint::black_box(0.5), std::hint::black_box(0.25));
    let iters = 50_000_000usize;
    let t = Instant::now();
    for _ in 0..iters {
        for v in acc.iter_mut() {
            for x in v.iter_mut() {
                *x = x.mul_add(a, b);
            }
        }
    }
    let secs = t.elapsed().as_secs_f64();
    std::hint::black_box(acc);
    (iters * CHAINS * 8 * 2) as f64 / secs
}

fn roofline(reps: usize) {
    let core = last_core();
    let caches = data_caches(core);
    // Half of each cache (the other half for whatever else lives there),
    // and memory at 8x the last level.
    let largest = caches.last().unwrap().1;
    let mut levels: Vec<(String, usize, usize)> = caches
        .iter()
        .map(|(name, bytes)| (name.clone(), *bytes, bytes / 2))
        .collect();
    levels.push(("memory".into(), usize::MAX, 8 * largest));
    println!("roofline of core {core}, measured here (median of {reps} reps):\n");
    println!("| ceiling | size | measured on | GB/s or Gflop/s |");
    println!("|---|---|---|---|");
    let mut ceilings = Vec::new();
    for (name, size, on) in &levels {
        let gb = median(
            (0..reps)
                .map(|_| on_core(core, || bandwidth(*on)))
                .collect(),
        ) / 1e9;
        let shown = if *size == usize::MAX {
            "-".to_string()
        } else {
            format!("{} KiB", size >> 10)
        };
        println!(
            "| {name} | {shown} | {} KiB in two arrays | {gb:.1} GB/s |",
            on >> 10
        );
        assert!(
            gb > 0.0 && gb.is_finite(),
            "roofline: {name} bandwidth {gb} GB/s"
        );
        ceilings.push(braid_cli::roofline::Ceiling {
            name: name.clone(),
            gb_per_s: gb,
        });
    }
    let peak = median((0..reps).map(|_| on_core(core, fma_peak)).collect()) / 1e9;
    println!("| FMA peak | | 8 x 8 lanes of x = 0.5 x + 0.25 | {peak:.1} Gflop/s |\n");
    assert!(
        peak > 0.0 && peak.is_finite(),
        "roofline: FMA peak {peak} Gflop/s"
    );

    // A block whose buffers overflow a level only a little is still served
    // partly by it: its bound is the bandwidth measured on a footprint of
    // its own size, which a level's ceiling would understate.
    println!(
        "the kernel under its bound (bound = min(peak, intensity x the bandwidth measured on a \
         footprint the size of its two buffers); intensity = flops per cell / {BYTES_PER_CELL} \
         bytes):\n"
    );
    println!(
        "| block | sweep | two buffers | fits in | GB/s there | flop/byte | Mcell/s | Gflop/s \
         | bound Gflop/s | of bound |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let mut points = Vec::new();
    let mut over = Vec::new();
    for (h, w, sweeps) in [
        (24, 24, 400_000),
        (75, 75, 48000),
        (150, 150, 12000),
        (300, 300, 3000),
    ] {
        let buffers = 2 * 8 * kernel::Block::padded(h, w).len();
        let level = levels
            .iter()
            .position(|(_, size, _)| buffers <= *size)
            .unwrap();
        let there = median(
            (0..reps)
                .map(|_| on_core(core, || bandwidth(buffers)))
                .collect(),
        );
        assert!(
            there > 0.0,
            "roofline: bandwidth on {buffers} bytes: {there}"
        );
        for (sweep, flops, residual) in [
            ("plain", PLAIN_FLOPS, false),
            ("residual", RESIDUAL_FLOPS, true),
        ] {
            let cells = (h * w * sweeps) as f64;
            let rate = median(
                (0..reps)
                    .map(|_| cells / on_core(core, || time_rust_sweeps(h, w, sweeps, residual)))
                    .collect(),
            );
            let intensity = flops / BYTES_PER_CELL;
            let gflops = rate * flops / 1e9;
            let bound = (intensity * there / 1e9).min(peak);
            let share = gflops / bound;
            println!(
                "| {h}x{w} | {sweep} | {} KiB | {} | {:.1} | {intensity:.3} | {:.0} | {gflops:.1} \
                 | {bound:.1} | {:.0}% |",
                buffers >> 10,
                levels[level].0,
                there / 1e9,
                rate / 1e6,
                100.0 * share
            );
            if share > 1.1 {
                over.push(format!("{sweep} {h}x{w} at {:.0}%", 100.0 * share));
            }
            points.push(braid_cli::roofline::Point {
                label: format!("{sweep} {h}x{w}"),
                flop_per_byte: intensity,
                gflops,
            });
        }
    }
    println!();
    let figure = braid_cli::roofline::Roofline::measured(
        format!(
            "{}, core {core}",
            std::fs::read_to_string("/proc/cpuinfo")
                .ok()
                .and_then(|c| c
                    .lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split(':').nth(1))
                    .map(|m| m.trim().to_string()))
                .unwrap_or_else(|| "this machine".into())
        ),
        ceilings,
        peak,
        points,
    );
    // What was measured beside its figure: `braid plot
    // target/roofline.json` draws it again.
    match figure.write(out_dir(), "roofline") {
        Ok(files) => println!("written: {}\n", files[0].display()),
        Err(e) => panic!("roofline: cannot draw the figure: {e}"),
    }
    assert!(
        over.is_empty(),
        "roofline: the kernel beats its bound by more than 10%, so a bound is wrong: {}",
        over.join(", ")
    );
}
