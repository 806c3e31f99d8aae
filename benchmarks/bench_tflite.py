"""TensorFlow Lite models into mnnpy: conversion time, then inference latency of the converted
model against the LiteRT interpreter (XNNPACK) in the same process, threads matched, runs
interleaved, batch 1: Keras MobileNetV2 (224x224, seeded random weights) written by
TensorFlow's converter as float32. The table gives conversion time, each engine's median
latency, their ratio (mnnpy / LiteRT) and the largest output difference relative to LiteRT's
largest output.
Run: python benchmarks/bench_tflite.py [--threads 1,2] [--repeats 7]"""
import argparse
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import compare_in_bursts, machine_summary  # noqa: E402


def mobilenet_tflite(directory):
    import keras
    import tensorflow as tf
    keras.utils.set_random_seed(0)
    # Logits (no softmax): with random weights the probabilities are all but uniform.
    model = keras.applications.MobileNetV2(weights=None, input_shape=(224, 224, 3), classifier_activation=None)
    model.export(os.path.join(directory, "saved"), format="tf_saved_model", verbose=False)
    converter = tf.lite.TFLiteConverter.from_saved_model(os.path.join(directory, "saved"))
    path = os.path.join(directory, "mobilenet_v2.tflite")
    with open(path, "wb") as f:
        f.write(converter.convert())
    return path


def bench_tflite(threads, repeats, directory):
    from ai_edge_litert.interpreter import Interpreter

    import mnnpy
    from mnnpy import convert, nn
    path = mobilenet_tflite(directory)
    start = time.perf_counter()
    convert.from_tflite(path)
    convert_ms = (time.perf_counter() - start) * 1e3
    x = np.random.default_rng(0).uniform(-1, 1, (1, 224, 224, 3)).astype(np.float32)
    for t in threads:
        mnnpy.set_num_threads(t)
        module = nn.load_module_from_file(path)
        interpreter = Interpreter(model_path=path, num_threads=t)
        interpreter.allocate_tensors()
        inp, out = interpreter.get_input_details()[0]["index"], interpreter.get_output_details()[0]["index"]

        def litert():
            interpreter.set_tensor(inp, x)
            interpreter.invoke()
            return interpreter.get_tensor(out)
        expected = litert()
        diff = float(np.abs(module.forward(x).numpy() - expected).max() / np.abs(expected).max())
        ours, theirs = compare_in_bursts(lambda: module.forward(x), litert, rounds=repeats)
        yield "MobileNetV2 224 (TFLite)", "LiteRT", convert_ms, t, ours, theirs, diff


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--repeats", type=int, default=7, help="bursts of each engine, in turn")
    args = parser.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    print(machine_summary())
    print(f"{'model':28s} {'other':>7s} {'convert ms':>10s} {'threads':>7s} {'mnnpy ms':>9s} {'other ms':>9s} "
          f"{'ratio':>6s} {'max rel diff':>12s}")
    with tempfile.TemporaryDirectory() as directory:
        for row in bench_tflite(threads, args.repeats, directory):
            name, other, convert_ms, t, ours, theirs, diff = row
            print(f"{name:28s} {other:>7s} {convert_ms:10.0f} {t:7d} {ours * 1e3:9.2f} {theirs * 1e3:9.2f} "
                  f"{ours / theirs:6.2f} {diff:12.1e}")


if __name__ == "__main__":
    main()
