//! A run as DARMA vt's LB data files (`--lb-data DIR`): the format that
//! vt's OfflineLB and workload replay, LBAF, vt-tv and lbsim read, defined
//! by vt's `scripts/LBDatafile_schema.py`. One `data.<PE>.json` per
//! processing element, from the run's trace with its loads
//! (`TraceSample::busy_s`, `TraceSample::lost_s`).
//!
//! # How braid maps onto vt
//!
//! | vt | braid |
//! |---|---|
//! | processing element (rank), `metadata.rank`, a file | a worker thread (across MPI ranks, a rank's thread), numbered as in the report |
//! | `metadata.shared_node` | the thread's node: its id, how many threads it holds, this thread's index among them, the nodes |
//! | `metadata.attributes` | `socket` (the thread's), `source` (`braid`), `braid_version` |
//! | phase | one window of the trace: from one sample to the next (the first from the start); the window is `trace_interval`, else the balancer's interval |
//! | migratable task, `entity.seq_id` | a subdomain, by id; `collection_id` 0; `home` the thread whose domain it is (its first owner) |
//! | task `node` | the subdomain's owner at the phase's start |
//! | task `time` | the subdomain's busy time in the phase less its share of its thread's noise, seconds: its object load |
//! | non-migratable task, `seq_id` = subdomains + PE | noise: in the simulator the time the core's noise stretched the thread's updates; in the runtime the share of its subdomains' busy time that the thread spent waiting for its core (schedstat's wait over the phase), taken from them, so that a thread's tasks add up to its busy time |
//! | `communications`, `SendRecv` | each halo edge a subdomain sent in the phase: `messages` its updates, `bytes` 8 per cell of the edge per update, in the sender's file |
//! | task `user_defined` | `updates` (in the phase), `cells`; the noise task's `noise: 1` |

use std::path::Path;

use serde::Serialize;

use crate::engine::TraceSample;
use crate::problem::{Neighbour, Problem, Side};

/// One file: what vt's `LBDatafile` holds for one processing element.
#[derive(Debug, Serialize)]
pub struct LbFile {
    #[serde(rename = "type")]
    kind: &'static str,
    metadata: Metadata,
    phases: Vec<Phase>,
}

#[derive(Debug, Serialize)]
struct Metadata {
    #[serde(rename = "type")]
    kind: &'static str,
    rank: usize,
    shared_node: SharedNode,
    attributes: Attributes,
}

#[derive(Debug, Serialize)]
struct SharedNode {
    id: usize,
    size: usize,
    rank: usize,
    num_nodes: usize,
}

#[derive(Debug, Serialize)]
struct Attributes {
    socket: usize,
    source: &'static str,
    braid_version: &'static str,
}

#[derive(Debug, Serialize)]
struct Phase {
    id: usize,
    tasks: Vec<Task>,
    communications: Vec<Communication>,
}

#[derive(Debug, Serialize)]
struct Task {
    entity: Entity,
    node: usize,
    resource: &'static str,
    time: f64,
    user_defined: UserDefined,
}

#[derive(Debug, Clone, Copy, Serialize)]
struct Entity {
    #[serde(rename = "type")]
    kind: &'static str,
    seq_id: usize,
    home: usize,
    migratable: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    collection_id: Option<u64>,
}

#[derive(Debug, Serialize)]
#[serde(untagged)]
enum UserDefined {
    Subdomain { updates: u64, cells: usize },
    Noise { noise: u8 },
}

#[derive(Debug, Serialize)]
struct Communication {
    #[serde(rename = "type")]
    kind: &'static str,
    from: Entity,
    to: Entity,
    messages: u64,
    bytes: f64,
}

/// Where each thread runs: its socket and its node.
#[derive(Debug, Clone)]
pub struct Places<'a> {
    /// Each thread's socket (as the report numbers them).
    pub sockets: &'a [usize],
    /// Each thread's node, numbered from 0.
    pub nodes: &'a [usize],
}

/// Why the files cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum LbDataError {
    /// The trace has no loads (a run without `--lb-data`).
    #[error("the trace has no object loads (record the run with --lb-data)")]
    NoLoads,
    /// A file could not be written.
    #[error("cannot write {file}: {source}")]
    Write {
        /// The file.
        file: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// One [`LbFile`] per thread of `problem`, from `trace`.
pub fn files(
    problem: &Problem,
    trace: &[TraceSample],
    places: &Places<'_>,
) -> Result<Vec<LbFile>, LbDataError> {
    let (n, threads) = (problem.subs.len(), problem.threads);
    if trace
        .iter()
        .any(|t| t.busy_s.len() != n || t.lost_s.len() != threads)
    {
        return Err(LbDataError::NoLoads);
    }
    let subdomain = |s: usize| Entity {
        kind: "object",
        seq_id: s,
        home: problem.subs[s].domain,
        migratable: true,
        collection_id: Some(0),
    };
    let start = TraceSample {
        t_s: 0.0,
        counts: vec![0; n],
        owners: problem.subs.iter().map(|g| g.domain).collect(),
        busy_s: vec![0.0; n],
        work_s: vec![0.0; n],
        lost_s: vec![0.0; threads],
    };
    let mut out: Vec<LbFile> = (0..threads)
        .map(|t| LbFile {
            kind: "LBDatafile",
            metadata: metadata(t, places),
            phases: Vec::new(),
        })
        .collect();
    for (id, (before, after)) in std::iter::once(&start).chain(trace).zip(trace).enumerate() {
        let mut phases: Vec<Phase> = (0..threads)
            .map(|_| Phase {
                id,
                tasks: Vec::new(),
                communications: Vec::new(),
            })
            .collect();
        let busy = |s: usize| (after.busy_s[s] - before.busy_s[s]).max(0.0);
        let lost = |t: usize| (after.lost_s[t] - before.lost_s[t]).max(0.0);
        let exact = after.work_s.len() == n;
        let work = |s: usize| match exact {
            true => (after.work_s[s] - before.work_s[s]).max(0.0),
            false => busy(s),
        };
        // Where each subdomain's own work is known, it is its time, and the
        // noise task the rest of what it took; else the noise is split.
        let noise = match exact {
            true => own_work(threads, &before.owners, busy, work),
            false => split_noise(threads, &before.owners, busy, lost, after.t_s - before.t_s),
        };
        for (s, g) in problem.subs.iter().enumerate() {
            let t = before.owners[s];
            let updates = after.counts[s].saturating_sub(before.counts[s]);
            phases[t].tasks.push(Task {
                entity: subdomain(s),
                node: t,
                resource: "cpu",
                time: work(s) * noise[t].1,
                user_defined: UserDefined::Subdomain {
                    updates,
                    cells: g.cells(),
                },
            });
            if updates == 0 {
                continue;
            }
            for side in Side::ALL {
                if let Neighbour::Sub(other) = g.neighbour(side) {
                    let cells = g.edge_cells(side);
                    phases[t].communications.push(Communication {
                        kind: "SendRecv",
                        from: subdomain(s),
                        to: subdomain(other),
                        messages: updates,
                        bytes: (8 * cells) as f64 * updates as f64,
                    });
                }
            }
        }
        for (t, phase) in phases.iter_mut().enumerate() {
            phase.tasks.push(Task {
                entity: Entity {
                    kind: "object",
                    seq_id: n + t,
                    home: t,
                    migratable: false,
                    collection_id: None,
                },
                node: t,
                resource: "cpu",
                time: noise[t].0,
                user_defined: UserDefined::Noise { noise: 1 },
            });
        }
        for (file, phase) in out.iter_mut().zip(phases) {
            file.phases.push(phase);
        }
    }
    Ok(out)
}

/// Each thread's noise task in a phase when its subdomains' own `work`
/// is known: what they took (`busy`) beyond it; their share is all of it.
fn own_work(
    threads: usize,
    owners: &[usize],
    busy: impl Fn(usize) -> f64,
    work: impl Fn(usize) -> f64,
) -> Vec<(f64, f64)> {
    let mut noise = vec![(0.0, 1.0); threads];
    for (s, &t) in owners.iter().enumerate() {
        noise[t].0 += (busy(s) - work(s)).max(0.0);
    }
    noise
}

/// Each thread's noise task in a phase of `window` seconds and the share
/// of its subdomains' busy time that was their own work. The thread
/// waited for its core `lost(t)` of the window, whether updating or not,
/// so it ran `1 - lost / window` of the time: that share of its
/// subdomains' busy time (`busy(s)`, `owners` at the phase's start) was
/// their work, the rest the noise task's. A thread's tasks add up to its
/// busy time, and none counts the noise twice.
fn split_noise(
    threads: usize,
    owners: &[usize],
    busy: impl Fn(usize) -> f64,
    lost: impl Fn(usize) -> f64,
    window: f64,
) -> Vec<(f64, f64)> {
    let mut total = vec![0.0; threads];
    for (s, &t) in owners.iter().enumerate() {
        total[t] += busy(s);
    }
    total
        .iter()
        .enumerate()
        .map(|(t, &busy)| {
            let waited = if window > 0.0 {
                (lost(t) / window).clamp(0.0, 1.0)
            } else {
                0.0
            };
            (busy * waited, 1.0 - waited)
        })
        .collect()
}

fn metadata(t: usize, places: &Places<'_>) -> Metadata {
    let node = places.nodes.get(t).copied().unwrap_or(0);
    let on_node: Vec<usize> = (0..places.nodes.len().max(t + 1))
        .filter(|&u| places.nodes.get(u).copied().unwrap_or(0) == node)
        .collect();
    let mut nodes = places.nodes.to_vec();
    nodes.sort_unstable();
    nodes.dedup();
    Metadata {
        kind: "LBDatafile",
        rank: t,
        shared_node: SharedNode {
            id: node,
            size: on_node.len(),
            rank: on_node.iter().position(|&u| u == t).unwrap_or(0),
            num_nodes: nodes.len().max(1),
        },
        attributes: Attributes {
            socket: places.sockets.get(t).copied().unwrap_or(0),
            source: "braid",
            braid_version: env!("CARGO_PKG_VERSION"),
        },
    }
}

/// Writes `files` into `dir` as `data.<PE>.json`, each whole or not at all.
pub fn write(dir: &Path, files: &[LbFile]) -> Result<(), LbDataError> {
    for (pe, file) in files.iter().enumerate() {
        let path = dir.join(format!("data.{pe}.json"));
        braid_noise::files::write_atomic(&path, |w| {
            serde_json::to_writer(&mut *w, file).map_err(std::io::Error::other)?;
            writeln!(w)
        })
        .map_err(|source| LbDataError::Write {
            file: path.clone(),
            source,
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::plan::Plan;

    /// A simulation of 4 threads of 4 subdomains, its trace with loads in
    /// windows of 50 us, and its LB data. Long enough (about 0.3 ms) that
    /// a parasite's first 200 us sleep ends well before the run does.
    fn simulated(extra: &[&str]) -> (Plan, Vec<TraceSample>, Vec<LbFile>) {
        let mut cfg = Config::default();
        let mut o: Vec<String> = [
            "threads=4",
            "subdomains=4",
            "domain_size=40",
            "max_iterations=1000",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        o.extend(extra.iter().map(|s| s.to_string()));
        cfg.apply_overrides(&o).unwrap();
        let mut plan = Plan::simulated(&cfg).unwrap();
        plan.settings.trace_loads = true;
        plan.settings.trace_interval = Some(std::time::Duration::from_micros(50));
        let sim = plan.sim.as_ref().unwrap();
        let (out, _) = crate::sim::run(&plan.problem, &plan.placement, &plan.settings, sim);
        let places = Places {
            sockets: &plan.placement.sockets,
            nodes: &sim.nodes,
        };
        let files = files(&plan.problem, &out.trace, &places).unwrap();
        (plan, out.trace, files)
    }

    #[test]
    fn lb_data_written_and_read_back_replays_each_subdomains_cost() {
        // Random factors on a core at 50% noise: read back as a workload,
        // every phase costs each subdomain its update at the cost model's
        // price at its own factor (the noise is not a cost of the work).
        let (plan, trace, files) =
            simulated(&["workload=random(1,4)", "noise=thread", "noise_cores=1:0.5"]);
        let dir = crate::scratch_dir("lbdata-replay");
        write(&dir, &files).unwrap();
        let spec = crate::workload::WorkloadSpec::LbData(dir);
        let replay = crate::workload::Workload::build(&spec, &plan.problem, 0).unwrap();
        let recorded = &plan.settings.workload;
        let last = trace.last().unwrap();
        let end = last.counts.iter().sum::<u64>() as f64 / last.counts.len() as f64;
        for s in 0..plan.problem.subs.len() {
            // At home: no balancer moves it.
            let want = crate::sim::tests::home_s(&plan, s, recorded.factor(s, 0.0));
            for p in [0.0, end / 3.0, end / 2.0, end, 2.0 * end] {
                let got = replay.seconds(s, p).unwrap();
                assert!(
                    (got - want).abs() <= 1e-9 * want,
                    "{s} at {p}: {got} s, not {want}"
                );
            }
        }
    }

    #[test]
    fn a_simulated_runs_lb_data_follows_vts_schema() {
        let (plan, trace, files) = simulated(&["noise=thread", "noise_cores=1:0.5"]);
        assert_eq!(files.len(), 4);
        for file in &files {
            let v = serde_json::to_value(file).unwrap();
            assert_eq!(crate::lbfile::schema::check(&v), Ok(()));
            assert_eq!(file.phases.len(), trace.len());
            // Every phase: the PE's subdomains and one noise task.
            let tasks: usize = file.phases.iter().map(|p| p.tasks.len()).sum();
            assert!(tasks >= trace.len(), "{tasks} tasks");
        }
        // Each subdomain is one task per phase, in its owner's file.
        for p in 0..trace.len() {
            let subs: usize = files
                .iter()
                .map(|f| {
                    f.phases[p]
                        .tasks
                        .iter()
                        .filter(|t| t.entity.migratable)
                        .count()
                })
                .sum();
            assert_eq!(subs, plan.problem.subs.len());
        }
    }

    #[test]
    fn a_phases_task_times_are_its_updates_at_the_cost_model_and_the_noise_task_the_rest() {
        // A core at 50% noise: its thread's subdomains take twice as long;
        // each subdomain's task holds exactly its updates at the cost
        // model's price, and the noise task the rest of the thread's time.
        let (plan, trace, files) = simulated(&["noise=thread", "noise_cores=1:0.5"]);
        let unit_s = crate::sim::tests::home_s(&plan, 0, 1.0);
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.max(1e-6);
        let mut noisy = 0.0;
        for (t, file) in files.iter().enumerate() {
            for (k, phase) in file.phases.iter().enumerate() {
                let mut total = 0.0;
                for task in &phase.tasks {
                    total += task.time;
                    match task.user_defined {
                        UserDefined::Subdomain { updates, .. } => {
                            let want = updates as f64 * unit_s;
                            assert!(close(task.time, want), "{task:?}: {want} s");
                        }
                        UserDefined::Noise { .. } if t == 1 => noisy += task.time,
                        UserDefined::Noise { .. } => {
                            assert!(task.time.abs() < 1e-15, "a quiet core: {}", task.time)
                        }
                    }
                }
                // All of it adds up to the time its subdomains took.
                let took: f64 = (0..plan.problem.subs.len())
                    .filter(|&s| k == 0 || trace[k - 1].owners[s] == t)
                    .filter(|&s| k > 0 || plan.problem.subs[s].domain == t)
                    .map(|s| {
                        trace[k].busy_s[s] - k.checked_sub(1).map_or(0.0, |j| trace[j].busy_s[s])
                    })
                    .sum();
                assert!(
                    close(total, took),
                    "thread {t}, phase {k}: {total} s of {took}"
                );
            }
        }
        assert!(noisy > 0.0, "the noisy core lost nothing");
        assert!(trace.len() > 5, "{} phases", trace.len());
    }
}
