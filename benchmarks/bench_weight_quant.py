"""Block-quantized weights (WeightQuantMatMul) against float32: y = x W^T for the GEMV of LLM
decoding (1 x 4096 x 4096, 1 x 4096 x 11008) and 16 rows, with int4 and int8 weights (blocks of
32 along K, symmetric) times float32 activations, and the same weights times activations
quantized to int8 at run time (``int8_activations=True``, columns "int4/a8" and "int8/a8"),
mnnpy's float32 MatMul with the same constant weights (packed at plan time), and NumPy's
OpenBLAS SGEMV/SGEMM as a reference; 1 and 2 threads.

Each thread count runs in its own process with OPENBLAS_NUM_THREADS set before NumPy is imported;
the four runs are interleaved in bursts of timed calls (timed_bursts in common.py), medians of
several repeats. Ratios are float32 time / quantized time (above 1: the quantized product is
faster) and the effective weight bandwidth (bytes of weights read per second).

    python benchmarks/bench_weight_quant.py [--threads 1 2] [--repeats 5] [--block 32]
"""
import argparse
import json

from common import machine_summary, run_in_children, timed_bursts

SHAPES = [(1, 4096, 4096), (1, 4096, 11008), (16, 4096, 4096)]  # (M, K, N)


def measure_child(threads, repeats, block, pause):
    import statistics

    import numpy as np

    import mnnpy
    from mnnpy import expr as F

    mnnpy.set_num_threads(threads)
    rows = []
    for m, k, n in SHAPES:
        rng = np.random.default_rng(k + n)
        w = (rng.standard_normal((n, k)) * 0.02).astype(np.float32)
        wt = np.ascontiguousarray(w.T)  # (K, N): the layout NumPy and MatMul multiply
        x = rng.standard_normal((m, k)).astype(np.float32)
        px = F.placeholder((m, k), dtype=np.float32)
        px.write(x)
        runs = {"float32": F.matmul(px, F.const(wt))}
        sizes = {"float32": w.nbytes}
        for bits in (4, 8):
            q = F.quantize_weight_blocks(w, bits=bits, block=block)
            dequantized = x @ F.dequantize_weight_blocks(q).T
            # int8 activations: each value moves by up to half a step of max|x| / 127 per 32.
            for name, int8_activations, limit in ((f"int{bits}", False, 1e-4), (f"int{bits}/a8", True, 2e-2)):
                runs[name] = F.weight_quant_matmul(px, q, int8_activations=int8_activations)
                sizes[name] = q.nbytes
                got = np.asarray(runs[name].read())
                err = np.abs(got - dequantized).max() / np.abs(dequantized).max()
                assert err < limit, f"{name} {m}x{k}x{n}: relative error {err}"
        times = {name: [] for name in list(runs) + ["numpy"]}
        calls = [(v.read, times[name]) for name, v in runs.items()] + [(lambda: x @ wt, times["numpy"])]
        for _ in range(repeats):
            timed_bursts(calls, pause)
        rows.append({"shape": [m, k, n], "bytes": sizes, **{name: statistics.median(t) for name, t in times.items()}})
    print(json.dumps({"rows": rows, "summary": machine_summary(), "numpy": np.__version__}))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--block", type=int, default=32)
    parser.add_argument("--pause", type=float, default=0.2, help="seconds of idle time before each burst (threads > 1)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        measure_child(args.threads[0], args.repeats, args.block, args.pause if args.threads[0] > 1 else 0.0)
        return
    results = run_in_children(__file__, args.threads, ["--repeats", args.repeats, "--block", args.block,
                                                       "--pause", args.pause])
    first = results[args.threads[0]]
    print(f"{first['summary']}; NumPy {first['numpy']} (OpenBLAS); blocks of {args.block}, symmetric")
    quantized = ["int8", "int4", "int8/a8", "int4/a8"]
    print(f"\n{'threads':>7} {'M x K x N':>17} {'float32':>9} " + " ".join(f"{q:>9}" for q in quantized) +
          f" {'numpy':>9} " + " ".join(f"{'f32/' + q:>11}" for q in quantized) + f" {'int4/a8 GB/s':>12} {'f32 GB/s':>8}")
    for threads in args.threads:
        for r in results[threads]["rows"]:
            m, k, n = r["shape"]
            print(f"{threads:>7} {f'{m}x{k}x{n}':>17} {r['float32'] * 1e3:>7.2f}ms " +
                  " ".join(f"{r[q] * 1e3:>7.2f}ms" for q in quantized) + f" {r['numpy'] * 1e3:>7.2f}ms " +
                  " ".join(f"{r['float32'] / r[q]:>11.2f}" for q in quantized) +
                  f" {r['bytes']['int4/a8'] / r['int4/a8'] / 1e9:>12.2f} {r['bytes']['float32'] / r['float32'] / 1e9:>8.2f}")


if __name__ == "__main__":
    main()
