"""Real pretrained ONNX models that PyPI packages ship (scripts/setup.sh test installs them):
conversion time, and latency of mnnpy against onnxruntime on the same inputs, batch 1, at 1 and
2 threads, with the largest difference relative to onnxruntime's output scale.
Run: python benchmarks/bench_pretrained_onnx.py"""
import importlib.util
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from common import compare_in_bursts, machine_summary  # noqa: E402


def package_file(package, *parts):
    spec = importlib.util.find_spec(package)
    if spec is None:
        sys.exit(f"the package '{package}' is missing: run scripts/setup.sh test")
    return os.path.join(spec.submodule_search_locations[0], *parts)


def cases(rng):
    text = rng.uniform(-1, 1, (1, 3, 352, 896)).astype(np.float32)
    yield "PP-OCRv4 detector 352x896", package_file("rapidocr_onnxruntime", "models", "ch_PP-OCRv4_det_infer.onnx"), \
        {"x": text}
    yield "PP-OCRv4 recognizer 48x320", package_file("rapidocr_onnxruntime", "models", "ch_PP-OCRv4_rec_infer.onnx"), \
        {"x": rng.uniform(-1, 1, (1, 3, 48, 320)).astype(np.float32)}
    yield "PP-OCR direction classifier", package_file("rapidocr_onnxruntime", "models",
                                                      "ch_ppocr_mobile_v2.0_cls_infer.onnx"), \
        {"x": rng.uniform(-1, 1, (1, 3, 48, 192)).astype(np.float32)}
    yield "silero VAD (512 samples)", package_file("silero_vad", "data", "silero_vad.onnx"), \
        {"input": rng.uniform(-0.3, 0.3, (1, 512)).astype(np.float32), "state": np.zeros((2, 1, 128), np.float32),
         "sr": np.array(16000, np.int64)}
    yield "magika file-type classifier", package_file("magika", "models", "standard_v3_3", "model.onnx"), \
        {"bytes": rng.integers(0, 257, (1, 2048)).astype(np.int32)}


def main():
    import onnxruntime as ort

    import mnnpy
    from mnnpy import convert, nn
    print(machine_summary())
    print(f"{'model':32s} {'convert ms':>10s} {'threads':>7s} {'mnnpy ms':>9s} {'ort ms':>8s} {'ratio':>6s} "
          f"{'max rel diff':>12s}")
    rng = np.random.default_rng(0)
    for name, path, feeds in cases(rng):
        start = time.perf_counter()
        convert.from_onnx(path)
        convert_ms = (time.perf_counter() - start) * 1e3
        for threads in (1, 2):
            mnnpy.set_num_threads(threads)
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
            module = nn.load_module_from_file(path)
            names = [i.name for i in session.get_inputs()]
            values = [feeds[n] for n in names]
            expected = session.run(None, feeds)
            got = module.forward(*values)
            got = got if isinstance(got, list) else [got]
            diff = max(float(np.abs(g.numpy() - e).max() / max(np.abs(e).max(), 1e-6)) for g, e in zip(got, expected))
            ours, theirs = compare_in_bursts(lambda: module.forward(*values), lambda: session.run(None, feeds))
            print(f"{name:32s} {convert_ms:10.1f} {threads:7d} {ours * 1e3:9.2f} {theirs * 1e3:8.2f} "
                  f"{ours / theirs:6.2f} {diff:12.1e}")


if __name__ == "__main__":
    main()
