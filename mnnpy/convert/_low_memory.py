"""MNN's ``memory="low"`` mode for converted models: the float weights of linear layers are kept
as int8 with one scale per output column, and those layers run on the dynamically quantized
int8 GEMM (``expr.dynamic_quant_matmul``, docs/int8.md).

One graph pass, run when a model is loaded in that mode: a MatMul whose right operand is a 2-D
float weight (with the bias the loader may have fused into it), or a Gemm (no transposed A, alpha 1, a bias of N values at beta 1 or none) with a
2-D float weight, both of at least ``MIN_DIMENSION`` rows and columns, becomes a
``DynamicQuantMatMul`` node reading the int8 weight and its scales; float weights no node reads
any more are dropped. Rewritten layers reading the same input (a transformer's query, key and
value projections) then become one ``DynamicQuantMatMul`` on their weights side by side, followed
by a ``Split`` into the original outputs: the input is quantized once, for one wider product.
A Relu or Gelu (erf form) that alone reads a rewritten layer's output runs in its epilogue.
Layers already on block-quantized weights (``WeightQuantMatMul``, from ``--weightQuantBits``)
keep their codes and quantize their activations to int8 at run time instead."""
import numpy as np

from ._graph import Graph, Node

MIN_DIMENSION = 64  # smaller products gain nothing from 8 bits; their weights are small anyway

OP = "DynamicQuantMatMul"
WEIGHT_QUANT_OP = "WeightQuantMatMul"


def _float_matrix(weights, name):
    w = weights.get(name) if name else None
    if w is None or not hasattr(w, "dtype") or np.dtype(w.dtype).kind != "f" or w.ndim != 2:
        return None
    return w


def _bias_vector(weights, name, n):
    """Whether weight `name` is a float bias of n values along the last axis (shape (n,) or (1, n))."""
    b = weights.get(name)
    return (b is not None and hasattr(b, "dtype") and np.dtype(b.dtype).kind == "f" and b.size == n
            and b.ndim >= 1 and b.shape[-1] == n)


def _attr(node, key, default):
    return node.attrs.get(key, default)


def _linear_weight(node, weights):
    """(input, weight [K, N] as stored, transposed, bias name or None) of a node the pass
    rewrites, else None."""
    if node.op == "MatMul" and 2 <= len(node.inputs) <= 3:
        # A third input is a bias the loader fused into the product.
        w = _float_matrix(weights, node.inputs[1])
        bias = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None
        if w is None or bias is not None and not _bias_vector(weights, bias, w.shape[1]):
            return None
        return node.inputs[0], node.inputs[1], False, bias
    if node.op == "Gemm" and 2 <= len(node.inputs) <= 3:
        if _attr(node, "transA", 0) or float(_attr(node, "alpha", 1.0)) != 1.0:
            return None
        w = _float_matrix(weights, node.inputs[1])
        if w is None:
            return None
        transposed = bool(_attr(node, "transB", 0))
        n = w.shape[0] if transposed else w.shape[1]
        bias = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None
        if bias is not None and (float(_attr(node, "beta", 1.0)) != 1.0 or not _bias_vector(weights, bias, n)):
            return None
        return node.inputs[0], node.inputs[1], transposed, bias
    return None


def quantize_linear_weights(graph):
    """The graph with its eligible linear layers on int8 weights (the module docstring); the
    given graph is not changed."""
    from .. import expr as F
    weights = dict(graph.weights)
    nodes, quantized, replaced = [], {}, set()
    for node in graph.nodes:
        if node.op == WEIGHT_QUANT_OP:
            nodes.append(Node(node.op, list(node.inputs), list(node.outputs), {**node.attrs, "int8_activations": 1},
                              node.name))
            continue
        found = _linear_weight(node, weights)
        if found is None:
            nodes.append(node)
            continue
        x, w_name, transposed, bias = found
        w = np.asarray(weights[w_name])
        K, N = (w.shape[1], w.shape[0]) if transposed else w.shape
        if K < MIN_DIMENSION or N < MIN_DIMENSION:
            nodes.append(node)
            continue
        key = (w_name, transposed)
        if key not in quantized:
            w_int8, scales = F.quantize_weight_per_column(w.T if transposed else w)
            suffix = "_t" if transposed else ""
            q_name, s_name = f"{w_name}/int8{suffix}", f"{w_name}/scales{suffix}"
            weights[q_name], weights[s_name] = w_int8.read(), scales.read()
            quantized[key] = (q_name, s_name)
        inputs = [x, *quantized[key]]
        replaced.add(w_name)
        if bias is not None:
            b_name = f"{bias}/vector"
            weights[b_name] = np.asarray(weights[bias], np.float32).reshape(-1)
            inputs.append(b_name)
            replaced.update((bias, b_name))
        nodes.append(Node(OP, inputs, list(node.outputs), {}, node.name))
        replaced.update(quantized[key])
    nodes = _fuse_activations(nodes, {v.name for v in graph.outputs})
    nodes = _merge_shared_inputs(nodes, weights)
    # The weights only the replaced nodes read are gone with them, as are the int8 weights, scales
    # and bias vectors made here for layers merged into one.
    read = {x for n in nodes for x in _reads(n)} | {v.name for v in graph.outputs}
    for name in replaced - read:
        del weights[name]
    return Graph(nodes, weights, graph.inputs, graph.outputs, graph.opset, graph.producer)


ACTIVATIONS = {"Relu": "relu", "Gelu": "gelu"}


def _fuse_activations(nodes, graph_outputs):
    """The nodes with each Relu or Gelu (erf form) that is the only reader of a rewritten layer's
    output (not a graph output) moved into that layer as its activation."""
    readers = {}
    for node in nodes:
        for name in _reads(node):
            readers.setdefault(name, []).append(node)
    fused, out = {}, []
    for node in nodes:
        if node.op in ACTIVATIONS and node.attrs.get("approximate", "none") == "none" and node.inputs:
            producer = fused.get(node.inputs[0])
            if producer is not None and len(readers.get(node.inputs[0], [])) == 1:
                producer.attrs = {**producer.attrs, "activation": ACTIVATIONS[node.op]}
                producer.outputs = list(node.outputs)
                del fused[node.inputs[0]]
                continue
        if node.op == OP and not node.attrs.get("activation") and node.outputs[0] not in graph_outputs:
            fused[node.outputs[0]] = node
        out.append(node)
    return out


def _merge_shared_inputs(nodes, weights):
    """The nodes with each set of rewritten layers that read one input replaced by one
    DynamicQuantMatMul on their weights concatenated along N (scales likewise, a missing bias as
    zeros) and a Split of its output along the last axis into theirs, both where the first of
    them was. New weights go into `weights`."""
    groups = {}
    for node in nodes:
        if node.op == OP and not node.attrs.get("activation"):
            groups.setdefault(node.inputs[0], []).append(node)
    merged_at = {}
    for x, group in groups.items():
        if len(group) < 2:
            continue
        ws = [np.asarray(weights[n.inputs[1]]) for n in group]
        sizes = [w.shape[1] for w in ws]
        scales = [np.broadcast_to(np.asarray(weights[n.inputs[2]], np.float32).reshape(-1), (w.shape[1],))
                  for n, w in zip(group, ws)]
        base = group[0].name or group[0].outputs[0]
        w_name, s_name, y_name = f"{base}/merged_int8", f"{base}/merged_scales", f"{base}/merged_output"
        weights[w_name] = np.concatenate(ws, axis=1)
        weights[s_name] = np.concatenate(scales)
        inputs = [x, w_name, s_name]
        if any(len(n.inputs) > 3 for n in group):
            b_name = f"{base}/merged_bias"
            weights[b_name] = np.concatenate([
                np.broadcast_to(np.asarray(weights[n.inputs[3]], np.float32).reshape(-1), (size,))
                if len(n.inputs) > 3 else np.zeros(size, np.float32) for n, size in zip(group, sizes)])
            inputs.append(b_name)
        outputs = [o for n in group for o in n.outputs]
        merged_at[id(group[0])] = [Node(OP, inputs, [y_name], {}, f"{base}/merged"),
                                   Node("Split", [y_name], outputs, {"axis": -1, "split": sizes}, f"{base}/split")]
        for n in group[1:]:
            merged_at[id(n)] = []
    out = []
    for node in nodes:
        out.extend(merged_at.get(id(node), [node]))
    return out


def _reads(node):
    from ._graph import node_reads
    return node_reads(node)
