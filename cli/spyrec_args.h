/* spyrec_args.h: the compiler driver's command line (cli/spyrec_args.c), shared by the
 * driver (cli/spyrec.c). */
#ifndef SPYREC_CLI_SPYREC_ARGS_H
#define SPYREC_CLI_SPYREC_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frontend/fe.h"

#ifndef SPYREC_VERSION
#define SPYREC_VERSION "0.1.0"            /* the compiler's version, stored in bundles */
#endif

enum { EXIT_INTERNAL = 1, EXIT_INPUT = 2 };

typedef enum { EMIT_SBIN, EMIT_IR, EMIT_ASM, EMIT_DOT } EmitKind;
extern const char *const cli_emit_names[];   /* by EmitKind */

#define CLI_DIM_BUCKETS 17                /* default --dim-buckets */
#define SPEC_MAX 64                       /* --bind / --input-shape options at most */
#define CALIB_MAX 256                     /* --calibrate folders at most */

typedef struct {
    const char *input;             /* model path */
    const char *output;            /* -o path, "-" for stdout, NULL if not given */
    const char *target_path;       /* --target, NULL for the built-in target */
    int opt_level;                 /* 0..2 */
    const char *dump_after;        /* --dump-after, NULL if not given */
    EmitKind emit;
    bool verify;
    bool strip;                    /* --strip: no DEBUG section */
    int precision;                 /* --precision: PassPrecision (PASS_PREC_MODEL default) */
    const char *keep_fp32;         /* --keep-fp32 LIST, NULL if not given */
    const char *keep_fp16;         /* --keep-fp16 LIST (int8: not quantized), or NULL */
    const char *calib_dirs[CALIB_MAX]; /* --calibrate DIR...: calibration input sets */
    int ncalib;
    double calib_percentile;       /* --calibrate-method=percentile:P (0: minmax) */
    bool calib_bias_only;          /* --calibrate-method=bias (fp8: no GPTQ rounding) */
    size_t max_memory;             /* --max-memory in bytes, 0 = unlimited */
    char *flags;                   /* argv without input/output, for the bundle's meta */
    bool print_ops;                /* --print-ops: list the model's operators and exit */
    FeInputSpec specs[SPEC_MAX];   /* --bind / --input-shape specialisations */
    FeTensor bound[SPEC_MAX];      /* values read for --bind */
    FeSeq seqs[SPEC_MAX];          /* structures of sequence / optional inputs */
    const char *bind_path[SPEC_MAX]; /* their files (dependencies), NULL for shapes */
    int nspecs;
    FeDimBound dim_bounds[SPEC_MAX]; /* --dim PARAM=[MIN..]MAX */
    int ndim_bounds;
    int dim_buckets;               /* --dim-buckets=N: size buckets at most (1: the bounds
                                      only; default CLI_DIM_BUCKETS) */
    bool deps;                     /* -MD: write a make dependency file */
    const char *deps_file;         /* -MF FILE (default: OUT with .d) */
    const char *deps_target;       /* -MT TARGET (default: the output file) */
    const char *report;            /* --report FILE.json */
    const char *argv0;
    const char *cache_dir;         /* --cache-dir or SPYREC_CACHE_DIR; NULL: no cache */
    uint64_t cache_max;            /* --cache-max in bytes, 0 = unbounded */
    bool no_cache;                 /* --no-cache */
    bool cache_copy;               /* --cache-copy: outputs never hard links to entries */
    bool fsync;                    /* --fsync: outputs reach the disk before their rename */
} Args;


/* Parse argv into a. Returns -1 when the compile should go on, otherwise the exit
 * status (0 after --help / --version; 2 after a usage error, printed). */
int cli_spyrec_parse_args(int argc, char **argv, Args *a);
/* The file name part of path p. */
const char *cli_base_name(const char *p);
/* Free what parsing allocated (flags, bound tensors, sequence structures). */
void cli_spyrec_free_args(Args *a);

#endif
