"""MNN's ``nn.RuntimeManager``: the runtime options that modules loaded with it run under.

``create_runtime_manager(config)`` reads MNN's config keys: ``backend`` (a name such as
``"vulkan"``, MNN's ``expr.Backend`` member or number), ``numThread``, ``precision``
(``"normal"``, ``"high"``, ``"low"`` or MNN's number), ``memory`` and ``power`` (``"normal"``,
``"high"``, ``"low"`` or ``expr.MemoryMode``/``expr.PowerMode``). ``load_module_from_file(...,
runtime_manager=rt)`` runs the module's calls on that backend, at that precision and with that
many threads. Memory mode "low" stores the weights of linear layers as int8 and runs them on the
dynamically quantized int8 GEMM (docs/int8.md). The power mode, the cache file (``set_cache``/``update_cache``), the
external-weights file (``set_external``), session modes (``set_mode``) and hints
(``set_hint``) are accepted and kept on the manager: mnnpy's CPU backend has nothing they
change (no kernel cache to tune, weights in the model file, one memory plan), as MNN's CPU
backend ignores most of them.
"""
import contextlib
import os

from .. import _core
from ..expr import MemoryMode, PowerMode

__all__ = ["RuntimeManager", "create_runtime_manager", "module_threads"]

_CONFIG_KEYS = ("backend", "numThread", "thread_num", "precision", "memory", "power")
# MNN's session debugging keys: accepted, nothing to do.
_IGNORED_KEYS = ("saveTensors", "inputPaths", "outputPaths")


def _mode(value, enum_type, key):
    """An ``enum_type`` member from MNN's number, the member, or its name in any case."""
    if isinstance(value, str):
        try:
            return enum_type[value.capitalize()]
        except KeyError:
            pass
    elif not isinstance(value, bool) and isinstance(value, int):
        try:
            return enum_type(value)
        except ValueError:
            pass
    names = ", ".join(f"'{m.name.lower()}' ({m.value})" for m in enum_type)
    raise ValueError(f"create_runtime_manager: unknown {key} mode {value!r} (known: {names})")


def _int_argument(value, what):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int, got {type(value).__name__}")
    return int(value)


class RuntimeManager:
    """Runtime options shared by the modules loaded with it (MNN's RuntimeManager); see the
    module docstring. ``backend``, ``thread_num``, ``precision``, ``memory_mode`` and
    ``power_mode`` hold the configuration read."""

    def __init__(self, config=None):
        from .. import _backend_name, _precision_name
        if config is not None and not hasattr(config, "items"):
            raise TypeError(f"create_runtime_manager: config must be a dict, got {type(config).__name__}")
        config = dict(config or {})
        unknown = [k for k in config if k not in _CONFIG_KEYS + _IGNORED_KEYS]
        if unknown:
            raise ValueError(f"create_runtime_manager: unknown config keys {unknown} (known: {list(_CONFIG_KEYS)})")
        threads = config.get("numThread", config.get("thread_num", 0)) or 0
        threads = _int_argument(threads, "create_runtime_manager: numThread")
        if threads < 0:
            raise ValueError(f"create_runtime_manager: numThread must not be negative, got {threads}")
        self.thread_num = threads  # 0: the process's thread count (mnnpy.set_num_threads)
        self.precision = _precision_name(config.get("precision", "normal"))
        self.backend = _backend_name(config.get("backend", "cpu"))
        self.memory_mode = _mode(config.get("memory", MemoryMode.Normal), MemoryMode, "memory")
        self.power_mode = _mode(config.get("power", PowerMode.Normal), PowerMode, "power")
        self.cache_path = None
        self.external_path = None
        self.modes = []
        self.hints = {}

    def set_cache(self, cache_path):
        """Records the file MNN keeps tuned GPU kernels in (mnnpy keeps none)."""
        self.cache_path = os.fspath(cache_path)

    def update_cache(self):
        """Writes tuned kernels to the cache file: mnnpy has none to write."""

    def set_external(self, path):
        """Records the file of weights stored outside the model (mnnpy's models hold theirs)."""
        path = os.fspath(path)
        if not os.path.exists(path):
            raise FileNotFoundError(f"set_external: no such file: '{path}'")
        self.external_path = path

    def set_mode(self, mode):
        """Records one of MNN's session modes (Interpreter.setSessionMode's numbers)."""
        self.modes.append(_int_argument(mode, "set_mode: mode"))

    def set_hint(self, mode, value):
        """Records one of MNN's session hints (Interpreter.setSessionHint's numbers)."""
        self.hints[_int_argument(mode, "set_hint: mode")] = _int_argument(value, "set_hint: value")

    def __repr__(self):
        return (f"RuntimeManager(backend={self.backend!r}, thread_num={self.thread_num}, precision={self.precision!r}, "
                f"memory={self.memory_mode.name}, power={self.power_mode.name})")


def create_runtime_manager(config=None):
    """A RuntimeManager from MNN's config dict (or a tuple holding it, as MNN's examples pass)."""
    if isinstance(config, (list, tuple)):
        config = config[0] if config else None
    return RuntimeManager(config)


@contextlib.contextmanager
def module_threads(count):
    """The thread pool runs ``count`` threads inside the block (0: unchanged) and the process's
    count again afterwards, so a module's thread count leaves other computations alone."""
    previous = _core.get_num_threads()
    if not count or count == previous:
        yield
        return
    from .. import set_num_threads  # looked up per call, so that tests can watch it
    set_num_threads(count)
    try:
        yield
    finally:
        set_num_threads(previous)
