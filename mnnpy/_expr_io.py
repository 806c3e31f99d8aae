"""Saving and loading Vars in mnnpy's own graph file format (described in docs/file_format.md).

``save`` writes the graph behind some Vars: constants with their values, placeholders with
their dtype and shape (not a written value), and every op with its attributes. Loading
rebuilds the graph op by op, so each node is checked again; constants point into a read-only
mapping of the file instead of being copied.
"""
import os as _os

from . import _core
from ._core import Var

__all__ = ["save", "load_as_list", "load_as_dict"]


def _path(fileName):
    return _os.fsdecode(_os.fspath(fileName))


def save(vars, fileName):
    """Write ``vars`` (a Var or a list of Vars) and the graph behind them to ``fileName``.

    Outputs already computed from constants alone are stored as their values. The file is
    written next to ``fileName`` and renamed into place, so a file being read stays intact.
    """
    if isinstance(vars, Var):
        vars = [vars]
    vars = list(vars)
    for v in vars:
        if not isinstance(v, Var):
            raise TypeError(f"save() takes Vars, got {type(v).__name__}")
    _core.save_graph(vars, _path(fileName))


def _is_model_file(path):
    """Whether ``path`` is a model file (MNN's, ONNX) rather than a saved graph; anything that is
    not a regular file is left to the graph reader, which refuses it, and so is a file that starts
    as a saved graph does, whatever its name (the module loader reads those through this reader)."""
    from .convert._graph import check_regular_file, file_head
    from .convert._mnn_loading import MNNPY_MAGIC, is_mnn_file
    try:
        check_regular_file(path)
        if file_head(path, len(MNNPY_MAGIC)) == MNNPY_MAGIC:
            return False
    except OSError:
        return False
    return path.lower().endswith(".onnx") or is_mnn_file(path)


# (node id, output index) -> (model file, tensor name) of the Vars load_as_dict / load_as_list
# gave for a model file, so that nn.load_module(..., for_training=True) can train that model
# between them. Node ids are never reused, so an entry cannot name another Var.
_MODEL_TENSORS = {}


def model_tensor(var):
    """(model file, tensor name) when ``var`` is a tensor load_as_dict gave from a model file."""
    return _MODEL_TENSORS.get((var.node_id, var.output_index)) if isinstance(var, Var) else None


def _model_values(path):
    """The values of a model file (MNN's ``.mnn``, ONNX) as Vars by name, as MNN's loaders give
    a model's tensors: the inputs as named placeholders of the shape the file gives (a dimension
    it leaves free is 1), then every value the model computes, in the model's order."""
    from .convert._graph import Graph, ValueInfo
    from .convert._onnx_ops import NeedsInputValue, instantiate
    from .nn import load_module_from_file
    module = load_module_from_file(path, blocked_layout=False)
    graph = module._run_graph
    names = list(dict.fromkeys(o for node in graph.nodes for o in node.outputs if o))
    types = {v.name: ([d if isinstance(d, int) and d > 0 else 1 for d in (v.saved_shape or v.shape or [])], v.dtype)
             for v in graph.inputs}
    every_value = Graph(graph.nodes, graph.weights, graph.inputs, [ValueInfo(n, "", []) for n in names],
                        graph.opset, graph.producer)
    try:
        placeholders, values = instantiate(every_value, module._weights, types)
    except NeedsInputValue as e:
        raise ValueError(f"'{path}': the model's shapes depend on its input values ({e}), so its tensors "
                         "cannot be given as Vars ahead of them; use nn.load_module_from_file") from None
    tensors = {**placeholders, **dict(zip(names, values))}
    for name, var in tensors.items():
        _MODEL_TENSORS[(var.node_id, var.output_index)] = (path, name)
    return tensors


def load_as_list(fileName):
    """The Vars saved in ``fileName``, in the order they were given to ``save``; for a model
    file (MNN's ``.mnn``, ONNX) its inputs and every value it computes, in the model's order."""
    path = _path(fileName)
    if _is_model_file(path):
        return list(_model_values(path).values())
    return _core.load_graph(path)[0]


def load_as_dict(fileName):
    """The Vars of ``fileName`` by name.

    First the saved Vars, in order: an unnamed one (or one whose name is already taken) is
    called ``output_<i>``, ``i`` being its position in the saved list. Then, as in MNN, every
    other named node of the graph under its name (so ``d["input"]`` finds a placeholder named
    ``"input"`` even when only the outputs were saved). A model file (MNN's ``.mnn``, ONNX)
    gives its tensors by name, as MNN does for ``.mnn`` files: write the input placeholders,
    read any value.
    """
    path = _path(fileName)
    if _is_model_file(path):
        return _model_values(path)
    outputs, names, named_nodes = _core.load_graph(path)
    result = {}
    for i, (var, name) in enumerate(zip(outputs, names)):
        key = name if name and name not in result else f"output_{i}"
        suffix = 1
        while key in result:
            key = f"output_{i}_{suffix}"
            suffix += 1
        result[key] = var
    for name, var in named_nodes:
        result.setdefault(name, var)
    return result
