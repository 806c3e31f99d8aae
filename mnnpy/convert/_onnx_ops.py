"""ONNX operators as mnnpy.expr calls. `instantiate` turns a converted Graph into an expr graph
for one set of input shapes: inputs become placeholders, weights constants, and each node the
expr ops that compute it. Values that shape arguments need (Reshape targets, Slice bounds...)
are constants at that point and are read eagerly."""
import operator

import numpy as np

from .. import _core
from .. import expr as F
from .._core import Var
from ._graph import node_reads
from ._layout import LayoutEnv, run_blocked

HANDLERS = {}


def handles(*ops):
    def register(fn):
        for op in ops:
            HANDLERS[op] = fn
        return fn
    return register


class UnsupportedOperator(ValueError):
    pass


class NeedsInputValue(ValueError):
    """A shape argument (axes, sizes, a Reshape target...) depends on a model input's value."""


class Context:
    def __init__(self, graph):
        self.graph = graph
        self.opset = graph.opset
        # Set when every model input is built in as a constant (shapes that depend on the data):
        # values read while building are then computed together with every pending value later
        # nodes still read, so that no part of the model is computed twice.
        self.inputs_known = False
        self.position = 0  # index of the top-level node being built
        self.last_use = {}  # name -> index of the last top-level node reading it
        self.unsettled = set()  # names built since values were last computed
        self.output_names = {o.name for o in graph.outputs}

    def static(self, v, node, what):
        """The value of a Var that must be known before running (a shape, axes...)."""
        if v is None:
            return None
        if isinstance(v, np.ndarray):
            return v
        if self.inputs_known:
            self._settle_live(v)
        try:
            return np.asarray(v.read())
        except ValueError as e:
            raise NeedsInputValue(f"its {what} must be a constant or computed from shapes, but it depends on "
                                  f"the model's input values ({e})") from None


    def _settle_live(self, v):
        env, outputs = self.env, self.output_names
        end = len(self.graph.nodes)
        targets = []
        for name in self.unsettled:
            if name in outputs or self.last_use.get(name, end) >= self.position:
                for x in (dict.get(env, name), getattr(env, "blocked", {}).get(name)):
                    if isinstance(x, Var):
                        targets.append(x)
        self.unsettled.clear()
        # Evaluated targets that read no placeholder keep their values: they are leaves from now on.
        _core.evaluate_as_constants(targets + [v])


def instantiate(graph, weights, input_types, input_values=None, blocked_layout=False, input_vars=None):
    """(placeholders by input name, output Vars) for inputs of the given (shape, dtype).
    Inputs in `input_values` (name -> array) are built in as constants instead: those whose
    values decide shapes. Inputs in `input_vars` (name -> Var) are those Vars themselves, so
    that the model continues the graph that computes them. `blocked_layout`: convolution chains
    run in the blocked channel layout (convert/_layout.py)."""
    ctx = Context(graph)
    env = LayoutEnv(weights) if blocked_layout else dict(weights)
    placeholders = {}
    for info in graph.inputs:
        if input_values and info.name in input_values:
            env[info.name] = F.const(np.asarray(input_values[info.name]))
            continue
        if input_vars and info.name in input_vars:
            env[info.name] = input_vars[info.name]
            continue
        shape, dtype = input_types[info.name]
        p = F.placeholder(tuple(shape), dtype=np.dtype(dtype))
        p.name = info.name
        placeholders[info.name] = env[info.name] = p
    ctx.env = env
    ctx.inputs_known = bool(graph.inputs) and not placeholders
    if ctx.inputs_known:
        for i, node in enumerate(graph.nodes):
            for name in node_reads(node):
                ctx.last_use[name] = i
    run_nodes(ctx, graph.nodes, env)
    missing = [o.name for o in graph.outputs if o.name not in env]
    if missing:
        raise ValueError(f"graph outputs {missing} are not produced by any node")
    return placeholders, [env[o.name] for o in graph.outputs]


def run_nodes(ctx, nodes, env):
    """Builds each node's expr ops, reading and adding names in `env`. While they build,
    `ctx.env` is `env`: a node holding a subgraph (If, Loop, Scan) builds it in a scope made from
    the env its own node list runs in, so a subgraph sees every enclosing graph's names."""
    outer_env, ctx.env = getattr(ctx, "env", None), env
    try:
        _run_nodes(ctx, nodes, env)
    finally:
        ctx.env = outer_env if outer_env is not None else env


def _run_nodes(ctx, nodes, env):
    top_level = nodes is ctx.graph.nodes
    for index, node in enumerate(nodes):
        if top_level:
            ctx.position = index
        handler = HANDLERS.get(node.op)
        if handler is None:
            raise UnsupportedOperator(f"node '{node.name}': operator {node.op} is not supported by mnnpy")
        missing = [x for x in node.inputs if x and x not in env]
        if missing:
            raise ValueError(f"node '{node.name}' ({node.op}): input '{missing[0]}' is not produced by any node")
        try:
            if run_blocked(ctx, node, env):
                ctx.unsettled.update(node.outputs)
                continue
            ins = _NodeInputs(env.get(x) if x else None for x in node.inputs)
            outs = handler(ctx, node, ins)
        except (UnsupportedOperator, NeedsInputValue) as e:
            if isinstance(e, NeedsInputValue) and not str(e).startswith("node '"):
                raise NeedsInputValue(f"node '{node.name}' ({node.op}): {e}") from None
            raise
        except (ValueError, TypeError) as e:
            raise type(e)(f"node '{node.name}' ({node.op}): {e}") from None
        except (IndexError, KeyError, AttributeError, ZeroDivisionError, OverflowError, RecursionError) as e:
            # A node of a damaged or hand-made model (an input or attribute missing, of another
            # type, or out of range) is refused; the cause stays chained for debugging.
            raise ValueError(f"node '{node.name}' ({node.op}) is malformed: {type(e).__name__}: {e}") from e
        if isinstance(outs, Var):
            outs = [outs]
        for name, v in zip(node.outputs, outs):
            if name:
                env[name] = v
        ctx.unsettled.update(node.outputs)


class _NodeInputs(list):
    """A node's input Vars (None for omitted optional ones); reading one past the end names the
    problem instead of an IndexError."""

    def __getitem__(self, index):
        if isinstance(index, int) and not -len(self) <= index < len(self):
            raise ValueError(f"needs input {index + 1 if index >= 0 else index}, but the node has {len(self)} inputs")
        return super().__getitem__(index)


def _attr(node, name, default=None):
    return node.attrs.get(name, default)


def _axis(axis, rank, inclusive=False):
    """``axis`` of a tensor of ``rank`` dimensions counted from the front; ValueError when it is
    out of range (``inclusive``: ``rank`` itself is allowed, as Flatten's axis is)."""
    axis = operator.index(axis)
    if not -rank <= axis < rank + inclusive:
        raise ValueError(f"axis {axis} is out of range for a tensor of {rank} dimensions")
    return axis + rank if axis < 0 else axis


# ------------------------------------------------------------------ elementwise
_UNARY = {"Relu": F.relu, "Sigmoid": F.sigmoid, "Tanh": F.tanh, "Exp": F.exp, "Log": F.log, "Sqrt": F.sqrt,
          "Neg": F.negative, "Abs": F.abs, "Erf": F.erf, "Floor": F.floor, "Ceil": F.ceil,
          "Reciprocal": F.reciprocal, "Sin": F.sin, "Cos": F.cos, "Tan": F.tan, "Sign": F.sign,
          "Softplus": F.softplus, "Softsign": F.softsign, "Round": F.round, "Not": F.logical_not,
          "Asin": F.asin, "Acos": F.acos, "Atan": F.atan, "Sinh": F.sinh, "Cosh": F.cosh,
          "Asinh": F.asinh, "Acosh": F.acosh, "Atanh": F.atanh, "IsNaN": F.isnan, "IsInf": F.isinf,
          "BitwiseNot": F.bitwise_not}


@handles(*_UNARY)
def _unary(ctx, node, ins):
    if node.op == "IsInf" and not (_attr(node, "detect_negative", 1) and _attr(node, "detect_positive", 1)):
        x = ins[0]
        sign_ok = F.greater(x, 0) if _attr(node, "detect_positive", 1) else F.less(x, 0)
        if not (_attr(node, "detect_negative", 1) or _attr(node, "detect_positive", 1)):
            return F.logical_and(F.isinf(x), F.less(x, x))  # all false, of x's shape
        return F.logical_and(F.isinf(x), sign_ok)
    return _UNARY[node.op](ins[0])


_BINARY = {"Add": F.add, "Sub": F.subtract, "Mul": F.multiply, "Pow": F.pow, "Equal": F.equal,
           "Less": F.less, "Greater": F.greater, "LessOrEqual": F.less_equal,
           "GreaterOrEqual": F.greater_equal, "And": F.logical_and, "Or": F.logical_or,
           "Xor": F.logical_xor, "BitwiseAnd": F.bitwise_and, "BitwiseOr": F.bitwise_or,
           "BitwiseXor": F.bitwise_xor}


@handles(*_BINARY)
def _binary(ctx, node, ins):
    a, b = ins
    if node.op == "Pow" and a.dtype != b.dtype:
        b = F.cast(b, a.dtype)  # ONNX Pow keeps the base's type
    return _BINARY[node.op](a, b)


@handles("Div")
def _div(ctx, node, ins):
    a, b = ins
    if np.dtype(a.dtype).kind in "iu":
        # ONNX integer division truncates toward zero; floor division differs on mixed signs.
        q = F.floordiv(a, b)
        inexact = F.logical_and(F.not_equal(F.multiply(q, b), a), F.not_equal(F.less(a, 0), F.less(b, 0)))
        return F.add(q, F.cast(inexact, a.dtype))
    return F.divide(a, b)


@handles("Mod")
def _mod(ctx, node, ins):
    # fmod=1: C's fmod (sign of the dividend); otherwise Python's % (sign of the divisor).
    return _core.binary("Fmod" if _attr(node, "fmod", 0) else "Mod", ins[0], ins[1])


@handles("Max", "Min", "Sum", "Mean")
def _variadic(ctx, node, ins):
    fn = {"Max": F.maximum, "Min": F.minimum, "Sum": F.add, "Mean": F.add}[node.op]
    out = ins[0]
    for x in ins[1:]:
        out = fn(out, x)
    if node.op == "Mean":
        out = F.divide(out, np.asarray(len(ins), dtype=out.dtype))
    return out


@handles("Where")
def _where(ctx, node, ins):
    return F.select(ins[0], ins[1], ins[2])


@handles("Cast")
def _cast(ctx, node, ins):
    from .onnx import ONNX_DTYPES
    to = _attr(node, "to")
    if to not in ONNX_DTYPES:
        raise ValueError(f"cast to ONNX data type {to} is not supported")
    return F.cast(ins[0], np.dtype(ONNX_DTYPES[to]) if ONNX_DTYPES[to] != "bfloat16" else "bfloat16")


@handles("Clip")
def _clip(ctx, node, ins):
    x = ins[0]
    lo = ins[1] if len(ins) > 1 and ins[1] is not None else _attr(node, "min")
    hi = ins[2] if len(ins) > 2 and ins[2] is not None else _attr(node, "max")
    if lo is not None:
        x = F.maximum(x, lo if isinstance(lo, Var) else np.asarray(lo, dtype=x.dtype))
    if hi is not None:
        x = F.minimum(x, hi if isinstance(hi, Var) else np.asarray(hi, dtype=x.dtype))
    return x


@handles("LeakyRelu")
def _leaky_relu(ctx, node, ins):
    return F.relu(ins[0], _attr(node, "alpha", 0.01))


@handles("PRelu")
def _prelu(ctx, node, ins):
    x, slope = ins
    return F.select(F.less(x, 0), F.multiply(x, slope), x)


@handles("Elu")
def _elu(ctx, node, ins):
    return F.elu(ins[0], _attr(node, "alpha", 1.0))


@handles("Selu")
def _selu(ctx, node, ins):
    return F.selu(ins[0], _attr(node, "gamma", 1.0507009873554804934), _attr(node, "alpha", 1.6732632423543772848))


@handles("HardSigmoid")
def _hard_sigmoid(ctx, node, ins):
    x = ins[0]
    a, b = _attr(node, "alpha", 0.2), _attr(node, "beta", 0.5)
    return F.minimum(F.maximum(F.add(F.multiply(x, np.float32(a)), np.float32(b)), np.float32(0)), np.float32(1))


@handles("HardSwish")
def _hard_swish(ctx, node, ins):
    x = ins[0]
    return F.multiply(x, F.divide(F.relu6(F.add(x, np.float32(3))), np.float32(6)))


@handles("Gelu")
def _gelu(ctx, node, ins):
    return F.gelu(ins[0], approximate=_attr(node, "approximate", "none") == "tanh")


@handles("ScaledDotProductAttention")
def _attention(ctx, node, ins):
    # Fused by the converter (convert/onnx.py): softmax(q @ kt * scale + mask) @ v.
    q, kt, v = ins[:3]
    mask = ins[3] if len(ins) > 3 else None
    scale = float(_attr(node, "scale", 1.0))
    fused = all(x.dtype == np.float32 for x in (q, kt, v)) and q.ndim == kt.ndim == v.ndim >= 2 and \
        q.shape[:-2] == kt.shape[:-2] == v.shape[:-2] and (mask is None or mask.ndim <= q.ndim)
    if fused and mask is not None and mask.dtype != np.float32:
        fused = False
    if fused:
        try:
            return _core.op("ScaledDotProductAttention", [q, kt, v] + ([mask] if mask is not None else []),
                            {"scale": scale})
        except ValueError:
            pass  # shapes the kernel does not take (batch broadcasting...): the ops one by one
    scores = F.matmul(q, kt)
    if scale != 1.0:
        scores = F.multiply(scores, np.asarray(scale, dtype=scores.dtype))
    if mask is not None:
        scores = F.add(scores, mask)
    return F.matmul(F.softmax(scores, -1), v)


@handles("Identity", "Dropout")
def _identity(ctx, node, ins):
    if node.op == "Dropout" and len(ins) > 2 and ins[2] is not None and bool(ctx.static(ins[2], node, "training_mode")):
        ratio = float(np.asarray(ctx.static(ins[1], node, "ratio")).reshape(-1)[0]) if ins[1] is not None else 0.5
        if ratio != 0.0:  # a zero ratio drops nothing: the identity, in training too
            raise ValueError("Dropout in training mode is not supported (inference only)")
    if node.op == "Dropout" and len([o for o in node.outputs if o]) > 1:
        return [ins[0], F.const(np.ones(ins[0].shape, np.bool_))]  # the mask keeps every element
    return [ins[0]]


# ------------------------------------------------------------------ shapes
def _ints(ctx, node, v, what):
    return [int(x) for x in np.asarray(ctx.static(v, node, what)).reshape(-1)]


@handles("Shape")
def _shape(ctx, node, ins):
    shape = list(ins[0].shape)
    start, end = _attr(node, "start", 0), _attr(node, "end", None)
    return F.const(np.asarray(shape[start:end], dtype=np.int64))


@handles("Size")
def _size(ctx, node, ins):
    return F.const(np.asarray(int(np.prod(ins[0].shape)), dtype=np.int64))


@handles("Reshape")
def _reshape(ctx, node, ins):
    x = ins[0]
    target = _ints(ctx, node, ins[1], "target shape")
    if not _attr(node, "allowzero", 0):
        target = [x.shape[i] if t == 0 else t for i, t in enumerate(target)]
    return F.reshape(x, target)


@handles("Flatten")
def _flatten(ctx, node, ins):
    x = ins[0]
    axis = _axis(_attr(node, "axis", 1), x.ndim, inclusive=True)
    outer = int(np.prod(x.shape[:axis]))
    return F.reshape(x, [outer, int(np.prod(x.shape[axis:]))])


@handles("Transpose")
def _transpose(ctx, node, ins):
    return F.transpose(ins[0], _attr(node, "perm"))


@handles("Concat")
def _concat(ctx, node, ins):
    values = [v for v in ins if v is not None and (v.ndim == 0 or 0 not in v.shape or len(ins) == 1)]
    values = values or [ins[0]]
    return F.concat(values, _attr(node, "axis"))


@handles("Split")
def _split(ctx, node, ins):
    x = ins[0]
    axis = _axis(_attr(node, "axis", 0), x.ndim)
    sizes = None
    if len(ins) > 1 and ins[1] is not None:
        sizes = _ints(ctx, node, ins[1], "split sizes")
    elif "split" in node.attrs:
        sizes = list(node.attrs["split"])
    if sizes is None:
        parts = _attr(node, "num_outputs", len(node.outputs))
        if parts != len(node.outputs) or parts < 1:
            raise ValueError(f"Split node '{node.name}': num_outputs is {parts}, but the node has "
                             f"{len(node.outputs)} outputs")
        step = -(-x.shape[axis] // parts)  # the last piece may be smaller
        sizes = [min(step, x.shape[axis] - i * step) for i in range(parts)]
    return F.split(x, sizes, axis)


def _axes_argument(ctx, node, ins, index):
    if len(ins) > index and ins[index] is not None:
        return _ints(ctx, node, ins[index], "axes")
    return node.attrs.get("axes")


@handles("Unsqueeze")
def _unsqueeze(ctx, node, ins):
    axes = _axes_argument(ctx, node, ins, 1)
    rank = ins[0].ndim + len(axes)
    return F.unsqueeze(ins[0], sorted(_axis(a, rank) for a in axes))


@handles("Squeeze")
def _squeeze(ctx, node, ins):
    axes = _axes_argument(ctx, node, ins, 1)
    return F.squeeze(ins[0], None if axes is None else [_axis(a, ins[0].ndim) for a in axes])


@handles("Slice")
def _slice(ctx, node, ins):
    x = ins[0]
    if ctx.opset < 10 and "starts" in node.attrs:
        starts, ends = node.attrs["starts"], node.attrs["ends"]
        axes = node.attrs.get("axes", list(range(len(starts))))
        steps = [1] * len(starts)
    else:
        starts = _ints(ctx, node, ins[1], "starts")
        ends = _ints(ctx, node, ins[2], "ends")
        axes = _ints(ctx, node, ins[3], "axes") if len(ins) > 3 and ins[3] is not None else list(range(len(starts)))
        steps = _ints(ctx, node, ins[4], "steps") if len(ins) > 4 and ins[4] is not None else [1] * len(starts)
    index = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        a = _axis(a, x.ndim)
        big = 2 ** 62
        s = max(min(s, big), -big)
        e = max(min(e, big), -big)
        index[a] = slice(s, e, st)
    return x[tuple(index)]


@handles("Gather")
def _gather(ctx, node, ins):
    x, idx = ins
    axis = _axis(_attr(node, "axis", 0), x.ndim)
    return F.gather(x, idx, axis)


@handles("GatherElements")
def _gather_elements(ctx, node, ins):
    x, idx = ins
    axis = _axis(_attr(node, "axis", 0), x.ndim)
    if idx.ndim != x.ndim:
        raise ValueError(f"indices have rank {idx.ndim}, data rank {x.ndim}; they must match")
    # out[i0..] = x[i0.., idx[i0..], ..]: one gather over the flattened data with flat offsets.
    strides = np.cumprod((list(x.shape[1:]) + [1])[::-1])[::-1]
    idx = F.cast(idx, np.int64)
    idx = F.select(F.less(idx, 0), F.add(idx, np.int64(x.shape[axis])), idx)
    flat = F.multiply(idx, np.int64(strides[axis]))
    for d in range(x.ndim):
        if d == axis:
            continue
        coord = np.arange(idx.shape[d], dtype=np.int64).reshape([-1 if k == d else 1 for k in range(x.ndim)])
        flat = F.add(flat, coord * np.int64(strides[d]))
    return F.gather(F.reshape(x, [-1]), flat, 0)


@handles("Expand")
def _expand(ctx, node, ins):
    x = ins[0]
    shape = _ints(ctx, node, ins[1], "shape")
    return F.broadcast_to(x, _bidirectional_shape(x.shape, shape))


def _bidirectional_shape(a, b):
    """The broadcast of shapes ``a`` and ``b`` (dimensions of 1 in either take the other's), of
    any rank: NumPy's broadcast_shapes takes at most 32 dimensions."""
    rank = max(len(a), len(b))
    a, b = (1,) * (rank - len(a)) + tuple(a), (1,) * (rank - len(b)) + tuple(b)
    if any(p != q and p != 1 and q != 1 for p, q in zip(a, b)):
        raise ValueError(f"shapes {a} and {b} cannot be broadcast together")
    return [q if p == 1 else p for p, q in zip(a, b)]


@handles("Tile")
def _tile(ctx, node, ins):
    return F.tile(ins[0], _ints(ctx, node, ins[1], "repeats"))


# Results whose size a model's values decide (ConstantOfShape, Range, OneHot ...) are built as
# lazy core ops, not NumPy arrays: the core refuses a size beyond memory before allocating it
# (NumPy would take it, up to the machine's memory, whatever the process's limit).
@handles("ConstantOfShape")
def _constant_of_shape(ctx, node, ins):
    shape = _ints(ctx, node, ins[0], "shape")
    value = np.asarray(_attr(node, "value", np.zeros(1, np.float32)))
    if value.size != 1:
        raise ValueError(f"the value must hold one element, got {value.size}")
    return F.broadcast_to(F.const(value.reshape(())), shape)


@handles("Range")
def _range(ctx, node, ins):
    from ..numpy import arange
    start, limit, delta = (ctx.static(v, node, "range bound") for v in ins)
    if any(np.size(v) != 1 for v in (start, limit, delta)):
        raise ValueError("start, limit and delta must be scalars")
    start, limit, delta = (np.asarray(v).reshape(()) for v in (start, limit, delta))
    if not delta:
        raise ValueError("delta must not be zero")
    return arange(start[()], limit[()], delta[()], dtype=start.dtype)


def _positions(n, axis, rank):
    """0, 1, ..., n-1 (int64) along ``axis`` of a rank-``rank`` tensor, of length 1 elsewhere."""
    return _core.op("Iota", [], {"shape": [n if d == axis else 1 for d in range(rank)], "start": 0,
                                 "strides": [int(d == axis) for d in range(rank)]})


@handles("Pad")
def _pad(ctx, node, ins):
    x = ins[0]
    mode = _attr(node, "mode", "constant")
    if len(ins) > 1 and ins[1] is not None:
        pads = _ints(ctx, node, ins[1], "pads")
        value = ctx.static(ins[2], node, "constant value") if len(ins) > 2 and ins[2] is not None else 0
        axes = _ints(ctx, node, ins[3], "axes") if len(ins) > 3 and ins[3] is not None else None
    else:
        pads, value, axes = node.attrs["pads"], _attr(node, "value", 0.0), None
    axes = list(range(x.ndim)) if axes is None else [_axis(a, x.ndim) for a in axes]
    n = len(axes)
    widths = [[0, 0] for _ in range(x.ndim)]
    for i, a in enumerate(axes):
        widths[a] = [pads[i], pads[i + n]]
    if any(w < 0 for pair in widths for w in pair):
        crop = tuple(slice(-min(b, 0), (d + min(a, 0)) or None) for (b, a), d in zip(widths, x.shape))
        x = x[crop]
        widths = [[max(b, 0), max(a, 0)] for b, a in widths]
    np_mode = {"constant": "CONSTANT", "reflect": "REFLECT", "edge": "edge", "wrap": "wrap"}.get(mode)
    if np_mode is None:
        raise ValueError(f"pad mode '{mode}' is not supported")
    return F.pad(x, widths, np_mode, float(np.asarray(value).reshape(-1)[0]) if np.size(value) else 0.0)


# ------------------------------------------------------------------ reductions, softmax, norms
def _reduce_axes(ctx, node, ins):
    x = ins[0]
    axes = _axes_argument(ctx, node, ins, 1)
    if not axes:
        if _attr(node, "noop_with_empty_axes", 0):
            return x, None
        return x, list(range(x.ndim))
    return x, [_axis(a, x.ndim) for a in axes]


_REDUCERS = {"ReduceMean": F.reduce_mean, "ReduceSum": F.reduce_sum, "ReduceMax": F.reduce_max,
             "ReduceMin": F.reduce_min, "ReduceProd": F.reduce_prod}


@handles(*_REDUCERS, "ReduceL2", "ReduceSumSquare", "ReduceL1", "ReduceLogSumExp")
def _reduce(ctx, node, ins):
    out = _reduce_in_numpy_types(ctx, node, ins)
    # ONNX keeps the input's type, where NumPy widens integer sums and means (to int64, uint64 or float64).
    return out if out.dtype == ins[0].dtype else F.cast(out, ins[0].dtype)


def _reduce_in_numpy_types(ctx, node, ins):
    x, axes = _reduce_axes(ctx, node, ins)
    keep = bool(_attr(node, "keepdims", 1))
    if axes is None:
        return x
    if any(x.shape[a] == 0 for a in axes):
        return _empty_reduction(node, x, axes, keep)
    if node.op == "ReduceL2":
        return F.sqrt(F.reduce_sum(F.square(x), axes, keep))
    if node.op == "ReduceSumSquare":
        return F.reduce_sum(F.square(x), axes, keep)
    if node.op == "ReduceL1":
        return F.reduce_sum(F.abs(x), axes, keep)
    if node.op == "ReduceLogSumExp":
        m = F.reduce_max(x, axes, True)
        out = F.add(F.log(F.reduce_sum(F.exp(F.subtract(x, m)), axes, True)), m)
        return out if keep else F.squeeze(out, axes)
    return _REDUCERS[node.op](x, axes, keep)


# What a reduction over no elements gives (ONNX's identities: the empty max is -inf...).
_EMPTY_REDUCTION = {"ReduceMax": -np.inf, "ReduceMin": np.inf, "ReduceLogSumExp": -np.inf, "ReduceLogSum": -np.inf,
                    "ReduceProd": 1, "ReduceMean": np.nan}


def _empty_reduction(node, x, axes, keep):
    dtype = np.dtype(x.dtype)
    shape = [1 if d in axes else n for d, n in enumerate(x.shape) if keep or d not in axes]
    value = _EMPTY_REDUCTION.get(node.op, 0)
    if dtype.kind in "iub" and not np.isfinite(value):
        value = (np.iinfo(dtype).min if value < 0 else np.iinfo(dtype).max) if dtype.kind != "b" else value > 0
    return F.const(np.full(shape, value, dtype))


@handles("ArgMax", "ArgMin")
def _arg_reduce(ctx, node, ins):
    x = ins[0]
    axis = _axis(_attr(node, "axis", 0), x.ndim)
    if _attr(node, "select_last_index", 0):
        flipped = x[tuple(slice(None, None, -1) if i == axis else slice(None) for i in range(x.ndim))]
        idx = (F.argmax if node.op == "ArgMax" else F.argmin)(flipped, axis)
        idx = F.subtract(np.int64(x.shape[axis] - 1), idx)
    else:
        idx = (F.argmax if node.op == "ArgMax" else F.argmin)(x, axis)
    idx = F.cast(idx, np.int64)
    return F.unsqueeze(idx, [axis]) if _attr(node, "keepdims", 1) else idx


@handles("Softmax", "LogSoftmax")
def _softmax(ctx, node, ins):
    x = ins[0]
    default_axis = -1 if ctx.opset >= 13 else 1
    axis = _axis(_attr(node, "axis", default_axis), x.ndim)
    shape = x.shape
    if ctx.opset < 13 and axis != x.ndim - 1:
        # Before opset 13 the input is coerced to 2-D at `axis`.
        x = F.reshape(x, [int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))])
        axis = 1
    if node.op == "Softmax":
        y = F.softmax(x, axis)
    else:
        shifted = F.subtract(x, F.reduce_max(x, [axis], True))
        y = F.subtract(shifted, F.log(F.reduce_sum(F.exp(shifted), [axis], True)))
    return F.reshape(y, list(shape)) if tuple(y.shape) != tuple(shape) else y


@handles("BatchNormalization")
def _batch_norm(ctx, node, ins):
    x, scale, bias, mean, var = ins[:5]
    eps = np.float32(_attr(node, "epsilon", 1e-5))
    shape = [1, -1] + [1] * (x.ndim - 2)
    if _attr(node, "training_mode", 0):
        # Normalized by the batch's own statistics (population variance); the running
        # statistics come out updated by ``momentum``.
        axes = [0] + list(range(2, x.ndim))
        batch_mean = F.reduce_mean(x, axes, False)
        batch_var = F.reduce_mean(F.square(F.subtract(x, F.reshape(batch_mean, shape))), axes, False)
        momentum = np.float32(_attr(node, "momentum", 0.9))
        factor = F.divide(scale, F.sqrt(F.add(batch_var, eps)))
        y = F.add(F.multiply(F.subtract(x, F.reshape(batch_mean, shape)), F.reshape(factor, shape)),
                  F.reshape(bias, shape))
        running_mean = F.add(F.multiply(mean, momentum), F.multiply(batch_mean, np.float32(1 - momentum)))
        running_var = F.add(F.multiply(var, momentum), F.multiply(batch_var, np.float32(1 - momentum)))
        return [y, running_mean, running_var]
    factor = F.divide(scale, F.sqrt(F.add(var, eps)))
    shift = F.subtract(bias, F.multiply(mean, factor))
    return [F.add(F.multiply(x, F.reshape(factor, shape)), F.reshape(shift, shape))]


@handles("LayerNormalization")
def _layer_norm(ctx, node, ins):
    x, scale = ins[0], ins[1]
    bias = ins[2] if len(ins) > 2 else None
    axis = _axis(_attr(node, "axis", -1), x.ndim)
    eps = np.float32(_attr(node, "epsilon", 1e-5))
    axes = list(range(axis, x.ndim))
    mean = F.reduce_mean(x, axes, True)
    centered = F.subtract(x, mean)
    var = F.reduce_mean(F.square(centered), axes, True)
    inv_std = F.rsqrt(F.add(var, eps))  # the optional Mean and InvStdDev outputs (dropped when unused)
    affine = [scale] + ([bias] if bias is not None else [])
    if x.dtype == np.float32 and all(v.dtype == np.float32 for v in affine):
        try:
            y = _core.op("LayerNorm", [x] + affine, {"axis": axis, "epsilon": float(eps)})
            return [y, mean, inv_std]
        except ValueError:
            pass  # scale or bias broadcast in ways the kernel does not take: the ops one by one
    y = F.multiply(F.multiply(centered, inv_std), scale)
    return [y if bias is None else F.add(y, bias), mean, inv_std]


@handles("InstanceNormalization")
def _instance_norm(ctx, node, ins):
    x, scale, bias = ins
    eps = np.float32(_attr(node, "epsilon", 1e-5))
    axes = list(range(2, x.ndim))
    shape = [1, -1] + [1] * (x.ndim - 2)
    mean = F.reduce_mean(x, axes, True)
    centered = F.subtract(x, mean)
    var = F.reduce_mean(F.square(centered), axes, True)
    y = F.multiply(centered, F.rsqrt(F.add(var, eps)))
    return F.add(F.multiply(y, F.reshape(scale, shape)), F.reshape(bias, shape))


# ------------------------------------------------------------------ linear algebra
@handles("MatMul")
def _matmul(ctx, node, ins):
    y = F.matmul(ins[0], ins[1])
    return F.add(y, ins[2]) if len(ins) > 2 and ins[2] is not None else y


@handles("Gemm")
def _gemm(ctx, node, ins):
    a, b = ins[0], ins[1]
    c = ins[2] if len(ins) > 2 else None
    alpha, beta = _attr(node, "alpha", 1.0), _attr(node, "beta", 1.0)
    y = F.matmul(a, b, bool(_attr(node, "transA", 0)), bool(_attr(node, "transB", 0)))
    if alpha != 1.0:
        y = F.multiply(y, np.asarray(alpha, dtype=y.dtype))
    if c is not None:
        y = F.add(y, c if beta == 1.0 else F.multiply(c, np.asarray(beta, dtype=y.dtype)))
    return y


# ------------------------------------------------------------------ convolution, pooling, resize
def _spatial_pads(node, in_hw, kernel, strides, dilations):
    auto_pad = _attr(node, "auto_pad", "NOTSET")
    n = len(kernel)
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        before, after = [], []
        for i in range(n):
            out = -(-in_hw[i] // strides[i])
            total = max(0, (out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - in_hw[i])
            small, large = total // 2, total - total // 2
            before.append(small if auto_pad == "SAME_UPPER" else large)
            after.append(large if auto_pad == "SAME_UPPER" else small)
        return before + after
    if auto_pad == "VALID":
        return [0] * (2 * n)
    return list(_attr(node, "pads", [0] * (2 * n)))


def _as_2d(x):
    """A 1-D (N, C, L) tensor as (N, C, 1, L) for the 2-D kernels."""
    return F.unsqueeze(x, [2])


@handles("Conv")
def _conv(ctx, node, ins):
    from .._expr_conv import _conv2d_nchw
    x, w = ins[0], ins[1]
    bias = ins[2] if len(ins) > 2 else None
    if x.dtype == np.float16 and len(ins) <= 3:
        # Half-precision models compute in float32 and round the result back.
        widened = [F.cast(v, np.float32) if v is not None else None for v in ins]
        return F.cast(_conv(ctx, node, widened), np.float16)
    spatial = x.ndim - 2
    if spatial not in (1, 2):
        raise ValueError(f"{spatial}-D convolution is not supported (1-D and 2-D are)")
    kernel = list(w.shape[2:])
    strides = list(_attr(node, "strides", [1] * spatial))
    dilations = list(_attr(node, "dilations", [1] * spatial))
    pads = _spatial_pads(node, x.shape[2:], kernel, strides, dilations)
    if spatial == 1:
        x, w = _as_2d(x), _as_2d(w)
        strides, dilations, pads = [1] + strides, [1] + dilations, [0, pads[0], 0, pads[1]]
    else:
        pads = [pads[0], pads[1], pads[2], pads[3]]
    residual = ins[3] if len(ins) > 3 else None  # fused by convert/_layout.py: act(conv + bias + residual)
    activation = _attr(node, "activation", 0)
    y = _conv2d_nchw(x, w, bias, strides, pads, dilations, _attr(node, "group", 1),
                     0 if residual is not None else activation, _attr(node, "clip_min", 0.0),
                     _attr(node, "clip_max", 6.0), _attr(node, "alpha", 0.2), _attr(node, "beta", 0.5))
    y = F.squeeze(y, [2]) if spatial == 1 else y
    if residual is not None:
        if activation not in (0, 1):
            raise ValueError(f"a residual convolution fuses no activation but ReLU, got code {activation}")
        y = F.add(y, residual)
        y = F.relu(y) if activation == 1 else y
    return y


def _pool_args(node, x):
    kernel = list(node.attrs["kernel_shape"])
    strides = list(_attr(node, "strides", [1] * len(kernel)))
    dilations = list(_attr(node, "dilations", [1] * len(kernel)))
    pads = _spatial_pads(node, x.shape[2:], kernel, strides, dilations)
    return kernel, strides, dilations, pads


def _pool_kernel_fits(node, x):
    """Whether the core's 2-D pooling kernels take this node (float32 NCHW, no dilations for
    averages); other ranks, dtypes and dilations pool by gathered windows."""
    if x.ndim != 4 or x.dtype != np.float32:
        return False
    return node.op == "MaxPool" or all(d == 1 for d in _attr(node, "dilations", [1, 1]))


@handles("MaxPool")
def _max_pool(ctx, node, ins):
    from .._expr_pool import _max_pool_nchw
    x = ins[0]
    if len([o for o in node.outputs if o]) > 1:
        from ._onnx_misc_ops import max_pool_with_indices
        return max_pool_with_indices(ctx, node, x)
    if _attr(node, "storage_order", 0):
        raise ValueError("MaxPool storage_order=1 is not supported without the Indices output")
    if not _pool_kernel_fits(node, x):
        from ._onnx_misc_ops import pool_by_windows
        return pool_by_windows(ctx, node, x, "max")
    kernel, strides, dilations, pads = _pool_args(node, x)
    return _max_pool_nchw(x, kernel, strides, pads, dilations, bool(_attr(node, "ceil_mode", 0)))


@handles("AveragePool")
def _avg_pool(ctx, node, ins):
    from .._expr_pool import _avg_pool_nchw
    x = ins[0]
    if not _pool_kernel_fits(node, x):
        from ._onnx_misc_ops import pool_by_windows
        return pool_by_windows(ctx, node, x, "average")
    kernel, strides, dilations, pads = _pool_args(node, x)
    return _avg_pool_nchw(x, kernel, strides, pads, bool(_attr(node, "ceil_mode", 0)),
                          bool(_attr(node, "count_include_pad", 0)))


@handles("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(ctx, node, ins):
    x = ins[0]
    axes = list(range(2, x.ndim))
    return (F.reduce_mean if node.op == "GlobalAveragePool" else F.reduce_max)(x, axes, True)


@handles("Resize", "Upsample")
def _resize(ctx, node, ins):
    from .._expr_pool import _resize_nchw
    x = ins[0]
    if node.op == "Upsample" or ctx.opset < 11:
        scales = ctx.static(ins[1], node, "scales") if len(ins) > 1 else np.asarray(node.attrs["scales"])
        sizes = None
        mode = _attr(node, "mode", "nearest")
        coord = "asymmetric"
        node = type(node)(node.op, node.inputs, node.outputs, dict(node.attrs, nearest_mode="floor"), node.name)
    else:
        scales = ctx.static(ins[2], node, "scales") if len(ins) > 2 and ins[2] is not None else None
        sizes = ctx.static(ins[3], node, "sizes") if len(ins) > 3 and ins[3] is not None else None
        mode = _attr(node, "mode", "nearest")
        coord = _attr(node, "coordinate_transformation_mode", "half_pixel")
    axes = _attr(node, "axes")
    axes = list(range(x.ndim)) if axes is None else [_axis(a, x.ndim) for a in axes]
    policy = _attr(node, "keep_aspect_ratio_policy", "stretch")
    if sizes is not None and sizes.size:
        given = [int(v) for v in sizes.reshape(-1)]
        if len(given) != len(axes):
            raise ValueError(f"Resize: {len(given)} sizes for {len(axes)} axes")
        out = list(x.shape)
        for a, size in zip(axes, given):
            out[a] = size
        spatial_scales = None
        if policy != "stretch":
            # One scale for every resized axis, so that the aspect ratio holds: the largest that
            # fits inside the sizes (not_larger) or the smallest that covers them (not_smaller).
            ratios = [size / x.shape[a] for a, size in zip(axes, given)]
            if policy == "not_larger":
                scale = min(ratios)
            elif policy == "not_smaller":
                scale = max(ratios)
            else:
                raise ValueError(f"Resize: unknown keep_aspect_ratio_policy {policy!r}; expected 'stretch', "
                                 "'not_larger' or 'not_smaller'")
            out = [int(np.floor(scale * d + 0.5)) if a in axes else d for a, d in enumerate(x.shape)]
            spatial_scales = [float(scale) if a in axes else 1.0 for a in range(2, x.ndim)]
    else:
        given = np.asarray(scales, np.float64).reshape(-1)
        if given.size != len(axes):
            raise ValueError(f"Resize: {given.size} scales for {len(axes)} axes")
        full = np.ones(x.ndim)
        full[axes] = given
        out = [int(np.floor(d * v)) for d, v in zip(x.shape, full)]
        spatial_scales = [float(v) for v in full[2:]]  # ONNX maps coordinates by the given scales
    if x.ndim != 4 or out[:2] != list(x.shape[:2]):
        raise ValueError(f"only resizing the last two axes of a 4-D input is supported (input {tuple(x.shape)}, "
                         f"output {tuple(out)})")
    if coord == "tf_crop_and_resize":
        from ._onnx_misc_ops import crop_and_resize_linear
        if mode != "linear":
            raise ValueError(f"Resize tf_crop_and_resize is supported in linear mode, not '{mode}'")
        roi = np.asarray(ctx.static(ins[1], node, "roi"), np.float64).reshape(-1)
        if roi.size != 2 * len(axes):
            raise ValueError(f"Resize: roi needs {2 * len(axes)} values for {len(axes)} axes, got {roi.size}")
        starts, ends = np.zeros(x.ndim), np.ones(x.ndim)
        starts[axes], ends[axes] = roi[:len(axes)], roi[len(axes):]
        return crop_and_resize_linear(x, out, starts, ends, float(_attr(node, "extrapolation_value", 0.0)))
    return _resize_nchw(x, out[2:], mode, coord, _attr(node, "nearest_mode", "round_prefer_floor"),
                        _attr(node, "cubic_coeff_a", -0.75), bool(_attr(node, "exclude_outside", 0)), spatial_scales,
                        bool(_attr(node, "antialias", 0)))


@handles("NonZero")
def _non_zero(ctx, node, ins):
    # The output's length depends on the data: the value is needed to build the graph (the
    # module then builds it per call).
    value = ctx.static(ins[0], node, "input (NonZero's output size depends on it)")
    return F.const(np.asarray(np.nonzero(value), dtype=np.int64).reshape(value.ndim, -1))


@handles("TopK")
def _topk(ctx, node, ins):
    from .._expr_sort import topk
    x = ins[0]
    k = int(np.asarray(ctx.static(ins[1], node, "k")).reshape(-1)[0]) if len(ins) > 1 else node.attrs["k"]
    values, indices = topk(x, k, _attr(node, "axis", -1), bool(_attr(node, "largest", 1)),
                           bool(_attr(node, "sorted", 1)))
    return [values, indices]


@handles("NonMaxSuppression")
def _non_max_suppression(ctx, node, ins):
    # Its output's length depends on the data, like NonZero's.
    from .._expr_sort import _non_max_suppression_onnx

    def value(i, default):
        return ctx.static(ins[i], node, "argument") if len(ins) > i and ins[i] is not None else default
    max_out = int(np.asarray(value(2, 0)).reshape(-1)[0]) if np.size(value(2, 0)) else 0
    iou = float(np.asarray(value(3, 0.0)).reshape(-1)[0]) if np.size(value(3, 0.0)) else 0.0
    score = value(4, None)
    score = None if score is None or not np.size(score) else float(np.asarray(score).reshape(-1)[0])
    boxes = ctx.static(ins[0], node, "boxes (the output's size depends on them)")
    scores = ctx.static(ins[1], node, "scores (the output's size depends on them)")
    selected = _non_max_suppression_onnx(boxes, scores, max_out, iou, score, _attr(node, "center_point_box", 0))
    return F.const(np.asarray(selected, dtype=np.int64).reshape(-1, 3))


@handles("CastLike")
def _cast_like(ctx, node, ins):
    return F.cast(ins[0], ins[1].dtype)


@handles("BitShift")
def _bit_shift(ctx, node, ins):
    return (F.left_shift if _attr(node, "direction") == "LEFT" else F.right_shift)(ins[0], ins[1])


@handles("ThresholdedRelu")
def _thresholded_relu(ctx, node, ins):
    x = ins[0]
    return F.select(F.greater(x, np.asarray(_attr(node, "alpha", 1.0), x.dtype)), x, np.asarray(0, x.dtype))


@handles("Celu")
def _celu(ctx, node, ins):
    x = ins[0]
    alpha = np.asarray(_attr(node, "alpha", 1.0), x.dtype)
    return F.add(F.maximum(x, np.asarray(0, x.dtype)),
                 F.minimum(np.asarray(0, x.dtype), F.multiply(alpha, F.expm1(F.divide(x, alpha)))))


@handles("Swish")
def _swish(ctx, node, ins):
    x = ins[0]
    return F.multiply(x, F.sigmoid(F.multiply(x, np.asarray(_attr(node, "alpha", 1.0), x.dtype))))


@handles("Mish")
def _mish(ctx, node, ins):
    return F.multiply(ins[0], F.tanh(F.softplus(ins[0])))


@handles("Shrink")
def _shrink(ctx, node, ins):
    x = ins[0]
    lambd, bias = np.asarray(_attr(node, "lambd", 0.5), x.dtype), np.asarray(_attr(node, "bias", 0.0), x.dtype)
    return F.select(F.less(x, F.negative(lambd)), F.add(x, bias),
                    F.select(F.greater(x, lambd), F.subtract(x, bias), np.asarray(0, x.dtype)))


@handles("ReduceLogSum")
def _reduce_log_sum(ctx, node, ins):
    x, axes = _reduce_axes(ctx, node, ins)
    if axes is None:
        return x
    return F.log(F.reduce_sum(x, axes, bool(_attr(node, "keepdims", 1))))


@handles("RMSNormalization")
def _rms_norm(ctx, node, ins):
    x, scale = ins[0], ins[1]
    axis = _axis(_attr(node, "axis", -1), x.ndim)
    eps = np.asarray(_attr(node, "epsilon", 1e-5), np.float32)
    xf = F.cast(x, np.float32) if x.dtype != np.float32 else x
    ms = F.reduce_mean(F.square(xf), list(range(axis, x.ndim)), True)
    y = F.multiply(xf, F.rsqrt(F.add(ms, eps)))
    return F.multiply(F.cast(y, x.dtype) if x.dtype != np.float32 else y, scale)


@handles("LpNormalization")
def _lp_norm(ctx, node, ins):
    x = ins[0]
    axis = _axis(_attr(node, "axis", -1), x.ndim)
    p = _attr(node, "p", 2)
    norm = F.reduce_sum(F.abs(x), [axis], True) if p == 1 else F.sqrt(F.reduce_sum(F.square(x), [axis], True))
    # A zero vector stays zero (ONNX's definition) instead of becoming 0 / 0.
    zero = F.equal(norm, F.const(np.zeros((), np.dtype(norm.dtype))))
    return F.divide(x, F.select(zero, F.const(np.ones((), np.dtype(norm.dtype))), norm))


@handles("LRN")
def _lrn(ctx, node, ins):
    """x / (bias + alpha / size * sum of x^2 over the `size` nearest channels) ^ beta. The
    channel sum is an average pool of window (size, 1) over the channels laid out as rows, its
    padding counted so that it always divides by size."""
    from .._expr_pool import _avg_pool_nchw
    x = ins[0]
    size = int(node.attrs["size"])
    if size < 1:
        raise ValueError(f"size {size} must be positive")
    if x.ndim < 3:
        raise ValueError(f"the input needs channels and at least one spatial axis, got shape {tuple(x.shape)}")
    alpha = float(_attr(node, "alpha", 1e-4))
    beta, bias = float(_attr(node, "beta", 0.75)), float(_attr(node, "bias", 1.0))
    n, c = x.shape[0], x.shape[1]
    rows = F.reshape(F.square(x), [n, 1, c, int(np.prod(x.shape[2:]))])
    # A window reaching past every channel sums no more than one reaching just past them: it is
    # cut there (the sum is the same), and the mean rescaled to alpha / size times that sum.
    before, after = min((size - 1) // 2, max(c - 1, 0)), min(size - 1 - (size - 1) // 2, max(c - 1, 0))
    window = before + after + 1
    mean = _avg_pool_nchw(rows, [window, 1], [1, 1], [before, 0, after, 0], False, True)
    denominator = F.add(F.multiply(F.reshape(mean, list(x.shape)), np.float32(alpha * window / size)),
                        np.float32(bias))
    return F.multiply(x, F.pow(denominator, np.float32(-beta)))


@handles("Trilu")
def _trilu(ctx, node, ins):
    x = ins[0]
    k = int(ctx.static(ins[1], node, "k")) if len(ins) > 1 and ins[1] is not None else 0
    # Element (i, j) is kept when j - i >= k (upper) or j - i <= k (lower).
    offset = F.subtract(_positions(x.shape[-1], 1, 2), _positions(x.shape[-2], 0, 2))
    keep = F.greater_equal(offset, np.int64(k)) if _attr(node, "upper", 1) else F.less_equal(offset, np.int64(k))
    return F.select(keep, x, F.const(np.zeros((), np.dtype(x.dtype))))


@handles("CumSum", "CumProd")
def _cumulative(ctx, node, ins):
    """The core's running sum or product (CumScan) along ``axis``: ``reverse`` runs it from the
    end, ``exclusive`` shifts it by one place (the identity, 0 or 1, first)."""
    x = ins[0]
    axis = _axis(int(ctx.static(ins[1], node, "axis")), x.ndim)
    if x.size == 0:
        return x
    compute = np.int64 if np.dtype(x.dtype).kind in "biu" else np.float64 if x.dtype == np.float64 else np.float32
    product = node.op == "CumProd"
    y = F.cast(x, compute)
    reverse = _attr(node, "reverse", 0)
    if reverse:
        y = F.reverse(y, axis)
    y = _core.op("CumScan", [y], {"kind": int(product), "axis": axis, "skip_nan": 0})
    if _attr(node, "exclusive", 0):
        first = list(y.shape)
        first[axis] = 1
        rest = list(y.shape)
        rest[axis] -= 1
        identity = np.ones(first, compute) if product else np.zeros(first, compute)
        y = F.concat([F.const(identity), F.slice(y, [0] * y.ndim, rest)], axis)
    if reverse:
        y = F.reverse(y, axis)
    return F.cast(y, x.dtype)


@handles("OneHot")
def _one_hot(ctx, node, ins):
    indices, depth, values = ins
    depth = int(np.asarray(ctx.static(depth, node, "depth")).reshape(-1)[0])
    axis = _attr(node, "axis", -1)
    idx = F.cast(indices, np.int64)
    idx = F.select(F.less(idx, 0), F.add(idx, np.int64(depth)), idx)
    rank = indices.ndim + 1
    axis = _axis(axis, rank)
    hot = F.equal(F.unsqueeze(idx, [axis]), _positions(depth, axis, rank))
    off, on = F.gather(values, F.const(np.array(0, np.int64)), 0), F.gather(values, F.const(np.array(1, np.int64)), 0)
    return F.select(hot, on, off)


@handles("EyeLike")
def _eye_like(ctx, node, ins):
    from .onnx import ONNX_DTYPES
    x = ins[0]
    dtype = np.dtype(ONNX_DTYPES[node.attrs["dtype"]]) if "dtype" in node.attrs else np.dtype(x.dtype)
    return F.const(np.eye(x.shape[0], x.shape[1], _attr(node, "k", 0), dtype=dtype))


@handles("Hardmax")
def _hardmax(ctx, node, ins):
    x = ins[0]
    axis = _axis(_attr(node, "axis", -1 if ctx.opset >= 13 else 1), x.ndim)
    shape = list(x.shape)
    if ctx.opset < 13:
        x = F.reshape(x, [int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))])
        axis = 1
    first = F.unsqueeze(F.cast(F.argmax(x, axis), np.int64), [axis])
    y = F.cast(F.equal(first, _positions(x.shape[axis], axis, x.ndim)), x.dtype)
    return F.reshape(y, shape)


@handles("DepthToSpace", "SpaceToDepth")
def _depth_space(ctx, node, ins):
    x = ins[0]
    b = _attr(node, "blocksize")
    n, c, hh, ww = x.shape
    if node.op == "SpaceToDepth":
        y = F.reshape(x, [n, c, hh // b, b, ww // b, b])
        # DCR (the default) puts the block offset before the channel, CRD after it.
        crd = _attr(node, "mode", "DCR") == "CRD"
        y = F.transpose(y, [0, 1, 3, 5, 2, 4] if crd else [0, 3, 5, 1, 2, 4])
        return F.reshape(y, [n, c * b * b, hh // b, ww // b])
    if _attr(node, "mode", "DCR") == "DCR":
        y = F.transpose(F.reshape(x, [n, b, b, c // (b * b), hh, ww]), [0, 3, 4, 1, 5, 2])
    else:
        y = F.transpose(F.reshape(x, [n, c // (b * b), b, b, hh, ww]), [0, 1, 4, 2, 5, 3])
    return F.reshape(y, [n, c // (b * b), hh * b, ww * b])


def supported_operators():
    return sorted(HANDLERS)


from . import _onnx_quant_ops  # noqa: E402,F401  (registers its handlers)
from . import _onnx_misc_ops  # noqa: E402,F401  (registers its handlers)
from . import _onnx_conv_transpose  # noqa: E402,F401  (registers its handlers)
from . import _onnx_attention  # noqa: E402,F401  (registers its handlers)
from . import _onnx_recurrent  # noqa: E402,F401  (registers its handlers)
from . import _onnx_control_flow  # noqa: E402,F401  (registers its handlers)
from . import _onnx_index_ops  # noqa: E402,F401  (registers its handlers)
from . import _weight_quant  # noqa: E402,F401  (registers its handlers)

# The MNN-semantics nodes of models read from MNN files register themselves here, and the
# Caffe- and TensorFlow-semantics ones of those importers.
from . import _caffe_ops, _mnn_ops, _tf_ops  # noqa: E402,F401
from . import _onnx_qoperator_ops  # noqa: E402,F401  (onnxruntime's QOperator contrib ops, 8-bit MaxPool)
