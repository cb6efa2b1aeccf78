//! Reading the files braid and braid-noise are given and writing the files
//! they make, safely: a read refuses what is not a regular file of bounded
//! size (so `/dev/zero` or a FIFO cannot be slurped forever or block), and
//! a write goes to a temporary sibling that is synced and renamed into
//! place, so a failure (a full disk, an error, a signal) leaves either the
//! old file or none, never a torn one.
//!
//! A special file that already exists (`/dev/null`, `/dev/stdout`, a FIFO) is
//! never replaced: [`AtomicFile::create`] writes into it (a FIFO without a
//! reader is an error at once, not a wait), and [`AtomicFile::create_regular`]
//! refuses it.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Opens `path` without waiting: `O_NONBLOCK` makes the open of a FIFO
/// return at once (for a read) or fail at once (for a write with no reader),
/// and the check that follows looks at what was opened, not at a name that
/// may change in between. The flag is then cleared, so reads and writes
/// wait as usual.
fn open_now(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    use std::os::fd::AsRawFd;
    let file = options.custom_flags(libc::O_NONBLOCK).open(path)?;
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor this function owns (through `file`),
    // with flag arguments only; no memory is passed.
    let cleared = unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) == 0
    };
    if !cleared {
        return Err(io::Error::last_os_error());
    }
    Ok(file)
}

fn not_regular() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, "not a regular file")
}

/// Opens `path` for reading if it is a regular file of at most `limit`
/// bytes. A FIFO or a device is refused without a read, so it cannot block.
fn open_bounded(path: &Path, limit: u64) -> io::Result<File> {
    let file = open_now(path, OpenOptions::new().read(true))?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_regular());
    }
    if meta.len() > limit {
        return Err(too_big(limit));
    }
    Ok(file)
}

/// A regular file of at most `limit` bytes, opened for reading a line at
/// a time (the reader stops at `limit`, should the file grow meanwhile).
pub fn open_buffered(path: &Path, limit: u64) -> io::Result<impl BufRead> {
    Ok(BufReader::new(open_bounded(path, limit)?.take(limit)))
}

/// Reads a regular file of at most `limit` bytes.
pub fn read_bytes(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let file = open_bounded(path, limit)?;
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_big(limit));
    }
    Ok(bytes)
}

/// Reads a regular text file of at most `limit` bytes.
pub fn read_text(path: &Path, limit: u64) -> io::Result<String> {
    let file = open_bounded(path, limit)?;
    let mut text = String::new();
    // `take` also bounds a file that grows while it is read.
    file.take(limit + 1).read_to_string(&mut text)?;
    if text.len() as u64 > limit {
        return Err(too_big(limit));
    }
    Ok(text
        .strip_prefix('\u{feff}')
        .map(str::to_string)
        .unwrap_or(text))
}

/// What an error message quotes of a bad line: all of a short one, the
/// start of a long one (a 200 MiB line is not repeated to a terminal).
///
/// ```
/// use braid_noise::files::excerpt;
/// assert_eq!(excerpt("1\t2"), "1\t2");
/// assert_eq!(excerpt(&"x".repeat(1000)).chars().count(), 81);
/// ```
pub fn excerpt(line: &str) -> String {
    const SHOWN: usize = 80;
    match line.char_indices().nth(SHOWN) {
        None => line.to_string(),
        Some((cut, _)) => format!("{}…", &line[..cut]),
    }
}

fn too_big(limit: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("larger than {} MiB", limit >> 20),
    )
}

/// True when `path` names an existing file that is not a regular file (a
/// device, a FIFO): those are never replaced.
pub fn is_special(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.is_file())
}

/// The temporary sibling a write goes to first. Its name starts with a dot
/// and ends in `.braid-tmp`, so a leftover (only after SIGKILL in the few
/// milliseconds of a write) is recognisable.
fn temp_sibling(path: &Path) -> PathBuf {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    path.with_file_name(format!(".{name}.{}.braid-tmp", std::process::id()))
}

/// A file being written: a temporary sibling until [`AtomicFile::commit`].
/// Dropped without a commit, it removes the temporary and leaves `path` as
/// it was.
pub struct AtomicFile {
    path: PathBuf,
    temp: Option<PathBuf>,
    out: BufWriter<File>,
}

impl AtomicFile {
    /// Creates the temporary sibling of `path` (or opens a special file).
    /// Fails at once when the directory is missing or not writable, so a bad
    /// output path is found before a long run rather than after it.
    pub fn create(path: &Path) -> io::Result<AtomicFile> {
        let (file, temp) = if is_special(path) {
            (open_now(path, OpenOptions::new().write(true))?, None)
        } else {
            let temp = temp_sibling(path);
            (File::create(&temp)?, Some(temp))
        };
        Ok(AtomicFile {
            path: path.to_path_buf(),
            temp,
            out: BufWriter::new(file),
        })
    }

    /// Like [`AtomicFile::create`], but refuses a `path` that exists and is
    /// not a regular file, rather than writing into it: for a file that
    /// is useless anywhere else (a recorded trace).
    pub fn create_regular(path: &Path) -> io::Result<AtomicFile> {
        if is_special(path) {
            return Err(not_regular());
        }
        AtomicFile::create(path)
    }

    /// Flushes, syncs (so a full disk shows here, not later) and renames the
    /// temporary into place.
    pub fn commit(mut self) -> io::Result<()> {
        self.out.flush()?;
        let Some(temp) = self.temp.take() else {
            return Ok(());
        };
        let result = self
            .out
            .get_ref()
            .sync_all()
            .and_then(|()| std::fs::rename(&temp, &self.path));
        if result.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        result
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if let Some(temp) = self.temp.take() {
            let _ = std::fs::remove_file(temp);
        }
    }
}

/// Writes `path` whole or not at all.
pub fn write_atomic(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let mut file = AtomicFile::create(path)?;
    fill(&mut file)?;
    file.commit()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileTypeExt;

    /// A scratch directory, removed with what it holds when it drops.
    struct Dir(PathBuf);

    impl std::ops::Deref for Dir {
        type Target = Path;
        fn deref(&self) -> &Path {
            &self.0
        }
    }

    impl AsRef<Path> for Dir {
        fn as_ref(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn dir(name: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("braid-files-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temporary() {
        let d = dir("fail");
        let p = d.join("out.json");
        std::fs::write(&p, "old").unwrap();
        let e = write_atomic(&p, |w| {
            w.write_all(b"half")?;
            Err(io::Error::other("boom"))
        });
        assert!(e.is_err());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "old");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
        write_atomic(&p, |w| w.write_all(b"new")).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
    }

    #[test]
    fn special_files_are_written_in_place_and_never_replaced() {
        write_atomic(Path::new("/dev/null"), |w| w.write_all(b"x")).unwrap();
        assert!(!std::fs::metadata("/dev/null").unwrap().is_file());
        let full = write_atomic(Path::new("/dev/full"), |w| w.write_all(&[0; 1 << 16]));
        assert!(full.is_err());
    }

    #[test]
    fn a_fifo_is_refused_at_once_for_reading_and_without_a_reader_for_writing() {
        let d = dir("fifo");
        let p = d.join("f");
        let made = std::process::Command::new("mkfifo").arg(&p).status();
        if !made.is_ok_and(|s| s.success()) {
            eprintln!("skipped: mkfifo is not available");
            return;
        }
        let e = read_text(&p, 1 << 20).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        assert!(open_buffered(&p, 1 << 20).is_err());
        // No reader: the open fails (ENXIO) instead of waiting for one.
        assert!(AtomicFile::create(&p).is_err());
        assert!(AtomicFile::create_regular(&p).is_err());
        assert!(std::fs::metadata(&p).unwrap().file_type().is_fifo());
    }

    #[test]
    fn reads_refuse_devices_and_oversized_files_and_drop_a_bom() {
        let e = read_text(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let d = dir("read");
        let p = d.join("big.txt");
        std::fs::write(&p, vec![b'a'; 2 << 20]).unwrap();
        assert!(read_text(&p, 1 << 20).is_err());
        std::fs::write(&p, "\u{feff}threads = 2\n").unwrap();
        assert_eq!(read_text(&p, 1 << 20).unwrap(), "threads = 2\n");
    }
}
