//! A run as DARMA vt's LB data files (`--lb-data DIR`). One `data.<PE>.json` per
//! processing element, from the run's trace with its loads
//! (`TraceSample::busy_s`, `TraceSample::lost_s`), plain or
//! brotli-compressed ([`Encoding`]).
//!
//! # How braid maps onto vt
//!
//! | vt | braid |
//! |---|---|
//! | processing element (rank), `metadata.rank`, a file | a worker thread (across MPI ranks, a rank's thread), numbered as in the report |
//! | `metadata.shared_node` | the thread's node: its id, how many threads it holds, this thread's index among them, the nodes |
//! | `metadata.attributes` | `socket` (the thread's), `source` (`braid`), `braid_version` |
//! | phase | the run between two trace samples (`boundaries`): windows of `trace_interval` (else the balancer's interval), cut also where a call moved subdomains |
//! | migratable task, `entity.seq_id` | a subdomain, by id; `collection_id` 0; `home` the thread whose domain it is (its first owner) |
//! | task `node` | the subdomain's owner throughout the phase |
//! | task `time` | the subdomain's own cost per update times the phase's pace, the sweeps of the slowest thread (`phase` says why) |
//! | non-migratable task, `seq_id` = subdomains + PE | the time the thread lost to noise, over the same pace: in the simulator what the core's noise stretched its updates by; in the runtime its subdomains' busy time times the share of the phase it waited for its core (schedstat) |
//! | `communications`, `SendRecv` | each halo edge a subdomain sent in the phase: `messages` its updates, `bytes` 8 per cell of the edge per update, in the sender's file |
//! | task `user_defined` | `updates` (in the phase), `cells`, `pace`; the noise task's `noise: 1` |
//! | phase `user_defined` | `window_s`, `pace`, the thread's `busy_s` and `ahead_s` (busy beyond the pace) |

use std::path::Path;

use serde::Serialize;

use crate::problem::{Neighbour, Problem, Side};
use crate::trace::TraceSample;

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
    user_defined: PhaseUse,
}

/// What a phase's tasks do not say (see [`phase`]).
#[derive(Debug, Serialize)]
struct PhaseUse {
    /// The phase's length, seconds.
    window_s: f64,
    /// The sweeps the slowest thread made: a task's time is its
    /// subdomain's cost of this many updates (of its own `pace`, less
    /// where its thread's tasks were scaled down to the phase).
    pace: f64,
    /// The thread's time updating its subdomains (noise included).
    busy_s: f64,
    /// Its busy time beyond the pace: running ahead of the slowest thread
    /// (the time a bulk-synchronous code would wait at the next step).
    ahead_s: f64,
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
    /// `pace`: the updates `time` is the cost of (see [`phase`]).
    Subdomain {
        updates: u64,
        cells: usize,
        pace: f64,
    },
    Noise {
        noise: u8,
    },
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

impl LbFile {
    /// How many phases it holds.
    pub fn phases(&self) -> usize {
        self.phases.len()
    }
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

/// One [`LbFile`] per thread of `problem`, from `trace` sampled every
/// `window_s` seconds (and where a call moved subdomains): see
/// `boundaries` for the phases and `phase` for what a task holds.
pub fn files(
    problem: &Problem,
    trace: &[TraceSample],
    places: &Places<'_>,
    window_s: f64,
) -> Result<Vec<LbFile>, LbDataError> {
    let (n, threads) = (problem.subs.len(), problem.threads);
    if trace
        .iter()
        .any(|t| t.busy_s.len() != n || t.lost_s.len() != threads)
    {
        return Err(LbDataError::NoLoads);
    }
    let start = TraceSample {
        t_s: 0.0,
        counts: vec![0; n],
        owners: problem.subs.iter().map(|g| g.domain).collect(),
        busy_s: vec![0.0; n],
        work_s: match trace.first() {
            Some(t) if t.work_s.len() == n => vec![0.0; n],
            _ => Vec::new(),
        },
        lost_s: vec![0.0; threads],
    };
    let points: Vec<&TraceSample> = std::iter::once(&start).chain(trace).collect();
    let mut out: Vec<LbFile> = (0..threads)
        .map(|t| LbFile {
            kind: "LBDatafile",
            metadata: metadata(t, places),
            phases: Vec::new(),
        })
        .collect();
    let cuts = boundaries(&points, window_s);
    for (id, w) in cuts.windows(2).enumerate() {
        let phases = phase(problem, id, points[w[0]], points[w[1]]);
        for (file, phase) in out.iter_mut().zip(phases) {
            file.phases.push(phase);
        }
    }
    Ok(out)
}

/// The samples (indices into `points`, the start first) that bound the
/// phases. Every update is in a phase: the last is the first sample that
/// holds all of the run's updates (later ones, a monitor's after the
/// workers stopped, hold nothing). A sample where owners changed always
/// bounds one, so that no subdomain changes owner within a phase. Another
/// bounds one only if updates were made since the last bound and at least
/// half a window has passed (the simulator's first sample comes at the
/// first update's end, microseconds in): no phase is empty or a sliver.
fn boundaries(points: &[&TraceSample], window_s: f64) -> Vec<usize> {
    let total = |p: &TraceSample| p.counts.iter().sum::<u64>();
    let all = points.last().map_or(0, |p| total(p));
    let end = points
        .iter()
        .position(|p| total(p) == all)
        .unwrap_or(0)
        .max(1)
        .min(points.len() - 1);
    let mut kept = vec![0];
    for i in 1..=end {
        let k = kept[kept.len() - 1];
        let (a, b) = (points[k], points[i]);
        let worked = total(b) > total(a);
        let long = b.t_s - a.t_s >= window_s / 2.0;
        if i == end || a.owners != b.owners || (worked && long) {
            kept.push(i);
        }
    }
    kept
}

/// Each thread's phase `id` between two samples, under the owners at its
/// start (no subdomain changes owner within a phase: [`boundaries`]).
///
/// A task's `time` is its subdomain's own cost per update in the phase
/// (its work over its updates) times the phase's pace: the sweeps the
/// slowest thread made, a sweep being an update of each of its
/// subdomains. So a thread's tasks add up to the work of one pace's
/// sweeps of its set, as in a bulk-synchronous step, and an analysis tool
/// sees the imbalance an asynchronous run hides (there, every thread is
/// busy all the time, the heavy one advancing more slowly). The slowest
/// thread's tasks are its work; a faster thread's time beyond the pace,
/// spent running ahead, is the phase's `user_defined.ahead_s`. The noise
/// task holds the thread's time lost to noise over the same pace. A
/// thread's tasks never add up to more than the phase (a real update that
/// straddles a sample is counted whole after it: the tasks are scaled
/// down to the phase, what is cut counted ahead).
fn phase(problem: &Problem, id: usize, before: &TraceSample, after: &TraceSample) -> Vec<Phase> {
    let window = (after.t_s - before.t_s).max(0.0);
    let used = Used::between(problem, before, after, window);
    let owners = &before.owners;
    let pace = used.pace(problem.threads, owners);
    let fit = used.fitted(problem.threads, owners, pace, window);
    let mut phases: Vec<Phase> = (0..problem.threads)
        .map(|t| Phase {
            id,
            tasks: Vec::new(),
            communications: Vec::new(),
            user_defined: PhaseUse {
                window_s: window,
                pace,
                busy_s: fit.spent[t],
                ahead_s: (fit.spent[t] - fit.total[t]).max(0.0),
            },
        })
        .collect();
    for (s, &t) in owners.iter().enumerate() {
        push_subdomain(&mut phases[t], problem, (s, t), &used, fit.paces[s]);
    }
    let n = problem.subs.len();
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
            time: fit.noise_time[t],
            user_defined: UserDefined::Noise { noise: 1 },
        });
    }
    phases
}

/// What a phase used, from the samples at its ends: each subdomain's
/// updates, busy time, own work and cost per update, and each thread's
/// noise.
struct Used {
    updates: Vec<u64>,
    busy: Vec<f64>,
    work: Vec<f64>,
    cost: Vec<f64>,
    noise: Vec<f64>,
}

impl Used {
    fn between(problem: &Problem, before: &TraceSample, after: &TraceSample, window: f64) -> Used {
        let (n, threads) = (problem.subs.len(), problem.threads);
        let owners = &before.owners;
        let updates: Vec<u64> = (0..n)
            .map(|s| after.counts[s].saturating_sub(before.counts[s]))
            .collect();
        let busy: Vec<f64> = (0..n)
            .map(|s| (after.busy_s[s] - before.busy_s[s]).max(0.0))
            .collect();
        let lost = |t: usize| (after.lost_s[t] - before.lost_s[t]).max(0.0);
        // Each subdomain's own work, each thread's noise: as the simulator
        // knew them, or the thread's time waiting for its core shared out.
        let mut noise = vec![0.0; threads];
        let work: Vec<f64> = match after.work_s.len() == n {
            true => {
                let work: Vec<f64> = (0..n)
                    .map(|s| (after.work_s[s] - before.work_s[s]).max(0.0))
                    .collect();
                for s in 0..n {
                    noise[owners[s]] += (busy[s] - work[s]).max(0.0);
                }
                work
            }
            false => {
                let waited = waited_shares(threads, lost, window);
                for s in 0..n {
                    noise[owners[s]] += busy[s] * waited[owners[s]];
                }
                (0..n)
                    .map(|s| busy[s] * (1.0 - waited[owners[s]]))
                    .collect()
            }
        };
        let cost = (0..n)
            .map(|s| match updates[s] {
                0 => 0.0,
                u => work[s] / u as f64,
            })
            .collect();
        Used {
            updates,
            busy,
            work,
            cost,
            noise,
        }
    }

    /// The phase's pace: the sweeps the slowest thread made (its work over
    /// the cost of one sweep). A thread that owns subdomains and updated
    /// none made no sweep: the pace is 0. One that owns none sets no pace.
    fn pace(&self, threads: usize, owners: &[usize]) -> f64 {
        let sweeps = self.sweeps(threads, owners);
        let pace = sweeps
            .iter()
            .flatten()
            .copied()
            .fold(f64::INFINITY, f64::min);
        if pace.is_finite() { pace } else { 0.0 }
    }

    fn sweeps(&self, threads: usize, owners: &[usize]) -> Vec<Option<f64>> {
        let mut sweep = vec![(0.0, 0.0); threads];
        for (s, &t) in owners.iter().enumerate() {
            sweep[t].0 += self.work[s];
            sweep[t].1 += self.cost[s];
        }
        let mut owns = vec![false; threads];
        for &t in owners {
            owns[t] = true;
        }
        (0..threads)
            .map(|t| match sweep[t] {
                (w, c) if c > 0.0 => Some(w / c),
                _ => owns[t].then_some(0.0),
            })
            .collect()
    }

    /// Each thread's tasks at `pace`, scaled down to the window where they
    /// would add up to more than it.
    fn fitted(&self, threads: usize, owners: &[usize], pace: f64, window: f64) -> Fitted {
        let n = owners.len();
        // Each thread's share of its time that the pace covers.
        let share: Vec<f64> = self
            .sweeps(threads, owners)
            .iter()
            .map(|s| match s {
                Some(s) if *s > 0.0 => pace / s,
                _ => 1.0,
            })
            .collect();
        let mut paces = vec![pace; n];
        let mut noise_time: Vec<f64> = (0..threads).map(|t| self.noise[t] * share[t]).collect();
        let mut spent = vec![0.0; threads];
        let mut total = noise_time.clone();
        for s in 0..n {
            spent[owners[s]] += self.busy[s];
            total[owners[s]] += self.cost[s] * pace;
        }
        for t in 0..threads {
            if total[t] > window && total[t] > 0.0 {
                let scale = window / total[t];
                noise_time[t] *= scale;
                total[t] = window;
                for s in (0..n).filter(|&s| owners[s] == t) {
                    paces[s] *= scale;
                }
            }
        }
        Fitted {
            paces,
            noise_time,
            spent,
            total,
        }
    }
}

/// A phase's tasks fitted to its window: each subdomain's pace, each
/// thread's noise task, its busy time and its tasks' total.
struct Fitted {
    paces: Vec<f64>,
    noise_time: Vec<f64>,
    spent: Vec<f64>,
    total: Vec<f64>,
}

fn entity(problem: &Problem, s: usize) -> Entity {
    Entity {
        kind: "object",
        seq_id: s,
        home: problem.subs[s].domain,
        migratable: true,
        collection_id: Some(0),
    }
}

/// Subdomain `s`'s task on thread `t` at `pace`, and its edges' messages
/// to its neighbouring subdomains (none if it was not updated).
fn push_subdomain(
    phase: &mut Phase,
    problem: &Problem,
    (s, t): (usize, usize),
    used: &Used,
    pace: f64,
) {
    let g = &problem.subs[s];
    let u = used.updates[s];
    phase.tasks.push(Task {
        entity: entity(problem, s),
        node: t,
        resource: "cpu",
        time: used.cost[s] * pace,
        user_defined: UserDefined::Subdomain {
            updates: u,
            cells: g.cells(),
            pace,
        },
    });
    if u == 0 {
        return;
    }
    for side in Side::ALL {
        if let Neighbour::Sub(other) = g.neighbour(side) {
            let cells = g.edge_cells(side);
            phase.communications.push(Communication {
                kind: "SendRecv",
                from: entity(problem, s),
                to: entity(problem, other),
                messages: u,
                bytes: (8 * cells) as f64 * u as f64,
            });
        }
    }
}

/// Each thread's share of a phase of `window` seconds spent waiting for
/// its core (`lost(t)`, Linux's schedstat, updating or not): that share
/// of its subdomains' busy time was the noise's, the rest their work.
fn waited_shares(threads: usize, lost: impl Fn(usize) -> f64, window: f64) -> Vec<f64> {
    (0..threads)
        .map(|t| match window > 0.0 {
            true => (lost(t) / window).clamp(0.0, 1.0),
            false => 0.0,
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

/// How the files are written: vt reads both, and writes brotli by default
/// (`--vt_lb_data_compress`); braid writes plain JSON unless asked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Encoding {
    /// Plain JSON text.
    #[default]
    Json,
    /// Brotli-compressed JSON, under the same names (`data.<PE>.json`).
    Brotli,
}

/// Writes `files` into `dir` as `data.<PE>.json`, each whole or not at all.
pub fn write(dir: &Path, files: &[LbFile], encoding: Encoding) -> Result<(), LbDataError> {
    for (pe, file) in files.iter().enumerate() {
        let path = dir.join(format!("data.{pe}.json"));
        braid_noise::files::write_atomic(&path, |w| match encoding {
            Encoding::Json => {
                serde_json::to_writer(&mut *w, file).map_err(std::io::Error::other)?;
                writeln!(w)
            }
            Encoding::Brotli => {
                // Whole, then compressed: the compressor's writer would end
                // its stream on drop, where an error is lost. Quality 5 of
                // 11: most of the gain at a fraction of the time.
                let mut json = serde_json::to_vec(file).map_err(std::io::Error::other)?;
                json.push(b'\n');
                let params = brotli::enc::BrotliEncoderParams {
                    quality: 5,
                    lgwin: 22,
                    ..Default::default()
                };
                brotli::BrotliCompress(&mut json.as_slice(), &mut &mut *w, &params).map(drop)
            }
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
        let sim = plan.sim().unwrap();
        let noise = plan.noise.as_ref();
        let (out, _) = crate::sim::run(&plan.problem, &plan.placement, &plan.settings, sim, noise);
        let places = Places {
            sockets: &plan.placement.sockets,
            nodes: &sim.nodes,
        };
        let files = files(&plan.problem, &out.trace, &places, 50e-6).unwrap();
        (plan, out.trace, files)
    }

    #[test]
    fn lb_data_written_and_read_back_replays_each_subdomains_cost() {
        // Random factors on a core at 50% noise: read back as a workload,
        // every phase costs each subdomain its update at the cost model's
        // price at its own factor (the noise is not a cost of the work).
        let (plan, trace, files) =
            simulated(&["workload=random(1,4)", "noise=thread", "noise_cores=1:0.5"]);
        let dir = braid_testkit::scratch_dir("lbdata-replay");
        write(&dir, &files, Encoding::Json).unwrap();
        let spec = crate::workload::WorkloadSpec::LbData {
            path: dir.to_path_buf(),
            seconds_per_unit: 1.0,
        };
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
            assert_eq!(crate::lbdata::read::schema::check(&v), Ok(()));
            assert_eq!(file.phases.len(), files[0].phases.len());
            // Every phase: the PE's subdomains and one noise task.
            let tasks: usize = file.phases.iter().map(|p| p.tasks.len()).sum();
            assert!(tasks >= trace.len(), "{tasks} tasks");
        }
        // Each subdomain is one task per phase, in its owner's file.
        for p in 0..files[0].phases.len() {
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
    fn a_phases_tasks_are_each_subdomains_price_at_the_slowest_threads_pace() {
        // A core at 50% noise: its thread is the slowest. Every task holds
        // its subdomain's price of the phase's pace (the slowest thread's
        // sweeps); the slowest thread's tasks, its noise task with them,
        // add up to the time its subdomains took, and every thread's to
        // at most the phase.
        let (plan, _, files) = simulated(&["noise=thread", "noise_cores=1:0.5"]);
        let unit_s = crate::sim::tests::home_s(&plan, 0, 1.0);
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.max(1e-6);
        let mut noisy = 0.0;
        let phases = files[0].phases.len();
        let mut sums = vec![0.0; files.len()];
        for k in 0..phases {
            let mut totals = Vec::new();
            for (t, file) in files.iter().enumerate() {
                let phase = &file.phases[k];
                let u = &phase.user_defined;
                let mut total = 0.0;
                for task in &phase.tasks {
                    total += task.time;
                    match task.user_defined {
                        UserDefined::Subdomain { updates: 0, .. } => {}
                        UserDefined::Subdomain { pace, .. } => {
                            assert!(pace <= u.pace * (1.0 + 1e-12), "{pace} over {u:?}");
                            let want = pace * unit_s;
                            assert!(close(task.time, want), "{task:?}: {want} s");
                        }
                        UserDefined::Noise { .. } if t == 1 => noisy += task.time,
                        UserDefined::Noise { .. } => {
                            assert!(task.time.abs() < 1e-15, "a quiet core: {}", task.time)
                        }
                    }
                }
                assert!(total <= u.window_s * (1.0 + 1e-9), "{total} s in {u:?}");
                assert!(close(total + u.ahead_s, u.busy_s), "{total} s: {u:?}");
                totals.push(total);
            }
            for (t, total) in totals.iter().enumerate() {
                sums[t] += total;
            }
        }
        // Over the run, the noisy thread sets the pace: it runs ahead
        // least, and carries the most.
        let ahead: Vec<f64> = files
            .iter()
            .map(|f| f.phases.iter().map(|p| p.user_defined.ahead_s).sum())
            .collect();
        for t in [0, 2, 3] {
            assert!(ahead[1] < 0.5 * ahead[t], "ahead {ahead:?}");
            assert!(sums[1] > sums[t], "carried {sums:?}");
        }
        assert!(noisy > 0.0, "the noisy core lost nothing");
        assert!(phases > 5, "{phases} phases");
    }

    #[test]
    fn phases_hold_every_update_and_are_neither_empty_nor_slivers() {
        // A window of 50 us: the simulator's first sample comes at the
        // first update's end, and its last at the run's end, mid-window.
        let (plan, trace, files) = simulated(&[]);
        let updates: u64 = files
            .iter()
            .flat_map(|f| &f.phases)
            .flat_map(|p| &p.tasks)
            .map(|t| match t.user_defined {
                UserDefined::Subdomain { updates, .. } => updates,
                UserDefined::Noise { .. } => 0,
            })
            .sum::<u64>();
        let made: u64 = trace.last().unwrap().counts.iter().sum();
        assert_eq!(updates, made, "the files hold {updates} of {made} updates");
        assert_eq!(made, 1000 * plan.problem.subs.len() as u64);
        let phases = &files[0].phases;
        for (k, p) in phases.iter().enumerate() {
            let w = p.user_defined.window_s;
            let last = k + 1 == phases.len();
            assert!(last || w >= 25e-6, "phase {k} lasts {w} s");
            let made: u64 = files
                .iter()
                .flat_map(|f| &f.phases[k].tasks)
                .map(|t| match t.user_defined {
                    UserDefined::Subdomain { updates, .. } => updates,
                    UserDefined::Noise { .. } => 0,
                })
                .sum();
            assert!(made > 0, "phase {k} is empty");
        }
    }

    #[test]
    fn phases_end_at_owner_changes_and_skip_slivers_and_empty_windows() {
        let at = |t_s: f64, done: u64, owner: usize| TraceSample {
            t_s,
            counts: vec![done],
            owners: vec![owner],
            busy_s: vec![0.0],
            work_s: Vec::new(),
            lost_s: vec![0.0],
        };
        let points = [
            at(0.0, 0, 0),
            at(0.1, 1, 0),  // a sliver after the start: skipped
            at(1.0, 10, 0), // a window on: a bound
            at(1.2, 12, 1), // a call moved it: a bound, however short
            at(2.0, 20, 1), // a window on
            at(2.9, 20, 1), // nothing since: not a phase
            at(3.1, 25, 1), // the run's last update: the last bound
            at(3.5, 25, 1), // a monitor's sample after the end: nothing
        ];
        let refs: Vec<&TraceSample> = points.iter().collect();
        assert_eq!(boundaries(&refs, 1.0), vec![0, 2, 3, 4, 6]);
        // A run shorter than half a window is one phase.
        assert_eq!(boundaries(&refs[..2], 1.0), vec![0, 1]);
    }
}
