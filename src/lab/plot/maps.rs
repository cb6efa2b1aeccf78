//! The workloads' maps (`figure = "workloads"`, beside its ranking): per
//! workload, one row of two maps of the grid, north at the top:
//!
//! * **what each subdomain cost**: its busy seconds over its updates (the
//!   mean over the run, so a moving region is drawn where it went), over
//!   the median subdomain's, on one logarithmic colour scale for every row;
//!   read from a run that moved nothing where there is one, so that no
//!   subdomain's cost holds a guest's penalty;
//! * **where it ended**: the owners at the end of the fastest balanced
//!   variant's run (the least median time to solution), each subdomain
//!   white at home, orange on another thread of its home socket and blue
//!   on another socket, with the thread that holds it written in it when
//!   it fits. The thick lines are the domains, each a thread's home.
//!
//! The subdomains' places come from [`braid::Problem`], built
//! from the report's grid as the engines built it. A record keeps its
//! per-subdomain lists for this figure only up to [`MAP_SUBDOMAINS`]
//! (`super::drawn_only`): a bigger map is not legible at a page's width.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::landscape::variant_order;
use super::stats::quantile;
use super::{Draw, DrawResult, FONT, TEXT};
use crate::lab::experiment::results::Record;
use braid::Problem;

/// The most subdomains a map draws.
pub(super) const MAP_SUBDOMAINS: usize = 1024;

/// A subdomain's place at the end of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Home,
    /// Another thread of its home thread's socket.
    Socket,
    /// A thread on another socket.
    Across,
}

/// One subdomain's rectangle, cells from the grid's north-west corner.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Tile {
    row: usize,
    col: usize,
    height: usize,
    width: usize,
}

/// One workload's two maps.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    workload: String,
    /// The grid's interior rows and columns.
    height: usize,
    width: usize,
    tiles: Vec<Tile>,
    /// Each domain's rectangle (a thread's home).
    domains: Vec<Tile>,
    /// Each subdomain's cost per update over the median's; `None` where it
    /// was never updated. Empty when no run at this workload measured
    /// loads.
    cost: Vec<Option<f64>>,
    /// The variant whose owners are drawn, and each subdomain's place and
    /// owner; `None` without a balanced run that converged.
    owners: Option<(String, Vec<(Place, usize)>)>,
}

pub(super) struct Maps {
    rows: Vec<Row>,
    /// The machine a real run ran on, for the title.
    machine: Option<String>,
    virtual_time: bool,
}

/// The grid of `rep`'s run, when its lists are there and match it.
fn problem(rep: &braid::Report) -> Option<Problem> {
    let n = rep.owners.len();
    if n == 0 || n > MAP_SUBDOMAINS || rep.subdomains == 0 {
        return None;
    }
    let p = Problem::new(rep.grid.domain_size, rep.threads, rep.subdomains).ok()?;
    (p.subs.len() == n && p.rows == rep.grid.rows && p.cols == rep.grid.cols).then_some(p)
}

fn moves(r: &Record) -> u64 {
    (r.report.as_ref())
        .and_then(|rep| rep.lb.as_ref())
        .map_or(0, |lb| lb.moves)
}

/// Each subdomain's cost per update over the median's, from the record at
/// this workload that measured loads and moved the least.
fn costs(at: &[&Record]) -> Vec<Option<f64>> {
    let Some(rep) = at
        .iter()
        .filter(|r| {
            r.report.as_ref().is_some_and(|rep| {
                rep.subdomain_busy_s
                    .as_ref()
                    .is_some_and(|b| b.len() == rep.subdomain_updates.len())
            })
        })
        .min_by_key(|r| moves(r))
        .and_then(|r| r.report.as_ref())
    else {
        return Vec::new();
    };
    let busy = rep.subdomain_busy_s.as_ref().expect("filtered");
    let per: Vec<Option<f64>> = (busy.iter().zip(&rep.subdomain_updates))
        .map(|(&b, &u)| (u > 0 && b > 0.0).then(|| b / u as f64))
        .collect();
    let known: Vec<f64> = per.iter().flatten().copied().collect();
    let Some(mid) = quantile(&known, 0.5).filter(|m| *m > 0.0) else {
        return Vec::new();
    };
    per.into_iter().map(|c| c.map(|c| c / mid)).collect()
}

/// The owners of the balanced variant with the least median time to
/// solution at this workload (its first repetition's run).
fn best_owners(at: &[&Record], p: &Problem) -> Option<(String, Vec<(Place, usize)>)> {
    let balanced: Vec<&Record> = (at.iter().copied())
        .filter(|r| {
            (r.report.as_ref())
                .and_then(|rep| rep.lb.as_ref())
                .is_some_and(|lb| lb.calls > 0)
        })
        .collect();
    let tts = |v: &str| {
        let t: Vec<f64> = (balanced.iter())
            .filter(|r| r.sample.variant == v)
            .filter_map(|r| r.report.as_ref()?.time_to_solution_s)
            .collect();
        quantile(&t, 0.5)
    };
    let best = variant_order(&balanced)
        .into_iter()
        .filter_map(|v| Some((tts(&v)?, v)))
        .min_by(|a, b| a.0.total_cmp(&b.0))?
        .1;
    let rep = (balanced.iter())
        .filter(|r| r.sample.variant == best)
        .min_by_key(|r| r.sample.repetition)?
        .report
        .as_ref()?;
    if rep.owners.len() != p.subs.len() {
        return None;
    }
    let socket = |t: usize| rep.thread_sockets.get(t).copied().unwrap_or(0);
    let places = (p.subs.iter().zip(&rep.owners))
        .map(|(s, &o)| {
            let place = if o == s.domain {
                Place::Home
            } else if socket(o) == socket(s.domain) {
                Place::Socket
            } else {
                Place::Across
            };
            (place, o)
        })
        .collect();
    Some((best, places))
}

/// The workloads whose runs have more subdomains than a map draws, each
/// with its count: the maps leave them out, and `braid plot` says so.
pub(super) fn too_large(records: &[&Record]) -> Vec<(String, usize)> {
    let mut out: Vec<(String, usize)> = Vec::new();
    for r in records {
        let (Some(w), Some(rep)) = (&r.sample.workload, &r.report) else {
            continue;
        };
        let n = rep.threads.saturating_mul(rep.subdomains);
        if n > MAP_SUBDOMAINS && !out.iter().any(|(o, _)| o == w) {
            out.push((w.clone(), n));
        }
    }
    out
}

impl Maps {
    /// A row per workload whose runs kept their per-subdomain lists.
    pub(super) fn new(records: &[&Record]) -> Maps {
        let rows = super::workloads::workload_order(records)
            .into_iter()
            .filter_map(|w| {
                let at: Vec<&Record> = (records.iter().copied())
                    .filter(|r| r.sample.workload.as_ref() == Some(&w))
                    .collect();
                let p = at.iter().find_map(|r| problem(r.report.as_ref()?))?;
                let cost = costs(&at);
                let owners = best_owners(&at, &p);
                if cost.len() != p.subs.len() && owners.is_none() {
                    return None;
                }
                let tile = |row0: usize, col0: usize, height: usize, width: usize| Tile {
                    row: row0 - 1,
                    col: col0 - 1,
                    height,
                    width,
                };
                let tiles = (p.subs.iter())
                    .map(|s| tile(s.row0, s.col0, s.height, s.width))
                    .collect();
                let ds = p.domain_size;
                let domains = (0..p.threads)
                    .map(|d| tile(1 + (d / p.cols) * ds, 1 + (d % p.cols) * ds, ds, ds))
                    .collect();
                Some(Row {
                    workload: w,
                    height: p.height,
                    width: p.width,
                    tiles,
                    domains,
                    cost: if cost.len() == p.subs.len() {
                        cost
                    } else {
                        Vec::new()
                    },
                    owners,
                })
            })
            .collect();
        Maps {
            rows,
            machine: super::machine_of(records),
            virtual_time: records.iter().all(|r| r.engine == braid::EngineKind::Sim),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The colour scale's ends, log2 of the relative cost: whole powers of
    /// two around every row's costs, at least one each way.
    fn scale(&self) -> (i32, i32) {
        let all = self.rows.iter().flat_map(|r| r.cost.iter().flatten());
        let (lo, hi) = all.fold((1.0f64, 1.0f64), |(lo, hi), &c| (lo.min(c), hi.max(c)));
        let lo = (lo.log2().floor() as i32).clamp(-8, -1);
        let hi = (hi.log2().ceil() as i32).clamp(1, 8);
        (lo, hi)
    }
}

/// The strip above the maps: the title, the cost scale and the owners' key.
const HEAD_PX: u32 = 150;
const WIDTH_PX: u32 = 1100;
/// A row's caption and margins above and below its maps, and its maps'
/// greatest height.
const ROW_FRAME_PX: u32 = CAPTION_PX as u32 + 30;
const MAP_MAX_PX: u32 = 440;
const CAPTION_PX: i32 = 56;
const MARGIN_PX: i32 = 16;

impl Row {
    /// Its height: its maps as wide as half the figure allows, as tall as
    /// the grid's shape makes them (a wide grid, a short row).
    fn px(&self) -> u32 {
        let across = f64::from(WIDTH_PX / 2) - 2.0 * f64::from(MARGIN_PX);
        let tall = across * self.height as f64 / self.width.max(1) as f64;
        ROW_FRAME_PX + (tall.ceil() as u32).min(MAP_MAX_PX)
    }
}

const HOME: RGBColor = RGBColor(255, 255, 255);
/// Okabe and Ito's orange and blue: told apart by colour-blind readers.
const SOCKET: RGBColor = RGBColor(230, 159, 0);
const ACROSS: RGBColor = RGBColor(86, 180, 233);
/// A subdomain never updated, or a cost nobody measured.
const UNKNOWN: RGBColor = RGBColor(200, 200, 200);

/// The sequential scale's colour at `t` in 0..=1: light yellow to dark
/// brown (ColorBrewer's YlOrBr), which reads in grey and to colour-blind
/// eyes as light to dark.
fn heat(t: f64) -> RGBColor {
    const STOPS: [(u8, u8, u8); 5] = [
        (255, 255, 212),
        (254, 217, 142),
        (254, 153, 41),
        (217, 95, 14),
        (153, 52, 4),
    ];
    let x = t.clamp(0.0, 1.0) * (STOPS.len() - 1) as f64;
    let i = (x.floor() as usize).min(STOPS.len() - 2);
    let f = x - i as f64;
    let mix = |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * f).round() as u8;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Where `t` of the scale `(lo, hi)` (log2 ends) sits, 0..=1.
fn on_scale(cost: f64, (lo, hi): (i32, i32)) -> f64 {
    (cost.log2() - f64::from(lo)) / f64::from(hi - lo)
}

/// A power of two as a tick label: 1/4, 1/2, 1, 2, 4.
fn power_label(e: i32) -> String {
    match e {
        e if e < 0 => format!("1/{}", 1u64 << (-e)),
        e => format!("{}", 1u64 << e),
    }
}

impl Draw for Maps {
    fn size(&self) -> (u32, u32) {
        (
            WIDTH_PX,
            HEAD_PX + self.rows.iter().map(Row::px).sum::<u32>(),
        )
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE)?;
        let (head, mut rest) = root.split_vertically(HEAD_PX);
        self.draw_head(&head)?;
        for row in &self.rows {
            let (area, below) = rest.split_vertically(row.px());
            rest = below;
            let (left, right) = area.split_horizontally(WIDTH_PX / 2);
            self.draw_cost(row, &left)?;
            draw_owners(row, &right)?;
        }
        Ok(())
    }
}

fn text(size: u32) -> TextStyle<'static> {
    TextStyle::from((FONT, size).into_font())
}

/// Where a grid of `height` x `width` cells sits in `area` below a caption
/// line: its top-left pixel and pixels per cell, as square as fits.
fn fit(area_dim: (u32, u32), height: usize, width: usize) -> ((i32, i32), f64) {
    let (w, h) = (area_dim.0 as i32, area_dim.1 as i32);
    let room = ((w - 2 * MARGIN_PX).max(1), (h - ROW_FRAME_PX as i32).max(1));
    let px =
        (f64::from(room.0) / width.max(1) as f64).min(f64::from(room.1) / height.max(1) as f64);
    let used = (width as f64 * px) as i32;
    ((MARGIN_PX + (room.0 - used) / 2, CAPTION_PX), px)
}

/// The pixel rectangle of `t` in a map placed at `origin` with `px` per cell.
fn pixels(t: &Tile, origin: (i32, i32), px: f64) -> [(i32, i32); 2] {
    let at = |r: usize, c: usize| {
        (
            origin.0 + (c as f64 * px).round() as i32,
            origin.1 + (r as f64 * px).round() as i32,
        )
    };
    [at(t.row, t.col), at(t.row + t.height, t.col + t.width)]
}

/// The two captions' lines at the top of a map's area.
fn caption<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, lines: [&str; 2]) -> DrawResult
where
    DB::ErrorType: 'static,
{
    area.draw_text(lines[0], &text(20), (16, 6))?;
    area.draw_text(lines[1], &text(TEXT), (16, 30))?;
    Ok(())
}

/// The domains' outlines over a map: each a thread's home.
fn draw_domains<DB: DrawingBackend>(
    row: &Row,
    area: &DrawingArea<DB, Shift>,
    origin: (i32, i32),
    px: f64,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    for d in &row.domains {
        area.draw(&Rectangle::new(
            pixels(d, origin, px),
            BLACK.stroke_width(2),
        ))?;
    }
    Ok(())
}

impl Maps {
    fn draw_head<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let what = match (&self.machine, self.virtual_time) {
            (Some(m), _) => format!("braid run on {m}"),
            (None, true) => "braid sim".to_string(),
            (None, false) => "braid run".to_string(),
        };
        area.draw_text(
            &format!("Each workload's cost per subdomain, and where the fastest balancer left them ({what})"),
            &text(20),
            (16, 8),
        )?;
        // The cost scale: a bar of the sequential colours with power-of-two
        // ticks.
        let (lo, hi) = self.scale();
        let (x0, x1, y0, y1) = (16, 520, 70, 96);
        area.draw_text(
            "cost per update over the median subdomain's",
            &text(TEXT),
            (x0, 40),
        )?;
        let steps = 200;
        for k in 0..steps {
            let a = x0 + (x1 - x0) * k / steps;
            let b = x0 + (x1 - x0) * (k + 1) / steps;
            let t = (f64::from(k) + 0.5) / f64::from(steps);
            area.draw(&Rectangle::new([(a, y0), (b, y1)], heat(t).filled()))?;
        }
        area.draw(&Rectangle::new([(x0, y0), (x1, y1)], BLACK.stroke_width(1)))?;
        for e in lo..=hi {
            let x = x0 + ((x1 - x0) as f64 * f64::from(e - lo) / f64::from(hi - lo)) as i32;
            area.draw(&PathElement::new(vec![(x, y1), (x, y1 + 6)], BLACK))?;
            let label = power_label(e);
            let half = 5 * label.len() as i32;
            area.draw_text(&label, &text(TEXT), (x - half, y1 + 10))?;
        }
        // The owners' key.
        let keys = [
            (HOME, "at home"),
            (SOCKET, "on another thread, same socket"),
            (ACROSS, "on another socket"),
        ];
        area.draw_text("where a subdomain ended", &text(TEXT), (580, 40))?;
        for (k, (c, label)) in keys.iter().enumerate() {
            let y = 66 + 26 * k as i32;
            area.draw(&Rectangle::new([(580, y), (602, y + 18)], c.filled()))?;
            area.draw(&Rectangle::new(
                [(580, y), (602, y + 18)],
                BLACK.stroke_width(1),
            ))?;
            area.draw_text(label, &text(TEXT), (612, y))?;
        }
        Ok(())
    }

    fn draw_cost<DB: DrawingBackend>(&self, row: &Row, area: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let scale = self.scale();
        let measured = !row.cost.is_empty();
        let (lo, hi) = row
            .cost
            .iter()
            .flatten()
            .fold((f64::MAX, f64::MIN), |(a, b), &c| (a.min(c), b.max(c)));
        let range = match measured {
            true => format!("cost per update, {lo:.2} to {hi:.2} x the median's"),
            false => "cost: no run at this workload measured loads".to_string(),
        };
        caption(area, [&row.workload, &range])?;
        let (origin, px) = fit(area.dim_in_pixel(), row.height, row.width);
        for (k, t) in row.tiles.iter().enumerate() {
            let fill = match row.cost.get(k).copied().flatten() {
                Some(c) => heat(on_scale(c, scale)),
                None => UNKNOWN,
            };
            area.draw(&Rectangle::new(pixels(t, origin, px), fill.filled()))?;
        }
        draw_domains(row, area, origin, px)
    }
}

fn draw_owners<DB: DrawingBackend>(row: &Row, area: &DrawingArea<DB, Shift>) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let Some((variant, places)) = &row.owners else {
        caption(
            area,
            ["", "owners: no balanced run at this workload converged"],
        )?;
        return Ok(());
    };
    let count = |want: &[Place]| places.iter().filter(|(p, _)| want.contains(p)).count();
    let away = count(&[Place::Socket, Place::Across]);
    let across = count(&[Place::Across]);
    caption(
        area,
        [
            "",
            &format!("owners at the end: {variant}, {away} away ({across} across)"),
        ],
    )?;
    let (origin, px) = fit(area.dim_in_pixel(), row.height, row.width);
    for (t, (place, owner)) in row.tiles.iter().zip(places) {
        let fill = match place {
            Place::Home => HOME,
            Place::Socket => SOCKET,
            Place::Across => ACROSS,
        };
        let [a, b] = pixels(t, origin, px);
        area.draw(&Rectangle::new([a, b], fill.filled()))?;
        area.draw(&Rectangle::new(
            [a, b],
            RGBColor(170, 170, 170).stroke_width(1),
        ))?;
        let label = owner.to_string();
        let fits = b.0 - a.0 >= 12 * label.len() as i32 + 6 && b.1 - a.1 >= 22;
        if *place != Place::Home && fits {
            let half = 5 * label.len() as i32;
            let mid = ((a.0 + b.0) / 2 - half, (a.1 + b.1) / 2 - 9);
            area.draw_text(&label, &text(TEXT), mid)?;
        }
    }
    draw_domains(row, area, origin, px)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::experiment::suite::{Figure, Sample};
    use braid::Config;
    use braid::EngineKind;
    use braid::Plan;

    /// A simulated run of `variant` on 2 sockets x 2 cores under a hotspot
    /// in the north-west domain, recorded as taking `tts` seconds.
    fn record(variant: &str, tts: f64) -> Record {
        let mut cfg = Config::default();
        cfg.apply_variant(variant).unwrap();
        cfg.apply_overrides(&[
            "sim_topology=pack:2 core:2",
            "numerics=false",
            "tolerance=0",
            "max_iterations=40",
            "domain_size=16",
            "workload=hotspot(4, 0.25, 0.25, 0.2)",
        ])
        .unwrap();
        let (mut report, _) = braid::run(&Plan::simulated(&cfg).unwrap()).unwrap();
        report.time_to_solution_s = Some(tts);
        let sample = Sample {
            variant: variant.into(),
            workload: Some("hot".into()),
            ..Sample::default()
        };
        Record::for_tests(Figure::Workloads, EngineKind::Sim, sample, Some(report))
    }

    #[test]
    fn a_map_costs_the_hot_domain_dearest_and_places_the_fastest_balancers_subdomains() {
        let plain = record("async(4)", 1.0);
        let slow = record("async(4)+greedy(0.001)", 0.9);
        let mut fast = record("async(4)+refine(0.001)", 0.8);
        // Subdomain 0 (domain 0, socket 0) on thread 1 (socket 0), subdomain
        // 1 on thread 2 (socket 1); the rest at home.
        let rep = fast.report.as_mut().unwrap();
        assert_eq!(rep.thread_sockets, [0, 0, 1, 1]);
        rep.owners = (0..16).map(|s| s / 4).collect();
        rep.owners[0] = 1;
        rep.owners[1] = 2;
        let maps = Maps::new(&[&plain, &slow, &fast]);
        let row = &maps.rows[0];
        assert_eq!((row.height, row.width, row.tiles.len()), (32, 32, 16));
        // The hot domain is the north-west one, every subdomain of it dearer
        // than every one elsewhere, and the median's cost is 1.
        let cost = |s: usize| row.cost[s].unwrap();
        let (hot, cool): (Vec<usize>, Vec<usize>) = (0..16).partition(|&s| s < 4);
        let hottest_cool = cool.iter().map(|&s| cost(s)).fold(0.0, f64::max);
        assert!(
            hot.iter().all(|&s| cost(s) > hottest_cool),
            "{:?}",
            row.cost
        );
        assert!(
            cost(0) > 1.5 && (hottest_cool - 1.0).abs() < 0.05,
            "{:?}",
            row.cost
        );
        // Its tiles: subdomain 1 is the north-west domain's north-east quarter.
        assert_eq!(
            row.tiles[1],
            Tile {
                row: 0,
                col: 8,
                height: 8,
                width: 8
            }
        );
        // The owners are the fastest balanced run's, placed by socket.
        let (variant, places) = row.owners.as_ref().unwrap();
        assert_eq!(variant, "async(4)+refine(0.001)");
        assert_eq!(places[0], (Place::Socket, 1));
        assert_eq!(places[1], (Place::Across, 2));
        assert!(places[2..].iter().all(|(p, _)| *p == Place::Home));
        // Without a balanced run, a map of costs alone.
        let alone = Maps::new(&[&plain]);
        assert!(alone.rows[0].owners.is_none() && !alone.rows[0].cost.is_empty());
    }

    #[test]
    fn the_cost_scale_runs_light_to_dark_and_powers_of_two_read_as_fractions() {
        let lum =
            |c: RGBColor| 0.3 * f64::from(c.0) + 0.59 * f64::from(c.1) + 0.11 * f64::from(c.2);
        let mut last = f64::MAX;
        for k in 0..=20 {
            let l = lum(heat(f64::from(k) / 20.0));
            assert!(l < last, "step {k}: {l} after {last}");
            last = l;
        }
        assert_eq!(power_label(-2), "1/4");
        assert_eq!(power_label(0), "1");
        assert_eq!(power_label(3), "8");
        assert!((on_scale(1.0, (-1, 3)) - 0.25).abs() < 1e-12);
    }
}
