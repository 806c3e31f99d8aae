"""Fuzzes ONNX files given to nn.load_module_from_file (the core's protobuf decoder,
mnnpy.convert's graph passes, and the module built from the result), then runs each module that
loads once on inputs of its declared shapes. Half of the mutations are libFuzzer's byte
mutations; the other half parse the model with the onnx package and change one field (an
operator, an attribute, a tensor's dims or data type, a wire between nodes, the opset), so that
most inputs stay readable protobufs and reach the converter. The reader refusing bytes is fine (a
ValueError); a crash, a hang or another exception from mnnpy is a finding. See fuzz/_harness.py for how to run it; with --node-tests the
corpus is also seeded with the ONNX package's node test models."""
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _harness  # noqa: E402
import _models  # noqa: E402

_files = _harness.ScratchFiles(".onnx")


def fuzz_one(data):
    _models.load_and_run(_files, data)


# ---------------------------------------------------------------- structure-aware mutation
INTERESTING_INTS = [0, 1, -1, 2, 3, 7, 255, 256, 65535, 1 << 31, (1 << 31) - 1, -(1 << 31), 1 << 32, 1 << 40,
                    (1 << 62), (1 << 63) - 1, -(1 << 63)]
INTERESTING_FLOATS = [0.0, -0.0, 1.0, -1.0, 1e-45, 1e38, -1e38, float("inf"), float("-inf"), float("nan")]


def _mutate_attribute(attr, rng):
    from onnx import AttributeProto as A
    if attr.type == A.INT:
        attr.i = rng.choice(INTERESTING_INTS + [attr.i + 1, attr.i - 1])
    elif attr.type == A.FLOAT:
        attr.f = rng.choice(INTERESTING_FLOATS)
    elif attr.type == A.INTS:
        values = list(attr.ints)
        action = rng.randrange(3)
        if action == 0 and values:
            values[rng.randrange(len(values))] = rng.choice(INTERESTING_INTS)
        elif action == 1 and values:
            values.pop(rng.randrange(len(values)))
        else:
            values.append(rng.choice(INTERESTING_INTS))
        del attr.ints[:]
        attr.ints.extend(values)
    elif attr.type == A.FLOATS and attr.floats:
        attr.floats[rng.randrange(len(attr.floats))] = rng.choice(INTERESTING_FLOATS)
    elif attr.type == A.STRING:
        attr.s = rng.choice([b"", b"linear", b"nearest", b"cubic", b"constant", b"reflect", b"edge", b"NOTSET",
                             b"SAME_UPPER", b"VALID", b"\xff\xfe", attr.s * 2])
    elif attr.type == A.TENSOR:
        _mutate_tensor(attr.t, rng)
    elif attr.type == A.GRAPH:
        _mutate_graph(attr.g, rng, depth=1)


def _mutate_tensor(t, rng):
    action = rng.randrange(4)
    if action == 0 and t.dims:
        t.dims[rng.randrange(len(t.dims))] = rng.choice(INTERESTING_INTS[:12])
    elif action == 1:
        t.data_type = rng.choice([1, 2, 3, 5, 6, 7, 9, 10, 11, 16, 4, 12, 13, 8, 14, 0, 99])
    elif action == 2 and t.raw_data:
        t.raw_data = t.raw_data[: rng.randrange(len(t.raw_data) + 1)]
    else:
        t.dims.append(rng.choice([0, 1, 2]))


def _mutate_graph(g, rng, depth=0):
    from mnnpy.convert import supported_operators
    names = [v.name for v in g.input] + [t.name for t in g.initializer] + [o for n in g.node for o in n.output]
    action = rng.randrange(10)
    if action <= 3 and g.node:
        node = g.node[rng.randrange(len(g.node))]
        if node.attribute and rng.random() < 0.7:
            _mutate_attribute(node.attribute[rng.randrange(len(node.attribute))], rng)
        elif rng.random() < 0.5:
            node.op_type = rng.choice(supported_operators())
        elif node.input and names:
            node.input[rng.randrange(len(node.input))] = rng.choice(names + [""])
        elif node.attribute:
            del node.attribute[rng.randrange(len(node.attribute))]
    elif action == 4 and g.node:
        node = g.node[rng.randrange(len(g.node))]
        if node.input and rng.random() < 0.5:
            del node.input[rng.randrange(len(node.input))]
        elif names:
            node.input.append(rng.choice(names))
    elif action == 5 and g.initializer:
        _mutate_tensor(g.initializer[rng.randrange(len(g.initializer))], rng)
    elif action == 6 and g.input:
        value = g.input[rng.randrange(len(g.input))]
        tensor_type = value.type.tensor_type
        if tensor_type.shape.dim and rng.random() < 0.7:
            dim = tensor_type.shape.dim[rng.randrange(len(tensor_type.shape.dim))]
            if rng.random() < 0.8:
                dim.dim_value = rng.choice([0, 1, 2, 5, 1 << 20, 1 << 40])
            else:
                dim.dim_param = "dyn"
        else:
            tensor_type.elem_type = rng.choice([1, 2, 3, 5, 6, 7, 9, 10, 11, 16, 4, 12, 13, 8, 0])
    elif action == 7 and len(g.node) > 1:
        i = rng.randrange(len(g.node))
        if rng.random() < 0.5:
            del g.node[i]
        else:
            g.node.add().CopyFrom(g.node[i])
    elif action == 8 and g.output and names:
        g.output[rng.randrange(len(g.output))].name = rng.choice(names)
    elif g.node:
        a, b = rng.randrange(len(g.node)), rng.randrange(len(g.node))
        node_a, node_b = type(g.node[a])(), type(g.node[b])()
        node_a.CopyFrom(g.node[a])
        node_b.CopyFrom(g.node[b])
        g.node[a].CopyFrom(node_b)
        g.node[b].CopyFrom(node_a)


def mutate(data, max_size, seed):
    import atheris
    rng = random.Random(seed)
    if rng.random() < 0.5:
        return atheris.Mutate(data, max_size)
    import onnx
    try:
        model = onnx.load_from_string(data)
    except Exception:  # noqa: BLE001 (not a protobuf: mutate its bytes)
        return atheris.Mutate(data, max_size)
    try:
        if rng.random() < 0.1 and model.opset_import:
            model.opset_import[0].version = rng.choice([1, 7, 9, 10, 11, 12, 13, 17, 18, 21, 99])
        else:
            for _ in range(1 + rng.randrange(3)):
                _mutate_graph(model.graph, rng)
        out = model.SerializeToString()
    except ValueError:  # a value protobuf cannot hold (an int64 stepped past its range)
        return atheris.Mutate(data, max_size)
    return out if len(out) <= max_size else atheris.Mutate(data, max_size)


def seeds(node_tests=False):
    models = _models.seed_models() + (_models.node_test_models() if node_tests else [])
    return [m.SerializeToString() for m in models]


if __name__ == "__main__":
    node_tests = "--node-tests" in sys.argv
    if node_tests:
        sys.argv.remove("--node-tests")
    _harness.main("onnx", fuzz_one, lambda: seeds(node_tests), ["mnnpy.convert", "mnnpy.nn"], custom_mutator=mutate)
