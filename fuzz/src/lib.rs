//! The bodies of the fuzz targets, one function per target.
//!
//! The bodies live in two files that the workspace's plain tests also compile (with
//! `#[path]`), so every saved input in `fuzz/corpus/<target>/` is replayed on stable by
//! `cargo test`: `tests/fuzz_replay.rs` (core) and `targets/host/cli/tests/fuzz_replay.rs`.

pub mod core_targets;
pub mod host_targets;
