//! # neff
//!
//! A `#![no_std]`, heap-free loader for AWS Neuron NEFF files (Neuron Executable File
//! Format): a 1024-byte header, then a gzip'd tar of JSON manifests and raw payloads.
//!
//! The data path follows the modules: [`header`] -> [`gzip`] -> [`tar`] -> [`json`] ->
//! [`manifest`] -> [`loader`], which talks to the accelerator only through [`hal`].
//! Every buffer has a capacity fixed by its type; bad input gives an [`Error`] with the
//! stage, member, key path and byte offset, never a panic.
#![no_std]
#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic))]

pub mod archive;
pub mod crc32;
pub mod error;
pub mod gzip;
pub mod hal;
pub mod header;
pub mod json;
pub mod loader;
pub mod manifest;
pub mod tar;

pub use error::{Error, ErrorKind, Result, Stage, Status, Warning, WarningKind, WarningSink};
