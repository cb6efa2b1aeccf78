use super::*;
use crate::policy::Move;
use crate::problem::Problem;
use crate::subdomain;

#[test]
fn a_worker_that_starts_again_gets_its_whole_set() {
    // Regression: a second epoch's workers once started with an empty
    // set, because the first epoch had already cleared the dirty flags.
    let p = Problem::new(8, 2, 4).unwrap();
    let subs = subdomain::Subdomains::standalone(&p);
    let a = Assignment::new(&subs, 2);
    assert_eq!(a.current(1), vec![4, 5, 6, 7]);
    assert_eq!(a.current(1), vec![4, 5, 6, 7]);
}

#[test]
fn a_move_changes_the_owner_and_both_sets_and_marks_them_dirty() {
    let p = Problem::new(8, 2, 4).unwrap();
    let subs = subdomain::Subdomains::standalone(&p);
    let a = Assignment::new(&subs, 2);
    let (mut s0, mut s1) = (a.current(0), a.current(1));
    a.apply(
        &subs,
        Move {
            sub: 2,
            from: 0,
            to: 1,
        },
    );
    assert_eq!(subs[2].owner(), 1);
    a.refresh(0, &mut s0);
    a.refresh(1, &mut s1);
    assert_eq!(s0, vec![0, 1, 3]);
    assert_eq!(s1, vec![4, 5, 6, 7, 2]);
    // Nothing changed since: refresh leaves the copy alone.
    s1.clear();
    a.refresh(1, &mut s1);
    assert!(s1.is_empty());
}
/// Every strategy at every scope, as the engines' plan builds them.
fn every_policy() -> Vec<std::sync::Arc<dyn crate::policy::Policy>> {
    use crate::policy::*;
    use std::sync::Arc;
    let scopes = [Scope::Joint, Scope::Split, Scope::Hybrid { period: 3 }];
    let mut all: Vec<Arc<dyn Policy>> = Vec::new();
    for scope in scopes {
        let (low_threshold, high_threshold) = (2, 6);
        all.push(Arc::new(Progressive {
            predict: true,
            seed: 7,
            ..Progressive::as_printed(scope)
        }));
        all.push(Arc::new(Steal {
            bounds: Bounds {
                scope,
                low: low_threshold,
                high: high_threshold,
            },
        }));
        all.push(Arc::new(Greedy {
            bounds: Bounds {
                scope,
                low: low_threshold,
                high: high_threshold,
            },
        }));
        all.push(Arc::new(Refine {
            bounds: Bounds {
                scope,
                low: low_threshold,
                high: high_threshold,
            },
            tolerance: 0.05,
        }));
        all.push(Arc::new(Anticipate {
            bounds: Bounds {
                scope,
                low: low_threshold,
                high: high_threshold,
            },
            alpha: 0.3,
            history: 2,
        }));
        all.push(Arc::new(ResidualFirst {
            bounds: Bounds {
                scope,
                low: low_threshold,
                high: high_threshold,
            },
        }));
    }
    all
}

/// The runtime's balancer (atomics, locks, the handoff) and the
/// simulator's (plain arrays) driven through one scripted run: the same
/// counts and clocks in, the same calls, owners, sets and tallies out,
/// at every step, for every strategy and scope.
#[test]
fn the_runtime_and_the_simulator_balance_alike_on_one_script() {
    use crate::sim::{Board, Calls};
    let (threads, sockets) = (4, [0, 0, 1, 1]);
    let p = Problem::new(16, threads, 4).unwrap();
    for policy in every_policy() {
        let scope = policy.name();
        let interval = 10;
        let balancer = BalancerSettings::every(policy, std::time::Duration::from_nanos(interval));
        let subs = subdomain::Subdomains::standalone(&p);
        let assignment = Assignment::new(&subs, threads);
        let totals: Vec<CachePadded<AtomicU64>> =
            (0..threads).map(|_| Default::default()).collect();
        let runtime = SharedCalls::new(&balancer, threads, Measure::RATES);
        let mut board = Board::new(&p);
        let mut sim = Calls {
            rotation: Rotation::new(threads, interval),
            caller: Caller::new(&balancer, Measure::RATES),
        };
        let (mut now, mut calls) = (0, 0);
        for step in 0..300u64 {
            // An uneven clock, so that a due time off by a tick shows.
            now += 1 + step * 13 % 7;
            // Thread 0 runs at a third of the others' speed, with jitter.
            for (s, sub) in subs.iter().enumerate() {
                let owner = board.owners[s];
                let speed = if owner == 0 { 1 } else { 3 };
                let done = speed + (step * 31 + s as u64 * 17) % 3;
                board.counts[s] += done;
                board.updates[owner] += done;
                sub.set_count(board.counts[s]);
                totals[owner].store(board.updates[owner], Ordering::Relaxed);
            }
            for t in 0..threads {
                let view = RunView {
                    subs: &subs,
                    thread_updates: &totals,
                    residual: Residual::Skip,
                    clocks: None,
                };
                let real = runtime
                    .maybe_call(t, || now, &view, &assignment, &sockets)
                    .is_some();
                let virt = sim
                    .maybe_call(t, now, |_, _| 0, &mut board, &sockets, &[])
                    .is_some();
                assert_eq!(real, virt, "{scope:?}: step {step}, thread {t}");
                calls += u64::from(real);
            }
            let owners: Vec<usize> = subs.iter().map(Subdomain::owner).collect();
            assert_eq!(owners, board.owners, "{scope:?}: step {step}");
            assert_eq!(
                assignment.all_at_once(),
                board.sets,
                "{scope:?}: step {step}"
            );
        }
        let (real, virt) = (runtime.stats(), sim.caller.stats());
        assert_eq!(
            (real.calls, real.moves, real.cross_socket_moves),
            (virt.calls, virt.moves, virt.cross_socket_moves),
            "{scope:?}"
        );
        assert_eq!(real.calls, calls);
        assert!(real.moves > 0, "{scope:?}: the script never moved anything");
        let names = |s: &LbStats| s.ran.iter().map(|r| r.balancer).collect::<Vec<_>>();
        assert_eq!(names(&real), names(&virt), "{scope:?}");
    }
}
