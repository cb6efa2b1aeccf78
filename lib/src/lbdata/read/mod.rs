//! DARMA vt's LB data files as a format: the schema's rules ([`schema`])
//! and a reader of a directory of them ([`read_dir`]), for whatever
//! replays recorded loads (`workload = lbdata:DIR`) or applies recorded
//! owners. Writing a braid run in the format is [`super::write`]'s job.
//!
//! A directory holds `data.<N>.json` for the processing elements `N = 0,
//! 1, ...` (vt's ranks, braid's threads), every one of them, each valid
//! against vt's schema and holding the same phases; a path `DIR/NAME`
//! that is not a directory names `DIR/NAME.<N>.json` instead (LBAF's
//! `data_stem`). A file is JSON or brotli-compressed JSON (vt compresses
//! by default; told apart by content, not name). What is read of it: per phase, each migratable
//! task's id (`seq_id`, else `id`), the processing element whose file
//! lists it, its `time`, and, if the file says, the updates it made in
//! that phase (braid's `user_defined.updates`). Non-migratable tasks (in
//! braid's files, the noise) and communications are not read.

pub(crate) mod schema;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;
use serde_json::value::RawValue;

/// The largest file read, in bytes.
const MAX_FILE_BYTES: u64 = 256 << 20;
/// The most processing elements (files) read.
const MAX_FILES: usize = 1 << 16;
/// The most tasks read over all phases and files: 2^23 task entries (a
/// task of vt's takes 110 bytes of JSON or more, so about what the bound
/// below lets through) bound what a reader allocates.
const MAX_TASKS: usize = 1 << 23;
/// The most JSON read over all files, decompressed: 512 MiB, which bounds
/// the reader's time and memory (a gigabyte of 8 million tasks took 25 s
/// and 1.16 GB to read; half of it, half of each). A recording past it is
/// refused at the file that passes it, or before any is read when the
/// files' sizes on disk already do.
const MAX_TOTAL_BYTES: u64 = 512 << 20;

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
    /// The updates its `time` is the cost of, if not `updates`: its
    /// `user_defined.pace` (braid's files since they pace tasks to the
    /// slowest thread; `lbdata` says why).
    pub pace: Option<f64>,
}

impl Task {
    /// Its cost per update, seconds, if known: `time` over the pace, else
    /// over its updates; `None` if it made no update (or its pace is 0).
    pub fn per_update_s(&self) -> Option<f64> {
        match (self.pace, self.updates) {
            (_, Some(0)) | (None, None) => None,
            (Some(p), _) if p > 0.0 => Some(self.time_s / p),
            (Some(_), _) => None,
            (None, Some(u)) => Some(self.time_s / u as f64),
        }
    }
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
pub(crate) const PHASE_PROGRESS: f64 = 100.0;

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
    /// first id) / step`, `step` being the greatest common divisor of the
    /// steps between ids (a recording of every 100th phase steps by 100),
    /// so a phase vt left out (`identical_to_previous`, `skipped`) keeps
    /// the one before it.
    pub fn starts(&self) -> Vec<f64> {
        let tasks = self.task_ids().len().max(1) as f64;
        let first = self.phases.first().map_or(0, |p| p.id);
        let step = self
            .phases
            .windows(2)
            .map(|w| w[1].id - w[0].id)
            .fold(0, gcd)
            .max(1);
        let counted = self.counted();
        let mut at = 0.0;
        self.phases
            .iter()
            .map(|phase| {
                if !counted {
                    return ((phase.id - first) / step) as f64 * PHASE_PROGRESS;
                }
                let start = at;
                let updates: u64 = phase.tasks.iter().filter_map(|t| t.updates).sum();
                at += updates as f64 / tasks;
                start
            })
            .collect()
    }
}

/// The greatest common divisor; `gcd(0, b) = b`.
fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The phase in force at progress `p`, given each phase's start
/// (increasing): the last to have begun, else the first.
///
/// ```
/// use braid::phase_at;
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
/// use braid::fill_gaps;
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
    /// The directory holds no `<stem>.<N>.json`.
    #[error("{dir} holds no LB data files ({stem}.0.json, {stem}.1.json, ...)")]
    Empty {
        /// The directory.
        dir: PathBuf,
        /// The files' stem (`data`).
        stem: String,
    },
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

/// Where a recording's files are: a directory and the stem of their
/// names, `<stem>.<N>.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Files {
    /// The directory.
    pub dir: PathBuf,
    /// The names' stem: `data` unless a path said otherwise.
    pub stem: String,
}

impl Files {
    /// `path` as a reader takes it: a directory holds `data.<N>.json`;
    /// anything else is a stem, `DIR/NAME` naming `DIR/NAME.<N>.json`.
    pub fn locate(path: &Path) -> Files {
        match (path.is_dir(), path.file_name().and_then(|n| n.to_str())) {
            (false, Some(stem)) => Files {
                dir: match path.parent() {
                    Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                    _ => PathBuf::from("."),
                },
                stem: stem.to_string(),
            },
            _ => Files {
                dir: path.to_path_buf(),
                stem: "data".into(),
            },
        }
    }

    /// Processing element `n`'s file.
    pub fn path(&self, n: usize) -> PathBuf {
        self.dir.join(format!("{}.{n}.json", self.stem))
    }

    /// The numbers `N` of the `<stem>.<N>.json` in the directory, sorted.
    pub fn numbers(&self) -> Result<Vec<usize>, ReadError> {
        let entries = std::fs::read_dir(&self.dir).map_err(|source| ReadError::Dir {
            dir: self.dir.clone(),
            source,
        })?;
        let mut numbers = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(text) = name
                .to_str()
                .and_then(|n| n.strip_prefix(self.stem.as_str())?.strip_prefix('.'))
                .and_then(|n| n.strip_suffix(".json"))
            else {
                continue;
            };
            let Ok(number) = text.parse::<usize>() else {
                continue;
            };
            // `+1` and `01` parse as 1, but the file of 1 is `data.1.json`:
            // read as 1, the name would be looked for and not found.
            if text != number.to_string() {
                return Err(ReadError::File {
                    file: self.dir.join(&name),
                    problem: format!(
                        "not numbered as vt numbers its files: {}.<N>.json with N written \
                         plainly (0, 1, 2, ...), here {number}",
                        self.stem
                    ),
                });
            }
            numbers.push(number);
        }
        numbers.sort_unstable();
        Ok(numbers)
    }
}

/// The files of a recording, by `N`, each there once.
fn files(at: &Files) -> Result<Vec<PathBuf>, ReadError> {
    let numbers = at.numbers()?;
    let Some(&last) = numbers.last() else {
        return Err(ReadError::Empty {
            dir: at.dir.clone(),
            stem: at.stem.clone(),
        });
    };
    if last >= MAX_FILES {
        return Err(ReadError::File {
            file: at.path(last),
            problem: format!("braid reads at most {MAX_FILES} processing elements"),
        });
    }
    if let Some(missing) = (0..=last).find(|n| numbers.binary_search(n).is_err()) {
        return Err(ReadError::Gap {
            missing: at.path(missing),
            last,
        });
    }
    Ok((0..=last).map(|n| at.path(n)).collect())
}

/// `then` of a file's JSON, unparsed: its text as read, or decompressed
/// when vt wrote it brotli-compressed (its default). Told apart by
/// content: JSON text begins with `{` (after blanks and a byte-order
/// mark); brotli has no magic number, so anything else is decompressed,
/// and a `{` file that is not JSON is tried too.
/// `limit` bounds the decompressed text (the file's share of what the
/// recording may still hold); the JSON's length in bytes is returned with
/// `then`'s value.
fn with_json<T>(
    bytes: &[u8],
    limit: u64,
    then: impl FnOnce(&RawValue) -> T,
) -> Result<(T, u64), String> {
    let text = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes);
    let looks_like_json = text.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    let plain = looks_like_json.then(|| serde_json::from_slice::<&RawValue>(text));
    if let Some(Ok(raw)) = plain {
        return Ok((then(raw), text.len() as u64));
    }
    match unbrotli(bytes, limit) {
        Ok(raw) => match serde_json::from_slice::<&RawValue>(&raw) {
            Ok(json) => Ok((then(json), raw.len() as u64)),
            Err(e) => Err(format!("brotli-compressed, but not JSON inside: {e}")),
        },
        Err(Unbrotli::TooLarge(problem)) => Err(problem),
        Err(Unbrotli::NotBrotli) => Err(match plain {
            Some(Err(e)) => format!("not JSON: {e}"),
            _ => "neither JSON nor brotli-compressed JSON".into(),
        }),
    }
}

/// What the reader takes of a file that passed the schema, and no more:
/// a task's other fields and the communications are skipped unbuilt.
#[derive(serde::Deserialize)]
struct FileView {
    phases: Vec<PhaseView>,
}

#[derive(serde::Deserialize)]
struct PhaseView {
    id: serde_json::Number,
    tasks: Vec<TaskView>,
}

#[derive(serde::Deserialize)]
struct TaskView {
    entity: EntityView,
    time: f64,
    user_defined: Option<Box<UserView>>,
}

#[derive(serde::Deserialize)]
struct EntityView {
    migratable: bool,
    seq_id: Option<serde_json::Number>,
    id: Option<serde_json::Number>,
}

/// braid's own keys in vt's free-form `user_defined`, as they come.
#[derive(serde::Deserialize)]
struct UserView {
    updates: Option<Value>,
    pace: Option<Value>,
}

/// Why a file's bytes did not decompress.
enum Unbrotli {
    /// They are not a brotli stream.
    NotBrotli,
    /// They are one, but it holds more than the bound (named).
    TooLarge(String),
}

/// `bytes` decompressed, refused past `limit` (a small file may hold a
/// large one): the decompressor stops at the bound, not at the stream's
/// end.
fn unbrotli(bytes: &[u8], limit: u64) -> Result<Vec<u8>, Unbrotli> {
    let mut out = Vec::new();
    brotli::Decompressor::new(bytes, 1 << 16)
        .take(limit + 1)
        .read_to_end(&mut out)
        .map_err(|_| Unbrotli::NotBrotli)?;
    if out.len() as u64 > limit {
        return Err(Unbrotli::TooLarge(match limit == MAX_FILE_BYTES {
            true => format!(
                "brotli-compressed JSON of more than {} MiB, the most braid reads of one file",
                MAX_FILE_BYTES >> 20
            ),
            false => too_much_json(),
        }));
    }
    Ok(out)
}

/// The refusal of a recording past [`MAX_TOTAL_BYTES`].
fn too_much_json() -> String {
    format!(
        "with the files before it, the recording holds more than {} MiB of JSON \
         (decompressed), the most braid reads of one recording",
        MAX_TOTAL_BYTES >> 20
    )
}

/// Reads every file of the recording at `path` (a directory of
/// `data.<N>.json`, or a stem: see [`Files::locate`]) and checks each
/// against vt's schema; files with different phases, and a task listed
/// twice in one phase, are refused.
pub fn read_dir(path: &Path) -> Result<Recording, ReadError> {
    let paths = files(&Files::locate(path))?;
    refuse_too_much_on_disk(&paths)?;
    let mut first_ids: Option<Vec<u64>> = None;
    let mut phases: BTreeMap<u64, Vec<Task>> = BTreeMap::new();
    let mut total = 0usize;
    let mut json_bytes = 0u64;
    for (pe, file) in paths.iter().enumerate() {
        let fail = |problem: String| ReadError::File {
            file: file.clone(),
            problem,
        };
        let (view, len) = read_view(file, MAX_TOTAL_BYTES - json_bytes)?;
        json_bytes += len;
        let ids = phase_ids(&view.phases).map_err(fail)?;
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        // A processing element that recorded nothing (`"phases": []`, as
        // in vt's and LBAF's sets) holds no tasks; the others hold the same
        // phases.
        match &first_ids {
            _ if ids.is_empty() => {}
            None => first_ids = Some(sorted),
            Some(first) if *first != sorted => {
                return Err(fail(format!(
                    "its phases ({}) are not those of the files before it ({}): files of \
                     different runs?",
                    ids_text(&sorted),
                    ids_text(first)
                )));
            }
            Some(_) => {}
        }
        for (phase, id) in view.phases.into_iter().zip(ids) {
            let out = phases.entry(id).or_default();
            for task in phase.tasks.into_iter().filter(|t| t.entity.migratable) {
                total += 1;
                if total > MAX_TASKS {
                    return Err(fail(format!(
                        "more than {MAX_TASKS} tasks over all phases and files"
                    )));
                }
                let content = |problem: String| ReadError::Content {
                    file: file.clone(),
                    phase: id,
                    problem,
                };
                out.push(task_of(task, pe).map_err(content)?);
            }
        }
    }
    let phases = phases
        .into_iter()
        .map(|(id, tasks)| each_task_once(id, tasks, &paths))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Recording {
        pes: paths.len(),
        phases,
    })
}

/// Refuses a recording whose files already hold more than
/// [`MAX_TOTAL_BYTES`] on disk, at the file that passes it, before any is
/// read.
fn refuse_too_much_on_disk(paths: &[PathBuf]) -> Result<(), ReadError> {
    paths.iter().try_fold(0u64, |sum, file| {
        let len = std::fs::metadata(file).map_or(0, |m| m.len());
        match sum + len > MAX_TOTAL_BYTES {
            true => Err(ReadError::File {
                file: file.clone(),
                problem: too_much_json(),
            }),
            false => Ok(sum + len),
        }
    })?;
    Ok(())
}

/// One file, checked against vt's schema and read, with the bytes of JSON
/// it held; at most `left` bytes of JSON (what the recording's bound
/// leaves) are read.
fn read_view(file: &Path, left: u64) -> Result<(FileView, u64), ReadError> {
    let fail = |problem: String| ReadError::File {
        file: file.to_path_buf(),
        problem,
    };
    let bytes = braid_noise::files::read_bytes(file, MAX_FILE_BYTES)
        .map_err(|e| fail(format!("cannot read it: {e}")))?;
    let (view, len) = with_json(&bytes, left.min(MAX_FILE_BYTES), |raw| {
        schema::check_raw(raw).map_err(|source| ReadError::Schema {
            file: file.to_path_buf(),
            source,
        })?;
        serde_json::from_str::<FileView>(raw.get()).map_err(|e| fail(format!("not JSON: {e}")))
    })
    .map_err(fail)?;
    Ok((view?, len))
}

/// A migratable task of processing element `pe`, as braid reads it, or
/// what is wrong with it.
fn task_of(task: TaskView, pe: usize) -> Result<Task, String> {
    let time_s = task.time;
    if time_s < 0.0 {
        return Err(format!("a task's time is {time_s}, below 0"));
    }
    // `updates` is braid's own key in vt's free-form `user_defined`:
    // absent is "not recorded", anything but a count is an error, never
    // read as absent.
    let user = task
        .user_defined
        .map_or((None, None), |u| (u.updates, u.pace));
    let updates = match user.0 {
        None => None,
        Some(v) => Some(v.as_u64().ok_or_else(|| {
            format!("a task's user_defined.updates is {v}, not a whole number of updates")
        })?),
    };
    let pace = match user.1 {
        None => None,
        Some(v) => Some(
            v.as_f64()
                .filter(|p| p.is_finite() && *p >= 0.0)
                .ok_or_else(|| {
                    format!("a task's user_defined.pace is {v}, not a count of updates")
                })?,
        ),
    };
    // vt's ids are unsigned: a negative or fractional one is not vt's, and
    // would otherwise become some other task.
    let (field, number) = match (task.entity.seq_id, task.entity.id) {
        (Some(n), _) => ("seq_id", n),
        (None, Some(n)) => ("id", n),
        (None, None) => return Err("a task has neither seq_id nor id".into()),
    };
    let id = number.as_u64().ok_or_else(|| {
        format!("a task's entity.{field} is {number}: vt's ids are whole numbers from 0")
    })?;
    Ok(Task {
        id,
        pe,
        time_s,
        updates,
        pace,
    })
}

/// Phase `id`'s tasks in id order, each listed once over all the files.
fn each_task_once(id: u64, mut tasks: Vec<Task>, paths: &[PathBuf]) -> Result<Phase, ReadError> {
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
}

/// A file's phase ids, in its order: each a whole number from 0 (vt's
/// phase ids are unsigned) and each once.
fn phase_ids(phases: &[PhaseView]) -> Result<Vec<u64>, String> {
    let mut seen = std::collections::BTreeSet::new();
    phases
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let id = p.id.as_u64().ok_or_else(|| {
                format!(
                    "phases[{i}].id is {}: vt's phase ids are whole numbers from 0",
                    p.id
                )
            })?;
            match seen.insert(id) {
                true => Ok(id),
                false => Err(format!("phase {id} is listed twice (phases[{i}])")),
            }
        })
        .collect()
}

/// Phase ids as a reader would write them: `0-9`, `0, 100, 200`.
fn ids_text(ids: &[u64]) -> String {
    match ids {
        [] => "none".into(),
        [a, .., b] if ids.windows(2).all(|w| w[1] == w[0] + 1) => format!("{a}-{b}"),
        _ if ids.len() <= 6 => ids
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        _ => format!(
            "{} phases from {} to {}",
            ids.len(),
            ids[0],
            ids[ids.len() - 1]
        ),
    }
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
        let dir = braid_testkit::scratch_dir("lbfile-read");
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
            json!([{"id": 3, "tasks": [task(1, 1, 1.5, Some(30))]}, {"id": 4, "tasks": []}]),
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
        let dir = braid_testkit::scratch_dir("lbfile-bad");
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

    /// `bytes` brotli-compressed.
    fn compressed(bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let params = brotli::enc::BrotliEncoderParams::default();
        brotli::BrotliCompress(&mut &bytes[..], &mut out, &params).unwrap();
        out
    }

    #[test]
    fn brotli_compressed_files_are_read_by_their_content_as_vt_writes_them() {
        let dir = braid_testkit::scratch_dir("lbfile-brotli");
        let phases = json!([{"id": 0, "tasks": [task(0, 0, 0.5, Some(4))]}]);
        write(&dir, 0, phases);
        let plain = read_dir(&dir).unwrap();
        let file = dir.join("data.0.json");
        let packed = compressed(&std::fs::read(&file).unwrap());
        assert_ne!(packed.first(), Some(&b'{'));
        std::fs::write(&file, &packed).unwrap();
        assert_eq!(read_dir(&dir).unwrap(), plain);
        // Neither JSON nor brotli: named as such.
        std::fs::write(&file, b"\x00\x01garbage").unwrap();
        let e = read_dir(&dir).unwrap_err().to_string();
        assert!(e.contains("neither JSON nor brotli"), "{e}");
        // LBAF's own compressed set (tests/vt/README.md): one of its files
        // is a brotli stream whose first byte is not a compressed block.
        let lbaf = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/vt/lbaf-compressed");
        let r = read_dir(&lbaf).unwrap();
        assert_eq!(r.pes, 4);
        assert!(r.phases.iter().any(|p| !p.tasks.is_empty()), "{r:?}");
    }

    #[test]
    fn a_path_that_is_no_directory_is_the_stem_of_its_files_names() {
        let dir = braid_testkit::scratch_dir("lbfile-stem");
        let toy = |pe: usize| {
            let file =
                json!({"phases": [{"id": 0, "tasks": [task(pe as u64, pe as u64, 1.0, None)]}]});
            std::fs::write(dir.join(format!("toy.{pe}.json")), file.to_string()).unwrap();
        };
        toy(0);
        toy(1);
        let r = read_dir(&dir.join("toy")).unwrap();
        assert_eq!((r.pes, r.phases[0].tasks.len()), (2, 2));
        let e = read_dir(&dir).unwrap_err().to_string();
        assert!(e.contains("(data.0.json, data.1.json, ...)"), "{e}");
        let e = read_dir(&dir.join("other")).unwrap_err().to_string();
        assert!(e.contains("(other.0.json, other.1.json, ...)"), "{e}");
    }

    #[test]
    fn files_that_hold_different_phases_are_refused_as_two_recordings() {
        let dir = braid_testkit::scratch_dir("lbfile-phases");
        let phases = |ids: &[u64], pe: u64| {
            Value::Array(
                ids.iter()
                    .map(|&id| json!({"id": id, "tasks": [task(pe, pe, 1.0, None)]}))
                    .collect(),
            )
        };
        write(&dir, 0, phases(&[0, 1, 2], 0));
        write(&dir, 1, phases(&[0, 1, 2], 1));
        assert_eq!(read_dir(&dir).unwrap().phases.len(), 3);
        write(&dir, 1, phases(&[0, 1], 1));
        let e = read_dir(&dir).unwrap_err().to_string();
        assert!(
            e.contains("data.1.json") && e.contains("its phases (0-1)") && e.contains("(0-2)"),
            "{e}"
        );
        // One that recorded nothing is a processing element without tasks.
        write(&dir, 1, json!([]));
        assert_eq!(read_dir(&dir).unwrap().phases[0].tasks.len(), 1);
    }

    /// A negative phase id was read as the phase's position, a repeated
    /// one merged and a negative seq_id read as task 0: each is refused,
    /// naming it; phases listed out of order are read in id order.
    #[test]
    fn ids_outside_vts_are_refused_and_phases_are_read_in_id_order() {
        let dir = braid_testkit::scratch_dir("lbfile-ids");
        let err = || read_dir(&dir).unwrap_err().to_string();
        write(
            &dir,
            0,
            json!([{"id": -1, "tasks": [task(0, 0, 1.0, None)]}]),
        );
        assert!(
            err().contains("phases[0].id is -1: vt's phase ids are whole numbers"),
            "{}",
            err()
        );
        write(
            &dir,
            0,
            json!([{"id": 2, "tasks": [task(0, 0, 1.0, None)]},
                   {"id": 2, "tasks": [task(1, 0, 1.0, None)]}]),
        );
        assert!(
            err().contains("phase 2 is listed twice (phases[1])"),
            "{}",
            err()
        );
        let mut negative = task(0, 0, 1.0, None);
        negative["entity"]["seq_id"] = json!(-3);
        write(&dir, 0, json!([{"id": 0, "tasks": [negative]}]));
        assert!(err().contains("entity.seq_id is -3"), "{}", err());
        write(
            &dir,
            0,
            json!([{"id": 7, "tasks": [task(0, 0, 2.0, None)]},
                   {"id": 3, "tasks": [task(0, 0, 1.0, None)]}]),
        );
        write(
            &dir,
            1,
            json!([{"id": 3, "tasks": [task(1, 1, 1.0, None)]},
                   {"id": 7, "tasks": [task(1, 1, 2.0, None)]}]),
        );
        let r = read_dir(&dir).unwrap();
        let ids: Vec<u64> = r.phases.iter().map(|p| p.id).collect();
        assert_eq!(ids, [3, 7]);
        assert_eq!(r.phases[1].tasks[0].time_s, 2.0);
    }

    /// `toy.+1.json` parses as 1 but is not `toy.1.json`: named as what it
    /// is, not as a missing `toy.1.json`.
    #[test]
    fn a_file_numbered_unlike_vt_is_named_as_such() {
        let dir = braid_testkit::scratch_dir("lbfile-plus");
        let phases = json!([{"id": 0, "tasks": [task(0, 0, 1.0, None)]}]);
        write(&dir, 0, phases.clone());
        let file = json!({"phases": phases});
        std::fs::write(dir.join("data.+1.json"), file.to_string()).unwrap();
        let e = read_dir(&dir).unwrap_err().to_string();
        assert!(
            e.contains("data.+1.json: not numbered as vt numbers its files"),
            "{e}"
        );
    }

    /// A brotli stream that decompresses past the bound is named with the
    /// bound, not as "neither JSON nor brotli".
    #[test]
    fn a_stream_that_decompresses_past_the_bound_names_the_bound() {
        let big = vec![b' '; 4096];
        let packed = compressed(&big);
        let e = with_json(&packed, 1024, |_| ()).unwrap_err();
        assert!(e.contains("more than 512 MiB of JSON"), "{e}");
        let e = with_json(&packed, 4095, |_| ()).unwrap_err();
        assert!(!e.contains("neither JSON nor brotli"), "{e}");
    }

    #[test]
    fn phases_recorded_every_100th_follow_one_another_and_a_gap_keeps_the_one_before() {
        let recording = |ids: &[u64]| Recording {
            pes: 1,
            phases: ids
                .iter()
                .map(|&id| Phase {
                    id,
                    tasks: vec![Task {
                        id: 0,
                        pe: 0,
                        time_s: 1.0,
                        updates: None,
                        pace: None,
                    }],
                })
                .collect(),
        };
        let p = PHASE_PROGRESS;
        assert_eq!(recording(&[0, 100, 200]).starts(), vec![0.0, p, 2.0 * p]);
        assert_eq!(recording(&[5, 6, 8]).starts(), vec![0.0, p, 3.0 * p]);
        assert_eq!(recording(&[0, 100, 300]).starts(), vec![0.0, p, 3.0 * p]);
        assert_eq!(recording(&[7]).starts(), vec![0.0]);
    }
}
