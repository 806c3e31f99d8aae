"""mnnpy.optim against torch.optim: update formulas, learning-rate schedules, gradient clipping,
state saving and resuming, planned steps, and a small CNN trained side by side.

Tolerances (float32): optimizer updates fed identical gradients agree with torch.optim to 1e-5
relative (atol 1e-6) over 25 steps; the CNN's losses agree to 1e-4 relative over 20 SGD and 20
Adam steps; schedules agree to 1e-12 relative (both compute in double); clipped gradients to
1e-5; resumed training and planned steps are compared bit for bit with the uninterrupted, eager
runs (the same graph gives the same numbers).
"""
import pickle
import zlib

import numpy as np
import pytest
import torch

import mnnpy.expr as F
import mnnpy.nn as nn
import mnnpy.nn.functional as nnf
import mnnpy.optim as optim
from mnnpy.optim import lr_scheduler

torch.set_num_threads(1)
SHAPES = [(5, 7), (7,), (3, 2, 2)]


def _params(rng):
    arrays = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    ours = []
    for a in arrays:
        p = F.placeholder(list(a.shape))
        p.write(a)
        ours.append(p)
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    return ours, theirs


def _run_with_gradients(make_ours, make_theirs, steps=25, seed=0, change_lr_at=None, planned=False):
    """Feeds both optimizers the same random gradients (the gradient of sum(p * g) is g)."""
    rng = np.random.default_rng(seed)
    ours, theirs = _params(rng)
    opt, topt = make_ours(ours), make_theirs(theirs)
    grads_in = [F.placeholder(list(s)) for s in SHAPES]

    def loss_of(*gs):
        return sum(F.reduce_sum(p * g) for p, g in zip(ours, gs))

    step = opt.compile(loss_of, *[np.zeros(s, np.float32) for s in SHAPES]) if planned else None
    for i in range(steps):
        if change_lr_at is not None and i == change_lr_at:
            opt.lr = opt.lr * 0.5
            for g in topt.param_groups:
                g["lr"] = g["lr"] * 0.5
        gs = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
        if planned:
            step(*gs)
        else:
            for ph, g in zip(grads_in, gs):
                ph.write(g)
            opt.step(loss_of(*grads_in))
        for t, g in zip(theirs, gs):
            t.grad = torch.from_numpy(g.copy())
        topt.step()
    for p, t in zip(ours, theirs):
        np.testing.assert_allclose(p.read(), t.detach().numpy(), rtol=1e-5, atol=1e-6)
    return opt


OPTIMIZERS = {
    "sgd": (lambda p: optim.SGD(p, lr=0.1), lambda p: torch.optim.SGD(p, lr=0.1)),
    "sgd_momentum": (lambda p: optim.SGD(p, lr=0.05, momentum=0.9),
                     lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9)),
    "sgd_dampening_wd": (lambda p: optim.SGD(p, lr=0.05, momentum=0.8, dampening=0.3, weight_decay=0.01),
                         lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.8, dampening=0.3, weight_decay=0.01)),
    "sgd_nesterov": (lambda p: optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-3),
                     lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-3)),
    "sgd_maximize": (lambda p: optim.SGD(p, lr=0.05, momentum=0.5, maximize=True),
                     lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.5, maximize=True)),
    "adam": (lambda p: optim.Adam(p, lr=0.01), lambda p: torch.optim.Adam(p, lr=0.01)),
    "adam_wd_amsgrad": (lambda p: optim.Adam(p, lr=0.02, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.05,
                                             amsgrad=True),
                        lambda p: torch.optim.Adam(p, lr=0.02, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.05,
                                                   amsgrad=True)),
    "adam_small_beta1": (lambda p: optim.Adam(p, lr=0.01, betas=(0.3, 0.9)),
                         lambda p: torch.optim.Adam(p, lr=0.01, betas=(0.3, 0.9))),
    "adamw": (lambda p: optim.AdamW(p, lr=0.01, weight_decay=0.1),
              lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1)),
    "mnn_adam": (lambda p: optim.ADAM(p, lr=0.01, momentum=0.85, momentum2=0.995, weight_decay=0.01),
                 lambda p: torch.optim.Adam(p, lr=0.01, betas=(0.85, 0.995), weight_decay=0.01)),
    "rmsprop": (lambda p: optim.RMSprop(p, lr=0.01), lambda p: torch.optim.RMSprop(p, lr=0.01)),
    "rmsprop_all": (lambda p: optim.RMSprop(p, lr=0.005, alpha=0.9, eps=1e-6, weight_decay=0.01, momentum=0.7,
                                            centered=True),
                    lambda p: torch.optim.RMSprop(p, lr=0.005, alpha=0.9, eps=1e-6, weight_decay=0.01, momentum=0.7,
                                                  centered=True)),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_updates_match_torch(name):
    ours, theirs = OPTIMIZERS[name]
    _run_with_gradients(ours, theirs, seed=zlib.crc32(name.encode()) % 1000, change_lr_at=12)


@pytest.mark.parametrize("name", ["sgd_nesterov", "adamw", "rmsprop_all"])
def test_planned_updates_match_torch(name):
    ours, theirs = OPTIMIZERS[name]
    _run_with_gradients(ours, theirs, seed=5, change_lr_at=10, planned=True)


def test_parameter_groups_have_their_own_hyperparameters():
    def ours(p):
        return optim.SGD([{"params": p[:2]}, {"params": p[2:], "lr": 0.01, "momentum": 0.5}], lr=0.1, momentum=0.9)

    def theirs(p):
        return torch.optim.SGD([{"params": p[:2]}, {"params": p[2:], "lr": 0.01, "momentum": 0.5}], lr=0.1,
                               momentum=0.9)
    _run_with_gradients(ours, theirs, steps=10)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, float("inf")])
def test_clip_grad_norm_matches_torch(norm_type):
    rng = np.random.default_rng(1)
    ours, theirs = _params(rng)
    opt = optim.SGD(ours, lr=1.0)
    opt.clip_grad_norm(0.7, norm_type=norm_type)
    gs = [rng.standard_normal(s).astype(np.float32) * 3 for s in SHAPES]
    opt.step(sum(F.reduce_sum(p * F.const(g)) for p, g in zip(ours, gs)))
    before = [t.detach().numpy().copy() for t in theirs]
    for t, g in zip(theirs, gs):
        t.grad = torch.from_numpy(g.copy())
    total = torch.nn.utils.clip_grad_norm_(theirs, 0.7, norm_type=norm_type)
    np.testing.assert_allclose(opt.last_grad_norm, float(total), rtol=1e-5)
    for p, t, b in zip(ours, theirs, before):
        np.testing.assert_allclose(b - p.read(), t.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_clip_grad_value_and_per_step_option():
    rng = np.random.default_rng(2)
    ours, theirs = _params(rng)
    opt = optim.SGD(ours, lr=1.0)
    gs = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    before = [p.read().copy() for p in ours]
    opt.step(sum(F.reduce_sum(p * F.const(g)) for p, g in zip(ours, gs)), clip_grad_value=0.5)
    for t, g in zip(theirs, gs):
        t.grad = torch.from_numpy(g.copy())
    torch.nn.utils.clip_grad_value_(theirs, 0.5)
    for p, t, b in zip(ours, theirs, before):
        np.testing.assert_allclose(b - p.read(), t.grad.numpy(), rtol=1e-6, atol=1e-6)
    assert opt._clip_value is None  # the option applied to that step only


def test_functional_clipping_in_a_graph():
    g = [F.const(np.array([3.0, 4.0], np.float32)), F.const(np.array([12.0], np.float32))]
    clipped, total = optim.clip_grad_norm_(g, 1.3)
    np.testing.assert_allclose(float(total.read()), 13.0, rtol=1e-6)
    np.testing.assert_allclose(clipped[0].read(), [0.3, 0.4], rtol=1e-5)
    np.testing.assert_allclose(optim.clip_grad_value_(g, 3.5)[1].read(), [3.5])


SCHEDULES = {
    "step": (lambda o: lr_scheduler.StepLR(o, step_size=3, gamma=0.5),
             lambda o: torch.optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.5)),
    "multistep": (lambda o: lr_scheduler.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3),
                  lambda o: torch.optim.lr_scheduler.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3)),
    "cosine": (lambda o: lr_scheduler.CosineAnnealingLR(o, T_max=7, eta_min=0.001),
               lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=7, eta_min=0.001)),
    "linear": (lambda o: lr_scheduler.LinearLR(o, start_factor=0.1, end_factor=0.9, total_iters=6),
               lambda o: torch.optim.lr_scheduler.LinearLR(o, start_factor=0.1, end_factor=0.9, total_iters=6)),
    "lambda": (lambda o: lr_scheduler.LambdaLR(o, lambda e: 0.9 ** e + 0.1 * (e % 3)),
               lambda o: torch.optim.lr_scheduler.LambdaLR(o, lambda e: 0.9 ** e + 0.1 * (e % 3))),
    "exponential": (lambda o: lr_scheduler.ExponentialLR(o, gamma=0.8),
                    lambda o: torch.optim.lr_scheduler.ExponentialLR(o, gamma=0.8)),
    "constant": (lambda o: lr_scheduler.ConstantLR(o, factor=0.25, total_iters=4),
                 lambda o: torch.optim.lr_scheduler.ConstantLR(o, factor=0.25, total_iters=4)),
    "warmup_cosine": (
        lambda o: lr_scheduler.SequentialLR(o, [lr_scheduler.LinearLR(o, start_factor=0.01, total_iters=4),
                                                lr_scheduler.CosineAnnealingLR(o, T_max=20)], milestones=[4]),
        lambda o: torch.optim.lr_scheduler.SequentialLR(
            o, [torch.optim.lr_scheduler.LinearLR(o, start_factor=0.01, total_iters=4),
                torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=20)], milestones=[4])),
}


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_schedules_match_torch(name):
    ours_p, theirs_p = _params(np.random.default_rng(0))
    opt = optim.SGD([{"params": ours_p[:1]}, {"params": ours_p[1:], "lr": 0.03}], lr=0.2, momentum=0.9)
    topt = torch.optim.SGD([{"params": theirs_p[:1]}, {"params": theirs_p[1:], "lr": 0.03}], lr=0.2, momentum=0.9)
    ours, theirs = SCHEDULES[name][0](opt), SCHEDULES[name][1](topt)
    for epoch in range(30):
        np.testing.assert_allclose(ours.get_last_lr(), theirs.get_last_lr(), rtol=1e-12)
        np.testing.assert_allclose([g["lr"] for g in opt.param_groups], [g["lr"] for g in topt.param_groups],
                                   rtol=1e-12)
        topt.step()
        ours.step()
        theirs.step()


def test_schedule_changes_lr_without_replanning():
    rng = np.random.default_rng(3)
    ours, theirs = _params(rng)
    opt, topt = optim.Adam(ours, lr=0.05), torch.optim.Adam(theirs, lr=0.05)
    sched = lr_scheduler.CosineAnnealingLR(opt, T_max=5)
    tsched = torch.optim.lr_scheduler.CosineAnnealingLR(topt, T_max=5)
    step = opt.compile(lambda *gs: sum(F.reduce_sum(p * g) for p, g in zip(ours, gs)),
                       *[np.zeros(s, np.float32) for s in SHAPES])
    for _ in range(8):
        gs = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
        step(*gs)
        for t, g in zip(theirs, gs):
            t.grad = torch.from_numpy(g.copy())
        topt.step()
        sched.step()
        tsched.step()
    assert step.num_plans == 1
    for p, t in zip(ours, theirs):
        np.testing.assert_allclose(p.read(), t.detach().numpy(), rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ models
class SmallCNN(nn.Module):
    def __init__(self, batch_norm=False):
        super().__init__()
        layers = [nn.Conv2d(1, 6, 3, padding=1)]
        if batch_norm:
            layers.append(nn.BatchNorm2d(6))
        layers += [nn.ReLU(), nn.Conv2d(6, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten()]
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        return self.head(self.features(x))


def _torch_cnn(batch_norm=False):
    layers = [torch.nn.Conv2d(1, 6, 3, padding=1)]
    if batch_norm:
        layers.append(torch.nn.BatchNorm2d(6))
    layers += [torch.nn.ReLU(), torch.nn.Conv2d(6, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
               torch.nn.Flatten()]
    model = torch.nn.Module()
    model.features = torch.nn.Sequential(*layers)
    model.head = torch.nn.Linear(8 * 4 * 4, 10)
    model.forward = lambda x: model.head(model.features(x))
    return model


def _twin_models(seed=0, batch_norm=False):
    torch.manual_seed(seed)
    theirs = _torch_cnn(batch_norm)
    ours = SmallCNN(batch_norm)
    state = {k: v.detach().numpy() for k, v in theirs.state_dict().items()}
    for name, p in ours.named_parameters():
        p.write(np.ascontiguousarray(state[name]))
    return ours, theirs


def _batches(n, seed=0, batch=16):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((batch, 1, 8, 8)).astype(np.float32), rng.integers(0, 10, batch))
            for _ in range(n)]


@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_cnn_losses_match_torch(kind):
    ours, theirs = _twin_models(1)
    if kind == "sgd":
        opt, topt = optim.SGD(ours, lr=0.05, momentum=0.9), torch.optim.SGD(theirs.parameters(), lr=0.05, momentum=0.9)
    else:
        opt, topt = optim.Adam(ours, lr=3e-3), torch.optim.Adam(theirs.parameters(), lr=3e-3)
    losses, tlosses = [], []
    for x, y in _batches(20, seed=2):
        losses.append(opt.step(nnf.cross_entropy(ours(F.const(x)), F.const(y))))
        topt.zero_grad()
        tl = torch.nn.functional.cross_entropy(theirs(torch.from_numpy(x)), torch.from_numpy(y))
        tl.backward()
        topt.step()
        tlosses.append(tl.item())
    np.testing.assert_allclose(losses, tlosses, rtol=1e-4)


def test_batch_norm_buffers_follow_torch():
    ours, theirs = _twin_models(2, batch_norm=True)
    ours.train()
    theirs.train()
    opt, topt = optim.SGD(ours, lr=0.05, momentum=0.0), torch.optim.SGD(theirs.parameters(), lr=0.05)
    step = opt.compile(lambda x, y: nnf.cross_entropy(ours(x), y), *_batches(1)[0])
    for i, (x, y) in enumerate(_batches(6, seed=4)):
        if i % 2:
            step(x, y)
        else:
            opt.step(nnf.cross_entropy(ours(F.const(x)), F.const(y)))
        topt.zero_grad()
        torch.nn.functional.cross_entropy(theirs(torch.from_numpy(x)), torch.from_numpy(y)).backward()
        topt.step()
    bn, tbn = ours.features[1], theirs.features[1]
    np.testing.assert_allclose(bn.running_mean.read(), tbn.running_mean.numpy(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(bn.running_var.read(), tbn.running_var.numpy(), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("kind", ["sgd", "adam", "rmsprop"])
def test_planned_step_equals_eager_step(kind):
    make = {"sgd": lambda m: optim.SGD(m, lr=0.05, momentum=0.9, nesterov=True),
            "adam": lambda m: optim.AdamW(m, lr=3e-3),
            "rmsprop": lambda m: optim.RMSprop(m, lr=1e-3, centered=True, momentum=0.5)}[kind]
    eager, _ = _twin_models(3)
    planned, _ = _twin_models(3)
    opt_e, opt_p = make(eager), make(planned)
    opt_e.clip_grad_norm(2.0)
    opt_p.clip_grad_norm(2.0)
    step = opt_p.compile(lambda x, y: nnf.cross_entropy(planned(x), y), *_batches(1)[0])
    batches = _batches(6, seed=5) + _batches(2, seed=6, batch=5)  # a partial batch gets its own plan
    for x, y in batches:
        le = opt_e.step(nnf.cross_entropy(eager(F.const(x)), F.const(y)))
        lp = step(x, y)
        assert le == lp
        assert opt_e.last_grad_norm == opt_p.last_grad_norm
    assert step.num_plans == 2
    for a, b in zip(eager.parameters, planned.parameters):
        np.testing.assert_array_equal(a.read(), b.read())


def test_planned_step_returns_extras():
    model, _ = _twin_models(4)
    opt = optim.SGD(model, lr=0.01)
    x, y = _batches(1)[0]
    step = opt.compile(lambda xv, yv: (nnf.cross_entropy(model(xv), yv), model(xv)), x, y)
    loss, logits = step(x, y)
    assert isinstance(loss, float) and logits.shape == (16, 10)


@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_save_load_resume_is_identical(kind):
    make = {"sgd": lambda m: optim.SGD(m, lr=0.05, momentum=0.9, weight_decay=1e-4),
            "adam": lambda m: optim.Adam(m, lr=3e-3, amsgrad=True)}[kind]
    batches = _batches(12, seed=7)
    model, _ = _twin_models(5)
    opt = make(model)
    sched = lr_scheduler.StepLR(opt, step_size=4, gamma=0.5)
    step = opt.compile(lambda x, y: nnf.cross_entropy(model(x), y), *batches[0])
    for x, y in batches[:6]:
        step(x, y)
        sched.step()
    saved = pickle.dumps({"model": [p.read().copy() for p in model.parameters], "optim": opt.state_dict(),
                          "sched": sched.state_dict()})
    uninterrupted = []
    for x, y in batches[6:]:
        uninterrupted.append(step(x, y))
        sched.step()

    restored = pickle.loads(saved)
    model2, _ = _twin_models(9)  # different initial weights, overwritten by the load
    for p, a in zip(model2.parameters, restored["model"]):
        p.write(a)
    opt2 = make(model2)
    sched2 = lr_scheduler.StepLR(opt2, step_size=4, gamma=0.5)
    opt2.load_state_dict(restored["optim"])
    sched2.load_state_dict(restored["sched"])
    resumed = []
    for i, (x, y) in enumerate(batches[6:]):
        # Resume through the eager path for half the steps: both paths give the same numbers.
        resumed.append(opt2.step(nnf.cross_entropy(model2(F.const(x)), F.const(y))) if i % 2 else
                       opt2.compile(lambda xv, yv: nnf.cross_entropy(model2(xv), yv))(x, y))
        sched2.step()
    assert resumed == uninterrupted
    for a, b in zip(model.parameters, model2.parameters):
        np.testing.assert_array_equal(a.read(), b.read())


def test_module_freezing_and_mnn_names():
    model, _ = _twin_models(6)
    model.freeze("features")
    opt = optim.SGD(model, lr=0.1, momentum=0.9)
    assert len(opt.parameters) == 2  # the head's weight and bias
    frozen = [p.read().copy() for p in model.features.parameters]
    x, y = _batches(1)[0]
    opt.step(nnf.cross_entropy(model(F.const(x)), F.const(y)))
    for p, a in zip(model.features.parameters, frozen):
        np.testing.assert_array_equal(p.read(), a)
    opt.learning_rate = 0.01
    assert opt.lr == 0.01 and opt.get_learning_rate() == 0.01
    opt.set_learning_rate(0.02)
    assert all(g["lr"] == 0.02 for g in opt.param_groups)
    adam = optim.ADAM(model, 1e-3, 0.8, 0.99)
    assert adam.momentum == 0.8 and adam.momentum2 == 0.99


def test_fit_and_evaluate(capsys):
    from mnnpy.data import ArrayDataset, DataLoader
    model, _ = _twin_models(7)
    rng = np.random.default_rng(8)
    x = rng.standard_normal((70, 1, 8, 8)).astype(np.float32)
    y = (x[:, 0, :4].sum(axis=(1, 2)) > 0).astype(np.int64)  # learnable
    loader = DataLoader(ArrayDataset(x, y), batch_size=16, shuffle=True, seed=0)
    opt = optim.Adam(model, lr=1e-2)
    sched = lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    hist = optim.fit(model, loader, opt, nnf.cross_entropy, epochs=4, val_loader=loader, scheduler=sched,
                     progress=False)
    assert set(hist) >= {"loss", "accuracy", "samples_per_s", "lr", "val_loss", "val_accuracy"}
    assert len(hist["loss"]) == 4 and hist["lr"] == [0.01, 0.005, 0.0025, 0.00125]
    assert hist["loss"][-1] < hist["loss"][0]
    # on_epoch_end sees each epoch's history as it grows (a live loss curve); True stops training.
    seen = []
    hist = optim.fit(model, loader, opt, nnf.cross_entropy, epochs=3, progress=False,
                     on_epoch_end=lambda epoch, h: seen.append((epoch, list(h["loss"]))))
    assert seen == [(0, hist["loss"][:1]), (1, hist["loss"][:2]), (2, hist["loss"])]
    hist = optim.fit(model, loader, opt, nnf.cross_entropy, epochs=5, progress=False,
                     on_epoch_end=lambda epoch, h: epoch == 1)
    assert len(hist["loss"]) == 2 and not model.is_training
    with pytest.raises(TypeError, match="on_epoch_end must be callable"):
        optim.fit(model, loader, opt, nnf.cross_entropy, on_epoch_end=3)
    hist = optim.fit(model, loader, opt, nnf.cross_entropy, epochs=1, progress=True)
    bar = capsys.readouterr().err
    assert "epoch 1/1" in bar and "loss=" in bar and "acc=" in bar and "samples/s=" in bar
    result = optim.evaluate(model, loader, nnf.cross_entropy)
    logits = np.asarray(model(F.const(x)).read())
    np.testing.assert_allclose(result["accuracy"], np.mean(logits.argmax(1) == y))
    assert not model.is_training


def test_errors():
    rng = np.random.default_rng(0)
    ours, _ = _params(rng)
    with pytest.raises(ValueError, match="learning rate"):
        optim.SGD(ours, lr=-1)
    with pytest.raises(TypeError, match="lr"):
        optim.SGD(ours, lr="fast")
    with pytest.raises(ValueError, match="Nesterov"):
        optim.SGD(ours, lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="betas"):
        optim.Adam(ours, betas=(1.5, 0.9))
    with pytest.raises(ValueError, match="placeholders"):
        optim.SGD([F.const(np.zeros(3, np.float32))], lr=0.1)
    with pytest.raises(TypeError, match="Vars"):
        optim.SGD([np.zeros(3)], lr=0.1)
    with pytest.raises(ValueError, match="empty"):
        optim.SGD([], lr=0.1)
    frozen, _ = _twin_models(0)
    with pytest.raises(ValueError, match="no trainable parameters"):
        optim.SGD(frozen.requires_grad_(False), lr=0.1)
    with pytest.raises(ValueError, match="more than one"):
        optim.SGD([{"params": ours}, {"params": ours[:1]}], lr=0.1)
    with pytest.raises(ValueError, match="regularization_method"):
        optim.SGD(ours, lr=0.1, regularization_method="L3")
    opt = optim.SGD(ours, lr=0.1, momentum=0.9)
    with pytest.raises(ValueError, match="scalar"):
        opt.step(ours[0] * 2.0)
    with pytest.raises(TypeError, match="loss"):
        opt.step(3.0)
    with pytest.raises(ValueError, match="max_norm"):
        opt.clip_grad_norm(-1.0)
    with pytest.raises(ValueError, match="norm_type"):
        opt.clip_grad_norm(1.0, norm_type=0)
    with pytest.raises(TypeError, match="state_dict"):
        opt.load_state_dict([1, 2])
    other = optim.SGD(ours[:2], lr=0.1)
    with pytest.raises(ValueError, match="parameters"):
        other.load_state_dict(opt.state_dict())
    with pytest.raises(ValueError, match="milestones"):
        lr_scheduler.SequentialLR(opt, [lr_scheduler.StepLR(opt, 2)], milestones=[3])
    with pytest.raises(TypeError, match="fn"):
        opt.compile(42)


def test_planned_step_applies_module_buffer_updates_each_run():
    """Dropout advances a step buffer through the pending updates: each planned run draws a
    new mask (with lr 0 the loss then changes only through the mask)."""
    nn.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.Dropout(0.5), nn.Linear(32, 3))
    model.train()
    opt = optim.SGD(model, lr=0.0)
    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    y = np.array([0, 1, 2, 0])
    step = opt.compile(lambda xv, yv: nnf.cross_entropy(model(xv), yv), x, y)
    losses = [step(x, y) for _ in range(3)]
    assert len(set(losses)) == 3
    assert step.num_plans == 1


def test_sgd_takes_mnn_positional_order():
    # MNN's SGD(module, lr, momentum, weight_decay): the fourth argument is the weight decay.
    rng = np.random.default_rng()
    value = rng.standard_normal((3, 4)).astype(np.float32)
    results = []
    for make in (lambda p: optim.SGD([p], 0.05, 0.9, 0.01), lambda p: optim.SGD([p], lr=0.05, momentum=0.9, weight_decay=0.01)):
        p = nn.Parameter(value)
        opt = make(p)
        for _ in range(3):
            opt.step(F.reduce_sum(p * p * p))
        results.append(np.asarray(p).copy())
    assert not np.array_equal(results[0], value)
    np.testing.assert_array_equal(results[0], results[1])
