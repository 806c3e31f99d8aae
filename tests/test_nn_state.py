"""Module state: parameters, buffers, freezing, train/eval modes, pending buffer updates,
state_dict / save / load round trips, planned training steps against PyTorch, and fine-tuning
an imported (ONNX or mnnpy model file) network.

Tolerances (float32): round trips are exact; outputs against PyTorch rtol 1e-4, atol 1e-5;
losses over training steps rtol 1e-4.
"""
import warnings

import numpy as np
import pytest
import torch

from mnnpy import _core
from mnnpy import expr as F
from mnnpy import nn
from mnnpy.nn import functional as NF


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(4 * 4 * 4, 3))

    def forward(self, x):
        return self.head(F.relu(self.bn(self.conv(x))))


class TorchBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
        self.head = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(4 * 4 * 4, 3))

    def forward(self, x):
        return self.head(torch.relu(self.bn(self.conv(x))))


def _x(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def sgd_step(module, loss, lr):
    """A minimal SGD update following the training protocol: loss, new parameters and pending
    buffer updates computed in one plan, then handed to the placeholders."""
    params = module.trainable_parameters()
    grads = F.grad(loss, params)
    updates = module.pending_updates()
    news = [F.subtract(p, F.multiply(g, F.const(np.float32(lr)))) for p, g in zip(params, grads)]
    values = _core.evaluate_as_constants([loss] + news + [v for _, v in updates])
    for p, v in zip(params + [b for b, _ in updates], values[1:]):
        _core.share_value(p, v)
    return float(values[0].read())


def test_parameter_and_buffer_are_placeholders_holding_copies(rng):
    a = _x(rng, 3, 2)
    p = nn.Parameter(a)
    a[0, 0] = 100.0
    assert p.is_placeholder and p.dtype == np.float32 and p.read()[0, 0] != 100.0
    assert nn.Parameter(np.arange(3)).dtype == np.float32  # integers become float32 parameters
    with pytest.raises(TypeError, match="floating dtype"):
        nn.Parameter(np.arange(3), dtype=np.int32)
    m = nn.Module()
    buf = m.register_buffer("count", np.array(5, np.int64))
    assert buf.is_placeholder and m.count is buf and int(m.count.read()) == 5
    with pytest.raises(ValueError, match="invalid buffer name"):
        m.register_buffer("a.b", np.zeros(1))


def test_traversal_names(rng):
    model = Block()
    assert [n for n, _ in model.named_parameters()] == ["conv.weight", "conv.bias", "bn.weight", "bn.bias",
                                                        "head.1.weight", "head.1.bias"]
    assert [n for n, _ in model.named_buffers()] == ["bn.running_mean", "bn.running_var", "bn.num_batches_tracked"]
    assert [n for n, _ in model.named_modules()] == ["", "conv", "bn", "head", "head.0", "head.1"]
    assert [type(c).__name__ for c in model.children()] == ["Conv2d", "BatchNorm2d", "Sequential"]
    assert len(model.modules()) == 6 and len(model.parameters) == 6
    assert list(model.state_dict()) == list(TorchBlock().state_dict())
    shared = nn.Module()
    shared.a = nn.Linear(2, 2)
    shared.b = shared.a
    assert len(shared.parameters) == 2  # a shared submodule's parameters are listed once


def test_state_dict_round_trip_and_identity(rng):
    model, theirs = Block(), TorchBlock()
    weight_before = model.conv.weight
    result = model.load_state_dict(theirs.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert model.conv.weight is weight_before  # placeholders keep their identity
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(v, theirs.state_dict()[k].numpy())
    state = model.state_dict()
    state["conv.bias"][:] = 7  # a copy: the module is untouched
    assert not np.any(model.conv.bias.read() == 7)
    assert model.state_dict()["bn.num_batches_tracked"].dtype == np.int64


def test_load_state_dict_errors_and_non_strict(rng):
    model = Block()
    state = model.state_dict()
    missing = dict(state)
    del missing["bn.running_var"]
    with pytest.raises(ValueError, match=r"missing keys \['bn.running_var'\]"):
        model.load_state_dict(missing)
    extra = dict(state, **{"head.2.weight": np.zeros(3)})
    with pytest.raises(ValueError, match=r"unexpected keys \['head.2.weight'\]"):
        model.load_state_dict(extra)
    bad = dict(state, **{"conv.weight": np.zeros((4, 2, 5, 5), np.float32)})
    with pytest.raises(ValueError, match=r"parameter 'conv.weight' has shape \(4, 2, 3, 3\), got \(4, 2, 5, 5\)"):
        model.load_state_dict(bad)
    with pytest.raises(ValueError, match="buffer 'bn.running_mean' has shape"):
        model.load_state_dict(dict(state, **{"bn.running_mean": np.zeros(3, np.float32)}))
    result = model.load_state_dict({"conv.bias": np.ones(4), "nothing": np.ones(1)}, strict=False)
    assert "conv.weight" in result.missing_keys and result.unexpected_keys == ["nothing"]
    np.testing.assert_array_equal(model.conv.bias.read(), np.ones(4, np.float32))
    with pytest.raises(TypeError, match="expected a mapping"):
        model.load_state_dict([1, 2])


def test_assigning_arrays_to_parameters_is_refused(rng):
    lin = nn.Linear(2, 3)
    with pytest.raises(TypeError, match="cannot assign ndarray to parameter 'weight'.*nn.Parameter"):
        lin.weight = np.zeros((3, 2), np.float32)
    bn = nn.BatchNorm1d(3)
    with pytest.raises(TypeError, match="cannot assign ndarray to buffer 'running_mean'"):
        bn.running_mean = np.zeros(3)
    lin.weight = nn.Parameter(np.zeros((3, 2)))  # a new parameter is fine
    assert np.all(lin.weight.read() == 0) and lin.parameters[0] is lin.weight


def test_save_and_load_give_identical_values(rng, tmp_path):
    model = Block()
    model(F.const(_x(rng, 2, 2, 4, 4)))
    model.apply_pending_updates()  # running statistics and the batch count move
    path = tmp_path / "block.mnnpy"
    model.save(path)
    other = Block()
    other.load(path)
    for (k, a), (k2, b) in zip(model.state_dict().items(), other.state_dict().items()):
        assert k == k2 and a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    assert int(other.bn.num_batches_tracked.read()) == 1
    saved = F.load_as_dict(str(path))
    assert sorted(saved) == sorted(model.state_dict())
    with pytest.raises(FileNotFoundError, match="no such state file"):
        other.load(tmp_path / "missing.mnnpy")
    with pytest.raises(ValueError, match="missing keys"):
        nn.Linear(2, 2).load(path)


def test_freeze_unfreeze_and_requires_grad(rng):
    model = Block()
    assert len(model.trainable_parameters()) == 6
    model.freeze("conv")
    assert [n for n, _ in model.named_trainable_parameters()] == ["bn.weight", "bn.bias", "head.1.weight",
                                                                  "head.1.bias"]
    model.freeze(model.bn, "head.1.bias")
    assert [n for n, _ in model.named_trainable_parameters()] == ["head.1.weight"]
    model.unfreeze("conv.bias")
    assert [n for n, _ in model.named_trainable_parameters()] == ["conv.bias", "head.1.weight"]
    model.requires_grad_(False)
    assert model.trainable_parameters() == []
    model.requires_grad_(True)
    assert len(model.trainable_parameters()) == 6
    model.head.freeze()
    assert len(model.trainable_parameters()) == 4 and len(model.parameters) == 6
    with pytest.raises(ValueError, match="'tail' is neither a parameter nor a submodule"):
        model.freeze("tail")
    with pytest.raises(TypeError, match="expected parameter or submodule names"):
        model.freeze(3)

    class Fixed(nn.Module):  # constants as parameters (MNN style) are listed but not trained
        def __init__(self):
            super().__init__()
            self.w = F.const(np.ones(2, np.float32))
    assert len(Fixed().parameters) == 1 and Fixed().trainable_parameters() == []


def test_train_eval_modes_are_recursive():
    model = Block()
    assert model.is_training and model.head[1].training  # PyTorch's default
    assert model.eval() is model
    assert not any(m.is_training for m in model.modules())
    model.train()
    assert all(m.is_training for m in model.modules())
    model.bn.training = False  # PyTorch's attribute: this module only
    assert not model.bn.is_training and model.conv.is_training
    seen = []
    model.apply(lambda m: seen.append(type(m).__name__))
    assert seen[-1] == "Block" and len(seen) == 6


def test_pending_updates_protocol(rng):
    model = Block()
    model.eval()
    model(F.const(_x(rng, 2, 2, 4, 4)))
    assert model.pending_updates() == []  # evaluation changes no buffer
    model.train()
    model(F.const(_x(rng, 2, 2, 4, 4)))
    updates = model.pending_updates()
    assert [b is model.bn.running_mean for b, _ in updates] == [True, False, False]
    assert all(b.is_placeholder and isinstance(v, _core.Var) and tuple(v.shape) == tuple(b.shape)
               for b, v in updates)
    assert model.pending_updates() == []
    with pytest.raises(ValueError, match="differs from the buffer"):
        model.bn._record_update(model.bn.running_mean, F.const(np.zeros(3, np.float32)))
    with pytest.raises(TypeError, match="must be a placeholder"):
        model.bn._record_update(F.const(np.zeros(4, np.float32)), F.const(np.zeros(4, np.float32)))


def _torch_copy(model):
    theirs = TorchBlock()
    theirs.load_state_dict({k: torch.from_numpy(v) for k, v in model.state_dict().items()})
    return theirs


def test_sgd_steps_match_torch_and_resume_identically(rng, tmp_path):
    nn.manual_seed(0)
    model = Block()
    theirs = _torch_copy(model)
    opt = torch.optim.SGD(theirs.parameters(), lr=0.1)
    batches = [(_x(rng, 5, 2, 4, 4), rng.integers(0, 3, 5)) for _ in range(8)]
    ours_losses, their_losses = [], []
    for i, (x, y) in enumerate(batches[:4]):
        ours_losses.append(sgd_step(model, NF.cross_entropy(model(F.const(x)), y), 0.1))
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(theirs(torch.from_numpy(x)), torch.from_numpy(y))
        loss.backward()
        opt.step()
        their_losses.append(loss.item())
    np.testing.assert_allclose(ours_losses, their_losses, rtol=1e-4)
    for k, v in model.state_dict().items():
        np.testing.assert_allclose(v, theirs.state_dict()[k].numpy(), rtol=1e-4, atol=1e-5, err_msg=k)
    model.save(tmp_path / "step4.mnnpy")
    resumed = Block()
    resumed.load(tmp_path / "step4.mnnpy")
    a = [sgd_step(model, NF.cross_entropy(model(F.const(x)), y), 0.1) for x, y in batches[4:]]
    b = [sgd_step(resumed, NF.cross_entropy(resumed(F.const(x)), y), 0.1) for x, y in batches[4:]]
    assert a == b  # identical continuations
    for (k, u), v in zip(model.state_dict().items(), resumed.state_dict().values()):
        np.testing.assert_array_equal(u, v, err_msg=k)


def test_a_planned_step_reruns_with_new_batches_and_parameters(rng):
    # The step graph is built and planned once; batch, parameters and buffers are placeholders.
    model = Block()
    theirs = _torch_copy(model)
    opt = torch.optim.SGD(theirs.parameters(), lr=0.05)
    xb, yb = F.placeholder((6, 2, 4, 4)), F.placeholder((6,), dtype=np.int64)
    loss = NF.cross_entropy(model(xb), yb, label_smoothing=0.1)
    params = model.trainable_parameters()
    updates = model.pending_updates()
    news = [p - g * np.float32(0.05) for p, g in zip(params, F.grad(loss, params))]
    plan = None
    for _ in range(4):
        x, y = _x(rng, 6, 2, 4, 4), rng.integers(0, 3, 6).astype(np.int64)
        xb.write(x)
        yb.write(y)
        plan = plan or _core.PlannedGraph([loss] + news + [v for _, v in updates])  # planned with values
        values = plan.run()
        for p, v in zip(params + [b for b, _ in updates], values[1:]):
            _core.share_value(p, v)
        opt.zero_grad()
        expected = torch.nn.functional.cross_entropy(theirs(torch.from_numpy(x)), torch.from_numpy(y),
                                                     label_smoothing=0.1)
        expected.backward()
        opt.step()
        np.testing.assert_allclose(float(values[0].read()), expected.item(), rtol=1e-4)
    for k, v in model.state_dict().items():
        np.testing.assert_allclose(v, theirs.state_dict()[k].numpy(), rtol=1e-4, atol=1e-5, err_msg=k)


# ---------------------------------------------------------------- fine-tuning an imported model
class SmallCNN(torch.nn.Module):
    """A torchvision-style network: features (conv, batch norm, relu, pooling) and a classifier."""

    def __init__(self, classes=10):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(1, 6, 3, padding=1), torch.nn.BatchNorm2d(6), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(6, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1))
        self.flatten = torch.nn.Flatten()
        self.fc = torch.nn.Linear(8, classes)

    def forward(self, x):
        return self.fc(self.flatten(self.features(x)))


@pytest.fixture(scope="module")
def onnx_cnn(tmp_path_factory):
    torch.manual_seed(0)
    model = SmallCNN()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
    model.eval()
    path = str(tmp_path_factory.mktemp("finetune") / "cnn.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.randn(1, 1, 8, 8),), path, dynamo=False, opset_version=17,
                          input_names=["input"], output_names=["output"], dynamic_axes={"input": {0: "N"}})
    return path, model


def _feature_tensor(path):
    """The name of the tensor the classifier (the last Gemm) reads."""
    from mnnpy.convert import from_onnx
    graph, _ = from_onnx(path)
    return next(n for n in reversed(graph.nodes) if n.op == "Gemm").inputs[0]


def test_imported_model_becomes_trainable(onnx_cnn, rng, tmp_path):
    path, reference = onnx_cnn
    x = _x(rng, 3, 1, 8, 8)
    expected = reference(torch.from_numpy(x)).detach().numpy()
    trainable = nn.load_module_from_file(path, for_training=True)
    assert isinstance(trainable, nn.TrainableGraphModule)
    assert all(p.is_placeholder for p in trainable.parameters)
    assert {"fc.weight", "fc.bias"} <= {n for n, _ in trainable.named_parameters()}
    np.testing.assert_allclose(trainable(x).read(), expected, rtol=1e-4, atol=1e-5)
    # Our own model file, and the conversion of a loaded inference module.
    from mnnpy import convert
    ours_path = str(tmp_path / "cnn.mnnpy")
    convert.from_onnx(path, ours_path)
    from_file = nn.load_module_from_file(ours_path, for_training=True)
    np.testing.assert_allclose(from_file(x).read(), expected, rtol=1e-4, atol=1e-5)
    converted = nn.load_module_from_file(ours_path).trainable()
    np.testing.assert_allclose(converted(F.const(x)).read(), expected, rtol=1e-4, atol=1e-5)
    # Gradients reach every weight.
    grads = _core.evaluate_as_constants(F.grad(F.reduce_sum(F.square(trainable(x))), trainable.parameters))
    assert all(np.abs(g.read()).sum() > 0 for g in grads)
    with pytest.raises(ValueError, match="not tensors of the model"):
        nn.load_module_from_file(path, for_training=True, output_names=["nowhere"])


def test_fine_tune_freeze_replace_head_train_save_and_load(onnx_cnn, rng, tmp_path):
    path, _ = onnx_cnn
    feature = _feature_tensor(path)

    def build():
        nn.manual_seed(1)
        body = nn.load_module_from_file(path, for_training=True, output_names=[feature])
        return nn.Sequential(body, nn.Linear(8, 3))
    model = build()
    assert not any("fc." in n for n, _ in model.named_parameters())  # the old head is gone
    model.freeze("0")
    assert [n for n, _ in model.named_trainable_parameters()] == ["1.weight", "1.bias"]
    frozen_before = {k: v for k, v in model.state_dict().items() if k.startswith("0.")}
    x, y = _x(rng, 16, 1, 8, 8), rng.integers(0, 3, 16)
    losses = [sgd_step(model, NF.cross_entropy(model(x), y), 0.5) for _ in range(15)]
    assert losses[-1] < losses[0]
    for k, v in frozen_before.items():
        np.testing.assert_array_equal(model.state_dict()[k], v, err_msg=k)
    # Unfreezing the last convolution trains it too.
    last_conv = [n for n, _ in model.named_parameters() if n.startswith("0.")][-2]
    model.unfreeze(last_conv)
    sgd_step(model, NF.cross_entropy(model(x), y), 0.1)
    assert not np.array_equal(model.state_dict()[last_conv], frozen_before[last_conv])
    model.eval()
    out = model(x).read()
    # State file: a freshly built model loads identical weights and computes the same outputs.
    model.save(tmp_path / "tuned.mnnpy")
    again = build()
    again.load(tmp_path / "tuned.mnnpy")
    again.eval()
    np.testing.assert_array_equal(again(x).read(), out)
    # Inference file: the whole network exported, loaded with load_module_from_file.
    nn.export(model, tmp_path / "tuned_inference.mnnpy", x[:4])
    inference = nn.load_module_from_file(str(tmp_path / "tuned_inference.mnnpy"))
    np.testing.assert_allclose(inference(x[:4]).read(), out[:4], rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="written by nn.export for inference"):
        nn.load_module_from_file(str(tmp_path / "tuned_inference.mnnpy"), for_training=True)
    # The converted body alone as a model file, run in the blocked layout for inference.
    model[0].save_model(tmp_path / "body.mnnpy")
    body = nn.load_module_from_file(str(tmp_path / "body.mnnpy"))
    np.testing.assert_allclose(body(x).read(), model[0](x).read(), rtol=1e-4, atol=1e-5)


def test_export_keeps_training_state_and_modes(rng, tmp_path):
    model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.Dropout(0.5), nn.Linear(4, 2))
    x = _x(rng, 5, 4)
    nn.export(model, tmp_path / "m.mnnpy", x)
    assert model.is_training and model.pending_updates() == []
    assert all(p.is_placeholder for p in model.parameters)
    loaded = nn.load_module_from_file(str(tmp_path / "m.mnnpy"))
    model.eval()
    np.testing.assert_allclose(loaded(x).read(), model(x).read(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="give example inputs"):
        nn.export(model, tmp_path / "n.mnnpy")


def test_parameters_as_mnn_property_and_torch_method(rng):
    """``net.parameters`` is MNN's list and ``net.parameters()`` PyTorch's iterator, over the same
    Vars in PyTorch's order; ``recurse=False`` gives a module's own, as PyTorch does."""
    model, theirs = Block(), TorchBlock()
    listed, called = model.parameters, list(model.parameters())
    assert isinstance(listed, list) and len(listed) == len(list(theirs.parameters())) == 6
    assert all(a is b for a, b in zip(listed, called))
    assert [tuple(p.shape) for p in called] == [tuple(p.shape) for p in theirs.parameters()]
    ours, ref = nn.Module(), torch.nn.Module()
    ours.scale, ref.scale = nn.Parameter(_x(rng, 3)), torch.nn.Parameter(torch.zeros(3))
    ours.lin, ref.lin = nn.Linear(2, 2), torch.nn.Linear(2, 2)
    assert len(list(ours.parameters(recurse=False))) == len(list(ref.parameters(recurse=False))) == 1
    assert list(ours.parameters(recurse=False))[0] is ours.scale
    assert len(list(ours.parameters())) == len(list(ref.parameters())) == 3
