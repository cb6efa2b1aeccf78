//! The results file: one JSON record per finished sample, appended and
//! fsynced, so a suite can be killed at any moment (kill -9 included) and
//! resumed with no sample lost or run twice.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::ExperimentError;
use super::provenance::Provenance;
use super::suite::{Figure, Sample};
use braid::Build;
use braid::EngineKind;
use braid::MAX_RECORD_BYTES;
use braid::Report;

/// How a sample ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Status {
    Ok,
    Failed,
}

/// One line of a results file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Record {
    pub suite: String,
    pub suite_digest: String,
    pub figure: Figure,
    pub engine: EngineKind,
    pub sample: Sample,
    pub key: String,
    pub status: Status,
    /// Why a failed sample failed (exit status and the end of its stderr,
    /// or the timeout).
    pub error: Option<String>,
    /// Real seconds the sample's process took.
    pub wall_s: f64,
    pub provenance: Provenance,
    /// The sample's `braid run`/`braid sim` report, when it finished.
    pub report: Option<Report>,
}

#[cfg(test)]
impl Record {
    /// A finished record of `sample` for tests, with `report`.
    pub(crate) fn for_tests(
        figure: Figure,
        engine: EngineKind,
        sample: Sample,
        report: Option<Report>,
    ) -> Record {
        Record {
            suite: "t".into(),
            suite_digest: "d".into(),
            figure,
            engine,
            sample,
            key: "k".into(),
            status: Status::Ok,
            error: None,
            wall_s: 0.1,
            provenance: Provenance::for_tests(),
            report,
        }
    }
}

/// A results file opened for appending, and what it already holds.
pub(crate) struct Opened {
    pub file: ResultsFile,
    /// Keys of the samples recorded as done.
    pub done: HashSet<String>,
    /// Keys of the samples recorded only as failed.
    pub failed: HashSet<String>,
    /// The line number of a torn last line that was cut off (its sample
    /// runs again).
    pub torn: Option<usize>,
}

/// An open results file, positioned at its end.
pub(crate) struct ResultsFile {
    file: File,
    path: PathBuf,
    /// Whether this process made the file: if it holds nothing when
    /// closed (the suite failed before its first record), it is removed
    /// rather than left empty.
    created: bool,
}

impl Drop for ResultsFile {
    fn drop(&mut self) {
        if self.created && self.file.metadata().is_ok_and(|m| m.len() == 0) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl ResultsFile {
    /// Opens (or creates) `path` for the suite with `digest`, and returns the
    /// keys of the samples it holds as done, and of those it holds only as
    /// failed (to run again). A torn last line (a write cut short by a kill)
    /// is cut off; a record of another suite, or a broken line before the
    /// last, is an error, and nothing is written. Blank lines are skipped.
    ///
    /// Only the file's own directory is created, and only when its parent
    /// exists (`results/` in a fresh clone); a path that is not a regular
    /// file (`/dev/full`, a FIFO) is refused before it is read.
    ///
    /// A file holds one build's records: records another braid wrote are
    /// refused (their numbers and this binary's would be one suite's
    /// samples from two programs).
    pub(crate) fn open(path: &Path, digest: &str) -> Result<Opened, ExperimentError> {
        let io = |source| ExperimentError::Open {
            path: path.to_path_buf(),
            source,
        };
        let created = !path.exists();
        let mut file = open_locked(path)?;
        let Scan {
            done,
            mut failed,
            good_end,
            unterminated,
            torn,
        } = scan(
            path,
            BufReader::new((&mut file).take(braid::MAX_RESULTS_BYTES)),
            digest,
            &Build::this(),
        )?;
        if good_end < file.metadata().map_err(io)?.len() {
            file.set_len(good_end).map_err(io)?;
        }
        file.seek(SeekFrom::End(0)).map_err(io)?;
        if unterminated {
            file.write_all(b"\n").map_err(io)?;
        }
        failed.retain(|k| !done.contains(k));
        Ok(Opened {
            file: ResultsFile {
                file,
                path: path.to_path_buf(),
                created,
            },
            done,
            failed,
            torn,
        })
    }

    /// Appends one record as one line and waits until it is on disk.
    pub(crate) fn append(&mut self, record: &Record) -> Result<(), ExperimentError> {
        let mut line = serde_json::to_string(record).expect("a record serializes");
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.sync_data())
            .map_err(|source| ExperimentError::Results {
                path: self.path.clone(),
                source,
            })
    }
}

/// Opens `path` for reading and appending, creating it (and its own
/// directory, when that directory's parent exists), refusing what is not a
/// regular file, and taking the one-writer lock.
fn open_locked(path: &Path) -> Result<File, ExperimentError> {
    let io = |source| ExperimentError::Open {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        && !dir.exists()
    {
        let grand = dir.parent().filter(|d| !d.as_os_str().is_empty());
        if grand.is_some_and(|g| !g.is_dir()) {
            return Err(io(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!(
                    "its directory's parent {} does not exist",
                    grand.unwrap_or(dir).display()
                ),
            )));
        }
        std::fs::create_dir(dir).map_err(io)?;
    }
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        return Err(io(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        )));
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(io)?;
    // One writer per file: two suites appending to one file would run the
    // same samples twice. The lock dies with the process.
    if file.try_lock().is_err() {
        return Err(ExperimentError::Busy {
            path: path.to_path_buf(),
        });
    }
    Ok(file)
}

/// What resuming needs of a record: which suite and sample, and how it
/// ended. The report is not read (a record written by an older braid, whose
/// report lacks a newer field, still counts as done).
#[derive(Deserialize)]
struct Head {
    suite: String,
    suite_digest: String,
    key: String,
    status: Status,
    provenance: Provenance,
}

/// The samples a results file holds as done or failed, and the length of
/// its intact part.
struct Scan {
    done: HashSet<String>,
    failed: HashSet<String>,
    good_end: u64,
    /// The last record is whole but has no newline (a file edited by
    /// hand): kept, and the newline added before anything is appended.
    unterminated: bool,
    /// The line number of a torn last line, cut off.
    torn: Option<usize>,
}

/// Reads a results file a line at a time (memory for one line, not the
/// file): which samples it holds, and where its intact part ends.
fn scan(
    path: &Path,
    mut input: impl BufRead,
    digest: &str,
    build: &Build,
) -> Result<Scan, ExperimentError> {
    let mut out = Scan {
        done: HashSet::new(),
        failed: HashSet::new(),
        good_end: 0,
        unterminated: false,
        torn: None,
    };
    let mut line = String::new();
    for number in 1.. {
        line.clear();
        let read = record_line(&mut input, &mut line, path, number, |source| {
            ExperimentError::Open {
                path: path.to_path_buf(),
                source,
            }
        })?;
        if read == 0 {
            break;
        }
        if line.trim().is_empty() && line.ends_with('\n') {
            out.good_end += read as u64;
            continue;
        }
        let (text, whole_line) = match line.strip_suffix('\n') {
            Some(text) => (text, true),
            None => (line.as_str(), false),
        };
        match serde_json::from_str::<Head>(text) {
            Ok(r) if r.suite_digest != digest => {
                return Err(ExperimentError::OtherSuite {
                    path: path.to_path_buf(),
                    theirs: r.suite,
                });
            }
            Ok(r) if r.provenance.build != *build => {
                return Err(ExperimentError::OtherBuild {
                    path: path.to_path_buf(),
                    suite: r.suite,
                    theirs: Box::new(r.provenance.build),
                    ours: Box::new(build.clone()),
                });
            }
            Ok(r) => {
                match r.status {
                    Status::Ok => out.done.insert(r.key),
                    Status::Failed => out.failed.insert(r.key),
                };
                out.good_end += read as u64;
                out.unterminated = !whole_line;
            }
            // A line that does not parse is torn (a write cut short by a
            // kill) only if nothing follows it.
            Err(_) if !whole_line || input.fill_buf().is_ok_and(<[u8]>::is_empty) => {
                out.torn = Some(number);
                break;
            }
            Err(_) => {
                return Err(ExperimentError::Corrupt {
                    path: path.to_path_buf(),
                    line: number,
                });
            }
        }
    }
    Ok(out)
}

/// Whether `path` holds records compressed with brotli (`.jsonl.br`: the
/// committed records of `plots/`).
pub(crate) fn is_compressed(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "br")
}

/// A results file opened for reading a line at a time: as written, or
/// decompressed as it is read, and in both cases bounded, so that a file
/// that decompresses past [`braid::MAX_RESULTS_BYTES`] is refused
/// with the bound named, not read into memory.
fn open_records(path: &Path) -> std::io::Result<Box<dyn BufRead + '_>> {
    let limit = braid::MAX_RESULTS_BYTES;
    let input = braid_noise::files::open_buffered(path, limit)?;
    Ok(match is_compressed(path) {
        false => Box::new(input),
        true => Box::new(BufReader::new(Bounded {
            inner: brotli::Decompressor::new(input, 1 << 16),
            left: limit,
        })),
    })
}

/// A reader that fails once more than `left` bytes came through it.
struct Bounded<R> {
    inner: R,
    left: u64,
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        match self.left.checked_sub(n as u64) {
            Some(left) => {
                self.left = left;
                Ok(n)
            }
            None => Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "it decompresses to more than {} GiB, the most a results file may hold",
                    braid::MAX_RESULTS_BYTES >> 30
                ),
            )),
        }
    }
}

/// Writes `records` as a brotli-compressed results file at `path`, whole
/// or not at all: how `braid reproduce --update` commits a suite's records
/// (a tenth of their text, and read back as any results file).
pub(crate) fn write_compressed(path: &Path, records: &[Record]) -> std::io::Result<()> {
    // Compressed in memory, where finishing the stream cannot fail, then
    // written whole.
    let mut w = brotli::CompressorWriter::new(Vec::new(), 1 << 16, 9, 22);
    for r in records {
        serde_json::to_writer(&mut w, r)?;
        w.write_all(b"\n")?;
    }
    let bytes = w.into_inner();
    braid_noise::files::write_atomic(path, |out| out.write_all(&bytes))
}

/// Every record of a results file, without line numbers.
#[cfg(test)]
pub(crate) fn read(path: &Path) -> Result<Vec<Record>, ExperimentError> {
    Ok(read_numbered(path)?.into_iter().map(|(_, r)| r).collect())
}

/// Reads every record of a results file, with its line number (from 1).
/// A torn last line is skipped, as resuming would cut it.
pub(crate) fn read_numbered(path: &Path) -> Result<Vec<(usize, Record)>, ExperimentError> {
    let mut out = Vec::new();
    each_record(path, |number, r| {
        out.push((number, r));
        Ok::<(), ExperimentError>(())
    })?;
    Ok(out)
}

/// Reads line `number` of a results file into `line` (cleared by the
/// caller): its length, 0 at the end. A line is read up to the most a
/// record holds, not to wherever its newline is (a 4 GiB file of one line
/// would be held whole), and refused past it; `io` names a read error.
fn record_line(
    input: &mut impl BufRead,
    line: &mut String,
    path: &Path,
    number: usize,
    io: impl FnOnce(std::io::Error) -> ExperimentError,
) -> Result<usize, ExperimentError> {
    let read = input
        .take(MAX_RECORD_BYTES + 1)
        .read_line(line)
        .map_err(io)?;
    if read as u64 > MAX_RECORD_BYTES {
        return Err(ExperimentError::BadRecord {
            path: path.to_path_buf(),
            line: number,
            message: format!(
                "longer than {} MiB, the most a record braid writes holds",
                MAX_RECORD_BYTES >> 20
            ),
        });
    }
    Ok(read)
}

/// Hands each record of a results file to `take` as it is read, with its
/// line number (from 1), so that a reader that keeps less than the whole
/// record (a plot) needs memory for one record at a time, not for the file;
/// stops at the first error, `take`'s own included. A torn last line is
/// skipped, as resuming would cut it; a line past [`MAX_RECORD_BYTES`] is
/// refused.
pub(crate) fn each_record<E: From<ExperimentError>>(
    path: &Path,
    mut take: impl FnMut(usize, Record) -> Result<(), E>,
) -> Result<(), E> {
    let read_error = |source| {
        E::from(ExperimentError::Read {
            path: path.to_path_buf(),
            source,
        })
    };
    // A line at a time: memory for the records, not for the text as well.
    let mut input = open_records(path).map_err(read_error)?;
    let mut line = String::new();
    for number in 1.. {
        line.clear();
        let read = record_line(&mut input, &mut line, path, number, |source| {
            ExperimentError::Read {
                path: path.to_path_buf(),
                source,
            }
        })?;
        if read == 0 {
            break;
        }
        if line.trim().is_empty() {
            continue;
        }
        // The path names the field that is missing or of the wrong type
        // (`report.spread`), not just a column.
        let mut json = serde_json::Deserializer::from_str(line.trim_end());
        match serde_path_to_error::deserialize::<_, Record>(&mut json) {
            Ok(r) => take(number, r)?,
            Err(_) if !line.ends_with('\n') => {
                // A torn last line (a write cut short): skipped, and said.
                eprintln!(
                    "braid: {}: line {number} is cut short (no newline, not a whole record): skipped",
                    path.display()
                );
            }
            Err(e) => {
                // A first line that is an object left open is JSON over
                // several lines: a run's report (`braid run --json`), or
                // another pretty-printed file, not a results file.
                let message = if number == 1 && e.inner().is_eof() && line.trim() == "{" {
                    "this is JSON over several lines (a run's report from `braid run --json`?); \
                     braid reads the results files of `braid experiment`, one record per line"
                        .to_string()
                } else {
                    format!("field `{}`: {}", e.path(), e.inner())
                };
                return Err(ExperimentError::BadRecord {
                    path: path.to_path_buf(),
                    line: number,
                    message,
                }
                .into());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
