/* fe_onnx_func.c: inlining of model-local ONNX functions (ModelProto.functions).
 *
 * A call node is replaced by the function body, converted in a closed frame on the
 * same IrGraph: formal inputs are bound to the call's actual values (IR_NONE for
 * omitted optional ones), attributes referenced with ref_attr_name take the call's
 * value or the function's default, internal values are named "<call node>/<name>",
 * and the values produced under a formal output's name take the call's output name.
 * An output that is a formal input or listed twice goes through an Identity node.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_onnx.h"

#define FN_ATTRIBUTE_PROTO 11           /* FunctionProto.attribute_proto field number */
#define FE_MAX_INLINED_NODES (1u << 20)  /* nodes + edges + attributes that inlining may
                                           * create: functions calling functions grow
                                           * exponentially */

/* protobuf-c keeps an unknown length-delimited field with its length varint in front:
 * the size of that prefix when it matches the rest of the data, else 0. */
static size_t length_prefix(const uint8_t *d, size_t len)
{
    uint64_t v = 0;
    for (size_t i = 0; i < len && i < 10; i++) {
        v |= (uint64_t)(d[i] & 0x7f) << (7 * i);
        if (!(d[i] & 0x80))
            return v == len - i - 1 ? i + 1 : 0;
    }
    return 0;
}

/* Defaults from unknown fields (an onnx.proto older than the model's writer). */
static void defaults_from_unknown(FeOnnx *cx, const Onnx__FunctionProto *fn, FeFnDefaults *d)
{
    const ProtobufCMessage *m = &fn->base;
    uint32_t n = 0;
    for (unsigned i = 0; i < m->n_unknown_fields; i++)
        n += m->unknown_fields[i].tag == FN_ATTRIBUTE_PROTO &&
             m->unknown_fields[i].wire_type == PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED;
    if (!n)
        return;
    d->a = calloc(n, sizeof *d->a);
    if (!d->a)
        longjmp(cx->oom, 1);
    d->owned = true;
    FePbLimits lim = {cx->max_nesting, (size_t)64 << 20};
    char err[256];
    for (unsigned i = 0; i < m->n_unknown_fields; i++) {
        const ProtobufCMessageUnknownField *u = &m->unknown_fields[i];
        if (u->tag != FN_ATTRIBUTE_PROTO || u->wire_type != PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED)
            continue;
        size_t hl = length_prefix(u->data, u->len);
        Onnx__AttributeProto *a = NULL;
        bool oom = false;
        ProtobufCAllocator pa = fe_onnx_pb_allocator(&oom);
        if (hl && fe_pb_check(u->data + hl, u->len - hl, &onnx__attribute_proto__descriptor,
                              &lim, err, sizeof err))
            a = onnx__attribute_proto__unpack(&pa, u->len - hl, u->data + hl);
        if (!a && oom)
            longjmp(cx->oom, 1);           /* the import's out-of-memory path */
        if (a && a->name)
            d->a[d->n++] = a;
        else {
            ir_diag_error(cx->diag, "function '%s': a default attribute is malformed",
                          fn->name ? fn->name : "");
            if (a)
                onnx__attribute_proto__free_unpacked(a, NULL);
        }
    }
}

/* The default attributes of function number i, read once. The field is found through
 * the descriptor so the code works whether or not the generated schema knows it. */
static const FeFnDefaults *fn_defaults(FeOnnx *cx, int i)
{
    FeFnDefaults *d = &cx->fdefaults[i];
    if (d->done)
        return d;
    d->done = true;
    const Onnx__FunctionProto *fn = cx->model->functions[i];
    d->opset = fe_onnx_find_opset(fn->opset_import, fn->n_opset_import, "");
    d->cost = 1 + fn->n_input + fn->n_output;
    for (size_t k = 0; k < fn->n_node; k++)
        d->cost += 1 + fn->node[k]->n_input + fn->node[k]->n_output + fn->node[k]->n_attribute;
    const ProtobufCFieldDescriptor *f =
        protobuf_c_message_descriptor_get_field(&onnx__function_proto__descriptor,
                                                FN_ATTRIBUTE_PROTO);
    if (f && f->type == PROTOBUF_C_TYPE_MESSAGE && f->label == PROTOBUF_C_LABEL_REPEATED &&
        f->descriptor == &onnx__attribute_proto__descriptor) {
        d->n = (uint32_t) * (const size_t *)((const char *)fn + f->quantifier_offset);
        d->a = *(Onnx__AttributeProto **const *)((const char *)fn + f->offset);
        return d;
    }
    defaults_from_unknown(cx, fn, d);
    return d;
}

/* Free what defaults_from_unknown unpacked. */
void fe_free_fn_defaults(FeOnnx *cx)
{
    if (!cx->fdefaults)
        return;
    for (size_t i = 0; i < cx->model->n_functions; i++) {
        FeFnDefaults *d = &cx->fdefaults[i];
        if (!d->owned)
            continue;
        for (uint32_t j = 0; j < d->n; j++)
            onnx__attribute_proto__free_unpacked(d->a[j], NULL);
        free(d->a);
    }
    free(cx->fdefaults);
    cx->fdefaults = NULL;
}

/* Bind the call's outputs in the caller's scope to what the body produced. */
static void bind_outputs(FeScope *s, FeScope *f, const Onnx__NodeProto *n, const FeCall *c,
                         const IrOrigin *o)
{
    const Onnx__FunctionProto *fn = c->fn;
    for (size_t j = 0; j < n->n_output; j++) {
        const char *out = c->outname[j];
        ValId v;
        if (!out || !fe_check_new(s, out, o))
            continue;
        if (!fe_lookup(f, fn->output[j], &v)) {
            ir_error(s->g, o, "function '%s' never produces its output '%s'", fn->name,
                     fn->output[j]);
            fe_define(s, out, IR_NONE);
        } else if (v == IR_NONE || v == c->bound[j]) {
            fe_define_call_output(s, out, v);
        } else {
            const char *outs[1] = {out};
            fe_emit_foreign(s, "Identity", "", s->opset, &v, 1, outs, 1, NULL, 0,
                            o);
        }
    }
}

/* Check a call against the function's signature; false with an error reported. */
static bool check_call(FeScope *s, const Onnx__NodeProto *n, const Onnx__FunctionProto *fn,
                       uint64_t cost, const IrOrigin *o)
{
    FeOnnx *cx = s->cx;
    if (cx->call_depth >= cx->max_nesting) {
        ir_error(s->g, o, "function calls nested more than %d deep (a recursive function?)",
                 cx->max_nesting);
        return false;
    }
    bool was_within = cx->inlined <= FE_MAX_INLINED_NODES;
    cx->inlined += cost;
    if (cx->inlined > FE_MAX_INLINED_NODES) {
        if (was_within)                    /* report it once */
            ir_error(s->g, o, "inlining functions would create a graph larger than %u "
                     "nodes, values and attributes", FE_MAX_INLINED_NODES);
        return false;
    }
    if (n->n_input > fn->n_input || n->n_output > fn->n_output) {
        ir_error(s->g, o, "function '%s' takes %zu inputs and %zu outputs, the call has %zu "
                 "and %zu", fn->name, fn->n_input, fn->n_output, n->n_input, n->n_output);
        return false;
    }
    return true;
}

/* Set up the closed frame f for call c and bind the formal inputs. */
static void open_frame(FeScope *s, FeScope *f, FeCall *c, const ValId *actual, size_t nact,
                       int64_t opset)
{
    const Onnx__FunctionProto *fn = c->fn;
    fe_scope_init(f, s->cx, s->g, NULL, s->depth);
    f->reserved = s->reserved;
    f->fresh = s->fresh;
    f->later = ir_alloc(s->g, sizeof *f->later);
    fe_map_init(f->later, s->g);
    for (size_t i = 0; i < fn->n_node; i++)
        for (size_t j = 0; j < fn->node[i]->n_output; j++)
            fe_map_put(f->later, fn->node[i]->output[j], 0);
    f->call = c;
    f->frame = c;
    if (opset > 0)
        f->opset = opset;
    for (size_t i = 0; i < fn->n_input; i++)
        fe_map_put(&f->vals, fn->input[i], i < nact ? actual[i] : IR_NONE);
}

/* Inline function number fi at call node n. */
void fe_inline_call(FeScope *s, const Onnx__NodeProto *n, int fi, const IrOrigin *o)
{
    FeOnnx *cx = s->cx;
    IrGraph *g = s->g;
    const Onnx__FunctionProto *fn = cx->model->functions[fi];
    FeCall c = {.fn = fn};
    const FeFnDefaults *d = fn_defaults(cx, fi);
    bool ok = check_call(s, n, fn, d->cost, o);
    ValId *actual = ir_alloc(g, (n->n_input + 1) * sizeof *actual);
    for (size_t i = 0; ok && i < n->n_input; i++)
        ok &= fe_node_input(s, n->input[i], o, &actual[i]);
    int k = ok ? fe_resolve_attrs(s, n, o, &c.attr_names, &c.attrs) : -1;
    if (k < 0) {
        for (size_t j = 0; j < n->n_output; j++)
            if (n->output[j][0] && fe_check_new(s, n->output[j], o))
                fe_define(s, n->output[j], IR_NONE);
        return;
    }
    c.nattrs = (uint32_t)k;
    c.defaults = d->a;
    c.ndefaults = d->n;
    char buf[600];
    snprintf(buf, sizeof buf, "%.580s/", o->name);
    c.prefix = ir_strdup(g, buf);
    c.outname = ir_alloc(g, (fn->n_output + 1) * sizeof *c.outname);
    c.bound = ir_alloc(g, (fn->n_output + 1) * sizeof *c.bound);
    fe_map_init(&c.outidx, g);
    for (size_t j = fn->n_output; j-- > 0;) {
        c.outname[j] = j < n->n_output && n->output[j][0] ? n->output[j] : NULL;
        c.bound[j] = IR_NONE;
        if (fn->n_output > 8)
            fe_map_put(&c.outidx, fn->output[j], (uint32_t)j);
    }
    FeScope f;
    open_frame(s, &f, &c, actual, n->n_input, d->opset);
    cx->call_depth++;
    for (size_t i = 0; i < fn->n_node; i++)
        fe_node(&f, fn->node[i], i);
    cx->call_depth--;
    bind_outputs(s, &f, n, &c, o);
}
