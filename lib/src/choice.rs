//! A key's value that is one of a few names, one of which may carry a
//! file: `balancer = learned:MODEL.json`, `lb_strategy = prescribed:DIR`.
//! [`WithFile`] reads, writes and serialises such values once for every
//! key of that kind.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The names of a key's values, and the one that may carry a file.
pub trait Choice: Copy + PartialEq + fmt::Debug + 'static {
    /// Every value's name, in the order messages list them.
    const NAMES: &'static [(&'static str, Self)];
    /// The value written `NAME:FILE`, and what its file is called in
    /// messages (`DIR`, `MODEL.json`).
    const WITH_FILE: (Self, &'static str);

    /// This value's name.
    fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, v)| *v == self)
            .map_or("?", |(n, _)| n)
    }
}

/// A value of a [`Choice`] key, with its file when it carries one
/// (relative to the working directory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WithFile<K> {
    /// Which value.
    pub kind: K,
    /// Its file, for the value that carries one.
    pub file: Option<PathBuf>,
}

impl<K: Choice> WithFile<K> {
    /// `kind` with no file.
    pub fn of(kind: K) -> Self {
        WithFile { kind, file: None }
    }

    /// The same with its file read from `dir` (what a process started in
    /// `dir` opens).
    pub fn with_file_from(&self, dir: &Path) -> Self {
        WithFile {
            kind: self.kind,
            file: self.file.as_ref().map(|f| dir.join(f)),
        }
    }
}

impl<K: Choice> PartialEq<K> for WithFile<K> {
    fn eq(&self, kind: &K) -> bool {
        self.kind == *kind
    }
}

impl<K: Choice> std::str::FromStr for WithFile<K> {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let (kind, file_word) = K::WITH_FILE;
        if let Some(file) = text
            .strip_prefix(kind.name())
            .and_then(|rest| rest.strip_prefix(':'))
        {
            let file = file.trim();
            if file.is_empty() {
                return Err(format!("{}:{file_word} names no file", kind.name()));
            }
            return Ok(WithFile {
                kind,
                file: Some(file.into()),
            });
        }
        K::NAMES
            .iter()
            .find(|(name, _)| *name == text)
            .map(|&(_, kind)| WithFile::of(kind))
            .ok_or_else(|| {
                let names: Vec<&str> = K::NAMES.iter().map(|(n, _)| *n).collect();
                format!("one of {}, {}:{file_word}", names.join(", "), kind.name())
            })
    }
}

impl<K: Choice> fmt::Display for WithFile<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind.name())?;
        match &self.file {
            Some(file) => write!(f, ":{}", file.display()),
            None => Ok(()),
        }
    }
}

impl<K: Choice> Serialize for WithFile<K> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de, K: Choice> Deserialize<'de> for WithFile<K> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}
