"""TensorFlow and Keras models converted by mnnpy.convert.from_tensorflow, run by mnnpy and
compared with TensorFlow's own outputs on the same seeded inputs: Keras applications (untrained,
with random batch-norm statistics so that the activations carry signal), a transformer encoder
block, a SavedModel directory, a .keras file and a frozen GraphDef; then the channels-last
layout passes on hand-made graphs against NumPy, and the errors."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402
from mnnpy import nn  # noqa: E402
from mnnpy.convert import from_tensorflow, save_model  # noqa: E402
from mnnpy.convert._graph import Graph, Node, ValueInfo  # noqa: E402
from mnnpy.convert._tf_layout import fold_channel_affine, fold_pads_into_conv, sink_transposes  # noqa: E402

U32 = 2.0 ** -24  # float32 unit roundoff


def _float32_tolerance(reference, layers, dot_length):
    """A bound on float32 rounding differences between two implementations: each of `layers`
    dot products of length `dot_length` may be off by gamma_K = K u / (1 - K u) relative to the
    magnitude it sums (taken as the larger of 1 and the largest output), in either one."""
    gamma = dot_length * U32 / (1 - dot_length * U32)
    return 2 * layers * gamma * max(1.0, float(np.abs(reference).max()))


def _depth_and_fan_in(graph):
    """(number of convolutions and matrix products, their longest dot product) of a graph."""
    layers, longest = 0, 1
    for n in graph.nodes:
        w = graph.weights.get(n.inputs[1]) if len(n.inputs) > 1 else None
        if n.op == "Conv" and w is not None:
            layers, longest = layers + 1, max(longest, int(np.prod(w.shape[1:])))
        elif n.op in ("MatMul", "TF.Einsum", "MNN.MatMul"):
            layers += 1
            longest = max(longest, int(w.shape[0]) if w is not None and w.ndim == 2 else 64)
    return max(layers, 1), longest


def _run(graph, tmp_path, *inputs):
    path = tmp_path / "model.mnnpy"
    save_model(graph, path)
    out = nn.load_module_from_file(str(path)).forward(*inputs)
    return [o.read() for o in out] if isinstance(out, (list, tuple)) else out.read()


def _randomize_batch_norms(model, seed=1):
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            c = layer.moving_mean.shape[0]
            values = [rng.uniform(0.75, 1.25, c) if layer.scale else None,
                      rng.uniform(-0.1, 0.1, c) if layer.center else None,
                      rng.uniform(-0.1, 0.1, c), rng.uniform(0.75, 1.25, c)]
            layer.set_weights([v for v in values if v is not None])
    return model


APPLICATIONS = {
    "MobileNetV2": lambda: keras.applications.MobileNetV2(input_shape=(96, 96, 3), alpha=0.35, weights=None,
                                                          classifier_activation=None),
    "MobileNetV3Small": lambda: keras.applications.MobileNetV3Small(input_shape=(96, 96, 3), weights=None,
                                                                    classifier_activation=None),
    "EfficientNetB0": lambda: keras.applications.EfficientNetB0(input_shape=(64, 64, 3), weights=None,
                                                                classifier_activation=None),
    "ResNet50": lambda: keras.applications.ResNet50(input_shape=(64, 64, 3), weights=None,
                                                    classifier_activation=None),
}


@pytest.fixture(scope="module", params=sorted(APPLICATIONS))
def application(request, tmp_path_factory):
    keras.utils.set_random_seed(0)
    model = _randomize_batch_norms(APPLICATIONS[request.param]())
    path = tmp_path_factory.mktemp("tf") / f"{request.param}.mnnpy"
    graph, report = from_tensorflow(model, str(path))  # the batch stays free
    return request.param, model, graph, report, path


def test_keras_applications_match_tensorflow(application):
    name, model, graph, report, path = application
    assert not report.unsupported and report.file_bytes == os.path.getsize(path)
    assert report.parameters == graph.parameter_count() > 0
    x = np.random.default_rng(2).standard_normal((2,) + tuple(model.inputs[0].shape[1:])).astype(np.float32)
    ref = model(x, training=False).numpy()
    got = nn.load_module_from_file(str(path)).forward(x).read()
    assert got.shape == ref.shape
    layers, fan_in = _depth_and_fan_in(graph)
    np.testing.assert_allclose(got, ref, rtol=0, atol=_float32_tolerance(ref, layers, fan_in))


def test_keras_application_layout_keeps_one_transpose(application):
    """The conv chains run in NCHW from the input's transpose on: no transpose per op."""
    name, _, graph, _, _ = application
    transposes = graph.op_counts().get("Transpose", 0)
    assert transposes == 1, graph.op_counts()


def test_transformer_encoder_block(tmp_path):
    keras.utils.set_random_seed(3)
    x = keras.Input((8, 16))
    attended = keras.layers.MultiHeadAttention(num_heads=2, key_dim=8)(x, x)
    y = keras.layers.LayerNormalization(epsilon=1e-5)(x + attended)
    z = keras.layers.Dense(32, activation="gelu")(y)
    z = keras.layers.Dense(16)(z)
    model = keras.Model(x, keras.layers.LayerNormalization(epsilon=1e-5)(y + z))
    graph, report = from_tensorflow(model)
    assert not report.unsupported
    data = np.random.default_rng(4).standard_normal((3, 8, 16)).astype(np.float32)
    ref = model(data, training=False).numpy()
    got = _run(graph, tmp_path, data)
    # Five products of length <= 32 between the normalizations; a layer norm divides by a
    # standard deviation of about 1, so its output error stays that of its input.
    np.testing.assert_allclose(got, ref, rtol=0, atol=_float32_tolerance(ref, 5, 32))


class _OpsModule(tf.Module):
    """Raw TensorFlow ops of both layouts and many kinds, with variables, for the SavedModel
    and frozen-graph paths."""

    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(5)
        self.filter = tf.Variable(rng.standard_normal((3, 3, 4, 6)).astype(np.float32) * 0.3)
        self.depthwise = tf.Variable(rng.standard_normal((3, 3, 6, 2)).astype(np.float32) * 0.3)
        self.bias = tf.Variable(rng.standard_normal(6).astype(np.float32))
        self.scale = tf.Variable(rng.uniform(0.5, 1.5, 12).astype(np.float32))
        self.offset = tf.Variable(rng.standard_normal(12).astype(np.float32) * 0.1)
        self.mean = tf.Variable(rng.standard_normal(12).astype(np.float32) * 0.1)
        self.variance = tf.Variable(rng.uniform(0.5, 1.5, 12).astype(np.float32))
        self.dense = tf.Variable(rng.standard_normal((12, 5)).astype(np.float32) * 0.3)

    @tf.function(input_signature=[tf.TensorSpec([None, 11, 10, 4], tf.float32)])
    def __call__(self, x):
        y = tf.nn.conv2d(x, self.filter, strides=[1, 2, 1, 1], padding="SAME")
        y = tf.nn.relu6(tf.nn.bias_add(y, self.bias))
        y = tf.pad(y, [[0, 0], [1, 2], [2, 1], [0, 0]], mode="REFLECT")
        y = tf.nn.depthwise_conv2d(y, self.depthwise, [1, 1, 1, 1], "VALID", dilations=[1, 2])
        y, _, _, _, _, _ = tf.raw_ops.FusedBatchNormV3(x=y, scale=self.scale, offset=self.offset, mean=self.mean,
                                                      variance=self.variance, epsilon=1e-3, is_training=False)
        y = tf.nn.leaky_relu(y, 0.1) + tf.nn.max_pool2d(y, 3, 1, "SAME")
        y = tf.nn.avg_pool2d(y, 2, 2, "SAME")
        a, b = tf.split(y, 2, axis=3)
        y = tf.concat([tf.nn.elu(a) * tf.sigmoid(b), tf.square(b) - tf.abs(a)], axis=-1)
        y = tf.image.resize(y, [7, 5], method="bilinear")
        y = y[:, 1:, ::2, :]
        pooled = tf.reduce_mean(y, axis=[1, 2])
        logits = tf.matmul(pooled, self.dense)
        shape = tf.shape(y)
        flat = tf.reshape(y, [shape[0], -1])
        return {"probabilities": tf.nn.softmax(logits),
                "features": tf.reduce_max(flat, axis=1, keepdims=True) + tf.math.rsqrt(tf.reduce_sum(y * y) + 1.0)}


@pytest.fixture(scope="module")
def ops_module():
    return _OpsModule()


def _check_ops_module(module, graph, tmp_path, batch=2):
    x = np.random.default_rng(6).standard_normal((batch, 11, 10, 4)).astype(np.float32)
    ref = {k: v.numpy() for k, v in module(x).items()}
    got = _run(graph, tmp_path, x)
    assert [v.name for v in graph.outputs] == ["features", "probabilities"]
    for name, value in zip(["features", "probabilities"], got):
        # Two convolutions of at most 36 terms, a product of 12 and a sum of all the features.
        np.testing.assert_allclose(value, ref[name], rtol=0, atol=_float32_tolerance(ref[name], 4, 2 * 4 * 5 * 6))


def test_saved_model_directory(ops_module, tmp_path):
    path = tmp_path / "saved"
    tf.saved_model.save(ops_module, str(path), signatures=ops_module.__call__)
    graph, report = from_tensorflow(str(path))
    assert not report.unsupported, report
    _check_ops_module(ops_module, graph, tmp_path)


def test_frozen_graph_def_file(ops_module, tmp_path):
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2
    frozen = convert_variables_to_constants_v2(ops_module.__call__.get_concrete_function())
    path = tmp_path / "frozen.pb"
    path.write_bytes(frozen.graph.as_graph_def().SerializeToString())
    graph, report = from_tensorflow(str(path), input_shapes=[1, 11, 10, 4])
    assert not report.unsupported, report
    assert graph.inputs[0].shape == [1, 11, 10, 4]
    x = np.random.default_rng(7).standard_normal((1, 11, 10, 4)).astype(np.float32)
    ref = ops_module(x)
    got = _run(graph, tmp_path, x)
    by_name = {v.name: g for v, g in zip(graph.outputs, got)}
    # The .pb has no output names: its outputs are the tensors no op reads, here the function's Identity ops.
    assert len(by_name) == 2
    for value in ref.values():
        match = [g for g in by_name.values() if g.shape == value.shape]
        assert match
        np.testing.assert_allclose(match[0], value.numpy(), rtol=0, atol=_float32_tolerance(value, 4, 240))


def test_keras_file(tmp_path):
    keras.utils.set_random_seed(8)
    model = keras.Sequential([
        keras.Input((12, 12, 3)),
        keras.layers.Conv2D(8, 3, padding="same", use_bias=False),
        keras.layers.BatchNormalization(),
        keras.layers.Activation("swish"),
        keras.layers.SeparableConv2D(16, 3, strides=2, padding="same", activation="relu"),
        keras.layers.AveragePooling2D(2),
        keras.layers.Flatten(),
        keras.layers.Dropout(0.5),
        keras.layers.Dense(10, activation="softmax")])
    _randomize_batch_norms(model)
    path = tmp_path / "small.keras"
    model.save(path)
    x = np.random.default_rng(9).standard_normal((2, 12, 12, 3)).astype(np.float32)
    ref = model(x, training=False).numpy()
    graph, report = from_tensorflow(str(path))
    assert not report.unsupported
    np.testing.assert_allclose(_run(graph, tmp_path, x), ref, rtol=0, atol=_float32_tolerance(ref, 4, 144))
    # The same file through nn.load_module_from_file and the command line, known by its name.
    from mnnpy import nn
    np.testing.assert_allclose(nn.load_module_from_file(str(path)).forward(x).numpy(), ref, rtol=0,
                               atol=_float32_tolerance(ref, 4, 144))
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "mnnpy", "convert", str(path), str(tmp_path / "small.mnnpy")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    np.testing.assert_allclose(nn.load_module_from_file(str(tmp_path / "small.mnnpy")).forward(x).numpy(), ref,
                               rtol=0, atol=_float32_tolerance(ref, 4, 144))


@pytest.mark.parametrize("padding", ["same", "valid"])
def test_transposed_convolution(tmp_path, padding):
    keras.utils.set_random_seed(13)
    model = keras.Sequential([keras.Input((5, 6, 3)),
                              keras.layers.Conv2DTranspose(4, 3, strides=2, padding=padding, activation="relu"),
                              keras.layers.Conv2DTranspose(2, (2, 3), strides=(1, 2), padding=padding)])
    graph, report = from_tensorflow(model)
    assert not report.unsupported and graph.op_counts()["Transpose"] == 2, graph.op_counts()
    x = np.random.default_rng(14).standard_normal((2, 5, 6, 3)).astype(np.float32)
    ref = model(x, training=False).numpy()
    # Each output sums at most (3 / 2)^2 * 3 terms, then 2 * 3 * 4.
    np.testing.assert_allclose(_run(graph, tmp_path, x), ref, rtol=0, atol=_float32_tolerance(ref, 2, 27))


def test_shape_and_indexing_ops(tmp_path):
    """Ops of shape computations and indexing, with a free batch, against TensorFlow."""
    @tf.function(input_signature=[tf.TensorSpec([None, 6, 4], tf.float32), tf.TensorSpec([None, 3], tf.int32)])
    def misc(x, idx):
        n = tf.shape(x)[0]
        picked = tf.gather(x, idx[0], axis=1)  # [N, 3, 4]
        first, rest = tf.split(x, [2, -1], axis=1)
        rows = tf.unstack(first, axis=1)
        stacked = tf.stack([rows[1], rows[0]], axis=-1)  # [N, 4, 2]
        sliced = tf.slice(rest, [0, 1, 0], [-1, 2, 3])  # [N, 2, 3]
        shrunk = x[:, -1, 1:3]  # [N, 2]
        steps = tf.range(0, 4, 1, dtype=tf.float32)
        filled = tf.fill(tf.stack([n, 4]), 0.5) + steps
        tiled = tf.tile(tf.expand_dims(shrunk, 1), [1, 3, 1])  # [N, 3, 2]
        chosen = tf.where(picked > 0, picked, tf.zeros_like(picked) - 1.0)
        moved = tf.transpose(chosen, [0, 2, 1])  # [N, 4, 3]
        best = tf.argmax(moved, axis=2, output_type=tf.int32)
        total = tf.reduce_sum(tf.squeeze(tf.reshape(sliced, [n, 1, 6]), axis=1), axis=-1)
        counts = tf.cast(tf.reduce_sum(tf.cast(x > 0, tf.int32), axis=[1, 2]), tf.float32)
        mixed = tf.reduce_prod(stacked, axis=-1) * filled
        return {"best": best, "total": total + counts, "mixed": mixed, "tiled": tf.math.floordiv(tiled, 0.3)}

    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2
    concrete = misc.get_concrete_function()
    graph_def = convert_variables_to_constants_v2(concrete).graph.as_graph_def()
    graph, report = from_tensorflow(graph_def)
    assert not report.unsupported, report
    rng = np.random.default_rng(12)
    x = rng.standard_normal((3, 6, 4)).astype(np.float32)
    idx = rng.integers(0, 4, (3, 3)).astype(np.int32)
    ref = misc(x, idx)
    names = [i.name for i in graph.inputs]
    got = _run(graph, tmp_path, *[{"x": x, "idx": idx}[n] for n in names])
    # A .pb's outputs are its Identity ops, in the order of the function's (sorted) output keys.
    for key, value in zip(sorted(ref), got):
        expected = ref[key].numpy()
        assert value.dtype == expected.dtype and value.shape == expected.shape, key
        np.testing.assert_allclose(value, expected, rtol=4 * U32, atol=0, err_msg=key)


def test_unsupported_op_is_named(tmp_path):
    @tf.function(input_signature=[tf.TensorSpec([2, 5], tf.float32)])
    def cumulative(x):
        return tf.math.cumsum(x, axis=1) * 2.0
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2
    graph_def = convert_variables_to_constants_v2(cumulative.get_concrete_function()).graph.as_graph_def()
    _, report = from_tensorflow(graph_def)
    assert "TF::Cumsum" in report.unsupported and report.unsupported["TF::Cumsum"]
    with pytest.raises(ValueError, match="Cumsum"):
        from_tensorflow(graph_def, str(tmp_path / "out.mnnpy"))


def test_bad_sources_raise_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such TensorFlow model"):
        from_tensorflow(str(tmp_path / "missing.pb"))
    with pytest.raises(TypeError, match="from_tensorflow takes"):
        from_tensorflow(42)
    with pytest.raises(ValueError, match="not a SavedModel"):
        from_tensorflow(str(tmp_path))
    junk = tmp_path / "junk.pb"
    junk.write_bytes(b"\xff\xff not a protobuf \x00")
    with pytest.raises(ValueError, match="frozen GraphDef"):
        from_tensorflow(str(junk))
    bare = tf.Module()
    bare.weight = tf.Variable([1.0, 2.0])
    tf.saved_model.save(bare, str(tmp_path / "bare"))
    with pytest.raises(ValueError, match="no signatures"):
        from_tensorflow(str(tmp_path / "bare"))
    with tf.Graph().as_default() as unfrozen:
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        tf.identity(x * tf.compat.v1.Variable([3.0, 4.0], use_resource=False), name="y")
    with pytest.raises(ValueError, match="holds variables"):
        from_tensorflow(unfrozen.as_graph_def())
    bad_keras = tmp_path / "bad.keras"
    bad_keras.write_bytes(b"not a zip file")
    with pytest.raises(ValueError, match="Keras"):
        from_tensorflow(str(bad_keras))


# ------------------------------------------------------------------ layout passes
def _graph(nodes, weights, inputs, outputs):
    return Graph(nodes, weights, [ValueInfo(n, "float32", list(s)) for n, s in inputs],
                 [ValueInfo(n, "float32", None) for n in outputs])


def test_transposes_sink_through_elementwise_pad_concat_and_reduce(tmp_path):
    rng = np.random.default_rng(10)
    x = rng.standard_normal((2, 4, 3, 5)).astype(np.float32)  # NCHW
    bias = rng.standard_normal(4).astype(np.float32)
    pads = np.array([0, 1, 0, 0, 0, 2, 1, 0], np.int64)  # NHWC pads: H before, H and W after
    nodes = [Node("Transpose", ["x"], ["t"], {"perm": [0, 2, 3, 1]}, "to_nhwc"),
             Node("Relu", ["t"], ["r"], {}, "relu"),
             Node("Add", ["r", "bias"], ["a"], {}, "add"),
             Node("Mul", ["a", "t"], ["m"], {}, "mul"),
             Node("Pad", ["m", "pads"], ["p"], {"mode": "constant"}, "pad"),
             Node("Concat", ["p", "p"], ["c"], {"axis": 3}, "concat"),
             Node("ReduceMean", ["c"], ["mean"], {"axes": [1, 2], "keepdims": 0}, "mean"),
             Node("ReduceMax", ["c"], ["peak"], {"axes": [3], "keepdims": 0}, "peak"),
             Node("Transpose", ["c"], ["back"], {"perm": [0, 3, 1, 2]}, "to_nchw")]
    graph = _graph(nodes, {"bias": bias, "pads": pads}, [("x", x.shape)], ["mean", "peak", "back"])
    assert sink_transposes(graph) > 0
    counts = graph.op_counts()
    # Every op now runs on the NCHW tensor; the last transpose cancelled the first.
    assert "Transpose" not in counts and counts["Identity"] == 1, counts
    t = x.transpose(0, 2, 3, 1)
    m = (np.maximum(t, 0) + bias) * t
    p = np.pad(m, [(0, 0), (1, 2), (0, 1), (0, 0)])
    c = np.concatenate([p, p], 3)
    got = _run(graph, tmp_path, x)
    np.testing.assert_allclose(got[0], c.mean((1, 2)), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(got[1], c.max(3))
    np.testing.assert_array_equal(got[2], c.transpose(0, 3, 1, 2))


def test_channel_affine_and_pads_fold_into_conv(tmp_path):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((1, 3, 6, 7)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    scale = rng.uniform(0.5, 1.5, (1, 4, 1, 1)).astype(np.float32)
    shift = rng.standard_normal(4).astype(np.float32).reshape(4, 1, 1)
    nodes = [Node("Pad", ["x", "pads"], ["p"], {"mode": "constant"}, "pad"),
             Node("Conv", ["p", "w", "b"], ["y"], {"pads": [0, 0, 0, 0]}, "conv"),
             Node("Mul", ["y", "scale"], ["s"], {}, "scale"),
             Node("Sub", ["s", "shift"], ["out"], {}, "shift")]
    weights = {"w": w, "b": b, "scale": scale, "shift": shift,
               "pads": np.array([0, 0, 1, 2, 0, 0, 2, 0], np.int64)}
    graph = _graph(nodes, weights, [("x", x.shape)], ["out"])
    assert fold_channel_affine(graph) == 2 and fold_pads_into_conv(graph) == 1
    assert graph.op_counts() == {"Conv": 1} and graph.nodes[0].attrs["pads"] == [1, 2, 2, 0]
    import torch
    ref = torch.nn.functional.conv2d(torch.from_numpy(np.pad(x, [(0, 0), (0, 0), (1, 2), (2, 0)])),
                                     torch.from_numpy(w), torch.from_numpy(b)).numpy() * scale - shift
    np.testing.assert_allclose(_run(graph, tmp_path, x), ref, rtol=0, atol=_float32_tolerance(ref, 2, 27))


def test_flatten_of_a_transposed_one_by_one_map_reads_the_source(tmp_path):
    """Flatten of an NHWC [N, 1, 1, C] view (by its Shape) needs no transpose of the NCHW map."""
    x = np.random.default_rng(15).standard_normal((2, 5, 1, 1)).astype(np.float32)
    nodes = [Node("Transpose", ["x"], ["t"], {"perm": [0, 2, 3, 1]}, "to_nhwc"),
             Node("Shape", ["t"], ["shape"], {}, "shape"),
             Node("Gather", ["shape", "zero"], ["n"], {"axis": 0}, "batch"),
             Node("Concat", ["n", "minus_one"], ["target"], {"axis": 0}, "target"),
             Node("Reshape", ["t", "target"], ["flat"], {}, "flatten")]
    weights = {"zero": np.array([0], np.int64), "minus_one": np.array([-1], np.int64)}
    graph = _graph(nodes, weights, [("x", x.shape)], ["flat", "shape"])
    sink_transposes(graph, {"t": [None, 1, 1, 5]})
    assert "Transpose" not in graph.op_counts(), graph.op_counts()
    flat, shape = _run(graph, tmp_path, x)
    np.testing.assert_array_equal(flat, x.transpose(0, 2, 3, 1).reshape(2, -1))
    np.testing.assert_array_equal(shape, [2, 1, 1, 5])
