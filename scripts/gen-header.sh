#!/usr/bin/env bash
# Writes include/neff.h from the C ABI crate (ffi/) with cbindgen; with --check, fails (and
# shows the difference) when the checked-in header is not what the crate generates.
#   cargo install cbindgen --locked   # if absent
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cbindgen >/dev/null || { echo "gen-header: cbindgen not found (cargo install cbindgen --locked)" >&2; exit 2; }
out=include/neff.h
if [[ "${1:-}" == "--check" ]]; then
  fresh=$(mktemp)
  trap 'rm -f "$fresh"' EXIT
  cbindgen --quiet --config ffi/cbindgen.toml --output "$fresh" ffi
  if ! diff -u "$out" "$fresh"; then
    echo "gen-header: $out is stale: run scripts/gen-header.sh and commit it" >&2
    exit 1
  fi
  echo "gen-header: $out is up to date"
else
  cbindgen --quiet --config ffi/cbindgen.toml --output "$out" ffi
  echo "gen-header: wrote $out ($(wc -c <"$out") bytes)"
fi
