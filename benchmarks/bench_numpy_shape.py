"""mnnpy.numpy's manipulation and indexing functions against NumPy on >= 1M elements, at 1 and
2 threads, timed to a NumPy result (``.numpy()``), plus the per-call overhead on 100 elements.
Run: python benchmarks/bench_numpy_shape.py"""
import argparse
import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # NumPy's data movement is single-threaded anyway
import numpy  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import mnnpy  # noqa: E402
import mnnpy.numpy as mnp  # noqa: E402

from common import Table, compare  # noqa: E402


def cases(n_side):
    rng = numpy.random.default_rng(0)
    a = rng.standard_normal((n_side, n_side), dtype=numpy.float32)
    b = rng.standard_normal((n_side, n_side), dtype=numpy.float32)
    flat = a.ravel()
    rows = rng.integers(0, n_side, n_side)
    flat_idx = rng.integers(0, flat.size, flat.size)
    mask = a > 0.3
    sorted_ = numpy.sort(rng.standard_normal(flat.size // 4).astype(numpy.float64))
    keys = rng.standard_normal(flat.size).astype(numpy.float64)
    small = a[:10, :10].copy()
    va, vb, vflat, vsorted, vkeys, vmask, vsmall = (mnp.reshape(x, x.shape) for x in
                                                   (a, b, flat, sorted_, keys, mask, small))
    for v in (va, vb, vflat, vsorted, vkeys, vmask, vsmall):
        v.fix_as_const()
    m = mnp
    return [
        ("concatenate axis 0", lambda: m.concatenate([va, vb]).numpy(), lambda: numpy.concatenate([a, b])),
        ("concatenate axis 1", lambda: m.concatenate([va, vb], axis=1).numpy(),
         lambda: numpy.concatenate([a, b], axis=1)),
        ("stack axis 0", lambda: m.stack([va, vb]).numpy(), lambda: numpy.stack([a, b])),
        ("stack axis -1", lambda: m.stack([va, vb], axis=-1).numpy(), lambda: numpy.stack([a, b], axis=-1)),
        ("transpose + copy", lambda: m.transpose(va).numpy(), lambda: numpy.ascontiguousarray(a.T)),
        ("take rows (axis 0)", lambda: m.take(va, rows, axis=0).numpy(), lambda: numpy.take(a, rows, axis=0)),
        ("a[int_array] flat gather", lambda: vflat[flat_idx].numpy(), lambda: flat[flat_idx]),
        ("take flat (axis None)", lambda: m.take(va, flat_idx).numpy(), lambda: numpy.take(a, flat_idx)),
        ("a[bool_mask]", lambda: va[vmask].numpy(), lambda: a[mask]),
        ("where(mask, a, b)", lambda: m.where(vmask, va, vb).numpy(), lambda: numpy.where(mask, a, b)),
        ("where(a > 0, a, 0)", lambda: m.where(va > 0, va, 0).numpy(), lambda: numpy.where(a > 0, a, 0)),
        ("pad 2 constant", lambda: m.pad(va, 2).numpy(), lambda: numpy.pad(a, 2)),
        ("pad 2 reflect", lambda: m.pad(va, 2, "reflect").numpy(), lambda: numpy.pad(a, 2, "reflect")),
        ("pad 2 edge", lambda: m.pad(va, 2, "edge").numpy(), lambda: numpy.pad(a, 2, "edge")),
        ("repeat 2 axis 1", lambda: m.repeat(va, 2, axis=1).numpy(), lambda: numpy.repeat(a, 2, axis=1)),
        ("tile (2, 2)", lambda: m.tile(va, (2, 2)).numpy(), lambda: numpy.tile(a, (2, 2))),
        ("searchsorted 1M keys in 256K", lambda: m.searchsorted(vsorted, vkeys).numpy(),
         lambda: numpy.searchsorted(sorted_, keys)),
        ("nonzero", lambda: [x.numpy() for x in m.nonzero(vmask)], lambda: numpy.nonzero(mask)),
        ("small: concatenate 100", lambda: m.concatenate([vsmall, vsmall]).numpy(),
         lambda: numpy.concatenate([small, small])),
        ("small: take 100", lambda: m.take(vsmall, [1, 2, 3], axis=1).numpy(), lambda: numpy.take(small, [1, 2, 3], 1)),
        ("small: pad 100", lambda: m.pad(vsmall, 1).numpy(), lambda: numpy.pad(small, 1)),
        ("small: where 100", lambda: m.where(vsmall > 0, vsmall, 0).numpy(), lambda: numpy.where(small > 0, small, 0)),
    ]


def check(ours, ref):
    o, r = ours(), ref()
    if isinstance(r, tuple):
        for x, y in zip(o, r):
            numpy.testing.assert_array_equal(x, y)
    else:
        numpy.testing.assert_array_equal(o, r)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--side", type=int, default=1024, help="arrays are side x side float32 (default 1M)")
    parser.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--only", default="", help="run only cases whose name contains this")
    args = parser.parse_args()
    table = Table(f"mnnpy.numpy shape/indexing vs NumPy ({args.side}x{args.side} float32)", "numpy")
    table.header()
    work = [c for c in cases(args.side) if args.only in c[0]]
    for threads in args.threads:
        mnnpy.set_num_threads(threads)
        for name, ours, ref in work:
            check(ours, ref)
            t_ours, t_ref = compare(ours, ref, repeats=args.repeats, min_time=0.5)
            table.add(name, threads, t_ours, t_ref)


if __name__ == "__main__":
    main()
