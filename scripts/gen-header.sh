#!/usr/bin/env bash
# Writes the C headers: targets/c/include/neff.h from the C ABI crate (targets/c/) with cbindgen, and
# targets/c/include/neff_schema.h (the schema's enums and repr(C) layouts, with _Static_asserts) from
# schema/ with the schema's own generator (macros/codegen). With --check, fails (and shows
# the difference) when a checked-in header is not what they generate.
#   cargo install cbindgen --version 0.29.4 --locked   # the version the checked-in headers come from
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cbindgen >/dev/null || { echo "gen-header: cbindgen not found (cargo install cbindgen --version 0.29.4 --locked)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cbindgen --quiet --config targets/c/cbindgen.toml --output "$tmp/neff.h" targets/c
cargo run -q -p neff-schema-codegen --example c-header -- schema >"$tmp/neff_schema.h"
status=0
for h in neff.h neff_schema.h; do
  if [[ "${1:-}" == "--check" ]]; then
    if ! diff -u "targets/c/include/$h" "$tmp/$h"; then
      echo "gen-header: targets/c/include/$h is stale: run scripts/gen-header.sh and commit it" >&2
      status=1
    else
      echo "gen-header: targets/c/include/$h is up to date"
    fi
  else
    cp "$tmp/$h" "targets/c/include/$h"
    echo "gen-header: wrote include/$h ($(wc -c <"targets/c/include/$h") bytes)"
  fi
done
exit $status
