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


def load_as_list(fileName):
    """The Vars saved in ``fileName``, in the order they were given to ``save``."""
    return _core.load_graph(_path(fileName))[0]


def load_as_dict(fileName):
    """The Vars of ``fileName`` by name.

    First the saved Vars, in order: an unnamed one (or one whose name is already taken) is
    called ``output_<i>``, ``i`` being its position in the saved list. Then, as in MNN, every
    other named node of the graph under its name (so ``d["input"]`` finds a placeholder named
    ``"input"`` even when only the outputs were saved).
    """
    outputs, names, named_nodes = _core.load_graph(_path(fileName))
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
