//! The committed figures, drawn again from their committed records: every
//! SVG and table comes out byte for byte as committed (so no figure in the
//! docs is older than the code that draws it), and every variant is drawn
//! in one colour in every figure.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use common::{braid, scratch};

/// Each committed set of records and the directory its figures are
/// committed in (the commands in the docs that draw them).
const SETS: &[(&[&str], &str)] = &[
    (&["plots/validate/data/validation.json"], "plots/validate"),
    (&["plots/speed/data/speed.json"], "plots/speed"),
    (
        &[
            "plots/carried/data/carried-landscape-sim.jsonl",
            "plots/carried/data/carried-tts-sim.jsonl",
            "plots/carried/data/carried-strategies-sim.jsonl",
        ],
        "plots/carried",
    ),
    (
        &["plots/carried/data/carried-workloads-sim.jsonl"],
        "plots/carried",
    ),
    (
        &["plots/carried/data/carried-ulba-sim.jsonl"],
        "plots/carried",
    ),
    (&["plots/data/roofline.json"], "plots"),
    (
        &["plots/data/braid-run.jsonl", "plots/data/braid-sim.jsonl"],
        "plots",
    ),
    (
        &[
            "plots/data/landscape-run.jsonl",
            "plots/data/landscape-sim.jsonl",
        ],
        "plots",
    ),
    (
        &[
            "plots/data/payoff-sim.jsonl",
            "plots/data/payoff-workloads-sim.jsonl",
        ],
        "plots",
    ),
    (
        &["plots/data/tts-run.jsonl", "plots/data/tts-sim.jsonl"],
        "plots",
    ),
    (
        &[
            "plots/trace/data/trace-landscape-run.jsonl",
            "plots/trace/data/trace-landscape-sim.jsonl",
        ],
        "plots/trace",
    ),
    (
        &[
            "plots/strategies/data/strategies-sim.jsonl",
            "plots/strategies/data/strategies-landscape-sim.jsonl",
            "plots/strategies/data/strategies-effort-sim.jsonl",
        ],
        "plots/strategies/sim",
    ),
    (
        &[
            "plots/strategies/data/strategies-run.jsonl",
            "plots/strategies/data/strategies-landscape-run.jsonl",
        ],
        "plots/strategies/run",
    ),
    (
        &["plots/workloads/data/workloads-sim.jsonl"],
        "plots/workloads",
    ),
    (
        &["plots/workloads/data/workloads-run.jsonl"],
        "plots/workloads",
    ),
    (&["plots/workloads/data/ulba-sim.jsonl"], "plots/workloads"),
    (
        &["plots/workloads/data/ulba-costly-sim.jsonl"],
        "plots/workloads/costly",
    ),
    (
        &["plots/workloads/data/ulba-bulk-sim.jsonl"],
        "plots/workloads/bulk",
    ),
    (
        &["plots/workloads/data/ulba-threads-sim.jsonl"],
        "plots/workloads/bulk-threads",
    ),
    (
        &["plots/workloads/data/ulba-work-sim.jsonl"],
        "plots/workloads/bulk-work",
    ),
    (
        &["plots/workloads/data/ulba-recent-sim.jsonl"],
        "plots/workloads/bulk-recent",
    ),
    (
        &["plots/workloads/data/ulba-free-sim.jsonl"],
        "plots/workloads/bulk-free",
    ),
    (
        &["plots/workloads/data/ulba-own-sim.jsonl"],
        "plots/workloads/bulk-own",
    ),
    (
        &["plots/workloads/data/ulba-window-sim.jsonl"],
        "plots/workloads/bulk-window",
    ),
    (&["plots/scale/data/scale-sim.jsonl"], "plots/scale"),
    (
        &["plots/scale/data/scale-large-sim.jsonl"],
        "plots/scale/large",
    ),
];

/// Figures committed without records of this kind: the learned chooser's
/// regrets (`braid learn --evaluate ... --plot`, which probes every
/// instance in the simulator first; `tests/learned.rs` draws one).
const NOT_FROM_RECORDS: &[&str] = &[
    "plots/workloads/regret-learn-test-sim.svg",
    "plots/workloads/regret-learn-noise-sim.svg",
    "plots/carried/regret-carried-learn-test-sim.svg",
    "plots/carried/regret-carried-learn-noise-sim.svg",
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Each set drawn once for this test binary: `(committed dir, where drawn)`.
fn drawn() -> &'static [(String, PathBuf)] {
    static DRAWN: OnceLock<Vec<(String, PathBuf)>> = OnceLock::new();
    DRAWN.get_or_init(|| {
        let dir = scratch("committed-figures");
        SETS.iter()
            .enumerate()
            .map(|(k, (inputs, committed))| {
                let out = dir.join(format!("set-{k}"));
                let mut args = vec!["plot".to_string()];
                args.extend(inputs.iter().map(|i| root().join(i).display().to_string()));
                args.extend(["--out".into(), out.display().to_string()]);
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let run = braid(&dir, &args);
                assert_eq!(run.status, Some(0), "{inputs:?}: {}", run.stderr);
                (committed.to_string(), out)
            })
            .collect()
    })
}

/// The files a drawn set made that are committed, by committed path.
fn drawn_files() -> BTreeMap<String, PathBuf> {
    let mut files = BTreeMap::new();
    for (committed, out) in drawn() {
        for e in std::fs::read_dir(out).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            let is_drawing = [".svg", ".md", ".csv"].iter().any(|x| name.ends_with(x));
            if is_drawing && root().join(committed).join(&name).exists() {
                files.insert(format!("{committed}/{name}"), e.path());
            }
        }
    }
    files
}

#[test]
fn every_committed_figure_and_table_comes_out_of_its_committed_records() {
    let files = drawn_files();
    for (committed, path) in &files {
        let drawn = std::fs::read(path).unwrap();
        let kept = std::fs::read(root().join(committed)).unwrap();
        assert!(
            drawn == kept,
            "{committed} differs from what its records draw now: redraw it with the \
             command its page gives (tests/figures.rs lists the records)"
        );
    }
    // And no committed SVG is left out of the comparison.
    let mut committed_svgs = Vec::new();
    let mut stack = vec![root().join("plots")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "svg") {
                let rel = p.strip_prefix(root()).unwrap().display().to_string();
                committed_svgs.push(rel);
            }
        }
    }
    for svg in committed_svgs {
        assert!(
            files.contains_key(&svg) || NOT_FROM_RECORDS.contains(&svg.as_str()),
            "{svg} is committed but no committed records draw it"
        );
    }
}

/// One element of an SVG as plotters writes it: its tag, attributes and
/// (for text) content.
struct Element {
    tag: String,
    attrs: BTreeMap<String, String>,
    text: String,
}

fn elements(svg: &str) -> Vec<Element> {
    svg.split('<')
        .filter_map(|chunk| {
            let (head, text) = chunk.split_once('>')?;
            let mut words = head.splitn(2, char::is_whitespace);
            let tag = words.next()?.to_string();
            let mut attrs = BTreeMap::new();
            let mut rest = words.next().unwrap_or("");
            while let Some((name, after)) = rest.split_once("=\"") {
                let Some((value, tail)) = after.split_once('"') else {
                    break;
                };
                attrs.insert(name.trim().to_string(), value.to_string());
                rest = tail;
            }
            let text = text.trim().replace("&apos;", "'").replace("&amp;", "&");
            Some(Element { tag, attrs, text })
        })
        .collect()
}

/// A shape's centre and colour (its fill, or its stroke if unfilled).
fn swatch(e: &Element) -> Option<((f64, f64), String)> {
    let a = |k: &str| e.attrs.get(k).and_then(|v| v.parse::<f64>().ok());
    let at = match e.tag.as_str() {
        "circle" => (a("cx")?, a("cy")?),
        "rect" => (a("x")? + a("width")? / 2.0, a("y")? + a("height")? / 2.0),
        "line" => ((a("x1")? + a("x2")?) / 2.0, (a("y1")? + a("y2")?) / 2.0),
        "polygon" | "polyline" => {
            let pts: Vec<(f64, f64)> = (e.attrs.get("points")?.split_whitespace())
                .filter_map(|p| {
                    let (x, y) = p.split_once(',')?;
                    Some((x.parse().ok()?, y.parse().ok()?))
                })
                .collect();
            let n = pts.len().max(1) as f64;
            (
                pts.iter().map(|p| p.0).sum::<f64>() / n,
                pts.iter().map(|p| p.1).sum::<f64>() / n,
            )
        }
        _ => return None,
    };
    let colour = match e.attrs.get("fill").map(String::as_str) {
        Some("none") | None => e.attrs.get("stroke")?.clone(),
        Some(f) => f.to_string(),
    };
    Some((at, colour))
}

/// A legend's variant label: the text itself, or what follows "against ".
fn variant_of(text: &str) -> Option<&str> {
    let t = text.strip_prefix("against ").unwrap_or(text);
    let known = t == "sync" || t.starts_with("ssync(") || t.starts_with("async(");
    known.then_some(t)
}

/// Every text naming a variant in `svg`: the label and the colours of the
/// swatch drawn just left of it (none for an axis's label).
fn legend_colours(svg: &str) -> Vec<(String, BTreeSet<String>)> {
    let all = elements(svg);
    let shapes: Vec<((f64, f64), String)> = all.iter().filter_map(swatch).collect();
    all.iter()
        .filter(|e| e.tag == "text")
        .filter_map(|e| {
            let label = variant_of(&e.text)?;
            let x: f64 = e.attrs.get("x")?.parse().ok()?;
            let mut y: f64 = e.attrs.get("y")?.parse().ok()?;
            // Text hung from its top (plotters' own legends) is centred
            // half its size lower.
            if e.attrs.get("dy").is_some_and(|d| d.ends_with("em")) {
                let size: f64 = e.attrs.get("font-size")?.parse().ok()?;
                y += size / 2.0;
            }
            let colours: BTreeSet<String> = shapes
                .iter()
                .filter(|((sx, sy), _)| *sx < x && x - sx <= 45.0 && (sy - y).abs() <= 6.0)
                .map(|(_, c)| c.clone())
                .collect();
            Some((label.to_string(), colours))
        })
        .collect()
}

#[test]
fn every_figure_draws_a_variant_in_the_same_colour() {
    // label -> colour -> the figures that draw it so.
    let mut seen: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    for (committed, path) in drawn_files() {
        if !committed.ends_with(".svg") {
            continue;
        }
        let svg = std::fs::read_to_string(&path).unwrap();
        for (label, colours) in legend_colours(&svg) {
            if colours.is_empty() {
                continue; // a label on an axis, not in a legend
            }
            assert!(
                colours.len() == 1,
                "{committed}: the legend entry {label} has swatch colours {colours:?}, not one"
            );
            let c = colours.into_iter().next().unwrap();
            let figures = seen.entry(label).or_default().entry(c).or_default();
            figures.push(committed.clone());
        }
    }
    let in_several = seen
        .values()
        .filter(|by| by.values().flatten().collect::<BTreeSet<_>>().len() > 1)
        .count();
    assert!(
        in_several >= 5,
        "the legends were not read: {in_several} variants found in several figures"
    );
    for (label, by_colour) in &seen {
        assert!(
            by_colour.len() == 1,
            "{label} is drawn in {} colours: {by_colour:?}",
            by_colour.len()
        );
    }
}

/// The smallest text and the widest figure a reader can take in at a
/// page's width (issue "figures a researcher trusts at a glance").
const MIN_TEXT_PX: f64 = 14.0;
const MAX_WIDTH_PX: f64 = 1200.0;

#[test]
fn every_figure_is_legible_at_a_pages_width() {
    let mut checked = 0;
    for (committed, path) in drawn_files() {
        if !committed.ends_with(".svg") {
            continue;
        }
        let svg = std::fs::read_to_string(&path).unwrap();
        let elements = elements(&svg);
        let width: f64 = (elements.iter().find(|e| e.tag == "svg"))
            .and_then(|e| e.attrs.get("width")?.parse().ok())
            .unwrap_or_else(|| panic!("{committed}: no width"));
        assert!(width <= MAX_WIDTH_PX, "{committed} is {width} px wide");
        for e in elements.iter().filter(|e| e.tag == "text") {
            let size: f64 = e
                .attrs
                .get("font-size")
                .and_then(|s| s.parse().ok())
                .unwrap();
            assert!(
                size >= MIN_TEXT_PX - 0.01,
                "{committed}: \"{}\" is {size:.1} px",
                e.text
            );
        }
        checked += 1;
    }
    assert!(checked >= 15, "only {checked} figures read");
}
