//! The simulator's pending completions: at most one per virtual thread,
//! the earliest (ties: the lowest thread) found at once and any thread's
//! changed in `log2(threads)` steps. A tournament (winner) tree over the
//! threads, in place of a binary heap: a heap's pop sifts down to the
//! bottom and back up, and at 4096 threads it was half of a simulation's
//! time (`git show 333740e:docs/speed.md`); here a change replays one leaf-to-root path.

/// No pending completion.
const NONE: u64 = u64::MAX;

/// `(time, thread)` in one number, ordered as the pair is: one
/// comparison, without a branch, per level of the tree (as a pair the
/// comparisons branched, and mispredicted, at every level).
fn key(time: u64, thread: usize) -> u128 {
    (u128::from(time) << 64) | thread as u128
}

/// Each thread's pending completion time, if any.
#[derive(Debug, Clone)]
pub(super) struct Events {
    /// Leaves: a power of two, at least the threads.
    leaves: usize,
    /// Node `k` (1-based; children `2k` and `2k + 1`; thread `t`'s leaf at
    /// `leaves + t`) holds the least [`key`] of its subtree, so that a
    /// comparison reads the two children and nothing else.
    node: Vec<u128>,
}

impl Events {
    /// No thread has a pending completion.
    pub(super) fn new(threads: usize) -> Self {
        let leaves = threads.max(1).next_power_of_two();
        let mut node = vec![key(NONE, 0); 2 * leaves];
        for (t, leaf) in node[leaves..].iter_mut().enumerate() {
            *leaf = key(NONE, t);
        }
        for k in (1..leaves).rev() {
            node[k] = node[2 * k].min(node[2 * k + 1]);
        }
        Events { leaves, node }
    }

    /// Thread `t`'s pending completion is now at `time`.
    pub(super) fn set(&mut self, t: usize, time: u64) {
        debug_assert!(time != NONE, "a completion at the end of time");
        self.replay(t, time);
    }

    /// Thread `t` has no pending completion now.
    pub(super) fn clear(&mut self, t: usize) {
        self.replay(t, NONE);
    }

    /// Sets a leaf and the winners above it, up to the first that does not
    /// change (the ones above that depend on nothing that changed).
    fn replay(&mut self, t: usize, time: u64) {
        let mut k = self.leaves + t;
        self.node[k] = key(time, t);
        while k > 1 {
            let parent = k / 2;
            let won = self.node[k].min(self.node[k ^ 1]);
            if self.node[parent] == won {
                break;
            }
            self.node[parent] = won;
            k = parent;
        }
    }

    /// Whether another thread's completion is due at the same time as the
    /// earliest: it would be the winner of a subtree beside the earliest's
    /// path, so reading those siblings tells, without changing anything.
    pub(super) fn tied(&self) -> bool {
        let top = self.node[1];
        let time = top >> 64;
        let mut k = self.leaves + (top as u64 as usize);
        while k > 1 {
            if self.node[k ^ 1] >> 64 == time {
                return true;
            }
            k /= 2;
        }
        false
    }

    /// The earliest pending completion, ties to the lowest thread.
    pub(super) fn first(&self) -> Option<(u64, usize)> {
        let top = self.node[1];
        let time = (top >> 64) as u64;
        (time != NONE).then_some((time, top as u64 as usize))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    /// The order a binary heap of `Reverse((time, thread))` gives, which the
    /// simulator used before: same events, same order, so same bytes.
    #[test]
    fn completions_come_in_the_order_of_a_min_heap_of_time_then_thread() {
        for threads in [1, 2, 3, 5, 36, 100] {
            let mut events = Events::new(threads);
            let mut heap = BinaryHeap::new();
            let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ threads as u64;
            let mut next = || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            };
            for t in 0..threads {
                let time = next() % 50;
                events.set(t, time);
                heap.push(Reverse((time, t)));
            }
            for _ in 0..2000 {
                let Some(Reverse((time, t))) = heap.pop() else {
                    break;
                };
                assert_eq!(events.first(), Some((time, t)), "{threads} threads");
                let tie = heap.peek().is_some_and(|&Reverse((next, _))| next == time);
                assert_eq!(events.tied(), tie, "{threads} threads at {time}");
                // Ties are common (times mod 50): the lowest thread first.
                if next() % 7 == 0 {
                    events.clear(t);
                } else {
                    let later = time + next() % 20;
                    events.set(t, later);
                    heap.push(Reverse((later, t)));
                }
            }
            while let Some(Reverse(e)) = heap.pop() {
                assert_eq!(events.first(), Some(e));
                events.clear(e.1);
            }
            assert_eq!(events.first(), None);
        }
    }
}
