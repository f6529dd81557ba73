/* ir.c: the graph: arena, values, nodes, builders, attributes, rewriting helpers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"
#include "ir_priv.h"

#define NAME_EMPTY IR_NONE
#define NAME_TOMB (IR_NONE - 1)

/* A slot of the name set: a value id (or NAME_EMPTY, NAME_TOMB) and its name's hash,
 * compared before the names themselves so that probing past other names stays in the
 * table. */
typedef struct {
    ValId v;
    uint32_t hash;
} NameSlot;

struct IrGraphPriv {
    NameSlot *names;                       /* open-addressing set of value ids by name */
    uint32_t capnames, nnames, ntombs;
    IrGraph **subs;                        /* subgraphs owned through GRAPH attributes */
    uint32_t nsubs, capsubs;
    IrNode *detached;                      /* node list of the last ir_rewrite_begin */
    uint32_t ndetached;
    struct IrKept *kept;                   /* released by ir_graph_free (ir_graph_keep) */
    uint32_t nkept, capkept;
};

/* A block of memory the graph releases when freed (a mapped file constants point
 * into). */
struct IrKept {
    void *p;
    size_t n;
    void (*release)(void *p, size_t n);
    bool file;               /* a read-only mapping of a file (ir_graph_keep_file) */
};

_Noreturn void ir_die(const char *file, int line, const char *what)
{
    fflush(stdout);
    fprintf(stderr, "%s:%d: internal error: %s\n", file, line, what);
    abort();
}

/* Allocation failure: jump to the driver's handler, or stop the program. */
void ir_oom(IrGraph *g)
{
    if (g && g->oom)
        longjmp(*g->oom, 1);
    fflush(stdout);
    fputs("spyrec: out of memory\n", stderr);
    abort();
}

const char *ir_strdup(IrGraph *g, const char *s)
{
    if (!s)
        s = "";
    size_t n = strlen(s) + 1;
    char *p = ir_alloc(g, n);
    memcpy(p, s, n);
    return p;
}

/* Grow an arena array *arr of *cap elements of size es to hold need elements. */
static void grow(IrGraph *g, void **arr, uint32_t *cap, size_t es, uint32_t need)
{
    if (need <= *cap)
        return;
    if (need >= UINT32_MAX / 2)
        ir_oom(g);
    uint32_t nc = *cap ? *cap : 16;
    while (nc < need)
        nc *= 2;
    void *p = ir_alloc(g, (size_t)nc * es);
    if (*cap)
        memcpy(p, *arr, (size_t)*cap * es);
    *arr = p;
    *cap = nc;
}

/* ---- graph ---- */

IrGraph *ir_graph_new(IrDiag *diag)
{
    IrGraph *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->priv = calloc(1, sizeof *g->priv);
    if (!g->priv) {
        free(g);
        return NULL;
    }
    g->diag = diag;
    g->fold_budget = IR_FOLD_BUDGET_DEFAULT;
    return g;
}

void ir_graph_free(IrGraph *g)
{
    if (!g)
        return;
    for (uint32_t i = 0; i < g->priv->nsubs; i++)
        ir_graph_free(g->priv->subs[i]);
    free(g->priv->subs);
    free(g->priv->names);
    for (uint32_t i = 0; i < g->priv->nkept; i++)
        g->priv->kept[i].release(g->priv->kept[i].p, g->priv->kept[i].n);
    free(g->priv->kept);
    free(g->priv);
    ir_arena_release(g, &g->arena);
    ir_arena_release(g, &g->scratch);
    free(g);
}

/* ---- value names ---- */

/* FNV-1a hash of a string. */
static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* Slot of name (of hash h) in the set: the matching entry, or the empty slot where it
 * would go. */
static uint32_t name_slot(IrGraph *g, const char *name, uint32_t h)
{
    struct IrGraphPriv *p = g->priv;
    uint32_t mask = p->capnames - 1, i = h & mask;
    for (;; i = (i + 1) & mask) {
        ValId v = p->names[i].v;
        if (v == NAME_EMPTY)
            return i;
        if (v != NAME_TOMB && p->names[i].hash == h && strcmp(g->vals[v].name, name) == 0)
            return i;
    }
}

/* Rebuild the set, large enough for one more entry, from the names of all values. */
static void name_rehash(IrGraph *g)
{
    struct IrGraphPriv *p = g->priv;
    uint32_t cap = 64;
    while (cap < (g->nvals + 1) * 3)
        cap *= 2;
    free(p->names);
    p->names = malloc((size_t)cap * sizeof *p->names);
    if (!p->names)
        ir_oom(g);
    memset(p->names, 0xff, (size_t)cap * sizeof *p->names);
    p->capnames = cap;
    p->nnames = p->ntombs = 0;
    for (ValId v = 0; v < g->nvals; v++) {
        if (!g->vals[v].name)
            continue;
        uint32_t h = hash_str(g->vals[v].name), s = name_slot(g, g->vals[v].name, h);
        if (p->names[s].v == NAME_EMPTY) {
            p->names[s] = (NameSlot){v, h};
            p->nnames++;
        }
    }
}

ValId ir_find_value(IrGraph *g, const char *name)
{
    if (!g->priv->capnames || !name)
        return IR_NONE;
    ValId v = g->priv->names[name_slot(g, name, hash_str(name))].v;
    return v == NAME_EMPTY ? IR_NONE : v;
}

const char *ir_fresh_name(IrGraph *g, const char *prefix)
{
    char buf[256];
    if (!prefix || !prefix[0])
        prefix = "t";
    do
        snprintf(buf, sizeof buf, "%.200s_%u", prefix, g->name_counter++);
    while (ir_find_value(g, buf) != IR_NONE);
    return ir_strdup(g, buf);
}

const char *ir_set_name(IrGraph *g, ValId v, const char *name)
{
    IrValue *val = ir_val(g, v);
    struct IrGraphPriv *p = g->priv;
    if (val->name && name && strcmp(val->name, name) == 0)
        return val->name;
    if ((p->nnames + p->ntombs + 1) * 2 >= p->capnames)
        name_rehash(g);
    if (val->name) {                       /* forget the old name */
        uint32_t s = name_slot(g, val->name, hash_str(val->name));
        if (p->names[s].v == v) {
            p->names[s].v = NAME_TOMB;
            p->nnames--;
            p->ntombs++;
        }
    }
    if (!name || !name[0] || ir_find_value(g, name) != IR_NONE)
        name = ir_fresh_name(g, name);
    else
        name = ir_strdup(g, name);
    val->name = name;
    uint32_t h = hash_str(name);
    p->names[name_slot(g, name, h)] = (NameSlot){v, h};
    p->nnames++;
    return name;
}

/* ---- values ---- */

/* Append a value of the given kind and type, named name (made unique). */
static ValId new_value(IrGraph *g, const char *name, const IrType *t, IrValKind kind)
{
    IR_ASSERT(t->rank >= 0 && t->rank <= IR_MAX_RANK);
    grow(g, (void **)&g->vals, &g->capvals, sizeof(IrValue), g->nvals + 1);
    ValId v = g->nvals++;
    IrValue *val = &g->vals[v];
    memset(val, 0, sizeof *val);
    val->type = *t;
    val->kind = kind;
    val->def = IR_NONE;
    ir_set_name(g, v, name);
    return v;
}

ValId ir_add_input(IrGraph *g, const char *name, const IrType *t)
{
    ValId v = new_value(g, name, t, IR_VAL_INPUT);
    grow(g, (void **)&g->inputs, &g->capinputs, sizeof(ValId), g->ninputs + 1);
    g->inputs[g->ninputs++] = v;
    return v;
}

ValId ir_add_const(IrGraph *g, const char *name, const IrType *t, const void *data)
{
    size_t bytes = ir_type_bytes(t);
    IR_ASSERT(bytes != SIZE_MAX);
    void *p = ir_alloc(g, bytes);
    if (data && bytes)
        memcpy(p, data, bytes);
    ValId v = new_value(g, name && name[0] ? name : "c", t, IR_VAL_CONST);
    g->vals[v].data = p;
    return v;
}

ValId ir_add_const_ref(IrGraph *g, const char *name, const IrType *t, const void *data)
{
    IR_ASSERT(ir_type_bytes(t) != SIZE_MAX && ((uintptr_t)data & 15) == 0);
    ValId v = new_value(g, name && name[0] ? name : "c", t, IR_VAL_CONST);
    g->vals[v].data = data;
    return v;
}

void ir_graph_keep(IrGraph *g, void *p, size_t n, void (*release)(void *p, size_t n))
{
    struct IrGraphPriv *q = g->priv;
    if (q->nkept == q->capkept) {
        uint32_t cap = q->capkept ? 2 * q->capkept : 4;
        struct IrKept *k = realloc(q->kept, cap * sizeof *k);
        if (!k) {
            release(p, n);
            ir_oom(g);
        }
        q->kept = k;
        q->capkept = cap;
    }
    q->kept[q->nkept++] = (struct IrKept){p, n, release, false};
}

void ir_graph_keep_file(IrGraph *g, void *p, size_t n, void (*release)(void *p, size_t n))
{
    ir_graph_keep(g, p, n, release);
    g->priv->kept[g->priv->nkept - 1].file = true;
}

ValId ir_const_scalar_f32(IrGraph *g, float v)
{
    IrType t = {.dtype = IR_DT_F32, .rank = 0};
    return ir_add_const(g, "c", &t, &v);
}

ValId ir_const_i64s(IrGraph *g, const int64_t *v, int n)
{
    IrType t = {.dtype = IR_DT_I64, .rank = 1, .dims = {n}};
    return ir_add_const(g, "c", &t, v);
}

void ir_add_output(IrGraph *g, ValId v)
{
    IR_ASSERT(v < g->nvals);
    grow(g, (void **)&g->outputs, &g->capoutputs, sizeof(ValId), g->noutputs + 1);
    uint32_t at = g->noutputs - g->nhidden;   /* visible outputs precede hidden ones */
    memmove(g->outputs + at + 1, g->outputs + at, (size_t)g->nhidden * sizeof(ValId));
    g->outputs[at] = v;
    g->noutputs++;
}

/* ---- attributes ---- */

IrAttr ir_attr_int(const char *name, int64_t v)
{
    return (IrAttr){.name = name, .kind = IR_ATTR_INT, .i = v, .tensor = IR_NONE};
}

IrAttr ir_attr_float(const char *name, double v)
{
    return (IrAttr){.name = name, .kind = IR_ATTR_FLOAT, .f = v, .tensor = IR_NONE};
}

IrAttr ir_attr_str(IrGraph *g, const char *name, const char *s)
{
    return (IrAttr){.name = name, .kind = IR_ATTR_STRING, .s = ir_strdup(g, s),
                    .tensor = IR_NONE};
}

IrAttr ir_attr_ints(IrGraph *g, const char *name, const int64_t *v, int n)
{
    int64_t *p = ir_alloc(g, (size_t)(n > 0 ? n : 0) * sizeof *p);
    if (n > 0)
        memcpy(p, v, (size_t)n * sizeof *p);
    return (IrAttr){.name = name, .kind = IR_ATTR_INTS, .ints = p, .n = (uint32_t)(n > 0 ? n : 0),
                    .tensor = IR_NONE};
}

/* Ints attribute referring to v (no copy: ir_add_node copies it). */
IrAttr ir_attr_ints_ref(const char *name, const int64_t *v, int n)
{
    return (IrAttr){.name = name, .kind = IR_ATTR_INTS, .ints = v, .n = (uint32_t)(n > 0 ? n : 0),
                    .tensor = IR_NONE};
}

IrAttr ir_attr_floats(IrGraph *g, const char *name, const double *v, int n)
{
    double *p = ir_alloc(g, (size_t)(n > 0 ? n : 0) * sizeof *p);
    if (n > 0)
        memcpy(p, v, (size_t)n * sizeof *p);
    return (IrAttr){.name = name, .kind = IR_ATTR_FLOATS, .floats = p,
                    .n = (uint32_t)(n > 0 ? n : 0), .tensor = IR_NONE};
}

const IrAttr *ir_attr_find(const IrNode *n, const char *name)
{
    for (int i = 0; i < n->nattrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0)
            return &n->attrs[i];
    return NULL;
}

int64_t ir_attr_get_int(const IrNode *n, const char *name, int64_t dflt)
{
    const IrAttr *a = ir_attr_find(n, name);
    return a && a->kind == IR_ATTR_INT ? a->i : dflt;
}

double ir_attr_get_float(const IrNode *n, const char *name, double dflt)
{
    const IrAttr *a = ir_attr_find(n, name);
    if (a && a->kind == IR_ATTR_FLOAT)
        return a->f;
    if (a && a->kind == IR_ATTR_INT)
        return (double)a->i;
    return dflt;
}

int ir_attr_get_ints(const IrNode *n, const char *name, const int64_t **out)
{
    const IrAttr *a = ir_attr_find(n, name);
    if (!a || a->kind != IR_ATTR_INTS)
        return -1;
    *out = a->ints;
    return (int)a->n;
}

/* Record the subgraphs of the GRAPH attributes as owned by g (freed with it), each
 * once. Room is reserved first, so on out of memory none of them is owned (the caller
 * still owns them all); after the reservation nothing can fail. */
static void own_subgraphs(IrGraph *g, const IrAttr *attrs, int nattrs)
{
    struct IrGraphPriv *p = g->priv;
    uint32_t need = p->nsubs;
    for (int a = 0; a < nattrs; a++)
        need += attrs[a].kind == IR_ATTR_GRAPH;
    if (need > p->capsubs) {
        uint32_t cap = p->capsubs ? p->capsubs : 4;
        while (cap < need)
            cap *= 2;
        IrGraph **s = realloc(p->subs, cap * sizeof *s);
        if (!s)
            ir_oom(g);
        p->subs = s;
        p->capsubs = cap;
    }
    for (int a = 0; a < nattrs; a++) {
        IrGraph *sub = attrs[a].kind == IR_ATTR_GRAPH ? attrs[a].graph : NULL;
        bool owned = !sub || sub == g;
        for (uint32_t i = 0; i < p->nsubs && !owned; i++)
            owned = p->subs[i] == sub;
        if (!owned)
            p->subs[p->nsubs++] = sub;
    }
}

/* Deep copy of attribute src into g's arena (a subgraph is shared: see
 * own_subgraphs). */
static IrAttr copy_attr(IrGraph *g, const IrAttr *src)
{
    IrAttr a = *src;
    a.name = ir_strdup(g, src->name);
    switch (src->kind) {
    case IR_ATTR_STRING: a.s = ir_strdup(g, src->s); break;
    case IR_ATTR_INTS: a = ir_attr_ints(g, a.name, src->ints, (int)src->n); break;
    case IR_ATTR_FLOATS: a = ir_attr_floats(g, a.name, src->floats, (int)src->n); break;
    case IR_ATTR_STRINGS: {
        const char **s = ir_alloc(g, (size_t)src->n * sizeof *s);
        for (uint32_t i = 0; i < src->n; i++)
            s[i] = ir_strdup(g, src->strings[i]);
        a.strings = s;
        break;
    }
    default: break;
    }
    return a;
}

/* ---- nodes ---- */

/* Copy of an origin into the arena (NULL gives an empty origin). */
static IrOrigin copy_origin(IrGraph *g, const IrOrigin *o)
{
    IrOrigin r = {"", "", NULL};
    if (o) {
        r.name = ir_strdup(g, o->name);
        r.op_type = ir_strdup(g, o->op_type);
        r.stack = o->stack ? ir_strdup(g, o->stack) : NULL;
    }
    return r;
}

/* Append a node (inputs, attributes, origin copied; outputs created untyped). */
static NodeId new_node(IrGraph *g, IrOp op, const ValId *in, int nin, int nout,
                       const IrAttr *attrs, int nattrs, const IrOrigin *origin)
{
    IR_ASSERT(nin >= 0 && nin <= UINT16_MAX && nout >= 0 && nout <= UINT16_MAX);
    IR_ASSERT(nattrs >= 0 && nattrs <= UINT16_MAX);
    for (int i = 0; i < nin; i++)
        IR_ASSERT(in[i] == IR_NONE || in[i] < g->nvals);
    IrNode nd = {.op = op, .nin = (uint16_t)nin, .nout = (uint16_t)nout,
                 .nattrs = (uint16_t)nattrs};
    nd.in = ir_alloc(g, (size_t)nin * sizeof(ValId));
    if (nin)
        memcpy(nd.in, in, (size_t)nin * sizeof(ValId));
    nd.out = ir_alloc(g, (size_t)nout * sizeof(ValId));
    nd.attrs = ir_alloc(g, (size_t)nattrs * sizeof(IrAttr));
    for (int i = 0; i < nattrs; i++)
        nd.attrs[i] = copy_attr(g, &attrs[i]);
    nd.origin = copy_origin(g, origin);
    grow(g, (void **)&g->nodes, &g->capnodes, sizeof(IrNode), g->nnodes + 1);
    NodeId id = g->nnodes++;
    const char *prefix = nd.origin.name[0] ? nd.origin.name : ir_op_info[op].name;
    IrType undef = {.dtype = IR_DT_UNDEF, .rank = 0};
    for (int i = 0; i < nout; i++) {
        ValId v = new_value(g, ir_fresh_name(g, prefix), &undef, IR_VAL_ACT);
        g->vals[v].def = id;
        g->vals[v].def_slot = (uint32_t)i;
        nd.out[i] = v;
    }
    g->nodes[id] = nd;
    own_subgraphs(g, nd.attrs, nattrs);    /* last: all or none (see own_subgraphs) */
    return id;
}

NodeId ir_add_node(IrGraph *g, IrOp op, const ValId *in, int nin, const IrAttr *attrs,
                   int nattrs, const IrOrigin *origin)
{
    IR_ASSERT(op < IR_OP_FOREIGN);
    const IrOpInfo *info = &ir_op_info[op];
    IR_ASSERT(nin >= info->min_in && (info->max_in < 0 || nin <= info->max_in));
    for (int i = 0; i < nin; i++)
        IR_ASSERT(in[i] < g->nvals);
    NodeId id = new_node(g, op, in, nin, info->nout, attrs, nattrs, origin);
    if (ir_infer(g, id) && g->fold_consts)
        ir_fold_node(g, &g->nodes[id]);
    return id;
}

NodeId ir_add_foreign(IrGraph *g, const IrForeign *f, const ValId *in, int nin, int nout,
                      const IrAttr *attrs, int nattrs, const IrOrigin *origin)
{
    /* every allocation before new_node, whose last step takes the subgraphs */
    const char *op_type = ir_strdup(g, f->op_type), *domain = ir_strdup(g, f->domain);
    NodeId id = new_node(g, IR_OP_FOREIGN, in, nin, nout, attrs, nattrs, origin);
    IrNode *n = &g->nodes[id];
    n->foreign.op_type = op_type;
    n->foreign.domain = domain;
    n->foreign.opset = f->opset;
    return id;
}

/* ---- convenience builders ---- */

/* Add a one-output core node and return its output value. */
static ValId add1(IrGraph *g, IrOp op, const ValId *in, int nin, const IrAttr *a, int na,
                  const IrOrigin *o)
{
    NodeId id = ir_add_node(g, op, in, nin, a, na, o);
    return g->nodes[id].out[0];
}

ValId ir_unary(IrGraph *g, int fn, ValId a, const IrOrigin *o)
{
    IrAttr at = ir_attr_int("fn", fn);
    return add1(g, IR_OP_UNARY, &a, 1, &at, 1, o);
}

ValId ir_binary(IrGraph *g, int fn, ValId a, ValId b, const IrOrigin *o)
{
    IrAttr at = ir_attr_int("fn", fn);
    ValId in[2] = {a, b};
    return add1(g, IR_OP_BINARY, in, 2, &at, 1, o);
}

ValId ir_select(IrGraph *g, ValId c, ValId a, ValId b, const IrOrigin *o)
{
    ValId in[3] = {c, a, b};
    return add1(g, IR_OP_SELECT, in, 3, NULL, 0, o);
}

ValId ir_cast(IrGraph *g, ValId a, IrDType to, const IrOrigin *o)
{
    IrAttr at = ir_attr_int("to", to);
    return add1(g, IR_OP_CAST, &a, 1, &at, 1, o);
}

ValId ir_reshape(IrGraph *g, ValId a, const int64_t *shape, int rank, const IrOrigin *o)
{
    IrAttr at = ir_attr_ints_ref("shape", shape, rank);
    return add1(g, IR_OP_RESHAPE, &a, 1, &at, 1, o);
}

ValId ir_transpose(IrGraph *g, ValId a, const int64_t *perm, const IrOrigin *o)
{
    IrAttr at = ir_attr_ints_ref("perm", perm, ir_vtype(g, a)->rank);
    return add1(g, IR_OP_TRANSPOSE, &a, 1, &at, 1, o);
}

/* Reduction; negative axes are normalised and the list sorted (inference checks it). */
ValId ir_reduce(IrGraph *g, int fn, ValId a, const int64_t *axes, int naxes, bool keepdims,
                const IrOrigin *o)
{
    int64_t ax[IR_MAX_RANK + 1];
    int rank = ir_vtype(g, a)->rank, n = naxes;
    IR_ASSERT(naxes >= 0);
    if (n > IR_MAX_RANK + 1)
        n = IR_MAX_RANK + 1;               /* too many anyway: inference reports it */
    for (int i = 0; i < n; i++) {
        ax[i] = axes[i] < 0 ? axes[i] + rank : axes[i];
        for (int j = i; j > 0 && ax[j - 1] > ax[j]; j--) {
            int64_t t = ax[j];
            ax[j] = ax[j - 1];
            ax[j - 1] = t;
        }
    }
    IrAttr at[3] = {ir_attr_int("fn", fn), ir_attr_ints_ref("axes", ax, n),
                    ir_attr_int("keepdims", keepdims)};
    return add1(g, IR_OP_REDUCE, &a, 1, at, 3, o);
}

ValId ir_matmul(IrGraph *g, ValId a, ValId b, const IrOrigin *o)
{
    ValId in[2] = {a, b};
    return add1(g, IR_OP_MATMUL, in, 2, NULL, 0, o);
}

ValId ir_expand(IrGraph *g, ValId a, const int64_t *shape, int rank, const IrOrigin *o)
{
    IrAttr at = ir_attr_ints_ref("shape", shape, rank);
    return add1(g, IR_OP_EXPAND, &a, 1, &at, 1, o);
}

/* ---- rewriting ---- */

IrNode *ir_rewrite_begin(IrGraph *g, uint32_t *n)
{
    IrNode *old = g->nodes;
    *n = g->nnodes;
    g->nodes = NULL;
    uint32_t cap = 0;
    grow(g, (void **)&g->nodes, &cap, sizeof(IrNode), g->capnodes ? g->capnodes : 16);
    g->capnodes = cap;
    g->nnodes = 0;
    g->priv->detached = old;
    g->priv->ndetached = *n;
    return old;                            /* arena memory: stays valid */
}

NodeId ir_readd_node(IrGraph *g, const IrNode *old)
{
    IrNode nd = *old;
    nd.in = ir_alloc(g, (size_t)old->nin * sizeof(ValId));
    nd.out = ir_alloc(g, (size_t)old->nout * sizeof(ValId));
    if (old->nin)
        memcpy(nd.in, old->in, old->nin * sizeof(ValId));
    if (old->nout)
        memcpy(nd.out, old->out, old->nout * sizeof(ValId));
    grow(g, (void **)&g->nodes, &g->capnodes, sizeof(IrNode), g->nnodes + 1);
    NodeId id = g->nnodes++;
    g->nodes[id] = nd;
    for (uint32_t i = 0; i < nd.nout && !nd.dead; i++) {
        IrValue *v = ir_val(g, nd.out[i]);
        v->def = id;
        v->def_slot = i;
    }
    return id;
}

/* The node list detached by the last ir_rewrite_begin (count in *n; NULL if none). */
IrNode *ir_detached(IrGraph *g, uint32_t *n)
{
    *n = g->priv->ndetached;
    return g->priv->detached;
}

void ir_compact(IrGraph *g)
{
    for (ValId v = 0; v < g->nvals; v++)
        if (g->vals[v].kind == IR_VAL_ACT)
            g->vals[v].def = IR_NONE;
    uint32_t k = 0;
    for (uint32_t i = 0; i < g->nnodes; i++) {
        if (g->nodes[i].dead)
            continue;
        g->nodes[k] = g->nodes[i];
        for (uint32_t j = 0; j < g->nodes[k].nout; j++) {
            IrValue *v = &g->vals[g->nodes[k].out[j]];
            if (v->kind == IR_VAL_ACT) {
                v->def = k;
                v->def_slot = j;
            }
        }
        k++;
    }
    g->nnodes = k;
}

bool ir_has_subgraphs(const IrGraph *g)
{
    for (uint32_t i = 0; i < g->nnodes; i++)
        for (int k = 0; k < g->nodes[i].nattrs; k++)
            if (g->nodes[i].attrs[k].kind == IR_ATTR_GRAPH)
                return true;
    return false;
}

size_t ir_const_free(IrGraph *g, ValId v)
{
    IrValue *val = ir_val(g, v);
    size_t bytes = ir_type_bytes(&val->type);
    if (val->kind != IR_VAL_CONST || !val->data || !ir_arena_free(g, &g->arena, val->data, bytes))
        return 0;
    val->data = NULL;
    for (int d = 0; d < val->type.rank; d++)
        val->type.dims[d] = 0;
    return bytes;
}

size_t ir_const_drop_span(IrGraph *g, ValId v, size_t off, size_t len)
{
    const IrValue *val = ir_val(g, v);
    size_t bytes = ir_type_bytes(&val->type);
    if (val->kind != IR_VAL_CONST || !val->data || off >= bytes)
        return 0;
    len = len < bytes - off ? len : bytes - off;
    uintptr_t lo = (uintptr_t)val->data + off, hi = lo + len;
    const struct IrGraphPriv *q = g->priv;
    for (uint32_t i = 0; i < q->nkept; i++) {
        const struct IrKept *k = &q->kept[i];
        uintptr_t b = (uintptr_t)k->p;
        if (k->file && lo >= b && hi <= b + k->n)
            return ir_pages_drop((const void *)lo, len);
    }
    return 0;
}

size_t ir_const_drop_pages(IrGraph *g, ValId v)
{
    return ir_const_drop_span(g, v, 0, SIZE_MAX);
}

uint32_t *ir_use_counts(IrGraph *g)
{
    uint32_t *c = ir_scratch(g, (size_t)g->nvals * sizeof *c);
    for (uint32_t i = 0; i < g->nnodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->dead)
            continue;
        for (int k = 0; k < n->nin; k++)
            if (n->in[k] != IR_NONE)
                c[n->in[k]]++;
        for (int k = 0; k < n->nattrs; k++)
            if (n->attrs[k].kind == IR_ATTR_TENSOR && n->attrs[k].tensor < g->nvals)
                c[n->attrs[k].tensor]++;
    }
    for (uint32_t i = 0; i < g->noutputs; i++)
        c[g->outputs[i]]++;
    return c;
}

bool ir_infer(IrGraph *g, NodeId id)
{
    IrNode *n = ir_node(g, id);
    if (n->op == IR_OP_FOREIGN)
        return true;
    IrType outs[8];
    char err[512] = "";
    bool quiet = false;
    IR_ASSERT(n->nout <= 8);
    bool ok = ir_infer_types(g, n, outs, err, sizeof err, &quiet);
    n = ir_node(g, id);
    for (int i = 0; i < n->nout; i++) {
        IrType undef = {.dtype = IR_DT_UNDEF, .rank = 0};
        g->vals[n->out[i]].type = ok ? outs[i] : undef;
    }
    if (!ok && !quiet)
        ir_error(g, &n->origin, "%s", err);
    return ok;
}
