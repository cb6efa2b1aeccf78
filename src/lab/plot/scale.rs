//! Balancing as the nodes grow (`figure = "scale"`): for each balanced
//! variant and condition (quiet, noisy, under a workload), what a call
//! costs and how many subdomains each call moves, against the number of
//! simulated nodes, both axes logarithmic; and a table of those with the
//! iteration rate, spread and time per iteration. The nodes are read from
//! each record's `sim_topology` (its `host:N` level), so a suite sweeps
//! it ([`crate::lab::experiment`]'s `[sweep]`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

use super::landscape::variant_order;
use super::look::{draw_mark, look};
use super::{
    Draw, DrawResult, Frame, Key, Mark, PlotError, Stroke, TEXT, chart, mesh, variant_colours,
};
use crate::lab::experiment::results::Record;
use braid::SimTopology;

/// One record's point: where it ran and what its balancer did.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Point {
    pub nodes: usize,
    pub threads: usize,
    pub variant: usize,
    pub condition: String,
    pub calls: u64,
    /// Mean virtual seconds per call.
    pub call_s: f64,
    pub moves: u64,
    pub across: u64,
    pub rate: f64,
    pub spread: u64,
}

/// One line: a variant under a condition, as (log10 nodes, log10 value).
#[derive(Debug, Clone, PartialEq)]
struct Series {
    variant: usize,
    condition: usize,
    points: Vec<(f64, f64)>,
}

pub(super) struct Scale {
    variants: Vec<String>,
    conditions: Vec<String>,
    points: Vec<Point>,
    /// The unbalanced runs' points (variant, point), for the table only:
    /// the spread and rate a balancer is read against.
    plain: Vec<(String, Point)>,
    /// Sockets and cores per socket of every node, when all runs share them.
    node: Option<(usize, usize)>,
}

/// A sample's condition: its workload when not uniform, and noisy or quiet.
fn condition(r: &Record) -> String {
    let noise = match r.sample.noise {
        true => "noisy",
        false => "quiet",
    };
    match r.sample.workload.as_deref() {
        Some(w) if w != "uniform" => format!("{w}, {noise}"),
        _ => noise.to_string(),
    }
}

impl Scale {
    /// The balanced records' points (a record without a balancer, or on a
    /// machine of one node, has nothing to draw here), and the unbalanced
    /// ones' for the table.
    pub(super) fn new(records: &[&Record]) -> Scale {
        let mut plain: Vec<(String, Point)> = records
            .iter()
            .filter_map(|r| {
                let rep = r.report.as_ref()?;
                let SimTopology::Synthetic(t) = &rep.config.sim_topology else {
                    return None;
                };
                if rep.lb.as_ref().is_some_and(|lb| lb.calls > 0) {
                    return None;
                }
                let point = Point {
                    nodes: t.nodes,
                    threads: rep.threads,
                    variant: 0,
                    condition: condition(r),
                    calls: 0,
                    call_s: f64::NAN,
                    moves: 0,
                    across: 0,
                    rate: rep.iteration_rate,
                    spread: rep.spread,
                };
                Some((r.sample.variant.clone(), point))
            })
            .collect();
        plain.sort_by(|(va, a), (vb, b)| {
            (va, &a.condition, a.nodes).cmp(&(vb, &b.condition, b.nodes))
        });
        let balanced: Vec<&Record> = records
            .iter()
            .copied()
            .filter(|r| {
                r.report
                    .as_ref()
                    .is_some_and(|rep| rep.lb.as_ref().is_some_and(|lb| lb.calls > 0))
            })
            .collect();
        let variants = variant_order(&balanced);
        let mut shapes: Vec<(usize, usize)> = balanced
            .iter()
            .filter_map(|r| match &r.report.as_ref()?.config.sim_topology {
                SimTopology::Synthetic(t) => Some((t.sockets / t.nodes.max(1), t.cores_per_socket)),
                _ => None,
            })
            .collect();
        shapes.sort_unstable();
        shapes.dedup();
        let node = match shapes[..] {
            [one] => Some(one),
            _ => None,
        };
        let mut conditions: Vec<String> = Vec::new();
        let mut points = Vec::new();
        for r in balanced {
            let (Some(rep), Some(vi)) = (
                r.report.as_ref(),
                variants.iter().position(|v| *v == r.sample.variant),
            ) else {
                continue;
            };
            let (Some(lb), SimTopology::Synthetic(t)) = (rep.lb.as_ref(), &rep.config.sim_topology)
            else {
                continue;
            };
            let c = condition(r);
            if !conditions.contains(&c) {
                conditions.push(c.clone());
            }
            points.push(Point {
                nodes: t.nodes,
                threads: rep.threads,
                variant: vi,
                condition: c,
                calls: lb.calls,
                call_s: lb.time_s / lb.calls as f64,
                moves: lb.moves,
                across: lb.cross_socket_moves,
                rate: rep.iteration_rate,
                spread: rep.spread,
            });
        }
        points.sort_by(|a, b| {
            (a.variant, &a.condition, a.nodes).cmp(&(b.variant, &b.condition, b.nodes))
        });
        Scale {
            variants,
            conditions,
            points,
            plain,
            node,
        }
    }

    /// Whether there is a line to draw: some series of two node counts.
    pub(super) fn is_empty(&self) -> bool {
        let mut nodes: Vec<usize> = self.points.iter().map(|p| p.nodes).collect();
        nodes.sort_unstable();
        nodes.dedup();
        nodes.len() < 2
    }

    /// The table beside the figure: `stem.md`, one row per record, the
    /// unbalanced runs first (no calls: `-` per call).
    pub(super) fn write_table(&self, dir: &Path, stem: &str) -> Result<Vec<PathBuf>, PlotError> {
        let mut t = String::from(
            "| nodes | threads | condition | variant | calls | per call (us) | moves | across sockets | moves per call | rate (it/thread/s) | time per iteration (us) | spread |\n\
             |---|---|---|---|---|---|---|---|---|---|---|---|\n",
        );
        for (variant, p) in &self.plain {
            let _ = writeln!(
                t,
                "| {} | {} | {} | {} | 0 | - | 0 | 0 | - | {:.0} | {:.2} | {} |",
                p.nodes,
                p.threads,
                p.condition,
                variant,
                p.rate,
                1e6 / p.rate.max(f64::MIN_POSITIVE),
                p.spread
            );
        }
        for p in &self.points {
            let _ = writeln!(
                t,
                "| {} | {} | {} | {} | {} | {:.1} | {} | {} | {:.2} | {:.0} | {:.2} | {} |",
                p.nodes,
                p.threads,
                p.condition,
                self.variants[p.variant],
                p.calls,
                p.call_s * 1e6,
                p.moves,
                p.across,
                p.moves as f64 / p.calls.max(1) as f64,
                p.rate,
                1e6 / p.rate.max(f64::MIN_POSITIVE),
                p.spread
            );
        }
        let path = dir.join(format!("{stem}.md"));
        braid_noise::files::write_atomic(&path, |out| std::io::Write::write_all(out, t.as_bytes()))
            .map_err(|e| PlotError::Write {
                path: path.clone(),
                message: e.to_string(),
            })?;
        Ok(vec![path])
    }

    /// Each (variant, condition) series of `value`, as (log10 nodes,
    /// log10 value); points whose value is not positive are left out (a
    /// log axis has no 0), as are series of one point.
    fn series(&self, value: impl Fn(&Point) -> f64) -> Vec<Series> {
        let mut out = Vec::new();
        for v in 0..self.variants.len() {
            for (ci, c) in self.conditions.iter().enumerate() {
                let pts: Vec<(f64, f64)> = self
                    .points
                    .iter()
                    .filter(|p| p.variant == v && &p.condition == c)
                    .map(|p| (p.nodes as f64, value(p)))
                    .filter(|&(_, y)| y > 0.0 && y.is_finite())
                    .map(|(x, y)| (x.log10(), y.log10()))
                    .collect();
                if pts.len() >= 2 {
                    out.push(Series {
                        variant: v,
                        condition: ci,
                        points: pts,
                    });
                }
            }
        }
        out
    }

    fn draw_panel<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        title: &str,
        y_desc: &str,
        value: impl Fn(&Point) -> f64,
    ) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let series = self.series(value);
        let all = series.iter().flat_map(|s| s.points.iter());
        let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
        for &(x, y) in all {
            (x0, x1, y0, y1) = (x0.min(x), x1.max(x), y0.min(y), y1.max(y));
        }
        if series.is_empty() {
            (x0, x1, y0, y1) = (0.0, 1.0, 0.0, 1.0);
        }
        // Whole decades on the y axis, a margin on the x axis.
        let (y0, y1) = (y0.floor(), y1.ceil().max(y0.floor() + 1.0));
        let pad = 0.05 * (x1 - x0).max(0.1);
        let frame = Frame {
            caption: 22,
            margin: 16,
            x_labels: 56,
            y_labels: 76,
        };
        let mut chart = chart(area, title, frame, x0 - pad..x1 + pad, y0..y1)?;
        let power = |v: &f64| two_digits(10f64.powf(*v));
        let x_desc = match self.node {
            Some((sockets, cores)) => {
                format!("simulated nodes of {sockets} x {cores} cores (log scale)")
            }
            None => "simulated nodes (log scale)".to_string(),
        };
        mesh(&mut chart)
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_label_formatter(&power)
            .y_label_formatter(&power)
            // A tick at every decade.
            .y_labels((y1 - y0) as usize + 1)
            .light_line_style(WHITE.mix(0.0))
            .draw()?;
        for Series {
            variant: v,
            condition: ci,
            points: pts,
        } in series
        {
            let c = variant_colours(&self.variants)[v];
            let style = c.stroke_width(2);
            match ci {
                0 => chart.draw_series(LineSeries::new(pts.iter().copied(), style))?,
                k => chart.draw_series(DashedLineSeries::new(
                    pts.iter().copied(),
                    3 + 5 * k as u32,
                    4,
                    style,
                ))?,
            };
            let mark = look(&self.variants[v]).mark;
            for &p in &pts {
                draw_mark(&mut chart, mark, p, (0, 4), c, false)?;
            }
        }
        Ok(())
    }

    fn keys(&self) -> Vec<Key> {
        let mut keys: Vec<Key> = self
            .variants
            .iter()
            .enumerate()
            .map(|(i, v)| {
                Key::new(
                    v.clone(),
                    variant_colours(&self.variants)[i],
                    Stroke::Solid,
                    look(v).mark,
                )
            })
            .collect();
        for (ci, c) in self.conditions.iter().enumerate() {
            let stroke = match ci {
                0 => Stroke::Solid,
                k => Stroke::Dashed(3 + 5 * k as u32, 4),
            };
            keys.push(Key::new(c.clone(), RGBColor(0, 0, 0), stroke, Mark::None));
        }
        keys
    }
}

/// `x` to two significant digits, as a log axis's tick reads best (250,
/// not 251.19).
fn two_digits(x: f64) -> String {
    if !(x > 0.0 && x.is_finite()) {
        return format!("{x}");
    }
    let e = x.log10().floor() as i32 - 1;
    let r = (x / 10f64.powi(e)).round() * 10f64.powi(e);
    match e >= 0 {
        true => format!("{r:.0}"),
        false => format!("{r:.*}", (-e) as usize),
    }
}

/// The legend's strip below the panels, pixels.
const LEGEND_PX: u32 = 110;

impl Draw for Scale {
    fn size(&self) -> (u32, u32) {
        (1000, 2 * 560 + LEGEND_PX)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE)?;
        let (_, h) = root.dim_in_pixel();
        let (panels, keys) = root.split_vertically(h - LEGEND_PX);
        let areas = panels.split_evenly((2, 1));
        self.draw_panel(
            &areas[0],
            "What a call costs (mean, virtual time)",
            "microseconds per call (log scale)",
            |p| p.call_s * 1e6,
        )?;
        self.draw_panel(
            &areas[1],
            "Subdomains moved per call (series with no move not drawn)",
            "moves per call (log scale)",
            |p| p.moves as f64 / p.calls.max(1) as f64,
        )?;
        super::draw_keys(&keys, &self.keys(), TEXT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scale(points: Vec<Point>) -> Scale {
        Scale {
            variants: vec!["a".into(), "b".into()],
            conditions: vec!["quiet".into(), "noisy".into()],
            points,
            plain: Vec::new(),
            node: Some((2, 32)),
        }
    }

    fn point(nodes: usize, variant: usize, condition: &str, moves: u64) -> Point {
        Point {
            nodes,
            threads: 64 * nodes,
            variant,
            condition: condition.into(),
            calls: 10,
            call_s: 1e-5 * nodes as f64,
            moves,
            across: 0,
            rate: 1e4,
            spread: 3,
        }
    }

    #[test]
    fn each_variant_and_condition_is_a_series_in_decades_and_zero_moves_are_left_out() {
        let s = scale(vec![
            point(10, 0, "quiet", 10),
            point(100, 0, "quiet", 100),
            point(10, 0, "noisy", 0),
            point(100, 0, "noisy", 10),
            point(10, 1, "quiet", 5),
        ]);
        let moves = s.series(|p| p.moves as f64 / p.calls as f64);
        // b has one point, noisy a one positive one: only quiet a is drawn.
        assert_eq!(moves.len(), 1, "{moves:?}");
        assert_eq!((moves[0].variant, moves[0].condition), (0, 0));
        assert_eq!(moves[0].points, vec![(1.0, 0.0), (2.0, 1.0)]);
        let cost = s.series(|p| p.call_s * 1e6);
        assert_eq!(cost.len(), 2);
        assert!(!s.is_empty());
        assert!(scale(vec![point(10, 0, "quiet", 1), point(10, 1, "quiet", 1)]).is_empty());
    }

    #[test]
    fn the_table_shows_the_unbalanced_runs_first_without_a_call_cost() {
        let mut s = scale(vec![point(10, 0, "quiet", 10)]);
        s.plain.push((
            "plain".into(),
            Point {
                calls: 0,
                call_s: f64::NAN,
                ..point(10, 0, "quiet", 0)
            },
        ));
        let dir = std::env::temp_dir().join(format!("braid-scale-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let written = s.write_table(&dir, "scale").unwrap();
        let text = std::fs::read_to_string(&written[0]).unwrap();
        let rows: Vec<&str> = text.lines().skip(2).collect();
        assert_eq!(
            rows[0],
            "| 10 | 640 | quiet | plain | 0 | - | 0 | 0 | - | 10000 | 100.00 | 3 |"
        );
        assert!(
            rows[1].starts_with("| 10 | 640 | quiet | a | 10 | 100.0 |"),
            "{text}"
        );
        // Nothing unbalanced is drawn: the series are the balanced points'.
        assert_eq!(s.series(|p| p.call_s * 1e6).len(), 0);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn log_ticks_read_to_two_digits() {
        let read: Vec<String> = [251.19, 63.1, 1000.0, 3162.3, 0.316, 16.0]
            .into_iter()
            .map(two_digits)
            .collect();
        assert_eq!(read, ["250", "63", "1000", "3200", "0.32", "16"]);
    }
}
