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
// `Error` is `Copy` and carries its context inline (member, key path, offset: about 280 bytes)
// so that firmware needs no heap to report a failure; returning it by value is deliberate.
#![allow(clippy::result_large_err)]

pub mod archive;
pub mod crc32;
pub mod error;
pub mod gzip;
pub mod hal;
pub mod header;
pub mod json;
pub mod loader;
pub mod manifest;
pub mod npy;
pub mod sim;
pub mod tar;

pub use error::{Error, ErrorKind, Result, Stage, Status, Warning, WarningKind, WarningSink};
