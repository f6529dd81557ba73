/* spyrec_report.h: private interface between the two files of the compile report:
 * spyrec_report.c (collection, top level, writing) and spyrec_report_plan.c (the
 * back end's plan: kernels, LX, DRAM, bundle sections) as JSON.
 */
#ifndef SPYREC_CLI_REPORT_H
#define SPYREC_CLI_REPORT_H

#include <jansson.h>

#include "cli/cli.h"

/* What the plan parts may read. */
typedef struct {
    IrGraph *g;
    const SpyTarget *target;
    const spy_model *model;        /* the emitted bundle, loaded; NULL if none */
    bool divided;                  /* pass divide completed: core split is valid */
    bool tiled;                    /* pass tile completed: tiles and LX are valid */
} CliPlanState;

/* "conv", "binary.add", "reduce.sum", "cast.f16", or the foreign op type. */
void cli_report_op_name(const IrNode *n, char *buf, size_t len);
json_t *cli_report_kernels(const CliPlanState *ps);
json_t *cli_report_lx(const CliPlanState *ps);
json_t *cli_report_dram(const CliPlanState *ps);
json_t *cli_report_bundle(const uint8_t *bundle, size_t len, const spy_model *m);

#endif
