"""A small training loop: ``fit`` trains with planned steps and a tqdm progress bar (loss,
accuracy, samples per second) and returns the per-epoch history; ``evaluate`` computes loss and
accuracy in evaluation mode with planned inference."""
import time

import numpy as np

from .. import expr as F
from .._core import Var
from .train_step import Predictor

__all__ = ["fit", "evaluate"]

_METRICS = ("accuracy",)


def _split_batch(batch):
    """(inputs list, targets list) from ``(x, y)``, ``([x...], [y...])`` or ``{"inputs", "targets"}``."""
    if isinstance(batch, dict):
        if "inputs" not in batch or "targets" not in batch:
            raise ValueError("a dict batch needs 'inputs' and 'targets' entries")
        batch = (batch["inputs"], batch["targets"])
    if not isinstance(batch, (tuple, list)) or len(batch) != 2:
        raise ValueError("batches must be (inputs, targets) pairs")
    inputs, targets = batch
    inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    targets = list(targets) if isinstance(targets, (list, tuple)) else [targets]
    return inputs, targets


def _first_output(out):
    return out if isinstance(out, Var) else list(out)[0]


def _correct_count(logits, target):
    """How many rows' largest logit is at the target class (a float32 scalar Var)."""
    pred = F.argmax(logits, axis=1)
    target = F.cast(target, pred.dtype) if target.dtype != pred.dtype else target
    return F.reduce_sum(F.cast(F.equal(pred, target), np.float32))


def _check_metrics(metrics):
    metrics = tuple(metrics or ())
    for m in metrics:
        if m not in _METRICS:
            raise ValueError(f"unknown metric {m!r}; available: {_METRICS}")
    return metrics


def _set_training(model, on):
    if hasattr(model, "train"):
        model.train(on)


def _is_training(model):
    return bool(getattr(model, "is_training", getattr(model, "training", False)))


def _progress(iterable, total, desc, enabled):
    if not enabled:
        return iterable, None
    try:
        from tqdm import tqdm
    except ImportError:  # the bar is optional: train without it
        return iterable, None
    bar = tqdm(iterable, total=total, desc=desc, leave=True, dynamic_ncols=True)
    return bar, bar


class _Evaluator:
    """Planned forward passes of a model in evaluation mode, kept across epochs."""

    def __init__(self, model, loss_fn, metrics):
        self.model = model
        self.loss_fn = loss_fn
        self.metrics = metrics
        self._predictors = {}

    def _predictor(self, n_inputs, n_targets):
        key = (n_inputs, n_targets)
        if key not in self._predictors:
            def forward(*vs):
                out = _first_output(self.model(*vs[:n_inputs]))
                results = []
                if self.loss_fn is not None:
                    results.append(self.loss_fn(out, *vs[n_inputs:]))
                if "accuracy" in self.metrics:
                    results.append(_correct_count(out, vs[n_inputs]))
                return tuple(results)
            self._predictors[key] = Predictor(forward)
        return self._predictors[key]

    def __call__(self, loader):
        was_training = _is_training(self.model)
        _set_training(self.model, False)
        try:
            total_loss, correct, count = 0.0, 0.0, 0
            for batch in loader:
                inputs, targets = _split_batch(batch)
                values = list(self._predictor(len(inputs), len(targets))(*inputs, *targets))
                n = len(np.asarray(inputs[0]) if not isinstance(inputs[0], Var) else inputs[0].read())
                if self.loss_fn is not None:
                    total_loss += float(values.pop(0)) * n
                if "accuracy" in self.metrics:
                    correct += float(values.pop(0))
                count += n
        finally:
            _set_training(self.model, was_training)
        if count == 0:
            raise ValueError("evaluate: the loader gave no batches")
        result = {}
        if self.loss_fn is not None:
            result["loss"] = total_loss / count
        if "accuracy" in self.metrics:
            result["accuracy"] = correct / count
        return result


def evaluate(model, loader, loss_fn=None, metrics=("accuracy",)):
    """Mean loss (when ``loss_fn`` is given) and accuracy of ``model`` over ``loader``'s
    ``(inputs, targets)`` batches, in evaluation mode; returns a dict."""
    return _Evaluator(model, loss_fn, _check_metrics(metrics))(loader)


def fit(model, loader, optimizer, loss_fn, epochs=1, val_loader=None, metrics=("accuracy",), scheduler=None,
        progress=True, verbose=False, on_epoch_end=None):
    """Trains ``model`` for ``epochs`` passes over ``loader`` with planned steps of
    ``optimizer`` on ``loss_fn(model(*inputs), *targets)``. ``scheduler.step()`` runs after
    each epoch. Shows a tqdm bar per epoch (``progress=False`` hides it) and, with
    ``verbose``, prints one line per epoch. Returns the history: per-epoch lists ``loss``,
    ``accuracy``, ``samples_per_s``, ``lr`` and, with ``val_loader``, ``val_loss`` and
    ``val_accuracy``. ``on_epoch_end(epoch, history)``, where given, is called after each epoch
    (0-based) with the history so far (a live loss curve in a notebook, checkpoints); when it
    returns True, training stops there (early stopping)."""
    if not callable(loss_fn):
        raise TypeError(f"fit: loss_fn must be callable, got {type(loss_fn).__name__}")
    if isinstance(epochs, bool) or not isinstance(epochs, (int, np.integer)) or epochs < 0:
        raise ValueError(f"fit: epochs must be a non-negative int, got {epochs!r}")
    if on_epoch_end is not None and not callable(on_epoch_end):
        raise TypeError(f"fit: on_epoch_end must be callable, got {type(on_epoch_end).__name__}")
    metrics = _check_metrics(metrics)
    history = {"loss": [], "samples_per_s": [], "lr": []}
    for m in metrics:
        history[m] = []
    if val_loader is not None:
        history["val_loss"] = []
        for m in metrics:
            history["val_" + m] = []
    evaluator = _Evaluator(model, loss_fn, metrics)
    steps = {}

    def train_step(n_inputs, n_targets):
        key = (n_inputs, n_targets)
        if key not in steps:
            def fn(*vs):
                out = _first_output(model(*vs[:n_inputs]))
                loss = loss_fn(out, *vs[n_inputs:])
                if "accuracy" in metrics:
                    return loss, _correct_count(out, vs[n_inputs])
                return loss, F.const(np.float32(0.0))
            steps[key] = optimizer.compile(fn, module=model if hasattr(model, "pending_updates") else None)
        return steps[key]

    try:
        total = len(loader)
    except TypeError:
        total = None
    for epoch in range(int(epochs)):
        _set_training(model, True)
        history["lr"].append(optimizer.lr)
        bar_iter, bar = _progress(loader, total, f"epoch {epoch + 1}/{epochs}", progress)
        total_loss, correct, count = 0.0, 0.0, 0
        start = time.perf_counter()
        for batch in bar_iter:
            inputs, targets = _split_batch(batch)
            n = len(inputs[0]) if not isinstance(inputs[0], Var) else int(inputs[0].shape[0])
            loss, batch_correct = train_step(len(inputs), len(targets))(*inputs, *targets)
            total_loss += loss * n
            correct += float(batch_correct)
            count += n
            if bar is not None:
                elapsed = time.perf_counter() - start
                post = {"loss": f"{total_loss / count:.4f}"}
                if "accuracy" in metrics:
                    post["acc"] = f"{correct / count:.4f}"
                post["samples/s"] = f"{count / max(elapsed, 1e-9):.0f}"
                bar.set_postfix(post, refresh=False)
        elapsed = time.perf_counter() - start
        if bar is not None:
            bar.close()
        if count == 0:
            raise ValueError("fit: the loader gave no batches")
        history["loss"].append(total_loss / count)
        if "accuracy" in metrics:
            history["accuracy"].append(correct / count)
        history["samples_per_s"].append(count / max(elapsed, 1e-9))
        if val_loader is not None:
            val = evaluator(val_loader)
            history["val_loss"].append(val["loss"])
            for m in metrics:
                history["val_" + m].append(val[m])
        if scheduler is not None:
            scheduler.step()
        if verbose:
            parts = [f"epoch {epoch + 1}/{epochs}", f"loss {history['loss'][-1]:.4f}"]
            if "accuracy" in metrics:
                parts.append(f"acc {history['accuracy'][-1]:.4f}")
            if val_loader is not None:
                parts.append(f"val_loss {history['val_loss'][-1]:.4f}")
                parts += [f"val_{m} {history['val_' + m][-1]:.4f}" for m in metrics]
            parts.append(f"{history['samples_per_s'][-1]:.0f} samples/s")
            print("  ".join(parts))
        if on_epoch_end is not None and on_epoch_end(epoch, history) is True:
            break
    _set_training(model, False)
    return history
