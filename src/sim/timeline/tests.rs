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
            &Trace::parse(text).unwrap(),
            offset_ns,
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
