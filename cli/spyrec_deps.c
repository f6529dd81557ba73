/* spyrec_deps.c: make dependency files for spyrec -MD -MF (like gcc's), and the
 * absolute path of the running compiler, which every bundle depends on.
 *
 *   out/model.sbin: \
 *    models/m/model.onnx \
 *    models/m/weights.bin \
 *    /usr/local/bin/spyrec
 *   models/m/model.onnx:
 *   ...
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

/* A growing text buffer; NULL data after an allocation failure. */
typedef struct {
    char *data;
    size_t len, cap;
    bool oom;
} Buf;

/* Append n bytes of s. */
static void buf_add(Buf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->data, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->data = p;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

/* Append a file name escaped for a make rule: blanks and '#' get a backslash, '$'
 * doubles (what gcc writes). */
static void buf_name(Buf *b, const char *s)
{
    for (; *s; s++) {
        if (*s == ' ' || *s == '\t' || *s == '#')
            buf_add(b, "\\", 1);
        else if (*s == '$')
            buf_add(b, "$", 1);
        buf_add(b, s, 1);
    }
}

char *cli_deps_text(const char *target, const char *const *prereqs, int n)
{
    Buf b = {0};
    buf_name(&b, target);
    buf_add(&b, ":", 1);
    for (int i = 0; i < n; i++) {
        buf_add(&b, " \\\n ", 4);
        buf_name(&b, prereqs[i]);
    }
    buf_add(&b, "\n", 1);
    for (int i = 0; i < n; i++) {
        buf_add(&b, "\n", 1);
        buf_name(&b, prereqs[i]);
        buf_add(&b, ":\n", 2);
    }
    if (b.oom) {
        free(b.data);
        return NULL;
    }
    return b.data;
}

/* realpath of dir/name if it is an executable file, else NULL. */
static char *exe_in(const char *dir, size_t dirlen, const char *name)
{
    size_t n = dirlen + strlen(name) + 2;
    char *p = malloc(n);
    if (!p)
        return NULL;
    snprintf(p, n, "%.*s/%s", (int)dirlen, dirlen ? dir : ".", name);
    char *r = access(p, X_OK) == 0 ? realpath(p, NULL) : NULL;
    free(p);
    return r;
}

char *cli_self_path(const char *argv0)
{
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n > 0) {
        buf[n] = '\0';
        return strdup(buf);
    }
    if (!argv0 || !*argv0)
        return NULL;
    if (strchr(argv0, '/'))
        return realpath(argv0, NULL);
    const char *path = getenv("PATH");
    for (const char *p = path; p && *p;) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        char *r = exe_in(p, len, argv0);
        if (r)
            return r;
        p += len + (colon != NULL);
    }
    return NULL;
}

char *cli_deps_default_path(const char *out)
{
    const char *slash = strrchr(out, '/');
    const char *dot = strrchr(slash ? slash + 1 : out, '.');
    size_t stem = dot && dot != (slash ? slash + 1 : out) ? (size_t)(dot - out) : strlen(out);
    char *p = malloc(stem + 3);
    if (p) {
        memcpy(p, out, stem);
        memcpy(p + stem, ".d", 3);
    }
    return p;
}
