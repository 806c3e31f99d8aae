"""Attention fusion: the exporters' MatMul -> scale -> mask -> Softmax -> MatMul chain becomes one
ScaledDotProductAttention node, checked against onnxruntime on the unfused model and against
NumPy for the op itself."""
import numpy as np
import pytest

from mnnpy import _core, convert, nn
from mnnpy import expr as F

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def _reference(q, kt, v, mask, scale):
    s = q.astype(np.float64) @ kt.astype(np.float64) * scale
    if mask is not None:
        s = s + mask
    s = np.exp(s - s.max(-1, keepdims=True))
    return (s / s.sum(-1, keepdims=True)) @ v


@pytest.mark.parametrize("mask_shape", [None, (2, 1, 1, 37), (2, 1, 19, 37), (19, 37), (2, 3, 19, 1)])
def test_op_matches_numpy(rng, mask_shape):
    q = rng.standard_normal((2, 3, 19, 16)).astype(np.float32)
    kt = rng.standard_normal((2, 3, 16, 37)).astype(np.float32)
    v = rng.standard_normal((2, 3, 37, 24)).astype(np.float32)
    mask = None if mask_shape is None else (rng.standard_normal(mask_shape) * 3).astype(np.float32)
    inputs = [F.const(q), F.const(kt), F.const(v)] + ([] if mask is None else [F.const(mask)])
    got = _core.op("ScaledDotProductAttention", inputs, {"scale": 0.25}).read()
    np.testing.assert_allclose(got, _reference(q, kt, v, mask, 0.25), rtol=1e-5, atol=1e-5)


def test_op_rejects_bad_shapes():
    q, kt, v = F.const(np.ones((2, 4, 8), np.float32)), F.const(np.ones((2, 8, 5), np.float32)), \
        F.const(np.ones((2, 5, 3), np.float32))
    with pytest.raises(ValueError, match="chain"):
        _core.op("ScaledDotProductAttention", [q, q, v], {})
    with pytest.raises(ValueError, match="mask"):
        _core.op("ScaledDotProductAttention", [q, kt, v, F.const(np.ones((3, 5), np.float32))], {})
    with pytest.raises(TypeError, match="float32"):
        _core.op("ScaledDotProductAttention", [q, kt, F.const(np.ones((2, 5, 3), np.float64))], {})


def _attention_model(tmp_path, scale_op, with_mask, cast):
    nodes = [helper.make_node("MatMul", ["q", "kt"], ["s"])]
    last = "s"
    if scale_op:
        nodes.append(helper.make_node(scale_op, ["s", "c"], ["scaled"]))
        last = "scaled"
    if with_mask:
        nodes.append(helper.make_node("Add", [last, "mask"], ["masked"]))
        last = "masked"
    nodes.append(helper.make_node("Softmax", [last], ["p"], axis=-1))
    probs = "p"
    if cast:
        nodes.append(helper.make_node("Cast", ["p"], ["pc"], to=TensorProto.FLOAT))
        probs = "pc"
    nodes.append(helper.make_node("MatMul", [probs, "v"], ["y"]))
    names = ["q", "kt", "v"] + (["mask"] if with_mask else [])
    shapes = {"q": [1, 2, 9, 8], "kt": [1, 2, 8, 11], "v": [1, 2, 11, 8], "mask": [1, 1, 1, 11]}
    graph = helper.make_graph(nodes, "attention",
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, shapes[n]) for n in names],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.array(8.0 if scale_op == "Div" else 0.125, np.float32),
                                                       "c")])
    path = str(tmp_path / "attention.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path, names, shapes


@pytest.mark.parametrize("scale_op,with_mask,cast", [("Mul", True, False), ("Div", True, True), (None, False, False),
                                                     ("Mul", False, True)])
def test_fused_model_matches_onnxruntime(rng, tmp_path, scale_op, with_mask, cast):
    path, names, shapes = _attention_model(tmp_path, scale_op, with_mask, cast)
    graph, report = convert.from_onnx(path)
    assert graph.op_counts() == {"ScaledDotProductAttention": 1}
    feeds = {n: rng.standard_normal(shapes[n]).astype(np.float32) for n in names}
    if with_mask:
        feeds["mask"] = np.where(rng.random(shapes["mask"]) < 0.3, -1e9, 0).astype(np.float32)
    expected = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    got = nn.load_module_from_file(path).forward([feeds[n] for n in names]).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_scores_read_elsewhere_are_not_fused(tmp_path):
    path, names, shapes = _attention_model(tmp_path, "Mul", True, False)
    model = onnx.load(path)
    model.graph.output.append(helper.make_tensor_value_info("scaled", TensorProto.FLOAT, None))
    onnx.save(model, path)
    graph, _ = convert.from_onnx(path)
    assert "ScaledDotProductAttention" not in graph.op_counts()
