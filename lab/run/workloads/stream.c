/*
 * lab-stream: memory bandwidth by the four STREAM kernels, written for the lab from their
 * definitions (J. D. McCalpin's STREAM benchmark):
 *
 *     Copy   c[j] = a[j]               16 bytes moved per element
 *     Scale  b[j] = q * c[j]           16 bytes
 *     Add    c[j] = a[j] + b[j]        24 bytes
 *     Triad  a[j] = b[j] + q * c[j]    24 bytes
 *
 * Usage: lab-stream ARRAY_SIZE THREADS REPETITIONS
 *
 * Three arrays of ARRAY_SIZE doubles, each aligned to 2 MiB so that transparent huge pages
 * can back all of it. Each repetition runs the four kernels in turn, each timed on its own.
 * Per kernel the best rate (STREAM's own figure) and the mean rate are printed, over the
 * repetitions after the first, which only warms up (a single repetition is counted). MB is
 * 10^6 bytes, as in STREAM. Output (version 1), one record a line, words then key=value:
 *
 *     lab-stream 1 array_size=N array_bytes=B threads=T repetitions=R counted=C
 *     copy best_mb_s=X mean_mb_s=X min_s=X mean_s=X max_s=X
 *     scale ...
 *     add ...
 *     triad ...
 *     check ok
 *
 * The last line is "check ok" only if every element holds what the kernels' scalar
 * recurrence predicts; otherwise "check failed ..." and exit status 1. Bad arguments:
 * a message on stderr and exit status 2.
 *
 * Build: gcc -O2 -fopenmp -o lab-stream stream.c
 */
#include <errno.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ALIGNMENT (2UL * 1024 * 1024)
#define KERNELS 4

/* q * (2 + q) == 1: each repetition leaves a[j] where it was, so values neither overflow
   nor vanish however many repetitions run (STREAM's 3.0 grows a[] 15-fold a repetition). */
static const double q = 0.41421356237309505;

static const char *names[KERNELS] = {"copy", "scale", "add", "triad"};
static const double bytes_per_element[KERNELS] = {16, 16, 24, 24};

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static long argument(const char *text, const char *what, long low, long high)
{
    char *end;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (errno || end == text || *end || value < low || value > high) {
        fprintf(stderr, "lab-stream: %s must be a whole number from %ld to %ld, not '%s'\n",
                what, low, high, text);
        exit(2);
    }
    return value;
}

static double *array(long n)
{
    void *p = NULL;
    if (posix_memalign(&p, ALIGNMENT, (size_t)n * sizeof(double))) {
        fprintf(stderr, "lab-stream: cannot allocate %ld doubles\n", n);
        exit(2);
    }
    return p;
}

static int off(double value, double expected, double tolerance)
{
    double d = value - expected;
    return d > tolerance || d < -tolerance;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: lab-stream ARRAY_SIZE THREADS REPETITIONS\n");
        return 2;
    }
    long n = argument(argv[1], "ARRAY_SIZE", 1000, 2000000000L);
    int threads = (int)argument(argv[2], "THREADS", 1, 4096);
    int reps = (int)argument(argv[3], "REPETITIONS", 1, 100000);
    double *a = array(n), *b = array(n), *c = array(n);
    double *times = calloc((size_t)reps * KERNELS, sizeof(double));
    if (!times) {
        fprintf(stderr, "lab-stream: out of memory\n");
        return 2;
    }
    omp_set_num_threads(threads);
    int used = 1;

    /* Each thread first touches the part of the arrays it works on later. */
#pragma omp parallel
    {
#pragma omp single
        used = omp_get_num_threads();
#pragma omp for schedule(static)
        for (long j = 0; j < n; j++) {
            a[j] = 1.0;
            b[j] = 2.0;
            c[j] = 0.0;
        }
    }

    for (int r = 0; r < reps; r++) {
        double *t = times + (size_t)r * KERNELS, start;

        start = now();
#pragma omp parallel for schedule(static)
        for (long j = 0; j < n; j++)
            c[j] = a[j];
        t[0] = now() - start;

        start = now();
#pragma omp parallel for schedule(static)
        for (long j = 0; j < n; j++)
            b[j] = q * c[j];
        t[1] = now() - start;

        start = now();
#pragma omp parallel for schedule(static)
        for (long j = 0; j < n; j++)
            c[j] = a[j] + b[j];
        t[2] = now() - start;

        start = now();
#pragma omp parallel for schedule(static)
        for (long j = 0; j < n; j++)
            a[j] = b[j] + q * c[j];
        t[3] = now() - start;
    }

    int first = reps > 1 ? 1 : 0;
    int counted = reps - first;
    printf("lab-stream 1 array_size=%ld array_bytes=%ld threads=%d repetitions=%d counted=%d\n",
           n, n * (long)sizeof(double), used, reps, counted);
    for (int k = 0; k < KERNELS; k++) {
        double min = 0, max = 0, sum = 0;
        for (int r = first; r < reps; r++) {
            double s = times[(size_t)r * KERNELS + k];
            if (r == first || s < min)
                min = s;
            if (r == first || s > max)
                max = s;
            sum += s;
        }
        double mean = sum / counted, bytes = bytes_per_element[k] * (double)n;
        if (min <= 0) {
            printf("check failed: %s took no measurable time; use a larger ARRAY_SIZE\n",
                   names[k]);
            return 1;
        }
        printf("%s best_mb_s=%.1f mean_mb_s=%.1f min_s=%.6f mean_s=%.6f max_s=%.6f\n",
               names[k], 1e-6 * bytes / min, 1e-6 * bytes / mean, min, mean, max);
    }

    /* What every element must hold: the same operations on one element's values. */
    double ea = 1.0, eb = 2.0, ec = 0.0;
    for (int r = 0; r < reps; r++) {
        ec = ea;
        eb = q * ec;
        ec = ea + eb;
        ea = eb + q * ec;
    }
    /* The values are positive; a relative error of 1e-13 is STREAM's bound for doubles. */
    const double ta = 1e-13 * ea, tb = 1e-13 * eb, tc = 1e-13 * ec;
    for (long j = 0; j < n; j++) {
        if (off(a[j], ea, ta) || off(b[j], eb, tb) || off(c[j], ec, tc)) {
            printf("check failed: element %ld is a=%.17g b=%.17g c=%.17g, expected %.17g %.17g"
                   " %.17g\n", j, a[j], b[j], c[j], ea, eb, ec);
            return 1;
        }
    }
    printf("check ok\n");
    free(times);
    free(a);
    free(b);
    free(c);
    return 0;
}
