//! Replays the saved inputs of the `unpack_path` fuzz target (`fuzz/corpus/unpack_path/`), and
//! the `gzip` target's through `gzip_parallel`,
//! through its body, on stable; the body is the fuzz crate's own, compiled here with `#[path]`.

#[path = "../../../../fuzz/src/host_targets.rs"]
mod host_targets;

use std::path::PathBuf;

/// The saved inputs of fuzz target `target`, in name order (there must be some).
fn corpus(target: &str) -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../fuzz/corpus").join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{}: no saved inputs", dir.display());
    files
}

#[test]
fn unpack_path_corpus() {
    let files = corpus("unpack_path");
    for file in &files {
        let bytes = std::fs::read(file).unwrap();
        if std::panic::catch_unwind(|| host_targets::unpack_path(&bytes)).is_err() {
            panic!("fuzz input {} fails its target", file.display());
        }
    }
}

/// The gzip target's saved inputs (`fuzz/corpus/gzip/`) through `gzip_parallel`: serial and
/// parallel inflation of each as a NEFF's payload end alike.
#[test]
fn gzip_corpus_inflates_alike_in_parallel() {
    let files = corpus("gzip");
    for file in &files {
        let bytes = std::fs::read(file).unwrap();
        if std::panic::catch_unwind(|| host_targets::gzip_parallel(&bytes)).is_err() {
            panic!("fuzz input {} fails gzip_parallel", file.display());
        }
    }
    // The parallel path itself handed chunks on (not only its serial replay).
    let (chunks, _) = neff_host::inflate::parallel::stats();
    assert!(chunks > 0, "no chunk handed on");
}
