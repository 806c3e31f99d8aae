"""ONNX Einsum, Scatter/ScatterElements/ScatterND (with their reductions), GatherND with
batch_dims, MaxUnpool, NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss converted by mnnpy
and compared with onnxruntime (and with NumPy in float64, against error bounds of float32
arithmetic), plus the errors bad models raise."""
import functools

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import helper as h  # noqa: E402

import onnx_testing  # noqa: E402
from onnx_testing import run_mnnpy, run_onnxruntime  # noqa: E402

U32 = 2.0 ** -24  # float32 unit roundoff

make_model = functools.partial(onnx_testing.make_model, opset=18)  # the opset unless a test names one


def compare(got, expected, bound=None):
    """Same shape and dtype; integers equal, floats within ``bound`` (elementwise, or exact)."""
    assert got.shape == expected.shape, f"shape {got.shape} != {expected.shape}"
    assert got.dtype == expected.dtype, f"dtype {got.dtype} != {expected.dtype}"
    if expected.dtype.kind != "f" or bound is None:
        np.testing.assert_array_equal(got, expected)
    else:
        err = np.abs(got.astype(np.float64) - expected.astype(np.float64))
        assert np.all(err <= bound), f"max error {err.max()} over bound {np.max(bound)}"


# ------------------------------------------------------------------ Einsum
EQUATIONS = [
    ("ij,jk->ik", [(5, 7), (7, 4)]),
    ("bij,bjk->bik", [(3, 5, 6), (3, 6, 2)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 5, 8), (2, 3, 6, 8)]),
    ("ij,jk", [(4, 6), (6, 3)]),
    ("ij->ji", [(3, 4)]),
    ("abc->cab", [(2, 3, 4)]),
    ("ij->i", [(3, 9)]),
    ("ij->", [(3, 9)]),
    ("ii->i", [(5, 5)]),
    ("ii", [(5, 5)]),
    ("...ii->...i", [(3, 4, 4)]),
    ("i,j->ij", [(4,), (6,)]),
    ("i,i", [(11,), (11,)]),
    ("ij,ij->ij", [(3, 4), (3, 4)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (1, 5, 4, 2)]),
    ("bn,anm,bm->ba", [(3, 4), (2, 4, 5), (3, 5)]),
    ("ijk,kl,lm->im", [(2, 3, 4), (4, 5), (5, 6)]),
    ("Bij,jK->BiK", [(2, 3, 4), (4, 5)]),
    ("->", [()]),
]


def einsum_bound(equation, operands):
    """|fl(result) - result| for float32: gamma_n times the einsum of the absolute values, n the
    number of additions per output element plus the multiplications of each term."""
    exact_abs = np.einsum(equation, *[np.abs(x.astype(np.float64)) for x in operands])
    terms = max(1, int(np.prod([x.size for x in operands])) // max(1, np.size(exact_abs)))
    n = terms + len(operands)
    return n * U32 / (1 - n * U32) * exact_abs


@pytest.mark.parametrize("equation,shapes", EQUATIONS, ids=[e for e, _ in EQUATIONS])
def test_einsum_float32(rng, equation, shapes):
    operands = [rng.uniform(-2, 2, s).astype(np.float32) for s in shapes]
    inputs = {f"x{i}": x for i, x in enumerate(operands)}
    model = make_model(h.make_node("Einsum", list(inputs), ["y"], equation=equation), inputs, ["y"], opset=12)
    got, = run_mnnpy(model, inputs)
    exact = np.einsum(equation, *[x.astype(np.float64) for x in operands])
    bound = einsum_bound(equation, operands)
    compare(got, exact.astype(np.float32), bound + np.abs(exact) * U32)
    expected, = run_onnxruntime(model, inputs)
    compare(got, expected, 2 * bound + np.abs(exact) * 2 * U32)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("equation,shapes", [("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("ii->i", [(4, 4)]),
                                             ("ij->j", [(3, 5)])])
def test_einsum_integers(rng, equation, shapes, dtype):
    operands = [rng.integers(-20, 20, s).astype(dtype) for s in shapes]
    inputs = {f"x{i}": x for i, x in enumerate(operands)}
    model = make_model(h.make_node("Einsum", list(inputs), ["y"], equation=equation), inputs, ["y"], opset=12)
    got, = run_mnnpy(model, inputs)
    compare(got, np.einsum(equation, *operands).astype(dtype))
    compare(got, run_onnxruntime(model, inputs)[0])


@pytest.mark.parametrize("equation,shapes,message", [
    ("ij,jk->il", [(2, 3), (3, 4)], "never appeared"),
    ("ij,jk->ik", [(2, 3)], "fewer operands"),
    ("i1->i", [(2, 3)], "invalid subscript"),
    ("ijk->i", [(2, 3)], "too many subscripts"),
    ("ij,jk->ik", [(2, 3), (4, 5)], "broadcast"),
])
def test_einsum_bad_equation(equation, shapes, message):
    inputs = {f"x{i}": np.ones(s, np.float32) for i, s in enumerate(shapes)}
    model = make_model(h.make_node("Einsum", list(inputs), ["y"], equation=equation, name="bad_einsum"), inputs,
                       ["y"], opset=12)
    with pytest.raises(ValueError, match=f"bad_einsum.*{message}"):
        run_mnnpy(model, inputs)


# ------------------------------------------------------------------ Scatter family
def distinct_indices(rng, count, size, shape, negative=True):
    """Indices along an axis without repeats along it (ONNX leaves repeated writes without a
    reduction unordered), some written as negative."""
    idx = np.stack([rng.permutation(size)[:count] for _ in range(int(np.prod(shape)))], axis=-1)
    idx = idx.reshape((count,) + tuple(shape))
    if negative:
        idx = np.where(rng.random(idx.shape) < 0.4, idx - size, idx)
    return idx


def scatter_values(rng, shape, dtype, reduction):
    if np.dtype(dtype).kind == "f":
        return (rng.uniform(0.5, 1.5, shape) if reduction == "mul" else rng.uniform(-4, 4, shape)).astype(dtype)
    low, high = (-3, 4) if reduction == "mul" else (-50, 50)
    return rng.integers(low, high, shape).astype(dtype)


def scatter_bound(data, updates, reduction, repeats):
    """Float error of folding up to ``repeats`` updates into each element: exact for none, max
    and min; gamma_repeats times the sum (add) or the product (mul) of magnitudes."""
    if data.dtype.kind != "f" or reduction in ("none", "max", "min"):
        return None
    gamma = repeats * U32 / (1 - repeats * U32)
    magnitude = np.abs(data).max() + repeats * np.abs(updates).max() if reduction == "add" else \
        np.abs(data).max() * np.abs(updates).max() ** repeats
    return gamma * magnitude


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int32])
@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_scatter_elements(rng, axis, reduction, dtype):
    data = scatter_values(rng, (4, 5, 6), dtype, reduction)
    ax = axis % 3
    index_shape = [3, 4, 5]
    size = data.shape[ax]
    if reduction == "none":
        shape_without = [d for a, d in enumerate(index_shape) if a != ax]
        idx = np.moveaxis(distinct_indices(rng, index_shape[ax], size, shape_without), 0, ax)
    else:
        idx = rng.integers(-size, size, index_shape)  # repeats fold in
    updates = scatter_values(rng, idx.shape, dtype, reduction)
    inputs = {"data": data, "indices": idx.astype(np.int64), "updates": updates}
    node = h.make_node("ScatterElements", list(inputs), ["y"], axis=axis, reduction=reduction)
    model = make_model(node, inputs, ["y"])
    got, = run_mnnpy(model, inputs)
    compare(got, run_onnxruntime(model, inputs)[0], scatter_bound(data, updates, reduction, index_shape[ax]))


@pytest.mark.parametrize("opset", [9, 10])
@pytest.mark.parametrize("axis", [0, 1])
def test_scatter_deprecated(rng, opset, axis):
    data = rng.uniform(-1, 1, (5, 6)).astype(np.float32)
    index_shape = [3, 4] if axis == 0 else [4, 3]
    shape_without = [index_shape[1 - axis]]
    idx = np.moveaxis(distinct_indices(rng, index_shape[axis], data.shape[axis], shape_without, negative=False),
                      0, axis).astype(np.int32)
    updates = rng.uniform(-1, 1, idx.shape).astype(np.float32)
    inputs = {"data": data, "indices": idx, "updates": updates}
    model = make_model(h.make_node("Scatter", list(inputs), ["y"], axis=axis), inputs, ["y"], opset=opset)
    got, = run_mnnpy(model, inputs)
    compare(got, run_onnxruntime(model, inputs)[0])


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_scatter_nd(rng, k, reduction, dtype):
    data = scatter_values(rng, (4, 5, 6), dtype, reduction)
    head = data.shape[:k]
    count = min(7, int(np.prod(head)))
    if reduction == "none":
        flat = rng.permutation(int(np.prod(head)))[:count]
        idx = np.stack(np.unravel_index(flat, head), axis=-1)
    else:
        idx = np.stack([rng.integers(0, d, count) for d in head], axis=-1)
    idx = np.where(rng.random(idx.shape) < 0.4, idx - np.asarray(head), idx).reshape(count, k)
    updates = scatter_values(rng, (count,) + data.shape[k:], dtype, reduction)
    inputs = {"data": data, "indices": idx.astype(np.int64), "updates": updates}
    model = make_model(h.make_node("ScatterND", list(inputs), ["y"], reduction=reduction), inputs, ["y"])
    got, = run_mnnpy(model, inputs)
    compare(got, run_onnxruntime(model, inputs)[0], scatter_bound(data, updates, reduction, count))


def test_scatter_nd_batched_indices(rng):
    data = rng.uniform(-1, 1, (3, 4, 5)).astype(np.float32)
    idx = np.array([[[0, 1], [2, 3]], [[1, 0], [2, 2]]], np.int64)  # (2, 2, 2): a grid of index pairs
    updates = rng.uniform(-1, 1, (2, 2, 5)).astype(np.float32)
    inputs = {"data": data, "indices": idx, "updates": updates}
    model = make_model(h.make_node("ScatterND", list(inputs), ["y"]), inputs, ["y"])
    got, = run_mnnpy(model, inputs)
    compare(got, run_onnxruntime(model, inputs)[0])


def test_scatter_reductions_fold_repeats_in_order():
    # Every update goes to element 1: add, mul, max and min fold all of them in.
    data = np.array([1.0, 2.0, 3.0], np.float32)
    updates = np.array([4.0, -1.0, 0.5, 2.0], np.float32)
    idx = np.array([1, 1, -2, 1], np.int64)
    for reduction, fold in [("add", np.sum), ("mul", np.prod), ("max", np.max), ("min", np.min)]:
        inputs = {"data": data, "indices": idx, "updates": updates}
        model = make_model(h.make_node("ScatterElements", list(inputs), ["y"], reduction=reduction), inputs, ["y"])
        got, = run_mnnpy(model, inputs)
        ours_expected = data.copy()
        ours_expected[1] = fold(np.concatenate([[data[1]], updates]))
        compare(got, ours_expected)
        compare(got, run_onnxruntime(model, inputs)[0])


@pytest.mark.parametrize("op,idx", [("ScatterElements", [[0, 5]]), ("ScatterElements", [[-6, 0]]),
                                    ("ScatterND", [[0, 5]]), ("ScatterND", [[1, -6]])])
def test_scatter_constant_index_out_of_range_raises(op, idx):
    data = np.zeros((2, 5), np.float32)
    updates = np.ones((1, 2) if op == "ScatterElements" else (1,), np.float32)
    attrs = {"axis": 1} if op != "ScatterND" else {}
    node = h.make_node(op, ["data", "indices", "updates"], ["y"], name="sc", **attrs)
    model = make_model(node, {"data": data, "updates": updates}, ["y"], weights={"indices": np.asarray(idx, np.int64)})
    with pytest.raises(ValueError, match="sc.*out of range"):
        run_mnnpy(model, {"data": data, "updates": updates})


def test_scatter_runtime_index_out_of_range_is_skipped():
    # Indices that are model inputs are only known when running: those out of range write nothing
    # (no neighbouring row receives them), and nothing crashes.
    data = np.zeros((2, 3), np.float32)
    idx = np.array([[5, 1, -9]], np.int64)
    updates = np.array([[1, 2, 3]], np.float32)
    inputs = {"data": data, "indices": idx, "updates": updates}
    model = make_model(h.make_node("ScatterElements", list(inputs), ["y"], axis=1), inputs, ["y"])
    got, = run_mnnpy(model, inputs)
    compare(got, np.array([[0, 2, 0], [0, 0, 0]], np.float32))


@pytest.mark.parametrize("attrs,shapes,message", [
    ({"reduction": "average"}, [(3, 4), (2, 4), (2, 4)], "unknown reduction"),
    ({}, [(3, 4), (2, 4), (2, 3)], "must have the indices' shape"),
    ({"axis": 2}, [(3, 4), (2, 4), (2, 4)], "axis 2 is out of range"),
    ({}, [(3, 4), (2, 4, 1), (2, 4, 1)], "rank"),
])
def test_scatter_elements_bad_nodes(attrs, shapes, message):
    data, idx, updates = (np.zeros(s, t) for s, t in zip(shapes, (np.float32, np.int64, np.float32)))
    inputs = {"data": data, "indices": idx, "updates": updates}
    model = make_model(h.make_node("ScatterElements", list(inputs), ["y"], name="bad", **attrs), inputs, ["y"])
    with pytest.raises(ValueError, match=f"bad.*{message}"):
        run_mnnpy(model, inputs)


def test_scatter_nd_bad_updates():
    inputs = {"data": np.zeros((4, 5), np.float32), "indices": np.zeros((2, 1), np.int64),
              "updates": np.zeros((2, 4), np.float32)}
    model = make_model(h.make_node("ScatterND", list(inputs), ["y"], name="bad"), inputs, ["y"])
    with pytest.raises(ValueError, match=r"bad.*updates must have shape \(2, 5\)"):
        run_mnnpy(model, inputs)


# ------------------------------------------------------------------ GatherND
@pytest.mark.parametrize("batch_dims,data_shape,index_shape", [
    (0, (4, 5, 6), (3, 2)), (0, (4, 5, 6), (2, 3, 3)), (0, (4, 5), (7, 1)),
    (1, (3, 4, 5), (3, 2, 1)), (1, (3, 4, 5), (3, 2)), (2, (2, 3, 4, 5), (2, 3, 6, 2)),
])
def test_gather_nd(rng, batch_dims, data_shape, index_shape):
    data = rng.uniform(-1, 1, data_shape).astype(np.float32)
    k = index_shape[-1]
    dims = np.asarray(data_shape[batch_dims:batch_dims + k])
    idx = (rng.random(index_shape) * dims).astype(np.int64)
    idx = np.where(rng.random(index_shape) < 0.3, idx - dims, idx)  # some counted from the end
    inputs = {"data": data, "indices": idx}
    model = make_model(h.make_node("GatherND", list(inputs), ["y"], batch_dims=batch_dims), inputs, ["y"], opset=13)
    got, = run_mnnpy(model, inputs)
    compare(got, run_onnxruntime(model, inputs)[0])


def test_gather_nd_bad_batch_dims():
    inputs = {"data": np.zeros((3, 4), np.float32), "indices": np.zeros((2, 1), np.int64)}
    model = make_model(h.make_node("GatherND", list(inputs), ["y"], batch_dims=1, name="g"), inputs, ["y"], opset=13)
    with pytest.raises(ValueError, match="g.*must match"):
        run_mnnpy(model, inputs)


# ------------------------------------------------------------------ MaxUnpool
@pytest.mark.parametrize("size,kernel,strides,pads", [((8, 8), [2, 2], [2, 2], [0, 0, 0, 0]),
                                                      ((7, 9), [3, 3], [2, 2], [1, 1, 1, 1]),
                                                      ((7, 8), [2, 3], [1, 2], [0, 1, 0, 0])])
def test_max_unpool(rng, size, kernel, strides, pads):
    # The pooled values and their indices come from onnxruntime's MaxPool on random data, of sizes
    # that the unpooled shape (kernel, strides and pads) gives back.
    x = rng.uniform(-1, 1, (2, 3) + size).astype(np.float32)
    pool = make_model(h.make_node("MaxPool", ["x"], ["v", "i"], kernel_shape=kernel, strides=strides, pads=pads),
                      {"x": x}, ["v", "i"], opset=12)
    values, indices = run_onnxruntime(pool, {"x": x})
    inputs = {"v": values, "i": indices}
    model = make_model(h.make_node("MaxUnpool", ["v", "i"], ["y"], kernel_shape=kernel, strides=strides, pads=pads),
                       inputs, ["y"], opset=11)
    got, = run_mnnpy(model, inputs)
    compare(got, run_onnxruntime(model, inputs)[0])
    np.testing.assert_array_equal(got.reshape(-1)[indices.reshape(-1)], values.reshape(-1))


@pytest.mark.parametrize("size", [(4, 4), (5, 7)])
def test_max_unpool_output_shape(rng, size):
    # Odd sizes pool to the same shape as even ones: output_shape restores MaxPool's input shape,
    # which its indices address.
    x = rng.uniform(-1, 1, (1, 2) + size).astype(np.float32)
    pool = make_model(h.make_node("MaxPool", ["x"], ["v", "i"], kernel_shape=[2, 2], strides=[2, 2]),
                      {"x": x}, ["v", "i"], opset=12)
    values, indices = run_onnxruntime(pool, {"x": x})
    inputs = {"v": values, "i": indices, "shape": np.array(x.shape, np.int64)}
    model = make_model(h.make_node("MaxUnpool", ["v", "i", "shape"], ["y"], kernel_shape=[2, 2], strides=[2, 2]),
                       inputs, ["y"], opset=11)
    got, = run_mnnpy(model, inputs)
    compare(got, run_onnxruntime(model, inputs)[0])
    np.testing.assert_array_equal(got.reshape(-1)[indices.reshape(-1)], values.reshape(-1))


# ------------------------------------------------------------------ losses
LOSS_CASES = [(reduction, shape, weighted, ignore)
              for reduction in ("none", "sum", "mean")
              for shape in ((6, 5), (4, 5, 3), (3, 4, 2, 3))
              for weighted in (False, True)
              for ignore in (None, 1, -1)]


def loss_inputs(rng, shape, weighted, ignore, dtype):
    n, c, rest = shape[0], shape[1], shape[2:]
    target = rng.integers(0, c, (n,) + rest).astype(np.int64)
    if ignore is not None:
        target = np.where(rng.random(target.shape) < 0.3, ignore, target)
        target.reshape(-1)[0] = 0 if ignore != 0 else 1  # something is not ignored
    inputs = {"x": rng.uniform(-3, 3, shape).astype(dtype), "t": target}
    if weighted:
        inputs["w"] = rng.uniform(0.2, 2, (c,)).astype(dtype)
    return inputs


def loss_bound(x, reduction, dtype, terms_scale):
    """Float error of summing the picked terms: gamma_n times their magnitude sum (mean: plus the
    division and the weight sum), n the number of terms; none: one rounding per product."""
    u = U32 if dtype == np.float32 else 2.0 ** -53
    n = 1 if reduction == "none" else x.size // x.shape[1] + 3
    return n * u / (1 - n * u) * terms_scale


@pytest.mark.parametrize("reduction,shape,weighted,ignore", LOSS_CASES)
def test_nll_loss(rng, reduction, shape, weighted, ignore):
    inputs = loss_inputs(rng, shape, weighted, ignore, np.float32)
    inputs["x"] = -np.abs(inputs["x"])  # log-probabilities
    attrs = {"reduction": reduction, **({"ignore_index": ignore} if ignore is not None else {})}
    model = make_model(h.make_node("NegativeLogLikelihoodLoss", list(inputs), ["loss"], **attrs), inputs, ["loss"],
                       opset=13)
    got, = run_mnnpy(model, inputs)
    expected, = run_onnxruntime(model, inputs)
    scale = np.abs(inputs["x"]).max() * (inputs["w"].max() if weighted else 1.0)
    scale = scale * (1 if reduction != "sum" else inputs["t"].size) + (scale if reduction == "mean" else 0)
    compare(got, expected, 2 * loss_bound(inputs["x"], reduction, np.float32, scale))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction,shape,weighted,ignore", LOSS_CASES[::3])
def test_softmax_cross_entropy(rng, dtype, reduction, shape, weighted, ignore):
    inputs = loss_inputs(rng, shape, weighted, ignore, dtype)
    attrs = {"reduction": reduction, **({"ignore_index": ignore} if ignore is not None else {})}
    model = make_model(h.make_node("SoftmaxCrossEntropyLoss", list(inputs), ["loss", "log_prob"], **attrs), inputs,
                       ["loss", "log_prob"], opset=13)
    loss, log_prob = run_mnnpy(model, inputs)
    expected_loss, expected_log_prob = run_onnxruntime(model, inputs)
    u = U32 if dtype == np.float32 else 2.0 ** -53
    # log-softmax: x - max - log(sum exp(x - max)), a few roundings of quantities up to
    # |x| + log C in size.
    log_scale = 2 * np.abs(inputs["x"]).max() + np.log(shape[1]) + 1
    compare(log_prob, expected_log_prob, 8 * u * log_scale)
    scale = log_scale * (inputs["w"].max() if weighted else 1.0)
    scale = scale * (1 if reduction != "sum" else inputs["t"].size) + (scale if reduction == "mean" else 0)
    compare(loss, expected_loss, 2 * loss_bound(inputs["x"], reduction, dtype, scale) + 8 * u * scale)


def test_loss_bad_weight():
    inputs = {"x": np.zeros((3, 4), np.float32), "t": np.zeros(3, np.int64), "w": np.ones(5, np.float32)}
    model = make_model(h.make_node("NegativeLogLikelihoodLoss", list(inputs), ["loss"], name="nll"), inputs,
                       ["loss"], opset=13)
    with pytest.raises(ValueError, match=r"nll.*weight must have shape \(4,\)"):
        run_mnnpy(model, inputs)


def test_loss_bad_target_shape():
    inputs = {"x": np.zeros((3, 4, 2), np.float32), "t": np.zeros((3, 4), np.int64)}
    model = make_model(h.make_node("SoftmaxCrossEntropyLoss", list(inputs), ["loss"], name="sce"), inputs,
                       ["loss"], opset=13)
    with pytest.raises(ValueError, match=r"sce.*target must have shape \(3, 2\)"):
        run_mnnpy(model, inputs)


# ------------------------------------------------------------------ the core's Scatter reductions
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("code,fold", [(1, np.add), (2, np.multiply), (3, np.maximum), (4, np.minimum)])
def test_core_scatter_reduction_matches_ufunc_at(rng, code, fold, dtype):
    from mnnpy import _core
    from mnnpy import expr as F
    data = rng.integers(-5, 6, (6, 4)).astype(dtype)
    index = rng.integers(-6, 6, 15)  # repeats, some counted from the end
    updates = rng.integers(-3, 4, (15, 4)).astype(dtype)
    got = _core.op("Scatter", [F.const(data), F.const(index), F.const(updates)], {"axis": 0, "reduction": code})
    expected = data.copy()
    fold.at(expected, index, updates)  # small integers: exact in every dtype and order
    compare(got.numpy(), expected)


def test_core_scatter_reduction_refusals():
    from mnnpy import _core
    from mnnpy import expr as F
    data, index = np.zeros(4, np.int8), np.zeros(1, np.int64)
    with pytest.raises(TypeError, match="reductions take"):
        _core.op("Scatter", [F.const(data), F.const(index), F.const(np.ones(1, np.int8))], {"axis": 0, "reduction": 1})
    with pytest.raises(ValueError, match="reduction must be"):
        _core.op("Scatter", [F.const(data), F.const(index), F.const(np.ones(1, np.int8))], {"axis": 0, "reduction": 7})
