"""uint16, uint32 and uint64 against NumPy: round trips, NumPy 2's promotion, arithmetic,
comparisons, bitwise ops and shifts, casts, reductions, scans, sorts and data movement, over every
dtype pair involving them, with values covering each type's full range (uint64 above 2**63 too).
Every test runs on the process's SIMD target and on the portable one (the `simd` fixture)."""
import numpy as np
import pytest

import mnnpy
import mnnpy.numpy as mnp
from mnnpy import _core

NEW = ["uint16", "uint32", "uint64"]
INTS = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
FLOATS = ["float16", "float32", "float64"]
ALL = ["bool"] + INTS + FLOATS
N = 263  # odd, longer than any vector: whole vectors and a tail


def values(rng, dtype, n=N):
    """Seeded values over the whole range of `dtype`, with its extremes (and for uint64 the
    values around 2**63 and 2**53) included."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(n) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, n, endpoint=True, dtype=dtype)
        edges = [info.min, info.max, 0, 1, info.max - 1, info.max // 2, info.max // 2 + 1]
        if dtype == np.uint64:
            edges += [2**63, 2**63 - 1, 2**63 + 1, 2**53 + 1, 2**64 - 2]
        edges = np.array(edges, dtype=np.uint64 if dtype == np.uint64 else np.int64).astype(dtype)[:n]
        x[:len(edges)] = edges
        return x
    scale = 1000.0 if dtype == np.float16 else 1e6
    return (rng.standard_normal(n) * scale).astype(dtype)


def read(v):
    return np.asarray(v)


def assert_same(ours, expected, what=""):
    ours, expected = read(ours), np.asarray(expected)
    assert ours.dtype == expected.dtype, (what, ours.dtype, expected.dtype)
    assert ours.shape == expected.shape, (what, ours.shape, expected.shape)
    if expected.dtype.kind == "f":
        same = (ours == expected) | (np.isnan(ours) & np.isnan(expected))
    else:
        same = ours == expected
    bad = np.flatnonzero(~same)
    assert bad.size == 0, (what, bad[:5], ours.reshape(-1)[bad[:5]], expected.reshape(-1)[bad[:5]])


def pairs():
    return [(a, b) for a in ALL for b in ALL if a in NEW or b in NEW]


# ---------------------------------------------------------------- dtypes and round trips
@pytest.mark.parametrize("dtype", NEW)
def test_round_trip(simd, rng, dtype):
    x = values(rng, dtype).reshape(1, -1)
    v = mnp.asarray(x)
    assert v.dtype == np.dtype(dtype) and v.itemsize == np.dtype(dtype).itemsize
    assert_same(v, x)
    assert_same(mnnpy.expr.const(x), x)
    assert_same(_core.const(x, dtype, "NCHW"), x)
    assert_same(mnp.zeros(5, dtype), np.zeros(5, dtype))
    assert_same(mnp.full((3, 4), np.iinfo(dtype).max, dtype), np.full((3, 4), np.iinfo(dtype).max, dtype))
    assert int(mnp.asarray(np.array(np.iinfo(dtype).max, dtype))) == int(np.iinfo(dtype).max)


@pytest.mark.parametrize("a,b", [(a, b) for a in ALL for b in ALL])
def test_promotion(a, b):
    assert _core.promote_types(np.dtype(a), np.dtype(b)) == np.result_type(a, b), (a, b)


@pytest.mark.parametrize("a,b", pairs())
def test_operator_result_dtypes(a, b):
    x, y = np.ones(3, a), np.ones(3, b)
    assert mnp.add(x, y).dtype == np.add(x, y).dtype
    assert mnp.true_divide(x, y).dtype == np.true_divide(x, y).dtype
    assert mnp.less(x, y).dtype == np.bool_


# ---------------------------------------------------------------- elementwise
ARITH = ["add", "subtract", "multiply", "maximum", "minimum", "true_divide"]
INT_DIVISION = ["floor_divide", "remainder", "fmod"]
COMPARE = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]
BITWISE = ["bitwise_and", "bitwise_or", "bitwise_xor"]


def numpy_ref(fn, *args):
    with np.errstate(all="ignore"):
        return fn(*args)


@pytest.mark.parametrize("a,b", pairs())
def test_binary_pairs(simd, rng, a, b):
    x, y = values(rng, a), values(rng, b)
    with np.errstate(all="ignore"):
        y[::11] = x[::11].astype(b)  # equal pairs for the comparisons (where the cast keeps the value)
    result = np.result_type(a, b)
    for name in ARITH + COMPARE:
        fn = getattr(np, name)
        assert_same(getattr(mnp, name)(x, y), numpy_ref(fn, x, y), f"{name} {a} {b}")
        # One side a single value (kept in a register by the kernels).
        assert_same(getattr(mnp, name)(x, y[3]), numpy_ref(fn, x, y[3]), f"{name} {a} {b}[3]")
    if result.kind in "iu":
        # NumPy's integer semantics (floor towards minus infinity, remainder with the divisor's
        # sign); a zero divisor is compared nowhere, NumPy's value there depends on its loop.
        nonzero = y != 0
        for name in INT_DIVISION:
            ours = read(getattr(mnp, name)(x, y))
            expected = numpy_ref(getattr(np, name), x, y)
            assert_same(ours[nonzero], expected[nonzero], f"{name} {a} {b}")
            assert_same(ours[~nonzero], np.zeros((~nonzero).sum(), result), f"{name} {a} {b} by zero")
        for name in BITWISE:
            assert_same(getattr(mnp, name)(x, y), getattr(np, name)(x, y), f"{name} {a} {b}")
    elif result.kind == "f" and a != "bool" and b != "bool" and np.dtype(a).kind in "iu" and np.dtype(b).kind in "iu":
        # uint64 with a signed integer computes in float64 in NumPy 2: bitwise ops are refused.
        with pytest.raises(TypeError):
            mnp.bitwise_and(x, y)


@pytest.mark.parametrize("dtype", NEW)
def test_shifts(simd, rng, dtype):
    bits = 8 * np.dtype(dtype).itemsize
    x = values(rng, dtype)
    for shift_dtype in ["uint8", dtype, "uint64"] if dtype != "uint64" else ["uint8", dtype]:
        s = rng.integers(0, bits + 3, N).astype(shift_dtype)  # shifts of the width and more: 0
        for name in ("left_shift", "right_shift"):
            assert_same(getattr(mnp, name)(x, s), getattr(np, name)(x, s), f"{name} {dtype} by {shift_dtype}")
            assert_same(getattr(mnp, name)(x, s[5]), getattr(np, name)(x, s[5]), f"{name} {dtype} by one")


@pytest.mark.parametrize("dtype", NEW)
def test_unary(simd, rng, dtype):
    x = values(rng, dtype)
    for name in ("negative", "absolute", "sign", "square", "invert", "logical_not", "positive"):
        assert_same(getattr(mnp, name)(x), numpy_ref(getattr(np, name), x), name)
    small = rng.integers(0, 12, N).astype(dtype)
    assert_same(mnp.power(small, small % 5), np.power(small, small % 5), "power")
    assert_same(mnp.sqrt(x), np.sqrt(x), "sqrt")  # through the float type NumPy picks


@pytest.mark.parametrize("dtype", NEW)
def test_python_scalars(simd, rng, dtype):
    # Python ints take the array's dtype (NumPy 2's weak scalars), up to the type's maximum.
    x = values(rng, dtype)
    top = int(np.iinfo(dtype).max)
    for k in (0, 1, 7, top):
        assert_same(mnp.asarray(x) + k, x + k, f"+ {k}")
        assert_same(mnp.asarray(x) * k, numpy_ref(np.multiply, x, np.array(k, dtype)), f"* {k}")
        assert_same(mnp.asarray(x) < k, x < k, f"< {k}")
        assert_same(mnp.asarray(x) == k, x == k, f"== {k}")
    # Comparisons with values outside the type's range are still exact.
    assert_same(mnp.asarray(x) > -1, x > -1)
    assert_same(mnp.asarray(x) < top + 1, x < top + 1)
    with pytest.raises(OverflowError):
        mnp.asarray(x) + (top + 1)


# ---------------------------------------------------------------- casts
@pytest.mark.parametrize("src,dst", pairs())
def test_casts(simd, rng, src, dst):
    x = values(rng, src)
    if np.dtype(src).kind == "f" and np.dtype(dst).kind in "iu":
        # NumPy leaves out-of-range float to int casts undefined: values inside the target's range.
        info = np.iinfo(dst)
        hi = min(float(info.max), float(np.finfo(src).max))
        x = np.clip(np.abs(x.astype(np.float64)) if info.min == 0 else x.astype(np.float64),
                    float(info.min), np.nextafter(hi, 0)).astype(src)
        x = np.where(x.astype(np.float64) >= float(info.max), 0, x).astype(src)
    with np.errstate(all="ignore"):
        expected = x.astype(dst)
    assert_same(mnp.asarray(x).astype(dst), expected, f"{src}->{dst}")
    assert_same(_core.cast(mnp.asarray(x), np.dtype(dst)), expected, f"{src}->{dst} cast")


# ---------------------------------------------------------------- reductions, scans, sorting
@pytest.mark.parametrize("dtype", NEW)
def test_reductions(simd, rng, dtype):
    x = values(rng, dtype, 37 * 53).reshape(37, 53)
    for axis in (None, 0, 1):
        for fn in ("sum", "prod", "max", "min", "ptp"):
            assert_same(getattr(mnp, fn)(x, axis=axis), numpy_ref(getattr(np, fn), x, axis), f"{fn} {axis}")
        for fn in ("argmax", "argmin"):
            assert_same(getattr(mnp, fn)(x, axis=axis), getattr(np, fn)(x, axis=axis), f"{fn} {axis}")
        # The mean of float64 conversions: two summation orders differ by at most
        # 2 gamma_k sum|x| / k (gamma_k = k eps / (1 - k eps)), plus the quotient's rounding.
        k = x.size if axis is None else x.shape[axis]
        eps = np.finfo(np.float64).eps
        gamma = k * eps / (1 - k * eps)
        expected = np.mean(x, axis=axis)
        bound = 2 * gamma * np.sum(x.astype(np.float64), axis=axis) / k + np.spacing(expected)
        ours = read(mnp.mean(x, axis=axis))
        assert ours.dtype == np.float64 and np.all(np.abs(ours - expected) <= bound)
    # Long rows reach the vector paths of max/min/argmax.
    long = values(rng, dtype, 100_003)
    for fn in ("max", "min", "argmax", "argmin", "sum"):
        assert_same(getattr(mnp, fn)(long), numpy_ref(getattr(np, fn), long), f"{fn} long")


@pytest.mark.parametrize("dtype", NEW)
def test_scans(simd, rng, dtype):
    x = values(rng, dtype, 13 * 41).reshape(13, 41)
    for fn in ("cumsum", "cumprod"):
        for axis in (0, 1, None):
            assert_same(getattr(mnp, fn)(x, axis=axis), numpy_ref(getattr(np, fn), x, axis), f"{fn} {axis}")


@pytest.mark.parametrize("dtype", NEW)
def test_sorting(simd, rng, dtype):
    for shape in ((7, 5), (19, 1001), (300_007,)):
        x = values(rng, dtype, int(np.prod(shape))).reshape(shape)
        x.reshape(-1)[::7] = x.reshape(-1)[3]  # ties
        assert_same(mnp.sort(x, axis=-1), np.sort(x, axis=-1), f"sort {shape}")
        assert_same(mnp.argsort(x, axis=-1, kind="stable"), np.argsort(x, axis=-1, kind="stable"),
                    f"argsort {shape}")
        assert_same(mnp.unique(x)[:50], np.unique(x)[:50], f"unique {shape}")
    x = values(rng, dtype, 301)
    assert_same(mnp.searchsorted(np.sort(x), x), np.searchsorted(np.sort(x), x), "searchsorted")


@pytest.mark.parametrize("dtype", NEW)
def test_data_movement(simd, rng, dtype):
    x = values(rng, dtype, 6 * 7 * 9).reshape(6, 7, 9)
    y = values(rng, dtype, 6 * 7 * 9).reshape(6, 7, 9)
    index = rng.integers(0, 7, 11)
    cond = rng.random((6, 7, 9)) < 0.5
    assert_same(mnp.reshape(x, (42, 9)), x.reshape(42, 9))
    assert_same(mnp.transpose(x, (2, 0, 1)), x.transpose(2, 0, 1))
    assert_same(mnp.asarray(x)[1:5:2, ::-1, 3:], x[1:5:2, ::-1, 3:])
    assert_same(mnp.take(x, index, axis=1), np.take(x, index, axis=1))
    assert_same(mnp.concatenate([x, y], axis=2), np.concatenate([x, y], axis=2))
    assert_same(mnp.stack([x, y]), np.stack([x, y]))
    assert_same(mnp.where(cond, x, y), np.where(cond, x, y))
    assert_same(mnp.where(cond, x, y[0, 0, 0]), np.where(cond, x, y[0, 0, 0]))
    assert_same(mnp.pad(x, ((1, 2), (0, 1), (3, 0))), np.pad(x, ((1, 2), (0, 1), (3, 0))))
    top = np.iinfo(dtype).max
    assert_same(mnp.pad(x, 1, constant_values=top), np.pad(x, 1, constant_values=top))
    assert_same(mnp.broadcast_to(x[:, :1], (6, 4, 9)), np.broadcast_to(x[:, :1], (6, 4, 9)))
    # Unsigned index arrays select as NumPy's do.
    assert_same(mnp.take(x, index.astype(dtype), axis=2), np.take(x, index.astype(dtype), axis=2))
    assert_same(mnp.asarray(x)[index.astype(dtype) % 6], x[index.astype(dtype) % 6])
    # An index past the end is an IndexError, also above int64's range (never a negative index).
    too_far = np.array([1, np.iinfo(dtype).max], dtype)
    for take in (lambda: mnp.asarray(x)[too_far], lambda: mnp.take(x, too_far, axis=2)):
        with pytest.raises(IndexError):
            read(take())


@pytest.mark.parametrize("dtype", NEW)
def test_matmul(simd, rng, dtype):
    # Integer matrix products wrap as NumPy's do.
    a = values(rng, dtype, 9 * 13).reshape(9, 13)
    b = values(rng, dtype, 13 * 5).reshape(13, 5)
    assert_same(mnp.matmul(a, b), np.matmul(a, b))


# ---------------------------------------------------------------- backends and files
def test_vulkan_leaves_them_to_the_cpu(rng):
    # The Vulkan kernels have no unsigned paths: their nodes run on the CPU (the profile says
    # so), with the CPU's values.
    if "vulkan" not in mnnpy.runtime_info()["backends"]:
        pytest.skip("no Vulkan device")
    from helpers import compute_steps, profiled
    x, y = values(rng, "uint32"), values(rng, "uint32")
    f = np.arange(N, dtype=np.float32)

    def build():
        return (mnnpy.expr.const(x) * mnnpy.expr.const(y) + np.uint32(7), mnp.sum(mnnpy.expr.const(x)),
                mnnpy.expr.const(f) * 2.0 + mnnpy.expr.const(f))

    ours, profile = profiled(build, "vulkan")
    assert_same(ours[0], x * y + np.uint32(7))
    assert_same(ours[1], np.sum(x))
    assert_same(ours[2], f * 2.0 + f)
    steps = compute_steps(profile)
    on_cpu = [s["op"] for s in steps if s["backend"] == "cpu"]
    assert all(s["fallback"] for s in steps if s["backend"] == "cpu"), steps
    assert "Reduce" in on_cpu and any(op.startswith("Fused(Mul") for op in on_cpu), steps
    assert any(s["backend"] == "vulkan" for s in steps), steps  # the float32 program


def test_onnx_model_with_unsigned_tensors(tmp_path, rng):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper, numpy_helper

    from mnnpy import convert, nn
    w = values(rng, "uint32", 12).reshape(3, 4)
    nodes = [helper.make_node("Add", ["x", "w"], ["s"]), helper.make_node("Max", ["s", "w"], ["y"]),
             helper.make_node("Cast", ["y"], ["z"], to=TensorProto.UINT64)]
    graph = helper.make_graph(nodes, "unsigned", [helper.make_tensor_value_info("x", TensorProto.UINT32, [3, 4])],
                              [helper.make_tensor_value_info("z", TensorProto.UINT64, [3, 4])],
                              [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path = tmp_path / "unsigned.onnx"
    onnx.save(model, str(path))
    x = values(rng, "uint32", 12).reshape(3, 4)
    expected = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    converted, report = convert.from_onnx(str(path))
    assert not report.unsupported
    module = nn._ConvertedModule(converted, converted.weights, [v.name for v in converted.inputs], [])
    out = module.forward([mnnpy.expr.const(x)])
    assert_same(out[0] if isinstance(out, (list, tuple)) else out, expected)


def test_graph_files_keep_them(tmp_path, rng):
    # Placeholders, constants and Cast targets of the unsigned types survive save and load (new
    # dtype codes; the older ones keep theirs).
    x = values(rng, "uint32", 12).reshape(3, 4)
    c = values(rng, "uint64", 4)
    p = _core.placeholder((3, 4), np.dtype(np.uint32))
    out = [_core.cast(p, np.dtype(np.uint64)) * mnnpy.expr.const(c), _core.cast(p, np.dtype(np.uint16)),
           _core.cast(p, np.dtype(np.float32))]
    expected = [x.astype(np.uint64) * c, x.astype(np.uint16), x.astype(np.float32)]
    path = tmp_path / "unsigned.mnnpy"
    mnnpy.expr.save([p] + out, str(path))
    loaded = mnnpy.expr.load_as_list(str(path))
    assert len(loaded) == 4 and loaded[0].dtype == np.uint32
    loaded[0].write(x)
    for got, want in zip(loaded[1:], expected):
        assert_same(got, want)
