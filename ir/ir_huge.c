/* ir_huge.c: large buffers in their own anonymous mapping, aligned to a 2 MiB page,
 * whose whole 2 MiB pages are marked for transparent huge pages (Linux MADV_HUGEPAGE;
 * a hint the kernel may refuse), the rest in small pages, so that a buffer holds at
 * most one small page more than it needs.
 *
 * Why: the compiler fills hundreds of MB to GB of fresh memory with constants (weights
 * copied out of a model file, converted to DLFloat16, folded). In 4 KiB pages each page
 * costs a fault and, on a virtual machine, often one of the host too: resnet50's
 * compile spent a third of its processor time on them, llama_1b's DLFloat16 conversion
 * a quarter (clear_page). In 2 MiB pages that is one fault per 512 pages.
 */
#include <stdint.h>
#include <sys/mman.h>

#include "ir.h"

#define HUGE_PAGE ((size_t)2 << 20)
#define SMALL_PAGE ((size_t)4096)

/* The bytes mapped for a buffer of n bytes: whole small pages. */
static size_t huge_len(size_t n)
{
    return (n + SMALL_PAGE - 1) / SMALL_PAGE * SMALL_PAGE;
}

void *ir_huge_alloc(size_t n)
{
    size_t len = huge_len(n);
    if (n == 0 || len < n || len + HUGE_PAGE < len)
        return NULL;
    uint8_t *m = mmap(NULL, len + HUGE_PAGE, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    uintptr_t a = ((uintptr_t)m + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    uint8_t *p = (uint8_t *)a;
    if (p > m)                             /* the unaligned head and the tail go back */
        munmap(m, (size_t)(p - m));
    if (m + len + HUGE_PAGE > p + len)
        munmap(p + len, (size_t)(m + len + HUGE_PAGE - (p + len)));
#ifdef MADV_HUGEPAGE
    if (n >= HUGE_PAGE)                    /* a hint: fine if refused */
        (void)madvise(p, n / HUGE_PAGE * HUGE_PAGE, MADV_HUGEPAGE);
#endif
    return p;
}

void ir_huge_free(void *p, size_t n)
{
    if (p)
        munmap(p, huge_len(n));
}
