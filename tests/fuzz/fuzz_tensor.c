/* fuzz_tensor.c: libFuzzer target for spyrun's tensor-file parsing: ONNX TensorProto
 * (.pb) and NumPy (.npy) images through fe_tensor_read_mem, then a round trip of what
 * decodes through both encoders (fe_tensor_write to a private temporary folder) and
 * back, which must reproduce the same dtype, shape and bytes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frontend/fe.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[4000];

/* Remove the private folder at exit. */
static void cleanup(void)
{
    char path[4100];
    snprintf(path, sizeof path, "%s/t.pb", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/t.npy", dir);
    unlink(path);
    rmdir(dir);
}

/* Create the private folder once. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    const char *base = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/spyrec-fuzz-tensor.XXXXXX",
             base && *base ? base : (access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"));
    if (!mkdtemp(dir)) {
        perror("fuzz_tensor: mkdtemp");
        exit(1);
    }
    atexit(cleanup);
    return 0;
}

/* Whether a and b (same dtype and size) hold the same elements; bools compare by
 * truth value, since a .pb file may hold bool bytes other than 0 and 1. */
static bool same_data(const FeTensor *a, const FeTensor *b)
{
    if (a->dtype != IR_DT_BOOL)
        return a->nbytes == 0 || memcmp(a->data, b->data, a->nbytes) == 0;
    const uint8_t *x = a->data, *y = b->data;
    for (size_t i = 0; i < a->nbytes; i++)
        if ((x[i] != 0) != (y[i] != 0))
            return false;
    return true;
}

/* Write t in one format, read it back, and require the same tensor. */
static void round_trip(const FeTensor *t, int npy)
{
    char path[4100], err[512];
    snprintf(path, sizeof path, "%s/t.%s", dir, npy ? "npy" : "pb");
    if (!fe_tensor_write(path, t, npy, err, sizeof err))
        return; /* e.g. a dtype .npy cannot hold */
    FeTensor u;
    if (!fe_tensor_read(path, &u, err, sizeof err)) {
        fprintf(stderr, "round trip: cannot read back what was written: %s\n", err);
        abort();
    }
    if (u.dtype != t->dtype || u.rank != t->rank || u.nbytes != t->nbytes ||
        memcmp(u.dims, t->dims, (size_t)t->rank * sizeof t->dims[0]) != 0 || !same_data(t, &u)) {
        fprintf(stderr, "round trip through %s changed the tensor\n", npy ? ".npy" : ".pb");
        abort();
    }
    fe_tensor_free(&u);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FeTensor t;
    char err[512];
    if (!fe_tensor_read_mem("fuzz", data, size, &t, err, sizeof err)) {
        if (!err[0]) {
            fprintf(stderr, "tensor refused without a message\n");
            abort();
        }
        return 0;
    }
    if (t.nbytes <= ((size_t)16 << 20)) {
        round_trip(&t, 0);
        round_trip(&t, 1);
    }
    fe_tensor_free(&t);
    return 0;
}
