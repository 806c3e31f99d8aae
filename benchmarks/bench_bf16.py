"""precision="low" (bf16 products, docs/precision.md) against float32 in mnnpy: ResNet-50
(torchvision, random weights, 1x3x224x224) and BERT-base (transformers, random weights, sequence
128) loaded with precision_mode="low" and "normal", and one 1024 x 1024 x 1024 product (MatMul with
constant weights), at 1 thread and at all threads. Prints the bf16 path the CPU has ("amx",
"avx512_bf16" or "none": then "low" plans are the float32 ones and the ratios are about 1), and
per model the schemes its convolutions and products run at each precision (one profiled call).

Each thread count runs in its own process; float32 and bf16 runs are interleaved in bursts of
timed calls (timed_bursts in common.py), medians reported. ratio = float32 time / bf16 time
(above 1: bf16 is faster).

    python benchmarks/bench_bf16.py [--threads 1 16] [--models resnet50,bert_base,gemm] [--rounds 5]
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))  # model_zoo
from common import fmt_time, machine_summary, run_in_children, timed_bursts  # noqa: E402

SEQ = 128


def runners(model, threads):
    """(float32 run, bf16 run) callables for `model`."""
    import numpy as np

    import mnnpy
    from mnnpy import expr as F
    from mnnpy import nn

    mnnpy.set_num_threads(threads)
    rng = np.random.default_rng(0)
    if model == "gemm":
        a = rng.standard_normal((1024, 1024)).astype(np.float32)
        w = rng.standard_normal((1024, 1024)).astype(np.float32)
        x = F.placeholder(a.shape)
        x.write(a)
        y = F.matmul(x, F.const(w))

        def at(precision):
            def run():
                with mnnpy.precision(precision):
                    x.write(a)
                    y.read()
            return run
        return at("normal"), at("low")
    from model_zoo import export_torchvision, export_transformer
    if model == "resnet50":
        path = export_torchvision("resnet50", 224)
        feeds = {"input": rng.standard_normal((1, 3, 224, 224)).astype(np.float32)}
    else:
        path = export_transformer("bert", SEQ, small=False)
        feeds = {"input_ids": rng.integers(0, 1000, (1, SEQ)).astype(np.int64),
                 "attention_mask": np.ones((1, SEQ), np.int64)}
    inputs = list(feeds.values())
    normal = nn.load_module_from_file(path, list(feeds), [], precision_mode="normal")
    low = nn.load_module_from_file(path, list(feeds), [], precision_mode="low")
    return (lambda: normal.forward(inputs)), (lambda: low.forward(inputs))


def schemes(run):
    """"scheme x count" of the convolution and product steps of one profiled call of `run`."""
    from collections import Counter

    from mnnpy import _core
    _core.set_executor_option("profile", True)
    try:
        run()
        steps = _core.last_profile()
    finally:
        _core.set_executor_option("profile", False)
    counts = Counter(f"{p['op']}:{p['scheme']}" for p in steps
                     if p["op"] in ("Conv2D", "Conv2DBlocked", "MatMul") and p["scheme"])
    return ", ".join(f"{k} x{n}" for k, n in sorted(counts.items()))


def child(opts):
    import statistics

    import mnnpy
    from mnnpy import _core
    result = {"path": mnnpy.runtime_info()["bf16"], "plan_path": _core.bf16_path(), "models": {}}
    for model in opts.models.split(","):
        fp32, bf16 = runners(model, opts.threads)
        t_fp32, t_bf16 = [], []
        for _ in range(opts.rounds):
            timed_bursts(((fp32, t_fp32), (bf16, t_bf16)), pause=0.1)
        result["models"][model] = [statistics.median(t_fp32), statistics.median(t_bf16)]
        result.setdefault("schemes", {})[model] = [schemes(fp32), schemes(bf16)]
    print(json.dumps(result))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, nargs="+", default=[1, os.cpu_count() or 1])
    p.add_argument("--models", default="resnet50,bert_base,gemm")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--child", action="store_true")
    opts = p.parse_args()
    if opts.child:
        opts.threads = opts.threads[0]
        child(opts)
        return
    print(f"== precision='low' (bf16) vs float32 in mnnpy ({machine_summary()})")
    results = run_in_children(__file__, sorted(set(opts.threads)), ["--models", opts.models, "--rounds", opts.rounds])
    path = next(iter(results.values()))["path"]
    print(f"   bf16 path: {path}" + ("  (absent: precision='low' runs the float32 plans)" if path == "none" else ""))
    print("   ratio = float32 time / bf16 time (above 1: bf16 is faster)")
    for model in opts.models.split(","):
        for threads, r in results.items():
            t_fp32, t_bf16 = r["models"][model]
            print(f"  {model:<10} {threads:>3}T  float32 {fmt_time(t_fp32)}  bf16 {fmt_time(t_bf16)}  "
                  f"ratio {t_fp32 / t_bf16:5.2f}", flush=True)
        normal_schemes, low_schemes = next(iter(results.values()))["schemes"][model]
        print(f"  {'':<10} schemes float32: {normal_schemes}\n  {'':<10} schemes low:     {low_schemes}")


if __name__ == "__main__":
    main()
