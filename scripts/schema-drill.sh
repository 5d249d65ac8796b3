#!/usr/bin/env bash
# The schema drill: a maintainer adds one consumed key to `var` entries in schema/def.toml.
# In a scratch copy of the tree, this appends a `u64` key, regenerates the docs, and checks:
#   - the core builds (for the host and for thumbv7em) and its manifest tests pass, with a
#     def.json carrying the new key parsed and the value delivered on each streamed var;
#   - the files that changed are schema/def.toml (the edit) and schema/README.md (generated):
#     no table, footprint or hand-written code needed touching.
# Then a second drill, from the same base: a field appended to a published layout
# (`kbin_mem_ref_set_t`) reaches the C header (targets/c/include/neff_schema.h, regenerated), whose
# _Static_asserts hold under the host cc (and arm-none-eabi-gcc when present), as the Rust
# side's assertions hold in the core's build; only schema/layouts.toml, schema/README.md and
# targets/c/include/neff_schema.h change.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/scratch-copy.sh
. scripts/scratch-copy.sh
cat >>schema/def.toml.key <<'TOML'
[[object.key]]
key = "drill_extra"
type = "u64"
field = "drill_extra"
doc = "Schema drill: a key added by a maintainer."
TOML
# The key goes at the end of the `Var` object: right before the next [[object]] after it.
python3 - <<'PY'
text = open("schema/def.toml").read()
key = open("schema/def.toml.key").read()
start = text.index('name = "Var"')
end = text.index("[[object]]", start)
open("schema/def.toml", "w").write(text[:end] + key + "\n" + text[end:])
PY
rm schema/def.toml.key
export CARGO_TARGET_DIR="$root/target/schema-drill"
NEFF_UPDATE_SCHEMA_DOC=1 cargo test -q -p neff --test manifest_schema_doc >/dev/null
cargo build -q -p neff --target thumbv7em-none-eabihf --release
cat >tests/drill.rs <<'RS'
//! The drill's key is parsed and delivered on each streamed var.
use neff::manifest::{DefJson, Document, Entry, EntryAt};
#[test]
fn the_new_key_reaches_the_visitor() {
    let doc = br#"{"var":{"o":{"type":"output","var_id":0,"size":4,"drill_extra":18446744073709551615}}}"#;
    let mut seen = None;
    let mut visit = |e: Entry<'_>, _: &EntryAt<'_>| {
        if let Entry::Var(v) = e {
            seen = v.drill_extra;
        }
        Ok(())
    };
    let mut scratch = vec![0u8; neff::manifest::STRING_SCRATCH];
    let mut tok = neff::json::Tokenizer::new(&mut scratch, neff::manifest::DEPTH_LIMIT);
    DefJson::default()
        .parse_into(&mut tok, &mut &doc[..], "sg00/def.json", &mut neff::error::IgnoreWarnings, &mut visit)
        .expect("parses");
    assert_eq!(seen, Some(u64::MAX));
}
RS
if ! cargo test -q -p neff --lib --test drill --test manifest_real --test manifest_checks --test manifest_schema_doc \
  --test loader >"$tmp/test.log" 2>&1; then
  grep -E 'FAILED|panicked|error' -A 6 "$tmp/test.log" | head -60
  echo "schema drill: the core's tests failed with the added key" >&2
  exit 1
fi
rm tests/drill.rs
changed=$(git status --porcelain | awk '{print $2}' | LC_ALL=C sort | tr '\n' ' ')
echo "schema drill: changed files: $changed"
[ "$changed" = "schema/README.md schema/def.toml " ] || { echo "schema drill: expected only schema/def.toml and schema/README.md to change" >&2; exit 1; }
git diff --stat
echo "schema drill: passed"

# The layout drill.
git checkout -q -- . && git clean -qfd
python3 - <<'PY'
text = open("schema/layouts.toml").read()
start = text.index('c_name = "kbin_mem_ref_set_t"')
size = text.index("size = 24", start)
text = text[:size] + "size = 32" + text[size + len("size = 24"):]
end = text.find("[[layout]]", start)
end = len(text) if end < 0 else end
field = '''
[[layout.field]]
name = "drill_extra"
type = "u64"
offset = 24
doc = "Schema drill: a field added by a maintainer"
'''
open("schema/layouts.toml", "w").write(text[:end].rstrip("\n") + "\n" + field + text[end:])
PY
NEFF_UPDATE_SCHEMA_DOC=1 cargo test -q -p neff --test manifest_schema_doc >/dev/null
cargo build -q -p neff --target thumbv7em-none-eabihf --release
cargo run -q -p neff-schema-codegen --example c-header -- schema >targets/c/include/neff_schema.h
grep -q 'uint64_t drill_extra;' targets/c/include/neff_schema.h || { echo "schema drill: the new field is not in the C header" >&2; exit 1; }
grep -q 'NEFF_SCHEMA_ASSERT(offsetof(kbin_mem_ref_set_t, drill_extra) == 24' targets/c/include/neff_schema.h ||
  { echo "schema drill: the new field's offset is not asserted in the C header" >&2; exit 1; }
printf '#include "neff_schema.h"\nint main(void) { kbin_mem_ref_set_t t = {0}; t.drill_extra = 1; return (int)t.drill_extra - 1; }\n' >"$tmp/drill.c"
cc -std=c11 -Wall -Werror -Itargets/c/include "$tmp/drill.c" -o "$tmp/drill" && "$tmp/drill"
if command -v arm-none-eabi-gcc >/dev/null 2>&1; then
  arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb -std=c11 -Wall -Werror -Itargets/c/include -fsyntax-only "$tmp/drill.c"
fi
changed=$(git status --porcelain | awk '{print $2}' | LC_ALL=C sort | tr '\n' ' ')
echo "schema drill (layout): changed files: $changed"
[ "$changed" = "schema/README.md schema/layouts.toml targets/c/include/neff_schema.h " ] ||
  { echo "schema drill (layout): expected only schema/layouts.toml, schema/README.md and targets/c/include/neff_schema.h to change" >&2; exit 1; }
git diff --stat
echo "schema drill (layout): passed; the C header's assertions hold"
