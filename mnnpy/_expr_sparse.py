"""Block-sparse weights: magnitude pruning in blocks, and the choice of when MatMul and 1x1
convolutions with a constant weight run block-sparse (docs/sparse.md)."""
import contextlib as _contextlib
import numbers as _numbers

import numpy as _np

from . import _core

__all__ = ["prune_blocks", "set_block_sparse", "get_block_sparse", "block_sparse"]


def _check_sparsity(sparsity):
    if isinstance(sparsity, bool) or not isinstance(sparsity, _numbers.Real):
        raise TypeError(f"sparsity must be a number in [0, 1), got {type(sparsity).__name__}")
    if not 0.0 <= float(sparsity) < 1.0:
        raise ValueError(f"sparsity must be in [0, 1) (the fraction of weights set to zero), got {sparsity}")
    return float(sparsity)


def _check_block(block, what="block"):
    try:
        bn, bk = block
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a pair (block_n, block_k) of positive integers, got {block!r}") from None
    for v in (bn, bk):
        if isinstance(v, bool) or not isinstance(v, _numbers.Integral) or v < 1:
            raise ValueError(f"{what} must be a pair (block_n, block_k) of positive integers, got {block!r}")
    return int(bn), int(bk)


def prune_blocks(w, sparsity, block=(1, 4)):
    """Magnitude pruning in blocks: ``w`` is a weight ``[N, K, ...]`` whose first axis is the
    output channels (a linear layer's ``[out, in]``, a convolution's ``[out, in, kh, kw]``; the
    other axes flattened into K). It is cut into blocks of ``block = (block_n, block_k)``
    (output rows x input columns; ``(1, 1)`` is unstructured pruning), and the
    ``round(sparsity * blocks)`` blocks of least L2 norm are set to zero; among blocks of equal norm
    the earlier one (row-major block order) goes first. Returns the pruned copy: a NumPy array of
    ``w``'s dtype, or a constant Var when ``w`` is a Var; ``w`` itself is not modified.

    ValueError when ``sparsity`` is outside [0, 1), ``block`` is not two positive integers or does
    not divide ``[N, K]``, or ``w`` has fewer than 2 axes; TypeError for a weight not of floats."""
    from ._core import Var
    is_var = isinstance(w, Var)
    values = _np.asarray(w.read() if is_var else w)
    sparsity = _check_sparsity(sparsity)
    bn, bk = _check_block(block)
    if values.dtype.kind != "f":
        raise TypeError(f"prune_blocks: the weight must be of floats, got dtype {values.dtype}")
    if values.ndim < 2:
        raise ValueError(f"prune_blocks: the weight needs at least 2 axes [N, K, ...], got shape {values.shape}")
    n = values.shape[0]
    k = int(_np.prod(values.shape[1:]))
    if n % bn or k % bk:
        raise ValueError(f"prune_blocks: block {(bn, bk)} does not divide the weight [N, K] = [{n}, {k}] "
                         f"(shape {values.shape}): N must be a multiple of {bn} and K of {bk}")
    blocks = values.reshape(n // bn, bn, k // bk, bk)
    norms = _np.sum(_np.square(blocks.astype(_np.float64)), axis=(1, 3))
    pruned = int(_np.floor(sparsity * norms.size + 0.5))
    keep = _np.ones(norms.size, dtype=bool)
    keep[_np.argsort(norms, axis=None, kind="stable")[:pruned]] = False
    out = _np.where(keep.reshape(norms.shape)[:, None, :, None], blocks, values.dtype.type(0))
    out = out.reshape(values.shape)
    if is_var:
        from .expr import const
        return const(out)
    return out


def set_block_sparse(threshold=0.7, block=None, min_weights=1024):
    """When MatMul and 1x1 convolutions (group 1, stride 1, no padding) with a constant float32
    weight run block-sparse on the CPU: once the share of the weight's values lying in all-zero
    blocks reaches ``threshold`` (in [0, 1]; None: never). ``block``: the block shape
    ``(block_n, block_k)`` to store weights in, or None to pick per weight the cheapest of 8x1,
    4x4, 4x1, 2x1, 1x4 and 1x1. Weights of fewer than ``min_weights`` values stay dense.
    Process-wide; the plan cache is cleared (a loaded module keeps the plans it made)."""
    if threshold is None:
        value = 2.0
    else:
        if isinstance(threshold, bool) or not isinstance(threshold, _numbers.Real):
            raise TypeError(f"threshold must be a number in [0, 1] or None, got {type(threshold).__name__}")
        if not 0.0 <= float(threshold) <= 1.0:
            raise ValueError(f"threshold must be in [0, 1] (a share of zero weights) or None, got {threshold}")
        value = float(threshold)
    bn, bk = (0, 0) if block is None else _check_block(block)
    if isinstance(min_weights, bool) or not isinstance(min_weights, _numbers.Integral) or min_weights < 0:
        raise ValueError(f"min_weights must be a non-negative integer, got {min_weights!r}")
    _core.set_block_sparse(value, bn, bk, int(min_weights))


def get_block_sparse():
    """The settings of ``set_block_sparse`` as a dict: threshold (None: never), block (None:
    chosen per weight), min_weights."""
    threshold, bn, bk, min_weights = _core.get_block_sparse()
    return {"threshold": None if threshold > 1.0 else threshold, "block": (bn, bk) if bn > 0 else None,
            "min_weights": min_weights}


@_contextlib.contextmanager
def block_sparse(threshold=0.7, block=None, min_weights=1024):
    """``set_block_sparse`` for the body of a ``with`` statement, restored after it."""
    before = get_block_sparse()
    set_block_sparse(threshold, block, min_weights)
    try:
        yield
    finally:
        set_block_sparse(**before)
