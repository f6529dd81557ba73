/* gen_sbin.h: the bundle assembler of the corpus generator (gen_sbin_lib.c). */
#ifndef GEN_SBIN_H
#define GEN_SBIN_H

#include "gen.h"
#include "isa.h"
#include "sbin.h"

#define BUN_MAX_CODE 128
typedef struct {
    SpyTarget target;
    Buf strings, consts, selftest;
    Buf debug;                 /* DEBUG section bytes (SpyDebugDesc entries) when debug_sec */
    bool debug_sec;
    Buf dimrefs;               /* DIMREFS section bytes (SpyDimRef entries) when dimrefs_sec */
    bool dimrefs_sec;
    Buf variants;              /* VARIANTS section bytes when variants_sec */
    bool variants_sec;
    uint32_t features;         /* the header's feature bits */
    SpyTensorDesc tensors[8];
    int ntensors;
    SpyKernelDesc kernels[4];
    int nkernels;
    SpyProgramDesc programs[128];
    int nprograms;
    SpyInsn code[BUN_MAX_CODE];
    int ncode;
    uint32_t sched[8];
    int nsched;
    SpySegmentDesc segs[16];
    int nsegs;
    const char *meta;
} Bun;

void bun_target(SpyTarget *t);
uint32_t bun_str(Bun *b, const char *s);
void bun_tensor(Bun *b, const char *name, int role, int host, int dev, const int64_t *dims,
                int rank);
void bun_kernel(Bun *b, const char *name, const SpyInsn *insns, int n);
SpyInsn bun_dma(int op, uint32_t seg, int64_t dram_off, uint32_t lx, uint32_t rows, uint32_t cols,
                int esize);
SpyInsn bun_vec(int fn, int dt, int nsrc, uint32_t dst, uint32_t s0, uint32_t s1, uint32_t rows,
                uint32_t cols);
void bun_base(Bun *b, const char *which);
void bun_reludyn_n(Bun *b, uint32_t n);
void bun_fix_crcs(Buf *f);
Buf bun_write(const Bun *b);
Buf bun_variants(const Buf *bundles, int n);
void bun_add_bucket(Bun *b, Bun *s);
SpySection *bun_section(Buf *f, uint32_t id);
void bun_free(Bun *b);

#endif
