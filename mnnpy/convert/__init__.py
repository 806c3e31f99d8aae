"""Model converters: foreign formats into mnnpy's model file.

    from mnnpy import convert
    report = convert.from_onnx("resnet18.onnx", "resnet18.mnnpy")
    graph, report = convert.from_mnn("resnet18.mnn", "resnet18.mnnpy")  # MNN's own model files
    print(report)

or ``python -m mnnpy convert resnet18.onnx resnet18.mnnpy`` (or a ``.mnn`` file)."""
import os
from dataclasses import dataclass, field

import numpy as np

from ._graph import Graph, Subgraph, load_model, save_model
from ._onnx_ops import supported_operators
from .mnn import UNSUPPORTED_PREFIX

__all__ = ["from_onnx", "from_mnn", "from_tensorflow", "ConversionReport", "supported_operators", "load_model",
           "save_model", "Graph"]


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


def from_onnx(model, output=None, fp16=False, optimize_level=2, verbose=False):
    """Converts an ONNX model (path, bytes or ModelProto) and, when ``output`` is given, writes
    mnnpy's model file there. Returns (graph, report). ``fp16`` stores float weights as
    float16 (computed in float32); ``optimize_level`` 0..2 picks the graph passes."""
    from .onnx import read_onnx
    return _finish(read_onnx(model), model, "<ONNX model>", output, fp16, optimize_level, verbose)


def from_mnn(model, output=None, fp16=False, optimize_level=2, verbose=False):
    """Converts one of MNN's own model files (``.mnn``: a path or its bytes, as MNNConvert 3.x
    writes it, with float, ``--fp16`` or ``--weightQuantBits`` weights, which are dequantized to
    float32 here) and, when ``output`` is given, writes mnnpy's model file there. Returns
    (graph, report), as ``from_onnx``; MNN ops mnnpy cannot run are listed in
    ``report.unsupported`` by MNN op type, with their op names."""
    from .mnn import read_mnn
    return _finish(read_mnn(model), model, "<MNN model>", output, fp16, optimize_level, verbose)


def from_tensorflow(model, output=None, fp16=False, optimize_level=2, verbose=False, input_shapes=None):
    """Converts a TensorFlow or Keras model: a SavedModel directory (its serving signature), a
    ``.keras`` file, a Keras model object, or a frozen GraphDef (a ``.pb`` path or a GraphDef),
    and, when ``output`` is given, writes mnnpy's model file there. Returns (graph, report), as
    ``from_onnx``. ``input_shapes`` (a shape for a model of one input, a list of shapes, or a dict
    by input name; None for a free dimension) replaces the model's own input shapes. TensorFlow
    ops mnnpy cannot run are listed in ``report.unsupported`` as ``TF::<op>`` with their node
    names. Needs the tensorflow package."""
    from .tensorflow import read_tensorflow
    graph = read_tensorflow(model, input_shapes, layout_passes=int(optimize_level) >= 1)
    return _finish(graph, model, "<TensorFlow model>", output, fp16, optimize_level, verbose)


def _finish(graph, model, unnamed, output, fp16, optimize_level, verbose):
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
