/* arena_fit.h: offline placement of blocks with known lifetimes (passes/arena_fit.c).
 *
 * The DRAM planner knows every activation's size and the kernels it is live in before
 * it places any of them, so it places them offline: each block gets an offset such
 * that blocks whose lifetimes meet never share a byte, and the arena (the largest
 * end) is kept close to the liveness lower bound (the largest sum of the sizes of the
 * blocks live at one kernel).
 */
#ifndef SPYREC_ARENA_FIT_H
#define SPYREC_ARENA_FIT_H

#include <stddef.h>
#include <stdint.h>

/* One block: size in bytes (a multiple of the alignment, so that every offset is one
 * too), live at kernels first..last (inclusive); off is the result. */
typedef struct {
    uint64_t size;
    uint32_t first, last;
    uint64_t off;
} ArenaBlock;

/* Bytes of scratch pass_arena_fit needs for n blocks. */
size_t pass_arena_fit_work(uint32_t n);

/* Place the n blocks (sets every off) and return the arena's size (the largest end);
 * work: pass_arena_fit_work(n) bytes. Tries the kernel-order first fit and fits in
 * decreasing size (and size x lifetime) order, and keeps the smallest arena (the first
 * of equals, so a plan the kernel-order fit already packs best stays as it was). */
uint64_t pass_arena_fit(ArenaBlock *b, uint32_t n, void *work);

#endif
