//! ULBA's Fig. 3 beside braid's measurement of it: for each overloaded
//! share a suite of `overloading(v, x, y)` instances covers, the
//! distribution ULBA's own model gives over Table II's instances
//! ([`crate::lab::ulba`]: 1000 instances, the best of 100 alphas against
//! the standard method) as a grey box, and braid's instances (the
//! anticipating variant at its best `lb_alpha` against each standard
//! strategy, simulated) as dots beside it.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::look::{MODEL_GREY, colour, draw_mark, look};
use super::stats::{Five, quantile};
use super::{Chart, Draw, DrawResult, FONT, Frame, TEXT, chart, mesh};
use crate::lab::ulba;
use braid::WorkloadSpec;

/// Instances of ULBA's model per share, as its Fig. 3 draws.
const INSTANCES: usize = 1000;
/// The model's draws (any fixed seed: the figure is drawn again byte for
/// byte).
const SEED: u64 = 2019;

/// One share's column.
struct Column {
    /// The overloaded share, a fraction.
    share: f64,
    /// ULBA's model: its gains (%), and the median of its best alphas.
    model: Five,
    model_alpha: f64,
    model_calls_saved: f64,
    /// braid's gains (%) at this share, by standard strategy.
    braid: Vec<(String, f64)>,
}

pub(super) struct UlbaModel {
    anticipating: String,
    standards: Vec<String>,
    columns: Vec<Column>,
}

impl UlbaModel {
    /// The figure for `gains` (instance workload, standard, gain %), if
    /// every instance is an `overloading(v, x, y)` workload.
    pub(super) fn new(
        anticipating: &str,
        standards: &[String],
        gains: &[(String, String, f64)],
    ) -> Option<UlbaModel> {
        let mut shares: Vec<f64> = Vec::new();
        let mut points = Vec::new();
        for (instance, standard, gain) in gains {
            let Ok(WorkloadSpec::Overloading { v, .. }) = WorkloadSpec::parse(instance) else {
                return None;
            };
            if !shares.contains(&v) {
                shares.push(v);
            }
            points.push((v, standard.clone(), *gain));
        }
        if shares.is_empty() {
            return None;
        }
        shares.sort_by(f64::total_cmp);
        let columns = shares
            .into_iter()
            .map(|share| {
                let best = ulba::gains(share, INSTANCES, SEED);
                let model: Vec<f64> = best.iter().map(|b| 100.0 * b.gain).collect();
                let alphas: Vec<f64> = best.iter().map(|b| b.alpha).collect();
                let saved: Vec<f64> = best
                    .iter()
                    .map(|b| 1.0 - b.ulba_calls as f64 / b.standard_calls.max(1) as f64)
                    .collect();
                Column {
                    share,
                    model: Five::of(&model).expect("1000 instances"),
                    model_alpha: quantile(&alphas, 0.5).unwrap_or(0.0),
                    model_calls_saved: quantile(&saved, 0.5).unwrap_or(0.0),
                    braid: (points.iter())
                        .filter(|(v, _, _)| *v == share)
                        .map(|(_, s, g)| (s.clone(), *g))
                        .collect(),
                }
            })
            .collect();
        Some(UlbaModel {
            anticipating: anticipating.to_string(),
            standards: standards.to_vec(),
            columns,
        })
    }

    /// The figure as CSV rows, a header first: per overloaded share, ULBA's
    /// model's median and largest gain (%), its median best alpha and the
    /// share of the standard method's calls it saves; then braid's median
    /// gain against each standard strategy.
    pub(super) fn rows(&self) -> Vec<Vec<String>> {
        let mut head: Vec<String> = [
            "share",
            "model_median_pct",
            "model_max_pct",
            "model_alpha",
            "model_calls_saved_pct",
        ]
        .map(String::from)
        .to_vec();
        head.extend(
            self.standards
                .iter()
                .map(|s| format!("braid_median_pct over {s}")),
        );
        let mut out = vec![head];
        for c in &self.columns {
            let mut row = vec![
                format!("{}", c.share),
                super::cell(Some(c.model.median), 3),
                super::cell(Some(c.model.max), 3),
                super::cell(Some(c.model_alpha), 3),
                super::cell(Some(100.0 * c.model_calls_saved), 1),
            ];
            for s in &self.standards {
                let g: Vec<f64> = (c.braid.iter())
                    .filter(|(x, _)| x == s)
                    .map(|(_, g)| *g)
                    .collect();
                row.push(super::cell(quantile(&g, 0.5), 3));
            }
            out.push(row);
        }
        out
    }

    /// The y axis, %: every box, every dot and 0, padded.
    fn y_range(&self) -> (f64, f64) {
        let values = self.columns.iter().flat_map(|c| {
            [c.model.min, c.model.max]
                .into_iter()
                .chain(c.braid.iter().map(|(_, g)| *g))
        });
        let (lo, hi) = values.fold((0.0f64, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
        let pad = ((hi - lo) * 0.08).max(0.5);
        (lo - pad, hi + pad)
    }
}

const LEGEND_PX: u32 = 120;

impl Draw for UlbaModel {
    fn size(&self) -> (u32, u32) {
        (1000, 620 + LEGEND_PX)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE)?;
        let (top, keys) = root.split_vertically(620);
        let (y0, y1) = self.y_range();
        let k = self.columns.len() as f64;
        let frame = Frame {
            caption: 22,
            margin: 16,
            x_labels: 70,
            y_labels: 60,
        };
        let mut chart = chart(
            &top,
            "ULBA's Fig. 3: its model's gains, and braid's instances beside them",
            frame,
            -0.5..(k - 0.5),
            y0..y1,
        )?;
        let labels: Vec<String> = (self.columns.iter())
            .map(|c| format!("{:.0}%", 100.0 * c.share))
            .collect();
        mesh(&mut chart)
            .x_desc("share of the elements (threads) overloading")
            .y_desc("gain over the standard method (%)")
            .x_labels(self.columns.len() + 1)
            .x_label_formatter(&|x| {
                let i = x.round();
                match (x - i).abs() < 1e-6 && i >= 0.0 {
                    true => labels.get(i as usize).cloned().unwrap_or_default(),
                    false => String::new(),
                }
            })
            .y_label_formatter(&|v| format!("{v:.0}"))
            .disable_x_mesh()
            .light_line_style(TRANSPARENT)
            .draw()?;
        chart.draw_series([PathElement::new(
            vec![(-0.5, 0.0), (k - 0.5, 0.0)],
            BLACK.mix(0.35).stroke_width(1),
        )])?;
        let font = TextStyle::from((FONT, TEXT).into_font());
        let base = top.get_base_pixel();
        for (i, c) in self.columns.iter().enumerate() {
            // The model's box, left of the column's centre.
            let x = i as f64 - 0.12;
            draw_box(&mut chart, x, c.model)?;
            let (px, py) = chart.backend_coord(&(x, c.model.max));
            top.draw(&Text::new(
                format!("max {:.1}%", c.model.max),
                (px - base.0, py - 6 - base.1),
                font.pos(Pos::new(HPos::Center, VPos::Bottom)),
            ))?;
            self.draw_instances(&mut chart, i, c)?;
            // What the model chose there, under the axis label.
            let (px, py) = chart.backend_coord(&(i as f64, y0));
            top.draw(&Text::new(
                format!(
                    "alpha {:.2}, calls -{:.0}%",
                    c.model_alpha,
                    100.0 * c.model_calls_saved
                ),
                (px - base.0, py + 30 - base.1),
                font.pos(Pos::new(HPos::Center, VPos::Top)),
            ))?;
        }
        self.draw_keys(&keys, &font)
    }
}

impl UlbaModel {
    /// braid's instances of column `i`, right of the model's box, spread a
    /// little sideways within each standard so that equal gains stay
    /// visible, with their median as a bar.
    fn draw_instances<DB: DrawingBackend>(
        &self,
        chart: &mut Chart<'_, DB>,
        i: usize,
        c: &Column,
    ) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let l = look(&self.anticipating);
        for (s, standard) in self.standards.iter().enumerate() {
            let own: Vec<f64> = (c.braid.iter())
                .filter(|(name, _)| name == standard)
                .map(|(_, g)| *g)
                .collect();
            let n = own.len().max(1) as f64;
            for (j, g) in own.iter().enumerate() {
                let dx = 0.2 + 0.08 * s as f64 + 0.12 * (j as f64 + 0.5) / n;
                draw_mark(chart, l.mark, (i as f64 + dx, *g), (0, 5), l.colour, false)?;
            }
            if let Some(m) = quantile(&own, 0.5) {
                let xm = i as f64 + 0.2 + 0.08 * s as f64;
                chart.draw_series([PathElement::new(
                    vec![(xm, m), (xm + 0.12, m)],
                    l.colour.stroke_width(3),
                )])?;
            }
        }
        Ok(())
    }

    /// The key under the chart: what the boxes and the dots are.
    fn draw_keys<DB: DrawingBackend>(
        &self,
        keys: &DrawingArea<DB, Shift>,
        font: &TextStyle<'_>,
    ) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let left = font.pos(Pos::new(HPos::Left, VPos::Top));
        let lines = [
            format!(
                "grey box: ULBA's model (its Eqs. 1-12), {INSTANCES} instances of Table II a share, \
                 the best of 100 alphas (quartiles, median, min and max); under each share the \
                 model's median best alpha and the calls it saves"
            ),
            format!(
                "dots, right of each box: braid's instances, {} at its best lb_alpha against {} \
                 (simulated; the bar is their median)",
                self.anticipating,
                self.standards.join(", ")
            ),
        ];
        for (n, line) in lines.iter().enumerate() {
            for (m, part) in wrap(line, 110).iter().enumerate() {
                keys.draw(&Text::new(
                    part.clone(),
                    (16, 8 + 24 * (2 * n as i32 + m as i32)),
                    left.clone(),
                ))?;
            }
        }
        Ok(())
    }
}

/// The model's box at `x`: quartiles filled, the median in black, the
/// whiskers to the least and the most.
fn draw_box<DB: DrawingBackend>(chart: &mut Chart<'_, DB>, x: f64, f: Five) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let grey = colour(MODEL_GREY);
    chart.draw_series([
        Rectangle::new(
            [(x - 0.15, f.q1), (x + 0.15, f.q3)],
            grey.mix(0.35).filled(),
        ),
        Rectangle::new([(x - 0.15, f.q1), (x + 0.15, f.q3)], grey.stroke_width(2)),
    ])?;
    chart.draw_series([
        PathElement::new(
            vec![(x - 0.15, f.median), (x + 0.15, f.median)],
            BLACK.stroke_width(3),
        ),
        PathElement::new(vec![(x, f.q3), (x, f.max)], grey.stroke_width(2)),
        PathElement::new(vec![(x, f.q1), (x, f.min)], grey.stroke_width(2)),
        PathElement::new(
            vec![(x - 0.07, f.max), (x + 0.07, f.max)],
            grey.stroke_width(2),
        ),
        PathElement::new(
            vec![(x - 0.07, f.min), (x + 0.07, f.min)],
            grey.stroke_width(2),
        ),
    ])?;
    Ok(())
}

/// `text` in lines of at most `width` characters, broken at spaces.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split(' ') {
        let last = lines.last_mut().expect("one line");
        if !last.is_empty() && last.len() + 1 + word.len() > width {
            lines.push(word.to_string());
        } else {
            if !last.is_empty() {
                last.push(' ');
            }
            last.push_str(word);
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_overloading_instances_get_the_model_beside_them() {
        let standards = vec!["sync(16)+greedy(degradation)".to_string()];
        let g = |w: &str, gain: f64| (w.to_string(), standards[0].clone(), gain);
        let fig = UlbaModel::new(
            "sync(16)+anticipate(degradation)",
            &standards,
            &[
                g("overloading(0.2, 0.1, 0.9)", 0.0),
                g("overloading(0.01, 0.1, 0.9)", 3.0),
                g("overloading(0.01, 0.2, 0.9)", 5.0),
            ],
        )
        .unwrap();
        // One column a share, in order, braid's gains under their share.
        let shares: Vec<f64> = fig.columns.iter().map(|c| c.share).collect();
        assert_eq!(shares, [0.01, 0.2]);
        assert_eq!(fig.columns[0].braid.len(), 2);
        // ULBA's own claim: gains fall as the overloaded share grows.
        assert!(fig.columns[0].model.median > fig.columns[1].model.median);
        assert!(fig.columns[0].model.min >= 0.0);
        let other = UlbaModel::new(
            "a",
            &standards,
            &[g("growing(4, 0.5, 0.5, 0.05, 0.001)", 1.0)],
        );
        assert!(other.is_none());
    }

    #[test]
    fn a_long_line_is_wrapped_at_spaces() {
        assert_eq!(wrap("aa bb cc", 5), ["aa bb", "cc"]);
        assert_eq!(wrap("aaaaaaa", 3), ["aaaaaaa"]);
    }
}
