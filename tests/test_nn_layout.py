"""The blocked channel layout of converted models: convolution chains run on [N, C/8, H, W, 8]
tensors, converted back only where an op needs NCHW, and residual adds join the convolution.
Checked against onnxruntime and against the same model kept in NCHW."""
import numpy as np
import pytest

pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from mnnpy import nn  # noqa: E402
from mnnpy.convert._graph import Node  # noqa: E402
from mnnpy.convert._layout import fuse_residual_adds  # noqa: E402


def _ops(module, x):
    return [(r["op"], r["scheme"]) for r in nn.profile(module, x, repeats=1, print_table=False)]


def _save(tmp_path, nodes, inits, in_shape, out_name="y"):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape)],
                              [helper.make_tensor_value_info(out_name, TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = str(tmp_path / "m.onnx")
    onnx.save(model, path)
    return path


def _compare(path, x, **kwargs):
    expected = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    blocked = nn.load_module_from_file(path, **kwargs)
    plain = nn.load_module_from_file(path, blocked_layout=False, **kwargs)
    got, got_plain = blocked.forward(x).numpy(), plain.forward(x).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got_plain, expected, rtol=1e-4, atol=1e-4)
    return blocked


def test_residual_block_runs_blocked_and_fuses_the_add(rng, tmp_path):
    w1 = rng.standard_normal((16, 3, 3, 3)).astype(np.float32) * 0.3
    w2 = rng.standard_normal((16, 16, 3, 3)).astype(np.float32) * 0.1
    w3 = rng.standard_normal((16, 16, 1, 1)).astype(np.float32) * 0.2
    b = rng.standard_normal(16).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "r1"], ["s"]),
        helper.make_node("Relu", ["s"], ["r2"]),
        helper.make_node("MaxPool", ["r2"], ["p"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["p", "w3"], ["c3"]),  # no bias
        helper.make_node("Add", ["p", "c3"], ["s2"]),  # the convolution is the second operand
        helper.make_node("GlobalAveragePool", ["s2"], ["g"]),
        helper.make_node("Flatten", ["g"], ["y"]),
    ]
    path = _save(tmp_path, nodes, {"w1": w1, "w2": w2, "w3": w3, "b": b}, [2, 3, 19, 23])
    x = rng.standard_normal((2, 3, 19, 23)).astype(np.float32)
    module = _compare(path, x)
    ops = _ops(module, x)
    assert all(op != "Conv2D" for op, _ in ops), ops  # every convolution runs blocked
    assert sum(op == "Conv2DBlocked" for op, _ in ops) == 3
    assert not any("Add" in op for op, _ in ops), ops  # both adds joined their convolution
    assert not any(op == "ToBlockedChannels" for op, _ in ops)  # the first layer reads NCHW itself
    assert sum(op == "MaxPool2DBlocked" for op, _ in ops) == 1


def test_chain_converts_back_only_where_needed(rng, tmp_path):
    # A Resize needs NCHW; both its readers and the chain's other consumers share one conversion.
    w = rng.standard_normal((8, 8, 3, 3)).astype(np.float32) * 0.2
    scales = np.array([1, 1, 2, 2], np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("HardSwish", ["c"], ["h"]),
        helper.make_node("Resize", ["h", "", "scales"], ["u"], mode="nearest"),
        helper.make_node("ReduceMean", ["h"], ["m"], axes=[2, 3], keepdims=1),
        helper.make_node("Mul", ["u", "m"], ["y"]),
    ]
    path = _save(tmp_path, nodes, {"w": w, "scales": scales}, [1, 8, 10, 12])
    x = rng.standard_normal((1, 8, 10, 12)).astype(np.float32)
    module = _compare(path, x)
    ops = _ops(module, x)
    assert sum(op == "ToBlockedChannels" for op, _ in ops) == 1
    assert sum(op == "FromBlockedChannels" for op, _ in ops) == 1


def test_channels_that_do_not_block_stay_nchw(rng, tmp_path):
    w1 = rng.standard_normal((12, 3, 3, 3)).astype(np.float32)
    w2 = rng.standard_normal((12, 3, 3, 3)).astype(np.float32)  # grouped, not depthwise
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["c", "w2"], ["y"], group=4)]
    path = _save(tmp_path, nodes, {"w1": w1, "w2": w2}, [1, 3, 9, 9])
    x = rng.standard_normal((1, 3, 9, 9)).astype(np.float32)
    module = _compare(path, x)
    assert {op for op, _ in _ops(module, x)} == {"Conv2D"}


def test_depthwise_squeeze_excite_chain(rng, tmp_path):
    c = 16
    inits = {"wd": rng.standard_normal((c, 1, 3, 3)).astype(np.float32),
             "w1": rng.standard_normal((8, c, 1, 1)).astype(np.float32) * 0.3,
             "w2": rng.standard_normal((c, 8, 1, 1)).astype(np.float32) * 0.3,
             "b1": rng.standard_normal(8).astype(np.float32), "b2": rng.standard_normal(c).astype(np.float32)}
    nodes = [
        helper.make_node("Conv", ["x", "wd"], ["d"], group=c, pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["d"], ["g"]),
        helper.make_node("Conv", ["g", "w1", "b1"], ["f1"]),
        helper.make_node("Relu", ["f1"], ["r"]),
        helper.make_node("Conv", ["r", "w2", "b2"], ["f2"]),
        helper.make_node("HardSigmoid", ["f2"], ["s"], alpha=1 / 6, beta=0.5),
        helper.make_node("Mul", ["d", "s"], ["y"]),
    ]
    path = _save(tmp_path, nodes, inits, [1, c, 15, 14])
    x = rng.standard_normal((1, c, 15, 14)).astype(np.float32)
    module = _compare(path, x)
    ops = _ops(module, x)
    assert sum(op == "Conv2DBlocked" for op, _ in ops) == 3
    assert sum(op == "FromBlockedChannels" for op, _ in ops) == 1  # only the output


def test_requested_internal_outputs_are_not_fused_away(rng, tmp_path):
    w = rng.standard_normal((8, 8, 1, 1)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Add", ["c", "x"], ["s"]),
             helper.make_node("Relu", ["s"], ["y"])]
    path = _save(tmp_path, nodes, {"w": w}, [1, 8, 5, 5])
    x = rng.standard_normal((1, 8, 5, 5)).astype(np.float32)
    module = nn.load_module_from_file(path, ["x"], ["c", "s", "y"])
    c, s, y = (v.numpy() for v in module.forward(x))
    expected_c = np.einsum("oi,nihw->nohw", w[:, :, 0, 0], x)
    np.testing.assert_allclose(c, expected_c, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(s, expected_c + x, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y, np.maximum(expected_c + x, 0), rtol=1e-5, atol=1e-5)


def test_fuse_residual_adds_rewrites_only_single_use_convolutions():
    nodes = [Node("Conv", ["x", "w"], ["c"]), Node("Add", ["c", "r"], ["s"]), Node("Relu", ["s"], ["y"])]
    fused = fuse_residual_adds(nodes)
    assert len(fused) == 1 and fused[0].inputs == ["x", "w", "", "r"] and fused[0].outputs == ["y"]
    assert fused[0].attrs["activation"] == 1 and fused[0].attrs["residual"] == 1
    # The convolution's output has a second reader: nothing changes.
    nodes.append(Node("Sigmoid", ["c"], ["z"]))
    assert [n.op for n in fuse_residual_adds(nodes)] == ["Conv", "Add", "Relu", "Sigmoid"]
    # A convolution with its own activation keeps it before the add.
    nodes = [Node("Conv", ["x", "w"], ["c"], {"activation": 1}), Node("Add", ["c", "r"], ["y"])]
    assert [n.op for n in fuse_residual_adds(nodes)] == ["Conv", "Add"]


@pytest.mark.parametrize("channels,size,scheme", [(32, 28, "winograd"), (64, 7, "winograd_2x2")])
def test_winograd_layers_run_blocked(rng, tmp_path, channels, size, scheme):
    # A wide 3x3 stride-1 layer runs Winograd (fewer products than any direct kernel; at 7x7 with
    # 2x2 tiles) in the blocked layout, as does the 1x1 layer after it: one conversion each way.
    w1 = rng.standard_normal((channels, channels, 3, 3)).astype(np.float32) * 0.05
    w2 = rng.standard_normal((channels, channels, 1, 1)).astype(np.float32) * 0.1
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Conv", ["r", "w2"], ["y"])]
    path = _save(tmp_path, nodes, {"w1": w1, "w2": w2}, [1, channels, size, size])
    x = rng.standard_normal((1, channels, size, size)).astype(np.float32)
    module = _compare(path, x)
    ops = _ops(module, x)
    assert ("Conv2DBlocked", "blocked_" + scheme) in ops and ("Conv2DBlocked", "blocked_pointwise") in ops
    assert ops.count(("ToBlockedChannels", "transpose8x8")) == 1
