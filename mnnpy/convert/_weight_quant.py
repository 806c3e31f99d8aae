"""Weight-only quantization of a converted graph (MNN's ``--weightQuantBits``,
``--weightQuantBlock``, ``--weightQuantAsymmetric``): each MatMul and Gemm whose right-hand
operand is a constant float matrix becomes a ``WeightQuantMatMul`` node reading the packed codes,
per-block scales (and zero points) as weights of the file, so the file holds the codes, not the
floats. See docs/weight_quantization.md."""
import copy
import os

import numpy as np

from .. import _core
from .. import expr as F
from .._expr_weight_quant import QuantizedWeight, check_weight_quant_options, quantize_weight_blocks
from ._graph import Graph, Node, load_model, node_reads
from ._onnx_ops import _attr, handles

OP = "WeightQuantMatMul"


def check_options(bits, block, what="weight quantization"):
    """(bits, block) when bits asks for quantization, (0, block) when it does not; ValueError
    naming a bit width or block size the format does not have."""
    if bits in (None, 0):
        return 0, block
    return check_weight_quant_options(bits, 32 if block in (None, 0, -1) else block, what)


def quantize_weights(graph_or_model, bits=4, block=32, symmetric=True):
    """A copy of a converted graph (a Graph, or the path of a model file written by
    ``mnnpy.convert``) whose MatMul and Gemm nodes with a constant float weight matrix, K a
    multiple of ``block``, compute from block-quantized codes (``WeightQuantMatMul``). The weight
    matrix is quantized along its input dimension K; matrices the blocks do not divide stay
    float. The given graph is not modified; save the result with ``save_model``."""
    bits, block = check_weight_quant_options(bits, block, "quantize_weights")
    if isinstance(graph_or_model, (str, os.PathLike)):
        graph = load_model(graph_or_model)
        graph.weights = {k: np.asarray(v.read()) if not isinstance(v, np.ndarray) else v
                         for k, v in graph.weights.items()}
    elif isinstance(graph_or_model, Graph):
        graph = copy.copy(graph_or_model)
        graph.weights = dict(graph_or_model.weights)
    else:
        raise TypeError(f"quantize_weights takes a converted Graph or a model file path, got "
                        f"{type(graph_or_model).__name__}")
    quantized = {}  # (weight name, transposed) -> names of codes, scales, zeros
    nodes = []
    for node in graph.nodes:
        plan = _linear_weight(graph, node)
        if plan is None or plan[0].shape[1] % block:
            nodes.append(node)
            continue
        w, bias, key = plan
        if key not in quantized:
            q = quantize_weight_blocks(w, bits, block, symmetric)
            base = f"{key[0]}.q{bits}"
            names = [base + ".codes", base + ".scales"] + ([base + ".zeros"] if not symmetric else [])
            graph.weights[names[0]], graph.weights[names[1]] = q.codes, q.scales
            if not symmetric:
                graph.weights[names[2]] = q.zeros
            quantized[key] = names
        inputs = [node.inputs[0]] + quantized[key] + ([bias] if bias else [])
        nodes.append(Node(OP, inputs, list(node.outputs),
                          {"bits": bits, "block": block, "asymmetric": int(not symmetric)}, node.name))
    graph.nodes = nodes
    read = {x for n in nodes for x in node_reads(n)} | {v.name for v in graph.outputs}
    graph.weights = {k: v for k, v in graph.weights.items() if k in read}
    return graph


def _linear_weight(graph, node):
    """(W as (N, K), name of a bias weight of shape (N,) or None, key of W) for a MatMul or Gemm
    that multiplies its input by a constant float matrix, else None."""
    if node.op not in ("MatMul", "Gemm") or len(node.inputs) < 2 or not node.inputs[0]:
        return None
    name = node.inputs[1]
    b = graph.weights.get(name)
    if not isinstance(b, np.ndarray) or b.ndim != 2 or b.dtype.kind != "f" or 0 in b.shape:
        return None
    transposed = False
    if node.op == "Gemm":
        if _attr(node, "transA", 0) or _attr(node, "alpha", 1.0) != 1.0 or _attr(node, "beta", 1.0) != 1.0:
            return None
        transposed = bool(_attr(node, "transB", 0))
    w = b if transposed else b.T  # (N, K): one row per output feature
    bias = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None
    if bias is not None:
        c = graph.weights.get(bias)
        if not isinstance(c, np.ndarray) or c.dtype.kind != "f" or c.shape != (w.shape[0],):
            return None
    return w, bias, (name, transposed)


@handles(OP)
def _weight_quant_matmul(ctx, node, ins):
    # Float16 activations, scales (fp16=True) or biases compute in float32.
    as_float32 = lambda v: v if v.dtype != np.float16 else F.cast(v, np.float32)  # noqa: E731
    inputs = [as_float32(v) for v in ins]
    return _core.op(OP, inputs, {"bits": int(_attr(node, "bits")), "block": int(_attr(node, "block")),
                                 "asymmetric": int(_attr(node, "asymmetric", 0)),
                                 "int8_activations": int(_attr(node, "int8_activations", 0))})


__all__ = ["quantize_weights", "QuantizedWeight", "check_options"]
