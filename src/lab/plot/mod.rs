//! `braid plot`: the paper's figures (landscape, time-to-solution boxes,
//! the braid, the payoff map, the effort over time) and the workloads'
//! (strategies per workload, each workload's cost and owner maps, ULBA's
//! gains) as PNG and SVG, and Table 2 and
//! the workloads' ranking as Markdown and CSV, from the results files
//! `braid experiment` writes; and the simulator against the machine
//! ([`agreement`]), from what `braid validate` found. Drawn with plotters and an
//! embedded DejaVu Sans, so no system font libraries are needed.

pub(crate) mod agreement;
mod braid;
mod check;
mod effort;
mod gains;
mod glyphs;
pub(crate) mod input;
mod landscape;
mod look;
mod maps;
mod payoff;
pub(crate) mod regret;
pub mod roofline;
mod runs;
mod scale;
pub mod speed;
mod stats;
mod table;
mod tts;
mod ulba_model;
mod workloads;

use std::path::{Path, PathBuf};

use plotters::chart::MeshStyle;
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use thiserror::Error;

use crate::lab::experiment::ExperimentError;
use crate::lab::experiment::results::{self, Record, Status};
use crate::lab::experiment::suite::Figure;
use ::braid::EngineKind;
use ::braid::Report;
use braid_noise::files::write_atomic;
use look::{colour, variant_colours};

#[derive(Debug, Error)]
pub(crate) enum PlotError {
    #[error(transparent)]
    Results(#[from] ExperimentError),
    #[error("nothing to plot: no finished samples in {0}")]
    Empty(String),
    #[error("{path}: line {line}: report field `{field}`: {problem}")]
    BadField {
        path: PathBuf,
        line: usize,
        field: String,
        problem: String,
    },
    #[error(
        "nothing to draw: the braid records in {0} have no trace of 2 samples or more \
         (run them with trace_interval > 0)"
    )]
    NoTrace(String),
    /// A `speed.json` or `roofline.json` that is too large or malformed.
    #[error("{}: not a readable {kind}: {problem}", path.display())]
    NotReadable {
        path: PathBuf,
        kind: &'static str,
        problem: String,
    },
    #[error("cannot write to the output directory {path}: {message}")]
    OutputDir { path: PathBuf, message: String },
    #[error("cannot write {path}: {message}")]
    Write { path: PathBuf, message: String },
    /// A figure's axis the records make undrawable (bad input: the records
    /// hold values that pass their own checks but not a figure's scale).
    #[error("{figure}: {message}")]
    OutOfScale { figure: PathBuf, message: String },
    /// Records that are fine but hold nothing their figures draw (an
    /// effort suite without a balanced variant, a scale suite of one node).
    #[error(
        "nothing to draw: the records in {inputs} (figure {figures}) hold no series their \
         figure draws (an effort or scale figure needs balanced variants; a scale figure \
         two node counts or more)"
    )]
    NothingDrawn { inputs: String, figures: String },
    /// One suite's records from two builds of braid: a figure would divide
    /// one program's numbers by another's.
    #[error(
        "the records of suite `{suite}` come from two builds ({builds}); a figure draws one \
         suite run. Rerun the suite with one build, or pass --apart to draw each build's \
         records on their own"
    )]
    TwoBuilds { suite: String, builds: String },
    /// One suite's records from two definitions of it.
    #[error(
        "the records of suite `{suite}` come from two definitions of it (digests {digests}); \
         a figure draws one suite run. Rerun the suite as it is now"
    )]
    TwoDefinitions { suite: String, digests: String },
    /// Two suites whose records one figure would draw as one.
    #[error(
        "the {figure} figure ({engine}) would draw suites {suites} as one: plot each suite's \
         records on their own (another --out)"
    )]
    TwoSuites {
        figure: String,
        engine: String,
        suites: String,
    },
}

/// What [`chart`] refuses: an axis whose range is not finite or out of
/// scale.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct AxisOutOfScale(String);

impl PlotError {
    pub(crate) fn is_bad_input(&self) -> bool {
        match self {
            PlotError::Results(e) => e.is_bad_input(),
            PlotError::Empty(_)
            | PlotError::BadField { .. }
            | PlotError::NoTrace(_)
            | PlotError::NothingDrawn { .. }
            | PlotError::TwoBuilds { .. }
            | PlotError::TwoDefinitions { .. }
            | PlotError::TwoSuites { .. }
            | PlotError::OutputDir { .. }
            | PlotError::NotReadable { .. }
            | PlotError::OutOfScale { .. } => true,
            PlotError::Write { .. } => false,
        }
    }
}

type DrawResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// Something drawn the same way on any plotters backend.
trait Draw {
    fn size(&self) -> (u32, u32);
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static;
}

const FONT: &str = "sans-serif";
/// The smallest text any figure draws, in plotters' sizes (an SVG's pixels
/// are 0.8 of them): 14 px, legible when a figure is shown at a page's
/// width; and the axes' descriptions.
const TEXT: u32 = 18;
const DESC: u32 = 20;
static DEJAVU: &[u8] = include_bytes!("../../../assets/DejaVuSans.ttf");

fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        for style in [FontStyle::Normal, FontStyle::Bold] {
            plotters::style::register_font(FONT, style, DEJAVU)
                .unwrap_or_else(|_| panic!("the embedded font parses"));
        }
    });
}

/// RGB `pixels` of `w x h` as PNG bytes: fast compression, adaptive
/// filters from Sub (what the `image` crate's PNG encoder wrote by default,
/// so every committed figure is the same file to the byte).
fn png_bytes(pixels: &[u8], (w, h): (u32, u32)) -> Result<Vec<u8>, png::EncodingError> {
    let mut encoded = Vec::new();
    let mut encoder = png::Encoder::new(&mut encoded, w, h);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Fast);
    encoder.set_filter(png::FilterType::Sub);
    encoder.set_adaptive_filter(png::AdaptiveFilterType::Adaptive);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(pixels)?;
    writer.finish()?;
    Ok(encoded)
}

/// Writes `stem.png` and `stem.svg` into `dir`. Both are drawn in memory
/// and then written whole ([`braid_noise::files::write_atomic`]), so a failure
/// (a full disk) leaves no partial image and reads as a sentence.
fn render(fig: &impl Draw, dir: &Path, stem: &str) -> Result<Vec<PathBuf>, PlotError> {
    let png = dir.join(format!("{stem}.png"));
    let svg = dir.join(format!("{stem}.svg"));
    let fail = |path: &Path, e: &dyn std::fmt::Display| PlotError::Write {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    // A refused axis is the records' fault, not the disk's.
    let drawing = |path: &Path, e: Box<dyn std::error::Error + Send + Sync>| match e
        .downcast::<AxisOutOfScale>()
    {
        Ok(axis) => PlotError::OutOfScale {
            figure: path.to_path_buf(),
            message: axis.0,
        },
        Err(e) => fail(path, &e),
    };
    let (w, h) = fig.size();
    let mut pixels = vec![0u8; w as usize * h as usize * 3];
    {
        let bitmap = BitMapBackend::with_buffer(&mut pixels, (w, h));
        let root = glyphs::Baseline::new(bitmap, DEJAVU).into_drawing_area();
        fig.draw(&root).map_err(|e| drawing(&png, e))?;
        root.present().map_err(|e| fail(&png, &e))?;
    }
    let encoded = png_bytes(&pixels, (w, h)).map_err(|e| fail(&png, &e))?;
    write_atomic(&png, |out| out.write_all(&encoded)).map_err(|e| fail(&png, &e))?;
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, (w, h)).into_drawing_area();
        fig.draw(&root).map_err(|e| drawing(&svg, e))?;
        root.present().map_err(|e| fail(&svg, &e))?;
    }
    write_atomic(&svg, |out| out.write_all(text.as_bytes())).map_err(|e| fail(&svg, &e))?;
    Ok(vec![png, svg])
}

/// Writes `rows` (a header first) as `dir/stem.csv`, whole or not at all:
/// the numbers a figure draws, for a reader's own analysis and for the
/// docs, whose quoted numbers `tests/integration/docs.rs` checks against these files.
pub(crate) fn write_csv(
    dir: &Path,
    stem: &str,
    rows: &[Vec<String>],
) -> Result<PathBuf, PlotError> {
    let path = dir.join(format!("{stem}.csv"));
    let fail = |e: &dyn std::fmt::Display| PlotError::Write {
        path: path.clone(),
        message: e.to_string(),
    };
    let mut w = csv::Writer::from_writer(Vec::new());
    for row in rows {
        w.write_record(row).map_err(|e| fail(&e))?;
    }
    let bytes = w.into_inner().map_err(|e| fail(&e))?;
    write_atomic(&path, |out| out.write_all(&bytes)).map_err(|e| fail(&e))?;
    Ok(path)
}

/// A number in a figure's CSV: empty when there is none, else to `digits`
/// decimals.
fn cell(x: Option<f64>, digits: usize) -> String {
    x.map_or(String::new(), |x| format!("{x:.digits$}"))
}

/// Writes `value` as pretty JSON to `dir/stem.json`, whole or not at all:
/// what a figure the benchmark draws was drawn from, for `braid plot`.
fn write_json(value: &impl serde::Serialize, dir: &Path, stem: &str) -> Result<PathBuf, String> {
    let json = dir.join(format!("{stem}.json"));
    let text = serde_json::to_string_pretty(value).map_err(|e| e.to_string())?;
    write_atomic(&json, |out| {
        out.write_all(text.as_bytes())?;
        out.write_all(b"\n")
    })
    .map_err(|e| format!("cannot write {}: {e}", json.display()))?;
    Ok(json)
}

/// `path` read as a `T` by its own reader (a `speed.json`, a
/// `roofline.json`): a file over `limit` bytes is refused naming the bound,
/// and a malformed one names the field and the problem.
pub(crate) fn read_own<T: serde::de::DeserializeOwned>(
    path: &Path,
    kind: &'static str,
    limit: u64,
) -> Result<T, PlotError> {
    let not = |problem: String| PlotError::NotReadable {
        path: path.to_path_buf(),
        kind,
        problem,
    };
    let input = braid_noise::files::open_buffered(path, limit).map_err(|e| match e.kind() {
        std::io::ErrorKind::InvalidInput => {
            not(format!("{e}, the most a {kind} braid writes holds"))
        }
        _ => not(e.to_string()),
    })?;
    let mut json = serde_json::Deserializer::from_reader(input);
    let value: T = serde_path_to_error::deserialize(&mut json).map_err(|e| {
        let field = e.path().to_string();
        if e.inner().is_eof() {
            let inside = match field.as_str() {
                "." | "?" => String::new(),
                f => format!(" inside field `{f}`"),
            };
            return not(format!("cut short{inside}: {}", e.inner()));
        }
        match field.as_str() {
            // `?`: serde could not tell where (a file cut short).
            "." | "?" => not(e.inner().to_string()),
            _ => not(format!("field `{field}`: {}", e.inner())),
        }
    })?;
    json.end()
        .map_err(|e| not(format!("more after its one JSON object: {e}")))?;
    Ok(value)
}

/// Reads every results file and writes every figure the records allow;
/// returns the files written. Records of one suite from two builds are
/// refused ([`runs`]), unless `apart`: then each build's records are drawn
/// on their own, into a folder of `dir` named for the build.
pub(crate) fn plot_all(
    inputs: &[PathBuf],
    dir: &Path,
    apart: bool,
) -> Result<Vec<PathBuf>, PlotError> {
    let mut ok: Vec<Record> = Vec::new();
    for path in inputs {
        // A record at a time: what is kept of it is what its figure draws.
        results::each_record(path, |line, r| {
            if r.status == Status::Ok {
                check::record(path, line, &r)?;
                ok.push(drawn_only(r));
            }
            Ok::<(), PlotError>(())
        })?;
    }
    let names = || {
        inputs
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if ok.is_empty() {
        return Err(PlotError::Empty(names()));
    }
    let builds = runs::builds(&ok);
    if !apart || builds.len() == 1 {
        runs::check_not_pooled(&ok)?;
        return draw_set(&ok, dir, &names());
    }
    // Each build's set is checked before any is drawn.
    let sets: Vec<(PathBuf, Vec<Record>)> = builds
        .iter()
        .map(|b| {
            let of: Vec<Record> = (ok.iter())
                .filter(|r| r.provenance.build == *b)
                .cloned()
                .collect();
            (dir.join(runs::folder(b)), of)
        })
        .collect();
    for (_, set) in &sets {
        runs::check_not_pooled(set)?;
    }
    if !dir.is_dir() {
        std::fs::create_dir(dir).map_err(|e| PlotError::OutputDir {
            path: dir.to_path_buf(),
            message: e.to_string(),
        })?;
    }
    let mut written = Vec::new();
    for (b, (out, set)) in builds.iter().zip(&sets) {
        eprintln!("braid: plot: the records of {b} into {}", out.display());
        written.extend(draw_set(set, out, &names())?);
    }
    Ok(written)
}

/// Draws one set of records (one build's, or all) into `dir`.
fn draw_set(ok: &[Record], dir: &Path, names: &str) -> Result<Vec<PathBuf>, PlotError> {
    let names = || names.to_string();
    for note in merged_sweeps(ok) {
        eprintln!("braid: plot: {note}");
    }
    let braids = ok.iter().filter(|r| r.figure == Figure::Braid).count();
    if braids == ok.len() && !ok.iter().any(braid::has_trace) {
        return Err(PlotError::NoTrace(names()));
    }
    // The directory (and only it) is made, and proved writable, before
    // anything is drawn.
    let out_dir = |e: std::io::Error| PlotError::OutputDir {
        path: dir.to_path_buf(),
        message: e.to_string(),
    };
    if !dir.is_dir() {
        std::fs::create_dir(dir).map_err(out_dir)?;
    }
    braid_noise::files::AtomicFile::create(&dir.join(".braid-probe")).map_err(out_dir)?;
    register_font();
    // One set of outputs: should any fail (a full disk), the files this
    // call made are removed, so that no figure stands without its table.
    let before = entries(dir);
    let mut written = Vec::new();
    if let Err(e) = draw_all(ok, dir, &mut written) {
        for name in entries(dir).difference(&before) {
            let _ = std::fs::remove_file(dir.join(name));
        }
        return Err(e);
    }
    if written.is_empty() {
        let mut figures: Vec<String> = ok
            .iter()
            .map(|r| {
                // The name a suite file gives it (serde's lowercase).
                format!("\"{}\"", format!("{:?}", r.figure).to_lowercase())
            })
            .collect();
        figures.sort();
        figures.dedup();
        return Err(PlotError::NothingDrawn {
            inputs: names(),
            figures: figures.join(", "),
        });
    }
    Ok(written)
}

/// A record with only what its figure draws: the report's lists per
/// thread and per subdomain go (the braid keeps its trace and cores, the
/// effort figure its effort series, the payoff and workloads figures their
/// counts, the workloads' maps their loads and owners up to
/// [`maps::MAP_SUBDOMAINS`] subdomains), so that a plot's memory grows with
/// the records by a few kilobytes each, not with their threads
/// (docs/experiments.md: `scale-sim`'s records plot in 28 MB, 262 before).
fn drawn_only(mut r: Record) -> Record {
    r.provenance.noise_calibration = None;
    r.provenance.config = None;
    r.provenance.topology = None;
    if let Some(rep) = r.report.as_mut() {
        // The payoff map's and the workloads figure's perfect balancer is
        // the run with the least progress, its mean count per subdomain.
        if !matches!(r.figure, Figure::Payoff | Figure::Workloads) {
            rep.subdomain_updates = Vec::new();
        }
        // The workloads' maps draw each subdomain's cost and owner, and the
        // owners' sockets, up to a size a map can show.
        let mapped = r.figure == Figure::Workloads && rep.owners.len() <= maps::MAP_SUBDOMAINS;
        if !mapped {
            rep.subdomain_busy_s = None;
            rep.owners = Vec::new();
            rep.thread_sockets = Vec::new();
        }
        rep.thread_updates = Vec::new();
        rep.topology.sockets = Vec::new();
        if r.figure != Figure::Braid {
            rep.cores = Vec::new();
            rep.trace = None;
        }
        if let Some(lb) = rep.lb.as_mut() {
            lb.tried = Vec::new();
            if r.figure != Figure::Effort {
                lb.ran = Vec::new();
                lb.effort = Vec::new();
            }
        }
    }
    r
}

/// What a figure draws of swept keys it does not tell apart: the keys a
/// figure reads itself (`lb_alpha` for gains, `sim_topology` for scale)
/// aside, records of one figure that differ in swept values are drawn
/// together as repetitions of each variant, which a reader should be told.
fn merged_sweeps(records: &[Record]) -> Vec<String> {
    use std::collections::{BTreeMap, BTreeSet};
    let mut settings: BTreeMap<String, BTreeSet<Vec<(&str, &str)>>> = BTreeMap::new();
    for r in records {
        let own: &[&str] = match r.figure {
            Figure::Gains => &["lb_alpha"],
            Figure::Scale => &["sim_topology"],
            _ => &[],
        };
        let swept: Vec<(&str, &str)> = (r.sample.sweep.iter())
            .filter(|(k, _)| !own.contains(&k.as_str()))
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let figure = format!("{:?}", r.figure).to_lowercase();
        settings.entry(figure).or_default().insert(swept);
    }
    settings
        .into_iter()
        .filter(|(_, set)| set.len() > 1)
        .map(|(figure, set)| {
            let keys: BTreeSet<&str> = set.iter().flatten().map(|(k, _)| *k).collect();
            format!(
                "the {figure} records hold {} swept settings of {}, which the figure does \
                 not tell apart: it draws them together, as repetitions of each variant \
                 (`braid table` lists every sample with its key)",
                set.len(),
                keys.into_iter().collect::<Vec<_>>().join(", ")
            )
        })
        .collect()
}

/// The names in `dir` now.
fn entries(dir: &Path) -> std::collections::BTreeSet<std::ffi::OsString> {
    std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default()
}

/// Draws every figure `ok` allows into `dir`, adding each file to
/// `written` as it is made.
fn draw_all(ok: &[Record], dir: &Path, written: &mut Vec<PathBuf>) -> Result<(), PlotError> {
    let of = |f: Figure| -> Vec<&Record> { ok.iter().filter(|r| r.figure == f).collect() };
    let land = of(Figure::Landscape);
    if !land.is_empty() {
        let figure = landscape::Landscape::new(&land);
        written.extend(render(&figure, dir, "landscape")?);
        written.push(write_csv(dir, "landscape", &figure.rows())?);
    }
    let tts = of(Figure::Tts);
    if !tts.is_empty() {
        let boxes = tts::TimeToSolution::new(&tts);
        if !boxes.panels.is_empty() {
            written.extend(render(&boxes, dir, "time-to-solution")?);
        }
        written.extend(table::write(&tts, dir)?);
    }
    let pay = of(Figure::Payoff);
    if !pay.is_empty() {
        let map = payoff::PayoffMap::new(&pay);
        if !map.is_empty() {
            written.extend(render(&map, dir, "payoff")?);
            written.push(write_csv(dir, "payoff", &map.rows())?);
        }
    }
    for (engine, records) in by_engine(&of(Figure::Workloads)) {
        draw_workloads(engine, &records, dir, written)?;
    }
    let gains = gains::Gains::new(&of(Figure::Gains));
    if !gains.is_empty() {
        written.extend(render(&gains, dir, "gains")?);
        written.extend(gains.write_csv(dir, "gains")?);
        // ULBA's own model beside instances of its application model.
        if let Some(model) = gains.model() {
            written.extend(render(&model, dir, "ulba-model")?);
            written.push(write_csv(dir, "ulba-model", &model.rows())?);
        }
    }
    let scale = scale::Scale::new(&of(Figure::Scale));
    if !scale.is_empty() {
        written.extend(render(&scale, dir, "scale")?);
        written.extend(scale.write_table(dir, "scale")?);
    }
    let efforts = effort::EffortOverTime::new(&of(Figure::Effort));
    if !efforts.is_empty() {
        written.extend(render(&efforts, dir, "effort")?);
        written.push(write_csv(dir, "effort", &efforts.rows())?);
    }
    for engine in [EngineKind::Run, EngineKind::Sim] {
        if let Some(r) = of(Figure::Braid)
            .into_iter()
            .find(|r| r.engine == engine && braid::has_trace(r))
        {
            let stem = format!("braid-{}", engine.command());
            let figure = braid::Braid::new(r);
            written.extend(render(&figure, dir, &stem)?);
            written.push(write_csv(dir, &stem, &figure.rows())?);
        }
    }
    Ok(())
}

/// One engine's workloads figure and table, and its cost and owner
/// maps (saying which workloads are too large to map).
fn draw_workloads(
    engine: EngineKind,
    records: &[&Record],
    dir: &Path,
    written: &mut Vec<PathBuf>,
) -> Result<(), PlotError> {
    let fig = workloads::Workloads::new(records);
    if !fig.is_empty() {
        let stem = format!("workloads-{}", engine.command());
        written.extend(render(&fig, dir, &stem)?);
        written.extend(fig.write_table(dir, &stem)?);
    }
    let maps = maps::Maps::new(records);
    if !maps.is_empty() {
        written.extend(render(&maps, dir, &format!("maps-{}", engine.command()))?);
    }
    let left: Vec<String> = maps::too_large(records)
        .into_iter()
        .map(|(w, n)| format!("{w} ({n})"))
        .collect();
    if !left.is_empty() {
        eprintln!(
            "braid: plot: the cost and owner maps ({}) leave out workload(s) of more \
             than {} subdomains, which a map cannot show legibly: {}",
            engine.command(),
            maps::MAP_SUBDOMAINS,
            left.join(", ")
        );
    }
    Ok(())
}

/// Records split by engine, run first; engines without records are left out.
fn by_engine<'a>(records: &[&'a Record]) -> Vec<(EngineKind, Vec<&'a Record>)> {
    [EngineKind::Run, EngineKind::Sim]
        .into_iter()
        .map(|e| {
            (
                e,
                records
                    .iter()
                    .copied()
                    .filter(|r| r.engine == e)
                    .collect::<Vec<_>>(),
            )
        })
        .filter(|(_, of)| !of.is_empty())
        .collect()
}

/// `panels` one above the other, each drawn by `draw` in its share of
/// `root`: a figure stays narrow enough to read at a page's width.
fn stacked<DB: DrawingBackend, P>(
    root: &DrawingArea<DB, Shift>,
    panels: &[P],
    draw: impl Fn(&P, &DrawingArea<DB, Shift>) -> DrawResult,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let areas = root.split_evenly((panels.len().max(1), 1));
    for (panel, area) in panels.iter().zip(&areas) {
        draw(panel, area)?;
    }
    Ok(())
}

/// A chart on two `f64` axes, as every figure draws one.
type Chart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// How big a panel's frame is: its caption's font size, its margin, and
/// the room for the x and y axes' labels.
#[derive(Debug, Clone, Copy)]
struct Frame {
    caption: u32,
    margin: u32,
    x_labels: u32,
    y_labels: u32,
}

/// A panel's chart in `area`: `title` as its caption, framed as `frame`
/// says, over `x` and `y`.
fn chart<'a, DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    frame: Frame,
    x: std::ops::Range<f64>,
    y: std::ops::Range<f64>,
) -> Result<Chart<'a, DB>, Box<dyn std::error::Error + Send + Sync>>
where
    DB::ErrorType: 'static,
{
    // The records' fields are checked (`check`); this catches what a
    // figure derives from them, which would send the axis code into a
    // loop that never ends.
    for (name, r) in [("x", &x), ("y", &y)] {
        if !axis_drawable(r) {
            return Err(AxisOutOfScale(format!(
                "panel `{title}`: its {name} axis would run from {:e} to {:e}: a value the figure \
                 derives is not finite or is out of scale",
                r.start, r.end
            ))
            .into());
        }
    }
    let mut builder = ChartBuilder::on(area);
    // No caption without a title: a panel under a headline of its own.
    if !title.is_empty() {
        builder.caption(title, (FONT, frame.caption));
    }
    Ok(builder
        .margin(frame.margin)
        .x_label_area_size(frame.x_labels)
        .y_label_area_size(frame.y_labels)
        .build_cartesian_2d(x, y)?)
}

/// Whether an axis can be drawn: finite ends, in order, and a width
/// the tick code can step through (not 1e300 wide, not 1e-300).
/// The decimals an axis's labels need so that no two of its ticks (about
/// ten over `span`, as plotters places them) read the same.
///
/// Whole ticks need none; ticks 0.002 apart need three.
pub(super) fn tick_decimals(span: f64) -> usize {
    if !(span.is_finite() && span > 0.0) {
        return 0;
    }
    // plotters steps by 1, 2 or 5 times a power of ten, at least span/10.
    let step = span / 10.0;
    (-step.log10()).ceil().clamp(0.0, 9.0) as usize
}

fn axis_drawable(r: &std::ops::Range<f64>) -> bool {
    const SCALE: f64 = 1e12;
    let width = r.end - r.start;
    r.start.is_finite()
        && r.end.is_finite()
        && r.start.abs().max(r.end.abs()) <= SCALE
        && width > 0.0
        && width >= r.start.abs().max(r.end.abs()) / SCALE
}

/// A chart's mesh with the figures' fonts: the axis descriptions at
/// [`DESC`], the tick labels at [`TEXT`]. The caller adds the rest.
fn mesh<'a, 'b, DB: DrawingBackend>(
    chart: &'b mut Chart<'a, DB>,
) -> MeshStyle<'a, 'b, RangedCoordf64, RangedCoordf64, DB> {
    let mut m = chart.configure_mesh();
    m.axis_desc_style((FONT, DESC)).label_style((FONT, TEXT));
    m
}

/// The unit of time on an engine's axis.
fn seconds(virtual_time: bool) -> &'static str {
    if virtual_time {
        "virtual seconds"
    } else {
        "seconds"
    }
}

/// The legend box every figure uses.
fn legend<'a, DB: DrawingBackend + 'a, X: Ranged, Y: Ranged>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    position: SeriesLabelPosition,
    size: u32,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    chart
        .configure_series_labels()
        .position(position)
        .label_font((FONT, size))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .draw()?;
    Ok(())
}

/// How a series is drawn, so that its legend entry shows the same.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Stroke {
    None,
    Solid,
    /// Dash and gap, pixels.
    Dashed(u32, u32),
}

/// A series' marker.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Mark {
    None,
    Square,
    Circle,
    Triangle,
    /// A square on its corner.
    Diamond,
    Cross,
}

/// One legend entry.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Key {
    pub label: String,
    pub colour: RGBColor,
    pub stroke: Stroke,
    pub mark: Mark,
    /// An open (outlined) marker.
    pub open: bool,
}

impl Key {
    pub(super) fn new(
        label: impl Into<String>,
        colour: RGBColor,
        stroke: Stroke,
        mark: Mark,
    ) -> Key {
        Key {
            label: label.into(),
            colour,
            stroke,
            mark,
            open: false,
        }
    }
}

/// `keys` as one legend filling `area` (a strip of its own beside or above
/// the panels, so that it covers no data), in as many columns as fit, each
/// swatch drawn as its series is (dashes, markers, open or filled).
fn draw_keys<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    keys: &[Key],
    size: u32,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let (w, h) = area.dim_in_pixel();
    let row = (size as i32 * 3) / 2 + 4;
    let rows = ((h as i32 - 8) / row).max(1) as usize;
    let cols = keys.len().div_ceil(rows).max(1);
    let col_w = (w as i32 - 8) / cols as i32;
    let font = TextStyle::from((FONT, size).into_font());
    for (i, k) in keys.iter().enumerate() {
        let (c, r) = ((i / rows) as i32, (i % rows) as i32);
        let (x, y) = (8 + c * col_w, 4 + r * row + row / 2);
        draw_key_sample(area, k, (x, y))?;
        area.draw(&Text::new(
            k.label.clone(),
            (x + 36, y),
            font.pos(plotters::style::text_anchor::Pos::new(
                plotters::style::text_anchor::HPos::Left,
                plotters::style::text_anchor::VPos::Center,
            )),
        ))?;
    }
    Ok(())
}

/// A key's line sample and marker at `(x, y)`, left of its label.
fn draw_key_sample<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    k: &Key,
    (x, y): (i32, i32),
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let colour = k.colour;
    match k.stroke {
        Stroke::None => {}
        Stroke::Solid => {
            area.draw(&PathElement::new(
                vec![(x, y), (x + 28, y)],
                colour.stroke_width(3),
            ))?;
        }
        Stroke::Dashed(dash, gap) => {
            let mut at = x;
            while at < x + 28 {
                let end = (at + dash as i32).min(x + 28);
                area.draw(&PathElement::new(
                    vec![(at, y), (end, y)],
                    colour.stroke_width(2),
                ))?;
                at = end + gap as i32;
            }
        }
    }
    let style = match k.open {
        true => colour.stroke_width(2),
        false => colour.filled(),
    };
    let m = (x + 14, y);
    match k.mark {
        Mark::None | Mark::Cross => {}
        Mark::Square => area.draw(&Rectangle::new(
            [(m.0 - 5, m.1 - 5), (m.0 + 5, m.1 + 5)],
            style,
        ))?,
        Mark::Circle => area.draw(&Circle::new(m, 5, style))?,
        Mark::Diamond => area.draw(&Polygon::new(
            vec![
                (m.0, m.1 - 7),
                (m.0 + 6, m.1),
                (m.0, m.1 + 7),
                (m.0 - 6, m.1),
            ],
            style,
        ))?,
        Mark::Triangle => area.draw(&PathElement::new(
            vec![
                (m.0, m.1 - 7),
                (m.0 + 6, m.1 + 4),
                (m.0 - 6, m.1 + 4),
                (m.0, m.1 - 7),
            ],
            colour.stroke_width(2),
        ))?,
    }
    if k.mark == Mark::Cross {
        area.draw(&Cross::new(m, 4, colour.stroke_width(2)))?;
    }
    if k.mark == Mark::Triangle && !k.open {
        area.draw(&TriangleMarker::new(m, 7, colour.filled()))?;
    }
    Ok(())
}

/// Groups of series whose points all lie within `tol` of each other's
/// (same x, |dy| <= tol): each group's indices, the first drawn lowest.
/// Such series hide one another; a figure draws them apart and says so.
pub(super) fn coinciding(series: &[Vec<(f64, f64)>], tol: f64) -> Vec<Vec<usize>> {
    coinciding_at(series, tol, 1.0)
}

/// [`coinciding`] for series that lie within `tol` of each other at a
/// `share` of their points or more (at the same x's).
pub(super) fn coinciding_at(series: &[Vec<(f64, f64)>], tol: f64, share: f64) -> Vec<Vec<usize>> {
    let same = |a: &[(f64, f64)], b: &[(f64, f64)]| {
        let close = a
            .iter()
            .zip(b)
            .filter(|(p, q)| (p.1 - q.1).abs() <= tol)
            .count();
        a.len() == b.len()
            && !a.is_empty()
            && a.iter().zip(b).all(|(p, q)| p.0 == q.0)
            && close as f64 >= share * a.len() as f64
    };
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for i in 0..series.len() {
        match groups.iter_mut().find(|g| same(&series[g[0]], &series[i])) {
            Some(g) => g.push(i),
            None => groups.push(vec![i]),
        }
    }
    groups.retain(|g| g.len() > 1);
    groups
}

/// The machine real records ran on (the CPU's first four words; several
/// joined by " / "), or `None` for simulations.
fn machine_of(records: &[&Record]) -> Option<String> {
    let mut cpus: Vec<String> = Vec::new();
    for r in records.iter().filter(|r| r.engine == EngineKind::Run) {
        let cpu: Vec<&str> = r.provenance.cpu_model.split_whitespace().take(4).collect();
        let cpu = cpu.join(" ");
        if !cpus.contains(&cpu) {
            cpus.push(cpu);
        }
    }
    (!cpus.is_empty()).then(|| cpus.join(" / "))
}

/// A panel's title: whether it is this machine or the simulator, and
/// which (a real run's CPU; the simulated machine's shape).
fn panel_title(r: &Record) -> String {
    let rep = r.report.as_ref().expect("plotted records have reports");
    let threads = rep.threads;
    match r.engine {
        EngineKind::Run => format!(
            "machine: {}, {threads} threads",
            r.provenance
                .cpu_model
                .split_whitespace()
                .take(4)
                .collect::<Vec<_>>()
                .join(" ")
        ),
        EngineKind::Sim => format!(
            "simulator: {} sockets, {threads} threads (virtual time)",
            rep.sockets
        ),
    }
}

/// What "noisy" meant in these records, from what the noisy samples'
/// reports say was applied: a replayed trace, a duty cycle, or the rhythm.
fn noise_label(records: &[&Record]) -> String {
    let applied = records
        .iter()
        .filter(|r| r.sample.noise)
        .filter_map(|r| r.report.as_ref()?.noise.as_ref())
        .find(|n| !n.parasites.is_empty());
    let Some(noise) = applied else {
        return "noise".into();
    };
    let cores = match noise.parasites.len() {
        1 => "one core".to_string(),
        n => format!("{n} cores"),
    };
    let p = &noise.parasites[0];
    match (&p.trace, p.requested_duty) {
        (Some(t), _) => format!(
            "trace {} ({:.0}% lost) on {cores}",
            t.file.file_name().map_or_else(
                || t.file.display().to_string(),
                |f| f.to_string_lossy().into()
            ),
            100.0 * t.lost_share
        ),
        (None, Some(d)) => format!("{:.0}% noise on {cores}", 100.0 * d),
        (None, None) => format!("noise ({} us sleep rhythm) on {cores}", p.sleep_us),
    }
}

/// A number read from a record's report, if it has one.
fn num(r: &Record, field: impl Fn(&Report) -> f64) -> Option<f64> {
    r.report.as_ref().map(field)
}

#[cfg(test)]
mod palette_tests {
    use super::tick_decimals;
    /// Ticks about a tenth of the span apart, labelled with enough
    /// decimals that neighbours differ (the workloads figure read 1.00,
    /// 1.00, 1.01 over a span of 0.03).
    #[test]
    fn tick_labels_have_the_decimals_their_steps_need() {
        assert_eq!(tick_decimals(0.03), 3);
        assert_eq!(tick_decimals(0.3), 2);
        assert_eq!(tick_decimals(30.0), 0);
        assert_eq!(tick_decimals(0.0), 0);
        // Every step plotters could take over a span is told apart.
        for span in [0.011, 0.03, 0.17, 0.9, 4.0] {
            let d = tick_decimals(span);
            let step = span / 10.0;
            let (a, b) = (1.0, 1.0 + step);
            assert_ne!(format!("{a:.d$}"), format!("{b:.d$}"), "{span}");
        }
    }

    #[test]
    fn series_that_lie_on_one_another_are_found() {
        let a = vec![(1.0, 2.0), (2.0, 3.0)];
        let b = vec![(1.0, 2.01), (2.0, 2.99)];
        let c = vec![(1.0, 5.0), (2.0, 3.0)];
        assert_eq!(
            super::coinciding(&[a.clone(), c.clone(), b.clone()], 0.05),
            vec![vec![0, 2]]
        );
        assert!(super::coinciding(&[a, c, b], 0.001).is_empty());
    }

    #[test]
    fn sixteen_series_get_sixteen_colours() {
        let mut seen = super::look::PALETTE.to_vec();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 16);
    }
}

#[cfg(test)]
mod memory_tests {
    use super::*;
    use crate::lab::experiment::suite::Sample;
    use ::braid::Config;
    use ::braid::Plan;

    /// A record of a simulated run of `threads` threads, balanced, traced.
    fn record(figure: Figure, threads: usize) -> Record {
        let mut cfg = Config::default();
        cfg.apply_variant("async(4)+joint(0.001)").unwrap();
        cfg.apply_overrides(&[
            format!("sim_topology=host:1 pack:1 core:{threads}"),
            "numerics=false".into(),
            "tolerance=0".into(),
            "max_iterations=20".into(),
            "domain_size=8".into(),
            "trace_interval=0.0001".into(),
        ])
        .unwrap();
        let (report, _) = ::braid::run(&Plan::simulated(&cfg).unwrap()).unwrap();
        Record::for_tests(figure, EngineKind::Sim, Sample::default(), Some(report))
    }

    fn bytes(r: &Record) -> usize {
        serde_json::to_string(r).unwrap().len()
    }

    /// What a plot keeps of a record does not grow with the run's threads
    /// (it did by their lists), and keeps every number the figures read.
    #[test]
    fn a_plot_keeps_of_each_record_what_its_figure_draws_whatever_the_threads() {
        for figure in [Figure::Landscape, Figure::Scale, Figure::Effort] {
            let (small, large) = (record(figure, 4), record(figure, 256));
            assert!(bytes(&large) > bytes(&small) + 256 * 8, "the lists grow");
            let (small, large) = (drawn_only(small), drawn_only(large));
            let grown = bytes(&large).abs_diff(bytes(&small));
            assert!(
                grown < 200,
                "{figure:?}: {grown} more bytes for 64x the threads"
            );
            let rep = large.report.as_ref().unwrap();
            assert_eq!(rep.threads, 256);
            assert!(rep.iteration_rate > 0.0 && rep.lb.as_ref().unwrap().calls > 0);
        }
        // The workloads' maps keep each subdomain's load and owner up to the
        // most a map draws, and no more.
        let small = drawn_only(record(Figure::Workloads, 4));
        let rep = small.report.as_ref().unwrap();
        assert_eq!((rep.owners.len(), rep.thread_sockets.len()), (16, 4));
        let large = drawn_only(record(Figure::Workloads, 300));
        let rep = large.report.as_ref().unwrap();
        assert!(1200 > maps::MAP_SUBDOMAINS && rep.owners.is_empty());
        assert!(rep.subdomain_busy_s.is_none() && rep.thread_sockets.is_empty());
        // The braid keeps its trace and where its threads ran.
        let braid = drawn_only(record(Figure::Braid, 4));
        let rep = braid.report.as_ref().unwrap();
        assert!(rep.trace.as_ref().is_some_and(|t| t.len() > 1));
        assert_eq!(rep.cores.len(), 4);
    }
}
