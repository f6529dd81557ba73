/* spyrec_cache.c: the compile cache (spyrec --cache-dir DIR, or SPYREC_CACHE_DIR).
 *
 * A compile's key is the SHA-256 (spyrec_hash.c) of everything that can change
 * its output, files entering by their digests (spyrec_hashfiles.c: SHA-256 over the
 * SHA-256 of their 1 MiB pieces, hashed by several threads):
 *   the compiler: the bytes of the running executable (its version when they cannot
 *     be read), which also holds the built-in target;
 *   the model file's bytes and the part of its path the output shows;
 *   the bytes of every external data file the model names;
 *   the flags recorded in the bundle (-O, --emit, --verify, --input-shape, ...);
 *   the --target file's bytes and the bytes of every --bind / --input-seq file.
 * Which external data files an ONNX model names is only known once it is parsed, so
 * the folder holds these files:
 *   MKEY.files   the external data files of a model (paths relative to its folder);
 *                MKEY covers all of the above but the external data
 *   KEY.entry    what one compile gave besides its output: the output's length and
 *                CRC32C, and the warnings; KEY covers everything
 *   KEY.out      the output of that compile, its bytes exactly (no header), so that the
 *                output file can be this very file (below)
 *   HKEY.hint    the KEY of the entry last stored or hit for a compile named as this
 *                one (HKEY: the model's and the other input files' paths, not their
 *                bytes; the flags, the version): only a guess, never trusted, and
 *                not made when the model file changed since (its stat stamp)
 *   SKEY.stat    the digest of a large input file, taken instead of hashing it while
 *                the file's stat matches (spyrec_cachestat.c)
 * A lookup reads HKEY.hint and maps the output the entry it names (cli_cache_guess), so
 * that the caller can start writing it while the inputs are hashed; it then hashes the
 * inputs, reads MKEY.files, hashes the files it lists and reads KEY.entry and KEY.out
 * (cli_cache_lookup): nothing is parsed or compiled. The guessed output takes the
 * output's name only when KEY is the guessed key and the output's CRC matches.
 *
 * File layout (little-endian) of all but KEY.out:
 *    0  magic "SPYCACHE"               8 bytes
 *    8  format version (3)             u32
 *   12  kind (1 .files, 2 .entry, 3 .hint, 4 .stat) u32
 *   16  payload bytes                  u64
 *   24  key (the file's name)          32 bytes
 *   56  CRC32C of the payload          u32
 *   60  CRC32C of bytes 0..59          u32
 *   64  payload   .files: relative paths, each NUL-terminated
 *                 .hint: the 32-byte key of an entry, then the model file's size,
 *                 modification time (s, ns) and inode (u64 each) when it was written
 *                 .entry: u64 output bytes, u64 warning bytes, u32 CRC32C of the
 *                 output (KEY.out), u32 zero, the warnings (each NUL-terminated)
 *
 * Outputs by hard link. A bundle's KEY.out is stored as the output file itself where the
 * two share a file system (a miss links the output it wrote into the folder instead of
 * writing the bytes again), and a hit makes the output a hard link to KEY.out (its CRC
 * checked first): no byte is written either way, and a rebuild whose output already is
 * the entry's file frees nothing. Otherwise (another file system, a file system without
 * hard links, a file of another user under the kernel's protected_hardlinks,
 * --cache-copy, an output other than a bundle, standard output) the output is a copy:
 * cloned where the file system shares blocks (FICLONERANGE, btrfs, XFS), else its whole
 * pages written with direct I/O from KEY.out's page cache (cli_write_atomic_checked).
 * What a user must know, since the output and the entry are then one file: spyrec
 * itself never writes a file in place (always a new file renamed over the old), and
 * neither do mv, make rules that write and rename, or a later compile; but a program
 * that writes into the output in place (cp onto an existing file, dd conv=notrunc, an
 * in-place editor) changes the entry and every other output linked to it. The entry
 * is then found damaged by its CRC at its next use and compiled again, never used, but
 * the other outputs keep the new bytes: use --cache-copy where outputs are modified in
 * place. A linked output has the owner and mode of KEY.out (the kernel's
 * protected_hardlinks refuses a link to another user's file: a copy then). A hit sets
 * the modification time of KEY.out, and so of the outputs linked to it, to now (make
 * then sees the output as new); --cache-max counts KEY.out whole even
 * when outputs share it, and evicting it frees its blocks only once no output links it.
 *
 * Files are written atomically (a temporary file in the folder, then rename, without
 * fsync: write_unsynced; KEY.out before KEY.entry),
 * so concurrent compiles of one model each write a whole file and the last rename wins.
 * Readers check the length, both CRCs and the key: a damaged file is never used, it
 * is removed and the compile runs. A hit sets the modification time of its files to
 * now; after a store, the least recently used files go until the folder holds at most
 * --cache-max bytes (KEY.entry and KEY.out together). Failed compiles are not stored.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "frontend/fe.h"

#define CACHE_MAGIC "SPYCACHE"
#define CACHE_VERSION 3u                  /* 3: the output in its own file, KEY.out */
#define HEADER_BYTES 64
#define ENTRY_META 24                     /* .entry payload before the warnings */
#define STAMP_BYTES 32                    /* a .hint's stamp of the model file */

enum { KIND_FILES = CLI_CACHE_FILES, KIND_ENTRY = CLI_CACHE_ENTRY, KIND_HINT = CLI_CACHE_HINT };

/* Store v as 4 or 8 little-endian bytes at p. */
static void put_le(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* The little-endian number of 4 or 8 bytes at p. */
static uint64_t get_le(const uint8_t *p, int bytes)
{
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

bool cli_cache_parse_size(const char *text, uint64_t *bytes)
{
    char *end;
    errno = 0;
    unsigned long long n = strtoull(text, &end, 10);
    if (errno || end == text || text[0] == '-')
        return false;
    int shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; break;
    case 'm': case 'M': shift = 20; break;
    case 'g': case 'G': shift = 30; break;
    case 't': case 'T': shift = 40; break;
    default: break;
    }
    if (shift)
        end++;
    if (shift && *end == 'i')
        end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end || n == 0 || n > (UINT64_MAX >> shift))
        return false;
    *bytes = (uint64_t)n << shift;
    return true;
}

/* Make the folder path and its missing parents; false (errno set) on failure. */
static bool make_dirs(const char *path)
{
    char *p = strdup(path);
    if (!p)
        return false;
    bool ok = true;
    for (char *s = p + 1; ok; s++) {
        if (*s != '/' && *s != '\0')
            continue;
        char c = *s;
        *s = '\0';
        ok = mkdir(p, 0777) == 0 || errno == EEXIST;
        *s = c;
        if (!c)
            break;
    }
    struct stat st;
    ok = ok && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
    free(p);
    return ok;
}

/* "DIR/HEX.suffix" for a key, malloc'd. */
static char *cache_path(const char *dir, const uint8_t *key, const char *suffix)
{
    char hex[2 * CLI_HASH_BYTES + 1];
    cli_hash_hex(key, CLI_HASH_BYTES, hex);
    size_t n = strlen(dir) + strlen(hex) + strlen(suffix) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s%s", dir, hex, suffix);
    return p;
}

/* Length of the folder part of the model path with its slash ("dir/" of "dir/m.onnx",
 * 0 for "m.onnx"): the frontend names external data files that prefix + location. */
static size_t model_prefix(const char *model)
{
    const char *slash = strrchr(model, '/');
    return slash ? (size_t)(slash - model) + 1 : 0;
}

/* The compiler's digest into h: d when the running executable's bytes were read
 * through /proc (ok), else those of the file argv[0] leads to, or "unreadable" when
 * neither can be read. */
static void key_compiler(CliHash *h, const CliCacheSpec *s, const uint8_t *d, bool ok)
{
    uint8_t found_d[1][CLI_HASH_BYTES];
    char *found = NULL;
    if (!ok) {
        const char *self = found = cli_self_path(s->argv0);
        ok = found && cli_hash_files(&self, 1, found_d, &ok) && ok;
        d = found_d[0];
    }
    if (ok)
        cli_hash_field(h, "compiler", d, CLI_HASH_BYTES);
    else
        cli_hash_field(h, "compiler", "unreadable", 10);
    free(found);
}

/* Start the key: everything but the external data. The compiler, the model,
 * --target, --bind and --input-seq files are hashed together (threads share their
 * pieces). False when one but the compiler cannot be read (the compile will say
 * why). */
static bool key_base(CliHash *h, const CliCacheSpec *s)
{
    int most = s->ninputs + 3, n = 0;
    const char **paths = calloc((size_t)most, sizeof *paths);
    const char **tags = calloc((size_t)most, sizeof *tags);
    uint8_t (*d)[CLI_HASH_BYTES] = calloc((size_t)most, sizeof *d);
    bool *ok = calloc((size_t)most, sizeof *ok), all = paths && tags && d && ok;
    if (all) {
        tags[n] = "compiler", paths[n++] = "/proc/self/exe";
        tags[n] = "model", paths[n++] = s->model;
        if (s->target_path)
            tags[n] = "target", paths[n++] = s->target_path;
        for (int i = 0; i < s->ninputs; i++)
            tags[n] = "input", paths[n++] = s->inputs[i];
        all = cli_cache_hash_files(s->dir, paths, n, d, ok);
    }
    cli_hash_init(h);
    cli_hash_field(h, "spyrec compile cache", "3", 1);
    cli_hash_field(h, "version", s->version, strlen(s->version));
    if (all)
        key_compiler(h, s, d[0], ok[0]);
    cli_hash_field(h, "name", s->model_name, strlen(s->model_name));
    cli_hash_field(h, "flags", s->flags ? s->flags : "", s->flags ? strlen(s->flags) : 0);
    for (int i = 1; all && i < n; i++) {
        all = ok[i];
        if (all)
            cli_hash_field(h, tags[i], d[i], CLI_HASH_BYTES);
    }
    free(paths);
    free(tags);
    free(d);
    free(ok);
    return all;
}

/* The key of the compile: the base and then each external data file (its path
 * relative to the model's folder and its digest) of the list rels (n bytes of
 * NUL-terminated paths). False when one cannot be read. */
static bool key_full(const CliCache *c, const char *rels, size_t n, uint8_t *key)
{
    CliHash h = c->base;
    const char *model = c->spec.model;
    size_t pre = model_prefix(model);
    int count = 0;
    for (size_t off = 0; off < n; off += strlen(rels + off) + 1)
        count++;
    char **paths = calloc((size_t)count + 1, sizeof *paths);
    uint8_t (*d)[CLI_HASH_BYTES] = calloc((size_t)count + 1, sizeof *d);
    bool *ok = calloc((size_t)count + 1, sizeof *ok), all = paths && d && ok;
    int i = 0;
    for (size_t off = 0; all && off < n; off += strlen(rels + off) + 1, i++) {
        size_t len = pre + strlen(rels + off) + 1;
        all = (paths[i] = malloc(len)) != NULL;
        if (all)
            snprintf(paths[i], len, "%.*s%s", (int)pre, model, rels + off);
    }
    all = all && cli_cache_hash_files(c->spec.dir, (const char *const *)paths, count, d, ok);
    i = 0;
    for (size_t off = 0; all && off < n; off += strlen(rels + off) + 1, i++) {
        cli_hash_field(&h, "external", rels + off, strlen(rels + off));
        all = ok[i];
        cli_hash_field(&h, "data", d[i], CLI_HASH_BYTES);
    }
    for (int k = 0; paths && k < count; k++)
        free(paths[k]);
    free(paths);
    free(d);
    free(ok);
    if (all)
        cli_hash_final(&h, key);
    return all;
}

/* The key of the .files entry of the model: the base alone. */
static void key_files(const CliCache *c, uint8_t *key)
{
    CliHash h = c->base;
    cli_hash_field(&h, "external data files", "", 0);
    cli_hash_final(&h, key);
}

/* Map the cache file path of the given kind and key (read-only). Returns the mapping
 * (*size bytes) with *payload and *len set to its payload, or NULL: *damaged tells
 * whether the file was there but failed a check. */
static uint8_t *map_file(const char *path, uint32_t kind, const uint8_t *key, size_t *size,
                         const uint8_t **payload, size_t *len, bool *damaged)
{
    *damaged = false;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    uint8_t *buf = MAP_FAILED;
    *size = 0;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= HEADER_BYTES) {
        *size = (size_t)st.st_size;
        buf = mmap(NULL, *size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    }
    close(fd);
    bool ok = buf != MAP_FAILED && !memcmp(buf, CACHE_MAGIC, 8) &&
              get_le(buf + 60, 4) == spy_crc32c(0, buf, 60) &&
              get_le(buf + 8, 4) == CACHE_VERSION && get_le(buf + 12, 4) == kind &&
              get_le(buf + 16, 8) == *size - HEADER_BYTES &&
              !memcmp(buf + 24, key, CLI_HASH_BYTES) &&
              get_le(buf + 56, 4) == spy_crc32c(0, buf + HEADER_BYTES, *size - HEADER_BYTES);
    if (!ok) {
        *damaged = true;
        if (buf != MAP_FAILED)
            munmap(buf, *size);
        return NULL;
    }
    *payload = buf + HEADER_BYTES;
    *len = *size - HEADER_BYTES;
    return buf;
}

uint8_t *cli_cache_map_file(const char *path, uint32_t kind, const uint8_t *key, size_t *size,
                            const uint8_t **payload, size_t *len, bool *damaged)
{
    return map_file(path, kind, key, size, payload, len, damaged);
}

/* Close *fd when open and mark it closed. */
static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* A new temporary file next to path (".NAME.tmpXXXXXX", which eviction removes once it
 * is old debris): its descriptor, its name in *tmp (malloc'd, with room for one more
 * character), or -1. */
static int temp_file(const char *path, char **tmp)
{
    size_t n = strlen(path) + 17;
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path) + 1 : 0;
    if (!(*tmp = malloc(n)))
        return -1;
    snprintf(*tmp, n, "%.*s.%s.tmpXXXXXX", dirlen, path, path + dirlen);
    return mkstemp(*tmp);
}

/* Write the parts to path through a temporary file of its folder and a rename, without
 * the output's temporary-file bookkeeping (cli_atomic_open), which a guessed output may
 * be using meanwhile, and without fsync: every cache file is checked (length, CRCs) each
 * time it is used, so one that a crash left short or empty is found damaged and only
 * costs a compile, while an fsync would make a miss wait for the disk (and for the
 * journal to commit the freeing of the output the compile replaced: 80 ms for
 * gpt2_124m's). */
static bool write_unsynced(const char *path, const CliPart *parts, int nparts)
{
    char *tmp;
    int fd = temp_file(path, &tmp);
    if (!tmp)
        return false;
    bool ok = fd >= 0;
    for (int i = 0; ok && i < nparts; i++)
        ok = cli_write_all(fd, parts[i].data, parts[i].len);
    mode_t mask = umask(0);
    umask(mask);
    if (fd >= 0)
        ok = close(fd) == 0 && ok && chmod(tmp, 0666 & ~mask) == 0 &&
             rename(tmp, path) == 0;
    if (!ok && fd >= 0)
        unlink(tmp);
    free(tmp);
    return ok;
}

/* Write a cache file: the header, then the payload given as parts (at most 7), of
 * which the first ncrc are covered by the header's CRC. */
bool cli_cache_write_file(const char *path, uint32_t kind, const uint8_t *key,
                          const CliPart *payload, int nparts, int ncrc)
{
    uint8_t head[HEADER_BYTES] = {0};
    CliPart parts[8] = {{head, sizeof head}};
    uint64_t len = 0;
    uint32_t crc = 0;
    for (int i = 0; i < nparts && i < 7; i++) {
        parts[i + 1] = payload[i];
        if (i < ncrc)
            crc = spy_crc32c(crc, payload[i].data, payload[i].len);
        len += payload[i].len;
    }
    memcpy(head, CACHE_MAGIC, 8);
    put_le(head + 8, CACHE_VERSION, 4);
    put_le(head + 12, kind, 4);
    put_le(head + 16, len, 8);
    memcpy(head + 24, key, CLI_HASH_BYTES);
    put_le(head + 56, crc, 4);
    put_le(head + 60, spy_crc32c(0, head, 60), 4);
    return write_unsynced(path, parts, nparts + 1);
}

/* A damaged cache file: say so and remove it (the compile then replaces it). */
static void drop_damaged(const char *path)
{
    cli_progress_clear();
    fprintf(stderr, "spyrec: warning: cache file %s is damaged (length or CRC); "
                    "compiling again\n", path);
    unlink(path);
}

/* Remove the entry of key (KEY.entry and KEY.out), saying which of its files was
 * damaged (bad; NULL: none, an entry whose output is missing). */
static void drop_entry(const char *dir, const uint8_t *key, const char *bad)
{
    char *e = cache_path(dir, key, ".entry"), *o = cache_path(dir, key, ".out");
    if (bad)
        drop_damaged(bad);
    if (e)
        unlink(e);
    if (o)
        unlink(o);
    free(e);
    free(o);
}

/* Add dir-prefix + rel to the file list (what the frontend would have listed). */
static bool files_add(FeFileList *l, const char *model, const char *rel)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 8;
        char **p = realloc(l->paths, (size_t)cap * sizeof *p);
        if (!p)
            return false;
        l->paths = p;
        l->cap = cap;
    }
    size_t pre = model_prefix(model), n = pre + strlen(rel) + 1;
    char *path = malloc(n);
    if (!path)
        return false;
    snprintf(path, n, "%.*s%s", (int)pre, model, rel);
    l->paths[l->n++] = path;
    return true;
}

/* A hit: replay the entry's warnings (payload p) and list the external data files for
 * -MD. False when out of memory. */
static bool take_hit(CliCache *c, const uint8_t *p, const char *rels, size_t nrels,
                     IrDiag *diag, FeFileList *files)
{
    for (size_t off = 0; files && off < nrels; off += strlen(rels + off) + 1)
        if (!files_add(files, c->spec.model, rels + off)) {
            fe_file_list_free(files);
            return false;
        }
    uint64_t nwarns = get_le(p + 8, 8);
    for (size_t off = ENTRY_META; off < ENTRY_META + nwarns;
         off += strlen((const char *)p + off) + 1)
        ir_diag_warn(diag, "%s", (const char *)p + off);
    return true;
}

/* Whether an entry's payload is well formed: the warnings fill the rest and end with a
 * NUL. */
static bool entry_sane(const uint8_t *p, size_t len)
{
    if (len < ENTRY_META)
        return false;
    uint64_t nwarns = get_le(p + 8, 8);
    return nwarns == len - ENTRY_META && (nwarns == 0 || p[len - 1] == '\0');
}

/* Map the entry file epath of key and check it (map_file, entry_sane): the mapping
 * (*size bytes, payload *p of *len), or NULL with *damaged telling whether the file was
 * there but failed a check. */
static uint8_t *map_entry(const char *epath, const uint8_t *key, const uint8_t **p, size_t *len,
                          size_t *size, bool *damaged)
{
    uint8_t *m = epath ? map_file(epath, KIND_ENTRY, key, size, p, len, damaged) : NULL;
    if (m && !entry_sane(*p, *len)) {
        munmap(m, *size);
        *damaged = true;
        return NULL;
    }
    return m;
}

/* Open and map an entry's output file path (KEY.out), which must be len bytes: the
 * mapping (read-only, so that a copy is written straight from the page cache; its CRC
 * is checked as it is written or linked), its open file in *fd (to link or clone from
 * that very file), or NULL: *damaged tells whether it was there but not of that
 * length. */
static const uint8_t *map_out(const char *path, size_t len, int *fd, bool *damaged)
{
    static const uint8_t empty[1];
    struct stat st;
    void *m = MAP_FAILED;
    *damaged = false;
    *fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    if (*fd < 0)
        return NULL;
    if (fstat(*fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == len)
        m = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, *fd, 0) : (void *)empty;
    *damaged = m == MAP_FAILED;
    if (*damaged)
        close_fd(fd);
    return *damaged ? NULL : m;
}

/* Unmap an output mapped by map_out. */
static void unmap_out(const uint8_t *m, size_t len)
{
    if (m && len)
        munmap((void *)m, len);
}

/* The key of the compile's hint: what names its inputs (their paths, the model's
 * resolved), not their bytes, so that it costs no reading. */
static void key_hint(const CliCacheSpec *s, uint8_t *key)
{
    CliHash h;
    char *real = realpath(s->model, NULL);
    const char *model = real ? real : s->model, *target = s->target_path ? s->target_path : "";
    cli_hash_init(&h);
    cli_hash_field(&h, "spyrec compile cache hint", "1", 1);
    cli_hash_field(&h, "version", s->version, strlen(s->version));
    cli_hash_field(&h, "model", model, strlen(model));
    cli_hash_field(&h, "name", s->model_name, strlen(s->model_name));
    cli_hash_field(&h, "flags", s->flags ? s->flags : "", s->flags ? strlen(s->flags) : 0);
    cli_hash_field(&h, "target", target, strlen(target));
    for (int i = 0; i < s->ninputs; i++)
        cli_hash_field(&h, "input", s->inputs[i], strlen(s->inputs[i]));
    cli_hash_final(&h, key);
    free(real);
}

/* The model file as stat sees it (size, modification time, inode) into stamp: a
 * model rewritten since the hint was written makes a wrong guess likely, so none is
 * made (a guess costs disk writes that a wrong one throws away). */
static void model_stamp(const CliCacheSpec *s, uint8_t *stamp)
{
    struct stat st;
    memset(stamp, 0, STAMP_BYTES);
    if (stat(s->model, &st) != 0)
        return;
    put_le(stamp, (uint64_t)st.st_size, 8);
    put_le(stamp + 8, (uint64_t)st.st_mtim.tv_sec, 8);
    put_le(stamp + 16, (uint64_t)st.st_mtim.tv_nsec, 8);
    put_le(stamp + 24, (uint64_t)st.st_ino, 8);
}

/* Record key as the guess for the next compile named as this one, with the model's
 * stamp (a failure only costs the next lookup its guess). */
static void write_hint(const CliCache *c, const uint8_t *key)
{
    char *path = cache_path(c->spec.dir, c->hint_key, ".hint");
    uint8_t stamp[STAMP_BYTES];
    model_stamp(&c->spec, stamp);
    CliPart parts[2] = {{key, CLI_HASH_BYTES}, {stamp, STAMP_BYTES}};
    if (path)
        cli_cache_write_file(path, KIND_HINT, c->hint_key, parts, 2, 2);
    free(path);
}

/* The output of the entry that the hint names, mapped into c->guess_* when the entry
 * passes its checks. Quiet: a damaged or stale guess is only not taken (the lookup
 * reports damage). */
static void guess_entry(CliCache *c)
{
    char *hpath = cache_path(c->spec.dir, c->hint_key, ".hint"), *epath = NULL;
    const uint8_t *hkey, *p;
    size_t hsize, hlen, len, esize;
    bool damaged;
    uint8_t *hint = hpath ? cli_cache_map_file(hpath, KIND_HINT, c->hint_key, &hsize, &hkey, &hlen,
                                               &damaged)
                          : NULL, stamp[STAMP_BYTES], *entry = NULL;
    model_stamp(&c->spec, stamp);
    if (hint && hlen == CLI_HASH_BYTES + STAMP_BYTES &&
        !memcmp(hkey + CLI_HASH_BYTES, stamp, STAMP_BYTES)) {
        memcpy(c->guess_key, hkey, CLI_HASH_BYTES);
        epath = cache_path(c->spec.dir, c->guess_key, ".entry");
        entry = map_entry(epath, c->guess_key, &p, &len, &esize, &damaged);
    }
    if (entry) {
        c->guess_len = (size_t)get_le(p, 8);
        c->guess_crc = (uint32_t)get_le(p + 16, 4);
        c->guess_path = cache_path(c->spec.dir, c->guess_key, ".out");
        c->guess_out = map_out(c->guess_path, c->guess_len, &c->guess_src.fd, &damaged);
        c->guess_src.path = c->spec.link ? c->guess_path : NULL;
        munmap(entry, esize);
    }
    if (hint)
        munmap(hint, hsize);
    free(hpath);
    free(epath);
}

/* The output of the entry of key, whose payload is p: the guessed one when it is that
 * entry's (c->guess_right), else KEY.out mapped; into c->out / out_len / out_crc /
 * out_src / out_path. False when it is missing or of the wrong length (*damaged: the
 * latter). */
static bool entry_output(CliCache *c, const uint8_t *key, const uint8_t *p, bool *damaged)
{
    size_t nout = (size_t)get_le(p, 8);
    uint32_t crc = (uint32_t)get_le(p + 16, 4);
    *damaged = false;
    c->guess_right = c->guess_out && !memcmp(key, c->guess_key, CLI_HASH_BYTES) &&
                     c->guess_len == nout && c->guess_crc == crc;
    if (c->guess_right) {                  /* the writer started on it keeps using it */
        c->out = c->guess_out, c->out_src = c->guess_src, c->out_path = c->guess_path;
        c->guess_out = NULL, c->guess_src.fd = -1, c->guess_path = NULL;
    } else {
        c->out_path = cache_path(c->spec.dir, key, ".out");
        c->out = map_out(c->out_path, nout, &c->out_src.fd, damaged);
        c->out_src.path = c->spec.link ? c->out_path : NULL;
    }
    c->out_len = nout;
    c->out_crc = crc;
    return c->out != NULL;
}

/* The lookup after the base key: the .files entry, the key, the entry and its output. */
static CliCacheStatus lookup_entry(CliCache *c, IrDiag *diag, FeFileList *files)
{
    uint8_t fkey[CLI_HASH_BYTES], key[CLI_HASH_BYTES], *entry = NULL;
    key_files(c, fkey);
    char *fpath = cache_path(c->spec.dir, fkey, ".files"), *epath = NULL;
    const uint8_t *rels = NULL, *p;
    size_t nrels = 0, len, fsize, esize;
    bool damaged;
    uint8_t *fbuf = fpath ? cli_cache_map_file(fpath, KIND_FILES, fkey, &fsize, &rels, &nrels, &damaged)
                          : NULL;
    if (!fbuf && fpath && damaged)
        drop_damaged(fpath);
    c->have_manifest = fbuf && (nrels == 0 || rels[nrels - 1] == '\0');
    if (c->have_manifest && key_full(c, (const char *)rels, nrels, key)) {
        memcpy(c->key_bytes, key, CLI_HASH_BYTES);
        cli_hash_hex(key, CLI_HASH_BYTES, c->key);
        epath = cache_path(c->spec.dir, key, ".entry");
        entry = map_entry(epath, key, &p, &len, &esize, &damaged);
        if (!entry && damaged)
            drop_entry(c->spec.dir, key, epath);
        else if (entry && !entry_output(c, key, p, &damaged))
            drop_entry(c->spec.dir, key, damaged ? c->out_path : NULL);
        else if (entry && take_hit(c, p, (const char *)rels, nrels, diag, files)) {
            utimensat(AT_FDCWD, epath, NULL, 0);   /* for eviction, and the linked */
            utimensat(AT_FDCWD, c->out_path, NULL, 0);   /* output is new for make */
            utimensat(AT_FDCWD, fpath, NULL, 0);
            c->status = CLI_CACHE_HIT;
            if (!c->guess_right)
                write_hint(c, key);
        }
    }
    if (entry)
        munmap(entry, esize);
    if (fbuf)
        munmap(fbuf, fsize);
    free(fpath);
    free(epath);
    return c->status;
}

void cli_cache_guess(CliCache *c, const CliCacheSpec *s)
{
    memset(c, 0, sizeof *c);
    c->out_src.fd = c->guess_src.fd = -1;
    c->spec = *s;
    c->status = CLI_CACHE_OFF;
    if (!s->dir)
        return;
    if (!make_dirs(s->dir)) {
        cli_progress_clear();
        fprintf(stderr, "spyrec: warning: cache folder %s: %s; compiling without the cache\n",
                s->dir, strerror(errno));
        return;
    }
    c->status = CLI_CACHE_MISS;
    key_hint(s, c->hint_key);
    guess_entry(c);
}

CliCacheStatus cli_cache_lookup(CliCache *c, IrDiag *diag, FeFileList *files)
{
    if (c->status == CLI_CACHE_OFF)
        return c->status;
    c->unkeyed = !key_base(&c->base, &c->spec);
    if (c->unkeyed)
        return c->status;
    return lookup_entry(c, diag, files);
}

/* The relative paths (NUL-terminated, one after the other) of the external data
 * files in files, malloc'd, with their byte count in *n; NULL when one lies outside
 * the model's folder or out of memory. */
static char *relative_files(const char *model, const FeFileList *files, size_t *n)
{
    size_t pre = model_prefix(model), len = 0;
    for (int i = 0; files && i < files->n; i++) {
        if (strncmp(files->paths[i], model, pre) != 0)
            return NULL;
        len += strlen(files->paths[i]) - pre + 1;
    }
    char *rels = malloc(len + 1);
    *n = 0;
    for (int i = 0; rels && files && i < files->n; i++) {
        size_t k = strlen(files->paths[i]) - pre + 1;
        memcpy(rels + *n, files->paths[i] + pre, k);
        *n += k;
    }
    return rels;
}

/* The compile's warnings without their "MODEL: warning: " prefix (added again when
 * they are replayed), each NUL-terminated, malloc'd; their byte count in *n. */
static char *warning_text(const IrDiag *diag, size_t *n)
{
    char prefix[1024];
    snprintf(prefix, sizeof prefix, "%s: warning: ", diag->file ? diag->file : "spyrec");
    size_t pre = strlen(prefix), len = 0;
    for (int i = 0; i < diag->nmsgs; i++)
        if (!strncmp(diag->msgs[i], prefix, pre))
            len += strlen(diag->msgs[i]) - pre + 1;
    char *text = malloc(len + 1);
    *n = 0;
    for (int i = 0; text && i < diag->nmsgs; i++)
        if (!strncmp(diag->msgs[i], prefix, pre)) {
            size_t k = strlen(diag->msgs[i]) - pre + 1;
            memcpy(text + *n, diag->msgs[i] + pre, k);
            *n += k;
        }
    return text;
}

/* Store the output out (len bytes) as path (KEY.out): where allowed (c->spec.link), the
 * output file itself (of) by a hard link, made under a name of its own next to a new
 * temporary file of the folder and renamed to path (atomic); else, or where the link
 * is refused, a copy. */
static bool store_out(const CliCache *c, const char *path, const void *out, size_t len,
                      const CliOutFile *of)
{
    char *tmp = NULL, *lnk = NULL;
    int fd = c->spec.link && of && of->path ? temp_file(path, &tmp) : -1;
    bool ok = false;
    if (fd >= 0 && (lnk = malloc(strlen(tmp) + 2))) {
        snprintf(lnk, strlen(tmp) + 2, "%sL", tmp);
        ok = cli_link_checked(of->path, lnk, &of->id);
        if (ok && rename(lnk, path) != 0) {
            unlink(lnk);
            ok = false;
        }
    }
    if (fd >= 0) {
        close(fd);
        unlink(tmp);
    }
    free(tmp);
    free(lnk);
    CliPart part = {out, len};
    return ok || write_unsynced(path, &part, 1);
}

/* Write the .files entry (unless the lookup found it), then the KEY.out and the
 * KEY.entry of the compile. */
static bool store_files(CliCache *c, const void *out, size_t len, const CliOutFile *of,
                        const char *rels, size_t nrels, const char *warns, size_t nwarns)
{
    uint8_t fkey[CLI_HASH_BYTES], key[CLI_HASH_BYTES], meta[ENTRY_META] = {0};
    key_files(c, fkey);
    char *fpath = cache_path(c->spec.dir, fkey, ".files"), *epath = NULL, *opath = NULL;
    CliPart flist = {rels, nrels};
    bool ok = fpath && (c->have_manifest || cli_cache_write_file(fpath, KIND_FILES, fkey, &flist, 1, 1));
    if (ok && c->key[0])                   /* the lookup hashed the external data */
        memcpy(key, c->key_bytes, CLI_HASH_BYTES);
    else
        ok = ok && key_full(c, rels, nrels, key);
    if (ok) {
        cli_hash_hex(key, CLI_HASH_BYTES, c->key);
        put_le(meta, len, 8);
        put_le(meta + 8, nwarns, 8);
        put_le(meta + 16, spy_crc32c(0, out, len), 4);
        CliPart parts[2] = {{meta, ENTRY_META}, {warns, nwarns}};
        ok = (opath = cache_path(c->spec.dir, key, ".out")) && store_out(c, opath, out, len, of) &&
             (epath = cache_path(c->spec.dir, key, ".entry")) &&
             cli_cache_write_file(epath, KIND_ENTRY, key, parts, 2, 2);
    }
    if (ok)
        write_hint(c, key);
    free(fpath);
    free(epath);
    free(opath);
    return ok;
}

void cli_cache_store(CliCache *c, const void *out, size_t len, const CliOutFile *of,
                     const IrDiag *diag, const FeFileList *files)
{
    if (c->status != CLI_CACHE_MISS || c->unkeyed)
        return;
    size_t nrels = 0, nwarns = 0;
    char *rels = relative_files(c->spec.model, files, &nrels);
    char *warns = warning_text(diag, &nwarns);
    if (!rels || !warns || !store_files(c, out, len, of, rels, nrels, warns, nwarns))
        fprintf(stderr, "spyrec: warning: the compile was not stored in the cache %s\n",
                c->spec.dir);
    else if (c->spec.max_bytes)
        cli_cache_evict(c->spec.dir, c->spec.max_bytes);
    free(rels);
    free(warns);
}

void cli_cache_free(CliCache *c)
{
    unmap_out(c->out, c->out_len);
    unmap_out(c->guess_out, c->guess_len);
    c->guess_out = NULL;
    c->out = NULL;
    close_fd(&c->guess_src.fd);
    close_fd(&c->out_src.fd);
    free(c->out_path);
    free(c->guess_path);
    c->out_path = c->guess_path = NULL;
    c->out_src.path = c->guess_src.path = NULL;
}

void cli_cache_damaged(CliCache *c)
{
    if (c->status != CLI_CACHE_HIT)
        return;
    drop_entry(c->spec.dir, c->key_bytes, c->out_path);
    cli_cache_free(c);
    c->status = CLI_CACHE_MISS;
}
