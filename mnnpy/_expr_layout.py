"""The blocked channel layout of convolution chains, as a model loader calls it.

A float32 [N, C, H, W] tensor with C a multiple of ``BLOCK`` is stored blocked as
[N, C / BLOCK, H, W, BLOCK]: the BLOCK channels of one pixel are one SIMD vector, so convolution,
depthwise and pooling kernels load whole pixels and never transpose. Chains of such ops stay
blocked; the layout is converted only where a chain meets an op that wants NCHW.
"""
from . import _core

# Channels per block, as the layout ops define it (the core's CHANNEL_BLOCK): on the CPU one AVX2
# vector of float32 (AVX-512 kernels use the 256-bit forms with twice the registers; 128-bit
# targets use two vectors per block).
BLOCK = _core.CHANNEL_BLOCK


def _suits_backend(name):
    """Whether the backend `name` prefers this layout's block (the CPU does); graphs for one that
    prefers another block stay NCHW."""
    return _core.backend_channel_block(name) == BLOCK


def _to_blocked(x, block=BLOCK):
    """[N, C, H, W] -> [N, C / block, H, W, block]; C must be a multiple of block."""
    return _core.op("ToBlockedChannels", [x], {"block": int(block)})


def _from_blocked(x):
    """[N, C / block, H, W, block] -> [N, C, H, W]."""
    return _core.op("FromBlockedChannels", [x], {})


def _conv2d_blocked(x, w, bias, strides, pads4, dilations, group, activation=0, clip_min=0.0, clip_max=6.0,
                    alpha=0.2, beta=0.5, residual=None):
    """Conv2DBlocked: ``x`` blocked [N, C/8, H, W, 8] (or NCHW [N, C, H, W] for a first layer whose C
    is not a multiple of the block; group 1 then), ``w`` [Cout, C/group, kh, kw], ``bias`` [Cout]
    (required), optional ``residual`` shaped like the output and added before the activation.
    Output blocked [N, Cout/8, Ho, Wo, 8]. group is 1 or depthwise (C == Cout == group)."""
    from ._expr_conv import _conv_attrs
    inputs = [x, w, bias] if residual is None else [x, w, bias, residual]
    attrs = _conv_attrs(strides, pads4, dilations, group, activation, clip_min, clip_max, alpha, beta)
    return _core.op("Conv2DBlocked", inputs, attrs)


def _max_pool_blocked(x, kernel, strides, pads4, dilations=(1, 1), ceil_mode=False):
    """MaxPool2DBlocked on [N, C/8, H, W, 8]; attributes as the MaxPool2D op's."""
    return _core.op("MaxPool2DBlocked", [x], {
        "kernel": [int(v) for v in kernel], "strides": [int(v) for v in strides],
        "pads": [int(v) for v in pads4], "dilations": [int(v) for v in dilations],
        "ceil_mode": int(bool(ceil_mode)),
    })


def _avg_pool_blocked(x, kernel, strides, pads4, ceil_mode=False, count_include_pad=False):
    """AvgPool2DBlocked on [N, C/8, H, W, 8]; attributes as the AvgPool2D op's."""
    return _core.op("AvgPool2DBlocked", [x], {
        "kernel": [int(v) for v in kernel], "strides": [int(v) for v in strides],
        "pads": [int(v) for v in pads4], "ceil_mode": int(bool(ceil_mode)),
        "count_include_pad": int(bool(count_include_pad)),
    })
