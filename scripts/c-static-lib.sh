#!/usr/bin/env bash
# Makes the static library a C program links: the Rust staticlib (the crate's object and the
# compiler built-ins it was linked with: __muldc3, __addvdi3, ...) linked into one relocatable
# object, whose every global symbol but the neff_* entry points is made local, in an archive of
# its own. A firmware link then meets only neff_* from it: no built-in can clash with the
# toolchain's libgcc or compiler-rt (the object keeps its own copies, resolved inside it).
#   scripts/c-static-lib.sh IN.a OUT.a [TOOL-PREFIX]   (TOOL-PREFIX: arm-none-eabi- for Cortex-M)
set -euo pipefail
in=$1 out=$2 tools=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The members a program calling every entry point would link, as a link pulls them: each
# neff_* symbol asked for (-u), and what those members need, transitively. (Every member,
# --whole-archive, would drag in objects that want the unwinder's rust_eh_personality.)
entry=()
for symbol in $("${tools}nm" -g --defined-only "$in" 2>/dev/null | awk 'NF == 3 && $3 ~ /^neff_/ { print $3 }' | sort -u); do
  entry+=(-u "$symbol")
done
[ ${#entry[@]} -gt 0 ] || { echo "c-static-lib: no neff_* symbol in $in" >&2; exit 1; }
"${tools}ld" -r "${entry[@]}" "$in" -o "$tmp/neff.o"
# The built-ins' embedded LLVM bitcode (.llvmbc, .llvmcmd: what Rust ships for LTO), concatenated
# by `ld -r`, is no bitcode any more: binutils' LLVM plugin aborts on it ("Invalid encoding").
# The machine code is all a C link uses.
"${tools}objcopy" --remove-section=.llvmbc --remove-section=.llvmcmd --wildcard --keep-global-symbol='neff_*' \
  "$tmp/neff.o"
rm -f "$out"
"${tools}ar" rcs "$out" "$tmp/neff.o"
# Only neff_* stays global: anything else defined and global is a failure of this script.
foreign=$("${tools}nm" -g --defined-only "$out" | awk 'NF == 3 && $3 !~ /^neff_/ { print $3 }')
if [ -n "$foreign" ]; then
  echo "c-static-lib: global symbols other than neff_* in $out:" >&2
  echo "$foreign" >&2
  exit 1
fi
