/* fe_io.c: whole-file reads with a size limit, read-only file mappings, atomic
 * writes, path helpers. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fe_internal.h"

/* snprintf into buf unless buf is NULL or empty. */
void fe_fmt(char *buf, size_t len, const char *fmt, ...)
{
    if (!buf || len == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

/* Read everything from fd into a growing buffer, failing past max bytes. */
static uint8_t *read_fd(int fd, size_t max, size_t hint, size_t *len,
                        char *err, size_t errlen)
{
    size_t cap = hint ? hint + 1 : 65536, n = 0;
    uint8_t *buf = malloc(cap);
    if (!buf) {
        fe_fmt(err, errlen, "out of memory reading %zu bytes", cap);
        return NULL;
    }
    for (;;) {
        if (n == cap) {
            size_t ncap = cap > max / 2 ? max + 1 : cap * 2;
            uint8_t *nb = ncap > cap ? realloc(buf, ncap) : NULL;
            if (!nb) {
                free(buf);
                fe_fmt(err, errlen, "out of memory reading the file");
                return NULL;
            }
            buf = nb, cap = ncap;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            fe_fmt(err, errlen, "read error: %s", strerror(errno));
            free(buf);
            return NULL;
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n > max) {
            fe_fmt(err, errlen, "the file is larger than the limit of %zu bytes", max);
            free(buf);
            return NULL;
        }
    }
    *len = n;
    return buf;
}

/* Open path for reading: not a folder, and (a regular file) at most max_bytes; *st
 * gets its status. -1 with a message (without the path) in err on failure. */
static int open_checked(const char *path, size_t max_bytes, struct stat *st, char *err,
                        size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fe_fmt(err, errlen, "cannot open: %s", strerror(errno));
        return -1;
    }
    if (fstat(fd, st) != 0 || S_ISDIR(st->st_mode)) {
        fe_fmt(err, errlen, "not a readable file");
        close(fd);
        return -1;
    }
    if (S_ISREG(st->st_mode) && (uint64_t)st->st_size > (uint64_t)max_bytes) {
        fe_fmt(err, errlen, "the file is %lld bytes, larger than the limit of %zu bytes",
               (long long)st->st_size, max_bytes);
        close(fd);
        return -1;
    }
    return fd;
}

/* Read a whole file of at most max_bytes; a message (without the path) in err on
 * failure. */
uint8_t *fe_read_file(const char *path, size_t max_bytes, size_t *len, char *err,
                      size_t errlen)
{
    struct stat st;
    int fd = open_checked(path, max_bytes, &st, err, errlen);
    if (fd < 0)
        return NULL;
    size_t hint = S_ISREG(st.st_mode) ? (size_t)st.st_size : 0;
    uint8_t *buf = read_fd(fd, max_bytes, hint, len, err, errlen);
    close(fd);
    return buf;
}

bool fe_bytes_load(const char *path, size_t max_bytes, FeBytes *b, char *err, size_t errlen)
{
    memset(b, 0, sizeof b[0]);
    struct stat st;
    int fd = open_checked(path, max_bytes, &st, err, errlen);
    if (fd < 0)
        return false;
    if (S_ISREG(st.st_mode) && st.st_size > 0) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p != MAP_FAILED) {
            close(fd);
            b->p = p;
            b->len = (size_t)st.st_size;
            b->mapped = true;
            return true;
        }
    }
    b->p = read_fd(fd, max_bytes, S_ISREG(st.st_mode) ? (size_t)st.st_size : 0, &b->len, err,
                   errlen);
    close(fd);
    return b->p != NULL;
}

/* Drops from memory the whole pages of mapped file bytes [p, p + n), once copied out
 * (an unaligned weight inside a model file: fe_onnx_tensor.c): a later read maps them
 * from the file again, so nothing changes but the resident size, which no longer
 * counts each such weight twice. Bytes not of a mapped file are left alone. */
void fe_bytes_release(const FeBytes *b, const void *p, size_t n)
{
    uintptr_t lo = (uintptr_t)p, base = (uintptr_t)b->p;
    if (b->mapped && lo >= base && n <= b->len && lo - base <= b->len - n)
        ir_pages_drop(p, n);
}

void fe_unmap(void *p, size_t len)
{
    munmap(p, len);
}

void fe_bytes_free(FeBytes *b)
{
    if (b->mapped)
        fe_unmap(b->p, b->len);
    else
        free(b->p);
    memset(b, 0, sizeof b[0]);
}

/* Write all of data to fd; false on error (errno set). */
static bool write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w, n -= (size_t)w;
    }
    return true;
}

/* Temp file next to path, then fsync + rename over path. */
bool fe_write_file_atomic(const char *path, const void *data, size_t len, char *err,
                          size_t errlen)
{
    size_t pl = strlen(path);
    char *tmp = malloc(pl + 16);
    if (!tmp) {
        fe_fmt(err, errlen, "%s: out of memory", path);
        return false;
    }
    memcpy(tmp, path, pl);
    memcpy(tmp + pl, ".tmp.XXXXXX", 12);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        fe_fmt(err, errlen, "%s: cannot create a temporary file: %s", path, strerror(errno));
        free(tmp);
        return false;
    }
    /* mkstemp makes the file 0600; give it the usual mode of a written file */
    bool ok = fchmod(fd, 0644) == 0 && write_all(fd, data, len) && fsync(fd) == 0;
    int saved = errno;
    if (close(fd) != 0 && ok) {
        ok = false;
        saved = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = false;
        saved = errno;
    }
    if (!ok) {
        fe_fmt(err, errlen, "%s: write failed: %s", path, strerror(saved));
        unlink(tmp);
    }
    free(tmp);
    return ok;
}

/* malloc'd folder part of path ("." if none, "/" for files at the root). */
char *fe_dirname(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    if (slash == path)
        return strdup("/");
    return strndup(path, (size_t)(slash - path));
}
