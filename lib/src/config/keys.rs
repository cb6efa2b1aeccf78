//! Every configuration key, defined once: its name, type, default, the
//! parser that checks its bounds, its documentation and its section. The
//! [`Config`] struct (and so the effective configuration in every report),
//! its `Default`, the key list, the setter and `config.txt` itself
//! ([`document`], printed by `braid config`) are all generated from the one
//! table below.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::parser::Parser;
use super::{AutoOr, ConfigError, NoiseCore, Origin};
use crate::engine::{Group, Jitter, SimLoads, Slow, Stall};
use crate::limits::*;
use crate::noise::{NoiseForm, NoiseOffsets};
use crate::policy::{Gate, LbStrategy, Named};
use crate::topology::SimTopology;
use crate::variant::{BalancerKey, Interval, Mode};
use crate::workload::WorkloadSpec;

/// One key as `config.txt` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Key {
    /// As written on the left of `=`.
    pub name: &'static str,
    /// The default, as written in `config.txt`.
    pub default: &'static str,
    /// Comment lines printed above it (empty: it shares the one above).
    pub doc: &'static [&'static str],
    /// The section it opens, if it is the first of one.
    pub section: Option<&'static str>,
}

/// Parses a key's default text; a default that does not parse is a bug
/// that `every_default_parses` catches.
fn default_of<T>(
    key: &'static str,
    text: &'static str,
    parse: fn(&Parser<'_>) -> Result<T, ConfigError>,
) -> T {
    parse(&Parser::new(key, text, Origin::Default))
        .unwrap_or_else(|e| panic!("the default of `{key}` does not parse: {e}"))
}

macro_rules! config_keys {
    (
        $(
            $([$section:literal])?
            $(#[doc = $doc:literal])*
            $(#[serde($($serde:tt)*)])?
            $key:ident: $ty:ty = $default:literal, $parse:expr;
        )*
    ) => {
        /// Everything a run needs to know, as typed values (one field per
        /// key, in `config.txt` order). Written whole, every key as used
        /// (zeros and defaults included), so that a report read back gives
        /// the very configuration that ran; read from a report older than a
        /// key, that key takes its default.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(default)]
        pub struct Config {
            $(
                #[doc = concat!("`", stringify!($key), "` (config.txt, `braid config`)")]
                #[doc = ""]
                $(#[doc = $doc])*
                $(#[serde($($serde)*)])?
                pub $key: $ty,
            )*
        }

        /// Every key, in `config.txt` order.
        pub(crate) const KEYS: &[Key] = &[
            $( Key {
                name: stringify!($key),
                default: $default,
                doc: &[$($doc),*],
                section: config_keys!(@section $($section)?),
            }, )*
        ];

        impl Default for Config {
            /// The paper's settings: the defaults in the table.
            fn default() -> Self {
                Config {
                    $( $key: default_of(stringify!($key), $default, $parse), )*
                }
            }
        }

        impl Config {
            /// The keys whose value differs from the default, in
            /// `config.txt` order.
            pub fn changed_keys(&self) -> Vec<&'static str> {
                let default = Config::default();
                let mut keys = Vec::new();
                $( if self.$key != default.$key {
                    keys.push(stringify!($key));
                } )*
                keys
            }

            /// Sets `key` from its text; an unknown key is refused.
            pub(super) fn set(
                &mut self,
                key: &str,
                value: &str,
                origin: Origin,
            ) -> Result<(), ConfigError> {
                match key {
                    $( stringify!($key) => {
                        let parse: fn(&Parser<'_>) -> Result<$ty, ConfigError> = $parse;
                        self.$key = parse(&Parser::new(stringify!($key), value, origin))?;
                    } )*
                    _ => {
                        return Err(ConfigError::UnknownKey {
                            origin,
                            key: key.to_string(),
                        })
                    }
                }
                Ok(())
            }
        }
    };
    (@section $s:literal) => { Some($s) };
    (@section) => { None };
}

config_keys! {
    ["Problem"]
    /// Cells per side of each thread's square domain (paper: 300). The T domains
    /// tile the global grid as rows x cols, rows = largest divisor of T <= sqrt(T).
    domain_size: usize = "300", |p| p.count(MAX_DOMAIN_SIZE);
    /// Pieces each domain is split into, as square as possible (paper: 4). A
    /// subdomain is the unit of work and of migration.
    subdomains: usize = "4", |p| p.count(MAX_SUBDOMAINS);
    /// What each cell costs, as a factor f on a plain update (both engines; a
    /// subdomain costs the mean over its cells): uniform (every f = 1); random(lo, hi),
    /// one f per subdomain drawn in [lo, hi] from seed; hotspot(f, x, y, r), f within
    /// r of (x, y); moving(f, x, y, r, vx, vy), whose centre moves by (vx, vy) per
    /// iteration of progress; growing(f, x, y, r0, dr), whose radius grows by dr per
    /// iteration of progress; map:FILE, a grid of factors laid over the cells (text
    /// rows, or .npy); or lbdata:PATH, one f per subdomain from the task
    /// times of a recorded run (DARMA vt's LB data, or --lb-data's; a directory, or
    /// DIR/STEM for STEM.N.json), phase by phase, lbdata(S):PATH if its times are
    /// in units of S seconds (docs/lb-data.md). x, y: fractions of the grid
    /// from its west and north (source) sides; radii: fractions of its longer side;
    /// progress: the mean updates per subdomain so far. braid run sweeps a subdomain
    /// f times per update (so f >= 1 there); braid sim charges f times the cells'
    /// cost. Details: lib/src/workload.rs.
    workload: WorkloadSpec = "uniform", |p| p.workload();

    ["Scheme"]
    /// sync | ssync | async. Paper labels via --variant: sync, ssync(n), async(n),
    /// async(n)+split(f), async(n)+joint(f), async(n)+hybrid(f,k).
    mode: Mode = "async", |p| p.choice(&Mode::NAMES);
    /// ssync only: a subdomain may be updated only while every neighbour's update
    /// count is >= its own minus this.
    staleness: u64 = "0", |p| p.whole();

    ["Stopping"]
    /// Iterations per domain: the run stops when one thread has done
    /// max_iterations x subdomains subdomain updates (paper: 5000).
    max_iterations: u64 = "5000", |p| p.within(1, MAX_ITERATIONS);
    /// Relative residual target ||r||/||r0|| (paper's time-to-solution runs: 1e-4).
    /// 0 = no target: run to max_iterations.
    tolerance: f64 = "0", |p| p.number("a number", 1.0);
    /// Wall-clock limit in seconds; 0 = none. A run that hits it reports so.
    time_limit: f64 = "0", |p| p.seconds(" (0 = none)");

    ["Machine"]
    /// Threads, one per core; auto = one per selected core.
    threads: AutoOr<usize> = "auto", |p| p.auto_or(|p| p.count(MAX_THREADS));
    /// auto = sockets as detected; a number N splits the selected cores into N
    /// virtual sockets of consecutive cores (to exercise split/hybrid balancing).
    sockets: AutoOr<usize> = "auto", |p| p.auto_or(|p| p.count(MAX_CPUS));
    /// auto = every core this process may run on; or a list such as 0,2,4-7.
    cores: AutoOr<Vec<usize>> = "auto", |p| p.auto_or(|p| p.core_list());
    /// Allow more threads than cores (several threads pinned per core).
    oversubscribe: bool = "false", |p| p.boolean();
    /// Seed for every random choice (hybrid's cross-socket pick).
    seed: u64 = "0", |p| p.whole();
    /// Memory a run may take, in GiB: auto = what the machine has available now
    /// (MemAvailable). A run whose estimate (grids, subdomains, trace) exceeds it
    /// is refused before anything is allocated.
    memory_limit: AutoOr<f64> = "auto", |p| p.auto_or(|p| p.number("GiB", 1e9));

    ["Progressive load balancing (async only)"]
    /// none | split | joint | hybrid | auto | learned:MODEL.json: the balancer's
    /// scope (each socket on its own; all cores together; split plus a
    /// cross-socket move every hybrid_period-th call), auto: try each of
    /// lb_candidates and keep the one whose measured effort is lowest
    /// (lib/src/schedule/choose.rs), or learned: at each call, the strategy a model
    /// that braid learn trained names for the run's features (docs/learned.md).
    balancer: BalancerKey = "none", |p| p.with_file();
    /// progressive | steal | greedy | refine | anticipate | residual | gossip |
    /// prescribed:DIR: the paper's Algorithm 1 (labels split(f), joint(f),
    /// hybrid(f,k)), a strategy from the literature over the same scope (labels
    /// steal(f), greedy-split(f), refine-hybrid(f,k), ...; each is described in
    /// lib/src/policy/), or the owners of a directory of LB data that an offline tool
    /// wrote, applied phase by phase (docs/lb-data.md).
    lb_strategy: LbStrategy = "progressive", |p| p.with_file();
    /// balancer = auto: the balancers it chooses from, by label name (hybrid ones
    /// take hybrid_period).
    lb_candidates: Vec<Named> = "split, joint, steal, greedy, refine, anticipate, residual",
        |p| p.balancers();
    /// balancer = learned as a label names it (async(4)+learned(0.001)): the model
    /// that braid learn wrote; none = the one balancer = learned:MODEL.json names.
    lb_model: Option<PathBuf> = "none", |p| p.optional_path();
    /// Seconds between balancer calls (paper: 0.001); auto = when a call has paid
    /// for itself (the effort-metric paper's rule): sqrt(2 C / g) with C the measured
    /// cost of a call and g the growth per second of the loss rate, kept within 4 and
    /// 4000 sweeps of the subdomains (lib/src/schedule/calls.rs); degradation = ULBA's
    /// trigger, for sync(n)+BALANCER only: a call once the iterations since the last
    /// have lost what a call costs (lib/src/schedule/degradation.rs).
    lb_interval: Interval = "0.001", |p| p.interval();
    /// What split and hybrid keep moves within: socket (the paper's) or node
    /// (the host: across MPI ranks, or the simulator's host:N level; in one
    /// process one node holds every thread).
    lb_group: Group = "socket", |p| p.choice(&[("socket", Group::Socket), ("node", Group::Node)]);
    /// hybrid: one cross-socket move every this many calls (paper: 500).
    hybrid_period: u64 = "500", |p| p.positive().map(|n| n as u64);
    /// Most/least updated subdomain pairs considered per call (paper: 6).
    pairs: usize = "6", |p| p.positive();
    /// A thread keeps more than low_threshold subdomains and receives one only
    /// while it has fewer than high_threshold. auto = subdomains - 2 (at least 1)
    /// and subdomains + 2: the paper's 2 and 6 at 4 subdomains. A balancer that
    /// could never move (high_threshold <= subdomains) is refused.
    low_threshold: AutoOr<usize> = "auto",
        |p| p.auto_or(|p| p.within(0, MAX_SUBDOMAINS as u64).map(|n| n as usize));
    high_threshold: AutoOr<usize> = "auto", |p| p.auto_or(|p| p.count(MAX_SUBDOMAINS));
    /// The dead band: a pair is balanced only when the most updated subdomain is
    /// more than this many updates ahead of the least updated one (0 = any gap,
    /// as Algorithm 1 is printed). auto = the measured default (lib/src/policy/).
    lb_min_gap: AutoOr<u64> = "auto", |p| p.auto_or(|p| p.within(0, MAX_ITERATIONS));
    /// Predicted moves: a pair is balanced only when the fast thread, holding one
    /// more subdomain, would still update each of its subdomains faster than the
    /// slow thread does now (both measured over the last interval). false =
    /// Algorithm 1 as printed, which also moves when that makes things worse.
    lb_predict: bool = "true", |p| p.boolean();
    /// What a subdomain costs a thread other than its home one (swept on its own,
    /// outside its domain's slab), over what it costs at home, less 1: a rate-based
    /// move must win that back. auto = the cost model's (sim_update_ns, sim_row_ns,
    /// sim_cell_ns); 0 = every thread alike (measured: no faster, docs/balancing.md).
    /// Whatever it is, a guest goes home before a thread gives its own away.
    lb_away_cost: AutoOr<f64> = "0", |p| p.auto_or(|p| p.number_noted("a fraction", 10.0, " (or auto)"));
    /// none | payoff: payoff keeps only the moves that shorten the run's forecast
    /// time (the slowest error mode's weights over each thread's pass, with measured
    /// loads and speeds and what a guest away from home measured to cost), and
    /// sends home a guest that no longer pays (lib/src/policy/payoff.rs).
    lb_gate: Gate = "none", |p| p.choice(&[("none", Gate::None), ("payoff", Gate::Payoff)]);
    /// refine: how far above the even sweep (total measured load over total
    /// speed) a thread's sweep may stay (0.05 = 5%).
    lb_tolerance: f64 = "0.05", |p| p.number("a fraction", 10.0);
    /// anticipate: a thread whose measured load grew faster than the others' over
    /// the last lb_history calls (ULBA's workload increase rate) is unloaded by
    /// this fraction below its even share (ULBA's alpha, from 0 to 0.9; 0 =
    /// greedy). Before loads are measured: a thread slower than the mean in each
    /// of the last lb_history calls.
    lb_alpha: f64 = "0.3", |p| p.number("a fraction", 0.9);
    lb_history: usize = "3", |p| p.within(1, crate::policy::HISTORY as u64).map(|n| n as usize);
    /// greedy, refine, anticipate, gossip and lb_gate = payoff: each subdomain's load
    /// is the second lowest of its last lb_recent intervals (a quarter in from the
    /// low end), and each thread's speed the second highest, so that an interval a
    /// thread lost to the machine moves nothing. 1 = the last interval's, as the
    /// printed algorithms read them: no defence against jitter, and no lag behind a
    /// load that grows (the default reads such a load about two intervals late).
    lb_recent: usize = "4", |p| p.within(1, crate::policy::HISTORY as u64).map(|n| n as usize);
    /// Intervals measured before any strategy moves anything: enough to tell an
    /// imbalance from a real machine's jitter. 1 = decide from the first
    /// interval on, as the printed algorithms do on exact loads (the
    /// simulator's); on real cores one preempted interval then moves work.
    lb_window: usize = "3", |p| p.within(1, crate::policy::HISTORY as u64).map(|n| n as usize);
    /// Seconds between samples of every subdomain's count and owner in the
    /// report's `trace` (the braid plot); 0 = no trace.
    trace_interval: f64 = "0", |p| p.seconds(" (0 = no trace)");
    /// Whether the JSON report lists each thread's and each subdomain's counts,
    /// owners, cores and the machine's sockets; false keeps the numbers only (a
    /// simulation of millions of threads, whose lists are hundreds of MB).
    report_lists: bool = "true", |p| p.boolean();

    ["Noise (the paper's parasite, section 4.3)"]
    /// none | process | thread | trace: a parasite on each noisy core alternates
    /// sleeping noise_sleep_us and noise_work_iters iterations of sum = sum * a + b
    /// (about 13% of a core here; `braid-noise --calibrate` tells), or replays the
    /// trace its entry names. trace = threads replaying a trace on every core.
    noise: NoiseForm = "none", |p| p.choice(&[
        ("none", NoiseForm::None),
        ("process", NoiseForm::Process),
        ("thread", NoiseForm::Thread),
        ("trace", NoiseForm::Trace),
    ]);
    /// A list of CORE, CORE:DUTY or CORE:FILE, e.g. auto:0.19, 3:0.05. auto = the
    /// core of the thread whose domain is next to the source (the paper's
    /// placement); a number = any core this process may use, worker or not. DUTY
    /// in (0, 1) picks the work iterations that take that share of the core on this
    /// machine; FILE = a trace recorded by `braid-noise --record` (path from the
    /// working directory, no commas), replayed in a loop; with neither,
    /// noise_sleep_us and noise_work_iters below.
    noise_cores: Vec<NoiseCore> = "auto", |p| p.noise_cores();
    noise_sleep_us: u64 = "200", |p| p.within(0, MAX_NOISE_SLEEP_US);
    noise_work_iters: u64 = "10000", |p| p.within(0, MAX_NOISE_WORK_ITERS);
    /// independent | cosched: where each replayed trace starts, drawn from seed,
    /// in both engines. cosched = every core at the same offset (LogGOPSim's
    /// --noise-cosched), so one trace's detours line up across cores.
    noise_offsets: NoiseOffsets = "independent", |p| p.choice(&[
        ("independent", NoiseOffsets::Independent),
        ("cosched", NoiseOffsets::Cosched),
    ]);

    ["Test hooks"]
    /// none, or THREAD@UPDATES:SECONDS: that thread stalls for SECONDS inside its
    /// UPDATES-th subdomain update (proves that no run can hang).
    stall: Option<Stall> = "none", |p| p.stall();
    /// none, or THREAD:FACTOR: after each update that thread spins, on its CPU clock,
    /// FACTOR times its fastest update's duration, like a core 1 + FACTOR times slower
    /// however busy the machine is (a noise stand-in for tests of balancing).
    slow: Option<Slow> = "none", |p| p.slow();

    ["braid sim (virtual time; ignored by braid run)"]
    /// Do the real Jacobi arithmetic (needed for tolerance, residuals and --grid);
    /// false counts updates only, which is much faster.
    numerics: bool = "false", |p| p.boolean();
    /// The simulated machine, in hwloc's synthetic syntax as `lstopo --of synthetic`
    /// prints it (attributes and memory children are read and ignored; a short
    /// form such as pack:2 core:18 works too), or, with the hwloc feature,
    /// xml:FILE as `lstopo --of xml` writes it. The paper's Cirrus: pack:2 core:18 pu:1.
    sim_topology: SimTopology = "pack:2 core:18 pu:1", |p| p.sim_topology();
    /// Speed factors of cores (manufacturing variability): uniform, or CORE:FACTOR,
    /// e.g. 3:0.95, 7:1.05 (higher is faster; unlisted cores 1.0).
    sim_speed: Vec<(usize, f64)> = "uniform", |p| p.speeds();
    /// Costs in nanoseconds of virtual time, measured on this machine by
    /// `braid sim --calibrate`: per cell of an update, per update besides its cells
    /// and rows (a subdomain in its home slab pays 1/n of it, n its domain's
    /// subdomains; one moved away all of it), per balancer call, extra per cell for
    /// the first update after a move to
    /// another socket, per barrier, per work iteration of a noise parasite; and the
    /// cost per cell of an update that also computes its local residual (runs with a
    /// tolerance), as a multiple of sim_cell_ns.
    /// sim_remote_cell_ns cannot be measured on a one-socket machine: an assumption
    /// (about twice the local cost per cell for one cold update).
    sim_cell_ns: f64 = "0.29", |p| p.cost();
    sim_update_ns: f64 = "100", |p| p.cost();
    sim_balancer_ns: f64 = "1800", |p| p.cost();
    sim_remote_cell_ns: f64 = "0.6", |p| p.cost();
    sim_barrier_ns: f64 = "4500", |p| p.cost();
    sim_noise_iter_ns: f64 = "4.06", |p| p.cost();
    sim_residual_factor: f64 = "1.15", |p| p.number("a multiple of sim_cell_ns", 1e3);
    /// Per row of an update (why a small subdomain costs more per cell; in its home
    /// slab a subdomain shares each row with those beside it), and what a real update
    /// pays that the costs above do not (`braid validate` and `braid sim --calibrate`
    /// measure it; 0 leaves it out): extra per cell for the first update after a move
    /// to another core of the same socket (a cold cache).
    sim_row_ns: f64 = "18", |p| p.cost();
    sim_cold_cell_ns: f64 = "0", |p| p.cost();
    /// Per block beyond the first of a home slab's pass, shared by the subdomains it
    /// sweeps: with some of a domain's subdomains away, its thread sweeps those left
    /// as several blocks, each with halos and edges of its own (`braid validate`
    /// measures it with one subdomain moved; 0 leaves it out).
    sim_block_ns: f64 = "0", |p| p.cost();
    /// Per update of a subdomain swept in its home slab, besides its share of the
    /// pass: what each subdomain of a pass costs on its own (its count, its gate, its
    /// edges published), so that a domain split into more subdomains sweeps slower
    /// (`braid validate` and `braid sim --calibrate` fit it with sim_cell_ns over the
    /// splits they time; 0 leaves it out).
    sim_home_update_ns: f64 = "0", |p| p.cost();
    /// Per cell of each edge an update reads from a subdomain another thread owns
    /// (its cache lines come from the other core).
    sim_remote_edge_ns: f64 = "0", |p| p.cost();
    /// What a worker loses besides each parasite burst or trace detour on its core:
    /// the switches, and its caches refilled after.
    sim_noise_switch_ns: f64 = "0", |p| p.cost();
    /// none, or SD:SECONDS[:CORE_SD]: each core's speed is 1 + SD x z times its own
    /// in each window of SECONDS, z a standard normal drawn from the seed, and
    /// 1 + CORE_SD x z' for the whole run, as the rates of quiet real threads jitter
    /// (so that balancers move and counts drift apart as on real threads).
    sim_jitter: Option<Jitter> = "none", |p| p.jitter();
    /// model | measured: the object loads the balancers see. model = each
    /// subdomain's cost from the cost model, exact; measured = as braid run
    /// measures them, the virtual time its updates took (the bursts and jitter that
    /// fell in them included) at its owner's speed, so that a balancer sees the
    /// scatter a real one sees.
    sim_loads: SimLoads = "model", |p| p.choice(&[
        ("model", SimLoads::Model),
        ("measured", SimLoads::Measured),
    ]);
    /// Seconds between the checks of the residual estimate in ssync/async, as
    /// `braid run`'s monitor makes them (0.001), a refuted check then cutting the
    /// line as the runtime's restart does; 0 checks after every event, a refuted
    /// check cutting it just past the target.
    sim_monitor_s: f64 = "0", |p| p.seconds("");
    /// Across nodes (a sim_topology with a host level, e.g. host:4 pack:2 core:18),
    /// LogGP's parameters in nanoseconds: the latency L of a message between nodes,
    /// the gap G per byte on the wire, a message's CPU overhead o at each end and the
    /// least gap g between two messages a thread sends. In ssync/async what an update
    /// reads of a neighbour on another node is its edge as it was sent, once arrived
    /// (o + (bytes-1) G + L + o later, sends spaced g + (bytes-1) G apart). An update
    /// pays o and the bytes of each edge it sends to another node; a sync iteration
    /// that spans nodes waits one latency more; the first update after a move to
    /// another node pays a latency and the bytes of its cells. Defaults: an
    /// InfiniBand-class network (2 us, 10 GB/s), o = g = 0. LogGOPSim's defaults:
    /// L=2500, G=6, o=1500, g=1000.
    sim_node_latency_ns: f64 = "2000", |p| p.cost();
    sim_node_byte_ns: f64 = "0.1", |p| p.cost();
    sim_node_overhead_ns: f64 = "0", |p| p.cost();
    sim_node_gap_ns: f64 = "0", |p| p.cost();
}

/// The section of the keys only the simulator reads.
const SIM_SECTION: &str = "braid sim (virtual time; ignored by braid run)";

/// The keys only the simulator reads (its section of `config.txt`).
pub(crate) fn sim_only(key: &str) -> bool {
    let start = KEYS
        .iter()
        .position(|k| k.section == Some(SIM_SECTION))
        .expect("the simulator's section exists");
    KEYS[start..].iter().any(|k| k.name == key)
}

/// The keys the real runtime reads and the simulator does not model.
pub(crate) fn run_only(key: &str) -> bool {
    key == "stall"
}

/// The head of `config.txt`.
const PREAMBLE: &str = "\
# braid run configuration.
#
# Format: one `key = value` per line; `#` starts a comment. Every key is
# optional (its default is the value shown). On the command line,
# `--variant LABEL` sets mode/staleness/subdomains/balancer from a paper label
# and then `KEY=VALUE` arguments override single keys, in that order.
";

/// `config.txt`: every key with its documentation and default, by section.
pub fn document() -> String {
    let mut out = PREAMBLE.to_string();
    for key in KEYS {
        if let Some(section) = key.section {
            let rule = "-".repeat(70usize.saturating_sub(section.len()));
            out.push_str(&format!("\n# --- {section} {rule}\n"));
        }
        for line in key.doc {
            out.push_str(&format!("#{line}\n").replace("# \n", "#\n"));
        }
        out.push_str(&format!("{} = {}\n", key.name, key.default));
    }
    out
}
