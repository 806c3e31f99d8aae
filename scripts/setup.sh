#!/usr/bin/env bash
# Installs everything mnnpy needs on a fresh Debian/Ubuntu machine into ./.venv:
# the Debian packages the C++ core builds against, then mnnpy and its Python dependencies.
#   scripts/setup.sh          core + demo dependencies
#   scripts/setup.sh test     also the test and reference libraries, and MNN itself in ./.venv-mnn
#   scripts/setup.sh bench    also the test libraries and the benchmarks' other engines (OpenVINO, llama.cpp)
#   scripts/setup.sh fuzz     also clang and its libFuzzer runtime, for `make fuzz`
#   scripts/setup.sh docs     also the test libraries and MkDocs, for `make docs`
set -euo pipefail
cd "$(dirname "$0")/.."

want_tests=0 want_bench=0 want_fuzz=0 want_docs=0
[ "${1:-}" = "test" ] && want_tests=1
[ "${1:-}" = "bench" ] && want_tests=1 want_bench=1
[ "${1:-}" = "fuzz" ] && want_tests=1 want_fuzz=1
[ "${1:-}" = "docs" ] && want_tests=1 want_docs=1

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# Google Highway (SIMD with run-time dispatch), the image codec libraries (JPEG, PNG, WebP,
# TIFF), a C++ compiler, and for the Vulkan backend the Vulkan headers, volk (which opens the
# loader at run time), glslc (shaders to SPIR-V), spirv-tools (spirv-val checks each shader) and
# spirv-cross (each shader in Metal Shading Language, shipped for the Metal backend).
# The tests also need a Vulkan device: lavapipe (Mesa's Vulkan on the CPU) and the validation layer,
# and Graphviz's dot (nn.draw_graph and nn.draw_plan pictures rendered to SVG).
need_apt=()
packages=(libhwy-dev libjpeg-dev libpng-dev libwebp-dev libtiff-dev pkg-config
          libvulkan-dev libvulkan-volk-dev glslc spirv-tools spirv-cross)
[ $want_tests = 1 ] && packages+=(mesa-vulkan-drivers vulkan-validationlayers graphviz)
for package in "${packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || need_apt+=("$package")
done
command -v g++ >/dev/null 2>&1 || need_apt+=(g++)
python3 -c "import venv, ensurepip" >/dev/null 2>&1 || need_apt+=(python3-venv)
if [ ${#need_apt[@]} -gt 0 ]; then
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
# The fuzzers' instrumented build (MNNPY_FUZZ=ON) needs clang and the runtime library behind
# -fsanitize=fuzzer-no-link: libclang-rt-<version>-dev on Debian, libclang-common on older Ubuntu.
if [ $want_fuzz = 1 ] && ! command -v clang++ >/dev/null 2>&1; then
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq clang >/dev/null
  version=$(clang++ --version | sed -n 's/.*clang version \([0-9]*\).*/\1/p' | head -1)
  if apt-cache show "libclang-rt-$version-dev" >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "libclang-rt-$version-dev" >/dev/null
  fi
fi

PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
extras=""
[ $want_tests = 1 ] && extras="[test]"
[ $want_bench = 1 ] && extras="[test,bench]"
[ $want_docs = 1 ] && extras="[test,docs]"
# The package was first installed under the distribution name "mnnpy" (on PyPI an unrelated
# project's): a .venv made then has it, owning the same mnnpy/ files; removed before the install.
if .venv/bin/python -m pip show -q mnnpy >/dev/null 2>&1; then .venv/bin/python -m pip uninstall -q -y mnnpy; fi
.venv/bin/python -m pip install -q ".${extras}"
# Real pretrained ONNX models that PyPI packages ship (an OCR detector, recognizer and direction
# classifier, voice-activity detectors, a file-type classifier): the tests load their model
# files only, so the packages come without their dependencies.
[ $want_tests = 1 ] && .venv/bin/python -m pip install -q --no-deps rapidocr-onnxruntime==1.4.4 silero-vad==6.2.3 magika==1.0.3
# The fuzzers' instrumented core is built by scripts/dev_build.sh with the venv's build tools.
[ $want_fuzz = 1 ] && .venv/bin/python -m pip install -q "pybind11>=2.12" cmake ninja
# MNN itself, the reference of the tests of MNN model files, in an environment of its own: its
# converter pins a protobuf older than onnx needs. The tests call its converter directly
# (tests/mnn_reference.py), not the `mnnconvert` wrapper, which pip-installs and calls a logging
# service; PIP_NO_INDEX keeps any such attempt from installing anything.
if [ $want_tests = 1 ]; then
  [ -x .venv-mnn/bin/python ] || "$PY" -m venv .venv-mnn
  .venv-mnn/bin/python -m pip install -q --upgrade pip
  .venv-mnn/bin/python -m pip install -q mnn numpy
  PIP_NO_INDEX=1 .venv-mnn/bin/python -c "import MNN, _tools" >/dev/null
fi
venv_python="$PWD/.venv/bin/python"
# Checked from outside the source tree, so that the installed package is the one imported.
echo "mnnpy installed in .venv: $(cd / && "$venv_python" -c 'import mnnpy; print(mnnpy.runtime_info())')"
