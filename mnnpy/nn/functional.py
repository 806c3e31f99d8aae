"""Layer and loss functions on Vars, with ``torch.nn.functional``'s names, argument orders and
defaults. Each is built from registered expr ops, so gradients flow through their rules.

Tensors are NCHW (channels at axis 1). Losses are computed stably: log-softmax through
log-sum-exp with the maximum subtracted, logits losses through softplus written as
``log1p(exp(-|x|)) + max(-x, 0)``.
"""
import numpy as np

from .. import _core
from .. import expr as F
from .._core import Var
from .._expr_conv import _conv2d_nchw
from .._expr_pool import _avg_pool_nchw, _max_pool_nchw

__all__ = ["linear", "conv1d", "conv2d", "conv_transpose2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d",
           "batch_norm", "layer_norm", "group_norm", "dropout", "embedding", "flatten", "relu", "relu6",
           "leaky_relu", "elu", "gelu", "silu", "sigmoid", "tanh", "softmax", "log_softmax", "hardswish",
           "hardsigmoid", "softplus", "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "one_hot"]

_F32 = np.dtype("float32")


def _var(x, what="input"):
    """A float Var from a Var or array-like (arrays become float32 constants unless floating)."""
    if isinstance(x, Var):
        return x
    if hasattr(x, "detach") and hasattr(x, "cpu"):
        x = x.detach().cpu().numpy()
    a = np.asarray(x)
    if a.dtype.kind != "f":
        a = a.astype(np.float32)
    return F.const(np.asarray(a, order="C"))


def _index_var(x, what):
    if isinstance(x, Var):
        if np.dtype(x.dtype).kind not in "iu":
            raise TypeError(f"{what} must hold integers, got {np.dtype(x.dtype)}")
        return x
    a = np.asarray(x.detach().cpu().numpy() if hasattr(x, "detach") else x)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{what} must hold integers, got {a.dtype}")
    return F.const(np.asarray(a.astype(np.int64), order="C"))


def _scalar(value, like):
    return F.const(np.asarray(value, dtype=np.dtype(like.dtype)))


def _tuple(value, n, name, fn):
    if isinstance(value, (int, np.integer)):
        return (int(value),) * n
    values = tuple(int(v) for v in value)
    if len(values) != n:
        raise ValueError(f"{fn}: {name} needs {n} values, got {len(values)}")
    return values


def _check_ndim(x, ndims, fn, layout):
    if x.ndim not in ndims:
        raise ValueError(f"{fn}: expected a {' or '.join(str(n) + '-D' for n in ndims)} input {layout}, "
                         f"got shape {tuple(x.shape)}")


# ---------------------------------------------------------------- linear and convolution
def linear(input, weight, bias=None):  # noqa: A002
    """``input @ weight.T + bias``; weight [out_features, in_features]."""
    x, w = _var(input), _var(weight)
    if x.shape[-1] != w.shape[-1]:
        raise ValueError(f"linear: input has {x.shape[-1]} features, weight expects {w.shape[-1]} "
                         f"(input shape {tuple(x.shape)}, weight shape {tuple(w.shape)})")
    y = F.matmul(x, w, transposeB=True)
    return y if bias is None else F.add(y, _var(bias))


_PAD_MODES = {"zeros": None, "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def _conv_padding(padding, kernel, dilation, stride, fn):
    """(top, left, bottom, right) for PyTorch's padding argument (ints, 'same' or 'valid')."""
    n = len(kernel)
    if isinstance(padding, str):
        if padding == "valid":
            return (0,) * n, (0,) * n
        if padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError(f"{fn}: padding='same' is not supported for strided convolutions")
            total = [d * (k - 1) for k, d in zip(kernel, dilation)]
            return tuple(t // 2 for t in total), tuple(t - t // 2 for t in total)
        raise ValueError(f"{fn}: invalid padding string {padding!r}; expected 'valid' or 'same'")
    p = _tuple(padding, n, "padding", fn)
    if any(v < 0 for v in p):
        raise ValueError(f"{fn}: padding must not be negative, got {p}")
    return p, p


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, padding_mode="zeros"):  # noqa: A002
    """2-D convolution of [N, C, H, W] (or unbatched [C, H, W]) with weight [Cout, C/groups, kh, kw]."""
    x, w = _var(input), _var(weight)
    _check_ndim(x, (3, 4), "conv2d", "[N, C, H, W]")
    unbatched = x.ndim == 3
    if unbatched:
        x = F.reshape(x, (1,) + tuple(x.shape))
    if w.ndim != 4:
        raise ValueError(f"conv2d: weight must be 4-D [out, in/groups, kh, kw], got shape {tuple(w.shape)}")
    groups = int(groups)
    if groups < 1 or x.shape[1] % groups or w.shape[0] % groups:
        raise ValueError(f"conv2d: groups={groups} must divide the input channels {x.shape[1]} and the output "
                         f"channels {w.shape[0]}")
    if x.shape[1] != w.shape[1] * groups:
        raise ValueError(f"conv2d: input has {x.shape[1]} channels, weight {tuple(w.shape)} with groups={groups} "
                         f"expects {w.shape[1] * groups}")
    stride, dilation = _tuple(stride, 2, "stride", "conv2d"), _tuple(dilation, 2, "dilation", "conv2d")
    before, after = _conv_padding(padding, w.shape[2:], dilation, stride, "conv2d")
    if padding_mode not in _PAD_MODES:
        raise ValueError(f"conv2d: padding_mode must be one of {list(_PAD_MODES)}, got {padding_mode!r}")
    if _PAD_MODES[padding_mode] is not None and any(before + after):
        x = _core.pad(x, [(0, 0), (0, 0), (before[0], after[0]), (before[1], after[1])], _PAD_MODES[padding_mode])
        before, after = (0, 0), (0, 0)
    for axis in (0, 1):
        extent = dilation[axis] * (w.shape[2 + axis] - 1) + 1
        if x.shape[2 + axis] + before[axis] + after[axis] < extent:
            raise ValueError(f"conv2d: the kernel ({extent} with dilation) is larger than the padded input "
                             f"{tuple(x.shape[2:])}")
    y = _conv2d_nchw(x, w, None if bias is None else _var(bias), stride,
                     (before[0], before[1], after[0], after[1]), dilation, groups)
    return F.reshape(y, tuple(y.shape[1:])) if unbatched else y


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, padding_mode="zeros"):  # noqa: A002
    """1-D convolution of [N, C, L] (or [C, L]) with weight [Cout, C/groups, k], as a 2-D one."""
    x, w = _var(input), _var(weight)
    _check_ndim(x, (2, 3), "conv1d", "[N, C, L]")
    if w.ndim != 3:
        raise ValueError(f"conv1d: weight must be 3-D [out, in/groups, k], got shape {tuple(w.shape)}")
    unbatched = x.ndim == 2
    if unbatched:
        x = F.reshape(x, (1,) + tuple(x.shape))
    if not isinstance(padding, str):
        padding = (0, _tuple(padding, 1, "padding", "conv1d")[0])
    y = conv2d(F.reshape(x, (x.shape[0], x.shape[1], 1, x.shape[2])),
               F.reshape(w, (w.shape[0], w.shape[1], 1, w.shape[2])), bias,
               (1, _tuple(stride, 1, "stride", "conv1d")[0]), padding,
               (1, _tuple(dilation, 1, "dilation", "conv1d")[0]), groups, padding_mode)
    y = F.reshape(y, (y.shape[0], y.shape[1], y.shape[3]))
    return F.reshape(y, tuple(y.shape[1:])) if unbatched else y


def _zeros(shape, dtype):
    return F.const(np.zeros(shape, dtype=dtype))


def _dilate_spatial(x, stride):
    """Inserts stride - 1 zeros between neighbouring pixels of [N, C, H, W] (concatenations, so
    gradients flow)."""
    n, c, h, w = x.shape
    sh, sw = stride
    if sh > 1:
        x = F.reshape(x, (n, c, h, 1, w))
        x = F.concat([x, _zeros((n, c, h, sh - 1, w), x.dtype)], 3)
        x = F.reshape(x, (n, c, h * sh, w))
        x = _core.strided_slice(x, [0, 0, 0, 0], [n, c, h * sh - (sh - 1), w], [1, 1, 1, 1])
        h = h * sh - (sh - 1)
    if sw > 1:
        x = F.reshape(x, (n, c, h, w, 1))
        x = F.concat([x, _zeros((n, c, h, w, sw - 1), x.dtype)], 4)
        x = F.reshape(x, (n, c, h, w * sw))
        x = _core.strided_slice(x, [0, 0, 0, 0], [n, c, h, w * sw - (sw - 1)], [1, 1, 1, 1])
    return x


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,  # noqa: A002
                     dilation=1):
    """Transposed 2-D convolution of [N, C, H, W] with weight [C, Cout/groups, kh, kw] (PyTorch's
    layout): ``expr.conv2d_transpose``, or, where that op has no gradient rule, zero insertion and
    a convolution with the flipped kernel."""
    x, w = _var(input), _var(weight)
    _check_ndim(x, (3, 4), "conv_transpose2d", "[N, C, H, W]")
    unbatched = x.ndim == 3
    if unbatched:
        x = F.reshape(x, (1,) + tuple(x.shape))
    if w.ndim != 4:
        raise ValueError(f"conv_transpose2d: weight must be 4-D [in, out/groups, kh, kw], got shape {tuple(w.shape)}")
    groups = int(groups)
    if groups < 1 or x.shape[1] % groups or x.shape[1] != w.shape[0]:
        raise ValueError(f"conv_transpose2d: input has {x.shape[1]} channels, weight {tuple(w.shape)} with "
                         f"groups={groups} expects {w.shape[0]}")
    stride = _tuple(stride, 2, "stride", "conv_transpose2d")
    padding = _tuple(padding, 2, "padding", "conv_transpose2d")
    output_padding = _tuple(output_padding, 2, "output_padding", "conv_transpose2d")
    dilation = _tuple(dilation, 2, "dilation", "conv_transpose2d")
    for op, s, d in zip(output_padding, stride, dilation):
        if op >= max(s, d):
            raise ValueError(f"conv_transpose2d: output_padding {output_padding} must be smaller than stride "
                             f"{stride} or dilation {dilation}")
    if hasattr(F, "conv2d_transpose") and _core.has_grad_rule("Conv2DBackpropInput") and x.dtype == _F32:
        y = F.conv2d_transpose(x, w, None if bias is None else _var(bias), stride, padding, dilation, groups,
                               output_padding=output_padding)
        return F.reshape(y, tuple(y.shape[1:])) if unbatched else y
    cin, cout_g, kh, kw = w.shape
    # The equivalent convolution's weight: [Cout, Cin/groups, kh, kw], in and out swapped per
    # group, spatially flipped.
    wc = F.reshape(w, (groups, cin // groups, cout_g, kh, kw))
    wc = F.transpose(wc, [0, 2, 1, 3, 4])
    wc = F.reshape(wc, (groups * cout_g, cin // groups, kh, kw))
    wc = _core.strided_slice(wc, [0, 0, kh - 1, kw - 1], [groups * cout_g, cin // groups, -kh - 1, -kw - 1],
                             [1, 1, -1, -1])
    up = _dilate_spatial(x, stride)
    pads = []
    for axis in (0, 1):
        full = dilation[axis] * ((kh, kw)[axis] - 1)
        pads.append((full - padding[axis], full - padding[axis] + output_padding[axis]))
    crop = [(max(0, -b), max(0, -a)) for b, a in pads]
    pads4 = (max(pads[0][0], 0), max(pads[1][0], 0), max(pads[0][1], 0), max(pads[1][1], 0))
    if any(c for pair in crop for c in pair):  # padding beyond the kernel's reach: crop the input
        h, wd = up.shape[2], up.shape[3]
        up = _core.strided_slice(up, [0, 0, crop[0][0], crop[1][0]],
                                 [up.shape[0], up.shape[1], h - crop[0][1], wd - crop[1][1]], [1, 1, 1, 1])
    y = _conv2d_nchw(up, wc, None if bias is None else _var(bias), (1, 1), pads4, dilation, groups)
    return F.reshape(y, tuple(y.shape[1:])) if unbatched else y


# ---------------------------------------------------------------- pooling
def _pool_args(fn, x, kernel_size, stride, padding):
    _check_ndim(x, (3, 4), fn, "[N, C, H, W]")
    kernel = _tuple(kernel_size, 2, "kernel_size", fn)
    stride = kernel if stride is None or (not isinstance(stride, int) and len(stride) == 0) else \
        _tuple(stride, 2, "stride", fn)
    padding = _tuple(padding, 2, "padding", fn)
    for p, k in zip(padding, kernel):
        if p > k // 2:
            raise ValueError(f"{fn}: padding {padding} must be at most half the kernel size {kernel}")
    return kernel, stride, padding


def _batched(x, fn):
    if x.ndim == 3:
        return F.reshape(x, (1,) + tuple(x.shape)), True
    return x, False


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):
    x = _var(input)
    if return_indices:
        raise NotImplementedError("max_pool2d: return_indices is not supported")
    kernel, stride, padding = _pool_args("max_pool2d", x, kernel_size, stride, padding)
    x, unbatched = _batched(x, "max_pool2d")
    y = _max_pool_nchw(x, kernel, stride, (padding[0], padding[1], padding[0], padding[1]),
                       _tuple(dilation, 2, "dilation", "max_pool2d"), ceil_mode)
    return F.reshape(y, tuple(y.shape[1:])) if unbatched else y


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,  # noqa: A002
               divisor_override=None):
    x = _var(input)
    kernel, stride, padding = _pool_args("avg_pool2d", x, kernel_size, stride, padding)
    x, unbatched = _batched(x, "avg_pool2d")
    y = _avg_pool_nchw(x, kernel, stride, (padding[0], padding[1], padding[0], padding[1]), ceil_mode,
                       count_include_pad)
    if divisor_override is not None:
        if int(divisor_override) <= 0:
            raise ValueError("avg_pool2d: divisor_override must be positive")
        if any(padding) or ceil_mode:
            raise NotImplementedError("avg_pool2d: divisor_override with padding or ceil_mode is not supported")
        y = F.multiply(y, _scalar(kernel[0] * kernel[1] / int(divisor_override), y))
    return F.reshape(y, tuple(y.shape[1:])) if unbatched else y


def _adaptive_matrix(size, out):
    """[out, size] averaging weights of PyTorch's adaptive pooling bins."""
    m = np.zeros((out, size), np.float32)
    for i in range(out):
        start, end = (i * size) // out, -(-((i + 1) * size) // out)
        m[i, start:end] = 1.0 / (end - start)
    return m


def adaptive_avg_pool2d(input, output_size):  # noqa: A002
    """Average pooling to ``output_size`` bins (PyTorch's bin edges floor(i*H/oh) .. ceil((i+1)*H/oh)),
    as two matrix products with constant averaging matrices."""
    x = _var(input)
    _check_ndim(x, (3, 4), "adaptive_avg_pool2d", "[N, C, H, W]")
    if isinstance(output_size, (int, np.integer)) or output_size is None:
        output_size = (output_size, output_size)
    h, w = x.shape[-2], x.shape[-1]
    oh, ow = (h if output_size[0] is None else int(output_size[0])), (w if output_size[1] is None
                                                                       else int(output_size[1]))
    if oh <= 0 or ow <= 0:
        raise ValueError(f"adaptive_avg_pool2d: output_size must be positive, got {tuple(output_size)}")
    if (oh, ow) == (1, 1):
        return F.reduce_mean(x, axis=[-2, -1], keepdims=True)
    if h % oh == 0 and w % ow == 0 and x.dtype == _F32:
        xb, unbatched = _batched(x, "adaptive_avg_pool2d")
        k = (h // oh, w // ow)
        y = _avg_pool_nchw(xb, k, k, (0, 0, 0, 0), False, False)
        return F.reshape(y, tuple(y.shape[1:])) if unbatched else y
    y = x if oh == h else F.matmul(F.const(_adaptive_matrix(h, oh).astype(x.dtype)), x)
    return y if ow == w else F.matmul(y, F.const(_adaptive_matrix(w, ow).astype(x.dtype)), transposeB=True)


# ---------------------------------------------------------------- normalization
def _bn_axes(x, fn):
    if x.ndim < 2:
        raise ValueError(f"{fn}: expected at least a 2-D input [N, C, ...], got shape {tuple(x.shape)}")
    return [0] + list(range(2, x.ndim))


def _channel_shape(x):
    return (1, x.shape[1]) + (1,) * (x.ndim - 2)


def _batch_statistics(x):
    """Per-channel batch mean and biased variance, shaped [C]."""
    axes = _bn_axes(x, "batch_norm")
    mean = F.reduce_mean(x, axis=axes, keepdims=True)
    var = F.reduce_mean(F.square(F.subtract(x, mean)), axis=axes, keepdims=True)
    return mean, var


def _normalize(x, mean, var, weight, bias, eps):
    """(x - mean) / sqrt(var + eps) * weight + bias, with mean/var broadcastable and weight/bias [C]."""
    shape = _channel_shape(x)
    scale = F.rsqrt(F.add(var, _scalar(eps, var)))
    if weight is not None:
        scale = F.multiply(scale, F.reshape(_var(weight), shape))
    y = F.multiply(F.subtract(x, mean), scale)
    return y if bias is None else F.add(y, F.reshape(_var(bias), shape))


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,  # noqa: A002
               eps=1e-5):
    """Normalizes each channel (axis 1). In training, or without running statistics, by the batch's
    mean and biased variance; otherwise by ``running_mean``/``running_var``. This function does not
    update running statistics: ``BatchNorm1d``/``BatchNorm2d`` record those updates."""
    x = _var(input)
    _bn_axes(x, "batch_norm")
    if training or running_mean is None or running_var is None:
        mean, var = _batch_statistics(x)
    else:
        shape = _channel_shape(x)
        mean, var = F.reshape(_var(running_mean), shape), F.reshape(_var(running_var), shape)
    return _normalize(x, mean, var, weight, bias, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):  # noqa: A002
    """Normalizes over the trailing ``normalized_shape`` axes."""
    x = _var(input)
    normalized_shape = (int(normalized_shape),) if isinstance(normalized_shape, (int, np.integer)) else \
        tuple(int(d) for d in normalized_shape)
    k = len(normalized_shape)
    if k == 0 or tuple(x.shape[x.ndim - k:]) != normalized_shape:
        raise ValueError(f"layer_norm: the input's trailing dimensions {tuple(x.shape)} do not match "
                         f"normalized_shape {normalized_shape}")
    axes = list(range(x.ndim - k, x.ndim))
    if (x.dtype == _F32 and weight is not None and _core.has_grad_rule("LayerNorm")
            and all(isinstance(v, Var) or v is None for v in (weight, bias))):
        affine = [_var(weight)] + ([_var(bias)] if bias is not None else [])
        try:
            return _core.op("LayerNorm", [x] + affine, {"axis": x.ndim - k, "epsilon": float(eps)})
        except ValueError:
            pass
    mean = F.reduce_mean(x, axis=axes, keepdims=True)
    centered = F.subtract(x, mean)
    var = F.reduce_mean(F.square(centered), axis=axes, keepdims=True)
    y = F.multiply(centered, F.rsqrt(F.add(var, _scalar(eps, var))))
    if weight is not None:
        y = F.multiply(y, _var(weight))
    return y if bias is None else F.add(y, _var(bias))


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):  # noqa: A002
    x = _var(input)
    if x.ndim < 2:
        raise ValueError(f"group_norm: expected at least a 2-D input [N, C, ...], got shape {tuple(x.shape)}")
    n, c = x.shape[0], x.shape[1]
    if num_groups <= 0 or c % num_groups:
        raise ValueError(f"group_norm: num_groups={num_groups} must divide the {c} channels")
    g = F.reshape(x, (n, num_groups, -1))
    mean = F.reduce_mean(g, axis=[2], keepdims=True)
    centered = F.subtract(g, mean)
    var = F.reduce_mean(F.square(centered), axis=[2], keepdims=True)
    y = F.reshape(F.multiply(centered, F.rsqrt(F.add(var, _scalar(eps, var)))), tuple(x.shape))
    shape = _channel_shape(x)
    if weight is not None:
        y = F.multiply(y, F.reshape(_var(weight), shape))
    return y if bias is None else F.add(y, F.reshape(_var(bias), shape))


# ---------------------------------------------------------------- dropout
_MASK32 = 0xFFFFFFFF


def _mix32(h):
    """A 32-bit integer hash (xor-shift and multiply rounds) on int64 Vars holding 32-bit values."""
    m = F.const(np.int64(_MASK32))
    for mult in (0x7FEB352D, 0x846CA68B):
        h = F.bitwise_xor(h, F.right_shift(h, F.const(np.int64(16))))
        h = F.bitwise_and(F.multiply(h, F.const(np.int64(mult))), m)
    return F.bitwise_xor(h, F.right_shift(h, F.const(np.int64(16))))


def _uniform_from_hash(shape, key, step):
    """Uniform [0, 1) float32 values of ``shape`` from a hash of (element index, ``key``, ``step``):
    ``step`` may be a placeholder, so a planned graph draws new values whenever it changes."""
    n = int(np.prod(shape, dtype=np.int64))
    if n >= 1 << 32:
        raise ValueError("dropout: inputs with 2**32 or more elements are not supported")
    index = F.const(np.arange(n, dtype=np.int64).reshape(shape))
    step_hash = _mix32(F.bitwise_and(F.add(F.cast(step, np.int64), F.const(np.int64(key & _MASK32))),
                                     F.const(np.int64(_MASK32))))
    h = _mix32(F.bitwise_xor(_mix32(F.bitwise_xor(index, F.const(np.int64((key >> 32) & _MASK32)))), step_hash))
    return F.multiply(F.cast(F.right_shift(h, F.const(np.int64(8))), np.float32), F.const(np.float32(2.0 ** -24)))


def _fresh_key():
    """A new mask key from the generator ``nn.manual_seed`` seeds."""
    from ._layers import _generator
    return int(_generator[0].integers(0, 1 << 62))


def dropout(input, p=0.5, training=True, inplace=False, step=None, key=None):  # noqa: A002
    """Zeroes each element with probability ``p`` and scales the rest by 1 / (1 - p); identity
    when not training. ``step`` (an integer Var, a placeholder for planned steps) and ``key``
    pick the mask; by default each call draws a fresh one."""
    x = _var(input)
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: probability must be between 0 and 1, got {p}")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return F.multiply(x, _scalar(0.0, x))
    key = _fresh_key() if key is None else int(key)
    step = F.const(np.int64(0)) if step is None else step
    u = _uniform_from_hash(tuple(x.shape), key, step)
    keep = F.greater_equal(u, F.const(np.float32(p)))
    scale = F.select(keep, F.const(np.asarray(1.0 / (1.0 - p), x.dtype)), F.const(np.asarray(0.0, x.dtype)))
    return F.multiply(x, scale)


# ---------------------------------------------------------------- embedding and shapes
def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,  # noqa: A002
              sparse=False):
    """Rows of ``weight`` [num_embeddings, dim] picked by the integer ``input``. Positions holding
    ``padding_idx`` give zeros and send no gradient (the padding row is kept at zero)."""
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding: max_norm, scale_grad_by_freq and sparse are not supported")
    idx = _index_var(input, "embedding: input")
    w = _var(weight)
    out = _core.gather(w, idx, 0)
    if padding_idx is not None:
        pad = int(padding_idx) % w.shape[0]
        keep = F.cast(F.not_equal(idx, F.const(np.asarray(pad, np.dtype(idx.dtype)))), np.dtype(w.dtype))
        out = F.multiply(out, F.reshape(keep, tuple(idx.shape) + (1,)))
    return out


def flatten(input, start_dim=1, end_dim=-1):  # noqa: A002
    x = _var(input)
    nd = max(x.ndim, 1)
    s, e = start_dim % nd, end_dim % nd
    if s > e:
        raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    shape = tuple(x.shape)
    return F.reshape(x, shape[:s] + (int(np.prod(shape[s:e + 1], dtype=np.int64)),) + shape[e + 1:])


def one_hot(tensor, num_classes=-1):
    idx = _index_var(tensor, "one_hot: tensor")
    if num_classes < 0:
        num_classes = int(np.max(idx.read())) + 1
    return F.cast(F.equal(F.reshape(idx, tuple(idx.shape) + (1,)), F.const(np.arange(num_classes, dtype=np.int64))),
                  np.int64)


# ---------------------------------------------------------------- activations
def relu(input, inplace=False):  # noqa: A002
    return F.relu(_var(input))


def relu6(input, inplace=False):  # noqa: A002
    return F.relu6(_var(input))


def leaky_relu(input, negative_slope=0.01, inplace=False):  # noqa: A002
    x = _var(input)
    return F.select(F.greater(x, _scalar(0, x)), x, F.multiply(x, _scalar(negative_slope, x)))


def elu(input, alpha=1.0, inplace=False):  # noqa: A002
    x = _var(input)
    return F.select(F.greater(x, _scalar(0, x)), x, F.multiply(F.expm1(x), _scalar(alpha, x)))


def gelu(input, approximate="none"):  # noqa: A002
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return F.gelu(_var(input), approximate == "tanh")


def silu(input, inplace=False):  # noqa: A002
    x = _var(input)
    return F.multiply(x, F.sigmoid(x))


def sigmoid(input):  # noqa: A002
    return F.sigmoid(_var(input))


def tanh(input):  # noqa: A002
    return F.tanh(_var(input))


def softplus(input, beta=1.0, threshold=20.0):  # noqa: A002
    x = _var(input)
    bx = F.multiply(x, _scalar(beta, x))
    soft = F.divide(F.add(F.log1p(F.exp(F.negative(F.abs(bx)))), F.relu(bx)), _scalar(beta, x))
    return F.select(F.greater(bx, _scalar(threshold, x)), x, soft)


def hardswish(input, inplace=False):  # noqa: A002
    x = _var(input)
    return F.multiply(x, F.multiply(F.relu6(F.add(x, _scalar(3.0, x))), _scalar(1.0 / 6.0, x)))


def hardsigmoid(input, inplace=False):  # noqa: A002
    x = _var(input)
    return F.multiply(F.relu6(F.add(x, _scalar(3.0, x))), _scalar(1.0 / 6.0, x))


def _dim(dim, x, fn):
    if dim is None:
        dim = 0 if x.ndim in (0, 1, 3) else 1  # PyTorch's implicit choice
    if not -max(x.ndim, 1) <= dim < max(x.ndim, 1):
        raise ValueError(f"{fn}: dim {dim} is out of range for a {x.ndim}-D input")
    return dim % max(x.ndim, 1)


def softmax(input, dim=None, dtype=None):  # noqa: A002
    x = _var(input)
    if dtype is not None:
        x = F.cast(x, np.dtype(dtype))
    d = _dim(dim, x, "softmax")
    e = F.exp(F.subtract(x, F.reduce_max(x, axis=[d], keepdims=True)))
    return F.divide(e, F.reduce_sum(e, axis=[d], keepdims=True))


def log_softmax(input, dim=None, dtype=None):  # noqa: A002
    x = _var(input)
    if dtype is not None:
        x = F.cast(x, np.dtype(dtype))
    d = _dim(dim, x, "log_softmax")
    shifted = F.subtract(x, F.reduce_max(x, axis=[d], keepdims=True))
    return F.subtract(shifted, F.log(F.reduce_sum(F.exp(shifted), axis=[d], keepdims=True)))


# ---------------------------------------------------------------- losses
_REDUCTIONS = ("none", "mean", "sum")


def _check_reduction(reduction, fn, allowed=_REDUCTIONS):
    if reduction not in allowed:
        raise ValueError(f"{fn}: reduction must be one of {list(allowed)}, got {reduction!r}")


def _reduce(loss, reduction):
    if reduction == "none":
        return loss
    if reduction == "sum":
        return F.reduce_sum(loss)
    return F.reduce_mean(loss)


def _same_shape(x, t, fn):
    if tuple(x.shape) != tuple(t.shape):
        raise ValueError(f"{fn}: target shape {tuple(t.shape)} differs from input shape {tuple(x.shape)}")


def _class_weight(weight, x, fn):
    """``weight`` [C] broadcast along the class axis of ``x``, or None."""
    if weight is None:
        return None
    w = _var(weight)
    if tuple(w.shape) != (x.shape[1],):
        raise ValueError(f"{fn}: weight must have shape ({x.shape[1]},) (one per class), got {tuple(w.shape)}")
    return F.reshape(F.cast(w, np.dtype(x.dtype)) if w.dtype != x.dtype else w, _channel_shape(x))


def _target_one_hot(x, target, fn):
    """float one-hot of integer ``target`` along the class axis of ``x`` [N, C, ...]."""
    t = _index_var(target, f"{fn}: target")
    want = (x.shape[0],) + tuple(x.shape[2:])
    if tuple(t.shape) != want:
        raise ValueError(f"{fn}: target shape {tuple(t.shape)} does not match input {tuple(x.shape)} "
                         f"(expected {want})")
    t = F.cast(t, np.int64) if np.dtype(t.dtype) != np.int64 else t
    classes = F.const(np.arange(x.shape[1], dtype=np.int64).reshape(_channel_shape(x)[1:]))
    hot = F.cast(F.equal(F.reshape(t, (t.shape[0], 1) + tuple(t.shape[1:])), classes), np.dtype(x.dtype))
    return t, hot


def _as_nc(x, fn):
    if x.ndim == 1:  # unbatched [C]
        return F.reshape(x, (1, x.shape[0])), True
    if x.ndim < 1:
        raise ValueError(f"{fn}: input must have a class axis, got shape {tuple(x.shape)}")
    return x, False


def _nll_terms(logp, target, weight, ignore_index, fn):
    """(per-position -w_t * logp[t] masked, per-position w_t masked, valid mask, one-hot)."""
    t, hot = _target_one_hot(logp, target, fn)
    valid = F.cast(F.not_equal(t, F.const(np.int64(ignore_index))), np.dtype(logp.dtype))
    w = _class_weight(weight, logp, fn)
    hw = hot if w is None else F.multiply(hot, w)
    picked = F.reduce_sum(F.multiply(hw, logp), axis=[1])
    wt = F.reduce_sum(hw, axis=[1]) if w is not None else None
    wt = valid if wt is None else F.multiply(wt, valid)
    return F.negative(F.multiply(picked, valid)), wt, valid


def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):  # noqa: A002
    """Negative log-likelihood of log-probabilities ``input`` [N, C, ...] at integer ``target``."""
    _check_reduction(reduction, "nll_loss")
    x, unbatched = _as_nc(_var(input), "nll_loss")
    if unbatched:
        target = F.reshape(_index_var(target, "nll_loss: target"), (1,))
    loss, wt, _ = _nll_terms(x, target, weight, ignore_index, "nll_loss")
    if reduction == "none":
        return F.reshape(loss, ()) if unbatched else loss
    if reduction == "sum":
        return F.reduce_sum(loss)
    return F.divide(F.reduce_sum(loss), F.reduce_sum(wt))


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):  # noqa: A002
    """Cross entropy of logits ``input`` [N, C, ...] with integer class ``target`` [N, ...] or class
    probabilities (same shape as ``input``)."""
    _check_reduction(reduction, "cross_entropy")
    ls = float(label_smoothing)
    if not 0.0 <= ls <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be between 0 and 1, got {ls}")
    x, unbatched = _as_nc(_var(input), "cross_entropy")
    logp = log_softmax(x, 1)
    c = x.shape[1]
    probabilities = (isinstance(target, Var) and np.dtype(target.dtype).kind == "f") or \
        (not isinstance(target, Var) and np.asarray(
            target.detach().cpu().numpy() if hasattr(target, "detach") else target).dtype.kind == "f")
    if probabilities:
        t = _var(target)
        if unbatched:
            t = F.reshape(t, (1,) + tuple(t.shape))
        _same_shape(x, t, "cross_entropy")
        if ls > 0:
            t = F.add(F.multiply(t, _scalar(1.0 - ls, t)), _scalar(ls / c, t))
        w = _class_weight(weight, x, "cross_entropy")
        prod = F.multiply(logp, t if w is None else F.multiply(t, w))
        loss = F.negative(F.reduce_sum(prod, axis=[1]))
        if unbatched and reduction == "none":
            return F.reshape(loss, ())
        return _reduce(loss, reduction)
    if unbatched:
        target = F.reshape(_index_var(target, "cross_entropy: target"), (1,))
    nll, wt, valid = _nll_terms(logp, target, weight, ignore_index, "cross_entropy")
    if ls > 0:
        w = _class_weight(weight, x, "cross_entropy")
        smooth = F.negative(F.reduce_sum(logp if w is None else F.multiply(logp, w), axis=[1]))
        smooth = F.multiply(smooth, valid)
    if reduction == "none":
        loss = nll if ls == 0 else F.add(F.multiply(nll, _scalar(1.0 - ls, nll)), F.multiply(smooth, _scalar(ls / c, nll)))
        return F.reshape(loss, ()) if unbatched else loss
    total = F.reduce_sum(nll)
    if ls > 0:
        total = F.add(F.multiply(total, _scalar(1.0 - ls, total)),
                      F.multiply(F.reduce_sum(smooth), _scalar(ls / c, total)))
    return total if reduction == "sum" else F.divide(total, F.reduce_sum(wt))


def _pair_inputs(input, target, fn):
    x, t = _var(input), _var(target)
    _same_shape(x, t, fn)
    if t.dtype != x.dtype:
        t = F.cast(t, np.dtype(x.dtype))
    return x, t


def mse_loss(input, target, reduction="mean"):  # noqa: A002
    _check_reduction(reduction, "mse_loss")
    x, t = _pair_inputs(input, target, "mse_loss")
    return _reduce(F.square(F.subtract(x, t)), reduction)


def l1_loss(input, target, reduction="mean"):  # noqa: A002
    _check_reduction(reduction, "l1_loss")
    x, t = _pair_inputs(input, target, "l1_loss")
    return _reduce(F.abs(F.subtract(x, t)), reduction)


def smooth_l1_loss(input, target, reduction="mean", beta=1.0):  # noqa: A002
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (L1 when beta is 0)."""
    _check_reduction(reduction, "smooth_l1_loss")
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must not be negative, got {beta}")
    x, t = _pair_inputs(input, target, "smooth_l1_loss")
    d = F.abs(F.subtract(x, t))
    if beta == 0:
        return _reduce(d, reduction)
    quad = F.multiply(F.square(d), _scalar(0.5 / beta, d))
    lin = F.subtract(d, _scalar(0.5 * beta, d))
    return _reduce(F.select(F.less(d, _scalar(beta, d)), quad, lin), reduction)


def _element_weight(weight, x, fn):
    if weight is None:
        return None
    w = _var(weight)
    try:
        np.broadcast_shapes(tuple(w.shape), tuple(x.shape))
    except ValueError:
        raise ValueError(f"{fn}: weight shape {tuple(w.shape)} does not broadcast to {tuple(x.shape)}") from None
    return F.cast(w, np.dtype(x.dtype)) if w.dtype != x.dtype else w


def binary_cross_entropy(input, target, weight=None, reduction="mean"):  # noqa: A002
    """-(t log p + (1 - t) log(1 - p)) of probabilities ``input``; each log is clamped at -100
    (as PyTorch does)."""
    _check_reduction(reduction, "binary_cross_entropy")
    x, t = _pair_inputs(input, target, "binary_cross_entropy")
    floor = _scalar(-100.0, x)
    log_p = F.maximum(F.log(x), floor)
    log_q = F.maximum(F.log(F.subtract(_scalar(1.0, x), x)), floor)
    loss = F.negative(F.add(F.multiply(t, log_p), F.multiply(F.subtract(_scalar(1.0, t), t), log_q)))
    w = _element_weight(weight, x, "binary_cross_entropy")
    return _reduce(loss if w is None else F.multiply(loss, w), reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, reduction="mean", pos_weight=None):  # noqa: A002
    """Binary cross entropy of sigmoid(``input``), computed from the logits without overflow:
    (1 - t) x + (1 + (pos_weight - 1) t) softplus(-x)."""
    _check_reduction(reduction, "binary_cross_entropy_with_logits")
    x, t = _pair_inputs(input, target, "binary_cross_entropy_with_logits")
    softplus_neg = F.add(F.log1p(F.exp(F.negative(F.abs(x)))), F.relu(F.negative(x)))
    if pos_weight is not None:
        pw = _element_weight(pos_weight, x, "binary_cross_entropy_with_logits")
        factor = F.add(_scalar(1.0, x), F.multiply(F.subtract(pw, _scalar(1.0, x)), t))
        softplus_neg = F.multiply(softplus_neg, factor)
    loss = F.add(F.multiply(F.subtract(_scalar(1.0, t), t), x), softplus_neg)
    w = _element_weight(weight, x, "binary_cross_entropy_with_logits")
    return _reduce(loss if w is None else F.multiply(loss, w), reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):  # noqa: A002
    """Pointwise KL divergence target * (log target - input) with log-probabilities ``input``;
    ``batchmean`` divides the sum by the batch size."""
    _check_reduction(reduction, "kl_div", _REDUCTIONS + ("batchmean",))
    x, t = _pair_inputs(input, target, "kl_div")
    if log_target:
        loss = F.multiply(F.exp(t), F.subtract(t, x))
    else:
        positive = F.greater(t, _scalar(0.0, t))
        log_t = F.log(F.select(positive, t, _scalar(1.0, t)))  # x log x -> 0 at 0, without NaN
        loss = F.multiply(t, F.subtract(log_t, x))
    if reduction == "batchmean":
        total = F.reduce_sum(loss)
        return total if x.ndim == 0 else F.divide(total, _scalar(x.shape[0], total))
    return _reduce(loss, reduction)
