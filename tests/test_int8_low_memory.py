"""memory="low": the linear layers of a loaded model run on int8 weights (per-column scales) and
the dynamically quantized int8 GEMM. Outputs are compared with the float model's (the error of
8-bit quantization: bounded per product, and as cosine similarity for a whole BERT), and the
weights kept shrink."""
import numpy as np
import pytest

import mnnpy.nn as nn

onnx = pytest.importorskip("onnx")
from onnx import helper as h, numpy_helper  # noqa: E402


def _linear_model(path, rng):
    """x [B, 128] -> MatMul 128x96 -> Relu -> Gemm (weight 80x96 stored transposed, bias) ->
    MatMul 80x8 (too narrow to quantize)."""
    w1 = (rng.standard_normal((128, 96)) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((80, 96)) * 0.1).astype(np.float32)
    b2 = rng.standard_normal(80).astype(np.float32)
    w3 = (rng.standard_normal((80, 8)) * 0.1).astype(np.float32)
    nodes = [h.make_node("MatMul", ["x", "w1"], ["h1"]), h.make_node("Relu", ["h1"], ["r1"]),
             h.make_node("Gemm", ["r1", "w2", "b2"], ["h2"], transB=1), h.make_node("MatMul", ["h2", "w3"], ["y"])]
    graph = h.make_graph(nodes, "mlp", [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["B", 128])],
                         [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["B", 8])],
                         [numpy_helper.from_array(v, k) for k, v in dict(w1=w1, w2=w2, b2=b2, w3=w3).items()])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return w1, w2, b2, w3


def _weight_bytes(module):
    return sum(np.asarray(w).nbytes for w in module.graph.weights.values())


def test_low_memory_rewrites_linear_layers(rng, tmp_path):
    path = str(tmp_path / "mlp.onnx")
    w1, w2, b2, w3 = _linear_model(path, rng)
    x = rng.standard_normal((5, 128)).astype(np.float32)
    normal = nn.load_module_from_file(path)
    low = nn.load_module_from_file(path, memory_mode="low")
    counts = low.graph.op_counts()
    assert counts.get("DynamicQuantMatMul") == 2 and counts.get("MatMul") == 1 and "Gemm" not in counts
    # w1 and w2 are int8 now (a quarter of the bytes, plus a scale per column); w3 stays float.
    weights = low.graph.weights
    assert "w1" not in weights and "w2" not in weights and weights["w3"].dtype == np.float32
    saved = (w1.nbytes + w2.nbytes) - (w1.size + w2.size) - 4 * (96 + 80)
    assert _weight_bytes(normal) - _weight_bytes(low) >= saved
    y_float, y_low = np.asarray(normal(x), np.float64), np.asarray(low(x), np.float64)
    # The exact float products, and a bound on what 8 bits change: each factor of a product is off
    # by at most half a quantization step, the activation's per row (its range / 255) and the
    # weight's per column (max |w| / 127); the error of the first layer passes through Relu
    # (1-Lipschitz) into the second.
    exact1 = x.astype(np.float64) @ w1
    step_x = (np.maximum(x.max(1), 0) - np.minimum(x.min(1), 0)) / 255
    step_w1 = np.abs(w1).max(0) / 127
    err1 = (np.abs(x).sum(1, keepdims=True) * step_w1 / 2 + step_x[:, None] / 2 * np.abs(w1).sum(0)
            + 128 * step_x[:, None] * step_w1 / 4 + 1e-5)
    r1 = np.maximum(exact1, 0)
    r1_low_max = np.abs(r1) + err1
    step_r = (r1_low_max.max(1)) / 255
    step_w2 = np.abs(w2).max(1) / 127
    err2 = (err1 @ np.abs(w2.T) + r1_low_max.sum(1, keepdims=True) * step_w2 / 2
            + step_r[:, None] / 2 * np.abs(w2).sum(1) + 96 * step_r[:, None] * step_w2 / 4 + 1e-5)
    bound = err2 @ np.abs(w3) + 1e-5
    assert (np.abs(y_low - y_float) <= bound).all()
    assert (np.abs(y_low - y_float) > 0).any()  # it really ran in 8 bits


def test_runtime_manager_memory_low(rng, tmp_path):
    path = str(tmp_path / "mlp.onnx")
    _linear_model(path, rng)
    rt = nn.create_runtime_manager({"memory": "low"})
    module = nn.load_module_from_file(path, runtime_manager=rt)
    assert module.graph.op_counts().get("DynamicQuantMatMul") == 2
    plain = nn.load_module_from_file(path, runtime_manager=nn.create_runtime_manager({"memory": "normal"}))
    assert "DynamicQuantMatMul" not in plain.graph.op_counts()
    with pytest.raises(ValueError, match="unknown memory mode"):
        nn.load_module_from_file(path, memory_mode="tiny")


def test_low_memory_bert_close_to_float():
    pytest.importorskip("transformers")
    from model_zoo import export_transformer
    path = export_transformer("bert", seq=32, small=True)
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 1000, (2, 32)).astype(np.int64)
    mask = np.ones_like(ids)
    normal = nn.load_module_from_file(path)
    low = nn.load_module_from_file(path, memory_mode="low")
    counts = low.graph.op_counts()
    # Per block: query, key and value in one product (they read the same input), the attention's
    # output, the two feed-forward layers.
    assert counts.get("DynamicQuantMatMul", 0) == 8 and counts.get("Split", 0) >= 2, counts
    assert "Gelu" not in counts  # in the feed-forward layer's epilogue
    y_float = np.asarray(normal(ids, mask), np.float64).reshape(-1, 64)
    y_low = np.asarray(low(ids, mask), np.float64).reshape(-1, 64)
    # Every token's hidden state points the same way: cosine similarity above 0.999.
    cosine = (y_float * y_low).sum(1) / (np.linalg.norm(y_float, axis=1) * np.linalg.norm(y_low, axis=1))
    assert cosine.min() > 0.999, cosine.min()
    # The linear layers' weights take a quarter of their float bytes (plus the scales).
    assert _weight_bytes(normal) - _weight_bytes(low) > 0.7 * sum(
        np.asarray(w).nbytes for k, w in normal.graph.weights.items() if k not in low.graph.weights)


def _shared_input_model(path, rng):
    """x [B, 96] read by three linear layers (MatMul with a bias Add, MatMul without, Gemm with a
    transposed weight and a bias) whose outputs are the model's outputs, and a fourth layer on the
    first's output."""
    w = [(rng.standard_normal(shape) * 0.1).astype(np.float32) for shape in [(96, 64), (96, 80), (72, 96), (64, 64)]]
    b0, b2 = rng.standard_normal(64).astype(np.float32), rng.standard_normal(72).astype(np.float32)
    nodes = [h.make_node("MatMul", ["x", "w0"], ["m0"]), h.make_node("Add", ["m0", "b0"], ["y0"]),
             h.make_node("MatMul", ["x", "w1"], ["y1"]), h.make_node("Gemm", ["x", "w2", "b2"], ["y2"], transB=1),
             h.make_node("MatMul", ["y0", "w3"], ["y3"])]
    outputs = [h.make_tensor_value_info(n, onnx.TensorProto.FLOAT, ["B", c])
               for n, c in [("y1", 80), ("y2", 72), ("y3", 64)]]
    inits = dict(w0=w[0], w1=w[1], w2=w[2], w3=w[3], b0=b0, b2=b2)
    graph = h.make_graph(nodes, "shared", [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["B", 96])],
                         outputs, [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return w, b0, b2


def test_layers_sharing_an_input_become_one_product(rng, tmp_path):
    import mnnpy.expr as F
    path = str(tmp_path / "shared.onnx")
    w, b0, b2 = _shared_input_model(path, rng)
    low = nn.load_module_from_file(path, memory_mode="low")
    counts = low.graph.op_counts()
    assert counts.get("DynamicQuantMatMul") == 2 and counts.get("Split") == 1, counts
    # The merged product quantizes each row of x as each layer would and scales each column as its
    # own layer does: the outputs are those of the layers run one by one, bit for bit.
    x = rng.standard_normal((7, 96)).astype(np.float32)
    x_before = x.copy()
    y1, y2, y3 = (np.asarray(y) for y in low(x))
    np.testing.assert_array_equal(x, x_before)

    def layer(inp, weight, bias):
        w_q, scales = F.quantize_weight_per_column(weight)
        return F.dynamic_quant_matmul(inp, w_q, scales, bias).read()
    y0_ref = layer(x, w[0], b0)
    np.testing.assert_array_equal(y1, layer(x, w[1], None))
    np.testing.assert_array_equal(y2, layer(x, np.ascontiguousarray(w[2].T), b2))
    np.testing.assert_array_equal(y3, layer(y0_ref, w[3], None))


def test_activation_after_a_layer_runs_in_its_epilogue(rng, tmp_path):
    """MatMul -> Gelu and MatMul -> Relu join their layers; a Relu on an output that another node
    also reads stays apart. The values are those of the layer and the activation run apart."""
    import mnnpy.expr as F
    w = [(rng.standard_normal((96, 64)) * 0.2).astype(np.float32) for _ in range(3)]
    nodes = [h.make_node("MatMul", ["x", "w0"], ["m0"]), h.make_node("Gelu", ["m0"], ["y0"]),
             h.make_node("MatMul", ["x", "w1"], ["m1"]), h.make_node("Relu", ["m1"], ["y1"]),
             h.make_node("MatMul", ["x", "w2"], ["y2"]), h.make_node("Relu", ["y2"], ["y3"])]
    outputs = [h.make_tensor_value_info(n, onnx.TensorProto.FLOAT, ["B", 64]) for n in ("y0", "y1", "y2", "y3")]
    graph = h.make_graph(nodes, "acts", [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["B", 96])], outputs,
                         [numpy_helper.from_array(v, f"w{i}") for i, v in enumerate(w)])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 20)])
    model.ir_version = 9
    path = str(tmp_path / "acts.onnx")
    onnx.save(model, path)
    low = nn.load_module_from_file(path, memory_mode="low")
    counts = low.graph.op_counts()
    assert "Gelu" not in counts and counts.get("Relu") == 1, counts  # y2 is an output: its Relu stays
    x = (rng.standard_normal((9, 96)) * 2).astype(np.float32)
    y0, y1, y2, y3 = (np.asarray(y) for y in low(x))

    def layer(weight):
        w_q, scales = F.quantize_weight_per_column(weight)
        return F.dynamic_quant_matmul(x, w_q, scales).read()
    np.testing.assert_array_equal(y0, F.gelu(F.const(layer(w[0]))).read())
    np.testing.assert_array_equal(y1, F.relu(F.const(layer(w[1]))).read())
    np.testing.assert_array_equal(y2, layer(w[2]))
    np.testing.assert_array_equal(y3, np.maximum(y2, 0))
    assert (y0 != 0).any() and (y1 == 0).any() and (y1 > 0).any()


def test_merged_layers_keep_no_unread_weights(rng, tmp_path):
    path = str(tmp_path / "shared.onnx")
    _shared_input_model(path, rng)
    low = nn.load_module_from_file(path, memory_mode="low")
    read = {x for n in low.graph.nodes for x in n.inputs if x}
    assert set(low.graph.weights) <= read, set(low.graph.weights) - read
