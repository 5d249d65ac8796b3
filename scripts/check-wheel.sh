#!/usr/bin/env bash
# Checks the Python wheel is portable: its tag says manylinux2014 (glibc 2.17) and abi3 for
# CPython 3.9+, and no symbol its extension module needs from glibc is newer than 2.17 (what
# Amazon Linux 2 and Ubuntu 20.04 have). Usage: scripts/check-wheel.sh WHEEL
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
echo "$name: tag ok, highest glibc symbol version GLIBC_$highest"
