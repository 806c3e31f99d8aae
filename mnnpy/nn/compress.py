"""MNN's ``nn.compress``: quantization-aware training (``train_quant``).

``train_quant(module, quant_bits=8, feature_scale_method=PER_TENSOR,
scale_update_method=MOVING_AVERAGE)`` turns the convolution and linear layers of ``module``
(``nn.conv``/``Conv1d``/``Conv2d``, depthwise ones included, and ``nn.linear``/``Linear``) into
layers that simulate integer inference while they train, as MNN's quantized convolutions do:

- weights: symmetric, per output channel, ``quant_bits`` bits: ``scale = max|w| / L`` with
  ``L = 2**(quant_bits-1) - 1`` (at least 1e-6 / L), ``w_q = clip(round(w / scale), -L, L) * scale``;
- the layer's input and output: 8 bits per tensor with a zero point (127 levels either side):
  from ``lo = min(0, min x)`` and ``hi = max(0, max x)``, ``scale = (hi - lo) / 254``,
  ``zero = round(-lo / scale - 127)``, ``x_q = scale * (clip(round(x / scale + zero), -127, 127) - zero)``.

Gradients pass straight through the rounding (the straight-through estimator), so the float
weights keep training. In training the feature ranges come from the batch and running ranges
are kept in buffers (``input_min``, ``input_max``, ``output_min``, ``output_max``, updated by the
optimizer's step like batch-norm statistics): ``MOVING_AVERAGE`` keeps 0.99 of the old range,
``MAXIMUM`` the widest range seen. In evaluation the running ranges are used (the batch's until
a training step has set them), which is what the integer model computes.

As in MNN, features are quantized per tensor whatever ``feature_scale_method`` says (MNN accepts
``PER_CHANNEL`` and uses ``PER_TENSOR``). Differences from MNN: MNN quantizes only the
convolutions of a model loaded for training (``load_module_from_file(..., for_training=True)``)
and fuses a following batch norm and ReLU into them; mnnpy quantizes the convolution and linear
layers of any Module (Python-defined ones too; ``TrainableGraphModule``, whose convolutions are
graph nodes rather than layers, is refused) and quantizes each layer's own output.
"""
import enum

import numpy as np

from .. import _core
from .. import expr as F
from ._layers import Conv1d, Conv2d, Linear
from ._module import Module

__all__ = ["Feature_Scale_Method", "Scale_Update_Method", "PER_TENSOR", "PER_CHANNEL", "MAXIMUM",
           "MOVING_AVERAGE", "train_quant", "export_quantized", "trace_graph"]


class Feature_Scale_Method(enum.IntEnum):  # noqa: N801  (MNN's name)
    """How features are scaled (MNN's numbers)."""
    PER_TENSOR = 0
    PER_CHANNEL = 1


class Scale_Update_Method(enum.IntEnum):  # noqa: N801  (MNN's name)
    """How the running feature ranges follow the batches (MNN's numbers)."""
    MAXIMUM = 0
    MOVING_AVERAGE = 1


PER_TENSOR, PER_CHANNEL = Feature_Scale_Method.PER_TENSOR, Feature_Scale_Method.PER_CHANNEL
MAXIMUM, MOVING_AVERAGE = Scale_Update_Method.MAXIMUM, Scale_Update_Method.MOVING_AVERAGE

_FEATURE_LIMIT = 127.0      # features are always 8-bit, as in MNN
_RANGE_MOMENTUM = 0.99      # share of the old running range kept by MOVING_AVERAGE (MNN's)
_LAYER_TYPES = (Linear, Conv1d, Conv2d)


def _f32(value):
    return F.const(np.float32(value))


def _straight_through(x, quantized):
    """``quantized``'s value with ``x``'s gradient."""
    return F.add(x, _core.unary("StopGradient", F.subtract(quantized, x)))


def fake_quant_weight(weight, bits):
    """Symmetric per-output-channel fake quantization of a weight (axis 0 = output channels),
    with the straight-through gradient."""
    limit = float(2 ** (bits - 1) - 1)
    axes = list(range(1, weight.ndim))
    peak = F.reduce_max(F.abs(weight), axis=axes, keepdims=True) if axes else F.abs(weight)
    scale = F.multiply(F.maximum(peak, _f32(1e-6)), _f32(1.0 / limit))
    levels = F.clip(F.round(F.divide(weight, scale)), -limit, limit)
    return _straight_through(weight, F.multiply(levels, scale))


def _scale_and_zero(lo, hi):
    lo = F.minimum(lo, _f32(0.0))
    hi = F.maximum(hi, _f32(0.0))
    # An all-zero range would divide by zero; any positive scale quantizes zeros exactly.
    scale = F.maximum(F.divide(F.subtract(hi, lo), _f32(2 * _FEATURE_LIMIT)), _f32(1e-12))
    zero = F.round(F.subtract(F.divide(F.negative(lo), scale), _f32(_FEATURE_LIMIT)))
    return scale, zero


def fake_quant_feature(x, lo, hi):
    """8-bit fake quantization of ``x`` over the range [lo, hi] (widened to hold 0), with the
    straight-through gradient; returns ``(x_q, nudged_lo, nudged_hi)``, the range the integer
    levels actually cover."""
    scale, zero = _scale_and_zero(lo, hi)
    levels = F.clip(F.round(F.add(F.divide(x, scale), zero)), -_FEATURE_LIMIT, _FEATURE_LIMIT)
    quantized = F.multiply(scale, F.subtract(levels, zero))
    nudged_lo = F.minimum(F.multiply(F.subtract(_f32(-_FEATURE_LIMIT), zero), scale), _f32(0.0))
    nudged_hi = F.maximum(F.multiply(F.subtract(_f32(_FEATURE_LIMIT), zero), scale), _f32(0.0))
    return _straight_through(x, quantized), nudged_lo, nudged_hi


class _QuantizedLayer:
    """Mixed into a Linear or convolution layer's class by ``train_quant``: the layer's own
    forward, run on the fake-quantized input with the fake-quantized weight, its output
    fake-quantized in turn."""

    def forward(self, input, *args, **kwargs):  # noqa: A002
        x = self._fake_quant_feature(input, "input")
        weight = self.weight
        object.__setattr__(self, "weight", fake_quant_weight(weight, self.quant_bits))
        try:
            y = super().forward(x, *args, **kwargs)
        finally:
            object.__setattr__(self, "weight", weight)
        return self._fake_quant_feature(y, "output")

    def _fake_quant_feature(self, x, which):
        from .functional import _var
        x = _var(x)
        x = F.cast(x, np.float32) if np.dtype(x.dtype) != np.float32 else x
        batch_lo, batch_hi = F.reduce_min(x), F.reduce_max(x)
        lo_buffer, hi_buffer = getattr(self, which + "_min"), getattr(self, which + "_max")
        running_lo, running_hi = self._current_value(lo_buffer), self._current_value(hi_buffer)
        # The running range is NaN until a training step sets it: the batch's range stands in.
        unset = F.isnan(running_lo)
        if self.is_training:
            quantized, lo, hi = fake_quant_feature(x, batch_lo, batch_hi)
            self._record_update(lo_buffer, F.select(unset, lo, self._follow(running_lo, lo, F.minimum)))
            self._record_update(hi_buffer, F.select(unset, hi, self._follow(running_hi, hi, F.maximum)))
            return quantized
        lo = F.select(unset, batch_lo, running_lo)
        hi = F.select(unset, batch_hi, running_hi)
        return fake_quant_feature(x, lo, hi)[0]

    def _follow(self, running, batch, widest):
        if self.scale_update_method == Scale_Update_Method.MAXIMUM:
            return widest(running, batch)
        return F.add(F.multiply(running, _f32(_RANGE_MOMENTUM)), F.multiply(batch, _f32(1.0 - _RANGE_MOMENTUM)))

    def extra_repr(self):
        return super().extra_repr() + f", quant_bits={self.quant_bits}"


_quantized_classes = {}


def _quantized_class(cls):
    """The class of ``cls``'s layers once quantized (one per layer class)."""
    if issubclass(cls, _QuantizedLayer):
        return cls
    if cls not in _quantized_classes:
        _quantized_classes[cls] = type("Quantized" + cls.__name__, (_QuantizedLayer, cls), {})
    return _quantized_classes[cls]


def _enum_member(value, enum_type, what):
    try:
        return enum_type(value)
    except ValueError:
        names = ", ".join(m.name for m in enum_type)
        raise ValueError(f"train_quant: {what} must be one of {names}, got {value!r}") from None


def train_quant(module, quant_bits=8, feature_scale_method=PER_TENSOR, scale_update_method=MOVING_AVERAGE):
    """Turns ``module``'s convolution and linear layers into quantization-aware ones (see the
    module docstring), in place; returns True, as MNN's does. Calling it again changes the bits
    and the update method and keeps the running ranges."""
    if not isinstance(module, Module):
        raise TypeError(f"train_quant: expected an nn.Module, got {type(module).__name__}")
    if isinstance(quant_bits, bool) or not isinstance(quant_bits, (int, np.integer)):
        raise TypeError(f"train_quant: quant_bits must be an int, got {type(quant_bits).__name__}")
    if not 2 <= int(quant_bits) <= 8:
        raise ValueError(f"train_quant: quant_bits must be from 2 to 8, got {quant_bits}")
    _enum_member(feature_scale_method, Feature_Scale_Method, "feature_scale_method")
    update = _enum_member(scale_update_method, Scale_Update_Method, "scale_update_method")
    from ._trainable import TrainableGraphModule
    if isinstance(module, TrainableGraphModule):
        raise TypeError("train_quant: a TrainableGraphModule's convolutions are graph nodes, not layers; "
                        "quantize a Module built from nn layers")
    for layer in module.modules():
        if not isinstance(layer, _LAYER_TYPES):
            continue
        if not isinstance(layer, _QuantizedLayer):
            layer.__class__ = _quantized_class(type(layer))
            for name in ("input_min", "input_max", "output_min", "output_max"):
                layer.register_buffer(name, np.full((), np.nan, np.float32))
        object.__setattr__(layer, "quant_bits", int(quant_bits))
        object.__setattr__(layer, "scale_update_method", update)
    return True


def export_quantized(module, example_input, output=None):
    """The module trained with ``train_quant`` as the int8 graph ``mnnpy.quantize`` writes (QDQ
    form: the weights, biases and feature ranges training learned), written to ``output`` when
    given; returns the Graph. See ``_quant_export.py`` for the modules it traces."""
    from ._quant_export import export_quantized as export
    return export(module, example_input, output)


def trace_graph(module, example_input):
    """The float Graph (ONNX operators, as the converters give) of a module whose forward pass
    is a chain of nn layers, traced at ``example_input`` in evaluation mode: what
    ``mnnpy.quantize`` calibrates. Returns the Graph."""
    from ._quant_export import trace_graph as trace
    return trace(module, example_input)[0]

