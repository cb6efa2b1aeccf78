//! `lb_strategy = prescribed:DIR`: the owners an offline tool wrote (for
//! example LBAF's `offline_lb_compatible` output, or vt's OfflineLB input),
//! applied phase by phase, so that a strategy computed offline meets
//! braid's online ones on the same run.
//!
//! A call moves every subdomain whose owner differs from the one the phase
//! in force gives it (the phase in force at the run's progress, placed as
//! `lbdata::read::Recording::starts` places it), within the call's scope (under
//! `split`, only within a socket). It reads no rates and no thresholds: it
//! applies the owners as they are.

use std::sync::Arc;

use super::{Bounds, Move, Named, Policy, Snapshot, Entry, Settings, Strategy};
use crate::lbdata::read::{Recording, fill_gaps, phase_at};

/// Owners given, phase by phase.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Prescribed {
    /// The scope (the thresholds are not read).
    pub bounds: Bounds,
    /// The progress at which each phase begins.
    starts: Vec<f64>,
    /// Each phase's owner of every subdomain.
    owners: Vec<Vec<usize>>,
}

impl Prescribed {
    /// The owners of `recording` for a run of `subdomains` over `threads`:
    /// task `k` (in id order) is subdomain `k`, and its owner in a phase is
    /// the processing element whose file lists it. A task missing from a
    /// phase keeps its owner of the phase before (or takes that of the
    /// first phase that lists it).
    pub(crate) fn new(
        bounds: Bounds,
        recording: &Recording,
        subdomains: usize,
        threads: usize,
    ) -> Result<Prescribed, String> {
        let ids = recording.task_ids();
        if ids.len() != subdomains {
            return Err(format!(
                "the recording has {} tasks and this run {subdomains} subdomains; prescribed \
                 owners need one task per subdomain (task k in id order is subdomain k)",
                ids.len()
            ));
        }
        if recording.pes > threads {
            return Err(format!(
                "the recording has {} processing elements (data.0.json to data.{}.json) and \
                 this run {threads} threads",
                recording.pes,
                recording.pes - 1
            ));
        }
        // Each task's owner phase after phase, its gaps filled.
        let phases = recording.phases.len();
        let mut seen = vec![vec![None; phases]; subdomains];
        for (k, phase) in recording.phases.iter().enumerate() {
            for t in &phase.tasks {
                let s = ids.binary_search(&t.id).expect("every id was collected");
                seen[s][k] = Some(t.pe);
            }
        }
        let per_task: Vec<Vec<usize>> = seen
            .iter()
            .map(|series| fill_gaps(series).expect("every task is in some phase"))
            .collect();
        Ok(Prescribed {
            bounds,
            starts: recording.starts(),
            owners: (0..phases)
                .map(|k| per_task.iter().map(|series| series[k]).collect())
                .collect(),
        })
    }
}

impl Policy for Prescribed {
    fn decide(&self, snap: &Snapshot<'_>) -> Vec<Move> {
        let n = snap.counts.len();
        if n == 0 || n != snap.owners.len() {
            return Vec::new();
        }
        let progress = snap.counts.iter().sum::<u64>() as f64 / n as f64;
        let want = &self.owners[phase_at(&self.starts, progress)];
        let mut group = vec![usize::MAX; snap.threads()];
        for (g, threads) in snap.groups(self.bounds.scope).iter().enumerate() {
            for &t in threads {
                group[t] = g;
            }
        }
        snap.owners
            .iter()
            .zip(want)
            .enumerate()
            .filter(|&(_, (&from, &to))| from != to && group[from] == group[to])
            .map(|(sub, (&from, &to))| Move { sub, from, to })
            .collect()
    }

    fn name(&self) -> Named {
        self.bounds.named(Strategy::PRESCRIBED)
    }

    /// The owners are the offline tool's, subdomain by subdomain.
    fn sends_guests_home(&self) -> bool {
        false
    }
}


impl Strategy {
    /// Owners an offline tool wrote (`Prescribed`); not among [`Strategy::all`],
    /// which lists what needs nothing but the run.
    pub const PRESCRIBED: Strategy = Strategy(&ENTRY);
}

/// Its line in the registry (`policy/mod.rs`).
pub(super) const ENTRY: Entry = Entry {
    name: "prescribed",
    build: |s: &Settings<'_>| {
        let recording = s.recording.ok_or("prescribed applies the owners of a recording")?;
        Ok(Arc::new(Prescribed::new(s.bounds, recording, s.subdomains, s.threads)?))
    },
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lbdata::read::{Phase, Task};
    use crate::policy::Scope;

    /// Two phases of three tasks over two PEs, counted: 10 updates each in
    /// the first (so the second begins at progress 10).
    fn recording() -> Recording {
        let task = |id, pe| Task {
            id,
            pe,
            time_s: 0.1,
            updates: Some(10),
            pace: None,
        };
        Recording {
            pes: 2,
            phases: vec![
                Phase {
                    id: 0,
                    tasks: vec![task(10, 0), task(20, 0), task(30, 1)],
                },
                Phase {
                    id: 1,
                    tasks: vec![task(10, 1), task(30, 0)],
                },
            ],
        }
    }

    fn bounds(scope: Scope) -> Bounds {
        Bounds {
            scope,
            low: 1,
            high: 99,
        }
    }

    #[test]
    fn a_call_moves_exactly_what_differs_from_the_phase_in_force() {
        let p = Prescribed::new(bounds(Scope::Joint), &recording(), 3, 2).unwrap();
        let sockets = [0, 1];
        // Progress 5: the first phase; subdomain 0 is on 1, 2 on 0.
        let early = p.decide(&Snapshot::of(&[5, 5, 5], &[1, 0, 0], &sockets));
        let mv = |sub, from, to| Move { sub, from, to };
        assert_eq!(early, vec![mv(0, 1, 0), mv(2, 0, 1)]);
        // Progress 10: the second; task 20 is absent and keeps thread 0.
        let late = p.decide(&Snapshot::of(&[10, 10, 10], &[0, 1, 1], &sockets));
        assert_eq!(late, vec![mv(0, 0, 1), mv(1, 1, 0), mv(2, 1, 0)]);
        // Split: the two threads are on two sockets, so nothing crosses.
        let split = Prescribed::new(bounds(Scope::Split), &recording(), 3, 2).unwrap();
        assert!(
            split
                .decide(&Snapshot::of(&[10; 3], &[0, 1, 1], &sockets))
                .is_empty()
        );
    }

    #[test]
    fn a_recording_that_does_not_fit_the_run_is_refused() {
        let r = recording();
        let e = Prescribed::new(bounds(Scope::Joint), &r, 4, 2).unwrap_err();
        assert!(e.contains("3 tasks") && e.contains("4 subdomains"), "{e}");
        let e = Prescribed::new(bounds(Scope::Joint), &r, 3, 1).unwrap_err();
        assert!(e.contains("2 processing elements"), "{e}");
    }
}
