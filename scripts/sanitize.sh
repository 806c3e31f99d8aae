#!/usr/bin/env bash
# Builds the core with AddressSanitizer and UndefinedBehaviorSanitizer into build/sanitize and runs
# the test suite (or the pytest arguments given, from tests/) against it:
#   scripts/sanitize.sh                                  the whole suite
#   scripts/sanitize.sh test_cv_color.py -k bgr2lab      a part of it
# The first finding stops the run with its report (and the Python stack of the test). Set
# MNNPY_SANITIZE_KEEP_GOING=1 to report every finding and go on (for surveys of the whole suite).
# Python and the libraries the tests load (NumPy, torch, onnxruntime, OpenCV) are not instrumented:
# findings come from the core, and from those libraries only where the core hands them bad memory.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
python=${PYTHON:-$repo/.venv/bin/python}
build_dir=${MNNPY_SANITIZE_BUILD:-build/sanitize}

# MNNPY_SANITIZE_SKIP_BUILD=1 runs the build folder as it is (while sources are being edited).
if [ "${MNNPY_SANITIZE_SKIP_BUILD:-0}" != 1 ]; then
  PYTHON=$python scripts/dev_build.sh "$build_dir" -DMNNPY_SANITIZE="address;undefined"
fi

# Python is not built with the sanitizers, so their run-time libraries must be loaded before
# anything else: the ones the core was linked with (gcc: libasan and libubsan; clang links its
# shared ASan run-time only with -shared-libasan, so it is asked for by name).
core=$(ls "$build_dir"/_core*.so)
runtimes=$(ldd "$core" | awk '/libasan|libubsan|libclang_rt/ {print $3}' | tr '\n' ':')
if [ -z "$runtimes" ]; then
  compiler=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build_dir/CMakeCache.txt")
  for name in libclang_rt.asan.so libclang_rt.asan-x86_64.so; do
    candidate=$("$compiler" -print-file-name="$name")
    [ -f "$candidate" ] && runtimes=$candidate && break
  done
fi
[ -n "$runtimes" ] || { echo "sanitize.sh: no sanitizer run-time library found for $core" >&2; exit 1; }

halt=1
[ "${MNNPY_SANITIZE_KEEP_GOING:-0}" = 1 ] && halt=0
# abort_on_error: a finding ends the process with SIGABRT, on which pytest's faulthandler prints
# the Python stack, naming the test; handle_abort: a failed standard-library assertion
# (_GLIBCXX_ASSERTIONS) prints the C++ stack too. Leaks are checked at each Python process's exit; Python,
# NumPy and torch keep some memory until then on purpose (scripts/lsan.supp). PYTHONMALLOC=malloc
# puts Python's objects on the instrumented heap, so that LeakSanitizer sees the pointers they hold
# and ASan sees overruns of small NumPy buffers.
export ASAN_OPTIONS="halt_on_error=$halt:abort_on_error=1:handle_abort=1:detect_leaks=1:check_initialization_order=1:strict_init_order=1:allocator_may_return_null=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$repo/scripts/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=$halt:abort_on_error=1:suppressions=$repo/scripts/ubsan.supp${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export PYTHONMALLOC=malloc
export MNNPY_CORE_DIR=$repo/$build_dir
export PYTHONPATH=$repo${PYTHONPATH:+:$PYTHONPATH}
cd tests
# test_fuzz.py is left out: atheris brings its own libFuzzer, which under this ASan run-time counts
# the shadow memory against its RSS limit; `make fuzz` runs the fuzzers on a clang ASan build.
LD_PRELOAD="$runtimes${LD_PRELOAD:-}" exec "$python" -m pytest -q -p no:cacheprovider --ignore=test_fuzz.py "$@"
