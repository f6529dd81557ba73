#!/usr/bin/env python3
"""Export a Llama-3-8B-shaped decode step and strip it to a zoo skeleton.

Makes the skeleton format of ../shared/models-large (see its README.md and zoo_regen.py) for a
model too large to export on a small machine: transformers LlamaForCausalLM with the
Llama-3-8B configuration (hidden 4096, 32 layers, 32 heads, 8 KV heads, intermediate 14336,
vocabulary 128256, untied LM head), float16 weights, eager attention, one decode step of one
token after PAST cached positions, exported with torch.onnx.export(dynamo=True, opset 18).
Like llama_1b_decode the graph takes input_ids [1,1] and past_k_L, past_v_L [1,8,PAST,128] and
returns logits [1,128256] and new_k_L, new_v_L [1,8,1,128] (the new position's keys/values).

usage: zoo_llama8b.py OUT_SKELETON_DIR [--past N] [--layers N]
Needs torch, transformers, onnx, numpy (a machine with >= 64 GB of memory; a GPU speeds up the
random initialisation). Refill and goldens then come from zoo_regen.py SKEL OUT --golden.
"""
import json, os, shutil, sys, tempfile, time
import numpy as np
import onnx
import torch

KV_HEADS, HEAD_DIM, VOCAB = 8, 128, 128256
VERBATIM_BELOW = 4096                 # elements; larger float tensors are emptied


class DecodeStep(torch.nn.Module):
    """One decode step over an explicit KV cache: returns logits and the new position's K/V."""

    def __init__(self, m, layers):
        super().__init__()
        self.m, self.layers = m, layers

    def forward(self, input_ids, *past):
        from transformers import DynamicCache
        cache = DynamicCache()
        for L in range(self.layers):
            cache.update(past[2 * L], past[2 * L + 1], L)
        out = self.m(input_ids=input_ids, past_key_values=cache, use_cache=True)
        new = []
        for L in range(self.layers):
            layer = out.past_key_values.layers[L]
            new += [layer.keys[:, :, -1:], layer.values[:, :, -1:]]
        return (out.logits[:, -1],) + tuple(new)


def build_model(layers):
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=4096, intermediate_size=14336,
                      num_hidden_layers=layers, num_attention_heads=32, num_key_value_heads=KV_HEADS,
                      max_position_embeddings=8192, rms_norm_eps=1e-5, tie_word_embeddings=False,
                      rope_theta=500000.0, attn_implementation="eager")
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    with torch.device(dev):                                   # HF init (normal, std 0.02) on the GPU
        m = LlamaForCausalLM._from_config(cfg, torch_dtype=torch.float16)
    return m.eval().cpu()


def export(out_onnx, layers, past):
    model = DecodeStep(build_model(layers), layers)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, VOCAB, (1, 1), generator=g)
    kv = [torch.randn(1, KV_HEADS, past, HEAD_DIM, generator=g).half() for _ in range(2 * layers)]
    names = ["input_ids"] + [f"past_{kv}_{L}" for L in range(layers) for kv in "kv"]
    outs = ["logits"] + [f"new_{kv}_{L}" for L in range(layers) for kv in "kv"]
    t0 = time.time()
    with torch.no_grad():
        torch.onnx.export(model, (ids, *kv), out_onnx, input_names=names, output_names=outs,
                          opset_version=18, dynamo=True, external_data=True)
    return names, outs, time.time() - t0


def external_array(init, base):
    """The values of an externally stored initializer, as a numpy array (memory-mapped)."""
    info = {e.key: e.value for e in init.external_data}
    dtype = onnx.helper.tensor_dtype_to_np_dtype(init.data_type)
    count = int(np.prod(init.dims)) if init.dims else 1
    mm = np.memmap(os.path.join(base, info["location"]), dtype=np.uint8, mode="r")
    off = int(info.get("offset", 0))
    return np.frombuffer(mm, dtype=dtype, count=count, offset=off).reshape(tuple(init.dims))


def mean_std(a):
    t = torch.from_numpy(np.ascontiguousarray(a))
    t = t.cuda() if torch.cuda.is_available() else t
    t = t.double()
    return float(t.mean()), float(t.std(unbiased=False))


def strip_metadata(model):
    """Drop the exporter's per-node stack traces (they name files of the exporting machine)."""
    g = model.graph
    for n in g.node:
        del n.metadata_props[:]
    for v in list(g.input) + list(g.output) + list(g.value_info):
        del v.metadata_props[:]
    del g.metadata_props[:]


def strip(src_onnx, skel_dir):
    """Empty large float initializers; return the skeleton.json weight list and byte counts."""
    model = onnx.load(src_onnx, load_external_data=False)
    base = os.path.dirname(src_onnx)
    weights, wbytes, vbytes = [], 0, 0
    for init in model.graph.initializer:
        ext = init.data_location == onnx.TensorProto.EXTERNAL
        a = external_array(init, base) if ext else onnx.numpy_helper.to_array(init)
        is_float = a.dtype.kind == "f"
        if is_float and a.size >= VERBATIM_BELOW:
            mean, std = mean_std(a)
            weights.append({"name": init.name, "dtype": str(a.dtype), "dims": list(init.dims),
                            "mean": mean, "std": std})
            wbytes += a.nbytes
            del init.external_data[:]
            init.data_location = onnx.TensorProto.DEFAULT
            init.ClearField("raw_data")
        else:
            init.CopyFrom(onnx.numpy_helper.from_array(np.array(a), init.name))
            vbytes += a.nbytes
    strip_metadata(model)
    onnx.save_model(model, os.path.join(skel_dir, "model.skel.onnx"))
    return model, weights, wbytes, vbytes


def main(skel_dir, layers, past):
    os.makedirs(skel_dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="llama8b-")
    names, outs, secs = export(os.path.join(work, "model.onnx"), layers, past)
    print(f"exported in {secs:.0f} s", flush=True)
    model, weights, wbytes, vbytes = strip(os.path.join(work, "model.onnx"), skel_dir)
    shutil.rmtree(work)                                   # the 16 GB export is no longer needed
    inputs = [{"name": "input_ids", "dtype": "int64", "shape": [1, 1], "kind": "tokens", "high": VOCAB}]
    inputs += [{"name": n, "dtype": "float16", "shape": [1, KV_HEADS, past, HEAD_DIM], "kind": "normal"}
               for n in names[1:]]
    meta = {"name": "llama_8b_decode", "inputs": inputs, "outputs": outs, "weights": weights,
            "weight_bytes": wbytes, "verbatim_bytes": vbytes,
            "opset": [[o.domain, o.version] for o in model.opset_import],
            "ops": sorted({n.op_type for n in model.graph.node}), "nodes": len(model.graph.node),
            "export_seconds": round(secs, 1),
            "exporter": f"torch {torch.__version__} torch.onnx.export(dynamo=True, opset 18)"}
    json.dump(meta, open(os.path.join(skel_dir, "skeleton.json"), "w"), indent=1)
    print(f"skeleton: {len(weights)} weights, {wbytes / 2**30:.2f} GiB emptied, {vbytes} verbatim bytes, "
          f"{meta['nodes']} nodes", flush=True)


if __name__ == "__main__":
    a = sys.argv[1:]
    opt = lambda k, d: int(a[a.index(k) + 1]) if k in a else d
    pos = [x for i, x in enumerate(a) if not x.startswith("--") and (i == 0 or not a[i - 1].startswith("--"))]
    if len(pos) != 1:
        sys.exit(__doc__)
    main(pos[0], opt("--layers", 32), opt("--past", 63))
