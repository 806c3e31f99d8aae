"""Block-sparse against dense: mnnpy's block-sparse scheme (docs/sparse.md) against its own dense
kernels (the GEMM schemes) on the same pruned float32 weights, for MobileNetV2's 1x1 convolutions
(NCHW Conv2D, and Conv2DBlocked in the blocked channel layout that converted models use) and a
transformer's linear layer, at 50/75/90% sparsity in 1x4 and 4x4 blocks, 1 and 2 threads.

Both run as plans built once (x fed through a placeholder, the result returned as a NumPy array),
interleaved in bursts; the table gives medians and the speed-up dense time / sparse time (above 1:
block-sparse is faster).

    python benchmarks/bench_sparse.py [--threads 1 2] [--sparsity 0.5 0.75 0.9] [--only linear]
"""
import argparse
import statistics

from common import machine_summary, timed_bursts


# name, kind, input shape, output channels (or features)
CASES = [
    ("mbv2 1x1 144->24 @56", "conv", (1, 144, 56, 56), 24),
    ("mbv2 1x1 384->64 @14", "conv", (1, 384, 14, 14), 64),
    ("mbv2 1x1 960->160 @7", "conv", (1, 960, 7, 7), 160),
    ("blocked 1x1 144->24 @56", "blocked", (1, 144, 56, 56), 24),
    ("blocked 1x1 384->64 @14", "blocked", (1, 384, 14, 14), 64),
    ("blocked 1x1 960->160 @7", "blocked", (1, 960, 7, 7), 160),
    ("linear 128x768->3072", "linear", (128, 768), 3072),
]


def build(kind, shape, w, b):
    """(placeholder, output Var) of one layer with constant weight w [N, K] and bias b."""
    import mnnpy.expr as F
    from mnnpy._expr_conv import _conv2d_nchw
    from mnnpy._expr_layout import _conv2d_blocked, _from_blocked, _to_blocked
    x = F.placeholder(shape)
    if kind == "linear":
        return x, F.matmul(x, F.const(w), transposeB=True) + F.const(b)
    w4 = w.reshape(w.shape[0], w.shape[1], 1, 1)
    if kind == "conv":
        return x, _conv2d_nchw(x, F.const(w4), F.const(b), (1, 1), (0, 0, 0, 0), (1, 1), 1)
    return x, _from_blocked(_conv2d_blocked(_to_blocked(x), F.const(w4), F.const(b), (1, 1), (0, 0, 0, 0), (1, 1), 1))


def planned(kind, shape, w, b):
    from mnnpy import _core
    x, y = build(kind, shape, w, b)
    return _core.PlannedGraph([y], [x])  # planned now, under the settings in force


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--sparsity", type=float, nargs="+", default=[0.5, 0.75, 0.9])
    parser.add_argument("--blocks", nargs="+", default=["1x4", "4x4"])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", default="", help="run only cases whose name contains this")
    args = parser.parse_args()
    import numpy as np

    import mnnpy
    import mnnpy.expr as F

    print(f"block-sparse vs dense, float32, mnnpy's own kernels ({machine_summary()})")
    print("speed-up = dense time / block-sparse time (above 1: sparse is faster)\n")
    header = f"{'layer':<26} {'block':>5} {'sparsity':>8}" + "".join(
        f" | {t}T {'dense ms':>8} {'sparse ms':>9} {'speed-up':>8}" for t in args.threads)
    print(header)
    print("-" * len(header))
    blocks = [tuple(int(v) for v in s.split("x")) for s in args.blocks]
    for name, kind, shape, n in CASES:
        if args.only and args.only not in name:
            continue
        k = shape[1]
        rng = np.random.default_rng(k * n)
        x = rng.standard_normal(shape).astype(np.float32)
        dense_w = (rng.standard_normal((n, k)) / np.sqrt(k)).astype(np.float32)
        b = rng.standard_normal(n).astype(np.float32)
        for block in blocks:
            for sparsity in args.sparsity:
                w = F.prune_blocks(dense_w, sparsity, block)
                with F.block_sparse(threshold=None):
                    dense = planned(kind, shape, w, b)
                with F.block_sparse(threshold=0.0, block=block):
                    sparse = planned(kind, shape, w, b)
                expected = x.reshape(-1, k) @ w.T if kind == "linear" else None
                got_dense, got_sparse = dense.run([x])[0].read(), sparse.run([x])[0].read()
                scale = float(np.abs(got_dense).max())
                assert np.abs(got_dense - got_sparse).max() <= 1e-4 * scale, name
                if expected is not None:
                    assert np.abs(got_dense - expected - b).max() <= 1e-4 * scale, name
                line = f"{name:<26} {block[0]}x{block[1]:<3} {sparsity:>8.2f}"
                for threads in args.threads:
                    mnnpy.set_num_threads(threads)
                    t_dense, t_sparse = [], []
                    for _ in range(args.repeats):
                        timed_bursts(((lambda: dense.run([x]), t_dense), (lambda: sparse.run([x]), t_sparse)))
                    td, ts = statistics.median(t_dense), statistics.median(t_sparse)
                    line += f" | {threads}T {td * 1e3:>8.3f} {ts * 1e3:>9.3f} {td / ts:>8.2f}"
                print(line, flush=True)
                del dense, sparse


if __name__ == "__main__":
    main()
