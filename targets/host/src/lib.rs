//! # neff-host
//!
//! The host library of the `neff` loader: what the `neff` command (`cli/`), the Python
//! package (`targets/python`) and the tests share. One pass of the core loader over a file
//! ([`loading`], asked for by one [`loading::Request`]), the inflaters that feed it
//! ([`inflate`], [`parallel`]), the documents each face prints ([`info`], [`report`], [`mem`],
//! [`diff`], [`ls`], [`cache`]), the member index of an opened NEFF ([`index`]), and the NEFF
//! [`writer`] with the built-in [`sample`] and [`scale`] generators.
//!
//! Every pass reads its input as a stream through a fixed-size buffer ([`source`]), so memory
//! stays flat whatever the size of the NEFF. Nothing here parses a command line: that is the
//! command's (clap), and no binding depends on it.

pub mod cache;
pub mod cache_gen;
pub mod consumed;
pub mod diff;
pub mod error;
pub mod header_view;
pub mod index;
pub mod inflate;
pub mod info;
pub mod integrity;
pub mod loading;
pub mod located;
pub mod ls;
pub mod mem;
pub mod parallel;
pub mod progress;
pub mod report;
pub mod safe_path;
pub mod sample;
pub mod scale;
pub mod source;
pub mod tap;
pub mod walk;
pub mod writer;

/// The built-in sample NEFF (`cayman`, LNC 2), written at build time by [`sample::SampleBuilder`].
pub const SAMPLE_NEFF: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/sample.neff"));
