/* fuzz_model.h: the body of the libFuzzer targets for a model file through the whole
 * compile, included by fuzz_onnx.c and fuzz_pt2.c, which define FUZZ_KIND (a name for
 * the private folder) and FUZZ_FILE (the model's file name there).
 *
 * Each input is written to FUZZ_FILE in a private temporary folder (so that external
 * data can only resolve inside it) and compiled as spyrec does: fe_load_model (an
 * input that starts as a zip goes to the .pt2 frontend, any other to ONNX's), the pass
 * pipeline, codegen. Errors are expected; crashes, sanitizer reports, leaks, hangs and
 * unbounded memory are findings. The graph's arena is capped at 512 MiB and constant
 * folds at 64 MiB. Symbolic dimensions named as the tree's dynamic models name them
 * (batch, seq, width, h, w, ...) are bounded as spyrec --dim would bound them, so that
 * the handling of bounded dynamic dimensions (pass_symdim) is fuzzed too.
 */
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/cg.h"
#include "frontend/fe.h"
#include "ir.h"
#include "passes/pass.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[4000], model_path[4096];
static SpyTarget target;
static jmp_buf oom_jmp;
static IrGraph *volatile cur_g;

/* Remove the private folder at exit. */
static void cleanup(void)
{
    unlink(model_path);
    rmdir(dir);
}

/* Create the private folder once. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    const char *base = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/spyrec-fuzz-" FUZZ_KIND ".XXXXXX",
             base && *base ? base : (access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"));
    if (!mkdtemp(dir)) {
        perror("fuzz_" FUZZ_KIND ": mkdtemp");
        exit(1);
    }
    snprintf(model_path, sizeof model_path, "%s/" FUZZ_FILE, dir);
    atexit(cleanup);
    fe_default_target(&target);
    return 0;
}

/* Run the pipeline and codegen on a loaded graph (allocation failure longjmps). */
static void compile(IrGraph *g, IrDiag *diag)
{
    cur_g = g;
    if (setjmp(oom_jmp))
        return;
    g->oom = &oom_jmp;
    g->diag = diag;
    g->arena_limit = (size_t)512 << 20;
    g->fold_budget = IR_FOLD_BUDGET_DEFAULT / 4;  /* smaller constants: faster runs */
    PassOptions po = {.opt_level = 2, .target = &target};
    if (!pass_run_pipeline(g, &po) || ir_failed(g))
        return;
    CgOptions co = {.target = &target, .meta = "compiler=fuzz\n"};
    uint8_t *bundle = NULL;
    size_t len = 0;
    if (cg_emit_bundle(g, &co, &bundle, &len))
        free(bundle);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *f = fopen(model_path, "wb");
    if (!f)
        return 0;
    size_t w = fwrite(data, 1, size, f);
    fclose(f);
    if (w != size)
        return 0;
    IrDiag diag;
    ir_diag_init(&diag, model_path);
    static const FeDimBound bounds[] = {{"batch", 1, 8}, {"seq", 2, 12}, {"sequence", 1, 16},
                                        {"width", 9, 64}, {"h", 2, 16},   {"w", 2, 16},
                                        {"n", 2, 16},     {"N", 1, 4},    {"T", 1, 16}};
    FeOptions fo = {.max_file_bytes = (size_t)64 << 20, .max_nesting = 64,
                    .arena_limit = (size_t)512 << 20, .dim_bounds = bounds,
                    .ndim_bounds = (int)(sizeof bounds / sizeof bounds[0])};
    IrGraph *g = fe_load_model(model_path, &diag, &fo);
    if (g && !ir_failed(g) && !diag.nerrors)
        compile(g, &diag);
    if (g) {
        g->oom = NULL;
        ir_graph_free(g);
    }
    ir_diag_free(&diag);
    return 0;
}
