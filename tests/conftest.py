import zlib

import numpy as np
import pytest
from hypothesis import settings

import mnnpy

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
