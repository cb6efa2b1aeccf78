//! The one PRNG braid uses: Steele et al.'s SplitMix64. Every random
//! choice (hybrid's cross-socket pick, where a replayed trace starts) must
//! be reproducible from `seed`, and needs nothing stronger.

/// SplitMix64 from a seed.
#[derive(Debug, Clone)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    #[allow(clippy::should_implement_trait)] // not an iterator: it never ends
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A draw in `[0, 1)`, from the top 53 bits.
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A draw in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[cfg(test)]
mod examples {
    //! The documented behaviour of this module's items, as the examples
    //! their docs would show (rustdoc runs doc examples of public items
    //! only).

    #[test]
    fn one_seed_gives_one_sequence_and_below_stays_below() {
        use crate::rng::SplitMix64;
        let (mut a, mut b) = (SplitMix64(7), SplitMix64(7));
        assert_eq!(a.next(), b.next());
        assert!(a.below(10) < 10);
    }
}
