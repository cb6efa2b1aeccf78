//! Child processes that cannot outlive braid: each runs in a process group
//! of its own (so that a timeout kills everything it started, parasites
//! included) and is sent SIGKILL by the kernel when the braid thread that
//! spawned it dies, however it dies (Linux's parent-death signal, set
//! between fork and exec). Elsewhere only the process group applies.

use std::process::{Child, Command};

/// Makes `cmd`'s child die with this thread, in a process group of its own
/// when `own_group` (a sample and what it starts) or in braid's (a parasite,
/// so that the group braid itself is in is killed whole).
///
/// Spawn from a thread that lives as long as the child should: the signal
/// follows the spawning *thread*, not the process.
pub fn die_with_parent(cmd: &mut Command, own_group: bool) -> &mut Command {
    use std::os::unix::process::CommandExt;
    if own_group {
        cmd.process_group(0);
    }
    #[cfg(target_os = "linux")]
    {
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: the closure runs in the forked child before exec, where
        // only async-signal-safe calls are allowed: `prctl`, `getppid` and
        // `_exit` are. It touches no memory of the parent and allocates
        // nothing. `parent` is a plain integer copied into the closure.
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The parent may have died before the prctl: then no signal
                // comes, and the child must not run on.
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
    }
    cmd
}

/// Kills the child's whole process group (it and everything it started) and
/// reaps the child. For a child started with `own_group`.
pub fn kill_group(child: &mut Child) {
    let pgid = child.id() as libc::pid_t;
    // SAFETY: kill(2) with a negative pid signals a process group; it has no
    // memory-safety preconditions. The group is the child's own (its pid),
    // which cannot be reused before the child is reaped below.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn alive(pid: i32) -> bool {
        // SAFETY: signal 0 only checks that the process exists.
        unsafe { libc::kill(pid, 0) == 0 }
    }

    #[test]
    fn killing_the_group_also_kills_what_the_child_started() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "sleep 30 & echo $!; wait"])
            .stdout(std::process::Stdio::piped());
        let mut child = die_with_parent(&mut cmd, true).spawn().unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let grandchild: i32 = line.trim().parse().unwrap();
        assert!(alive(grandchild));
        kill_group(&mut child);
        let t = Instant::now();
        // The grandchild is reparented to init, which reaps it.
        while alive(grandchild) && t.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!alive(grandchild), "the grandchild outlived its group");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_child_dies_when_the_thread_that_spawned_it_ends() {
        let pid = std::thread::spawn(|| {
            let mut cmd = Command::new("sleep");
            cmd.arg("30");
            let child = die_with_parent(&mut cmd, true).spawn().unwrap();
            let pid = child.id() as i32;
            std::mem::forget(child); // not reaped here: the kernel kills it
            pid
        })
        .join()
        .unwrap();
        let t = Instant::now();
        loop {
            // Reap it if it has died (it is still our child).
            let mut status = 0;
            // SAFETY: waitpid on our own child's pid with WNOHANG.
            let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            if r == pid {
                break;
            }
            assert!(
                t.elapsed() < Duration::from_secs(5),
                "the child outlived the thread that spawned it"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
