/* spyrun_trace.c: spyrun --trace FILE.json, a Chrome-trace / Perfetto file of the
 * last run (open it in https://ui.perfetto.dev or chrome://tracing).
 *
 *   {"traceEvents":[
 *   {"name":"process_name","ph":"M","pid":1,"args":{"name":"host"}},
 *   {"name":"k0_pad_conv","cat":"host","ph":"X","ts":3.1,"dur":20.4,"pid":1,"tid":0,...},
 *   {"name":"k0_pad_conv","cat":"device","ph":"X","ts":0,"dur":1.07,"pid":2,"tid":5,...},
 *   ...],
 *   "displayTimeUnit":"ns","otherData":{...}}
 *
 * Process 1 "host": one complete ("X") event per kernel per host thread that ran some
 * of its core programs (times measured in the run). Process 2 "device": the modelled
 * timeline, kernels back to back in schedule order, one event per busy core
 * (tid = core, compute + DRAM - overlap) and one per kernel on the row "schedule"
 * (tid = cores: slowest core + barrier). Times are microseconds, as the format wants.
 * One event per line, so that the file also reads well as text.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

enum { PID_HOST = 1, PID_DEVICE = 2 };

/* Microseconds rounded to nanoseconds (keeps the file short and exact to read). */
static double to_ns(double us)
{
    return round(us * 1e3) / 1e3;
}

/* Growing text of the trace; a failed allocation sets oom. */
typedef struct {
    char *data;
    size_t len, cap;
    bool oom;
    bool first;                    /* no event written yet */
} Text;

/* Append s. */
static void text_add(Text *t, const char *s)
{
    size_t n = strlen(s);
    if (t->oom)
        return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 1 << 16;
        while (cap < t->len + n + 1)
            cap *= 2;
        char *p = realloc(t->data, cap);
        if (!p) {
            t->oom = true;
            return;
        }
        t->data = p;
        t->cap = cap;
    }
    memcpy(t->data + t->len, s, n + 1);
    t->len += n;
}

/* Append one event (a new reference, consumed) as a compact line. */
static void event(Text *t, json_t *ev)
{
    char *s = ev ? json_dumps(ev, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;
    json_decref(ev);
    if (!s) {
        t->oom = true;
        return;
    }
    text_add(t, t->first ? "\n" : ",\n");
    text_add(t, s);
    t->first = false;
    free(s);
}

/* Metadata event naming a process or a thread. */
static void name_event(Text *t, const char *what, int pid, int tid, const char *name)
{
    json_t *ev = json_pack("{s:s,s:s,s:i,s:{s:s}}", "name", what, "ph", "M", "pid", pid, "args",
                           "name", name);
    if (tid >= 0)
        json_object_set_new(ev, "tid", json_integer(tid));
    event(t, ev);
}

/* Host timeline: the session's per-thread spans of each schedule entry. */
static bool host_events(Text *t, const spy_model *m, const spy_session *s, char *err,
                        size_t errlen)
{
    int n = spy_session_host_events(s, NULL, 0);
    if (n < 0) {
        snprintf(err, errlen, "the session does not record a host timeline");
        return false;
    }
    spy_host_event *ev = calloc((size_t)n + 1, sizeof *ev);
    if (!ev) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    n = spy_session_host_events(s, ev, n);
    int maxth = -1;
    for (int i = 0; i < n; i++) {
        spy_kernel_profile p;
        spy_model_kernel_profile(m, ev[i].kernel, &p);
        event(t, json_pack("{s:s,s:s,s:s,s:f,s:f,s:i,s:i,s:{s:i,s:i,s:i}}", "name",
                           p.name ? p.name : "?", "cat", "host", "ph", "X", "ts", to_ns(ev[i].start_us),
                           "dur", to_ns(ev[i].end_us - ev[i].start_us), "pid", PID_HOST, "tid",
                           ev[i].thread, "args", "kernel", ev[i].kernel, "sched_pos",
                           ev[i].sched_pos, "core_programs", ev[i].programs));
        if (ev[i].thread > maxth)
            maxth = ev[i].thread;
    }
    for (int th = 0; th <= maxth; th++) {
        char name[48];
        snprintf(name, sizeof name, th ? "host thread %d" : "host thread 0 (caller)", th);
        name_event(t, "thread_name", PID_HOST, th, name);
    }
    free(ev);
    return true;
}

/* Device timeline: modelled per-core times of every schedule entry, back to back. */
static bool device_events(Text *t, const spy_model *m, char *err, size_t errlen)
{
    int nk = spy_model_num_kernels(m), ns = spy_model_schedule(m, NULL, 0);
    int cores = nk > 0 ? spy_model_kernel_core_us(m, 0, NULL, 0) : 0;
    int *sched = calloc((size_t)(ns > 0 ? ns : 0) + 1, sizeof *sched);
    int *count = calloc((size_t)nk + 1, sizeof *count);
    double *core_us = calloc((size_t)(cores > 0 ? cores : 0) + 1, sizeof *core_us);
    if (!sched || !count || !core_us || ns < 0) {
        snprintf(err, errlen, "out of memory");
        free(sched), free(count), free(core_us);
        return false;
    }
    spy_model_schedule(m, sched, ns);
    for (int i = 0; i < ns; i++)
        count[sched[i]]++;
    double at = 0;
    for (int pos = 0; pos < ns; pos++) {
        int k = sched[pos];
        spy_kernel_profile p;
        spy_model_kernel_profile(m, k, &p);
        double dur = count[k] ? p.device_us / count[k] : 0;   /* one execution */
        spy_model_kernel_core_us(m, k, core_us, cores);
        for (int c = 0; c < cores; c++)
            if (core_us[c] > 0)
                event(t, json_pack("{s:s,s:s,s:s,s:f,s:f,s:i,s:i,s:{s:i,s:i}}", "name", p.name,
                                   "cat", "device", "ph", "X", "ts", to_ns(at), "dur", to_ns(core_us[c]),
                                   "pid", PID_DEVICE, "tid", c, "args", "kernel", k,
                                   "sched_pos", pos));
        event(t, json_pack("{s:s,s:s,s:s,s:f,s:f,s:i,s:i,s:{s:i,s:i,s:f}}", "name", p.name, "cat",
                           "device", "ph", "X", "ts", to_ns(at), "dur", to_ns(dur), "pid", PID_DEVICE, "tid",
                           cores, "args", "kernel", k, "sched_pos", pos, "roofline_us",
                           to_ns(count[k] ? p.roofline_us / count[k] : 0.0)));
        at += dur;
    }
    for (int c = 0; c < cores; c++) {
        char name[32];
        snprintf(name, sizeof name, "core %d", c);
        name_event(t, "thread_name", PID_DEVICE, c, name);
    }
    name_event(t, "thread_name", PID_DEVICE, cores, "schedule (slowest core + barrier)");
    free(sched), free(count), free(core_us);
    return true;
}

/* Write text to path through a temporary file in the same folder and a rename. */
static bool write_atomic(const char *path, const char *text, size_t len, char *err,
                         size_t errlen)
{
    size_t n = strlen(path) + 16;
    char *tmp = malloc(n);
    if (!tmp) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    snprintf(tmp, n, "%s.tmpXXXXXX", path);
    int fd = mkstemp(tmp);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    bool ok = f && fwrite(text, 1, len, f) == len;
    ok = f && fclose(f) == 0 && ok;
    if (!f && fd >= 0)
        close(fd);
    if (ok)
        ok = rename(tmp, path) == 0;
    if (!ok) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        if (fd >= 0)
            unlink(tmp);
    }
    free(tmp);
    return ok;
}

bool cli_trace_write(const char *path, const spy_model *m, const spy_session *s,
                     const char *bundle_name, char *err, size_t errlen)
{
    Text t = {.first = true};
    text_add(&t, "{\"traceEvents\":[");
    name_event(&t, "process_name", PID_HOST, -1, "host");
    name_event(&t, "process_name", PID_DEVICE, -1, "device");
    bool ok = host_events(&t, m, s, err, errlen) && device_events(&t, m, err, errlen);
    json_t *other = json_pack("{s:s,s:s,s:f,s:i}", "bundle", bundle_name, "runtime", spy_version(),
                              "device_us", spy_model_device_us(m), "kernels",
                              spy_model_num_kernels(m));
    char *os = other ? json_dumps(other, JSON_COMPACT) : NULL;
    json_decref(other);
    text_add(&t, "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":");
    text_add(&t, os ? os : "{}");
    text_add(&t, "}\n");
    free(os);
    if (ok && t.oom) {
        snprintf(err, errlen, "out of memory");
        ok = false;
    }
    if (ok)
        ok = write_atomic(path, t.data, t.len, err, errlen);
    free(t.data);
    return ok;
}
