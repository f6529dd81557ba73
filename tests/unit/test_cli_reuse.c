/* test_cli_reuse.c: the file a bundle output is written into (cli/spyrec_reuse.c).
 * An existing output that no one else has open is reused (same inode, its new bytes
 * and length after cli_atomic_close); one that another descriptor, a mapping or a
 * second hard link still refers to is never written in place: those readers keep the
 * old bytes, and the output gets a new file. A symbolic link is replaced, its target
 * untouched. Where the file system grants no leases, reuse never happens, and only the
 * outputs' bytes are checked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli/cli.h"

static char dir[] = "/tmp/spyrec_reuse_XXXXXX";

/* Write len bytes of value v to path (created or replaced). */
static void put_file(const char *path, int v, size_t len)
{
    uint8_t *b = malloc(len);
    assert_non_null(b);
    memset(b, v, len);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_true(cli_write_all(fd, b, len));
    close(fd);
    free(b);
}

/* Whether path holds exactly len bytes of value v. */
static bool file_is(const char *path, int v, size_t len)
{
    struct stat st;
    if (stat(path, &st) != 0 || (size_t)st.st_size != len)
        return false;
    FILE *f = fopen(path, "rb");
    bool ok = f != NULL;
    for (int c; ok && (c = fgetc(f)) != EOF;)
        ok = c == v;
    if (f)
        fclose(f);
    return ok;
}

static ino_t inode_of(const char *path)
{
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    return st.st_ino;
}

/* Whether this folder's file system grants a write lease on a file opened only here. */
static bool leases_work(void)
{
    char p[64];
    snprintf(p, sizeof p, "%s/probe", dir);
    put_file(p, 0, 1);
    int fd = open(p, O_RDWR);
    bool ok = fd >= 0 && fcntl(fd, F_SETLEASE, F_WRLCK) == 0;
    if (fd >= 0) {
        fcntl(fd, F_SETLEASE, F_UNLCK);
        close(fd);
    }
    unlink(p);
    return ok;
}

/* Write a bundle of len bytes of value v to path as spyrec does. */
static void write_bundle(const char *path, int v, size_t len)
{
    int fd = cli_atomic_open_bundle(path);
    assert_true(fd >= 0);
    uint8_t *b = malloc(len);
    assert_non_null(b);
    memset(b, v, len);
    assert_int_equal(pwrite(fd, b, len, 0), (ssize_t)len);
    assert_int_equal(ftruncate(fd, (off_t)len), 0);
    assert_true(cli_atomic_close(path, fd, 0));
    cli_io_finish();
    free(b);
}

/* No reader: the old file is reused, longer or shorter; a new output is a new file. */
static void test_reused(void **state)
{
    (void)state;
    char p[64];
    snprintf(p, sizeof p, "%s/a.sbin", dir);
    write_bundle(p, 1, 70000);             /* no old output */
    assert_true(file_is(p, 1, 70000));
    ino_t first = inode_of(p);
    write_bundle(p, 2, 50000);             /* shorter */
    assert_true(file_is(p, 2, 50000));
    write_bundle(p, 3, 90000);             /* longer */
    assert_true(file_is(p, 3, 90000));
    if (leases_work())
        assert_true(inode_of(p) == first);
    else
        print_message("no leases on %s: reuse not checked\n", dir);
    unlink(p);
}

/* A descriptor, a mapping (its descriptor closed) or a second link to the old file:
 * never written in place. */
static void test_readers_kept(void **state)
{
    (void)state;
    char p[64], l[64];
    snprintf(p, sizeof p, "%s/b.sbin", dir);
    snprintf(l, sizeof l, "%s/b.link", dir);

    put_file(p, 4, 8192);                  /* an open descriptor */
    int rd = open(p, O_RDONLY);
    assert_true(rd >= 0);
    ino_t old = inode_of(p);
    write_bundle(p, 5, 8192);
    assert_true(file_is(p, 5, 8192));
    assert_true(inode_of(p) != old);
    uint8_t c = 0;
    assert_int_equal(pread(rd, &c, 1, 4000), 1);
    assert_int_equal(c, 4);
    close(rd);

    put_file(p, 6, 8192);                  /* a mapping only */
    rd = open(p, O_RDONLY);
    uint8_t *m = mmap(NULL, 8192, PROT_READ, MAP_SHARED, rd, 0);
    assert_true(m != MAP_FAILED);
    close(rd);
    write_bundle(p, 7, 8192);
    assert_true(file_is(p, 7, 8192));
    assert_int_equal(m[0], 6);
    assert_int_equal(m[8191], 6);
    munmap(m, 8192);

    put_file(p, 8, 8192);                  /* a second hard link */
    assert_int_equal(link(p, l), 0);
    write_bundle(p, 9, 8192);
    assert_true(file_is(p, 9, 8192));
    assert_true(file_is(l, 8, 8192));
    unlink(l);
    unlink(p);
}

/* A symbolic link as the output: the link is replaced, its target kept. */
static void test_symlink(void **state)
{
    (void)state;
    char p[64], t[64];
    snprintf(p, sizeof p, "%s/c.sbin", dir);
    snprintf(t, sizeof t, "%s/c.target", dir);
    put_file(t, 10, 4096);
    assert_int_equal(symlink(t, p), 0);
    write_bundle(p, 11, 4096);
    struct stat st;
    assert_int_equal(lstat(p, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_true(file_is(p, 11, 4096));
    assert_true(file_is(t, 10, 4096));
    unlink(p);
    unlink(t);
}

int main(void)
{
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reused),
        cmocka_unit_test(test_readers_kept),
        cmocka_unit_test(test_symlink),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rmdir(dir);
    return rc;
}
