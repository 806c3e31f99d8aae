"""Elementwise, pooling and concatenation ops on 8-bit quantized tensors (onnxruntime's QOperator
contrib ops) of mnnpy.expr; the rules are in docs/int8.md, "int8 elementwise ops"."""
import numpy as _np

from . import _core
from ._core import Var
from ._expr_quant import _EIGHT_BIT, _operand

__all__ = ["qlinear_add", "qlinear_mul", "qlinear_global_average_pool", "qlinear_average_pool2d",
           "max_pool2d_int8", "qlinear_concat", "qlinear_softmax"]


def _data(x, op, name):
    x = _operand(x, name)
    if x.dtype not in _EIGHT_BIT:
        raise ValueError(f"{op}: {name} must be int8 or uint8, got {x.dtype}")
    return x


def _scale(s, name):
    return _operand(s, name, None if isinstance(s, Var) else _np.float32)


def _zero(z, name, dtype):
    return _operand(z, name, None if isinstance(z, Var) else dtype)


def _pair(v, name, op):
    v = (int(v), int(v)) if _np.isscalar(v) else tuple(int(t) for t in v)
    if len(v) != 2:
        raise ValueError(f"{op}: {name} needs 2 values, got {v}")
    return list(v)


def _pads(padding, op):
    p = (int(padding),) * 4 if _np.isscalar(padding) else tuple(int(t) for t in padding)
    if len(p) == 2:
        p = p + p
    if len(p) != 4:
        raise ValueError(f"{op}: padding needs 2 or 4 values (top, left, bottom, right), got {p}")
    return list(p)


def _binary(op, a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point):
    a, b = _data(a, op, "a"), _data(b, op, "b")
    inputs = [a, _scale(a_scale, "a_scale"), _zero(a_zero_point, "a_zero_point", a.dtype),
              b, _scale(b_scale, "b_scale"), _zero(b_zero_point, "b_zero_point", b.dtype),
              _scale(y_scale, "y_scale"), _zero(y_zero_point, "y_zero_point", a.dtype)]
    return _core.op(op, inputs, {})


def qlinear_add(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point):
    """onnxruntime's QLinearAdd: ``sat(round(float(a_scale / y_scale) (a - a_zero) +
    float(b_scale / y_scale) (b - b_zero)) + y_zero)`` in float32 (no fused multiply-add), rounding
    half to even; ``a`` and ``b`` (int8 or uint8, one type) broadcast as in NumPy; scales and zero
    points hold one value."""
    return _binary("QLinearAdd", a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point)


def qlinear_mul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point):
    """onnxruntime's QLinearMul: ``sat(round(float(a_scale * b_scale / y_scale) (a - a_zero)(b -
    b_zero)) + y_zero)``, the product of the centred values exact, one float32 rounding."""
    return _binary("QLinearMul", a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point)


def qlinear_softmax(x, x_scale, x_zero_point, y_scale, y_zero_point):
    """Softmax along the last axis of an 8-bit ``x``, quantized again (onnxruntime's QLinearSoftmax,
    and a QDQ model's DequantizeLinear, Softmax, QuantizeLinear): ``v = (float(x) - x_zero) *
    x_scale``, ``e = exp(v - max(v))``, ``y = sat(round((e / sum(e)) / y_scale) + y_zero)`` in
    ``y_zero_point``'s type, in float32 (the Exp op's exp, QuantizeLinear's rounding), a row in
    one pass."""
    op = "QLinearSoftmax"
    x = _data(x, op, "x")
    y_zero_point = _operand(y_zero_point, "y_zero_point")
    inputs = [x, _scale(x_scale, "x_scale"), _zero(x_zero_point, "x_zero_point", x.dtype), _scale(y_scale, "y_scale"),
              y_zero_point]
    return _core.op(op, inputs, {})


def qlinear_global_average_pool(x, x_scale, x_zero_point, y_scale, y_zero_point, channels_last=False):
    """onnxruntime's QLinearGlobalAveragePool: every spatial axis of ``x`` ([N, C, ...], or
    [N, ..., C] with ``channels_last``) averaged to 1: ``sat(round(float(sum(x - x_zero)) *
    float(x_scale / (y_scale * count))) + y_zero)``, the sum in int32."""
    op = "QLinearGlobalAveragePool"
    x = _data(x, op, "x")
    inputs = [x, _scale(x_scale, "x_scale"), _zero(x_zero_point, "x_zero_point", x.dtype),
              _scale(y_scale, "y_scale"), _zero(y_zero_point, "y_zero_point", x.dtype)]
    return _core.op(op, inputs, {"channels_last": int(bool(channels_last))})


def qlinear_average_pool2d(x, x_scale, x_zero_point, y_scale, y_zero_point, kernel, stride=None,
                           padding=(0, 0, 0, 0), ceil_mode=False, count_include_pad=False, channels_last=False):
    """onnxruntime's QLinearAveragePool over a 4-D ``x`` (NCHW, or NHWC with ``channels_last``):
    each window's int32 sum of ``x - x_zero`` requantized as in ``qlinear_global_average_pool``,
    ``count`` the taps inside the input (or inside the padded input with ``count_include_pad``).
    ``padding`` is (top, left, bottom, right); ``stride`` defaults to 1."""
    op = "QLinearAveragePool"
    x = _data(x, op, "x")
    inputs = [x, _scale(x_scale, "x_scale"), _zero(x_zero_point, "x_zero_point", x.dtype),
              _scale(y_scale, "y_scale"), _zero(y_zero_point, "y_zero_point", x.dtype)]
    attrs = {"kernel": _pair(kernel, "kernel", op), "strides": _pair(1 if stride is None else stride, "stride", op),
             "pads": _pads(padding, op), "ceil_mode": int(bool(ceil_mode)),
             "count_include_pad": int(bool(count_include_pad)), "channels_last": int(bool(channels_last))}
    return _core.op(op, inputs, attrs)


def max_pool2d_int8(x, kernel, stride=None, padding=(0, 0, 0, 0), dilate=(1, 1), ceil_mode=False,
                    channels_last=False):
    """2-D max pooling of an int8 or uint8 ``x`` (NCHW, or NHWC with ``channels_last``), ONNX's
    MaxPool on the integers: padding never wins, exact."""
    op = "MaxPool2DInt8"
    x = _data(x, op, "x")
    attrs = {"kernel": _pair(kernel, "kernel", op), "strides": _pair(1 if stride is None else stride, "stride", op),
             "pads": _pads(padding, op), "dilations": _pair(dilate, "dilate", op), "ceil_mode": int(bool(ceil_mode)),
             "channels_last": int(bool(channels_last))}
    return _core.op(op, [x], attrs)


def qlinear_concat(inputs, y_scale, y_zero_point, axis=1):
    """onnxruntime's QLinearConcat: ``inputs`` is a sequence of ``(x, x_scale, x_zero_point)``
    (int8 or uint8, one type), joined along ``axis``; an input whose scale or zero point differ from
    the output's is requantized value by value, ``sat(round(float(x - x_zero) * x_scale / y_scale)
    + y_zero)``, the others copied."""
    op = "QLinearConcat"
    items = list(inputs)
    if not items:
        raise ValueError(f"{op}: needs at least one input")
    args = []
    for i, item in enumerate(items):
        if len(item) != 3:
            raise ValueError(f"{op}: input {i} must be (x, x_scale, x_zero_point), got {len(item)} items")
        x = _data(item[0], op, f"input {i}")
        args += [x, _scale(item[1], f"input {i}'s scale"), _zero(item[2], f"input {i}'s zero point", x.dtype)]
    head = [_scale(y_scale, "y_scale"), _zero(y_zero_point, "y_zero_point", args[0].dtype)]
    return _core.op(op, head + args, {"axis": int(axis)})
