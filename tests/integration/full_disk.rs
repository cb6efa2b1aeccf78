//! A full disk through the command line: on a small tmpfs (skipped where one
//! cannot be mounted), `run` and `plot` fail with a sentence and exit 1, and
//! leave no partial file: only what was whole before. A plot whose later
//! output fails removes the ones it made before it.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{braid, scratch};

/// A tmpfs of `kib` KiB, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(name: &str, kib: u32) -> Option<Tmpfs> {
        let dir = scratch(name);
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={kib}k"), "tmpfs"])
            .arg(&dir)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("skipped: cannot mount a tmpfs here (needs root)");
            return None;
        }
        Some(Tmpfs(dir))
    }

    /// Fills all but `kib` KiB.
    fn fill_leaving(&self, kib: u64) {
        let stat = Command::new("df")
            .args(["--output=avail", "-k"])
            .arg(&self.0)
            .output()
            .unwrap();
        let avail: u64 = String::from_utf8_lossy(&stat.stdout)
            .lines()
            .nth(1)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let fill = avail.saturating_sub(kib) as usize * 1024;
        std::fs::write(self.0.join("fill"), vec![0u8; fill]).unwrap();
    }

    fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

fn path(t: &Tmpfs, name: &str) -> String {
    t.0.join(name).to_str().unwrap().to_string()
}

#[test]
fn a_full_disk_leaves_no_partial_report_or_grid() {
    let Some(t) = Tmpfs::mount("full_run", 512) else {
        return;
    };
    std::fs::write(t.0.join("r.json"), "old report").unwrap();
    t.fill_leaving(16);
    let (json, grid) = (path(&t, "r.json"), path(&t, "g.npy"));
    let r = braid(
        Path::new("."),
        &[
            "run",
            "--json",
            &json,
            "--grid",
            &grid,
            "threads=1",
            "max_iterations=20",
        ],
    );
    assert_eq!(r.status, Some(1), "{}", r.stderr);
    assert!(r.stderr.contains("No space left"), "{}", r.stderr);
    assert!(
        !r.stderr.contains("Custom {"),
        "a sentence, not a dump: {}",
        r.stderr
    );
    // The grid (~700 KiB) did not fit and is absent, not truncated; the
    // report may fit or not, but is whole either way.
    assert!(!t.names().contains(&"g.npy".to_string()), "{:?}", t.names());
    let report = std::fs::read_to_string(&json).unwrap();
    assert!(
        report == "old report" || serde_json::from_str::<serde_json::Value>(&report).is_ok(),
        "{report}"
    );
    assert!(
        t.names().iter().all(|n| !n.contains("tmp")),
        "{:?}",
        t.names()
    );
}

#[test]
fn a_full_disk_leaves_no_partial_plot() {
    let Some(t) = Tmpfs::mount("full_plot", 512) else {
        return;
    };
    std::fs::create_dir(t.0.join("p")).unwrap();
    t.fill_leaving(8);
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("plots/data/landscape-sim.jsonl.br");
    let r = braid(
        Path::new("."),
        &["plot", data.to_str().unwrap(), "--out", &path(&t, "p")],
    );
    assert_eq!(r.status, Some(1), "{}", r.stderr);
    assert!(r.stderr.contains("No space left"), "{}", r.stderr);
    assert!(
        !r.stderr.contains("IoError("),
        "a sentence, not a dump: {}",
        r.stderr
    );
    let left: Vec<_> = std::fs::read_dir(t.0.join("p")).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_figure_whose_table_cannot_be_written_is_not_left_without_it() {
    // table2.md cannot be written (a directory holds its name), after
    // time-to-solution.png and .svg were: the files this plot made are
    // removed, and what was there before stays.
    let dir = scratch("plot_set");
    let out = dir.join("p");
    std::fs::create_dir_all(out.join("table2.md")).unwrap();
    std::fs::write(out.join("older.txt"), "kept").unwrap();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("plots/data/tts-sim.jsonl.br");
    let r = braid(
        Path::new("."),
        &[
            "plot",
            data.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(r.status, Some(1), "{}", r.stderr);
    assert!(r.stderr.contains("table2.md"), "{}", r.stderr);
    let mut left: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["older.txt", "table2.md"]);
}

#[test]
fn a_suite_that_cannot_write_its_first_record_leaves_no_empty_results_file() {
    let Some(t) = Tmpfs::mount("full_results", 512) else {
        return;
    };
    let dir = scratch("full_results_suite");
    let suite = dir.join("suite.toml");
    std::fs::write(
        &suite,
        "name = \"full\"\nfigure = \"tts\"\nengine = \"sim\"\nvariants = [\"async(4)\"]\n\
         repetitions = 1\n[set]\nmax_iterations = 20\nthreads = 2\n",
    )
    .unwrap();
    t.fill_leaving(0);
    let out = path(&t, "r.jsonl");
    let r = braid(
        &dir,
        &["experiment", suite.to_str().unwrap(), "--out", &out],
    );
    assert_ne!(r.status, Some(0), "{}", r.stderr);
    assert!(r.stderr.contains("No space left"), "{}", r.stderr);
    assert!(
        !t.names().contains(&"r.jsonl".to_string()),
        "{:?}",
        t.names()
    );
}
