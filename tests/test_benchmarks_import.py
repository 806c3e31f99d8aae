"""The benchmarks import the mnnpy that Python finds (the installed package after `make bench`, or
a checkout during development with MNNPY_CORE_DIR and PYTHONPATH): no script puts the repository
root on sys.path, whose mnnpy/ has no compiled core, and the code they run with `python -c` does not
keep the working directory (the repository root under `make bench`) first on sys.path."""
import ast
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import mnnpy

from helpers import python_env

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"
SCRIPTS = sorted(BENCHMARKS.glob("*.py"))

_PATH_FUNCTIONS = {"dirname": os.path.dirname, "abspath": os.path.abspath, "realpath": os.path.realpath,
                   "normpath": os.path.normpath, "join": os.path.join}


def _value(node, names, file):
    """The string ``node`` evaluates to, where it is made of constants, ``__file__``, names bound
    to such values and os.path's functions; None otherwise."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return file if node.id == "__file__" else names.get(node.id)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _PATH_FUNCTIONS
            and ast.unparse(node.func.value) == "os.path" and not node.keywords):
        args = [_value(a, names, file) for a in node.args]
        if args and None not in args:
            return _PATH_FUNCTIONS[node.func.attr](*args)
    return None


def _is_sys_path(node):
    return ast.unparse(node) == "sys.path"


def _path_entries(tree):
    """The expressions each script adds to sys.path: sys.path.insert/append/extend and sys.path
    assignments (``sys.path[:0] = [...]``, ``sys.path = [...] + sys.path``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _is_sys_path(node.func.value):
            if node.func.attr == "insert" and len(node.args) == 2:
                yield node.args[1]
            elif node.func.attr == "append" and node.args:
                yield node.args[0]
            elif node.func.attr == "extend" and node.args:
                yield from getattr(node.args[0], "elts", [node.args[0]])
        elif isinstance(node, ast.Assign) and any(
                _is_sys_path(t) or (isinstance(t, ast.Subscript) and _is_sys_path(t.value)) for t in node.targets):
            for part in ast.walk(node.value):
                if isinstance(part, (ast.List, ast.Tuple)):
                    yield from part.elts


def path_insertions(path):
    """[(line, the folder added or None where it cannot be told)] of the script at ``path``."""
    tree = ast.parse(path.read_text(), str(path))
    file = str(path)
    names = {}
    for _ in range(2):  # names bound from names bound later in the file
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                value = _value(node.value, names, file)
                if value is not None:
                    names[node.targets[0].id] = value
    entries = sorted(_path_entries(tree), key=lambda e: (e.lineno, e.col_offset))
    return [(entry.lineno, _value(entry, names, file)) for entry in entries]


def test_the_checker_reads_the_forms_the_scripts_use(tmp_path):
    script = tmp_path / "benchmarks" / "bench_example.py"
    script.parent.mkdir()
    script.write_text(
        "import os, sys\n"
        "HERE = os.path.dirname(os.path.abspath(__file__))\n"
        "ROOT = os.path.dirname(HERE)\n"
        "sys.path.insert(0, os.path.dirname(__file__))\n"
        "sys.path.insert(0, os.path.join(HERE, '..', 'tests'))\n"
        "sys.path[:0] = [os.path.dirname(HERE), os.path.join(ROOT, 'tests')]\n"
        "def child():\n"
        "    sys.path.append(ROOT)  # run from a checkout\n"
        "    sys.path.insert(0, some_call())\n")
    folders = [(line, os.path.normpath(p) if p else p) for line, p in path_insertions(script)]
    here, root = str(script.parent), str(tmp_path)
    assert folders == [(4, here), (5, os.path.join(root, "tests")), (6, root), (6, os.path.join(root, "tests")),
                       (8, root), (9, None)]


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_no_benchmark_puts_the_repository_root_on_sys_path(script):
    insertions = path_insertions(script)
    unknown = [line for line, folder in insertions if folder is None]
    assert not unknown, f"{script.name}: sys.path entries that cannot be checked, lines {unknown}"
    at_root = [line for line, folder in insertions if os.path.normpath(folder) == str(ROOT)]
    assert not at_root, (f"{script.name} puts the repository root on sys.path (lines {at_root}): run from the root "
                         "it imports the uncompiled source tree; run with MNNPY_CORE_DIR and PYTHONPATH instead")


def _python_c_calls(tree):
    """The subprocess calls of a script that run ``[python, "-c", code, ...]``: (call, code node)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and ast.unparse(node.func).startswith("subprocess.") and node.args:
            argv = node.args[0]
            if isinstance(argv, ast.List):
                for i, item in enumerate(argv.elts[:-1]):
                    if isinstance(item, ast.Constant) and item.value == "-c":
                        yield node, argv.elts[i + 1]


def _code_names(node, tree):
    """The names the code expression is made of, following one assignment of a plain name."""
    if isinstance(node, ast.Name):
        for other in ast.walk(tree):
            if (isinstance(other, ast.Assign) and len(other.targets) == 1 and isinstance(other.targets[0], ast.Name)
                    and other.targets[0].id == node.id and not isinstance(other.value, ast.Constant)):
                return {n.id for n in ast.walk(other.value) if isinstance(n, ast.Name)}
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def test_python_c_children_do_not_import_from_the_working_directory():
    checked = 0
    for script in SCRIPTS:
        tree = ast.parse(script.read_text(), str(script))
        for call, code in _python_c_calls(tree):
            checked += 1
            own_folder = any(k.arg == "cwd" for k in call.keywords)
            assert own_folder or "NO_WORKING_DIRECTORY_ON_PATH" in _code_names(code, tree), (
                f"{script.name}:{call.lineno} runs `python -c` in the working directory without "
                "common.NO_WORKING_DIRECTORY_ON_PATH first")
    assert checked >= 3  # bench_core's memory child, bench_mnn_files' timed run, bench_builds' child


def _source_copy(folder):
    package = os.path.dirname(os.path.abspath(mnnpy.__file__))
    shutil.copytree(package, folder / "mnnpy",
                    ignore=lambda d, names: [n for n in names if n.startswith("_core") or n == "__pycache__"])


def test_python_c_children_import_the_same_mnnpy_from_a_source_tree(tmp_path):
    # A working directory with an uncompiled mnnpy/ (the repository root under `make bench`): plain
    # `python -c` imports it; with the benchmarks' first lines the child imports the parent's mnnpy.
    spec = importlib.util.spec_from_file_location("benchmarks_common", BENCHMARKS / "common.py")
    common = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(common)
    NO_WORKING_DIRECTORY_ON_PATH = common.NO_WORKING_DIRECTORY_ON_PATH
    _source_copy(tmp_path)
    code = "import mnnpy; print(mnnpy.__file__); print(float(mnnpy.expr.const([2.0, 3.5]).numpy().sum()))"
    plain = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=python_env(), capture_output=True,
                           text=True, timeout=120)
    # The copy is what plain `python -c` imports (and fails on, unless MNNPY_CORE_DIR supplies a core).
    assert str(tmp_path / "mnnpy" / "__init__.py") in plain.stdout + plain.stderr
    fixed = subprocess.run([sys.executable, "-c", NO_WORKING_DIRECTORY_ON_PATH + code], cwd=tmp_path,
                           env=python_env(), capture_output=True, text=True, timeout=120)
    assert fixed.returncode == 0, fixed.stderr
    imported, total = fixed.stdout.split()
    assert os.path.abspath(imported) == os.path.abspath(mnnpy.__file__)
    assert float(total) == 5.5
