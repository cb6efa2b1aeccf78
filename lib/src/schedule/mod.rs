//! The scheduling decisions both engines make, written once: whose turn it
//! is to balance and when ([`balancer`]), which candidate balancer makes a
//! call under `balancer = auto` ([`choose`]), how the policy is called and its
//! moves applied to owners and per-thread sets, which subdomain a thread
//! may update ([`gate`]), when an update computes its residual
//! ([`residual`]), when a bulk-synchronous run's degradation calls for a
//! call ([`degradation`]), when a run stops and how a refuted estimate tightens
//! ([`stop`]), and when the trace takes a sample ([`sampler`]).
//!
//! The core never touches a clock, a thread or an atomic. It works on
//! *ticks* (the runtime passes wall-clock nanoseconds, the simulator
//! virtual picoseconds) and on two small views an engine implements:
//! [`View`] (counts, owners, per-thread totals, read) and [`Sets`] (owners
//! and sets, written by a move). The threaded runtime implements them over
//! atomics and locks, the simulator over plain arrays; where the two must
//! differ, the difference is a named parameter here, not a second copy.

pub(crate) mod calls;
pub(crate) mod choose;
pub(crate) mod degradation;
pub(crate) mod gate;
pub(crate) mod loads;
pub(crate) mod residual;
pub(crate) mod sampler;
pub(crate) mod stop;

pub(crate) use calls::{Caller, Rotation};
pub(crate) use gate::{Gate, lag};
pub(crate) use residual::ResidualSchedule;
pub(crate) use sampler::Sampler;
pub(crate) use stop::{EstimateLine, StopRule, Verdicts, epoch_end};

/// What the balancer reads of a run (each value may be read at a slightly
/// different moment in the runtime: the policy is built for that).
pub(crate) trait View {
    fn subdomains(&self) -> usize;
    fn count(&self, sub: usize) -> u64;
    fn owner(&self, sub: usize) -> usize;
    fn threads(&self) -> usize;
    /// Subdomain updates thread `t` has made so far.
    fn thread_updates(&self, t: usize) -> u64;
    /// The squared local residual `sub`'s last update computed, if the run
    /// computes them.
    fn residual_sq(&self, _sub: usize) -> Option<f64> {
        None
    }
    /// Seconds spent updating `sub` so far (wall or virtual), if measured.
    fn busy_s(&self, _sub: usize) -> Option<f64> {
        None
    }
    /// Seconds of full-speed work `sub`'s updates cost so far, where the
    /// engine knows it (the simulator's cost model); `None` in the runtime,
    /// which derives it from [`Self::busy_s`] and the owner's speed.
    fn work_s(&self, _sub: usize) -> Option<f64> {
        None
    }
    /// Thread `t`'s `(full-speed seconds it got, seconds elapsed)` so far,
    /// whose ratio over an interval is its speed, if measured.
    fn core_time(&self, _t: usize) -> Option<(f64, f64)> {
        None
    }
}

/// What a move writes. [`calls::apply`] calls these in the one order the
/// runtime's handoff protocol is argued for (runtime/calls.rs): the
/// owner first, then the two sets, then both threads told.
pub(crate) trait Sets {
    fn set_owner(&mut self, sub: usize, to: usize);
    fn remove(&mut self, t: usize, sub: usize);
    fn add(&mut self, t: usize, sub: usize);
    /// Thread `t`'s set changed: it picks the new one up at its next sweep.
    fn changed(&mut self, t: usize);
    /// `sub` moved to another socket (its cells follow it there).
    fn crossed_sockets(&mut self, _sub: usize) {}
}
