"""Two builds of mnnpy side by side, to show that a change costs no speed: whole models, core
expressions and the cv preprocessing pipeline, each build in fresh child processes, alternating
rounds, medians of the per-round medians, ratio new / old (below 1: the new build is faster).
Each argument is a checkout whose core is built into <checkout>/build/dev
(scripts/dev_build.sh), or a folder a wheel was installed into (`pip install --target`), so that
each build runs with its own Python package:
  python benchmarks/bench_builds.py OLD NEW [--rounds 5] [--threads 1,2]
e.g. `git worktree add /tmp/before HEAD~1 && (cd /tmp/before && scripts/dev_build.sh build/dev)`."""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = r"""
import json, os, sys, time
sys.path[:0] = [{benchmarks!r}, {tests!r}]
import numpy as np
import mnnpy
import mnnpy.cv as mcv
import mnnpy.numpy as mnp
from mnnpy import expr as F, nn
from common import full_hd_photo
from model_zoo import export_torchvision

mnnpy.set_num_threads({threads})
rng = np.random.default_rng(0)
n = 4 * 1024 * 1024
a_np, b_np, c_np = (rng.standard_normal(n, dtype=np.float32) for _ in range(3))
a, b, c = F.const(a_np), F.const(b_np), F.const(c_np)
m = F.const(a_np.reshape(1024, 4096))
small = [F.const(rng.standard_normal(100, dtype=np.float32)) for _ in range(2)]
photo = full_hd_photo()
mean = np.array([0.485, 0.456, 0.406], np.float32)
std = np.array([0.229, 0.224, 0.225], np.float32)


def pipeline():
    rgb = mcv.cvtColor(photo, mcv.COLOR_BGR2RGB)
    x = (mcv.resize(rgb, (224, 224), interpolation=mcv.INTER_LINEAR).astype(np.float32) * np.float32(1 / 255.0)
         - mean) / std
    return np.asarray(mnp.expand_dims(mnp.transpose(x, (2, 0, 1)), 0))


cases = {{
    "a*b+c (4M f32)": lambda: (a * b + c).numpy(),
    "6-op chain (4M f32)": lambda: (F.tanh(a * b + c) * 0.5 - F.exp(-F.abs(a))).numpy(),
    "sum last axis (1024x4096)": lambda: F.reduce_sum(m, axis=[1]).numpy(),
    "overhead: a+b, 100 elements": lambda: (small[0] + small[1]).numpy(),
    "cv pipeline (1080p -> 1x3x224x224)": pipeline,
}}
x = rng.standard_normal((1, 3, 224, 224)).astype(np.float32)
for name in {models!r}:
    module = nn.load_module_from_file(export_torchvision(name, 224), ["input"], [])
    cases[name + " 224"] = lambda module=module: module.forward(x)

times = {{}}
for name, run in cases.items():
    run()  # plans, packs and warms up
    samples = []
    budget = time.perf_counter() + {seconds}
    while len(samples) < 5 or time.perf_counter() < budget:
        start = time.perf_counter()
        run()
        samples.append(time.perf_counter() - start)
    times[name] = sorted(samples)[len(samples) // 2]
print(json.dumps(times))
"""


def run_child(checkout, threads, models, seconds):
    """One fresh process of `checkout` (a checkout or an installed package folder): its medians."""
    code = CHILD.format(benchmarks=HERE, tests=os.path.join(os.path.dirname(HERE), "tests"), threads=threads,
                        models=models, seconds=seconds)
    env = dict(os.environ, PYTHONPATH=checkout)
    env.pop("MNNPY_CORE_DIR", None)
    if os.path.isdir(os.path.join(checkout, "build", "dev")):
        env["MNNPY_CORE_DIR"] = os.path.join(checkout, "build", "dev")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd="/")
    if out.returncode != 0:
        raise SystemExit(f"the benchmark failed for {checkout}:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("old", nargs="?", help="the build before the change")
    p.add_argument("new", nargs="?", help="the build after it")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--models", default="resnet18,mobilenet_v2")
    p.add_argument("--seconds", type=float, default=0.5, help="time per case per child")
    args = p.parse_args()
    if args.new is None:
        # `make bench` runs every benchmark without arguments: there are no two builds to compare.
        print("bench_builds: no builds to compare (python benchmarks/bench_builds.py OLD NEW)")
        return
    sys.path.insert(0, HERE)
    from common import fmt_time, machine_summary
    print(f"new = {args.new}, old = {args.old}; {machine_summary()}")
    print(f"{args.rounds} alternating rounds of fresh processes; medians; ratio new / old")
    for threads in [int(t) for t in args.threads.split(",")]:
        rounds = {"old": [], "new": []}
        for r in range(args.rounds):
            order = ("old", "new") if r % 2 == 0 else ("new", "old")  # neither always runs first
            for which in order:
                rounds[which].append(run_child(getattr(args, which), threads, [m for m in args.models.split(",") if m], args.seconds))
        print(f"\n{threads} thread(s)")
        print(f"{'case':38} {'old':>11} {'new':>11} {'new/old':>8}")
        for name in rounds["old"][0]:
            old = statistics.median(t[name] for t in rounds["old"])
            new = statistics.median(t[name] for t in rounds["new"])
            print(f"{name:38} {fmt_time(old)} {fmt_time(new)} {new / old:8.3f}")


if __name__ == "__main__":
    main()
