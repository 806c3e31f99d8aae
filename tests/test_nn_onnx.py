"""ONNX models converted and run by mnnpy against onnxruntime: single operators over their
attribute variants and opsets, graph passes, the model file, modules with dynamic shapes,
the command line, and bad input."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto as T  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx import numpy_helper  # noqa: E402

import mnnpy  # noqa: E402
import mnnpy.numpy as mp  # noqa: E402
from mnnpy import convert, nn  # noqa: E402
from helpers import product_error_bound  # noqa: E402
from onnx_testing import with_min_ir_version  # noqa: E402

ONNX_TYPES = {np.dtype(np.float32): T.FLOAT, np.dtype(np.int64): T.INT64, np.dtype(np.int32): T.INT32,
              np.dtype(np.bool_): T.BOOL, np.dtype(np.float64): T.DOUBLE}


def make_model(nodes, inputs, outputs, weights=None, opset=13, batch_dim=None):
    """`batch_dim`: a name for a first dimension left free, as exporters write dynamic axes."""
    def shape(v):
        return ([batch_dim] + list(v.shape[1:])) if batch_dim else list(v.shape)
    graph = h.make_graph(
        nodes, "test",
        [h.make_tensor_value_info(k, ONNX_TYPES[v.dtype], shape(v)) for k, v in inputs.items()],
        [h.make_empty_tensor_value_info(o) for o in outputs],
        initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in (weights or {}).items()])
    return with_min_ir_version(h.make_model(graph, opset_imports=[h.make_opsetid("", opset)]))


def check(model, inputs, rtol=1e-5, atol=1e-5, tmp_path=None):
    """Runs the model in onnxruntime and in mnnpy (from the ONNX bytes and from a converted
    file); the outputs must agree."""
    data = model.SerializeToString()
    expected = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, inputs)
    graph, _ = convert.from_onnx(data)
    module = nn._ConvertedModule(graph, graph.weights, list(inputs), [])
    got = module.forward(*inputs.values())
    got = got if isinstance(got, list) else [got]
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        g = g.numpy()
        assert g.shape == e.shape, f"shape {g.shape} != onnxruntime's {e.shape}"
        if e.dtype.kind == "f":
            np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)
        else:
            assert g.dtype == e.dtype, f"dtype {g.dtype} != onnxruntime's {e.dtype}"
            np.testing.assert_array_equal(g, e)
    return got


def rand(rng, *shape, low=-3, high=3):
    return rng.uniform(low, high, shape).astype(np.float32)


UNARY = ["Relu", "Sigmoid", "Tanh", "Exp", "Neg", "Abs", "Erf", "Floor", "Ceil", "Sin", "Cos", "Sign", "Softplus",
         "Softsign", "Round", "Atan", "Sinh", "Asinh"]


@pytest.mark.parametrize("op", UNARY)
def test_unary(rng, op):
    x = rand(rng, 3, 17)
    check(make_model([h.make_node(op, ["x"], ["y"])], {"x": x}, ["y"]), {"x": x})


@pytest.mark.parametrize("op", ["Log", "Sqrt", "Reciprocal"])
def test_unary_positive_domain(rng, op):
    x = rand(rng, 4, 9, low=0.1, high=5)
    check(make_model([h.make_node(op, ["x"], ["y"])], {"x": x}, ["y"]), {"x": x})


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Max", "Min", "Sum", "Mean", "Equal", "Less", "Greater",
                                "LessOrEqual", "GreaterOrEqual"])
def test_binary_broadcasting(rng, op):
    a, b = rand(rng, 2, 3, 5), rand(rng, 3, 1, low=0.5, high=3)
    if op in ("Equal",):
        b = np.round(b)
        a = np.round(a)
    check(make_model([h.make_node(op, ["a", "b"], ["y"])], {"a": a, "b": b}, ["y"], opset=16), {"a": a, "b": b})


def test_integer_division_truncates_and_pow(rng):
    a = rng.integers(-20, 20, (4, 6)).astype(np.int64)
    b = rng.integers(1, 7, (6,)).astype(np.int64) * rng.choice([-1, 1], 6)
    check(make_model([h.make_node("Div", ["a", "b"], ["y"])], {"a": a, "b": b}, ["y"]), {"a": a, "b": b})
    x, p = rand(rng, 3, 4, low=0.5, high=2), rand(rng, 4, low=-2, high=2)
    check(make_model([h.make_node("Pow", ["x", "p"], ["y"])], {"x": x, "p": p}, ["y"]), {"x": x, "p": p})


@pytest.mark.parametrize("opset", [6, 13])
def test_clip_from_attributes_and_inputs(rng, opset):
    x = rand(rng, 5, 8, low=-10, high=10)
    if opset < 11:
        node, weights = h.make_node("Clip", ["x"], ["y"], min=-1.5, max=6.0), {}
    else:
        node, weights = h.make_node("Clip", ["x", "lo", "hi"], ["y"]), {"lo": np.float32(-1.5), "hi": np.float32(6)}
    check(make_model([node], {"x": x}, ["y"], weights, opset=opset), {"x": x})


@pytest.mark.parametrize("node", [
    h.make_node("LeakyRelu", ["x"], ["y"], alpha=0.1), h.make_node("Elu", ["x"], ["y"], alpha=0.7),
    h.make_node("Selu", ["x"], ["y"]), h.make_node("HardSigmoid", ["x"], ["y"], alpha=0.25, beta=0.4),
    h.make_node("HardSwish", ["x"], ["y"]), h.make_node("Gelu", ["x"], ["y"]),
    h.make_node("Gelu", ["x"], ["y"], approximate="tanh")], ids=lambda n: n.op_type)
def test_activations(rng, node):
    x = rand(rng, 4, 33, low=-6, high=6)
    check(make_model([node], {"x": x}, ["y"], opset=20), {"x": x}, atol=2e-5)


def test_prelu_broadcasts_its_slope(rng):
    x = rand(rng, 2, 4, 3, 3)
    slope = rand(rng, 4, 1, 1)
    check(make_model([h.make_node("PRelu", ["x", "s"], ["y"])], {"x": x}, ["y"], {"s": slope}), {"x": x})


@pytest.mark.parametrize("opset,axis", [(11, 1), (11, -1), (13, 1), (13, -1)])
def test_softmax_follows_each_opsets_axis_rule(rng, opset, axis):
    x = rand(rng, 2, 3, 4)
    for op in ("Softmax", "LogSoftmax"):
        check(make_model([h.make_node(op, ["x"], ["y"], axis=axis)], {"x": x}, ["y"], opset=opset), {"x": x})


@pytest.mark.parametrize("op", ["ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2",
                                "ReduceSumSquare", "ReduceL1", "ReduceLogSumExp"])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reductions_with_axes_as_attribute_and_as_input(rng, op, keepdims):
    x = rand(rng, 3, 4, 5, low=0.5, high=1.5)
    check(make_model([h.make_node(op, ["x"], ["y"], axes=[0, -1], keepdims=keepdims)], {"x": x}, ["y"], opset=11),
          {"x": x})
    check(make_model([h.make_node(op, ["x", "axes"], ["y"], keepdims=keepdims)], {"x": x}, ["y"],
                     {"axes": np.array([1], np.int64)}, opset=18), {"x": x})


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
def test_arg_reductions(rng, op):
    x = np.round(rand(rng, 3, 6))  # ties, for select_last_index
    for attrs in ({"axis": 1}, {"axis": 0, "keepdims": 0}, {"axis": -1, "select_last_index": 1}):
        check(make_model([h.make_node(op, ["x"], ["y"], **attrs)], {"x": x}, ["y"]), {"x": x})


def test_shape_ops_chain_with_shape_computation(rng):
    # The pattern exporters emit for flattening: Shape -> Gather -> Unsqueeze -> Concat -> Reshape.
    x = rand(rng, 2, 3, 4, 5)
    nodes = [h.make_node("Shape", ["x"], ["s"]),
             h.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             h.make_node("Unsqueeze", ["n", "ax0"], ["n1"]),
             h.make_node("Concat", ["n1", "minus1"], ["target"], axis=0),
             h.make_node("Reshape", ["x", "target"], ["flat"]),
             h.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 3, 1]),
             h.make_node("Flatten", ["t"], ["f2"], axis=2),
             h.make_node("Shape", ["x"], ["tail"], start=-2)]
    weights = {"zero": np.array(0, np.int64), "ax0": np.array([0], np.int64), "minus1": np.array([-1], np.int64)}
    check(make_model(nodes, {"x": x}, ["flat", "f2", "tail"], weights, opset=15), {"x": x})


def test_slice_split_concat_gather(rng):
    x = rand(rng, 6, 8, 5)
    nodes = [h.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["s1"]),
             h.make_node("Split", ["x", "sizes"], ["p0", "p1"], axis=1),
             h.make_node("Concat", ["p1", "p0"], ["c"], axis=1),
             h.make_node("Gather", ["x", "idx"], ["g"], axis=1),
             h.make_node("Squeeze", ["g1", "sq"], ["g2"]),
             h.make_node("Gather", ["x", "one"], ["g1"], axis=2)]
    nodes = nodes[:4] + [nodes[5], nodes[4]]
    weights = {"st": np.array([-1, 1], np.int64), "en": np.array([-100, 7], np.int64),
               "ax": np.array([0, 2], np.int64), "sp": np.array([-2, 3], np.int64),
               "sizes": np.array([3, 5], np.int64), "idx": np.array([[0, -1], [2, 3]], np.int64),
               "one": np.array([1], np.int64), "sq": np.array([2], np.int64)}
    check(make_model(nodes, {"x": x}, ["s1", "c", "g", "g2"], weights), {"x": x})
    # Opset 18: Split into equal parts by num_outputs, the last one smaller.
    check(make_model([h.make_node("Split", ["x"], ["a", "b", "c"], axis=1, num_outputs=3)], {"x": x},
                     ["a", "b", "c"], opset=18), {"x": x})


def test_unsqueeze_squeeze_across_opsets(rng):
    x = rand(rng, 3, 1, 4)
    check(make_model([h.make_node("Unsqueeze", ["x"], ["u"], axes=[0, -1]), h.make_node("Squeeze", ["u"], ["y"])],
                     {"x": x}, ["u", "y"], opset=11), {"x": x})
    check(make_model([h.make_node("Unsqueeze", ["x", "a"], ["u"]), h.make_node("Squeeze", ["u", "b"], ["y"])],
                     {"x": x}, ["u", "y"], {"a": np.array([1], np.int64), "b": np.array([2], np.int64)}), {"x": x})


def test_expand_tile_where_cast_range_constant_of_shape(rng):
    x = rand(rng, 3, 1)
    c = rng.random((2, 3, 4)) < 0.5
    nodes = [h.make_node("Expand", ["x", "shape"], ["e"]),
             h.make_node("Tile", ["x", "reps"], ["t"]),
             h.make_node("Where", ["c", "e", "x"], ["w"]),
             h.make_node("Cast", ["w"], ["i"], to=T.INT32),
             h.make_node("Range", ["r0", "r1", "r2"], ["r"]),
             h.make_node("ConstantOfShape", ["shape"], ["z"], value=numpy_helper.from_array(np.array([1.5], np.float32)))]
    weights = {"shape": np.array([2, 1, 4], np.int64), "reps": np.array([2, 3], np.int64),
               "r0": np.array(1, np.int64), "r1": np.array(10, np.int64), "r2": np.array(3, np.int64)}
    check(make_model(nodes, {"x": x, "c": c}, ["e", "t", "w", "i", "r", "z"], weights), {"x": x, "c": c})


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
def test_pad_modes(rng, mode):
    x = rand(rng, 1, 2, 5, 6)
    pads = np.array([0, 0, 1, 2, 0, 0, 2, 1], np.int64)
    check(make_model([h.make_node("Pad", ["x", "p", "v"], ["y"], mode=mode)], {"x": x}, ["y"],
                     {"p": pads, "v": np.array(0.5, np.float32)}), {"x": x})


def test_normalizations(rng):
    x = rand(rng, 2, 5, 7)
    w, b = rand(rng, 7), rand(rng, 7)
    check(make_model([h.make_node("LayerNormalization", ["x", "w", "b"], ["y"], axis=-1, epsilon=1e-5)],
                     {"x": x}, ["y"], {"w": w, "b": b}, opset=17), {"x": x}, atol=1e-4)
    x4 = rand(rng, 2, 3, 4, 5)
    s, o, m, v = rand(rng, 3), rand(rng, 3), rand(rng, 3), rand(rng, 3, low=0.5, high=2)
    check(make_model([h.make_node("BatchNormalization", ["x", "s", "o", "m", "v"], ["y"], epsilon=1e-3)],
                     {"x": x4}, ["y"], {"s": s, "o": o, "m": m, "v": v}), {"x": x4}, atol=1e-4)
    check(make_model([h.make_node("InstanceNormalization", ["x", "s", "o"], ["y"])], {"x": x4}, ["y"],
                     {"s": s, "o": o}), {"x": x4}, atol=1e-4)


def test_matmul_and_gemm(rng):
    a, b = rand(rng, 2, 3, 5, 8), rand(rng, 8, 4)
    check(make_model([h.make_node("MatMul", ["a", "b"], ["y"])], {"a": a}, ["y"], {"b": b}), {"a": a}, atol=1e-4)
    x, w, c = rand(rng, 5, 8), rand(rng, 6, 8), rand(rng, 6)
    check(make_model([h.make_node("Gemm", ["x", "w", "c"], ["y"], transB=1, alpha=0.5, beta=2.0)], {"x": x}, ["y"],
                     {"w": w, "c": c}), {"x": x}, atol=1e-4)


@pytest.mark.parametrize("bias_first", [False, True])
def test_matmul_and_bias_add_become_one_node(rng, bias_first):
    # nn.Linear on a 3-D input as torch exports it: MatMul by W^T, then Add of the bias.
    x, w, b = rand(rng, 2, 7, 16), rand(rng, 16, 24), rand(rng, 24)
    add = h.make_node("Add", ["b", "m"] if bias_first else ["m", "b"], ["a"])
    model = make_model([h.make_node("MatMul", ["x", "w"], ["m"]), add, h.make_node("Relu", ["a"], ["y"])],
                       {"x": x}, ["y"], {"w": w, "b": b})
    check(model, {"x": x}, atol=1e-4)
    graph, report = convert.from_onnx(model.SerializeToString())
    assert report.ops_after == {"MatMul": 1, "Relu": 1}
    assert graph.nodes[0].inputs == ["x", "w", "b"]


def test_matmul_add_of_a_non_vector_stays(rng):
    # An Add of a matrix (or of a second activation) is not a bias: both nodes stay.
    x, w, c = rand(rng, 3, 8), rand(rng, 8, 5), rand(rng, 3, 5)
    model = make_model([h.make_node("MatMul", ["x", "w"], ["m"]), h.make_node("Add", ["m", "c"], ["y"])],
                       {"x": x}, ["y"], {"w": w, "c": c})
    check(model, {"x": x}, atol=1e-4)
    _, report = convert.from_onnx(model.SerializeToString())
    assert report.ops_after == {"MatMul": 1, "Add": 1}


@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("with_c", [True, False])
def test_batch_norm_folds_into_gemm(rng, trans_b, with_c):
    x = rand(rng, 5, 8)
    w = rand(rng, 6, 8) if trans_b else rand(rng, 8, 6)
    c = rand(rng, 6)
    scale, shift, mean = rand(rng, 6), rand(rng, 6), rand(rng, 6)
    var = rng.uniform(0.5, 2.0, 6).astype(np.float32)
    gemm = h.make_node("Gemm", ["x", "w", "c"] if with_c else ["x", "w"], ["g"], transB=trans_b, alpha=0.5, beta=2.0)
    model = make_model([gemm, h.make_node("BatchNormalization", ["g", "s", "o", "m", "v"], ["y"], epsilon=1e-3)],
                       {"x": x}, ["y"], {"w": w, "c": c, "s": scale, "o": shift, "m": mean, "v": var})
    check(model, {"x": x}, rtol=1e-4, atol=1e-4)
    _, report = convert.from_onnx(model.SerializeToString())
    assert report.ops_after == {"Gemm": 1}


def test_identity_and_dropout_are_removed(rng):
    x = rand(rng, 4, 4)
    model = make_model([h.make_node("Identity", ["x"], ["a"]), h.make_node("Dropout", ["a"], ["b"]),
                        h.make_node("Relu", ["b"], ["c"]), h.make_node("Identity", ["c"], ["y"])], {"x": x}, ["y"])
    check(model, {"x": x})
    graph, report = convert.from_onnx(model.SerializeToString())
    assert report.ops_after == {"Relu": 1} and sum(report.ops_before.values()) == 4
    assert graph.nodes[0].outputs == ["y"]


def test_module_replans_only_for_new_shapes_and_outputs_survive_later_runs(rng):
    x = rand(rng, 2, 8)
    w = rand(rng, 8, 3)
    model = make_model([h.make_node("MatMul", ["x", "w"], ["m"]), h.make_node("Relu", ["m"], ["y"])],
                       {"x": x}, ["y"], {"w": w}, batch_dim="N")
    graph, _ = convert.from_onnx(model.SerializeToString())
    module = nn._ConvertedModule(graph, graph.weights, ["x"], ["y"])
    first = module.forward(x)
    before = mnnpy._core.executor_stats()["plans_built"]
    for _ in range(3):
        module.forward(rand(rng, 2, 8))
    assert mnnpy._core.executor_stats()["plans_built"] == before
    np.testing.assert_allclose(first.numpy(), np.maximum(x @ w, 0), rtol=1e-5, atol=1e-6)  # not overwritten
    x5 = rand(rng, 5, 8)
    np.testing.assert_allclose(module.forward(x5).numpy(), np.maximum(x5 @ w, 0), rtol=1e-5, atol=1e-6)
    assert mnnpy._core.executor_stats()["plans_built"] > before
    fixed = nn._ConvertedModule(graph, graph.weights, ["x"], ["y"], shape_mutable=False)
    fixed.forward(x)
    with pytest.raises(ValueError, match="shape_mutable=False"):
        fixed.forward(x5)


def test_model_file_round_trip_fp16_and_named_io(rng, tmp_path):
    x = rand(rng, 3, 16)
    # Weights scaled as a network's initialization would (1 / sqrt(fan_in)), so logits stay O(1).
    w1, w2 = rand(rng, 16, 256, low=-0.25, high=0.25), rand(rng, 256, 4, low=-1 / 16, high=1 / 16)
    model = make_model([h.make_node("MatMul", ["x", "w1"], ["hidden"]), h.make_node("Relu", ["hidden"], ["r"]),
                        h.make_node("MatMul", ["r", "w2"], ["logits"]), h.make_node("Softmax", ["logits"], ["prob"])],
                       {"x": x}, ["logits", "prob"], {"w1": w1, "w2": w2})
    src = tmp_path / "m.onnx"
    onnx.save(model, src)
    expected = ort.InferenceSession(str(src), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    # Error bounds from the arithmetic: float32 sums of products (and float16 weights: one more
    # rounding of each weight), carried through ReLU and the second product; a logit error of d
    # moves each probability by a factor within exp(+-2 max d).
    f32, f16 = 2.0 ** -24, 2.0 ** -11
    r = np.maximum(x.astype(np.float64) @ w1, 0)

    def bounds(weight_roundoff):
        hidden = product_error_bound(x, w1, f32) + weight_roundoff * (np.abs(x) @ np.abs(w1).astype(np.float64))
        logits = (product_error_bound(r, w2, f32) + weight_roundoff * (r @ np.abs(w2).astype(np.float64)) +
                  hidden @ np.abs(w2).astype(np.float64))
        return hidden, logits, np.expm1(2 * logits.max(axis=1, keepdims=True)) + 8 * f32

    _, report = convert.from_onnx(src, tmp_path / "m.mnnpy")
    assert report.parameters == w1.size + w2.size and report.file_bytes > 4 * report.parameters
    module = nn.load_module_from_file(str(tmp_path / "m.mnnpy"), ["x"], ["prob", "hidden"])
    prob, hidden = module.forward(x)
    assert prob.name == "prob"
    hidden_bound, logits_bound, prob_rtol = bounds(0.0)
    # Ours and onnxruntime's each lie within the bound of the exact value.
    assert np.all(np.abs(prob.numpy() - expected[1]) <= 2 * prob_rtol * expected[1] + 1e-30)
    assert np.all(np.abs(hidden.numpy() - x.astype(np.float64) @ w1) <= hidden_bound + f32 * np.abs(hidden.numpy()))
    # Named inputs and the ONNX file loaded directly.
    direct = nn.load_module_from_file(str(src), [], [])
    assert np.all(np.abs(direct.forward({"x": x})[0].numpy() - expected[0]) <= 2 * logits_bound + 1e-30)
    _, half = convert.from_onnx(src, tmp_path / "h.mnnpy", fp16=True)
    assert half.file_bytes < 0.6 * report.file_bytes
    module16 = nn.load_module_from_file(str(tmp_path / "h.mnnpy"))
    _, _, prob16_rtol = bounds(f16)
    assert np.all(np.abs(module16.forward(x)[1].numpy() - expected[1]) <= (prob16_rtol + prob_rtol) * expected[1] + 1e-30)


def test_command_line_converts_and_prints_a_summary(rng, tmp_path):
    x = rand(rng, 2, 4)
    model = make_model([h.make_node("Identity", ["x"], ["i"]), h.make_node("Relu", ["i"], ["y"])], {"x": x}, ["y"])
    onnx.save(model, tmp_path / "a.onnx")
    env = dict(os.environ)
    out = subprocess.run([sys.executable, "-m", "mnnpy", "convert", str(tmp_path / "a.onnx"),
                          str(tmp_path / "a.mnnpy"), "--optimize-level", "1"], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert "nodes: 2 before, 1 after" in out.stdout and "Relu 1" in out.stdout
    np.testing.assert_array_equal(nn.load_module_from_file(str(tmp_path / "a.mnnpy")).forward(x).numpy(),
                                  np.maximum(x, 0))
    bad = subprocess.run([sys.executable, "-m", "mnnpy", "convert", str(tmp_path / "missing.onnx"),
                          str(tmp_path / "b.mnnpy")], capture_output=True, text=True, env=env)
    assert bad.returncode == 1 and "no such ONNX file" in bad.stderr


def test_bad_models_and_inputs_raise(rng, tmp_path):
    x = rand(rng, 2, 3)
    unsupported = make_model([h.make_node("StringNormalizer", ["x"], ["y"], name="text_1")], {"x": x}, ["y"])
    with pytest.raises(ValueError, match=r"unsupported operators StringNormalizer \(node 'text_1'\)"):
        convert.from_onnx(unsupported.SerializeToString(), tmp_path / "u.mnnpy")
    _, report = convert.from_onnx(unsupported.SerializeToString())
    assert "StringNormalizer" in report.unsupported and "NOT converted" in str(report)
    good = make_model([h.make_node("Relu", ["x"], ["y"])], {"x": x}, ["y"]).SerializeToString()
    for i, data in enumerate([good[: len(good) // 2], b"\x00garbage" * 10, rng.bytes(300)]):
        path = tmp_path / f"bad{i}.onnx"
        path.write_bytes(data)
        with pytest.raises(ValueError):
            nn.load_module_from_file(str(path))
    with pytest.raises(FileNotFoundError, match="no such model file"):
        nn.load_module_from_file(str(tmp_path / "nothing.mnnpy"))
    module = nn._ConvertedModule(*(lambda g: (g, g.weights))(convert.from_onnx(good)[0]), ["x"], [])
    with pytest.raises(ValueError, match=r"input 'x' dimension 1 must be 3"):
        module.forward(rand(rng, 2, 4))
    with pytest.raises(ValueError, match="must have 2 dimensions"):
        module.forward(rand(rng, 2))
    with pytest.raises(TypeError, match="input 'x' must be float32"):
        module.forward(np.zeros((2, 3), np.bool_))
    with pytest.raises(ValueError, match=r"takes 1 inputs"):
        module.forward(x, x)
    with pytest.raises(ValueError, match="not inputs of the model"):
        nn._ConvertedModule(convert.from_onnx(good)[0], {}, ["nope"], [])
    with pytest.raises(ValueError, match="not tensors of the model"):
        nn._ConvertedModule(convert.from_onnx(good)[0], {}, [], ["nope"])
    # An mnnpy graph file that is not a model, and a model whose description is corrupt.
    from mnnpy import expr as F
    F.save([F.const(x)], str(tmp_path / "plain.mnnpy"))
    with pytest.raises(ValueError, match="not a model"):
        nn.load_module_from_file(str(tmp_path / "plain.mnnpy"))
    desc = F.const(np.frombuffer(b'{"format": "mnnpy-model", "version": 1}', np.uint8))
    desc.name = "mnnpy.model"
    F.save([desc], str(tmp_path / "corrupt.mnnpy"))
    with pytest.raises(ValueError, match="corrupt mnnpy model description"):
        nn.load_module_from_file(str(tmp_path / "corrupt.mnnpy"))
    assert x.shape == (2, 3)  # the user's array is untouched


@pytest.mark.parametrize("mode,coord", [("nearest", "asymmetric"), ("linear", "half_pixel"),
                                        ("linear", "align_corners"), ("cubic", "pytorch_half_pixel")])
def test_resize_by_scales_and_by_sizes(rng, mode, coord):
    x = rand(rng, 1, 2, 5, 7)
    for inputs, weights in ((["x", "", "scales"], {"scales": np.array([1, 1, 2.5, 1.5], np.float32)}),
                            (["x", "", "", "sizes"], {"sizes": np.array([1, 2, 9, 4], np.int64)})):
        node = h.make_node("Resize", inputs, ["y"], mode=mode, coordinate_transformation_mode=coord)
        check(make_model([node], {"x": x}, ["y"], weights, opset=13), {"x": x}, atol=1e-5)


@pytest.mark.parametrize("attrs,inputs,weights", [
    # Opset 18: the sizes or scales of some axes only, and sizes that keep the aspect ratio.
    (dict(mode="nearest", axes=[3, 2]), ["x", "", "scales"], {"scales": np.array([1.5, 2.0], np.float32)}),
    (dict(mode="linear", axes=[2, 3]), ["x", "", "", "sizes"], {"sizes": np.array([3, 11], np.int64)}),
    (dict(mode="nearest", keep_aspect_ratio_policy="not_larger"), ["x", "", "", "sizes"],
     {"sizes": np.array([1, 2, 9, 9], np.int64)}),
    (dict(mode="linear", keep_aspect_ratio_policy="not_smaller", axes=[2, 3]), ["x", "", "", "sizes"],
     {"sizes": np.array([3, 3], np.int64)}),
    # Opset 19: half_pixel_symmetric, by scales whose lengths round down.
    (dict(mode="linear", coordinate_transformation_mode="half_pixel_symmetric"), ["x", "", "scales"],
     {"scales": np.array([1, 1, 0.7, 1.3], np.float32)}),
    (dict(mode="cubic", coordinate_transformation_mode="half_pixel_symmetric"), ["x", "", "", "sizes"],
     {"sizes": np.array([1, 2, 4, 12], np.int64)}),
], ids=["axes-scales", "axes-sizes", "not-larger", "not-smaller", "symmetric-scales", "symmetric-sizes"])
def test_resize_attributes_of_later_opsets(rng, attrs, inputs, weights):
    x = rand(rng, 1, 2, 5, 7)
    node = h.make_node("Resize", inputs, ["y"], **attrs)
    check(make_model([node], {"x": x}, ["y"], weights, opset=19), {"x": x}, atol=1e-5)


@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("exclude_outside", [0, 1])
@pytest.mark.parametrize("out_hw", [(9, 5), (4, 21), (13, 8)], ids=str)
def test_resize_antialias(rng, mode, exclude_outside, out_hw):
    # Downsampling on at least one axis: the filter widens by 1 / scale there.
    x = rand(rng, 2, 3, 31, 23)
    node = h.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode=mode, antialias=1,
                       exclude_outside=exclude_outside)
    sizes = {"sizes": np.array([2, 3, *out_hw], np.int64)}
    check(make_model([node], {"x": x}, ["y"], sizes, opset=18), {"x": x}, atol=2e-5)


def test_pooling_nodes(rng):
    x = rand(rng, 2, 3, 11, 9)
    nodes = [h.make_node("MaxPool", ["x"], ["m"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 0, 1, 1],
                         ceil_mode=1),
             h.make_node("AveragePool", ["x"], ["a"], kernel_shape=[3, 2], strides=[1, 2], pads=[1, 1, 0, 1],
                         count_include_pad=1),
             h.make_node("AveragePool", ["x"], ["s"], kernel_shape=[3, 3], auto_pad="SAME_UPPER"),
             h.make_node("GlobalAveragePool", ["x"], ["g"]), h.make_node("GlobalMaxPool", ["x"], ["gm"])]
    check(make_model(nodes, {"x": x}, ["m", "a", "s", "g", "gm"]), {"x": x})


def test_pooling_windows_far_larger_than_the_input(rng):
    """Found by fuzz/fuzz_onnx.py: a MaxPool of kernel_shape [2, 2**40] with SAME_UPPER padding ran
    loops over every tap of its windows. Taps outside the input for every output are dropped
    before planning; divisors still count the windows as asked for."""
    x = rand(rng, 1, 3, 9, 7)
    nodes = [h.make_node("MaxPool", ["x"], ["m"], kernel_shape=[21, 17], auto_pad="SAME_UPPER"),
             h.make_node("AveragePool", ["x"], ["a"], kernel_shape=[21, 17], auto_pad="SAME_LOWER"),
             h.make_node("AveragePool", ["x"], ["c"], kernel_shape=[15, 13], pads=[7, 6, 7, 6], count_include_pad=1),
             h.make_node("MaxPool", ["x"], ["d"], kernel_shape=[5, 5], dilations=[2, 3], pads=[4, 4, 4, 4])]
    check(make_model(nodes, {"x": x}, ["m", "a", "c", "d"]), {"x": x})

    huge = [h.make_node("MaxPool", ["x"], ["m"], kernel_shape=[2, 1 << 40], auto_pad="SAME_UPPER"),
            h.make_node("AveragePool", ["x"], ["a"], kernel_shape=[2, 1 << 40], auto_pad="SAME_UPPER")]
    graph, _ = convert.from_onnx(make_model(huge, {"x": x}, ["m", "a"], opset=22).SerializeToString())
    got_max, got_mean = nn._ConvertedModule(graph, graph.weights, ["x"], []).forward(x)
    # SAME_UPPER: rows o and o + 1 (the last row alone); every column of the row.
    below = np.concatenate([x[:, :, 1:], x[:, :, -1:]], axis=2)
    expected_max = np.maximum(x, below).max(axis=3, keepdims=True)
    pair_mean = np.concatenate([(x[:, :, :-1] + x[:, :, 1:]) / 2, x[:, :, -1:]], axis=2)
    np.testing.assert_array_equal(got_max.numpy(), np.broadcast_to(expected_max, x.shape))
    # A mean of at most 14 float32 terms of magnitude <= 3: within 14 * 2**-24 * 3 of NumPy's.
    np.testing.assert_allclose(got_mean.numpy(), np.broadcast_to(pair_mean.mean(axis=3, keepdims=True), x.shape),
                               rtol=0, atol=14 * 2.0 ** -24 * 3)


def test_gather_elements(rng):
    x = rand(rng, 3, 4, 5)
    idx = rng.integers(-4, 4, (3, 2, 5)).astype(np.int64)
    model = make_model([h.make_node("GatherElements", ["x", "i"], ["y"], axis=1)], {"x": x, "i": idx}, ["y"])
    check(model, {"x": x, "i": idx})


@pytest.mark.parametrize("half_first", [False, True])
def test_gelu_pattern_becomes_one_node(rng, half_first):
    x = rand(rng, 4, 40, low=-5, high=5)
    if half_first:  # (x * 0.5) * (1 + erf(x / sqrt 2))
        nodes = [h.make_node("Mul", ["x", "half"], ["hx"]), h.make_node("Div", ["x", "sqrt2"], ["d"]),
                 h.make_node("Erf", ["d"], ["e"]), h.make_node("Add", ["e", "one"], ["a"]),
                 h.make_node("Mul", ["hx", "a"], ["y"])]
    else:  # (x * (1 + erf(x / sqrt 2))) * 0.5
        nodes = [h.make_node("Div", ["x", "sqrt2"], ["d"]), h.make_node("Erf", ["d"], ["e"]),
                 h.make_node("Add", ["one", "e"], ["a"]), h.make_node("Mul", ["a", "x"], ["m"]),
                 h.make_node("Mul", ["m", "half"], ["y"])]
    weights = {"sqrt2": np.float32(2 ** 0.5), "one": np.float32(1), "half": np.float32(0.5)}
    model = make_model(nodes, {"x": x}, ["y"], weights)
    check(model, {"x": x})
    _, report = convert.from_onnx(model.SerializeToString())
    assert report.ops_after == {"Gelu": 1}


def test_decomposed_layer_norm_becomes_one_node(rng):
    x = rand(rng, 2, 6, 32)
    gamma, beta = rand(rng, 32), rand(rng, 32)
    nodes = [h.make_node("ReduceMean", ["x"], ["mean"], axes=[-1]), h.make_node("Sub", ["x", "mean"], ["c"]),
             h.make_node("Pow", ["c", "two"], ["sq"]), h.make_node("ReduceMean", ["sq"], ["var"], axes=[-1]),
             h.make_node("Add", ["var", "eps"], ["ve"]), h.make_node("Sqrt", ["ve"], ["std"]),
             h.make_node("Div", ["c", "std"], ["n"]), h.make_node("Mul", ["n", "gamma"], ["s"]),
             h.make_node("Add", ["s", "beta"], ["y"])]
    weights = {"two": np.float32(2), "eps": np.float32(1e-12), "gamma": gamma, "beta": beta}
    model = make_model(nodes, {"x": x}, ["y"], weights, opset=13)
    check(model, {"x": x}, atol=1e-4)
    _, report = convert.from_onnx(model.SerializeToString())
    assert report.ops_after == {"LayerNormalization": 1}
    # A pattern whose pieces are used elsewhere is left alone.
    used_twice = make_model(nodes, {"x": x}, ["y", "var"], weights, opset=13)
    check(used_twice, {"x": x}, atol=1e-4)
    assert "LayerNormalization" not in convert.from_onnx(used_twice.SerializeToString())[1].ops_after


def test_shape_arguments_given_as_inputs_are_built_in_per_value(rng):
    x = rand(rng, 2, 6)
    model = make_model([h.make_node("Reshape", ["x", "shape"], ["y"]), h.make_node("Relu", ["y"], ["z"])],
                       {"x": x, "shape": np.array([3, 4], np.int64)}, ["z"])
    graph, _ = convert.from_onnx(model.SerializeToString())
    module = nn._ConvertedModule(graph, graph.weights, ["x", "shape"], [])
    for shape in ([3, 4], [4, 3], [3, 4]):
        got = module.forward(x, np.array(shape, np.int64)).numpy()
        np.testing.assert_array_equal(got, np.maximum(x.reshape(shape), 0))
    assert len(module._instances) == 2  # one graph per distinct shape value
    with pytest.raises(ValueError, match="Reshape"):
        module.forward(x, np.array([5, 5], np.int64))


def test_if_with_a_condition_known_from_shapes(rng, tmp_path):
    # if x.shape[0] > 2: y = x * 2 else: y = x + 100 (a branch reads names of the outer graph).
    def branch(name, op, const):
        return h.make_graph([h.make_node(op, ["x", const], [name + "_out"])], name, [],
                            [h.make_empty_tensor_value_info(name + "_out")])
    nodes = [h.make_node("Shape", ["x"], ["s"]), h.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             h.make_node("Greater", ["n", "two"], ["cond"]),
             h.make_node("If", ["cond"], ["y"], then_branch=branch("then", "Mul", "k2"),
                         else_branch=branch("else", "Add", "k100"))]
    weights = {"zero": np.array(0, np.int64), "two": np.array(2, np.int64), "k2": np.float32(2),
               "k100": np.float32(100)}
    x = rand(rng, 3, 4)
    model = make_model(nodes, {"x": x}, ["y"], weights, batch_dim="N")
    check(model, {"x": x})
    onnx.save(model, tmp_path / "if.onnx")
    convert.from_onnx(tmp_path / "if.onnx", tmp_path / "if.mnnpy")
    module = nn.load_module_from_file(str(tmp_path / "if.mnnpy"))
    np.testing.assert_array_equal(module.forward(x).numpy(), x * 2)
    small = rand(rng, 2, 4)
    np.testing.assert_array_equal(module.forward(small).numpy(), small + 100)


def test_data_dependent_shapes_rebuild_per_call(rng):
    # The positive entries of x, doubled: NonZero's length depends on the values.
    nodes = [h.make_node("Greater", ["x", "zero"], ["mask"]), h.make_node("NonZero", ["mask"], ["where"]),
             h.make_node("Transpose", ["where"], ["idx"], perm=[1, 0]), h.make_node("GatherND", ["x", "idx"], ["g"]),
             h.make_node("Mul", ["g", "two"], ["y"])]
    x = rand(rng, 3, 5)
    model = make_model(nodes, {"x": x}, ["y"], {"zero": np.float32(0), "two": np.float32(2)})
    check(model, {"x": x})
    graph, _ = convert.from_onnx(model.SerializeToString())
    module = nn._ConvertedModule(graph, graph.weights, ["x"], [])
    for _ in range(3):
        v = rand(rng, 3, 5)
        np.testing.assert_array_equal(module.forward(v).numpy(), v[v > 0] * 2)
    assert not module._instances


# ---------------------------------------------------------------- damaged models (fuzzing findings)
def _tensor(name, dtype, dims, values, damage=None):
    t = h.make_tensor(name, dtype, dims, values)
    if damage:
        damage(t)
    return t


MALFORMED = {
    "unknown tensor data type": (
        [h.make_node("Add", ["x", "w"], ["y"])],
        [_tensor("w", T.FLOAT, [2], [1, 2], lambda t: setattr(t, "data_type", 99))], 17,
        r"tensor 'w' has unknown ONNX data type 99"),
    "tensor data shorter than its dims": (
        [h.make_node("Add", ["x", "w"], ["y"])],
        [_tensor("w", T.FLOAT, [5], [1, 2, 3, 4, 5], lambda t: t.dims.__setitem__(0, 3))], 17,
        r"tensor 'w' \(ONNX data type 1, dims \[3\]\) cannot be read: cannot reshape array of size 5"),
    "a required input missing": (
        [h.make_node("Reshape", ["x"], ["y"], name="r")], [], 17,
        r"node 'r' \(Reshape\): input 2 \('shape'\) is required but the node has none there"),
    "a required input left empty": (
        [h.make_node("Identity", [""], ["y"], name="i")], [], 17,
        r"node 'i' \(Identity\): input 1 \('input'\) is required but the node has an empty name there"),
    "an operator newer than the opset, without inputs": (
        [h.make_node("Erf", [], ["e"], name="e"), h.make_node("Add", ["x", "e"], ["y"])], [], 1,
        r"node 'e' \(Erf\): input 1 \('input'\) is required"),
    "more inputs than the operator takes": (
        [h.make_node("Relu", ["x", "x"], ["y"], name="r")], [], 17,
        r"node 'r' \(Relu\): 2 inputs given, the operator takes at most 1"),
    "an axis out of range": (
        [h.make_node("LayerNormalization", ["x", "s", "b"], ["y"], axis=-(1 << 63), name="ln")],
        [numpy_helper.from_array(np.ones(2, np.float32), "s"), numpy_helper.from_array(np.zeros(2, np.float32), "b")],
        17, r"node 'ln' \(LayerNormalization\): axis -9223372036854775808 is out of range for a tensor of 1 dim"),
    "a Split into 2**63-1 outputs": (
        [h.make_node("Split", ["x"], ["y"], name="sp", num_outputs=(1 << 63) - 1)], [], 18,
        r"Split node 'sp': num_outputs is 9223372036854775807, but the node has 1 outputs"),
    "a result of more than 64 dimensions": (
        [h.make_node("Expand", ["x", "shape"], ["y"], name="ex")], [numpy_helper.from_array(np.ones(70, np.int64),
                                                                                          "shape")], 17,
        r"node 'ex' \(Expand\): maximum supported dimension for an ndarray is currently 64, found 70"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_models_raise_value_errors_naming_the_problem(case, tmp_path):
    """Each was found by fuzz/fuzz_onnx.py, where it raised KeyError, IndexError or a MemoryError
    from a list of 2**63 axes, or hung making a list of 2**63 split sizes; onnxruntime refuses each
    model too."""
    nodes, initializers, opset, message = MALFORMED[case]
    graph = h.make_graph(nodes, "damaged", [h.make_tensor_value_info("x", T.FLOAT, [2])],
                         [h.make_empty_tensor_value_info("y")], initializer=initializers)
    data = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)]).SerializeToString()
    path = tmp_path / "damaged.onnx"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=message):
        module = nn.load_module_from_file(str(path))
        module.forward(np.ones(2, np.float32))
    with pytest.raises(Exception):
        ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": np.ones(2, np.float32)})


def test_expand_to_more_dimensions_than_numpy_broadcasts(rng):
    """Found by fuzz/fuzz_onnx.py: NumPy's broadcast_shapes raised RuntimeError past 32 dimensions."""
    x = rand(rng, 2)
    shape = np.ones(48, np.int64)
    shape[3] = 3
    model = make_model([h.make_node("Expand", ["x", "shape"], ["y"])], {"x": x}, ["y"], {"shape": shape})
    assert check(model, {"x": x})[0].shape == (1,) * 3 + (3,) + (1,) * 43 + (2,)


def test_model_file_with_attributes_of_the_wrong_type(rng, tmp_path):
    """Found by fuzz/fuzz_model_file.py: a description whose Conv `pads` held a float made the
    core's attribute conversion raise RuntimeError; values of the wrong kind in the description
    itself raised AttributeError."""
    from mnnpy import expr as F
    x = rand(rng, 1, 2, 4, 4)
    conv = make_model([h.make_node("Conv", ["x", "w"], ["y"], name="conv")], {"x": x}, ["y"],
                      {"w": rand(rng, 3, 2, 1, 1)})
    graph, _ = convert.from_onnx(conv.SerializeToString())
    desc = json.loads(graph.to_json())

    def save(description):
        consts = [F.const(np.frombuffer(json.dumps(description).encode(), np.uint8))]
        consts[0].name = "mnnpy.model"
        for name, w in graph.weights.items():
            consts.append(F.const(np.asarray(w)))
            consts[-1].name = name
        F.save(consts, str(tmp_path / "m.mnnpy"))
        return str(tmp_path / "m.mnnpy")

    bad = json.loads(json.dumps(desc))
    bad["nodes"][0][3]["pads"] = [0, 0, 0, -1e308]
    module = nn.load_module_from_file(save(bad))
    with pytest.raises(TypeError, match=r"node 'conv' \(Conv\): attribute 'pads' must be an int, a float, a str or "
                                        r"a list of ints \(within int64\), got \[0, 0, 0, -10000000000000000109790"):
        module.forward(x)
    for damage, message in [
            (lambda d: d["nodes"][0].__setitem__(3, [1, 2]), r"node attributes must be a JSON object, got \[1, 2\]"),
            (lambda d: d["nodes"][0].__setitem__(2, []), "node 'conv' \\(Conv\\): the node has no outputs"),
            (lambda d: d["nodes"][0].__setitem__(0, 7), "node 'conv': the operator must be a name, got 7"),
            (lambda d: d.__setitem__("inputs", [[1, 2, 3]]), "model input 1: a name, a dtype name and a shape list"),
            (lambda d: d.__setitem__("nodes", {"a": 1}), "nodes must be a list of \\[op, inputs, outputs"),
            (lambda d: d.__setitem__("opset", 1e309), "corrupt mnnpy model description: OverflowError")]:
        bad = json.loads(json.dumps(desc))
        damage(bad)
        with pytest.raises(ValueError, match=message):
            nn.load_module_from_file(save(bad))


def _conv_module(rng, declared):
    w = rand(rng, 4, 3, 3, 3)
    model = make_model([h.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1], name="conv")],
                       {"x": np.zeros((1, 3, 8, 8), np.float32)}, ["y"], {"w": w})
    dims = model.graph.input[0].type.tensor_type.shape.dim
    for d, value in zip(dims, declared):
        if isinstance(value, str):
            d.dim_param = value
        else:
            d.dim_value = value
    graph, _ = convert.from_onnx(model.SerializeToString())
    return model, nn._ConvertedModule(graph, graph.weights, ["x"], [])


BAD_INPUTS = [
    ("wrong channel count", lambda: np.ones((1, 4, 8, 8), np.float32), ValueError,
     r"input 'x' dimension 1 must be 3 \(model shape \('N', 3, 8, 8\)\), got shape \(1, 4, 8, 8\)",
     r"node 'conv' \(Conv\): Conv2D: input has 4 channels but weight \(4, 3, 3, 3\) with group 1 expects 3"),
    ("wrong rank", lambda: np.ones((3, 8, 8), np.float32), ValueError,
     r"input 'x' must have 4 dimensions \('N', 3, 8, 8\), got shape \(3, 8, 8\)",
     r"input 'x' must have 4 dimensions \('N', 'C', 'H', 'W'\), got shape \(3, 8, 8\)"),
    ("an empty dimension", lambda: np.ones((1, 3, 0, 8), np.float32), ValueError,
     r"input 'x' dimension 2 must be 8", r"Conv2D: kernel of extent \(3, 3\) is larger than the padded input \(2, 10\)"),
    ("an integer array", lambda: np.ones((1, 3, 8, 8), np.int32), TypeError, "input 'x' must be float32, got int32",
     "input 'x' must be float32, got int32"),
    ("a boolean array", lambda: np.ones((1, 3, 8, 8), np.bool_), TypeError, "input 'x' must be float32, got bool",
     "input 'x' must be float32, got bool"),
    ("a string", lambda: "abc", TypeError, "input 'x' must be an array of float32, got str",
     "input 'x' must be an array of float32, got str"),
    ("None", lambda: None, TypeError, "input 'x' must be an array of float32, got NoneType",
     "input 'x' must be an array of float32, got NoneType"),
    ("an object array", lambda: np.array([object()]), TypeError, "got ndarray of dtype object",
     "got ndarray of dtype object"),
    ("a lazy Var of the wrong channels", lambda: mp.ones((1, 4, 8, 8), dtype=np.float32) + 1, ValueError,
     r"input 'x' dimension 1 must be 3", r"Conv2D: input has 4 channels but weight"),
    ("a lazy Var of the wrong dtype", lambda: mp.ones((1, 3, 8, 8), dtype=np.int32) + 1, TypeError,
     "input 'x' must be float32, got int32", "input 'x' must be float32, got int32"),
]


def test_repeated_calls_give_onnxruntime_values_and_still_check_their_inputs(rng):
    """Calls repeating the last call's shapes and dtypes run its plan directly: each gives
    onnxruntime's values for its own input, other shapes and dtypes go through the checks, and
    inputs named out of the model's order still reach their placeholders."""
    model, module = _conv_module(rng, ["N", 3, 8, 8])
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for batch in (1, 1, 2, 2, 1):
        x = rand(rng, batch, 3, 8, 8)
        kept = x.copy()
        np.testing.assert_allclose(module.forward(x).read(), session.run(None, {"x": x})[0], rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(x, kept)
    x64 = rand(rng, 1, 3, 8, 8).astype(np.float64)
    np.testing.assert_allclose(module.forward(x64).read(), session.run(None, {"x": x64.astype(np.float32)})[0],
                               rtol=1e-5, atol=1e-5)
    module.forward(rand(rng, 1, 3, 8, 8))
    for _, make_input, error, message, _ in BAD_INPUTS:
        with pytest.raises(error, match=message):
            module.forward(make_input())
    with pytest.raises(ValueError, match="takes 1 inputs"):
        module.forward(rand(rng, 1, 3, 8, 8), rand(rng, 1, 3, 8, 8))
    difference = make_model([h.make_node("Sub", ["a", "b"], ["y"])],
                            {"a": np.zeros((2, 3), np.float32), "b": np.zeros((2, 3), np.float32)}, ["y"])
    graph, _ = convert.from_onnx(difference.SerializeToString())
    swapped = nn._ConvertedModule(graph, graph.weights, ["b", "a"], [])
    for _ in range(3):
        b, a = rand(rng, 2, 3), rand(rng, 2, 3)
        y = swapped.forward([b, a])
        np.testing.assert_array_equal(y.read(), a - b)
        assert y.name == "y"


@pytest.mark.parametrize("declared", [["N", 3, 8, 8], ["N", "C", "H", "W"]], ids=["fixed", "symbolic"])
@pytest.mark.parametrize("case", BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_forward_refuses_bad_inputs_with_a_clear_error(rng, declared, case):
    """A model's declared shape is checked first; with symbolic dimensions the first op that cannot
    take the input names it. onnxruntime refuses the same inputs."""
    _, make_input, error, fixed_message, symbolic_message = case
    model, module = _conv_module(rng, declared)
    with pytest.raises(error, match=fixed_message if declared[1] == 3 else symbolic_message):
        module.forward(make_input())
    x = make_input()
    if isinstance(x, np.ndarray) and x.dtype != object:
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        with pytest.raises(Exception):
            session.run(None, {"x": x})


def test_forward_refuses_wrong_input_counts_and_takes_empty_batches(rng):
    model, module = _conv_module(rng, ["N", 3, 8, 8])
    x = rand(rng, 2, 3, 8, 8)
    for args, message in [((), r"takes 1 inputs \['x'\], got 0"), ((x, x), r"takes 1 inputs \['x'\], got 2"),
                          (([x, x],), r"takes 1 inputs \['x'\], got 2"), (({"y": x},), r"missing inputs \['x'\]")]:
        with pytest.raises(ValueError, match=message):
            module.forward(*args)
    empty = np.zeros((0, 3, 8, 8), np.float32)
    expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": empty})
    assert module.forward(empty).numpy().shape == expected[0].shape == (0, 4, 8, 8)
    np.testing.assert_allclose(module.forward(x.astype(np.float64)).numpy(), module.forward(x).numpy())


@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_cumsum_along_a_long_axis(rng, exclusive, reverse):
    """Found by fuzz/fuzz_onnx.py: CumSum was a product with an n x n triangle of ones, so an axis
    of 10**5 asked NumPy for 80 GB (and a zero-size input with a huge axis for terabytes); it is
    the core's running sum now."""
    x = rng.integers(-5, 5, (2, 100_000)).astype(np.float32)
    model = make_model([h.make_node("CumSum", ["x", "axis"], ["y"], exclusive=exclusive, reverse=reverse)],
                       {"x": x}, ["y"], {"axis": np.array(1, np.int64)})
    check(model, {"x": x}, rtol=0, atol=0)
    ints = rng.integers(-1000, 1000, (3, 4, 5)).astype(np.int32)
    model = make_model([h.make_node("CumSum", ["x", "axis"], ["y"], exclusive=exclusive, reverse=reverse)],
                       {"x": ints}, ["y"], {"axis": np.array(-2, np.int64)})
    check(model, {"x": ints})
