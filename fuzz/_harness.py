"""What the fuzzers share: the exceptions a loader may raise, scratch files, and the atheris
driver that seeds a corpus with valid files made in code.

Each fuzz_*.py file defines ``fuzz_one(data)`` (one input; raises only the loader's documented
exceptions) and ``seeds()`` (valid inputs), and runs as a libFuzzer program through atheris:

    python fuzz/fuzz_model_file.py -runs=20000                # a number of executions
    python fuzz/fuzz_model_file.py -max_total_time=300        # or a time limit
    python fuzz/fuzz_model_file.py CORPUS_DIR crash-1234      # any libFuzzer flags and paths

Without a corpus folder it uses build/fuzz/corpus/<fuzzer>, seeded on first use. Any other
exception, a crash, a hang (libFuzzer's -timeout, 20 s per input here) or memory past
-rss_limit_mb is a finding: libFuzzer saves the input as crash-*/timeout-*/oom-* under
-artifact_prefix (build/fuzz/findings/ by default).
"""
import hashlib
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Every loader may refuse its input with these; each must carry a message.
DOCUMENTED = (ValueError, TypeError, OSError, MemoryError)

# Set by main() before mnnpy is imported. One allocation or computation of a fuzzed input may
# take this much: a file may honestly ask for a large model or image, and anything larger must
# be refused cleanly (MemoryError), not taken; libFuzzer's RSS limit (3 GiB) then flags growth,
# not a big but honest request. Decoded images are limited as OpenCV limits them, lower here so
# that each input runs fast.
FUZZ_ENVIRONMENT = {"MNNPY_MEMORY_LIMIT": str(512 << 20), "OPENCV_IO_MAX_IMAGE_PIXELS": str(1 << 24)}


def check_documented(error, extra=()):
    """Re-raises ``error`` unless it is a documented refusal with a message. A MemoryError must
    name the size it refused (mnnpy's and NumPy's "Unable to allocate ..."): a bare one comes
    from an allocation that failed without a size check before it (C++'s std::bad_alloc, or a
    Python list or string built from a size in the file)."""
    if not isinstance(error, DOCUMENTED + tuple(extra)):
        raise error
    if not str(error).strip():
        raise AssertionError(f"{type(error).__name__} without a message") from error
    if isinstance(error, MemoryError) and "std::bad_alloc" in str(error):
        raise AssertionError("an allocation failed without a size check before it (std::bad_alloc)") from error


class ScratchFiles:
    """A fresh file name for each input (loaders map files: an input's file must not be
    rewritten while the last one's Vars may still hold its mapping), in memory where /dev/shm is;
    the folder is made at the first write and removed at exit."""

    def __init__(self, suffix):
        self.suffix = suffix
        self.dir = None
        self.count = 0

    def write(self, data):
        if self.dir is None:
            import atexit
            import shutil
            shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
            self.dir = tempfile.mkdtemp(prefix="mnnpy-fuzz-", dir=shm)
            atexit.register(shutil.rmtree, self.dir, True)
        self.count += 1
        path = os.path.join(self.dir, f"input{self.count}{self.suffix}")
        with open(path, "wb") as f:
            f.write(data)
        return path

    @staticmethod
    def remove(path):
        try:
            os.unlink(path)
        except OSError:
            pass


def input_arrays(declared, rng, max_elements=1 << 16):
    """Arrays for a model's declared inputs [(name, dtype, shape)]: symbolic or unknown
    dimensions become 1 to 3; None when the inputs would be too large to be worth running."""
    import numpy as np
    arrays = []
    for _, dtype, shape in declared:
        dims = [d if isinstance(d, int) and not isinstance(d, bool) and d > 0 else int(rng.integers(1, 4))
                for d in (shape if isinstance(shape, (list, tuple)) else [])]
        if int(np.prod(dims, dtype=np.float64)) > max_elements or len(dims) > 8:
            return None
        try:
            dt = np.dtype(dtype)
        except TypeError:
            dt = np.dtype(np.float32)
        if dt.kind == "f":
            a = rng.standard_normal(dims).astype(dt)
        elif dt.kind == "b":
            a = rng.integers(0, 2, dims).astype(dt)
        elif dt.kind in "iu":
            a = rng.integers(0, 4, dims).astype(dt)
        else:
            return None
        arrays.append(a)
    return arrays


def _flag(argv, name):
    return any(a == name or a.startswith(name + "=") for a in argv)


def _write_seeds(corpus, seeds):
    os.makedirs(corpus, exist_ok=True)
    for data in seeds:
        path = os.path.join(corpus, "seed-" + hashlib.sha1(data).hexdigest())
        if not os.path.exists(path):
            with open(path, "wb") as f:
                f.write(data)


def main(name, fuzz_one, seeds, instrument, custom_mutator=None):
    """Runs ``fuzz_one`` under atheris with sys.argv's libFuzzer flags (see the module docstring).
    The Python modules named in ``instrument`` (and those under them) are imported instrumented
    for coverage; the C++ core is instrumented too when it was built with MNNPY_FUZZ=ON and
    atheris' sanitizer runtime is preloaded (fuzz/run_all.sh)."""
    import importlib

    for key, value in FUZZ_ENVIRONMENT.items():
        os.environ.setdefault(key, value)
    import atheris
    with atheris.instrument_imports(include=list(instrument)):
        for module in instrument:
            importlib.import_module(module)
    argv = list(sys.argv)
    paths = [a for a in argv[1:] if not a.startswith("-")]
    if not paths:
        corpus = os.path.join(ROOT, "build", "fuzz", "corpus", name)
        argv.append(corpus)
        paths = [corpus]
    if os.path.isdir(paths[0]) or not os.path.exists(paths[0]):
        _write_seeds(paths[0], seeds())
    defaults = {"-timeout": "20", "-rss_limit_mb": "3072", "-max_len": "16384",
                "-artifact_prefix": os.path.join(ROOT, "build", "fuzz", "findings", name + "-")}
    for flag, value in defaults.items():
        if not _flag(argv, flag):
            if flag == "-artifact_prefix":
                os.makedirs(os.path.dirname(value), exist_ok=True)
            argv.insert(1, f"{flag}={value}")
    atheris.Setup(argv, fuzz_one, custom_mutator=custom_mutator)
    atheris.Fuzz()
