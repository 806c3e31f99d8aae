"""QDQ models (DequantizeLinear -> Conv -> QuantizeLinear, as onnxruntime's quantize_static
writes them with QuantFormat.QDQ) onto the int8 kernels: each Conv whose input and weights come
dequantized from 8-bit tensors and whose only use is a QuantizeLinear becomes one QLinearConv
(a fused ReLU kept as its clamp at the output's zero point), and each MatMul of that form with
per-tensor scales one QLinearMatMul. The integer operands, scales and zero points are the ones
the DequantizeLinear/QuantizeLinear nodes held; the bias, dequantized from int32 with the scale
x_scale * w_scale (onnxruntime's convention), is taken as that int32; a bias with another scale,
or a float bias, is quantized (its float value) with that scale, rounding half to even. The results are those of onnxruntime's
fused kernels: the integer sums are exact, and the float path's only rounding is the output's
quantization, which both apply. Unused DequantizeLinear nodes of the weights go with them."""
import numpy as np

from ._graph import Node, node_reads
from ._int8_layout import to_channels_last

_EIGHT_BIT = (np.dtype(np.int8), np.dtype(np.uint8))
_CONV_ATTRS = ("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")
RELU_CODE = 1


def _scalar_weight(graph, name):
    w = graph.weights.get(name) if name else None
    return w is not None and np.asarray(w).size == 1


def _producers_and_readers(graph):
    """The node producing each name, and the nodes reading it."""
    producer = {out: n for n in graph.nodes for out in n.outputs}
    uses = {}
    for n in graph.nodes:
        for x in node_reads(n):
            uses.setdefault(x, []).append(n)
    return producer, uses


def fuse_qdq(graph):
    """Rewrites graph.nodes in place (see the module docstring), then switches the int8
    convolutions to channels last (_int8_layout.py); returns the graph."""
    fuse_int8_ops(graph)  # the ops around the convolutions (below)
    fuse_int8_lookups(graph)
    producer, uses = _producers_and_readers(graph)
    outputs = {v.name for v in graph.outputs}
    weights = graph.weights
    replaced = {}  # id(QuantizeLinear node) -> new node; id(float node) -> None (dropped)

    def dequantized(name, per_axis_ok, axis=None):
        """(q, scale, zero) of a DequantizeLinear producing `name`, when its zero point is given
        and its input is 8-bit, else None."""
        dq = producer.get(name)
        if dq is None or dq.op != "DequantizeLinear" or len(dq.inputs) < 3 or not dq.inputs[2]:
            return None
        q, scale, zero = dq.inputs[:3]
        if scale not in weights or zero not in weights or np.dtype(weights[zero].dtype) not in _EIGHT_BIT:
            return None
        if not per_axis_ok and not (_scalar_weight(graph, scale) and _scalar_weight(graph, zero)):
            return None
        if not _scalar_weight(graph, scale) and dq.attrs.get("axis", 1) != axis:
            return None
        return q, scale, zero

    for node in graph.nodes:
        if node.op not in ("Conv", "MatMul") or len(node.outputs) != 1:
            continue
        y = node.outputs[0]
        users = uses.get(y, [])
        if y in outputs or len(users) != 1 or users[0].op != "QuantizeLinear":
            continue
        quant = users[0]
        if len(quant.inputs) < 3 or not (_scalar_weight(graph, quant.inputs[1]) and _scalar_weight(graph, quant.inputs[2])):
            continue
        if np.dtype(weights[quant.inputs[2]].dtype) not in _EIGHT_BIT:
            continue
        x = dequantized(node.inputs[0], per_axis_ok=False)
        if x is None:
            continue
        if node.op == "Conv":
            w = dequantized(node.inputs[1], per_axis_ok=True, axis=0)
            activation = node.attrs.get("activation", 0)
            if w is None or w[0] not in weights or np.asarray(weights[w[0]]).ndim != 4 or activation not in (0, RELU_CODE):
                continue
            if any(k not in _CONV_ATTRS + ("activation",) for k in node.attrs):
                continue
            inputs = [x[0], x[1], x[2], w[0], w[1], w[2], quant.inputs[1], quant.inputs[2]]
            if len(node.inputs) > 2 and node.inputs[2]:
                bias = _int32_bias(graph, producer, node.inputs[2], x[1], w[1], node.name)
                if bias is None:
                    continue
                inputs.append(bias)
            attrs = {k: v for k, v in node.attrs.items() if k in _CONV_ATTRS}
            if activation == RELU_CODE:
                attrs["activation"] = RELU_CODE
            replaced[id(quant)] = Node("QLinearConv", inputs, list(quant.outputs), attrs, node.name)
        else:
            w = dequantized(node.inputs[1], per_axis_ok=False)
            if w is None or len(node.inputs) != 2:
                continue
            replaced[id(quant)] = Node("QLinearMatMul", [x[0], x[1], x[2], w[0], w[1], w[2], quant.inputs[1],
                                                         quant.inputs[2]], list(quant.outputs), {}, node.name)
        replaced[id(node)] = None
    if replaced:
        nodes = []
        for n in graph.nodes:
            new = replaced.get(id(n), n)
            if new is not None:
                nodes.append(new)
        graph.nodes = _without_unread_dequantize(nodes, outputs)  # of weights, mostly
    return _fuse_residual_sums(_quantize_into_channels_last(to_channels_last(graph)))


def _same_constant(graph, a, b):
    return a == b or (a in graph.weights and b in graph.weights and _same_value(graph, a, b))


def _fuse_residual_sums(graph):
    """A QLinearAdd with an operand that is the output of a QLinearConv which nothing else reads,
    at that output's scale and zero point (a residual connection), becomes one QLinearConvAdd:
    the convolution's inputs (bias "" where it has none), then the other operand, its scale and
    zero point, and the sum's scale and zero point. The convolution's kernel adds the operand as it
    requantizes each tile of its output, with QLinearAdd's bytes, and the output is never stored
    on its own. Where both operands qualify, the later convolution takes the sum (the other
    operand is then ready before it). Returns the graph."""
    producer, uses = _producers_and_readers(graph)
    outputs = {v.name for v in graph.outputs}
    position = {id(n): i for i, n in enumerate(graph.nodes)}
    fused, dropped = {}, set()
    for node in graph.nodes:
        if node.op != "QLinearAdd" or len(node.inputs) != 8 or len(node.outputs) != 1:
            continue
        candidates = []
        for slot in (0, 3):
            conv = producer.get(node.inputs[slot])
            if conv is None or conv.op != "QLinearConv" or id(conv) in dropped or len(conv.inputs) < 8:
                continue
            y = conv.outputs[0]
            if len(conv.outputs) != 1 or y in outputs or len(uses.get(y, [])) != 1:
                continue
            if _same_constant(graph, conv.inputs[6], node.inputs[slot + 1]) and \
                    _same_constant(graph, conv.inputs[7], node.inputs[slot + 2]):
                candidates.append((position[id(conv)], slot, conv))
        if not candidates:
            continue
        _, slot, conv = max(candidates, key=lambda c: c[0])
        other = 3 - slot
        bias = conv.inputs[8] if len(conv.inputs) > 8 else ""
        inputs = list(conv.inputs[:8]) + [bias] + list(node.inputs[other:other + 3]) + list(node.inputs[6:8])
        fused[id(node)] = Node("QLinearConvAdd", inputs, list(node.outputs), dict(conv.attrs), conv.name)
        dropped.add(id(conv))
    if fused:
        graph.nodes = [fused.get(id(n), n) for n in graph.nodes if id(n) not in dropped]
    return graph


def _quantize_into_channels_last(graph):
    """A per-tensor QuantizeLinear whose output only a transpose to channels last reads (the
    layout pass's, at a region's border: a model's input) becomes one QuantizeLinear with
    channels_last 1, writing the 8-bit tensor straight in that layout. Returns the graph."""
    producer, uses = _producers_and_readers(graph)
    outputs = {v.name for v in graph.outputs}
    fused, dropped = {}, set()
    for node in graph.nodes:
        if node.op != "Transpose" or list(node.attrs.get("perm", ())) != [0, 2, 3, 1]:
            continue
        quant = producer.get(node.inputs[0])
        if quant is None or quant.op != "QuantizeLinear" or len(quant.inputs) < 3 or not quant.inputs[2] or \
                quant.outputs[0] in outputs or len(uses.get(quant.outputs[0], [])) != 1:
            continue
        if not (_scalar_weight(graph, quant.inputs[1]) and _scalar_weight(graph, quant.inputs[2])):
            continue
        fused[id(node)] = Node("QuantizeLinear", list(quant.inputs), list(node.outputs),
                               {**quant.attrs, "channels_last": 1}, quant.name)
        dropped.add(id(quant))
    if fused:
        graph.nodes = [fused.get(id(n), n) for n in graph.nodes if id(n) not in dropped]
    return graph


def _without_unread_dequantize(nodes, outputs):
    """`nodes` less the DequantizeLinear nodes that nothing (no node, no graph output) reads."""
    while True:
        read = {x for n in nodes for x in node_reads(n)} | outputs
        kept = [n for n in nodes if n.op != "DequantizeLinear" or any(o in read for o in n.outputs)]
        if len(kept) == len(nodes):
            return kept
        nodes = kept


def _int32_bias(graph, producer, name, x_scale, w_scale, where):
    """The name of an int32 bias for a fused QLinearConv: the quantized bias itself when it was
    dequantized with scale x_scale * w_scale and zero 0, else the float bias quantized so."""
    weights = graph.weights
    scale = (np.asarray(weights[x_scale], np.float32).reshape(()) *
             np.asarray(weights[w_scale], np.float32).reshape(-1)).astype(np.float32)
    dq = producer.get(name)
    if dq is not None and dq.op == "DequantizeLinear":
        q, s = dq.inputs[0], dq.inputs[1]
        zero = dq.inputs[2] if len(dq.inputs) > 2 else ""
        if q not in weights or s not in weights or np.dtype(weights[q].dtype) != np.dtype(np.int32) \
                or (zero and np.asarray(weights[zero]).any()):
            return None
        bias_scale = np.broadcast_to(np.asarray(weights[s], np.float32).reshape(-1), scale.shape)
        if np.array_equal(bias_scale, scale):
            return q
        # Another scale (some models share a bias between layers): the dequantized float bias,
        # as DequantizeLinear computes it, quantized with this layer's scale.
        value = (np.asarray(weights[q]).reshape(-1).astype(np.float32) * bias_scale).astype(np.float32)
    elif name in weights and np.dtype(weights[name].dtype).kind == "f":
        value = np.asarray(weights[name], np.float32).reshape(-1)
    else:
        return None
    out = f"{name}/int32_{x_scale}"
    quantized = np.rint(value.astype(np.float64) / scale.astype(np.float64))
    if np.abs(quantized).max(initial=0) >= 2 ** 31:
        return None
    weights[out] = quantized.astype(np.int32)
    return out


# ---------------------------------------------------------------- 8-bit elementwise, pooling, concat, Gemm
# The ops around the convolutions, fused by fuse_int8_ops (docs/int8.md, "int8 elementwise ops"):
#   DQ, DQ -> Add/Mul -> Q                      QLinearAdd / QLinearMul
#   DQ -> MaxPool/Reshape/Transpose/Flatten/Squeeze/Unsqueeze -> Q, the same scale and zero point:
#                                               the op on the 8-bit tensor (exact: they only move or
#                                               compare values, and quantization keeps the order)
#   DQ -> GlobalAveragePool/AveragePool -> Q    QLinearGlobalAveragePool / QLinearAveragePool
#   DQ -> Softmax -> Q                          QLinearSoftmax (attention's; its axis and the
#                                               model's opset, whose Softmax it means)
#   DQ, ... -> Concat -> Q                      QLinearConcat (a plain Concat when every input has
#                                               the output's scale and zero point)
#   DQ, DQ(weight) -> MatMul -> Q, the weight per column
#                                               QLinearMatMul with per-column b_scale, b_zero_point
#   DQ, DQ(weight) -> MatMul -> float           MatMulInteger, Cast, Mul by a_scale * b_scale
#   DQ, DQ(weight)[, bias] -> Gemm [-> Q]       QGemm (int32 bias; quantized or float output)
_ORDER_KEEPING = ("MaxPool", "Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze")


def _per_tensor_dq(graph, producer, name):
    """(q, scale, zero) of a DequantizeLinear with one scale and one 8-bit zero point (both
    weights) producing `name`, else None."""
    dq = producer.get(name)
    if dq is None or dq.op != "DequantizeLinear" or len(dq.inputs) < 3 or not dq.inputs[2]:
        return None
    q, scale, zero = dq.inputs[:3]
    weights = graph.weights
    if scale not in weights or zero not in weights or np.dtype(weights[zero].dtype) not in _EIGHT_BIT:
        return None
    if not (_scalar_weight(graph, scale) and _scalar_weight(graph, zero)):
        return None
    return q, scale, zero


def _weight_dq(graph, producer, name, axis):
    """(q, scale, zero) of a DequantizeLinear of a 2-D 8-bit weight, per tensor or per slice
    along `axis`, else None."""
    dq = producer.get(name)
    if dq is None or dq.op != "DequantizeLinear" or len(dq.inputs) < 3 or not dq.inputs[2]:
        return None
    q, scale, zero = dq.inputs[:3]
    weights = graph.weights
    if any(x not in weights for x in (q, scale, zero)) or np.asarray(weights[q]).ndim != 2:
        return None
    if np.dtype(weights[zero].dtype) not in _EIGHT_BIT:
        return None
    if _scalar_weight(graph, scale) and _scalar_weight(graph, zero):
        return q, scale, zero
    count = np.asarray(weights[q]).shape[axis]
    axis_attr = dq.attrs.get("axis", 1)
    if axis_attr < 0:
        axis_attr += 2
    if axis_attr != axis or np.asarray(weights[scale]).size != count or np.asarray(weights[zero]).size != count:
        return None
    return q, scale, zero


def _same_value(graph, a, b):
    w = graph.weights
    return a == b or (np.asarray(w[a]).dtype == np.asarray(w[b]).dtype
                      and np.array_equal(np.asarray(w[a]).reshape(-1), np.asarray(w[b]).reshape(-1)))


def fuse_int8_ops(graph):
    """Rewrites graph.nodes in place (the patterns above); returns the graph."""
    producer, uses = _producers_and_readers(graph)
    outputs = {v.name for v in graph.outputs}
    weights = graph.weights
    replaced = {}  # id(node) -> list of nodes in its place (empty: dropped)

    def quantized_output(node):
        """The QuantizeLinear (one scale, one 8-bit zero point) that is the only reader of the
        node's single output, else None."""
        if len(node.outputs) != 1 or node.outputs[0] in outputs:
            return None
        users = uses.get(node.outputs[0], [])
        if len(users) != 1 or users[0].op != "QuantizeLinear" or len(users[0].inputs) < 3:
            return None
        q = users[0]
        if not (_scalar_weight(graph, q.inputs[1]) and _scalar_weight(graph, q.inputs[2])):
            return None
        if np.dtype(weights[q.inputs[2]].dtype) not in _EIGHT_BIT or id(q) in replaced:
            return None
        return q

    def zero_dtype(x):
        return np.dtype(weights[x[2]].dtype)

    for node in graph.nodes:
        op = node.op
        if op in ("Add", "Mul") and len(node.inputs) == 2 and not node.attrs:
            quant = quantized_output(node)
            a, b = (_per_tensor_dq(graph, producer, x) for x in node.inputs)
            if quant is None or a is None or b is None or not zero_dtype(a) == zero_dtype(b) == \
                    np.dtype(weights[quant.inputs[2]].dtype):
                continue
            replaced[id(quant)] = [Node("QLinear" + op, [*a, *b, quant.inputs[1], quant.inputs[2]],
                                        list(quant.outputs), {}, node.name)]
        elif op in _ORDER_KEEPING and node.inputs:
            quant = quantized_output(node)
            x = _per_tensor_dq(graph, producer, node.inputs[0])
            if quant is None or x is None or not (_same_value(graph, x[1], quant.inputs[1])
                                                  and _same_value(graph, x[2], quant.inputs[2])):
                continue
            if op == "MaxPool" and (np.asarray(weights[x[1]]).reshape(()) <= 0 or len(node.outputs) != 1):
                continue
            replaced[id(quant)] = [Node(op, [x[0]] + list(node.inputs[1:]), list(quant.outputs), dict(node.attrs),
                                        node.name)]
        elif op in ("GlobalAveragePool", "AveragePool") and len(node.inputs) == 1:
            quant = quantized_output(node)
            x = _per_tensor_dq(graph, producer, node.inputs[0])
            if quant is None or x is None or zero_dtype(x) != np.dtype(weights[quant.inputs[2]].dtype):
                continue
            if op == "AveragePool" and any(d != 1 for d in node.attrs.get("dilations", [1, 1])):
                continue
            attrs = {k: v for k, v in node.attrs.items() if k != "dilations"}
            replaced[id(quant)] = [Node("QLinear" + op, [*x, quant.inputs[1], quant.inputs[2]], list(quant.outputs),
                                        attrs, node.name)]
        elif op == "Softmax" and len(node.inputs) == 1:
            quant = quantized_output(node)
            x = _per_tensor_dq(graph, producer, node.inputs[0])
            if quant is None or x is None:
                continue
            attrs = {"axis": int(node.attrs.get("axis", -1 if graph.opset >= 13 else 1)), "opset": int(graph.opset)}
            replaced[id(quant)] = [Node("QLinearSoftmax", [*x, quant.inputs[1], quant.inputs[2]], list(quant.outputs),
                                        attrs, node.name)]
        elif op == "Concat" and node.inputs:
            quant = quantized_output(node)
            parts = [_per_tensor_dq(graph, producer, x) for x in node.inputs]
            if quant is None or any(p is None or zero_dtype(p) != np.dtype(weights[quant.inputs[2]].dtype)
                                    for p in parts):
                continue
            if all(_same_value(graph, p[1], quant.inputs[1]) and _same_value(graph, p[2], quant.inputs[2])
                   for p in parts):
                new = Node("Concat", [p[0] for p in parts], list(quant.outputs), dict(node.attrs), node.name)
            else:
                new = Node("QLinearConcat", [quant.inputs[1], quant.inputs[2]] + [v for p in parts for v in p],
                           list(quant.outputs), dict(node.attrs), node.name)
            replaced[id(quant)] = [new]
        elif op == "MatMul" and len(node.inputs) == 2:
            a = _per_tensor_dq(graph, producer, node.inputs[0])
            w = _weight_dq(graph, producer, node.inputs[1], 1)
            if a is None or w is None:
                continue
            quant = quantized_output(node)
            per_tensor = _scalar_weight(graph, w[1]) and _scalar_weight(graph, w[2])
            if quant is not None:
                if per_tensor:
                    continue  # fuse_qdq's own QLinearMatMul
                replaced[id(quant)] = [Node("QLinearMatMul", [*a, *w, quant.inputs[1], quant.inputs[2]],
                                            list(quant.outputs), {}, node.name)]
            else:
                scale = (np.asarray(weights[a[1]], np.float32).reshape(()) *
                         np.asarray(weights[w[1]], np.float32).reshape(-1)).astype(np.float32)
                scale_name = f"{node.name}/int8_product_scale"
                weights[scale_name] = scale
                acc, acc_float = f"{node.name}/int32_product", f"{node.name}/int32_product_float"
                replaced[id(node)] = [Node("MatMulInteger", [a[0], w[0], a[2], w[2]], [acc], {}, node.name),
                                      Node("Cast", [acc], [acc_float], {"to": 1}, node.name + "/cast"),
                                      Node("Mul", [acc_float, scale_name], list(node.outputs), {},
                                           node.name + "/scale")]
                continue
        elif op == "Gemm" and len(node.inputs) >= 2:
            if node.attrs.get("transA", 0) or node.attrs.get("beta", 1.0) != 1.0:
                continue
            trans_b = int(node.attrs.get("transB", 0))
            a = _per_tensor_dq(graph, producer, node.inputs[0])
            w = _weight_dq(graph, producer, node.inputs[1], 0 if trans_b else 1)
            if a is None or w is None:
                continue
            bias = ""
            if len(node.inputs) > 2 and node.inputs[2]:
                if node.attrs.get("alpha", 1.0) != 1.0:
                    continue  # QGemm scales its bias by alpha too; Gemm does not
                bias_weight = graph.weights.get(producer[node.inputs[2]].inputs[0]) \
                    if node.inputs[2] in producer else graph.weights.get(node.inputs[2])
                if bias_weight is None or np.asarray(bias_weight).ndim != 1:
                    continue
                bias = _int32_bias(graph, producer, node.inputs[2], a[1], w[1], node.name)
                if bias is None:
                    continue
            quant = quantized_output(node)
            attrs = {"transB": trans_b, "alpha": float(node.attrs.get("alpha", 1.0))}
            inputs = [*a, *w, bias]
            if quant is not None:
                replaced[id(quant)] = [Node("QGemm", inputs + [quant.inputs[1], quant.inputs[2]], list(quant.outputs),
                                            attrs, node.name)]
            else:
                replaced[id(node)] = [Node("QGemm", inputs, list(node.outputs), attrs, node.name)]
                continue
        else:
            continue
        replaced[id(node)] = []
    if not replaced:
        return graph
    nodes = [m for n in graph.nodes for m in replaced.get(id(n), [n])]
    graph.nodes = _without_unread_dequantize(nodes, outputs)
    return graph


# ---------------------------------------------------------------- 8-bit lookup tables
# DQ -> elementwise float ops -> Q, where every op reads only the dequantized value, other values
# of the region and scalar constants (GELU's Div, Erf, Add, Mul, Mul; Sigmoid; HardSwish ...): the
# 8-bit output is a function of the 8-bit input alone, so the region becomes one Gather from a
# 256-entry table, made by running the region itself (DequantizeLinear and QuantizeLinear
# included) on the 256 codes.
_ELEMENTWISE = ("Abs", "Add", "Ceil", "Clip", "Cos", "Div", "Elu", "Erf", "Exp", "Floor", "Gelu", "HardSigmoid",
                "HardSwish", "Identity", "LeakyRelu", "Log", "Max", "Min", "Mish", "Mul", "Neg", "Pow",
                "Reciprocal", "Relu", "Round", "Selu", "Sigmoid", "Sin", "Softplus", "Softsign", "Sqrt", "Sub",
                "Tanh")
_LOOKUP_MAX_NODES = 32


def _lookup_region(graph, producer, uses, quant, outputs):
    """(DequantizeLinear, region nodes in graph order) of the elementwise region that ends at the
    QuantizeLinear `quant`, else None."""
    weights = graph.weights
    region, source, todo = {}, None, [quant.inputs[0]]
    while todo:
        name = todo.pop()
        node = producer.get(name)
        if node is None or id(node) in region:
            continue
        if node.op == "DequantizeLinear":
            if _per_tensor_dq(graph, producer, name) is None or source not in (None, node):
                return None
            source = node
            continue
        if node.op not in _ELEMENTWISE or len(node.outputs) != 1 or len(region) == _LOOKUP_MAX_NODES:
            return None
        if any(not isinstance(v, (int, float, str)) for v in node.attrs.values()):
            return None  # lists, tensors, subgraphs: none of the ops above needs them
        region[id(node)] = node
        for x in node.inputs:
            if not x:
                continue
            if x in weights:
                constant = np.asarray(weights[x])
                if constant.size != 1 or constant.ndim > 1:
                    return None  # per position, or of a rank that could widen the value's shape
            else:
                todo.append(x)
    if source is None or not region:
        return None
    # Values inside the region are read only inside it (and the last one only by quant).
    for node in region.values():
        out = node.outputs[0]
        if out in outputs or any(id(r) not in region and r is not quant for r in uses.get(out, [])):
            return None
    return source, [n for n in graph.nodes if id(n) in region]


def _lookup_table(graph, source, region, quant):
    """The region's 8-bit output for each code, indexed by the code's unsigned byte (an int8
    code v at v + 256 for v < 0, where Gather reads a negative index)."""
    from ._graph import Graph, ValueInfo
    from ._onnx_ops import instantiate
    code = source.inputs[0]
    code_dtype = np.dtype(graph.weights[source.inputs[2]].dtype)
    codes = np.arange(256, dtype=np.uint8).view(code_dtype)
    out = quant.outputs[0]
    table_graph = Graph([source] + region + [quant], graph.weights, [ValueInfo(code, code_dtype.name, [256])],
                        [ValueInfo(out, "", [256])])
    _, (table,) = instantiate(table_graph, graph.weights, {}, {code: codes})
    return np.asarray(table.read())


def fuse_int8_lookups(graph):
    """Rewrites graph.nodes in place (each region above one Gather); returns the graph."""
    producer, uses = _producers_and_readers(graph)
    outputs = {v.name for v in graph.outputs}
    weights = graph.weights
    replaced = {}  # id(node) -> list of nodes in its place (empty: dropped)
    for quant in graph.nodes:
        if quant.op != "QuantizeLinear" or len(quant.inputs) < 3 or not (
                _scalar_weight(graph, quant.inputs[1]) and _scalar_weight(graph, quant.inputs[2])):
            continue
        if np.dtype(weights[quant.inputs[2]].dtype) not in _EIGHT_BIT:
            continue
        found = _lookup_region(graph, producer, uses, quant, outputs)
        if found is None or any(id(n) in replaced for n in found[1]):
            continue
        source, region = found
        table = f"{quant.outputs[0]}/lookup_table"
        weights[table] = _lookup_table(graph, source, region, quant)
        replaced[id(quant)] = [Node("Gather", [table, source.inputs[0]], list(quant.outputs), {"axis": 0},
                                    quant.name or region[-1].name)]
        for node in region:
            replaced[id(node)] = []
    if not replaced:
        return graph
    nodes = [m for n in graph.nodes for m in replaced.get(id(n), [n])]
    graph.nodes = _without_unread_dequantize(nodes, outputs)
    return graph
