"""Selection ops of mnnpy.expr: top-k and non-maximum suppression.

``topk(x, k, axis=-1, largest=True, sorted=True)`` is ONNX TopK (and ``torch.topk``): it
returns ``(values, indices)``, indices int64, equal values with the lower index first, NaN
ranked above every number. ``topk_v2(input, k)`` is MNN's ``_TopKV2`` (last axis, largest
first, int32 indices). float16/bfloat16 are ranked in float32, int8/uint8/int16/uint16 in int32
and uint32 in int64, with the values cast back; bool is refused.

``nms(boxes, scores, max_detections, iou_threshold=-1.0, score_threshold=-1.0)`` keeps
``MNN.expr.nms``'s signature: one class, boxes ``[num, 4]`` as ``[y1, x1, y2, x2]`` corners,
scores ``[num]``; a negative ``iou_threshold`` means 0 and a negative ``score_threshold`` means
none, as in MNN. It returns the int32 indices of the kept boxes, best first. The number of
kept boxes depends on the values, so ``nms`` evaluates its inputs when called and returns a
constant (it does not follow later writes to placeholders it read).

``_non_max_suppression_onnx`` is ONNX NonMaxSuppression as the model converter calls it, on
values it knows: an int64 ``[M, 3]`` NumPy array of (batch, class, box).
"""
import numpy as _np

from . import _core
from ._core import Var
from .expr import _as_var

__all__ = ["topk", "topk_v2", "nms"]

# Dtypes TopK ranks in a wider type (exact), then casts the values back.
_RANKED_AS = {
    _np.dtype(_np.float16): _np.float32,
    _np.dtype(_np.int8): _np.int32,
    _np.dtype(_np.uint8): _np.int32,
    _np.dtype(_np.int16): _np.int32,
    _np.dtype(_np.uint16): _np.int32,
    _np.dtype(_np.uint32): _np.int64,
}


def _int_value(v, what):
    """A Python int from an int, a NumPy integer or a one-element Var/array (evaluated)."""
    if isinstance(v, Var):
        v = v.read()
    a = _np.asarray(v)
    if a.size != 1 or a.dtype.kind not in "iu":
        raise TypeError(f"{what} must be an integer, got {v!r}")
    return int(a.reshape(-1)[0])


def topk(x, k, axis=-1, largest=True, sorted=True):
    """The ``k`` largest (or smallest) elements of ``x`` along ``axis`` and their int64 indices.

    With ``sorted=False`` the selected elements come in an unspecified order."""
    x = _as_var(x)
    k = _int_value(k, "topk: k")
    if x.dtype == _np.bool_:
        raise TypeError("topk: bool arrays cannot be ranked")
    source_dtype = x.dtype
    ranked_as = _RANKED_AS.get(source_dtype)
    if ranked_as is None and str(source_dtype) == "bfloat16":
        ranked_as = _np.float32
    if ranked_as is not None:
        x = _core.cast(x, ranked_as)
    values, indices = _core.op("TopK", [x], {
        "k": k, "axis": int(axis), "largest": int(bool(largest)), "sorted": int(bool(sorted)),
    })
    if ranked_as is not None:
        values = _core.cast(values, source_dtype)
    return values, indices


def topk_v2(input, k):
    """MNN's ``_TopKV2``: the ``k`` largest elements along the last axis, sorted, with int32 indices."""
    values, indices = topk(input, k, -1, True, True)
    return values, _core.cast(indices, _np.int32)


def _float32_array(v, what, op):
    if isinstance(v, Var):
        v = v.read()
    a = _np.asarray(v)
    if a.dtype.kind not in "iuf":
        raise TypeError(f"{op}: {what} must hold real numbers, got {a.dtype}")
    return _np.ascontiguousarray(a, dtype=_np.float32)


def _non_max_suppression_onnx(boxes, scores, max_output_boxes_per_class, iou_threshold=0.0, score_threshold=None,
                              center_point_box=0):
    """ONNX NonMaxSuppression on known values: boxes [B, N, 4], scores [B, C, N] (arrays or Vars,
    read as float32); ``score_threshold`` None means no threshold. Returns int64 [M, 3]."""
    op = "NonMaxSuppression"
    return _core.non_max_suppression(
        _float32_array(boxes, "boxes", op), _float32_array(scores, "scores", op),
        _int_value(max_output_boxes_per_class, "NonMaxSuppression: max_output_boxes_per_class"),
        float(iou_threshold), None if score_threshold is None else float(score_threshold), int(center_point_box))


def nms(boxes, scores, max_detections, iou_threshold=-1.0, score_threshold=-1.0):
    """MNN.expr.nms: indices (int32) of the boxes kept by greedy non-maximum suppression."""
    boxes = _float32_array(boxes, "boxes", "nms")
    scores = _float32_array(scores, "scores", "nms")
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise ValueError(f"nms: boxes must have shape [num, 4], got {boxes.shape}")
    if scores.shape != (boxes.shape[0],):
        raise ValueError(f"nms: scores must have shape [{boxes.shape[0]}], got {scores.shape}")
    iou = 0.0 if iou_threshold < 0 else float(iou_threshold)
    threshold = None if score_threshold < 0 else float(score_threshold)
    max_detections = _int_value(max_detections, "nms: max_detections")
    selected = _core.non_max_suppression(boxes[None], scores[None, None], max_detections, iou, threshold, 0)
    return _core.const(_np.ascontiguousarray(selected[:, 2], dtype=_np.int32), None, "NCHW")
