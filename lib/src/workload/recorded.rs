//! `workload = lbdata:PATH`: the task times of a recorded run (DARMA vt's
//! LB data, or braid's own `--lb-data`) replayed as per-subdomain costs,
//! phase by phase.
//!
//! # The rules
//!
//! * **Tasks.** Only migratable tasks are loads (braid's noise tasks are
//!   not). Tasks are taken in id order; every id seen in any phase is a
//!   task.
//! * **Cost per update.** If every task of the recording says how many
//!   updates it made in each phase (braid's `user_defined.updates`), a
//!   task's cost in a phase is its time over its `pace` (the updates its
//!   time is the cost of, in braid's files: see `lbdata`), else over its
//!   updates, and a phase lasts the mean updates per task it holds.
//!   Otherwise (vt's files) a phase is spread over [`PHASE_PROGRESS`]
//!   updates: a task's cost is its time over that, and phase `id` begins
//!   at `PHASE_PROGRESS * (id - first id) / step` (`step`: the ids'
//!   common step), so a phase vt left out (`identical_to_previous`,
//!   `skipped`) keeps the one before it. Times are in units of
//!   `seconds_per_unit` seconds (`lbdata(S):PATH`; 1 by default).
//! * **Gaps.** A task without a cost in a phase (absent, or no updates)
//!   keeps its cost of the phase before, else takes that of the first
//!   phase after; a task never costed takes the mean of the known costs.
//!   A cost of 0 is raised to the least positive one.
//! * **Tasks onto subdomains.** When there are as many tasks as
//!   subdomains, task `k` (in id order) is subdomain `k`. Otherwise the
//!   tasks are laid end to end in id order, one unit of length each, and
//!   subdomain `s` of `n` takes the stretch from `s T / n` to `(s + 1) T /
//!   n` of the `T` tasks: the sum of the costs it covers, in proportion to
//!   how much of each it covers. The total is kept.
//! * **After the last phase** its costs hold.
//! * **Engines.** The simulator charges a subdomain's cost in seconds as
//!   the update's whole cost (a copy or the network on top as usual). The
//!   real engine cannot charge seconds: it sweeps a subdomain `cost /
//!   reference` times, where the reference is the least, over the
//!   subdomains, of a subdomain's median cost over the phases. So the
//!   cheapest subdomain costs about one sweep and the others are in
//!   proportion; a cost below the reference costs one sweep (an update
//!   cannot cost less). The median, not the least cost: a real recording's
//!   per-phase costs jitter (a sample can see an update's count before its
//!   time), and its least cost is an outlier.

use crate::lbdata::read::{PHASE_PROGRESS, Recording, fill_gaps, phase_at};
use crate::limits::MAX_COST_NS;

/// The most costs held (phases times subdomains).
const MAX_COSTS: usize = 1 << 26;

/// A recording, as costs per subdomain and phase.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Recorded {
    /// The progress at which each phase begins, increasing.
    starts: Vec<f64>,
    /// Seconds per update, phase after phase, `n` per phase.
    costs: Vec<f64>,
    n: usize,
    /// The real engine's one sweep: the least median cost.
    reference: f64,
}

/// Each task's cost per update in each phase, seconds (`None`: unknown),
/// the tasks in the order of `ids`.
fn known_costs(recording: &Recording, ids: &[u64], seconds_per_unit: f64) -> Vec<Vec<Option<f64>>> {
    let counted = recording.counted();
    let mut known: Vec<Vec<Option<f64>>> = vec![vec![None; recording.phases.len()]; ids.len()];
    for (k, phase) in recording.phases.iter().enumerate() {
        for t in &phase.tasks {
            let i = ids.binary_search(&t.id).expect("every id was collected");
            known[i][k] = match counted {
                true => t.per_update_s().map(|c| c * seconds_per_unit),
                false => Some(t.time_s * seconds_per_unit / PHASE_PROGRESS),
            };
        }
    }
    known
}

impl Recorded {
    /// `recording` onto `n` subdomains, its times in units of
    /// `seconds_per_unit` seconds.
    pub(super) fn build(
        recording: &Recording,
        n: usize,
        seconds_per_unit: f64,
    ) -> Result<Recorded, String> {
        let ids = recording.task_ids();
        let tasks = ids.len();
        if tasks == 0 {
            return Err("the recording holds no migratable task".into());
        }
        let phases = recording.phases.len();
        if phases.saturating_mul(n.max(tasks)) > MAX_COSTS {
            return Err(format!(
                "{phases} phases of {} tasks or subdomains are more than the {MAX_COSTS} costs \
                 braid holds",
                n.max(tasks)
            ));
        }
        let known = known_costs(recording, &ids, seconds_per_unit);
        let all: Vec<f64> = known.iter().flatten().flatten().copied().collect();
        if all.is_empty() {
            return Err("no task has a time and updates in any phase".into());
        }
        let mean = all.iter().sum::<f64>() / all.len() as f64;
        let least = all
            .iter()
            .copied()
            .filter(|&c| c > 0.0)
            .fold(f64::INFINITY, f64::min);
        if !least.is_finite() {
            return Err("every task's time is 0".into());
        }
        // Gaps: the phase before, else the first after, else the mean.
        let per_task: Vec<Vec<f64>> = known
            .iter()
            .map(|row| {
                fill_gaps(row)
                    .unwrap_or_else(|| vec![mean; phases])
                    .into_iter()
                    .map(|c| c.max(least))
                    .collect()
            })
            .collect();
        let mut costs = Vec::with_capacity(phases * n);
        for k in 0..phases {
            let row: Vec<f64> = per_task.iter().map(|c| c[k]).collect();
            costs.extend(onto(&row, n));
        }
        let worst = costs.iter().copied().fold(0.0, f64::max);
        if worst > MAX_COST_NS * 1e-9 {
            return Err(format!(
                "a subdomain would cost {worst} s per update; braid charges at most {} s (times \
                 in other units than seconds: lbdata(SECONDS_PER_UNIT):PATH)",
                MAX_COST_NS * 1e-9
            ));
        }
        let reference = (0..n)
            .map(|s| {
                let mut mine: Vec<f64> = (0..phases).map(|k| costs[k * n + s]).collect();
                mine.sort_unstable_by(f64::total_cmp);
                mine[phases / 2]
            })
            .fold(f64::INFINITY, f64::min);
        Ok(Recorded {
            starts: recording.starts(),
            costs,
            n,
            reference,
        })
    }

    /// Subdomain `s`'s cost per update at progress `p`, seconds.
    #[inline]
    pub(super) fn seconds(&self, s: usize, p: f64) -> f64 {
        self.costs[phase_at(&self.starts, p) * self.n + s]
    }

    /// The real engine's factor: the cost over the reference.
    #[inline]
    pub(super) fn factor(&self, s: usize, p: f64) -> f64 {
        self.seconds(s, p) / self.reference
    }

    /// Whether there is more than one phase.
    pub(super) fn moves(&self) -> bool {
        self.starts.len() > 1
    }

    /// The greatest factor over the recording.
    pub(super) fn greatest_factor(&self) -> f64 {
        self.costs.iter().copied().fold(0.0, f64::max) / self.reference
    }
}

/// `row`'s `T` costs onto `n` subdomains: the identity if `T = n`, else
/// each subdomain the stretch `[s T / n, (s + 1) T / n)` of the tasks laid
/// end to end (the total is kept).
fn onto(row: &[f64], n: usize) -> Vec<f64> {
    let tasks = row.len();
    if tasks == n {
        return row.to_vec();
    }
    let scale = tasks as f64 / n as f64;
    (0..n)
        .map(|s| {
            let (a, b) = (s as f64 * scale, (s + 1) as f64 * scale);
            let first = a.floor() as usize;
            let last = (b.ceil() as usize).min(tasks);
            (first..last)
                .map(|i| {
                    let overlap = b.min(i as f64 + 1.0) - a.max(i as f64);
                    row[i] * overlap.max(0.0)
                })
                .sum()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lbdata::read::{Phase, Task};

    /// A task: its id, its time and its updates.
    type T = (u64, f64, Option<u64>);

    fn recording(phases: &[(u64, &[T])]) -> Recording {
        Recording {
            pes: 1,
            phases: phases
                .iter()
                .map(|&(id, tasks)| Phase {
                    id,
                    tasks: tasks
                        .iter()
                        .map(|&(id, time_s, updates)| Task {
                            id,
                            pe: 0,
                            time_s,
                            updates,
                            pace: None,
                        })
                        .collect(),
                })
                .collect(),
        }
    }

    #[test]
    fn counted_phases_cost_time_over_updates_and_last_their_mean_updates() {
        let r = recording(&[
            (0, &[(0, 1.0, Some(10)), (1, 3.0, Some(10))]),
            (1, &[(0, 2.0, Some(20)), (1, 0.0, Some(0))]),
        ]);
        let w = Recorded::build(&r, 2, 1.0).unwrap();
        assert_eq!(w.starts, vec![0.0, 10.0]);
        assert_eq!(w.seconds(0, 0.0), 0.1);
        assert_eq!(w.seconds(1, 9.9), 0.3);
        // Phase 1 from progress 10; task 1 made no updates: it keeps 0.3.
        assert_eq!(w.seconds(0, 10.0), 0.1);
        assert_eq!(w.seconds(1, 1e9), 0.3);
        assert!((w.factor(1, 0.0) - 3.0).abs() < 1e-12);
        assert!(w.moves());
    }

    #[test]
    fn phases_without_updates_are_spread_over_a_hundred_and_a_left_out_phase_keeps_the_one_before()
    {
        // Phase 6 left out: phase 5's costs hold over it.
        let r = recording(&[
            (4, &[(7, 1.0, None)]),
            (5, &[(7, 3.0, None)]),
            (7, &[(7, 5.0, None)]),
        ]);
        let w = Recorded::build(&r, 1, 1.0).unwrap();
        let p = PHASE_PROGRESS;
        assert_eq!(w.starts, vec![0.0, p, 3.0 * p]);
        assert_eq!(w.seconds(0, 2.5 * p), 0.03);
        assert_eq!(w.seconds(0, 3.0 * p), 0.05);
        // Recorded every other phase: they follow one another, and times
        // in milliseconds are read as such.
        let r = recording(&[(4, &[(7, 1.0, None)]), (6, &[(7, 5.0, None)])]);
        let w = Recorded::build(&r, 1, 1e-3).unwrap();
        assert_eq!(w.starts, vec![0.0, p]);
        assert_eq!(w.seconds(0, 1.5 * p), 5e-5);
    }

    #[test]
    fn tasks_onto_fewer_or_more_subdomains_keep_the_total() {
        assert_eq!(onto(&[1.0, 2.0, 3.0, 4.0], 2), vec![3.0, 7.0]);
        assert_eq!(onto(&[2.0, 4.0], 4), vec![1.0, 1.0, 2.0, 2.0]);
        let three = onto(&[1.0, 2.0], 3);
        assert!((three.iter().sum::<f64>() - 3.0).abs() < 1e-12, "{three:?}");
        // The middle one covers a third of each task.
        assert!((three[1] - (1.0 + 2.0) / 3.0).abs() < 1e-12, "{three:?}");
        assert_eq!(onto(&[5.0, 6.0], 2), vec![5.0, 6.0]);
    }

    #[test]
    fn gaps_take_the_phase_before_then_the_first_after_and_zero_the_least() {
        let r = recording(&[
            (0, &[(0, 0.1, Some(1))]),
            (1, &[(0, 0.2, Some(1)), (1, 0.4, Some(1))]),
            (2, &[(0, 0.0, Some(1)), (1, 0.05, Some(1))]),
        ]);
        let w = Recorded::build(&r, 2, 1.0).unwrap();
        // Task 1 is absent from phase 0: it takes phase 1's cost there.
        assert_eq!(w.seconds(1, 0.0), 0.4);
        // Task 0's 0 in phase 2 is raised to the least positive cost.
        assert_eq!(w.seconds(0, 1e9), 0.05);
        let bad = recording(&[(0, &[(0, 0.0, None)])]);
        assert!(Recorded::build(&bad, 1, 1.0).unwrap_err().contains("is 0"));
        let slow = recording(&[(0, &[(0, 5.0, Some(1))])]);
        assert!(
            Recorded::build(&slow, 1, 1.0)
                .unwrap_err()
                .contains("per update")
        );
    }
}
