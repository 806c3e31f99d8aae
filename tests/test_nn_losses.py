"""mnnpy.nn.functional losses (and their Module wrappers) against torch.nn.functional: values
and gradients with respect to the input (and to probability targets where PyTorch gives
them), every reduction and option, on fresh random inputs.

Tolerances (float32): values and gradients rtol 1e-5, atol 1e-6 scaled by the largest
magnitude; the extreme-logit stability test checks finiteness and rtol 1e-5.
"""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

from mnnpy import _core
from mnnpy import expr as F
from mnnpy import nn
from mnnpy.nn import functional as NF

RTOL, ATOL = 1e-5, 1e-6
REDUCTIONS = ["mean", "sum", "none"]


def _close(actual, expected, what):
    expected = np.asarray(expected)
    scale = max(1.0, float(np.abs(expected).max()) if expected.size else 1.0)
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=ATOL * scale * 10, err_msg=what)


def check(ours_fn, theirs_fn, x, target, rng, target_grad=False, int_target=False, **kwargs):
    """Compares the loss and its gradient with respect to ``x`` (and ``target`` when asked)."""
    xt = torch.from_numpy(x.copy()).requires_grad_(True)
    tt = torch.from_numpy(target.copy())
    if target_grad:
        tt.requires_grad_(True)
    expected = theirs_fn(xt, tt, **kwargs)
    xv = nn.Parameter(x)
    tv = F.const(target) if (int_target or not target_grad) else nn.Parameter(target)
    loss = ours_fn(xv, tv, **{k: (F.const(v.numpy()) if isinstance(v, torch.Tensor) else v)
                              for k, v in kwargs.items()})
    assert tuple(loss.shape) == tuple(expected.shape)
    _close(loss.read(), expected.detach().numpy(), "value")
    seed = rng.standard_normal(tuple(expected.shape)).astype(np.float32)
    (expected * torch.from_numpy(seed)).sum().backward()
    wrt = [xv] + ([tv] if target_grad else [])
    grads = _core.evaluate_as_constants(F.grad(F.reduce_sum(F.multiply(loss, F.const(seed))), wrt))
    _close(grads[0].read(), xt.grad.numpy(), "input grad")
    if target_grad:
        _close(grads[1].read(), tt.grad.numpy(), "target grad")


def _x(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", [(6, 5), (3, 4, 2, 3)])
def test_cross_entropy_class_indices(rng, reduction, label_smoothing, weighted, shape):
    x = _x(rng, *shape) * 3
    target = rng.integers(0, shape[1], (shape[0],) + shape[2:]).astype(np.int64)
    target.reshape(-1)[::4] = -100  # ignored positions
    kwargs = dict(reduction=reduction, label_smoothing=label_smoothing, ignore_index=-100)
    if weighted:
        kwargs["weight"] = torch.from_numpy(rng.uniform(0.2, 2.0, shape[1]).astype(np.float32))
    check(NF.cross_entropy, TF.cross_entropy, x, target, rng, int_target=True, **kwargs)


def test_cross_entropy_custom_ignore_index_and_unbatched(rng):
    x = _x(rng, 5, 4)
    target = np.array([0, 3, 3, 1, 2], np.int64)
    check(NF.cross_entropy, TF.cross_entropy, x, target, rng, int_target=True, ignore_index=3)
    check(NF.cross_entropy, TF.cross_entropy, _x(rng, 4), np.array(2, np.int64), rng, int_target=True)
    check(NF.cross_entropy, TF.cross_entropy, _x(rng, 4), np.array(1, np.int64), rng, int_target=True,
          reduction="none")


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("label_smoothing", [0.0, 0.3])
def test_cross_entropy_probabilities(rng, reduction, label_smoothing):
    x = _x(rng, 4, 6, 3)
    probs = rng.dirichlet(np.ones(6), (4, 3)).transpose(0, 2, 1).astype(np.float32)
    weight = torch.from_numpy(rng.uniform(0.5, 1.5, 6).astype(np.float32))
    check(NF.cross_entropy, TF.cross_entropy, x, np.ascontiguousarray(probs), rng, target_grad=True,
          reduction=reduction, label_smoothing=label_smoothing, weight=weight)


def test_cross_entropy_is_stable_for_extreme_logits(rng):
    x = np.array([[1000.0, -1000.0, 0.0], [-500.0, 500.0, 499.0]], np.float32)
    target = np.array([1, 2], np.int64)
    check(NF.cross_entropy, TF.cross_entropy, x, target, rng, int_target=True)
    value = NF.cross_entropy(F.const(x), F.const(target)).read()
    assert np.isfinite(value)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss(rng, reduction, weighted):
    logp = TF.log_softmax(torch.from_numpy(_x(rng, 7, 5)), 1).numpy()
    target = rng.integers(0, 5, 7).astype(np.int64)
    target[2] = 4
    kwargs = dict(reduction=reduction, ignore_index=4)
    if weighted:
        kwargs["weight"] = torch.from_numpy(rng.uniform(0.2, 2.0, 5).astype(np.float32))
    check(NF.nll_loss, TF.nll_loss, logp, target, rng, int_target=True, **kwargs)
    check(NF.nll_loss, TF.nll_loss, _x(rng, 2, 3, 4), rng.integers(0, 3, (2, 4)).astype(np.int64), rng,
          int_target=True, reduction=reduction)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("fn", ["mse_loss", "l1_loss"])
def test_mse_and_l1(rng, reduction, fn):
    check(getattr(NF, fn), getattr(TF, fn), _x(rng, 4, 5), _x(rng, 4, 5), rng, target_grad=True, reduction=reduction)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("beta", [1.0, 0.5, 0.0])
def test_smooth_l1(rng, reduction, beta):
    x, t = _x(rng, 6, 7), _x(rng, 6, 7)
    check(NF.smooth_l1_loss, TF.smooth_l1_loss, x, t, rng, target_grad=True, reduction=reduction, beta=beta)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy(rng, reduction, weighted):
    p = rng.uniform(0.02, 0.98, (5, 4)).astype(np.float32)
    t = rng.uniform(0, 1, (5, 4)).astype(np.float32)
    kwargs = dict(reduction=reduction)
    if weighted:
        kwargs["weight"] = torch.from_numpy(rng.uniform(0.5, 2, (4,)).astype(np.float32))
    check(NF.binary_cross_entropy, TF.binary_cross_entropy, p, t, rng, target_grad=True, **kwargs)


def test_binary_cross_entropy_clamps_log(rng):
    p = np.array([0.0, 1.0, 0.5], np.float32)
    t = np.array([1.0, 0.0, 1.0], np.float32)
    expected = TF.binary_cross_entropy(torch.from_numpy(p), torch.from_numpy(t), reduction="none").numpy()
    _close(NF.binary_cross_entropy(F.const(p), F.const(t), reduction="none").read(), expected, "clamped")


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("options", ["plain", "weight", "pos_weight", "both"])
def test_binary_cross_entropy_with_logits(rng, reduction, options):
    x = _x(rng, 6, 3) * 5
    x[0, 0], x[1, 1] = 80.0, -80.0  # stability: no overflow at large |x|
    t = rng.uniform(0, 1, (6, 3)).astype(np.float32)
    kwargs = dict(reduction=reduction)
    if options in ("weight", "both"):
        kwargs["weight"] = torch.from_numpy(rng.uniform(0.5, 2, (6, 1)).astype(np.float32))
    if options in ("pos_weight", "both"):
        kwargs["pos_weight"] = torch.from_numpy(rng.uniform(0.5, 3, (3,)).astype(np.float32))
    check(NF.binary_cross_entropy_with_logits, TF.binary_cross_entropy_with_logits, x, t, rng, target_grad=True,
          **kwargs)


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides")  # PyTorch's note on 'mean'
@pytest.mark.parametrize("reduction", REDUCTIONS + ["batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(rng, reduction, log_target):
    logp = TF.log_softmax(torch.from_numpy(_x(rng, 4, 6)), 1).numpy()
    q = rng.dirichlet(np.ones(6), 4).astype(np.float32)
    q[0, 2] = 0.0  # zero target probability: contributes nothing (0 log 0 = 0)
    target = np.log(np.maximum(q, 1e-30)).astype(np.float32) if log_target else q
    check(NF.kl_div, TF.kl_div, logp, target, rng, reduction=reduction, log_target=log_target)


@pytest.mark.parametrize("ours,theirs,int_target", [
    (nn.CrossEntropyLoss(label_smoothing=0.1), torch.nn.CrossEntropyLoss(label_smoothing=0.1), True),
    (nn.CrossEntropyLoss(weight=np.array([1, 2, 0.5, 1], np.float32), reduction="sum"),
     torch.nn.CrossEntropyLoss(weight=torch.tensor([1, 2, 0.5, 1]), reduction="sum"), True),
    (nn.NLLLoss(), torch.nn.NLLLoss(), True),
    (nn.MSELoss(), torch.nn.MSELoss(), False),
    (nn.L1Loss(reduction="sum"), torch.nn.L1Loss(reduction="sum"), False),
    (nn.SmoothL1Loss(beta=0.5), torch.nn.SmoothL1Loss(beta=0.5), False),
    (nn.BCEWithLogitsLoss(pos_weight=np.full(4, 2.0, np.float32)),
     torch.nn.BCEWithLogitsLoss(pos_weight=torch.full((4,), 2.0)), False),
    (nn.KLDivLoss(reduction="batchmean"), torch.nn.KLDivLoss(reduction="batchmean"), False),
])
def test_loss_modules(rng, ours, theirs, int_target):
    x = _x(rng, 5, 4)
    target = rng.integers(0, 4, 5).astype(np.int64) if int_target else rng.uniform(0, 1, (5, 4)).astype(np.float32)

    def ours_fn(a, b):
        return ours(a, b)

    def theirs_fn(a, b):
        return theirs(a, b)
    check(ours_fn, theirs_fn, x, target, rng, int_target=int_target)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    bce = nn.BCELoss()
    p = rng.uniform(0.1, 0.9, (3, 2)).astype(np.float32)
    _close(bce(F.const(p), F.const(p)).read(), torch.nn.BCELoss()(torch.from_numpy(p), torch.from_numpy(p)).numpy(),
           "BCELoss")


def test_loss_errors_name_the_problem(rng):
    x = F.const(_x(rng, 4, 3))
    with pytest.raises(ValueError, match="reduction must be one of"):
        NF.mse_loss(x, x, reduction="avg")
    with pytest.raises(ValueError, match="target shape .* differs from input shape"):
        NF.mse_loss(x, F.const(_x(rng, 4, 2)))
    with pytest.raises(ValueError, match=r"target shape \(3,\) does not match input"):
        NF.cross_entropy(x, F.const(np.zeros(3, np.int64)))
    with pytest.raises(ValueError, match=r"weight must have shape \(3,\)"):
        NF.cross_entropy(x, F.const(np.zeros(4, np.int64)), weight=np.ones(2, np.float32))
    with pytest.raises(ValueError, match="label_smoothing must be between 0 and 1"):
        NF.cross_entropy(x, F.const(np.zeros(4, np.int64)), label_smoothing=1.5)
    with pytest.raises(TypeError, match="target must hold integers"):
        NF.nll_loss(x, F.const(np.zeros(4, np.float32)))
    with pytest.raises(ValueError, match="beta must not be negative"):
        NF.smooth_l1_loss(x, x, beta=-1.0)
    with pytest.raises(ValueError, match="reduction must be one of"):
        NF.kl_div(x, x, reduction="batch")
