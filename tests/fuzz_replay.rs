//! Replays every saved fuzz input through its target's body, on stable and without libFuzzer:
//! `fuzz/corpus/<target>/` holds the minimised corpus of each target (seeds derived from the
//! real NEFFs, generated variants, and every input that once crashed). The bodies are the
//! fuzz crate's own (`fuzz/src/core_targets.rs`), compiled here with `#[path]`.
//!
//! The inputs run with overflow checks on (asserted below): an arithmetic overflow that input
//! can reach panics here instead of wrapping silently.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

#[path = "../fuzz/src/core_targets.rs"]
mod core_targets;

use std::path::PathBuf;

/// Runs `body` over every file of `fuzz/corpus/<target>/`, naming the file that fails.
fn replay(target: &str, body: fn(&[u8])) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus").join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{}: no saved inputs", dir.display());
    for file in &files {
        let bytes = std::fs::read(file).unwrap();
        if std::panic::catch_unwind(|| body(&bytes)).is_err() {
            panic!("fuzz input {} fails its target", file.display());
        }
    }
    eprintln!("{target}: {} inputs replayed", files.len());
}

#[test]
fn overflow_checks_are_on_for_the_replay() {
    let max = std::hint::black_box(u8::MAX);
    #[allow(clippy::arithmetic_side_effects)]
    let overflowed = std::panic::catch_unwind(|| max + 1).is_err();
    assert!(overflowed, "this test profile must keep overflow-checks = true (Cargo.toml)");
}

#[test]
fn header_corpus() {
    replay("header", core_targets::header);
}

#[test]
fn gzip_corpus() {
    replay("gzip", core_targets::gzip);
}

#[test]
fn tar_corpus() {
    replay("tar", core_targets::tar);
}

#[test]
fn archive_corpus() {
    replay("archive", core_targets::archive);
}

#[test]
fn json_corpus() {
    replay("json", core_targets::json);
}

#[test]
fn npy_corpus() {
    replay("npy", core_targets::npy);
}

#[test]
fn manifest_corpus() {
    replay("manifest", core_targets::manifest);
}

#[test]
fn loader_check_corpus() {
    replay("loader_check", core_targets::loader_check);
}

#[test]
fn loader_members_corpus() {
    // Its inputs replace members of the real `matmul_small.neff`: without the shared fixtures
    // the body does nothing, which is a skip here and a failure under CI.
    let base = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/public/nkipy/matmul_small.neff");
    if std::env::var_os("NEFF_FUZZ_BASE").is_none() && !base.exists() {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{} is missing under CI", base.display());
        eprintln!("loader_members: skipped, {} is absent", base.display());
        return;
    }
    replay("loader_members", core_targets::loader_members);
}
