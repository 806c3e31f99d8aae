"""Requests for impossible sizes raise a clean Python error before anything is allocated:
arrays and graphs larger than memory (MemoryError with NumPy's message), byte counts that
overflow int64 (ValueError, as NumPy), model and graph files declaring such tensors, and image
headers beyond OpenCV's decoding limits (mnnpy.cv.error, as cv2.error). "Memory" is what the
process can ever have: physical memory plus swap, or less under RLIMIT_AS, a cgroup limit or
MNNPY_MEMORY_LIMIT, read once; lower limits are tested in subprocesses."""
import os
import re
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import mnnpy
import mnnpy.numpy as mp
from mnnpy import cv
from mnnpy import expr as F
from helpers import python_env, under_address_sanitizer

cv2 = pytest.importorskip("cv2")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "fuzz"))
from fuzz_imdecode import _bmp, _png, _tiff  # noqa: E402  (the fuzzer's file writers)

TIB = 1 << 40


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def numpys_memory_error(shape, dtype):
    """NumPy's MemoryError for an array of ``shape`` and ``dtype``, made by NumPy's own exception
    class. NumPy is not asked to allocate it: where the kernel overcommits memory
    (vm.overcommit_memory=1) its allocation of terabytes succeeds and filling it kills the process."""
    from numpy._core._exceptions import _ArrayMemoryError
    return _ArrayMemoryError(tuple(shape), np.dtype(dtype))


def run_python(code, **env):
    """Runs ``code`` in a fresh interpreter (limits are read once per process) with ``env`` added."""
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=python_env(**env), capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


# ---------------------------------------------------------------- arrays larger than memory
@pytest.mark.parametrize("call, shape, dtype", [
    (lambda m: m.zeros((TIB,)), (TIB,), np.float64),
    (lambda m: m.ones((TIB,)), (TIB,), np.float64),
    (lambda m: m.empty((TIB,)), (TIB,), np.float64),
    (lambda m: m.full((TIB,), 3.0), (TIB,), np.float64),
    (lambda m: m.zeros((1 << 20, 1 << 20), dtype=np.float32), (1 << 20, 1 << 20), np.float32),
    (lambda m: m.arange(TIB), (TIB,), np.int64),
    (lambda m: m.zeros(1 << 20).reshape(-1, 1) * m.zeros(1 << 20), (1 << 20, 1 << 20), np.float64),
    (lambda m: m.ones((1 << 61,), dtype=np.uint8), (1 << 61,), np.uint8),
], ids=["zeros", "ones", "empty", "full", "zeros-2d", "arange", "outer-product", "exbibytes"])
def test_more_than_memory_raises_numpys_memory_error(call, shape, dtype):
    before = rss_bytes()
    with pytest.raises(MemoryError) as got:
        call(mp)
    assert str(got.value) == str(numpys_memory_error(shape, dtype))
    assert rss_bytes() - before < 64 << 20


@pytest.mark.parametrize("call", [
    lambda m: m.zeros((1 << 62, 16)),
    lambda m: m.zeros((0, 1 << 62, 16)),
    lambda m: m.ones((3, 1 << 62)),
    lambda m: m.zeros((1 << 32, 1 << 32), dtype=np.uint8),
    lambda m: m.empty((1 << 31, 1 << 31, 4), dtype=np.bool_),
], ids=["float64", "with-a-zero", "ones", "uint8", "bool"])
def test_byte_counts_overflowing_int64_raise_value_error(call):
    with pytest.raises(ValueError) as expected:
        call(np)
    with pytest.raises(ValueError, match=r"array is too big") as got:
        call(mp)
    assert "array is too big" in str(expected.value)
    assert "shape (" in str(got.value)  # ours names the shape


def test_broadcast_reshape_and_placeholders_of_impossible_sizes():
    # NumPy's broadcast_to makes a view of any size; mnnpy may compute every node, so it refuses.
    assert np.broadcast_to(np.zeros(1), (TIB,)).shape == (TIB,)
    with pytest.raises(MemoryError, match=r"Unable to allocate 8.00 TiB for an array with shape \(1099511627776,\)"):
        mp.broadcast_to(mp.zeros(1), (TIB,))
    with pytest.raises(ValueError):
        np.broadcast_to(np.zeros(1), (1 << 62, 16))
    with pytest.raises(ValueError):
        mp.broadcast_to(mp.zeros(1), (1 << 62, 16))
    with pytest.raises(ValueError):
        np.zeros(0).reshape(1 << 62, 16, 0)
    with pytest.raises(ValueError, match="array is too big"):
        F.reshape(F.const(np.zeros(0, np.float32)), (1 << 62, 16, 0))
    with pytest.raises(MemoryError, match=r"4.00 TiB for an array with shape \(1099511627776,\) and data type float32"):
        F.placeholder((TIB,), dtype=np.float32)
    with pytest.raises(ValueError, match="array is too big"):
        F.placeholder((1 << 62, 16), dtype=np.float32)
    with pytest.raises(MemoryError, match="Unable to allocate"):
        mp.tile(mp.ones((2, 2)), (1 << 20, 1 << 20))
    # Shapes of zero elements are fine however long their other dimensions.
    assert mp.zeros((0, 1 << 40)).shape == (0, 1 << 40)


def test_memory_limit_is_physical_memory_and_swap_or_lower():
    limit = mnnpy.runtime_info()["memory_limit"]
    physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    with open("/proc/meminfo") as f:
        swap = next(int(line.split()[1]) * 1024 for line in f if line.startswith("SwapTotal:"))
    assert 0 < limit <= physical + swap
    if not under_address_sanitizer():
        out = run_python("""
            import resource
            resource.setrlimit(resource.RLIMIT_AS, (16 << 30, resource.RLIM_INFINITY))
            import mnnpy
            print(mnnpy.runtime_info()["memory_limit"])
        """)
        assert int(out) == min(limit, 16 << 30)
    assert int(run_python("import mnnpy; print(mnnpy.runtime_info()['memory_limit'])",
                          MNNPY_MEMORY_LIMIT=12345)) == 12345


def test_computations_beyond_the_limit_fail_before_allocating():
    """Under a 100 MiB limit: one 128 MiB array is refused when built; six 16 MiB results are
    each fine but together too much for one computation, which is refused before it runs; a
    smaller computation still runs afterwards."""
    out = run_python("""
        import os
        import numpy as np
        import mnnpy, mnnpy.numpy as mp
        def rss():
            return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        try:
            mp.zeros(16 << 20, dtype=np.float64)
        except MemoryError as e:
            print("built:", e)
        x = mp.ones(4 << 20, dtype=np.float32)
        parts = [x + k for k in range(6)]
        before = rss()
        try:
            mnnpy.eval(*parts)
        except MemoryError as e:
            print("evaluated:", e)
        print("grew", (rss() - before) >> 20)
        print("sum", float(mp.sum(parts[0] + parts[1])))
    """, MNNPY_MEMORY_LIMIT=100 << 20)
    assert ("built: Unable to allocate 128. MiB for an array with shape (16777216,) and data type float64"
            in out), out
    assert re.search(r"evaluated: Unable to allocate 1\d\d\. MiB for the results and intermediate arrays of this "
                     r"computation \(the largest: an array with shape \(4194304,\) and data type float32\)", out), out
    assert int(out.split("grew ")[1].split()[0]) < 16, out
    assert float(out.split("sum ")[1]) == 3 * (4 << 20)


# ---------------------------------------------------------------- files
def test_graph_file_declaring_a_huge_tensor(tmp_path):
    marker = 987654321
    x = F.placeholder((marker,), dtype=np.float32)
    x.name = "x"
    path = tmp_path / "huge.mnnpy"
    F.save([F.exp(x)], path)
    data = path.read_bytes()
    assert data.count(struct.pack("<q", marker)) == 2  # the placeholder's and the op's output types
    path.write_bytes(data.replace(struct.pack("<q", marker), struct.pack("<q", TIB)))
    before = rss_bytes()
    with pytest.raises(MemoryError, match=r"cannot load '.*huge.mnnpy': node 0: Unable to allocate 4.00 TiB "
                                          r"for an array with shape \(1099511627776,\) and data type float32"):
        F.load_as_list(path)
    path.write_bytes(data.replace(struct.pack("<q", marker), struct.pack("<q", 1 << 62)))
    with pytest.raises(ValueError, match="node 0: output 0 has an invalid or too large shape"):
        F.load_as_list(path)
    assert rss_bytes() - before < 16 << 20


HUGE_NODES = {
    # ConstantOfShape [2**20, 2**20] of float32.
    "constant-of-shape": (lambda h: [h.make_node("ConstantOfShape", ["shape"], ["big"], name="fill"),
                                     h.make_node("Add", ["x", "big"], ["y"])],
                          {"shape": np.array([1 << 20, 1 << 20], np.int64)},
                          r"4.00 TiB for an array with shape \(1048576, 1048576\) and data type float32"),
    # Range(0, 2**40, 1): found by fuzz/fuzz_model_file.py as a 3.4 GB NumPy array taken whatever
    # the limit (tests/data/fuzz/model_file/range-of-3-gigabytes).
    "range": (lambda h: [h.make_node("Range", ["zero", "end", "one"], ["r"], name="range"),
                         h.make_node("Cast", ["r"], ["rf"], to=1), h.make_node("Add", ["x", "rf"], ["y"])],
              {"zero": np.array(0, np.int64), "end": np.array(1 << 40, np.int64), "one": np.array(1, np.int64)},
              r"8.00 TiB for an array with shape \(1099511627776,\) and data type int64"),
    "one-hot": (lambda h: [h.make_node("OneHot", ["i", "depth", "values"], ["hot"], name="one_hot"),
                           h.make_node("Add", ["x", "hot"], ["y"])],
                {"i": np.array([1], np.int64), "depth": np.array(1 << 40, np.int64),
                 "values": np.array([0, 1], np.float32)},
                r"8.00 TiB for an array with shape \(1, 1099511627776\) and data type int64"),
}


@pytest.mark.parametrize("kind", sorted(HUGE_NODES))
def test_model_asking_for_a_huge_tensor(kind, tmp_path):
    """Sizes that a model's values decide are refused by the core, before anything is allocated."""
    pytest.importorskip("onnx")
    from onnx import TensorProto as T
    from onnx import helper as h
    from onnx import numpy_helper

    from mnnpy import convert, nn
    nodes, weights, message = HUGE_NODES[kind]
    graph = h.make_graph(nodes(h), "huge", [h.make_tensor_value_info("x", T.FLOAT, [1])],
                         [h.make_tensor_value_info("y", T.FLOAT, None)],
                         initializer=[numpy_helper.from_array(v, k) for k, v in weights.items()])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    convert.from_onnx(model.SerializeToString(), tmp_path / "huge.mnnpy")
    module = nn.load_module_from_file(str(tmp_path / "huge.mnnpy"))
    before = rss_bytes()
    with pytest.raises(MemoryError, match="Unable to allocate " + message):
        module.forward(np.ones(1, np.float32))
    assert rss_bytes() - before < 64 << 20


def test_cached_plans_keep_at_most_an_eighth_of_the_memory_limit():
    """Plans stay cached with their kernels' packed weights; in all they keep at most
    min(1 GiB, memory limit / 8), the least recently used going first (found by fuzz_onnx: plans
    of Pad with huge index tables filled 3 GiB)."""
    out = run_python("""
        import numpy as np
        import mnnpy
        from mnnpy import expr as F
        rng = np.random.default_rng(0)
        a = rng.standard_normal((4, 1024)).astype(np.float32)
        kept = []
        for i in range(10):
            w = rng.standard_normal((1024, 4096)).astype(np.float32)  # 16 MiB packed
            kept.append(F.const(w))
            ours = F.matmul(F.const(a), kept[-1]).numpy()
            bound = 1024 * 2.0 ** -24 * (np.abs(a).astype(np.float64) @ np.abs(w))  # gamma_K sum |terms|
            assert np.all(np.abs(ours - a.astype(np.float64) @ w) <= bound)
        s = mnnpy._core.executor_stats()
        print(s["plans_cached"], s["cached_plan_bytes"])
    """, MNNPY_MEMORY_LIMIT=512 << 20)
    cached, cached_bytes = map(int, out.split())
    assert 16 << 20 <= cached_bytes <= 64 << 20
    assert 1 <= cached <= 4


# ---------------------------------------------------------------- image headers
def _jpeg_of_size(width, height):
    """A real JPEG whose SOF0 header is patched to declare ``width`` x ``height``."""
    data = bytearray(cv.imencode(".jpg", np.zeros((8, 8, 3), np.uint8))[1])
    at = data.index(b"\xff\xc0")
    struct.pack_into(">HH", data, at + 5, height, width)
    return bytes(data)


def _webp_of_size(width, height):
    """A real WebP in the extended layout whose canvas (VP8X) declares ``width`` x ``height``."""
    simple = bytes(cv.imencode(".webp", np.zeros((8, 8, 3), np.uint8))[1])
    vp8x = b"VP8X" + struct.pack("<I", 10) + bytes(4) + (width - 1).to_bytes(3, "little") + \
        (height - 1).to_bytes(3, "little")
    body = b"WEBP" + vp8x + simple[12:]
    return b"RIFF" + struct.pack("<I", len(body)) + body


HUGE_HEADERS = {
    "png": lambda: _png([b"\0" * 3] * 1, 100000, 100000, 8, 2),
    "jpeg": lambda: _jpeg_of_size(65000, 65000),
    "bmp": lambda: _bmp(100000, 100000, 24, [b"\0" * 12]),
    "webp": lambda: _webp_of_size(60000, 60000),
    "tiff": lambda: _tiff(100000, 100000, 3, 8, b"\0" * 12),
}


@pytest.mark.parametrize("kind", sorted(HUGE_HEADERS))
@pytest.mark.parametrize("flags", [cv.IMREAD_COLOR, cv.IMREAD_UNCHANGED, cv.IMREAD_GRAYSCALE])
def test_image_headers_beyond_opencvs_limits(kind, flags, tmp_path):
    data = np.frombuffer(HUGE_HEADERS[kind](), np.uint8)
    before = rss_bytes()
    with pytest.raises(cv.error, match=r"mnnpy.cv.imdecode: the image is \d+x\d+: its \d+ pixels are more than "
                                       r"the 1073741824 OpenCV decodes \(OPENCV_IO_MAX_IMAGE_PIXELS\)"):
        cv.imdecode(data, flags)
    path = str(tmp_path / f"huge.{kind}")
    data.tofile(path)
    with pytest.raises(cv.error, match=r"mnnpy.cv.imread: the image is"):
        cv.imread(path, flags)
    assert rss_bytes() - before < 16 << 20
    with pytest.raises(cv2.error, match="CV_IO_MAX_IMAGE_PIXELS"):  # as OpenCV refuses them
        cv2.imdecode(data, flags)


def test_image_size_limits_follow_opencvs_environment_variables():
    code = """
        import numpy as np
        import cv2
        from mnnpy import cv
        image = cv.imencode(".png", np.zeros((20, 30), np.uint8))[1]
        for module in (cv, cv2):
            try:
                module.imdecode(image, 0)
                print(module.__name__, "read")
            except module.error as e:
                print(module.__name__, "refused", str(e).strip().splitlines()[-1])
    """
    out = run_python(code, OPENCV_IO_MAX_IMAGE_PIXELS=500)
    assert "mnnpy.cv refused mnnpy.cv.imdecode: the image is 30x20: its 600 pixels are more than the 500" in out, out
    assert "cv2 refused" in out, out
    out = run_python(code, OPENCV_IO_MAX_IMAGE_WIDTH=29)
    assert "wider than the 29 pixels" in out and "cv2 refused" in out, out
    out = run_python(code, OPENCV_IO_MAX_IMAGE_HEIGHT=20)
    assert "mnnpy.cv read" in out and "cv2 read" in out, out
