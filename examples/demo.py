"""mnnpy in one screen: lazy NumPy-style ops, shapes known at once, values on demand,
and the same expression timed against NumPy."""
import time

import numpy as np

import mnnpy
from mnnpy import expr as F


def best_of(fn, repeats=7):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]


def main():
    print("runtime:", mnnpy.runtime_info())
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal((1024, 4096), dtype=np.float32)
    b_np = rng.standard_normal((1024, 4096), dtype=np.float32)
    c_np = rng.standard_normal(4096, dtype=np.float32)
    a, b, c = F.const(a_np), F.const(b_np), F.const(c_np)

    # Building the graph computes nothing; shapes and dtypes are known at once.
    y = F.tanh(a * b + c) * 0.5 - F.exp(-F.abs(a))
    s = F.reduce_sum(y, axis=[1])
    m = F.argmax(y, axis=1)
    print("y:", y.shape, y.dtype, "op", y.op_type)
    print("row sums:", s.shape, s.dtype, " argmax:", m.shape, m.dtype)

    # Values are computed when asked for: one plan, fused into a single pass over the data.
    ys, ms = mnnpy.eval(s, m)
    ref = np.tanh(a_np * b_np + c_np) * 0.5 - np.exp(-np.abs(a_np))
    print("row sums[:4]:", ys[:4], " matches NumPy:", np.allclose(ys, ref.sum(axis=1), rtol=1e-4, atol=1e-3))
    print("argmax[:8]:", ms[:8], " matches NumPy:", bool((ms == ref.argmax(axis=1)).all()))

    def ours():
        return (F.tanh(a * b + c) * 0.5 - F.exp(-F.abs(a))).numpy()

    def numpys():
        return np.tanh(a_np * b_np + c_np) * 0.5 - np.exp(-np.abs(a_np))

    ours(), numpys()
    t_ours, t_np = best_of(ours), best_of(numpys)
    print(f"6-op chain on {a_np.size / 1e6:.1f}M floats: mnnpy {t_ours * 1e3:.1f} ms, NumPy {t_np * 1e3:.1f} ms "
          f"({t_np / t_ours:.1f}x faster, {mnnpy.get_num_threads()} threads)")


if __name__ == "__main__":
    main()
