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


def fuse_qdq(graph):
    """Rewrites graph.nodes in place (see the module docstring), then switches the int8
    convolutions to channels last (_int8_layout.py); returns the graph."""
    producer = {out: n for n in graph.nodes for out in n.outputs}
    uses = {}
    for n in graph.nodes:
        for x in node_reads(n):
            uses.setdefault(x, []).append(n)
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
    if not replaced:
        return to_channels_last(graph)
    nodes = []
    for n in graph.nodes:
        new = replaced.get(id(n), n)
        if new is not None:
            nodes.append(new)
    # DequantizeLinear nodes (of weights, mostly) nothing reads any more.
    while True:
        read = {x for n in nodes for x in node_reads(n)} | outputs
        kept = [n for n in nodes if n.op != "DequantizeLinear" or any(o in read for o in n.outputs)]
        if len(kept) == len(nodes):
            break
        nodes = kept
    graph.nodes = nodes
    return to_channels_last(graph)


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
