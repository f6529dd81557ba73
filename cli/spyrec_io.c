/* spyrec_io.c: the files spyrec reads and writes itself: .ir text models, and every
 * output (bundle, IR, assembly, graph, dependency file, report), written atomically:
 * a temporary file in the output's folder, fsync, rename. A failed compile, an
 * interrupt (SIGINT, SIGTERM, SIGHUP) or an out-of-memory exit never leaves a partial
 * file behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "spyrt.h"

#define MAX_IR_TEXT ((size_t)256 << 20)   /* largest .ir text file accepted */

/* The temporary file being written, seen by the signal handler. */
static volatile sig_atomic_t have_tmp;
static char tmp_path[4096];

/* Remove the temporary output file on SIGINT/SIGTERM/SIGHUP, then die of the signal. */
static void on_signal(int sig)
{
    if (have_tmp)
        unlink(tmp_path);
    signal(sig, SIG_DFL);
    raise(sig);
}

void cli_io_signals(void)
{
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
}

void cli_io_abandon(void)
{
    if (have_tmp)
        unlink(tmp_path);
    have_tmp = 0;
}

/* The last path component of p. */
static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* Read a whole text file into a NUL-terminated malloc'd buffer, or NULL (the reason
 * recorded in diag). */
char *cli_read_text(const char *path, IrDiag *diag)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        ir_diag_error(diag, "cannot open: %s", strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n + 1 >= cap) {
            char *p = cap < MAX_IR_TEXT ? realloc(buf, cap * 2) : NULL;
            if (!p) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = p;
            cap *= 2;
        }
        size_t r = fread(buf + n, 1, cap - n - 1, f);
        n += r;
        if (r == 0)
            break;
    }
    if (!buf || ferror(f)) {
        if (!buf)
            ir_diag_error(diag, "larger than %zu MiB or out of memory", MAX_IR_TEXT >> 20);
        else
            ir_diag_error(diag, "cannot read: %s", strerror(errno));
        free(buf);
        fclose(f);
        return NULL;
    }
    fclose(f);
    buf[n] = '\0';
    return buf;
}

/* Write all of buf to fd; false with errno set on failure. */
static bool write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t w = write(fd, p, len > (1u << 30) ? (1u << 30) : len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        len -= (size_t)w;
    }
    return true;
}

int cli_atomic_open(const char *path)
{
    cli_progress_clear();
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path) : 1;
    const char *dir = slash ? path : ".";
    if (slash == path)
        dirlen = 1;                        /* "/x.sbin": the root folder */
    if (snprintf(tmp_path, sizeof tmp_path, "%.*s/.%s.tmpXXXXXX", dirlen, dir,
                 base_name(path)) >= (int)sizeof tmp_path) {
        fprintf(stderr, "spyrec: %s: path too long\n", path);
        return -1;
    }
    int fd = mkstemp(tmp_path);
    if (fd < 0) {
        fprintf(stderr, "spyrec: %s: cannot create a temporary file next to it: %s\n", path,
                strerror(errno));
        return -1;
    }
    have_tmp = 1;
    mode_t mask = umask(0);
    umask(mask);
    if (fchmod(fd, 0666 & ~mask) != 0) {
        cli_atomic_close(path, fd, errno);
        return -1;
    }
    return fd;
}

bool cli_atomic_close(const char *path, int fd, int err)
{
    bool ok = err == 0 && fsync(fd) == 0;
    int saved = err ? err : errno;
    if (close(fd) != 0 && ok) {
        ok = false;
        saved = errno;
    }
    if (ok && rename(tmp_path, path) != 0) {
        ok = false;
        saved = errno;
    }
    if (!ok) {
        unlink(tmp_path);
        fprintf(stderr, "spyrec: %s: cannot write: %s\n", path, strerror(saved));
    }
    have_tmp = 0;
    return ok;
}

/* Write the parts of parts[] to path atomically: a temporary file in the same folder,
 * fsync, rename. On failure the temporary file is removed and a message printed. "-"
 * is stdout. */
bool cli_write_atomic_parts(const char *path, const CliPart *parts, int nparts)
{
    cli_progress_clear();
    if (!strcmp(path, "-")) {
        bool ok = true;
        for (int i = 0; ok && i < nparts; i++)
            ok = fwrite(parts[i].data, 1, parts[i].len, stdout) == parts[i].len;
        if (!ok || fflush(stdout) != 0) {
            fprintf(stderr, "spyrec: cannot write to standard output: %s\n", strerror(errno));
            return false;
        }
        return true;
    }
    int fd = cli_atomic_open(path);
    if (fd < 0)
        return false;
    bool ok = true;
    for (int i = 0; ok && i < nparts; i++)
        ok = write_all(fd, parts[i].data, parts[i].len);
    return cli_atomic_close(path, fd, ok ? 0 : errno ? errno : EIO);
}

/* Direct I/O (O_DIRECT) needs buffers, offsets and lengths aligned to the device's
 * logical block; a page is a multiple of every common one. */
#define DIRECT_ALIGN 4096

/* Write the whole pages at the start of buf (page aligned) to fd, at its offset 0,
 * with direct I/O: from the caller's pages (a mapped file's page cache) to the device,
 * without a copy into fd's page cache. Returns the bytes written, 0 when the file
 * system refuses direct I/O; the caller writes the rest in the usual way (and any
 * error shows there). */
static size_t write_direct(int fd, const uint8_t *buf, size_t len)
{
    size_t whole = len / DIRECT_ALIGN * DIRECT_ALIGN, done = 0;
    int fl = fcntl(fd, F_GETFL);
    if ((uintptr_t)buf % DIRECT_ALIGN || whole == 0 || fl < 0 ||
        fcntl(fd, F_SETFL, fl | O_DIRECT) != 0)
        return 0;
    while (done < whole) {
        size_t k = whole - done > ((size_t)1 << 30) ? (size_t)1 << 30 : whole - done;
        ssize_t w = write(fd, buf + done, k);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0 || (size_t)w % DIRECT_ALIGN)   /* refused (EINVAL) or odd: go on buffered */
            break;
        done += (size_t)w;
    }
    fcntl(fd, F_SETFL, fl);
    if (lseek(fd, (off_t)done, SEEK_SET) != (off_t)done)
        return 0;
    return done;
}

/* A CRC computed by a second thread. */
typedef struct {
    const void *buf;
    size_t len;
    uint32_t crc;
} CrcJob;

/* Thread body: the CRC32C of job->buf. */
static void *crc_job(void *arg)
{
    CrcJob *j = arg;
    j->crc = spy_crc32c(0, j->buf, j->len);
    return NULL;
}

bool cli_write_atomic_checked(const char *path, const void *buf, size_t len, uint32_t crc,
                              bool *damaged)
{
    CrcJob job = {buf, len, 0};
    *damaged = false;
    if (!strcmp(path, "-")) {              /* nothing can be taken back: check first */
        crc_job(&job);
        *damaged = job.crc != crc;
        return *damaged || cli_write_atomic(path, buf, len);
    }
    int fd = cli_atomic_open(path);
    if (fd < 0)
        return false;
    pthread_t th;
    bool threaded = pthread_create(&th, NULL, crc_job, &job) == 0;
    size_t done = write_direct(fd, buf, len);
    bool ok = write_all(fd, (const uint8_t *)buf + done, len - done);
    int err = ok ? 0 : errno ? errno : EIO;
    if (threaded)
        pthread_join(th, NULL);
    else
        crc_job(&job);
    if (job.crc != crc) {                  /* never renamed: path is as it was */
        *damaged = true;
        close(fd);
        cli_io_abandon();
        return true;
    }
    return cli_atomic_close(path, fd, err);
}

/* Write buf to path atomically (see cli_write_atomic_parts). */
bool cli_write_atomic(const char *path, const void *buf, size_t len)
{
    CliPart part = {buf, len};
    return cli_write_atomic_parts(path, &part, 1);
}
