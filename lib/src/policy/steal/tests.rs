use super::*;
use crate::policy::Scope;

fn steal(scope: Scope) -> Steal {
    Steal {
        bounds: Bounds {
            scope,
            low: 2,
            high: 6,
        },
    }
}

/// 2 threads x 4 subdomains, thread 0 at `r0` updates/s and thread 1 at
/// `r1`; thread 0's subdomains behind.
fn two(r0: f64, r1: f64) -> (Vec<u64>, Vec<usize>, Vec<f64>) {
    let counts = vec![50, 40, 45, 48, 90, 95, 91, 99];
    let owners = (0..8).map(|s| s / 4).collect();
    (counts, owners, vec![r0, r1])
}

fn decide(
    p: &Steal,
    counts: &[u64],
    owners: &[usize],
    sockets: &[usize],
    rates: &[f64],
) -> Vec<Move> {
    p.decide(&Snapshot {
        rates,
        history: crate::policy::steady(rates),
        ..Snapshot::of(counts, owners, sockets)
    })
}

#[test]
fn the_fastest_thread_takes_the_least_updated_subdomain_of_a_slower_owner() {
    let (counts, owners, rates) = two(50.0, 100.0);
    let moves = decide(&steal(Scope::Joint), &counts, &owners, &[0, 0], &rates);
    assert_eq!(
        moves,
        [Move {
            sub: 1,
            from: 0,
            to: 1
        }]
    );
}

#[test]
fn equally_fast_threads_steal_nothing_and_unknown_rates_move_nothing() {
    let (counts, owners, rates) = two(100.0, 100.0);
    assert!(decide(&steal(Scope::Joint), &counts, &owners, &[0, 0], &rates).is_empty());
    // 100/5 = 20 per subdomain after the move against 90/4 = 22.5 now.
    let (counts, owners, rates) = two(90.0, 100.0);
    assert!(decide(&steal(Scope::Joint), &counts, &owners, &[0, 0], &rates).is_empty());
    assert!(decide(&steal(Scope::Joint), &counts, &owners, &[0, 0], &[]).is_empty());
}

#[test]
fn the_thresholds_keep_a_victim_and_fill_no_thief_beyond_them() {
    let (counts, owners, rates) = two(10.0, 100.0);
    let keeps_four = Steal {
        bounds: Bounds {
            low: 4,
            ..steal(Scope::Joint).bounds
        },
    };
    assert!(decide(&keeps_four, &counts, &owners, &[0, 0], &rates).is_empty());
    let full = Steal {
        bounds: Bounds {
            high: 4,
            ..steal(Scope::Joint).bounds
        },
    };
    assert!(decide(&full, &counts, &owners, &[0, 0], &rates).is_empty());
}

#[test]
fn split_steals_within_a_socket_and_hybrid_across_on_its_kth_call() {
    // 4 threads x 2 subdomains on 2 sockets; thread 0 (socket 0) slow,
    // thread 2 (socket 1) the fastest of all.
    let counts = vec![10, 12, 50, 52, 60, 61, 55, 56];
    let owners: Vec<usize> = (0..8).map(|s| s / 2).collect();
    let sockets = [0, 0, 1, 1];
    let rates = [10.0, 50.0, 100.0, 80.0];
    let p = Steal {
        bounds: Bounds {
            scope: Scope::Split,
            low: 1,
            high: 4,
        },
    };
    let moves = decide(&p, &counts, &owners, &sockets, &rates);
    assert_eq!(
        moves,
        [Move {
            sub: 0,
            from: 0,
            to: 1
        }]
    );
    let hybrid = Steal {
        bounds: Bounds {
            scope: Scope::Hybrid { period: 3 },
            ..p.bounds
        },
    };
    let on = |call| {
        hybrid.decide(&Snapshot {
            rates: &rates,
            history: crate::policy::steady(&rates),
            call,
            ..Snapshot::of(&counts, &owners, &sockets)
        })
    };
    assert_eq!(on(1), moves);
    assert_eq!(
        on(3),
        [Move {
            sub: 0,
            from: 0,
            to: 2
        }]
    );
}

#[test]
fn stealing_comes_to_rest_at_steady_rates() {
    super::super::greedy::tests::comes_to_rest(64, |scope| Box::new(steal(scope)));
}

#[test]
fn stealing_moves_only_donors_subdomains_within_thresholds_and_groups() {
    super::super::greedy::tests::keeps_the_rules(|scope, low_threshold, high_threshold| {
        Box::new(Steal {
            bounds: Bounds {
                scope,
                low: low_threshold,
                high: high_threshold,
            },
        })
    });
}
