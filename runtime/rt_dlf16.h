/* rt_dlf16.h: array conversions between float32 and DLFloat16 (the card's 16-bit
 * float, ISA_DT_DLF16; format and scalar reference in dtconv.h). */
#ifndef SPYREC_RT_DLF16_H
#define SPYREC_RT_DLF16_H

#include <stddef.h>
#include <stdint.h>

/* dst[i] := DLFloat16 of float src[i], i < n, bit for bit spy_f32_to_dlf16. dst and
 * src need no alignment (LX and DRAM bytes) and must not overlap. */
void rt_f32_to_dlf16_n(void *dst, const void *src, size_t n);

/* dst[i] := float32 of DLFloat16 src[i], i < n, bit for bit spy_dlf16_to_f32. */
void rt_dlf16_to_f32_n(void *dst, const void *src, size_t n);

/* The instruction set the two functions use on this host: "avx512f", "avx2" or
 * "portable" (for tests and messages). */
const char *rt_dlf16_isa(void);

/* Forces the portable (level 0), AVX2 (1) or AVX-512F (2) code, clamped to what the
 * host has; -1 returns to the automatic choice. For tests that compare the paths. */
void rt_dlf16_force_level(int level);

#endif
