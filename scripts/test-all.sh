#!/usr/bin/env bash
# Runs every test of the project: host tests, lints, the no_std cross build, the core's tests
# on a 32-bit and on a big-endian Linux target under qemu-user, the fuzz corpora (replayed by
# the workspace tests) and, when the firmware image exists, its run under QEMU, with its defmt
# build's log decoded by defmt-print, and the Python package (a wheel built in a venv, then
# pytest). Installs what a fresh machine lacks. Each step prints its duration; the total closes
# the run.
set -euo pipefail
cd "$(dirname "$0")/.."

started=$SECONDS
step_started=$SECONDS
step_name=""
# Free space on the checkout's file system, for the step lines (a full disk fails a build
# with a message that does not say so).
disk_free() {
  df -h --output=avail . 2>/dev/null | tail -n 1 | tr -d ' '
}

# Closes the previous step (printing its time and the disk space left) and opens the next.
step() {
  if [ -n "$step_name" ]; then
    printf '<== %s: %ds (disk: %s free)\n' "$step_name" $((SECONDS - step_started)) "$(disk_free)"
  fi
  step_name="$*"
  step_started=$SECONDS
  printf '\n==> %s\n' "$*"
}

# On CI (a clean clone, run once) the build caches a rerun would reuse only take disk: no
# incremental compilation, no pip download cache, and each finished step's own build
# directories removed (ci_drop). CI machines have had as little as a few GB free; this keeps
# the run's peak to about half of the 13 GB it takes with the caches.
ci=false
if [ "${CI:-}" = true ]; then
  ci=true
  export CARGO_INCREMENTAL=0 PIP_NO_CACHE_DIR=1
fi
ci_drop() {
  if [ "$ci" = true ]; then rm -rf "$@"; fi
}
printf 'disk: %s free at the start\n' "$(disk_free)"

# Debian packages, installed only when their command is missing.
apt_install() {
  local run=()
  [ "$(id -u)" = 0 ] || run=(sudo)
  if [ -z "${apt_updated:-}" ]; then
    "${run[@]}" apt-get update -qq
    apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive "${run[@]}" apt-get install -y -qq "$@" >/dev/null
}

# The core's tests also run on these Linux targets, under qemu-user through Cargo's runner:
# armv7 has a 32-bit usize (u64 -> usize truncation), s390x is big-endian.
# target triple | Debian gcc | Debian libc | qemu-user binary | sysroot
cross_targets=(
  "armv7-unknown-linux-gnueabihf gcc-arm-linux-gnueabihf libc6-dev-armhf-cross qemu-arm /usr/arm-linux-gnueabihf"
  "s390x-unknown-linux-gnu gcc-s390x-linux-gnu libc6-dev-s390x-cross qemu-s390x /usr/s390x-linux-gnu"
)

step "toolchain: rustup targets, components and Debian packages"
installed_targets=$(rustup target list --installed)
for target in thumbv7em-none-eabihf armv7-unknown-linux-gnueabihf s390x-unknown-linux-gnu; do
  grep -qx "$target" <<<"$installed_targets" || rustup target add "$target"
done
cargo fmt --version >/dev/null 2>&1 || rustup component add rustfmt
cargo clippy --version >/dev/null 2>&1 || rustup component add clippy
# `script` gives the progress-bar test a terminal (util-linux; Debian's bsdutils).
command -v script >/dev/null 2>&1 || apt_install bsdutils
if [ -d targets/qemu-m4 ] && ! command -v qemu-system-arm >/dev/null 2>&1; then
  apt_install qemu-system-arm
fi
for spec in "${cross_targets[@]}"; do
  read -r target gcc_pkg libc_pkg qemu sysroot <<<"$spec"
  command -v "$qemu" >/dev/null 2>&1 || apt_install qemu-user
  [ -d "$sysroot/lib" ] && command -v "${gcc_pkg#gcc-}-gcc" >/dev/null 2>&1 || apt_install "$gcc_pkg" "$libc_pkg"
done

step "formatting (rustfmt.toml)"
cargo fmt --all --check
(cd targets/qemu-m4 && cargo fmt --check)
(cd fuzz && cargo fmt --check)
(cd targets/python && cargo fmt --check)

step "host tests (workspace; the fuzz corpora replay in tests/fuzz_replay.rs)"
cargo test --workspace --all-targets

step "doc tests, and the core's docs with broken links as errors"
cargo test --workspace --doc
RUSTDOCFLAGS="-D warnings" cargo doc -p neff --no-deps -q

step "clippy (core lints are deny)"
cargo clippy --workspace --all-targets -- -D warnings

step "install: the README's cargo install line, into a temporary root"
install_root=$(mktemp -d)
cargo install --locked --path targets/host/cli --root "$install_root" --quiet
"$install_root/bin/neff" --version
"$install_root/bin/neff" load >/dev/null
rm -rf "$install_root"

step "cargo package: each crate as a registry would get it, and nothing it must not ship"
# Packaged together, so that a crate's path dependencies resolve to the others, and each built
# from its package alone (what it ships is enough to build it); --allow-dirty because a working
# tree under test may hold edits. Then: no fixtures, no build output, no corpus in any of them.
# Cargo unpacks the packages it verifies into $CARGO_HOME/registry/src/-<hash of this target
# dir>/<name>-<version> and never unpacks the same version there again: a file added to a crate
# whose version did not change would be missing from the build that verifies the crates using it.
# Those copies of this workspace's crates go first.
rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/neff-*
cargo package --workspace --allow-dirty --quiet
for crate in $(cargo metadata --no-deps --format-version 1 | grep -o '"name":"neff[a-z-]*","version"' | cut -d'"' -f4); do
  shipped=$(cargo package --list --allow-dirty -p "$crate" 2>/dev/null)
  if grep -E '(^|/)(target|fixtures|corpus|artifacts)/' <<<"$shipped"; then
    echo "cargo package -p $crate would ship the files above" >&2
    exit 1
  fi
done

step "schema drill: one key added to var entries changes only schema/ (scripts/schema-drill.sh)"
./scripts/schema-drill.sh
ci_drop target/schema-drill

step "refusal drill: one refusal added is one row, its check and its test; the docs and the C header regenerate (scripts/refusal-drill.sh)"
./scripts/refusal-drill.sh
ci_drop target/refusal-drill

step "no_std core for thumbv7em-none-eabihf (with and without defmt)"
cargo build -p neff --target thumbv7em-none-eabihf --release
cargo build -p neff --target thumbv7em-none-eabihf --release --features defmt

step "C ABI (targets/c/): formatting, clippy, unit tests, no_std static library for thumbv7em"
# Its own workspace (panic = "abort" for the no_std static library).
(cd targets/c && cargo fmt --check && cargo clippy --all-targets -- -D warnings && cargo test)
# The stack sizes the library reports are measured per build: the release build's too.
(cd targets/c && cargo test --release stack)
(cd targets/c && cargo build --release --lib --target thumbv7em-none-eabihf)

step "C ABI under Miri (nightly): the FFI tests, raw pointers and callbacks checked"
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
rustup component list --toolchain nightly --installed | grep -q '^miri' ||
  rustup component add --toolchain nightly miri rust-src
(cd targets/c && cargo +nightly miri test)

step "targets/c/include/neff.h is what cbindgen generates; the C host program under ASan and UBSan (scripts/test-ffi.sh)"
# Pinned: the checked-in header is this version's output.
command -v cbindgen >/dev/null 2>&1 && [ "$(cbindgen --version)" = "cbindgen 0.29.4" ] ||
  cargo install cbindgen --version 0.29.4 --locked --force
[ -f /usr/include/zlib.h ] || apt_install zlib1g-dev
[ -f /usr/include/xxhash.h ] || apt_install libxxhash-dev
command -v pkg-config >/dev/null 2>&1 || apt_install pkg-config
# The header's targets: armv7 (C++ too) and Cortex-M; i386 needs only gcc's -m32.
command -v arm-linux-gnueabihf-g++ >/dev/null 2>&1 || apt_install g++-arm-linux-gnueabihf
command -v arm-none-eabi-g++ >/dev/null 2>&1 || apt_install gcc-arm-none-eabi
./scripts/test-ffi.sh

for spec in "${cross_targets[@]}"; do
  read -r target gcc_pkg libc_pkg qemu sysroot <<<"$spec"
  step "core tests on $target under $qemu (profile cross-test: optimised, overflow checks on)"
  env_target=$(tr 'a-z-' 'A-Z_' <<<"$target")
  export "CARGO_TARGET_${env_target}_LINKER=${gcc_pkg#gcc-}-gcc"
  export "CARGO_TARGET_${env_target}_RUNNER=$qemu -L $sysroot"
  export "CC_${target//-/_}=${gcc_pkg#gcc-}-gcc"
  # The tests read ../shared through the host file system, which qemu-user shares.
  cargo test -p neff --target "$target" --profile cross-test
done

if [ -d targets/qemu-m4 ]; then
  step "firmware image under qemu-system-arm (Cortex-M4, mps2-an386)"
  # The image embeds the real NEFFs from ../shared, which is never copied into the repository.
  if [ -d ../shared/fixtures/public/nkipy ] && [ -d ../shared/fixtures/public/trainium-kernel-fusion ]; then
    (cd targets/qemu-m4 && cargo build --release)
    # The run takes about a second; the timeout turns a hung emulator into a failure.
    (cd targets/qemu-m4 && timeout 300 cargo run --release)

    step "defmt firmware image under qemu-system-arm, its log decoded by defmt-print"
    # A debug build: it decodes a few KB of log, and builds in about a minute instead of seven.
    command -v defmt-print >/dev/null 2>&1 || cargo install defmt-print --locked --debug
    elf=targets/qemu-m4/target/thumbv7em-none-eabihf/release/neff-qemu-m4-defmt
    (cd targets/qemu-m4 && cargo build --release --features defmt --bin neff-qemu-m4-defmt)
    # The image writes defmt frames to semihosting stdout; defmt-print decodes them with the
    # format strings the ELF keeps. pipefail fails the step if either side fails (the image
    # exits non-zero when a check failed).
    decoded=$(cd targets/qemu-m4 && timeout 300 cargo run --release --features defmt --bin neff-qemu-m4-defmt |
      defmt-print -e "../../$elf")
    printf '%s\n' "$decoded"
    # Whole lines, as the core's defmt::Format impls print them: a field printed in another's
    # place (member, key path, offset, kind) fails here.
    expect_line() {
      grep -Fxq -- "$1" <<<"$decoded" || { printf 'error: the decoded defmt log lacks the line:\n%s\n' "$1" >&2; exit 1; }
    }
    expect_line 'WARN  matmul_small-unknown-dtype.neff (variant): Warning { stage: DefJson, member: "sg00/def.json", key_path: "var.output0.dtype", offset: 3562, offset_base: Member, kind: Manifest(UnknownValue { key: "dtype", value: "float99" }) }'
    expect_line 'ERROR matmul_small-size-as-string.neff (variant, must be rejected): rejected: Error { stage: DefJson, member: "sg00/def.json", key_path: "var.output0.size", offset: 3461, offset_base: Member, kind: Manifest(WrongType { expected: UnsignedInteger, found: String, message: "" }) }'
    expect_line 'INFO  matmul_small.neff: summary: LoadReport { device_arch: Some(Cayman), target: "cayman", subgraphs: 2, payloads: 24, placed: 24, bytes_placed: 186368, inputs: 2, outputs: 1, manifests: 18, released: 0, warnings: 0, inflated_bytes: 356864, compressed_bytes: 53601, members: 72, padding_bytes: 7839, trailing_bytes: 0, integrity: Some(Match { order: WordSwapped, computed: Md5([ef, e9, b3, bc, 98, 16, 30, 77, b9, 4c, 8b, cd, ac, f5, 1f, 47]) }), arena_peak: 3168 }'
    # The bf16 real NEFF: its `<V2` weights load on the controller, every digest checked.
    expect_line 'INFO  trainium-kernel-fusion/baseline_bf16_s512: summary: LoadReport { device_arch: Some(Cayman), target: "cayman", subgraphs: 2, payloads: 24, placed: 24, bytes_placed: 292672, inputs: 3, outputs: 1, manifests: 17, released: 0, warnings: 0, inflated_bytes: 434688, compressed_bytes: 39900, members: 67, padding_bytes: 1060, trailing_bytes: 0, integrity: Some(Match { order: WordSwapped, computed: Md5([76, 47, 13, 7b, cc, ae, 81, 28, 0c, c6, 77, d9, a4, a6, eb, 08]) }), arena_peak: 3045 }'
    expect_line 'INFO  trainium-kernel-fusion/baseline_bf16_s512: OK: 67 members, 24 payloads placed, 292672 bytes placed, 24 digests checked (report and device), header MD5 match (word-swapped), 0 warnings, arena 3045 of 36864 bytes'
    # The real training NEFFs a 32 KiB arena once refused, and the generated one shaped like them.
    expect_line 'INFO  training-cache/MODULE_14041361676943519958: OK: 47 members, 17 payloads placed, 12481320 bytes placed, 17 digests checked (report and device), header MD5 match (plain), 0 warnings, arena 30143 of 36864 bytes'
    expect_line 'INFO  training-cache/MODULE_6855667900855398127: OK: 183 members, 156 payloads placed, 82400 bytes placed, 156 digests checked (report and device), header MD5 match (plain), 0 warnings, arena 36703 of 36864 bytes'
    expect_line 'INFO  scale-controller.neff (generated: shaped like the refused real ones): OK: 29 members, 17 payloads placed, 3264 bytes placed, 17 digests checked (report and device), header MD5 match (word-swapped), 0 warnings, arena 31669 of 36864 bytes'
    expect_line 'firmware: 11 passed, 0 failed'

    step "C firmware image under qemu-system-arm: arm-none-eabi-gcc + libneff_ffi.a, the Rust image's summary lines (scripts/test-c-firmware.sh)"
    command -v arm-none-eabi-gcc >/dev/null 2>&1 || apt_install gcc-arm-none-eabi
    [ -f /usr/lib/arm-none-eabi/include/string.h ] || apt_install libnewlib-arm-none-eabi
    command -v llvm-size >/dev/null 2>&1 || apt_install llvm
    ./scripts/test-c-firmware.sh

    step "no panic path in the core's own code, in both firmware images (scripts/panic-paths.sh)"
    command -v llvm-addr2line >/dev/null 2>&1 && command -v llvm-objdump >/dev/null 2>&1 || apt_install llvm
    scripts/panic-paths.sh targets/qemu-m4/target/thumbv7em-none-eabihf/release/neff-qemu-m4 "$elf"

    step "flash budget: the defmt image's .text within 128 KiB"
    # RAM is held by the linker (the stack above unmapped memory); flash holds the embedded NEFFs
    # too, so the code's own budget is checked here. llvm-size came with the step above.
    text=$(llvm-size -A "$elf" | awk '$1 == ".text" { print $2 }')
    # 120 KiB until the DMA references that wait for their def.json moved to the device's
    # notebook, once per member and name (issue 42: 120,028 -> 124,248 bytes); 124 KiB until
    # the seed's refusals got codes of their own, def.json's first error took libnrt's order,
    # the runtime's tables went to the observer (issue 48: about 2.8 KB), every member went to
    # the observer (256 bytes) and the tokenizer's whole-token paths (604 bytes): 129,936.
    echo "neff-qemu-m4-defmt: .text $text bytes, budget 131072"
    [ "$text" -le 131072 ] || { echo "error: the defmt image's .text passed its 128 KiB budget" >&2; exit 1; }
  elif [ "${CI:-}" = true ]; then
    echo "error: ../shared/fixtures is absent: the firmware image needs the real NEFFs under CI" >&2
    exit 1
  else
    echo "note: firmware image skipped: ../shared/fixtures (the real NEFFs) is absent"
  fi
fi

# Nothing below builds for these targets or reads the C library's and the firmware image's own
# build directories.
ci_drop targets/c/target targets/qemu-m4/target target/thumbv7em-none-eabihf target/cross-test
for spec in "${cross_targets[@]}"; do
  read -r target _ <<<"$spec"
  ci_drop "target/$target"
done

step "Python package: the wheel (maturin, in a venv), then pytest against the neff command"
# targets/python is its own Cargo workspace: PyO3 needs a Python interpreter to build.
command -v python3 >/dev/null 2>&1 || apt_install python3
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || apt_install python3-venv
venv=target/python-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
# ziglang: maturin links the wheel with zig against glibc 2.17 (manylinux2014).
"$venv/bin/python" -m pip install -q --upgrade maturin ziglang numpy ml_dtypes pytest mypy abi3audit
rm -rf target/python-wheels
(cd targets/python && PATH="$PWD/../../$venv/bin:$PATH" "../../$venv/bin/maturin" build --release -q --zig \
  --compatibility manylinux2014 -i "../../$venv/bin/python" -o ../../target/python-wheels)
command -v objdump >/dev/null 2>&1 || apt_install binutils
PATH="$PWD/$venv/bin:$PATH" ./scripts/check-wheel.sh target/python-wheels/neff-*.whl
"$venv/bin/python" -m pip install -q --force-reinstall --no-deps target/python-wheels/neff-*.whl
# The sdist installs with pip alone, in a fresh venv (pip fetches maturin; cargo compiles).
rm -rf target/python-sdist target/python-sdist-venv
(cd targets/python && "../../$venv/bin/maturin" sdist -o ../../target/python-sdist)
python3 -m venv target/python-sdist-venv
CARGO_TARGET_DIR="$PWD/target/python-sdist-build" target/python-sdist-venv/bin/python -m pip install -q target/python-sdist/neff-*.tar.gz
# numpy is an extra: the package imports and checks a NEFF without it.
target/python-sdist-venv/bin/python - <<'PY'
import importlib.util, sys
import neff
assert importlib.util.find_spec("numpy") is None, "numpy came with the sdist (it is the extra neff[numpy])"
import subprocess
sample = "target/python-sdist-sample.neff"
subprocess.run(["cargo", "run", "-q", "-p", "neff-cli", "--example", "scale-neff", "--", "small", sample], check=True)
print("sdist: installed;", neff.check(sample).members, "members checked without numpy")
PY
(cd targets/python && PYO3_PYTHON="../../$venv/bin/python" cargo clippy -q --all-targets -- -D warnings)
# The package's annotations and the native module's stubs (python/neff/_neff.pyi) agree.
(cd targets/python/python && "../../../$venv/bin/python" -m mypy --strict --cache-dir=/dev/null neff)
# The tests compare the package with the command, and generate big NEFFs with scale-neff.
cargo build -q -p neff-cli --bin neff --example scale-neff --example scale-cache
# Any non-zero status fails the step, 5 (pytest collected no test) included.
pytest_status=0
(cd targets/python && NEFF_BIN=../../target/debug/neff SCALE_NEFF_BIN=../../target/debug/examples/scale-neff \
  SCALE_CACHE_BIN=../../target/debug/examples/scale-cache \
  PYTHONDONTWRITEBYTECODE=1 "../../$venv/bin/python" -m pytest -q -rs -p no:cacheprovider tests) || pytest_status=$?
if [ "$pytest_status" -ne 0 ]; then
  [ "$pytest_status" -eq 5 ] && echo "error: pytest collected no test in targets/python/tests" >&2
  exit "$pytest_status"
fi

step "Python package on CPython 3.9, the wheel's abi3 floor (bullseye's interpreter, unpacked; scripts/test-python-floor.sh)"
command -v xz >/dev/null 2>&1 || apt_install xz-utils
command -v curl >/dev/null 2>&1 || apt_install curl
NEFF_BIN=../../target/debug/neff SCALE_NEFF_BIN=../../target/debug/examples/scale-neff \
  SCALE_CACHE_BIN=../../target/debug/examples/scale-cache \
  ./scripts/test-python-floor.sh target/python-wheels/neff-*.whl "$venv/bin/python"

step "all tests passed"
printf 'total: %ds\n' $((SECONDS - started))
