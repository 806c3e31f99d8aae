"""mnnpy.numpy's array manipulation against NumPy itself: values, dtypes, shapes and the
exception types NumPy raises."""
import numpy
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import mnnpy.numpy as mnp
from mnnpy import Var
from helpers import assert_same, same_as_numpy
from numpy_strategies import DTYPES, arrays, nonempty_shapes, shapes

FAST = settings(max_examples=25, deadline=None)
FEW = settings(max_examples=12, deadline=None)


same = same_as_numpy


@st.composite
def array_and_axis(draw, min_dims=1, dtypes=DTYPES, **kw):
    a = draw(arrays(shape=hnp.array_shapes(min_dims=min_dims, max_dims=4, min_side=0, max_side=5), dtypes=dtypes,
                    **kw))
    axis = draw(st.integers(-a.ndim - 1, a.ndim))  # sometimes out of range
    return a, axis


# ---------------------------------------------------------------- shapes
@FAST
@given(arrays(), st.data())
def test_reshape_ravel(a, data):
    shape = data.draw(st.sampled_from([(-1,), (a.size,), (1, -1), tuple(reversed(a.shape)), (2, -1), (-1, -1)]))
    order = data.draw(st.sampled_from(["C", "F", "A"]))
    same(lambda m: m.reshape(a, shape, order=order))
    ravel_order = data.draw(st.sampled_from(["C", "F", "K"]))
    same(lambda m: m.ravel(a, order=ravel_order))
    assert mnp.shape(a) == numpy.shape(a) and mnp.ndim(a) == numpy.ndim(a) and mnp.size(a) == numpy.size(a)
    if a.ndim:
        ax = data.draw(st.integers(-a.ndim, a.ndim - 1))
        assert mnp.size(a, ax) == numpy.size(a, ax)


@FAST
@given(arrays(), st.data())
def test_transpose_family(a, data):
    n = a.ndim
    perm = data.draw(st.permutations(range(n)))
    same(lambda m: m.transpose(a))
    same(lambda m: m.transpose(a, perm))
    same(lambda m: m.transpose(a, perm[:-1] if n else (0,)))  # wrong length: ValueError
    ax = st.integers(-n - 1, n)
    i, j = data.draw(ax), data.draw(ax)
    same(lambda m: m.swapaxes(a, i, j))
    same(lambda m: m.moveaxis(a, i, j))
    start = data.draw(ax)
    same(lambda m: m.rollaxis(a, i, start))
    if n >= 2:
        same(lambda m: m.moveaxis(a, [0, 1], [-1, 0]))
        same(lambda m: m.moveaxis(a, [0, 0], [1, 2]))


@FAST
@given(arrays(), st.data())
def test_expand_dims_squeeze(a, data):
    n = a.ndim
    axes = data.draw(st.one_of(st.integers(-n - 2, n + 1), st.lists(st.integers(-n - 2, n + 1), max_size=3).map(tuple)))
    same(lambda m: m.expand_dims(a, axes))
    same(lambda m: m.squeeze(a))
    if n:
        sq = data.draw(st.integers(-n, n - 1))
        same(lambda m: m.squeeze(a, sq))
    for fn in ("atleast_1d", "atleast_2d", "atleast_3d"):
        same(lambda m: getattr(m, fn)(a))
        same(lambda m: getattr(m, fn)(a, a[..., None]))


# ---------------------------------------------------------------- joining and splitting
@st.composite
def joinable(draw):
    """Several arrays that agree off one axis (sometimes not), and that axis."""
    base = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4))
    axis = draw(st.integers(-len(base), len(base) - 1))
    count = draw(st.integers(1, 4))
    arrs = []
    for _ in range(count):
        s = list(base)
        s[axis] = draw(st.integers(0, 3))
        arrs.append(draw(arrays(shape=tuple(s))))
    if draw(st.integers(0, 9)) == 0:
        arrs.append(draw(arrays(shape=tuple(d + 1 for d in base))))  # mismatch
    return arrs, axis


@FAST
@given(joinable(), st.data())
def test_concatenate(args, data):
    arrs, axis = args
    same(lambda m: m.concatenate(arrs, axis=axis))
    same(lambda m: m.concatenate(arrs, axis=None))
    same(lambda m: m.concat(arrs, axis))
    dt = data.draw(st.sampled_from(DTYPES))
    casting = data.draw(st.sampled_from(["same_kind", "unsafe"]))
    if casting == "unsafe" and numpy.dtype(dt).kind in "iub" and any(x.dtype.kind == "f" for x in arrs):
        casting = "same_kind"  # out-of-range float -> int conversions are undefined
    same(lambda m: m.concatenate(arrs, axis=axis, dtype=dt, casting=casting))
    same(lambda m: m.hstack(arrs))
    same(lambda m: m.vstack(arrs))
    same(lambda m: m.dstack(arrs))
    same(lambda m: m.column_stack(arrs))
    same(lambda m: m.row_stack(arrs) if m is mnp else numpy.vstack(arrs))


def test_concatenate_errors_and_out():
    a = numpy.arange(6.0).reshape(2, 3)
    for call in (lambda m: m.concatenate([]), lambda m: m.concatenate([numpy.float64(1), numpy.float64(2)]),
                 lambda m: m.concatenate([a, a[0]]), lambda m: m.concatenate([a, a], axis=2),
                 lambda m: m.concatenate([a, a], dtype=numpy.int32), lambda m: m.stack([a, a[:1]]),
                 lambda m: m.stack([])):
        same(call)
    out = mnp.concatenate([a, a])  # any Var of the right shape
    out = mnp.reshape(mnp.concatenate([a.astype(numpy.float32)] * 2), (4, 3))
    before = out
    mnp.concatenate([a, a + 1], out=out)
    assert before is out
    assert_same(out, numpy.concatenate([a, a + 1]).astype(numpy.float32))


@FAST
@given(arrays(shape=nonempty_shapes), st.integers(1, 4), st.data())
def test_stack(a, count, data):
    arrs = [a + numpy.asarray(i).astype(a.dtype) for i in range(count)]
    axis = data.draw(st.integers(-a.ndim - 2, a.ndim + 1))
    same(lambda m: m.stack(arrs, axis=axis))
    dt = data.draw(st.sampled_from(DTYPES))
    same(lambda m: m.stack(arrs, axis=0, dtype=dt))


@pytest.mark.parametrize("dtype", ["int8", "float16", "float32", "float64"])
@pytest.mark.parametrize("count", [2, 3, 4])
def test_stack_last_axis_interleaves_long_rows(dtype, count):
    # One element per array per row: the vector interleaving kernel, with a scalar tail.
    rng = numpy.random.default_rng(count)
    arrs = [(rng.standard_normal((3, 1031)) * 50).astype(dtype) for _ in range(count)]
    same(lambda m: m.stack(arrs, axis=-1))
    same(lambda m: m.concatenate([x[..., None] for x in arrs], axis=2))


def test_block():
    a = numpy.arange(4).reshape(2, 2)
    b = numpy.ones((2, 3), numpy.float32)
    c = numpy.zeros((1, 5), numpy.int8)
    same(lambda m: m.block([[a, b], [c]]))
    same(lambda m: m.block([a[0], b[0], 7]))
    same(lambda m: m.block(3))
    same(lambda m: m.block([[a, b], c]))  # depth mismatch
    same(lambda m: m.block([[a], []]))
    same(lambda m: m.block([[[a]], [[a]]]))


@FAST
@given(array_and_axis(), st.data())
def test_split_family(args, data):
    a, axis = args
    sections = data.draw(st.integers(0, 6))
    indices = data.draw(st.lists(st.integers(-7, 7), max_size=4))
    same(lambda m: m.split(a, sections, axis))
    same(lambda m: m.array_split(a, sections, axis))
    same(lambda m: m.split(a, indices, axis))
    same(lambda m: m.array_split(a, numpy.array(indices, numpy.int64), axis))
    same(lambda m: m.hsplit(a, sections))
    same(lambda m: m.vsplit(a, indices))
    same(lambda m: m.dsplit(a, sections))


# ---------------------------------------------------------------- repeating
@FAST
@given(arrays(), st.data())
def test_tile_repeat_resize(a, data):
    reps = data.draw(st.one_of(st.integers(0, 3), st.lists(st.integers(0, 3), max_size=5).map(tuple)))
    same(lambda m: m.tile(a, reps))
    axis = data.draw(st.one_of(st.none(), st.integers(-a.ndim - 1, a.ndim)))
    count = data.draw(st.integers(-1, 3))
    same(lambda m: m.repeat(a, count, axis=axis))
    n = a.size if axis is None else a.shape[axis] if -a.ndim <= axis < a.ndim else 1
    counts = data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n + (data.draw(st.integers(0, 9)) == 0)))
    same(lambda m: m.repeat(a, counts, axis=axis))
    same(lambda m: m.repeat(a, numpy.array(counts, numpy.int8), axis=axis))
    new_shape = data.draw(st.one_of(st.integers(-1, 9), hnp.array_shapes(min_dims=0, max_dims=3, min_side=0)))
    same(lambda m: m.resize(a, new_shape))


# ---------------------------------------------------------------- flips and rolls
@FAST
@given(arrays(), st.data())
def test_flip_roll_rot90(a, data):
    n = a.ndim
    axis = data.draw(st.one_of(st.none(), st.integers(-n - 1, n),
                               st.lists(st.integers(-n, max(n - 1, 0)), max_size=2).map(tuple)))
    same(lambda m: m.flip(a, axis))
    same(lambda m: m.fliplr(a))
    same(lambda m: m.flipud(a))
    shift = data.draw(st.one_of(st.integers(-12, 12), st.lists(st.integers(-12, 12), min_size=1, max_size=3)))
    roll_axis = data.draw(st.one_of(st.none(), st.integers(-n - 1, n),
                                    st.lists(st.integers(-n, max(n - 1, 0)), min_size=1, max_size=3)))
    same(lambda m: m.roll(a, shift, roll_axis))
    k = data.draw(st.integers(-5, 5))
    axes = data.draw(st.one_of(st.just((0, 1)), st.tuples(st.integers(-n - 1, n), st.integers(-n - 1, n)),
                               st.just((0, 1, 2))))
    same(lambda m: m.rot90(a, k, axes))


# ---------------------------------------------------------------- pad
PAD_WIDTHS = st.one_of(st.integers(0, 4), st.tuples(st.integers(0, 4)), st.tuples(st.integers(0, 4), st.integers(0, 4)))


@st.composite
def pad_width_for(draw, ndim):
    if draw(st.booleans()):
        return draw(PAD_WIDTHS)
    return tuple(draw(st.tuples(st.integers(0, 7), st.integers(0, 7))) for _ in range(ndim))


@settings(max_examples=60, deadline=None)
@given(arrays(shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)), st.data())
def test_pad(a, data):
    width = data.draw(pad_width_for(a.ndim))
    mode = data.draw(st.sampled_from(["constant", "edge", "linear_ramp", "maximum", "mean", "median", "minimum",
                                      "reflect", "symmetric", "wrap"]))
    kwargs = {}
    if mode == "constant" and data.draw(st.booleans()):
        kwargs["constant_values"] = data.draw(st.one_of(st.integers(-3, 3), st.tuples(st.integers(-3, 3), st.integers(0, 5)),
                                                        st.floats(-2, 2)))
    if mode in ("reflect", "symmetric"):
        kwargs["reflect_type"] = data.draw(st.sampled_from(["even", "odd"]))
    if mode == "linear_ramp" and data.draw(st.booleans()):
        kwargs["end_values"] = data.draw(st.one_of(st.integers(-5, 5), st.tuples(st.integers(-5, 5), st.integers(-5, 5))))
    if mode in ("maximum", "minimum", "mean", "median") and data.draw(st.booleans()):
        kwargs["stat_length"] = data.draw(st.one_of(st.integers(1, 5), st.tuples(st.integers(1, 5), st.integers(1, 5))))
    if a.dtype == numpy.bool_ and mode in ("linear_ramp", "mean", "median"):
        return  # NumPy's own arithmetic on bool pads is not defined
    with numpy.errstate(all="ignore"):
        # Odd reflections and ramps compute in the array's dtype: float16 rounds differently per op.
        same(lambda m: m.pad(a, width, mode, **kwargs), rtol=2e-2 if a.dtype == numpy.float16 else 1e-5)


def test_pad_modes_and_errors():
    a = numpy.arange(12, dtype=numpy.int16).reshape(3, 4)
    same(lambda m: m.pad(a, 2, "empty").shape if m is numpy else m.pad(a, 2, "empty").numpy().shape)
    same(lambda m: m.pad(a, ((1, 2), (3, 4)), "constant", constant_values=((1, 2), (3, 4))))
    same(lambda m: m.pad(a, ((9, 11), (13, 2)), "reflect", reflect_type="odd"))
    same(lambda m: m.pad(a, ((9, 11), (13, 2)), "symmetric", reflect_type="odd"))
    same(lambda m: m.pad(a, ((9, 11), (13, 2)), "wrap"))
    same(lambda m: m.pad(a, 3, "linear_ramp", end_values=((-5, 100), (7, 1))))
    for call in (lambda m: m.pad(a, 1.5), lambda m: m.pad(a, -1), lambda m: m.pad(a, 1, "nope"),
                 lambda m: m.pad(a, 1, "edge", constant_values=3), lambda m: m.pad(a, ((1, 2), (3, 4), (5, 6))),
                 lambda m: m.pad(a, 1, "maximum", stat_length=0), lambda m: m.pad(numpy.zeros((0, 3)), 1, "edge"),
                 lambda m: m.pad(numpy.zeros((0, 3)), ((0, 0), (1, 1)), "edge")):
        same(call)


# ---------------------------------------------------------------- broadcasting
@FAST
@given(st.data())
def test_broadcasting(data):
    shapes_ = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=4)).input_shapes
    arrs = [data.draw(arrays(shape=s)) for s in shapes_]
    same(lambda m: m.broadcast_arrays(*arrs))
    assert mnp.broadcast_shapes(*shapes_) == numpy.broadcast_shapes(*shapes_)
    target = data.draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4))
    same(lambda m: m.broadcast_to(arrs[0], target))
    same(lambda m: m.broadcast_to(arrs[0], numpy.broadcast_shapes(shapes_[0], target))
         if _broadcastable(shapes_[0], target) else m.broadcast_to(arrs[0], target))
    same(lambda m: m.broadcast_to(arrs[0], (-1,)))


def _broadcastable(a, b):
    try:
        numpy.broadcast_shapes(a, b)
        return True
    except ValueError:
        return False


# ---------------------------------------------------------------- insert / delete / append / trim_zeros
@FAST
@given(array_and_axis(), st.data())
def test_delete_insert_append(args, data):
    a, axis = args
    axis = data.draw(st.one_of(st.none(), st.just(axis)))
    n = a.size if axis is None else a.shape[axis] if -a.ndim <= axis < a.ndim else 1
    obj = data.draw(st.one_of(st.integers(-n - 1, n), st.lists(st.integers(-n, max(n - 1, 0)), max_size=4),
                              st.builds(slice, st.integers(-n, n), st.integers(-n, n), st.sampled_from([1, 2, -1])),
                              st.lists(st.booleans(), min_size=n, max_size=n)))
    bool_obj = isinstance(obj, list) and obj and isinstance(obj[0], bool)
    same(lambda m: m.delete(a, numpy.array(obj) if bool_obj else obj, axis=axis))
    insert_obj = data.draw(st.one_of(st.integers(-n - 1, n + 1), st.lists(st.integers(-n, n), max_size=4)))
    values = data.draw(st.one_of(st.integers(0, 9), st.lists(st.integers(0, 9), min_size=1, max_size=4)))
    same(lambda m: m.insert(a, insert_obj, values, axis=axis))
    same(lambda m: m.append(a, a, axis=axis))
    same(lambda m: m.append(a, values))


@FAST
@given(arrays(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=6), dtypes=DTYPES,
              min_value=0, max_value=1), st.sampled_from(["f", "b", "fb", "B", "x"]))
def test_trim_zeros(a, trim):
    same(lambda m: m.trim_zeros(a, trim))
    if a.ndim > 1:
        same(lambda m: m.trim_zeros(a, trim, axis=-1))


# ---------------------------------------------------------------- copyto
@FAST
@given(st.data())
def test_copyto(data):
    dst_shape, src_shape = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3)).input_shapes
    dst_np = data.draw(arrays(shape=dst_shape, noncontiguous=False))
    src = data.draw(st.one_of(arrays(shape=src_shape), st.integers(-3, 3)))
    casting = data.draw(st.sampled_from(["same_kind", "unsafe", "safe", "no"]))
    where = data.draw(st.one_of(st.just(True), arrays(dtype="bool", shape=src_shape)))
    if (casting == "unsafe" and isinstance(src, numpy.ndarray) and src.dtype.kind == "f"
            and dst_np.dtype.kind in "iu"):
        info = numpy.iinfo(dst_np.dtype)
        with numpy.errstate(all="ignore"):
            if not numpy.all(numpy.isfinite(src) & (src >= info.min) & (src <= info.max)):
                return  # out-of-range float-to-integer casts saturate in mnnpy (README); NumPy's are undefined
    dst = mnp.reshape(dst_np, dst_np.shape)
    alias = dst
    expected = dst_np.copy()
    try:
        with numpy.errstate(all="ignore"):
            numpy.copyto(expected, src, casting=casting, where=where)
    except Exception as e:  # noqa: BLE001
        with pytest.raises(type(e)):
            mnp.copyto(dst, src, casting=casting, where=where)
        return
    mnp.copyto(dst, src, casting=casting, where=where)
    assert alias is dst
    assert_same(alias, expected)


def test_copyto_rebinds_only_that_var():
    a = mnp.reshape(numpy.arange(6.0), (2, 3))
    view = a[0]
    mnp.copyto(a, 7.0)
    assert_same(a, numpy.full((2, 3), 7.0))
    assert_same(view, numpy.arange(3.0))  # no write through views
    with pytest.raises(TypeError):
        mnp.copyto(numpy.zeros(3), 1.0)
