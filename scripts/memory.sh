#!/usr/bin/env bash
# Peak RSS of the `neff` command, whole process (/usr/bin/time -v), for `info`, `check` and
# `load --digest-only`: on matmul_large.neff and on the NEFF of about 408 MB that the load
# bench writes (matmul_large's members repeated; written once under target/tmp).
# The memory figures of docs/benchmarks.md come from this script.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x /usr/bin/time ]; then
  echo "error: needs /usr/bin/time (Debian: apt-get install time)" >&2
  exit 2
fi
small=../shared/fixtures/public/nkipy/matmul_large.neff
if [ ! -f "$small" ]; then
  echo "error: $small is absent (the real NEFFs live in ../shared/fixtures)" >&2
  exit 2
fi
cargo build --release -q -p neff-cli
big=$(cargo bench -q -p neff-cli --bench load -- --neff-path | tail -1)

for neff in "$small" "$big"; do
  size=$(stat -c %s "$neff")
  for verb in info check "load --digest-only"; do
    # shellcheck disable=SC2086 # $verb is the verb and its flags
    kib=$(/usr/bin/time -v target/release/neff $verb "$neff" 2>&1 >/dev/null |
      awk -F: '/Maximum resident set size/ { print $2 }')
    awk -v name="$(basename "$neff")" -v mb="$size" -v verb="$verb" -v kib="$kib" \
      'BEGIN { printf "%-26s %9.1f MB  neff %-20s peak RSS %5.1f MiB\n", name, mb / 1e6, verb, kib / 1024 }'
  done
done
