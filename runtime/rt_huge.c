/* rt_huge.c: zeroed allocations of a session's large working buffers (the DRAM arena
 * of activations, each thread's scratchpad block, each thread's A cache) in
 * transparent huge pages where the system gives them (Linux, MADV_HUGEPAGE).
 *
 * Why: the emulator reads activations along strided rows (a 1 x 1 convolution's B and
 * its residual: rows of 3136 floats, 12 KiB apart), so a tile touches a page per row;
 * in 4 KiB pages a MATMUL of 64 rows of B and 128 of C missed the first-level TLB on
 * most of them. resnet50 at 2 threads, two sessions alternating runs in one process:
 * 2.3-2.7% faster with these buffers in 2 MiB pages (the weights' kept copies were
 * already, rt_apre.c).
 *
 * A buffer of at least a huge page is mapped anonymously (zeroed and committed page by
 * page as it is touched, as calloc's large blocks are), aligned to a huge page by
 * unmapping the slack around it (NULL when mmap fails); smaller ones, and every one
 * on systems without madvise's hint, come from calloc. rt_huge_free takes the same
 * size back.
 */
#include <stdint.h>
#include <stdlib.h>

#include "rt_exec.h"

#if defined(__linux__)
#include <sys/mman.h>
#define HUGE_BYTES ((size_t)2 << 20)     /* an x86-64 / arm64 transparent huge page */
#endif

/* n zeroed bytes (at least 1), in huge pages when n is at least one; NULL without
 * memory. Free with rt_huge_free(p, n). */
void *rt_huge_alloc(size_t n) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (n >= HUGE_BYTES && n <= SIZE_MAX - 2 * HUGE_BYTES) {
        size_t len = (n + HUGE_BYTES - 1) & ~(HUGE_BYTES - 1), map = len + HUGE_BYTES;
        uint8_t *p = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return NULL;
        uint8_t *a = (uint8_t *)(((uintptr_t)p + HUGE_BYTES - 1) & ~(HUGE_BYTES - 1));
        if (a > p)
            munmap(p, (size_t)(a - p));
        munmap(a + len, (size_t)(p + map - (a + len)));   /* at least a - p + len < map */
        (void)madvise(a, len, MADV_HUGEPAGE);     /* a hint: fine if refused */
        return a;
    }
#endif
    return calloc(n ? n : 1, 1);
}

/* Frees p (NULL is ignored) of rt_huge_alloc(n), n the same. */
void rt_huge_free(void *p, size_t n) {
    if (!p)
        return;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (n >= HUGE_BYTES && n <= SIZE_MAX - 2 * HUGE_BYTES) {
        munmap(p, (n + HUGE_BYTES - 1) & ~(HUGE_BYTES - 1));
        return;
    }
#endif
    free(p);
}
