//! A block's values, owned, placed so that its interior sits on cache lines.

use crate::{Block, LINE};

/// The values of one padded [`Block`], with cell `(0, 1)` on a 64-byte
/// line, and so, with a [`Block::padded`] stride, every row's interior.
///
/// Safe code only: a `Vec<f64>` longer than the block by up to `LINE - 1`
/// values, and the block starting at the offset that aligns it. A `Vec`'s
/// buffer moves only when it grows, and this one never grows; a clone is
/// a new allocation and finds its own offset.
///
/// ```
/// use braid_kernel::{Block, Buffer};
/// let b = Buffer::new(Block::padded(3, 5), 1.0);
/// assert_eq!(b.len(), Block::padded(3, 5).len());
/// assert_eq!(b[b.block().at(2, 1)..].as_ptr() as usize % 64, 0);
/// ```
#[derive(Debug)]
pub struct Buffer {
    data: Vec<f64>,
    start: usize,
    block: Block,
}

impl Buffer {
    /// A buffer for `block`, every value `fill`.
    pub fn new(block: Block, fill: f64) -> Self {
        let data = vec![fill; block.len() + LINE - 1];
        // `Vec<f64>` is at least 8-byte aligned: some offset in 0..LINE
        // puts value 1 at a multiple of 64 bytes.
        let first = data.as_ptr() as usize / std::mem::size_of::<f64>();
        let start = (LINE - (first + 1) % LINE) % LINE;
        Buffer { data, start, block }
    }

    /// The layout these values follow.
    pub fn block(&self) -> Block {
        self.block
    }
}

impl Clone for Buffer {
    fn clone(&self) -> Self {
        let mut copy = Buffer::new(self.block, 0.0);
        copy.copy_from_slice(self);
        copy
    }
}

impl std::ops::Deref for Buffer {
    type Target = [f64];
    fn deref(&self) -> &[f64] {
        &self.data[self.start..self.start + self.block.len()]
    }
}

impl std::ops::DerefMut for Buffer {
    fn deref_mut(&mut self) -> &mut [f64] {
        let len = self.block.len();
        &mut self.data[self.start..self.start + len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rows_interior_starts_on_a_cache_line() {
        for (h, w) in [(1, 1), (3, 5), (24, 24), (150, 150), (7, 301)] {
            let b = Block::padded(h, w);
            for _ in 0..8 {
                // Allocations of every size land at differing addresses.
                let buf = Buffer::new(b, 0.0);
                let copy = buf.clone();
                for i in 0..h + 2 {
                    for x in [&buf, &copy] {
                        assert_eq!(x[b.at(i, 1)..].as_ptr() as usize % 64, 0, "{h}x{w} row {i}");
                    }
                }
                std::hint::black_box(vec![0u8; 8 * (h + w)]);
            }
        }
    }

    #[test]
    fn a_clone_holds_the_same_values() {
        let b = Block::padded(4, 9);
        let mut buf = Buffer::new(b, 0.0);
        buf.iter_mut().enumerate().for_each(|(k, v)| *v = k as f64);
        let copy = buf.clone();
        assert_eq!(&copy[..], &buf[..]);
        assert_eq!(copy.len(), b.len());
    }
}
