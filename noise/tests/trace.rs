//! Recording and replaying noise on a real core (the selfish detour
//! method): a known parasite's bursts are found, and a replayed trace,
//! recorded again, loses the same share of the core.

use std::os::unix::thread::JoinHandleExt;
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use braid_noise::pin;
use braid_noise::trace::{Trace, record};

/// The tests that share a core with noise run one at a time: two at once
/// would be each other's noise.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The first core this process may run on: the recorder and the noise
/// share it, so that the noise takes time from the recorder.
fn a_core() -> usize {
    core_affinity::get_core_ids().unwrap()[0].id
}

/// CPU time of a thread of this process, by its clock (POSIX lets any
/// thread read another's CPU-time clock).
fn thread_cpu(thread: libc::pthread_t) -> u64 {
    let mut clock: libc::clockid_t = 0;
    // SAFETY: `thread` is a thread of this process that its caller keeps
    // alive and unjoined, and `clock` is a valid out-pointer.
    let rc = unsafe { libc::pthread_getcpuclockid(thread, &mut clock) };
    assert_eq!(rc, 0);
    read_clock(clock)
}

/// CPU time of another process (ours to see: same user).
fn process_cpu(pid: u32) -> u64 {
    let mut clock: libc::clockid_t = 0;
    // SAFETY: `clock` is a valid out-pointer; an unknown pid is an error
    // code, not undefined behaviour.
    let rc = unsafe { libc::clock_getcpuclockid(pid as libc::pid_t, &mut clock) };
    assert_eq!(rc, 0);
    read_clock(clock)
}

fn read_clock(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    assert_eq!(unsafe { libc::clock_gettime(clock, &mut ts) }, 0);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Time the kernel took from `core` outside any task (the hypervisor's
/// steal, and interrupts where they are accounted apart), from
/// `/proc/stat`, in ns: a recorder sees it as detours while its CPU clock
/// runs on.
fn taken_outside_tasks(core: usize) -> u64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap();
    let line = stat
        .lines()
        .find(|l| l.starts_with(&format!("cpu{core} ")))
        .unwrap();
    let f: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().unwrap())
        .collect();
    // irq, softirq, steal.
    (f[5] + f[6] + f[7]) * tick_ns()
}

/// The length of a `/proc/stat` tick.
fn tick_ns() -> u64 {
    // SAFETY: sysconf has no preconditions.
    1_000_000_000 / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64
}

/// The lower bound on a recording beside another thread on the same core,
/// under any scheduling, busy machine or not: the detours add up to at
/// least the CPU time the other thread took meanwhile (they cannot both
/// run on one core). `slack_ns` is what the edges of the window may hold
/// of the other thread's time. `Err` says what failed.
fn recording_covers(trace: &Trace, other_cpu_ns: u64, slack_ns: u64) -> Result<(), String> {
    let lost: u64 = trace.detours.iter().map(|d| d.duration_ns).sum();
    if lost + slack_ns < other_cpu_ns {
        return Err(format!(
            "recorded {lost} ns of detours, but the other thread ran {other_cpu_ns} ns"
        ));
    }
    Ok(())
}

/// The upper bound: the detours that overlap the other thread's bursts
/// (`bursts`, ns from the recording's start) add up to at most the time
/// the recorder was off its core (`off_core_ns`: wall time minus its own
/// CPU time, plus `outside_ns`, what the kernel took outside any task).
///
/// Only those detours are bounded: a hypervisor may stall the virtual core
/// without a word to the guest (no steal, no irq time; a fresh clone's run
/// here, 2026-11-28, saw 30 ms of it in each of three 1 s recordings). The
/// recorder rightly records such a stall, but its CPU clock runs on
/// through it, so no counter can bound it. The detours the other thread
/// caused can be: the recorder was off its core for all of them. A
/// recorder that inflates its detours still fails here, since each
/// overlapping detour counts at its full recorded length.
fn recording_attributes(
    trace: &Trace,
    bursts: &[(u64, u64)],
    off_core_ns: u64,
    outside_ns: u64,
) -> Result<(), String> {
    // The recorder's last read before a switch and the parasite's first
    // clock read after it lie a few us apart.
    const EDGE: u64 = 20_000;
    let overlaps = |d: &braid_noise::trace::Detour| {
        let (a, b) = (d.start_ns, d.start_ns + d.duration_ns);
        let k = bursts.partition_point(|&(_, end)| end + EDGE < a);
        bursts.get(k).is_some_and(|&(start, _)| start < b + EDGE)
    };
    let theirs: Vec<_> = trace.detours.iter().filter(|d| overlaps(d)).collect();
    let lost: u64 = theirs.iter().map(|d| d.duration_ns).sum();
    // Each detour's gap also holds the recorder's own switch off the core
    // and back, charged to its CPU time (20-30 us a detour on this virtual
    // machine, 2026-11-28; 30 us allowed), and `/proc/stat` counts in ticks
    // (two allowed). A recorder that stretched each detour by a quarter
    // fails by 40 ms in 150.
    let own = theirs.len() as u64 * 30_000 + 2 * tick_ns();
    if lost > off_core_ns + outside_ns + own {
        return Err(format!(
            "recorded {lost} ns of detours in {} of the other thread's bursts, but the \
             recorder was off its core {off_core_ns} ns and the kernel took {outside_ns} ns \
             outside any task",
            bursts.len()
        ));
    }
    Ok(())
}

#[test]
fn a_recording_accounts_for_the_time_a_parasite_took_from_its_core() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // One of three recordings, for a machine busy enough to starve the
    // parasite itself. A recording that is wrong is wrong all three times.
    in_one_of_three(record_beside_a_parasite);
}

/// Passes at the first of three attempts that holds; fails with every
/// attempt's reason (braid's tests/common has its own, in another crate).
fn in_one_of_three(attempt: impl Fn() -> Result<(), String>) {
    let mut failed = Vec::new();
    for _ in 0..3 {
        match attempt() {
            Ok(()) => return,
            Err(e) => failed.push(e),
        }
    }
    panic!("three attempts, none within the bounds: {failed:#?}");
}

/// A parasite that notes its bursts: 500 us of its own CPU time every
/// 2.5 ms or so, from `begin` until `end` (wall time from `zero`), each
/// burst as (start, end) ns from `zero`. braid's own parasite (`run`)
/// keeps no such log; the recorder, not the parasite, is on trial here.
fn noting_parasite(zero: Instant, begin: Duration, end: Duration) -> Vec<(u64, u64)> {
    let since = |t: Instant| t.duration_since(zero).as_nanos() as u64;
    let mut bursts = Vec::new();
    std::thread::sleep(begin.saturating_sub(zero.elapsed()));
    while zero.elapsed() < end {
        std::thread::sleep(Duration::from_micros(2000));
        let (t0, cpu0) = (Instant::now(), braid_noise::thread_cpu_ns());
        while braid_noise::thread_cpu_ns() - cpu0 < 500_000 {
            std::hint::spin_loop();
        }
        bursts.push((since(t0), since(Instant::now())));
    }
    bursts
}

/// One recording beside a parasite on the same core, checked
/// ([`recording_covers`], [`recording_attributes`]).
fn record_beside_a_parasite() -> Result<(), String> {
    let core = a_core();
    // The parasite's bursts lie inside the recording: from 50 ms after it
    // starts to 150 ms before it ends. `zero` is taken just before the
    // recording starts; the recording's own clock starts within a us.
    let zero = Instant::now();
    // The parasite waits, done, until its CPU clock has been read.
    let (read, wait) = std::sync::mpsc::channel::<()>();
    let parasite = std::thread::spawn(move || {
        pin(core).unwrap();
        let bursts = noting_parasite(zero, Duration::from_millis(50), Duration::from_millis(850));
        wait.recv().ok();
        bursts
    });
    let id = parasite.as_pthread_t();
    pin(core).unwrap();
    let outside0 = taken_outside_tasks(core);
    let (parasite0, own0, wall0) = (thread_cpu(id), braid_noise::thread_cpu_ns(), Instant::now());
    let offset = wall0.duration_since(zero).as_nanos() as u64;
    let trace = record(
        Duration::from_secs(1),
        50_000,
        &AtomicBool::new(false),
        usize::MAX,
    )
    .unwrap();
    let wall = wall0.elapsed().as_nanos() as u64;
    let (parasite1, own1) = (thread_cpu(id), braid_noise::thread_cpu_ns());
    let outside = taken_outside_tasks(core) - outside0;
    read.send(()).unwrap();
    let bursts: Vec<(u64, u64)> = parasite
        .join()
        .unwrap()
        .into_iter()
        .map(|(a, b)| (a.saturating_sub(offset), b.saturating_sub(offset)))
        .collect();
    assert!(bursts.len() > 100, "{} bursts", bursts.len());
    let took = parasite1 - parasite0;
    assert!(took > 100_000_000, "the parasite ran only {took} ns");
    recording_covers(&trace, took, 2_000_000)?;
    recording_attributes(&trace, &bursts, wall - (own1 - own0), outside)
}

#[test]
fn a_replayed_trace_recorded_again_loses_the_same_share() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // One of three, as for the parasite above: a busy machine may starve
    // the replay. A replay or a recording that is wrong is wrong all three
    // times.
    in_one_of_three(replay_and_record);
}

/// A made-up trace replayed on a core while a recording runs beside it.
fn replay_and_record() -> Result<(), String> {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("noise-trace");
    std::fs::create_dir_all(&dir).unwrap();
    // A made-up trace: 1 ms away every 5 ms, 20% of the core.
    let mut text = String::from("# duration_ns 50000000\n");
    for k in 0..10 {
        text += &format!("{}\t1000000\n", 100_000 + k * 5_000_000);
    }
    let file = dir.join("made.trace");
    std::fs::write(&file, &text).unwrap();
    let want = Trace::parse(&text).unwrap().lost_share();
    let core = a_core();
    let replay = Command::new(env!("CARGO_BIN_EXE_braid-noise"))
        .args(["--core", &core.to_string(), "--replay"])
        .arg(&file)
        .args(["--duration", "1.6", "--json"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(100));
    pin(core).unwrap();
    let pid = replay.id();
    let (replay0, wall0) = (process_cpu(pid), Instant::now());
    let trace = record(
        Duration::from_secs(1),
        50_000,
        &AtomicBool::new(false),
        usize::MAX,
    )
    .unwrap();
    let wall = wall0.elapsed().as_nanos() as u64;
    let replay1 = process_cpu(pid);
    let out = replay.wait_with_output().unwrap();
    assert!(out.status.success());
    std::fs::remove_dir_all(&dir).ok();
    // The replay took its trace's share of the core: a fifth, less than a
    // fair share of a core that at most three busy threads share here.
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let share = stats["duty"].as_f64().unwrap();
    if (share - want).abs() >= 0.03 {
        return Err(format!("replayed {share} of {want}"));
    }
    // And the recording on its core saw it take that.
    let took = replay1 - replay0;
    if took as f64 <= 0.8 * want * wall as f64 {
        return Err(format!("the replay ran {took} ns of {wall}"));
    }
    // That the recorder counts no more than was taken is the parasite's
    // test: there the bursts are known, and only they can bound it (a
    // total bound failed once in `.ci/run` here, 2026-11-27: 264 ms
    // recorded, 213 ms off the core, the rest a stall no counter showed).
    recording_covers(&trace, took, 2_000_000)
}

#[test]
fn bad_trace_files_are_refused_with_exit_2_naming_the_line() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("noise-bad");
    std::fs::create_dir_all(&dir).unwrap();
    for (name, text, line) in [
        ("unsorted", "# x\n500\t10\n100\t10\n", 3),
        ("negative", "100\t-10\n", 1),
        ("words", "start\tduration\n", 1),
        ("empty", "# nothing here\n", 0),
    ] {
        let file = dir.join(name);
        std::fs::write(&file, text).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_braid-noise"))
            .args([
                "--core",
                &a_core().to_string(),
                "--replay",
                file.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        if line > 0 {
            assert!(err.contains(&format!("line {line}:")), "{name}: {err}");
        } else {
            assert!(err.contains("empty"), "{name}: {err}");
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}
