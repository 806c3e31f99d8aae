"""Hypothesis strategies shared by the mnnpy.numpy property tests: arrays of every dtype the
core supports, shapes with 0-d, empty and broadcastable cases, and non-contiguous views."""
import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64"]
NUMERIC_DTYPES = DTYPES[1:]
FLOAT_DTYPES = ["float16", "float32", "float64"]
INT_DTYPES = ["int8", "uint8", "int16", "int32", "int64"]

# Small shapes: 0-d, empty and up to 4 axes.
shapes = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5)
nonempty_shapes = hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=5)


def _representable(bound, dtype, up):
    """The nearest value of ``dtype`` inside the bound (hypothesis wants exact floats)."""
    value = dtype.type(bound)
    if (up and value < bound) or (not up and value > bound):
        value = np.nextafter(value, dtype.type(np.inf if up else -np.inf))
    return float(value)


def elements(dtype, allow_nan=False, min_value=None, max_value=None):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        lo = _representable(-1e3 if min_value is None else min_value, dtype, up=True)
        hi = _representable(1e3 if max_value is None else max_value, dtype, up=False)
        finite = st.floats(lo, hi, allow_nan=False, allow_infinity=False, width=8 * dtype.itemsize)
        return st.one_of(finite, st.just(float("nan"))) if allow_nan else finite
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo = info.min if min_value is None else max(info.min, int(min_value))
        hi = info.max if max_value is None else min(info.max, int(max_value))
        return st.integers(lo, hi)
    return st.booleans()


@st.composite
def arrays(draw, dtype=None, shape=None, dtypes=DTYPES, allow_nan=False, min_value=None, max_value=None,
           noncontiguous=True):
    """A NumPy array; sometimes a non-contiguous view (reversed or strided) of a larger one."""
    dtype = draw(st.sampled_from(dtypes)) if dtype is None else dtype
    shape = draw(shapes) if shape is None else shape
    if isinstance(shape, st.SearchStrategy):
        shape = draw(shape)
    elems = elements(dtype, allow_nan, min_value, max_value)
    if noncontiguous and len(shape) and draw(st.booleans()):
        big = draw(hnp.arrays(dtype, tuple(2 * s for s in shape), elements=elems))
        view = big[tuple(slice(None, None, 2) for _ in shape)]
        return view[::-1] if draw(st.booleans()) else view
    return draw(hnp.arrays(dtype, shape, elements=elems))


@st.composite
def broadcastable_pair(draw, dtypes=DTYPES, allow_nan=False, min_value=None, max_value=None):
    """Two arrays whose shapes broadcast together (and their dtypes, drawn independently)."""
    a_shape, b_shape = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4,
                                                              max_side=4)).input_shapes
    a = draw(arrays(shape=a_shape, dtypes=dtypes, allow_nan=allow_nan, min_value=min_value, max_value=max_value))
    b = draw(arrays(shape=b_shape, dtypes=dtypes, allow_nan=allow_nan, min_value=min_value, max_value=max_value))
    return a, b


def axis_for(draw, ndim, allow_none=True, allow_tuple=True):
    """An axis argument valid for ``ndim`` axes: None, an int (negative too) or a tuple."""
    choices = []
    if allow_none:
        choices.append(st.none())
    if ndim:
        choices.append(st.integers(-ndim, ndim - 1))
        if allow_tuple:
            choices.append(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim).map(tuple))
    return draw(st.one_of(*choices)) if choices else None
