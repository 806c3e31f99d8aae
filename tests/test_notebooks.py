"""Runs the notebooks in notebooks/ headlessly (nbclient), each a copy from a clean kernel, and
checks what each prints against real references: train_digits' test accuracy and loss, audio_features'
spectrogram error against torch.stft and the chirp's frequencies, from_mnn's differences from
onnxruntime, pretrained_ocr's detector against onnxruntime, numpy_dropin against NumPy,
image_pipeline against OpenCV, NumPy and torch, vulkan against the CPU and torch, llm_generate
against transformers, model_profiling against torch, and quantization's trade-off. The notebooks
are committed executed, with their outputs (pictures included): test_committed_with_outputs."""
import importlib.util
import math
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
    """Executes a copy of notebooks/<name> in memory from a clean kernel (the committed file keeps
    its outputs from when it was last run) and returns the text its code cells printed now."""
    path = os.path.join(ROOT, "notebooks", name)
    nb = nbformat.read(path, as_version=4)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    committed = [bool(cell.outputs) for cell in code]
    for cell in code:
        cell.outputs = []
        cell.execution_count = None
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
    shows = [bool(cell.outputs) for cell in code]
    assert all(c or not s for c, s in zip(committed, shows)), \
        f"{name}: cells {[i + 1 for i, (c, s) in enumerate(zip(committed, shows)) if s and not c]} show outputs " \
        f"when run but are committed without them: run the notebook and commit it with its outputs"
    return "".join(o.get("text", "") for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs
                   if o.get("output_type") == "stream")


NOTEBOOKS = sorted(f for f in os.listdir(os.path.join(ROOT, "notebooks")) if f.endswith(".ipynb"))


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_committed_with_outputs(name):
    """Each notebook is committed executed: every code cell ran, in order, from a fresh kernel,
    none raised, and it shows what it printed or drew (run_notebook checks that each cell with
    outputs when run has them in the committed file too)."""
    nb = nbformat.read(os.path.join(ROOT, "notebooks", name), as_version=4)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code, f"{name} has no code cells"
    for i, cell in enumerate(code):
        assert cell.execution_count == i + 1, f"{name}: code cell {i + 1} was not executed in order"
        assert not [o for o in cell.outputs if o.get("output_type") == "error"], f"{name}: code cell {i + 1} raised"
    assert sum(bool(cell.outputs) for cell in code) >= len(code) / 2, f"{name} is committed without its outputs"


def printed(pattern, text):
    """The groups of every match of ``pattern`` in ``text`` (at least one)."""
    found = re.findall(pattern, text)
    assert found, f"the notebook printed nothing matching {pattern!r}; its output:\n{text[-2000:]}"
    return found


def test_train_digits_notebook():
    pytest.importorskip("sklearn", reason="scikit-learn provides the digits data set")
    text = run_notebook("train_digits.ipynb")
    assert float(printed(r"test accuracy: ([0-9.]+)", text)[-1]) >= 0.97
    first, last = map(float, printed(rf"training loss: first epoch {NUMBER}, last epoch {NUMBER}", text)[0])
    assert last < first


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


def gamma(n):
    """Higham's gamma_n: the relative error bound of n float32 roundings in a row."""
    return n * UNIT / (1 - n * UNIT)


def test_numpy_dropin_notebook():
    text = run_notebook("numpy_dropin.ipynb")
    n, d, c = map(int, printed(r"sizes: n (\d+), d (\d+), classes (\d+)", text)[0])
    l1 = float(printed(rf"largest \|x\| @ \|w\|: {NUMBER}", text)[0])
    difference = float(printed(rf"max difference from NumPy: {NUMBER}", text)[0])
    # Each logit of either implementation is off by at most gamma_d max(|x| @ |w|), and the
    # subtraction of the row's largest (|difference| <= 2 l1) rounds once more; a softmax of
    # logits each off by delta is off by a factor exp(2 delta) at most; the exponential is
    # within mnnpy's tested float32 ufunc tolerance (2e-5 relative, tests/test_numpy_ufuncs.py;
    # NumPy's within an ulp), the row sum of c terms and the division within gamma_{c+1}.
    # Probabilities are at most 1, so each implementation is off by at most that factor - 1.
    delta = gamma(d) * l1 + UNIT * 2 * l1
    exp_tolerance = 2e-5
    each = math.exp(2 * delta) * ((1 + exp_tolerance) / (1 - exp_tolerance)) * (1 + gamma(c + 1)) - 1
    assert difference <= 2 * each, (difference, 2 * each)
    ratios = printed(rf"(\d+) rows: NumPy {NUMBER} ms, mnnpy {NUMBER} ms, ratio {NUMBER}", text)
    assert len(ratios) == 3
    for rows, numpy_ms, mnnpy_ms, ratio in ratios:  # timings: positive numbers, never compared
        assert float(numpy_ms) > 0 and float(mnnpy_ms) > 0 and float(ratio) > 0


def test_image_pipeline_notebook():
    for module in ("torch", "torchvision", "cv2", "skimage", "matplotlib"):
        pytest.importorskip(module, reason=f"the notebook uses {module}")
    text = run_notebook("image_pipeline.ipynb")
    # resize INTER_LINEAR on uint8 is exact against OpenCV (tests/test_cv_geometry.py); the
    # color conversion is a channel swap.
    assert dict(printed(r"(resized|rgb): max abs difference from OpenCV (\d+)", text)) == {"resized": "0", "rgb": "0"}
    largest, difference = map(float, printed(
        rf"normalized: largest \|value\| {NUMBER}, max abs difference from NumPy {NUMBER}", text)[0])
    # (p / 255 - mean) / std: p / 255 in [0, 1] off by 2 roundings at most (a reciprocal and a
    # product, where an implementation divides so), the subtraction (|result| <= 1) by one more,
    # the division by std >= 0.224 by 2 more of the result: 3u / 0.224 + 2u |v| each.
    each = 3 * UNIT / 0.224 + 2 * UNIT * largest
    assert difference <= 2 * each
    assert printed(r"computed before reading: (\w+)", text) == ["False"]  # one graph, run when read
    layers, longest = map(int, printed(r"layers with products: (\d+), longest dot product: (\d+) terms", text)[0])
    output = float(printed(rf"largest \|output\|: {NUMBER}", text)[0])
    difference = float(printed(rf"max abs difference from torch: {NUMBER}", text)[0])
    # As tests/test_mnn_model.py: either implementation may be off by gamma_longest of the
    # largest output in each layer with products.
    assert difference <= 2 * layers * gamma(longest) * max(1.0, output)


def test_llm_generate_notebook():
    for module in ("torch", "transformers", "tokenizers", "jinja2"):
        pytest.importorskip(module, reason=f"the notebook uses {module}")
    text = run_notebook("llm_generate.ipynb")
    assert printed(r"loaded: (\w+)", text) == ["True"]
    prompt = printed(r"prompt ids: \[([0-9, ]+)\]", text)[0].split(",")
    new = printed(r"new ids: \[([0-9, ]+)\]", text)[0].split(",")
    assert len(new) == 16
    assert printed(r"context: prompt_len (\d+), gen_seq_len (\d+)", text) == [(str(len(prompt)), "16")]
    pieces, joined = printed(r"streamed pieces: (\d+) joined equal to the answer: (\w+)", text)[0]
    assert int(pieces) > 1 and joined == "True"
    assert printed(r"chat prompt: '(.*)'", text) == [r"<|im_start|>user\nhello world<|im_end|>\n<|im_start|>assistant\n"]
    # As tests/test_llm.py's check_close: float32 sums over 64-112 terms per product through two
    # layers, in another order than torch's, differ by a few ulps a step: 1e-4 of the largest logit.
    assert float(printed(rf"max \|difference\| / largest \|logit\|: {NUMBER}", text)[0]) <= 1e-4
    gap = float(printed(rf"smallest gap between the two best logits / largest \|logit\|: {NUMBER}", text)[0])
    if gap > 2e-4:  # closer than twice the tolerance, either token may win
        assert printed(r"greedy tokens as transformers': (\w+)", text) == ["True"]


def test_vulkan_notebook():
    pytest.importorskip("torch", reason="the notebook converts a PyTorch model")
    text = run_notebook("vulkan.ipynb")
    if "no Vulkan device" in text:
        pytest.skip("no Vulkan device (lavapipe: scripts/setup.sh test)")
    k, l1, difference = map(float, printed(
        rf"matmul \+ tanh: k (\d+), largest \|a\| @ \|b\| {NUMBER}, max difference from the CPU {NUMBER}", text)[0])
    # Each backend's product off by gamma_k max(|a| @ |b|); tanh (slope <= 1, |tanh| <= 1) within
    # 1e-5 relative on Vulkan (docs/gpu.md) and 2e-5 on the CPU (tests/test_numpy_ufuncs.py).
    assert difference <= 2 * gamma(int(k)) * l1 + 1e-5 + 2e-5
    layers, longest, largest = printed(rf"model: (\d+) layers with products, longest (\d+) terms, "
                                       rf"largest \|output\| {NUMBER}", text)[0]
    bound = 2 * int(layers) * gamma(int(longest)) * max(1.0, float(largest))  # as test_image_pipeline_notebook
    from_cpu, from_torch = map(float, printed(rf"max difference from the CPU {NUMBER}, from torch {NUMBER}", text)[0])
    assert from_cpu <= bound and from_torch <= bound
    # Every op of the model has a Vulkan kernel: nothing falls back to the CPU.
    on_device, computing = printed(r"steps on vulkan: (\d+) of (\d+) computing steps", text)[0]
    assert int(computing) >= 5 and on_device == computing


def test_model_profiling_notebook():
    for module in ("torch", "torchvision", "matplotlib", "graphviz"):
        pytest.importorskip(module, reason=f"the notebook uses {module}")
    text = run_notebook("model_profiling.ipynb")
    layers, longest = map(int, printed(r"layers with products: (\d+), longest dot product: (\d+) terms", text)[0])
    largest = float(printed(rf"largest \|output\|: {NUMBER}", text)[0])
    bound = 2 * layers * gamma(longest) * max(1.0, largest)  # as test_image_pipeline_notebook
    assert float(printed(rf"max abs difference from torch: {NUMBER}", text)[0]) <= bound
    assert float(printed(rf"as exported: max abs difference from torch {NUMBER}", text)[0]) <= bound
    ours, torchs, channels = map(int, printed(r"parameters: (\d+), torch's: (\d+), batch norm channels: (\d+)", text)[0])
    assert ours == torchs - channels  # each batch norm's weight and bias folded into one bias
    exported_nodes, exported_steps, nodes, steps = map(int, printed(
        r"graph nodes as exported: (\d+), planned steps (\d+); after the converter's passes: (\d+), planned steps (\d+)",
        text)[0])
    assert steps < nodes < exported_nodes and steps < exported_steps  # fusion in both passes
    layers, longest, largest = printed(rf"block: (\d+) layers with products, longest (\d+) terms, "
                                       rf"largest \|output\| {NUMBER}", text)[0]
    bound = 2 * int(layers) * gamma(int(longest)) * max(1.0, float(largest))
    blocks = printed(rf"block (as exported|after the converter's passes): (\d+) planned steps, "
                     rf"max abs difference from torch {NUMBER}", text)
    assert [b[0] for b in blocks] == ["as exported", "after the converter's passes"]
    assert int(blocks[1][1]) < int(blocks[0][1])
    assert all(float(b[2]) <= bound for b in blocks)


def test_quantization_tradeoff_notebook():
    """The trade-off section of quantization.ipynb (tests/test_quantize.py checks its accuracies)."""
    for module in ("sklearn", "matplotlib"):
        pytest.importorskip(module, reason=f"the notebook uses {module}")
    text = run_notebook("quantization.ipynb")
    weights = int(printed(r"weights in convolutions and linear layers: (\d+)", text)[0])
    rows = {name: (float(top1), int(size), float(ms)) for name, top1, size, ms in printed(
        rf"(float32|int8): top-1 {NUMBER}, file (\d+) bytes, {NUMBER} ms for \d+ images", text)}
    assert set(rows) == {"float32", "int8"}
    float_top1 = float(printed(r"float top-1: ([0-9.]+)", text)[-1])
    assert rows["float32"][0] == float_top1
    assert abs(rows["int8"][0] - float_top1) <= 0.005  # as tests/test_quantize.py
    # Four bytes a weight in float32, one in int8 (plus per-channel scales and the graph).
    assert rows["float32"][1] >= 4 * weights and weights <= rows["int8"][1] < rows["float32"][1]
    assert rows["float32"][2] > 0 and rows["int8"][2] > 0  # times: never compared
