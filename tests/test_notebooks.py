"""Runs notebooks/train_digits.ipynb headlessly (nbclient) and checks the test accuracy it
prints is at least 0.97."""
import os
import re

import pytest
from helpers import python_env

nbformat = pytest.importorskip("nbformat", reason="nbformat is needed to read notebooks")
nbclient = pytest.importorskip("nbclient", reason="nbclient is needed to execute notebooks")
pytest.importorskip("ipykernel", reason="ipykernel is needed to run a Python kernel")
pytest.importorskip("sklearn", reason="scikit-learn provides the digits data set")

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def test_train_digits_notebook():
    path = os.path.join(ROOT, "notebooks", "train_digits.ipynb")
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.outputs, "the notebook is committed with its outputs cleared"
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
    text = "".join(o.get("text", "") for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs
                   if o.get("output_type") == "stream")
    found = re.findall(r"test accuracy: ([0-9.]+)", text)
    assert found, f"the notebook printed no test accuracy; its output:\n{text[-2000:]}"
    assert float(found[-1]) >= 0.97
