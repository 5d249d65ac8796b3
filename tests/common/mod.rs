//! Shared helpers for integration tests: locating the real NEFFs in `../shared/fixtures`.
//!
//! Where `../shared` is absent (a newcomer's clone) a test that needs a fixture prints that it
//! skips. Under `CI=true` a missing fixture is a failure, never a skip.
#![allow(dead_code)]

pub mod chunked;
pub mod corpus;
pub mod docs;
pub mod neff;
pub mod peers;
pub mod recorder;

/// The tests' deterministic generator (xorshift64*), so a failure replays.
#[allow(unused_imports)] // Not every test binary that includes this module generates.
pub use corpus::Rng;

use std::path::PathBuf;

/// The repository root (the core crate's manifest directory).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `../shared/fixtures/<rel>` beside the repository, or `None` (with a note) when absent.
///
/// Panics under `CI=true` when the fixture is missing: CI always has `../shared`.
pub fn fixture(rel: &str) -> Option<PathBuf> {
    let mut dir = repo_root();
    // The host crate lives two levels down; walk up until ../shared is found or we run out.
    for _ in 0..4 {
        let candidate = dir.join("../shared/fixtures").join(rel);
        if candidate.exists() {
            return Some(candidate);
        }
        if !dir.pop() {
            break;
        }
    }
    let ci = std::env::var("CI").map(|v| v == "true" || v == "1").unwrap_or(false);
    assert!(!ci, "fixture ../shared/fixtures/{rel} is missing under CI=true");
    eprintln!("skipping: fixture ../shared/fixtures/{rel} not found (no ../shared beside the repository)");
    None
}

/// Reads a fixture whole, or `None` when it is absent (see [`fixture`]).
pub fn fixture_bytes(rel: &str) -> Option<Vec<u8>> {
    fixture(rel).map(|p| std::fs::read(&p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display())))
}

/// The two real NEFFs: `(name, bytes)`.
pub fn real_neffs() -> Vec<(&'static str, Vec<u8>)> {
    ["matmul_small", "matmul_large"]
        .into_iter()
        .filter_map(|n| fixture_bytes(&format!("public/nkipy/{n}.neff")).map(|b| (n, b)))
        .collect()
}

/// Every real NEFF of `../shared/fixtures/public/`: `nkipy/*.neff` and
/// `trainium-kernel-fusion/*/*.neff` (12 files, all neuronx-cc 2.23), as `(path relative to
/// public/, full path)`, sorted. Empty (with a note) when `../shared` is absent; under
/// `CI=true` that, or a group with no file, is a failure (see [`fixture`]).
pub fn public_neffs() -> Vec<(String, PathBuf)> {
    let Some(public) = fixture("public") else { return Vec::new() };
    let mut out = Vec::new();
    for (group, depth) in [("nkipy", 1), ("trainium-kernel-fusion", 2)] {
        let before = out.len();
        let mut dirs = vec![(public.join(group), format!("{group}/"), depth)];
        while let Some((dir, rel, depth)) = dirs.pop() {
            let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()));
            for entry in entries {
                let entry = entry.unwrap();
                let name = entry.file_name().into_string().unwrap();
                let path = entry.path();
                if depth > 1 && path.is_dir() {
                    dirs.push((path, format!("{rel}{name}/"), depth - 1));
                } else if depth == 1 && name.ends_with(".neff") && path.is_file() {
                    out.push((format!("{rel}{name}"), path));
                }
            }
        }
        assert!(out.len() > before, "no NEFF under ../shared/fixtures/public/{group}");
    }
    out.sort();
    out
}
