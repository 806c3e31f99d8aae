"""One entry for every model format: `python -m mnnpy convert` with MNN's converter's flags and
`nn.load_module_from_file`, which pick the importer by -f, extension or contents."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import helper as h  # noqa: E402

from mnnpy import convert, nn  # noqa: E402
from mnnpy.convert._formats import detect_format  # noqa: E402
from onnx_testing import make_model  # noqa: E402


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "mnnpy", "convert", *map(str, args)], capture_output=True, text=True)


@pytest.fixture
def relu_onnx(tmp_path):
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    path = tmp_path / "relu.onnx"
    onnx.save(make_model(h.make_node("Relu", ["x"], ["y"]), {"x": x}, ["y"]), path)
    return path, x


def test_mnn_converter_flags(relu_onnx, tmp_path):
    path, x = relu_onnx
    out = run_cli("-f", "ONNX", "--modelFile", path, "--MNNModel", tmp_path / "a.mnnpy", "--bizCode", "biz")
    assert out.returncode == 0, out.stderr
    assert "Relu 1" in out.stdout
    np.testing.assert_array_equal(nn.load_module_from_file(str(tmp_path / "a.mnnpy")).forward(x).numpy(),
                                  np.maximum(x, 0))
    # The format comes from the contents when the name does not tell: ONNX has no signature.
    renamed = tmp_path / "relu.bin"
    shutil.copy(path, renamed)
    assert detect_format(renamed) == "ONNX"
    assert run_cli(renamed, tmp_path / "b.mnnpy").returncode == 0


def test_command_line_errors(relu_onnx, tmp_path):
    path, _ = relu_onnx
    unknown = run_cli("-f", "KERAS", path, tmp_path / "c.mnnpy")
    assert unknown.returncode == 2 and "invalid choice" in unknown.stderr
    missing = run_cli(path)
    assert missing.returncode == 2 and "needs the source model and the file to write" in missing.stderr
    wrong = run_cli("-f", "TFLITE", path, tmp_path / "d.mnnpy")
    assert wrong.returncode == 1 and wrong.stderr.startswith("error:")
    assert not os.path.exists(tmp_path / "d.mnnpy")


def test_caffe_model_by_flags_by_extension_and_in_load_module(tmp_path, rng):
    from caffe_models import lenet
    model = lenet(rng)
    prototxt, caffemodel = model.write(tmp_path)
    x = rng.uniform(-1, 1, (2, 1, 28, 28)).astype(np.float32)
    graph, _ = convert.from_caffe(prototxt, caffemodel)
    expected = nn._ConvertedModule(graph, graph.weights, ["data"], []).forward(x).numpy()

    out = run_cli("-f", "CAFFE", "--modelFile", caffemodel, "--prototxt", prototxt, "--MNNModel", tmp_path / "a.mnnpy")
    assert out.returncode == 0, out.stderr
    np.testing.assert_array_equal(nn.load_module_from_file(str(tmp_path / "a.mnnpy")).forward(x).numpy(), expected)
    # By extension, the .prototxt found beside the .caffemodel.
    assert run_cli(caffemodel, tmp_path / "b.mnnpy").returncode == 0
    np.testing.assert_array_equal(nn.load_module_from_file(str(caffemodel)).forward(x).numpy(), expected)
    # Without a .prototxt beside it, the error says what is missing.
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(caffemodel, alone / "net.caffemodel")
    with pytest.raises(ValueError, match="needs its .prototxt"):
        nn.load_module_from_file(str(alone / "net.caffemodel"))
    np.testing.assert_array_equal(
        nn.load_module_from_file(str(alone / "net.caffemodel"), prototxt=str(prototxt)).forward(x).numpy(), expected)


def test_torchscript_file_by_command_line_and_load_module(tmp_path):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(144, 5))
    x = torch.randn(2, 3, 8, 8)
    path = tmp_path / "net.pt"
    torch.jit.trace(model.eval(), x).save(str(path))
    expected = model(x).detach().numpy()
    bound = 1e-5 * np.abs(expected).max()  # float32 sums of at most 144 products
    # A saved TorchScript file keeps no input shapes: the command line and the loader take them.
    with pytest.raises(ValueError, match="example_inputs"):
        nn.load_module_from_file(str(path))
    module = nn.load_module_from_file(str(path), example_inputs=(x,))
    assert np.abs(module.forward(x.numpy()).numpy() - expected).max() <= bound
    out = run_cli(path, tmp_path / "net.mnnpy", "--input-shape", "2x3x8x8")
    assert out.returncode == 0, out.stderr
    assert np.abs(nn.load_module_from_file(str(tmp_path / "net.mnnpy")).forward(x.numpy()).numpy() - expected).max() \
        <= bound
