#!/usr/bin/env bash
# Builds the C library (targets/c/, release) and installs it under PREFIX:
#   PREFIX/include/neff.h, neff_codes.h, neff_schema.h
#   PREFIX/lib/libneff.a                 the static library, only neff_* global (c-static-lib.sh)
#   PREFIX/lib/libneff.so.X.Y.Z          the shared library, SONAME libneff.so.X (targets/c/build.rs),
#   PREFIX/lib/libneff.so.X, libneff.so  with its two links
#   PREFIX/lib/pkgconfig/neff.pc         for `pkg-config --cflags --libs neff`
# Usage: scripts/install-c.sh PREFIX
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=$(realpath -m "${1:?usage: scripts/install-c.sh PREFIX}")
(cd targets/c && cargo build --quiet --release --lib)
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' targets/c/Cargo.toml | head -n1)
major=${version%%.*}
mkdir -p "$prefix/include" "$prefix/lib/pkgconfig"
install -m 644 targets/c/include/neff.h targets/c/include/neff_codes.h targets/c/include/neff_schema.h "$prefix/include/"
scripts/c-static-lib.sh targets/c/target/release/libneff_ffi.a "$prefix/lib/libneff.a"
install -m 755 targets/c/target/release/libneff_ffi.so "$prefix/lib/libneff.so.$version"
ln -sfn "libneff.so.$version" "$prefix/lib/libneff.so.$major"
ln -sfn "libneff.so.$major" "$prefix/lib/libneff.so"
# The library needs nothing but the C library (memcpy, memset, abort): no Libs.private.
cat >"$prefix/lib/pkgconfig/neff.pc" <<PC
prefix=$prefix
includedir=\${prefix}/include
libdir=\${prefix}/lib

Name: neff
Description: Loads AWS Neuron NEFF files with fixed, caller-lent memory (C API)
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -lneff
PC
echo "install-c: neff $version under $prefix (include/neff.h, lib/libneff.a, lib/libneff.so.$version, lib/pkgconfig/neff.pc)"
