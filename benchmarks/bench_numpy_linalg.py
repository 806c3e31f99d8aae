"""mnnpy.numpy products, linalg and random against NumPy (OpenBLAS/LAPACK), time to a NumPy
result. Each thread count runs in its own process with OPENBLAS_NUM_THREADS set to match.
Timed in bursts: OpenBLAS's workers spin for a while after each call, so timing the two libraries
call by call would charge that spinning to whichever runs next; with 2 threads each burst follows
a short idle pause (as in bench_matmul.py).
Run: python benchmarks/bench_numpy_linalg.py [--threads 1 2] [--repeats 9] [--only TEXT]"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from common import Table, run_in_children, timed_bursts  # noqa: E402


def cases():
    import mnnpy.numpy as mnp
    from mnnpy import _core
    rng = np.random.default_rng(0)
    const = lambda a: _core.const(a, None, "NCHW")  # noqa: E731
    m32 = rng.standard_normal((1024, 1024), dtype=np.float32)
    n32 = rng.standard_normal((1024, 1024), dtype=np.float32)
    m64, n64 = m32.astype(np.float64), n32.astype(np.float64)
    b1 = rng.standard_normal((64, 128, 128), dtype=np.float32)
    b2 = rng.standard_normal((64, 128, 128), dtype=np.float32)
    big = rng.standard_normal((1024, 1024))
    v1 = rng.standard_normal(1 << 20)
    v2 = rng.standard_normal(1 << 20)
    sq = rng.standard_normal((256, 256)) + 16 * np.eye(256)
    rhs = rng.standard_normal((256, 16))
    small = rng.standard_normal((10000, 4, 4)) + 4 * np.eye(4)
    tiny = rng.standard_normal((10, 10))
    c = {k: const(v) for k, v in dict(m32=m32, n32=n32, m64=m64, n64=n64, b1=b1, b2=b2, big=big, v1=v1, v2=v2,
                                      sq=sq, rhs=rhs, small=small, tiny=tiny).items()}
    g_ours, g_ref = mnp.random.default_rng(1), np.random.default_rng(1)
    return [
        ("matmul 1024^2 float32", lambda: mnp.matmul(c["m32"], c["n32"]).numpy(), lambda: m32 @ n32),
        ("matmul 1024^2 float64", lambda: mnp.matmul(c["m64"], c["n64"]).numpy(), lambda: m64 @ n64),
        ("batched matmul 64x128^2 f32", lambda: mnp.matmul(c["b1"], c["b2"]).numpy(), lambda: b1 @ b2),
        ("einsum ij,jk->ik 1024^2 f32", lambda: mnp.einsum("ij,jk->ik", c["m32"], c["n32"]).numpy(),
         lambda: np.einsum("ij,jk->ik", m32, n32, optimize=True)),
        ("einsum bij,bjk->bik f32", lambda: mnp.einsum("bij,bjk->bik", c["b1"], c["b2"]).numpy(),
         lambda: np.einsum("bij,bjk->bik", b1, b2, optimize=True)),
        ("einsum ij->j 1024^2 f64", lambda: mnp.einsum("ij->j", c["big"]).numpy(), lambda: np.einsum("ij->j", big)),
        ("dot 1M float64", lambda: mnp.dot(c["v1"], c["v2"]).numpy(), lambda: np.dot(v1, v2)),
        ("inv 256x256", lambda: mnp.linalg.inv(c["sq"]).numpy(), lambda: np.linalg.inv(sq)),
        ("solve 256x256, 16 rhs", lambda: mnp.linalg.solve(c["sq"], c["rhs"]).numpy(),
         lambda: np.linalg.solve(sq, rhs)),
        ("det 256x256", lambda: mnp.linalg.det(c["sq"]).numpy(), lambda: np.linalg.det(sq)),
        ("inv 10000x4x4", lambda: mnp.linalg.inv(c["small"]).numpy(), lambda: np.linalg.inv(small)),
        ("det 10000x4x4", lambda: mnp.linalg.det(c["small"]).numpy(), lambda: np.linalg.det(small)),
        ("solve 10000x4x4 vectors", lambda: mnp.linalg.solve(c["small"], c["small"][..., 0:1]).numpy(),
         lambda: np.linalg.solve(small, small[..., 0:1])),
        ("randn 1M (legacy)", lambda: mnp.random.randn(1 << 20).numpy(), lambda: np.random.randn(1 << 20)),
        ("uniform 1M (legacy)", lambda: mnp.random.uniform(-1, 1, 1 << 20).numpy(),
         lambda: np.random.uniform(-1, 1, 1 << 20)),
        ("Generator.standard_normal 1M", lambda: g_ours.standard_normal(1 << 20).numpy(),
         lambda: g_ref.standard_normal(1 << 20)),
        ("Generator.random 1M", lambda: g_ours.random(1 << 20).numpy(), lambda: g_ref.random(1 << 20)),
        ("small: matmul 10x10", lambda: mnp.matmul(c["tiny"], c["tiny"]).numpy(), lambda: tiny @ tiny),
        ("small: inv 10x10", lambda: mnp.linalg.inv(c["tiny"]).numpy(), lambda: np.linalg.inv(tiny)),
        ("small: randn 100", lambda: mnp.random.randn(100).numpy(), lambda: np.random.randn(100)),
    ]


def child(threads, repeats, only):
    import statistics

    import mnnpy
    mnnpy.set_num_threads(threads)
    pause = 0.2 if threads > 1 else 0.0
    results = {}
    for name, ours, ref in cases():
        if only and only not in name:
            continue
        t_ours, t_ref = [], []
        for _ in range(repeats):
            timed_bursts(((ours, t_ours), (ref, t_ref)), pause, warmup=0.05)
        results[name] = (statistics.median(t_ours), statistics.median(t_ref))
    print(json.dumps(results))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--only", default="", help="run only the cases whose name contains this text")
    parser.add_argument("--child", action="store_true")
    args = parser.parse_args()
    if args.child:
        child(args.threads[0], args.repeats, args.only)
        return
    table = Table("mnnpy.numpy products, linalg and random vs NumPy", "numpy")
    table.header()
    results = run_in_children(__file__, args.threads, ["--repeats", args.repeats, "--only", args.only])
    for threads in args.threads:
        for name, (t_ours, t_ref) in results[threads].items():
            table.add(name, threads, t_ours, t_ref)


if __name__ == "__main__":
    main()
