/* cg_guard.h: the types of the guard pass shared by its two files (cg_guard.c, the proof;
 * cg_guard_rows.c, the row clamps); not used outside them. */
#ifndef CG_GUARD_H
#define CG_GUARD_H

#include "cg_internal.h"

#define GD_NS ISA_GUARD_MAX          /* symbols tracked (the first of the bundle's) */
#define NEVER INT32_MAX              /* threshold: not needed at any size */
#define ACC_MAX 4                    /* accesses of one instruction, one way */

typedef struct {                     /* when a value is not needed (cg_guard.c) */
    int32_t t[GD_NS];
} Dem;

typedef struct {                     /* one access: LX (seg -1) or a DRAM segment */
    int64_t seg;
    CgSpan sp;
} Acc;

typedef struct {
    int ns;                          /* symbols tracked */
    int64_t min[GD_NS], max[GD_NS];  /* their bounds */
    Dem *lx;                         /* [lx granules] demand in the current program */
    uint32_t *lx_gen, gen;           /* a granule of an older gen holds NEVER */
    uint64_t lx_n;
    uint32_t nseg;
    Dem **dr;                        /* [nseg] per tracked segment (arena, outputs) */
    uint32_t **dr_stamp;             /* [nseg] kernel + 1 that last wrote a granule */
    uint32_t **dr_first;             /* [nseg] first kernel that writes a granule */
    uint64_t *dr_n;                  /* [nseg] granules */
    int64_t *dr_g;                   /* [nseg] bytes per granule */
    Dem *rowdem;                     /* [row_cap] per row of one instruction (row_clamp) */
    int32_t *rowt;                   /* [row_cap] one symbol's thresholds of those rows */
    uint32_t row_cap;
    uint64_t work;                   /* granules visited so far (GD_WORK_MAX) */
} Gd;

typedef enum { OP_MEET, OP_GEN, OP_KILL, OP_STAMP, OP_CLASH, OP_FIRST, OP_COVER } GdOp;

typedef struct {
    Gd *d;
    GdOp op;
    Dem *dem;                        /* OP_MEET: accumulates; OP_GEN: the reader's */
    uint32_t kernel;                 /* OP_STAMP, OP_CLASH */
    bool hit;                        /* OP_MEET: an untracked byte; OP_CLASH: a clash */
    int64_t lo, hi;                  /* OP_COVER: a value's bytes in the arena */
    uint64_t *cover;                 /* OP_COVER: per granule of them, the bytes written */
} Visit;

typedef struct {                     /* an instruction's accesses as functions of a row */
    Acc r[ACC_MAX], w[ACC_MAX];      /* those of row 0 (reads, writes) */
    int64_t dr[ACC_MAX], dw[ACC_MAX];  /* bytes each moves per row (0: does not move) */
    int nr, nw;
} GdRowAcc;

extern const Dem gd_never, gd_always;  /* not needed at any size; needed at every size */

/* Applies v's operation to every byte of access x (cg_guard.c). */
void gd_visit(Visit *v, const Acc *x);
/* The accesses of in: reads into r (returns their count), writes into w (*nw). */
int gd_accesses(const SpyInsn *in, Acc *r, Acc *w, int *nw);
/* The row clamp of in over its skip guard *g (cg_guard_rows.c); *ra: its row accesses. */
bool gd_row_clamp(Gd *d, const SpyInsn *in, GdRowAcc *ra, SpyGuard *g);
/* The reads of in, row-clamped by g, made where each row runs (cg_guard_rows.c). */
void gd_row_reads(Gd *d, const SpyInsn *in, const GdRowAcc *ra, const SpyGuard *g);

#endif
