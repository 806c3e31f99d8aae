"""The Vulkan backend next to torch in the same run (CUDA where torch sees a GPU, else torch's
CPU): memory bandwidth of an elementwise chain and of a reduction over 64M floats (--quick: 1M),
and float32 matmul (SGEMM) at square sizes 1024, 2048 and 4096 (--quick: 128, for lavapipe), then
the same products at precision "low" (float16 operands: cooperative matrices where the device has
them) next to torch's float16 matmul.

Bandwidth: our kernels' device times come from the backend's timestamps (the profile gives
each step's device time), torch's from CUDA events around repeated calls; each side's bytes
are what its kernel must move (a*b+c: three reads and a write; torch runs it as one addcmul).

A product's time is the device's own (the profile's timestamps for the MatMul step), torch's
by CUDA events; each is the median of several runs after a warm-up. The table also gives one
product end to end (operands in, result out) and the per-run overhead: the time of a tiny
elementwise chain.

    python benchmarks/bench_gpu.py [--quick] [--sizes 1024 2048 4096] [--repeats 5]

Tile sizes of the shader: MNNPY_VULKAN_MATMUL_TILES="BM,BN,BK,TM,TN", and K's splits:
MNNPY_VULKAN_MATMUL_SPLITS=S (set before running).
Both sides run with torch's CUDA context open, which holds the GPU at its working clocks (without
it the driver lets them fall between Vulkan's runs).

Prints one line and exits 0 where this machine has no Vulkan device.
"""
import argparse
import statistics
import sys
import time

import numpy as np

import mnnpy  # noqa: E402
from mnnpy import expr as F  # noqa: E402


def median_time(run, repeats, warmup):
    for _ in range(warmup):
        run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def operands(n):
    rng = np.random.default_rng(n)
    # b scaled by 1/sqrt(n) keeps the chained products' magnitudes near those of x.
    return (rng.standard_normal((n, n), dtype=np.float32),
            (rng.standard_normal((n, n), dtype=np.float32) / np.sqrt(n)).astype(np.float32))


def vulkan_chain(x, b):
    """Chains x @ b @ b ... of `length` products on the Vulkan backend, from placeholders, so that
    every read() runs the plan (operands in, result out)."""
    px, pb = F.placeholder(x.shape, dtype=np.float32), F.placeholder(b.shape, dtype=np.float32)
    px.write(x)
    pb.write(b)

    def make_chain(length):
        c = px
        for _ in range(length):
            c = F.matmul(c, pb)
        return c.read
    return make_chain


def check_product(x, b):
    """One product on the Vulkan backend: its relative error, and that MatMul ran there."""
    mnnpy._core.set_executor_option("profile", True)
    try:
        (ours,) = mnnpy.eval(F.matmul(F.const(x), F.const(b)))
    finally:
        mnnpy._core.set_executor_option("profile", False)
    backends = {row["backend"] for row in mnnpy._core.last_profile() if row["op"] == "MatMul"}
    if backends != {"vulkan"}:
        sys.exit(f"MatMul ran on {sorted(backends)}, not on vulkan")
    expected = x.astype(np.float64) @ b
    return np.linalg.norm(ours - expected) / np.linalg.norm(expected)


def submit_overhead(repeats, warmup):
    """Seconds of a run of a tiny elementwise chain: submission, synchronization, small copies."""
    x = F.placeholder((16,), dtype=np.float32)
    x.write(np.linspace(-1, 1, 16, dtype=np.float32))
    y = F.relu(x * x + x)
    return median_time(y.read, repeats, warmup)


def device_seconds(build, op_prefix, repeats):
    """The median device time of the step whose op starts with op_prefix, over `repeats` runs of
    build() with profiling on (each step handed over and timed by the device alone)."""
    mnnpy._core.set_executor_option("profile", True)
    try:
        times = []
        for _ in range(repeats + 1):
            mnnpy.eval(*build())
            rows = [r for r in mnnpy._core.last_profile() if r["op"].startswith(op_prefix)]
            if not rows or rows[0]["backend"] != "vulkan":
                sys.exit(f"{op_prefix} ran on {[r['backend'] for r in rows]}, not on vulkan")
            times.append(rows[0]["seconds"])
    finally:
        mnnpy._core.set_executor_option("profile", False)
    return statistics.median(times[1:])


def torch_seconds(torch, device, run, repeats):
    """Median seconds of run() on torch: CUDA events on a GPU, the host clock otherwise."""
    run()
    if device != "cuda":
        return median_time(run, repeats, 1)
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1e-3)
    return statistics.median(times)


def bandwidth_rows(torch, device, n, repeats):
    """(case, our GB/s, torch's GB/s) for a*b+c and for sums along rows of n floats."""
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(n, dtype=np.float32) for _ in range(3))
    rows = []
    # A GPU raises its clocks under load: the first case would otherwise run slower than the rest.
    warm_up_until = time.perf_counter() + 2.0
    while time.perf_counter() < warm_up_until:
        mnnpy.eval(F.const(a) + F.const(b))
    ours = device_seconds(lambda: [F.const(a) + F.const(b)], "Fused", repeats)
    theirs = None
    if torch:
        ta, tb = (torch.from_numpy(v).to(device) for v in (a, b))
        theirs = torch_seconds(torch, device, lambda: torch.add(ta, tb), repeats)
    rows.append(("a+b", 12 * n / ours / 1e9, 12 * n / theirs / 1e9 if theirs else None))
    ours = device_seconds(lambda: [F.const(a) * F.const(b) + F.const(c)], "Fused", repeats)
    theirs = None
    if torch:
        ta, tb, tc = (torch.from_numpy(v).to(device) for v in (a, b, c))
        theirs = torch_seconds(torch, device, lambda: torch.addcmul(tc, ta, tb), repeats)
    rows.append(("a*b+c", 16 * n / ours / 1e9, 16 * n / theirs / 1e9 if theirs else None))
    m = a.reshape(-1, 4096)
    ours = device_seconds(lambda: [F.reduce_sum(F.const(m), [1])], "Reduce", repeats)
    theirs = None
    if torch:
        tm = torch.from_numpy(m).to(device)
        theirs = torch_seconds(torch, device, lambda: tm.sum(dim=1), repeats)
    rows.append((f"sum of rows {m.shape}", 4 * n / ours / 1e9, 4 * n / theirs / 1e9 if theirs else None))
    return rows


def load_torch():
    try:
        import torch
    except ImportError:
        return None, None
    if torch.cuda.is_available():
        torch.backends.cuda.matmul.allow_tf32 = False  # float32 products, as ours
        # CUDA's context holds the GPU at its working clocks; without one, the driver lets them
        # fall between Vulkan's runs (an H100's SM clock read 345 MHz instead of 1980 after the
        # bandwidth loop), and ours would be timed on a slower device than torch's.
        torch.zeros(1, device="cuda")
        return torch, "cuda"
    return torch, "cpu"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="one small size, for lavapipe")
    parser.add_argument("--sizes", type=int, nargs="+")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args()
    if "vulkan" not in mnnpy.runtime_info()["backends"]:
        print("no Vulkan device:", mnnpy._core.backend_description("vulkan"))
        return 0
    sizes = args.sizes or ([128] if args.quick else [1024, 2048, 4096])
    torch, device = load_torch()
    mnnpy.set_backend("vulkan")
    print("vulkan:", mnnpy._core.backend_description("vulkan"))
    if torch:
        name = torch.cuda.get_device_name() if device == "cuda" else f"CPU, {torch.get_num_threads()} threads"
        print(f"torch {torch.__version__}: {name}")
    else:
        print("torch: not installed")
    print(f"per-run overhead (tiny elementwise chain): {submit_overhead(args.repeats * 4, args.warmup) * 1e3:.3f} ms")
    n = (1 << 20) if args.quick else (64 << 20)
    print(f"{'bandwidth, ' + str(n >> 20) + 'M floats':32} {'ours GB/s':>10} {'torch GB/s':>11} {'ours/torch':>11}")
    for case, ours, theirs in bandwidth_rows(torch, device, n, args.repeats):
        print(f"{case:32} {ours:10.1f} {theirs if theirs else float('nan'):11.1f} "
              f"{ours / theirs if theirs else float('nan'):11.2f}")
    print(f"{'n':>6} {'rel.err':>9} {'ours TFLOP/s':>13} {'torch TFLOP/s':>14} {'ours/torch':>11} {'ours end-to-end':>16}")
    for n in sizes:
        x, b = operands(n)
        error = check_product(x, b)
        flop = 2.0 * n ** 3
        make_ours = vulkan_chain(x, b)
        # The device's own time of the MatMul step (timestamps), and torch's by CUDA events.
        ours = device_seconds(lambda: [F.matmul(F.const(x), F.const(b))], "MatMul", args.repeats)
        end_to_end = median_time(make_ours(1), args.repeats, args.warmup)
        theirs = None
        if torch:
            tx, tb = torch.from_numpy(x).to(device), torch.from_numpy(b).to(device)
            theirs = torch_seconds(torch, device, lambda: tx @ tb, args.repeats)
        theirs_text = f"{flop / theirs / 1e12:14.4g}" if theirs else f"{'-':>14}"
        ratio_text = f"{theirs / ours:11.2f}" if theirs else f"{'-':>11}"
        print(f"{n:6d} {error:9.1e} {flop / ours / 1e12:13.4g} {theirs_text} {ratio_text} {end_to_end * 1e3:13.2f} ms")
    print("float16 operands, float32 sums (ours at precision \"low\": " + low_scheme(sizes[0]) + "; torch: float16 tensors)")
    print(f"{'n':>6} {'rel.err':>9} {'ours TFLOP/s':>13} {'torch TFLOP/s':>14} {'ours/torch':>11}")
    for n in sizes:
        x, b = operands(n)
        flop = 2.0 * n ** 3
        with mnnpy.precision("low"):
            error = check_product(x, b)
            ours = device_seconds(lambda: [F.matmul(F.const(x), F.const(b))], "MatMul", args.repeats)
        theirs = None
        if torch and device == "cuda":
            tx, tb = torch.from_numpy(x).to(device).half(), torch.from_numpy(b).to(device).half()
            theirs = torch_seconds(torch, device, lambda: tx @ tb, args.repeats)
        theirs_text = f"{flop / theirs / 1e12:14.4g}" if theirs else f"{'-':>14}"
        ratio_text = f"{theirs / ours:11.2f}" if theirs else f"{'-':>11}"
        print(f"{n:6d} {error:9.1e} {flop / ours / 1e12:13.4g} {theirs_text} {ratio_text}")
    return 0


def low_scheme(n):
    """The MatMul scheme an n x n product takes at precision "low" on this device."""
    x, b = operands(n)
    mnnpy._core.set_executor_option("profile", True)
    try:
        with mnnpy.precision("low"):
            mnnpy.eval(F.matmul(F.const(x), F.const(b)))
    finally:
        mnnpy._core.set_executor_option("profile", False)
    return next(r["scheme"] for r in mnnpy._core.last_profile() if r["op"] == "MatMul")


if __name__ == "__main__":
    sys.exit(main())
