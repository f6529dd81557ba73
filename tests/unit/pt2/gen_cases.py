"""Generate the ATen test archives of tests/unit/test_pt2.c (needs PyTorch).

    python3 tests/unit/pt2/gen_cases.py OUTDIR

For each category below, writes OUTDIR/NAME.pt2 (torch.export.save of a small module
whose outputs are one ATen op each), OUTDIR/NAME_core.pt2 (the same program after
run_decompositions(), i.e. core ATen ops), OUTDIR/NAME.in.bin (the inputs, raw
little-endian, concatenated in order), OUTDIR/NAME.out.bin (the eager outputs,
likewise) and OUTDIR/NAME.cases.txt (the case of each output, one per line). The
archives are repacked with deflate and without sample inputs. A case that
torch.export cannot handle is dropped with a message. The committed files were made
with PyTorch 2.11 (CPU).

SWEEP, SWEEP2 and SWEEP3 are single-case categories sw_NAME (ops found missing in
.pt2 model sweeps), each on torch.manual_seed(3); torch.randn(2, 4, 6, 6); a SWEEP2 case
that uses modules (embedding bags, LSTM/GRU, weight-norm parameters) gets a holder with
only those (holder_for). The SWEEP3 files were made with PyTorch 2.15 (CPU).
"""
import os
import sys
import zipfile

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def x_img():
    return torch.randn(2, 4, 8, 8)


def x_seq():
    return torch.randn(2, 5, 16)


IMG = [
    ("conv_pad", lambda m, x: m.c1(x)),
    ("conv_strided", lambda m, x: m.c2(x)),
    ("conv_same", lambda m, x: F.conv2d(x, m.c1.weight, None, 1, "same")),
    ("conv_t", lambda m, x: m.ct(x)),
    ("maxpool_ceil", lambda m, x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True)),
    ("maxpool_dil", lambda m, x: F.max_pool2d(x, 2, 2, 0, dilation=2)),
    ("avgpool_ceil", lambda m, x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False)),
    ("avgpool_div", lambda m, x: F.avg_pool2d(x, 3, 1, 1, divisor_override=4)),
    ("avgpool_pad", lambda m, x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True)),
    ("adapt_3", lambda m, x: F.adaptive_avg_pool2d(x, (3, 5))),
    ("adapt_4", lambda m, x: F.adaptive_avg_pool2d(x, 4)),
    ("adapt_1", lambda m, x: F.adaptive_avg_pool2d(x, 1)),
    ("adapt_max", lambda m, x: F.adaptive_max_pool2d(x, 4)),
    ("batchnorm", lambda m, x: m.bn(x)),
    ("groupnorm", lambda m, x: m.gn(x)),
    ("instnorm", lambda m, x: F.instance_norm(x)),
    ("layernorm2", lambda m, x: F.layer_norm(x, (8, 8))),
    ("up_nearest2", lambda m, x: F.interpolate(x, scale_factor=2, mode="nearest")),
    ("up_nearest_size", lambda m, x: F.interpolate(x, size=(12, 10), mode="nearest")),
    ("up_bilinear", lambda m, x: F.interpolate(x, scale_factor=1.5, mode="bilinear")),
    ("up_bilinear_ac", lambda m, x: F.interpolate(x, size=(5, 7), mode="bilinear", align_corners=True)),
    ("pixel_shuffle", lambda m, x: F.pixel_shuffle(x, 2)),
    ("pixel_unshuffle", lambda m, x: F.pixel_unshuffle(x, 2)),
    ("pad_const", lambda m, x: F.pad(x, (1, 2, 0, 1), value=0.5)),
    ("pad_crop", lambda m, x: F.pad(x, (-1, 2))),
    ("flip", lambda m, x: torch.flip(x, (2, 3))),
    ("roll", lambda m, x: torch.roll(x, (1, -2), (2, 3))),
    ("tril", lambda m, x: torch.tril(x, 1)),
    ("triu", lambda m, x: torch.triu(x, -1)),
    ("prelu", lambda m, x: m.pr(x)),
    ("glu", lambda m, x: F.glu(x, 1)),
    ("softmax1", lambda m, x: F.softmax(x, 1)),
    ("logsoftmax", lambda m, x: F.log_softmax(x, -1)),
    ("pad_reflect", lambda m, x: F.pad(x, (1, 2, 2, 1), mode="reflect")),
    ("pad_replicate", lambda m, x: F.pad(x, (2, 0, 1, 1), mode="replicate")),
    ("up_nearest_exact", lambda m, x: F.interpolate(x, size=(12, 10), mode="nearest-exact")),
    ("movedim", lambda m, x: x.movedim(1, -1)),
    ("eye", lambda m, x: x + torch.eye(8)),
    ("einsum", lambda m, x: torch.einsum("nchw,nchw->nc", x, x)),
    ("lerp", lambda m, x: torch.lerp(x, x.flip(3), 0.3)),
    ("addcmul", lambda m, x: torch.addcmul(x, x, x, value=0.5)),
    ("addcdiv", lambda m, x: torch.addcdiv(x, x, x.abs() + 1, value=2)),
    ("slice_scatter", lambda m, x: torch.slice_scatter(x, torch.zeros(2, 2, 8, 8), 1, 1, 3)),
    ("select_scatter", lambda m, x: torch.select_scatter(x, torch.ones(2, 8, 8), 1, 2)),
    ("var_mean_v", lambda m, x: torch.var_mean(x, dim=(2, 3))[0]),
    ("var_mean_m", lambda m, x: torch.var_mean(x, dim=(2, 3))[1]),
    ("tensor_split", lambda m, x: torch.tensor_split(x, 3, dim=3)[1]),
    ("ravel", lambda m, x: x.ravel()),
]

ACT = [
    ("hardswish", F.hardswish), ("hardsigmoid", F.hardsigmoid), ("relu6", F.relu6),
    ("leaky", lambda x: F.leaky_relu(x, 0.2)), ("elu", lambda x: F.elu(x, 0.7)),
    ("selu", F.selu), ("celu", lambda x: F.celu(x, 1.3)), ("mish", F.mish),
    ("softplus", lambda x: F.softplus(x, 2.0, 1.0)), ("logsigmoid", F.logsigmoid),
    ("gelu", F.gelu), ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh")),
    ("silu", F.silu), ("hardtanh", lambda x: F.hardtanh(x, -0.5, 0.7)),
    ("abs", torch.abs), ("exp", torch.exp), ("log", lambda x: torch.log(x.abs() + 1)),
    ("sqrt", lambda x: torch.sqrt(x.abs())), ("rsqrt", lambda x: torch.rsqrt(x.abs() + 1)),
    ("recip", lambda x: torch.reciprocal(x + 10)), ("sin", torch.sin), ("cos", torch.cos),
    ("atan", torch.atan), ("asin", lambda x: torch.asin(x.clamp(-0.9, 0.9))),
    ("erf", torch.erf), ("floor", torch.floor), ("ceil", torch.ceil), ("round", torch.round),
    ("trunc", torch.trunc), ("frac", torch.frac), ("sign", torch.sign), ("expm1", torch.expm1),
    ("log1p", lambda x: torch.log1p(x.abs())), ("log2", lambda x: torch.log2(x.abs() + 1)),
    ("clamp", lambda x: x.clamp(-0.5, 0.5)), ("clamp_min", lambda x: x.clamp_min(0.1)),
    ("pow3", lambda x: x.pow(3)), ("pow_scalar", lambda x: torch.pow(2.0, x)),
    ("pow_half", lambda x: x.abs() ** 0.5), ("remainder", lambda x: torch.remainder(x, 0.7)),
    ("fmod", lambda x: torch.fmod(x, 0.7)), ("floordiv", lambda x: torch.floor_divide(x, 0.7)),
    ("div_trunc", lambda x: torch.div(x, 0.3, rounding_mode="trunc")),
    ("where", lambda x: torch.where(x > 0, x, 0.1)),
    ("masked_fill", lambda x: x.masked_fill(x < -1, -5.0)), ("rsub", lambda x: 1 - x),
    ("sub_alpha", lambda x: torch.sub(x, x * x, alpha=2)), ("sigmoid", torch.sigmoid),
    ("tanh", torch.tanh), ("neg", torch.neg), ("square", torch.square),
]

SEQ = [
    ("conv1d", lambda m, s, i: m.c1d(s)),
    ("maxpool1d", lambda m, s, i: F.max_pool1d(s, 3, 2, 1)),
    ("avgpool1d", lambda m, s, i: F.avg_pool1d(s, 4, 3)),
    ("up_linear1d", lambda m, s, i: F.interpolate(s, scale_factor=1.5, mode="linear")),
    ("eq", lambda m, s, i: s > 0.3), ("ne", lambda m, s, i: s != s[:, :1]),
    ("le", lambda m, s, i: s <= s.mean()), ("eq_int", lambda m, s, i: i == 2),
    ("logical", lambda m, s, i: torch.logical_xor(s > 0, s < 0.5) | torch.logical_not(s > 1)),
    ("isinf", lambda m, s, i: torch.isinf(s / (s > 0.5).float())),
    ("isfinite", lambda m, s, i: torch.isfinite(s / (s > 0.5).float())),
    ("bitwise", lambda m, s, i: (i & 3) | ((i ^ 2) << 1) | (i >> 1)),
    ("maximum", lambda m, s, i: torch.maximum(s, s.flip(-1))),
    ("atan2", lambda m, s, i: torch.atan2(s, s.flip(-1))),
    ("sum_keep", lambda m, s, i: s.sum(1, keepdim=True)), ("sum_all", lambda m, s, i: s.sum()),
    ("mean2", lambda m, s, i: s.mean((0, 2))), ("amax", lambda m, s, i: s.amax(-1)),
    ("amin", lambda m, s, i: s.amin((1, 2), keepdim=True)),
    ("prod", lambda m, s, i: (s[:, :, :3] * 0.5 + 1).prod(2)),
    ("any", lambda m, s, i: (s > 1.5).any(-1)), ("all", lambda m, s, i: (s > -2).all(1)),
    ("logsumexp", lambda m, s, i: torch.logsumexp(s, -1)),
    ("var", lambda m, s, i: s.var(-1)), ("std0", lambda m, s, i: s.std(1, correction=0)),
    ("argmax", lambda m, s, i: s.argmax(-1)), ("argmin_all", lambda m, s, i: s.argmin()),
    ("maxdim", lambda m, s, i: s.max(1)[0]), ("maxdim_idx", lambda m, s, i: s.max(1)[1]),
    ("min_all", lambda m, s, i: s.min()),
    ("norm2", lambda m, s, i: torch.linalg.vector_norm(s, dim=-1)),
    ("norm1", lambda m, s, i: torch.linalg.vector_norm(s, 1, dim=1)),
    ("cumsum", lambda m, s, i: s.cumsum(1)), ("cumsum_int", lambda m, s, i: i.cumsum(-1)),
    ("diff", lambda m, s, i: torch.diff(s, dim=-1, prepend=s[:, :, :1])),
    ("view", lambda m, s, i: s.view(2, 80)), ("reshape", lambda m, s, i: s.reshape(-1, 8)),
    ("flatten", lambda m, s, i: s.flatten(1)), ("unflatten", lambda m, s, i: s.unflatten(2, (4, 4))),
    ("permute", lambda m, s, i: s.permute(2, 0, 1)), ("transpose", lambda m, s, i: s.transpose(0, 2)),
    ("t", lambda m, s, i: s[0].t()), ("unsqueeze", lambda m, s, i: s.unsqueeze(-2)),
    ("squeeze", lambda m, s, i: s[:, :1].squeeze(1)),
    ("slice_step", lambda m, s, i: s[:, 1:, ::3]), ("slice_neg", lambda m, s, i: s[:, -3:-1]),
    ("select", lambda m, s, i: s[:, -2]), ("narrow", lambda m, s, i: s.narrow(2, 4, 5)),
    ("expand", lambda m, s, i: s[:, :1].expand(2, 3, 16)), ("repeat", lambda m, s, i: s.repeat(1, 2, 1)),
    ("cat", lambda m, s, i: torch.cat([s, s * 2], 1)), ("stack", lambda m, s, i: torch.stack([s, -s], 2)),
    ("split0", lambda m, s, i: s.split(6, -1)[2]), ("split_sizes", lambda m, s, i: s.split([2, 3], 1)[1]),
    ("chunk", lambda m, s, i: s.chunk(3, 2)[1]), ("unbind", lambda m, s, i: s.unbind(1)[3]),
    ("index_select", lambda m, s, i: s.index_select(1, i[0])),
    ("gather", lambda m, s, i: s.gather(1, i.unsqueeze(-1).expand(2, 5, 3))),
    ("index2", lambda m, s, i: s[i[0] % 2, i[1]]), ("index_nonadj", lambda m, s, i: s[i[:1] % 2, :, i[1:]]),
    ("index_dim1", lambda m, s, i: s[:, i[1]]), ("index_neg", lambda m, s, i: s[:, i[0] - 4]),
    ("embedding", lambda m, s, i: m.emb(i)),
    ("mm", lambda m, s, i: s[0] @ s[1].t()), ("bmm", lambda m, s, i: torch.bmm(s, s.transpose(1, 2))),
    ("matvec", lambda m, s, i: s @ s[0, 0]), ("vecmat", lambda m, s, i: s[0, 0] @ s[0].t()),
    ("baddbmm", lambda m, s, i: torch.baddbmm(s[:, :, :5], s, s.transpose(1, 2), beta=0.5, alpha=2)),
    ("linear", lambda m, s, i: m.lin(s)), ("linear_nb", lambda m, s, i: F.linear(s, m.lin.weight)),
    ("sdpa_causal", lambda m, s, i: F.scaled_dot_product_attention(s[None], s[None], s[None], is_causal=True)),
    ("sdpa_mask", lambda m, s, i: F.scaled_dot_product_attention(s, s, s, attn_mask=(i[:, None, :] != 3).expand(2, 5, 5))),
    ("sdpa_fmask", lambda m, s, i: F.scaled_dot_product_attention(s, s * 0.5, s, attn_mask=s[:, :, :5])),
    ("layernorm", lambda m, s, i: m.ln(s)), ("rmsnorm", lambda m, s, i: F.rms_norm(s, (16,), eps=1e-5)),
    ("arange", lambda m, s, i: s + torch.arange(16)), ("arange_step", lambda m, s, i: s[:, :, :5] * torch.arange(1, 3, 0.4)),
    ("full", lambda m, s, i: s + torch.full((16,), 0.25)), ("zeros_like", lambda m, s, i: torch.zeros_like(i)),
    ("ones", lambda m, s, i: s.new_ones(3, 2)), ("to_float", lambda m, s, i: i.to(torch.float32) * 0.5),
    ("to_int", lambda m, s, i: (s * 3).to(torch.int64)), ("type_as", lambda m, s, i: i.type_as(s)),
    ("dropout", lambda m, s, i: F.dropout(s, 0.3, training=False)), ("clone", lambda m, s, i: s.clone()),
    ("copy", lambda m, s, i: torch.zeros(2, 5, 16).copy_(s.sin())),
    ("fill", lambda m, s, i: s.clone().fill_(2.0)),
]


# Single-case categories sw_NAME (from the .pt2 model sweep): ops found missing or
# misread there; each on torch.manual_seed(3); torch.randn(2, 4, 6, 6).
SWEEP = [
    ("index_copy", lambda m, x: x.index_copy(1, torch.tensor([3, 0]), x[:, :2] * 2)),
    ("sort", lambda m, x: torch.sort(x, dim=-1, descending=True)[0]),
    ("topk_idx", lambda m, x: torch.topk(x, 3, dim=1, largest=False)[1]),
    ("grid_bil", lambda m, x: F.grid_sample(x, x[:, :2].permute(0, 2, 3, 1).tanh(), align_corners=False)),
    ("bicubic", lambda m, x: F.interpolate(x, scale_factor=2, mode="bicubic")),
]


def perm_idx(x):
    """Distinct positions along the last dim (a plain scatter with repeated targets is
    nondeterministic in PyTorch): the first three of each row's argsort."""
    return x.argsort(dim=3)[..., :3]


def dup_idx(x):
    """Positions along the last dim with repeats, shape (2, 4, 3, 4) (smaller than
    self and src in every dim: the general scatter form)."""
    return (x[:, :, :3, :4].abs() * 2).long().clamp(max=5)


BOUNDS = [-1.0, -0.2, 0.0, 0.7, 1.5]
BAG_OFFSETS = [0, 3, 3, 7]  # bag 1 is empty


def bag_idx(x):
    return (x[0, 0].abs() * 3).long().clamp(max=9).flatten()[:12]


# The second sweep's ops, each on the same input as SWEEP (holder: Mods).
SWEEP2 = [
    ("scatter_src", lambda m, x: x.scatter(3, perm_idx(x), x[..., :3] * 2)),
    ("scatter_val", lambda m, x: x.scatter(3, perm_idx(x), -0.5)),
    ("scatter_add", lambda m, x: x.scatter_add(3, dup_idx(x), x[:, :, 1:5] * 2)),
    ("sred_sum", lambda m, x: x.scatter_reduce(3, dup_idx(x), x[:, :, 1:5], "sum")),
    ("sred_prod", lambda m, x: x.scatter_reduce(3, dup_idx(x), x[:, :, 1:5], "prod", include_self=False)),
    ("sred_mean", lambda m, x: x.scatter_reduce(3, dup_idx(x), x[:, :, 1:5], "mean")),
    ("sred_mean_ns", lambda m, x: x.scatter_reduce(3, dup_idx(x), x[:, :, 1:5], "mean", include_self=False)),
    ("sred_amax", lambda m, x: x.scatter_reduce(3, dup_idx(x), x[:, :, 1:5], "amax")),
    ("sred_amin_ns", lambda m, x: x.scatter_reduce(3, dup_idx(x), x[:, :, 1:5], "amin", include_self=False)),
    ("scatter_red_add", lambda m, x: x.scatter(3, dup_idx(x), x[:, :, 1:5], reduce="add")),
    ("index_add", lambda m, x: x.index_add(1, torch.tensor([3, 0, 3]), x[:, :3] * 2, alpha=0.5)),
    ("masked_scatter", lambda m, x: x.masked_scatter(x > 0.3, x.flip(3) * 2)),
    ("cumprod", lambda m, x: (x * 0.5 + 1).cumprod(2)),
    ("logcumsumexp", lambda m, x: torch.logcumsumexp(x, 3)),
    ("meshgrid", lambda m, x: torch.stack(torch.meshgrid(x[0, 0, 0], x[0, 0, :4, 0], indexing="xy"))),
    ("ebag_sum", lambda m, x: m.bag_sum(bag_idx(x), torch.tensor(BAG_OFFSETS), x[1, 1].flatten()[:12])),
    ("ebag_mean", lambda m, x: m.bag_mean(bag_idx(x), torch.tensor(BAG_OFFSETS))),
    ("ebag_max", lambda m, x: m.bag_max(bag_idx(x), torch.tensor(BAG_OFFSETS))),
    ("ebag_2d", lambda m, x: m.bag_mean(bag_idx(x).view(3, 4))),
    ("as_strided", lambda m, x: (x * 2).as_strided((2, 3, 4), (100, 7, 2), 5)),
    ("weight_norm0", lambda m, x: x[0, 0] @ torch._weight_norm(m.wv, m.wg0, 0).t()),
    ("weight_norm1", lambda m, x: x[0, 0] @ torch._weight_norm(m.wv, m.wg1, 1).t()),
    ("lstm", lambda m, x: torch.cat([t.flatten() for t in (lambda o: (o[0], *o[1]))(m.lstm(x[:, 0]))])),
    ("gru", lambda m, x: torch.cat([t.flatten() for t in m.gru(x[0], x[1, :1, :, :4].contiguous())])),
    ("nan_to_num", lambda m, x: torch.nan_to_num(torch.log(x) / (x > 0.5).float(), nan=0.1, posinf=5.0)),
    ("bucketize", lambda m, x: torch.bucketize(x, torch.tensor(BOUNDS))),
    ("bucketize_r32", lambda m, x: torch.bucketize(x, torch.tensor(BOUNDS), out_int32=True, right=True)),
    ("searchsorted", lambda m, x: torch.searchsorted(torch.tensor(BOUNDS), x, right=True)),
    ("erfinv", lambda m, x: torch.erfinv((x * 0.5).tanh())),
    ("isin", lambda m, x: torch.isin((x * 2).long(), torch.tensor([-1, 0, 3]))),
    ("isin_inv", lambda m, x: torch.isin((x * 2).long(), torch.tensor([-1, 0, 3]), invert=True)),
]


# The third sweep's ops (GPT-J's rotary embedding), each on the same input as SWEEP.
def item_check(m, x):
    """A data-dependent scalar (aten.item) that only a run-time check reads."""
    n = (x > 0).sum().item()
    torch._check(n <= x.numel())
    return x * 2


SWEEP3 = [
    ("rep_il_int", lambda m, x: x.repeat_interleave(2, dim=3)),
    ("rep_il_flat", lambda m, x: x[0, 0].repeat_interleave(3)),
    ("rep_il_tensor", lambda m, x: x.repeat_interleave(torch.tensor([1, 0, 2, 3]), dim=1,
                                                       output_size=6)),
    ("im2col", lambda m, x: F.unfold(x, (3, 2), dilation=(1, 2), padding=(1, 0), stride=(2, 1))),
    ("im2col_3d", lambda m, x: F.unfold(x[0], 2, stride=2)),
    ("aliases", lambda m, x: torch.multiply(x, x + 1.5).subtract(x).divide(x.abs() + 2.0)
     + torch.greater(x, 0.2) + torch.less_equal(x, -0.3) + torch.not_equal(x, x)
     + torch.absolute(x).negative() + torch.arctan2(x, x + 3.0)),
    ("item_check", item_check),
    ("unfold", lambda m, x: x.unfold(2, 3, 2)),
    ("unfold_last", lambda m, x: x.unfold(-1, 2, 1) * 2.0),
]


def holder_for(fn):
    """A holder with only the Mods members fn's code names (unused parameters would
    still be lifted into the archive), from Mods made on torch.manual_seed(5)."""
    torch.manual_seed(5)
    mods, holder = Mods(), Unary()
    for attr in fn.__code__.co_names:
        if hasattr(mods, attr) and attr not in dir(nn.Module):
            setattr(holder, attr, getattr(mods, attr))
    return holder.eval()


class Mods(nn.Module):
    """Holder of the modules and parameters the second sweep uses."""

    def __init__(self):
        super().__init__()
        self.bag_sum = nn.EmbeddingBag(10, 5, mode="sum")
        self.bag_mean = nn.EmbeddingBag(10, 5, mode="mean")
        self.bag_max = nn.EmbeddingBag(10, 5, mode="max")
        self.wv = nn.Parameter(torch.randn(5, 6))
        self.wg0 = nn.Parameter(torch.rand(5, 1) + 0.5)
        self.wg1 = nn.Parameter(torch.rand(1, 6) + 0.5)
        self.lstm = nn.LSTM(6, 5, num_layers=2, bidirectional=True, batch_first=True)
        self.gru = nn.GRU(6, 4, bias=False)
        self.eval()


class Img(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(4, 6, 3, padding=1)
        self.c2 = nn.Conv2d(4, 6, 3, stride=2, dilation=2, groups=2, padding=2)
        self.ct = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
        self.bn = nn.BatchNorm2d(4)
        self.gn = nn.GroupNorm(2, 4)
        self.pr = nn.PReLU(4, 0.2)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-1, 1)
            self.bn.running_var.uniform_(0.5, 2)
            self.bn.weight.uniform_(0.5, 1.5)
            self.bn.bias.uniform_(-1, 1)
            self.gn.weight.uniform_(0.5, 1.5)
            self.gn.bias.uniform_(-1, 1)
            self.pr.weight.uniform_(0, 0.5)
        self.eval()


class Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1d = nn.Conv1d(5, 3, 3, padding=2, dilation=2)
        self.emb = nn.Embedding(8, 6)
        self.lin = nn.Linear(16, 7)
        self.ln = nn.LayerNorm(16)
        self.eval()


class Cases(nn.Module):
    """forward(*inputs) returns every case's output (cases: name, fn(holder, *inputs))."""

    def __init__(self, holder, cases):
        super().__init__()
        self.h = holder
        self.fns = [fn for _, fn in cases]

    def forward(self, *inputs):
        return tuple(fn(self.h, *inputs) for fn in self.fns)


def repack(path):
    """Rewrite the archive with deflated entries and without the sample inputs (a
    pickle the compiler never reads): smaller, and it exercises deflate."""
    with zipfile.ZipFile(path) as zin:
        entries = [(i.filename, zin.read(i.filename)) for i in zin.infolist()
                   if "/data/sample_inputs/" not in i.filename]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zout:
        for name, data in entries:
            zout.writestr(name, data)


def try_export(mod, inputs):
    try:
        return torch.export.export(mod, inputs)
    except Exception as e:  # noqa: BLE001 - report and drop the case
        return e


def export_category(name, holder, cases, inputs, outdir):
    """Export the cases together (if that fails, each alone, dropping those that fail)
    and write the five files."""
    ep = try_export(Cases(holder, cases), inputs)
    ok = cases
    if isinstance(ep, Exception):
        ok = []
        for case in cases:
            e = try_export(Cases(holder, [case]), inputs)
            if isinstance(e, Exception):
                print(f"{name}/{case[0]}: dropped: {type(e).__name__}: {str(e)[:300]}")
            else:
                ok.append(case)
        ep = torch.export.export(Cases(holder, ok), inputs)
    mod = Cases(holder, ok)
    for suffix, prog in (("", ep), ("_core", ep.run_decompositions())):
        path = os.path.join(outdir, name + suffix + ".pt2")
        torch.export.save(prog, path)
        repack(path)
    with torch.no_grad():
        outs = mod(*inputs)
    with open(os.path.join(outdir, name + ".in.bin"), "wb") as f:
        for t in inputs:
            f.write(t.contiguous().numpy().tobytes())
    with open(os.path.join(outdir, name + ".out.bin"), "wb") as f:
        for t in outs:
            f.write(t.contiguous().numpy().tobytes())
    with open(os.path.join(outdir, name + ".cases.txt"), "w") as f:
        f.write("\n".join(c[0] for c in ok) + "\n")
    print(f"{name}: {len(ok)} of {len(cases)} cases")


class Unary(nn.Module):
    """Holder without parameters for the pointwise cases."""


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    export_category("img", Img(), IMG, (x_img(),), outdir)
    act = [(n, (lambda fn: lambda m, x: fn(x))(fn)) for n, fn in ACT]
    export_category("act", Unary(), act, (torch.randn(3, 17) * 2,), outdir)
    export_category("seq", Seq(), SEQ, (x_seq(), torch.randint(0, 4, (2, 5))), outdir)
    for name, fn in SWEEP:
        torch.manual_seed(3)
        export_category("sw_" + name, Unary(), [("p_" + name, fn)], (torch.randn(2, 4, 6, 6),), outdir)
    for name, fn in SWEEP2:
        torch.manual_seed(3)
        x = torch.randn(2, 4, 6, 6)
        export_category("sw_" + name, holder_for(fn), [("p_" + name, fn)], (x,), outdir)
    for name, fn in SWEEP3:
        torch.manual_seed(3)
        export_category("sw_" + name, Unary(), [("p_" + name, fn)], (torch.randn(2, 4, 6, 6),), outdir)


if __name__ == "__main__":
    main()
