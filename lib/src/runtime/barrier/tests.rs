use super::*;
use std::sync::atomic::AtomicU64;

#[test]
fn no_thread_passes_before_all_arrive() {
    let threads = 3;
    let b = StopBarrier::new(threads);
    let stop = StopFlag::default();
    let phase = AtomicU64::new(0);
    let rounds = 200;
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                for r in 0..rounds {
                    // Everyone sees the same phase between two crossings.
                    assert_eq!(phase.load(Ordering::SeqCst), r);
                    b.wait(&stop, || None);
                    b.wait(&stop, || {
                        phase.fetch_add(1, Ordering::SeqCst);
                        None
                    });
                }
            });
        }
    });
    assert_eq!(phase.load(Ordering::SeqCst), rounds);
}

#[test]
fn the_leaders_decision_reaches_every_thread() {
    let b = StopBarrier::new(2);
    let stop = StopFlag::default();
    let outcomes = std::thread::scope(|s| {
        let h: Vec<_> = (0..2)
            .map(|_| s.spawn(|| b.wait(&stop, || Some(StopReason::Converged))))
            .collect();
        h.into_iter().map(|h| h.join().unwrap()).collect::<Vec<_>>()
    });
    assert_eq!(outcomes, vec![Crossing::Stop, Crossing::Stop]);
    assert_eq!(stop.reason(), Some(StopReason::Converged));
}

#[test]
fn a_stop_releases_waiters_when_a_thread_never_arrives() {
    let b = StopBarrier::new(2);
    let stop = StopFlag::default();
    std::thread::scope(|s| {
        let waiter = s.spawn(|| b.wait(&stop, || None));
        std::thread::sleep(std::time::Duration::from_millis(20));
        stop.request(StopReason::TimeLimit);
        assert_eq!(waiter.join().unwrap(), Crossing::Stop);
    });
}

/// A waiter whose partner is late stops polling and sleeps in the kernel,
/// and the partner's arrival wakes it (it does not wait out its nap).
/// Each round waits for the waiter to be asleep, however busy the machine,
/// so the test holds under load; a waiter that a delayed leader finds
/// already awake at its nap's end makes another round. Before 2026-11-28
/// waiters yielded for 2 ms and then polled: no one was ever asleep here.
#[cfg(not(feature = "loom"))]
#[test]
fn a_waiter_whose_partner_is_late_sleeps_until_the_partner_wakes_it() {
    let b = StopBarrier::new(2);
    let stop = StopFlag::default();
    for _ in 0..1000 {
        std::thread::scope(|s| {
            let waiter = s.spawn(|| b.wait(&stop, || None));
            let start = std::time::Instant::now();
            while b.sleep.asleep.load(Ordering::SeqCst) == 0 {
                assert!(
                    start.elapsed() < std::time::Duration::from_secs(10),
                    "the waiter never fell asleep"
                );
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            assert_eq!(b.wait(&stop, || None), Crossing::Continue);
            assert_eq!(waiter.join().unwrap(), Crossing::Continue);
        });
        if b.sleep.wakes.load(Ordering::SeqCst) > 0 {
            return;
        }
    }
    panic!("no leader ever found a sleeper to wake");
}
