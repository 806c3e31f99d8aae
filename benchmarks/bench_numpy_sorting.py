"""mnnpy.numpy sorting and set functions against NumPy: sort, argsort, unique (with and without
counts) and isin on 1M random values of float32, float64, int32 and int64, at 1 and 2 threads,
and the fixed cost on 100 values. Times are to a NumPy result (``.numpy()``).
Run: python benchmarks/bench_numpy_sorting.py"""
import argparse
import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import mnnpy  # noqa: E402
import mnnpy.numpy as mp  # noqa: E402
from mnnpy import expr as F  # noqa: E402

from common import Table, compare  # noqa: E402


def data(dtype, n, rng):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(n).astype(dtype)
    return rng.integers(-(10 ** 9), 10 ** 9, n).astype(dtype)


def check(ours, ref):
    o, r = ours(), ref()
    if isinstance(r, tuple):
        for a, b in zip(o, r):
            np.testing.assert_array_equal(a, b)
    else:
        np.testing.assert_array_equal(o, r)


def cases(n, rng, dtypes):
    out = []
    for dtype in dtypes:
        a = data(dtype, n, rng)
        # isin: a quarter of the elements drawn from the test values
        test = np.concatenate([rng.choice(a, n // 10), data(dtype, n // 10, rng)])
        v, vt = F.const(a), F.const(test)
        label = f"{np.dtype(dtype).name} {n}"
        out += [
            (f"sort {label}", lambda v=v: mp.sort(v).numpy(), lambda a=a: np.sort(a)),
            (f"argsort stable {label}", lambda v=v: mp.argsort(v, kind="stable").numpy(),
             lambda a=a: np.argsort(a, kind="stable")),
            (f"argsort {label}", lambda v=v: mp.argsort(v).numpy(), lambda a=a: np.argsort(a), "values"),
            (f"unique {label}", lambda v=v: mp.unique(v).numpy(), lambda a=a: np.unique(a)),
            (f"unique counts {label}", lambda v=v: tuple(x.numpy() for x in mp.unique(v, return_counts=True)),
             lambda a=a: np.unique(a, return_counts=True)),
            (f"isin {label} in {2 * (n // 10)}", lambda v=v, vt=vt: mp.isin(v, vt).numpy(),
             lambda a=a, t=test: np.isin(a, t)),
        ]
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--n", type=int, default=1 << 20)
    parser.add_argument("--dtypes", nargs="*", default=["float32", "float64", "int32", "int64"])
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    big = cases(args.n, rng, args.dtypes)
    small = cases(100, rng, ["float32", "int64"])
    table = Table(f"mnnpy.numpy sorting vs NumPy {np.__version__}", "numpy")
    table.header()
    for threads in args.threads:
        mnnpy.set_num_threads(threads)
        for name, ours, ref, *how in big + small:
            if how:  # NumPy's default argsort orders ties arbitrarily: compare the sorted values
                a = ours.__defaults__[0].numpy()
                np.testing.assert_array_equal(a[ours()], a[ref()])
            else:
                check(ours, ref)
            t_ours, t_ref = compare(ours, ref, repeats=args.repeats)
            table.add(name, threads, t_ours, t_ref)


if __name__ == "__main__":
    main()
