"""The core's ONNX reader (`_core.read_onnx`) against the onnx package's protobuf parser: every
field the converter reads, tensors bit-exact against numpy_helper.to_array, on the model zoo's
exports, the onnx package's backend test models and node test cases, and hand-made encodings;
damaged bytes raise ValueError and never crash; the operator arity table against onnx.defs; and
loading a model without importing onnx, its weights read in place."""
import functools
import glob
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as T  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx import numpy_helper  # noqa: E402

from mnnpy import _core, convert, nn  # noqa: E402
from mnnpy.convert import onnx as onnx_convert  # noqa: E402
from helpers import python_env  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BACKEND_DATA = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
READ_TYPES = set(onnx_convert.ONNX_DTYPES)
READ_ATTRIBUTES = {onnx.AttributeProto.FLOAT, onnx.AttributeProto.INT, onnx.AttributeProto.STRING,
                   onnx.AttributeProto.TENSOR, onnx.AttributeProto.GRAPH, onnx.AttributeProto.FLOATS,
                   onnx.AttributeProto.INTS, onnx.AttributeProto.STRINGS}


# ---------------------------------------------------------------- comparison with onnx's parser
def _float_bits(values):
    return np.asarray(values, np.float32).tobytes()


def _problems(graph):
    """What the reader must refuse in a graph: tensors of types mnnpy has no dtype for, in
    external files, and attributes of kinds it does not convert."""
    found = []

    def tensor(t):
        if t.data_location == T.EXTERNAL:
            found.append("keeps its data in an external file")
        elif t.data_type not in READ_TYPES:
            found.append(f"ONNX data type {t.data_type}")

    for t in graph.initializer:
        tensor(t)
    for n in graph.node:
        for a in n.attribute:
            if a.type not in READ_ATTRIBUTES:
                found.append(f"attribute '{a.name}' holds a subgraph or another kind")
            elif a.type == onnx.AttributeProto.TENSOR:
                tensor(a.t)
            elif a.type == onnx.AttributeProto.GRAPH:
                found += _problems(a.g)
    return found


def _assert_same_array(got, t):
    expected = numpy_helper.to_array(t)
    assert isinstance(got, np.ndarray) and got.flags.c_contiguous and not got.flags.writeable
    assert got.dtype == expected.dtype and got.shape == expected.shape, (t.name, got.dtype, got.shape)
    if got.dtype == bool:  # the reader stores 0 or 1 whatever byte encodes true
        expected = expected.view(np.uint8) != 0
    assert got.tobytes() == np.ascontiguousarray(expected).tobytes(), t.name


def _expected_value_info(v):
    if v.type.WhichOneof("value") != "tensor_type":
        return (v.name, 0, None)
    tt = v.type.tensor_type
    dims = None
    if tt.HasField("shape"):
        dims = [d.dim_value if d.HasField("dim_value") else d.dim_param if d.HasField("dim_param") else None
                for d in tt.shape.dim]
    return (v.name, tt.elem_type, dims)


def _assert_same_attribute(got, a):
    A = onnx.AttributeProto
    if a.type == A.FLOAT:
        assert isinstance(got, float) and _float_bits(got) == _float_bits(a.f)
    elif a.type == A.INT:
        assert got == a.i and isinstance(got, int)
    elif a.type == A.STRING:
        assert got == a.s.decode("utf-8", errors="replace")
    elif a.type == A.FLOATS:
        assert isinstance(got, list) and _float_bits(got) == _float_bits(list(a.floats))
    elif a.type == A.INTS:
        assert got == list(a.ints)
    elif a.type == A.STRINGS:
        assert got == [s.decode("utf-8", errors="replace") for s in a.strings]
    elif a.type == A.TENSOR:
        _assert_same_array(got, a.t)
    else:
        _assert_same_graph(got, a.g)


def _assert_same_graph(got, g):
    assert got["name"] == g.name
    assert len(got["nodes"]) == len(g.node)
    for (op_type, domain, name, inputs, outputs, attrs), n in zip(got["nodes"], g.node):
        assert (op_type, domain, name, inputs, outputs) == (n.op_type, n.domain, n.name, list(n.input),
                                                             list(n.output))
        assert list(attrs) == list(dict.fromkeys(a.name for a in n.attribute))
        for a in n.attribute:
            _assert_same_attribute(attrs[a.name], a)
    assert list(got["initializers"]) == list(dict.fromkeys(t.name for t in g.initializer))
    for t in g.initializer:
        if sum(u.name == t.name for u in g.initializer) == 1:
            _assert_same_array(got["initializers"][t.name], t)
    assert got["inputs"] == [_expected_value_info(v) for v in g.input]
    assert got["outputs"] == [_expected_value_info(v) for v in g.output]


def assert_reads_like_onnx(data):
    """`data` (a model's bytes) read by the core equals what onnx parses, or is refused with a
    ValueError naming one of the things mnnpy does not read."""
    model = onnx.load_from_string(data)
    problems = _problems(model.graph)
    if problems:
        with pytest.raises(ValueError) as info:
            _core.read_onnx(data)
        assert any(p in str(info.value) for p in problems), (str(info.value), problems)
        return
    got = _core.read_onnx(data)
    assert got["ir_version"] == model.ir_version
    assert got["producer_name"] == model.producer_name
    assert got["producer_version"] == model.producer_version
    assert got["opset_import"] == [(o.domain, o.version) for o in model.opset_import]
    _assert_same_graph(got["graph"], model.graph)


@functools.lru_cache(maxsize=None)
def _node_cases():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from onnx_node_suite import collect_cases
    return collect_cases()


def _backend_data_files(pattern):
    return sorted(glob.glob(os.path.join(BACKEND_DATA, "**", pattern), recursive=True))


def test_onnx_backend_node_case_models_read_like_onnx():
    cases = [c for c in _node_cases() if c.model is not None]
    assert len(cases) > 1000
    for case in cases:
        assert_reads_like_onnx(case.model.SerializeToString())


@pytest.mark.skipif(not _backend_data_files("*.onnx"), reason="this onnx wheel ships no backend test models")
def test_onnx_backend_test_data_models_read_like_onnx():
    for path in _backend_data_files("*.onnx"):
        with open(path, "rb") as f:
            assert_reads_like_onnx(f.read())
        _core.read_onnx(path)  # the mapped file reads the same


def _tensor_model(*tensors):
    graph = h.make_graph([], "tensors", [], [], initializer=list(tensors))
    return h.make_model(graph).SerializeToString()


def test_tensors_of_the_backend_test_data_and_node_cases_read_like_onnx():
    """The inputs and outputs of onnx's test data (every dtype, as from_array writes them) and
    the node cases' arrays, as initializers."""
    paths = _backend_data_files("*.pb")
    for path in paths:
        t = T()
        with open(path, "rb") as f:
            t.ParseFromString(f.read())
        if t.name == "" and not t.dims and not t.data_type:
            continue  # a sequence or optional value, not a tensor
        t.name = "x"
        assert_reads_like_onnx(_tensor_model(t))
    arrays = {}
    for case in _node_cases():
        for inputs, outputs in case.data_sets or []:
            for a in list(inputs) + list(outputs):
                if isinstance(a, np.ndarray) and a.dtype.kind in "biuf" and a.dtype not in arrays:
                    arrays[a.dtype] = a
    assert len(arrays) >= 10
    for a in arrays.values():
        t = numpy_helper.from_array(a, "x")
        assert_reads_like_onnx(_tensor_model(t))


# Every dtype mnnpy reads, in each typed field's encoding (make_tensor writes packed fields).
TYPED_VALUES = {
    T.FLOAT: [1.5, -0.0, float("inf"), float("nan")], T.DOUBLE: [1.5, -2.25, 1e300, float("-inf")],
    T.INT8: [-128, -1, 0, 127], T.UINT8: [0, 1, 255, 7], T.INT16: [-32768, -1, 32767, 5],
    T.UINT16: [0, 65535, 1, 2], T.INT32: [-(1 << 31), -1, (1 << 31) - 1, 0], T.INT64: [-(1 << 63), -1, (1 << 63) - 1, 3],
    T.UINT32: [0, (1 << 32) - 1, 1, 2], T.UINT64: [0, (1 << 64) - 1, 1 << 63, 9], T.BOOL: [True, False, True, True],
    T.FLOAT16: [1.5, -2.0, 65504.0, float("nan")], T.BFLOAT16: [1.5, -2.0, 3e38, 0.0],
}


@pytest.mark.parametrize("dtype", sorted(TYPED_VALUES))
@pytest.mark.parametrize("raw", [False, True])
def test_typed_and_raw_tensors_read_like_onnx(dtype, raw):
    values = TYPED_VALUES[dtype]
    np_dtype = onnx.helper.tensor_dtype_to_np_dtype(dtype)
    array = np.array(values, dtype=np_dtype).reshape(2, 2)
    t = numpy_helper.from_array(array, "x") if raw else h.make_tensor("x", dtype, [2, 2], array.flatten().tolist())
    assert t.HasField("raw_data") == raw
    assert_reads_like_onnx(_tensor_model(t))


def _varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out) + bytes([n])


def _field(number, wire, payload):
    if wire == 2:
        payload = _varint(len(payload)) + payload
    return _varint(number << 3 | wire) + payload


def _unpacked_tensor(dtype, dims, values):
    """A TensorProto's bytes with its typed field unpacked (one tag per element) and its dims
    packed: encodings protobuf accepts though onnx never writes them."""
    field = {T.FLOAT: 4, T.DOUBLE: 10, T.INT64: 7, T.UINT32: 11, T.UINT64: 11}.get(dtype, 5)
    out = _field(1, 2, b"".join(_varint(d) for d in dims)) + _field(2, 0, _varint(dtype)) + _field(8, 2, b"x")
    for v in values:
        if field == 4:
            out += _field(4, 5, np.float32(v).tobytes())
        elif field == 10:
            out += _field(10, 1, np.float64(v).tobytes())
        elif dtype in (T.FLOAT16, T.BFLOAT16):
            out += _field(5, 0, _varint(int(np.array(v).astype(onnx.helper.tensor_dtype_to_np_dtype(dtype))
                                            .view(np.uint16))))
        else:
            out += _field(field, 0, _varint(int(v)))
    return out


def _model_with_tensor_bytes(tensor_bytes):
    return _field(8, 2, _field(2, 0, _varint(17))) + _field(7, 2, _field(5, 2, tensor_bytes))


@pytest.mark.parametrize("dtype", sorted(TYPED_VALUES))
def test_unpacked_typed_fields_read_like_onnx(dtype):
    assert_reads_like_onnx(_model_with_tensor_bytes(_unpacked_tensor(dtype, [2, 2], TYPED_VALUES[dtype])))


def test_bool_bytes_other_than_one_read_as_true():
    data = _model_with_tensor_bytes(_field(1, 0, _varint(4)) + _field(2, 0, _varint(T.BOOL)) + _field(8, 2, b"b") +
                                    _field(9, 2, bytes([0, 1, 2, 255])))
    got = _core.read_onnx(data)["graph"]["initializers"]["b"]
    assert got.view(np.uint8).tolist() == [0, 1, 1, 1]


def test_repeated_singular_message_fields_merge_as_protobuf_does():
    """A tensor attribute given twice (dims and type in one, data in the other), a graph field
    given twice, a dim whose oneof is set twice, a type switched between oneof members."""
    first = h.make_attribute("value", h.make_tensor("c", T.FLOAT, [3], [0, 0, 0]))
    del first.t.float_data[:]
    second = onnx.AttributeProto(t=T(float_data=[1, 2, 3]))
    node = h.make_node("Constant", [], ["c"])
    node_bytes = node.SerializeToString() + _field(5, 2, first.SerializeToString() + second.SerializeToString())
    x = h.make_tensor_value_info("x", T.FLOAT, ["N", 3])
    x.type.tensor_type.shape.dim[0].dim_value = 4  # the oneof now holds dim_value
    seq = onnx.ValueInfoProto(name="s", type=h.make_sequence_type_proto(h.make_tensor_type_proto(T.FLOAT, [2])))
    switched = onnx.ValueInfoProto(name="t", type=h.make_tensor_type_proto(T.INT64, [5]))
    switched_bytes = switched.SerializeToString() + _field(2, 2, seq.type.SerializeToString())
    graph_a = _field(1, 2, node_bytes) + _field(11, 2, x.SerializeToString())
    graph_b = _field(12, 2, seq.SerializeToString()) + _field(12, 2, switched_bytes) + _field(2, 2, b"merged")
    data = _field(8, 2, _field(2, 0, _varint(17))) + _field(7, 2, graph_a) + _field(7, 2, graph_b)
    assert_reads_like_onnx(data)
    got = _core.read_onnx(data)["graph"]
    np.testing.assert_array_equal(got["nodes"][0][5]["value"], [1, 2, 3])
    assert got["inputs"] == [("x", T.FLOAT, [4, 3])] and got["outputs"] == [("s", 0, None), ("t", 0, None)]


def test_repeated_names_keep_the_last_value():
    """Initializers and attributes of one name: the last wins, as the converter's dicts always
    had it (the arrays of the others are filled and dropped)."""
    first, last = numpy_helper.from_array(np.zeros(1000, np.float32), "w"), numpy_helper.from_array(np.ones(3), "w")
    node = h.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.zeros(1000, np.int64)))
    node.attribute.append(h.make_attribute("value", numpy_helper.from_array(np.arange(2, dtype=np.int64))))
    graph = h.make_graph([node], "g", [], [h.make_empty_tensor_value_info("c")], initializer=[first, last])
    got = _core.read_onnx(h.make_model(graph).SerializeToString())["graph"]
    np.testing.assert_array_equal(got["initializers"]["w"], np.ones(3))
    np.testing.assert_array_equal(got["nodes"][0][5]["value"], [0, 1])


def test_attribute_values_the_type_does_not_select_are_ignored():
    """An INT attribute that also carries a tensor of an unknown data type reads as its int, as
    protobuf's `type` discriminator says."""
    a = h.make_attribute("axis", 1)
    a.t.CopyFrom(h.make_tensor("bad", T.FLOAT, [1], [1.0]))
    a.t.data_type = 99
    node = h.make_node("Flatten", ["x"], ["y"])
    node.attribute.append(a)
    model = h.make_model(h.make_graph([node], "g", [h.make_tensor_value_info("x", T.FLOAT, [2, 2])],
                                      [h.make_tensor_value_info("y", T.FLOAT, None)]))
    assert_reads_like_onnx(model.SerializeToString())


# ---------------------------------------------------------------- the model zoo's exports
ZOO = [("torchvision", "resnet18", 32), ("torchvision", "mobilenet_v2", 64), ("torchvision", "mobilenet_v3_small", 64),
       ("torchvision", "squeezenet1_1", 64), ("torchvision", "shufflenet_v2_x0_5", 64),
       ("torchvision", "efficientnet_b0", 64), ("transformer", "bert", None), ("transformer", "gpt2", None),
       ("ssdlite", None, None)]


@pytest.mark.parametrize("kind,name,size", ZOO, ids=[f"{k}-{n}" for k, n, _ in ZOO])
def test_model_zoo_exports_read_like_onnx(kind, name, size):
    pytest.importorskip("torch")
    pytest.importorskip("torchvision")
    import model_zoo
    if kind == "torchvision":
        path = model_zoo.export_torchvision(name, size)
    elif kind == "transformer":
        pytest.importorskip("transformers")
        path = model_zoo.export_transformer(name)
    else:
        path = model_zoo.export_ssdlite()
    with open(path, "rb") as f:
        data = f.read()
    assert_reads_like_onnx(data)
    from_file, from_bytes = _core.read_onnx(path), _core.read_onnx(data)
    for key, w in from_file["graph"]["initializers"].items():
        assert w.tobytes() == from_bytes["graph"]["initializers"][key].tobytes()


# ---------------------------------------------------------------- damaged and hostile bytes
def _small_model():
    """A model with most of what the reader decodes: initializers, a Constant's tensor, ints,
    floats, strings, an If with subgraphs, symbolic dims."""
    then_branch = h.make_graph([h.make_node("Mul", ["x", "two"], ["t"])], "then", [],
                               [h.make_tensor_value_info("t", T.FLOAT, None)])
    else_branch = h.make_graph([h.make_node("Neg", ["x"], ["e"])], "else", [],
                               [h.make_tensor_value_info("e", T.FLOAT, None)])
    nodes = [h.make_node("Constant", [], ["two"], value=numpy_helper.from_array(np.float32(2))),
             h.make_node("Constant", [], ["unused_floats"], value_floats=[1.5, -2.5]),
             h.make_node("ReduceSum", ["x"], ["s"], keepdims=0, name="sum"),
             h.make_node("Greater", ["s", "zero"], ["cond"]),
             h.make_node("If", ["cond"], ["y"], then_branch=then_branch, else_branch=else_branch, name="branch"),
             h.make_node("LeakyRelu", ["y"], ["z"], alpha=0.25),
             h.make_node("Transpose", ["z"], ["out"], perm=[1, 0])]
    inits = [numpy_helper.from_array(np.float32(0), "zero"), h.make_tensor("unused", T.INT64, [3], [1, -2, 3])]
    graph = h.make_graph(nodes, "small", [h.make_tensor_value_info("x", T.FLOAT, ["N", 3])],
                         [h.make_tensor_value_info("out", T.FLOAT, [3, "N"])], initializer=inits)
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], producer_name="test").SerializeToString()


def _read_or_refuse(data):
    """The core reader and the converter either take `data` or raise ValueError."""
    for read in (_core.read_onnx, onnx_convert.read_onnx):
        try:
            read(data)
        except ValueError:
            pass


def test_a_small_model_reads_like_onnx_and_converts():
    data = _small_model()
    assert_reads_like_onnx(data)
    graph, _ = convert.from_onnx(data)
    module = nn._ConvertedModule(graph, graph.weights, ["x"], [])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(module.forward(x).numpy(), np.maximum(x * 2, 0.25 * x * 2).T)


def test_every_truncation_raises_value_error_or_reads():
    data = _small_model()
    refused = 0
    for k in range(len(data)):
        try:
            _core.read_onnx(data[:k])
        except ValueError as e:
            refused += 1
            assert "not a readable ONNX model" in str(e)
        _read_or_refuse(data[:k])
    assert refused > len(data) // 2


def test_flipped_bytes_raise_value_error_or_read(rng):
    data = _small_model()
    for k in range(len(data)):
        for value in (data[k] ^ 0xFF, data[k] ^ 0x80, data[k] ^ 0x01, int(rng.integers(256))):
            damaged = bytearray(data)
            damaged[k] = value
            _read_or_refuse(bytes(damaged))


def test_random_bytes_raise_value_error_or_read(rng):
    for n in range(2000):
        data = rng.integers(0, 256, int(rng.integers(0, 200)), dtype=np.uint8).tobytes()
        if n % 2:
            data = _field(7, 2, data)  # inside the graph
        _read_or_refuse(data)


@pytest.mark.parametrize("data,message", [
    (b"\x3a" + _varint(1 << 62) + b"\x0a\x00",
     r"graph: a field of 4611686018427387904 bytes runs past the end of its message \(2 bytes left\)"),
    (_varint(7 << 3 | 2) + _varint((1 << 64) - 1), r"graph: a field of 18446744073709551615 bytes runs past the end"),
    (b"\x08" + b"\xff" * 10 + b"\x01", r"a varint is longer than 10 bytes"),
    (b"\x08" + b"\xff" * 4, r"a varint runs past the end of its message"),
    (_field(7, 2, _field(1, 2, b"\x0b")), r"graph.node\[0\]: a group \(wire type 3\)"),
    (_field(7, 2, _field(1, 2, b"\x0e")), r"graph.node\[0\]: invalid wire type 6"),
    (b"\x00", r"invalid field tag 0"),
    (_field(7, 2, _field(1, 2, _field(3, 2, b"conv") + _field(4, 2, b"Conv") + _field(5, 2, _field(8, 2, b"\x80")))),
     r"graph.node\[0\] 'conv' \(Conv\).attribute\[0\]: a varint runs past the end of its message"),
    (_field(7, 2, _field(5, 2, _field(5, 2, b"\x80"))), r"graph.initializer\[0\]: the last packed varint runs past"),
    (_field(7, 2, _field(5, 2, _field(4, 2, b"\x00\x00\x80"))), r"graph.initializer\[0\]: a packed field of 4-byte"),
    # Found by fuzz/fuzz_onnx.py under AddressSanitizer: a node's name and op_type after its
    # attributes were written into a frame of the location that the attributes' frames had moved.
    (_field(7, 2, _field(1, 2, b"".join(_field(5, 2, _field(1, 2, b"a%d" % k)) for k in range(40)) +
                         _field(3, 2, b"n") + _field(4, 2, b"Relu") + b"\x0a\x05")),
     r"graph.node\[0\] 'n' \(Relu\): a field of 5 bytes runs past the end of its message \(0 bytes left\)$"),
    (_field(7, 2, _field(1, 2, _field(3, 2, b"a\xffb"))), r"graph.node\[0\]: the node name 'a\ufffdb' is not valid UTF-8"),
])
def test_malformed_bytes_name_the_problem(data, message):
    with pytest.raises(ValueError, match="^not a readable ONNX model: " + message):
        _core.read_onnx(data)


def _nested_if(depth):
    graph = h.make_graph([h.make_node("Identity", ["x"], ["y"])], "leaf", [], [h.make_empty_tensor_value_info("y")])
    for _ in range(depth - 1):
        graph = h.make_graph([h.make_node("If", ["c"], ["y"], then_branch=graph)], "level", [],
                             [h.make_empty_tensor_value_info("y")])
    return h.make_model(graph).SerializeToString()


def test_subgraphs_nest_32_deep_at_most():
    got = _core.read_onnx(_nested_if(32))
    for _ in range(31):
        got = {"graph": got["graph"]["nodes"][0][5]["then_branch"]}
    assert got["graph"]["nodes"][0][0] == "Identity"
    with pytest.raises(ValueError, match=r"^not a readable ONNX model: graph.node\[0\] \(If\).attribute\[0\] "
                                         r"'then_branch'.g.node\[0\] \(If\).*'then_branch'.g: subgraphs nested more "
                                         r"than 32 deep$"):
        _core.read_onnx(_nested_if(33))
    deep = _field(7, 2, b"")
    for _ in range(5000):  # refused at level 33, without parsing further down
        deep = _field(1, 2, _field(5, 2, _field(20, 0, _varint(5)) + _field(6, 2, deep)))
    with pytest.raises(ValueError, match="subgraphs nested more than 32 deep"):
        _core.read_onnx(_field(7, 2, deep))


TENSOR_PROBLEMS = {
    "negative dims": (lambda t: t.dims.__setitem__(0, -3),
                      r"tensor 'w' \(ONNX data type 1, dims \[-3\]\) cannot be read: negative dimensions"),
    "dims overflowing": (lambda t: t.dims.extend([1 << 40, 1 << 40]),
                         r"tensor 'w' \(ONNX data type 1, dims \[3, 1099511627776, 1099511627776\]\) cannot be read: "
                         r"its dims need more than 2\*\*63 bytes"),
    "a zero dim beside huge ones": (lambda t: t.dims.extend([0, 1 << 62, 1 << 62]), r"more than 2\*\*63 bytes"),
    "too few elements": (lambda t: t.dims.__setitem__(0, 4), r"cannot reshape array of size 3 into shape \(4,\)"),
    "raw data not whole elements": (lambda t: setattr(t, "raw_data", b"\x00" * 7),
                                    r"raw_data holds 7 bytes, not a whole number of 4-byte elements"),
    "unknown data type": (lambda t: setattr(t, "data_type", 99), r"^tensor 'w' has unknown ONNX data type 99$"),
    "undefined data type": (lambda t: setattr(t, "data_type", 0), r"^tensor 'w' has unknown ONNX data type 0$"),
    "strings": (lambda t: setattr(t, "data_type", T.STRING), r"ONNX data type 8 \(STRING\), which mnnpy has no dtype"),
    "external data": (lambda t: setattr(t, "data_location", T.EXTERNAL),
                      r"tensor 'w' keeps its data in an external file; load the model with onnx.load\(path, "
                      r"load_external_data=True\) and pass the ModelProto"),
    "a segment": (lambda t: t.segment.MergeFrom(T.Segment(begin=0, end=3)), r"segment of a larger tensor"),
    "65 dimensions": (lambda t: t.dims.extend([1] * 64), r"it has 65 dimensions, more than the 64 NumPy allows"),
}


@pytest.mark.parametrize("case", sorted(TENSOR_PROBLEMS))
def test_tensor_problems_raise_value_errors_naming_the_tensor(case):
    damage, message = TENSOR_PROBLEMS[case]
    t = numpy_helper.from_array(np.ones(3, np.float32), "w")
    damage(t)
    with pytest.raises(ValueError, match=message):
        _core.read_onnx(_tensor_model(t))


def test_attribute_tensor_problems_name_the_node():
    t = numpy_helper.from_array(np.ones(3, np.float32))
    t.data_type = 99
    graph = h.make_graph([h.make_node("Constant", [], ["c"], value=t, name="k")], "g", [],
                         [h.make_empty_tensor_value_info("c")])
    with pytest.raises(ValueError, match=r"^tensor '' \(attribute 'value' of node 'k'\) has unknown ONNX data type 99"):
        _core.read_onnx(h.make_model(graph).SerializeToString())


def test_tensors_beyond_the_memory_limit_are_refused_before_allocating(tmp_path):
    t = h.make_tensor("big", T.INT64, [4096], [0] * 4096)  # 4 KiB of one-byte varints: 32 KiB of int64
    path = tmp_path / "big.onnx"
    path.write_bytes(_tensor_model(t))
    code = ("import sys; from mnnpy import _core\n"
            "try:\n    _core.read_onnx(sys.argv[1])\nexcept ValueError as e:\n    print(e)\n")
    env = python_env(MNNPY_MEMORY_LIMIT="20000")
    out = subprocess.run([sys.executable, "-c", code, str(path)], env=env, capture_output=True, text=True, check=True)
    assert "tensor 'big' (ONNX data type 7, dims [4096]) cannot be read: its 32.0 KiB are more than this process may " \
           "allocate (19.5 KiB)" in out.stdout, out.stdout + out.stderr
    two = _tensor_model(h.make_tensor("a", T.INT64, [2048], [0] * 2048), h.make_tensor("b", T.INT64, [2048], [0] * 2048))
    path.write_bytes(two)
    out = subprocess.run([sys.executable, "-c", code, str(path)], env=env, capture_output=True, text=True, check=True)
    assert "tensor 'b': the model's tensors need more than the 19.5 KiB this process may allocate" in out.stdout, \
        out.stdout + out.stderr


def test_sources_and_their_errors(tmp_path):
    data = _small_model()
    expected = _core.read_onnx(data)
    assert _core.read_onnx(bytearray(data))["graph"]["name"] == _core.read_onnx(memoryview(data))["graph"]["name"]
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    assert _core.read_onnx(str(path))["graph"]["nodes"] == expected["graph"]["nodes"]
    with pytest.raises(TypeError, match="read_onnx takes a path or a bytes-like object, got int"):
        _core.read_onnx(3)
    with pytest.raises(ValueError, match=f"^'{tmp_path}' is not a readable ONNX model: cannot read '{tmp_path}': "):
        _core.read_onnx(str(tmp_path))
    with pytest.raises(ValueError, match=r"is not a readable ONNX model: cannot open .*No such file"):
        _core.read_onnx(str(tmp_path / "missing.onnx"))
    with pytest.raises(FileNotFoundError, match="no such ONNX file"):
        convert.from_onnx(tmp_path / "missing.onnx")
    (tmp_path / "empty.onnx").write_bytes(b"")
    assert _core.read_onnx(str(tmp_path / "empty.onnx"))["graph"]["nodes"] == []
    path.write_bytes(data[:-3])
    with pytest.raises(ValueError, match=f"^'{path}' is not a readable ONNX model: opset_import\\[0\\]: a field of 4 "
                                         "bytes runs past the end of its message"):
        convert.from_onnx(path)
    with pytest.raises(TypeError, match="read_onnx takes a path, bytes or an onnx ModelProto, got int"):
        convert.from_onnx(3)


def test_model_protos_of_2_gib_and_more_are_serialized_in_pieces(monkeypatch):
    model = onnx.load_from_string(_small_model())
    model.graph.initializer.append(numpy_helper.from_array(np.arange(5, dtype=np.int64), "more"))
    whole = onnx_convert.read_onnx(model)
    monkeypatch.setattr(onnx_convert, "PROTOBUF_LIMIT", 10)
    pieces = onnx_convert._serialized(model)
    assert onnx.load_from_string(pieces) == model
    in_pieces = onnx_convert.read_onnx(model)
    assert [n.name for n in in_pieces.nodes] == [n.name for n in whole.nodes]
    assert {k: w.tobytes() for k, w in in_pieces.weights.items()} == {k: w.tobytes() for k, w in whole.weights.items()}


# ---------------------------------------------------------------- operator arities
def _generator():
    spec = importlib.util.spec_from_file_location("gen_onnx_schemas", os.path.join(ROOT, "scripts",
                                                                                   "gen_onnx_schemas.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_arity_table_is_what_the_installed_onnx_says():
    from mnnpy.convert._onnx_schemas import ARITIES, ONNX_VERSION, SCHEMAS
    generator = _generator()
    table = {op: tuple((since,) + ARITIES[i] for since, i in versions) for op, versions in SCHEMAS.items()}
    assert table == generator.schema_table(), (
        f"mnnpy/convert/_onnx_schemas.py was written from onnx {ONNX_VERSION}, onnx {onnx.__version__} is installed "
        "and says otherwise: run scripts/gen_onnx_schemas.py")


def test_arities_at_every_opset_are_onnx_defs_answers():
    """The schema a node is checked against is the one onnx.defs.get_schema gives for the
    model's opset (its newest for an operator newer than the opset)."""
    from onnx import defs
    generator = _generator()
    newest = max(s.since_version for s in defs.get_all_schemas_with_history())
    for op in sorted({s.name for s in defs.get_all_schemas_with_history() if s.domain == ""}):
        for opset in [-5, 0] + list(range(1, newest + 2)) + [1 << 40]:
            try:
                schema = defs.get_schema(op, max(opset, 1), "")
            except Exception:  # noqa: BLE001 (SchemaError, or TypeError past int32)
                schema = defs.get_schema(op, "")
            assert onnx_convert.schema_arities(op, opset) == generator.arities(schema), (op, opset)
    assert onnx_convert.schema_arities("NoSuchOperator", 17) is None


def test_ai_onnx_domain_nodes_are_checked_like_default_domain_ones():
    graph = h.make_graph([h.make_node("Relu", ["x", "x"], ["y"], name="r", domain="ai.onnx")], "g",
                         [h.make_tensor_value_info("x", T.FLOAT, [2])], [h.make_empty_tensor_value_info("y")])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("ai.onnx", 17)])
    with pytest.raises(ValueError, match=r"node 'r' \(Relu\): 2 inputs given, the operator takes at most 1"):
        convert.from_onnx(model)


# ---------------------------------------------------------------- loading without onnx; weights in place
def _saved_conv_model(path):
    w = np.arange(2 * 3 * 3 * 3, dtype=np.float32).reshape(2, 3, 3, 3) / 50
    nodes = [h.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), h.make_node("Relu", ["c"], ["y"])]
    graph = h.make_graph(nodes, "conv", [h.make_tensor_value_info("x", T.FLOAT, ["N", 3, 4, 4])],
                         [h.make_tensor_value_info("y", T.FLOAT, None)],
                         initializer=[numpy_helper.from_array(w, "w"),
                                      numpy_helper.from_array(np.float32([0.5, -0.5]), "b")])
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 17)]), str(path))


def test_loading_and_running_an_onnx_file_does_not_import_onnx(tmp_path):
    path = tmp_path / "conv.onnx"
    _saved_conv_model(path)
    code = ("import sys\nimport numpy as np\nfrom mnnpy import convert, nn\n"
            "m = nn.load_module_from_file(sys.argv[1])\n"
            "y = m.forward(np.ones((1, 3, 4, 4), np.float32)).numpy()\n"
            "convert.from_onnx(sys.argv[1], sys.argv[1] + '.mnnpy')\n"
            "print(y.shape, 'onnx' in sys.modules, [k for k in sys.modules if k.startswith('onnx')])\n")
    out = subprocess.run([sys.executable, "-c", code, str(path)], env=python_env(),
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "(1, 2, 4, 4) False []", out.stdout + out.stderr


def _address(a):
    return a.__array_interface__["data"][0]


def test_weights_read_from_a_file_are_read_only_and_become_constants_in_place(tmp_path):
    path = tmp_path / "conv.onnx"
    _saved_conv_model(path)
    module = nn.load_module_from_file(str(path), blocked_layout=False)
    w = module.graph.weights["w"]
    assert not w.flags.writeable
    with pytest.raises(ValueError):
        w.flags.writeable = True
    assert _address(module._weights["w"].read()) == _address(w)  # the constant reads the reader's array
    x = np.ones((1, 3, 4, 4), np.float32)
    expected = module.forward(x).numpy().copy()
    # Arrays a caller passes are copied: writing them later changes nothing.
    graph, _ = convert.from_onnx(str(path))
    weights = {k: np.array(v) for k, v in graph.weights.items()}
    own = nn._ConvertedModule(graph, weights, ["x"], [], blocked_layout=False)
    assert _address(own._weights["w"].read()) != _address(weights["w"])
    weights["w"][...] = 0
    np.testing.assert_array_equal(own.forward(x).numpy(), expected)
    frozen_view = weights["b"].view()
    frozen_view.flags.writeable = False  # read-only, but its owner is not: still copied
    unwritable = nn._module._unwritable
    assert not unwritable(frozen_view) and unwritable(w) and unwritable(w[1:])
