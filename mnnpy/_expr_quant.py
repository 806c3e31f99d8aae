"""8-bit integer matrix products of mnnpy.expr (docs/int8.md)."""
import numpy as _np

from . import _core
from ._core import Var

__all__ = ["matmul_integer", "dynamic_quant_matmul", "quantize_weight_per_column"]

_EIGHT_BIT = (_np.dtype(_np.int8), _np.dtype(_np.uint8))


def _operand(x, name, dtype=None):
    """``x`` as a Var: Vars as they are, arrays and numbers as constants (of ``dtype`` when given,
    else of their own type)."""
    if isinstance(x, Var):
        return x
    try:
        value = _np.asarray(x) if dtype is None else _np.asarray(x, dtype=dtype)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{name} must be an array or a Var: {e}") from None
    return _core.const(value, None, "NCHW")


def matmul_integer(a, b, a_zero_point=None, b_zero_point=None):
    """ONNX's MatMulInteger: ``(a - a_zero_point) @ (b - b_zero_point)`` in int32, exactly.

    ``a`` ([..., M, K]) and ``b`` ([..., K, N]) are int8 or uint8 (1-D operands as in
    numpy.matmul); ``a_zero_point`` has ``a``'s type and one value or one per row (M),
    ``b_zero_point`` ``b``'s type and one value or one per column (N). A constant 2-D ``b`` is
    packed once when the graph is planned."""
    a, b = _operand(a, "a"), _operand(b, "b")
    for v, name in ((a, "a"), (b, "b")):
        if v.dtype not in _EIGHT_BIT:
            raise ValueError(f"matmul_integer: {name} must be int8 or uint8, got {v.dtype}")
        if v.ndim == 0:
            raise ValueError(f"matmul_integer: {name} must have at least 1 dimension, got a scalar")
    a_vec, b_vec = a.ndim == 1, b.ndim == 1
    if a_vec:
        a = _core.reshape(a, (1, a.shape[0]))
    if b_vec:
        b = _core.reshape(b, (b.shape[0], 1))
    inputs = [a, b]
    if a_zero_point is not None or b_zero_point is not None:
        za = _operand(0 if a_zero_point is None else a_zero_point, "a_zero_point",
                      a.dtype if not isinstance(a_zero_point, Var) else None)
        inputs.append(za)
    if b_zero_point is not None:
        inputs.append(_operand(b_zero_point, "b_zero_point", b.dtype if not isinstance(b_zero_point, Var) else None))
    c = _core.op("MatMulInteger", inputs, {})
    if a_vec or b_vec:
        shape = list(c.shape)
        if b_vec:
            del shape[-1]
        if a_vec:
            del shape[-1 if b_vec else -2]
        c = _core.reshape(c, tuple(shape))
    return c


def dynamic_quant_matmul(x, weight_int8, scales, bias=None):
    """``x @ dequantize(weight_int8) + bias`` with ``x`` (float32, [..., K]) quantized per row at
    run time to asymmetric uint8 (ONNX's DynamicQuantizeLinear, per row), an exact integer
    product with the int8 weights ([K, N]) and the float epilogue
    ``fma(float(acc), row_scale * scales[n], bias[n])``. ``scales``: float32, one or N values."""
    x = _operand(x, "x")
    weight_int8 = _operand(weight_int8, "weight_int8")
    scales = _operand(scales, "scales", None if isinstance(scales, Var) else _np.float32)
    inputs = [x, weight_int8, scales]
    if bias is not None:
        inputs.append(_operand(bias, "bias", None if isinstance(bias, Var) else _np.float32))
    return _core.op("DynamicQuantMatMul", inputs, {})


def quantize_weight_per_column(w_float):
    """Symmetric per-column int8 quantization of a [K, N] float weight: ``scales = max|w[:, n]| /
    127`` (1 for an all-zero column) and ``w_int8 = clip(round(w / scales), -127, 127)``, rounding
    half to even. Returns ``(w_int8, scales)`` as Vars."""
    from . import expr as F
    w = _operand(w_float, "w_float")
    if w.dtype not in (_np.dtype(_np.float32), _np.dtype(_np.float64), _np.dtype(_np.float16)):
        raise ValueError(f"quantize_weight_per_column: the weights must be floating point, got {w.dtype}")
    if w.ndim != 2:
        raise ValueError(f"quantize_weight_per_column: the weights must be 2-D [K, N], got shape {w.shape}")
    w = F.cast(w, _np.float32)
    scales = F.divide(F.reduce_max(F.abs(w), [0]), F.const(_np.float32(127.0)))
    scales = F.select(F.equal(scales, F.const(_np.float32(0.0))), F.const(_np.float32(1.0)), scales)
    q = F.clip(F.round(F.divide(w, scales)), -127.0, 127.0)
    return F.cast(q, _np.int8), scales
