/* ir_pages.c: the whole pages of bytes of a private read-only file mapping dropped from
 * the process's resident set (Linux MADV_DONTNEED): the bytes stay the same, a later
 * read maps them from the file again (from the page cache, or the disk).
 *
 * Why: the compiler maps a model's files rather than reading them, and every weight it
 * has read once (copied out of the model file, converted, merged, written into the
 * bundle) would otherwise stay resident until the end: llama_1b's compile held all 4.6
 * GiB of its weights at once. Used by the frontend (a weight copied out of the model
 * file, fe_bytes_release) and the IR (ir_const_drop_span).
 */
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ir.h"

size_t ir_pages_drop(const void *p, size_t n)
{
    long pg = sysconf(_SC_PAGESIZE);
    if (pg <= 0 || n == 0)
        return 0;
    uintptr_t lo = (uintptr_t)p, hi = lo + n, ps = (uintptr_t)pg;
    lo = (lo + ps - 1) / ps * ps;
    hi = hi / ps * ps;
    if (hi <= lo || madvise((void *)lo, hi - lo, MADV_DONTNEED) != 0)
        return 0;
    return hi - lo;
}
