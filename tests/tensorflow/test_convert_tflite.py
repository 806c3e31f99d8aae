"""convert.from_tflite against LiteRT: Keras models converted here with TensorFlow's
TFLiteConverter as float32, float16 (weights) and full-integer int8 files, run by both on the
same seeded inputs. The converted files are made once per test session."""
import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")
litert = pytest.importorskip("ai_edge_litert.interpreter")

from mnnpy import nn  # noqa: E402
from mnnpy.convert import from_tflite  # noqa: E402
from mnnpy.nn import _ConvertedModule  # noqa: E402

VARIANTS = ("float32", "float16", "int8")
CALIBRATION_SAMPLES = 8
EPS32 = np.finfo(np.float32).eps


# ------------------------------------------------------------------ models
def _small_cnn():
    i = keras.Input((32, 32, 3))
    x = keras.layers.Conv2D(8, 3, padding="same", activation="relu")(i)
    x = keras.layers.DepthwiseConv2D(3, strides=2, padding="same", activation="relu6")(x)
    x = keras.layers.MaxPooling2D(2)(x)
    x = keras.layers.Conv2D(16, 3, strides=2, padding="valid")(x)
    x = keras.layers.AveragePooling2D(2, padding="same")(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    return keras.Model(i, keras.layers.Dense(10, activation="softmax")(x))


def _mobilenet_v2():
    return keras.applications.MobileNetV2(input_shape=(96, 96, 3), alpha=0.35, weights=None,
                                          classifier_activation=None)


def _mobilenet_v3():
    return keras.applications.MobileNetV3Small(input_shape=(96, 96, 3), weights=None, classifier_activation=None)


def _transformer_block():
    i = keras.Input((16, 32))
    a = keras.layers.MultiHeadAttention(num_heads=4, key_dim=8)(i, i)
    x = keras.layers.LayerNormalization()(i + a)
    f = keras.layers.Dense(64, activation="relu")(x)
    x = keras.layers.LayerNormalization()(x + keras.layers.Dense(32)(f))
    return keras.Model(i, x)


def _operator_mix():
    """The operators the four models above do not use, each once: a transposed convolution,
    PReLU, nearest and bilinear resizing, padding and cropping, concatenation, gather,
    transpose, leaky ReLU, tanh and sigmoid."""
    i = keras.Input((16, 16, 4))
    a = keras.layers.Conv2DTranspose(6, 3, strides=2, padding="same")(i)
    a = keras.layers.PReLU(shared_axes=[1, 2], alpha_initializer=keras.initializers.RandomUniform(0.1, 0.3))(a)
    a = keras.layers.AveragePooling2D(2)(a)
    b = keras.layers.MaxPooling2D(2)(keras.layers.Resizing(32, 32, interpolation="nearest")(i))
    c = keras.layers.UpSampling2D(2, interpolation="bilinear")(keras.layers.Resizing(8, 8)(i))
    d = keras.layers.ZeroPadding2D(((1, 0), (0, 1)))(keras.layers.LeakyReLU(0.2)(i))
    d = keras.layers.Cropping2D(((0, 1), (1, 0)))(d)
    x = keras.layers.Activation("tanh")(keras.layers.Concatenate()([a, b, c, d]))
    x = keras.layers.Lambda(lambda t: tf.gather(t, [3, 1, 0, 2, 5, 17], axis=-1))(x)
    x = keras.layers.Reshape((6, 256))(keras.layers.Permute((3, 1, 2))(x))
    return keras.Model(i, keras.layers.Activation("sigmoid")(keras.layers.Dense(8)(x)))


def _randomize(model, seed):
    """Weights that keep activations of order 1 through a deep network (Keras' defaults with
    untrained batch norms shrink them towards zero layer by layer): He-normal kernels and
    batch norms with spread statistics, so that every layer's arithmetic shows in the output."""
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        values = []
        for w in layer.weights:
            v, name = w.numpy(), w.name
            if name == "depthwise_kernel":
                v = rng.standard_normal(v.shape) * np.sqrt(2.0 / (v.shape[0] * v.shape[1]))
            elif name == "kernel":
                v = rng.standard_normal(v.shape) * np.sqrt(2.0 / np.prod(v.shape[:-1]))
            elif name == "gamma":
                v = rng.uniform(0.5, 1.5, v.shape)
            elif name in ("beta", "bias", "moving_mean"):
                v = rng.normal(0.0, 0.1, v.shape)
            elif name == "moving_variance":
                v = rng.uniform(0.5, 1.5, v.shape)
            values.append(np.asarray(v, np.float32))
        if values:
            layer.set_weights(values)


def _normal_inputs(shape, rng):
    return rng.standard_normal(shape).astype(np.float32)


def _pixel_inputs(shape, rng):  # MobileNetV3 rescales 0..255 pixels itself
    return rng.uniform(0.0, 255.0, shape).astype(np.float32)


MODELS = {
    "small_cnn": (_small_cnn, _normal_inputs, False),
    "mobilenet_v2": (_mobilenet_v2, _normal_inputs, True),
    "mobilenet_v3_small": (_mobilenet_v3, _pixel_inputs, True),
    "transformer_block": (_transformer_block, _normal_inputs, False),
    "operator_mix": (_operator_mix, _normal_inputs, False),
}


def _convert(saved_model, input_shape, variant, make_inputs):
    converter = tf.lite.TFLiteConverter.from_saved_model(saved_model)
    if variant == "float16":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.target_spec.supported_types = [tf.float16]
    elif variant == "int8":
        def calibration():
            rng = np.random.default_rng(1)
            for _ in range(CALIBRATION_SAMPLES):
                yield [make_inputs(input_shape, rng)]
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = calibration
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        converter.inference_input_type = tf.int8
        converter.inference_output_type = tf.int8
    return converter.convert()


@pytest.fixture(scope="session")
def tflite_files(tmp_path_factory):
    """(model, variant) -> path of the .tflite file, converted on first use. Each Keras model is
    exported once as a SavedModel (what TFLiteConverter.from_keras_model does on every call,
    most of its time) and converted from there into each variant."""
    root = tmp_path_factory.mktemp("tflite")
    cache = {}

    def get(name, variant):
        if (name, variant) not in cache:
            build, make_inputs, randomize = MODELS[name]
            if name not in cache:
                keras.utils.set_random_seed(0)
                model = build()
                if randomize:
                    _randomize(model, 0)
                model.export(str(root / name), format="tf_saved_model", verbose=False)
                cache[name] = (str(root / name), (1,) + tuple(model.input_shape[1:]))
            path = root / f"{name}_{variant}.tflite"
            path.write_bytes(_convert(*cache[name], variant, make_inputs))
            cache[name, variant] = str(path)
        return cache[name, variant]
    return get


# ------------------------------------------------------------------ running both
def _litert(path, x):
    interpreter = litert.Interpreter(model_path=path)
    interpreter.allocate_tensors()
    inp, out = interpreter.get_input_details()[0], interpreter.get_output_details()[0]
    interpreter.set_tensor(inp["index"], x)
    interpreter.invoke()
    return interpreter.get_tensor(out["index"]), out


def _input_for(path, name, seed):
    interpreter = litert.Interpreter(model_path=path)
    detail = interpreter.get_input_details()[0]
    x = MODELS[name][1](tuple(detail["shape"]), np.random.default_rng(seed))
    if detail["dtype"] == np.int8:
        scale, zero = detail["quantization"]
        x = np.clip(np.round(x / scale) + zero, -128, 127).astype(np.int8)
    return x


def _ours(graph, x):
    module = _ConvertedModule(graph, graph.weights, None, None, True, 0, True, None, None)
    return module.forward(x).read()


# Float32 (and float16-weight) models: LiteRT's kernels (XNNPACK) and mnnpy's sum each output
# of a convolution or matmul in another order (blocked, Winograd or direct); each sum of K
# products differs by about sqrt(K) * eps relative to its magnitude, and the differences of the
# up to ~60 layers add. K <= 1000 here: 60 * 32 * eps ~ 2.3e-4 of the output's magnitude.
FLOAT_RTOL = 60 * 32 * EPS32


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name", list(MODELS))
def test_model_matches_litert(tflite_files, name, variant):
    path = tflite_files(name, variant)
    graph, report = from_tflite(path)
    assert not report.unsupported
    assert graph.inputs[0].dtype == ("int8" if variant == "int8" else "float32")
    for seed in (0, 1):
        x = _input_for(path, name, seed)
        ref, detail = _litert(path, x)
        ours = _ours(graph, x)
        assert ours.shape == ref.shape and ours.dtype == ref.dtype
        if variant != "int8":
            magnitude = np.abs(ref).max()
            assert magnitude > 1e-3  # the model's arithmetic shows in the output
            np.testing.assert_allclose(ours, ref, rtol=0, atol=FLOAT_RTOL * magnitude)
            continue
        # int8: LiteRT computes every layer in integers and rounds each intermediate tensor to
        # its own int8 step; mnnpy computes the layers in float32 and rounds only the output.
        # The roundings of the intermediate tensors (half a step each, of their own scale) reach
        # the output as a few steps of its scale: differences stay within INT8_STEPS (more for
        # the deeper and the normalizing models), and average under one step.
        diff = np.abs(ours.astype(np.int32) - ref.astype(np.int32))
        assert diff.max() <= INT8_STEPS[name], (name, diff.max())
        assert diff.mean() <= 1.0, (name, diff.mean())


INT8_STEPS = {"small_cnn": 3, "mobilenet_v2": 8, "mobilenet_v3_small": 8, "transformer_block": 8,
              "operator_mix": 4}


def _tf_operators():
    """TensorFlow operations without Keras layers, each becoming its TFLite operator."""
    rng = np.random.default_rng(7)
    w = tf.constant(rng.standard_normal((3, 3, 8, 8)).astype(np.float32) * 0.2)

    @tf.function(input_signature=[tf.TensorSpec((1, 8, 8, 8), tf.float32)])
    def run(x):
        y = tf.nn.conv2d(x, w, 1, "SAME", dilations=2)
        d2s = tf.nn.space_to_depth(tf.nn.depth_to_space(y, 2), 2) - y * 0.5
        mirrored = tf.pad(d2s, [[0, 0], [1, 2], [2, 1], [0, 0]], mode="REFLECT")[:, 1:9, 2:10, :]
        symmetric = tf.pad(x, [[0, 0], [1, 0], [0, 1], [0, 0]], mode="SYMMETRIC")[:, :8, 1:, :]
        up = tf.compat.v1.image.resize_bilinear(mirrored, (12, 12), align_corners=True)
        near = tf.compat.v1.image.resize_nearest_neighbor(symmetric, (12, 12), align_corners=True)
        a, b = tf.split(up + near, 2, axis=-1)
        rows = tf.unstack(tf.reduce_max(a, axis=[1], keepdims=False) * tf.math.rsqrt(tf.abs(b[:, 0]) + 1.0), axis=1)
        attn = tf.linalg.matmul(rows[0], rows[1], transpose_a=True)
        picked = tf.squeeze(tf.strided_slice(attn, [0, 1], [0, 4], [1, 1], shrink_axis_mask=1))
        index = tf.cast(tf.argmax(attn, axis=1), tf.float32)
        return tf.concat([tf.reshape(picked, [-1]), index, tf.reshape(tf.maximum(attn, 0.1), [-1])], 0)
    return run.get_concrete_function()


def test_tf_operators_match_litert(tmp_path):
    path = tmp_path / "tf_ops.tflite"
    path.write_bytes(tf.lite.TFLiteConverter.from_concrete_functions([_tf_operators()]).convert())
    graph, report = from_tflite(str(path))
    assert not report.unsupported
    x = np.random.default_rng(0).standard_normal((1, 8, 8, 8)).astype(np.float32)
    ref, _ = _litert(str(path), x)
    np.testing.assert_allclose(_ours(graph, x), ref, rtol=0, atol=FLOAT_RTOL * np.abs(ref).max())


# ------------------------------------------------------------------ files, options, errors
def test_model_file_and_fp16_weights(tflite_files, tmp_path):
    path = tflite_files("small_cnn", "float32")
    x = _input_for(path, "small_cnn", 0)
    ref, _ = _litert(path, x)
    out = tmp_path / "small_cnn.mnnpy"
    _, report = from_tflite(path, str(out))
    assert report.file_bytes == out.stat().st_size > 0
    loaded = nn.load_module_from_file(str(out)).forward(x).read()
    np.testing.assert_allclose(loaded, ref, rtol=0, atol=FLOAT_RTOL * np.abs(ref).max())
    # float16 weights: each weight is rounded to 11 significant bits (relative 2^-11); the
    # roundings of a layer's sum partly cancel, and the 4 layers add theirs.
    graph, _ = from_tflite(open(path, "rb").read(), fp16=True)
    assert {w.dtype for w in graph.weights.values() if w.dtype.kind == "f"} == {np.dtype(np.float16)}
    np.testing.assert_allclose(_ours(graph, x), ref, rtol=0, atol=4 * 2.0 ** -11 * np.abs(ref).max())


def test_nhwc_borders_only(tflite_files):
    """One transpose into NCHW after the input; the convolutions, pools and residual adds
    between run NCHW without transposes around each."""
    graph, report = from_tflite(tflite_files("mobilenet_v2", "float32"))
    assert report.ops_after.get("Transpose") == 1
    assert report.ops_after["Conv"] == 52


def test_shape_arithmetic_is_folded(tflite_files):
    """The transformer's SHAPE -> GATHER -> REDUCE_PROD -> PACK chains ahead of its reshapes are
    computed when the file is read: only the model's own operators are left."""
    _, report = from_tflite(tflite_files("transformer_block", "float32"))
    assert not {"Gather", "MNN.Pack", "Concat", "Shape"} & set(report.ops_after), report.ops_after
    assert report.ops_after["Gemm"] == 6 and report.ops_after["MNN.MatMul"] == 2


def test_unsupported_operator_is_reported(tmp_path):
    fn = tf.function(lambda x: tf.math.cumsum(x, axis=1) * 2.0,
                     input_signature=[tf.TensorSpec((2, 5), tf.float32)]).get_concrete_function()
    path = tmp_path / "cumsum.tflite"
    path.write_bytes(tf.lite.TFLiteConverter.from_concrete_functions([fn]).convert())
    graph, report = from_tflite(str(path))
    assert list(report.unsupported) == ["TFLite::CUMSUM"]
    with pytest.raises(ValueError, match="CUMSUM"):
        from_tflite(str(path), str(tmp_path / "cumsum.mnnpy"))


def test_not_a_tflite_file(tmp_path):
    with pytest.raises(ValueError, match="not a valid TFLite model file"):
        from_tflite(b"\x00" * 64)
    with pytest.raises(FileNotFoundError):
        from_tflite(str(tmp_path / "missing.tflite"))
    with pytest.raises(TypeError):
        from_tflite(3)


def test_damaged_files_raise_value_error(tflite_files):
    """Truncated files and files with bytes changed are refused with ValueError, or read (a
    change in weights), never crash; what reads must still build or refuse cleanly."""
    data = open(tflite_files("small_cnn", "int8"), "rb").read()
    for length in (8, 100, len(data) // 2, len(data) - 1):
        with pytest.raises(ValueError):
            from_tflite(data[:length])
    rng = np.random.default_rng(5)
    x = _input_for(tflite_files("small_cnn", "int8"), "small_cnn", 0)
    outcomes = {"refused": 0, "read": 0}
    for _ in range(150):
        damaged = bytearray(data)
        for pos in rng.integers(8, len(data), 4):
            damaged[pos] = int(rng.integers(0, 256))
        try:
            graph, report = from_tflite(bytes(damaged))
        except ValueError as e:
            assert "TFLite" in str(e) or "node" in str(e) or "operator" in str(e), str(e)
            outcomes["refused"] += 1
            continue
        outcomes["read"] += 1
        if report.unsupported:
            continue
        try:
            _ours(graph, x)
        except (ValueError, TypeError) as e:
            assert str(e)
        except MemoryError as e:
            assert "allocate" in str(e)
    assert outcomes["refused"] > 0 and outcomes["read"] > 0


def test_command_line_and_load_module_read_tflite_files(tflite_files, tmp_path):
    """`python -m mnnpy convert` and nn.load_module_from_file know a .tflite file by its name
    and by its contents (the TFL3 identifier)."""
    import shutil
    import subprocess
    import sys

    from mnnpy import nn
    path = tflite_files("small_cnn", "float32")
    x = _input_for(path, "small_cnn", 0)
    expected = _ours(from_tflite(path)[0], x)
    out = subprocess.run([sys.executable, "-m", "mnnpy", "convert", path, str(tmp_path / "cnn.mnnpy")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    np.testing.assert_array_equal(nn.load_module_from_file(str(tmp_path / "cnn.mnnpy")).forward(x).numpy(), expected)
    renamed = tmp_path / "cnn.model"
    shutil.copy(path, renamed)
    np.testing.assert_array_equal(nn.load_module_from_file(str(renamed)).forward(x).numpy(), expected)
