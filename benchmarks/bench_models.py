"""Whole-model latency, batch 1: mnnpy against onnxruntime, PyTorch and MNN on the same ONNX files
(torchvision classification and segmentation models with random weights; bert_base: a BERT-base
encoder from its config, sequence 128), at 1 and 2 threads, in rotating blocks, medians; plus
load and first-run times and peak memory. Run: python benchmarks/bench_models.py
[--models resnet18,...,bert_base]"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
sys.path.insert(0, os.path.dirname(__file__))
import mnnpy  # noqa: E402
from mnnpy import convert, nn  # noqa: E402

from common import machine_summary  # noqa: E402
from model_zoo import export_torchvision, export_transformer, torchvision_model, transformer_model  # noqa: E402


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


MEMORY_CHILD = r"""
import sys, time, numpy as np
engine, path, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
def peak_mb():
    with open('/proc/self/status') as f:
        return next(int(l.split()[1]) for l in f if l.startswith('VmHWM')) / 1024
x = np.random.default_rng(0).standard_normal((1, 3, size, size)).astype(np.float32)
base = peak_mb()
t0 = time.perf_counter()
if engine == 'mnnpy':
    from mnnpy import nn
    m = nn.load_module_from_file(path, ['input'], ['output'])
    t1 = time.perf_counter(); m.forward(x).numpy()
else:
    import onnxruntime as ort
    s = ort.InferenceSession(path, providers=['CPUExecutionProvider'])
    t1 = time.perf_counter(); s.run(None, {'input': x})
t2 = time.perf_counter()
print(base, peak_mb(), t1 - t0, t2 - t1)
"""


def memory_and_load(onnx_path, mnnpy_path, size):
    """Peak RSS growth, load time and first-run time of each engine in a fresh process (mnnpy
    loads its converted file, onnxruntime the ONNX file)."""
    import subprocess
    out = {}
    for engine, path in (("mnnpy", mnnpy_path), ("onnxruntime", onnx_path)):
        r = subprocess.run([sys.executable, "-c", MEMORY_CHILD, engine, path, str(size)], capture_output=True,
                           text=True)
        if r.returncode == 0:
            base, peak, load, first = map(float, r.stdout.split()[-4:])
            out[engine] = (peak - base, load, first)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--models", default="resnet18,resnet50,mobilenet_v2,mobilenet_v3_large,bert_base,vit_b_16,"
                   "deeplabv3_mobilenet_v3_large")
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--mnn-dir", default="/tmp/mnn-models", help="where <model>.mnn files converted by MNN are")
    args = p.parse_args()
    import onnxruntime as ort
    import torch
    print(f"== whole models, batch 1, {args.size}x{args.size} ({machine_summary()})")
    print("   ratio = mnnpy time / reference time (below 1: mnnpy is faster)")
    for name in args.models.split(","):
        if name == "bert_base":
            path = export_transformer("bert", small=False)
            rng = np.random.default_rng(0)
            feeds = {"input_ids": rng.integers(0, 1000, (1, 128)).astype(np.int64),
                     "attention_mask": np.ones((1, 128), np.int64)}
            tmodel = transformer_model("bert", small=False)  # the exported model's weights
            targs = [torch.from_numpy(v) for v in feeds.values()]
            torch_run = lambda: tmodel(*targs)  # noqa: E731
        else:
            path = export_torchvision(name, args.size)
            feeds = {"input": np.random.default_rng(0).standard_normal((1, 3, args.size, args.size)).astype(np.float32)}
            tmodel = torchvision_model(name)
            tx = torch.from_numpy(feeds["input"])
            torch_run = lambda: tmodel(tx)  # noqa: E731
        x = feeds.get("input")
        module = nn.load_module_from_file(path, list(feeds), [])
        for threads in (1, 2):
            mnnpy.set_num_threads(threads)
            torch.set_num_threads(threads)
            so = ort.SessionOptions()
            so.intra_op_num_threads = threads
            so.inter_op_num_threads = 1
            sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
            runs = {"mnnpy": lambda: module.forward(list(feeds.values())),
                    "onnxruntime": lambda: sess.run(None, feeds), "torch": torch_run}
            mnn_run = mnn_runner(args.mnn_dir, name, x, threads) if x is not None else None
            if mnn_run:
                runs["MNN"] = mnn_run
            # Engines run in blocks, not call by call: onnxruntime's, torch's and MNN's workers spin
            # for a while after each run and would take the cores from whichever engine runs next.
            # Each block starts after a pause (the spinning ends), then runs untimed for a while
            # (the cores clock up again); the blocks rotate three times.
            times = {k: [] for k in runs}
            with torch.inference_mode():
                for _ in range(3):
                    for k, fn in runs.items():
                        time.sleep(0.3)
                        start = time.perf_counter()
                        while time.perf_counter() - start < 0.3:
                            fn()
                        times[k] += [timed(fn, 1) for _ in range(args.repeats)]
            med = {k: statistics.median(v) for k, v in times.items()}
            refs = [k for k in med if k != "mnnpy"]
            best_ref = min(med[k] for k in refs)
            print(f"  {name:<20} {threads}T  mnnpy {med['mnnpy'] * 1e3:8.2f} ms  " +
                  "  ".join(f"{k} {med[k] * 1e3:8.2f} ms" for k in refs) + "  ratio " +
                  "  ".join(f"vs {k} {med['mnnpy'] / med[k]:5.2f}" for k in refs) +
                  f"  vs best {med['mnnpy'] / best_ref:5.2f}", flush=True)
            if threads == 1 and x is not None:
                converted = os.path.splitext(path)[0] + ".mnnpy"
                convert.from_onnx(path, converted)
                fresh = memory_and_load(path, converted, args.size)
                if len(fresh) == 2:
                    (m_ours, l_ours, f_ours), (m_ort, l_ort, f_ort) = fresh["mnnpy"], fresh["onnxruntime"]
                    print(f"  {'':<20}     fresh process: load mnnpy {l_ours * 1e3:7.1f} ms / onnxruntime "
                          f"{l_ort * 1e3:7.1f} ms; first run {f_ours * 1e3:7.1f} / {f_ort * 1e3:7.1f} ms; peak RSS "
                          f"growth {m_ours:6.1f} / {m_ort:6.1f} MB")


if __name__ == "__main__":
    main()
