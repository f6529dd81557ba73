/* fe_pt2_weights.c: parameters, buffers and tensor constants of a .pt2 archive.
 *
 * data/weights/NAME_weights_config.json and data/constants/NAME_constants_config.json
 * map each fully qualified name to a payload file holding the raw little-endian bytes
 * of the tensor's whole storage; the tensor is the view (sizes, strides, storage
 * offset) given by its metadata. Payloads marked use_pickle are refused: nothing is
 * ever unpickled.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/fe_pt2_priv.h"

/* Load one payload config (absent entry = empty config). Returns the "config" object
 * (a new reference), or NULL after reporting. */
static json_t *load_config(FePt2 *p, const char *entry)
{
    long i = fe_pt2_zip_find(&p->zip, entry);
    if (i < 0)
        return json_object();
    size_t len = 0;
    uint8_t *buf = fe_pt2_zip_read(&p->zip, i, &len);
    if (!buf)
        return NULL;
    json_t *root = fe_pt2_json_parse(p->diag, entry, buf, len, p->opt.max_nesting);
    free(buf);
    if (!root)
        return NULL;
    json_t *cfg = fe_pt2_obj(root, "config");
    if (!cfg) {
        ir_diag_error(p->diag, "%s: no 'config' object", entry);
        json_decref(root);
        return NULL;
    }
    json_incref(cfg);
    json_decref(root);
    return cfg;
}

/* Read both payload configs. Their names follow the model's name (models/NAME.json). */
bool fe_pt2_weights_init(FePt2 *p)
{
    const char *base = strrchr(p->json_entry, '/');
    base = base ? base + 1 : p->json_entry;
    char stem[256];
    snprintf(stem, sizeof stem, "%.*s", (int)(strlen(base) - 5), base); /* drop ".json" */
    char entry[1024];
    snprintf(entry, sizeof entry, "%sdata/weights/%s_weights_config.json", p->root, stem);
    p->weights_cfg = load_config(p, entry);
    snprintf(entry, sizeof entry, "%sdata/constants/%s_constants_config.json", p->root, stem);
    p->consts_cfg = load_config(p, entry);
    return p->weights_cfg && p->consts_cfg;
}

/* Number of storage bytes the view needs (0 for an empty tensor); false on overflow
 * or a negative stride. */
static bool view_extent(const IrType *t, const int64_t *strides, int64_t offset,
                        uint64_t *bytes)
{
    int64_t numel = ir_type_numel(t);
    if (numel == 0) {
        *bytes = 0;
        return true;
    }
    uint64_t last = (uint64_t)offset;
    for (int i = 0; i < t->rank; i++) {
        if (strides[i] < 0)
            return false;
        uint64_t span = (uint64_t)(t->dims[i] - 1);
        if (strides[i] && span > (UINT64_MAX / 2) / (uint64_t)strides[i])
            return false;
        last += span * (uint64_t)strides[i];
        if (last > UINT64_MAX / 4)
            return false;
    }
    uint64_t es = ir_dtype_size(t->dtype);
    if (last + 1 > UINT64_MAX / es)
        return false;
    *bytes = (last + 1) * es;
    return true;
}

/* See fe_pt2_priv.h. */
bool fe_pt2_is_dense(const IrType *t, const int64_t *strides, int64_t offset)
{
    int64_t expect = 1;
    for (int i = t->rank - 1; i >= 0; i--) {
        if (t->dims[i] != 1 && strides[i] != expect)
            return false;
        expect *= t->dims[i];
    }
    return offset == 0;
}

/* Copy a strided view out of storage into dense row-major dst. */
static void gather_view(const IrType *t, const int64_t *strides, int64_t offset,
                        const uint8_t *src, uint8_t *dst)
{
    size_t es = ir_dtype_size(t->dtype);
    int64_t numel = ir_type_numel(t), idx[IR_MAX_RANK] = {0};
    for (int64_t k = 0; k < numel; k++) {
        int64_t pos = offset;
        for (int i = 0; i < t->rank; i++)
            pos += idx[i] * strides[i];
        memcpy(dst + (size_t)k * es, src + (size_t)pos * es, es);
        for (int i = t->rank - 1; i >= 0; i--) {
            if (++idx[i] < t->dims[i])
                break;
            idx[i] = 0;
        }
    }
}

/* Format a type like "f32[256, 784]" for messages. */
static void type_str(const IrType *t, char *buf, size_t len)
{
    size_t o = (size_t)snprintf(buf, len, "%s[", ir_dtype_name(t->dtype));
    for (int i = 0; i < t->rank && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%lld", i ? ", " : "", (long long)t->dims[i]);
    if (o < len)
        snprintf(buf + o, len - o, "]");
}

/* Find the payload entry of fqn: its metadata and the folder it lives in. */
static json_t *find_payload(FePt2 *p, const char *fqn, const char **folder)
{
    json_t *m = fe_pt2_obj(p->weights_cfg, fqn);
    *folder = "weights";
    if (!m) {
        m = fe_pt2_obj(p->consts_cfg, fqn);
        *folder = "constants";
    }
    return m;
}

/* Check the payload's metadata against the graph and locate its bytes. Returns the
 * entry position or -1 after reporting; fills t/strides/offset. */
static long locate_payload(FePt2 *p, const char *fqn, const IrType *want, IrType *t,
                           int64_t *strides, int64_t *offset)
{
    const char *folder;
    json_t *m = find_payload(p, fqn, &folder);
    if (!m) {
        ir_diag_error(p->diag, "tensor '%s' is not in the archive's weights or constants",
                      fqn);
        return -1;
    }
    json_t *pk = json_object_get(m, "use_pickle");
    if (!json_is_boolean(pk) || json_is_true(pk)) {
        ir_diag_error(p->diag,
                      "tensor '%s' is stored as a Python pickle; pickled payloads are "
                      "never loaded (save the model with plain tensor weights)", fqn);
        return -1;
    }
    const char *pname = fe_pt2_str(m, "path_name");
    char entry[1024];
    if (!pname || snprintf(entry, sizeof entry, "%sdata/%s/%s", p->root, folder, pname) >=
                      (int)sizeof entry || strchr(pname, '/') || fe_pt2_name_problem(entry)) {
        ir_diag_error(p->diag, "tensor '%s': missing or invalid payload path_name", fqn);
        return -1;
    }
    char err[256];
    if (!fe_pt2_tensor_meta(fe_pt2_obj(m, "tensor_meta"), NULL, t, strides, offset, err,
                            sizeof err)) {
        ir_diag_error(p->diag, "tensor '%s' (%s): %s", fqn, entry, err);
        return -1;
    }
    if (!ir_type_eq(t, want)) {
        char a[128], b[128];
        type_str(t, a, sizeof a), type_str(want, b, sizeof b);
        ir_diag_error(p->diag, "tensor '%s': payload metadata says %s but the graph says %s",
                      fqn, a, b);
        return -1;
    }
    long i = fe_pt2_zip_find(&p->zip, entry);
    if (i < 0)
        ir_diag_error(p->diag, "tensor '%s': payload entry '%s' is missing", fqn, entry);
    return i;
}

/* Load a parameter/buffer/constant as an IR constant (see the header). */
ValId fe_pt2_load_tensor(FePt2 *p, const char *fqn, const IrType *want)
{
    IrType t;
    int64_t strides[IR_MAX_RANK] = {0}, offset = 0;
    long i = locate_payload(p, fqn, want, &t, strides, &offset);
    if (i < 0)
        return IR_NONE;
    uint64_t need = 0;
    if (!view_extent(&t, strides, offset, &need)) {
        ir_diag_error(p->diag, "tensor '%s': strides or storage offset out of range", fqn);
        return IR_NONE;
    }
    const char *entry = p->zip.ent[i].name;
    if (p->zip.ent[i].size < need) {
        ir_diag_error(p->diag, "tensor '%s': payload '%s' has %llu bytes but its metadata "
                      "needs %llu", fqn, entry, (unsigned long long)p->zip.ent[i].size,
                      (unsigned long long)need);
        return IR_NONE;
    }
    size_t len = 0;
    uint8_t *buf = fe_pt2_zip_read(&p->zip, i, &len);
    if (!buf)
        return IR_NONE;
    p->scratch[0] = buf; /* ir_add_const may longjmp on allocation failure */
    ValId v = IR_NONE;
    if (fe_pt2_is_dense(&t, strides, offset)) {
        v = ir_add_const(p->g, fqn, &t, buf);
    } else {
        uint8_t *dense = malloc(ir_type_bytes(&t) + 1);
        p->scratch[1] = dense;
        if (dense) {
            gather_view(&t, strides, offset, buf, dense);
            v = ir_add_const(p->g, fqn, &t, dense);
        } else {
            ir_diag_error(p->diag, "tensor '%s': out of memory", fqn);
        }
        free(dense);
        p->scratch[1] = NULL;
    }
    free(buf);
    p->scratch[0] = NULL;
    return v;
}
