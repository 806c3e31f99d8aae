"""``Var`` as an ndarray: NumPy's array methods and protocols, each the mnnpy.numpy function
of the same name (one implementation per operation).

Interop: ``numpy.asarray(v)`` reads the computed buffer without a copy (read-only);
``__array_namespace__`` is this module's package (the Array API standard); ``__dlpack__``
exports the computed value and ``mnnpy.numpy.from_dlpack`` imports any DLPack producer
(NumPy, PyTorch CPU tensors)."""
import sys as _sys

import numpy as _np

from .. import _core
from .._core import Var

__all__ = ["from_dlpack"]


def _numpy_namespace():
    return _sys.modules["mnnpy.numpy"]


def _method(name, **fixed):
    """Var.<name>(*args) -> mnnpy.numpy.<name>(var, *args)."""
    def method(self, *args, **kwargs):
        return getattr(_numpy_namespace(), name)(self, *args, **kwargs, **fixed)
    method.__name__ = name
    method.__doc__ = f"``mnnpy.numpy.{name}(self, ...)``."
    return method


for _name in ("sum", "prod", "mean", "std", "var", "min", "max", "argmin", "argmax", "ptp", "cumsum", "cumprod",
              "all", "any", "ravel", "squeeze", "swapaxes", "repeat", "clip", "round", "dot", "nonzero", "take",
              "diagonal", "trace", "compress", "searchsorted", "conj", "conjugate", "choose"):
    setattr(Var, _name, _method(_name))


def _astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
    dtype = _np.dtype(dtype)
    if not _np.can_cast(self.dtype, dtype, casting):
        raise TypeError(f"Cannot cast array data from {self.dtype!r} to {dtype!r} according to the rule "
                        f"{casting!r}")
    if dtype == self.dtype:
        return _core.unary("Identity", self) if copy else self
    return _core.cast(self, dtype)


def _sort(self, axis=-1, kind=None, order=None, *, stable=None):
    """Sorts in place: the Var now refers to the sorted array (NumPy's ``a.sort()``)."""
    _core.rebind(self, _numpy_namespace().sort(self, axis=axis, kind=kind, stable=stable))


def _argsort(self, axis=-1, kind=None, order=None, *, stable=None):
    return _numpy_namespace().argsort(self, axis=axis, kind=kind, stable=stable)


def _fill(self, value):
    """Sets every element to ``value`` (the Var now refers to the filled array)."""
    filled = _core.broadcast_to(_core.const(_np.asarray(value, dtype=self.dtype), None, "NCHW"), tuple(self.shape))
    _core.rebind(self, filled)


def _copy(self, order="C"):
    return _core.unary("Identity", self)


def _tolist(self):
    return self.read().tolist()


def _tobytes(self, order="C"):
    return self.read().tobytes(order)


def _flatten(self, order="C"):
    return _core.unary("Identity", _core.reshape(self, (-1,)))


def _rebuild(value):
    return _core.const(value, None, "NCHW")


def _reduce_ex(self, protocol):
    """Pickles the value (a placeholder without one cannot be pickled)."""
    if self.is_placeholder and not self.is_evaluated:
        raise TypeError("cannot pickle a placeholder Var that has no value yet; write() it first")
    return _rebuild, (_np.array(self.read()),)


def _array_namespace(self, *, api_version=None):
    return _numpy_namespace()


def _dlpack(self, *, stream=None, max_version=None, dl_device=None, copy=None):
    value = self.read()
    if copy:
        value = value.copy()
    kwargs = {} if max_version is None else {"max_version": max_version}
    try:
        return value.__dlpack__(stream=stream, **kwargs)
    except BufferError:
        # Read-only buffers need a versioned consumer; older ones get a private copy.
        return value.copy().__dlpack__(stream=stream, **kwargs)


def _dlpack_device(self):
    return (1, 0)  # kDLCPU


def _iter(self):
    if self.ndim == 0:
        raise TypeError("iteration over a 0-d array")
    for i in range(self.shape[0]):
        yield self[i]


def _complex(self):
    """``complex(v)``: the value as NumPy converts the same array (mnnpy has no complex dtypes)."""
    return complex(_np.asarray(self.read()))


_getitem = Var.__getitem__


def _empty_mask_getitem(self, key):
    """NumPy indexing; returns a new Var. An empty boolean mask whose axes each have length 0 or the
    length of the array's axis selects nothing (a (0, *rest) array), as in NumPy."""
    if isinstance(key, (Var, _np.ndarray)) and key.dtype == _np.bool_ and 0 < key.ndim <= self.ndim:
        shape, key_shape = tuple(self.shape), tuple(key.shape)
        if 0 in key_shape and all(k in (s, 0) for k, s in zip(key_shape, shape)):
            key = _np.zeros(shape[:len(key_shape)], dtype=_np.bool_)
    return _getitem(self, key)


def _real(self):
    return self


def _imag(self):
    return _numpy_namespace().imag(self)


Var.astype = _astype
Var.sort = _sort
Var.argsort = _argsort
Var.fill = _fill
Var.copy = _copy
Var.tolist = _tolist
Var.tobytes = _tobytes
Var.flatten = _flatten
Var.__reduce_ex__ = _reduce_ex
Var.__copy__ = _copy
Var.__deepcopy__ = lambda self, memo: _copy(self)
Var.__array_namespace__ = _array_namespace
Var.__dlpack__ = _dlpack
Var.__dlpack_device__ = _dlpack_device
Var.__iter__ = _iter
Var.__complex__ = _complex
Var.__getitem__ = _empty_mask_getitem
Var.real = property(_real)
Var.imag = property(_imag)
Var.mT = property(lambda self: _core.transpose(self, list(range(self.ndim - 2)) + [self.ndim - 1, self.ndim - 2]))
Var.device = property(lambda self: "cpu")
Var.to_device = lambda self, device, /, *, stream=None: self
Var.__round__ = lambda self, ndigits=None: _numpy_namespace().round(self, ndigits or 0)
Var.__divmod__ = lambda self, other: _numpy_namespace().divmod(self, other)
Var.__rdivmod__ = lambda self, other: _numpy_namespace().divmod(other, self)


def from_dlpack(x, /, *, device=None, copy=None):
    """A Var with the values of any DLPack producer (NumPy array, CPU torch tensor ...)."""
    return _core.const(_np.from_dlpack(x), None, "NCHW")
