"""MNN's nn.loss, nn.compress, optim names, Module and Var members, cv builders returning Vars,
and nn.create_runtime_manager.

References: the losses and the fake quantization are recomputed here in NumPy (float64 for the
losses: float32 sums of a few terms agree within 1e-5 relative), gradients against PyTorch,
cv builders against OpenCV; the semantics follow MNN 3.6.1, checked side by side when these
were written (losses, Var edits, Module members).
"""
import cv2
import numpy as np
import pytest
import torch

import mnnpy
import mnnpy as MNN
import mnnpy.cv as mcv
import mnnpy.expr as F
from mnnpy import nn, optim

# ---------------------------------------------------------------------------- nn.loss


def _loss_reference(name, p, t):
    p, t = p.astype(np.float64), t.astype(np.float64)
    terms = {"cross_entropy": -t * np.log(p), "kl": p * np.log(p / t), "mse": (p - t) ** 2,
             "mae": np.abs(p - t), "hinge": np.maximum(0.0, 1.0 - p * t)}[name]
    if terms.ndim >= 2:
        terms = terms.sum(axis=1)
    return terms.mean()


@pytest.mark.parametrize("shape", [(5, 4), (7,), (2, 3, 4)])
@pytest.mark.parametrize("name", ["cross_entropy", "kl", "mse", "mae", "hinge"])
def test_losses_match_mnn_formulas(name, shape):
    rng = np.random.default_rng(0)
    p = rng.uniform(0.05, 1.0, shape).astype(np.float32)
    t = rng.uniform(0.05, 1.0, shape).astype(np.float32)
    ours = getattr(nn.loss, name)(F.const(p), F.const(t))
    assert ours.shape == () and ours.dtype == np.float32
    np.testing.assert_allclose(float(ours), _loss_reference(name, p, t), rtol=1e-5)
    # NumPy arrays are accepted as MNN's examples pass them.
    np.testing.assert_allclose(float(getattr(nn.loss, name)(p, t)), float(ours), rtol=1e-6)


def test_cross_entropy_with_one_hot_targets_and_its_gradient():
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((6, 5)).astype(np.float32)
    labels = rng.integers(0, 5, 6)
    onehot = np.eye(5, dtype=np.float32)[labels]
    x = nn.Parameter(logits)
    loss = nn.loss.cross_entropy(F.softmax(x, 1), F.const(onehot))
    (grad,) = F.grad(loss, [x])
    xt = torch.tensor(logits, requires_grad=True)
    ref = torch.nn.functional.cross_entropy(xt, torch.tensor(labels))  # same loss: mean of -log softmax
    ref.backward()
    np.testing.assert_allclose(float(loss), float(ref.detach()), rtol=1e-5)
    np.testing.assert_allclose(grad.read(), xt.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_kl_with_one_hot_targets_is_infinite_as_in_mnn():
    p = np.full((2, 3), 1 / 3, np.float32)
    assert np.isinf(float(nn.loss.kl(p, np.eye(3, dtype=np.float32)[[0, 1]])))


def test_loss_bad_inputs():
    with pytest.raises(TypeError, match="floating-point"):
        nn.loss.mse(F.const(np.arange(4, dtype=np.int32)), np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="do not broadcast"):
        nn.loss.mae(np.zeros((2, 3), np.float32), np.zeros((2, 4), np.float32))


# ---------------------------------------------------------------------------- nn.compress


def _np_fake_feature(x, lo, hi):
    """MNN's 8-bit feature fake quantization in float32, as compress does it."""
    f = np.float32
    lo, hi = f(min(lo, 0.0)), f(max(hi, 0.0))
    scale = max(f((hi - lo) / f(254.0)), f(1e-12))
    zero = np.rint(f(-lo / scale) - f(127.0))
    levels = np.clip(np.rint(x / scale + zero), -127, 127)
    nudged = (min(f((f(-127.0) - zero) * scale), f(0.0)), max(f((f(127.0) - zero) * scale), f(0.0)))
    return (scale * (levels - zero)).astype(np.float32), scale, nudged


def _np_fake_weight(w, bits):
    limit = np.float32(2 ** (bits - 1) - 1)
    axes = tuple(range(1, w.ndim))
    scale = np.maximum(np.abs(w).max(axis=axes, keepdims=True), np.float32(1e-6)) * np.float32(1.0 / limit)
    return (np.clip(np.rint(w / scale), -limit, limit) * scale).astype(np.float32), scale


def _within_one_step(ours, ref, step):
    # A value at a rounding tie may land on the neighbouring level when x / scale differs by an
    # ulp between the two computations: at most one quantization step, and rarely.
    diff = np.abs(ours - ref)
    assert np.all(diff <= step * 1.001 + 1e-6), f"largest difference {diff.max()} exceeds one step {step}"
    assert np.mean(diff > 1e-5 * max(1.0, np.abs(ref).max())) < 0.02


@pytest.mark.parametrize("bits", [8, 4])
def test_train_quant_linear_forward_matches_numpy_fake_quant(bits):
    rng = np.random.default_rng(2)
    layer = nn.linear(6, 5)
    assert nn.compress.train_quant(layer, bits) is True
    x = rng.standard_normal((4, 6)).astype(np.float32)
    y = layer(F.const(x)).read()
    w, b = layer.weight.read(), layer.bias.read()
    xq, _, _ = _np_fake_feature(x, x.min(), x.max())
    wq, _ = _np_fake_weight(w, bits)
    pre = xq @ wq.T + b
    ref, out_scale, _ = _np_fake_feature(pre, pre.min(), pre.max())
    _within_one_step(y, ref, out_scale)


def test_train_quant_gradient_is_straight_through():
    rng = np.random.default_rng(3)
    layer = nn.conv(2, 3, 3)
    nn.compress.train_quant(layer)
    x = rng.standard_normal((2, 2, 5, 5)).astype(np.float32)
    seed = rng.standard_normal((2, 3, 3, 3)).astype(np.float32)
    y = layer(F.const(x))
    (g_weight,) = F.grad([y], [layer.weight], output_grads=[F.const(seed)])
    # Straight through: the gradient of the float weight is that of the fake-quantized weight
    # applied to the fake-quantized input.
    xq, _, _ = _np_fake_feature(x, x.min(), x.max())
    wq, _ = _np_fake_weight(layer.weight.read(), 8)
    wt = torch.tensor(wq, requires_grad=True)
    torch.nn.functional.conv2d(torch.tensor(xq), wt, torch.tensor(layer.bias.read())).backward(torch.tensor(seed))
    np.testing.assert_allclose(g_weight.read(), wt.grad.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("method", [nn.compress.MOVING_AVERAGE, nn.compress.MAXIMUM])
def test_train_quant_running_ranges_and_evaluation(method):
    rng = np.random.default_rng(4)
    layer = nn.linear(3, 2)
    nn.compress.train_quant(layer, 8, nn.compress.PER_TENSOR, method)
    opt = optim.SGD(layer, 0.0)  # no weight change: only the ranges move
    batches = [rng.standard_normal((8, 3)).astype(np.float32) * s for s in (1.0, 3.0)]
    expected = None
    for x in batches:
        opt.step(F.reduce_sum(layer(F.const(x))))
        _, _, (lo, hi) = _np_fake_feature(x, x.min(), x.max())
        if expected is None:
            expected = (lo, hi)  # the first step takes the batch's range
        elif method == nn.compress.MAXIMUM:
            expected = (min(expected[0], lo), max(expected[1], hi))
        else:
            expected = (expected[0] * 0.99 + lo * 0.01, expected[1] * 0.99 + hi * 0.01)
    np.testing.assert_allclose([float(layer.input_min), float(layer.input_max)], expected, rtol=1e-5)
    # Evaluation quantizes the input over the running range.
    layer.train(False)
    x = rng.standard_normal((5, 3)).astype(np.float32) * 2
    xq, _, _ = _np_fake_feature(x, *expected)
    wq, _ = _np_fake_weight(layer.weight.read(), 8)
    pre = xq @ wq.T + layer.bias.read()
    ref, step, _ = _np_fake_feature(pre, float(layer.output_min), float(layer.output_max))
    _within_one_step(layer(F.const(x)).read(), ref, step)


class _TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.conv(1, 4, 3, padding=(1, 1))
        self.fc = nn.linear(4 * 6 * 6, 2)

    def forward(self, x):
        x = F.relu(self.conv(x))
        return self.fc(F.reshape(x, [x.shape[0], -1]))


def test_train_quant_model_trains():
    rng = np.random.default_rng(5)
    nn.manual_seed(5)
    net = _TinyNet()
    nn.compress.train_quant(net, 8)
    assert type(net.conv).__name__ == "QuantizedConv2d" and type(net.fc).__name__ == "QuantizedLinear"
    x = rng.standard_normal((16, 1, 6, 6)).astype(np.float32)
    labels = (x[:, 0, :3].sum(axis=(1, 2)) > x[:, 0, 3:].sum(axis=(1, 2))).astype(np.int64)
    onehot = F.const(np.eye(2, dtype=np.float32)[labels])
    opt = optim.SGD(net, 0.05, 0.9)
    losses = [opt.step(nn.loss.cross_entropy(F.softmax(net(F.const(x)), 1), onehot)) for _ in range(40)]
    assert losses[-1] < 0.5 * losses[0], losses
    assert {"conv.input_min", "fc.output_max"} <= set(net.state_dict())


def test_train_quant_bad_arguments():
    with pytest.raises(TypeError, match="nn.Module"):
        nn.compress.train_quant("model")
    with pytest.raises(ValueError, match="quant_bits"):
        nn.compress.train_quant(nn.linear(2, 2), 1)
    with pytest.raises(ValueError, match="scale_update_method"):
        nn.compress.train_quant(nn.linear(2, 2), 8, nn.compress.PER_TENSOR, 7)


# ---------------------------------------------------------------------------- optim


def test_optim_regularization_names_and_properties():
    assert [int(m) for m in (optim.L1, optim.L2, optim.L1L2)] == [0, 1, 2]
    assert optim.Regularization_Method.L1 is optim.L1
    net = nn.linear(3, 2)
    sgd = optim.SGD(net, 0.1, 0.9, 0.01, optim.L1)
    assert (sgd.learning_rate, sgd.momentum, sgd.weight_decay) == (0.1, 0.9, 0.01)
    assert sgd.regularization_method is optim.L1
    sgd.momentum, sgd.weight_decay, sgd.regularization_method = 0.5, 0.02, optim.L2
    assert sgd.param_groups[0]["momentum"] == 0.5 and sgd.param_groups[0]["regularization_method"] == "L2"
    with pytest.raises(AttributeError, match="momentum2"):
        sgd.momentum2
    adam = optim.ADAM(net, learning_rate=0.01)
    assert (adam.lr, adam.momentum, adam.momentum2, adam.eps) == (0.01, 0.9, 0.999, 1e-8)
    adam.momentum2 = 0.99
    assert adam.param_groups[0]["betas"] == (0.9, 0.99)
    with pytest.raises(ValueError, match="momentum2"):
        adam.momentum2 = 1.5


@pytest.mark.parametrize("method", ["L1", "L2", "L1L2"])
def test_sgd_weight_decay_penalties(method):
    rng = np.random.default_rng(6)
    w0 = rng.standard_normal((3, 4)).astype(np.float32)
    target = rng.standard_normal((3, 4)).astype(np.float32)
    p = nn.Parameter(w0)
    sgd = optim.SGD([p], learning_rate=0.1, momentum=0.0, weight_decay=0.05,
                    regularization_method=getattr(optim, method))
    sgd.step(F.reduce_sum(F.square(p - F.const(target))))
    grad = 2 * (w0 - target)
    penalty = {"L1": np.sign(w0), "L2": w0, "L1L2": w0 + np.sign(w0)}[method]
    np.testing.assert_allclose(p.read(), w0 - 0.1 * (grad + 0.05 * penalty), rtol=1e-6, atol=1e-6)


def test_grad_only_optimizer():
    x = nn.Parameter(np.float32([1.0, 2.0, 3.0]))
    y = F.multiply(x, x)
    params, grads = optim.Grad().grad([y], [F.const(np.float32([1.0, 0.5, -1.0]))], [x])
    assert params[0] is x
    np.testing.assert_array_equal(grads[0].read(), np.float32([2.0, 2.0, -6.0]))


# ---------------------------------------------------------------------------- Module members


def test_module_clone_is_independent():
    rng = np.random.default_rng(7)
    net = _TinyNet()
    twin = net.clone()
    assert type(twin) is _TinyNet and twin.conv is not net.conv
    for (name, a), (_, b) in zip(net.named_parameters(), twin.named_parameters()):
        assert a is not b and np.array_equal(a.read(), b.read()), name
    before = {k: v.copy() for k, v in net.state_dict().items()}
    x = F.const(rng.standard_normal((2, 1, 6, 6)).astype(np.float32))
    np.testing.assert_array_equal(twin(x).read(), net(x).read())
    optim.SGD(twin, 0.1).step(F.reduce_sum(F.square(twin(x))))
    assert all(np.array_equal(v, net.state_dict()[k]) for k, v in before.items())
    assert not np.array_equal(twin.fc.weight.read(), net.fc.weight.read())


def test_module_mnn_members():
    net = _TinyNet()
    own = len(net._params)
    extra = F.const(np.float32([1.0, 2.0]))
    assert net._add_parameter(extra) == own
    assert any(p is extra for p in net.parameters)
    child = nn.linear(2, 2)
    net._register_submodules([child])
    assert child in net.children()
    net.set_name("tiny")
    assert net.name == "tiny"
    net.train(False)
    assert net.is_training is False and net.conv.is_training is False
    with pytest.raises(RuntimeError, match="not loaded from a model file"):
        net.get_info()
    with pytest.raises(TypeError):
        net._add_parameter(np.zeros(2))


def _tiny_onnx(path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    weight = helper.make_tensor("W", TensorProto.FLOAT, [4, 3], np.arange(12, dtype=np.float32) / 10)
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])], [weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="tests")
    onnx.save(model, str(path))
    return np.arange(12, dtype=np.float32).reshape(4, 3) / 10


def test_loaded_module_get_info_clone_and_clear_cache(tmp_path):
    weight = _tiny_onnx(tmp_path / "tiny.onnx")
    net = nn.load_module_from_file(str(tmp_path / "tiny.onnx"), ["x"], ["y"])
    info = net.get_info()
    assert (info["inputNames"], info["outputNames"], info["bizCode"]) == (["x"], ["y"], "tests")
    assert [(v.shape, v.dtype, v.name) for v in info["inputs"]] == [((0, 4), np.float32, "x")]
    x = np.random.default_rng(8).standard_normal((2, 4)).astype(np.float32)
    first = net.forward(x).read()
    np.testing.assert_allclose(first, x @ weight, rtol=1e-6, atol=1e-6)
    twin = net.clone()
    assert twin._instances == {} and twin.graph is net.graph
    np.testing.assert_array_equal(twin.forward(x).read(), first)
    assert net._instances
    net.clear_cache()
    assert net._instances == {}
    np.testing.assert_array_equal(net.forward(x).read(), first)


# ---------------------------------------------------------------------------- Var members


def test_fix_as_placeholder_and_trainable():
    c = F.const(np.float32([1.0, 2.0]))
    built_before = c * 3
    c.fix_as_placeholder()
    assert c.is_placeholder
    c.write(np.float32([5.0, 6.0]))
    np.testing.assert_array_equal(built_before.read(), [3.0, 6.0])  # as in MNN: built earlier, kept
    np.testing.assert_array_equal((c * 3).read(), [15.0, 18.0])
    w = F.const(np.float32([0.0, 0.0]))
    w.fix_as_trainable()
    opt = optim.SGD([w], 0.25)
    opt.step(F.reduce_sum(F.square(w - F.const(np.float32([1.0, -1.0])))))
    np.testing.assert_allclose(w.read(), [0.5, -0.5])
    with pytest.raises(TypeError, match="floating-point"):
        F.const(np.int32([1])).fix_as_trainable()


def test_var_graph_edits():
    a, b = F.placeholder([2]), F.placeholder([2])
    a.write(np.float32([1.0, 1.0]))
    b.write(np.float32([2.0, 3.0]))
    s = a + b
    s.set_inputs([b, b])
    np.testing.assert_array_equal(s.read(), [4.0, 6.0])
    with pytest.raises(ValueError, match="no inputs"):
        a.set_inputs([b])
    x = F.const(np.float32([1.0, 2.0]))
    x.replace(F.const(np.float32([9.0, 8.0])))
    np.testing.assert_array_equal(x.read(), [9.0, 8.0])
    p = F.placeholder([2])
    p.copy_from(F.const(np.float32([7.0, 8.0, 9.0])))
    assert p.is_placeholder and p.shape == (3,)
    np.testing.assert_array_equal(p.read(), [7.0, 8.0, 9.0])
    p.resize([3, 4])
    assert p.shape == (3, 4) and not p.is_evaluated
    q = F.placeholder([1, 3, 2, 2])
    q.reorder(F.NHWC)
    assert q.data_format == "NHWC" and q.shape == (1, 3, 2, 2)
    y = F.const(np.float32([1, 2, 3, 4]), [1, 1, 2, 2])
    y.set_order(F.NHWC)
    assert y.data_format == "NHWC"
    np.testing.assert_array_equal(y.read().ravel(), [1, 2, 3, 4])
    z = y + 1
    assert z.sync() is None and z.is_evaluated and z.valid
    with pytest.raises(ValueError, match="only a placeholder"):
        y.resize([4])


def test_var_argpartition():
    values = np.random.default_rng(9).permutation(10).astype(np.float32)
    order = F.const(values).argpartition(3).read()
    part = values[order]
    assert part[3] == np.partition(values, 3)[3] and part[:3].max() <= part[3] <= part[4:].min()


# ---------------------------------------------------------------------------- cv builders


def test_cv_builders_return_vars_with_opencv_values():
    src = np.float32([[0, 0], [4, 0], [0, 3]])
    dst = np.float32([[1, 1], [5, 2], [0, 4]])
    cases = [("getGaussianKernel", (7, 1.3)), ("getGaborKernel", ((5, 5), 1.0, 0.3, 4.0, 0.5)),
             ("getStructuringElement", (cv2.MORPH_ELLIPSE, (5, 5))), ("getRotationMatrix2D", ((3.0, 2.0), 30, 1.2)),
             ("getAffineTransform", (src, dst)), ("invertAffineTransform", (np.float64([[2, 0, 1], [0, 3, 2]]),)),
             ("boxPoints", (((4.0, 3.0), (2.0, 5.0), 30.0),))]
    for name, args in cases:
        ours, ref = getattr(mcv, name)(*args), getattr(cv2, name)(*args)
        assert isinstance(ours, mnnpy.Var), name
        assert ours.dtype == ref.dtype and ours.shape == ref.shape, name
        np.testing.assert_allclose(ours.read(), ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max(), err_msg=name)
    kx, ky = mcv.getDerivKernels(1, 0, 3)
    assert isinstance(kx, mnnpy.Var) and isinstance(ky, mnnpy.Var)


def test_cv_builder_vars_work_as_opencv_arrays():
    image = np.random.default_rng(10).integers(0, 256, (20, 30, 3), dtype=np.uint8)
    M = mcv.getRotationMatrix2D((15.0, 10.0), 20, 1.0)
    M[0, 2] += 2.0  # OpenCV code shifts the matrix in place
    ref_m = cv2.getRotationMatrix2D((15.0, 10.0), 20, 1.0)
    ref_m[0, 2] += 2.0
    np.testing.assert_array_equal(np.asarray(M), ref_m)
    np.testing.assert_array_equal(mcv.warpAffine(image, M, (30, 20)).read(), cv2.warpAffine(image, ref_m, (30, 20)))
    kernel = mcv.getGaussianKernel(5, 1.0)
    np.testing.assert_allclose((kernel @ kernel.T).read(), cv2.getGaussianKernel(5, 1.0) @ cv2.getGaussianKernel(5, 1.0).T,
                               rtol=1e-14)


# ---------------------------------------------------------------------------- runtime manager


def test_runtime_manager_config_and_members(tmp_path):
    rt = nn.create_runtime_manager(({"backend": 0, "numThread": 3, "precision": "low", "memory": "low",
                                     "power": F.PowerMode.High},))
    assert (rt.backend, rt.thread_num, rt.precision) == ("cpu", 3, "low")
    assert rt.memory_mode is F.MemoryMode.Low and rt.power_mode is F.PowerMode.High
    rt.set_cache(tmp_path / "cache")
    rt.update_cache()
    rt.set_mode(9)
    rt.set_hint(0, 20)
    assert rt.cache_path == str(tmp_path / "cache") and rt.modes == [9] and rt.hints == {0: 20}
    with pytest.raises(FileNotFoundError):
        rt.set_external(tmp_path / "missing.bin")
    with pytest.raises(ValueError, match="unknown config keys"):
        nn.create_runtime_manager({"numThreads": 2})
    with pytest.raises(ValueError, match="memory"):
        nn.create_runtime_manager({"memory": "tiny"})
    with pytest.raises(TypeError, match="set_hint"):
        rt.set_hint("tune", 1)


def test_module_calls_run_with_their_thread_count(tmp_path, monkeypatch):
    _tiny_onnx(tmp_path / "tiny.onnx")
    x = np.ones((2, 4), np.float32)
    original = mnnpy.get_num_threads()
    seen = []
    real_set = mnnpy.set_num_threads

    def recording_set(n):
        real_set(n)
        seen.append(n)
    monkeypatch.setattr(mnnpy, "set_num_threads", recording_set)
    want = original + 1
    rt = nn.create_runtime_manager({"numThread": want})
    nn.load_module_from_file(str(tmp_path / "tiny.onnx"), ["x"], ["y"], runtime_manager=rt).forward(x)
    assert seen == [want, original] and mnnpy.get_num_threads() == original
    seen.clear()
    nn.load_module_from_file(str(tmp_path / "tiny.onnx"), ["x"], ["y"], thread_num=want).forward(x)
    assert seen == [want, original]
    seen.clear()
    nn.load_module_from_file(str(tmp_path / "tiny.onnx"), ["x"], ["y"]).forward(x)
    assert seen == []  # no count given: the process's


def test_sgd_default_momentum_follows_the_calling_style():
    """MNN's SGD(module, lr) has momentum 0.9; PyTorch's SGD(parameters, lr) has none."""
    from mnnpy import nn, optim
    net = nn.Linear(3, 2)
    assert optim.SGD(net, 0.1).momentum == pytest.approx(0.9)
    assert optim.SGD(net.parameters(), lr=0.1).momentum == 0.0
    assert optim.SGD(net, 0.1, 0.0).momentum == 0.0
