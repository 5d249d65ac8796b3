//! `docs/refusals.md` lists every refusal and every warning the loader can give, one row per
//! variant (issue 17 §3: no refusal without a source). This test keeps it true.
//!
//! It reads the source as plain text: the variants of `ErrorKind` and `WarningKind`
//! (`src/error.rs`) and of every layer enum they wrap (`HeaderError`, `GzipError`, ...), found
//! by their `pub enum NAME {` blocks under `src/`. A variant that only wraps a layer enum
//! (`ErrorKind::Header(crate::header::HeaderError)`) is not a row: the layer's variants are.
//! Then it checks the document: a row for every variant (refusals under `## Refusals`, warnings
//! under `## Warnings`), no row for a variant that no longer exists, no row twice, every cell
//! filled, a basis from the list, and the counts table at the top adding up.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The two roots, in `src/error.rs`: everything the crate's `Error` and `Warning` carry.
const ERROR_ROOT: &str = "ErrorKind";
const WARNING_ROOT: &str = "WarningKind";

/// The layer enums the roots wrap today, with their files. The test finds the layers from the
/// roots (a new layer is picked up without editing this list); this list only guards the
/// parser: if it stops finding one of these, the parser broke or a layer was removed.
const KNOWN_LAYERS: &[(&str, &str)] = &[
    ("src/error/header.rs", "HeaderError"),
    ("src/error/gzip.rs", "GzipError"),
    ("src/error/tar.rs", "TarError"),
    ("src/error/json.rs", "JsonError"),
    ("src/error/manifest.rs", "ManifestError"),
    ("src/error/chain.rs", "ChainError"),
    ("src/error/hal.rs", "HalError"),
    ("src/error/npy.rs", "NpyError"),
    ("src/error/header.rs", "HeaderWarning"),
    ("src/error/gzip.rs", "GzipWarning"),
    ("src/error/tar.rs", "TarWarning"),
    ("src/error/manifest.rs", "ManifestWarning"),
    ("src/error/chain.rs", "ChainWarning"),
];

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

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("read {}: {e}", d.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|x| x == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
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

/// Where each enum is defined under `src/`: name -> files.
struct Sources {
    files: Vec<(PathBuf, String)>,
}

impl Sources {
    fn load() -> Self {
        let files = rust_files(&root().join("src"))
            .into_iter()
            .map(|p| {
                let text = std::fs::read_to_string(&p).unwrap();
                (p, text)
            })
            .collect();
        Self { files }
    }

    /// The variants of enum `name`; `hint` is a path fragment that picks one file when several
    /// define the name (`header` for `crate::header::HeaderError`).
    fn variants(&self, name: &str, hint: &str) -> Result<(String, Vec<Variant>), String> {
        let found: Vec<(&PathBuf, &String, usize)> =
            self.files.iter().filter_map(|(p, text)| find_enum(text, name).map(|open| (p, text, open))).collect();
        let pick = match found.as_slice() {
            [] => return Err(format!("no `enum {name}` under src/")),
            [one] => one,
            many => {
                let hinted: Vec<_> = many
                    .iter()
                    .filter(|(p, _, _)| !hint.is_empty() && p.to_string_lossy().replace('\\', "/").contains(hint))
                    .collect();
                match hinted.as_slice() {
                    [one] => *one,
                    _ => return Err(format!("`enum {name}` is defined in {} files; cannot tell which", many.len())),
                }
            }
        };
        let rel = pick.0.strip_prefix(root()).unwrap_or(pick.0).to_string_lossy().replace('\\', "/");
        Ok((rel, parse_variants(pick.1, pick.2)))
    }

    fn defines_enum(&self, name: &str) -> bool {
        self.files.iter().any(|(_, text)| find_enum(text, name).is_some())
    }
}

/// The local enum a wrapper variant carries (`(crate::header::HeaderError)` -> `HeaderError`,
/// hint `header`), or `None` when the variant is not a one-field tuple of a type of this crate.
fn wrapped_enum(payload: &str, sources: &Sources) -> Option<(String, String)> {
    let inner = payload.strip_prefix('(')?.strip_suffix(')')?.trim();
    let inner = inner.strip_suffix(',').unwrap_or(inner).trim();
    if inner.contains(',') || inner.contains('(') || inner.contains('&') {
        return None;
    }
    let path = inner.split('<').next()?.trim();
    let segments: Vec<&str> = path.split("::").map(str::trim).collect();
    let local = segments.len() == 1 || matches!(segments[0], "crate" | "super" | "self");
    if !local {
        return None;
    }
    let name = segments.last()?.to_string();
    // The module path without the type: `crate::header::HeaderError` -> `header`.
    let modules = &segments[..segments.len() - 1];
    let hint =
        modules.iter().filter(|s| !matches!(**s, "crate" | "super" | "self")).copied().collect::<Vec<_>>().join("/");
    sources.defines_enum(&name).then_some((name, hint))
}

/// Every `Enum::Variant` id under a root, with the enums visited (name -> file).
fn ids_under(
    root_enum: &str,
    sources: &Sources,
    enums: &mut BTreeMap<String, String>,
) -> Result<BTreeSet<String>, String> {
    let (file, variants) = sources.variants(root_enum, "error")?;
    enums.insert(root_enum.to_string(), file);
    let mut ids = BTreeSet::new();
    for v in variants {
        match wrapped_enum(&v.payload, sources) {
            Some((layer, hint)) if layer != root_enum => {
                let (file, layer_variants) = sources.variants(&layer, &hint)?;
                if layer_variants.is_empty() {
                    return Err(format!("`enum {layer}` ({file}) has no variants: parser broken?"));
                }
                enums.insert(layer.clone(), file);
                ids.extend(layer_variants.into_iter().map(|lv| format!("{layer}::{}", lv.name)));
            }
            _ => {
                ids.insert(format!("{root_enum}::{}", v.name));
            }
        }
    }
    Ok(ids)
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
        let at = format!("docs/refusals.md:{}: `{}`", row.line, row.id);
        if let Some(first) = seen.insert(&row.id, row.line) {
            out.push(format!("{at}: a second row (the first is at line {first})"));
        }
        let (enum_name, _) = row.id.split_once("::").unwrap();
        let known = errors.contains(&row.id) || warnings.contains(&row.id);
        if !known {
            let why = match enums.get(enum_name) {
                Some(file) => format!("{enum_name} ({file}) has no such variant"),
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
            let file = enums.get(enum_name).map(String::as_str).unwrap_or("?");
            let table = if errors.contains(id) { REFUSALS_HEADING } else { WARNINGS_HEADING };
            out.push(format!("`{id}` ({file}) has no row in docs/refusals.md (add one under `{table}`)"));
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

#[test]
fn every_refusal_and_warning_has_a_row_with_a_source() {
    let sources = Sources::load();
    let mut enums = BTreeMap::new();
    let errors = ids_under(ERROR_ROOT, &sources, &mut enums).unwrap_or_else(|e| panic!("{e}"));
    let warnings = ids_under(WARNING_ROOT, &sources, &mut enums).unwrap_or_else(|e| panic!("{e}"));
    for (file, name) in KNOWN_LAYERS {
        match enums.get(*name) {
            Some(f) if f == file => {}
            Some(f) => panic!("`enum {name}` found in {f}, expected {file}: update KNOWN_LAYERS"),
            None => panic!("`{name}` ({file}) is no longer wrapped by ErrorKind/WarningKind or the parser missed it: update KNOWN_LAYERS"),
        }
    }
    let path = root().join("docs/refusals.md");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let doc = read_doc(&text);
    let problems = problems(&doc, &errors, &warnings, &enums);
    assert!(
        problems.is_empty(),
        "docs/refusals.md is out of date ({} problems):\n  {}",
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
