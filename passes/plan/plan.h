/* plan.h: the kernel plan, product of the back-end passes and the code generator's
 * only input: kernels (fusion groups), the strided view and DRAM place of every
 * value, the work division over the cores, LX tile programs and the DRAM plan. It
 * hangs on IrGraph.plan and lives in the graph's arena.
 *
 * Who fills what (passes/pipeline.c order):
 *   pass_fuse      plan_new; IrKernel identity (kind, members, out, ins, name),
 *                  PlanNode.kernel, virtual views (PlanNode.virt, PlanValue.virt),
 *                  row-major views, output-segment claims (PlanValue.claim)
 *   pass_layout    PlanValue.layout and the final PlanValue.view (plan_compute_views)
 *   pass_divide    IrKernel.grid (work items) and core_first (item ranges per core)
 *   pass_tile      IrKernel.grid refined to fit LX, inner loop grid, tile programs,
 *                  anchor LX buffers, accesses, lx_bytes, reads
 *   pass_dram_plan PlanValue.seg and dram_offset, segment sizes, constant list
 * plan_verify (plan_verify.c) checks, after each of them, what it has filled so far;
 * plan_print (plan_print.c) dumps it for --dump-after and the golden tests.
 *
 * Iteration spaces: every kernel computes over an iteration space of at most
 * IR_ITER_MAX dimensions. A work item is one chunk of IrKernel.grid (a box); DRAM
 * operands are reached through IrAccess (base + stride per iteration dimension, in
 * elements of the root value), so that broadcasting (stride 0), transposes, slices
 * (negative strides), pooling windows and im2col are all plain strided accesses.
 *
 * Kernel iteration spaces by kind:
 *   ELEM      grid = dims of IrKernel.ref (the output's, or with row-resident
 *             reductions (nred > 0) the shape they reduce, last nred dims whole)
 *   CONTRACT  matmul: grid = [C batch dims..., M, N], inner = [K];
 *             access space [grid..., K]
 *             conv (s spatial dims): grid = [N, G, Mg, O1..Os], inner = [Cg];
 *             access space [grid..., Cg, K1..Ks]; a fused PAD is in IrKernel.pro
 *   REDUCE    grid = kept dims (REDUCE/ARGREDUCE: input dims not reduced, in order;
 *             WINDOW: [leading dims, O1..Os]; CUMSUM: input dims but the axis),
 *             inner = reduced dims (WINDOW: the kernel taps; CUMSUM: [axis], one chunk);
 *             prologue space [grid..., inner...]; epilogue space = grid (CUMSUM: as
 *             the prologue)
 *   MOVE/COPY grid = output dims (a RESHAPE copy iterates the input dims; a SCATTER
 *             its updates' dims [N, R], all items on core 0)
 */
#ifndef SPYREC_PLAN_H
#define SPYREC_PLAN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ir.h"
#include "passes/devtype.h"
#include "target.h"

#define IR_ITER_MAX 12       /* iteration dims of one kernel */
#define IR_LX_ALIGN 128      /* LX buffers start on stick boundaries */
#define IR_DRAM_ALIGN 128    /* DRAM tensors start on stick (128-byte) boundaries: transfers
                                move whole aligned sticks (costmodel.h) */
#define IR_KBUF_MAX 6        /* anchor LX buffers per kernel */

/* Device layout of a value's own storage (chosen by pass_layout).
 * ROWMAJOR: dense row-major, no padding.
 * STICKED: row-major but the innermost dimension is padded to a whole number of
 *          128-byte sticks (pad elements are zero). */
typedef enum { IR_LAYOUT_ROWMAJOR = 0, IR_LAYOUT_STICKED = 1 } IrLayoutKind;

typedef enum {
    IR_KK_ELEM = 0,          /* pointwise nodes (and row-resident reductions), one output */
    IR_KK_CONTRACT = 1,      /* MATMUL or CONV + pointwise epilogue */
    IR_KK_REDUCE = 2,        /* REDUCE/ARGREDUCE/WINDOW/CUMSUM + prologue + epilogue */
    IR_KK_MOVE = 3,          /* materialised view, PAD, CONCAT, GATHER */
    IR_KK_COPY = 4,          /* copy of a value into a graph output's segment */
} IrKernelKind;

/* Element (i0, i1, ...) of a value lives at element off + sum(i_d * stride[d]) of the
 * storage of value root (root == the value itself when it owns its storage). Strides
 * are in elements, may be 0 (broadcast) or negative (reversed slice). */
typedef struct {
    ValId root;
    int64_t off;
    int64_t stride[IR_MAX_RANK];
} IrView;

/* A DRAM operand over a kernel iteration space: point (i0, ...) is element
 * base + sum(i_d * is[d]) of root's storage. */
typedef struct {
    ValId root;              /* IR_NONE: unused */
    int64_t base;
    int64_t is[IR_ITER_MAX];
} IrAccess;

/* Work grid: dim d of extent ext[d] is cut into chunks of chunk[d] (the last chunk
 * may be shorter); items are numbered row-major over the chunk indices. */
typedef struct {
    int rank;
    int64_t ext[IR_ITER_MAX];
    int64_t chunk[IR_ITER_MAX];
} IrGrid;

/* Shape class of a value in a tile program: which tile axes it varies along.
 * FULL = rows x cols (row stride = cols), ROW = one per row, COL = one per column. */
enum { IR_TC_SCALAR = 0, IR_TC_ROW = 1, IR_TC_COL = 2, IR_TC_FULL = 3 };

/* Where a tile-program value comes from. */
enum {
    IR_TV_LOAD = 0,          /* loaded from DRAM through acc */
    IR_TV_NODE = 1,          /* computed by a step (one VEC) */
    IR_TV_SEED = 2,          /* left in LX by the kernel's anchor (MATMUL C, VREDUCE) */
    IR_TV_CONST = 3,         /* scalar constant: immediate, or VFILLed once per program */
};

typedef struct {
    ValId v;
    uint8_t src;             /* IR_TV_* */
    uint8_t cls;             /* IR_TC_* */
    uint8_t dtype;           /* device dtype (ISA_DT_*) */
    uint8_t esize;
    bool needs_buf;          /* CONST: some use cannot take an immediate */
    uint32_t imm;            /* CONST: value bits in dtype (sign-extended) */
    uint32_t lx;             /* LX byte offset of its buffer, UINT32_MAX if none */
    uint32_t bytes;          /* buffer size */
    int32_t last;            /* last step reading it (nsteps: lives to the end) */
    IrAccess acc;            /* LOAD: where it comes from */
} IrTileVal;

/* A tile program: pointwise steps on one 2-d tile (rows x cols) of an iteration
 * space. Tile rows are the iteration dims order[0..nrow), columns order[nrow..nd);
 * LX data is row-major over that order. */
typedef struct {
    int nd;                  /* iteration dims */
    int nrow;
    int order[IR_ITER_MAX];  /* LX order of the iteration dims */
    int64_t cap[IR_ITER_MAX];/* largest tile extent per iteration dim */
    IrTileVal *vals;
    uint32_t nvals;
    uint32_t *index;         /* vals by value: open addressing, position + 1 (0: empty) */
    uint32_t index_mask;     /* slots - 1 (a power of two, at least twice nvals) */
    NodeId *steps;           /* pointwise nodes in order, one VEC each */
    uint32_t nsteps;
    int32_t result;          /* index in vals of the value the program produces */
    bool store;              /* store result through out at the end */
    IrAccess out;
    uint32_t lx_lo, lx_hi;   /* LX byte range of this program's buffers */
} IrTileProg;

typedef struct IrKernel {
    const char *name;        /* "k12_conv_add_relu" */
    IrKernelKind kind;
    NodeId anchor;           /* CONTRACT/REDUCE/MOVE main node, IR_NONE otherwise */
    NodeId root;             /* node producing out (kernels run in root order) */
    NodeId *pro;             /* REDUCE prologue (pointwise), topological; CONV: a fused
                                PAD; MATMUL: side sums of its operands (plan_sums.c) */
    uint32_t npro;
    NodeId *epi;             /* ELEM body / CONTRACT and REDUCE epilogue, topological */
    uint32_t nepi;
    ValId out;               /* the one value the kernel writes */
    ValId ref;               /* ELEM: value whose shape is the iteration space (out, or
                                the input of its row reductions) */
    int nred;                /* ELEM: trailing dims of ref reduced inside the kernel
                                (row-resident reductions; those dims are never split);
                                matmul CONTRACT: 1 when its epilogue reduces rows
                                (then the N dim is never split) */
    uint32_t out_index;      /* COPY: graph output index */
    ValId *ins;              /* values read from DRAM (or scalar consts), deduplicated */
    uint32_t nins;
    uint64_t flops;          /* useful operations (2*M*N*K for contractions) */
    uint64_t min_dram_bytes; /* external inputs + output, each once */

    /* work division (pass_divide, refined by pass_tile) */
    IrGrid grid;
    uint64_t nitems;
    uint32_t ncores;
    uint64_t *core_first;    /* ncores + 1 entries: core c runs the items at positions
                                [c], [c+1]) (plan_kernel_item: which item a position is) */
    bool dealt;              /* positions deal the items round-robin over the cores (core
                                c runs items c, c + ncores, ...) instead of in order: a
                                kernel of a bundle with symbolic dims, whose valid items
                                at a small size are the first ones (plan_assign_cores) */
    uint64_t *deal;          /* dealt: the item at each position, where plan_deal chose
                                the cores (NULL: round-robin) */
    uint32_t *item_core;     /* with deal: the core of each item */

    /* tiling (pass_tile) */
    IrGrid inner;            /* per-item loop: K chunks, reduced chunks */
    IrTileProg tp[2];        /* ELEM: tp[0]; CONTRACT: tp[1]; REDUCE: tp[0] pro, tp[1] epi */
    IrAccess acc[3];         /* matmul A,B; conv X,W; MOVE/COPY src (0) and dst (1) */
    uint32_t buf[IR_KBUF_MAX];       /* anchor buffers: CONTRACT A, B, C (conv: and the
                                        input patch; matmul with side sums: a row of
                                        ones, A's row sums, B's column sums; matmul of
                                        a half B: its tile before widening); REDUCE
                                        acc; MOVE tile, indices */
    uint32_t buf_bytes[IR_KBUF_MAX];
    uint32_t lx_bytes;       /* LX high-water mark of every core */
    ValId *reads;            /* root values read from DRAM, ascending */
    uint32_t nreads;
} IrKernel;

/* The plan of one value. */
typedef struct {
    IrView view;             /* where its elements are (fuse: row-major; layout: final) */
    IrLayoutKind layout;     /* of its own storage (pass_layout) */
    bool virt;               /* no storage of its own: a view of view.root */
    int32_t claim;           /* graph output whose segment is its storage, -1 */
    uint32_t seg;            /* DRAM segment (ISA_SEG_*) of its storage, UINT32_MAX none */
    int64_t dram_offset;     /* byte offset in seg (a view: its root's plus the view's
                                offset), -1 unset */
} PlanValue;

/* The plan of one node. */
typedef struct {
    uint32_t kernel;         /* kernel it belongs to, IR_NONE (dead or virt) */
    bool virt;               /* no kernel: a virtual view, or a CONCAT done in place by
                                its producers */
    bool inplace;            /* a virtual TRANSPOSE done in place: its output owns the
                                storage, its producer stores in the transposed order */
} PlanNode;

/* The kernel plan (IrGraph.plan; graph arena). Sized to the graph at plan_new. */
typedef struct Plan {
    uint32_t nvals, nnodes;
    PlanValue *val;          /* per value */
    PlanNode *node;          /* per node */
    IrKernel *kernels;       /* in execution order */
    uint32_t nkernels;
    uint64_t seg0_bytes;     /* constant segment */
    uint64_t arena_bytes;    /* activation arena */
    uint64_t live_bound;     /* liveness lower bound of the arena: the largest sum of the
                                (aligned) bytes of activations live in one kernel */
    ValId *consts;           /* constants stored in segment 0, by offset */
    uint32_t nconsts;
} Plan;

/* Iteration-space geometry of a kernel (derived from its anchor; see the top). */
typedef struct {
    int ngrid, ninner;
    int64_t gext[IR_ITER_MAX];   /* grid extents */
    int64_t iext[IR_ITER_MAX];   /* inner-loop extents */
    int kept[IR_ITER_MAX];       /* REDUCE: input dim of grid dim d (WINDOW outputs: -1) */
    int red[IR_ITER_MAX];        /* REDUCE: input dim of inner dim d */
    int nsp;                     /* CONV/WINDOW: spatial (window) dims */
    int64_t taps[IR_MAX_RANK];   /* CONV/WINDOW: kernel extents */
    int64_t wstride[IR_MAX_RANK], wdil[IR_MAX_RANK]; /* CONV/WINDOW strides, dilations */
    int64_t groups, mg, cg;      /* CONV: groups, output and input channels per group */
    /* CONV with 1 or 2 spatial dims and taps or padding: the input rows of a work item
     * are loaded once into an LX patch (padding filled in) and the MATMUL reads its B
     * as a window of it (isa.md ISA_F_BWIN: implicit GEMM, no im2col copy). Canonical 2-d form: dim 0 = the chunked output
     * rows (1-d: the only spatial dim), dim 1 = the whole row (1-d: extent 1). */
    bool patch;
    /* Depthwise form (patch form, one input and one output channel per group, float
     * operands): a work item takes a block of channels (grid dim G chunked), its patch
     * rows in stride phase planes (plan_dw_patch), one VEC FMA per kernel tap over all its
     * channels and rows (cg_contract.c). */
    bool dw;
    ValId x;                     /* CONV: the input read (a fused PAD's input) */
    int64_t in_ext[2], pad_lo[2], pad_hi[2], k2[2], s2[2], d2[2], out2[2];
    double pad_value;
} IrGeom;

/* ---- plan.c: the plan, grids, core assignment ---- */
/* A new empty plan sized to g, hung on g->plan (every view its own row-major
 * storage, nothing virtual, no kernel). Called by pass_fuse. */
Plan *plan_new(IrGraph *g);
void plan_add_vals(IrGraph *g, Plan *p);   /* extend p to values added since */
int64_t plan_numel(const IrType *t);
void plan_dense_strides(const IrType *t, int64_t *stride); /* row-major, elements */
/* Storage size of a root value in its layout (bytes, device dtype). */
uint64_t plan_storage_bytes(IrGraph *g, ValId v, const SpyTarget *t);
int64_t plan_grid_items(const IrGrid *gr);
/* Box of item `item`: start[d], len[d] per grid dim. */
void plan_grid_item(const IrGrid *gr, uint64_t item, int64_t *start, int64_t *len);
/* Last grid dim whose chunk is smaller than its extent (-1: one item covers all). */
int plan_grid_split(const IrGrid *gr);
/* core_first from grid item count: balanced ranges of positions, each core's items
 * contiguous, or dealt round-robin when the graph has symbolic dims (IrKernel.dealt). */
void plan_assign_cores(IrGraph *g, IrKernel *k, uint32_t cores);
/* Dealt kernel k (core_first sized, ncores and nitems set): choose each item's core
 * so that the items valid at smaller sizes spread over the cores (plan_deal.c); sets
 * deal, item_core and core_first. False (nothing changed) when it does not apply. */
bool plan_deal(IrGraph *g, IrKernel *k);
/* The item at position pos of kernel k's core ranges (core_first), and its box. */
uint64_t plan_kernel_item(const IrKernel *k, uint64_t pos, int64_t *start, int64_t *len);
/* The core that runs item `item` of kernel k. */
uint32_t plan_item_core(const IrKernel *k, uint64_t item);
/* Whether input slot `slot` of pointwise node n takes a scalar constant as the VEC
 * immediate (BINARY: operand 1, or operand 0 when operand 1 is not a scalar constant). */
bool plan_imm_slot(IrGraph *g, const IrNode *n, int slot);
const char *plan_kernel_kind_name(IrKernelKind k);
/* Slots of the index of a tile program of at most n values (a power of two). */
uint32_t plan_tp_index_slots(uint32_t n);
/* Enter tp->vals[i] into tp's index (its value must not be there yet). */
void plan_tp_index_add(IrTileProg *tp, uint32_t i);
/* Position of value v in tp->vals, -1 if absent. */
int plan_tp_find(const IrTileProg *tp, ValId v);

/* ---- plan_view.c: strided views ---- */
/* The views of every value (PlanValue.view, .virt): its own storage in its layout
 * (STICKED: padded rows, t->stick_bytes; t may be NULL while every layout is
 * ROWMAJOR); the output of every node marked PlanNode.virt composed onto its input's
 * view; the inputs of in-place CONCATs (marked too) the slices of its output. A marked
 * view node whose composition is not expressible as strides is unmarked (it needs a
 * kernel); returns false when that happened. */
bool plan_compute_views(IrGraph *g, const SpyTarget *t);
/* Edge conversions of fp16 mode (plan_view.c): whether node n is the CAST of a float32
 * graph input to DLFloat16 (a view candidate), and whether every load of graph input v
 * converts float32 to DLFloat16 (its one consumer is such a virtual CAST). */
bool plan_edge_cast(IrGraph *g, const IrNode *n);
bool plan_edge_f32(IrGraph *g, ValId v);
/* Compose a view node (RESHAPE/TRANSPOSE/SLICE/EXPAND/BITCAST, or a GATHER with
 * constant arithmetic indices) onto its input's view. False when not expressible as
 * strides (a reshape of a non-contiguous view, other gathers). */
bool plan_view_apply(IrGraph *g, const IrNode *n, const IrView *in, IrView *out);
bool plan_view_dense(IrGraph *g, ValId v, const IrView *vw); /* dense, full, offset 0 */
/* View v of a tensor of type `from` read as type `to` (same element count, row-major
 * order): out keeps v's root and offset. False when not expressible as strides. */
bool plan_view_reshape(const IrType *from, const IrView *v, const IrType *to, IrView *out);

/* GATHER n with constant indices first + k*step (in range): a strided view. */
bool plan_gather_view(IrGraph *g, const IrNode *n, int64_t *first, int64_t *step);

/* ---- plan_geom.c ---- */
/* Iteration-space geometry of kernel k (derived from its anchor; see the top). */
void plan_geom(IrGraph *g, const IrKernel *k, IrGeom *geo);
/* The PAD a 2-d MAX / MIN pooling kernel absorbed (fuse.c absorb_window_pad): the
 * kernel loads the PAD's input, at padded coordinates, into a patch whose border holds
 * the pad value (codegen/cg_reduce.c window_pad_item). NULL when it has none. */
const IrNode *plan_window_pad(IrGraph *g, const IrKernel *k);
/* Extents of the space kernel k's DRAM accesses (IrAccess) iterate: the grid, then
 * the inner loop, then a convolution's taps. Returns the number of dims. */
int plan_access_space(IrGraph *g, const IrKernel *k, int64_t *ext);
/* LX row pitch (elements of es bytes) of a convolution's weight tile with kk elements
 * a row: kk, or one 64-byte line more when the rows are a multiple of 4 KiB, so that
 * the rows a MATMUL reads together do not all fall in one cache set of the emulator's
 * host (measured: such a pitch costs its matrix kernel a quarter of its speed). */
int64_t plan_conv_lda(int64_t kk, unsigned es);
/* Depthwise form: the per-channel patch of an item of on output rows is s0 row phase
 * planes of ceil(rin / s0) rows (one more when s0 > 1: padded row h lies in plane
 * (h - ph) mod s0, row (h - ph) / s0 + 1, ph the phase of the first row the item
 * loads, so that its rows fill whole groups from the first) of *ww
 * elements (the padded width rounded up to a multiple of the column stride s1); the
 * taps accumulate output rows at *pitch = ww / s1 elements (so that a tap reads the
 * patch at column stride s1 over all rows). Returns the channel's elements. */
int64_t plan_dw_patch(const IrGeom *geo, int64_t on, int64_t *pitch, int64_t *ww);
/* Patch form (IrGeom.patch), an item of on output rows: the rows of its padded input
 * one vertical tap reads, (on - 1) * s0 + 1 (a band), and whether the patch holds one
 * such band per tap (banded: the dilation leaves rows between the bands that no tap
 * reads, so they are not loaded) rather than the rows from the first band's to the
 * last's. plan_patch_rows: the patch's rows either way; plan_patch_span: the rows
 * from the first band's to the last's (the depthwise form's patch, never banded). */
int64_t plan_patch_band(const IrGeom *geo, int64_t on);
int64_t plan_patch_span(const IrGeom *geo, int64_t on);
bool plan_patch_banded(const IrGeom *geo, int64_t on);
int64_t plan_patch_rows(const IrGeom *geo, int64_t on);
/* Whether kernel k (geometry geo) runs in the depthwise form: geo->dw and blocks of at
 * least two channels per work item (one channel keeps the window MATMUL). */
bool plan_dw_form(const IrKernel *k, const IrGeom *geo);
/* Element size (2) of the float16/bfloat16 B operand that MATMUL kernel k widens per
 * tile (passes/halfweight.c: B is loaded into buf[3] and a VEC CAST writes the float32
 * tile into buf[1]); 0 when B is read as it is. */
unsigned plan_half_b(IrGraph *g, const IrKernel *k);

/* ---- plan_sums.c: side sums of an int8 product inside its kernel ---- */
enum { PLAN_SUM_ROWS = 1, PLAN_SUM_COLS = 2 };
/* Whether MATMUL node p computes, for the MATMUL anchor's product of int8 operands, the
 * sums of A's rows (A x a column of ones: PLAN_SUM_ROWS) or of B's columns (a row of
 * ones x B: PLAN_SUM_COLS) over the depth, per output row / column of the anchor's
 * result (its shape with 1 along N / M); 0 otherwise. */
int plan_side_kind(IrGraph *g, NodeId anchor, NodeId p);
/* The value of the side sums of `kind` that matmul CONTRACT kernel k computes beside
 * its product (a prologue member), or IR_NONE. */
ValId plan_side_sum(IrGraph *g, const IrKernel *k, int kind);

/* ---- plan_verify.c ---- */
/* Check the invariants of the plan that the passes up to after_pass ("fuse",
 * "layout", "divide", "tile", "dram_plan"; another name: all of them) have filled;
 * true when the graph has no plan yet. Problems go to g->diag as internal errors. */
bool plan_verify(IrGraph *g, const SpyTarget *t, const char *after_pass);

/* ---- plan_print.c ---- */
/* Print the kernel plan (what each back-end pass decided so far) for --dump-after;
 * t gives the storage sizes of planned values (may be NULL: sizes left out). */
void plan_print(IrGraph *g, FILE *f, const SpyTarget *t);

#endif
