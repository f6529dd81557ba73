/* rt_copy.h: inline byte copies shared by the DMA and VEC kernels. */
#ifndef SPYRT_RT_COPY_H
#define SPYRT_RT_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Copies n bytes between non-overlapping buffers; short runs (the common case: rows
 * of a few sticks) use inline 32/16/8/4-byte moves, the last one overlapping the one
 * before it, instead of a library call; rows of up to 2 KiB inline 64-byte moves (a
 * max pool's input planes copied into its padded patch, 448-byte rows: its kernel
 * 275-302 -> 254-266 us in resnet50 at one thread, alternating runs), where a call per
 * row cost more than the copy. */
static inline void rt_copy_bytes(uint8_t *d, const uint8_t *s, size_t n) {
    if (n > 2048) {
        memcpy(d, s, n);
    } else if (n > 256) {
        size_t i = 0;
        for (; i + 64 <= n; i += 64)
            memcpy(d + i, s + i, 64);
        if (i < n)
            memcpy(d + n - 64, s + n - 64, 64);
    } else if (n >= 32) {
        size_t i = 0;
        for (; i + 32 <= n; i += 32)
            memcpy(d + i, s + i, 32);
        if (i < n)
            memcpy(d + n - 32, s + n - 32, 32);
    } else if (n >= 16) {
        memcpy(d, s, 16);
        memcpy(d + n - 16, s + n - 16, 16);
    } else if (n >= 8) {
        memcpy(d, s, 8);
        memcpy(d + n - 8, s + n - 8, 8);
    } else if (n >= 4) {
        memcpy(d, s, 4);
        memcpy(d + n - 4, s + n - 4, 4);
    } else {
        for (size_t i = 0; i < n; i++)
            d[i] = s[i];
    }
}

#endif
