"""Pooling and resize ops of MNN.expr, on float32 NCHW Vars.

``max_pool``/``avg_pool``/``resize`` keep ``MNN.expr``'s names and argument order. As in this
package's ``conv2d``, pairs are (height, width): ``kernel``, ``stride`` and ``pads``. A kernel of
``(-1, -1)`` pools the whole plane (MNN's global pooling). Padding modes: ``VALID`` pads by
``pads`` (zero by default) with floor rounding; ``CAFFE`` pads by ``pads`` with Caffe's ceil
rounding and averages count the padding; ``SAME`` pads as TensorFlow does (output size
ceil(input / stride)) and ignores ``pads``.

The ``_*_nchw`` functions are the ops as a model converter (ONNX) calls them.
"""
import numpy as _np

from . import _core
from ._core import Var

try:
    from ._expr_conv import Padding_Mode
except ImportError:  # the convolution module defines the shared padding modes
    class Padding_Mode:
        CAFFE = "CAFFE"
        VALID = "VALID"
        SAME = "SAME"

__all__ = ["max_pool", "avg_pool", "resize"]


def _as_float_var(x, op):
    if not isinstance(x, Var):
        x = _core.const(_np.asarray(x, dtype=_np.float32), None, "NCHW")
    if x.dtype != _np.float32:
        raise TypeError(f"{op}: input must be float32, got {x.dtype}")
    return x


def _ints(values, count, op, name):
    if isinstance(values, (int, _np.integer)):
        values = (values,) * count
    values = [int(v) for v in values]
    if len(values) != count:
        raise ValueError(f"{op}: {name} needs {count} values, got {len(values)}")
    return values


# ---------------------------------------------------------------- the ops as a converter calls them
def _max_pool_nchw(x, kernel, strides, pads4, dilations=(1, 1), ceil_mode=False):
    """ONNX MaxPool on [N, C, H, W]: ``pads4`` is (top, left, bottom, right); padding never wins."""
    return _core.op("MaxPool2D", [_as_float_var(x, "max_pool")], {
        "kernel": _ints(kernel, 2, "max_pool", "kernel"),
        "strides": _ints(strides, 2, "max_pool", "strides"),
        "pads": _ints(pads4, 4, "max_pool", "pads"),
        "dilations": _ints(dilations, 2, "max_pool", "dilations"),
        "ceil_mode": int(bool(ceil_mode)),
    })


def _avg_pool_nchw(x, kernel, strides, pads4, ceil_mode=False, count_include_pad=False):
    """ONNX AveragePool on [N, C, H, W]: ``pads4`` is (top, left, bottom, right)."""
    return _core.op("AvgPool2D", [_as_float_var(x, "avg_pool")], {
        "kernel": _ints(kernel, 2, "avg_pool", "kernel"),
        "strides": _ints(strides, 2, "avg_pool", "strides"),
        "pads": _ints(pads4, 4, "avg_pool", "pads"),
        "ceil_mode": int(bool(ceil_mode)),
        "count_include_pad": int(bool(count_include_pad)),
    })


def _resize_nchw(x, out_hw, mode="nearest", coordinate_transformation_mode="half_pixel",
                 nearest_mode="round_prefer_floor", cubic_coeff_a=-0.75, exclude_outside=False, scales=None,
                 antialias=False):
    """ONNX Resize over the spatial axes of [N, C, H, W] (``out_hw`` = (Ho, Wo)) or [N, C, W]
    (``out_hw`` = (Wo,)). ``scales``: the model's own spatial scale factors, which ONNX uses in the
    coordinate transform when a model gives scales rather than sizes; by default out / in.
    ``antialias``: linear and cubic downsampling widen their filter by 1 / scale."""
    x = _as_float_var(x, "resize")
    spatial = max(x.ndim - 2, 0)
    attrs = {
        "size": _ints(out_hw, spatial, "resize", "out_hw") if spatial else [int(v) for v in out_hw],
        "mode": str(mode),
        "coordinate_transformation_mode": str(coordinate_transformation_mode),
        "nearest_mode": str(nearest_mode),
        "cubic_coeff_a": float(cubic_coeff_a),
        "exclude_outside": int(bool(exclude_outside)),
        "antialias": int(bool(antialias)),
    }
    if scales is not None:
        scales = [float(s) for s in scales]
        if len(scales) != spatial:
            raise ValueError(f"resize: scales needs {spatial} values, got {len(scales)}")
        if spatial == 2:
            attrs["scale_h"], attrs["scale_w"] = scales
        else:
            attrs["scale_w"] = scales[0]
    return _core.op("Resize", [x], attrs)


# ---------------------------------------------------------------- MNN.expr
def _padding_mode_name(mode):
    name = str(getattr(mode, "name", mode)).upper()
    if name not in ("CAFFE", "VALID", "SAME"):
        raise ValueError(f"unknown padding_mode {mode!r}; expected Padding_Mode.CAFFE, VALID or SAME")
    return name


def _pool_arguments(op, x, kernel, stride, padding_mode, pads):
    """(kernel, strides, pads4, ceil_mode, count_include_pad) for MNN's pooling arguments."""
    if x.ndim != 4:
        raise ValueError(f"{op}: input must be 4-D [N, C, H, W], got shape {x.shape}")
    height, width = x.shape[2], x.shape[3]
    kernel = _ints(kernel, 2, op, "kernel")
    if kernel == [-1, -1]:
        return [height, width], [1, 1], [0, 0, 0, 0], False, False
    stride = _ints(stride, 2, op, "stride")
    mode = _padding_mode_name(padding_mode)
    if mode == "SAME":
        pads4 = [0, 0, 0, 0]
        for axis, (size, k, s) in enumerate(zip((height, width), kernel, stride)):
            out = -(-size // s)
            total = max((out - 1) * s + k - size, 0)
            pads4[axis], pads4[axis + 2] = total // 2, total - total // 2
        return kernel, stride, pads4, False, False
    ph, pw = _ints(pads, 2, op, "pads")
    return kernel, stride, [ph, pw, ph, pw], mode == "CAFFE", mode == "CAFFE"


def max_pool(x, kernel, stride, padding_mode=Padding_Mode.VALID, pads=(0, 0)):
    """2-D max pooling of an NCHW float32 ``x`` (MNN's ``expr.max_pool``)."""
    x = _as_float_var(x, "max_pool")
    kernel, strides, pads4, ceil_mode, _ = _pool_arguments("max_pool", x, kernel, stride, padding_mode, pads)
    return _max_pool_nchw(x, kernel, strides, pads4, (1, 1), ceil_mode)


def avg_pool(x, kernel, stride, padding_mode=Padding_Mode.VALID, pads=(0, 0)):
    """2-D average pooling of an NCHW float32 ``x`` (MNN's ``expr.avg_pool``)."""
    x = _as_float_var(x, "avg_pool")
    kernel, strides, pads4, ceil_mode, include = _pool_arguments("avg_pool", x, kernel, stride, padding_mode, pads)
    return _avg_pool_nchw(x, kernel, strides, pads4, ceil_mode, include)


def resize(x, x_scale, y_scale):
    """Bilinear resize of an NCHW float32 ``x`` to (floor(H * y_scale), floor(W * x_scale)), as MNN's
    ``expr.resize``: source coordinate = output coordinate / scale, edges repeated."""
    x = _as_float_var(x, "resize")
    if x.ndim != 4:
        raise ValueError(f"resize: input must be 4-D [N, C, H, W], got shape {x.shape}")
    x_scale, y_scale = float(x_scale), float(y_scale)
    if not (x_scale > 0 and y_scale > 0):
        raise ValueError(f"resize: scales must be positive, got x_scale={x_scale}, y_scale={y_scale}")
    out_hw = (int(_np.floor(x.shape[2] * y_scale)), int(_np.floor(x.shape[3] * x_scale)))
    return _resize_nchw(x, out_hw, "linear", "asymmetric", scales=(y_scale, x_scale))
