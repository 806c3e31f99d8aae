"""mnnpy.numpy against NumPy on elementwise work: a fused chain, exp/log/tanh, comparisons with
a select, type conversion, and the fixed cost per call on small arrays. Each case is timed to a
NumPy result (mnnpy's lazy value is computed inside the timing). NumPy has no threads for
elementwise work, so its 1T and 2T columns are the same code.
Run: python benchmarks/bench_numpy_elementwise.py [--size N] [--only TEXT]"""
import argparse
import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import mnnpy  # noqa: E402
import mnnpy.numpy as mp  # noqa: E402

from common import Table, compare  # noqa: E402


def cases(n):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(n, dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    pos = np.abs(a) + 0.5
    ints = rng.integers(-1000, 1000, n).astype(np.int32)
    va, vb, vpos, vints = (mp.asarray(x) for x in (a, b, pos, ints))
    small = a[:100].copy()
    vsmall = mp.asarray(small)
    return [
        ("chain a*b+sqrt(|a|)-1", lambda: np.asarray(va * vb + mp.sqrt(mp.abs(va)) - 1.0),
         lambda: a * b + np.sqrt(np.abs(a)) - 1.0),
        ("a+1", lambda: np.asarray(va + 1), lambda: a + 1),
        ("a+1+2 (two ops, one in cache)", lambda: np.asarray(va + 1 + 2), lambda: a + 1 + 2),
        ("exp(a)+1", lambda: np.asarray(mp.exp(va) + 1), lambda: np.exp(a) + 1),
        ("exp", lambda: np.asarray(mp.exp(va)), lambda: np.exp(a)),
        ("log", lambda: np.asarray(mp.log(vpos)), lambda: np.log(pos)),
        ("tanh", lambda: np.asarray(mp.tanh(va)), lambda: np.tanh(a)),
        ("where(a>b, a, b*2)", lambda: np.asarray(mp.where(va > vb, va, vb * 2)) if hasattr(mp, "where") else None,
         lambda: np.where(a > b, a, b * 2)),
        ("clip(a, -1, 1)", lambda: np.asarray(mp.clip(va, -1, 1)), lambda: np.clip(a, -1, 1)),
        ("int32 -> float32 * 0.5", lambda: np.asarray(vints.astype(np.float32) * 0.5),
         lambda: ints.astype(np.float32) * 0.5),
        ("small (100): a*2+1", lambda: np.asarray(vsmall * 2 + 1), lambda: small * 2 + 1),
        ("small (100): exp", lambda: np.asarray(mp.exp(vsmall)), lambda: np.exp(small)),
    ]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=4_000_000)
    parser.add_argument("--only", default="", help="run only cases whose name contains this")
    args = parser.parse_args()
    table = Table(f"mnnpy.numpy elementwise, {args.size} float32 values", "numpy")
    table.header()
    for threads in (1, 2):
        mnnpy.set_num_threads(threads)
        for name, ours, reference in cases(args.size):
            if args.only not in name:
                continue
            t_ours, t_ref = compare(ours, reference, repeats=15, min_time=0.5)
            table.add(name, threads, t_ours, t_ref)


if __name__ == "__main__":
    main()
