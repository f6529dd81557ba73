/* fuzz_pt2.c: libFuzzer target for the torch.export (.pt2) frontend through the whole
 * compile (fuzz_model.h): each input is a model.pt2, seeded with archives (zip entries,
 * JSON graphs, pickled weights), so that mutations reach the archive reader, the JSON
 * and pickle parsers and the graph they build. */
#define FUZZ_KIND "pt2"
#define FUZZ_FILE "model.pt2"
#include "fuzz_model.h"
