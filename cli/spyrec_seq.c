/* spyrec_seq.c: the structure of a sequence or optional input in spyrec's
 * --input-shape (the form spyrun --describe prints for a SequenceProto file):
 *
 *   NAME=N:SHAPE,SHAPE,...   a sequence of N tensors (or an optional sequence holding
 *                            one); SHAPE is D0xD1x... and empty for a scalar
 *   NAME=none                an optional without a value
 */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "frontend/fe.h"

/* Parse one element shape [p, end) ("" = scalar) into t; false if malformed. */
static bool parse_shape(const char *p, const char *end, FeTensor *t)
{
    t->rank = 0;
    while (p < end) {
        char *e;
        long long d = strtoll(p, &e, 10);
        if (e == p || e > end || d < 0 || t->rank == IR_MAX_RANK || (e < end && *e != 'x'))
            return false;
        t->dims[t->rank++] = d;
        p = e < end ? e + 1 : e;
        if (e < end && p == end)
            return false;                  /* a trailing 'x' */
    }
    return true;
}

int cli_seq_parse(const char *text, FeSeq *s)
{
    memset(s, 0, sizeof *s);
    const char *colon = strchr(text, ':');
    if (!strcmp(text, "none")) {
        s->none = true;
        return (s->name = strdup("")) ? 1 : -1;
    }
    if (!colon)
        return 0;
    char *e;
    long n = strtol(text, &e, 10);
    if (e != colon || e == text || n < 0 || n > 65535)
        return -1;
    s->items = calloc((size_t)n + 1, sizeof *s->items);
    s->name = strdup("");
    if (!s->items || !s->name) {
        fe_seq_free(s);
        return -1;
    }
    const char *p = colon + 1;
    for (long i = 0; i < n; i++) {
        const char *end = strchr(p, ',');
        if (!end)
            end = p + strlen(p);
        if ((i + 1 < n) != (*end == ',') || !parse_shape(p, end, &s->items[i])) {
            fe_seq_free(s);
            return -1;
        }
        s->n++;
        p = *end ? end + 1 : end;
    }
    if (*p) {                              /* more shapes than N */
        fe_seq_free(s);
        return -1;
    }
    return 1;
}
