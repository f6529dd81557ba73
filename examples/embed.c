/* embed.c: a program that embeds the spyrec runtime (libspyrert) to run a bundle.
 *
 *   cc embed.c $(pkg-config --cflags --libs spyrert) -o embed
 *   ./embed model.sbin                    every input filled with zeros
 *   ./embed model.sbin x.npy [y.raw ...]  input K from the K-th file
 *
 * An input file is either NumPy .npy (version 1 to 3, little-endian, C order; its data
 * size must match the input) or raw bytes in the input's host dtype (numpy's
 * arr.tofile()), exactly spy_model_input_info().nbytes long. The program prints every
 * input and output (name, dtype, shape, bytes), runs one inference and prints the
 * first values of each output and the modelled device time.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <spyrt.h>

/* Print "name dtype[d0,d1] (N bytes)". */
static void print_info(const char *role, int i, const spy_tensor_info *t)
{
    printf("%s %d '%s' %s[", role, i, t->name, spy_dtype_name(t->dtype));
    for (int d = 0; d < t->rank; d++)
        printf(d ? ",%lld" : "%lld", (long long)t->dims[d]);
    printf("] (%zu bytes)\n", t->nbytes);
}

/* Read a whole file; NULL on failure (message printed). */
static uint8_t *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return NULL;
    }
    uint8_t *buf = NULL;
    size_t cap = 0, n = 0, got;
    do {
        if (n == cap) {
            uint8_t *p = realloc(buf, cap = cap ? 2 * cap : 1 << 16);
            if (!p) {
                free(buf);
                fclose(f);
                fprintf(stderr, "%s: out of memory\n", path);
                return NULL;
            }
            buf = p;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    fclose(f);
    *len = n;
    return buf;
}

/* Fill buf (t->nbytes) from a .npy or raw file; false with a message on mismatch. */
static int load_input(const char *path, const spy_tensor_info *t, void *buf)
{
    size_t len;
    uint8_t *data = read_file(path, &len);
    if (!data)
        return 0;
    size_t off = 0;
    if (len >= 10 && !memcmp(data, "\x93NUMPY", 6)) {       /* skip the .npy header */
        size_t hl = data[6] == 1 ? (size_t)(data[8] | data[9] << 8)
                    : len >= 12 ? (size_t)data[8] | (size_t)data[9] << 8 |
                                  (size_t)data[10] << 16 | (size_t)data[11] << 24
                                : len;
        off = (data[6] == 1 ? 10 : 12) + hl;
    }
    int ok = off <= len && len - off == t->nbytes;
    if (ok)
        memcpy(buf, data + off, t->nbytes);
    else
        fprintf(stderr, "%s: holds %zu data bytes, input '%s' wants %zu\n", path,
                off <= len ? len - off : 0, t->name, t->nbytes);
    free(data);
    return ok;
}

/* Element i of a host buffer as a double (for printing). */
static double elem(int dt, const void *p, size_t i)
{
    switch (dt) {
    case 1: return ((const float *)p)[i];
    case 11: return ((const double *)p)[i];
    case 2: case 9: return ((const uint8_t *)p)[i];
    case 3: return ((const int8_t *)p)[i];
    case 4: return ((const uint16_t *)p)[i];
    case 5: return ((const int16_t *)p)[i];
    case 6: return ((const int32_t *)p)[i];
    case 7: return (double)((const int64_t *)p)[i];
    case 12: return ((const uint32_t *)p)[i];
    case 13: return (double)((const uint64_t *)p)[i];
    default: return 0;
    }
}

/* Bytes per element of the dtypes elem() prints; 0 for others. */
static size_t elem_size(int dt)
{
    switch (dt) {
    case 2: case 3: case 9: return 1;
    case 4: case 5: return 2;
    case 1: case 6: case 12: return 4;
    case 7: case 11: case 13: return 8;
    default: return 0;
    }
}

/* Print output k like spyrun does: type and the first 8 values. */
static void print_output(int k, const spy_tensor_info *t, const void *data)
{
    size_t es = elem_size(t->dtype), n = es ? t->nbytes / es : 0;
    printf("output %d '%s' %s[", k, t->name, spy_dtype_name(t->dtype));
    for (int d = 0; d < t->rank; d++)
        printf(d ? ",%lld" : "%lld", (long long)t->dims[d]);
    printf("]:");
    for (size_t i = 0; i < n && i < 8; i++)
        printf(" %.6g", elem(t->dtype, data, i));
    if (!es)
        printf(" (%zu bytes of %s)", t->nbytes, spy_dtype_name(t->dtype));
    printf(n > 8 ? " ... (%zu values)\n" : "\n", n);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.sbin [INPUT_FILE...]\n", argv[0]);
        return 2;
    }
    char err[512];
    spy_model *m;
    spy_status st = spy_model_load_file(argv[1], &m, err, sizeof err);
    if (st != SPY_OK) {
        fprintf(stderr, "%s: %s (%s)\n", argv[1], err, spy_status_str(st));
        return 2;
    }
    int nin = spy_model_num_inputs(m), nout = spy_model_num_outputs(m), rc = 0;
    printf("%s: %d inputs, %d outputs, %d kernels, session memory %zu bytes (%s)\n", argv[1],
           nin, nout, spy_model_num_kernels(m), spy_model_session_bytes(m), spy_version());
    if (argc > 2 && argc - 2 != nin) {
        fprintf(stderr, "the model has %d inputs, %d files given\n", nin, argc - 2);
        spy_model_free(m);
        return 2;
    }
    void **in = calloc((size_t)nin + 1, sizeof *in), **out = calloc((size_t)nout + 1, sizeof *out);
    spy_tensor_info *oi = calloc((size_t)nout + 1, sizeof *oi);
    for (int i = 0; in && i < nin && !rc; i++) {
        spy_tensor_info t;
        spy_model_input_info(m, i, &t);
        print_info("input", i, &t);
        if (!(in[i] = calloc(1, t.nbytes + 1)))
            rc = 1;
        else if (argc > 2 && !load_input(argv[2 + i], &t, in[i]))
            rc = 2;
    }
    for (int k = 0; out && oi && k < nout && !rc; k++) {
        spy_model_output_info(m, k, &oi[k]);
        print_info("output", k, &oi[k]);
        if (!(out[k] = calloc(1, oi[k].nbytes + 1)))
            rc = 1;
    }
    spy_session *s = NULL;
    if (!in || !out || !oi)
        rc = 1;
    else if (!rc && (st = spy_session_create(m, NULL, &s)) != SPY_OK) {
        fprintf(stderr, "cannot create a session: %s\n", spy_status_str(st));
        rc = 1;
    } else if (!rc && (st = spy_session_run(s, (const void *const *)in, out)) != SPY_OK) {
        fprintf(stderr, "run failed (%s): %s\n", spy_status_str(st), spy_session_error(s));
        rc = st == SPY_E_RUNTIME ? 2 : 1;
    } else if (!rc) {
        printf("ran %s with %s\n", argv[1], argc > 2 ? "the given inputs" : "zero inputs");
        for (int k = 0; k < nout; k++)
            print_output(k, &oi[k], out[k]);
        printf("modelled device time: %.3f us\n", spy_model_device_us(m));
    }
    spy_session_free(s);
    for (int i = 0; in && i < nin; i++)
        free(in[i]);
    for (int k = 0; out && k < nout; k++)
        free(out[k]);
    free(in);
    free(out);
    free(oi);
    spy_model_free(m);
    return rc;
}
