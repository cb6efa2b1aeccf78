use super::*;
use crate::policy::Scope;

pub(in crate::policy) fn greedy(scope: Scope) -> Greedy {
    Greedy {
        bounds: Bounds {
            scope,
            low: 2,
            high: 6,
        },
    }
}

/// 2 threads x 4 subdomains (thread 0's behind), rates `r0`, `r1`.
pub(in crate::policy) fn two(r0: f64, r1: f64) -> (Vec<u64>, Vec<usize>, Vec<f64>) {
    let counts = vec![50, 40, 45, 48, 90, 95, 91, 99];
    let owners = (0..8).map(|s| s / 4).collect();
    (counts, owners, vec![r0, r1])
}

fn decide(p: &dyn Policy, counts: &[u64], owners: &[usize], rates: &[f64]) -> Vec<Move> {
    p.decide(&Snapshot {
        rates,
        ..Snapshot::of(counts, owners, &[0, 0])
    })
}

#[test]
fn subdomains_go_in_proportion_to_rates_least_updated_first() {
    // 8 subdomains at rates 50 : 100 -> 8/3 : 16/3, dealt as 3 : 5.
    let (counts, owners, rates) = two(50.0, 100.0);
    let moves = decide(&greedy(Scope::Joint), &counts, &owners, &rates);
    assert_eq!(
        moves,
        [Move {
            sub: 1,
            from: 0,
            to: 1
        }]
    );
    // 10 : 100 -> thread 0 keeps only its low threshold, 2.
    let (counts, owners, rates) = two(10.0, 100.0);
    let moves = decide(&greedy(Scope::Joint), &counts, &owners, &rates);
    let subs: Vec<usize> = moves.iter().map(|m| m.sub).collect();
    assert_eq!(subs, [1, 2]);
    assert!(moves.iter().all(|m| m.from == 0 && m.to == 1));
}

#[test]
fn rates_within_one_subdomains_share_move_nothing() {
    // 4 each: a 20% faster thread would update 5 at 120/5 = 24 each,
    // slower than the other's 100/4 = 25 now, so nothing moves.
    for (r0, r1) in [(100.0, 100.0), (100.0, 120.0), (120.0, 100.0)] {
        let (counts, owners, rates) = two(r0, r1);
        assert!(decide(&greedy(Scope::Joint), &counts, &owners, &rates).is_empty());
    }
    let (counts, owners, _) = two(1.0, 1.0);
    assert!(decide(&greedy(Scope::Joint), &counts, &owners, &[]).is_empty());
    assert!(decide(&greedy(Scope::Joint), &counts, &owners, &[0.0, 0.0]).is_empty());
}

#[test]
fn the_thresholds_bound_what_a_thread_keeps_and_receives() {
    let (counts, owners, rates) = two(0.0, 100.0);
    let keeps_three = Greedy {
        bounds: Bounds {
            low: 3,
            ..greedy(Scope::Joint).bounds
        },
    };
    assert_eq!(decide(&keeps_three, &counts, &owners, &rates).len(), 1);
    let full = Greedy {
        bounds: Bounds {
            high: 5,
            ..greedy(Scope::Joint).bounds
        },
    };
    assert_eq!(decide(&full, &counts, &owners, &rates).len(), 1);
}

#[test]
fn split_balances_each_socket_alone() {
    // Thread 0 slow on socket 0; socket 1 quiet: only 0 -> 1 moves.
    let counts = vec![
        10, 12, 14, 16, 50, 52, 54, 56, 60, 61, 62, 63, 55, 56, 57, 58,
    ];
    let owners: Vec<usize> = (0..16).map(|s| s / 4).collect();
    let rates = [10.0, 100.0, 100.0, 100.0];
    let moves = greedy(Scope::Split).decide(&Snapshot {
        rates: &rates,
        ..Snapshot::of(&counts, &owners, &[0, 0, 1, 1])
    });
    assert_eq!(moves.len(), 2);
    assert!(moves.iter().all(|m| m.from == 0 && m.to == 1));
}

/// The properties every strategy keeps, on pseudo-random snapshots:
/// moves take only the donor's own subdomains, each subdomain at most
/// once, never leave a donor below the low threshold nor fill a
/// receiver beyond the high one, and stay within a group.
pub(in crate::policy) fn keeps_the_rules(make: impl Fn(Scope, usize, usize) -> Box<dyn Policy>) {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut moved = 0;
    for round in 0..400 {
        let threads = 2 + (next() % 6) as usize;
        let owners: Vec<usize> = (0..threads * 4)
            .map(|_| (next() % threads as u64) as usize)
            .collect();
        let counts: Vec<u64> = owners.iter().map(|_| next() % 100).collect();
        let residuals: Vec<f64> = owners.iter().map(|_| (next() % 1000) as f64).collect();
        let sockets: Vec<usize> = (0..threads).map(|t| t % 2).collect();
        let rates: Vec<f64> = (0..threads).map(|_| (next() % 1000) as f64).collect();
        let history: Vec<Vec<f64>> = (0..4)
            .map(|_| (0..threads).map(|_| (next() % 100) as f64).collect())
            .collect();
        let scope = [Scope::Joint, Scope::Split, Scope::Hybrid { period: 2 }][round % 3];
        let (low, high) = (1, 7);
        let p = make(scope, low, high);
        for call in 1..=2 {
            let snap = Snapshot {
                rates: &rates,
                residuals: &residuals,
                history: &history,
                call,
                ..Snapshot::of(&counts, &owners, &sockets)
            };
            let moves = p.decide(&snap);
            let mut held = snap.held();
            let mut seen = vec![false; counts.len()];
            let joint = snap.groups(scope).len() == 1;
            for m in moves {
                assert_eq!(owners[m.sub], m.from, "{p:?} moved another's subdomain");
                assert!(!seen[m.sub], "{p:?} moved a subdomain twice");
                seen[m.sub] = true;
                held[m.from] -= 1;
                held[m.to] += 1;
                assert!(held[m.from] >= low, "{p:?} left a thread below low");
                assert!(held[m.to] <= high, "{p:?} filled a thread beyond high");
                assert!(joint || sockets[m.from] == sockets[m.to], "{p:?} crossed");
                moved += 1;
            }
        }
    }
    assert!(moved > 0, "no snapshot moved anything");
}

/// With rates that do not change, applying a strategy's moves call
/// after call comes to rest within `within` calls and stays there: no
/// strategy trades subdomains back and forth on a steady run.
pub(in crate::policy) fn comes_to_rest(within: usize, make: impl Fn(Scope) -> Box<dyn Policy>) {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for round in 0..200 {
        let threads = 2 + (next() % 7) as usize;
        let subs = threads * (2 + (next() % 6) as usize);
        let mut owners: Vec<usize> = (0..subs).map(|s| s * threads / subs).collect();
        let counts: Vec<u64> = (0..subs).map(|_| next() % 100).collect();
        let residuals: Vec<f64> = (0..subs).map(|_| (next() % 1000) as f64).collect();
        let sockets: Vec<usize> = (0..threads).map(|t| t % 2).collect();
        // Half the rounds draw rates from three values, so that exact
        // ties (a quiet run's equal rates) are common.
        let rates: Vec<f64> = (0..threads)
            .map(|_| match round % 4 {
                0 | 1 => (1 + next() % 1000) as f64,
                _ => (100 * (1 + next() % 3)) as f64,
            })
            .collect();
        let history = vec![rates.clone(); 4];
        let scope = [Scope::Joint, Scope::Split][round % 2];
        let p = make(scope);
        let mut quiet_calls = 0;
        for call in 1..=within as u64 + 2 {
            let moves = p.decide(&Snapshot {
                rates: &rates,
                residuals: &residuals,
                history: &history,
                call,
                ..Snapshot::of(&counts, &owners, &sockets)
            });
            if moves.is_empty() {
                quiet_calls += 1;
            } else {
                assert_eq!(quiet_calls, 0, "{p:?} moved again after resting");
                assert!(call as usize <= within, "{p:?} still moving at call {call}");
            }
            for m in moves {
                owners[m.sub] = m.to;
            }
        }
        assert!(quiet_calls >= 2, "{p:?} never came to rest");
    }
}

#[test]
fn greedy_comes_to_rest_after_one_call_at_steady_rates() {
    comes_to_rest(1, |scope| Box::new(greedy(scope)));
}

#[test]
fn greedy_moves_only_donors_subdomains_within_thresholds_and_groups() {
    keeps_the_rules(|scope, low_threshold, high_threshold| {
        Box::new(Greedy {
            bounds: Bounds {
                scope,
                low: low_threshold,
                high: high_threshold,
            },
        })
    });
}
