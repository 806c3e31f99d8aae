"""ONNX quantization operators (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
QLinearMatMul, MatMulInteger, ConvInteger, QLinearConv) as mnnpy.expr calls.

Integer tensors stay integers and the results are bit-exact with ONNX's definition: integer
products accumulate in int32 (matmul) or in float32 pieces whose sums are exact (convolution,
see ``_integer_conv``); rescaling runs in float32, as onnxruntime computes it. MatMulInteger
and QLinearMatMul with a 2-D B run on the int8 GEMM (``expr.matmul_integer``, docs/int8.md),
with the same int32 results."""
import numpy as np

from .. import _core
from .. import expr as F
from ._graph import Node
from ._onnx_ops import HANDLERS, UnsupportedOperator, _attr, _axis, handles

# Element types a quantized tensor may have here; int4/uint4/float8 have no mnnpy dtype yet.
_QUANT_DTYPES = (np.int8, np.uint8, np.int16, np.int32)


def _check_quant_dtype(dtype, node, what):
    if np.dtype(dtype) not in [np.dtype(t) for t in _QUANT_DTYPES]:
        raise UnsupportedOperator(f"node '{node.name}': {node.op} with {what} of type {np.dtype(dtype).name} is not "
                                  f"supported (int8, uint8, int16 and int32 are)")


def _per_axis(param, x, node, axis_default=1):
    """``param`` (a scale or zero point: scalar, per-axis 1-D, or per-block) shaped to broadcast
    against ``x`` along the node's ``axis``, blocks repeated ``block_size`` times."""
    if param.ndim == 0 or param.size == 1 and param.ndim <= 1:
        return F.reshape(param, [])
    axis = _axis(_attr(node, "axis", axis_default), x.ndim)
    block = int(_attr(node, "block_size", 0) or 0)
    if block > 0:
        if param.ndim != x.ndim:
            raise ValueError(f"a blocked scale must have the input's rank {x.ndim}, got shape {list(param.shape)}")
        blocks = -(-x.shape[axis] // block)
        if param.shape[axis] != blocks:
            raise ValueError(f"a scale with block_size {block} needs {blocks} blocks along axis {axis}, "
                             f"got {param.shape[axis]}")
        index = F.const((np.arange(x.shape[axis]) // block).astype(np.int64))
        return F.gather(param, index, axis)
    if param.ndim != 1 or param.shape[0] != x.shape[axis]:
        raise ValueError(f"a per-axis scale or zero point must be 1-D with {x.shape[axis]} values (axis {axis}), "
                         f"got shape {list(param.shape)}")
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    return F.reshape(param, shape)


def _saturate(y, dtype):
    """``y`` (float, already rounded) clipped to ``dtype``'s range and cast to it."""
    info = np.iinfo(dtype)
    return F.cast(F.clip(y, float(info.min), float(info.max)), dtype)


@handles("QuantizeLinear")
def _quantize_linear(ctx, node, ins):
    from .onnx import ONNX_DTYPES
    x, scale = ins[0], ins[1]
    zero = ins[2] if len(ins) > 2 else None
    if zero is not None:
        out_dtype = np.dtype(zero.dtype)
    elif _attr(node, "output_dtype", 0):
        code = _attr(node, "output_dtype")
        if code not in ONNX_DTYPES:
            raise UnsupportedOperator(f"node '{node.name}': QuantizeLinear to ONNX data type {code} is not supported")
        out_dtype = np.dtype(ONNX_DTYPES[code])
    else:
        out_dtype = np.dtype(np.uint8)
    _check_quant_dtype(out_dtype, node, "output")
    channels_last = _attr(node, "channels_last", 0) == 1  # set by _qdq_fusion.py
    if x.dtype == np.float32 and scale.dtype == np.float32 and scale.size == 1 and \
            (zero is None or zero.size == 1) and out_dtype in (np.dtype(np.uint8), np.dtype(np.int8)):
        # The per-tensor 8-bit case in one kernel (the same formula), channels last where asked.
        zero = F.const(np.zeros((), out_dtype)) if zero is None else F.reshape(zero, [])
        return _core.op("QuantizeLinear", [x, F.reshape(scale, []), zero], {"channels_last": int(channels_last)})
    if channels_last:
        raise ValueError("a channels-last QuantizeLinear needs float32 x and one 8-bit zero point")
    # Divided in the input's precision (float32 for float16 inputs too, as the reference rounds
    # the quotient once), then rounded half to even.
    compute = np.float64 if x.dtype == np.float64 else np.float32
    y = F.round(F.divide(F.cast(x, compute), F.cast(_per_axis(scale, x, node), compute)))
    if zero is not None:
        y = F.add(y, F.cast(_per_axis(zero, x, node), compute))
    return _saturate(y, out_dtype)


@handles("DequantizeLinear")
def _dequantize_linear(ctx, node, ins):
    x, scale = ins[0], ins[1]
    zero = ins[2] if len(ins) > 2 else None
    _check_quant_dtype(x.dtype, node, "input")
    out_dtype = np.dtype(scale.dtype)
    if _attr(node, "output_dtype", 0):
        from .onnx import ONNX_DTYPES
        out_dtype = np.dtype(ONNX_DTYPES.get(_attr(node, "output_dtype"), out_dtype))
    # int32 inputs exceed float32's exact range: the difference is taken in float64.
    compute = np.float64 if x.dtype == np.int32 or scale.dtype == np.float64 else np.float32
    y = F.cast(x, compute)
    if zero is not None:
        y = F.subtract(y, F.cast(_per_axis(zero, x, node), compute))
    y = F.multiply(y, F.cast(_per_axis(scale, x, node), compute))
    return F.cast(y, out_dtype)


@handles("DynamicQuantizeLinear")
def _dynamic_quantize_linear(ctx, node, ins):
    x = F.cast(ins[0], np.float32)
    zero_f = F.const(np.zeros((), np.float32))
    low = F.minimum(F.reduce_min(x, list(range(x.ndim))) if x.ndim else x, zero_f)
    high = F.maximum(F.reduce_max(x, list(range(x.ndim))) if x.ndim else x, zero_f)
    # An all-zero input has range 0, which the standard leaves open: scale 1, as onnxruntime does.
    scale = F.divide(F.subtract(high, low), F.const(np.float32(255.0)))
    scale = F.select(F.equal(scale, zero_f), F.const(np.float32(1.0)), scale)
    zero_point = F.round(F.clip(F.negative(F.divide(low, scale)), 0.0, 255.0))
    y = F.add(F.round(F.divide(x, scale)), zero_point)
    return [_saturate(y, np.uint8), scale, F.cast(zero_point, np.uint8)]


def _centered(x, zero, node, axis_default):
    """``x - zero`` in int32 (``zero`` absent: ``x``)."""
    x32 = F.cast(x, np.int32)
    if zero is None:
        return x32
    return F.subtract(x32, F.cast(_per_axis(zero, x, node, axis_default), np.int32))


def _matmul_zero(zero, operand, node, which):
    """A MatMulInteger zero point shaped against its operand: A's per row (M values), B's per
    column (N values)."""
    if zero is None:
        return None
    if zero.ndim == 0 or zero.size == 1:
        return F.reshape(F.cast(zero, np.int32), [])
    if zero.ndim != 1:
        raise ValueError(f"{which}'s zero point must be a scalar or 1-D, got shape {list(zero.shape)}")
    if which == "A":
        if zero.shape[0] != operand.shape[-2]:
            raise ValueError(f"A's zero point has {zero.shape[0]} values, A has {operand.shape[-2]} rows")
        return F.reshape(F.cast(zero, np.int32), [zero.shape[0], 1])
    if zero.shape[0] != operand.shape[-1]:
        raise ValueError(f"B's zero point has {zero.shape[0]} values, B has {operand.shape[-1]} columns")
    return F.cast(zero, np.int32)


# The deepest integer product whose sums float32 holds exactly: depth * 255 * 255 < 2^24.
_EXACT_MATMUL_DEPTH = (1 << 24) // (255 * 255)


def _fits_int8_kernel(zero, count):
    """Whether a MatMulInteger zero point is one the int8 kernel takes: absent, one value, or a
    1-D vector of ``count``."""
    return zero is None or zero.size == 1 and zero.ndim <= 1 or zero.ndim == 1 and zero.shape[0] == count


def _integer_matmul(a, a_zero, b, b_zero, node, as_int32=True):
    """The int32 product (a - a_zero) @ (b - b_zero); with ``as_int32`` False, a product computed
    exactly in float32 stays float32 (its values are the same integers)."""
    for v, which in ((a, "A"), (b, "B")):
        if np.dtype(v.dtype) not in (np.dtype(np.int8), np.dtype(np.uint8)):
            raise TypeError(f"input {which} must be int8 or uint8, got {np.dtype(v.dtype).name}")
    if a.ndim >= 2 and b.ndim >= 2 and _fits_int8_kernel(a_zero, a.shape[-2]) and _fits_int8_kernel(b_zero, b.shape[-1]):
        # The int8 GEMM (B packed once when it is constant), same int32 results.
        return F.matmul_integer(a, b, a_zero, b_zero)
    # Centred 8-bit values are at most 255 in magnitude: up to _EXACT_MATMUL_DEPTH terms, every
    # partial sum is an integer below 2^24, so a float32 product (the float GEMM, batched B
    # included) is exact; deeper ones run in int32.
    exact_in_float = a.shape[-1] <= _EXACT_MATMUL_DEPTH
    compute = np.float32 if exact_in_float else np.int32
    a_c, b_c = F.cast(a, compute), F.cast(b, compute)
    za, zb = _matmul_zero(a_zero, a, node, "A"), _matmul_zero(b_zero, b, node, "B")
    if za is not None:
        a_c = F.subtract(a_c, F.cast(za, compute))
    if zb is not None:
        b_c = F.subtract(b_c, F.cast(zb, compute))
    product = F.matmul(a_c, b_c)
    return F.cast(product, np.int32) if exact_in_float and as_int32 else product


@handles("MatMulInteger")
def _matmul_integer(ctx, node, ins):
    return _integer_matmul(ins[0], ins[2] if len(ins) > 2 else None, ins[1], ins[3] if len(ins) > 3 else None, node)


def _requantize(acc, multiplier, zero, out_dtype):
    """round(float32(acc) * multiplier) + zero, saturated to ``out_dtype``: float32 arithmetic, as
    onnxruntime's kernels and the int8 kernels here (backend/cpu/requant_int8.h) compute it."""
    y = F.round(F.multiply(F.cast(acc, np.float32), F.cast(multiplier, np.float32)))
    if zero is not None:
        y = F.add(y, F.cast(zero, np.float32))
    return _saturate(y, out_dtype)


def _fits_int8_matmul(a, a_scale, a_zero, b, b_scale, b_zero, y_scale, y_zero):
    """Whether a QLinearMatMul runs as the int8 GEMM with its 8-bit epilogue: 8-bit operands and
    output, a 2-D B, float32 scales, one zero point for A and one or one per column for B."""
    eight_bit = (np.dtype(np.int8), np.dtype(np.uint8))
    if a.ndim < 2 or b.ndim != 2 or y_zero is None or any(np.dtype(v.dtype) not in eight_bit for v in (a, b, y_zero)):
        return False
    if any(np.dtype(v.dtype) != np.dtype(np.float32) for v in (a_scale, b_scale, y_scale)):
        return False
    return ((a_zero is None or a_zero.size == 1) and y_zero.size == 1
            and (b_zero is None or b_zero.size in (1, b.shape[1]) and b_zero.ndim <= 1))


@handles("QLinearMatMul")
def _qlinear_matmul(ctx, node, ins):
    a, a_scale, a_zero, b, b_scale, b_zero, y_scale = ins[:7]
    y_zero = ins[7] if len(ins) > 7 else None
    for s in (a_scale, y_scale):
        if s.size != 1:
            raise UnsupportedOperator(f"node '{node.name}': QLinearMatMul with per-axis scales is not supported")
    # B's scale: one, or one per column of a 2-D B (as ONNX allows; its zero point likewise).
    per_column = b.ndim == 2 and b_scale.size == b.shape[1] and b_scale.size != 1
    if b_scale.size != 1 and not per_column:
        raise UnsupportedOperator(f"node '{node.name}': QLinearMatMul with b_scale of shape {list(b_scale.shape)} is "
                                  "not supported (one value, or one per column of a 2-D B)")
    if _fits_int8_matmul(a, a_scale, a_zero, b, b_scale, b_zero, y_scale, y_zero):
        # Rows of A times a 2-D B with the requantization in the GEMM's epilogue: a 1x1
        # convolution over A's rows, channels last (the same formula, the same bytes).
        rows, (depth, columns) = int(np.prod(a.shape[:-1])), b.shape
        weights = F.reshape(F.transpose(b, [1, 0]), [columns, depth, 1, 1])
        zero_a = F.reshape(a_zero, []) if a_zero is not None else F.const(np.zeros((), a.dtype))
        zero_b = F.reshape(b_zero, [-1]) if b_zero is not None else F.const(np.zeros((), b.dtype))
        y = F.qlinear_conv2d(F.reshape(a, [1, rows, 1, depth]), F.reshape(a_scale, []), zero_a, weights,
                             F.reshape(b_scale, [-1]), zero_b, F.reshape(y_scale, []), F.reshape(y_zero, []),
                             channels_last=True)
        return F.reshape(y, list(a.shape[:-1]) + [columns])
    if (a.ndim >= 2 and b.ndim >= 2 and (a_zero is None or a_zero.size == 1) and y_zero is not None
            and y_zero.size == 1 and (b_zero is None or b_zero.size in (1, b.shape[-1]))
            and all(np.dtype(v.dtype) == np.dtype(np.float32) for v in (a_scale, b_scale, y_scale))):
        # Activations times activations (attention's products): the int8 GEMM with the
        # requantization in its epilogue, B packed per product.
        zero_a = F.reshape(a_zero, []) if a_zero is not None else F.const(np.zeros((), a.dtype))
        zero_b = F.reshape(b_zero, [-1] if b_zero.size != 1 else []) if b_zero is not None else F.const(
            np.zeros((), b.dtype))
        return F.qlinear_matmul(a, F.reshape(a_scale, []), zero_a, b, F.reshape(b_scale, [-1] if per_column else []),
                                zero_b, F.reshape(y_scale, []), F.reshape(y_zero, []))
    if b_zero is not None and b_zero.size != 1:
        b_zero = F.reshape(b_zero, [-1])
    acc = _integer_matmul(a, a_zero, b, b_zero, node, as_int32=False)
    # The combined scale in the scales' own type, as ONNX computes it, then applied in float32.
    multiplier = F.divide(F.multiply(F.reshape(a_scale, []), F.reshape(b_scale, [-1] if per_column else [])),
                          F.reshape(y_scale, []))
    out_dtype = np.dtype(y_zero.dtype) if y_zero is not None else np.dtype(a.dtype)
    return _requantize(acc, multiplier, F.reshape(y_zero, []) if y_zero is not None else None, out_dtype)


# Splitting centred 8-bit values (|v| <= 255) into a signed high part and a 4-bit low part makes
# every product at most 16 * 16, so float32 convolutions sum them exactly up to this many terms.
_EXACT_CONV_TERMS = (1 << 24) // 256


def _integer_conv(ctx, node, x, w, x_zero, w_zero):
    """The int32 convolution of (x - x_zero) with (w - w_zero), exact: four float32
    convolutions of the 4-bit pieces, combined in int32."""
    for v, which in ((x, "x"), (w, "w")):
        if np.dtype(v.dtype) not in (np.dtype(np.int8), np.dtype(np.uint8)):
            raise TypeError(f"input {which} must be int8 or uint8, got {np.dtype(v.dtype).name}")
    if x_zero is not None and x_zero.size != 1:
        raise ValueError(f"the input's zero point must be a scalar, got shape {list(x_zero.shape)}")
    group = int(_attr(node, "group", 1))
    terms = int(np.prod(w.shape[1:]))
    if terms >= _EXACT_CONV_TERMS:
        raise UnsupportedOperator(f"node '{node.name}': {node.op} summing {terms} products per output is not "
                                  f"supported (at most {_EXACT_CONV_TERMS - 1})")
    xc = _centered(x, F.reshape(x_zero, []) if x_zero is not None else None, node, 1)
    wc = _centered(w, w_zero, node, 0)
    sixteen = F.const(np.int32(16))
    x_high, x_low = F.floordiv(xc, sixteen), F.floormod(xc, sixteen)
    w_high, w_low = F.floordiv(wc, sixteen), F.floormod(wc, sixteen)
    conv_node = Node("Conv", ["", ""], [""], {k: v for k, v in node.attrs.items()
                                             if k in ("auto_pad", "dilations", "kernel_shape", "pads", "strides")},
                     node.name)
    conv_node.attrs["group"] = group

    def conv(a, b):
        y = HANDLERS["Conv"](ctx, conv_node, [F.cast(a, np.float32), F.cast(b, np.float32)])
        return F.cast(F.round(y), np.int32)
    high = conv(x_high, w_high)
    cross = F.add(conv(x_high, w_low), conv(x_low, w_high))
    low = conv(x_low, w_low)
    return F.add(F.add(F.multiply(high, F.const(np.int32(256))), F.multiply(cross, sixteen)), low)


@handles("ConvInteger")
def _conv_integer(ctx, node, ins):
    x, w = ins[0], ins[1]
    return _integer_conv(ctx, node, x, w, ins[2] if len(ins) > 2 else None, ins[3] if len(ins) > 3 else None)


def _fits_int8_conv(x, x_zero, w, w_scale, w_zero, y_zero, bias):
    """Whether a QLinearConv is one the int8 convolution kernels take: 2-D, 8-bit tensors, zero
    points present, per-tensor or per-output-channel weight parameters, an int32 bias."""
    eight_bit = (np.dtype(np.int8), np.dtype(np.uint8))
    if x.ndim != 4 or w.ndim != 4 or x_zero is None or w_zero is None or y_zero is None:
        return False
    if any(np.dtype(v.dtype) not in eight_bit for v in (x, w, y_zero)):
        return False
    channels = w.shape[0]
    per_channel = all(v.size in (1, channels) and v.ndim <= 1 for v in (w_scale, w_zero))
    return (per_channel and x_zero.size == 1 and y_zero.size == 1
            and (bias is None or np.dtype(bias.dtype) == np.dtype(np.int32) and bias.size == channels))


@handles("QLinearConv")
def _qlinear_conv(ctx, node, ins):
    return _quantized_conv(ctx, node, ins)


@handles("QLinearConvAdd")
def _qlinear_conv_add(ctx, node, ins):
    """A QLinearConv and the QLinearAdd of its output with another tensor (_qdq_fusion.py's
    residual sums): the convolution's nine inputs (the bias may be omitted), then the other
    operand, its scale and zero point, and the sum's scale and zero point."""
    return _quantized_conv(ctx, node, ins[:9], residual=ins[9:14])


def _quantized_conv(ctx, node, ins, residual=None):
    """QLinearConv's output, or with `residual` (operand, scale, zero point, sum's scale, sum's
    zero point) its QLinearAdd with the operand, added in the int8 kernel's epilogue where the
    operand has the output's shape and type."""
    x, x_scale, x_zero, w, w_scale, w_zero, y_scale, y_zero = ins[:8]
    bias = ins[8] if len(ins) > 8 else None

    def with_residual(y):
        if residual is None:
            return y
        r, r_scale, r_zero, sum_scale, sum_zero = residual
        return F.qlinear_add(y, F.reshape(y_scale, []), F.reshape(y_zero, []), r, F.reshape(r_scale, []),
                             F.reshape(r_zero, []), F.reshape(sum_scale, []), F.reshape(sum_zero, []))
    if x_scale.size != 1 or y_scale.size != 1:
        raise UnsupportedOperator(f"node '{node.name}': QLinearConv with per-axis input or output scales is not supported")
    # A ReLU fused by the QDQ pass (_qdq_fusion.py): the output clamped below at its zero point.
    relu = _attr(node, "activation", 0) == 1
    # Channels last ([N, H, W, C] in and out), set by the int8 layout pass (_int8_layout.py).
    channels_last = _attr(node, "channels_last", 0) == 1
    float_scales = all(np.dtype(v.dtype) == np.dtype(np.float32) for v in (x_scale, w_scale, y_scale))
    if float_scales and _fits_int8_conv(x, x_zero, w, w_scale, w_zero, y_zero, bias):
        # The int8 convolution kernels, same results.
        from ._onnx_ops import _spatial_pads
        kernel = list(w.shape[2:])
        strides = list(_attr(node, "strides", [1, 1]))
        dilations = list(_attr(node, "dilations", [1, 1]))
        pads = _spatial_pads(node, list(x.shape[1:3] if channels_last else x.shape[2:]), kernel, strides, dilations)
        args = (x, F.reshape(x_scale, []), F.reshape(x_zero, []), w, F.reshape(w_scale, [-1]), F.reshape(w_zero, [-1]),
                F.reshape(y_scale, []), F.reshape(y_zero, []), bias, strides, pads, dilations,
                int(_attr(node, "group", 1)), relu, channels_last)
        y = F.qlinear_conv2d(*args)
        if residual is not None and _fits_residual(y, residual):
            r, r_scale, r_zero, sum_scale, sum_zero = residual
            return F.qlinear_conv2d(*args, residual=(r, F.reshape(r_scale, []), F.reshape(r_zero, []),
                                                     F.reshape(sum_scale, []), F.reshape(sum_zero, [])))
        return with_residual(y)
    if channels_last:  # the general path below is NCHW's
        x = F.transpose(x, [0, 3, 1, 2])
    acc = _integer_conv(ctx, node, x, w, x_zero, w_zero)
    channels = w.shape[0]
    if bias is not None:
        acc = F.add(acc, F.reshape(F.cast(bias, np.int32), [1, channels] + [1] * (acc.ndim - 2)))
    if w_scale.size == 1:
        w_scale_b = F.reshape(w_scale, [])
    else:
        if w_scale.shape != (channels,):
            raise ValueError(f"w_scale must hold 1 or {channels} values, got shape {list(w_scale.shape)}")
        w_scale_b = F.reshape(w_scale, [1, channels] + [1] * (acc.ndim - 2))
    multiplier = F.divide(F.multiply(F.reshape(x_scale, []), w_scale_b), F.reshape(y_scale, []))
    out_dtype = np.dtype(y_zero.dtype) if y_zero is not None else np.dtype(x.dtype)
    y = _requantize(acc, multiplier, F.reshape(y_zero, []) if y_zero is not None else None, out_dtype)
    if relu:
        y = F.maximum(y, F.reshape(y_zero, []) if y_zero is not None else F.const(np.zeros((), out_dtype)))
    return with_residual(F.transpose(y, [0, 2, 3, 1]) if channels_last else y)


def _fits_residual(y, residual):
    """Whether the int8 convolution's kernel can add `residual` (QLinearConv2D's inputs 9-13) to
    its output y: the operand of y's shape and type, one float32 scale and one zero point each."""
    r, r_scale, r_zero, sum_scale, sum_zero = residual
    if r is None or tuple(r.shape) != tuple(y.shape) or np.dtype(r.dtype) != np.dtype(y.dtype):
        return False
    return all(v is not None and v.size == 1 for v in (r_scale, r_zero, sum_scale, sum_zero)) and \
        all(np.dtype(v.dtype) == np.dtype(np.float32) for v in (r_scale, sum_scale)) and \
        all(np.dtype(v.dtype) == np.dtype(y.dtype) for v in (r_zero, sum_zero))


@handles("DynamicQuantMatMul")
def _dynamic_quant_matmul(ctx, node, ins):
    """The linear layers of a model loaded with memory="low" (convert/_low_memory.py)."""
    x = ins[0] if ins[0].dtype == np.float32 else F.cast(ins[0], np.float32)
    return F.dynamic_quant_matmul(x, ins[1], ins[2], ins[3] if len(ins) > 3 else None,
                                  node.attrs.get("activation") or None)
