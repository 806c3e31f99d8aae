"""PyTorch models into mnnpy's graph without ONNX: a module is exported with torch.export (core
ATen IR after run_decompositions), a TorchScript file is frozen and inlined, and each aten op
becomes the ONNX-semantics nodes mnnpy runs (aten.convolution -> Conv, aten.addmm -> Gemm ...).
Shape arguments become int64 constants, or, where torch.export left a dimension symbolic,
Shape/Gather/arithmetic nodes that the module loader folds once input shapes are known. One
table (ATEN) serves both front ends: entries are keyed by the op's name without overload
("convolution", "add") and read their arguments by the op schema's positions. An aten op
mnnpy has no entry for becomes a node named "aten::<op>", which the converter reports."""
import operator
import os

import numpy as np

from ._graph import Graph, Node, Subgraph, ValueInfo

UNSUPPORTED_PREFIX = "aten::"
TORCH_OPSET = 18
INT64_MAX = 2 ** 63 - 1


class Tensor:
    """A tensor value of the torch graph: its name in mnnpy's graph, and its dtype and shape
    where known (None otherwise; a dimension is an int or None when symbolic)."""

    def __init__(self, name, dtype=None, shape=None):
        self.name, self.dtype, self.shape = name, dtype, shape

    def __repr__(self):
        return f"Tensor({self.name!r})"


class SymInt:
    """A size known only at run time: the name of a 1-element int64 tensor."""

    def __init__(self, name):
        self.name = name


def _numpy_dtype(dtype):
    import torch
    table = {torch.float32: np.float32, torch.float64: np.float32, torch.float16: np.float32,
             torch.bfloat16: np.float32, torch.int64: np.int64, torch.int32: np.int32, torch.int16: np.int16,
             torch.int8: np.int8, torch.uint8: np.uint8, torch.bool: np.bool_}
    if dtype not in table:
        raise ValueError(f"tensors of dtype {dtype} are not supported")
    return np.dtype(table[dtype])


class Builder:
    """The graph being written: nodes, weights, fresh names, and the op table's helpers."""

    def __init__(self):
        self.nodes, self.weights = [], {}
        self.counter = 0
        self.current = ""  # the torch node being translated, for names and messages

    def fresh(self, base=None):
        self.counter += 1
        return f"{base or self.current or 'value'}/{self.counter}"

    def add(self, op, inputs, attrs=None, outputs=1, name=None):
        """Appends a node; returns its output name (or list of names when ``outputs`` > 1)."""
        names = [self.fresh() for _ in range(outputs)] if isinstance(outputs, int) else list(outputs)
        self.nodes.append(Node(op, [self.name(x) if x is not None else "" for x in inputs], names,
                               dict(attrs or {}), name or self.fresh(f"{self.current or op}:{op}")))
        return names[0] if isinstance(outputs, int) and outputs == 1 else names

    def const(self, value, dtype=None):
        value = np.asarray(value, dtype=dtype)
        name = self.fresh(f"{self.current or 'const'}:const")
        self.weights[name] = value if value.flags.c_contiguous else value.copy()  # 0-d stays 0-d
        return name

    def name(self, x, like=None):
        """The graph name of a value: a Tensor, a SymInt, a name, or a Python number (a constant
        of ``like``'s dtype, or cast like it where that is not known)."""
        if isinstance(x, (Tensor, SymInt)):
            return x.name
        if isinstance(x, str):
            return x
        if isinstance(x, (bool, int, float)):
            return self.scalar(x, like)
        raise ValueError(f"expected a tensor or a number, got {type(x).__name__}")

    def scalar(self, value, like=None):
        if isinstance(like, Tensor) and like.dtype is not None:
            return self.const(value, _numpy_dtype(like.dtype))
        if isinstance(like, Tensor):
            return self.add("CastLike", [self.const(value, np.float32 if isinstance(value, float) else np.int64), like])
        return self.const(value, np.float32 if isinstance(value, float) else
                          (np.bool_ if isinstance(value, bool) else np.int64))

    def ints(self, values):
        """A 1-D int64 tensor of sizes, some of which may be SymInts (or a SymInt standing for the
        whole list)."""
        if isinstance(values, SymInt):
            return values.name
        if isinstance(values, Tensor):
            return self.add("Cast", [values], {"to": 7})
        values = list(values)
        if all(isinstance(v, (int, np.integer)) for v in values):
            return self.const(np.asarray(values, dtype=np.int64).reshape(-1))
        pieces, run = [], []
        for v in values:
            if isinstance(v, (int, np.integer)):
                run.append(int(v))
                continue
            if run:
                pieces.append(self.const(np.asarray(run, np.int64)))
                run = []
            pieces.append(self.sym(v))
        if run:
            pieces.append(self.const(np.asarray(run, np.int64)))
        return self.add("Concat", pieces, {"axis": 0})

    def sym(self, v):
        """A size as a 1-element int64 tensor name."""
        if isinstance(v, SymInt):
            return v.name
        if isinstance(v, Tensor):  # a 0-d tensor used as a size
            return self.add("Reshape", [self.add("Cast", [v], {"to": 7}), self.const([1], np.int64)])
        if isinstance(v, (int, np.integer)):
            return self.const(np.asarray([int(v)], np.int64))
        raise ValueError(f"expected a size, got {type(v).__name__}")

    def sym_scalar(self, v):
        """A size as a 0-d int64 tensor name (Range's bounds)."""
        if isinstance(v, (int, np.integer)):
            return self.const(np.asarray(int(v), np.int64))
        return self.add("Squeeze", [self.sym(v), self.const([0], np.int64)])

    def shape_of(self, x):
        return self.add("Shape", [x])

    def dim(self, x, axis):
        """x's size along ``axis``: an int when known, else a SymInt."""
        if isinstance(x, Tensor) and x.shape is not None and isinstance(x.shape[axis], int):
            return x.shape[axis]
        return SymInt(self.add("Gather", [self.shape_of(x), self.const([axis], np.int64)], {"axis": 0}))


# ---------------------------------------------------------------------- the op table
ATEN = {}


def aten(*names):
    def register(fn):
        for n in names:
            ATEN[n] = fn
        return fn
    return register


def _rank(x):
    return len(x.shape) if isinstance(x, Tensor) and x.shape is not None else None


def _pairs(v, n):
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return v * n if len(v) == 1 else v


_UNARY = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "exp": "Exp", "log": "Log", "sqrt": "Sqrt",
          "neg": "Neg", "abs": "Abs", "erf": "Erf", "floor": "Floor", "ceil": "Ceil", "reciprocal": "Reciprocal",
          "sin": "Sin", "cos": "Cos", "sign": "Sign", "logical_not": "Not", "bitwise_not": "Not", "round": "Round",
          "isnan": "IsNaN", "hardswish": "HardSwish", "asin": "Asin", "acos": "Acos", "atan": "Atan"}


@aten(*_UNARY)
def _unary(b, op, a):
    return b.add(_UNARY[op], [a[0]])


@aten("rsqrt")
def _rsqrt(b, op, a):
    return b.add("Reciprocal", [b.add("Sqrt", [a[0]])])


@aten("silu")
def _silu(b, op, a):
    return b.add("Mul", [a[0], b.add("Sigmoid", [a[0]])])


@aten("hardsigmoid")
def _hardsigmoid(b, op, a):
    return b.add("HardSigmoid", [a[0]], {"alpha": 1.0 / 6, "beta": 0.5})


@aten("gelu")
def _gelu(b, op, a):
    return b.add("Gelu", [a[0]], {"approximate": a[1] if len(a) > 1 and a[1] else "none"})


@aten("leaky_relu")
def _leaky_relu(b, op, a):
    return b.add("LeakyRelu", [a[0]], {"alpha": float(a[1]) if len(a) > 1 else 0.01})


@aten("elu")
def _elu(b, op, a):
    if len(a) > 2 and (a[2] != 1 or a[3] != 1):
        raise ValueError("elu with scale or input_scale other than 1 is not supported")
    return b.add("Elu", [a[0]], {"alpha": float(a[1])})


_BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "pow": "Pow", "eq": "Equal", "ne": "Equal",
           "lt": "Less", "gt": "Greater", "le": "LessOrEqual", "ge": "GreaterOrEqual", "maximum": "Max",
           "minimum": "Min", "logical_and": "And", "logical_or": "Or", "logical_xor": "Xor", "bitwise_and": "And",
           "bitwise_or": "Or", "remainder": "Mod", "fmod": "Mod", "rsub": "Sub", "floor_divide": "Div",
           "__and__": "And", "__or__": "Or", "__xor__": "Xor", "bitwise_xor": "Xor"}


@aten(*_BINARY)
def _binary(b, op, a):
    x, y = a[0], a[1]
    mode = a[2] if op == "div" and len(a) > 2 and isinstance(a[2], str) else None
    integral = [isinstance(v, Tensor) and v.dtype is not None and not v.dtype.is_floating_point for v in (x, y)]
    floating = [_is_float(v) or isinstance(v, float) for v in (x, y)]
    if any(integral) and (any(floating) or (op == "div" and mode is None and
                                            all(i or isinstance(v, int) for i, v in zip(integral, (x, y))))):
        # torch promotes integers to float here (true division, a float operand): so does the graph.
        import torch
        x, y = (Tensor(b.add("Cast", [v], {"to": 1}), torch.float32, v.shape) if i else v
                for i, v in zip(integral, (x, y)))
        a = [x, y] + list(a[2:])
    if not isinstance(x, Tensor):  # a number first (pow.Scalar)
        x = b.name(x, y)
    y = b.name(y, a[0] if isinstance(a[0], Tensor) else None)
    if op in ("add", "sub", "rsub") and len(a) > 2 and a[2] not in (1, None):
        y = b.add("Mul", [y, b.name(a[2], a[1] if isinstance(a[1], Tensor) else a[0])])
    if op == "rsub":
        x, y = y, x
    attrs = {"fmod": 1} if op == "fmod" else {}
    out = b.add(_BINARY[op], [x, y], attrs)
    if op == "ne":
        out = b.add("Not", [out])
    if op == "floor_divide":
        mode = "floor"
    if mode == "floor":
        out = b.add("Floor", [out]) if _is_float(a[0]) else _floor_int_division(b, x, y, out)
    elif mode == "trunc" and _is_float(a[0]):
        out = b.add("Mul", [b.add("Floor", [b.add("Abs", [out])]), b.add("Sign", [out])])
    return out


def _is_float(x):
    return isinstance(x, Tensor) and x.dtype is not None and x.dtype.is_floating_point


def _floor_int_division(b, x, y, truncated):
    # ONNX Div truncates integers: one less where the remainder is nonzero and the signs differ.
    remainder = b.add("Sub", [x, b.add("Mul", [truncated, y])])
    zero = b.add("CastLike", [b.const(0, np.int64), truncated])
    inexact = b.add("Not", [b.add("Equal", [remainder, zero])])
    signs_differ = b.add("Xor", [b.add("Less", [x, zero]), b.add("Less", [y, zero])])
    fix = b.add("CastLike", [b.add("And", [inexact, signs_differ]), truncated])
    return b.add("Sub", [truncated, fix])


@aten("where")
def _where(b, op, a):
    if len(a) == 1:  # where(condition): nonzero_numpy
        return _nonzero_numpy(b, op, a)
    ref = a[1] if isinstance(a[1], Tensor) else a[2]
    return b.add("Where", [a[0], b.name(a[1], ref), b.name(a[2], ref)])


@aten("masked_fill")
def _masked_fill(b, op, a):
    return b.add("Where", [a[1], b.name(a[2], a[0]), a[0]])


@aten("clamp", "clamp_min", "clamp_max", "hardtanh")
def _clamp(b, op, a):
    lo, hi = {"clamp": (a[1], a[2] if len(a) > 2 else None), "clamp_min": (a[1], None),
              "clamp_max": (None, a[1]), "hardtanh": (a[1] if len(a) > 1 else -1.0, a[2] if len(a) > 2 else 1.0)}[op]
    return b.add("Clip", [a[0], None if lo is None else b.name(lo, a[0]), None if hi is None else b.name(hi, a[0])])


@aten("_to_copy", "to", "type_as")
def _to_copy(b, op, a):
    import torch
    dtype = a[1].dtype if op == "type_as" else a[1]
    if dtype is None:
        return b.add("Identity", [a[0]])
    return b.add("Cast", [a[0]], {"to": _ONNX_TYPES[_numpy_dtype(dtype).type] if isinstance(dtype, torch.dtype)
                                  else _ONNX_TYPES[_numpy_dtype(_DTYPE_CODES[dtype]).type]})


_ONNX_TYPES = {np.float32: 1, np.uint8: 2, np.int8: 3, np.int16: 5, np.int32: 6, np.int64: 7, np.bool_: 9}


def _dtype_codes():
    import torch
    # TorchScript passes dtypes as ScalarType numbers.
    return {0: torch.uint8, 1: torch.int8, 2: torch.int16, 3: torch.int32, 4: torch.int64, 5: torch.float16,
            6: torch.float32, 7: torch.float64, 11: torch.bool, 15: torch.bfloat16}


class _LazyCodes(dict):
    def __missing__(self, key):
        self.update(_dtype_codes())
        if key not in self:
            raise ValueError(f"unknown dtype code {key}")
        return self[key]


_DTYPE_CODES = _LazyCodes()


def _torch_dtype(dtype):
    import torch
    return dtype if dtype is None or isinstance(dtype, torch.dtype) else _DTYPE_CODES[dtype]


@aten("clone", "alias", "detach", "contiguous", "lift_fresh_copy", "dropout", "feature_dropout")
def _identity(b, op, a):
    return b.add("Identity", [a[0]])


@aten("convolution", "conv2d", "conv1d", "_convolution")
def _convolution(b, op, a):
    if op in ("conv2d", "conv1d"):
        x, w, bias, stride, padding, dilation, groups = a[:7]
        transposed = False
    else:
        x, w, bias, stride, padding, dilation, transposed, _, groups = a[:9]
    if transposed:
        raise ValueError("transposed convolution is not supported")
    spatial = len(w.shape) - 2 if w.shape is not None else 2
    if isinstance(padding, str):
        raise ValueError(f"convolution padding '{padding}' is not supported; give the pad sizes")
    pads = _pairs(padding, spatial)
    return b.add("Conv", [x, w] + ([bias] if bias is not None else []),
                 {"strides": _pairs(stride, spatial), "pads": pads + pads, "dilations": _pairs(dilation, spatial),
                  "group": int(groups)})


@aten("_native_batch_norm_legit_no_training", "batch_norm", "_native_batch_norm_legit")
def _batch_norm(b, op, a):
    x, weight, bias, mean, var = a[:5]
    if op == "_native_batch_norm_legit" and a[5]:
        raise ValueError("batch norm in training mode is not supported (inference only)")
    eps = a[6] if op != "batch_norm" else a[7]
    if op == "batch_norm" and a[5]:
        raise ValueError("batch norm in training mode is not supported (inference only)")
    channels = mean.shape[0] if mean is not None and mean.shape else None
    if weight is None:
        weight = b.const(np.ones(channels, np.float32))
    if bias is None:
        bias = b.const(np.zeros(channels, np.float32))
    y = b.add("BatchNormalization", [x, weight, bias, mean, var], {"epsilon": float(eps)})
    return y if op == "batch_norm" else (y, None, None)


@aten("native_layer_norm", "layer_norm")
def _layer_norm(b, op, a):
    x, shape, weight, bias, eps = a[:5]
    axis = -len(shape)
    if weight is None:
        weight = b.add("ConstantOfShape", [b.ints(shape)], {"value": np.ones(1, np.float32)})
    y = b.add("LayerNormalization", [x, weight] + ([bias] if bias is not None else []),
              {"axis": axis, "epsilon": float(eps)})
    return y if op == "layer_norm" else (y, None, None)


@aten("group_norm", "native_group_norm")
def _group_norm(b, op, a):
    if op == "group_norm":
        x, groups, weight, bias, eps = a[:5]
    else:
        x, weight, bias, _, _, _, groups, eps = a[:8]
    rank = _rank(x)
    if rank is None:
        raise ValueError("group norm needs the input's rank")
    grouped = b.add("Reshape", [x, b.ints([0, int(groups), -1])])
    one = b.const(np.ones(1, np.float32))
    normed = b.add("LayerNormalization", [grouped, one], {"axis": 2, "epsilon": float(eps)})
    y = b.add("Reshape", [normed, b.shape_of(x)])
    shape = b.ints([-1] + [1] * (rank - 2))
    if weight is not None:
        y = b.add("Mul", [y, b.add("Reshape", [weight, shape])])
    if bias is not None:
        y = b.add("Add", [y, b.add("Reshape", [bias, shape])])
    return y if op == "group_norm" else (y, None, None)


@aten("addmm")
def _addmm(b, op, a):
    bias, m1, m2 = a[:3]
    beta, alpha = (a[3] if len(a) > 3 else 1), (a[4] if len(a) > 4 else 1)
    return b.add("Gemm", [m1, m2, bias], {"alpha": float(alpha), "beta": float(beta)})


@aten("mm", "bmm", "matmul")
def _matmul(b, op, a):
    return b.add("MatMul", [a[0], a[1]])


@aten("linear")
def _linear(b, op, a):
    x, w, bias = a[0], a[1], a[2] if len(a) > 2 else None
    wt = _permute(b, "permute", [w, [1, 0]])
    y = b.add("MatMul", [x, wt])
    return b.add("Add", [y, bias]) if bias is not None else y


@aten("baddbmm")
def _baddbmm(b, op, a):
    y = b.add("MatMul", [a[1], a[2]])
    beta, alpha = (a[3] if len(a) > 3 else 1), (a[4] if len(a) > 4 else 1)
    if alpha != 1:
        y = b.add("Mul", [y, b.name(float(alpha), a[1])])
    base = a[0] if beta == 1 else b.add("Mul", [a[0], b.name(float(beta), a[0])])
    return y if beta == 0 else b.add("Add", [y, base])


@aten("max_pool2d_with_indices", "max_pool2d")
def _max_pool(b, op, a):
    x, kernel = a[0], _pairs(a[1], 2)
    stride = _pairs(a[2], 2) if len(a) > 2 and a[2] else kernel
    padding = _pairs(a[3], 2) if len(a) > 3 else [0, 0]
    dilation = _pairs(a[4], 2) if len(a) > 4 else [1, 1]
    ceil = bool(a[5]) if len(a) > 5 else False
    y = b.add("MaxPool", [x], {"kernel_shape": kernel, "strides": stride, "pads": padding + padding,
                              "dilations": dilation, "ceil_mode": int(ceil)})
    return (y, None) if op == "max_pool2d_with_indices" else y


@aten("avg_pool2d")
def _avg_pool(b, op, a):
    x, kernel = a[0], _pairs(a[1], 2)
    stride = _pairs(a[2], 2) if len(a) > 2 and a[2] else kernel
    padding = _pairs(a[3], 2) if len(a) > 3 else [0, 0]
    ceil = bool(a[4]) if len(a) > 4 else False
    include = bool(a[5]) if len(a) > 5 else True
    if len(a) > 6 and a[6] is not None:
        raise ValueError("avg_pool2d with divisor_override is not supported")
    return b.add("AveragePool", [x], {"kernel_shape": kernel, "strides": stride, "pads": padding + padding,
                                      "ceil_mode": int(ceil), "count_include_pad": int(include)})


@aten("_adaptive_avg_pool2d", "adaptive_avg_pool2d")
def _adaptive_avg_pool(b, op, a):
    x, size = a[0], _pairs(a[1], 2)
    if list(size) == [1, 1]:
        return b.add("GlobalAveragePool", [x])
    hw = x.shape[2:] if x.shape is not None else [None, None]
    if not all(isinstance(d, int) and isinstance(s, int) and d % s == 0 for d, s in zip(hw, size)):
        raise ValueError(f"adaptive average pooling of {hw} to {size} is supported only where the sizes divide")
    kernel = [d // s for d, s in zip(hw, size)]
    return b.add("AveragePool", [x], {"kernel_shape": kernel, "strides": kernel})


@aten("upsample_bilinear2d", "upsample_nearest2d")
def _upsample(b, op, a):
    x = a[0]
    if op == "upsample_bilinear2d":
        size, align, scales = a[1], bool(a[2]), a[3] if len(a) > 3 else None
        attrs = {"mode": "linear", "coordinate_transformation_mode": "align_corners" if align else "pytorch_half_pixel"}
    else:
        size, scales = a[1], a[2] if len(a) > 2 else None
        attrs = {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}
    if isinstance(scales, (list, tuple)) and len(scales) == 1:
        scales = list(scales) * 2
    if size is not None and not (isinstance(size, (list, tuple)) and len(size) == 0):
        batch_channels = b.add("Slice", [b.shape_of(x), b.ints([0]), b.ints([2])])
        sizes = b.add("Concat", [batch_channels, b.ints(list(size))], {"axis": 0})
        return b.add("Resize", [x, None, None, sizes], attrs)
    if scales is None:
        raise ValueError("upsampling needs an output size or scale factors")
    return b.add("Resize", [x, None, b.const([1.0, 1.0] + [float(s) for s in scales], np.float32)], attrs)


@aten("mean", "sum", "amax", "amin", "prod", "any", "all")
def _reduce(b, op, a):
    # By schema arity: mean.dim / sum.dim_IntList / prod.dim_int (self, dim, keepdim, dtype),
    # amax / any.dim (self, dim, keepdim), and the whole-tensor forms (self[, dtype]).
    x = a[0]
    dims, keep, dtype = None, False, None
    if len(a) >= 3:
        dims, keep = a[1], bool(a[2])
        dtype = a[3] if len(a) > 3 else None
    elif len(a) == 2:
        dtype = a[1]
    dims = [dims] if isinstance(dims, int) else dims
    onnx_op = {"mean": "ReduceMean", "sum": "ReduceSum", "amax": "ReduceMax", "amin": "ReduceMin",
               "prod": "ReduceProd", "any": "ReduceMax", "all": "ReduceMin"}[op]
    source = x
    if op in ("any", "all"):
        source = b.add("Cast", [x], {"to": 6})
    elif dtype is not None:
        source = b.add("Cast", [x], {"to": _ONNX_TYPES[_numpy_dtype(_torch_dtype(dtype)).type]})
    elif op in ("sum", "prod") and x.dtype is not None and not x.dtype.is_floating_point:
        source = b.add("Cast", [x], {"to": 7})  # torch sums integers and booleans as int64
    y = b.add(onnx_op, [source] + ([b.ints(dims)] if dims else []), {"keepdims": int(keep)})
    return b.add("Cast", [y], {"to": 9}) if op in ("any", "all") else y


@aten("argmax", "argmin")
def _argmax(b, op, a):
    x, dim, keep = a[0], a[1] if len(a) > 1 else None, bool(a[2]) if len(a) > 2 else False
    if dim is None:
        x, dim, keep = b.add("Reshape", [x, b.ints([-1])]), 0, False
    return b.add("ArgMax" if op == "argmax" else "ArgMin", [x], {"axis": int(dim), "keepdims": int(keep)})


@aten("_softmax", "softmax", "_log_softmax", "log_softmax")
def _softmax(b, op, a):
    onnx_op = "LogSoftmax" if "log" in op else "Softmax"
    return b.add(onnx_op, [a[0]], {"axis": int(a[1])})


@aten("view", "reshape", "_unsafe_view", "_reshape_alias")
def _view(b, op, a):
    return b.add("Reshape", [a[0], b.ints(a[1])], {"allowzero": 1})


@aten("flatten")
def _flatten(b, op, a):
    x, start, end = a[0], a[1] if len(a) > 1 else 0, a[2] if len(a) > 2 else -1
    rank = _rank(x)
    if rank is None:
        if end != -1 or start < 0:
            raise ValueError("flatten needs the input's rank")
        return b.add("Reshape", [x, b.ints([0] * start + [-1])])
    start, end = start % max(rank, 1), end % max(rank, 1)
    # Leading dimensions as 0 (Reshape copies them): no batch size is built in.
    shape = [0] * start + [-1] + [b.dim(x, i) for i in range(end + 1, rank)]
    return b.add("Reshape", [x, b.ints(shape)])


@aten("unflatten")
def _unflatten(b, op, a):
    x, dim, sizes = a[0], int(a[1]), list(a[2])
    rank = _rank(x)
    if rank is None:
        raise ValueError("unflatten needs the input's rank")
    dim %= rank
    # Leading dimensions as 0 (Reshape copies them).
    return b.add("Reshape", [x, b.ints([0] * dim + sizes + [b.dim(x, i) for i in range(dim + 1, rank)])])


@aten("permute")
def _permute(b, op, a):
    if isinstance(a[0], Tensor) and a[0].name in b.weights:  # a weight (linear's): transposed once here
        return b.const(np.transpose(b.weights[a[0].name], [int(p) for p in a[1]]))
    return b.add("Transpose", [a[0]], {"perm": [int(p) for p in a[1]]})


@aten("t", "numpy_T")
def _t(b, op, a):
    rank = _rank(a[0])
    return b.add("Transpose", [a[0]], {"perm": [1, 0]} if rank == 2 else {})


@aten("transpose")
def _transpose(b, op, a):
    x, d0, d1 = a[0], a[1], a[2]
    rank = _rank(x)
    if rank is None:
        raise ValueError("transpose needs the input's rank")
    perm = list(range(rank))
    perm[d0 % rank], perm[d1 % rank] = perm[d1 % rank], perm[d0 % rank]
    return b.add("Transpose", [x], {"perm": perm})


@aten("expand", "expand_as", "broadcast_to")
def _expand(b, op, a):
    x, sizes = a[0], a[1]
    if op == "expand_as":
        return b.add("Expand", [x, b.shape_of(sizes)])
    # -1 keeps the input's size: Expand's bidirectional broadcasting does that for a 1.
    return b.add("Expand", [x, b.ints([1 if isinstance(s, int) and s == -1 else s for s in sizes])])


@aten("repeat")
def _repeat(b, op, a):
    x, repeats = a[0], list(a[1])
    rank = _rank(x)
    if rank is not None and len(repeats) > rank:
        x = b.add("Reshape", [x, b.ints([1] * (len(repeats) - rank) + [b.dim(a[0], i) for i in range(rank)])])
    return b.add("Tile", [x, b.ints(repeats)])


@aten("cat", "concat")
def _cat(b, op, a):
    tensors = [t for t in a[0] if not (isinstance(t, Tensor) and t.shape is not None and list(t.shape) == [0])]
    return b.add("Concat", tensors, {"axis": int(a[1]) if len(a) > 1 else 0})


@aten("stack")
def _stack(b, op, a):
    dim = int(a[1]) if len(a) > 1 else 0
    parts = [b.add("Unsqueeze", [t, b.ints([dim])]) for t in a[0]]
    return b.add("Concat", parts, {"axis": dim})


@aten("unsqueeze")
def _unsqueeze(b, op, a):
    return b.add("Unsqueeze", [a[0], b.ints([a[1]])])


@aten("squeeze")
def _squeeze(b, op, a):
    x = a[0]
    dims = a[1] if len(a) > 1 else None
    if dims is None:
        return b.add("Squeeze", [x])
    dims = [dims] if isinstance(dims, int) else list(dims)
    if x.shape is not None:  # torch leaves dimensions other than 1 in place
        dims = [d for d in dims if x.shape[d] == 1]
        if not dims:
            return b.add("Identity", [x])
    return b.add("Squeeze", [x, b.ints(dims)])


@aten("select")
def _select(b, op, a):
    x, dim, index = a
    size = x.shape[dim] if x.shape is not None else None
    if isinstance(index, int) and index < 0 and isinstance(size, int):
        index += size  # counted from the front, as the Gather kernel takes it
    return b.add("Gather", [x, b.sym_scalar(index)], {"axis": int(dim)})


@aten("slice")
def _slice(b, op, a):
    x, dim = a[0], a[1] if len(a) > 1 else 0
    start = a[2] if len(a) > 2 and a[2] is not None else 0
    end = a[3] if len(a) > 3 and a[3] is not None else INT64_MAX
    step = a[4] if len(a) > 4 else 1
    if isinstance(start, int) and start == 0 and isinstance(end, int) and end >= INT64_MAX and step == 1:
        return b.add("Identity", [x])
    return b.add("Slice", [x, b.ints([start]), b.ints([min(end, INT64_MAX) if isinstance(end, int) else end]),
                           b.ints([dim]), b.ints([step])])


@aten("slice_scatter")
def _slice_scatter(b, op, a):
    # slice_scatter(self, src, dim, start, end, step): self with self[start:end] along dim replaced.
    x, src = a[0], a[1]
    dim = int(a[2]) if len(a) > 2 else 0
    start = a[3] if len(a) > 3 and a[3] is not None else 0
    end = a[4] if len(a) > 4 and a[4] is not None else INT64_MAX
    step = a[5] if len(a) > 5 else 1
    if step != 1 or not isinstance(start, int) or not isinstance(end, int):
        raise ValueError("slice_scatter is supported with step 1 and constant bounds")
    size = x.shape[dim] if x.shape is not None else None
    if not isinstance(size, int):
        raise ValueError("slice_scatter needs the input's size along the axis")
    start, end = [min(max(v + size if v < 0 else v, 0), size) for v in (start, end)]
    parts = []
    if start > 0:
        parts.append(b.add("Slice", [x, b.ints([0]), b.ints([start]), b.ints([dim])]))
    parts.append(b.add("CastLike", [src, x]))
    if end < size:
        parts.append(b.add("Slice", [x, b.ints([end]), b.ints([size]), b.ints([dim])]))
    return b.add("Concat", parts, {"axis": dim})


@aten("as_strided")
def _as_strided(b, op, a):
    x, size = a[0], list(a[1])
    offset = a[3] if len(a) > 3 and a[3] is not None else 0
    # A restride that keeps the shape of a tensor with at most one dimension above 1 (a memory
    # format change, as decompositions write after pooling) reads the same values in the same order.
    if x.shape is not None and list(x.shape) == size and offset == 0 and sum(d != 1 for d in size) <= 1:
        return b.add("Identity", [x])
    raise ValueError("as_strided is supported only where it keeps the values in place (a memory format "
                     f"change of a tensor with at most one dimension above 1); got size {size}, stride {list(a[2])}")


@aten("narrow")
def _narrow(b, op, a):
    x, dim, start, length = a
    end = start + length if isinstance(start, int) and isinstance(length, int) else \
        SymInt(b.add("Add", [b.sym(start), b.sym(length)]))
    return b.add("Slice", [x, b.ints([start]), b.ints([end]), b.ints([dim])])


@aten("split_with_sizes", "split")
def _split(b, op, a):
    x, sizes, dim = a[0], a[1], int(a[2]) if len(a) > 2 else 0
    if isinstance(sizes, int):  # split.Tensor: pieces of one size, the last one smaller
        total = x.shape[dim] if x.shape is not None else None
        if not isinstance(total, int):
            raise ValueError("split into equal pieces needs the input's size along the axis")
        sizes = [sizes] * (total // sizes) + ([total % sizes] if total % sizes else [])
    pieces = b.add("Split", [x, b.ints(sizes)], {"axis": dim}, outputs=[b.fresh() for _ in sizes])
    return tuple(pieces)


@aten("chunk")
def _chunk(b, op, a):
    x, chunks, dim = a[0], int(a[1]), int(a[2]) if len(a) > 2 else 0
    total = x.shape[dim] if x.shape is not None else None
    if not isinstance(total, int):
        raise ValueError("chunk needs the input's size along the axis")
    size = -(-total // chunks)
    return _split(b, "split", [x, size, dim])


@aten("unbind")
def _unbind(b, op, a):
    x, dim = a[0], int(a[1]) if len(a) > 1 else 0
    count = x.shape[dim] if x.shape is not None else None
    if not isinstance(count, int):
        raise ValueError("unbind needs the input's size along the axis")
    return tuple(b.add("Gather", [x, b.const(i, np.int64)], {"axis": dim}) for i in range(count))


@aten("embedding")
def _embedding(b, op, a):
    return b.add("Gather", [a[0], a[1]], {"axis": 0})


@aten("index_select")
def _index_select(b, op, a):
    return b.add("Gather", [a[0], a[2]], {"axis": int(a[1])})


@aten("gather")
def _gather(b, op, a):
    return b.add("GatherElements", [a[0], a[2]], {"axis": int(a[1])})


@aten("index")
def _index(b, op, a):
    x, indices = a[0], list(a[1])
    used = [(i, t) for i, t in enumerate(indices) if t is not None]
    if any(_is_bool(t) for _, t in used):
        return _index_by_mask(b, x, used)
    if len(used) == 1:
        axis, idx = used[0]
        return b.add("Gather", [x, idx], {"axis": axis})
    rank, index_rank = _rank(x), max((_rank(t) for _, t in used), default=None)
    if rank is None or index_rank is None:
        raise ValueError("indexing with several index tensors needs the ranks of the input and the indices")
    # The indexed axes go first, the index tensors (broadcast together) are stacked for GatherND.
    axes = [i for i, _ in used]
    others = [i for i in range(rank) if i not in axes]
    front = b.add("Transpose", [x], {"perm": axes + others})
    longs = [b.add("Cast", [t], {"to": 7}) for _, t in used]
    zero = b.const(np.asarray(0, np.int64))
    broadcast = longs[0] if len(longs) == 1 else b.add("Sum", [b.add("Mul", [t, zero]) for t in longs])
    stacked = b.add("Concat", [b.add("Unsqueeze", [b.add("Add", [t, broadcast]), b.ints([-1])]) for t in longs],
                    {"axis": -1})
    y = b.add("GatherND", [front, stacked])
    start = axes[0]
    if axes == list(range(start, start + len(axes))) and start > 0:
        # Adjacent indexed axes keep their place (torch's rule); apart, they lead.
        perm = list(range(index_rank, index_rank + start)) + list(range(index_rank)) + \
            list(range(index_rank + start, index_rank + len(others)))
        y = b.add("Transpose", [y], {"perm": perm})
    return y


def _is_bool(t):
    return isinstance(t, Tensor) and t.dtype is not None and str(t.dtype) == "torch.bool"


def _index_by_mask(b, x, used):
    """x[mask]: the elements where a boolean mask over the leading axes holds, in row-major
    order (NonZero, so the result's length is known only at run time)."""
    if len(used) != 1 or used[0][0] != 0:
        raise ValueError("a boolean mask index is supported alone and over the leading axes only")
    mask = used[0][1]
    rank = _rank(mask)
    if rank is None:
        raise ValueError("indexing with a boolean mask needs the mask's rank")
    positions = b.add("NonZero", [mask])  # [rank, count]
    if rank == 1:
        return b.add("Gather", [x, b.add("Squeeze", [positions, b.ints([0])])], {"axis": 0})
    return b.add("GatherND", [x, b.add("Transpose", [positions], {"perm": [1, 0]})])


@aten("nonzero")
def _nonzero(b, op, a):
    return b.add("Transpose", [b.add("NonZero", [a[0]])], {"perm": [1, 0]})


@aten("scatter", "scatter_add", "scatter_reduce")
def _scatter(b, op, a):
    x, dim, index, src = a[0], int(a[1]), a[2], a[3]
    reduction = {"scatter_add": "add"}.get(op, "none")
    if op == "scatter_reduce":
        reduction = {"sum": "add", "prod": "mul", "amax": "max", "amin": "min"}.get(a[4])
        if reduction is None or (len(a) > 5 and a[5] is False):
            raise ValueError(f"scatter_reduce with reduce={a[4]!r} and include_self={a[5] if len(a) > 5 else True} "
                             "is not supported")
    elif op == "scatter" and len(a) > 4 and a[4] is not None:
        reduction = {"add": "add", "multiply": "mul"}.get(a[4])
        if reduction is None:
            raise ValueError(f"scatter with reduce={a[4]!r} is not supported")
    if not isinstance(src, Tensor):  # scatter.value: one number everywhere the index points
        src = b.add("Expand", [b.name(src, x), b.shape_of(index)])
    return b.add("ScatterElements", [x, index, src], {"axis": dim, "reduction": reduction})


@aten("nonzero_numpy")
def _nonzero_numpy(b, op, a):
    rank = _rank(a[0])
    if rank is None:
        raise ValueError("where(condition) needs the condition's rank")
    positions = b.add("NonZero", [a[0]])
    return [b.add("Squeeze", [b.add("Slice", [positions, b.ints([i]), b.ints([i + 1]), b.ints([0])]), b.ints([0])])
            for i in range(rank)]


@aten("meshgrid")
def _meshgrid(b, op, a):
    tensors = list(a[0])
    indexing = a[1] if len(a) > 1 and a[1] is not None else "ij"
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid indexing must be 'ij' or 'xy', got {indexing!r}")
    if any(_rank(t) not in (0, 1) for t in tensors):
        raise ValueError("meshgrid takes 0-d or 1-d tensors")
    flat = [b.add("Reshape", [t, b.ints([-1])]) for t in tensors]
    order = list(range(len(flat)))
    if indexing == "xy" and len(flat) > 1:
        order[0], order[1] = 1, 0  # the first two inputs vary along the second and first axes
    sizes = [b.dim(t, 0) for t in flat]
    full = b.ints([sizes[k] for k in order])
    outputs = []
    for i, t in enumerate(flat):
        shape = [1] * len(flat)
        shape[order.index(i)] = -1
        outputs.append(b.add("Expand", [b.add("Reshape", [t, b.ints(shape)]), full]))
    return outputs


@aten("_shape_as_tensor")
def _shape_as_tensor(b, op, a):
    return b.shape_of(a[0])


@aten("torchvision::nms")
def _torchvision_nms(b, op, a):
    # torchvision.ops.nms: indices of the kept boxes ([x1, y1, x2, y2]) by decreasing score.
    boxes, scores, iou = a[0], a[1], float(a[2])
    selected = b.add("NonMaxSuppression", [b.add("Unsqueeze", [boxes, b.ints([0])]),
                                          b.add("Reshape", [scores, b.ints([1, 1, -1])]),
                                          b.ints([INT64_MAX]), b.const(np.asarray([iou], np.float32))])
    return b.add("Squeeze", [b.add("Slice", [selected, b.ints([2]), b.ints([3]), b.ints([1])]), b.ints([1])])


@aten("torchvision::roi_align")
def _torchvision_roi_align(b, op, a):
    # rois [K, 5]: the image index, then x1, y1, x2, y2 in input coordinates.
    x, rois, scale, height, width, sampling, aligned = a[:7]
    if _rank(x) != 4:
        raise ValueError("roi_align takes a 4-d input")
    boxes = b.add("Slice", [rois, b.ints([1]), b.ints([5]), b.ints([1])])
    batch = b.add("Cast", [b.add("Squeeze", [b.add("Slice", [rois, b.ints([0]), b.ints([1]), b.ints([1])]),
                                             b.ints([1])])], {"to": 7})
    return b.add("RoiAlign", [x, boxes, batch], {
        "spatial_scale": float(scale), "output_height": int(height), "output_width": int(width),
        "sampling_ratio": int(sampling), "mode": "avg",
        "coordinate_transformation_mode": "half_pixel" if aligned else "output_half_pixel"})


@aten("constant_pad_nd", "pad")
def _pad(b, op, a):
    x, pad = a[0], list(a[1])
    mode = a[2] if op == "pad" and len(a) > 2 else "constant"
    value = (a[3] if op == "pad" else a[2]) if len(a) > (3 if op == "pad" else 2) else 0
    rank = _rank(x)
    if rank is None:
        raise ValueError("padding needs the input's rank")
    begins, ends = [0] * rank, [0] * rank
    for i in range(len(pad) // 2):  # torch lists the last dimension first
        begins[rank - 1 - i], ends[rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
    onnx_mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}.get(mode)
    if onnx_mode is None:
        raise ValueError(f"pad mode '{mode}' is not supported")
    return b.add("Pad", [x, b.ints(begins + ends), b.name(value or 0, x)], {"mode": onnx_mode})


@aten("reflection_pad2d", "replication_pad2d")
def _reflection_pad(b, op, a):
    return _pad(b, "pad", [a[0], a[1], "reflect" if op.startswith("reflection") else "replicate"])


@aten("full", "zeros", "ones", "empty", "new_zeros", "new_ones", "new_full", "new_empty")
def _full(b, op, a):
    like = None
    if op.startswith("new_"):  # new_zeros(self, size, ...): self's dtype unless one is given
        like, a, op = a[0], a[1:], op[4:]
    size = a[0]
    value = a[1] if op == "full" else (1 if op == "ones" else 0)
    dtype = _torch_dtype((a[2] if op == "full" else a[1]) if len(a) > (2 if op == "full" else 1) else None)
    if dtype is None and like is not None:
        dtype = like.dtype
    np_dtype = _numpy_dtype(dtype) if dtype is not None else \
        (np.dtype(np.float32) if isinstance(value, float) else np.dtype(np.bool_) if isinstance(value, bool)
         else np.dtype(np.float32) if op != "full" else np.dtype(np.int64))
    if all(isinstance(s, int) for s in size):
        return b.const(np.full([int(s) for s in size], value, np_dtype))
    return b.add("Expand", [b.const(np.asarray(value, np_dtype)), b.ints(size)])


@aten("full_like", "zeros_like", "ones_like", "empty_like")
def _full_like(b, op, a):
    x = a[0]
    value = a[1] if op == "full_like" else (1 if op == "ones_like" else 0)
    position = 2 if op == "full_like" else 1  # full_like(self, value, dtype, ...), zeros_like(self, dtype, ...)
    dtype = _torch_dtype(a[position] if len(a) > position else None)
    if dtype is not None:
        scalar = b.const(np.asarray(value, _numpy_dtype(dtype)))
    else:
        scalar = b.name(value, x)
    return b.add("Expand", [scalar, b.shape_of(x)])


@aten("scalar_tensor")
def _scalar_tensor(b, op, a):
    dtype = _torch_dtype(a[1] if len(a) > 1 else None)
    return b.const(np.asarray(a[0], _numpy_dtype(dtype) if dtype is not None else np.float32))


@aten("arange")
def _arange(b, op, a):
    # arange(end, ...), arange.start(start, end, ...), arange.start_step(start, end, step, ...):
    # one, two or three numbers, then dtype, layout, device and pin_memory, by schema position in
    # both front ends.
    count = {5: 1, 6: 2, 7: 3}.get(len(a))
    if count is None:
        raise ValueError(f"arange with {len(a)} arguments is not supported")
    numbers, dtype = a[:count], _torch_dtype(a[count])
    start, end, step = ([0] + numbers + [1])[:3] if count == 1 else (numbers + [1])[:3]
    floats = any(isinstance(v, float) for v in (start, end, step))
    np_dtype = _numpy_dtype(dtype) if dtype is not None else np.dtype(np.float32 if floats else np.int64)
    if all(isinstance(v, (int, float)) for v in (start, end, step)):
        return b.const(np.arange(start, end, step).astype(np_dtype))
    if np_dtype != np.int64 or floats:
        raise ValueError("arange with sizes known only at run time is supported for integers only")
    return b.add("Range", [b.sym_scalar(start), b.sym_scalar(end), b.sym_scalar(step)])


@aten("var")
def _var(b, op, a):
    # var.correction(self, dim, correction, keepdim); TorchScript's var.dim(self, dim, unbiased, keepdim)
    x, dims = a[0], a[1]
    correction = a[2] if len(a) > 2 else 1
    correction = 0 if correction is None else (int(correction) if not isinstance(correction, bool) else int(correction))
    keep = bool(a[3]) if len(a) > 3 else False
    dims = [dims] if isinstance(dims, int) else list(dims or [])
    axes = [b.ints(dims)] if dims else []
    mean = b.add("ReduceMean", [x] + axes, {"keepdims": 1})
    centered = b.add("Sub", [x, mean])
    total = b.add("ReduceSum", [b.add("Mul", [centered, centered])] + axes, {"keepdims": int(keep)})
    rank = _rank(x)
    if x.shape is None or any(not isinstance(x.shape[d], int) for d in (dims or range(rank or 0))) or rank is None:
        raise ValueError("variance needs the sizes of the reduced axes")
    count = int(np.prod([x.shape[d] for d in (dims or range(rank))]))
    return b.add("Div", [total, b.name(float(max(count - correction, 0)), x)])


@aten("diff")
def _diff(b, op, a):
    x, n, dim = a[0], a[1] if len(a) > 1 else 1, a[2] if len(a) > 2 else -1
    if n != 1:
        raise ValueError("diff is supported with n=1")
    prepend, append = (a[3] if len(a) > 3 else None), (a[4] if len(a) > 4 else None)
    if prepend is not None or append is not None:
        parts = [p for p in (prepend, x, append) if p is not None]
        x = Tensor(b.add("Concat", parts, {"axis": int(dim)}), x.dtype, None)
    later = b.add("Slice", [x, b.ints([1]), b.ints([INT64_MAX]), b.ints([dim])])
    earlier = b.add("Slice", [x, b.ints([0]), b.ints([-1]), b.ints([dim])])
    if x.dtype is not None and str(x.dtype) == "torch.bool":
        return b.add("Xor", [later, earlier])
    return b.add("Sub", [later, earlier])


@aten("log1p", "expm1")
def _log1p(b, op, a):
    one = b.name(1.0, a[0])
    if op == "log1p":
        return b.add("Log", [b.add("Add", [a[0], one])])
    return b.add("Sub", [b.add("Exp", [a[0]]), one])


@aten("log2", "log10")
def _log_base(b, op, a):
    return b.add("Mul", [b.add("Log", [a[0]]), b.name(float(1 / np.log(2.0 if op == "log2" else 10.0)), a[0])])


@aten("trunc")
def _trunc(b, op, a):
    return b.add("Mul", [b.add("Floor", [b.add("Abs", [a[0]])]), b.add("Sign", [a[0]])])


@aten("softplus")
def _softplus(b, op, a):
    x, beta, threshold = a[0], a[1] if len(a) > 1 else 1, a[2] if len(a) > 2 else 20
    scaled = x if beta == 1 else b.add("Mul", [x, b.name(float(beta), x)])
    soft = b.add("Softplus", [scaled])
    if beta != 1:
        soft = b.add("Div", [soft, b.name(float(beta), x)])
    # Above the threshold torch returns x itself.
    return b.add("Where", [b.add("Greater", [scaled, b.name(float(threshold), x)]), x, soft])


@aten("fill", "copy")
def _fill(b, op, a):
    value = a[1]
    source = b.add("CastLike", [value, a[0]]) if isinstance(value, Tensor) else b.name(value, a[0])
    return b.add("Expand", [source, b.shape_of(a[0])])


@aten("_prelu_kernel", "prelu")
def _prelu(b, op, a):
    x, weight = a[0], a[1]
    rank = _rank(x)
    if rank is not None and rank > 2 and weight.shape is not None and len(weight.shape) == 1:
        weight = b.add("Reshape", [weight, b.ints([-1] + [1] * (rank - 2))])
    return b.add("PRelu", [x, weight])


@aten("pixel_shuffle")
def _pixel_shuffle(b, op, a):
    return b.add("DepthToSpace", [a[0]], {"blocksize": int(a[1]), "mode": "CRD"})


@aten("cumsum")
def _cumsum(b, op, a):
    return b.add("CumSum", [a[0], b.const(int(a[1]), np.int64)])


@aten("tril", "triu")
def _tril(b, op, a):
    k = a[1] if len(a) > 1 else 0
    return b.add("Trilu", [a[0], b.const(int(k), np.int64)], {"upper": int(op == "triu")})


@aten("topk")
def _topk(b, op, a):
    x, k = a[0], a[1]
    dim, largest, ordered = (a[2] if len(a) > 2 else -1), (a[3] if len(a) > 3 else True), (a[4] if len(a) > 4 else True)
    return tuple(b.add("TopK", [x, b.ints([k])], {"axis": int(dim), "largest": int(largest), "sorted": int(ordered)},
                       outputs=2))


@aten("max", "min")
def _max(b, op, a):
    if len(a) == 1:  # max(): the whole tensor
        return b.add("ReduceMax" if op == "max" else "ReduceMin", [a[0]], {"keepdims": 0})
    if isinstance(a[1], Tensor):  # max.other
        return b.add("Max" if op == "max" else "Min", [a[0], a[1]])
    dim, keep = int(a[1]), int(bool(a[2])) if len(a) > 2 else 0
    values = b.add("ReduceMax" if op == "max" else "ReduceMin", [a[0], b.ints([dim])], {"keepdims": keep})
    indices = b.add("ArgMax" if op == "max" else "ArgMin", [a[0]], {"axis": dim, "keepdims": keep})
    return values, indices


@aten("scaled_dot_product_attention")
def _sdpa(b, op, a):
    q, k, v = a[:3]
    mask = a[3] if len(a) > 3 else None
    causal = bool(a[5]) if len(a) > 5 else False
    scale = a[6] if len(a) > 6 else None
    if causal:
        raise ValueError("causal scaled_dot_product_attention is not supported; give the mask")
    if scale is None:
        head = q.shape[-1] if q.shape is not None else None
        if not isinstance(head, int):
            raise ValueError("scaled_dot_product_attention needs the head size")
        scale = 1.0 / np.sqrt(head)
    rank = _rank(k)
    kt = b.add("Transpose", [k], {"perm": list(range(rank - 2)) + [rank - 1, rank - 2]})
    scores = b.add("Mul", [b.add("MatMul", [q, kt]), b.name(float(scale), q)])
    if mask is not None:
        if mask.dtype is not None and str(mask.dtype) == "torch.bool":
            mask = b.add("Where", [mask, b.name(0.0, q), b.name(float("-inf"), q)])
        scores = b.add("Add", [scores, mask])
    return b.add("MatMul", [b.add("Softmax", [scores], {"axis": -1}), v])


@aten("sym_size")
def _sym_size(b, op, a):
    return b.dim(a[0], int(a[1]))


@aten("sym_numel", "numel")
def _numel(b, op, a):
    return SymInt(b.add("Reshape", [b.add("Size", [a[0]]), b.const([1], np.int64)]))


@aten("size")
def _size(b, op, a):
    if len(a) > 1:
        return b.dim(a[0], int(a[1]))
    rank = _rank(a[0])
    if rank is None:
        return SymInt(b.shape_of(a[0]))
    return [b.dim(a[0], i) for i in range(rank)]


def symbolic_arithmetic(b, fn, x, y):
    """Python arithmetic on sizes (operator.mul on SymInts...), as int64 nodes."""
    if all(isinstance(v, (int, float)) for v in (x, y)):
        return fn(x, y)
    ops = {operator.add: "Add", operator.sub: "Sub", operator.mul: "Mul", operator.floordiv: "Div",
           operator.truediv: "Div", operator.mod: "Mod"}
    if fn not in ops:
        raise ValueError(f"size arithmetic {getattr(fn, '__name__', fn)} is not supported")
    return SymInt(b.add(ops[fn], [b.sym(x), b.sym(y)]))


# ---------------------------------------------------------------------- torch.export
_IGNORED = {"_assert_scalar", "_assert_tensor_metadata", "sym_constrain_range_for_size", "sym_constrain_range",
            "_assert_async", "_functional_assert_async"}


def _op_key(target):
    """("convolution", "aten.convolution.default") for an OpOverload."""
    packet = getattr(target, "_overloadpacket", None)
    full = str(target)
    if packet is None:
        return None, full
    namespace = getattr(target, "namespace", "aten")
    return (packet.__name__ if namespace == "aten" else f"{namespace}::{packet.__name__}"), full


def _schema_arguments(target, args, kwargs):
    """The op's arguments by schema position, defaults filled in."""
    schema = getattr(target, "_schema", None)
    if schema is None:
        return list(args)
    values = list(args)
    for arg in schema.arguments[len(args):]:
        if arg.name in kwargs:
            values.append(kwargs[arg.name])
        elif arg.has_default_value():
            values.append(arg.default_value)
        else:
            values.append(None)
    return values


def _val_info(val):
    """(dtype, shape) of a node's example value (FakeTensor), shape dims None where symbolic."""
    import torch
    if isinstance(val, torch.Tensor):
        return val.dtype, [int(d) if isinstance(d, int) else None for d in val.shape]
    return None, None


def _shape_names(val):
    import torch
    return [int(d) if isinstance(d, int) else str(d) for d in val.shape] if isinstance(val, torch.Tensor) else None


def _weight_array(t):
    import torch
    t = t.detach().cpu()
    if t.is_floating_point():
        return t.to(torch.float32).numpy().copy()
    if t.dtype == torch.bool:
        return t.numpy().copy()
    return t.numpy().copy()


def read_exported(module, example_inputs, dynamic_shapes=None):
    """A torch.nn.Module into a Graph (not yet simplified), through torch.export."""
    import torch
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"from_torch takes a torch.nn.Module, got {type(module).__name__}")
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    if not isinstance(example_inputs, (tuple, list)) or not example_inputs:
        raise TypeError("example_inputs must be a non-empty tuple of tensors, got "
                        f"{type(example_inputs).__name__}")
    for i, x in enumerate(example_inputs):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"example_inputs[{i}] must be a torch.Tensor, got {type(x).__name__}")
    try:
        ep = torch.export.export(module.eval(), tuple(example_inputs), dynamic_shapes=dynamic_shapes)
        ep = ep.run_decompositions()
    except Exception as e:
        hint = ""
        if "DataDependent" in type(e).__name__:
            hint = (" (sizes that depend on the data, as in detection post-processing: trace the model with "
                    "torch.jit.trace and convert it with from_torchscript)")
        raise ValueError(f"torch.export could not export {type(module).__name__}{hint}: "
                         f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}") from e
    return _ExportTranslator(ep, type(module).__name__, _dim_names(dynamic_shapes, len(example_inputs))).graph()


def _dim_names(dynamic_shapes, count):
    """Per user input, {axis: name} of the torch.export.Dim objects given for it (a tuple or list
    of per-input specs; a dict keyed by argument name in the forward's order)."""
    if dynamic_shapes is None:
        return [{}] * count
    specs = list(dynamic_shapes.values()) if isinstance(dynamic_shapes, dict) else list(dynamic_shapes)
    names = []
    for spec in specs[:count]:
        axes = spec.items() if isinstance(spec, dict) else enumerate(spec) if isinstance(spec, (list, tuple)) else []
        names.append({int(k): d.__name__ for k, d in axes if isinstance(getattr(d, "__name__", None), str)})
    return names + [{}] * (count - len(names))


class _ExportTranslator:
    def __init__(self, ep, label, dim_names):
        self.ep, self.label, self.dim_names = ep, label, dim_names
        self.b = Builder()
        self.values = {}

    def graph(self):
        import torch
        from torch.export.graph_signature import InputKind, OutputKind
        ep, b = self.ep, self.b
        sig = ep.graph_signature
        inputs = []
        specs = {s.arg.name: s for s in sig.input_specs if hasattr(s.arg, "name")}
        for node in ep.graph.nodes:
            b.current = node.name
            if node.op == "placeholder":
                spec = specs.get(node.name)
                val = node.meta.get("val")
                if spec is None or spec.kind == InputKind.USER_INPUT:
                    if not isinstance(val, torch.Tensor):
                        raise ValueError(f"input '{node.name}' is not a tensor ({type(val).__name__}); "
                                         "only tensor inputs are supported")
                    shape = _shape_names(val)
                    given = self.dim_names[len(inputs)] if len(inputs) < len(self.dim_names) else {}
                    shape = [given.get(k, d) if isinstance(d, str) else d for k, d in enumerate(shape)]
                    inputs.append(ValueInfo(node.name, _numpy_dtype(val.dtype).name, shape))
                    self.values[node.name] = Tensor(node.name, *_val_info(val))
                    continue
                source = ep.state_dict.get(spec.target)
                if source is None:
                    source = ep.constants.get(spec.target)
                if not isinstance(source, torch.Tensor):
                    raise ValueError(f"'{spec.target}' ({spec.kind.name.lower()}) is not a tensor")
                b.weights[node.name] = _weight_array(source)
                self.values[node.name] = Tensor(node.name, source.dtype if not source.is_floating_point()
                                                else torch.float32, list(source.shape))
            elif node.op == "call_function":
                self.call(node)
            elif node.op == "get_attr":
                value = getattr(ep.graph_module, node.target)
                if not isinstance(value, torch.Tensor):
                    raise ValueError(f"node '{node.name}': attribute {node.target} is not a tensor")
                b.weights[node.name] = _weight_array(value)
                self.values[node.name] = Tensor(node.name, value.dtype, list(value.shape))
            elif node.op == "output":
                results = node.args[0]
        outputs = []
        user = [s for s in sig.output_specs if s.kind == OutputKind.USER_OUTPUT]
        flat = list(results) if isinstance(results, (list, tuple)) else [results]
        flat = flat[len(flat) - len(user):] if len(user) <= len(flat) else flat
        for i, r in enumerate(flat):
            value = self.resolve(r)
            if not isinstance(value, Tensor):
                raise ValueError(f"output {i} is not a tensor ({type(value).__name__}); only tensor outputs "
                                 "are supported")
            name = value.name
            if name in b.weights or any(v.name == name for v in inputs) or any(o.name == name for o in outputs):
                b.current = f"output_{i}"
                name = b.add("Identity", [value])
            outputs.append(ValueInfo(name, _numpy_dtype(value.dtype).name if value.dtype is not None else "float32",
                                     _shape_names(r.meta.get("val")) if hasattr(r, "meta") else None))
        graph = Graph(b.nodes, b.weights, inputs, outputs, TORCH_OPSET, f"torch.export ({self.label})")
        graph.check()
        return graph

    def resolve(self, arg):
        import torch
        if isinstance(arg, torch.fx.Node):
            if arg.name not in self.values:
                raise ValueError(f"node '{arg.name}' is read before it is computed")
            return self.values[arg.name]
        if isinstance(arg, (list, tuple)):
            return type(arg)(self.resolve(x) for x in arg)
        if isinstance(arg, torch.device) or isinstance(arg, torch.layout) or isinstance(arg, torch.memory_format):
            return None
        return arg

    def call(self, node):
        import torch
        b = self.b
        target = node.target
        if target is operator.getitem:
            source = self.resolve(node.args[0])
            value = source[node.args[1]]
            if value is None:
                raise ValueError(f"node '{node.name}': output {node.args[1]} of '{node.args[0]}' is not supported")
            self.values[node.name] = value
            return
        if target in (operator.add, operator.sub, operator.mul, operator.floordiv, operator.truediv, operator.mod):
            self.values[node.name] = symbolic_arithmetic(b, target, *self.resolve(node.args))
            return
        key, full = _op_key(target)
        if key in _IGNORED:
            return
        args = self.resolve(_schema_arguments(target, node.args, node.kwargs))
        fn = ATEN.get(key)
        val = node.meta.get("val")
        if fn is None:
            count = len(val) if isinstance(val, (list, tuple)) else 1
            names = b.add(UNSUPPORTED_PREFIX + (key or full), [x for x in args if isinstance(x, Tensor)],
                          outputs=[f"{node.name}" if count == 1 else f"{node.name}:{i}" for i in range(count)],
                          name=node.name)
            result = Tensor(node.name) if count == 1 else tuple(Tensor(n) for n in names)
        else:
            try:
                result = fn(b, key, args)
            except (ValueError, TypeError, IndexError, KeyError, AttributeError) as e:
                raise ValueError(f"node '{node.name}' ({full}): {e}") from None
        self.values[node.name] = self.wrap(result, val, node.name)

    def wrap(self, result, val, label):
        """The values a translated op gives, as Tensors carrying torch's dtype and shape."""
        import torch
        if isinstance(result, (tuple, list)) and not isinstance(val, torch.Tensor):
            vals = list(val) if isinstance(val, (list, tuple)) else [None] * len(result)
            return tuple(None if r is None else self.wrap(r, v, label) for r, v in zip(result, vals))
        if isinstance(result, str):
            dtype, shape = _val_info(val)
            return Tensor(result, dtype, shape)
        if isinstance(result, Tensor):
            dtype, shape = _val_info(val)
            return Tensor(result.name, dtype or result.dtype, shape or result.shape)
        return result  # SymInt, number or list of sizes


# ---------------------------------------------------------------------- TorchScript
def read_torchscript(model, example_inputs=None):
    """A TorchScript module (path or ScriptModule) into a Graph (not yet simplified)."""
    import torch
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        if not os.path.exists(path):
            raise FileNotFoundError(f"no such TorchScript file: '{path}'")
        try:
            import torchvision  # noqa: F401  (registers torchvision::nms and roi_align, which detection files call)
        except ImportError:
            pass
        try:
            model = torch.jit.load(path, map_location="cpu")
        except Exception as e:
            reason = str(e).splitlines()[0][:300] if str(e) else type(e).__name__
            raise ValueError(f"'{path}' is not a TorchScript file torch.jit.load reads: {reason}") from e
        label = path
    elif isinstance(model, torch.jit.ScriptModule):
        label = f"<TorchScript {model.original_name}>"
    else:
        raise TypeError(f"from_torchscript takes a path or a torch.jit.ScriptModule, got {type(model).__name__}")
    model.eval()
    try:
        frozen = torch.jit.freeze(model)
    except Exception:
        frozen = model  # already frozen, or a module freeze refuses: its attributes are read below
    graph = frozen.graph.copy()
    torch._C._jit_pass_inline(graph)
    torch._C._jit_pass_remove_mutation(graph)  # in-place ops (relu_, add_) as their functional forms
    if example_inputs is None:
        # A traced module records its inputs' types: zeros of them stand in for examples.
        types = [v.type() for v in list(model.graph.inputs())[1:]]
        try:
            example_inputs = [torch.zeros(t.sizes(), dtype=t.dtype()) for t in types]
        except (RuntimeError, TypeError, AttributeError):
            example_inputs = None
    probed = _probe_values(frozen, graph, example_inputs) if example_inputs is not None else {}
    return _ScriptTranslator(frozen, graph, label, probed).graph()


def _probe_values(module, graph, example_inputs):
    """debugName -> (dtype, shape) of every tensor the graph computes at the example inputs: the
    graph is run once with all of them as outputs (TorchScript's own shape analysis stops at ops
    it does not know)."""
    import torch
    probe = graph.copy()

    def tensors(g):
        found = [v for n in g.nodes() for v in n.outputs() if isinstance(v.type(), torch._C.TensorType)]
        return found + [v for v in list(g.inputs())[1:] if isinstance(v.type(), torch._C.TensorType)]
    values = tensors(probe)
    names = [v.debugName() for v in tensors(graph)]  # the copy numbers its values anew: matched by order
    for v in list(probe.outputs()):
        probe.eraseOutput(0)
    pack = probe.create("prim::TupleConstruct", values, 1)
    probe.appendNode(pack)
    pack.output().setType(torch._C.TupleType([v.type() for v in values]))
    probe.registerOutput(pack.output())  # a function returns one value
    try:
        fn = torch._C._create_function_from_graph("probe_values", probe)
        with torch.no_grad():
            results = fn(module, *example_inputs)
    except Exception:  # a graph the interpreter refuses: the translation goes on without shapes
        return {}
    results = results if isinstance(results, tuple) else (results,)
    return {name: (r.dtype, list(r.shape)) for name, r in zip(names, results) if isinstance(r, torch.Tensor)}


class _ScriptTranslator:
    def __init__(self, module, graph, label, probed):
        self.module, self.jit_graph, self.label, self.probed = module, graph, label, probed
        self.b = Builder()
        self.values = {}
        self.dynamic = set()  # values whose sizes depend on input values (NonZero, NMS ... and what follows)

    def depends_on_data(self, node, kind, ins):
        """Whether a node's output sizes may depend on input values, not on input shapes alone."""
        if kind in _DATA_DEPENDENT_OPS or (kind == "aten::where" and len(ins) == 1):
            return True
        if kind == "aten::index" and isinstance(ins[1], (list, tuple)) and any(_is_bool(t) for t in ins[1]):
            return True
        return any(v.debugName() in self.dynamic for v in node.inputs())

    def unpacked_input(self, node, x, axis):
        """x with its size along `axis` taken from the number of values the node's list output
        is unpacked into: the trace fixed that count, even where x's other sizes vary."""
        if x.shape is not None and isinstance(x.shape[axis], int):
            return x
        uses = next(node.outputs()).uses()
        if len(uses) != 1 or uses[0].user.kind() != "prim::ListUnpack" or x.shape is None:
            return x
        shape = list(x.shape)
        shape[axis] = len(list(uses[0].user.outputs()))
        return Tensor(x.name, x.dtype, shape)

    def if_node(self, node, condition, outs, label):
        """prim::If: only the branch taken where the condition is known now, else an If node
        whose branches are subgraphs reading the enclosing graph's values."""
        blocks = list(node.blocks())
        if isinstance(condition, (bool, int, np.bool_, np.integer)):
            block = blocks[0 if condition else 1]
            for n in block.nodes():
                self.node(n)
            for o, v in zip(outs, block.outputs()):
                self.values[o.debugName()] = self.values.get(v.debugName())
                if v.debugName() in self.dynamic:
                    self.dynamic.add(o.debugName())
            return
        if not isinstance(condition, Tensor):
            raise ValueError(f"node '{label}' (prim::If): the condition is a {type(condition).__name__}")
        b, branches = self.b, []
        for block in blocks:
            enclosing, b.nodes = b.nodes, []
            try:
                for n in block.nodes():
                    self.node(n)
                results = []
                for k, v in enumerate(block.outputs()):
                    value = self.values.get(v.debugName())
                    if not isinstance(value, (Tensor, SymInt)):
                        raise ValueError(f"node '{label}' (prim::If): branch output {k} is a "
                                         f"{type(value).__name__}; only tensor outputs are supported")
                    results.append(b.add("Identity", [value]))
                branches.append(Subgraph(b.nodes, results))
            finally:
                b.nodes = enclosing
        names = b.add("If", [condition], {"then_branch": branches[0], "else_branch": branches[1]},
                      outputs=[o.debugName() for o in outs], name=label)
        for o, n in zip(outs, names):
            dtype, shape = self.info(o)
            self.values[o.debugName()] = Tensor(n, dtype, None if shape is None else [None] * len(shape))
            self.dynamic.add(o.debugName())  # either branch's sizes

    def info(self, value):
        import torch
        t = value.type()
        if value.debugName() in self.probed:
            return self.probed[value.debugName()]
        if isinstance(t, torch._C.TensorType):
            dtype = t.dtype()
            try:
                sizes = t.varyingSizes()  # None where the rank is unknown, None entries where a size is
            except RuntimeError:
                sizes = None
            return dtype, sizes
        return None, None

    def graph(self):
        import torch
        b, g = self.b, self.jit_graph
        inputs = []
        graph_inputs = list(g.inputs())
        for v in graph_inputs[1:]:  # the first is the module itself
            name = v.debugName()
            if not isinstance(v.type(), torch._C.TensorType):
                raise ValueError(f"input '{name}' is of type {v.type()}; only tensor inputs are supported")
            dtype, shape = self.info(v)
            if shape is None:
                raise ValueError(f"input '{name}' has no recorded shape (a scripted, not traced, module): "
                                 "pass example_inputs")
            inputs.append(ValueInfo(name, _numpy_dtype(dtype).name if dtype is not None else "float32",
                                    list(shape) if shape is not None else None))
            self.values[name] = Tensor(name, dtype, shape)
        if graph_inputs:
            self.values[graph_inputs[0].debugName()] = self.module
        self.order = {node: i for i, node in enumerate(g.nodes())}
        for node in g.nodes():
            self.node(node)
        outputs = []
        for i, v in enumerate(g.outputs()):
            value = self.values.get(v.debugName())
            flat = list(value) if isinstance(value, (tuple, list)) else [value]
            for item in flat:
                if not isinstance(item, Tensor):
                    raise ValueError(f"output {i} is not a tensor ({type(item).__name__})")
                name = item.name
                if name in b.weights or any(x.name == name for x in inputs) or any(o.name == name for o in outputs):
                    b.current = f"output_{i}"
                    name = b.add("Identity", [item])
                outputs.append(ValueInfo(name, _numpy_dtype(item.dtype).name if item.dtype is not None else "float32",
                                         None))
        graph = Graph(b.nodes, b.weights, inputs, outputs, TORCH_OPSET, f"TorchScript ({self.label})")
        graph.check()
        return graph

    def check_in_place(self, node, label):
        """An in-place op is its functional form only when nothing else sees the tensor it writes:
        not a view of another tensor, and not read again after the write."""
        target = next(node.inputs())
        if target.node().kind() in _VIEW_OPS:
            raise ValueError(f"node '{label}' ({node.kind()}): writing in place into a view "
                             f"({target.node().kind()}) is not supported")
        position = self.order.get(node, -1)
        if any(self.order.get(use.user, -1) > position for use in target.uses()):
            raise ValueError(f"node '{label}' ({node.kind()}): the tensor written in place is read again "
                             "afterwards, which is not supported")

    def constant(self, value):
        import torch
        if isinstance(value, torch.Tensor):
            name = self.b.fresh("constant")
            self.b.weights[name] = _weight_array(value)
            return Tensor(name, value.dtype if not value.is_floating_point() else torch.float32, list(value.shape))
        if isinstance(value, (list, tuple)):
            return type(value)(self.constant(v) for v in value)
        if isinstance(value, torch.device):
            return None
        return value

    def node(self, node):
        import torch
        b = self.b
        kind = node.kind()
        outs = list(node.outputs())
        label = outs[0].debugName() if outs else kind
        b.current = label
        ins = [self.values.get(v.debugName()) for v in node.inputs()]
        if self.depends_on_data(node, kind, ins):
            self.dynamic.update(o.debugName() for o in outs)
        if kind == "prim::Constant":
            self.values[label] = self.constant(outs[0].toIValue()) if outs[0].type().kind() != "NoneType" else None
            return
        if kind in ("prim::ListConstruct", "prim::TupleConstruct"):
            self.values[label] = list(ins) if kind == "prim::ListConstruct" else tuple(ins)
            return
        if kind in ("prim::ListUnpack", "prim::TupleUnpack"):
            for o, v in zip(outs, ins[0]):
                if isinstance(v, Tensor):
                    dtype, shape = self.info(o)
                    if o.debugName() in self.dynamic and shape is not None:
                        shape = [None] * len(shape)
                    v = Tensor(v.name, v.dtype or dtype, v.shape or shape)
                self.values[o.debugName()] = v
            return
        if kind == "prim::TupleIndex":
            self.values[label] = ins[0][ins[1]]
            return
        if kind == "prim::GetAttr":
            owner = ins[0]
            value = getattr(owner, node.s("name"))
            self.values[label] = self.constant(value) if isinstance(value, torch.Tensor) else value
            return
        if kind == "prim::NumToTensor":
            self.values[label] = Tensor(b.sym_scalar(ins[0]), torch.int64, [])
            return
        if kind in ("aten::Int", "aten::ScalarImplicit", "aten::Float"):
            v = ins[0]
            self.values[label] = SymInt(b.sym(v)) if isinstance(v, Tensor) else v
            return
        if kind in ("aten::__getitem__",) and isinstance(ins[0], (list, tuple)):
            self.values[label] = ins[0][ins[1]]
            return
        if kind in ("aten::add", "aten::sub", "aten::mul", "aten::floordiv", "aten::div") and \
                not any(isinstance(v, Tensor) for v in ins):
            fn = {"aten::add": operator.add, "aten::sub": operator.sub, "aten::mul": operator.mul,
                  "aten::floordiv": operator.floordiv, "aten::div": operator.truediv}[kind]
            self.values[label] = symbolic_arithmetic(b, fn, ins[0], ins[1])
            return
        if kind in ("aten::warn", "prim::RaiseException", "aten::__is__", "aten::__isnot__") and not outs:
            return
        if kind == "prim::If":
            self.if_node(node, ins[0], outs, label)
            return
        if kind in ("prim::device", "prim::dtype"):
            dtype = ins[0].dtype if isinstance(ins[0], Tensor) else None
            if kind == "prim::dtype" and dtype is None:
                raise ValueError(f"node '{label}': the dtype of '{next(node.inputs()).debugName()}' is not known")
            self.values[label] = dtype if kind == "prim::dtype" else None
            return
        if kind.startswith("torchvision::"):
            key = kind
        elif kind.startswith("aten::"):
            key = kind[len("aten::"):]
        else:
            raise ValueError(f"node '{label}': {kind} is not supported (loops and other prim ops are not "
                             "converted; trace the model, or script it without them)")
        if key.endswith("_") and not key.endswith("__"):
            self.check_in_place(node, label)
            key = key[:-1]  # a write remove_mutation left: as its functional form, where that is the same
        fn = ATEN.get(key)
        if fn is None:
            names = b.add(UNSUPPORTED_PREFIX + key, [x for x in ins if isinstance(x, Tensor)],
                          outputs=[o.debugName() for o in outs], name=label)
            for o, n in zip(outs, names if isinstance(names, list) else [names]):
                self.values[o.debugName()] = Tensor(n, *self.info(o))
            return
        args = ins
        if key in ("_to_copy", "to"):
            args = [ins[0], _script_to_dtype(ins)]
        elif key == "size" and len(ins) == 1:
            args = ins
        elif key == "unbind" and isinstance(ins[0], Tensor):
            args = [self.unpacked_input(node, ins[0], int(ins[1]) if len(ins) > 1 else 0)] + ins[1:]
        try:
            result = fn(b, key, args)
        except (ValueError, TypeError, IndexError, KeyError, AttributeError) as e:
            raise ValueError(f"node '{label}' ({kind}): {e}") from None
        results = list(result) if isinstance(result, tuple) and len(outs) > 1 else [result]
        known = [x for x in ins if isinstance(x, Tensor) and x.shape is not None]
        first = max(known, key=lambda x: len(x.shape)) if known else None  # broadcasting takes the largest rank
        for o, r in zip(outs, results):
            dtype, shape = self.info(o)
            if o.debugName() in self.dynamic and shape is not None:
                shape = [None] * len(shape)  # the example's sizes hold for the example only
            if shape is None and first is not None and key in _SAME_RANK:
                # Where the shape analysis stopped (ops it does not know): the rank at least.
                shape = list(first.shape) if key in _SAME_SHAPE else [None] * len(first.shape)
            if isinstance(r, str):
                r = Tensor(r, dtype, shape)
            elif isinstance(r, Tensor):
                r = Tensor(r.name, dtype or r.dtype, shape or r.shape)
            elif isinstance(r, (list, tuple)):  # a Tensor[] output (split, meshgrid ...)
                r = type(r)(Tensor(x) if isinstance(x, str) else x for x in r)
            self.values[o.debugName()] = r


_SAME_SHAPE = set(_UNARY) | {"rsqrt", "silu", "hardsigmoid", "gelu", "leaky_relu", "elu", "clamp", "clamp_min",
                              "clamp_max", "hardtanh", "_to_copy", "to", "type_as", "clone", "alias", "detach",
                              "contiguous", "dropout", "feature_dropout", "batch_norm", "layer_norm", "group_norm",
                              "softmax", "log_softmax", "_softmax", "_log_softmax", "masked_fill", "cumsum",
                              "tril", "triu"}
_SAME_RANK = _SAME_SHAPE | set(_BINARY) | {"where", "linear", "convolution", "_convolution", "conv1d", "conv2d",
                                          "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "upsample_bilinear2d",
                                          "upsample_nearest2d", "matmul", "bmm", "expand", "expand_as", "slice",
                                          "narrow", "cat", "transpose", "permute", "constant_pad_nd", "pad"}


_DATA_DEPENDENT_OPS = {"aten::nonzero", "aten::nonzero_numpy", "aten::masked_select", "aten::unique",
                       "aten::_unique2", "aten::unique_dim", "aten::unique_consecutive", "torchvision::nms"}


_VIEW_OPS = {"aten::" + k for k in ("slice", "select", "view", "reshape", "transpose", "permute", "narrow", "expand",
                                    "squeeze", "unsqueeze", "flatten", "t", "as_strided", "diagonal", "unfold",
                                    "split", "chunk", "unbind", "view_as", "expand_as", "alias", "__getitem__")}


def _script_to_dtype(ins):
    """The dtype argument of a TorchScript aten::to overload (to(self, dtype, ...), to(self, device,
    dtype, ...) or to(self, other, ...))."""
    import torch
    for v in ins[1:3]:
        if isinstance(v, torch.dtype) or (isinstance(v, int) and not isinstance(v, bool)):
            return _torch_dtype(v)
        if isinstance(v, Tensor):
            return v.dtype
    return None
