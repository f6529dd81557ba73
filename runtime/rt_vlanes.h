/* rt_vlanes.h: F32 lane vectors of the tap kernels (rt_kern_vec.c depthwise taps,
 * rt_kern_vpool.c pooling taps) and their loads at column stride 1 or 2; the lanes of
 * 8 BOOL bytes (the SELECTs of rt_kern_vfast.c and rt_fuse.c). Macros: a function
 * taking or returning a vector would change the ABI between the clones of an RT_HOT
 * function.
 */
#ifndef SPYRT_RT_VLANES_H
#define SPYRT_RT_VLANES_H

#include <stdint.h>
#include <string.h>

typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));
typedef float v16f __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));
typedef int64_t v4l __attribute__((vector_size(32)));

#if defined(__clang__)
#define RT_HALVES8(w) __builtin_shufflevector(w, w, 0, 0, 0, 0, 1, 1, 1, 1)
#define RT_EVEN8(a, b) __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14)
#define RT_EVEN16(a, b)                                                                    \
    __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30)
#else
#define RT_HALVES8(w) __builtin_shuffle(w, (v8i){0, 0, 0, 0, 1, 1, 1, 1})
#define RT_EVEN8(a, b) __builtin_shuffle(a, b, (v8i){0, 2, 4, 6, 8, 10, 12, 14})
#define RT_EVEN16(a, b)                                                                    \
    __builtin_shuffle(a, b, (v16i){0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30})
#endif

/* x := the lanes of vector type V from byte address p at column stride cs (1 or 2:
 * stride 2 reads one element past the last lane, which RT_LX_SLACK keeps inside the
 * scratchpad and which is dropped). */
#define RT_LOADW(x, p, cs, V, EVEN)                                                        \
    do {                                                                                   \
        if ((cs) == 1) {                                                                   \
            memcpy(&(x), (p), sizeof(V));                                                  \
        } else {                                                                           \
            V a_, b_;                                                                      \
            memcpy(&a_, (p), sizeof a_);                                                   \
            memcpy(&b_, (p) + sizeof(V), sizeof b_);                                       \
            (x) = EVEN(a_, b_);                                                            \
        }                                                                                  \
    } while (0)
#define RT_LOAD8(x, p, cs) RT_LOADW(x, p, cs, v8f, RT_EVEN8)
#define RT_LOAD16(x, p, cs) RT_LOADW(x, p, cs, v16f, RT_EVEN16)

/* z := the 8 BOOL bytes at p as v8i lanes, all ones where the byte is 0 (a SELECT's
 * condition: any other byte is true). The bytes broadcast, lane t given the 32-bit
 * half holding byte t (x86 is little-endian), masked to that byte and compared: GCC
 * 12 took a __builtin_convertvector of 8 bytes apart lane by lane. */
#define RT_COND0(z, p)                                                                     \
    do {                                                                                   \
        int64_t u_;                                                                        \
        memcpy(&u_, (p), 8);                                                               \
        v4l b_ = {u_, u_, u_, u_};                                                         \
        v8i h_ = RT_HALVES8((v8i)b_);                                                      \
        (z) = (h_ & (v8i){0xff, 0xff00, 0xff0000, -0x1000000, 0xff, 0xff00, 0xff0000,      \
                          -0x1000000}) == 0;                                               \
    } while (0)

#endif
