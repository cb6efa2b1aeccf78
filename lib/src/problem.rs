//! The test problem and its decomposition: the global grid, its fixed
//! boundary ring, the tiling into one domain per thread and the split of each
//! domain into subdomains, with every subdomain's neighbours.
//!
//! Coordinates are those of the *padded* global grid of `(height + 2) x
//! (width + 2)` cells: row 0 is the north boundary (the source), row
//! `height + 1` the south one, columns 0 and `width + 1` west and east.
//! Interior cells are rows `1..=height`, columns `1..=width`.

use ndarray::Array2;

/// Initial value of every interior cell.
pub(crate) const INITIAL_INTERIOR: f64 = 1.0;
/// Width of the Gaussian source on the north side, as a fraction of the width.
const SOURCE_SIGMA: f64 = 0.1;

/// Which side of a subdomain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Row 0's side (the source's, for the global grid).
    North,
    /// The last row's side.
    South,
    /// Column 0's side.
    West,
    /// The last column's side.
    East,
}

impl Side {
    /// Every side, in index order.
    pub const ALL: [Side; 4] = [Side::North, Side::South, Side::West, Side::East];

    /// Its index into per-side arrays.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The neighbour's side that touches this one.
    pub fn opposite(self) -> Side {
        match self {
            Side::North => Side::South,
            Side::South => Side::North,
            Side::West => Side::East,
            Side::East => Side::West,
        }
    }
}

/// What lies across one side of a subdomain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Neighbour {
    /// Another subdomain, by id.
    Sub(usize),
    /// The fixed boundary ring of the global grid.
    Boundary,
}

/// One subdomain: a rectangle of interior cells and what surrounds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubdomainGeom {
    /// Its index in [`Problem::subs`].
    pub id: usize,
    /// The domain (and so the thread) it starts on.
    pub domain: usize,
    /// First interior row and column, in padded global coordinates.
    pub row0: usize,
    /// (The column.)
    pub col0: usize,
    /// Interior rows.
    pub height: usize,
    /// Interior columns.
    pub width: usize,
    /// Indexed by `Side::index()`.
    pub neighbours: [Neighbour; 4],
}

impl SubdomainGeom {
    /// Its interior cells.
    pub fn cells(&self) -> usize {
        self.height * self.width
    }

    /// The cells along `side`: its width north and south, its height west
    /// and east (an edge a neighbour reads).
    pub fn edge_cells(&self, side: Side) -> usize {
        match side {
            Side::North | Side::South => self.width,
            Side::West | Side::East => self.height,
        }
    }

    /// The cells of the edges it reads from the neighbouring subdomains
    /// that `pick` picks (those another thread owns, say).
    pub fn edge_cells_from(&self, mut pick: impl FnMut(usize) -> bool) -> usize {
        Side::ALL
            .into_iter()
            .filter(|&side| matches!(self.neighbour(side), Neighbour::Sub(n) if pick(n)))
            .map(|side| self.edge_cells(side))
            .sum()
    }

    /// What lies across `side`.
    pub fn neighbour(&self, side: Side) -> Neighbour {
        self.neighbours[side.index()]
    }
}

/// `(rows, cols)` with `rows` the largest divisor of `n` that is at most
/// `sqrt(n)`: the most square tiling of `n` pieces.
pub(crate) fn squarest_split(n: usize) -> (usize, usize) {
    assert!(n > 0, "cannot split into zero pieces");
    let rows = (1..=n)
        .take_while(|r| r * r <= n)
        .filter(|r| n.is_multiple_of(*r))
        .last()
        .unwrap_or(1);
    (rows, n / rows)
}

/// Splits `len` cells into `parts` contiguous runs whose lengths differ by at
/// most one (longer runs first). Returns `(start, len)` pairs.
fn split_extent(len: usize, parts: usize) -> Vec<(usize, usize)> {
    let base = len / parts;
    let extra = len % parts;
    let mut start = 0;
    (0..parts)
        .map(|p| {
            let l = base + usize::from(p < extra);
            let run = (start, l);
            start += l;
            run
        })
        .collect()
}

/// Why a decomposition cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecompositionError {
    /// A domain of no cells.
    #[error("domain_size must be at least 1")]
    EmptyDomain,
    /// No threads.
    #[error("threads must be at least 1")]
    NoThreads,
    /// No subdomains.
    #[error("subdomains must be at least 1")]
    NoSubdomains,
    /// Subdomains smaller than a cell.
    #[error(
        "{subdomains} subdomains split a domain {sub_rows} x {sub_cols}, which does not fit a \
         {domain_size} x {domain_size} domain"
    )]
    SplitTooFine {
        /// Subdomains per domain asked for.
        subdomains: usize,
        /// The split's rows.
        sub_rows: usize,
        /// The split's columns.
        sub_cols: usize,
        /// Cells per side of a domain.
        domain_size: usize,
    },
}

/// The global problem: geometry of every subdomain and the boundary ring.
#[derive(Debug, Clone)]
pub struct Problem {
    /// Cells per side of each thread's square domain.
    pub domain_size: usize,
    /// Threads, one domain each.
    pub threads: usize,
    /// Domains tile the grid as `rows x cols`.
    pub rows: usize,
    /// (The columns.)
    pub cols: usize,
    /// Each domain is split `sub_rows x sub_cols`.
    pub sub_rows: usize,
    /// (The columns.)
    pub sub_cols: usize,
    /// Interior rows of the global grid.
    pub height: usize,
    /// Interior columns of the global grid.
    pub width: usize,
    /// Subdomains, ids `domain * subdomains_per_domain + k`.
    pub subs: Vec<SubdomainGeom>,
}

impl Problem {
    /// `threads` domains of `domain_size`² cells, each split into
    /// `subdomains` pieces as square as possible.
    pub fn new(
        domain_size: usize,
        threads: usize,
        subdomains: usize,
    ) -> Result<Self, DecompositionError> {
        if domain_size == 0 {
            return Err(DecompositionError::EmptyDomain);
        }
        if threads == 0 {
            return Err(DecompositionError::NoThreads);
        }
        if subdomains == 0 {
            return Err(DecompositionError::NoSubdomains);
        }
        let (rows, cols) = squarest_split(threads);
        let (sub_rows, sub_cols) = squarest_split(subdomains);
        if sub_rows > domain_size || sub_cols > domain_size {
            return Err(DecompositionError::SplitTooFine {
                subdomains,
                sub_rows,
                sub_cols,
                domain_size,
            });
        }
        let height = rows * domain_size;
        let width = cols * domain_size;
        let row_runs = split_extent(domain_size, sub_rows);
        let col_runs = split_extent(domain_size, sub_cols);
        // Global grid of subdomains, for finding neighbours.
        let grid_rows = rows * sub_rows;
        let grid_cols = cols * sub_cols;
        let id_at = |gi: usize, gj: usize| {
            let domain = (gi / sub_rows) * cols + gj / sub_cols;
            domain * subdomains + (gi % sub_rows) * sub_cols + gj % sub_cols
        };
        let mut subs = Vec::with_capacity(threads * subdomains);
        for domain in 0..threads {
            let (dr, dc) = (domain / cols, domain % cols);
            for k in 0..subdomains {
                let (sr, sc) = (k / sub_cols, k % sub_cols);
                let (gi, gj) = (dr * sub_rows + sr, dc * sub_cols + sc);
                let across = |di: isize, dj: isize| {
                    let (i, j) = (gi as isize + di, gj as isize + dj);
                    if i < 0 || j < 0 || i >= grid_rows as isize || j >= grid_cols as isize {
                        Neighbour::Boundary
                    } else {
                        Neighbour::Sub(id_at(i as usize, j as usize))
                    }
                };
                subs.push(SubdomainGeom {
                    id: domain * subdomains + k,
                    domain,
                    row0: 1 + dr * domain_size + row_runs[sr].0,
                    col0: 1 + dc * domain_size + col_runs[sc].0,
                    height: row_runs[sr].1,
                    width: col_runs[sc].1,
                    neighbours: [across(-1, 0), across(1, 0), across(0, -1), across(0, 1)],
                });
            }
        }
        Ok(Problem {
            domain_size,
            threads,
            rows,
            cols,
            sub_rows,
            sub_cols,
            height,
            width,
            subs,
        })
    }

    /// The grid of all subdomains: `(rows, columns)`, north to south and
    /// west to east.
    pub fn sub_grid(&self) -> (usize, usize) {
        (self.rows * self.sub_rows, self.cols * self.sub_cols)
    }

    /// The id of the subdomain at row `i` and column `j` of [`Self::sub_grid`].
    pub fn sub_at(&self, i: usize, j: usize) -> usize {
        let domain = (i / self.sub_rows) * self.cols + j / self.sub_cols;
        domain * self.subdomains_per_domain()
            + (i % self.sub_rows) * self.sub_cols
            + j % self.sub_cols
    }

    /// Subdomains per domain.
    pub fn subdomains_per_domain(&self) -> usize {
        self.sub_rows * self.sub_cols
    }

    /// Interior cells of the global grid.
    pub fn interior_cells(&self) -> usize {
        self.height * self.width
    }

    /// The fixed value of a boundary-ring cell (padded coordinates).
    /// The north row is the source, worked out per cell rather than
    /// stored: a row as wide as the grid is memory no estimate counted
    /// (and the simulator that only counts never needs it).
    pub fn boundary_value(&self, row: usize, col: usize) -> f64 {
        if row == 0 {
            let x = col as f64 / (self.width + 1) as f64 - 0.5;
            (-(x * x) / (2.0 * SOURCE_SIGMA * SOURCE_SIGMA)).exp()
        } else {
            0.0
        }
    }

    /// The initial value of a cell (padded coordinates): the boundary ring's
    /// fixed value, or `INITIAL_INTERIOR` inside.
    pub fn initial_value(&self, row: usize, col: usize) -> f64 {
        if row == 0 || col == 0 || row == self.height + 1 || col == self.width + 1 {
            self.boundary_value(row, col)
        } else {
            INITIAL_INTERIOR
        }
    }

    /// The initial padded grid.
    pub fn initial_grid(&self) -> Array2<f64> {
        Array2::from_shape_fn((self.height + 2, self.width + 2), |(i, j)| {
            self.initial_value(i, j)
        })
    }

    /// `residual_norm(&self.initial_grid())`, the same additions in the
    /// same order, without building the grid (a rank of a run across ranks
    /// never holds the whole grid).
    pub fn initial_residual_norm(&self) -> f64 {
        residual_sq(self.height, self.width, |i, j| self.initial_value(i, j)).sqrt()
    }

    /// The domain whose thread gets noise by default: the middle domain of
    /// the north row, next to the source.
    pub fn source_domain(&self) -> usize {
        self.cols / 2
    }
}

/// `||r||_2` over the interior of a padded grid, with
/// `r = (N + S + W + E) - 4 u`.
pub fn residual_norm(grid: &Array2<f64>) -> f64 {
    let (h, w) = grid.dim();
    residual_sq(h - 2, w - 2, |i, j| grid[[i, j]]).sqrt()
}

/// `sum r^2`, `r = (((N + S) + W) + E) - 4 u`, over the `h` x `w` interior
/// of a padded block whose value at padded `(i, j)` is `u(i, j)`, row by
/// row: the one spelling of the residual, whose order of additions every
/// exact residual shares (the whole grid's, the initial one, a rank's part).
pub(crate) fn residual_sq(h: usize, w: usize, u: impl Fn(usize, usize) -> f64) -> f64 {
    let mut sum = 0.0;
    for i in 1..=h {
        for j in 1..=w {
            let r = (((u(i - 1, j) + u(i + 1, j)) + u(i, j - 1)) + u(i, j + 1)) - 4.0 * u(i, j);
            sum += r * r;
        }
    }
    sum
}

/// Plain sequential Jacobi on the whole padded grid: the oracle that
/// synchronous runs must equal bit for bit. Written independently of
/// `kernel` on purpose.
pub fn sequential_jacobi(problem: &Problem, iterations: usize) -> Array2<f64> {
    let mut cur = problem.initial_grid();
    let mut next = cur.clone();
    for _ in 0..iterations {
        jacobi_step(&cur, &mut next);
        std::mem::swap(&mut cur, &mut next);
    }
    cur
}

/// One sequential Jacobi sweep of a padded grid's interior into `next`.
fn jacobi_step(cur: &Array2<f64>, next: &mut Array2<f64>) {
    let (h, w) = cur.dim();
    for i in 1..h - 1 {
        for j in 1..w - 1 {
            next[[i, j]] =
                0.25 * (((cur[[i - 1, j]] + cur[[i + 1, j]]) + cur[[i, j - 1]]) + cur[[i, j + 1]]);
        }
    }
}

/// The first iteration `k` whose state's residual meets `tolerance`
/// (relative to the initial one), by sequential Jacobi, computing the
/// residual of every state: where a synchronous run must stop, at the
/// barrier after sweeping state `k` (with state `k + 1`), however seldom
/// it computes its own (`schedule::residual`). `None` past `limit`.
#[cfg(test)]
pub(crate) fn first_iteration_meeting(
    problem: &Problem,
    tolerance: f64,
    limit: usize,
) -> Option<usize> {
    let mut cur = problem.initial_grid();
    let mut next = cur.clone();
    let r0 = residual_norm(&cur);
    for k in 0..=limit {
        if residual_norm(&cur) <= tolerance * r0 {
            return Some(k);
        }
        jacobi_step(&cur, &mut next);
        std::mem::swap(&mut cur, &mut next);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn squarest_split_matches_the_design_examples() {
        assert_eq!(squarest_split(1), (1, 1));
        assert_eq!(squarest_split(2), (1, 2));
        assert_eq!(squarest_split(4), (2, 2));
        assert_eq!(squarest_split(7), (1, 7));
        assert_eq!(squarest_split(24), (4, 6));
        assert_eq!(squarest_split(36), (6, 6));
    }

    #[test]
    fn subdomains_tile_the_grid_exactly_once() {
        for (ds, t, s) in [(7, 3, 4), (10, 6, 6), (5, 1, 5), (300, 2, 4)] {
            let p = Problem::new(ds, t, s).unwrap();
            let mut seen = Array2::<u8>::zeros((p.height + 2, p.width + 2));
            for sub in &p.subs {
                for i in sub.row0..sub.row0 + sub.height {
                    for j in sub.col0..sub.col0 + sub.width {
                        seen[[i, j]] += 1;
                    }
                }
            }
            let interior = seen.slice(ndarray::s![1..=p.height, 1..=p.width]);
            assert!(interior.iter().all(|&c| c == 1), "{ds} {t} {s}");
            assert_eq!(seen.iter().filter(|&&c| c > 0).count(), p.interior_cells());
        }
    }

    #[test]
    fn neighbours_are_adjacent_and_symmetric() {
        let p = Problem::new(9, 6, 4).unwrap();
        for sub in &p.subs {
            for side in Side::ALL {
                match sub.neighbour(side) {
                    Neighbour::Sub(n) => {
                        let other = &p.subs[n];
                        assert_eq!(other.neighbour(side.opposite()), Neighbour::Sub(sub.id));
                        match side {
                            Side::North => assert_eq!(other.row0 + other.height, sub.row0),
                            Side::South => assert_eq!(sub.row0 + sub.height, other.row0),
                            Side::West => assert_eq!(other.col0 + other.width, sub.col0),
                            Side::East => assert_eq!(sub.col0 + sub.width, other.col0),
                        }
                    }
                    Neighbour::Boundary => match side {
                        Side::North => assert_eq!(sub.row0, 1),
                        Side::South => assert_eq!(sub.row0 + sub.height, p.height + 1),
                        Side::West => assert_eq!(sub.col0, 1),
                        Side::East => assert_eq!(sub.col0 + sub.width, p.width + 1),
                    },
                }
            }
        }
    }

    #[test]
    fn a_split_finer_than_the_domain_is_rejected() {
        assert!(matches!(
            Problem::new(2, 1, 9),
            Err(DecompositionError::SplitTooFine { .. })
        ));
        assert!(Problem::new(3, 1, 9).is_ok());
    }

    #[test]
    fn boundary_has_the_source_on_the_north_side_only() {
        let p = Problem::new(20, 2, 1).unwrap();
        let g = p.initial_grid();
        let mid = (p.width + 2) / 2;
        assert!(g[[0, mid]] > 0.9);
        assert!(g[[0, 1]] < 0.01);
        assert_eq!(g[[p.height + 1, mid]], 0.0);
        assert_eq!(g[[mid.min(p.height), 0]], 0.0);
        assert_eq!(g[[1, 1]], INITIAL_INTERIOR);
    }

    #[test]
    fn sequential_jacobi_reduces_the_residual() {
        let p = Problem::new(16, 1, 1).unwrap();
        let r0 = residual_norm(&p.initial_grid());
        assert_eq!(p.initial_residual_norm(), r0);
        let r = residual_norm(&sequential_jacobi(&p, 50));
        assert!(r < r0 && r > 0.0);
    }
}
