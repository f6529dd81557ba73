/* rt_dma_f32.c: LOAD / STORE with ISA_F_F32, the conversion between a float32 tensor in
 * DRAM (a graph input or output that keeps the model's dtype at the bundle's edge) and
 * DLFloat16 in LX, done by the transfer itself (isa.md "LOAD / STORE").
 *
 * Dims of extent 1 are dropped and neighbouring dims contiguous on both sides merged
 * by rt_dma.c's copy plan (the sides have different element sizes, 4 and 2 bytes, so
 * strides stay in elements); innermost rows of stride 1 on both sides go through the vectorised array
 * conversions of rt_dlf16.c, other rows element by element through the scalar
 * reference (dtconv.h), which gives the same bits.
 */
#include <string.h>

#include "dtconv.h"
#include "rt_dlf16.h"
#include "rt_exec.h"

/* Converts one row of len elements: DRAM float32 at dr (stride ds elements), LX
 * DLFloat16 at lx (stride ls). */
static void cvt_row(uint8_t *lx, uint8_t *dr, uint64_t len, int64_t ds, int64_t ls, bool store) {
    if (ds == 1 && ls == 1) {
        if (store)
            rt_dlf16_to_f32_n(dr, lx, (size_t)len);
        else
            rt_f32_to_dlf16_n(lx, dr, (size_t)len);
        return;
    }
    for (uint64_t i = 0; i < len; i++) {
        uint8_t *f = dr + 4 * ds * (int64_t)i, *h = lx + 2 * ls * (int64_t)i;
        float x;
        uint16_t b;
        if (store) {
            memcpy(&b, h, 2);
            x = spy_dlf16_to_f32(b);
            memcpy(f, &x, 4);
        } else {
            memcpy(&x, f, 4);
            b = spy_f32_to_dlf16(x);
            memcpy(h, &b, 2);
        }
    }
}

/* Executes the verified converting LOAD / STORE d between lx and dram (rt_exec.h). */
void rt_dma_f32(uint8_t *lx, uint8_t *dram, const SpyDma *d, bool store) {
    RtCopyPlan p;                    /* ss: DRAM strides, ds: LX strides, in elements */
    if (!rt_plan_copy(&p, d->dims, d->dram_stride, d->lx_stride, 1))
        return;
    int in = p.n - 1;
    uint64_t idx[ISA_MAX_DIMS] = {0};
    for (;;) {
        cvt_row(lx, dram, p.dim[in], p.ss[in], p.ds[in], store);
        int k = in - 1;
        for (; k >= 0; k--) {
            dram += 4 * p.ss[k];
            lx += 2 * p.ds[k];
            if (++idx[k] < p.dim[k])
                break;
            dram -= 4 * p.ss[k] * (int64_t)p.dim[k];
            lx -= 2 * p.ds[k] * (int64_t)p.dim[k];
            idx[k] = 0;
        }
        if (k < 0)
            return;
    }
}
