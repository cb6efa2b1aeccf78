//! Data flows one way (docs/architecture.md): config -> plan -> engine
//! (runtime | sim) -> report -> experiment -> plot, over a vocabulary that
//! every stage may use. The library (`lib/`) ends at `run`; the program
//! (the lab and the command line, `src/`) sits on it. This test reads both
//! crates' sources and fails when a module imports one at its own level or
//! above it, when two sibling files of one folder import each other in a
//! loop, or when docs/architecture.md lists other crates or levels.
//!
//! Only code counts: comments (doc links included) and `#[cfg(test)]`
//! modules may name any module.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A crate of the workspace whose modules sit on levels: its folder of
/// sources, its top-level modules bottom up, and the folders that group
/// modules of different levels.
struct Crate {
    /// Its name in Cargo.toml.
    name: &'static str,
    /// Its `src/`, from the repository's root.
    src: &'static str,
    /// Its modules, bottom up. A module may import any module of an
    /// earlier level, and none of its own level or a later one (so the two
    /// engines, `runtime` and `sim`, never import each other).
    levels: &'static [&'static [&'static str]],
    /// Folders that group modules of different levels: each module in one
    /// sits on its own level, named with the folder (`lab::plot`).
    groups: &'static [&'static str],
}

/// The library (`lib/`): config -> plan -> engine -> report, and `run`.
/// It depends on no crate of the workspace but the kernel and the noise
/// generator, so nothing in it can name the program (Cargo holds that).
const LIBRARY: Crate = Crate {
    name: "braid",
    src: "lib/src",
    levels: &[
        // Leaves: bounds, numbers, signals, processes, the problem, and the
        // stencil (`kernel`: the braid-kernel crate in kernel/, re-exported,
        // which imports nothing of braid). "Did you mean" is a leaf too, and
        // so are reading vt's LB data format, the build and a trace sample.
        &[
            "kernel",
            "limits",
            "rng",
            "interrupt",
            "child",
            "problem",
            "suggest",
            "lbdata::read",
            "choice",
            "build",
            "trace",
        ],
        // What each subdomain costs (the application's own imbalance).
        &["workload"],
        // The machine, the noise, the forecast, and the pure balancing
        // decisions.
        &["topology", "noise", "forecast", "policy"],
        // Paper labels, then what every engine takes and gives.
        &["variant"],
        &["engine"],
        // The scheduling both engines share, and the subdomains they update.
        &["schedule"],
        &["subdomain"],
        // config -> plan
        &["config"],
        &["plan"],
        // The engines, and the parasites beside a real run.
        &["runtime", "sim", "parasites"],
        // What a run across ranks exchanges, the machine around a run, and
        // the engines' parts timed alone.
        &["ranks", "busy", "probe"],
        // -> report: an outcome as one typed value (and as vt's LB data).
        &["report", "lbdata::write"],
        // A plan driven on its engine: the library's `run`, the one place
        // where a real run's parasites start. The library ends here.
        &["drive"],
    ],
    groups: &["lbdata"],
};

/// The program (the repository's root): the lab and the command line, on
/// the library's public API (`braid::...`, always below it).
const PROGRAM: Crate = Crate {
    name: "braid-cli",
    src: "src",
    levels: &[
        // A run's progress as it goes.
        &["watch"],
        // The lab (src/lab/): -> experiment; the simulator's costs measured
        // by real runs; how well a few runs pin a statistic down; ULBA's
        // own model.
        &[
            "lab::experiment",
            "lab::calibrate",
            "lab::bootstrap",
            "lab::ulba",
        ],
        // Figures and tables from results, and a chooser learned from them.
        &["lab::plot", "lab::table", "lab::learn"],
        // The simulator checked against the machine (both engines, a
        // table); a learned chooser's regrets drawn.
        &["lab::validate", "lab::regrets"],
        // The files drawn each as its own figure, read and checked first.
        &["lab::own"],
        // Every published result rerun, compared, regenerated.
        &["lab::reproduce"],
        // The command line: its commands, and one run to its outputs.
        &["cli"],
    ],
    groups: &["lab"],
};

const CRATES: [&Crate; 2] = [&LIBRARY, &PROGRAM];

impl Crate {
    /// The module of a path that sits on a level: its first name, or in a
    /// group its first two (`["lab", "plot", "mod"]` -> `lab::plot`);
    /// `None` for a group's own face (`src/lab/mod.rs`).
    fn unit(&self, path: &[String]) -> Option<String> {
        let first = path.first()?;
        if self.groups.contains(&first.as_str()) {
            return path.get(1).map(|m| format!("{first}::{m}"));
        }
        Some(first.clone())
    }

    fn src(&self) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join(self.src)
    }

    fn level_of(&self, module: &str) -> Option<usize> {
        self.levels.iter().position(|l| l.contains(&module))
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The file's code without comments and without its test module.
fn code(text: &str) -> String {
    let mut out = String::new();
    let mut skip_depth: Option<i64> = None;
    let mut depth = 0i64;
    let mut pending_test = false;
    for line in text.lines() {
        let line = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        let trimmed = line.trim();
        if trimmed.starts_with("#[cfg(test)]") {
            pending_test = true;
            continue;
        }
        let opens = line.matches('{').count() as i64;
        let closes = line.matches('}').count() as i64;
        if pending_test && !trimmed.is_empty() {
            pending_test = false;
            if opens > closes {
                skip_depth = Some(depth);
            }
            depth += opens - closes;
            continue;
        }
        depth += opens - closes;
        if let Some(d) = skip_depth {
            if depth <= d {
                skip_depth = None;
            }
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The module paths (`["plan", "checks"]`) a file's code names, from
/// `crate::a::b` paths and `use crate::{a::b, c}` groups, with
/// `super::`/`self::` resolved against the file's own module `at`.
fn references(code: &str, at: &[String], is_mod_rs: bool) -> Vec<Vec<String>> {
    let mut refs = Vec::new();
    let words: Vec<char> = code.chars().collect();
    let text: String = words.iter().collect();
    let mut i = 0;
    while let Some(k) = text[i..].find("crate::").map(|k| k + i) {
        refs.extend(paths_at(&text[k + "crate::".len()..], &[]));
        i = k + 1;
    }
    // `super::` from a module file: its parent; from `a/mod.rs`: the
    // parent of `a`.
    let parent: Vec<String> = {
        let mut p = at.to_vec();
        if !is_mod_rs || !p.is_empty() {
            p.pop();
        }
        p
    };
    let mut i = 0;
    while let Some(k) = text[i..].find("super::").map(|k| k + i) {
        let before = text[..k].chars().last();
        if before.is_none_or(|c| !c.is_alphanumeric() && c != '_' && c != ':') {
            refs.extend(paths_at(&text[k + "super::".len()..], &parent));
        }
        i = k + 1;
    }
    refs
}

/// Paths starting at `s`: `a::b::C`, or a group `{a::b, c}` (nested
/// groups flattened), each prefixed by `prefix`.
fn paths_at(s: &str, prefix: &[String]) -> Vec<Vec<String>> {
    let s = s.trim_start();
    if let Some(rest) = s.strip_prefix('{') {
        let mut depth = 1;
        let mut end = rest.len();
        for (i, c) in rest.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i;
                        break;
                    }
                }
                _ => {}
            }
        }
        let inner = &rest[..end];
        let mut out = Vec::new();
        for part in split_top(inner) {
            out.extend(paths_at(part, prefix));
        }
        return out;
    }
    let mut path = prefix.to_vec();
    let mut rest = s;
    loop {
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() || name == "self" {
            break;
        }
        rest = &rest[name.len()..];
        path.push(name);
        match rest.strip_prefix("::") {
            Some(r) if r.starts_with('{') => {
                return paths_at(r, &path);
            }
            Some(r) => rest = r,
            None => break,
        }
    }
    vec![path]
}

/// `a, b::{c, d}, e` split at the top level's commas.
fn split_top(s: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// `lib/src/plan/checks.rs` -> `["plan", "checks"]`; `lib/src/plan/mod.rs` ->
/// `["plan"]`.
fn module_of(krate: &Crate, file: &Path) -> (Vec<String>, bool) {
    let rel = file.strip_prefix(krate.src()).unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    let is_mod = parts.last().is_some_and(|p| p == "mod");
    if is_mod || parts.last().is_some_and(|p| p == "lib" || p == "main") {
        parts.pop();
    }
    (parts, is_mod)
}

struct Source {
    file: PathBuf,
    module: Vec<String>,
    refs: Vec<Vec<String>>,
}

fn sources(krate: &Crate) -> Vec<Source> {
    let mut files = Vec::new();
    rust_files(&krate.src(), &mut files);
    files.sort();
    files
        .into_iter()
        // Test modules in files of their own (`mod tests;`).
        .filter(|f| f.file_name().is_none_or(|n| n != "tests.rs"))
        .map(|file| {
            let (module, is_mod) = module_of(krate, &file);
            let text = std::fs::read_to_string(&file).unwrap();
            let refs = references(&code(&text), &module, is_mod);
            Source { file, module, refs }
        })
        .collect()
}

/// Every import of a module at its own level or above, as
/// `file: importer -> imported`.
fn upward_imports(krate: &Crate, sources: &[Source]) -> Vec<String> {
    let mut bad = BTreeSet::new();
    for s in sources {
        let Some(top) = krate.unit(&s.module) else {
            continue; // lib.rs, main.rs, a group's mod.rs: faces
        };
        let Some(mine) = krate.level_of(&top) else {
            bad.insert(format!(
                "{}: module `{top}` is on no level",
                s.file.display()
            ));
            continue;
        };
        for r in &s.refs {
            let Some(other) = krate.unit(r) else { continue };
            if other == top {
                continue;
            }
            match krate.level_of(&other) {
                Some(theirs) if theirs < mine => {}
                Some(_) => {
                    bad.insert(format!("{}: {top} -> {other}", s.file.display()));
                }
                // Not a module (a re-export at the crate root, say).
                None => {}
            }
        }
    }
    bad.into_iter().collect()
}

/// Loops among the sibling files of one folder (the folder's `mod.rs`, its
/// face, left out), as lists of files.
fn sibling_loops(sources: &[Source]) -> Vec<String> {
    let known: BTreeSet<Vec<String>> = sources.iter().map(|s| s.module.clone()).collect();
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for s in sources {
        if s.module.len() < 2 {
            continue;
        }
        let folder = &s.module[..s.module.len() - 1];
        for r in &s.refs {
            // The longest prefix of the path that is a file of this crate.
            let Some(target) = (1..=r.len())
                .rev()
                .map(|n| r[..n].to_vec())
                .find(|p| known.contains(p))
            else {
                continue;
            };
            let sibling = target.len() == s.module.len() && target.starts_with(folder);
            if sibling && target != s.module {
                edges.entry(s.module.clone()).or_default().insert(target);
            }
        }
    }
    let mut loops = BTreeSet::new();
    for (a, outs) in &edges {
        for b in outs {
            if reaches(&edges, b, a) {
                let mut pair = [a.join("/"), b.join("/")];
                pair.sort();
                loops.insert(format!("{} <-> {}", pair[0], pair[1]));
            }
        }
    }
    loops.into_iter().collect()
}

fn reaches(
    edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
    from: &[String],
    to: &[String],
) -> bool {
    let mut seen = BTreeSet::new();
    let mut stack = vec![from.to_vec()];
    while let Some(n) = stack.pop() {
        if n == to {
            return true;
        }
        if seen.insert(n.clone()) {
            stack.extend(edges.get(&n).into_iter().flatten().cloned());
        }
    }
    false
}

#[test]
fn no_module_imports_one_at_its_level_or_above() {
    for krate in CRATES {
        let bad = upward_imports(krate, &sources(krate));
        assert!(
            bad.is_empty(),
            "imports against the flow in {} (see its levels in tests/integration/layers.rs):\n{}",
            krate.name,
            bad.join("\n")
        );
    }
}

#[test]
fn no_two_sibling_files_import_each_other() {
    for krate in CRATES {
        let bad = sibling_loops(&sources(krate));
        assert!(bad.is_empty(), "import loops:\n{}", bad.join("\n"));
    }
}

#[test]
fn every_top_level_module_is_on_a_level() {
    for krate in CRATES {
        let mut files = Vec::new();
        rust_files(&krate.src(), &mut files);
        for f in files {
            let (module, _) = module_of(krate, &f);
            if let Some(top) = krate.unit(&module) {
                assert!(
                    krate.level_of(&top).is_some(),
                    "{}: add `{top}` to {}'s levels",
                    f.display(),
                    krate.name
                );
            }
        }
    }
}

/// The modules a file declares (`mod x;`) or re-exports a crate as
/// (`pub use braid_kernel as kernel;`).
fn declared_in(file: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(file).unwrap();
    code(&text)
        .lines()
        .filter_map(|line| {
            let line = line.trim().trim_end_matches(';');
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                [.., "mod", name] => Some(name.to_string()),
                [.., "use", krate, "as", name] if krate.starts_with("braid_") => {
                    Some(name.to_string())
                }
                _ => None,
            }
        })
        .collect()
}

/// The modules that sit on levels, as the crate's `lib.rs` declares them,
/// a group's as its `mod.rs` declares them (`lab::plot`).
fn declared_modules(krate: &Crate) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for name in declared_in(&krate.src().join("lib.rs")) {
        if krate.groups.contains(&name.as_str()) {
            let inner = declared_in(&krate.src().join(&name).join("mod.rs"));
            out.extend(inner.into_iter().map(|m| format!("{name}::{m}")));
        } else {
            out.insert(name);
        }
    }
    out
}

#[test]
fn the_levels_name_every_module_of_each_crate_once_and_nothing_else() {
    // Drift the other way: a module deleted or renamed, still on a level.
    for krate in CRATES {
        let declared = declared_modules(krate);
        assert!(declared.len() > 3, "{}: {declared:?}", krate.name);
        let listed: Vec<&str> = krate
            .levels
            .iter()
            .flat_map(|l| l.iter().copied())
            .collect();
        for name in &listed {
            assert!(
                declared.contains(*name),
                "{}'s levels name `{name}`, which {}/lib.rs does not declare",
                krate.name,
                krate.src
            );
            assert_eq!(
                listed.iter().filter(|n| *n == name).count(),
                1,
                "`{name}` is on two levels"
            );
        }
        for name in &declared {
            assert!(
                krate.level_of(name).is_some(),
                "{}/lib.rs declares `{name}`: add it to {}'s levels",
                krate.src,
                krate.name
            );
        }
    }
}

/// docs/architecture.md's level table: `(crate, level, modules)` per row.
fn documented_levels(text: &str) -> Vec<(String, usize, Vec<String>)> {
    let ticked = |cell: &str| -> Vec<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    };
    text.lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            // "", crate, level, modules, what, ""
            let [_, krate, level, modules, _, _] = cells.as_slice() else {
                return None;
            };
            let level = level.parse().ok()?;
            Some((krate.trim_matches('`').to_string(), level, ticked(modules)))
        })
        .collect()
}

fn architecture() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md"))
        .unwrap()
}

#[test]
fn the_architecture_page_lists_the_levels_this_test_holds() {
    let documented = documented_levels(&architecture());
    let mut held = Vec::new();
    for krate in CRATES {
        for (i, level) in krate.levels.iter().enumerate() {
            let modules = level.iter().map(|m| m.to_string()).collect();
            held.push((krate.name.to_string(), i + 1, modules));
        }
    }
    assert_eq!(
        documented, held,
        "docs/architecture.md's level table (crate | level | modules) and the levels in tests/integration/layers.rs differ"
    );
}

/// The workspace's members, as the root Cargo.toml lists them.
fn members() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("members"))
        .expect("a members line");
    line.split('"')
        .skip(1)
        .step_by(2)
        .map(|dir| {
            let manifest = std::fs::read_to_string(root.join(dir).join("Cargo.toml")).unwrap();
            let name = manifest
                .lines()
                .find_map(|l| l.strip_prefix("name = "))
                .expect("a package name");
            name.trim_matches('"').to_string()
        })
        .collect()
}

#[test]
fn the_architecture_page_draws_every_crate_of_the_workspace() {
    let text = architecture();
    let members = members();
    assert!(members.len() >= 5, "{members:?}");
    for name in &members {
        assert!(
            text.lines()
                .any(|l| l.starts_with(&format!("| `{name}` | `"))),
            "docs/architecture.md's crate table has no row for `{name}`"
        );
    }
    for krate in CRATES {
        assert!(members.iter().any(|m| m == krate.name), "{}", krate.name);
    }
}

#[test]
fn the_level_table_reader_reads_rows_and_skips_the_rest() {
    let text = "| crate | level | modules | what |\n|---|---|---|---|\n\
                | `braid` | 1 | `a`, `b::c` | leaves |\n| `braid-kernel` | `kernel/` | x |\n";
    assert_eq!(
        documented_levels(text),
        [(
            "braid".to_string(),
            1,
            vec!["a".to_string(), "b::c".to_string()]
        )]
    );
}

/// `text` with the insides of string and character literals blanked
/// (newlines kept), so that a brace in `"{x}"` or `'{'` is not code.
fn without_literals(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < chars.len() {
        let c = chars[i];
        // r"..." and r#"..."#: no escapes, ends at the quote and its hashes.
        if c == 'r' && (i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')) {
            let mut j = i + 1;
            while chars.get(j) == Some(&'#') {
                j += 1;
            }
            if chars.get(j) == Some(&'"') {
                let hashes = j - i - 1;
                out.push('r');
                out.extend(std::iter::repeat_n('#', hashes));
                out.push('"');
                let mut k = j + 1;
                while k < chars.len() {
                    let closes =
                        chars[k] == '"' && (1..=hashes).all(|h| chars.get(k + h) == Some(&'#'));
                    if closes {
                        break;
                    }
                    out.push(blank(chars[k]));
                    k += 1;
                }
                out.push('"');
                out.extend(std::iter::repeat_n('#', hashes));
                i = k + 1 + hashes;
                continue;
            }
        }
        if c == '"' {
            out.push('"');
            let mut k = i + 1;
            while k < chars.len() && chars[k] != '"' {
                if chars[k] == '\\' {
                    out.push(' ');
                    k += 1;
                }
                if let Some(&d) = chars.get(k) {
                    out.push(blank(d));
                }
                k += 1;
            }
            out.push('"');
            i = k + 1;
            continue;
        }
        // A character literal ('x', '\n', '\u{7b}'); else a lifetime.
        if c == '\'' {
            let end = match chars.get(i + 1) {
                Some('\\') => (i + 2..chars.len().min(i + 12)).find(|&k| chars[k] == '\''),
                Some(_) if chars.get(i + 2) == Some(&'\'') => Some(i + 2),
                _ => None,
            };
            if let Some(end) = end {
                out.push_str("' '");
                i = end + 1;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

/// Every function with a body in `code` (comments, test modules and
/// literals already out): its name and how many lines it spans, from its
/// `fn` line to its closing brace.
fn function_lengths(code: &str) -> Vec<(String, usize)> {
    let text = without_literals(code);
    let bytes = text.as_bytes();
    let line_at = |at: usize| text[..at].matches('\n').count();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(k) = text[from..].find("fn ").map(|k| k + from) {
        from = k + 3;
        let word_start = k == 0 || !(bytes[k - 1].is_ascii_alphanumeric() || bytes[k - 1] == b'_');
        let name: String = text[k + 3..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if !word_start || name.is_empty() {
            continue;
        }
        // The body opens at the first `{` before any `;` (a declaration).
        let Some(open) = text[k..].find(['{', ';']).map(|o| o + k) else {
            continue;
        };
        if bytes[open] == b';' {
            continue;
        }
        let mut depth = 0usize;
        let close = (open..bytes.len()).find(|&i| {
            match bytes[i] {
                b'{' => depth += 1,
                b'}' => depth -= 1,
                _ => {}
            }
            depth == 0
        });
        if let Some(close) = close {
            out.push((name, line_at(close) - line_at(k) + 1));
        }
    }
    out
}

/// Every crate's sources, for the functions' lengths.
const SOURCES: &[&str] = &["lib/src", "src", "kernel/src", "noise/src", "testkit/src"];

/// At most this many functions outside the tests over 80 lines; none over
/// 120.
const OVER_80: usize = 10;

#[test]
fn no_function_outside_the_tests_is_over_120_lines_and_at_most_10_over_80() {
    let mut long = Vec::new();
    for dir in SOURCES {
        let mut files = Vec::new();
        rust_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join(dir), &mut files);
        // Test modules in files of their own (`mod tests;`).
        for file in files
            .iter()
            .filter(|f| f.file_name().is_none_or(|n| n != "tests.rs"))
        {
            let text = std::fs::read_to_string(file).unwrap();
            for (name, lines) in function_lengths(&code(&text)) {
                if lines > 80 {
                    long.push((lines, format!("{}: {name}", file.display())));
                }
            }
        }
    }
    long.sort();
    let listed: Vec<String> = long.iter().map(|(n, f)| format!("{n} {f}")).collect();
    assert!(
        long.iter().all(|(n, _)| *n <= 120),
        "functions over 120 lines (split each where its parts have names):\n{}",
        listed.join("\n")
    );
    assert!(
        long.len() <= OVER_80,
        "{} functions over 80 lines, more than {OVER_80}:\n{}",
        long.len(),
        listed.join("\n")
    );
}

#[test]
fn function_lengths_count_from_fn_to_its_brace_past_braces_in_literals() {
    let code = "fn a() {\n    let s = \"{\";\n    let c = '{';\n    let r = r#\"}\"#;\n}\n\
                trait T { fn b(&self); }\nfn c<'a>(x: &'a str) -> impl Fn() { move || {} }\n";
    assert_eq!(
        function_lengths(code),
        [("a".to_string(), 5), ("c".to_string(), 1)]
    );
}

/// The checker itself: it sees an upward import, a sibling loop, and not
/// what a comment or a test module names.
#[test]
fn the_checker_sees_what_it_should_and_only_that() {
    let at = |m: &[&str], text: &str| Source {
        file: PathBuf::from(m.join("/")),
        module: m.iter().map(|s| s.to_string()).collect(),
        refs: references(
            &code(text),
            &m.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            false,
        ),
    };
    let upward = at(&["config"], "use crate::sim::Thing;\n");
    assert_eq!(upward_imports(&LIBRARY, &[upward]).len(), 1);
    let grouped = at(&["plan"], "use crate::{config::Config, report::{A, B}};\n");
    assert_eq!(
        upward_imports(&LIBRARY, &[grouped]),
        ["plan: plan -> report"]
    );
    let commented = at(&["config"], "/// See [`crate::sim::run`].\nfn f() {}\n");
    assert!(upward_imports(&LIBRARY, &[commented]).is_empty());
    let in_test = at(
        &["config"],
        "fn f() {}\n#[cfg(test)]\nmod tests {\n    use crate::sim::run;\n}\n",
    );
    assert!(upward_imports(&LIBRARY, &[in_test]).is_empty());
    // Within a group, each module has its own level.
    let lab_up = at(&["lab", "experiment"], "use crate::lab::plot::Figure;\n");
    assert_eq!(
        upward_imports(&PROGRAM, &[lab_up]),
        ["lab/experiment: lab::experiment -> lab::plot"]
    );
    let lab_down = at(
        &["lab", "plot", "tts"],
        "use crate::lab::{experiment::R, table};\n",
    );
    assert_eq!(
        upward_imports(&PROGRAM, &[lab_down]),
        ["lab/plot/tts: lab::plot -> lab::table"]
    );
    let a = at(&["sim", "a"], "use super::b::X;\n");
    let b = at(&["sim", "b"], "use super::{a::Y, clock};\n");
    assert_eq!(sibling_loops(&[a, b]), ["sim/a <-> sim/b"]);
}
