"""Convolution and pooling training cost, side by side with PyTorch CPU: per layer, one forward and
backward pass (output, and the gradients of the weights, the bias and, except for a network's first
layer, of the input) for the layers of ResNet-18 at batch 8 on 112x112 inputs and of the digits CNN
at batch 64 on 8x8 inputs.

mnnpy plans the forward and gradient graph once (``_core.PlannedGraph``) and reruns it; PyTorch runs
the layer and ``backward`` with the same output gradient. Each thread count runs in its own process
(both libraries set to N threads). Ratio = mnnpy time / PyTorch time (below 1: mnnpy is faster).

    python benchmarks/bench_conv_backward.py [--threads 1 2] [--only TEXT]
"""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import machine_summary, run_in_children, timed_bursts  # noqa: E402

# (name, kind, batch, C_in, C_out, size, kernel, stride, pad, bias, activation, input needs a gradient)
LAYERS = [
    ("resnet18 stem 7x7 s2 3->64", "conv", 8, 3, 64, 112, 7, 2, 3, False, "none", False),
    ("resnet18 maxpool 3x3 s2", "maxpool", 8, 64, 64, 56, 3, 2, 1, False, "none", True),
    ("resnet18 3x3 s1 64ch 28x28", "conv", 8, 64, 64, 28, 3, 1, 1, False, "none", True),
    ("resnet18 3x3 s2 64->128", "conv", 8, 64, 128, 28, 3, 2, 1, False, "none", True),
    ("resnet18 1x1 s2 downsample", "conv", 8, 64, 128, 28, 1, 2, 0, False, "none", True),
    ("resnet18 3x3 512ch 4x4", "conv", 8, 512, 512, 4, 3, 1, 1, False, "none", True),
    ("resnet18 avgpool 4x4", "avgpool", 8, 512, 512, 4, 4, 4, 0, False, "none", True),
    ("digits 1->32 3x3 relu", "conv", 64, 1, 32, 8, 3, 1, 1, True, "relu", False),
    ("digits 32->64 3x3 relu", "conv", 64, 32, 64, 8, 3, 1, 1, True, "relu", True),
    ("digits maxpool 2", "maxpool", 64, 64, 64, 8, 2, 2, 0, False, "none", True),
]


def build_case(layer, rng):
    """(mnnpy step, torch step, check) for one layer."""
    import numpy as np
    import torch
    import torch.nn.functional as F

    import mnnpy.expr as ex
    from mnnpy import _core
    from mnnpy._expr_conv import ACT_NONE, ACT_RELU, _conv2d_nchw
    from mnnpy._expr_pool import _avg_pool_nchw, _max_pool_nchw

    name, kind, n, cin, cout, size, k, s, p, bias, act, input_grad = layer
    x = rng.standard_normal((n, cin, size, size)).astype(np.float32)
    xp = ex.placeholder([n, cin, size, size])
    xp.write(x)
    xt = torch.tensor(x, requires_grad=input_grad)
    params, params_t = [], []
    if kind == "conv":
        w = (rng.standard_normal((cout, cin, k, k)) / np.sqrt(cin * k * k)).astype(np.float32)
        wp = ex.placeholder(list(w.shape))
        wp.write(w)
        wt = torch.tensor(w, requires_grad=True)
        params, params_t = [wp], [wt]
        bp = bt = None
        if bias:
            b = rng.standard_normal(cout).astype(np.float32)
            bp = ex.placeholder([cout])
            bp.write(b)
            bt = torch.tensor(b, requires_grad=True)
            params.append(bp)
            params_t.append(bt)
        y = _conv2d_nchw(xp, wp, bp, (s, s), (p, p, p, p), (1, 1), 1, ACT_RELU if act == "relu" else ACT_NONE)

        def torch_forward():
            out = F.conv2d(xt, wt, bt, s, p)
            return F.relu(out) if act == "relu" else out
    elif kind == "maxpool":
        y = _max_pool_nchw(xp, (k, k), (s, s), (p, p, p, p))

        def torch_forward():
            return F.max_pool2d(xt, k, s, p)
    else:
        y = _avg_pool_nchw(xp, (k, k), (s, s), (p, p, p, p))

        def torch_forward():
            return F.avg_pool2d(xt, k, s, p)
    gy = rng.standard_normal(tuple(y.shape)).astype(np.float32)
    wrt = ([xp] if input_grad else []) + params
    grads = ex.grad([y], wrt, [_core.const(gy, None, "NCHW")])
    plan = _core.PlannedGraph([y] + grads)
    gy_t = torch.tensor(gy)

    def ours():
        return plan.run()

    def reference():
        for t in params_t + ([xt] if input_grad else []):
            t.grad = None
        out = torch_forward()
        out.backward(gy_t)
        return [out.detach()] + ([xt.grad] if input_grad else []) + [t.grad for t in params_t]

    def check():
        got = [np.asarray(v.read()) for v in ours()]
        want = [t.numpy() for t in reference()]
        for a, b in zip(got, want):
            err = float(np.abs(a - b).max() / (np.abs(b).max() + 1e-6))
            if err > 1e-3:
                raise AssertionError(f"{name}: mnnpy and PyTorch differ (relative error {err:.2e})")
    return ours, reference, check


def measure_child(threads, only, burst):
    import numpy as np
    import torch

    import mnnpy
    mnnpy.set_num_threads(threads)
    torch.set_num_threads(threads)
    rng = np.random.default_rng(0)
    rows = []
    for layer in LAYERS:
        if only and only not in layer[0]:
            continue
        ours, reference, check = build_case(layer, rng)
        check()
        t_ours, t_ref = [], []
        for _ in range(5):
            timed_bursts([(ours, t_ours), (reference, t_ref)], warmup=0.05, burst=burst)
        rows.append([layer[0], statistics.median(t_ours), statistics.median(t_ref)])
    print(json.dumps(rows))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--only", default="", help="run only layers whose name contains this")
    parser.add_argument("--burst", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        measure_child(args.threads[0], args.only, args.burst)
        return
    results = run_in_children(__file__, args.threads, ["--only", args.only, "--burst", args.burst])
    print(f"== conv/pool forward + backward vs PyTorch CPU ({machine_summary()})")
    print("   ratio = mnnpy time / PyTorch time (below 1: mnnpy is faster)")
    for threads in args.threads:
        for name, t_ours, t_ref in results[threads]:
            print(f"  {name:<30} {threads}T  mnnpy {t_ours * 1e3:8.3f} ms  torch {t_ref * 1e3:8.3f} ms"
                  f"  ratio {t_ours / t_ref:5.2f}")


if __name__ == "__main__":
    main()
