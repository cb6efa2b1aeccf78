/* Reference for braid's kernel benchmark: the same 5-point Jacobi sweep as
 * src/kernel.rs, as a plain C loop, and the sweep with the squared residual
 * of the swept state fused in (`omp simd reduction`, as an OpenMP code
 * would write it). Built by benches/compare.rs with
 * gcc -O3 -march=native -fopenmp-simd.
 * Usage: stencil H W SWEEPS REPS [plain|residual]  -> one line per rep: seconds */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void sweep(const double *restrict src, double *restrict dst, int h, int w) {
    int s = w + 2;
    for (int i = 1; i <= h; i++) {
        const double *up = src + (i - 1) * s, *mid = src + i * s, *down = src + (i + 1) * s;
        double *out = dst + i * s;
        for (int j = 1; j <= w; j++)
            out[j] = 0.25 * (((up[j] + down[j]) + mid[j - 1]) + mid[j + 1]);
    }
}

static double sweep_residual(const double *restrict src, double *restrict dst, int h, int w) {
    int s = w + 2;
    double acc = 0.0;
    for (int i = 1; i <= h; i++) {
        const double *up = src + (i - 1) * s, *mid = src + i * s, *down = src + (i + 1) * s;
        double *out = dst + i * s;
#pragma omp simd reduction(+ : acc)
        for (int j = 1; j <= w; j++) {
            double sum = ((up[j] + down[j]) + mid[j - 1]) + mid[j + 1];
            out[j] = 0.25 * sum;
            double r = sum - 4.0 * mid[j];
            acc += r * r;
        }
    }
    return acc;
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
    size_t n = (size_t)(h + 2) * (w + 2);
    double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
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
