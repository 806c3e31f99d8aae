"""Shape and data-movement ops against NumPy: every dtype, 0-d and empty arrays, bad input."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import mnnpy
from mnnpy import _core, expr as F

from helpers import ALL_DTYPES, random_array

DTYPES = ALL_DTYPES + ["bfloat16"]
SETTINGS = settings(max_examples=60, deadline=None)


def rand(rng, shape, dtype):
    if dtype == "bfloat16":
        return random_array(rng, shape, "float32").astype(ml_dtypes.bfloat16)
    return random_array(rng, shape, dtype)


def check(ours, expected):
    """Exact equality of dtype, shape and bytes (data movement never changes a value)."""
    got = ours.numpy() if isinstance(ours, mnnpy.Var) else np.asarray(ours)
    expected = np.asarray(expected)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if expected.dtype.itemsize in (2, 4, 8) and expected.dtype.kind != "b":
        view = {2: np.uint16, 4: np.uint32, 8: np.uint64}[expected.dtype.itemsize]
        np.testing.assert_array_equal(np.ascontiguousarray(got).view(view), np.ascontiguousarray(expected).view(view))
    else:
        np.testing.assert_array_equal(got, expected)


shapes = st.lists(st.integers(0, 5), min_size=0, max_size=5).map(tuple)
nonempty_shapes = st.lists(st.integers(1, 5), min_size=1, max_size=4).map(tuple)
dtypes = st.sampled_from(DTYPES)


# ---------------------------------------------------------------- transpose
@SETTINGS
@given(shape=shapes, dtype=dtypes, data=st.data())
def test_transpose_matches_numpy(shape, dtype, data):
    x = rand(np.random.default_rng(len(shape)), shape, dtype)
    perm = data.draw(st.permutations(range(len(shape))))
    negative = [p - len(shape) if data.draw(st.booleans()) else p for p in perm]
    check(F.transpose(F.const(x), negative), np.transpose(x, perm))
    check(F.transpose(F.const(x)), np.transpose(x))


def test_transpose_large_tiles_and_threads(rng):
    x = rng.standard_normal((3, 257, 129, 5)).astype(np.float32)
    for threads in (1, 2):
        mnnpy.set_num_threads(threads)
        for perm in [(0, 2, 1, 3), (3, 1, 2, 0), (0, 3, 1, 2), (2, 1, 0, 3)]:
            check(F.transpose(F.const(x), perm), np.transpose(x, perm))
    mnnpy.set_num_threads(1)
    y = rng.integers(0, 255, (1000, 777), dtype=np.uint8)
    check(F.transpose(F.const(y)), y.T)


@pytest.mark.parametrize("dtype", DTYPES)
def test_transpose_blocks_every_dtype(rng, dtype):
    # Shapes with ragged edges around the 2x2 / 4x4 / 8x8 register blocks and the 32-row tiles.
    # Short interleaved channels (2, 3, 4) are split in one pass instead.
    for shape, perm in [((37, 70), (1, 0)), ((3, 19, 45), (0, 2, 1)), ((2, 9, 66, 5), (0, 3, 1, 2)),
                        ((5, 33, 17, 3), (3, 2, 1, 0)), ((64, 64), (1, 0)), ((2, 9, 66, 3), (0, 3, 1, 2)),
                        ((70, 4), (1, 0)), ((5, 37, 2), (0, 2, 1))]:
        x = rand(rng, shape, dtype)
        check(F.transpose(F.const(x), perm), np.transpose(x, perm))
        check(F.transpose(F.const(x)[..., ::-1], perm), np.transpose(x[..., ::-1], perm))


@pytest.mark.parametrize("dtype", ["bool", "int16", "float32", "float64"])
def test_copies_on_portable_simd(rng, dtype, portable_simd):
    x = rand(rng, (19, 45, 6), dtype)
    v = F.const(x)
    check(F.transpose(v, [2, 0, 1]), x.transpose(2, 0, 1))
    check(F.transpose(v, [1, 0, 2]), x.transpose(1, 0, 2))
    check(F.transpose(v.reshape(19, 90, 3), [2, 0, 1]), x.reshape(19, 90, 3).transpose(2, 0, 1))
    for index in [np.s_[:, ::-1], np.s_[:, ::2], np.s_[:, 1::3], np.s_[::4]]:
        check(v.reshape(19, 270)[index], x.reshape(19, 270)[index])


def test_large_results(rng):
    # Results past the streaming-store size, with every copy scheme, at 1 and 2 threads.
    x = rng.standard_normal((1024, 2100)).astype(np.float32)
    v = F.const(x)
    for threads in (1, 2):
        mnnpy.set_num_threads(threads)
        check(v[:, 1:], x[:, 1:])
        check(v[::-1, ::-1], x[::-1, ::-1])
        check(v[:, ::2], x[:, ::2])
        check(F.concat([v, v[:, :7]], 1), np.concatenate([x, x[:, :7]], 1))
        check(F.concat([v, v], 0), np.concatenate([x, x], 0))
        check(F.broadcast_to(v[:, :1], [1024, 2100]), np.broadcast_to(x[:, :1], (1024, 2100)))
        for a, b in zip(F.split(F.concat([v, v], 1), [2099, 2101], 1), np.split(np.concatenate([x, x], 1), [2099], 1),
                        strict=True):
            check(a, b)
        w = F.const(x)
        w[3:900:2, 5:] = 1.5
        expected = x.copy()
        expected[3:900:2, 5:] = 1.5
        check(w, expected)
    mnnpy.set_num_threads(1)


def test_transpose_of_length_one_axes_is_a_view(rng):
    x = rng.standard_normal((1, 4, 1, 3)).astype(np.float32)
    v = F.transpose(F.const(x), [1, 2, 0, 3])
    assert v.op_type == "Reshape"
    check(v, x.transpose(1, 2, 0, 3))


def test_transpose_errors():
    v = F.const(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="repeated axis in transpose"):
        F.transpose(v, [0, 0])
    with pytest.raises(ValueError, match="axes don't match array"):
        F.transpose(v, [0])
    with pytest.raises(IndexError, match="axis 2 is out of bounds for array of dimension 2"):
        F.transpose(v, [0, 2])


# ---------------------------------------------------------------- broadcast_to / tile
@SETTINGS
@given(shape=shapes, dtype=dtypes, data=st.data())
def test_broadcast_to_matches_numpy(shape, dtype, data):
    lead = data.draw(st.lists(st.integers(0, 3), max_size=2))
    target = tuple(lead) + tuple(d if d != 1 else data.draw(st.integers(0, 3)) for d in shape)
    x = rand(np.random.default_rng(0), shape, dtype)
    check(F.broadcast_to(F.const(x), target), np.broadcast_to(x, target))


def test_broadcast_to_errors():
    v = F.const(np.ones(3, np.float32))
    with pytest.raises(ValueError, match=r"remapped shapes \[original->remapped\]: \(3,\)  and requested shape \(4,\)"):
        F.broadcast_to(v, [4])
    with pytest.raises(ValueError, match="cannot broadcast a non-scalar to a scalar array"):
        F.broadcast_to(v, [])
    with pytest.raises(ValueError, match="must be non-negative"):
        F.broadcast_to(v, [-1])
    with pytest.raises(ValueError, match="more dimensions than allowed"):
        F.broadcast_to(F.const(np.ones((2, 3))), [3])


@SETTINGS
@given(shape=shapes, reps=st.lists(st.integers(0, 3), max_size=4), dtype=dtypes)
def test_tile_matches_numpy(shape, reps, dtype):
    x = rand(np.random.default_rng(1), shape, dtype)
    check(F.tile(F.const(x), reps), np.tile(x, reps))


def test_tile_negative():
    with pytest.raises(ValueError, match="negative dimensions are not allowed"):
        F.tile(F.const(np.ones(3)), [-1])


# ---------------------------------------------------------------- concat / stack
@SETTINGS
@given(shape=nonempty_shapes, count=st.integers(1, 4), dtype=dtypes, data=st.data())
def test_concat_matches_numpy(shape, count, dtype, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    rng = np.random.default_rng(count)
    parts = []
    for _ in range(count):
        s = list(shape)
        s[axis] = data.draw(st.integers(0, 4))
        parts.append(rand(rng, tuple(s), dtype))
    check(F.concat([F.const(p) for p in parts], axis), np.concatenate(parts, axis))


def test_concat_promotes_dtypes(rng):
    a = rng.integers(0, 9, (2, 3)).astype(np.int32)
    b = rng.standard_normal((1, 3)).astype(np.float32)
    c = rng.random((2, 3)) < 0.5
    check(F.concat([F.const(a), F.const(b), F.const(c)], 0), np.concatenate([a, b, c], 0))
    check(F.concat([F.const(c), F.const(c.astype(np.uint8))], 1), np.concatenate([c, c.astype(np.uint8)], 1))


def test_concat_large_and_threads(rng):
    a = rng.standard_normal((512, 1000)).astype(np.float32)
    b = rng.standard_normal((512, 24)).astype(np.float32)
    for threads in (1, 2):
        mnnpy.set_num_threads(threads)
        check(F.concat([F.const(a), F.const(b)], 1), np.concatenate([a, b], 1))
        check(F.concat([F.const(a), F.const(a)], 0), np.concatenate([a, a], 0))
    mnnpy.set_num_threads(1)


def test_concat_errors():
    a = F.const(np.ones((2, 3)))
    with pytest.raises(ValueError, match="along dimension 1, the array at index 0 has size 3 and the array at index 1 "
                                         "has size 4"):
        F.concat([a, F.const(np.ones((2, 4)))], 0)
    with pytest.raises(ValueError, match="the array at index 0 has 2 dimension"):
        F.concat([a, F.const(np.ones(3))], 0)
    with pytest.raises(ValueError, match="need at least one array to concatenate"):
        F.concat([], 0)
    with pytest.raises(ValueError, match="zero-dimensional arrays cannot be concatenated"):
        F.concat([F.const(np.float32(1))], 0)
    with pytest.raises(IndexError, match="axis 2 is out of bounds"):
        F.concat([a, a], 2)


@SETTINGS
@given(shape=shapes, count=st.integers(1, 3), dtype=dtypes, data=st.data())
def test_stack_matches_numpy(shape, count, dtype, data):
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    rng = np.random.default_rng(2)
    parts = [rand(rng, shape, dtype) for _ in range(count)]
    check(F.stack([F.const(p) for p in parts], axis), np.stack(parts, axis))


def test_stack_errors():
    with pytest.raises(ValueError, match="all input arrays must have the same shape"):
        F.stack([F.const(np.ones(2)), F.const(np.ones(3))])
    with pytest.raises(ValueError, match="need at least one array to stack"):
        F.stack([])


# ---------------------------------------------------------------- split
@SETTINGS
@given(shape=nonempty_shapes, dtype=dtypes, data=st.data())
def test_split_sizes_and_sections(shape, dtype, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    n = shape[axis]
    x = rand(np.random.default_rng(3), shape, dtype)
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=3)))
    sizes = np.diff([0] + cuts + [n]).tolist()
    ours = F.split(F.const(x), sizes, axis)
    for o, e in zip(ours, np.split(x, cuts, axis), strict=True):
        check(o, e)
    sections = data.draw(st.integers(1, 4))
    ours = _core.split_sections(F.const(x), sections, axis, False)
    for o, e in zip(ours, np.array_split(x, sections, axis), strict=True):
        check(o, e)
    if n % sections == 0:
        for o, e in zip(F.split(F.const(x), sections, axis), np.split(x, sections, axis), strict=True):
            check(o, e)


@SETTINGS
@given(n=st.integers(0, 8), indices=st.lists(st.integers(-10, 10), max_size=4))
def test_split_at_indices_matches_numpy(n, indices):
    x = np.arange(n * 2, dtype=np.int16).reshape(n, 2)
    ours = _core.split_at(F.const(x), indices, 0)
    for o, e in zip(ours, np.split(x, indices, 0), strict=True):
        check(o, e)


def test_split_errors():
    v = F.const(np.ones(5))
    with pytest.raises(ValueError, match="array split does not result in an equal division"):
        F.split(v, 2)
    with pytest.raises(ValueError, match="number sections must be larger than 0"):
        F.split(v, 0)
    with pytest.raises(ValueError, match="add up to 4, not to the length 5"):
        F.split(v, [1, 3])
    with pytest.raises(ValueError, match="zero-dimensional"):
        F.split(F.const(np.float32(1)), [1])


def test_unstack(rng):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    for o, e in zip(F.unstack(F.const(x), 1), [x[:, i] for i in range(3)], strict=True):
        check(o, e)


# ---------------------------------------------------------------- slice / strided_slice
@SETTINGS
@given(shape=nonempty_shapes, dtype=dtypes, data=st.data())
def test_slice_matches_numpy(shape, dtype, data):
    x = rand(np.random.default_rng(4), shape, dtype)
    starts = [data.draw(st.integers(0, n)) for n in shape]
    sizes = [data.draw(st.sampled_from([-1, 0, max(0, n - s)]) | st.integers(0, n - s)) for n, s in zip(shape, starts)]
    expected = x[tuple(slice(s, None if z == -1 else s + z) for s, z in zip(starts, sizes))]
    check(F.slice(F.const(x), starts, sizes), expected)


def test_strided_slice_masks(rng):
    x = rng.standard_normal((4, 5, 6)).astype(np.float32)
    v = F.const(x)
    check(F.strided_slice(v, [1, 0, 5], [3, 5, -7], [1, 2, -2]), x[1:3, 0:5:2, 5:-7:-2])
    check(F.strided_slice(v, [1, 4, 0], [3, 0, 0], [1, -1, 1], begin_mask=1, end_mask=6), x[:3, 4::-1, 0:])
    check(F.strided_slice(v, [2, 0], [3, 0], [1, 1], ellipsis_mask=2), x[2:3, ...])
    check(F.strided_slice(v, [0, 1, 0], [0, 2, 0], [1, 1, 1], new_axis_mask=1, shrink_axis_mask=2, end_mask=4),
          x[None, 1])
    check(F.strided_slice(v, [-1], [0], [1], shrink_axis_mask=1), x[-1])


# ---------------------------------------------------------------- gather / gather_nd
@SETTINGS
@given(shape=nonempty_shapes, dtype=dtypes, idx_shape=st.lists(st.integers(0, 3), max_size=2).map(tuple),
       index_dtype=st.sampled_from(["int8", "uint8", "int16", "int32", "int64"]), data=st.data())
def test_gather_matches_numpy(shape, dtype, idx_shape, index_dtype, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    n = shape[axis]
    rng = np.random.default_rng(5)
    x = rand(rng, shape, dtype)
    low = 0 if index_dtype == "uint8" else -n
    idx = rng.integers(low, n, idx_shape).astype(index_dtype)
    check(F.gather(F.const(x), F.const(idx), axis), np.take(x, idx, axis))


def test_gather_large_rows_threads(rng):
    x = rng.standard_normal((4096, 64)).astype(np.float32)
    idx = rng.integers(-4096, 4096, 5000)
    for threads in (1, 2):
        mnnpy.set_num_threads(threads)
        check(F.gather(F.const(x), idx), np.take(x, idx, 0))
        check(F.gather(F.const(x), idx[:64] % 64, 1), np.take(x, idx[:64] % 64, 1))
    mnnpy.set_num_threads(1)


def test_gather_out_of_range():
    x = F.const(np.arange(3, dtype=np.float32))
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 3"):
        F.gather(x, [0, 5])
    with pytest.raises(IndexError, match="index -4 is out of bounds for axis 0 with size 3"):
        F.gather(x, np.array([-4]))
    # Computed indices are not known when the graph is built: out of range reads zeros.
    computed = F.add(F.const(np.array([0, 4, -1, -9], np.int32)), 1)
    check(F.gather(x, computed), np.array([1, 0, 0, 0], np.float32))
    with pytest.raises(TypeError, match="gather indices must be integers"):
        F.gather(x, F.const(np.array([0.0])))


def test_gather_with_placeholder_indices():
    x = F.const(np.arange(10, dtype=np.int64) * 3)
    p = F.placeholder([3], dtype=np.int32)
    g = F.gather(x, p)
    for values in ([0, 1, 2], [9, -1, 4], [10, 3, -11]):
        p.write(np.array(values, np.int32))
        check(g, np.array([(v + 10) % 10 * 3 if -10 <= v < 10 else 0 for v in values]))


def test_gather_nd(rng):
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    idx = rng.integers(0, 3, (2, 6, 2))
    check(F.gather_nd(F.const(x), idx), x[idx[..., 0], idx[..., 1]])
    idx3 = np.stack([rng.integers(0, n, 7) for n in x.shape], -1)
    check(F.gather_nd(F.const(x), idx3), x[idx3[:, 0], idx3[:, 1], idx3[:, 2]])


# ---------------------------------------------------------------- pad
@SETTINGS
@given(shape=shapes, dtype=dtypes, mode=st.sampled_from(["constant", "edge", "reflect", "symmetric", "wrap"]),
       data=st.data())
def test_pad_matches_numpy(shape, dtype, mode, data):
    x = rand(np.random.default_rng(6), shape, dtype)
    widths = [(data.draw(st.integers(0, 7)), data.draw(st.integers(0, 7))) for _ in shape]
    if mode != "constant":
        widths = [(b, a) if n else (0, 0) for (b, a), n in zip(widths, shape)]
    kwargs = {"constant_values": 3} if mode == "constant" and dtype != "bool" else {}
    expected = np.pad(x, widths, mode=mode, **kwargs) if shape else x  # NumPy refuses no widths
    ours = F.pad(F.const(x), widths, mode.upper(), **kwargs)
    check(ours, expected)


def test_pad_forms(rng):
    x = rng.standard_normal((2, 3)).astype(np.float32)
    v = F.const(x)
    check(F.pad(v, [[1, 2], [0, 1]]), np.pad(x, [[1, 2], [0, 1]]))
    check(F.pad(v, [1, 2, 0, 1]), np.pad(x, [[1, 2], [0, 1]]))
    check(F.pad(v, F.const(np.array([[1, 2], [0, 1]], np.int32))), np.pad(x, [[1, 2], [0, 1]]))
    check(F.pad(v, 2, "REFLECT"), np.pad(x, 2, "reflect"))
    check(F.pad(v, (1, 3), "SYMMETRIC"), np.pad(x, (1, 3), "symmetric"))
    big = rng.standard_normal((64, 300, 40)).astype(np.float32)
    mnnpy.set_num_threads(2)
    check(F.pad(F.const(big), [(1, 1), (2, 2), (3, 3)], "edge"), np.pad(big, [(1, 1), (2, 2), (3, 3)], "edge"))
    mnnpy.set_num_threads(1)


def test_pad_errors():
    v = F.const(np.ones((2, 3)))
    with pytest.raises(ValueError, match="index can't contain negative values"):
        F.pad(v, -1)
    with pytest.raises(ValueError, match="mode 'foo' is not supported"):
        F.pad(v, 1, "foo")
    with pytest.raises(ValueError, match="can't extend empty axis 0"):
        F.pad(F.const(np.ones((0, 3))), 1, "edge")
    with pytest.raises(ValueError, match="do not fit an array of 2 dimensions"):
        F.pad(v, [[1, 2], [1, 2], [1, 1]])
    with pytest.raises(TypeError, match="integral"):
        F.pad(v, 1.5)


# ---------------------------------------------------------------- expand_dims / squeeze / reshape
@SETTINGS
@given(shape=shapes, dtype=dtypes, data=st.data())
def test_expand_dims_and_squeeze(shape, dtype, data):
    x = rand(np.random.default_rng(7), shape, dtype)
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    check(F.expand_dims(F.const(x), axis), np.expand_dims(x, axis))
    check(F.unsqueeze(F.const(x), [axis]), np.expand_dims(x, axis))
    check(F.squeeze(F.const(x)), np.squeeze(x))
    ones = [i for i, d in enumerate(shape) if d == 1]
    if ones:
        a = data.draw(st.sampled_from(ones))
        check(F.squeeze(F.const(x), [a]), np.squeeze(x, a))


def test_squeeze_and_expand_dims_errors():
    v = F.const(np.ones((1, 3)))
    with pytest.raises(ValueError, match="cannot select an axis to squeeze out which has size not equal to one"):
        F.squeeze(v, [1])
    with pytest.raises(IndexError, match="axis 3 is out of bounds for array of dimension 3"):
        F.expand_dims(v, 3)
    with pytest.raises(ValueError, match="repeated axis"):
        F.expand_dims(v, [0, 0])


def test_reshape_and_var_methods(rng):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    v = F.const(x)
    check(F.reshape(v, [4, -1]), x.reshape(4, -1))
    check(F.reshape(v, F.const(np.array([6, 4], np.int32))), x.reshape(6, 4))
    check(v.reshape(6, 4), x.reshape(6, 4))
    check(v.reshape((3, 8)), x.reshape(3, 8))
    check(v.reshape(-1), x.reshape(-1))
    check(v.transpose(), x.transpose())
    check(v.transpose(1, 0, 2), x.transpose(1, 0, 2))
    check(v.transpose((2, 0, 1)), x.transpose(2, 0, 1))
    check(v.T, x.T)
    check(v.flatten(), x.flatten())
    with pytest.raises(ValueError, match="cannot reshape array of size 24 into shape"):
        v.reshape(5, 5)


def test_reverse(rng):
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    check(F.reverse(F.const(x), 1), x[:, ::-1])
    check(F.reverse(F.const(x), [0, -1]), x[::-1, :, ::-1])


# ---------------------------------------------------------------- data formats
@pytest.mark.parametrize("channels", [1, 3, 4, 5, 8, 9])
def test_convert_formats(rng, channels):
    x = rng.standard_normal((2, channels, 3, 5)).astype(np.float32)
    v = F.const(x)
    nhwc = F.convert(v, F.NHWC)
    assert nhwc.data_format == "NHWC"
    check(nhwc, x.transpose(0, 2, 3, 1))
    back = F.convert(nhwc, F.NCHW)
    assert back.data_format == "NCHW"
    check(back, x)
    c4 = F.convert(v, F.NC4HW4)
    # MNN shows an NC4HW4 Var with NCHW's shape and values; only the tag differs.
    assert c4.data_format == "NC4HW4" and c4.shape == x.shape
    check(c4, x)
    check(F.convert(c4, F.NCHW), x)
    check(F.convert(c4, F.NHWC), x.transpose(0, 2, 3, 1))
    assert F.convert(c4, F.NHWC).data_format == "NHWC"
    assert F.convert(c4, F.NCHW).data_format == "NCHW"
    check(F.convert(F.add(c4, 1.0), F.NCHW), x + np.float32(1))
    check(F.convert(F.convert(nhwc, F.NC4HW4), F.NHWC), x.transpose(0, 2, 3, 1))
    made = F.const(x, data_format=F.NC4HW4)
    check(F.convert(made, F.NCHW), x)


def test_convert_keeps_source_format():
    v = F.const(np.ones((1, 1, 1, 1), np.float32))
    out = F.convert(v, F.NHWC)
    assert out.data_format == "NHWC" and v.data_format == "NCHW"
    assert F.convert(v, F.NCHW) is not None


def test_convert_errors():
    with pytest.raises(ValueError, match="unknown data format"):
        F.convert(F.const(np.ones((1, 2, 3, 4))), "NCWH")
    with pytest.raises(ValueError, match="needs at least 3 dimensions"):
        F.convert(F.const(np.ones((2, 3))), F.NHWC)


# ---------------------------------------------------------------- graph behaviour
def test_views_of_constants_and_intermediates(rng):
    x = rng.standard_normal((4, 6)).astype(np.float32)
    v = F.const(x)
    check(F.reshape(v, [6, 4]), x.reshape(6, 4))
    t = F.transpose(v)
    flat = F.reshape(t, [24])
    tail = F.multiply(F.reshape(flat, [3, 8]), 2.0)
    a, b, c = mnnpy.eval(flat, tail, F.reshape(F.add(t, 1.0), [2, 12]))
    check(a, x.T.reshape(24))
    check(b, x.T.reshape(3, 8) * np.float32(2))
    check(c, (x.T + np.float32(1)).reshape(2, 12))


def test_fused_chain_after_transpose_and_slice(rng):
    x = rng.standard_normal((8, 16, 4)).astype(np.float32)
    v = F.const(x)
    y = F.tanh(F.add(F.multiply(F.transpose(v, [2, 0, 1])[:, 1::2, ::-3], 3.0), 1.0))
    expected = np.tanh(x.transpose(2, 0, 1)[:, 1::2, ::-3] * np.float32(3) + np.float32(1))
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-5, atol=1e-6)
    z = F.concat([F.exp(v), F.split(v, [1, 3], 2)[1]], 2)
    np.testing.assert_allclose(z.numpy(), np.concatenate([np.exp(x), x[..., 1:]], 2), rtol=1e-5)


def test_placeholder_through_shape_ops(rng):
    p = F.placeholder([2, 3, 4])
    y = F.concat([F.transpose(p, [0, 2, 1]), F.pad(F.transpose(p, [0, 2, 1]), [(0, 0), (0, 0), (1, 0)])[..., :3]], 1)
    for _ in range(2):
        x = rng.standard_normal((2, 3, 4)).astype(np.float32)
        p.write(x)
        t = x.transpose(0, 2, 1)
        check(y, np.concatenate([t, np.pad(t, [(0, 0), (0, 0), (1, 0)])[..., :3]], 1))


def test_zero_d_and_empty(rng):
    s = F.const(np.float32(2.5))
    check(F.transpose(s), np.float32(2.5))
    check(F.reshape(s, [1, 1]), np.full((1, 1), 2.5, np.float32))
    check(F.broadcast_to(s, [2, 3]), np.full((2, 3), 2.5, np.float32))
    check(F.pad(s, []), np.float32(2.5))
    e = np.zeros((0, 3), np.int32)
    check(F.transpose(F.const(e)), e.T)
    check(F.concat([F.const(e), F.const(e)], 0), np.zeros((0, 3), np.int32))
    check(F.pad(F.const(e), [(1, 1), (0, 0)]), np.pad(e, [(1, 1), (0, 0)]))
    check(F.gather(F.const(e), np.zeros(0, np.int64), 1), np.zeros((0, 0), np.int32))
