//! `braid topology` on captured sysfs trees (BRAID_SYSFS_ROOT): one thread
//! per physical core, sockets in order, hyperthreads last.

use crate::common;

use std::path::Path;
use std::process::Command;

/// A 2 x 18 node with hyperthreads, numbered as Linux numbers them: socket
/// 0 is CPUs 0-17 with siblings 36-53, socket 1 is 18-35 with 54-71.
fn two_by_eighteen(root: &Path) {
    for cpu in 0..72usize {
        let dir = root.join(format!("devices/system/cpu/cpu{cpu}/topology"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("physical_package_id"),
            format!("{}\n", (cpu % 36) / 18),
        )
        .unwrap();
        std::fs::write(dir.join("core_id"), format!("{}\n", cpu % 18)).unwrap();
    }
}

fn topology_json(root: &Path, threads: usize) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_braid"))
        .args(["topology", "--json", "--threads", &threads.to_string()])
        .env("BRAID_SYSFS_ROOT", root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn thirty_six_threads_take_one_cpu_of_each_core_of_both_sockets() {
    let root = common::scratch("sysfs-2x18");
    two_by_eighteen(&root);
    let shown = topology_json(&root, 36);
    let cores: Vec<u64> = serde_json::from_value(shown["cores"].clone()).unwrap();
    assert_eq!(cores, (0..36).collect::<Vec<u64>>());
    let sockets: Vec<u64> = serde_json::from_value(shown["thread_sockets"].clone()).unwrap();
    assert_eq!(&sockets[..18], &[0; 18]);
    assert_eq!(&sockets[18..], &[1; 18]);
    assert_eq!(
        shown["topology"]["sockets"][0]["cores"][0],
        serde_json::json!([0, 36])
    );
    // Past one per core, the hyperthreads, socket 0 first.
    let shown = topology_json(&root, 38);
    assert_eq!(shown["cores"][36], 36);
    assert_eq!(shown["cores"][37], 37);
}

#[test]
fn the_summary_lists_cores_with_their_cpus_and_the_default_placement() {
    let root = common::scratch("sysfs-2x18-text");
    two_by_eighteen(&root);
    let out = Command::new(env!("CARGO_BIN_EXE_braid"))
        .arg("topology")
        .env("BRAID_SYSFS_ROOT", &root)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("2 socket(s), 36 core(s), 72 logical CPU(s)"),
        "{text}"
    );
    assert!(text.contains("0+36 1+37"), "{text}");
    assert!(
        text.contains("36 thread(s) pinned to CPUs 0-17 (socket 0), 18-35 (socket 1)"),
        "{text}"
    );
}

#[test]
fn too_many_threads_for_the_cpus_exit_2_naming_the_problem() {
    let root = common::scratch("sysfs-2x18-bad");
    two_by_eighteen(&root);
    let out = Command::new(env!("CARGO_BIN_EXE_braid"))
        .args(["topology", "--threads", "73"])
        .env("BRAID_SYSFS_ROOT", &root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("73 threads") && !err.contains("panicked"),
        "{err}"
    );
}

/// `braid ARGS` with `BRAID_SYSFS_ROOT=root`, in a scratch directory.
fn braid_on(root: &Path, args: &[&str]) -> common::Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_braid"));
    cmd.args(args)
        .env("BRAID_SYSFS_ROOT", root)
        .current_dir(common::scratch("sysfs-cwd"));
    common::wait_for(cmd, std::time::Duration::from_secs(60))
}

#[test]
fn a_sysfs_root_that_holds_no_usable_tree_is_refused_naming_the_variable() {
    let base = common::scratch("sysfs-unusable");
    let garbage = base.join("garbage");
    let topo = garbage.join("devices/system/cpu/cpu0/topology");
    std::fs::create_dir_all(&topo).unwrap();
    std::fs::write(topo.join("physical_package_id"), "zero\n").unwrap();
    std::fs::write(base.join("a-file"), "x").unwrap();
    std::fs::create_dir_all(base.join("empty")).unwrap();
    let cases = [
        (base.join("missing"), "devices/system/cpu"),
        (base.join("empty"), "devices/system/cpu"),
        (base.join("a-file"), "devices/system/cpu"),
        (garbage, "`zero` is not a whole number"),
    ];
    for (root, problem) in cases {
        for args in [&["topology"][..], &["run", "max_iterations=5"]] {
            let out = braid_on(&root, args);
            assert_eq!(out.status, Some(2), "{root:?} {args:?}: {}", out.stderr);
            assert!(
                out.stderr.contains("BRAID_SYSFS_ROOT")
                    && out.stderr.contains(problem)
                    && !out.stderr.contains("panicked"),
                "{root:?}: {}",
                out.stderr
            );
        }
    }
}

#[test]
fn a_cpu_id_that_a_cpu_set_cannot_hold_is_refused_not_a_panic() {
    let root = common::scratch("sysfs-cpu1024");
    for cpu in [0usize, 1024] {
        let dir = root.join(format!("devices/system/cpu/cpu{cpu}/topology"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("physical_package_id"), "0\n").unwrap();
        std::fs::write(dir.join("core_id"), format!("{cpu}\n")).unwrap();
    }
    let out = braid_on(&root, &["run", "max_iterations=5"]);
    assert_eq!(out.status, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("cpu1024") && !out.stderr.contains("panicked"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_captured_tree_larger_than_this_machine_runs_no_more_threads_than_it_may_use() {
    let root = common::scratch("sysfs-2x18-run");
    two_by_eighteen(&root);
    let out = braid_on(&root, &["run", "max_iterations=5", "domain_size=8"]);
    assert_eq!(out.status, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("36 threads") && out.stderr.contains("oversubscribe = true"),
        "{}",
        out.stderr
    );
    // Asked for, it shares the CPUs this process has.
    let out = braid_on(
        &root,
        &[
            "run",
            "max_iterations=5",
            "domain_size=8",
            "threads=3",
            "oversubscribe=true",
        ],
    );
    assert_eq!(out.status, Some(0), "{}", out.stderr);
}
