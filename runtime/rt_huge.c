/* rt_huge.c: zeroed, 64-byte aligned allocations of a session's large working buffers
 * (the DRAM arena of activations, each thread's scratchpad block, each thread's A
 * cache), in transparent huge pages where the system gives them (Linux,
 * MADV_HUGEPAGE) for the sessions of large models (rt_session.c RT_HUGE_MODEL: a huge
 * page is zeroed whole when first touched, 2 MiB where a small model touches a few
 * 4 KiB pages; each session of a fuzzed bundle took ten times longer to make).
 *
 * Why: the emulator reads activations along strided rows (a 1 x 1 convolution's B and
 * its residual: rows of 3136 floats, 12 KiB apart), so a tile touches a page per row;
 * in 4 KiB pages a MATMUL of 64 rows of B and 128 of C missed the first-level TLB on
 * most of them. resnet50 at 2 threads, two sessions alternating runs in one process:
 * 2.3-2.7% faster with these buffers in 2 MiB pages (the weights' kept copies were
 * already, rt_apre.c).
 *
 * A buffer of at least MAP_MIN bytes is mapped anonymously (zeroed and committed page
 * by page as it is touched, as calloc's large blocks are); in huge pages it is aligned
 * to one by unmapping the slack around it. Smaller ones, and every one on systems
 * without mmap, are allocated 64-byte aligned and cleared. rt_huge_free takes the
 * same size and choice back.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rt_exec.h"

#if defined(__linux__)
#include <sys/mman.h>
#define HUGE_MAP 1
#define HUGE_BYTES ((size_t)2 << 20)     /* an x86-64 / arm64 transparent huge page */
#define MAP_MIN ((size_t)64 << 10)       /* bytes from which a buffer is mapped */
#else
#define HUGE_MAP 0
#endif

#if HUGE_MAP
/* Whether a buffer of n bytes is mapped. */
static bool mapped(size_t n) {
    return n >= MAP_MIN && n <= SIZE_MAX - 2 * HUGE_BYTES;
}

/* n bytes mapped, aligned to a huge page and advised into huge pages when huge. */
static void *map_bytes(size_t n, bool huge) {
    if (!huge) {
        void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        return p == MAP_FAILED ? NULL : p;
    }
    size_t len = (n + HUGE_BYTES - 1) & ~(HUGE_BYTES - 1), map = len + HUGE_BYTES;
    uint8_t *p = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    uint8_t *a = (uint8_t *)(((uintptr_t)p + HUGE_BYTES - 1) & ~(HUGE_BYTES - 1));
    if (a > p)
        munmap(p, (size_t)(a - p));
    munmap(a + len, (size_t)(p + map - (a + len)));   /* a - p + len < map */
#ifdef MADV_HUGEPAGE
    (void)madvise(a, len, MADV_HUGEPAGE);     /* a hint: fine if refused */
#endif
    return a;
}
#endif

/* n zeroed bytes (at least 1), 64-byte aligned, in huge pages when huge and the
 * system gives them; NULL without memory. Free with rt_huge_free(p, n, huge). */
void *rt_huge_alloc(size_t n, bool huge) {
#if HUGE_MAP
    if (mapped(n))
        return map_bytes(n, huge);
#endif
    size_t r = n < SIZE_MAX - 63 ? (n + 63) & ~(size_t)63 : 0;
    void *p = r ? aligned_alloc(64, r) : n ? NULL : aligned_alloc(64, 64);
    if (p)
        memset(p, 0, r ? r : 64);
    return p;
}

/* Frees p (NULL is ignored) of rt_huge_alloc(n, huge), n and huge the same. */
void rt_huge_free(void *p, size_t n, bool huge) {
    if (!p)
        return;
#if HUGE_MAP
    if (mapped(n)) {
        munmap(p, huge ? (n + HUGE_BYTES - 1) & ~(HUGE_BYTES - 1) : n);
        return;
    }
#endif
    free(p);
}
