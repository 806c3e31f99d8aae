"""Side-by-side timing helpers shared by the benchmarks: interleaved runs, medians, ratios."""
import json
import os
import platform
import statistics
import subprocess
import sys
import time

# `python -c CODE` puts the working directory first on sys.path: from the repository root that is
# the source tree, whose mnnpy/ has no compiled core. Code run so starts with these lines, to import
# the mnnpy its parent imports (the installed package, or during development PYTHONPATH's checkout
# with MNNPY_CORE_DIR).
NO_WORKING_DIRECTORY_ON_PATH = "import sys\nif sys.path[:1] == ['']:\n    del sys.path[0]\n"


def machine_summary():
    import mnnpy
    flags = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    have = set(line.split(":", 1)[1].split())
                    flags = ",".join(x for x in ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_int8") if x in have)
                    break
    except OSError:
        pass
    return (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, ISA flags [{flags}], "
            f"mnnpy kernels: {mnnpy.runtime_info()['isa']}")


def compare(ours, reference, repeats=15, warmup=2, min_time=0.0):
    """Runs both callables alternately, at least `repeats` times each and for at least `min_time`
    seconds in all; returns (median ours, median reference) in seconds."""
    for _ in range(warmup):
        ours()
        reference()
    t_ours, t_ref = [], []
    start = time.perf_counter()
    while len(t_ours) < repeats or time.perf_counter() - start < min_time:
        t0 = time.perf_counter()
        ours()
        t1 = time.perf_counter()
        reference()
        t2 = time.perf_counter()
        t_ours.append(t1 - t0)
        t_ref.append(t2 - t1)
    return statistics.median(t_ours), statistics.median(t_ref)


def timed_bursts(runs, pause=0.0, warmup=0.1, burst=3):
    """One burst per (callable, list of times) pair, in turn: after `pause` idle seconds (other
    engines' worker threads stop spinning) and `warmup` seconds of untimed calls (the cores clock
    up), at least `burst` timed calls and at least 50 ms of them, appended to the list."""
    for run, times in runs:
        if pause:
            time.sleep(pause)
        start, calls = time.perf_counter(), 0
        while calls < 2 or time.perf_counter() - start < warmup:
            run()
            calls += 1
        per_call = (time.perf_counter() - start) / calls
        for _ in range(max(burst, int(0.05 / per_call))):
            t = time.perf_counter()
            run()
            times.append(time.perf_counter() - t)


def compare_in_bursts(ours, reference, rounds=5, pause=0.2, warmup=0.1, burst=3):
    """Like `compare`, for engines with spinning worker threads (onnxruntime, LiteRT, PyTorch):
    `rounds` bursts of each in turn, each after `pause` idle seconds, so that neither engine's
    workers still spin on the cores while the other is timed; returns (median ours, median
    reference) in seconds."""
    t_ours, t_ref = [], []
    for _ in range(rounds):
        timed_bursts(((ours, t_ours), (reference, t_ref)), pause, warmup, burst)
    return statistics.median(t_ours), statistics.median(t_ref)


def run_in_children(script, thread_counts, args):
    """Runs `script --child --threads N *args` once per thread count, each in a fresh process with
    the BLAS/OpenMP thread variables set to N (libraries size their pools at import), and returns
    {N: the JSON object the child printed last}."""
    results = {}
    for threads in thread_counts:
        env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
                   OPENBLAS_NUM_THREADS=str(threads))
        cmd = [sys.executable, os.path.abspath(script), "--child", "--threads", str(threads), *map(str, args)]
        out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
        results[threads] = json.loads(out.strip().splitlines()[-1])
    return results


def fmt_time(t):
    if t < 1e-3:
        return f"{t * 1e6:8.2f} us"
    return f"{t * 1e3:8.2f} ms"


class Table:
    def __init__(self, title, reference_name):
        self.rows = []
        self.title = title
        self.reference_name = reference_name

    def add(self, name, threads, t_ours, t_ref, extra=""):
        self.rows.append((name, threads, t_ours, t_ref, extra))
        print(f"  {name:<34} {threads}T  mnnpy {fmt_time(t_ours)}  {self.reference_name} {fmt_time(t_ref)}"
              f"  ratio {t_ours / t_ref:6.2f}  {extra}", flush=True)

    def header(self):
        print(f"\n== {self.title} ({machine_summary()})")
        print("   ratio = mnnpy time / reference time (below 1: mnnpy is faster)")


def full_hd_photo():
    """A 1920x1080 BGR uint8 photograph: scikit-image's coffee, resized by OpenCV (for the cv
    benchmarks)."""
    import cv2
    import numpy as np
    import skimage.data
    bgr = np.ascontiguousarray(skimage.data.coffee()[..., ::-1])
    return cv2.resize(bgr, (1920, 1080), interpolation=cv2.INTER_LINEAR)


def run_cv_cases(title, cases, check=None, min_time=0.5, reference_name="cv2"):
    """The mnnpy.cv benchmark main loop: each case ``(name, ours, reference, ...)`` checked by
    ``check(name, ours(), reference(), *rest)`` (arrays equal when None) and timed side by side with
    OpenCV at 1 and 2 threads. ``--only TEXT`` on the command line keeps the cases named with it."""
    import argparse

    import cv2
    import numpy as np

    import mnnpy
    parser = argparse.ArgumentParser(description=title)
    parser.add_argument("--only", default="", help="run only cases whose name contains this")
    args = parser.parse_args()
    table = Table(title, reference_name)
    table.header()
    work = [c for c in cases if args.only in c[0]]
    for threads in (1, 2):
        mnnpy.set_num_threads(threads)
        cv2.setNumThreads(threads)
        for name, ours, reference, *rest in work:
            if check is None:
                np.testing.assert_array_equal(ours(), reference(), err_msg=name)
            else:
                check(name, ours(), reference(), *rest)
            t_ours, t_ref = compare(ours, reference, repeats=15, min_time=min_time)
            table.add(name, threads, t_ours, t_ref)
