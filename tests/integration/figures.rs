//! The committed figures, drawn again from their committed records: every
//! SVG and table comes out byte for byte as committed (so no figure in the
//! docs is older than the code that draws it), every variant is drawn in
//! one colour in every figure, and every committed record and measurement
//! was written by a build of a clean commit (`braid reproduce` checks that
//! today's braid still computes them).

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use common::{braid, scratch};

/// Each published set that `braid plot` draws (`plots/published.toml`):
/// its inputs and the folder its figures are committed in. A learned
/// chooser's regrets are drawn by `braid learn --evaluate`, which probes
/// every instance in the simulator first: `braid reproduce` redraws and
/// compares those.
fn sets() -> Vec<(Vec<PathBuf>, String)> {
    common::published()
        .into_iter()
        .filter(|p| !p.learned)
        .filter_map(|p| Some((p.inputs, p.figures?)))
        .collect()
}

/// The committed regret figures (`braid reproduce` checks them).
fn not_from_records() -> Vec<String> {
    common::published()
        .into_iter()
        .filter_map(|p| Some((p.figures?, p.regrets)))
        .flat_map(|(dir, suites)| {
            suites
                .into_iter()
                .map(move |s| format!("{dir}/regret-{s}.svg"))
        })
        .collect()
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Each set drawn once for this test binary: `(committed dir, where drawn)`.
fn drawn() -> &'static [(String, PathBuf)] {
    static DRAWN: OnceLock<Vec<(String, PathBuf)>> = OnceLock::new();
    DRAWN.get_or_init(|| {
        let dir = scratch("committed-figures");
        sets()
            .into_iter()
            .enumerate()
            .map(|(k, (inputs, committed))| {
                let out = dir.join(format!("set-{k}"));
                let mut args = vec!["plot".to_string()];
                args.extend(inputs.iter().map(|i| i.display().to_string()));
                args.extend(["--out".into(), out.display().to_string()]);
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let run = braid(&dir, &args);
                assert_eq!(run.status, Some(0), "{inputs:?}: {}", run.stderr);
                (committed, out)
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
             command its page gives (tests/integration/figures.rs lists the records)"
        );
    }
    // And no committed SVG is left out of the comparison.
    let committed_svgs = common::plots_ending_with(".svg")
        .into_iter()
        .map(|p| p.strip_prefix(root()).unwrap().display().to_string());
    for svg in committed_svgs {
        assert!(
            files.contains_key(&svg) || not_from_records().contains(&svg),
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

/// A committed record that an uncommitted tree's build wrote cannot be
/// rebuilt by anyone: every record, and every measurement a figure is drawn
/// from, names a build of a clean commit (a full hash, clean).
#[test]
fn every_committed_record_comes_from_a_build_of_a_clean_commit() {
    let clean = |b: &serde_json::Value| -> bool {
        let commit = b["commit"].as_str().unwrap_or("");
        b["clean"].as_bool() == Some(true)
            && commit.len() == 40
            && commit.chars().all(|c| c.is_ascii_hexdigit())
    };
    let mut checked = 0;
    for set in common::published() {
        for input in &set.inputs {
            let name = input.display().to_string();
            if name.ends_with(".jsonl.br") {
                for (i, r) in common::record_lines(input).iter().enumerate() {
                    assert!(
                        clean(&r["provenance"]["build"]),
                        "{name}: record {} was written by {}",
                        i + 1,
                        r["provenance"]["build"]
                    );
                    checked += 1;
                }
            } else {
                let v: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(input).unwrap()).unwrap();
                let build = v.get("build").or_else(|| v["provenance"].get("build"));
                assert!(build.is_some_and(clean), "{name} was written by {build:?}");
            }
        }
    }
    let model = root().join("plots/workloads/learned.json");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&model).unwrap()).unwrap();
    assert!(
        clean(&v["build"]),
        "{} was written by {}",
        model.display(),
        v["build"]
    );
    assert!(checked > 1000, "{checked} records read");
}
