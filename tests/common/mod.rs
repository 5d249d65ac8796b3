//! Shared helpers for integration tests: locating the real NEFFs in `../shared/fixtures`.
//!
//! Where `../shared` is absent (a newcomer's clone) a test that needs a fixture prints that it
//! skips. Under `CI=true` a missing fixture is a failure, never a skip.
#![allow(dead_code)]

pub mod chunked;
pub mod corpus;
pub mod docs;
pub mod neff;
pub mod recorder;

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
