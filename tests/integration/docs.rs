//! The front door and the manual stay true to the repository: every link
//! and image in README.md and docs/ resolves (anchors included), every
//! repository path they name in code spans exists, SUMMARY.md lists every
//! page, and the README's quick start is the two commands CI runs.

use crate::common;

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

/// Repository paths named in code spans: `lib/src/plan/checks.rs`,
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

/// A table a number is read from: a CSV file, or a Markdown file's first
/// table; each row a map from column to cell.
fn table_of(path: &Path) -> Vec<std::collections::BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut rows: Vec<Vec<String>> = Vec::new();
    if path.extension().is_some_and(|e| e == "csv") {
        let mut r = csv::Reader::from_reader(text.as_bytes());
        let head: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
        rows.push(head);
        for rec in r.records() {
            rows.push(rec.unwrap().iter().map(String::from).collect());
        }
    } else {
        for line in text.lines().skip_while(|l| !l.starts_with('|')) {
            if !line.starts_with('|') {
                break;
            }
            if line.starts_with("|---") {
                continue;
            }
            rows.push(
                line.trim_matches('|')
                    .split('|')
                    .map(|c| c.trim().to_string())
                    .collect(),
            );
        }
    }
    let head = rows.remove(0);
    rows.into_iter()
        .map(|r| head.iter().cloned().zip(r).collect())
        .collect()
}

/// The first number in a cell (`0.4055 (0.39-0.41)`, `+22.3%`).
fn number_in(cell: &str) -> Option<f64> {
    let start = cell.find(|c: char| c.is_ascii_digit() || c == '-' || c == '+')?;
    let rest = &cell[start..];
    let end = rest[1..]
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e'))
        .map_or(rest.len(), |i| i + 1);
    rest[..end].trim_start_matches('+').parse().ok()
}

/// One quoted number's check, as a page writes it in a comment beside the
/// number: `<!-- FILE [COL=VALUE]... -> COL NUMBER; COL*100 NUMBER -->`.
/// The row of FILE whose columns hold every VALUE must be one; each COL
/// (times its factor) must round to NUMBER as written (to its last digit),
/// and NUMBER as written must stand in the paragraph the comment is in.
struct Quote {
    file: String,
    filters: Vec<(String, String)>,
    claims: Vec<(String, f64, String)>,
}

fn quotes(comment: &str) -> Option<Quote> {
    let body = comment.trim();
    let (head, claims) = body.split_once("->")?;
    let head = head.trim();
    let file = head.split_whitespace().next()?.to_string();
    if !file.starts_with("plots/") {
        return None;
    }
    let mut filters = Vec::new();
    let mut rest = &head[file.len()..];
    while let Some(open) = rest.find('[') {
        let close = open + rest[open..].find(']')?;
        let (k, v) = rest[open + 1..close].split_once('=')?;
        filters.push((k.trim().to_string(), v.trim().to_string()));
        rest = &rest[close + 1..];
    }
    let claims = claims
        .split(';')
        .map(|c| {
            let (col, number) = c.trim().rsplit_once(' ')?;
            let (col, factor) = match col.split_once('*') {
                Some((c, f)) => (c.to_string(), f.parse().ok()?),
                None => (col.to_string(), 1.0),
            };
            Some((col, factor, number.to_string()))
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Quote {
        file,
        filters,
        claims,
    })
}

/// Every number the README and the manual quote from committed records
/// is what those records give today: each is written with a comment naming
/// the figure's table (which `tests/integration/figures.rs` holds to the records, and
/// `braid reproduce` to today's braid), the row and the column.
#[test]
fn every_quoted_number_is_its_tables_value() {
    let mut checked = 0;
    let mut bad = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let name = page.strip_prefix(root()).unwrap().display().to_string();
        for paragraph in text.split("\n\n") {
            let mut rest = paragraph;
            while let Some(at) = rest.find("<!--") {
                let Some(end) = rest[at..].find("-->") else {
                    break;
                };
                let comment = &rest[at + 4..at + end];
                rest = &rest[at + end + 3..];
                let Some(q) = quotes(comment) else {
                    if comment.contains("->") && comment.trim_start().starts_with("plots/") {
                        bad.push(format!("{name}: cannot read `{comment}`"));
                    }
                    continue;
                };
                let table = table_of(&root().join(&q.file));
                let rows: Vec<_> = table
                    .iter()
                    .filter(|r| q.filters.iter().all(|(k, v)| r.get(k) == Some(v)))
                    .collect();
                if rows.len() != 1 {
                    bad.push(format!(
                        "{name}: `{comment}`: {} rows of {} match",
                        rows.len(),
                        q.file
                    ));
                    continue;
                }
                for (col, factor, written) in &q.claims {
                    checked += 1;
                    let Some(cell) = rows[0].get(col) else {
                        bad.push(format!("{name}: {}: no column {col}", q.file));
                        continue;
                    };
                    let said: f64 = written
                        .replace(',', "")
                        .trim_start_matches('+')
                        .trim_end_matches('%')
                        .trim_end_matches('x')
                        .parse()
                        .unwrap_or(f64::NAN);
                    let digits = written
                        .replace(',', "")
                        .trim_end_matches(['%', 'x'])
                        .split_once('.')
                        .map_or(0, |(_, d)| d.len());
                    let value = number_in(cell).map(|v| v * factor);
                    let close = value.is_some_and(|v| {
                        (v - said).abs() <= 0.5 * 10f64.powi(-(digits as i32)) + 1e-9
                    });
                    if !close {
                        bad.push(format!(
                            "{name}: says {col} = {written}, {} has {cell} ({}) in the row {:?}",
                            q.file,
                            value.map_or("no number".into(), |v| format!("{v}")),
                            q.filters
                        ));
                    }
                    let prose = paragraph.split("<!--").next().unwrap_or("");
                    let shown: String = paragraph
                        .split("<!--")
                        .enumerate()
                        .map(|(i, part)| match i {
                            0 => part,
                            _ => part.split_once("-->").map_or("", |(_, after)| after),
                        })
                        .collect();
                    if !shown.contains(written.as_str()) && !prose.contains(written.as_str()) {
                        bad.push(format!(
                            "{name}: {written} is checked but not in its paragraph"
                        ));
                    }
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "quoted numbers that are not their tables':\n{}",
        bad.join("\n")
    );
    assert!(checked >= 30, "only {checked} quoted numbers checked");
}

/// A CSV file as the Markdown table a page shows it as: its header, a
/// `|---|` line, a row per record, cells as written.
fn csv_as_markdown(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let row = |cells: Vec<&str>| format!("| {} |\n", cells.join(" | "));
    let head: Vec<&str> = r.headers().unwrap().iter().collect();
    let mut out = row(head.clone());
    out += &format!("|{}\n", "---|".repeat(head.len()));
    for rec in r.records() {
        out += &row(rec.unwrap().iter().collect());
    }
    out
}

/// A table a page shows as a figure's table gives is that file's, as
/// committed: `<!-- table FILE -->`, the table, `<!-- end table -->`; a
/// CSV file is shown as a Markdown table of its cells.
#[test]
fn every_embedded_table_is_its_committed_file() {
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let mut rest = text.as_str();
        while let Some(at) = rest.find("<!-- table ") {
            let after = &rest[at + "<!-- table ".len()..];
            let (file, body) = after.split_once("-->").unwrap();
            let (shown, tail) = body
                .split_once("<!-- end table -->")
                .unwrap_or_else(|| panic!("{}: no end of the table of {file}", page.display()));
            let file = file.trim();
            let kept = match file.ends_with(".csv") {
                true => csv_as_markdown(&root().join(file)),
                false => std::fs::read_to_string(root().join(file)).unwrap(),
            };
            let lines = |t: &str| -> Vec<String> {
                t.lines()
                    .filter(|l| l.starts_with('|'))
                    .map(String::from)
                    .collect()
            };
            assert_eq!(
                lines(shown),
                lines(&kept),
                "{}: the table of {file} is not the committed file's",
                page.display()
            );
            // A line beside the table (a verdict's summary) is one of the
            // file's own.
            for line in shown.lines().map(str::trim) {
                if !line.is_empty() && !line.starts_with('|') && !line.starts_with("<!--") {
                    assert!(
                        kept.lines().any(|k| k.trim() == line),
                        "{}: `{line}` beside the table of {file} is not in it",
                        page.display()
                    );
                }
            }
            checked += 1;
            rest = tail;
        }
    }
    assert!(checked >= 3, "only {checked} embedded tables");
}

/// A committed figure no page shows is a figure nobody reads and nobody
/// checks the words about: every PNG under plots/ is cited by the README
/// or a page of the manual.
#[test]
fn every_committed_figure_is_cited_by_a_page() {
    let cited: BTreeSet<PathBuf> = pages()
        .iter()
        .flat_map(|page| {
            let text = std::fs::read_to_string(page).unwrap();
            links(&text)
                .into_iter()
                .map(|(_, t)| page.parent().unwrap().join(t.split('#').next().unwrap()))
                .filter_map(|p| p.canonicalize().ok())
                .collect::<Vec<_>>()
        })
        .collect();
    let mut uncited: Vec<String> = common::plots_ending_with(".png")
        .into_iter()
        .filter(|p| !cited.contains(&p.canonicalize().unwrap()))
        .map(|p| p.strip_prefix(root()).unwrap().display().to_string())
        .collect();
    uncited.sort();
    assert!(uncited.is_empty(), "figures no page cites: {uncited:?}");
}

/// The commands of every `sh` block of the README and the manual, with
/// where they stand: `cargo run --release --` and `target/release/braid`
/// read as `braid`, comments dropped.
fn doc_commands() -> Vec<(String, usize, String)> {
    let mut out = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let name = page.strip_prefix(root()).unwrap().display().to_string();
        let mut fence: Option<String> = None;
        for (i, line) in text.lines().enumerate() {
            let l = line.trim();
            if let Some(lang) = l.strip_prefix("```") {
                fence = match fence {
                    Some(_) => None,
                    None => Some(lang.to_string()),
                };
                continue;
            }
            if fence.as_deref() != Some("sh") {
                continue;
            }
            // A comment starts at a `#` outside quotes.
            let mut quoted = false;
            let mut cut = l.len();
            for (k, c) in l.char_indices() {
                match c {
                    '"' => quoted = !quoted,
                    '#' if !quoted => {
                        cut = k;
                        break;
                    }
                    _ => {}
                }
            }
            let cmd = l[..cut].trim();
            let cmd = cmd
                .strip_prefix("cargo run --release -- ")
                .map(|c| format!("braid {c}"))
                .or_else(|| {
                    cmd.strip_prefix("target/release/braid ")
                        .map(|c| format!("braid {c}"))
                })
                .unwrap_or_else(|| cmd.to_string());
            if !cmd.is_empty() {
                out.push((name.clone(), i + 1, cmd));
            }
        }
    }
    out
}

/// The words of a command line, quotes honoured (`--variant "async(4)"`).
fn words(cmd: &str) -> Vec<String> {
    let (mut out, mut word, mut quoted, mut any) = (Vec::new(), String::new(), false, false);
    for c in cmd.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                any = true;
            }
            c if c.is_whitespace() && !quoted => {
                if any || !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
                any = false;
            }
            c => word.push(c),
        }
    }
    if any || !word.is_empty() {
        out.push(word);
    }
    out
}

/// Every command the README and the manual show runs as written, from a
/// copy of the repository's inputs: one run, one simulation, a table, the
/// configuration and the machine whole (each must exit 0); a suite checked
/// sample by sample (`braid experiment --check`, as its run would first);
/// a figure drawn from committed records into a scratch folder. What
/// needs an earlier command's output, takes minutes (`validate`, `learn`, `reproduce`,
/// the benchmark) or another build (`mpirun`, feature `mpi`) is listed,
/// not run.
#[test]
fn every_command_the_docs_show_runs_as_written() {
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("doc-commands");
    let _ = std::fs::remove_dir_all(&base);
    // Each page's commands run in order in a folder of their own, as a
    // reader of that page types them.
    let folder = |page: &str| -> PathBuf {
        let dir = base.join(page.replace('/', "-"));
        if !dir.exists() {
            std::fs::create_dir_all(&dir).unwrap();
            for name in ["experiments", "noise", "plots", "examples"] {
                std::os::unix::fs::symlink(root().join(name), dir.join(name)).unwrap();
            }
            std::fs::copy(root().join("config.txt"), dir.join("config.txt")).unwrap();
        }
        dir
    };
    // Pages side by side, each page's commands in order.
    let mut by_page: Vec<(String, Vec<(usize, String)>)> = Vec::new();
    for (page, line, cmd) in doc_commands() {
        match by_page.iter_mut().find(|(p, _)| *p == page) {
            Some((_, cmds)) => cmds.push((line, cmd)),
            None => by_page.push((page, vec![(line, cmd)])),
        }
    }
    let one_page = |page: &str, cmds: &[(usize, String)]| -> (usize, Vec<String>) {
        let (mut ran, mut bad) = (0, Vec::new());
        let dir = folder(page);
        for (line, cmd) in cmds {
            let line = *line;
            let mut w = words(cmd);
            let placeholder = w.iter().any(|x| {
                x.contains("...")
                    || x.chars().filter(|c| c.is_ascii_uppercase()).count() >= 3
                        && !x.contains('=')
                        && !x.starts_with("--")
            });
            if w.first().map(String::as_str) != Some("braid") || placeholder {
                continue;
            }
            let sub = w.get(1).cloned().unwrap_or_default();
            match sub.as_str() {
                "experiment" => {
                    // The check writes nothing: what it would write is left out.
                    let mut kept = Vec::new();
                    let mut skip = false;
                    for x in w {
                        if skip {
                            skip = false;
                        } else if x == "--out" || x == "--jobs" {
                            skip = true;
                        } else {
                            kept.push(x);
                        }
                    }
                    w = kept;
                    w.push("--check".into());
                }
                "plot" | "table" => {
                    let inputs_here = w[2..]
                        .iter()
                        .take_while(|x| !x.starts_with("--"))
                        .all(|x| dir.join(x).exists());
                    if !inputs_here {
                        eprintln!(
                            "{page}:{line}: not run (reads an earlier command's results): {cmd}"
                        );
                        continue;
                    }
                    if let Some(k) = w.iter().position(|x| x == "--out" || x == "--csv") {
                        w[k + 1] = format!("out-{ran}");
                    }
                }
                "validate" | "learn" | "reproduce" => {
                    eprintln!("{page}:{line}: not run (takes minutes): {cmd}");
                    continue;
                }
                _ => {}
            }
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_braid"))
                .args(&w[1..])
                .current_dir(&dir)
                .output()
                .unwrap();
            ran += 1;
            if !out.status.success() {
                bad.push(format!(
                    "{page}:{line}: `{cmd}` exits {:?}: {}",
                    out.status.code(),
                    String::from_utf8_lossy(&out.stderr)
                        .lines()
                        .last()
                        .unwrap_or("")
                ));
            }
        }
        (ran, bad)
    };
    let (ran, bad) = std::thread::scope(|scope| {
        let jobs: Vec<_> = by_page
            .iter()
            .map(|(page, cmds)| scope.spawn(|| one_page(page, cmds)))
            .collect();
        jobs.into_iter().map(|j| j.join().unwrap()).fold(
            (0, Vec::new()),
            |(n, mut all), (m, bad)| {
                all.extend(bad);
                (n + m, all)
            },
        )
    });
    assert!(
        bad.is_empty(),
        "commands the docs show that fail:\n{}",
        bad.join("\n")
    );
    assert!(ran >= 30, "only {ran} commands run");
}

/// docs/experiments.md, "Table 2 explained": each row's time-to-solution
/// increase per variant (noisy over quiet, at the same mechanisms) and
/// the best balanced variant's noisy time over async(4)'s, recomputed from
/// the committed records of `table2-mechanisms-sim`.
#[test]
fn the_table2_mechanisms_table_is_its_records() {
    let records = common::record_lines(&root().join("plots/data/table2-mechanisms-sim.jsonl.br"));
    const VARIANTS: [&str; 8] = [
        "sync",
        "ssync(1)",
        "ssync(30)",
        "async(1)",
        "async(4)",
        "async(4)+split(0.001)",
        "async(4)+joint(0.001)",
        "async(4)+hybrid(0.001,500)",
    ];
    let sweep =
        |r: &serde_json::Value, k: &str| r["sample"]["sweep"][k].as_str().unwrap_or("").to_string();
    let tts = |v: &str, place: Option<&str>, mech: &(String, String, String)| -> f64 {
        records
            .iter()
            .find(|r| {
                r["sample"]["variant"] == v
                    && r["sample"]["placement"].as_str() == place
                    && (
                        sweep(r, "sim_noise_switch_ns"),
                        sweep(r, "sim_monitor_s"),
                        sweep(r, "sim_jitter"),
                    ) == *mech
            })
            .and_then(|r| r["report"]["time_to_solution_s"].as_f64())
            .unwrap_or_else(|| panic!("no {v} at {place:?} {mech:?}"))
    };
    let mut mechs: Vec<(String, String, String)> = Vec::new();
    for r in &records {
        let m = (
            sweep(r, "sim_noise_switch_ns"),
            sweep(r, "sim_monitor_s"),
            sweep(r, "sim_jitter"),
        );
        if !mechs.contains(&m) {
            mechs.push(m);
        }
    }
    let name = |m: &(String, String, String)| -> String {
        let mut on = Vec::new();
        if m.0 != "0" {
            on.push("switch cost");
        }
        if m.1 != "0" {
            on.push("1 ms monitor");
        }
        if m.2 != "none" {
            on.push("jitter");
        }
        match on.is_empty() {
            true => "none (the default)".into(),
            false => on.join(", "),
        }
    };
    let mut expected = Vec::new();
    for (place, shown) in [
        ("next to the source", "next to the source"),
        ("the centre (thread 14)", "the centre (thread 14)"),
    ] {
        for m in &mechs {
            let mut cells = vec![shown.to_string(), name(m)];
            for v in VARIANTS {
                let up = 100.0 * (tts(v, Some(place), m) / tts(v, None, m) - 1.0);
                cells.push(format!("{up:+.1}%"));
            }
            let (best, v) = VARIANTS[5..]
                .iter()
                .map(|v| (tts(v, Some(place), m), *v))
                .min_by(|a, b| a.0.total_cmp(&b.0))
                .unwrap();
            let short = v.split('+').nth(1).unwrap().split('(').next().unwrap();
            cells.push(format!(
                "{:.3} ({short})",
                best / tts("async(4)", Some(place), m)
            ));
            expected.push(format!("| {} |", cells.join(" | ")));
        }
    }
    let page = std::fs::read_to_string(root().join("docs/experiments.md")).unwrap();
    let shown: Vec<&str> = page
        .lines()
        .filter(|l| {
            l.starts_with("| next to the source |") || l.starts_with("| the centre (thread 14) |")
        })
        .collect();
    assert_eq!(
        shown, expected,
        "docs/experiments.md's mechanisms table is not its records'"
    );
}
