/* cli.h: helpers of the command-line tools, one file each:
 *   cli/spyrec_io.c        reading .ir text, atomic writes of every output
 *   cli/spyrec_deps.c      make dependency files (spyrec -MD -MF)
 *   cli/spyrec_dot.c       Graphviz rendering of the IR (spyrec --emit=dot)
 *   cli/spyrec_report.c    the machine-readable compile report (spyrec --report)
 *   cli/spyrec_progress.c  pass progress on a terminal
 *   cli/spyrun_trace.c     Chrome-trace / Perfetto JSON of a run (spyrun --trace)
 * The spyrec_* files link into spyrec, spyrun_* into spyrun (see the Makefile).
 */
#ifndef SPYREC_CLI_H
#define SPYREC_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ir.h"
#include "spyrt.h"
#include "target.h"

/* ---- cli/spyrec_io.c ---- */
/* Write buf to path atomically (temporary file in the same folder, fsync, rename);
 * "-" is standard output. Prints "spyrec: PATH: ..." and returns false on failure. */
bool cli_write_atomic(const char *path, const void *buf, size_t len);
/* Remove the temporary file of a write cut short (out of memory). */
void cli_io_abandon(void);
/* Remove it on SIGINT, SIGTERM and SIGHUP too. */
void cli_io_signals(void);
/* A whole text file (.ir models), NUL-terminated and malloc'd; NULL with the reason
 * in diag. */
char *cli_read_text(const char *path, IrDiag *diag);

/* ---- cli/spyrec_deps.c ---- */
/* Text of a make dependency file: "TARGET: PREREQ..." (one prerequisite per
 * continuation line) then an empty rule per prerequisite, so that make does not fail
 * when one of them disappears (like gcc -MP). Names are escaped for make. NULL when
 * out of memory. */
char *cli_deps_text(const char *target, const char *const *prereqs, int n);
/* Absolute path of the running program (/proc/self/exe, else argv0 resolved through
 * the current folder or PATH); malloc'd, NULL if it cannot be found. */
char *cli_self_path(const char *argv0);
/* The dependency file gcc -MD would pick for output OUT: OUT with its extension
 * replaced by ".d" (malloc'd). */
char *cli_deps_default_path(const char *out);

/* ---- cli/spyrec_dot.c ---- */
/* Graphviz digraph of g: one box per live node labelled with its op and output
 * types, graph inputs, constants and outputs as their own shapes, and (once the fuse
 * pass ran) every kernel as a cluster. Deterministic. */
void cli_dot_print(IrGraph *g, FILE *f, const char *title);

/* ---- cli/spyrec_progress.c ---- */
/* Progress lines on standard error ("[pass 5/10 fuse]", rewritten with \r) when it
 * is a terminal and enabled is true; silent otherwise. */
void cli_progress_init(bool enabled, int opt_level);
void cli_progress_stage(const char *what);      /* "load", "codegen", ... */
void cli_progress_pass(int index);              /* pass_pipeline index starting */
void cli_progress_clear(void);                  /* erase the line before other output */

/* ---- cli/spyrec_report.c ---- */
typedef struct CliReport CliReport;

/* What the driver knows at the end of a compile. */
typedef struct {
    const char *compiler;          /* "spyrec 0.1.0" */
    const char *model;
    const char *output;            /* NULL when none */
    const char *emit;              /* "sbin", "ir", "asm", "dot" */
    const char *flags;             /* as stored in the bundle */
    int opt_level;
    const SpyTarget *target;       /* NULL when the target could not be loaded */
    const char *target_path;       /* NULL: built-in */
    int exit_status;
    const IrDiag *diag;            /* every diagnostic of the compile */
    IrGraph *g;                    /* NULL when loading failed or on out of memory */
    const uint8_t *bundle;         /* NULL unless a bundle was emitted */
    size_t bundle_len;
} CliReportInfo;

CliReport *cli_report_new(void);   /* NULL when out of memory */
void cli_report_free(CliReport *r);
/* Pass observer (PassOptions.hook): operator counts before and after decompose,
 * passes run, their times. */
void cli_report_pass(CliReport *r, IrGraph *g, int index, bool done);
/* Build the JSON report and write it atomically to path; false (message printed)
 * when it cannot be written. */
bool cli_report_write(CliReport *r, const char *path, const CliReportInfo *info);

/* ---- cli/spyrun_trace.c ---- */
/* Write a Chrome-trace / Perfetto JSON of the last run of s (a profiling session of
 * m): the host timeline per kernel and host thread (pid 1 "host") and the modelled
 * device timeline per core (pid 2 "device", tid = core). Atomic; false with a message
 * in err on failure. */
bool cli_trace_write(const char *path, const spy_model *m, const spy_session *s,
                     const char *bundle_name, char *err, size_t errlen);

#endif
