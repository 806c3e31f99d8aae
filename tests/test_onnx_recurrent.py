"""ONNX RNN, GRU and LSTM converted and run by mnnpy against onnxruntime: directions, layouts,
sequence lengths (constant and given at run time), initial states, peepholes, clip, activations
with their alpha/beta, GRU's linear_before_reset, LSTM's input_forget, omitted outputs, opsets,
a two-layer bidirectional LSTM exported from PyTorch, a voice-activity-detector-shaped LSTM
whose state goes out and back in, and bad nodes."""
import functools
import itertools
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import helper as h  # noqa: E402
from onnx import numpy_helper  # noqa: E402

from mnnpy import convert, nn  # noqa: E402
import onnx_testing  # noqa: E402
from mnnpy.convert._onnx_ops import UnsupportedOperator  # noqa: E402

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
UNIT_ROUNDOFF = 2.0 ** -24

make_model = functools.partial(onnx_testing.make_model, opset=14)  # the opset unless a test names one


def tolerance(steps, input_size, hidden):
    """Absolute error bound for float32 outputs of magnitude <= ~1: each step rounds sums of
    input_size + hidden products (gamma_K = K u) and a few transcendental functions (a few ulps);
    the weights below keep the recurrence contractive, so errors of successive steps add up at
    most, over `steps` steps. A factor of 8 covers different summation orders of two libraries."""
    k = input_size + hidden
    per_step = k * UNIT_ROUNDOFF / (1 - k * UNIT_ROUNDOFF) + 16 * UNIT_ROUNDOFF
    return 8 * max(steps, 1) * per_step


def weights(rng, op, directions, input_size, hidden, peepholes=False):
    """W, R, B (and P) scaled by 1/sqrt(fan-in) as PyTorch initializes them, which keeps the
    state bounded and the recurrence contractive."""
    g = GATES[op]
    scale = 1 / np.sqrt(hidden)
    out = {"W": rng.uniform(-scale, scale, (directions, g * hidden, input_size)).astype(np.float32),
           "R": rng.uniform(-scale, scale, (directions, g * hidden, hidden)).astype(np.float32),
           "B": rng.uniform(-scale, scale, (directions, 2 * g * hidden)).astype(np.float32)}
    if peepholes:
        out["P"] = rng.uniform(-scale, scale, (directions, 3 * hidden)).astype(np.float32)
    return out


def converted(model, input_names):
    graph, report = convert.from_onnx(model.SerializeToString())
    assert not report.unsupported
    return nn._ConvertedModule(graph, graph.weights, list(input_names), [])


class Reference:
    """onnxruntime running the model. onnxruntime refuses layout 1 (batch first): such a model
    runs there as its layout-0 twin, inputs and outputs transposed, which is what layout 1 means."""

    def __init__(self, model):
        node = model.graph.node[0] if len(model.graph.node) == 1 else None
        layout = next((a.i for a in node.attribute if a.name == "layout"), 0) if node is not None else 0
        self.batch_first = node is not None and node.op_type in GATES and layout == 1
        if self.batch_first:
            model = onnx.ModelProto.FromString(model.SerializeToString())
            node = model.graph.node[0]
            for a in node.attribute:
                if a.name == "layout":
                    a.i = 0
            for v in model.graph.input:
                if v.name in (node.input[0], *node.input[5:7]):
                    dims = v.type.tensor_type.shape.dim
                    dims[0].dim_value, dims[1].dim_value = dims[1].dim_value, dims[0].dim_value
            self.state_inputs = set(node.input[5:7])
            self.x_input = node.input[0]
            self.y_output = node.output[0]
        self.session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])

    def run(self, inputs):
        if not self.batch_first:
            return self.session.run(None, inputs)
        inputs = {k: (np.ascontiguousarray(np.swapaxes(v, 0, 1)) if k == self.x_input or k in self.state_inputs else v)
                  for k, v in inputs.items()}
        outputs = self.session.run(None, inputs)
        names = [o.name for o in self.session.get_outputs()]
        # Y: [steps, directions, batch, hidden] -> [batch, steps, directions, hidden]; states swap
        # their first two axes.
        return [np.transpose(o, (2, 0, 1, 3)) if n == self.y_output else np.swapaxes(o, 0, 1)
                for n, o in zip(names, outputs)]


def compare(module, reference, inputs, atol):
    expected = reference.run(inputs)
    got = module.forward(*inputs.values())
    got = got if isinstance(got, list) else [got]
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        g = g.numpy()
        assert g.shape == e.shape, f"shape {g.shape} != onnxruntime's {e.shape}"
        np.testing.assert_allclose(g, e, rtol=0, atol=atol)
    return got


def check(model, inputs, atol):
    """Runs the model in onnxruntime and in mnnpy; every output must agree within atol."""
    return compare(converted(model, inputs), Reference(model), inputs, atol)


def recurrent_case(rng, op, *, direction="forward", layout=0, lengths=None, initial=False, peepholes=False,
                   clip=None, activations=None, alphas=None, betas=None, steps=5, batch=3, input_size=4,
                   hidden=6, outputs=None, opset=14, x_scale=1.0, **attrs):
    """(model, runtime inputs) of one recurrent node. `lengths`: None, "constant" (an initializer
    with varied lengths) or "input" (varied lengths given at run time)."""
    d = 2 if direction == "bidirectional" else 1
    w = weights(rng, op, d, input_size, hidden, peepholes)
    x_shape = (batch, steps, input_size) if layout else (steps, batch, input_size)
    state_shape = (batch, d, hidden) if layout else (d, batch, hidden)
    inputs = {"X": rng.uniform(-x_scale, x_scale, x_shape).astype(np.float32)}
    initializers = {"W": w["W"], "R": w["R"], "B": w["B"]}
    names = ["X", "W", "R", "B", "", "", "", ""]
    if lengths is not None:
        # At least one full sequence, the others shorter (at least one step), in a seeded order.
        lens = np.concatenate([[steps], rng.integers(1, steps, batch - 1)]).astype(np.int32)
        lens = rng.permutation(lens)
        (inputs if lengths == "input" else initializers)["L"] = lens
        names[4] = "L"
    if initial:
        inputs["H0"] = rng.uniform(-1, 1, state_shape).astype(np.float32)
        names[5] = "H0"
        if op == "LSTM":
            inputs["C0"] = rng.uniform(-1, 1, state_shape).astype(np.float32)
            names[6] = "C0"
    if peepholes:
        initializers["P"] = w["P"]
        names[7] = "P"
    while names and not names[-1]:
        names.pop()
    if op != "LSTM":
        names = names[:6]
    node_attrs = dict(hidden_size=hidden, direction=direction, **attrs)
    if opset >= 14:
        node_attrs["layout"] = layout
    if clip is not None:
        node_attrs["clip"] = clip
    if activations is not None:
        node_attrs["activations"] = activations
    if alphas is not None:
        node_attrs["activation_alpha"] = alphas
    if betas is not None:
        node_attrs["activation_beta"] = betas
    if outputs is None:
        outputs = ["Y", "Y_h", "Y_c"] if op == "LSTM" else ["Y", "Y_h"]
    node = h.make_node(op, names, outputs, **node_attrs)
    model = make_model([node], inputs, [o for o in outputs if o], initializers, opset=opset)
    return model, inputs


# Per operator, activation sets one direction uses (None: the defaults), alpha/beta given.
ACTIVATION_SETS = {
    "RNN": [None, (["Relu"], None, None), (["HardSigmoid"], [0.3], [0.4])],
    "GRU": [None, (["HardSigmoid", "Softsign"], [0.25], [0.45]), (["Sigmoid", "Elu"], [0.8], None)],
    "LSTM": [None, (["HardSigmoid", "Tanh", "Softsign"], [0.3], [0.55]),
             (["Sigmoid", "ScaledTanh", "Affine"], [0.9, 0.7], [1.1, 0.05])],
}


def _activation_attrs(op, which, directions):
    chosen = ACTIVATION_SETS[op][which]
    if chosen is None:
        return {}
    names, alphas, betas = chosen
    return {"activations": names * directions, "alphas": alphas and alphas * directions,
            "betas": betas and betas * directions}


GRID = list(itertools.product(["RNN", "GRU", "LSTM"], ["forward", "reverse", "bidirectional"], [0, 1],
                              [None, "constant", "input"], [False, True]))


@pytest.mark.parametrize("op,direction,layout,lengths,initial", GRID,
                         ids=["-".join(str(p) for p in g) for g in GRID])
def test_attribute_grid(rng, op, direction, layout, lengths, initial):
    """Every direction x layout x sequence_lens x initial state, each with every combination of
    clip (none or 0.9), activations (defaults and two other sets) and, for LSTM, peepholes."""
    d = 2 if direction == "bidirectional" else 1
    for clip, which, peepholes in itertools.product([None, 0.9], range(3), [False, True] if op == "LSTM" else [False]):
        model, inputs = recurrent_case(rng, op, direction=direction, layout=layout, lengths=lengths, initial=initial,
                                       peepholes=peepholes, clip=clip, x_scale=2.0,
                                       **_activation_attrs(op, which, d))
        check(model, inputs, tolerance(5, 4, 6))


@pytest.mark.parametrize("name,alphas,betas", [
    ("Relu", None, None), ("Tanh", None, None), ("Sigmoid", None, None), ("Affine", [0.7], [0.2]),
    ("LeakyRelu", [0.2], None), ("ThresholdedRelu", [0.1], None), ("ScaledTanh", [1.3], [0.6]),
    ("HardSigmoid", [0.3], [0.6]), ("Elu", [0.6], None), ("Softsign", None, None), ("Softplus", None, None),
    ("LeakyRelu", None, None), ("HardSigmoid", None, None), ("Elu", None, None),
])
def test_each_activation(rng, name, alphas, betas):
    """Each activation ONNX names, with alpha/beta given and with the defaults, in a forward and a
    bidirectional RNN."""
    for direction, count in (("forward", 1), ("bidirectional", 2)):
        model, inputs = recurrent_case(rng, "RNN", direction=direction, activations=[name] * count,
                                       alphas=alphas and alphas * count, betas=betas and betas * count)
        check(model, inputs, tolerance(5, 4, 6))


@pytest.mark.parametrize("name,alpha,beta", [("ThresholdedRelu", 1.0, None), ("Affine", 1.0, 0.0),
                                             ("ScaledTanh", 1.0, 1.0)])
def test_activation_defaults_of_the_onnx_operators(rng, name, alpha, beta):
    """Without activation_alpha/beta these take the defaults of the ONNX operators of their names
    (onnxruntime's recurrent kernels take 0 instead): checked against onnxruntime given them."""
    ours, inputs = recurrent_case(np.random.default_rng(7), "RNN", activations=[name], x_scale=2.0)
    given, _ = recurrent_case(np.random.default_rng(7), "RNN", activations=[name], alphas=[alpha],
                              betas=None if beta is None else [beta], x_scale=2.0)
    compare(converted(ours, inputs), Reference(given), inputs, tolerance(5, 4, 6))


def test_different_activations_per_direction(rng):
    """alpha/beta are consumed in order by the activations that take them, across directions."""
    model, inputs = recurrent_case(rng, "LSTM", direction="bidirectional",
                                   activations=["HardSigmoid", "Tanh", "Softsign", "Sigmoid", "LeakyRelu", "Elu"],
                                   alphas=[0.3, 0.15, 0.5], betas=[0.45], initial=True, lengths="input")
    check(model, inputs, tolerance(5, 4, 6))
    model, inputs = recurrent_case(rng, "GRU", direction="bidirectional",
                                   activations=["Elu", "HardSigmoid", "LeakyRelu", "ScaledTanh"],
                                   alphas=[0.5, 0.3, 0.1, 1.2], betas=[0.4, 0.8])
    check(model, inputs, tolerance(5, 4, 6))


@pytest.mark.parametrize("linear_before_reset", [0, 1])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_gru_linear_before_reset(rng, linear_before_reset, direction):
    for lengths, layout, clip in [(None, 0, None), ("input", 1, 0.8), ("constant", 0, None)]:
        model, inputs = recurrent_case(rng, "GRU", direction=direction, layout=layout, lengths=lengths, initial=True,
                                       clip=clip, linear_before_reset=linear_before_reset, x_scale=2.0)
        check(model, inputs, tolerance(5, 4, 6))


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_lstm_input_forget(rng, direction):
    for peepholes, lengths in [(False, None), (True, "input")]:
        model, inputs = recurrent_case(rng, "LSTM", direction=direction, input_forget=1, peepholes=peepholes,
                                       lengths=lengths, initial=True)
        check(model, inputs, tolerance(5, 4, 6))


@pytest.mark.parametrize("op,outputs", [
    ("RNN", ["Y"]), ("RNN", ["", "Y_h"]), ("GRU", ["", "Y_h"]), ("GRU", ["Y"]),
    ("LSTM", ["Y"]), ("LSTM", ["", "Y_h"]), ("LSTM", ["", "", "Y_c"]), ("LSTM", ["Y", "", "Y_c"]),
])
def test_omitted_outputs(rng, op, outputs):
    model, inputs = recurrent_case(rng, op, direction="bidirectional", outputs=outputs, lengths="input", initial=True)
    check(model, inputs, tolerance(5, 4, 6))


@pytest.mark.parametrize("opset", [7, 14, 22])
@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_opsets(rng, op, opset):
    """Opset 7 has no layout attribute; 14 and 22 take it (here batch-first)."""
    model, inputs = recurrent_case(rng, op, direction="bidirectional", opset=opset, layout=1 if opset >= 14 else 0,
                                   lengths="input", initial=True)
    check(model, inputs, tolerance(5, 4, 6))


def test_lengths_given_at_run_time_change_between_runs(rng):
    """The step masks read sequence_lens when the model runs: other lengths, same shapes, same
    module; an empty sequence gives zero outputs and zero final states."""
    model, inputs = recurrent_case(rng, "LSTM", direction="bidirectional", lengths="input", initial=True, batch=4)
    reference = Reference(model)
    module = converted(model, inputs)
    for lens in ([5, 5, 5, 5], [1, 2, 3, 4], [4, 1, 5, 2], [0, 3, 0, 5]):
        inputs["L"] = np.array(lens, np.int32)
        compare(module, reference, inputs, tolerance(5, 4, 6))


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_float64(rng, op):
    """onnxruntime's kernels take float32 only: the float64 model's outputs must agree with its
    float32 results within float32's tolerance."""
    model, inputs = recurrent_case(rng, op, direction="bidirectional", initial=True, lengths="input")
    expected = Reference(model).run(inputs)
    doubled = {k: v.astype(np.float64) if v.dtype == np.float32 else v for k, v in inputs.items()}
    initializers = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    initializers = {k: v.astype(np.float64) if v.dtype == np.float32 else v for k, v in initializers.items()}
    node = model.graph.node[0]
    model64 = make_model([node], doubled, list(node.output), initializers)
    got = converted(model64, doubled).forward(*doubled.values())
    for g, e in zip(got, expected):
        assert g.dtype == np.float64
        np.testing.assert_allclose(g.numpy(), e, rtol=0, atol=tolerance(5, 4, 6))


def test_sequence_length_of_each_call(rng):
    """A model whose sequence axis is free is built for the length of each call's X."""
    model, inputs = recurrent_case(rng, "GRU", direction="bidirectional", initial=True, lengths="input")
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "steps"
    module, reference = converted(model, inputs), Reference(model)
    for steps in (5, 9, 1, 3):
        inputs["X"] = rng.uniform(-1, 1, (steps, 3, 4)).astype(np.float32)
        inputs["L"] = np.minimum(inputs["L"], steps).astype(np.int32)
        compare(module, reference, inputs, tolerance(steps, 4, 6))


def test_saved_model_file(rng, tmp_path):
    """The node's attributes (activation names, alpha/beta lists, clip) survive mnnpy's model file."""
    model, inputs = recurrent_case(rng, "LSTM", direction="bidirectional", initial=True, lengths="input",
                                   peepholes=True, clip=0.9, activations=["HardSigmoid", "Tanh", "Softsign"] * 2,
                                   alphas=[0.3, 0.35], betas=[0.5, 0.45])
    path = tmp_path / "lstm.mnnpy"
    convert.from_onnx(model.SerializeToString(), output=str(path))
    module = nn.load_module_from_file(str(path), list(inputs), ["Y", "Y_h", "Y_c"])
    compare(module, Reference(model), inputs, tolerance(5, 4, 6))


def test_weights_given_at_run_time(rng):
    """W, R and B as model inputs rather than initializers."""
    model, inputs = recurrent_case(rng, "GRU", direction="bidirectional", initial=True, lengths="input",
                                   linear_before_reset=1)
    weights_given = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    inputs = {**inputs, **weights_given}
    model = make_model(list(model.graph.node), inputs, ["Y", "Y_h"])
    check(model, inputs, tolerance(5, 4, 6))


def test_no_bias_and_longer_sequence(rng):
    """Without B, and over 40 steps with a wider state."""
    for op in ("RNN", "GRU", "LSTM"):
        model, inputs = recurrent_case(rng, op, direction="bidirectional", steps=40, hidden=24, input_size=10,
                                       lengths="input", initial=True)
        node = model.graph.node[0]
        node.input[3] = ""
        check(model, inputs, tolerance(40, 10, 24))


@pytest.mark.parametrize("hidden", [64, 128])
def test_voice_activity_detector_state_in_and_out(rng, hidden):
    """Batch 1, one chunk of a few steps per call, the state (initial_h, initial_c) passed in and
    Y_h/Y_c passed back into the next call, as streaming voice-activity detectors run it."""
    input_size, steps = 32, 2
    w = weights(rng, "LSTM", 1, input_size, hidden)
    node = h.make_node("LSTM", ["X", "W", "R", "B", "", "H0", "C0"], ["Y", "Y_h", "Y_c"], hidden_size=hidden)
    inputs = {"X": np.zeros((steps, 1, input_size), np.float32), "H0": np.zeros((1, 1, hidden), np.float32),
              "C0": np.zeros((1, 1, hidden), np.float32)}
    model = make_model([node], inputs, ["Y", "Y_h", "Y_c"], w)
    reference = Reference(model)
    module = converted(model, inputs)
    h_state = c_state = np.zeros((1, 1, hidden), np.float32)
    for chunk in range(6):
        inputs = {"X": rng.uniform(-1, 1, (steps, 1, input_size)).astype(np.float32), "H0": h_state, "C0": c_state}
        _, y_h, y_c = compare(module, reference, inputs, tolerance(steps * (chunk + 1), input_size, hidden))
        # Our state goes on (onnxruntime gets the same state, so each chunk is checked on its own).
        h_state, c_state = y_h.numpy(), y_c.numpy()


def test_torch_two_layer_bidirectional_lstm(rng, tmp_path):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(input_size=8, hidden_size=16, num_layers=2, bidirectional=True).eval()
    x = torch.from_numpy(rng.uniform(-1, 1, (7, 2, 8)).astype(np.float32))
    h0 = torch.from_numpy(rng.uniform(-1, 1, (4, 2, 16)).astype(np.float32))
    c0 = torch.from_numpy(rng.uniform(-1, 1, (4, 2, 16)).astype(np.float32))
    path = tmp_path / "lstm.onnx"
    with warnings.catch_warnings():  # the TorchScript exporter's deprecation and tracing notes
        warnings.simplefilter("ignore")
        # The torch.export-based exporter needs onnxscript; the TorchScript one writes LSTM nodes.
        torch.onnx.export(lstm, (x, (h0, c0)), str(path), input_names=["x", "h0", "c0"],
                          output_names=["y", "h", "c"], opset_version=14, dynamo=False)
    model = onnx.load(str(path))
    assert sum(n.op_type == "LSTM" for n in model.graph.node) == 2
    inputs = {"x": x.numpy(), "h0": h0.numpy(), "c0": c0.numpy()}
    got = check(model, inputs, 2 * tolerance(7, 32, 16))
    with torch.no_grad():
        y, (hn, cn) = lstm(x, (h0, c0))
    for g, e in zip(got, (y, hn, cn)):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=0, atol=2 * tolerance(7, 32, 16))


# ------------------------------------------------------------------ bad nodes
def _bad(rng, op="LSTM", **changes):
    model, inputs = recurrent_case(rng, op, direction="forward")
    node = model.graph.node[0]
    for key, value in changes.items():
        if key == "W":
            model.graph.initializer[0].CopyFrom(numpy_helper.from_array(value, "W"))
        else:
            for a in list(node.attribute):
                if a.name == key:
                    node.attribute.remove(a)
            node.attribute.append(h.make_attribute(key, value))
    return model, inputs


@pytest.mark.parametrize("change,error,message", [
    ({"W": np.zeros((1, 16, 5), np.float32)}, ValueError, r"W must have shape \(1, 24, 4\)"),
    ({"W": np.zeros((1, 20, 4), np.float32)}, ValueError, r"W must have shape"),
    ({"activations": ["Sigmoid", "Gelu", "Tanh"]}, UnsupportedOperator, r"activation 'Gelu' is not supported"),
    ({"activations": ["Sigmoid", "Tanh"]}, ValueError, r"'activations' needs 3 names"),
    ({"hidden_size": 5}, ValueError, r"hidden_size is 5 but R's shape"),
    ({"direction": "sideways"}, ValueError, r"direction 'sideways'"),
    ({"layout": 2}, ValueError, r"layout must be 0 or 1"),
    ({"clip": -1.0}, ValueError, r"clip must be positive"),
])
def test_bad_nodes(rng, change, error, message):
    model, inputs = _bad(rng, **change)
    with pytest.raises(error, match=message) as info:
        converted(model, inputs).forward(*inputs.values())
    assert "LSTM" in str(info.value)


def test_bad_state_and_lengths(rng):
    model, inputs = recurrent_case(rng, "GRU", initial=True)
    inputs["H0"] = np.zeros((1, 2, 6), np.float32)
    model = make_model(list(model.graph.node), inputs, ["Y", "Y_h"],
                       {i.name: numpy_helper.to_array(i) for i in model.graph.initializer})
    with pytest.raises(ValueError, match=r"initial_h must have shape \(1, 3, 6\)"):
        converted(model, inputs).forward(*inputs.values())
    model, inputs = recurrent_case(rng, "RNN", lengths="constant")
    model.graph.initializer[3].CopyFrom(numpy_helper.from_array(np.array([9, 1, 2], np.int32), "L"))
    with pytest.raises(ValueError, match=r"sequence_lens must lie in \[0, 5\]"):
        converted(model, inputs).forward(*inputs.values())
    model, inputs = recurrent_case(rng, "LSTM")
    model.graph.initializer[1].CopyFrom(numpy_helper.from_array(numpy_helper.to_array(model.graph.initializer[1])
                                                                .astype(np.float64), "R"))
    with pytest.raises(TypeError, match=r"R must have X's type float32, got float64"):
        converted(model, inputs).forward(*inputs.values())
    model, inputs = recurrent_case(rng, "RNN", lengths="constant")
    model.graph.initializer[3].CopyFrom(numpy_helper.from_array(np.array([5.0, 1.0, 2.0], np.float32), "L"))
    with pytest.raises(TypeError, match=r"sequence_lens must be integers"):
        converted(model, inputs).forward(*inputs.values())


def test_onnx_backend_node_cases():
    """The ONNX package's own node cases of these operators all pass."""
    from onnx_node_suite import collect_cases, run_case
    cases = [c for c in collect_cases() if c.name.startswith(("test_rnn", "test_gru", "test_lstm", "test_simple_rnn"))]
    assert len(cases) >= 18
    failures = {c.name: r for c in cases if (r := run_case(c)) is not None}
    assert not failures, failures
