//! Work that differs per subdomain: the application's own imbalance, next
//! to the machine's (noise). A [`WorkloadSpec`] is the `workload` key as
//! written; `plan` builds a [`Workload`] from it on the run's problem, and
//! both engines ask it for each update's cost factor.
//!
//! # Definitions
//!
//! A subdomain's **cost factor** `f` multiplies the arithmetic of its
//! updates: the real engine sweeps it `f` times per update (the result is
//! the same, so sync stays sequential Jacobi bit for bit), and the
//! simulator charges `f` times the cells' part of an update's cost.
//!
//! **Positions** are fractions of the global grid: `x` from the west side
//! (0) to the east (1), `y` from the north side (the source, 0) to the
//! south (1). **Distances and radii** are in cells, as fractions of the
//! grid's longer side, so that a region is a circle of cells whatever the
//! grid's shape.
//!
//! **Costs are per cell.** A region's factor applies to the cells inside
//! its circle (a cell the circle cuts, to the part inside), and a
//! subdomain's factor is the mean over its cells. The total work is then
//! the same for every decomposition: `hotspot(4, 0.5, 0.5, 0.1)` is
//! `1 + 3 pi 0.1^2 = 1.094` times a uniform grid's for sync, async(1) and
//! async(16) alike. A map is laid over the cells the same way. `random`
//! and `lbdata` are costs of objects (LBTest's tasks, a recording's), so
//! they stay one per subdomain.
//!
//! **Progress** `p` is the mean number of updates per subdomain so far
//! (sync: the iteration), the same quantity in both engines. Velocities and
//! growth rates are per unit of progress: `moving(4, 0.2, 0.5, 0.1, 1e-4,
//! 0)` crosses a tenth of the grid every 1000 iterations.
//!
//! | workload | cost factor of a cell |
//! |---|---|
//! | `uniform` | 1 |
//! | `random(lo, hi)` | per subdomain: drawn uniformly in `[lo, hi]` from `seed`, once |
//! | `hotspot(f, x, y, r)` | `f` within `r` of `(x, y)`, else 1 (the grid's edges cut the circle) |
//! | `moving(f, x, y, r, vx, vy)` | `f` within `r` of `(x + vx p, y + vy p)`, else 1; the circle wraps around the grid's edges |
//! | `growing(f, x, y, r0, dr)` | `f` within `r0 + dr p` of `(x, y)`, else 1 |
//! | `overloading(v, x, y)` | per subdomain: `1 + x (1 - y) p / P`, and `x y p / N` more on the `N = round(v P)` domains `seed` picks, at progress `p` over `P` domains (ULBA's application model) |
//! | `map:FILE` | the file's value over its share of the grid |
//! | `lbdata:PATH`, `lbdata(S):PATH` | per subdomain: the task times of a recorded run (a directory of `data.<N>.json`, or `DIR/STEM`), phase by phase, in units of `S` seconds (rules in lib/src/workload/recorded.rs) |
//!
//! A map is a grid of values, north row first, laid over the whole grid of
//! cells: as text, one row of numbers per line (separated by spaces or
//! commas, `#` comments), or a 2-D `.npy` array of `f64`. A map with one
//! value per subdomain (`rows x columns` of subdomains) gives each equal
//! subdomain its value; a coarser one is spread over its cells, a finer one
//! averaged.
//!
//! `overloading(v, x, y)` is ULBA's model (anticipating-load-imbalance-ulba.txt,
//! Eq. 1 and Table II) on braid's objects: the grid's work grows by `x`
//! of one domain's starting work per iteration (`Delta_W = x W(0) / P`), a
//! share `y` of that on the `N = round(v P)` overloading domains'
//! subdomains, wherever they are moved. It grows without bound, so it is
//! simulated only.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::lbdata::read;
use crate::limits::{MAX_TEXT_BYTES, MAX_WORK_FACTOR};
use crate::problem::Problem;
use crate::rng::SplitMix64;

/// The `workload` key, as written.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkloadSpec {
    /// Every subdomain costs the same.
    Uniform,
    /// Factors drawn uniformly in `[lo, hi]` (LBTest's task durations).
    Random {
        /// The least factor.
        lo: f64,
        /// The greatest.
        hi: f64,
    },
    /// A region of heavier (or lighter) subdomains.
    Hotspot {
        /// The factor inside.
        factor: f64,
        /// Centre, west to east.
        x: f64,
        /// Centre, north to south.
        y: f64,
        /// Radius.
        r: f64,
    },
    /// A hotspot whose centre moves with progress (the load migrates).
    Moving {
        /// The factor inside.
        factor: f64,
        /// Centre at progress 0, west to east.
        x: f64,
        /// Centre at progress 0, north to south.
        y: f64,
        /// Radius.
        r: f64,
        /// Velocity west to east, per unit of progress.
        vx: f64,
        /// Velocity north to south, per unit of progress.
        vy: f64,
    },
    /// A hotspot whose radius grows with progress (ULBA's erosion: the
    /// overloaded part keeps growing).
    Growing {
        /// The factor inside.
        factor: f64,
        /// Centre, west to east.
        x: f64,
        /// Centre, north to south.
        y: f64,
        /// Radius at progress 0.
        r0: f64,
        /// Growth of the radius per unit of progress.
        dr: f64,
    },
    /// ULBA's application model (its Eq. 1 and Table II): every cell's
    /// cost grows linearly with progress, and the cells of a few domains
    /// (threads' starting shares) grow faster; or, `overloading-threads`,
    /// the faster growth stays with those domains' threads, whichever
    /// subdomains they hold (the model as ULBA prints it: its PEs grow).
    Overloading {
        /// The share of domains that overload (ULBA's `N = P v`).
        v: f64,
        /// The whole grid's growth per iteration, as a share of one
        /// domain's starting work (ULBA's `Delta_W = x W(0) / P`).
        x: f64,
        /// The share of that growth that goes to the overloading domains
        /// (ULBA's `y`; the rest is spread over every cell).
        y: f64,
        /// What the overloading share grows with.
        with: GrowsWith,
    },
    /// Factors from a file (relative to the working directory).
    Map(PathBuf),
    /// Costs from a recording of LB data files (relative to the working
    /// directory): a directory of `data.<N>.json`, or a stem `DIR/NAME`.
    LbData {
        /// The directory or stem.
        path: PathBuf,
        /// Seconds per unit of the files' `time` (1: they are in seconds,
        /// as vt writes them).
        seconds_per_unit: f64,
    },
}

/// The workloads named with numbers, and what each number is: the one
/// list that the parser and the hints of a bad value are built from.
/// What `overloading`'s faster growth is tied to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrowsWith {
    /// The cells of the picked domains: a subdomain that moves takes its
    /// growth along (`overloading`).
    Cells,
    /// The picked domains' threads: each spreads its growth over the
    /// subdomains it holds at the time (`overloading-threads`; simulated
    /// only).
    Threads,
}

const NAMED: &[(&str, &[&str])] = &[
    ("random", &["lo", "hi"]),
    ("hotspot", &["f", "x", "y", "r"]),
    ("moving", &["f", "x", "y", "r", "vx", "vy"]),
    ("growing", &["f", "x", "y", "r0", "dr"]),
    ("overloading", &["v", "x", "y"]),
    ("overloading-threads", &["v", "x", "y"]),
];

/// Every form a `workload` value takes, for a message that lists them:
/// `uniform, random(lo,hi), ..., map:FILE or lbdata[(SECONDS_PER_UNIT)]:PATH`.
///
/// ```
/// let forms = braid::workload_forms();
/// assert!(forms.starts_with("uniform, random(lo,hi), hotspot(f,x,y,r)"));
/// assert!(forms.ends_with("map:FILE or lbdata[(SECONDS_PER_UNIT)]:PATH"));
/// ```
pub fn forms() -> String {
    let named: Vec<String> = NAMED
        .iter()
        .map(|(name, params)| format!("{name}({})", params.join(",")))
        .collect();
    format!(
        "uniform, {}, map:FILE or lbdata[(SECONDS_PER_UNIT)]:PATH",
        named.join(", ")
    )
}

/// A `workload` value that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct WorkloadError(String);

/// `v` as a reader would write it (1e300, not three hundred digits).
fn show(v: f64) -> String {
    if v != 0.0 && v.is_finite() && !(1e-4..1e6).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// The bound on a velocity or a growth rate, per unit of progress.
const MAX_RATE: f64 = 1.0;

impl WorkloadSpec {
    /// Reads `uniform`, `NAME(args)`, `map:FILE`, `lbdata:PATH` or
    /// `lbdata(SECONDS_PER_UNIT):PATH`.
    ///
    /// ```
    /// use braid::WorkloadSpec;
    /// let w: WorkloadSpec = "hotspot(4, 0.5, 0.5, 0.1)".parse().unwrap();
    /// assert_eq!(w.to_string(), "hotspot(4,0.5,0.5,0.1)");
    /// assert!("hotspot(0, 0.5, 0.5, 0.1)".parse::<WorkloadSpec>().is_err());
    /// let toy: WorkloadSpec = "lbdata(1e-3):sets/toy".parse().unwrap();
    /// assert_eq!(toy.to_string(), "lbdata(0.001):sets/toy");
    /// assert_eq!("lbdata:lb".parse::<WorkloadSpec>().unwrap().to_string(), "lbdata:lb");
    /// assert!("lbdata(0):lb".parse::<WorkloadSpec>().is_err());
    /// assert!("lbdata(1e-3)lb".parse::<WorkloadSpec>().is_err());
    /// ```
    pub fn parse(text: &str) -> Result<WorkloadSpec, WorkloadError> {
        let text = text.trim();
        if text == "uniform" {
            return Ok(WorkloadSpec::Uniform);
        }
        if let Some(file) = text.strip_prefix("map:") {
            let file = file.trim();
            if file.is_empty() {
                return Err(WorkloadError("map:FILE names no file".into()));
            }
            return Ok(WorkloadSpec::Map(PathBuf::from(file)));
        }
        if let Some(rest) = text.strip_prefix("lbdata") {
            return lbdata(text, rest);
        }
        let (name, args) = text
            .split_once('(')
            .and_then(|(n, a)| Some((n.trim(), a.trim().strip_suffix(')')?)))
            .ok_or_else(|| {
                WorkloadError(format!(
                    "`{text}` is not NAME(numbers), map:FILE or lbdata:PATH"
                ))
            })?;
        let args: Vec<f64> = args
            .split(',')
            .map(|a| {
                a.trim()
                    .parse::<f64>()
                    .map_err(|_| WorkloadError(format!("`{}` is not a number", a.trim())))
            })
            .collect::<Result<_, _>>()?;
        let Some(&(_, params)) = NAMED.iter().find(|(n, _)| *n == name) else {
            let hint = crate::suggest::hint(name, NAMED.iter().map(|(n, _)| *n));
            return Err(WorkloadError(format!("no workload named `{name}`{hint}")));
        };
        if args.len() != params.len() {
            return Err(WorkloadError(format!(
                "{name} takes {} numbers ({}), got {}",
                params.len(),
                params.join(","),
                args.len()
            )));
        }
        let spec = named(name, &args);
        spec.check()?;
        Ok(spec)
    }

    /// Every number within its bounds.
    fn check(&self) -> Result<(), WorkloadError> {
        match *self {
            WorkloadSpec::Uniform | WorkloadSpec::Map(_) | WorkloadSpec::LbData { .. } => Ok(()),
            WorkloadSpec::Random { lo, hi } => {
                factor("lo", lo)?;
                factor("hi", hi)?;
                if lo > hi {
                    return Err(WorkloadError(format!(
                        "lo {} is above hi {}",
                        show(lo),
                        show(hi)
                    )));
                }
                Ok(())
            }
            WorkloadSpec::Hotspot { factor: f, x, y, r } => {
                factor("the factor", f)?;
                fraction("x", x)?;
                fraction("y", y)?;
                fraction("the radius", r)
            }
            WorkloadSpec::Moving {
                factor: f,
                x,
                y,
                r,
                vx,
                vy,
            } => {
                factor("the factor", f)?;
                fraction("x", x)?;
                fraction("y", y)?;
                fraction("the radius", r)?;
                rate("vx", vx)?;
                rate("vy", vy)
            }
            WorkloadSpec::Overloading { v, x, y, .. } => check_overloading(v, x, y),
            WorkloadSpec::Growing {
                factor: f,
                x,
                y,
                r0,
                dr,
            } => {
                factor("the factor", f)?;
                fraction("x", x)?;
                fraction("y", y)?;
                fraction("the radius", r0)?;
                if !(0.0..=MAX_RATE).contains(&dr) {
                    return Err(WorkloadError(format!(
                        "dr {} is not a growth per iteration within [0, {MAX_RATE}]",
                        show(dr)
                    )));
                }
                Ok(())
            }
        }
    }

    /// Whether this is `uniform` (every factor 1).
    pub fn is_uniform(&self) -> bool {
        *self == WorkloadSpec::Uniform
    }

    /// The file (or directory) this workload reads, if any.
    pub fn file(&self) -> Option<&Path> {
        match self {
            WorkloadSpec::Map(f) | WorkloadSpec::LbData { path: f, .. } => Some(f),
            _ => None,
        }
    }

    /// The same workload with its file read from `dir` (what a process
    /// started in `dir` opens).
    pub fn with_file_from(&self, dir: &Path) -> WorkloadSpec {
        match self {
            WorkloadSpec::Map(f) => WorkloadSpec::Map(dir.join(f)),
            WorkloadSpec::LbData {
                path,
                seconds_per_unit,
            } => WorkloadSpec::LbData {
                path: dir.join(path),
                seconds_per_unit: *seconds_per_unit,
            },
            other => other.clone(),
        }
    }
}

impl std::str::FromStr for WorkloadSpec {
    type Err = WorkloadError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        WorkloadSpec::parse(s)
    }
}

impl fmt::Display for WorkloadSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkloadSpec::Uniform => f.write_str("uniform"),
            WorkloadSpec::Random { lo, hi } => write!(f, "random({lo},{hi})"),
            WorkloadSpec::Hotspot { factor, x, y, r } => {
                write!(f, "hotspot({factor},{x},{y},{r})")
            }
            WorkloadSpec::Moving {
                factor,
                x,
                y,
                r,
                vx,
                vy,
            } => write!(f, "moving({factor},{x},{y},{r},{vx},{vy})"),
            WorkloadSpec::Growing {
                factor,
                x,
                y,
                r0,
                dr,
            } => write!(f, "growing({factor},{x},{y},{r0},{dr})"),
            WorkloadSpec::Overloading { v, x, y, with } => {
                let name = match with {
                    GrowsWith::Cells => "overloading",
                    GrowsWith::Threads => "overloading-threads",
                };
                write!(f, "{name}({v},{x},{y})")
            }
            WorkloadSpec::Map(file) => write!(f, "map:{}", file.display()),
            WorkloadSpec::LbData {
                path,
                seconds_per_unit,
            } if *seconds_per_unit == 1.0 => write!(f, "lbdata:{}", path.display()),
            WorkloadSpec::LbData {
                path,
                seconds_per_unit,
            } => write!(f, "lbdata({}):{}", show(*seconds_per_unit), path.display()),
        }
    }
}

impl Serialize for WorkloadSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for WorkloadSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        WorkloadSpec::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// A workload built on a run's problem: each subdomain's cost factor, at
/// any progress.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    kind: Kind,
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Uniform,
    /// One factor per subdomain, for the whole run.
    Fixed(Arc<[f64]>),
    /// A recording's costs, phase by phase.
    Recorded(Arc<Recorded>),
    /// A region that moves or grows with progress.
    Region(Region),
    /// Each subdomain's factor grows by its rate per unit of progress,
    /// from 1.
    Linear(Arc<[f64]>),
    /// Growth tied to threads: what [`Workload::factor`] gives is the
    /// growth as it would be had nothing moved; the simulator keeps it
    /// with the threads ([`ThreadGrowth`]).
    Threads(Arc<ThreadGrowth>),
}

/// `overloading-threads(v, x, y)`: every subdomain's factor grows by `a`
/// per unit of progress, and each picked thread's by `m` per subdomain of
/// its domain, spread over the subdomains it holds at the time. Where the
/// growth lies depends on the moves, so only an engine that knows them
/// can price it (the simulator: `sim::growth`).
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadGrowth {
    /// Every subdomain's growth per unit of progress.
    pub a: f64,
    /// A picked thread's growth per unit of progress, per subdomain of a
    /// domain (spread over those it holds).
    pub m: f64,
    /// Which threads grow (thread `d` starts with domain `d`).
    pub over: Vec<bool>,
    /// Subdomains per domain.
    pub per: usize,
    /// Each subdomain's home thread (its domain).
    home: Vec<usize>,
}

/// A circle of cells with `factor` inside, moving and growing with
/// progress; everything else at 1. A subdomain costs the mean over its
/// cells: `1 + (factor - 1) x` the share of its area the circle covers.
#[derive(Debug, Clone, PartialEq)]
struct Region {
    factor: f64,
    /// The centre at progress 0 and its velocity, in cells.
    centre: (f64, f64),
    velocity: (f64, f64),
    /// The radius at progress 0 and its growth, in cells.
    radius: f64,
    growth: f64,
    /// The grid's width and height, in cells (where a centre wraps).
    size: (f64, f64),
    /// Each subdomain's cells.
    rects: Arc<[Rect]>,
}

/// Why a workload cannot be built on a problem (a map's file or shape).
#[derive(Debug, thiserror::Error)]
pub enum MapError {
    /// The file cannot be read.
    #[error("cannot read it: {0}")]
    Read(std::io::Error),
    /// The file's content is not a map.
    #[error("{0}")]
    Content(String),
}

impl Workload {
    /// Every subdomain at 1 (what braid did before workloads).
    pub fn uniform() -> Workload {
        Workload {
            kind: Kind::Uniform,
        }
    }

    /// `spec` on `problem`'s subdomains (`seed` draws a random one; a map
    /// is read from its file).
    pub fn build(spec: &WorkloadSpec, problem: &Problem, seed: u64) -> Result<Workload, MapError> {
        let n = problem.subs.len();
        let (w, h) = (problem.width as f64, problem.height as f64);
        let side = w.max(h);
        let region = |factor, x: f64, y: f64, r: f64, v: (f64, f64), dr: f64| {
            let mut region = Region {
                factor,
                centre: (x * w, y * h),
                velocity: (v.0 * w, v.1 * h),
                radius: r * side,
                growth: dr * side,
                size: (w, h),
                rects: Arc::from([]),
            };
            // A region that stays put costs the same throughout: worked
            // out once, and its cells not kept (at millions of simulated
            // subdomains they are hundreds of megabytes).
            if v == (0.0, 0.0) && dr == 0.0 {
                let at_start = |g| region.factor_in(cells_of(g), 0.0);
                return Kind::Fixed(problem.subs.iter().map(at_start).collect());
            }
            region.rects = problem.subs.iter().map(cells_of).collect();
            Kind::Region(region)
        };
        let kind = match spec {
            WorkloadSpec::Uniform => Kind::Uniform,
            &WorkloadSpec::Random { lo, hi } => {
                let mut rng = SplitMix64(seed ^ 0x776F_726B_6C6F_6164); // "workload"
                Kind::Fixed(
                    (0..n)
                        .map(|_| lo + (hi - lo) * rng.unit())
                        .collect::<Vec<_>>()
                        .into(),
                )
            }
            &WorkloadSpec::Hotspot { factor, x, y, r } => region(factor, x, y, r, (0.0, 0.0), 0.0),
            &WorkloadSpec::Moving {
                factor,
                x,
                y,
                r,
                vx,
                vy,
            } => region(factor, x, y, r, (vx, vy), 0.0),
            &WorkloadSpec::Growing {
                factor,
                x,
                y,
                r0,
                dr,
            } => region(factor, x, y, r0, (0.0, 0.0), dr),
            &WorkloadSpec::Overloading { v, x, y, with } => {
                let (rates, threads) = overloading_rates(problem, v, x, y, seed);
                match with {
                    GrowsWith::Cells => Kind::Linear(rates.into()),
                    GrowsWith::Threads => Kind::Threads(Arc::new(threads)),
                }
            }
            WorkloadSpec::Map(file) => Kind::Fixed(read_map(file, problem)?.into()),
            WorkloadSpec::LbData {
                path,
                seconds_per_unit,
            } => {
                let recording =
                    read::read_dir(path).map_err(|e| MapError::Content(e.to_string()))?;
                Kind::Recorded(Arc::new(
                    Recorded::build(&recording, n, *seconds_per_unit).map_err(MapError::Content)?,
                ))
            }
        };
        Ok(Workload { kind })
    }

    /// Whether every subdomain costs 1 throughout.
    pub fn is_uniform(&self) -> bool {
        self.kind == Kind::Uniform
    }

    /// Whether a factor changes with progress.
    pub fn moves(&self) -> bool {
        match &self.kind {
            Kind::Region(r) => r.velocity != (0.0, 0.0) || r.growth != 0.0,
            Kind::Recorded(r) => r.moves(),
            Kind::Linear(_) | Kind::Threads(_) => true,
            Kind::Uniform | Kind::Fixed(_) => false,
        }
    }

    /// A recorded subdomain's cost per update at progress `p`, in
    /// seconds, which the simulator charges as the whole update; `None`
    /// for a workload of factors.
    #[inline]
    pub fn seconds(&self, sub: usize, p: f64) -> Option<f64> {
        match &self.kind {
            Kind::Recorded(r) => Some(r.seconds(sub, p)),
            _ => None,
        }
    }

    /// Subdomain `sub`'s cost factor at progress `p`.
    #[inline]
    pub fn factor(&self, sub: usize, p: f64) -> f64 {
        match &self.kind {
            Kind::Uniform => 1.0,
            Kind::Fixed(f) => f[sub],
            Kind::Recorded(r) => r.factor(sub, p),
            Kind::Region(r) => r.factor(sub, p),
            Kind::Linear(rates) => 1.0 + rates[sub] * p,
            Kind::Threads(g) => {
                let m = if g.over[g.home[sub]] { g.m } else { 0.0 };
                1.0 + (g.a + m) * p
            }
        }
    }

    /// Growth that stays with threads, which the engine must keep
    /// (`overloading-threads`).
    pub fn thread_growth(&self) -> Option<&ThreadGrowth> {
        match &self.kind {
            Kind::Threads(g) => Some(g),
            _ => None,
        }
    }

    /// Every subdomain's factor at progress `p` (`n` subdomains).
    pub fn factors(&self, n: usize, p: f64) -> Vec<f64> {
        (0..n).map(|s| self.factor(s, p)).collect()
    }

    /// The smallest factor any subdomain can have during the run.
    pub fn least_factor(&self) -> f64 {
        match &self.kind {
            Kind::Uniform => 1.0,
            Kind::Fixed(f) => f.iter().copied().fold(f64::INFINITY, f64::min),
            // A recording is replayed above its reference (below it, as
            // one sweep: `recorded`'s rules say so).
            Kind::Recorded(_) | Kind::Linear(_) | Kind::Threads(_) => 1.0,
            Kind::Region(r) => r.factor.min(1.0),
        }
    }

    /// The greatest factor any subdomain can have during the run.
    pub fn greatest_factor(&self) -> f64 {
        match &self.kind {
            Kind::Uniform => 1.0,
            Kind::Fixed(f) => f.iter().copied().fold(0.0, f64::max),
            Kind::Recorded(r) => r.greatest_factor(),
            Kind::Region(r) => r.factor.max(1.0),
            // Grows for as long as the run goes.
            Kind::Linear(_) | Kind::Threads(_) => f64::INFINITY,
        }
    }
}

/// `overloading(v, x, y)`'s growth per unit of progress for each
/// subdomain, as a share of its starting cost: `x (1 - y) / P` everywhere,
/// and on the `N = round(v P)` domains `seed` picks (at least 1, fewer
/// than `P`) `x y / N` more, so that the whole grid grows by `x` of one
/// domain's starting work per iteration: ULBA's Table II, `Delta_W =
/// x W(0) / P = a P + m N` (until 2026-11-29 braid grew the grid by `x` of
/// its whole work, `P` times Table II's rate). With it, the same growth
/// tied to the picked domains' threads (`overloading-threads`).
fn overloading_rates(
    problem: &Problem,
    v: f64,
    x: f64,
    y: f64,
    seed: u64,
) -> (Vec<f64>, ThreadGrowth) {
    let p = problem.threads;
    let n = ((v * p as f64).round() as usize).clamp(1, p.saturating_sub(1).max(1));
    // The first n of a seeded shuffle of the domains.
    let mut domains: Vec<usize> = (0..p).collect();
    let mut rng = SplitMix64(seed ^ 0x6F76_6572_6C6F_6164); // "overload"
    for i in 0..n {
        let j = i + (rng.unit() * (p - i) as f64) as usize;
        domains.swap(i, j.min(p - 1));
    }
    let mut over = vec![false; p];
    for &d in &domains[..n] {
        over[d] = true;
    }
    let (a, m) = (x * (1.0 - y) / p as f64, x * y / n as f64);
    let rates = problem
        .subs
        .iter()
        .map(|g| if over[g.domain] { a + m } else { a })
        .collect();
    let threads = ThreadGrowth {
        a,
        m,
        over,
        per: problem.subdomains_per_domain(),
        home: problem.subs.iter().map(|g| g.domain).collect(),
    };
    (rates, threads)
}

/// The cells of a subdomain, as a rectangle in cells from the grid's
/// north-west corner.
fn cells_of(g: &crate::problem::SubdomainGeom) -> Rect {
    let (x0, y0) = ((g.col0 - 1) as f64, (g.row0 - 1) as f64);
    Rect {
        x0,
        x1: x0 + g.width as f64,
        y0,
        y1: y0 + g.height as f64,
    }
}

impl Region {
    /// Subdomain `sub`'s factor at progress `p`: the mean over its cells. A
    /// moving region wraps around the grid (its centre and the part of its
    /// circle past an edge), so its total work stays the same as it
    /// travels; a still one is cut by the grid's edges.
    fn factor(&self, sub: usize, p: f64) -> f64 {
        self.factor_in(self.rects[sub], p)
    }

    /// The factor at progress `p` of a subdomain of cells `cell`.
    fn factor_in(&self, cell: Rect, p: f64) -> f64 {
        let r = self.radius + self.growth * p;
        let (centre, velocity, size) = (self.centre, self.velocity, self.size);
        let mut covered = 0.0;
        if velocity == (0.0, 0.0) {
            covered = area::disc_in_rect(centre.0, centre.1, r, cell);
        } else {
            let cx = (centre.0 + velocity.0 * p).rem_euclid(size.0);
            let cy = (centre.1 + velocity.1 * p).rem_euclid(size.1);
            // The circle's copies one grid over, where they reach the grid.
            let near = |c: f64, side: f64| {
                [-1.0, 0.0, 1.0]
                    .into_iter()
                    .map(move |k| c + k * side)
                    .filter(move |&x| x + r > 0.0 && x - r < side)
            };
            for x in near(cx, size.0) {
                for y in near(cy, size.1) {
                    covered += area::disc_in_rect(x, y, r, cell);
                }
            }
        }
        let share = (covered / cell.area()).min(1.0);
        1.0 + (self.factor - 1.0) * share
    }
}

/// A map's factors, one per subdomain, in id order: the map is a grid of
/// values laid over the whole grid of cells, each value on its share of
/// them, and a subdomain takes the mean over its cells (a map of the
/// subdomains' own shape, on equal subdomains, gives each its value).
fn read_map(file: &Path, problem: &Problem) -> Result<Vec<f64>, MapError> {
    let is_npy = file.extension().is_some_and(|e| e == "npy");
    let grid: Vec<Vec<f64>> = if is_npy {
        let bytes = braid_noise::files::read_bytes(file, crate::limits::MAX_TRACE_BYTES)
            .map_err(MapError::Read)?;
        let array: ndarray::Array2<f64> =
            ndarray_npy::ReadNpyExt::read_npy(std::io::Cursor::new(bytes))
                .map_err(|e| MapError::Content(format!("not a 2-D .npy array of f64: {e}")))?;
        array.outer_iter().map(|r| r.to_vec()).collect()
    } else {
        let text = braid_noise::files::read_text(file, MAX_TEXT_BYTES).map_err(MapError::Read)?;
        parse_text_map(&text)?
    };
    let cols = grid.first().map_or(0, Vec::len);
    if cols == 0 {
        return Err(MapError::Content("a map with no values".into()));
    }
    if let Some(k) = grid.iter().position(|r| r.len() != cols) {
        return Err(MapError::Content(format!(
            "row {} has {} values and row 1 has {cols}: a map is a grid, every row as long",
            k + 1,
            grid[k].len()
        )));
    }
    for (i, row) in grid.iter().enumerate() {
        for (j, &f) in row.iter().enumerate() {
            if !(f > 0.0 && f <= MAX_WORK_FACTOR) {
                return Err(MapError::Content(format!(
                    "row {}, column {}: {} is not a cost factor above 0 and at most \
                     {MAX_WORK_FACTOR}",
                    i + 1,
                    j + 1,
                    show(f)
                )));
            }
        }
    }
    let (w, h) = (problem.width as f64, problem.height as f64);
    let (cw, ch) = (w / cols as f64, h / grid.len() as f64);
    Ok(problem
        .subs
        .iter()
        .map(|g| spread(&grid, (cw, ch), cells_of(g)))
        .collect())
}

/// The mean of a map's values over the cells of `cell`, each value
/// spread evenly over its `cw x ch` cells of the grid.
fn spread(grid: &[Vec<f64>], (cw, ch): (f64, f64), cell: Rect) -> f64 {
    // The map's rows and columns that overlap `cell`, and by how much.
    let overlap = |lo: f64, hi: f64, size: f64, n: usize| {
        let first = ((lo / size).floor() as usize).min(n - 1);
        let last = (((hi / size).ceil() as usize).max(first + 1)).min(n);
        (first..last).filter_map(move |k| {
            let part = hi.min((k + 1) as f64 * size) - lo.max(k as f64 * size);
            (part > 0.0).then_some((k, part))
        })
    };
    let (rows, cols) = (grid.len(), grid[0].len());
    let parts: Vec<(usize, f64)> = overlap(cell.x0, cell.x1, cw, cols).collect();
    let mut sum = 0.0;
    let mut last = None;
    let mut pieces = 0;
    for (i, hy) in overlap(cell.y0, cell.y1, ch, rows) {
        for &(j, wx) in &parts {
            sum += grid[i][j] * wx * hy;
            last = Some(grid[i][j]);
            pieces += 1;
        }
    }
    // One value over the whole subdomain is that value, to the bit.
    match (pieces, last) {
        (1, Some(f)) => f,
        _ => sum / cell.area(),
    }
}

/// Rows of numbers, one row per line (spaces or commas between them; `#`
/// starts a comment; blank lines skipped).
fn parse_text_map(text: &str) -> Result<Vec<Vec<f64>>, MapError> {
    let mut rows = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let row = line
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|w| !w.is_empty())
            .map(|w| {
                w.parse::<f64>().map_err(|_| {
                    let w: String = w.chars().take(40).collect();
                    MapError::Content(format!("line {}: `{w}` is not a number", n + 1))
                })
            })
            .collect::<Result<Vec<f64>, _>>()?;
        rows.push(row);
    }
    Ok(rows)
}

mod area;
mod recorded;

use area::Rect;
use recorded::Recorded;

/// `lbdata:PATH`, or `lbdata(SCALE):PATH` for times in other units
/// (`rest` is what follows `lbdata` in `text`).
fn lbdata(text: &str, rest: &str) -> Result<WorkloadSpec, WorkloadError> {
    // `lbdata:PATH`, or `lbdata(SCALE):PATH` for times in other units.
    let (scale, path) = match rest.strip_prefix('(') {
        Some(r) => {
            let (scale, path) = r.split_once("):").ok_or_else(|| {
                WorkloadError(format!("`{text}` is not lbdata(SECONDS_PER_UNIT):PATH"))
            })?;
            let scale = scale.trim();
            let v = scale
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v > 0.0);
            let v = v.ok_or_else(|| {
                WorkloadError(format!(
                    "lbdata({scale}): the seconds per unit of the files' times must be a \
                     number above 0"
                ))
            })?;
            (v, path)
        }
        None => (1.0, rest.strip_prefix(':').unwrap_or("")),
    };
    let path = path.trim();
    if path.is_empty() {
        return Err(WorkloadError(
            "lbdata:PATH names no directory (or DIR/STEM of STEM.<N>.json files)".into(),
        ));
    }
    Ok(WorkloadSpec::LbData {
        path: PathBuf::from(path),
        seconds_per_unit: scale,
    })
}

/// The workload `name` of [`NAMED`] with its numbers `args` (as many as
/// it takes), unchecked.
fn named(name: &str, args: &[f64]) -> WorkloadSpec {
    match name {
        "random" => WorkloadSpec::Random {
            lo: args[0],
            hi: args[1],
        },
        "hotspot" => WorkloadSpec::Hotspot {
            factor: args[0],
            x: args[1],
            y: args[2],
            r: args[3],
        },
        "moving" => WorkloadSpec::Moving {
            factor: args[0],
            x: args[1],
            y: args[2],
            r: args[3],
            vx: args[4],
            vy: args[5],
        },
        "growing" => WorkloadSpec::Growing {
            factor: args[0],
            x: args[1],
            y: args[2],
            r0: args[3],
            dr: args[4],
        },
        "overloading" | "overloading-threads" => WorkloadSpec::Overloading {
            v: args[0],
            x: args[1],
            y: args[2],
            with: match name {
                "overloading" => GrowsWith::Cells,
                _ => GrowsWith::Threads,
            },
        },
        _ => unreachable!("every name in NAMED is matched here"),
    }
}

/// A cost factor above 0 and at most [`MAX_WORK_FACTOR`].
fn factor(name: &str, f: f64) -> Result<(), WorkloadError> {
    if f > 0.0 && f <= MAX_WORK_FACTOR {
        Ok(())
    } else {
        Err(WorkloadError(format!(
            "{name} {} is not a cost factor above 0 and at most {MAX_WORK_FACTOR}",
            show(f)
        )))
    }
}

/// A fraction of the grid, in [0, 1].
fn fraction(name: &str, v: f64) -> Result<(), WorkloadError> {
    if (0.0..=1.0).contains(&v) {
        Ok(())
    } else {
        Err(WorkloadError(format!(
            "{name} {} is outside [0, 1] (a fraction of the grid)",
            show(v)
        )))
    }
}

/// A rate per iteration within [`MAX_RATE`] either way.
fn rate(name: &str, v: f64) -> Result<(), WorkloadError> {
    if v.abs() <= MAX_RATE {
        Ok(())
    } else {
        Err(WorkloadError(format!(
            "{name} {} is not a rate per iteration within [-{MAX_RATE}, {MAX_RATE}]",
            show(v)
        )))
    }
}

/// ULBA's overloading: a share of the domains `v`, a growth `x` and a
/// share of it `y`.
fn check_overloading(v: f64, x: f64, y: f64) -> Result<(), WorkloadError> {
    if !(v > 0.0 && v < 1.0) {
        return Err(WorkloadError(format!(
            "v {} is not a share of the domains above 0 and below 1",
            show(v)
        )));
    }
    if !(x > 0.0 && x <= MAX_RATE) {
        return Err(WorkloadError(format!(
            "x {} is not a growth per iteration above 0 and at most {MAX_RATE}",
            show(x)
        )));
    }
    if !(0.0..=1.0).contains(&y) {
        return Err(WorkloadError(format!(
            "y {} is not a share of the growth in [0, 1]",
            show(y)
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
