/* fe_onnx_deps.c: the files an ONNX model depends on besides itself (the external
 * data files its tensors name), for dependency files (spyrec -MD).
 *
 * Walks every TensorProto of the unpacked model: graph initializers (dense and sparse),
 * tensor attributes of nodes, subgraphs (If/Loop/Scan bodies) and model-local
 * functions. The walk runs after a successful import, so every location was already
 * checked (stays inside the model's folder, readable); here they are only listed.
 * Subgraph depth is bounded by the pre-scan's nesting limit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_onnx.h"

/* Free the paths of l and reset it (l itself is the caller's). */
void fe_file_list_free(FeFileList *l)
{
    if (!l)
        return;
    for (int i = 0; i < l->n; i++)
        free(l->paths[i]);
    free(l->paths);
    memset(l, 0, sizeof *l);
}

/* Append "dir/loc" (just loc when dir is ".") unless listed already. False when out
 * of memory. */
static bool list_add(FeFileList *l, const char *dir, const char *loc)
{
    bool here = !strcmp(dir, ".");
    size_t n = (here ? 0 : strlen(dir) + 1) + strlen(loc) + 1;
    char *p = malloc(n);
    if (!p)
        return false;
    if (here)
        memcpy(p, loc, n);
    else
        snprintf(p, n, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", loc);
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->paths[i], p)) {
            free(p);
            return true;
        }
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 8;
        char **np = realloc(l->paths, (size_t)cap * sizeof *np);
        if (!np) {
            free(p);
            return false;
        }
        l->paths = np;
        l->cap = cap;
    }
    l->paths[l->n++] = p;
    return true;
}

/* The external-data location of one tensor, if it has one. */
static bool tensor_files(const Onnx__TensorProto *t, const char *dir, FeFileList *l)
{
    if (!t || !t->has_data_location ||
        t->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return true;
    for (size_t i = 0; i < t->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = t->external_data[i];
        if (e && e->key && e->value && *e->value && !strcmp(e->key, "location"))
            return list_add(l, dir, e->value);
    }
    return true;
}

/* Both tensors of a sparse tensor. */
static bool sparse_files(const Onnx__SparseTensorProto *s, const char *dir, FeFileList *l)
{
    return !s || (tensor_files(s->values, dir, l) && tensor_files(s->indices, dir, l));
}

static bool graph_files(const Onnx__GraphProto *g, const char *dir, FeFileList *l);

/* The tensors and subgraphs held by the attributes of n nodes. */
static bool nodes_files(Onnx__NodeProto *const *nodes, size_t n, const char *dir,
                        FeFileList *l)
{
    for (size_t i = 0; i < n; i++) {
        const Onnx__NodeProto *node = nodes[i];
        for (size_t a = 0; node && a < node->n_attribute; a++) {
            const Onnx__AttributeProto *at = node->attribute[a];
            if (!at)
                continue;
            bool ok = tensor_files(at->t, dir, l) && sparse_files(at->sparse_tensor, dir, l) &&
                      (!at->g || graph_files(at->g, dir, l));
            for (size_t k = 0; ok && k < at->n_tensors; k++)
                ok = tensor_files(at->tensors[k], dir, l);
            for (size_t k = 0; ok && k < at->n_sparse_tensors; k++)
                ok = sparse_files(at->sparse_tensors[k], dir, l);
            for (size_t k = 0; ok && k < at->n_graphs; k++)
                ok = !at->graphs[k] || graph_files(at->graphs[k], dir, l);
            if (!ok)
                return false;
        }
    }
    return true;
}

/* Initializers and nodes of one graph (recursively through subgraphs). */
static bool graph_files(const Onnx__GraphProto *g, const char *dir, FeFileList *l)
{
    for (size_t i = 0; i < g->n_initializer; i++)
        if (!tensor_files(g->initializer[i], dir, l))
            return false;
    for (size_t i = 0; i < g->n_sparse_initializer; i++)
        if (!sparse_files(g->sparse_initializer[i], dir, l))
            return false;
    return nodes_files(g->node, g->n_node, dir, l);
}

/* Every external-data file of model m, resolved against dir (the model's folder as
 * given), appended to out. False when out of memory. */
bool fe_onnx_collect_files(const Onnx__ModelProto *m, const char *dir, FeFileList *out)
{
    if (m->graph && !graph_files(m->graph, dir, out))
        return false;
    for (size_t f = 0; f < m->n_functions; f++)
        if (m->functions[f] &&
            !nodes_files(m->functions[f]->node, m->functions[f]->n_node, dir, out))
            return false;
    return true;
}
