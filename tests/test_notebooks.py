"""Runs the notebooks in notebooks/ headlessly (nbclient) and checks what each prints:
train_digits' test accuracy, audio_features' spectrogram error against torch.stft and the
chirp's frequencies, from_mnn's differences from onnxruntime, pretrained_ocr's detector against
onnxruntime."""
import importlib.util
import os
import re

import pytest
from helpers import python_env

nbformat = pytest.importorskip("nbformat", reason="nbformat is needed to read notebooks")
nbclient = pytest.importorskip("nbclient", reason="nbclient is needed to execute notebooks")
pytest.importorskip("ipykernel", reason="ipykernel is needed to run a Python kernel")

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
UNIT = 2.0 ** -24  # float32 unit roundoff
NUMBER = r"([-+0-9.eE]+)"


def run_notebook(name):
    """Executes notebooks/<name> (committed with its outputs cleared) and returns the text its
    code cells printed."""
    path = os.path.join(ROOT, "notebooks", name)
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.outputs, f"{name} is committed with its outputs cleared"
    # The kernel inherits this environment: make it import the mnnpy these tests import (the
    # installed package, or a checkout with MNNPY_CORE_DIR during development).
    env_path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = python_env()["PYTHONPATH"]
    try:
        client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                         resources={"metadata": {"path": os.path.join(ROOT, "notebooks")}})
        client.execute()
    finally:
        if env_path is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = env_path
    return "".join(o.get("text", "") for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs
                   if o.get("output_type") == "stream")


def printed(pattern, text):
    """The groups of every match of ``pattern`` in ``text`` (at least one)."""
    found = re.findall(pattern, text)
    assert found, f"the notebook printed nothing matching {pattern!r}; its output:\n{text[-2000:]}"
    return found


def test_train_digits_notebook():
    pytest.importorskip("sklearn", reason="scikit-learn provides the digits data set")
    text = run_notebook("train_digits.ipynb")
    assert float(printed(r"test accuracy: ([0-9.]+)", text)[-1]) >= 0.97


def test_audio_features_notebook():
    pytest.importorskip("torch", reason="the notebook checks its spectrogram with torch.stft")
    text = run_notebook("audio_features.ipynb")
    f_start, f_end, duration, sample_rate = map(float, printed(
        rf"chirp: {NUMBER} Hz to {NUMBER} Hz over {NUMBER} s at {NUMBER} Hz", text)[0])
    (n_fft, peak, frame_l1), = [tuple(map(float, m)) for m in printed(
        rf"n_fft {NUMBER}, peak \|X\| {NUMBER}, largest frame sum\|x\| {NUMBER}", text)]
    relative_error = float(printed(rf"largest relative error against torch\.stft: {NUMBER}", text)[0])
    # As in tests/test_audio.py: each DFT part is off by at most e = 2 n_fft u L (window <= 1),
    # so a power by 4 |X| e + 2 e^2; relative to the largest power |X|max^2.
    e = 2 * n_fft * UNIT * frame_l1
    assert relative_error <= (4 * peak * e + 2 * e ** 2) / peak ** 2
    frames = printed(rf"(first|last) frame \(centre {NUMBER} s\): loudest bin {NUMBER} Hz", text)
    assert [f[0] for f in frames] == ["first", "last"]
    for _, centre, loudest in frames:
        # The chirp's frequency at the frame's centre; the loudest bin within one bin of it.
        expected = f_start + (f_end - f_start) * float(centre) / duration
        assert abs(float(loudest) - expected) <= sample_rate / n_fft
    assert abs(float(frames[0][2]) - f_start) < abs(float(frames[0][2]) - f_end)
    assert abs(float(frames[1][2]) - f_end) < abs(float(frames[1][2]) - f_start)


def test_from_mnn_notebook():
    for module in ("torch", "torchvision", "onnxruntime", "skimage"):
        pytest.importorskip(module, reason=f"the notebook uses {module}")
    text = run_notebook("from_mnn.ipynb")
    largest = float(printed(rf"largest \|output\|: {NUMBER}", text)[0])
    differences = dict(printed(rf"(\w+): max abs difference from onnxruntime {NUMBER}", text))
    assert set(differences) == {"session", "nn", "expr"}
    # mobilenet_v2: 53 layers of dot products, the longest 1280 terms (the classifier); either
    # implementation may be off by gamma_1280 of the largest output in each (as tests/test_mnn_model.py).
    gamma = 1280 * UNIT / (1 - 1280 * UNIT)
    bound = 2 * 53 * gamma * max(1.0, largest)
    for name, difference in differences.items():
        assert float(difference) <= bound, f"{name}: {difference} over {bound}"
    assert printed(r"same top class: (\w+)", text) == ["True"] * 3


def test_pretrained_ocr_notebook():
    for module in ("onnxruntime", "skimage"):
        pytest.importorskip(module, reason=f"the notebook uses {module}")
    # The model file's package (installed without its dependencies, so not importable).
    assert importlib.util.find_spec("rapidocr_onnxruntime"), "run `scripts/setup.sh test`"
    text = run_notebook("pretrained_ocr.ipynb")
    # Probabilities in [0, 1] after ~200 float32 layers: agreement far inside a visible difference.
    assert float(printed(rf"max abs difference from onnxruntime: {NUMBER}", text)[0]) < 1e-4
    assert int(printed(r"text regions found: (\d+)", text)[0]) >= 1
