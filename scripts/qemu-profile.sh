#!/usr/bin/env bash
# Where a firmware image spends its run under QEMU: translated blocks executed, by function.
#
# QEMU has no cycle counter for Cortex-M, and wall time under emulation is noisy; the number of
# translated blocks run is deterministic and follows the instructions run closely enough to
# compare two builds of one image (a flag, an opt-level, an `#[inline]`). `-d exec,nochain`
# logs every block as it runs, with the symbol it starts in; nothing is written to disk.
#
#   scripts/qemu-profile.sh ELF [N]    the total, then the N (default 25) busiest functions
#
# The README's firmware section quotes figures made with it (the outliner's 5%).
set -euo pipefail
elf=$1
top=${2:-25}
command -v qemu-system-arm >/dev/null || { echo "qemu-profile: qemu-system-arm is not installed" >&2; exit 1; }
timeout 600 qemu-system-arm -cpu cortex-m4 -machine mps2-an386 -nographic \
  -semihosting-config enable=on,target=native -kernel "$elf" -d exec,nochain -D /dev/stdout </dev/null 2>/dev/null |
  awk '/^Trace/ { blocks[$NF]++; total++ }
       END { printf "%d blocks\n", total; for (f in blocks) printf "%d %s\n", blocks[f], f }' |
  { read -r first; echo "$first"; sort -rn | head -n "$top"; } |
  sed -E 's/17h[0-9a-f]{16}E$//'
