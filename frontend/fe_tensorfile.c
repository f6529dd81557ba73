/* fe_tensorfile.c: host tensors from/to files: ONNX TensorProto (.pb, as in the
 * model-zoo test_data_set folders) and NumPy .npy (told apart by the .npy magic). */
#include <stdlib.h>
#include <string.h>

#include "fe_internal.h"

#define FE_TENSOR_MAX_FILE_BYTES ((size_t)4 << 30)

/* Release what a read filled in; t may be partly filled or zeroed. */
void fe_tensor_free(FeTensor *t)
{
    if (!t)
        return;
    free(t->name);
    free(t->data);
    t->name = NULL;
    t->data = NULL;
    t->nbytes = 0;
}

/* Decode a TensorProto image; base_dir is for external data (NULL: refused). */
static bool read_pb(const char *label, const uint8_t *buf, size_t len, const char *base_dir,
                    FeTensor *t, char *err, size_t errlen)
{
    char msg[768];
    FePbLimits lim = {FE_DEFAULT_MAX_NESTING, ((size_t)64 << 20) + 16 * len};
    if (!fe_pb_check(buf, len, &onnx__tensor_proto__descriptor, &lim, msg, sizeof msg)) {
        fe_fmt(err, errlen, "%s: %s", label, msg);
        return false;
    }
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, len, buf);
    if (!tp) {
        fe_fmt(err, errlen, "%s: not a valid TensorProto (protobuf decoding failed)", label);
        return false;
    }
    bool ok = fe_tensor_from_proto(tp, base_dir, t, msg, sizeof msg);
    if (!ok)
        fe_fmt(err, errlen, "%s: %s", label, msg);
    onnx__tensor_proto__free_unpacked(tp, NULL);
    return ok;
}

/* Tensor from bytes in memory: .npy if it has the magic, else a TensorProto. */
static bool read_any(const char *label, const uint8_t *buf, size_t len, const char *base_dir,
                     FeTensor *t, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    if (fe_npy_is(buf, len))
        return fe_npy_read(label, buf, len, t, err, errlen);
    size_t ll = strlen(label);
    if (ll >= 4 && !strcmp(label + ll - 4, ".npy")) {
        fe_fmt(err, errlen, "%s: offset 0: not a .npy file (bad magic)", label);
        return false;
    }
    return read_pb(label, buf, len, base_dir, t, err, errlen);
}

/* Read a tensor file; external data of a .pb is resolved next to it. */
bool fe_tensor_read(const char *path, FeTensor *t, char *err, size_t errlen)
{
    char msg[512];
    size_t len;
    memset(t, 0, sizeof *t);
    uint8_t *buf = fe_read_file(path, FE_TENSOR_MAX_FILE_BYTES, &len, msg, sizeof msg);
    if (!buf) {
        fe_fmt(err, errlen, "%s: %s", path, msg);
        return false;
    }
    char *dir = fe_dirname(path);
    bool ok = dir && read_any(path, buf, len, dir, t, err, errlen);
    if (!dir)
        fe_fmt(err, errlen, "%s: out of memory", path);
    free(dir);
    free(buf);
    return ok;
}

/* Read a tensor from memory (no external data: there is no folder). */
bool fe_tensor_read_mem(const char *label, const uint8_t *buf, size_t len, FeTensor *t,
                        char *err, size_t errlen)
{
    return read_any(label ? label : "<memory>", buf, len, NULL, t, err, errlen);
}

/* Write t as TensorProto or .npy through a temporary file + rename. */
bool fe_tensor_write(const char *path, const FeTensor *t, int npy, char *err, size_t errlen)
{
    uint8_t *bytes = NULL;
    size_t n = 0;
    char msg[512];
    bool ok = npy ? fe_npy_encode(t, &bytes, &n, msg, sizeof msg)
                  : fe_tensor_to_proto(t, &bytes, &n, msg, sizeof msg);
    if (!ok) {
        fe_fmt(err, errlen, "%s: %s", path, msg);
        return false;
    }
    ok = fe_write_file_atomic(path, bytes, n, err, errlen);
    free(bytes);
    return ok;
}
