"""Dtypes, constants and type rules of mnnpy.numpy: NumPy's own dtype objects and scalar types
(mnnpy arrays have NumPy dtypes), and the type queries made to accept Vars."""
import numpy as _np

from .._core import Var

ndarray = Var  # isinstance(x, np.ndarray) holds for mnnpy arrays

# Scalar types and dtype objects: the same objects as NumPy's, so dtype=np.float32 means the same.
dtype = _np.dtype
bool_ = _np.bool_
bool = _np.bool_  # noqa: A001  (NumPy 2 exports np.bool)
int8, int16, int32, int64 = _np.int8, _np.int16, _np.int32, _np.int64
uint8, uint16, uint32, uint64 = _np.uint8, _np.uint16, _np.uint32, _np.uint64
float16, float32, float64 = _np.float16, _np.float32, _np.float64
half, single, double = _np.half, _np.single, _np.double
byte, ubyte, short, ushort = _np.byte, _np.ubyte, _np.short, _np.ushort
intc, uintc, int_, uint, intp, uintp = _np.intc, _np.uintc, _np.int_, _np.uint, _np.intp, _np.uintp
longlong, ulonglong = _np.longlong, _np.ulonglong
complex64, complex128 = _np.complex64, _np.complex128
generic, number, integer, signedinteger, unsignedinteger = (_np.generic, _np.number, _np.integer,
                                                            _np.signedinteger, _np.unsignedinteger)
inexact, floating, complexfloating = _np.inexact, _np.floating, _np.complexfloating
finfo, iinfo = _np.finfo, _np.iinfo
issubdtype = _np.issubdtype
typecodes, sctypeDict = _np.typecodes, _np.sctypeDict

pi, e, euler_gamma = _np.pi, _np.e, _np.euler_gamma
inf, nan = _np.inf, _np.nan
newaxis = None
little_endian = _np.little_endian

# Exceptions NumPy raises that user code catches.
AxisError = _np.exceptions.AxisError
exceptions = _np.exceptions


def _dtype_of(x):
    """What NumPy's type functions see for ``x``: a Var's dtype, anything else as it is."""
    return x.dtype if isinstance(x, Var) else x


def astype(x, dtype, /, *, copy=True, device=None):
    """``x`` cast to ``dtype`` (NumPy 2's and the Array API's function form of ``x.astype``):
    a new array, or ``x`` itself when ``copy=False`` and the dtype already matches. Like NumPy,
    only arrays and scalars are accepted, not lists."""
    from .. import _core
    from ._common import asvar
    if not (isinstance(x, Var) or isinstance(x, _np.ndarray) or _np.isscalar(x)):
        raise TypeError(f"Input should be a NumPy array or scalar. It is a {type(x)} instead.")
    if device is not None and device != "cpu":
        raise ValueError(f'Device not understood. Only "cpu" is allowed, but received: {device}')
    if not isinstance(x, (Var, _np.ndarray, _np.generic)):
        # A Python number passes NumPy's scalar check, then has no astype method.
        raise AttributeError(f"'{type(x).__name__}' object has no attribute 'astype'")
    x = asvar(x)
    dtype = _np.dtype(dtype)
    if dtype.kind not in "biuf":
        raise TypeError(f"mnnpy.numpy does not support arrays of dtype {dtype}")
    if dtype == x.dtype:
        return _core.unary("Identity", x) if copy else x
    return _core.cast(x, dtype)


def result_type(*arrays_and_dtypes):
    """The dtype NumPy gives an operation on these arrays, dtypes and Python numbers."""
    return _np.result_type(*(_dtype_of(x) for x in arrays_and_dtypes))


def promote_types(type1, type2):
    return _np.promote_types(type1, type2)


def can_cast(from_, to, casting="safe"):
    return _np.can_cast(_dtype_of(from_), to, casting)


def min_scalar_type(a):
    return _np.min_scalar_type(a.read() if isinstance(a, Var) else a)


def isdtype(dtype, kind):
    return _np.isdtype(dtype, kind)


def isscalar(element):
    """True for Python and NumPy scalars; a Var, even 0-d, is an array (as an ndarray is)."""
    return _np.isscalar(element)


def iterable(y):
    return isinstance(y, Var) and y.ndim > 0 or (not isinstance(y, Var) and _np.iterable(y))


def isreal(x):
    """True everywhere: mnnpy has no complex dtypes."""
    from ._creation import ones_like
    return ones_like(x, dtype=_np.bool_)


def iscomplex(x):
    from ._creation import zeros_like
    return zeros_like(x, dtype=_np.bool_)


def isrealobj(x):
    return True


def iscomplexobj(x):
    return False


__all__ = [n for n in dir() if not n.startswith("_") and n != "Var"]
