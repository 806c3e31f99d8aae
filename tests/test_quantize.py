"""Static int8 quantization (mnnpy.quantize): accuracy of a digits CNN trained here in torch,
the KL threshold and the weight quantization against NumPy, the QDQ graph against onnxruntime,
the report against NumPy, the CLI on an .npz and on an image folder, and argument errors."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from helpers import python_env

import mnnpy
from mnnpy import convert, nn
from mnnpy.quantize import kl_threshold_bin, quantize_weight
from mnnpy.quantize._methods import HISTOGRAM_BINS, FeatureObserver

torch = pytest.importorskip("torch")
pytest.importorskip("sklearn", reason="scikit-learn provides the digits data set")


# ------------------------------------------------------------------ the digits CNN
def _digits_split():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None, :, :]
    y = digits.target.astype(np.int64)
    return train_test_split(x, y, test_size=0.25, random_state=0, stratify=y)


class _DigitsCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(16, 32, 3, padding=1)
        self.fc = torch.nn.Linear(32 * 4 * 4, 10)

    def forward(self, x):
        x = torch.relu(self.conv1(x))
        x = torch.nn.functional.max_pool2d(torch.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


@pytest.fixture(scope="module")
def digits_torch():
    """(torch CNN trained for a few seconds, x_train, y_train, x_test, y_test)."""
    x_train, x_test, y_train, y_test = _digits_split()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model: threads only add waiting
    torch.manual_seed(0)
    model = _DigitsCNN()
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    xt, yt = torch.from_numpy(x_train), torch.from_numpy(y_train)
    generator = torch.Generator().manual_seed(0)
    for _ in range(10):
        order = torch.randperm(len(xt), generator=generator)
        for start in range(0, len(xt), 64):
            index = order[start:start + 64]
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(xt[index]), yt[index]).backward()
            optimizer.step()
    torch.set_num_threads(threads)
    return model.eval(), x_train, y_train, x_test, y_test


@pytest.fixture(scope="module")
def digits(digits_torch):
    """(float graph, x_train, y_train, x_test, y_test): the CNN converted by convert.from_torch."""
    model, x_train, y_train, x_test, y_test = digits_torch
    batch = torch.export.Dim("batch", min=1, max=4096)
    graph, _ = convert.from_torch(model, (torch.from_numpy(x_train[:2]),), dynamic_shapes={"x": {0: batch}})
    return graph, x_train, y_train, x_test, y_test


def _accuracy(graph, x, y):
    module = nn._ConvertedModule(graph, graph.weights, None, None)
    logits = np.asarray(module(x).read())
    return float(np.mean(np.argmax(logits, axis=1) == y))


@pytest.mark.parametrize("method", ["KL", "ADMM", "EMA"])
def test_digits_int8_accuracy_within_half_a_point(digits, method, tmp_path):
    graph, x_train, _, x_test, y_test = digits
    path = tmp_path / "digits_int8.mnnpy"
    calibration = [x_train[i:i + 64] for i in range(0, 512, 64)]
    quantized, report = mnnpy.quantize(graph, calibration, {"feature_quantize_method": method}, output=str(path),
                                       progress=False)
    float_accuracy = _accuracy(graph, x_test, y_test)
    assert float_accuracy >= 0.95
    # The file written loads as any model and holds the same int8 model.
    loaded = nn.load_module_from_file(str(path))
    int8_logits = np.asarray(loaded(x_test).read())
    int8_accuracy = float(np.mean(np.argmax(int8_logits, axis=1) == y_test))
    assert abs(int8_accuracy - float_accuracy) <= 0.005, (method, float_accuracy, int8_accuracy, str(report))
    assert [layer.op for layer in report.layers] == ["Conv", "Conv", quantized.nodes[-1].op]
    assert report.samples == 512 and report.batches == 8
    ops = quantized.op_counts()
    # Weights of all three layers, and the input, both conv outputs and the flattened features.
    assert ops["DequantizeLinear"] >= 3 + 4 and ops["QuantizeLinear"] == 4
    int8_weights = [w for w in quantized.weights.values() if w.dtype == np.int8 and w.ndim >= 2]
    assert len(int8_weights) == 3


def test_callable_package_and_model_untouched(digits):
    graph, x_train, *_ = digits
    from mnnpy import quantize
    nodes_before = [(n.op, list(n.inputs), list(n.outputs)) for n in graph.nodes]
    weights_before = {k: np.array(v) for k, v in graph.weights.items()}
    quantized, report = quantize(graph, [x_train[:32]], progress=False)
    assert quantize.quantize is not None and callable(quantize) and mnnpy.quantize is quantize
    assert [(n.op, n.inputs, n.outputs) for n in graph.nodes] == nodes_before
    assert set(graph.weights) == set(weights_before)
    for k, v in weights_before.items():
        assert np.array_equal(np.asarray(graph.weights[k]), v)
    assert isinstance(report.to_dict()["layers"][0]["cosine"], float)
    text = str(report)
    for layer in report.layers:
        assert layer.name in text


def test_accuracy_as_mnn_mnnquant(digits_torch, tmp_path):
    """MNN's own mnnquant and mnnpy.quantize on the same .mnn file, image folder and config."""
    import mnn_reference
    cv2 = pytest.importorskip("cv2")
    model, x_train, _, x_test, y_test = digits_torch
    onnx_path, mnn_path, mnn_int8 = tmp_path / "digits.onnx", tmp_path / "digits.mnn", tmp_path / "digits_int8.mnn"
    torch.onnx.export(model, (torch.from_numpy(x_train[:1]),), str(onnx_path), input_names=["input"],
                      output_names=["logits"], opset_version=13, dynamo=False)
    mnn_reference.convert(onnx_path, mnn_path)
    folder = tmp_path / "images"
    folder.mkdir()
    for k in range(128):  # gray levels k/16 stored as 15k: normal 1/240 gives the pixels back exactly
        cv2.imwrite(str(folder / f"{k:03d}.png"), np.rint(x_train[k, 0] * 240).astype(np.uint8))
    config = {"format": "GRAY", "mean": [0.0], "normal": [1 / 240.0], "width": 8, "height": 8, "path": str(folder),
              "feature_quantize_method": "KL", "weight_quantize_method": "MAX_ABS"}
    config_path = tmp_path / "quant.json"
    config_path.write_text(json.dumps(config))
    # MNN's tool through its extension module (its command's wrapper would try to install packages).
    mnn_reference.call("import sys, _tools; _tools.mnnquant(['mnnquant'] + sys.argv[1:])", mnn_path, mnn_int8,
                       config_path, what="mnnquant")
    runs = [(str(path), {"input": x_test[i:i + 1]}) for path in (mnn_path, mnn_int8) for i in range(len(x_test))]
    outputs = mnn_reference.batch([], runs, tmp_path)
    mnn_float = np.concatenate([o[0] for o in outputs[:len(x_test)]])
    mnn_quantized = np.concatenate([o[0] for o in outputs[len(x_test):]])
    quantized, report = mnnpy.quantize(str(mnn_path), None, str(config_path), progress=False)
    assert report.samples == 128
    ours = nn._ConvertedModule(quantized, quantized.weights, None, None)
    ours_logits = np.concatenate([np.asarray(ours(x_test[i:i + 1]).read()) for i in range(len(x_test))])

    def top1(logits):
        return float(np.mean(np.argmax(logits, axis=1) == y_test))
    assert abs(top1(mnn_quantized) - top1(mnn_float)) <= 0.005
    assert abs(top1(ours_logits) - top1(mnn_float)) <= 0.005
    assert top1(ours_logits) >= top1(mnn_quantized) - 2 / len(y_test)

    def snr(logits):  # of the logits against MNN's float model, each sample's mean removed
        a = mnn_float - mnn_float.mean(axis=1, keepdims=True)
        b = logits - logits.mean(axis=1, keepdims=True)
        return 10 * np.log10(np.sum(a.astype(np.float64) ** 2) / np.sum((a - b).astype(np.float64) ** 2))
    # The last layer's output reaches the model output through a reshape: it stays float.
    assert report.layers[-1].output_scale is None
    assert snr(ours_logits) >= snr(mnn_quantized) - 3.0, (snr(ours_logits), snr(mnn_quantized))


# ------------------------------------------------------------------ methods against NumPy
def _reference_kl_bin(histogram, target=128):
    """TensorRT's entropy calibration written out bin by bin: the largest candidate within
    1e-9 of the smallest divergence (ties go to the wider threshold)."""
    histogram = [float(v) for v in histogram]
    scores = {}
    for i in range(target, len(histogram) + 1):
        p = histogram[:i]
        p[-1] += sum(histogram[i:])
        width = i // target
        q = [0.0] * i
        for j in range(target):
            start = j * width
            stop = i if j == target - 1 else start + width
            total = sum(histogram[start:stop])
            nonzero = [k for k in range(start, stop) if histogram[k] != 0]
            for k in nonzero:
                q[k] = total / len(nonzero)
        p_sum, q_sum = sum(p), sum(q)
        kl, bad = 0.0, q_sum == 0
        for a, b in zip(p, q):
            if a > 0 and not bad:
                if b == 0:
                    bad = True
                    break
                kl += (a / p_sum) * np.log((a / p_sum) / (b / q_sum))
        if not bad:
            scores[i] = kl
    best = min(scores.values())
    return max(i for i, kl in scores.items() if kl <= best + 1e-9)


@pytest.mark.parametrize("distribution", ["laplace", "normal_with_outliers", "discrete_levels"])
def test_kl_threshold_matches_reference(distribution):
    rng = np.random.default_rng(7)
    if distribution == "laplace":
        values = rng.laplace(0.0, 1.0, 200_000)
    elif distribution == "discrete_levels":  # an 8-bit image's few gray levels: ties at zero divergence
        values = rng.integers(0, 17, 200_000) / 16.0
    else:
        values = np.concatenate([rng.normal(0.0, 1.0, 200_000), rng.uniform(-40, 40, 50)])
    values = values.astype(np.float32)
    peak = float(np.abs(values).max())
    magnitudes = np.abs(values)
    histogram, _ = np.histogram(magnitudes[magnitudes > 0], bins=HISTOGRAM_BINS, range=(0, peak))
    # The reference is slow in pure Python: compare on a 512-bin histogram (target 128), then
    # check that the observer applies the method to the full one.
    small = histogram.reshape(512, 4).sum(axis=1)
    assert kl_threshold_bin(small) == _reference_kl_bin(small)
    observer = FeatureObserver("KL", 127)
    observer.observe(values)
    observer.observe_histogram(values)
    assert np.array_equal(observer.histogram, histogram)  # zeros are left out
    assert observer.threshold() == kl_threshold_bin(histogram) * peak / HISTOGRAM_BINS
    if distribution == "normal_with_outliers":
        assert observer.threshold() < 0.5 * peak  # outliers are clipped
    if distribution == "discrete_levels":
        assert observer.threshold() == peak  # nothing to gain by clipping exact levels


def test_feature_methods_against_numpy():
    rng = np.random.default_rng(3)
    batches = [rng.normal(0.5 * k, 1.0 + k, (8, 16)).astype(np.float32) for k in range(4)]
    ema = FeatureObserver("EMA", 127)
    low, high = None, None
    for b in batches:
        ema.observe(b)
        if low is None:
            low, high = float(b.min()), float(b.max())
        else:
            low, high = 0.9 * low + 0.1 * float(b.min()), 0.9 * high + 0.1 * float(b.max())
    assert ema.threshold() == pytest.approx(max(abs(low), abs(high)), rel=1e-12)
    admm = FeatureObserver("ADMM", 127)
    for b in batches:
        admm.observe(b)
    values = np.concatenate([b.reshape(-1) for b in batches]).astype(np.float64)
    scale = admm.threshold() / 127
    levels = np.clip(np.rint(values / scale), -127, 127)
    # A fixed point of the alternating updates: the least-squares scale of its own levels.
    assert scale == pytest.approx(float(values @ levels / (levels @ levels)), rel=1e-6)
    max_abs_scale = np.abs(values).max() / 127
    max_abs_error = np.sum((values - max_abs_scale * np.clip(np.rint(values / max_abs_scale), -127, 127)) ** 2)
    assert np.sum((values - scale * levels) ** 2) <= max_abs_error


@pytest.mark.parametrize("axis,shape", [(0, (6, 3, 3, 3)), (1, (20, 7))])
def test_weight_quantization_per_channel_matches_numpy(axis, shape):
    rng = np.random.default_rng(5)
    w = rng.normal(0, 0.3, shape).astype(np.float32)
    w[(slice(None),) * axis + (2,)] = 0.0  # an all-zero channel gets scale 1
    levels, scales = quantize_weight(w, axis, 127, "MAX_ABS")
    reduced = tuple(d for d in range(w.ndim) if d != axis)
    peak = np.abs(w).max(axis=reduced, keepdims=True)
    expected_scale = np.where(peak > 0, peak / np.float32(127), np.float32(1)).astype(np.float32)
    expected = np.clip(np.rint(w / expected_scale), -127, 127).astype(np.int8)
    assert levels.dtype == np.int8 and np.array_equal(levels, expected)
    assert np.array_equal(scales, expected_scale.reshape(-1))
    admm_levels, admm_scales = quantize_weight(w, axis, 127, "ADMM")
    wc = np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1).astype(np.float64)
    qc = np.moveaxis(admm_levels, axis, 0).reshape(w.shape[axis], -1).astype(np.float64)
    assert np.array_equal(admm_levels, np.clip(np.rint(w / admm_scales.reshape(expected_scale.shape)), -127, 127))
    for c in range(w.shape[axis]):
        if np.any(qc[c]):
            assert admm_scales[c] == pytest.approx(wc[c] @ qc[c] / (qc[c] @ qc[c]), rel=1e-5)
        err_admm = np.sum((wc[c] - admm_scales[c] * qc[c]) ** 2)
        ec = np.moveaxis(expected, axis, 0).reshape(w.shape[axis], -1).astype(np.float64)
        err_max = np.sum((wc[c] - scales[c] * ec[c]) ** 2)
        assert err_admm <= err_max * (1 + 1e-6)


# ------------------------------------------------------------------ the QDQ graph against onnxruntime
def _float_onnx_model(rng):
    from onnx_testing import make_model
    from onnx import helper as h
    shapes = {"w1": ((8, 3, 3, 3), 0.3), "b1": ((8,), 0.1), "w2": ((8, 8, 3, 3), 0.2), "b2": ((8,), 0.1),
              "w3": ((5, 8 * 6 * 6), 0.1), "b3": ((5,), 0.1)}
    weights = {k: rng.normal(0, sd, shape).astype(np.float32) for k, (shape, sd) in shapes.items()}
    nodes = [h.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             h.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             h.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2"),
             h.make_node("Relu", ["c2"], ["r2"], name="relu2"),
             h.make_node("Flatten", ["r2"], ["f"], name="flatten"),
             h.make_node("Gemm", ["f", "w3", "b3"], ["y"], name="fc", transB=1)]
    return make_model(nodes, {"x": np.zeros((2, 3, 8, 8), np.float32)}, ["y"], weights)


def _graph_to_onnx(graph, extra_outputs=()):
    from onnx import helper as h
    from onnx import numpy_helper
    nodes = [h.make_node(n.op, n.inputs, n.outputs, name=n.name, **n.attrs) for n in graph.nodes]
    inputs = [h.make_tensor_value_info(v.name, h.np_dtype_to_tensor_dtype(np.dtype(v.dtype)), v.shape)
              for v in graph.inputs]
    outputs = [h.make_empty_tensor_value_info(o) for o in [v.name for v in graph.outputs] + list(extra_outputs)]
    onnx_graph = h.make_graph(nodes, "quantized", inputs, outputs,
                              initializer=[numpy_helper.from_array(np.asarray(w), k) for k, w in graph.weights.items()])
    return h.make_model(onnx_graph, opset_imports=[h.make_opsetid("", graph.opset)])


def test_qdq_graph_matches_onnxruntime(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(11)
    float_graph, _ = convert.from_onnx(_float_onnx_model(rng).SerializeToString(), optimize_level=0)
    calibration = [rng.normal(0, 1, (2, 3, 8, 8)).astype(np.float32) for _ in range(4)]
    quantized, report = mnnpy.quantize(float_graph, calibration, {"feature_quantize_method": "KL"}, progress=False)
    assert [layer.name for layer in report.layers] == ["conv1", "conv2", "fc"]
    q_tensors = [n.outputs[0] for n in quantized.nodes if n.op == "QuantizeLinear"]
    model = _graph_to_onnx(quantized, q_tensors)
    x = rng.normal(0, 1, (2, 3, 8, 8)).astype(np.float32)
    expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    module = nn._ConvertedModule(quantized, quantized.weights, None, ["y"] + q_tensors)
    got = [np.asarray(v.read()) for v in module(x)]
    # The input's levels come straight from x: identical. Later levels follow float convolutions
    # whose sums may round differently in the last bit: a level may move by one at a tie.
    assert got[1].dtype == np.int8 and np.array_equal(got[1], expected[1])
    for g, e in zip(got[2:], expected[2:]):
        assert g.dtype == e.dtype == np.int8
        assert np.abs(g.astype(int) - e.astype(int)).max() <= 1 and np.mean(g != e) < 1e-3
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-4, atol=1e-4 * np.abs(expected[0]).max())
    # Scales and zero points in the graph are the ones the report gives, zero points 0 (symmetric).
    for node in quantized.nodes:
        if node.op == "QuantizeLinear":
            assert quantized.weights[node.inputs[2]] == 0 and quantized.weights[node.inputs[2]].dtype == np.int8
    conv1 = report.layers[0]
    scale_name = next(n.inputs[1] for n in quantized.nodes if n.op == "QuantizeLinear" and n.inputs[0] == "x")
    assert float(quantized.weights[scale_name]) == conv1.feature_scale


def test_onnx_file_model_and_fixed_batch_size(tmp_path):
    rng = np.random.default_rng(12)
    path = tmp_path / "small.onnx"
    path.write_bytes(_float_onnx_model(rng).SerializeToString())  # its input fixes the batch size: 2
    calibration = [rng.normal(0, 1, (5, 3, 8, 8)).astype(np.float32) for _ in range(2)]
    from_file, report = mnnpy.quantize(str(path), calibration, {"feature_quantize_method": "ADMM"}, progress=False)
    assert report.source == str(path) and report.batches == 5 and report.samples == 10
    graph, _ = convert.from_onnx(str(path))
    from_graph, _ = mnnpy.quantize(graph, [np.concatenate(calibration)[i:i + 2] for i in range(0, 10, 2)],
                                   {"feature_quantize_method": "ADMM"}, progress=False)
    assert set(from_file.weights) == set(from_graph.weights)
    for k, w in from_file.weights.items():
        assert w.dtype == from_graph.weights[k].dtype and np.array_equal(w, from_graph.weights[k]), k


def test_report_matches_numpy(digits):
    graph, x_train, *_ = digits
    calibration = [x_train[i:i + 50] for i in range(0, 200, 50)]
    quantized, report = mnnpy.quantize(graph, calibration, {"feature_quantize_method": "EMA"}, progress=False)
    names = [layer.output for layer in report.layers] + [o.name for o in report.outputs]
    ref = nn._ConvertedModule(graph, graph.weights, None, names)
    test = nn._ConvertedModule(quantized, quantized.weights, None, names)
    a = [np.concatenate(parts) for parts in zip(*[[np.asarray(v.read()) for v in ref(b)] for b in calibration])]
    b = [np.concatenate(parts) for parts in zip(*[[np.asarray(v.read()) for v in test(b)] for b in calibration])]
    entries = report.layers + report.outputs
    for entry, ra, tb in zip(entries, a, b):
        ra, tb = ra.astype(np.float64).ravel(), tb.astype(np.float64).ravel()
        cosine = ra @ tb / np.sqrt((ra @ ra) * (tb @ tb))
        snr = 10 * np.log10((ra @ ra) / np.sum((ra - tb) ** 2))
        assert entry.cosine == pytest.approx(cosine, rel=1e-9)
        assert entry.snr_db == pytest.approx(snr, rel=1e-9)
        assert 0.99 < entry.cosine <= 1.0 and entry.snr_db > 15


def test_skip_quant_op_names_keeps_the_layer_float(digits):
    graph, x_train, *_ = digits
    first = next(n for n in graph.nodes if n.op == "Conv")
    quantized, report = mnnpy.quantize(graph, [x_train[:64]], {"skip_quant_op_names": [first.name]}, progress=False)
    assert report.skipped == [first.name] and first.name not in [layer.name for layer in report.layers]
    node = next(n for n in quantized.nodes if n.name == first.name)
    assert node.inputs[1] == first.inputs[1] and quantized.weights[node.inputs[1]].dtype == np.float32


def test_lower_bits_and_clamp_keep_levels_in_range(digits):
    graph, x_train, *_ = digits
    quantized, report = mnnpy.quantize(graph, [x_train[:64]], {"quant_bits": 4}, progress=False)
    levels = [w for w in quantized.weights.values() if w.dtype == np.int8 and w.ndim >= 2]
    assert all(np.abs(w).max() <= 7 for w in levels)
    q_tensors = [n.outputs[0] for n in quantized.nodes if n.op == "QuantizeLinear"]
    module = nn._ConvertedModule(quantized, quantized.weights, None, q_tensors)
    for v in module(x_train[:64]):
        assert np.abs(np.asarray(v.read()).astype(int)).max() <= 7


# ------------------------------------------------------------------ the command line
def _cli(*args):
    return subprocess.run([sys.executable, "-m", "mnnpy", "quantize", *args, "--no-progress"],
                          capture_output=True, text=True, env=python_env(), timeout=300)


def test_cli_with_npz(digits, tmp_path):
    graph, x_train, *_ = digits
    model_path, out_path, npz = tmp_path / "digits.mnnpy", tmp_path / "digits_int8.mnnpy", tmp_path / "calib.npz"
    convert.save_model(graph, str(model_path))
    np.savez(npz, **{graph.inputs[0].name: x_train[:96]})
    config = tmp_path / "quant.json"
    config.write_text(json.dumps({"feature_quantize_method": "ADMM", "batch_size": 32}))
    result = _cli(str(model_path), str(out_path), "--calibration", str(npz), "--config", str(config))
    assert result.returncode == 0, result.stderr
    expected, report = mnnpy.quantize(graph, [x_train[i:i + 32] for i in range(0, 96, 32)],
                                      {"feature_quantize_method": "ADMM"}, progress=False)
    for layer in report.layers:
        assert layer.name in result.stdout
    assert "ADMM" in result.stdout and "96 samples in 3 batches" in result.stdout
    x = x_train[100:140]
    got = np.asarray(nn.load_module_from_file(str(out_path))(x).read())
    want = np.asarray(nn._ConvertedModule(expected, expected.weights, None, None)(x).read())
    assert np.array_equal(got, want)


def test_cli_with_image_folder(digits, tmp_path):
    cv2 = pytest.importorskip("cv2")
    skimage_data = pytest.importorskip("skimage.data")
    graph, *_ = digits
    folder = tmp_path / "images"
    folder.mkdir()
    images = [skimage_data.camera(), skimage_data.astronaut(), skimage_data.coffee(), skimage_data.chelsea()]
    for k, image in enumerate(images):
        bgr = image if image.ndim == 2 else image[:, :, ::-1]
        cv2.imwrite(str(folder / f"{k}.png"), bgr)
    config = {"format": "GRAY", "mean": [0.0], "normal": [1 / 255.0], "width": 8, "height": 8, "batch_size": 2,
              "used_image_num": 3}
    config_path = tmp_path / "quant.json"
    config_path.write_text(json.dumps(config))
    model_path, out_path = tmp_path / "digits.mnnpy", tmp_path / "digits_int8.mnnpy"
    convert.save_model(graph, str(model_path))
    result = _cli(str(model_path), str(out_path), "--calibration", str(folder), "--config", str(config_path))
    assert result.returncode == 0, result.stderr
    assert "3 samples in 2 batches" in result.stdout
    # The same preprocessing in OpenCV: gray, bilinear resize, (pixel - mean) * normal.
    expected = []
    for k in range(3):
        image = cv2.imread(str(folder / f"{k}.png"), cv2.IMREAD_UNCHANGED)
        gray = image if image.ndim == 2 else cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
        small = cv2.resize(gray, (8, 8), interpolation=cv2.INTER_LINEAR)
        expected.append((small.astype(np.float32) / 255.0)[None])
    from mnnpy.quantize._calibration import preprocess_image
    from mnnpy.quantize._config import QuantConfig
    ours = np.stack([preprocess_image(str(folder / f"{k}.png"), QuantConfig(config)) for k in range(3)])
    # OpenCV's bilinear resize of 8-bit images rounds to the nearest level: one level apart at most.
    assert np.abs(ours - np.stack(expected)).max() <= 1 / 255.0 + 1e-6
    reference, _ = mnnpy.quantize(graph, [ours[:2], ours[2:]], progress=False)
    x = np.random.default_rng(0).uniform(0, 1, (16, 1, 8, 8)).astype(np.float32)
    got = np.asarray(nn.load_module_from_file(str(out_path))(x).read())
    want = np.asarray(nn._ConvertedModule(reference, reference.weights, None, None)(x).read())
    assert np.array_equal(got, want)


def test_cli_reports_errors(tmp_path, digits):
    graph, *_ = digits
    model_path = tmp_path / "digits.mnnpy"
    convert.save_model(graph, str(model_path))
    np.savez(tmp_path / "bad.npz", images=np.zeros((4, 1, 8, 8), np.float32))
    result = _cli(str(model_path), str(tmp_path / "out.mnnpy"), "--calibration", str(tmp_path / "bad.npz"))
    assert result.returncode == 1 and "'images' is not a model input" in result.stderr
    assert not (tmp_path / "out.mnnpy").exists()


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize("config,key", [({"feature_quantize_method": "MINMAX"}, "feature_quantize_method"),
                                        ({"weight_quantize_method": "KL"}, "weight_quantize_method"),
                                        ({"quant_bits": 9}, "quant_bits"),
                                        ({"batch_size": 0}, "batch_size"),
                                        ({"format": "YUV"}, "format"),
                                        ({"feature_clamp_value": 200}, "feature_clamp_value"),
                                        ({"mean": "zero"}, "mean"),
                                        ({"skip_quant_op_names": ["no_such_node"]}, "skip_quant_op_names"),
                                        ({"feature_method": "KL"}, "feature_method")])
def test_config_errors_name_the_key(digits, config, key):
    graph, x_train, *_ = digits
    with pytest.raises(ValueError, match=key):
        mnnpy.quantize(graph, [x_train[:8]], config, progress=False)


def test_calibration_names_must_match_inputs(digits, tmp_path):
    graph, x_train, *_ = digits
    name = graph.inputs[0].name
    with pytest.raises(ValueError, match=f"model input '{name}' is missing"):
        mnnpy.quantize(graph, [{"pixels": x_train[:8]}], progress=False)
    np.savez(tmp_path / "c.npz", pixels=x_train[:8])
    with pytest.raises(ValueError, match="'pixels' is not a model input"):
        mnnpy.quantize(graph, str(tmp_path / "c.npz"), progress=False)
    with pytest.raises(ValueError, match="no calibration data"):
        mnnpy.quantize(graph, None, progress=False)
    with pytest.raises(ValueError, match="no batches"):
        mnnpy.quantize(graph, [], progress=False)
    json_path = tmp_path / "q.json"
    json_path.write_text('{"used_image_count": 3}')
    with pytest.raises(ValueError, match="used_image_count"):
        mnnpy.quantize(graph, [x_train[:8]], str(json_path), progress=False)


# ------------------------------------------------------------------ the notebook
def test_quantization_notebook():
    pytest.importorskip("nbclient", reason="nbclient is needed to execute notebooks")
    pytest.importorskip("ipykernel", reason="ipykernel is needed to run a Python kernel")
    from test_notebooks import printed, run_notebook
    text = run_notebook("quantization.ipynb")
    float_top1 = float(printed(r"float top-1: ([0-9.]+)", text)[-1])
    assert float_top1 >= 0.95
    for method, top1 in printed(r"\s*(KL|ADMM|EMA): int8 top-1 ([0-9.]+)", text):
        assert abs(float(top1) - float_top1) <= 0.005, (method, top1, float_top1)
    assert "cosine" in text and "SNR dB" in text


def test_config_path_and_debug_print_the_report(digits, tmp_path, capsys):
    cv2 = pytest.importorskip("cv2")
    graph, x_train, *_ = digits
    for k in range(10):  # gray levels k/16 stored as 15k
        cv2.imwrite(str(tmp_path / f"{k}.png"), np.rint(x_train[k, 0] * 240).astype(np.uint8))
    config = {"format": "GRAY", "normal": [1 / 240.0], "path": str(tmp_path), "used_image_num": 6,
              "batch_size": 4, "debug": True}
    quantized, report = mnnpy.quantize(graph, None, config, progress=False)
    assert report.samples == 6 and report.batches == 2
    assert str(report) in capsys.readouterr().out
    # The same model as from the arrays preprocessed in NumPy: (pixel - 0) * float32(1 / 240).
    pixels = np.rint(x_train[:6] * 240).astype(np.uint8).astype(np.float32) * np.float32(1 / 240.0)
    same, _ = mnnpy.quantize(graph, [pixels[:4], pixels[4:6]], progress=False)
    for k, w in same.weights.items():
        assert np.array_equal(w, quantized.weights[k]), k
