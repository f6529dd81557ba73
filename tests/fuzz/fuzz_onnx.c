/* fuzz_onnx.c: libFuzzer target for the ONNX frontend through the whole compile
 * (fuzz_model.h): each input is a model.onnx. */
#define FUZZ_KIND "onnx"
#define FUZZ_FILE "model.onnx"
#include "fuzz_model.h"
