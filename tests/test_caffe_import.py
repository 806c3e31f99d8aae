"""Caffe models (prototxt and caffemodel written here, tests/caffe_models.py) converted by
mnnpy.convert.from_caffe and run, compared with the same networks written with PyTorch over the
same weights, and with MNN's own Caffe converter and runtime (.venv-mnn, tests/mnn_reference.py)."""
import re

import numpy as np
import pytest

import caffe_models
import mnn_reference
from mnnpy import expr as F
from mnnpy import nn
from mnnpy.convert import from_caffe
from mnnpy.convert._onnx_ops import UnsupportedOperator, instantiate

U32 = 2.0 ** -24  # float32 unit roundoff


def _tolerance(model, reference):
    """A float32 error bound: each layer's sums of at most `fan_in` products err by at most
    fan_in * u relative to the sum of their magnitudes (taken as the output's largest magnitude),
    and each of the net's layers adds its own."""
    fan_in = max([int(np.prod(b.shape[1:])) for blobs in model.weights.values() for b in blobs if b.ndim > 1] + [16])
    layers = model.prototxt.count("layer {")
    return 4 * layers * fan_in * U32 * max(1.0, float(np.abs(reference).max()))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Each model written out, converted by mnnpy (saved and loaded back) and by MNN, run by both
    on seeded inputs, and run by PyTorch."""
    import torch
    root = tmp_path_factory.mktemp("caffe")
    rng = np.random.default_rng(0)
    entries, conversions, runs = {}, [], []
    for name, make in caffe_models.MODELS.items():
        model = make(rng)
        prototxt, caffemodel = model.write(root)
        inputs = {k: rng.standard_normal(shape).astype(np.float32) for k, shape in model.inputs.items()}
        graph, report = from_caffe(prototxt, caffemodel, root / f"{name}.mnnpy")
        module = nn.load_module_from_file(str(root / f"{name}.mnnpy"), list(model.inputs), model.outputs)
        outs = module.forward([inputs[k] for k in model.inputs])
        outs = outs if isinstance(outs, (list, tuple)) else [outs]
        with torch.no_grad():
            reference = {k: v.numpy() for k, v in model.torch_forward({k: torch.from_numpy(v)
                                                                          for k, v in inputs.items()}).items()}
        entries[name] = {"model": model, "graph": graph, "report": report, "inputs": inputs,
                         "ours": dict(zip(model.outputs, (np.asarray(o.read()) for o in outs))), "torch": reference,
                         "files": (prototxt, caffemodel)}
        if model.mnn_outputs:
            conversions.append(((prototxt, caffemodel), root / f"{name}.mnn", []))
            runs.append((root / f"{name}.mnn", inputs, list(model.mnn_outputs.values())))
    # LeNet's weights as old Caffe wrote them: legacy 4-D blob shapes, one fixed32 field per value.
    lenet = entries["lenet"]
    legacy = root / "lenet_legacy.caffemodel"
    legacy.write_bytes(lenet["model"].caffemodel(legacy=True, packed=False))
    lenet["legacy_file"] = legacy
    conversions.append(((lenet["files"][0], legacy), root / "lenet_legacy.mnn", []))
    runs.append((root / "lenet_legacy.mnn", lenet["inputs"], ["prob"]))
    mnn_names = [n for n in entries if entries[n]["model"].mnn_outputs]
    results = mnn_reference.batch(conversions, runs, root)
    for name, outs in zip(mnn_names, results):
        entries[name]["mnn"] = dict(zip(entries[name]["model"].mnn_outputs, outs))
    lenet["mnn_legacy"] = results[-1][0]
    return entries


@pytest.mark.parametrize("name", list(caffe_models.MODELS))
def test_matches_pytorch(built, name):
    entry = built[name]
    assert entry["torch"], "every model has outputs PyTorch computes"
    for key, expected in entry["torch"].items():
        got = entry["ours"][key]
        assert got.shape == expected.shape, key
        np.testing.assert_allclose(got, expected, rtol=0, atol=_tolerance(entry["model"], expected), err_msg=key)


@pytest.mark.parametrize("name", [n for n, make in caffe_models.MODELS.items()
                                  if make(np.random.default_rng(0)).mnn_outputs])
def test_matches_mnn(built, name):
    entry = built[name]
    for key, expected in entry["mnn"].items():
        got = entry["ours"][key]
        # MNN keeps Flatten's and PriorBox's results 4-D ([N, C, 1, 1], [1, 2, K, 1]); Caffe drops the ones.
        assert expected.size == got.size and [d for d in expected.shape if d != 1] == [d for d in got.shape if d != 1]
        np.testing.assert_allclose(got, expected.reshape(got.shape), rtol=0,
                                   atol=_tolerance(entry["model"], expected), err_msg=key)


def test_graph_keeps_blob_names_and_folds_batch_norm(built):
    entry = built["resnet_block"]
    graph = entry["graph"]
    # The outputs are Caffe's blobs, named as in the prototxt, even where a layer wrote them in place.
    assert [v.name for v in graph.outputs] == ["out", "power"]
    assert [v.name for v in graph.inputs] == ["data"] and graph.inputs[0].saved_shape == [2, 8, 9, 9]
    # BatchNorm + Scale (in place, after a convolution) end up inside the convolution's weights.
    assert "BatchNormalization" not in entry["report"].ops_after
    assert entry["report"].ops_before["Conv"] == 2
    lenet = built["lenet"]["graph"]
    assert lenet.producer == "Caffe (LeNet)" and [v.name for v in lenet.outputs] == ["prob"]


def test_ceil_pooling_drops_windows_starting_in_the_padding(built):
    assert built["extras"]["ours"]["clipped_max"].shape == (2, 3, 3, 3)
    assert built["vgg_lrn"]["ours"]["pool3"].shape == (1, 6, 1, 1)


def test_prior_box_variance_single_value(built):
    """One variance serves all four coordinates; the boxes do not depend on it."""
    model = built["ssd"]["model"]
    text = model.prototxt.replace("variance: 0.2 variance: 0.1 variance: 0.3 variance: 0.4", "variance: 0.25")
    priors = _run(text, model.caffemodel(), built["ssd"]["inputs"])["priors"]
    reference = built["ssd"]["ours"]["priors"]
    np.testing.assert_array_equal(priors[:, 0], reference[:, 0])
    # prior2's values come last: an 8x10 map, 6 priors a position (ratios 1, 2, 1/2, 3, 1/3 and
    # the max size), 4 coordinates each.
    boxes_second = reference.shape[2] - 8 * 10 * 6 * 4
    assert np.all(priors[:, 1, boxes_second:] == np.float32(0.25))
    np.testing.assert_array_equal(priors[:, 1, :boxes_second], reference[:, 1, :boxes_second])


def test_unoptimized_and_fp16_conversions(built):
    """optimize_level 0 keeps every layer's node (BatchNorm + Scale unfolded) and computes the
    same; fp16 stores the weights as float16."""
    entry = built["resnet_block"]
    graph, report = from_caffe(*entry["files"], optimize_level=0)
    assert report.ops_after["BatchNormalization"] == 2
    got = _run_graph(graph, entry["inputs"])
    for key, expected in entry["ours"].items():
        np.testing.assert_allclose(got[key], expected, rtol=0, atol=_tolerance(entry["model"], expected))
    graph, _ = from_caffe(*entry["files"], fp16=True)
    assert {w.dtype for w in graph.weights.values()} == {np.dtype(np.float16)}


def _run(prototxt, caffemodel, inputs):
    return _run_graph(from_caffe(prototxt, caffemodel)[0], inputs)


def _run_graph(graph, inputs):
    types = {k: (v.shape, v.dtype) for k, v in inputs.items()}
    placeholders, outs = instantiate(graph, {k: F.const(w) for k, w in graph.weights.items()}, types)
    for k, p in placeholders.items():
        p.write(inputs[k])
    names = [v.name for v in graph.outputs]
    return {n: np.asarray(o.read()) for n, o in zip(names, outs)}


def _lenet_v1():
    """The LeNet of caffe_models in Caffe's V1 format: 'layers' with enum types, input_dim."""
    return """name: "LeNetV1"
input: "data"
input_dim: 2 input_dim: 1 input_dim: 28 input_dim: 28
layers { name: "conv1" type: CONVOLUTION bottom: "data" top: "conv1" blobs_lr: 1 blobs_lr: 2
  convolution_param { num_output: 8 kernel_size: 5 } }
layers { name: "pool1" type: POOLING bottom: "conv1" top: "pool1" pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layers { name: "conv2" type: CONVOLUTION bottom: "pool1" top: "conv2" convolution_param { num_output: 16 kernel_size: 5 } }
layers { name: "pool2" type: POOLING bottom: "conv2" top: "pool2" pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layers { name: "ip1" type: INNER_PRODUCT bottom: "pool2" top: "ip1" inner_product_param { num_output: 32 } }
layers { name: "relu1" type: RELU bottom: "ip1" top: "ip1" }
layers { name: "ip2" type: INNER_PRODUCT bottom: "ip1" top: "ip2" inner_product_param { num_output: 10 } }
layers { name: "prob" type: SOFTMAX bottom: "ip2" top: "prob" }
"""


def test_legacy_unpacked_blobs_read_as_mnn_reads_them(built):
    entry = built["lenet"]
    got = _run(entry["files"][0], entry["legacy_file"], entry["inputs"])["prob"]
    np.testing.assert_array_equal(got, _run(*entry["files"], entry["inputs"])["prob"])
    np.testing.assert_allclose(got, entry["mnn_legacy"], rtol=0, atol=_tolerance(entry["model"], got))


def test_v1_layers_with_legacy_unpacked_blobs_match(built):
    """The V1 format, with blobs of the legacy 4-D shape and one fixed32 field per value (as
    old Caffe wrote them), gives what the current format gives."""
    entry = built["lenet"]
    model = entry["model"]
    v1 = caffe_models.caffemodel([(k, "", b) for k, b in model.weights.items()], v1=True, legacy=True, packed=False)
    got = _run(_lenet_v1(), v1, entry["inputs"])
    np.testing.assert_array_equal(got["prob"], _run(model.prototxt, model.caffemodel(), entry["inputs"])["prob"])


def test_training_layers_are_left_out(built):
    """A train_val prototxt: data and loss layers of the TRAIN phase, an Accuracy layer of TEST."""
    entry = built["lenet"]
    model = entry["model"]
    text = model.prototxt.replace('layer { name: "data" type: "Input"', """
layer { name: "mnist" type: "Data" top: "data" top: "label" include { phase: TRAIN }
  data_param { source: "train_lmdb" batch_size: 64 backend: LMDB } }
layer { name: "data" type: "Input\"""", 1) + """
layer { name: "accuracy" type: "Accuracy" bottom: "ip2" bottom: "label" top: "accuracy" include { phase: TEST } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip2" bottom: "label" top: "loss" exclude { phase: TEST } }
"""
    graph, _ = from_caffe(text, model.caffemodel())
    assert [v.name for v in graph.outputs] == ["prob"]
    np.testing.assert_array_equal(_run(text, model.caffemodel(), entry["inputs"])["prob"],
                                  _run(model.prototxt, model.caffemodel(), entry["inputs"])["prob"])


def test_input_overwritten_in_place_is_an_output():
    text = """input: "data" input_shape { dim: 1 dim: 2 dim: 3 dim: 3 }
layer { name: "relu" type: "ReLU" bottom: "data" top: "data" }"""
    graph, _ = from_caffe(text, b"")
    # The input keeps its name; the output takes the name of the layer that wrote it, as in MNN.
    assert [v.name for v in graph.inputs] == ["data"] and [v.name for v in graph.outputs] == ["relu"]
    x = np.random.default_rng(3).standard_normal((1, 2, 3, 3)).astype(np.float32)
    np.testing.assert_array_equal(_run(text, b"", {"data": x})["relu"], np.maximum(x, 0))


def test_text_and_bytes_sources_and_comments(built, tmp_path):
    model = built["fire"]["model"]
    text = "# a comment line\n" + model.prototxt.replace("convolution_param { num_output: 4",
                                                         "convolution_param {  # a trailing comment\n  num_output: 4")
    graph, report = from_caffe(text, model.caffemodel(), tmp_path / "fire.mnnpy")
    assert report.source == "<Caffe model>" and report.file_bytes > 0
    assert report.parameters == sum(b.size for blobs in model.weights.values() for b in blobs)
    prototxt, caffemodel = built["fire"]["files"]
    assert from_caffe(prototxt, caffemodel)[1].source == str(prototxt)


# ------------------------------------------------------------------ bad input
def test_truncated_caffemodel(built):
    model = built["lenet"]["model"]
    data = model.caffemodel()
    for cut in (len(data) // 2, len(data) - 3, 7):
        with pytest.raises(ValueError, match="damaged or truncated"):
            from_caffe(model.prototxt, data[:cut])


def test_unknown_layer_types_are_named(built):
    model = built["lenet"]["model"]
    text = model.prototxt + """
layer { name: "crop1" type: "MyCrop" bottom: "prob" top: "crop1" }
layer { name: "crop2" type: "MyCrop" bottom: "crop1" top: "crop2" }
layer { name: "odd" type: "Oddity" bottom: "crop2" top: "odd" }
"""
    with pytest.raises(UnsupportedOperator) as e:
        from_caffe(text, model.caffemodel())
    assert "MyCrop (layers 'crop1', 'crop2')" in str(e.value) and "Oddity (layer 'odd')" in str(e.value)
    with pytest.raises(UnsupportedOperator, match="DetectionOutput"):
        from_caffe(model.prototxt + 'layer { name: "det" type: "DetectionOutput" bottom: "prob" top: "det" }',
                   model.caffemodel())


def test_missing_blobs_are_named(built):
    model = built["lenet"]["model"]
    weights = dict(model.weights)
    weights["conv2"] = weights["conv2"][:1]  # the bias is missing
    data = caffe_models.caffemodel([(k, "", b) for k, b in weights.items()])
    with pytest.raises(ValueError, match=r"layer 'conv2' \(Convolution\) has 1 blobs, but 2 \(weight and bias\)"):
        from_caffe(model.prototxt, data)
    del weights["ip2"]
    data = caffe_models.caffemodel([(k, "", b) for k, b in weights.items() if k != "conv2"] + [("conv2", "", model.weights["conv2"])])
    with pytest.raises(ValueError, match=r"no weights for layer 'ip2' \(InnerProduct\)"):
        from_caffe(model.prototxt, data)
    weights = dict(model.weights, ip1=[model.weights["ip1"][0][:, :100], model.weights["ip1"][1]])
    with pytest.raises(ValueError, match="ip1"):
        caffe_net = caffe_models.caffemodel([(k, "", b) for k, b in weights.items()])
        graph, _ = from_caffe(model.prototxt, caffe_net)
        _run(model.prototxt, caffe_net, built["lenet"]["inputs"])


@pytest.mark.parametrize("text,message", [
    ('layer { name: "a" type: "ReLU" bottom: "data" top: "a" ', "line 3: message opened at line 3 is not closed"),
    ('layer { name: "a" type: "ReLU" bottom: "data" top: "a" } }', "line 3: unexpected '}'"),
    ('layer { name: "a" type: "ReLU" bottom: "nothing" top: "a" }', "layer 'a' reads blob 'nothing'"),
    ('layer { name: "a" type: "Pooling" bottom: "data" top: "a" pooling_param { pool: STOCHASTIC kernel_size: 2 } }',
     r"layer 'a' \(Pooling\): pool STOCHASTIC is not supported"),
    ('layer { name: "a" type: "LRN" bottom: "data" top: "a" lrn_param { local_size: 4 } }', "local_size 4 must be odd"),
    ('layer { name: "a" type: "Eltwise" bottom: "data" bottom: "data" top: "a" eltwise_param { coeff: 1 } }',
     "1 coefficients for 2 bottoms"),
    ('layer { name: "a" type: "ReLU" bottom: "data" top: "a" relu_param { negative_slope: fast } }',
     "'negative_slope' must be a number"),
])
def test_bad_prototxt_is_refused_clearly(text, message):
    prototxt = 'name: "bad"\ninput: "data" input_shape { dim: 1 dim: 2 dim: 4 dim: 4 }\n' + text
    with pytest.raises(ValueError, match=message):
        from_caffe(prototxt, b"")


def test_files_that_are_not_caffe(tmp_path):
    with pytest.raises(FileNotFoundError):
        from_caffe(str(tmp_path / "missing.prototxt"), b"")
    with pytest.raises(ValueError, match="holds no layers"):
        from_caffe('input: "data" input_dim: 1 input_dim: 1 input_dim: 2 input_dim: 2', b"\x08\x01")
    with pytest.raises(TypeError, match="caffemodel takes a path or bytes"):
        from_caffe('input: "data"', 3)
    with pytest.raises(ValueError, match=re.escape("1 inputs need 4 'input_dim' values, got 2")):
        from_caffe('input: "data" input_dim: 1 input_dim: 2\nlayer { name: "r" type: "ReLU" bottom: "data" top: "r" }',
                   b"")
