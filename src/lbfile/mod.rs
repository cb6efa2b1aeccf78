//! DARMA vt's LB data files as a format: the schema's rules ([`schema`])
//! and a reader of a directory of them ([`read_dir`]), for whatever
//! replays recorded loads (`workload = lbdata:DIR`) or applies recorded
//! owners. Writing a braid run in the format is `lbdata`'s job.
//!
//! A directory holds `data.<N>.json` for the processing elements `N = 0,
//! 1, ...` (vt's ranks, braid's threads), every one of them, each valid
//! against vt's schema. What is read of it: per phase, each migratable
//! task's id (`seq_id`, else `id`), the processing element whose file
//! lists it, its `time`, and, if the file says, the updates it made in
//! that phase (braid's `user_defined.updates`). Non-migratable tasks (in
//! braid's files, the noise) and communications are not read.

pub mod schema;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// The largest file read, in bytes.
const MAX_FILE_BYTES: u64 = 256 << 20;
/// The most processing elements (files) read.
const MAX_FILES: usize = 1 << 16;
/// The most tasks read over all phases and files: 2^26 task entries
/// (about a gigabyte of JSON) bounds what a reader allocates.
const MAX_TASKS: usize = 1 << 26;

/// One task in one phase.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Task {
    /// The entity's `seq_id` (else its `id`).
    pub id: u64,
    /// The processing element whose file lists it.
    pub pe: usize,
    /// Its time in the phase, seconds.
    pub time_s: f64,
    /// Its updates in the phase, if recorded (`user_defined.updates`).
    pub updates: Option<u64>,
}

/// One phase: its id and its migratable tasks, by id.
#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    /// The phase's id.
    pub id: u64,
    /// Every processing element's migratable tasks, sorted by id.
    pub tasks: Vec<Task>,
}

/// A directory of LB data files, read.
#[derive(Debug, Clone, PartialEq)]
pub struct Recording {
    /// How many processing elements (files).
    pub pes: usize,
    /// The phases, by id.
    pub phases: Vec<Phase>,
}

/// Progress (updates per subdomain) over which a phase without recorded
/// updates is spread: a vt recording of tens of phases then spans a Jacobi
/// run of thousands of iterations.
pub const PHASE_PROGRESS: f64 = 100.0;

impl Recording {
    /// Every task's id, in order, each once.
    pub fn task_ids(&self) -> Vec<u64> {
        let mut ids: Vec<u64> = self
            .phases
            .iter()
            .flat_map(|p| p.tasks.iter().map(|t| t.id))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// Whether every task says how many updates it made in each phase
    /// (braid's files do; vt's do not).
    pub fn counted(&self) -> bool {
        self.phases
            .iter()
            .all(|p| p.tasks.iter().all(|t| t.updates.is_some()))
    }

    /// The progress (mean updates per task) at which each phase begins.
    /// Counted: a phase lasts the mean updates per task it holds (of all
    /// `tasks`). Otherwise phase `id` begins at `PHASE_PROGRESS * (id -
    /// first id)`, so a phase vt left out (`identical_to_previous`,
    /// `skipped`) keeps the one before it.
    pub fn starts(&self) -> Vec<f64> {
        let tasks = self.task_ids().len().max(1) as f64;
        let first = self.phases.first().map_or(0, |p| p.id);
        let counted = self.counted();
        let mut at = 0.0;
        self.phases
            .iter()
            .map(|phase| {
                if !counted {
                    return (phase.id - first) as f64 * PHASE_PROGRESS;
                }
                let start = at;
                let updates: u64 = phase.tasks.iter().filter_map(|t| t.updates).sum();
                at += updates as f64 / tasks;
                start
            })
            .collect()
    }
}

/// The phase in force at progress `p`, given each phase's start
/// (increasing): the last to have begun, else the first.
///
/// ```
/// use braid::lbfile::phase_at;
/// assert_eq!(phase_at(&[0.0, 10.0, 10.0, 30.0], 10.0), 2);
/// assert_eq!(phase_at(&[0.0, 10.0], 9.9), 0);
/// assert_eq!(phase_at(&[5.0, 10.0], 0.0), 0);
/// ```
pub fn phase_at(starts: &[f64], p: f64) -> usize {
    starts.partition_point(|&s| s <= p).saturating_sub(1)
}

/// One task's values phase after phase (`None`: none in that phase),
/// each gap filled the way every reader of a recording fills it: with the
/// value of the phase before, else of the first phase after; `None` if
/// the task has no value at all.
///
/// ```
/// use braid::lbfile::fill_gaps;
/// assert_eq!(fill_gaps(&[None, Some(2), None, Some(5)]), Some(vec![2, 2, 2, 5]));
/// assert_eq!(fill_gaps::<u8>(&[None, None]), None);
/// ```
pub fn fill_gaps<T: Copy>(series: &[Option<T>]) -> Option<Vec<T>> {
    let mut last = series.iter().flatten().next().copied()?;
    Some(
        series
            .iter()
            .map(|v| {
                last = v.unwrap_or(last);
                last
            })
            .collect(),
    )
}

/// Why a directory cannot be read: the file, and what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The directory cannot be listed.
    #[error("cannot read the directory {dir}: {source}")]
    Dir {
        /// The directory.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The directory holds no `data.<N>.json`.
    #[error("{0} holds no LB data files (data.0.json, data.1.json, ...)")]
    Empty(PathBuf),
    /// A file is missing from the numbering.
    #[error("{missing} is missing: the files are numbered 0 to {last}, each once")]
    Gap {
        /// The file that should be there.
        missing: PathBuf,
        /// The highest number found.
        last: usize,
    },
    /// A file cannot be read or is not JSON.
    #[error("{file}: {problem}")]
    File {
        /// The file.
        file: PathBuf,
        /// Why.
        problem: String,
    },
    /// A file does not follow vt's schema.
    #[error("{file}: {source}")]
    Schema {
        /// The file.
        file: PathBuf,
        /// The phase and field.
        source: schema::SchemaError,
    },
    /// The files follow the schema but do not make one recording.
    #[error("{file}: phase {phase}: {problem}")]
    Content {
        /// The file.
        file: PathBuf,
        /// The phase's id.
        phase: u64,
        /// What is wrong.
        problem: String,
    },
}

/// The `data.<N>.json` files of `dir`, by `N`, each there once.
fn files(dir: &Path) -> Result<Vec<PathBuf>, ReadError> {
    let entries = std::fs::read_dir(dir).map_err(|source| ReadError::Dir {
        dir: dir.to_path_buf(),
        source,
    })?;
    let mut numbers = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let number = name
            .to_str()
            .and_then(|n| n.strip_prefix("data.")?.strip_suffix(".json"))
            .and_then(|n| n.parse::<usize>().ok());
        if let Some(n) = number {
            numbers.push(n);
        }
    }
    numbers.sort_unstable();
    let Some(&last) = numbers.last() else {
        return Err(ReadError::Empty(dir.to_path_buf()));
    };
    if last >= MAX_FILES {
        return Err(ReadError::File {
            file: dir.join(format!("data.{last}.json")),
            problem: format!("braid reads at most {MAX_FILES} processing elements"),
        });
    }
    let path = |n: usize| dir.join(format!("data.{n}.json"));
    if let Some(missing) = (0..=last).find(|n| numbers.binary_search(n).is_err()) {
        return Err(ReadError::Gap {
            missing: path(missing),
            last,
        });
    }
    Ok((0..=last).map(path).collect())
}

/// Reads every `data.<N>.json` in `dir` and checks each against vt's
/// schema; a task listed twice in one phase is refused.
pub fn read_dir(dir: &Path) -> Result<Recording, ReadError> {
    let paths = files(dir)?;
    let mut phases: BTreeMap<u64, Vec<Task>> = BTreeMap::new();
    let mut total = 0usize;
    for (pe, file) in paths.iter().enumerate() {
        let fail = |problem: String| ReadError::File {
            file: file.clone(),
            problem,
        };
        let text = braid_noise::files::read_text(file, MAX_FILE_BYTES)
            .map_err(|e| fail(format!("cannot read it: {e}")))?;
        let v: Value = serde_json::from_str(&text).map_err(|e| fail(format!("not JSON: {e}")))?;
        drop(text);
        schema::check(&v).map_err(|source| ReadError::Schema {
            file: file.clone(),
            source,
        })?;
        for (i, phase) in v["phases"].as_array().into_iter().flatten().enumerate() {
            let id = phase["id"].as_u64().unwrap_or(i as u64);
            let out = phases.entry(id).or_default();
            for task in phase["tasks"].as_array().into_iter().flatten() {
                let entity = &task["entity"];
                if entity["migratable"] != Value::Bool(true) {
                    continue;
                }
                total += 1;
                if total > MAX_TASKS {
                    return Err(fail(format!(
                        "more than {MAX_TASKS} tasks over all phases and files"
                    )));
                }
                let time_s = task["time"].as_f64().unwrap_or(0.0);
                if time_s < 0.0 {
                    return Err(ReadError::Content {
                        file: file.clone(),
                        phase: id,
                        problem: format!("a task's time is {time_s}, below 0"),
                    });
                }
                // `updates` is braid's own key in vt's free-form
                // `user_defined`: absent is "not recorded", anything but a
                // count is an error, never read as absent.
                let updates = match task["user_defined"].get("updates") {
                    None | Some(Value::Null) => None,
                    Some(v) => Some(v.as_u64().ok_or_else(|| ReadError::Content {
                        file: file.clone(),
                        phase: id,
                        problem: format!(
                            "a task's user_defined.updates is {v}, not a whole number of updates"
                        ),
                    })?),
                };
                out.push(Task {
                    id: entity
                        .get("seq_id")
                        .or_else(|| entity.get("id"))
                        .and_then(Value::as_u64)
                        .unwrap_or(0),
                    pe,
                    time_s,
                    updates,
                });
            }
        }
    }
    let phases = phases
        .into_iter()
        .map(|(id, mut tasks)| {
            tasks.sort_by_key(|t| t.id);
            if let Some(w) = tasks.windows(2).find(|w| w[0].id == w[1].id) {
                return Err(ReadError::Content {
                    file: paths[w[1].pe].clone(),
                    phase: id,
                    problem: format!(
                        "task {} is listed twice (also in {})",
                        w[1].id,
                        paths[w[0].pe].display()
                    ),
                });
            }
            Ok(Phase { id, tasks })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Recording {
        pes: paths.len(),
        phases,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn task(id: u64, node: u64, time: f64, updates: Option<u64>) -> Value {
        let mut t = json!({
            "entity": {"type": "object", "seq_id": id, "home": node, "migratable": true, "collection_id": 0},
            "node": node, "resource": "cpu", "time": time
        });
        if let Some(u) = updates {
            t["user_defined"] = json!({ "updates": u });
        }
        t
    }

    fn write(dir: &Path, pe: usize, phases: Value) {
        let file = json!({"type": "LBDatafile", "metadata": {"rank": pe}, "phases": phases});
        std::fs::write(dir.join(format!("data.{pe}.json")), file.to_string()).unwrap();
    }

    #[test]
    fn the_files_tasks_are_read_by_phase_and_id_with_their_processing_element() {
        let dir = crate::scratch_dir("lbfile-read");
        let noise = json!({"entity": {"type": "object", "seq_id": 9, "home": 0, "migratable": false},
                           "node": 0, "resource": "cpu", "time": 7.0});
        write(
            &dir,
            0,
            json!([{"id": 3, "tasks": [task(2, 0, 0.5, Some(10)), noise]},
                   {"id": 4, "tasks": [task(0, 0, 0.25, None)]}]),
        );
        write(
            &dir,
            1,
            json!([{"id": 3, "tasks": [task(1, 1, 1.5, Some(30))]}]),
        );
        let r = read_dir(&dir).unwrap();
        assert_eq!(r.pes, 2);
        assert_eq!(r.phases.len(), 2);
        let p = &r.phases[0];
        assert_eq!(p.id, 3);
        let got: Vec<(u64, usize, f64, Option<u64>)> = p
            .tasks
            .iter()
            .map(|t| (t.id, t.pe, t.time_s, t.updates))
            .collect();
        assert_eq!(got, vec![(1, 1, 1.5, Some(30)), (2, 0, 0.5, Some(10))]);
        assert_eq!(r.phases[1].tasks[0].updates, None);
    }

    #[test]
    fn a_bad_directory_is_refused_naming_the_file_the_phase_and_the_field() {
        let dir = crate::scratch_dir("lbfile-bad");
        let err = |dir: &Path| read_dir(dir).unwrap_err().to_string();
        assert!(
            err(&dir).contains("holds no LB data files"),
            "{}",
            err(&dir)
        );
        write(&dir, 1, json!([]));
        assert!(
            err(&dir).contains("data.0.json is missing"),
            "{}",
            err(&dir)
        );
        write(
            &dir,
            0,
            json!([{"id": 5, "tasks": [task(1, 0, 1.0, None)]}]),
        );
        let mut broken = task(2, 1, 1.0, None);
        broken["time"] = json!(1);
        write(&dir, 1, json!([{"id": 5, "tasks": [broken]}]));
        let e = err(&dir);
        assert!(e.contains("data.1.json") && e.contains("phase 5"), "{e}");
        assert!(e.contains("phases[0].tasks[0].time"), "{e}");
        write(
            &dir,
            1,
            json!([{"id": 5, "tasks": [task(1, 1, 1.0, None)]}]),
        );
        let e = err(&dir);
        assert!(
            e.contains("phase 5") && e.contains("task 1 is listed twice"),
            "{e}"
        );
        write(
            &dir,
            1,
            json!([{"id": 5, "tasks": [task(2, 1, -1.0, None)]}]),
        );
        assert!(err(&dir).contains("below 0"), "{}", err(&dir));
        std::fs::write(dir.join("data.1.json"), "{").unwrap();
        assert!(err(&dir).contains("data.1.json: not JSON"), "{}", err(&dir));
    }
}
