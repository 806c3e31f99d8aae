"""float32 Conv2DBlocked (blocked channel layout, [N, C/8, H, W, 8]) against this project's NCHW Conv2D
and onnxruntime's NCHWc convolution (MLAS), on MobileNetV2 and ResNet layers, batch 1, 1 and 2
threads.

All three are kernel times from the profilers: mnnpy's per-step profile (the Conv2DBlocked or
Conv2D step alone) and onnxruntime's per-node profile of a Conv + Relu model, whose optimizer makes
it an NCHWc Conv node between ReorderInput/ReorderOutput nodes; only the NCHWc Conv node is counted,
so layout conversions are left out on both sides. The three run interleaved, in bursts after
untimed warm-up; the table gives medians and GFLOP/s. Each thread count runs in its own process;
onnxruntime's workers do not spin between calls (they would take the cores from mnnpy's pool).

    python benchmarks/bench_conv_blocked.py [--threads 1 2] [--repeats 5] [--only dw]
"""
import argparse
import json
import os
import statistics
import tempfile

from common import run_in_children


# name, C, H(=W), Cout, k, stride, pad, group, NCHW input (a first layer)
LAYERS = [
    ("mbv2 stem 3x3/2 3->32 @224", 3, 224, 32, 3, 2, 1, 1, True),
    ("mbv2 pw 16->96 @112", 16, 112, 96, 1, 1, 0, 1, False),
    ("mbv2 pw 96->24 @56", 96, 56, 24, 1, 1, 0, 1, False),
    ("mbv2 pw 24->144 @56", 24, 56, 144, 1, 1, 0, 1, False),
    ("mbv2 pw 144->24 @56", 144, 56, 24, 1, 1, 0, 1, False),
    ("mbv2 pw 32->192 @28", 32, 28, 192, 1, 1, 0, 1, False),
    ("mbv2 pw 64->384 @14", 64, 14, 384, 1, 1, 0, 1, False),
    ("mbv2 pw 576->96 @14", 576, 14, 96, 1, 1, 0, 1, False),
    ("mbv2 pw 960->160 @7", 960, 7, 160, 1, 1, 0, 1, False),
    ("mbv2 pw 320->1280 @7", 320, 7, 1280, 1, 1, 0, 1, False),
    ("mbv2 dw 3x3 32 @112", 32, 112, 32, 3, 1, 1, 32, False),
    ("mbv2 dw 3x3/2 96 @112", 96, 112, 96, 3, 2, 1, 96, False),
    ("mbv2 dw 3x3 144 @56", 144, 56, 144, 3, 1, 1, 144, False),
    ("mbv2 dw 3x3 384 @14", 384, 14, 384, 3, 1, 1, 384, False),
    ("mbv2 dw 3x3 960 @7", 960, 7, 960, 3, 1, 1, 960, False),
    ("mbv3 dw 5x5/2 72 @56", 72, 56, 72, 5, 2, 2, 72, False),
    ("mbv3 dw 5x5 120 @28", 120, 28, 120, 5, 1, 2, 120, False),
    ("resnet stem 7x7/2 3->64 @224", 3, 224, 64, 7, 2, 3, 1, True),
    ("resnet 3x3 64 @56", 64, 56, 64, 3, 1, 1, 1, False),
    ("resnet 3x3/2 64->128 @56", 64, 56, 128, 3, 2, 1, 1, False),
    ("resnet 3x3 128 @28", 128, 28, 128, 3, 1, 1, 1, False),
    ("resnet 3x3/2 128->256 @28", 128, 28, 256, 3, 2, 1, 1, False),
    ("resnet 3x3/2 256->512 @14", 256, 14, 512, 3, 2, 1, 1, False),
    ("resnet 3x3 256 @14", 256, 14, 256, 3, 1, 1, 1, False),
    ("resnet 3x3 512 @7", 512, 7, 512, 3, 1, 1, 1, False),
    ("resnet50 pw 256->64 @56", 256, 56, 64, 1, 1, 0, 1, False),
    ("resnet50 pw/2 256->512 @56", 256, 56, 512, 1, 2, 0, 1, False),
    ("resnet50 pw 2048->512 @7", 2048, 7, 512, 1, 1, 0, 1, False),
]


def ort_session(x_shape, w, b, stride, pad, group, threads):
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
    k = w.shape[2]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[k, k], strides=[stride, stride],
                              pads=[pad] * 4, group=group),
             helper.make_node("Relu", ["c"], ["y"])]
    graph = helper.make_graph(nodes, "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    # Its idle workers would otherwise spin between calls and take the cores from mnnpy's pool, which
    # runs interleaved with it in this process.
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    opts.enable_profiling = True
    opts.profile_file_prefix = os.path.join(tempfile.gettempdir(), "bench_conv_blocked_ort")
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def ort_conv_times(session):
    """Ends profiling and returns the durations (s) of the Conv node, run by run."""
    path = session.end_profiling()
    with open(path) as f:
        events = json.load(f)
    os.remove(path)
    return [e["dur"] * 1e-6 for e in events
            if e.get("cat") == "Node" and e["name"].endswith("_kernel_time") and e["args"].get("op_name") == "Conv"]


def measure_child(threads, repeats, burst, warmup, only):
    import numpy as np

    import mnnpy
    from mnnpy import expr as F
    from mnnpy._expr_conv import _conv2d_nchw
    from mnnpy._expr_layout import _conv2d_blocked

    try:
        import onnxruntime  # noqa: F401
        have_ort = True
    except ImportError:
        have_ort = False
    mnnpy.set_num_threads(threads)

    def profiled(y, op):
        """A callable that evaluates y and returns its `op` step's kernel seconds."""
        def run():
            y.read()
            return sum(p["seconds"] for p in mnnpy._core.last_profile() if p["op"] == op)
        return run

    rows = []
    mnnpy._core.set_executor_option("profile", True)
    try:
        for name, c, h, cout, k, stride, pad, group, nchw in LAYERS:
            if only and only not in name:
                continue
            rng = np.random.default_rng(c * h + cout)
            x = rng.standard_normal((1, c, h, h)).astype(np.float32)
            w = (rng.standard_normal((cout, c // group, k, k)) / np.sqrt(c // group * k * k)).astype(np.float32)
            b = rng.standard_normal(cout).astype(np.float32)
            xb = x if nchw else x.reshape(1, c // 8, 8, h, h).transpose(0, 1, 3, 4, 2).copy()
            # Placeholder inputs are never cached: every read() runs the convolution again.
            xv, xn = F.placeholder(xb.shape), F.placeholder(x.shape)
            xv.write(xb)
            xn.write(x)
            args = ((stride, stride), (pad,) * 4, (1, 1), group, 1)  # activation 1: relu
            yb = _conv2d_blocked(xv, F.const(w), F.const(b), *args)
            yn = _conv2d_nchw(xn, F.const(w), F.const(b), *args)
            blocked = yb.read()
            unblocked = blocked.transpose(0, 1, 4, 2, 3).reshape(yn.shape)
            err = float(np.abs(unblocked - yn.read()).max())
            assert err < 1e-3, f"{name}: blocked and NCHW results differ by {err}"
            runners = {"blocked": profiled(yb, "Conv2DBlocked"), "nchw": profiled(yn, "Conv2D")}
            session = ort_session(x.shape, w, b, stride, pad, group, threads) if have_ort else None
            if session is not None:
                def run_ort():
                    session.run(None, {"x": x})  # its time comes from the profile afterwards
                    return None
                runners["ort"] = run_ort
            times = {key: [] for key in runners}
            ort_timed = []  # per onnxruntime call: whether it was timed (its profile lists warm-up calls too)
            for _ in range(repeats):
                for key, run in runners.items():
                    for i in range(warmup + burst):
                        t = run()
                        if key == "ort":
                            ort_timed.append(i >= warmup)
                        elif i >= warmup:
                            times[key].append(t)
            if session is not None:
                times["ort"] = [t for t, timed in zip(ort_conv_times(session), ort_timed) if timed]
            ho = (h + 2 * pad - k) // stride + 1
            rows.append({"name": name, "flops": 2.0 * cout * (c // group) * k * k * ho * ho,
                         **{key: statistics.median(v) for key, v in times.items() if v}})
    finally:
        mnnpy._core.set_executor_option("profile", False)
    print(json.dumps({"rows": rows, "isa": mnnpy.runtime_info()["isa"]}))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--burst", type=int, default=10, help="timed calls per burst")
    parser.add_argument("--warmup", type=int, default=3, help="untimed calls before each burst")
    parser.add_argument("--only", default="", help="run only layers whose name contains this")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        measure_child(args.threads[0], args.repeats, args.burst, args.warmup, args.only)
        return
    results = run_in_children(__file__, args.threads, ["--repeats", args.repeats, "--burst", args.burst, "--warmup",
                                                       args.warmup, "--only", args.only])

    first = results[args.threads[0]]
    print(f"Conv2DBlocked vs NCHW Conv2D vs onnxruntime NCHWc Conv (MLAS); mnnpy kernels: {first['isa']}")
    print("kernel times (ms, medians) and GFLOP/s; x/blk = that time / Conv2DBlocked's (above 1: blocked is faster)\n")
    for threads in args.threads:
        rows = results[threads]["rows"]
        have_ort = any("ort" in r for r in rows)
        header = (f"{threads}T {'layer':<30} | {'blocked ms':>10} {'GF/s':>6} | {'NCHW ms':>9} {'GF/s':>6} {'x/blk':>6}"
                  + (f" | {'ORT ms':>8} {'GF/s':>6} {'x/blk':>6}" if have_ort else ""))
        print(header)
        print("-" * len(header))
        totals = {"blocked": 0.0, "nchw": 0.0, "ort": 0.0}
        for r in rows:
            for key in totals:
                totals[key] += r.get(key, 0.0)
            gf = lambda t: r["flops"] / t / 1e9  # noqa: E731
            line = (f"{threads}T {r['name']:<30} | {r['blocked'] * 1e3:>10.3f} {gf(r['blocked']):>6.1f} | "
                    f"{r['nchw'] * 1e3:>9.3f} {gf(r['nchw']):>6.1f} {r['nchw'] / r['blocked']:>6.2f}")
            if "ort" in r:
                line += f" | {r['ort'] * 1e3:>8.3f} {gf(r['ort']):>6.1f} {r['ort'] / r['blocked']:>6.2f}"
            print(line)
        line = (f"{threads}T {'sum of layers':<30} | {totals['blocked'] * 1e3:>10.3f} {'':>6} | "
                f"{totals['nchw'] * 1e3:>9.3f} {'':>6} {totals['nchw'] / totals['blocked']:>6.2f}")
        if have_ort:
            line += f" | {totals['ort'] * 1e3:>8.3f} {'':>6} {totals['ort'] / totals['blocked']:>6.2f}"
        print(line + "\n")


if __name__ == "__main__":
    main()
