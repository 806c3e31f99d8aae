"""save / load_as_list / load_as_dict: round trips against NumPy, the mmap'd constants, and
loads of damaged or hostile files (truncated, flipped, random, huge fields), which must raise
ValueError/OSError and never crash, hang or leak.

Run as a script (``python tests/test_expr_io.py DIR SEED``) it does the whole fuzz loop, which
the tests also run in a subprocess so that a crash shows up as a failure.
"""
import gc
import os
import struct
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import mnnpy
from mnnpy import expr as F
from helpers import python_env

HEADER = struct.Struct("<8sIIIIQQQQQQQQQ")  # docs/file_format.md, "Header"
HEADER_FIELDS = ["magic", "major", "minor", "header_size", "flags", "file_size", "nodes_offset", "nodes_size",
                 "node_count", "outputs_offset", "outputs_size", "output_count", "data_offset", "data_size"]
DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def np_dtype(name):
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def random_values(rng, shape, dtype):
    dt = np_dtype(dtype)
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dt)
    return (rng.standard_normal(shape) * 100).astype(dt)


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def mappings_of(path):
    """(start, end) of this process's mappings of `path`."""
    real = os.path.realpath(path)
    spans = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(maxsplit=5)
            if len(parts) == 6 and parts[5].strip() == real:
                start, end = (int(x, 16) for x in parts[0].split("-"))
                spans.append((start, end))
    return spans


# ---------------------------------------------------------------- a reader of the layout, to craft files
def parse(buf):
    """Header fields and, per node record, the offsets of its fields (see docs/file_format.md)."""
    h = dict(zip(HEADER_FIELDS, HEADER.unpack_from(buf, 0)))
    pos = h["nodes_offset"]
    nodes = []

    def u32():
        nonlocal pos
        pos += 4
        return struct.unpack_from("<I", buf, pos - 4)[0]

    def string():
        nonlocal pos
        at = pos
        n = u32()
        pos += n
        return at, bytes(buf[at + 4:at + 4 + n]).decode()

    for _ in range(h["node_count"]):
        rec = {"size_at": pos}
        size = u32()
        end = pos + size
        rec["kind"] = buf[pos]
        pos += 1
        rec["op_at"], rec["op"] = string()
        rec["name_at"], rec["name"] = string()
        rec["format_at"], rec["format"] = string()
        rec["inputs_at"] = pos
        rec["inputs"] = []
        for _ in range(u32()):
            rec["inputs"].append((pos, u32(), u32()))
        rec["attrs_at"] = pos
        rec["attrs"] = {}
        for _ in range(u32()):
            key_at, key = string()
            kind = buf[pos]
            pos += 1
            rec["attrs"][key] = (key_at, pos, kind)
            if kind in (0, 1):
                pos += 8
            elif kind == 2:
                n = u32()
                pos += 8 * n
            else:
                string()
        rec["outputs_at"] = pos
        rec["types"] = []
        for _ in range(u32()):
            at = pos
            rank = buf[pos + 1]
            pos += 2
            dims = struct.unpack_from(f"<{rank}q", buf, pos)
            pos += 8 * rank
            rec["types"].append((at, DTYPES[buf[at]], dims))
        if rec["kind"] == 1:
            rec["data_at"] = pos
            rec["data_offset"], rec["data_size"] = struct.unpack_from("<QQ", buf, pos)
            pos += 16
        assert pos == end
        nodes.append(rec)
    return h, nodes


def set_header(buf, field, value):
    buf = bytearray(buf)
    i = HEADER_FIELDS.index(field)
    offset = 8 + 4 * min(i - 1, 4) + 8 * max(i - 5, 0)
    struct.pack_into("<I" if i <= 4 else "<Q", buf, offset, value)
    return bytes(buf)


def node_of(nodes, op):
    return next(n for n in nodes if n["op"] == op)


# ---------------------------------------------------------------- round trips
def test_const_and_op_graph_round_trip(tmp_path, rng):
    a_np = rng.standard_normal((3, 4)).astype(np.float32)
    b_np = rng.standard_normal((4,)).astype(np.float32)
    i_np = rng.integers(-50, 50, (3, 4)).astype(np.int32)
    a, b, i = F.const(a_np), F.const(b_np), F.const(i_np)
    outs = [
        F.reduce_sum(F.exp(a) * b - 1.5, axis=1),
        F.reshape(F.sqrt(F.abs(a)) + i, (2, 6)),
        F.reduce_max(a, axis=0, keepdims=True),
        F.reduce_mean(i, axis=[0, 1]),
        F.select(a > b, a, F.negative(b)),
        F.cast(F.floordiv(i, 7), np.int64),
        F.argmax(a, axis=1),
        (i & 12) | 3,
    ]
    expected = [
        np.sum(np.exp(a_np) * b_np - np.float32(1.5), axis=1),
        np.reshape(np.sqrt(np.abs(a_np)) + i_np, (2, 6)),
        np.max(a_np, axis=0, keepdims=True),
        np.mean(i_np),
        np.where(a_np > b_np, a_np, -b_np),
        (i_np // 7).astype(np.int64),
        np.argmax(a_np, axis=1),
        (i_np & 12) | 3,
    ]
    path = tmp_path / "graph.mnnpy"
    F.save(outs, path)
    loaded = F.load_as_list(path)
    assert len(loaded) == len(outs)
    for var, orig, ref in zip(loaded, outs, expected):
        assert var.op_type == orig.op_type and var.shape == ref.shape and var.dtype == ref.dtype
        np.testing.assert_allclose(var.read().astype(np.float64), ref.astype(np.float64), rtol=2e-6, atol=1e-6)
    # The graph structure is rebuilt, not just the values.
    assert [v.op_type for v in loaded[0].inputs] == [v.op_type for v in outs[0].inputs]


def test_one_var_and_str_or_pathlike_file_names(tmp_path, rng):
    x_np = rng.standard_normal(5)
    F.save(F.const(x_np) * 2.0, str(tmp_path / "one"))
    [y] = F.load_as_list(os.fsencode(tmp_path / "one"))
    np.testing.assert_array_equal(y.read(), x_np * 2.0)


def test_placeholder_stays_a_placeholder(tmp_path, rng):
    x = F.placeholder((2, 3), dtype=np.float32)
    x.name = "x"
    w_np = rng.standard_normal((2, 3)).astype(np.float32)
    y = F.reduce_sum(F.tanh(x * F.const(w_np)), axis=1)
    y.name = "y"
    x.write(np.ones((2, 3), np.float32))  # a written value is not part of the graph file
    y.read()
    F.save([y, x], tmp_path / "p.mnnpy")
    d = F.load_as_dict(tmp_path / "p.mnnpy")
    assert list(d) == ["y", "x"]
    x2, y2 = d["x"], d["y"]
    assert x2.is_placeholder and not x2.is_evaluated and x2.shape == (2, 3) and x2.dtype == np.float32
    assert y2.op_type == "Reshape" or y2.op_type == "Reduce"
    with pytest.raises(ValueError, match="has no value"):
        y2.read()
    for _ in range(2):
        v = rng.standard_normal((2, 3)).astype(np.float32)
        x2.write(v)
        np.testing.assert_allclose(y2.read(), np.sum(np.tanh(v * w_np), axis=1), rtol=2e-6)


def test_names_preserved_and_generated(tmp_path):
    a = F.const([1.0, 2.0])
    a.name = "alpha"
    b = a + 1.0
    b.name = "beta"
    c = a * 3.0  # unnamed
    d = a - 1.0
    d.name = "beta"  # a duplicate name
    F.save([a, b, c, d], tmp_path / "n.mnnpy")
    names = {k: v.read().tolist() for k, v in F.load_as_dict(tmp_path / "n.mnnpy").items()}
    assert names == {"alpha": [1.0, 2.0], "beta": [2.0, 3.0], "output_2": [3.0, 6.0], "output_3": [0.0, 1.0]}
    loaded = F.load_as_list(tmp_path / "n.mnnpy")
    assert [v.name for v in loaded] == ["alpha", "beta", "", "beta"]


def test_dict_finds_named_inner_nodes(tmp_path, rng):
    x = F.placeholder((3,), dtype=np.float64)
    x.name = "input"
    h = F.exp(x)
    h.name = "hidden"
    out = h + 1.0
    F.save(out, tmp_path / "inner.mnnpy")
    d = F.load_as_dict(tmp_path / "inner.mnnpy")
    assert list(d) == ["output_0", "input", "hidden"]
    v = rng.standard_normal(3)
    d["input"].write(v)
    np.testing.assert_allclose(d["output_0"].read(), np.exp(v) + 1.0, rtol=1e-13)
    np.testing.assert_allclose(d["hidden"].read(), np.exp(v), rtol=1e-13)
    assert len(F.load_as_list(tmp_path / "inner.mnnpy")) == 1


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_bit_exact(tmp_path, rng, dtype):
    values = random_values(rng, (3, 5), dtype)
    if np_dtype(dtype).kind == "f":
        values[0, :3] = [np.nan, np.inf, -0.0]
    scalar = random_values(rng, (), dtype)
    empty = random_values(rng, (0, 4), dtype)
    p = F.placeholder((7, 0, 2), dtype=np_dtype(dtype) if dtype != "bfloat16" else "bfloat16")
    outs = [F.const(values), F.const(scalar), F.const(empty), p, F.reshape(F.const(values), (5, 3))]
    F.save(outs, tmp_path / "d.mnnpy")
    c, s, e, p2, r = F.load_as_list(tmp_path / "d.mnnpy")
    same_bits(c.read(), values)
    same_bits(s.read(), scalar)
    same_bits(e.read(), empty)
    same_bits(r.read(), values.reshape(5, 3))
    assert p2.is_placeholder and p2.shape == (7, 0, 2) and p2.dtype == np_dtype(dtype)


def test_data_format_kept(tmp_path):
    x = F.const(np.zeros((1, 2, 3, 4), np.float32), data_format=F.NHWC)
    y = F.placeholder((2,), data_format=F.NC4HW4)
    F.save([x, x + 1.0, y], tmp_path / "f.mnnpy")
    assert [v.data_format for v in F.load_as_list(tmp_path / "f.mnnpy")] == ["NHWC", "NHWC", "NC4HW4"]


def test_evaluated_outputs_are_stored_as_values(tmp_path, rng):
    a_np = rng.standard_normal(10)
    y = F.sin(F.const(a_np)) * 2.0
    lazy = F.cos(F.const(a_np))
    computed = np.array(y.read())
    F.save([y, lazy], tmp_path / "e.mnnpy")
    y2, lazy2 = F.load_as_list(tmp_path / "e.mnnpy")
    assert y2.is_const and not lazy2.is_const and lazy2.op_type == "Cos"
    # The stored value is the computed one, bit for bit (which is within an ulp or two of NumPy's
    # sin: vector sin rounds its products separately on the portable SIMD target).
    np.testing.assert_array_equal(y2.read(), computed)
    np.testing.assert_allclose(computed, np.sin(a_np) * 2.0, rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(lazy2.read(), np.cos(a_np), rtol=1e-13)


def test_shared_constants_stored_once(tmp_path):
    big = F.const(np.arange(100_000, dtype=np.float64))
    F.save([big + 1.0, big * 2.0, big], tmp_path / "s.mnnpy")
    assert os.path.getsize(tmp_path / "s.mnnpy") < 800_000 + 4096
    a, b, c = F.load_as_list(tmp_path / "s.mnnpy")
    assert a.inputs[0].read().__array_interface__["data"][0] == c.read().__array_interface__["data"][0]
    np.testing.assert_array_equal(b.read(), np.arange(100_000) * 2.0)


def test_attributes_of_every_type_round_trip(tmp_path):
    attrs = {"alpha": -2.25, "tag": "hello \u00e9", "dims": [1, -2, 2**62], "none": [], "k": -7, "empty": ""}
    v = mnnpy._core.op("Neg", [F.const([1.0, 2.0])], attrs)
    F.save(v, tmp_path / "attrs.mnnpy")
    [w] = F.load_as_list(tmp_path / "attrs.mnnpy")
    assert w.attrs == v.attrs and w.attrs["tag"] == attrs["tag"] and isinstance(w.attrs["alpha"], float)
    assert w.read().tolist() == [-1.0, -2.0]


def test_empty_output_list(tmp_path):
    F.save([], tmp_path / "none.mnnpy")
    assert F.load_as_list(tmp_path / "none.mnnpy") == []
    assert F.load_as_dict(tmp_path / "none.mnnpy") == {}


def test_random_graphs_round_trip(tmp_path):
    from hypothesis import given, settings, strategies as st
    from hypothesis.extra import numpy as hnp

    unary = ["negative", "abs", "square", "floor", "sign"]
    binary = ["add", "subtract", "multiply", "maximum", "minimum"]

    @settings(max_examples=25, deadline=None)
    @given(shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5),
           dtype=st.sampled_from(["int8", "int32", "int64", "float16", "bfloat16", "float32", "float64"]),
           ops=st.lists(st.tuples(st.sampled_from(unary + binary), st.integers(0, 10)), max_size=6),
           seed=st.integers(0, 2**31))
    def check(shape, dtype, ops, seed):
        rng = np.random.default_rng(seed)
        vars = [F.const(random_values(rng, shape, dtype) if np_dtype(dtype).kind == "f"
                        else rng.integers(-9, 9, shape).astype(np_dtype(dtype)))]
        for name, k in ops:
            fn = getattr(F, name)
            vars.append(fn(vars[-1]) if name in unary else fn(vars[-1], vars[k % len(vars)]))
        expected = mnnpy.eval(*vars)
        F.save(vars, tmp_path / "h.mnnpy")
        loaded = F.load_as_list(tmp_path / "h.mnnpy")
        for got, want in zip(mnnpy.eval(*loaded), expected):
            same_bits(got, want)

    check()


# ---------------------------------------------------------------- the mapping
def test_constants_point_into_the_mapped_file(tmp_path, rng):
    data = rng.standard_normal(8 * 1024 * 1024)  # 64 MB of float64
    path = tmp_path / "big.mnnpy"
    F.save([F.const(data), F.const(np.float32(3.0))], path)
    del data
    gc.collect()
    before = rss_bytes()
    big, small = F.load_as_list(path)
    after_load = rss_bytes()
    assert after_load - before < 8 * 1024 * 1024  # nothing of the 64 MB was copied
    spans = mappings_of(path)
    assert spans, "the file is not mapped"
    arr = big.read()
    address = arr.__array_interface__["data"][0]
    assert address % 64 == 0
    assert any(start <= address and address + arr.nbytes <= end for start, end in spans)
    assert float(small) == 3.0
    assert np.isfinite(arr).all()
    # The mapping lives while any tensor of it does, and goes with the last one.
    del big, small
    gc.collect()
    assert mappings_of(path)
    del arr
    gc.collect()
    assert mappings_of(path) == []


def test_saving_over_a_loaded_file_keeps_its_values(tmp_path, rng):
    path = tmp_path / "same.mnnpy"
    first = rng.standard_normal(1000)
    F.save(F.const(first), path)
    [old] = F.load_as_list(path)
    F.save(F.const(np.zeros(3)), path)
    np.testing.assert_array_equal(old.read(), first)
    np.testing.assert_array_equal(F.load_as_list(path)[0].read(), np.zeros(3))
    assert sorted(os.listdir(tmp_path)) == ["same.mnnpy"]  # no temporary left behind


# ---------------------------------------------------------------- errors
def test_missing_file_and_directory(tmp_path):
    missing = tmp_path / "nope.mnnpy"
    with pytest.raises(FileNotFoundError, match="nope.mnnpy"):
        F.load_as_list(missing)
    with pytest.raises(FileNotFoundError, match="nope.mnnpy"):
        F.load_as_dict(missing)
    with pytest.raises(IsADirectoryError):
        F.load_as_list(tmp_path)
    with pytest.raises(FileNotFoundError, match="no_dir"):
        F.save(F.const(1.0), tmp_path / "no_dir" / "x.mnnpy")
    with pytest.raises(TypeError, match="takes Vars"):
        F.save([F.const(1.0), 3], tmp_path / "x.mnnpy")


def test_fifo_does_not_hang(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        F.load_as_list(fifo)


def small_graph_file(tmp_path):
    a = F.const(np.arange(6, dtype=np.float32).reshape(2, 3))
    a.name = "a"
    b = F.const(np.full((2, 3), 0.5, np.float32))
    p = F.placeholder((2, 3), dtype=np.float32)
    p.name = "p"
    # Extra attributes of every type ride along on Neg, whose inference ignores them.
    neg = mnnpy._core.op("Neg", [a + b], {"alpha": 1.5, "tag": "hello", "dims": [1, -2, 3], "none": [], "k": -7})
    y = F.reduce_sum(neg * p, axis=1)
    y.name = "y"
    z = F.select(F.const(np.array([True, False, True])), F.const(np.array([1, 2, 3], np.int64)), F.const(np.int64(7)))
    path = tmp_path / "small.mnnpy"
    F.save([y, p, z], path)
    return path


def write(tmp_path, buf, name="crafted.mnnpy"):
    path = tmp_path / name
    path.write_bytes(bytes(buf))
    return path


def test_bad_magic_and_truncated_messages(tmp_path):
    path = small_graph_file(tmp_path)
    buf = path.read_bytes()
    with pytest.raises(ValueError, match="bad magic"):
        F.load_as_list(write(tmp_path, b"PK\x03\x04" + buf[4:]))
    with pytest.raises(ValueError, match="truncated file: 0 bytes"):
        F.load_as_list(write(tmp_path, b""))
    with pytest.raises(ValueError, match="truncated"):
        F.load_as_list(write(tmp_path, buf[:5]))
    with pytest.raises(ValueError, match="truncated file: 100 bytes"):
        F.load_as_list(write(tmp_path, buf[:100]))
    with pytest.raises(ValueError, match="truncated file: the header declares"):
        F.load_as_list(write(tmp_path, buf[:-1]))
    with pytest.raises(ValueError, match="crafted.mnnpy"):
        F.load_as_list(write(tmp_path, buf[:-1]))
    with pytest.raises(ValueError, match="header declares"):
        F.load_as_list(write(tmp_path, buf + b"\0"))


def test_newer_major_version_names_both_versions(tmp_path):
    buf = small_graph_file(tmp_path).read_bytes()
    with pytest.raises(ValueError, match=r"version 2\.0 is newer than this mnnpy reads \(1\.0\)"):
        F.load_as_list(write(tmp_path, set_header(buf, "major", 2)))
    with pytest.raises(ValueError, match=r"version 0\.0"):
        F.load_as_list(write(tmp_path, set_header(buf, "major", 0)))
    # A newer minor version of the same major is read.
    assert len(F.load_as_list(write(tmp_path, set_header(buf, "minor", 7)))) == 3
    assert mnnpy._core.graph_format_version == (1, 0)


def test_unknown_op_is_named(tmp_path):
    buf = bytearray(small_graph_file(tmp_path).read_bytes())
    _, nodes = parse(buf)
    neg = node_of(nodes, "Neg")
    buf[neg["op_at"] + 4:neg["op_at"] + 7] = b"Nog"
    with pytest.raises(ValueError, match="unknown op 'Nog'"):
        F.load_as_list(write(tmp_path, buf))


@pytest.mark.parametrize("bad", [b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xe2\x82"])
def test_strings_must_be_utf8(tmp_path, bad):
    buf = bytearray(small_graph_file(tmp_path).read_bytes())
    _, nodes = parse(buf)
    neg = node_of(nodes, "Neg")
    key_at, _, _ = neg["attrs"]["tag"]
    value_at = key_at + 4 + 3 + 1  # "tag", type byte, then the string
    assert bytes(buf[value_at + 4:value_at + 9]) == b"hello"
    buf[value_at + 4:value_at + 4 + len(bad)] = bad
    with pytest.raises(ValueError, match="attribute string is not valid UTF-8"):
        F.load_as_list(write(tmp_path, buf))


@pytest.mark.parametrize("target", ["self", "later"])
def test_forward_and_self_references_rejected(tmp_path, target):
    buf = bytearray(small_graph_file(tmp_path).read_bytes())
    _, nodes = parse(buf)
    index = next(i for i, n in enumerate(nodes) if n["op"] == "Add")
    at = nodes[index]["inputs"][0][0]
    struct.pack_into("<I", buf, at, index if target == "self" else index + 1)
    with pytest.raises(ValueError, match="does not come before"):
        F.load_as_list(write(tmp_path, buf))


def test_shape_lies_fail_with_the_ops_error(tmp_path):
    buf = bytearray(small_graph_file(tmp_path).read_bytes())
    _, nodes = parse(buf)
    # Constant b declared (3, 2) instead of (2, 3): same byte count, so only Add's check catches it.
    b_rec = [n for n in nodes if n["kind"] == 1 and n["types"][0][2] == (2, 3)][1]
    struct.pack_into("<qq", buf, b_rec["types"][0][0] + 2, 3, 2)
    with pytest.raises(ValueError, match="operands could not be broadcast together"):
        F.load_as_list(write(tmp_path, buf))
    # An op output declared with another shape than the op infers.
    buf = bytearray(small_graph_file(tmp_path).read_bytes())
    _, nodes = parse(buf)
    neg = node_of(nodes, "Neg")
    struct.pack_into("<q", buf, neg["types"][0][0] + 2, 5)
    with pytest.raises(ValueError, match=r"Neg output 0 is float32 \(2, 3\) but the file declares float32 \(5, 3\)"):
        F.load_as_list(write(tmp_path, buf))
    # A placeholder lying about its shape: the consumer's check fails.
    buf = bytearray(small_graph_file(tmp_path).read_bytes())
    _, nodes = parse(buf)
    ph = next(n for n in nodes if n["kind"] == 2)
    struct.pack_into("<q", buf, ph["types"][0][0] + 2, 4)
    with pytest.raises(ValueError, match="broadcast"):
        F.load_as_list(write(tmp_path, buf))


def test_huge_constant_sizes_fail_before_allocating(tmp_path):
    buf = bytearray(small_graph_file(tmp_path).read_bytes())
    _, nodes = parse(buf)
    a_rec = next(n for n in nodes if n["kind"] == 1)
    struct.pack_into("<qq", buf, a_rec["types"][0][0] + 2, 1 << 20, 1 << 20)  # 4 TB of float32
    struct.pack_into("<Q", buf, a_rec["data_at"] + 8, 4 << 40)
    before = rss_bytes()
    with pytest.raises(ValueError, match="outside the data section"):
        F.load_as_list(write(tmp_path, buf))
    struct.pack_into("<qq", buf, a_rec["types"][0][0] + 2, 1 << 40, 1 << 40)  # overflows 2**64 bytes
    with pytest.raises(ValueError, match="too large shape"):
        F.load_as_list(write(tmp_path, buf))
    assert rss_bytes() - before < 16 << 20


def test_depth_limit(tmp_path):
    x = F.const(np.float32(1.0))
    for _ in range(32767):  # 32768 nodes deep: the limit
        x = F.negative(x)
    F.save(x, tmp_path / "deep.mnnpy")
    [y] = F.load_as_list(tmp_path / "deep.mnnpy")
    assert float(y) == -1.0
    with pytest.raises(ValueError, match="deeper than 32768"):
        F.save(F.negative(x), tmp_path / "deeper.mnnpy")
    del x, y


# ---------------------------------------------------------------- fuzzing
def fill_placeholders(outs):
    """Writes zeros to every placeholder behind `outs`; False when some Var is too big to run."""
    seen, stack = set(), list(outs)
    while stack:
        v = stack.pop()
        if v.nbytes > 1 << 20:
            return False
        key = (id(v), v.op_type, v.shape)
        if key in seen:
            continue
        seen.add(key)
        assert isinstance(v.name, str) and isinstance(v.attrs, dict) and v.op_type and v.data_format
        if v.is_placeholder:
            v.write(np.zeros(v.shape, dtype=v.dtype))
        stack.extend(v.inputs)
    return True


def try_load(path):
    """Loads `path`; a load that succeeds must evaluate without crashing. True when it loaded."""
    try:
        outs = F.load_as_list(path)
    except (ValueError, OSError, MemoryError) as e:  # MemoryError: a tensor declared larger than memory
        assert str(e).startswith("cannot ")
        return False
    if len(outs) < 20 and fill_placeholders(outs):
        try:
            mnnpy.eval(*outs)
        except (ValueError, TypeError, IndexError, OverflowError, MemoryError):
            pass
    return True


def truncations(buf):
    """Every prefix; every prefix with the header's file size made to match; every node table cut."""
    h, _ = parse(buf)
    for n in range(len(buf)):
        yield "truncated", buf[:n]
    for n in range(HEADER.size, len(buf), 3):
        yield None, set_header(buf[:n], "file_size", n)
    for n in range(h["nodes_size"]):
        yield "truncated", set_header(buf, "nodes_size", n)
    for n in range(h["outputs_size"]):
        yield "truncated", set_header(buf, "outputs_size", n)


def flips(buf, rng, count):
    h, _ = parse(buf)
    meta_end = h["data_offset"]
    for i in range(count):
        b = bytearray(buf)
        # Mostly in the header and tables, where the parsing is.
        end = meta_end if i % 4 else len(b)
        for _ in range(1 + i % 3):
            at = int(rng.integers(0, end))
            if i % 2:
                b[at] ^= 1 << int(rng.integers(0, 8))
            else:
                b[at] = int(rng.integers(0, 256))
        yield None, bytes(b)


def random_files(buf, rng, count):
    for i in range(count):
        n = int(rng.integers(0, 4096))
        body = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        if i % 3 == 0:
            yield "bad magic", b"X" + body
        else:
            # A plausible header over random tables.
            head = bytearray(buf[:HEADER.size])
            b = bytes(head) + body
            b = set_header(b, "file_size", len(b))
            if i % 3 == 2:
                b = set_header(b, "nodes_size", max(len(b) - 128, 0))
                b = set_header(b, "node_count", int(rng.integers(0, 64)))
            yield None, b


HUGE = [2**64 - 1, 2**63, 2**63 - 1, 2**32 - 1, 2**32, 2**31, 2**40, 0x7FFFFFF0]


def huge_fields(buf):
    h, nodes = parse(buf)
    for field in HEADER_FIELDS[1:]:
        is32 = HEADER_FIELDS.index(field) <= 4
        for v in HUGE + [h["file_size"] + 1, h["file_size"]]:
            yield None, set_header(buf, field, v & 0xFFFFFFFF if is32 else v)
    # Every count, length and index inside the records.
    u32_fields, u64_fields = [], []
    for n in nodes:
        u32_fields += [n["size_at"], n["op_at"], n["name_at"], n["format_at"], n["inputs_at"], n["attrs_at"],
                       n["outputs_at"]]
        u32_fields += [at for at, _, _ in n["inputs"]] + [at + 4 for at, _, _ in n["inputs"]]
        u32_fields += [key_at for key_at, _, _ in n["attrs"].values()]
        for _, value_at, kind in n["attrs"].values():
            (u32_fields if kind >= 2 else u64_fields).append(value_at)
        for at, _, dims in n["types"]:
            u64_fields += [at + 2 + 8 * k for k in range(len(dims))]
        if n["kind"] == 1:
            u64_fields += [n["data_at"], n["data_at"] + 8]
    for at in u32_fields:
        for v in (2**32 - 1, 2**31, 0x10000, 1 << 20):
            b = bytearray(buf)
            struct.pack_into("<I", b, at, v)
            yield None, bytes(b)
    for at in u64_fields:
        for v in HUGE + [2**62]:
            b = bytearray(buf)
            struct.pack_into("<Q", b, at, v)
            yield None, bytes(b)
    # Rank bytes.
    for n in nodes:
        for at, _, _ in n["types"]:
            b = bytearray(buf)
            b[at + 1] = 255
            yield None, bytes(b)


def run_variants(tmp_dir, variants):
    path = os.path.join(str(tmp_dir), "fuzz.mnnpy")
    loaded = 0
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    for expect, b in variants:
        # Overwrite then cut: truncating to zero first makes some file systems flush each time.
        os.pwrite(fd, b, 0)
        os.ftruncate(fd, len(b))
        try:
            ok = try_load(path)
        except (ValueError, OSError) as e:  # pragma: no cover
            raise AssertionError(f"{e}") from e
        if expect is not None and ok:
            raise AssertionError(f"a file expected to fail ({expect}) loaded")
        if expect is not None and not ok:
            try:
                F.load_as_list(path)
            except (ValueError, OSError, MemoryError) as e:
                assert expect in str(e), f"{expect!r} not in {e}"
        loaded += ok
    os.close(fd)
    return loaded


def fuzz(tmp_dir, seed, flip_count=2000, random_count=500):
    from pathlib import Path
    buf = small_graph_file(Path(tmp_dir)).read_bytes()
    rng = np.random.default_rng(seed)
    run_variants(tmp_dir, truncations(buf))
    run_variants(tmp_dir, flips(buf, rng, flip_count))
    run_variants(tmp_dir, random_files(buf, rng, random_count))
    run_variants(tmp_dir, huge_fields(buf))


def test_fuzz_truncations(tmp_path):
    buf = small_graph_file(tmp_path).read_bytes()
    assert run_variants(tmp_path, truncations(buf)) == 0


def test_fuzz_flips_random_and_huge_fields(tmp_path):
    buf = small_graph_file(tmp_path).read_bytes()
    rng = np.random.default_rng(1234)
    loaded = run_variants(tmp_path, flips(buf, rng, 300))
    assert loaded < 300  # most flips in the tables are caught
    assert run_variants(tmp_path, random_files(buf, rng, 150)) == 0
    run_variants(tmp_path, huge_fields(buf))


def test_fuzz_in_a_subprocess(tmp_path):
    r = subprocess.run([sys.executable, os.path.abspath(__file__), str(tmp_path), "99"], env=python_env(),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"fuzz process ended with {r.returncode}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    assert "fuzz ok" in r.stdout


def test_corrupted_loads_keep_memory_flat(tmp_path):
    buf = small_graph_file(tmp_path).read_bytes()
    variants = list(flips(buf, np.random.default_rng(5), 300)) + list(huge_fields(buf))
    variants += [(None, buf[:n]) for n in range(0, len(buf), 5)]
    run_variants(tmp_path, variants)
    gc.collect()
    before = rss_bytes()
    for _ in range(6):  # about 9000 loads
        run_variants(tmp_path, variants)
    gc.collect()
    assert rss_bytes() - before < 2 << 20


if __name__ == "__main__":
    fuzz(sys.argv[1], int(sys.argv[2]))
    print("fuzz ok")


def test_saved_graph_named_like_a_model(tmp_path):
    # A saved graph whose file name ends in .onnx is read as the saved graph it is (its first
    # bytes say so), by load_as_dict and load_as_list, and the module loader refuses it as a graph
    # file that is not a model, with a ValueError (the two loaders once called each other until
    # Python's recursion limit).
    import mnnpy.nn as nn
    x = F.const(np.arange(6, dtype=np.float32).reshape(2, 3))
    x.name = "x"
    path = str(tmp_path / "graph.onnx")
    F.save([x * 2], path)
    loaded = F.load_as_dict(path)
    np.testing.assert_array_equal(loaded["output_0"].read(), np.arange(6, dtype=np.float32).reshape(2, 3) * 2)
    np.testing.assert_array_equal(F.load_as_list(path)[0].read(), loaded["output_0"].read())
    with pytest.raises(ValueError, match="not a model"):
        nn.load_module_from_file(path)
    # The file the ONNX fuzzer found: a saved graph's first bytes, then damage.
    data = open(os.path.join(os.path.dirname(__file__), "data", "fuzz", "onnx", "saved-graph-named-onnx"), "rb").read()
    damaged = tmp_path / "damaged.onnx"
    damaged.write_bytes(data)
    with pytest.raises(ValueError):
        nn.load_module_from_file(str(damaged))
