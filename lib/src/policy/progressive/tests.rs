use super::*;
use crate::policy::Homes;
use std::cmp::Reverse;

fn paper(scope: Scope) -> Progressive {
    Progressive {
        seed: 7,
        ..Progressive::as_printed(scope)
    }
}

fn decide(
    p: &Progressive,
    counts: &[u64],
    owners: &[usize],
    sockets: &[usize],
    call: u64,
) -> Vec<Move> {
    p.decide(&Snapshot {
        call,
        ..Snapshot::of(counts, owners, sockets)
    })
}

/// 3 threads x 4 subdomains: thread t owns 4t..4t+4.
fn owners_3x4() -> Vec<usize> {
    (0..12).map(|s| s / 4).collect()
}

#[test]
fn the_slow_threads_most_updated_other_subdomain_goes_to_the_fast_thread() {
    // Thread 0 fast, thread 2 slow; sub 11 least updated, sub 8 the slow
    // thread's most updated.
    let counts = [50, 49, 48, 47, 30, 30, 30, 30, 20, 15, 12, 10];
    let p = Progressive {
        pairs: 1,
        ..paper(Scope::Joint)
    };
    let moves = decide(&p, &counts, &owners_3x4(), &[0, 0, 0], 1);
    assert_eq!(
        moves,
        vec![Move {
            sub: 8,
            from: 2,
            to: 0
        }]
    );
}

#[test]
fn pairs_are_taken_from_both_ends_of_the_sorted_list() {
    let counts = [50, 49, 48, 47, 30, 30, 30, 30, 20, 15, 12, 10];
    let p = Progressive {
        pairs: 2,
        ..paper(Scope::Joint)
    };
    let moves = decide(&p, &counts, &owners_3x4(), &[0, 0, 0], 1);
    // Pair 0: (0, 11) -> 8 to thread 0. Pair 1: (1, 10): thread 2 now has
    // 3 subdomains (> 2), its most updated other than 10 is 9.
    assert_eq!(
        moves,
        vec![
            Move {
                sub: 8,
                from: 2,
                to: 0
            },
            Move {
                sub: 9,
                from: 2,
                to: 0
            }
        ]
    );
}

#[test]
fn the_high_threshold_stops_a_full_fast_thread() {
    let counts = [50, 49, 48, 47, 30, 30, 30, 30, 20, 15, 12, 10];
    let p = Progressive {
        pairs: 1,
        bounds: Bounds {
            high: 4,
            ..paper(Scope::Joint).bounds
        },
        ..paper(Scope::Joint)
    };
    assert!(decide(&p, &counts, &owners_3x4(), &[0, 0, 0], 1).is_empty());
    let p = Progressive {
        pairs: 1,
        bounds: Bounds {
            high: 5,
            ..paper(Scope::Joint).bounds
        },
        ..paper(Scope::Joint)
    };
    assert_eq!(decide(&p, &counts, &owners_3x4(), &[0, 0, 0], 1).len(), 1);
}

#[test]
fn the_low_threshold_keeps_a_slow_thread_from_emptying() {
    let counts = [50, 49, 48, 47, 30, 30, 30, 30, 20, 15, 12, 10];
    let p = Progressive {
        pairs: 6,
        bounds: Bounds {
            low: 3,
            ..paper(Scope::Joint).bounds
        },
        ..paper(Scope::Joint)
    };
    let moves = decide(&p, &counts, &owners_3x4(), &[0, 0, 0], 1);
    // Thread 2 may give only while it has more than 3: exactly one move.
    assert_eq!(moves.iter().filter(|m| m.from == 2).count(), 1);
    assert!(moves.iter().all(|m| m.from != 2 || m.sub != 11));
}

#[test]
fn equal_counts_are_not_balanced() {
    let counts = [7; 12];
    assert!(decide(&paper(Scope::Joint), &counts, &owners_3x4(), &[0, 0, 0], 1).is_empty());
}

#[test]
fn ties_are_broken_by_subdomain_id() {
    // Subs 0 and 4 tie at the top; sub 0 (lower id) ranks first, so
    // thread 0 receives. Subs 8..12 tie at the bottom; sub 11 ranks last.
    let counts = [9, 5, 5, 5, 9, 5, 5, 5, 1, 1, 1, 1];
    let p = Progressive {
        pairs: 1,
        ..paper(Scope::Joint)
    };
    let moves = decide(&p, &counts, &owners_3x4(), &[0, 0, 0], 1);
    assert_eq!(
        moves,
        vec![Move {
            sub: 8,
            from: 2,
            to: 0
        }]
    );
}

#[test]
fn zero_pairs_or_no_subdomains_decide_nothing() {
    let counts = [50, 49, 48, 47, 30, 30, 30, 30, 20, 15, 12, 10];
    let p = Progressive {
        pairs: 0,
        ..paper(Scope::Joint)
    };
    assert!(decide(&p, &counts, &owners_3x4(), &[0, 0, 0], 1).is_empty());
    assert!(decide(&paper(Scope::Split), &[], &[], &[0, 0], 1).is_empty());
}

#[test]
fn one_thread_never_moves_anything() {
    let counts = [9, 3, 1, 7];
    assert!(decide(&paper(Scope::Joint), &counts, &[0, 0, 0, 0], &[0], 1).is_empty());
}

#[test]
fn more_pairs_than_half_the_subdomains_is_harmless() {
    let counts = [9, 3, 1, 7, 2];
    let p = Progressive {
        pairs: 100,
        bounds: Bounds {
            low: 0,
            ..paper(Scope::Joint).bounds
        },
        ..paper(Scope::Joint)
    };
    let moves = decide(&p, &counts, &[0, 0, 1, 1, 1], &[0, 0], 1);
    for m in &moves {
        assert_ne!(m.from, m.to);
    }
    assert!(moves.len() <= 2);
}

#[test]
fn joint_moves_across_sockets_and_split_never_does() {
    // Socket 0: threads 0, 1 fast; socket 1: threads 2, 3 slow.
    let sockets = [0, 0, 1, 1];
    let owners: Vec<usize> = (0..16).map(|s| s / 4).collect();
    let counts: Vec<u64> = (0..16)
        .map(|s| if s < 8 { 100 + s } else { 10 + s })
        .collect();
    let joint = decide(&paper(Scope::Joint), &counts, &owners, &sockets, 1);
    assert!(joint.iter().any(|m| sockets[m.from] != sockets[m.to]));
    let split = decide(&paper(Scope::Split), &counts, &owners, &sockets, 1);
    assert!(!split.is_empty());
    assert!(split.iter().all(|m| sockets[m.from] == sockets[m.to]));
}

#[test]
fn split_never_crosses_sockets_on_random_snapshots() {
    let mut rng = SplitMix64(1);
    let sockets = [0, 0, 0, 1, 1, 1];
    for _ in 0..500 {
        let owners: Vec<usize> = (0..24).map(|_| rng.below(6)).collect();
        let counts: Vec<u64> = (0..24).map(|_| rng.below(100) as u64).collect();
        let p = Progressive {
            bounds: Bounds {
                low: 0,
                high: 24,
                ..paper(Scope::Split).bounds
            },
            ..paper(Scope::Split)
        };
        for m in decide(&p, &counts, &owners, &sockets, 1) {
            assert_eq!(sockets[m.from], sockets[m.to], "{m:?}");
        }
    }
}

#[test]
fn hybrid_moves_one_subdomain_from_the_slowest_socket_every_kth_call() {
    let sockets = [0, 0, 1, 1];
    let owners: Vec<usize> = (0..16).map(|s| s / 4).collect();
    // Socket 1 (threads 2, 3) is behind on average; counts within each
    // socket are equal so the split pass has nothing to do.
    let counts: Vec<u64> = (0..16).map(|s| if s < 8 { 100 } else { 50 }).collect();
    let p = paper(Scope::Hybrid { period: 5 });
    for call in 1..=20 {
        let moves = decide(&p, &counts, &owners, &sockets, call);
        if call % 5 == 0 {
            assert_eq!(moves.len(), 1, "call {call}");
            let m = moves[0];
            assert_eq!((sockets[m.from], sockets[m.to]), (1, 0));
            assert_eq!(owners[m.sub], m.from);
        } else {
            assert!(moves.is_empty(), "call {call}: {moves:?}");
        }
    }
}

#[test]
fn hybrid_with_one_socket_is_split() {
    let counts = [50, 49, 48, 47, 30, 30, 30, 30, 20, 15, 12, 10];
    let hybrid = decide(
        &paper(Scope::Hybrid { period: 1 }),
        &counts,
        &owners_3x4(),
        &[0, 0, 0],
        1,
    );
    let split = decide(&paper(Scope::Split), &counts, &owners_3x4(), &[0, 0, 0], 1);
    let joint = decide(&paper(Scope::Joint), &counts, &owners_3x4(), &[0, 0, 0], 1);
    assert_eq!(hybrid, split);
    assert_eq!(split, joint);
}

#[test]
fn hybrid_is_split_plus_one_seeded_cross_socket_move_and_keeps_no_state() {
    let sockets = [0, 0, 1, 1];
    let owners: Vec<usize> = (0..16).map(|s| s / 4).collect();
    let mut rng = SplitMix64(3);
    let mut picks = Vec::new();
    for call in 1..40 {
        let counts: Vec<u64> = (0..16).map(|_| rng.below(1000) as u64).collect();
        let hybrid = paper(Scope::Hybrid { period: 1 });
        let got = decide(&hybrid, &counts, &owners, &sockets, call);
        // Against another scope: the split pass, then one move across.
        let split = decide(&paper(Scope::Split), &counts, &owners, &sockets, call);
        assert_eq!(got[..split.len()], split[..], "call {call}");
        assert_eq!(got.len(), split.len() + 1, "call {call}: {got:?}");
        let last = got[split.len()];
        assert_ne!(sockets[last.from], sockets[last.to]);
        // No hidden state: a policy that has decided other snapshots
        // since answers as a fresh one does.
        let used = paper(Scope::Hybrid { period: 1 });
        for c in 1..call {
            decide(
                &used,
                &counts[..].iter().rev().copied().collect::<Vec<_>>(),
                &owners,
                &sockets,
                c,
            );
        }
        assert_eq!(decide(&used, &counts, &owners, &sockets, call), got);
        // The seed, not the snapshot alone, picks the move across.
        let reseeded = Progressive {
            seed: 8,
            ..paper(Scope::Hybrid { period: 1 })
        };
        picks.push((
            last,
            decide(&reseeded, &counts, &owners, &sockets, call)[split.len()],
        ));
    }
    assert!(picks.iter().any(|(a, b)| a != b), "the seed never mattered");
}

#[test]
fn a_predicted_move_is_made_only_when_the_receiver_stays_faster_per_subdomain() {
    // 2 threads x 4 subdomains; thread 1's subdomains lag.
    let owners: Vec<usize> = (0..8).map(|s| s / 4).collect();
    let counts = [100, 100, 100, 100, 60, 60, 60, 61];
    let p = Progressive {
        predict: true,
        pairs: 1,
        ..paper(Scope::Joint)
    };
    let with = |history: &[Vec<f64>]| {
        p.decide(&Snapshot {
            history,
            ..Snapshot::of(&counts, &owners, &[0, 0])
        })
    };
    let steady = crate::policy::steady;
    // Thread 1 at 81% of thread 0: 81/4 = 20.25 per subdomain now, and
    // thread 0 would have 100/5 = 20: the move would not help.
    assert!(with(steady(&[100.0, 81.0])).is_empty());
    // At 50%: 12.5 now against 20 after the move, so it helps.
    let helps = vec![Move {
        sub: 7,
        from: 1,
        to: 0,
    }];
    assert_eq!(with(steady(&[100.0, 50.0])), helps);
    // At 50% in one interval of the window only: jitter, not a trend.
    let once = [vec![100.0, 100.0], vec![100.0, 50.0], vec![100.0, 100.0]];
    assert!(with(&once).is_empty());
    // Before a window is measured, a predicting Algorithm 1 waits.
    assert!(with(&[]).is_empty());
    assert!(with(&steady(&[100.0, 50.0])[..2]).is_empty());
}

#[test]
fn the_dead_band_leaves_small_gaps_alone() {
    let owners: Vec<usize> = (0..8).map(|s| s / 4).collect();
    let counts = [10, 10, 10, 10, 7, 7, 7, 7];
    for (gap, moves) in [(2, 1), (3, 0), (10, 0)] {
        let p = Progressive {
            min_gap: gap,
            pairs: 1,
            ..paper(Scope::Joint)
        };
        assert_eq!(
            decide(&p, &counts, &owners, &[0, 0], 1).len(),
            moves,
            "gap {gap}"
        );
    }
}

#[test]
fn selection_matches_a_full_sort() {
    // The O(n) selection must pick the same pairs as sorting everything.
    let mut rng = SplitMix64(5);
    for _ in 0..200 {
        let n = 2 + rng.below(40);
        let counts: Vec<u64> = (0..n).map(|_| rng.below(8) as u64).collect();
        let owners: Vec<usize> = (0..n).map(|s| s % 4).collect();
        let p = Progressive {
            pairs: 1 + rng.below(8),
            bounds: Bounds {
                low: 0,
                high: n,
                ..paper(Scope::Joint).bounds
            },
            ..paper(Scope::Joint)
        };
        let got = decide(&p, &counts, &owners, &[0; 4], 1);
        assert_eq!(got, reference(&p, &counts, &owners), "{counts:?}");
    }
}

/// Algorithm 1 written as plainly as possible, with a full sort.
fn reference(p: &Progressive, counts: &[u64], owners: &[usize]) -> Vec<Move> {
    let mut doms: Vec<usize> = (0..counts.len()).collect();
    doms.sort_by_key(|&s| (Reverse(counts[s]), s));
    let mut owners = owners.to_vec();
    let mut moves = vec![];
    let n = doms.len();
    for i in 0..p.pairs.min(n / 2) {
        let (top, bot) = (doms[i], doms[n - 1 - i]);
        let (tt, bt) = (owners[top], owners[bot]);
        let num = |t: usize, o: &[usize]| o.iter().filter(|&&x| x == t).count();
        if counts[top] == counts[bot] || tt == bt {
            continue;
        }
        if num(tt, &owners) < p.bounds.high && num(bt, &owners) > p.bounds.low {
            let send = (0..n)
                .filter(|&s| owners[s] == bt && s != bot)
                .min_by_key(|&s| (Reverse(counts[s]), s));
            if let Some(s) = send {
                owners[s] = tt;
                moves.push(Move {
                    sub: s,
                    from: bt,
                    to: tt,
                });
            }
        }
    }
    moves
}

#[test]
fn a_predicted_move_that_would_not_pay_for_leaving_home_is_not_made() {
    // Thread 1 at 0.78 of thread 0's rate: one more subdomain at home cost
    // pays thread 0 (100/5 > 78/4), one that costs 1.3 away does not.
    let counts = [40, 40, 40, 40, 30, 30, 30, 30];
    let owners: Vec<usize> = (0..8).map(|s| s / 4).collect();
    let rates = [100.0, 78.0];
    let p = Progressive {
        pairs: 1,
        min_gap: 2,
        predict: true,
        ..paper(Scope::Joint)
    };
    let decide = |away_cost: f64| {
        p.decide(&Snapshot {
            rates: &rates,
            history: crate::policy::steady(&rates),
            homes: Homes {
                per_domain: 4,
                away_cost,
            },
            ..Snapshot::of(&counts, &owners, &[0, 0])
        })
    };
    assert_eq!(decide(0.0).len(), 1);
    assert!(decide(0.3).is_empty());
    // Thread 1 holds 3, a guest of thread 0's, which goes home at a cost of
    // 1: 100 / (3 + 1) > 120 / 5 pays, where one away (100 / 4.3) would not.
    let owners = [0, 0, 0, 1, 1, 1, 1, 1];
    let counts = [40, 40, 40, 30, 30, 30, 30, 30];
    let rates = [100.0, 120.0];
    let moves = p.decide(&Snapshot {
        rates: &rates,
        history: crate::policy::steady(&rates),
        homes: Homes {
            per_domain: 4,
            away_cost: 0.3,
        },
        ..Snapshot::of(&counts, &owners, &[0, 0])
    });
    assert_eq!(moves.len(), 1, "{moves:?}");
    // (homeward, in the schedule core, then makes it subdomain 3.)
}
