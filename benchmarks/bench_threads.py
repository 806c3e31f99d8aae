"""Throughput of one model called from several Python threads at once (a server's thread pool)
against the same number of calls made one after another on one thread: mnnpy's module.forward
and onnxruntime's InferenceSession.run side by side, each engine at its default thread count
(the machine's cores), in alternating rounds, medians. Batch 1, seeded random weights.
Run: python benchmarks/bench_threads.py [--model resnet18] [--size 112] [--threads 2,4,8]"""
import argparse
import os
import statistics
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
sys.path.insert(0, os.path.dirname(__file__))
import mnnpy  # noqa: E402
from mnnpy import nn  # noqa: E402

from common import machine_summary  # noqa: E402
from model_zoo import export_torchvision  # noqa: E402


def sequential_rate(call, inputs):
    """Calls per second of `call` over `inputs`, one after another."""
    start = time.perf_counter()
    for x in inputs:
        call(x)
    return len(inputs) / (time.perf_counter() - start)


def concurrent_rate(call, inputs, threads):
    """Calls per second with `inputs` shared out over `threads` Python threads released together."""
    barrier = threading.Barrier(threads + 1)
    share = [inputs[i::threads] for i in range(threads)]

    def body(mine):
        barrier.wait()
        for x in mine:
            call(x)

    workers = [threading.Thread(target=body, args=(mine,)) for mine in share]
    for w in workers:
        w.start()
    barrier.wait()
    start = time.perf_counter()
    for w in workers:
        w.join()
    return len(inputs) / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet18")
    parser.add_argument("--size", type=int, default=112)
    parser.add_argument("--threads", default="2,4,8")
    parser.add_argument("--calls", type=int, default=48, help="calls per measurement")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    import onnxruntime as ort

    path = export_torchvision(args.model, args.size)
    module = nn.load_module_from_file(path, ["input"], ["output"])
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal((1, 3, args.size, args.size)).astype(np.float32) for _ in range(args.calls)]
    engines = {"mnnpy": lambda x: module.forward(x).numpy(),
               "onnxruntime": lambda x: session.run(None, {"input": x})[0]}
    for x in inputs[:2]:
        np.testing.assert_allclose(engines["mnnpy"](x), engines["onnxruntime"](x), rtol=1e-3, atol=1e-4)
        for call in engines.values():
            call(x)  # plan and warm up

    print(machine_summary())
    print(f"{args.model} {args.size}x{args.size}, batch 1, {args.calls} calls per measurement, median of "
          f"{args.rounds} rounds; pools: mnnpy {mnnpy.get_num_threads()} threads, onnxruntime default")
    counts = [int(t) for t in args.threads.split(",")]
    rates = {(name, t): [] for name in engines for t in [1] + counts}
    for _ in range(args.rounds):
        for name, call in engines.items():  # alternating engines, every setting once per round
            rates[name, 1].append(sequential_rate(call, inputs))
            for t in counts:
                rates[name, t].append(concurrent_rate(call, inputs, t))
    med = {k: statistics.median(v) for k, v in rates.items()}
    print(f"{'Python threads':>14} | {'mnnpy calls/s':>13} {'vs 1 thread':>11} | {'ort calls/s':>11} "
          f"{'vs 1 thread':>11} | {'mnnpy/ort':>9}")
    for t in [1] + counts:
        m, o = med["mnnpy", t], med["onnxruntime", t]
        print(f"{t:>14} | {m:13.1f} {m / med['mnnpy', 1]:10.2f}x | {o:11.1f} {o / med['onnxruntime', 1]:10.2f}x | "
              f"{m / o:8.2f}x")


if __name__ == "__main__":
    main()
