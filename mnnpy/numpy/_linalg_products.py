"""Products of NumPy: dot, vdot, inner, outer, matmul, tensordot, einsum, trace, kron, cross,
convolve, correlate, vander.

Contractions are lowered to transposes, reshapes and the core's MatMul (a packed GEMM for
floats, an exact loop for integers and bools), so large ones run threaded at BLAS speed.
"""
import operator as _operator
import warnings as _warnings

import numpy as _np

from .. import _core
from .._core import Var
from ._common import asvar, normalize_axis, store

__all__ = ["dot", "vdot", "inner", "outer", "matmul", "tensordot", "einsum", "trace", "kron", "cross",
           "convolve", "correlate", "vander", "diagonal_view", "vecdot"]

_BOOL = _np.dtype(bool)
_INT64 = _np.dtype("int64")


# ---------------------------------------------------------------- helpers
def _pair(a, b):
    """Both operands as Vars. These are not ufuncs: Python numbers become arrays of NumPy's
    default dtypes (int64, float64), as numpy.asarray makes them."""
    return asvar(a), asvar(b)


def _multiply(a, b):
    return _core.binary("Mul", a, b)


def _reshape(x, shape):
    shape = tuple(int(d) for d in shape)
    return x if tuple(x.shape) == shape else _core.reshape(x, shape)


def _transpose(x, perm):
    perm = [int(p) for p in perm]
    return x if perm == list(range(len(perm))) else _core.transpose(x, perm)


def _prod(dims):
    p = 1
    for d in dims:
        p *= int(d)
    return p


def _cast(x, dtype):
    return x if x.dtype == dtype else _core.cast(x, dtype)


def _sum_axes(x, axes, dtype):
    """Sum over ``axes`` keeping ``dtype`` (bool: logical or, as NumPy's einsum)."""
    if not axes:
        return x
    if dtype == _BOOL:
        return _core.reduce("any", x, list(axes), False)
    return _cast(_core.reduce("sum", x, list(axes), False), dtype)


def _result_dtype(vars_):
    dt = vars_[0].dtype
    for v in vars_[1:]:
        dt = _core.promote_types(dt, v.dtype)
    return dt


def _matrix_product(a2, b2):
    """(M, K) @ (K, N) (or stacks) with NumPy's dtype for the pair."""
    return _core.matmul(a2, b2)


def diagonal_view(x, offset=0, axis1=0, axis2=1):
    """numpy.diagonal: the diagonal over (axis1, axis2) as the last axis."""
    x = asvar(x)
    nd = x.ndim
    if nd < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    axis1 = normalize_axis(axis1, nd, "axis1")
    axis2 = normalize_axis(axis2, nd, "axis2")
    if axis1 == axis2:
        raise ValueError("axis1 and axis2 cannot be the same")
    offset = _operator.index(offset)
    rest = [i for i in range(nd) if i not in (axis1, axis2)]
    x = _transpose(x, rest + [axis1, axis2])
    rows, cols = x.shape[-2], x.shape[-1]
    if offset >= 0:
        n = max(0, min(rows, cols - offset))
        x = x[..., :n, offset:offset + n]
    else:
        n = max(0, min(rows + offset, cols))
        x = x[..., -offset:-offset + n, :n]
    flat = _reshape(x, tuple(x.shape[:-2]) + (n * n,))
    return flat[..., ::n + 1] if n > 0 else _reshape(flat, tuple(x.shape[:-2]) + (0,))


# ---------------------------------------------------------------- dot family
def matmul(x1, x2, /, out=None, *, dtype=None, casting="same_kind", order="K", subok=True):
    """numpy.matmul (``@``): stacks of matrices, batch dimensions broadcast."""
    a, b = asvar(x1), asvar(x2)
    if dtype is not None:
        a, b = asvar(a, dtype), asvar(b, dtype)
    return store(_core.matmul(a, b), out)


def dot(a, b, out=None):
    """numpy.dot: products over the last axis of ``a`` and the second-to-last of ``b``."""
    a, b = _pair(a, b)
    if a.ndim == 0 or b.ndim == 0:
        result = _multiply(a, b)
    elif b.ndim <= 2:
        result = _core.matmul(a, b)
    else:
        if a.shape[-1] != b.shape[-2]:
            raise ValueError(f"shapes {tuple(a.shape)} and {tuple(b.shape)} not aligned: "
                             f"{a.shape[-1]} (dim {a.ndim - 1}) != {b.shape[-2]} (dim {b.ndim - 2})")
        k = a.shape[-1]
        a2 = _reshape(a, (_prod(a.shape[:-1]), k))
        perm = [b.ndim - 2] + [i for i in range(b.ndim) if i != b.ndim - 2]
        b2 = _reshape(_transpose(b, perm), (k, _prod(b.shape) // max(k, 1) if k else _prod(b.shape[:-2]) * b.shape[-1]))
        result = _reshape(_core.matmul(a2, b2), tuple(a.shape[:-1]) + tuple(b.shape[:-2]) + (b.shape[-1],))
    return store(result, out)


def vecdot(x1, x2, /, out=None, *, axis=-1, keepdims=False, dtype=None):
    """numpy.vecdot: dot products of the vectors along ``axis`` of each operand (its own axis,
    as for NumPy's gufunc), the other axes broadcast; the result has the operands' common dtype."""
    a, b = _pair(x1, x2)
    for i, v in enumerate((a, b)):
        if v.ndim == 0:
            raise ValueError(f"vecdot: Input operand {i} does not have enough dimensions (has 0, gufunc core "
                             "with signature (n),(n)->() requires 1)")
    a = _transpose(a, _to_last(normalize_axis(axis, a.ndim), a.ndim))
    b = _transpose(b, _to_last(normalize_axis(axis, b.ndim), b.ndim))
    n = a.shape[-1]
    if b.shape[-1] != n:
        raise ValueError(f"vecdot: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature "
                         f"(n),(n)->() (size {b.shape[-1]} is different from {n})")
    batch = tuple(_np.broadcast_shapes(tuple(a.shape[:-1]), tuple(b.shape[:-1])))
    dt = _np.result_type(a.dtype, b.dtype) if dtype is None else _np.dtype(dtype)
    a, b = _cast(a, dt), _cast(b, dt)
    # One row times one column per batch entry: the core's MatMul broadcasts the batch axes.
    result = _core.matmul(_reshape(a, tuple(a.shape[:-1]) + (1, n)), _reshape(b, tuple(b.shape[:-1]) + (n, 1)))
    result = _reshape(result, batch)
    if keepdims:
        result = _reshape(result, _insert(batch, normalize_axis(axis, len(batch) + 1), 1))
    return store(result, out)


def _to_last(axis, ndim):
    return [i for i in range(ndim) if i != axis] + [axis]


def _insert(shape, pos, value):
    return tuple(shape[:pos]) + (value,) + tuple(shape[pos:])


def vdot(a, b, /):
    """numpy.vdot: the dot product of the flattened operands (real dtypes: no conjugation)."""
    a, b = _pair(a, b)
    if a.size != b.size:
        raise ValueError("cannot reshape array: vdot needs operands of the same size "
                         f"({a.size} and {b.size})")
    return _core.matmul(_reshape(a, (a.size,)), _reshape(b, (b.size,)))


def inner(a, b, /):
    """numpy.inner: products over the last axes of both operands."""
    a, b = _pair(a, b)
    if a.ndim == 0 or b.ndim == 0:
        return _multiply(a, b)
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(f"shapes {tuple(a.shape)} and {tuple(b.shape)} not aligned: "
                         f"{a.shape[-1]} (dim {a.ndim - 1}) != {b.shape[-1]} (dim {b.ndim - 1})")
    k = a.shape[-1]
    a2 = _reshape(a, (_prod(a.shape[:-1]), k))
    b2 = _reshape(b, (_prod(b.shape[:-1]), k))
    return _reshape(_core.matmul(a2, b2, False, True), tuple(a.shape[:-1]) + tuple(b.shape[:-1]))


def outer(a, b, out=None):
    """numpy.outer: ``a.ravel()[:, None] * b.ravel()[None, :]``."""
    a, b = _pair(a, b)
    result = _multiply(_reshape(a, (a.size, 1)), _reshape(b, (1, b.size)))
    return store(result, out)


def tensordot(a, b, axes=2):
    """numpy.tensordot: sum over the given axes of ``a`` and ``b``."""
    a, b = _pair(a, b)
    try:
        n = _operator.index(axes)
        axes_a, axes_b = list(range(a.ndim - n, a.ndim)), list(range(n))
        if n < 0 or n > a.ndim or n > b.ndim:
            raise ValueError("tensordot: axes exceed the dimensions of the operands")
    except TypeError:
        axes_a, axes_b = axes
        axes_a = [axes_a] if isinstance(axes_a, int) else list(axes_a)
        axes_b = [axes_b] if isinstance(axes_b, int) else list(axes_b)
    if len(axes_a) != len(axes_b):
        raise ValueError("shape-mismatch for sum")
    axes_a = [normalize_axis(i, a.ndim) for i in axes_a]
    axes_b = [normalize_axis(i, b.ndim) for i in axes_b]
    for i, j in zip(axes_a, axes_b):
        if a.shape[i] != b.shape[j]:
            raise ValueError("shape-mismatch for sum")
    keep_a = [i for i in range(a.ndim) if i not in axes_a]
    keep_b = [i for i in range(b.ndim) if i not in axes_b]
    k = _prod(a.shape[i] for i in axes_a)
    a2 = _reshape(_transpose(a, keep_a + axes_a), (_prod(a.shape[i] for i in keep_a), k))
    b2 = _reshape(_transpose(b, axes_b + keep_b), (k, _prod(b.shape[i] for i in keep_b)))
    out_shape = tuple(a.shape[i] for i in keep_a) + tuple(b.shape[i] for i in keep_b)
    return _reshape(_matrix_product(a2, b2), out_shape)


# ---------------------------------------------------------------- einsum
_ELLIPSIS_BASE = 0x2000  # labels for the dimensions '...' stands for (outside ASCII letters)


def _parse_einsum(subscripts, shapes):
    subscripts = subscripts.replace(" ", "")
    if "->" in subscripts:
        inputs, output = subscripts.split("->")
        explicit = True
    else:
        inputs, output, explicit = subscripts, "", False
    in_specs = inputs.split(",")
    if len(in_specs) != len(shapes):
        raise ValueError("more operands provided to einstein sum function than specified in the subscripts string"
                         if len(shapes) > len(in_specs) else
                         "fewer operands provided to einstein sum function than specified in the subscripts string")
    ell_ndim = 0
    labels_per_operand = []
    for spec, shape in zip(in_specs, shapes):
        for ch in spec.replace("...", ""):
            if not ch.isalpha():
                raise ValueError(f"invalid subscript '{ch}' in einstein sum subscripts string, "
                                 "subscripts must be letters")
        if spec.count("...") > 1 or "." in spec.replace("...", ""):
            raise ValueError("einstein sum subscripts string contains a '.' that is not part of an ellipsis ('...')")
        named = len(spec.replace("...", ""))
        if "..." in spec:
            n_ell = len(shape) - named
            if n_ell < 0:
                raise ValueError("operand has more dimensions than subscripts given in einstein sum")
            ell_ndim = max(ell_ndim, n_ell)
            head, tail = spec.split("...")
            labels = list(head) + [chr(_ELLIPSIS_BASE + (n_ell - 1 - i)) for i in range(n_ell)] + list(tail)
        else:
            if named != len(shape):
                raise ValueError(f"einstein sum subscripts string contains too many subscripts for operand"
                                 if named > len(shape) else
                                 "operand has more dimensions than subscripts given in einstein sum")
            labels = list(spec)
        labels_per_operand.append(labels)
    ell_labels = [chr(_ELLIPSIS_BASE + i) for i in range(ell_ndim - 1, -1, -1)]
    if explicit:
        if output.count("...") > 1:
            raise ValueError("einstein sum subscripts string contains a '.' that is not part of an ellipsis ('...')")
        if "..." in output:
            head, tail = output.split("...")
            out_labels = list(head) + ell_labels + list(tail)
        else:
            out_labels = list(output)
        for ch in output.replace("...", ""):
            if not ch.isalpha():
                raise ValueError(f"invalid subscript '{ch}' in einstein sum subscripts string, "
                                 "subscripts must be letters")
            if not any(ch in l for l in labels_per_operand):
                raise ValueError(f"einstein sum subscripts string included output subscript '{ch}' which never "
                                 "appeared in an input")
            if output.count(ch) > 1:
                raise ValueError(f"einstein sum subscripts string includes output subscript '{ch}' multiple times")
    else:
        counts = {}
        for labels in labels_per_operand:
            for ch in labels:
                if ord(ch) < _ELLIPSIS_BASE:
                    counts[ch] = counts.get(ch, 0) + 1
        out_labels = ell_labels + sorted(ch for ch, c in counts.items() if c == 1)
    return labels_per_operand, out_labels


def _einsum_diagonal(x, labels):
    """Takes diagonals for labels repeated within one operand."""
    while len(set(labels)) != len(labels):
        for i, ch in enumerate(labels):
            j = labels.index(ch, i + 1) if labels.count(ch) > 1 else -1
            if j >= 0:
                break
        if x.shape[i] != x.shape[j]:
            raise ValueError(f"dimensions in operand for collapsing index '{ch}' don't match "
                             f"({x.shape[i]} != {x.shape[j]})")
        x = diagonal_view(x, 0, i, j)
        labels = [l for k, l in enumerate(labels) if k not in (i, j)] + [ch]
    return x, labels


def _einsum_pair(a, la, b, lb, needed, dtype):
    """Contracts two operands over their shared labels not needed afterwards."""
    batch = [c for c in la if c in lb and c in needed]
    contract = [c for c in la if c in lb and c not in needed]
    a_only = [c for c in la if c not in lb]
    b_only = [c for c in lb if c not in la]
    size = {}
    for x, lab in ((a, la), (b, lb)):
        for c, d in zip(lab, x.shape):
            if c not in size or size[c] == 1:
                size[c] = d
            elif d != 1 and d != size[c]:
                raise ValueError(f"operands could not be broadcast together with remapped shapes "
                                 f"(a label has sizes {size[c]} and {d})")

    def arrange(x, lab, order):
        x = _transpose(x, [lab.index(c) for c in order])
        target = tuple(size[c] for c in order)
        return _core.broadcast_to(x, target) if tuple(x.shape) != target else x

    a3 = _reshape(arrange(a, la, batch + a_only + contract),
                  (_prod(size[c] for c in batch), _prod(size[c] for c in a_only), _prod(size[c] for c in contract)))
    b3 = _reshape(arrange(b, lb, batch + contract + b_only),
                  (_prod(size[c] for c in batch), _prod(size[c] for c in contract), _prod(size[c] for c in b_only)))
    r = _core.matmul(_cast(a3, dtype), _cast(b3, dtype))
    labels = batch + a_only + b_only
    return _reshape(r, tuple(size[c] for c in labels)), labels


def einsum(subscripts, *operands, out=None, dtype=None, order="K", casting="safe", optimize=False):
    """numpy.einsum. Operands are contracted pairwise, left to right, each pair through one
    batched matrix product; ``optimize`` is accepted (the order is always left to right)."""
    if not isinstance(subscripts, str):
        subscripts, operands = _sublists_to_subscripts(subscripts, operands)
    vars_ = [asvar(o) for o in operands]
    if not vars_:
        raise ValueError("must specify the einstein sum subscripts string and at least one operand")
    labels, out_labels = _parse_einsum(subscripts, [tuple(v.shape) for v in vars_])
    result_dtype = _result_dtype(vars_)
    if dtype is not None:
        dtype = _np.dtype(dtype)
        for v in vars_:
            if not _np.can_cast(v.dtype, dtype, casting):
                raise TypeError(f"Iterator operand dtype could not be cast from dtype('{v.dtype}') to "
                                f"dtype('{dtype}') according to the rule '{casting}'")
        result_dtype = dtype
    work = []
    for v, lab in zip(vars_, labels):
        v, lab = _einsum_diagonal(_cast(v, result_dtype), list(lab))
        work.append((v, lab))
    # Sum away, per operand, labels that no other operand and not the output use.
    for i, (v, lab) in enumerate(work):
        others = set(out_labels)
        for j, (_, lj) in enumerate(work):
            if j != i:
                others.update(lj)
        axes = [k for k, c in enumerate(lab) if c not in others]
        if axes:
            v = _sum_axes(v, axes, result_dtype)
            lab = [c for c in lab if c in others]
        work[i] = (v, lab)
    acc, acc_labels = work[0]
    for i in range(1, len(work)):
        needed = set(out_labels)
        for _, lj in work[i + 1:]:
            needed.update(lj)
        b, lb = work[i]
        # Labels of one side that nothing later needs and the other side lacks are summed first.
        a_axes = [k for k, c in enumerate(acc_labels) if c not in needed and c not in lb]
        if a_axes:
            acc = _sum_axes(acc, a_axes, result_dtype)
            acc_labels = [c for k, c in enumerate(acc_labels) if k not in a_axes]
        b_axes = [k for k, c in enumerate(lb) if c not in needed and c not in acc_labels]
        if b_axes:
            b = _sum_axes(b, b_axes, result_dtype)
            lb = [c for k, c in enumerate(lb) if k not in b_axes]
        acc, acc_labels = _einsum_pair(acc, acc_labels, b, lb, needed, result_dtype)
    axes = [k for k, c in enumerate(acc_labels) if c not in out_labels]
    if axes:
        acc = _sum_axes(acc, axes, result_dtype)
        acc_labels = [c for c in acc_labels if c in out_labels]
    result = _transpose(acc, [acc_labels.index(c) for c in out_labels])
    return store(_cast(result, result_dtype), out)


def _sublists_to_subscripts(first, rest):
    """einsum(op0, sublist0, op1, sublist1, ..., [sublistout]) -> (subscripts, operands)."""
    args = [first] + list(rest)
    operands, specs = [], []
    while len(args) >= 2:
        operands.append(args.pop(0))
        specs.append(args.pop(0))
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

    def spec_str(sub):
        return "".join("..." if s is Ellipsis else letters[_operator.index(s)] for s in sub)

    text = ",".join(spec_str(s) for s in specs)
    if args:
        text += "->" + spec_str(args[0])
    return text, operands


# ---------------------------------------------------------------- trace, kron, cross
def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """numpy.trace: the sum along a diagonal."""
    a = asvar(a)
    d = diagonal_view(a, offset, axis1, axis2)
    if dtype is not None:
        dt = _np.dtype(dtype)
    elif a.dtype.kind == "u":
        dt = _np.dtype(_np.uint64)
    elif a.dtype.kind in "bi":
        dt = _INT64
    else:
        dt = a.dtype
    if dt == _BOOL:
        result = _core.reduce("any", d, [d.ndim - 1], False)
    else:
        result = _cast(_core.reduce("sum", _cast(d, dt), [d.ndim - 1], False), dt)
    return store(result, out)


def kron(a, b):
    """numpy.kron: the Kronecker product."""
    a, b = _pair(a, b)
    nd = max(a.ndim, b.ndim)
    sa = (1,) * (nd - a.ndim) + tuple(a.shape)
    sb = (1,) * (nd - b.ndim) + tuple(b.shape)
    a_inter = _reshape(a, tuple(x for d in sa for x in (d, 1)))
    b_inter = _reshape(b, tuple(x for d in sb for x in (1, d)))
    prod = _multiply(a_inter, b_inter)
    return _reshape(prod, tuple(x * y for x, y in zip(sa, sb)))


# NumPy 2.5 removed cross products of 2-component vectors (deprecated since 2.0): as the NumPy
# installed next to mnnpy does.
_CROSS_TAKES_2_VECTORS = _np.lib.NumpyVersion(_np.__version__) < "2.5.0"


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """numpy.cross of 3-component vectors (and of 2-component ones before NumPy 2.5)."""
    a, b = _pair(a, b)
    if axis is not None:
        axisa = axisb = axisc = axis
    axisa = normalize_axis(axisa, max(a.ndim, 1), "axisa")
    axisb = normalize_axis(axisb, max(b.ndim, 1), "axisb")
    sizes = (2, 3) if _CROSS_TAKES_2_VECTORS else (3,)
    if a.ndim == 0 or b.ndim == 0 or a.shape[axisa] not in sizes or b.shape[axisb] not in sizes:
        raise ValueError("incompatible dimensions for cross product\n(dimension must be "
                         + ("2 or 3)" if _CROSS_TAKES_2_VECTORS else "3)"))
    if 2 in (a.shape[axisa], b.shape[axisb]) and _np.lib.NumpyVersion(_np.__version__) >= "2.0.0":
        _warnings.warn("Arrays of 2-dimensional vectors are deprecated. Use arrays of 3-dimensional vectors "
                       "instead. (deprecated in NumPy 2.0)", DeprecationWarning, stacklevel=2)
    a = _transpose(a, [i for i in range(a.ndim) if i != axisa] + [axisa])
    b = _transpose(b, [i for i in range(b.ndim) if i != axisb] + [axisb])
    dt = _core.promote_types(a.dtype, b.dtype)
    if dt == _BOOL:
        raise TypeError("numpy boolean subtract, the `-` operator, is not supported")
    a, b = _cast(a, dt), _cast(b, dt)
    na, nb = a.shape[-1], b.shape[-1]
    ac = [a[..., i] for i in range(na)]
    bc = [b[..., i] for i in range(nb)]
    sub = lambda x, y: _core.binary("Sub", x, y)  # noqa: E731
    if na == 2 and nb == 2:
        return sub(_multiply(ac[0], bc[1]), _multiply(ac[1], bc[0]))
    zero_a = ac + [None] * (3 - na)
    zero_b = bc + [None] * (3 - nb)

    def term(i, j):
        if zero_a[i] is None or zero_b[j] is None:
            return None
        return _multiply(zero_a[i], zero_b[j])

    def diff(p, q):
        if p is None and q is None:
            shape = _np.broadcast_shapes(tuple(a.shape[:-1]), tuple(b.shape[:-1]))
            return _core.broadcast_to(_core.const(_np.zeros((), dt), None, "NCHW"), shape)
        if q is None:
            return p
        if p is None:
            return _core.unary("Neg", q)
        return sub(p, q)

    comps = [diff(term(1, 2), term(2, 1)), diff(term(2, 0), term(0, 2)), diff(term(0, 1), term(1, 0))]
    shape = _np.broadcast_shapes(*[tuple(c.shape) for c in comps])
    comps = [c if tuple(c.shape) == shape else _core.broadcast_to(c, shape) for c in comps]
    result = _core.stack(comps, len(shape))
    axisc = normalize_axis(axisc, result.ndim, "axisc")
    perm = list(range(result.ndim - 1))
    perm.insert(axisc, result.ndim - 1)
    return _transpose(result, perm)


# ---------------------------------------------------------------- convolution
def _correlate_core(a, v, mode):
    if a.ndim != 1 or v.ndim != 1:
        raise ValueError("object too deep for desired array")
    na, nv = a.shape[0], v.shape[0]
    if na == 0:
        raise ValueError("a cannot be empty")
    if nv == 0:
        raise ValueError("v cannot be empty")
    modes = {"valid": "valid", "same": "same", "full": "full", 0: "valid", 1: "same", 2: "full"}
    if mode not in modes:
        raise ValueError(f"mode must be one of 'valid', 'same', or 'full' (got {mode!r})")
    mode = modes[mode]
    result_dtype = _core.promote_types(a.dtype, v.dtype)
    compute = result_dtype if result_dtype in (_np.float32, _np.float64) else (
        _np.dtype("float32") if result_dtype == _np.float16 else _INT64)
    if na < nv:
        # NumPy swaps the operands and reverses the result.
        return _correlate_core(v, a, mode)[::-1]
    if mode == "full":
        first, count = -(nv - 1), na + nv - 1
    elif mode == "valid":
        first, count = 0, na - nv + 1
    else:
        first, count = -(nv // 2), na
    r = _core.op("Correlate1D", [_cast(a, compute), _cast(v, compute)], {"first_lag": first, "count": count})
    return _cast(r, result_dtype)


def correlate(a, v, mode="valid"):
    """numpy.correlate of two 1-D sequences (real dtypes)."""
    a, v = _pair(a, v)
    return _correlate_core(a, v, mode)


def convolve(a, v, mode="full"):
    """numpy.convolve of two 1-D sequences."""
    a, v = _pair(a, v)
    if a.ndim == 1 and v.ndim == 1:
        if a.shape[0] == 0:
            raise ValueError("a cannot be empty")
        if v.shape[0] == 0:
            raise ValueError("v cannot be empty")
        if v.shape[0] > a.shape[0]:
            a, v = v, a
        v = v[::-1]
    return _correlate_core(a, v, mode)


def vander(x, N=None, increasing=False):
    """numpy.vander: columns are powers of ``x``."""
    x = asvar(x)
    if x.ndim != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    n = x.shape[0] if N is None else _operator.index(N)
    if n < 0:
        raise ValueError("negative dimensions are not allowed")
    dt = _core.promote_types(x.dtype, _INT64)
    powers = _np.arange(n, dtype=_np.int64)
    if not increasing:
        powers = powers[::-1].copy()
    base = _reshape(_cast(x, dt), (x.shape[0], 1))
    exps = _core.const(powers.reshape(1, n).astype(dt), None, "NCHW")
    return _core.binary("Pow", base, exps)
