"""onnxruntime's QOperator contrib operators (domain com.microsoft, written by
``quantize_static(..., quant_format=QuantFormat.QOperator)``) as mnnpy.expr calls on the int8
kernels (docs/int8.md, "int8 elementwise ops"), and ONNX MaxPool on 8-bit tensors.

QLinearAdd, QLinearMul, QLinearGlobalAveragePool, QLinearAveragePool, QLinearConcat and
QLinearSoftmax (over the last axis) map onto their ops one to one; QLinearLeakyRelu and QLinearSigmoid become a 256-entry table (each possible
input value dequantized, the function applied in float32, quantized again, as onnxruntime builds
its table) read by a gather; QGemm becomes the int8 GEMM (``matmul_integer``) with its int32 bias
and onnxruntime's requantization."""
import numpy as np

from .. import _core
from .. import expr as F
from ._onnx_ops import HANDLERS, UnsupportedOperator, _attr, handles

# The contrib operators this module converts; the reader accepts these from com.microsoft.
MICROSOFT_OPS = ("QLinearAdd", "QLinearMul", "QLinearGlobalAveragePool", "QLinearAveragePool", "QLinearConcat",
                 "QLinearLeakyRelu", "QLinearSigmoid", "QLinearSoftmax", "QGemm")

_EIGHT_BIT = (np.dtype(np.int8), np.dtype(np.uint8))


def _eight_bit(x, node, what="X"):
    if np.dtype(x.dtype) not in _EIGHT_BIT:
        raise UnsupportedOperator(f"node '{node.name}': {node.op} on {what} of type {np.dtype(x.dtype).name} is not "
                                  "supported (int8 and uint8 are)")
    return x


def _scale(s, node, what):
    if s is None:
        raise ValueError(f"{node.op} needs {what}")
    if s.size != 1:
        raise UnsupportedOperator(f"node '{node.name}': {node.op} with a per-axis {what} is not supported")
    return F.reshape(F.cast(s, np.float32), [])


def _zero(z, dtype):
    """A zero point as one value of ``dtype``; an omitted one is 0."""
    if z is None:
        return F.const(np.zeros((), dtype))
    if z.size != 1:
        raise ValueError(f"a zero point must hold one value (per-axis ones are not supported), got shape "
                         f"{list(z.shape)}")
    return F.reshape(F.cast(z, dtype), [])


def _optional(ins, i):
    return ins[i] if len(ins) > i else None


@handles("QLinearAdd", "QLinearMul")
def _qlinear_binary(ctx, node, ins):
    a, b = _eight_bit(ins[0], node, "A"), _eight_bit(ins[3], node, "B")
    t = np.dtype(a.dtype)
    if np.dtype(b.dtype) != t:
        raise ValueError(f"A and B must have one type, got {t.name} and {np.dtype(b.dtype).name}")
    args = (a, _scale(ins[1], node, "A_scale"), _zero(_optional(ins, 2), t), b, _scale(ins[4], node, "B_scale"),
            _zero(_optional(ins, 5), t), _scale(ins[6], node, "C_scale"), _zero(_optional(ins, 7), t))
    return F.qlinear_add(*args) if node.op == "QLinearAdd" else F.qlinear_mul(*args)


def _pool_quant(node, ins):
    x = _eight_bit(ins[0], node)
    t = np.dtype(x.dtype)
    return x, (_scale(ins[1], node, "x_scale"), _zero(_optional(ins, 2), t), _scale(ins[3], node, "y_scale"),
               _zero(_optional(ins, 4), t))


@handles("QLinearGlobalAveragePool")
def _qlinear_global_average_pool(ctx, node, ins):
    x, q = _pool_quant(node, ins)
    return F.qlinear_global_average_pool(x, *q, channels_last=bool(_attr(node, "channels_last", 0)))


@handles("QLinearAveragePool")
def _qlinear_average_pool(ctx, node, ins):
    from ._onnx_ops import _spatial_pads
    x, q = _pool_quant(node, ins)
    channels_last = bool(_attr(node, "channels_last", 0))
    kernel = list(node.attrs["kernel_shape"])
    if x.ndim != 4 or len(kernel) != 2:
        raise UnsupportedOperator(f"node '{node.name}': QLinearAveragePool is supported on 4-D inputs, got "
                                  f"{x.ndim}-D")
    strides = list(_attr(node, "strides", [1, 1]))
    spatial = list(x.shape[1:3] if channels_last else x.shape[2:])
    pads = _spatial_pads(node, spatial, kernel, strides, [1, 1])
    return F.qlinear_average_pool2d(x, *q, kernel, strides, pads, bool(_attr(node, "ceil_mode", 0)),
                                    bool(_attr(node, "count_include_pad", 0)), channels_last)


@handles("QLinearConcat")
def _qlinear_concat(ctx, node, ins):
    if len(ins) < 5 or (len(ins) - 2) % 3:
        raise ValueError(f"QLinearConcat takes Y_scale, Y_zero_point and (X, X_scale, X_zero_point) per input, "
                         f"got {len(ins)} inputs")
    first = _eight_bit(ins[2], node)
    t = np.dtype(first.dtype)
    items = [(_eight_bit(ins[i], node), _scale(ins[i + 1], node, "X_scale"), _zero(ins[i + 2], t))
             for i in range(2, len(ins), 3)]
    return F.qlinear_concat(items, _scale(ins[0], node, "Y_scale"), _zero(ins[1], t), int(_attr(node, "axis")))


def _table_lookup(node, ins, function):
    """y = table[x]: each of the 256 values of x's type dequantized (float32 ``x_scale * (x -
    x_zero)``), mapped by ``function`` and quantized (``round(v / y_scale) + y_zero``, saturated),
    as onnxruntime builds its lookup tables."""
    x, (xs, xz, ys, yz) = _pool_quant(node, ins)
    t = np.dtype(x.dtype)
    info = np.iinfo(t)
    values = F.const(np.arange(info.min, info.max + 1, dtype=np.int32))
    dequantized = F.multiply(xs, F.cast(F.subtract(values, F.cast(xz, np.int32)), np.float32))
    y = F.add(F.round(F.divide(function(dequantized), ys)), F.cast(yz, np.float32))
    table = F.cast(F.clip(y, float(info.min), float(info.max)), t)
    index = F.cast(x, np.int32)
    if info.min:
        index = F.subtract(index, F.const(np.int32(info.min)))
    return F.gather(table, index, 0)


@handles("QLinearLeakyRelu")
def _qlinear_leaky_relu(ctx, node, ins):
    alpha = F.const(np.float32(_attr(node, "alpha", 0.01)))
    zero = F.const(np.float32(0))
    return _table_lookup(node, ins, lambda v: F.select(F.greater_equal(v, zero), v, F.multiply(v, alpha)))


@handles("QLinearSigmoid")
def _qlinear_sigmoid(ctx, node, ins):
    return _table_lookup(node, ins, F.sigmoid)


@handles("QLinearSoftmax")
def _qlinear_softmax(ctx, node, ins):
    """onnxruntime's QLinearSoftmax (attributes axis and opset, the Softmax version whose meaning
    it takes), and what the QDQ pass fuses from DequantizeLinear, Softmax, QuantizeLinear: the
    8-bit kernel over the last axis; another axis dequantizes, runs Softmax and quantizes."""
    x = _eight_bit(ins[0], node)
    y_zero = _optional(ins, 4)
    out = np.dtype(y_zero.dtype) if y_zero is not None else np.dtype(np.uint8)
    opset = int(_attr(node, "opset", 13))
    axis = int(_attr(node, "axis", -1 if opset >= 13 else 1))
    axis = axis + x.ndim if axis < 0 else axis
    x_scale, x_zero = _scale(ins[1], node, "X_scale"), _zero(_optional(ins, 2), np.dtype(x.dtype))
    y_scale = _scale(ins[3], node, "y_scale")
    if axis == x.ndim - 1:
        return F.qlinear_softmax(x, x_scale, x_zero, y_scale, _zero(y_zero, out))
    v = F.multiply(F.subtract(F.cast(x, np.float32), F.cast(x_zero, np.float32)), x_scale)
    shape = list(v.shape)
    if opset < 13:  # coerced to 2-D at `axis`
        v = F.reshape(v, [int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))])
        axis = 1
    y = F.reshape(F.softmax(v, axis), shape)
    return _core.op("QuantizeLinear", [y, y_scale, _zero(y_zero, out)], {"channels_last": 0})


@handles("QGemm")
def _qgemm(ctx, node, ins):
    """onnxruntime's QGemm: ``alpha (A - a_zero)(B - b_zero) + C`` (C an int32 bias in the
    product's scale), quantized with y_scale and y_zero_point when given, else float32."""
    from ._onnx_quant_ops import _integer_matmul, _requantize
    a, b = _eight_bit(ins[0], node, "A"), _eight_bit(ins[3], node, "B")
    if _attr(node, "transA", 0):
        a = F.transpose(a, [1, 0])
    if _attr(node, "transB", 0):
        b = F.transpose(b, [1, 0])
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"QGemm needs 2-D A and B, got shapes {list(a.shape)} and {list(b.shape)}")
    n = b.shape[1]
    a_scale = _scale(ins[1], node, "a_scale")
    b_scale, b_zero = ins[4], _optional(ins, 5)
    if b_scale.size not in (1, n) or (b_zero is not None and b_zero.size not in (1, n)):
        raise ValueError(f"b_scale and b_zero_point must hold 1 or {n} values")
    b_scale = F.reshape(F.cast(b_scale, np.float32), [] if b_scale.size == 1 else [n])
    a_zero = _zero(_optional(ins, 2), np.dtype(a.dtype))
    if b_zero is not None:
        b_zero = F.reshape(F.cast(b_zero, b.dtype), [] if b_zero.size == 1 else [n])
    acc = _integer_matmul(a, a_zero, b, b_zero, node)
    bias = _optional(ins, 6)
    if bias is not None:
        acc = F.add(acc, F.reshape(F.cast(bias, np.int32), [-1]))
    scale = F.multiply(F.multiply(F.const(np.float32(_attr(node, "alpha", 1.0))), a_scale), b_scale)
    y_scale = _optional(ins, 7)
    if y_scale is None:
        return F.multiply(F.cast(acc, np.float32), scale)
    y_zero = _optional(ins, 8)
    out = np.dtype(y_zero.dtype) if y_zero is not None else np.dtype(np.uint8)
    return _requantize(acc, F.divide(scale, _scale(y_scale, node, "y_scale")), _zero(y_zero, out), out)


_float_max_pool = HANDLERS["MaxPool"]


@handles("MaxPool")
def _max_pool(ctx, node, ins):
    """8-bit 2-D MaxPool (QOperator models pool their quantized tensors) on the int8 kernel; the
    rest as before."""
    x = ins[0]
    if (np.dtype(x.dtype) not in _EIGHT_BIT or x.ndim != 4 or len([o for o in node.outputs if o]) > 1
            or _attr(node, "storage_order", 0)):
        return _float_max_pool(ctx, node, ins)
    from ._onnx_ops import _spatial_pads
    channels_last = bool(_attr(node, "channels_last", 0))  # set by the int8 layout pass
    kernel = list(node.attrs["kernel_shape"])
    strides = list(_attr(node, "strides", [1] * len(kernel)))
    dilations = list(_attr(node, "dilations", [1] * len(kernel)))
    pads = _spatial_pads(node, list(x.shape[1:3] if channels_last else x.shape[2:]), kernel, strides, dilations)
    return F.max_pool2d_int8(x, kernel, strides, pads, dilations, bool(_attr(node, "ceil_mode", 0)), channels_last)
