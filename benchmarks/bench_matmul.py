"""float32 matmul: mnnpy's GEMM against NumPy's BLAS (OpenBLAS), square sizes, 1 and 2 threads.

Each thread count runs in its own process with OPENBLAS_NUM_THREADS set before NumPy is
imported (and mnnpy.set_num_threads to the same count); ours and NumPy's run interleaved there,
in bursts of timed calls (at least 50 ms of them), each burst after 0.2 s of untimed warm-up
calls. With several threads each burst also follows a pause: OpenBLAS's workers spin for about
0.1 s after every call, which would otherwise take cores from our measurement, and threads woken
after a pause take a while to be spread over the cores again; so both are measured steady.
The table gives medians of several repeats, the ratio ours/numpy (time; below 1 is faster),
GFLOP/s of both, and our share of NumPy's peak GFLOP/s (the best NumPy reached at that thread
count over the sizes measured).

    python benchmarks/bench_matmul.py [--sizes 256 512 1024 2048] [--repeats 5] [--threads 1 2]
"""
import argparse
import json

from common import run_in_children, timed_bursts


def measure_child(threads, sizes, repeats, pause, burst, warmup):
    """Runs in a process whose BLAS thread count was fixed by the environment."""
    import statistics

    import numpy as np

    import mnnpy
    from mnnpy import _core
    from mnnpy import expr as F

    mnnpy.set_num_threads(threads)
    rows = []
    for n in sizes:
        rng = np.random.default_rng(n)
        a = rng.standard_normal((n, n)).astype(np.float32)
        b = rng.standard_normal((n, n)).astype(np.float32)
        # Placeholders: their values are never cached, so every read() recomputes the product.
        pa = F.placeholder((n, n), dtype=np.float32)
        pb = F.placeholder((n, n), dtype=np.float32)
        pa.write(a)
        pb.write(b)
        product = F.matmul(pa, pb)
        ref = a @ b
        err = np.linalg.norm(product.read() - ref) / np.linalg.norm(ref)
        assert err < 1e-5, f"mismatch at n={n}: relative error {err}"
        count = repeats if n < 2048 else max(3, (repeats + 1) // 2)
        ours, theirs = [], []
        for _ in range(count):
            timed_bursts(((product.read, ours), (lambda: np.matmul(a, b), theirs)), pause, warmup, burst)
        rows.append({"n": n, "ours": statistics.median(ours), "numpy": statistics.median(theirs)})
    info = _core.gemm_info()
    print(json.dumps({"rows": rows, "target": info["target"], "tile": info["float32"], "numpy": np.__version__}))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024, 2048])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--pause", type=float, default=0.2, help="seconds of idle time before each burst (threads > 1)")
    parser.add_argument("--warmup", type=float, default=0.2, help="seconds of untimed calls before each burst")
    parser.add_argument("--burst", type=int, default=3, help="timed calls in a row per burst, at least")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        measure_child(args.threads[0], args.sizes, args.repeats, args.pause if args.threads[0] > 1 else 0.0,
                      args.burst, args.warmup)
        return

    results = run_in_children(__file__, args.threads, ["--repeats", args.repeats, "--pause", args.pause, "--burst",
                                                       args.burst, "--warmup", args.warmup, "--sizes", *args.sizes])

    first = results[args.threads[0]]
    print(f"mnnpy GEMM: target {first['target']}, float32 micro-kernel {first['tile']['mr']}x{first['tile']['nr']}; "
          f"NumPy {first['numpy']} (OpenBLAS)")
    print(f"\n{'threads':>7} {'size':>5} {'ours ms':>9} {'numpy ms':>9} {'ours/numpy':>10} "
          f"{'ours GF/s':>9} {'numpy GF/s':>10} {'% numpy peak':>12}")
    summary = []
    for threads in args.threads:
        rows = results[threads]["rows"]
        gflops = lambda n, t: 2.0 * n ** 3 / t / 1e9  # noqa: E731
        peak = max(gflops(r["n"], r["numpy"]) for r in rows)
        for r in rows:
            g_ours, g_np = gflops(r["n"], r["ours"]), gflops(r["n"], r["numpy"])
            print(f"{threads:>7} {r['n']:>5} {r['ours'] * 1e3:>9.2f} {r['numpy'] * 1e3:>9.2f} "
                  f"{r['ours'] / r['numpy']:>10.2f} {g_ours:>9.1f} {g_np:>10.1f} {100 * g_ours / peak:>11.0f}%")
        big = max(rows, key=lambda r: r["n"])
        summary.append(f"{big['n']}x{big['n']}x{big['n']} float32, {threads} thread(s): "
                       f"mnnpy {gflops(big['n'], big['ours']):.1f} GFLOP/s, numpy {gflops(big['n'], big['numpy']):.1f} "
                       f"GFLOP/s (numpy peak {peak:.1f})")
    print()
    print("\n".join(summary))


if __name__ == "__main__":
    main()
