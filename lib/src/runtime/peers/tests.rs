use super::*;
use crate::engine::{BalancerSettings, Scheme, Settings, Slow};
use crate::policy::{Move, Named, Policy, Snapshot};
use crate::problem::{Neighbour, Side, sequential_jacobi};
use crate::topology::Topology;
use std::collections::HashMap;
use std::sync::{Barrier, Mutex};

/// What the ranks put down in one exchange, read back by all.
#[derive(Default)]
struct Board {
    edges: HashMap<(usize, usize), Vec<u64>>,
    wishes: Vec<Wish>,
    cells: Vec<(usize, Vec<f64>)>,
    sums: Vec<(usize, Vec<f64>)>,
    /// Packed subdomains by (from, to) rank.
    packs: HashMap<(usize, usize), Vec<u64>>,
}

struct Hub {
    ranks: usize,
    threads: usize,
    barrier: Barrier,
    board: Mutex<Board>,
    /// The longest `sums` any exchange carried: a view, or none.
    widest_sums: std::sync::atomic::AtomicUsize,
}

struct Rank<'h> {
    hub: &'h Hub,
    rank: usize,
}

impl Rank<'_> {
    /// Everyone has put down, then everyone reads, then it is cleared.
    fn meet<T>(&self, put: impl FnOnce(&mut Board), read: impl FnOnce(&Board) -> T) -> T {
        put(&mut self.hub.board.lock().unwrap());
        self.hub.barrier.wait();
        let out = read(&self.hub.board.lock().unwrap());
        if self.hub.barrier.wait().is_leader() {
            *self.hub.board.lock().unwrap() = Board::default();
        }
        self.hub.barrier.wait();
        out
    }

    /// The rank whose threads own `sub` now.
    fn owner(&self, subs: &[Subdomain], sub: usize) -> usize {
        subs[sub].owner() / self.hub.threads
    }
}

impl Peers for Rank<'_> {
    fn threads(&self) -> Range<usize> {
        self.rank * self.hub.threads..(self.rank + 1) * self.hub.threads
    }
    /// Each rank stands for a node of its own.
    fn thread_nodes(&self) -> Vec<usize> {
        (0..self.hub.ranks * self.hub.threads)
            .map(|t| t / self.hub.threads)
            .collect()
    }
    fn start(&self) {
        self.hub.barrier.wait();
    }
    fn exchange(&self, subs: &[Subdomain], wish: Wish, sums: &mut [f64]) -> Wish {
        self.hub
            .widest_sums
            .fetch_max(sums.len(), std::sync::atomic::Ordering::Relaxed);
        self.sum(sums);
        let (edges, all) = self.meet(
            |b| {
                for s in subs
                    .iter()
                    .filter(|s| self.owner(subs, s.geom.id) == self.rank)
                {
                    for side in Side::ALL {
                        if let Neighbour::Sub(n) = s.geom.neighbour(side)
                            && self.owner(subs, n) != self.rank
                        {
                            let mut e = Vec::new();
                            s.export_edge(side, &mut e);
                            b.edges.insert((s.geom.id, side.index()), e);
                        }
                    }
                }
                b.wishes.push(wish);
            },
            |b| {
                let all = Wish {
                    stop: b
                        .wishes
                        .iter()
                        .map(|w| urgency(w.stop))
                        .max()
                        .and_then(from_urgency),
                    estimate_sq: b.wishes.iter().map(|w| w.estimate_sq).sum(),
                    round: b.wishes.iter().map(|w| w.round).min().unwrap(),
                    at_sum: b.wishes.iter().map(|w| w.at_sum).sum(),
                    count_sum: b.wishes.iter().map(|w| w.count_sum).sum(),
                    most_updates: b.wishes.iter().map(|w| w.most_updates).max().unwrap(),
                    now_ns: b.wishes.iter().map(|w| w.now_ns).max().unwrap(),
                };
                (b.edges.clone(), all)
            },
        );
        for ((n, side), e) in edges {
            if self.owner(subs, n) != self.rank {
                subs[n].import_edge(Side::ALL[side], &e);
            }
        }
        all
    }
    fn gather(&self, problem: &Problem, subs: &Subdomains) -> Option<Array2<f64>> {
        let cells = self.meet(
            |b| {
                for s in subs
                    .iter()
                    .filter(|s| self.owner(subs, s.geom.id) == self.rank)
                {
                    let mut c = Vec::new();
                    subs.interior_into(problem, s.geom.id, &mut c);
                    b.cells.push((s.geom.id, c));
                }
            },
            |b| b.cells.clone(),
        );
        (self.rank == 0).then(|| {
            let mut grid = problem.initial_grid();
            for (id, c) in cells {
                crate::subdomain::place_interior(&mut grid, &problem.subs[id], &c);
            }
            grid
        })
    }
    fn wants_grid(&self) -> bool {
        true
    }
    fn sum(&self, values: &mut [f64]) {
        let me = self.rank;
        let v = self.meet(
            |b| b.sums.push((me, values.to_vec())),
            |b| {
                // In rank order, as a reduction's fixed order would.
                let mut parts: Vec<&(usize, Vec<f64>)> = b.sums.iter().collect();
                parts.sort_by_key(|p| p.0);
                let mut v = vec![0.0; values.len()];
                for (_, vs) in parts {
                    v.iter_mut().zip(vs).for_each(|(a, x)| *a += x);
                }
                v
            },
        );
        values.copy_from_slice(&v);
    }
    fn reduce(&self, sums: &mut [f64], maxes: &mut [f64]) {
        self.sum(sums);
        let me = self.rank;
        let all = self.meet(
            |b| b.sums.push((me, maxes.to_vec())),
            |b| {
                let mut m = vec![f64::NEG_INFINITY; maxes.len()];
                for (_, v) in &b.sums {
                    m.iter_mut().zip(v).for_each(|(a, x)| *a = a.max(*x));
                }
                m
            },
        );
        maxes.copy_from_slice(&all);
    }
    fn post(&self, sends: &[(usize, Vec<u64>)], from: &[usize]) -> Vec<Vec<u64>> {
        let me = self.rank;
        self.meet(
            |b| {
                for (to, words) in sends {
                    b.packs.insert((me, *to), words.clone());
                }
            },
            |b| {
                from.iter()
                    .map(|r| b.packs.get(&(*r, me)).cloned().expect("a message sent"))
                    .collect()
            },
        )
    }
    fn migrate(&self, sends: &[(usize, Vec<u64>)], recvs: &[(usize, usize)]) -> Vec<Vec<u64>> {
        // `post`, with each pack's length checked against the expected.
        let from: Vec<usize> = recvs.iter().map(|&(r, _)| r).collect();
        let got = self.post(sends, &from);
        for (words, &(_, len)) in got.iter().zip(recvs) {
            assert_eq!(words.len(), len, "a pack of another length than expected");
        }
        got
    }
    /// Edges here go wherever the owners say at each exchange.
    fn reroute(&self, _: &Problem, _: &[usize]) {}
    fn merge(&self, _: &mut Outcome) {}
    fn abort(&self) -> ! {
        panic!("a rank aborted the job")
    }
}

/// Runs `ranks` ranks of `threads` threads each, as threads here; rank
/// 0's outcome.
fn run_as_threads(ranks: usize, threads: usize, spd: usize, settings: &Settings) -> Outcome {
    run_all_sized(12, ranks, threads, spd, settings, None).swap_remove(0)
}

/// Every rank's outcome, on domains of `size` x `size`, each run with
/// `balancer` if given.
fn run_all_sized(
    size: usize,
    ranks: usize,
    threads: usize,
    spd: usize,
    settings: &Settings,
    balancer: Option<&BalancerSettings>,
) -> Vec<Outcome> {
    run_all_widest(size, ranks, threads, spd, settings, balancer).0
}

/// As [`run_all_sized`], with the longest `sums` an exchange carried.
fn run_all_widest(
    size: usize,
    ranks: usize,
    threads: usize,
    spd: usize,
    settings: &Settings,
    balancer: Option<&BalancerSettings>,
) -> (Vec<Outcome>, usize) {
    let problem = Problem::new(size, ranks * threads, spd).unwrap();
    let placement = Topology::uniform(1, 2)
        .place(ranks * threads, true)
        .unwrap();
    let hub = Hub {
        ranks,
        threads,
        barrier: Barrier::new(ranks),
        board: Mutex::default(),
        widest_sums: Default::default(),
    };
    assert_eq!(hub.ranks, ranks);
    let outs = std::thread::scope(|scope| {
        let runs: Vec<_> = (0..ranks)
            .map(|rank| {
                let (hub, problem, placement) = (&hub, &problem, &placement);
                scope.spawn(move || {
                    let peers = Rank { hub, rank };
                    match balancer {
                        Some(b) => super::super::run_ranks_balanced(
                            problem, placement, settings, &peers, b,
                        ),
                        None => super::super::run_ranks(problem, placement, settings, &peers),
                    }
                })
            })
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    (outs, hub.widest_sums.into_inner())
}

#[test]
fn sync_across_ranks_is_sequential_jacobi_bit_for_bit() {
    for (ranks, threads) in [(2, 1), (2, 2), (3, 1)] {
        let out = run_as_threads(ranks, threads, 1, &Settings::plain(Scheme::Sync, 23));
        let problem = Problem::new(12, ranks * threads, 1).unwrap();
        assert_eq!(
            out.grid.unwrap(),
            sequential_jacobi(&problem, 23),
            "{ranks} x {threads}"
        );
        assert_eq!(out.stop, StopReason::MaxIterations);
    }
}

#[test]
fn async_across_ranks_converges_on_the_gathered_grid() {
    let mut s = Settings::plain(Scheme::Async { balancer: None }, u64::MAX / 8);
    s.tolerance = Some(1e-3);
    // A bound, so that a broken exchange fails here instead of running for
    // ever (it did, with a wrong halo column); it converges in well under a
    // second.
    s.time_limit = Some(std::time::Duration::from_secs(60));
    let out = run_as_threads(2, 2, 4, &s);
    assert_eq!(out.stop, StopReason::Converged);
    let r = out.residual.unwrap();
    assert!(out.converged && r <= 1e-3, "{r}");
    // The ranks' summed parts are the residual of the grid rank 0
    // gathered from the same state, to rounding.
    let grid = out.grid.unwrap();
    let r0 = crate::problem::residual_norm(&Problem::new(12, 4, 4).unwrap().initial_grid());
    let gathered = crate::problem::residual_norm(&grid) / r0;
    assert!((r / gathered - 1.0).abs() < 1e-12, "{r} against {gathered}");
}

/// A balancer that moves a subdomain to the next thread at every call, and
/// at every third call also sends another one two threads on by way of the
/// next (two moves of one subdomain in one call): with one thread per rank,
/// every move crosses ranks.
#[derive(Debug)]
struct Shuttle;

impl Policy for Shuttle {
    fn decide(&self, s: &Snapshot<'_>) -> Vec<Move> {
        let (n, threads) = (s.owners.len(), s.held.len());
        let sub = (s.call as usize * 7) % n;
        let from = s.owners[sub];
        let mut moves = vec![Move {
            sub,
            from,
            to: (from + 1) % threads,
        }];
        let other = (sub + n / 2) % n;
        if s.call.is_multiple_of(3) && other != sub {
            let from = s.owners[other];
            let via = (from + 1) % threads;
            moves.push(Move {
                sub: other,
                from,
                to: via,
            });
            moves.push(Move {
                sub: other,
                from: via,
                to: (via + 1) % threads,
            });
        }
        moves
    }
    fn name(&self) -> Named {
        "joint".parse().unwrap()
    }
}

fn shuttle() -> BalancerSettings {
    BalancerSettings::every(std::sync::Arc::new(Shuttle), std::time::Duration::ZERO)
}

/// Each subdomain's count as the rank that owns it at the end has it: the
/// ranks' own outcomes, not a merged report (the transport here merges
/// nothing).
fn owned_counts(outs: &[Outcome], threads: usize) -> Vec<u64> {
    let owners = &outs[0].owners;
    (0..owners.len())
        .map(|s| outs[owners[s] / threads].subdomain_updates[s])
        .collect()
}

/// The subdomains' counts, summed, against the updates of each rank's
/// threads, summed.
fn counts_add_up(outs: &[Outcome], threads: usize) -> (u64, u64) {
    let made = outs
        .iter()
        .enumerate()
        .map(|(rank, out)| {
            let mine = rank * threads..(rank + 1) * threads;
            out.thread_updates[mine].iter().sum::<u64>()
        })
        .sum();
    (owned_counts(outs, threads).iter().sum(), made)
}

#[test]
fn sync_stays_sequential_jacobi_while_subdomains_shuttle_between_ranks() {
    for (ranks, threads, spd) in [(2, 1, 4), (3, 1, 2), (2, 2, 4)] {
        // The budget is a thread's updates, and a thread's share changes
        // at every crossing: the iterations are what the counts say.
        let s = Settings::plain(Scheme::Sync, 2000);
        let outs = run_all_sized(12, ranks, threads, spd, &s, Some(&shuttle()));
        let problem = Problem::new(12, ranks * threads, spd).unwrap();
        let out = &outs[0];
        let counts = owned_counts(&outs, threads);
        let k = counts[0];
        assert!(
            counts.iter().all(|&c| c == k),
            "{ranks} x {threads} x {spd}: {counts:?}"
        );
        assert!(k > 100, "{k} iterations");
        let lb = out.lb.as_ref().unwrap();
        // A call at every crossing but the last, each one moving.
        assert!(lb.moves >= k - 1, "{ranks} x {threads}: {} moves", lb.moves);
        assert_eq!(
            out.grid.as_ref().unwrap(),
            &sequential_jacobi(&problem, k as usize),
            "{ranks} x {threads} x {spd}"
        );
        assert_eq!(out.stop, StopReason::MaxIterations);
        let (subs, made) = counts_add_up(&outs, threads);
        assert_eq!(subs, made);
        assert_eq!(subs, k * problem.subs.len() as u64);
        // Every rank ends with the same owners.
        assert!(outs.iter().all(|o| o.owners == out.owners));
    }
}

#[test]
fn async_converges_and_loses_no_update_while_subdomains_shuttle_between_ranks() {
    let mut s = Settings::plain(Scheme::Async { balancer: None }, u64::MAX / 8);
    s.tolerance = Some(1e-3);
    s.time_limit = Some(std::time::Duration::from_secs(60));
    let b = BalancerSettings::every(
        std::sync::Arc::new(Shuttle),
        std::time::Duration::from_micros(200),
    );
    let outs = run_all_sized(12, 2, 2, 4, &s, Some(&b));
    let out = &outs[0];
    assert_eq!(out.stop, StopReason::Converged);
    assert!(out.converged && out.residual.unwrap() <= 1e-3);
    assert!(out.lb.as_ref().unwrap().moves > 0);
    let (subs, made) = counts_add_up(&outs, 2);
    assert_eq!(
        subs, made,
        "the subdomains' counts against the threads' updates"
    );
    assert!(outs.iter().all(|o| o.owners == out.owners));
}

/// Domains big enough that the slow thread's rate shows through a busy
/// machine's time slices.
const SLOW_SIZE: usize = 48;

#[test]
fn joint_hybrid_and_gossip_move_work_off_a_slow_rank() {
    for label in ["joint(0.001)", "hybrid(0.001,2)", "gossip(0.001)"] {
        let mut cfg = crate::config::Config {
            oversubscribe: true,
            ..Default::default()
        };
        cfg.apply_variant(&format!("async(4)+{label}")).unwrap();
        let plan = crate::plan::Plan::new(&cfg, &Topology::uniform(1, 2)).unwrap();
        let mut s = Settings::plain(plan.settings.scheme.clone(), u64::MAX / 8);
        s.tolerance = Some(1e-4);
        s.time_limit = Some(std::time::Duration::from_secs(60));
        // Rank 1's only thread, 6x slower on its CPU clock: 3x was swamped
        // once when the machine ran six programs on its two cores (a
        // thread off its core for a time slice looks slowest of all).
        s.slow = Some(Slow {
            thread: 1,
            factor: 5.0,
        });
        // Beside the rest of the suite and two CPU hogs, a rank's rate is
        // what the scheduler gave it as much as its slowness: a balancer
        // that sees past the jitter may rightly not move in one run
        // (seen once). Three attempts; one that never moves fails all.
        let mut seen = Vec::new();
        for _ in 0..3 {
            let (outs, widest) = run_all_widest(SLOW_SIZE, 2, 1, 4, &s, None);
            let out = &outs[0];
            assert_eq!(out.stop, StopReason::Converged, "{label}");
            // Gossip decides apart: no exchange carries the view (the
            // global strategies' view is 3 words per subdomain and per
            // thread here).
            let gossip = label.starts_with("gossip");
            assert_eq!(widest == 0, gossip, "{label}: sums of {widest} words");
            let (subs, made) = counts_add_up(&outs, 1);
            assert_eq!(subs, made, "{label}");
            let held = |t| out.owners.iter().filter(|&&o| o == t).count();
            let moves = out.lb.as_ref().unwrap().moves;
            // Gossip's transfers trade work back and forth as measured
            // speeds jitter (docs/across-nodes.md), so where the work ends
            // is not its measure here: that it moved, between the ranks,
            // is. The direction of its moves is `policy::gossip`'s tests'.
            let moved_off = if gossip { moves > 0 } else { held(0) > held(1) };
            if moved_off {
                break;
            }
            seen.push(format!(
                "{moves} moves, held {} against {}",
                held(0),
                held(1)
            ));
        }
        assert!(seen.len() < 3, "{label}: {seen:?}");
    }
}

#[test]
fn the_trace_across_ranks_samples_every_count_and_owner_and_ends_on_the_final_ones() {
    let shuttling = BalancerSettings::every(
        std::sync::Arc::new(Shuttle),
        std::time::Duration::from_micros(200),
    );
    let mut s_async = Settings::plain(Scheme::Async { balancer: None }, u64::MAX / 8);
    s_async.tolerance = Some(1e-4);
    s_async.time_limit = Some(std::time::Duration::from_secs(60));
    let s_sync = Settings::plain(Scheme::Sync, 3000);
    for mut s in [s_async, s_sync] {
        s.trace_interval = Some(std::time::Duration::from_micros(500));
        let outs = run_all_sized(12, 2, 2, 4, &s, Some(&shuttling));
        let out = &outs[0];
        let trace = &out.trace;
        assert!(trace.len() >= 2, "{} samples", trace.len());
        // Every rank recorded the same trace.
        for o in &outs[1..] {
            assert_eq!(&o.trace, trace);
        }
        for pair in trace.windows(2) {
            assert!(pair[0].t_s <= pair[1].t_s);
            let grew = pair[0].counts.iter().zip(&pair[1].counts);
            assert!(grew.into_iter().all(|(a, b)| a <= b), "a count went back");
        }
        assert!(trace.iter().all(|t| t.owners.iter().all(|&o| o < 4)));
        // Subdomains moved while it sampled: the owners it saw changed.
        assert!(trace.iter().any(|t| t.owners != trace[0].owners));
        // The last sample is the run's end, as each owning rank counts it.
        let last = trace.last().unwrap();
        assert_eq!(last.counts, owned_counts(&outs, 2));
        assert_eq!(last.owners, out.owners);
    }
}
