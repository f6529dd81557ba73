/* fe_onnx.c: fe_load_onnx - read and pre-scan the file, unpack it with protobuf-c,
 * check the model-level fields (opsets, functions) and convert the main graph.
 *
 * Every problem is reported as "model.onnx: ..." through the caller's IrDiag; the
 * import goes on after an error where it safely can, so that one run lists many
 * problems. IR allocation failures longjmp back here and end the import cleanly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_onnx.h"

/* "" for the default ONNX domain, the domain itself otherwise. */
const char *fe_onnx_domain(const char *d)
{
    if (!d || !strcmp(d, "ai.onnx"))
        return "";
    return d;
}

/* Version of domain in a list of opset imports; 0 if absent. */
int64_t fe_onnx_find_opset(Onnx__OperatorSetIdProto *const *ops, size_t n, const char *domain)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(fe_onnx_domain(ops[i]->domain), domain))
            return ops[i]->has_version ? ops[i]->version : 0;
    return 0;
}

/* Key "domain\x01name" of a function, in buf. */
static const char *fn_key(char *buf, size_t len, const char *domain, const char *name)
{
    snprintf(buf, len, "%s\x01%s", domain, name);
    return buf;
}

/* Index of model function op_type in domain, or -1. */
int fe_onnx_function(const FeOnnx *cx, const char *domain, const char *op_type)
{
    char buf[1024];
    uint32_t i;
    if (cx->fnmap.n == 0)
        return -1;
    if (!fe_map_get(&cx->fnmap, fn_key(buf, sizeof buf, domain, op_type), &i))
        return -1;
    return (int)i;
}

/* Track a subgraph that no node owns yet (freed if the import fails before). */
void fe_onnx_keep_pending(FeOnnx *cx, IrGraph *g)
{
    if (cx->npending == cx->cappending) {
        uint32_t cap = cx->cappending ? 2 * cx->cappending : 8;
        IrGraph **p = realloc(cx->pending, cap * sizeof *p);
        if (!p) {
            ir_graph_free(g);
            longjmp(cx->oom, 1);
        }
        cx->pending = p;
        cx->cappending = cap;
    }
    cx->pending[cx->npending++] = g;
}

/* A subgraph is now owned by a node of its parent. */
void fe_onnx_drop_pending(FeOnnx *cx, IrGraph *g)
{
    for (uint32_t i = 0; i < cx->npending; i++) {
        if (cx->pending[i] == g) {
            cx->pending[i] = cx->pending[--cx->npending];
            return;
        }
    }
}

/* Opset imports: present, versions valid, each domain at one version (skl2onnx lists
 * the default domain twice at the same version; onnxruntime takes that). */
static void check_opsets(FeOnnx *cx, IrGraph *g)
{
    Onnx__ModelProto *m = cx->model;
    if (m->n_opset_import == 0) {
        ir_diag_error(cx->diag, "missing opset_import (the model names no operator set)");
        return;
    }
    FeMap seen;
    fe_map_init(&seen, g);
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const char *d = fe_onnx_domain(m->opset_import[i]->domain);
        if (!m->opset_import[i]->has_version || m->opset_import[i]->version < 1)
            ir_diag_error(cx->diag, "opset_import of domain '%s' has no valid version", d);
        uint32_t prev, ver = (uint32_t)(m->opset_import[i]->version > UINT32_MAX
                                            ? UINT32_MAX : m->opset_import[i]->version);
        if (fe_map_get(&seen, d, &prev) && prev != ver)
            ir_diag_error(cx->diag, "opset_import lists domain '%s' twice, at versions %u "
                          "and %u", d, prev, ver);
        fe_map_put(&seen, d, ver);
    }
    cx->default_opset = fe_onnx_find_opset(m->opset_import, m->n_opset_import, "");
}

/* Index the model's functions by (domain, name); duplicates are errors. */
static void index_functions(FeOnnx *cx, IrGraph *g)
{
    Onnx__ModelProto *m = cx->model;
    fe_map_init(&cx->fnmap, g);
    if (!m->n_functions)
        return;
    cx->fdefaults = calloc(m->n_functions, sizeof *cx->fdefaults);
    if (!cx->fdefaults)
        longjmp(cx->oom, 1);
    for (size_t i = 0; i < m->n_functions; i++) {
        const Onnx__FunctionProto *fn = m->functions[i];
        char buf[1024];
        const char *d = fe_onnx_domain(fn->domain);
        if (!fn->name || !fn->name[0]) {
            ir_diag_error(cx->diag, "function #%zu has no name", i);
            continue;
        }
        fn_key(buf, sizeof buf, d, fn->name);
        if (fe_map_get(&cx->fnmap, buf, NULL)) {
            ir_diag_error(cx->diag, "function '%s' of domain '%s' is defined twice", fn->name, d);
            continue;
        }
        fe_map_put(&cx->fnmap, ir_strdup(g, buf), (uint32_t)i);
    }
}

/* Clear the oom target of g and its subgraphs (it points into the import's state)
 * and the import's arena limit. */
static void clear_limits(IrGraph *g)
{
    g->oom = NULL;
    g->arena_limit = 0;
    for (uint32_t i = 0; i < g->nnodes; i++)
        for (uint32_t a = 0; a < g->nodes[i].nattrs; a++)
            if (g->nodes[i].attrs[a].kind == IR_ATTR_GRAPH && g->nodes[i].attrs[a].graph)
                clear_limits(g->nodes[i].attrs[a].graph);
}

/* protobuf-c's allocator, recording a failure in *data (a bool) so that an allocation
 * failure is not reported as a malformed file. Blocks come from malloc: the unpacked
 * model is freed with the default allocator. */
static void *pb_alloc(void *data, size_t size)
{
    void *p = malloc(size);
    if (!p && size)
        *(bool *)data = true;
    return p;
}

/* Counterpart of pb_alloc. */
static void pb_free(void *data, void *p)
{
    (void)data;
    free(p);
}

ProtobufCAllocator fe_onnx_pb_allocator(bool *oom)
{
    return (ProtobufCAllocator){pb_alloc, pb_free, oom};
}

/* Load (map), pre-scan and unpack the model file; NULL with an error reported. A
 * mapped file stays in cx->data.file, and the main graph's initializers point into it
 * rather than into copies made by protobuf-c (fe_onnx_strip). */
static Onnx__ModelProto *unpack_model(FeOnnx *cx, const FeOptions *opt)
{
    char err[512];
    FeBytes *file = &cx->data.file;
    if (!fe_bytes_load(cx->path, opt->max_file_bytes, file, err, sizeof err)) {
        ir_diag_error(cx->diag, "%s", err);
        return NULL;
    }
    size_t len = file->len;
    FePbLimits lim = {opt->max_nesting, ((size_t)64 << 20) + 16 * len};
    Onnx__ModelProto *m = NULL;
    if (len == 0)
        ir_diag_error(cx->diag, "the file is empty");
    else if (!fe_pb_check(file->p, len, &onnx__model_proto__descriptor, &lim, err, sizeof err))
        ir_diag_error(cx->diag, "%s", err);
    else {
        uint8_t *copy = NULL;
        size_t clen = len;
        bool stripped = file->mapped && fe_onnx_strip(file->p, len, &copy, &clen, &cx->strip);
        bool oom = false;
        ProtobufCAllocator pa = fe_onnx_pb_allocator(&oom);
        m = onnx__model_proto__unpack(&pa, clen, stripped ? copy : file->p);
        free(copy);
        if (!m)
            fe_onnx_strip_free(&cx->strip);
        if (!m && oom)
            ir_diag_error(cx->diag, "out of memory while decoding the model (%zu bytes)", len);
        else if (!m)
            ir_diag_error(cx->diag, "not a valid ONNX model (protobuf decoding failed)");
        else
            fe_onnx_strip_attach(&cx->strip, m, file->p);
    }
    if (!file->mapped)
        fe_bytes_free(file);               /* a buffer read from a pipe: all copied */
    return m;
}

/* Release everything the import holds except the graph it returns. */
static void import_cleanup(FeOnnx *cx)
{
    for (uint32_t i = 0; i < cx->npending; i++)
        ir_graph_free(cx->pending[i]);
    free(cx->pending);
    fe_tensor_free(&cx->tmp);
    fe_free_fn_defaults(cx);
    if (cx->model) {
        fe_onnx_strip_detach(&cx->strip, cx->model);
        onnx__model_proto__free_unpacked(cx->model, NULL);
    }
    fe_onnx_strip_free(&cx->strip);
    fe_data_finish(&cx->data, NULL);
    free(cx->dir);
    free(cx);
}

/* Whether some input of graph gr has a dimension named param. */
static bool names_dim(const Onnx__GraphProto *gr, const char *param)
{
    for (size_t i = 0; i < gr->n_input; i++) {
        const Onnx__TypeProto *t = gr->input[i]->type;
        const Onnx__TensorShapeProto *sh =
            t && t->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && t->tensor_type
                ? t->tensor_type->shape
                : NULL;
        for (size_t a = 0; sh && a < sh->n_dim; a++)
            if (sh->dim[a]->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                sh->dim[a]->dim_param && !strcmp(sh->dim[a]->dim_param, param))
                return true;
    }
    return false;
}

/* A --dim whose name no input dimension has does nothing: said, rather than silently
 * ignored (a misspelt name would otherwise leave the dimension to its default). */
static void warn_unused_dims(FeOnnx *cx)
{
    for (int i = 0; i < cx->ndim_bounds; i++)
        if (!names_dim(cx->model->graph, cx->dim_bounds[i].param))
            ir_diag_warn(cx->diag, "--dim %s: no input dimension of the model is named %s",
                         cx->dim_bounds[i].param, cx->dim_bounds[i].param);
}

/* Convert the unpacked model in cx into g; errors are reported. */
static void import_model(FeOnnx *cx, IrGraph *g)
{
    if (!cx->model->graph) {
        ir_diag_error(cx->diag, "the model has no graph");
        return;
    }
    check_opsets(cx, g);
    warn_unused_dims(cx);
    index_functions(cx, g);
    g->onnx_opset = cx->default_opset;
    FeScope root;
    fe_scope_init(&root, cx, g, NULL, 0);
    fe_graph_body(&root, cx->model->graph, !cx->lenient);
    if (cx->model->graph->n_output == 0)
        ir_diag_error(cx->diag, "the graph has no outputs");
}

/* ONNX file -> IR graph of FOREIGN nodes and constants; NULL on error. */
IrGraph *fe_load_onnx(const char *path, IrDiag *diag, const FeOptions *opt)
{
    FeOptions o = {.max_file_bytes = FE_DEFAULT_MAX_FILE_BYTES,
                   .max_nesting = FE_DEFAULT_MAX_NESTING};
    if (opt && opt->max_file_bytes)
        o.max_file_bytes = opt->max_file_bytes;
    if (opt && opt->max_nesting > 0)
        o.max_nesting = opt->max_nesting;
    if (!diag->file)
        diag->file = path;
    int errors_before = diag->nerrors;
    FeOnnx *cx = calloc(1, sizeof *cx);
    IrGraph *g = ir_graph_new(diag);
    if (!cx || !g || !(cx->dir = fe_dirname(path))) {
        ir_diag_error(diag, "out of memory");
        if (cx)
            free(cx->dir);
        free(cx);
        ir_graph_free(g);
        return NULL;
    }
    cx->path = path;
    cx->diag = diag;
    cx->max_nesting = o.max_nesting;
    cx->arena_limit = opt ? opt->arena_limit : 0;
    cx->specs = opt ? opt->specs : NULL;
    cx->lenient = opt && opt->lenient_types;
    cx->nspecs = opt ? opt->nspecs : 0;
    cx->dim_bounds = opt ? opt->dim_bounds : NULL;
    cx->ndim_bounds = opt ? opt->ndim_bounds : 0;
    cx->sym_caps = opt ? opt->sym_caps : NULL;
    cx->nsym_caps = opt ? opt->nsym_caps : 0;
    cx->data.dir = cx->dir;
    cx->data.borrow = true;
    cx->model = unpack_model(cx, &o);
    if (!cx->model) {
        import_cleanup(cx);
        ir_graph_free(g);
        return NULL;
    }
    if (setjmp(cx->oom)) {
        ir_diag_error(diag, "out of memory while importing the model");
        import_cleanup(cx);
        ir_graph_free(g);
        return NULL;
    }
    g->oom = &cx->oom;
    g->arena_limit = cx->arena_limit;
    g->model_path = ir_strdup(g, path);
    import_model(cx, g);
    fe_data_finish(&cx->data, g);          /* the mappings constants point into */
    clear_limits(g);
    if (opt && opt->files && diag->nerrors == errors_before &&
        !fe_onnx_collect_files(cx->model, cx->dir, opt->files))
        ir_diag_error(diag, "out of memory while listing the external data files");
    import_cleanup(cx);
    if (diag->nerrors > errors_before) {
        ir_graph_free(g);
        return NULL;
    }
    return g;
}
