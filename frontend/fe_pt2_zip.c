/* fe_pt2_zip.c: the .pt2 zip container, read with libzip and checked before use.
 *
 * Every entry is validated when the archive is opened, whether it is needed or not:
 * its name (relative, no "..", no duplicates), its compression method (stored or
 * deflate), no encryption, and the total uncompressed size. Entries are read whole
 * and their length and CRC checked (libzip reports a CRC mismatch at the end of the
 * read). Nothing is ever extracted to disk.
 */
#include <stdlib.h>
#include <string.h>

#include <zip.h>

#include "frontend/fe_pt2_priv.h"

/* Describe what is wrong with an entry name, or NULL if it is acceptable. Names are
 * raw bytes from the archive; anything that could escape a folder or confuse a
 * reader (absolute paths, drive letters, backslashes, "..", control bytes) is
 * refused. */
const char *fe_pt2_name_problem(const char *name)
{
    size_t len = strlen(name);
    if (len == 0)
        return "empty entry name";
    if (len > 1024)
        return "entry name longer than 1024 bytes";
    if (name[0] == '/')
        return "absolute entry name";
    if (len >= 2 && name[1] == ':')
        return "entry name with a drive letter";
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c < 0x20 || c == 0x7f)
            return "control character in entry name";
        if (c == '\\')
            return "backslash in entry name";
    }
    const char *s = name;
    while (*s) {
        const char *e = strchr(s, '/');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == 2 && s[0] == '.' && s[1] == '.')
            return "'..' component in entry name";
        if (n == 1 && s[0] == '.')
            return "'.' component in entry name";
        if (n == 0)
            return "empty component in entry name";
        if (!e)
            break;
        s = e + 1;
        if (!*s) /* a trailing '/' is a directory entry: fine */
            break;
    }
    return NULL;
}

/* qsort comparator: entries by name. */
static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const FePt2Entry *)a)->name, ((const FePt2Entry *)b)->name);
}

/* Validate one entry's metadata (st) and record it. False after reporting. */
static bool check_entry(FePt2Zip *z, uint64_t i, const zip_stat_t *st, uint64_t *total,
                        uint64_t max_total)
{
    const char *raw = zip_get_name(z->za, i, ZIP_FL_ENC_RAW);
    if (!raw) {
        ir_diag_error(z->diag, "zip entry %llu has no readable name",
                      (unsigned long long)i);
        return false;
    }
    const char *why = fe_pt2_name_problem(raw);
    if (why) {
        ir_diag_error(z->diag, "zip entry '%.200s': %s", raw, why);
        return false;
    }
    if (!(st->valid & ZIP_STAT_SIZE) || !(st->valid & ZIP_STAT_COMP_METHOD)) {
        ir_diag_error(z->diag, "zip entry '%s': size or method unknown", raw);
        return false;
    }
    if (st->comp_method != ZIP_CM_STORE && st->comp_method != ZIP_CM_DEFLATE) {
        ir_diag_error(z->diag,
                      "zip entry '%s': compression method %d is not supported "
                      "(only stored or deflate)", raw, (int)st->comp_method);
        return false;
    }
    if ((st->valid & ZIP_STAT_ENCRYPTION_METHOD) && st->encryption_method != ZIP_EM_NONE) {
        ir_diag_error(z->diag, "zip entry '%s': encrypted entries are not supported", raw);
        return false;
    }
    if (st->size > max_total - *total) {
        ir_diag_error(z->diag,
                      "zip entry '%s': archive expands past the limit of %llu bytes", raw,
                      (unsigned long long)max_total);
        return false;
    }
    *total += st->size;
    FePt2Entry *e = &z->ent[z->n];
    e->name = strdup(raw);
    if (!e->name) {
        ir_diag_error(z->diag, "out of memory reading the zip directory");
        return false;
    }
    e->index = i;
    e->size = st->size;
    z->n++;
    return true;
}

/* Open the archive and validate its directory (see the file comment). */
bool fe_pt2_zip_open(FePt2Zip *z, const char *path, IrDiag *diag, uint64_t max_total)
{
    memset(z, 0, sizeof *z);
    z->path = path;
    z->diag = diag;
    int zerr = 0;
    z->za = zip_open(path, ZIP_RDONLY | ZIP_CHECKCONS, &zerr);
    if (!z->za && zerr == ZIP_ER_EXISTS) { /* libzip refuses duplicate names itself */
        ir_diag_error(diag, "not a valid zip archive: an entry name appears more than once");
        return false;
    }
    if (!z->za) {
        zip_error_t e;
        zip_error_init_with_code(&e, zerr);
        ir_diag_error(diag, "not a valid zip archive: %s", zip_error_strerror(&e));
        zip_error_fini(&e);
        return false;
    }
    zip_int64_t n = zip_get_num_entries(z->za, 0);
    if (n < 0 || n > FE_PT2_MAX_ENTRIES) {
        ir_diag_error(diag, "zip archive has %lld entries (at most %d supported)",
                      (long long)n, FE_PT2_MAX_ENTRIES);
        return false;
    }
    z->ent = calloc((size_t)n + 1, sizeof *z->ent);
    if (!z->ent) {
        ir_diag_error(diag, "out of memory reading the zip directory");
        return false;
    }
    uint64_t total = 0;
    bool ok = true;
    for (zip_int64_t i = 0; i < n && ok; i++) {
        zip_stat_t st;
        zip_stat_init(&st);
        if (zip_stat_index(z->za, (zip_uint64_t)i, ZIP_FL_ENC_RAW, &st) != 0) {
            ir_diag_error(diag, "zip entry %lld: %s", (long long)i, zip_strerror(z->za));
            return false;
        }
        ok = check_entry(z, (uint64_t)i, &st, &total, max_total);
    }
    if (!ok)
        return false;
    qsort(z->ent, z->n, sizeof *z->ent, cmp_entry);
    for (size_t i = 1; i < z->n; i++)
        if (strcmp(z->ent[i - 1].name, z->ent[i].name) == 0) {
            ir_diag_error(diag, "zip entry '%s' appears more than once", z->ent[i].name);
            return false;
        }
    return true;
}

/* Release everything fe_pt2_zip_open acquired (safe on a partly opened archive). */
void fe_pt2_zip_close(FePt2Zip *z)
{
    if (z->ent)
        for (size_t i = 0; i < z->n; i++)
            free(z->ent[i].name);
    free(z->ent);
    if (z->za)
        zip_discard(z->za);
    memset(z, 0, sizeof *z);
}

/* Binary search of an entry by exact name. */
long fe_pt2_zip_find(const FePt2Zip *z, const char *name)
{
    size_t lo = 0, hi = z->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(z->ent[mid].name, name);
        if (c == 0)
            return (long)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* Read a whole entry and check that it has exactly its recorded size (libzip checks
 * the CRC when the end of the data is reached). */
uint8_t *fe_pt2_zip_read(FePt2Zip *z, long i, size_t *len)
{
    IR_ASSERT(i >= 0 && (size_t)i < z->n);
    const char *name = z->ent[i].name;
    uint64_t size = z->ent[i].size;
    if (size >= SIZE_MAX) {
        ir_diag_error(z->diag, "zip entry '%s': too large", name);
        return NULL;
    }
    uint8_t *buf = malloc((size_t)size + 1);
    if (!buf) {
        ir_diag_error(z->diag, "zip entry '%s': out of memory for %llu bytes", name,
                      (unsigned long long)size);
        return NULL;
    }
    zip_file_t *f = zip_fopen_index(z->za, z->ent[i].index, 0);
    if (!f) {
        ir_diag_error(z->diag, "zip entry '%s': %s", name, zip_strerror(z->za));
        free(buf);
        return NULL;
    }
    uint64_t got = 0;
    zip_int64_t r = 1;
    while (got < size && r > 0) {
        r = zip_fread(f, buf + got, size - got);
        if (r > 0)
            got += (uint64_t)r;
    }
    uint8_t extra;
    if (r >= 0 && got == size)
        r = zip_fread(f, &extra, 1); /* must be at the end; completes the CRC check */
    if (r != 0 || got != size) {
        if (r < 0)
            ir_diag_error(z->diag, "zip entry '%s': at byte %llu: %s", name,
                          (unsigned long long)got, zip_file_strerror(f));
        else
            ir_diag_error(z->diag,
                          "zip entry '%s': data size differs from the recorded size %llu",
                          name, (unsigned long long)size);
        zip_fclose(f);
        free(buf);
        return NULL;
    }
    zip_fclose(f);
    buf[size] = 0;
    *len = (size_t)size;
    return buf;
}
