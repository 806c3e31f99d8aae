"""ONNX ConvTranspose (opsets 1, 11, 22) on the Conv2DBackpropInput op, the transposed 2-D
convolution that `mnnpy.expr.conv2d_transpose` also builds.

That op places input pixel i's taps at i * stride + k * dilation - pad_begin and drops taps that
fall outside the output size it is given, so groups, dilations, asymmetric pads, output_padding
and output_shape all map onto it directly: only the leading pad places taps, the output size
does the rest. 1-D runs as 2-D with a height of 1; 3-D is a sum over the kernel's depth taps of
2-D transposed convolutions of the depth slices, each shifted to its place along the depth.

Output geometry per spatial axis (n input size, k kernel, s stride, d dilation, a output_padding):
the full length is s * (n - 1) + a + d * (k - 1) + 1.
- explicit pads (NOTSET): the output starts at pads_begin and ends pads_end before the full end;
- auto_pad VALID: pads are zero;
- auto_pad SAME_UPPER / SAME_LOWER: the output length is n * s, the surplus split between both
  ends, the larger half at the end for SAME_UPPER and at the start for SAME_LOWER (the ONNX
  specification; a negative surplus, when the kernel is shorter than the stride, adds zeros);
- output_shape given: that length, the surplus (never below zero) split the same way (the larger
  half at the start unless SAME_UPPER), as onnxruntime does; pads are then ignored.
"""
import numpy as np

from .. import _core
from .. import expr as F
from ._onnx_ops import _attr, handles

_AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


def _ints(node, name, default, count):
    """Attribute `name` as a list of `count` ints (ValueError otherwise)."""
    values = [int(v) for v in _attr(node, name, default)]
    if len(values) != count:
        raise ValueError(f"{name} needs {count} values (one per spatial axis), got {values}")
    return values


def _geometry(node, in_sizes, kernel, strides, dilations, extra):
    """(pads_begin, output sizes) per spatial axis; pads_begin may be negative (zeros in front)."""
    spatial = len(in_sizes)
    auto_pad = _attr(node, "auto_pad", "NOTSET")
    if isinstance(auto_pad, bytes):
        auto_pad = auto_pad.decode()
    if auto_pad not in _AUTO_PADS:
        raise ValueError(f"auto_pad must be one of {', '.join(_AUTO_PADS)}, got {auto_pad!r}")
    full = [s * (n - 1) + a + d * (k - 1) + 1
            for n, k, s, d, a in zip(in_sizes, kernel, strides, dilations, extra)]
    output_shape = _attr(node, "output_shape", None)
    if output_shape is not None:
        output_shape = [int(v) for v in output_shape]
        if len(output_shape) == spatial + 2:  # older exporters write N and C too
            output_shape = output_shape[2:]
        if len(output_shape) != spatial or any(v <= 0 for v in output_shape):
            raise ValueError(f"output_shape needs {spatial} positive values, got {output_shape}")
        surplus = [max(0, f - o) for f, o in zip(full, output_shape)]
        begin = [t // 2 if auto_pad == "SAME_UPPER" else t - t // 2 for t in surplus]
        return begin, output_shape
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        sizes = [n * s for n, s in zip(in_sizes, strides)]
        surplus = [f - o for f, o in zip(full, sizes)]
        begin = [t // 2 if auto_pad == "SAME_UPPER" else t - t // 2 for t in surplus]
        return begin, sizes
    pads = [0] * (2 * spatial) if auto_pad == "VALID" else _ints(node, "pads", [0] * (2 * spatial), 2 * spatial)
    if any(p < 0 for p in pads):
        raise ValueError(f"pads must be non-negative, got {pads}")
    sizes = [f - pads[i] - pads[spatial + i] for i, f in enumerate(full)]
    if any(v <= 0 for v in sizes):
        raise ValueError(f"the output would be empty: sizes {sizes} from input {list(in_sizes)}, kernel {kernel}, "
                         f"strides {strides}, dilations {dilations}, pads {pads}")
    return pads[:spatial], sizes


def _place(v, axis, offset, size):
    """out[z] = v[z - offset] along `axis` for z in [0, size), zeros where v has no value."""
    length = v.shape[axis]
    front, back = offset, size - offset - length
    if front == back == 0:
        return v
    if front < 0 or back < 0:
        keep = [slice(None)] * v.ndim
        keep[axis] = slice(max(0, -front), length - max(0, -back))
        v = v[tuple(keep)]
    widths = [[0, 0] for _ in range(v.ndim)]
    widths[axis] = [max(0, front), max(0, back)]
    return F.pad(v, widths) if max(0, front) + max(0, back) else v


def _transposed_2d(x, w, bias, strides, dilations, begin, sizes, group):
    """Conv2DBackpropInput of NCHW x by w [C_in, C_out/group, kh, kw]; `begin` may be negative."""
    # The op takes no negative pad: compute from the first placed pixel, then add the zeros in front.
    shift = [max(0, -b) for b in begin]
    inner = [s - h for s, h in zip(sizes, shift)]
    if any(v <= 0 for v in inner):
        y = F.const(np.zeros((x.shape[0], w.shape[1] * group, *sizes), np.float32))
    else:
        inputs = [x, w] if bias is None or any(shift) else [x, w, bias]
        y = _core.op("Conv2DBackpropInput", inputs, {
            "strides": list(strides), "pads": [max(0, b) for b in begin] + [0, 0],
            "dilations": list(dilations), "group": int(group), "input_size": inner})
        for axis in range(2):
            if shift[axis]:
                y = _place(y, 2 + axis, shift[axis], sizes[axis])
        if bias is None or not any(shift):
            return y
    return y if bias is None else F.add(y, F.reshape(bias, [1, -1, 1, 1]))


def _transposed_3d(x, w, bias, strides, dilations, begin, sizes, group):
    """Sum over the kernel's depth taps t: each depth slice's 2-D transposed convolution by
    w[:, :, t] lands at depth z * stride + t * dilation - begin."""
    n, _, depth, height, width = x.shape
    out_c = w.shape[1] * group
    planes = F.reshape(F.transpose(x, [0, 2, 1, 3, 4]), [n * depth, x.shape[1], height, width])
    stride = strides[0]
    total = None
    for tap in range(w.shape[2]):
        y = _transposed_2d(planes, w[:, :, tap], None, strides[1:], dilations[1:], begin[1:], sizes[1:], group)
        y = F.reshape(y, [n, depth, 1, out_c, sizes[1], sizes[2]])
        if stride > 1:  # slice z at depth z * stride: zeros between the slices
            y = F.pad(y, [[0, 0], [0, 0], [0, stride - 1], [0, 0], [0, 0], [0, 0]])
        y = F.reshape(y, [n, depth * stride, out_c, sizes[1], sizes[2]])
        y = _place(y, 1, tap * dilations[0] - begin[0], sizes[0])
        total = y if total is None else F.add(total, y)
    y = F.transpose(total, [0, 2, 1, 3, 4])
    return y if bias is None else F.add(y, F.reshape(bias, [1, -1, 1, 1, 1]))


@handles("ConvTranspose")
def _conv_transpose(ctx, node, ins):
    x, w = ins[0], ins[1]
    bias = ins[2] if len(ins) > 2 else None
    for name, v in (("input X", x), ("weight W", w), ("bias B", bias)):
        if v is not None and v.dtype != np.float32:
            raise TypeError(f"{name} must be float32, got {np.dtype(v.dtype).name}")
    spatial = x.ndim - 2
    if spatial not in (1, 2, 3):
        raise ValueError(f"input must have 3, 4 or 5 dimensions (1-D, 2-D or 3-D), got shape {tuple(x.shape)}")
    if w.ndim != x.ndim:
        raise ValueError(f"weight shape {tuple(w.shape)} must have {x.ndim} dimensions, as the input "
                         f"{tuple(x.shape)} has (C_in, C_out/group, kernel...)")
    group = int(_attr(node, "group", 1))
    if group <= 0:
        raise ValueError(f"group must be positive, got {group}")
    in_c = x.shape[1]
    if w.shape[0] != in_c:
        raise ValueError(f"weight shape {tuple(w.shape)} expects {w.shape[0]} input channels, the input has {in_c}")
    if in_c % group:
        raise ValueError(f"{in_c} input channels do not split into {group} groups")
    if any(k <= 0 for k in w.shape[1:]):
        raise ValueError(f"weight shape {tuple(w.shape)} has an empty dimension")
    kernel = list(w.shape[2:])
    if _attr(node, "kernel_shape", None) is not None and [int(k) for k in node.attrs["kernel_shape"]] != kernel:
        raise ValueError(f"kernel_shape {list(node.attrs['kernel_shape'])} does not match the weight shape "
                         f"{tuple(w.shape)}")
    out_c = w.shape[1] * group
    if bias is not None and tuple(bias.shape) != (out_c,):
        raise ValueError(f"bias must have shape ({out_c},), got {tuple(bias.shape)}")
    strides = _ints(node, "strides", [1] * spatial, spatial)
    dilations = _ints(node, "dilations", [1] * spatial, spatial)
    if any(v <= 0 for v in strides + dilations):
        raise ValueError(f"strides and dilations must be positive, got {strides} and {dilations}")
    extra = _ints(node, "output_padding", [0] * spatial, spatial)
    for a, s, d in zip(extra, strides, dilations):
        if not 0 <= a < max(s, d):
            raise ValueError(f"output_padding {extra} must be non-negative and smaller than max(stride, dilation) "
                             f"per axis (strides {strides}, dilations {dilations})")
    begin, sizes = _geometry(node, list(x.shape[2:]), kernel, strides, dilations, extra)
    if spatial == 3:
        return _transposed_3d(x, w, bias, strides, dilations, begin, sizes, group)
    if spatial == 1:
        y = _transposed_2d(F.unsqueeze(x, [2]), F.unsqueeze(w, [2]), bias, [1] + strides, [1] + dilations,
                           [0] + begin, [1] + sizes, group)
        return F.squeeze(y, [2])
    return _transposed_2d(x, w, bias, strides, dilations, begin, sizes, group)
