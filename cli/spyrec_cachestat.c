/* spyrec_cachestat.c: the compile cache's record of file digests by stat, so that a
 * hit does not hash a large input again (ccache's "direct mode" stat check).
 *
 * Hashing the inputs is most of a hit: half a gigabyte of external data takes a
 * core about half a second. For each input of at least STAT_MIN_BYTES, the cache
 * folder holds SKEY.stat (the header of spyrec_cache.c, kind CLI_CACHE_STAT; SKEY: the
 * SHA-256 of the file's resolved path, device and inode), whose payload is
 *    0  device, inode, size                         u64 each
 *   24  modification time, change time (s, ns)      u64 each
 *   56  the file's digest (cli_hash_files)          32 bytes
 * When the file's stat matches all of it, the digest is taken without reading the
 * file. Writing a file changes its change time (ctime), which no user can set back,
 * and replacing it changes its inode or ctime; so a file whose record matches has the
 * bytes that were hashed, provided the record could not be written in the same clock
 * tick as a later write. Hence a record is written only when the file's stat was the
 * same before and after hashing and its ctime and mtime are at least settled_ns (2 s)
 * older (settled_ns) than the clock read before the hashing began (ccache's "too new" rule); a file
 * written just now is hashed again until it has settled. A damaged record fails its
 * CRC and is ignored (and replaced).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/cli.h"

#define STAT_MIN_BYTES ((uint64_t)8 << 20)   /* smaller files are hashed every time */
static int64_t settled_ns = 2000000000LL;   /* see the top; tests may change it */
#define STAT_FIELDS 7
#define STAT_PAYLOAD (STAT_FIELDS * 8 + CLI_HASH_BYTES)

/* The stat of path as STAT_FIELDS numbers (device, inode, size, mtime s/ns, ctime
 * s/ns); false when it is not a regular file of at least STAT_MIN_BYTES. */
static bool stat_fields(const char *path, uint64_t *v)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size < STAT_MIN_BYTES)
        return false;
    v[0] = (uint64_t)st.st_dev, v[1] = (uint64_t)st.st_ino, v[2] = (uint64_t)st.st_size;
    v[3] = (uint64_t)st.st_mtim.tv_sec, v[4] = (uint64_t)st.st_mtim.tv_nsec;
    v[5] = (uint64_t)st.st_ctim.tv_sec, v[6] = (uint64_t)st.st_ctim.tv_nsec;
    return true;
}

/* The fields as the little-endian bytes of a record's payload. */
static void fields_bytes(const uint64_t *v, uint8_t *out)
{
    for (int i = 0; i < STAT_FIELDS; i++)
        for (int b = 0; b < 8; b++)
            out[8 * i + b] = (uint8_t)(v[i] >> (8 * b));
}

/* "DIR/SKEY.stat" of path with stat fields v (malloc'd), its key into key. */
static char *record_path(const char *dir, const char *path, const uint64_t *v, uint8_t *key)
{
    CliHash h;
    char *real = realpath(path, NULL), hex[2 * CLI_HASH_BYTES + 1];
    const char *name = real ? real : path;
    cli_hash_init(&h);
    cli_hash_field(&h, "spyrec compile cache stat", "1", 1);
    cli_hash_field(&h, "path", name, strlen(name));
    cli_hash_field(&h, "device and inode", v, 2 * sizeof *v);
    cli_hash_final(&h, key);
    free(real);
    cli_hash_hex(key, CLI_HASH_BYTES, hex);
    size_t n = strlen(dir) + sizeof hex + 8;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s.stat", dir, hex);
    return p;
}

/* Whether the record of path (stat fields v) matches; its digest into digest. */
static bool record_read(const char *dir, const char *path, const uint64_t *v, uint8_t *digest)
{
    uint8_t key[CLI_HASH_BYTES], want[STAT_FIELDS * 8];
    char *rp = record_path(dir, path, v, key);
    const uint8_t *p;
    size_t size, len;
    bool damaged, ok = false;
    uint8_t *m = rp ? cli_cache_map_file(rp, CLI_CACHE_STAT, key, &size, &p, &len, &damaged)
                    : NULL;
    fields_bytes(v, want);
    if (m) {
        ok = len == STAT_PAYLOAD && !memcmp(p, want, sizeof want);
        if (ok)
            memcpy(digest, p + sizeof want, CLI_HASH_BYTES);
        munmap(m, size);
    }
    free(rp);
    return ok;
}

/* Record digest for path when its stat before hashing (v) still holds and has settled
 * (see the top); now_ns: the clock before the hashing. A failure only costs a hash. */
static void record_write(const char *dir, const char *path, const uint64_t *v,
                         const uint8_t *digest, int64_t now_ns)
{
    uint64_t after[STAT_FIELDS];
    int64_t mtime = (int64_t)v[3] * 1000000000LL + (int64_t)v[4];
    int64_t ctime = (int64_t)v[5] * 1000000000LL + (int64_t)v[6];
    if (!stat_fields(path, after) || memcmp(after, v, sizeof after) ||
        mtime > now_ns - settled_ns || ctime > now_ns - settled_ns)
        return;
    uint8_t key[CLI_HASH_BYTES], fields[STAT_FIELDS * 8];
    char *rp = record_path(dir, path, v, key);
    fields_bytes(v, fields);
    CliPart parts[2] = {{fields, sizeof fields}, {digest, CLI_HASH_BYTES}};
    if (rp)
        cli_cache_write_file(rp, CLI_CACHE_STAT, key, parts, 2, 2);
    free(rp);
}

void cli_cache_stat_settle(int64_t ns)
{
    settled_ns = ns;
}

bool cli_cache_hash_files(const char *dir, const char *const *paths, int n,
                          uint8_t (*digest)[CLI_HASH_BYTES], bool *ok)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now_ns = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
    uint64_t (*v)[STAT_FIELDS] = calloc((size_t)n + 1, sizeof *v);
    bool *big = calloc((size_t)n + 1, sizeof *big);
    int *todo = calloc((size_t)n + 1, sizeof *todo), ntodo = 0;
    const char **tpaths = calloc((size_t)n + 1, sizeof *tpaths);
    uint8_t (*td)[CLI_HASH_BYTES] = calloc((size_t)n + 1, sizeof *td);
    bool *tok = calloc((size_t)n + 1, sizeof *tok), done = v && big && todo && tpaths && td && tok;
    for (int i = 0; done && i < n; i++) {
        big[i] = dir && stat_fields(paths[i], v[i]);
        ok[i] = big[i] && record_read(dir, paths[i], v[i], digest[i]);
        if (!ok[i])
            tpaths[ntodo] = paths[i], todo[ntodo++] = i;
    }
    done = done && (ntodo == 0 || cli_hash_files(tpaths, ntodo, td, tok));
    for (int k = 0; done && k < ntodo; k++) {
        int i = todo[k];
        ok[i] = tok[k];
        memcpy(digest[i], td[k], CLI_HASH_BYTES);
        if (ok[i] && big[i])
            record_write(dir, paths[i], v[i], digest[i], now_ns);
    }
    free(v);
    free(big);
    free(todo);
    free(tpaths);
    free(td);
    free(tok);
    return done;
}
