/* fe.h: frontends. They read model files into the IR (foreign nodes, constants,
 * typed inputs) and read tensor files; protobuf and JSON types never leave frontend/.
 */
#ifndef SPYREC_FE_H
#define SPYREC_FE_H

#include <stddef.h>
#include <stdint.h>

#include "ir.h"
#include "target.h"

/* Specialisation of one graph input at compile time (spyrec --bind / --input-shape):
 * either its value is bound (the input becomes a constant, e.g. axes or a target shape
 * that an AOT compiler with static shapes needs), or its dynamic dimensions are fixed. */
typedef struct FeInputSpec {
    const char *name;              /* graph input name */
    const struct FeTensor *value;  /* non-NULL: bind the input to this constant */
    int rank;                      /* >= 0: the input's full static shape; -1: keep */
    int64_t dims[IR_MAX_RANK];     /* the size, or a bounded axis's upper bound */
    int64_t min[IR_MAX_RANK];      /* bounded axes (MIN..MAX): the lower bound; equal to
                                    * dims[i] for a fixed axis */
    const struct FeSeq *seq;       /* non-NULL: a sequence or optional input fixed to
                                    * this structure (element count and shapes; the
                                    * element data is not used); value/rank ignored */
} FeInputSpec;

typedef struct {
    size_t max_file_bytes;         /* refuse larger model files (default 2 GiB) */
    int max_nesting;               /* protobuf/JSON nesting limit (default 64) */
    size_t arena_limit;            /* 0 = none: IR arena bytes per graph while loading
                                    * (tests use it to inject allocation failures) */
    const FeInputSpec *specs;      /* input specialisations (ONNX main graph), or NULL */
    int nspecs;
    struct FeFileList *files;      /* optional: receives the files the model reads
                                    * besides itself (ONNX external data) */
    bool lenient_types;            /* main-graph inputs may stay untyped (spyrec --print-ops
                                    * lists the operators of models it cannot compile) */
    const struct FeDimBound *dim_bounds; /* --dim PARAM=[MIN..]MAX bounds of symbolic dims */
    int ndim_bounds;
    /* size buckets (spyrec --dim-buckets): symbols (named as in the IR's symbol table: the
     * dim_param, or "INPUT[axis]") whose maximum is lowered to max here (min unused) */
    const struct FeDimBound *sym_caps;
    int nsym_caps;
} FeOptions;

/* Bounds of an ONNX dim_param (spyrec --dim PARAM=MAX or PARAM=MIN..MAX): every input
 * dimension of that name stays symbolic, in [min, max] at run time. */
typedef struct FeDimBound {
    const char *param;
    int64_t min, max;
    int64_t step;                  /* a size bucket's cap: the bound bundle's step
                                    * (IrSymDim.step), which the bucket keeps; else 0 */
} FeDimBound;

/* Files a model load depends on besides the model file (spyrec -MD): each path is
 * the model's folder as given joined with an external-data location ("dir/w.bin"; just
 * "w.bin" for a model in the current folder), once, in first-use order. Filled only
 * by a successful load. */
typedef struct FeFileList {
    char **paths;                  /* malloc'd strings */
    int n, cap;
} FeFileList;
void fe_file_list_free(FeFileList *l);

/* ONNX model -> IR graph with FOREIGN nodes (domain/op/opset kept) and constants.
 * Errors go to diag ("model.onnx: ..."); returns NULL on failure.
 * - Constant nodes become constants; model-local functions are inlined (internal
 *   values named "<call node>/<name>"); node outputs are typed only where value_info
 *   gives a fully static type (else dtype UNDEF); omitted inputs are IR_NONE.
 * - A GRAPH attribute (If/Loop/Scan body) is its own IrGraph: its formal ONNX inputs
 *   first (dtype UNDEF unless fully static), then one input per outer value the body
 *   uses, named exactly like that value in the enclosing graph. The node holding the
 *   subgraph(s) lists those outer values (each once) after its own ONNX inputs. */
IrGraph *fe_load_onnx(const char *path, IrDiag *diag, const FeOptions *opt);
/* torch.export archive (.pt2) -> IR graph with FOREIGN aten nodes. */
IrGraph *fe_load_pt2(const char *path, IrDiag *diag, const FeOptions *opt);
/* Pick the frontend by file content/extension. */
IrGraph *fe_load_model(const char *path, IrDiag *diag, const FeOptions *opt);

/* Target description from YAML (schemas/spyre32.yaml format). Returns false with a
 * message "file: line N: ..." in diag on error. */
bool fe_load_target(const char *path, SpyTarget *out, IrDiag *diag);

/* The float32 graph outputs of g (as imported, before the passes) that the model
 * computes in half precision, cast from float16 or bfloat16 (fe_halfout.c): bit j for
 * output j < 64. */
uint64_t fe_half_outputs(IrGraph *g);
/* The built-in reference target (same values as schemas/spyre32.yaml). */
void fe_default_target(SpyTarget *out);

/* A host tensor read from / written to a file (.pb TensorProto or .npy). */
typedef struct FeTensor {
    char *name;                    /* malloc'd; "" if the file has none */
    IrDType dtype;
    int rank;
    int64_t dims[IR_MAX_RANK];
    void *data;                    /* malloc'd, row-major, little-endian */
    size_t nbytes;
    bool borrowed;                 /* data points into a mapped file kept elsewhere (an
                                      ONNX import's FeData): not freed with the tensor */
    bool huge;                     /* data is an ir_huge_alloc buffer (ir_huge_free) */
} FeTensor;

/* Read a tensor file; format from content (.npy magic) or extension. On error returns
 * false and writes "file: offset N: message" into err. */
bool fe_tensor_read(const char *path, FeTensor *t, char *err, size_t errlen);
bool fe_tensor_read_mem(const char *label, const uint8_t *buf, size_t len, FeTensor *t,
                        char *err, size_t errlen);
/* Write as TensorProto (.pb) or .npy (npy != 0); atomically (temp file + rename). */
bool fe_tensor_write(const char *path, const FeTensor *t, int npy, char *err, size_t errlen);
void fe_tensor_free(FeTensor *t);

/* A sequence or optional value read from a file (ONNX SequenceProto / OptionalProto of
 * onnx-data.proto, as in the backend-test data sets), flattened to its tensors: a
 * sequence of tensors, an optional tensor (one tensor), or an optional sequence (the
 * sequence's tensors). A value nested deeper (sequence of sequences, maps, sparse
 * tensors) is refused. The bundle names element i of graph input/output NAME "NAME[i]".
 * SequenceProto and OptionalProto share their field numbers, so a file does not say
 * which of the two it is: the model's type decides. */
typedef struct FeSeq {
    char *name;                    /* malloc'd; "" if the file has none */
    bool none;                     /* no value: an empty optional (n = 0) */
    IrDType elem;                  /* element dtype; IR_DT_UNDEF when not known */
    int n;                         /* tensors */
    FeTensor *items;               /* malloc'd array of n (data NULL: shapes only) */
} FeSeq;

/* Read a SequenceProto / OptionalProto file. Strict: a file with fields of neither
 * (such as a TensorProto) is refused, so callers may try fe_tensor_read first or after.
 * On error returns false with "file: offset N: message" in err. */
bool fe_seq_read(const char *path, FeSeq *s, char *err, size_t errlen);
bool fe_seq_read_mem(const char *label, const uint8_t *buf, size_t len, FeSeq *s, char *err,
                     size_t errlen);
void fe_seq_free(FeSeq *s);

#endif
