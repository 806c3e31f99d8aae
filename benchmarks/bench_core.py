"""Core executor against NumPy: fused elementwise chains, reductions, small-op overhead and
the peak memory of a long elementwise chain. Run: python benchmarks/bench_core.py"""
import argparse
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import mnnpy  # noqa: E402
from mnnpy import expr as F  # noqa: E402

from common import NO_WORKING_DIRECTORY_ON_PATH, Table, compare  # noqa: E402


def speed(repeats):
    rng = np.random.default_rng(0)
    n = 4 * 1024 * 1024
    a_np, b_np, c_np = (rng.standard_normal(n, dtype=np.float32) for _ in range(3))
    a, b, c = F.const(a_np), F.const(b_np), F.const(c_np)
    m_np = a_np.reshape(1024, 4096)
    m = F.const(m_np)
    small_np = [rng.standard_normal(100, dtype=np.float32) for _ in range(2)]
    small = [F.const(x) for x in small_np]

    cases = [
        ("a*b+c (4M f32)", lambda: (a * b + c).numpy(), lambda: a_np * b_np + c_np),
        ("6-op chain (4M f32)", lambda: (F.tanh(a * b + c) * 0.5 - F.exp(-F.abs(a))).numpy(),
         lambda: np.tanh(a_np * b_np + c_np) * np.float32(0.5) - np.exp(-np.abs(a_np))),
        ("exp (4M f32)", lambda: F.exp(a).numpy(), lambda: np.exp(a_np)),
        ("sum all (4M f32)", lambda: F.reduce_sum(a).numpy(), lambda: a_np.sum()),
        ("sum last axis (1024x4096)", lambda: F.reduce_sum(m, axis=[1]).numpy(), lambda: m_np.sum(axis=1)),
        ("sum first axis (1024x4096)", lambda: F.reduce_sum(m, axis=[0]).numpy(), lambda: m_np.sum(axis=0)),
        ("argmax (4M f32)", lambda: F.argmax(a, None).numpy(), lambda: a_np.argmax()),
        ("max (4M f32)", lambda: F.reduce_max(a).numpy(), lambda: a_np.max()),
        ("overhead: a+b, 100 elements", lambda: (small[0] + small[1]).numpy(), lambda: small_np[0] + small_np[1]),
    ]
    table = Table("mnnpy core vs NumPy", "numpy")
    table.header()
    for threads in (1, 2):
        mnnpy.set_num_threads(threads)
        for name, ours, ref in cases:
            r = repeats * (20 if "overhead" in name else 1)
            t_ours, t_ref = compare(ours, ref, repeats=r)
            table.add(name, threads, t_ours, t_ref)
    return table


MEMORY_CHILD = r"""
import resource, sys, numpy as np
def rss_mb():
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith('VmRSS'):
                return int(line.split()[1]) / 1024
def peak_mb():
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith('VmHWM'):
                return int(line.split()[1]) / 1024
def reset_peak():
    with open('/proc/self/clear_refs', 'w') as f:
        f.write('5')
which = sys.argv[1]
n = 16 * 1024 * 1024  # 64 MB of float32 per input
rng = np.random.default_rng(0)
x_np, y_np = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
if which == 'mnnpy':
    import mnnpy
    from mnnpy import expr as F
    x, y = F.const(x_np), F.const(y_np)
    del x_np, y_np
    chain = lambda: F.sqrt(F.abs(F.sin(x * y + 1.0) * 2.0 - y) + 0.5) / (x + 1.0) * 3.0 - x
else:
    x, y = x_np, y_np
    chain = lambda: np.sqrt(np.abs(np.sin(x * y + 1.0) * 2.0 - y) + 0.5) / (x + 1.0) * 3.0 - x
base = rss_mb()
reset_peak()
out = chain()
if which == 'mnnpy':
    out = out.numpy()
print(base, peak_mb() - base)
"""


def memory():
    print("\n== peak memory of a 10-op elementwise chain on two 64 MB float32 inputs")
    print("   (growth above the inputs; the output itself is 64 MB)")
    for which in ("mnnpy", "numpy"):
        out = subprocess.run([sys.executable, "-c", NO_WORKING_DIRECTORY_ON_PATH + MEMORY_CHILD, which],
                             capture_output=True, text=True)
        if out.returncode != 0:
            print(out.stderr)
            continue
        base, growth = map(float, out.stdout.split())
        print(f"  {which:<6} inputs+runtime {base:7.1f} MB, growth during evaluation {growth:7.1f} MB "
              f"({growth / 64:.2f} x output)")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--repeats", type=int, default=15)
    p.add_argument("--skip-memory", action="store_true")
    args = p.parse_args()
    speed(args.repeats)
    if not args.skip_memory:
        memory()
