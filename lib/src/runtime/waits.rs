//! How long each worker thread has waited for its core while something
//! else ran there: the time noise took from it (Linux's
//! `/proc/.../schedstat`, its second field). A worker reads its own at the
//! start and end of each epoch (`worker.rs`); the monitor reads the live
//! ones for the trace (`--lb-data`), by each worker's thread id.
//!
//! # Protocol
//!
//! * A worker, once pinned, stores its base reading, then its thread id
//!   (Release). Leaving, it clears the id (Release), then adds the epoch's
//!   wait to the total (`Shared::waited_ns`).
//! * The monitor reads the total first, then the id (Acquire): with an id,
//!   the epoch is still open and its live wait is added; without one, the
//!   total holds all there is (or, in the instant between the two stores,
//!   not yet this epoch's part: a sample a little low, which the next one
//!   corrects; readers of phases clamp a negative difference at 0).

use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam_utils::CachePadded;

/// One worker's thread id and schedstat wait when its epoch began.
#[derive(Debug, Default)]
pub(super) struct LiveWait {
    tid: AtomicU64,
    base_ns: AtomicU64,
}

impl LiveWait {
    /// The calling worker, pinned, begins an epoch having waited `base_ns`.
    pub(super) fn open(&self, base_ns: u64) {
        if let Some(tid) = own_tid() {
            self.base_ns.store(base_ns, Ordering::Relaxed);
            self.tid.store(tid, Ordering::Release);
        }
    }

    /// The calling worker leaves its epoch (before it adds to the total).
    pub(super) fn close(&self) {
        self.tid.store(0, Ordering::Release);
    }

    /// Seconds waited so far: `total_ns` (the closed epochs') plus the
    /// open epoch's, if any; `None` if unknown (no schedstat here).
    pub(super) fn seconds(&self, total: &CachePadded<AtomicU64>) -> Option<f64> {
        let closed = total.load(Ordering::Acquire);
        if closed == u64::MAX {
            return None;
        }
        let open = match self.tid.load(Ordering::Acquire) {
            0 => 0,
            tid => {
                let now = read(&format!("/proc/self/task/{tid}/schedstat"))?;
                now.saturating_sub(self.base_ns.load(Ordering::Relaxed))
            }
        };
        Some(closed.saturating_add(open) as f64 / 1e9)
    }
}

/// Nanoseconds the calling thread has waited on a run queue, if the kernel
/// says.
pub(super) fn own_ns() -> Option<u64> {
    read("/proc/thread-self/schedstat")
}

/// The second field of a schedstat file.
fn read(path: &str) -> Option<u64> {
    let text = braid_noise::files::read_text(std::path::Path::new(path), 256).ok()?;
    text.split_whitespace().nth(1)?.parse().ok()
}

/// The calling thread's id: `/proc/thread-self` links to `PID/task/TID`.
fn own_tid() -> Option<u64> {
    let link = std::fs::read_link("/proc/thread-self").ok()?;
    link.file_name()?.to_str()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_wait_reads_the_worker_thread_and_a_closed_one_the_total() {
        let total = CachePadded::new(AtomicU64::new(5_000_000_000));
        let live = LiveWait::default();
        assert_eq!(live.seconds(&total), Some(5.0));
        std::thread::scope(|s| {
            s.spawn(|| {
                live.open(0);
                // Its id is this thread's, not the reader's: the reading
                // is this thread's whole wait so far.
                let mine = own_ns().expect("schedstat") as f64 / 1e9;
                let seen = live.seconds(&total).unwrap();
                assert!(seen >= 5.0 + mine, "{seen} against 5 + {mine}");
                live.close();
            });
        });
        assert_eq!(live.seconds(&total), Some(5.0));
        total.store(u64::MAX, Ordering::Relaxed);
        assert_eq!(live.seconds(&total), None);
    }
}
