"""The type stubs of the compiled core (mnnpy/_core.pyi, with mnnpy/py.typed): they name every
public function of the built module, and mypy checks user code against them, passing correct
code and reporting wrong argument and result types."""
import ast
import os
import pathlib
import re
import subprocess
import sys
import sysconfig
import textwrap

import numpy as np
import pytest

import mnnpy
from mnnpy import _core

PACKAGE = pathlib.Path(mnnpy.__file__).parent
STUB = PACKAGE / "_core.pyi"

GOOD = '''
import numpy as np
from mnnpy import _core

x: _core.Var = _core.const(np.arange(6, dtype=np.float32).reshape(2, 3))
y = _core.binary("Add", x, 1.0) * 2.0
shape: tuple[int, ...] = y.shape
values: np.ndarray = y.read()
steps: list = _core.last_profile()
name: str = _core.get_backend()
t = _core.transpose(y, [1, 0])
parts: list[_core.Var] = _core.split(t, [1, 2], 0)
flags: bool = t.is_evaluated or y.is_const
print(name, shape, float(values.sum()), parts[1].shape, flags, len(steps) >= 0)
'''

BAD = '''
from mnnpy import _core

_core.set_num_threads("four")
count: str = _core.get_num_threads()
x = _core.const(1.0)
x.is_evaluated()
_core.transpose(x, perm="10")
'''


def test_stub_names_every_public_function_of_the_core():
    tree = ast.parse(STUB.read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    public = {n for n in dir(_core) if not n.startswith("_")}
    assert public - names == set(), "missing from mnnpy/_core.pyi (regenerate it with pybind11-stubgen)"
    assert names - public - {"__all__"} == set(), "in mnnpy/_core.pyi but no longer in the core"
    stub_var = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Var")
    members = {n.name for n in stub_var.body if isinstance(n, ast.FunctionDef)}
    assert {n for n in dir(_core.Var) if not n.startswith("_")} - members - {"name"} == set()
    assert (PACKAGE / "py.typed").is_file()


def _mypy(tmp_path, files):
    env = dict(os.environ)
    root = PACKAGE.parent
    site = {pathlib.Path(p).resolve() for p in (sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"])}
    if root.resolve() not in site:
        # A source checkout on PYTHONPATH: mypy reads the package there (before any installed copy).
        env["MYPYPATH"] = str(root)
    return subprocess.run([sys.executable, "-m", "mypy", "--python-executable", sys.executable,
                           "--cache-dir", str(tmp_path / "cache"), "--follow-imports=silent",
                           "--no-error-summary", "--show-error-codes", "--hide-error-context",
                           *[str(f) for f in files]],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)


def test_mypy_passes_correct_code_and_reports_type_errors(tmp_path):
    pytest.importorskip("mypy")
    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text(textwrap.dedent(GOOD))
    bad.write_text(textwrap.dedent(BAD))
    # The correct script runs.
    ran = subprocess.run([sys.executable, str(good)], capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    np.testing.assert_allclose(float(ran.stdout.split()[3]), 2 * (np.arange(6).sum() + 6))
    result = _mypy(tmp_path, [good, bad])
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert not [e for e in errors if e.startswith("good.py")], result.stdout + result.stderr
    found = {(int(m.group(1)), m.group(2)) for m in
             (re.match(r"bad\.py:(\d+): error: .*\[([\w-]+)\]$", e) for e in errors) if m}
    assert found == {(4, "arg-type"), (5, "assignment"), (7, "operator"), (8, "arg-type")}, result.stdout
    assert result.returncode == 1
    assert 'Argument 1 to "set_num_threads" has incompatible type "str"' in result.stdout
