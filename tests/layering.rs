//! The core's import graph runs one way: from the loader down to the layers, from the layers
//! down to `error` (the catalogue of what can go wrong, a leaf). These tests read the `crate::`
//! and `super::` paths of every file of `src/` (test modules left out) and fail on:
//!
//! - a layer module (anything outside `src/loader/` and the info document above it, `src/info/`)
//!   that names the loader or the info document;
//! - `error` or `vocab` (the schema's shared enums) naming any other module of the crate;
//! - the device layer (`hal`, `sim`) naming the manifest tier;
//! - a circle between the crate's top-level modules;
//! - a circle between the files of one directory (`src/loader/`, `src/manifest/`, ...), a file's
//!   own parent module (`mod.rs`, which declares and re-exports it) aside.
//!
//! The host crate (`targets/host/src`, the `neff` command) is held to the last two, and its
//! command line (`cli`) is read by the verbs only.
//!
//! So the 17-file circle this crate once had (`error.rs` named every layer's kinds, every layer
//! named `error.rs`) cannot come back unnoticed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A source file: its module path (`["loader", "walk"]`) and its code without test modules.
struct SourceFile {
    module: Vec<String>,
    rel: String,
    code: String,
}

fn sources() -> Vec<SourceFile> {
    sources_in(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

/// The host library's sources (`targets/host/src`, crate `neff-host`).
fn host_sources() -> Vec<SourceFile> {
    sources_in(&Path::new(env!("CARGO_MANIFEST_DIR")).join("targets/host/src"))
}

/// The command's sources (`targets/host/cli/src`, crate `neff-cli`: `cli` and `commands`).
fn command_sources() -> Vec<SourceFile> {
    sources_in(&Path::new(env!("CARGO_MANIFEST_DIR")).join("targets/host/cli/src"))
}

/// The sources of the crate whose `src/` is `root`; `main.rs` (the binary, which names the
/// library by its crate name) left out.
fn sources_in(root: &Path) -> Vec<SourceFile> {
    let mut files = Vec::new();
    collect(root, &mut files);
    files
        .into_iter()
        .filter(|path| path.strip_prefix(root).is_ok_and(|p| p != Path::new("main.rs")))
        .map(|path| {
            let rel = path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
            let mut module: Vec<String> = rel.trim_end_matches(".rs").split('/').map(str::to_owned).collect();
            if module.last().is_some_and(|m| m == "mod") {
                module.pop();
            }
            if module == ["lib"] {
                module.clear();
            }
            let code = without_tests(&std::fs::read_to_string(&path).unwrap());
            SourceFile { module, rel, code }
        })
        .collect()
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code before the first `#[cfg(test)]` item and without comments: test modules may
/// reach anywhere, and docs name modules in prose.
fn without_tests(code: &str) -> String {
    let mut kept = String::new();
    for line in code.lines() {
        let t = line.trim_start();
        if t.starts_with("#[cfg(test)]") {
            break;
        }
        if t.starts_with("//") {
            continue;
        }
        kept.push_str(line.split("//").next().unwrap_or(""));
        kept.push('\n');
    }
    kept
}

/// The module paths a file names, resolved to the longest prefix that is a module of the crate.
fn references(file: &SourceFile, modules: &BTreeSet<Vec<String>>) -> BTreeSet<Vec<String>> {
    let mut out = BTreeSet::new();
    let bytes = file.code.as_bytes();
    for (anchor, base) in [("crate::", Vec::new()), ("super::", parent(&file.module))] {
        let mut from = 0;
        while let Some(at) = file.code[from..].find(anchor) {
            let start = from + at;
            from = start + anchor.len();
            // `crate::` inside `$crate::` or a longer identifier is not a path of this crate.
            if start > 0
                && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_' || bytes[start - 1] == b'$')
            {
                continue;
            }
            for path in paths_at(&file.code[from..]) {
                let mut full = base.clone();
                full.extend(path);
                if let Some(m) = longest_module(&full, modules) {
                    out.insert(m);
                }
            }
        }
    }
    out
}

/// The paths written after an anchor: `a::b::C` gives one, `{a::X, b::{Y, Z}}` gives several.
fn paths_at(rest: &str) -> Vec<Vec<String>> {
    let mut segments = Vec::new();
    let mut chars = rest.char_indices().peekable();
    let mut word = String::new();
    while let Some(&(i, c)) = chars.peek() {
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
            chars.next();
        } else if rest[i..].starts_with("::") {
            segments.push(std::mem::take(&mut word));
            chars.next();
            chars.next();
        } else if c == '{' && word.is_empty() {
            // A group: each member is a path relative to the segments so far.
            let close = matching_brace(&rest[i..]).map_or(rest.len(), |n| i + n);
            let mut out = Vec::new();
            for part in split_top_level(&rest[i + 1..close]) {
                for tail in paths_at(part.trim()) {
                    let mut p = segments.clone();
                    p.extend(tail);
                    out.push(p);
                }
            }
            return out;
        } else {
            break;
        }
    }
    if !word.is_empty() {
        segments.push(word);
    }
    vec![segments]
}

fn matching_brace(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

fn split_top_level(s: &str) -> Vec<&str> {
    let (mut depth, mut start, mut parts) = (0usize, 0, Vec::new());
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

fn parent(module: &[String]) -> Vec<String> {
    module[..module.len().saturating_sub(1)].to_vec()
}

fn longest_module(path: &[String], modules: &BTreeSet<Vec<String>>) -> Option<Vec<String>> {
    (1..=path.len()).rev().map(|n| path[..n].to_vec()).find(|p| modules.contains(p))
}

/// A module's path (`["loader", "walk"]`; empty for `lib.rs`).
type ModulePath = Vec<String>;
/// Each module and the modules it names.
type Edges = BTreeMap<ModulePath, BTreeSet<ModulePath>>;

/// The edges between files: module -> the modules it names (itself left out), and each
/// module's file.
fn graph() -> (Edges, BTreeMap<ModulePath, String>) {
    graph_of(sources())
}

/// [`graph`] of the host crate.
fn host_graph() -> (Edges, BTreeMap<ModulePath, String>) {
    graph_of(host_sources())
}

fn graph_of(files: Vec<SourceFile>) -> (Edges, BTreeMap<ModulePath, String>) {
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| f.module.clone()).collect();
    let mut edges = BTreeMap::new();
    let mut names = BTreeMap::new();
    for f in &files {
        let mut refs = references(f, &modules);
        refs.remove(&f.module);
        names.insert(f.module.clone(), f.rel.clone());
        edges.insert(f.module.clone(), refs);
    }
    (edges, names)
}

/// A circle of `edges`, if there is one, as the nodes along it.
fn find_circle<N: Ord + Clone>(edges: &BTreeMap<N, BTreeSet<N>>) -> Option<Vec<N>> {
    fn visit<N: Ord + Clone>(
        n: &N,
        edges: &BTreeMap<N, BTreeSet<N>>,
        state: &mut BTreeMap<N, u8>,
        stack: &mut Vec<N>,
    ) -> Option<Vec<N>> {
        state.insert(n.clone(), 1);
        stack.push(n.clone());
        for m in edges.get(n).into_iter().flatten() {
            match state.get(m).copied().unwrap_or(0) {
                1 => {
                    let at = stack.iter().position(|s| s == m).unwrap_or(0);
                    let mut circle = stack[at..].to_vec();
                    circle.push(m.clone());
                    return Some(circle);
                }
                0 => {
                    if let Some(c) = visit(m, edges, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n.clone(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in edges.keys() {
        if state.get(n).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(n, edges, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

fn top(m: &[String]) -> String {
    m.first().cloned().unwrap_or_else(|| "lib".into())
}

/// Modules above the loader: the info document (`src/info/`), built from what a check shows
/// its observer. They may name the loader; nothing else names them.
const ABOVE_THE_LOADER: [&str; 1] = ["info"];

#[test]
fn no_layer_module_names_the_loader() {
    let (edges, names) = graph();
    let above = |m: &[String]| top(m) == "loader" || ABOVE_THE_LOADER.contains(&top(m).as_str());
    let offenders: Vec<String> = edges
        .iter()
        .filter(|(m, _)| !m.is_empty() && !above(m))
        .filter(|(_, refs)| refs.iter().any(|r| above(r)))
        .map(|(m, _)| names[m].clone())
        .collect();
    assert!(offenders.is_empty(), "layer modules that name the loader or what sits above it: {offenders:?}");
    // The info document does name the loader (its observer): the reader sees that edge.
    assert!(edges.iter().any(|(m, refs)| top(m) == "info" && refs.iter().any(|r| top(r) == "loader")));
}

#[test]
fn error_and_vocab_are_leaves() {
    let (edges, names) = graph();
    let names = &names;
    for leaf in ["error", "vocab"] {
        let offenders: Vec<String> = edges
            .iter()
            .filter(|(m, _)| top(m) == leaf)
            .flat_map(|(m, refs)| {
                refs.iter().filter(|r| top(r) != leaf).map(move |r| format!("{} -> {}", names[m], r.join("::")))
            })
            .collect();
        assert!(offenders.is_empty(), "{leaf} must name no other module: {offenders:?}");
    }
}

#[test]
fn the_device_layer_does_not_reach_into_the_manifest_tier() {
    let (edges, _) = graph();
    for device in [vec!["hal".to_string()], vec!["sim".to_string()]] {
        let refs = &edges[&device];
        assert!(refs.iter().all(|r| top(r) != "manifest"), "{device:?} names the manifest tier: {refs:?}");
        assert!(
            refs.iter().any(|r| top(r) == "vocab"),
            "{device:?} should take Arch and UsageClass from vocab: {refs:?}"
        );
    }
}

/// The top-level modules (a directory's files counted as its module) and the others each names.
fn top_level(edges: &Edges) -> BTreeMap<String, BTreeSet<String>> {
    let mut tops: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (m, refs) in edges {
        if m.is_empty() {
            continue; // lib.rs declares and re-exports every module
        }
        let entry = tops.entry(top(m)).or_default();
        entry.extend(refs.iter().filter(|r| !r.is_empty()).map(|r| top(r)).filter(|r| *r != top(m)));
    }
    tops
}

/// A circle between the files of one directory, as file names. A file's parent module
/// (`mod.rs`, which declares and re-exports it) is containment, not an edge.
fn sibling_circle(edges: &Edges, names: &BTreeMap<ModulePath, String>) -> Option<Vec<String>> {
    let mut siblings: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (m, refs) in edges {
        let same_dir: BTreeSet<Vec<String>> =
            refs.iter().filter(|r| r.len() == m.len() && parent(r) == parent(m) && !m.is_empty()).cloned().collect();
        siblings.insert(m.clone(), same_dir);
    }
    find_circle(&siblings).map(|c| c.iter().map(|m| names[m].clone()).collect())
}

#[test]
fn the_top_level_modules_form_no_circle() {
    let (edges, _) = graph();
    let tops = top_level(&edges);
    assert!(tops.len() > 8, "the module graph was not read: {tops:?}");
    assert!(tops["loader"].contains("manifest"), "the reader lost an edge it must see: {tops:?}");
    if let Some(circle) = find_circle(&tops) {
        panic!("a circle between top-level modules: {}", circle.join(" -> "));
    }
}

#[test]
fn the_files_of_one_directory_form_no_circle() {
    let (edges, names) = graph();
    if let Some(files) = sibling_circle(&edges, &names) {
        panic!("a circle between the files of one directory: {}", files.join(" -> "));
    }
}

/// Issue 31 §3: the host crate (`neff-cli`) once had a 7-file circle: half the verbs' `*Args`
/// in `cli.rs`, half in the verb files (so `cli` named `commands`, which names `cli`), and the
/// passes (`loading`) naming `cli::Arch`. Every `*Args` now lives in `cli.rs`, which names no
/// other module of the crate, and nothing below the verbs names the command line.
#[test]
fn the_host_crate_forms_no_circle() {
    let (edges, names) = host_graph();
    let tops = top_level(&edges);
    assert!(tops.len() > 8, "the host's module graph was not read: {tops:?}");
    assert!(tops["report"].contains("loading"), "the reader lost an edge it must see: {tops:?}");
    if let Some(circle) = find_circle(&tops) {
        panic!("a circle between the host's top-level modules: {}", circle.join(" -> "));
    }
    if let Some(files) = sibling_circle(&edges, &names) {
        panic!("a circle between the files of one host directory: {}", files.join(" -> "));
    }
    // The library parses no command line: that is the command's (clap), which no binding links.
    for module in ["cli", "commands"] {
        assert!(!tops.contains_key(module), "the host library has a `{module}` module: {tops:?}");
    }
    let (edges, names) = graph_of(command_sources());
    let tops = top_level(&edges);
    assert!(tops["commands"].contains("cli"), "the command's graph was not read: {tops:?}");
    if let Some(files) = sibling_circle(&edges, &names) {
        panic!("a circle between the command's files: {}", files.join(" -> "));
    }
    assert_eq!(tops["cli"], BTreeSet::new(), "the command line names no other module of the command");
}

#[test]
fn the_reader_sees_grouped_and_nested_paths() {
    let modules: BTreeSet<Vec<String>> = [
        vec!["error".to_string()],
        vec!["loader".into()],
        vec!["loader".into(), "dma".into()],
        vec!["manifest".into()],
    ]
    .into_iter()
    .collect();
    let file = SourceFile {
        module: vec!["loader".into(), "index".into()],
        rel: "loader/index.rs".into(),
        code: "use super::{dma::NameTable, Loader};\nuse crate::{error::Text, manifest};\n// crate::sim\n".into(),
    };
    let refs = references(&SourceFile { code: without_tests(&file.code), ..file }, &modules);
    let want: BTreeSet<Vec<String>> = [
        vec!["loader".to_string(), "dma".into()],
        vec!["loader".into()],
        vec!["error".into()],
        vec!["manifest".into()],
    ]
    .into_iter()
    .collect();
    assert_eq!(refs, want);
}

#[test]
fn a_circle_is_found() {
    let edges: BTreeMap<u8, BTreeSet<u8>> =
        [(1, [2].into()), (2, [3].into()), (3, [1].into()), (4, BTreeSet::new())].into_iter().collect();
    assert_eq!(find_circle(&edges), Some(vec![1, 2, 3, 1]));
    let dag: BTreeMap<u8, BTreeSet<u8>> =
        [(1, [2, 3].into()), (2, [3].into()), (3, BTreeSet::new())].into_iter().collect();
    assert_eq!(find_circle(&dag), None);
}
