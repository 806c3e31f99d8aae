"""numpy.random on mnnpy: the legacy module functions (seed, rand, randn, randint, ...) and
``default_rng`` with a Generator.

Numbers come from a counter-based generator (Philox4x32-10) run by C++ ops: every call is one
op node with the seed and a fresh stream number as attributes, so a draw is fixed once made
(reading it twice gives the same values), threads split the work without changing it, and a
seed reproduces the whole sequence of calls. The streams differ from NumPy's; the
distributions are the same.
"""
import operator as _operator
import os as _os
import threading

import numpy as _np

from .. import _core
from .._core import Var
from ._common import asvar

__all__ = ["seed", "rand", "randn", "randint", "random", "random_sample", "ranf", "sample", "uniform", "normal",
           "standard_normal", "exponential", "standard_exponential", "choice", "shuffle", "permutation",
           "default_rng", "Generator", "RandomState"]

_MASK64 = (1 << 64) - 1
_F64 = _np.dtype("float64")


def _splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def _seed_key(seed):
    """A 64-bit Philox key from None (fresh entropy), an int or a sequence of ints."""
    if seed is None:
        return int.from_bytes(_os.urandom(8), "little")
    if isinstance(seed, (Var, _np.ndarray, list, tuple)):
        words = [int(w) for w in _np.asarray(seed.read() if isinstance(seed, Var) else seed).reshape(-1)]
    else:
        try:
            words = [_operator.index(seed)]
        except TypeError:
            raise TypeError(f"Cannot cast seed of type {type(seed).__name__} to an integer seed") from None
    key = 0x6A09E667F3BCC908
    for w in words:
        if w < 0:
            raise ValueError("Seed must be non-negative")
        while True:
            key = _splitmix64(key ^ (w & _MASK64))
            w >>= 64
            if not w:
                break
    return key


def _signed64(x):
    x &= _MASK64
    return x - (1 << 64) if x >= 1 << 63 else x


def _shape(size):
    if size is None:
        return ()
    try:
        return (_operator.index(size),)
    except TypeError:
        return tuple(_operator.index(d) for d in size)


def _const(a):
    return _core.const(_np.asarray(a), None, "NCHW")


class _Stream:
    """A key and the number of the next stream: each draw takes one stream. Threads drawing from
    one generator (the global one) take distinct streams, as NumPy's generators lock."""

    def __init__(self, seed=None):
        self._lock = threading.Lock()
        self.reseed(seed)

    def reseed(self, seed):
        key = _seed_key(seed)
        with self._lock:
            self.key, self.counter = key, 0

    def _take(self):
        """(key, the number of a stream no other draw gets)."""
        with self._lock:
            stream = self.counter
            self.counter += 1
            return self.key, stream

    def fill(self, dist, shape, dtype, a=0.0, b=1.0, low=0, span=0):
        shape = tuple(int(d) for d in shape)
        if any(d < 0 for d in shape):
            raise ValueError("negative dimensions are not allowed")
        key, stream = self._take()
        return _core.op("RandomFill", [], {"dist": dist, "dtype": _np.dtype(dtype).name, "shape": list(shape),
                                           "seed": _signed64(key), "stream": _signed64(stream),
                                           "a": float(a), "b": float(b), "low": _signed64(low),
                                           "span": _signed64(span)})

    def permutation(self, n):
        key, stream = self._take()
        return _core.op("RandomPermutation", [], {"n": int(n), "seed": _signed64(key),
                                                  "stream": _signed64(stream)})

    def weighted(self, p, shape):
        key, stream = self._take()
        return _core.op("RandomWeightedIndices", [p], {"shape": list(shape), "seed": _signed64(key),
                                                       "stream": _signed64(stream)})


# ---------------------------------------------------------------- distributions, shared
def _float_param(x):
    """A Python float for scalars, else a float64 Var."""
    if isinstance(x, Var):
        return x if x.ndim else _core.cast(x, _F64) if x.dtype != _F64 else x
    a = _np.asarray(x, dtype=_F64)
    return float(a) if a.ndim == 0 else _const(a)


def _broadcast_shape(size, *params):
    shapes = [tuple(p.shape) for p in params if isinstance(p, Var)]
    if size is not None:
        shape = _shape(size)
        if shapes:
            target = _np.broadcast_shapes(shape, *shapes)
            if target != shape:
                raise ValueError(f"shape mismatch: parameters of shapes {shapes} cannot be broadcast to size {shape}")
        return shape
    return _np.broadcast_shapes(*shapes) if shapes else ()


def _any_var(*params):
    return any(isinstance(p, Var) for p in params)


def _check_nonnegative(x, what):
    values = _np.asarray(x.read()) if isinstance(x, Var) else _np.asarray(x)
    if _np.any(values < 0) or _np.any(_np.isnan(values)):
        raise ValueError(f"{what} < 0")


def _uniform(stream, low, high, size, dtype=_F64):
    low, high = _float_param(low), _float_param(high)
    shape = _broadcast_shape(size, low, high)
    if not _any_var(low, high):
        if not _np.isfinite(high - low):
            raise OverflowError("Range exceeds valid bounds")
        return stream.fill("uniform", shape, dtype, low, high - low)
    u = stream.fill("uniform", shape, dtype)
    width = _core.binary("Sub", high, low)
    return _core.binary("Add", low, _core.binary("Mul", width, u))


def _normal(stream, loc, scale, size, dtype=_F64):
    loc, scale = _float_param(loc), _float_param(scale)
    _check_nonnegative(scale, "scale")
    shape = _broadcast_shape(size, loc, scale)
    if not _any_var(loc, scale):
        return stream.fill("normal", shape, dtype, loc, scale)
    z = stream.fill("normal", shape, dtype)
    return _core.binary("Add", loc, _core.binary("Mul", scale, z))


def _exponential(stream, scale, size, dtype=_F64):
    scale = _float_param(scale)
    _check_nonnegative(scale, "scale")
    shape = _broadcast_shape(size, scale)
    if not _any_var(scale):
        return stream.fill("exponential", shape, dtype, 0.0, scale)
    return _core.binary("Mul", scale, stream.fill("exponential", shape, dtype))


def _integers(stream, low, high, size, dtype, endpoint):
    dtype = _np.dtype(dtype)
    if dtype.kind not in "biu" or dtype not in _SUPPORTED_INT:
        raise TypeError(f"Unsupported dtype {dtype} for randint")
    if high is None:
        low, high = 0, low
    for name, v in (("low", low), ("high", high)):
        if isinstance(v, (Var, _np.ndarray, list, tuple)) and _np.ndim(v.read() if isinstance(v, Var) else v):
            raise NotImplementedError(f"array-valued '{name}' is not supported; pass a scalar")
    low = int(low.read() if isinstance(low, Var) else low)
    high = int(high.read() if isinstance(high, Var) else high)
    if endpoint:
        high += 1
    if dtype == _np.bool_:
        lo_bound, hi_bound = 0, 2
    else:
        info = _np.iinfo(dtype)
        lo_bound, hi_bound = int(info.min), int(info.max) + 1
    if low < lo_bound:
        raise ValueError(f"low is out of bounds for {dtype}")
    if high > hi_bound:
        raise ValueError(f"high is out of bounds for {dtype}")
    if low >= high:
        raise ValueError("low >= high" if not endpoint else "low > high")
    span = (high - low) & _MASK64  # 2**64 wraps to 0: the full range
    return stream.fill("integers", _shape(size), dtype, low=low, span=span)


_SUPPORTED_INT = tuple(_np.dtype(d) for d in ("bool", "int8", "uint8", "int16", "int32", "int64"))


def _population(a, what="a"):
    """(n, values Var or None) for choice's ``a``."""
    if isinstance(a, Var) or _np.ndim(a) > 0:
        values = asvar(a)
        return values.shape[0] if values.ndim else None, values
    try:
        n = _operator.index(a)
    except TypeError:
        raise ValueError(f"{what} must be an integer or at least one-dimensional") from None
    return n, None


def _choice(stream, a, size, replace, p, axis=0, legacy=True):
    n, values = _population(a)
    if values is not None and values.ndim == 0:
        raise ValueError("a must be 1-dimensional or an integer" if legacy else
                         "a must be a sequence or an integer, not a 0-d array")
    if values is not None and legacy and values.ndim != 1:
        raise ValueError("a must be 1-dimensional")
    if values is not None and not legacy:
        axis = axis % values.ndim
        n = values.shape[axis]
    shape = _shape(size)
    count = int(_np.prod(shape, dtype=_np.int64))
    if n is None or n < 0 or (n == 0 and count > 0):
        raise ValueError("a must be greater than 0 unless no samples are taken" if legacy else
                         "a cannot be empty unless no samples are taken")
    weights = None
    if p is not None:
        weights = _np.asarray(p.read() if isinstance(p, Var) else p, dtype=_F64)
        if weights.ndim != 1:
            raise ValueError("p must be 1-dimensional")
        if weights.size != n:
            raise ValueError("a and p must have same size")
        if _np.any(_np.isnan(weights)) or _np.any(weights < 0):
            raise ValueError("probabilities are not non-negative")
        if abs(weights.sum() - 1.0) > _np.sqrt(_np.finfo(_F64).eps):
            raise ValueError("probabilities do not sum to 1")
    if replace:
        if weights is None:
            idx = stream.fill("integers", shape, _np.int64, low=0, span=n)
        else:
            idx = stream.weighted(_const(weights), shape) if count else _const(_np.zeros(shape, _np.int64))
    else:
        if count > n:
            raise ValueError("Cannot take a larger sample than population when replace is False" if not legacy else
                             "Cannot take a larger sample than population when 'replace=False'")
        if weights is None:
            perm = stream.permutation(n)
            idx = _core.reshape(perm[:count], shape)
        else:
            if _np.count_nonzero(weights) < count:
                raise ValueError("Fewer non-zero entries in p than size")
            # Efraimidis-Spirakis: the k largest log(u)/p are a weighted sample without replacement.
            u = stream.fill("uniform", (n,), _F64, 0.0, 1.0)
            keys = _core.binary("Div", _core.unary("Log", u), _const(weights))
            top = _core.op("TopK", [keys], {"k": count, "axis": 0})[1]
            idx = _core.reshape(top, shape)
    if values is None:
        return idx
    if legacy or values.ndim == 1:
        return _core.gather(values, idx, 0) if values.ndim == 1 else _core.gather(values, idx, axis)
    return _core.gather(values, idx, axis)


def _permuted_copy(stream, x, axis=0):
    try:
        n = _operator.index(x)
    except TypeError:
        n = None
    if n is not None and not isinstance(x, (Var, _np.ndarray)):
        return stream.permutation(n)
    values = asvar(x)
    if values.ndim == 0:
        raise _np.exceptions.AxisError("x must be an integer or at least 1-dimensional") if False else \
            TypeError("x must be an integer or at least 1-dimensional")
    axis = axis % values.ndim
    return _core.gather(values, stream.permutation(values.shape[axis]), axis)


def _shuffle(stream, x, axis=0):
    if isinstance(x, Var):
        if x.ndim == 0:
            raise TypeError("shuffle: x must be at least 1-dimensional")
        _core.rebind(x, _permuted_copy(stream, x, axis))
        return None
    if isinstance(x, _np.ndarray):
        if x.ndim == 0:
            raise TypeError("shuffle: x must be at least 1-dimensional")
        x[...] = _np.asarray(_permuted_copy(stream, x, axis).read())
        return None
    raise TypeError("shuffle needs a mnnpy Var or a NumPy array (it shuffles in place)")


# ---------------------------------------------------------------- Generator
class Generator:
    """numpy.random.Generator's methods on a Philox stream."""

    def __init__(self, seed=None):
        self._stream = _Stream(seed)

    def __repr__(self):
        return "Generator(Philox4x32)"

    def random(self, size=None, dtype=_np.float64, out=None):
        dtype = _np.dtype(dtype)
        if dtype not in (_np.float32, _np.float64):
            raise TypeError(f"Unsupported dtype {dtype} for random")
        result = self._stream.fill("uniform", _shape(size) if out is None else out.shape, dtype)
        if out is not None:
            _core.rebind(out, result if out.dtype == dtype else _core.cast(result, out.dtype))
            return out
        return result

    def integers(self, low, high=None, size=None, dtype=_np.int64, endpoint=False):
        return _integers(self._stream, low, high, size, dtype, endpoint)

    def uniform(self, low=0.0, high=1.0, size=None):
        return _uniform(self._stream, low, high, size)

    def normal(self, loc=0.0, scale=1.0, size=None):
        return _normal(self._stream, loc, scale, size)

    def standard_normal(self, size=None, dtype=_np.float64, out=None):
        dtype = _np.dtype(dtype)
        if dtype not in (_np.float32, _np.float64):
            raise TypeError(f"Unsupported dtype {dtype} for standard_normal")
        result = self._stream.fill("normal", _shape(size) if out is None else out.shape, dtype)
        if out is not None:
            _core.rebind(out, result)
            return out
        return result

    def exponential(self, scale=1.0, size=None):
        return _exponential(self._stream, scale, size)

    def standard_exponential(self, size=None, dtype=_np.float64, method="zig", out=None):
        return self._stream.fill("exponential", _shape(size), dtype)

    def choice(self, a, size=None, replace=True, p=None, axis=0, shuffle=True):
        return _choice(self._stream, a, size, replace, p, axis, legacy=False)

    def shuffle(self, x, axis=0):
        return _shuffle(self._stream, x, axis)

    def permutation(self, x, axis=0):
        return _permuted_copy(self._stream, x, axis)


def default_rng(seed=None):
    """A Generator seeded from ``seed`` (None: fresh entropy); a Generator is returned as is."""
    if isinstance(seed, Generator):
        return seed
    return Generator(seed)


# ---------------------------------------------------------------- legacy module functions
class RandomState:
    """numpy.random.RandomState's methods on a Philox stream."""

    def __init__(self, seed=None):
        self._stream = _Stream(seed)

    def seed(self, seed=None):
        if seed is not None and not isinstance(seed, (Var, _np.ndarray, list, tuple)):
            s = _operator.index(seed)
            if not 0 <= s < 2 ** 32:
                raise ValueError("Seed must be between 0 and 2**32 - 1")
        self._stream.reseed(seed)

    def rand(self, *shape):
        return self._stream.fill("uniform", shape, _F64)

    def randn(self, *shape):
        return self._stream.fill("normal", shape, _F64)

    def randint(self, low, high=None, size=None, dtype=int):
        return _integers(self._stream, low, high, size, dtype, False)

    def random_sample(self, size=None):
        return self._stream.fill("uniform", _shape(size), _F64)

    random = ranf = sample = random_sample

    def uniform(self, low=0.0, high=1.0, size=None):
        return _uniform(self._stream, low, high, size)

    def normal(self, loc=0.0, scale=1.0, size=None):
        return _normal(self._stream, loc, scale, size)

    def standard_normal(self, size=None):
        return self._stream.fill("normal", _shape(size), _F64)

    def exponential(self, scale=1.0, size=None):
        return _exponential(self._stream, scale, size)

    def standard_exponential(self, size=None):
        return self._stream.fill("exponential", _shape(size), _F64)

    def choice(self, a, size=None, replace=True, p=None):
        return _choice(self._stream, a, size, replace, p, legacy=True)

    def shuffle(self, x):
        return _shuffle(self._stream, x, 0)

    def permutation(self, x):
        return _permuted_copy(self._stream, x, 0)


_global = RandomState()
seed = _global.seed
rand = _global.rand
randn = _global.randn
randint = _global.randint
random = _global.random_sample
random_sample = _global.random_sample
ranf = _global.random_sample
sample = _global.random_sample
uniform = _global.uniform
normal = _global.normal
standard_normal = _global.standard_normal
exponential = _global.exponential
standard_exponential = _global.standard_exponential
choice = _global.choice
shuffle = _global.shuffle
permutation = _global.permutation
