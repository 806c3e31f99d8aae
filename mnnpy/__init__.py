"""mnnpy: NumPy-, OpenCV- and MNN-compatible APIs on one lazy expression graph.

Every call builds a node of the graph and returns a ``Var`` whose shape and dtype are known
at once; values are computed by the C++ executor when asked for (``numpy()``, ``read()``,
``print``, ``float()`` ...) or with :func:`eval`.
"""
import os as _os

if _os.environ.get("MNNPY_CORE_DIR"):
    # Development builds: load _core from a CMake build folder instead of the package.
    __path__.insert(0, _os.environ["MNNPY_CORE_DIR"])

from . import _core  # noqa: E402
from ._core import Var, get_num_threads, set_num_threads, set_simd_target

if _os.environ.get("MNNPY_SIMD"):
    # One SIMD target for the whole process, by name (AVX2, AVX3, EMU128 ... or portable/best).
    set_simd_target(_os.environ["MNNPY_SIMD"])

__version__ = "0.1.0"

from . import expr  # noqa: E402  (attaches Var methods)
from . import data, optim  # noqa: E402  (MNN.data / MNN.optim as attributes)


def eval(*vars):
    """Compute several Vars with one plan; returns their values as NumPy arrays."""
    return _core.evaluate(list(vars))


def runtime_info():
    """Version, the SIMD instruction set the kernels run on ("isa"), the SIMD targets compiled in
    and those this CPU can run (best first), thread count and available backends."""
    return {
        "version": __version__,
        "isa": _core.simd_target(),
        "simd_targets_compiled": _core.compiled_simd_targets(),
        "simd_targets_usable": _core.usable_simd_targets(),
        "threads": get_num_threads(),
        "backends": ["cpu"],
    }


def get_simd_target():
    """The SIMD target the CPU kernels run on now (see ``set_simd_target``)."""
    return _core.simd_target()


__all__ = ["Var", "expr", "eval", "runtime_info", "set_num_threads", "get_num_threads", "set_simd_target",
           "get_simd_target"]
