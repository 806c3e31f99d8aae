"""mnnpy.nn layers against torch.nn: PyTorch's weights are copied in with load_state_dict (same
key names), then outputs in training and evaluation mode, gradients with respect to the input
and to every parameter, and BatchNorm's running statistics are compared.

Tolerances (float32): outputs and gradients rtol 1e-4, atol 1e-4 (convolutions and reductions
sum in different orders); running statistics rtol 1e-5, atol 1e-6.
"""
import collections

import numpy as np
import pytest
import torch

from mnnpy import _core
from mnnpy import expr as F
from mnnpy import nn

RTOL, ATOL = 1e-4, 1e-4


def _randomize(module, rng):
    """Random parameters (and positive running variances) so that no value is trivially 0 or 1."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            p.copy_(torch.from_numpy(rng.uniform(-1, 1, p.shape).astype(np.float32)))
        for name, b in module.named_buffers():
            if name.endswith("running_mean"):
                b.copy_(torch.from_numpy(rng.uniform(-0.5, 0.5, b.shape).astype(np.float32)))
            elif name.endswith("running_var"):
                b.copy_(torch.from_numpy(rng.uniform(0.5, 2.0, b.shape).astype(np.float32)))


def compare(ours, theirs, x, rng, training=True, randomize=True, int_input=False, rtol=RTOL, atol=ATOL):
    """Copies the weights, runs both in the given mode and compares outputs and gradients."""
    if randomize:
        _randomize(theirs, rng)
    theirs.zero_grad()
    ours.load_state_dict(theirs.state_dict())
    ours.train(training)
    theirs.train(training)
    if int_input:
        xt, xv = torch.from_numpy(x), F.const(x)
    else:
        xt = torch.from_numpy(x.copy()).requires_grad_(True)
        xv = nn.Parameter(x)
    yt = theirs(xt)
    yv = ours(xv)
    assert tuple(yv.shape) == tuple(yt.shape)
    np.testing.assert_allclose(yv.read(), yt.detach().numpy(), rtol=rtol, atol=atol)
    seed = rng.standard_normal(tuple(yt.shape)).astype(np.float32)
    (yt * torch.from_numpy(seed)).sum().backward()
    named = ours.named_trainable_parameters()
    targets = ([] if int_input else [xv]) + [v for _, v in named]
    grads = F.grad(F.reduce_sum(F.multiply(yv, F.const(seed))), targets) if targets else []
    values = _core.evaluate_as_constants(grads) if grads else []
    if not int_input:
        np.testing.assert_allclose(values[0].read(), xt.grad.numpy(), rtol=rtol, atol=atol, err_msg="input grad")
        values = values[1:]
    torch_params = dict(theirs.named_parameters())
    assert sorted(n for n, _ in named) == sorted(torch_params)
    for (name, _), g in zip(named, values):
        np.testing.assert_allclose(g.read(), torch_params[name].grad.numpy(), rtol=rtol, atol=atol,
                                   err_msg=f"grad of {name}")
    return yv


def _x(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("shape,bias", [((3, 7), True), ((2, 3, 7), False), ((7,), True)])
def test_linear(rng, training, shape, bias):
    compare(nn.Linear(7, 5, bias=bias), torch.nn.Linear(7, 5, bias=bias), _x(rng, *shape), rng, training)


@pytest.mark.parametrize("kwargs", [
    dict(kernel_size=3),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=(2, 3), stride=(2, 1), padding=(1, 0), dilation=(1, 2)),
    dict(kernel_size=3, groups=3, bias=False),
    dict(kernel_size=4, padding="same", dilation=2),
    dict(kernel_size=3, padding="valid"),
    dict(kernel_size=3, padding=1, padding_mode="reflect"),
    dict(kernel_size=3, padding=2, padding_mode="replicate"),
    dict(kernel_size=3, padding=1, padding_mode="circular"),
])
def test_conv2d(rng, kwargs):
    x = _x(rng, 2, 3, 9, 8)
    for training in (True, False):
        compare(nn.Conv2d(3, 6, **kwargs), torch.nn.Conv2d(3, 6, **kwargs), x, rng, training)


def test_conv2d_unbatched_input(rng):
    compare(nn.Conv2d(2, 3, 3, padding=1), torch.nn.Conv2d(2, 3, 3, padding=1), _x(rng, 2, 5, 6), rng)


@pytest.mark.parametrize("kwargs", [
    dict(kernel_size=3),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=5, padding="same", dilation=2),
    dict(kernel_size=2, groups=2, bias=False),
])
def test_conv1d(rng, kwargs):
    for training in (True, False):
        compare(nn.Conv1d(4, 6, **kwargs), torch.nn.Conv1d(4, 6, **kwargs), _x(rng, 3, 4, 11), rng, training)


@pytest.mark.parametrize("kwargs", [
    dict(kernel_size=3),
    dict(kernel_size=3, stride=2, padding=1, output_padding=1),
    dict(kernel_size=(2, 3), stride=(2, 1), groups=2, bias=False),
    dict(kernel_size=3, stride=2, dilation=2, padding=2),
])
def test_conv_transpose2d(rng, kwargs):
    for training in (True, False):
        compare(nn.ConvTranspose2d(4, 6, **kwargs), torch.nn.ConvTranspose2d(4, 6, **kwargs), _x(rng, 2, 4, 5, 6),
                rng, training)


def test_conv_transpose2d_composite_matches_op(rng):
    # The zero-insertion fallback against the op (both against PyTorch above).
    x, w = _x(rng, 2, 4, 5, 6), _x(rng, 4, 3, 3, 3)
    expected = torch.nn.functional.conv_transpose2d(torch.from_numpy(x), torch.from_numpy(w), stride=2, padding=1,
                                                    output_padding=1, groups=2).numpy()
    original = _core.has_grad_rule
    try:
        _core.has_grad_rule = lambda name: False if name == "Conv2DBackpropInput" else original(name)
        y = nn.functional.conv_transpose2d(F.const(x), F.const(w), None, 2, 1, 1, 2)
    finally:
        _core.has_grad_rule = original
    np.testing.assert_allclose(y.read(), expected, rtol=RTOL, atol=ATOL)


def _stats_match(ours, theirs):
    for name, value in ours.state_dict().items():
        np.testing.assert_allclose(value, theirs.state_dict()[name].numpy(), rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("cls,shape,kwargs", [
    ("BatchNorm1d", (6, 4), {}),
    ("BatchNorm1d", (5, 4, 3), dict(momentum=0.3)),
    ("BatchNorm2d", (3, 4, 5, 2), {}),
    ("BatchNorm2d", (3, 4, 5, 2), dict(affine=False)),
    ("BatchNorm2d", (2, 4, 3, 3), dict(momentum=None)),
    ("BatchNorm2d", (2, 4, 3, 3), dict(track_running_stats=False, eps=1e-3)),
])
def test_batch_norm_training_updates_running_statistics(rng, cls, shape, kwargs):
    ours, theirs = getattr(nn, cls)(4, **kwargs), getattr(torch.nn, cls)(4, **kwargs)
    for step in range(3):  # the updates chain: each step builds on the last
        compare(ours, theirs, _x(rng, *shape) * 2 + 1, rng, training=True, randomize=(step == 0))
        theirs_state = {k: v.clone() for k, v in theirs.state_dict().items()}
        updates = ours.pending_updates()
        assert len(updates) == (3 if ours.track_running_stats else 0)
        assert ours.pending_updates() == []  # cleared
        values = _core.evaluate_as_constants([v for _, v in updates])
        for (buf, _), v in zip(updates, values):
            _core.share_value(buf, v)
        _stats_match(ours, theirs)
        # Keep the weights (compare reloads PyTorch's): copy back what was trained.
        theirs.load_state_dict(theirs_state)
    x = _x(rng, *shape)
    compare(ours, theirs, x, rng, training=False, randomize=False)


def test_batch_norm_two_forwards_in_one_step_update_twice(rng):
    ours, theirs = nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3)
    a, b = _x(rng, 4, 3, 2, 2), _x(rng, 4, 3, 2, 2) + 3
    ours(F.const(a))
    ours(F.const(b))
    theirs(torch.from_numpy(a))
    theirs(torch.from_numpy(b))
    assert ours.apply_pending_updates() == 3
    _stats_match(ours, theirs)
    assert int(ours.num_batches_tracked.read()) == 2


def test_batch_norm_errors(rng):
    with pytest.raises(ValueError, match="expected 3 channels"):
        nn.BatchNorm2d(3)(F.const(_x(rng, 2, 4, 3, 3)))
    with pytest.raises(ValueError, match="expected a 4-D input"):
        nn.BatchNorm2d(3)(F.const(_x(rng, 2, 3)))
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        nn.BatchNorm1d(3)(F.const(_x(rng, 1, 3)))


@pytest.mark.parametrize("args,kwargs,shape", [
    ((5,), {}, (3, 5)),
    (((4, 5),), {}, (2, 3, 4, 5)),
    ((5,), dict(elementwise_affine=False), (2, 4, 5)),
    ((5,), dict(bias=False, eps=1e-3), (2, 5)),
])
def test_layer_norm(rng, args, kwargs, shape):
    for training in (True, False):
        compare(nn.LayerNorm(*args, **kwargs), torch.nn.LayerNorm(*args, **kwargs), _x(rng, *shape), rng, training)


@pytest.mark.parametrize("groups,shape,affine", [(2, (3, 6, 4, 5), True), (3, (2, 6, 7), False), (6, (2, 6), True)])
def test_group_norm(rng, groups, shape, affine):
    for training in (True, False):
        compare(nn.GroupNorm(groups, 6, affine=affine), torch.nn.GroupNorm(groups, 6, affine=affine),
                _x(rng, *shape), rng, training)
    with pytest.raises(ValueError, match="must divide"):
        nn.GroupNorm(4, 6)


@pytest.mark.parametrize("padding_idx", [None, 2, -1])
def test_embedding(rng, padding_idx):
    idx = rng.integers(0, 10, (4, 6)).astype(np.int64)
    idx[0, :3] = 2
    idx[1, :2] = 9
    ours, theirs = nn.Embedding(10, 5, padding_idx=padding_idx), torch.nn.Embedding(10, 5, padding_idx=padding_idx)
    with torch.no_grad():
        theirs.weight.copy_(torch.from_numpy(_x(rng, 10, 5)))
        if padding_idx is not None:
            theirs.weight[padding_idx].zero_()
    for training in (True, False):
        theirs.zero_grad()
        compare(ours, theirs, idx, rng, training, randomize=False, int_input=True)
    if padding_idx is not None:
        assert np.all(nn.Embedding(10, 5, padding_idx=padding_idx).weight.read()[padding_idx] == 0)
    with pytest.raises(TypeError, match="integers"):
        ours(F.const(_x(rng, 2, 2)))


@pytest.mark.parametrize("ours,theirs,shape", [
    (nn.MaxPool2d(2), torch.nn.MaxPool2d(2), (2, 3, 6, 7)),
    (nn.MaxPool2d(3, stride=2, padding=1), torch.nn.MaxPool2d(3, stride=2, padding=1), (2, 3, 7, 8)),
    (nn.MaxPool2d((2, 3), stride=(1, 2), dilation=(2, 1)), torch.nn.MaxPool2d((2, 3), stride=(1, 2), dilation=(2, 1)),
     (1, 2, 7, 9)),
    (nn.MaxPool2d(2, ceil_mode=True), torch.nn.MaxPool2d(2, ceil_mode=True), (1, 2, 5, 7)),
    (nn.AvgPool2d(2), torch.nn.AvgPool2d(2), (2, 3, 6, 7)),
    (nn.AvgPool2d(3, 2, 1), torch.nn.AvgPool2d(3, 2, 1), (2, 3, 7, 8)),
    (nn.AvgPool2d(3, 2, 1, count_include_pad=False), torch.nn.AvgPool2d(3, 2, 1, count_include_pad=False),
     (2, 3, 7, 8)),
    (nn.AvgPool2d(3, 2, 1, ceil_mode=True), torch.nn.AvgPool2d(3, 2, 1, ceil_mode=True), (2, 3, 7, 6)),
    (nn.AvgPool2d(3, 2, ceil_mode=True, count_include_pad=False),
     torch.nn.AvgPool2d(3, 2, ceil_mode=True, count_include_pad=False), (2, 3, 7, 6)),
    (nn.MaxPool2d(3, 2, 1, ceil_mode=True), torch.nn.MaxPool2d(3, 2, 1, ceil_mode=True), (2, 3, 7, 6)),
    (nn.AvgPool2d(2, divisor_override=3), torch.nn.AvgPool2d(2, divisor_override=3), (1, 2, 4, 6)),
    (nn.AdaptiveAvgPool2d(1), torch.nn.AdaptiveAvgPool2d(1), (2, 3, 5, 7)),
    (nn.AdaptiveAvgPool2d((3, 2)), torch.nn.AdaptiveAvgPool2d((3, 2)), (2, 3, 7, 5)),
    (nn.AdaptiveAvgPool2d((2, 2)), torch.nn.AdaptiveAvgPool2d((2, 2)), (2, 3, 4, 6)),
    (nn.AdaptiveAvgPool2d((None, 3)), torch.nn.AdaptiveAvgPool2d((None, 3)), (1, 2, 4, 7)),
    (nn.MaxPool2d(2), torch.nn.MaxPool2d(2), (3, 6, 6)),
])
def test_pooling(rng, ours, theirs, shape):
    for training in (True, False):
        compare(ours, theirs, _x(rng, *shape), rng, training)


@pytest.mark.parametrize("name,args", [
    ("ReLU", ()), ("ReLU6", ()), ("LeakyReLU", ()), ("LeakyReLU", (0.2,)), ("ELU", ()), ("ELU", (0.5,)),
    ("GELU", ()), ("GELU", ("tanh",)), ("SiLU", ()), ("Sigmoid", ()), ("Tanh", ()), ("Softmax", (1,)),
    ("Softmax", (-1,)), ("LogSoftmax", (1,)), ("LogSoftmax", (0,)), ("Hardswish", ()), ("Hardsigmoid", ()),
    ("Softplus", ()), ("Flatten", ()), ("Flatten", (0, 2)), ("Identity", ()),
])
def test_activations_and_shapes(rng, name, args):
    x = _x(rng, 3, 4, 5) * 4  # wide enough to reach every branch (relu6 clip, hardswish bounds)
    for training in (True, False):
        compare(getattr(nn, name)(*args), getattr(torch.nn, name)(*args), x, rng, training)


def test_activation_arguments_are_checked():
    with pytest.raises(TypeError, match="unexpected argument 'slope'"):
        nn.LeakyReLU(slope=0.1)
    with pytest.raises(ValueError, match="approximate must be"):
        nn.GELU("fast")(F.const(np.zeros(2, np.float32)))


def test_sequential_and_module_list_names_match_torch(rng):
    def build(lib):
        return lib.Sequential(lib.Conv2d(2, 4, 3, padding=1), lib.BatchNorm2d(4), lib.ReLU(), lib.MaxPool2d(2),
                              lib.Flatten(), lib.Linear(4 * 3 * 3, 5), lib.LogSoftmax(dim=1))
    ours, theirs = build(nn), build(torch.nn)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for training in (True, False):
        compare(ours, theirs, _x(rng, 3, 2, 6, 6), rng, training)
    ours.pending_updates()
    assert isinstance(ours[0], nn.Conv2d) and isinstance(ours[-1], nn.LogSoftmax) and len(ours) == 7
    head = ours[:2]
    assert isinstance(head, nn.Sequential) and list(head.state_dict())[:2] == ["0.weight", "0.bias"]
    ours.append(nn.Identity())
    assert len(ours) == 8 and isinstance(ours[7], nn.Identity)
    with pytest.raises(IndexError, match="out of range"):
        ours[20]
    named = nn.Sequential(collections.OrderedDict([("conv", nn.Conv2d(1, 2, 1)), ("act", nn.ReLU())]))
    assert list(named.state_dict()) == ["conv.weight", "conv.bias"]
    layers = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 3)])
    layers.append(nn.Linear(3, 1))
    assert [n for n, _ in layers.named_parameters()][-2:] == ["2.weight", "2.bias"]
    assert len(layers) == 3 and layers[1].out_features == 3


def test_dropout_fresh_masks_scaling_and_eval(rng):
    x = np.ones((64, 64), np.float32)
    drop = nn.Dropout(0.25)
    first = drop(F.const(x)).read()
    second = drop(F.const(x)).read()
    for y in (first, second):
        assert set(np.unique(y)) <= {0.0, np.float32(1 / 0.75)}
        assert abs((y == 0).mean() - 0.25) < 0.03
    assert (first != second).mean() > 0.2  # each forward draws a new mask
    drop.eval()
    np.testing.assert_array_equal(drop(F.const(x)).read(), x)
    assert nn.Dropout(0.0)(F.const(x)).read().sum() == x.sum()
    assert nn.Dropout(1.0)(F.const(x)).read().sum() == 0
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(1.5)
    nn.manual_seed(5)
    a = nn.functional.dropout(F.const(x), 0.5).read()
    nn.manual_seed(5)
    np.testing.assert_array_equal(nn.functional.dropout(F.const(x), 0.5).read(), a)  # seeded
    assert not np.array_equal(nn.functional.dropout(F.const(x), 0.5).read(), a)
    assert "step" not in drop.state_dict()


def test_dropout_gradient_is_the_mask(rng):
    p = nn.Parameter(_x(rng, 8, 16))
    y = nn.Dropout(0.5)(p)
    grad, value = _core.evaluate_as_constants([F.grad(F.reduce_sum(y), [p])[0], y])
    scale = value.read() / p.read()
    np.testing.assert_allclose(grad.read(), scale, rtol=1e-5)


def test_dropout_redraws_in_a_planned_step():
    # A planned graph reruns with the step counter the pending updates advance.
    drop = nn.Dropout(0.5)
    y = drop(F.const(np.ones((32, 32), np.float32)))
    updates = drop.pending_updates()
    plan = _core.PlannedGraph([y] + [v for _, v in updates])
    masks = []
    for _ in range(3):
        out = plan.run()
        masks.append(out[0].read())
        for (buf, _), v in zip(updates, out[1:]):
            _core.share_value(buf, v)
    assert (masks[0] != masks[1]).mean() > 0.3 and (masks[1] != masks[2]).mean() > 0.3
    assert int(drop.step.read()) == 3


def test_initialization_follows_torch_bounds_and_seed():
    nn.manual_seed(3)
    a = nn.Conv2d(4, 8, 3, groups=2)
    nn.manual_seed(3)
    b = nn.Conv2d(4, 8, 3, groups=2)
    np.testing.assert_array_equal(a.weight.read(), b.weight.read())
    bound = 1 / np.sqrt(2 * 9)
    w = a.weight.read()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    lin = nn.Linear(100, 50)
    assert np.abs(lin.weight.read()).max() <= 0.1 and np.abs(lin.bias.read()).max() <= 0.1
    t = nn.ConvTranspose2d(4, 6, 3, groups=2)
    assert np.abs(t.weight.read()).max() <= 1 / np.sqrt(3 * 9)
    bn = nn.BatchNorm2d(3)
    assert bn.weight.read().tolist() == [1, 1, 1] and bn.running_var.read().tolist() == [1, 1, 1]
    assert bn.num_batches_tracked.dtype == np.int64


def test_layer_errors_name_the_problem(rng):
    with pytest.raises(ValueError, match="input has 6 features, weight expects 7"):
        nn.Linear(7, 3)(F.const(_x(rng, 2, 6)))
    with pytest.raises(ValueError, match="input has 4 channels"):
        nn.Conv2d(3, 4, 3)(F.const(_x(rng, 1, 4, 5, 5)))
    with pytest.raises(ValueError, match="groups=2 must divide"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="padding='same' is not supported for strided"):
        nn.Conv2d(3, 4, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(3, 4, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match="kernel .* is larger than the padded input"):
        nn.Conv2d(1, 1, 5)(F.const(_x(rng, 1, 1, 3, 3)))
    with pytest.raises(ValueError, match="in_features must be a positive integer"):
        nn.Linear(0, 3)
    with pytest.raises(ValueError, match="at most half the kernel"):
        nn.MaxPool2d(2, padding=2)(F.const(_x(rng, 1, 1, 4, 4)))
    with pytest.raises(ValueError, match="expected a 3-D or 4-D input"):
        nn.MaxPool2d(2)(F.const(_x(rng, 4, 4)))
    with pytest.raises(ValueError, match="output_padding"):
        nn.ConvTranspose2d(2, 2, 3, stride=1, output_padding=1)(F.const(_x(rng, 1, 2, 4, 4)))


def test_layers_convert_arrays_and_check_var_dtypes(rng):
    x = rng.standard_normal((2, 3))  # float64 arrays become float32 inputs
    lin = nn.Linear(3, 2)
    assert lin(x).dtype == np.float32
    np.testing.assert_allclose(lin(x).read(), x.astype(np.float32) @ lin.weight.read().T + lin.bias.read(),
                               rtol=1e-5, atol=1e-6)
    assert nn.Conv2d(1, 1, 3)(rng.standard_normal((1, 1, 4, 4))).dtype == np.float32
    with pytest.raises(TypeError, match="input dtype float64 differs from the parameters' float32"):
        lin(F.const(x))


def test_mnn_builders(rng):
    lin = nn.linear(4, 3, weight_init=np.ones((3, 4)))
    np.testing.assert_array_equal(lin.weight.read(), np.ones((3, 4), np.float32))
    conv = nn.conv(4, 4, 3, depthwise=True)
    assert conv.groups == 4 and tuple(conv.weight.shape) == (4, 1, 3, 3)
    bn = nn.batch_norm(5, momentum=0.9)
    assert abs(bn.momentum - 0.1) < 1e-9 and isinstance(bn, nn.BatchNorm2d)
    assert isinstance(nn.dropout(0.3), nn.Dropout)
    assert nn.EmptyModule()(3) == 3
