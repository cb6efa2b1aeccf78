//! A configuration read back from a file braid did not just write (a
//! report given to `--replay-speeds`, a results file) is checked as if it
//! had been typed: each key's value is written back as `config.txt` text
//! and parsed again by the key's own parser, so the same bounds hold and a
//! value out of them names the file and the field.

use std::path::Path;

use serde_json::Value;

use super::{AutoOr, Config, ConfigError, KEYS, Origin};
use crate::limits::{MAX_SIM_CPUS, MAX_THREADS};

impl Config {
    /// This configuration, every key re-parsed from its text: an error
    /// names `file`, the field and what the key takes.
    pub fn rechecked(&self, file: &Path) -> Result<Config, ConfigError> {
        let json = serde_json::to_value(self).expect("a configuration serialises");
        let mut fresh = Config::default();
        for key in KEYS {
            let origin = Origin::Field {
                file: file.to_path_buf(),
                field: format!("config.{}", key.name),
            };
            // A key its JSON leaves out holds its default.
            let Some(value) = json.get(key.name) else {
                continue;
            };
            // A simulated machine's threads, resolved from `auto`, may be
            // more than a user may set by hand (up to its PUs).
            if let ("threads", Some(n)) = (key.name, value.as_u64()) {
                let n = usize::try_from(n).unwrap_or(usize::MAX);
                if n > MAX_THREADS && n <= MAX_SIM_CPUS {
                    fresh.threads = AutoOr::Value(n);
                    continue;
                }
            }
            let text = text_of(key.name, value);
            fresh.set(key.name, &text, origin)?;
        }
        // The text of every value parses back to it (a test holds this for
        // every default and for changed values); should one not, the file
        // still gets no value the parsers did not accept.
        Ok(fresh)
    }
}

/// A key's value as `config.txt` writes it, from its JSON form.
fn text_of(key: &str, v: &Value) -> String {
    match (key, v) {
        (_, Value::Null) => "none".into(),
        (_, Value::String(s)) => s.clone(),
        (_, Value::Bool(_) | Value::Number(_)) => v.to_string(),
        ("sim_speed", Value::Array(a)) if a.is_empty() => "uniform".into(),
        ("noise_cores", Value::Array(cores)) => cores
            .iter()
            .map(|c| {
                let core = text_of("", &c["core"]);
                match (&c["duty"], &c["trace"]) {
                    (Value::Null, Value::Null) => core,
                    (Value::Null, trace) => format!("{core}:{}", text_of("", trace)),
                    (duty, _) => format!("{core}:{}", text_of("", duty)),
                }
            })
            .collect::<Vec<_>>()
            .join(", "),
        ("sim_topology", v) => serde_json::from_value::<crate::topology::SimTopology>(v.clone())
            .map_or_else(|_| v.to_string(), |t| t.to_string()),
        ("sim_jitter", v) => serde_json::from_value::<crate::engine::Jitter>(v.clone())
            .map_or_else(|_| v.to_string(), |j| j.to_string()),
        ("stall", v) => format!(
            "{}@{}:{}",
            text_of("", &v["thread"]),
            text_of("", &v["after"]),
            text_of("", &v["seconds"])
        ),
        ("slow", v) => format!(
            "{}:{}",
            text_of("", &v["thread"]),
            text_of("", &v["factor"])
        ),
        (_, Value::Array(items)) => items
            .iter()
            .map(|x| match x {
                Value::Array(pair) => pair
                    .iter()
                    .map(|p| text_of("", p))
                    .collect::<Vec<_>>()
                    .join(":"),
                x => text_of("", x),
            })
            .collect::<Vec<_>>()
            .join(", "),
        // A shape no key has: its JSON, which its parser refuses by name.
        (_, Value::Object(_)) => v.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn changed() -> Config {
        let mut c = Config::default();
        c.apply_overrides(&[
            "noise=thread",
            "noise_cores=auto:0.19, 3, 4:x.trace",
            "sim_speed=3:0.9, 5:1.25",
            "stall=0@5:1.5",
            "slow=1:0.5",
            "cores=0-3",
            "threads=4",
            "lb_candidates=split, steal",
            "time_limit=2.5",
            "workload=hotspot(4,0.5,0.5,0.1)",
            "sim_topology=host:2 pack:2 core:4",
            "sim_jitter=0.081:0.001:0.058",
            "lb_interval=auto",
            "lb_group=node",
            "lb_away_cost=auto",
            "lb_gate=payoff",
            "memory_limit=2",
            "low_threshold=2",
            "noise_offsets=cosched",
        ])
        .unwrap();
        c
    }

    #[test]
    fn every_value_reads_back_as_itself() {
        let p = Path::new("r.json");
        assert_eq!(Config::default().rechecked(p).unwrap(), Config::default());
        assert_eq!(changed().rechecked(p).unwrap(), changed());
    }

    /// A simulation of more threads than a user may set by hand (its
    /// `threads = auto` resolved on 2 million PUs) reads back: its results
    /// could not be plotted before.
    #[test]
    fn a_simulated_machines_resolved_threads_read_back_up_to_its_pus() {
        let p = Path::new("r.json");
        for n in [MAX_THREADS + 1, 1 << 21, MAX_SIM_CPUS] {
            let c = Config {
                threads: AutoOr::Value(n),
                ..Config::default()
            };
            assert_eq!(c.rechecked(p).unwrap(), c);
        }
        let c = Config {
            threads: AutoOr::Value(MAX_SIM_CPUS + 1),
            ..Config::default()
        };
        assert!(c.rechecked(p).is_err());
    }

    #[test]
    fn a_value_out_of_its_keys_bounds_is_refused_naming_the_file_and_field() {
        let c = Config {
            time_limit: 1e300,
            ..Config::default()
        };
        let e = c.rechecked(Path::new("r.json")).unwrap_err().to_string();
        assert!(
            e.contains("r.json") && e.contains("config.time_limit"),
            "{e}"
        );
        let c = Config {
            threads: crate::config::AutoOr::Value(usize::MAX - 3),
            ..Config::default()
        };
        let e = c.rechecked(Path::new("r.json")).unwrap_err().to_string();
        assert!(e.contains("config.threads"), "{e}");
        let c = Config {
            sim_speed: vec![(0, 1e-300)],
            ..Config::default()
        };
        let e = c.rechecked(Path::new("r.json")).unwrap_err().to_string();
        assert!(e.contains("config.sim_speed"), "{e}");
    }
}
