//! The documents stand on their own: every `§N` written in the tree resolves to a heading of
//! `docs/format.md` with that number, and every relative link of the repository's own
//! documents leads to a file that exists.
//!
//! Where the references are looked for: the Rust, TOML, Markdown, shell and Python files under
//! `src/`, `macros/`, `schema/`, `targets/`, `tests/`, `benches/`, `fuzz/` and `scripts/`
//! (build output and fuzz corpora left out), `README.md`, `ARCHITECTURE.md` and the Markdown
//! files of `docs/`. A heading is a Markdown heading line whose first word is a section
//! number: `## 12A. Runtime messages`, `### 15.18 Members are reached ...`.
//!
//! A `§N` right after the name of another document is that document's section and is not
//! checked: `RFC 1951 §3.2.7`, `W-COMPAT §5.3` (a reverse-engineering page, docs/format.md §0),
//! `seed §5`, `embedded-notes.md §3`, `issue 17 §3`. A reference listed after one of those
//! (`seed §1, §3`, `§1-§3`) belongs to the same document. Everything else, with or without
//! `spec` or `neff-format.md` in front, is a section of docs/format.md. In `docs/refusals.md`
//! the `spec` column names sections of docs/format.md only: each of its `§N` must resolve,
//! whatever precedes it.
//!
//! And the names: every backticked path of the tree (`src/loader/walk.rs`) and every backticked
//! code name (`Index::named_as`) in README.md, ARCHITECTURE.md, the pages of `docs/` and the
//! module docs (`//!`) of every Rust file of every crate exists: the path in the tree (from the
//! root or a crate's root), the name among the words of the code (comments left out).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Directories searched for references, relative to the repository root.
const SOURCE_DIRS: &[&str] = &["src", "macros", "schema", "targets", "tests", "benches", "fuzz", "scripts"];
/// Single files searched for references (and, with `docs/`, for links).
const ROOT_DOCS: &[&str] = &["README.md", "ARCHITECTURE.md"];
/// File extensions read under [`SOURCE_DIRS`].
const EXTENSIONS: &[&str] = &["rs", "toml", "md", "sh", "py"];
/// Directory names never entered: build output, saved fuzz inputs, git data.
const SKIPPED_DIRS: &[&str] = &["target", "corpus", "artifacts", ".git"];
/// This file: its own examples are not references.
const THIS_FILE: &str = "tests/docs_refs.rs";

const FORMAT_DOC: &str = "docs/format.md";
const REFUSALS_DOC: &str = "docs/refusals.md";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rel(path: &Path) -> String {
    path.strip_prefix(root()).unwrap_or(path).to_string_lossy().replace('\\', "/")
}

/// The files with one of `extensions` under `dirs` (relative to the root), build output, saved
/// inputs and this file left out.
fn files_under(dirs: &[&str], extensions: &[&str]) -> Vec<PathBuf> {
    let root = root();
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = dirs.iter().map(|d| root.join(d)).filter(|d| d.is_dir()).collect();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if !SKIPPED_DIRS.contains(&name.as_str()) && name != "python-venv" {
                    stack.push(path);
                }
            } else if path.extension().is_some_and(|e| extensions.iter().any(|x| e == *x)) && rel(&path) != THIS_FILE {
                out.push(path);
            }
        }
    }
    out
}

/// The files to search, sorted.
fn searched_files() -> Vec<PathBuf> {
    let root = root();
    let mut out = files_under(SOURCE_DIRS, EXTENSIONS);
    out.extend(ROOT_DOCS.iter().map(|f| root.join(f)));
    out.extend(markdown_in(&root.join("docs")));
    out.sort();
    out
}

/// The Markdown files directly in `dir`.
fn markdown_in(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    out.sort();
    out
}

fn read(path: &Path) -> String {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A section number at the start of `s`: `12`, `12A`, `3.2.7`, `15.18`. Returns it and the
/// bytes it took. A trailing `.` that no digit follows is not part of it.
fn section_number(s: &str) -> Option<(String, usize)> {
    let b = s.as_bytes();
    let digits = |from: usize| b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let mut end = digits(0);
    if end == 0 {
        return None;
    }
    if end < b.len() && b[end].is_ascii_uppercase() && !b.get(end + 1).is_some_and(|c| c.is_ascii_alphanumeric()) {
        end += 1;
    }
    while end + 1 < b.len() && b[end] == b'.' && b[end + 1].is_ascii_digit() {
        end += 1 + digits(end + 1);
    }
    Some((s[..end].to_string(), end))
}

/// Whether the text before a `§` ends with the name of another document.
fn names_other_document(before: &str) -> bool {
    let before = before.trim_end();
    let last = before.rsplit(|c: char| c.is_whitespace() || "([{`*\"'".contains(c)).next().unwrap_or("");
    let words: Vec<&str> = before.split_whitespace().collect();
    let previous = words.len().checked_sub(2).map(|i| words[i].to_ascii_lowercase());
    let numbered = |word: &str| {
        previous.as_deref().is_some_and(|p| p.trim_start_matches(|c: char| "([{`*\"'".contains(c)) == word)
    };
    if last.chars().all(|c| c.is_ascii_digit()) && !last.is_empty() && (numbered("rfc") || numbered("issue")) {
        return true;
    }
    if last.eq_ignore_ascii_case("seed") {
        return true;
    }
    if let Some(rest) = last.strip_prefix("W-") {
        return !rest.is_empty() && rest.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '-');
    }
    // Another Markdown document; `neff-format.md` is this one under its old name.
    if last.ends_with(".md") {
        let file = last.rsplit('/').next().unwrap_or(last);
        return file != "format.md" && file != "neff-format.md";
    }
    false
}

/// Text between two references that makes the second one continue the first's list.
fn continues_list(gap: &str) -> bool {
    matches!(gap.trim(), "," | "and" | "or" | "-" | "–" | "/" | "+" | "&")
}

/// One `§N` found in a text.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Ref {
    number: String,
    line: usize,
    /// A section of docs/format.md (else of another document).
    ours: bool,
}

/// `text` with each line's indentation and comment marker (`//!`, `///`, `//`, `#`) removed and
/// the lines joined by a space, so that a reference and the document name before it may sit on
/// two lines of one comment; and where each line starts in it.
fn flatten(text: &str) -> (String, Vec<usize>) {
    let mut flat = String::with_capacity(text.len());
    let mut starts = Vec::new();
    for line in text.lines() {
        let mut t = line.trim_start();
        for marker in ["//!", "///", "//"] {
            if let Some(rest) = t.strip_prefix(marker) {
                t = rest;
                break;
            }
        }
        let t = t.trim_start_matches('#');
        starts.push(flat.len());
        flat.push_str(t);
        flat.push(' ');
    }
    (flat, starts)
}

/// Every `§N` of `text`, each with the document it belongs to.
fn references(text: &str) -> Vec<Ref> {
    let (flat, starts) = flatten(text);
    let mut out: Vec<Ref> = Vec::new();
    let mut previous: Option<(usize, bool)> = None;
    for (at, _) in flat.match_indices('§') {
        let after = &flat[at + '§'.len_utf8()..];
        let skipped = after.len() - after.trim_start().len();
        let Some((number, len)) = section_number(after.trim_start()) else { continue };
        let ours = match previous {
            Some((end, ours)) if continues_list(&flat[end..at]) => ours,
            _ => {
                // The last few words are enough to see a document's name.
                let mut from = at.saturating_sub(80);
                while !flat.is_char_boundary(from) {
                    from -= 1;
                }
                !names_other_document(&flat[from..at])
            }
        };
        previous = Some((at + '§'.len_utf8() + skipped + len, ours));
        let line = starts.partition_point(|&s| s <= at);
        out.push(Ref { number, line, ours });
    }
    out
}

/// The section numbers of the headings of a Markdown text, each with its line (a number
/// given twice is listed under each line).
fn headings(text: &str) -> BTreeMap<String, Vec<usize>> {
    let mut out: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut fenced = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let title = line.trim_start_matches('#');
        let Some(title) = title.strip_prefix(' ') else { continue };
        if let Some((number, len)) = section_number(title) {
            if matches!(title.as_bytes().get(len), None | Some(b'.') | Some(b' ')) {
                out.entry(number).or_default().push(i + 1);
            }
        }
    }
    out
}

/// The cells of a Markdown table row (`\|` is a `|` inside a cell).
fn cells(row: &str) -> Vec<String> {
    let inner = row.trim().trim_start_matches('|').trim_end_matches('|');
    let mut out = vec![String::new()];
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                chars.next();
                out.last_mut().unwrap().push('|');
            }
            '|' => out.push(String::new()),
            _ => out.last_mut().unwrap().push(c),
        }
    }
    out.into_iter().map(|c| c.trim().to_string()).collect()
}

/// The `spec` cell of each refusal or warning row of docs/refusals.md: `(line, cell)`.
fn refusal_spec_cells(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut spec_column = None;
    for (i, line) in text.lines().enumerate() {
        if !line.starts_with('|') {
            spec_column = None;
            continue;
        }
        let row = cells(line);
        if spec_column.is_none() {
            spec_column = row.iter().position(|c| c == "spec");
            continue;
        }
        if let Some(col) = spec_column {
            if row.iter().all(|c| c.chars().all(|ch| ch == '-' || ch == ':')) {
                continue;
            }
            out.push((i + 1, row.get(col).cloned().unwrap_or_default()));
        }
    }
    out
}

/// The relative link targets of a Markdown text (`](target)`, not a URL nor an anchor alone),
/// without their `#fragment`, each with its line.
fn relative_links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        for (at, _) in line.match_indices("](") {
            let rest = &line[at + 2..];
            let Some(end) = rest.find(')') else { continue };
            let target = rest[..end].trim();
            let target = target.split_whitespace().next().unwrap_or("");
            if target.is_empty() || target.starts_with('#') || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let path = target.split('#').next().unwrap_or(target);
            out.push((i + 1, path.to_string()));
        }
    }
    out
}

/// Every reference of the tree that docs/format.md lacks a heading for, as messages.
fn unresolved(files: &[PathBuf], sections: &BTreeMap<String, Vec<usize>>) -> Vec<String> {
    let mut out = Vec::new();
    for path in files {
        let text = read(path);
        for r in references(&text).into_iter().filter(|r| r.ours) {
            if !sections.contains_key(&r.number) {
                out.push(format!("{}:{}: §{} has no heading in {FORMAT_DOC}", rel(path), r.line, r.number));
            }
        }
    }
    out
}

#[test]
fn every_section_sign_resolves_to_a_heading_of_the_format_doc() {
    let format = read(&root().join(FORMAT_DOC));
    let sections = headings(&format);
    let files = searched_files();
    let mut failures = unresolved(&files, &sections);

    // The refusals table's `spec` column: each § is ours, whatever comes before it.
    let refusals = read(&root().join(REFUSALS_DOC));
    let spec_cells = refusal_spec_cells(&refusals);
    assert!(spec_cells.len() > 100, "{REFUSALS_DOC}: found only {} rows with a spec cell", spec_cells.len());
    for (line, cell) in &spec_cells {
        let refs = references(cell);
        if refs.is_empty() {
            failures.push(format!("{REFUSALS_DOC}:{line}: the spec cell names no section: {cell:?}"));
        }
        for r in refs.iter().filter(|r| !sections.contains_key(&r.number)) {
            failures.push(format!("{REFUSALS_DOC}:{line}: spec §{} has no heading in {FORMAT_DOC}", r.number));
        }
    }

    // A number given to two headings would make a reference ambiguous.
    for (number, lines) in sections.iter().filter(|(_, l)| l.len() > 1) {
        failures.push(format!("{FORMAT_DOC}: §{number} heads lines {lines:?}"));
    }

    // The search must have found what is known to be there, or it proves nothing.
    let mut cited: BTreeSet<String> = BTreeSet::new();
    for path in &files {
        cited.extend(references(&read(path)).into_iter().filter(|r| r.ours).map(|r| r.number));
    }
    for known in ["2.5", "2.6", "3.3", "8.2", "11.8", "12A", "15.18", "15.21", "17.6"] {
        assert!(cited.contains(known), "no reference to §{known} found: is the search looking in the right places?");
    }
    println!("{} distinct § numbers cited, {} headings in {FORMAT_DOC}", cited.len(), sections.len());

    assert!(failures.is_empty(), "unresolved section references:\n{}", failures.join("\n"));
}

#[test]
fn every_relative_link_of_the_docs_points_to_a_file() {
    let root = root();
    let mut docs: Vec<PathBuf> = ROOT_DOCS.iter().map(|f| root.join(f)).collect();
    docs.extend(markdown_in(&root.join("docs")));
    let mut failures = Vec::new();
    let mut seen = 0;
    for doc in &docs {
        let dir = doc.parent().unwrap();
        for (line, target) in relative_links(&read(doc)) {
            seen += 1;
            if !dir.join(&target).exists() {
                failures.push(format!("{}:{line}: link to {target}, which does not exist", rel(doc)));
            }
        }
    }
    assert!(seen >= 10, "only {seen} relative links found in {docs:?}: is the link parser broken?");
    assert!(failures.is_empty(), "broken links:\n{}", failures.join("\n"));
}

/// The checker itself, on texts whose answer is known: it must see a missing section, and it
/// must not take another document's section for ours.
#[test]
fn the_checker_tells_ours_from_other_documents_and_sees_what_is_missing() {
    let doc = "## 2. Header\n### 2.5 Gates\n## 12A. Messages\n```\n## 99. in a code block\n```\n### 15.18 Chain\n";
    let sections = headings(doc);
    assert_eq!(sections.keys().cloned().collect::<Vec<_>>(), ["12A", "15.18", "2", "2.5"]);

    let text = "spec §2.5 (gate 6), §12A; RFC 1951 §3.2.7. seed §1, §3 and §4; W-COMPAT §5.3, [W-META §3]\n\
                neff-format.md §1-§3; embedded-notes.md §3; issue 17 §3; (§15.18) §15.19.\n";
    let refs: Vec<(String, bool)> = references(text).into_iter().map(|r| (r.number, r.ours)).collect();
    let expected = [
        ("2.5", true),
        ("12A", true),
        ("3.2.7", false),
        ("1", false),
        ("3", false),
        ("4", false),
        ("5.3", false),
        ("3", false),
        ("1", true),
        ("3", true),
        ("3", false),
        ("3", false),
        ("15.18", true),
        ("15.19", true),
    ];
    let expected: Vec<(String, bool)> = expected.iter().map(|(n, o)| (n.to_string(), *o)).collect();
    assert_eq!(refs, expected);

    let dir = std::env::temp_dir().join(format!("neff-docs-refs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("cites.rs");
    std::fs::write(&file, text).unwrap();
    let missing = unresolved(std::slice::from_ref(&file), &sections);
    let _ = std::fs::remove_dir_all(&dir);
    let numbers: Vec<&str> = missing.iter().map(|m| m.split('§').nth(1).unwrap().split(' ').next().unwrap()).collect();
    assert_eq!(numbers, ["1", "3", "15.19"], "{missing:?}");

    let table = "| id | message | spec | source |\n|---|---|---|---|\n| `A` | `x \\| y` | §2.5, §7.3 | seed §5 |\n";
    assert_eq!(refusal_spec_cells(table), [(3, "§2.5, §7.3".to_string())]);

    let links = relative_links("[a](../b.md#x) [c](https://e.org) [d](#here) [f](g.rs \"title\")");
    assert_eq!(links, [(1, "../b.md".to_string()), (1, "g.rs".to_string())]);
}

/// The repository's top-level directories: a backticked name starting with one is a path of
/// the tree.
const TREE_TOPS: &[&str] =
    &["src/", "macros/", "schema/", "targets/", "tests/", "benches/", "fuzz/", "scripts/", "docs/", ".ci/"];
/// Crate roots a path in the docs may be relative to (`tests/ls_cat.rs` in the host's section).
const CRATE_ROOTS: &[&str] =
    &["", "targets/host/", "targets/host/cli/", "targets/qemu-m4/", "targets/python/", "targets/c/", "macros/codegen/"];
/// Files read for the words of the code (identifiers, keys, names of items).
const CODE_EXTENSIONS: &[&str] = &["rs", "toml", "sh", "py", "pyi", "c", "h"];

/// Every word (`[A-Za-z_][A-Za-z0-9_]*`) of the tree's code, and docs/format.md's (its keys).
fn code_words() -> BTreeSet<String> {
    let root = root();
    let mut words = BTreeSet::new();
    let mut stack = vec![root.clone()];
    let mut files = vec![root.join(FORMAT_DOC)];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if !SKIPPED_DIRS.contains(&name.as_str()) && name != "python-venv" {
                    stack.push(path);
                }
            } else if path.extension().is_some_and(|e| CODE_EXTENSIONS.iter().any(|x| e == *x))
                && rel(&path) != THIS_FILE
            {
                // This file's own examples name what does not exist.
                files.push(path);
            }
        }
    }
    for file in files {
        let text = read(&file);
        // A Rust file's comments are prose: a name only they write is no item of the code (else
        // a module doc's stale name would vouch for itself).
        let text = if file.extension().is_some_and(|e| e == "rs") { strip_line_comments(&text) } else { text };
        let mut word = String::new();
        for c in text.chars().chain(std::iter::once(' ')) {
            if c.is_ascii_alphanumeric() || c == '_' {
                word.push(c);
            } else if !word.is_empty() {
                if !word.starts_with(|c: char| c.is_ascii_digit()) {
                    words.insert(std::mem::take(&mut word));
                }
                word.clear();
            }
        }
    }
    words
}

/// `text` without its `//` comment lines (`//`, `///`, `//!`), each left as an empty line.
fn strip_line_comments(text: &str) -> String {
    text.lines().map(|l| if l.trim_start().starts_with("//") { "" } else { l }).collect::<Vec<_>>().join("\n")
}

/// The backticked spans of `text` outside fenced code blocks (command output, not names), with
/// their line numbers.
fn backticked(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut parts = line.split('`');
        parts.next();
        while let (Some(inside), Some(_)) = (parts.next(), parts.next()) {
            out.push((i + 1, inside.to_string()));
        }
    }
    out
}

/// A span that names a path of the tree: the path, without a `:line` or `#anchor` tail.
fn tree_path(span: &str) -> Option<&str> {
    let path = span.split([':', '#', ' ']).next()?.trim_end_matches([',', '.']);
    let templated = path.contains(['*', '<', '{', '$']);
    (TREE_TOPS.iter().any(|top| path.starts_with(top)) && !templated).then_some(path)
}

/// A span that names an item of the code: a Rust-style path (`Index::named_as`, `run()`,
/// `refusals!`) that looks like code (a `::`, an inner capital, or an underscore), split into
/// its segments.
fn code_identifier(span: &str) -> Option<Vec<&str>> {
    let name = span.trim_end_matches("()").trim_end_matches('!');
    let ident = |s: &str| {
        s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let segments: Vec<&str> = name.split("::").collect();
    if segments.iter().any(|s| !ident(s)) {
        return None;
    }
    let camel =
        |s: &str| s.chars().skip(1).any(|c| c.is_ascii_uppercase()) && s.chars().any(|c| c.is_ascii_lowercase());
    let snake = |s: &str| s.contains('_') && s.chars().all(|c| !c.is_ascii_uppercase());
    (segments.len() > 1 || camel(name) || snake(name)).then_some(segments)
}

/// Names of other projects' code that the docs cite as theirs, not ours: the compile-cache
/// writers' classes and functions (libneuronxla, optimum-neuron, torch-neuronx; docs/cache.md),
/// the Neuron SDK's headers and docs (docs/format.md's sources), zlib's `inflateInit_` and
/// serde_json's `float_roundtrip` feature. One of ours must not hide here.
const OTHER_PROJECTS: &[&str] = &[
    "CacheUrl",
    "CompileCache",
    "CompileCacheFs",
    "CompileCacheS3",
    "CompileCacheHfProxy",
    "create_compile_cache",
    "clear_locks",
    "compile_cache_entry",
    "download_hlo",
    "_classify_entry",
    "cleanup_local_cache",
    "remove_empty",
    "synchronize_hub_cache",
    "cache_traced_neuron_artifacts",
    "_get_compiled_model_path",
    "_compile_and_load_model",
    "_load_compiled_model",
    "get_neff_filename",
    "_is_cache_complete",
    "_do_compile",
    "src/libnrt/include/nrt/nrt.h",
    "src/libnrt/include/nrt/nrt_experimental.h",
    "src/libnrt/include/nrt/nrt_status.h",
    "docs/arch/debugger.rst",
    "inflateInit_",
    "float_roundtrip",
];

/// What a document (`name`, its `text`) says that the tree does not have: paths that exist
/// nowhere and code names no code file writes.
fn missing_names(name: &str, text: &str, words: &BTreeSet<String>) -> Vec<String> {
    let root = root();
    let mut missing = Vec::new();
    for (line, span) in backticked(text) {
        if let Some(path) = tree_path(&span) {
            if !OTHER_PROJECTS.contains(&path)
                && !CRATE_ROOTS.iter().any(|base| root.join(format!("{base}{path}")).exists())
            {
                missing.push(format!("{name}:{line}: path `{path}` is not in the tree"));
            }
        } else if let Some(segments) = code_identifier(&span) {
            for s in segments.iter().filter(|s| !words.contains(**s) && !OTHER_PROJECTS.contains(s)) {
                missing.push(format!("{name}:{line}: `{span}`: no code names `{s}`"));
            }
        }
    }
    missing
}

/// Issue 31 §3: the README and the code map name only what exists. A renamed item, a moved
/// file or a removed function leaves its old name in a doc, which this test then finds.
/// Issue 44: so do the pages of `docs/`.
#[test]
fn every_path_and_code_name_of_the_readme_the_code_map_and_the_docs_exists() {
    let root = root();
    let mut docs: Vec<String> = ROOT_DOCS.iter().map(|d| d.to_string()).collect();
    docs.extend(markdown_in(&root.join("docs")).iter().map(|p| rel(p)));
    assert!(docs.len() > 10, "only {docs:?}: is docs/ read?");
    let words = code_words();
    let missing: Vec<String> = docs.iter().flat_map(|doc| missing_names(doc, &read(&root.join(doc)), &words)).collect();
    assert!(missing.is_empty(), "names in the docs that the tree lacks:\n{}", missing.join("\n"));
}

/// Directories whose Rust files' module docs (`//!`) are checked: every crate of the tree.
const MODULE_DOC_DIRS: &[&str] = &["src", "macros", "targets", "tests", "benches", "fuzz"];

/// The Rust files under [`MODULE_DOC_DIRS`] and the root's `build.rs`, sorted (build output and
/// saved inputs left out).
fn rust_files() -> Vec<PathBuf> {
    let mut out = files_under(MODULE_DOC_DIRS, &["rs"]);
    // The core's build script sits at the root.
    out.push(root().join("build.rs"));
    out.sort();
    out
}

/// The module docs of a Rust file: its `//!` lines without the marker, as Markdown (other
/// lines blank, so that line numbers stay the file's).
fn module_docs(text: &str) -> String {
    let mut out = String::with_capacity(text.len() / 4);
    for line in text.lines() {
        if let Some(doc) = line.trim_start().strip_prefix("//!") {
            out.push_str(doc.strip_prefix(' ').unwrap_or(doc));
        }
        out.push('\n');
    }
    out
}

/// Issue 44: every crate's module docs name only what exists, as the docs do (five had named
/// files that were gone).
#[test]
fn every_path_and_code_name_of_the_module_docs_exists() {
    let words = code_words();
    let files = rust_files();
    let mut missing = Vec::new();
    let mut documented = 0;
    for file in &files {
        let docs = module_docs(&read(file));
        if docs.trim().is_empty() {
            continue;
        }
        documented += 1;
        missing.extend(missing_names(&rel(file), &docs, &words));
    }
    // Every crate root and most modules carry module docs: finding few means the walk is wrong.
    assert!(documented > 150, "only {documented} of {} Rust files have module docs", files.len());
    for crate_root in
        ["src/lib.rs", "build.rs", "macros/src/lib.rs", "macros/codegen/src/lib.rs", "targets/c/src/lib.rs"]
    {
        assert!(files.contains(&root().join(crate_root)), "{crate_root} was not read");
    }
    assert!(missing.is_empty(), "names in the module docs that the tree lacks:\n{}", missing.join("\n"));
}

/// The names let through as other projects' are not names of our code: were one of them to
/// become ours, it would be checked as ours again.
#[test]
fn no_name_let_through_as_another_projects_is_ours() {
    let words = code_words();
    let root = root();
    let ours: Vec<&&str> = OTHER_PROJECTS
        .iter()
        .filter(|n| words.contains(**n) || (tree_path(n).is_some() && root.join(n).exists()))
        .collect();
    assert!(ours.is_empty(), "names of our own tree in OTHER_PROJECTS: {ours:?}");
}

#[test]
fn the_name_checker_sees_what_is_missing() {
    let words: BTreeSet<String> = ["Index", "named_as", "LoadReport"].into_iter().map(String::from).collect();
    assert_eq!(code_identifier("Index::named_as()"), Some(vec!["Index", "named_as"]));
    assert_eq!(code_identifier("NameKind"), Some(vec!["NameKind"]));
    assert_eq!(code_identifier("neff info --json"), None);
    assert_eq!(code_identifier("cayman"), None, "a plain word is prose, not a code name");
    assert_eq!(tree_path("src/loader/walk.rs:727"), Some("src/loader/walk.rs"));
    assert_eq!(tree_path("sg00/def.json"), None, "a NEFF's member is not a path of the tree");
    assert_eq!(tree_path("fuzz/corpus/<target>/"), None);
    assert!(!words.contains("NameKind"));
    let doc = "x `Index::named_as` and `NameKind`, `src/nowhere.rs`, `src/lib.rs`\n```\n`Gone`\n```\n";
    let spans: Vec<String> = backticked(doc).into_iter().map(|(_, s)| s).collect();
    assert_eq!(spans, ["Index::named_as", "NameKind", "src/nowhere.rs", "src/lib.rs"]);

    // Module docs: the `//!` lines only, on their own line numbers; a stale path or name in
    // them is found, and a name that only a comment writes is no code.
    let source = "//! The walk (`src/gone.rs`, `Index::named_as`).\n//! `NameKind`\nfn named_as() {} // `Gone`\n";
    let docs = module_docs(source);
    assert_eq!(docs, "The walk (`src/gone.rs`, `Index::named_as`).\n`NameKind`\n\n");
    let missing = missing_names("x.rs", &docs, &words);
    assert_eq!(
        missing,
        ["x.rs:1: path `src/gone.rs` is not in the tree", "x.rs:2: `NameKind`: no code names `NameKind`"]
    );
    assert_eq!(
        strip_line_comments("//! NameKind\nlet a = 1; // b\n/// Doc\nfn f() {}"),
        "\nlet a = 1; // b\n\nfn f() {}"
    );
}
