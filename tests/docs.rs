//! The front door and the manual stay true to the repository: every link
//! and image in README.md and docs/ resolves (anchors included), every
//! repository path they name in code spans exists, SUMMARY.md lists every
//! page, and the README's quick start is the two commands CI runs.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every page of docs/.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// The text outside fenced code blocks, line by line (line numbers kept).
fn prose(text: &str) -> Vec<(usize, String)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push((i + 1, line.to_string()));
        }
    }
    out
}

/// GitHub's anchor for a heading: lower case, punctuation other than `-`
/// and `_` dropped, spaces as `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every anchor a Markdown file's headings make (repeats get `-1`, `-2`).
fn anchors(file: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(file).unwrap();
    let mut seen = BTreeSet::new();
    for (_, line) in prose(&text) {
        let Some(heading) = line.strip_prefix('#') else {
            continue;
        };
        let heading = heading.trim_start_matches('#');
        if !heading.starts_with(' ') {
            continue;
        }
        let base = slug(heading);
        let mut anchor = base.clone();
        let mut n = 0;
        while seen.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        seen.insert(anchor);
    }
    seen
}

/// `(line, target)` of every `[text](target)` and `![alt](target)`.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in prose(text) {
        let mut rest = line.as_str();
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(end) = after.find(')') else { break };
            out.push((n, after[..end].to_string()));
            rest = &after[end..];
        }
    }
    out
}

/// Why `target`, linked from `page`, does not resolve (or `None`).
fn broken(page: &Path, target: &str) -> Option<String> {
    if target.starts_with("http://") || target.starts_with("https://") {
        return None;
    }
    let (path, anchor) = match target.split_once('#') {
        Some((p, a)) => (p, Some(a)),
        None => (target, None),
    };
    let file = if path.is_empty() {
        page.to_path_buf()
    } else {
        page.parent().unwrap().join(path)
    };
    if !file.exists() {
        return Some(format!("no file {}", file.display()));
    }
    let anchor = anchor?;
    if file.extension().is_none_or(|e| e != "md") {
        return Some(format!(
            "an anchor into {}, which is no Markdown page",
            file.display()
        ));
    }
    (!anchors(&file).contains(anchor))
        .then(|| format!("no heading #{anchor} in {}", file.display()))
}

#[test]
fn every_link_and_image_in_the_readme_and_the_manual_resolves() {
    let mut bad = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for (line, target) in links(&text) {
            if let Some(why) = broken(&page, &target) {
                bad.push(format!("{}:{line}: ({target}): {why}", page.display()));
            }
        }
    }
    assert!(bad.is_empty(), "broken links:\n{}", bad.join("\n"));
}

/// Repository paths named in code spans: `src/plan/checks.rs`,
/// `experiments/`, `noise/traces/...`.
#[test]
fn every_repository_path_the_manual_names_exists() {
    const TOP: &[&str] = &[
        "src/",
        "docs/",
        "tests/",
        "benches/",
        "experiments/",
        "plots/",
        "noise/",
        "examples/",
        "assets/",
        ".ci/",
    ];
    let mut bad = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for (n, line) in prose(&text) {
            for (k, span) in line.split('`').enumerate() {
                let path = span.trim();
                let is_path = k % 2 == 1
                    && TOP.iter().any(|t| path.starts_with(t))
                    && !path.contains(' ')
                    && !path.contains('*')
                    && !path.contains("...");
                if is_path && !root().join(path).exists() {
                    bad.push(format!("{}:{n}: `{path}`", page.display()));
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "paths that do not exist:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_summary_lists_every_page_of_the_manual() {
    let summary = std::fs::read_to_string(root().join("docs/SUMMARY.md")).unwrap();
    let listed: BTreeSet<String> = links(&summary).into_iter().map(|(_, t)| t).collect();
    for page in pages().iter().skip(1) {
        let name = page.file_name().unwrap().to_string_lossy().to_string();
        if name != "SUMMARY.md" {
            assert!(
                listed.contains(&name),
                "docs/SUMMARY.md does not list {name}"
            );
        }
    }
}

/// The quick start is what a new user types first; CI runs exactly these
/// commands (`.ci/run` reads them from this block), so they must stay two
/// plain commands.
#[test]
fn the_quick_start_is_the_run_and_the_test_command() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let commands = quick_start(&readme);
    assert_eq!(
        commands,
        ["cargo run --release", "cargo test --release"],
        "{commands:?}"
    );
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    assert!(
        ci.contains("Quick start"),
        ".ci/run must run the README's quick-start commands"
    );
}

/// The commands of the first code block under `## Quick start`, comments
/// dropped.
fn quick_start(readme: &str) -> Vec<String> {
    let section = readme
        .split("\n## Quick start")
        .nth(1)
        .expect("a Quick start section");
    let block = section
        .split("```")
        .nth(1)
        .expect("a code block in the quick start");
    block
        .lines()
        .skip(1) // the fence's language
        .map(|l| l.split('#').next().unwrap_or("").trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn the_checker_finds_what_is_broken() {
    let page = root().join("README.md");
    assert!(broken(&page, "docs/running.md").is_none());
    assert!(broken(&page, "docs/running.md#the-report").is_none());
    assert!(broken(&page, "docs/nowhere.md").is_some());
    assert!(broken(&page, "docs/running.md#no-such-heading").is_some());
    assert_eq!(
        slug(" Replaying a real run's speeds: `braid sim --replay-speeds`"),
        "replaying-a-real-runs-speeds-braid-sim---replay-speeds"
    );
    assert_eq!(
        links("see [a](x.md) and ![b](y.png#z)\n```\n[c](no.md)\n```\n"),
        [(1, "x.md".to_string()), (1, "y.png#z".to_string())]
    );
}

/// The fenced blocks of `lang` in a page, in order.
fn blocks(page: &str, lang: &str) -> Vec<String> {
    let text = std::fs::read_to_string(root().join(page)).unwrap();
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match (&mut current, line.trim_start().strip_prefix("```")) {
            (None, Some(l)) if l == lang => current = Some(String::new()),
            (Some(_), Some(_)) => out.push(current.take().unwrap()),
            (Some(b), None) => {
                b.push_str(line);
                b.push('\n');
            }
            _ => {}
        }
    }
    out
}

/// Runs `braid ARGS` (words split at spaces) in `dir`.
fn braid_in(dir: &Path, line: &str) {
    let words: Vec<&str> = line.split_whitespace().skip(1).collect();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_braid"))
        .args(&words)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{line}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_first_experiment_runs_as_written_and_gives_its_table_and_figure() {
    // The page shows the suite file as shipped.
    let shown: toml::Value =
        toml::from_str(&blocks("docs/first-experiment.md", "toml")[0]).unwrap();
    let shipped: toml::Value =
        toml::from_str(&std::fs::read_to_string(root().join("experiments/first.toml")).unwrap())
            .unwrap();
    assert_eq!(shown, shipped);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("first-experiment");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("experiments")).unwrap();
    std::fs::copy(
        root().join("experiments/first.toml"),
        dir.join("experiments/first.toml"),
    )
    .unwrap();
    // `cargo build --release` is CI's own first step; the rest run here,
    // `target/release/braid` being this build's braid.
    let commands: Vec<String> = blocks("docs/first-experiment.md", "sh")
        .iter()
        .flat_map(|b| b.lines().map(String::from).collect::<Vec<_>>())
        .filter(|l| !l.starts_with("cargo build --release"))
        .map(|l| l.replacen("target/release/braid ", "braid ", 1))
        .collect();
    assert!(
        commands.iter().all(|c| c.starts_with("braid ")),
        "{commands:?}"
    );
    assert_eq!(commands.len(), 4, "{commands:?}");
    for c in &commands {
        braid_in(&dir, c);
    }
    assert!(
        dir.join("results/first-plots/time-to-solution.png")
            .is_file()
    );
    let table = std::fs::read_to_string(dir.join("results/first.csv")).unwrap();
    assert_eq!(
        table.lines().count(),
        1 + 20,
        "a header and a row per sample"
    );
    // The pandas lines, where pandas is installed (CI installs it).
    let pandas_lines = blocks("docs/first-experiment.md", "python").concat();
    // The first Python that has pandas (Debian's python3-pandas is for
    // /usr/bin/python3, which may not be the python3 on PATH).
    let python = ["python3", "/usr/bin/python3"].into_iter().find(|p| {
        std::process::Command::new(p)
            .args(["-c", "import pandas"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if let Some(interpreter) = python {
        let out = std::process::Command::new(interpreter)
            .args(["-c", &pandas_lines])
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let shown = String::from_utf8_lossy(&out.stdout);
        assert!(
            shown.contains("async(4)+split(0.001)") && shown.contains("time_to_solution_s"),
            "{shown}"
        );
    } else if std::env::var_os("BRAID_REQUIRE_PANDAS").is_some() {
        panic!("BRAID_REQUIRE_PANDAS is set but python3 cannot import pandas");
    }
}

#[test]
fn the_suite_reference_documents_every_key_the_shipped_suites_use_and_its_example_runs() {
    let reference = std::fs::read_to_string(root().join("docs/suites.md")).unwrap();
    for entry in std::fs::read_dir(root().join("experiments")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let suite: toml::Table = toml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for (key, value) in &suite {
            let named = match value.is_table() {
                true => format!("`[{key}]`"),
                false => format!("`{key}`"),
            };
            assert!(
                reference.contains(&named),
                "{}: {named} is not in docs/suites.md",
                path.display()
            );
            if key == "payoff" {
                for inner in value.as_table().unwrap().keys() {
                    assert!(reference.contains(&format!("`{inner}`")), "payoff.{inner}");
                }
            }
        }
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("suite-reference");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("mine.toml"), &blocks("docs/suites.md", "toml")[0]).unwrap();
    braid_in(&dir, "braid experiment mine.toml --out mine.jsonl");
}

#[test]
fn each_suites_stated_time_is_what_its_committed_results_took() {
    // `(about N s` or `(about N min` on the `# braid experiment` line.
    let stated = |text: &str| -> Option<f64> {
        let line = text.lines().find(|l| l.starts_with("# braid experiment"))?;
        let rest = line.split("(about ").nth(1)?;
        let mut words = rest.split_whitespace();
        let n: f64 = words.next()?.parse().ok()?;
        match words.next()? {
            "s" => Some(n),
            "min" => Some(60.0 * n),
            _ => None,
        }
    };
    let mut checked = 0;
    for entry in std::fs::read_dir(root().join("experiments")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let suite: toml::Table = toml::from_str(&text).unwrap();
        let name = suite["name"].as_str().unwrap();
        let data = common::published()
            .into_iter()
            .flat_map(|p| p.inputs)
            .find(|p| {
                p.file_name()
                    .is_some_and(|f| *f == *format!("{name}.jsonl.br"))
            });
        let Some(data) = data else { continue };
        let took: f64 = common::record_lines(&data)
            .iter()
            .map(|r| r["wall_s"].as_f64().unwrap())
            .sum();
        let said = stated(&text)
            .unwrap_or_else(|| panic!("{}: no `(about N s|min` in its header", path.display()));
        // Rounded to a second or a minute, within a factor of two.
        let (lo, hi) = (took.min(said), took.max(said));
        assert!(
            hi <= 2.0 * lo.max(1.0),
            "{}: says {said} s, its results took {took:.0} s",
            path.display()
        );
        checked += 1;
    }
    assert!(checked >= 15, "{checked}");
}

#[test]
fn the_carried_calibrations_values_the_simulator_page_quotes_are_the_committed_files() {
    // docs/simulator.md, "From two cores to a node": the per-core row lists
    // the keys in its first cell and their values in its last.
    let page = std::fs::read_to_string(root().join("docs/simulator.md")).unwrap();
    let file = std::fs::read_to_string(root().join("plots/carried/calibration.txt")).unwrap();
    let value = |key: &str| -> String {
        file.lines()
            .find_map(|l| l.strip_prefix(key)?.trim_start().strip_prefix('='))
            .map(|v| {
                v.split('#')
                    .next()
                    .unwrap()
                    .trim()
                    .trim_matches('"')
                    .to_string()
            })
            .unwrap_or_else(|| panic!("calibration.txt has no {key}"))
    };
    let row = page
        .lines()
        .find(|l| l.starts_with("| `sim_cell_ns`, ") && l.contains("| per core:"))
        .expect("the per-core row of the carried table");
    let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
    let keys: Vec<&str> = cells[0].split(", ").map(|k| k.trim_matches('`')).collect();
    let quoted: Vec<&str> = cells[cells.len() - 1].split(", ").collect();
    assert_eq!(keys.len(), quoted.len(), "{row}");
    let same = |a: &str, b: &str| -> bool {
        // Numbers as written, or `sd:every:core_sd` part by part, to 1%.
        a.split(':').zip(b.split(':')).all(|(x, y)| {
            let (x, y): (f64, f64) = (x.parse().unwrap(), y.parse().unwrap());
            (x - y).abs() <= 0.01 * x.abs().max(y.abs())
        }) && a.split(':').count() == b.split(':').count()
    };
    let mut checked = 0;
    for (key, said) in keys.iter().zip(&quoted) {
        // sim_cell_ns is left to each suite; the page quotes what was measured.
        if *key == "sim_cell_ns" {
            continue;
        }
        let is = value(key);
        assert!(
            same(said, &is),
            "docs/simulator.md says {key} = {said}, the file {is}"
        );
        checked += 1;
    }
    assert!(checked >= 8, "{checked}");
}

#[test]
fn the_ulba_window_tables_gains_and_calls_are_the_committed_records() {
    // docs/workloads.md, "What holds the first move back": each row's
    // median gain at 1% (with its range) and the calls of greedy and of
    // anticipate at its best lb_alpha over the six runs (the start's call
    // left out), for lb_window = 3 and 1, as `braid plot` and the records
    // give them.
    let page = std::fs::read_to_string(root().join("docs/workloads.md")).unwrap();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ulba-window-table");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // (gain cell, calls cell) of one suite's 1% instances.
    let measure = |suite: &str| -> (String, String) {
        let records = root().join(format!("plots/workloads/data/{suite}.jsonl.br"));
        let out = dir.join(suite);
        braid_in(
            &root(),
            &format!("braid plot {} --out {}", records.display(), out.display()),
        );
        let csv = std::fs::read_to_string(out.join("gains.csv")).unwrap();
        let mut best = Vec::new(); // (instance, alpha, gain %)
        for line in csv.lines().skip(1).filter(|l| l.contains("(0.01,")) {
            let (instance, rest) = line[1..].split_once("\",").unwrap();
            let cells: Vec<&str> = rest.split(',').collect();
            best.push((
                instance.to_string(),
                cells[3].parse::<f64>().unwrap(),
                cells[5].parse::<f64>().unwrap(),
            ));
        }
        assert_eq!(best.len(), 6, "{suite}");
        let mut gains: Vec<f64> = best.iter().map(|b| b.2).collect();
        gains.sort_by(f64::total_cmp);
        let median = (gains[2] + gains[3]) / 2.0;
        let (mut greedy, mut anticipate) = (0, 0);
        for r in common::record_lines(&records) {
            let instance = r["sample"]["workload"].as_str().unwrap();
            let Some(b) = best.iter().find(|b| b.0 == instance) else {
                continue;
            };
            let calls = r["report"]["lb"]["calls"].as_u64().unwrap() - 1;
            let variant = r["sample"]["variant"].as_str().unwrap();
            let alpha = r["report"]["config"]["lb_alpha"].as_f64().unwrap();
            match variant.contains("greedy") {
                true => greedy += calls,
                false if alpha == b.1 => anticipate += calls,
                false => {}
            }
        }
        (
            format!(
                "{median:+.2}% ({:+.2} to {:+.2})",
                gains[0],
                gains[gains.len() - 1]
            ),
            format!("{greedy} / {anticipate}"),
        )
    };
    for (row, tag) in [("| 0.1 ", "-cheap"), ("| 1.44 ", ""), ("| 3 ", "-dear")] {
        let line = page
            .lines()
            .find(|l| l.starts_with(row) && l.contains("-sim`"))
            .unwrap_or_else(|| panic!("no row {row}"));
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let (own, window) = (
            measure(&format!("ulba-own{tag}-sim")),
            measure(&format!("ulba-window{tag}-sim")),
        );
        assert_eq!(
            (cells[1], cells[2]),
            (own.0.as_str(), own.1.as_str()),
            "{line}"
        );
        assert_eq!(
            (cells[3], cells[4]),
            (window.0.as_str(), window.1.as_str()),
            "{line}"
        );
    }
}
