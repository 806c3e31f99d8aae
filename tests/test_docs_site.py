"""The documentation site (mkdocs.yml, docs/): `mkdocs build --strict` succeeds, every page of
the navigation is built, the API pages carry the package's own signatures and docstrings (also
those of the compiled mnnpy._core), and the getting-started page has the README's set-up commands.

The site documents the installed package. In a development run (MNNPY_CORE_DIR pointing at a
build folder) the source tree's package is assembled with that build's core in a temporary
folder, so that what is documented is this checkout's code."""
import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent


def _package_env(tmp):
    """The environment the build and the docstring reader run in: mnnpy importable as installed."""
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    env.pop("PYTHONPATH", None)
    core_dir = env.pop("MNNPY_CORE_DIR", None)
    if core_dir:
        package = tmp / "package" / "mnnpy"
        shutil.copytree(ROOT / "mnnpy", package, ignore=shutil.ignore_patterns("__pycache__"))
        for entry in Path(core_dir).iterdir():
            if entry.name.startswith("_core") and entry.suffix in (".so", ".pyd") or entry.name == "metal":
                (package / entry.name).symlink_to(entry)
        env["PYTHONPATH"] = str(package.parent)
    return env


def _text(page):
    """A built page's visible text, tags removed, entities decoded, whitespace collapsed."""
    body = re.sub(r"<script.*?</script>|<style.*?</style>", " ", page.read_text(encoding="utf-8"), flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", body)).split())


def _nav_pages(nav):
    for item in nav:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        if isinstance(value, list):
            yield from _nav_pages(value)
        else:
            yield value


def _html_path(site, page):
    page = page[:-len(".md")]
    return site / ("index.html" if page == "index" else f"{page}/index.html")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("docs")
    env = _package_env(tmp)
    out = tmp / "site"
    # Run outside the source tree: `python -m` puts the working directory first on sys.path.
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                             "-d", str(out)], cwd=tmp, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING" not in result.stderr, result.stderr
    docs = subprocess.run(
        [sys.executable, "-c", "import json, mnnpy, mnnpy.numpy as np, inspect; print(json.dumps(["
         "np.linspace.__doc__, str(inspect.signature(np.linspace)), mnnpy.Var.read.__doc__, mnnpy.Var.__module__]))"],
        cwd=tmp, env=env, capture_output=True, text=True, timeout=300)
    assert docs.returncode == 0, docs.stderr
    return out, json.loads(docs.stdout)


def _first_sentence(doc):
    """The start of a docstring as rendered text: Markdown/reST code marks gone, spaces collapsed."""
    text = " ".join(doc.replace("`", "").replace("*", "").split())
    return text[:70]


def test_every_nav_page_is_built(site):
    out, _ = site
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)
    pages = list(_nav_pages(config["nav"]))
    assert len(pages) >= 40
    for page in pages:
        assert (ROOT / "docs" / page).is_file(), page
        built = _html_path(out, page)
        assert built.is_file(), page
        assert len(_text(built)) > 300, page


def test_api_pages_carry_the_docstrings(site):
    out, (linspace_doc, linspace_signature, read_doc, var_module) = site
    numpy_page = _text(out / "api" / "mnnpy.numpy" / "index.html")
    assert linspace_doc and _first_sentence(linspace_doc) in numpy_page
    # Signatures are split into highlighted tokens: compare without spaces.
    assert ("linspace" + linspace_signature).replace(" ", "") in numpy_page.replace(" ", "")
    # Var comes from the compiled core; its page entry and a method's docstring are there.
    assert var_module == "mnnpy._core"
    core_page = (out / "api" / "mnnpy" / "index.html").read_text(encoding="utf-8")
    assert 'id="mnnpy.Var"' in core_page and 'id="mnnpy.Var.read"' in core_page
    # pybind11 puts the signature first; the description follows a blank line.
    assert read_doc and _first_sentence(read_doc.split("\n\n", 1)[-1]) in _text(out / "api" / "mnnpy" / "index.html")
    # Every name a module lists in __all__ is documented on its page (classes such as mnnpy.llm.LLM
    # with their methods).
    import mnnpy.llm
    llm_page = (out / "api" / "mnnpy.llm" / "index.html").read_text(encoding="utf-8")
    for name in mnnpy.llm.__all__:
        assert f'id="mnnpy.llm.{name}"' in llm_page, name
    assert 'id="mnnpy.llm.LLM.generate"' in llm_page and 'id="mnnpy.llm.LLM.response"' in llm_page
    # Each API page documents more than its module docstring.
    for page in (out / "api").iterdir():
        assert len(re.findall(r'class="doc doc-heading"', (page / "index.html").read_text(encoding="utf-8"))) >= 5, page


def test_getting_started_has_the_readme_commands(site):
    out, _ = site
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = [line.strip() for line in readme.splitlines() if re.match(r"make (demo|test)\b", line.strip())]
    assert [c.split()[1] for c in commands] == ["demo", "test"]
    for page in ("getting_started.md", "index.md"):
        text = _text(_html_path(out, page))
        for command in commands:
            assert " ".join(command.split()) in text, (page, command)


def test_notebooks_page_lists_the_notebooks(site):
    out, _ = site
    text = _text(out / "notebooks" / "index.html")
    listed = set(re.findall(r"notebooks/(\w+)\.ipynb", text))
    assert {"numpy_dropin", "image_pipeline", "model_profiling", "train_digits", "quantization", "vulkan",
            "llm_generate", "audio_features", "from_mnn", "pretrained_ocr"} <= listed
