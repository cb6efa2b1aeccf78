//! The 5-point Jacobi stencil on one padded block: the only place cells are
//! computed. A block is `h + 2` rows of `w + 2` values with a one-cell halo
//! that the caller fills in before the sweep, stored row-major with a row
//! stride of at least `w + 2` ([`Block`]); [`Buffer`] holds one with every
//! row's interior on a cache line.
//!
//! The formula and its order of additions are fixed (see docs/architecture.md, "What braid must do"):
//! `0.25 * (((N + S) + W) + E)`. Rust never contracts `a * b + c` into an FMA
//! on its own, so the result is the same on every target.

mod buffer;

pub use buffer::Buffer;

/// Values in one 64-byte cache line.
pub const LINE: usize = 8;

/// The shape of a padded block in memory: `h x w` interior cells, a
/// one-cell halo, rows `stride` values apart.
///
/// ```
/// use braid_kernel::Block;
/// let b = Block::padded(150, 150);
/// assert_eq!((b.stride, b.len()), (152, 152 * 152));
/// assert_eq!(Block::padded(24, 24).stride, 32);
/// assert_eq!(Block::tight(24, 24).stride, 26);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    /// Interior rows.
    pub h: usize,
    /// Interior columns.
    pub w: usize,
    /// Values from one row's start to the next's.
    pub stride: usize,
}

impl Block {
    /// Rows back to back: stride `w + 2`.
    pub fn tight(h: usize, w: usize) -> Self {
        Block {
            h,
            w,
            stride: w + 2,
        }
    }

    /// Rows padded to whole cache lines, so that in a [`Buffer`] every
    /// row's interior starts on one: aligned loads and stores make the
    /// sweep 5-20% faster (measured in C and in braid:
    /// `git show 333740e:docs/speed.md`).
    pub fn padded(h: usize, w: usize) -> Self {
        Block {
            h,
            w,
            stride: (w + 2).div_ceil(LINE) * LINE,
        }
    }

    /// Values from the first halo row's start to the last halo row's end.
    pub fn len(&self) -> usize {
        (self.h + 1) * self.stride + self.w + 2
    }

    /// Whether the block has no interior cell.
    pub fn is_empty(&self) -> bool {
        self.h == 0 || self.w == 0
    }

    /// Where cell `(i, j)` of the padded block sits.
    #[inline]
    pub fn at(&self, i: usize, j: usize) -> usize {
        i * self.stride + j
    }
}

/// One Jacobi sweep of the interior of `src` into the interior of `dst`,
/// both tight (`(h + 2) x (w + 2)` values). The halo of `dst` is left
/// untouched.
pub fn sweep(src: &[f64], dst: &mut [f64], h: usize, w: usize) {
    sweep_block(src, dst, Block::tight(h, w));
}

/// Like [`sweep_with_residual`], on tight blocks.
pub fn sweep_with_residual(src: &[f64], dst: &mut [f64], h: usize, w: usize) -> f64 {
    sweep_block_with_residual(src, dst, Block::tight(h, w))
}

/// One Jacobi sweep of the interior of `src` into the interior of `dst`,
/// both laid out as `b`. The halo of `dst` is left untouched.
pub fn sweep_block(src: &[f64], dst: &mut [f64], b: Block) {
    let Block { h, w, stride: s } = b;
    check_shape(src, dst, b);
    for i in 1..=h {
        let (up, mid, down) = rows(src, i, b);
        let out = &mut dst[i * s + 1..i * s + 1 + w];
        let west = &mid[..w];
        let east = &mid[2..];
        // Zipped equal-length slices: no bounds checks, and LLVM vectorises.
        for ((((o, &n), &so), &we), &ea) in out
            .iter_mut()
            .zip(&up[1..=w])
            .zip(&down[1..=w])
            .zip(west)
            .zip(east)
        {
            *o = 0.25 * (((n + so) + we) + ea);
        }
    }
}

/// Lanes of the residual's partial sums: one 512-bit vector (or two 256-bit
/// ones) of independent accumulators.
const LANES: usize = 8;

/// Like [`sweep_block`], and also returns the sum over the interior of the squared
/// residual of `src`, `r = (N + S + W + E) - 4 u`, which the update gives
/// almost for free.
///
/// The new values are computed exactly as in [`sweep`] (bit for bit). The
/// residual is not summed in the naive order:
/// * `r = 4 (u' - u)` exactly, since `u' = 0.25 * sum` and scaling by a
///   power of two is exact (for values that are neither subnormal nor huge),
///   so each term is taken as `(u' - u)^2` and the total multiplied by 16;
/// * the squares go into [`LANES`] independent partial sums, cell `j` of a
///   row into lane `j % LANES` (a row's last `w % LANES` cells into a
///   second set of lanes), all added up at the end; with FMA available, each square is fused into
///   its addition.
///
/// Both keep every single sum's rounding well-defined (no fast-math), so the
/// result is reproducible, and it agrees with the naive sum to a few ulps
/// times the number of cells. Measured (`cargo bench --bench compare --
/// kernel`): the lanes loop compiles to AVX-512 (`vfmadd231pd zmm`) on this
/// machine, and the sweep costs about 5-10% more per cell than [`sweep`];
/// the earlier per-lane-indexed version did not vectorise and cost 3x.
pub fn sweep_block_with_residual(src: &[f64], dst: &mut [f64], b: Block) -> f64 {
    let Block { h, w, stride: s } = b;
    check_shape(src, dst, b);
    let mut acc = [0.0f64; LANES];
    // The row's last `w % LANES` cells: swept as one more whole chunk that
    // ends at the row's end and overlaps the body. The overlapped cells are
    // written again with the same values and masked out of the sum, so the
    // tail vectorises too (as scalar code it cost about 5% at w = 150).
    let rest = w % LANES;
    let counted: [bool; LANES] = std::array::from_fn(|l| l >= LANES - rest);
    let mut tail = [0.0f64; LANES];
    for i in 1..=h {
        let (up, mid, down) = rows(src, i, b);
        let out = &mut dst[i * s + 1..i * s + 1 + w];
        let (north, south) = (&up[1..=w], &down[1..=w]);
        let (west, centre, east) = (&mid[..w], &mid[1..=w], &mid[2..]);
        if w < LANES {
            for j in 0..w {
                let v = 0.25 * (((north[j] + south[j]) + west[j]) + east[j]);
                out[j] = v;
                tail[j] = add_square(tail[j], v - centre[j]);
            }
            continue;
        }
        // Fixed-size chunks by index, one per iteration, with `acc` in vector
        // registers. Written with iterators (`chunks_exact`, `as_chunks`)
        // the loop was unrolled and interleaved in some builds and not in
        // others, depending on code elsewhere in the crate, and that version
        // cost 20% at 24 columns (`git show 333740e:docs/speed.md`); the kernel is its own crate
        // so that no other change moves its code.
        for k in 0..w / LANES {
            let at = k * LANES;
            let (n, so, we) = (chunk(north, at), chunk(south, at), chunk(west, at));
            let (c, ea) = (chunk(centre, at), chunk(east, at));
            let o: &mut [f64; LANES] = (&mut out[at..at + LANES]).try_into().expect("chunk");
            for l in 0..LANES {
                let v = 0.25 * (((n[l] + so[l]) + we[l]) + ea[l]);
                o[l] = v;
                acc[l] = add_square(acc[l], v - c[l]);
            }
        }
        if rest > 0 {
            let at = w - LANES;
            let (n, so, we) = (chunk(north, at), chunk(south, at), chunk(west, at));
            let (c, ea) = (chunk(centre, at), chunk(east, at));
            let o: &mut [f64; LANES] = (&mut out[at..]).try_into().expect("last chunk");
            for l in 0..LANES {
                let v = 0.25 * (((n[l] + so[l]) + we[l]) + ea[l]);
                o[l] = v;
                let d = if counted[l] { v - c[l] } else { 0.0 };
                tail[l] = add_square(tail[l], d);
            }
        }
    }
    16.0 * (acc.iter().sum::<f64>() + tail.iter().sum::<f64>())
}

/// The `LANES` values of `x` from `at`, as an array so that the lane loop
/// has a known length.
#[inline(always)]
fn chunk(x: &[f64], at: usize) -> [f64; LANES] {
    x[at..at + LANES].try_into().expect("LANES values")
}

/// `acc + d * d`, fused where the target has FMA (the grid never sees it:
/// only the residual's sum is fused).
#[inline(always)]
fn add_square(acc: f64, d: f64) -> f64 {
    if cfg!(target_feature = "fma") {
        d.mul_add(d, acc)
    } else {
        acc + d * d
    }
}

fn check_shape(src: &[f64], dst: &[f64], b: Block) {
    assert!(
        b.stride >= b.w + 2,
        "a row's stride is shorter than the row"
    );
    assert!(
        src.len() >= b.len() && dst.len() >= b.len(),
        "block holds fewer than (h+1) x stride + w + 2 values"
    );
}

/// Rows `i - 1`, `i`, `i + 1` of a block (each `w + 2` values, halo included).
#[inline(always)]
fn rows(src: &[f64], i: usize, b: Block) -> (&[f64], &[f64], &[f64]) {
    let row = |k: usize| &src[k * b.stride..k * b.stride + b.w + 2];
    (row(i - 1), row(i), row(i + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(h: usize, w: usize) -> Vec<f64> {
        (0..(h + 2) * (w + 2))
            .map(|k| ((k * 7919) % 101) as f64 / 13.0)
            .collect()
    }

    fn naive(src: &[f64], b: Block) -> (Vec<f64>, f64) {
        let Block { h, w, stride: s } = b;
        let mut out = vec![0.0; src.len()];
        let mut res = 0.0;
        for i in 1..=h {
            for j in 1..=w {
                let sum = ((src[(i - 1) * s + j] + src[(i + 1) * s + j]) + src[i * s + j - 1])
                    + src[i * s + j + 1];
                out[i * s + j] = 0.25 * sum;
                let r = sum - 4.0 * src[i * s + j];
                res += r * r;
            }
        }
        (out, res)
    }

    #[test]
    fn both_sweeps_equal_the_formula_bit_for_bit() {
        for (h, w) in [
            (1, 1),
            (3, 5),
            (8, 7),
            (13, 16),
            (9, 24),
            (150, 150),
            (11, 151),
        ] {
            let src = block(h, w);
            let (want, want_res) = naive(&src, Block::tight(h, w));
            let mut a = vec![0.0; src.len()];
            let mut b = vec![0.0; src.len()];
            sweep(&src, &mut a, h, w);
            let res = sweep_with_residual(&src, &mut b, h, w);
            assert_eq!(a, want);
            assert_eq!(b, want);
            assert!((res - want_res).abs() <= 1e-12 * want_res.max(1.0));
            // The same cells, padded and aligned: the same values.
            let p = Block::padded(h, w);
            let mut from = Buffer::new(p, 0.0);
            for i in 0..h + 2 {
                for j in 0..w + 2 {
                    from[p.at(i, j)] = src[i * (w + 2) + j];
                }
            }
            let (want_p, _) = naive(&from, p);
            let (mut a, mut b) = (Buffer::new(p, 0.0), Buffer::new(p, 0.0));
            sweep_block(&from, &mut a, p);
            let res_p = sweep_block_with_residual(&from, &mut b, p);
            assert_eq!(&a[..], &want_p[..]);
            assert_eq!(&b[..], &want_p[..]);
            assert_eq!(
                res_p.to_bits(),
                res.to_bits(),
                "{h}x{w}: the layout moves the sum"
            );
            for i in 1..=h {
                for j in 1..=w {
                    assert_eq!(a[p.at(i, j)].to_bits(), want[i * (w + 2) + j].to_bits());
                }
            }
        }
    }

    #[test]
    fn sweep_leaves_the_halo_of_dst_alone() {
        let src = block(4, 4);
        let mut dst = vec![-1.0; src.len()];
        sweep(&src, &mut dst, 4, 4);
        let s = 6;
        for j in 0..s {
            assert_eq!(dst[j], -1.0);
            assert_eq!(dst[5 * s + j], -1.0);
            assert_eq!(dst[j * s], -1.0);
            assert_eq!(dst[j * s + 5], -1.0);
        }
    }
}
