"""TensorFlow and TensorFlow Lite models into mnnpy: conversion time, then inference latency of
the converted model against TensorFlow's own runtimes, threads matched, batch 1, seeded random
weights (logits, no softmax: with random weights the probabilities are all but uniform):
- Keras MobileNetV2 and ResNet50 (224x224) through from_tensorflow, against TensorFlow running the
  model as a tf.function (graph mode);
- the same MobileNetV2 written by TensorFlow's converter as float32 .tflite, through from_tflite,
  against the LiteRT interpreter (XNNPACK).
Each thread count runs in a fresh process (TensorFlow sizes its thread pools once). Each engine is
timed in bursts after the other's threads went idle. The table gives conversion time, each
engine's median latency, their ratio (mnnpy / other) and the largest output difference relative
to the other's largest output.
Run: python benchmarks/bench_tensorflow.py [--threads 1,2] [--repeats 7]"""
import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import compare_in_bursts, machine_summary, run_in_children  # noqa: E402


def keras_model(name):
    import keras
    keras.utils.set_random_seed(0)
    build = {"MobileNetV2": keras.applications.MobileNetV2, "ResNet50": keras.applications.ResNet50}[name]
    return build(weights=None, input_shape=(224, 224, 3), classifier_activation=None)


def tflite_file(model, directory):
    import tensorflow as tf
    model.export(os.path.join(directory, "saved"), format="tf_saved_model", verbose=False)
    converter = tf.lite.TFLiteConverter.from_saved_model(os.path.join(directory, "saved"))
    path = os.path.join(directory, "model.tflite")
    with open(path, "wb") as f:
        f.write(converter.convert())
    return path


def rows(threads, repeats, directory):
    import tensorflow as tf
    from ai_edge_litert.interpreter import Interpreter

    import mnnpy
    from mnnpy import convert, nn
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    mnnpy.set_num_threads(threads)
    x = np.random.default_rng(0).uniform(-1, 1, (1, 224, 224, 3)).astype(np.float32)

    def row(name, other, convert_s, module, reference):
        expected = np.asarray(reference())
        diff = float(np.abs(module.forward(x).numpy() - expected).max() / np.abs(expected).max())
        ours, theirs = compare_in_bursts(lambda: module.forward(x), reference, rounds=repeats)
        return [name, other, convert_s * 1e3, threads, ours, theirs, diff]

    found = []
    for name in ("MobileNetV2", "ResNet50"):
        model = keras_model(name)
        start = time.perf_counter()
        graph, _ = convert.from_tensorflow(model)
        convert_s = time.perf_counter() - start
        module = nn._ConvertedModule(graph, graph.weights, [v.name for v in graph.inputs], [])
        run = tf.function(lambda t: model(t, training=False))
        found.append(row(f"{name} 224 (Keras)", "TF", convert_s, module, lambda: run(x).numpy()))
        if name == "MobileNetV2":
            path = tflite_file(model, directory)
            start = time.perf_counter()
            convert.from_tflite(path)
            convert_s = time.perf_counter() - start
            interpreter = Interpreter(model_path=path, num_threads=threads)
            interpreter.allocate_tensors()
            inp, out = interpreter.get_input_details()[0]["index"], interpreter.get_output_details()[0]["index"]

            def litert():
                interpreter.set_tensor(inp, x)
                interpreter.invoke()
                return interpreter.get_tensor(out)
            found.append(row(f"{name} 224 (TFLite)", "LiteRT", convert_s, nn.load_module_from_file(path), litert))
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--repeats", type=int, default=7, help="bursts of each engine, in turn")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        with tempfile.TemporaryDirectory() as directory:
            print(json.dumps({"rows": rows(int(args.threads), args.repeats, directory)}))
        return
    print(machine_summary())
    print(f"{'model':24s} {'other':>7s} {'convert ms':>10s} {'threads':>7s} {'mnnpy ms':>9s} {'other ms':>9s} "
          f"{'ratio':>6s} {'max rel diff':>12s}")
    results = run_in_children(__file__, [int(t) for t in args.threads.split(",")], ["--repeats", args.repeats])
    for threads, result in results.items():
        for name, other, convert_ms, t, ours, theirs, diff in result["rows"]:
            print(f"{name:24s} {other:>7s} {convert_ms:10.0f} {t:7d} {ours * 1e3:9.2f} {theirs * 1e3:9.2f} "
                  f"{ours / theirs:6.2f} {diff:12.1e}")


if __name__ == "__main__":
    main()
