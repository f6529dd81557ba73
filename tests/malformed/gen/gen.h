/* gen.h: the generator of the malformed-input corpus (tests/malformed).
 *
 * gen_malformed OUTDIR writes every case file below OUTDIR (onnx/, sbin/, input/,
 * pt2/) and OUTDIR/expect.tsv, one line per case:
 *
 *   FILE <TAB> TOOL <TAB> STATUS <TAB> FRAGMENT [<TAB> ARGS]
 *
 * FILE is relative to OUTDIR; TOOL is spyrec or spyrun; STATUS the exit status the
 * tool must end with; FRAGMENT text its messages must contain (it names the node,
 * tensor or byte offset at fault); ARGS (spyrun only) the arguments, where {} stands
 * for FILE (default: just the bundle FILE). Everything is built programmatically and
 * deterministically: running the generator twice gives identical files.
 */
#ifndef GEN_H
#define GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- growable byte buffer, also the protobuf writer's output ---- */
typedef struct {
    uint8_t *p;
    size_t n, cap;
} Buf;

void buf_put(Buf *b, const void *data, size_t n);
void buf_free(Buf *b);
Buf buf_copy(const Buf *b);

/* ---- protobuf wire format (gen_pb.c) ---- */
enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };
void pb_varint(Buf *b, uint64_t v);
void pb_tag(Buf *b, uint32_t field, int wt);
void pb_int(Buf *b, uint32_t field, int64_t v);     /* varint field */
void pb_str(Buf *b, uint32_t field, const char *s); /* string field */
void pb_bytes(Buf *b, uint32_t field, const void *p, size_t n);
void pb_float(Buf *b, uint32_t field, float f); /* fixed32 field */
void pb_msg(Buf *b, uint32_t field, Buf *sub);  /* appends and frees sub */
void pb_packed_i64(Buf *b, uint32_t field, const int64_t *v, size_t n);

/* ---- ONNX messages (gen_pb.c); each returns an encoded message ---- */
#define ONNX_FLOAT 1
#define ONNX_INT64 7
#define ONNX_INT32 6
Buf ox_tensor(const char *name, int dtype, const int64_t *dims, int rank, const void *raw,
              size_t rawlen);
Buf ox_tensor_f32(const char *name, const int64_t *dims, int rank, float fill);
Buf ox_value(const char *name, int dtype, const int64_t *dims, int rank);
/* node: inputs and outputs are NULL-terminated lists; attributes appended by caller
 * with ox_attr_* into the returned buffer (pb_msg(&node, 5, &attr)). */
Buf ox_node(const char *op, const char *name, const char *const *in, const char *const *out);
Buf ox_attr_int(const char *name, int64_t v);
Buf ox_attr_ints(const char *name, const int64_t *v, size_t n);
Buf ox_attr_float(const char *name, float f);
Buf ox_attr_str(const char *name, const char *s);
Buf ox_attr_graph(const char *name, Buf *graph);
Buf ox_attr_tensor(const char *name, Buf *tensor);
Buf ox_opset(const char *domain, int64_t version);
/* model: ir_version 8, the given opset (domain "" version v; v < 0: none), graph. */
Buf ox_model(int64_t opset, Buf *graph);

/* ---- the corpus (gen_main.c) ---- */
/* Write FILE (relative to the output folder) and record its expectation. args may be
 * NULL (spyrun gets just the file). */
void gen_case(const char *file, const void *data, size_t n, const char *tool, int status,
              const char *fragment, const char *args);
/* Write a helper file that is not a case (external data, valid inputs). */
void gen_file(const char *file, const void *data, size_t n);
/* Create a symbolic link (a helper, not a case). */
void gen_symlink(const char *file, const char *target);
/* printf into a static rotating buffer (for names and fragments). */
const char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));

/* ---- case groups ---- */
void gen_onnx_wire(void);  /* gen_onnx_wire.c: truncation, varints, wire types */
void gen_onnx_graph(void); /* gen_onnx_graph.c: tensors, types, graph structure */
void gen_onnx_ops(void);   /* gen_onnx_ops.c: opsets, operators, attributes */
void gen_sbin(void);       /* gen_sbin.c: bundles */
void gen_inputs(void);     /* gen_input.c: runtime input tensor files */
void gen_pt2(void);        /* gen_pt2.c: torch.export archives */

/* the valid reference model of the ONNX groups: x[1,1,8,8] -> Conv(W,B) -> Relu -> y */
Buf onnx_base_graph(void);
Buf onnx_base_model(void);

/* ---- bundles (gen_sbin.c), used by gen_input.c too ---- */
/* Valid reference bundles: "relu" (x f32[4,8] -> y), "embed" (ids i64[4] -> Gather
 * from a 10x8 table -> y f32[4,8]), "div" (a, b i32[8] -> a / b). */
Buf sbin_build(const char *which);

/* ---- misc ---- */
uint32_t gen_crc32c(uint32_t crc, const void *data, size_t n);
uint32_t gen_crc32(uint32_t crc, const void *data, size_t n); /* zip's CRC-32 */

#endif

/* ---- graph building shortcuts (gen_pb.c) ---- */
void g_input(Buf *g, const char *name, int dtype, const int64_t *dims, int rank);
void g_output(Buf *g, const char *name, int dtype, const int64_t *dims, int rank);
void g_init_f32(Buf *g, const char *name, const int64_t *dims, int rank);
void g_init_i64(Buf *g, const char *name, const int64_t *vals, int n);
/* Append a node; attrs: a NULL-terminated list of encoded attributes (consumed). */
void g_node(Buf *g, const char *op, const char *name, const char *const *in, const char *const *out,
            ...);
/* Wrap g (consumed) into a model with the given default opset and write the case. */
void g_case(const char *file, Buf *g, int64_t opset, const char *frag);
#define IN(...) ((const char *const[]){__VA_ARGS__, NULL})
#define DIMS(...)                                                                                  \
    ((const int64_t[]){__VA_ARGS__}), (int)(sizeof((const int64_t[]){__VA_ARGS__}) / 8)
#define AEND ((Buf){0})
