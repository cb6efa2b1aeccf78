use super::*;

const CAL: Calibration = Calibration {
    ns_per_iter: 4.0,
    sleep_200us_actual_us: 250.0,
};

#[test]
fn a_duty_cycle_turns_into_iterations_and_back() {
    for duty in [0.05, 0.19, 0.5, 0.9] {
        let iters = CAL.iters_for_duty(duty, 200).unwrap();
        let back = CAL.duty_of(Rhythm {
            sleep_us: 200,
            work_iters: iters,
        });
        assert!((back - duty).abs() < 1e-3, "{duty} -> {iters} -> {back}");
    }
}

#[test]
fn the_sleep_overshoot_counts_against_the_duty() {
    // 10000 iterations at 4 ns = 40 us of work per 250 us of real sleep.
    let d = CAL.duty_of(Rhythm::default());
    assert!((d - 40.0 / 290.0).abs() < 1e-9);
}

#[test]
fn duty_outside_zero_one_is_refused() {
    for bad in [0.0, 1.0, -0.1, 1.5, f64::NAN] {
        assert!(matches!(
            CAL.iters_for_duty(bad, 200),
            Err(NoiseError::Duty(_))
        ));
    }
}

#[test]
fn an_empty_rhythm_is_refused() {
    let r = Rhythm {
        sleep_us: 0,
        work_iters: 0,
    };
    assert_eq!(r.check(), Err(NoiseError::Empty));
}

#[test]
fn the_loop_stops_when_told_and_measures_itself() {
    let stop = AtomicBool::new(false);
    let stats = std::thread::scope(|s| {
        let h = s.spawn(|| run(Rhythm::default(), &stop, None));
        std::thread::sleep(Duration::from_millis(30));
        stop.store(true, Ordering::Relaxed);
        h.join().unwrap()
    });
    assert!(stats.bursts > 0);
    assert!(stats.duty > 0.0 && stats.duty < 1.0, "{stats:?}");
    assert!(stats.work_s <= stats.elapsed_s);
}

#[test]
fn a_duration_ends_the_loop_by_itself() {
    let stop = AtomicBool::new(false);
    let stats = run(Rhythm::default(), &stop, Some(Duration::from_millis(20)));
    assert!(stats.elapsed_s >= 0.02);
}

#[test]
fn a_long_sleep_or_burst_ends_soon_after_stop() {
    for rhythm in [
        Rhythm {
            sleep_us: 3_000_000,
            work_iters: 1,
        },
        Rhythm {
            sleep_us: 0,
            work_iters: 1 << 40,
        },
    ] {
        let stop = AtomicBool::new(false);
        let t = Instant::now();
        std::thread::scope(|s| {
            let h = s.spawn(|| run(rhythm, &stop, None));
            std::thread::sleep(Duration::from_millis(20));
            stop.store(true, Ordering::Relaxed);
            h.thread().unpark();
            h.join().unwrap()
        });
        // Either would take seconds to hours if waited out.
        assert!(t.elapsed() < Duration::from_secs(2), "{rhythm:?}");
    }
}

#[test]
fn a_duration_cuts_a_burst_that_is_longer_than_it() {
    let stop = AtomicBool::new(false);
    let rhythm = Rhythm {
        sleep_us: 200,
        work_iters: 1 << 40,
    };
    let t = Instant::now();
    let stats = run(rhythm, &stop, Some(Duration::from_millis(30)));
    assert!(t.elapsed() < Duration::from_secs(2));
    assert!(stats.duty > 0.5, "{stats:?}");
}

#[test]
fn pinning_to_a_missing_core_is_an_error() {
    assert!(matches!(pin(100_000), Err(NoiseError::Core { .. })));
}
