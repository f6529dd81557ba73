/* spyrec_calib.h: the calibration of --precision=int8 (cli/spyrec_calib.c). */
#ifndef SPYREC_CLI_SPYREC_CALIB_H
#define SPYREC_CLI_SPYREC_CALIB_H

#include <jansson.h>

#include "cli/spyrec_args.h"
#include "passes/pass.h"

/* Calibrate on a->calib_dirs with g, a fresh copy of the model (which this lowers and
 * evaluates; the caller frees it): fills q's activation parameters and keep list and
 * *seconds, the time it took. False with errors in g->diag. */
bool cli_calibrate(IrGraph *g, const Args *a, const SpyTarget *target, PassQuant *q,
                   double *seconds);
/* Free what cli_calibrate and the quantize pass allocated in q. */
void cli_calib_free(PassQuant *q);
/* The compile report's "quantization" object. */
json_t *cli_calib_report_json(const PassQuant *q, const char *method, int ninputs,
                              double seconds);

#endif
