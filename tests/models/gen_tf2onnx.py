#!/usr/bin/env python3
"""Small models converted from TensorFlow / Keras by tf2onnx, with goldens.

The ONNX Model Zoo's TensorFlow models and many published ones come from tf2onnx, whose
graphs differ from PyTorch exports: NHWC tensors with Transposes around every
convolution, Keras padding as Pad + Conv, ReLU6 as Clip, Keras LSTM / GRU as ONNX LSTM
inside a Loop, embeddings as Gather with index checks, layer norms and attention
decomposed into ReduceMean / Pow / Sqrt / Reciprocal chains, tf.image.resize as Resize.

    python tests/models/gen_tf2onnx.py [NAME ...]

writes tests/models/tf_{mobilenetv2,lstm,textcnn,transformer,imageops,resnet_block}
(model.onnx and test_data_set_0, outputs computed by onnxruntime's CPU provider).
Needs tensorflow-cpu, tf2onnx, numpy, onnx and onnxruntime in a virtual environment of
its own (python3 -m venv V; V/bin/pip install tensorflow-cpu tf2onnx onnxruntime; made
with TensorFlow 2.21, tf2onnx 1.17). Weights and inputs are seeded.
"""
import os, sys, traceback
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, tensorflow as tf, tf2onnx, onnx, onnxruntime as ort
from onnx import numpy_helper
OUT = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(3)
keras = tf.keras
keras.utils.set_random_seed(3)

def save(name, fn, specs, feeds, opset=15):
    """Convert fn to NAME/model.onnx and write its test_data_set_0 from onnxruntime."""
    d = os.path.join(OUT, name); os.makedirs(d + "/test_data_set_0", exist_ok=True)
    path = d + "/model.onnx"
    model_proto, _ = tf2onnx.convert.from_function(fn, input_signature=specs, opset=opset, output_path=path)
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    fd = {}
    for i, (inp, x) in enumerate(zip(s.get_inputs(), feeds)):
        fd[inp.name] = x
        open(f"{d}/test_data_set_0/input_{i}.pb", "wb").write(numpy_helper.from_array(x, inp.name).SerializeToString())
    outs = s.run(None, fd)
    for i, (o, meta) in enumerate(zip(outs, s.get_outputs())):
        open(f"{d}/test_data_set_0/output_{i}.pb", "wb").write(numpy_helper.from_array(o, meta.name).SerializeToString())
    ops = sorted({n.op_type for n in model_proto.graph.node})
    print("wrote", name, ops, flush=True)

def keras_case(name, model, shape, dtype=np.float32, opset=15, gen=None):
    """A Keras model called on one input x of shape (random normal unless gen)."""
    x = gen() if gen else rng.standard_normal(shape).astype(dtype)
    spec = (tf.TensorSpec(shape, dtype, name="x"),)
    @tf.function(input_signature=spec)
    def fn(x):
        return model(x, training=False)
    save(name, fn, spec, [x], opset)

def rnd_bn(model):
    """Random batch-norm statistics (fresh layers have the identity)."""
    for l in model.layers:
        if isinstance(l, keras.layers.BatchNormalization):
            w = l.get_weights()
            l.set_weights([rng.uniform(0.5, 1.5, w[0].shape).astype(np.float32), rng.uniform(-0.2, 0.2, w[1].shape).astype(np.float32),
                           rng.uniform(-0.2, 0.2, w[2].shape).astype(np.float32), rng.uniform(0.5, 1.5, w[3].shape).astype(np.float32)])
    return model

CASES = {}
def case(f): CASES[f.__name__] = f; return f

@case
def tf_mobilenetv2():
    m = rnd_bn(keras.applications.MobileNetV2(input_shape=(96, 96, 3), alpha=0.35, weights=None, classes=10))
    keras_case("tf_mobilenetv2", m, (1, 96, 96, 3))

@case
def tf_lstm():
    i = keras.Input((12, 8)); h = keras.layers.LSTM(16, return_sequences=True)(i); h = keras.layers.GRU(8)(h); o = keras.layers.Dense(3)(h)
    keras_case("tf_lstm", keras.Model(i, o), (2, 12, 8))

@case
def tf_textcnn():
    i = keras.Input((20,), dtype="int32"); e = keras.layers.Embedding(100, 16)(i)
    c = keras.layers.Conv1D(12, 3, activation="relu", padding="same")(e); p = keras.layers.GlobalMaxPooling1D()(c)
    o = keras.layers.Dense(4, activation="softmax")(p)
    keras_case("tf_textcnn", keras.Model(i, o), (2, 20), np.int32, gen=lambda: rng.integers(0, 100, (2, 20)).astype(np.int32))

@case
def tf_transformer():
    i = keras.Input((10, 32)); a = keras.layers.MultiHeadAttention(num_heads=4, key_dim=8)(i, i)
    h = keras.layers.LayerNormalization()(i + a); f = keras.layers.Dense(64, activation=lambda t: keras.activations.gelu(t, approximate=True))(h); f = keras.layers.Dense(32)(f)
    o = keras.layers.LayerNormalization()(h + f)
    keras_case("tf_transformer", keras.Model(i, o), (2, 10, 32))

@case
def tf_imageops():
    spec = (tf.TensorSpec((1, 16, 16, 4), tf.float32, name="x"),)
    w = tf.Variable(rng.standard_normal((3, 3, 4, 8)).astype(np.float32))
    @tf.function(input_signature=spec)
    def fn(x):
        y = tf.image.resize(x, (24, 24), method="bilinear")
        y = tf.nn.conv2d(y, w, strides=2, padding="SAME")
        z = tf.nn.space_to_depth(x, 2)
        z = tf.nn.max_pool2d(z, 3, 2, "SAME")
        y = tf.nn.avg_pool2d(y, 2, 2, "VALID")
        return tf.concat([tf.reduce_mean(y, axis=[1, 2]), tf.reduce_max(z, axis=[1, 2])], axis=-1), tf.nn.depth_to_space(y, 2)
    save("tf_imageops", fn, spec, [rng.standard_normal((1, 16, 16, 4)).astype(np.float32)])

@case
def tf_resnet_block():
    i = keras.Input((32, 32, 3)); x = keras.layers.Conv2D(16, 7, strides=2, padding="same")(i)
    x = keras.layers.BatchNormalization()(x); x = keras.layers.Activation("relu")(x); x = keras.layers.ZeroPadding2D(1)(x); x = keras.layers.MaxPooling2D(3, 2)(x)
    s = x; x = keras.layers.SeparableConv2D(16, 3, padding="same")(x); x = keras.layers.BatchNormalization()(x)
    x = keras.layers.Add()([x, s]); x = keras.layers.ReLU(max_value=6.0)(x)
    x = keras.layers.Conv2DTranspose(8, 3, strides=2, padding="same")(x); x = keras.layers.UpSampling2D(2)(x)
    x = keras.layers.GlobalAveragePooling2D()(x); o = keras.layers.Dense(5, activation="sigmoid")(x)
    keras_case("tf_resnet_block", rnd_bn(keras.Model(i, o)), (2, 32, 32, 3))

if __name__ == "__main__":
    for n in sys.argv[1:] or list(CASES):
        try: CASES[n]()
        except Exception as e:
            print("FAIL", n, repr(e)[:300], flush=True)
            sys.exit(1)
