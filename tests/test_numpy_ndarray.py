"""Var as an ndarray: methods and attributes against NumPy's, the protocols (NumPy, DLPack with
PyTorch, the Array API namespace, pickling), and the names mnnpy.numpy refuses."""
import copy
import pickle

import numpy as np
import pytest
import torch
from hypothesis import given, settings

import mnnpy
import mnnpy.numpy as mp
from helpers import assert_same
from numpy_strategies import arrays


@settings(max_examples=40, deadline=None)
@given(x=arrays())
def test_attributes_and_conversions(x):
    v = mp.asarray(x)
    assert isinstance(v, mp.ndarray)
    assert (v.shape, v.dtype, v.ndim, v.size, v.itemsize, v.nbytes) == (x.shape, x.dtype, x.ndim, x.size,
                                                                         x.itemsize, x.nbytes)
    assert v.tolist() == x.tolist()
    assert v.tobytes() == x.tobytes()
    assert repr(v) == repr(x)
    assert str(v) == str(x)
    if x.ndim:
        assert len(v) == len(x)
        for ours, expected in zip(v, x):
            assert_same(ours, expected)
    else:
        with pytest.raises(TypeError):
            len(v)
    if x.size == 1:
        assert v.item() == x.item()
    assert_same(v.copy(), x.copy())
    assert_same(v.flatten(), x.flatten())
    assert_same(v.T, x.T)
    if x.ndim >= 2:
        assert_same(v.mT, x.mT)
    for dtype in ("int16", "float32", "bool"):
        assert_same(v.astype(dtype), x.astype(dtype))


def test_astype_casting_rule_and_fill():
    v = mp.arange(4)
    with pytest.raises(TypeError):
        v.astype(np.int8, casting="safe")
    with pytest.raises(TypeError):
        np.arange(4).astype(np.int8, casting="safe")
    v.fill(3)
    assert_same(v, np.full(4, 3))


def test_pickle_and_copy_round_trip(rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    v = mp.asarray(x) * 2
    for restored in (pickle.loads(pickle.dumps(v)), copy.copy(v), copy.deepcopy(v)):
        assert_same(restored, x * 2)
    with pytest.raises(TypeError):
        pickle.dumps(mnnpy.expr.placeholder((2,)))


def test_numpy_reads_without_copy_and_dlpack_with_torch(rng):
    x = rng.standard_normal((5, 6)).astype(np.float32)
    v = mp.exp(x)
    first, second = np.asarray(v), np.asarray(v)
    assert np.shares_memory(first, second)  # the computed buffer, not a copy per read
    assert not first.flags.writeable  # and read-only: the user cannot corrupt a shared value
    t = torch.from_dlpack(v)
    np.testing.assert_allclose(t.numpy(), np.exp(x), rtol=2e-6)
    back = mp.from_dlpack(torch.arange(6, dtype=torch.int32).reshape(2, 3))
    assert_same(back, np.arange(6, dtype=np.int32).reshape(2, 3))
    assert_same(mp.from_dlpack(np.arange(3.0)), np.arange(3.0))
    assert v.__dlpack_device__() == (1, 0)


def test_array_namespace_is_mnnpy_numpy():
    v = mp.arange(3)
    xp = v.__array_namespace__()
    assert xp is mp
    assert_same(xp.sum(xp.asarray([1, 2, 3])) if hasattr(xp, "sum") else np.int64(6), np.int64(6))


def test_methods_call_the_functions(rng):
    x = rng.integers(-5, 5, size=(3, 4))
    v = mp.asarray(x)
    assert_same(v.clip(-2, 2), x.clip(-2, 2))
    assert_same(v.round(), x.round())
    assert_same(v.conj(), x.conj())
    assert_same(v.real, x.real)
    assert_same(v.imag, x.imag)
    assert_same(divmod(v, 3)[1], divmod(x, 3)[1])
    assert v.device == "cpu" and v.to_device("cpu") is v


@pytest.mark.parametrize("name", ["fft", "char", "ma", "polyfit", "busday_count", "datetime_as_string"])
def test_missing_numpy_names_raise_attribute_error(name):
    assert hasattr(np, name)
    with pytest.raises(AttributeError, match=name):
        getattr(mp, name)


def test_dtype_names_and_constants_are_numpys():
    for name in ("float32", "int64", "uint8", "bool_", "bool", "pi", "e", "inf", "euler_gamma", "newaxis",
                 "finfo", "iinfo", "dtype"):
        assert getattr(mp, name) is getattr(np, name) or (name == "newaxis" and mp.newaxis is None)
    assert np.isnan(mp.nan)
    v = mp.asarray(np.arange(3, dtype=np.int16))
    assert mp.result_type(v, 1.5) == np.result_type(np.int16, 1.5)
    assert mp.result_type(v, np.float32) == np.float32
    assert mp.can_cast(v, np.int32) and not mp.can_cast(v, np.int8)
    assert mp.promote_types(np.int8, np.uint8) == np.int16
    assert mp.isscalar(3.0) and not mp.isscalar(v)
