"""What MNN programs rely on right after `import MNN` (mnnpy aliased as MNN)."""
import subprocess
import sys

LAZY = r"""
import sys
import mnnpy as MNN
before = {m for m in ("mnnpy.nn", "mnnpy.cv", "mnnpy.numpy", "mnnpy.convert") if m in sys.modules}
assert MNN.nn.load_module_from_file is sys.modules["mnnpy.nn"].load_module_from_file
assert MNN.cv.resize is sys.modules["mnnpy.cv"].resize
assert MNN.numpy.zeros is sys.modules["mnnpy.numpy"].zeros
assert MNN.convert.from_onnx is sys.modules["mnnpy.convert"].from_onnx
assert {"nn", "cv", "numpy", "convert", "expr"} <= set(dir(MNN))
try:
    MNN.not_a_submodule
except AttributeError as e:
    assert "not_a_submodule" in str(e)
else:
    raise AssertionError("an unknown attribute must raise AttributeError")
print(sorted(before))
"""


def test_submodules_are_attributes_after_the_top_level_import_loaded_on_first_access():
    proc = subprocess.run([sys.executable, "-c", LAZY], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]"  # none of them was imported by `import mnnpy` itself
