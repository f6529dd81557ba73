/* test_costmodel.c: the shared cost model (schemas/costmodel.h) and the runtime's
 * derived roofline: sticks charged for DRAM runs, a convolution's row chunks charged by
 * periods (passes/convcost.c) as by walking every chunk, and on real bundles of the
 * model zoo (a gather model among them, fp32 and fp16) no kernel's modelled efficiency
 * above 100%.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "codegen/cg.h"
#include "costmodel.h"
#include "frontend/fe.h"
#include "passes/convcost.h"
#include "ir.h"
#include "passes/pass.h"
#include "spyrt.h"
#include "unit_util.h"

/* Sticks of single runs and of strided transfers, by hand. */
static void test_sticks(void **state)
{
    (void)state;
    SpyTarget t;
    fe_default_target(&t);
    assert_int_equal(t.stick_bytes, 128);
    assert_int_equal(cost_run_sticks(&t, 0, 128), 1);
    assert_int_equal(cost_run_sticks(&t, 4, 128), 2);     /* straddles two sticks */
    assert_int_equal(cost_run_sticks(&t, 120, 12), 2);
    assert_int_equal(cost_run_sticks(&t, 0, 12), 1);
    assert_int_equal(cost_run_sticks(&t, 0, 0), 0);
    /* 11 runs of 12 bytes, 12 bytes apart (a max-pool row): offsets 0..108 touch one
     * stick each, the run at 120 two */
    uint64_t cnt[2] = {11, 3};
    int64_t str[2] = {12, 4096};
    assert_int_equal(cost_dma_sticks(&t, 0, 12, 1, cnt, str), 12);
    /* the same rows three times, 4096 bytes apart (a multiple of the stick) */
    assert_int_equal(cost_dma_sticks(&t, 0, 12, 2, cnt, str), 36);
    /* a negative offset and stride: runs at -8 and -264 both straddle */
    uint64_t c1[1] = {2};
    int64_t s1[1] = {-256};
    assert_int_equal(cost_dma_sticks(&t, -8, 16, 1, c1, s1), 4);
    /* transfers by dims: a row-major 4 x 40 float block is one 640-byte run (5
     * sticks); loaded transposed (LX dims [40, 4], DRAM strides [1, 40]) it is the same
     * contiguous block; one column (4 runs of 4 bytes, 160 apart) touches 4 sticks;
     * a 2 x 40 block starting 64 bytes into a stick with rows 256 bytes apart: 2 runs
     * of 160 bytes at residue 64, 2 sticks each */
    uint32_t dm[2] = {4, 40}, dt[2] = {40, 4}, dc[2] = {4, 1}, d2[2] = {2, 40};
    int32_t sm[2] = {40, 1}, sT[2] = {1, 40}, sc[2] = {40, 1}, s2[2] = {64, 1};
    assert_int_equal(cost_transfer_bytes(&t, 0, 4, 2, dm, sm), 5 * 128);
    assert_int_equal(cost_transfer_bytes(&t, 0, 4, 2, dt, sT), 5 * 128);
    assert_int_equal(cost_transfer_bytes(&t, 0, 4, 2, dc, sc), 4 * 128);
    assert_int_equal(cost_transfer_bytes(&t, 64, 4, 2, d2, s2), 4 * 128);
    /* a row of 64 floats (two sticks) broadcast over 8 rows (stride 0): the same two
     * sticks moved 8 times, not one stick per element */
    uint32_t db[2] = {8, 64};
    int32_t sb[2] = {0, 1};
    assert_int_equal(cost_transfer_bytes(&t, 0, 4, 2, db, sb), 8 * 2 * 128);
    /* a gather row of 12 bytes with an odd pitch may straddle */
    assert_int_equal(cost_row_sticks_max(&t, 0, 128, 12), 1);
    assert_int_equal(cost_row_sticks_max(&t, 0, 12, 12), 2);
    /* fp32 matrix rate is a quarter of fp16, int8 twice; 8-row pass floor */
    double fl;
    assert_true(cost_mac_rate(&t, ISA_DT_F32) * 4 == cost_mac_rate(&t, ISA_DT_DLF16));
    assert_true(cost_mac_rate(&t, ISA_DT_I8) == 2 * cost_mac_rate(&t, ISA_DT_DLF16));
    assert_true(cost_matmul_cycles(&t, ISA_DT_DLF16, 1, 8, 8, &fl) == 1.0);
    assert_true(fl > 0.9);
    assert_true(cost_matmul_cycles(&t, ISA_DT_DLF16, 64, 64, 64, &fl) == 256.0 && fl == 0);
}

/* floor(a / b) for b > 0. */
static int64_t floor_div(int64_t a, int64_t b)
{
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* cost_dma_sticks against a count run by run (every index tuple's start, the sticks
 * from its first byte's to its last byte's), over seeded random transfers whose
 * strides are often whole sticks (rows of a stick-padded tensor), negative, or small. */
static void test_sticks_brute(void **state)
{
    (void)state;
    SpyTarget t;
    fe_default_target(&t);
    uint64_t seed = 12345;
    for (int iter = 0; iter < 20000; iter++) {
        uint64_t cnt[3];
        int64_t str[3];
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        int nd = (int)(seed >> 60) % 4;
        int64_t off = (int64_t)((seed >> 20) % 601) - 300;
        uint64_t run = 1 + (seed >> 40) % 300;
        for (int d = 0; d < nd; d++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            cnt[d] = 1 + (seed >> 59) % 7;
            int64_t k = (int64_t)((seed >> 30) % 9) - 4, small = (int64_t)((seed >> 10) % 200);
            str[d] = (seed >> 50) % 3 == 0 ? k * 128 : (seed >> 50) % 3 == 1 ? small : -small;
        }
        uint64_t want = 0, total = 1;
        for (int d = 0; d < nd; d++)
            total *= cnt[d];
        for (uint64_t i = 0; i < total; i++) {
            int64_t a = off;
            for (uint64_t r = i, d = 0; d < (uint64_t)nd; d++, r /= cnt[d - 1])
                a += (int64_t)(r % cnt[d]) * str[d];
            want += (uint64_t)(floor_div(a + (int64_t)run - 1, 128) - floor_div(a, 128) + 1);
        }
        assert_int_equal(cost_dma_sticks(&t, off, run, nd, cnt, str), want);
    }
}

/* cost_row_sticks_max against the worst over the residues off + i * pitch reaches,
 * walked one by one, for seeded random offsets, pitches (negative, zero, whole
 * sticks) and stick sizes (powers of two and others); and at once for a stick of
 * 2^31 bytes (a bundle's target may declare one), where the walk took seconds. */
static void test_row_sticks_max(void **state)
{
    (void)state;
    SpyTarget t;
    fe_default_target(&t);
    uint64_t seed = 777;
    for (int iter = 0; iter < 20000; iter++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        int64_t s = (seed >> 61) % 2 ? 128 : 1 + (int64_t)((seed >> 40) % 300);
        int64_t off = (int64_t)((seed >> 20) % 2001) - 1000;
        int64_t pitch = (seed >> 58) % 4 == 0 ? 0 : (int64_t)((seed >> 5) % 1201) - 600;
        uint64_t bytes = (seed >> 33) % 700;
        t.stick_bytes = (uint32_t)s;
        int64_t st = ((pitch % s) + s) % s, r0 = ((off % s) + s) % s, r = r0;
        uint64_t want = 0;
        do {
            uint64_t n = cost_run_sticks(&t, (uint64_t)r, bytes);
            want = n > want ? n : want;
            r = (r + st) % s;
        } while (r != r0);
        assert_int_equal(cost_row_sticks_max(&t, off, pitch, bytes), want);
    }
    t.stick_bytes = 1u << 31;
    assert_int_equal(cost_row_sticks_max(&t, 5, 3, 100), 2);   /* residue 2^31 - 1 */
    assert_int_equal(cost_row_sticks_max(&t, 5, 0, 100), 1);
}

/* Compiles DIR/model.onnx (fp16 when fp16) and checks every kernel: roofline within
 * the modelled time, a limiter named, and the derived compulsory bytes within the
 * charged ones. */
/* pass_conv_rows_bytes by walking every output-row chunk, as it did before it charged
 * the inside chunks by periods: the reference. */
static double rows_bytes_walked(const SpyTarget *t, const IrGeom *geo, int64_t es, int64_t rc,
                                int64_t ext)
{
    int64_t h = geo->in_ext[0], w = geo->in_ext[1], n = (ext + rc - 1) / rc;
    bool banded = plan_patch_banded(geo, rc);
    int64_t nb = banded ? geo->k2[0] : 1;
    int64_t span = banded ? plan_patch_band(geo, rc) : plan_patch_rows(geo, rc);
    double sum = 0;
    for (int64_t j = 0; j < n; j++)
        for (int64_t b = 0; b < nb; b++) {
            int64_t lo = j * rc * geo->s2[0] - geo->pad_lo[0] + b * geo->d2[0], hi = lo + span;
            lo = lo > 0 ? lo : 0;
            hi = hi < h ? hi : h;
            uint32_t dims[3] = {(uint32_t)geo->cg, (uint32_t)(hi > lo ? hi - lo : 0),
                                (uint32_t)w};
            int32_t st[3] = {(int32_t)(h * w), (int32_t)w, 1};
            sum += (double)cost_transfer_bytes(t, lo * w * es, es, 3, dims, st);
        }
    return sum / (double)n;
}

/* pass_conv_out_bytes by walking every chunk: the reference. */
static double out_bytes_walked(const SpyTarget *t, int64_t eo, int64_t m, int64_t mt,
                               int64_t rc, int64_t ext, int64_t pix)
{
    int64_t n = (ext + rc - 1) / rc, tiles = (m + mt - 1) / mt;
    double sum = 0;
    for (int64_t j = 0; j < n; j++) {
        int64_t r0 = j * rc, rows = ext - r0 < rc ? ext - r0 : rc;
        uint32_t dims[2] = {(uint32_t)m, (uint32_t)(rows * pix)};
        int32_t st[2] = {(int32_t)(ext * pix), 1};
        sum += (double)cost_transfer_bytes(t, r0 * pix * eo, eo, 2, dims, st);
    }
    return sum / (double)(n * tiles);
}

/* A convolution's row chunks charged by whole periods of their stick residues
 * (convcost.c) are charged exactly what walking every chunk charges: maps of 5 to
 * 1,201 rows (up to 1,200 chunks: several periods, edges, a short last chunk), widths
 * that are and are not whole sticks, kernels of 1 to 7 rows, strides 1 and 2,
 * dilations 1, 2 and 9 (banded patches), paddings 0 to 3, fp16 and fp32. Fails when
 * the inside range takes a clamped chunk (a row of padding) or a period is off by
 * one. */
static void test_conv_chunk_periods(void **state)
{
    (void)state;
    SpyTarget t;
    fe_default_target(&t);
    static const int64_t hs[] = {5, 28, 56, 241, 1201}, ws[] = {1, 7, 33, 56};
    static const int64_t ks[] = {1, 3, 7}, ss[] = {1, 2}, ds[] = {1, 2, 9}, pads[] = {0, 1, 3};
    static const int64_t rcs[] = {1, 2, 3, 7, 13}, ess[] = {2, 4};
    int checked = 0, long_maps = 0;  /* those with more than two periods of any length */
    for (size_t a = 0; a < sizeof hs / sizeof *hs; a++)
    for (size_t b = 0; b < sizeof ws / sizeof *ws; b++)
    for (size_t c = 0; c < sizeof ks / sizeof *ks; c++)
    for (size_t d = 0; d < sizeof ss / sizeof *ss; d++)
    for (size_t e = 0; e < sizeof ds / sizeof *ds; e++)
    for (size_t f = 0; f < sizeof pads / sizeof *pads; f++) {
        IrGeom geo = {0};
        geo.in_ext[0] = hs[a], geo.in_ext[1] = ws[b], geo.k2[0] = ks[c], geo.s2[0] = ss[d];
        geo.d2[0] = ds[e], geo.pad_lo[0] = geo.pad_hi[0] = pads[f], geo.cg = 3;
        int64_t ext = (hs[a] + 2 * pads[f] - ds[e] * (ks[c] - 1) - 1) / ss[d] + 1;
        if (ext <= 0)
            continue;
        for (size_t r = 0; r < sizeof rcs / sizeof *rcs; r++)
            for (size_t q = 0; q < sizeof ess / sizeof *ess; q++) {
                int64_t rc = rcs[r], es = ess[q];
                assert_true(pass_conv_rows_bytes(&t, &geo, es, rc, ext) ==
                            rows_bytes_walked(&t, &geo, es, rc, ext));
                assert_true(pass_conv_out_bytes(&t, es, 24, 8, rc, ext, ws[b]) ==
                            out_bytes_walked(&t, es, 24, 8, rc, ext, ws[b]));
                checked++;
                long_maps += (ext + rc - 1) / rc > 2 * (int64_t)t.stick_bytes + 16;
            }
    }
    assert_true(checked > 1000 && long_maps > 100);
}

static void check_model(const char *dir, bool fp16)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    IrDiag d;
    ir_diag_init(&d, path);
    FeOptions fo = {0};
    IrGraph *g = fe_load_model(path, &d, &fo);
    if (!g)
        ut_dump_diag(&d);
    assert_non_null(g);
    SpyTarget t;
    fe_default_target(&t);
    PassOptions po = {.opt_level = 2, .target = &t, .verify = false,
                      .precision = fp16 ? PASS_PREC_FP16 : PASS_PREC_MODEL};
    assert_true(pass_run_pipeline(g, &po));
    CgOptions co = {.target = &t, .meta = "compiler=test\n"};
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_true(cg_emit_bundle(g, &co, &buf, &len));
    spy_model *m = NULL;
    char err[512];
    assert_int_equal(spy_model_load_memory(buf, len, &m, err, sizeof err), SPY_OK);
    double dev = 0, roof = 0;
    for (int i = 0; i < spy_model_num_kernels(m); i++) {
        spy_kernel_profile p;
        assert_int_equal(spy_model_kernel_profile(m, i, &p), SPY_OK);
        if (p.roofline_us > p.device_us * (1 + 1e-9))
            fail_msg("%s (%s): kernel %s roofline %.4f us > modelled %.4f us", dir,
                     fp16 ? "fp16" : "fp32", p.name, p.roofline_us, p.device_us);
        assert_true(p.min_dram_bytes <= p.dram_bytes);
        assert_non_null(p.limiter);
        assert_string_not_equal(p.limiter, "?");
        dev += p.device_us;
        roof += p.roofline_us;
    }
    print_message("%s %s: %d kernels, efficiency %.1f%%\n", dir, fp16 ? "fp16" : "fp32",
                  spy_model_num_kernels(m), 100.0 * roof / dev);
    assert_true(roof > 0 && roof <= dev);
    spy_model_free(m);
    free(buf);
    ir_graph_free(g);
    ir_diag_free(&d);
}

/* Efficiency <= 100% on every kernel of a few zoo models, fp32 and fp16: gpt2_tiny and
 * bert_tiny gather embedding rows (their whole tables were counted before), squeezenet
 * moves short runs, mlp is matrix-bound. */
static void test_zoo_efficiency(void **state)
{
    (void)state;
    const char *shared = getenv("SHARED") ? getenv("SHARED") : "../shared";
    static const char *const names[] = {"gpt2_tiny", "bert_tiny", "squeezenet1_1", "mlp"};
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/models", shared);
    DIR *dp = opendir(dir);
    if (!dp) {                             /* listed gap: the zoo lives in ../shared */
        print_message("skipped: %s is not present (the model zoo is in ../shared)\n", dir);
        skip();
    }
    closedir(dp);
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        snprintf(dir, sizeof dir, "%s/models/%s", shared, names[i]);
        check_model(dir, false);
        check_model(dir, true);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sticks),
        cmocka_unit_test(test_sticks_brute),
        cmocka_unit_test(test_row_sticks_max),
        cmocka_unit_test(test_conv_chunk_periods),
        cmocka_unit_test(test_zoo_efficiency),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
