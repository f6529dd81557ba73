/* ir.h: every core type of the spyrec IR.
 *
 * A Graph owns one arena; values and nodes refer to each other by 32-bit index.
 * Nodes are kept in topological order in g->nodes. A pass that rewrites the graph
 * calls ir_rewrite_begin(), walks the old node list it gets back and re-emits
 * (or replaces) each node with the builder functions, which append to g->nodes.
 *
 * Errors in the user's input go to the graph's Diag (ir_error*), which prints
 * "file: node 'name' (OpType): message". Broken invariants are IR_ASSERT (file:line).
 * Allocation failure longjmps to g->oom (set by the compile driver), so builder
 * functions never return NULL.
 */
#ifndef SPYREC_IR_H
#define SPYREC_IR_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IR_MAX_RANK 8
/* Largest constant (bytes, all results of one node) that constant folding creates:
 * g->fold_budget of every new graph. Bigger results stay computations for the device. */
#define IR_FOLD_BUDGET_DEFAULT ((size_t)256 << 20)
/* A TRANSPOSE of a constant whose result is larger than this is not folded: the back
 * end reads the constant in place through a strided view, so the bytes are stored
 * once (a tied embedding and its transposed LM head) and the compile copies nothing.
 * pass_fold still folds one whose constant has no other reader (ir_fold_transpose_dense):
 * the copy replaces it, stored once in the layout its reader wants. */
#define IR_FOLD_TRANSPOSE_MAX ((size_t)1 << 20)
/* While g->keep_half_weights is set, a CAST that widens a float16/bfloat16 constant to
 * float32 with a result larger than this is not folded: a matrix product may read the
 * half constant itself and widen it per tile in the scratchpad (passes/halfweight.c,
 * which folds the CASTs it cannot use that way), so the weight is stored once, at its
 * own size, instead of twice as large. */
#define IR_FOLD_HALF_WIDEN_MIN ((size_t)64 << 10)
#define IR_NONE UINT32_MAX

typedef uint32_t ValId;
typedef uint32_t NodeId;

/* Internal invariant check: names file and line, then aborts. */
#define IR_ASSERT(c) ((c) ? (void)0 : ir_die(__FILE__, __LINE__, #c))
_Noreturn void ir_die(const char *file, int line, const char *what);

/* ---- dtypes: numeric codes equal ONNX TensorProto.DataType ---- */
typedef enum {
    IR_DT_UNDEF = 0,
    IR_DT_F32 = 1,
    IR_DT_U8 = 2,
    IR_DT_I8 = 3,
    IR_DT_U16 = 4,
    IR_DT_I16 = 5,
    IR_DT_I32 = 6,
    IR_DT_I64 = 7,
    IR_DT_STRING = 8,
    IR_DT_BOOL = 9,
    IR_DT_F16 = 10,
    IR_DT_F64 = 11,
    IR_DT_U32 = 12,
    IR_DT_U64 = 13,
    IR_DT_BF16 = 16,
    /* narrow types, one element per byte in the IR (ONNX files pack the 4- and 2-bit
     * ones; conversions in schemas/dtconv.h) */
    IR_DT_F8E4M3FN = 17,
    IR_DT_F8E4M3FNUZ = 18,
    IR_DT_F8E5M2 = 19,
    IR_DT_F8E5M2FNUZ = 20,
    IR_DT_U4 = 21,
    IR_DT_I4 = 22,
    IR_DT_F4E2M1 = 23,
    IR_DT_F8E8M0 = 24,
    IR_DT_U2 = 25,
    IR_DT_I2 = 26,
    /* the card's 16-bit float, DLFloat16 (schemas/dtconv.h): no ONNX code; the fp16
     * precision mode (passes/fp16.c) gives it to float values that live on the card */
    IR_DT_DLF16 = 64,
} IrDType;

size_t ir_dtype_size(IrDType t);          /* bytes per element; 0 if unknown/string */
const char *ir_dtype_name(IrDType t);     /* "f32", "i64", ... */
IrDType ir_dtype_from_name(const char *s);/* inverse of ir_dtype_name; UNDEF if none */
bool ir_dtype_is_float(IrDType t);
bool ir_dtype_is_int(IrDType t);          /* signed or unsigned integer (not bool) */

typedef struct {
    IrDType dtype;
    int rank;                              /* 0 = scalar */
    int64_t dims[IR_MAX_RANK];
} IrType;

int64_t ir_type_numel(const IrType *t);   /* product of dims; -1 on overflow */
size_t ir_type_bytes(const IrType *t);     /* numel * dtype size; SIZE_MAX on overflow */
bool ir_type_eq(const IrType *a, const IrType *b);

/* ---- ops ---- */
typedef enum {
#define X(e, name, mi, ma, no, cls, flags, fn, vec, infer, eval, verify, ident, label, work) e,
#include "ops.def"
#undef X
    IR_OP_COUNT
} IrOp;

typedef enum { IR_CLS_ELEM, IR_CLS_REDUCE, IR_CLS_CONTRACT, IR_CLS_MOVE, IR_CLS_FOREIGN } IrOpClass;

typedef enum {
#define IR_UNFN(e, name) e,
#include "ops.def"
#undef IR_UNFN
    IR_UN_COUNT
} IrUnFn;

typedef enum {
#define IR_BINFN(e, name) e,
#include "ops.def"
#undef IR_BINFN
    IR_BIN_COUNT
} IrBinFn;

typedef enum {
#define IR_REDFN(e, name) e,
#include "ops.def"
#undef IR_REDFN
    IR_RED_COUNT
} IrRedFn;

/* Properties of an op (the flags column of ops.def, or-ed). */
typedef enum {
    IR_OPF_VIEW = 1,                       /* pure relabelling of the input's storage */
    IR_OPF_POINTWISE = 2,                  /* output element i from element i of inputs */
    IR_OPF_TO_DTYPE = 4,                   /* int attribute "to" is a dtype */
    IR_OPF_OPT_IN = 8                      /* inputs may be IR_NONE (omitted optionals) */
} IrOpFlag;

/* Which function table the int attribute "fn" of an op indexes. */
typedef enum { IR_FNK_NONE, IR_FNK_UN, IR_FNK_BIN, IR_FNK_RED } IrFnKind;

/* How the code generator lowers an op as one step of a pointwise (VEC) program. */
typedef enum { IR_VEC_NONE, IR_VEC_UNFN, IR_VEC_BINFN, IR_VEC_SELECT, IR_VEC_CAST } IrVecKind;

struct IrGraph;
struct IrNode;
struct IrInferCtx;                         /* ir_shape.c */
struct IrEval;                             /* ir_priv.h */

/* One row of ops.def: the op's name, arity, properties and hooks. */
typedef struct {
    const char *name;
    int min_in, max_in, nout;
    IrOpClass cls;
    unsigned flags;                        /* IrOpFlag bits */
    IrFnKind fn;
    IrVecKind vec;
    bool (*infer)(struct IrInferCtx *c);   /* output types from inputs and attributes */
    bool (*eval)(const struct IrEval *e);  /* reference evaluation on host buffers */
    bool (*verify)(struct IrGraph *g, const struct IrNode *n, char *err, size_t errlen);
    ValId (*ident)(struct IrGraph *g, const struct IrNode *n);  /* passed-through input */
    const char *label;                     /* kernel-name pattern (%s: the fn's name) */
    uint64_t (*work)(struct IrGraph *g, const struct IrNode *n); /* useful operations */
} IrOpInfo;

extern const IrOpInfo ir_op_info[IR_OP_COUNT];
const char *ir_unfn_name(int fn);
const char *ir_binfn_name(int fn);
const char *ir_redfn_name(int fn);
const char *ir_op_fn_name(IrOp op, int fn); /* by the op's fn table; NULL: none */
int ir_unfn_from_name(const char *s);      /* -1 if unknown */
int ir_binfn_from_name(const char *s);
int ir_redfn_from_name(const char *s);
IrOp ir_op_from_name(const char *s);       /* IR_OP_COUNT if unknown */
/* Node n's part of a kernel name: its op's label with the name of its fn (ir_work.c). */
const char *ir_op_label(const struct IrNode *n, char *buf, size_t len);

/* ---- attributes (generic name/value list on every node) ---- */
typedef enum {
    IR_ATTR_INT, IR_ATTR_FLOAT, IR_ATTR_STRING, IR_ATTR_INTS, IR_ATTR_FLOATS,
    IR_ATTR_STRINGS, IR_ATTR_TENSOR, IR_ATTR_GRAPH
} IrAttrKind;

struct IrGraph;

typedef struct {
    const char *name;
    IrAttrKind kind;
    int64_t i;                             /* INT */
    double f;                              /* FLOAT */
    const char *s;                         /* STRING */
    const int64_t *ints;                   /* INTS (n entries) */
    const double *floats;                  /* FLOATS */
    const char *const *strings;            /* STRINGS */
    uint32_t n;
    ValId tensor;                          /* TENSOR: a constant value of the graph */
    struct IrGraph *graph;                 /* GRAPH: subgraph (foreign If/Loop/Scan); once
                                              attached to a node, freed with the graph */
} IrAttr;

/* ---- values ---- */
typedef enum { IR_VAL_ACT, IR_VAL_INPUT, IR_VAL_CONST } IrValKind;

/* Where an element of a constant comes from when it is computed from an extent that the
 * frontend folded at the bounds of bounded symbolic dimensions (Shape, Size): pass_symdim
 * turns such an element into the actual extent, or refuses the node that reads it, when
 * the extent is along a symbolic axis (ir_ext.c). */
#define IR_EXT_ALL (-2)                    /* axis: the product of every extent (Size) */
#define IR_EXT_BOUND (-3)                  /* axis: computed for the bounds of every extent
                                              but the first two, position by position (an
                                              average pool's divisors that exclude its
                                              padding): no prefix of those of a smaller size */
#define IR_EXT_STEPS 6                     /* steps of an extent's formula, at most */
enum { IR_EXT_ADD, IR_EXT_MUL, IR_EXT_DIV }; /* a formula's steps: + c, * c, / c (floor) */
typedef struct {
    ValId src;                             /* the value whose extent it is; IR_NONE: none */
    int16_t axis;                          /* that value's axis, or IR_EXT_ALL */
    bool exact;                            /* the element is the extent (a cast at most),
                                              not computed from it */
    int8_t nstep;                          /* the element is the extent through steps
                                              step[0..nstep) (integer arithmetic by
                                              constants: (h + 7) / 8, an exporter's size of
                                              a feature map); -1: computed otherwise */
    uint8_t step[IR_EXT_STEPS];            /* IR_EXT_ADD, _MUL, _DIV */
    int32_t arg[IR_EXT_STEPS];             /* its constant (MUL, DIV: >= 1) */
} IrExtElem;
typedef struct IrExt {
    uint64_t n;                            /* elements described (1 with uniform) */
    bool uniform;                          /* e[0] describes every element */
    IrExtElem e[];
} IrExt;

typedef struct {
    IrType type;
    IrValKind kind;
    const char *name;                      /* never NULL; unique in the graph */
    NodeId def;                            /* producing node, IR_NONE for inputs/consts */
    uint32_t def_slot;                     /* output index in the producing node */
    const void *data;                      /* CONST: host row-major data, ir_type_bytes() */
    const IrExt *ext;                      /* CONST: extents it was computed from, or NULL */
} IrValue;

/* Where a node came from, for diagnostics: "file: node 'name' (op_type)". */
typedef struct {
    const char *name;                      /* frontend node name (may be "") */
    const char *op_type;                   /* frontend op type, e.g. "Conv" */
    const char *stack;                     /* optional: torch stack trace */
} IrOrigin;

/* Foreign (frontend) op, awaiting decomposition. */
typedef struct {
    const char *op_type;                   /* "Conv", "aten.conv2d.default", ... */
    const char *domain;                    /* "" for ai.onnx */
    int64_t opset;                         /* version of that domain imported by the model */
} IrForeign;

typedef struct IrNode {
    IrOp op;
    uint16_t nin, nout;
    uint16_t nattrs;
    bool dead;                             /* removed; dropped by ir_compact */
    ValId *in;                             /* IR_NONE for an omitted optional input */
    ValId *out;
    IrAttr *attrs;
    IrOrigin origin;
    IrForeign foreign;                     /* FOREIGN only */
} IrNode;

/* ---- diagnostics ---- */
typedef struct IrDiag {
    const char *file;                      /* the model file being compiled */
    int nerrors;
    int nwarnings;
    char **msgs;                           /* heap strings, "file: ..." */
    int nmsgs, capmsgs;
    int max_errors;                        /* stop collecting after this many (default 50) */
} IrDiag;

void ir_diag_init(IrDiag *d, const char *file);
void ir_diag_free(IrDiag *d);
/* Record an error about the whole file ("file: message"). */
void ir_diag_error(IrDiag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ir_diag_warn(IrDiag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Write every collected message, one per line, to f (stderr in the tools). */
#include <stdio.h>
void ir_diag_print(const IrDiag *d, FILE *f);

struct Plan;                               /* the kernel plan (passes/plan/plan.h) */

/* ---- graph ---- */
typedef struct IrArenaBlock IrArenaBlock;

/* A list of blocks freed in one call (ir_arena.c). */
typedef struct {
    IrArenaBlock *head;
    size_t bytes;                          /* bytes of its blocks */
} IrArena;

typedef struct IrGraph {
    IrArena arena;                         /* lives as long as the graph */
    IrArena scratch;                       /* temporaries of the running pass (ir_scratch) */
    size_t arena_bytes;                    /* total bytes held by both arenas */
    size_t arena_limit;                    /* 0 = unlimited; exceeding it is an OOM */
    jmp_buf *oom;                          /* longjmp target on allocation failure */

    IrValue *vals;
    uint32_t nvals, capvals;
    IrNode *nodes;                         /* topological order */
    uint32_t nnodes, capnodes;
    ValId *inputs;                         /* graph inputs in order */
    uint32_t ninputs, capinputs;
    ValId *outputs;                        /* graph outputs in order */
    uint32_t noutputs, capoutputs;

    IrDiag *diag;                          /* where user-facing errors go */
    const char *model_path;
    int64_t onnx_opset;                    /* default-domain opset (0 if none) */

    struct Plan *plan;                     /* the back end's product (pass_fuse on) */
    uint32_t name_counter;                 /* for fresh value names */
    bool fold_consts;                      /* ir_add_node folds all-constant core ops */
    bool half_native;                      /* float16 arithmetic stays float16 (fp16 mode:
                                              passes/halfwiden.c leaves it to fp16.c) */
    bool keep_half_weights;                /* large widening CASTs of half constants stay
                                              nodes (IR_FOLD_HALF_WIDEN_MIN) */
    size_t fold_budget;                    /* max bytes the results of one fold may have
                                              (IR_FOLD_BUDGET_DEFAULT) */
    struct IrGraphPriv *priv;              /* ir.c private: name set, owned subgraphs */
    struct IrDynDim *dyn;                  /* data-dependent extents (ir_dyn.c) */
    uint32_t ndyn, capdyn;
    uint32_t nhidden;                      /* the last nhidden outputs are internal (the
                                              counts of dynamic outputs, ir_dyn_add) */
    struct IrSymDim *symdims;              /* bounded symbolic input dims (ir_dyn.c) */
    uint32_t nsymdims;
    ValId sym_input;                       /* with symdims: the hidden input holding the
                                              actual size of every symbol (int32) */
} IrGraph;

IrGraph *ir_graph_new(IrDiag *diag);       /* NULL only if malloc fails */
void ir_graph_free(IrGraph *g);
void *ir_alloc(IrGraph *g, size_t n);      /* zeroed, 16-aligned, lives with g */
/* Temporary memory of the running pass: zeroed, 16-aligned, freed by ir_scratch_reset,
 * which the pipeline driver calls after every pass. Never keep a pointer to it in the
 * graph or the kernel plan. */
void *ir_scratch(IrGraph *g, size_t n);
void ir_scratch_reset(IrGraph *g);
/* dst[i] := spy_f32_to_dlf16_sat(src[i]) (dtconv.h), i < n, bit for bit, for buffers
 * that do not overlap: a loop the compiler vectorises (ir_dtype.c; converting a
 * llama_1b's 1.2 G weights element by element through a branch on the source dtype
 * took 7 s). */
void ir_f32_to_dlf16_sat_n(uint16_t *restrict dst, const float *restrict src, size_t n);
/* n zeroed bytes in their own mapping, aligned to 2 MiB, its whole 2 MiB pages in
 * transparent huge pages where the kernel gives them (ir_huge.c), or NULL; released by
 * ir_huge_free with the same n (the signature ir_graph_keep takes). */
void *ir_huge_alloc(size_t n);
void ir_huge_free(void *p, size_t n);
/* Drops the whole pages inside bytes [p, p + n) of a private read-only file mapping
 * from the resident set (ir_pages.c); returns the bytes dropped. Only for such a
 * mapping: anonymous memory would read back as zeros. */
size_t ir_pages_drop(const void *p, size_t n);
void *ir_arena_alloc(IrGraph *g, IrArena *a, size_t n);
void ir_arena_release(IrGraph *g, IrArena *a);
bool ir_arena_free(IrGraph *g, IrArena *a, const void *p, size_t n);
/* Out of memory: longjmp to g->oom (set by the compile driver; the arena, freed with
 * g, holds everything the graph allocated), or print a message and abort if unset. */
_Noreturn void ir_oom(IrGraph *g);
const char *ir_strdup(IrGraph *g, const char *s);
const char *ir_fresh_name(IrGraph *g, const char *prefix); /* unique "prefix_N" */
/* Rename value v. If name is taken by another value, a unique "name_N" is used
 * instead; returns the name given. Never assign IrValue.name directly. */
const char *ir_set_name(IrGraph *g, ValId v, const char *name);
/* Find a value by name; IR_NONE if none. */
ValId ir_find_value(IrGraph *g, const char *name);

/* Values */
ValId ir_add_input(IrGraph *g, const char *name, const IrType *t);
/* Constant: data (ir_type_bytes(t) bytes) is copied into the arena. */
ValId ir_add_const(IrGraph *g, const char *name, const IrType *t, const void *data);
/* Constant whose data (16-aligned) is not copied: it must stay unchanged as long as g
 * lives, e.g. inside a mapped file that g keeps (ir_graph_keep). */
ValId ir_add_const_ref(IrGraph *g, const char *name, const IrType *t, const void *data);
/* Hand g a block (a mapped file) to release with release(p, n) when g is freed. On
 * out of memory it is released at once before ir_oom. */
void ir_graph_keep(IrGraph *g, void *p, size_t n, void (*release)(void *p, size_t n));
/* ir_graph_keep for a private read-only mapping of a file, whose pages the process may
 * drop and read again from the file (ir_const_drop_pages). */
void ir_graph_keep_file(IrGraph *g, void *p, size_t n, void (*release)(void *p, size_t n));
/* Drops from the process's memory the whole pages of constant v's data when it lies in
 * a mapped file that g keeps (ir_graph_keep_file): the data stays the same, a later
 * read maps it from the file again; only the resident size changes. For the code that
 * has read a large weight for the last time it expects (pass_fp16 once it has made the
 * DLFloat16 copy, the code generator once it has written it), so that a model's
 * weights are not all resident at once. Returns the bytes dropped (0: none, such as a
 * constant in the arena or in memory that is not a file's). */
size_t ir_const_drop_pages(IrGraph *g, ValId v);
/* The same for bytes [off, off + len) of v's data alone (the whole pages inside): a
 * large weight dropped piece by piece as it is written. */
size_t ir_const_drop_span(IrGraph *g, ValId v, size_t off, size_t len);
/* Give back the memory of constant v, which nothing reads any more (the caller knows:
 * no node, attribute or graph output, and no subgraph, see ir_has_subgraphs; no other
 * value shares its data either, as none does in ir_add_const's arena), when the
 * arena holds its data in a block of its own (a large constant that a pass made; a
 * reference into a mapped file stays as it is): v becomes an empty constant (its dims
 * all 0), so that a later read fails shape inference rather than finding no data.
 * Returns the bytes freed (0: none). For a pass that replaces large constants
 * (pass_fp8), so that the old and the new copies are not held together. */
size_t ir_const_free(IrGraph *g, ValId v);
/* Whether a node of g has a subgraph (whose nodes may read an outer value by name). */
bool ir_has_subgraphs(const IrGraph *g);
ValId ir_const_scalar_f32(IrGraph *g, float v);
ValId ir_const_i64s(IrGraph *g, const int64_t *v, int n); /* 1-D i64 constant */
void ir_add_output(IrGraph *g, ValId v);
static inline IrValue *ir_val(IrGraph *g, ValId v) { IR_ASSERT(v < g->nvals); return &g->vals[v]; }
static inline const IrType *ir_vtype(IrGraph *g, ValId v) { return &ir_val(g, v)->type; }
static inline bool ir_is_const(IrGraph *g, ValId v) { return v != IR_NONE && ir_val(g, v)->kind == IR_VAL_CONST; }

/* Nodes. ir_add_node appends a node, creates its outputs and runs shape inference
 * (core ops). When g->fold_consts is set, the node is then folded if it can be
 * (ir_fold_node: its outputs become constants and the returned node is marked dead).
 * On inference failure an error naming the node's origin is recorded in g->diag and
 * the outputs get dtype UNDEF; callers check ir_failed(). */
NodeId ir_add_node(IrGraph *g, IrOp op, const ValId *in, int nin, const IrAttr *attrs,
                   int nattrs, const IrOrigin *origin);
/* Foreign node with explicit output count and (possibly unknown) output types. */
NodeId ir_add_foreign(IrGraph *g, const IrForeign *f, const ValId *in, int nin, int nout,
                      const IrAttr *attrs, int nattrs, const IrOrigin *origin);
static inline IrNode *ir_node(IrGraph *g, NodeId n) { IR_ASSERT(n < g->nnodes); return &g->nodes[n]; }
static inline bool ir_failed(const IrGraph *g) { return g->diag && g->diag->nerrors > 0; }

/* Convenience builders (origin is copied to the new node). Return the output value. */
ValId ir_unary(IrGraph *g, int fn, ValId a, const IrOrigin *o);
ValId ir_binary(IrGraph *g, int fn, ValId a, ValId b, const IrOrigin *o);
ValId ir_select(IrGraph *g, ValId c, ValId a, ValId b, const IrOrigin *o);
ValId ir_cast(IrGraph *g, ValId a, IrDType to, const IrOrigin *o);
ValId ir_reshape(IrGraph *g, ValId a, const int64_t *shape, int rank, const IrOrigin *o);
ValId ir_transpose(IrGraph *g, ValId a, const int64_t *perm, const IrOrigin *o);
ValId ir_reduce(IrGraph *g, int fn, ValId a, const int64_t *axes, int naxes, bool keepdims,
                const IrOrigin *o);
ValId ir_matmul(IrGraph *g, ValId a, ValId b, const IrOrigin *o);
ValId ir_expand(IrGraph *g, ValId a, const int64_t *shape, int rank, const IrOrigin *o);

/* Attributes */
IrAttr ir_attr_int(const char *name, int64_t v);
IrAttr ir_attr_float(const char *name, double v);
IrAttr ir_attr_str(IrGraph *g, const char *name, const char *s);
IrAttr ir_attr_ints(IrGraph *g, const char *name, const int64_t *v, int n); /* copies */
/* Ints attribute that refers to v without copying it: only for attributes handed
 * straight to ir_add_node / ir_add_foreign, which copy them (v must live until then). */
IrAttr ir_attr_ints_ref(const char *name, const int64_t *v, int n);
IrAttr ir_attr_floats(IrGraph *g, const char *name, const double *v, int n);
const IrAttr *ir_attr_find(const IrNode *n, const char *name);
int64_t ir_attr_get_int(const IrNode *n, const char *name, int64_t dflt);
double ir_attr_get_float(const IrNode *n, const char *name, double dflt);
/* Ints attribute: returns count (or -1 if absent) and sets *out. */
int ir_attr_get_ints(const IrNode *n, const char *name, const int64_t **out);

/* Rewriting. ir_rewrite_begin detaches the node list and returns it (count in *n);
 * the caller re-adds nodes with ir_add_node/ir_readd_node. Values keep their ids. */
IrNode *ir_rewrite_begin(IrGraph *g, uint32_t *n);
NodeId ir_readd_node(IrGraph *g, const IrNode *old); /* keeps old outputs, sets def */
/* Replace uses in nodes (also in the list detached by ir_rewrite_begin) and graph
 * outputs; a replaced graph output hands its name to `to` when `to` is internal. */
void ir_replace_uses(IrGraph *g, ValId from, ValId to);
/* For each graph output i in order: its value v, as the earlier replacements left it,
 * is replaced by map(ctx, v) when that differs, exactly as ir_replace_uses(g, v,
 * map(ctx, v)) would; the nodes are rewritten once at the end, not once per output.
 * Its tables live in the scratch arena. */
void ir_replace_outputs(IrGraph *g, ValId (*map)(void *ctx, ValId v), void *ctx);
void ir_compact(IrGraph *g);               /* drop dead nodes, renumber defs */
/* Uses of every value (graph outputs count 1), in the scratch arena: valid until the
 * running pass ends. */
uint32_t *ir_use_counts(IrGraph *g);

/* Shape inference for a core-op node whose inputs are typed (ir_shape.c). Returns false
 * and reports through g->diag on error. */
bool ir_infer(IrGraph *g, NodeId n);

/* Report an error about a node: "file: node 'name' (OpType): message". */
void ir_error(IrGraph *g, const IrOrigin *o, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Verifier: structural invariants (types, topological order, arity, attrs).
 * Returns true if fine; otherwise reports "internal" errors to g->diag. */
bool ir_verify(IrGraph *g, const char *after_pass);

/* Text form (ir_print.c / ir_parse.c). The parser is for golden tests. */
#include <stdio.h>
void ir_print(IrGraph *g, FILE *f);
IrGraph *ir_parse(const char *text, IrDiag *diag);

/* ---- data-dependent extents (ir_dyn.c) ----
 * A value whose extent along one axis depends on the data (NonZero, Compress, Unique,
 * NonMaxSuppression) has its upper bound in its type; only the box [0, count) along
 * that axis is meaningful (the rest is 0 or unspecified). count is an int32 scalar
 * computed on the device; it is kept alive as a hidden graph output (after every
 * visible output: g->nhidden), which is where the runtime reads it. ir_replace_uses
 * keeps the entries current; pass_dynamic propagates them to the graph outputs.
 * A value whose whole shape is computed at run time (a Reshape, Squeeze or Unsqueeze
 * with a runtime shape or axes input, a reduction over runtime axes) is recorded with
 * axis IR_DYN_SHAPE: its type has the actual rank and a capacity of numel elements
 * ([numel, 1, ...]); its data is the row-major prefix of the actual shape, which
 * count (an i32 vector of rank elements, computed on the device) holds. */
#define IR_DYN_SHAPE (-2)
typedef struct IrDynDim {
    ValId value;                           /* the tensor, at its upper-bound shape */
    int axis;                              /* its data-dependent axis, or IR_DYN_SHAPE */
    ValId count;                           /* i32 scalar: the actual extent (IR_DYN_SHAPE:
                                              i32[rank], the actual dims) */
} IrDynDim;

/* Record that v's extent along axis is count (an i32 scalar), which becomes a hidden
 * graph output unless it already is one. */
void ir_dyn_add(IrGraph *g, ValId v, int axis, ValId count);
/* Record that v's actual shape is the i32 vector dims (axis IR_DYN_SHAPE), which becomes
 * a hidden graph output unless it already is one. */
void ir_dyn_add_shape(IrGraph *g, ValId v, ValId dims);
/* A graph input that value v (a runtime shape or count) is computed from, to name in
 * messages; v itself when there is none. */
ValId ir_dyn_source_input(IrGraph *g, ValId v);
/* The entry of value v, or NULL when v's shape is static. */
const IrDynDim *ir_dyn_find(const IrGraph *g, ValId v);

/* A bounded symbolic dimension of a graph input (spyrec --dim, --input-shape MIN..MAX,
 * or a dim_value -1 given a bound): the input's type holds the upper bound max; at run
 * time the axis has any size in [min, max]. Entries with the same sym are one symbol
 * (an ONNX dim_param shared by several inputs: their sizes must agree). */
typedef struct IrSymDim {
    ValId input;
    int axis;
    int sym;                               /* symbol number, 0 .. ir_sym_count - 1 */
    int64_t min, max;
    const char *name;                      /* the dim_param, or "INPUT[axis]" */
    bool output;                           /* instead: axis `axis` of graph output
                                              number `input` has the symbol's actual
                                              extent (symdim.c; an index, since later
                                              passes may replace the output's value) */
    int64_t step;                          /* > 1: only sizes max - j * step are taken
                                              (the model joins sizes derived from the
                                              symbol that agree only there: symdim.c);
                                              0 or 1: any size in [min, max] */
} IrSymDim;
/* Record axis of input v as symbolic with bounds [min, max], symbol name nm (a dim_param
 * shared by inputs is one symbol). */
void ir_sym_add(IrGraph *g, ValId v, int axis, int64_t min, int64_t max, const char *nm);
int ir_sym_count(const IrGraph *g);
/* Append v as a hidden graph output (no-op if it already is one). */
void ir_add_hidden_output(IrGraph *g, ValId v);
/* Whether graph output i is a hidden (internal) one. */
bool ir_output_hidden(const IrGraph *g, uint32_t i);

/* Reference evaluation of one core-op node on constant inputs (ir_eval.c), used by
 * constant folding and unit tests. Returns false if the op/dtype is not evaluable
 * (the node is then left for the device). out[i] receives arena data. */
bool ir_eval_node(IrGraph *g, const IrNode *n, const void **in, void **out);
/* Evaluation of a whole core-op graph on host buffers (ir_run.c, for calibration):
 * inputs[i] is the data of graph input i; visit is called once per graph output i
 * with its data (valid only during the call). False, with a message in err, when a
 * node cannot be evaluated or memory runs out. */
typedef void (*IrRunVisit)(void *ctx, uint32_t out_index, const void *data, const IrType *t);
bool ir_run_graph(IrGraph *g, const void *const *inputs, IrRunVisit visit, void *ctx,
                  char *err, size_t errlen);
/* Constant folding of one node (ir_fold.c): when n is a core op whose inputs are all
 * constants, whose results fit g->fold_budget (and IR_FOLD_TRANSPOSE_MAX for a
 * TRANSPOSE) and which ir_eval_node evaluates, its
 * outputs become constants, n is marked dead and true is returned. n may be a node of
 * g->nodes or of the list detached by ir_rewrite_begin. */
bool ir_fold_node(IrGraph *g, IrNode *n);
/* ir_ext.c: constant c (rank 1, n elements) holds the extents of x's axes first..first+n-1
 * (Shape of x folded at the bounds); with all, c (one element) holds their product (Size). */
void ir_ext_set(IrGraph *g, ValId c, ValId x, int first, bool all);
/* Tags every element of constant c as computed from x's extents along axis (or
 * IR_EXT_ALL, IR_EXT_BOUND), not exactly one of them (no formula). */
void ir_ext_set_uniform(IrGraph *g, ValId c, ValId x, int axis);
/* The provenance of element i of a constant's extent tags x. */
IrExtElem ir_ext_at(const IrExt *x, uint64_t i);
/* The value of tag e's formula at extent v (e.nstep >= 0), or -1 where a step leaves the
 * non-negative integers below 2^31. */
int64_t ir_ext_eval(const IrExtElem *e, int64_t v);
/* SYMLIKE n's "formula" (pairs of IR_EXT_ADD / _MUL / _DIV and their constant) as the
 * steps of *f; false (f->nstep -1) when it has none or a malformed one. */
bool ir_symlike_formula(const IrNode *n, IrExtElem *f);
/* The extent tags of folded node n's outputs, from those of its constant inputs. */
void ir_ext_fold(IrGraph *g, const IrNode *n);
/* ir_fold_node without the IR_FOLD_TRANSPOSE_MAX limit: for a TRANSPOSE whose input
 * constant has no other reader, so the dense transposed copy replaces it (stored once,
 * in the layout its MATMUL reads; a tied weight with several readers stays a view). */
bool ir_fold_transpose_dense(IrGraph *g, IrNode *n);
/* Whether n is a CAST that ir_fold_node leaves while g->keep_half_weights is set: it
 * widens a float16/bfloat16 constant to float32, the result larger than
 * IR_FOLD_HALF_WIDEN_MIN. */
bool ir_fold_keeps_half(IrGraph *g, const IrNode *n);
/* ir_fold_node that also folds such a CAST (the caller found no reader that widens
 * the half constant itself). */
bool ir_fold_half_widen(IrGraph *g, IrNode *n);

#endif
