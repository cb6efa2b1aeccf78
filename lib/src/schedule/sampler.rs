//! When the trace samples every subdomain's count and owner.

/// A sample at the first look, then at the first look at least `every`
/// ticks after the previous sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sampler {
    every: u64,
    next: u64,
}

impl Sampler {
    pub(crate) fn new(every: u64) -> Self {
        // An interval shorter than a tick samples at every distinct tick.
        Sampler {
            every: every.max(1),
            next: 0,
        }
    }

    /// Whether to sample at tick `now`; if so, the next one is due `every`
    /// ticks on.
    pub(crate) fn due(&mut self, now: u64) -> bool {
        if now < self.next {
            return false;
        }
        self.next = now.saturating_add(self.every);
        true
    }
}

#[cfg(test)]
mod examples {
    //! The documented behaviour of this module's items, as the examples
    //! their docs would show (rustdoc runs doc examples of public items
    //! only).

    #[test]
    fn a_sample_is_due_once_per_interval_from_the_last() {
        use crate::schedule::Sampler;
        let mut s = Sampler::new(10);
        assert!(s.due(0));
        assert!(!s.due(9));
        assert!(s.due(12));
        assert!(!s.due(21) && s.due(22));
    }
}
