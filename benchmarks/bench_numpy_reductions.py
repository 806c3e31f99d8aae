"""mnnpy.numpy reductions against NumPy on 4M-element float32 and float64 arrays (2048x2048):
sum, mean, max, argmax, std over all axes and along the last axis, argmin along the last axis,
var and sum down the first axis, cumsum and median; and the
fixed cost on 100 elements. Times run to a NumPy result (``.numpy()``), so laziness is not free.
Run: python benchmarks/bench_numpy_reductions.py"""
import argparse
import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # NumPy's reductions are single-threaded anyway
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import mnnpy  # noqa: E402
import mnnpy.numpy as mnp  # noqa: E402
from mnnpy import _core  # noqa: E402

from common import Table, compare  # noqa: E402


def cases(n_side, small):
    rng = np.random.default_rng(0)
    work = []
    for dtype in ("float32", "float64"):
        a = rng.standard_normal((n_side, n_side)).astype(dtype)
        v = _core.const(a, None, "NCHW")
        tag = f"{dtype} {a.shape[0]}x{a.shape[1]}"
        for name in ("sum", "mean", "max", "argmax", "std"):
            ours_fn, ref_fn = getattr(mnp, name), getattr(np, name)
            work.append((f"{name} all {tag}", lambda f=ours_fn, v=v: f(v).numpy(), lambda f=ref_fn, a=a: f(a)))
            work.append((f"{name} axis=-1 {tag}", lambda f=ours_fn, v=v: f(v, axis=-1).numpy(),
                         lambda f=ref_fn, a=a: f(a, axis=-1)))
        work.append((f"sum axis=0 {tag}", lambda v=v: mnp.sum(v, axis=0).numpy(), lambda a=a: np.sum(a, axis=0)))
        work.append((f"argmin axis=-1 {tag}", lambda v=v: mnp.argmin(v, axis=-1).numpy(),
                     lambda a=a: np.argmin(a, axis=-1)))
        work.append((f"var ddof=1 axis=0 {tag}", lambda v=v: mnp.var(v, axis=0, ddof=1).numpy(),
                     lambda a=a: np.var(a, axis=0, ddof=1)))
        work.append((f"cumsum flat {tag}", lambda v=v: mnp.cumsum(v).numpy(), lambda a=a: np.cumsum(a)))
        work.append((f"cumsum axis=-1 {tag}", lambda v=v: mnp.cumsum(v, axis=-1).numpy(),
                     lambda a=a: np.cumsum(a, axis=-1)))
        work.append((f"median all {tag}", lambda v=v: mnp.median(v).numpy(), lambda a=a: np.median(a)))
        work.append((f"median axis=-1 {tag}", lambda v=v: mnp.median(v, axis=-1).numpy(),
                     lambda a=a: np.median(a, axis=-1)))
    s = rng.standard_normal(small).astype(np.float32)
    vs = _core.const(s, None, "NCHW")
    for name in ("sum", "mean", "max", "argmax", "std", "cumsum", "median"):
        ours_fn, ref_fn = getattr(mnp, name), getattr(np, name)
        work.append((f"{name} {small} float32 (overhead)", lambda f=ours_fn: f(vs).numpy(), lambda f=ref_fn: f(s)))
    return work


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--side", type=int, default=2048)
    parser.add_argument("--small", type=int, default=100)
    parser.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    args = parser.parse_args()
    table = Table(f"mnnpy.numpy reductions vs NumPy {np.__version__}", "numpy")
    table.header()
    work = cases(args.side, args.small)
    for threads in args.threads:
        mnnpy.set_num_threads(threads)
        for name, ours, ref in work:
            np.testing.assert_allclose(np.asarray(ours(), dtype=np.float64), np.asarray(ref(), dtype=np.float64),
                                       rtol=1e-3, atol=1e-2 * args.side)
            t_ours, t_ref = compare(ours, ref, repeats=args.repeats)
            table.add(name, threads, t_ours, t_ref)


if __name__ == "__main__":
    main()
