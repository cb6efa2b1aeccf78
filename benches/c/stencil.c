/* Reference for braid's kernel benchmark: the same 5-point Jacobi sweep as
 * src/kernel.rs, as a plain C loop. Built by benches/compare.rs with
 * gcc -O3 -march=native.
 * Usage: stencil H W SWEEPS REPS  -> one line per rep: seconds */
#include <stdio.h>
#include <stdlib.h>
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

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc != 5) { fprintf(stderr, "usage: stencil H W SWEEPS REPS\n"); return 2; }
    int h = atoi(argv[1]), w = atoi(argv[2]), sweeps = atoi(argv[3]), reps = atoi(argv[4]);
    size_t n = (size_t)(h + 2) * (w + 2);
    double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    for (size_t k = 0; k < n; k++) a[k] = b[k] = (double)((k * 7919) % 101) / 13.0;
    sweep(a, b, h, w); /* warm up */
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        for (int k = 0; k < sweeps; k++) { sweep(a, b, h, w); double *t = a; a = b; b = t; }
        printf("%.9f\n", now() - t0);
    }
    fprintf(stderr, "checksum %g\n", a[n / 2]);
    return 0;
}
