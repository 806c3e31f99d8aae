"""Graph nodes with MNN's semantics (op names "MNN.*"), for the MNN ops that no ONNX operator
matches one to one: read_mnn (convert/mnn.py) emits them, `instantiate` builds them like the
ONNX ones. Shape arguments (axes, begins, sizes...) are read when the graph is built, as for
ONNX; MNN's int32 index and boolean results stay int32, as MNN gives them."""
import numpy as np

from .. import expr as F
from ._onnx_ops import _axis, _ints, handles


def _int_list(ctx, node, v, what):
    return _ints(ctx, node, v, what) if v is not None else None


@handles("MNN.Unary")
def _unary(ctx, node, ins):
    x = ins[0]
    op = node.attrs["op"]
    one = np.asarray(1, x.dtype)
    if op == "Square":
        return F.multiply(x, x)
    if op == "Rsqrt":
        return F.reciprocal(F.sqrt(x))
    if op == "Log1p":
        return F.log(F.add(x, one))
    if op == "Expm1":
        return F.expm1(x)
    if op == "Erfc":
        return F.subtract(one, F.erf(x))
    if op == "Round":
        return F.round(x)
    if op == "GeluTanh":
        return _mnn_gelu(x)
    if op == "Gelu":
        return F.gelu(x)
    if op == "Silu":
        return F.multiply(x, F.sigmoid(x))
    raise ValueError(f"unary operation {op} is not supported")


def _mnn_gelu(x):
    """MNN's GELU: the tanh form 0.5 x (1 + tanh(v)), v = sqrt(2 / pi) (x + 0.044715 x^3), with
    tanh as MNN's kernels compute it: a rational (Pade) approximation kept within [-1, 1], and
    exactly -1 / 1 where |v| >= 5 (so GELU is exactly 0 below x = -3.79, where the formula
    gives up to -1.8e-4)."""
    c = np.asarray
    v = F.multiply(c(0.7978845608, x.dtype), F.add(x, F.multiply(c(0.044715, x.dtype), F.multiply(x, F.multiply(x, x)))))
    v2 = F.multiply(v, v)
    num = F.multiply(v, F.add(c(135135.0, x.dtype), F.multiply(v2, F.add(c(17325.0, x.dtype),
                                                                     F.multiply(v2, F.add(c(378.0, x.dtype), v2))))))
    den = F.add(c(135135.0, x.dtype), F.multiply(v2, F.add(c(62370.0, x.dtype), F.multiply(v2, F.add(
        c(3150.0, x.dtype), F.multiply(v2, c(28.0, x.dtype)))))))
    rational = F.minimum(F.maximum(F.divide(num, den), c(-1.0, x.dtype)), c(1.0, x.dtype))
    tanh = F.select(F.greater(v, c(5.0, x.dtype)), c(1.0, x.dtype),
                    F.select(F.less_equal(v, c(-5.0, x.dtype)), c(-1.0, x.dtype), rational))
    return F.multiply(F.multiply(c(0.5, x.dtype), x), F.add(c(1.0, x.dtype), tanh))


@handles("MNN.Binary")
def _binary(ctx, node, ins):
    a, b = ins
    op = node.attrs["op"]
    integral = np.dtype(a.dtype).kind in "iub"
    if op == "FloorDiv":
        return F.floordiv(a, b) if integral else F.floor(F.divide(a, b))
    if op == "FloorMod":  # the sign of the divisor, as Python's %
        return F.floormod(a, b)
    if op == "Mod":  # the sign of the dividend, as C's fmod
        return F.subtract(a, F.multiply(_truncated_quotient(a, b), b))
    if op == "SquaredDifference":
        d = F.subtract(a, b)
        return F.multiply(d, d)
    if op == "Atan2":
        return F.atan2(a, b)
    if op == "LogicalOr":
        return F.cast(F.logical_or(F.cast(a, np.bool_), F.cast(b, np.bool_)), np.int32)
    if op == "NotEqual":
        return F.cast(F.not_equal(a, b), np.int32)
    raise ValueError(f"binary operation {op} is not supported")


def _truncated_quotient(a, b):
    if np.dtype(a.dtype).kind in "iu":
        q = F.floordiv(a, b)
        inexact = F.logical_and(F.not_equal(F.multiply(q, b), a), F.not_equal(F.less(a, 0), F.less(b, 0)))
        return F.add(q, F.cast(inexact, a.dtype))
    q = F.divide(a, b)
    return F.select(F.less(q, np.asarray(0, q.dtype)), F.ceil(q), F.floor(q))


@handles("MNN.ToBool")
def _to_bool(ctx, node, ins):
    return F.cast(F.not_equal(ins[0], np.asarray(0, ins[0].dtype)), np.int32)


@handles("MNN.Select")
def _select(ctx, node, ins):
    cond, a, b = ins
    return F.select(F.cast(cond, np.bool_), a, b)


@handles("MNN.ChannelAffine")
def _channel_affine(ctx, node, ins):
    """Per-channel (axis 1) scale and bias (Scale), or slope of the negative part (PReLU)."""
    x, w = ins[0], ins[1]
    if x.ndim < 2:
        raise ValueError(f"the input needs a channel axis, got shape {tuple(x.shape)}")
    shape = [-1] + [1] * (x.ndim - 2)
    w = F.reshape(w, shape)
    if node.attrs["mode"] == "prelu":
        return F.select(F.less(x, np.asarray(0, x.dtype)), F.multiply(x, w), x)
    y = F.multiply(x, w)
    if len(ins) > 2 and ins[2] is not None:
        y = F.add(y, F.reshape(ins[2], shape))
    return y


@handles("MNN.LayerNorm")
def _layer_norm(ctx, node, ins):
    x = ins[0]
    gamma = ins[1] if len(ins) > 1 else None
    beta = ins[2] if len(ins) > 2 else None
    axes = sorted(_axis(a, x.ndim) for a in (node.attrs["axes"] or [-1]))
    if axes != list(range(axes[0], x.ndim)):
        raise ValueError(f"layer norm over axes {node.attrs['axes']}: the last axes of the input are expected")
    eps = np.asarray(node.attrs["epsilon"], x.dtype)
    if node.attrs.get("rms"):
        y = F.multiply(x, F.rsqrt(F.add(F.reduce_mean(F.square(x), axes, True), eps)))
    else:
        mean = F.reduce_mean(x, axes, True)
        centered = F.subtract(x, mean)
        y = F.multiply(centered, F.rsqrt(F.add(F.reduce_mean(F.square(centered), axes, True), eps)))
    normalized = list(x.shape[axes[0]:])
    if gamma is not None:
        y = F.multiply(y, F.reshape(gamma, normalized))
    if beta is not None:
        y = F.add(y, F.reshape(beta, normalized))
    return y


@handles("MNN.ChannelsMove")
def _channels_move(ctx, node, ins):
    x = ins[0]
    if x.ndim < 3:
        return x
    if node.attrs["to_last"]:
        return F.transpose(x, [0] + list(range(2, x.ndim)) + [1])
    return F.transpose(x, [0, x.ndim - 1] + list(range(1, x.ndim - 1)))


@handles("MNN.Transpose")
def _transpose(ctx, node, ins):
    return F.transpose(ins[0], _ints(ctx, node, ins[1], "permutation"))


@handles("MNN.Flatten")
def _flatten(ctx, node, ins):
    x = ins[0]
    shape = list(x.shape)
    axis = _axis(node.attrs["axis"], max(x.ndim, 1), inclusive=True) if x.ndim else 0
    end = node.attrs["end_axis"]
    if end == 0:  # ONNX's Flatten: [prod(before axis), prod(from axis)]
        return F.reshape(x, [int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))])
    end = _axis(end, x.ndim)
    return F.reshape(x, shape[:axis] + [int(np.prod(shape[axis:end + 1]))] + shape[end + 1:])


@handles("MNN.Deconvolution")
def _deconvolution(ctx, node, ins):
    from .. import _core
    x, w, b = ins
    a = node.attrs
    if x.ndim != 4:
        raise ValueError(f"only 2-D deconvolution (4-D input) is supported, got shape {tuple(x.shape)}")
    strides, dilations, extra = a["strides"], a["dilations"], a["output_padding"]
    sizes, pads = [], []
    for axis in range(2):
        size, s, d = x.shape[2 + axis], strides[axis], dilations[axis]
        extent = d * (a["kernel_shape"][axis] - 1) + 1
        if a.get("auto_pad") == "SAME_UPPER":
            out = size * s
            pads.append(max((size - 1) * s + extent - out, 0) // 2)
        elif a.get("auto_pad") == "VALID":
            out = (size - 1) * s + extent
            pads.append(0)
        else:
            begin, end = a["pads"][axis], a["pads"][axis + 2]
            if begin != end:
                raise ValueError(f"unequal pads {a['pads']} are not supported")
            out = (size - 1) * s + extent - 2 * begin + extra[axis]
            pads.append(begin)
        if out <= 0:
            raise ValueError(f"the output would be empty along axis {2 + axis}")
        sizes.append(out)
    if x.shape[1] != w.shape[0]:
        raise ValueError(f"input has {x.shape[1]} channels, the weight {tuple(w.shape)} expects {w.shape[0]}")
    return _core.op("Conv2DBackpropInput", [x, w, b], {"strides": list(strides), "pads": [pads[0], pads[1]] * 2,
                                                      "dilations": list(dilations), "group": a["group"],
                                                      "input_size": sizes})


def _axes(ctx, node, ins):
    """The axes of an op that takes them as an attribute or as its second input."""
    if len(ins) > 1 and ins[1] is not None:
        return _ints(ctx, node, ins[1], "axes")
    return node.attrs["axes"]


@handles("MNN.Squeeze")
def _squeeze(ctx, node, ins):
    x = ins[0]
    axes = _axes(ctx, node, ins)
    if node.attrs["unsqueeze"]:
        rank = x.ndim + len(axes)
        return F.unsqueeze(x, sorted(_axis(a, rank) for a in axes))
    if not axes:
        return F.squeeze(x, [i for i, d in enumerate(x.shape) if d == 1])
    return F.squeeze(x, [_axis(a, x.ndim) for a in axes])


@handles("MNN.SliceTf")
def _slice_tf(ctx, node, ins):
    x = ins[0]
    begin, size = _ints(ctx, node, ins[1], "begin"), _ints(ctx, node, ins[2], "size")
    if len(begin) != x.ndim or len(size) != x.ndim:
        raise ValueError(f"begin {begin} and size {size} must give one entry per axis of shape {tuple(x.shape)}")
    index = []
    for b, s, d in zip(begin, size, x.shape):
        if not 0 <= b <= d or (s >= 0 and b + s > d):
            raise ValueError(f"slice begin {begin}, size {size} is outside shape {tuple(x.shape)}")
        index.append(slice(b, d if s < 0 else b + s))
    return x[tuple(index)]


@handles("MNN.StridedSlice")
def _strided_slice(ctx, node, ins):
    """TensorFlow's strided slice (input, begin, end[, strides]) with its masks, or, for models
    from ONNX (fromType 1), ONNX's Slice: (input, starts, ends[, axes[, steps]])."""
    x = ins[0]
    begin, end = _ints(ctx, node, ins[1], "begin"), _ints(ctx, node, ins[2], "end")
    a = node.attrs
    if a.get("fromType") == 1:
        given = len(ins) > 3 and ins[3] is not None
        axes = [_axis(v, x.ndim) for v in _ints(ctx, node, ins[3], "axes")] if given else list(range(len(begin)))
        steps = _ints(ctx, node, ins[4], "steps") if len(ins) > 4 and ins[4] is not None else [1] * len(begin)
        if not len(axes) == len(begin) == len(end) == len(steps) or 0 in steps:
            raise ValueError(f"starts {begin}, ends {end}, axes {axes} and steps {steps} do not match")
        index = [slice(None)] * x.ndim
        big = 2 ** 62
        for b, e, axis, st in zip(begin, end, axes, steps):
            index[axis] = slice(max(min(b, big), -big), max(min(e, big), -big), st)
        return x[tuple(index)]
    strides = _ints(ctx, node, ins[3], "strides") if len(ins) > 3 and ins[3] is not None else [1] * len(begin)
    return F.strided_slice(x, begin, end, strides, a["beginMask"], a["endMask"], a["ellipsisMask"],
                           a["newAxisMask"], a["shrinkAxisMask"])


@handles("MNN.Split")
def _split(ctx, node, ins):
    x = ins[0]
    axis = _axis(node.attrs["axis"], x.ndim)
    length = x.shape[axis]
    parts = len(node.outputs)
    points = list(node.attrs["points"])
    if len(ins) > 1 and ins[1] is not None:  # the sizes as an input (ONNX's Split)
        points = _ints(ctx, node, ins[1], "split sizes")
    if node.attrs["caffe"] and not (len(ins) > 1 and ins[1] is not None):  # Caffe's slice points: where each piece after the first begins
        bounds = [0] + points + [length]
        sizes = [e - b for b, e in zip(bounds, bounds[1:])]
    elif len(points) == parts:  # sizes, one of which may be -1 (the rest)
        sizes = list(points)
        if sizes.count(-1) == 1:
            sizes[sizes.index(-1)] = length - (sum(sizes) + 1)  # the -1 itself is in the sum
    else:
        if length % parts:
            raise ValueError(f"an axis of {length} does not split into {parts} equal pieces")
        sizes = [length // parts] * parts
    if len(sizes) != parts or min(sizes) < 0 or sum(sizes) != length:
        raise ValueError(f"slice points {points} do not split an axis of {length} into {parts} pieces")
    return F.split(x, sizes, axis)


@handles("MNN.Padding")
def _padding(ctx, node, ins):
    x = ins[0]
    pads = np.asarray(_ints(ctx, node, ins[1], "paddings")).reshape(-1, 2)
    if pads.shape[0] != x.ndim:
        raise ValueError(f"{pads.shape[0]} padding pairs for an input of {x.ndim} axes")
    value = 0.0
    if len(ins) > 2 and ins[2] is not None:
        value = float(np.asarray(ctx.static(ins[2], node, "padding value")).reshape(-1)[0])
    return F.pad(x, pads.tolist(), node.attrs["mode"], value)


@handles("MNN.Pack")
def _pack(ctx, node, ins):
    axis = _axis(node.attrs["axis"], ins[0].ndim + 1)
    return F.stack(list(ins), axis)


@handles("MNN.Unpack")
def _unpack(ctx, node, ins):
    x = ins[0]
    return F.unstack(x, _axis(node.attrs["axis"], x.ndim))


@handles("MNN.GatherV2")
def _gather_v2(ctx, node, ins):
    x, idx = ins[0], ins[1]
    axis = 0
    if len(ins) > 2 and ins[2] is not None:
        axis = int(np.asarray(ctx.static(ins[2], node, "axis")).reshape(-1)[0])
    return F.gather(x, idx, _axis(axis, x.ndim))


_REDUCE = {"sum": F.reduce_sum, "mean": F.reduce_mean, "max": F.reduce_max, "min": F.reduce_min,
           "prod": F.reduce_prod}


@handles("MNN.Reduce")
def _reduce(ctx, node, ins):
    x = ins[0]
    axes = _axes(ctx, node, ins)
    axes = sorted({_axis(a, x.ndim) for a in axes}) if axes else list(range(x.ndim))
    keep = bool(node.attrs["keepdims"])
    kind = node.attrs["kind"]
    if kind in _REDUCE:
        return _REDUCE[kind](x, axes, keep)
    if kind == "asum":
        return F.reduce_sum(F.abs(x), axes, keep)
    if kind == "sumsq":
        return F.reduce_sum(F.multiply(x, x), axes, keep)
    flags = F.cast(F.not_equal(x, np.asarray(0, x.dtype)), np.int32)
    return (F.reduce_max if kind == "any" else F.reduce_min)(flags, axes, keep)


@handles("MNN.ArgReduce")
def _arg_reduce(ctx, node, ins):
    x = ins[0]
    axis = _axis(node.attrs["axis"], x.ndim)
    return F.cast((F.argmax if node.attrs["max"] else F.argmin)(x, axis), np.int32)


@handles("MNN.TopK")
def _topk(ctx, node, ins):
    from .._expr_sort import topk
    x = ins[0]
    k = int(np.asarray(ctx.static(ins[1], node, "k")).reshape(-1)[0])
    values, indices = topk(x, k, -1, bool(node.attrs["largest"]), True)
    return [values, F.cast(indices, np.int32)]


@handles("MNN.MatMul")
def _matmul(ctx, node, ins):
    a, b = ins[0], ins[1]
    if a.ndim < 2 or b.ndim < 2:
        raise ValueError(f"MatMul takes inputs of rank 2 or more, got shapes {tuple(a.shape)} and {tuple(b.shape)}")
    if node.attrs["transA"]:
        a = F.transpose(a, list(range(a.ndim - 2)) + [a.ndim - 1, a.ndim - 2])
    if node.attrs["transB"]:
        b = F.transpose(b, list(range(b.ndim - 2)) + [b.ndim - 1, b.ndim - 2])
    y = F.matmul(a, b)
    if len(ins) > 2 and ins[2] is not None:
        y = F.add(y, ins[2])
    return y


# Interp's resizeType and coordinate transformation (MNN's CoordinateTransformationMode).
_INTERP_MODES = {1: ("nearest", "floor"), 2: ("linear", None), 3: ("cubic", None), 4: ("nearest", "round_prefer_ceil")}
_INTERP_CTM = {1: "align_corners", 2: "half_pixel", 3: "pytorch_half_pixel", 4: "asymmetric",
               5: "tf_half_pixel_for_nn"}


@handles("MNN.Interp")
def _interp(ctx, node, ins):
    from .._expr_pool import _resize_nchw
    x = ins[0]
    a = node.attrs
    if x.ndim != 4:
        raise ValueError(f"only 4-D (NCHW) inputs are resized, got shape {tuple(x.shape)}")
    height, width = x.shape[2], x.shape[3]
    out_h, out_w = a["output_height"], a["output_width"]
    scales = None
    if len(ins) > 1 and ins[1] is not None:
        given = np.asarray(ctx.static(ins[1], node, "output size"))
        values = given.reshape(-1)
        if given.dtype.kind == "f":  # scales, for every axis or for H and W
            sh, sw = (values[2], values[3]) if values.size == 4 else (values[0], values[1])
            out_h, out_w, scales = int(np.floor(height * sh)), int(np.floor(width * sw)), (float(sh), float(sw))
        else:
            out_h, out_w = (int(values[2]), int(values[3])) if values.size == 4 else (int(values[0]), int(values[1]))
    if out_h <= 0 or out_w <= 0:
        # MNN's own scales are steps in the input per output pixel (input / output size).
        sh, sw = a["height_scale"], a["width_scale"]
        if not (sh > 0 and sw > 0):
            raise ValueError("Interp has neither an output size nor positive scales")
        out_h, out_w, scales = int(round(height / sh)), int(round(width / sw)), (1 / sh, 1 / sw)
    mode, nearest = _INTERP_MODES.get(a["resize_type"], (None, None))
    if mode is None:
        raise ValueError(f"resize type {a['resize_type']} is not supported")
    if a["ctm"] not in _INTERP_CTM and a["ctm"] != 0:
        raise ValueError(f"coordinate transformation mode {a['ctm']} (TensorFlow crop and resize) is not supported")
    ctm = _INTERP_CTM.get(a["ctm"])
    if ctm is None:
        ctm = "align_corners" if a["align_corners"] else "half_pixel" if a["half_pixel_centers"] else "asymmetric"
    if ctm == "tf_half_pixel_for_nn" and mode != "nearest":
        ctm = "half_pixel"
    return _resize_nchw(x, (out_h, out_w), mode, ctm, nearest or "round_prefer_floor", a["cubic_coeff_a"],
                        False, scales)


@handles("MNN.Where")
def _where(ctx, node, ins):
    value = np.asarray(ctx.static(ins[0], node, "input (the output's size depends on it)"))
    return F.const(np.argwhere(value).astype(np.int32).reshape(-1, value.ndim))


@handles("MNN.Raster")
def _raster(ctx, node, ins):
    """Every region's element positions are laid out in NumPy here (static), then one gather
    from the inputs joined flat, with a trailing zero for positions no region writes."""
    total = int(np.prod(node.attrs["dims"])) if node.attrs["dims"] else 1
    flats, offsets, start = [], [], 0
    for x in ins:
        flats.append(F.reshape(x, [-1]))
        offsets.append(start)
        start += int(np.prod(x.shape))
    source = np.full(total, start, np.int64)  # `start`: the zero appended after every input
    regions = node.attrs["regions"]
    for k, (origin, src_off, src_stride, dst_off, dst_stride, size) in enumerate(regions):
        if len(ins) == len(regions):  # MNN lists each region's source as the op's input of its place
            origin = k
        if not 0 <= origin < len(ins):
            raise ValueError(f"a region reads input {origin}, the op has {len(ins)}")
        grid = np.indices(size, dtype=np.int64).reshape(3, -1)
        src = src_off + np.asarray(src_stride, np.int64) @ grid
        dst = dst_off + np.asarray(dst_stride, np.int64) @ grid
        limit = int(np.prod(ins[origin].shape))
        if src.size and (src.min() < 0 or src.max() >= limit or dst.min() < 0 or dst.max() >= total):
            raise ValueError("a region reads or writes outside its tensors")
        source[dst] = src + offsets[origin]
    dtype = ins[0].dtype
    joined = F.concat([F.cast(f, dtype) for f in flats] + [F.const(np.zeros(1, dtype))], 0)
    return F.reshape(F.gather(joined, F.const(source), 0), list(node.attrs["dims"]))

