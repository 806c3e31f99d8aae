"""8-bit integer matrix products of mnnpy.expr (docs/int8.md)."""
import numpy as _np

from . import _core
from ._core import Var

__all__ = ["matmul_integer", "qlinear_matmul", "dynamic_quant_matmul", "quantize_weight_per_column", "qlinear_conv2d"]

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


def _qlinear_operands(a, a_scale, a_zero, b, b_scale, b_zero, y_scale, y_zero, names):
    """ONNX's QLinear* inputs (a, its scale and zero point, b's, y's) as Vars: arrays and numbers
    become constants, scales float32, zero points of their data's type (y's of its own)."""
    def scale(v, name):
        return _operand(v, name, None if isinstance(v, Var) else _np.float32)

    def zero(v, name, dtype):
        return _operand(v, name, None if isinstance(v, Var) else dtype)
    first, second = names
    return [a, scale(a_scale, f"{first}_scale"), zero(a_zero, f"{first}_zero_point", a.dtype),
            b, scale(b_scale, f"{second}_scale"), zero(b_zero, f"{second}_zero_point", b.dtype),
            scale(y_scale, "y_scale"), _operand(y_zero, "y_zero_point")]


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


def qlinear_matmul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point):
    """ONNX's QLinearMatMul: ``saturate(round(float32(acc) * (a_scale * b_scale / y_scale)) +
    y_zero)`` with ``acc = (a - a_zero) @ (b - b_zero)`` exactly in int32 (the multiplier formed
    and applied in float32, rounding half to even, as onnxruntime computes it), in
    ``y_zero_point``'s type.

    ``a`` ([..., M, K]) and ``b`` ([..., K, N], batch dimensions broadcast) are int8 or uint8, the
    scales float32 and the zero points of their tensor's type; each holds one value, except
    ``b_scale`` and ``b_zero_point``, which may hold one per column (N). The requantization runs in
    the int8 GEMM's epilogue; a batched ``b`` (attention's products) is packed per product, each
    product on one thread. A constant 2-D ``b`` is packed once when the graph is planned."""
    a, b = _operand(a, "a"), _operand(b, "b")
    for v, name in ((a, "a"), (b, "b")):
        if v.dtype not in _EIGHT_BIT:
            raise ValueError(f"qlinear_matmul: {name} must be int8 or uint8, got {v.dtype}")
        if v.ndim < 2:
            raise ValueError(f"qlinear_matmul: {name} must have at least 2 dimensions, got shape {list(v.shape)}")
    inputs = _qlinear_operands(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point,
                               ("a", "b"))
    return _core.op("QLinearMatMul", inputs, {})


def dynamic_quant_matmul(x, weight_int8, scales, bias=None, activation=None):
    """``x @ dequantize(weight_int8) + bias`` with ``x`` (float32, [..., K]) quantized per row at
    run time to asymmetric uint8 (ONNX's DynamicQuantizeLinear, per row), an exact integer
    product with the int8 weights ([K, N]) and the float epilogue
    ``fma(float(acc), row_scale * scales[n], bias[n])``. ``scales``: float32, one or N values.
    ``activation``: ``"relu"`` or ``"gelu"`` (erf form) applied to that in the epilogue, with the
    values of ``expr.relu`` / ``expr.gelu``; None: none."""
    x = _operand(x, "x")
    weight_int8 = _operand(weight_int8, "weight_int8")
    scales = _operand(scales, "scales", None if isinstance(scales, Var) else _np.float32)
    inputs = [x, weight_int8, scales]
    if bias is not None:
        inputs.append(_operand(bias, "bias", None if isinstance(bias, Var) else _np.float32))
    if activation not in (None, "relu", "gelu"):
        raise ValueError(f"dynamic_quant_matmul: activation must be 'relu', 'gelu' or None, got {activation!r}")
    return _core.op("DynamicQuantMatMul", inputs, {"activation": activation} if activation else {})


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


def qlinear_conv2d(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, bias=None,
                   stride=(1, 1), padding=(0, 0, 0, 0), dilate=(1, 1), group=1, relu=False, channels_last=False,
                   residual=None):
    """ONNX's QLinearConv on NCHW 8-bit tensors: ``acc = sum (x - x_zero)(w - w_zero) + bias`` in
    int32, then ``saturate(round(float32(acc) * (x_scale * w_scale / y_scale)) + y_zero)`` (the
    multiplier formed and applied in float32, rounding half to even, as onnxruntime computes it), in
    ``y_zero_point``'s type.

    ``x`` [N, C, H, W] and ``w`` [OC, C/group, kh, kw] are int8 or uint8; ``w_scale`` and
    ``w_zero_point`` hold one value or one per output channel, the other scales and zero points
    one; ``bias`` is int32 [OC]. ``padding`` is (top, left, bottom, right). ``relu`` clamps the
    output below at ``y_zero_point`` (a fused ReLU). Depthwise layers run a direct int8 kernel,
    the others the int8 GEMM on the input's patches. ``channels_last``: ``x`` is [N, H, W, C] and
    the output [N, OH, OW, OC], the layout the int8 kernels run fastest on.

    ``residual``: ``(r, r_scale, r_zero_point, sum_scale, sum_zero_point)`` returns instead
    ``qlinear_add(y, y_scale, y_zero_point, r, r_scale, r_zero_point, sum_scale, sum_zero_point)``
    (``r`` with the output's type and shape), with the same bytes, computed as each tile of the
    output is requantized (a residual connection of a quantized ResNet)."""
    x, w = _operand(x, "x"), _operand(w, "w")
    for v, name in ((x, "x"), (w, "w")):
        if v.dtype not in _EIGHT_BIT:
            raise ValueError(f"qlinear_conv2d: {name} must be int8 or uint8, got {v.dtype}")
    inputs = _qlinear_operands(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point,
                               ("x", "w"))
    if bias is not None:
        inputs.append(_operand(bias, "bias", None if isinstance(bias, Var) else _np.int32))
    if residual is not None:
        if not isinstance(residual, (tuple, list)) or len(residual) != 5:
            raise ValueError("qlinear_conv2d: residual must be (r, r_scale, r_zero_point, sum_scale, sum_zero_point)")
        r, r_scale, r_zero_point, sum_scale, sum_zero_point = residual
        if bias is None:
            inputs.append(_operand(_np.zeros(w.shape[0], _np.int32), "bias"))
        inputs += [_operand(r, "residual"), _operand(r_scale, "r_scale", None if isinstance(r_scale, Var) else _np.float32),
                   _operand(r_zero_point, "r_zero_point", None if isinstance(r_zero_point, Var) else inputs[7].dtype),
                   _operand(sum_scale, "sum_scale", None if isinstance(sum_scale, Var) else _np.float32),
                   _operand(sum_zero_point, "sum_zero_point", None if isinstance(sum_zero_point, Var) else inputs[7].dtype)]
    attrs = {"strides": [int(v) for v in stride], "pads": [int(v) for v in padding],
             "dilations": [int(v) for v in dilate], "group": int(group), "activation": 1 if relu else 0,
             "channels_last": 1 if channels_last else 0}
    return _core.op("QLinearConv2D", inputs, attrs)
