#!/usr/bin/env bash
# Runs every fuzzer in fuzz/ for FUZZ_SECONDS seconds each (default 300; `make fuzz`).
# With clang installed, the C++ core is built into build/fuzz with MNNPY_FUZZ=ON, so libFuzzer
# sees its coverage and AddressSanitizer checks every access (atheris' ASan runtime preloaded);
# without clang, the installed core runs uninstrumented and only Python code is covered.
# Corpora grow in build/fuzz/corpus/, findings land in build/fuzz/findings/, logs in build/fuzz/logs/.
set -uo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-$PWD/.venv/bin/python}
seconds=${FUZZ_SECONDS:-300}
mkdir -p build/fuzz/logs
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

clang=$(command -v clang++ || ls /usr/bin/clang++-[0-9]* 2>/dev/null | sort -V | tail -1)
if [ -n "$clang" ]; then
  PYTHON="$python" scripts/dev_build.sh build/fuzz -DMNNPY_FUZZ=ON -DCMAKE_CXX_COMPILER="$clang" || exit 1
  export MNNPY_CORE_DIR="$PWD/build/fuzz"
  export LD_PRELOAD="$("$python" -c 'import atheris; print(atheris.path())')/asan_with_fuzzer.so"
  # Python itself leaks at exit; a huge request must come back as MemoryError (a bare
  # std::bad_alloc is then a finding of the harness), not abort.
  export ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1:${ASAN_OPTIONS:-}"
  symbolizer=$(command -v llvm-symbolizer || ls /usr/bin/llvm-symbolizer-[0-9]* 2>/dev/null | sort -V | tail -1)
  [ -n "$symbolizer" ] && export ASAN_SYMBOLIZER_PATH="$symbolizer"
  echo "fuzzing the instrumented core in build/fuzz (coverage of C++ and Python, AddressSanitizer)"
else
  echo "clang not found: fuzzing the installed core without C++ coverage (scripts/setup.sh fuzz installs clang)"
fi

failed=()
for name in graph_file model_file onnx imdecode caffe safetensors; do
  extra=()
  [ "$name" = onnx ] && extra=(--node-tests)
  echo "== fuzz_$name: $seconds s"
  # Earlier findings (tests/data/fuzz/<fuzzer>/) are replayed first, as a second corpus.
  found=()
  [ -d "tests/data/fuzz/$name" ] && found=("tests/data/fuzz/$name")
  "$python" "fuzz/fuzz_$name.py" "${extra[@]}" -max_total_time="$seconds" -print_final_stats=1 \
    "build/fuzz/corpus/$name" "${found[@]}" >"build/fuzz/logs/$name.log" 2>&1
  status=$?
  grep -E "^#[0-9]+[[:space:]]+(INITED|DONE)|^stat::number_of_executed_units|ERROR|Uncaught|==[0-9]+==" \
    "build/fuzz/logs/$name.log" | head -20
  [ $status -ne 0 ] && failed+=("$name")
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "findings in: ${failed[*]} (inputs in build/fuzz/findings/, logs in build/fuzz/logs/)"
  exit 1
fi
echo "no findings"
