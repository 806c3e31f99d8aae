"""ONNX quantization, normalization, sampling, signal and selection operators against
onnxruntime (NumPy's FFT for DFT): random inputs over the attribute variants, and bad input."""
import functools

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import helper as h  # noqa: E402
from onnx import numpy_helper  # noqa: E402

import onnx_testing  # noqa: E402
from onnx_testing import run_mnnpy, run_onnxruntime  # noqa: E402

make_model = functools.partial(onnx_testing.make_model, opset=21)  # the opset unless a test names one


def check(model, inputs, rtol=1e-5, atol=1e-6):
    """mnnpy's outputs against onnxruntime's: integers exactly, floats within the tolerances."""
    expected = run_onnxruntime(model, inputs)
    got = run_mnnpy(model, inputs)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, g.dtype, e.shape, e.dtype)
        if e.dtype.kind == "f":
            np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(g, e)
    return got


# ------------------------------------------------------------------ quantization

@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("layout", ["tensor", "axis", "blocked"])
def test_quantize_dequantize_round_trip(rng, dtype, layout):
    x = rng.uniform(-4, 4, (4, 6, 8)).astype(np.float32)
    info = np.iinfo(dtype)
    attrs = {}
    if layout == "tensor":
        scale, zero = np.float32(0.03), np.array(info.min // 2 + 7 if info.min else 120, dtype)
    elif layout == "axis":
        scale = rng.uniform(0.01, 0.05, 6).astype(np.float32)
        zero = rng.integers(info.min // 2, info.max // 2, 6).astype(dtype)
        attrs = {"axis": 1}
    else:
        scale = rng.uniform(0.01, 0.05, (4, 6, 2)).astype(np.float32)
        zero = rng.integers(info.min // 2, info.max // 2, (4, 6, 2)).astype(dtype)
        attrs = {"axis": 2, "block_size": 4}
    # Values landing exactly on .5 after division round half to even in both engines.
    x[0, 0, :2] = np.float32(scale if np.ndim(scale) == 0 else 0.0) * np.float32(2.5)
    weights = {"scale": np.asarray(scale), "zero": np.asarray(zero)}
    q = make_model(h.make_node("QuantizeLinear", ["x", "scale", "zero"], ["q"], **attrs), {"x": x}, ["q"], weights)
    (quantized,) = check(q, {"x": x})
    assert quantized.min() >= info.min and quantized.max() <= info.max
    d = make_model(h.make_node("DequantizeLinear", ["q", "scale", "zero"], ["y"], **attrs), {"q": quantized}, ["y"],
                   weights)
    check(d, {"q": quantized}, rtol=1e-6, atol=0)


def test_quantize_saturates_and_defaults_to_uint8(rng):
    x = rng.uniform(-50, 50, (64,)).astype(np.float32)
    model = make_model(h.make_node("QuantizeLinear", ["x", "scale"], ["q"]), {"x": x}, ["q"],
                       {"scale": np.array(0.1, np.float32)})
    (q,) = check(model, {"x": x})
    assert q.dtype == np.uint8 and (q == 0).any() and (q == 255).any()


@pytest.mark.parametrize("spread", ["mixed", "positive", "zeros"])
def test_dynamic_quantize_linear(rng, spread):
    x = {"mixed": rng.uniform(-3, 5, (7, 9)), "positive": rng.uniform(0.5, 2, (7, 9)),
         "zeros": np.zeros((7, 9))}[spread].astype(np.float32)
    check(make_model(h.make_node("DynamicQuantizeLinear", ["x"], ["y", "scale", "zero"]), {"x": x},
                     ["y", "scale", "zero"]), {"x": x})


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_matmul_integer_with_row_and_column_zero_points(rng, dtype):
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max + 1, (2, 5, 300)).astype(dtype)
    b = rng.integers(info.min, info.max + 1, (300, 7)).astype(dtype)
    # A row and a column of extreme values against opposite zero points: the int32 sums pass
    # float32's exact range. (onnxruntime takes only a scalar zero point for A.)
    a[0, 0, :] = info.min
    b[:, 0] = info.min
    zb = rng.integers(info.min, info.max + 1, (7,)).astype(dtype)
    zb[0] = info.max
    zeros = {"za": np.array(info.max, dtype), "zb": zb}
    model = make_model(h.make_node("MatMulInteger", ["a", "b", "za", "zb"], ["y"]), {"a": a, "b": b}, ["y"], zeros)
    (y,) = check(model, {"a": a, "b": b})
    assert np.abs(y).max() > 2 ** 24


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_qlinear_matmul(rng, dtype):
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max + 1, (3, 4, 96)).astype(dtype)
    b = rng.integers(info.min, info.max + 1, (96, 5)).astype(dtype)
    weights = {"sa": np.array(0.02, np.float32), "za": np.array(3, dtype), "sb": np.array(0.01, np.float32),
               "zb": np.array(info.min // 4 + 40, dtype), "sy": np.array(0.6, np.float32),
               "zy": np.array(info.max // 2, dtype)}
    node = h.make_node("QLinearMatMul", ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"], ["y"])
    check(make_model(node, {"a": a, "b": b}, ["y"], weights), {"a": a, "b": b})


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("depth", [64, 258, 259, 700])
@pytest.mark.parametrize("rows, columns, b_batch", [(6, 5, (2, 3)), (40, 37, (1, 3))])
def test_batched_integer_matmuls_are_exact(rng, dtype, depth, rows, columns, b_batch):
    """A batched B (attention's products) on the int8 GEMM, one pack of B per product: extreme
    values against opposite zero points reach the largest sums. 40 rows: AMX's tiles where the
    CPU has them; a B of one batch for A's two: broadcast."""
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max + 1, (2, 3, rows, depth)).astype(dtype)
    b = rng.integers(info.min, info.max + 1, b_batch + (depth, columns)).astype(dtype)
    a[0, 0, 0, :] = info.min
    b[0, 0, :, 0] = info.min
    zeros = {"za": np.array(info.max, dtype), "zb": np.array(info.max, dtype)}
    model = make_model(h.make_node("MatMulInteger", ["a", "b", "za", "zb"], ["y"]), {"a": a, "b": b}, ["y"], zeros)
    (y,) = check(model, {"a": a, "b": b})
    assert np.abs(y).max() == depth * 255 * 255
    weights = {"sa": np.array(0.02, np.float32), "za": np.array(3, dtype), "sb": np.array(0.01, np.float32),
               "zb": np.array(info.min // 4 + 40, dtype), "sy": np.array(0.003 * depth, np.float32),
               "zy": np.array(info.max // 2, dtype)}
    node = h.make_node("QLinearMatMul", ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"], ["y"])
    check(make_model(node, {"a": a, "b": b}, ["y"], weights), {"a": a, "b": b})


@pytest.mark.parametrize("a_dtype", [np.int8, np.uint8])
def test_qlinear_matmul_constant_b_per_column(rng, a_dtype):
    """A constant int8 B with per-column scales and zero points: the int8 GEMM's 8-bit epilogue."""
    info = np.iinfo(a_dtype)
    a = rng.integers(info.min, info.max + 1, (2, 7, 200)).astype(a_dtype)
    b = rng.integers(-64, 64, (200, 40)).astype(np.int8)
    weights = {"sa": np.array(0.02, np.float32), "za": np.array(info.min + 100, a_dtype), "b": b,
               "sb": rng.uniform(0.002, 0.01, 40).astype(np.float32), "zb": np.zeros(40, np.int8),
               "sy": np.array(0.3, np.float32), "zy": np.array(info.max // 2, a_dtype)}
    node = h.make_node("QLinearMatMul", ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"], ["y"])
    (y,) = check(make_model(node, {"a": a}, ["y"], weights), {"a": a})
    assert len(np.unique(y)) > 20


@pytest.mark.parametrize("group", [1, 2])
def test_conv_integer_is_exact(rng, group):
    # 64 channels x 3 x 3 = 576 products per output (per group: 288) of up to 255 * 255 each:
    # beyond float32's exact range, so this checks the split into exact pieces.
    x = rng.integers(0, 256, (1, 64, 9, 9)).astype(np.uint8)
    w = rng.integers(0, 256, (8, 64 // group, 3, 3)).astype(np.uint8)
    x[0, :, :3, :3] = 255
    w[0] = 0
    node = h.make_node("ConvInteger", ["x", "w", "zx", "zw"], ["y"], pads=[1, 1, 1, 1], strides=[2, 1], group=group)
    model = make_model(node, {"x": x, "w": w}, ["y"], {"zx": np.array(0, np.uint8), "zw": np.array(255, np.uint8)})
    (y,) = check(model, {"x": x, "w": w})
    assert group == 2 or np.abs(y).max() > 2 ** 24


@pytest.mark.parametrize("per_channel", [False, True])
def test_qlinear_conv(rng, per_channel):
    x = rng.integers(0, 256, (2, 16, 10, 10)).astype(np.uint8)
    # 7-bit weights: onnxruntime's uint8 x int8 kernels on AVX2 saturate pairs of products in
    # int16 otherwise (its quantizer's reduce_range exists for this); mnnpy is exact either way.
    w = rng.integers(-64, 64, (12, 16, 3, 3)).astype(np.int8)
    w_scale = rng.uniform(0.002, 0.01, 12).astype(np.float32) if per_channel else np.array(0.005, np.float32)
    weights = {"sx": np.array(0.02, np.float32), "zx": np.array(128, np.uint8), "w": w, "sw": w_scale,
               "zw": np.zeros(12, np.int8) if per_channel else np.array(0, np.int8),
               "sy": np.array(0.05, np.float32), "zy": np.array(100, np.uint8),
               "bias": rng.integers(-2000, 2000, 12).astype(np.int32)}
    node = h.make_node("QLinearConv", ["x", "sx", "zx", "w", "sw", "zw", "sy", "zy", "bias"], ["y"],
                       pads=[1, 0, 1, 0], dilations=[1, 2])
    check(make_model(node, {"x": x}, ["y"], weights), {"x": x})


def test_quantize_refuses_a_wrong_per_axis_scale(rng):
    x = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
    model = make_model(h.make_node("QuantizeLinear", ["x", "scale"], ["q"], axis=1), {"x": x}, ["q"],
                       {"scale": np.ones(4, np.float32)})
    with pytest.raises(ValueError, match="per-axis scale"):
        run_mnnpy(model, {"x": x})


# ------------------------------------------------------------------ normalization and pooling

@pytest.mark.parametrize("size", [1, 3, 5])  # onnxruntime takes odd sizes only
def test_lrn(rng, size):
    x = rng.uniform(-2, 2, (2, 7, 5, 5)).astype(np.float32)
    check(make_model(h.make_node("LRN", ["x"], ["y"], size=size, alpha=2e-3, beta=0.6, bias=1.5), {"x": x}, ["y"]),
          {"x": x})


@pytest.mark.parametrize("axes", [None, [1], [0, 1, 2, 3], [2, 3]])
def test_mean_variance_normalization(rng, axes):
    x = rng.uniform(-2, 5, (2, 3, 6, 4)).astype(np.float32)
    attrs = {} if axes is None else {"axes": axes}
    check(make_model(h.make_node("MeanVarianceNormalization", ["x"], ["y"], **attrs), {"x": x}, ["y"]), {"x": x},
          rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("groups", [1, 2, 6])
def test_group_normalization(rng, groups):
    x = rng.uniform(-2, 5, (2, 6, 5, 3)).astype(np.float32)
    weights = {"scale": rng.uniform(0.5, 2, 6).astype(np.float32), "bias": rng.uniform(-1, 1, 6).astype(np.float32)}
    node = h.make_node("GroupNormalization", ["x", "scale", "bias"], ["y"], num_groups=groups, epsilon=1e-4)
    check(make_model(node, {"x": x}, ["y"], weights), {"x": x}, rtol=1e-5, atol=1e-5)


def test_group_normalization_refuses_groups_that_do_not_divide(rng):
    x = rng.uniform(-1, 1, (1, 6, 2, 2)).astype(np.float32)
    node = h.make_node("GroupNormalization", ["x", "scale", "bias"], ["y"], num_groups=4)
    model = make_model(node, {"x": x}, ["y"], {"scale": np.ones(6, np.float32), "bias": np.zeros(6, np.float32)})
    with pytest.raises(ValueError, match="num_groups 4 must divide"):
        run_mnnpy(model, {"x": x})


@pytest.mark.parametrize("p, attrs", [(2, {"kernel_shape": [3, 3]}), (3, {"kernel_shape": [2, 3], "strides": [2, 1]}),
                                      (1, {"kernel_shape": [3, 3], "pads": [1, 0, 1, 2]}),
                                      (2, {"kernel_shape": [2, 2], "dilations": [2, 2]}),
                                      (2, {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER"}),
                                      (2, {"kernel_shape": [4]}), (3, {"kernel_shape": [2, 3, 2], "pads": [1] * 6})])
def test_lp_pool(rng, p, attrs):
    shape = {1: (2, 3, 9), 2: (2, 3, 9, 8), 3: (1, 2, 5, 6, 4)}[len(attrs["kernel_shape"])]
    x = rng.uniform(-2, 2, shape).astype(np.float32)
    check(make_model(h.make_node("LpPool", ["x"], ["y"], p=p, **attrs), {"x": x}, ["y"], opset=18), {"x": x},
          rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ sampling

@pytest.mark.parametrize("mode", ["linear", "nearest", "cubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_grid_sample_2d(rng, mode, padding, align):
    x = rng.uniform(-1, 1, (2, 3, 7, 9)).astype(np.float32)
    # Points well outside [-1, 1] too, where the padding modes differ.
    grid = rng.uniform(-1.6, 1.6, (2, 5, 6, 2)).astype(np.float32)
    node = h.make_node("GridSample", ["x", "grid"], ["y"], mode=mode, padding_mode=padding, align_corners=align)
    check(make_model(node, {"x": x, "grid": grid}, ["y"], opset=20), {"x": x, "grid": grid}, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ["linear", "nearest"])
def test_grid_sample_3d(rng, mode):
    x = rng.uniform(-1, 1, (1, 2, 4, 5, 6)).astype(np.float32)
    grid = rng.uniform(-1.2, 1.2, (1, 3, 4, 2, 3)).astype(np.float32)
    node = h.make_node("GridSample", ["x", "grid"], ["y"], mode=mode, padding_mode="border")
    check(make_model(node, {"x": x, "grid": grid}, ["y"], opset=20), {"x": x, "grid": grid}, rtol=1e-4, atol=1e-5)


def test_affine_grid_feeds_grid_sample(rng):
    theta = rng.uniform(-1, 1, (2, 2, 3)).astype(np.float32)
    size = np.array([2, 3, 6, 8], np.int64)
    node = h.make_node("AffineGrid", ["theta", "size"], ["grid"], align_corners=0)
    check(make_model(node, {"theta": theta}, ["grid"], {"size": size}, opset=20), {"theta": theta})


def test_grid_sample_refuses_a_grid_of_another_rank(rng):
    x = rng.uniform(-1, 1, (1, 1, 4, 4)).astype(np.float32)
    grid = rng.uniform(-1, 1, (1, 4, 4, 3)).astype(np.float32)
    model = make_model(h.make_node("GridSample", ["x", "grid"], ["y"]), {"x": x, "grid": grid}, ["y"], opset=20)
    with pytest.raises(ValueError, match="grid must be"):
        run_mnnpy(model, {"x": x, "grid": grid})


# ------------------------------------------------------------------ signal

@pytest.mark.parametrize("inverse, onesided, complex_input", [(0, 0, False), (0, 0, True), (0, 1, False),
                                                              (1, 0, True), (1, 1, True)])
@pytest.mark.parametrize("length", [None, 12, 7])
def test_dft_against_numpy(rng, inverse, onesided, complex_input, length):
    n = 10
    if inverse and onesided:
        spectrum = np.fft.rfft(rng.normal(size=(3, n)), axis=1)
        x = np.stack([spectrum.real, spectrum.imag], -1).astype(np.float32)
    elif complex_input:
        x = rng.normal(size=(3, n, 2)).astype(np.float32)
    else:
        x = rng.normal(size=(3, n, 1)).astype(np.float32)
    inputs = ["x", "len" if length else "", "axis"]
    weights = {"axis": np.array(1, np.int64)}
    if length:
        weights["len"] = np.array(length, np.int64)
    model = make_model(h.make_node("DFT", inputs, ["y"], inverse=inverse, onesided=onesided), {"x": x}, ["y"], weights,
                       opset=20)
    (got,) = run_mnnpy(model, {"x": x})
    signal = x[..., 0] + 1j * x[..., 1] if x.shape[-1] == 2 else x[..., 0]
    if inverse and onesided:
        expected = np.fft.irfft(signal, n=length or 2 * (x.shape[1] - 1), axis=1)[..., None]
    else:
        expected = (np.fft.ifft if inverse else np.fft.fft)(signal, n=length, axis=1)
        if onesided:
            expected = expected[:, :expected.shape[1] // 2 + 1]
        expected = np.stack([expected.real, expected.imag], -1)
    # float32 sums of n terms of unit-sized products.
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())


@pytest.mark.parametrize("window", [False, True])
def test_stft(rng, window):
    signal = rng.normal(size=(2, 100, 1)).astype(np.float32)
    inputs, weights = ["signal", "step"], {"step": np.array(7, np.int64)}
    if window:
        inputs.append("window")
        weights["window"] = np.hanning(20).astype(np.float32)
    else:
        inputs += ["", "frame_length"]
        weights["frame_length"] = np.array(16, np.int64)
    check(make_model(h.make_node("STFT", inputs, ["y"]), {"signal": signal}, ["y"], weights, opset=17),
          {"signal": signal}, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("op", ["HannWindow", "HammingWindow", "BlackmanWindow"])
@pytest.mark.parametrize("periodic", [0, 1])
def test_windows(rng, op, periodic):
    size = np.array(rng.integers(5, 40), np.int64)
    node = h.make_node(op, ["size"], ["y"], periodic=periodic)
    graph = h.make_graph([node], "test", [], [h.make_empty_tensor_value_info("y")],
                         initializer=[numpy_helper.from_array(size, "size")])
    check(h.make_model(graph, opset_imports=[h.make_opsetid("", 17)]), {}, atol=1e-6)


# ------------------------------------------------------------------ selection and layout

@pytest.mark.parametrize("op", ["CumProd", "CumSum"])
@pytest.mark.parametrize("exclusive, reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_cumulative(rng, op, exclusive, reverse):
    x = rng.uniform(0.5, 1.5, (3, 6)).astype(np.float32)
    model = make_model(h.make_node(op, ["x", "axis"], ["y"], exclusive=exclusive, reverse=reverse), {"x": x}, ["y"],
                       {"axis": np.array(1, np.int64)}, opset=26 if op == "CumProd" else 21)
    (got,) = run_mnnpy(model, {"x": x})
    y = np.flip(x, 1) if reverse else x
    y = (np.cumprod if op == "CumProd" else np.cumsum)(y, axis=1)
    if exclusive:
        y = np.concatenate([np.full((3, 1), 1.0 if op == "CumProd" else 0.0, np.float32), y[:, :-1]], 1)
    y = np.flip(y, 1) if reverse else y
    np.testing.assert_allclose(got, y, rtol=6 * np.finfo(np.float32).eps)


@pytest.mark.parametrize("shape, axes", [([4, 9], None), ([9, 4], None), ([3, 7], [-2, -1]), ([6], [1])])
def test_center_crop_pad(rng, shape, axes):
    x = rng.uniform(-1, 1, (2, 6, 5)).astype(np.float32)
    attrs = {"axes": axes} if axes else {}
    if axes is None:
        shape = [2] + shape
    node = h.make_node("CenterCropPad", ["x", "shape"], ["y"], **attrs)
    check(make_model(node, {"x": x}, ["y"], {"shape": np.array(shape, np.int64)}, opset=18), {"x": x})


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_compress(rng, axis):
    x = rng.uniform(-1, 1, (5, 4)).astype(np.float32)
    length = x.size if axis is None else x.shape[axis]
    condition = rng.integers(0, 2, length - 1).astype(bool)
    attrs = {} if axis is None else {"axis": axis}
    check(make_model(h.make_node("Compress", ["x", "c"], ["y"], **attrs), {"x": x}, ["y"], {"c": condition}), {"x": x})


def test_reverse_sequence(rng):
    x = rng.uniform(-1, 1, (6, 4, 3)).astype(np.float32)
    lengths = np.array([6, 1, 3, 0], np.int64)
    node = h.make_node("ReverseSequence", ["x", "lengths"], ["y"], batch_axis=1, time_axis=0)
    check(make_model(node, {"x": x, "lengths": lengths}, ["y"]), {"x": x, "lengths": lengths})


@pytest.mark.parametrize("axis, sorted_", [(None, 1), (None, 0), (0, 1), (1, 0)])
def test_unique(rng, axis, sorted_):
    x = rng.integers(0, 4, (6, 3)).astype(np.float32)
    attrs = {"sorted": sorted_} | ({} if axis is None else {"axis": axis})
    node = h.make_node("Unique", ["x"], ["y", "first", "inverse", "counts"], **attrs)
    check(make_model(node, {"x": x}, ["y", "first", "inverse", "counts"]), {"x": x})


def test_det(rng):
    x = rng.normal(size=(3, 2, 4, 4)).astype(np.float32)
    check(make_model(h.make_node("Det", ["x"], ["y"]), {"x": x}, ["y"]), {"x": x}, rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------------ pooling of any rank

POOL_CASES = [
    ((2, 3, 11), {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}),
    ((1, 2, 7, 6, 5), {"kernel_shape": [3, 2, 2], "strides": [2, 1, 2], "pads": [1, 0, 1, 1, 1, 0]}),
    ((1, 2, 9, 8, 7), {"kernel_shape": [2, 3, 2], "dilations": [2, 2, 1], "ceil_mode": 1, "strides": [2, 2, 2]}),
    ((2, 3, 10, 9), {"kernel_shape": [3, 3], "dilations": [2, 1], "pads": [2, 1, 1, 2]}),
    ((2, 3, 10, 9), {"kernel_shape": [3, 2], "strides": [2, 2], "ceil_mode": 1, "pads": [1, 0, 1, 0]}),
]


@pytest.mark.parametrize("shape, attrs", POOL_CASES)
@pytest.mark.parametrize("op, extra", [("MaxPool", {}), ("AveragePool", {"count_include_pad": 0}),
                                       ("AveragePool", {"count_include_pad": 1})])
def test_pooling_of_any_rank(rng, shape, attrs, op, extra):
    x = rng.uniform(-2, 2, shape).astype(np.float32)
    model = make_model(h.make_node(op, ["x"], ["y"], **attrs, **extra), {"x": x}, ["y"], opset=19)
    if op == "AveragePool" and "dilations" in attrs and attrs.get("ceil_mode"):
        # onnxruntime refuses dilated average pooling in ceil mode: the ONNX reference decides.
        from onnx.reference import ReferenceEvaluator
        (expected,) = ReferenceEvaluator(model).run(None, {"x": x})
        np.testing.assert_allclose(run_mnnpy(model, {"x": x})[0], expected, rtol=1e-5, atol=1e-6)
        return
    check(model, {"x": x}, rtol=1e-5, atol=1e-6)


def test_max_pool_of_uint8(rng):
    x = rng.integers(0, 256, (1, 3, 8, 8)).astype(np.uint8)
    check(make_model(h.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]), {"x": x}, ["y"]),
          {"x": x})


@pytest.mark.parametrize("attrs", [{"kernel_shape": [2, 2], "strides": [2, 2]},
                                   {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]},
                                   {"kernel_shape": [3, 2], "storage_order": 1},
                                   {"kernel_shape": [2, 2], "dilations": [2, 2], "ceil_mode": 1, "strides": [2, 2]}])
def test_max_pool_indices(rng, attrs):
    x = rng.permutation(2 * 3 * 9 * 9).astype(np.float32).reshape(2, 3, 9, 9)  # distinct values: one argmax
    check(make_model(h.make_node("MaxPool", ["x"], ["y", "i"], **attrs), {"x": x}, ["y", "i"], opset=12), {"x": x})


# ------------------------------------------------------------------ training-mode and edge cases

def test_batch_normalization_in_training_mode(rng):
    x = rng.uniform(-2, 3, (4, 3, 5, 2)).astype(np.float32)
    weights = {"scale": rng.uniform(0.5, 2, 3).astype(np.float32), "bias": rng.uniform(-1, 1, 3).astype(np.float32),
               "mean": rng.uniform(-1, 1, 3).astype(np.float32), "var": rng.uniform(0.5, 2, 3).astype(np.float32)}
    node = h.make_node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], ["y", "running_mean", "running_var"],
                       training_mode=1, momentum=0.8, epsilon=1e-3)
    from onnx.reference import ReferenceEvaluator
    model = make_model(node, {"x": x}, ["y", "running_mean", "running_var"], weights, opset=15)
    # onnxruntime's CPU provider has no training mode: the ONNX reference is the yardstick.
    for got, expected in zip(run_mnnpy(model, {"x": x}), ReferenceEvaluator(model).run(None, {"x": x})):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin", "ReduceSum", "ReduceProd", "ReduceLogSumExp", "ReduceL2"])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduction_over_an_empty_axis(op, keepdims):
    x = np.zeros((2, 0, 3), np.float32)
    model = make_model(h.make_node(op, ["x", "axes"], ["y"], keepdims=keepdims), {"x": x}, ["y"],
                       {"axes": np.array([1], np.int64)}, opset=18)
    check(model, {"x": x})


def test_half_precision_convolution(rng):
    x = rng.uniform(-1, 1, (1, 4, 9, 9)).astype(np.float16)
    w = rng.uniform(-1, 1, (6, 4, 3, 3)).astype(np.float16)
    model = make_model(h.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1]), {"x": x}, ["y"], {"w": w})
    # float32 sums rounded once to float16 against onnxruntime's float16 arithmetic: within a few
    # half-precision steps of the output's magnitude (36 products of terms below 1).
    check(model, {"x": x}, rtol=4e-3, atol=4e-3)


# ------------------------------------------------------------------ blocks and regions

@pytest.mark.parametrize("image, block, attrs", [([6, 7], [2, 3], {}), ([9, 8], [3, 3], {"strides": [2, 2]}),
                                                 ([7, 7], [2, 2], {"pads": [1, 0, 1, 2], "dilations": [2, 1]}),
                                                 ([3, 4, 5], [2, 2, 2], {})])
def test_col2im_inverts_unfold(rng, image, block, attrs):
    spatial = len(image)
    strides, dilations = attrs.get("strides", [1] * spatial), attrs.get("dilations", [1] * spatial)
    pads = attrs.get("pads", [0] * 2 * spatial)
    grid = [(image[i] + pads[i] + pads[i + spatial] - (block[i] - 1) * dilations[i] - 1) // strides[i] + 1
            for i in range(spatial)]
    x = rng.uniform(-1, 1, (2, 3 * int(np.prod(block)), int(np.prod(grid)))).astype(np.float32)
    model = make_model(h.make_node("Col2Im", ["x", "image", "block"], ["y"], **attrs), {"x": x}, ["y"],
                       {"image": np.array(image, np.int64), "block": np.array(block, np.int64)}, opset=18)
    if spatial == 2:
        check(model, {"x": x}, rtol=1e-5, atol=1e-6)
    else:  # onnxruntime's Col2Im is 2-D only: the ONNX reference decides
        from onnx.reference import ReferenceEvaluator
        (expected,) = ReferenceEvaluator(model).run(None, {"x": x})
        np.testing.assert_allclose(run_mnnpy(model, {"x": x})[0], expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", ["half_pixel", "output_half_pixel"])
@pytest.mark.parametrize("ratio", [0, 2])
def test_roi_align(rng, mode, ratio):
    x = rng.uniform(-1, 1, (2, 3, 12, 10)).astype(np.float32)
    corners = np.sort(rng.uniform(0, 18, (5, 2, 2)), axis=1)
    rois = corners.transpose(0, 2, 1).reshape(5, 4)[:, [0, 2, 1, 3]].astype(np.float32)  # x1, y1, x2, y2
    batch = rng.integers(0, 2, 5).astype(np.int64)
    node = h.make_node("RoiAlign", ["x", "rois", "batch"], ["y"], coordinate_transformation_mode=mode,
                       output_height=3, output_width=4, sampling_ratio=ratio, spatial_scale=0.5)
    check(make_model(node, {"x": x, "rois": rois, "batch": batch}, ["y"], opset=16),
          {"x": x, "rois": rois, "batch": batch}, rtol=1e-4, atol=1e-5)


def test_roi_align_refuses_max_mode(rng):
    x = rng.uniform(-1, 1, (1, 1, 4, 4)).astype(np.float32)
    node = h.make_node("RoiAlign", ["x", "rois", "batch"], ["y"], mode="max")
    model = make_model(node, {"x": x}, ["y"], {"rois": np.array([[0, 0, 2, 2]], np.float32),
                                               "batch": np.zeros(1, np.int64)}, opset=16)
    with pytest.raises(ValueError, match="mode 'max' is not supported"):
        run_mnnpy(model, {"x": x})


@pytest.mark.parametrize("roi, sizes, extrapolation", [([0.2, 0.1, 0.9, 0.8], [5, 6], 0.0),
                                                       ([-0.3, 0.4, 1.2, 1.5], [7, 3], -2.0),
                                                       ([0.5, 0.5, 0.5, 0.5], [1, 1], 0.0)])
def test_resize_tf_crop_and_resize(rng, roi, sizes, extrapolation):
    x = rng.uniform(-1, 1, (2, 3, 8, 9)).astype(np.float32)
    node = h.make_node("Resize", ["x", "roi", "", "sizes"], ["y"], mode="linear", axes=[2, 3],
                       coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=extrapolation)
    model = make_model(node, {"x": x}, ["y"], {"roi": np.array(roi, np.float32), "sizes": np.array(sizes, np.int64)},
                       opset=18)
    check(model, {"x": x}, rtol=1e-5, atol=1e-6)
