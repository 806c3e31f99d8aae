"""Static int8 quantization: accuracy and latency of the float model and of mnnpy's int8 (QDQ)
model, side by side with onnxruntime's ``quantize_static`` QDQ model of the same ONNX file.

    python benchmarks/bench_quantize.py [--threads 1] [--skip-mobilenet]

Models: a CNN trained here on scikit-learn's digits (top-1 on the held-out split) and
torchvision's mobilenet_v2 with random (seeded) weights calibrated on random data (agreement of
the int8 model's top-1 with the float model's, and the cosine of the logits). mnnpy's int8 model
runs its QDQ graph on float kernels until the int8 kernels land; the latency column says what
that costs today."""
import argparse
import logging
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import compare_in_bursts, fmt_time, machine_summary  # noqa: E402


def digits_model():
    """(torch CNN trained on digits, calibration, x_test, y_test)."""
    import torch
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None, :, :]
    y = digits.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.25, random_state=0, stratify=y)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                                torch.nn.Flatten(), torch.nn.Linear(512, 10))
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    xt, yt = torch.from_numpy(x_train), torch.from_numpy(y_train)
    for _ in range(10):
        order = torch.randperm(len(xt))
        for start in range(0, len(xt), 64):
            index = order[start:start + 64]
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(xt[index]), yt[index]).backward()
            optimizer.step()
    return model.eval(), x_train[:512], x_test, y_test


def mobilenet_model():
    import torch
    import torchvision
    torch.manual_seed(0)
    model = torchvision.models.mobilenet_v2(weights=None)
    rng = np.random.default_rng(0)
    # Batch-norm statistics from random images, so that features keep their scale through the
    # layers (with the initial statistics they shrink by orders of magnitude).
    with torch.no_grad():
        for _ in range(4):
            model(torch.from_numpy(rng.normal(0, 1, (16, 3, 224, 224)).astype(np.float32)))
    model.eval()
    calibration = rng.normal(0, 1, (16, 3, 224, 224)).astype(np.float32)
    test = rng.normal(0, 1, (32, 3, 224, 224)).astype(np.float32)
    return model, calibration, test, None


def export_onnx(model, example, path):
    import torch
    torch.onnx.export(model, (torch.from_numpy(example),), path, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}}, opset_version=17, dynamo=False)


def ort_quantize(path, out_path, calibration):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process
    prepared = out_path + ".prepared.onnx"
    quant_pre_process(path, prepared)  # constants folded into initializers, as quantize_static asks

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.items = iter([{"x": calibration[i:i + 8]} for i in range(0, len(calibration), 8)])

        def get_next(self):
            return next(self.items, None)
    # onnxruntime's defaults (uint8 asymmetric features, int8 weights), per channel as mnnpy.
    quantize_static(prepared, out_path, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)


def run_case(name, model, calibration, test, labels, threads, method, workdir):
    import onnxruntime as ort

    import mnnpy
    from mnnpy import convert, nn
    mnnpy.set_num_threads(threads)
    path = os.path.join(workdir, name + ".onnx")
    export_onnx(model, calibration[:1], path)
    ort_path = os.path.join(workdir, name + "_ort_int8.onnx")
    ort_quantize(path, ort_path, calibration)
    graph, _ = convert.from_onnx(path)
    batches = [calibration[i:i + 8] for i in range(0, len(calibration), 8)]
    quantized, report = mnnpy.quantize(graph, batches, {"feature_quantize_method": method}, progress=False)
    ours_fp32 = nn._ConvertedModule(graph, graph.weights, None, None)
    ours_int8 = nn._ConvertedModule(quantized, quantized.weights, None, None)
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    ort_fp32 = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    ort_int8 = ort.InferenceSession(ort_path, options, providers=["CPUExecutionProvider"])

    def logits(run):
        return np.concatenate([run(test[i:i + 8]) for i in range(0, len(test), 8)])
    results = {
        "mnnpy fp32": logits(lambda x: np.asarray(ours_fp32(x).read())),
        f"mnnpy int8 ({method})": logits(lambda x: np.asarray(ours_int8(x).read())),
        "onnxruntime fp32": logits(lambda x: ort_fp32.run(None, {"x": x})[0]),
        "onnxruntime int8 (quantize_static)": logits(lambda x: ort_int8.run(None, {"x": x})[0]),
    }
    reference = results["mnnpy fp32"]
    measure = "top-1 on the held-out split" if labels is not None else "top-1 agreement with fp32"
    print(f"\n{name}: accuracy ({measure}),"
          f" cosine and SNR of the logits (each sample's mean removed) against mnnpy fp32")
    for label, out in results.items():
        top1 = np.argmax(out, axis=1)
        accuracy = np.mean(top1 == (labels if labels is not None else np.argmax(reference, axis=1)))
        # Random weights give every sample nearly the same logits: the shared offset would hide
        # the differences, so each sample's mean is removed first.
        a = (reference - reference.mean(axis=1, keepdims=True)).astype(np.float64).ravel()
        b = (out - out.mean(axis=1, keepdims=True)).astype(np.float64).ravel()
        noise = np.sum((a - b) ** 2)
        snr = 10 * np.log10((a @ a) / noise) if noise > 0 else np.inf
        print(f"  {label:<36} {100 * accuracy:6.2f}%  cosine {a @ b / np.sqrt((a @ a) * (b @ b)):.6f}  "
              f"SNR {snr:6.1f} dB")
    x = test[:1]
    print(f"{name}: latency, batch 1, {threads} thread(s); ratio = mnnpy / onnxruntime")
    for label, ours, theirs in (("fp32", lambda: ours_fp32(x).read(), lambda: ort_fp32.run(None, {"x": x})),
                                ("int8", lambda: ours_int8(x).read(), lambda: ort_int8.run(None, {"x": x}))):
        t_ours, t_ref = compare_in_bursts(ours, theirs)
        print(f"  {label}  mnnpy {fmt_time(t_ours)}  onnxruntime {fmt_time(t_ref)}  ratio {t_ours / t_ref:6.2f}")
    print(report)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--method", default="KL", choices=["KL", "ADMM", "EMA"])
    parser.add_argument("--skip-mobilenet", action="store_true")
    args = parser.parse_args()
    logging.getLogger().setLevel(logging.ERROR)  # onnxruntime.quantization's advice lines
    print(f"== static int8 quantization ({machine_summary()})")
    with tempfile.TemporaryDirectory() as workdir:
        model, calibration, test, labels = digits_model()
        run_case("digits CNN", model, calibration, test, labels, args.threads, args.method, workdir)
        if not args.skip_mobilenet:
            model, calibration, test, labels = mobilenet_model()
            run_case("mobilenet_v2", model, calibration, test, labels, args.threads, args.method, workdir)


if __name__ == "__main__":
    main()
