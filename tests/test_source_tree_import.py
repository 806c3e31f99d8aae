"""Importing mnnpy from a folder that holds its Python sources but no compiled core (Python
started in the source checkout, whose mnnpy/ comes before the installed package on sys.path)
fails with an ImportError that says so and what to do instead, with the original error chained;
the normal import is unaffected."""
import os
import shutil
import subprocess
import sys

import mnnpy

from helpers import python_env

PACKAGE = os.path.dirname(os.path.abspath(mnnpy.__file__))
CHAINED = "The above exception was the direct cause of the following exception"


def _without_core(folder, names):
    # The compiled core (and anything compiled beside it), as a source checkout lacks them.
    return [n for n in names if n.startswith("_core") or n == "__pycache__" or n.endswith((".so", ".pyd"))]


def _source_copy(tmp_path):
    """A folder with a copy of the package's Python sources and no compiled module."""
    shutil.copytree(PACKAGE, tmp_path / "mnnpy", ignore=_without_core)
    assert not list((tmp_path / "mnnpy").glob("_core*"))
    return tmp_path


def _import_in(folder, env):
    return subprocess.run([sys.executable, "-c", "import mnnpy; print(mnnpy.__file__)"], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=120)


def _env_without_overrides():
    return {k: v for k, v in os.environ.items() if k not in ("MNNPY_CORE_DIR", "PYTHONPATH")}


def test_import_from_a_source_tree_says_what_happened_and_what_to_do(tmp_path):
    folder = _source_copy(tmp_path)
    done = _import_in(folder, _env_without_overrides())
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: mnnpy was imported from " + str(folder / "mnnpy")), done.stderr
    assert "holds its Python sources but not its compiled core (_core" in last
    assert "Start Python from another directory" in last
    assert "MNNPY_CORE_DIR=$PWD/build/dev" in last and "scripts/dev_build.sh build/dev" in last
    # The original error stays chained above the explanation.
    assert CHAINED in done.stderr
    original = done.stderr[:done.stderr.index(CHAINED)]
    assert "ImportError: cannot import name '_core'" in original


def test_a_core_folder_without_the_core_is_named(tmp_path):
    folder = _source_copy(tmp_path / "src")
    empty = tmp_path / "empty-build"
    empty.mkdir()
    done = _import_in(folder, dict(_env_without_overrides(), MNNPY_CORE_DIR=str(empty)))
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"ImportError: MNNPY_CORE_DIR={empty} holds no compiled core (_core"), done.stderr
    assert CHAINED in done.stderr


def test_the_normal_import_still_works(tmp_path):
    # The same mnnpy as this test process (the installed package, or a checkout with MNNPY_CORE_DIR),
    # from a folder without an mnnpy/ of its own.
    done = _import_in(tmp_path, python_env())
    assert done.returncode == 0, done.stderr
    assert os.path.dirname(os.path.abspath(done.stdout.strip())) == PACKAGE
    check = subprocess.run([sys.executable, "-c", "import mnnpy; print(float((mnnpy.expr.const([1.5, 2.0]) * 2)"
                            ".numpy().sum()))"], cwd=tmp_path, env=python_env(), capture_output=True, text=True,
                           timeout=120)
    assert check.returncode == 0, check.stderr
    assert float(check.stdout.strip()) == 7.0
