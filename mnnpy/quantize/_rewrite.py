"""The quantized graph in QDQ form: for each quantized Conv / MatMul / Gemm, its weight is
stored as int8 levels read through DequantizeLinear (per output channel), its bias as int32 levels
at scale ``input_scale * weight_scale``, and its feature input and output pass through a
QuantizeLinear -> DequantizeLinear pair (int8, per tensor, zero point 0). Every op stays an
ONNX operator the converters already run, so the model runs on float kernels today, and a pass
fusing ``DequantizeLinear -> Conv/MatMul -> QuantizeLinear`` hands it to int8 kernels."""
import copy
from dataclasses import dataclass

import numpy as np

from ..convert._graph import Graph, Node, node_reads

QUANTIZABLE_OPS = ("Conv", "MatMul", "Gemm")
INT32_LIMIT = 2 ** 31 - 1


@dataclass
class QuantizableLayer:
    """A node whose weight and feature input can be quantized: ``feature`` is its input tensor,
    ``weight`` its constant weight's name, ``channel_axis`` the weight's output-channel axis,
    ``bias`` the bias weight's name (or None) and ``output`` the node's output tensor."""
    index: int
    name: str
    op: str
    feature: str
    weight: str
    channel_axis: int
    bias: str
    output: str


def find_layers(graph, skip_names=()):
    """The Conv / MatMul / Gemm nodes with a constant float weight, a float feature input and
    (for Gemm) plain layouts, except those named in ``skip_names``."""
    weights = graph.weights
    layers = []
    for i, node in enumerate(graph.nodes):
        if node.op not in QUANTIZABLE_OPS or node.name in skip_names or len(node.inputs) < 2:
            continue
        feature, weight = node.inputs[0], node.inputs[1]
        if not feature or feature in weights or weight not in weights:
            continue
        w = weights[weight]
        if np.dtype(w.dtype).kind != "f":
            continue
        bias = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] in weights else None
        if node.op == "Conv":
            if len(node.inputs) > 3 or w.ndim < 3:
                continue
            axis = 0
        elif node.op == "MatMul":
            if w.ndim != 2:
                continue
            axis = 1
        else:
            if node.attrs.get("transA", 0) or w.ndim != 2 or node.attrs.get("alpha", 1.0) != 1.0 \
                    or node.attrs.get("beta", 1.0) != 1.0:
                continue
            axis = 0 if node.attrs.get("transB", 0) else 1
        channels = w.shape[axis]
        if bias is not None and tuple(weights[bias].shape) != (channels,):
            bias = None  # a broadcast Gemm C stays float
        layers.append(QuantizableLayer(i, node.name or f"{node.op}_{i}", node.op, feature, weight, axis, bias,
                                       node.outputs[0]))
    return layers


# Ops that only move data: a layer output reaching a model output through them stays float too.
_DATA_MOVEMENT_OPS = ("Reshape", "Squeeze", "Unsqueeze", "Flatten", "Transpose", "Identity")


def _reaches_output_only(graph, name, outputs, users):
    """Whether ``name`` is a model output, or feeds one alone through data-movement ops."""
    while name not in outputs:
        readers = users.get(name, [])
        if len(readers) != 1:
            return False
        node = graph.nodes[readers[0][0]]
        if node.op not in _DATA_MOVEMENT_OPS or node.inputs[0] != name:
            return False
        name = node.outputs[0]
    return True


def feature_tensors(graph, layers):
    """The tensors given an int8 QDQ pair: each layer's feature input and its output, except the
    model's outputs and what reaches them only through reshapes (they stay float)."""
    outputs = {v.name for v in graph.outputs}
    users = graph.consumers()
    names = []
    for layer in layers:
        for name in (layer.feature, layer.output):
            if name not in names and not _reaches_output_only(graph, name, outputs, users):
                names.append(name)
    return names


def _scale_and_zero(param):
    """(float32 scale, int8 zero point) of a feature: a scale alone means zero point 0."""
    scale, zero = param if isinstance(param, tuple) else (param, 0)
    return np.float32(scale), np.int8(zero)


def quantize_graph(graph, layers, feature_scales, weight_quantizer, feature_clamp):
    """A new Graph in QDQ form (``graph`` is left as it is). ``feature_scales``: tensor name ->
    float32 scale (symmetric), or (scale, int8 zero point), for each of ``feature_tensors``;
    ``weight_quantizer(weight, axis)`` ->
    (int8 levels, float32 scales); ``feature_clamp`` below 127 (fewer bits, or MNN's
    feature_clamp_value) clips features to ``clamp * scale`` before QuantizeLinear so that the levels
    stay in [-clamp, clamp]. Returns (graph, {layer name: details for the report})."""
    nodes = [copy.deepcopy(n) for n in graph.nodes]
    weights = dict(graph.weights)
    head, after = [], {}  # new nodes: at the start, and after the node producing a tensor
    producers = {o: i for i, n in enumerate(nodes) for o in n.outputs}
    used_names = set(weights) | {o for n in nodes for o in n.outputs} | {v.name for v in graph.inputs}

    def fresh(name):
        candidate, k = name, 1
        while candidate in used_names:
            candidate, k = f"{name}_{k}", k + 1
        used_names.add(candidate)
        return candidate

    # Feature tensors: x -> QuantizeLinear -> DequantizeLinear, every reader redirected.
    dequantized = {}
    for name, param in feature_scales.items():
        scale, zero = _scale_and_zero(param)
        scale_name, zero_name = fresh(name + "_scale"), fresh(name + "_zero_point")
        weights[scale_name] = np.asarray(scale, np.float32).reshape(())
        weights[zero_name] = np.asarray(zero, np.int8).reshape(())
        source, added = name, []
        if feature_clamp < 127 and zero == 0:
            limit = float(scale) * feature_clamp
            low, high = fresh(name + "_clip_min"), fresh(name + "_clip_max")
            weights[low], weights[high] = np.float32(-limit).reshape(()), np.float32(limit).reshape(())
            source = fresh(name + "_clipped")
            added.append(Node("Clip", [name, low, high], [source], {}, source))
        q, dq = fresh(name + "_quantized"), fresh(name + "_dequantized")
        added.append(Node("QuantizeLinear", [source, scale_name, zero_name], [q], {}, q))
        added.append(Node("DequantizeLinear", [q, scale_name, zero_name], [dq], {}, dq))
        dequantized[name] = dq
        if name in producers:
            after.setdefault(producers[name], []).extend(added)
        else:
            head.extend(added)
    # The model's own nodes read the dequantized tensors; the added Clip/QuantizeLinear nodes
    # (not in ``nodes``) keep reading the float ones.
    for node in nodes:
        node.inputs = [dequantized.get(x, x) for x in node.inputs]

    details = {}
    weight_levels = {}
    for layer in layers:
        node = nodes[layer.index]
        w = np.asarray(graph.weights[layer.weight], dtype=np.float32)
        key = (layer.weight, layer.channel_axis)
        if key not in weight_levels:
            levels, scales = weight_quantizer(w, layer.channel_axis)
            levels_name = fresh(layer.weight + "_quantized")
            scale_name, zero_name = fresh(layer.weight + "_scale"), fresh(layer.weight + "_zero_point")
            weights[levels_name], weights[scale_name] = levels, scales.astype(np.float32)
            weights[zero_name] = np.zeros(scales.shape, np.int8)
            dq = fresh(layer.weight + "_dequantized")
            head.append(Node("DequantizeLinear", [levels_name, scale_name, zero_name], [dq],
                             {"axis": layer.channel_axis}, dq))
            weight_levels[key] = (dq, levels, scales)
        dq, levels, scales = weight_levels[key]
        node.inputs[1] = dq
        bias_quantized = False
        feature_scale = feature_scales.get(layer.feature)
        feature_scale = None if feature_scale is None else _scale_and_zero(feature_scale)[0]
        if layer.bias is not None and feature_scale is not None:
            bias = np.asarray(graph.weights[layer.bias], dtype=np.float64)
            bias_scale = (np.float64(feature_scale) * scales.astype(np.float64)).astype(np.float32)
            bias_levels = np.rint(bias / bias_scale.astype(np.float64))
            if np.all(np.abs(bias_levels) <= INT32_LIMIT):
                levels_name = fresh(layer.bias + "_quantized")
                scale_name = fresh(layer.bias + "_scale")
                weights[levels_name] = bias_levels.astype(np.int32)
                weights[scale_name] = bias_scale
                bias_dq = fresh(layer.bias + "_dequantized")
                head.append(Node("DequantizeLinear", [levels_name, scale_name], [bias_dq], {"axis": 0}, bias_dq))
                node.inputs[2] = bias_dq
                bias_quantized = True
        details[layer.name] = {
            "op": layer.op, "output": layer.output, "feature": layer.feature,
            "feature_scale": None if feature_scale is None else float(feature_scale),
            "output_scale": None if layer.output not in feature_scales
            else float(_scale_and_zero(feature_scales[layer.output])[0]),
            "weight": layer.weight, "weight_channels": int(scales.size), "bias_quantized": bias_quantized,
        }

    ordered = list(head)
    for i, node in enumerate(nodes):
        ordered.append(node)
        ordered.extend(after.get(i, []))
    # Float weights no node reads any more are dropped.
    read = {x for n in ordered for x in node_reads(n)} | {v.name for v in graph.outputs}
    weights = {k: v for k, v in weights.items() if k in read}
    quantized = Graph(ordered, weights, copy.deepcopy(graph.inputs), copy.deepcopy(graph.outputs),
                      max(int(graph.opset), 13), graph.producer)
    return quantized, details
