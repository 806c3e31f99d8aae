"""The Metal Shading Language made from every Vulkan shader at build time (SPIRV-Cross), as the
Metal host code will bind it: each storage buffer at the Metal buffer index equal to its Vulkan
binding (0..n-1) and the parameters (push constants) at n. The Metal host itself needs macOS;
these files are what it will load."""
import os
import re
from pathlib import Path

import pytest

import mnnpy

SHADERS = Path(__file__).resolve().parent.parent / "native" / "src" / "backend" / "vulkan" / "shaders"
METAL = Path(mnnpy._core.__file__).resolve().parent / "metal"
BINDING = re.compile(r"layout\s*\([^)]*\bbinding\s*=\s*(\d+)[^)]*\)\s*(?:readonly\s+|writeonly\s+|restrict\s+)*buffer\b")
PUSH = re.compile(r"layout\s*\(\s*push_constant\s*\)")
KERNEL = re.compile(r"kernel void main0\((.*?)\)\s*\{", re.DOTALL)
METAL_BUFFER = re.compile(r"(constant|device)\s+[A-Za-z0-9_]+&\s+[A-Za-z0-9_]+\s+\[\[buffer\((\d+)\)\]\]")


def glsl_of(shader):
    """The shader's source with its included .glsl files."""
    text = shader.read_text()
    for name in re.findall(r'#include\s+"([^"]+)"', text):
        text += (SHADERS / name).read_text()
    return text


def shaders():
    """The shaders with a Metal twin: all but those marked "Vulkan only" (float64 ones)."""
    return sorted(p for p in SHADERS.glob("*.comp") if "Vulkan only" not in p.read_text())


@pytest.fixture(scope="module")
def metal_folder():
    if not METAL.is_dir():
        reason = f"the core was built without the Vulkan backend or spirv-cross ({METAL} is missing)"
        if os.environ.get("MNNPY_REQUIRE_VULKAN"):
            pytest.fail(reason + " (MNNPY_REQUIRE_VULKAN is set)")
        pytest.skip(reason)
    return METAL


@pytest.mark.parametrize("shader", shaders(), ids=lambda p: p.stem)
def test_every_shader_has_metal_with_the_vulkan_binding_map(metal_folder, shader):
    msl = metal_folder / f"{shader.stem}.metal"
    assert msl.is_file(), f"no Metal for {shader.name}"
    source = glsl_of(shader)
    bindings = sorted(int(b) for b in BINDING.findall(source))
    assert bindings == list(range(len(bindings))), f"{shader.name}: Vulkan bindings are not 0..n-1: {bindings}"
    (signature,) = KERNEL.findall(msl.read_text())
    buffers = METAL_BUFFER.findall(signature)
    device = sorted(int(i) for kind, i in buffers if kind == "device")
    constant = [int(i) for kind, i in buffers if kind == "constant"]
    # SPIRV-Cross leaves out buffers the shader never reads or writes; the rest keep their binding.
    assert set(device) <= set(bindings) and len(set(device)) == len(device)
    assert constant == ([len(bindings)] if PUSH.search(source) else [])
