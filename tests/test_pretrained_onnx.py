"""Real pretrained ONNX models that PyPI packages ship (weights trained by others), loaded as a
user would with ``nn.load_module_from_file`` and compared with onnxruntime on real inputs:
PaddleOCR's text detector, recognizer and direction classifier (rapidocr-onnxruntime), the
silero voice-activity detector in each of its exports (silero-vad), and magika's file-type
classifier. scripts/setup.sh installs the packages (model files only, without dependencies)."""
import importlib.util
import os

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
skimage_data = pytest.importorskip("skimage.data")

from mnnpy import nn  # noqa: E402


def package_file(package, *parts):
    spec = importlib.util.find_spec(package)
    if spec is None:
        pytest.fail(f"the package '{package}' is missing: run `scripts/setup.sh test`")
    path = os.path.join(spec.submodule_search_locations[0], *parts)
    assert os.path.exists(path), path
    return path


def onnxruntime_outputs(path, feeds, outputs=None):
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session.run(outputs, feeds)


def assert_matches(got, expected, rtol):
    """Each output within ``rtol`` of the largest magnitude of onnxruntime's (float32 through
    hundreds of layers: errors relative to the output's scale, not per element)."""
    got = got if isinstance(got, list) else [got]
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        g = g.numpy()
        assert g.shape == e.shape
        scale = max(float(np.abs(e).max()), 1e-6)
        assert np.abs(g.astype(np.float64) - e).max() <= rtol * scale, np.abs(g - e).max() / scale


def text_image(height, width):
    """scikit-image's printed-text sample as a normalized (1, 3, H, W) float32 batch."""
    from skimage.transform import resize
    gray = resize(skimage_data.text().astype(np.float32) / 255.0, (height, width), anti_aliasing=True)
    rgb = np.repeat(gray[None], 3, axis=0)
    return ((rgb - 0.5) / 0.5)[None].astype(np.float32)


def test_ocr_text_detector():
    path = package_file("rapidocr_onnxruntime", "models", "ch_PP-OCRv4_det_infer.onnx")
    x = text_image(352, 896)
    # The logits before the final sigmoid (whose outputs saturate at 0 and 1).
    logits = "p2o.Add.281"
    module = nn.load_module_from_file(path, ["x"], [logits])
    assert_matches(module.forward(x), _inner_outputs(path, {"x": x}, [logits]), rtol=1e-4)
    full = nn.load_module_from_file(path)
    (expected,) = onnxruntime_outputs(path, {"x": x})
    got = full.forward(x).numpy()
    assert np.abs(got - expected).max() < 1e-4  # probabilities
    assert (expected > 0.5).mean() > 0.002  # the printed text is found
    assert ((got > 0.5) == (expected > 0.5)).mean() > 0.999


def _inner_outputs(path, feeds, names):
    """onnxruntime's values of inner tensors: the model with those tensors as its outputs."""
    import onnx
    model = onnx.load(path)
    del model.graph.output[:]
    model.graph.output.extend(onnx.helper.make_empty_tensor_value_info(n) for n in names)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


@pytest.mark.parametrize("model, shape", [("ch_PP-OCRv4_rec_infer.onnx", (48, 320)),
                                          ("ch_ppocr_mobile_v2.0_cls_infer.onnx", (48, 192))])
def test_ocr_recognizer_and_direction_classifier(model, shape):
    path = package_file("rapidocr_onnxruntime", "models", model)
    x = text_image(*shape)
    name = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).get_inputs()[0].name
    assert_matches(nn.load_module_from_file(path).forward(x), onnxruntime_outputs(path, {name: x}), rtol=1e-4)


def speech_like_audio(rng, samples):
    """A voiced-sounding signal: harmonics of a slowly gliding pitch with noise."""
    t = np.arange(samples) / 16000.0
    pitch = 140 + 30 * np.sin(2 * np.pi * 2 * t)
    phase = 2 * np.pi * np.cumsum(pitch) / 16000.0
    voiced = sum(np.sin(k * phase) / k for k in range(1, 6))
    return (0.3 * voiced + 0.02 * rng.normal(size=samples)).astype(np.float32)


@pytest.mark.parametrize("model", ["silero_vad.onnx", "silero_vad_16k_op15.onnx", "silero_vad_half.onnx",
                                   "silero_vad_op18_ifless.onnx"])
def test_voice_activity_detector_streams_its_state(rng, model):
    """Chunks of 512 samples at 16 kHz with the state fed back, as the detector is used."""
    path = package_file("silero_vad", "data", model)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    module = nn.load_module_from_file(path)
    audio = speech_like_audio(rng, 512 * 6)
    state_ours = state_ref = np.zeros((2, 1, 128), np.float32)
    for chunk in audio.reshape(6, 1, 512):
        feeds = {"input": chunk, "state": state_ref, "sr": np.array(16000, np.int64)}
        feeds = {k: v for k, v in feeds.items() if k in names}
        expected = session.run(None, feeds)
        ours = dict(feeds, state=state_ours) if "state" in names else feeds
        got = module.forward(*[ours[n] for n in names])
        assert_matches(got, expected, rtol=1e-4)
        state_ours, state_ref = got[1].numpy(), expected[1]


def test_file_type_classifier(rng):
    path = package_file("magika", "models", "standard_v3_3", "model.onnx")
    # Byte features of two inputs: a Python source's beginning and end, padded with 256.
    source = open(__file__, "rb").read()
    features = np.full((2, 2048), 256, np.int32)
    features[0, :1024] = np.frombuffer(source[:1024], np.uint8)
    features[1, 1024:] = np.frombuffer(source[-1024:], np.uint8)
    expected = onnxruntime_outputs(path, {"bytes": features})
    assert_matches(nn.load_module_from_file(path).forward(features), expected, rtol=1e-5)
    assert (nn.load_module_from_file(path).forward(features).numpy().argmax(1) == expected[0].argmax(1)).all()
