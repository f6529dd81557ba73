/* mm_tiles [FILTER]: GFLOP/s of the emulator's F32 MATMUL tile kernel (rt_matmul_src,
 * one host thread) on the tile shapes of resnet50's convolutions as spyrec cuts them
 * for 32 cores: implicit-GEMM windows (3 x 3 at stride 1 and 2, 1 x 1 at stride 2, the
 * 7 x 7 stem) and plain products (1 x 1 convolutions); then those of bert_base (seq
 * 128), whose weight is B, read in place from DRAM (a deferred LOAD). FILTER keeps the
 * shapes whose name contains it.
 *
 * Two columns per shape: the weight (A; B for bert_base) warm in the caches, and cold,
 * read from a different place of a 128 MiB buffer every call, as a weight streamed from
 * DRAM is in a whole inference. Times are the thread's CPU time (best of 5 rounds), so other
 * processes on a shared host change them little. Compare with one core's FMA peak
 * (fma_peak): where the kernel is near the peak, the lanes it computes past n (a
 * column block of 2 vectors, the padded grid of a window) are the rest of the cost.
 *
 * The table is every convolution MATMUL shape of resnet50's bundle (spydump --asm; the
 * classifier's four one-row products left out) with its count per inference; the last
 * column and a total line per model weigh the cold times by it: the MATMUL host time
 * of one inference on one thread (to set against spyrun's latency times its threads).
 * bert_base's are its four weight products per layer (QKV, attention output, FFN in
 * and out), 32 cores x 12 layers each; attention's own products left out.
 *
 * Not a test: nothing here asserts on time. Built by `make bench-tiles`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt_exec.h"

/* A tile: m x n x k, and for a window B its k extents and strides and its output
 * pixel extents and strides (elements, isa.md ISA_F_BWIN); A's row stride where
 * spyrec pads the weight's rows (1024 and 2048 floats: 4 and 8 KiB apart, all the rows
 * of a row block would share a few L1 sets). */
typedef struct {
    const char *name;
    uint32_t m, n, k;
    int win;
    uint32_t ke[3];
    int32_t ks[3];
    uint32_t ne[2];
    int32_t ns[2];
    uint32_t lda;            /* A's row stride as the bundle has it (0: k) */
    uint32_t count;          /* MATMULs of this shape in one inference */
    uint32_t ldb;            /* a weight B's row stride as the bundle has it (0: n) */
} Tile;

static const Tile tiles[] = {
    {"w3x3 s1 m16 n98 k2304", 16, 98, 2304, 1, {256, 3, 3}, {144, 16, 1}, {7, 14}, {16, 1}, 0, 160, 0},
    {"plain m16 n196 k1024", 16, 196, 1024, 0, {0}, {0}, {0}, {0}, 1040, 112, 0},
    {"plain m128 n224 k64", 128, 224, 64, 0, {0}, {0}, {0}, {0}, 0, 112, 0},
    {"plain m128 n112 k128", 128, 112, 128, 0, {0}, {0}, {0}, {0}, 0, 112, 0},
    {"plain m64 n49 k512", 64, 49, 512, 0, {0}, {0}, {0}, {0}, 0, 96, 0},
    {"plain m64 n196 k256", 64, 196, 256, 0, {0}, {0}, {0}, {0}, 0, 96, 0},
    {"w3x3 s1 m16 n392 k576", 16, 392, 576, 1, {64, 3, 3}, {522, 58, 1}, {7, 56}, {58, 1}, 0, 96, 0},
    {"w3x3 s1 m16 n196 k1152", 16, 196, 1152, 1, {128, 3, 3}, {270, 30, 1}, {7, 28}, {30, 1}, 0,
     96, 0},
    {"plain m32 n112 k512", 32, 112, 512, 0, {0}, {0}, {0}, {0}, 0, 84, 0},
    {"w3x3 s1 m16 n49 k4608", 16, 49, 4608, 1, {512, 3, 3}, {81, 9, 1}, {7, 7}, {9, 1}, 0, 64, 0},
    {"plain m16 n49 k2048", 16, 49, 2048, 0, {0}, {0}, {0}, {0}, 2064, 64, 0},
    {"plain m32 n224 k256", 32, 224, 256, 0, {0}, {0}, {0}, {0}, 0, 56, 0},
    {"w3x3 s2 m16 n49 k4608", 16, 49, 4608, 1, {512, 3, 3}, {240, 16, 1}, {7, 7}, {32, 2}, 0, 32, 0},
    {"w7x7 s2 m16 n1568 k147", 16, 1568, 147, 1, {3, 7, 7}, {7590, 230, 1}, {14, 112}, {460, 2},
     0, 32, 0},
    {"plain m64 n224 k256", 64, 224, 256, 0, {0}, {0}, {0}, {0}, 0, 28, 0},
    {"plain m64 n112 k512", 64, 112, 512, 0, {0}, {0}, {0}, {0}, 0, 28, 0},
    {"plain m32 n224 k64", 32, 224, 64, 0, {0}, {0}, {0}, {0}, 0, 28, 0},
    {"w3x3 s2 m32 n112 k1152", 32, 112, 1152, 1, {128, 3, 3}, {522, 58, 1}, {4, 28}, {116, 2}, 0,
     28, 0},
    {"w1x1 s2 m128 n112 k256", 128, 112, 256, 1, {256, 1, 1}, {392, 56, 1}, {4, 28}, {112, 2}, 0,
     28, 0},
    {"w3x3 s2 m32 n56 k2304", 32, 56, 2304, 1, {256, 3, 3}, {270, 30, 1}, {4, 14}, {60, 2}, 0, 24, 0},
    {"w1x1 s2 m128 n56 k512", 128, 56, 512, 1, {512, 1, 1}, {196, 28, 1}, {4, 14}, {56, 2}, 0, 24, 0},
    {"w1x1 s2 m128 n49 k1024", 128, 49, 1024, 1, {1024, 1, 1}, {182, 14, 1}, {7, 7}, {28, 2},
     1040, 16, 0},
    {"w3x3 s2 m32 n28 k2304", 32, 28, 2304, 1, {256, 3, 3}, {150, 30, 1}, {2, 14}, {60, 2}, 0, 8, 0},
    {"w1x1 s2 m128 n28 k512", 128, 28, 512, 1, {512, 1, 1}, {84, 28, 1}, {2, 14}, {56, 2}, 0, 8, 0},
};

/* bert_base's: B the weight, a deferred LOAD read in place from DRAM. */
static const Tile bert_tiles[] = {
    {"bert m128 n96 k768", 128, 96, 768, 0, {0}, {0}, {0}, {0}, 0, 384, 3072},
    {"bert m32 n96 k3072", 32, 96, 3072, 0, {0}, {0}, {0}, {0}, 0, 384, 768},
    {"bert m64 n160 k768", 64, 160, 768, 0, {0}, {0}, {0}, {0}, 0, 360, 2304},
    {"bert m32 n96 k768", 32, 96, 768, 0, {0}, {0}, {0}, {0}, 0, 384, 768},
};

#define LX_BYTES ((size_t)8 << 20)     /* the scratchpad: B at 1 MiB, C at 6 MiB */
#define COLD_BYTES ((size_t)128 << 20) /* where cold A rotates */

/* This thread's CPU time in seconds. */
static double cpu_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A MATMUL instruction for tile t: A at LX 0 (unused: A comes from src), B at 1 MiB,
 * C at 6 MiB. */
static SpyMatmul tile_insn(const Tile *t) {
    SpyMatmul mm = {.opcode = ISA_MATMUL, .dtype = ISA_DT_F32, .out_dtype = ISA_DT_F32,
                    .b = 1u << 20, .c = 6u << 20, .m = t->m, .n = t->n, .k = t->k,
                    .lda = t->lda ? t->lda : t->k, .ldb = t->ldb ? t->ldb : t->n,
                    .ldc = t->n};
    if (t->win) {
        mm.flags = ISA_F_BWIN;
        mm.ldb = 0;
        memcpy(mm.bw_kext, t->ke, sizeof t->ke);
        memcpy(mm.bw_ks, t->ks, sizeof t->ks);
        memcpy(mm.bw_next, t->ne, sizeof t->ne);
        memcpy(mm.bw_ns, t->ns, sizeof t->ns);
    }
    return mm;
}

/* Seconds per call of tile t, best of 5 rounds; the weight (A, or B when bw) warm (one
 * place) or cold (rotated through the cold buffer, one slot a call). */
static double time_tile(RtCore *c, const Tile *t, bool bw, const float *weights,
                        const float *bdram, bool cold) {
    SpyMatmul mm = tile_insn(t);
    RtMmSrc src = {(const uint8_t *)weights, (const uint8_t *)bdram, mm.lda, mm.ldb, false,
                  true, false, false, false, NULL, 0};
    if (t->win)
        src.b = c->lx + mm.b, src.ldb = 0, src.bdram = false;
    if (bw)                            /* A in LX, B the weight in DRAM */
        src.a = c->lx, src.b = (const uint8_t *)weights;
    size_t wbytes = bw ? (size_t)t->k * mm.ldb * 4 : (size_t)t->m * mm.lda * 4;
    size_t abytes = (wbytes + 4095) & ~(size_t)4095;
    size_t slots = COLD_BYTES / abytes, slot = 0;
    double flops = 2.0 * t->m * t->n * t->k, best = 1e30;
    int calls = flops > 2e9 ? 3 : (int)(2e9 / flops);
    for (int i = 0; i < 3; i++)
        rt_matmul_src(c, &mm, &src);
    for (int r = 0; r < 5; r++) {
        double t0 = cpu_s();
        for (int i = 0; i < calls; i++) {
            const uint8_t *w = (const uint8_t *)weights + (slot++ % slots) * abytes;
            if (cold && bw)
                src.b = w;
            else if (cold)
                src.a = w;
            rt_matmul_src(c, &mm, &src);
        }
        double dt = (cpu_s() - t0) / calls;
        best = dt < best ? dt : best;
    }
    return best;
}

/* Fills n floats with values in [-0.5, 0.5) from a fixed sequence. */
static void fill(float *p, size_t n, uint32_t mul) {
    for (size_t i = 0; i < n; i++)
        p[i] = (float)((i * mul) % 1000) / 1000.0f - 0.5f;
}

/* Times the n tiles of model (those whose name holds filter, when not NULL): a row each
 * and a total line; bw: B is the weight. */
static void run_table(RtCore *c, const char *model, const Tile *tab, size_t n, bool bw,
                      const char *filter, const float *weights, const float *bdram) {
    double total_s = 0, total_flops = 0;
    for (size_t i = 0; i < n; i++) {
        const Tile *t = &tab[i];
        if (filter && !strstr(t->name, filter))
            continue;
        double flops = 2.0 * t->m * t->n * t->k;
        double warm = time_tile(c, t, bw, weights, bdram, false);
        double cold = time_tile(c, t, bw, weights, bdram, true);
        printf("%-24s %10.2f %8.1f %10.2f %8.1f %5u %8.2f\n", t->name, warm * 1e6,
               flops / warm * 1e-9, cold * 1e6, flops / cold * 1e-9, t->count,
               cold * t->count * 1e3);
        total_s += cold * t->count;
        total_flops += flops * t->count;
    }
    if (total_s > 0)
        printf("total %s (count x cold, one thread) %.2f ms, %.1f GFLOP/s\n", model,
               total_s * 1e3, total_flops / total_s * 1e-9);
}

int main(int argc, char **argv) {
    const char *filter = argc > 1 ? argv[1] : NULL;
    uint8_t *lx = aligned_alloc(64, LX_BYTES + RT_LX_SLACK);
    float *pack = aligned_alloc(64, RT_PACK_BYTES + RT_PACK_SLACK);
    float *weights = aligned_alloc(64, COLD_BYTES);
    float *bdram = aligned_alloc(64, (size_t)8 << 20);
    if (!lx || !pack || !weights || !bdram) {
        fprintf(stderr, "mm_tiles: out of memory\n");
        return 1;
    }
    fill((float *)lx, (LX_BYTES + RT_LX_SLACK) / 4, 7919);
    fill(weights, COLD_BYTES / 4, 104729);
    fill(bdram, ((size_t)8 << 20) / 4, 15485863);
    RtCore c = {.lx = lx, .pack = pack};
    printf("%-24s %10s %8s %10s %8s %5s %8s\n", "tile", "warm us", "GFLOP/s", "cold us", "GFLOP/s",
           "count", "cold ms");
    run_table(&c, "resnet50", tiles, sizeof tiles / sizeof tiles[0], false, filter, weights,
              bdram);
    run_table(&c, "bert_base", bert_tiles, sizeof bert_tiles / sizeof bert_tiles[0], true,
              filter, weights, bdram);
    free(lx);
    free(pack);
    free(weights);
    free(bdram);
    return 0;
}
