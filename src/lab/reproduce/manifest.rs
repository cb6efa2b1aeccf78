//! `plots/published.toml`: every figure and table braid publishes, the
//! suites whose records it is drawn from, and where both are committed.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::ReproduceError;
use braid::MAX_TEXT_BYTES;

/// Where the list of published results lives, from the repository's root.
pub(crate) const MANIFEST: &str = "plots/published.toml";

/// The list as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Manifest {
    #[serde(rename = "set")]
    pub sets: Vec<Set>,
}

/// One published figure (or table), and what makes it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Set {
    /// What `braid reproduce NAME` calls it.
    pub name: String,
    /// What it shows, and where it is cited.
    pub about: String,
    /// The suites (`experiments/<suite>.toml`) whose records it is drawn
    /// from.
    #[serde(default)]
    pub suites: Vec<String>,
    /// The folder of the suites' committed records, one
    /// `<suite>.jsonl.br` each.
    #[serde(default)]
    pub records: Option<PathBuf>,
    /// The folder `braid plot` draws the set into (none: the records are
    /// read by the docs' tables alone).
    #[serde(default)]
    pub figures: Option<PathBuf>,
    /// A measurement that `braid plot` redraws (a validation, the
    /// benchmark's speed or roofline), made by `made_by`.
    #[serde(default)]
    pub file: Option<PathBuf>,
    /// The command that makes `file`, which reproduce does not run.
    #[serde(default)]
    pub made_by: Option<String>,
    /// The strategy chooser `braid learn` trains and evaluates on the
    /// set's suites.
    #[serde(default)]
    pub learn: Option<Learn>,
    /// Rerun by `braid reproduce --quick`.
    #[serde(default)]
    pub quick: bool,
}

/// A learned chooser: trained on `train` (written to `model`), or, without
/// `train`, the committed `model`; evaluated on each of `evaluate`, its
/// regrets drawn as `regret-<suite>.png` in the set's figures.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Learn {
    #[serde(default)]
    pub train: Vec<String>,
    pub model: PathBuf,
    pub evaluate: Vec<String>,
}

/// The extension of a committed records file.
pub(crate) const RECORDS_EXTENSION: &str = "jsonl.br";

impl Set {
    /// The committed records of `suite`.
    pub(crate) fn records_of(&self, root: &Path, suite: &str) -> Option<PathBuf> {
        let dir = self.records.as_ref()?;
        Some(root.join(dir).join(format!("{suite}.{RECORDS_EXTENSION}")))
    }

    /// The suite file of `suite`.
    pub(crate) fn suite_file(root: &Path, suite: &str) -> PathBuf {
        root.join("experiments").join(format!("{suite}.toml"))
    }
}

impl Manifest {
    /// Reads `root/plots/published.toml` and checks it: names unique, each
    /// set either suites with a records folder or a file with its command,
    /// every suite file and committed file present.
    pub(crate) fn read(root: &Path) -> Result<Manifest, ReproduceError> {
        let path = root.join(MANIFEST);
        let bad = |message: String| ReproduceError::Manifest {
            path: path.clone(),
            message,
        };
        let text = braid_noise::files::read_text(&path, MAX_TEXT_BYTES).map_err(|e| {
            bad(format!(
                "{e} (braid reproduce runs in braid's repository, where {MANIFEST} lists what \
                 is published)"
            ))
        })?;
        let manifest: Manifest = toml::from_str(&text).map_err(|e| bad(e.to_string()))?;
        let mut names: Vec<&str> = Vec::new();
        for set in &manifest.sets {
            if names.contains(&set.name.as_str()) {
                return Err(bad(format!("set `{}` is listed twice", set.name)));
            }
            crate::lab::experiment::suite::file_name_part("set", &set.name).map_err(bad)?;
            names.push(&set.name);
            match (&set.file, set.suites.is_empty(), &set.records) {
                (Some(_), true, None) if set.made_by.is_some() => {}
                (None, false, Some(_)) => {}
                _ => {
                    return Err(bad(format!(
                        "set `{}`: give either suites with a records folder, or a file with \
                         the command that makes it (made_by)",
                        set.name
                    )));
                }
            }
            for suite in &set.suites {
                let file = Set::suite_file(root, suite);
                if !file.is_file() {
                    return Err(bad(format!(
                        "set `{}`: no suite file {}",
                        set.name,
                        file.display()
                    )));
                }
            }
            if let Some(learn) = &set.learn {
                let listed = |s: &String| set.suites.contains(s);
                if !learn.train.iter().chain(&learn.evaluate).all(listed) {
                    return Err(bad(format!(
                        "set `{}`: learn names a suite the set does not list",
                        set.name
                    )));
                }
            }
        }
        Ok(manifest)
    }

    /// The sets `names` asks for (all when empty; the quick ones with
    /// `quick`), in the file's order; an unknown name is refused.
    pub(crate) fn select(
        &self,
        names: &[String],
        quick: bool,
    ) -> Result<Vec<&Set>, ReproduceError> {
        for n in names {
            if !self.sets.iter().any(|s| &s.name == n) {
                let known: Vec<&str> = self.sets.iter().map(|s| s.name.as_str()).collect();
                return Err(ReproduceError::UnknownSet {
                    name: n.clone(),
                    hint: braid::hint(n, known.iter().copied()),
                    known: known.join(", "),
                });
            }
        }
        Ok(self
            .sets
            .iter()
            .filter(|s| names.is_empty() || names.contains(&s.name))
            .filter(|s| !quick || s.quick)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> &'static Path {
        Path::new(env!("CARGO_MANIFEST_DIR"))
    }

    #[test]
    fn the_committed_list_reads_and_names_every_committed_records_file() {
        let m = Manifest::read(root()).unwrap();
        assert!(m.sets.iter().any(|s| s.quick));
        // Every committed records file belongs to a set, and every set's
        // suite has its committed records.
        let mut listed = Vec::new();
        for set in &m.sets {
            for suite in &set.suites {
                let path = set.records_of(root(), suite).unwrap();
                assert!(path.is_file(), "{}: no {}", set.name, path.display());
                listed.push(path);
            }
        }
        let mut committed = Vec::new();
        let mut dirs = vec![root().join("plots")];
        while let Some(dir) = dirs.pop() {
            for e in std::fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p.to_string_lossy().ends_with(RECORDS_EXTENSION) {
                    committed.push(p);
                }
            }
        }
        for p in committed {
            assert!(listed.contains(&p), "{} is in no set", p.display());
        }
    }

    #[test]
    fn an_unknown_set_is_refused_with_a_suggestion() {
        let m = Manifest::read(root()).unwrap();
        let e = m.select(&["payof".into()], false).unwrap_err().to_string();
        assert!(e.contains("did you mean `payoff`"), "{e}");
        assert_eq!(m.select(&["payoff".into()], false).unwrap().len(), 1);
    }
}
