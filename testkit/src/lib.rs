//! What braid's tests share, compiled once for every crate of the
//! workspace and every test binary: a scratch directory that is gone with
//! everything in it when the test is done, pass or fail.

/// A fresh, empty directory for a unit test, `braid-NAME-PID-N` under the
/// system's temporary directory, removed with everything in it when the
/// guard drops (a test run leaves nothing in /tmp, pass or fail).
pub struct Scratch(std::path::PathBuf);

impl std::ops::Deref for Scratch {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl AsRef<std::path::Path> for Scratch {
    fn as_ref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// See [`Scratch`]: numbered per call, since tests run in parallel and
/// may share a name.
pub fn scratch_dir(name: &str) -> Scratch {
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("braid-{name}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    Scratch(dir)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_scratch_directory_is_gone_with_its_files_when_the_test_is_done() {
        let (a, b) = (super::scratch_dir("same"), super::scratch_dir("same"));
        assert_ne!(a.to_path_buf(), b.to_path_buf(), "one directory per call");
        std::fs::create_dir_all(a.join("deep")).unwrap();
        std::fs::write(a.join("deep/file"), "x").unwrap();
        let path = a.to_path_buf();
        drop(a);
        assert!(!path.exists(), "{} outlived its test", path.display());
        assert!(
            b.exists(),
            "dropping one scratch directory left the other alone"
        );
    }
}
