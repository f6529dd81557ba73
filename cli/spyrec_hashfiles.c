/* spyrec_hashfiles.c: the digests of the files a compile-cache key covers (the
 * compiler, the model, its external data, --target, --bind and --input-seq files),
 * hashed by several threads (up to one per processor, at most four).
 *
 * A file's digest is the SHA-256 of the tag "spyrec file digest 1", its byte count
 * (u64, little-endian) and then the SHA-256 of each CLI_HASH_PIECE-byte piece of it in
 * order (the last piece may be shorter; an empty file has none). The pieces are
 * independent, so the threads take them from a shared counter; their size is fixed,
 * so the digest does not depend on the number of threads or on timing. Two files with
 * the same digest would need a collision of SHA-256, so the key is as strong as
 * hashing the bytes straight through, and a cache hit (which is mostly this hashing)
 * takes about half the time where a second core is free (a quarter with four). Files are mapped; one that
 * cannot be mapped (a pipe) is read into memory.
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

#define CLI_HASH_PIECE ((size_t)4 << 20)  /* bytes per independently hashed piece */
#define READ_STEP ((size_t)1 << 20)
#define HASH_THREADS 4                    /* at most, and at most one per processor */

typedef struct {
    const uint8_t *p;
    size_t len;
    uint8_t digest[CLI_HASH_BYTES];
} Piece;

typedef struct {
    Piece *pc;
    size_t n;
    atomic_size_t next;
} Work;

/* One file's bytes: mapped, or read into memory. */
typedef struct {
    uint8_t *p;
    size_t len;
    bool mapped;
    size_t first;                          /* its first piece */
} Bytes;

/* Hash pieces taken from the shared counter until none is left (thread body). */
static void *hash_pieces(void *arg)
{
    Work *w = arg;
    for (size_t i; (i = atomic_fetch_add(&w->next, 1)) < w->n;) {
        CliHash h;
        cli_hash_init(&h);
        cli_hash_update(&h, w->pc[i].p, w->pc[i].len);
        cli_hash_final(&h, w->pc[i].digest);
    }
    return NULL;
}

/* Read the rest of fd into b (a file that cannot be mapped); false on an error. */
static bool read_all(int fd, Bytes *b)
{
    size_t cap = 0;
    for (;;) {
        if (b->len + READ_STEP > cap) {
            uint8_t *q = realloc(b->p, cap = 2 * cap + READ_STEP);
            if (!q)
                return false;
            b->p = q;
        }
        ssize_t r = read(fd, b->p + b->len, READ_STEP);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r == 0;
        b->len += (size_t)r;
    }
}

/* Map (or read) the file at path into b; false when it cannot be read. */
static bool open_bytes(const char *path, Bytes *b)
{
    memset(b, 0, sizeof *b);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    struct stat st;
    bool ok = fstat(fd, &st) == 0;
    if (ok && S_ISREG(st.st_mode) && st.st_size > 0) {
        void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
        if (m != MAP_FAILED) {
            b->p = m;
            b->len = (size_t)st.st_size;
            b->mapped = true;
        }
    }
    if (ok && !b->mapped && !(S_ISREG(st.st_mode) && st.st_size == 0))
        ok = read_all(fd, b);
    close(fd);
    return ok;
}

/* The digest of file b from its pieces' digests (see the top). */
static void file_digest(const Bytes *b, const Piece *pc, uint8_t *out)
{
    static const char tag[] = "spyrec file digest 1";
    uint8_t len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (uint8_t)((uint64_t)b->len >> (8 * i));
    CliHash h;
    cli_hash_init(&h);
    cli_hash_update(&h, tag, sizeof tag);
    cli_hash_update(&h, len, sizeof len);
    for (size_t k = 0; k < (b->len + CLI_HASH_PIECE - 1) / CLI_HASH_PIECE; k++)
        cli_hash_update(&h, pc[b->first + k].digest, CLI_HASH_BYTES);
    cli_hash_final(&h, out);
}

/* Hash the pieces of every file in b[0..n) (several threads when there are several). */
static bool hash_all(Bytes *b, int n, Piece **out)
{
    size_t np = 0;
    for (int i = 0; i < n; i++) {
        b[i].first = np;
        np += (b[i].len + CLI_HASH_PIECE - 1) / CLI_HASH_PIECE;
    }
    Work w = {.pc = calloc(np + 1, sizeof *w.pc), .n = np};
    if (!w.pc)
        return false;
    for (int i = 0; i < n; i++)
        for (size_t off = 0, k = b[i].first; off < b[i].len; off += CLI_HASH_PIECE, k++)
            w.pc[k] = (Piece){b[i].p + off,
                              b[i].len - off < CLI_HASH_PIECE ? b[i].len - off : CLI_HASH_PIECE,
                              {0}};
    atomic_init(&w.next, 0);
    pthread_t th[HASH_THREADS - 1];
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int nth = 0;                           /* helpers besides this thread */
    while (nth < HASH_THREADS - 1 && (size_t)nth + 1 < np && nth + 1 < cpus &&
           pthread_create(&th[nth], NULL, hash_pieces, &w) == 0)
        nth++;
    hash_pieces(&w);
    for (int t = 0; t < nth; t++)
        pthread_join(th[t], NULL);
    *out = w.pc;
    return true;
}

bool cli_hash_files(const char *const *paths, int n, uint8_t (*digest)[CLI_HASH_BYTES],
                    bool *ok)
{
    Bytes *b = calloc((size_t)n + 1, sizeof *b);
    if (!b)
        return false;
    for (int i = 0; i < n; i++)
        ok[i] = open_bytes(paths[i], &b[i]);
    Piece *pc = NULL;
    bool done = hash_all(b, n, &pc);
    for (int i = 0; i < n; i++) {
        if (done && ok[i])
            file_digest(&b[i], pc, digest[i]);
        if (b[i].mapped)
            munmap(b[i].p, b[i].len);
        else
            free(b[i].p);
    }
    free(pc);
    free(b);
    return done;
}
