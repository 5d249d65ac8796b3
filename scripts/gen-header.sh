#!/usr/bin/env bash
# Writes the C face's generated files: targets/c/src/kinds.rs (the C ABI's neff_status and
# neff_stage, from schema/kinds.toml, the table the core's Status and Stage come from) and
# targets/c/include/neff_schema.h (the schema's enums and repr(C) layouts, with
# _Static_asserts) with the schema's own generator (macros/codegen); then
# targets/c/include/neff.h from the C ABI crate (targets/c/, kinds.rs included) with cbindgen.
# With --check, fails (and shows the difference) when a checked-in file is not what they
# generate.
#   cargo install cbindgen --version 0.29.4 --locked   # the version the checked-in headers come from
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cbindgen >/dev/null || { echo "gen-header: cbindgen not found (cargo install cbindgen --version 0.29.4 --locked)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
# Compares (--check) or writes one generated file.
settle() {
  local generated=$1 path=$2
  if [[ "${mode}" == "--check" ]]; then
    if ! diff -u "$path" "$generated"; then
      echo "gen-header: $path is stale: run scripts/gen-header.sh and commit it" >&2
      status=1
    else
      echo "gen-header: $path is up to date"
    fi
  else
    cp "$generated" "$path"
    echo "gen-header: wrote $path ($(wc -c <"$path") bytes)"
  fi
}
mode=${1:-}
cargo run -q -p neff-schema-codegen --example c-header -- schema ffi-kinds >"$tmp/kinds.rs"
settle "$tmp/kinds.rs" targets/c/src/kinds.rs
cargo run -q -p neff-schema-codegen --example c-header -- schema >"$tmp/neff_schema.h"
settle "$tmp/neff_schema.h" targets/c/include/neff_schema.h
# cbindgen reads targets/c/src, kinds.rs as written above (or as checked in, checked above).
cbindgen --quiet --config targets/c/cbindgen.toml --output "$tmp/neff.h" targets/c
settle "$tmp/neff.h" targets/c/include/neff.h
exit $status
