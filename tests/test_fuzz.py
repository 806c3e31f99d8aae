"""Short runs of the fuzzers in fuzz/ (atheris, on the core as built, with Python coverage): each
loader of untrusted bytes takes a bounded number of mutated inputs grown from valid files made
in code, with a fixed libFuzzer seed, and replays every input found earlier (tests/data/fuzz/
<fuzzer>/); only the loader's documented exceptions may come out, with a message, and no input
may crash or hang. `make fuzz` runs the same fuzzers for minutes on an instrumented build.
The specific findings are asserted where their loader is tested (test_cv_codecs.py,
test_expr_io.py, test_nn_onnx.py)."""
import os
import re
import subprocess
import sys

import pytest
from helpers import python_env

pytest.importorskip("atheris")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Executions per fuzzer: a few seconds each on one core.
RUNS = {"graph_file": 4000, "model_file": 300, "onnx": 300, "imdecode": 3000, "caffe": 300, "safetensors": 4000}


def run_fuzzer(name, tmp_path, *args, timeout=120):
    env = python_env()
    corpus = tmp_path / "corpus"
    corpus.mkdir(exist_ok=True)
    found = os.path.join(ROOT, "tests", "data", "fuzz", name)
    cmd = [sys.executable, os.path.join(ROOT, "fuzz", f"fuzz_{name}.py"), "-seed=1", "-timeout=20",
           f"-artifact_prefix={tmp_path}/", *args, str(corpus)] + ([found] if os.path.isdir(found) else [])
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=tmp_path)
    return r.returncode, r.stdout + r.stderr


@pytest.mark.parametrize("name", sorted(RUNS))
def test_fuzzer_short_run(name, tmp_path):
    if name in ("model_file", "onnx"):
        pytest.importorskip("onnx")  # their seeds are ONNX models made in code
    code, log = run_fuzzer(name, tmp_path, f"-runs={RUNS[name]}")
    assert code == 0, f"fuzz_{name} found a problem:\n{log[-6000:]}"
    done = re.search(r"#(\d+)\s+DONE\s+cov: (\d+) ft: (\d+)", log)
    assert done, log[-3000:]
    executions, coverage = int(done.group(1)), int(done.group(2))
    print(f"fuzz_{name}: {executions} executions, cov {coverage}, ft {done.group(3)}")
    assert executions >= RUNS[name] - 1 and coverage > 0


def test_only_documented_exceptions_with_a_message_pass():
    sys.path.insert(0, os.path.join(ROOT, "fuzz"))
    import _harness
    from mnnpy import cv
    for allowed in (ValueError("bad magic"), OSError(2, "missing"), MemoryError("Unable to allocate 8.00 TiB")):
        _harness.check_documented(allowed)
    _harness.check_documented(cv.error("imdecode", "too large"), extra=(cv.error,))
    for unexpected in (KeyError("nodes"), IndexError("list index out of range"), RecursionError(), cv.error("f", "x")):
        with pytest.raises(type(unexpected)):
            _harness.check_documented(unexpected)
    with pytest.raises(AssertionError, match="ValueError without a message"):
        _harness.check_documented(ValueError())
    with pytest.raises(AssertionError, match="without a size check"):
        _harness.check_documented(MemoryError("std::bad_alloc"))
