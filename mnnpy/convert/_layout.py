"""Blocked channel layout for convolution chains, chosen when a converted model is instantiated.

Convolutions, pooling and the elementwise ops between them run on [N, C/8, H, W, 8] tensors
(mnnpy._expr_layout): a pixel's channels are one SIMD vector, so the kernels never transpose.
A chain stays blocked from the first convolution that can take it to the first op that cannot;
only there is it converted back to NCHW, once per tensor, whatever the number of readers.

Also here: the residual fusion of a convolution with the Add (and ReLU) after it, which the
blocked convolution computes in its epilogue.
"""
import numpy as np

from .. import _core, expr as F
from .._expr_layout import BLOCK, _avg_pool_blocked, _conv2d_blocked, _from_blocked, _max_pool_blocked, _to_blocked
from ._graph import Node, node_reads


class LayoutEnv(dict):
    """The names of an instantiation: NCHW Vars as a plain dict holds them, plus `blocked`, the
    blocked Vars of the same names. Reading a name that exists only blocked converts it to NCHW
    (once), so ops that know nothing of layouts never see a blocked tensor."""

    def __init__(self, *args):
        super().__init__(*args)
        self.blocked = {}

    def copy(self):
        env = LayoutEnv(self)
        env.blocked = dict(self.blocked)
        return env

    def __contains__(self, name):
        return dict.__contains__(self, name) or name in self.blocked

    def __missing__(self, name):
        if name not in self.blocked:
            raise KeyError(name)
        v = self[name] = _unblock(self.blocked[name])
        return v

    def get(self, name, default=None):
        return self[name] if name in self else default


def nchw_shape(blocked):
    n, cb, h, w, b = blocked.shape
    return (n, cb * b, h, w)


def _unblock(v):
    n, c, h, w = nchw_shape(v)
    # A 1x1 map is laid out the same way in both layouts.
    return F.reshape(v, [n, c, h, w]) if h * w == 1 else _from_blocked(v)


def _blockable(v):
    return v is not None and v.ndim == 4 and v.dtype == np.float32 and v.shape[1] % BLOCK == 0 and v.shape[1] > 0


def blocked_input(env, name):
    """The blocked Var of `name`, converting an NCHW value that can be blocked; None otherwise."""
    if name in env.blocked:
        return env.blocked[name]
    v = dict.get(env, name)
    if not _blockable(v):
        return None
    n, c, h, w = v.shape
    b = env.blocked[name] = F.reshape(v, [n, c // BLOCK, 1, 1, BLOCK]) if h * w == 1 else _to_blocked(v)
    return b


def _attr(node, name, default=None):
    return node.attrs.get(name, default)


def _conv(ctx, node, env):
    from ._onnx_ops import _spatial_pads
    w = env.get(node.inputs[1])
    if w is None or w.ndim != 4 or w.dtype != np.float32:
        return False
    x_name = node.inputs[0]
    x = env.blocked.get(x_name)
    shape = nchw_shape(x) if x is not None else (dict.get(env, x_name).shape if dict.get(env, x_name) is not None
                                                  else None)
    if shape is None or len(shape) != 4:
        return False
    cout, group, c = w.shape[0], _attr(node, "group", 1), shape[1]
    depthwise = group == c == cout and group > 1
    if cout % BLOCK or not (group == 1 or depthwise) or (depthwise and c % BLOCK):
        return False
    if x is None:
        x = blocked_input(env, x_name) if c % BLOCK == 0 else None
        if x is None:
            if group != 1:
                return False
            x = dict.get(env, x_name)  # a first layer reads NCHW (C = 3...) and writes blocked
            if x.dtype != np.float32:
                return False
    kernel = list(w.shape[2:])
    strides = list(_attr(node, "strides", [1, 1]))
    dilations = list(_attr(node, "dilations", [1, 1]))
    pads = _spatial_pads(node, shape[2:], kernel, strides, dilations)
    bias = env.get(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
    if bias is None:
        bias = F.const(np.zeros(cout, np.float32))
    act = _attr(node, "activation", 0)
    residual = None
    if len(node.inputs) > 3 and node.inputs[3]:
        residual = blocked_input(env, node.inputs[3])
        out_hw = [(shape[2 + i] + pads[i] + pads[i + 2] - dilations[i] * (kernel[i] - 1) - 1) // strides[i] + 1
                  for i in range(2)]
        if residual is None or tuple(residual.shape) != (shape[0], cout // BLOCK, out_hw[0], out_hw[1], BLOCK):
            return False  # not addable in the epilogue: the NCHW handler adds it
    env.blocked[node.outputs[0]] = _conv2d_blocked(
        x, w, bias, strides, pads, dilations, group, act, _attr(node, "clip_min", 0.0), _attr(node, "clip_max", 6.0),
        _attr(node, "alpha", 0.2), _attr(node, "beta", 0.5), residual)
    return True


def _broadcastable(v, like):
    """`v` (an NCHW-side Var) reshaped to broadcast against the blocked `like` as its NCHW form
    would; None when it cannot be (a channel broadcast across blocks, say)."""
    if v.ndim > 4:
        return None
    shape = (1,) * (4 - v.ndim) + tuple(v.shape)
    n, c, h, w = shape
    _, lc, lh, lw = nchw_shape(like)
    if c == 1:
        return F.reshape(v, [n, 1, h, w, 1])
    if c != lc:
        return None
    if h * w == 1:
        return F.reshape(v, [n, c // BLOCK, 1, 1, BLOCK])
    if (h, w) == (lh, lw) and v.dtype == np.float32:
        return _to_blocked(F.reshape(v, list(shape)))
    return None


_UNARY_OPS = ("Relu", "Clip", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "LeakyRelu", "Elu", "Gelu", "Erf",
              "Neg", "Abs", "Sqrt", "Exp", "Softplus", "Selu")
_BINARY_OPS = ("Add", "Sub", "Mul", "Div")


def _unary(ctx, node, env):
    from ._onnx_ops import HANDLERS
    x = env.blocked.get(node.inputs[0])
    if x is None:
        return False
    rest = [env.get(n) if n else None for n in node.inputs[1:]]
    if any(r is not None and int(np.prod(r.shape)) != 1 for r in rest):
        return False
    env.blocked[node.outputs[0]] = HANDLERS[node.op](ctx, node, [x] + rest)
    return True


def _binary(ctx, node, env):
    from ._onnx_ops import HANDLERS
    a_name, b_name = node.inputs
    a, b = env.blocked.get(a_name), env.blocked.get(b_name)
    if a is None and b is None:
        return False
    if a is not None and b is not None:
        if a.shape[1] != b.shape[1]:
            return False
    elif a is None:
        a = _broadcastable(env.get(a_name), b)
    else:
        b = _broadcastable(env.get(b_name), a)
    if a is None or b is None or a.dtype != b.dtype:
        return False
    env.blocked[node.outputs[0]] = HANDLERS[node.op](ctx, node, [a, b])
    return True


def _pool(ctx, node, env):
    from ._onnx_ops import _spatial_pads
    x = env.blocked.get(node.inputs[0])
    if x is None or len([o for o in node.outputs if o]) > 1 or _attr(node, "storage_order", 0):
        return False
    kernel = list(node.attrs["kernel_shape"])
    if len(kernel) != 2:
        return False
    strides = list(_attr(node, "strides", [1, 1]))
    dilations = list(_attr(node, "dilations", [1, 1]))
    pads = _spatial_pads(node, nchw_shape(x)[2:], kernel, strides, dilations)
    ceil_mode = bool(_attr(node, "ceil_mode", 0))
    if node.op == "MaxPool":
        y = _max_pool_blocked(x, kernel, strides, pads, dilations, ceil_mode)
    else:
        if dilations != [1, 1]:
            return False
        y = _avg_pool_blocked(x, kernel, strides, pads, ceil_mode, bool(_attr(node, "count_include_pad", 0)))
    env.blocked[node.outputs[0]] = y
    return True


def _global_pool(ctx, node, env):
    x = env.blocked.get(node.inputs[0])
    if x is None:
        return False
    reduce = F.reduce_mean if node.op == "GlobalAveragePool" else F.reduce_max
    env.blocked[node.outputs[0]] = reduce(x, [2, 3], True)
    return True


def _concat(ctx, node, env):
    if _attr(node, "axis") not in (1, -3) or not any(n in env.blocked for n in node.inputs):
        return False
    parts = [blocked_input(env, n) for n in node.inputs]
    if any(p is None for p in parts) or len({(p.shape[0],) + tuple(p.shape[2:]) for p in parts}) != 1:
        return False
    env.blocked[node.outputs[0]] = F.concat(parts, 1)
    return True


_BLOCKED_HANDLERS = {"Conv": _conv, "MaxPool": _pool, "AveragePool": _pool, "GlobalAveragePool": _global_pool,
                     "GlobalMaxPool": _global_pool, "Concat": _concat}
_BLOCKED_HANDLERS.update({op: _unary for op in _UNARY_OPS})
_BLOCKED_HANDLERS.update({op: _binary for op in _BINARY_OPS})


def run_blocked(ctx, node, env):
    """Builds `node` on blocked tensors when it can run so; False leaves it to the NCHW handler."""
    handler = _BLOCKED_HANDLERS.get(node.op)
    if handler is None or not isinstance(env, LayoutEnv) or any(not o for o in node.outputs[:1]):
        return False
    return handler(ctx, node, env)


def fuse_residual_adds(nodes, keep=()):
    """Conv -> Add(conv, r) [-> Relu] becomes one Conv node with a fourth input r, added after
    the bias and before the activation (attribute `activation` 1 when a Relu followed). Names in
    `keep` (requested outputs) are never fused away."""
    uses = {}
    for i, n in enumerate(nodes):
        for x in node_reads(n):
            uses.setdefault(x, []).append(i)
    producer = {o: i for i, n in enumerate(nodes) for o in n.outputs}
    keep = set(keep)
    out, dropped = list(nodes), set()
    for i, add in enumerate(nodes):
        if add.op != "Add" or len(add.inputs) != 2:
            continue
        for slot in (0, 1):
            src = producer.get(add.inputs[slot])
            if src is None or src in dropped:
                continue
            conv = out[src]
            if (conv.op != "Conv" or len(conv.inputs) > 3 or conv.attrs.get("activation", 0)
                    or uses.get(conv.outputs[0]) != [i] or conv.outputs[0] in keep):
                continue
            other = add.inputs[1 - slot]
            if other == conv.outputs[0]:
                continue
            final, act, relu_at = add.outputs[0], 0, None
            readers = uses.get(final, [])
            if len(readers) == 1 and nodes[readers[0]].op == "Relu" and final not in keep:
                relu_at = readers[0]
                final, act = nodes[relu_at].outputs[0], 1
            ins = list(conv.inputs) + [""] * (3 - len(conv.inputs)) + [other]
            fused = Node("Conv", ins, [final], dict(conv.attrs, activation=act, residual=1), conv.name)
            # The fused node sits where the Add was, so the residual is computed before it.
            out[i] = fused
            out[src] = None
            dropped.add(src)
            if relu_at is not None:
                out[relu_at] = None
                dropped.add(relu_at)
            break
    return [n for n in out if n is not None]
