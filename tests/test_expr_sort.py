"""TopK and NonMaxSuppression.

TopK: NumPy references (stable argsort: equal values keep the lower index first, ONNX's rule),
torch.topk on tie-free data and on NaN, onnxruntime's TopK on data full of ties, every
supported dtype, axes, largest/smallest, sorted/unsorted, k = 0, 1, n, many rows (threads),
one long row, plan re-use with placeholders, the MNN names, bad input. Values are selected,
never computed, so every comparison is exact.

NonMaxSuppression: onnxruntime running a one-node ONNX model over random boxes (both box
encodings, flipped corners, several batches and classes, tied scores, thresholds,
max_output_boxes_per_class 0/1/large), torchvision.ops.nms for one class, MNN.expr.nms's
documented example, bad input. Selections must be identical.
"""
import numpy as np
import pytest

import mnnpy
from mnnpy import _core
from mnnpy import _expr_sort as S
from mnnpy import expr as F

TOPK_DTYPES = [np.float32, np.float64, np.int32, np.int64]


# ---------------------------------------------------------------- TopK references
def numpy_topk(x, k, axis, largest):
    """Stable sort on the key: ties keep the lower index first."""
    key = -x if largest else x
    order = np.argsort(key, axis=axis, kind="stable")
    indices = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(x, indices, axis=axis), indices.astype(np.int64)


def tied_data(rng, shape, dtype):
    """Few distinct values, so most rows have ties."""
    if np.dtype(dtype).kind == "f":
        return rng.integers(-4, 5, size=shape).astype(dtype) / 2
    return rng.integers(-4, 5, size=shape).astype(dtype)


def run_topk(x, k, axis=-1, largest=True, sorted=True):
    values, indices = F.topk(F.const(x), k, axis, largest, sorted)
    return values.read(), indices.read()


@pytest.mark.parametrize("dtype", TOPK_DTYPES)
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_matches_stable_numpy_with_ties(rng, dtype, axis, largest):
    x = tied_data(rng, (4, 9, 6), dtype)
    n = x.shape[axis]
    for k in sorted({1, 3, n}):
        values, indices = run_topk(x, k, axis, largest)
        ref_values, ref_indices = numpy_topk(x, k, axis, largest)
        assert values.dtype == x.dtype and indices.dtype == np.int64
        np.testing.assert_array_equal(indices, ref_indices)
        np.testing.assert_array_equal(values, ref_values)


@pytest.mark.parametrize("dtype", TOPK_DTYPES)
@pytest.mark.parametrize("largest", [True, False])
def test_topk_unsorted_selects_the_same_set(rng, dtype, largest):
    x = tied_data(rng, (5, 40), dtype)
    values, indices = run_topk(x, 7, -1, largest, sorted=False)
    ref_values, ref_indices = numpy_topk(x, 7, -1, largest)
    np.testing.assert_array_equal(np.sort(indices, axis=-1), np.sort(ref_indices, axis=-1))
    np.testing.assert_array_equal(values, np.take_along_axis(x, indices, axis=-1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("shape,axis", [((3, 50), -1), ((2, 30, 7), 1), ((64,), 0), ((6, 5, 4), 0)])
def test_topk_matches_torch(rng, dtype, largest, shape, axis):
    torch = pytest.importorskip("torch")
    x = rng.standard_normal(shape).astype(dtype)  # continuous: no ties
    for k in (1, shape[axis] // 2, shape[axis]):
        values, indices = run_topk(x, k, axis, largest)
        ref = torch.topk(torch.from_numpy(x), k, dim=axis, largest=largest, sorted=True)
        np.testing.assert_array_equal(values, ref.values.numpy())
        np.testing.assert_array_equal(indices, ref.indices.numpy())


def test_topk_ranks_nan_above_numbers_as_torch(rng):
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((8, 20)).astype(np.float32)
    x[np.arange(8), rng.integers(0, 20, 8)] = np.nan  # one NaN per row
    values, indices = run_topk(x, 5)
    ref = torch.topk(torch.from_numpy(x), 5)
    np.testing.assert_array_equal(indices, ref.indices.numpy())
    np.testing.assert_array_equal(values, ref.values.numpy())  # NaN == NaN here
    values, indices = run_topk(x, 5, largest=False)
    ref = torch.topk(torch.from_numpy(x), 5, largest=False)
    np.testing.assert_array_equal(indices, ref.indices.numpy())


def _onnx_topk(x, k, axis, largest):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    out_shape = list(x.shape)
    out_shape[axis] = k
    node = helper.make_node("TopK", ["x", "k"], ["values", "indices"], axis=axis, largest=int(largest), sorted=1)
    graph = helper.make_graph(
        [node], "topk",
        [helper.make_tensor_value_info("x", elem, list(x.shape)),
         helper.make_tensor_value_info("k", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("values", elem, out_shape),
         helper.make_tensor_value_info("indices", TensorProto.INT64, out_shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x, "k": np.array([k], dtype=np.int64)})


@pytest.mark.parametrize("dtype", TOPK_DTYPES)
@pytest.mark.parametrize("largest", [True, False])
def test_topk_matches_onnxruntime_with_ties(rng, dtype, largest):
    x = tied_data(rng, (3, 17, 4), dtype)
    for axis, k in ((1, 6), (2, 4), (0, 1)):
        ref_values, ref_indices = _onnx_topk(x, k, axis, largest)
        values, indices = run_topk(x, k, axis, largest)
        np.testing.assert_array_equal(indices, ref_indices)
        np.testing.assert_array_equal(values, ref_values)


@pytest.mark.parametrize("dtype", TOPK_DTYPES)
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("sorted_", [True, False])
def test_topk_small_k_of_long_rows(rng, dtype, largest, sorted_):
    # k much smaller than the axis: the single-scan heap path, on ties, strided rows and
    # monotonic rows (where every element displaces the current worst).
    x = tied_data(rng, (3, 240, 2), dtype)
    ramp = np.broadcast_to(np.arange(240, dtype=dtype)[None, :, None], (1, 240, 2))
    for data in (x, ramp, ramp[:, ::-1]):
        data = np.ascontiguousarray(data)
        for k in (2, 5, 15):
            values, indices = run_topk(data, k, 1, largest, sorted_)
            ref_values, ref_indices = numpy_topk(data, k, 1, largest)
            if not sorted_:
                indices = np.sort(indices, axis=1)
                ref_indices = np.sort(ref_indices, axis=1)
                values = np.take_along_axis(data, indices, axis=1)
                ref_values = np.take_along_axis(data, ref_indices, axis=1)
            np.testing.assert_array_equal(indices, ref_indices)
            np.testing.assert_array_equal(values, ref_values)


def test_topk_large_int64_values_and_extremes():
    info = np.iinfo(np.int64)
    x = np.array([[3, info.max, info.min, info.max, -1, 0]], dtype=np.int64)
    values, indices = run_topk(x, 3)
    np.testing.assert_array_equal(indices, [[1, 3, 0]])
    np.testing.assert_array_equal(values, [[info.max, info.max, 3]])
    values, indices = run_topk(x, 2, largest=False)
    np.testing.assert_array_equal(indices, [[2, 4]])


def test_topk_many_rows_and_one_long_row_on_threads(rng):
    old = mnnpy.get_num_threads()
    mnnpy.set_num_threads(4)
    try:
        x = tied_data(rng, (3000, 33), np.float32)
        values, indices = run_topk(x, 5)
        ref_values, ref_indices = numpy_topk(x, 5, -1, True)
        np.testing.assert_array_equal(indices, ref_indices)
        np.testing.assert_array_equal(values, ref_values)

        long_row = rng.integers(-1000, 1000, size=200_000).astype(np.int32)
        values, indices = run_topk(long_row, 100, 0, False)
        ref_values, ref_indices = numpy_topk(long_row, 100, 0, False)
        np.testing.assert_array_equal(indices, ref_indices)
        np.testing.assert_array_equal(values, ref_values)
    finally:
        mnnpy.set_num_threads(old)


def test_topk_k_zero_and_empty_rows():
    values, indices = run_topk(np.ones((2, 3), np.float32), 0)
    assert values.shape == (2, 0) and indices.shape == (2, 0)
    values, indices = run_topk(np.ones((0, 3), np.float32), 2)
    assert values.shape == (0, 2) and indices.shape == (0, 2)


@pytest.mark.parametrize("dtype", [np.float16, np.int8, np.uint8, np.int16])
def test_topk_narrow_dtypes_rank_exactly(rng, dtype):
    x = rng.integers(0 if dtype == np.uint8 else -4, 5, (6, 11)).astype(dtype)
    values, indices = run_topk(x, 4)
    ref_values, ref_indices = numpy_topk(x.astype(np.float64), 4, -1, True)
    assert values.dtype == dtype
    np.testing.assert_array_equal(indices, ref_indices)
    np.testing.assert_array_equal(values, ref_values.astype(dtype))


def test_topk_on_placeholder_reuses_plan_with_new_data(rng):
    x = F.placeholder((4, 10), dtype=np.float32)
    values, indices = F.topk(x, 3, axis=1)
    assert values.shape == (4, 3) and indices.shape == (4, 3) and indices.dtype == np.int64
    for _ in range(3):
        data = rng.standard_normal((4, 10)).astype(np.float32)
        x.write(data)
        ref_values, ref_indices = numpy_topk(data, 3, 1, True)
        np.testing.assert_array_equal(indices.read(), ref_indices)
        np.testing.assert_array_equal(values.read(), ref_values)


def test_topk_feeds_other_ops(rng):
    x = rng.standard_normal((5, 8)).astype(np.float32)
    values, indices = F.topk(F.const(x), 2)
    np.testing.assert_allclose((values * 2.0 + 1.0).read(), numpy_topk(x, 2, -1, True)[0] * 2 + 1)


def test_topk_v2_is_mnn_topkv2(rng):
    x = rng.standard_normal((3, 12)).astype(np.float32)
    values, indices = F.topk_v2(F.const(x), 4)
    ref_values, ref_indices = numpy_topk(x, 4, -1, True)
    assert indices.dtype == np.int32
    np.testing.assert_array_equal(indices.read(), ref_indices)
    np.testing.assert_array_equal(values.read(), ref_values)


def test_topk_accepts_k_as_numpy_integer_and_var():
    x = np.array([[1, 5, 3]], np.float32)
    assert F.topk(x, np.int64(2))[1].read().tolist() == [[1, 2]]
    assert F.topk(x, F.const(np.array(1, np.int64)))[1].read().tolist() == [[1]]


def test_topk_bad_input():
    x = F.const(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="larger than the length 3"):
        F.topk(x, 4)
    with pytest.raises(ValueError, match="negative"):
        F.topk(x, -1)
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        F.topk(x, 1, axis=2)
    with pytest.raises(ValueError, match="axis -3 is out of range"):
        F.topk(x, 1, axis=-3)
    with pytest.raises(ValueError, match="at least one dimension"):
        F.topk(F.const(np.array(1.0, np.float32)), 1)
    with pytest.raises(TypeError, match="bool"):
        F.topk(F.const(np.zeros(3, np.bool_)), 1)
    with pytest.raises(TypeError, match="integer"):
        F.topk(x, 1.5)
    with pytest.raises(TypeError, match="int32, int64, uint64, float32 or float64"):
        _core.op("TopK", [F.const(np.zeros(3, np.bool_))], {"k": 1})
    with pytest.raises(ValueError, match="k is missing"):
        _core.op("TopK", [x], {})


# ---------------------------------------------------------------- NonMaxSuppression
def random_boxes(rng, batches, n, center_point_box):
    if center_point_box:
        centers = rng.random((batches, n, 2)) * 10
        sizes = rng.random((batches, n, 2)) * 4 + 0.1
        return np.concatenate([centers, sizes], axis=-1).astype(np.float32)
    corner = rng.random((batches, n, 2)) * 10
    other = corner + rng.random((batches, n, 2)) * 4 + 0.1
    boxes = np.concatenate([corner, other], axis=-1)
    flip = rng.random((batches, n)) < 0.3  # any diagonal pair of corners is allowed
    boxes[flip] = boxes[flip][:, [2, 3, 0, 1]]
    return boxes.astype(np.float32)


def random_scores(rng, batches, classes, n):
    # Quantized, so equal scores (ties by lower box index) are common.
    return (rng.integers(0, 20, (batches, classes, n)) / 20).astype(np.float32)


def onnx_nms(boxes, scores, max_out, iou, score_threshold, center_point_box):
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    names = ["boxes", "scores", "max_output_boxes_per_class", "iou_threshold"]
    feeds = {"boxes": boxes, "scores": scores, "max_output_boxes_per_class": np.array([max_out], np.int64),
             "iou_threshold": np.array([iou], np.float32)}
    inputs = [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, list(boxes.shape)),
              helper.make_tensor_value_info("scores", TensorProto.FLOAT, list(scores.shape)),
              helper.make_tensor_value_info("max_output_boxes_per_class", TensorProto.INT64, [1]),
              helper.make_tensor_value_info("iou_threshold", TensorProto.FLOAT, [1])]
    if score_threshold is not None:
        names.append("score_threshold")
        feeds["score_threshold"] = np.array([score_threshold], np.float32)
        inputs.append(helper.make_tensor_value_info("score_threshold", TensorProto.FLOAT, [1]))
    node = helper.make_node("NonMaxSuppression", names, ["selected"], center_point_box=center_point_box)
    graph = helper.make_graph([node], "nms", inputs,
                              [helper.make_tensor_value_info("selected", TensorProto.INT64, [None, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    model.ir_version = 8
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


@pytest.mark.parametrize("center_point_box", [0, 1])
@pytest.mark.parametrize("batches,classes,n", [(1, 1, 1), (1, 1, 40), (2, 3, 60), (3, 2, 150), (1, 2, 700)])
@pytest.mark.parametrize("max_out", [0, 1, 5, 10_000])
def test_nms_matches_onnxruntime(rng, center_point_box, batches, classes, n, max_out):
    boxes = random_boxes(rng, batches, n, center_point_box)
    scores = random_scores(rng, batches, classes, n)
    for iou in (0.0, 0.3, 0.7, 1.0):
        for score_threshold in (None, 0.0, 0.5):
            ours = S._non_max_suppression_onnx(boxes, scores, max_out, iou, score_threshold, center_point_box)
            ref = onnx_nms(boxes, scores, max_out, iou, score_threshold, center_point_box)
            assert ours.dtype == np.int64 and ours.shape[1:] == (3,)
            np.testing.assert_array_equal(ours, ref, err_msg=f"iou={iou} score_threshold={score_threshold}")


def test_nms_degenerate_and_identical_boxes_match_onnxruntime(rng):
    boxes = np.array([[[0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 0, 1], [1, 1, 0, 0], [2, 2, 3, 3], [0, 0, 1, 1]]],
                     np.float32)
    scores = np.array([[[0.5, 0.5, 0.9, 0.4, 0.5, 0.6]]], np.float32)
    for iou in (0.0, 0.5, 1.0):
        np.testing.assert_array_equal(S._non_max_suppression_onnx(boxes, scores, 10, iou, None, 0),
                                      onnx_nms(boxes, scores, 10, iou, None, 0))


def test_nms_single_class_matches_torchvision(rng):
    torch = pytest.importorskip("torch")
    torchvision = pytest.importorskip("torchvision")
    n = 500
    xy1 = rng.random((n, 2)) * 50
    xyxy = np.concatenate([xy1, xy1 + rng.random((n, 2)) * 20 + 1], axis=1).astype(np.float32)
    scores = rng.permutation(n).astype(np.float32) / n  # distinct: torch's sort order is then defined
    yxyx = xyxy[:, [1, 0, 3, 2]]
    for iou in (0.2, 0.5, 0.8):
        keep = torchvision.ops.nms(torch.from_numpy(xyxy), torch.from_numpy(scores), iou).numpy()
        ours = S._non_max_suppression_onnx(yxyx[None], scores[None, None], n, iou, None, 0)
        np.testing.assert_array_equal(ours[:, 2], keep)
        np.testing.assert_array_equal(ours[:, :2], 0)
        np.testing.assert_array_equal(F.nms(yxyx, scores, n, iou).read(), keep.astype(np.int32))


def test_nms_mnn_signature_and_example():
    kept = F.nms([[1, 1, 4, 4], [0, 0, 3, 3], [5, 5, 7, 7]], [0.9, 0.5, 0.1], 3, 0.1)
    assert isinstance(kept, mnnpy.expr.Var) and kept.dtype == np.int32
    assert kept.read().tolist() == [0, 2]
    # Negative iou_threshold means 0: any overlap suppresses; negative score_threshold means none.
    assert F.nms([[0, 0, 2, 2], [1, 1, 3, 3]], [0.9, 0.8], 5).read().tolist() == [0]
    assert F.nms([[0, 0, 2, 2], [1, 1, 3, 3]], [0.9, 0.8], 5, 0.5, 0.85).read().tolist() == [0]
    one_box = F.const(np.array([[0, 0, 1, 1]], np.float32))
    assert F.nms(one_box, F.const(np.array([0.3], np.float32)), 1).read().tolist() == [0]


def test_nms_empty_inputs():
    out = S._non_max_suppression_onnx(np.zeros((2, 0, 4), np.float32), np.zeros((2, 3, 0), np.float32), 5, 0.5)
    assert out.shape == (0, 3) and out.dtype == np.int64
    out = S._non_max_suppression_onnx(np.zeros((1, 4, 4), np.float32), np.zeros((1, 0, 4), np.float32), 5, 0.5)
    assert out.shape == (0, 3)


def test_nms_nan_scores_are_never_selected():
    boxes = np.array([[[0, 0, 1, 1], [5, 5, 6, 6]]], np.float32)
    scores = np.array([[[np.nan, 0.2]]], np.float32)
    assert S._non_max_suppression_onnx(boxes, scores, 5, 0.5).tolist() == [[0, 0, 1]]


def test_nms_bad_input():
    boxes = np.zeros((1, 3, 4), np.float32)
    scores = np.zeros((1, 2, 3), np.float32)
    with pytest.raises(ValueError, match=r"boxes must have shape \[batch, boxes, 4\]"):
        S._non_max_suppression_onnx(np.zeros((1, 3, 5), np.float32), scores, 1, 0.5)
    with pytest.raises(ValueError, match="scores must have shape"):
        S._non_max_suppression_onnx(boxes, np.zeros((2, 3), np.float32), 1, 0.5)
    with pytest.raises(ValueError, match="do not match boxes"):
        S._non_max_suppression_onnx(boxes, np.zeros((1, 2, 4), np.float32), 1, 0.5)
    with pytest.raises(ValueError, match="do not match boxes"):
        S._non_max_suppression_onnx(boxes, np.zeros((2, 2, 3), np.float32), 1, 0.5)
    with pytest.raises(ValueError, match="center_point_box"):
        S._non_max_suppression_onnx(boxes, scores, 1, 0.5, None, 2)
    with pytest.raises(ValueError, match="iou_threshold"):
        S._non_max_suppression_onnx(boxes, scores, 1, 1.5)
    with pytest.raises(TypeError, match="real numbers"):
        S._non_max_suppression_onnx(np.array([["a"] * 4]), scores, 1, 0.5)
    with pytest.raises(TypeError, match="integer"):
        S._non_max_suppression_onnx(boxes, scores, 1.5, 0.5)
    with pytest.raises(TypeError, match="float32"):
        _core.non_max_suppression(boxes.astype(np.float64), scores, 1, 0.5)
    with pytest.raises(ValueError, match=r"\[num, 4\]"):
        F.nms([[0, 0, 1]], [0.5], 1)
    with pytest.raises(ValueError, match=r"scores must have shape \[1\]"):
        F.nms([[0, 0, 1, 1]], [0.5, 0.2], 1)


def test_batched_nms_of_many_boxes_matches_torchvision(rng):
    """Thousands of boxes of many classes, offset apart by class (torchvision's coordinate trick
    in batched_nms, as traced detectors run it): the kept boxes and their order match."""
    torch = pytest.importorskip("torch")
    torchvision = pytest.importorskip("torchvision")
    n = 6000
    xy1 = rng.random((n, 2)) * 300
    xyxy = np.concatenate([xy1, xy1 + rng.random((n, 2)) * 80 + 1], axis=1).astype(np.float32)
    labels = rng.integers(0, 90, n)
    scores = rng.permutation(n).astype(np.float32) / n
    offset_boxes = xyxy + (labels * (xyxy.max() + 1)).astype(np.float32)[:, None]
    for iou in (0.3, 0.6):
        keep = torchvision.ops.batched_nms(torch.from_numpy(xyxy), torch.from_numpy(scores),
                                           torch.from_numpy(labels), iou).numpy()
        ours = S._non_max_suppression_onnx(offset_boxes[None][..., [1, 0, 3, 2]], scores[None, None], n, iou, None, 0)
        np.testing.assert_array_equal(ours[:, 2], keep)


def test_nms_of_many_boxes_with_nan_and_infinite_corners_matches_onnxruntime(rng):
    boxes = random_boxes(rng, 1, 400, 0)
    boxes[0, 5, 1] = np.nan
    boxes[0, 9, 3] = np.inf
    boxes[0, 11] = [-np.inf, -np.inf, np.inf, np.inf]
    scores = random_scores(rng, 1, 2, 400)
    for iou in (0.0, 0.5):
        np.testing.assert_array_equal(S._non_max_suppression_onnx(boxes, scores, 1000, iou, None, 0),
                                      onnx_nms(boxes, scores, 1000, iou, None, 0))
