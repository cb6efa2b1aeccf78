//! The 5-point Jacobi stencil on one padded block: the only place cells are
//! computed. A block is `(h + 2) x (w + 2)` values, row-major, with a one-cell
//! halo that the caller fills in before the sweep.
//!
//! The formula and its order of additions are fixed (see DESIGN.md §1):
//! `0.25 * (((N + S) + W) + E)`. Rust never contracts `a * b + c` into an FMA
//! on its own, so the result is the same on every target.

/// One Jacobi sweep of the interior of `src` into the interior of `dst`.
/// The halo of `dst` is left untouched.
pub fn sweep(src: &[f64], dst: &mut [f64], h: usize, w: usize) {
    let s = w + 2;
    check_shape(src, dst, h, w);
    for i in 1..=h {
        let (up, mid, down) = rows(src, i, s);
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

/// Like [`sweep`], and also returns the sum over the interior of the squared
/// residual of `src`, `r = (N + S + W + E) - 4 u`, which the update gives
/// almost for free.
#[allow(clippy::needless_range_loop)] // indexing by lane is the point
pub fn sweep_with_residual(src: &[f64], dst: &mut [f64], h: usize, w: usize) -> f64 {
    const LANES: usize = 4;
    let s = w + 2;
    check_shape(src, dst, h, w);
    // Independent lane sums let the reduction vectorise without reassociating
    // any single sum (no fast-math needed).
    let mut acc = [0.0f64; LANES];
    for i in 1..=h {
        let (up, mid, down) = rows(src, i, s);
        let out = &mut dst[i * s + 1..i * s + 1 + w];
        let centre = &mid[1..=w];
        let west = &mid[..w];
        let east = &mid[2..];
        let (n, so) = (&up[1..=w], &down[1..=w]);
        let body = w - w % LANES;
        for k in (0..body).step_by(LANES) {
            for l in 0..LANES {
                let j = k + l;
                let sum = ((n[j] + so[j]) + west[j]) + east[j];
                out[j] = 0.25 * sum;
                let r = sum - 4.0 * centre[j];
                acc[l] += r * r;
            }
        }
        for j in body..w {
            let sum = ((n[j] + so[j]) + west[j]) + east[j];
            out[j] = 0.25 * sum;
            let r = sum - 4.0 * centre[j];
            acc[0] += r * r;
        }
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3])
}

fn check_shape(src: &[f64], dst: &[f64], h: usize, w: usize) {
    let len = (h + 2) * (w + 2);
    assert!(
        src.len() == len && dst.len() == len,
        "block is not (h+2) x (w+2)"
    );
}

/// Rows `i - 1`, `i`, `i + 1` of a block with stride `s`.
fn rows(src: &[f64], i: usize, s: usize) -> (&[f64], &[f64], &[f64]) {
    let up = &src[(i - 1) * s..i * s];
    let mid = &src[i * s..(i + 1) * s];
    let down = &src[(i + 1) * s..(i + 2) * s];
    (up, mid, down)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(h: usize, w: usize) -> Vec<f64> {
        (0..(h + 2) * (w + 2))
            .map(|k| ((k * 7919) % 101) as f64 / 13.0)
            .collect()
    }

    fn naive(src: &[f64], h: usize, w: usize) -> (Vec<f64>, f64) {
        let s = w + 2;
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
        for (h, w) in [(1, 1), (3, 5), (8, 7), (13, 16)] {
            let src = block(h, w);
            let (want, want_res) = naive(&src, h, w);
            let mut a = vec![0.0; src.len()];
            let mut b = vec![0.0; src.len()];
            sweep(&src, &mut a, h, w);
            let res = sweep_with_residual(&src, &mut b, h, w);
            assert_eq!(a, want);
            assert_eq!(b, want);
            assert!((res - want_res).abs() <= 1e-12 * want_res.max(1.0));
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
