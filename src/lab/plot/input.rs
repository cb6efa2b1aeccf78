//! What kind of file `braid plot` was handed, told before any reader runs:
//! a results file of `braid experiment`, a `validation.json` of `braid
//! validate`, or the benchmark's `speed.json` or `roofline.json`. Each kind
//! is then read by its own reader, so a malformed file is named as the kind
//! it is, with the field and the problem, rather than falling through to
//! the results reader. The kind comes from the first JSON object's keys,
//! read one at a time with their values skipped (memory for the keys only,
//! whatever the file's size), and where those say nothing (a file cut
//! short before its first key, `null`), from the file's name.

use std::fmt;
use std::io::{Read, Seek};
use std::path::Path;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};

/// A kind of file `braid plot` draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Input {
    /// Records of `braid experiment`, one per line (or brotli-compressed).
    Results,
    /// A `validation.json` of `braid validate`.
    Validation,
    /// The benchmark's `speed.json`.
    Speed,
    /// The benchmark's `roofline.json`.
    Roofline,
}

/// Keys each kind's top-level object has and no other kind's has.
const SIGNS: [(Input, &[&str]); 4] = [
    (
        Input::Validation,
        &["quick", "repetitions", "sim_topology", "calibration"],
    ),
    (Input::Speed, &["command", "policy"]),
    (Input::Roofline, &["ceilings", "peak_gflops", "points"]),
    (
        Input::Results,
        &[
            "suite",
            "suite_digest",
            "figure",
            "sample",
            "status",
            "report",
        ],
    ),
];

/// The most of a file the key scan reads: the keys of any file braid writes
/// come well before this.
const SCAN_BYTES: u64 = 1 << 20;

/// What `path` is. `Err` names a file that is not one braid writes (not
/// JSON at all: a README, a picture); a missing or unreadable file is left
/// to the reader, which names its own error.
pub(crate) fn kind(path: &Path) -> Result<Input, String> {
    if path.extension().is_some_and(|e| e == "br") {
        return Ok(Input::Results);
    }
    // A FIFO or a device is not opened here (an open of a FIFO waits for
    // a writer): the results reader refuses it by name.
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return Ok(Input::Results);
    }
    let Ok(file) = std::fs::File::open(path) else {
        return Ok(Input::Results);
    };
    let mut head = Vec::new();
    let _ = (&file).take(4096).read_to_end(&mut head);
    let first = head.iter().find(|b| !b.is_ascii_whitespace());
    if let Some(b) = first.filter(|&&b| b != b'{') {
        if let Some(named) = by_name(path) {
            return Ok(named);
        }
        let what = match b {
            b'[' => "a JSON list, not an object",
            b'"' | b'-' | b'0'..=b'9' | b'n' | b't' | b'f' => "JSON, but not an object",
            _ if b.is_ascii() => "text that is not JSON",
            _ => "not text",
        };
        return Err(format!(
            "{} is not a file braid writes ({what}): run braid experiment first, then plot \
             the results file it names (or a validation.json, speed.json or roofline.json)",
            path.display()
        ));
    }
    let mut file = file;
    file.rewind()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let keys = top_keys(&file);
    Ok(by_keys(&keys)
        .or_else(|| by_name(path))
        .unwrap_or(Input::Results))
}

fn by_keys(keys: &[String]) -> Option<Input> {
    keys.iter().find_map(|k| {
        SIGNS
            .iter()
            .find(|(_, signs)| signs.contains(&k.as_str()))
            .map(|(kind, _)| *kind)
    })
}

/// The kind a file's name gives: `validation.json`, `speed.json`,
/// `roofline.json` (a prefix before them allowed, as in `old-speed.json`).
fn by_name(path: &Path) -> Option<Input> {
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_suffix(".json")?;
    [
        ("validation", Input::Validation),
        ("speed", Input::Speed),
        ("roofline", Input::Roofline),
    ]
    .into_iter()
    .find(|(n, _)| stem.ends_with(n))
    .map(|(_, kind)| kind)
}

/// The keys of the first JSON object in `input`, as far as it is whole:
/// a file cut short, or a value that does not parse, ends the scan with the
/// keys before it.
fn top_keys(input: impl Read) -> Vec<String> {
    let mut keys = Vec::new();
    let reader = std::io::BufReader::new(input.take(SCAN_BYTES));
    let mut json = serde_json::Deserializer::from_reader(reader);
    let _ = KeysOf(&mut keys).deserialize(&mut json);
    keys
}

/// Collects a map's keys into the vector it holds, skipping the values.
struct KeysOf<'a>(&'a mut Vec<String>);

impl<'de> DeserializeSeed<'de> for KeysOf<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for KeysOf<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            self.0.push(key);
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str, text: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("braid-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn a_file_is_known_by_its_first_keys_whatever_its_name() {
        for (text, want) in [
            (
                r#"{"date": "d", "provenance": {}, "quick": true}"#,
                Input::Validation,
            ),
            (
                r#"{"machine": "m", "date": "d", "build": {}, "command": "c"}"#,
                Input::Speed,
            ),
            (r#"{"machine": "m", "ceilings": [1, 2]}"#, Input::Roofline),
            (r#"{"suite": "s", "suite_digest": "x"}"#, Input::Results),
        ] {
            assert_eq!(kind(&scratch("x.json", text)).unwrap(), want, "{text}");
        }
    }

    /// A malformed file is still known as its kind, so its own reader can
    /// name the field: a NaN, a wrong type or a cut after the keys that
    /// tell.
    #[test]
    fn a_malformed_file_is_known_by_the_keys_before_the_fault() {
        let nan = r#"{"machine": "m", "date": "d", "build": {}, "command": "c", "rows": [NaN]}"#;
        assert_eq!(kind(&scratch("a.json", nan)).unwrap(), Input::Speed);
        let cut = r#"{"machine": "m", "ceilings": [1, 2"#;
        assert_eq!(kind(&scratch("b.json", cut)).unwrap(), Input::Roofline);
        let typed = r#"{"date": 3, "provenance": null, "quick": "yes", "rows": 1"#;
        assert_eq!(kind(&scratch("c.json", typed)).unwrap(), Input::Validation);
    }

    #[test]
    fn a_file_whose_keys_say_nothing_is_known_by_its_name() {
        assert_eq!(kind(&scratch("speed.json", "null")).unwrap(), Input::Speed);
        assert_eq!(
            kind(&scratch("validation.json", "{")).unwrap(),
            Input::Validation
        );
        assert_eq!(
            kind(&scratch("old-roofline.json", "{}")).unwrap(),
            Input::Roofline
        );
        assert_eq!(kind(&scratch("r.jsonl", "")).unwrap(), Input::Results);
    }

    #[test]
    fn a_file_that_is_not_json_is_refused_by_name() {
        let e = kind(&scratch("README.md", "# braid\n")).unwrap_err();
        assert!(e.contains("README.md is not a file braid writes"), "{e}");
        assert!(e.contains("run braid experiment first"), "{e}");
    }
}
