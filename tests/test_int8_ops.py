"""The 8-bit elementwise, pooling and concatenation ops (expr.qlinear_add, qlinear_mul,
qlinear_global_average_pool, qlinear_average_pool2d, max_pool2d_int8, qlinear_concat,
qlinear_softmax): exact
against NumPy evaluations of their definitions on every SIMD target, and against onnxruntime's
contrib kernels; onnxruntime's QOperator models of torchvision CNNs; the QDQ fusion of the ops
around the convolutions (docs/int8.md, "int8 elementwise ops").

Inputs are random on every run (the seed is in each failure message)."""
import numpy as np
import pytest

import mnnpy
import mnnpy.expr as F
from helpers import simd_target
from onnx_testing import with_min_ir_version

TARGETS = mnnpy.runtime_info()["simd_targets_usable"]
DTYPES = [np.uint8, np.int8]


@pytest.fixture
def fresh():
    """A generator seeded anew on each run, and its seed for the failure messages."""
    seed = int(np.random.SeedSequence().entropy % (2 ** 63))
    return np.random.default_rng(seed), f"seed {seed}"


def _random(rng, dtype, shape):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, shape).astype(dtype)


def _scale(rng):
    return np.float32(np.exp(rng.uniform(-5, -1)))


def _requantized(v, zero, dtype):
    """float32 ``v`` rounded half to even, plus the zero point, saturated to ``dtype``."""
    info = np.iinfo(dtype)
    return np.clip(np.rint(v.astype(np.float64)) + int(zero), info.min, info.max).astype(dtype)


def _f32(v):
    return np.asarray(v, np.float32)


# ---------------------------------------------------------------- NumPy evaluations of the definitions
def _add_reference(a, sa, za, b, sb, zb, sy, zy):
    ra, rb = _f32(sa) / _f32(sy), _f32(sb) / _f32(sy)
    va = ra * (a.astype(np.float32) - _f32(za))
    vb = rb * (b.astype(np.float32) - _f32(zb))
    return _requantized(va + vb, zy, a.dtype)


def _mul_reference(a, sa, za, b, sb, zb, sy, zy):
    ratio = (_f32(sa) * _f32(sb)) / _f32(sy)
    product = ((a.astype(np.int32) - int(za)) * (b.astype(np.int32) - int(zb))).astype(np.float32)
    return _requantized(product * ratio, zy, a.dtype)


def _average_reference(sums, taps, count, sx, zx, sy, zy, dtype):
    """Sums (int64) of `taps` values each, divided by `count`: the requantization of the pools."""
    multiplier = _f32(sx) / (_f32(sy) * count.astype(np.float32))
    centered = (sums - int(zx) * taps).astype(np.float32)
    return _requantized(centered * multiplier, zy, dtype)


def _windows(x, kernel, stride, pads, fill):
    """x [N, C, H, W] padded with `fill` -> windows [N, C, OH, OW, kh * kw] (and the output size)."""
    padded = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])), constant_values=fill)
    oh = (padded.shape[2] - kernel[0]) // stride[0] + 1
    ow = (padded.shape[3] - kernel[1]) // stride[1] + 1
    taps = [padded[:, :, i:i + stride[0] * (oh - 1) + 1:stride[0], j:j + stride[1] * (ow - 1) + 1:stride[1]]
            for i in range(kernel[0]) for j in range(kernel[1])]
    return np.stack(taps, -1)


def _average_pool_reference(x, sx, zx, sy, zy, kernel, stride, pads, include_pad):
    inside = _windows(np.ones(x.shape, np.int64), kernel, stride, pads, 0).sum(-1)
    sums = _windows(x.astype(np.int64), kernel, stride, pads, 0).sum(-1)
    count = _windows(np.ones(x.shape, np.int64), kernel, stride, pads, 1).sum(-1) if include_pad else inside
    return _average_reference(sums, inside, count, sx, zx, sy, zy, x.dtype)


# ---------------------------------------------------------------- onnxruntime's contrib kernels
def _onnxruntime(op, inputs, attrs, out_dtype, domain="com.microsoft"):
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper, numpy_helper
    types = {np.dtype(np.int8): TensorProto.INT8, np.dtype(np.uint8): TensorProto.UINT8}
    names = [f"input{k}" for k in range(len(inputs))]
    initializers = [numpy_helper.from_array(np.asarray(v), n) for n, v in zip(names, inputs)]
    node = helper.make_node(op, names, ["y"], domain=domain, **attrs)
    graph = helper.make_graph([node], "g", [], [helper.make_tensor_value_info("y", types[np.dtype(out_dtype)], None)],
                              initializers)
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    model = with_min_ir_version(helper.make_model(graph, opset_imports=opsets))
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, {})[0]


def _binary_args(rng, dtype, a_shape, b_shape):
    return (_random(rng, dtype, a_shape), _scale(rng), _random(rng, dtype, ()), _random(rng, dtype, b_shape),
            _scale(rng), _random(rng, dtype, ()), _scale(rng), _random(rng, dtype, ()))


# Shapes of a and b: same shape, per channel, scalar, both broadcasting, tails of every vector width.
BINARY_SHAPES = [((2, 16, 9, 9), (2, 16, 9, 9)), ((2, 16, 9, 9), (1, 16, 1, 1)), ((3, 37), ()),
                 ((4, 1, 5), (1, 3, 1)), ((1, 7, 33), (7, 1)), ((129,), (129,)),
                 ((2, 40001), (2, 40001)), ((1, 64, 40, 40), (1, 64, 1, 1))]  # split into pieces across threads


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_qlinear_add_and_mul_are_exact(fresh, target, dtype):
    rng, seed = fresh
    with simd_target(target):
        for a_shape, b_shape in BINARY_SHAPES:
            args = _binary_args(rng, dtype, a_shape, b_shape)
            for fn, reference in ((F.qlinear_add, _add_reference), (F.qlinear_mul, _mul_reference)):
                got = fn(*args).read()
                expected = reference(*args)
                assert got.dtype == np.dtype(dtype) and got.shape == np.broadcast_shapes(a_shape, b_shape)
                np.testing.assert_array_equal(got, expected,
                                              err_msg=f"{seed} {target} {fn.__name__} {a_shape} {b_shape}")
            # Operands swapped: the broadcasting holds on either side.
            a, sa, za, b, sb, zb, sy, zy = args
            np.testing.assert_array_equal(F.qlinear_add(b, sb, zb, a, sa, za, sy, zy).read(),
                                          _add_reference(b, sb, zb, a, sa, za, sy, zy), err_msg=seed)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_qlinear_add_and_mul_with_extreme_ratios(fresh, target, dtype):
    # Ratios whose values pass int32's range (1e8 and more: the kernels then keep their float clamp
    # at the top, which the saturating packs alone would get wrong past 2^31) and infinite ones
    # (an output scale of 0), against ratios near 1.
    rng, seed = fresh
    with simd_target(target):
        info = np.iinfo(dtype)
        middle = (int(info.min) + int(info.max) + 1) // 2
        for sa, sb, sy in ((1.0, 1.0, 1e-8), (1.0, 1e-9, 1e-8), (3e-9, 1.0, 3e-9), (1.0, 1.0, 0.0)):
            a, b = _random(rng, dtype, (3, 130)), _random(rng, dtype, (3, 130))
            # Zero points about the middle, and extremes whose sums and products take both signs:
            # the saturated outputs are not all one value.
            a[0, :3] = info.max, info.min, info.min
            b[0, :3] = info.max, info.min, info.max
            za, zb, zy = (np.asarray(middle + rng.integers(-20, 21), dtype) for _ in range(3))
            args = (a, np.float32(sa), za, b, np.float32(sb), zb, np.float32(sy), zy)
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                for fn, reference in ((F.qlinear_add, _add_reference), (F.qlinear_mul, _mul_reference)):
                    expected = reference(*args)
                    if sy == 0.0:
                        # Infinite ratios: a NaN value (0 times infinity, or infinities of both
                        # signs added) becomes the lowest output.
                        ca, cb = _f32(a) - _f32(za), _f32(b) - _f32(zb)
                        inf = _f32(np.inf)
                        value = ca * inf + cb * inf if fn is F.qlinear_add else (ca * cb) * inf
                        expected = np.where(np.isnan(value), np.iinfo(dtype).min, expected).astype(dtype)
                    got = fn(*args).read()
                    np.testing.assert_array_equal(got, expected, err_msg=f"{seed} {target} {fn.__name__} {sa} {sb} {sy}")
                    assert len(np.unique(got)) > 1 or sy == 0.0


@pytest.mark.parametrize("dtype", DTYPES)
def test_qlinear_add_and_mul_against_onnxruntime(fresh, dtype):
    """onnxruntime's kernels fold the zero points into one constant term (another order of the
    same float32 operations): both results are within a few float32 ulps of the exact real value
    (|v| < 2^9, so under 2^-14), and round apart only when that value lies that close to a
    half-integer: then by exactly one step, and rarely."""
    rng, seed = fresh
    for a_shape, b_shape in BINARY_SHAPES + [((64, 1000), (64, 1000))]:
        args = _binary_args(rng, dtype, a_shape, b_shape)
        for op, fn in (("QLinearAdd", F.qlinear_add), ("QLinearMul", F.qlinear_mul)):
            got = fn(*args).read().astype(np.int32)
            expected = _onnxruntime(op, list(args), {}, dtype).astype(np.int32)
            difference = np.abs(got - expected)
            assert difference.max() <= 1, (seed, op, a_shape, b_shape)
            assert (difference > 0).mean() < 1e-3, (seed, op, a_shape, b_shape, (difference > 0).sum())


POOL_SHAPES = [(2, 8, 7, 7), (1, 3, 13, 11), (1, 40, 4, 5)]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_qlinear_global_average_pool_is_exact_and_matches_onnxruntime(fresh, target, dtype):
    rng, seed = fresh
    with simd_target(target):
        for shape in POOL_SHAPES + [(2, 5, 300), (1, 4, 3, 2, 5)]:
            x = _random(rng, dtype, shape)
            sx, zx, sy, zy = _scale(rng), _random(rng, dtype, ()), _scale(rng) / 4, _random(rng, dtype, ())
            spatial = tuple(range(2, len(shape)))
            count = np.asarray(np.prod(shape[2:]), np.int64)
            expected = _average_reference(x.astype(np.int64).sum(spatial, keepdims=True), count, count, sx, zx, sy,
                                          zy, dtype)
            got = F.qlinear_global_average_pool(x, sx, zx, sy, zy).read()
            np.testing.assert_array_equal(got, expected, err_msg=f"{seed} {target} {shape}")
            # Channels last: the same values, moved.
            x_last = np.ascontiguousarray(np.moveaxis(x, 1, -1))
            got_last = F.qlinear_global_average_pool(x_last, sx, zx, sy, zy, channels_last=True).read()
            np.testing.assert_array_equal(got_last, np.moveaxis(expected, 1, -1), err_msg=f"{seed} {target} {shape}")
            if target == TARGETS[0]:
                # onnxruntime computes the same multiplier and int32 sum: equal.
                for layout, data, want in ((0, x, got), (1, x_last, got_last)):
                    ort = _onnxruntime("QLinearGlobalAveragePool", [data, sx, zx, sy, zy], {"channels_last": layout},
                                       dtype)
                    np.testing.assert_array_equal(want, ort, err_msg=f"{seed} {shape} channels_last {layout}")


POOL_WINDOWS = [((3, 3), (2, 2), (1, 1, 1, 1)), ((2, 2), (2, 2), (0, 0, 0, 0)), ((3, 2), (1, 2), (1, 0, 2, 1))]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_qlinear_average_pool_is_exact(fresh, target, dtype):
    rng, seed = fresh
    with simd_target(target):
        for shape in POOL_SHAPES:
            for kernel, stride, pads in POOL_WINDOWS:
                x = _random(rng, dtype, shape)
                sx, zx, sy, zy = _scale(rng), _random(rng, dtype, ()), _scale(rng) / 2, _random(rng, dtype, ())
                for include_pad in (False, True):
                    expected = _average_pool_reference(x, sx, zx, sy, zy, kernel, stride, pads, include_pad)
                    got = F.qlinear_average_pool2d(x, sx, zx, sy, zy, kernel, stride, pads,
                                                   count_include_pad=include_pad).read()
                    message = f"{seed} {target} {shape} {kernel} {stride} {pads} {include_pad}"
                    np.testing.assert_array_equal(got, expected, err_msg=message)
                    x_last = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
                    got_last = F.qlinear_average_pool2d(x_last, sx, zx, sy, zy, kernel, stride, pads,
                                                        count_include_pad=include_pad, channels_last=True).read()
                    np.testing.assert_array_equal(got_last, expected.transpose(0, 2, 3, 1), err_msg=message)


@pytest.mark.parametrize("dtype", DTYPES)
def test_qlinear_average_pool_against_onnxruntime(fresh, dtype):
    """onnxruntime averages dequantized float32 values, mnnpy scales the int32 sum once: two
    roundings of the same real value, a step apart at most, where it lies within float32 error
    of a half-integer."""
    rng, seed = fresh
    for shape in POOL_SHAPES:
        for kernel, stride, pads in POOL_WINDOWS:
            x = _random(rng, dtype, shape)
            sx, zx, sy, zy = _scale(rng), _random(rng, dtype, ()), _scale(rng) / 2, _random(rng, dtype, ())
            for include_pad in (0, 1):
                for layout in (0, 1):
                    data = np.ascontiguousarray(x.transpose(0, 2, 3, 1)) if layout else x
                    got = F.qlinear_average_pool2d(data, sx, zx, sy, zy, kernel, stride, pads,
                                                   count_include_pad=include_pad, channels_last=layout).read()
                    attrs = {"kernel_shape": list(kernel), "strides": list(stride), "pads": list(pads),
                             "count_include_pad": include_pad, "channels_last": layout}
                    expected = _onnxruntime("QLinearAveragePool", [data, sx, zx, sy, zy], attrs, dtype)
                    difference = np.abs(got.astype(np.int32) - expected.astype(np.int32))
                    assert difference.max() <= 1, (seed, shape, kernel, include_pad, layout)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_max_pool_int8_matches_onnxruntime(fresh, target, dtype):
    rng, seed = fresh
    with simd_target(target):
        for shape in POOL_SHAPES + [(1, 2, 40, 70)]:
            for kernel, stride, pads in POOL_WINDOWS + [((3, 3), (1, 1), (1, 1, 1, 1))]:
                x = _random(rng, dtype, shape)
                expected = _windows(x, kernel, stride, pads, np.iinfo(dtype).min).max(-1)
                got = F.max_pool2d_int8(x, kernel, stride, pads).read()
                np.testing.assert_array_equal(got, expected, err_msg=f"{seed} {target} {shape} {kernel}")
                got_last = F.max_pool2d_int8(np.ascontiguousarray(x.transpose(0, 2, 3, 1)), kernel, stride, pads,
                                             channels_last=True).read()
                np.testing.assert_array_equal(got_last, expected.transpose(0, 2, 3, 1), err_msg=seed)
                if target == TARGETS[0]:
                    attrs = {"kernel_shape": list(kernel), "strides": list(stride), "pads": list(pads)}
                    np.testing.assert_array_equal(got, _onnxruntime("MaxPool", [x], attrs, dtype, domain=""),
                                                  err_msg=seed)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_qlinear_concat_matches_onnxruntime(fresh, target, dtype):
    """onnxruntime requantizes each input through a 256-entry table built with the same float32
    operations (dequantize, divide, round half to even): equal."""
    rng, seed = fresh
    with simd_target(target):
        for axis, shapes in ((1, [(2, 3, 5, 5), (2, 4, 5, 5), (2, 1, 5, 5)]), (0, [(3, 7), (1, 7)]),
                             (-1, [(2, 3, 4), (2, 3, 9)]), (1, [(1, 30, 70, 70), (1, 2, 70, 70)])):
            xs = [_random(rng, dtype, s) for s in shapes]
            sy, zy = _scale(rng), _random(rng, dtype, ())
            scales = [_scale(rng) for _ in xs]
            zeros = [_random(rng, dtype, ()) for _ in xs]
            scales[0], zeros[0] = sy, zy  # one input already in the output's quantization: copied
            got = F.qlinear_concat(list(zip(xs, scales, zeros)), sy, zy, axis).read()
            parts = []
            for x, s, z in zip(xs, scales, zeros):
                value = (x.astype(np.int32) - int(z)).astype(np.float32) * _f32(s)
                parts.append(_requantized(value / _f32(sy), zy, dtype))
            np.testing.assert_array_equal(got, np.concatenate(parts, axis), err_msg=f"{seed} {target} {axis}")
            np.testing.assert_array_equal(got[(slice(None),) * (axis % xs[0].ndim) + (slice(0, shapes[0][axis]),)],
                                          xs[0], err_msg=seed)
            if target == TARGETS[0]:
                args = [sy, zy] + [v for item in zip(xs, scales, zeros) for v in item]
                np.testing.assert_array_equal(got, _onnxruntime("QLinearConcat", args, {"axis": axis}, dtype),
                                              err_msg=seed)


def _softmax_reference(x, sx, zx, sy, zy):
    """The definition in float64 (exact exp and sums), quantized: the kernel's float32 rounding
    (its exp within a few ulps, a sum of n terms within n ulps, two quotients) moves y / y_scale
    by under 1e-4 of a step at these scales, so a byte differs from this by at most 1."""
    v = (x.astype(np.float64) - float(zx)) * float(sx)
    e = np.exp(v - v.max(axis=-1, keepdims=True))
    return _requantized(((e / e.sum(axis=-1, keepdims=True)) / float(sy)).astype(np.float64), zy, np.asarray(zy).dtype)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_qlinear_softmax_against_float64(fresh, target, dtype):
    """Rows of 128 (whole vectors), 37 (a tail) and 1; a wide scale, so that some arguments of
    exp fall below -87 (libm's exp there, as the Exp op's); int8 and uint8 outputs."""
    rng, seed = fresh
    with simd_target(target):
        for shape, sx in [((2, 3, 4, 128), np.float32(8 / 255)), ((3, 64), _scale(rng)), ((5, 37), np.float32(0.9)),
                          ((4, 1), _scale(rng))]:
            x = _random(rng, dtype, shape)
            zx = _random(rng, dtype, ())
            for out in DTYPES:
                zy = np.asarray(np.iinfo(out).min, out)  # probabilities: the range from 0 up
                sy = np.float32(1 / 256)
                got = F.qlinear_softmax(x, sx, zx, sy, zy).read()
                expected = _softmax_reference(x, sx, zx, sy, zy)
                assert got.dtype == out and got.shape == x.shape
                difference = np.abs(got.astype(np.int32) - expected.astype(np.int32))
                assert difference.max() <= 1, (seed, target, shape, difference.max())
                if shape[-1] == 1:  # probability 1, past the range's top
                    assert (got == np.iinfo(out).max).all(), (seed, got)
                elif sx == np.float32(8 / 255):  # arguments of exp over [-8, 0]: many steps used
                    assert len(np.unique(got)) > 10, (seed, shape)
            if sx == np.float32(0.9):
                assert np.ptp((x.astype(np.float64) - float(zx)) * 0.9, axis=-1).max() > 87  # libm's part ran


def test_qlinear_softmax_same_bytes_as_its_parts(fresh):
    """The fused row kernel against DequantizeLinear, Softmax and QuantizeLinear run as separate
    ops (the same exp and quotients; only the sum's order differs, at most one step)."""
    rng, seed = fresh
    x = _random(rng, np.uint8, (2, 12, 16, 64))
    sx, zx, sy, zy = np.float32(0.08), np.uint8(131), np.float32(1 / 255), np.uint8(0)
    got = F.qlinear_softmax(x, sx, zx, sy, zy).read()
    v = F.multiply(F.subtract(F.cast(F.const(x), np.float32), np.float32(zx)), sx)
    parts = F.round(F.divide(F.softmax(v, -1), sy)).read()
    expected = np.clip(parts + int(zy), 0, 255).astype(np.uint8)
    difference = np.abs(got.astype(np.int32) - expected.astype(np.int32))
    assert difference.max() <= 1 and (difference > 0).mean() < 0.01, (seed, difference.max())


def test_int8_ops_bad_inputs():
    x = np.zeros((1, 2, 4, 4), np.uint8)
    one, zero = np.float32(1), np.uint8(0)
    with pytest.raises(ValueError, match="int8 or uint8"):
        F.qlinear_add(np.zeros(3, np.float32), one, zero, x, one, zero, one, zero)
    with pytest.raises((TypeError, ValueError), match="one type"):
        F.qlinear_add(x, one, zero, x.astype(np.int8), one, np.int8(0), one, zero)
    with pytest.raises(ValueError, match="do not broadcast"):
        F.qlinear_mul(x, one, zero, np.zeros((3,), np.uint8), one, zero, one, zero)
    with pytest.raises(ValueError, match="one value"):
        F.qlinear_add(x, np.ones(2, np.float32), zero, x, one, zero, one, zero)
    with pytest.raises(ValueError, match="4-D"):
        F.max_pool2d_int8(np.zeros((2, 4, 4), np.int8), 2)
    with pytest.raises(ValueError, match="extent"):
        F.qlinear_average_pool2d(x, one, zero, one, zero, 2, 1, (3, 0, 0, 0))
    with pytest.raises(ValueError, match="at least one spatial axis"):
        F.qlinear_global_average_pool(np.zeros((2, 3), np.uint8), one, zero, one, zero)
    with pytest.raises(ValueError, match="does not match"):
        F.qlinear_concat([(x, one, zero), (np.zeros((1, 2, 3, 4), np.uint8), one, zero)], one, zero, 1)
    with pytest.raises((TypeError, ValueError), match="float32"):
        F.qlinear_global_average_pool(x, F.const(np.int32(1)), zero, one, zero)
    with pytest.raises(ValueError, match="x must be int8 or uint8"):
        F.qlinear_softmax(np.zeros((2, 3), np.float32), one, zero, one, zero)
    with pytest.raises((TypeError, ValueError), match="x_zero_point must be uint8"):
        F.qlinear_softmax(x, one, F.const(np.int8(0)), one, zero)
    with pytest.raises(ValueError, match="y_scale must hold one value"):
        F.qlinear_softmax(x, one, zero, np.ones(2, np.float32), zero)
    with pytest.raises((TypeError, ValueError), match="y_zero_point must be int8 or uint8"):
        F.qlinear_softmax(x, one, zero, one, F.const(np.int32(0)))


# ---------------------------------------------------------------- models
def _calibration(batches):
    from onnxruntime.quantization import CalibrationDataReader
    items = iter(batches)

    class Calibration(CalibrationDataReader):
        def get_next(self):
            return next(items, None)
    return Calibration()


def _torchvision_onnx(name, size, tmp_path):
    """torchvision's `name` with random weights exported to ONNX, shared constants made
    initializers of their own (onnxruntime's QOperator quantizer needs each bias as one)."""
    pytest.importorskip("torchvision")
    import onnx
    from model_zoo import export_torchvision
    model = onnx.load(export_torchvision(name, size))
    initializers = {i.name: i for i in model.graph.initializer}
    for node in list(model.graph.node):
        if node.op_type == "Identity" and node.input[0] in initializers:
            copy = onnx.TensorProto()
            copy.CopyFrom(initializers[node.input[0]])
            copy.name = node.output[0]
            model.graph.initializer.append(copy)
            model.graph.node.remove(node)
    path = str(tmp_path / f"{name}_{size}.onnx")
    onnx.save(model, path)
    return path


def _quantized_cnn(rng, name, size, tmp_path, quant_format):
    quantization = pytest.importorskip("onnxruntime.quantization")
    path = _torchvision_onnx(name, size, tmp_path)
    out = str(tmp_path / f"{name}_{quant_format}.onnx")
    batches = [{"input": rng.standard_normal((1, 3, size, size)).astype(np.float32)} for _ in range(2)]
    # reduce_range: 7-bit weights, which onnxruntime's AVX2 kernels multiply without saturating.
    quantization.quantize_static(path, out, _calibration(batches),
                                 quant_format=getattr(quantization.QuantFormat, quant_format), per_channel=True,
                                 reduce_range=True, activation_type=quantization.QuantType.QUInt8,
                                 weight_type=quantization.QuantType.QInt8)
    return out


def _output_scale(path):
    import onnx
    from onnx import numpy_helper
    init = {i.name: numpy_helper.to_array(i) for i in onnx.load(path).graph.initializer}
    return float(init["output_scale"])


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2"])
def test_qoperator_cnn_against_onnxruntime(fresh, tmp_path, name):
    ort = pytest.importorskip("onnxruntime")
    import onnx
    from mnnpy import nn
    rng, seed = fresh
    path = _quantized_cnn(rng, name, 64, tmp_path, "QOperator")
    contrib = {n.op_type for n in onnx.load(path).graph.node if n.domain == "com.microsoft"}
    assert {"QLinearAdd", "QLinearGlobalAveragePool"} <= contrib, contrib
    module = nn.load_module_from_file(path)
    counts = module.graph.op_counts()
    # The residual additions run in the convolutions that make one of their operands.
    assert counts.get("QLinearConvAdd") and counts.get("QLinearGlobalAveragePool"), counts
    x = rng.standard_normal((1, 3, 64, 64)).astype(np.float32)
    expected = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"input": x})[0]
    got = np.asarray(module(x))
    # The integer sums and the convolutions' float32 requantization are the same; onnxruntime's
    # Add and pools round in another order: an intermediate value may differ by one step and carry
    # on through the later layers, to a few steps of the output's scale.
    _assert_close_in_steps(got, expected, _output_scale(path), seed)


def _assert_close_in_steps(got, expected, scale, seed):
    """Dequantized 8-bit outputs within 6 steps of the output's scale everywhere, within one on
    average: a step apart in an early tensor grows by the gain of each later layer."""
    steps = np.rint(np.abs(np.asarray(got, np.float64) - expected) / scale)
    assert steps.max() <= 6, (seed, steps.max())
    assert steps.mean() <= 1, (seed, steps.mean())


def _counts_without_int8_ops(path, monkeypatch):
    """The op counts of the converted QDQ model with the convolutions fused only."""
    from mnnpy.convert import _qdq_fusion, from_onnx
    with monkeypatch.context() as m:
        m.setattr(_qdq_fusion, "fuse_int8_ops", lambda graph: graph)
        return from_onnx(path)[0].op_counts()


@pytest.mark.parametrize("name,float_ops", [("resnet18", ("Add", "MaxPool", "GlobalAveragePool", "Gemm")),
                                            ("mobilenet_v2", ("Add", "GlobalAveragePool", "Gemm"))])
def test_qdq_cnn_fuses_every_op(fresh, tmp_path, monkeypatch, name, float_ops):
    ort = pytest.importorskip("onnxruntime")
    from mnnpy import nn
    from mnnpy.convert import from_onnx
    rng, seed = fresh
    path = _quantized_cnn(rng, name, 64, tmp_path, "QDQ")
    before = _counts_without_int8_ops(path, monkeypatch)
    assert before["DequantizeLinear"] > 1 and all(before.get(op) for op in float_ops), before
    counts = from_onnx(path)[0].op_counts()
    # Only the input's QuantizeLinear and the output's DequantizeLinear stay; no float op is left
    # between them.
    assert counts.get("DequantizeLinear") == 1 and counts.get("QuantizeLinear") == 1, counts
    # Every residual addition: in the convolution that makes one of its operands.
    assert counts.get("QLinearConvAdd") == before["Add"] and counts.get("QLinearGlobalAveragePool") == 1, counts
    assert counts.get("QGemm") == 1 and not any(op in counts for op in ("Add", "Gemm", "GlobalAveragePool")), counts
    if name == "resnet18":
        assert counts.get("MaxPool") == 1  # on the 8-bit tensor
    # The global pool reads the last convolution's channels-last output: the one transpose left
    # moves the pooled [1, 1, 1, C].
    graph = from_onnx(path)[0]
    pool = next(n for n in graph.nodes if n.op == "QLinearGlobalAveragePool")
    transposes = [n for n in graph.nodes if n.op == "Transpose"]
    assert pool.attrs.get("channels_last") == 1 and [t.inputs[0] for t in transposes] == pool.outputs, transposes
    x = rng.standard_normal((1, 3, 64, 64)).astype(np.float32)
    expected = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"input": x})[0]
    got = np.asarray(nn.load_module_from_file(path)(x), np.float64)
    # onnxruntime runs the same fused integer kernels with float32 requantization: intermediate
    # values a step apart carry on to a few steps of the output's scale.
    _assert_close_in_steps(got, expected, _output_scale(path), seed)


def test_qdq_bert_fuses_matmuls_adds_and_muls(fresh, tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    ort = pytest.importorskip("onnxruntime")
    quantization = pytest.importorskip("onnxruntime.quantization")
    from mnnpy import nn
    from mnnpy.convert import from_onnx
    from model_zoo import export_transformer
    rng, seed = fresh
    path = export_transformer("bert", seq=32, small=True)
    qdq = str(tmp_path / "bert_qdq.onnx")

    def feed():
        return {"input_ids": rng.integers(0, 1000, (2, 32)).astype(np.int64),
                "attention_mask": np.ones((2, 32), np.int64)}
    # Per-channel weights: onnxruntime quantizes each MatMul weight per column.
    quantization.quantize_static(path, qdq, _calibration([feed() for _ in range(2)]),
                                 quant_format=quantization.QuantFormat.QDQ, per_channel=True,
                                 activation_type=quantization.QuantType.QUInt8,
                                 weight_type=quantization.QuantType.QInt8)
    before = _counts_without_int8_ops(qdq, monkeypatch)
    counts = from_onnx(qdq)[0].op_counts()
    matmuls = before.get("MatMul", 0) + before.get("QLinearMatMul", 0)
    assert before.get("MatMul", 0) >= 12, before  # the per-column weights the convolution pass leaves
    assert counts.get("QLinearMatMul") == matmuls and "MatMul" not in counts, counts
    assert counts.get("QLinearAdd", 0) >= 20 and counts.get("QLinearMul", 0) >= 6, counts
    assert counts.get("QLinearSoftmax") == before.get("Softmax") >= 2 and "Softmax" not in counts, counts
    assert counts["DequantizeLinear"] < before["DequantizeLinear"] / 4, (before, counts)
    inputs = feed()
    expected = ort.InferenceSession(qdq, providers=["CPUExecutionProvider"]).run(None, inputs)[0]
    got = np.asarray(nn.load_module_from_file(qdq)(*inputs.values()), np.float64)
    # Steps of 8-bit activations through two layers: close, not equal (onnxruntime requantizes in
    # float32, and runs its softmax and layer norms on its own float kernels).
    cosine = (got * expected).sum() / (np.linalg.norm(got) * np.linalg.norm(expected))
    assert cosine > 0.999, (seed, cosine)


def _qdq_linear_model(rng, gemm, per_column, quantize_output):
    """x -> Q -> DQ -> MatMul/Gemm with a DQ int8 weight (and an int32 bias for Gemm) -> [Q -> DQ]."""
    from onnx import TensorProto, helper, numpy_helper
    K, N = 48, 20
    # 7-bit weights: onnxruntime's AVX2 kernels saturate pairs of u8 x s8 products in int16 beyond.
    w = rng.integers(-64, 64, (N, K) if gemm else (K, N)).astype(np.int8)
    w_scale = rng.uniform(0.001, 0.01, N).astype(np.float32) if per_column else np.float32(0.005)
    w_zero = np.zeros(N if per_column else (), np.int8)
    x_scale, x_zero = np.float32(0.02), np.uint8(120)
    init = {"w": w, "w_scale": w_scale, "w_zero": w_zero, "x_scale": x_scale, "x_zero": x_zero,
            "y_scale": np.float32(0.05), "y_zero": np.uint8(128)}
    nodes = [helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zero"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "x_scale", "x_zero"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "w_scale", "w_zero"], ["wd"], axis=0 if gemm else 1)]
    y = "y_float" if quantize_output else "y"
    if gemm:
        init["bias"] = rng.integers(-3000, 3000, N).astype(np.int32)
        init["bias_scale"] = (x_scale * w_scale).astype(np.float32)
        nodes.append(helper.make_node("DequantizeLinear", ["bias", "bias_scale"], ["bd"], axis=0))
        nodes.append(helper.make_node("Gemm", ["xd", "wd", "bd"], [y], transB=1))
    else:
        nodes.append(helper.make_node("MatMul", ["xd", "wd"], [y]))
    if quantize_output:
        nodes += [helper.make_node("QuantizeLinear", ["y_float", "y_scale", "y_zero"], ["yq"]),
                  helper.make_node("DequantizeLinear", ["yq", "y_scale", "y_zero"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6, K])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in init.items()])
    model = with_min_ir_version(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    return model.SerializeToString(), init


@pytest.mark.parametrize("gemm", [False, True])
@pytest.mark.parametrize("per_column", [False, True])
@pytest.mark.parametrize("quantize_output", [False, True])
def test_qdq_matmul_and_gemm_fuse(fresh, tmp_path, gemm, per_column, quantize_output):
    """A MatMul or Gemm between DequantizeLinear nodes runs on the int8 GEMM, its output quantized
    (QLinearMatMul, QGemm) or float (MatMulInteger times the product of the scales, QGemm)."""
    ort = pytest.importorskip("onnxruntime")
    from mnnpy import nn
    from mnnpy.convert import from_onnx
    rng, seed = fresh
    model, init = _qdq_linear_model(rng, gemm, per_column, quantize_output)
    path = tmp_path / "linear.onnx"
    path.write_bytes(model)
    counts = from_onnx(model)[0].op_counts()
    assert "MatMul" not in counts and "Gemm" not in counts, counts
    assert counts.get("DequantizeLinear", 0) == (1 if quantize_output else 0), counts
    x = rng.standard_normal((6, 48)).astype(np.float32)
    expected = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = np.asarray(nn.load_module_from_file(str(path))(x), np.float64)
    if quantize_output:
        # The same int32 sums, requantized in float32 in both (the combined scale possibly formed
        # in another order): a step apart at most.
        assert np.abs(got - expected).max() <= float(init["y_scale"]) * 1.0001, seed
    else:
        # Float outputs: the exact int32 sum scaled once, against a float32 sum of 48 dequantized
        # products (each exact in float32 to 2^-24 relative): 48 roundings of the largest term.
        bound = 48 * 2.0 ** -23 * np.abs(expected).max() + 1e-6
        assert np.abs(got - expected).max() <= bound, (seed, np.abs(got - expected).max(), bound)


def _contrib_model(op, x_shape, dtype, extra_inputs, attrs, tmp_path, extra_before=()):
    """A model of one com.microsoft node reading graph input `x` (after `extra_before` constants)
    and then the constants `extra_inputs`; returns its path."""
    from onnx import TensorProto, helper, numpy_helper
    types = {np.dtype(np.int8): TensorProto.INT8, np.dtype(np.uint8): TensorProto.UINT8}
    before = [f"c{k}" for k in range(len(extra_before))]
    after = [f"d{k}" for k in range(len(extra_inputs))]
    values = list(extra_before) + list(extra_inputs)
    init = [numpy_helper.from_array(np.asarray(v), n) for n, v in zip(before + after, values)]
    node = helper.make_node(op, before + ["x"] + after, ["y"], domain="com.microsoft", **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", types[np.dtype(dtype)], list(x_shape))],
                              [helper.make_tensor_value_info("y", types[np.dtype(dtype)], None)], init)
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    model = with_min_ir_version(helper.make_model(graph, opset_imports=opsets))
    path = str(tmp_path / f"{op}.onnx")
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    return path


@pytest.mark.parametrize("dtype", DTYPES)
def test_contrib_ops_import_against_onnxruntime(fresh, tmp_path, dtype):
    """Each QOperator contrib op read from an ONNX file, on a graph input, against onnxruntime:
    the table ops (QLinearLeakyRelu, QLinearSigmoid) build their table as onnxruntime does, the
    leaky ReLU's exactly; onnxruntime's sigmoid is an approximation of the logistic function (a
    relative error near float32's), so an entry may round to the neighbouring step."""
    ort = pytest.importorskip("onnxruntime")
    from mnnpy import nn
    rng, seed = fresh
    shape = (2, 6, 5, 7)
    x = _random(rng, dtype, shape)
    q = lambda: (_scale(rng), _random(rng, dtype, ()))  # noqa: E731
    (sx, zx), (sy, zy), (sb, zb) = q(), q(), q()
    b = _random(rng, dtype, (1, 6, 1, 1))
    cases = [("QLinearLeakyRelu", [sx, zx, sy, zy], {"alpha": 0.1}, (), 0),
             ("QLinearSigmoid", [sx, zx, sy, zy], {}, (), 1),
             ("QLinearAdd", [sx, zx, b, sb, zb, sy, zy], {}, (), 1),
             ("QLinearMul", [sx, zx, b, sb, zb, sy, zy], {}, (), 1),
             ("QLinearGlobalAveragePool", [sx, zx, sy, zy], {"channels_last": 0}, (), 0),
             ("QLinearAveragePool", [sx, zx, sy, zy], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1],
                                                      "strides": [2, 2]}, (), 1),
             ("QLinearConcat", [sx, zx, _random(rng, dtype, (2, 3, 5, 7)), sb, zb], {"axis": 1}, (sy, zy), 0)]
    # QLinearSoftmax: the last axis on the 8-bit kernel, others as DequantizeLinear, Softmax and
    # QuantizeLinear (opset 12: flattened from `axis` on); float32 exps that differ by ulps.
    probability = (np.float32(1 / 256), np.asarray(np.iinfo(dtype).min, dtype))
    cases += [("QLinearSoftmax", [sx, zx, *probability], {"axis": axis, "opset": opset}, (), 1)
              for axis, opset in ((-1, 13), (1, 13), (1, 12), (3, 12))]
    for op, inputs, attrs, before, steps in cases:
        path = _contrib_model(op, shape, dtype, inputs, attrs, tmp_path, before)
        expected = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        module = nn.load_module_from_file(path)
        got = np.asarray(module(x))
        assert got.dtype == expected.dtype and got.shape == expected.shape, (op, got.shape, expected.shape)
        difference = np.abs(got.astype(np.int32) - expected.astype(np.int32))
        assert difference.max() <= steps, (seed, op, difference.max())


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_max_pool_int8_dilation_and_ceil_mode_match_torch(fresh, target, dtype):
    """torch's max_pool2d on the same integers as float32 (exact) is the reference."""
    torch = pytest.importorskip("torch")
    rng, seed = fresh
    cases = [((1, 3, 17, 23), (3, 3), (2, 2), (1, 1), (2, 2), True),
             ((2, 4, 9, 8), (2, 3), (3, 2), (0, 1), (1, 2), True),
             ((1, 2, 12, 31), (3, 2), (1, 3), (1, 1), (2, 1), False)]
    with simd_target(target):
        for shape, kernel, stride, pad, dilation, ceil in cases:
            x = _random(rng, dtype, shape)
            expected = torch.nn.functional.max_pool2d(torch.from_numpy(x.astype(np.float32)), kernel, stride, pad,
                                                      dilation, ceil_mode=ceil).numpy().astype(dtype)
            pads = (pad[0], pad[1], pad[0], pad[1])
            got = F.max_pool2d_int8(x, kernel, stride, pads, dilation, ceil_mode=ceil).read()
            np.testing.assert_array_equal(got, expected, err_msg=f"{seed} {target} {shape} {kernel}")
            got_last = F.max_pool2d_int8(np.ascontiguousarray(x.transpose(0, 2, 3, 1)), kernel, stride, pads, dilation,
                                         ceil_mode=ceil, channels_last=True).read()
            np.testing.assert_array_equal(got_last, expected.transpose(0, 2, 3, 1), err_msg=seed)


@pytest.mark.parametrize("dtype", DTYPES)
def test_qlinear_average_pool_ceil_mode_against_onnxruntime(fresh, dtype):
    rng, seed = fresh
    x = _random(rng, dtype, (1, 5, 10, 13))
    sx, zx, sy, zy = _scale(rng), _random(rng, dtype, ()), _scale(rng) / 2, _random(rng, dtype, ())
    for include_pad in (0, 1):
        got = F.qlinear_average_pool2d(x, sx, zx, sy, zy, (3, 3), (2, 2), (1, 0, 1, 0), ceil_mode=True,
                                       count_include_pad=include_pad).read()
        attrs = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 0, 1, 0], "ceil_mode": 1,
                 "count_include_pad": include_pad}
        expected = _onnxruntime("QLinearAveragePool", [x, sx, zx, sy, zy], attrs, dtype)
        assert got.shape == expected.shape
        difference = np.abs(got.astype(np.int32) - expected.astype(np.int32))
        if include_pad:
            # A window that ceil mode extends past the padding: onnxruntime's contrib kernel divides
            # by the whole kernel, mnnpy (as ONNX's AveragePool and torch) by the taps inside the
            # padded input. Windows inside it compare as the others.
            rows = [oh for oh in range(got.shape[2]) if oh * 2 - 1 + 3 <= x.shape[2] + 1]
            cols = [ow for ow in range(got.shape[3]) if ow * 2 + 3 <= x.shape[3]]
            difference = difference[:, :, rows][:, :, :, cols]
            assert len(rows) < got.shape[2] or len(cols) < got.shape[3]
        assert difference.max() <= 1, (seed, include_pad)


def _qdq_chain_model(rng, same_concat_params):
    """x -> Q -> DQ, then AveragePool, Concat with a second quantized branch, Transpose and Mul,
    each between DequantizeLinear and QuantizeLinear nodes, as quantize_static writes them."""
    from onnx import TensorProto, helper, numpy_helper
    init, nodes = {}, []

    def quantized(name, scale, zero):
        init[f"{name}_s"], init[f"{name}_z"] = np.float32(scale), np.uint8(zero)
        nodes.append(helper.make_node("QuantizeLinear", [name, f"{name}_s", f"{name}_z"], [f"{name}_q"]))
        nodes.append(helper.make_node("DequantizeLinear", [f"{name}_q", f"{name}_s", f"{name}_z"], [f"{name}_d"]))
        return f"{name}_d"
    x = quantized("x", 0.02, 128)
    nodes.append(helper.make_node("AveragePool", [x], ["pool"], kernel_shape=[3, 3], strides=[1, 1],
                                  pads=[1, 1, 1, 1]))
    pool = quantized("pool", 0.015, 120)
    nodes.append(helper.make_node("Relu", [x], ["relu"]))
    relu = quantized("relu", 0.015 if same_concat_params else 0.01, 120 if same_concat_params else 0)
    nodes.append(helper.make_node("Concat", [pool, relu], ["cat"], axis=1))
    cat = quantized("cat", 0.015, 120) if same_concat_params else quantized("cat", 0.02, 110)
    nodes.append(helper.make_node("Transpose", [cat], ["t"], perm=[0, 2, 3, 1]))
    t = quantized("t", 0.015, 120) if same_concat_params else quantized("t", 0.02, 110)
    nodes.append(helper.make_node("Mul", [t, t], ["sq"]))
    sq = quantized("sq", 0.01, 0)
    nodes.append(helper.make_node("Identity", [sq], ["y"]))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 9, 9])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in init.items()])
    model = with_min_ir_version(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    return model.SerializeToString()


@pytest.mark.parametrize("same_concat_params", [False, True])
def test_qdq_pool_concat_transpose_mul_fuse(fresh, tmp_path, same_concat_params):
    ort = pytest.importorskip("onnxruntime")
    from mnnpy import nn
    from mnnpy.convert import from_onnx
    rng, seed = fresh
    model = _qdq_chain_model(rng, same_concat_params)
    path = tmp_path / "chain.onnx"
    path.write_bytes(model)
    counts = from_onnx(model)[0].op_counts()
    assert counts.get("QLinearAveragePool") == 1 and counts.get("QLinearMul") == 1, counts
    assert counts.get("Transpose") == 1 and "AveragePool" not in counts and "Mul" not in counts, counts
    # The Concat: requantizing its inputs, or a plain Concat when they share the output's parameters.
    assert counts.get("Concat" if same_concat_params else "QLinearConcat") == 1, counts
    x = rng.standard_normal((1, 4, 9, 9)).astype(np.float32)
    expected = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = np.asarray(nn.load_module_from_file(str(path))(x), np.float64)
    # onnxruntime runs this graph's float ops between its Q/DQ nodes (or its own fused kernels):
    # roundings in another order, a step of an intermediate scale apart at most, which the
    # squaring carries on to at most a few steps of the output's.
    _assert_close_in_steps(got, expected, 0.01, seed)


def _qdq_lookup_model(dtype):
    """x -> Q -> DQ -> GELU (Div, Erf, Add, Mul by x, Mul) -> Q -> DQ -> Sigmoid, Mul by 3 -> Q
    -> DQ: two elementwise regions between 8-bit tensors, as quantize_static writes them."""
    from onnx import TensorProto, helper, numpy_helper
    zero = np.uint8(128) if dtype == np.uint8 else np.int8(0)
    init = {"s_in": np.float32(0.03), "s_mid": np.float32(0.02), "s_out": np.float32(0.013), "z": zero,
            "sqrt2": np.float32(np.sqrt(2.0)), "one": np.float32(1.0), "half": np.float32(0.5),
            "three": np.float32(3.0)}
    nodes = [helper.make_node("QuantizeLinear", ["x", "s_in", "z"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "s_in", "z"], ["xd"]),
             helper.make_node("Div", ["xd", "sqrt2"], ["g1"]), helper.make_node("Erf", ["g1"], ["g2"]),
             helper.make_node("Add", ["g2", "one"], ["g3"]), helper.make_node("Mul", ["xd", "g3"], ["g4"]),
             helper.make_node("Mul", ["g4", "half"], ["g5"]),
             helper.make_node("QuantizeLinear", ["g5", "s_mid", "z"], ["gq"]),
             helper.make_node("DequantizeLinear", ["gq", "s_mid", "z"], ["gd"]),
             helper.make_node("Sigmoid", ["gd"], ["s1"]), helper.make_node("Mul", ["s1", "three"], ["s2"]),
             helper.make_node("QuantizeLinear", ["s2", "s_out", "z"], ["yq"]),
             helper.make_node("DequantizeLinear", ["yq", "s_out", "z"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 37, 29])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in init.items()])
    model = with_min_ir_version(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    return model.SerializeToString()


@pytest.mark.parametrize("dtype", DTYPES)
def test_qdq_elementwise_regions_become_lookups(fresh, tmp_path, monkeypatch, dtype):
    """Each region of float ops between a DequantizeLinear and a QuantizeLinear becomes one Gather
    from a table of 256 bytes: the same bytes as the unfused ops on every code, and within one
    step of onnxruntime's float evaluation of them."""
    ort = pytest.importorskip("onnxruntime")
    from mnnpy import nn
    from mnnpy.convert import _qdq_fusion, from_onnx
    rng, seed = fresh
    model = _qdq_lookup_model(dtype)
    fused_path, unfused_path = str(tmp_path / "fused.mnnpy"), str(tmp_path / "unfused.mnnpy")
    counts = from_onnx(model, fused_path)[0].op_counts()
    assert counts.get("Gather") == 2 and counts.get("QuantizeLinear") == 1 and counts.get("DequantizeLinear") == 1
    assert not any(op in counts for op in ("Erf", "Gelu", "Sigmoid", "Mul", "Div", "Add")), counts
    with monkeypatch.context() as m:
        m.setattr(_qdq_fusion, "fuse_int8_lookups", lambda g: g)
        unfused_counts = from_onnx(model, unfused_path)[0].op_counts()
    assert unfused_counts.get("Gelu", 0) + unfused_counts.get("Erf", 0) == 1, unfused_counts
    fused, unfused = nn.load_module_from_file(fused_path), nn.load_module_from_file(unfused_path)
    # Every code through both: inputs that quantize to each of the 256 codes, on every row.
    codes = np.arange(256, dtype=np.uint8).view(dtype).astype(np.float32)
    zero = 128.0 if dtype == np.uint8 else 0.0
    x = np.broadcast_to((codes - zero) * np.float32(0.03), (2, 37, 256))[:, :, :29].copy()
    x_all = np.resize((codes - zero) * np.float32(0.03), (2, 37, 29)).astype(np.float32)
    for inputs in (x, x_all, rng.standard_normal((2, 37, 29)).astype(np.float32) * 2):
        got = np.asarray(fused(inputs))
        np.testing.assert_array_equal(got, np.asarray(unfused(inputs)), err_msg=seed)
        expected = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": inputs})[0]
        # onnxruntime's erf and exp round differently in the last bits: a quantization step at most.
        assert np.abs(got.astype(np.float64) - expected).max() <= 0.013 * 1.001, seed


# ---------------------------------------------------------------- QuantizeLinear
def _quantize_reference(x, scale, zero):
    """ONNX's QuantizeLinear in NumPy: the quotient in float32, half to even, NaN to the least value."""
    info = np.iinfo(np.asarray(zero).dtype)
    with np.errstate(invalid="ignore", divide="ignore"):
        q = np.rint(x / np.float32(scale))
    q = np.where(np.isnan(q), -np.inf, q)
    return np.clip(q + float(zero), info.min, info.max).astype(np.asarray(zero).dtype)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_quantize_linear_kernel_on_every_target(rng, dtype):
    # Lengths that are not whole vectors, halves after the division, the ends of the range, inf,
    # NaN, a zero scale; channels last with 1, 3, 4 and 5 channels (widths past a vector and not).
    from mnnpy import _core
    zero = np.asarray(rng.integers(np.iinfo(dtype).min + 20, np.iinfo(dtype).max - 20), dtype)
    x = (rng.standard_normal(1000) * 3).astype(np.float32)
    x[:8] = [np.nan, np.inf, -np.inf, 1e30, -1e30, 0.125, -0.375, 0.625]  # the last: halves at scale 0.25
    cases = [(x, np.float32(0.25), False), (x[:37], np.float32(0.0), False)]
    for c in (1, 3, 4, 5):
        image = (rng.standard_normal((2, c, 3, 70)) * 40).astype(np.float32)
        image[0, 0, 0, :3] = [np.nan, 2.5, 3.5]
        cases.append((image, np.float32(0.5), True))
    for target in mnnpy.runtime_info()["simd_targets_usable"]:
        with simd_target(target):
            for data, scale, channels_last in cases:
                got = _core.op("QuantizeLinear", [F.const(data), F.const(scale), F.const(zero)],
                               {"channels_last": int(channels_last)}).read()
                expected = _quantize_reference(data, scale, zero)
                if channels_last:
                    expected = expected.transpose(0, 2, 3, 1)
                assert got.dtype == np.dtype(dtype)
                np.testing.assert_array_equal(got, expected, err_msg=f"{target} {data.shape} {scale}")


def test_quantize_linear_bad_inputs():
    from mnnpy import _core
    x = F.const(np.zeros((2, 3), np.float32))
    with pytest.raises(TypeError, match="x must be float32"):
        _core.op("QuantizeLinear", [F.const(np.zeros(3, np.float64)), F.const(np.float32(1)), F.const(np.uint8(0))],
                 {})
    with pytest.raises(ValueError, match="channels_last needs a 4-D x"):
        _core.op("QuantizeLinear", [x, F.const(np.float32(1)), F.const(np.uint8(0))], {"channels_last": 1})
    with pytest.raises(ValueError, match="y_scale must hold one value"):
        _core.op("QuantizeLinear", [x, F.const(np.ones(2, np.float32)), F.const(np.uint8(0))], {})
    with pytest.raises(TypeError, match="y_zero_point must be int8 or uint8"):
        _core.op("QuantizeLinear", [x, F.const(np.float32(1)), F.const(np.int32(0))], {})
