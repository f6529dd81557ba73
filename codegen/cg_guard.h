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
    int64_t lx_g;                    /* bytes per LX granule (cg_guard.c lx_granule) */
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
    const SpyInsn *code;             /* the code (instruction indices of mask) */
    Dem **srcrows;                   /* [code's n] per row of a LOAD that sends its tile
                                        over the ring, the demand of what it writes
                                        (NULL: not known) */
    struct GdMask **mask;            /* [code's n] the known mask of a SELECT, or NULL
                                        (cg_guard_mask.c); NULL: none known */
    uint32_t mask_kmin;              /* the first kernel with one (UINT32_MAX: none) */
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

typedef struct GdMask {             /* what a SELECT's condition is known to be */
    int64_t lo, n;                   /* its LX bytes [lo, lo + n) */
    Dem *dem;                        /* [n] per byte: false when some size is at most t_s */
} GdMask;

extern const Dem gd_never, gd_always;  /* not needed at any size; needed at every size */

/* acc := the demand under which a value is not needed where either acc or x says it is
 * not (per symbol the greatest threshold; cg_guard.c). */
void gd_dem_or(Dem *acc, const Dem *x);
/* Applies v's operation to every byte of access x (cg_guard.c). */
void gd_visit(Visit *v, const Acc *x);
/* The accesses of in: reads into r (returns their count), writes into w (*nw). */
int gd_accesses(const SpyInsn *in, Acc *r, Acc *w, int *nw);
/* The row clamp of in over its skip guard *g (cg_guard_rows.c); *ra: its row accesses. */
bool gd_row_clamp(Gd *d, const SpyInsn *in, GdRowAcc *ra, SpyGuard *g);
/* A VEC of one row of floats (each result element depends on its column of the
 * operands only, and computing it from stale ones raises nothing): the demand of each
 * column of its result into d->rowdem, before they are freed. False when in is none or
 * writes an untracked byte. */
bool gd_cols_prep(Gd *d, const SpyInsn *in);
/* Its reads (after gd_cols_prep), column c needed where in runs (eff) and its result's
 * column c is needed: it runs whole, its unneeded columns maybe from stale operands. */
void gd_cols_reads(Gd *d, const SpyInsn *in, const Dem *eff);
/* The accesses of in's rows (at least 2): row r's are row 0's moved by r steps (the
 * instruction restricted to a row is linear in the row). */
void gd_row_acc(const SpyInsn *in, GdRowAcc *ra);
/* Per row of in (ROWS_MAX at most), the meet of the demand of the bytes it writes, into
 * rowdem; *ra its row accesses. False when in has no rows to clamp, its last row is
 * needed at every size (no clamp can leave out a row) or a row writes an untracked
 * byte. */
bool gd_row_demands(Gd *d, const SpyInsn *in, GdRowAcc *ra, Dem *rowdem);
/* The row clamp, over the skip guard *g, that fits the e rows' demands rowdem and
 * leaves out the most rows (the symbol's); false (g unchanged) when none does. */
bool gd_rows_fit(Gd *d, const Dem *rowdem, uint32_t e, SpyGuard *g);
/* The reads of in, row-clamped by g, made where each row runs (cg_guard_rows.c); read
 * sel (>= 0) of a SELECT with a known mask m by gd_mask_read. */
void gd_row_reads(Gd *d, const SpyInsn *in, const GdRowAcc *ra, const SpyGuard *g,
                  const struct GdMask *m, int sel);

/* Per instruction of e's code (programs progs; ns symbols followed): the GdMask of each
 * SELECT whose condition is known to be false at some sizes, else NULL; NULL when out
 * of memory or the graph has no dims input (cg_guard_mask.c). */
GdMask **gd_masks(CgEmit *e, const SpyProgramDesc *progs, int ns);
void gd_masks_free(GdMask **m, uint64_t n);
/* The index, among in's reads (gd_accesses), of the operand a SELECT picks where its
 * condition is true; -1 when in is no SELECT that reads one (cg_guard_mask.c). */
int gd_select_data(const SpyInsn *in);
/* That read of the SELECT in (mask m), rows [r0, r0 + nr), made needed under base
 * joined, per element, with the sizes at which its condition is false. */
void gd_mask_read(Gd *d, const SpyInsn *in, const GdMask *m, uint32_t r0, uint32_t nr,
                  const Dem *base);

#endif
