/* rt_load.c: reading a bundle from a file or memory and checking its container:
 * header, version, section table, section layout and CRCs. Table contents are
 * verified by rt_verify.c; nothing in a section is dereferenced before that.
 *
 * A bundle file is mapped read-only (MAP_PRIVATE), not copied: the CRC pass over the
 * sections is what pages it in, and sessions read the constants straight from the
 * mapping (segment 0, which the verifier keeps free of stores), so a loaded model
 * costs the bundle's size in memory once, shared with the page cache. Nothing is read
 * past the size fstat reported at load (the header's file_size must equal it). The
 * file must not be truncated or rewritten in place while the model is loaded (as for
 * a shared library): a page cut off would raise SIGBUS, a rewritten one would change
 * the constants. spyrec replaces bundles by rename, which leaves a loaded one intact.
 * Files that cannot be mapped (pipes, character devices, some pseudo file systems)
 * are read into memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_model.h"

#define RT_MAX_SECTIONS 64

/* Records the first error of a load (later ones are ignored). */
void rt_err_set(RtErr *e, spy_status st, const char *fmt, ...) {
    if (e->status != SPY_OK)
        return;
    e->status = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
}

/* Checks magic, version, feature bits and the sizes the header announces. */
static spy_status check_header(spy_model *m, RtErr *e) {
    if (m->size < sizeof(SpyHeader))
        return rt_err_set(e, SPY_E_BAD_BUNDLE,
                          "file is %zu bytes, shorter than the %zu-byte header (truncated?)",
                          m->size, sizeof(SpyHeader)),
               e->status;
    const SpyHeader *h = (const SpyHeader *)m->file;
    m->hdr = h;
    if (memcmp(h->magic, SPY_SBIN_MAGIC, 8) != 0)
        rt_err_set(e, SPY_E_BAD_BUNDLE, "offset 0: bad magic, not a spyrec bundle");
    else if (h->major > SPY_SBIN_MAJOR)
        rt_err_set(e, SPY_E_VERSION,
                   "bundle needs format v%u.%u but this runtime (%s) reads format v%d.x; "
                   "rebuild it with this spyrec version, or use a newer runtime",
                   h->major, h->minor, spy_version(), SPY_SBIN_MAJOR);
    else if (h->major < SPY_SBIN_MAJOR)
        rt_err_set(e, SPY_E_VERSION,
                   "bundle has old format v%u.%u; this runtime (%s) reads format v%d.x; "
                   "rebuild it with this spyrec version",
                   h->major, h->minor, spy_version(), SPY_SBIN_MAJOR);
    else if (h->features & ~SPY_FEATURES_KNOWN)
        rt_err_set(e, SPY_E_VERSION,
                   "offset 12: unknown required feature bits 0x%x; rebuild the bundle with "
                   "this spyrec version",
                   h->features & ~SPY_FEATURES_KNOWN);
    else if (h->header_bytes != sizeof(SpyHeader))
        rt_err_set(e, SPY_E_BAD_BUNDLE, "offset 16: header_bytes is %u, expected %zu",
                   h->header_bytes, sizeof(SpyHeader));
    else if (h->file_size != m->size)
        rt_err_set(e, SPY_E_BAD_BUNDLE,
                   "offset 24: header says the file has %llu bytes but it has %zu "
                   "(truncated or padded)",
                   (unsigned long long)h->file_size, m->size);
    else if (h->nsections == 0 || h->nsections > RT_MAX_SECTIONS)
        rt_err_set(e, SPY_E_BAD_BUNDLE, "offset 20: section count %u outside 1..%d",
                   h->nsections, RT_MAX_SECTIONS);
    else if (sizeof(SpyHeader) + (size_t)h->nsections * sizeof(SpySection) > m->size)
        rt_err_set(e, SPY_E_BAD_BUNDLE, "section table (%u entries) passes the end of the file",
                   h->nsections);
    return e->status;
}

/* Checks the CRC32C over header (with table_crc = 0) and section table. */
static spy_status check_table_crc(spy_model *m, RtErr *e) {
    SpyHeader h = *m->hdr;
    h.table_crc = 0;
    uint32_t crc = spy_crc32c(0, &h, sizeof h);
    crc = spy_crc32c(crc, m->file + sizeof h, (size_t)h.nsections * sizeof(SpySection));
    if (crc != m->hdr->table_crc)
        rt_err_set(e, SPY_E_BAD_BUNDLE,
                   "offset 32: header/section-table CRC32C mismatch (stored 0x%08x, computed "
                   "0x%08x): the file is corrupted",
                   m->hdr->table_crc, crc);
    return e->status;
}

/* Checks one section entry's placement and CRC; records it in m->sec. */
static spy_status check_section(spy_model *m, uint32_t i, RtErr *e) {
    const SpySection *s = (const SpySection *)(m->file + sizeof(SpyHeader)) + i;
    size_t at = sizeof(SpyHeader) + (size_t)i * sizeof(SpySection);
    uint64_t table_end = sizeof(SpyHeader) + (uint64_t)m->hdr->nsections * sizeof(SpySection);
    const char *nm = rt_section_name(s->id);
    if (s->id == 0 || s->id >= SPY_SEC_MAX || !strcmp(nm, "?"))
        rt_err_set(e, SPY_E_BAD_BUNDLE, "offset %zu: section %u has unknown id %u", at, i,
                   s->id);
    else if (m->sec[s->id])
        rt_err_set(e, SPY_E_BAD_BUNDLE, "offset %zu: duplicate section %s", at, nm);
    else if (s->align != SPY_SBIN_ALIGN || s->offset % SPY_SBIN_ALIGN != 0)
        rt_err_set(e, SPY_E_BAD_BUNDLE,
                   "offset %zu: section %s misaligned (offset %llu, align %u; need %d)", at, nm,
                   (unsigned long long)s->offset, s->align, SPY_SBIN_ALIGN);
    else if (s->offset < table_end)
        rt_err_set(e, SPY_E_BAD_BUNDLE,
                   "offset %zu: section %s at offset %llu overlaps the header or table", at, nm,
                   (unsigned long long)s->offset);
    else if (s->size > m->size || s->offset > m->size - s->size)
        rt_err_set(e, SPY_E_BAD_BUNDLE,
                   "offset %zu: section %s [%llu, +%llu) passes the end of the %zu-byte file",
                   at, nm, (unsigned long long)s->offset, (unsigned long long)s->size, m->size);
    if (e->status)
        return e->status;
    uint32_t crc = spy_crc32c(0, m->file + s->offset, (size_t)s->size);
    if (crc != s->crc32c)
        return rt_err_set(e, SPY_E_BAD_BUNDLE,
                          "section %s at offset %llu: CRC32C mismatch (stored 0x%08x, computed "
                          "0x%08x): the file is corrupted",
                          nm, (unsigned long long)s->offset, s->crc32c, crc),
               e->status;
    m->sec[s->id] = s;
    return SPY_OK;
}

/* Refuses overlapping sections (pairwise; at most RT_MAX_SECTIONS of them). */
static spy_status check_overlap(spy_model *m, RtErr *e) {
    for (uint32_t a = 1; a < SPY_SEC_MAX; a++)
        for (uint32_t b = a + 1; b < SPY_SEC_MAX; b++) {
            const SpySection *x = m->sec[a], *y = m->sec[b];
            if (!x || !y || x->size == 0 || y->size == 0)
                continue;
            if (x->offset < y->offset + y->size && y->offset < x->offset + x->size)
                return rt_err_set(e, SPY_E_BAD_BUNDLE,
                                  "sections %s [%llu, +%llu) and %s [%llu, +%llu) overlap",
                                  rt_section_name(a), (unsigned long long)x->offset,
                                  (unsigned long long)x->size, rt_section_name(b),
                                  (unsigned long long)y->offset, (unsigned long long)y->size),
                       e->status;
        }
    return SPY_OK;
}

/* Requires every byte outside the header, the section table and the sections to be
 * zero (sbin.md: the padding before the first section, between sections and after the
 * last one up to file_size); names the offset of the first other byte. Sections are
 * known not to overlap (check_overlap). */
static spy_status check_padding(spy_model *m, RtErr *e) {
    uint64_t pos = sizeof(SpyHeader) + (uint64_t)m->hdr->nsections * sizeof(SpySection);
    for (;;) {
        const SpySection *next = NULL;     /* the first non-empty section ending past pos */
        for (uint32_t id = 1; id < SPY_SEC_MAX; id++) {
            const SpySection *s = m->sec[id];
            if (s && s->size && s->offset + s->size > pos && (!next || s->offset < next->offset))
                next = s;
        }
        uint64_t end = next ? next->offset : m->size;
        for (uint64_t at = pos; at < end; at++)
            if (m->file[at] != 0)
                return rt_err_set(e, SPY_E_BAD_BUNDLE,
                                  "offset %llu: padding byte 0x%02x %s%s is not zero: the "
                                  "file is corrupted",
                                  (unsigned long long)at, m->file[at],
                                  next ? "before section " : "after the last section",
                                  next ? rt_section_name(next->id) : ""),
                       e->status;
        if (!next)
            return SPY_OK;
        pos = next->offset + next->size;
    }
}

/* Sets m's table pointers from the section table; checks presence and entry sizes. */
static spy_status map_sections(spy_model *m, RtErr *e) {
    static const struct {
        uint32_t id;
        uint32_t esize;
    } req[] = {{SPY_SEC_STRINGS, 1},  {SPY_SEC_TENSORS, sizeof(SpyTensorDesc)},
               {SPY_SEC_CONSTS, 1},   {SPY_SEC_KERNELS, sizeof(SpyKernelDesc)},
               {SPY_SEC_PROGRAMS, sizeof(SpyProgramDesc)},
               {SPY_SEC_CODE, sizeof(SpyInsn)}, {SPY_SEC_SCHEDULE, 4},
               {SPY_SEC_SEGMENTS, sizeof(SpySegmentDesc)}, {SPY_SEC_META, 1}};
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++) {
        const SpySection *s = m->sec[req[i].id];
        const char *nm = rt_section_name(req[i].id);
        if (!s)
            return rt_err_set(e, SPY_E_BAD_BUNDLE, "required section %s is missing", nm),
                   e->status;
        if (s->size % req[i].esize != 0)
            return rt_err_set(e, SPY_E_BAD_BUNDLE,
                              "section %s at offset %llu: size %llu is not a multiple of its "
                              "%u-byte entries",
                              nm, (unsigned long long)s->offset, (unsigned long long)s->size,
                              req[i].esize),
                   e->status;
        if (s->size / req[i].esize > UINT32_MAX && req[i].id != SPY_SEC_CODE &&
            req[i].esize > 1)
            return rt_err_set(e, SPY_E_BAD_BUNDLE, "section %s has too many entries", nm),
                   e->status;
    }
#define SEC_PTR(id) (m->file + m->sec[id]->offset)
    m->strings = (const char *)SEC_PTR(SPY_SEC_STRINGS);
    m->strings_size = m->sec[SPY_SEC_STRINGS]->size;
    m->tensors = (const SpyTensorDesc *)SEC_PTR(SPY_SEC_TENSORS);
    m->ntensors = (uint32_t)(m->sec[SPY_SEC_TENSORS]->size / sizeof(SpyTensorDesc));
    m->consts = SEC_PTR(SPY_SEC_CONSTS);
    m->consts_size = m->sec[SPY_SEC_CONSTS]->size;
    if (m->parent) {                       /* a size bucket reads its parent's CONSTS */
        const SpySegmentDesc *s0 = (const SpySegmentDesc *)SEC_PTR(SPY_SEC_SEGMENTS);
        if (m->consts_size)
            return rt_err_set(e, SPY_E_BAD_BUNDLE, "section CONSTS of a size bucket is not "
                              "empty (%llu bytes)", (unsigned long long)m->consts_size),
                   e->status;
        m->consts = m->parent->consts;
        m->consts_size = m->parent->consts_size;
        if (m->sec[SPY_SEC_SEGMENTS]->size >= sizeof *s0 && s0->size <= m->consts_size)
            m->consts_size = s0->size;     /* else SEGMENTS' check names the sizes */
    }
    m->kernels = (const SpyKernelDesc *)SEC_PTR(SPY_SEC_KERNELS);
    m->nkernels = (uint32_t)(m->sec[SPY_SEC_KERNELS]->size / sizeof(SpyKernelDesc));
    m->programs = (const SpyProgramDesc *)SEC_PTR(SPY_SEC_PROGRAMS);
    m->nprograms = (uint32_t)(m->sec[SPY_SEC_PROGRAMS]->size / sizeof(SpyProgramDesc));
    m->code = (const SpyInsn *)SEC_PTR(SPY_SEC_CODE);
    m->ncode = m->sec[SPY_SEC_CODE]->size / sizeof(SpyInsn);
    m->schedule = (const uint32_t *)SEC_PTR(SPY_SEC_SCHEDULE);
    m->nsched = (uint32_t)(m->sec[SPY_SEC_SCHEDULE]->size / 4);
    m->segs = (const SpySegmentDesc *)SEC_PTR(SPY_SEC_SEGMENTS);
    m->nsegs = (uint32_t)(m->sec[SPY_SEC_SEGMENTS]->size / sizeof(SpySegmentDesc));
    m->meta = (const char *)SEC_PTR(SPY_SEC_META);
    m->meta_size = m->sec[SPY_SEC_META]->size;
    if (m->sec[SPY_SEC_SELFTEST]) {
        m->selftest = SEC_PTR(SPY_SEC_SELFTEST);
        m->selftest_size = m->sec[SPY_SEC_SELFTEST]->size;
    }
    if (m->sec[SPY_SEC_DIMREFS]) {         /* entries checked by rt_sym_verify */
        m->dimrefs = (const SpyDimRef *)SEC_PTR(SPY_SEC_DIMREFS);
        m->ndimrefs = (uint32_t)(m->sec[SPY_SEC_DIMREFS]->size / sizeof(SpyDimRef));
        if (m->sec[SPY_SEC_DIMREFS]->size % sizeof(SpyDimRef))
            return rt_err_set(e, SPY_E_BAD_BUNDLE, "section DIMREFS: size %llu is not a "
                              "multiple of its %zu-byte entries",
                              (unsigned long long)m->sec[SPY_SEC_DIMREFS]->size,
                              sizeof(SpyDimRef)),
                   e->status;
    }
    if (m->sec[SPY_SEC_DEBUG]) {           /* entries checked by rt_debug_verify */
        m->debug = (const SpyDebugDesc *)SEC_PTR(SPY_SEC_DEBUG);
        m->debug_bytes = m->sec[SPY_SEC_DEBUG]->size;
    }
#undef SEC_PTR
    return SPY_OK;
}

/* Checks the container of m->file[0..size) and maps its sections. */
spy_status rt_model_parse(spy_model *m, RtErr *e) {
    const uint16_t probe = 1;
    if (*(const uint8_t *)&probe != 1)
        return rt_err_set(e, SPY_E_BAD_BUNDLE, "big-endian hosts are not supported"),
               e->status;
    if (check_header(m, e) || check_table_crc(m, e))
        return e->status;
    for (uint32_t i = 0; i < m->hdr->nsections; i++)
        if (check_section(m, i, e))
            return e->status;
    if (check_overlap(m, e) || map_sections(m, e) || check_padding(m, e))
        return e->status;
    m->target = m->hdr->target;
    return SPY_OK;
}

/* Writes e's message, prefixed with where, into the caller's buffer. */
static void report(const RtErr *e, const char *where, char *err, size_t errlen) {
    if (err && errlen)
        snprintf(err, errlen, "%s: %s", where, e->msg);
}

/* Releases the bundle bytes of m (mapped or malloc'd). */
void rt_model_release(spy_model *m) {
    if (m->parent)
        ;                                  /* a bucket: bytes of its parent's file */
    else if (m->mapped)
        munmap(m->file, m->size);
    else
        free(m->file);
    m->file = NULL;
}

/* Takes ownership of buf[0..size) (mapped: from mmap, else from malloc) and builds a
 * verified model from it. */
static spy_status load_owned(uint8_t *buf, size_t size, bool mapped, const char *where,
                             spy_model **out, char *err, size_t errlen) {
    RtErr e = {SPY_OK, ""};
    spy_model *m = calloc(1, sizeof *m);
    if (!m) {
        if (mapped)
            munmap(buf, size);
        else
            free(buf);
        rt_err_set(&e, SPY_E_NOMEM, "out of memory");
        report(&e, where, err, errlen);
        return e.status;
    }
    m->file = buf;
    m->size = size;
    m->mapped = mapped;
    if (rt_model_parse(m, &e) == SPY_OK && rt_verify_tables(m, &e) == SPY_OK &&
        rt_timing_compute(m, &e) == SPY_OK && rt_prep_model(m, &e) == SPY_OK)
        rt_variants_load(m, &e);
    if (mapped)       /* sessions read constants in any order: default read-ahead */
        madvise(buf, size, MADV_NORMAL);
    if (e.status != SPY_OK) {
        report(&e, where, err, errlen);
        spy_model_free(m);
        return e.status;
    }
    *out = m;
    return SPY_OK;
}

/* Loads and verifies a bundle held in memory. The data is copied once (the caller
 * may free it on return); spy_model_load_file maps a file instead. */
spy_status spy_model_load_memory(const void *data, size_t size, spy_model **out, char *err,
                                 size_t errlen) {
    if (err && errlen)
        err[0] = 0;
    if (out)
        *out = NULL;
    if (!out || (!data && size)) {
        if (err && errlen)
            snprintf(err, errlen, "spy_model_load_memory: NULL argument");
        return SPY_E_INVALID_ARG;
    }
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) {
        if (err && errlen)
            snprintf(err, errlen, "bundle: out of memory (%zu bytes)", size);
        return SPY_E_NOMEM;
    }
    if (size)
        memcpy(buf, data, size);
    return load_owned(buf, size, false, "bundle", out, err, errlen);
}

/* Reads all of fd (a pipe or device: no size known up front) into a malloc'd buffer.
 * Returns 0 or an errno value. */
static int read_all(int fd, uint8_t **data, size_t *size) {
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    if (!buf)
        return ENOMEM;
    for (;;) {
        if (n == cap) {
            uint8_t *nb = cap > SIZE_MAX / 2 ? NULL : realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                return cap > SIZE_MAX / 2 ? EFBIG : ENOMEM;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            int rc = errno;
            free(buf);
            return rc;
        }
        if (got == 0)
            break;
        n += (size_t)got;
    }
    *data = buf;
    *size = n;
    return 0;
}

/* Maps the regular file fd of size (> 0) bytes read-only, advised as read
 * sequentially (large read-ahead while the CRC pass pages it in; load_owned sets it
 * back to normal afterwards). Returns false when it cannot be mapped. */
static bool map_file(int fd, size_t size, uint8_t **data) {
    void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED)
        return false;
    madvise(p, size, MADV_SEQUENTIAL);
    *data = p;
    return true;
}

/* Loads and verifies a bundle file: mapped when it is a regular file, else read. */
spy_status spy_model_load_file(const char *path, spy_model **out, char *err, size_t errlen) {
    if (err && errlen)
        err[0] = 0;
    if (out)
        *out = NULL;
    if (!path || !out) {
        if (err && errlen)
            snprintf(err, errlen, "spy_model_load_file: NULL argument");
        return SPY_E_INVALID_ARG;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (err && errlen)
            snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return SPY_E_IO;
    }
    struct stat st;
    uint8_t *buf = NULL;
    size_t size = 0;
    bool mapped = false;
    int rc = fstat(fd, &st) ? errno : 0;
    if (!rc && S_ISDIR(st.st_mode))
        rc = EISDIR;
    else if (!rc && S_ISREG(st.st_mode) && (uint64_t)st.st_size > SIZE_MAX)
        rc = EFBIG;
    else if (!rc && S_ISREG(st.st_mode) && st.st_size > 0 &&
             (mapped = map_file(fd, (size_t)st.st_size, &buf)))
        size = (size_t)st.st_size;
    else if (!rc)       /* pipes, devices, files that cannot be mapped or claim 0 bytes */
        rc = read_all(fd, &buf, &size);
    close(fd);
    if (rc) {
        if (err && errlen)
            snprintf(err, errlen, "%s: cannot read: %s", path, strerror(rc));
        return rc == ENOMEM ? SPY_E_NOMEM : SPY_E_IO;
    }
    return load_owned(buf, size, mapped, path, out, err, errlen);
}
