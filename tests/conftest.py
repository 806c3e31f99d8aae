import os
import zlib

# The Vulkan backend's shaders run under the validation layer in tests, its errors raised
# (set before mnnpy looks for a device).
os.environ.setdefault("MNNPY_VULKAN_VALIDATION", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

import mnnpy  # noqa: E402
from mnnpy.convert.tensorflow import import_triton_before_tensorflow  # noqa: E402

# The test modules import TensorFlow while they are collected; torch's triton must load first.
import_triton_before_tensorflow()

# The same hypothesis examples on every run, so that a CI result can be reproduced exactly.
settings.register_profile("reproducible", derandomize=True)
settings.load_profile("reproducible")


@pytest.fixture
def rng(request):
    # A fresh, reproducible stream per test.
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


@pytest.fixture(params=["chosen", "portable"])
def simd(request):
    """Runs the test on the process's SIMD target (the best, or MNNPY_SIMD's) and on the portable one."""
    mnnpy._core.force_portable_simd(request.param == "portable")
    try:
        yield request.param
    finally:
        mnnpy._core.force_portable_simd(False)


@pytest.fixture
def portable_simd():
    """Runs the test body on the portable (non-SIMD-specific) kernels."""
    mnnpy._core.force_portable_simd(True)
    try:
        yield
    finally:
        mnnpy._core.force_portable_simd(False)


@pytest.fixture
def test_backend():
    """Lists the hidden test backend (device-like buffers, a subset of ops) for the test body."""
    mnnpy._core.enable_test_backend(True)
    try:
        yield "test"
    finally:
        mnnpy.set_backend("cpu")
        mnnpy._core.enable_test_backend(False)


@pytest.fixture
def vulkan():
    """Runs the test body on the Vulkan backend ("vulkan"); skips where this machine has no Vulkan
    device, unless MNNPY_REQUIRE_VULKAN is set (CI), where that is a failure."""
    if "vulkan" not in mnnpy.runtime_info()["backends"]:
        reason = "no Vulkan device: " + mnnpy._core.backend_description("vulkan")
        if os.environ.get("MNNPY_REQUIRE_VULKAN"):
            pytest.fail(reason + " (MNNPY_REQUIRE_VULKAN is set)")
        pytest.skip(reason)
    with mnnpy.backend("vulkan"):
        yield "vulkan"
