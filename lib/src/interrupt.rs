//! SIGINT and SIGTERM as a value: [`Interrupt::install`] makes the first of
//! them set a flag (instead of killing braid on the spot) that the runtime's
//! monitor, the simulator and `braid experiment` poll, so that a run stops
//! cleanly: workers leave, parasites are reaped, the report is written, and
//! the process exits with 128 + the signal's number. A second signal while
//! braid winds down kills it as usual.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The signal received, if any (0 = none). Cloning shares the flag.
#[derive(Debug, Clone, Default)]
pub struct Interrupt(Arc<AtomicUsize>);

impl Interrupt {
    /// A flag no signal sets (tests, benchmarks, library use).
    pub fn none() -> Interrupt {
        Interrupt::default()
    }

    /// Routes SIGINT and SIGTERM to a new flag.
    pub fn install() -> std::io::Result<Interrupt> {
        use signal_hook::consts::{SIGINT, SIGTERM};
        let flag = Interrupt::default();
        let seen = Arc::new(std::sync::atomic::AtomicBool::new(false));
        for sig in [SIGINT, SIGTERM] {
            // Handlers run in the order registered: the first signal finds
            // `seen` false, then sets it; a second one exits at once.
            let status = i32::from(Interrupt::exit_status(sig));
            signal_hook::flag::register_conditional_shutdown(sig, status, Arc::clone(&seen))?;
            signal_hook::flag::register(sig, Arc::clone(&seen))?;
            signal_hook::flag::register_usize(sig, Arc::clone(&flag.0), sig as usize)?;
        }
        Ok(flag)
    }

    /// The signal that arrived, if one did.
    pub fn signal(&self) -> Option<i32> {
        match self.0.load(Ordering::Relaxed) {
            0 => None,
            s => Some(s as i32),
        }
    }

    /// Sets the flag as if `signal` had arrived.
    pub fn raise(&self, signal: i32) {
        self.0.store(signal as usize, Ordering::Relaxed);
    }

    /// The exit status a process interrupted by `signal` reports.
    pub fn exit_status(signal: i32) -> u8 {
        (128 + signal).clamp(0, 255) as u8
    }
}
