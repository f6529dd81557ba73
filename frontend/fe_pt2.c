/* fe_pt2.c: torch.export archives (.pt2, from torch.export.save) -> IR.
 *
 * Opens and validates the zip container, finds the serialized ExportedProgram
 * (ROOT/models/NAME.json), checks its schema version and byte order, and converts
 * the program (fe_pt2_graph.c) with its weights (fe_pt2_weights.c). Nothing in the
 * archive is executed or unpickled; sample inputs are ignored.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "frontend/fe_pt2_priv.h"

#define PT2_SCHEMA_MAJOR 8               /* torch/_export/serde/schema.py */
#define DEFAULT_MAX_FILE (2ull << 30)
#define DEFAULT_MAX_NESTING 64

/* Is name "ROOT/models/NAME.json" (ROOT one folder, NAME without '/')? Sets rootlen. */
static bool is_model_json(const char *name, size_t *rootlen)
{
    const char *slash = strchr(name, '/');
    if (!slash || strncmp(slash, "/models/", 8) != 0)
        return false;
    const char *base = slash + 8;
    size_t n = strlen(base);
    if (n <= 5 || strchr(base, '/') || strcmp(base + n - 5, ".json") != 0)
        return false;
    *rootlen = (size_t)(slash - name) + 1;
    return true;
}

/* Choose the program entry: the only ROOT/models/NAME.json, or models/model.json among several. */
static bool find_program(FePt2 *p)
{
    long found = -1, preferred = -1;
    int count = 0;
    size_t rootlen = 0, len;
    for (size_t i = 0; i < p->zip.n; i++) {
        const char *nm = p->zip.ent[i].name;
        if (!is_model_json(nm, &len))
            continue;
        count++;
        found = (long)i;
        if (strcmp(nm + len, "models/model.json") == 0)
            preferred = (long)i;
    }
    if (count == 0) {
        ir_diag_error(p->diag, "not a torch.export archive: no ROOT/models/NAME.json entry");
        return false;
    }
    if (count > 1 && preferred < 0) {
        ir_diag_error(p->diag, "the archive holds %d programs and none is models/model.json",
                      count);
        return false;
    }
    long pick = preferred >= 0 ? preferred : found;
    const char *nm = p->zip.ent[pick].name;
    is_model_json(nm, &rootlen);
    if (rootlen >= sizeof p->root || strlen(nm) >= sizeof p->json_entry) {
        ir_diag_error(p->diag, "entry name '%.200s' is too long", nm);
        return false;
    }
    snprintf(p->root, sizeof p->root, "%.*s", (int)rootlen, nm);
    snprintf(p->json_entry, sizeof p->json_entry, "%s", nm);
    return true;
}

/* Check the small marker files: archive_format "pt2" and byteorder "little". */
static bool check_markers(FePt2 *p)
{
    static const char *const marks[][2] = {{"archive_format", "pt2"}, {"byteorder", "little"}};
    for (int k = 0; k < 2; k++) {
        char entry[512];
        snprintf(entry, sizeof entry, "%s%s", p->root, marks[k][0]);
        long i = fe_pt2_zip_find(&p->zip, entry);
        if (i < 0)
            continue;
        if (p->zip.ent[i].size > 64) {
            ir_diag_error(p->diag, "%s: unexpectedly large", entry);
            return false;
        }
        size_t len = 0;
        char *s = (char *)fe_pt2_zip_read(&p->zip, i, &len);
        if (!s)
            return false;
        while (len && (s[len - 1] == '\n' || s[len - 1] == '\r' || s[len - 1] == ' '))
            s[--len] = 0;
        bool ok = strcmp(s, marks[k][1]) == 0;
        if (!ok)
            ir_diag_error(p->diag, "%s is '%.32s'; only '%s' is supported", entry, s,
                          marks[k][1]);
        free(s);
        if (!ok)
            return false;
    }
    return true;
}

/* Parse the program and check its schema version; keeps the document in p->doc. */
static bool read_program(FePt2 *p)
{
    long i = fe_pt2_zip_find(&p->zip, p->json_entry);
    size_t len = 0;
    uint8_t *buf = fe_pt2_zip_read(&p->zip, i, &len);
    if (!buf)
        return false;
    p->doc = fe_pt2_json_parse(p->diag, p->json_entry, buf, len, p->opt.max_nesting);
    free(buf);
    if (!p->doc)
        return false;
    json_t *sv = fe_pt2_obj(p->doc, "schema_version");
    json_t *major = json_object_get(sv, "major"), *minor = json_object_get(sv, "minor");
    if (!json_is_integer(major) || !json_is_integer(minor)) {
        ir_diag_error(p->diag, "%s: no schema_version {major, minor}", p->json_entry);
        return false;
    }
    if (json_integer_value(major) != PT2_SCHEMA_MAJOR) {
        ir_diag_error(p->diag,
                      "%s: export schema version %lld.%lld is not supported (this compiler "
                      "reads major version %d, as written by PyTorch 2.6 and later)",
                      p->json_entry, (long long)json_integer_value(major),
                      (long long)json_integer_value(minor), PT2_SCHEMA_MAJOR);
        return false;
    }
    json_t *aten = json_object_get(fe_pt2_obj(p->doc, "opset_version"), "aten");
    p->aten_opset = json_is_integer(aten) ? (int64_t)json_integer_value(aten) : 0;
    return true;
}

/* Everything after the container checks; false after reporting. */
static bool load(FePt2 *p)
{
    if (!find_program(p) || !check_markers(p) || !read_program(p))
        return false;
    json_t *gm = fe_pt2_obj(p->doc, "graph_module");
    if (!gm) {
        ir_diag_error(p->diag, "%s: no graph_module", p->json_entry);
        return false;
    }
    if (!fe_pt2_weights_init(p))
        return false;
    p->g = ir_graph_new(p->diag);
    if (!p->g) {
        ir_diag_error(p->diag, "out of memory");
        return false;
    }
    p->g->oom = p->oom;
    p->g->arena_limit = p->opt.arena_limit;
    p->g->model_path = ir_strdup(p->g, p->path);
    return fe_pt2_syms_read(p, p->doc) && fe_pt2_build(p, gm);
}

/* Release the loader's resources (the graph only if keep_graph is false). */
static void cleanup(FePt2 *p, bool keep_graph)
{
    for (int i = 0; i < 3; i++)
        free(p->scratch[i]);
    json_decref(p->doc);
    json_decref(p->weights_cfg);
    json_decref(p->consts_cfg);
    json_decref(p->scopes);
    fe_pt2_zip_close(&p->zip);
    if (!keep_graph && p->g)
        ir_graph_free(p->g);
    free(p);
}

/* Load a .pt2 archive; NULL (with errors in diag) on failure. */
IrGraph *fe_load_pt2(const char *path, IrDiag *diag, const FeOptions *opt)
{
    FePt2 *p = calloc(1, sizeof *p); /* on the heap: survives the longjmp below */
    if (!p) {
        ir_diag_error(diag, "out of memory");
        return NULL;
    }
    p->path = path;
    p->diag = diag;
    p->opt.max_file_bytes = opt && opt->max_file_bytes ? opt->max_file_bytes : DEFAULT_MAX_FILE;
    p->opt.max_nesting = opt && opt->max_nesting > 0 ? opt->max_nesting : DEFAULT_MAX_NESTING;
    p->opt.arena_limit = opt ? opt->arena_limit : 0;
    if (opt) {                             /* bounds of symbolic dimensions (fe_pt2_sym.c) */
        p->opt.dim_bounds = opt->dim_bounds, p->opt.ndim_bounds = opt->ndim_bounds;
        p->opt.sym_caps = opt->sym_caps, p->opt.nsym_caps = opt->nsym_caps;
        p->opt.specs = opt->specs, p->opt.nspecs = opt->nspecs;
    }
    p->scopes = json_array();
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
        ir_diag_error(diag, "cannot read the file (missing or not a regular file)");
        cleanup(p, false);
        return NULL;
    }
    if ((uint64_t)st.st_size > p->opt.max_file_bytes) {
        ir_diag_error(diag, "file of %lld bytes is larger than the limit of %zu bytes",
                      (long long)st.st_size, p->opt.max_file_bytes);
        cleanup(p, false);
        return NULL;
    }
    jmp_buf oom;
    if (setjmp(oom)) {
        ir_diag_error(diag, "out of memory while loading the model");
        cleanup(p, false);
        return NULL;
    }
    p->oom = &oom; /* the graph's allocation-failure target while loading */
    bool ok = fe_pt2_zip_open(&p->zip, path, diag, p->opt.max_file_bytes) && load(p);
    if (!ok) {
        cleanup(p, false);
        return NULL;
    }
    IrGraph *g = p->g;
    g->oom = NULL;
    g->arena_limit = 0;
    cleanup(p, true);
    return g;
}
