"""Graph passes for models whose tensors are channels-last (TensorFlow's NHWC): the importer
wraps each convolution and pooling in a Transpose to NCHW and one back; these passes move the
transposes down through the elementwise ops, reductions, concatenations and pads between
convolutions until inverse pairs meet and cancel, so that a convolution chain runs in NCHW from
its first transpose to its last. Then per-channel scales, shifts and zero pads next to a
convolution fold into its weights, bias and pads."""
import numpy as np

from ._graph import Node
from .onnx import _drop_dead_nodes, _rename_uses

# Ops that act on each element alone (their extra inputs, if any, are scalars).
ELEMENTWISE_UNARY = {"Relu", "Clip", "Sigmoid", "Tanh", "Elu", "Selu", "LeakyRelu", "HardSigmoid", "HardSwish",
                     "Softplus", "Softsign", "Exp", "Log", "Sqrt", "Neg", "Abs", "Erf", "Gelu", "Cast", "Reciprocal",
                     "Floor", "Ceil", "Sign", "Round", "Sin", "Cos", "Not", "MNN.Unary"}
# Broadcasting ops of two or more inputs.
ELEMENTWISE_NARY = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Where", "Equal", "Less", "Greater",
                    "LessOrEqual", "GreaterOrEqual", "And", "Or", "MNN.Binary"}
REDUCTIONS = {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd"}


def inverse(perm):
    return [int(i) for i in np.argsort(perm)]


def _is_identity(perm):
    return list(perm) == list(range(len(perm)))


class _Rewriter:
    def __init__(self, graph):
        self.graph = graph
        self.outputs = {v.name for v in graph.outputs}
        self.count = 0
        self.shapes = {}

    def fresh(self, base):
        self.count += 1
        return f"{base}/nchw_{self.count}"

    def transpose_source(self, name, producers):
        """(x, perm) when `name` is Transpose(x, perm), else None."""
        p = producers.get(name)
        if p is None or p.op != "Transpose" or "perm" not in p.attrs:
            return None
        return p.inputs[0], list(p.attrs["perm"])

    def permuted_weight(self, name, perm):
        """The weight `name` broadcast the way Transpose(., perm) of a rank-len(perm) tensor
        would meet it, moved to the untransposed axes; None when it has a higher rank."""
        w = self.graph.weights[name]
        rank = len(perm)
        if w.ndim > rank:
            return None
        if w.ndim == 0 or w.size == 1:
            return name
        full = w.reshape((1,) * (rank - w.ndim) + w.shape)
        new = self.fresh(name)
        self.graph.weights[new] = np.transpose(full, inverse(perm)).copy()
        return new


def sink_transposes(graph, shapes=None):
    """Moves every Transpose past the elementwise ops, reductions over constant axes,
    concatenations and constant pads reading it, and merges consecutive transposes (dropping
    those that compose to the identity). A Reshape of a transpose that moves only axes of size 1
    (by `shapes`, known shapes by name) reads the untransposed tensor. Returns the number of
    rewrites."""
    rw = _Rewriter(graph)
    rw.shapes = shapes or {}
    total = 0
    while True:
        changed = _sweep(rw)
        total += changed
        if not changed:
            break
    _drop_dead_nodes(graph)
    return total


def _sweep(rw):
    graph = rw.graph
    producers = {o: n for n in graph.nodes for o in n.outputs}
    changed = 0
    nodes, renamed = [], {}
    for node in graph.nodes:
        node.inputs = [renamed.get(x, x) for x in node.inputs]
        after = _rewrite(rw, node, producers)
        if after is None:
            nodes.append(node)
            continue
        changed += 1
        if after == "alias":  # the node became a rename of its input
            renamed[node.outputs[0]] = node.inputs[0]
            continue
        nodes.extend(after)
        for n in after:
            for o in n.outputs:
                producers[o] = n
    graph.nodes = nodes
    _rename_uses(graph, renamed)
    return changed


def _rewrite(rw, node, producers):
    """The nodes replacing `node` when a transpose moves past it, "alias" when it cancels,
    None when nothing changes."""
    graph = rw.graph
    if node.op == "Transpose" and "perm" in node.attrs:
        src = rw.transpose_source(node.inputs[0], producers)
        if src is None:
            return _reshape_instead(rw, node, producers)
        x, p = src
        q = list(node.attrs["perm"])
        if len(p) != len(q):
            return None
        composed = [p[i] for i in q]
        if _is_identity(composed):
            if node.outputs[0] in rw.outputs:  # the name must stay: simplify lets the producer write it
                return [Node("Identity", [x], node.outputs, {}, node.name)]
            node.inputs = [x]
            return "alias"
        return [Node("Transpose", [x], node.outputs, {"perm": composed}, node.name)]
    if len(node.outputs) != 1 or not node.inputs:
        return None
    if node.op == "Shape" and not node.attrs:
        src = rw.transpose_source(node.inputs[0], producers)
        if src is None:
            return None
        # The transposed shape is the source's shape permuted: the transpose need not run.
        shape, order = rw.fresh(node.outputs[0]), rw.fresh(node.name + "/perm")
        graph.weights[order] = np.asarray(src[1], np.int64)
        return [Node("Shape", [src[0]], [shape], {}, node.name),
                Node("Gather", [shape, order], node.outputs, {"axis": 0}, rw.fresh(node.name))]
    if node.op == "Reshape":
        src = rw.transpose_source(node.inputs[0], producers)
        shape = rw.shapes.get(node.inputs[0])
        if src is None or shape is None or len(shape) != len(src[1]):
            return None
        # The transpose keeps the order of the axes that are not 1 (unknown ones count as not 1):
        # the same elements in the same order, a reshape.
        order = [src[1][i] for i, d in enumerate(shape) if d != 1]
        if order != sorted(order):
            return None
        return [Node("Reshape", [src[0]] + node.inputs[1:], node.outputs, dict(node.attrs), node.name)]
    if node.op in ELEMENTWISE_UNARY:
        src = rw.transpose_source(node.inputs[0], producers)
        if src is None or any(x and x not in graph.weights for x in node.inputs[1:]):
            return None
        x, p = src
        return _moved(rw, node, [x] + node.inputs[1:], p, dict(node.attrs))
    if node.op in ELEMENTWISE_NARY:
        return _nary(rw, node, producers)
    if node.op in REDUCTIONS and len(node.inputs) == 1 and node.attrs.get("axes"):
        src = rw.transpose_source(node.inputs[0], producers)
        if src is None:
            return None
        x, p = src
        rank = len(p)
        axes = sorted({a % rank for a in node.attrs["axes"]})
        attrs = dict(node.attrs, axes=sorted(p[a] for a in axes))
        if node.attrs.get("keepdims", 1):
            return _moved(rw, node, [x], p, attrs)
        kept_view = [p[i] for i in range(rank) if i not in axes]  # the source axes left, in view order
        kept = sorted(kept_view)
        perm = [kept.index(a) for a in kept_view]
        if _is_identity(perm):
            return [Node(node.op, [x], node.outputs, attrs, node.name)]
        return _moved(rw, node, [x], perm, attrs)
    if node.op == "Concat":
        sources = [rw.transpose_source(x, producers) for x in node.inputs]
        if not sources or any(s is None for s in sources) or any(s[1] != sources[0][1] for s in sources):
            return None
        p = sources[0][1]
        axis = node.attrs.get("axis", 0) % len(p)
        return _moved(rw, node, [s[0] for s in sources], p, dict(node.attrs, axis=p[axis]))
    if node.op == "Pad" and 2 <= len(node.inputs) <= 3 and node.inputs[1] in graph.weights \
            and node.attrs.get("mode", "constant") in ("constant", "reflect", "edge"):
        src = rw.transpose_source(node.inputs[0], producers)
        if src is None:
            return None
        x, p = src
        pads = graph.weights[node.inputs[1]].reshape(-1)
        rank = len(p)
        if pads.size != 2 * rank:
            return None
        moved = np.zeros_like(pads)
        for i in range(rank):
            moved[p[i]], moved[rank + p[i]] = pads[i], pads[rank + i]
        name = rw.fresh(node.inputs[1])
        graph.weights[name] = moved
        return _moved(rw, node, [x, name] + node.inputs[2:], p, dict(node.attrs))
    return None


def _reshape_instead(rw, node, producers):
    """Transpose(Reshape(x, target)) that moves only axes of size 1 is Reshape(x, target
    permuted) (an SE block's [N, C] -> [N, 1, 1, C] on its way to a convolution)."""
    graph = rw.graph
    reshape = producers.get(node.inputs[0])
    if reshape is None or reshape.op != "Reshape" or len(reshape.inputs) != 2:
        return None
    perm = list(node.attrs["perm"])
    if reshape.inputs[1] in graph.weights:
        target = [int(d) for d in graph.weights[reshape.inputs[1]].reshape(-1)]
        pack = None
    else:
        # A target stacked from scalars, some computed from shapes at run time (None here).
        pack = producers.get(reshape.inputs[1])
        if pack is None or pack.op != "MNN.Pack" or pack.attrs.get("axis", 0) != 0:
            return None
        target = [int(graph.weights[x]) if x in graph.weights and graph.weights[x].size == 1 else None
                  for x in pack.inputs]
    if len(target) != len(perm) or 0 in target:
        return None
    moved = [target[p] for p in perm]
    if [d for d in moved if d != 1] != [d for d in target if d != 1] or \
            [p for p in perm if target[p] is None] != [i for i, d in enumerate(target) if d is None]:
        return None
    if pack is None:
        name = rw.fresh(reshape.inputs[1])
        graph.weights[name] = np.asarray(moved, np.int64)
        return [Node("Reshape", [reshape.inputs[0], name], node.outputs, dict(reshape.attrs), node.name)]
    name = rw.fresh(pack.outputs[0])
    return [Node("MNN.Pack", [pack.inputs[p] for p in perm], [name], dict(pack.attrs), rw.fresh(pack.name)),
            Node("Reshape", [reshape.inputs[0], name], node.outputs, dict(reshape.attrs), node.name)]


def _nary(rw, node, producers):
    graph = rw.graph
    sources = [rw.transpose_source(x, producers) if x else None for x in node.inputs]
    perms = [s[1] for s in sources if s is not None]
    if not perms or any(q != perms[0] for q in perms):
        return None
    p = perms[0]
    inputs = []
    for x, s in zip(node.inputs, sources):
        if s is not None:
            inputs.append(s[0])
        elif x in graph.weights:
            w = rw.permuted_weight(x, p)
            if w is None:
                return None
            inputs.append(w)
        else:
            return None
    return _moved(rw, node, inputs, p, dict(node.attrs))


def _moved(rw, node, inputs, perm, attrs):
    """`node` on the untransposed inputs, then the transpose."""
    inner = rw.fresh(node.outputs[0])
    return [Node(node.op, inputs, [inner], attrs, node.name),
            Node("Transpose", [inner], node.outputs, {"perm": list(perm)}, rw.fresh(node.name))]


# ------------------------------------------------------------------ folds into convolutions
def _channel_vector(w, channels, rank):
    """The per-channel (axis 1) values of a weight broadcast against an (N, C, ...) tensor of
    `rank`, as a float64 vector of `channels`; None when it varies along another axis."""
    if w.ndim > rank or w.dtype.kind != "f":
        return None
    full = w.reshape((1,) * (rank - w.ndim) + w.shape)
    if full.shape[0] != 1 or any(d != 1 for d in full.shape[2:]) or full.shape[1] not in (1, channels):
        return None
    return np.broadcast_to(full.reshape(-1).astype(np.float64), (channels,))


def fold_channel_affine(graph):
    """Conv (constant weight and bias) followed by Mul / Div / Add / Sub with a per-channel
    constant becomes one Conv with scaled weights and shifted bias (the scale and shift of a
    batch normalization, as TensorFlow spells it). Returns the number of folds."""
    folds = 0
    while True:
        producers = {o: n for n in graph.nodes for o in n.outputs}
        uses = {}
        for n in graph.nodes:
            for x in n.inputs:
                uses[x] = uses.get(x, 0) + 1
        outputs = {v.name for v in graph.outputs}
        removed = None
        for node in graph.nodes:
            if node.op not in ("Mul", "Div", "Add", "Sub") or len(node.inputs) != 2:
                continue
            for slot in (0, 1):
                conv = producers.get(node.inputs[slot])
                const = node.inputs[1 - slot]
                if conv is None or conv.op != "Conv" or const not in graph.weights or conv.attrs.get("activation") \
                        or uses.get(conv.outputs[0]) != 1 or conv.outputs[0] in outputs:
                    continue
                if slot == 1 and node.op in ("Div", "Sub"):
                    continue
                w = graph.weights.get(conv.inputs[1])
                has_bias = len(conv.inputs) > 2 and bool(conv.inputs[2])
                if w is None or w.dtype.kind != "f" or (has_bias and conv.inputs[2] not in graph.weights):
                    continue
                v = _channel_vector(graph.weights[const], w.shape[0], w.ndim)
                if v is None:
                    continue
                bias = graph.weights[conv.inputs[2]].astype(np.float64) if has_bias else np.zeros(w.shape[0])
                weight = w.astype(np.float64)
                if node.op in ("Mul", "Div"):
                    factor = v if node.op == "Mul" else 1.0 / v
                    weight = weight * factor.reshape(-1, *([1] * (w.ndim - 1)))
                    bias = bias * factor
                else:
                    bias = bias + v if node.op == "Add" else bias - v
                wname, bname = conv.name + f".weight_{folds}", conv.name + f".bias_{folds}"
                graph.weights[wname], graph.weights[bname] = weight.astype(w.dtype), bias.astype(w.dtype)
                conv.inputs = [conv.inputs[0], wname, bname] + conv.inputs[3:]
                conv.outputs = list(node.outputs)
                removed = node
                break
            if removed is not None:
                break
        if removed is None:
            break
        graph.nodes = [n for n in graph.nodes if n is not removed]
        folds += 1
    _drop_dead_nodes(graph)
    return folds


def fold_pads_into_conv(graph):
    """A zero Pad of only the spatial axes, read by nothing but a Conv with explicit pads,
    becomes part of the Conv's pads (Keras' ZeroPadding2D before a VALID convolution)."""
    producers = {o: n for n in graph.nodes for o in n.outputs}
    uses = {}
    for n in graph.nodes:
        for x in n.inputs:
            uses[x] = uses.get(x, 0) + 1
    outputs = {v.name for v in graph.outputs}
    dropped = set()
    for conv in graph.nodes:
        if conv.op != "Conv" or conv.attrs.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
            continue
        pad = producers.get(conv.inputs[0])
        transpose = None
        if pad is not None and pad.op == "Transpose" and uses.get(pad.outputs[0]) == 1 and \
                pad.outputs[0] not in outputs and len(pad.attrs.get("perm", [])) == 4:
            # A pad before the transpose to NCHW (of the model's input): its axes seen through the transpose.
            transpose, pad = pad, producers.get(pad.inputs[0])
        if pad is None or pad.op != "Pad" or pad.attrs.get("mode", "constant") != "constant" \
                or uses.get(pad.outputs[0]) != 1 or pad.outputs[0] in outputs or len(pad.inputs) > 3 \
                or pad.inputs[1] not in graph.weights:
            continue
        if len(pad.inputs) == 3 and pad.inputs[2]:
            value = graph.weights.get(pad.inputs[2])
            if value is None or np.any(value != 0):
                continue
        amounts = graph.weights[pad.inputs[1]].reshape(-1)
        rank = amounts.size // 2
        if transpose is not None and rank == 4:
            perm = transpose.attrs["perm"]
            amounts = np.concatenate([amounts[:4][perm], amounts[4:][perm]])
        if rank != 4 or any(amounts[i] or amounts[rank + i] for i in (0, 1)) or np.any(amounts < 0):
            continue
        old = list(conv.attrs.get("pads", [0, 0, 0, 0])) if conv.attrs.get("auto_pad", "NOTSET") == "NOTSET" \
            else [0, 0, 0, 0]
        conv.attrs = {k: v for k, v in conv.attrs.items() if k != "auto_pad"}
        conv.attrs["pads"] = [int(old[0] + amounts[2]), int(old[1] + amounts[3]),
                              int(old[2] + amounts[6]), int(old[3] + amounts[7])]
        if transpose is not None:
            transpose.inputs = [pad.inputs[0]]  # now the transpose of the unpadded input
        else:
            conv.inputs = [pad.inputs[0]] + conv.inputs[1:]
        dropped.add(id(pad))
    graph.nodes = [n for n in graph.nodes if id(n) not in dropped]
    _drop_dead_nodes(graph)
    return len(dropped)


def drop_neutral_constants(graph):
    """x * 1, x / 1, x + 0 and x - 0 with a scalar constant (which cannot change x's shape)
    become x itself: TensorFlow's silu computes x * sigmoid(1 * x), which hides
    the x * sigmoid(x) pattern the convolution fusion looks for."""
    outputs = {v.name for v in graph.outputs}
    renamed, kept = {}, []
    neutral = {"Mul": (1.0, (0, 1)), "Div": (1.0, (1,)), "Add": (0.0, (0, 1)), "Sub": (0.0, (1,))}
    for node in graph.nodes:
        node.inputs = [renamed.get(x, x) for x in node.inputs]
        rule = neutral.get(node.op)
        if rule is not None and len(node.inputs) == 2 and node.outputs[0] not in outputs:
            value, slots = rule
            for slot in slots:
                w = graph.weights.get(node.inputs[slot])
                other = node.inputs[1 - slot]
                if w is not None and w.ndim == 0 and w.dtype.kind == "f" and float(w) == value:
                    renamed[node.outputs[0]] = other
                    break
            if node.outputs[0] in renamed:
                continue
        kept.append(node)
    graph.nodes = kept
    _rename_uses(graph, renamed)
    _drop_dead_nodes(graph)
    return len(renamed)
