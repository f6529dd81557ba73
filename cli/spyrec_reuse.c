/* spyrec_reuse.c: the file a bundle is written into when its output already exists.
 *
 * Replacing a bundle the usual way (a new temporary file renamed over the old one)
 * frees every block of the old file and allocates as many new ones. On a file system
 * mounted with discard, freeing is a discard of each block: on a virtual disk about
 * 1.3 s a GB, as long as writing the new bundle, so that rebuilding a 4.7 GB llama_1b
 * bundle took twice the time of its first build. When nobody else can see the old file,
 * its blocks are reused instead: it is moved to the temporary name and overwritten
 * there, cut to the new length and renamed back as usual (cli_atomic_close), so that a
 * rebuild of a bundle of the same size frees and allocates nothing.
 *
 * Overwriting a file in place is safe only when no one reads it: a running spyrun maps
 * its bundle's constants, and a hard link (a compile-cache entry, spyrec_cache.c) shares
 * its bytes with another name. So the old file is reused only when it is a regular file
 * of this user with a single link and the kernel grants a write lease on it (fcntl
 * F_SETLEASE F_WRLCK), which it does only while no other open file, and so no mapping,
 * refers to it; the lease is held across the rename that takes the file off the
 * output's name, so that an open by that name meanwhile is seen (the lease is then
 * being broken) and the file put back. Otherwise (another reader, a hard link, a file
 * system without leases) the old file is removed when code generation starts and its
 * blocks freed by a thread while the new bundle is written (cli_io_release_early).
 *
 * Either way the old output is gone once code generation starts, as ld removes its
 * output before it writes; a compile that fails before (bad input, an unsupported
 * operator, any pass) leaves it as it was, and no partial bundle ever takes its name.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"

/* A read-write descriptor of path when it is a regular file of this user with one
 * link (a candidate for reuse), else -1. */
static int reuse_candidate(const char *path)
{
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
                    st.st_uid != geteuid())) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* Whether path and fd name the same file. */
static bool same_file(const char *path, int fd)
{
    struct stat a, b;
    return lstat(path, &a) == 0 && fstat(fd, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

/* Move old, which path names and no one else has open, over the temporary file tmp,
 * under a write lease. False (everything as it was, tmp kept) when the lease is refused
 * or broken by an open meanwhile. The lease's break signal (SIGIO, by default fatal) is
 * ignored while it is held. */
static bool take_over(const char *path, int old, const char *tmp)
{
    struct sigaction ign = {.sa_handler = SIG_IGN}, prev;
    if (sigaction(SIGIO, &ign, &prev) != 0)
        return false;
    bool ok = fcntl(old, F_SETLEASE, F_WRLCK) == 0;
    if (ok && (!same_file(path, old) || rename(path, tmp) != 0))
        ok = false;
    else if (ok && fcntl(old, F_GETLEASE) != F_WRLCK) {   /* opened meanwhile */
        ok = false;
        if (rename(tmp, path) != 0)        /* cannot put it back: it is replaced anyway */
            unlink(tmp);
    }
    fcntl(old, F_SETLEASE, F_UNLCK);
    sigaction(SIGIO, &prev, NULL);
    return ok;
}

int cli_atomic_open_bundle(const char *path)
{
    int fd = cli_atomic_open(path);
    if (fd < 0)
        return -1;
    int old = reuse_candidate(path);
    if (old < 0) {
        cli_io_release_early(path);
        return fd;
    }
    const char *tmp = cli_atomic_tmp_path();
    if (!take_over(path, old, tmp)) {
        close(old);
        if (access(tmp, F_OK) != 0) {      /* the temporary file was replaced: a new one */
            close(fd);
            if ((fd = cli_atomic_open(path)) < 0)
                return -1;
        }
        cli_io_release_early(path);
        return fd;
    }
    close(fd);                             /* its file was replaced by the rename */
    mode_t mask = umask(0);
    umask(mask);
    if (fchmod(old, 0666 & ~mask) != 0) {  /* the mode a new output gets */
        cli_atomic_close(path, old, errno);
        return -1;
    }
    return old;
}
