"""Planned training steps: the forward, backward and update graph is built once per batch shape
on placeholders and run as one plan for every batch of that shape.

A call passes the batch to the plan as the values of its input placeholders (nothing shared is
written, so a Predictor may be called from several threads), writes the optimizer's scalars
(learning rate, bias corrections) into theirs, runs the plan, and points the parameters,
optimizer state and module buffers at the new values. The numbers are the same as
``optimizer.step(loss)`` on the same graph.
"""
import threading

import numpy as np

from .. import _core
from .. import expr as F
from .._core import Var

__all__ = ["TrainStep", "Predictor"]


def _as_batch_array(x, index):
    if isinstance(x, Var):
        return np.asarray(x.read())
    if isinstance(x, np.ndarray):
        return x
    try:
        return np.asarray(x)
    except Exception:
        raise TypeError(f"batch input {index} must be an array or a Var, got {type(x).__name__}") from None


def _input_dtype(arr):
    if arr.dtype == np.float64:
        return np.dtype(np.float32)
    return arr.dtype


def _batch_key(arrays):
    return tuple((tuple(a.shape), _input_dtype(a).str) for a in arrays)


def _make_inputs(arrays):
    phs = []
    for a in arrays:
        phs.append(F.placeholder(list(a.shape), dtype=_input_dtype(a)))
    return phs


def _write_inputs(phs, arrays):
    for ph, a in zip(phs, arrays):
        dtype = np.dtype(ph.dtype)
        ph.write(np.ascontiguousarray(a if a.dtype == dtype else a.astype(dtype)))


class _StepPlan:
    def __init__(self, inputs, plan, n_extras, dests, norm_index, single):
        self.inputs = inputs
        self.plan = plan
        self.n_extras = n_extras
        self.dests = dests
        self.norm_index = norm_index
        self.single = single


class TrainStep:
    """``step = TrainStep(optimizer, fn, *example_batch)``; ``step(*batch)`` trains on one batch.

    ``fn(*batch_vars)`` builds the loss from placeholders shaped as the batch: it returns the
    scalar loss Var, or a tuple ``(loss, *extras)`` whose extras (logits, a correct-prediction
    count ...) are computed in the same plan and returned as NumPy arrays:
    ``step(*batch)`` returns the loss as a float, or ``(loss, *extras)``. One plan is made per
    set of batch shapes (the last, partial batch gets its own) and per optimizer structure
    (clipping on or off, ...). ``module`` (default: the optimizer's module) supplies the pending
    buffer updates that the forward records in training mode."""

    def __init__(self, optimizer, fn, *example_inputs, module=None):
        if not callable(fn):
            raise TypeError(f"TrainStep: fn must be callable, got {type(fn).__name__}")
        self.optimizer = optimizer
        self.fn = fn
        self.module = module if module is not None else optimizer._module
        self._plans = {}
        if example_inputs:
            self.plan_for(*example_inputs)

    @property
    def num_plans(self):
        return len(self._plans)

    def _pending(self):
        m = self.module
        if m is not None and hasattr(m, "pending_updates"):
            return list(m.pending_updates())
        return []

    def plan_for(self, *batch):
        """The plan for batches shaped as ``batch`` (built on first use)."""
        arrays = [_as_batch_array(x, i) for i, x in enumerate(batch)]
        mode = bool(getattr(self.module, "is_training", False))  # train and eval graphs differ
        key = (_batch_key(arrays), self.optimizer.structure_key(), mode)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._build(arrays)
            self._plans[key] = plan
        return plan, arrays

    def _build(self, arrays):
        opt = self.optimizer
        self._pending()  # drop updates recorded by earlier forwards outside this step
        inputs = _make_inputs(arrays)
        _write_inputs(inputs, arrays)  # planning needs values in every placeholder
        out = self.fn(*inputs)
        single = isinstance(out, Var)
        outs = [out] if single else list(out)
        if not outs or not isinstance(outs[0], Var):
            raise TypeError("TrainStep: fn must return the loss Var or a tuple (loss, *extras) of Vars")
        loss, extras = outs[0], outs[1:]
        for e in extras:
            if not isinstance(e, Var):
                raise TypeError(f"TrainStep: fn's extra outputs must be Vars, got {type(e).__name__}")
        opt._write_scalars()  # planning folds with values present; each run writes them again
        targets, dests, norm_index = opt._build_update(loss, self._pending())
        plan = _core.PlannedGraph([loss] + extras + targets, inputs)
        return _StepPlan(inputs, plan, len(extras), dests, norm_index, single)

    def __call__(self, *batch):
        plan, arrays = self.plan_for(*batch)
        opt = self.optimizer
        opt._write_scalars()
        values = plan.plan.run(arrays)  # converted to the placeholders' dtypes
        n = 1 + plan.n_extras
        opt._apply(values[n:], plan.dests, plan.norm_index)
        loss = float(np.asarray(values[0].read()).reshape(()))
        if plan.single:
            return loss
        return (loss,) + tuple(np.asarray(v.read()) for v in values[1:n])


class Predictor:
    """Planned inference: ``Predictor(fn)(*batch)`` computes ``fn(*batch_vars)`` (a Var or a
    tuple of Vars) with one plan per batch shape, returning NumPy arrays. Parameters are read
    from their placeholders at every call, so the plan follows training."""

    def __init__(self, fn):
        if not callable(fn):
            raise TypeError(f"Predictor: fn must be callable, got {type(fn).__name__}")
        self.fn = fn
        self._plans = {}
        self._build_lock = threading.Lock()

    def __call__(self, *batch):
        arrays = [_as_batch_array(x, i) for i, x in enumerate(batch)]
        key = _batch_key(arrays)
        entry = self._plans.get(key)
        if entry is None:
            with self._build_lock:
                entry = self._plans.get(key)
                if entry is None:
                    inputs = _make_inputs(arrays)
                    _write_inputs(inputs, arrays)  # fn may read values while it builds
                    out = self.fn(*inputs)
                    single = isinstance(out, Var)
                    outs = [out] if single else list(out)
                    entry = (inputs, _core.PlannedGraph(outs, inputs), single)
                    self._plans[key] = entry
        inputs, plan, single = entry
        values = [np.asarray(v.read()) for v in plan.run(arrays)]
        return values[0] if single else tuple(values)
