/* fuzz_bundle.c: libFuzzer target for the bundle loader and verifier, and for the
 * emulator on whatever the verifier accepts.
 *
 * Each input is loaded twice with spy_model_load_memory: as it is, and with every
 * section CRC and the header/table CRC recomputed (so that mutations reach the
 * verifier instead of stopping at a checksum). A bundle that loads is queried through
 * the whole public API and, when its modelled work is small, run once on zeroed
 * inputs: the verifier's promise is that anything it accepts runs without touching
 * memory outside its scratchpads and segments.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sbin.h"
#include "spyrt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Recompute the CRCs of a bundle image in place (table trusted only within bounds). */
static void fix_crcs(uint8_t *p, size_t n)
{
    if (n < sizeof(SpyHeader))
        return;
    SpyHeader h;
    memcpy(&h, p, sizeof h);
    if (h.nsections > 64 || sizeof h + (size_t)h.nsections * sizeof(SpySection) > n)
        return;
    for (uint32_t i = 0; i < h.nsections; i++) {
        SpySection s;
        memcpy(&s, p + sizeof h + i * sizeof s, sizeof s);
        if (s.offset <= n && s.size <= n - s.offset) {
            s.crc32c = spy_crc32c(0, p + s.offset, (size_t)s.size);
            memcpy(p + sizeof h + i * sizeof s, &s, sizeof s);
        }
    }
    h.table_crc = 0;
    memcpy(p, &h, sizeof h);
    uint32_t crc = spy_crc32c(0, p, sizeof h);
    crc = spy_crc32c(crc, p + sizeof h, (size_t)h.nsections * sizeof(SpySection));
    h.table_crc = crc;
    memcpy(p, &h, sizeof h);
}

/* The modelled time at the inputs' smallest and largest sizes (spy_model_device_us_at:
 * a size bucket chosen among the verified ones and its guards evaluated). */
static void time_at_sizes(const spy_model *m, int nin)
{
    int64_t *lo = calloc((size_t)nin * SPY_MAX_RANK + 1, sizeof *lo);
    int64_t *hi = calloc((size_t)nin * SPY_MAX_RANK + 1, sizeof *hi);
    for (int i = 0; lo && hi && i < nin; i++) {
        spy_tensor_info info;
        if (spy_model_input_info(m, i, &info) != SPY_OK)
            continue;
        for (int a = 0; a < info.rank && a < SPY_MAX_RANK; a++) {
            int64_t mn, mx;
            size_t at = (size_t)i * SPY_MAX_RANK + (size_t)a;
            lo[at] = hi[at] = info.dims[a];
            if (spy_model_input_dim_bounds(m, i, a, &mn, &mx) == 1)
                lo[at] = mn, hi[at] = mx;
        }
    }
    if (lo && hi) {
        (void)spy_model_device_us_at(m, lo);
        (void)spy_model_device_us_at(m, hi);
    }
    free(lo);
    free(hi);
}

/* Query everything, then run once if the model is small enough. */
static void exercise(spy_model *m)
{
    int nin = spy_model_num_inputs(m), nout = spy_model_num_outputs(m);
    int nk = spy_model_num_kernels(m);
    double work = 0;
    for (int k = 0; k < nk; k++) {
        spy_kernel_profile p;
        if (spy_model_kernel_profile(m, k, &p) == SPY_OK)
            work += (double)p.flops + (double)p.dram_bytes;
        double core_us[64];
        spy_model_kernel_core_us(m, k, core_us, 64);
    }
    (void)spy_model_meta(m);
    time_at_sizes(m, nin);
    /* the modelled time comes from the verified instructions (the kernel table's flops
     * are only metadata): a run of at most ~50 us of device time takes milliseconds */
    if (work > 4e7 || spy_model_device_us(m) > 50.0 ||
        spy_model_session_bytes(m) > ((size_t)64 << 20))
        return;
    void **in = calloc((size_t)nin + 1, sizeof *in);
    void **out = calloc((size_t)nout + 1, sizeof *out);
    size_t total = 0;
    for (int i = 0; i < nin; i++) {
        spy_tensor_info info;
        spy_model_input_info(m, i, &info);
        total += info.nbytes;
        in[i] = calloc(1, info.nbytes + 1);
        (void)spy_model_selftest_input(m, i);
    }
    for (int k = 0; k < nout; k++) {
        spy_tensor_info info;
        spy_model_output_info(m, k, &info);
        total += info.nbytes;
        out[k] = calloc(1, info.nbytes + 1);
    }
    spy_session_options so = {.num_threads = 1, .debug_lx_poison = 1};
    spy_session *s = NULL;
    if (total < ((size_t)64 << 20) && spy_session_create(m, &so, &s) == SPY_OK) {
        spy_session_run(s, (const void *const *)in, out);
        spy_kernel_profile p;
        spy_session_kernel_profile(s, 0, &p);
        spy_session_free(s);
    }
    for (int i = 0; i < nin; i++)
        free(in[i]);
    for (int k = 0; k < nout; k++)
        free(out[k]);
    free(in);
    free(out);
}

/* Load one image; exercise what loads. */
static void try_load(const uint8_t *p, size_t n)
{
    spy_model *m = NULL;
    char err[256];
    if (spy_model_load_memory(p, n, &m, err, sizeof err) == SPY_OK) {
        exercise(m);
        spy_model_free(m);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    try_load(data, size);
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    fix_crcs(copy, size);
    if (size && memcmp(copy, data, size) != 0)
        try_load(copy, size);
    free(copy);
    return 0;
}
