"""A module trained with ``compress.train_quant`` written as the int8 graph ``mnnpy.quantize``
writes: its layers traced into a converted Graph (ONNX operators), then each quantized layer's
weight, input and output given the QDQ form with the scales training learned."""
import numpy as np

from .. import expr as F
from ..convert._graph import Graph, Node, ValueInfo
from . import _layers as L
from ._module import Module


def _conv_attrs(layer):
    kernel = list(layer.kernel_size)
    attrs = {"kernel_shape": kernel, "strides": list(layer.stride), "dilations": list(layer.dilation),
             "group": int(layer.groups)}
    if layer.padding_mode != "zeros":
        raise ValueError(f"export_quantized: {type(layer).__name__} with padding_mode={layer.padding_mode!r} is not "
                         f"exported (zeros only)")
    if layer.padding == "valid":
        pads = [0] * len(kernel)
        attrs["pads"] = pads + pads
    elif layer.padding == "same":
        attrs["auto_pad"] = "SAME_UPPER"
    else:
        attrs["pads"] = list(layer.padding) * 2
    return attrs


def _pair(value, n=2):
    return list(value) if isinstance(value, (list, tuple)) else [int(value)] * n


class _Tracer:
    """Records each leaf layer's call: its input and output Vars."""

    def __init__(self, module):
        self.calls = []
        self.leaves = [m for m in module.modules() if not m._children]

    def __enter__(self):
        for layer in self.leaves:
            def traced(*args, _layer=layer, _forward=type(layer).forward, **kwargs):
                out = _forward(_layer, *args, **kwargs)
                self.calls.append((_layer, args, out))
                return out
            object.__setattr__(layer, "forward", traced)
        return self

    def __exit__(self, *exc):
        for layer in self.leaves:
            layer.__dict__.pop("forward", None)


def _node_for(layer, x_name, out_name, x, weights, prefix):
    """(nodes, weight entries) computing ``layer`` on tensor ``x_name`` (its Var ``x``) into ``out_name``."""
    def const(suffix, value):
        name = prefix + suffix
        weights[name] = np.array(np.asarray(value.read() if hasattr(value, "read") else value), np.float32)
        return name
    bias = [const(".bias", layer.bias)] if getattr(layer, "bias", None) is not None and \
        isinstance(layer, (L.Conv1d, L.Conv2d, L.Linear)) else []
    if isinstance(layer, (L.Conv1d, L.Conv2d)):
        return [Node("Conv", [x_name, const(".weight", layer.weight)] + bias, [out_name], _conv_attrs(layer), prefix)]
    if isinstance(layer, L.Linear):
        if x.ndim == 2:
            return [Node("Gemm", [x_name, const(".weight", layer.weight)] + bias, [out_name], {"transB": 1}, prefix)]
        transposed = np.asarray(layer.weight.read()).T.copy()
        return [Node("MatMul", [x_name, const(".weight_t", transposed)] + bias, [out_name], {}, prefix)]
    simple = {"ReLU": "Relu", "Sigmoid": "Sigmoid", "Tanh": "Tanh", "Identity": "Identity", "Dropout": "Identity"}
    kind = type(layer).__name__
    if kind in simple:
        return [Node(simple[kind], [x_name], [out_name], {}, prefix)]
    if kind == "ReLU6":
        return [Node("Clip", [x_name], [out_name], {"min": 0.0, "max": 6.0}, prefix)]
    if isinstance(layer, L.Flatten):
        if layer.start_dim != 1 or layer.end_dim not in (-1, x.ndim - 1):
            raise ValueError(f"export_quantized: Flatten({layer.start_dim}, {layer.end_dim}) is not exported "
                             "(start_dim=1, end_dim=-1 only)")
        return [Node("Flatten", [x_name], [out_name], {"axis": 1}, prefix)]
    if isinstance(layer, (L.MaxPool2d, L.AvgPool2d)):
        kernel = _pair(layer.kernel_size)
        stride = _pair(layer.stride if layer.stride is not None else layer.kernel_size)
        pads = _pair(layer.padding)
        attrs = {"kernel_shape": kernel, "strides": stride, "pads": pads + pads, "ceil_mode": int(layer.ceil_mode)}
        if isinstance(layer, L.MaxPool2d):
            attrs["dilations"] = _pair(layer.dilation)
            return [Node("MaxPool", [x_name], [out_name], attrs, prefix)]
        if layer.divisor_override is not None:
            raise ValueError("export_quantized: AvgPool2d with divisor_override is not exported")
        attrs["count_include_pad"] = int(layer.count_include_pad)
        return [Node("AveragePool", [x_name], [out_name], attrs, prefix)]
    if isinstance(layer, L.AdaptiveAvgPool2d) and _pair(layer.output_size) == [1, 1]:
        return [Node("GlobalAveragePool", [x_name], [out_name], {}, prefix)]
    if isinstance(layer, (L.BatchNorm1d, L.BatchNorm2d)) and layer.running_mean is not None:
        channels = layer.num_features
        scale = layer.weight if layer.weight is not None else np.ones(channels, np.float32)
        bias = layer.bias if layer.bias is not None else np.zeros(channels, np.float32)
        inputs = [x_name, const(".weight", scale), const(".bias", bias), const(".running_mean", layer.running_mean),
                  const(".running_var", layer.running_var)]
        return [Node("BatchNormalization", inputs, [out_name], {"epsilon": float(layer.eps)}, prefix)]
    raise ValueError(f"export_quantized: layer {prefix!r} ({kind}) has no exported form")


def trace_graph(module, example_input):
    """The float Graph of ``module``'s forward pass in evaluation mode at ``example_input``
    (one array), traced layer by layer: its forward must be a chain of nn layers (Conv, Linear,
    activations, pooling, Flatten, BatchNorm, Dropout), each reading the model's input or another
    layer's output. Returns (graph, {layer: (input tensor, output tensor)})."""
    if not isinstance(module, Module):
        raise TypeError(f"export_quantized: expected an nn.Module, got {type(module).__name__}")
    names = {id(m): name for name, m in module.named_modules()}
    x = F.const(np.asarray(example_input, dtype=np.float32))
    modes = [(m, m.is_training) for m in module.modules()]
    module.eval()
    try:
        with _Tracer(module) as tracer:
            out = module(x)
    finally:
        for m, mode in modes:
            object.__setattr__(m, "is_training", mode)
        module.pending_updates()
    tensor_names = {id(x): "input"}
    keep = [x]  # the Vars stay alive so that their ids stay theirs
    nodes, weights, tensors = [], {}, {}
    for layer, args, result in tracer.calls:
        name = names.get(id(layer), type(layer).__name__)
        if len(args) != 1 or id(args[0]) not in tensor_names:
            raise ValueError(f"export_quantized: layer {name!r} ({type(layer).__name__}) reads a value no traced "
                             f"layer computed: the forward pass must be a chain of nn layers")
        source = tensor_names[id(args[0])]
        out_name = name
        tensor_names[id(result)] = out_name
        keep.append(result)
        nodes += _node_for(layer, source, out_name, args[0], weights, name)
        tensors[layer] = (source, out_name)
    if id(out) not in tensor_names:
        raise ValueError("export_quantized: the module's output is not a traced layer's output: the forward pass "
                         "must end with an nn layer")
    graph = Graph(nodes, weights, [ValueInfo("input", "float32", ["batch"] + list(x.shape[1:]))],
                  [ValueInfo(tensor_names[id(out)], "float32", [])], 13, "mnnpy.nn.compress")
    return graph, tensors


def _feature_params(layer, which):
    """(scale, zero point) of a layer's learned input or output range, as compress computes them."""
    from .compress import _FEATURE_LIMIT
    lo = float(np.asarray(getattr(layer, which + "_min").read()))
    hi = float(np.asarray(getattr(layer, which + "_max").read()))
    if np.isnan(lo) or np.isnan(hi):
        raise ValueError(f"export_quantized: a layer's {which} range was never set: train the module (or run "
                         f"training steps) after train_quant before exporting")
    lo, hi = np.float32(min(lo, 0.0)), np.float32(max(hi, 0.0))
    scale = np.maximum((hi - lo) / np.float32(2 * _FEATURE_LIMIT), np.float32(1e-12))
    zero = np.rint(-lo / scale - np.float32(_FEATURE_LIMIT))
    return np.float32(scale), np.int8(zero)


def export_quantized(module, example_input, output=None):
    """The module trained with ``train_quant`` as an int8 Graph in the QDQ form of
    ``mnnpy.quantize`` (per-channel int8 weights with the scales its fake quantization used,
    int32 biases, int8 features with the learned ranges' scales and zero points), written to
    ``output`` (mnnpy's model file) when given. Layers not quantized stay float. Returns the Graph."""
    from .compress import _QuantizedLayer
    from ..quantize._rewrite import find_layers, quantize_graph
    graph, tensors = trace_graph(module, example_input)
    quantized_layers = {tensors[layer]: layer for layer in tensors if isinstance(layer, _QuantizedLayer)}
    if not quantized_layers:
        raise ValueError("export_quantized: the module has no layer quantized by train_quant")
    # A layer's input that is another quantized layer's output gets its own name (an Identity),
    # so that both ranges apply, as in training.
    producers = {out: src for src, out in quantized_layers}
    params, layer_of_node = {}, {}
    extra = []
    for (source, out_name), layer in quantized_layers.items():
        node = next(n for n in graph.nodes if n.outputs[0] == out_name)
        layer_of_node[node.name] = layer
        if source in params or source in producers:
            alias = source + "/" + node.name + ".input"
            extra.append((graph.nodes.index(node), Node("Identity", [source], [alias], {}, alias)))
            node.inputs[0] = alias
            source = alias
        params[source] = _feature_params(layer, "input")
        params[out_name] = _feature_params(layer, "output")
    for index, node in sorted(extra, key=lambda item: -item[0]):
        graph.nodes.insert(index, node)
    layers = [layer for layer in find_layers(graph) if layer.name in layer_of_node]
    output_names = {v.name for v in graph.outputs}
    params = {k: v for k, v in params.items() if k not in output_names}  # model outputs stay float
    bits = {layer_of_node[layer.name].quant_bits for layer in layers}
    if len(bits) > 1:
        raise ValueError("export_quantized: the layers were trained with different quant_bits")
    limit = np.float32(2 ** (bits.pop() - 1) - 1)

    def weight_quantizer(weight, axis):
        # The fake quantization's own formula: scale = max(max|w|, 1e-6) / L, levels rounded.
        reduced = tuple(d for d in range(weight.ndim) if d != axis)
        peak = np.max(np.abs(weight), axis=reduced, keepdims=True)
        scale = (np.maximum(peak, np.float32(1e-6)) * np.float32(1.0 / limit)).astype(np.float32)
        levels = np.clip(np.rint(weight / scale), -limit, limit).astype(np.int8)
        return levels, scale.reshape(-1)
    quantized, _ = quantize_graph(graph, layers, params, weight_quantizer, 127)
    if output is not None:
        from ..convert._graph import save_model
        save_model(quantized, output)
    return quantized

