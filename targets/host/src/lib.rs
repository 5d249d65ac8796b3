//! # neff-cli
//!
//! The host face of the `neff` loader: the `neff` command (`info`, `check`, `load`,
//! `unpack`, `pack`, `schema`; see `spec/cli-contract.md`), plus what its tests reuse: the
//! NEFF [`writer`] and the built-in [`sample`] generator with knobs for bad variants.
//!
//! Every verb reads its input as a stream through a fixed-size buffer ([`source`]), so the
//! command's memory stays flat whatever the size of the NEFF.

pub mod cache_gen;
pub mod cli;
pub mod commands;
pub mod consumed;
pub mod error;
pub mod header_view;
pub mod index;
pub mod inflate;
pub mod integrity;
pub mod loading;
pub mod located;
pub mod parallel;
pub mod progress;
pub mod sample;
pub mod scale;
pub mod source;
pub mod tap;
pub mod walk;
pub mod writer;

/// The built-in sample NEFF (`cayman`, LNC 2), written at build time by [`sample::SampleBuilder`].
pub const SAMPLE_NEFF: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/sample.neff"));
