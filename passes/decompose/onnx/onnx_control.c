/* onnx_control.c: ONNX If, Loop, Scan and SequenceMap, resolved at compile time.
 *
 * A body (GRAPH attribute, see fe_load_onnx) is inlined: its formal inputs are bound
 * to outer values (loop counter, carried values, scan slices), its captured inputs to
 * the node's trailing inputs of the same name, and its nodes are decomposed through
 * the same dispatch table (dec_run), so nested control flow works.
 * - If: a constant condition inlines one branch; otherwise both branches are inlined
 *   and every output pair is combined with a SELECT (predication).
 * - Loop: unrolled when the trip count is a constant and the condition folds to a
 *   constant at every iteration; a runtime condition with a constant trip count and no
 *   scan outputs is predicated (carried values keep their last active value).
 * - Scan (opset 8 and 9+): unrolled over the statically known sequence length.
 * - SequenceMap: the body is inlined once per sequence element.
 */
#include <stdio.h>
#include <string.h>

#include "onnx.h"

#define CTL_MAX_ITERS 4096                /* most iterations one Loop/Scan may unroll */
#define CTL_MAX_NODES (1u << 20)          /* most nodes the graph may grow to */
#define CTL_MAX_BODIES (1u << 20)         /* most bodies inlined in one compile */

/* One body being inlined (possibly many times). */
typedef struct {
    DecCtx *c;                            /* context of the node that holds the body */
    IrGraph *sub;
    int nformal;                          /* formal inputs, bound per call */
    ValId *cap;                           /* per body input: captured outer value */
    ValId *consts;                        /* per body value: its constant copy in c->g */
    ValId *map;                           /* per body value: its outer value (this call) */
    uint32_t *uses;                       /* use counts of the body's values */
    ValId *in_buf;                        /* scratch for the node being inlined: inputs, */
    const char **name_buf;                /* their names, */
    IrAttr *attr_buf;                     /* attributes (sized for the largest node) */
} Body;

/* Name input k of the node had when it was imported. */
static const char *input_name(const DecCtx *c, int k)
{
    if (c->in_names)
        return c->in_names[k];
    ValId v = c->n->in[k];
    return v == IR_NONE ? "" : ir_val(c->g, v)->name;
}

/* Index of the node input captured under name, searching from the end; -1 if none. */
static int find_capture(const DecCtx *c, const char *name)
{
    for (int k = c->n->nin - 1; k >= 0; k--)
        if (c->n->in[k] != IR_NONE && !strcmp(input_name(c, k), name))
            return k;
    return -1;
}

/* How many trailing inputs of sub capture values of the enclosing graph (they are
 * named like the node inputs that pass those values). Relies on ONNX scoping: a body's
 * own inputs do not reuse the names of values of the enclosing graphs. */
static int count_captured(const DecCtx *c, IrGraph *sub)
{
    int n = 0;
    for (int j = (int)sub->ninputs - 1; j >= 0; j--, n++)
        if (find_capture(c, sub->vals[sub->inputs[j]].name) < 0)
            break;
    return n;
}

/* The GRAPH attribute name of the node; reports when absent. */
static IrGraph *body_attr(DecCtx *c, const char *name)
{
    const IrAttr *a = ir_attr_find(c->n, name);
    if (!a || a->kind != IR_ATTR_GRAPH || !a->graph) {
        dec_err(c, "attribute '%s' (a graph) is required", name);
        return NULL;
    }
    return a->graph;
}

/* Use counts of the values of sub (as ir_use_counts), in g's scratch arena: a
 * subgraph's own arenas are never grown after import. */
static uint32_t *body_uses(IrGraph *g, IrGraph *sub)
{
    uint32_t *u = ir_scratch(g, ((size_t)sub->nvals + 1) * sizeof *u);
    for (uint32_t i = 0; i < sub->nnodes; i++) {
        const IrNode *n = &sub->nodes[i];
        for (int k = 0; !n->dead && k < n->nin; k++)
            if (n->in[k] != IR_NONE)
                u[n->in[k]]++;
        for (int k = 0; !n->dead && k < n->nattrs; k++)
            if (n->attrs[k].kind == IR_ATTR_TENSOR && n->attrs[k].tensor < sub->nvals)
                u[n->attrs[k].tensor]++;
    }
    for (uint32_t i = 0; i < sub->noutputs; i++)
        u[sub->outputs[i]]++;
    return u;
}

/* Prepare to inline sub with nformal formal inputs; binds its captured inputs. */
static bool body_init(Body *b, DecCtx *c, IrGraph *sub, int nformal)
{
    IrGraph *g = c->g;
    memset(b, 0, sizeof *b);
    b->c = c;
    b->sub = sub;
    b->nformal = nformal;
    if (nformal < 0 || (uint32_t)nformal > sub->ninputs) {
        dec_err(c, "the body has %u inputs, %d expected", sub->ninputs, nformal);
        return false;
    }
    size_t nv = sub->nvals ? sub->nvals : 1;
    b->cap = ir_scratch(g, (sub->ninputs + 1) * sizeof *b->cap);
    b->consts = ir_scratch(g, nv * sizeof *b->consts);
    b->map = ir_scratch(g, nv * sizeof *b->map);
    memset(b->consts, 0xff, nv * sizeof *b->consts);
    b->uses = body_uses(g, sub);
    size_t maxin = 1, maxat = 1;
    for (uint32_t i = 0; i < sub->nnodes; i++) {
        maxin = sub->nodes[i].nin > maxin ? sub->nodes[i].nin : maxin;
        maxat = sub->nodes[i].nattrs > maxat ? sub->nodes[i].nattrs : maxat;
    }
    b->in_buf = ir_scratch(g, maxin * sizeof *b->in_buf);
    b->name_buf = ir_scratch(g, maxin * sizeof *b->name_buf);
    b->attr_buf = ir_scratch(g, maxat * sizeof *b->attr_buf);
    for (uint32_t j = (uint32_t)nformal; j < sub->ninputs; j++) {
        const char *nm = sub->vals[sub->inputs[j]].name;
        int k = find_capture(c, nm);
        if (k < 0) {
            dec_err(c, "the body uses '%s', which the node does not pass", nm);
            return false;
        }
        b->cap[j] = c->n->in[k];
    }
    return true;
}

/* The outer value bound to body value v in this call (constants are copied into the
 * outer graph once per body); IR_NONE if unbound. */
static ValId body_get(Body *b, ValId v)
{
    if (v == IR_NONE)
        return IR_NONE;
    if (b->map[v] != IR_NONE)
        return b->map[v];
    const IrValue *sv = ir_val(b->sub, v);
    if (sv->kind != IR_VAL_CONST)
        return IR_NONE;
    if (b->consts[v] == IR_NONE)
        b->consts[v] = ir_add_const(b->c->g, sv->name, &sv->type, sv->data);
    return b->consts[v];
}

/* Check a result against the type the model declares for body value old. */
static bool body_check_type(Body *b, const IrNode *n, ValId old, ValId nv)
{
    const IrType *want = ir_vtype(b->sub, old);
    if (nv == IR_NONE || dec_seq_known(b->c->seqs, nv) || want->dtype == IR_DT_UNDEF)
        return true;
    const IrType *got = ir_vtype(b->c->g, nv);
    if (ir_type_eq(want, got))
        return true;
    ir_error(b->c->g, &n->origin, "output '%s' computes to %s of rank %d but the model "
             "declares %s of rank %d", ir_val(b->sub, old)->name, ir_dtype_name(got->dtype),
             got->rank, ir_dtype_name(want->dtype), want->rank);
    return false;
}

/* Copy of body node n with its inputs (and tensor attributes) bound to outer values,
 * in b's scratch buffers (valid until the next node of this body). */
static bool body_bind_node(Body *b, const IrNode *n, IrNode *nd)
{
    IrGraph *g = b->c->g;
    *nd = *n;
    nd->in = b->in_buf;
    for (int k = 0; k < n->nin; k++) {
        nd->in[k] = body_get(b, n->in[k]);
        b->name_buf[k] = n->in[k] == IR_NONE ? "" : ir_val(b->sub, n->in[k])->name;
        if (n->in[k] != IR_NONE && (nd->in[k] == IR_NONE ||
            (ir_vtype(g, nd->in[k])->dtype == IR_DT_UNDEF &&
             !dec_seq_known(b->c->seqs, nd->in[k])))) {
            ir_error(g, &n->origin, "input '%s' has no value or type", b->name_buf[k]);
            return false;
        }
    }
    nd->attrs = b->attr_buf;
    for (int k = 0; k < n->nattrs; k++) {
        nd->attrs[k] = n->attrs[k];
        if (n->attrs[k].kind == IR_ATTR_TENSOR)
            nd->attrs[k].tensor = body_get(b, n->attrs[k].tensor);
    }
    return true;
}

/* Inline one body node: decompose a foreign node, re-emit a core one. */
static bool body_node(Body *b, const IrNode *n)
{
    IrGraph *g = b->c->g;
    IrNode nd;
    if (g->nnodes >= CTL_MAX_NODES) {
        ir_error(g, &n->origin, "unsupported: unrolling control flow makes more than %u "
                 "nodes", CTL_MAX_NODES);
        return false;
    }
    if (!body_bind_node(b, n, &nd))
        return false;
    if (n->op != IR_OP_FOREIGN) {
        NodeId id = ir_add_node(g, n->op, nd.in, n->nin, nd.attrs, n->nattrs, &n->origin);
        for (int i = 0; i < n->nout; i++)
            b->map[n->out[i]] = ir_node(g, id)->out[i];
        return !ir_failed(g);
    }
    DecCtx cc = {.g = g, .n = &nd, .o = &nd.origin, .opset = nd.foreign.opset,
                 .uses = b->uses, .nuses = b->sub->nvals, .seqs = b->c->seqs,
                 .outg = b->sub, .in_names = b->name_buf};
    if (!dec_run(&cc))
        return false;
    for (int i = 0; i < n->nout; i++) {
        ValId old = n->out[i];
        if (old == IR_NONE)
            continue;
        if (cc.out[i] == IR_NONE && dec_out_used(&cc, i)) {
            ir_error(g, &n->origin, "unsupported: output %d ('%s') of %s", i,
                     ir_val(b->sub, old)->name, n->foreign.op_type);
            return false;
        }
        if (!body_check_type(b, n, old, cc.out[i]))
            return false;
        b->map[old] = cc.out[i];
    }
    return true;
}

/* Inline the body once: args bind the formal inputs; res gets one value per output. */
static bool body_call(Body *b, const ValId *args, ValId *res)
{
    IrGraph *sub = b->sub;
    if (!dec_seq_charge(b->c->seqs, CTL_MAX_BODIES)) {
        dec_err(b->c, "unsupported: control flow that unrolls into more than %u bodies",
                CTL_MAX_BODIES);
        return false;
    }
    memset(b->map, 0xff, (sub->nvals ? sub->nvals : 1) * sizeof *b->map);
    for (uint32_t j = 0; j < sub->ninputs; j++)
        b->map[sub->inputs[j]] = (int)j < b->nformal ? args[j] : b->cap[j];
    for (uint32_t i = 0; i < sub->nnodes; i++)
        if (!sub->nodes[i].dead && !body_node(b, &sub->nodes[i]))
            return false;
    for (uint32_t i = 0; i < sub->noutputs; i++) {
        res[i] = body_get(b, sub->outputs[i]);
        if (res[i] == IR_NONE) {
            dec_err(b->c, "body output '%s' has no value", ir_val(sub, sub->outputs[i])->name);
            return false;
        }
    }
    return true;
}

/* Inline sub once for another operator's GRAPH attribute (see dec.h). */
bool dec_call_body(DecCtx *c, IrGraph *sub, int nformal, const ValId *args, ValId *res)
{
    Body b;
    return body_init(&b, c, sub, nformal) && body_call(&b, args, res);
}

/* ---- helpers shared by the operators ---- */

/* Short "f32[2,3]" of a value's type into buf. */
static const char *type_str(DecCtx *c, ValId v, char *buf, size_t len)
{
    if (dec_seq_known(c->seqs, v)) {
        snprintf(buf, len, "a sequence");
        return buf;
    }
    const IrType *t = dec_ty(c, v);
    size_t k = (size_t)snprintf(buf, len, "%s[", ir_dtype_name(t->dtype));
    for (int i = 0; i < t->rank && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%lld", i ? "," : "", (long long)t->dims[i]);
    if (k < len)
        snprintf(buf + k, len - k, "]");
    return buf;
}

/* cond (one element) as a rank-0 bool tensor. */
static ValId scalar_cond(DecCtx *c, ValId cond)
{
    int64_t none[1] = {1};
    return dec_reshape(c, dec_cast(c, cond, IR_DT_BOOL), none, 0);
}

/* pred ? a : b for two values of one type (tensors, or sequences element by
 * element); IR_NONE after reporting when their types differ (what names them). */
static ValId merge(DecCtx *c, ValId pred, ValId a, ValId b, const char *what)
{
    const ValId *ia, *ib;
    uint32_t na, nb;
    char sa[96], sb[96];
    if (a == b)
        return a;
    bool qa = dec_seq_known(c->seqs, a), qb = dec_seq_known(c->seqs, b);
    if (qa || qb) {
        bool la = dec_seq_items(c->seqs, a, &ia, &na), lb = dec_seq_items(c->seqs, b, &ib, &nb);
        if (qa && qb && !la && !lb)
            return a;                     /* two empty optionals */
        if (!la || !lb || na != nb) {
            dec_err(c, "unsupported: %s: sequences or optionals that differ in length", what);
            return IR_NONE;
        }
        ValId *items = ir_scratch(c->g, ((size_t)na + 1) * sizeof *items);
        for (uint32_t i = 0; i < na; i++)
            if ((items[i] = merge(c, pred, ia[i], ib[i], what)) == IR_NONE)
                return IR_NONE;
        return dec_seq_make(c, items, na, IR_DT_UNDEF);
    }
    if (!ir_type_eq(dec_ty(c, a), dec_ty(c, b))) {
        dec_err(c, "unsupported: %s with different output shapes (%s and %s)", what,
                type_str(c, a, sa, sizeof sa), type_str(c, b, sb, sizeof sb));
        return IR_NONE;
    }
    return dec_select(c, pred, a, b);
}

/* Stack same-typed values along a new axis (may be negative: counted on rank + 1). */
static ValId stack(DecCtx *c, const ValId *xs, int64_t n, int64_t axis_attr)
{
    const IrType *t = dec_ty(c, xs[0]);
    int r = t->rank, axis;
    if (r + 1 > IR_MAX_RANK) {
        dec_err(c, "unsupported: stacking values of rank %d", r);
        return IR_NONE;
    }
    if (!dec_axis(c, axis_attr, r + 1, &axis))
        return IR_NONE;
    ValId *ys = ir_scratch(c->g, ((size_t)n + 1) * sizeof *ys);
    for (int64_t i = 0; i < n; i++) {
        const IrType *ti = dec_ty(c, xs[i]);
        int64_t dims[IR_MAX_RANK];
        if (!ir_type_eq(ti, t)) {
            dec_err(c, "unsupported: scan output slices of different shapes");
            return IR_NONE;
        }
        for (int k = 0, j = 0; k <= r; k++)
            dims[k] = k == axis ? 1 : ti->dims[j++];
        ys[i] = dec_reshape(c, xs[i], dims, r + 1);
    }
    return dec_concat(c, ys, (int)n, axis);
}

/* Slice number i along axis of x, without that axis. */
static ValId take(DecCtx *c, ValId x, int axis, int64_t i)
{
    const IrType *t = dec_ty(c, x);
    int64_t dims[IR_MAX_RANK];
    for (int k = 0, j = 0; k < t->rank; k++)
        if (k != axis)
            dims[j++] = t->dims[k];
    int r = t->rank - 1;
    return dec_reshape(c, dec_slice_axis(c, x, axis, i, 1, 1), dims, r);
}

/* ---- If ---- */

/* A branch of an If whose condition is only known at run time did not compile (its
 * errors are reported): says which, and how to compile only the branch taken. A model
 * may hold a branch that cannot run at the shapes given (silero_vad's 8 kHz branch at
 * a 16 kHz chunk length: onnxruntime fails there too, when that branch is taken). */
static void branch_err(DecCtx *c, ValId cond, const char *which)
{
    ValId src = ir_dyn_source_input(c->g, cond);
    const char *in = ir_val(c->g, src)->kind == IR_VAL_INPUT ? ir_val(c->g, src)->name : NULL;
    if (in)
        dec_err(c, "its %s branch does not compile at these shapes (above); the condition "
                "is computed at run time from input '%s': specialise it with --bind %s=FILE "
                "to compile only the branch taken", which, in, in);
    else
        dec_err(c, "its %s branch does not compile at these shapes (above), and the "
                "condition is only known at run time", which);
}

bool dec_if(DecCtx *c)
{
    IrGraph *tb = body_attr(c, "then_branch"), *eb = tb ? body_attr(c, "else_branch") : NULL;
    ValId cond = dec_in(c, 0);
    if (!eb)
        return false;
    if (cond == IR_NONE || dec_seq_known(c->seqs, cond) || dec_numel(dec_ty(c, cond)) != 1) {
        dec_err(c, "the condition must be a tensor of one element");
        return false;
    }
    if (tb->noutputs != c->n->nout || eb->noutputs != c->n->nout) {
        dec_err(c, "the branches have %u and %u outputs, the node %d", tb->noutputs,
                eb->noutputs, c->n->nout);
        return false;
    }
    ValId *rt = ir_scratch(c->g, ((size_t)c->n->nout + 1) * sizeof *rt);
    ValId *re = ir_scratch(c->g, ((size_t)c->n->nout + 1) * sizeof *re);
    Body b;
    if (ir_is_const(c->g, cond)) {
        bool take_then = dec_load(dec_ty(c, cond)->dtype, ir_val(c->g, cond)->data, 0) != 0;
        if (!body_init(&b, c, take_then ? tb : eb, 0) || !body_call(&b, NULL, rt))
            return false;
        memcpy(c->out, rt, c->n->nout * sizeof *rt);
        return true;
    }
    if (!body_init(&b, c, tb, 0) || !body_call(&b, NULL, rt)) {
        branch_err(c, cond, "then");
        return false;
    }
    if (!body_init(&b, c, eb, 0) || !body_call(&b, NULL, re)) {
        branch_err(c, cond, "else");
        return false;
    }
    for (int i = 0; i < c->n->nout; i++)
        if (dec_seq_len_differs(c->seqs, rt[i], re[i])) {
            dec_dynamic_err(c, cond, "condition");      /* the branches' sequences differ */
            return false;
        }
    ValId pred = scalar_cond(c, cond);
    for (int i = 0; i < c->n->nout; i++)
        if ((c->out[i] = merge(c, pred, rt[i], re[i], "If branches")) == IR_NONE)
            return false;
    return true;
}

/* ---- Loop ---- */

/* Whether the loop goes on: known at compile time (on), or a runtime flag (pred). */
typedef struct {
    bool known, on;
    ValId pred;                           /* bool scalar when !known */
} LoopFlag;

/* The constant trip count M (absent: unbounded). */
static bool loop_trip(DecCtx *c, int64_t *trip)
{
    ValId m = dec_in(c, 0);
    *trip = INT64_MAX;
    if (m == IR_NONE)
        return true;
    if (!ir_is_const(c->g, m)) {
        dec_dynamic_err(c, m, "trip count");
        return false;
    }
    const IrType *t = dec_ty(c, m);
    if (!ir_dtype_is_int(t->dtype) || dec_numel(t) != 1) {
        dec_err(c, "the trip count must be one integer");
        return false;
    }
    *trip = dec_load_int(t->dtype, ir_val(c->g, m)->data, 0);
    return true;
}

/* Fold condition value v (one element) into the flag: and-ed with a runtime flag,
 * or read when constant. */
static bool loop_flag_update(DecCtx *c, LoopFlag *f, ValId v)
{
    if (v == IR_NONE || dec_seq_known(c->seqs, v) || dec_numel(dec_ty(c, v)) != 1) {
        dec_err(c, "the loop condition must hold one element");
        return false;
    }
    if (f->known && ir_is_const(c->g, v)) {
        f->on = dec_load(dec_ty(c, v)->dtype, ir_val(c->g, v)->data, 0) != 0;
        return true;
    }
    ValId p = scalar_cond(c, v);
    f->pred = f->known ? p : dec_bin(c, IR_BIN_AND, f->pred, p);
    f->known = false;
    return true;
}

/* Append the K scan-output slices of one iteration to *hist (it iterations so far). */
static void loop_record(DecCtx *c, ValId **hist, int64_t *cap, int64_t it, int K,
                        const ValId *slices)
{
    if (K == 0)
        return;
    if (it == *cap) {
        int64_t ncap = *cap ? 2 * *cap : 16;
        ValId *h = ir_scratch(c->g, (size_t)(ncap * K) * sizeof *h);
        if (it)
            memcpy(h, *hist, (size_t)(it * K) * sizeof *h);
        *hist = h;
        *cap = ncap;
    }
    memcpy(*hist + it * K, slices, (size_t)K * sizeof *slices);
}

/* Unroll the loop: v[N] carried values in/out; scan slices into *hist, count in *nit. */
static bool loop_unroll(DecCtx *c, Body *b, int N, int K, ValId *v, ValId **hist, int64_t *nit)
{
    int64_t trip, cap = 0;
    ValId cin = dec_in(c, 1);
    bool has_cond = cin != IR_NONE || dec_in(c, 0) == IR_NONE;
    LoopFlag f = {.known = true, .on = true, .pred = IR_NONE};
    if (!loop_trip(c, &trip) || (cin != IR_NONE && !loop_flag_update(c, &f, cin)))
        return false;
    ValId *args = ir_scratch(c->g, ((size_t)N + 2) * sizeof *args);
    ValId *res = ir_scratch(c->g, ((size_t)b->sub->noutputs + 1) * sizeof *res);
    bool use_i = b->uses[b->sub->inputs[0]] > 0;
    ValId on = dec_scalar(c->g, IR_DT_BOOL, 1);
    int64_t i = 0;
    for (; i < trip && (!f.known || f.on); i++) {
        if (i >= CTL_MAX_ITERS) {
            dec_err(c, "unsupported: Loop of more than %d iterations", CTL_MAX_ITERS);
            return false;
        }
        if (!f.known && (K > 0 || trip == INT64_MAX)) {
            if (cin != IR_NONE && !ir_is_const(c->g, cin))
                dec_dynamic_err(c, cin, "loop condition");
            else
                dec_err(c, "unsupported: Loop whose %s depends on runtime data",
                        K > 0 ? "number of scan output slices" : "termination");
            return false;
        }
        args[0] = use_i ? dec_scalar(c->g, IR_DT_I64, (double)i) : IR_NONE;
        args[1] = f.known ? on : f.pred;
        memcpy(args + 2, v, (size_t)N * sizeof *v);
        if (!body_call(b, args, res))
            return false;
        for (int j = 0; j < N && !f.known && cin != IR_NONE && !ir_is_const(c->g, cin); j++)
            if (dec_seq_len_differs(c->seqs, res[1 + j], v[j])) {
                dec_dynamic_err(c, cin, "loop condition");   /* a sequence cannot grow */
                return false;                                /* under a runtime condition */
            }
        for (int j = 0; j < N; j++)
            v[j] = f.known ? res[1 + j]
                           : merge(c, f.pred, res[1 + j], v[j], "a Loop-carried value");
        for (int j = 0; j < N; j++)
            if (v[j] == IR_NONE)
                return false;
        loop_record(c, hist, &cap, i, K, res + 1 + N);
        if (has_cond && !loop_flag_update(c, &f, res[0]))
            return false;
    }
    *nit = i;
    return true;
}

bool dec_loop(DecCtx *c)
{
    IrGraph *sub = body_attr(c, "body");
    if (!sub)
        return false;
    int ncap = count_captured(c, sub);
    int nformal = (int)sub->ninputs - ncap, N = nformal - 2;
    int K = (int)sub->noutputs - 1 - N;
    if (N < 0 || c->n->nin - ncap != nformal || K < 0 || c->n->nout != N + K) {
        dec_err(c, "the body (%d inputs, %u outputs) does not match the node (%d inputs, "
                "%d outputs)", nformal, sub->noutputs, c->n->nin - ncap, c->n->nout);
        return false;
    }
    if (dec_in(c, 0) == IR_NONE && dec_in(c, 1) == IR_NONE) {
        dec_err(c, "Loop without a trip count or a condition never ends");
        return false;
    }
    if (dec_seq_known(c->seqs, dec_in(c, 0)) || dec_seq_known(c->seqs, dec_in(c, 1))) {
        dec_err(c, "the trip count and the condition must be tensors");
        return false;
    }
    Body b;
    ValId *v = ir_scratch(c->g, ((size_t)N + 1) * sizeof *v), *hist = NULL;
    int64_t nit = 0;
    for (int j = 0; j < N; j++)
        v[j] = dec_in(c, 2 + j);
    if (!body_init(&b, c, sub, nformal) || !loop_unroll(c, &b, N, K, v, &hist, &nit))
        return false;
    memcpy(c->out, v, (size_t)N * sizeof *v);
    if (K > 0 && nit == 0) {
        dec_err(c, "unsupported: Loop with scan outputs that runs no iteration");
        return false;
    }
    ValId *col = ir_scratch(c->g, ((size_t)nit + 1) * sizeof *col);
    for (int k = 0; k < K; k++) {
        for (int64_t i = 0; i < nit; i++)
            col[i] = hist[i * K + k];
        if ((c->out[N + k] = stack(c, col, nit, 0)) == IR_NONE)
            return false;
    }
    return true;
}

/* ---- Scan ---- */

/* Shape of a Scan: N states, M scan inputs, K scan outputs, over L steps. */
typedef struct {
    int N, M, K;
    int64_t L;
    int64_t *in_axes, *in_dirs;           /* M each (axes normalised) */
    int64_t *out_axes, *out_dirs;         /* K each (axes as given) */
} ScanSpec;

/* Unroll: states[N] in/out, xs[M] scanned inputs, outs[K] stacked scan outputs. */
static bool scan_unroll(DecCtx *c, Body *b, const ScanSpec *sp, ValId *states,
                        const ValId *xs, ValId *outs)
{
    int N = sp->N, M = sp->M, K = sp->K;
    int64_t L = sp->L;
    ValId *args = ir_scratch(c->g, ((size_t)(N + M) + 1) * sizeof *args);
    ValId *res = ir_scratch(c->g, ((size_t)(N + K) + 1) * sizeof *res);
    ValId *hist = ir_scratch(c->g, ((size_t)(K * L) + 1) * sizeof *hist);
    for (int64_t t = 0; t < L; t++) {
        memcpy(args, states, (size_t)N * sizeof *args);
        for (int j = 0; j < M; j++)
            args[N + j] = take(c, xs[j], (int)sp->in_axes[j], sp->in_dirs[j] ? L - 1 - t : t);
        if (ir_failed(c->g) || !body_call(b, args, res))
            return false;
        memcpy(states, res, (size_t)N * sizeof *res);
        for (int k = 0; k < K; k++)
            hist[k * L + (sp->out_dirs[k] ? L - 1 - t : t)] = res[N + k];
    }
    for (int k = 0; k < K; k++)
        if ((outs[k] = stack(c, hist + k * L, L, sp->out_axes[k])) == IR_NONE)
            return false;
    return true;
}

/* Ints attribute name of n entries into v (absent: zeros). */
static bool scan_ints(DecCtx *c, const char *name, int n, int64_t **v)
{
    const int64_t *a;
    int cnt = dec_aints(c, name, &a);
    *v = ir_scratch(c->g, ((size_t)n + 1) * sizeof **v);
    if (cnt < 0)
        return true;
    if (cnt != n) {
        dec_err(c, "attribute '%s' has %d entries, %d expected", name, cnt, n);
        return false;
    }
    memcpy(*v, a, (size_t)n * sizeof **v);
    return true;
}

/* Sequence length: the scanned axis of every scan input (normalising the axes). */
static bool scan_length(DecCtx *c, ScanSpec *sp, const ValId *xs)
{
    for (int j = 0; j < sp->M; j++) {
        const IrType *t = dec_ty(c, xs[j]);
        int ax;
        if (t->rank < 1) {
            dec_err(c, "scan input %d is a scalar: there is no axis to scan", j);
            return false;
        }
        if (!dec_axis(c, sp->in_axes[j], t->rank, &ax))
            return false;
        sp->in_axes[j] = ax;
        if (j == 0)
            sp->L = t->dims[ax];
        if (t->dims[ax] != sp->L) {
            dec_err(c, "scan input %d has %lld steps, scan input 0 has %lld", j,
                    (long long)t->dims[ax], (long long)sp->L);
            return false;
        }
    }
    if (sp->L < 1 || sp->L > CTL_MAX_ITERS) {
        dec_err(c, "unsupported: Scan over %lld steps (1 to %d)", (long long)sp->L,
                CTL_MAX_ITERS);
        return false;
    }
    return true;
}

/* Opset 8 sequence_lens: absent, or a constant holding the full length L per batch
 * entry (shorter sequences are not supported). */
static bool scan_check_lens(DecCtx *c, ValId lens, int64_t B, int64_t L)
{
    if (lens == IR_NONE)
        return true;
    if (!ir_is_const(c->g, lens)) {
        dec_dynamic_err(c, lens, "sequence_lens");
        return false;
    }
    const IrType *t = dec_ty(c, lens);
    if (!ir_dtype_is_int(t->dtype) || dec_numel(t) != B) {
        dec_err(c, "sequence_lens must hold %lld integers", (long long)B);
        return false;
    }
    for (int64_t i = 0; i < B; i++) {
        int64_t l = dec_load_int(t->dtype, ir_val(c->g, lens)->data, i);
        if (l != L) {
            dec_err(c, "unsupported: sequence_lens %lld differs from the sequence length "
                    "%lld", (long long)l, (long long)L);
            return false;
        }
    }
    return true;
}

/* Opset 8: a batch axis 0 in front of everything; each batch entry scans on its own
 * (sequence_lens, when given, must be the full length). */
static bool scan_v8(DecCtx *c, Body *b, ScanSpec *sp, const ValId *ins)
{
    int N = sp->N, M = sp->M, K = sp->K;
    ValId lens = dec_in(c, 0);
    const ValId *st0 = ins, *xs0 = ins + N;
    int64_t B = dec_ty(c, xs0[0])->rank > 0 ? dec_ty(c, xs0[0])->dims[0] : 0;
    if (B < 1 || B > CTL_MAX_ITERS) {
        dec_err(c, "unsupported: Scan (opset 8) over a batch of %lld", (long long)B);
        return false;
    }
    for (int j = 0; j < M; j++)
        sp->in_axes[j] = 0;
    ValId *xs = ir_scratch(c->g, ((size_t)M + 1) * sizeof *xs);
    ValId *st = ir_scratch(c->g, ((size_t)N + 1) * sizeof *st);
    ValId *all = ir_scratch(c->g, ((size_t)((N + K) * B) + 1) * sizeof *all);
    for (int64_t bi = 0; bi < B; bi++) {
        for (int j = 0; j < M; j++)
            xs[j] = take(c, xs0[j], 0, bi);
        for (int j = 0; j < N; j++)
            st[j] = take(c, st0[j], 0, bi);
        if (ir_failed(c->g) ||
            (bi == 0 && (!scan_length(c, sp, xs) || !scan_check_lens(c, lens, B, sp->L))))
            return false;
        if (!scan_unroll(c, b, sp, st, xs, all + (N + K) * bi + N))
            return false;
        memcpy(all + (N + K) * bi, st, (size_t)N * sizeof *st);
    }
    ValId *col = ir_scratch(c->g, ((size_t)B + 1) * sizeof *col);
    for (int k = 0; k < N + K; k++) {
        for (int64_t bi = 0; bi < B; bi++)
            col[bi] = all[(N + K) * bi + k];
        if ((c->out[k] = stack(c, col, B, 0)) == IR_NONE)
            return false;
    }
    return true;
}

/* Scan: N state inputs then M scanned inputs (opset 8: after sequence_lens, with a
 * batch axis); outputs N final states then K stacked scan outputs. */
bool dec_scan(DecCtx *c)
{
    IrGraph *sub = body_attr(c, "body");
    int64_t M = dec_ai(c, "num_scan_inputs", -1);
    if (!sub)
        return false;
    bool v8 = c->opset < 9;
    int first = v8 ? 1 : 0, ncap = count_captured(c, sub);
    int nformal = (int)sub->ninputs - ncap;
    ScanSpec sp = {.N = nformal - (int)M, .M = (int)M};
    sp.K = (int)sub->noutputs - sp.N;
    if (M < 1 || M > nformal || c->n->nin - ncap - first != nformal || sp.K < 0 ||
        c->n->nout != sp.N + sp.K) {
        dec_err(c, "the body (%d inputs, %u outputs) does not match the node (%d inputs, "
                "%d outputs, num_scan_inputs %lld)", nformal, sub->noutputs,
                c->n->nin - ncap - first, c->n->nout, (long long)M);
        return false;
    }
    const ValId *ins = c->n->in + first;
    for (int j = 0; j < nformal; j++) {
        if (ins[j] == IR_NONE || dec_seq_known(c->seqs, ins[j])) {
            dec_err(c, "Scan input %d must be a tensor", first + j);
            return false;
        }
    }
    Body b;
    if (!scan_ints(c, v8 ? "directions" : "scan_input_directions", sp.M, &sp.in_dirs) ||
        !scan_ints(c, "scan_input_axes", sp.M, &sp.in_axes) ||
        !scan_ints(c, "scan_output_directions", sp.K, &sp.out_dirs) ||
        !scan_ints(c, "scan_output_axes", sp.K, &sp.out_axes) ||
        !body_init(&b, c, sub, nformal))
        return false;
    if (v8)
        return scan_v8(c, &b, &sp, ins);
    ValId *st = ir_scratch(c->g, ((size_t)sp.N + 1) * sizeof *st);
    memcpy(st, ins, (size_t)sp.N * sizeof *st);
    if (!scan_length(c, &sp, ins + sp.N) || !scan_unroll(c, &b, &sp, st, ins + sp.N,
                                                         c->out + sp.N))
        return false;
    memcpy(c->out, st, (size_t)sp.N * sizeof *st);
    return true;
}

/* ---- SequenceMap ---- */

/* SequenceMap: the body runs once per element of the first input; the other inputs
 * are sequences of the same length (element i is passed) or tensors (passed whole).
 * Each body output collects into an output sequence. */
bool dec_sequence_map(DecCtx *c)
{
    IrGraph *sub = body_attr(c, "body");
    if (!sub)
        return false;
    int ncap = count_captured(c, sub), nf = (int)sub->ninputs - ncap;
    int K = (int)sub->noutputs;
    const ValId **items = ir_scratch(c->g, ((size_t)nf + 1) * sizeof *items);
    uint32_t L = 0, n;
    if (nf < 1 || c->n->nin - ncap != nf || c->n->nout != K) {
        dec_err(c, "the body (%d inputs, %d outputs) does not match the node", nf, K);
        return false;
    }
    for (int j = 0; j < nf; j++) {
        items[j] = NULL;
        if (dec_seq_items(c->seqs, dec_in(c, j), &items[j], &n) && j == 0)
            L = n;
        if ((j == 0 && !items[0]) || (items[j] && n != L)) {
            dec_err(c, j == 0 ? "input 0 must be a sequence"
                              : "input %d is a sequence of another length than input 0", j);
            return false;
        }
    }
    Body b;
    ValId *args = ir_scratch(c->g, ((size_t)nf + 1) * sizeof *args);
    ValId *hist = ir_scratch(c->g, ((size_t)K * L + 1) * sizeof *hist);
    if (L > CTL_MAX_ITERS) {
        dec_err(c, "unsupported: SequenceMap over more than %d elements", CTL_MAX_ITERS);
        return false;
    }
    if (!body_init(&b, c, sub, nf))
        return false;
    for (uint32_t i = 0; i < L; i++) {
        for (int j = 0; j < nf; j++)
            args[j] = items[j] ? items[j][i] : dec_in(c, j);
        if (!body_call(&b, args, hist + (size_t)K * i))
            return false;
    }
    ValId *col = ir_scratch(c->g, ((size_t)L + 1) * sizeof *col);
    for (int k = 0; k < K; k++) {
        for (uint32_t i = 0; i < L; i++)
            col[i] = hist[(size_t)K * i + k];
        IrDType dt = ir_vtype(sub, sub->outputs[k])->dtype;
        if ((c->out[k] = dec_seq_make(c, col, L, dt)) == IR_NONE)
            return false;
    }
    return true;
}
