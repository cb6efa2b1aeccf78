use super::*;

#[test]
fn a_quiet_core_takes_the_work_as_is() {
    assert_eq!(Timeline::QUIET.finish(5, 10), 15);
}

#[test]
fn speed_scales_work() {
    let fast = Timeline {
        speed: 2.0,
        ..Timeline::QUIET
    };
    assert_eq!(fast.scaled(1000.0, 0), 500);
    let measured = Timeline {
        steps: Some(Arc::new(Steps::new(&[1.0], &[1e6, 2e6], 1e6))),
        ..fast
    };
    assert_eq!(measured.scaled(1000.0, 0), 500);
    assert_eq!(measured.scaled(1000.0, 2_000_000_000_000), 250);
}

#[test]
fn work_skips_the_parasites_bursts() {
    // Sleep 80, work 20: free during [0, 80), [100, 180), ...
    let t = Timeline {
        interference: Interference::Rhythm {
            sleep: 80,
            work: 20,
        },
        ..Timeline::QUIET
    };
    assert_eq!(t.finish(0, 50), 50);
    assert_eq!(t.finish(70, 20), 110); // 10 before the burst, 10 after
    assert_eq!(t.finish(85, 10), 110); // starts inside a burst
    assert_eq!(t.finish(0, 240), 280); // three whole sleeps: [0,80) [100,180) [200,280)
    assert!((t.stolen_share() - 0.2).abs() < 1e-12);
    assert_eq!(t.bursts_by(0), 0);
    assert_eq!(t.bursts_by(90), 1);
    assert_eq!(t.bursts_by(250), 2);
}

#[test]
fn over_a_long_stretch_a_noisy_core_loses_its_share() {
    let t = Timeline {
        interference: Interference::Rhythm {
            sleep: 200_000_000,
            work: 46_000_000,
        },
        ..Timeline::QUIET
    };
    let mut now = 0;
    for _ in 0..10_000 {
        now = t.finish(now, 6_750_000);
    }
    let ideal = 10_000.0 * 6_750_000.0;
    let loss = 1.0 - ideal / now as f64;
    assert!((loss - t.stolen_share()).abs() < 0.01, "{loss}");
}

fn detours(text: &str, offset_ns: u64) -> Timeline {
    Timeline {
        interference: Interference::Trace(Arc::new(Detours::new(
            &Arc::new(Trace::parse(text).unwrap()),
            offset_ns,
            0,
        ))),
        ..Timeline::QUIET
    }
}

#[test]
fn work_skips_a_traces_detours_and_the_trace_loops() {
    // 1 ns = 1000 ps. Detours [2, 4) and [6, 7) ns, span 10 ns.
    let t = detours("2\t2\n6\t1\n# duration_ns 10\n", 0);
    assert_eq!(t.finish(0, 1000), 1000);
    assert_eq!(t.finish(0, 3000), 5000); // [0,2) then [4,5)
    assert_eq!(t.finish(3000, 500), 4500); // starts inside a detour
    assert_eq!(t.finish(0, 7000), 10_000); // 2 + 2 + 3 free ns in a lap
    assert_eq!(t.finish(0, 9000), 12_000); // 7 in the first lap, 2 in [10, 12)
    assert!((t.stolen_share() - 0.3).abs() < 1e-12);
    assert_eq!(t.bursts_by(2000), 0);
    assert_eq!(t.bursts_by(2001), 1);
    assert_eq!(t.bursts_by(25_000), 5);
    assert!((t.stolen_share_by(10_000) - 0.3).abs() < 1e-12);
    assert!((t.stolen_share_by(5000) - 0.4).abs() < 1e-12);
}

#[test]
fn a_trace_offset_shifts_where_the_detours_fall() {
    // From 5 ns: [6, 7) comes at 1, [2, 4) at 7 (next lap).
    let t = detours("2\t2\n6\t1\n# duration_ns 10\n", 5);
    assert_eq!(t.finish(0, 1000), 1000);
    assert_eq!(t.finish(0, 2000), 3000);
    assert_eq!(t.finish(0, 6000), 7000); // [0,1) then [2,7)
    assert_eq!(t.bursts_by(1001), 1);
    assert_eq!(t.bursts_by(7001), 2);
    assert!((t.stolen_share_by(3000) - 1.0 / 3.0).abs() < 1e-12);
}

/// The step-by-step walks the closed forms replaced: a burst or a detour
/// at a time (correct, but a step per period of a long update).
fn walk_rhythm(sleep: u64, stolen: u64, start: u64, work_ps: u64) -> u64 {
    let period = sleep + stolen;
    let (mut t, mut left) = (start, work_ps);
    loop {
        let pos = t % period;
        if pos >= sleep {
            t += period - pos;
            continue;
        }
        let free = sleep - pos;
        if left <= free {
            return t + left;
        }
        left -= free;
        t += free;
    }
}

fn walk_detours(d: &Detours, start: u64, work_ps: u64) -> u64 {
    let (mut t, mut left) = (start, work_ps);
    loop {
        let pos = (t + d.offset) % d.span;
        let i = (0..d.len()).find(|&i| d.end(i) > pos).unwrap_or(d.len());
        let free = match (i < d.len()).then(|| d.start(i)).as_ref() {
            Some(&s) if s <= pos => {
                t += d.end(i) - pos;
                continue;
            }
            Some(&s) => s - pos,
            None => d.span - pos,
        };
        if left <= free {
            return t + left;
        }
        left -= free;
        t += free;
    }
}

#[test]
fn the_closed_forms_end_where_a_step_by_step_walk_ends() {
    let mut rng = crate::rng::SplitMix64(7);
    let mut below = |n: u64| rng.next() % n;
    for _ in 0..20_000 {
        let (sleep, stolen) = (1 + below(50), 1 + below(50));
        let (start, work) = (below(1000), 1 + below(400));
        assert_eq!(
            periodic_finish(sleep, stolen, start, work),
            walk_rhythm(sleep, stolen, start, work),
            "sleep {sleep} stolen {stolen} start {start} work {work}"
        );
    }
    for _ in 0..2_000 {
        // A random trace: sorted detours (some empty, some touching), a
        // span past the last, a random offset.
        let mut text = String::new();
        let mut at = below(5);
        for _ in 0..1 + below(6) {
            let length = below(4);
            text.push_str(&format!("{at}\t{length}\n"));
            at += length + below(4);
        }
        text.push_str(&format!("# duration_ns {}\n", at + below(3)));
        let Ok(trace) = Trace::parse(&text) else {
            continue; // all detour: refused
        };
        let d = Detours::new(&Arc::new(trace), below(30), 0);
        for _ in 0..20 {
            let (start, work) = (below(50_000), 1 + below(40_000));
            assert_eq!(
                d.finish(start, work),
                walk_detours(&d, start, work),
                "{text:?} offset {} start {start} work {work}",
                d.offset
            );
        }
    }
}

#[test]
fn an_update_longer_than_the_clock_ends_at_its_range_at_once() {
    let t = Timeline {
        interference: Interference::Rhythm {
            sleep: 1,
            work: 1 << 40,
        },
        ..Timeline::QUIET
    };
    // A walk would take 2^40 steps; the closed form answers at once.
    assert_eq!(t.finish(0, 1 << 40), RANGE_PS);
    assert_eq!(t.finish(0, 3), 2 * (1 + (1 << 40)) + 1);
    let never = Timeline {
        interference: Interference::Rhythm { sleep: 0, work: 5 },
        ..Timeline::QUIET
    };
    assert_eq!(never.finish(0, 1), RANGE_PS);
    assert_eq!(Timeline::QUIET.run(RANGE_PS - 1, 1e30), RANGE_PS);
    let d = detours("0\t1\n# duration_ns 2\n", 0);
    assert_eq!(d.finish(0, u64::MAX), RANGE_PS);
}
