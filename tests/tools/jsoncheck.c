/* jsoncheck.c: validates the JSON files the tools write, for tests/tools/part_tools.sh
 * (make check needs no Python).
 *
 *   jsoncheck FILE                 well-formed JSON (exit 0) or not (exit 1, message)
 *   jsoncheck FILE --get PATH      print the value at PATH ("kernels.0.name"; arrays by
 *                                  index, "#" for an array's length); exit 1 if absent
 *   jsoncheck FILE --trace         a Chrome-trace file of spyrun --trace: complete
 *                                  events with names, times and integer pid/tid; a
 *                                  "host" and a "device" process with events; device
 *                                  kernels back to back adding up to otherData.device_us
 *   jsoncheck FILE --report ok|error
 *                                  a spyrec --report file of a compile that succeeded
 *                                  (kernels with nodes, split, tiles, modelled times;
 *                                  DRAM plan; bundle sections) or failed (errors and
 *                                  diagnostics, no bundle)
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *file;

/* Print a failure about the file and exit 1. */
static void fail(const char *what, const char *detail)
{
    fprintf(stderr, "jsoncheck: %s: %s%s%s\n", file, what, detail ? ": " : "", detail ? detail : "");
    exit(1);
}

/* The value at a dotted path ("a.0.b"; "#" = length of the array reached). */
static json_t *get_path(json_t *v, const char *path, json_t **len_holder)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *tok = strtok(buf, "."); tok && v; tok = strtok(NULL, ".")) {
        if (!strcmp(tok, "#") && (json_is_array(v) || json_is_object(v))) {
            *len_holder = json_integer((json_int_t)(json_is_array(v) ? json_array_size(v)
                                                                     : json_object_size(v)));
            return *len_holder;
        }
        char *end;
        long i = strtol(tok, &end, 10);
        v = json_is_array(v) && *end == '\0' ? json_array_get(v, (size_t)i) : json_object_get(v, tok);
    }
    return v;
}

/* A required member of an object, of the given jansson type. */
static json_t *need(json_t *o, const char *key, json_type type, const char *where)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_typeof(v) != type) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s: member '%s' missing or of the wrong type", where, key);
        fail(msg, NULL);
    }
    return v;
}

/* Number (integer or real) as double; fails when v is not a number. */
static double num(json_t *v, const char *what)
{
    if (!json_is_number(v))
        fail("not a number", what);
    return json_number_value(v);
}

/* The pid named `name` by process_name metadata, or -1. */
static long named_pid(json_t *evs, const char *name)
{
    size_t i;
    json_t *e;
    json_array_foreach(evs, i, e)
    {
        json_t *n = json_object_get(e, "name"), *args = json_object_get(e, "args");
        if (json_is_string(n) && !strcmp(json_string_value(n), "process_name") && args &&
            json_is_string(json_object_get(args, "name")) &&
            !strcmp(json_string_value(json_object_get(args, "name")), name))
            return (long)json_integer_value(json_object_get(e, "pid"));
    }
    return -1;
}

/* --trace: structure of a Chrome-trace file. */
static void check_trace(json_t *root)
{
    json_t *evs = need(root, "traceEvents", JSON_ARRAY, "top level");
    long host = named_pid(evs, "host"), dev = named_pid(evs, "device");
    if (host < 0 || dev < 0)
        fail("no process_name metadata for 'host' and 'device'", NULL);
    size_t i, nhost = 0, ndev = 0;
    double sched_sum = 0;
    long sched_tid = -1;
    json_t *e;
    json_array_foreach(evs, i, e)
    {
        json_t *ph = need(e, "ph", JSON_STRING, "event");
        need(e, "name", JSON_STRING, "event");
        if (strcmp(json_string_value(ph), "X") != 0)
            continue;
        double ts = num(json_object_get(e, "ts"), "ts"), dur = num(json_object_get(e, "dur"), "dur");
        json_int_t pid = json_integer_value(need(e, "pid", JSON_INTEGER, "event"));
        json_int_t tid = json_integer_value(need(e, "tid", JSON_INTEGER, "event"));
        if (!(ts >= 0) || !(dur >= 0) || tid < 0)
            fail("an event has a negative time or thread", json_string_value(json_object_get(e, "name")));
        nhost += pid == host;
        ndev += pid == dev;
        if (pid == dev && tid > sched_tid) {            /* the schedule row is the last tid */
            sched_tid = (long)tid;
            sched_sum = 0;
        }
        if (pid == dev && tid == sched_tid)
            sched_sum += dur;
    }
    if (!nhost || !ndev)
        fail("no complete events on the host or on the device", NULL);
    json_t *other = need(root, "otherData", JSON_OBJECT, "top level");
    double total = num(json_object_get(other, "device_us"), "otherData.device_us");
    if (fabs(sched_sum - total) > 1e-3 * total + 0.01) {
        char msg[128];
        snprintf(msg, sizeof msg, "%.3f vs %.3f us", sched_sum, total);
        fail("the device kernels do not add up to the modelled device time", msg);
    }
    printf("trace ok: %zu host events, %zu device events, device %.3f us\n", nhost, ndev, total);
}

/* --report ok: a successful compile's report. */
static void check_report_ok(json_t *root)
{
    json_t *ks = need(root, "kernels", JSON_ARRAY, "top level");
    if (json_array_size(ks) == 0)
        fail("no kernels", NULL);
    size_t i;
    json_t *k;
    json_array_foreach(ks, i, k)
    {
        need(k, "name", JSON_STRING, "kernel");
        if (json_array_size(need(k, "nodes", JSON_ARRAY, "kernel")) == 0)
            fail("a kernel without nodes", json_string_value(json_object_get(k, "name")));
        json_t *split = need(k, "split", JSON_OBJECT, "kernel");
        need(split, "items_per_core", JSON_ARRAY, "kernel split");
        json_int_t lxb = json_integer_value(
            need(need(k, "tiles", JSON_OBJECT, "kernel"), "lx_bytes", JSON_INTEGER, "kernel tiles"));
        if (json_integer_value(need(k, "lx_bytes", JSON_INTEGER, "kernel")) != lxb ||
            num(json_object_get(k, "lx_of_budget"), "lx_of_budget") > 1.0)
            fail("a kernel's LX plan differs from its tiles' or is over the budget",
                 json_string_value(json_object_get(k, "name")));
        json_t *mod = need(k, "modelled", JSON_OBJECT, "kernel");
        if (!(num(json_object_get(mod, "device_us"), "device_us") > 0))
            fail("a kernel without modelled time", json_string_value(json_object_get(k, "name")));
        need(mod, "core_us", JSON_ARRAY, "kernel modelled");
    }
    need(root, "decompositions", JSON_OBJECT, "top level");
    json_t *dram = need(root, "dram", JSON_OBJECT, "top level");
    need(dram, "constant_bytes", JSON_INTEGER, "dram");
    json_int_t arena = json_integer_value(need(dram, "arena_bytes", JSON_INTEGER, "dram"));
    json_int_t bound = json_integer_value(need(dram, "liveness_bound_bytes", JSON_INTEGER, "dram"));
    if (bound > arena || (arena > 0 && bound == 0) ||
        fabs(num(json_object_get(dram, "arena_over_bound"), "arena_over_bound") -
             (bound ? (double)arena / (double)bound : 1.0)) > 1e-6)
        fail("the liveness lower bound is above the arena, missing, or its ratio is wrong", NULL);
    if (json_array_size(need(dram, "values", JSON_ARRAY, "dram")) == 0)
        fail("no values in the DRAM plan", NULL);
    need(need(root, "lx", JSON_OBJECT, "top level"), "max_kernel_bytes", JSON_INTEGER, "lx");
    json_t *b = need(root, "bundle", JSON_OBJECT, "top level");
    if (json_array_size(need(b, "sections", JSON_ARRAY, "bundle")) == 0)
        fail("no bundle sections", NULL);
    printf("report ok: %zu kernels\n", json_array_size(ks));
}

/* --report error: a failed compile's report. */
static void check_report_error(json_t *root)
{
    if (strcmp(json_string_value(need(root, "status", JSON_STRING, "top level")), "error"))
        fail("status is not 'error'", NULL);
    if (json_integer_value(need(root, "errors", JSON_INTEGER, "top level")) < 1 ||
        json_array_size(need(root, "diagnostics", JSON_ARRAY, "top level")) < 1)
        fail("no errors recorded", NULL);
    if (!json_is_null(json_object_get(root, "bundle")))
        fail("a failed compile reports a bundle", NULL);
    printf("report ok: %zu diagnostics\n", json_array_size(json_object_get(root, "diagnostics")));
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: jsoncheck FILE [--get PATH | --trace | --report ok|error]\n");
        return 2;
    }
    file = argv[1];
    json_error_t je;
    json_t *root = json_load_file(file, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        char msg[300];
        snprintf(msg, sizeof msg, "line %d column %d: %s", je.line, je.column, je.text);
        fail("not valid JSON", msg);
    }
    if (argc == 4 && !strcmp(argv[2], "--get")) {
        json_t *len = NULL, *v = get_path(root, argv[3], &len);
        if (!v)
            fail("no such path", argv[3]);
        char *s = json_is_string(v) ? strdup(json_string_value(v))
                                    : json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        printf("%s\n", s ? s : "");
        free(s);
        json_decref(len);
    } else if (argc == 3 && !strcmp(argv[2], "--trace")) {
        check_trace(root);
    } else if (argc == 4 && !strcmp(argv[2], "--report")) {
        if (!strcmp(argv[3], "ok"))
            check_report_ok(root);
        else
            check_report_error(root);
    } else if (argc != 2) {
        fprintf(stderr, "jsoncheck: bad arguments\n");
        return 2;
    }
    json_decref(root);
    return 0;
}
