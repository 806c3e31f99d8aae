"""Layers with ``torch.nn``'s names, argument orders, defaults, parameter names and initial
values (Kaiming-uniform weights and so on, drawn from a NumPy generator that ``manual_seed``
seeds), and MNN.nn's builders (``linear``, ``conv``, ``batch_norm``, ``dropout``).

Training-mode buffer changes (BatchNorm running statistics, Dropout's step counter) are
recorded with ``Module._record_update``; a later forward in the same step builds on the value
already recorded, so two forward passes update running statistics twice, as in PyTorch.
"""
import collections
import math

import numpy as np

from .. import expr as F
from .._core import Var
from . import functional as nnf
from ._module import Module, Parameter

__all__ = ["manual_seed", "Identity", "Linear", "Conv1d", "Conv2d", "ConvTranspose2d", "BatchNorm1d", "BatchNorm2d",
           "LayerNorm", "GroupNorm", "Dropout", "Embedding", "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d",
           "Flatten", "Sequential", "ModuleList", "ReLU", "ReLU6", "LeakyReLU", "ELU", "GELU", "SiLU", "Sigmoid",
           "Tanh", "Softmax", "LogSoftmax", "Hardswish", "Hardsigmoid", "Softplus", "EmptyModule", "dummy", "linear",
           "conv", "batch_norm", "dropout"]

_generator = [np.random.default_rng()]


def manual_seed(seed):
    """Seeds the generator that layers draw their initial weights (and dropout keys) from."""
    _generator[0] = np.random.default_rng(seed)


def _uniform(shape, bound):
    return _generator[0].uniform(-bound, bound, size=shape).astype(np.float32)


def _fan_in_bound(fan_in):
    return 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0


def _check_positive(value, name, layer):
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{layer}: {name} must be a positive integer, got {value!r}")
    return int(value)


def _input_as(input, param, layer):  # noqa: A002
    """``input`` as a Var of the parameter's dtype: arrays are converted, Vars must match."""
    want = np.dtype(param.dtype)
    if not isinstance(input, Var):
        return F.const(np.asarray(nnf._var(input).read(), dtype=want))
    if np.dtype(input.dtype) != want:
        raise TypeError(f"{layer}: input dtype {np.dtype(input.dtype)} differs from the parameters' {want}; "
                        "cast the input (expr.cast) first")
    return input


class Identity(Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):  # noqa: A002
        return input


class EmptyModule(Identity):
    """A module with no parameters that returns its input (MNN's EmptyModule)."""


dummy = EmptyModule()  # MNN's nn.dummy: a ready EmptyModule, for a slot that needs a module


# ---------------------------------------------------------------- linear and convolution
class Linear(Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.in_features = _check_positive(in_features, "in_features", "Linear")
        self.out_features = _check_positive(out_features, "out_features", "Linear")
        # PyTorch's kaiming_uniform_(a=sqrt(5)) gives the bound 1 / sqrt(fan_in).
        bound = _fan_in_bound(in_features)
        self.weight = Parameter(_uniform((out_features, in_features), bound))
        self.bias = Parameter(_uniform((out_features,), bound)) if bias else None

    def forward(self, input):  # noqa: A002
        return nnf.linear(_input_as(input, self.weight, "Linear"), self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class _ConvNd(Module):
    _dims = 2
    _transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                 padding_mode, output_padding=0):
        super().__init__()
        name = type(self).__name__
        n = self._dims
        self.in_channels = _check_positive(in_channels, "in_channels", name)
        self.out_channels = _check_positive(out_channels, "out_channels", name)
        self.groups = _check_positive(groups, "groups", name)
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{name}: groups={groups} must divide in_channels={in_channels} and "
                             f"out_channels={out_channels}")
        self.kernel_size = nnf._tuple(kernel_size, n, "kernel_size", name)
        self.stride = nnf._tuple(stride, n, "stride", name)
        self.dilation = nnf._tuple(dilation, n, "dilation", name)
        if isinstance(padding, str):
            if self._transposed or padding not in ("same", "valid"):
                raise ValueError(f"{name}: invalid padding {padding!r}")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError(f"{name}: padding='same' is not supported for strided convolutions")
            self.padding = padding
        else:
            self.padding = nnf._tuple(padding, n, "padding", name)
        if padding_mode not in nnf._PAD_MODES:
            raise ValueError(f"{name}: padding_mode must be one of {list(nnf._PAD_MODES)}, got {padding_mode!r}")
        self.padding_mode = padding_mode
        self.output_padding = nnf._tuple(output_padding, n, "output_padding", name)
        receptive = int(np.prod(self.kernel_size))
        if self._transposed:
            shape = (in_channels, out_channels // groups) + self.kernel_size
            fan_in = (out_channels // groups) * receptive  # PyTorch computes fan-in from weight dim 1
        else:
            shape = (out_channels, in_channels // groups) + self.kernel_size
            fan_in = (in_channels // groups) * receptive
        bound = _fan_in_bound(fan_in)
        self.weight = Parameter(_uniform(shape, bound))
        self.bias = Parameter(_uniform((out_channels,), bound)) if bias else None

    def extra_repr(self):
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}, "
             f"padding={self.padding}")
        if any(d != 1 for d in self.dilation):
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        return s + ("" if self.bias is not None else ", bias=False")


class Conv1d(_ConvNd):
    _dims = 1

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros"):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode)

    def forward(self, input):  # noqa: A002
        return nnf.conv1d(_input_as(input, self.weight, "Conv1d"), self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups,
                          self.padding_mode)


class Conv2d(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros"):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode)

    def forward(self, input):  # noqa: A002
        return nnf.conv2d(_input_as(input, self.weight, "Conv2d"), self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups,
                          self.padding_mode)


class ConvTranspose2d(_ConvNd):
    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros"):
        if padding_mode != "zeros":
            raise ValueError("ConvTranspose2d: only padding_mode='zeros' is supported")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, output_padding)

    def forward(self, input, output_size=None):  # noqa: A002
        if output_size is not None:
            raise NotImplementedError("ConvTranspose2d: output_size is not supported; use output_padding")
        return nnf.conv_transpose2d(_input_as(input, self.weight, "ConvTranspose2d"), self.weight, self.bias, self.stride, self.padding, self.output_padding,
                                    self.groups, self.dilation)


# ---------------------------------------------------------------- normalization
class _BatchNorm(Module):
    _ndims = (4,)
    _layout = "[N, C, H, W]"

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True):
        super().__init__()
        name = type(self).__name__
        self.num_features = _check_positive(num_features, "num_features", name)
        self.eps = float(eps)
        self.momentum = None if momentum is None else float(momentum)
        self.affine = bool(affine)
        self.track_running_stats = bool(track_running_stats)
        if affine:
            self.weight = Parameter(np.ones(num_features, np.float32))
            self.bias = Parameter(np.zeros(num_features, np.float32))
        else:
            self.weight = self.bias = None
        if track_running_stats:
            self.register_buffer("running_mean", np.zeros(num_features, np.float32))
            self.register_buffer("running_var", np.ones(num_features, np.float32))
            self.register_buffer("num_batches_tracked", np.array(0, np.int64))
        else:
            self.running_mean = self.running_var = self.num_batches_tracked = None

    def forward(self, input):  # noqa: A002
        name = type(self).__name__
        x = _input_as(input, self.weight, name) if self.weight is not None else nnf._var(input)
        if x.ndim not in self._ndims:
            raise ValueError(f"{name}: expected a {' or '.join(f'{d}-D' for d in self._ndims)} input "
                             f"{self._layout}, got shape {tuple(x.shape)}")
        if x.shape[1] != self.num_features:
            raise ValueError(f"{name}: expected {self.num_features} channels (axis 1), got shape {tuple(x.shape)}")
        use_batch = self.is_training or not self.track_running_stats
        if not use_batch:
            shape = nnf._channel_shape(x)
            mean = F.reshape(self._current_value(self.running_mean), shape)
            var = F.reshape(self._current_value(self.running_var), shape)
            return nnf._normalize(x, mean, var, self.weight, self.bias, self.eps)
        count = x.size // x.shape[1]
        if self.is_training and count <= 1:
            raise ValueError(f"{name}: expected more than 1 value per channel when training, got input shape "
                             f"{tuple(x.shape)}")
        mean, var = nnf._batch_statistics(x)
        y = nnf._normalize(x, mean, var, self.weight, self.bias, self.eps)
        if self.is_training and self.track_running_stats:
            tracked = F.add(self._current_value(self.num_batches_tracked), F.const(np.int64(1)))
            if self.momentum is None:  # cumulative average: factor 1 / batches seen
                factor = F.divide(F.const(np.float32(1.0)), F.cast(tracked, np.float32))
            else:
                factor = F.const(np.float32(self.momentum))
            keep = F.subtract(F.const(np.float32(1.0)), factor)
            rm, rv = self._current_value(self.running_mean), self._current_value(self.running_var)
            unbiased = F.multiply(F.reshape(var, (self.num_features,)), F.const(np.float32(count / (count - 1))))
            self._record_update(self.running_mean, F.add(F.multiply(rm, keep),
                                                         F.multiply(F.reshape(mean, (self.num_features,)), factor)))
            self._record_update(self.running_var, F.add(F.multiply(rv, keep), F.multiply(unbiased, factor)))
            self._record_update(self.num_batches_tracked, tracked)
        return y

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    _ndims = (2, 3)
    _layout = "[N, C] or [N, C, L]"


class BatchNorm2d(_BatchNorm):
    pass


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True):
        super().__init__()
        if isinstance(normalized_shape, (int, np.integer)):
            normalized_shape = (int(normalized_shape),)
        self.normalized_shape = tuple(_check_positive(d, "normalized_shape", "LayerNorm") for d in normalized_shape)
        self.eps = float(eps)
        self.elementwise_affine = bool(elementwise_affine)
        if elementwise_affine:
            self.weight = Parameter(np.ones(self.normalized_shape, np.float32))
            self.bias = Parameter(np.zeros(self.normalized_shape, np.float32)) if bias else None
        else:
            self.weight = self.bias = None

    def forward(self, input):  # noqa: A002
        if self.weight is not None:
            input = _input_as(input, self.weight, "LayerNorm")  # noqa: A001
        return nnf.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class GroupNorm(Module):
    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True):
        super().__init__()
        self.num_groups = _check_positive(num_groups, "num_groups", "GroupNorm")
        self.num_channels = _check_positive(num_channels, "num_channels", "GroupNorm")
        if num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_groups={num_groups} must divide num_channels={num_channels}")
        self.eps = float(eps)
        self.affine = bool(affine)
        if affine:
            self.weight = Parameter(np.ones(num_channels, np.float32))
            self.bias = Parameter(np.zeros(num_channels, np.float32))
        else:
            self.weight = self.bias = None

    def forward(self, input):  # noqa: A002
        x = _input_as(input, self.weight, "GroupNorm") if self.weight is not None else nnf._var(input)
        if x.ndim < 2 or x.shape[1] != self.num_channels:
            raise ValueError(f"GroupNorm: expected {self.num_channels} channels (axis 1), got shape {tuple(x.shape)}")
        return nnf.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


# ---------------------------------------------------------------- dropout and embedding
class Dropout(Module):
    """Zeroes elements with probability ``p`` in training and scales the rest by 1 / (1 - p).

    The mask is a hash of the element index, a key drawn at construction, a count of forward
    calls and a step counter buffer (not saved) that each training forward records as advanced:
    a training step planned once and run many times draws a new mask each run once the
    optimizer applies the pending updates."""

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        p = float(p)
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: probability must be between 0 and 1, got {p}")
        self.p = p
        self.key = int(_generator[0].integers(0, 1 << 62))
        self._calls = 0
        self.register_buffer("step", np.array(0, np.int64), persistent=False)

    def forward(self, input):  # noqa: A002
        if not self.is_training or self.p == 0.0:
            return nnf._var(input)
        object.__setattr__(self, "_calls", self._calls + 1)
        step = self._current_value(self.step)
        y = nnf.dropout(input, self.p, True, step=step, key=self.key ^ (self._calls * 0x9E3779B97F4A7C15 % (1 << 62)))
        self._record_update(self.step, F.add(step, F.const(np.int64(1))))
        return y

    def extra_repr(self):
        return f"p={self.p}"


class Embedding(Module):
    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, sparse=False, _weight=None):
        super().__init__()
        self.num_embeddings = _check_positive(num_embeddings, "num_embeddings", "Embedding")
        self.embedding_dim = _check_positive(embedding_dim, "embedding_dim", "Embedding")
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"Embedding: padding_idx must be within num_embeddings ({num_embeddings}), "
                                 f"got {padding_idx}")
            padding_idx = int(padding_idx) % num_embeddings
        self.padding_idx = padding_idx
        if max_norm is not None or scale_grad_by_freq or sparse:
            raise NotImplementedError("Embedding: max_norm, scale_grad_by_freq and sparse are not supported")
        if _weight is not None:
            w = np.asarray(_weight, np.float32)
        else:
            w = _generator[0].standard_normal((num_embeddings, embedding_dim)).astype(np.float32)
            if padding_idx is not None:
                w[padding_idx] = 0.0
        self.weight = Parameter(w)

    def forward(self, input):  # noqa: A002
        return nnf.embedding(input, self.weight, self.padding_idx)

    def extra_repr(self):
        return f"{self.num_embeddings}, {self.embedding_dim}" + (
            f", padding_idx={self.padding_idx}" if self.padding_idx is not None else "")


# ---------------------------------------------------------------- pooling and shapes
class MaxPool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        if return_indices:
            raise NotImplementedError("MaxPool2d: return_indices is not supported")
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.ceil_mode = dilation, bool(ceil_mode)

    def forward(self, input):  # noqa: A002
        return nnf.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad = bool(ceil_mode), bool(count_include_pad)
        self.divisor_override = divisor_override

    def forward(self, input):  # noqa: A002
        return nnf.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                              self.count_include_pad, self.divisor_override)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool2d(Module):
    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):  # noqa: A002
        return nnf.adaptive_avg_pool2d(input, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class Flatten(Module):
    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = int(start_dim), int(end_dim)

    def forward(self, input):  # noqa: A002
        return nnf.flatten(input, self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


# ---------------------------------------------------------------- containers
class ModuleList(Module):
    """Submodules held in a list, named "0", "1", ... (PyTorch's state-dict names)."""

    def __init__(self, modules=None):
        super().__init__()
        for m in modules or ():
            self.append(m)

    def _items(self):
        return list(self._children.values())

    def _rebuild(self, modules):
        for k in list(self._children):
            object.__delattr__(self, k)
        self._children.clear()
        for i, m in enumerate(modules):
            setattr(self, str(i), m)

    def append(self, module):
        if not isinstance(module, Module):
            raise TypeError(f"{type(self).__name__}.append: expected a Module, got {type(module).__name__}")
        setattr(self, str(len(self._children)), module)
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def insert(self, index, module):
        items = self._items()
        items.insert(index, module)
        self._rebuild(items)

    def __len__(self):
        return len(self._children)

    def __iter__(self):
        return iter(self._items())

    def __getitem__(self, index):
        items = self._items()
        if isinstance(index, slice):
            return type(self)(items[index])
        try:
            return items[index]
        except IndexError:
            raise IndexError(f"index {index} is out of range for {type(self).__name__} of length {len(items)}") \
                from None

    def __setitem__(self, index, module):
        if not isinstance(module, Module):
            raise TypeError(f"{type(self).__name__}: expected a Module, got {type(module).__name__}")
        items = self._items()
        items[index] = module
        self._rebuild(items)

    def __delitem__(self, index):
        items = self._items()
        del items[index]
        self._rebuild(items)

    def forward(self, *inputs):
        raise NotImplementedError("ModuleList does not define forward(); call its modules")


class Sequential(ModuleList):
    """Modules applied in order; indexable, with ``append``. Given an OrderedDict, its keys name
    the submodules."""

    def __init__(self, *modules):
        Module.__init__(self)
        if len(modules) == 1 and isinstance(modules[0], collections.OrderedDict):
            for k, m in modules[0].items():
                if not isinstance(m, Module):
                    raise TypeError(f"Sequential: '{k}' is not a Module ({type(m).__name__})")
                setattr(self, k, m)
            return
        for m in modules:
            self.append(m)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return Sequential(collections.OrderedDict(list(self._children.items())[index]))
        return ModuleList.__getitem__(self, index)

    def forward(self, input):  # noqa: A002
        for m in self._children.values():
            input = m(input)
        return input


# ---------------------------------------------------------------- activations
def _activation(name, fn, params=(), doc=None):
    """A parameter-free Module class whose forward calls ``fn(input, **its arguments)``."""
    def __init__(self, *args, **kwargs):
        Module.__init__(self)
        values = dict(params)
        names = [k for k, _ in params]
        if len(args) > len(names):
            raise TypeError(f"{name} takes at most {len(names)} positional arguments, got {len(args)}")
        for k, v in zip(names, args):
            values[k] = v
        for k, v in kwargs.items():
            if k not in values:
                raise TypeError(f"{name} got an unexpected argument '{k}'")
            values[k] = v
        object.__setattr__(self, "_arguments", {k: v for k, v in values.items() if k != "inplace"})
        for k, v in values.items():
            object.__setattr__(self, k, v)

    def forward(self, input):  # noqa: A002
        return fn(input, **self._arguments)

    def extra_repr(self):
        return ", ".join(f"{k}={v}" for k, v in self._arguments.items())

    return type(name, (Module,), {"__init__": __init__, "forward": forward, "extra_repr": extra_repr,
                                  "__doc__": doc or f"Applies ``functional.{fn.__name__}``.",
                                  "__module__": __name__})


ReLU = _activation("ReLU", nnf.relu, (("inplace", False),))
ReLU6 = _activation("ReLU6", nnf.relu6, (("inplace", False),))
LeakyReLU = _activation("LeakyReLU", nnf.leaky_relu, (("negative_slope", 0.01), ("inplace", False)))
ELU = _activation("ELU", nnf.elu, (("alpha", 1.0), ("inplace", False)))
GELU = _activation("GELU", nnf.gelu, (("approximate", "none"),))
SiLU = _activation("SiLU", nnf.silu, (("inplace", False),))
Sigmoid = _activation("Sigmoid", nnf.sigmoid)
Tanh = _activation("Tanh", nnf.tanh)
Softmax = _activation("Softmax", nnf.softmax, (("dim", None),))
LogSoftmax = _activation("LogSoftmax", nnf.log_softmax, (("dim", None),))
Hardswish = _activation("Hardswish", nnf.hardswish, (("inplace", False),))
Hardsigmoid = _activation("Hardsigmoid", nnf.hardsigmoid, (("inplace", False),))
Softplus = _activation("Softplus", nnf.softplus, (("beta", 1.0), ("threshold", 20.0)))


# ---------------------------------------------------------------- MNN.nn builders
def _pair(v):
    return (int(v), int(v)) if isinstance(v, (int, np.integer)) else tuple(int(x) for x in v)


def linear(input_length, output_length, has_bias=True, weight_init=None, bias_init=None):
    """MNN's ``nn.linear``: a Linear layer (weights from the initializers when given: arrays or
    callables of the shape)."""
    layer = Linear(input_length, output_length, bias=has_bias)
    for attr, init in (("weight", weight_init), ("bias", bias_init)):
        param = getattr(layer, attr)
        if init is not None and param is not None:
            value = init(tuple(param.shape)) if callable(init) else init
            layer.load_state_dict({attr: np.asarray(value, np.float32).reshape(param.shape)}, strict=False)
    return layer


def conv(in_channel, out_channel, kernel_size, stride=(1, 1), padding=(0, 0), dilation=(1, 1), depthwise=False,
         bias=True, padding_mode="zeros"):
    """MNN's ``nn.conv``: a Conv2d layer (``depthwise``: one group per input channel)."""
    groups = in_channel if depthwise else 1
    return Conv2d(in_channel, out_channel, _pair(kernel_size), _pair(stride), _pair(padding), _pair(dilation),
                  groups, bias, padding_mode)


def batch_norm(channels, dims=4, momentum=0.99, epsilon=1e-5):
    """MNN's ``nn.batch_norm``: MNN's momentum keeps that share of the running statistics
    (PyTorch's momentum is 1 - it)."""
    cls = BatchNorm2d if dims == 4 else BatchNorm1d
    return cls(channels, eps=epsilon, momentum=1.0 - float(momentum))


def dropout(drop_ratio):
    """MNN's ``nn.dropout``: a Dropout layer."""
    return Dropout(drop_ratio)
