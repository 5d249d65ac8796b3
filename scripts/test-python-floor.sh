#!/usr/bin/env bash
# The Python package's tests on CPython 3.9, the oldest Python its abi3 wheel names
# (cp39-abi3), beside the run on the machine's own Python.
#
#   scripts/test-python-floor.sh WHEEL VENV_PYTHON
#
# Debian bookworm has no 3.9, so the interpreter comes from Debian bullseye's packages
# (python3.9-minimal, libpython3.9-minimal, libpython3.9-stdlib, and the two libraries bookworm
# no longer ships: libffi7, libssl1.1), unpacked with `dpkg -x` under target/python39: nothing is
# installed on the system, and the machine's glibc (2.36) is newer than the 2.31 they need.
# pytest, numpy and ml_dtypes for 3.9 are installed beside it with VENV_PYTHON's pip
# (`--target --python-version 3.9 --only-binary`), and the wheel the same way: the same file
# the other run tested. The test-only tools that need 3.10+ (mypy's checks) skip themselves.
set -euo pipefail
wheel=$1
venv_python=$2
root=target/python39
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
packages=(python3.9-minimal libpython3.9-minimal libpython3.9-stdlib libffi7 libssl1.1 libmpdec3)

if [ ! -x "$root/usr/bin/python3.9" ]; then
  rm -rf "$root" && mkdir -p "$root/debs"
  # The index names each package's current file (bullseye's security updates move them).
  curl -fsS --retry 3 "$mirror/dists/bullseye/main/binary-amd64/Packages.xz" | xz -d >"$root/Packages"
  for package in "${packages[@]}"; do
    file=$(awk -v p="$package" '$1 == "Package:" { hit = ($2 == p) } hit && $1 == "Filename:" { print $2; exit }' "$root/Packages")
    [ -n "$file" ] || { echo "error: bullseye's index has no $package" >&2; exit 1; }
    curl -fsS --retry 3 -o "$root/debs/${file##*/}" "$mirror/$file"
    dpkg -x "$root/debs/${file##*/}" "$root"
  done
fi
python39=("env" "PYTHONHOME=$PWD/$root/usr" "PYTHONPATH=$PWD/$root/site"
  "LD_LIBRARY_PATH=$PWD/$root/usr/lib/x86_64-linux-gnu" "$PWD/$root/usr/bin/python3.9")
"${python39[@]}" -c 'import sys; assert sys.version_info[:2] == (3, 9), sys.version; print("python", sys.version.split()[0])'

rm -rf "$root/site"
# pip resolves markers for the running Python, not the target: the backports pytest needs
# on 3.9 are named.
"$venv_python" -m pip install -q --target "$root/site" --python-version 3.9 --implementation cp \
  --only-binary=:all: pytest exceptiongroup tomli typing_extensions 'numpy>=1.21' 'ml_dtypes>=0.2' "$wheel"
"${python39[@]}" -c 'import neff, sys; assert neff.__file__.startswith(sys.argv[1]), neff.__file__' "$PWD/$root/site"

status=0
(cd targets/python && PYTHONDONTWRITEBYTECODE=1 "${python39[@]}" -m pytest -q -rs -p no:cacheprovider tests) || status=$?
[ "$status" -eq 5 ] && echo "error: pytest collected no test in targets/python/tests" >&2
exit "$status"
