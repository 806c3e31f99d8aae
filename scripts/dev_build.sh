#!/usr/bin/env bash
# Builds the C++ core into a CMake build folder for development, with ccache when it is installed:
#   scripts/dev_build.sh build/dev [extra CMake arguments]
# then runs Python against it with MNNPY_CORE_DIR=<that folder> PYTHONPATH=<this checkout>.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build/dev}
shift || true
python=${PYTHON:-$PWD/.venv/bin/python}
launcher=()
command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(dirname "$PWD")}
generator=()
command -v ninja >/dev/null 2>&1 || [ -x "$(dirname "$python")/ninja" ] && generator=(-G Ninja)
export PATH="$(dirname "$python"):$PATH"
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  # Without link-time optimization (pybind11 turns it on for release builds): links take seconds.
  cmake -S native -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
    -DCMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF \
    -DPython_EXECUTABLE="$python" -Dpybind11_DIR="$("$python" -m pybind11 --cmakedir)" "$@" >/dev/null
fi
cmake --build "$build_dir" --parallel "$(nproc)"
