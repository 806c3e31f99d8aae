"""float32 Conv2D: mnnpy against PyTorch (torch.nn.functional.conv2d + the same activation) on
ResNet-50-like and MobileNetV2-like layers, batch 1, 1 and 2 threads.

Each thread count runs in its own process (torch.set_num_threads and mnnpy.set_num_threads to the
same count). Ours and torch's run interleaved, in bursts of timed calls after untimed warm-up;
the table gives medians, the ratio ours/torch (time; below 1 is faster) and GFLOP/s of both.
Our time includes the whole evaluation of the expression (x fed through a placeholder, result
read back as a NumPy array); torch's includes the activation as a separate op, as a model runs it.

    python benchmarks/bench_conv.py [--threads 1 2] [--repeats 5] [--only depthwise]
"""
import argparse
import json

from common import run_in_children, timed_bursts


# name, C, H(=W), Cout, k, stride, pad, group, activation (0 none, 1 relu, 2 relu6)
LAYERS = [
    ("resnet conv1 7x7/2 3->64 @224", 3, 224, 64, 7, 2, 3, 1, 1),
    ("resnet 1x1 256->64 @56", 256, 56, 64, 1, 1, 0, 1, 1),
    ("resnet 3x3 64->64 @56", 64, 56, 64, 3, 1, 1, 1, 1),
    ("resnet 1x1 64->256 @56", 64, 56, 256, 1, 1, 0, 1, 0),
    ("resnet 3x3/2 128->128 @56", 128, 56, 128, 3, 2, 1, 1, 1),
    ("resnet 3x3 256->256 @14", 256, 14, 256, 3, 1, 1, 1, 1),
    ("resnet 3x3 512->512 @7", 512, 7, 512, 3, 1, 1, 1, 1),
    ("resnet50 1x1 2048->512 @7", 2048, 7, 512, 1, 1, 0, 1, 1),
    ("mbv2 pw 1x1 576->96 @14", 576, 14, 96, 1, 1, 0, 1, 0),
    ("mbv2 pw 1x1 960->160 @7", 960, 7, 160, 1, 1, 0, 1, 0),
    ("mbv2 pw 1x1 320->1280 @7", 320, 7, 1280, 1, 1, 0, 1, 2),
    ("mbv2 conv 3x3/2 3->32 @224", 3, 224, 32, 3, 2, 1, 1, 2),
    ("mbv2 dw 3x3 32 @112", 32, 112, 32, 3, 1, 1, 32, 2),
    ("mbv2 pw 1x1 32->192 @112", 32, 112, 192, 1, 1, 0, 1, 2),
    ("mbv2 dw 3x3/2 96 @112", 96, 112, 96, 3, 2, 1, 96, 2),
    ("mbv2 dw 3x3 144 @56", 144, 56, 144, 3, 1, 1, 144, 2),
    ("mbv2 pw 1x1 144->24 @56", 144, 56, 24, 1, 1, 0, 1, 0),
    ("mbv2 dw 3x3 960 @7", 960, 7, 960, 3, 1, 1, 960, 2),
    ("mbv3 dw 5x5/2 72 @56", 72, 56, 72, 5, 2, 2, 72, 1),
]


def measure_child(threads, repeats, burst, warmup, pause, only):
    import statistics

    import numpy as np
    import torch

    import mnnpy
    from mnnpy import expr as F
    from mnnpy._expr_conv import _conv2d_nchw

    mnnpy.set_num_threads(threads)
    torch.set_num_threads(threads)
    rows = []
    for name, c, h, cout, k, stride, pad, group, act in LAYERS:
        if only and only not in name:
            continue
        rng = np.random.default_rng(c * h + cout)
        x = rng.standard_normal((1, c, h, h)).astype(np.float32)
        w = (rng.standard_normal((cout, c // group, k, k)) / np.sqrt(c // group * k * k)).astype(np.float32)
        b = rng.standard_normal(cout).astype(np.float32)
        # A placeholder input is never cached, so every read() recomputes the convolution.
        xv = F.placeholder(x.shape)
        xv.write(x)
        y = _conv2d_nchw(xv, F.const(w), F.const(b), (stride, stride), (pad,) * 4, (1, 1), group, act,
                         clip_min=0.0, clip_max=6.0)
        xt, wt, bt = torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b)
        post = {0: lambda t: t, 1: torch.relu, 2: lambda t: torch.clamp(t, 0.0, 6.0)}[act]

        def reference():
            with torch.no_grad():
                return post(torch.nn.functional.conv2d(xt, wt, bt, stride, pad, 1, group))

        err = np.abs(y.read() - reference().numpy()).max()
        assert err < 1e-3, f"{name}: mismatch {err}"
        ours, theirs = [], []
        for _ in range(repeats):
            timed_bursts(((y.read, ours), (reference, theirs)), pause, warmup, burst)
        ho = (h + 2 * pad - k) // stride + 1
        flops = 2.0 * cout * (c // group) * k * k * ho * ho
        rows.append({"name": name, "ours": statistics.median(ours), "torch": statistics.median(theirs),
                     "flops": flops})
    print(json.dumps({"rows": rows, "torch": torch.__version__, "isa": mnnpy.runtime_info()["isa"]}))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--burst", type=int, default=5, help="timed calls in a row per burst, at least")
    parser.add_argument("--warmup", type=float, default=0.1, help="seconds of untimed calls before each burst")
    parser.add_argument("--pause", type=float, default=0.05, help="idle seconds before each burst (threads > 1)")
    parser.add_argument("--only", default="", help="run only layers whose name contains this")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        measure_child(args.threads[0], args.repeats, args.burst, args.warmup,
                      args.pause if args.threads[0] > 1 else 0.0, args.only)
        return
    try:
        import torch  # noqa: F401
    except ImportError:
        print("bench_conv: PyTorch is not installed; nothing to compare against.")
        return

    results = run_in_children(__file__, args.threads, ["--repeats", args.repeats, "--burst", args.burst, "--warmup",
                                                       args.warmup, "--pause", args.pause, "--only", args.only])

    first = results[args.threads[0]]
    print(f"mnnpy Conv2D (kernels: {first['isa']}) vs torch {first['torch']} conv2d, batch 1, float32")
    print("ratio = mnnpy time / torch time (below 1: mnnpy is faster)\n")
    header = f"{'layer':<32}" + "".join(
        f" | {t}T {'ours ms':>8} {'torch ms':>8} {'ratio':>5} {'GF/s':>6}" for t in args.threads)
    print(header)
    print("-" * len(header))
    names = [r["name"] for r in first["rows"]]
    totals = {t: [0.0, 0.0] for t in args.threads}
    for i, name in enumerate(names):
        line = f"{name:<32}"
        for t in args.threads:
            r = results[t]["rows"][i]
            totals[t][0] += r["ours"]
            totals[t][1] += r["torch"]
            line += (f" | {t}T {r['ours'] * 1e3:>8.3f} {r['torch'] * 1e3:>8.3f} {r['ours'] / r['torch']:>5.2f} "
                     f"{r['flops'] / r['ours'] / 1e9:>6.1f}")
        print(line)
    line = f"{'sum of layers':<32}"
    for t in args.threads:
        ours, theirs = totals[t]
        line += f" | {t}T {ours * 1e3:>8.3f} {theirs * 1e3:>8.3f} {ours / theirs:>5.2f} {'':>6}"
    print(line)


if __name__ == "__main__":
    main()
