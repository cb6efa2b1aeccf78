//! What a home slab costs the cost model once some of its subdomains are
//! away. The runtime sweeps the regions of its domain that a thread holds
//! as blocks (`subdomain/slab.rs`, `Slab::blocks`): in each row of regions
//! every run of adjacent live ones is one block, and runs over the same
//! columns in consecutive rows are merged. Each block beyond the first
//! brings halos and edges of its own and a sweep of its own; the cost
//! model charges it `sim_block_ns`, shared by the regions the pass sweeps.
//! Measured on 2026-11-29 (docs/simulator.md): one subdomain of four moved
//! off a thread's 150² domain cost that thread 7% of its rate, its three
//! left swept as two blocks.

/// The blocks the live regions of a `rows x cols` slab are swept as;
/// `live(k)` for region `k` in row-major order.
pub fn blocks(rows: usize, cols: usize, live: impl Fn(usize) -> bool) -> usize {
    let mut count = 0;
    // The previous row's runs, as (first column, end column).
    let mut above: Vec<(usize, usize)> = Vec::new();
    let mut here: Vec<(usize, usize)> = Vec::new();
    for r in 0..rows {
        here.clear();
        let mut j = 0;
        while j < cols {
            if !live(r * cols + j) {
                j += 1;
                continue;
            }
            let j0 = j;
            while j < cols && live(r * cols + j) {
                j += 1;
            }
            if !above.contains(&(j0, j)) {
                count += 1;
            }
            here.push((j0, j));
        }
        std::mem::swap(&mut above, &mut here);
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mask(bits: &[u8]) -> impl Fn(usize) -> bool + '_ {
        move |k| bits[k] == 1
    }

    #[test]
    fn a_whole_slab_is_one_block() {
        assert_eq!(blocks(2, 2, mask(&[1, 1, 1, 1])), 1);
        assert_eq!(blocks(3, 3, |_| true), 1);
    }

    #[test]
    fn a_hole_splits_the_slab_as_the_runtime_sweeps_it() {
        // 2 x 2 without its north-east region: the north-west alone, and the
        // south row as one block (as slab.rs's blocks make them).
        let ne = [1, 0, 1, 1];
        assert_eq!(blocks(2, 2, mask(&ne)), 2);
        // Without the south-east: the north row, then the south-west alone.
        assert_eq!(blocks(2, 2, mask(&[1, 1, 1, 0])), 2);
        // A column of two merges down; two apart do not.
        assert_eq!(blocks(2, 2, mask(&[1, 0, 1, 0])), 1);
        assert_eq!(blocks(2, 2, mask(&[1, 0, 0, 1])), 2);
        // 3 x 3 without its centre: the north row, the west and east
        // regions of the middle row apart, and the south row.
        let centre = [1, 1, 1, 1, 0, 1, 1, 1, 1];
        assert_eq!(blocks(3, 3, mask(&centre)), 4);
        assert_eq!(blocks(3, 3, |_| false), 0);
    }
}
