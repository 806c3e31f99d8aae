"""Convolution ops of MNN.expr.

``conv2d`` follows ``MNN.expr.conv2d``'s argument names and order. Padding modes (``padding_mode``):
``VALID`` and ``CAFFE`` pad by ``padding`` (symmetric ``(ph, pw)``; VALID with the default zero
padding is no padding), ``SAME`` pads as TensorFlow does (output size ceil(input / stride), the odd
pixel at the bottom/right) and ignores ``padding``.

``conv2d_transpose`` follows ``MNN.expr.conv2d_transpose``'s names and order, with PyTorch's
``ConvTranspose2d`` semantics: weight [C_in, C_out/group, kh, kw], output size
(H - 1) * stride - 2 * padding + dilate * (kh - 1) + output_padding + 1 (``output_padding``, a
keyword after MNN's arguments, must be smaller than the stride or the dilation). ``SAME`` gives an
output of input * stride. It is the gradient of ``conv2d`` with respect to its input, and is
differentiable itself.
"""
import numpy as _np

from . import _core
from ._core import Var

__all__ = ["conv2d", "conv2d_transpose", "Padding_Mode", "CAFFE", "VALID", "SAME"]


class Padding_Mode:
    """Padding modes of convolutions and pooling (MNN's ``expr.Padding_Mode``)."""
    CAFFE = "CAFFE"
    VALID = "VALID"
    SAME = "SAME"


CAFFE, VALID, SAME = Padding_Mode.CAFFE, Padding_Mode.VALID, Padding_Mode.SAME

# Activation codes fused into the convolution's epilogue (the Conv2D op's `activation` attribute).
ACT_NONE, ACT_RELU, ACT_CLIP, ACT_SIGMOID, ACT_SILU, ACT_HARDSWISH, ACT_GELU, ACT_HARDSIGMOID = range(8)


def _pair(value, name, op="conv2d"):
    if isinstance(value, (int, _np.integer)):
        return (int(value), int(value))
    values = tuple(int(v) for v in value)
    if len(values) != 2:
        raise ValueError(f"{op}: {name} needs 2 values, got {len(values)}")
    return values


def _as_float_var(x, name, op="conv2d"):
    if not isinstance(x, Var):
        x = _core.const(_np.asarray(x, dtype=_np.float32), None, "NCHW")
    if x.dtype != _np.float32:
        raise TypeError(f"{op}: {name} must be float32, got {x.dtype}")
    return x


def _conv2d_nchw(x, w, bias, strides, pads4, dilations, group, activation=0, clip_min=0.0, clip_max=6.0,
                 alpha=0.2, beta=0.5, residual=None):
    """The Conv2D op on NCHW float32 Vars: explicit 4-sided pads (top, left, bottom, right) and an
    activation code (0 none, 1 relu, 2 clip(clip_min, clip_max), 3 sigmoid, 4 silu, 5 hardswish,
    6 gelu, 7 hardsigmoid(alpha, beta)) applied in the kernel's epilogue, after the optional
    ``residual`` (shaped like the output) is added to conv + bias."""
    inputs = [x, w] if bias is None else [x, w, bias]
    attrs = _conv_attrs(strides, pads4, dilations, group, activation, clip_min, clip_max, alpha, beta)
    if residual is not None:
        inputs.append(residual)
        attrs["residual"] = 1
    return _core.op("Conv2D", inputs, attrs)


def _conv_attrs(strides, pads4, dilations, group, activation, clip_min, clip_max, alpha, beta):
    """The attributes Conv2D and Conv2DBlocked share."""
    attrs = {
        "strides": [int(v) for v in strides],
        "pads": [int(v) for v in pads4],
        "dilations": [int(v) for v in dilations],
        "group": int(group),
        "activation": int(activation),
    }
    if int(activation) == ACT_CLIP:
        attrs["clip_min"], attrs["clip_max"] = float(clip_min), float(clip_max)
    elif int(activation) == ACT_HARDSIGMOID:
        attrs["alpha"], attrs["beta"] = float(alpha), float(beta)
    return attrs


def _same_pads(size, kernel, stride, dilation):
    extent = dilation * (kernel - 1) + 1
    out = -(-size // stride)
    total = max((out - 1) * stride + extent - size, 0)
    return total // 2, total - total // 2


def conv2d(input, weight, bias=None, stride=(1, 1), padding=(0, 0), dilate=(1, 1), group=1, padding_mode=VALID):
    """2-D convolution of an NCHW float32 ``input`` with ``weight`` [Cout, C/group, kh, kw] and an
    optional ``bias`` [Cout]."""
    x = _as_float_var(input, "input")
    w = _as_float_var(weight, "weight")
    b = None if bias is None else _as_float_var(bias, "bias")
    strides, dilations = _pair(stride, "stride"), _pair(dilate, "dilate")
    mode = str(padding_mode).upper()
    if mode not in (CAFFE, VALID, SAME):
        raise ValueError(f"conv2d: unknown padding_mode {padding_mode!r}; expected CAFFE, VALID or SAME")
    if mode == SAME:
        if len(x.shape) != 4 or len(w.shape) != 4:
            raise ValueError(f"conv2d: input and weight must be 4-D, got shapes {x.shape} and {w.shape}")
        top, bottom = _same_pads(x.shape[2], w.shape[2], strides[0], dilations[0])
        left, right = _same_pads(x.shape[3], w.shape[3], strides[1], dilations[1])
        pads4 = (top, left, bottom, right)
    else:
        ph, pw = _pair(padding, "padding")
        pads4 = (ph, pw, ph, pw)
    return _conv2d_nchw(x, w, b, strides, pads4, dilations, group)


def conv2d_transpose(input, weight, bias=None, stride=(1, 1), padding=(0, 0), dilate=(1, 1), group=1,
                     padding_mode=VALID, output_padding=(0, 0)):
    """2-D transposed convolution of an NCHW float32 ``input`` [N, C_in, H, W] with ``weight``
    [C_in, C_out/group, kh, kw] and an optional ``bias`` [C_out] (PyTorch's ``conv_transpose2d``)."""
    op = "conv2d_transpose"
    x = _as_float_var(input, "input", op)
    w = _as_float_var(weight, "weight", op)
    b = None if bias is None else _as_float_var(bias, "bias", op)
    strides, dilations = _pair(stride, "stride", op), _pair(dilate, "dilate", op)
    extra = _pair(output_padding, "output_padding", op)
    if len(x.shape) != 4 or len(w.shape) != 4:
        raise ValueError(f"{op}: input and weight must be 4-D, got shapes {x.shape} and {w.shape}")
    if any(v <= 0 for v in strides + dilations):
        raise ValueError(f"{op}: stride and dilate must be positive, got {strides} and {dilations}")
    group = int(group)
    if group <= 0:
        raise ValueError(f"{op}: group must be positive, got {group}")
    if x.shape[1] != w.shape[0]:
        raise ValueError(f"{op}: input has {x.shape[1]} channels but weight {tuple(w.shape)} expects {w.shape[0]}")
    if w.shape[0] % group:
        raise ValueError(f"{op}: {w.shape[0]} input channels do not split into {group} groups")
    out_channels = w.shape[1] * group
    if b is not None and tuple(b.shape) != (out_channels,):
        raise ValueError(f"{op}: bias must have shape ({out_channels},), got {tuple(b.shape)}")
    mode = str(getattr(padding_mode, "name", padding_mode)).upper()
    if mode not in (CAFFE, VALID, SAME):
        raise ValueError(f"{op}: unknown padding_mode {padding_mode!r}; expected CAFFE, VALID or SAME")
    sizes, pads = [], []
    for axis in range(2):
        size, kernel, s, d = x.shape[2 + axis], w.shape[2 + axis], strides[axis], dilations[axis]
        extent = d * (kernel - 1) + 1
        if mode == SAME:
            # The output is input * stride; the taps cut off split as SAME convolution pads them.
            out = size * s
            pad = max((size - 1) * s + extent - out, 0) // 2
        else:
            pad = _pair(padding, "padding", op)[axis]
            if pad < 0:
                raise ValueError(f"{op}: padding must be non-negative, got {padding}")
            if not 0 <= extra[axis] < max(s, d):
                raise ValueError(f"{op}: output_padding {extra} must be smaller than the stride {strides} "
                                 f"or the dilation {dilations}")
            out = (size - 1) * s - 2 * pad + extent + extra[axis]
        if out <= 0:
            raise ValueError(f"{op}: the output would be empty (size {out} along axis {2 + axis})")
        sizes.append(out)
        pads.append(pad)
    inputs = [x, w] if b is None else [x, w, b]
    return _core.op("Conv2DBackpropInput", inputs, {
        "strides": list(strides),
        "pads": [pads[0], pads[1], pads[0], pads[1]],
        "dilations": list(dilations),
        "group": group,
        "input_size": sizes,
    })
