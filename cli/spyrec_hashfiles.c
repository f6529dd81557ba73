/* spyrec_hashfiles.c: the digests of the files a compile-cache key covers (the
 * compiler, the model, its external data, --target, --bind and --input-seq files),
 * hashed by several threads (up to one per processor, at most four).
 *
 * A file's digest is the SHA-256 of the tag "spyrec file digest 2", its byte count
 * (u64, little-endian) and then the SHA-256 of each CLI_HASH_PIECE-byte piece of it in
 * order (the last piece may be shorter; an empty file has none). The pieces are
 * independent, so the threads take them from a shared counter; their size is fixed,
 * so the digest does not depend on the number of threads or on timing. Two files with
 * the same digest would need a collision of SHA-256, so the key is as strong as
 * hashing the bytes straight through, and a cache hit (which is mostly this hashing)
 * takes about half the time where a second core is free (a quarter with four). A thread
 * takes a job of 16 consecutive full pieces of a file (or of one piece, where fewer
 * are left), maps them (so that mapping and
 * unmapping are shared out too, not done whole by one thread), and hashes full pieces
 * 16 side by side in the lanes of AVX-512 registers where the processor has them
 * (cli_hash_x16: the same digests). A file that cannot be mapped (a pipe) is read into
 * memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"

#define CLI_HASH_PIECE ((size_t)1 << 20)  /* bytes per independently hashed piece */
#define READ_STEP ((size_t)1 << 20)
#define HASH_THREADS 4                    /* at most, and at most one per processor */

#define X16 16                            /* pieces hashed side by side (cli_hash_x16) */

/* One file to hash: a regular file is mapped a job at a time by the thread hashing
 * it; anything else (a pipe) is read into memory first. */
typedef struct {
    int fd;                                /* -1: closed, or read into mem */
    uint8_t *mem;                          /* the bytes of a file that is not mapped */
    size_t len;
    size_t first;                          /* its first piece */
    atomic_bool failed;                    /* a part of it could not be mapped */
} Src;

/* Up to X16 consecutive pieces of one file, hashed by one thread. */
typedef struct {
    Src *src;
    size_t off;                            /* byte offset of the first piece */
    int count;
} Job;

typedef struct {
    Job *jobs;
    size_t njobs;
    uint8_t (*digest)[CLI_HASH_BYTES];     /* per piece, numbered over all files */
    atomic_size_t next;
} Work;

/* The SHA-256 of one piece. */
static void hash_one(const uint8_t *p, size_t len, uint8_t *digest)
{
    CliHash h;
    cli_hash_init(&h);
    cli_hash_update(&h, p, len);
    cli_hash_final(&h, digest);
}

/* Hash one job's pieces: its part of the file mapped (populated by this thread, so
 * that threads share the page-table work too) and unmapped after; X16 full pieces
 * side by side where the processor can. */
static void run_job(Work *w, const Job *j)
{
    Src *s = j->src;
    size_t span = s->len - j->off < (size_t)j->count * CLI_HASH_PIECE ? s->len - j->off
                                                                       : (size_t)j->count * CLI_HASH_PIECE;
    const uint8_t *base = s->mem ? s->mem + j->off : NULL;
    void *m = MAP_FAILED;
    if (!base) {
        m = mmap(NULL, span, PROT_READ, MAP_PRIVATE | MAP_POPULATE, s->fd, (off_t)j->off);
        if (m == MAP_FAILED) {
            atomic_store(&s->failed, true);
            return;
        }
        base = m;
    }
    size_t k0 = s->first + j->off / CLI_HASH_PIECE;
    const uint8_t *p[X16];
    for (int i = 0; i < j->count; i++)
        p[i] = base + (size_t)i * CLI_HASH_PIECE;
    if (j->count < X16 || span < (size_t)X16 * CLI_HASH_PIECE ||
        !cli_hash_x16(p, CLI_HASH_PIECE, w->digest + k0))
        for (int i = 0; i < j->count; i++) {
            size_t off = (size_t)i * CLI_HASH_PIECE;
            hash_one(p[i], span - off < CLI_HASH_PIECE ? span - off : CLI_HASH_PIECE,
                     w->digest[k0 + i]);
        }
    if (m != MAP_FAILED)
        munmap(m, span);
}

/* Run jobs taken from the shared counter until none is left (thread body). */
static void *hash_jobs(void *arg)
{
    Work *w = arg;
    for (size_t i; (i = atomic_fetch_add(&w->next, 1)) < w->njobs;)
        run_job(w, &w->jobs[i]);
    return NULL;
}

/* Read the rest of fd into s->mem (a file that cannot be mapped); false on an error. */
static bool read_all(int fd, Src *s)
{
    size_t cap = 0;
    for (;;) {
        if (s->len + READ_STEP > cap) {
            uint8_t *q = realloc(s->mem, cap = 2 * cap + READ_STEP);
            if (!q)
                return false;
            s->mem = q;
        }
        ssize_t r = read(fd, s->mem + s->len, READ_STEP);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r == 0;
        s->len += (size_t)r;
    }
}

/* Open the file at path into s: a regular file stays open to be mapped by the jobs,
 * anything else is read whole. False when it cannot be read. */
static bool open_src(const char *path, Src *s)
{
    memset(s, 0, sizeof *s);
    atomic_init(&s->failed, false);
    s->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (s->fd < 0)
        return false;
    struct stat st;
    bool ok = fstat(s->fd, &st) == 0;
    if (ok && S_ISREG(st.st_mode)) {
        s->len = (size_t)st.st_size;
        return true;
    }
    ok = ok && read_all(s->fd, s);
    close(s->fd);
    s->fd = -1;
    return ok;
}

/* The digest of file s from its pieces' digests (see the top). */
static void file_digest(const Src *s, uint8_t (*pieces)[CLI_HASH_BYTES], uint8_t *out)
{
    static const char tag[] = "spyrec file digest 2";   /* 2: 1 MiB pieces */
    uint8_t len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (uint8_t)((uint64_t)s->len >> (8 * i));
    CliHash h;
    cli_hash_init(&h);
    cli_hash_update(&h, tag, sizeof tag);
    cli_hash_update(&h, len, sizeof len);
    for (size_t k = 0; k < (s->len + CLI_HASH_PIECE - 1) / CLI_HASH_PIECE; k++)
        cli_hash_update(&h, pieces[s->first + k], CLI_HASH_BYTES);
    cli_hash_final(&h, out);
}

/* Hash the pieces of every file in s[0..n) (several threads when there are several
 * jobs); their digests into *out (malloc'd, numbered over all files). */
static bool hash_all(Src *s, int n, uint8_t (**out)[CLI_HASH_BYTES])
{
    size_t np = 0, nj = 0;
    for (int i = 0; i < n; i++) {
        s[i].first = np;
        np += (s[i].len + CLI_HASH_PIECE - 1) / CLI_HASH_PIECE;
    }
    nj = np;                               /* at most one job per piece */
    Work w = {.jobs = calloc(nj + 1, sizeof *w.jobs), .digest = calloc(np + 1, sizeof *w.digest)};
    if (!w.jobs || !w.digest) {
        free(w.jobs);
        free(w.digest);
        return false;
    }
    for (int i = 0; i < n; i++)            /* X16 pieces a job, the rest one by one */
        for (size_t off = 0; off < s[i].len;) {
            int count = s[i].len - off >= X16 * CLI_HASH_PIECE ? X16 : 1;
            w.jobs[w.njobs++] = (Job){&s[i], off, count};
            off += (size_t)count * CLI_HASH_PIECE;
        }
    atomic_init(&w.next, 0);
    pthread_t th[HASH_THREADS - 1];
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int nth = 0;                           /* helpers besides this thread */
    while (nth < HASH_THREADS - 1 && (size_t)nth + 1 < w.njobs && nth + 1 < cpus &&
           pthread_create(&th[nth], NULL, hash_jobs, &w) == 0)
        nth++;
    hash_jobs(&w);
    for (int t = 0; t < nth; t++)
        pthread_join(th[t], NULL);
    free(w.jobs);
    *out = w.digest;
    return true;
}

bool cli_hash_files(const char *const *paths, int n, uint8_t (*digest)[CLI_HASH_BYTES],
                    bool *ok)
{
    Src *s = calloc((size_t)n + 1, sizeof *s);
    if (!s)
        return false;
    for (int i = 0; i < n; i++)
        ok[i] = open_src(paths[i], &s[i]);
    for (int i = 0; i < n; i++)
        if (!ok[i])
            s[i].len = 0;                  /* nothing to hash */
    uint8_t (*pieces)[CLI_HASH_BYTES] = NULL;
    bool done = hash_all(s, n, &pieces);
    for (int i = 0; i < n; i++) {
        ok[i] = ok[i] && !atomic_load(&s[i].failed);
        if (done && ok[i])
            file_digest(&s[i], pieces, digest[i]);
        if (s[i].fd >= 0)
            close(s[i].fd);
        free(s[i].mem);
    }
    free(pieces);
    free(s);
    return done;
}
