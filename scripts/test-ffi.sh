#!/usr/bin/env bash
# The C ABI from C, on the host: builds the no_std static library (targets/c/), checks that
# targets/c/include/neff.h is what it generates, then builds targets/c/tests/host_load.c with the system cc under
# AddressSanitizer and UBSan, linked against the static library, and runs it on both nkipy
# NEFFs and every shared real NEFF (found by walking ../shared/fixtures/public); then the same
# program against the shared library (cdylib) on the small NEFF. neff_info's document on every
# NEFF is compared with `neff info --json` (the host command, built here). Before that: the
# headers compile as C99, C11, C2x and C++17 for x86-64, i386, armv7 and Cortex-M with their
# _Static_asserts, and the library is installed under a prefix (scripts/install-c.sh) whose
# pkg-config file the programs are built with, docs/c.md's way; both libraries export neff_*
# only, and the shared one is named by its SONAME. Needs zlib and libxxhash headers (Debian:
# zlib1g-dev, libxxhash-dev), pkg-config, cbindgen, and the cross compilers
# (gcc-arm-linux-gnueabihf, g++-arm-linux-gnueabihf, gcc-arm-none-eabi).
set -euo pipefail
cd "$(dirname "$0")/.."

fixtures=../shared/fixtures/public
if [ ! -d "$fixtures" ]; then
  [ "${CI:-}" != true ] || { echo "test-ffi: $fixtures absent (required under CI=true)" >&2; exit 1; }
  echo "test-ffi: skipped: $fixtures absent"
  exit 0
fi

scripts/gen-header.sh --check
# The headers, with their _Static_asserts, on 64- and 32-bit targets (i386 aligns uint64_t to 4,
# arm-none-eabi-gcc sizes enums by their values): as C99, C11, C2x and C++17. i386 is checked
# freestanding (the compiler's own stdint.h): its syntax and layouts need no 32-bit libc.
targets=("x86-64:cc:c++" "i386:cc -m32 -ffreestanding:c++ -m32 -ffreestanding"
  "armv7:arm-linux-gnueabihf-gcc:arm-linux-gnueabihf-g++"
  "cortex-m4:arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb -ffreestanding:arm-none-eabi-g++ -mcpu=cortex-m4 -mthumb -ffreestanding")
for spec in "${targets[@]}"; do
  IFS=: read -r name c cxx <<<"$spec"
  for tool in "${c%% *}" "${cxx%% *}"; do
    command -v "$tool" >/dev/null || { echo "test-ffi: $tool not found (see the header of this script)" >&2; exit 1; }
  done
  for std in c99 c11 c2x; do
    printf '#include "neff.h"\n' | $c -std=$std -Wall -Wextra -Werror -pedantic -fsyntax-only -Itargets/c/include -x c -
  done
  printf '#include "neff.h"\n' | $cxx -std=c++17 -Wall -Wextra -Werror -pedantic -fsyntax-only -Itargets/c/include -x c++ -
  echo "test-ffi: neff.h compiles for $name as C99, C11, C2x and C++17"
done

# Installed under a prefix, as docs/c.md says; then every global symbol checked.
out=targets/c/target/c
prefix=$(pwd)/$out/prefix
rm -rf "$prefix"
mkdir -p "$out"
scripts/install-c.sh "$prefix"
lib=$prefix/lib
export PKG_CONFIG_PATH=$lib/pkgconfig
static_syms=$(nm -g --defined-only "$lib/libneff.a" | awk 'NF == 3 { print $3 }' | sort)
shared_syms=$(nm -D --defined-only "$lib/libneff.so" | awk 'NF == 3 { print $3 }' | sort)
for syms in "$static_syms" "$shared_syms"; do
  if grep -qv '^neff_' <<<"$syms"; then
    echo "test-ffi: a library exports more than neff_*:" >&2
    grep -v '^neff_' <<<"$syms" >&2
    exit 1
  fi
done
[ "$static_syms" = "$shared_syms" ] || { echo "test-ffi: the two libraries export different symbols" >&2; exit 1; }
echo "test-ffi: both libraries export the same $(wc -l <<<"$static_syms") symbols, all neff_*: $(tr '\n' ' ' <<<"$static_syms")"
soname=$(readelf -d "$lib/libneff.so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ "$soname" = libneff.so.0 ] || { echo "test-ffi: SONAME '$soname', expected libneff.so.0" >&2; exit 1; }
echo "test-ffi: libneff.so SONAME $soname; pkg-config: $(pkg-config --cflags --libs neff)"

# The static library: the program names libneff.a itself (-lneff would take the .so).
cc -std=c11 -Wall -Wextra -Werror -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined \
  -fno-sanitize-recover=undefined $(pkg-config --cflags neff) targets/c/tests/host_load.c "$lib/libneff.a" -lz \
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
# writes compact JSON). The tables the C observer got (<i>.tables, a line per callback) agree
# with it too: the I/O tensors (name, dtype, nrt_dtype, shape, size, in order), each DMA
# queue's set count and semaphores, each subgraph's input and output var counts and the KELF
# members; and, for a trainium-kernel-fusion NEFF, the I/O tensors with the runtime's own
# profile tables (profile.json's neff_node rows: name, shape, size).
cargo build --quiet -p neff-cli --bin neff
i=0
for f in "${ordered[@]}"; do
  target/debug/neff info --json "$f" > "$out/info/$i.host.json"
  python3 - "$out/info/$i.json" "$out/info/$i.host.json" "$f" "$out/info/$i.tables" <<'PY'
import json, os, sys
def load(path):
    with open(path, "rb") as fh:
        return json.loads(fh.read(), object_pairs_hook=lambda pairs: pairs)
c, host = load(sys.argv[1]), load(sys.argv[2])
if c != host:
    sys.exit(f"test-ffi: neff_info differs from `neff info --json` on {sys.argv[3]}")
print(f"neff_info == neff info --json: {sys.argv[3]}")

neff, rows = sys.argv[3], [l.split("\t") for l in open(sys.argv[4]).read().splitlines()]
def fail(what, got, want):
    sys.exit(f"test-ffi: {neff}: the C observer's {what}: {got!r}, expected {want!r}")
doc = json.load(open(sys.argv[2]))
tensors = [(r[1], r[3], r[4], int(r[5]), [int(d) for d in r[7].split(",") if d], int(r[6])) for r in rows if r[0] == "tensor"]
want = [(kind, t["name"], t["dtype"], t["nrt_dtype"], t["shape"], t["size"])
        for kind in ("input", "output") for t in doc[kind + "s"]]
if tensors != want:
    fail("I/O tensors", tensors, want)
queues = [(r[1], r[2], int(r[3]), int(r[4])) for r in rows if r[0] == "queue"]
want = [(sg["definition"], q["name"], q["num_queues"], len(q["semaphores"])) for sg in doc["subgraphs"] for q in sg["dma_queues"]]
if sorted(queues) != sorted(want):
    fail("DMA queues", queues, want)
subgraphs = [(r[1], int(r[2]), int(r[3])) for r in rows if r[0] == "subgraph"]
want = [(sg["definition"], sum(v["type"] == "input" for v in sg["vars"]), sum(v["type"] == "output" for v in sg["vars"]))
        for sg in doc["subgraphs"]]
if sorted(subgraphs) != sorted(want):
    fail("subgraphs (member, num_inputs, num_outputs)", subgraphs, want)
kelf = [r[1] for r in rows if r[0] == "kelf"]
if sorted(set(kelf)) != sorted({k["member"] for k in doc["kelf"]}):
    fail("KELF node lines", kelf, [k["member"] for k in doc["kelf"]])
profile = os.path.join(os.path.dirname(neff), "profile.json")
if os.path.exists(profile):
    nodes = json.load(open(profile))["neff_node"]
    for kind, tag in (("input", "IN"), ("output", "OUT")):
        want = sorted((n["variable_name"], [int(d) for d in n["shape"].strip("[]").split()], int(n["size"]))
                      for n in nodes if n["type"] == tag)
        got = sorted((t[1], t[4], t[5]) for t in tensors if t[0] == kind)
        if not want or got != want:
            fail(f"{kind}s against profile.json", got, want)
    print(f"C observer's I/O tensors == profile.json's neff_node rows: {neff}")
print(f"C observer's tables ({len(tensors)} I/O tensors, {len(queues)} DMA queues, {len(subgraphs)} subgraphs, "
      f"{len(kelf)} KELF lines) agree with neff info --json: {neff}")
PY
  i=$((i + 1))
done

# The shared library too: the same program, built with docs/c.md's link line, on the small NEFF;
# it must ask for libneff.so.0 (the SONAME), found through the installed prefix.
cc -std=c11 -Wall -Wextra -Werror -O1 targets/c/tests/host_load.c $(pkg-config --cflags --libs neff) -lz \
  -Wl,-rpath,"$(pkg-config --variable=libdir neff)" -o "$out/host_load_shared"
readelf -d "$out/host_load_shared" | grep -q 'Shared library: \[libneff.so.0\]' ||
  { echo "test-ffi: the program does not ask for libneff.so.0" >&2; exit 1; }
"$out/host_load_shared" "$small" | tail -n 1
