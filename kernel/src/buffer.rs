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

/// The bytes of a page within which two addresses at the same offset can
/// be taken for one another by a core's memory disambiguation (4K
/// aliasing): a load from one buffer waits on a store to the other.
const PAGE: usize = 4096;

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

    /// A copy of these values placed half a page from them: each cell's
    /// address differs from this buffer's by `PAGE / 2` modulo `PAGE`.
    /// A sweep reads one buffer and writes the other at the same cell;
    /// two allocations of the same large size both come from `mmap` at the
    /// same offset in their pages, so without this every store of the
    /// sweep would sit at the offset its next loads read from (measured:
    /// a 150 x 150 pass 5% slower, split four ways 10%).
    ///
    /// ```
    /// use braid_kernel::{Block, Buffer};
    /// let b = Buffer::new(Block::padded(150, 150), 1.5);
    /// let c = b.beside();
    /// assert_eq!(&b[..], &c[..]);
    /// let (x, y) = (b.as_ptr() as usize, c.as_ptr() as usize);
    /// assert_eq!((y + 4096 - x % 4096) % 4096, 2048);
    /// ```
    pub fn beside(&self) -> Self {
        self.copied_beside(self)
    }

    /// A copy of these values whose cells sit half a page from `anchor`'s
    /// (a buffer of any layout; see [`Self::beside`]).
    pub fn copied_beside(&self, anchor: &[f64]) -> Self {
        let values = PAGE / std::mem::size_of::<f64>();
        let mut data = vec![0.0; self.block.len() + values];
        let at = data.as_ptr() as usize;
        let want = (anchor.as_ptr() as usize + PAGE / 2) % PAGE;
        // Both addresses are multiples of 8, so the distance is too.
        let start = ((want + PAGE - at % PAGE) % PAGE) / std::mem::size_of::<f64>();
        data[start..start + self.block.len()].copy_from_slice(self);
        Buffer {
            data,
            start,
            block: self.block,
        }
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
    fn a_buffer_beside_another_holds_its_values_half_a_page_away_on_cache_lines() {
        for (h, w) in [(1, 1), (3, 5), (24, 24), (75, 75), (150, 150), (7, 301)] {
            let b = Block::padded(h, w);
            let mut buf = Buffer::new(b, 0.0);
            for (k, v) in buf.iter_mut().enumerate() {
                *v = k as f64;
            }
            let other = Buffer::new(Block::padded(w, h), 2.0);
            for (copy, anchor) in [
                (buf.beside(), &buf[..]),
                (buf.copied_beside(&other), &other[..]),
            ] {
                assert_eq!(&copy[..], &buf[..], "{h}x{w}");
                let (a, c) = (anchor.as_ptr() as usize, copy.as_ptr() as usize);
                assert_eq!((c + PAGE - a % PAGE) % PAGE, PAGE / 2, "{h}x{w}");
                for i in 0..h + 2 {
                    assert_eq!(
                        copy[b.at(i, 1)..].as_ptr() as usize % 64,
                        0,
                        "{h}x{w} row {i}"
                    );
                }
            }
        }
    }

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
