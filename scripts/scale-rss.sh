#!/usr/bin/env bash
# Peak RSS of `neff info`, `check` and `load --digest-only` on generated NEFFs at the scale of
# real models (the scale-neff example's presets), measured with GNU time. Prints one line a
# verb and preset: `<preset> <verb> <peak KiB> <seconds>`.
#   scripts/scale-rss.sh [preset ...]     (default: vars weights io host)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v /usr/bin/time >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq time >/dev/null; }
cargo build -q --release -p neff-cli --bin neff --example scale-neff
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for preset in "${@:-vars weights io host}"; do
  for p in $preset; do
    target/release/examples/scale-neff "$p" "$dir/$p.neff" >/dev/null
    for verb in info check "load --digest-only"; do
      # shellcheck disable=SC2086
      /usr/bin/time -f "%M %e" -o "$dir/time" target/release/neff $verb "$dir/$p.neff" >/dev/null
      read -r kib secs <"$dir/time"
      printf '%-8s %-20s %8s KiB %6s s\n' "$p" "$verb" "$kib" "$secs"
    done
  done
done
