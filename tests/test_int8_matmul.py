"""The int8 GEMM (expr.matmul_integer, expr.dynamic_quant_matmul): exact int32 results against
NumPy's int64 arithmetic on every usable SIMD target, the dynamic quantization against a NumPy
reference of the same arithmetic and against onnxruntime's quantize_dynamic, and bad inputs."""

import contextlib

import numpy as np
import pytest

import mnnpy
import mnnpy.expr as F
from helpers import simd_target

TARGETS = mnnpy.runtime_info()["simd_targets_usable"]

# M, K, N: ones, odd sizes, sizes that are not multiples of the micro-tiles (4 or 8 rows, 16 or 32
# columns) or of the depth groups (4), one past them, and a deep product.
SHAPES = [(1, 1, 1), (1, 5, 3), (3, 5, 7), (4, 16, 16), (5, 17, 33), (8, 4, 32), (9, 33, 31), (13, 100, 47),
          (1, 768, 70), (33, 1029, 65), (2, 3001, 17)]




def _random(rng, dtype, shape):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, shape).astype(dtype)


def _reference(a, b, za=None, zb=None):
    """(a - za) @ (b - zb) in int64, wrapped to int32 as ONNX's int32 arithmetic."""
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    if za is not None:
        za = np.asarray(za).astype(np.int64)
        a64 = a64 - (za.reshape(-1, 1) if za.ndim == 1 and za.size > 1 else za.reshape(()))
    if zb is not None:
        b64 = b64 - np.asarray(zb).astype(np.int64)
    return np.matmul(a64, b64).astype(np.int32)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("a_dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("b_dtype", [np.int8, np.uint8])
def test_matmul_integer_is_exact(rng, target, a_dtype, b_dtype):
    with simd_target(target):
        for M, K, N in SHAPES:
            a, b = _random(rng, a_dtype, (M, K)), _random(rng, b_dtype, (K, N))
            # Extremes in a row and a column: the largest products.
            a[0, :] = np.iinfo(a_dtype).min
            b[:, 0] = np.iinfo(b_dtype).min
            za = _random(rng, a_dtype, ())
            zb_col = _random(rng, b_dtype, (N,))
            za_row = _random(rng, a_dtype, (M,))
            cases = [(None, None), (za, None), (None, zb_col), (za, _random(rng, b_dtype, ())), (za_row, zb_col)]
            for zero_a, zero_b in cases:
                for b_operand in (F.const(b), b):  # packed at plan time, and packed at run time
                    got = F.matmul_integer(a, b_operand, zero_a, zero_b).read()
                    assert got.dtype == np.int32 and got.shape == (M, N)
                    np.testing.assert_array_equal(got, _reference(a, b, zero_a, zero_b),
                                                  err_msg=f"{target} M,K,N={M},{K},{N} zeros {zero_a is not None},"
                                                          f"{zero_b is not None}")


@pytest.mark.parametrize("target", TARGETS)
def test_matmul_integer_batches(rng, target):
    with simd_target(target):
        a = _random(rng, np.uint8, (2, 3, 5, 37))
        b = _random(rng, np.int8, (37, 19))
        za, zb = np.uint8(131), _random(rng, np.int8, (19,))
        np.testing.assert_array_equal(F.matmul_integer(a, F.const(b), za, zb).read(), _reference(a, b, za, zb))
        # Per-row zero points of A with a batch: one product per matrix of the stack.
        za_row = _random(rng, np.uint8, (5,))
        np.testing.assert_array_equal(F.matmul_integer(a, b, za_row, zb).read(), _reference(a, b, za_row, zb))
        # B with a batch of its own, broadcast against A's.
        bb = _random(rng, np.int8, (3, 37, 6))
        np.testing.assert_array_equal(F.matmul_integer(a, bb, za).read(), _reference(a, bb, za))
        # Vector operands, as numpy.matmul.
        v = _random(rng, np.int8, (37,))
        np.testing.assert_array_equal(F.matmul_integer(v, b).read(), _reference(v, b))
        np.testing.assert_array_equal(F.matmul_integer(a[0, 0], v).read(), _reference(a[0, 0], v))


def test_matmul_integer_wraps_like_int32(rng):
    # 70000 products of 255 * 127 pass int32's range: results wrap modulo 2^32, as ONNX's int32 do.
    a = np.full((2, 70000), 255, np.uint8)
    b = np.full((70000, 3), 127, np.int8)
    b[:, 1] = _random(rng, np.int8, (70000,))
    expected = _reference(a, b)
    assert (np.matmul(a.astype(np.int64), b.astype(np.int64)) > 2 ** 31).any()
    for target in TARGETS:
        with simd_target(target):
            np.testing.assert_array_equal(F.matmul_integer(a, F.const(b)).read(), expected)


def test_matmul_integer_threads_agree(rng):
    a, b = _random(rng, np.int8, (67, 300)), _random(rng, np.uint8, (300, 130))
    expected = _reference(a, b, np.int8(-3), np.uint8(7))
    threads = mnnpy.get_num_threads() if hasattr(mnnpy, "get_num_threads") else 1
    try:
        for n in (1, 2, 3):
            mnnpy.set_num_threads(n)
            np.testing.assert_array_equal(F.matmul_integer(a, F.const(b), np.int8(-3), np.uint8(7)).read(), expected)
    finally:
        mnnpy.set_num_threads(threads)


def _qlinear_reference(a, a_scale, za, b, b_scale, zb, y_scale, zy):
    """ONNX's QLinearMatMul in NumPy: the exact int32 sums, float32(sum) times the float32
    multiplier (a_scale * b_scale) / y_scale, rounded half to even, plus y_zero, saturated."""
    acc = _reference(a, b, za, zb)
    multiplier = (np.float32(a_scale) * np.asarray(b_scale, np.float32)) / np.float32(y_scale)
    v = acc.astype(np.float32) * multiplier.astype(np.float32)
    info = np.iinfo(np.asarray(zy).dtype)
    return np.clip(np.rint(v) + np.int64(zy), info.min, info.max).astype(np.asarray(zy).dtype)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("a_dtype, b_dtype, y_dtype", [(np.uint8, np.uint8, np.uint8), (np.int8, np.uint8, np.int8),
                                                       (np.uint8, np.int8, np.int8)])
def test_qlinear_matmul_requantizes_in_the_gemm(rng, target, a_dtype, b_dtype, y_dtype):
    """expr.qlinear_matmul against NumPy's arithmetic: batched activations (attention's products,
    one pack of B each; 40 and 128 rows reach AMX's tiles where the CPU has them), a broadcast B,
    per-column scales and zero points of a 2-D B, a constant B."""
    with simd_target(target):
        for a_shape, b_shape in [((2, 3, 40, 64), (2, 3, 64, 37)), ((1, 4, 128, 128), (1, 4, 128, 64)),
                                 ((2, 3, 7, 33), (1, 3, 33, 5)), ((5, 70), (70, 19))]:
            a, b = _random(rng, a_dtype, a_shape), _random(rng, b_dtype, b_shape)
            n = b_shape[-1]
            # Zero points near the data's middle and y's: outputs spread over y's range.
            mid = {np.dtype(np.uint8): 128, np.dtype(np.int8): 0}
            za = np.asarray(mid[np.dtype(a_dtype)] + rng.integers(-20, 20), a_dtype)
            zy = np.asarray(mid[np.dtype(y_dtype)] + rng.integers(-20, 20), y_dtype)
            per_column = len(b_shape) == 2
            zb = (mid[np.dtype(b_dtype)] + rng.integers(-20, 20, (n,) if per_column else ())).astype(b_dtype)
            sa = np.float32(0.02)
            sb = rng.uniform(0.01, 0.05, n).astype(np.float32) if per_column else np.float32(0.03)
            # y's scale: the largest result about 100 steps from the zero point.
            sy = np.float32(sa * np.max(sb) * np.abs(_reference(a, b, za, zb).astype(np.float64)).max() / 100)
            expected = _qlinear_reference(a, sa, za, b, sb, zb, sy, zy)
            for b_operand in (b, F.const(b)):
                got = F.qlinear_matmul(a, sa, za, b_operand, sb, zb, sy, zy).read()
                assert got.dtype == y_dtype
                np.testing.assert_array_equal(got, expected, err_msg=f"{target} {a_shape} x {b_shape}")
            assert len(np.unique(expected)) > 20  # the range is used, not one saturated value


def test_qlinear_matmul_threads_agree(rng):
    """12 products (threads take whole ones) and 2 (each split over the threads)."""
    threads = mnnpy.get_num_threads()
    try:
        for a_shape, b_shape in [((1, 12, 128, 64), (1, 12, 64, 128)), ((2, 1, 50, 64), (2, 1, 64, 70))]:
            a, b = _random(rng, np.uint8, a_shape), _random(rng, np.uint8, b_shape)
            sy = np.float32(0.02 * 0.03 * np.abs(_reference(a, b, np.uint8(120), np.uint8(131))).max() / 100)
            args = (np.float32(0.02), np.uint8(120), b, np.float32(0.03), np.uint8(131), sy, np.uint8(128))
            expected = _qlinear_reference(a, *args)
            for n in (1, 2, 3):
                mnnpy.set_num_threads(n)
                np.testing.assert_array_equal(F.qlinear_matmul(a, *args).read(), expected)
    finally:
        mnnpy.set_num_threads(threads)


def test_qlinear_matmul_bad_inputs():
    a8, b8 = np.zeros((3, 4), np.uint8), np.zeros((4, 5), np.uint8)
    f, u = np.float32(0.1), np.uint8(3)
    with pytest.raises(ValueError, match="a must be int8 or uint8"):
        F.qlinear_matmul(np.zeros((3, 4), np.float32), f, u, b8, f, u, f, u)
    with pytest.raises(ValueError, match="b must have at least 2 dimensions"):
        F.qlinear_matmul(a8, f, u, np.zeros(4, np.uint8), f, u, f, u)
    with pytest.raises(ValueError, match="4 columns but B has 6 rows"):
        F.qlinear_matmul(a8, f, u, np.zeros((6, 5), np.uint8), f, u, f, u)
    with pytest.raises(ValueError, match="a_scale must hold one value"):
        F.qlinear_matmul(a8, np.ones(3, np.float32), u, b8, f, u, f, u)
    with pytest.raises(ValueError, match="b_scale must be a scalar or hold one value per column of b"):
        F.qlinear_matmul(a8, f, u, b8, np.ones(4, np.float32), u, f, u)
    with pytest.raises(ValueError, match="b_zero_point must have b's type uint8"):
        F.qlinear_matmul(a8, f, u, b8, f, F.const(np.int8(0)), f, u)
    with pytest.raises(ValueError, match="y_scale must be float32"):
        F.qlinear_matmul(a8, f, u, b8, f, u, F.const(np.float64(0.1)), u)
    with pytest.raises(ValueError, match="y_zero_point must be int8 or uint8"):
        F.qlinear_matmul(a8, f, u, b8, f, u, f, F.const(np.int32(0)))
    with pytest.raises(ValueError, match="do not broadcast"):
        F.qlinear_matmul(np.zeros((2, 3, 4), np.uint8), f, u, np.zeros((3, 4, 5), np.uint8), f, u, f, u)


# ---------------------------------------------------------------- dynamic quantization
def _quantize_rows(x):
    """NumPy's float32 arithmetic of the kernel's per-row quantization (ONNX's
    DynamicQuantizeLinear per row)."""
    low = np.minimum(x.min(axis=-1), np.float32(0))
    high = np.maximum(x.max(axis=-1), np.float32(0))
    scale = ((high - low) / np.float32(255)).astype(np.float32)
    scale[scale == 0] = 1
    zero = np.rint(np.clip(-low / scale, 0, 255)).astype(np.float32)
    q = np.clip(np.rint(x / scale[..., None]) + zero[..., None], 0, 255).astype(np.uint8)
    return q, scale, zero.astype(np.int32)


def _quantize_columns(w):
    scale = (np.abs(w).max(axis=0) / np.float32(127)).astype(np.float32)
    scale[scale == 0] = 1
    return np.clip(np.rint(w / scale), -127, 127).astype(np.int8), scale


def _dynamic_reference(x, w_q, w_scale, bias):
    """float32(acc) * (row_scale * col_scale) + bias, from the exact int32 product; float64
    arithmetic rounded once to float32 (the kernel fuses the multiply-add: within 1 ulp)."""
    q, s, z = _quantize_rows(x.reshape(-1, x.shape[-1]))
    acc = _reference(q, w_q, z, None).astype(np.float32)
    scale = (s[:, None] * w_scale[None, :]).astype(np.float32)
    out = acc.astype(np.float64) * scale.astype(np.float64) + (0 if bias is None else bias.astype(np.float64))
    return out.astype(np.float32).reshape(x.shape[:-1] + (w_q.shape[1],))


@pytest.mark.parametrize("target", TARGETS)
def test_dynamic_quant_matmul_against_numpy(rng, target):
    with simd_target(target):
        for shape, N, with_bias in [((1, 64), 64, True), ((3, 7, 96), 33, True), ((130, 200), 70, False),
                                    ((5, 1), 3, True)]:
            x = rng.standard_normal(shape).astype(np.float32)
            x[..., 0, :] = np.abs(x[..., 0, :])  # a row without negatives: zero point 0
            if len(shape) > 1 and shape[-2] > 1:
                x[..., 1, :] = 0  # an all-zero row: scale 1
            w = rng.standard_normal((shape[-1], N)).astype(np.float32)
            bias = rng.standard_normal(N).astype(np.float32) if with_bias else None
            w_q, w_scale = (v.read() for v in F.quantize_weight_per_column(w))
            exp_q, exp_scale = _quantize_columns(w)
            np.testing.assert_array_equal(w_q, exp_q)
            np.testing.assert_array_equal(w_scale, exp_scale)
            got = F.dynamic_quant_matmul(x, F.const(w_q), w_scale, bias).read()
            expected = _dynamic_reference(x, w_q, w_scale, bias)
            assert got.dtype == np.float32 and got.shape == expected.shape
            assert (np.abs(got.astype(np.float64) - expected) <= np.spacing(np.abs(expected))).all(), target


def test_dynamic_quant_matmul_same_on_every_target(rng):
    x = rng.standard_normal((37, 300)).astype(np.float32)
    w_q, w_scale = _quantize_columns(rng.standard_normal((300, 45)).astype(np.float32))
    bias = rng.standard_normal(45).astype(np.float32)
    results = []
    for target in TARGETS:
        with simd_target(target):
            results.append(F.dynamic_quant_matmul(x, w_q, w_scale, bias).read())
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])


def _error_bound(x, w, w_scale, row_scale):
    """|y_quantized - x @ w| per output: each factor off by at most half its step, so
    sum_k |x| dw + |w| dx + dx dw (plus float32 rounding of the sums, far below)."""
    dx = (row_scale / 2)[:, None]
    dw = (w_scale / 2)[None, :]
    ax, aw = np.abs(x).astype(np.float64), np.abs(w).astype(np.float64)
    return ax.sum(axis=1, keepdims=True) * dw + dx * aw.sum(axis=0, keepdims=True) + x.shape[1] * dx * dw + 1e-5


def test_dynamic_quant_matmul_against_onnxruntime(rng, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    quantization = pytest.importorskip("onnxruntime.quantization")
    onnx = pytest.importorskip("onnx")
    from onnx import helper as h, numpy_helper
    M, K, N = 24, 128, 80
    x = rng.standard_normal((M, K)).astype(np.float32)
    w = (rng.standard_normal((K, N)) * 0.1).astype(np.float32)
    bias = rng.standard_normal(N).astype(np.float32)
    graph = h.make_graph([h.make_node("MatMul", ["x", "w"], ["xw"]), h.make_node("Add", ["xw", "bias"], ["y"])], "linear",
                         [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [M, K])],
                         [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [M, N])],
                         [numpy_helper.from_array(w, "w"), numpy_helper.from_array(bias, "bias")])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    float_path, int8_path = tmp_path / "linear.onnx", tmp_path / "linear_int8.onnx"
    onnx.save(model, float_path)
    # reduce_range: 7-bit weights, as onnxruntime's AVX2 kernels saturate int16 pair sums of
    # full 8-bit ones (mnnpy's kernels are exact with 8 bits).
    quantization.quantize_dynamic(str(float_path), str(int8_path), per_channel=True, reduce_range=True,
                                  weight_type=quantization.QuantType.QInt8)
    session = ort.InferenceSession(str(int8_path), providers=["CPUExecutionProvider"])
    ort_y = session.run(None, {"x": x})[0].astype(np.float64)
    w_q, w_scale = (v.read() for v in F.quantize_weight_per_column(w))
    ours = F.dynamic_quant_matmul(x, w_q, w_scale, bias).read().astype(np.float64)
    exact = x.astype(np.float64) @ w.astype(np.float64) + bias
    ours_bound = _error_bound(x, w, w_scale, _quantize_rows(x)[1])
    # onnxruntime quantizes the whole activation tensor with one scale.
    ort_row_scale = np.full(M, (max(x.max(), 0) - min(x.min(), 0)) / 255, np.float64)
    ort_bound = _error_bound(x, w, np.abs(w).max(axis=0) / 63, ort_row_scale)
    assert (np.abs(ours - exact) <= ours_bound).all()
    assert (np.abs(ort_y - exact) <= ort_bound).all()
    assert (np.abs(ours - ort_y) <= ours_bound + ort_bound).all()


# ---------------------------------------------------------------- bad inputs
def test_bad_inputs_raise_value_errors():
    a8, b8 = np.zeros((3, 4), np.uint8), np.zeros((4, 5), np.int8)
    with pytest.raises(ValueError, match="a must be int8 or uint8"):
        F.matmul_integer(np.zeros((3, 4), np.float32), b8)
    with pytest.raises(ValueError, match="b must be int8 or uint8"):
        F.matmul_integer(a8, np.zeros((4, 5), np.int32))
    with pytest.raises(ValueError, match="4 columns but B has 6 rows"):
        F.matmul_integer(a8, np.zeros((6, 5), np.int8))
    with pytest.raises(ValueError, match="a_zero_point must be a scalar or hold one value per row"):
        F.matmul_integer(a8, b8, np.zeros(2, np.uint8))
    with pytest.raises(ValueError, match="b_zero_point must have B's type int8"):
        F.matmul_integer(a8, b8, None, F.const(np.zeros(5, np.uint8)))
    with pytest.raises(ValueError, match="do not broadcast"):
        F.matmul_integer(np.zeros((2, 3, 4), np.uint8), np.zeros((3, 4, 5), np.int8))
    x = np.zeros((3, 4), np.float32)
    with pytest.raises(ValueError, match="weights must be int8"):
        F.dynamic_quant_matmul(x, np.zeros((4, 5), np.float32), np.ones(5, np.float32))
    with pytest.raises(ValueError, match="x has 4 features"):
        F.dynamic_quant_matmul(x, np.zeros((6, 5), np.int8), np.ones(5, np.float32))
    with pytest.raises(ValueError, match="scales must be a scalar or hold one value per column"):
        F.dynamic_quant_matmul(x, b8, np.ones(3, np.float32))
    with pytest.raises(ValueError, match="x must be float32"):
        F.dynamic_quant_matmul(x.astype(np.float64), b8, np.ones(5, np.float32))
    with pytest.raises(ValueError, match="must be 2-D"):
        F.quantize_weight_per_column(np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="floating point"):
        F.quantize_weight_per_column(b8)


def test_each_target_runs_its_kernel():
    expected = {"AVX3_DL": "vnni", "AVX3": "madd16", "AVX2": "madd16", "SCALAR": "loop", "EMU128": "loop"}
    if AMX_INT8 and mnnpy._core.int8_gemm_info()["amx_enabled"]:
        expected["AVX3_DL"] = "amx"  # for products of at least amx_min_rows x amx_min_depth
    for target in TARGETS:
        with simd_target(target):
            info = mnnpy._core.int8_gemm_info()
        assert info["path"] == expected[target], (target, info)
        assert info["mr"] > 0 and info["nr"] % 16 == 0


def test_qdq_matmul_fuses_into_qlinear_matmul(rng, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    quantization = pytest.importorskip("onnxruntime.quantization")
    onnx = pytest.importorskip("onnx")
    from onnx import helper as h, numpy_helper
    from mnnpy import nn
    from mnnpy.convert import from_onnx
    w = (rng.standard_normal((96, 40)) * 0.1).astype(np.float32)
    graph = h.make_graph([h.make_node("MatMul", ["x", "w"], ["y"])], "mm",
                         [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [8, 96])],
                         [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [8, 40])],
                         [numpy_helper.from_array(w, "w")])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    float_path, qdq_path = str(tmp_path / "mm.onnx"), str(tmp_path / "mm_qdq.onnx")
    onnx.save(model, float_path)
    batches = iter([{"x": rng.standard_normal((8, 96)).astype(np.float32)} for _ in range(4)])

    class Calibration(quantization.CalibrationDataReader):
        def get_next(self):
            return next(batches, None)
    quantization.quantize_static(float_path, qdq_path, Calibration(), quant_format=quantization.QuantFormat.QDQ,
                                 per_channel=False, reduce_range=True, activation_type=quantization.QuantType.QUInt8,
                                 weight_type=quantization.QuantType.QInt8, op_types_to_quantize=["MatMul"])
    counts = from_onnx(qdq_path)[0].op_counts()
    assert counts.get("QLinearMatMul") == 1 and "MatMul" not in counts, counts
    x = rng.standard_normal((8, 96)).astype(np.float32)
    expected = ort.InferenceSession(qdq_path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = np.asarray(nn.load_module_from_file(qdq_path)(x))
    init = {i.name: numpy_helper.to_array(i) for i in onnx.load(qdq_path).graph.initializer}
    y_scale = float([v for k, v in init.items() if k.startswith("y") and k.endswith("_scale")][0])
    # The same integer product, requantized in float32 in both (the combined scale possibly formed
    # in another order): at most one step apart.
    assert np.abs(got.astype(np.float64) - expected).max() <= y_scale * 1.001


# ---------------------------------------------------------------- AMX-INT8 tiles
# The AMX path (AVX3_DL target, CPUs with AMX-INT8) against NumPy's int64 arithmetic and against
# the vector path, bit for bit. These run only where the CPU has AMX-INT8 and the OS grants the
# tile state; the switch's own checks run everywhere.
AMX_INT8 = mnnpy._core.int8_gemm_info()["amx_available"]
needs_amx = pytest.mark.skipif(not AMX_INT8, reason="the CPU has no AMX-INT8 (or the OS does not grant the tile state)")

# M, K, N: one tile (16 x 64 x 16), one row, depth or column past tiles and blocks (32 x 64 x 32),
# depths short of one tile, depth groups not filled (K % 4), and deep products.
AMX_SHAPES = [(16, 64, 16), (16, 3, 5), (17, 65, 17), (1, 64, 1), (15, 63, 15), (31, 127, 33), (32, 128, 32),
              (33, 64, 47), (48, 100, 96), (64, 192, 64), (77, 1029, 130), (100, 4096, 65), (90, 33, 200)]


@contextlib.contextmanager
def _int8_amx(on, min_rows=1, min_depth=1):
    """The AMX path on (for every product of at least min_rows x min_depth) or off, on AVX3_DL."""
    previous = mnnpy._core.set_int8_amx(on, min_rows, min_depth)
    try:
        with simd_target("AVX3_DL"):
            yield
    finally:
        mnnpy._core.set_int8_amx(*previous)


def test_int8_amx_switch():
    info = mnnpy._core.int8_gemm_info()
    previous = mnnpy._core.set_int8_amx(False, 5, 7)
    try:
        assert previous == (info["amx_enabled"], info["amx_min_rows"], info["amx_min_depth"])
        off = mnnpy._core.int8_gemm_info()
        assert (off["amx_enabled"], off["amx_min_rows"], off["amx_min_depth"]) == (False, 5, 7)
        assert off["path"] != "amx"
        with pytest.raises(ValueError, match="min_rows >= 1 and min_depth >= 1"):
            mnnpy._core.set_int8_amx(True, 0, 64)
    finally:
        mnnpy._core.set_int8_amx(*previous)
    assert mnnpy._core.int8_gemm_info() == info
    if not AMX_INT8:  # never chosen without the hardware, whatever the switch says
        for target in TARGETS:
            with simd_target(target):
                assert mnnpy._core.int8_gemm_info()["path"] != "amx"


@needs_amx
@pytest.mark.parametrize("a_dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("b_dtype", [np.int8, np.uint8])
def test_int8_amx_is_exact(rng, a_dtype, b_dtype):
    with _int8_amx(True):
        assert mnnpy._core.int8_gemm_info()["path"] == "amx"
        for M, K, N in AMX_SHAPES:
            a, b = _random(rng, a_dtype, (M, K)), _random(rng, b_dtype, (K, N))
            a[0, :] = np.iinfo(a_dtype).min
            b[:, 0] = np.iinfo(b_dtype).min
            a[-1, :] = np.iinfo(a_dtype).max
            cases = [(None, None), (_random(rng, a_dtype, ()), _random(rng, b_dtype, (N,))),
                     (_random(rng, a_dtype, (M,)), _random(rng, b_dtype, ()))]
            for zero_a, zero_b in cases:
                for b_operand in (F.const(b), b):
                    got = F.matmul_integer(a, b_operand, zero_a, zero_b).read()
                    np.testing.assert_array_equal(got, _reference(a, b, zero_a, zero_b),
                                                  err_msg=f"AMX M,K,N={M},{K},{N} zeros {zero_a is not None}")


@needs_amx
def test_int8_amx_matches_vector_path(rng):
    """Bit-identical to the VNNI path: int32 products with zero points, the float epilogue of
    dynamic quantization, a strided A (a slice) and the int8 convolutions' GEMM with its 8-bit
    epilogue (NCHW and channels last, 1x1 and 3x3, uint8 and int8 outputs)."""
    a, b = _random(rng, np.uint8, (70, 300)), _random(rng, np.int8, (300, 90))
    x = rng.standard_normal((45, 200)).astype(np.float32)
    w_q, w_scale = _quantize_columns(rng.standard_normal((200, 77)).astype(np.float32))
    bias = rng.standard_normal(77).astype(np.float32)
    xc = _random(rng, np.uint8, (2, 32, 15, 14))
    wc = _random(rng, np.int8, (40, 32, 3, 3))
    wz = _random(rng, np.int8, (40,))
    ws = rng.uniform(0.001, 0.01, 40).astype(np.float32)
    xc_last = np.ascontiguousarray(xc.transpose(0, 2, 3, 1))
    bias_c = rng.integers(-5000, 5000, 40).astype(np.int32)

    zb = _random(rng, np.int8, (90,))
    # Read in place by AMX (uint8 A, symmetric int8 B): K a multiple of 64 with a partial last
    # block of rows, a slice whose rows lie 320 bytes apart, K = 96 (each row's last tile reads
    # into the next row; the last rows' blocks are copied, with 64 rows too, where the last row
    # would read past A), and channels-last patches padded to whole tiles of 64 depths (a 7x7
    # layer on 3 channels: K = 147) or whole already (K = 576).
    a64, b64 = _random(rng, np.uint8, (70, 320)), _random(rng, np.int8, (320, 50))
    a96, b96 = _random(rng, np.uint8, (64, 96)), _random(rng, np.int8, (96, 40))
    x3 = _random(rng, np.uint8, (1, 23, 22, 3))
    w7 = _random(rng, np.int8, (16, 3, 7, 7))
    x64 = _random(rng, np.uint8, (1, 9, 11, 64))
    w3 = _random(rng, np.int8, (24, 64, 3, 3))

    def run():
        return [F.matmul_integer(a, F.const(b), np.uint8(7), zb).read(),
                F.matmul_integer(a[:, 3:250], b[3:250]).read(),
                F.dynamic_quant_matmul(x, F.const(w_q), w_scale, bias).read(),
                F.qlinear_conv2d(xc, np.float32(0.02), np.uint8(120), F.const(wc), ws, wz, np.float32(3.0),
                                 np.uint8(128), None, (1, 1), (1, 1, 1, 1)).read(),
                F.qlinear_conv2d(xc_last, np.float32(0.02), np.uint8(120), F.const(wc), ws, np.int8(0),
                                 np.float32(3.0), np.int8(-5), bias_c, (1, 1), (1, 1, 1, 1),
                                 channels_last=True).read(),
                F.qlinear_conv2d(xc_last, np.float32(0.02), np.uint8(120), F.const(wc[:, :, 1:2, 1:2]), ws,
                                 np.int8(0), np.float32(0.5), np.uint8(100), bias_c, relu=True,
                                 channels_last=True).read(),
                F.matmul_integer(a64, F.const(b64), np.uint8(9)).read(),
                F.matmul_integer(a64[:, :256], F.const(b64[:256])).read(),
                F.matmul_integer(a96, F.const(b96), np.uint8(3)).read(),
                F.matmul_integer(a96[:45], F.const(b96)).read(),
                F.matmul_integer(a64[:, :100], F.const(b64[:100])).read(),
                F.qlinear_conv2d(x3, np.float32(0.02), np.uint8(120), F.const(w7), ws[:16], np.int8(0),
                                 np.float32(0.5), np.uint8(128), bias_c[:16], (2, 2), (3, 3, 3, 3),
                                 channels_last=True).read(),
                F.qlinear_conv2d(x64, np.float32(0.02), np.uint8(120), F.const(w3), ws[:24], np.int8(0),
                                 np.float32(2.0), np.uint8(128), bias_c[:24], (1, 1), (1, 1, 1, 1),
                                 channels_last=True).read()]

    with _int8_amx(False):
        assert mnnpy._core.int8_gemm_info()["path"] == "vnni"
        vector = run()
    with _int8_amx(True):
        amx = run()
    for got, expected in zip(amx, vector):
        np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(vector[1], _reference(a[:, 3:250], b[3:250]))
    np.testing.assert_array_equal(vector[6], _reference(a64, b64, np.uint8(9)))
    np.testing.assert_array_equal(vector[7], _reference(a64[:, :256], b64[:256]))
    np.testing.assert_array_equal(vector[8], _reference(a96, b96, np.uint8(3)))
    np.testing.assert_array_equal(vector[9], _reference(a96[:45], b96))
    np.testing.assert_array_equal(vector[10], _reference(a64[:, :100], b64[:100]))
    assert all(len(np.unique(y)) > 3 for y in vector[11:])  # not all saturated


@needs_amx
def test_int8_amx_wraps_like_int32(rng):
    a = np.full((20, 70000), 255, np.uint8)
    b = np.full((70000, 19), 127, np.int8)
    b[:, 1] = _random(rng, np.int8, (70000,))
    a[1] = _random(rng, np.uint8, (70000,))
    assert (np.matmul(a.astype(np.int64), b.astype(np.int64)) > 2 ** 31).any()
    with _int8_amx(True):
        np.testing.assert_array_equal(F.matmul_integer(a, F.const(b)).read(), _reference(a, b))
        np.testing.assert_array_equal(F.matmul_integer(a.view(np.int8), F.const(b)).read(),
                                      _reference(a.view(np.int8), b))


@needs_amx
def test_int8_amx_threads_agree(rng):
    a, b = _random(rng, np.int8, (300, 517)), _random(rng, np.uint8, (517, 260))
    expected = _reference(a, b, np.int8(-3), np.uint8(7))
    threads = mnnpy.get_num_threads()
    try:
        with _int8_amx(True, 16, 64):
            for n in (1, 2, 3, 8):
                mnnpy.set_num_threads(n)
                got = F.matmul_integer(a, F.const(b), np.int8(-3), np.uint8(7)).read()
                np.testing.assert_array_equal(got, expected, err_msg=f"{n} threads")
    finally:
        mnnpy.set_num_threads(threads)


@needs_amx
def test_int8_amx_default_sizes(rng):
    """With the default thresholds, small products stay on VNNI and large ones go to AMX: both exact."""
    previous = mnnpy._core.set_int8_amx(True)
    try:
        info = mnnpy._core.int8_gemm_info()
        with simd_target("AVX3_DL"):
            for M, K in [(info["amx_min_rows"] - 1, 300), (40, info["amx_min_depth"] - 1),
                         (info["amx_min_rows"], info["amx_min_depth"])]:
                a, b = _random(rng, np.uint8, (M, K)), _random(rng, np.int8, (K, 50))
                np.testing.assert_array_equal(F.matmul_integer(a, F.const(b), np.uint8(9)).read(),
                                              _reference(a, b, np.uint8(9)))
    finally:
        mnnpy._core.set_int8_amx(*previous)
