#!/usr/bin/env bash
# Runs the test suite from a folder made by scripts/offline_bundle.sh, on a machine without
# network access, once per SIMD target this CPU can run (or the targets named), and prints the
# pass counts per target.
#   scripts/offline_test.sh <folder> [target ...] [-- pytest arguments]
set -uo pipefail
cd "$(dirname "$0")/.."
folder=${1:?folder of wheels}
shift
targets=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do targets+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
site=${MNNPY_OFFLINE_SITE:-/tmp/mnnpy-offline-site}
python=${PYTHON:-python3}
rm -rf "$site"
"$python" -m pip install -q --no-index --no-deps --no-compile --target "$site" "$folder"/*.whl || exit 1
export PYTHONPATH="$site"
# Checked from outside the source tree, so that the installed package is the one imported.
(cd / && "$python" -c 'import mnnpy; print(mnnpy.runtime_info())') || exit 1
if [ ${#targets[@]} -eq 0 ]; then
  read -r -a targets <<<"$(cd / && "$python" -c 'import mnnpy; print(" ".join(mnnpy.runtime_info()["simd_targets_usable"]))')"
fi
summary=()
status=0
for target in "${targets[@]}"; do
  echo "=== MNNPY_SIMD=$target"
  log=$(mktemp)
  (cd tests && MNNPY_SIMD=$target "$python" -m pytest -q -p no:cacheprovider "$@" 2>&1) | tee "$log" | tail -n 40
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
  summary+=("$target: $(grep -E '^[0-9]+ (passed|failed)|^=+ .*(passed|failed)' "$log" | tail -n 1 | tr -d '=')")
  rm -f "$log"
done
printf '%s\n' "${summary[@]}"
exit $status
