//! The front door and the manual stay true to the repository: every link
//! and image in README.md and docs/ resolves (anchors included), every
//! repository path they name in code spans exists, SUMMARY.md lists every
//! page, and the README's quick start is the two commands CI runs.

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
