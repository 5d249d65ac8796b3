#!/usr/bin/env bash
# The refusal drill: a maintainer adds one refusal. In a scratch copy of the tree, this appends a
# row to schema/errors.toml (a def.json var larger than 2^48 bytes), writes the check that raises
# it in src/manifest/def.rs and a test, regenerates the documents, and checks:
#   - the core builds (for the host and for thumbv7em) and its tests pass (the library's, the
#     refusal table's, the codes', the manifest checks'), with the new refusal raised, numbered
#     999 (the end of the manifest's hundred, clear of the real ones), worded as its row says,
#     listed in docs/refusals.md, docs/error-codes.md and targets/c/include/neff_codes.h;
#   - the files that changed are the row, the check and the test, and the three rendered
#     documents: no enum, `code()`, `status()`, `Display` arm or doc row was written by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/scratch-copy.sh
. scripts/scratch-copy.sh

# 1. The row: the last of the manifest's refusals (right before its first warning).
cat >"$tmp/row.toml" <<'TOML'
[[refusal]]
layer = "Manifest"
variant = "VarTooLarge"
code = 999
status = "Invalid"
message = "var {var} has size {size}, above 2^48 bytes"
basis = "decision"
spec = "§7.3"
source = "loader: the refusal drill's rule (scripts/refusal-drill.sh)"
doc = "`def.json`: a var larger than 2^48 bytes (the refusal drill's rule)."
fields = [
  { name = "var", type = "Name", doc = "The var." },
  { name = "size", type = "u64", doc = "Its `size`." },
]

TOML
# 2. The check that raises it, with the var's other size rules.
cat >"$tmp/check.rs" <<'RS'
        Some(size) if size > 1 << 48 => {
            Err(at.key_error(Var::KEY_SIZE, ManifestError::VarTooLarge { var: Text::new(&v.name), size }))
        }
RS
python3 - "$tmp/row.toml" "$tmp/check.rs" <<'PY'
import sys
row, check = (open(p).read() for p in sys.argv[1:3])
path = "schema/errors.toml"
text = open(path).read()
at = text.index('[[warning]]\nlayer = "Manifest"')
open(path, "w").write(text[:at] + row + text[at:])
path = "src/manifest/def.rs"
text = open(path).read()
rule = "        _ => Ok(()),\n    }\n}\n\n/// The runtime's rules for one DMA queue set"
assert rule in text
open(path, "w").write(text.replace(rule, check + rule, 1))
PY

# 3. The test.
cat >tests/drill.rs <<'RS'
//! The drill's refusal is raised by its rule, with its code, status, message and C name.
use neff::error::codes::error_row;
use neff::manifest::{DefJson, Document, Entry, EntryAt};
use neff::Status;

fn parse(doc: &[u8]) -> neff::Result<()> {
    let mut visit = |_: Entry<'_>, _: &EntryAt<'_>| Ok(());
    let mut scratch = vec![0u8; neff::manifest::STRING_SCRATCH];
    let mut tok = neff::json::Tokenizer::new(&mut scratch, neff::manifest::DEPTH_LIMIT);
    let mut sink = neff::error::IgnoreWarnings;
    DefJson::default().parse_into(&mut tok, &mut &doc[..], "sg00/def.json", &mut sink, &mut visit).map(|_| ())
}

#[test]
fn the_new_refusal_is_raised_with_its_row() {
    let e = parse(br#"{"var":{"o":{"type":"output","var_id":0,"size":281474976710657}}}"#).unwrap_err();
    assert_eq!(e.kind.code(), 999);
    assert_eq!(e.status(), Status::Invalid);
    assert_eq!(e.kind.to_string(), "var o has size 281474976710657, above 2^48 bytes");
    assert_eq!(e.key_path.as_str(), "var.o.size");
    let row = error_row(999).unwrap();
    assert_eq!((row.c_name, row.kind), ("NEFF_ERR_MANIFEST_VAR_TOO_LARGE", "Manifest(VarTooLarge)"));
    assert!(parse(br#"{"var":{"o":{"type":"output","var_id":0,"size":281474976710656}}}"#).is_ok());
}
RS

export CARGO_TARGET_DIR="$root/target/refusal-drill"
NEFF_UPDATE_SCHEMA_DOC=1 cargo test -q -p neff --test refusals_table >/dev/null
cargo build -q -p neff --target thumbv7em-none-eabihf --release
if ! cargo test -q -p neff --lib --test drill --test refusals_table --test error_codes --test manifest_checks \
  >"$tmp/test.log" 2>&1; then
  grep -E 'FAILED|panicked|error' -A 6 "$tmp/test.log" | head -60
  echo "refusal drill: the core's tests failed with the added refusal" >&2
  exit 1
fi
grep -q 'NEFF_ERR_MANIFEST_VAR_TOO_LARGE = 999,' targets/c/include/neff_codes.h
grep -q '| 999 | `Manifest(VarTooLarge)` |' docs/error-codes.md
grep -q '| `ManifestError::VarTooLarge` | `var {var} has size {size}, above 2^48 bytes` |' docs/refusals.md
# Both lists sorted the same way, so a file that moves changes only its name here.
changed=$(git status --porcelain | awk '{print $2}' | LC_ALL=C sort | tr '\n' ' ')
echo "refusal drill: changed files: $changed"
want=$(printf '%s\n' docs/error-codes.md docs/refusals.md targets/c/include/neff_codes.h schema/errors.toml \
  src/manifest/def.rs tests/drill.rs | LC_ALL=C sort | tr '\n' ' ')
[ "$changed" = "$want" ] || { echo "refusal drill: expected only $want" >&2; exit 1; }
git add -A && git diff --cached --stat
echo "refusal drill: passed"
