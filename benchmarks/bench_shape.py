"""Data movement against NumPy: transposes, concatenation, slicing, broadcasting, padding,
gathers and slice assignment on 4M float32 values. NumPy's side makes the same contiguous
result (np.ascontiguousarray of its view). Run: python benchmarks/bench_shape.py"""
import argparse
import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # no idle BLAS threads competing for the 2 cores
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import mnnpy  # noqa: E402
from mnnpy import expr as F  # noqa: E402

from common import Table, compare  # noqa: E402


def numpy_assign(x, index, value):
    y = x.copy()
    y[index] = value
    return y


def mnnpy_assign(v, index, value):
    w = F.reshape(v, v.shape)  # a new Var object: the assignment rebinds it, not v
    w[index] = value
    return w.numpy()


def cases():
    rng = np.random.default_rng(0)
    sq = rng.standard_normal((2048, 2048), dtype=np.float32)
    nchw = rng.standard_normal((16, 64, 64, 64), dtype=np.float32)
    rgb = rng.standard_normal((8, 512, 341, 3), dtype=np.float32)
    half = rng.standard_normal((1024, 2048), dtype=np.float32)
    col = rng.standard_normal((2048, 1), dtype=np.float32)
    rows = rng.integers(0, 2048, 2048)
    v_sq, v_nchw, v_rgb, v_half, v_col = (F.const(a) for a in (sq, nchw, rgb, half, col))
    c = np.ascontiguousarray
    return [
        ("transpose 2048x2048", lambda: F.transpose(v_sq).numpy(), lambda: c(sq.T)),
        ("NCHW->NHWC 16x64x64x64", lambda: F.transpose(v_nchw, [0, 2, 3, 1]).numpy(),
         lambda: c(nchw.transpose(0, 2, 3, 1))),
        ("NHWC->NCHW 8x512x341x3", lambda: F.transpose(v_rgb, [0, 3, 1, 2]).numpy(),
         lambda: c(rgb.transpose(0, 3, 1, 2))),
        ("swap last two 16x64x(64x64)", lambda: F.transpose(v_nchw, [0, 1, 3, 2]).numpy(),
         lambda: c(nchw.transpose(0, 1, 3, 2))),
        ("concat axis 0 (2x 1024x2048)", lambda: F.concat([v_half, v_half], 0).numpy(),
         lambda: np.concatenate([half, half], 0)),
        ("concat axis 1 (2x 1024x2048)", lambda: F.concat([v_half, v_half], 1).numpy(),
         lambda: np.concatenate([half, half], 1)),
        ("slice [1:-1, 1:-1] 2048x2048", lambda: v_sq[1:-1, 1:-1].numpy(), lambda: c(sq[1:-1, 1:-1])),
        ("slice [:, ::2] 2048x2048", lambda: v_sq[:, ::2].numpy(), lambda: c(sq[:, ::2])),
        ("reverse [::-1, ::-1] 2048x2048", lambda: v_sq[::-1, ::-1].numpy(), lambda: c(sq[::-1, ::-1])),
        ("broadcast_to 2048x1 -> 2048x2048", lambda: F.broadcast_to(v_col, [2048, 2048]).numpy(),
         lambda: c(np.broadcast_to(col, (2048, 2048)))),
        ("pad 1 (constant) 2048x2048", lambda: F.pad(v_sq, 1).numpy(), lambda: np.pad(sq, 1)),
        ("pad 1 (reflect) 2048x2048", lambda: F.pad(v_sq, 1, "REFLECT").numpy(), lambda: np.pad(sq, 1, "reflect")),
        ("gather 2048 rows of 2048x2048", lambda: v_sq[rows].numpy(), lambda: sq[rows]),
        ("x[::2] = 0 (copy + assign)", lambda: mnnpy_assign(v_sq, slice(None, None, 2), 0.0),
         lambda: numpy_assign(sq, slice(None, None, 2), 0.0)),
        ("x[rows] = 1 (copy + assign)", lambda: mnnpy_assign(v_sq, rows, 1.0), lambda: numpy_assign(sq, rows, 1.0)),
        ("x[x > 1] = 0 (copy + select)", lambda: mnnpy_assign(v_sq, v_sq > 1.0, 0.0),
         lambda: numpy_assign(sq, sq > 1.0, 0.0)),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    args = parser.parse_args()
    table = Table("mnnpy data movement vs NumPy (4M float32)", "numpy")
    table.header()
    work = cases()
    for threads in args.threads:
        mnnpy.set_num_threads(threads)
        for name, ours, ref in work:
            np.testing.assert_array_equal(ours(), ref())
            t_ours, t_ref = compare(ours, ref, repeats=args.repeats)
            table.add(name, threads, t_ours, t_ref)


if __name__ == "__main__":
    main()
