"""Layering of the core: the bindings (native/src/python), the runtime, the expression graph and
the ops see backends only through the Backend interface (mnnpy/backend.h) and never include a
backend's headers or name its namespace; the host library (native/src/host: algorithms on
host memory after the inputs were synchronized) may be used by backends and bindings and uses no
backend itself. The blocked channel layout has one block, defined in the core."""
import re
from pathlib import Path

import numpy as np
import pytest

import mnnpy
from mnnpy import _core, _expr_layout, nn

SRC = Path(__file__).resolve().parent.parent / "native" / "src"
ABOVE_BACKENDS = ("python", "runtime", "express", "ops")

_BACKEND_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]backend/', re.MULTILINE)
_CPU_NAMESPACE = re.compile(r"\bcpu::")
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)


def _sources(folder):
    return sorted(p for p in (SRC / folder).rglob("*") if p.suffix in (".cpp", ".h", ".hpp", ".inl"))


def _uses_a_backend(path):
    code = _COMMENTS.sub("", path.read_text())
    return bool(_BACKEND_INCLUDE.search(code) or _CPU_NAMESPACE.search(code))


def test_nothing_above_the_backends_includes_backend_headers():
    offenders = {p.relative_to(SRC).as_posix() for folder in ABOVE_BACKENDS for p in _sources(folder)
                 if _uses_a_backend(p)}
    assert offenders == set()


# The folders of native/src and what each may include besides itself and the public headers
# (native/include/mnnpy): the layers' import graph. A new edge is a design decision: add it here
# and to docs/architecture.md.
ALLOWED_INCLUDES = {
    "express": set(),
    "ops": set(),
    "runtime": set(),
    "host": {"ops"},
    "python": {"ops", "host"},
    "backend/cpu": {"ops", "host", "runtime"},
    "backend/test": set(),
    "backend/vulkan": {"ops", "runtime"},
}
_QUOTED_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)


def _layer(parts):
    return "/".join(parts[:2]) if parts[0] == "backend" else parts[0]


def test_layers_include_only_what_the_design_allows():
    found = {}
    for path in sorted(SRC.rglob("*")):
        if path.suffix not in (".cpp", ".h"):
            continue
        layer = _layer(path.relative_to(SRC).parts)
        for included in _QUOTED_INCLUDE.findall(path.read_text()):
            parts = included.split("/")
            if len(parts) > 1 and parts[0] != "mnnpy" and _layer(parts) != layer:
                found.setdefault(layer, set()).add(_layer(parts))
    assert set(found) <= set(ALLOWED_INCLUDES), f"new folders: {set(found) - set(ALLOWED_INCLUDES)}"
    assert {k: v - ALLOWED_INCLUDES[k] for k, v in found.items() if v - ALLOWED_INCLUDES[k]} == {}


def test_the_host_library_uses_no_backend():
    sources = _sources("host")
    assert sources, "native/src/host holds the host library"
    assert [p.relative_to(SRC).as_posix() for p in sources if _uses_a_backend(p)] == []


def test_python_block_is_the_cores():
    assert _expr_layout.BLOCK == _core.CHANNEL_BLOCK == _core.backend_channel_block("cpu")


def test_backend_channel_block_of_unknown_backend():
    with pytest.raises(ValueError, match="usable_backends"):
        _core.backend_channel_block("no-such-backend")


def test_models_are_blocked_only_for_backends_preferring_the_block(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(5)
    w = rng.standard_normal((16, 8, 3, 3)).astype(np.float32) * 0.2
    b = rng.standard_normal(16).astype(np.float32)
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 6, 7])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    path = str(tmp_path / "conv.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    x = rng.standard_normal((1, 8, 6, 7)).astype(np.float32)

    on_cpu = nn.load_module_from_file(path)
    assert on_cpu.blocked_layout
    _core.enable_test_backend(True)
    try:
        assert _core.backend_channel_block("test") != _core.CHANNEL_BLOCK
        with mnnpy.backend("test"):
            on_test = nn.load_module_from_file(path)
            assert not on_test.blocked_layout
            got = on_test.forward(x).numpy()
    finally:
        mnnpy.set_backend("cpu")
        _core.enable_test_backend(False)
    np.testing.assert_allclose(got, on_cpu.forward(x).numpy(), rtol=1e-5, atol=1e-5)
