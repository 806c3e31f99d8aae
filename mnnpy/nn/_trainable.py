"""Fine-tuning imported models: a converted graph (ONNX or a model file) rebuilt on Parameters in
plain NCHW, so that gradients reach its weights; and exporting any Module for inference.

``TrainableGraphModule`` keeps the model's own weight names (``features.4.weight``,
``onnx::Conv_22`` ...) as parameter names; ``freeze("features")`` freezes every parameter under
that prefix. Operators run as in inference: a BatchNormalization node keeps its running
statistics as constants (exporters usually fold it into the convolution anyway).
"""
import os

import numpy as np

from .. import expr as F
from .._core import Var
from ._module import Module, Parameter, check_input_shape, weight_constant

__all__ = ["TrainableGraphModule", "export"]


def _needed(graph, output_names):
    """The graph's nodes that the outputs depend on, in order, and the names they read."""
    from ..convert._graph import node_reads
    wanted, keep = set(output_names), []
    for node in reversed(graph.nodes):
        if wanted.intersection(o for o in node.outputs if o):
            keep.append(node)
            wanted.update(node_reads(node))
    return keep[::-1], wanted


class TrainableGraphModule(Module):
    """A converted model whose floating-point weights are Parameters; each call builds the graph
    on its inputs (NCHW, no blocked layout), so the outputs are lazy Vars to differentiate."""

    def __init__(self, graph, weights=None, input_names=None, output_names=None):
        super().__init__()
        from ..convert._graph import Graph, ValueInfo
        weights = graph.weights if weights is None else weights
        inputs = [v.name for v in graph.inputs]
        input_names = list(input_names or inputs)
        if sorted(input_names) != sorted(inputs):
            raise ValueError(f"input_names must list every model input (its inputs: {inputs})")
        output_names = list(output_names or [v.name for v in graph.outputs])
        produced = {o for n in graph.nodes for o in n.outputs} | set(inputs)
        unknown = [n for n in output_names if n not in produced]
        if unknown:
            raise ValueError(f"output names {unknown} are not tensors of the model "
                             f"(its outputs: {[v.name for v in graph.outputs]})")
        nodes, reads = _needed(graph, output_names)
        object.__setattr__(self, "input_names", input_names)
        object.__setattr__(self, "output_names", output_names)
        object.__setattr__(self, "_declared", {v.name: v for v in graph.inputs})
        constants = {}
        for name, w in weights.items():
            if name not in reads:
                continue  # weights of the layers left out (a replaced head)
            a = w.read() if isinstance(w, Var) else np.asarray(w)
            if a.dtype.kind == "f":
                self._params[name] = Parameter(a, dtype=np.float32)  # a copy, which training changes
            else:
                constants[name] = weight_constant(a)
        object.__setattr__(self, "_constants", constants)
        object.__setattr__(self, "graph", Graph(nodes, {}, graph.inputs,
                                                [ValueInfo(n, "", []) for n in output_names], graph.opset,
                                                graph.producer))

    def _weights(self):
        env = dict(self._constants)
        env.update((k, v) for k, v in self._params.items() if v is not None)
        return env

    def forward(self, *inputs):
        from ..convert._onnx_ops import NeedsInputValue, instantiate
        if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)):
            inputs = tuple(inputs[0])
        if len(inputs) == 1 and isinstance(inputs[0], dict):
            missing = [n for n in self.input_names if n not in inputs[0]]
            if missing:
                raise ValueError(f"missing inputs {missing}")
            inputs = tuple(inputs[0][n] for n in self.input_names)
        if len(inputs) != len(self.input_names):
            raise ValueError(f"the module takes {len(self.input_names)} inputs {self.input_names}, got {len(inputs)}")
        given, types = {}, {}
        for name, x in zip(self.input_names, inputs):
            v = x if isinstance(x, Var) else F.const(np.asarray(np.asarray(x), order="C"))
            want = self._declared[name]
            if want.dtype and np.dtype(v.dtype) != np.dtype(want.dtype):
                if np.dtype(v.dtype).kind != np.dtype(want.dtype).kind:
                    raise TypeError(f"input '{name}' must be {want.dtype}, got {np.dtype(v.dtype)}")
                v = F.cast(v, np.dtype(want.dtype))
            check_input_shape(name, v.shape, want.shape)
            given[name], types[name] = v, (tuple(v.shape), np.dtype(v.dtype))
        try:
            _, outputs = instantiate(self.graph, self._weights(), types, None, False, given)
        except NeedsInputValue as e:
            raise ValueError(f"this model computes shapes from input values, which training does not support: {e}") \
                from None
        return outputs[0] if len(outputs) == 1 else list(outputs)

    def save_model(self, path):
        """Writes the model with its current weights as an mnnpy model file, for
        ``load_module_from_file`` (inference in the blocked layout)."""
        from ..convert._graph import Graph, save_model
        weights = {k: np.array(v.read()) for k, v in self._weights().items()}
        save_model(Graph(self.graph.nodes, weights, self.graph.inputs, self.graph.outputs, self.graph.opset,
                         self.graph.producer), os.fspath(path))

    def extra_repr(self):
        return f"inputs={self.input_names}, outputs={self.output_names}, parameters={len(self._params)}"


def _swap_in_constants(module):
    """Replaces every parameter and buffer by a constant holding its value; returns the undo list."""
    undo = []
    for m in module.modules():
        for table in (m._params, m._buffers):
            for k, v in list(table.items()):
                if v is None:
                    continue
                c = F.const(np.array(v.read()))
                undo.append((m, table, k, v, k in m.__dict__))
                table[k] = c
                if k in m.__dict__:
                    object.__setattr__(m, k, c)
    return undo


def export(module, path, *example_inputs, input_names=None, output_names=None):
    """Writes ``module``'s forward pass in evaluation mode, with its current weights as
    constants, to an mnnpy graph file that ``load_module_from_file`` loads for inference. The
    inputs keep the shapes and dtypes of ``example_inputs`` (arrays or Vars)."""
    if not example_inputs:
        raise ValueError("export: give example inputs (their shapes and dtypes fix the exported graph's)")
    placeholders = []
    for i, x in enumerate(example_inputs):
        a = x if isinstance(x, Var) else F.const(np.asarray(x))
        p = F.placeholder(tuple(a.shape), dtype=np.dtype(a.dtype))
        p.name = (input_names or [])[i] if input_names and i < len(input_names) else f"input_{i}" \
            if len(example_inputs) > 1 else "input"
        placeholders.append(p)
    modes = [(m, m.is_training) for m in module.modules()]
    undo = _swap_in_constants(module)
    try:
        module.eval()
        outputs = module(*placeholders)
    finally:
        for m, table, k, v, attr in undo:
            table[k] = v
            if attr:
                object.__setattr__(m, k, v)
        for m, mode in modes:
            object.__setattr__(m, "is_training", mode)
        module.pending_updates()
    outputs = [outputs] if isinstance(outputs, Var) else list(outputs)
    names = list(output_names or (["output"] if len(outputs) == 1 else [f"output_{i}" for i in range(len(outputs))]))
    for v, name in zip(outputs, names):
        v.name = name
    marker = F.const(np.array([len(outputs), len(placeholders)], np.int64))
    marker.name = _EXPORT_KEY
    F.save([marker] + [F.clone(v) if v.is_placeholder else v for v in outputs] + placeholders, os.fspath(path))


_EXPORT_KEY = "mnnpy.nn.export"


def load_exported(path):
    """(input placeholders, outputs) of a file written by ``export``, or None for other files."""
    saved = F.load_as_list(os.fspath(path))
    if not saved or saved[0].name != _EXPORT_KEY:
        return None
    n_out, n_in = (int(v) for v in saved[0].read())
    return saved[1 + n_out:1 + n_out + n_in], saved[1:1 + n_out]
