//! Records the build braid is made from (`src/build.rs`): the commit, and
//! whether the tree had uncommitted changes. Every crate of the workspace
//! is part of that build (the program at the root reports with this
//! crate's `Build`), so it watches them all from the repository's root.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    // --no-optional-locks: `git status` must not rewrite the index it is
    // asked about, or this script would see it changed and run again.
    let out = Command::new("git")
        .arg("--no-optional-locks")
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let commit = git(&["rev-parse", "HEAD"]).filter(|c| c.len() == 40);
    // Tracked files only: a results file or a scratch note beside the
    // sources does not make the binary another commit's.
    let clean = commit.is_some()
        && git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| s.is_empty());
    println!(
        "cargo:rustc-env=BRAID_GIT_COMMIT={}",
        commit.as_deref().unwrap_or("unknown")
    );
    println!("cargo:rustc-env=BRAID_GIT_CLEAN={clean}");
    // A commit moves HEAD or a ref; staging changes the index; editing any
    // source of the binary changes the tree's state.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("lib/ sits in the repository");
    for path in [
        ".git/HEAD",
        ".git/index",
        ".git/refs",
        ".git/packed-refs",
        "src",
        "lib/src",
        "lib/Cargo.toml",
        "lib/build.rs",
        "testkit",
        "noise/src",
        "noise/Cargo.toml",
        "kernel/src",
        "kernel/Cargo.toml",
        "kernel/build.rs",
        "Cargo.toml",
        "Cargo.lock",
        ".cargo",
    ] {
        let path = root.join(path);
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
}
