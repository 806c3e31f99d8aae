"""Static int8 quantization with calibration (MNN's ``mnnquant``, onnxruntime's ``quantize_static``).

    from mnnpy import quantize
    graph, report = quantize("model.onnx", "calibration.npz", {"feature_quantize_method": "KL"},
                             output="model_int8.mnnpy")
    print(report)

or ``python -m mnnpy quantize model.onnx model_int8.mnnpy --calibration DIR_OR_NPZ [--config quant.json]``.

The module itself is callable: ``mnnpy.quantize(...)`` is :func:`quantize`. The quantized graph is
in QDQ form (see ``_rewrite.py``): int8 weights per output channel, int8 features per tensor, both
symmetric (zero point 0) as in MNN; every other op stays float. See docs/quantization.md."""
import os
import sys
import types

import numpy as np

from ._calibration import calibration_batches
from ._config import FEATURE_METHODS, WEIGHT_METHODS, QuantConfig
from ._methods import FeatureObserver, admm_scale, kl_threshold_bin, quantize_weight
from ._report import Agreement, LayerReport, OutputReport, QuantizationReport
from ._rewrite import QUANTIZABLE_OPS, feature_tensors, find_layers, quantize_graph

__all__ = ["quantize", "QuantConfig", "QuantizationReport", "LayerReport", "OutputReport", "Agreement",
           "FEATURE_METHODS", "WEIGHT_METHODS", "QUANTIZABLE_OPS", "kl_threshold_bin", "admm_scale",
           "quantize_weight", "load_graph"]


def load_graph(model):
    """A copy of ``model`` as a converted Graph with NumPy weights: a Graph (or a converter's
    ``(graph, report)``), or a path any ``nn.load_module_from_file`` reads (mnnpy's model file,
    ``.onnx``, ``.mnn`` and the other converters' formats). Returns (graph, label for reports)."""
    from .._core import Var
    from ..convert._graph import Graph, file_head, load_model
    label = None
    if isinstance(model, tuple) and len(model) == 2 and isinstance(model[0], Graph):
        model = model[0]
    if isinstance(model, (str, os.PathLike)):
        path = label = os.fspath(model)
        if not os.path.exists(path):
            raise FileNotFoundError(f"no such model file: '{path}'")
        head = b"" if os.path.isdir(path) else file_head(path, 8)
        if head == b"MNNPY\0GR":
            model = load_model(path)
        else:
            from ..convert._formats import convert_file
            model, _ = convert_file(path)
    if not isinstance(model, Graph):
        raise TypeError(f"quantize: model must be a converted Graph or a model path, got {type(model).__name__}")
    weights = {k: np.array(v.read() if isinstance(v, Var) else v) for k, v in model.weights.items()}
    graph = Graph(list(model.nodes), weights, list(model.inputs), list(model.outputs), model.opset, model.producer)
    return graph, label or "<graph>"


def _module(graph, output_names):
    """The graph run with extra outputs (inner tensors), planned once per input shape."""
    from ..nn import _ConvertedModule
    return _ConvertedModule(graph, graph.weights, None, output_names)


def _run(module, batch):
    results = module(dict(batch))
    results = results if isinstance(results, (list, tuple)) else [results]
    return [np.asarray(r.read() if hasattr(r, "read") else r) for r in results]


def _passes(batches, desc, enabled):
    """The batches, under a tqdm bar when ``enabled``."""
    from ..optim.loop import _progress
    bar, handle = _progress(batches, len(batches), desc, enabled)
    try:
        yield from bar
    finally:
        if handle is not None:
            handle.close()


def quantize(model, calibration=None, config=None, output=None, progress=True):
    """Calibrates ``model`` on ``calibration`` and returns ``(graph, report)``: the int8 model in
    QDQ form and a ``QuantizationReport`` (``print`` it, or ``report.to_dict()``).

    ``model``: a converted Graph or a model path (mnnpy's file, ``.onnx``, ``.mnn``...); it is not
    modified. ``calibration``: an iterable of batches (dicts by input name, arrays for a model of
    one input, or tuples in input order), an ``.npz`` file whose arrays are named by the model's
    inputs with samples along the first axis, or a folder of images preprocessed as the config
    says (None: the config's ``path``). ``config``: a dict or JSON path with MNN's ``mnnquant``
    keys (see ``QuantConfig`` and docs/quantization.md). ``output``: mnnpy's model file to write.
    ``progress``: a progress bar over the calibration batches."""
    config = QuantConfig(config)
    graph, label = load_graph(model)
    batches = calibration_batches(calibration, graph.inputs, config)
    all_nodes = {n.name for n in graph.nodes}
    unknown = [n for n in config.skip_quant_op_names if n not in all_nodes]
    if unknown:
        raise ValueError(f"quantization config key 'skip_quant_op_names': {unknown[0]!r} is not a node of the model")
    layers = find_layers(graph, set(config.skip_quant_op_names))
    if not layers:
        raise ValueError("the model has no Conv, MatMul or Gemm node with a constant weight to quantize")
    skipped = [n.name for n in graph.nodes if n.name in config.skip_quant_op_names]
    features = feature_tensors(graph, layers)
    observers = {name: FeatureObserver(config.feature_quantize_method, config.feature_clamp_value, len(batches))
                 for name in features}

    float_module = _module(graph, features)
    for batch in _passes(batches, "calibrating", progress):
        for name, value in zip(features, _run(float_module, batch)):
            observers[name].observe(value)
    if any(o.needs_histogram for o in observers.values()):
        for batch in _passes(batches, "histograms", progress):
            for name, value in zip(features, _run(float_module, batch)):
                observers[name].observe_histogram(value)
    scales = {name: observers[name].scale() for name in features}

    def weight_quantizer(weight, axis):
        return quantize_weight(weight, axis, config.weight_clamp_value, config.weight_quantize_method)
    quantized, details = quantize_graph(graph, layers, scales, weight_quantizer, config.feature_clamp_value)

    report = QuantizationReport(label, os.fspath(output) if output is not None else "",
                                config.feature_quantize_method, config.weight_quantize_method, config.quant_bits,
                                len(batches), sum(len(next(iter(b.values()))) for b in batches), skipped=skipped)
    _compare(graph, quantized, layers, details, batches, report, progress)
    if output is not None:
        from ..convert._graph import save_model
        save_model(quantized, output)
    if config.debug:
        print(report)
    return quantized, report


def _compare(graph, quantized, layers, details, batches, report, progress):
    """Fills the report: each layer's output and each float model output, quantized model
    against float model, over the calibration batches."""
    float_outputs = [v.name for v in graph.outputs if not v.dtype or np.dtype(v.dtype).kind == "f"]
    names = list(dict.fromkeys([layer.output for layer in layers] + float_outputs))
    reference, test = _module(graph, names), _module(quantized, names)
    agreements = {name: Agreement() for name in names}
    for batch in _passes(batches, "comparing", progress):
        for name, a, b in zip(names, _run(reference, batch), _run(test, batch)):
            if a.dtype.kind == "f":
                agreements[name].add(a, b)
    for layer in layers:
        d, agreement = details[layer.name], agreements[layer.output]
        report.layers.append(LayerReport(layer.name, layer.op, layer.output, d["feature_scale"], d["output_scale"],
                                         d["weight_channels"], d["bias_quantized"], agreement.cosine,
                                         agreement.snr_db))
    for name in float_outputs:
        report.outputs.append(OutputReport(name, agreements[name].cosine, agreements[name].snr_db))


class _CallableModule(types.ModuleType):
    """``mnnpy.quantize`` is both this package and its function: calling the module quantizes."""

    def __call__(self, *args, **kwargs):
        return quantize(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
