# Sourced by the drills (schema-drill.sh, refusal-drill.sh): a scratch copy of the tracked tree,
# committed as `base` so that the drill can list what its edit changed. Sets `root` (this
# repository), `tmp` (removed on exit) and `scratch` (the copy, the current directory after).
root=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The copy sits beside a link to ../shared, as the repository does (the tests read the fixtures).
scratch="$tmp/repo"
mkdir "$scratch"
[ -d "$root/../shared" ] && ln -s "$(cd "$root/../shared" && pwd)" "$tmp/shared"
# One tar reads the whole list (xargs would start several, whose archives the reader stops at the
# first end of).
git ls-files -z | (cd "$root" && tar --null -T - -cf -) | (cd "$scratch" && tar xf -)
cd "$scratch"
git init -q && git add -A && git -c user.email=drill@neff -c user.name=drill commit -qm base
