/* Reference for braid's sync benchmark: synchronous Jacobi over the whole
 * grid with an OpenMP barrier per iteration (the implicit one of `omp for`),
 * on grids laid out as in grid.h (aligned, padded rows), each row first
 * touched by the thread that sweeps it.
 * Built by benches/compare.rs with gcc -O3 -march=native -fopenmp.
 * Usage: jacobi_omp H W ITERS  -> cell updates per second */
#include <stdio.h>
#include <stdlib.h>
#include <omp.h>

#include "grid.h"

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: jacobi_omp H W ITERS\n"); return 2; }
    int h = atoi(argv[1]), w = atoi(argv[2]), iters = atoi(argv[3]);
    int s = grid_stride(w);
    size_t n = (size_t)(h + 2) * s;
    double *a = grid_alloc(h, w), *b = grid_alloc(h, w);
    if (!a || !b) return 2;
    double t0 = 0.0;
#pragma omp parallel
    {
        /* first touch by the thread that will update the row (the same
         * static schedule over the same rows as the sweep); the halo rows by
         * the threads that read them */
#pragma omp for schedule(static)
        for (int i = 1; i <= h; i++)
            for (int j = 0; j < s; j++)
                a[(size_t)i * s + j] = b[(size_t)i * s + j] = (j == 0 || j > w) ? 0.0 : 1.0;
#pragma omp single
        for (int j = 0; j < s; j++)
            a[j] = b[j] = a[(size_t)(h + 1) * s + j] = b[(size_t)(h + 1) * s + j] = 0.0;
#pragma omp single
        t0 = omp_get_wtime();
        for (int it = 0; it < iters; it++) {
            const double *src = (it & 1) ? b : a;
            double *dst = (it & 1) ? a : b;
#pragma omp for schedule(static)
            for (int i = 1; i <= h; i++) {
                const double *up = src + (size_t)(i - 1) * s, *mid = src + (size_t)i * s,
                             *down = src + (size_t)(i + 1) * s;
                double *out = dst + (size_t)i * s;
                for (int j = 1; j <= w; j++)
                    out[j] = 0.25 * (((up[j] + down[j]) + mid[j - 1]) + mid[j + 1]);
            }
        }
    }
    double secs = omp_get_wtime() - t0;
    printf("%.6e\n", (double)h * w * iters / secs);
    fprintf(stderr, "checksum %g\n", a[n / 2]);
    return 0;
}
