/* rt_special.h: the programs of a bundle with guards specialised to the sizes of a run
 * (rt_special.c). */
#ifndef RT_SPECIAL_H
#define RT_SPECIAL_H

#include <stdbool.h>
#include <stdint.h>

#include "rt_exec.h"
#include "rt_model.h"

/* One program's code for the sizes of generation gen. */
typedef struct {
    uint32_t gen;            /* generation it was made for (0: never) */
    bool same;               /* the sizes change none of its instructions */
    uint32_t n, cap;         /* instructions of code, and room for */
    SpyInsn *code;           /* the instructions the sizes leave, clamped ones rewritten */
    RtPrep *prep;            /* their plans (rt_prep_code) */
    uint32_t *orig;          /* index of each in the bundle's program */
} RtSpecProg;

/* A session's specialised programs: one slot per program of the bundle. */
typedef struct {
    RtSpecProg *prog;        /* [nprograms] */
    uint32_t nprog;
    uint32_t gen;            /* generation of the current sizes (>= 1) */
} RtSpec;

/* What a core runs for one program: code[0..n) with plans prep; c->dims NULL. */
typedef struct {
    const SpyInsn *code;
    const RtPrep *prep;
    uint32_t n;
    const uint32_t *orig;    /* NULL: the bundle's own program (indices unchanged) */
} RtSpecRun;

bool rt_spec_init(RtSpec *s, const spy_model *m);
void rt_spec_free(RtSpec *s);
void rt_spec_new_sizes(RtSpec *s);
bool rt_spec_get(RtSpec *s, const spy_model *m, uint32_t pi, const int32_t *dims,
                 RtSpecRun *r);

#endif
