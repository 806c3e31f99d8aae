"""The Express layer, with the names, argument orders and defaults of MNN's ``MNN.expr``.

Differences from MNN, on purpose: ``Var.shape`` is a tuple and ``Var.dtype`` a NumPy dtype,
as in NumPy; ``const`` keeps a NumPy array's dtype (MNN casts to ``dtype``, float by default,
which is still what a Python list or number becomes).
"""
import enum as _enum

import numpy as _np

from . import _core, _host_memory
from ._core import Var

__all__ = []  # filled at the bottom


class data_format:
    """Memory layouts a Var can be in (MNN's ``expr.data_format``)."""
    NCHW = "NCHW"
    NHWC = "NHWC"
    NC4HW4 = "NC4HW4"


NCHW, NHWC, NC4HW4 = data_format.NCHW, data_format.NHWC, data_format.NC4HW4
_FORMATS = (NCHW, NHWC, NC4HW4)


class dtype:
    """Element types (MNN's ``expr.dtype`` names, plus the rest NumPy has)."""
    float = _np.dtype("float32")
    double = _np.dtype("float64")
    int = _np.dtype("int32")
    int64 = _np.dtype("int64")
    int16 = _np.dtype("int16")
    int8 = _np.dtype("int8")
    uint8 = _np.dtype("uint8")
    bool = _np.dtype("bool")
    float16 = _np.dtype("float16")
    bfloat16 = "bfloat16"


def _check_format(fmt):
    if fmt not in _FORMATS:
        raise ValueError(f"unknown data format {fmt!r}; expected one of {_FORMATS}")
    return fmt


def const(value_list, shape=None, data_format=NCHW, dtype=None):
    """A constant Var holding a copy of ``value_list`` (NumPy array, list or number)."""
    _check_format(data_format)
    if _is_raw_memory(value_list, shape):
        value_list = _raw_values(value_list, shape, dtype)
    elif dtype is None and not isinstance(value_list, (_np.ndarray, _np.generic, Var)):
        dtype = _np.float32  # MNN's default for Python lists and numbers
    v = _core.const(value_list, dtype, data_format)
    if shape is not None:
        shape = tuple(int(d) for d in shape)
        if int(_np.prod(shape, dtype=_np.int64)) != v.size:
            raise ValueError(f"const: {v.size} values do not fill shape {shape}")
        v = _core.reshape(v, shape)
    return v


def _is_raw_memory(value, shape):
    """MNN's raw forms of const's values: bytes, or an address (int or PyCapsule) with a shape
    to read. An int with a shape of one element stays a number."""
    from . import _host_memory
    if isinstance(value, (bytes, bytearray, memoryview)):
        return True
    if shape is None or not _host_memory.is_address(value):
        return False
    return _host_memory.is_capsule(value) or int(_np.prod(tuple(shape), dtype=_np.int64)) != 1


def _raw_values(value, shape, dtype):
    """The values of const's raw forms as a NumPy array of ``dtype`` (float32 by default)."""
    from . import _host_memory
    dtype = _np.dtype(_np.float32 if dtype is None else dtype)
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = memoryview(value).cast("B")
        if raw.nbytes % dtype.itemsize:
            raise ValueError(f"const: {raw.nbytes} bytes are not a whole number of {dtype} values")
        return _np.frombuffer(raw, dtype).copy()
    count = int(_np.prod(tuple(int(d) for d in shape), dtype=_np.int64))
    if count < 0:
        raise ValueError(f"const: shape {tuple(shape)} has a negative dimension")
    return _host_memory.read_bytes(value, count * dtype.itemsize, "const: value_list").view(dtype)


def scalar(value, dtype=None):
    """A 0-d constant: as in MNN, a Python int is int32 and a Python float float32 unless
    ``dtype`` says otherwise; NumPy scalars keep their dtype."""
    if dtype is None and isinstance(value, int) and not isinstance(value, bool):
        dtype = _np.int32
    return const(_np.asarray(value, dtype=dtype)) if dtype is not None else const(value)


def placeholder(shape=(), data_format=NCHW, dtype=_np.float32):
    """An input to be given a value with ``Var.write`` before evaluation."""
    _check_format(data_format)
    return _core.placeholder(tuple(int(d) for d in shape), dtype, data_format)


def cast(x, dtype):
    return _core.cast(_as_var(x), dtype)


def _as_var(x):
    return x if isinstance(x, Var) else _core.scalar(x)


def lazy_eval(on=True):
    """Kept for MNN compatibility: mnnpy is always lazy."""
    return None


def set_thread_number(n):
    _core.set_num_threads(int(n))


def gc(full=False):
    """Drop cached execution plans (MNN's ``expr.gc``)."""
    _core.clear_plan_cache()


# ---------------------------------------------------------------- elementwise math
def _unary(op):
    def f(x):
        return _core.unary(op, _as_var(x))
    return f


def _binary(op):
    def f(x, y):
        return _core.binary(op, x, y)
    return f


_UNARY = {
    "abs": "Abs", "negative": "Neg", "sign": "Sign", "square": "Square", "sqrt": "Sqrt", "rsqrt": "Rsqrt",
    "reciprocal": "Reciprocal", "exp": "Exp", "expm1": "Expm1", "log": "Log", "log1p": "Log1p",
    "sin": "Sin", "cos": "Cos", "tan": "Tan", "asin": "Asin", "acos": "Acos", "atan": "Atan",
    "sinh": "Sinh", "cosh": "Cosh", "tanh": "Tanh", "asinh": "Asinh", "acosh": "Acosh", "atanh": "Atanh",
    "floor": "Floor", "ceil": "Ceil", "round": "Round", "erf": "Erf", "erfc": "Erfc", "sigmoid": "Sigmoid",
    "softplus": "Softplus", "softsign": "Softsign", "relu6_": "Relu6", "trunc": "Trunc", "log2": "Log2",
    "log10": "Log10", "exp2": "Exp2", "cbrt": "Cbrt", "logical_not": "LogicalNot", "isnan": "IsNan",
    "isinf": "IsInf", "isfinite": "IsFinite", "bitwise_not": "BitwiseNot",
}
_BINARY = {
    "add": "Add", "subtract": "Sub", "multiply": "Mul", "divide": "Div", "floordiv": "FloorDiv",
    "floormod": "Mod", "mod": "Fmod", "pow": "Pow", "maximum": "Maximum", "minimum": "Minimum",
    "atan2": "Atan2", "squared_difference": "SquaredDifference", "equal": "Equal", "not_equal": "NotEqual",
    "less": "Less", "less_equal": "LessEqual", "greater": "Greater", "greater_equal": "GreaterEqual",
    "logical_and": "LogicalAnd", "logical_or": "LogicalOr", "logical_xor": "LogicalXor",
    "bitwise_and": "BitwiseAnd", "bitwise_or": "BitwiseOr", "bitwise_xor": "BitwiseXor",
    "left_shift": "LeftShift", "right_shift": "RightShift", "fmax": "Fmax", "fmin": "Fmin", "hypot": "Hypot",
}
for _name, _op in _UNARY.items():
    globals()[_name] = _unary(_op)
for _name, _op in _BINARY.items():
    globals()[_name] = _binary(_op)
del relu6_  # noqa: F821  (relu6 takes bounds, below)


def relu(x, slope=0.0):
    x = _as_var(x)
    if slope == 0.0:
        return _core.unary("Relu", x)
    return select(greater(x, 0), x, multiply(x, slope))


def relu6(x, min=0.0, max=6.0):
    x = _as_var(x)
    if min == 0.0 and max == 6.0:
        return _core.unary("Relu6", x)
    return minimum(maximum(x, min), max)


def gelu(x, approximate=False):
    return _core.unary("GeluTanh" if approximate else "Gelu", _as_var(x))


def selu(x, scale=1.0507009873554804934, alpha=1.6732632423543772848):
    x = _as_var(x)
    if scale == 1.0507009873554804934 and alpha == 1.6732632423543772848:
        return _core.unary("Selu", x)
    return multiply(select(greater(x, 0), x, multiply(expm1(x), alpha)), scale)


def elu(x, alpha=1.0):
    x = _as_var(x)
    return select(greater(x, 0), x, multiply(expm1(x), alpha))


def select(cond, x, y):
    """Elementwise ``x if cond else y`` with broadcasting (MNN's ``select``)."""
    return _core.where(_as_var(cond), _as_var(x), _as_var(y))


def where_(cond, x, y):
    return select(cond, x, y)


def clip(x, min, max):
    return minimum(maximum(_as_var(x), min), max)


# ---------------------------------------------------------------- reductions
def _axes(axis):
    if axis is None:
        return None
    if isinstance(axis, (int, _np.integer)):
        return [int(axis)]
    axis = [int(a) for a in axis]
    return None if len(axis) == 0 else axis


def _reduction(kind):
    def f(x, axis=[], keepdims=False):  # noqa: B006  (MNN's default: all axes)
        return _core.reduce(kind, _as_var(x), _axes(axis), bool(keepdims))
    f.__name__ = "reduce_" + kind
    return f


reduce_sum = _reduction("sum")
reduce_mean = _reduction("mean")
reduce_prod = _reduction("prod")
reduce_min = _reduction("min")
reduce_max = _reduction("max")
reduce_any = _reduction("any")
reduce_all = _reduction("all")


def argmax(x, axis=0):
    return _core.reduce("argmax", _as_var(x), None if axis is None else [int(axis)], False)


def argmin(x, axis=0):
    return _core.reduce("argmin", _as_var(x), None if axis is None else [int(axis)], False)


def reshape(x, shape, original_format=NCHW):
    return _core.reshape(_as_var(x), tuple(int(d) for d in shape))


def softmax(logits, axis=-1):
    """exp(x - max) / sum(exp(x - max)) along ``axis``."""
    x = _as_var(logits)
    e = exp(subtract(x, reduce_max(x, axis=[axis], keepdims=True)))
    return divide(e, reduce_sum(e, axis=[axis], keepdims=True))


def moments(x, axes=[2, 3], shift=None, keep_dims=True):  # noqa: B006  (MNN's default)
    """Mean and (biased) variance over ``axes``."""
    x = _as_var(x)
    mean = reduce_mean(x, axis=axes, keepdims=True)
    variance = reduce_mean(squared_difference(x, mean), axis=axes, keepdims=keep_dims)
    if not keep_dims:
        mean = reduce_mean(x, axis=axes, keepdims=False)
    return mean, variance


def bias_add(value, bias):
    """Adds a 1-D bias along the last dimension."""
    return add(_as_var(value), bias)


def clone(x, deepcopy=False):
    """A new Var with the same value; with ``deepcopy`` its value is computed now and kept."""
    y = _core.unary("Identity", _as_var(x))
    if deepcopy:
        y.fix_as_const()
    return y


def rank(x):
    return const(_np.array(_as_var(x).ndim, _np.int32))


def size(x):
    return const(_np.array(_as_var(x).size, _np.int32))


def shape(x):
    return const(_np.array(_as_var(x).shape, _np.int32))


def one_hot(indices, depth, on_value=1.0, off_value=0.0, axis=-1):
    """``on_value`` where the index equals the position along a new axis of size ``depth``."""
    indices = _as_var(indices)
    axis = axis if axis >= 0 else indices.ndim + 1 + axis
    rank = indices.ndim - axis + 1
    # Lazy positions: a depth beyond memory is refused by the core before anything is allocated.
    positions = _core.op("Iota", [], {"shape": [int(depth)] + [1] * (rank - 1), "start": 0,
                                      "strides": [1] + [0] * (rank - 1)})
    expanded = reshape(indices, indices.shape[:axis] + (1,) + indices.shape[axis:])
    hit = equal(expanded, positions)
    return select(hit, const(_np.float32(on_value)), const(_np.float32(off_value)))


def set_lazy_mode(mode):
    """Kept for MNN compatibility: mnnpy is always lazy."""
    return None


class Backend(_enum.IntEnum):
    """MNN's backends by their numbers (MNNForwardType); ``mnnpy.runtime_info()["backends"]``
    lists those this machine runs."""
    CPU = 0
    METAL = 1
    CUDA = 2
    OPENCL = 3
    OPENGL = 6
    VULKAN = 7
    HIAI = 8
    TRT = 9


CPU, METAL, CUDA, OPENCL, OPENGL, VULKAN, HIAI, TRT = (Backend.CPU, Backend.METAL, Backend.CUDA, Backend.OPENCL,
                                                      Backend.OPENGL, Backend.VULKAN, Backend.HIAI, Backend.TRT)


class PrecisionMode(_enum.IntEnum):
    """MNN's precision modes by their numbers (``set_global_executor_config``, runtime managers).
    Low_BF16 is mnnpy's "low": reduced precision where a device backend has it; the CPU computes
    float32 at every mode."""
    Normal = 0
    High = 1
    Low = 2
    Low_BF16 = 3


class MemoryMode(_enum.IntEnum):
    """MNN's memory modes (a runtime manager's ``memory`` key)."""
    Normal = 0
    High = 1
    Low = 2


class PowerMode(_enum.IntEnum):
    """MNN's power modes (a runtime manager's ``power`` key)."""
    Normal = 0
    High = 1
    Low = 2


# MNN exports the members of its three modes at module level; their numbers agree.
Normal, High, Low, Low_BF16 = PrecisionMode.Normal, PrecisionMode.High, PrecisionMode.Low, PrecisionMode.Low_BF16


class Interp_Method:
    """Interpolation methods (MNN's ``expr.Interp_Method``)."""
    BILINEAR = "BILINEAR"
    NEAREST = "NEAREST"


class Pooling_Mode:
    """Pooling modes (MNN's ``expr.Pooling_Mode``)."""
    MAXPOOL = "MAXPOOL"
    AVEPOOL = "AVEPOOL"


class PadValue_Mode:
    """How ``pad`` fills (MNN's ``expr.PadValue_Mode``); ``pad`` also takes NumPy's names."""
    CONSTANT = "CONSTANT"
    REFLECT = "REFLECT"
    SYMMETRIC = "SYMMETRIC"


BILINEAR, NEAREST = Interp_Method.BILINEAR, Interp_Method.NEAREST
MAXPOOL, AVEPOOL = Pooling_Mode.MAXPOOL, Pooling_Mode.AVEPOOL
CONSTANT, REFLECT, SYMMETRIC = PadValue_Mode.CONSTANT, PadValue_Mode.REFLECT, PadValue_Mode.SYMMETRIC

# MNN's dtype names at module level (expr.float, expr.int ...). Served by __getattr__ rather than
# defined, so that the functions of this module keep the builtins float and int, and left out of
# __all__, so that `from mnnpy.expr import *` does not hide them either.
_MODULE_DTYPES = ("float", "double", "int", "int64", "int8", "uint8")


def __getattr__(name):
    if name in _MODULE_DTYPES:
        return getattr(dtype, name)
    if name == "range":  # MNN's expr.range, kept out of this module's globals (the builtin stays)
        from ._expr_sequences import range as mnn_range
        return mnn_range
    if name == "np":  # MNN's expr.np is the NumPy module it imports
        return _np
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def set_global_executor_config(backend=0, precision=0, threadnum=None):
    """MNN's executor configuration: the backend later computations run on (as
    ``mnnpy.set_backend``; a name or ``Backend`` member), their precision (as
    ``mnnpy.set_precision``: MNN's 0 normal, 1 high, 2 low, or the name) and the thread count."""
    from . import _backend_name, _precision_name
    name, mode = _backend_name(backend), _precision_name(precision)
    _core.set_backend(name)
    if mode is not None:
        _core.set_precision(mode)
    if threadnum:
        _core.set_num_threads(int(threadnum))


# ---------------------------------------------------------------- Var methods
def _var_repr(self):
    if self.is_placeholder and not self.is_evaluated:
        return f"Var(placeholder, shape={self.shape}, dtype={self.dtype})"
    return repr(self.read())


def _var_str(self):
    if self.is_placeholder and not self.is_evaluated:
        return _var_repr(self)
    return str(self.read())


Var.__repr__ = _var_repr
Var.__str__ = _var_str
Var.__array_ufunc__ = None  # NumPy defers to Var's reflected operators: ndarray + Var -> Var
Var.__array_priority__ = 1000
Var.ptr = property(_host_memory.var_ptr)  # MNN's Var.ptr: a PyCapsule with the address of the values

from ._expr_shape import *  # noqa: E402,F401,F403
from ._expr_linalg import *  # noqa: E402,F401,F403
from ._expr_io import *  # noqa: E402,F401,F403
from ._expr_conv import *  # noqa: E402,F401,F403
from ._expr_pool import *  # noqa: E402,F401,F403
from ._expr_sort import *  # noqa: E402,F401,F403
from ._expr_grad import *  # noqa: E402,F401,F403
from ._expr_sequences import *  # noqa: E402,F401,F403
from ._expr_mnn_ops import *  # noqa: E402,F401,F403
from ._expr_weight_quant import *  # noqa: E402,F401,F403
from ._expr_sparse import *  # noqa: E402,F401,F403
from . import _var_members  # noqa: E402,F401  (MNN's graph-editing Var members)

__all__ = [n for n in globals() if not n.startswith("_") and n not in ("where_",)]

# ---------------------------------------------------------------- 8-bit integer products
from ._expr_quant import *  # noqa: E402,F401,F403
__all__ += ["matmul_integer", "qlinear_matmul", "dynamic_quant_matmul", "quantize_weight_per_column", "qlinear_conv2d"]

# ---------------------------------------------------------------- 8-bit elementwise, pooling, concat
from ._expr_int8_ops import *  # noqa: E402,F401,F403
from ._expr_int8_ops import __all__ as _int8_ops_all  # noqa: E402
__all__ += _int8_ops_all
