"""Whole-model latency, batch 1: mnnpy against onnxruntime and PyTorch on the same ONNX files
(torchvision models with random weights), at 1 and 2 threads, in rotating blocks, medians; plus
load and first-run times. Run: python benchmarks/bench_models.py [--models resnet18,...]"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
sys.path.insert(0, os.path.dirname(__file__))
import mnnpy  # noqa: E402
from mnnpy import nn  # noqa: E402

from common import machine_summary  # noqa: E402
from model_zoo import export_torchvision  # noqa: E402


def timed(fn, repeats):
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def mnn_runner(mnn_dir, name, x, threads):
    """MNN (pip install mnn) on the same model converted by its own converter:
    mnnconvert -f ONNX --modelFile <name>.onnx --MNNModel <mnn_dir>/<name>.mnn --bizCode bench
    (then reinstall protobuf>=6.31, which mnnconvert downgrades). None when either is missing."""
    path = os.path.join(mnn_dir, name + ".mnn")
    try:
        import MNN
    except ImportError:
        return None
    if not os.path.exists(path):
        return None
    rt = MNN.nn.create_runtime_manager(({"backend": "CPU", "numThread": threads, "precision": "high"},))
    module = MNN.nn.load_module_from_file(path, ["input"], ["output"], runtime_manager=rt)
    F = MNN.expr
    return lambda: module.forward(F.const(x, list(x.shape), F.NCHW)).read()


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--models", default="resnet18,resnet50,mobilenet_v2,mobilenet_v3_large")
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--mnn-dir", default="/tmp/mnn-models", help="where <model>.mnn files converted by MNN are")
    args = p.parse_args()
    import onnxruntime as ort
    import torch
    import torchvision
    print(f"== whole models, batch 1, {args.size}x{args.size} ({machine_summary()})")
    print("   ratio = mnnpy time / reference time (below 1: mnnpy is faster)")
    for name in args.models.split(","):
        path = export_torchvision(name, args.size)
        x = np.random.default_rng(0).standard_normal((1, 3, args.size, args.size)).astype(np.float32)
        t0 = time.perf_counter()
        module = nn.load_module_from_file(path, ["input"], ["output"])
        load_ours = time.perf_counter() - t0
        t0 = time.perf_counter()
        module.forward(x)
        first_ours = time.perf_counter() - t0
        torch.manual_seed(0)
        tmodel = getattr(torchvision.models, name)(weights=None).eval()
        tx = torch.from_numpy(x)
        for threads in (1, 2):
            mnnpy.set_num_threads(threads)
            torch.set_num_threads(threads)
            so = ort.SessionOptions()
            so.intra_op_num_threads = threads
            so.inter_op_num_threads = 1
            t0 = time.perf_counter()
            sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
            load_ort = time.perf_counter() - t0
            t0 = time.perf_counter()
            sess.run(None, {"input": x})
            first_ort = time.perf_counter() - t0
            runs = {"mnnpy": lambda: module.forward(x), "onnxruntime": lambda: sess.run(None, {"input": x}),
                    "torch": lambda: tmodel(tx)}
            mnn_run = mnn_runner(args.mnn_dir, name, x, threads)
            if mnn_run:
                runs["MNN"] = mnn_run
            # Engines run in blocks, not call by call: onnxruntime's and torch's workers spin for a
            # while after each run and would take the cores from whichever engine runs next. Each
            # block starts with discarded runs; the blocks rotate three times.
            times = {k: [] for k in runs}
            with torch.inference_mode():
                for _ in range(3):
                    for k, fn in runs.items():
                        for _ in range(3):
                            fn()
                        times[k] += [timed(fn, 1) for _ in range(args.repeats)]
            med = {k: statistics.median(v) for k, v in times.items()}
            refs = [k for k in med if k != "mnnpy"]
            best_ref = min(med[k] for k in refs)
            print(f"  {name:<20} {threads}T  mnnpy {med['mnnpy'] * 1e3:8.2f} ms  " +
                  "  ".join(f"{k} {med[k] * 1e3:8.2f} ms" for k in refs) + "  ratio " +
                  "  ".join(f"vs {k} {med['mnnpy'] / med[k]:5.2f}" for k in refs) +
                  f"  vs best {med['mnnpy'] / best_ref:5.2f}", flush=True)
            if threads == 1:
                print(f"  {'':<20}     load: mnnpy {load_ours * 1e3:7.1f} ms, onnxruntime {load_ort * 1e3:7.1f} ms;"
                      f" first run: mnnpy {first_ours * 1e3:7.1f} ms, onnxruntime {first_ort * 1e3:7.1f} ms")


if __name__ == "__main__":
    main()
