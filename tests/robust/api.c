/* api.c: the public runtime API under misuse.
 *
 *   api BUNDLE.sbin
 *
 * NULL pointers, out-of-range indices, NULL buffers inside the input and output
 * arrays, empty and absurd sizes, and freeing NULL: every call must return an error
 * status (with a message where the API has one) and never crash. Valid calls on the
 * same model must still work afterwards. Prints "N passed, N failed".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spyrt.h"

static int npass, nfail;

/* Record one check. */
static void check(int ok, const char *what)
{
    if (ok) {
        npass++;
    } else {
        nfail++;
        printf("FAIL %s\n", what);
    }
}

/* Calls that have no model or session at all. */
static void without_model(void)
{
    char err[256];
    spy_model *m = (spy_model *)1;
    check(spy_model_load_memory(NULL, 10, &m, err, sizeof err) == SPY_E_INVALID_ARG && !m,
          "load_memory(NULL data, 10)");
    check(spy_model_load_memory("x", 1, NULL, err, sizeof err) == SPY_E_INVALID_ARG,
          "load_memory(out NULL)");
    check(spy_model_load_memory("", 0, &m, err, sizeof err) == SPY_E_BAD_BUNDLE && err[0],
          "load_memory(empty)");
    check(spy_model_load_memory("", 0, &m, NULL, 0) == SPY_E_BAD_BUNDLE,
          "load_memory(no error buffer)");
    check(spy_model_load_memory("", 0, &m, err, 1) == SPY_E_BAD_BUNDLE && err[0] == 0,
          "load_memory(1-byte error buffer)");
    check(spy_model_load_file(NULL, &m, err, sizeof err) == SPY_E_INVALID_ARG,
          "load_file(NULL path)");
    check(spy_model_load_file("/nonexistent/x.sbin", &m, err, sizeof err) == SPY_E_IO &&
              strstr(err, "/nonexistent/x.sbin"),
          "load_file(missing file) names the file");
    check(spy_model_load_file("/", &m, err, sizeof err) != SPY_OK, "load_file(a folder)");
    spy_model_free(NULL);
    spy_session_free(NULL);
    check(spy_model_num_inputs(NULL) <= 0 && spy_model_num_outputs(NULL) <= 0,
          "num_inputs/outputs(NULL)");
    spy_tensor_info info;
    check(spy_model_input_info(NULL, 0, &info) == SPY_E_INVALID_ARG, "input_info(NULL)");
    check(spy_model_output_info(NULL, 0, &info) == SPY_E_INVALID_ARG, "output_info(NULL)");
    check(spy_model_num_kernels(NULL) <= 0, "num_kernels(NULL)");
    check(spy_model_session_bytes(NULL) == 0, "session_bytes(NULL)");
    spy_session *s = (spy_session *)1;
    check(spy_session_create(NULL, NULL, &s) == SPY_E_INVALID_ARG && !s, "session_create(NULL)");
    check(spy_session_run(NULL, NULL, NULL) == SPY_E_INVALID_ARG, "session_run(NULL)");
    check(spy_session_error(NULL) != NULL, "session_error(NULL) is a string");
    spy_kernel_profile p;
    check(spy_session_kernel_profile(NULL, 0, &p) == SPY_E_INVALID_ARG, "kernel_profile(NULL)");
    check(spy_model_kernel_profile(NULL, 0, &p) == SPY_E_INVALID_ARG, "model_kernel_profile(NULL)");
    check(spy_model_kernel_core_us(NULL, 0, NULL, 0) == -1, "kernel_core_us(NULL)");
    check(spy_model_meta(NULL) != NULL, "meta(NULL) is a string");
    check(spy_model_selftest_input(NULL, 0) == NULL, "selftest_input(NULL)");
    check(spy_status_str((spy_status)999) != NULL, "status_str(999)");
}

/* Misuse of a valid model m. */
static void with_model(spy_model *m)
{
    int nin = spy_model_num_inputs(m), nout = spy_model_num_outputs(m);
    spy_tensor_info info;
    check(spy_model_input_info(m, -1, &info) == SPY_E_INVALID_ARG, "input_info(-1)");
    check(spy_model_input_info(m, nin, &info) == SPY_E_INVALID_ARG, "input_info(n)");
    check(spy_model_output_info(m, nout, &info) == SPY_E_INVALID_ARG, "output_info(n)");
    check(spy_model_input_info(m, 0, NULL) == SPY_E_INVALID_ARG, "input_info(info NULL)");
    spy_kernel_profile p;
    int nk = spy_model_num_kernels(m);
    check(spy_model_kernel_profile(m, nk, &p) == SPY_E_INVALID_ARG, "kernel_profile(n)");
    check(spy_model_kernel_profile(m, -5, &p) == SPY_E_INVALID_ARG, "kernel_profile(-5)");
    check(spy_model_kernel_core_us(m, nk, NULL, 0) == -1, "kernel_core_us(n)");
    check(spy_model_selftest_input(m, 1000) == NULL, "selftest_input(1000)");
    spy_session *s = NULL;
    spy_session_options bad = {.num_threads = -3};
    check(spy_session_create(m, &bad, &s) == SPY_E_INVALID_ARG, "session_create(-3 threads)");
    check(spy_session_create(m, NULL, NULL) == SPY_E_INVALID_ARG, "session_create(out NULL)");
    spy_session_options huge = {.num_threads = 100000};
    if (spy_session_create(m, &huge, &s) == SPY_OK)
        spy_session_free(s);
    s = NULL;
    check(spy_session_create(m, NULL, &s) == SPY_OK, "session_create(defaults)");
    if (!s)
        return;
    void **in = calloc((size_t)nin + 1, sizeof *in);
    void **out = calloc((size_t)nout + 1, sizeof *out);
    for (int i = 0; i < nin; i++) {
        spy_model_input_info(m, i, &info);
        in[i] = calloc(1, info.nbytes + 1);
    }
    for (int k = 0; k < nout; k++) {
        spy_model_output_info(m, k, &info);
        out[k] = calloc(1, info.nbytes + 1);
    }
    if (nin)
        check(spy_session_run(s, NULL, out) == SPY_E_INVALID_ARG && spy_session_error(s)[0],
              "run(inputs NULL)");
    if (nout)
        check(spy_session_run(s, (const void *const *)in, NULL) == SPY_E_INVALID_ARG,
              "run(outputs NULL)");
    if (nin) {
        void *keep = in[0];
        in[0] = NULL;
        check(spy_session_run(s, (const void *const *)in, out) == SPY_E_INVALID_ARG &&
                  strstr(spy_session_error(s), "NULL"),
              "run(input 0 NULL)");
        in[0] = keep;
    }
    if (nout) {
        void *keep = out[0];
        out[0] = NULL;
        check(spy_session_run(s, (const void *const *)in, out) == SPY_E_INVALID_ARG,
              "run(output 0 NULL)");
        out[0] = keep;
    }
    spy_status st = spy_session_run(s, (const void *const *)in, out);
    check(st == SPY_OK || st == SPY_E_RUNTIME, "run(zero inputs) after the misuse");
    check(spy_session_kernel_profile(s, nk, &p) == SPY_E_INVALID_ARG, "session profile(n)");
    spy_session_free(s);
    for (int i = 0; i < nin; i++)
        free(in[i]);
    for (int k = 0; k < nout; k++)
        free(out[k]);
    free(in);
    free(out);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: api BUNDLE.sbin\n");
        return 2;
    }
    without_model();
    spy_model *m = NULL;
    char err[512];
    if (spy_model_load_file(argv[1], &m, err, sizeof err) != SPY_OK) {
        printf("FAIL cannot load %s: %s\n", argv[1], err);
        return 1;
    }
    with_model(m);
    spy_model_free(m);
    printf("api: %d passed, %d failed\n", npass, nfail);
    return nfail != 0;
}
