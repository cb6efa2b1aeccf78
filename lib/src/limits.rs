//! The bounds on every number braid accepts. They sit far above any real
//! run and keep every count they enter (cells, updates) far from overflow;
//! memory itself is checked against the machine (see [`crate::plan`]).
//!
//! Times are another matter: the products of the cost bounds below
//! (`MAX_COST_NS` per cell, cells up to 2^48 a domain, speeds down to
//! `1 / MAX_FACTOR`) reach far past what the simulator's clock holds (2^62
//! ps, [`crate::sim::clock::RANGE_PS`]). No bound here could keep them in
//! without refusing legal runs that stop early, so the clock caps every step
//! and sum at its range and a simulation that reaches it is refused
//! (`StopReason::ClockRange`); below the range every time is exact. Trace
//! times are bounded at 1e15 ns (`braid_noise::trace::MAX_SPAN_NS`), so no
//! sum of them wraps.

/// Durations: seconds (about 11.6 days).
pub const MAX_SECONDS: f64 = 1e6;
pub(crate) const MAX_DOMAIN_SIZE: usize = 1 << 24;
pub(crate) const MAX_SUBDOMAINS: usize = 1 << 20;
/// Threads of a run, real or simulated per rank.
pub const MAX_THREADS: usize = 1 << 16;
/// Logical CPU ids and counts (cores, sockets, a real machine's PUs).
pub const MAX_CPUS: usize = 1 << 16;
/// PUs of a simulated machine (`sim_topology`): 2^24, a million cores
/// sixteen times over; what a simulation needs in memory is checked
/// against the machine before it starts (`plan::memory`).
pub(crate) const MAX_SIM_CPUS: usize = 1 << 24;
/// Keeps `max_iterations * subdomains` below 2^60.
pub(crate) const MAX_ITERATIONS: u64 = 1 << 40;
pub(crate) const MAX_NOISE_SLEEP_US: u64 = 1_000_000_000_000;
pub(crate) const MAX_NOISE_WORK_ITERS: u64 = 1_000_000_000_000;
/// Slow-hook and simulated speed factors.
pub(crate) const MAX_FACTOR: f64 = 1e6;
/// A workload's cost factor: `braid run` sweeps a subdomain this many
/// times per update at most.
pub(crate) const MAX_WORK_FACTOR: f64 = 100.0;
pub(crate) const MAX_COST_NS: f64 = 1e9;

/// Samples in one suite (variants x noise settings x repetitions).
pub const MAX_SAMPLES: u64 = 1_000_000;
/// Text files braid reads (configurations, suites): 16 MiB.
pub const MAX_TEXT_BYTES: u64 = 16 << 20;
/// Noise traces braid replays: 256 MiB (about 16 million detours).
pub(crate) const MAX_TRACE_BYTES: u64 = braid_noise::trace::MAX_TRACE_BYTES;
/// Results files braid reads (a record is a few KiB; traced ones more).
pub const MAX_RESULTS_BYTES: u64 = 4 << 30;
/// One record of a results file, or one run's report: a run of millions
/// of threads with every list kept writes about 100 MiB.
pub const MAX_RECORD_BYTES: u64 = 256 << 20;
