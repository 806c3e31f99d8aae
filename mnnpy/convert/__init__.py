"""Model converters: foreign formats into mnnpy's model file.

    from mnnpy import convert
    graph, report = convert.from_onnx("resnet18.onnx", "resnet18.mnnpy")
    graph, report = convert.from_mnn("resnet18.mnn", "resnet18.mnnpy")  # MNN's own model files
    graph, report = convert.from_torch(torch_module, (example_input,))  # torch.export, no ONNX
    graph, report = convert.from_tflite("model.tflite")
    graph, report = convert.from_caffe("net.prototxt", "net.caffemodel")
    print(report)

or ``python -m mnnpy convert MODEL OUT.mnnpy`` for any of them (``-f`` and MNN's converter's
flags; the format otherwise comes from the file's name and contents)."""
import os
from dataclasses import dataclass, field

import numpy as np

from ._graph import Graph, Subgraph, load_model, save_model
from ._onnx_ops import supported_operators
from .mnn import UNSUPPORTED_PREFIX
from ._weight_quant import quantize_weights
from ._sparse import prune_weights

__all__ = ["from_onnx", "from_mnn", "from_caffe", "from_tflite", "from_tensorflow", "from_torch", "from_torchscript",
           "ConversionReport", "supported_operators", "load_model", "save_model", "Graph", "quantize_weights",
           "prune_weights"]


@dataclass
class ConversionReport:
    source: str
    output: str
    ops_before: dict
    ops_after: dict
    parameters: int
    file_bytes: int
    unsupported: dict = field(default_factory=dict)  # op -> node names

    def __str__(self):
        lines = [f"converted {self.source}" + (f" -> {self.output}" if self.output else ""),
                 f"  nodes: {sum(self.ops_before.values())} before, {sum(self.ops_after.values())} after",
                 f"  parameters: {self.parameters:,}"]
        if self.output:
            lines.append(f"  file size: {self.file_bytes / 1e6:.2f} MB")
        lines.append("  ops after: " + ", ".join(f"{k} {v}" for k, v in sorted(self.ops_after.items())))
        if self.unsupported:
            lines.append("  NOT converted (unsupported operators): " +
                         "; ".join(f"{op} ({len(names)} nodes, e.g. {names[0]})" for op, names in self.unsupported.items()))
        return "\n".join(lines)


def from_onnx(model, output=None, fp16=False, optimize_level=2, verbose=False,
              weight_quant_bits=0, weight_quant_block=32, weight_quant_asymmetric=False):
    """Converts an ONNX model (path, bytes or ModelProto) and, when ``output`` is given, writes
    mnnpy's model file there. Returns (graph, report). ``fp16`` stores float weights as
    float16 (computed in float32); ``optimize_level`` 0..2 picks the graph passes."""
    from .onnx import read_onnx
    return _finish(read_onnx(model), model, "<ONNX model>", output, fp16, optimize_level, verbose,
                   weight_quant=_weight_quant_options(weight_quant_bits, weight_quant_block, weight_quant_asymmetric))


def from_mnn(model, output=None, fp16=False, optimize_level=2, verbose=False,
             weight_quant_bits=0, weight_quant_block=32, weight_quant_asymmetric=False):
    """Converts one of MNN's own model files (``.mnn``: a path or its bytes, as MNNConvert 3.x
    writes it, with float, ``--fp16`` or ``--weightQuantBits`` weights, which are dequantized to
    float32 here) and, when ``output`` is given, writes mnnpy's model file there. Returns
    (graph, report), as ``from_onnx``; MNN ops mnnpy cannot run are listed in
    ``report.unsupported`` by MNN op type, with their op names."""
    from .mnn import read_mnn
    return _finish(read_mnn(model), model, "<MNN model>", output, fp16, optimize_level, verbose,
                   weight_quant=_weight_quant_options(weight_quant_bits, weight_quant_block, weight_quant_asymmetric))


def from_caffe(prototxt, caffemodel, output=None, fp16=False, optimize_level=2, verbose=False,
               weight_quant_bits=0, weight_quant_block=32, weight_quant_asymmetric=False):
    """Converts a Caffe model: its network description (``.prototxt``: a path or the text) and its
    trained weights (``.caffemodel``: a path or its bytes), and, when ``output`` is given, writes
    mnnpy's model file there. Returns (graph, report), as ``from_onnx``; layers of a type mnnpy
    does not convert are named in the UnsupportedOperator raised."""
    from .caffe import is_prototxt_text, read_caffe
    source = None if is_prototxt_text(prototxt) else prototxt  # a path names the model in the report
    return _finish(read_caffe(prototxt, caffemodel), source, "<Caffe model>", output, fp16, optimize_level, verbose,
                   weight_quant=_weight_quant_options(weight_quant_bits, weight_quant_block, weight_quant_asymmetric))


def from_tflite(model, output=None, fp16=False, optimize_level=2, verbose=False,
                weight_quant_bits=0, weight_quant_block=32, weight_quant_asymmetric=False):
    """Converts a TensorFlow Lite model (``.tflite``: a path or its bytes; float32, float16 or
    int8-quantized) and, when ``output`` is given, writes mnnpy's model file there. Returns
    (graph, report), as ``from_onnx``. Inputs and outputs keep TFLite's NHWC shapes and dtypes
    (an int8 model takes and gives int8); quantized weights are dequantized to float32 and the
    model computes in float32. TFLite operators mnnpy cannot run are listed in
    ``report.unsupported`` as ``TFLite::<OPERATOR>``."""
    from .tflite import read_tflite
    return _finish(read_tflite(model), model, "<TFLite model>", output, fp16, optimize_level, verbose,
                   weight_quant=_weight_quant_options(weight_quant_bits, weight_quant_block, weight_quant_asymmetric))


def from_torch(module, example_inputs, dynamic_shapes=None, output=None, fp16=False, optimize_level=2,
               verbose=False, weight_quant_bits=0, weight_quant_block=32, weight_quant_asymmetric=False):
    """Converts a ``torch.nn.Module`` without ONNX: it is exported with ``torch.export`` at
    ``example_inputs`` (``dynamic_shapes`` as torch.export takes it: those dimensions stay free)
    and its core ATen ops become mnnpy's nodes; when ``output`` is given, mnnpy's model file is
    written there. Returns (graph, report), as ``from_onnx``; aten ops mnnpy cannot run are listed
    in ``report.unsupported`` with the nodes that use them."""
    from .torch import read_exported
    return _finish(read_exported(module, example_inputs, dynamic_shapes), module, f"<{type(module).__name__}>",
                   output, fp16, optimize_level, verbose,
                   weight_quant=_weight_quant_options(weight_quant_bits, weight_quant_block, weight_quant_asymmetric))


def from_torchscript(model, output=None, fp16=False, optimize_level=2, verbose=False, example_inputs=None,
                     weight_quant_bits=0, weight_quant_block=32, weight_quant_asymmetric=False):
    """Converts a TorchScript module (a ``.pt`` path or a ``torch.jit.ScriptModule``), frozen and
    inlined, with the same aten op table as ``from_torch``. ``example_inputs``: tensors it is run
    at once to learn every value's dtype and shape; needed for a file (a saved module keeps no
    input shapes), optional for a traced module in memory. Returns (graph, report)."""
    from .torch import read_torchscript
    return _finish(read_torchscript(model, example_inputs), model, "<TorchScript module>", output, fp16,
                   optimize_level, verbose,
                   weight_quant=_weight_quant_options(weight_quant_bits, weight_quant_block, weight_quant_asymmetric))


def from_tensorflow(model, output=None, fp16=False, optimize_level=2, verbose=False, input_shapes=None,
                    weight_quant_bits=0, weight_quant_block=32, weight_quant_asymmetric=False):
    """Converts a TensorFlow or Keras model: a SavedModel directory (its serving signature), a
    ``.keras`` file, a Keras model object, or a frozen GraphDef (a ``.pb`` path or a GraphDef),
    and, when ``output`` is given, writes mnnpy's model file there. Returns (graph, report), as
    ``from_onnx``. ``input_shapes`` (a shape for a model of one input, a list of shapes, or a dict
    by input name; None for a free dimension) replaces the model's own input shapes. TensorFlow
    ops mnnpy cannot run are listed in ``report.unsupported`` as ``TF::<op>`` with their node
    names. Needs the tensorflow package."""
    from .tensorflow import read_tensorflow
    graph = read_tensorflow(model, input_shapes, layout_passes=int(optimize_level) >= 1)
    return _finish(graph, model, "<TensorFlow model>", output, fp16, optimize_level, verbose,
                   weight_quant=_weight_quant_options(weight_quant_bits, weight_quant_block, weight_quant_asymmetric))


def _weight_quant_options(bits, block, asymmetric):
    """(bits, block, symmetric) for weight quantization (bits 0: none), checked before converting.
    ``weight_quant_bits`` 4 or 8 stores MatMul/Gemm weight matrices as block-quantized codes
    (``weight_quant_block`` 32, 64 or 128 along K; ``weight_quant_asymmetric`` adds zero points):
    see docs/weight_quantization.md."""
    from ._weight_quant import check_options
    bits, block = check_options(bits, block, "weight_quant_bits/weight_quant_block")
    return bits, block, not asymmetric


def _finish(graph, model, unnamed, output, fp16, optimize_level, verbose, weight_quant=(0, 32, True)):
    from .onnx import simplify
    before = graph.op_counts()
    simplify(graph, int(optimize_level))
    unsupported = {}
    known = set(supported_operators())

    def find_unsupported(nodes):
        for n in nodes:
            if n.op not in known:
                op = n.op[len(UNSUPPORTED_PREFIX):] if n.op.startswith(UNSUPPORTED_PREFIX) else n.op
                unsupported.setdefault(op, []).append(n.name)
            for v in n.attrs.values():
                if isinstance(v, Subgraph):
                    find_unsupported(v.nodes)
    find_unsupported(graph.nodes)
    if fp16:
        graph.weights = {k: (w.astype(np.float16) if w.dtype == np.float32 else w) for k, w in graph.weights.items()}
    if weight_quant[0]:
        from ._weight_quant import quantize_weights
        graph = quantize_weights(graph, *weight_quant)
    size = 0
    if output is not None:
        if unsupported:
            raise ValueError("cannot convert: unsupported operators " + unsupported_list(unsupported))
        save_model(graph, output)
        size = os.path.getsize(output)
    report = ConversionReport(str(model) if isinstance(model, (str, os.PathLike)) else unnamed,
                              str(output) if output is not None else "", before, graph.op_counts(),
                              graph.parameter_count(), size, unsupported)
    if verbose:
        print(report)
    return graph, report


def unsupported_list(unsupported, word="node"):
    """"op (node 'name')" or "op (nodes 'a', 'b')" for each unsupported operator: every node named."""
    return ", ".join(f"{op} ({word}{'s' if len(names) > 1 else ''} {', '.join(repr(n) for n in names)})"
                     for op, names in unsupported.items())
