//! `docs/refusals.md` lists every refusal and every warning the loader can give, one row per
//! variant (issue 17 §3: no refusal without a source). Both it, `docs/error-codes.md` and the C
//! header `targets/c/include/neff_codes.h` are rendered from `schema/errors.toml`, the table the layers'
//! enums are generated from; rerun with `NEFF_UPDATE_SCHEMA_DOC=1` after editing the table.
//!
//! This test fails on a checked-in file that is not what the table renders, and holds the table
//! to the hand-written roots: every variant of `ErrorKind` and `WarningKind` (read from
//! `src/error.rs` as plain text) is a row of its own or wraps a layer that has rows, and every
//! row belongs to one. On the rendered document it checks what it checked when the document was
//! written by hand: a row for every variant under its heading, no row twice, every cell filled,
//! a basis from the list, a spec section, and the counts table adding up.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use neff::error::codes::{CodeRow, C_HEADER, ERRORS, ERROR_CODES_MD, REFUSALS_MD, WARNINGS};

/// The two roots, in `src/error.rs`: everything the crate's `Error` and `Warning` carry.
const ERROR_ROOT: &str = "ErrorKind";
const WARNING_ROOT: &str = "WarningKind";

/// The values of the basis column, in the order of the counts table.
const BASES: &[&str] = &["seed", "official", "secondary only", "decision"];

const REFUSALS_HEADING: &str = "## Refusals";
const WARNINGS_HEADING: &str = "## Warnings";

/// One variant as written in the source.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Variant {
    name: String,
    /// The text after the name up to the variant's `,` (or the enum's `}`): `(T)`, `{ .. }`,
    /// `= 3` or empty.
    payload: String,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The byte index of the `{` that opens `enum NAME` in `src`, if the file defines it: a line
/// that reads `enum NAME`, after an optional visibility (`pub`, `pub(crate)`, ...), outside a
/// comment, with optional generics before the brace.
fn find_enum(src: &str, name: &str) -> Option<usize> {
    let mut offset = 0;
    for line in src.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let trimmed = line.trim_start();
        let mut rest = trimmed;
        if let Some(r) = rest.strip_prefix("pub") {
            rest = r.trim_start();
            if rest.starts_with('(') {
                let close = rest.find(')')?;
                rest = rest[close + 1..].trim_start();
            }
        }
        let Some(r) = rest.strip_prefix("enum") else { continue };
        if !r.starts_with(char::is_whitespace) {
            continue;
        }
        let r = r.trim_start();
        let Some(after) = r.strip_prefix(name) else { continue };
        if after.chars().next().is_some_and(is_ident_char) {
            continue;
        }
        // The brace may be on this line or a later one (a `where` clause, generics).
        let from = start + (line.len() - trimmed.len()) + (trimmed.len() - after.len());
        let brace = src[from..].find('{')? + from;
        // No `;` before the brace: `enum X;` is not Rust, but a stray match must not run on.
        if src[from..brace].contains(';') {
            return None;
        }
        return Some(brace);
    }
    None
}

/// The variants of the enum whose body opens at `open` (a `{`): doc and other comments,
/// attributes (`#[cfg(...)]`, `#[doc = "..."]`), unit, tuple and struct variants and
/// discriminants are handled; nested brackets, strings and char literals are skipped.
fn parse_variants(src: &str, open: usize) -> Vec<Variant> {
    let b: Vec<char> = src[open..].chars().collect();
    assert_eq!(b.first(), Some(&'{'));
    let mut variants = Vec::new();
    let mut depth = 0usize;
    let mut expect_variant = false;
    let mut current: Option<(String, String)> = None;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        // Comments.
        if c == '/' && b.get(i + 1) == Some(&'/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if c == '/' && b.get(i + 1) == Some(&'*') {
            let mut nest = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    nest += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    nest -= 1;
                    i += 2;
                    if nest == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            continue;
        }
        // Strings (kept in the payload text, but their brackets do not count).
        if c == '"' {
            let start = i;
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            if let Some((_, payload)) = current.as_mut() {
                payload.extend(&b[start..i.min(b.len())]);
            }
            continue;
        }
        // Char literals ('x', '\n', '\''), not lifetimes ('static).
        if c == '\'' {
            let end = if b.get(i + 1) == Some(&'\\') {
                (i + 2..b.len()).find(|&j| b[j] == '\'' && j > i + 2).map(|j| j + 1)
            } else if b.get(i + 2) == Some(&'\'') {
                Some(i + 3)
            } else {
                None
            };
            if let Some(end) = end {
                if let Some((_, payload)) = current.as_mut() {
                    payload.extend(&b[i..end]);
                }
                i = end;
                continue;
            }
        }
        // An attribute where a variant may start: skip it whole.
        if depth == 1 && expect_variant && c == '#' {
            let mut j = i + 1;
            while j < b.len() && (b[j].is_whitespace() || b[j] == '!') {
                j += 1;
            }
            if b.get(j) == Some(&'[') {
                let mut nest = 0;
                while j < b.len() {
                    match b[j] {
                        '[' => nest += 1,
                        ']' => {
                            nest -= 1;
                            if nest == 0 {
                                break;
                            }
                        }
                        '"' => {
                            j += 1;
                            while j < b.len() && b[j] != '"' {
                                if b[j] == '\\' {
                                    j += 1;
                                }
                                j += 1;
                            }
                        }
                        _ => {}
                    }
                    j += 1;
                }
                i = j + 1;
                continue;
            }
        }
        if depth == 1 && expect_variant && is_ident_start(c) {
            let start = i;
            while i < b.len() && is_ident_char(b[i]) {
                i += 1;
            }
            let mut name: String = b[start..i].iter().collect();
            // A raw identifier (`r#type`).
            if name == "r" && b.get(i) == Some(&'#') {
                let s = i + 1;
                i = s;
                while i < b.len() && is_ident_char(b[i]) {
                    i += 1;
                }
                name = b[s..i].iter().collect();
            }
            current = Some((name, String::new()));
            expect_variant = false;
            continue;
        }
        match c {
            '{' | '(' | '[' => {
                depth += 1;
                if depth == 1 {
                    expect_variant = true;
                    i += 1;
                    continue;
                }
            }
            '}' | ')' | ']' => {
                depth -= 1;
                if depth == 0 {
                    if let Some((name, payload)) = current.take() {
                        variants.push(Variant { name, payload: payload.trim().to_string() });
                    }
                    return variants;
                }
            }
            ',' if depth == 1 => {
                if let Some((name, payload)) = current.take() {
                    variants.push(Variant { name, payload: payload.trim().to_string() });
                }
                expect_variant = true;
                i += 1;
                continue;
            }
            _ => {}
        }
        if let Some((_, payload)) = current.as_mut() {
            payload.push(c);
        }
        i += 1;
    }
    panic!("enum body not closed");
}

/// Splits a table line on `|` that is not escaped (`\|`).
fn cells(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = line.trim().chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' && chars.peek() == Some(&'|') {
            cur.push('|');
            chars.next();
        } else if c == '|' {
            out.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    out.push(cur);
    // The empty strings before the first and after the last `|`.
    if out.first().is_some_and(|s| s.trim().is_empty()) {
        out.remove(0);
    }
    if out.last().is_some_and(|s| s.trim().is_empty()) {
        out.pop();
    }
    out.into_iter().map(|s| s.trim().to_string()).collect()
}

/// A row of a refusals or warnings table.
#[derive(Debug)]
struct Row {
    line: usize,
    section: String,
    id: String,
    cells: Vec<String>,
}

/// The `Enum::Variant` in a first cell written `` `Enum::Variant` ``.
fn row_id(cell: &str) -> Option<String> {
    let id = cell.strip_prefix('`')?.strip_suffix('`')?;
    let (e, v) = id.split_once("::")?;
    let ok = |s: &str| s.chars().next().is_some_and(is_ident_start) && s.chars().all(is_ident_char);
    (ok(e) && ok(v)).then(|| id.to_string())
}

struct Doc {
    rows: Vec<Row>,
    /// The counts table before the first `## ` heading: basis -> (refusals, warnings).
    counts: BTreeMap<String, (String, String)>,
}

fn read_doc(text: &str) -> Doc {
    let mut rows = Vec::new();
    let mut counts = BTreeMap::new();
    let mut section = String::new();
    for (n, line) in text.lines().enumerate() {
        if line.starts_with("## ") {
            section = line.trim().to_string();
            continue;
        }
        if !line.trim_start().starts_with('|') {
            continue;
        }
        let c = cells(line);
        let Some(first) = c.first() else { continue };
        if let Some(id) = row_id(first) {
            rows.push(Row { line: n + 1, section: section.clone(), id, cells: c });
        } else if section.is_empty() && c.len() == 3 && (BASES.contains(&first.as_str()) || first == "total") {
            counts.insert(first.clone(), (c[1].clone(), c[2].clone()));
        }
    }
    Doc { rows, counts }
}

/// Everything wrong with the document against the ids found in the source.
fn problems(
    doc: &Doc,
    errors: &BTreeSet<String>,
    warnings: &BTreeSet<String>,
    enums: &BTreeMap<String, String>,
) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for row in &doc.rows {
        let at = format!("rendered docs/refusals.md:{}: `{}`", row.line, row.id);
        if let Some(first) = seen.insert(&row.id, row.line) {
            out.push(format!("{at}: a second row (the first is at line {first})"));
        }
        let (enum_name, _) = row.id.split_once("::").unwrap();
        let known = errors.contains(&row.id) || warnings.contains(&row.id);
        if !known {
            let why = match enums.get(enum_name) {
                Some(layer) => format!("{enum_name} (layer {layer}) has no such variant"),
                None => format!("{enum_name} is not an error or warning enum of the crate"),
            };
            out.push(format!("{at}: names a variant that does not exist: {why}; remove the row"));
        }
        let want = if errors.contains(&row.id) {
            Some(REFUSALS_HEADING)
        } else if warnings.contains(&row.id) {
            Some(WARNINGS_HEADING)
        } else {
            None
        };
        if let Some(want) = want {
            if !row.section.starts_with(want) {
                out.push(format!("{at}: belongs under `{want}`, found under `{}`", row.section));
            }
        }
        if row.cells.len() != 6 {
            out.push(format!(
                "{at}: {} cells; a row is id | message | status | spec | source | basis",
                row.cells.len()
            ));
            continue;
        }
        for (i, what) in [(1, "message"), (2, "status"), (3, "spec section"), (4, "source"), (5, "basis")] {
            if row.cells[i].trim().is_empty() {
                out.push(format!("{at}: empty {what}"));
            }
        }
        if !row.cells[3].contains('§') {
            out.push(format!("{at}: the spec cell names no section (`§N`): {:?}", row.cells[3]));
        }
        if !BASES.contains(&row.cells[5].as_str()) {
            out.push(format!("{at}: basis {:?} is not one of {BASES:?}", row.cells[5]));
        }
        let secondary = row.cells[5] == "secondary only";
        if secondary != row.cells[4].contains("secondary only") {
            out.push(format!("{at}: the source cell must say \"secondary only\" exactly when the basis is"));
        }
    }
    for id in errors.iter().chain(warnings) {
        if !seen.contains_key(id.as_str()) {
            let (enum_name, _) = id.split_once("::").unwrap();
            let layer = enums.get(enum_name).map(String::as_str).unwrap_or("?");
            let table = if errors.contains(id) { REFUSALS_HEADING } else { WARNINGS_HEADING };
            out.push(format!("`{id}` (layer {layer}) has no row in the rendered docs/refusals.md (under `{table}`)"));
        }
    }
    // The counts table.
    let count = |heading: &str, basis: Option<&str>| {
        doc.rows
            .iter()
            .filter(|r| {
                r.section.starts_with(heading) && basis.is_none_or(|b| r.cells.get(5).map(String::as_str) == Some(b))
            })
            .count()
            .to_string()
    };
    for basis in BASES.iter().copied().map(Some).chain([None]) {
        let label = basis.unwrap_or("total");
        let want = (count(REFUSALS_HEADING, basis), count(WARNINGS_HEADING, basis));
        match doc.counts.get(label) {
            Some(have) if *have == want => {}
            Some(have) => out.push(format!(
                "docs/refusals.md: the counts table says {label} = {} refusals, {} warnings; the tables hold {}, {}",
                have.0, have.1, want.0, want.1
            )),
            None => out.push(format!("docs/refusals.md: the counts table has no `{label}` row")),
        }
    }
    out
}

/// The root enum's variants, and the ids of the rows under it (`HeaderError::ShortFile`,
/// `ErrorKind::Io`), with the enums they name (enum -> layer). A root variant with a row whose
/// kind is its name is a row of its own (`Truncated`; `Io` with its subcodes `Io(Other)`, ...);
/// one whose rows' kinds are `Variant(..)` wraps that layer's enum, named by its payload.
fn ids_under(
    root_enum: &str,
    rows: &[CodeRow],
    enums: &mut BTreeMap<String, String>,
) -> Result<BTreeSet<String>, String> {
    let src = std::fs::read_to_string(root().join("src/error.rs")).unwrap();
    let open = find_enum(&src, root_enum).ok_or(format!("no `enum {root_enum}` in src/error.rs"))?;
    let variants = parse_variants(&src, open);
    enums.insert(root_enum.to_string(), "-".to_string());
    let mut ids = BTreeSet::new();
    let mut claimed = BTreeSet::new();
    for v in variants {
        let prefix = format!("{}(", v.name);
        let own = rows.iter().any(|r| r.kind == v.name);
        let wrapped: Vec<&CodeRow> = rows.iter().filter(|r| r.kind.starts_with(&prefix)).collect();
        if own {
            ids.insert(format!("{root_enum}::{}", v.name));
            claimed.insert(v.name.clone());
            continue;
        }
        let layer_enum =
            v.payload.trim_start_matches('(').trim_end_matches(')').rsplit("::").next().unwrap_or("").trim();
        if wrapped.is_empty() || !layer_enum.chars().all(is_ident_char) || layer_enum.is_empty() {
            return Err(format!("{root_enum}::{} has no row of its own and wraps no layer of the table", v.name));
        }
        enums.insert(layer_enum.to_string(), v.name.clone());
        claimed.insert(v.name.clone());
        for r in wrapped {
            let variant = &r.kind[prefix.len()..r.kind.len() - 1];
            ids.insert(format!("{layer_enum}::{variant}"));
        }
    }
    for r in rows {
        let head = r.kind.split('(').next().unwrap_or("");
        if !claimed.contains(head) {
            return Err(format!("the table's row {} ({}) belongs to no variant of {root_enum}", r.code, r.kind));
        }
    }
    Ok(ids)
}

/// The checked-in files against what the table renders; rewritten under `NEFF_UPDATE_SCHEMA_DOC`.
#[test]
fn the_rendered_files_are_up_to_date() {
    let update = std::env::var("NEFF_UPDATE_SCHEMA_DOC").is_ok();
    let mut stale = Vec::new();
    for (rel, want) in [
        ("docs/refusals.md", REFUSALS_MD),
        ("docs/error-codes.md", ERROR_CODES_MD),
        ("targets/c/include/neff_codes.h", C_HEADER),
    ] {
        let path = root().join(rel);
        if update {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, want).unwrap();
        }
        if std::fs::read_to_string(&path).unwrap_or_default() != want {
            stale.push(rel);
        }
    }
    assert!(
        stale.is_empty(),
        "{stale:?} stale: rerun with NEFF_UPDATE_SCHEMA_DOC=1 (they are rendered from schema/errors.toml)"
    );
}

#[test]
fn every_refusal_and_warning_has_a_row_with_a_source() {
    let mut enums = BTreeMap::new();
    let errors = ids_under(ERROR_ROOT, ERRORS, &mut enums).unwrap_or_else(|e| panic!("{e}"));
    let warnings = ids_under(WARNING_ROOT, WARNINGS, &mut enums).unwrap_or_else(|e| panic!("{e}"));
    for layer in
        ["HeaderError", "GzipError", "TarError", "JsonError", "ManifestError", "ChainError", "HalError", "NpyError"]
    {
        assert!(enums.contains_key(layer), "{layer} is no longer wrapped by ErrorKind, or the reader missed it");
    }
    let doc = read_doc(REFUSALS_MD);
    let problems = problems(&doc, &errors, &warnings, &enums);
    assert!(
        problems.is_empty(),
        "the rendered docs/refusals.md is wrong ({} problems):\n  {}",
        problems.len(),
        problems.join("\n  ")
    );
    eprintln!("docs/refusals.md: {} refusals, {} warnings, from {} enums", errors.len(), warnings.len(), enums.len());
}

#[test]
fn the_parser_reads_every_variant_shape() {
    let src = r#"
/// Doc.
#[derive(Debug)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Demo<const N: usize = 4> {
    /// Unit, with a doc comment holding a brace { and a comma, and a 'quote.
    Unit,
    /* block comment, Ghost, */
    // Line comment: Ghost2,
    #[cfg(feature = "x")]
    Gated,
    #[doc = "a, b"]
    Tuple(crate::header::HeaderError),
    Pair(u8, [u8; 2]),
    Struct {
        /// A field.
        a: &'static str,
        b: Text<16>,
        c: char,
    },
    Quote { c: char } ,
    Disc = 3,
    Last(embedded_io::ErrorKind)
}
pub enum Other { X }
"#;
    let open = find_enum(src, "Demo").unwrap();
    let names: Vec<String> = parse_variants(src, open).into_iter().map(|v| v.name).collect();
    assert_eq!(names, ["Unit", "Gated", "Tuple", "Pair", "Struct", "Quote", "Disc", "Last"]);
    let v = parse_variants(src, open);
    assert_eq!(v[2].payload, "(crate::header::HeaderError)");
    assert_eq!(v[7].payload, "(embedded_io::ErrorKind)");
    assert!(find_enum(src, "Oth").is_none());
    assert!(find_enum("// pub enum Demo {", "Demo").is_none());
    let names: Vec<String> =
        parse_variants(src, find_enum(src, "Other").unwrap()).into_iter().map(|v| v.name).collect();
    assert_eq!(names, ["X"]);
    assert_eq!(cells(r"| `A::B` | `x \| y` | s |"), ["`A::B`", "`x | y`", "s"]);
    assert_eq!(row_id("`ErrorKind::Io`").as_deref(), Some("ErrorKind::Io"));
    assert_eq!(row_id("id"), None);
}
