/* Reference for braid's time-to-solution benchmark: synchronous Jacobi to a
 * relative residual target, the way a careful OpenMP programmer writes it.
 * Grids laid out as in grid.h (aligned, padded rows), each row first touched
 * by the thread that sweeps it. One parallel region; one barrier per sweep; the residual of the state
 * being swept is fused into the sweep (eight partial sums) and summed from
 * per-thread partials that every thread reads after the barrier, so all
 * threads take the same decision without a second barrier. A sweep reads
 * the state k and reports the residual of k, exactly as braid's sync does,
 * so both stop after the same number of sweeps.
 * Built by benches/compare.rs with gcc -O3 -march=native -fopenmp.
 * Usage: jacobi_tts GRID.f64 H W TOL MAX_SWEEPS
 *   GRID.f64: the (H+2) x (W+2) initial padded grid, row-major native f64
 *   (written by the benchmark from braid's own problem).
 * Prints: seconds sweeps final_relative_residual */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "grid.h"

#define MAX_THREADS 256
/* One cache line per partial sum, two parities. */
static double partial[2][MAX_THREADS][8];

static double residual_sq(const double *u, int h, int w) {
    int s = grid_stride(w);
    double acc = 0.0;
    for (int i = 1; i <= h; i++)
        for (int j = 1; j <= w; j++) {
            const double *m = u + (size_t)i * s;
            double r = (((m[j - s] + m[j + s]) + m[j - 1]) + m[j + 1]) - 4.0 * m[j];
            acc += r * r;
        }
    return acc;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: jacobi_tts GRID.f64 H W TOL MAX_SWEEPS\n");
        return 2;
    }
    int h = atoi(argv[2]), w = atoi(argv[3]);
    double tol = atof(argv[4]);
    long max_sweeps = atol(argv[5]);
    double line_sq = 0.0;
    int s = grid_stride(w), tight = w + 2;
    size_t n = (size_t)(h + 2) * tight;
    double *file = malloc(n * sizeof *file);
    double *a = grid_alloc(h, w), *b = grid_alloc(h, w);
    FILE *f = fopen(argv[1], "rb");
    if (!file || !a || !b || !f || fread(file, sizeof *file, n, f) != n) {
        fprintf(stderr, "jacobi_tts: cannot read %zu values from %s\n", n, argv[1]);
        return 2;
    }
    fclose(f);
    if (omp_get_max_threads() > MAX_THREADS) return 2;
    long sweeps = 0;
    double t0 = 0.0, secs = 0.0;
    double *first = a, *second = b;
#pragma omp parallel
    {
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
        /* first touch by the thread that will sweep the row (the sweep's
         * static schedule over the same rows); the halo rows by one thread */
#pragma omp for schedule(static)
        for (int i = 1; i <= h; i++)
            for (int j = 0; j < s; j++)
                first[(size_t)i * s + j] = second[(size_t)i * s + j] =
                    j < tight ? file[(size_t)i * tight + j] : 0.0;
#pragma omp single
        {
            for (int i = 0; i <= h + 1; i += h + 1)
                for (int j = 0; j < s; j++)
                    first[(size_t)i * s + j] = second[(size_t)i * s + j] =
                        j < tight ? file[(size_t)i * tight + j] : 0.0;
            line_sq = tol * tol * residual_sq(first, h, w);
            t0 = omp_get_wtime();
        }
        for (long k = 0; k < max_sweeps; k++) {
            const double *src = (k & 1) ? second : first;
            double *dst = (k & 1) ? first : second;
            double lanes[LINE] = {0};
#pragma omp for schedule(static) nowait
            for (int i = 1; i <= h; i++)
                row_residual(src + (size_t)(i - 1) * s, src + (size_t)i * s,
                             src + (size_t)(i + 1) * s, dst + (size_t)i * s, w, lanes);
            double acc = 0.0;
            for (int l = 0; l < LINE; l++) acc += lanes[l];
            partial[k & 1][t][0] = acc;
#pragma omp barrier
            double total = 0.0;
            for (int p = 0; p < nt; p++) total += partial[k & 1][p][0];
            if (total <= line_sq) {
#pragma omp single nowait
                sweeps = k + 1;
                break;
            }
        }
#pragma omp single
        secs = omp_get_wtime() - t0;
    }
    if (sweeps == 0) sweeps = max_sweeps;
    const double *last = (sweeps & 1) ? second : first;
    double r0 = sqrt(line_sq) / tol;
    printf("%.9f %ld %.6e\n", secs, sweeps, sqrt(residual_sq(last, h, w)) / r0);
    return 0;
}
