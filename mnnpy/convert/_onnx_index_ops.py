"""ONNX's Einsum, the Scatter family, GatherND with batch_dims, MaxUnpool and the two
classification losses (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss) as mnnpy.expr calls.

Every scatter lowers to the core's Scatter op over a flattened tensor: the flat position of each
update is computed with index arithmetic (Iota grids plus the given indices), and Scatter's
``reduction`` attribute folds repeated positions in index order (none, add, mul, max, min)."""
import numpy as np

from .. import _core
from .. import expr as F
from ._onnx_ops import _attr, _axis, _positions, handles

_REDUCTIONS = {"none": 0, "add": 1, "mul": 2, "max": 3, "min": 4}
_NATIVE_REDUCE_DTYPES = {np.dtype(t) for t in ("int32", "int64", "float32", "float64")}
_HALF_FLOATS = ("float16", "bfloat16")


def _row_major_strides(shape):
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= int(d)
    return strides[::-1]


def _grid(shape, strides, start=0):
    """An int64 tensor of ``shape`` whose element at (i0, i1, ...) is start + sum(i_d * strides[d])."""
    return _core.op("Iota", [], {"shape": [int(d) for d in shape], "start": int(start),
                                 "strides": [int(s) for s in strides]})


def _reduction(node):
    name = _attr(node, "reduction", "none")
    name = name.decode() if isinstance(name, bytes) else name
    if name not in _REDUCTIONS:
        raise ValueError(f"unknown reduction {name!r}; expected one of {', '.join(_REDUCTIONS)}")
    return _REDUCTIONS[name]


def _checked_indices(ctx, node, indices, sizes, what):
    """``indices`` (int64) with negative entries counted from the end of ``sizes`` (broadcast
    against them), and a mask of the entries inside the range. Indices known when the graph is
    built are checked at once: an index out of range raises ValueError."""
    if np.dtype(indices.dtype).kind not in "iu":
        raise TypeError(f"{what} must be integers, got {indices.dtype}")
    idx = F.cast(indices, np.int64) if indices.dtype != np.int64 else indices
    if not idx.reads_placeholder and idx.size:
        value = np.asarray(ctx.static(idx, node, what)).astype(np.int64)
        limit = np.broadcast_to(np.asarray(sizes), value.shape)
        bad = (value < -limit) | (value >= limit)
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            raise ValueError(f"{what} {int(value[where])} at {where} is out of range for a dimension of "
                             f"{int(limit[where])}")
    sizes = F.const(np.asarray(sizes, np.int64))
    idx = F.select(F.less(idx, np.int64(0)), F.add(idx, sizes), idx)
    valid = F.logical_and(F.greater_equal(idx, np.int64(0)), F.less(idx, sizes))
    return idx, valid


def _scatter_flat(data, positions, valid, updates, reduction):
    """data with updates written (or folded in) at the flat ``positions`` along its first axis;
    positions where ``valid`` is false are skipped. Updates are data.shape[1:] rows per position."""
    count = int(data.shape[0])
    # A position below -count stays negative after Scatter's wrap-around: the kernel skips it.
    positions = F.select(valid, positions, np.int64(-count - 1))
    compute = data.dtype
    if reduction and (str(data.dtype) in _HALF_FLOATS or np.dtype(data.dtype) not in _NATIVE_REDUCE_DTYPES):
        # bool folds like 0/1 integers (add: or, mul: and), narrow types in a wide one.
        compute = np.float32 if str(data.dtype) in _HALF_FLOATS or np.dtype(data.dtype).kind == "f" else np.int64
    work, work_updates = data, updates
    if compute != data.dtype:
        work, work_updates = F.cast(data, compute), F.cast(updates, compute)
    elif updates.dtype != data.dtype:
        work_updates = F.cast(updates, data.dtype)
    out = _core.op("Scatter", [work, positions, work_updates], {"axis": 0, "reduction": int(reduction)})
    return F.cast(out, data.dtype) if compute != data.dtype else out


# ------------------------------------------------------------------ Einsum
@handles("Einsum")
def _einsum(ctx, node, ins):
    from ..numpy import einsum
    equation = _attr(node, "equation")
    if equation is None:
        raise ValueError("Einsum needs an 'equation' attribute")
    equation = equation.decode() if isinstance(equation, bytes) else str(equation)
    if not ins or any(x is None for x in ins):
        raise ValueError("Einsum needs at least one input and no omitted ones")
    dtypes = {str(x.dtype) for x in ins}
    if len(dtypes) > 1:
        raise TypeError(f"Einsum inputs must share one type, got {sorted(dtypes)}")
    dtype = ins[0].dtype
    # Half-precision products accumulate in float32 (as the matmul kernels of other runtimes do).
    widen = str(dtype) in _HALF_FLOATS
    operands = [F.cast(x, np.float32) for x in ins] if widen else list(ins)
    out = einsum(equation, *operands)
    return F.cast(out, dtype) if widen or out.dtype != dtype else out


# ------------------------------------------------------------------ Scatter family
@handles("Scatter", "ScatterElements")
def _scatter_elements(ctx, node, ins):
    data, indices, updates = ins[0], ins[1], ins[2]
    reduction = _reduction(node) if node.op == "ScatterElements" else 0
    rank = data.ndim
    if rank == 0:
        raise ValueError("data must have at least one dimension")
    axis = _axis(_attr(node, "axis", 0), rank)
    if indices.ndim != rank:
        raise ValueError(f"indices have rank {indices.ndim}, data has rank {rank}; they must match")
    if tuple(indices.shape) != tuple(updates.shape):
        raise ValueError(f"updates {tuple(updates.shape)} must have the indices' shape {tuple(indices.shape)}")
    if any(i > d for a, (i, d) in enumerate(zip(indices.shape, data.shape)) if a != axis):
        raise ValueError(f"indices {tuple(indices.shape)} exceed the data {tuple(data.shape)} on an axis other "
                         f"than {axis}")
    if updates.dtype != data.dtype:
        raise TypeError(f"updates ({updates.dtype}) must have the data's type ({data.dtype})")
    strides = _row_major_strides(data.shape)
    idx, valid = _checked_indices(ctx, node, indices, np.int64(data.shape[axis]), "index")
    # Flat position: the element's own coordinates on every axis but `axis`, which the index gives.
    base = _grid(indices.shape, [s if a != axis else 0 for a, s in enumerate(strides)])
    positions = F.add(base, F.multiply(idx, np.int64(strides[axis])))
    flat = F.reshape(data, [int(np.prod(data.shape))])
    count = int(np.prod(indices.shape))
    out = _scatter_flat(flat, F.reshape(positions, [count]), F.reshape(valid, [count]),
                        F.reshape(updates, [count]), reduction)
    return F.reshape(out, list(data.shape))


@handles("ScatterND")
def _scatter_nd(ctx, node, ins):
    data, indices, updates = ins[0], ins[1], ins[2]
    reduction = _reduction(node)
    if indices.ndim < 1:
        raise ValueError("indices must have at least one dimension")
    k = int(indices.shape[-1])
    if not 1 <= k <= data.ndim:
        raise ValueError(f"indices' last dimension ({k}) must be between 1 and the data's rank ({data.ndim})")
    expected = tuple(indices.shape[:-1]) + tuple(data.shape[k:])
    if tuple(updates.shape) != expected:
        raise ValueError(f"updates must have shape {expected} (indices {tuple(indices.shape)}, data "
                         f"{tuple(data.shape)}), got {tuple(updates.shape)}")
    if updates.dtype != data.dtype:
        raise TypeError(f"updates ({updates.dtype}) must have the data's type ({data.dtype})")
    head = [int(d) for d in data.shape[:k]]
    idx, valid = _checked_indices(ctx, node, indices, np.asarray(head, np.int64), "index")
    # Row of data.reshape(prod(head), -1) that each index tuple names; invalid if any part is.
    row = F.reduce_sum(F.multiply(idx, F.const(np.asarray(_row_major_strides(head), np.int64))), [-1], False)
    valid = F.reduce_all(valid, [-1], False)
    rows, inner = int(np.prod(head)), int(np.prod(data.shape[k:]))
    count = int(np.prod(indices.shape[:-1]))
    out = _scatter_flat(F.reshape(data, [rows, inner]), F.reshape(row, [count]), F.reshape(valid, [count]),
                        F.reshape(updates, [count, inner]), reduction)
    return F.reshape(out, list(data.shape))


# ------------------------------------------------------------------ GatherND, MaxUnpool
@handles("GatherND")
def _gather_nd(ctx, node, ins):
    data, indices = ins[0], ins[1]
    b = int(_attr(node, "batch_dims", 0))
    if indices.ndim < 1:
        raise ValueError("indices must have at least one dimension")
    k = int(indices.shape[-1])
    if not 0 <= b < min(data.ndim, indices.ndim):
        raise ValueError(f"batch_dims {b} must be below the ranks of data ({data.ndim}) and indices "
                         f"({indices.ndim})")
    if tuple(data.shape[:b]) != tuple(indices.shape[:b]):
        raise ValueError(f"the first {b} dimensions of data {tuple(data.shape)} and indices "
                         f"{tuple(indices.shape)} must match")
    if not 1 <= k <= data.ndim - b:
        raise ValueError(f"indices' last dimension ({k}) must be between 1 and {data.ndim - b} "
                         f"(data rank {data.ndim} less batch_dims {b})")
    head = [int(d) for d in data.shape[b:b + k]]
    idx, valid = _checked_indices(ctx, node, indices, np.asarray(head, np.int64), "index")
    batch = int(np.prod(data.shape[:b]))
    middle = [int(d) for d in indices.shape[b:-1]]
    tail = [int(d) for d in data.shape[b + k:]]
    # Batches and indexed axes flattened into one axis of rows: row = batch * prod(head) + offset.
    offsets = F.reduce_sum(F.multiply(idx, F.const(np.asarray(_row_major_strides(head), np.int64))), [-1], False)
    count = batch * int(np.prod(head))
    # An index tuple out of range reads zeros (Gather's rule for a row below -count) rather than
    # a neighbouring row.
    offsets = F.select(F.reduce_all(valid, [-1], False), offsets, np.int64(-2 * count - 1))
    offsets = F.reshape(offsets, [batch, int(np.prod(middle))])
    rows = F.add(offsets, _grid([batch, 1], [int(np.prod(head)), 0]))
    table = F.reshape(data, [count] + tail)
    out = F.gather(table, rows, 0)
    return F.reshape(out, [int(d) for d in data.shape[:b]] + middle + tail)


@handles("MaxUnpool")
def _max_unpool(ctx, node, ins):
    x, indices = ins[0], ins[1]
    spatial = x.ndim - 2
    if spatial < 1:
        raise ValueError(f"input must be (N, C, spatial...), got shape {tuple(x.shape)}")
    kernel = list(_attr(node, "kernel_shape") or [])
    if len(kernel) != spatial:
        raise ValueError(f"kernel_shape {kernel} must have {spatial} entries")
    strides = list(_attr(node, "strides", [1] * spatial))
    pads = list(_attr(node, "pads", [0] * 2 * spatial))
    if len(strides) != spatial or len(pads) != 2 * spatial:
        raise ValueError(f"strides {strides} / pads {pads} do not match {spatial} spatial axes")
    if tuple(indices.shape) != tuple(x.shape):
        raise ValueError(f"indices {tuple(indices.shape)} must have the input's shape {tuple(x.shape)}")
    out_shape = list(x.shape[:2]) + [(int(x.shape[2 + i]) - 1) * strides[i] - pads[i] - pads[spatial + i] + kernel[i]
                                     for i in range(spatial)]
    if len(ins) > 2 and ins[2] is not None:
        # The shape MaxPool's input had (several sizes pool to one): its indices address it.
        given = [int(v) for v in np.asarray(ctx.static(ins[2], node, "output_shape")).reshape(-1)]
        if len(given) != x.ndim or given[:2] != out_shape[:2]:
            raise ValueError(f"output_shape {given} must be (N, C, spatial...) with the input's N and C")
        out_shape = given
    if any(d <= 0 for d in out_shape):
        raise ValueError(f"the unpooled shape {out_shape} is empty (input {tuple(x.shape)}, kernel {kernel}, "
                         f"strides {strides}, pads {pads})")
    total = int(np.prod(out_shape))
    idx, valid = _checked_indices(ctx, node, indices, np.int64(total), "index")
    count = int(np.prod(x.shape))
    zeros = F.const(np.zeros([total], np.float32))
    zeros = F.cast(zeros, x.dtype) if zeros.dtype != x.dtype else zeros
    out = _scatter_flat(zeros, F.reshape(idx, [count]), F.reshape(valid, [count]), F.reshape(x, [count]), 0)
    return F.reshape(out, out_shape)


# ------------------------------------------------------------------ losses
def _loss_reduction(node):
    name = _attr(node, "reduction", "mean")
    name = name.decode() if isinstance(name, bytes) else name
    if name not in ("none", "sum", "mean"):
        raise ValueError(f"unknown reduction {name!r}; expected 'none', 'sum' or 'mean'")
    return name


def _negative_log_likelihood(node, log_prob, target, weight):
    """ONNX's NLL loss of log-probabilities (N, C, d...) at integer targets (N, d...)."""
    if log_prob.ndim < 2:
        raise ValueError(f"input must be (N, C, d...), got shape {tuple(log_prob.shape)}")
    expected = (log_prob.shape[0],) + tuple(log_prob.shape[2:])
    if tuple(target.shape) != tuple(expected):
        raise ValueError(f"target must have shape {expected} for input {tuple(log_prob.shape)}, "
                         f"got {tuple(target.shape)}")
    if np.dtype(target.dtype).kind not in "iu":
        raise TypeError(f"target must be integers, got {target.dtype}")
    classes = int(log_prob.shape[1])
    if weight is not None and tuple(weight.shape) != (classes,):
        raise ValueError(f"weight must have shape ({classes},), got {tuple(weight.shape)}")
    reduction = _loss_reduction(node)
    ignore = _attr(node, "ignore_index")
    dtype = log_prob.dtype
    compute = np.float32 if str(dtype) in _HALF_FLOATS else dtype
    x = F.cast(log_prob, compute) if compute != dtype else log_prob
    t = F.cast(target, np.int64) if target.dtype != np.int64 else target
    # One-hot over the class axis: picks x[n, t, d...] and weight[t] in one pass over the input,
    # and a target outside [0, C) (ignore_index may be) picks nothing.
    hot = F.equal(F.unsqueeze(t, [1]), _positions(classes, 1, log_prob.ndim))
    zero = np.asarray(0, compute)
    picked = F.reduce_sum(F.select(hot, x, zero), [1], False)
    if weight is not None:
        w = F.cast(weight, compute) if weight.dtype != compute else weight
        w = F.reshape(w, [1, classes] + [1] * (log_prob.ndim - 2))
        picked_weight = F.reduce_sum(F.select(hot, w, zero), [1], False)
    else:
        picked_weight = F.cast(F.reduce_any(hot, [1], False), compute)
    if ignore is not None:
        picked_weight = F.select(F.equal(t, np.int64(ignore)), zero, picked_weight)
    loss = F.negative(F.multiply(picked, picked_weight))
    if reduction == "none":
        out = loss
    else:
        out = F.reduce_sum(loss, list(range(loss.ndim)), False)
        if reduction == "mean":
            out = F.divide(out, F.reduce_sum(picked_weight, list(range(loss.ndim)), False))
    return F.cast(out, dtype) if compute != dtype else out


@handles("NegativeLogLikelihoodLoss")
def _nll_loss(ctx, node, ins):
    weight = ins[2] if len(ins) > 2 else None
    return _negative_log_likelihood(node, ins[0], ins[1], weight)


@handles("SoftmaxCrossEntropyLoss")
def _softmax_cross_entropy(ctx, node, ins):
    scores, labels = ins[0], ins[1]
    weight = ins[2] if len(ins) > 2 else None
    if scores.ndim < 2:
        raise ValueError(f"scores must be (N, C, d...), got shape {tuple(scores.shape)}")
    dtype = scores.dtype
    compute = np.float32 if str(dtype) in _HALF_FLOATS else dtype
    x = F.cast(scores, compute) if compute != dtype else scores
    shifted = F.subtract(x, F.reduce_max(x, [1], True))
    log_prob = F.subtract(shifted, F.log(F.reduce_sum(F.exp(shifted), [1], True)))
    loss = _negative_log_likelihood(node, log_prob, labels, weight)
    loss = F.cast(loss, dtype) if loss.dtype != dtype else loss
    log_prob = F.cast(log_prob, dtype) if compute != dtype else log_prob
    return [loss, log_prob]
