/* rt_copy512.c: rows of a few hundred contiguous bytes copied with AVX-512F moves, on
 * hosts that have them (rt_copy_rows; elsewhere rt_copy_bytes row by row).
 *
 * A convolution's input patch comes into LX as rows of one output row's width: 224,
 * 112, 56 or 28 bytes for resnet50's stages, thousands of them a patch. rt_copy_bytes,
 * built for any x86-64, moves a 224-byte row as seven pairs of 16-byte moves; here it
 * is three 64-byte moves and one masked one (a 56-byte row: one masked move). Bytes
 * are copied as they are; source and destination do not overlap (LX and DRAM).
 */
#include "rt_exec.h"

#if RT_HAVE_X86_KERNELS /* else an empty file */
#include <immintrin.h>

#define CP_TARGET __attribute__((target("avx512f")))

/* Row lengths taken: whole 4-byte elements, up to CP_MAX_BYTES (longer rows are few
 * and rt_copy_bytes's memcpy moves them well). */
#define CP_MIN_BYTES 32
#define CP_MAX_BYTES 1024

/* nr rows of nb bytes (a multiple of 4), full 64-byte blocks then a masked tail. */
CP_TARGET static void cp_rows(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss,
                              uint64_t nr, size_t nb) {
    size_t full = nb / 64;
    __mmask16 m = (__mmask16)((1u << ((nb % 64) / 4)) - 1);
    for (uint64_t r = 0; r < nr; r++, d += ds, s += ss) {
        size_t i = 0;
        for (; i < full; i++)
            _mm512_storeu_si512(d + 64 * i, _mm512_loadu_si512(s + 64 * i));
        if (m)
            _mm512_mask_storeu_epi32(d + 64 * i, m, _mm512_maskz_loadu_epi32(m, s + 64 * i));
    }
}

bool rt_copy_rows512(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, uint64_t nr,
                     size_t nb) {
    if (nb % 4 || nb < CP_MIN_BYTES || nb > CP_MAX_BYTES || !rt_host_has(RT_HOST_AVX512))
        return false;
    cp_rows(d, ds, s, ss, nr, nb);
    return true;
}
#endif
