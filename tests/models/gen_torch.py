#!/usr/bin/env python3
"""Small PyTorch models as other exporters and opsets write them, with goldens.

What the shared zoo does not cover: the TorchScript exporter at opset 9 (Upsample,
reflect Pad, InstanceNormalization) and 14 (ONNX LSTM and GRU nodes), the dynamo
exporter on 1-d audio layers (Conv1d, GroupNorm, ConvTranspose1d, MultiheadAttention,
Einsum) and on a Swin transformer (window shifts by Roll, window partitions by
Reshape/Transpose), and models exported with dynamic axes (dim_param names), which
tests/models-dyn checks with one bounded bundle on data sets of two shapes.

    python3 tests/models/gen_torch.py [OUTDIR]   (default: the tree's tests/)

writes OUTDIR/models/NAME and OUTDIR/models-dyn/NAME (model.onnx, test_data_set_K with
goldens from onnxruntime's CPU provider; the dynamic ones also a flags file of spyrec
bounds). Needs torch, timm, transformers, onnx, onnxruntime; weights are random
(seeded), batch norms' statistics randomised so that folding them matters.
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import numpy_helper

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
G = torch.Generator().manual_seed(1234)


def img(*shape):
    return torch.randn(*shape, generator=G)


def tok(b, t, v=1000):
    return torch.randint(0, v, (b, t), generator=G)


def randomize_bn(m):
    for mod in m.modules():
        if isinstance(mod, (nn.BatchNorm1d, nn.BatchNorm2d)):
            with torch.no_grad():
                mod.running_mean.uniform_(-0.2, 0.2, generator=G)
                mod.running_var.uniform_(0.5, 1.5, generator=G)
                mod.weight.uniform_(0.5, 1.5, generator=G)
                mod.bias.uniform_(-0.2, 0.2, generator=G)
    return m


def strip_metadata(path):
    """Drop the exporter's per-node metadata (stack traces name the exporting machine)."""
    m = onnx.load(path)
    for g in [m.graph] + list(m.functions):
        for n in g.node:
            del n.metadata_props[:]
    onnx.save_model(m, path, save_as_external_data=False)


def goldens(d, sets):
    """test_data_set_K of folder d: inputs sets[K], outputs computed by onnxruntime."""
    s = ort.InferenceSession(os.path.join(d, "model.onnx"), providers=["CPUExecutionProvider"])
    for k, inputs in enumerate(sets):
        sd = os.path.join(d, "test_data_set_%d" % k)
        os.makedirs(sd, exist_ok=True)
        feeds = {}
        for i, (x, meta) in enumerate(zip(inputs, s.get_inputs())):
            feeds[meta.name] = x.numpy()
            with open(os.path.join(sd, "input_%d.pb" % i), "wb") as f:
                f.write(numpy_helper.from_array(x.numpy(), meta.name).SerializeToString())
        for i, (o, meta) in enumerate(zip(s.run(None, feeds), s.get_outputs())):
            with open(os.path.join(sd, "output_%d.pb" % i), "wb") as f:
                f.write(numpy_helper.from_array(o, meta.name).SerializeToString())


def export(sub, name, model, sets, ins, outs, opset=18, dynamo=True, axes=None, flags=None,
           dyn=None):
    d = os.path.join(OUT, sub, name)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.onnx")
    model.eval()
    with torch.no_grad():
        if dynamo:
            torch.onnx.export(model, tuple(sets[0]), path, input_names=ins, output_names=outs,
                              opset_version=opset, dynamo=True, external_data=False,
                              dynamic_shapes=dyn)
        else:
            torch.onnx.export(model, tuple(sets[0]), path, input_names=ins, output_names=outs,
                              opset_version=opset, dynamo=False, dynamic_axes=axes,
                              do_constant_folding=True)
    strip_metadata(path)
    goldens(d, sets)
    if flags:
        with open(os.path.join(d, "flags"), "w") as f:
            f.write(flags + "\n")
    print("wrote", d)


class SmallCNN(nn.Module):
    """Strided conv, batch norms, nearest upsampling, instance norm, reflect pad, mean."""
    def __init__(s):
        super().__init__()
        s.a = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.ReLU(),
                            nn.Conv2d(16, 32, 3, 1, 1), nn.BatchNorm2d(32), nn.ReLU())
        s.up = nn.Upsample(scale_factor=2, mode="nearest")
        s.b = nn.Sequential(nn.Conv2d(32, 8, 3, 1, 1), nn.InstanceNorm2d(8, affine=True),
                            nn.LeakyReLU(0.1))
        s.fc = nn.Linear(8, 5)

    def forward(s, x):
        y = s.b(s.up(s.a(x)))
        y = F.pad(y, (1, 1, 1, 1), mode="reflect")
        return s.fc(y.mean((2, 3)))


class Recurrent(nn.Module):
    """Embedding, a two-layer LSTM (bidirectional) or GRU, the last step's features."""
    def __init__(s, kind):
        super().__init__()
        s.emb = nn.Embedding(100, 16)
        lstm = kind == "lstm"
        s.rnn = (nn.LSTM if lstm else nn.GRU)(16, 24, num_layers=2, batch_first=True,
                                              bidirectional=lstm)
        s.fc = nn.Linear(48 if lstm else 24, 7)

    def forward(s, ids):
        y, _ = s.rnn(s.emb(ids))
        return s.fc(y[:, -1])


class Audio1d(nn.Module):
    """A wave through strided and dilated Conv1d, GroupNorm, ConvTranspose1d, attention."""
    def __init__(s):
        super().__init__()
        s.c = nn.Sequential(nn.Conv1d(1, 16, 10, 5), nn.GroupNorm(4, 16), nn.GELU(),
                            nn.Conv1d(16, 32, 3, 2, dilation=2), nn.GELU())
        s.t = nn.ConvTranspose1d(32, 8, 4, 2, 1)
        s.att = nn.MultiheadAttention(8, 2, batch_first=True)

    def forward(s, w):
        y = s.t(s.c(w)).transpose(1, 2)
        o, _ = s.att(y, y, y)
        return torch.einsum("btc,btc->bt", o, y)


class Hidden(nn.Module):
    """A transformers model's last hidden state."""
    def __init__(s, m):
        super().__init__()
        s.m = m

    def forward(s, input_ids, attention_mask):
        return s.m(input_ids, attention_mask).last_hidden_state


class Logits(nn.Module):
    """A transformers causal language model's logits."""
    def __init__(s, m):
        super().__init__()
        s.m = m

    def forward(s, input_ids):
        return s.m(input_ids).logits


def swin():
    import timm
    torch.manual_seed(0)
    return timm.models.swin_transformer.SwinTransformer(
        img_size=64, patch_size=4, window_size=4, embed_dim=32, depths=(1, 1), num_heads=(2, 4),
        num_classes=10)


def bert():
    import transformers as T
    torch.manual_seed(7)
    c = T.BertConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=128, max_position_embeddings=64)
    c._attn_implementation = "eager"
    return Hidden(T.BertModel(c))


def llama():
    import transformers as T
    torch.manual_seed(7)
    c = T.LlamaConfig(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    c._attn_implementation = "eager"
    c.use_cache = False
    return Logits(T.LlamaForCausalLM(c))


def main():
    torch.manual_seed(0)
    export("models", "cnn_opset9", randomize_bn(SmallCNN()), [[img(2, 3, 32, 32)]], ["x"], ["y"],
           opset=9, dynamo=False)
    export("models", "lstm_bi", Recurrent("lstm"), [[tok(2, 9, 100)]], ["ids"], ["y"], opset=14,
           dynamo=False)
    export("models", "gru", Recurrent("gru"), [[tok(3, 7, 100)]], ["ids"], ["y"], opset=14,
           dynamo=False)
    export("models", "audio1d", Audio1d(), [[img(2, 1, 400)]], ["w"], ["y"])
    export("models", "swin_mini", swin(), [[img(1, 3, 64, 64)]], ["x"], ["logits"])
    ones = lambda b, t: torch.ones(b, t, dtype=torch.int64)
    ax = {"input_ids": {0: "batch_size", 1: "sequence_length"},
          "attention_mask": {0: "batch_size", 1: "sequence_length"},
          "hidden": {0: "batch_size", 1: "sequence_length"}}
    export("models-dyn", "bert_dynaxes", bert(),
           [[tok(2, 12), ones(2, 12)], [tok(3, 20), ones(3, 20)]], ["input_ids", "attention_mask"],
           ["hidden"], opset=14, dynamo=False, axes=ax,
           flags="--dim batch_size=4 --dim sequence_length=2..32")
    export("models-dyn", "cnn_opset11_dynb", randomize_bn(SmallCNN()),
           [[img(2, 3, 32, 32)], [img(5, 3, 32, 32)]], ["x"], ["y"], opset=11, dynamo=False,
           axes={"x": {0: "N"}, "y": {0: "N"}}, flags="--dim N=8")
    # the dynamo exporter with dynamic_shapes (torch.export Dims: symbolic sizes computed
    # by Shape / Gather / Concat chains and SymInt arithmetic in the graph)
    B, S = torch.export.Dim("batch", min=1, max=8), torch.export.Dim("seq", min=2, max=63)
    export("models-dyn", "bert_dynamo", bert(),
           [[tok(2, 9), ones(2, 9)], [tok(4, 30), ones(4, 30)], [tok(1, 63), ones(1, 63)]],
           ["input_ids", "attention_mask"], ["hidden"],
           dyn={"input_ids": {0: B, 1: S}, "attention_mask": {0: B, 1: S}},
           flags="--dim batch=8 --dim seq=2..63")
    export("models-dyn", "llama_dynamo", llama(), [[tok(2, 6)], [tok(3, 21)], [tok(1, 2)]],
           ["input_ids"], ["logits"], dyn={"input_ids": {0: B, 1: S}},
           flags="--dim batch=8 --dim seq=2..63")


if __name__ == "__main__":
    main()
