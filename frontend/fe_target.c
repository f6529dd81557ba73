/* fe_target.c: the target description (SpyTarget) from YAML, and the built-in
 * reference target. The YAML is one flat mapping from field names to plain integers
 * (name: a string); see schemas/target_schema.md and schemas/spyre32.yaml. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

#include "fe_internal.h"

#define TARGET_MAX_FILE_BYTES (1u << 20)

/* Integer fields: name, offset in SpyTarget, allowed range, reference value. */
typedef struct {
    const char *name;
    size_t off;
    uint32_t min, max, dflt;
} TargetField;

#define F(n, lo, hi, d) {#n, offsetof(SpyTarget, n), lo, hi, d}
static const TargetField fields[] = {
    F(cores, 1, 1024, 32),
    F(corelets, 1, 64, 2),
    F(lx_bytes, 4096, UINT32_MAX, 2097152),
    F(lx_budget_bytes, 1024, UINT32_MAX, 1677721),
    F(stick_bytes, 16, 4096, 128),
    F(clock_mhz, 1, 100000, 1500),
    F(macs_fp16_per_cycle, 1, 1u << 24, 1024),
    F(fp32_mac_divisor, 1, 64, 4),
    F(int8_mac_multiplier, 1, 64, 2),
    F(vec_lanes_fp32, 1, 4096, 32),
    F(transcendental_factor, 1, 1024, 4),
    F(dram_peak_mbps, 1, UINT32_MAX, 204800),
    F(dram_oneway_mbps, 1, UINT32_MAX, 150000),
    F(dram_mixed_mbps, 1, UINT32_MAX, 105000),
    F(overlap_permille, 0, 1000, 460),
    F(barrier_cycles, 0, 100000000, 1000),
    F(ring_bytes_per_cycle, 1, 1u << 20, 128),
    F(core_window_mib, 1, 1u << 20, 256),
    F(dram_gib, 1, 1u << 20, 112),
};
#undef F
#define NFIELDS (int)(sizeof fields / sizeof fields[0])

/* Address of integer field i inside t. */
static uint32_t *field_ptr(SpyTarget *t, int i)
{
    return (uint32_t *)((char *)t + fields[i].off);
}

/* The reference target (same values as schemas/spyre32.yaml). */
void fe_default_target(SpyTarget *out)
{
    memset(out, 0, sizeof *out);
    strcpy(out->name, "spyre32");
    for (int i = 0; i < NFIELDS; i++)
        *field_ptr(out, i) = fields[i].dflt;
}

/* Parse state: where errors go and which keys were seen (and on which line). */
typedef struct {
    IrDiag *diag;
    SpyTarget *t;
    int line[NFIELDS + 2];          /* 0 = not seen; [NFIELDS] is "name",
                                       [NFIELDS + 1] "accumulate" */
    int errors;
} TgtParse;

/* Report "file: line N: message" (the diag's file is the YAML file meanwhile). */
__attribute__((format(printf, 3, 4))) static void tgt_err(TgtParse *p, int line,
                                                          const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ir_diag_error(p->diag, "line %d: %s", line, msg);
    p->errors++;
}

/* Index of a field by name (NFIELDS for "name", NFIELDS + 1 for "accumulate", -1 if
 * unknown). */
static int field_index(const char *key)
{
    for (int i = 0; i < NFIELDS; i++)
        if (!strcmp(fields[i].name, key))
            return i;
    return !strcmp(key, "name") ? NFIELDS : !strcmp(key, "accumulate") ? NFIELDS + 1 : -1;
}

/* The accumulator of matrix products (key "accumulate"): the card's width is not
 * public, so the one accepted value is fp32, which the code generator and the emulator
 * assume (DLFloat16 operands accumulate in float32). Nothing is stored: a second value
 * would need a field of SpyTarget. */
static void tgt_accumulate(TgtParse *p, const char *s, int line)
{
    if (strcmp(s, "fp32") != 0)
        tgt_err(p, line, "accumulate = '%.40s' is not supported (the one accepted value is fp32)",
                s);
}

/* A plain decimal (or 0x hex) unsigned integer filling the whole scalar. */
static bool parse_uint(const char *s, unsigned long long *v)
{
    if (!s[0] || s[0] == '-' || s[0] == '+' || s[0] == ' ')
        return false;
    errno = 0;
    char *end;
    *v = strtoull(s, &end, (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) ? 16 : 10);
    return !errno && !*end;
}

/* Store one key/value pair. */
static void tgt_set(TgtParse *p, const char *key, const yaml_event_t *val, int line)
{
    int i = field_index(key);
    if (i < 0) {
        tgt_err(p, line, "unknown key '%s'", key);
        return;
    }
    if (p->line[i]) {
        tgt_err(p, line, "key '%s' appears twice (first on line %d)", key, p->line[i]);
        return;
    }
    p->line[i] = line;
    if (val->type != YAML_SCALAR_EVENT) {
        tgt_err(p, line, "the value of '%s' must be %s", key,
                i >= NFIELDS ? "a string" : "a plain integer");
        return;
    }
    const char *s = (const char *)val->data.scalar.value;
    if (i == NFIELDS + 1) {
        tgt_accumulate(p, s, line);
        return;
    }
    if (i == NFIELDS) {
        if (!s[0] || val->data.scalar.length >= sizeof p->t->name)
            tgt_err(p, line, "name '%.40s' must have 1 to %zu characters", s,
                    sizeof p->t->name - 1);
        else
            strncpy(p->t->name, s, sizeof p->t->name - 1);
        return;
    }
    unsigned long long v;
    if (val->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || !parse_uint(s, &v)) {
        tgt_err(p, line, "the value of '%s' must be a plain non-negative integer", key);
        return;
    }
    if (v < fields[i].min || v > fields[i].max) {
        tgt_err(p, line, "%s = %llu is out of range [%u, %u]", key, v, fields[i].min,
                fields[i].max);
        return;
    }
    *field_ptr(p->t, i) = (uint32_t)v;
}

/* Relations between fields, and keys that never appeared. */
static void tgt_finish(TgtParse *p, int end_line)
{
    SpyTarget *t = p->t;
    for (int i = 0; i <= NFIELDS + 1; i++)
        if (!p->line[i])
            tgt_err(p, end_line, "missing key '%s'",
                    i < NFIELDS ? fields[i].name : i == NFIELDS ? "name" : "accumulate");
    if (p->errors)
        return;
    int lb = p->line[field_index("lx_budget_bytes")];
    int sb = p->line[field_index("stick_bytes")];
    int lo = p->line[field_index("dram_oneway_mbps")];
    int lm = p->line[field_index("dram_mixed_mbps")];
    if (t->lx_budget_bytes > t->lx_bytes)
        tgt_err(p, lb, "lx_budget_bytes (%u) exceeds lx_bytes (%u)", t->lx_budget_bytes,
                t->lx_bytes);
    if (t->stick_bytes & (t->stick_bytes - 1))
        tgt_err(p, sb, "stick_bytes (%u) must be a power of two", t->stick_bytes);
    if (t->stick_bytes > t->lx_budget_bytes)
        tgt_err(p, sb, "stick_bytes (%u) exceeds lx_budget_bytes (%u)", t->stick_bytes,
                t->lx_budget_bytes);
    if (t->dram_oneway_mbps > t->dram_peak_mbps)
        tgt_err(p, lo, "dram_oneway_mbps (%u) exceeds dram_peak_mbps (%u)",
                t->dram_oneway_mbps, t->dram_peak_mbps);
    if (t->dram_mixed_mbps > t->dram_peak_mbps)
        tgt_err(p, lm, "dram_mixed_mbps (%u) exceeds dram_peak_mbps (%u)", t->dram_mixed_mbps,
                t->dram_peak_mbps);
}

/* Next event; false (reported) on a syntax error. */
static bool next_event(yaml_parser_t *ps, yaml_event_t *ev, TgtParse *p)
{
    if (yaml_parser_parse(ps, ev))
        return true;
    tgt_err(p, (int)ps->problem_mark.line + 1, "YAML syntax error: %s",
            ps->problem ? ps->problem : "unknown");
    return false;
}

/* Walk the event stream: one document holding one flat mapping. */
static void tgt_walk(yaml_parser_t *ps, TgtParse *p)
{
    yaml_event_t ev, val;
    bool in_map = false;
    for (;;) {
        if (!next_event(ps, &ev, p))
            return;
        int line = (int)ev.start_mark.line + 1;
        yaml_event_type_t ty = ev.type;
        if (ty == YAML_STREAM_END_EVENT) {
            yaml_event_delete(&ev);
            if (!in_map)
                tgt_err(p, line, "expected a mapping of target fields");
            return;
        }
        if (ty == YAML_MAPPING_START_EVENT && !in_map) {
            in_map = true;
        } else if (ty == YAML_MAPPING_END_EVENT) {
            tgt_finish(p, line);
        } else if (ty == YAML_SCALAR_EVENT && in_map) {
            if (!next_event(ps, &val, p)) {
                yaml_event_delete(&ev);
                return;
            }
            tgt_set(p, (const char *)ev.data.scalar.value, &val, line);
            if (val.type == YAML_MAPPING_START_EVENT || val.type == YAML_SEQUENCE_START_EVENT) {
                yaml_event_delete(&val);
                yaml_event_delete(&ev);
                return;                    /* nested structure: already reported */
            }
            yaml_event_delete(&val);
        } else if (ty != YAML_STREAM_START_EVENT && ty != YAML_DOCUMENT_START_EVENT &&
                   ty != YAML_DOCUMENT_END_EVENT) {
            tgt_err(p, line, "expected a flat mapping of field names to integers");
            yaml_event_delete(&ev);
            return;
        }
        yaml_event_delete(&ev);
    }
}

/* Target from a YAML file; "file: line N: ..." errors in diag. */
bool fe_load_target(const char *path, SpyTarget *out, IrDiag *diag)
{
    const char *saved = diag->file;
    int before = diag->nerrors;
    diag->file = path;
    SpyTarget t;
    memset(&t, 0, sizeof t);
    TgtParse p = {.diag = diag, .t = &t};
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f) {
        ir_diag_error(diag, "cannot open: %s", strerror(errno));
    } else if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) ||
               st.st_size > (off_t)TARGET_MAX_FILE_BYTES) {
        ir_diag_error(diag, "not a regular file of at most %u bytes", TARGET_MAX_FILE_BYTES);
    } else {
        yaml_parser_t ps;
        if (!yaml_parser_initialize(&ps)) {
            ir_diag_error(diag, "out of memory");
        } else {
            yaml_parser_set_input_file(&ps, f);
            tgt_walk(&ps, &p);
            yaml_parser_delete(&ps);
        }
    }
    if (f)
        fclose(f);
    diag->file = saved;
    if (diag->nerrors > before)
        return false;
    *out = t;
    return true;
}
