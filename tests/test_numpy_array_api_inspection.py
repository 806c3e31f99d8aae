"""mnnpy.numpy's Array API namespace pieces against NumPy's: __array_namespace_info__,
__array_api_version__, complex(v), empty boolean masks, DLPack, and the dtype functions."""
import numpy
import pytest

import mnnpy.numpy as mnp
from mnnpy import Var
from helpers import assert_same

KINDS = ["bool", "signed integer", "unsigned integer", "integral", "real floating", "complex floating", "numeric"]
# The standard's dtypes mnnpy lacks: complex and the wider unsigned integers.
MISSING = {"complex64", "complex128", "uint16", "uint32", "uint64"}


def test_version_and_namespace():
    assert mnp.__array_api_version__ == "2024.12"
    assert mnp.asarray([1.0]).__array_namespace__() is mnp


def test_info_against_numpy():
    ours, theirs = mnp.__array_namespace_info__(), numpy.__array_namespace_info__()
    assert ours.capabilities() == {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 16}
    assert ours.default_device() == mnp.asarray([1]).device == "cpu"
    assert ours.devices() == ["cpu"]
    assert ours.default_dtypes() == theirs.default_dtypes() == ours.default_dtypes(device="cpu")
    assert mnp.asarray([1.5]).dtype == ours.default_dtypes()["real floating"]
    assert mnp.arange(3).dtype == ours.default_dtypes()["integral"]
    for kind in [None, *KINDS, ("bool", "real floating"), ("signed integer", "unsigned integer")]:
        expected = {n: d for n, d in theirs.dtypes(kind=kind).items() if n not in MISSING}
        assert ours.dtypes(kind=kind) == expected, kind
        assert list(ours.dtypes(kind=kind)) == list(expected), kind  # NumPy's order
    for name, dtype in ours.dtypes().items():
        assert mnp.zeros(2, dtype=dtype).dtype == dtype == numpy.dtype(name)
    with pytest.raises(ValueError):
        ours.dtypes(kind="floating")
    with pytest.raises(ValueError):
        ours.dtypes(device="gpu")


@pytest.mark.parametrize("value", [numpy.float32(1.5), numpy.float64(-2.25), numpy.int8(-3), numpy.uint8(200),
                                   numpy.bool_(True), numpy.float16(0.5)])
def test_complex(value):
    ours = complex(mnp.asarray(value))
    assert type(ours) is complex and ours == complex(numpy.asarray(value))


def test_complex_of_a_non_scalar_fails_as_in_numpy():
    with pytest.raises(TypeError):
        complex(numpy.arange(3))
    with pytest.raises(TypeError):
        complex(mnp.arange(3))


@pytest.mark.parametrize("key_shape", [(0,), (0, 3), (2, 0), (0, 0), (1,), (0, 2), (3,), (0, 0, 0)])
@pytest.mark.parametrize("as_var", [False, True])
def test_empty_boolean_mask(key_shape, as_var):
    """An empty mask whose axes have length 0 or the array's selects nothing, as in NumPy; other
    shapes raise NumPy's IndexError."""
    x = numpy.arange(6, dtype=numpy.float32).reshape(2, 3)
    key = numpy.zeros(key_shape, dtype=bool)
    try:
        expected = x[key]
    except IndexError:
        with pytest.raises(IndexError):
            mnp.asarray(x)[mnp.asarray(key) if as_var else key]
        return
    assert_same(mnp.asarray(x)[mnp.asarray(key) if as_var else key], expected)


def test_boolean_masks_still_select():
    rng = numpy.random.default_rng(0)
    x = rng.standard_normal((3, 4)).astype(numpy.float32)
    for key in (x > 0, (x > 0)[0:1].repeat(3, 0), numpy.bool_(True), numpy.bool_(False)):
        assert_same(mnp.asarray(x)[mnp.asarray(key)], x[key])


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int16", "int32", "int64", "float32", "float64"])
def test_dlpack_round_trip(dtype):
    x = (numpy.arange(-3, 9).reshape(3, 4) % 5).astype(dtype)
    v = mnp.asarray(x)
    assert v.__dlpack_device__() == x.__dlpack_device__()
    ours = mnp.from_dlpack(v)
    assert isinstance(ours, Var)
    assert_same(ours, x)
    assert_same(numpy.from_dlpack(v), x)
    assert_same(mnp.from_dlpack(x), numpy.from_dlpack(x))
    assert_same(mnp.from_dlpack(x, copy=True), x)


def test_dtype_functions_take_arrays_and_dtypes():
    f32, i8 = mnp.asarray(numpy.float32([1.0])), mnp.asarray(numpy.int8([1]))
    a32, a8 = numpy.float32([1.0]), numpy.int8([1])
    assert mnp.result_type(f32, i8) == numpy.result_type(a32, a8)
    assert mnp.result_type(i8, 1.0) == numpy.result_type(a8, 1.0)
    assert mnp.result_type(mnp.int16, mnp.uint8) == numpy.result_type(numpy.int16, numpy.uint8)
    for to in (mnp.float64, mnp.int8, mnp.float16, mnp.bool):
        assert mnp.can_cast(f32, to) == numpy.can_cast(a32.dtype, to)
        assert mnp.can_cast(mnp.int8, to) == numpy.can_cast(numpy.int8, to)
    for dtype in ("float16", "float32", "float64"):
        ours, theirs = mnp.finfo(mnp.zeros(2, dtype=dtype)), numpy.finfo(numpy.dtype(dtype))
        assert (ours.eps, ours.max, ours.min, ours.smallest_normal, ours.bits, ours.dtype) == \
            (theirs.eps, theirs.max, theirs.min, theirs.smallest_normal, theirs.bits, theirs.dtype)
    for dtype in ("int8", "uint8", "int16", "int32", "int64"):
        ours, theirs = mnp.iinfo(mnp.zeros(2, dtype=dtype)), numpy.iinfo(numpy.dtype(dtype))
        assert (ours.min, ours.max, ours.bits, ours.dtype) == (theirs.min, theirs.max, theirs.bits, theirs.dtype)
    for kind in KINDS + [("bool", "integral")]:
        for dtype in (mnp.bool, mnp.int8, mnp.uint8, mnp.float32, mnp.float64):
            assert mnp.isdtype(dtype, kind) == numpy.isdtype(dtype, kind), (dtype, kind)
