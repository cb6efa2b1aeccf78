//! Records the git revision braid is built from, for experiment provenance.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let revision = git(&["describe", "--always", "--dirty", "--abbrev=12"])
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=BRAID_GIT_REVISION={revision}");
    // A commit moves HEAD or a ref; staging changes the index; editing
    // changes the sources (and makes the build -dirty).
    for path in [
        ".git/HEAD",
        ".git/index",
        ".git/refs",
        "src",
        "noise/src",
        "Cargo.toml",
    ] {
        if std::path::Path::new(path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
