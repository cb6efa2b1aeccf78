//! Figure 2, the braid: a few subdomains' update counts minus the mean
//! count over time, from one traced run. BalancerSettings keeps the strands
//! together; a ring marks a sample where the subdomain had moved to
//! another thread.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{
    Draw, DrawResult, Frame, Key, Mark, Stroke, TEXT, chart, colour, mesh, panel_title, seconds,
};
use crate::engine::EngineKind;
use crate::engine::TraceSample;
use crate::lab::experiment::results::Record;

const STRANDS: usize = 4;

pub(super) fn has_trace(r: &Record) -> bool {
    r.report
        .as_ref()
        .and_then(|rep| rep.trace.as_ref())
        .is_some_and(|t| t.len() >= 2)
}

struct Strand {
    subdomain: usize,
    first_owner: usize,
    /// (t, count - mean) per sample.
    points: Vec<(f64, f64)>,
    /// Samples where the owner changed.
    moves: Vec<(f64, f64)>,
}

pub(super) struct Braid {
    title: String,
    virtual_time: bool,
    strands: Vec<Strand>,
}

impl Braid {
    pub(super) fn new(r: &Record) -> Braid {
        let rep = r.report.as_ref().expect("a braid record has a report");
        let trace: &[TraceSample] = rep.trace.as_deref().unwrap_or_default();
        let subs = trace.first().map_or(0, |s| s.counts.len());
        let owners0: &[usize] = trace.first().map_or(&[], |s| &s.owners);
        // The noisy thread's subdomains first (what balancing rescues),
        // then evenly spaced others.
        let noisy_core = rep
            .noise
            .as_ref()
            .and_then(|n| n.parasites.first())
            .map(|p| p.core);
        let noisy_thread = noisy_core.and_then(|c| rep.cores.iter().position(|&x| x == c));
        let mut chosen: Vec<usize> = (0..subs)
            .filter(|&s| noisy_thread.is_some_and(|t| owners0.get(s) == Some(&t)))
            .take(STRANDS / 2)
            .collect();
        let step = (subs / STRANDS).max(1);
        for s in (0..subs).step_by(step) {
            if chosen.len() >= STRANDS {
                break;
            }
            if !chosen.contains(&s) {
                chosen.push(s);
            }
        }
        let strands = chosen
            .into_iter()
            .map(|s| {
                let mut points = Vec::new();
                let mut moves = Vec::new();
                let mut owner = owners0.get(s).copied();
                for sample in trace {
                    let counts = &sample.counts;
                    let mean = counts.iter().sum::<u64>() as f64 / counts.len().max(1) as f64;
                    let count = counts.get(s).map_or(0.0, |&c| c as f64);
                    let pt = (sample.t_s, count - mean);
                    points.push(pt);
                    if sample.owners.get(s).copied() != owner {
                        moves.push(pt);
                        owner = sample.owners.get(s).copied();
                    }
                }
                Strand {
                    subdomain: s,
                    first_owner: owners0.get(s).copied().unwrap_or(0),
                    points,
                    moves,
                }
            })
            .collect();
        let noise = if noisy_thread.is_some() {
            format!(", noise on thread {}", noisy_thread.unwrap_or(0))
        } else {
            String::new()
        };
        Braid {
            title: format!("{} - {}{noise}", panel_title(r), r.sample.variant),
            virtual_time: r.engine == EngineKind::Sim,
            strands,
        }
    }
}

/// The legend's strip below the strands, pixels.
const LEGEND_PX: u32 = 130;

impl Draw for Braid {
    fn size(&self) -> (u32, u32) {
        (1200, 700 + LEGEND_PX)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE)?;
        let (plot, keys) = root.split_vertically(700);
        let pts = self.strands.iter().flat_map(|s| s.points.iter());
        let (t1, y0, y1) = pts.fold((0.0f64, 0.0f64, 0.0f64), |(t, lo, hi), &(x, y)| {
            (t.max(x), lo.min(y), hi.max(y))
        });
        let pad = ((y1 - y0) * 0.08).max(1.0);
        let frame = Frame {
            caption: 22,
            margin: 18,
            x_labels: 60,
            y_labels: 80,
        };
        let x = 0.0..t1.max(1e-9);
        let mut chart = chart(&plot, &self.title, frame, x, (y0 - pad)..(y1 + pad))?;
        mesh(&mut chart)
            .x_desc(format!("time ({})", seconds(self.virtual_time)))
            .y_desc("update count minus the mean over all subdomains")
            .light_line_style(WHITE.mix(0.0))
            .draw()?;
        let mut legend = Vec::new();
        for (i, s) in self.strands.iter().enumerate() {
            let c = colour(i);
            chart.draw_series(LineSeries::new(s.points.iter().copied(), c.stroke_width(2)))?;
            chart.draw_series(
                s.moves
                    .iter()
                    .map(|&p| Circle::new(p, 5, c.stroke_width(2))),
            )?;
            legend.push(Key::new(
                format!(
                    "subdomain {} (thread {} at start)",
                    s.subdomain, s.first_owner
                ),
                c,
                Stroke::Solid,
                Mark::None,
            ));
        }
        legend.push(Key {
            open: true,
            ..Key::new(
                "ring: it moved to another thread since the previous sample",
                BLACK,
                Stroke::None,
                Mark::Circle,
            )
        });
        super::draw_keys(&keys, &legend, TEXT)
    }
}
