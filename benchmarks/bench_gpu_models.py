"""Whole models on the Vulkan backend next to torch eager on the same GPU (CUDA), in one run:
ResNet-50 (torchvision, 224x224) and BERT-base (transformers, sequence 128), random seeded weights,
at batch 1 and 32 by default.

For each model and batch it prints
- ours end to end: numpy input in, result read back (median of --repeats runs after a warm-up);
- torch eager on the GPU: input already there, CUDA events (median), and with the input's copy in
  and the result's copy out, as ours;
- the relative error of ours against onnxruntime on the CPU (max |ours - ref| / max |ref|);
- the device time of a run (its stretches' timestamps), against which the rest of the run is
  submits, waits and host work;
- one profiled run: the device time of each op kind (timestamps), the CPU fallbacks, the copies
  between host and device, and what the end-to-end time spends outside device work (submits,
  waits, host code).

    python benchmarks/bench_gpu_models.py [--models resnet50 bert_base] [--batches 1 32]
        [--repeats 20] [--precision normal|low]

Both sides run with torch's CUDA context open, which holds the GPU at its working clocks.
Prints one line and exits 0 where this machine has no Vulkan device.
"""
import argparse
import collections
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(os.path.dirname(HERE), "tests")]
import mnnpy  # noqa: E402
from mnnpy import nn  # noqa: E402
from bench_gpu import median_time, torch_seconds  # noqa: E402
from model_zoo import export_torchvision, export_transformer, torchvision_model, transformer_model  # noqa: E402


def model_and_feeds(name, batch, seq):
    """(ONNX path, torch module, feeds as numpy arrays by input name)."""
    rng = np.random.default_rng(batch)
    if name == "bert_base":
        feeds = {"input_ids": rng.integers(0, 1000, (batch, seq)).astype(np.int64),
                 "attention_mask": np.ones((batch, seq), np.int64)}
        return export_transformer("bert", seq=seq, small=False), transformer_model("bert", small=False), feeds
    feeds = {"input": rng.standard_normal((batch, 3, 224, 224)).astype(np.float32)}
    return export_torchvision(name), torchvision_model(name), feeds


def profile_rows(module, inputs):
    mnnpy._core.set_executor_option("profile", True)
    try:
        outputs = module.forward(inputs)
        for out in outputs if isinstance(outputs, (list, tuple)) else [outputs]:
            out.read()
    finally:
        mnnpy._core.set_executor_option("profile", False)
    return mnnpy._core.last_profile()


def summarize(rows, end_to_end):
    device = [r for r in rows if r["backend"] == "vulkan" and not r["op"].startswith("Copy(")]
    copies = [r for r in rows if r["op"].startswith("Copy(")]
    fallbacks = [r for r in rows if r["fallback"]]
    device_s = sum(r["seconds"] for r in device)
    copy_s = sum(r["seconds"] for r in copies)
    fallback_s = sum(r["seconds"] for r in fallbacks)
    print(f"    profile: {len(device)} device steps {device_s * 1e3:.2f} ms, {len(copies)} copies {copy_s * 1e3:.2f} ms, "
          f"{len(fallbacks)} CPU fallbacks {fallback_s * 1e3:.2f} ms; end to end {end_to_end * 1e3:.2f} ms, of it "
          f"{max(end_to_end - device_s - copy_s - fallback_s, 0) * 1e3:.2f} ms outside them (submits, waits, host)")
    by_kind = collections.defaultdict(lambda: [0, 0.0])
    for r in device + fallbacks:
        key = (r["op"] if not r["op"].startswith("Fused(") else "Fused", r["scheme"], r["backend"])
        by_kind[key][0] += 1
        by_kind[key][1] += r["seconds"]
    for (op, scheme, backend), (count, seconds) in sorted(by_kind.items(), key=lambda kv: -kv[1][1])[:12]:
        print(f"      {op[:28]:28} {scheme[:30]:30} {backend:7} x{count:<4d} {seconds * 1e3:8.3f} ms")
    if fallbacks:
        print("      falls back:", sorted({r["op"] for r in fallbacks}))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["resnet50", "bert_base"])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 32])
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--precision", default="normal", choices=["normal", "high", "low"])
    args = parser.parse_args()
    if "vulkan" not in mnnpy.runtime_info()["backends"]:
        print("no Vulkan device:", mnnpy._core.backend_description("vulkan"))
        return 0
    import onnxruntime as ort
    import torch
    cuda = torch.cuda.is_available()
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = False  # float32 arithmetic, as ours
        torch.backends.cudnn.allow_tf32 = False
        torch.zeros(1, device="cuda")  # the context holds the GPU's clocks up for both sides (bench_gpu.py)
    print("vulkan:", mnnpy._core.backend_description("vulkan"))
    print(f"torch {torch.__version__}: {torch.cuda.get_device_name() if cuda else 'no CUDA device'}")
    print(f"{'model':10} {'batch':>5} {'ours ms':>9} {'torch ms':>9} {'ours/torch':>10} {'torch+copies':>12} "
          f"{'ours/that':>9} {'rel.err':>9}")
    runtime = nn.create_runtime_manager(({"backend": "VULKAN", "precision": args.precision},))
    for name in args.models:
        for batch in args.batches:
            path, tmodel, feeds = model_and_feeds(name, batch, args.seq)
            module = nn.load_module_from_file(path, list(feeds), [], runtime_manager=runtime)
            inputs = list(feeds.values())

            def ours_run():
                out = module.forward(inputs)
                return (out[0] if isinstance(out, (list, tuple)) else out).read()
            ours_out = ours_run()
            ours = median_time(ours_run, args.repeats, 1)
            device = mnnpy._core.executor_stats()["last_device_seconds"]  # of the last run
            reference = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
            error = float(np.max(np.abs(ours_out - reference)) / np.max(np.abs(reference)))
            theirs = theirs_with_copies = float("nan")
            if cuda:
                tmodel = tmodel.cuda()
                on_gpu = [torch.from_numpy(v).cuda() for v in feeds.values()]
                with torch.inference_mode():
                    theirs = torch_seconds(torch, "cuda", lambda: tmodel(*on_gpu), args.repeats)
                    theirs_with_copies = median_time(
                        lambda: tmodel(*[torch.from_numpy(v).cuda() for v in feeds.values()]).cpu(), args.repeats, 1)
                tmodel.cpu()
                torch.cuda.empty_cache()
            print(f"{name:10} {batch:5d} {ours * 1e3:9.2f} {theirs * 1e3:9.2f} {ours / theirs:10.2f} "
                  f"{theirs_with_copies * 1e3:12.2f} {ours / theirs_with_copies:9.2f} {error:9.1e}")
            print(f"    a run: {ours * 1e3:.2f} ms, of it {device * 1e3:.2f} ms device time (its stretches' timestamps)")
            summarize(profile_rows(module, inputs), ours)
            del module
            mnnpy.expr.gc()
    return 0


if __name__ == "__main__":
    sys.exit(main())
