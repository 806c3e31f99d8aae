"""mnnpy: NumPy-, OpenCV- and MNN-compatible APIs on one lazy expression graph.

Every call builds a node of the graph and returns a ``Var`` whose shape and dtype are known
at once; values are computed by the C++ executor when asked for (``numpy()``, ``read()``,
``print``, ``float()`` ...) or with :func:`eval`.
"""
import contextlib as _contextlib
import os as _os

if _os.environ.get("MNNPY_CORE_DIR"):
    # Development builds: load _core from a CMake build folder instead of the package.
    __path__.insert(0, _os.environ["MNNPY_CORE_DIR"])


def _core_missing_message():
    """What to tell when ``mnnpy._core`` cannot be imported because no compiled module is where
    Python looked for it; None when one is there (then the original error says more)."""
    import importlib.machinery
    import importlib.util
    if importlib.util.find_spec(f"{__name__}._core") is not None:
        return None
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    if _os.environ.get("MNNPY_CORE_DIR"):
        return (f"MNNPY_CORE_DIR={_os.environ['MNNPY_CORE_DIR']} holds no compiled core (_core{suffix}): "
                "point it at the build folder that scripts/dev_build.sh built "
                "(scripts/dev_build.sh build/dev, then MNNPY_CORE_DIR=$PWD/build/dev), or unset it "
                "to use the installed package.")
    folder = _os.path.dirname(_os.path.abspath(__file__))
    return (f"mnnpy was imported from {folder}, which holds its Python sources but not its compiled "
            f"core (_core{suffix}). This happens when Python starts in the source checkout (or a "
            "copy of it): the mnnpy/ folder there is found before the installed package. "
            "Start Python from another directory to use the installed mnnpy (`make demo` or "
            "`pip install .` installs it), or, to work on the sources, build the core with "
            "`scripts/dev_build.sh build/dev` and run with MNNPY_CORE_DIR=$PWD/build/dev "
            "PYTHONPATH=$PWD (docs/install.md).")


try:
    from . import _core  # noqa: E402
except ImportError as _error:
    if _core_missing_message() is None:
        raise
    raise ImportError(_core_missing_message(), name=f"{__name__}._core") from _error
from ._core import Var, get_num_threads, set_num_threads, set_simd_target  # noqa: E402

if _os.environ.get("MNNPY_SIMD"):
    # One SIMD target for the whole process, by name (AVX2, AVX3, EMU128 ... or portable/best).
    set_simd_target(_os.environ["MNNPY_SIMD"])

__version__ = "0.1.0"

from . import expr  # noqa: E402  (attaches Var methods)
from . import data, optim  # noqa: E402  (MNN.data / MNN.optim as attributes)

# Reached as attributes right after `import mnnpy` (MNN code writes `MNN.nn...` after `import MNN`),
# imported on first access so that `import mnnpy` stays light.
_LAZY_SUBMODULES = ("nn", "cv", "numpy", "convert", "audio", "quantize", "llm")
# MNN's session API and image processing at the top level, as MNN has them: module by name.
_LAZY_NAMES = dict.fromkeys(
    ("Interpreter", "Session", "Tensor", "OpInfo", "version", "get_model_uuid", "Halide_Type_Float",
     "Halide_Type_Double", "Halide_Type_Int", "Halide_Type_Int64", "Halide_Type_Uint8", "Halide_Type_String",
     "Tensor_DimensionType_Tensorflow", "Tensor_DimensionType_Caffe", "Tensor_DimensionType_Caffe_C4"), "_session")
_LAZY_NAMES.update(dict.fromkeys(
    ("CVImageProcess", "CVMatrix", "CV_ImageFormat_RGBA", "CV_ImageFormat_RGB", "CV_ImageFormat_BGR",
     "CV_ImageFormat_GRAY", "CV_ImageFormat_BGRA", "CV_ImageFormat_YUV_NV21", "CV_Filter_NEAREST",
     "CV_Filter_BILINEAL", "CV_Filter_BICUBIC", "CV_Wrap_CLAMP_TO_EDGE", "CV_Wrap_ZERO", "CV_Wrap_REPEAT"),
    "_image_process"))


def __getattr__(name):
    import importlib
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _LAZY_NAMES:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY_NAMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY_SUBMODULES) | set(_LAZY_NAMES))


def eval(*vars):
    """Compute several Vars with one plan; returns their values as NumPy arrays."""
    return _core.evaluate(list(vars))


def runtime_info():
    """Version, the SIMD instruction set the kernels run on ("isa"), the SIMD targets compiled in
    and those this CPU can run (best first), thread count, available backends and the device each
    runs on, the most bytes
    one array or computation may take (larger requests raise MemoryError), the bf16 path
    precision "low" computes products on ("amx", "avx512_bf16" or "none", docs/precision.md), and
    the int8 GEMM's path on the current SIMD target ("amx", "vnni", "madd16" or "loop",
    docs/int8.md)."""
    return {
        "version": __version__,
        "isa": _core.simd_target(),
        "simd_targets_compiled": _core.compiled_simd_targets(),
        "simd_targets_usable": _core.usable_simd_targets(),
        "threads": get_num_threads(),
        "backends": _core.usable_backends(),
        "devices": {name: _core.backend_description(name) for name in _core.usable_backends()},
        "memory_limit": _core.memory_limit_bytes(),
        # The bf16 path of precision "low" on this CPU: "amx", "avx512_bf16" or "none".
        "bf16": (_core.bf16_hardware_paths() or ["none"])[0],
        # The int8 GEMM's path on the current target: "amx" (large products), "vnni", "madd16", "loop".
        "int8": _core.int8_gemm_info()["path"],
    }


def get_simd_target():
    """The SIMD target the CPU kernels run on now (see ``set_simd_target``)."""
    return _core.simd_target()


def set_backend(name):
    """Run later computations on the backend ``name`` (one of ``runtime_info()["backends"]``):
    each node runs there where the backend supports it and on the CPU otherwise, with copies
    between them; results always come back as host (NumPy) arrays. Process-wide, like
    ``set_simd_target``. An unknown name raises ValueError naming the usable ones."""
    if not isinstance(name, str):
        raise TypeError(f"backend name must be a str, got {type(name).__name__}")
    _core.set_backend(name)


def get_backend():
    """The backend later computations are planned for (``"cpu"`` unless set)."""
    return _core.get_backend()


@_contextlib.contextmanager
def backend(name):
    """``with mnnpy.backend(name):`` runs the block on the backend ``name`` (see ``set_backend``)
    and restores the previous backend afterwards, also when the block raises."""
    previous = get_backend()
    set_backend(name)
    try:
        yield name
    finally:
        set_backend(previous)


def set_precision(mode):
    """Compute later computations at the precision ``mode``, MNN's precision mode: ``"normal"``,
    ``"high"`` or ``"low"`` (any case, or MNN's numbers 0, 1, 2). At ``"low"`` a device backend
    may round float32 operands to float16 where it computes faster so, accumulating in float32
    (Vulkan's MatMul does where the device has float16 arithmetic); ``"normal"`` and ``"high"``
    compute float32 as given, and the CPU always does. Process-wide, like ``set_backend``."""
    _core.set_precision(_precision_name(mode))


def get_precision():
    """The precision later computations are planned for (``"normal"`` unless set)."""
    return _core.get_precision()


@_contextlib.contextmanager
def precision(mode):
    """``with mnnpy.precision(mode):`` runs the block at the precision ``mode`` (see
    ``set_precision``) and restores the previous one afterwards, also when the block raises."""
    previous = get_precision()
    set_precision(mode)
    try:
        yield _precision_name(mode)
    finally:
        set_precision(previous)


# MNN's precision modes (BackendConfig::PrecisionMode) by number, as mnnpy's names.
_MNN_PRECISION_NAMES = {0: "normal", 1: "high", 2: "low", 3: "low"}  # 3: Low_BF16 (expr.PrecisionMode)


def _precision_name(value):
    """The mnnpy precision name of ``value``: a name in any case or MNN's number; None stays
    None (follow ``set_precision``). Others raise ValueError naming the known ones."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError(f"precision must be a name or MNN's precision number, got {type(value).__name__}")
    name = _MNN_PRECISION_NAMES.get(int(value)) if isinstance(value, int) else value.lower()
    if name not in _MNN_PRECISION_NAMES.values():
        raise ValueError(f"unknown precision {value!r} (known: normal, high, low, or MNN's 0, 1, 2, 3)")
    return name


# MNN's backend numbers (MNNForwardType) and names, as mnnpy's backend names.
_MNN_BACKEND_NAMES = {0: "cpu", 1: "metal", 2: "cuda", 3: "opencl", 6: "opengl", 7: "vulkan", 8: "hiai", 9: "trt"}


def _backend_name(value):
    """The mnnpy backend name of ``value``: a name in any case ("VULKAN", "cpu"), MNN's
    ``expr.Backend`` member or number, or None (None stays None: follow ``set_backend``). A
    backend this machine cannot use raises ValueError naming the usable ones."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError(f"backend must be a name or MNN's expr.Backend value, got {type(value).__name__}")
    if isinstance(value, int):
        if int(value) not in _MNN_BACKEND_NAMES:
            raise ValueError(f"unknown backend number {int(value)} (MNN's: {sorted(_MNN_BACKEND_NAMES)})")
        name = _MNN_BACKEND_NAMES[int(value)]
    else:
        name = value.lower()
        name = name[len("backend."):] if name.startswith("backend.") else name
    usable = _core.usable_backends()
    if name not in usable:
        raise ValueError(f"backend '{name}' is not usable on this machine (usable: {', '.join(usable)})")
    return name


@_contextlib.contextmanager
def _thread_choice(set_for_thread, name):
    """Plans made and run on this thread inside the block use ``name`` (None: no change), set by
    ``set_for_thread`` (which returns the previous choice), whatever other threads choose; the
    previous choice comes back afterwards."""
    if name is None:
        yield
        return
    previous = set_for_thread(name)
    try:
        yield
    finally:
        set_for_thread(previous)


def _thread_backend(name):
    """This thread's plans inside the block are for backend ``name`` (see _thread_choice)."""
    return _thread_choice(_core.set_thread_backend, name)


def _thread_precision(name):
    """This thread's plans inside the block are at precision ``name`` (see _thread_choice)."""
    return _thread_choice(_core.set_thread_precision, name)


__all__ = ["Var", "expr", "eval", "runtime_info", "set_num_threads", "get_num_threads", "set_simd_target",
           "get_simd_target", "set_backend", "get_backend", "backend", "set_precision", "get_precision",
           "precision"]
