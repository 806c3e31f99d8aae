"""Static int8 quantization (mnnpy.quantize, EMA features, MAX_ABS per-channel weights) of real
pretrained models that PyPI packages ship, calibrated and judged on real inputs: PaddleOCR's text
detector, recognizer and direction classifier (rapidocr-onnxruntime) on scikit-image's photos of
printed text and a printed page, and magika's file-type classifier on the bytes of the Python standard library.

Each model is judged by what its users read from it, int8 against float32:
- the detector: the text mask (probability above DB's 0.3 threshold), as intersection over union;
- the recognizer: the CTC greedy decoding of text-line crops, as the similarity of the character
  sequences (difflib's ratio: 1 is identical);
- the direction classifier: the predicted orientation;
- magika: the predicted file type.
The bounds are the quality this quantizer is held to, below what it measures (docs/quantization.md,
"Pretrained models", gives the measurements and onnxruntime's on the same data). Calibration and
evaluation inputs are disjoint crops of the same photos. The inputs are fixed, so the results are
too, up to the float kernels' rounding on each SIMD target, which the margins absorb.
"""
import difflib
import glob
import os
import sysconfig

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
skimage_data = pytest.importorskip("skimage.data")

from mnnpy import nn, quantize  # noqa: E402
from test_pretrained_onnx import package_file  # noqa: E402

CONFIG = {"feature_quantize_method": "EMA", "weight_quantize_method": "MAX_ABS"}


def normalized(gray, height, width):
    """A uint8 gray crop as PaddleOCR's normalized (1, 3, H, W) float32 input."""
    from skimage.transform import resize
    g = resize(gray.astype(np.float32) / 255.0, (height, width), anti_aliasing=True)
    return ((np.repeat(g[None], 3, axis=0) - 0.5) / 0.5)[None].astype(np.float32)


def quantized_module(path, calibration):
    graph, _ = quantize(path, [(x,) for x in calibration], CONFIG, progress=False)
    return nn._ConvertedModule(graph, graph.weights, None, None)


def ctc_greedy(probabilities):
    """Class indices of a CTC output (1, T, classes): best class per step, repeats merged, blanks
    (class 0) dropped."""
    best = probabilities[0].argmax(-1)
    keep = (best != 0) & np.r_[True, best[1:] != best[:-1]]
    return best[keep].tolist()


def text_line_crops(height=48, width=320):
    """Windows of one to two lines of text sliding over scikit-image's text and page photos, at the
    recognizer's input size."""
    crops = []
    for image in (skimage_data.text(), skimage_data.page()):
        rows, cols = image.shape
        line = 24
        span = line * width // height
        for y in range(0, rows - line, line // 2):
            for x in range(0, cols - span + 1, span // 2):
                crops.append(normalized(image[y:y + line, x:x + span], height, width))
    return crops


@pytest.fixture(scope="module")
def recognized_lines():
    """Crops in which the float recognizer reads at least 3 characters, with its readings."""
    path = package_file("rapidocr_onnxruntime", "models", "ch_PP-OCRv4_rec_infer.onnx")
    module = nn.load_module_from_file(path)
    lines = [(x, ctc_greedy(module.forward(x).numpy())) for x in text_line_crops()]
    lines = [(x, text) for x, text in lines if len(text) >= 3]
    assert len(lines) >= 24, len(lines)
    order = np.random.default_rng(0).permutation(len(lines))
    return path, [lines[i] for i in order]


def test_text_recognizer_reads_the_same_text(recognized_lines):
    path, lines = recognized_lines
    calibration, evaluation = lines[:16], lines[16:]
    int8 = quantized_module(path, [x for x, _ in calibration])
    similarity = [difflib.SequenceMatcher(None, text, ctc_greedy(np.asarray(int8(x)))).ratio() for x, text in evaluation]
    assert np.mean(similarity) >= 0.85, np.mean(similarity)


def test_direction_classifier_keeps_its_predictions(recognized_lines):
    path = package_file("rapidocr_onnxruntime", "models", "ch_ppocr_mobile_v2.0_cls_infer.onnx")
    # The recognizer's text lines at the classifier's size, upright and upside down.
    from skimage.transform import resize
    lines = [x for x, _ in recognized_lines[1]]
    crops = [resize(x[0].transpose(1, 2, 0), (48, 192), anti_aliasing=True).transpose(2, 0, 1)[None].astype(np.float32)
             for x in lines]
    crops += [x[:, :, ::-1, ::-1].copy() for x in crops]
    calibration, evaluation = crops[:8] + crops[-8:], crops[8:-8]
    float_module = nn.load_module_from_file(path)
    int8 = quantized_module(path, calibration)
    expected = np.array([float_module.forward(x).numpy().argmax() for x in evaluation])
    got = np.array([np.asarray(int8(x)).argmax() for x in evaluation])
    assert len(np.unique(expected)) == 2  # both orientations are seen
    assert (got == expected).mean() >= 0.9, (got == expected).mean()


def test_text_detector_finds_the_same_text():
    path = package_file("rapidocr_onnxruntime", "models", "ch_PP-OCRv4_det_infer.onnx")
    height, width = 352, 896
    rng = np.random.default_rng(0)
    calibration = []
    for image in (skimage_data.text(), skimage_data.page()):
        rows, cols = image.shape
        for _ in range(4):
            y, x = rng.integers(0, rows // 3), rng.integers(0, cols // 3)
            calibration.append(normalized(image[y:y + 2 * rows // 3, x:x + 2 * cols // 3], height, width))
    page = skimage_data.page()
    float_module = nn.load_module_from_file(path)
    int8 = quantized_module(path, calibration)
    for image in (page, page[:, ::-1]):
        x = normalized(image, height, width)
        expected = float_module.forward(x).numpy() > 0.3
        got = np.asarray(int8(x)) > 0.3
        assert expected.mean() > 0.05  # the text is found
        iou = (expected & got).sum() / (expected | got).sum()
        assert iou >= 0.85, iou


def test_file_type_classifier_keeps_its_labels():
    path = package_file("magika", "models", "standard_v3_3", "model.onnx")
    files = sorted(f for f in glob.glob(os.path.join(sysconfig.get_paths()["stdlib"], "**", "*.*"), recursive=True)
                   if os.path.isfile(f) and os.path.getsize(f) > 2048)
    rng = np.random.default_rng(0)
    features = np.full((96, 2048), 256, np.int32)  # magika's features: first and last 1024 bytes
    for row, i in enumerate(rng.choice(len(files), 96, replace=False)):
        content = open(files[i], "rb").read()
        features[row, :1024] = np.frombuffer(content[:1024], np.uint8)
        features[row, 1024:] = np.frombuffer(content[-1024:], np.uint8)
    int8 = quantized_module(path, [features[i:i + 8] for i in range(0, 32, 8)])
    expected = nn.load_module_from_file(path).forward(features[32:]).numpy().argmax(1)
    got = np.asarray(int8(features[32:])).argmax(1)
    assert len(np.unique(expected)) >= 3
    assert (got == expected).mean() >= 0.95, (got == expected).mean()
