"""MNN's own model files: mnnpy reading a `.mnn` file against MNN 3.x running it, side by side.

Each torchvision model (random seeded weights) is exported to ONNX and converted by MNN's own
converter into `.mnn` files: float, `--fp16` (half-precision weights) and `--weightQuantBits 8`
(8-bit weights). Each engine then loads the file in a fresh process, runs it once (load + first
run) and times repeated runs (the median); the engines alternate over rounds. MNN runs in
`.venv-mnn` (made by `scripts/setup.sh test`), mnnpy in this Python. The table gives the medians
over the rounds, the ratio mnnpy / MNN, and the largest difference of the two outputs relative
to the largest output value.
Run: python benchmarks/bench_mnn_files.py [--models resnet18,mobilenet_v2] [--threads 1,2]"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
sys.path.insert(0, HERE)
from common import NO_WORKING_DIRECTORY_ON_PATH, machine_summary  # noqa: E402

VARIANTS = {"float": [], "fp16": ["--fp16"], "q8": ["--weightQuantBits", "8"]}

# One timed process of either engine: load, first run, then `repeats` runs; prints a JSON line
# and saves the output next to the input.
TIMED_RUN = r"""
import json, statistics, sys, time
import numpy as np
engine, path, inputs, threads, repeats = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
x = np.load(inputs)
t0 = time.perf_counter()
if engine == "MNN":
    import MNN
    F = MNN.expr
    rt = MNN.nn.create_runtime_manager(({"backend": "CPU", "numThread": threads, "precision": "high"},))
    module = MNN.nn.load_module_from_file(path, ["input"], ["output"], runtime_manager=rt)
    def run():
        y = module.forward(F.const(x, list(x.shape), F.NCHW))
        if y.data_format == F.NC4HW4:
            y = F.convert(y, F.NCHW)
        return np.array(y.read(), copy=True)
else:
    import mnnpy
    mnnpy.set_num_threads(threads)
    module = mnnpy.nn.load_module_from_file(path, ["input"], ["output"])
    def run():
        return np.asarray(module.forward(x).read())
t1 = time.perf_counter()
y = run()
t2 = time.perf_counter()
times = []
for _ in range(repeats):
    t = time.perf_counter()
    run()
    times.append(time.perf_counter() - t)
np.save(inputs + "." + engine + ".npy", y)
print(json.dumps({"load_first": t2 - t0, "median": statistics.median(times)}))
"""


def timed(engine, path, inputs, threads, repeats):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    if engine == "MNN":
        import mnn_reference
        out = mnn_reference.call(TIMED_RUN, engine, path, inputs, threads, repeats, what="timing").stdout
    else:
        code = NO_WORKING_DIRECTORY_ON_PATH + TIMED_RUN
        out = subprocess.run([sys.executable, "-c", code, engine, path, inputs, str(threads), str(repeats)], env=env,
                             check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default="resnet18,mobilenet_v2,mobilenet_v3_large")
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--threads", default="1,2")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeats", type=int, default=20)
    opts = p.parse_args()
    import mnn_reference
    from model_zoo import export_torchvision
    print(f"== MNN's .mnn files: mnnpy against MNN ({machine_summary()})")
    print(f"   ms: median over {opts.rounds} rounds (fresh processes, engines alternating) of each process's "
          f"median of {opts.repeats} runs; load+first: loading the file and the first run")
    print(f"  {'model':<20} {'file':<6} T {'MNN':>9} {'mnnpy':>9} {'ratio':>6}   {'load+first MNN':>14} "
          f"{'mnnpy':>8}  {'rel. diff':>10}")
    work = tempfile.mkdtemp(prefix="mnn-files-")
    for model in opts.models.split(","):
        onnx_path = export_torchvision(model, 224)
        x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
        inputs = os.path.join(work, f"{model}_input.npy")
        np.save(inputs, x)
        for variant in opts.variants.split(","):
            mnn_path = mnn_reference.convert(onnx_path, os.path.join(work, f"{model}_{variant}.mnn"),
                                             *VARIANTS[variant])
            for threads in (int(t) for t in opts.threads.split(",")):
                rounds = {"MNN": [], "mnnpy": []}
                for r in range(opts.rounds):
                    order = ("MNN", "mnnpy") if r % 2 == 0 else ("mnnpy", "MNN")
                    for engine in order:
                        rounds[engine].append(timed(engine, mnn_path, inputs, threads, opts.repeats))
                med = {e: statistics.median(x["median"] for x in rs) * 1e3 for e, rs in rounds.items()}
                first = {e: statistics.median(x["load_first"] for x in rs) * 1e3 for e, rs in rounds.items()}
                theirs = np.load(inputs + ".MNN.npy")
                diff = float(np.abs(np.load(inputs + ".mnnpy.npy") - theirs).max() / np.abs(theirs).max())
                print(f"  {model:<20} {variant:<6} {threads} {med['MNN']:9.2f} {med['mnnpy']:9.2f} "
                      f"{med['mnnpy'] / med['MNN']:6.2f}   {first['MNN']:14.1f} {first['mnnpy']:8.1f}  {diff:10.2e}",
                      flush=True)


if __name__ == "__main__":
    main()
