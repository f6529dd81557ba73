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
/* --precision=fp8: the same for the fp8 pass's bias correction (g lowered as far as
 * fp16; per weight the mean of its product's input) into c. */
bool cli_fp8_calibrate(IrGraph *g, const Args *a, const SpyTarget *target, PassFp8Calib *c,
                       double *seconds);
void cli_fp8_calib_free(PassFp8Calib *c);
/* The compile report's "quantization" object of an fp8 compile with --calibrate. */
json_t *cli_fp8_calib_report_json(const PassFp8Calib *c, int ninputs, double seconds);
/* Free what cli_calibrate and the quantize pass allocated in q. */
void cli_calib_free(PassQuant *q);
/* The compile report's "quantization" object. */
json_t *cli_calib_report_json(const PassQuant *q, const char *method, int ninputs,
                              double seconds);

#endif
