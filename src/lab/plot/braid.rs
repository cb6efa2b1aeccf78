//! Figure 2, the braid: a few subdomains' update counts minus the mean
//! count over time, from one traced run. Balancing keeps the strands
//! together; a strip below the strands shows where each one was, sample by
//! sample: on the thread it started on or away from it, so that a run
//! that moves its subdomains at every sample reads as churn at a glance
//! (a ring per move hid the strands), and the legend counts the moves.

use plotters::coord::Shift;
use plotters::prelude::*;

use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{
    Draw, DrawResult, FONT, Frame, Key, Mark, Stroke, TEXT, chart, colour, mesh, panel_title,
    seconds,
};
use crate::lab::experiment::results::Record;
use braid::EngineKind;
use braid::TraceSample;

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
    /// Per sample: whether it was on the thread it started on.
    home: Vec<bool>,
    /// Samples at which its owner had changed since the one before.
    moves: usize,
}

pub(super) struct Braid {
    title: String,
    virtual_time: bool,
    strands: Vec<Strand>,
    /// Over every subdomain and sample: the largest distance of a count
    /// from the mean; the trace's samples, and the run's moves.
    max_deviation: f64,
    samples: usize,
    moves: u64,
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
                let (mut home, mut moves) = (Vec::new(), 0);
                let first = owners0.get(s).copied();
                let mut owner = first;
                for sample in trace {
                    let counts = &sample.counts;
                    let mean = counts.iter().sum::<u64>() as f64 / counts.len().max(1) as f64;
                    let count = counts.get(s).map_or(0.0, |&c| c as f64);
                    points.push((sample.t_s, count - mean));
                    let now = sample.owners.get(s).copied();
                    moves += usize::from(now != owner);
                    owner = now;
                    home.push(now == first);
                }
                Strand {
                    subdomain: s,
                    first_owner: first.unwrap_or(0),
                    points,
                    home,
                    moves,
                }
            })
            .collect();
        let noise = if noisy_thread.is_some() {
            format!(", noise on thread {}", noisy_thread.unwrap_or(0))
        } else {
            String::new()
        };
        let max_deviation = trace
            .iter()
            .map(|sample| {
                let c = &sample.counts;
                let mean = c.iter().sum::<u64>() as f64 / c.len().max(1) as f64;
                c.iter()
                    .map(|&x| (x as f64 - mean).abs())
                    .fold(0.0, f64::max)
            })
            .fold(0.0, f64::max);
        Braid {
            title: format!("{} - {}{noise}", panel_title(r), r.sample.variant),
            virtual_time: r.engine == EngineKind::Sim,
            strands,
            max_deviation,
            samples: trace.len(),
            moves: rep.lb.as_ref().map_or(0, |lb| lb.moves),
        }
    }

    /// The figure as CSV rows, a header first: the whole run (every
    /// subdomain's largest distance from the mean, its moves), then each
    /// strand drawn (its largest distance, the samples at which it had
    /// moved since the one before).
    pub(super) fn rows(&self) -> Vec<Vec<String>> {
        let mut out = vec![
            [
                "subdomain",
                "first_owner",
                "max_deviation",
                "moved_samples",
                "samples",
                "moves",
            ]
            .map(String::from)
            .to_vec(),
        ];
        out.push(vec![
            "all".into(),
            String::new(),
            super::cell(Some(self.max_deviation), 1),
            String::new(),
            self.samples.to_string(),
            self.moves.to_string(),
        ]);
        for st in &self.strands {
            let dev = st.points.iter().map(|p| p.1.abs()).fold(0.0, f64::max);
            out.push(vec![
                st.subdomain.to_string(),
                st.first_owner.to_string(),
                super::cell(Some(dev), 1),
                st.moves.to_string(),
                self.samples.to_string(),
                String::new(),
            ]);
        }
        out
    }
}

/// The legend's strip below the strands, pixels.
const LEGEND_PX: u32 = 130;
/// The strands' chart, and a row of the owners' strip below it, pixels.
const CHART_PX: u32 = 660;
const ROW_PX: u32 = 26;

impl Draw for Braid {
    fn size(&self) -> (u32, u32) {
        (1200, CHART_PX + self.strip_px() + LEGEND_PX)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE)?;
        let (plot, rest) = root.split_vertically(CHART_PX);
        let (strip, keys) = rest.split_vertically(self.strip_px());
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
        let mut chart = chart(&plot, &self.title, frame, x.clone(), (y0 - pad)..(y1 + pad))?;
        mesh(&mut chart)
            .x_desc(format!("time ({})", seconds(self.virtual_time)))
            .y_desc("update count minus the mean over all subdomains")
            .light_line_style(WHITE.mix(0.0))
            .draw()?;
        let mut legend = Vec::new();
        for (i, s) in self.strands.iter().enumerate() {
            let c = colour(i);
            chart.draw_series(LineSeries::new(s.points.iter().copied(), c.stroke_width(2)))?;
            legend.push(Key::new(
                format!(
                    "subdomain {} (thread {} at start; moved at {} of {} samples)",
                    s.subdomain,
                    s.first_owner,
                    s.moves,
                    s.points.len()
                ),
                c,
                Stroke::Solid,
                Mark::None,
            ));
        }
        self.draw_strip(&strip, x, frame)?;
        // What the strip's two shades mean, shown in the first strand's.
        legend.push(Key::new(
            "strip below: on the thread it started on",
            colour(0),
            Stroke::None,
            Mark::Square,
        ));
        legend.push(Key::new(
            "strip below: on another thread",
            light(colour(0)),
            Stroke::None,
            Mark::Square,
        ));
        super::draw_keys(&keys, &legend, TEXT)
    }
}

/// `c` at 30% on white: a strand away from its start thread.
fn light(c: RGBColor) -> RGBColor {
    let l = |x: u8| (255.0 - 0.3 * (255.0 - f64::from(x))).round() as u8;
    RGBColor(l(c.0), l(c.1), l(c.2))
}

impl Braid {
    fn strip_px(&self) -> u32 {
        ROW_PX * self.strands.len() as u32 + 20
    }

    /// Under the strands, aligned with their time axis: a row per strand,
    /// each sample's interval in the strand's colour where it sat on its
    /// start thread and a light shade of it where it sat elsewhere.
    fn draw_strip<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        x: std::ops::Range<f64>,
        frame: Frame,
    ) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let n = self.strands.len() as f64;
        let mut chart = ChartBuilder::on(area)
            .margin_left(frame.margin)
            .margin_right(frame.margin)
            .margin_bottom(20)
            .y_label_area_size(frame.y_labels)
            .build_cartesian_2d(x, 0.0..n.max(1.0))?;
        for (i, s) in self.strands.iter().enumerate() {
            let c = colour(i);
            let y = n - 1.0 - i as f64;
            let cells = s.points.windows(2).zip(&s.home[1..]).map(|(w, &home)| {
                let fill = if home { c.filled() } else { light(c).filled() };
                Rectangle::new([(w[0].0, y + 0.12), (w[1].0, y + 0.88)], fill)
            });
            chart.draw_series(cells)?;
            let (px, py) = chart.backend_coord(&(0.0, y + 0.5));
            let base = area.get_base_pixel();
            area.draw(&Text::new(
                s.subdomain.to_string(),
                (px - 10 - base.0, py - base.1),
                TextStyle::from((FONT, TEXT).into_font()).pos(Pos::new(HPos::Right, VPos::Center)),
            ))?;
        }
        Ok(())
    }
}
