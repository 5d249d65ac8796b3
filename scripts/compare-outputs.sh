#!/usr/bin/env bash
# Whether two builds of the command print the same bytes on every real NEFF: a speed-up must
# change no error, warning, offset, key path or output byte.
#
#   scripts/compare-outputs.sh BEFORE AFTER    two `neff` binaries (say, main's and a branch's)
#
# Runs `check`, `check --json`, `info --json`, `load`, `load --json` and `load --json
# --digest-only` of each on every `*.neff` under ../shared/fixtures, stdout and stderr and the
# exit status together, with the timings (`"time_ms"` values, `... in N ms`) blanked; prints
# the differences and exits 1 if there are any.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 2 ] || { echo "usage: $0 BEFORE AFTER" >&2; exit 2; }
fixtures=../shared/fixtures
if [ ! -d "$fixtures" ]; then
  [ "${CI:-}" != true ] || { echo "compare-outputs: $fixtures absent (required under CI=true)" >&2; exit 1; }
  echo "compare-outputs: skipped: $fixtures absent"
  exit 0
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
verbs=("check" "check --json" "info --json" "load" "load --json" "load --json --digest-only")
run() {
  local bin=$1 dir=$2 i=0
  mkdir -p "$dir"
  while read -r f; do
    i=$((i + 1))
    for verb in "${verbs[@]}"; do
      # shellcheck disable=SC2086 # the verb's words are separate arguments
      { echo "# $f :: $verb"; "$bin" $verb "$f" 2>&1 && echo "# exit 0" || echo "# exit $?"; } |
        sed -E 's/"time_ms": ?[0-9.]+/"time_ms":X/g; s/[0-9.]+ ?ms\b/X ms/g' >"$dir/$i-${verb// /_}.txt"
    done
  done < <(find "$fixtures" -name '*.neff' | sort)
}
run "$1" "$out/before"
run "$2" "$out/after"
files=$(find "$out/before" -type f | wc -l)
if diff -r "$out/before" "$out/after"; then
  echo "compare-outputs: $files outputs byte-identical ($(find "$fixtures" -name '*.neff' | wc -l) NEFFs x ${#verbs[@]} verbs)"
else
  echo "compare-outputs: the outputs differ (above: < $1, > $2)" >&2
  exit 1
fi
