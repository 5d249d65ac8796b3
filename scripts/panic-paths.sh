#!/usr/bin/env bash
# The core's own code has no panic path in a firmware image.
#
# The core's lints (no unwrap, expect, indexing or panic) catch what is written; they do not
# see a check the standard library keeps inside a call the core makes (`copy_from_slice` whose
# lengths the compiler cannot prove equal, `str::split_at`, a searcher's bounds check). Such a
# check is unreachable when the core is right, yet it links the panic machinery and is a panic
# the reader must reason away. This script finds every branch to a panic entry point in the
# image, expands the inlining chain of each (DWARF, llvm-addr2line -i), and fails when a chain
# passes through the core's `src/`, unless the innermost non-library frame is in ALLOWED.
#
#   scripts/panic-paths.sh ELF...      (needs llvm-objdump and llvm-addr2line: Debian's llvm)
set -euo pipefail
cd "$(dirname "$0")/.."
core_src="$(pwd)/src/"

# Frames inlined into the core that are not the core's code, with the reason each is allowed.
ALLOWED=(
  # `<&[u8] as BufRead>::consume` (a NEFF in flash is a byte slice): the caller's byte source,
  # whose own check the core cannot remove; the gzip layer consumes only what it was given.
  "embedded-io-*/src/impls/slice_ref.rs"
)

# Panic entry points of core (demangled names, as llvm-objdump -C prints branch targets).
entry='<(core::panicking::[a-z_]+|core::slice::index::[a-z_]+_fail|core::slice::[a-z_:]+len_mismatch_fail|core::str::slice_error_fail[a-z_]*|core::option::(unwrap|expect)_failed|core::result::unwrap_failed|core::cell::panic_[a-z_]+)>'

status=0
for elf in "$@"; do
  sites=$(llvm-objdump -d --no-show-raw-insn -C "$elf" | grep -E "^ +[0-9a-f]+:.*$entry" | awk '{ sub(":", "", $1); print $1 }')
  checked=0
  found=0
  allowed_sites=0
  for addr in $sites; do
    checked=$((checked + 1))
    chain=$(llvm-addr2line -i -e "$elf" "0x$addr")
    grep -qF "$core_src" <<<"$chain" || continue
    # The innermost frame that is not the standard library: whose check it is.
    owner=$(grep -v '^/rustc/' <<<"$chain" | head -1)
    allowed=false
    for pattern in "${ALLOWED[@]}"; do
      # shellcheck disable=SC2053 # the pattern is a glob on purpose
      [[ "$owner" == *$pattern* ]] && allowed=true
    done
    if $allowed; then
      allowed_sites=$((allowed_sites + 1))
    else
      found=$((found + 1))
      printf 'error: %s: a panic path at 0x%s inlined into the core:\n%s\n' "$elf" "$addr" "$(sed 's/^/    /' <<<"$chain")" >&2
    fi
  done
  printf '%s: %d branches to a panic entry point (in the dependencies and the image itself); through the core: %d, and %d allowed (%s)\n' \
    "$(basename "$elf")" "$checked" "$found" "$allowed_sites" "${ALLOWED[*]}"
  [ "$found" -eq 0 ] || status=1
done
exit $status
