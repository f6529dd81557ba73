/* fe_pt2_priv.h: shared by the files of the torch.export (.pt2) frontend only.
 *
 * A .pt2 archive is a zip file laid out as
 *
 *   ROOT/archive_format                      "pt2"
 *   ROOT/byteorder                           "little"
 *   ROOT/models/NAME.json                    the serialized ExportedProgram
 *   ROOT/data/weights/model_weights_config.json     FQN -> {path_name, use_pickle, tensor_meta}
 *   ROOT/data/weights/weight_N               raw little-endian tensor storage
 *   ROOT/data/constants/model_constants_config.json same for tensor constants
 *   ROOT/data/constants/tensor_N
 *   ROOT/data/sample_inputs/NAME.pt          a pickle: never read
 *
 * fe_pt2_zip.c validates the container (entry names, sizes, methods, CRCs),
 * fe_pt2_json.c parses JSON with depth and size limits and reads tagged values,
 * fe_pt2_weights.c loads parameters/buffers/constants as IR constants,
 * fe_pt2_graph.c converts the graph (signature, nodes, higher-order ops),
 * fe_pt2_args.c converts one node's arguments (fe_pt2_graph.h),
 * fe_pt2.c ties them together (fe_load_pt2).
 *
 * User inputs keep the program's placeholder names (the forward arguments, or
 * "a_0"... for *args); outputs keep their tensor names, as the dynamo ONNX exporter
 * names them by default. Parameters, buffers and constants are named by their fully
 * qualified names ("layer1.0.conv1.weight"). Buffer/input mutations in the output
 * signature are dropped with a warning (inference needs only the user outputs).
 *
 * Conventions of the produced IR (what passes/decompose/aten/ relies on):
 *   every ATen call is an IR_OP_FOREIGN node with foreign.domain "aten" (the namespace
 *   of the target) and foreign.op_type "aten.NAME.OVERLOAD"; its inputs are the tensor
 *   arguments in schema order (a tensor list contributes one input per element, an
 *   absent optional tensor in a list is IR_NONE); the STRINGS attribute "_in_names"
 *   gives, per input, the schema name of the argument it came from; when an input was
 *   recorded as a strided view (strides or storage offset of something other than a
 *   dense tensor) the INTS attribute "_in_strided" flags it (1 per such input). Every other
 *   argument is an attribute named after its schema argument: int/bool/SymInt -> INT,
 *   int[]/bool[] -> INTS, float -> FLOAT (also "inf"/"nan"), float[] -> FLOATS,
 *   str -> STRING, ScalarType -> INT holding the IrDType, layout/memory format -> INT,
 *   device -> STRING ("cpu", "cuda:0"); a None argument is no attribute at all.
 *   Output values carry the dtype and shape recorded in the archive.
 */
#ifndef SPYREC_FE_PT2_PRIV_H
#define SPYREC_FE_PT2_PRIV_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "frontend/fe.h"
#include "ir.h"

#define FE_PT2_IN_NAMES "_in_names"      /* attribute: schema name of each input */
#define FE_PT2_IN_STRIDED "_in_strided"  /* attribute (only when one is): per input, 1 if
                                            torch recorded it as a strided view (not
                                            the dense prefix of its storage) */
#define FE_PT2_MAX_ENTRIES 100000        /* zip entries */
#define FE_PT2_MAX_JSON_BYTES (256u << 20) /* one JSON document */
#define FE_PT2_MAX_HOP_DEPTH 16          /* nested higher-order-op subgraphs */

/* ---- fe_pt2_zip.c: the validated container ---- */
typedef struct {
    char *name;                            /* raw entry name (malloc'd) */
    uint64_t index;                        /* libzip index */
    uint64_t size;                         /* uncompressed size */
} FePt2Entry;

typedef struct {
    struct zip *za;                        /* libzip handle */
    const char *path;                      /* archive path, for messages */
    IrDiag *diag;
    FePt2Entry *ent;                       /* sorted by name */
    size_t n;
} FePt2Zip;

/* Open and validate every entry of the archive; false (with errors in diag) if the
 * container is unusable. max_total bounds the sum of uncompressed sizes. */
bool fe_pt2_zip_open(FePt2Zip *z, const char *path, IrDiag *diag, uint64_t max_total);
void fe_pt2_zip_close(FePt2Zip *z);
/* Position of entry name in z->ent, or -1. */
long fe_pt2_zip_find(const FePt2Zip *z, const char *name);
/* Read entry i (position in z->ent) whole; malloc'd buffer (NUL-terminated, len
 * excludes the NUL), or NULL after reporting an error. */
uint8_t *fe_pt2_zip_read(FePt2Zip *z, long i, size_t *len);
/* Check one entry name: relative, no "..", no empty or "." components, printable.
 * Returns NULL if fine, else a static description of the problem. */
const char *fe_pt2_name_problem(const char *name);

/* ---- fe_pt2_json.c: parsing and tagged values ---- */
/* Parse a JSON document (entry names the zip entry for messages). Rejects nesting
 * deeper than max_depth, duplicate keys and documents over FE_PT2_MAX_JSON_BYTES. */
json_t *fe_pt2_json_parse(IrDiag *diag, const char *entry, const uint8_t *buf, size_t len,
                          int max_depth);
/* Object member of a given JSON type, or NULL. */
json_t *fe_pt2_obj(json_t *o, const char *key);
json_t *fe_pt2_arr(json_t *o, const char *key);
const char *fe_pt2_str(json_t *o, const char *key);
/* The single key of a tagged union object ({"as_int": 3} -> "as_int"), value in *val. */
const char *fe_pt2_tag(json_t *u, json_t **val);
/* A float as torch serializes it: a number or "Infinity"/"-Infinity"/"NaN". */
bool fe_pt2_float(json_t *v, double *out);
/* ---- fe_pt2_sym.c: symbolic sizes (dynamic_shapes), evaluated at their bounds ---- */
typedef struct {
    char name[24];                         /* the sympy symbol, "s77" */
    int64_t min, max;                      /* its range (range_constraints, --dim) */
    int64_t step;                          /* a size bucket's cap's step (FeDimBound) */
} FePt2Sym;
typedef struct {
    FePt2Sym *v;
    int n;
} FePt2Syms;
struct FePt2;
/* Read the archive's range_constraints (doc: models/NAME.json) into p->syms, narrowed
 * by --dim SYMBOL=[MIN..]MAX and a size bucket's caps; false (reported) for a symbol
 * without a bound. */
bool fe_pt2_syms_read(struct FePt2 *p, json_t *doc);
/* Evaluate srepr expression e with every symbol at its bound into *out; *bare (may be
 * NULL) is the symbol's name when e is one symbol, else NULL. False with *why on an
 * unknown symbol or function. */
bool fe_pt2_sym_eval(const FePt2Syms *sy, const char *e, int64_t *out, const char **bare,
                     const char **why);
/* Whether e is Mul(Integer(m), Symbol(s)), m >= 2 (an input's size torch.export
 * derived from a Dim, 4 * h): *mul = m and *sym the symbol's name. */
bool fe_pt2_sym_multiple(const FePt2Syms *sy, const char *e, int64_t *mul, const char **sym);

/* A SymInt: {"as_int": N}, or {"as_expr": {"expr_str": E}} evaluated at the bounds of
 * sy (NULL: refused). */
bool fe_pt2_symint(json_t *v, const FePt2Syms *sy, int64_t *out);
/* torch ScalarType code -> IrDType (UNDEF if unsupported); name for messages. */
IrDType fe_pt2_dtype(int64_t code);
const char *fe_pt2_dtype_name(int64_t code);
/* Parse a TensorMeta: dtype and sizes into t (symbolic ones at their bounds in sy,
 * NULL: refused); strides and storage offset into the optional outputs (strides has
 * IR_MAX_RANK entries). On error writes err. */
bool fe_pt2_tensor_meta(json_t *meta, const FePt2Syms *sy, IrType *t, int64_t *strides,
                        int64_t *offset, char *err, size_t errlen);
/* True if a tensor of type t with these strides and storage offset is the dense
 * row-major prefix of its storage. */
bool fe_pt2_is_dense(const IrType *t, const int64_t *strides, int64_t offset);

/* ---- the loader's state ---- */
typedef struct FePt2 {
    const char *path;                      /* the .pt2 file */
    IrDiag *diag;
    FeOptions opt;
    FePt2Zip zip;
    char root[256];                        /* "model/": archive root folder with '/' */
    char json_entry[512];                  /* the models/NAME.json entry */
    json_t *weights_cfg;                   /* data/weights config (object "config") */
    json_t *consts_cfg;                    /* data/constants config */
    IrGraph *g;
    int64_t aten_opset;                    /* opset_version.aten */
    json_t *doc;                           /* the parsed models/NAME.json */
    jmp_buf *oom;                          /* allocation-failure target for p->g */
    void *scratch[3];                      /* malloc'd temporaries, freed if loading
                                            * is abandoned (allocation failure) */
    json_t *scopes;                        /* owns every scope's name map (array) */
    FePt2Syms syms;                        /* the program's symbolic sizes' bounds */
} FePt2;

/* ---- fe_pt2_weights.c ---- */
/* Read both payload configs (missing ones count as empty). */
bool fe_pt2_weights_init(FePt2 *p);
/* Load the tensor stored under FQN fqn as an IR constant named fqn whose type must
 * equal want (from the graph's metadata). Returns IR_NONE after reporting. */
ValId fe_pt2_load_tensor(FePt2 *p, const char *fqn, const IrType *want);

/* ---- fe_pt2_graph.c ---- */
/* Convert graph_module (graph + signature) into p->g. */
bool fe_pt2_build(FePt2 *p, json_t *graph_module);

#endif
