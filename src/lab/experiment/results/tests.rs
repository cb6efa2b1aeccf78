use super::*;

fn record(digest: &str, key: &str) -> Record {
    Record {
        suite: "t".into(),
        suite_digest: digest.into(),
        figure: Figure::Landscape,
        engine: EngineKind::Sim,
        sample: Sample {
            variant: "sync".into(),
            noise: false,
            repetition: 0,
            ..Sample::default()
        },
        key: key.into(),
        status: Status::Ok,
        error: None,
        wall_s: 0.1,
        provenance: Provenance::for_tests(),
        report: None,
    }
}

/// A path `name` in a scratch directory of its own, removed when the
/// first half drops.
fn path(name: &str) -> (braid_testkit::Scratch, PathBuf) {
    let dir = braid_testkit::scratch_dir("results");
    let p = dir.join(name);
    (dir, p)
}

#[test]
fn reopening_returns_what_was_appended() {
    let (_dir, p) = path("reopen.jsonl");
    let Opened {
        file: mut f, done, ..
    } = ResultsFile::open(&p, "d").unwrap();
    assert!(done.is_empty());
    f.append(&record("d", "a")).unwrap();
    f.append(&record("d", "b")).unwrap();
    drop(f);
    let done = ResultsFile::open(&p, "d").unwrap().done;
    assert_eq!(done, HashSet::from(["a".to_string(), "b".to_string()]));
    assert_eq!(read(&p).unwrap().len(), 2);
}

#[test]
fn a_torn_last_line_is_cut_and_the_next_append_is_clean() {
    let (_dir, p) = path("torn.jsonl");
    let mut f = ResultsFile::open(&p, "d").unwrap().file;
    f.append(&record("d", "a")).unwrap();
    drop(f);
    let whole = serde_json::to_string(&record("d", "b")).unwrap();
    let mut raw = OpenOptions::new().append(true).open(&p).unwrap();
    raw.write_all(&whole.as_bytes()[..whole.len() / 2]).unwrap();
    drop(raw);
    assert_eq!(read(&p).unwrap().len(), 1);
    let Opened {
        file: mut f, done, ..
    } = ResultsFile::open(&p, "d").unwrap();
    assert_eq!(done.len(), 1);
    f.append(&record("d", "b")).unwrap();
    let keys: Vec<String> = read(&p).unwrap().into_iter().map(|r| r.key).collect();
    assert_eq!(keys, ["a", "b"]);
}

#[test]
fn a_whole_last_record_without_its_newline_is_kept_and_a_torn_one_named() {
    // Whole, newline missing (a file edited by hand): kept as done, and the
    // next append starts on a line of its own.
    let (_dir, p) = path("unterminated.jsonl");
    let a = serde_json::to_string(&record("d", "a")).unwrap();
    std::fs::write(&p, &a).unwrap();
    let Opened {
        file: mut f,
        done,
        torn,
        ..
    } = ResultsFile::open(&p, "d").unwrap();
    assert_eq!(done, HashSet::from(["a".to_string()]));
    assert_eq!(torn, None);
    f.append(&record("d", "b")).unwrap();
    drop(f);
    let keys: Vec<String> = read(&p).unwrap().into_iter().map(|r| r.key).collect();
    assert_eq!(keys, ["a", "b"]);
    // Torn (half a record, line 3): cut off and its line number given.
    let b = serde_json::to_string(&record("d", "c")).unwrap();
    let mut raw = OpenOptions::new().append(true).open(&p).unwrap();
    raw.write_all(&b.as_bytes()[..b.len() / 2]).unwrap();
    drop(raw);
    let Opened { done, torn, .. } = ResultsFile::open(&p, "d").unwrap();
    assert_eq!((done.len(), torn), (2, Some(3)));
}

#[test]
fn another_suites_file_is_refused_untouched() {
    let (_dir, p) = path("other.jsonl");
    let mut f = ResultsFile::open(&p, "d").unwrap().file;
    f.append(&record("d", "a")).unwrap();
    drop(f);
    let before = std::fs::read(&p).unwrap();
    assert!(matches!(
        ResultsFile::open(&p, "e"),
        Err(ExperimentError::OtherSuite { .. })
    ));
    assert_eq!(std::fs::read(&p).unwrap(), before);
}

/// Resuming with another braid would put two programs' samples in one
/// suite's file: refused, the file untouched, both builds named.
#[test]
fn another_builds_file_is_refused_untouched_naming_both_builds() {
    let (_dir, p) = path("build.jsonl");
    let mut f = ResultsFile::open(&p, "d").unwrap().file;
    let mut theirs = record("d", "a");
    theirs.provenance.build.commit = "0123456789abcdef0123456789abcdef01234567".into();
    f.append(&theirs).unwrap();
    drop(f);
    let before = std::fs::read(&p).unwrap();
    let e = ResultsFile::open(&p, "d").err().expect("refused");
    assert!(matches!(e, ExperimentError::OtherBuild { .. }), "{e}");
    let said = e.to_string();
    assert!(said.contains("0123456789ab"), "{said}");
    assert!(said.contains(braid::Build::this().short()), "{said}");
    assert_eq!(std::fs::read(&p).unwrap(), before);
    // This build's own records resume as before.
    let (_dir, p) = path("same.jsonl");
    let mut f = ResultsFile::open(&p, "d").unwrap().file;
    f.append(&record("d", "a")).unwrap();
    drop(f);
    assert_eq!(ResultsFile::open(&p, "d").unwrap().done.len(), 1);
}

#[test]
fn a_second_writer_is_refused_while_the_first_holds_the_file() {
    let (_dir, p) = path("busy.jsonl");
    let first = ResultsFile::open(&p, "d").unwrap();
    assert!(matches!(
        ResultsFile::open(&p, "d"),
        Err(ExperimentError::Busy { .. })
    ));
    drop(first);
    assert!(ResultsFile::open(&p, "d").is_ok());
}

#[test]
fn failed_samples_are_not_done_until_a_later_record_succeeds() {
    let (_dir, p) = path("failed.jsonl");
    let mut f = ResultsFile::open(&p, "d").unwrap().file;
    let mut bad = record("d", "a");
    bad.status = Status::Failed;
    f.append(&bad).unwrap();
    bad.key = "b".into();
    f.append(&bad).unwrap();
    f.append(&record("d", "b")).unwrap();
    drop(f);
    let o = ResultsFile::open(&p, "d").unwrap();
    assert_eq!(o.done, HashSet::from(["b".to_string()]));
    assert_eq!(o.failed, HashSet::from(["a".to_string()]));
}

#[test]
fn a_record_whose_report_an_older_braid_wrote_still_counts_as_done() {
    // Resuming reads only what it needs; plotting such a record names
    // the missing field instead.
    let (_dir, p) = path("older.jsonl");
    let mut line: serde_json::Value = serde_json::to_value(record("d", "a")).unwrap();
    line["report"] = serde_json::json!({ "threads": 2 });
    std::fs::write(&p, format!("{line}\n")).unwrap();
    assert_eq!(ResultsFile::open(&p, "d").unwrap().done.len(), 1);
    let e = read(&p).unwrap_err().to_string();
    assert!(e.contains("line 1") && e.contains("report"), "{e}");
}

#[test]
fn blank_lines_are_skipped_and_special_files_refused() {
    let (_dir, p) = path("blank.jsonl");
    let good = serde_json::to_string(&record("d", "a")).unwrap();
    std::fs::write(&p, format!("\n{good}\n\n")).unwrap();
    assert_eq!(read(&p).unwrap().len(), 1);
    assert_eq!(ResultsFile::open(&p, "d").unwrap().done.len(), 1);
    for special in ["/dev/full", "/dev/zero"] {
        let e = ResultsFile::open(Path::new(special), "d").err().unwrap();
        assert!(e.to_string().contains(special), "{e}");
        assert!(read(Path::new(special)).is_err());
    }
}

#[test]
fn only_the_results_directory_itself_is_created() {
    let (_dir, p) = path("x");
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir(&p).unwrap();
    let nested = p.join("a/b/c.jsonl");
    assert!(ResultsFile::open(&nested, "d").is_err());
    assert!(!p.join("a").exists());
    assert!(ResultsFile::open(&p.join("a/c.jsonl"), "d").is_ok());
}

#[test]
fn a_broken_line_before_the_last_is_an_error_not_a_cut() {
    let (_dir, p) = path("broken.jsonl");
    let good = serde_json::to_string(&record("d", "a")).unwrap();
    std::fs::write(&p, format!("{{oops\n{good}\n")).unwrap();
    assert!(matches!(
        ResultsFile::open(&p, "d"),
        Err(ExperimentError::Corrupt { line: 1, .. })
    ));
}
