"""What MNN programs rely on right after `import MNN` (mnnpy aliased as MNN)."""
import subprocess
import sys

LAZY = r"""
import sys
import mnnpy as MNN
before = {m for m in ("mnnpy.nn", "mnnpy.cv", "mnnpy.numpy", "mnnpy.convert") if m in sys.modules}
assert MNN.nn.load_module_from_file is sys.modules["mnnpy.nn"].load_module_from_file
assert MNN.cv.resize is sys.modules["mnnpy.cv"].resize
assert MNN.numpy.zeros is sys.modules["mnnpy.numpy"].zeros
assert MNN.convert.from_onnx is sys.modules["mnnpy.convert"].from_onnx
assert {"nn", "cv", "numpy", "convert", "expr"} <= set(dir(MNN))
try:
    MNN.not_a_submodule
except AttributeError as e:
    assert "not_a_submodule" in str(e)
else:
    raise AssertionError("an unknown attribute must raise AttributeError")
print(sorted(before))
"""


def test_submodules_are_attributes_after_the_top_level_import_loaded_on_first_access():
    from helpers import python_env
    proc = subprocess.run([sys.executable, "-c", LAZY], capture_output=True, text=True, timeout=120, env=python_env())
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]"  # none of them was imported by `import mnnpy` itself


import numpy as np  # noqa: E402
import pytest  # noqa: E402

import mnnpy  # noqa: E402
from mnnpy import expr as F  # noqa: E402


def test_expr_dtype_names_at_module_level_cast_like_numpy(rng):
    x = rng.uniform(0, 120, (3, 4))  # inside every target type's range (NumPy wraps out-of-range casts)
    for name, want in (("float", np.float32), ("double", np.float64), ("int", np.int32), ("int64", np.int64),
                       ("int8", np.int8), ("uint8", np.uint8)):
        assert getattr(F, name) == getattr(F.dtype, name)
        got = F.cast(F.const(x), getattr(F, name)).read()
        assert got.dtype == want and np.array_equal(got, x.astype(want))
    namespace = {}
    exec("from mnnpy.expr import *", namespace)
    assert "float" not in namespace and "int" not in namespace  # builtins stay visible after a star import


def test_expr_pad_modes_match_numpy(rng):
    x = rng.standard_normal((3, 5)).astype(np.float32)
    widths = [[1, 2], [2, 1]]
    for mode, numpy_mode in ((F.CONSTANT, "constant"), (F.REFLECT, "reflect"), (F.SYMMETRIC, "symmetric"),
                             (F.PadValue_Mode.REFLECT, "reflect")):
        assert np.array_equal(F.pad(F.const(x), widths, mode).read(), np.pad(x, widths, mode=numpy_mode))


def test_expr_mode_enums_have_mnn_members_and_numbers():
    assert [int(m) for m in (F.PrecisionMode.Normal, F.PrecisionMode.High, F.PrecisionMode.Low,
                             F.PrecisionMode.Low_BF16)] == [0, 1, 2, 3]
    assert [int(m) for m in F.MemoryMode] == [0, 1, 2] and [int(m) for m in F.PowerMode] == [0, 1, 2]
    assert (F.Normal, F.High, F.Low, F.Low_BF16) == (0, 1, 2, 3)
    assert {F.NEAREST, F.BILINEAR} == {F.Interp_Method.NEAREST, F.Interp_Method.BILINEAR}
    assert F.MAXPOOL != F.AVEPOOL and F.Pooling_Mode.MAXPOOL == F.MAXPOOL


def test_precision_modes_set_the_executor_precision():
    before = mnnpy.get_precision()
    try:
        for mode, name in ((F.PrecisionMode.Low, "low"), (F.High, "high"), (F.Low_BF16, "low"), (F.Normal, "normal")):
            F.set_global_executor_config(F.CPU, mode)
            assert mnnpy.get_precision() == name
    finally:
        mnnpy.set_precision(before)


def test_expr_array_functions_in_mnn_signatures_match_numpy(rng):
    x = rng.standard_normal((4, 5)).astype(np.float32)
    xi = rng.integers(-5, 6, (4, 5)).astype(np.int32)
    z = F.zeros_like(F.const(x))
    assert z.dtype == np.float32 and np.array_equal(z.read(), np.zeros_like(x))
    assert np.array_equal(F.fill([2, 3], 1.5).read(), np.full((2, 3), 1.5, np.float32))
    assert F.fill([3], 7).read().dtype == np.int32 and tuple(F.fill(F.const(np.array([2, 2], np.int32)), 2.0).shape) == (2, 2)
    for args in ((1, 7, 2), (5, 1, -1), (0, 10, 3)):
        got = F.range(*args).read()
        assert got.dtype == np.int32 and np.array_equal(got, np.arange(*args))
    got = F.range(0.0, 1.0, 0.25).read()
    assert got.dtype == np.float32 and np.array_equal(got, np.arange(0.0, 1.0, 0.25, dtype=np.float32))
    assert np.array_equal(F.cumsum(F.const(xi)).read(), np.cumsum(xi, axis=0, dtype=np.int32))
    assert F.cumsum(F.const(xi), 1).read().dtype == np.int32
    # Products of at most 4 float32 factors: within 3 roundings of float64's.
    want = np.cumprod(x.astype(np.float64), axis=-1)
    assert np.all(np.abs(F.cumprod(F.const(x), -1).read() - want) <= 3 * 2.0 ** -24 * np.abs(want) + 1e-45)
    positive = np.argwhere(x > 0)
    assert np.array_equal(F.where(F.const(x)).read(), positive) and F.where(F.const(x)).read().dtype == np.int32
    with pytest.raises(ValueError, match="delta"):
        F.range(0, 5, 0)


def test_expr_sort_matches_numpy_and_torch_stable_orders(rng):
    import torch
    x = rng.integers(0, 4, (3, 9)).astype(np.float32)  # many equal values: the order among them counts
    for axis in (-1, 0):
        assert np.array_equal(F.sort(F.const(x), axis).read(), np.sort(x, axis=axis))
        assert np.array_equal(F.sort(F.const(x), axis, True).read(), np.argsort(x, axis=axis, kind="stable"))
        values, indices = torch.sort(torch.from_numpy(x), dim=axis, descending=True, stable=True)
        assert np.array_equal(F.sort(F.const(x), axis, False, True).read(), values.numpy())
        got = F.sort(F.const(x), axis, True, True).read()
        assert got.dtype == np.int32 and np.array_equal(got, indices.numpy())


def test_expr_setdiff1d_unravel_index_and_read_as_tuple(rng):
    x = rng.integers(0, 6, 12).astype(np.int32)
    y = rng.integers(0, 6, 3).astype(np.int32)
    got = F.setdiff1d(F.const(x), F.const(y)).read()
    assert np.array_equal(got, x[~np.isin(x, y)])  # MNN's: x's order, repeats kept
    flat = rng.integers(0, 60, 7).astype(np.int32)
    got = F.unravel_index(F.const(flat), [3, 4, 5]).read()
    assert got.dtype == np.int32 and np.array_equal(got, np.stack(np.unravel_index(flat, (3, 4, 5))))
    with pytest.raises(ValueError):
        F.unravel_index(F.const(np.array([60], np.int32)), [3, 4, 5]).read()
    v = rng.standard_normal((2, 3)).astype(np.float32)
    t = F.const(v).read_as_tuple()
    assert isinstance(t, tuple) and t == tuple(float(a) for a in v.reshape(-1))


def test_expr_const_reads_mnns_raw_forms_bytes_addresses_and_capsules(rng):
    import numpy as np
    import mnnpy as MNN
    F = MNN.expr
    data = rng.standard_normal((3, 5)).astype(np.float32)
    np.testing.assert_array_equal(F.const(data.tobytes(), [3, 5]).read(), data)
    ints = rng.integers(-1000, 1000, 7).astype(np.int32)
    from_bytes = F.const(bytearray(ints.tobytes()), [7], F.NCHW, F.int)
    assert from_bytes.dtype == np.int32
    np.testing.assert_array_equal(from_bytes.read(), ints)
    # An address is read when called (a copy): later changes of the memory do not reach the Var.
    from_address = F.const(data.__array_interface__["data"][0], [3, 5])
    kept = data.copy()
    data[:] = 0
    np.testing.assert_array_equal(from_address.read(), kept)
    source = F.const(kept, [3, 5])
    np.testing.assert_array_equal(F.const(source.ptr, [3, 5]).read(), kept)
    # One element with an int is the number itself, as a Python number with a shape.
    np.testing.assert_array_equal(F.const(7, [1]).read(), np.array([7], np.float32))
    with pytest.raises(ValueError, match="not a whole number"):
        F.const(b"\0" * 6, [2])
    with pytest.raises(ValueError, match="do not fill shape"):
        F.const(data.tobytes(), [4, 5])
    with pytest.raises(ValueError, match="not readable memory"):
        F.const(16, [4])  # the null page: an error, not a crash


def test_expr_scalar_dtypes_follow_the_python_type():
    import numpy as np
    import mnnpy as MNN
    F = MNN.expr
    assert F.scalar(3).dtype == np.int32 and F.scalar(3).read() == 3
    assert F.scalar(2.5).dtype == np.float32 and F.scalar(2.5).read() == np.float32(2.5)
    assert F.scalar(3, F.float).dtype == np.float32
    assert F.scalar(np.float64(0.1)).dtype == np.float64


def test_expr_scale_takes_nc4hw4s_padded_channel_count(rng):
    import numpy as np
    import mnnpy as MNN
    F = MNN.expr
    data = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    factors, offsets = rng.standard_normal(3).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    expected = data * factors[:, None, None] + offsets[:, None, None]
    blocked = F.convert(F.const(data, data.shape), F.NC4HW4)
    for channels in (3, 4):  # x's channels, or MNN's count of them padded to 4
        y = F.convert(F.scale(blocked, channels, list(factors), list(offsets)), F.NCHW)
        # The product may be fused with the addition: the reference rounds the product and the
        # sum, the fused result once, each within half an ulp (2**-24 relative).
        bound = 2 ** -23 * (np.abs(data * factors[:, None, None]) + np.abs(expected))
        assert np.all(np.abs(y.read() - expected) <= bound)
    with pytest.raises(ValueError, match="channels is 5"):
        F.scale(blocked, 5, list(factors), list(offsets))
    with pytest.raises(ValueError, match="channels is 4"):
        F.scale(F.const(data, data.shape), 4, list(factors), list(offsets))  # NCHW: no padding


# MNN 3.6.1's names that mnnpy does not have, each with why (docs/from_mnn.md lists them too).
NOT_PROVIDED = {
    # Device pointers of GPU backends mnnpy does not have (CUDA/OpenCL), and closing a Var's
    # device memory.
    "MNN.expr.Var": {"close", "copy_to_device_ptr", "set_device_ptr"},
    "MNN.numpy": {"sort_complex"},  # mnnpy has no complex dtype
    "MNN.llm": {"Reranker", "create_reranker"},  # mnnpy.llm's first part: decoder models only
}


def mnn_api_names():
    """{namespace: [names]} from MNN 3.6.1's list of public names (tests/data)."""
    import pathlib
    import re
    text = (pathlib.Path(__file__).parent / "data" / "mnn_python_api_names.md").read_text()
    found = re.findall(r"^## (\S+)(?: members)? \(\d+(?: names)?\)\n(.*)$", text, re.M)
    return {space: [n.replace("(c)", "").strip() for n in body.split(",")] for space, body in found}


def test_every_mnn_api_name_exists_with_members_of_its_classes():
    import mnnpy
    names = mnn_api_names()
    assert len(names) >= 20 and sum(map(len, names.values())) > 700
    missing = {}
    for space, members in names.items():
        if space in NOT_PROVIDED and NOT_PROVIDED[space] is None:
            continue
        target = mnnpy
        for part in space.split(".")[1:]:
            target = getattr(target, part)
        if space == "MNN.nn.Module":
            target = mnnpy.nn.Module()  # name and is_training are attributes of instances
        absent = {n for n in members if not hasattr(target, n)} - NOT_PROVIDED.get(space, set())
        if absent:
            missing[space] = sorted(absent)
    assert missing == {}
