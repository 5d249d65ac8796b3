#!/usr/bin/env bash
# Runs every test of the project: host tests, lints, the no_std cross build and,
# when the firmware image exists, its run under QEMU. Installs what a fresh machine lacks.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "toolchain: thumbv7em-none-eabihf target"
rustup target list --installed | grep -qx thumbv7em-none-eabihf || rustup target add thumbv7em-none-eabihf
cargo fmt --version >/dev/null 2>&1 || rustup component add rustfmt
cargo clippy --version >/dev/null 2>&1 || rustup component add clippy

if [ -d targets/qemu-m4 ] && ! command -v qemu-system-arm >/dev/null 2>&1; then
  step "installing qemu-system-arm"
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && apt-get install -y -qq qemu-system-arm >/dev/null
  else
    sudo apt-get update -qq && sudo apt-get install -y -qq qemu-system-arm >/dev/null
  fi
fi

step "formatting (rustfmt.toml)"
cargo fmt --all --check
(cd targets/qemu-m4 && cargo fmt --check)

step "host tests (workspace)"
cargo test --workspace --all-targets

step "doc tests"
cargo test --workspace --doc

step "clippy (core lints are deny)"
cargo clippy --workspace --all-targets -- -D warnings

step "schema drill: one key added to var entries changes only schema/ (scripts/schema-drill.sh)"
./scripts/schema-drill.sh

step "no_std core for thumbv7em-none-eabihf (with and without defmt)"
cargo build -p neff --target thumbv7em-none-eabihf --release
cargo build -p neff --target thumbv7em-none-eabihf --release --features defmt

if [ -d targets/qemu-m4 ]; then
  step "firmware image under qemu-system-arm (Cortex-M4, mps2-an386)"
  # The image embeds the real NEFFs from ../shared, which is never copied into the repository.
  if [ -d ../shared/fixtures/public/nkipy ]; then
    (cd targets/qemu-m4 && cargo build --release)
    # The run takes about a second; the timeout turns a hung emulator into a failure.
    (cd targets/qemu-m4 && timeout 120 cargo run --release)
  elif [ "${CI:-}" = true ]; then
    echo "error: ../shared/fixtures is absent: the firmware image needs the real NEFFs under CI" >&2
    exit 1
  else
    echo "note: firmware image skipped: ../shared/fixtures (the real NEFFs) is absent"
  fi
fi

step "all tests passed"
