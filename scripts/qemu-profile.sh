#!/usr/bin/env bash
# Where a firmware image spends its run under QEMU: translated blocks and guest instructions
# executed, by function.
#
# QEMU has no cycle counter for Cortex-M, and wall time under emulation is noisy; the blocks and
# instructions run are meant to be deterministic (docs/firmware.md: on a loaded machine they
# were not, so run the two builds side by side) and compare two builds of one image (a flag, an
# opt-level, an `#[inline]`): instructions for the work done, blocks for the branches taken
# (calls included). `-d in_asm` logs each block once as translated (its instructions), and
# `-d exec,nochain` every block as it runs, with the function it starts in; nothing is written
# to disk.
#
#   scripts/qemu-profile.sh ELF [N]    the totals, then the N (default 25) functions that run
#                                      the most instructions: instructions, blocks, name
#
# docs/firmware.md quotes figures made with it.
set -euo pipefail
elf=$1
top=${2:-25}
command -v qemu-system-arm >/dev/null || { echo "qemu-profile: qemu-system-arm is not installed" >&2; exit 1; }
timeout 900 qemu-system-arm -cpu cortex-m4 -machine mps2-an386 -nographic \
  -semihosting-config enable=on,target=native -kernel "$elf" -d in_asm,exec,nochain -D /dev/stdout </dev/null 2>/dev/null |
  awk '/^IN:/ { in_block = 1; n = 0; next }
       in_block && /^0x[0-9a-f]+:/ { if (n == 0) pc = substr($1, 3, 8); n++; next }
       in_block && /^$/ { if (n > 0) size[pc] = n; in_block = 0; next }
       /^Trace/ {
         # Trace 0: host [cs_base/pc/flags/cflags] function
         split(substr($0, index($0, "[") + 1), f, "/")
         blocks[$NF]++; insns[$NF] += size[f[2]]; total_blocks++; total_insns += size[f[2]]
       }
       END {
         printf "%.0f instructions, %.0f blocks\n", total_insns, total_blocks
         for (fn in blocks) printf "%.0f %.0f %s\n", insns[fn], blocks[fn], fn
       }' |
  { read -r first; echo "$first"; sort -rn | head -n "$top"; } |
  sed -E 's/17h[0-9a-f]{16}E$//'
