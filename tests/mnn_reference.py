"""MNN itself (the `mnn` PyPI package, 3.x) as a reference for the tests of MNN model files: it
lives in its own environment, .venv-mnn at the repository root (scripts/setup.sh test makes it),
because its converter pins a protobuf older than onnx needs. `batch` runs one script there for
many jobs: MNN's converter turning ONNX files (or Caffe's prototxt and caffemodel pairs) into .mnn files (called directly, not through the
`mnnconvert` command, whose wrapper tries to pip-install and call a logging service), and MNN's
runtime running .mnn files; `convert` and `run` are one job each."""
import os
import subprocess

import numpy as np
import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MNN_VENV = os.path.join(REPO_ROOT, ".venv-mnn")

# Jobs from a JSON file: convert (ONNX -> .mnn with flags) then run (.mnn on saved inputs).
_BATCH = """
import json, sys, numpy as np, _tools, MNN
F = MNN.expr
for job in json.load(open(sys.argv[1])):
    if job["kind"] == "convert":
        source = (["-f", "CAFFE", "--modelFile", job["caffemodel"], "--prototxt", job["prototxt"]] if "prototxt" in job
                  else ["-f", "ONNX", "--modelFile", job["onnx"]])
        _tools.mnnconvert(["mnnconvert"] + source + ["--MNNModel", job["mnn"], "--bizCode", "biz"] + job["flags"])
        continue
    given = np.load(job["inputs"])
    names = list(given.files)
    module = MNN.nn.load_module_from_file(job["mnn"], names, job["outputs"], runtime_manager=None)
    feeds = [F.const(given[n], list(given[n].shape), F.NCHW, F.int if given[n].dtype == np.int32 else F.float)
             for n in names]
    outs = module.forward(feeds)
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    results = {}
    for i, o in enumerate(outs):
        if o.data_format == F.NC4HW4:
            o = F.convert(o, F.NCHW)
        results[f"out{i}"] = np.array(o.read(), copy=True)
    np.savez(job["results"], **results)
"""


def mnn_python():
    """The Python of .venv-mnn; the test fails (CI always has it) when it is missing."""
    python = os.path.join(MNN_VENV, "bin", "python")
    if not os.path.exists(python):
        pytest.fail(f"MNN's reference environment {MNN_VENV} is missing: run `scripts/setup.sh test` "
                    "(or `python3 -m venv .venv-mnn && .venv-mnn/bin/pip install mnn numpy`)")
    return python


def _env():
    # Nothing of this checkout's Python path: the reference imports only MNN and NumPy.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MNNPY_CORE_DIR")}
    env["PYTHONNOUSERSITE"] = "1"
    return env


def call(code, *args, what="script", timeout=300):
    """Runs Python `code` with `args` in MNN's environment; the finished process (its stdout)."""
    return _call([code, *map(str, args)], what, timeout)


def _call(args, what, timeout=300):
    done = subprocess.run([mnn_python(), "-c"] + args, env=_env(), capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"MNN {what} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return done


def convert(onnx_path, mnn_path, *flags):
    """MNN's converter: `onnx_path` into `mnn_path` with extra converter flags (--fp16,
    --weightQuantBits 8 ...). Returns mnn_path."""
    batch([(onnx_path, mnn_path, flags)], [], os.path.dirname(str(mnn_path)))
    if not os.path.exists(mnn_path):
        raise RuntimeError(f"MNN's converter wrote no {mnn_path}")
    return str(mnn_path)


def run(mnn_path, inputs, scratch, output_names=()):
    """MNN's runtime outputs (a list of arrays) of `mnn_path` for `inputs` (name -> array, in
    the model's input order), or of the named tensors; `scratch` is a directory for the exchange
    files."""
    return batch([], [(mnn_path, inputs, list(output_names))], scratch)[0]


def batch(conversions, runs, scratch):
    """Many conversions, then many runs, in one process of MNN's: `conversions` is a list of
    (onnx_path or (prototxt, caffemodel), mnn_path, flags), `runs` of (mnn_path, inputs[,
    output names]). Returns the runs' outputs."""
    import json
    jobs = [{"kind": "convert", "mnn": str(m), "flags": [str(f) for f in flags],
             **({"prototxt": str(o[0]), "caffemodel": str(o[1])} if isinstance(o, tuple) else {"onnx": str(o)})}
            for o, m, flags in conversions]
    results = []
    for k, (mnn_path, inputs, *names) in enumerate(runs):
        base = os.path.join(str(scratch), f"mnn_batch_{os.getpid()}_{k}")
        np.savez(base + "_in.npz", **{n: np.ascontiguousarray(v) for n, v in inputs.items()})
        jobs.append({"kind": "run", "mnn": str(mnn_path), "inputs": base + "_in.npz",
                     "outputs": list(names[0]) if names else [], "results": base + "_out.npz"})
        results.append(base + "_out.npz")
    spec = os.path.join(str(scratch), f"mnn_jobs_{os.getpid()}.json")
    with open(spec, "w") as f:
        json.dump(jobs, f)
    _call([_BATCH, spec], "batch")
    outputs = []
    for path in results:
        with np.load(path) as done:
            outputs.append([done[f"out{i}"] for i in range(len(done.files))])
    return outputs
