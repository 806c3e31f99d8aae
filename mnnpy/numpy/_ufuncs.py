"""NumPy's universal functions on Vars.

Each ``ufunc`` asks NumPy's own type resolver (``numpy.ufunc.resolve_dtypes``, no computation)
which loop NumPy would run for the operand dtypes, so result dtypes, weak Python scalars and
the TypeErrors of unsupported combinations are exactly NumPy's; the values are computed by
the core's elementwise kernels (fused into chains by the executor). ``out=``, ``where=``,
``dtype=``, ``casting=`` and ``signature=`` are honoured; ``where=False`` positions hold
``out``'s values, or zero when there is no ``out`` (NumPy leaves them uninitialized).
"""
import builtins as _builtins
import math as _math

import numpy as _np

from .. import _core
from .._core import Var
from ._common import asvar, store

__all__ = ["ufunc"]

_PY_SCALARS = (bool, int, float)  # the exact types NumPy treats as weak


def _is_weak(x):
    return isinstance(x, _PY_SCALARS) and not isinstance(x, _np.generic)


def _scalar(value, like):
    return _core.scalar(value, like)


class ufunc:
    """A NumPy ufunc computed on the expression graph (``np.add``, ``np.exp`` ...)."""

    def __init__(self, name, nin, nout, compute, identity=None, reference=None):
        self.__name__ = name
        self.nin, self.nout, self.nargs = nin, nout, nin + nout
        self.identity = identity
        self._compute = compute
        self._numpy = reference if reference is not None else getattr(_np, name)
        self._loops = {}
        self._plain_loops = {}  # operand dtypes (or Python number types) -> loop, for calls without keywords
        self._compares = name in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")

    def __repr__(self):
        return f"<ufunc '{self.__name__}'>"

    def _resolve(self, operands, dtype, signature, casting):
        key = tuple(o.dtype if isinstance(o, Var) else type(o) for o in operands) + (dtype, signature, casting)
        loop = self._loops.get(key)
        if loop is None:
            probe = tuple(type(o) if _is_weak(o) and not isinstance(o, bool) else
                          (_np.dtype(_np.bool_) if isinstance(o, bool) else o.dtype) for o in operands)
            if signature is None and dtype is not None:
                signature = (None,) * self.nin + (_np.dtype(dtype),) * self.nout
            extra = {} if signature is None else {"signature": signature}
            loop = self._numpy.resolve_dtypes(probe + (None,) * self.nout, casting=casting, **extra)
            if any(d.kind in "cOUSVmM" or d.itemsize > 8 for d in loop):
                raise TypeError(f"ufunc '{self.__name__}' would compute in {loop[-1]}, which mnnpy does not support")
            self._loops[key] = loop
        return loop

    def __call__(self, *args, out=None, where=True, casting="same_kind", order="K", dtype=None, subok=True,
                 signature=None):
        plain = out is None and where is True and dtype is None and signature is None and casting == "same_kind"
        if plain and len(args) == self.nin and self.nout == 1:
            # The common call (arrays and Python numbers, no keywords) with a loop seen before.
            if self.nin == 1:
                x = args[0]
                if type(x) is Var:
                    loop = self._plain_loops.get(x.dtype)
                    if loop is not None:
                        result = self._compute(x if loop[0] is None else _core.cast(x, loop[0]))
                        return result if loop[1] is None else _core.cast(result, loop[1])
            elif type(args[0]) is Var and type(args[1]) is Var:
                a, b = args
                loop = self._plain_loops.get((a.dtype, b.dtype))
                if loop is not None:
                    result = self._compute(a if loop[0] is None else _core.cast(a, loop[0]),
                                           b if loop[1] is None else _core.cast(b, loop[1]))
                    return result if loop[2] is None else _core.cast(result, loop[2])
            else:
                a, b = args
                loop = self._plain_loops.get((a.dtype if type(a) is Var else type(a),
                                              b.dtype if type(b) is Var else type(b)))
                if loop is not None and not (self._compares and (_overflows(a, loop[0]) or _overflows(b, loop[1]))):
                    result = self._compute(*self._inputs((a, b), loop))
                    return result if result.dtype == loop[-1] else _core.cast(result, loop[-1])
        if len(args) > self.nargs or len(args) < self.nin:
            raise TypeError(f"{self.__name__}() takes from {self.nin} to {self.nargs} positional arguments but "
                            f"{len(args)} were given")
        if len(args) > self.nin:
            if out is not None:
                raise TypeError("cannot specify 'out' as both a positional and keyword argument")
            out = args[self.nin:]
            args = args[:self.nin]
        operands = [a if isinstance(a, Var) or _is_weak(a) else asvar(a) for a in args]
        loop = self._resolve(operands, dtype, signature, casting)
        if plain and self.nin == 2 and self.nout == 1 and any(type(o) in _PY_SCALARS for o in operands) and all(
                type(o) is Var or type(o) in _PY_SCALARS for o in operands):
            self._plain_loops[tuple(o.dtype if type(o) is Var else type(o) for o in operands)] = loop
        if plain and self.nout == 1 and all(type(o) is Var for o in operands):
            # Per operand the cast to make (None: none) and the cast of the result (None: none).
            dtypes = tuple(o.dtype for o in operands)
            result_dtype = self._compute(*(_core.placeholder((), dt, "NCHW") for dt in loop[:-1])).dtype
            casts = tuple(None if have == dt else dt for have, dt in zip(dtypes, loop[:-1]))
            self._plain_loops[dtypes[0] if self.nin == 1 else dtypes] = casts + (
                None if result_dtype == loop[-1] else loop[-1],)
        if self._compares and any(_overflows(o, dt) for o, dt in zip(operands, loop)):
            # NumPy compares an out-of-range Python integer by value rather than refusing it.
            wide = _np.dtype(_np.float64 if any(isinstance(o, int) and not -2**63 <= o < 2**63 for o in operands
                                                if _is_weak(o)) else _np.int64)
            operands = [o if _is_weak(o) else (o if o.dtype == wide else _core.cast(o, wide)) for o in operands]
            loop = (wide, wide, loop[-1])
        results = self._compute(*self._inputs(operands, loop))
        if self.nout == 1:
            results = (results,)
        results = tuple(r if r.dtype == dt else _core.cast(r, dt) for r, dt in zip(results, loop[self.nin:]))
        outs = _split_out(out, self.nout)
        if where is not True:
            mask = asvar(where, _np.bool_)
            results = tuple(_core.where(mask, r, o if o is not None else _core.scalar(0, r))
                            for r, o in zip(results, outs))
        results = tuple(store(r, o) for r, o in zip(results, outs))
        return results[0] if self.nout == 1 else results

    def _inputs(self, operands, loop):
        """The operands as Vars of the loop's dtypes; Python numbers become constants of it."""
        inputs = [o if type(o) is not Var or o.dtype == dt else _core.cast(o, dt) for o, dt in zip(operands, loop)]
        for i, (o, dt) in enumerate(zip(inputs, loop)):
            if type(o) is not Var and not isinstance(o, Var):
                partner = next((p for p in inputs if isinstance(p, Var) and p.dtype == dt), None)
                _check_weak_int(o, dt)
                value = _core.scalar(o, partner) if partner is not None else None
                if value is None or value.dtype != dt:  # e.g. a Python bool beside integers
                    value = _core.const(_np.asarray(o, dtype=dt), None, "NCHW")
                inputs[i] = value
        return inputs

    def outer(self, A, B, **kwargs):
        """``self(a[..., None, ...], b)``: every pair of elements."""
        if self.nin != 2:
            raise ValueError("outer product only supported for binary functions")
        a, b = (x if isinstance(x, Var) else asvar(x) for x in (A, B))
        a = _core.reshape(a, tuple(a.shape) + (1,) * b.ndim)
        return self(a, b, **kwargs)


def _check_weak_int(value, dt):
    """NumPy's OverflowError for a Python integer that does not fit the loop's integer dtype."""
    if type(value) is int and dt.kind in "iu":
        info = _np.iinfo(dt)
        if not info.min <= value <= info.max:
            raise OverflowError(f"Python integer {value} out of bounds for {dt}")


def _overflows(value, dt):
    if not (_is_weak(value) and isinstance(value, int) and not isinstance(value, bool) and dt.kind in "iu"):
        return False
    info = _np.iinfo(dt)
    return not info.min <= value <= info.max


def _split_out(out, nout):
    if out is None:
        return (None,) * nout
    if not isinstance(out, tuple):
        out = (out,)
    if len(out) != nout:
        raise ValueError(f"The 'out' tuple must have exactly {nout} entries: one per ufunc output")
    return out


class _reducible_ufunc(ufunc):
    """A binary ufunc with ``reduce`` and ``accumulate`` (add, multiply, maximum ...)."""

    def __init__(self, name, compute, reduction, accumulation=None, identity=None):
        super().__init__(name, 2, 1, compute, identity)
        self._reduction, self._accumulation = reduction, accumulation

    def reduce(self, array, axis=0, dtype=None, out=None, keepdims=False, initial=_np._NoValue, where=True):
        from . import _reductions
        kwargs = {"axis": axis, "out": out, "keepdims": keepdims}
        if dtype is not None:
            kwargs["dtype"] = dtype
        if initial is not _np._NoValue:
            kwargs["initial"] = initial
        if where is not True:
            kwargs["where"] = where
        return getattr(_reductions, self._reduction)(array, **kwargs)

    def accumulate(self, array, axis=0, dtype=None, out=None):
        if self._accumulation is None:
            raise TypeError(f"accumulate is not supported for ufunc '{self.__name__}' in mnnpy")
        from . import _reductions
        return getattr(_reductions, self._accumulation)(array, axis=axis, dtype=dtype, out=out)


def _u(op):
    return lambda x: _core.unary(op, x)


def _odd_at_zero(op):
    """An odd function f with f(0) = 0 whose kernel drops the sign of zero: +0 and -0 pass
    through unchanged, as NumPy's (and IEEE 754's) sin(-0) = -0, expm1(-0) = -0."""
    def compute(x):
        y = _core.unary(op, x)
        if x.dtype.kind != "f":
            return y
        return _core.where(_core.binary("Equal", x, _scalar(0, x)), x, y)
    return compute


def _cos(x):
    """cos, exactly 1 for |x| < 2**-27 (where 1 - x*x/2 rounds to 1 even in float64)."""
    y = _core.unary("Cos", x)
    if x.dtype.kind != "f":
        return y
    near_zero = _core.binary("Less", _core.unary("Abs", x), _scalar(2.0 ** -27, x))
    return _core.where(near_zero, _scalar(1, y), y)


def _b(op):
    return lambda x, y: _core.binary(op, x, y)


def _bool_or_arith(bool_op, op):
    """NumPy's bool loops of add/multiply are logical or/and."""
    def compute(x, y):
        return _core.binary(bool_op if x.dtype == _np.bool_ else op, x, y)
    return compute


def _rounding(op):
    def compute(x):
        return x if x.dtype.kind in "biu" else _core.unary(op, x)
    return compute


def _logaddexp(log_of_sum_of_exp):
    def compute(x, y):
        big = _core.binary("Maximum", x, y)
        gap = _core.unary("Neg", _core.unary("Abs", _core.binary("Sub", x, y)))
        value = _core.binary("Add", big, log_of_sum_of_exp(gap))
        # Equal infinities: exp(-|inf - inf|) is NaN, NumPy gives the infinity.
        return _core.where(_core.binary("Equal", x, y), _core.binary("Add", x, _scalar(_math.log(2) if
                           log_of_sum_of_exp is _log1p_exp else 1.0, x)), value)
    return compute


def _log1p_exp(gap):
    return _core.unary("Log1p", _core.unary("Exp", gap))


def _log2_1p_exp2(gap):
    return _core.binary("Mul", _core.unary("Log1p", _core.unary("Exp2", gap)), _scalar(1 / _math.log(2), gap))


def _scale_by(factor):
    return lambda x: _core.binary("Mul", x, _scalar(factor, x))


def _heaviside(x, h):
    zero, one = _scalar(0, x), _scalar(1, x)
    value = _core.where(_core.binary("Less", x, zero), zero,
                        _core.where(_core.binary("Greater", x, zero), one, h))
    return _core.where(_core.unary("IsNan", x), x, value)


def _power(x, y):
    # NumPy refuses negative integer exponents; the check needs the values, so it is made
    # where they are known now (constants and Python numbers).
    nonempty = _np.prod(_np.broadcast_shapes(tuple(x.shape), tuple(y.shape))) > 0
    if y.dtype.kind in "iu" and y.is_const and nonempty and int(_core.reduce("min", y, None, False).item()) < 0:
        raise ValueError("Integers to negative integer powers are not allowed.")
    return _core.binary("Pow", x, y)


def _float_power(x, y):
    return _core.binary("Pow", x, y)


def _divmod(x, y):
    return _core.binary("FloorDiv", x, y), _core.binary("Mod", x, y)


def _modf(x):
    whole = _core.unary("Trunc", x)
    frac = _core.binary("Sub", x, whole)
    # modf(+-inf) is (+-0, +-inf); x - trunc(x) would be NaN there.
    frac = _core.where(_core.unary("IsInf", x), _core.binary("CopySign", _scalar(0, x), x), frac)
    return frac, whole


def _ldexp(x, exponent):
    # In float64, in two exact power-of-two steps, so that 2**e itself cannot overflow to inf.
    wide = _core.cast(x, _np.float64)
    e = _core.cast(exponent, _np.int64)
    half = _core.binary("FloorDiv", e, _core.scalar(2, e))
    rest = _core.binary("Sub", e, half)
    for part in (half, rest):
        wide = _core.binary("Mul", wide, _core.unary("Exp2", _core.cast(part, _np.float64)))
    return _core.cast(wide, x.dtype)


def _sinc_core(x):
    px = _core.binary("Mul", x, _scalar(_math.pi, x))
    value = _core.binary("Div", _core.unary("Sin", px), px)
    return _core.where(_core.binary("Equal", x, _scalar(0, x)), _scalar(1, x), value)


def _reciprocal(x):
    if x.dtype.kind in "iu":  # NumPy's integer reciprocal truncates 1 / x
        wide = _core.cast(x, _np.float64)
        return _core.cast(_core.unary("Trunc", _core.binary("Div", _scalar(1.0, wide), wide)), x.dtype)
    return _core.unary("Reciprocal", x)


def _comparison(op):
    return lambda x, y: _core.binary(op, x, y)


# name -> (compute, identity); unary first, then binary.
_UNARY = {
    "negative": _u("Neg"), "positive": _u("Identity"), "absolute": _u("Abs"), "fabs": _u("Abs"),
    "sign": _u("Sign"), "rint": _rounding("Round"), "floor": _rounding("Floor"), "ceil": _rounding("Ceil"),
    "trunc": _rounding("Trunc"), "sqrt": _u("Sqrt"), "cbrt": _u("Cbrt"), "square": _u("Square"),
    "reciprocal": _reciprocal, "exp": _u("Exp"), "exp2": _u("Exp2"), "expm1": _odd_at_zero("Expm1"), "log": _u("Log"),
    "log2": _u("Log2"), "log10": _u("Log10"), "log1p": _u("Log1p"), "sin": _odd_at_zero("Sin"), "cos": _cos,
    "tan": _u("Tan"), "arcsin": _u("Asin"), "arccos": _u("Acos"), "arctan": _u("Atan"), "sinh": _u("Sinh"),
    "cosh": _u("Cosh"), "tanh": _u("Tanh"), "arcsinh": _u("Asinh"), "arccosh": _u("Acosh"),
    "arctanh": _u("Atanh"), "deg2rad": _scale_by(_math.pi / 180), "rad2deg": _scale_by(180 / _math.pi),
    "radians": _scale_by(_math.pi / 180), "degrees": _scale_by(180 / _math.pi), "isnan": _u("IsNan"),
    "isinf": _u("IsInf"), "isfinite": _u("IsFinite"), "signbit": _u("Signbit"), "logical_not": _u("LogicalNot"),
    "invert": _u("BitwiseNot"), "conjugate": _u("Identity"),
}
_BINARY = {
    "subtract": _b("Sub"), "divide": _b("Div"), "true_divide": _b("Div"), "floor_divide": _b("FloorDiv"),
    "remainder": _b("Mod"), "mod": _b("Mod"), "fmod": _b("Fmod"), "power": _power,
    "float_power": _float_power, "arctan2": _b("Atan2"), "hypot": _b("Hypot"), "copysign": _b("CopySign"),
    "logaddexp": _logaddexp(_log1p_exp), "logaddexp2": _logaddexp(_log2_1p_exp2), "heaviside": _heaviside,
    "equal": _comparison("Equal"), "not_equal": _comparison("NotEqual"), "less": _comparison("Less"),
    "less_equal": _comparison("LessEqual"), "greater": _comparison("Greater"),
    "greater_equal": _comparison("GreaterEqual"), "logical_xor": _b("LogicalXor"),
    "bitwise_xor": _b("BitwiseXor"), "left_shift": _b("LeftShift"), "right_shift": _b("RightShift"),
    "ldexp": _ldexp,
}
# Binary ufuncs with reduce (and accumulate): name -> (compute, reduction, accumulation, identity).
_REDUCIBLE = {
    "add": (_bool_or_arith("LogicalOr", "Add"), "sum", "cumsum", 0),
    "multiply": (_bool_or_arith("LogicalAnd", "Mul"), "prod", "cumprod", 1),
    "maximum": (_b("Maximum"), "max", None, None), "minimum": (_b("Minimum"), "min", None, None),
    "fmax": (_b("Fmax"), "nanmax", None, None), "fmin": (_b("Fmin"), "nanmin", None, None),
    "logical_and": (_b("LogicalAnd"), "all", None, True), "logical_or": (_b("LogicalOr"), "any", None, False),
    "bitwise_and": (_b("BitwiseAnd"), None, None, -1), "bitwise_or": (_b("BitwiseOr"), None, None, 0),
}

for _name, _compute in _UNARY.items():
    globals()[_name] = ufunc(_name, 1, 1, _compute)
for _name, _compute in _BINARY.items():
    globals()[_name] = ufunc(_name, 2, 1, _compute)
for _name, (_compute, _reduction, _accumulation, _identity) in _REDUCIBLE.items():
    if _reduction is None:
        globals()[_name] = ufunc(_name, 2, 1, _compute, _identity)
    else:
        globals()[_name] = _reducible_ufunc(_name, _compute, _reduction, _accumulation, _identity)
divmod = ufunc("divmod", 2, 2, _divmod)  # noqa: A001
modf = ufunc("modf", 1, 2, _modf)
bitwise_xor.identity = 0  # noqa: F821

# NumPy's other names for the same functions (NumPy 2 and the Array API).
abs = absolute  # noqa: A001,F821
bitwise_not = bitwise_invert = invert  # noqa: F821
bitwise_left_shift, bitwise_right_shift = left_shift, right_shift  # noqa: F821
conj = conjugate  # noqa: F821
acos, asin, atan, atan2 = arccos, arcsin, arctan, arctan2  # noqa: F821
acosh, asinh, atanh = arccosh, arcsinh, arctanh  # noqa: F821
pow = power  # noqa: A001,F821

__all__ += [n for n in list(_UNARY) + list(_BINARY) + list(_REDUCIBLE)] + [
    "divmod", "modf", "abs", "bitwise_not", "bitwise_invert", "bitwise_left_shift", "bitwise_right_shift", "conj",
    "acos", "asin", "atan", "atan2", "acosh", "asinh", "atanh", "pow",
]


# ------------------------------------------------------------------ functions built on the ufuncs
def clip(a, a_min=_np._NoValue, a_max=_np._NoValue, out=None, *, min=_np._NoValue, max=_np._NoValue, **kwargs):
    """``minimum(maximum(a, a_min), a_max)``, NumPy 2's dtype rules; either bound may be None."""
    lo = a_min if a_min is not _np._NoValue else (min if min is not _np._NoValue else None)
    hi = a_max if a_max is not _np._NoValue else (max if max is not _np._NoValue else None)
    if (a_min is not _np._NoValue and min is not _np._NoValue) or (a_max is not _np._NoValue and
                                                                      max is not _np._NoValue):
        raise TypeError("Passed both positional and keyword arguments for clip bounds")
    result = a if isinstance(a, Var) else asvar(a)
    if lo is not None:
        result = maximum(result, lo, **kwargs)  # noqa: F821
    if hi is not None:
        result = minimum(result, hi, **kwargs)  # noqa: F821
    if lo is None and hi is None:
        result = positive(result)  # noqa: F821
    return store(result, out)


def around(a, decimals=0, out=None):
    """Half-to-even rounding to ``decimals`` places: NumPy's rint(a * 10**d) / 10**d."""
    x = a if isinstance(a, Var) else asvar(a)
    if x.dtype.kind in "biu":
        if decimals >= 0:
            return store(positive(x), out)  # noqa: F821
        # Half to even on the integers, as NumPy computes it in the array's own dtype.
        wide = _core.cast(x, _np.float64)
        scale = _scalar(10.0 ** -decimals, wide)
        rounded = _core.binary("Mul", _core.unary("Round", _core.binary("Div", wide, scale)), scale)
        # Through int64, so that results out of the dtype's range wrap as NumPy's do.
        return store(_core.cast(_core.cast(rounded, _np.int64), x.dtype), out)
    if decimals == 0:
        return store(rint(x), out)  # noqa: F821
    scale = _scalar(10.0 ** _builtins.abs(decimals), x)
    if decimals > 0:
        return store(_core.binary("Div", _core.unary("Round", _core.binary("Mul", x, scale)), scale), out)
    return store(_core.binary("Mul", _core.unary("Round", _core.binary("Div", x, scale)), scale), out)


round = round_ = around  # noqa: A001


def fix(x, out=None):
    """Rounds toward zero, keeping the dtype (NumPy's ``fix``)."""
    return trunc(x, out=out)  # noqa: F821


def sinc(x):
    v = x if isinstance(x, Var) else asvar(x)
    if v.dtype.kind not in "f":
        v = _core.cast(v, _np.float64)
    return _sinc_core(v)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    v = x if isinstance(x, Var) else asvar(x)
    if v.dtype.kind != "f":
        return v
    info = _np.finfo(v.dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    v = _core.where(_core.unary("IsNan", v), _scalar(nan, v), v)
    inf = _core.unary("IsInf", v)
    return _core.where(inf, _core.where(_core.unary("Signbit", v), _scalar(neginf, v), _scalar(posinf, v)), v)


def real(val):
    return val if isinstance(val, Var) else asvar(val)


def imag(val):
    v = val if isinstance(val, Var) else asvar(val)
    return _core.broadcast_to(_core.scalar(0, v), tuple(v.shape))


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|a - b| <= atol + rtol * |b|, infinities equal only to themselves (NumPy's rule)."""
    a = a if isinstance(a, Var) else asvar(a)
    b = b if isinstance(b, Var) else asvar(b)
    work = _np.result_type(a.dtype, b.dtype, _np.float16)
    if work.kind != "f":
        work = _np.dtype(_np.float64)
    x, y = _core.cast(a, work), _core.cast(b, work)
    tolerance = _core.binary("Add", _scalar(atol, x), _core.binary("Mul", _scalar(rtol, x), _core.unary("Abs", y)))
    close = _core.binary("LessEqual", _core.unary("Abs", _core.binary("Sub", x, y)), tolerance)
    finite = _core.binary("LogicalAnd", _core.unary("IsFinite", x), _core.unary("IsFinite", y))
    close = _core.binary("LogicalOr", _core.binary("LogicalAnd", close, finite), _core.binary("Equal", x, y))
    if equal_nan:
        close = _core.binary("LogicalOr", close, _core.binary("LogicalAnd", _core.unary("IsNan", x),
                                                              _core.unary("IsNan", y)))
    return close


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return bool(_core.reduce("all", isclose(a, b, rtol, atol, equal_nan), None, False))


def array_equal(a1, a2, equal_nan=False):
    a = a1 if isinstance(a1, Var) else asvar(a1)
    b = a2 if isinstance(a2, Var) else asvar(a2)
    if tuple(a.shape) != tuple(b.shape):
        return False
    same = equal(a, b)  # noqa: F821
    if equal_nan and a.dtype.kind == "f" and b.dtype.kind == "f":
        same = _core.binary("LogicalOr", same, _core.binary("LogicalAnd", _core.unary("IsNan", a),
                                                            _core.unary("IsNan", b)))
    return bool(_core.reduce("all", same, None, False))


def array_equiv(a1, a2):
    a = a1 if isinstance(a1, Var) else asvar(a1)
    b = a2 if isinstance(a2, Var) else asvar(a2)
    try:
        _np.broadcast_shapes(tuple(a.shape), tuple(b.shape))
    except ValueError:
        return False
    return bool(_core.reduce("all", equal(a, b), None, False))  # noqa: F821




__all__ += ["clip", "around", "round", "round_", "fix", "sinc", "nan_to_num", "real", "imag", "isclose", "allclose",
            "array_equal", "array_equiv"]
