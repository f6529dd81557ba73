/* fma_peak [THREADS]: measure this host's fp32 peak in GFLOP/s with independent chains of
 * fused multiply-adds on the widest vectors the compiler targets (build with -O2
 * -march=native), THREADS threads at once (default 1). Prints "peak_gflops G vector_bits B".
 *
 * Used by tests/bench/bench_large.py (one thread, times the threads it benchmarks with) to
 * put the emulator's matrix kernel next to what the host can do: a measurement rather than
 * a guess, because the clock a core holds under vector load (turbo, AVX frequency offsets)
 * and the width of its FMA units are not written anywhere. Best of 5 runs. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(__AVX512F__)
#define LANES 16
#elif defined(__AVX__)
#define LANES 8
#else
#define LANES 4
#endif
#define CHAINS 12 /* independent accumulators: more than FMA latency x FMA units */
#define ITERS 50000000L

typedef float vec __attribute__((vector_size(LANES * sizeof(float))));

static volatile float sink;

/* One thread's work: ITERS rounds of CHAINS vector FMAs (acc = acc * m + a). */
static void *fma_loop(void *arg)
{
    vec acc[CHAINS], m, a;
    float seed = (float)(size_t)arg * 1e-9f;
    for (int l = 0; l < LANES; l++) {
        m[l] = 0.999999f;
        a[l] = 1e-7f + seed;
    }
    for (int c = 0; c < CHAINS; c++)
        acc[c] = a * (float)c;
    for (long i = 0; i < ITERS; i++) {
#pragma GCC unroll 16
        for (int c = 0; c < CHAINS; c++)
            acc[c] = acc[c] * m + a; /* contracted into one FMA by -ffp-contract=fast */
    }
    float s = 0;
    for (int c = 0; c < CHAINS; c++)
        for (int l = 0; l < LANES; l++)
            s += acc[c][l];
    sink = s;
    return NULL;
}

/* Seconds on the monotonic clock. */
static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Run the loop on n threads at once; returns the wall time in seconds. */
static double run_threads(int n)
{
    pthread_t tid[256];
    double t0 = now_s();
    for (int i = 0; i < n; i++)
        pthread_create(&tid[i], NULL, fma_loop, (void *)(size_t)i);
    for (int i = 0; i < n; i++)
        pthread_join(tid[i], NULL);
    return now_s() - t0;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1;
    if (n < 1 || n > 256) {
        fprintf(stderr, "usage: fma_peak [THREADS (1 to 256)]\n");
        return 2;
    }
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        double t = run_threads(n);
        best = t < best ? t : best;
    }
    double flop = 2.0 * LANES * CHAINS * (double)ITERS * n;
    printf("peak_gflops %.1f vector_bits %d\n", flop / best * 1e-9, LANES * 32);
    return 0;
}
