"""Whole-model CPU latency (batch 1 unless --batch): mnnpy against onnxruntime, OpenVINO and MNN (PyTorch with
--engines ...,torch) on the same ONNX files: torchvision classification and segmentation models
(224x224) and a BERT-base encoder (sequence 128), built from their configs with seeded random
weights and exported once into model_zoo's cache folder.

Every engine runs in its own fresh process per (model, thread count), so that no engine's
spinning worker threads slow the next. Over --rounds rounds each engine runs once per round, in
an order rotated per round; each process loads the model, times its first run, warms up, then
reports the median of --repeats runs; the table shows the median over rounds, the best other
engine and mnnpy's time over that engine's (the goal: 0.8 or below). A second table gives load
time, first-run time and peak memory growth of each engine in those fresh processes.

--batch N runs N images (sequences) per call; the table's times are per call. Load times include
compiling mnnpy's converter modules (about 30 ms) where Python's bytecode cache is off
(PYTHONDONTWRITEBYTECODE=1) and mnnpy runs from a source tree; installed engines have theirs.

Engine settings: mnnpy loads the .onnx with nn.load_module_from_file after
mnnpy.set_num_threads(T); onnxruntime runs sequentially with intra_op_num_threads=T and
inter_op_num_threads=1; OpenVINO compiles the model, reshaped to the static input shapes, on "CPU"
with INFERENCE_PRECISION_HINT=f32, PERFORMANCE_HINT=LATENCY and INFERENCE_NUM_THREADS=T
(`pip install openvino`: `scripts/setup.sh bench`); MNN (`pip install mnn`) runs
<--mnn-dir>/<model>.mnn converted by its own converter:
  mnnconvert -f ONNX --modelFile <model>.onnx --MNNModel <mnn-dir>/<model>.mnn --bizCode bench
(then reinstall protobuf>=6.31, which mnnconvert downgrades), and is skipped where either is
missing. Run: python benchmarks/bench_models.py [--models resnet18,...,bert_base] [--threads 1,2]
[--rounds 3] [--repeats 25]"""
import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
sys.path.insert(0, HERE)
from common import machine_summary, run_in_children  # noqa: E402

TRANSFORMERS = {"bert_base": ("bert", False)}  # name: model_zoo's (kind, small)
SEQ = 128
MODULES = {"mnnpy": "mnnpy", "onnxruntime": "onnxruntime", "openvino": "openvino", "MNN": "MNN", "torch": "torch"}


def export(model, size):
    """Path of `model` exported to ONNX (model_zoo caches it for every process)."""
    from model_zoo import export_torchvision, export_transformer
    if model in TRANSFORMERS:
        kind, small = TRANSFORMERS[model]
        return export_transformer(kind, SEQ, small=small)
    return export_torchvision(model, size)


def make_feeds(model, size, batch=1):
    rng = np.random.default_rng(0)
    if model in TRANSFORMERS:
        return {"input_ids": rng.integers(0, 1000, (batch, SEQ)).astype(np.int64),
                "attention_mask": np.ones((batch, SEQ), np.int64)}
    return {"input": rng.standard_normal((batch, 3, size, size)).astype(np.float32)}


# Loaders: (model, ONNX path, feeds, threads, options) -> a callable running the model once with
# its outputs in host memory, or a string saying why the engine is skipped.

def load_mnnpy(model, path, feeds, threads, opts):
    import mnnpy
    from mnnpy import nn
    mnnpy.set_num_threads(threads)
    module = nn.load_module_from_file(path, list(feeds), [])
    inputs = list(feeds.values())
    return lambda: module.forward(inputs)


def load_onnxruntime(model, path, feeds, threads, opts):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return lambda: sess.run(None, feeds)


def load_openvino(model, path, feeds, threads, opts):
    import openvino as ov
    core = ov.Core()
    net = core.read_model(path)
    net.reshape({name: list(x.shape) for name, x in feeds.items()})
    compiled = core.compile_model(net, "CPU", {"INFERENCE_PRECISION_HINT": "f32", "PERFORMANCE_HINT": "LATENCY",
                                               "INFERENCE_NUM_THREADS": str(threads)})
    request = compiled.create_infer_request()
    return lambda: request.infer(feeds)


def load_MNN(model, path, feeds, threads, opts):
    import MNN
    path = os.path.join(opts.mnn_dir, model + ".mnn")
    if not os.path.exists(path):
        return f"no {path}"
    if list(feeds) != ["input"]:
        return "float image inputs only"
    x = feeds["input"]
    rt = MNN.nn.create_runtime_manager(({"backend": "CPU", "numThread": threads, "precision": "high"},))
    module = MNN.nn.load_module_from_file(path, ["input"], ["output"], runtime_manager=rt)
    F = MNN.expr
    return lambda: module.forward(F.const(x, list(x.shape), F.NCHW)).read()


def load_torch(model, path, feeds, threads, opts):
    import torch
    from model_zoo import torchvision_model, transformer_model
    torch.set_num_threads(threads)
    kind, small = TRANSFORMERS.get(model, (None, None))
    net = transformer_model(kind, small=small) if model in TRANSFORMERS else torchvision_model(model)
    inputs = [torch.from_numpy(x) for x in feeds.values()]

    def run():
        with torch.inference_mode():
            return net(*inputs)
    return run


def peak_rss_mb():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM")) / 1024


def child(opts):
    """One engine on one model in this fresh process: prints one JSON line."""
    engine, model, path = opts.job
    threads = int(opts.threads)
    feeds = make_feeds(model, opts.size, opts.batch)
    base = peak_rss_mb()
    t0 = time.perf_counter()
    try:
        importlib.import_module(MODULES[engine])
    except ImportError as e:
        print(json.dumps({"skip": f"not installed ({e})"}))
        return
    t1 = time.perf_counter()
    run = globals()["load_" + engine](model, path, feeds, threads, opts)
    if isinstance(run, str):
        print(json.dumps({"skip": run}))
        return
    t2 = time.perf_counter()
    run()
    t3 = time.perf_counter()
    calls = 0
    while calls < 3 or time.perf_counter() - t3 < 0.5:  # warm-up: caches, pools, clocks
        run()
        calls += 1
    times = []
    for _ in range(opts.repeats):
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
    print(json.dumps({"median": statistics.median(times), "import": t1 - t0, "load": t2 - t1, "first": t3 - t2,
                      "peak_mb": peak_rss_mb() - base}))


def measure(engine, model, path, threads, opts):
    """The child's JSON object, or {"error": last line of its stderr}."""
    args = [engine, model, path, "--repeats", opts.repeats, "--size", opts.size, "--batch", opts.batch,
            "--mnn-dir", opts.mnn_dir]
    try:
        return run_in_children(__file__, [threads], args)[threads]
    except subprocess.CalledProcessError as e:
        return {"error": (e.stderr.strip().splitlines() or ["exit status %d" % e.returncode])[-1]}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default="resnet18,resnet50,mobilenet_v2,mobilenet_v3_large,bert_base,vit_b_16,"
                   "deeplabv3_mobilenet_v3_large")
    p.add_argument("--engines", default="mnnpy,onnxruntime,openvino,MNN", help="also: torch")
    p.add_argument("--threads", default="1,2", help="thread counts (a child gets one)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeats", type=int, default=25, help="timed runs per process")
    p.add_argument("--size", type=int, default=224, help="image side of the vision models")
    p.add_argument("--batch", type=int, default=1, help="images or sequences per run (the table then also "
                   "gives mnnpy's throughput)")
    p.add_argument("--mnn-dir", default="/tmp/mnn-models", help="where <model>.mnn files converted by MNN are")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("job", nargs="*", help=argparse.SUPPRESS)  # the child's engine, model, ONNX path
    opts = p.parse_args()
    if opts.child:
        return child(opts)
    engines = opts.engines.split(",")
    assert engines[0] == "mnnpy" and len(engines) > 1, "--engines: mnnpy first, then at least one other"
    thread_counts = [int(t) for t in opts.threads.split(",")]
    print(f"== whole models on the CPU, batch {opts.batch}, {opts.size}x{opts.size} images, sequence {SEQ} "
          f"({machine_summary()})")
    print("   load average before: %.2f %.2f %.2f (other work on the machine slows every engine)" % os.getloadavg())
    print(f"   ms: median over {opts.rounds} rounds of each fresh process's median of {opts.repeats} runs; "
          "ratio = mnnpy / best other engine (goal: 0.8 or below)")
    print("  " + f"{'model':<30}  T " + "".join(f"{e:>12}" for e in engines) + f"  {'best other':>24}  ratio")
    fresh = {}  # model: {engine: (load, first, peak) medians} at the first thread count
    notes = {}
    for model in opts.models.split(","):
        path = export(model, opts.size)
        for threads in thread_counts:
            results, gone = {e: [] for e in engines}, {}
            for r in range(opts.rounds):
                for engine in engines[r % len(engines):] + engines[:r % len(engines)]:
                    if engine in gone:
                        continue
                    res = measure(engine, model, path, threads, opts)
                    if "median" in res:
                        results[engine].append(res)
                    else:
                        gone[engine] = res.get("skip") or "failed: " + res["error"]
            med = {e: statistics.median(x["median"] for x in v) * 1e3
                   for e, v in results.items() if v and e not in gone}
            for e, why in gone.items():
                notes.setdefault(f"{e}: {why}", []).append(f"{model} {threads}T")
            others = {e: t for e, t in med.items() if e != "mnnpy"}
            cells = "".join(f"{med[e]:12.2f}" if e in med else f"{'-':>12}" for e in engines)
            if "mnnpy" in med and others:
                best = min(others, key=others.get)
                tail = f"  {best:>14} {others[best]:9.2f}  {med['mnnpy'] / others[best]:5.2f}"
            else:
                tail = ""
            rate = f"  ({opts.batch / med['mnnpy'] * 1e3:.1f}/s)" if opts.batch > 1 and "mnnpy" in med else ""
            print(f"  {model:<30} {threads:2d} {cells}{tail}{rate}", flush=True)
            if threads == thread_counts[0]:
                fresh[model] = {e: tuple(statistics.median(x[k] for x in v) for k in ("load", "first", "peak_mb"))
                                for e, v in results.items() if v and e not in gone}
    for note, where in notes.items():
        print(f"   {note} ({', '.join(where)})")
    print(f"\n== fresh process at {thread_counts[0]} thread(s): load ms (model file to runnable, after the import) "
          "/ first run ms / peak RSS growth MB (import included), medians over the rounds")
    print("  " + f"{'model':<30}" + "".join(f"{e:>24}" for e in engines))
    for model, by_engine in fresh.items():
        cells = "".join(f"{'%.0f / %.1f / %.0f' % (v[0] * 1e3, v[1] * 1e3, v[2]):>24}" if (v := by_engine.get(e))
                        else f"{'-':>24}" for e in engines)
        print(f"  {model:<30}{cells}")


if __name__ == "__main__":
    main()
