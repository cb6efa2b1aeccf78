use super::*;
use crate::thread_cpu_ns;

#[test]
fn a_trace_round_trips_through_its_text() {
    let t = Trace {
        detours: vec![
            Detour {
                start_ns: 10,
                duration_ns: 5,
            },
            Detour {
                start_ns: 100,
                duration_ns: 50,
            },
        ],
        span_ns: 1000,
        comments: vec!["host x".into(), "core 2".into()],
    };
    let back = Trace::parse(&t.to_text()).unwrap();
    assert_eq!(back, t);
    assert!((back.lost_share() - 0.055).abs() < 1e-12);
}

#[test]
fn bad_trace_files_are_refused_naming_the_line() {
    for (text, line, what) in [
        ("10\t5\n5\t1\n", 2, "sorted"),
        ("10\t5\n12\t1\n", 2, "overlap"),
        (
            "# ok\n-5\t1\n",
            2,
            "start `-5` is not a whole number of ns from 0",
        ),
        ("0\t1000000000000001\n", 1, "duration `1000000000000001`"),
        ("999999999999999\t2\n", 1, "past the longest trace"),
        (
            "# duration_ns 1000000000000001\n0\t1\n",
            1,
            "whole number of ns up to",
        ),
        ("10\tx\n", 1, "duration `x`"),
        ("10 5 7\n", 1, "two fields"),
        ("10\n", 1, "two fields"),
        ("# duration_ns lots\n", 1, "whole number"),
    ] {
        let e = Trace::parse(text).unwrap_err().to_string();
        assert!(
            e.contains(&format!("line {line}:")) && e.contains(what),
            "{text:?}: {e}"
        );
    }
    assert_eq!(Trace::parse("# only comments\n\n"), Err(TraceError::Empty));
    assert_eq!(Trace::parse(""), Err(TraceError::Empty));
    assert_eq!(
        Trace::parse("0\t5\n5\t5\n"),
        Err(TraceError::Whole { span_ns: 10 })
    );
}

#[test]
fn the_thread_cpu_clock_runs_while_spinning_and_not_while_asleep() {
    let a = thread_cpu_ns();
    std::thread::sleep(Duration::from_millis(20));
    let b = thread_cpu_ns();
    let wall = Instant::now();
    let mut x = 0u64;
    while wall.elapsed() < Duration::from_millis(5) {
        x = black_box(x.wrapping_add(1));
    }
    let c = thread_cpu_ns();
    assert!(a > 0, "the clock reads");
    assert!(b - a < 10_000_000, "asleep: {} ns", b - a);
    assert!(c - b >= 1_000_000, "spinning 5 ms: {} ns", c - b);
}

#[test]
fn a_replay_starts_at_its_offset_and_plays_each_detour_once_a_lap() {
    // Detours of 1 ms every 15 ms (span 45 ms), so that a replay thread
    // delayed by a few milliseconds on a busy machine still starts each
    // detour before its limit. A late thread can only play fewer detours,
    // never more, so each count must come out exact in one of three tries
    // (once, 1 ms apart, a delayed thread played 2 of 3 in `.ci/run`).
    let ms = 1_000_000;
    let t =
        Trace::parse("0\t1000000\n15000000\t1000000\n30000000\t1000000\n# duration_ns 45000000\n")
            .unwrap();
    assert_eq!(t.span_ns, 45 * ms);
    let stop = AtomicBool::new(false);
    let exact = |offset_ns: u64, duration: Duration, want: u64| {
        let mut got = Vec::new();
        for _ in 0..3 {
            let stats = replay(&t, offset_ns, Some(duration), &stop);
            if stats.bursts == want {
                return stats;
            }
            got.push(stats.bursts);
        }
        panic!("{want} bursts from {offset_ns} ns over {duration:?}: {got:?}");
    };
    // From 20 ms: the detour at 30 ms comes at 10 ms, then 0 at 25, 15 at 40.
    exact(20 * ms, Duration::from_millis(45), 3);
    // Only the detour at 10 ms starts before 22.5 ms.
    exact(20 * ms, Duration::from_micros(22_500), 1);
    // It loops: two laps, six detours, none longer than the trace says (a
    // preempted one may give up short of its CPU time: 5.7 of 6 ms once).
    let two = exact(0, Duration::from_millis(90), 6);
    assert!(
        two.work_s > 0.0 && two.work_s <= 1.1 * 6.0 * 1e-3,
        "{two:?}"
    );
    stop.store(true, Ordering::Relaxed);
    assert_eq!(replay(&t, 0, None, &stop).bursts, 0, "a set stop ends it");
}

#[test]
fn recording_lasts_its_duration_and_stops_when_told() {
    let stop = AtomicBool::new(false);
    let t = record(Duration::from_millis(20), 1_000_000, &stop, usize::MAX).unwrap();
    assert!(t.span_ns >= 20_000_000);
    stop.store(true, Ordering::Relaxed);
    let t = record(Duration::from_secs(60), 1_000_000, &stop, usize::MAX).unwrap();
    assert!(
        t.span_ns < 1_000_000_000,
        "a set stop flag ends the recording"
    );
}

#[test]
fn a_replay_of_a_span_shorter_than_a_detour_takes_ends_with_its_duration() {
    // A 2 ns span played for 50 ms once looped for minutes: every lap was
    // played late, one after the other, until the laps' starts reached the
    // duration. Now laps the replay fell behind are skipped. Run on a
    // thread so that a regression fails here instead of hanging the suite.
    let t = Trace::parse("0\t1\n# duration_ns 2\n").unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let stop = AtomicBool::new(false);
        let _ = tx.send(replay(&t, 0, Some(Duration::from_millis(50)), &stop));
    });
    let stats = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the replay ends with its duration");
    assert!(stats.bursts > 0);
}

#[test]
fn a_threshold_that_makes_every_reading_a_detour_stops_at_the_bound() {
    // At 0 ns every clock reading's gap counts: the recording stops at
    // the bound, long before its minute, instead of growing without one.
    let stop = AtomicBool::new(false);
    let e = record(Duration::from_secs(60), 0, &stop, 1000).unwrap_err();
    assert_eq!(e.limit, 1000);
    assert!(e.after_ns < 1_000_000_000, "{e:?}");
    assert!(e.to_string().contains("raise the threshold"), "{e}");
}
