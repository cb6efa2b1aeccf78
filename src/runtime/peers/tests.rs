use super::*;
use crate::engine::{Scheme, Settings};
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
    numbers: Vec<(f64, u64)>,
}

struct Hub {
    ranks: usize,
    threads: usize,
    spd: usize,
    barrier: Barrier,
    board: Mutex<Board>,
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

    fn owner(&self, sub: usize) -> usize {
        sub / (self.hub.threads * self.hub.spd)
    }
}

impl Peers for Rank<'_> {
    fn threads(&self) -> Range<usize> {
        self.rank * self.hub.threads..(self.rank + 1) * self.hub.threads
    }
    fn start(&self) {
        self.hub.barrier.wait();
    }
    fn exchange(&self, subs: &[Subdomain], wish: Wish) -> Wish {
        let mine = subs_of(&self.threads(), self.hub.spd);
        let (edges, all) = self.meet(
            |b| {
                for s in &subs[mine.clone()] {
                    for side in Side::ALL {
                        if let Neighbour::Sub(n) = s.geom.neighbour(side)
                            && self.owner(n) != self.rank
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
                    most_updates: b.wishes.iter().map(|w| w.most_updates).max().unwrap(),
                };
                (b.edges.clone(), all)
            },
        );
        for ((n, side), e) in edges {
            if self.owner(n) != self.rank {
                subs[n].import_edge(Side::ALL[side], &e);
            }
        }
        all
    }
    fn gather(&self, problem: &Problem, subs: &[Subdomain]) -> Option<Array2<f64>> {
        let mine = subs_of(&self.threads(), self.hub.spd);
        let cells = self.meet(
            |b| {
                for s in &subs[mine.clone()] {
                    let mut c = Vec::new();
                    s.interior_into(problem, &mut c);
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
    fn share(&self, residual: f64, most_updates: u64) -> (f64, u64) {
        let rank = self.rank;
        self.meet(
            |b| {
                b.numbers
                    .push((if rank == 0 { residual } else { f64::NAN }, most_updates))
            },
            |b| {
                let r = b.numbers.iter().map(|n| n.0).find(|r| !r.is_nan()).unwrap();
                (r, b.numbers.iter().map(|n| n.1).max().unwrap())
            },
        )
    }
    fn merge(&self, _: &mut Outcome) {}
    fn abort(&self) -> ! {
        panic!("a rank aborted the job")
    }
}

/// Runs `ranks` ranks of `threads` threads each, as threads here; rank
/// 0's outcome.
fn run_as_threads(ranks: usize, threads: usize, spd: usize, settings: &Settings) -> Outcome {
    let problem = Problem::new(12, ranks * threads, spd).unwrap();
    let placement = Topology::uniform(1, 2)
        .place(ranks * threads, true)
        .unwrap();
    let hub = Hub {
        ranks,
        threads,
        spd,
        barrier: Barrier::new(ranks),
        board: Mutex::default(),
    };
    assert_eq!(hub.ranks, ranks);
    std::thread::scope(|scope| {
        let runs: Vec<_> = (0..ranks)
            .map(|rank| {
                let (hub, problem, placement) = (&hub, &problem, &placement);
                scope.spawn(move || {
                    let peers = Rank { hub, rank };
                    super::super::run_ranks(problem, placement, settings, &peers)
                })
            })
            .collect();
        let mut outcomes: Vec<Outcome> = runs.into_iter().map(|r| r.join().unwrap()).collect();
        outcomes.swap_remove(0)
    })
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
    // Rank 0 recomputed it from the whole grid, which it holds.
    let grid = out.grid.unwrap();
    let r0 = crate::problem::residual_norm(&Problem::new(12, 4, 4).unwrap().initial_grid());
    assert_eq!(crate::problem::residual_norm(&grid) / r0, r);
}
