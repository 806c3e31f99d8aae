"""Channels-last layout for the int8 convolutions of quantized models, chosen on the converted
graph after the QDQ fusion (_qdq_fusion.py).

The int8 kernels run fastest on [N, H, W, C] tensors (a pixel's channels are contiguous: a 1x1
layer is the GEMM on its input, a KxK layer's patches are runs of C bytes, the GEMM's output rows
are the next layer's pixels). This pass finds the maximal connected regions of ops that can run
channels last and switches them to it: layout-aware ops (LAYOUT_AWARE, the ones with a
`channels_last` attribute) get the attribute, and the elementwise ops between them
(ELEMENTWISE: per-tensor DequantizeLinear / QuantizeLinear, Add, ...), to which layout does not
matter, stay in the region so that it does not end at every residual connection. Transposes go
only at a region's borders, once per tensor, and every name read outside a region (model outputs
included) keeps its NCHW value, so the model's inputs and outputs do not change.
"""
from dataclasses import dataclass

import numpy as np

from ._graph import Node, node_reads

_TO_CHANNELS_LAST = [0, 2, 3, 1]
_TO_CHANNELS_FIRST = [0, 3, 1, 2]


@dataclass(frozen=True)
class LayoutAware:
    """An op with a `channels_last` attribute: the slots of its 4-D activations, [N, H, W, C]
    when the attribute is 1 (inputs: a tuple, or a function of the node for variadic ops), and
    `accepts(graph, node)`, whether this node can take the attribute (None: always)."""
    inputs: object = (0,)
    outputs: tuple = (0,)
    accepts: object = None

    def input_slots(self, node):
        slots = self.inputs(node) if callable(self.inputs) else self.inputs
        return [i for i in slots if i < len(node.inputs) and node.inputs[i]]


def _is_conv2d(graph, node):
    """A QLinearConv of 2-D images (its weights constant and 4-D)."""
    w = graph.weights.get(node.inputs[3]) if len(node.inputs) > 3 else None
    return w is not None and np.asarray(w).ndim == 4


def _eight_bit_image(graph, node):
    """An 8-bit MaxPool (its input produced by an int8 op, which the importer runs on the int8 2-D
    pool) of 2-D images (a 2-D kernel)."""
    return len(node.attrs.get("kernel_shape", ())) == 2 and _made_by_int8_op(graph, node.inputs[0])


def _made_by_int8_op(graph, name):
    producer = next((n for n in graph.nodes if name in n.outputs), None)
    return producer is not None and (producer.op in LAYOUT_AWARE or producer.op in ("QuantizeLinear", "QLinearAdd",
                                                                                    "QLinearMul", "QLinearConcat"))


def _two_d(graph, node):
    return len(node.attrs.get("kernel_shape", ())) == 2


def _of_images(graph, node):
    """A global pool whose input is a 2-D convolution's output, or an 8-bit sum or product of
    such (residual connections): 4-D for certain."""
    producers = {o: n for n in graph.nodes for o in n.outputs}
    known = {}  # name -> whether it is an image: each name is asked once, however often it is reused

    def image(name, depth):
        if name not in known:
            n = producers.get(name)
            if n is None or depth > 64:
                return False
            if n.op == "QLinearConv":
                known[name] = _is_conv2d(graph, n)
            else:
                known[name] = n.op in ("QLinearAdd", "QLinearMul") and image(n.inputs[0], depth + 1) and \
                    image(n.inputs[3], depth + 1)
        return known[name]
    return image(node.inputs[0], 0)


# The layout-aware ops, one line each. The pools are 2-D (4-D tensors) by their kernels; the
# global pool (any rank) where its input is an image: its output [N, 1, 1, C] then goes back to
# NCHW instead of its input.
LAYOUT_AWARE = {
    "QLinearConv": LayoutAware(inputs=(0,), outputs=(0,), accepts=_is_conv2d),
    "MaxPool": LayoutAware(inputs=(0,), outputs=(0,), accepts=_eight_bit_image),
    "QLinearAveragePool": LayoutAware(inputs=(0,), outputs=(0,), accepts=_two_d),
    "QLinearGlobalAveragePool": LayoutAware(inputs=(0,), outputs=(0,), accepts=_of_images),
}


@dataclass(frozen=True)
class Elementwise:
    """An op indifferent to the layout when its inputs outside `inputs` (its activations) are
    single constant values. `widens`: its output is larger than its input (8-bit in, float out),
    so a region keeps it where it reads from outside and drops it where only outside reads it
    (the transpose then moves the smaller tensor)."""
    inputs: tuple
    widens: bool = False


ELEMENTWISE = {
    "DequantizeLinear": Elementwise(inputs=(0,), widens=True),
    "QuantizeLinear": Elementwise(inputs=(0,)),
    "Add": Elementwise(inputs=(0, 1)),
    "Sub": Elementwise(inputs=(0, 1)),
    "Mul": Elementwise(inputs=(0, 1)),
    "Relu": Elementwise(inputs=(0,)),
    "Clip": Elementwise(inputs=(0,)),
    "QLinearAdd": Elementwise(inputs=(0, 3)),
    "QLinearMul": Elementwise(inputs=(0, 3)),
}


def _scalar_constant(graph, name):
    return name in graph.weights and np.asarray(graph.weights[name]).size == 1


def _elementwise_ok(graph, node):
    """An ELEMENTWISE node whose every input outside its activation slots is a single constant
    value (per-tensor scales and zero points, Clip's bounds) or omitted."""
    spec = ELEMENTWISE.get(node.op)
    if spec is None or len(node.outputs) != 1:
        return False
    for i, x in enumerate(node.inputs):
        if i in spec.inputs:
            if not x or x in graph.weights:  # a constant operand: its shape may broadcast by position
                return False
        elif x and not _scalar_constant(graph, x):
            return False
    return True


def to_channels_last(graph):
    """Rewrites graph.nodes in place (see the module docstring); returns the graph."""
    nodes = graph.nodes
    aware = {}  # index -> LayoutAware, for the nodes that can take channels_last
    for i, n in enumerate(nodes):
        entry = LAYOUT_AWARE.get(n.op)
        if entry is not None and (entry.accepts is None or entry.accepts(graph, n)) \
                and n.attrs.get("channels_last", 0) == 0:
            aware[i] = entry
    if not aware:
        return graph
    elementwise = {i for i, n in enumerate(nodes) if i not in aware and _elementwise_ok(graph, n)}

    def data_inputs(i):
        n = nodes[i]
        return aware[i].input_slots(n) if i in aware else [k for k in ELEMENTWISE[n.op].inputs if k < len(n.inputs)]

    def data_outputs(i):
        return list(aware[i].outputs) if i in aware else [0]

    # Tensors known to be 4-D: the activations of layout-aware ops, and what elementwise ops pass
    # on (a unary op keeps its input's rank; a binary one's output is 4-D when both inputs are).
    four_d = set()
    for i in aware:
        four_d.update(nodes[i].inputs[k] for k in data_inputs(i))
        four_d.update(nodes[i].outputs[k] for k in data_outputs(i))
    changed = True
    while changed:
        changed = False
        for i in elementwise:
            n = nodes[i]
            ins = [n.inputs[k] for k in data_inputs(i)]
            if len(ins) == 1 and (ins[0] in four_d) != (n.outputs[0] in four_d):
                four_d.update((ins[0], n.outputs[0]))
                changed = True
            elif len(ins) > 1 and all(x in four_d for x in ins) and n.outputs[0] not in four_d:
                four_d.add(n.outputs[0])
                changed = True
    members = set(aware) | {i for i in elementwise
                            if all(nodes[i].inputs[k] in four_d for k in data_inputs(i)) and nodes[i].outputs[0] in four_d}

    producer = {}
    for i, n in enumerate(nodes):
        for k, o in enumerate(n.outputs):
            producer[o] = (i, k)
    readers = {}
    for i, n in enumerate(nodes):
        for x in node_reads(n):
            readers.setdefault(x, []).append(i)
    graph_outputs = {v.name for v in graph.outputs}

    def inside(name, region):
        """Whether `name` is an activation output of a member of region."""
        p = producer.get(name)
        return p is not None and p[0] in region and p[1] in data_outputs(p[0])

    # Elementwise members at a border, dropped until none is left: those whose inputs all come
    # from outside (the transpose then moves their output) unless they widen their tensor, and
    # those that only outside reads if they widen it (the transpose then moves their input);
    # then the regions (connected by activations) without a layout-aware op.
    while True:
        dropped = set()
        for i in members - set(aware):
            n = nodes[i]
            from_outside = not any(inside(n.inputs[k], members) for k in data_inputs(i))
            to_outside = not any(r in members for r in readers.get(n.outputs[0], []))
            spec = ELEMENTWISE[n.op]
            if (from_outside and not spec.widens) or (to_outside and spec.widens):
                dropped.add(i)
        if not dropped:
            break
        members -= dropped
    region_of = {}
    for start in sorted(members):
        if start in region_of:
            continue
        stack, region = [start], start
        region_of[start] = region
        while stack:
            i = stack.pop()
            linked = [producer[nodes[i].inputs[k]][0] for k in data_inputs(i) if inside(nodes[i].inputs[k], members)]
            for k in data_outputs(i):
                linked += [r for r in readers.get(nodes[i].outputs[k], []) if r in members and
                           nodes[i].outputs[k] in [nodes[r].inputs[s] for s in data_inputs(r)]]
            for j in linked:
                if j not in region_of:
                    region_of[j] = region
                    stack.append(j)
    # Regions worth their transposes: those with a convolution (a pool alone would only be moved
    # back and forth).
    with_aware = {region_of[i] for i in aware if i in region_of and nodes[i].op == "QLinearConv"}
    members = {i for i in members if region_of[i] in with_aware}

    # Rewrite: members' activation outputs get channels-last names; a Transpose back to the
    # original name where anything else reads it; a Transpose in front of a member's activation
    # input produced outside.
    renamed = {}  # original name -> its channels-last name
    for i in members:
        for k in data_outputs(i):
            renamed[nodes[i].outputs[k]] = nodes[i].outputs[k] + "/channels_last"
    taken = {o for n in nodes for o in n.outputs} | {x for n in nodes for x in n.inputs} | set(graph.weights)
    for name in renamed.values():
        if name in taken:
            raise ValueError(f"int8 layout pass: the name '{name}' is already used")
    converted = {}  # NCHW name produced outside -> its channels-last copy
    out = []
    for i, n in enumerate(nodes):
        if i not in members:
            out.append(n)
            continue
        inputs = list(n.inputs)
        for k in data_inputs(i):
            x = inputs[k]
            if x in renamed and inside(x, members):
                inputs[k] = renamed[x]
                continue
            if x not in converted:
                converted[x] = x + "/to_channels_last"
                out.append(Node("Transpose", [x], [converted[x]], {"perm": list(_TO_CHANNELS_LAST)},
                                f"{n.name}/to_channels_last"))
            inputs[k] = converted[x]
        outputs = list(n.outputs)
        for k in data_outputs(i):
            outputs[k] = renamed[n.outputs[k]]
        attrs = dict(n.attrs)
        if i in aware:
            attrs["channels_last"] = 1
        out.append(Node(n.op, inputs, outputs, attrs, n.name))
        for k in data_outputs(i):
            name = n.outputs[k]
            outside = [r for r in readers.get(name, [])
                       if r not in members or name not in [nodes[r].inputs[s] for s in data_inputs(r)]]
            if outside or name in graph_outputs:
                out.append(Node("Transpose", [renamed[name]], [name], {"perm": list(_TO_CHANNELS_FIRST)},
                                f"{n.name}/to_channels_first"))
    graph.nodes = out
    return graph
