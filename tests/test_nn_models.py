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
