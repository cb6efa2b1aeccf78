//! braid's speed against its references and goals, as `cargo bench
//! --bench compare` measured it: a row per comparison (braid over a C or
//! OpenMP reference, or one braid variant over another), every rep drawn
//! and its median marked, parity at 1, and the goal an issue set as a tick
//! with whether the median meets it; the simulator's own rate in a panel
//! of its own. The benchmark writes [`Speed`] as `speed.json` beside the
//! figure, and `braid plot speed.json` draws it again.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde::{Deserialize, Serialize};

use super::look::{draw_mark, look};
use super::{
    Draw, DrawResult, FONT, Frame, Mark, PlotError, TEXT, chart, mesh, register_font, render,
};

/// What the benchmark measured in one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Speed {
    /// The CPU it ran on, as `/proc/cpuinfo` names it.
    pub machine: String,
    /// When (UTC, ISO 8601).
    pub date: String,
    /// The braid that measured it: version, commit, and whether the tree
    /// was clean (a file written before 2026-12-01 named a `revision`
    /// instead, and reads as unknown).
    #[serde(default)]
    pub build: braid::Build,
    /// The command that measured it.
    pub command: String,
    /// Every comparison, in the order the benchmark made them.
    pub rows: Vec<SpeedRow>,
    /// What a pure balancer call costs (the `policy` group), if measured:
    /// written as `policy.csv` beside the figure.
    #[serde(default)]
    pub policy: Vec<PolicyCost>,
}

/// The median time of one pure balancer call (the decision alone, its
/// moves applied before the next) on a synthetic state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyCost {
    /// Subdomains in the state decided on.
    pub subdomains: usize,
    /// Threads they are spread over.
    pub threads: usize,
    /// The strategy as the table's column names it ("split (2 sockets)").
    pub strategy: String,
    /// Median over the reps of the mean microseconds per call.
    pub us_per_call: f64,
}

/// What a row's values are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    /// braid's rate over a reference's, or one variant's over another's,
    /// taken in the same rep (>= 1: braid, or the first, is as fast).
    Ratio,
    /// The simulator's subdomain updates per real second.
    UpdatesPerS,
}

/// One comparison, rep by rep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpeedRow {
    /// The benchmark's group ("time to solution, quiet").
    pub group: String,
    /// What over what ("async(4)+split(0.001) / C").
    pub what: String,
    /// The variant it times, for its colour and marker as in every figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// Whether the values are ratios or the simulator's rates.
    pub measure: Measure,
    /// Each rep's value.
    pub reps: Vec<f64>,
    /// The least an issue asks of the median, if it set one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<f64>,
}

impl SpeedRow {
    /// The median of the reps (NaN without any).
    ///
    /// ```
    /// use braid_cli::speed::{Measure, SpeedRow};
    /// let row = SpeedRow { group: "g".into(), what: "w".into(), variant: None,
    ///     measure: Measure::Ratio, reps: vec![1.2, 0.9, 1.0, 1.1], goal: Some(1.0) };
    /// assert!((row.median() - 1.05).abs() < 1e-12);
    /// assert_eq!(row.met(), Some(true));
    /// ```
    pub fn median(&self) -> f64 {
        let mut v: Vec<f64> = self
            .reps
            .iter()
            .copied()
            .filter(|x| x.is_finite())
            .collect();
        if v.is_empty() {
            return f64::NAN;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        match n % 2 {
            1 => v[n / 2],
            _ => 0.5 * (v[n / 2 - 1] + v[n / 2]),
        }
    }

    /// Whether the median meets the goal, if there is one.
    pub fn met(&self) -> Option<bool> {
        self.goal.map(|g| self.median() >= g)
    }

    /// How the row is shown: in the ratio panel as is, the simulator's
    /// rate in millions.
    fn scale(&self) -> f64 {
        match self.measure {
            Measure::Ratio => 1.0,
            Measure::UpdatesPerS => 1e-6,
        }
    }
}

impl Speed {
    /// An empty run on this machine, dated now.
    pub fn now(command: &str) -> Speed {
        Speed {
            machine: crate::lab::experiment::provenance::cpu_model(),
            date: crate::lab::experiment::provenance::now_iso8601(),
            build: braid::Build::this(),
            command: command.to_string(),
            rows: Vec::new(),
            policy: Vec::new(),
        }
    }

    /// Writes `stem.json`, `stem.png` and `stem.svg` into `dir`.
    pub fn write(&self, dir: &Path, stem: &str) -> Result<Vec<PathBuf>, String> {
        let mut files = vec![super::write_json(self, dir, stem)?];
        files.extend(self.draw(dir, stem).map_err(|e| e.to_string())?);
        Ok(files)
    }

    /// The rows as CSV, a header first: each comparison's reps, median,
    /// goal and whether the median meets it.
    fn table(&self) -> Vec<Vec<String>> {
        let mut out = vec![
            ["group", "what", "variant", "reps", "median", "goal", "met"]
                .map(String::from)
                .to_vec(),
        ];
        for r in &self.rows {
            out.push(vec![
                r.group.clone(),
                r.what.clone(),
                r.variant.clone().unwrap_or_default(),
                r.reps.len().to_string(),
                format!("{:.4}", r.median()),
                r.goal.map(|g| g.to_string()).unwrap_or_default(),
                r.met().map(|m| m.to_string()).unwrap_or_default(),
            ]);
        }
        out
    }

    /// The balancer's cost per call as CSV: a row per size (subdomains,
    /// threads), a column per strategy, microseconds to two decimals.
    fn policy_table(&self) -> Vec<Vec<String>> {
        let mut strategies: Vec<&str> = Vec::new();
        let mut sizes: Vec<(usize, usize)> = Vec::new();
        for c in &self.policy {
            if !strategies.contains(&c.strategy.as_str()) {
                strategies.push(&c.strategy);
            }
            if !sizes.contains(&(c.subdomains, c.threads)) {
                sizes.push((c.subdomains, c.threads));
            }
        }
        let mut out = vec![
            ["subdomains", "threads"]
                .into_iter()
                .chain(strategies.iter().copied())
                .map(String::from)
                .collect(),
        ];
        for (subdomains, threads) in sizes {
            let mut row = vec![subdomains.to_string(), threads.to_string()];
            for s in &strategies {
                let cell = self.policy.iter().find(|c| {
                    (c.subdomains, c.threads) == (subdomains, threads) && c.strategy == *s
                });
                row.push(cell.map_or(String::new(), |c| format!("{:.2}", c.us_per_call)));
            }
            out.push(row);
        }
        out
    }

    /// Writes `stem.png`, `stem.svg` and `stem.csv` into `dir` (and
    /// `policy.csv` when the balancer's cost was measured).
    pub(crate) fn draw(&self, dir: &Path, stem: &str) -> Result<Vec<PathBuf>, PlotError> {
        if self.rows.is_empty() && self.policy.is_empty() {
            return Err(PlotError::Empty(format!(
                "the speed measured on {}",
                self.date
            )));
        }
        let mut files = Vec::new();
        if !self.rows.is_empty() {
            register_font();
            files = render(self, dir, stem)?;
            files.push(super::write_csv(dir, stem, &self.table())?);
        }
        if !self.policy.is_empty() {
            files.push(super::write_csv(dir, "policy", &self.policy_table())?);
        }
        Ok(files)
    }

    /// The panels drawn: the ratios, then the simulator's rates, each
    /// only if measured.
    fn panels(&self) -> Vec<(Measure, Vec<&SpeedRow>)> {
        [Measure::Ratio, Measure::UpdatesPerS]
            .into_iter()
            .map(|m| (m, self.rows.iter().filter(|r| r.measure == m).collect()))
            .filter(|(_, rows): &(Measure, Vec<&SpeedRow>)| !rows.is_empty())
            .collect()
    }
}

/// The x axis of a panel, in the units it shows: every rep and goal (and
/// parity, for ratios), padded.
fn x_range(measure: Measure, rows: &[&SpeedRow]) -> (f64, f64) {
    let parity = match measure {
        Measure::Ratio => Some(1.0),
        Measure::UpdatesPerS => None,
    };
    let values = rows
        .iter()
        .flat_map(|r| r.reps.iter().chain(&r.goal).map(move |v| v * r.scale()))
        .chain(parity)
        .filter(|v| v.is_finite());
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
        (a.min(v), b.max(v))
    });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let pad = ((hi - lo) * 0.06).max(hi.abs() * 0.01).max(1e-9);
    (lo - pad, hi + pad)
}

const HEADLINE_PX: u32 = 84;
const ROW_PX: u32 = 30;
const FRAME_PX: u32 = 100;
const LABELS_PX: u32 = 440;
const STATUS_PX: u32 = 210;
const WIDTH: u32 = 1200;

impl Draw for Speed {
    fn size(&self) -> (u32, u32) {
        let panels = self.panels();
        let rows: usize = panels.iter().map(|(_, r)| r.len()).sum();
        (
            WIDTH,
            HEADLINE_PX + FRAME_PX * panels.len().max(1) as u32 + ROW_PX * rows.max(1) as u32,
        )
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE)?;
        let (top, mut rest) = root.split_vertically(HEADLINE_PX);
        let left = TextStyle::from((FONT, 22).into_font()).pos(Pos::new(HPos::Left, VPos::Top));
        top.draw(&Text::new(
            "braid's speed against its references and goals".to_string(),
            (12, 10),
            left,
        ))?;
        let small = TextStyle::from((FONT, TEXT).into_font()).pos(Pos::new(HPos::Left, VPos::Top));
        let reps = self.rows.iter().map(|r| r.reps.len()).max().unwrap_or(0);
        top.draw(&Text::new(
            format!(
                "{}, {} ({}), {reps} interleaved reps: each rep a ring, the median filled, \
                 the goal a bar",
                self.machine,
                &self.date[..self.date.len().min(10)],
                self.build
            ),
            (12, 46),
            small,
        ))?;
        for (measure, rows) in self.panels() {
            let height = FRAME_PX + ROW_PX * rows.len() as u32;
            let (area, below) = rest.split_vertically(height);
            rest = below;
            draw_panel(&area, measure, &rows)?;
        }
        Ok(())
    }
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    measure: Measure,
    rows: &[&SpeedRow],
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let (x0, x1) = x_range(measure, rows);
    let n = rows.len() as f64;
    let (plot, status) = area.split_horizontally(WIDTH - STATUS_PX);
    let frame = Frame {
        caption: 0,
        margin: 12,
        x_labels: 60,
        y_labels: LABELS_PX,
    };
    let mut chart = chart(&plot, "", frame, x0..x1, -0.6..(n - 0.4))?;
    let desc = match measure {
        Measure::Ratio => "braid over its reference, rate or 1 / time (>= 1: braid as fast)",
        Measure::UpdatesPerS => "the simulator: million subdomain updates per real second",
    };
    // As many decimals as the axis's span needs.
    let decimals = (1.0 - (x1 - x0).log10().floor()).clamp(0.0, 3.0) as usize;
    mesh(&mut chart)
        .x_desc(desc)
        .x_label_formatter(&|x| format!("{x:.decimals$}"))
        .y_labels(0)
        .disable_y_mesh()
        .light_line_style(TRANSPARENT)
        .draw()?;
    if measure == Measure::Ratio {
        chart.draw_series([PathElement::new(
            vec![(1.0, -0.6), (1.0, n - 0.4)],
            BLACK.mix(0.35).stroke_width(1),
        )])?;
    }
    let font = TextStyle::from((FONT, TEXT).into_font());
    let base = plot.get_base_pixel();
    let status_base = status.get_base_pixel();
    let mut group = "";
    for (i, r) in rows.iter().enumerate() {
        // The first row on top.
        let y = n - 1.0 - i as f64;
        if i % 2 == 0 {
            chart.draw_series([Rectangle::new(
                [(x0, y - 0.5), (x1, y + 0.5)],
                BLACK.mix(0.04).filled(),
            )])?;
        }
        let (colour, mark) = match &r.variant {
            Some(v) => (look(v).colour, look(v).mark),
            None => (BLACK, Mark::Circle),
        };
        for v in &r.reps {
            draw_mark(&mut chart, mark, (v * r.scale(), y), (0, 3), colour, true)?;
        }
        let median = r.median() * r.scale();
        if median.is_finite() {
            draw_mark(&mut chart, mark, (median, y), (0, 6), colour, false)?;
        }
        if let Some(g) = r.goal {
            let g = g * r.scale();
            chart.draw_series([PathElement::new(
                vec![(g, y - 0.42), (g, y + 0.42)],
                RGBColor(200, 30, 30).stroke_width(3),
            )])?;
        }
        // The group named once, on its first row.
        let label = match r.group == group {
            true => r.what.clone(),
            false => format!("{}: {}", r.group, r.what),
        };
        group = &r.group;
        let (px, py) = chart.backend_coord(&(x0, y));
        plot.draw(&Text::new(
            label,
            (px - 10 - base.0, py - base.1),
            font.pos(Pos::new(HPos::Right, VPos::Center)),
        ))?;
        let shown = |v: f64| match r.measure {
            Measure::Ratio => format!("{v:.3}"),
            Measure::UpdatesPerS => format!("{:.1}", v * r.scale()),
        };
        let said = match (r.goal, r.met()) {
            (Some(g), Some(true)) => format!("{} >= {}: met", shown(r.median()), shown(g)),
            (Some(g), _) => format!("{} < {}: not met", shown(r.median()), shown(g)),
            _ => shown(r.median()),
        };
        status.draw(&Text::new(
            said,
            (8, py - status_base.1),
            font.pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
    }
    Ok(())
}

/// The most a `speed.json` holds: the benchmark writes tens of KiB.
const MAX_BYTES: u64 = 1 << 20;

/// The [`Speed`] in `path`, read by its own reader: too large or
/// malformed, it is named as a `speed.json` with the field at fault.
pub(crate) fn read(path: &Path) -> Result<Speed, PlotError> {
    let speed: Speed = super::read_own(path, "speed.json", MAX_BYTES)?;
    if speed.rows.is_empty() && speed.policy.is_empty() {
        return Err(PlotError::NotReadable {
            path: path.to_path_buf(),
            kind: "speed.json",
            problem: "fields `rows` and `policy` are both empty: nothing was measured".into(),
        });
    }
    Ok(speed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(what: &str, measure: Measure, reps: &[f64], goal: Option<f64>) -> SpeedRow {
        SpeedRow {
            group: "g".into(),
            what: what.into(),
            variant: Some("async(4)".into()),
            measure,
            reps: reps.to_vec(),
            goal,
        }
    }

    #[test]
    fn a_goal_is_met_by_the_median_not_by_the_best_rep() {
        let r = row("a", Measure::Ratio, &[0.9, 0.95, 1.2], Some(1.0));
        assert_eq!(r.met(), Some(false));
        let r = row("a", Measure::Ratio, &[0.9, 1.05, 1.2], Some(1.0));
        assert_eq!(r.met(), Some(true));
        assert_eq!(row("a", Measure::Ratio, &[1.0], None).met(), None);
    }

    #[test]
    fn the_axis_holds_every_rep_every_goal_and_parity() {
        let rows = [
            row("a", Measure::Ratio, &[1.1, 1.3], Some(1.05)),
            row("b", Measure::Ratio, &[1.2], Some(1.4)),
        ];
        let refs: Vec<&SpeedRow> = rows.iter().collect();
        let (lo, hi) = x_range(Measure::Ratio, &refs);
        assert!(lo < 1.0 && hi > 1.4, "{lo} {hi}");
        // Rates are shown in millions, and parity is not theirs.
        let rates = [row("s", Measure::UpdatesPerS, &[2.9e7, 3.1e7], Some(3e7))];
        let refs: Vec<&SpeedRow> = rates.iter().collect();
        let (lo, hi) = x_range(Measure::UpdatesPerS, &refs);
        assert!(
            lo > 25.0 && lo < 29.0 && hi > 31.0 && hi < 33.0,
            "{lo} {hi}"
        );
    }

    #[test]
    fn a_speed_is_written_read_back_and_drawn_the_same() {
        let dir = braid_testkit::scratch_dir("speed");
        let speed = Speed {
            rows: vec![
                row(
                    "async(4) / C",
                    Measure::Ratio,
                    &[1.02, 1.08, 0.99],
                    Some(1.05),
                ),
                row("2 x 18", Measure::UpdatesPerS, &[2.9e7, 3.0e7], Some(3e7)),
            ],
            ..Speed::now("test")
        };
        let files = speed.write(&dir, "speed").unwrap();
        assert_eq!(files.len(), 4);
        let read_back = read(&files[0]).unwrap();
        let again = dir.join("again");
        std::fs::create_dir(&again).unwrap();
        let drawn = read_back.draw(&again, "speed").unwrap();
        let svg = |p: &Path| std::fs::read_to_string(p).unwrap();
        assert_eq!(svg(&files[2]), svg(&drawn[1]));
        assert!(svg(&files[2]).contains("not met"));
        // A results file or an empty run is not a speed to draw.
        let empty = Speed {
            rows: Vec::new(),
            ..speed
        };
        assert!(empty.draw(&dir, "empty").is_err());
        std::fs::write(dir.join("other.json"), "{\"figure\": \"tts\"}").unwrap();
        let e = read(&dir.join("other.json")).unwrap_err().to_string();
        assert!(
            e.contains("not a readable speed.json: missing field `machine`"),
            "{e}"
        );
    }

    #[test]
    fn the_balancers_cost_is_a_row_per_size_and_a_column_per_strategy() {
        let dir = braid_testkit::scratch_dir("speed-policy");
        let cost = |subdomains, threads, strategy: &str, us_per_call| PolicyCost {
            subdomains,
            threads,
            strategy: strategy.into(),
            us_per_call,
        };
        let speed = Speed {
            policy: vec![
                cost(16, 2, "joint", 0.444),
                cost(16, 2, "steal", 0.2),
                cost(4096, 36, "joint", 10.306),
                cost(4096, 36, "steal", 31.626),
            ],
            ..Speed::now("test")
        };
        // Measured alone, the balancer's cost is the whole figure.
        let files = speed.write(&dir, "speed").unwrap();
        let csv = std::fs::read_to_string(dir.join("policy.csv")).unwrap();
        assert_eq!(
            csv,
            "subdomains,threads,joint,steal\n16,2,0.44,0.20\n4096,36,10.31,31.63\n"
        );
        assert!(!dir.join("speed.png").exists(), "{files:?}");
        let again = dir.join("again");
        std::fs::create_dir(&again).unwrap();
        read(&files[0]).unwrap().draw(&again, "speed").unwrap();
        assert_eq!(
            std::fs::read_to_string(again.join("policy.csv")).unwrap(),
            csv
        );
    }
}
