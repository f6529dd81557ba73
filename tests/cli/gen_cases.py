#!/usr/bin/env python3
"""Generate the tensor files of the spyrun exit-status tests (tests/tools/check.sh, part
cli) from the shipped example's test data:

    wrong_shape/input_0.pb   x f32[2,3,16,16]  (the model wants f32[2,3,32,32]) -> exit 2
    wrong_dtype/input_0.pb   x f16[2,3,32,32]                                   -> exit 2
    mismatch/output_0.pb     the golden with one element off by 0.005           -> exit 1
                             (exit 0 with --atol 0.01, or --metric rel-l2=0.02 ...)
    top1_swap/output_0.pb    the golden with the top two classes of row 1 swapped
                                                           -> exit 1 with --metric top1=1
    half/model.onnx          y = 3 * x in float16 (x f16[8,32]), its test_data_set_0
                             golden with four elements 2 ulps off (float16 goldens pass by
                             the fp16 metrics: exit 0; with --rtol 1e-3 exit 1), and
    half/wrong/output_0.pb   the golden with one row negated -> exit 1
    halfweight/model.onnx    y = x @ W in float16 and z = u @ V in bfloat16 (W, V
                             [256,256] initializers: stored in their own dtype, widened
                             per tile), its test_data_set_0 golden computed in float64 from
                             the widened operands and rounded once

and the spyrec cases of the other corpora:

    tests/golden/cli/unsupported_ops.onnx  two unknown operators: both must be reported
    tests/golden/cli/dyn_stale_vi.onnx     x f32[-1,4] (batch made symbolic after export)
                                           whose value_info still declares the export's
                                           batch 1: compiled with a bound, one warning
    tests/golden/cli/if_bad_branch.onnx    an If on a runtime flag whose else branch
                                           reshapes x f32[2,3] to [4,4]: refused, naming
                                           the branch and --bind flag=FILE
    tests/malformed/cli_truncated.onnx     the example model cut at byte 1000

Run with the virtualenv of `make example`: build/venv/bin/python tests/cli/gen_cases.py
"""
import os

import numpy as np
import onnx
from onnx import helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "examples", "models", "tiny_cnn", "test_data_set_0")


def load(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t.name, numpy_helper.to_array(t)


def save(arr, name, *parts):
    path = os.path.join(HERE, *parts)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(arr, name).SerializeToString())


def unsupported_ops_model():
    """A valid ONNX file whose graph uses two operators that do not exist."""
    from onnx import TensorProto, helper
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="relu"),
        helper.make_node("FooBar", ["a"], ["b"], name="n7"),
        helper.make_node("BazQux", ["b"], ["y"], name="n8"),
    ]
    graph = helper.make_graph(
        nodes, "unsupported",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def stale_value_info_model():
    """Relu then Softmax of x f32[-1, 4], the Relu's result declared f32[1, 4] in
    value_info: the sizes of an export whose input was made dynamic afterwards."""
    from onnx import TensorProto, helper
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="relu"),
        helper.make_node("Softmax", ["a"], ["y"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "stale_value_info",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [-1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [-1, 4])],
        value_info=[helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def if_bad_branch_model():
    """y = If(flag) then Relu(x) else Reshape(x, [4, 4]), x f32[2, 3]: the else branch
    cannot run at this shape, and the flag is a graph input."""
    from onnx import TensorProto, helper
    then_g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["t"], name="then_relu")], "then", [],
        [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)])
    else_g = helper.make_graph(
        [helper.make_node("Constant", [], ["shape"], name="else_shape",
                          value=numpy_helper.from_array(np.array([4, 4], np.int64))),
         helper.make_node("Reshape", ["x", "shape"], ["e"], name="else_reshape")], "else", [],
        [helper.make_tensor_value_info("e", TensorProto.FLOAT, None)])
    nodes = [helper.make_node("If", ["flag"], ["y"], name="choose", then_branch=then_g,
                              else_branch=else_g)]
    graph = helper.make_graph(
        nodes, "if_bad_branch",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("flag", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def half_cases():
    x = (np.random.default_rng(7).standard_normal((8, 32)) + 2.0).astype(np.float16)
    node = helper.make_node("Mul", ["x", "three"], ["y"], name="scale")
    three = numpy_helper.from_array(np.array(3.0, dtype=np.float16), "three")
    graph = helper.make_graph(
        [node], "half_scale",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT16, [8, 32])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT16, [8, 32])], [three])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    os.makedirs(os.path.join(HERE, "half"), exist_ok=True)
    onnx.save(model, os.path.join(HERE, "half", "model.onnx"))
    y = (x * np.float16(3)).astype(np.float16)
    save(x, "x", "half", "test_data_set_0", "input_0.pb")
    bits = y.view(np.uint16).copy()
    bits.flat[[5, 40, 100, 200]] += 2          # 2 ulps: above rtol 1e-3, within fp16 noise
    save(bits.view(np.float16), "y", "half", "test_data_set_0", "output_0.pb")
    wrong = y.copy()
    wrong[3] = -wrong[3]
    save(wrong, "y", "half", "wrong", "output_0.pb")


def to_bf16_bits(a):
    """float64 array -> bfloat16 bit patterns (uint16), round to nearest even."""
    b = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
    return b.astype(np.uint16)


def bf16_tensor(bits, name, dims):
    t = onnx.TensorProto()
    t.name, t.data_type = name, onnx.TensorProto.BFLOAT16
    t.dims.extend(dims)
    t.raw_data = bits.astype("<u2").tobytes()
    return t


def halfweight_cases():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((4, 256)).astype(np.float16)
    w = (rng.standard_normal((256, 256)) * 0.05).astype(np.float16)
    ub = to_bf16_bits(rng.standard_normal((4, 256)))
    vb = to_bf16_bits(rng.standard_normal((256, 256)) * 0.05)
    widen = lambda bits: (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    nodes = [helper.make_node("MatMul", ["x", "W"], ["y"], name="mm_f16"),
             helper.make_node("MatMul", ["u", "V"], ["z"], name="mm_bf16")]
    F16, BF16 = onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16
    graph = helper.make_graph(
        nodes, "halfweight",
        [helper.make_tensor_value_info("x", F16, [4, 256]),
         helper.make_tensor_value_info("u", BF16, [4, 256])],
        [helper.make_tensor_value_info("y", F16, [4, 256]),
         helper.make_tensor_value_info("z", BF16, [4, 256])],
        [numpy_helper.from_array(w, "W"), bf16_tensor(vb, "V", [256, 256])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    d = os.path.join(HERE, "halfweight")
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    save(x, "x", "halfweight", "test_data_set_0", "input_0.pb")
    y = (x.astype(np.float64) @ w.astype(np.float64)).astype(np.float16)
    save(y, "y", "halfweight", "test_data_set_0", "output_0.pb")
    for name, bits, f in (("u", ub, "input_1.pb"), ("z", to_bf16_bits(widen(ub) @ widen(vb)),
                                                   "output_1.pb")):
        with open(os.path.join(d, "test_data_set_0", f), "wb") as fh:
            fh.write(bf16_tensor(bits, name, [4, 256]).SerializeToString())


def main():
    half_cases()
    halfweight_cases()
    root = os.path.join(HERE, "..")
    os.makedirs(os.path.join(root, "golden", "cli"), exist_ok=True)
    onnx.save(unsupported_ops_model(), os.path.join(root, "golden", "cli", "unsupported_ops.onnx"))
    onnx.save(stale_value_info_model(), os.path.join(root, "golden", "cli", "dyn_stale_vi.onnx"))
    onnx.save(if_bad_branch_model(), os.path.join(root, "golden", "cli", "if_bad_branch.onnx"))
    with open(os.path.join(DATA, "..", "model.onnx"), "rb") as f:
        model = f.read()
    os.makedirs(os.path.join(root, "malformed"), exist_ok=True)
    with open(os.path.join(root, "malformed", "cli_truncated.onnx"), "wb") as f:
        f.write(model[:1000])

    xname, x = load(os.path.join(DATA, "input_0.pb"))
    yname, y = load(os.path.join(DATA, "output_0.pb"))
    save(np.ascontiguousarray(x[:, :, :16, :16]), xname, "wrong_shape", "input_0.pb")
    save(x.astype(np.float16), xname, "wrong_dtype", "input_0.pb")
    swapped = y.copy()
    swapped[1, [0, 7]] = swapped[1, [7, 0]]
    save(swapped, yname, "top1_swap", "output_0.pb")
    y = y.copy()
    y[1, 3] += 0.005
    save(y, yname, "mismatch", "output_0.pb")


if __name__ == "__main__":
    main()
