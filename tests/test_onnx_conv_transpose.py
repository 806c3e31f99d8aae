"""ONNX ConvTranspose converted and run by mnnpy against onnxruntime: 1-D, 2-D and 3-D, groups,
depthwise, strides, dilations, pads, output_padding, output_shape, every auto_pad, bias, batches,
weights as initializers and as inputs, the BatchNorm folded after it, and bad nodes."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto as T  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx import numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from mnnpy import convert, nn  # noqa: E402
from onnx_testing import with_min_ir_version  # noqa: E402

F32_ROUNDOFF = 2.0 ** -24


def make_model(x_shape, w, bias=None, weights_as_inputs=False, opset=17, after=(), **attrs):
    """One ConvTranspose node (then the `after` nodes, reading 'Y' and writing 'Z'); W and B are
    initializers unless `weights_as_inputs`."""
    inputs = ["X", "W"] + ([] if bias is None else ["B"])
    nodes = [h.make_node("ConvTranspose", inputs, ["Y"], name="up", **attrs)] + list(after)
    graph_inputs = [h.make_tensor_value_info("X", T.FLOAT, list(x_shape))]
    initializers = []
    for name, value in (("W", w), ("B", bias)):
        if value is None:
            continue
        if weights_as_inputs:
            graph_inputs.append(h.make_tensor_value_info(name, T.FLOAT, list(value.shape)))
        else:
            initializers.append(numpy_helper.from_array(value, name))
    output = "Z" if after else "Y"
    graph = h.make_graph(nodes, "convt", graph_inputs, [h.make_empty_tensor_value_info(output)],
                         initializer=initializers)
    return with_min_ir_version(h.make_model(graph, opset_imports=[h.make_opsetid("", opset)]))


def run_mnnpy(model, feeds):
    graph, report = convert.from_onnx(model.SerializeToString())
    assert not report.unsupported
    module = nn._ConvertedModule(graph, graph.weights, list(feeds), [])
    return module.forward(*feeds.values()).numpy()


def run_onnxruntime(model, feeds):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


def error_bound(reference, abs_model, abs_feeds, terms):
    """Both results round sums of at most `terms` products (and the bias) in float32, in any
    order: each is within gamma_terms * (the same sums over absolute values) of the exact value.
    `abs_model` and `abs_feeds` hold the absolute values of the weights and inputs."""
    magnitude = np.abs(reference(abs_model, abs_feeds).astype(np.float64))
    gamma = terms * F32_ROUNDOFF / (1 - terms * F32_ROUNDOFF)
    return 2 * gamma * magnitude + 1e-30


def check(x_shape, w_shape, group=1, with_bias=True, weights_as_inputs=False, opset=17, seed=0,
          reference=run_onnxruntime, **attrs):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    bias = rng.standard_normal(w_shape[1] * group).astype(np.float32) if with_bias else None
    if group != 1:
        attrs["group"] = group
    model = make_model(x_shape, w, bias, weights_as_inputs, opset, **attrs)
    feeds = {"X": x}
    if weights_as_inputs:
        feeds["W"] = w
        if bias is not None:
            feeds["B"] = bias
    expected = reference(model, feeds)
    got = run_mnnpy(model, feeds)
    assert got.shape == expected.shape, f"shape {got.shape} != the reference's {expected.shape}"
    # Each output sums at most C_in/group * prod(kernel) products, plus the bias.
    terms = x_shape[1] // group * int(np.prod(w_shape[2:])) + 1
    abs_model = make_model(x_shape, np.abs(w), None if bias is None else np.abs(bias), weights_as_inputs, opset,
                           **attrs)
    bound = error_bound(reference, abs_model, {k: np.abs(v) for k, v in feeds.items()}, terms)
    excess = np.abs(got.astype(np.float64) - expected) - bound
    assert excess.max() <= 0, f"error exceeds the float32 bound by {excess.max()}"
    return got


def reference_evaluator(model, feeds):
    return ReferenceEvaluator(model).run(None, feeds)[0]


# (input shape, weight shape, group, attributes)
CASES_2D = [
    ((1, 3, 5, 5), (3, 4, 3, 3), 1, {}),
    ((2, 3, 5, 6), (3, 2, 3, 3), 1, {"strides": [2, 2]}),
    ((3, 4, 4, 5), (4, 3, 2, 3), 1, {"strides": [3, 2]}),
    ((2, 4, 5, 5), (4, 3, 3, 3), 2, {"strides": [2, 2]}),
    ((2, 8, 4, 6), (8, 2, 3, 2), 4, {"strides": [1, 2]}),
    ((2, 8, 6, 6), (8, 1, 3, 3), 8, {"strides": [2, 2], "pads": [1, 1, 1, 1]}),  # depthwise
    ((1, 6, 7, 7), (6, 1, 4, 4), 6, {"strides": [2, 2], "pads": [1, 1, 1, 1]}),  # depthwise, even kernel
    ((1, 3, 5, 5), (3, 2, 3, 3), 1, {"dilations": [2, 2]}),
    ((2, 4, 5, 4), (4, 2, 3, 2), 2, {"dilations": [2, 3], "strides": [2, 1]}),
    ((1, 3, 6, 6), (3, 2, 3, 3), 1, {"pads": [1, 2, 0, 1]}),
    ((1, 3, 6, 6), (3, 2, 4, 4), 1, {"strides": [2, 2], "pads": [2, 0, 1, 3]}),
    ((2, 3, 5, 5), (3, 2, 3, 3), 1, {"strides": [2, 3], "output_padding": [1, 2]}),
    ((1, 4, 5, 5), (4, 2, 3, 3), 2, {"strides": [3, 3], "pads": [1, 1, 2, 0], "output_padding": [2, 1]}),
    ((1, 3, 4, 5), (3, 2, 3, 3), 1, {"strides": [2, 2], "output_shape": [9, 11]}),  # as computed
    ((1, 3, 4, 5), (3, 2, 3, 3), 1, {"strides": [2, 2], "output_shape": [8, 9]}),  # cut
    ((1, 3, 4, 5), (3, 2, 3, 3), 1, {"strides": [2, 2], "output_shape": [6, 7]}),  # cut more
    ((1, 3, 4, 5), (3, 2, 3, 3), 1, {"strides": [3, 2], "output_shape": [11, 12]}),  # zeros at the end
    ((2, 4, 4, 5), (4, 1, 3, 3), 4, {"strides": [2, 2], "output_shape": [8, 10], "pads": [1, 1, 1, 1]}),
    ((1, 3, 4, 5), (3, 2, 3, 3), 1, {"strides": [2, 2], "output_shape": [8, 9], "auto_pad": "SAME_UPPER"}),
    ((1, 3, 4, 5), (3, 2, 3, 3), 1, {"strides": [2, 2], "output_shape": [8, 9], "auto_pad": "SAME_LOWER"}),
    ((2, 3, 4, 5), (3, 2, 3, 3), 1, {"strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    ((2, 3, 4, 5), (3, 2, 3, 3), 1, {"strides": [2, 2], "auto_pad": "SAME_LOWER"}),
    ((1, 4, 4, 5), (4, 2, 4, 3), 2, {"strides": [2, 3], "dilations": [1, 2], "auto_pad": "SAME_UPPER"}),
    ((1, 4, 4, 5), (4, 2, 4, 3), 2, {"strides": [2, 3], "dilations": [1, 2], "auto_pad": "SAME_LOWER"}),
    ((1, 3, 5, 5), (3, 2, 3, 3), 1, {"strides": [1, 1], "auto_pad": "SAME_UPPER"}),
    ((1, 3, 4, 4), (3, 2, 3, 3), 1, {"strides": [2, 2], "output_padding": [1, 1], "auto_pad": "SAME_LOWER"}),
    ((2, 3, 4, 5), (3, 2, 3, 2), 1, {"strides": [2, 3], "auto_pad": "VALID"}),
    ((1, 3, 4, 5), (3, 2, 3, 3), 1, {"auto_pad": "NOTSET", "pads": [1, 0, 0, 1], "kernel_shape": [3, 3]}),
]


@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("x_shape, w_shape, group, attrs", CASES_2D)
def test_2d(x_shape, w_shape, group, attrs, with_bias):
    check(x_shape, w_shape, group, with_bias, **attrs)


CASES_1D = [
    ((2, 3, 7), (3, 4, 3), 1, {}),
    ((2, 4, 6), (4, 2, 4), 2, {"strides": [2], "pads": [1, 2]}),
    ((3, 4, 5), (4, 1, 3), 4, {"strides": [3], "dilations": [2], "output_padding": [2]}),
    ((1, 3, 5), (3, 2, 3), 1, {"strides": [2], "output_shape": [10]}),
    ((1, 3, 5), (3, 2, 3), 1, {"strides": [2], "auto_pad": "SAME_UPPER"}),
    ((1, 3, 5), (3, 2, 3), 1, {"strides": [2], "auto_pad": "SAME_LOWER"}),
    ((1, 3, 5), (3, 2, 3), 1, {"strides": [2], "auto_pad": "VALID"}),
]


@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("x_shape, w_shape, group, attrs", CASES_1D)
def test_1d(x_shape, w_shape, group, attrs, with_bias):
    check(x_shape, w_shape, group, with_bias, **attrs)


CASES_3D = [
    ((1, 2, 3, 4, 5), (2, 3, 3, 3, 3), 1, {}),
    ((2, 4, 3, 3, 4), (4, 2, 2, 3, 3), 2, {"strides": [2, 2, 1], "pads": [1, 0, 1, 0, 1, 1]}),
    ((1, 2, 3, 3, 3), (2, 2, 3, 2, 2), 1, {"strides": [3, 2, 2], "dilations": [2, 1, 1],
                                           "output_padding": [1, 1, 0]}),
    ((1, 4, 2, 3, 3), (4, 1, 3, 3, 3), 4, {"strides": [2, 2, 2], "auto_pad": "SAME_UPPER"}),
    ((1, 2, 3, 3, 3), (2, 2, 3, 3, 3), 1, {"strides": [2, 2, 2], "auto_pad": "SAME_LOWER"}),
    ((1, 2, 3, 3, 3), (2, 2, 3, 3, 3), 1, {"strides": [2, 2, 2], "output_shape": [6, 8, 7]}),
]


@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("x_shape, w_shape, group, attrs", CASES_3D)
def test_3d(x_shape, w_shape, group, attrs, with_bias):
    check(x_shape, w_shape, group, with_bias, **attrs)


def run_torch(model, feeds):
    """PyTorch's conv_transpose2d with the node's attributes (symmetric pads only)."""
    torch = pytest.importorskip("torch")
    node = model.graph.node[0]
    attrs = {a.name: list(a.ints) if a.ints else a.i for a in node.attribute}
    weights = {t.name: np.array(numpy_helper.to_array(t)) for t in model.graph.initializer}
    pads = attrs.get("pads", [0, 0, 0, 0])
    assert pads[:2] == pads[2:]
    with torch.no_grad():
        y = torch.nn.functional.conv_transpose2d(
            torch.from_numpy(feeds["X"]), torch.from_numpy(weights["W"]),
            torch.from_numpy(weights["B"]) if "B" in weights else None, stride=attrs.get("strides", 1),
            padding=pads[:2], output_padding=attrs.get("output_padding", 0), groups=attrs.get("group", 1),
            dilation=attrs.get("dilations", 1))
    return y.numpy()


@pytest.mark.parametrize("with_bias", [True, False])
def test_output_padding_below_dilation(with_bias):
    # output_padding may reach max(stride, dilation) - 1, as the ONNX specification and PyTorch have
    # it; onnxruntime and the ONNX reference implementation refuse output_padding >= stride.
    check((1, 2, 4, 4), (2, 2, 3, 3), 1, with_bias, reference=run_torch, strides=[1, 2],
          dilations=[2, 3], pads=[1, 0, 1, 0], output_padding=[1, 2])


@pytest.mark.parametrize("opset", [7, 11, 22])
def test_opsets(opset):
    check((2, 4, 5, 5), (4, 3, 3, 3), 2, opset=opset, strides=[2, 2], pads=[1, 0, 0, 1], output_padding=[1, 1])


@pytest.mark.parametrize("x_shape, w_shape, group, attrs", [
    ((2, 4, 5, 5), (4, 3, 3, 3), 2, {}),
    ((2, 4, 5, 5), (4, 3, 3, 3), 2, {"strides": [2, 2], "output_padding": [1, 0]}),
    ((2, 4, 5, 5), (4, 3, 3, 3), 2, {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    ((2, 4, 6), (4, 3, 3), 1, {"strides": [2], "pads": [1, 0]}),
    ((2, 4, 3, 3, 4), (4, 1, 2, 3, 3), 2, {"strides": [2, 1, 2]}),
])
def test_weights_as_inputs(x_shape, w_shape, group, attrs):
    check(x_shape, w_shape, group, weights_as_inputs=True, **attrs)


@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER"])
@pytest.mark.parametrize("x_shape, w_shape, strides", [((1, 2, 4), (2, 3, 1), [3]),
                                                        ((1, 2, 3, 4), (2, 3, 1, 2), [3, 4]),
                                                        ((1, 2, 2, 3, 3), (2, 3, 1, 2, 1), [3, 3, 2])])
def test_same_with_kernel_shorter_than_stride(auto_pad, x_shape, w_shape, strides, with_bias):
    # The output is input * stride (the ONNX specification, as its reference implementation runs it);
    # the kernel covers less than a stride, so zeros pad both ends. onnxruntime returns a shorter output.
    check(x_shape, w_shape, 1, with_bias, reference=reference_evaluator, strides=strides, auto_pad=auto_pad)


def dbnet_upsampling(x_shape, out_c, seed):
    """ConvTranspose 2x2 stride 2 -> BatchNormalization -> Relu, as DBNet's head upsamples."""
    rng = np.random.default_rng(seed)
    in_c = x_shape[1]
    w = (rng.standard_normal((in_c, out_c, 2, 2)) / np.sqrt(in_c * 4)).astype(np.float32)
    bias = rng.standard_normal(out_c).astype(np.float32) * 0.1
    bn = {"scale": rng.uniform(0.5, 1.5, out_c), "shift": rng.standard_normal(out_c) * 0.1,
          "mean": rng.standard_normal(out_c) * 0.1, "var": rng.uniform(0.5, 2.0, out_c)}
    after = [h.make_node("BatchNormalization", ["Y", "scale", "shift", "mean", "var"], ["N"], epsilon=1e-5),
             h.make_node("Relu", ["N"], ["Z"])]
    model = make_model(x_shape, w, bias, after=after, strides=[2, 2], kernel_shape=[2, 2])
    model.graph.initializer.extend(numpy_helper.from_array(v.astype(np.float32), k) for k, v in bn.items())
    x = rng.standard_normal(x_shape).astype(np.float32)
    return model, {"X": x}, w, bias, bn


def test_dbnet_upsampling_with_batch_norm():
    model, feeds, w, bias, bn = dbnet_upsampling((1, 64, 80, 80), 64, seed=1)
    graph, _ = convert.from_onnx(model.SerializeToString())
    # The BatchNorm is folded into the transposed convolution's weights and bias.
    assert [n.op for n in graph.nodes] == ["ConvTranspose", "Relu"]
    expected = run_onnxruntime(model, feeds)
    got = run_mnnpy(model, feeds)
    assert got.shape == expected.shape == (1, 64, 160, 160)
    # Each output sums 64 products (one tap per input channel) and the bias: 65 roundings in each
    # implementation; the folded weights and bias round once more, onnxruntime's BatchNorm (its
    # factor, the subtraction, product and sum) up to five times: 136 roundings of the magnitude.
    factor = bn["scale"] / np.sqrt(bn["var"] + 1e-5)
    magnitude = run_abs_magnitude(feeds["X"], w, bias, factor, bn)
    bound = 136 * F32_ROUNDOFF / (1 - 136 * F32_ROUNDOFF) * magnitude + 1e-30
    assert (np.abs(got.astype(np.float64) - expected) - bound).max() <= 0


def run_abs_magnitude(x, w, bias, factor, bn):
    """The exact sums over absolute values of a 2x2 stride-2 transposed convolution, scaled by
    |factor|, plus the absolute terms of the BatchNorm's shift: the scale of each output's error."""
    n, _, height, width = x.shape
    out_c = w.shape[1]
    # Stride 2 with a 2x2 kernel: each output pixel gets exactly one tap, [dy, dx] = its parity.
    taps = np.einsum("nchw,cokl->nohkwl", np.abs(x).astype(np.float64), np.abs(w).astype(np.float64))
    conv = taps.reshape(n, out_c, 2 * height, 2 * width)
    return (np.abs(factor)[None, :, None, None] * (conv + np.abs(bias)[None, :, None, None] +
                                                    np.abs(bn["mean"])[None, :, None, None]) +
            np.abs(bn["shift"])[None, :, None, None])


def test_dbnet_upsampling_batch_and_groups_fold():
    # Batch 2 and a grouped transposed convolution: the BatchNorm folds per output channel of each group.
    rng = np.random.default_rng(3)
    x_shape, in_c, out_c, group = (2, 16, 12, 12), 16, 8, 4
    w = rng.standard_normal((in_c, out_c // group, 2, 2)).astype(np.float32)
    scale, shift, mean = (rng.standard_normal(out_c).astype(np.float32) for _ in range(3))
    var = rng.uniform(0.5, 2.0, out_c).astype(np.float32)
    after = [h.make_node("BatchNormalization", ["Y", "scale", "shift", "mean", "var"], ["Z"])]
    model = make_model(x_shape, w, None, after=after, strides=[2, 2], group=group)
    model.graph.initializer.extend(numpy_helper.from_array(v, k) for k, v in
                                   dict(scale=scale, shift=shift, mean=mean, var=var).items())
    graph, _ = convert.from_onnx(model.SerializeToString())
    assert [n.op for n in graph.nodes] == ["ConvTranspose"]
    feeds = {"X": rng.standard_normal(x_shape).astype(np.float32)}
    expected = run_onnxruntime(model, feeds)
    got = run_mnnpy(model, feeds)
    assert got.shape == expected.shape == (2, 8, 24, 24)
    # Four products per output (one tap of each input channel of its group; stride = kernel), then
    # the weight folding (1) or BatchNorm's affine step (up to 5): 4 + 1 + 1 + 4 + 5 roundings.
    factor = np.abs(scale / np.sqrt(var + 1e-5)).astype(np.float64)
    conv = np.abs(run_onnxruntime(make_model(x_shape, np.abs(w), None, strides=[2, 2], group=group),
                                  {"X": np.abs(feeds["X"])})).astype(np.float64)
    magnitude = factor[None, :, None, None] * (conv + np.abs(mean)[None, :, None, None]) + \
        np.abs(shift)[None, :, None, None]
    assert (np.abs(got.astype(np.float64) - expected) - 16 * F32_ROUNDOFF * magnitude).max() <= 0


def test_between_blocked_convolutions():
    # Conv -> ConvTranspose -> Conv with channels that run in the blocked layout around it.
    rng = np.random.default_rng(5)
    c = 16
    w1 = (rng.standard_normal((c, 8, 3, 3)) / 5).astype(np.float32)
    wt = (rng.standard_normal((c, c, 2, 2)) / 8).astype(np.float32)
    w2 = (rng.standard_normal((8, c, 3, 3)) / 12).astype(np.float32)
    nodes = [h.make_node("Conv", ["X", "W1"], ["A"], pads=[1, 1, 1, 1]),
             h.make_node("Relu", ["A"], ["R"]),
             h.make_node("ConvTranspose", ["R", "WT"], ["U"], strides=[2, 2]),
             h.make_node("Conv", ["U", "W2"], ["Z"], pads=[1, 1, 1, 1])]
    graph = h.make_graph(nodes, "chain", [h.make_tensor_value_info("X", T.FLOAT, [2, 8, 10, 10])],
                         [h.make_empty_tensor_value_info("Z")],
                         initializer=[numpy_helper.from_array(v, k) for k, v in
                                      dict(W1=w1, WT=wt, W2=w2).items()])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    feeds = {"X": rng.standard_normal((2, 8, 10, 10)).astype(np.float32)}
    expected = run_onnxruntime(model, feeds)
    got = run_mnnpy(model, feeds)
    assert got.shape == expected.shape == (2, 8, 20, 20)
    # Three chained sums (72, 16 and 144 products): bound each stage's rounding by the magnitude
    # of the chain over absolute values.
    abs_model = h.make_model(h.make_graph(
        [h.make_node("Conv", ["X", "W1"], ["A"], pads=[1, 1, 1, 1]),
         h.make_node("ConvTranspose", ["A", "WT"], ["U"], strides=[2, 2]),
         h.make_node("Conv", ["U", "W2"], ["Z"], pads=[1, 1, 1, 1])], "abs",
        [h.make_tensor_value_info("X", T.FLOAT, [2, 8, 10, 10])], [h.make_empty_tensor_value_info("Z")],
        initializer=[numpy_helper.from_array(np.abs(v), k) for k, v in dict(W1=w1, WT=wt, W2=w2).items()]),
        opset_imports=[h.make_opsetid("", 17)])
    magnitude = run_onnxruntime(abs_model, {"X": np.abs(feeds["X"])}).astype(np.float64)
    terms = 72 + 16 + 144
    assert (np.abs(got.astype(np.float64) - expected) - 2 * terms * F32_ROUNDOFF * magnitude).max() <= 0


# ------------------------------------------------------------------ bad nodes

def build_error(x_shape, w_shape, bias_shape=None, x_type=np.float32, **attrs):
    w = np.ones(w_shape, np.float32)
    bias = None if bias_shape is None else np.ones(bias_shape, np.float32)
    model = make_model(x_shape, w, bias, **attrs)
    if x_type != np.float32:
        model.graph.input[0].type.tensor_type.elem_type = T.DOUBLE
    graph, _ = convert.from_onnx(model.SerializeToString())
    module = nn._ConvertedModule(graph, graph.weights, ["X"], [])
    return module.forward(np.ones(x_shape, x_type))


@pytest.mark.parametrize("x_shape, w_shape, bias_shape, attrs, error, message", [
    ((1, 3, 5, 5), (4, 2, 3, 3), None, {}, ValueError, "input channels"),
    ((1, 3, 5, 5), (3, 2, 3), None, {}, ValueError, "dimensions"),
    ((1, 4, 5, 5), (4, 2, 3, 3), None, {"group": 3}, ValueError, "groups"),
    ((1, 4, 5, 5), (4, 2, 3, 3), None, {"group": 0}, ValueError, "group must be positive"),
    ((1, 4, 5, 5), (4, 2, 3, 3), (3,), {"group": 2}, ValueError, "bias must have shape (4,)"),
    ((1, 3, 5, 5), (3, 2, 3, 3), None, {"strides": [2, 2], "output_padding": [2, 0]}, ValueError,
     "output_padding"),
    ((1, 3, 5, 5), (3, 2, 3, 3), None, {"strides": [0, 1]}, ValueError, "positive"),
    ((1, 3, 5, 5), (3, 2, 3, 3), None, {"strides": [2]}, ValueError, "strides needs 2 values"),
    ((1, 3, 5, 5), (3, 2, 3, 3), None, {"kernel_shape": [2, 2]}, ValueError, "kernel_shape"),
    ((1, 3, 5, 5), (3, 2, 3, 3), None, {"auto_pad": "SAME"}, ValueError, "auto_pad"),
    ((1, 3, 5, 5), (3, 2, 3, 3), None, {"pads": [4, 4, 4, 4]}, ValueError, "empty"),
    ((1, 3, 5, 5), (3, 2, 3, 3), None, {"pads": [-1, 0, 0, 0]}, ValueError, "non-negative"),
    ((1, 3, 5, 5), (3, 2, 3, 3), None, {"output_shape": [7]}, ValueError, "output_shape"),
    ((1, 3, 2, 2, 2, 2), (3, 2, 1, 1, 1, 1), None, {}, ValueError, "3, 4 or 5 dimensions"),
])
def test_bad_nodes(x_shape, w_shape, bias_shape, attrs, error, message):
    with pytest.raises(error) as info:
        build_error(x_shape, w_shape, bias_shape, **attrs)
    assert "(ConvTranspose)" in str(info.value) and message in str(info.value)


def test_non_float_input():
    with pytest.raises(TypeError, match=r"ConvTranspose.*float32"):
        build_error((1, 3, 5, 5), (3, 2, 3, 3), x_type=np.float64)
