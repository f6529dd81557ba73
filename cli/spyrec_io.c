/* spyrec_io.c: the files spyrec reads and writes itself: .ir text models, and every
 * output (bundle, IR, assembly, graph, dependency file, report), written atomically:
 * a temporary file in the output's folder, renamed over the output once complete. A
 * failed compile, an interrupt (SIGINT, SIGTERM, SIGHUP) or an out-of-memory exit never
 * leaves a partial file behind. The file is fsynced before the rename only on request
 * (--fsync, cli_io_durable): like cc and ld, spyrec leaves durability across a power
 * loss to the file system by default, since an fsync makes every compile wait for the
 * disk to flush its cache (about 0.4 s for a 400 MB bundle on a virtual disk), which a
 * make -j batch of many models pays once per model.
 *
 * The file an output replaces is freed by a thread, so that freeing its blocks (with a
 * discard of each on a file system mounted with discard: about 1.3 s a GB on a virtual
 * disk) overlaps other work; cli_io_finish waits for it. It must be waited for
 * somewhere: the kernel frees the blocks at the last close, and a process's exit closes
 * its files and finishes that work before its parent's wait returns; handing the
 * descriptor to a detached process would only let spyrec return while its disk space is
 * still being freed. A bundle's old file goes when code generation starts: reused in
 * place where no one else can see it (spyrec_reuse.c), else removed then
 * (cli_io_release_early: held open, unlinked, closed by the thread), as ld removes its
 * output before it writes, so that the freeing overlaps the writing of the new one.
 * Any other output's old file is held open across the rename and closed by the
 * thread.
 *
 * A compile-cache hit may give the output the cache entry's file itself, by a hard link
 * (cli_link_checked; the temporary name is then that link, and an output that already
 * is the entry's file is left as it is): no byte is written and no block freed. The
 * cache's entries are replaced by rename, never written in place, and their CRC is
 * checked on every hit, so the link is as safe as a copy as long as nobody writes the
 * output in place (spyrec_cache.c says what a user must know).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/fs.h>

#include "cli/cli.h"
#include "spyrt.h"

#define MAX_IR_TEXT ((size_t)256 << 20)   /* largest .ir text file accepted */

/* The temporary file being written, seen by the signal handler; link_path: the name
 * a hard link is made under before it replaces the temporary file (link_temp). */
static volatile sig_atomic_t have_tmp, have_link;
static char tmp_path[4096], link_path[4096 + 2];

/* --fsync: each output reaches the disk before it takes its name. */
static bool durable;

void cli_io_durable(bool on)
{
    durable = on;
}

/* Remove the temporary output file on SIGINT/SIGTERM/SIGHUP, then die of the signal. */
static void on_signal(int sig)
{
    if (have_tmp)
        unlink(tmp_path);
    if (have_link)
        unlink(link_path);
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

bool cli_write_all(int fd, const void *buf, size_t len)
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

const char *cli_atomic_tmp_path(void)
{
    return tmp_path;
}

/* The closing of a replaced output (release_old), when a thread does it. */
static pthread_t releaser;
static bool releasing;

/* Thread body: close the replaced output's descriptor, its last reference. */
static void *close_job(void *arg)
{
    close((int)(intptr_t)arg);
    return NULL;
}

/* A read-only descriptor of the regular file path names now (the output about to be
 * replaced), or -1. */
static int hold_old(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* Close old (hold_old), the replaced output, in a thread when none is busy with one,
 * else here. */
static void release_old(int old)
{
    if (old < 0)
        return;
    if (releasing || pthread_create(&releaser, NULL, close_job, (void *)(intptr_t)old) != 0)
        close(old);
    else
        releasing = true;
}

void cli_io_release_early(const char *path)
{
    int old = hold_old(path);
    struct stat st, held;
    if (old < 0)
        return;
    /* unlink only the file held (path may have been replaced since hold_old) */
    if (lstat(path, &st) != 0 || fstat(old, &held) != 0 || st.st_ino != held.st_ino ||
        st.st_dev != held.st_dev || unlink(path) != 0) {
        close(old);
        return;
    }
    release_old(old);
}

void cli_io_finish(void)
{
    if (releasing)
        pthread_join(releaser, NULL);
    releasing = false;
}

bool cli_atomic_close(const char *path, int fd, int err)
{
    bool ok = err == 0 && (!durable || fsync(fd) == 0);
    int saved = err ? err : errno;
    if (close(fd) != 0 && ok) {
        ok = false;
        saved = errno;
    }
    int old = ok ? hold_old(path) : -1;
    if (ok && rename(tmp_path, path) != 0) {
        ok = false;
        saved = errno;
    }
    release_old(old);
    if (!ok) {
        unlink(tmp_path);
        fprintf(stderr, "spyrec: %s: cannot write: %s\n", path, strerror(saved));
    }
    have_tmp = 0;
    return ok;
}

/* Write the parts of parts[] to path atomically: a temporary file in the same folder,
 * renamed over path (fsynced first with --fsync). On failure the temporary file is
 * removed and a message printed. "-" is stdout. */
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
        ok = cli_write_all(fd, parts[i].data, parts[i].len);
    return cli_atomic_close(path, fd, ok ? 0 : errno ? errno : EIO);
}

/* Direct I/O (O_DIRECT) needs buffers, offsets and lengths aligned to the device's
 * logical block; a page is a multiple of every common one. */
#define DIRECT_ALIGN 4096

/* Bytes per direct write: a write in progress that is no longer wanted (a wrong guess,
 * cli_write_end) stops after at most this much. */
#define DIRECT_STEP ((size_t)64 << 20)

/* Write the whole pages at the start of buf (page aligned) to fd, at its offset 0,
 * with direct I/O: from the caller's pages (a mapped file's page cache) to the device,
 * without a copy into fd's page cache. Stops early when *stop is set. Returns the
 * bytes written, 0 when the file system refuses direct I/O; the caller writes the rest
 * in the usual way (and any error shows there). */
static size_t write_direct(int fd, const uint8_t *buf, size_t len, const atomic_bool *stop)
{
    size_t whole = len / DIRECT_ALIGN * DIRECT_ALIGN, done = 0;
    int fl = fcntl(fd, F_GETFL);
    if ((uintptr_t)buf % DIRECT_ALIGN || whole == 0 || fl < 0 ||
        fcntl(fd, F_SETFL, fl | O_DIRECT) != 0)
        return 0;
    while (done < whole && !atomic_load(stop)) {
        size_t k = whole - done > DIRECT_STEP ? DIRECT_STEP : whole - done;
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

/* Make fd (empty) share the blocks of src from src.off to its end, which must be len
 * bytes: FICLONERANGE, on file systems that clone (btrfs, XFS, ...). Returns 1 when it
 * did, 0 when not (EOPNOTSUPP, EXDEV, EINVAL: fd is still empty, the caller writes),
 * -1 (errno set) when a clone of the wrong size could not be undone. */
static int clone_source(int fd, CliSource src, size_t len)
{
    struct stat st;
    if (src.fd < 0 || len == 0 || fstat(src.fd, &st) != 0 ||
        (uint64_t)st.st_size != src.off + len)
        return 0;
    struct file_clone_range r = {.src_fd = src.fd, .src_offset = src.off, .src_length = 0,
                                 .dest_offset = 0};   /* length 0: to the end of src */
    if (ioctl(fd, FICLONERANGE, &r) != 0)
        return 0;
    if (fstat(fd, &st) == 0 && (uint64_t)st.st_size == len)
        return 1;
    return ftruncate(fd, 0) == 0 ? 0 : -1;   /* src changed meanwhile: write instead */
}

bool cli_file_id(int fd, CliFileId *id)
{
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return false;
    *id = (CliFileId){(uint64_t)st.st_dev, (uint64_t)st.st_ino, (uint64_t)st.st_size};
    return true;
}

/* Whether path names the file id now. */
static bool names_file(const char *path, const CliFileId *id)
{
    struct stat st;
    return stat(path, &st) == 0 && (uint64_t)st.st_dev == id->dev &&
           (uint64_t)st.st_ino == id->ino;
}

bool cli_link_checked(const char *src, const char *name, const CliFileId *id)
{
    struct stat st;
    if (link(src, name) != 0)
        return false;
    if (lstat(name, &st) == 0 && (uint64_t)st.st_dev == id->dev &&
        (uint64_t)st.st_ino == id->ino && (uint64_t)st.st_size == id->size)
        return true;
    unlink(name);                          /* src names another file now */
    return false;
}

/* A write of one buffer to the temporary file of path by a thread, its CRC32C checked
 * by another meanwhile (cli_write_begin). */
struct CliWriter {
    const char *path;
    const uint8_t *buf;
    size_t len;
    CliSource src;                     /* buf's file, to link or clone from */
    uint32_t want, crc;                /* the CRC32C buf must have, and its own */
    int fd, err;                       /* err: errno of a failed write, 0 */
    atomic_bool stop;                  /* no longer wanted: stop early */
    pthread_t writer, checker;
    bool writing, checking;            /* the threads were started */
    bool linked;                       /* the temporary name is a hard link to src */
    CliFileId id;                      /* src's file, when linked */
};

/* Make the temporary file a hard link to w->src.path, when that still names the file
 * w->buf was mapped from (w->src.fd) and the output is all of it: the link is made
 * under link_path (the temporary name and "L": no one else makes such a name while the
 * temporary name is ours) and renamed over the empty temporary file. False, nothing
 * changed, when the file system or the kernel refuses (another file system, no hard
 * links, a file of another owner under protected_hardlinks, too many links) or the path
 * names another file now: the caller copies. */
static bool link_temp(CliWriter *w)
{
    if (!w->src.path || w->src.off != 0 || !cli_file_id(w->src.fd, &w->id) ||
        w->id.size != w->len)
        return false;
    snprintf(link_path, sizeof link_path, "%sL", tmp_path);
    have_link = 1;
    bool ok = cli_link_checked(w->src.path, link_path, &w->id);
    if (ok && rename(link_path, tmp_path) != 0) {
        unlink(link_path);
        ok = false;
    }
    have_link = 0;
    w->linked = ok;
    return ok;
}

/* Thread body: link w->buf's file as the temporary file, else clone it into w->fd,
 * else write w->buf (whole pages direct, the rest buffered). */
static void *write_job(void *arg)
{
    CliWriter *w = arg;
    if (link_temp(w))
        return NULL;
    int cloned = clone_source(w->fd, w->src, w->len);
    if (cloned < 0)
        w->err = errno ? errno : EIO;
    if (cloned)
        return NULL;
    size_t done = write_direct(w->fd, w->buf, w->len, &w->stop);
    if (!atomic_load(&w->stop) && !cli_write_all(w->fd, w->buf + done, w->len - done))
        w->err = errno ? errno : EIO;
    return NULL;
}

/* Drop the page cache of the file that path names now (the output about to be
 * replaced), so that the rename does not have to free those pages while the caller
 * waits; pages another process has mapped stay. Not when the file has other names (a
 * cache entry's file that the output was linked to): its blocks stay, and so should its
 * pages. */
static void drop_old_pages(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat st;
    if (fd < 0)
        return;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1)
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
}

/* Thread body: the CRC32C of w->buf, 8 MiB at a time until done or stopped; then the
 * old output's pages are dropped (drop_old_pages) while the write goes on. */
static void *crc_job(void *arg)
{
    CliWriter *w = arg;
    const size_t step = (size_t)8 << 20;
    uint32_t crc = 0;
    for (size_t off = 0; off < w->len && !atomic_load(&w->stop); off += step)
        crc = spy_crc32c(crc, w->buf + off, w->len - off < step ? w->len - off : step);
    w->crc = crc;
    if (!atomic_load(&w->stop))
        drop_old_pages(w->path);
    return NULL;
}

CliWriter *cli_write_begin(const char *path, const void *buf, size_t len, uint32_t crc,
                           CliSource src)
{
    CliWriter *w = calloc(1, sizeof *w);
    if (!w) {
        fprintf(stderr, "spyrec: out of memory\n");
        return NULL;
    }
    *w = (CliWriter){.path = path, .buf = buf, .len = len, .src = src, .want = crc};
    atomic_init(&w->stop, false);
    if ((w->fd = cli_atomic_open(path)) < 0) {
        free(w);
        return NULL;
    }
    w->writing = pthread_create(&w->writer, NULL, write_job, w) == 0;
    w->checking = pthread_create(&w->checker, NULL, crc_job, w) == 0;
    return w;
}

bool cli_write_end(CliWriter *w, bool keep, bool *damaged)
{
    *damaged = false;
    if (!keep)
        atomic_store(&w->stop, true);
    if (w->writing)
        pthread_join(w->writer, NULL);
    else if (keep)
        write_job(w);
    if (w->checking)
        pthread_join(w->checker, NULL);
    else if (keep)
        crc_job(w);
    bool ok = true;
    if (!keep || w->crc != w->want) {      /* never renamed: path is as it was */
        *damaged = keep;
        close(w->fd);
        cli_io_abandon();
    } else if (w->linked && names_file(w->path, &w->id)) {
        close(w->fd);                      /* path is the entry's file already (a rename */
        cli_io_abandon();                  /* of one link over another does nothing) */
    } else {
        ok = cli_atomic_close(w->path, w->fd, w->err);
    }
    free(w);
    return ok;
}

bool cli_write_atomic_checked(const char *path, const void *buf, size_t len, uint32_t crc,
                              CliSource src, bool *damaged)
{
    *damaged = false;
    if (!strcmp(path, "-")) {              /* nothing can be taken back: check first */
        *damaged = spy_crc32c(0, buf, len) != crc;
        return *damaged || cli_write_atomic(path, buf, len);
    }
    CliWriter *w = cli_write_begin(path, buf, len, crc, src);
    return w && cli_write_end(w, true, damaged);
}

/* Write buf to path atomically (see cli_write_atomic_parts). */
bool cli_write_atomic(const char *path, const void *buf, size_t len)
{
    CliPart part = {buf, len};
    return cli_write_atomic_parts(path, &part, 1);
}
