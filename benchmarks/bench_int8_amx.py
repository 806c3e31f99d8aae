"""The int8 GEMM's AMX-INT8 path (TDPBUSD tiles, docs/int8.md) against its VNNI path and against
onnxruntime's MatMulInteger, side by side in one process.

1. Self-check, every run: MatMulInteger with the AMX path taking every size, on shapes with every
   edge (rows, depths and columns off the 16 x 64 x 16 tiles and 32 x 32 blocks, depths under
   64, int8 and uint8 operands, zero points, sums that wrap past int32), equals NumPy's int64
   product wrapped to int32 and the VNNI path's result, bit for bit. It prints
   "self-check: N products: AMX == NumPy int64 == VNNI" or stops at the first difference. On a
   CPU without AMX-INT8 it says so and stops.
2. Products at BERT-base (sequence 128) and resnet50 im2col sizes (M x K x N): AMX time / VNNI
   time (the switch mnnpy._core.set_int8_amx between calls) and AMX time / onnxruntime time
   (7-bit B, which every onnxruntime kernel multiplies exactly).
3. The smallest sizes worth AMX (the defaults amx_min_rows, amx_min_depth): AMX / VNNI over
   small M and K at N = 768.

Ratios below 1: AMX is faster. Run: python benchmarks/bench_int8_amx.py [--threads 1,16]
[--skip-sweep] [--skip-ort]"""
import argparse
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import compare_in_bursts, fmt_time, machine_summary  # noqa: E402
from bench_int8 import matmul_integer_onnx, ort_session, planned  # noqa: E402

SHAPES = [(128, 768, 768), (128, 768, 3072), (128, 3072, 768),  # BERT-base, sequence 128
          (12544, 147, 64), (3136, 576, 64), (3136, 64, 256), (784, 1152, 128), (49, 4608, 512)]  # resnet50
SELF_CHECK = [(16, 64, 16), (16, 3, 5), (1, 64, 1), (17, 65, 17), (31, 127, 33), (32, 128, 32), (33, 64, 47),
              (100, 1029, 65), (77, 4096, 130), (20, 70000, 3)]


def set_amx(on, min_rows=None, min_depth=None):
    import mnnpy
    info = mnnpy._core.int8_gemm_info()
    mnnpy._core.set_int8_amx(on, info["amx_min_rows"] if min_rows is None else min_rows,
                             info["amx_min_depth"] if min_depth is None else min_depth)


def self_check():
    import mnnpy
    import mnnpy.expr as F
    rng = np.random.default_rng(0)
    count = 0
    defaults = mnnpy._core.set_int8_amx(True, 1, 1)
    try:
        for M, K, N in SELF_CHECK:
            for a_dtype in (np.uint8, np.int8):
                for b_dtype in (np.int8, np.uint8):
                    ai, bi = np.iinfo(a_dtype), np.iinfo(b_dtype)
                    a = rng.integers(ai.min, ai.max + 1, (M, K)).astype(a_dtype)
                    b = rng.integers(bi.min, bi.max + 1, (K, N)).astype(b_dtype)
                    if K == 70000:  # sums past int32's range
                        a[:] = ai.max if a_dtype == np.uint8 else ai.min
                        b[:] = bi.max if a_dtype == np.uint8 else bi.min
                    za = rng.integers(ai.min, ai.max + 1, (M,)).astype(a_dtype)
                    zb = rng.integers(bi.min, bi.max + 1, (N,)).astype(b_dtype)
                    a64 = a.astype(np.int64) - za.astype(np.int64)[:, None]
                    expected = (a64 @ (b.astype(np.int64) - zb.astype(np.int64))).astype(np.int32)
                    results = {}
                    for on in (True, False):
                        mnnpy._core.set_int8_amx(on, 1, 1)
                        assert mnnpy._core.int8_gemm_info()["path"] == ("amx" if on else "vnni")
                        results[on] = F.matmul_integer(a, F.const(b), za, zb).read()
                    for name, got in (("AMX", results[True]), ("VNNI", results[False])):
                        if not np.array_equal(got, expected):
                            where = np.argwhere(got != expected)[0]
                            raise SystemExit(f"self-check FAILED: {name} at {tuple(where)} of {M}x{K}x{N} "
                                             f"{np.dtype(a_dtype).name} x {np.dtype(b_dtype).name}: "
                                             f"{got[tuple(where)]} != NumPy {expected[tuple(where)]}")
                    count += 1
    finally:
        mnnpy._core.set_int8_amx(*defaults)
    print(f"self-check: {count} products: AMX == NumPy int64 == VNNI", flush=True)


def bench_shapes(threads_list, with_ort, tmp):
    import mnnpy
    import mnnpy.expr as F
    rng = np.random.default_rng(0)
    print(f"\n== int8 products, AMX against VNNI{' and onnxruntime' if with_ort else ''} ({machine_summary()})")
    for M, K, N in SHAPES:
        a = rng.integers(0, 256, (M, K)).astype(np.uint8)
        b = rng.integers(-64, 64, (K, N)).astype(np.int8)
        xa = F.placeholder((M, K), dtype=np.uint8)
        module = planned([xa], [F.matmul_integer(xa, F.const(b), np.uint8(128))])
        expected = (a.astype(np.int64) - 128) @ b.astype(np.int64)
        if with_ort:
            path = os.path.join(tmp, f"mmi_{M}_{K}_{N}.onnx")
            matmul_integer_onnx(path, b, M, K, N)
        for threads in threads_list:
            mnnpy.set_num_threads(threads)
            for on in (True, False):
                set_amx(on)
                assert (np.asarray(module(a)) == expected).all()
            amx = lambda: (set_amx(True), module(a))  # noqa: E731
            vnni = lambda: (set_amx(False), module(a))  # noqa: E731
            t_amx, t_vnni = compare_in_bursts(amx, vnni)
            line = (f"  {M}x{K}x{N:<5} {threads:>2}T  AMX {fmt_time(t_amx)} ({2 * M * K * N / t_amx / 1e9:7.1f} Gop/s)"
                    f"  VNNI {fmt_time(t_vnni)}  AMX/VNNI {t_amx / t_vnni:5.2f}")
            if with_ort:
                sess = ort_session(path, threads)
                assert (sess.run(None, {"a": a})[0] == expected).all()
                _, t_ort = compare_in_bursts(amx, lambda: sess.run(None, {"a": a}))
                line += f"  onnxruntime {fmt_time(t_ort)}  AMX/onnxruntime {t_amx / t_ort:5.2f}"
            print(line, flush=True)
    set_amx(True)


def bench_sweep(threads_list):
    import mnnpy
    import mnnpy.expr as F
    rng = np.random.default_rng(1)
    N = 768
    print("\n== smallest sizes worth AMX: AMX time / VNNI time at N = 768 (rows M x depth K)")
    for threads in threads_list:
        mnnpy.set_num_threads(threads)
        for K in (16, 32, 64, 128, 768):
            b = rng.integers(-128, 128, (K, N)).astype(np.int8)
            cells = []
            for M in (1, 4, 8, 16, 32, 64):
                a = rng.integers(0, 256, (M, K)).astype(np.uint8)
                xa = F.placeholder((M, K), dtype=np.uint8)
                module = planned([xa], [F.matmul_integer(xa, F.const(b))])
                t_amx, t_vnni = compare_in_bursts(lambda: (set_amx(True, 1, 1), module(a)),
                                                  lambda: (set_amx(False), module(a)), pause=0.0)
                cells.append(f"M={M:<3}{t_amx / t_vnni:5.2f}")
            print(f"  {threads:>2}T K={K:<4} " + "  ".join(cells), flush=True)
    set_amx(True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", default=f"1,{os.cpu_count()}")
    parser.add_argument("--skip-sweep", action="store_true")
    parser.add_argument("--skip-ort", action="store_true")
    args = parser.parse_args()
    import mnnpy
    info = mnnpy._core.int8_gemm_info()
    if not info["amx_available"]:
        print(f"AMX-INT8 is not available here ({machine_summary()}): nothing to check or time.")
        return
    mnnpy.set_simd_target("AVX3_DL")
    self_check()
    threads_list = [int(t) for t in args.threads.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        bench_shapes(threads_list, not args.skip_ort, tmp)
    if not args.skip_sweep:
        bench_sweep(threads_list)


if __name__ == "__main__":
    main()
