/* cg.h: lowering of scheduled kernels to accelerator instructions, and the bundle
 * writer. Codegen runs after the pipeline (passes/pass.h) and never runs anything.
 */
#ifndef SPYREC_CG_H
#define SPYREC_CG_H

#include <stdint.h>
#include <stdio.h>

#include "ir.h"
#include "target.h"

typedef struct {
    const SpyTarget *target;
    const char *meta;              /* compiler version and flags, stored in SEC_META */
    bool debug;                    /* write the DEBUG section (spyrec without --strip) */
    const char *const *model_names;/* debug: the value names the model itself has, sorted
                                      by strcmp (cg_debug.c keeps kernel outputs of these) */
    uint32_t nmodel_names;
    /* size buckets (spyrec --dim-buckets, sbin.md "Size buckets"); all zero otherwise.
     * A bucket's bundle (const_tail set): an empty CONSTS section, and *const_tail /
     * *const_tail_len (malloc'd) receive the bytes [const_base, end) of the shared pool
     * that its constants added. The bound bundle: const_extra (const_extra_len bytes)
     * is what the buckets added at const_extra_off, and variants (variants_len bytes)
     * its VARIANTS section. */
    bool shared_consts;            /* constants placed in a shared pool (an identical one
                                      may sit at an offset written already) */
    uint64_t const_base;
    uint8_t **const_tail;
    size_t *const_tail_len;
    const uint8_t *const_extra;
    uint64_t const_extra_off;
    size_t const_extra_len;
    const uint8_t *variants;
    size_t variants_len;
} CgOptions;

/* Lower every kernel and serialize the bundle into a malloc'd buffer.
 * Returns false (with errors in g->diag) on failure. Deterministic: the same graph
 * and options give the same bytes. */
bool cg_emit_bundle(IrGraph *g, const CgOptions *opt, uint8_t **out, size_t *outlen);
/* The same bytes written to fd, an empty regular file open for writing (the header
 * is written last, at offset 0). The constants are converted into their device
 * layout piece by piece as they are written, so the bundle is never held in memory.
 * direct: the caller will not read the file back soon, so it is written with direct
 * I/O where the file system allows it (cg_out.c), bypassing the page cache.
 * *outlen gets the bundle's size. Returns false with errors in g->diag, or with
 * *err = the errno of a failed write (0 otherwise). */
bool cg_emit_bundle_fd(IrGraph *g, const CgOptions *opt, int fd, bool direct, size_t *outlen,
                       int *err);

/* Human-readable disassembly of a bundle in memory (for --emit=asm and golden tests). */
bool cg_disassemble(const uint8_t *bundle, size_t len, FILE *f);

#endif
