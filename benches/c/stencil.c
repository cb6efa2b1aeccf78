/* Reference for braid's kernel benchmark: the same 5-point Jacobi sweep as
 * kernel/src/lib.rs, as a plain C loop, and the sweep with the squared
 * residual of the swept state fused in (in eight partial sums, as a careful
 * HPC programmer writes a reduction), on grids laid out as in grid.h (aligned, padded
 * rows). Built by benches/compare.rs with
 * gcc -O3 -march=native -fopenmp-simd.
 * Usage: stencil H W SWEEPS REPS [plain|residual]  -> one line per rep: seconds */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "grid.h"

static void sweep(const double *restrict src, double *restrict dst, int h, int w) {
    int s = grid_stride(w);
    for (int i = 1; i <= h; i++) {
        const double *up = src + (size_t)(i - 1) * s, *mid = src + (size_t)i * s,
                     *down = src + (size_t)(i + 1) * s;
        double *out = dst + (size_t)i * s;
        for (int j = 1; j <= w; j++)
            out[j] = 0.25 * (((up[j] + down[j]) + mid[j - 1]) + mid[j + 1]);
    }
}

/* The sweep with the residual, row by row (grid.h's `row_residual`). */
static double sweep_residual(const double *restrict src, double *restrict dst, int h, int w) {
    int s = grid_stride(w);
    double acc[LINE] = {0};
    for (int i = 1; i <= h; i++)
        row_residual(src + (size_t)(i - 1) * s, src + (size_t)i * s, src + (size_t)(i + 1) * s,
                     dst + (size_t)i * s, w, acc);
    double total = 0.0;
    for (int l = 0; l < LINE; l++) total += acc[l];
    return total;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc != 5 && argc != 6) {
        fprintf(stderr, "usage: stencil H W SWEEPS REPS [plain|residual]\n");
        return 2;
    }
    int h = atoi(argv[1]), w = atoi(argv[2]), sweeps = atoi(argv[3]), reps = atoi(argv[4]);
    int residual = argc == 6 && strcmp(argv[5], "residual") == 0;
    size_t n = (size_t)(h + 2) * grid_stride(w);
    double *a = grid_alloc(h, w), *b = grid_alloc(h, w);
    if (!a || !b) return 2;
    double total = 0.0;
    for (size_t k = 0; k < n; k++) a[k] = b[k] = (double)((k * 7919) % 101) / 13.0;
    sweep(a, b, h, w); /* warm up */
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        for (int k = 0; k < sweeps; k++) {
            if (residual)
                total += sweep_residual(a, b, h, w);
            else
                sweep(a, b, h, w);
            double *t = a;
            a = b;
            b = t;
        }
        printf("%.9f\n", now() - t0);
    }
    fprintf(stderr, "checksum %g %g\n", a[n / 2], total);
    return 0;
}
