"""Quantization-aware training (nn.compress.train_quant) exported to the int8 QDQ graph of
mnnpy.quantize: the digits CNN fine-tuned with fake quantization keeps its float accuracy in
int8, the exported graph computes what the fake-quantized module computes, and the
fake-quantization gradients are the straight-through estimator's."""
import os
import sys

import numpy as np
import pytest

import mnnpy
from mnnpy import expr as F
from mnnpy import nn
from mnnpy import optim
from mnnpy.data import ArrayDataset, DataLoader
from mnnpy.nn import compress

pytest.importorskip("sklearn", reason="scikit-learn provides the digits data set")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))

import train_digits  # noqa: E402


def _graph_accuracy(graph, x, y):
    module = nn._ConvertedModule(graph, graph.weights, None, None)
    return float(np.mean(np.argmax(np.asarray(module(x).read()), axis=1) == y))


def _module_logits(model, x):
    model.eval()
    return np.asarray(model(F.const(x)).read())


@pytest.fixture(scope="module")
def trained():
    model, _, float_accuracy = train_digits.train(epochs=8, progress=False, verbose=False)
    return model, float_accuracy


def test_float_trace_matches_module(trained):
    model, _ = trained
    from mnnpy.nn._quant_export import trace_graph
    _, _, x_test, _ = train_digits.load_digits_split(0)
    graph, _ = trace_graph(model, x_test[:2])
    got = np.asarray(nn._ConvertedModule(graph, graph.weights, None, None)(x_test).read())
    want = _module_logits(model, x_test)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_train_quant_keeps_float_accuracy_in_int8(trained, tmp_path):
    model, float_accuracy = trained
    x_train, y_train, x_test, y_test = train_digits.load_digits_split(0)
    from mnnpy.nn._quant_export import trace_graph
    float_graph, _ = trace_graph(model, x_test[:2])
    assert _graph_accuracy(float_graph, x_test, y_test) == pytest.approx(float_accuracy)
    post_training = mnnpy.quantize(float_graph, [x_train[i:i + 64] for i in range(0, 512, 64)],
                                   progress=False)[0]
    post_training_accuracy = _graph_accuracy(post_training, x_test, y_test)

    assert compress.train_quant(model, quant_bits=8) is True
    loader = DataLoader(ArrayDataset(x_train, y_train), batch_size=64, shuffle=True, seed=1)
    optimizer = optim.Adam(model, lr=5e-4)
    optim.fit(model, loader, optimizer, nn.functional.cross_entropy, epochs=3, progress=False)
    path = tmp_path / "digits_qat.mnnpy"
    graph = compress.export_quantized(model, x_test[:2], output=str(path))
    ops = graph.op_counts()
    assert ops["QuantizeLinear"] >= 4 and ops["DequantizeLinear"] >= 7
    assert sum(1 for w in graph.weights.values() if w.dtype == np.int8 and w.ndim >= 2) == 3
    int8_accuracy = float(np.mean(np.argmax(np.asarray(nn.load_module_from_file(str(path))(x_test).read()),
                                            axis=1) == y_test))
    # 450 test images: one image is 0.22 points.
    assert int8_accuracy >= post_training_accuracy - 2 / 450, (int8_accuracy, post_training_accuracy)
    assert abs(int8_accuracy - float_accuracy) <= 0.005, (int8_accuracy, float_accuracy)
    print(f"digits top-1: float {float_accuracy:.4f}, post-training int8 {post_training_accuracy:.4f}, "
          f"quantization-aware int8 {int8_accuracy:.4f}")

    # The exported graph computes what the fake-quantized module computes in evaluation: the
    # same levels, except where a bias rounded to int32 or a level at -128 (QuantizeLinear's
    # range, one below fake quantization's) moves a value by a step.
    ours = np.asarray(nn._ConvertedModule(graph, graph.weights, None, None)(x_test).read())
    fake = _module_logits(model, x_test)
    assert np.mean(np.argmax(ours, axis=1) == np.argmax(fake, axis=1)) >= 0.99
    out_scale = float(np.abs(fake).max()) / 100
    assert np.median(np.abs(ours - fake)) <= out_scale


def test_export_needs_trained_ranges():
    model = train_digits.DigitsCNN()
    compress.train_quant(model)
    with pytest.raises(ValueError, match="never set"):
        compress.export_quantized(model, np.zeros((1, 1, 8, 8), np.float32))
    with pytest.raises(ValueError, match="no layer quantized"):
        compress.export_quantized(train_digits.DigitsCNN(), np.zeros((1, 1, 8, 8), np.float32))


def test_export_refuses_untraceable_forward():
    class Functional(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)

        def forward(self, x):
            return self.fc(F.multiply(x, F.const(np.float32(2.0))))
    with pytest.raises(ValueError, match="chain of nn layers"):
        compress.export_quantized(Functional(), np.zeros((1, 4), np.float32))


@pytest.mark.parametrize("bits", [8, 4])
def test_fake_quant_gradients_are_straight_through(bits):
    rng = np.random.default_rng(9)
    w = rng.normal(0, 1, (5, 3, 3, 3)).astype(np.float32)
    x = rng.normal(0, 2, (4, 7)).astype(np.float32)
    seed_w = rng.normal(0, 1, w.shape).astype(np.float32)
    seed_x = rng.normal(0, 1, x.shape).astype(np.float32)
    wv, xv = F.const(w), F.const(x)
    wq = compress.fake_quant_weight(wv, bits)
    # A range narrower than x's: clipped values pass the gradient through too (plain STE).
    xq, _, _ = compress.fake_quant_feature(xv, F.const(np.float32(-1.5)), F.const(np.float32(2.0)))
    (g_w,) = F.grad([wq], [wv], output_grads=[F.const(seed_w)])
    (g_x,) = F.grad([xq], [xv], output_grads=[F.const(seed_x)])
    # STE: d fake_quant(v) / dv = 1, so the gradient is the seed itself.
    assert np.array_equal(g_w.read(), seed_w)
    assert np.array_equal(g_x.read(), seed_x)
    # The forward values are the NumPy fake quantization.
    limit = 2 ** (bits - 1) - 1
    scale = np.maximum(np.abs(w).max(axis=(1, 2, 3), keepdims=True), np.float32(1e-6)) * np.float32(1 / limit)
    expected = np.clip(np.rint(w / scale), -limit, limit) * scale
    np.testing.assert_allclose(wq.read(), expected, rtol=0, atol=float(scale.max()) * 1e-6)
