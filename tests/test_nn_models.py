"""Whole torchvision models exported to ONNX: mnnpy's outputs against onnxruntime's within
rtol 1e-3 / atol 1e-4, at batch 1 and 2, through a converted model file."""
import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("torchvision")
ort = pytest.importorskip("onnxruntime")

from model_zoo import export_torchvision  # noqa: E402

from mnnpy import convert, nn  # noqa: E402


@pytest.mark.parametrize("name,size", [("resnet18", 112), ("mobilenet_v2", 96), ("mobilenet_v3_large", 96)])
def test_classifier_matches_onnxruntime(rng, tmp_path, name, size):
    path = export_torchvision(name, size)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    _, report = convert.from_onnx(path, tmp_path / "m.mnnpy")
    assert "BatchNormalization" not in report.ops_after and not report.unsupported
    module = nn.load_module_from_file(str(tmp_path / "m.mnnpy"), ["input"], ["output"])
    for batch in (1, 2):
        x = rng.standard_normal((batch, 3, size, size)).astype(np.float32)
        expected = session.run(None, {"input": x})[0]
        got = module.forward(x).numpy()
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("name", ["deeplabv3_mobilenet_v3_large", "lraspp_mobilenet_v3_large"])
def test_segmentation_matches_onnxruntime(rng, name):
    path = export_torchvision(name, 128)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    module = nn.load_module_from_file(path, ["input"], ["output"])
    x = rng.standard_normal((1, 3, 128, 128)).astype(np.float32)
    expected = session.run(None, {"input": x})[0]
    got = module.forward(x).numpy()
    assert got.shape == expected.shape == (1, 21, 128, 128)
    np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-4)


def test_vision_transformer_matches_onnxruntime(rng):
    path = export_torchvision("vit_b_16", 224)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    module = nn.load_module_from_file(path)
    x = rng.standard_normal((1, 3, 224, 224)).astype(np.float32)
    expected = session.run(None, {"input": x})[0]
    np.testing.assert_allclose(module.forward(x).numpy(), expected, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("kind", ["bert", "gpt2"])
def test_transformers_match_onnxruntime_at_several_lengths(rng, kind):
    pytest.importorskip("transformers")
    from model_zoo import export_transformer
    path = export_transformer(kind)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    module = nn.load_module_from_file(path)
    for batch, seq in ((1, 128), (2, 37)):
        ids = rng.integers(0, 1000, (batch, seq)).astype(np.int64)
        feed = {"input_ids": ids}
        if "attention_mask" in names:
            mask = np.ones_like(ids)
            mask[-1, seq // 2:] = 0  # padding in the last sequence
            feed["attention_mask"] = mask
        expected = session.run(None, feed)[0]
        np.testing.assert_allclose(module.forward(feed).numpy(), expected, rtol=1e-3, atol=1e-4)


def test_detection_with_its_post_processing_matches_onnxruntime(rng):
    from model_zoo import export_ssdlite
    path = export_ssdlite()
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    module = nn.load_module_from_file(path)
    # The graph is built per call (its shapes depend on the scores): a second image must not
    # see values computed for the first.
    for _ in range(2):
        image = rng.uniform(0, 1, (3, 320, 320)).astype(np.float32)
        expected = session.run(None, {"input": image})
        got = module.forward(image)
        assert [g.name for g in got] == ["boxes", "scores", "labels"]
        for g, e in zip(got, expected):
            assert g.shape == e.shape
            np.testing.assert_allclose(g.numpy(), e, rtol=1e-3, atol=1e-4)
