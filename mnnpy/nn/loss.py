"""MNN's ``nn.loss``: ``cross_entropy``, ``kl``, ``mse``, ``mae`` and ``hinge`` with MNN's
arguments ``(predicts, onehot_targets)`` and reduction.

Each loss sums its pointwise terms over axis 1 (the classes of a ``(batch, classes)`` pair)
and averages over the other axes, so a ``(batch, classes)`` pair gives the per-sample sum
averaged over the batch; a 1-D pair gives the mean of its terms. The result is a 0-d Var.

- ``cross_entropy``: ``-targets * log(predicts)``; ``predicts`` are probabilities (after a
  softmax), not logits.
- ``kl``: ``predicts * log(predicts / targets)``, the divergence of ``predicts`` from
  ``targets`` in MNN's order; with one-hot targets it is infinite (as in MNN). For the
  divergence of the targets from the predictions use ``nn.functional.kl_div``.
- ``mse``: ``(predicts - targets) ** 2``; ``mae``: ``|predicts - targets|``.
- ``hinge``: ``max(0, 1 - predicts * targets)``, with targets of +1/-1 (a 0 target adds 1).

PyTorch-style losses with reductions are in ``nn.functional`` and the ``nn.*Loss`` classes.
"""
import numpy as np

from .. import expr as F
from .._core import Var

__all__ = ["cross_entropy", "kl", "mse", "mae", "hinge"]


def _operands(predicts, targets, fn):
    """Both operands as Vars of the predictions' float dtype; a TypeError or ValueError names
    the problem (integer predictions, shapes that do not broadcast)."""
    p = predicts if isinstance(predicts, Var) else F.const(np.asarray(predicts, dtype=np.float32))
    t = targets if isinstance(targets, Var) else F.const(np.asarray(targets, dtype=np.float32))
    if np.dtype(p.dtype).kind != "f":
        raise TypeError(f"nn.loss.{fn}: predicts must be floating-point, got {np.dtype(p.dtype)}")
    if np.dtype(t.dtype).kind not in "biuf":
        raise TypeError(f"nn.loss.{fn}: onehot_targets must be numbers, got {np.dtype(t.dtype)}")
    try:
        np.broadcast_shapes(tuple(p.shape), tuple(t.shape))
    except ValueError:
        raise ValueError(f"nn.loss.{fn}: predicts of shape {tuple(p.shape)} and onehot_targets of shape "
                         f"{tuple(t.shape)} do not broadcast") from None
    if t.dtype != p.dtype:
        t = F.cast(t, np.dtype(p.dtype))
    return p, t


def _sum_classes_mean_rest(terms):
    """Sum over axis 1, then the mean of what remains (all of a 1-D array: its mean)."""
    if terms.ndim >= 2:
        terms = F.reduce_sum(terms, axis=[1])
    return F.reduce_mean(terms)


def cross_entropy(predicts, onehot_targets):
    """MNN's cross entropy of probabilities ``predicts`` against ``onehot_targets``."""
    p, t = _operands(predicts, onehot_targets, "cross_entropy")
    return F.negative(_sum_classes_mean_rest(F.multiply(t, F.log(p))))


def kl(predicts, onehot_targets):
    """MNN's KL divergence: ``predicts * log(predicts / targets)`` summed over the classes."""
    p, t = _operands(predicts, onehot_targets, "kl")
    return _sum_classes_mean_rest(F.multiply(p, F.subtract(F.log(p), F.log(t))))


def mse(predicts, onehot_targets):
    """MNN's mean squared error (squares summed over the classes, averaged over the batch)."""
    p, t = _operands(predicts, onehot_targets, "mse")
    return _sum_classes_mean_rest(F.square(F.subtract(p, t)))


def mae(predicts, onehot_targets):
    """MNN's mean absolute error (absolute differences summed over the classes, averaged over the batch)."""
    p, t = _operands(predicts, onehot_targets, "mae")
    return _sum_classes_mean_rest(F.abs(F.subtract(p, t)))


def hinge(predicts, onehot_targets):
    """MNN's hinge loss ``max(0, 1 - predicts * targets)`` summed over the classes."""
    p, t = _operands(predicts, onehot_targets, "hinge")
    one = F.const(np.asarray(1, dtype=np.dtype(p.dtype)))
    return _sum_classes_mean_rest(F.relu(F.subtract(one, F.multiply(p, t))))
