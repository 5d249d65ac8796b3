#!/usr/bin/env bash
# The C ABI from C, on the host: builds the no_std static library (ffi/), checks that
# include/neff.h is what it generates, then builds ffi/c/host_load.c with the system cc under
# AddressSanitizer and UBSan, linked against the static library, and runs it on both nkipy
# NEFFs and every shared real NEFF (found by walking ../shared/fixtures/public); then the same
# program against the shared library (cdylib) on the small NEFF. neff_info's document on every
# NEFF is compared with `neff info --json` (the host command, built here). Needs zlib
# and libxxhash headers (Debian: zlib1g-dev, libxxhash-dev) and cbindgen.
set -euo pipefail
cd "$(dirname "$0")/.."

fixtures=../shared/fixtures/public
if [ ! -d "$fixtures" ]; then
  [ "${CI:-}" != true ] || { echo "test-ffi: $fixtures absent (required under CI=true)" >&2; exit 1; }
  echo "test-ffi: skipped: $fixtures absent"
  exit 0
fi

scripts/gen-header.sh --check
# The headers compile as C11 and as C++ (cbindgen's enums take a fixed type there), with their
# _Static_asserts.
printf '#include "neff.h"\n' | cc -std=c11 -Wall -Wextra -Werror -pedantic -fsyntax-only -Iinclude -x c -
printf '#include "neff.h"\n' | c++ -std=c++17 -Wall -Wextra -Werror -fsyntax-only -Iinclude -x c++ -
(cd ffi && cargo build --release --lib)
out=ffi/target/c
mkdir -p "$out"
cc -std=c11 -Wall -Wextra -Werror -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined \
  -fno-sanitize-recover=undefined -Iinclude ffi/c/host_load.c ffi/target/release/libneff_ffi.a -lz \
  -o "$out/host_load"
mapfile -t neffs < <(find "$fixtures" -name '*.neff' | sort)
# matmul_small first: the refusal checks damage the first NEFF named.
small=$fixtures/nkipy/matmul_small.neff
ordered=("$small")
for f in "${neffs[@]}"; do [ "$f" = "$small" ] || ordered+=("$f"); done
# neff_info's documents go to $out/info/<i>.json, compared below with the host command's.
rm -rf "$out/info"
mkdir -p "$out/info"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  "$out/host_load" --info "$out/info" "${ordered[@]}"

# Each document equals `neff info --json` on the same NEFF, after JSON normalisation: the same
# keys in the same order with the same values (the host command pretty-prints; the C ABI
# writes compact JSON).
cargo build --quiet -p neff-cli --bin neff
i=0
for f in "${ordered[@]}"; do
  target/debug/neff info --json "$f" > "$out/info/$i.host.json"
  python3 - "$out/info/$i.json" "$out/info/$i.host.json" "$f" <<'PY'
import json, sys
def load(path):
    with open(path, "rb") as fh:
        return json.loads(fh.read(), object_pairs_hook=lambda pairs: pairs)
c, host = load(sys.argv[1]), load(sys.argv[2])
if c != host:
    sys.exit(f"test-ffi: neff_info differs from `neff info --json` on {sys.argv[3]}")
print(f"neff_info == neff info --json: {sys.argv[3]}")
PY
  i=$((i + 1))
done

# The shared library too: the same program, linked against libneff_ffi.so, on the small NEFF.
cc -std=c11 -Wall -Wextra -Werror -O1 -Iinclude ffi/c/host_load.c -Lffi/target/release -lneff_ffi -lz \
  -Wl,-rpath,"$(pwd)/ffi/target/release" -o "$out/host_load_shared"
"$out/host_load_shared" "$small" | tail -n 1
