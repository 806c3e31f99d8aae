"""Block pruning of a converted model's weights: the layers that can run block-sparse (1x1
convolutions of group 1, Gemm, MatMul with a constant 2-D right operand) get their weights pruned
with ``expr.prune_blocks`` (docs/sparse.md)."""
import copy

import numpy as np

from .._expr_sparse import _check_block, _check_sparsity, prune_blocks


def _output_major_weight(node, weights):
    """(weight name, function from the stored weight to its [N, K, ...] view, and back) for a node
    whose constant weight the block-sparse scheme can take; None otherwise."""
    if node.op == "Conv" and len(node.inputs) > 1 and node.inputs[1] in weights:
        w = weights[node.inputs[1]]
        if w.ndim == 4 and w.shape[2:] == (1, 1) and int(node.attrs.get("group", 1)) == 1:
            return node.inputs[1], (lambda a: a), (lambda a: a)
    elif node.op in ("Gemm", "MatMul") and len(node.inputs) > 1 and node.inputs[1] in weights:
        w = weights[node.inputs[1]]
        if w.ndim == 2:
            if node.op == "Gemm" and int(node.attrs.get("transB", 0)):
                return node.inputs[1], (lambda a: a), (lambda a: a)
            return node.inputs[1], (lambda a: a.T), (lambda a: np.ascontiguousarray(a.T))
    return None


def prune_weights(graph, sparsity, block=(1, 4), layers=None):
    """Prunes a converted model (a ``Graph`` from ``convert.from_*`` or ``load_model``): the float
    weight of each 1x1 convolution of group 1, Gemm and MatMul with a constant 2-D right operand is
    pruned with ``expr.prune_blocks(weight, sparsity, block)`` along its output channels and inputs.
    ``layers``: node names to prune (default: every such node whose weight ``block`` divides; a
    named node that cannot be pruned raises ValueError). Returns ``(pruned_graph, report)``, the
    report mapping each pruned weight's name to its sparsity; ``graph`` is not modified."""
    sparsity = _check_sparsity(sparsity)
    bn, bk = _check_block(block)
    wanted = None if layers is None else set(layers)
    known = {n.name for n in graph.nodes}
    if wanted is not None and wanted - known:
        raise ValueError(f"prune_weights: no nodes named {sorted(wanted - known)} in the graph")
    weights = dict(graph.weights)
    report = {}
    for node in graph.nodes:
        if wanted is not None and node.name not in wanted:
            continue
        found = _output_major_weight(node, weights)
        name = found[0] if found else None
        if found is None or weights[name].dtype.kind != "f":
            if wanted is not None:
                raise ValueError(f"prune_weights: node {node.name!r} ({node.op}) has no constant float weight the "
                                 "block-sparse scheme runs (1x1 Conv of group 1, Gemm, MatMul)")
            continue
        if name in report:
            continue
        _, to_rows, from_rows = found
        rows = to_rows(weights[name])
        k = int(np.prod(rows.shape[1:]))
        if rows.shape[0] % bn or k % bk:
            if wanted is not None:
                raise ValueError(f"prune_weights: block {(bn, bk)} does not divide the weight of node "
                                 f"{node.name!r}, [N, K] = [{rows.shape[0]}, {k}]")
            continue
        pruned = from_rows(prune_blocks(rows, sparsity, (bn, bk)))
        weights[name] = pruned
        report[name] = 1.0 - np.count_nonzero(pruned) / pruned.size
    out = copy.copy(graph)
    out.weights = weights
    return out, report
