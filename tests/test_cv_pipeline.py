"""Preprocessing and model in one graph: an image file decoded, converted, resized and
normalized by mnnpy.cv and mnnpy.numpy feeds a converted model without being computed first;
the whole chain plans and runs once, and its result equals OpenCV + NumPy + onnxruntime's."""
import cv2
import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("torchvision")
ort = pytest.importorskip("onnxruntime")

from cv_helpers import photos  # noqa: E402
from model_zoo import export_torchvision  # noqa: E402

import mnnpy.cv as mcv  # noqa: E402
import mnnpy.numpy as mnp  # noqa: E402
from mnnpy import _core, nn  # noqa: E402

SIZE = 96
MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)


@pytest.fixture(scope="module")
def model():
    path = export_torchvision("mobilenet_v2", SIZE)
    return nn.load_module_from_file(path, ["input"], ["output"]), ort.InferenceSession(
        path, providers=["CPUExecutionProvider"])


def reference(session, bgr):
    rgb = cv2.resize(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB), (SIZE, SIZE), interpolation=cv2.INTER_LINEAR)
    x = ((rgb.astype(np.float32) / 255.0 - MEAN) / STD).transpose(2, 0, 1)[None]
    return session.run(None, {"input": np.ascontiguousarray(x)})[0]


def test_file_to_prediction_is_one_graph(model, tmp_path):
    module, session = model
    photo = photos()["astronaut"]
    path = str(tmp_path / "photo.png")
    assert cv2.imwrite(path, photo)
    image = mcv.imread(path)
    rgb = mcv.cvtColor(image, mcv.COLOR_BGR2RGB)
    small = mcv.resize(rgb, (SIZE, SIZE), interpolation=mcv.INTER_LINEAR)
    x = mnp.expand_dims(mnp.transpose((small.astype(np.float32) / 255.0 - MEAN) / STD, (2, 0, 1)), 0)
    runs = _core.executor_stats()["runs"]
    prediction = module.forward(x)
    assert _core.executor_stats()["runs"] == runs, "building the chain computed something"
    got = prediction.numpy()
    assert _core.executor_stats()["runs"] == runs + 1, "the chain ran as more than one plan"
    np.testing.assert_allclose(got, reference(session, photo), rtol=1e-3, atol=1e-4)


def test_blob_from_image_feeds_the_model(model):
    module, session = model
    photo = photos()["coffee"]
    blob = mcv.dnn.blobFromImage(photo, 1 / 255.0, (SIZE, SIZE), (0, 0, 0), swapRB=True)
    got = module.forward((blob - MEAN.reshape(1, 3, 1, 1)) / STD.reshape(1, 3, 1, 1)).numpy()
    expected_blob = cv2.dnn.blobFromImage(photo, 1 / 255.0, (SIZE, SIZE), (0, 0, 0), swapRB=True)
    np.testing.assert_allclose(np.asarray(blob), expected_blob, rtol=0, atol=1e-6)
    np.testing.assert_allclose(got, reference(session, photo), rtol=1e-3, atol=1e-4)
