"""WeightQuantMatMul (int4 and int8 block-quantized weights, float32 activations) on the Vulkan
backend, next to the same op on the CPU backend and to a float32 MatMul on Vulkan with the
dequantized weights, at the linear layers of Qwen2.5-0.5B: K = 896 with N = 896 (q, o), 128 (k,
v), 4864 (gate, up) and 151936 (the LM head), and K = 4864 with N = 896 (down); M = 1 (decoding a
token: memory bound) and M = 128 (a prompt's chunk). --quick: a few small shapes, for lavapipe.

Times are each step's own: the device's timestamps for the Vulkan steps, the host's for the CPU
step (the profile's `seconds`), medians of --repeats rounds after one warm-up, the three runs of a
shape interleaved round by round. Weights are constants (on the device once); x is a placeholder.
Columns: ratios cpu / vulkan and f32 / vulkan (above 1: the quantized Vulkan kernel is faster),
and at M = 1 the effective bandwidth, bytes the kernel must read (codes, scales, zero points, x)
and write per second, and the float MatMul's (its weights, x and y) likewise. "err" is the
largest difference between the Vulkan and CPU results relative to the largest |y|.

    python benchmarks/bench_gpu_weight_quant.py [--quick] [--repeats 7] [--block 32] [--asymmetric]

Tiles and splits of the prompt path: MNNPY_VULKAN_WEIGHT_QUANT_TILES="BM,BN,BK,TM,TN" and
MNNPY_VULKAN_WEIGHT_QUANT_SPLITS=S (set before running). Prints one line and exits 0 where this
machine has no Vulkan device.
"""
import argparse
import statistics
import sys

import numpy as np

import mnnpy  # noqa: E402
from mnnpy import expr as F  # noqa: E402

from common import machine_summary  # noqa: E402

FULL_SHAPES = [(896, 896), (896, 128), (896, 4864), (896, 151936), (4864, 896)]  # (K, N)
QUICK_SHAPES = [(128, 128), (128, 64), (128, 512), (512, 128)]


def step_seconds(y, op, backend):
    """One run of y on `backend`: (its `op` step's seconds, scheme, the value)."""
    mnnpy._core.set_executor_option("profile", True)
    try:
        with mnnpy.backend(backend):
            (value,) = mnnpy.eval(y)
    finally:
        mnnpy._core.set_executor_option("profile", False)
    rows = [r for r in mnnpy._core.last_profile() if r["op"] == op]
    if len(rows) != 1 or rows[0]["backend"] != backend:
        sys.exit(f"{op} ran on {[r['backend'] for r in rows]}, not on {backend}")
    return rows[0]["seconds"], rows[0]["scheme"], value


def measure(m, k, n, bits, block, symmetric, repeats):
    rng = np.random.default_rng(k * 7 + n + bits)
    w = (rng.standard_normal((n, k)) * 0.02).astype(np.float32)
    q = F.quantize_weight_blocks(w, bits=bits, block=block, symmetric=symmetric)
    wd = F.dequantize_weight_blocks(q)
    del w
    x = F.placeholder([m, k])
    x.write(rng.standard_normal((m, k)).astype(np.float32))
    quantized = F.weight_quant_matmul(x, q)
    dense = F.matmul(x, F.const(wd), transposeB=True)
    del wd
    runs = {"vulkan": (quantized, "WeightQuantMatMul", "vulkan"), "cpu": (quantized, "WeightQuantMatMul", "cpu"),
            "f32": (dense, "MatMul", "vulkan")}
    times = {name: [] for name in runs}
    for round_ in range(repeats + 1):
        for name, (y, op, backend) in runs.items():
            seconds, scheme, value = step_seconds(y, op, backend)
            if round_ == 0:  # the warm-up: plans made, weights uploaded
                if name == "vulkan":
                    ours, our_scheme = value, scheme
                elif name == "cpu":
                    err = float(np.abs(ours - value).max() / max(np.abs(value).max(), 1e-30))
            else:
                times[name].append(seconds)
    medians = {name: statistics.median(t) for name, t in times.items()}
    read = q.nbytes + 4 * m * (k + n)
    return medians, our_scheme, err, read, 4 * (n * k + m * (k + n))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small shapes and M = 1, 32, for lavapipe")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--block", type=int, default=32, choices=[32, 64, 128])
    parser.add_argument("--asymmetric", action="store_true", help="zero point per block")
    args = parser.parse_args()
    if "vulkan" not in mnnpy.runtime_info()["backends"]:
        print("no Vulkan device:", mnnpy._core.backend_description("vulkan"))
        return 0
    shapes = QUICK_SHAPES if args.quick else FULL_SHAPES
    rows = (1, 32) if args.quick else (1, 128)
    print("vulkan:", mnnpy._core.backend_description("vulkan"))
    print(f"cpu: {machine_summary()}, {mnnpy.get_num_threads()} threads")
    print(f"blocks of {args.block}, {'asymmetric' if args.asymmetric else 'symmetric'}; ratios above 1: the "
          "quantized Vulkan kernel is faster")
    print(f"{'bits':>4} {'M':>4} {'K':>5} {'N':>7} {'vulkan ms':>10} {'cpu ms':>9} {'f32 ms':>9} {'cpu/vk':>7} "
          f"{'f32/vk':>7} {'vk GB/s':>8} {'f32 GB/s':>9} {'err':>8}  scheme")
    for bits in (4, 8):
        for m in rows:
            for k, n in shapes:
                t, scheme, err, q_bytes, f_bytes = measure(m, k, n, bits, args.block, not args.asymmetric,
                                                           args.repeats)
                bandwidth = (f"{q_bytes / t['vulkan'] / 1e9:8.1f} {f_bytes / t['f32'] / 1e9:9.1f}" if m == 1
                             else f"{'-':>8} {'-':>9}")
                print(f"{bits:4d} {m:4d} {k:5d} {n:7d} {t['vulkan'] * 1e3:10.4f} {t['cpu'] * 1e3:9.4f} "
                      f"{t['f32'] * 1e3:9.4f} {t['cpu'] / t['vulkan']:7.2f} {t['f32'] / t['vulkan']:7.2f} "
                      f"{bandwidth} {err:8.1e}  {scheme}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
