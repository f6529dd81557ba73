/* spyrec_cacheevict.c: the compile cache's bound (spyrec --cache-max): after a store,
 * the least recently used cache files go until the folder holds at most the bound.
 *
 * "Used" is the modification time, which a hit sets to now on the files it read
 * (spyrec_cache.c). An entry's two files, KEY.entry and KEY.out, go together, so that
 * no entry is left without its output nor an output without its entry. Temporary files
 * left by killed compiles (".NAME.tmpXXXXXX") go once they are an hour old. Files that
 * vanish meanwhile (another compile evicting) are skipped. Removing a KEY.out that an
 * output still links only removes its name: the blocks stay the output's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"

#define STALE_TMP_SECONDS 3600            /* temporary files older than this are debris */

/* One file of the cache folder, for eviction. */
typedef struct {
    char *name;
    uint64_t size;
    struct timespec mtime;
    bool gone;                             /* removed by this eviction */
} CacheFile;

/* Order of eviction: least recently used first, then by name. */
static int cmp_age(const void *pa, const void *pb)
{
    const CacheFile *a = pa, *b = pb;
    if (a->mtime.tv_sec != b->mtime.tv_sec)
        return a->mtime.tv_sec < b->mtime.tv_sec ? -1 : 1;
    if (a->mtime.tv_nsec != b->mtime.tv_nsec)
        return a->mtime.tv_nsec < b->mtime.tv_nsec ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* Whether name is a cache file (KEY.entry, KEY.out, KEY.files, KEY.hint or KEY.stat). */
static bool is_cache_file(const char *name)
{
    size_t n = strlen(name);
    return (n == 2 * CLI_HASH_BYTES + 4 && !strcmp(name + n - 4, ".out")) ||
           (n == 2 * CLI_HASH_BYTES + 6 && (!strcmp(name + n - 6, ".entry") ||
                                            !strcmp(name + n - 6, ".files"))) ||
           (n == 2 * CLI_HASH_BYTES + 5 && (!strcmp(name + n - 5, ".hint") ||
                                            !strcmp(name + n - 5, ".stat")));
}

/* Order of names, of pointers to cache files. */
static int cmp_name(const void *pa, const void *pb)
{
    return strcmp((*(CacheFile *const *)pa)->name, (*(CacheFile *const *)pb)->name);
}

/* The other file of an entry (KEY.out of KEY.entry and back) among the n files sorted
 * by name in byname, or NULL. */
static CacheFile *partner(CacheFile **byname, size_t n, const char *name)
{
    char want[2 * CLI_HASH_BYTES + 8];
    int k = 2 * CLI_HASH_BYTES;
    if (!strcmp(name + k, ".entry") || !strcmp(name + k, ".out"))
        snprintf(want, sizeof want, "%.*s%s", k, name, name[k + 1] == 'e' ? ".out" : ".entry");
    else
        return NULL;
    CacheFile key = {.name = want}, *kp = &key, **f = byname ? bsearch(&kp, byname, n, sizeof *byname, cmp_name)
                                                             : NULL;
    return f ? *f : NULL;
}

/* Remove cache file f of the folder d (once) and take its size off *total. */
static void remove_file(DIR *d, CacheFile *f, uint64_t *total)
{
    if (!f || f->gone)
        return;
    f->gone = true;
    if (unlinkat(dirfd(d), f->name, 0) == 0 || errno == ENOENT)
        *total -= f->size;
}

void cli_cache_evict(const char *dir, uint64_t max)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    CacheFile *fs = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0;
    time_t now = time(NULL);
    struct dirent *e;
    while ((e = readdir(d))) {
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (e->d_name[0] == '.' && strstr(e->d_name, ".tmp") &&
            now - st.st_mtim.tv_sec > STALE_TMP_SECONDS) {
            unlinkat(dirfd(d), e->d_name, 0);
            continue;
        }
        if (!is_cache_file(e->d_name))
            continue;
        if (n == cap) {
            CacheFile *p = realloc(fs, (cap = cap ? 2 * cap : 64) * sizeof *p);
            if (!p)
                break;
            fs = p;
        }
        if (!(fs[n].name = strdup(e->d_name)))
            break;
        fs[n].size = (uint64_t)st.st_size;
        fs[n].mtime = st.st_mtim;
        fs[n].gone = false;
        total += fs[n++].size;
    }
    qsort(fs, n, sizeof *fs, cmp_age);
    CacheFile **byname = calloc(n + 1, sizeof *byname);
    for (size_t i = 0; byname && i < n; i++)
        byname[i] = &fs[i];
    if (byname)
        qsort(byname, n, sizeof *byname, cmp_name);
    for (size_t i = 0; i < n && total > max; i++)
        if (!fs[i].gone) {                 /* an entry's two files go together */
            remove_file(d, &fs[i], &total);
            remove_file(d, partner(byname, n, fs[i].name), &total);
        }
    for (size_t i = 0; i < n; i++)
        free(fs[i].name);
    free(byname);
    free(fs);
    closedir(d);
}
