"""Sorting and set functions: sort, argsort, lexsort, partition, unique and the set operations.

Every sort is stable (a radix sort in C++), whatever ``kind`` says; NaN sorts after every
number, as in NumPy. ``partition`` and ``argpartition`` return a full sort, which satisfies
their contract. unique's results have data-dependent shapes, so unique (and the set functions
built on it) evaluate their inputs when called. ``unique_values`` and friends return sorted
values (NumPy leaves their order unspecified).
"""
import operator as _operator
from typing import NamedTuple

import numpy as _np

from .. import _core
from .._core import Var
from ._common import AxisError, asvar, normalize_axis

__all__ = [
    "sort", "argsort", "msort", "lexsort", "partition", "argpartition",
    "unique", "unique_values", "unique_counts", "unique_inverse", "unique_all",
    "intersect1d", "union1d", "setdiff1d", "setxor1d", "isin",
]

_SORT_KINDS = ("q", "h", "m", "s")  # NumPy reads a kind by its first letter


def _check_sort_kind(kind, stable):
    if kind is not None and stable is not None:
        raise ValueError("`kind` and keyword parameters can't be provided at the same time. Use only one of them.")
    if kind is None:
        return
    if not isinstance(kind, str):
        raise TypeError(f"sort kind must be str or None (got {type(kind).__name__})")
    if kind[:1].lower() not in _SORT_KINDS:
        raise ValueError(f"sort kind must be one of 'quick', 'heap', or 'stable' (got '{kind}')")


def _check_order(order):
    if order is not None:
        raise ValueError("Cannot specify order when the array has no fields.")


def _flat(x):
    return _core.reshape(x, (-1,))


def _along(x, axis):
    """``x`` and the axis to sort on (None: the flattened array, axis 0)."""
    if axis is None:
        return _flat(x), 0
    return x, normalize_axis(axis, x.ndim)


def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """A sorted copy of ``a`` along ``axis`` (None: flattened first)."""
    _check_sort_kind(kind, stable)
    _check_order(order)
    x, axis = _along(asvar(a), axis)
    return _core.op("Sort", [x], {"axis": axis})


def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    """Indices (int64) that sort ``a`` along ``axis``; equal values keep their order."""
    _check_sort_kind(kind, stable)
    _check_order(order)
    x, axis = _along(asvar(a), axis)
    return _core.op("ArgSort", [x], {"axis": axis})


def msort(a):
    """``a`` sorted along its first axis."""
    return sort(a, axis=0)


def _take_rows(values, perm, axis):
    """``take_along_axis(values, perm, axis)`` for a permutation along ``axis``."""
    moved = _core.transpose(values, _moved_perm(values.ndim, axis)) if axis != values.ndim - 1 else values
    perm_moved = _core.transpose(perm, _moved_perm(perm.ndim, axis)) if axis != perm.ndim - 1 else perm
    n = moved.shape[-1] if moved.ndim else 1
    rows = int(_np.prod(moved.shape[:-1], dtype=_np.int64))
    offsets = asvar((_np.arange(rows, dtype=_np.int64) * n).reshape(tuple(moved.shape[:-1]) + (1,)))
    flat_index = _core.binary("Add", perm_moved, offsets)
    taken = _core.gather(_flat(moved), flat_index, 0)
    if axis != values.ndim - 1:
        taken = _core.transpose(taken, list(_np.argsort(_moved_perm(values.ndim, axis))))
    return taken


def _moved_perm(ndim, axis):
    return [i for i in range(ndim) if i != axis] + [axis]


def lexsort(keys, axis=-1):
    """Indices that sort by several keys, the last key first; stable."""
    if isinstance(keys, Var) or isinstance(keys, _np.ndarray):
        key_vars = [asvar(keys)[i] for i in range(keys.shape[0])] if len(keys.shape) else [asvar(keys)]
    elif isinstance(keys, (list, tuple)):
        key_vars = [asvar(k) for k in keys]
    else:
        key_vars = [asvar(keys)]
    if not key_vars:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    shape = tuple(key_vars[0].shape)
    if any(tuple(k.shape) != shape for k in key_vars):
        raise ValueError("all keys need to be the same shape")
    if not shape:
        normalize_axis(axis, 1)
        return asvar(_np.int64(0))
    axis = normalize_axis(axis, len(shape))
    perm = _core.op("ArgSort", [key_vars[0]], {"axis": axis})
    for key in key_vars[1:]:
        reordered = _take_rows(key, perm, axis)
        perm = _take_rows(perm, _core.op("ArgSort", [reordered], {"axis": axis}), axis)
    return perm


def _check_kth(kth, n):
    kths = _np.asarray(kth.read() if isinstance(kth, Var) else kth)
    if kths.dtype.kind not in "iu" and not (kths.dtype.kind == "b" and kths.size == 0):
        if kths.dtype.kind == "b":
            raise TypeError("Passing booleans as partition index is expired")
        raise TypeError(f"Partition index must be integer, got {kths.dtype}")
    if kths.ndim > 1:
        raise ValueError("kth array must have dimension <= 1")
    for k in kths.reshape(-1):
        k = int(k)
        if not -n <= k < n:
            raise ValueError(f"kth(={k}) out of bounds ({n})")


def _partition_args(a, kth, axis, kind, order):
    if kind != "introselect":
        raise ValueError(f"select kind must be 'introselect' (got '{kind}')")
    _check_order(order)
    x, axis = _along(asvar(a), axis)
    _check_kth(kth, x.shape[axis])
    return x, axis


def partition(a, kth, axis=-1, kind="introselect", order=None):
    """``a`` rearranged so that the ``kth`` elements are in their sorted places, smaller ones
    before and larger ones after (here: fully sorted)."""
    x, axis = _partition_args(a, kth, axis, kind, order)
    return _core.op("Sort", [x], {"axis": axis})


def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    """Indices that partition ``a`` as ``partition`` does."""
    x, axis = _partition_args(a, kth, axis, kind, order)
    return _core.op("ArgSort", [x], {"axis": axis})


# ---- unique ---------------------------------------------------------------------------------

class UniqueAllResult(NamedTuple):
    values: Var
    indices: Var
    inverse_indices: Var
    counts: Var


class UniqueCountsResult(NamedTuple):
    values: Var
    counts: Var


class UniqueInverseResult(NamedTuple):
    values: Var
    inverse_indices: Var


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *, equal_nan=True,
           sorted=True):
    """The sorted distinct values of ``ar`` (flattened, or its distinct slices along ``axis``),
    with the first indices, the inverse and the counts when asked for."""
    x = asvar(ar)
    if axis is None:
        values, index, inverse, counts = _core.unique_flat(x, bool(return_index), bool(return_inverse),
                                                           bool(return_counts), bool(equal_nan))
        if inverse is not None:
            inverse = _core.reshape(inverse, tuple(x.shape))
    else:
        axis = normalize_axis(axis, x.ndim)
        moved = _core.transpose(x, [axis] + [i for i in range(x.ndim) if i != axis]) if axis else x
        rows = moved.shape[0]
        row_len = int(_np.prod(moved.shape[1:], dtype=_np.int64))
        as_rows = _core.reshape(moved, (rows, row_len))
        # Rows holding NaN never compare equal to one another (NumPy compares them as records).
        _, index, inverse, counts = _core.unique_rows(as_rows, bool(return_inverse), bool(return_counts), False)
        values = _core.gather(x, index, axis)
    parts = [values]
    if return_index:
        parts.append(index)
    if return_inverse:
        parts.append(inverse)
    if return_counts:
        parts.append(counts)
    return parts[0] if len(parts) == 1 else tuple(parts)


def unique_values(x):
    """The distinct values of ``x`` (every NaN distinct)."""
    return unique(x, equal_nan=False)


def unique_counts(x):
    """The distinct values of ``x`` and how often each occurs."""
    values, counts = unique(x, return_counts=True, equal_nan=False)
    return UniqueCountsResult(values, counts)


def unique_inverse(x):
    """The distinct values of ``x`` and, of ``x``'s shape, the number of each element's value."""
    values, inverse = unique(x, return_inverse=True, equal_nan=False)
    return UniqueInverseResult(values, inverse)


def unique_all(x):
    """Distinct values, first indices, inverse (of ``x``'s shape) and counts."""
    values, index, inverse, counts = unique(x, return_index=True, return_inverse=True, return_counts=True,
                                            equal_nan=False)
    return UniqueAllResult(values, index, inverse, counts)


# ---- set operations -------------------------------------------------------------------------

def _common_pair(a, b):
    """Both operands in their common dtype (NumPy's concatenate promotion)."""
    a, b = asvar(a), asvar(b)
    dtype = _core.promote_types(a.dtype, b.dtype)
    if a.dtype != dtype:
        a = _core.cast(a, dtype)
    if b.dtype != dtype:
        b = _core.cast(b, dtype)
    return a, b


def _concat(a, b):
    return _core.concat([a, b], 0)


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False):
    """The sorted values present in both arrays (with their first indices in each when asked)."""
    a, b = _common_pair(ar1, ar2)
    if not assume_unique:
        if return_indices:
            a, index1 = unique(a, return_index=True)
            b, index2 = unique(b, return_index=True)
        else:
            a, b = unique(a), unique(b)
    else:
        a, b = _flat(a), _flat(b)
    aux = _concat(a, b)
    if return_indices:
        order = argsort(aux)
        aux = _core.gather(aux, order, 0)
    else:
        aux = sort(aux)
    n = aux.shape[0]
    if n == 0:
        both = asvar(_np.zeros(0, dtype=bool))
    else:
        both = _core.binary("Equal", aux[1:], aux[:-1])
    common = aux[:-1][both] if n else aux
    if not return_indices:
        return common
    size1 = a.shape[0]
    if n:
        in1 = order[:-1][both]
        in2 = _core.binary("Sub", order[1:][both], _core.scalar(size1, order))
    else:
        in1 = in2 = asvar(_np.zeros(0, dtype=_np.int64))
    if not assume_unique:
        in1 = _core.gather(index1, in1, 0)
        in2 = _core.gather(index2, in2, 0)
    return common, in1, in2


def union1d(ar1, ar2):
    """The sorted distinct values of both arrays together."""
    a, b = _common_pair(ar1, ar2)
    return unique(_concat(_flat(a), _flat(b)))


def setdiff1d(ar1, ar2, assume_unique=False):
    """The sorted distinct values of ``ar1`` that are not in ``ar2`` (``ar1`` as it is when
    ``assume_unique``)."""
    a, b = asvar(ar1), asvar(ar2)  # the result keeps ar1's dtype
    if assume_unique:
        a = _flat(a)
    else:
        a, b = unique(a), unique(b)
    return a[isin(a, b, invert=True)]


def setxor1d(ar1, ar2, assume_unique=False):
    """The sorted values that are in exactly one of the arrays."""
    a, b = _common_pair(ar1, ar2)
    if not assume_unique:
        a, b = unique(a), unique(b)
    aux = _concat(_flat(a), _flat(b))
    if aux.shape[0] == 0:
        return aux
    aux = sort(aux)
    edge = asvar(_np.ones(1, dtype=bool))
    differs = _concat(_concat(edge, _core.binary("NotEqual", aux[1:], aux[:-1])), edge)
    alone = _core.binary("LogicalAnd", differs[1:], differs[:-1])
    return aux[alone]


_ISIN_KINDS = {None: 0, "sort": 1, "table": 2}


def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """Boolean array of ``element``'s shape: whether each element occurs in ``test_elements``."""
    if kind not in _ISIN_KINDS:
        raise ValueError(f"Invalid kind: '{kind}'. Please use None, 'sort' or 'table'.")
    e, t = _common_pair(element, test_elements)
    if kind == "table" and e.dtype.kind == "f":
        raise ValueError("The 'table' method is only supported for boolean or integer arrays. "
                         "Please select 'sort' or None for kind.")
    return _core.op("IsIn", [e, _flat(t)], {"invert": int(bool(invert)), "kind": _ISIN_KINDS[kind]})
