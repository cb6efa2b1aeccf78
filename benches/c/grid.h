/* The layout every C reference uses, as a careful HPC programmer would:
 * 64-byte aligned grids, rows padded to whole cache lines, and the interior
 * of every row (column 1 on) starting on a line, so that the sweep's loads
 * of the rows above and below and its stores are aligned. Measured on
 * braid's machine (docs/speed.md): 5-20% faster than rows back to back in
 * malloc'd memory. */
#include <stdlib.h>

#define LINE 8 /* doubles per 64-byte cache line */

/* Row stride: w + 2 values rounded up to whole lines. */
static inline int grid_stride(int w) { return (w + 2 + LINE - 1) / LINE * LINE; }

/* (h + 2) rows of stride `grid_stride(w)`, returned so that element 1 of
 * every row is 64-byte aligned; free with grid_free. Not written here: the
 * caller's first touch places the pages. */
static inline double *grid_alloc(int h, int w) {
    size_t n = (size_t)(h + 2) * grid_stride(w) + LINE;
    double *base = aligned_alloc(64, (n * sizeof(double) + 63) / 64 * 64);
    if (!base) return NULL;
    return base + (LINE - 1);
}

static inline void grid_free(double *g) { free(g - (LINE - 1)); }

/* One row of the sweep with the squared residual of the swept state added
 * to eight partial sums (`lanes`, cell j into lane (j - 1) % LINE, the
 * row's last w % LINE cells into lane 0): one accumulator would chain every
 * addition on the last (an `omp simd reduction` loop was 6-27% slower
 * here, docs/speed.md). `up`, `mid`, `down` and `out` point at the rows'
 * halo cell 0. */
static inline void row_residual(const double *restrict up, const double *restrict mid,
                                const double *restrict down, double *restrict out, int w,
                                double lanes[LINE]) {
    int j = 1;
    for (; j + LINE - 1 <= w; j += LINE)
#pragma omp simd
        for (int l = 0; l < LINE; l++) {
            double sum = ((up[j + l] + down[j + l]) + mid[j + l - 1]) + mid[j + l + 1];
            out[j + l] = 0.25 * sum;
            double r = sum - 4.0 * mid[j + l];
            lanes[l] += r * r;
        }
    for (; j <= w; j++) {
        double sum = ((up[j] + down[j]) + mid[j - 1]) + mid[j + 1];
        out[j] = 0.25 * sum;
        double r = sum - 4.0 * mid[j];
        lanes[0] += r * r;
    }
}
