"""ONNX models into mnnpy's graph: decoded by the core (`_core.read_onnx`, which maps the file
and copies each weight once, into a read-only array; the onnx package is not needed), then the
graph is simplified (constants folded into weights, Identity/Dropout dropped, BatchNorm folded
into Conv/Gemm, MatMul + bias Add fused, activations fused into Conv) before it is saved or
run."""
import os

import numpy as np

from .. import _core
from ._graph import Graph, Node, Subgraph, ValueInfo, node_reads
from ._onnx_schemas import ARITIES, SCHEMAS
from ._qdq_fusion import fuse_qdq

# ONNX TensorProto data types -> NumPy dtype names.
ONNX_DTYPES = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 9: "bool",
               10: "float16", 11: "float64", 12: "uint32", 13: "uint64", 16: "bfloat16"}

# Activations a Conv can run in its epilogue: ONNX op -> (activation code, attrs it needs).
ACTIVATION_CODES = {"Relu": 1, "Clip": 2, "Sigmoid": 3, "HardSwish": 5, "Gelu": 6, "HardSigmoid": 7}
SILU_CODE = 4

DEFAULT_DOMAINS = ("", "ai.onnx")  # two names of ONNX's own operator set
from ._onnx_qoperator_ops import MICROSOFT_OPS  # noqa: E402  (onnxruntime's QOperator contrib ops)
# Protobuf refuses to serialize a message of 2 GiB or more in one piece.
PROTOBUF_LIMIT = 2**31 - 1


def read_onnx(model):
    """An ONNX model (a path, bytes or an onnx ModelProto) into a Graph (no simplification yet)."""
    if isinstance(model, (str, os.PathLike)):
        if not os.path.exists(model):
            raise FileNotFoundError(f"no such ONNX file: '{model}'")
        proto = _core.read_onnx(os.fsdecode(model))
    elif isinstance(model, (bytes, bytearray, memoryview)):
        proto = _core.read_onnx(model)
    else:
        proto = _core.read_onnx(_serialized(model))
    opset = 1
    for domain, version in proto["opset_import"]:
        if domain in DEFAULT_DOMAINS:
            opset = version
    g = proto["graph"]
    weights = {}
    nodes = _read_nodes(g, weights, opset=opset)
    inputs = [_value_info(v) for v in g["inputs"] if v[0] not in weights]
    outputs = [_value_info(v) for v in g["outputs"]]
    graph = Graph(nodes, weights, inputs, outputs, opset, proto["producer_name"])
    graph.check()
    return graph


def _serialized(model):
    """The bytes of an onnx ModelProto. One of 2 GiB or more (its external data loaded into it)
    is serialized a piece at a time: a message's encoding is its fields' encodings one after
    another, so the model without its graph, then the graph without its initializers, then each
    initializer join into the bytes of the whole."""
    if not hasattr(model, "SerializeToString"):
        raise TypeError(f"read_onnx takes a path, bytes or an onnx ModelProto, got {type(model).__name__}")
    if model.ByteSize() <= PROTOBUF_LIMIT:
        return model.SerializeToString()
    graph = model.graph
    graph_bytes = [_without(graph, "initializer").SerializeToString()]
    graph_bytes += [_length_delimited(5, t.SerializeToString()) for t in graph.initializer]
    return _without(model, "graph").SerializeToString() + _length_delimited(7, b"".join(graph_bytes))


def _without(message, name):
    """A copy of a protobuf message without one of its fields."""
    copy = type(message)()
    for field, value in message.ListFields():
        if field.name == name:
            continue
        repeated = field.is_repeated if hasattr(field, "is_repeated") else field.label == field.LABEL_REPEATED
        if repeated:
            getattr(copy, field.name).extend(value)
        elif field.type == field.TYPE_MESSAGE:
            getattr(copy, field.name).CopyFrom(value)
        else:
            setattr(copy, field.name, value)
    return copy


def _length_delimited(number, payload):
    """A protobuf field of wire type 2: its tag, its length, its bytes."""
    def varint(n):
        out = bytearray()
        while n >= 0x80:
            out.append(n & 0x7F | 0x80)
            n >>= 7
        return bytes(out) + bytes([n])
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def schema_arities(op_type, opset):
    """(inputs, outputs) of the ONNX schema an `op_type` node follows in a model of `opset` (see
    _onnx_schemas.py): its newest version not newer than the opset, or its newest of all for an
    operator newer than that opset; None for operators ONNX does not define."""
    versions = SCHEMAS.get(op_type)
    if versions is None:
        return None
    opset = max(int(opset), 1)
    return ARITIES[next((v for v in reversed(versions) if v[0] <= opset), versions[-1])[1]]


def _check_arity(op_type, inputs, outputs, name, opset):
    """ValueError when a node lacks an input its operator's ONNX schema requires, or has more
    inputs or outputs than it allows (operators ONNX does not define are left to the converter)."""
    arities = schema_arities(op_type, opset)
    if arities is None:
        return
    formals, (output_count, variadic_output) = arities
    for k, (formal, option, min_arity) in enumerate(formals):
        if option == "single" and (k >= len(inputs) or not inputs[k]):
            raise ValueError(f"node '{name}' ({op_type}): input {k + 1} ('{formal}') is required but the node "
                             f"has {'none' if k >= len(inputs) else 'an empty name'} there")
        if option == "variadic" and len(inputs) - k < min_arity:
            raise ValueError(f"node '{name}' ({op_type}): at least {k + min_arity} inputs are required, "
                             f"the node has {len(inputs)}")
    variadic_input = bool(formals) and formals[-1][1] == "variadic"
    for what, count, limit, variadic in (("input", len(inputs), len(formals), variadic_input),
                                         ("output", len(outputs), output_count, variadic_output)):
        if count > limit and not variadic:
            raise ValueError(f"node '{name}' ({op_type}): {count} {what}s given, the operator takes at most {limit}")


# Operators whose attributes hold subgraphs, and those attributes.
SUBGRAPH_ATTRIBUTES = {"If": ("then_branch", "else_branch"), "Loop": ("body",), "Scan": ("body",)}


def _read_nodes(g, weights, prefix="", opset=13, renamed=None):
    """The nodes of a graph (or subgraph) from `_core.read_onnx`; its initializers and Constant
    nodes go into `weights`. All graphs share `weights`, so a subgraph's constant whose name a
    sibling subgraph already gave to another value is renamed there (`renamed`: old -> new
    names in scope, which this call extends)."""
    renamed = {} if renamed is None else renamed

    def add_weight(name, value):
        if prefix and name in weights and not _same_array(weights[name], value):
            new = f"{prefix}{name}"
            while new in weights:
                new += "_"
            renamed[name] = new
            name = new
        else:
            renamed.pop(name, None)  # a local name hides an outer one renamed elsewhere
        weights[name] = value

    for name, value in g["initializers"].items():
        add_weight(name, value)
    nodes = []
    for i, (op_type, domain, node_name, inputs, outputs, attrs) in enumerate(g["nodes"]):
        if domain not in DEFAULT_DOMAINS and not (domain == "com.microsoft" and op_type in MICROSOFT_OPS):
            raise ValueError(f"node '{node_name or i}': operator domain '{domain}' ({op_type}) is not supported")
        name = node_name or f"{prefix}{op_type}_{i}"
        _check_arity(op_type, inputs, outputs, name, opset)
        inputs = [renamed.get(x, x) for x in inputs]
        for key, value in attrs.items():
            if isinstance(value, dict):  # a graph
                if key not in SUBGRAPH_ATTRIBUTES.get(op_type, ()):
                    raise ValueError(f"node '{name}' ({op_type}): attribute '{key}' holds a subgraph or another "
                                     "kind mnnpy cannot convert")
                attrs[key] = _read_subgraph(value, weights, f"{name}/{key}/", opset, renamed)
        if op_type == "Constant":
            if not outputs:
                raise ValueError(f"Constant node '{name}' has no output")
            add_weight(outputs[0], _constant_value(attrs, node_name))
            continue
        for o in outputs:
            renamed.pop(o, None)
        nodes.append(Node(op_type, inputs, outputs, attrs, name))
    return nodes


def _read_subgraph(g, weights, prefix, opset, renamed):
    """A graph attribute as a Subgraph: names it binds itself (its inputs) hide outer ones."""
    inputs = [v[0] for v in g["inputs"]]
    scope = {k: v for k, v in renamed.items() if k not in inputs}
    nodes = _read_nodes(g, weights, prefix, opset, scope)
    return Subgraph(nodes, [scope.get(v[0], v[0]) for v in g["outputs"]], inputs)


def _same_array(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")


def _constant_value(attrs, node_name):
    if "value" in attrs:
        return attrs["value"]
    for key, dtype in (("value_float", np.float32), ("value_int", np.int64)):
        if key in attrs:
            return np.array(attrs[key], dtype)
    for key, dtype in (("value_floats", np.float32), ("value_ints", np.int64)):
        if key in attrs:
            return np.array(attrs[key], dtype)
    raise ValueError(f"Constant node '{node_name}': no value attribute mnnpy understands ({sorted(attrs)})")


def _value_info(v):
    name, elem_type, dims = v
    return ValueInfo(name, ONNX_DTYPES.get(elem_type, "float32"),
                     [d if isinstance(d, int) else (d or None) for d in dims or []])


# ------------------------------------------------------------------ simplification passes
def simplify(graph, level=2):
    """Graph passes by optimize level: 0 none; 1 drop Identity/Dropout and dead nodes; 2 also
    fold BatchNorm into Conv/ConvTranspose/Gemm, fuse MatMul + bias Add, activations into Conv,
    DequantizeLinear -> Conv/MatMul -> QuantizeLinear into the int8 ops (_qdq_fusion.py), and the
    GELU, LayerNorm and attention patterns."""
    if level >= 1:
        _drop_identities(graph)
        _drop_dead_nodes(graph)
    if level >= 2:
        _fold_batch_norm(graph)
        _fuse_matmul_bias(graph)
        _fuse_conv_activations(graph)
        fuse_qdq(graph)  # after the activations: a ReLU fused into a Conv is kept as a clamp
        _fuse_gelu(graph)
        _fuse_layer_norm(graph)
        _fuse_attention(graph)
        _drop_dead_nodes(graph)
    return graph


def _rename_uses(graph, renamed):
    """Every read of a name in `renamed` (old -> new; chains followed) reads the new name, in
    subgraphs too, at any depth (where a subgraph defines the name itself, its own reads are
    left alone): one pass over the graph, however many names change."""
    def resolve(x, hidden):
        while x in renamed and x not in hidden:
            x = renamed[x]
        return x

    def rename(nodes, hidden):
        for n in nodes:
            n.inputs = [resolve(x, hidden) for x in n.inputs]
            for v in n.attrs.values():
                if isinstance(v, Subgraph):
                    inner = hidden | v.local_names()
                    rename(v.nodes, inner)
                    v.outputs = [resolve(o, inner) for o in v.outputs]
    if renamed:
        rename(graph.nodes, frozenset())


def _drop_identities(graph):
    outputs = {v.name for v in graph.outputs}
    inputs = {v.name for v in graph.inputs}
    renamed = {}  # applied once at the end; a node's input is resolved through it when read here
    kept = []
    for n in graph.nodes:
        passthrough = n.op == "Identity" or (n.op == "Dropout" and len(n.outputs) == 1 or
                                             n.op == "Dropout" and not any(n.outputs[1:]))
        source = n.inputs[0] if n.inputs else None
        while source in renamed:
            source = renamed[source]
        if passthrough and n.inputs and n.outputs[0] not in outputs:
            renamed[n.outputs[0]] = source
            continue
        if passthrough and n.outputs[0] in outputs and source not in inputs \
                and source not in graph.weights and source not in outputs:
            # Let the producer write the graph output directly.
            for p in kept:
                p.outputs = [n.outputs[0] if o == source else o for o in p.outputs]
            renamed[source] = n.outputs[0]
            continue
        kept.append(n)
    graph.nodes = kept
    _rename_uses(graph, renamed)


def _drop_dead_nodes(graph):
    live = {v.name for v in graph.outputs}
    kept = []
    for n in reversed(graph.nodes):
        if any(o in live for o in n.outputs if o):
            kept.append(n)
            live.update(node_reads(n))
    graph.nodes = kept[::-1]
    graph.weights = {k: w for k, w in graph.weights.items() if k in live}


def _single_consumer(graph, consumers, name):
    """The index of the one node reading `name` (`consumers` is graph.consumers()), or None."""
    uses = consumers.get(name, [])
    is_output = any(v.name == name for v in graph.outputs)
    return uses[0][0] if len(uses) == 1 and not is_output else None


def _fold_batch_norm(graph):
    """BatchNormalization after a Conv or ConvTranspose (per output channel) or a Gemm with
    constant B (per output column) is folded into that node's weights and bias."""
    producers, consumers = graph.producers(), graph.consumers()
    removed = set()
    for i, bn in enumerate(graph.nodes):
        if bn.op != "BatchNormalization" or len([o for o in bn.outputs if o]) != 1:
            continue
        src = producers.get(bn.inputs[0])
        if (src is None or graph.nodes[src].op not in ("Conv", "ConvTranspose", "Gemm")
                or _single_consumer(graph, consumers, bn.inputs[0]) != i):
            continue
        node = graph.nodes[src]
        names = bn.inputs[1:5]
        if not all(x in graph.weights for x in names) or node.inputs[1] not in graph.weights:
            continue
        has_bias = len(node.inputs) > 2 and bool(node.inputs[2])
        if has_bias and node.inputs[2] not in graph.weights:
            continue
        scale, shift, mean, var = (graph.weights[x].astype(np.float64) for x in names)
        factor = scale / np.sqrt(var + bn.attrs.get("epsilon", 1e-5))
        w = graph.weights[node.inputs[1]]
        bias = graph.weights[node.inputs[2]].astype(np.float64) if has_bias else np.zeros(factor.shape)
        if node.op == "Conv":
            folded_w = w.astype(np.float64) * factor.reshape(-1, *([1] * (w.ndim - 1)))
        elif node.op == "ConvTranspose":
            # W is (C_in, C_out/group, k...): output channel g * C_out/group + j is column j of group g's rows.
            group = int(node.attrs.get("group", 1))
            if w.ndim < 3 or group <= 0 or w.shape[0] % group or w.shape[1] * group != factor.size:
                continue
            grouped = w.astype(np.float64).reshape(group, w.shape[0] // group, *w.shape[1:])
            per_channel = factor.reshape(group, 1, w.shape[1], *([1] * (w.ndim - 2)))
            folded_w = (grouped * per_channel).reshape(w.shape)
        else:
            if node.attrs.get("transA", 0) or w.ndim != 2 or bias.size not in (1, factor.size):
                continue
            # Y = alpha A B + beta C; the channels are B's columns (rows when transB).
            alpha, beta = node.attrs.get("alpha", 1.0), node.attrs.get("beta", 1.0)
            transposed = node.attrs.get("transB", 0)
            folded_w = w.astype(np.float64) * alpha * (factor[:, None] if transposed else factor[None, :])
            bias = beta * bias.reshape(-1)
            node.attrs = {k: v for k, v in node.attrs.items() if k not in ("alpha", "beta")}
        folded_b = (bias - mean) * factor + shift
        wname, bname = node.name + ".weight_bn", node.name + ".bias_bn"
        graph.weights[wname], graph.weights[bname] = folded_w.astype(w.dtype), folded_b.astype(w.dtype)
        node.inputs = [node.inputs[0], wname, bname]
        node.outputs = [bn.outputs[0]]
        removed.add(i)
    graph.nodes = [n for i, n in enumerate(graph.nodes) if i not in removed]


def _fuse_matmul_bias(graph):
    """MatMul(A, W) followed by Add with a constant vector over W's columns becomes one MatMul
    with the vector as a third (bias) input (an mnnpy extension of the ONNX node, like Gemm's C
    for A of any rank)."""
    producers, consumers = graph.producers(), graph.consumers()
    removed = set()
    for i, add in enumerate(graph.nodes):
        if add.op != "Add" or len(add.inputs) != 2:
            continue
        for side in (0, 1):
            y, bias_name = add.inputs[side], add.inputs[1 - side]
            src = producers.get(y)
            if src is None or src in removed or bias_name not in graph.weights:
                continue
            mm = graph.nodes[src]
            if mm.op != "MatMul" or len(mm.inputs) != 2 or _single_consumer(graph, consumers, y) != i:
                continue
            w, bias = graph.weights.get(mm.inputs[1]), graph.weights[bias_name]
            if w is None or w.ndim != 2 or bias.dtype != w.dtype or bias.shape != (w.shape[1],):
                continue
            mm.inputs = [mm.inputs[0], mm.inputs[1], bias_name]
            mm.outputs = [add.outputs[0]]
            removed.add(i)
            break
    graph.nodes = [n for i, n in enumerate(graph.nodes) if i not in removed]


def _fuse_conv_activations(graph):
    # One pass: a fusion changes only the conv's output name and drops its activation nodes,
    # which no other conv's match reads.
    consumers = graph.consumers()
    outputs = {v.name for v in graph.outputs}
    fused = set()
    for conv in graph.nodes:
        if conv.op != "Conv" or "activation" in conv.attrs:
            continue
        y = conv.outputs[0]
        if y in outputs:
            continue
        users = sorted({j for j, _ in consumers.get(y, [])})
        acts = [graph.nodes[j] for j in users]
        if len(users) == 1 and acts[0].op in ACTIVATION_CODES:
            act = acts[0]
            attrs = _activation_attrs(graph, act)
            if attrs is None:
                continue
            conv.attrs.update(attrs)
            conv.outputs = [act.outputs[0]]
            fused.add(users[0])
            continue
        # SiLU: Sigmoid(y) and Mul(y, Sigmoid(y)), y used by exactly these two.
        if len(users) == 2 and {a.op for a in acts} == {"Sigmoid", "Mul"}:
            k = 0 if acts[0].op == "Sigmoid" else 1
            sig, mul = acts[k], acts[1 - k]
            if set(mul.inputs) == {y, sig.outputs[0]} and len(consumers.get(sig.outputs[0], [])) == 1 \
                    and sig.outputs[0] not in outputs:
                conv.attrs["activation"] = SILU_CODE
                conv.outputs = [mul.outputs[0]]
                fused.update(users)
    graph.nodes = [n for j, n in enumerate(graph.nodes) if j not in fused]


def _activation_attrs(graph, act):
    code = ACTIVATION_CODES[act.op]
    if act.op == "Clip":
        lo, hi = act.attrs.get("min", -np.inf), act.attrs.get("max", np.inf)
        for k, slot in ((1, "min"), (2, "max")):
            if len(act.inputs) > k and act.inputs[k]:
                if act.inputs[k] not in graph.weights:
                    return None
                value = float(graph.weights[act.inputs[k]])
                lo, hi = (value, hi) if slot == "min" else (lo, value)
        return {"activation": code, "clip_min": float(lo), "clip_max": float(hi)}
    if act.op == "Gelu" and act.attrs.get("approximate", "none") != "none":
        return None
    if act.op == "HardSigmoid":
        return {"activation": code, "alpha": act.attrs.get("alpha", 0.2), "beta": act.attrs.get("beta", 0.5)}
    return {"activation": code}


# ------------------------------------------------------------------ transformer patterns
class _Matcher:
    """Lookups for pattern passes: the producer of a name, its single consumer, constants."""

    def __init__(self, graph):
        self.graph = graph
        self.producer = {out: n for n in graph.nodes for out in n.outputs}
        self.uses = {}
        for n in graph.nodes:
            for x in node_reads(n):  # a subgraph's read of an outer name is a use too
                self.uses.setdefault(x, []).append(n)
        self.outputs = {v.name for v in graph.outputs}

    def only_user(self, name, op):
        users = self.uses.get(name, [])
        if len(users) != 1 or name in self.outputs or users[0].op != op:
            return None
        return users[0]

    def scalar(self, name):
        w = self.graph.weights.get(name)
        return float(w.reshape(-1)[0]) if w is not None and w.size == 1 else None

    def other_input(self, node, name):
        return node.inputs[1] if node.inputs[0] == name else node.inputs[0] if node.inputs[1] == name else None


def _close(value, target, tol=1e-4):
    return value is not None and abs(value - target) <= tol * abs(target)


def _fuse_gelu(graph):
    """x * 0.5 * (1 + erf(x / sqrt 2)), as exporters spell GELU, becomes one Gelu node."""
    m = _Matcher(graph)
    removed, added = set(), {}
    for erf in graph.nodes:
        if erf.op != "Erf":
            continue
        scale = m.producer.get(erf.inputs[0])
        if scale is None or scale.op not in ("Div", "Mul") or m.only_user(scale.outputs[0], "Erf") is None:
            continue
        c = m.scalar(scale.inputs[1])
        if not (_close(c, 2 ** 0.5) if scale.op == "Div" else _close(c, 2 ** -0.5)):
            continue
        x = scale.inputs[0]
        plus = m.only_user(erf.outputs[0], "Add")
        if plus is None or not _close(m.scalar(m.other_input(plus, erf.outputs[0])), 1.0):
            continue
        # Either (x * (1 + erf)) * 0.5, or (x * 0.5) * (1 + erf), in any operand order.
        times = m.only_user(plus.outputs[0], "Mul")
        if times is None:
            continue
        other = m.other_input(times, plus.outputs[0])
        chain = [scale, erf, plus, times]
        if other == x:
            half = m.only_user(times.outputs[0], "Mul")
            if half is None or not _close(m.scalar(m.other_input(half, times.outputs[0])), 0.5):
                continue
            chain.append(half)
            out = half.outputs[0]
        else:
            half = m.producer.get(other)
            if half is None or half.op != "Mul" or x not in half.inputs or \
                    not _close(m.scalar(m.other_input(half, x)), 0.5) or len(m.uses.get(other, [])) != 1:
                continue
            chain.append(half)
            out = times.outputs[0]
        removed.update(id(n) for n in chain)
        added[id(chain[-1] if other == x else times)] = Node("Gelu", [x], [out], {}, erf.name + "/gelu")
    if removed:
        graph.nodes = [added.get(id(n), n) for n in graph.nodes if id(n) not in removed or id(n) in added]


def _fuse_layer_norm(graph):
    """mean/variance over the last axis, normalize, scale and shift (as exporters before opset 17
    spell LayerNorm) becomes one LayerNormalization node."""
    m = _Matcher(graph)
    removed, added = set(), {}
    for mean in graph.nodes:
        if mean.op != "ReduceMean" or mean.attrs.get("axes") != [-1]:
            continue
        x = mean.inputs[0]
        sub = next((u for u in m.uses.get(mean.outputs[0], []) if u.op == "Sub" and u.inputs == [x, mean.outputs[0]]),
                   None)
        if sub is None or len(m.uses.get(mean.outputs[0], [])) != 1:
            continue
        centered = sub.outputs[0]
        users = m.uses.get(centered, [])
        square = next((u for u in users if u.op == "Pow" and _close(m.scalar(u.inputs[1]), 2.0)), None) or \
            next((u for u in users if u.op == "Mul" and u.inputs == [centered, centered]), None)
        div = next((u for u in users if u.op == "Div" and u.inputs[0] == centered), None)
        if square is None or div is None or len(users) != 2:
            continue
        var = m.only_user(square.outputs[0], "ReduceMean")
        if var is None or var.attrs.get("axes") != [-1]:
            continue
        add_eps = m.only_user(var.outputs[0], "Add")
        eps = m.scalar(m.other_input(add_eps, var.outputs[0])) if add_eps else None
        sqrt = m.only_user(add_eps.outputs[0], "Sqrt") if add_eps else None
        if eps is None or sqrt is None or div.inputs[1] != sqrt.outputs[0]:
            continue
        scale = m.only_user(div.outputs[0], "Mul")
        gamma = m.other_input(scale, div.outputs[0]) if scale else None
        shift = m.only_user(scale.outputs[0], "Add") if scale else None
        beta = m.other_input(shift, scale.outputs[0]) if shift else None
        gw, bw = graph.weights.get(gamma), graph.weights.get(beta)
        if gw is None or bw is None or gw.ndim != 1 or bw.ndim != 1:
            continue
        chain = [mean, sub, square, var, add_eps, sqrt, div, scale, shift]
        removed.update(id(n) for n in chain)
        added[id(shift)] = Node("LayerNormalization", [x, gamma, beta], [shift.outputs[0]],
                                {"axis": -1, "epsilon": eps}, mean.name + "/layer_norm")
    if removed:
        graph.nodes = [added.get(id(n), n) for n in graph.nodes if id(n) not in removed or id(n) in added]


def _fuse_attention(graph):
    """MatMul(q, kt) [* or / a scalar] [+ mask] -> Softmax(last axis) -> MatMul(., v), as
    exporters spell attention, becomes one ScaledDotProductAttention node: the scores of a block
    of queries stay in cache instead of making three round trips through memory."""
    m = _Matcher(graph)
    removed, added = set(), {}
    for softmax in graph.nodes:
        if softmax.op != "Softmax" or softmax.attrs.get("axis", -1) != -1:
            continue
        chain, probs = [softmax], softmax.outputs[0]
        cast = m.only_user(probs, "Cast")
        if cast is not None and cast.attrs.get("to") == 1:  # a float32 -> float32 cast (GPT-2)
            chain.append(cast)
            probs = cast.outputs[0]
        out = m.only_user(probs, "MatMul")
        if out is None or out.inputs[0] != probs:
            continue
        chain.append(out)
        mask, scale = "", 1.0
        node = m.producer.get(softmax.inputs[0])
        if node is not None and node.op == "Add" and m.only_user(node.outputs[0], "Softmax") is softmax:
            scores = next((x for x in node.inputs if m.producer.get(x) is not None and
                           m.producer[x].op in ("Mul", "Div", "MatMul")), None)
            if scores is None:
                continue
            mask = m.other_input(node, scores)
            chain.append(node)
            node = m.producer.get(scores)
        if node is not None and node.op in ("Mul", "Div") and len(m.uses.get(node.outputs[0], [])) == 1:
            value = m.scalar(node.inputs[1])
            if value is None and node.op == "Mul":
                value = m.scalar(node.inputs[0])
                scores = node.inputs[1]
            else:
                scores = node.inputs[0]
            if value is None or (node.op == "Div" and value == 0):
                continue
            scale = value if node.op == "Mul" else 1.0 / value
            chain.append(node)
            node = m.producer.get(scores)
        if node is None or node.op != "MatMul" or len(m.uses.get(node.outputs[0], [])) != 1 or \
                node.outputs[0] in m.outputs:
            continue
        if any(n.outputs[0] in m.outputs for n in chain if n is not out):
            continue
        chain.append(node)
        removed.update(id(n) for n in chain)
        added[id(out)] = Node("ScaledDotProductAttention", [node.inputs[0], node.inputs[1], out.inputs[1], mask],
                              [out.outputs[0]], {"scale": float(scale)}, softmax.name + "/attention")
    if removed:
        graph.nodes = [added.get(id(n), n) for n in graph.nodes if id(n) not in removed or id(n) in added]
