/* mm_gemv [THREADS [FILTER]]: read bandwidth of the emulator's one-row F32 MATMUL (a
 * decode step's vector-matrix products) against a plain streaming read of the same bytes.
 *
 * B is a 2048 x 8192 F32 weight (64 MiB, rows 32 KiB apart), as the MLP projections of
 * a 1B Llama, in the tiles spyrec cuts it into for 32 cores: each host thread takes an
 * equal range of the columns, 1184 columns (a core's) at a time, and runs 8 MATMULs
 * of k 256 over them (the first from zero, the others accumulating), reading B in
 * place from the weight (a deferred LOAD). The transposed case is the decode step's
 * tied LM head: B given transposed (element (k, j) at b[j * 2048 + k]), tiles of
 * k 256 x n 1024. The last case cuts the plain B into 256-column tiles (1 KiB of each
 * row, rows pages apart), as spyrec cuts a classifier's [2048, 1000] weight for 4 cores.
 * Several weights rotate through a buffer of 512 MiB, so B comes from DRAM as in a
 * whole inference.
 *
 * Printed for 1 and THREADS threads (default 2): GB/s of B by wall time and by the
 * threads' CPU time (bytes / (sum of their CPU seconds / threads)), best of 8 rounds,
 * for the plain read (sum of the floats, 4 independent vector chains) and the
 * products (FILTER: only the rows whose name contains it). On a shared host the wall
 * figure of 2 threads is only meaningful when both had a CPU of their own. Not a
 * test: nothing here asserts on time. Built by `make bench-gemv`.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <immintrin.h>

#include "rt_exec.h"

#define K 2048
#define N 8192
#define W_BYTES ((size_t)K * N * 4)       /* one weight */
#define BUF_BYTES ((size_t)512 << 20)      /* the weights rotated through */
#define NW (BUF_BYTES / W_BYTES)
#define KT 256                              /* k of a MATMUL */
#define NT 1184                             /* columns of a core (plain B) */
#define NTT 1024                            /* columns of a core (transposed B) */
#define NTS 256                             /* columns of a core: a classifier's tile */
#define MAXT 8
#define ROUNDS 8                            /* timed rounds, best taken */

enum { M_READ, M_PLAIN, M_TRANS, M_SHORT };

typedef struct {
    int mode, tid, nthreads, round;
    const float *buf, *a;
    double cpu;
    float sink;
} Job;

static float *g_lx[MAXT], *g_pack[MAXT];

/* This thread's CPU time in seconds. */
static double cpu_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Wall time in seconds. */
static double wall_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Sum of n floats at p (n a multiple of 64) through 4 independent vector chains: the
 * plain read the products are compared with, in AVX-512 where the host has it, else
 * AVX2 (the emulator's kernels make the same choice at run time). */
__attribute__((target("avx512f"))) static float read_sum512(const float *p, size_t n) {
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = 0; i < n; i += 64) {
        s0 = _mm512_add_ps(s0, _mm512_load_ps(p + i));
        s1 = _mm512_add_ps(s1, _mm512_load_ps(p + i + 16));
        s2 = _mm512_add_ps(s2, _mm512_load_ps(p + i + 32));
        s3 = _mm512_add_ps(s3, _mm512_load_ps(p + i + 48));
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

__attribute__((target("avx2"))) static float read_sum256(const float *p, size_t n) {
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = 0; i < n; i += 32) {
        s0 = _mm256_add_ps(s0, _mm256_load_ps(p + i));
        s1 = _mm256_add_ps(s1, _mm256_load_ps(p + i + 8));
        s2 = _mm256_add_ps(s2, _mm256_load_ps(p + i + 16));
        s3 = _mm256_add_ps(s3, _mm256_load_ps(p + i + 24));
    }
    float v[8];
    _mm256_storeu_ps(v, _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
    return v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
}

static float read_sum(const float *p, size_t n) {
    return __builtin_cpu_supports("avx512f") ? read_sum512(p, n) : read_sum256(p, n);
}

/* Thread j->tid's share of weight w: an equal range of the columns, cut into core
 * tiles of nt columns, each over all k by MATMULs of KT rows. */
static void products(Job *j, const float *w, bool bt, uint32_t nt) {
    uint32_t part = N / (uint32_t)j->nthreads;
    uint32_t end = part * (uint32_t)(j->tid + 1);
    RtCore c = {.lx = (uint8_t *)g_lx[j->tid], .pack = g_pack[j->tid]};
    for (uint32_t j0 = part * (uint32_t)j->tid; j0 < end; j0 += nt) {
        uint32_t n = end - j0 < nt ? end - j0 : nt;
        for (uint32_t k0 = 0; k0 < K; k0 += KT) {
            SpyMatmul mm = {.opcode = ISA_MATMUL, .dtype = ISA_DT_F32, .out_dtype = ISA_DT_F32,
                            .flags = k0 ? ISA_F_ACCUM : 0, .c = 0, .m = 1, .n = n, .k = KT,
                            .lda = KT, .ldb = n, .ldc = n};
            RtMmSrc s = {(const uint8_t *)(j->a + k0),
                         (const uint8_t *)(bt ? w + (size_t)j0 * K + k0
                                              : w + (size_t)k0 * N + j0),
                         KT, bt ? K : N, bt, true, false, false, false, NULL, 0};
            rt_matmul_src(&c, &mm, &s);
        }
    }
}

/* One round of a thread: its share of one weight of the buffer. */
static void *worker(void *arg) {
    Job *j = arg;
    const float *w = j->buf + (size_t)(j->round % NW) * (W_BYTES / 4);
    double t0 = cpu_s();
    if (j->mode == M_READ) {
        size_t part = W_BYTES / 4 / (size_t)j->nthreads;
        j->sink += read_sum(w + (size_t)j->tid * part, part);
    } else
        products(j, w, j->mode == M_TRANS,
                 j->mode == M_TRANS ? NTT : j->mode == M_SHORT ? NTS : NT);
    j->cpu = cpu_s() - t0;
    return NULL;
}

/* Best of ROUNDS rounds of mode on nt threads: GB/s by wall time and by CPU time. */
static void measure(int mode, int nt, const float *buf, const float *a, double *gw,
                    double *gc) {
    static int round;
    double bw = 1e30, bc = 1e30;
    for (int r = 0; r < ROUNDS + 1; r++, round++) {
        pthread_t th[MAXT];
        Job jobs[MAXT];
        double t0 = wall_s(), cpu = 0;
        for (int t = 0; t < nt; t++) {
            jobs[t] = (Job){mode, t, nt, round, buf, a, 0, 0};
            pthread_create(&th[t], NULL, worker, &jobs[t]);
        }
        for (int t = 0; t < nt; t++) {
            pthread_join(th[t], NULL);
            cpu += jobs[t].cpu;
        }
        double wall = wall_s() - t0;
        if (r == 0)
            continue;       /* the first round pages the weight in */
        bw = wall < bw ? wall : bw;
        bc = cpu / nt < bc ? cpu / nt : bc;
    }
    *gw = W_BYTES / bw * 1e-9;
    *gc = W_BYTES / bc * 1e-9;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    threads = threads < 1 ? 1 : threads > MAXT ? MAXT : threads;
    const char *filter = argc > 2 ? argv[2] : NULL;
    float *buf = aligned_alloc(64, BUF_BYTES);
    float *a = aligned_alloc(64, K * 4);
    if (!buf || !a)
        return fprintf(stderr, "mm_gemv: out of memory\n"), 1;
    for (size_t i = 0; i < BUF_BYTES / 4; i++)
        buf[i] = (float)((i * 104729) % 1000) / 1000.0f - 0.5f;
    for (size_t i = 0; i < K; i++)
        a[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    for (int t = 0; t < threads; t++) {
        g_lx[t] = aligned_alloc(64, ((size_t)1 << 20) + RT_LX_SLACK);
        g_pack[t] = aligned_alloc(64, RT_PACK_BYTES + RT_PACK_SLACK);
        if (!g_lx[t] || !g_pack[t])
            return fprintf(stderr, "mm_gemv: out of memory\n"), 1;
    }
    static const char *names[] = {"plain read (sum)", "m1 product, B in place",
                                  "m1 product, B transposed", "m1 product, 256-col tiles"};
    printf("B %d x %d F32 (%zu MiB) from DRAM; GB/s of B, best of 8\n", K, N, W_BYTES >> 20);
    printf("%-26s %8s %12s %12s\n", "", "threads", "GB/s wall", "GB/s CPU");
    for (int mode = M_READ; mode <= M_SHORT; mode++)
        for (int nt = 1; (!filter || strstr(names[mode], filter)) && nt <= threads;
             nt += threads > 1 ? threads - 1 : 1) {
            double gw, gc;
            measure(mode, nt, buf, a, &gw, &gc);
            printf("%-26s %8d %12.2f %12.2f\n", names[mode], nt, gw, gc);
        }
    return 0;
}
