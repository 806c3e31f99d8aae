"""Whole models on the Vulkan backend (lavapipe in CI, so small inputs and small configurations of
the same architectures): outputs against onnxruntime on the CPU within 1e-3 of the output's
scale, and the heavy ops checked to have run on the device."""
import numpy as np
import pytest

from mnnpy import nn

from helpers import profiled_forward

pytest.importorskip("torch")
pytest.importorskip("torchvision")
ort = pytest.importorskip("onnxruntime")

from model_zoo import export_torchvision, export_transformer  # noqa: E402

# Ops whose every step must run on the device in these models.
DEVICE_OPS = {"Conv2D", "MatMul", "LayerNorm", "Reduce", "MaxPool2D", "AvgPool2D", "Resize", "Raster"}
SMALL_VIT = dict(image_size=64, patch_size=16, num_layers=2, num_heads=4, hidden_dim=64, mlp_dim=128)


def check(path, feeds):
    expected = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    module = nn.load_module_from_file(path, list(feeds), [], backend="vulkan")
    got, steps = profiled_forward(module, list(feeds.values()))
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-3 * np.max(np.abs(expected)))
    on_cpu = sorted({s["op"] for s in steps if s["backend"] == "cpu" and s["op"] in DEVICE_OPS})
    assert not on_cpu, f"ran on the CPU: {on_cpu}"
    return steps


@pytest.mark.parametrize("name", ["resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_large"])
def test_classifiers(vulkan, rng, name):
    path = export_torchvision(name, 64)
    steps = check(path, {"input": rng.standard_normal((2, 3, 64, 64)).astype(np.float32)})
    assert {s["scheme"].split()[1] for s in steps if s["op"] == "Conv2D"} >= {"1x1" if name != "resnet18" else "implicit-gemm"}


def test_vision_transformer(vulkan, rng):
    path = export_torchvision("VisionTransformer", 64, **SMALL_VIT)
    check(path, {"input": rng.standard_normal((2, 3, 64, 64)).astype(np.float32)})


@pytest.mark.parametrize("kind", ["bert", "gpt2"])
def test_transformers(vulkan, rng, kind):
    path = export_transformer(kind)
    ids = rng.integers(0, 1000, (2, 24)).astype(np.int64)
    feeds = {"input_ids": ids}
    if kind == "bert":
        mask = np.ones_like(ids)
        mask[-1, 12:] = 0  # padding in the last sequence
        feeds["attention_mask"] = mask
    steps = check(path, feeds)
    # The int64 mask programs, the bool gathers and casts run on the device too: nothing falls back.
    assert not [s["op"] for s in steps if s["fallback"]]
