#!/usr/bin/env bash
# Checks the Python wheel is portable: its tag says manylinux2014 (glibc 2.17) and abi3 for
# CPython 3.9+, and no symbol its extension module needs from glibc is newer than 2.17 (what
# Amazon Linux 2 and Ubuntu 20.04 have), and its extension calls only the stable ABI of CPython
# 3.9 (abi3audit reads the symbols it imports from libpython). The tests run the wheel on the
# machine's CPython and on 3.9 (scripts/test-python-floor.sh); 3.10, 3.12 and 3.13 have no
# interpreter here, and this check is what stands for them.
# Usage: scripts/check-wheel.sh WHEEL (abi3audit on PATH: pip install abi3audit)
set -euo pipefail
wheel=$1
name=$(basename "$wheel")
case "$name" in
  *-cp39-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl | *-cp39-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl) ;;
  *) echo "error: $name: expected a cp39-abi3 manylinux2014 (manylinux_2_17) x86_64 wheel" >&2; exit 1 ;;
esac
command -v objdump >/dev/null || { echo "error: objdump (binutils) is needed" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 -m zipfile -e "$wheel" "$dir"
so=$(find "$dir" -name '_neff*.so' | head -n 1)
[ -n "$so" ] || { echo "error: $name holds no _neff*.so" >&2; exit 1; }
# Every versioned glibc symbol the module needs, highest version last.
highest=$(objdump -T "$so" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -n 1)
[ -n "$highest" ] || { echo "error: no GLIBC_ symbol versions in $so" >&2; exit 1; }
if [ "$(printf '%s\n2.17\n' "$highest" | sort -V | tail -n 1)" != "2.17" ]; then
  echo "error: $name needs GLIBC_$highest (newer than 2.17):" >&2
  objdump -T "$so" | grep -E "GLIBC_$highest" >&2
  exit 1
fi
command -v abi3audit >/dev/null || { echo "error: abi3audit is needed (pip install abi3audit)" >&2; exit 1; }
abi3=$(abi3audit --strict --summary "$wheel" 2>&1) || { echo "$abi3" >&2; echo "error: $name calls outside the abi3 (3.9) API" >&2; exit 1; }
grep -q '0 ABI version mismatches and 0 ABI violations' <<<"$(tr -s ' \n' ' ' <<<"$abi3")" ||
  { echo "$abi3" >&2; echo "error: abi3audit did not find the wheel clean" >&2; exit 1; }
echo "$name: tag ok, highest glibc symbol version GLIBC_$highest, abi3 (CPython 3.9+) clean by abi3audit"
