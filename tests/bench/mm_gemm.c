/* mm_gemm [M K N TM TK TN [THREADS]]: GFLOP/s of the emulator's F32 MATMUL tile kernel
 * (rt_matmul_src) on a whole M x K x N product cut into tiles as spyrec cuts it for 32
 * cores: every TM x TN tile of C over K in pieces of TK (the first piece from 0, the
 * others ACCUM), A and B read where a deferred LOAD leaves them, in the full row-major
 * matrices (row strides K and N: a 1024 x 1024 operand has rows 4 KiB apart), C in a
 * core's LX and stored back. Tiles are dealt to THREADS threads (default 1), each with
 * its own LX and packing buffer, like spyrun's cores over its host threads.
 *
 * Without arguments: the two rows of `make bench-large`'s GEMM table, 1024^3 (tiles
 * m256 k512 n128) and the bert / gpt2 FFN product 128 x 768 x 3072 (m128 k768 n96).
 * Times are each thread's CPU time (best of 10 rounds), so other processes on a shared
 * host change them little; compare with one core's FMA peak (fma_peak) times the
 * threads. The wall time of spyrun adds its LOADs, STOREs and thread hand-offs.
 *
 * Not a test: nothing here asserts on time. Built by `make bench-gemm`.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt_exec.h"

#define ROUNDS 10
#define MAX_THREADS 8

/* A product and its tiling; one thread's share and result. */
typedef struct {
    uint32_t m, k, n, tm, tk, tn;
    const float *a, *b;
    float *c;
    int tid, nth;
    double best_s;           /* the thread's best round, CPU seconds */
} Job;

/* This thread's CPU time in seconds. */
static double cpu_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* One round: the tiles tid, tid + nth, ... of the product, each over all of K (C in
 * LX at 0, stored back into j->c). */
static void run_tiles(const Job *j, uint8_t *lx, float *pack) {
    RtCore c = {.lx = lx, .pack = pack};
    uint32_t gj = j->n / j->tn, tiles = j->m / j->tm * gj;
    for (uint32_t t = (uint32_t)j->tid; t < tiles; t += (uint32_t)j->nth) {
        size_t i0 = (size_t)(t / gj) * j->tm, j0 = (size_t)(t % gj) * j->tn;
        for (uint32_t k0 = 0; k0 < j->k; k0 += j->tk) {
            SpyMatmul mm = {.opcode = ISA_MATMUL, .dtype = ISA_DT_F32,
                            .out_dtype = ISA_DT_F32, .flags = k0 ? ISA_F_ACCUM : 0,
                            .b = 1u << 20, .m = j->tm, .n = j->tn, .k = j->tk, .lda = j->tk,
                            .ldb = j->tn, .ldc = j->tn};
            RtMmSrc s = {(const uint8_t *)(j->a + i0 * j->k + k0),
                         (const uint8_t *)(j->b + (size_t)k0 * j->n + j0), j->k, j->n, false,
                         true, false, false, false, NULL, 0};
            rt_matmul_src(&c, &mm, &s);
        }
        for (uint32_t r = 0; r < j->tm; r++)
            memcpy(j->c + (i0 + r) * j->n + j0, lx + (size_t)r * j->tn * 4, (size_t)j->tn * 4);
    }
}

/* A thread: one warm-up round, then the best of ROUNDS. */
static void *thread_main(void *arg) {
    Job *j = arg;
    size_t lx_bytes = ((size_t)2 << 20) + RT_LX_SLACK;
    uint8_t *lx = aligned_alloc(64, lx_bytes);
    float *pack = aligned_alloc(64, RT_PACK_BYTES + RT_PACK_SLACK);
    j->best_s = -1;
    if (!lx || !pack)
        goto out;
    memset(lx, 0, lx_bytes);
    run_tiles(j, lx, pack);
    j->best_s = 1e30;
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = cpu_s();
        run_tiles(j, lx, pack);
        double dt = cpu_s() - t0;
        j->best_s = dt < j->best_s ? dt : j->best_s;
    }
out:
    free(lx);
    free(pack);
    return NULL;
}

/* Fills n floats with values in [0, 1) from a fixed sequence. */
static void fill(float *p, size_t n, uint32_t mul) {
    for (size_t i = 0; i < n; i++)
        p[i] = (float)((i * mul) % 1000) / 1000.0f;
}

/* Times one product on nth threads and prints its line; 1 on failure. */
static int bench(uint32_t m, uint32_t k, uint32_t n, uint32_t tm, uint32_t tk, uint32_t tn,
                 int nth) {
    float *a = aligned_alloc(64, (size_t)m * k * 4), *b = aligned_alloc(64, (size_t)k * n * 4);
    float *c = aligned_alloc(64, (size_t)m * n * 4);
    Job jobs[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    int bad = !a || !b || !c;
    if (!bad) {
        fill(a, (size_t)m * k, 7919);
        fill(b, (size_t)k * n, 104729);
        for (int t = 0; t < nth; t++) {
            jobs[t] = (Job){m, k, n, tm, tk, tn, a, b, c, t, nth, 0};
            bad |= pthread_create(&th[t], NULL, thread_main, &jobs[t]) != 0;
        }
        double worst = 0;
        for (int t = 0; t < nth && !bad; t++) {
            pthread_join(th[t], NULL);
            bad |= jobs[t].best_s < 0;
            worst = jobs[t].best_s > worst ? jobs[t].best_s : worst;
        }
        double flop = 2.0 * m * n * k;
        if (!bad)
            printf("%ux%ux%u tiles m%u k%u n%u, %d thread%s: %.3f ms CPU (slowest thread), "
                   "%.1f GFLOP/s, %.1f per thread\n", m, k, n, tm, tk, tn, nth,
                   nth > 1 ? "s" : "", worst * 1e3, flop / worst * 1e-9,
                   flop / worst * 1e-9 / nth);
    }
    free(a);
    free(b);
    free(c);
    if (bad)
        fprintf(stderr, "mm_gemm: out of memory or threads\n");
    return bad;
}

int main(int argc, char **argv) {
    if (argc == 1 || argc == 2) {
        int nth = argc == 2 ? atoi(argv[1]) : 1;
        if (nth < 1 || nth > MAX_THREADS)
            nth = 1;
        return bench(1024, 1024, 1024, 256, 512, 128, nth) ||
               bench(128, 768, 3072, 128, 768, 96, nth);
    }
    uint32_t v[6];
    for (int i = 0; i < 6 && i + 1 < argc; i++)
        v[i] = (uint32_t)strtoul(argv[i + 1], NULL, 10);
    int nth = argc > 7 ? atoi(argv[7]) : 1;
    if (argc < 7 || nth < 1 || nth > MAX_THREADS || !v[3] || !v[4] || !v[5] || v[0] % v[3] ||
        v[1] % v[4] || v[2] % v[5] || v[5] > (1u << 20) / 4 / v[3]) {
        fprintf(stderr, "usage: mm_gemm [THREADS] | M K N TM TK TN [THREADS] (tiles dividing "
                        "the product, C tile under 1 MiB, 1 to %d threads)\n", MAX_THREADS);
        return 2;
    }
    return bench(v[0], v[1], v[2], v[3], v[4], v[5], nth);
}
