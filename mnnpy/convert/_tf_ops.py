"""Graph nodes with TensorFlow's semantics (op names "TF.*"), for the TensorFlow ops that no
ONNX operator matches one to one: `read_tensorflow` (convert/tensorflow.py) emits them,
`instantiate` builds them like the ONNX ones. This module needs no TensorFlow."""
import numpy as np

from .. import expr as F
from ._onnx_ops import _ints, handles


@handles("TF.Einsum")
def _einsum(ctx, node, ins):
    from ..numpy import einsum
    equation = node.attrs["equation"]
    if "..." in equation and "->" not in equation:
        raise ValueError(f"einsum equation {equation!r}: an ellipsis needs an explicit output")
    return einsum(equation, *ins)


@handles("TF.ArgReduce")
def _arg_reduce(ctx, node, ins):
    """ArgMax / ArgMin with the axis as an input and the index type as an attribute."""
    x = ins[0]
    axis = _ints(ctx, node, ins[1], "axis")
    if len(axis) != 1:
        raise ValueError(f"one axis expected, got {axis}")
    reduce = F.argmax if node.attrs["max"] else F.argmin
    return F.cast(reduce(x, axis[0] + x.ndim if axis[0] < 0 else axis[0]), np.dtype(node.attrs["dtype"]))
