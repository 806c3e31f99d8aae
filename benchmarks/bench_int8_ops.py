"""The int8 elementwise ops and pools (docs/int8.md, "int8 elementwise ops"), side by side:

1. Each op on a resnet-sized tensor against onnxruntime's com.microsoft contrib kernel (one-node
   models, the same inputs), and against mnnpy's float path for the same computation
   (DequantizeLinear -> float op -> QuantizeLinear, as an unfused QDQ model runs it).
2. resnet18 and mobilenet_v2 (torchvision, random weights, 224x224) quantized by quantize_static in
   QDQ format: mnnpy with the QDQ fusion of these ops against mnnpy with the convolutions fused only
   (the graph before this fusion), interleaved.

    python benchmarks/bench_int8_ops.py [--threads 1,2] [--cnns resnet18,mobilenet_v2] [--skip-ops]"""
import argparse
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
sys.path.insert(0, HERE)
from common import compare, compare_in_bursts, fmt_time, machine_summary  # noqa: E402


def ort_session(model_bytes, threads):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])


def one_node_model(op, named, attrs):
    """A model of one node reading `named` ((name, value) in the node's order): arrays with
    dimensions are graph inputs, scalars initializers. com.microsoft unless `op` is MaxPool."""
    from onnx import TensorProto, helper, numpy_helper
    types = {np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int8): TensorProto.INT8}
    inputs = [(n, v) for n, v in named if np.ndim(v)]
    consts = [(n, v) for n, v in named if not np.ndim(v)]
    node = helper.make_node(op, [n for n, _ in named], ["y"], domain="" if op == "MaxPool" else "com.microsoft",
                            **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(n, types[v.dtype], list(v.shape)) for n, v in inputs],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, None)],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in consts])
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    return model.SerializeToString(), {n: v for n, v in inputs}


def bench_ops(threads_list):
    import mnnpy
    import mnnpy.expr as F
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (1, 64, 56, 56)).astype(np.uint8)
    b = rng.integers(0, 256, (1, 64, 56, 56)).astype(np.uint8)
    big = rng.integers(0, 256, (1, 64, 112, 112)).astype(np.uint8)
    last = rng.integers(0, 256, (1, 512, 7, 7)).astype(np.uint8)
    s = [np.float32(v) for v in (0.02, 0.03, 0.04)]
    z = [np.uint8(v) for v in (120, 128, 110)]

    def dq(v, i):  # DequantizeLinear as the converter builds it
        return F.multiply(F.subtract(F.cast(v, np.float32), F.const(np.float32(z[i]))), F.const(s[i]))

    def q(v, i):  # QuantizeLinear likewise
        return F.cast(F.clip(F.add(F.round(F.divide(v, F.const(s[i]))), F.const(np.float32(z[i]))), 0.0, 255.0),
                      np.uint8)

    # (name, int8 op, DQ -> float op -> Q, arrays, onnxruntime's one-node model)
    cases = [
        ("QLinearAdd 64x56x56", lambda x, y: F.qlinear_add(x, s[0], z[0], y, s[1], z[1], s[2], z[2]),
         lambda x, y: q(F.add(dq(x, 0), dq(y, 1)), 2), [a, b],
         one_node_model("QLinearAdd", [("a", a), ("as", s[0]), ("az", z[0]), ("b", b), ("bs", s[1]), ("bz", z[1]),
                                       ("ys", s[2]), ("yz", z[2])], {})),
        ("QLinearGlobalAveragePool 512x7x7", lambda x: F.qlinear_global_average_pool(x, s[0], z[0], s[2], z[2]),
         lambda x: q(F.reduce_mean(dq(x, 0), [2, 3], True), 2), [last],
         one_node_model("QLinearGlobalAveragePool", [("x", last), ("xs", s[0]), ("xz", z[0]), ("ys", s[2]),
                                                     ("yz", z[2])], {})),
        ("MaxPool 3x3/2 64x112x112", lambda x: F.max_pool2d_int8(x, 3, 2, 1),
         lambda x: q(F.max_pool(dq(x, 0), [3, 3], [2, 2], F.Padding_Mode.CAFFE, [1, 1]), 0), [big],
         one_node_model("MaxPool", [("x", big)], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]})),
        ("QLinearConcat 2x64x56x56", lambda x, y: F.qlinear_concat([(x, s[0], z[0]), (y, s[1], z[1])], s[0], z[0]),
         lambda x, y: q(F.concat([dq(x, 0), dq(y, 1)], 1), 0), [a, b],
         one_node_model("QLinearConcat", [("ys", s[0]), ("yz", z[0]), ("a", a), ("as", s[0]), ("az", z[0]),
                                          ("b", b), ("bs", s[1]), ("bz", z[1])], {"axis": 1})),
    ]
    print(f"\n== int8 ops ({machine_summary()})")
    print("   ratios: mnnpy int8 op / onnxruntime contrib op, mnnpy int8 op / mnnpy DQ -> float op -> Q")
    for threads in threads_list:
        mnnpy.set_num_threads(threads)
        for name, int8_op, float_path, arrays, (model, feeds) in cases:
            holders = [F.placeholder(list(v.shape), F.NCHW, v.dtype) for v in arrays]
            int8_out, float_out = int8_op(*holders), float_path(*holders)

            def run(out):
                def call():
                    for h, v in zip(holders, arrays):
                        h.write(v)
                    return out.read()
                return call
            session = ort_session(model, threads)
            mismatch = np.abs(run(int8_out)().astype(np.int32) - session.run(None, feeds)[0].astype(np.int32)).max()
            t_int8, t_float = compare(run(int8_out), run(float_out), min_time=0.3)
            t_int8b, t_ort = compare_in_bursts(run(int8_out), lambda: session.run(None, feeds), rounds=3)
            print(f"  {name:<34} {threads}T  mnnpy int8 {fmt_time(t_int8b)}  onnxruntime {fmt_time(t_ort)}"
                  f"  mnnpy DQ/float/Q {fmt_time(t_float)}  int8/onnxruntime {t_int8b / t_ort:5.2f}"
                  f"  int8/float path {t_int8 / t_float:5.2f}  (max |mnnpy - onnxruntime| {mismatch})", flush=True)


def bench_cnns(threads_list, tmp, names):
    import mnnpy
    from mnnpy import nn
    from mnnpy.convert import _qdq_fusion
    from model_zoo import export_torchvision
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 3, 224, 224)).astype(np.float32)
    print(f"\n== QDQ CNNs, 224x224 ({machine_summary()})")
    print("   ratio: fused int8 ops / convolutions fused only (the graph without this fusion)")
    for name in names:
        path = export_torchvision(name, 224)
        qdq_path = os.path.join(tmp, f"{name}_qdq.onnx")
        batches = iter([{"input": rng.standard_normal((1, 3, 224, 224)).astype(np.float32)} for _ in range(4)])

        class Calibration(CalibrationDataReader):
            def get_next(self):
                return next(batches, None)
        quantize_static(path, qdq_path, Calibration(), quant_format=QuantFormat.QDQ, per_channel=True,
                        reduce_range=True, activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
        for threads in threads_list:
            mnnpy.set_num_threads(threads)
            fused = nn.load_module_from_file(qdq_path, ["input"], [])
            keep = _qdq_fusion.fuse_int8_ops
            _qdq_fusion.fuse_int8_ops = lambda graph: graph
            try:
                convs_only = nn.load_module_from_file(qdq_path, ["input"], [])
            finally:
                _qdq_fusion.fuse_int8_ops = keep
            counts, before = fused.graph.op_counts(), convs_only.graph.op_counts()
            t_fused, t_convs = compare(lambda: fused.forward([x]), lambda: convs_only.forward([x]), min_time=2.0)
            y_fused, y_convs = np.asarray(fused.forward([x])), np.asarray(convs_only.forward([x]))
            print(f"  {name:<13} {threads}T  fused {fmt_time(t_fused)}  convolutions only {fmt_time(t_convs)}"
                  f"  ratio {t_fused / t_convs:5.2f}  (DequantizeLinear {before.get('DequantizeLinear')} -> "
                  f"{counts.get('DequantizeLinear')}, QuantizeLinear {before.get('QuantizeLinear')} -> "
                  f"{counts.get('QuantizeLinear')}; max |difference| {np.abs(y_fused - y_convs).max():.3g})",
                  flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--cnns", default="resnet18,mobilenet_v2", help="QDQ CNNs ('' for none)")
    p.add_argument("--skip-ops", action="store_true")
    args = p.parse_args()
    threads_list = [int(t) for t in args.threads.split(",")]
    if not args.skip_ops:
        bench_ops(threads_list)
    if args.cnns:
        with tempfile.TemporaryDirectory() as tmp:
            bench_cnns(threads_list, tmp, args.cnns.split(","))


if __name__ == "__main__":
    main()
