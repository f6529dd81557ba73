/* rt_special.c: the programs of a bundle with guards (sbin.md "Guards") specialised to
 * the sizes of a run.
 *
 * At sizes below the bounds a guard skips an instruction or clamps its rows. Decided
 * per instruction while a program runs (rt_exec.c), this left every run of a program
 * that any guard touched to the interpreter's slowest path: its instructions planned
 * alone, one by one, at every run (a clamped attention chain of gpt2_tiny's dynamic
 * bundle ran 13x slower on the host than the same chain of a static compile). Here a
 * program is instead rewritten once per tuple of sizes, the first time it runs at
 * them: the instructions the sizes skip are dropped, those they clamp written with
 * the rows that run, and the result planned as a whole (rt_prep_code), so that the
 * rewritten program takes the merged copies, fused chains and direct paths a static
 * compile of those sizes would. It runs without guards (RtCore.dims NULL): each
 * instruction does what it did before, so the results are the same bits. A program
 * the sizes leave as written runs the bundle's own code and plans.
 *
 * A slot belongs to one program, which one thread runs in a run, so a slot is built
 * and read by that thread only; a new tuple of sizes (rt_spec_new_sizes, before a run
 * starts) makes every slot stale. Out of memory, rt_spec_get fails and the caller runs
 * the program through its guards.
 */
#include <stdlib.h>
#include <string.h>

#include "rt_special.h"

/* Allocates s's slots for m's programs, at generation 1. */
bool rt_spec_init(RtSpec *s, const spy_model *m) {
    s->prog = calloc(m->nprograms + 1, sizeof *s->prog);
    s->nprog = m->nprograms;
    s->gen = 1;
    return s->prog != NULL;
}

/* Frees s's buffers (s itself is the caller's). */
void rt_spec_free(RtSpec *s) {
    for (uint32_t i = 0; s->prog && i < s->nprog; i++) {
        free(s->prog[i].code);
        free(s->prog[i].prep);
        free(s->prog[i].orig);
    }
    free(s->prog);
    s->prog = NULL;
}

/* The sizes changed: every slot is stale. */
void rt_spec_new_sizes(RtSpec *s) {
    if (++s->gen == 0) {                 /* wrapped: no slot may look current */
        for (uint32_t i = 0; i < s->nprog; i++)
            s->prog[i].gen = 0;
        s->gen = 1;
    }
}

/* Room for n instructions in slot p. */
static bool reserve(RtSpecProg *p, uint32_t n) {
    if (n <= p->cap)
        return true;
    SpyInsn *code = realloc(p->code, (size_t)n * sizeof *code);
    if (code)
        p->code = code;
    RtPrep *prep = realloc(p->prep, (size_t)n * sizeof *prep);
    if (prep)
        p->prep = prep;
    uint32_t *orig = realloc(p->orig, (size_t)n * sizeof *orig);
    if (orig)
        p->orig = orig;
    if (!code || !prep || !orig)
        return false;
    p->cap = n;
    return true;
}

/* Whether the sizes dims leave every instruction of code[0..n) as written. */
static bool unchanged(const SpyInsn *code, uint32_t n, const int32_t *dims) {
    for (uint32_t i = 0; i < n; i++)
        if (spy_guard_rows(&code[i], dims) != UINT32_MAX)
            return false;
    return true;
}

/* Slot p for the program code[0..n) at the sizes dims; false when out of memory. */
static bool build(RtSpecProg *p, const SpyInsn *code, uint32_t n, const int32_t *dims) {
    p->same = unchanged(code, n, dims);
    if (p->same)
        return true;
    if (!reserve(p, n))
        return false;
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t rows = spy_guard_rows(&code[i], dims);
        if (rows == 0)
            continue;
        p->code[k] = code[i];
        if (rows != UINT32_MAX)
            spy_insn_set_rows(&p->code[k], rows);
        memset(p->code[k].raw + ISA_GUARD_OFF, 0, sizeof(SpyGuard)); /* runs as written */
        p->orig[k++] = i;
    }
    rt_prep_code(p->code, k, p->prep);
    p->n = k;
    return true;
}

/* What program pi of m (an index into m->programs) runs at the sizes dims of the
 * current generation, into *r: built at its first run at these sizes. False when out
 * of memory (run the bundle's program through its guards instead). */
bool rt_spec_get(RtSpec *s, const spy_model *m, uint32_t pi, const int32_t *dims,
                 RtSpecRun *r) {
    RtSpecProg *p = &s->prog[pi];
    const SpyProgramDesc *pd = &m->programs[pi];
    if (p->gen != s->gen) {
        if (!build(p, m->code + pd->first_insn, pd->ninsns, dims))
            return false;
        p->gen = s->gen;
    }
    if (p->same)
        *r = (RtSpecRun){m->code + pd->first_insn, m->prep + pd->first_insn, pd->ninsns, NULL};
    else
        *r = (RtSpecRun){p->code, p->prep, p->n, p->orig};
    return true;
}
