//! The build that made this binary: braid's version, the commit its
//! sources came from, and whether the tree held uncommitted changes.
//! Every JSON file braid writes (run reports, suite records, validations,
//! the benchmark's speed and roofline, learned models) names it, so that a
//! reader can tell which binary computed a number and whether anyone can
//! build that binary again: only a clean commit can be rebuilt.
//!
//! `build.rs` reads the commit (`git rev-parse HEAD`) and the tree's state
//! (`git status --porcelain --untracked-files=no`) when braid is compiled.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What a commit is called when braid was built outside a git checkout.
pub(crate) const UNKNOWN: &str = "unknown";

/// A build of braid.
///
/// ```
/// use braid::Build;
/// let b = Build { version: "0.1.0".into(), commit: "9f1cb7d0e1a2b3c4".into(), clean: true };
/// assert_eq!(b.short(), "9f1cb7d0e1a2");
/// assert!(b.reproducible());
/// assert_eq!(b.to_string(), "braid 0.1.0 at 9f1cb7d0e1a2");
/// let dirty = Build { clean: false, ..b };
/// assert_eq!(dirty.to_string(), "braid 0.1.0 at 9f1cb7d0e1a2 with uncommitted changes");
/// assert!(!dirty.reproducible());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Build {
    /// braid's version (its `Cargo.toml`).
    pub version: String,
    /// The full hash of the commit the sources came from, or
    /// [`UNKNOWN`] outside a git checkout.
    pub commit: String,
    /// Whether every tracked file matched that commit (untracked files
    /// aside): only then is the binary the commit's.
    pub clean: bool,
}

impl Build {
    /// The build of this binary.
    pub fn this() -> Build {
        Build {
            version: env!("CARGO_PKG_VERSION").to_string(),
            commit: env!("BRAID_GIT_COMMIT").to_string(),
            clean: env!("BRAID_GIT_CLEAN") == "true",
        }
    }

    /// A build nothing says anything of (a file written before builds were
    /// recorded).
    pub fn unknown() -> Build {
        Build {
            version: UNKNOWN.to_string(),
            commit: UNKNOWN.to_string(),
            clean: false,
        }
    }

    /// The build a `git describe`-style revision names, as files written
    /// before 2026-12-01 recorded it (`9f1cb7d0e1a2`, `-dirty` with
    /// changes).
    ///
    /// ```
    /// use braid::Build;
    /// let b = Build::from_revision("0.1.0", "db8ecfa8f54f-dirty");
    /// assert_eq!((b.commit.as_str(), b.clean), ("db8ecfa8f54f", false));
    /// ```
    pub fn from_revision(version: &str, revision: &str) -> Build {
        let (commit, clean) = match revision.strip_suffix("-dirty") {
            Some(c) => (c, false),
            None => (revision, revision != UNKNOWN),
        };
        Build {
            version: version.to_string(),
            commit: commit.to_string(),
            clean,
        }
    }

    /// The commit's first 12 hex digits (all of it if shorter).
    pub fn short(&self) -> &str {
        &self.commit[..self.commit.len().min(12)]
    }

    /// Whether anyone can build this binary again: a clean tree at a
    /// known commit.
    pub fn reproducible(&self) -> bool {
        self.clean && self.commit != UNKNOWN
    }
}

impl Default for Build {
    /// [`Build::unknown`]: what a file that names no build was made by.
    fn default() -> Self {
        Build::unknown()
    }
}

impl fmt::Display for Build {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "braid {} at {}", self.version, self.short())?;
        if !self.clean {
            match self.commit == UNKNOWN {
                true => write!(f, " (not built from a git checkout)")?,
                false => write!(f, " with uncommitted changes")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_binary_names_a_commit_of_forty_hex_digits_or_none() {
        let b = Build::this();
        assert_eq!(b.version, env!("CARGO_PKG_VERSION"));
        assert!(
            b.commit == UNKNOWN
                || (b.commit.len() == 40 && b.commit.chars().all(|c| c.is_ascii_hexdigit())),
            "{}",
            b.commit
        );
        assert!(b.commit != UNKNOWN || !b.clean, "no commit, so not clean");
    }

    #[test]
    fn a_file_that_names_no_build_reads_as_unknown_and_not_reproducible() {
        let b: Build = Build::default();
        assert!(!b.reproducible());
        assert_eq!(
            b.to_string(),
            "braid unknown at unknown (not built from a git checkout)"
        );
        assert!(!Build::from_revision("0.1.0", UNKNOWN).reproducible());
        assert!(Build::from_revision("0.1.0", "abc").reproducible());
    }
}
