"""mnnpy.numpy against the Array API standard's own test suite (data-apis/array-api-tests).

The suite runs in a child process from its own folder, on the mnnpy these tests import, with the
settings of shared/peers/README.md (spec 2024.12, 20 examples per test, no fft/linalg extension,
no complex or uint16/32/64 dtypes: mnnpy has none). Hypothesis draws derandomized examples, so a
run's outcomes are the same from one run to the next.

tests/array_api_xfails.txt lists the tests known to fail, each with its reason. This test fails
when a test outside that file fails, when a test in it passes (take it out of the file: the list
only shrinks), when an entry matches no test, or when fewer tests pass than MIN_PASSED.

The suite is looked for beside the checkout (``<repo>/../shared/peers/array-api-tests``);
MNNPY_ARRAY_API_TESTS names another folder.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import python_env

REPO = Path(__file__).resolve().parents[1]
SUITE = Path(os.environ.get("MNNPY_ARRAY_API_TESTS", REPO.parent / "shared" / "peers" / "array-api-tests"))
XFAILS = Path(__file__).resolve().parent / "array_api_xfails.txt"

# With these settings NumPy 2.4's own namespace passes 1108 tests; mnnpy.numpy fails 14 of those
# (test_has_names of the fft extension: it has no fft module) and passes 6 that NumPy fails (finfo and
# iinfo of an array), one more being skipped (its __setitem__ signature cannot be inspected).
MIN_PASSED = 1099
SKIP_DTYPES = "complex64,complex128,uint16,uint32,uint64"


def xfail_ids():
    """The test ids of the xfails file: one a line, a ``# reason`` after it or on the lines above."""
    ids = []
    for line in XFAILS.read_text().splitlines():
        test_id = line.split("#", 1)[0].strip()
        if test_id:
            ids.append(test_id)
    return ids


def matches(nodeid, pattern):
    """Whether a test id matches an xfails entry, as the suite's conftest decides it: the id itself,
    a module or folder, or a test function without its parameters."""
    return (nodeid == pattern or nodeid.startswith(pattern.rstrip("/") + "/")
            or nodeid.split("::", 1)[0] == pattern or nodeid.split("[", 1)[0] == pattern)


def test_xfails_file_gives_a_reason_for_each_entry():
    lines = [line for line in XFAILS.read_text().splitlines() if line.split("#", 1)[0].strip()]
    assert lines, "the xfails file lists no test"
    for line in lines:
        test_id, _, reason = line.partition("#")
        assert test_id.strip().startswith("array_api_tests/"), line
        assert reason.strip(), f"no reason given for {test_id.strip()}"
    ids = xfail_ids()
    assert len(ids) == len(set(ids)), "an entry is listed twice"


@pytest.mark.skipif(not (SUITE / "array_api_tests").is_dir(),
                    reason=f"the array-api-tests suite is not at {SUITE} (set MNNPY_ARRAY_API_TESTS)")
def test_array_api_tests_suite(tmp_path):
    ids = xfail_ids()
    xfails = tmp_path / "xfails.txt"
    xfails.write_text("".join(i + "\n" for i in ids))
    report = tmp_path / "report.json"
    env = python_env(ARRAY_API_TESTS_MODULE="mnnpy.numpy", ARRAY_API_TESTS_VERSION="2024.12",
                     ARRAY_API_TESTS_SKIP_DTYPES=SKIP_DTYPES, HYPOTHESIS_STORAGE_DIRECTORY=tmp_path / "hypothesis")
    env.pop("PYTEST_ADDOPTS", None)
    # array_api_suite_plugin (beside this file) lets the suite import test_signatures.py without complex dtypes.
    env["PYTHONPATH"] = str(Path(__file__).resolve().parent) + os.pathsep + env["PYTHONPATH"]
    command = [sys.executable, "-m", "pytest", "array_api_tests/", "-q", "-o", "addopts=", "-p", "no:cacheprovider",
               "--max-examples", "20", "--hypothesis-derandomize", "-p", "array_api_suite_plugin",
               "--disable-extension", "fft", "linalg",  # one option with both: a second one would replace the first
               "--xfails-file", str(xfails), "--json-report", f"--json-report-file={report}"]
    run = subprocess.run(command, cwd=SUITE, env=env, capture_output=True, text=True, timeout=1500)
    assert report.exists(), f"the suite wrote no report (exit {run.returncode}):\n{run.stdout[-4000:]}\n" \
                            f"{run.stderr[-4000:]}"
    result = json.loads(report.read_text())

    uncollected = [c["nodeid"] for c in result["collectors"] if c["outcome"] != "passed"]
    outcomes = {t["nodeid"]: t["outcome"] for t in result["tests"]}
    # A test that fails in its set-up or tear-down is an error.
    failed = sorted(n for n, o in outcomes.items() if o in ("failed", "error"))
    xpassed = sorted(n for n, o in outcomes.items() if o == "xpassed")
    unmatched = [i for i in ids if not any(matches(n, i) for n in outcomes)]
    passed = sum(o == "passed" for o in outcomes.values())

    problems = []
    if uncollected:
        problems.append("modules the suite could not collect:\n  " + "\n  ".join(uncollected))
    if failed:
        problems.append(f"{len(failed)} tests fail that {XFAILS.name} does not list:\n  " + "\n  ".join(failed))
    if xpassed:
        problems.append(f"{len(xpassed)} tests listed in {XFAILS.name} pass now; remove them from it:\n  "
                        + "\n  ".join(xpassed))
    if unmatched:
        problems.append(f"entries of {XFAILS.name} that match no test:\n  " + "\n  ".join(unmatched))
    if passed < MIN_PASSED:
        problems.append(f"{passed} tests pass, fewer than {MIN_PASSED}")
    assert not problems, "\n".join(problems)
