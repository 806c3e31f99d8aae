"""MNN's graph-editing members of ``Var``: ``fix_as_placeholder``, ``fix_as_trainable``,
``replace``, ``set_inputs``, ``copy_from``, ``resize``, ``reorder``, ``set_order``, ``sync``,
``valid`` and ``argpartition``.

Each edit makes the Var refer to a new node, in place (every Python reference to that Var
object sees it, as with index assignment). Graphs built from the Var before the edit keep the
node they were built from, as in MNN, whose earlier results are already computed: after
``c = expr.const(...); d = c * 3; c.fix_as_placeholder(); c.write(v)``, ``d`` keeps ``3 * c``'s
old value and ``c * 3`` built afterwards follows ``v``.
"""
import sys as _sys

import numpy as _np

from . import _core, _display
from ._core import Var

__all__ = []

_FORMATS = ("NCHW", "NHWC", "NC4HW4")


def _value(var):
    """The Var's value as a NumPy array (computed now)."""
    if var.is_placeholder and not var.is_evaluated:
        raise ValueError("this placeholder has no value yet; write() one first")
    return _np.array(var.read())


def _placeholder_like(var, shape=None, dtype=None, data_format=None, value=None):
    """A placeholder shaped like ``var`` (or as given), holding ``value`` when given, named as ``var``."""
    p = _core.placeholder(tuple(var.shape if shape is None else shape), var.dtype if dtype is None else dtype,
                          var.data_format if data_format is None else data_format)
    if value is not None:
        p.write(_np.ascontiguousarray(value))
    p.name = var.name
    return p


def _as_var(value):
    return value if isinstance(value, Var) else _core.const(_np.asarray(value), None, "NCHW")


def _format(data_format, what):
    name = getattr(data_format, "name", data_format)
    if name not in _FORMATS:
        raise ValueError(f"{what}: unknown data format {data_format!r}; expected one of {_FORMATS}")
    return name


def _fix_as_placeholder(self):
    """Makes the Var a placeholder holding its current value, which ``write`` can then change."""
    if not self.is_placeholder:
        _core.rebind(self, _placeholder_like(self, value=_value(self)))


def _fix_as_trainable(self):
    """Makes the Var a trainable parameter: a floating-point placeholder holding its current
    value (what ``nn.Parameter`` makes), which a Module attribute or an optimizer trains."""
    if _np.dtype(self.dtype).kind != "f":
        raise TypeError(f"fix_as_trainable: a trainable Var must be floating-point, got {_np.dtype(self.dtype)}")
    _fix_as_placeholder(self)


def _replace(self, src):
    """Makes the Var refer to ``src``'s node (arrays become constants)."""
    _core.rebind(self, _as_var(src))


def _set_inputs(self, inputs):
    """Makes the Var the same op with the same attributes applied to ``inputs``."""
    if self.is_placeholder or self.is_const:
        raise ValueError(f"set_inputs: a {'placeholder' if self.is_placeholder else 'constant'} has no inputs")
    outputs = _core.op(self.op_type, [_as_var(x) for x in inputs], self.attrs)
    new = outputs[self.output_index] if isinstance(outputs, list) else outputs
    new.name = self.name
    _core.rebind(self, new)


def _copy_from(self, src):
    """Makes the Var a placeholder holding ``src``'s value (and shape and dtype)."""
    value = _value(src) if isinstance(src, Var) else _np.array(src)
    if self.is_placeholder and value.shape == tuple(self.shape) and value.dtype == _np.dtype(self.dtype):
        self.write(_np.ascontiguousarray(value))
        return
    _core.rebind(self, _placeholder_like(self, shape=value.shape, dtype=value.dtype, value=value))


def _resize(self, shape):
    """Gives a placeholder a new shape; its value is dropped (write a new one)."""
    if not self.is_placeholder:
        raise ValueError(f"resize: only a placeholder can be resized; this Var is {self.op_type}")
    shape = (int(shape),) if isinstance(shape, (int, _np.integer)) else tuple(int(d) for d in shape)
    _core.rebind(self, _placeholder_like(self, shape=shape))


def _reorder(self, data_format):
    """Gives a placeholder a new data format; its value is dropped (write a new one)."""
    data_format = _format(data_format, "reorder")
    if not self.is_placeholder:
        raise ValueError(f"reorder: only a placeholder can be reordered; this Var is {self.op_type}")
    _core.rebind(self, _placeholder_like(self, data_format=data_format))


def _set_order(self, data_format):
    """Labels the Var's value with a data format, without moving it (``expr.convert`` moves it)."""
    data_format = _format(data_format, "set_order")
    if self.is_placeholder:
        value = _value(self) if self.is_evaluated else None
        _core.rebind(self, _placeholder_like(self, data_format=data_format, value=value))
        return
    relabelled = _core.const(_value(self), None, data_format)
    relabelled.name = self.name
    _core.rebind(self, relabelled)


def _sync(self):
    """Computes the value now (MNN waits for a device here)."""
    if self.reads_placeholder:
        self.read()
    else:
        _core.compute([self])


def _argpartition(self, kth, axis=-1, kind="introselect", order=None):
    """``mnnpy.numpy.argpartition(self, ...)``."""
    import mnnpy.numpy  # noqa: F401  (imported on first use, as mnnpy imports it)
    return _sys.modules["mnnpy.numpy"].argpartition(self, kth, axis, kind, order)


Var.fix_as_placeholder = _fix_as_placeholder
Var.fix_as_trainable = _fix_as_trainable
Var.replace = _replace
Var.set_inputs = _set_inputs
Var.copy_from = _copy_from
Var.resize = _resize
Var.reorder = _reorder
Var.set_order = _set_order
Var.sync = _sync
Var.argpartition = _argpartition
Var._repr_html_ = lambda self: _display.var_html(self)  # Jupyter's view (computes nothing lazy)
# Every Var is valid: ops check their inputs when built and raise instead of making an invalid one.
Var.valid = property(lambda self: True)
