"""Model converters: foreign formats into mnnpy's model file.

    from mnnpy import convert
    report = convert.from_onnx("resnet18.onnx", "resnet18.mnnpy")
    print(report)

or ``python -m mnnpy convert resnet18.onnx resnet18.mnnpy``."""
import os
from dataclasses import dataclass, field

import numpy as np

from ._graph import Graph, Subgraph, load_model, save_model
from ._onnx_ops import supported_operators

__all__ = ["from_onnx", "ConversionReport", "supported_operators", "load_model", "save_model", "Graph"]


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
    from .onnx import read_onnx, simplify
    graph = read_onnx(model)
    before = graph.op_counts()
    simplify(graph, int(optimize_level))
    unsupported = {}
    known = set(supported_operators())

    def find_unsupported(nodes):
        for n in nodes:
            if n.op not in known:
                unsupported.setdefault(n.op, []).append(n.name)
            for v in n.attrs.values():
                if isinstance(v, Subgraph):
                    find_unsupported(v.nodes)
    find_unsupported(graph.nodes)
    if fp16:
        graph.weights = {k: (w.astype(np.float16) if w.dtype == np.float32 else w) for k, w in graph.weights.items()}
    size = 0
    if output is not None:
        if unsupported:
            raise ValueError("cannot convert: unsupported operators " +
                             ", ".join(f"{op} (node '{names[0]}')" for op, names in unsupported.items()))
        save_model(graph, output)
        size = os.path.getsize(output)
    report = ConversionReport(str(model) if isinstance(model, (str, os.PathLike)) else "<ONNX model>",
                              str(output) if output is not None else "", before, graph.op_counts(),
                              graph.parameter_count(), size, unsupported)
    if verbose:
        print(report)
    return graph, report
