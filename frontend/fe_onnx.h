/* fe_onnx.h: state shared by the ONNX importer's files (fe_onnx*.c) only.
 *
 * Import walks the protobuf model once, in ONNX's topological node order. Each graph
 * body (the main graph, an If/Loop/Scan body, an inlined function) is converted in a
 * scope (FeScope) that maps ONNX value names to IR values:
 *
 *   main graph scope ──parent── subgraph scope      (captures outer values as inputs)
 *        │
 *        └── function frame (same IrGraph, closed: sees only its formal inputs)
 *
 * A subgraph becomes its own IrGraph: its formal ONNX inputs come first (untyped,
 * dtype UNDEF, when the body does not give a fully static type), then one extra input
 * per outer-scope value it uses ("capture"), named exactly like that value in the
 * enclosing graph. The node that holds the subgraph lists every value its subgraphs
 * capture (each once) after its own ONNX inputs, so the outer dataflow stays explicit.
 */
#ifndef SPYREC_FE_ONNX_H
#define SPYREC_FE_ONNX_H

#include <setjmp.h>

#include "fe_internal.h"

/* Per model function, worked out on first use: FunctionProto.attribute_proto (default
 * attribute values) and the ai.onnx version its body uses. */
typedef struct {
    bool done;                      /* looked up already */
    int64_t opset;                  /* its own ai.onnx import, 0 if none */
    uint64_t cost;                  /* size of one inlined copy (nodes, edges, attributes) */
    bool owned;                     /* unpacked by us from unknown fields: free them */
    Onnx__AttributeProto **a;
    uint32_t n;
} FeFnDefaults;

/* ---- fe_onnx_strip.c: initializer payloads kept out of protobuf-c ---- */
/* The raw_data of initializer `index` of the main graph: bytes [off, off + len) of the
 * model file. */
typedef struct {
    uint32_t index;
    size_t off, len;
} FeRawSpan;
typedef struct {
    FeRawSpan *spans;               /* malloc'd */
    uint32_t n, cap;
} FeStrip;
/* A malloc'd copy (*out, *outlen) of the checked ModelProto b without the large
 * raw_data payloads of the main graph's initializers, which st records. false (no
 * copy) when the file does not lend itself to it or memory is short. */
bool fe_onnx_strip(const uint8_t *b, size_t len, uint8_t **out, size_t *outlen, FeStrip *st);
/* Point the recorded initializers of m (unpacked from the copy) at their bytes in
 * file; fe_onnx_strip_detach undoes it before m is freed. */
void fe_onnx_strip_attach(const FeStrip *st, Onnx__ModelProto *m, const uint8_t *file);
void fe_onnx_strip_detach(const FeStrip *st, Onnx__ModelProto *m);
void fe_onnx_strip_free(FeStrip *st);

/* One import of one model file. */
typedef struct {
    const char *path;               /* the model file, as given */
    char *dir;                      /* its folder: external data is resolved there */
    IrDiag *diag;
    int max_nesting;                /* subgraph / function-call depth limit */
    size_t arena_limit;             /* FeOptions.arena_limit, for every graph */
    const FeInputSpec *specs;       /* FeOptions.specs: main-graph input specialisations */
    bool lenient;                   /* FeOptions.lenient_types */
    int nspecs;
    const FeDimBound *dim_bounds;   /* FeOptions.dim_bounds */
    int ndim_bounds;
    const FeDimBound *sym_caps;     /* FeOptions.sym_caps */
    int nsym_caps;
    jmp_buf oom;                    /* IR allocation failure lands here */
    Onnx__ModelProto *model;
    FeStrip strip;                  /* initializers whose raw_data points into the file */
    FeData data;                    /* the mapped model and external data files */
    int64_t default_opset;          /* ai.onnx version imported by the model, 0 if none */
    bool warned_no_opset;           /* "no opset for ai.onnx" reported once */
    IrGraph **pending;              /* subgraphs not yet owned by a node (freed on error) */
    uint32_t npending, cappending;
    int call_depth;                 /* nested function inlining */
    uint64_t inlined;               /* size of what inlining created so far */
    FeTensor tmp;                   /* tensor being decoded (freed if an allocation fails) */
    FeMap fnmap;                    /* "domain\x01name" -> index in model->functions */
    FeFnDefaults *fdefaults;        /* per function (malloc'd) */
} FeOnnx;

/* A function call being inlined: its resolved attributes and output binding. */
typedef struct {
    const Onnx__FunctionProto *fn;
    const char **attr_names;        /* call-site attributes after ref resolution */
    const Onnx__AttributeProto **attrs;
    uint32_t nattrs;
    Onnx__AttributeProto **defaults; /* FunctionProto.attribute_proto (may be empty) */
    uint32_t ndefaults;
    const char *prefix;             /* "<call node>/" for internal value names */
    const char **outname;           /* per formal output: caller's name, or NULL */
    ValId *bound;                   /* per formal output: value named after it */
    FeMap outidx;                   /* formal output name -> index (many outputs only) */
} FeCall;

typedef struct FeScope {
    FeOnnx *cx;
    IrGraph *g;
    FeMap vals;                     /* ONNX name -> ValId visible in this scope */
    FeMap *reserved;                /* ONNX names of g's own body: fresh names avoid them */
    uint32_t *fresh;                /* counter for fresh names in g (shared by its frames) */
    FeMap *later;                   /* names this frame's nodes produce (messages) */
    FeMap vinfo;                    /* value_info/output name -> index in vi */
    Onnx__ValueInfoProto **vi;
    struct FeScope *parent;         /* enclosing graph scope for captures, or NULL */
    const FeCall *call;             /* innermost function call (ref_attr_name), or NULL */
    FeCall *frame;                  /* set in the function frame itself (output binding) */
    int64_t opset;                  /* ai.onnx version in effect (a function's own import,
                                     * else the model's); 0 if none */
    int depth;                      /* subgraph nesting depth (main graph 0) */
    ValId *sink;                    /* values captured by the current node's subgraphs */
    uint32_t nsink, capsink;
} FeScope;

/* fe_onnx.c */
/* "" for the default domain ("" or "ai.onnx"), the domain otherwise. */
const char *fe_onnx_domain(const char *d);
/* Version of domain in a list of opset imports; 0 if absent. */
int64_t fe_onnx_find_opset(Onnx__OperatorSetIdProto *const *ops, size_t n, const char *domain);
/* Index of the model-local function op_type in domain, or -1. */
int fe_onnx_function(const FeOnnx *cx, const char *domain, const char *op_type);
void fe_onnx_keep_pending(FeOnnx *cx, IrGraph *g);
void fe_onnx_drop_pending(FeOnnx *cx, IrGraph *g);
/* A protobuf-c allocator (malloc/free) that sets *oom when an allocation fails, so
 * that a failed unpack can be told apart from a malformed message. */
ProtobufCAllocator fe_onnx_pb_allocator(bool *oom);

/* fe_onnx_graph.c */
void fe_scope_init(FeScope *s, FeOnnx *cx, IrGraph *g, FeScope *parent, int depth);
/* Convert a graph body (initializers, inputs, nodes, outputs) into s->g. strict: the
 * main graph (inputs need full static types). Errors are reported; check ir_failed. */
void fe_graph_body(FeScope *s, const Onnx__GraphProto *gp, bool strict);
/* A GRAPH attribute: a new IrGraph built with outer as the enclosing scope. */
IrGraph *fe_subgraph(FeScope *outer, const Onnx__GraphProto *gp, const IrOrigin *o);
/* Value named name in s (capturing from enclosing graphs); false if none (not reported). */
bool fe_lookup(FeScope *s, const char *name, ValId *v);
/* Sort the values captured by the current node's subgraphs (s->sink), dropping repeats. */
void fe_sink_unique(FeScope *s);
/* Look up a node input; reports "input 'x' ..." errors and returns false. */
bool fe_node_input(FeScope *s, const char *name, const IrOrigin *o, ValId *v);
/* Report a duplicate definition of name in s; true if name is new. */
bool fe_check_new(FeScope *s, const char *name, const IrOrigin *o);
/* A unique IR name based on base that no ONNX name of s->g's body uses. */
const char *fe_fresh(FeScope *s, const char *base);
/* Bind ONNX name (may be "") to v, naming it in the IR (and typing it from value_info). */
void fe_define(FeScope *s, const char *name, ValId v);
/* The same for a value coming out of an inlined call: inside a function frame it keeps
 * the name it already has. */
void fe_define_call_output(FeScope *s, const char *name, ValId v);
/* Convert one node (foreign op, Constant, or function call). */
void fe_node(FeScope *s, const Onnx__NodeProto *n, size_t index);
/* Add a foreign node and bind its outputs (names from outnames, "" = omitted). */
NodeId fe_emit_foreign(FeScope *s, const char *op_type, const char *domain, int64_t opset,
                       const ValId *in, int nin, const char *const *outnames, int nout,
                       const IrAttr *attrs, int nattrs, const IrOrigin *o);

/* fe_onnx_seqin.c */
/* Whether vi is typed as a sequence of tensors, an optional tensor or an optional
 * sequence of tensors. */
bool fe_seq_input_type(const Onnx__ValueInfoProto *vi);
/* Main-graph input vi of such a type, fixed by sp->seq: one tensor input per element
 * ("NAME[i]") and a node rebuilding NAME from them. Reports and returns false when sp
 * is NULL or gives no structure, or the structure does not fit the declared type. */
bool fe_seq_input(FeScope *s, const Onnx__ValueInfoProto *vi, const FeInputSpec *sp);

/* fe_onnx_attr.c */
/* Node attributes (refs resolved) as IrAttr in s->g's arena; false on error. */
bool fe_attrs(FeScope *s, const Onnx__NodeProto *n, const IrOrigin *o, IrAttr **out,
              int *nout);
/* Resolve ref_attr_name against the enclosing call: parallel arrays, count returned,
 * -1 on error (reported). */
int fe_resolve_attrs(FeScope *s, const Onnx__NodeProto *n, const IrOrigin *o,
                     const char ***names, const Onnx__AttributeProto ***protos);
/* A Constant node: its output becomes a constant value. */
void fe_constant(FeScope *s, const Onnx__NodeProto *n, const IrOrigin *o);

/* fe_onnx_func.c */
/* Inline a call of model function number fn at node n. */
void fe_inline_call(FeScope *s, const Onnx__NodeProto *n, int fn, const IrOrigin *o);
/* Free the default-attribute lists unpacked for functions. */
void fe_free_fn_defaults(FeOnnx *cx);

/* fe_onnx_deps.c */
/* Append the external-data files of every tensor of m (resolved against dir) to out;
 * false when out of memory. */
bool fe_onnx_collect_files(const Onnx__ModelProto *m, const char *dir, FeFileList *out);

#endif
