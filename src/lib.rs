//! # neff
//!
//! A `#![no_std]`, heap-free loader for AWS Neuron NEFF files (Neuron Executable File
//! Format): a 1024-byte header, then a gzip'd tar of JSON manifests and raw payloads.
//!
//! The data path follows the modules: [`header`] -> [`gzip`] -> [`tar`] -> [`json`] ->
//! [`manifest`] -> [`loader`], which talks to the accelerator only through [`hal`].
//! What grows with a model is streamed to the caller, what binding needs is kept in an
//! [`arena`] the caller lends, and every other buffer has a fixed capacity; bad input gives an
//! [`Error`] with the stage, member, key path and byte offset, never a panic.
//!
//! # Loading a NEFF
//!
//! The source is any [`embedded_io::BufRead`] (a `&[u8]` in flash, a file adapter, a socket);
//! the device is any [`hal::Hal`]. Here, a digest-only [`sim::SimDevice`]: a 64 GiB device seen
//! from a controller that stores none of its bytes. What binding must remember lives in an
//! arena the caller lends; every placement streams to an [`loader::Observer`].
//!
//! ```no_run
//! use neff::archive::{Archive, OpenOptions};
//! use neff::loader::{LoadOptions, LoadReport, Loader, Observer, PayloadReport};
//! use neff::manifest::Arch;
//! use neff::sim::SimDevice;
//!
//! /// Sees each payload once the chain is bound.
//! struct Placements(u32);
//!
//! impl Observer for Placements {
//!     fn payload(&mut self, p: &PayloadReport<'_>) {
//!         // member, usage class, core, bytes placed, digest, device address
//!         let _ = (p.member, p.usage, p.core, p.len, p.digest, p.address);
//!         self.0 += 1;
//!     }
//! }
//!
//! # fn run(neff_bytes: &[u8]) -> Result<(), neff::Error> {
//! let mut sink = |w: &neff::Warning| { /* log it */ let _ = w; };
//! // Header gates run here; the archive reader (~46 KiB, with the inflate window) lives in
//! // `archive`: keep it in a long-lived frame or a static cell on a small target.
//! let mut archive = Archive::open(neff_bytes, Some(neff_bytes.len() as u64), &OpenOptions::default(), &mut sink)?;
//! let mut device: SimDevice = SimDevice::digest_only(64 << 30, Arch::Cayman);
//! // The tokenizer's string scratch, then what binding keeps (see `Storage::arena`).
//! let mut arena = [0u8; neff::manifest::STRING_SCRATCH + 16 * 1024];
//! let mut loader = Loader::new(&mut arena, LoadOptions { allow_legacy: false, ..LoadOptions::default() });
//! let mut report = LoadReport::new();
//! let mut placements = Placements(0);
//! loader.load(&mut archive, &mut device, &mut report, &mut placements, &mut sink)?;
//! assert_eq!(placements.0, report.placed + report.released);
//! let mut json = [0u8; 1024];
//! if let Ok(n) = report.to_json(&mut json) {
//!     let _ = &json[..n]; // ship the summary to the host
//! }
//! # Ok(())
//! # }
//! ```
//!
//! [`loader::LOAD_FOOTPRINT`] (loader state plus archive reader, without the arena) is asserted
//! under 64 KiB at compile time; `targets/qemu-m4` runs this path on a Cortex-M4 in 128 KiB of
//! RAM.
//!
//! Section signs (`§N`, "spec §N") in these docs and in the code's comments refer to the
//! sections of `docs/format.md` in the repository: the NEFF format, its sources, and the
//! decisions this crate follows.
#![no_std]
#![forbid(unsafe_code)]
// `Error` is `Copy` and carries its context inline (member, key path, offset: 296 bytes)
// so that firmware needs no heap to report a failure; returning it by value is deliberate.
#![allow(clippy::result_large_err)]

pub mod archive;
pub mod arena;
pub mod digest;
pub mod error;
pub mod gzip;
pub mod hal;
pub mod header;
#[cfg(feature = "info")]
pub mod info;
pub mod json;
pub mod loader;
pub mod manifest;
pub mod npy;
pub mod sim;
pub mod tar;
#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod testutil;
pub mod varlog;
pub mod vocab;

pub use error::{Error, ErrorKind, Result, Stage, Status, Warning, WarningKind, WarningSink};

/// `Read::read` for a source that is also a `BufRead`: copies what `fill_buf` holds (as much
/// as fits) and consumes it. Every buffered reader of the data path reads this way, and so may
/// a caller's byte source (the C ABI's).
pub fn read_buffered<R: embedded_io::BufRead + ?Sized>(src: &mut R, buf: &mut [u8]) -> Result<usize, R::Error> {
    let available = src.fill_buf()?;
    let n = available.len().min(buf.len());
    if let (Some(dst), Some(bytes)) = (buf.get_mut(..n), available.get(..n)) {
        dst.copy_from_slice(bytes);
    }
    src.consume(n);
    Ok(n)
}

/// Copies `src` into `dst` (of the same length; otherwise nothing is copied). Runs of up to 16
/// bytes, what the tokenizer stores for most keys and values, are moved by two overlapping
/// fixed-size moves instead of a call to `memcpy`, which costs more than the copy at these
/// lengths. Out of line on a controller, where its copies would cost flash.
#[cfg_attr(not(target_os = "none"), inline)]
#[cfg_attr(target_os = "none", inline(never))]
pub(crate) fn copy_bytes(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    if dst.len() != n {
        return;
    }
    if n > 16 {
        dst.copy_from_slice(src);
    } else if n >= 8 {
        copy_ends::<8>(dst, src);
    } else if n >= 4 {
        copy_ends::<4>(dst, src);
    } else if let (Some((d0, d_rest)), Some((s0, s_rest))) = (dst.split_first_mut(), src.split_first()) {
        // One to three bytes: the first, then the first and the last of the rest (the same
        // byte when the rest is one).
        *d0 = *s0;
        if let (Some(d), Some(s)) = (d_rest.first_mut(), s_rest.first()) {
            *d = *s;
        }
        if let (Some(d), Some(s)) = (d_rest.last_mut(), s_rest.last()) {
            *d = *s;
        }
    }
}

/// The first and the last `N` bytes of `src` into `dst` (`N <= len <= 2N`: all of it).
#[inline(always)]
fn copy_ends<const N: usize>(dst: &mut [u8], src: &[u8]) {
    if let (Some(d), Some(s)) = (dst.first_chunk_mut::<N>(), src.first_chunk::<N>()) {
        *d = *s;
    }
    if let (Some(d), Some(s)) = (dst.last_chunk_mut::<N>(), src.last_chunk::<N>()) {
        *d = *s;
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    extern crate std;
    use std::vec::Vec;

    #[test]
    fn copy_bytes_copies_every_length_and_nothing_on_a_mismatch() {
        let src: Vec<u8> = (1..=40).collect();
        for n in 0..=40 {
            let mut dst = [0u8; 40];
            super::copy_bytes(&mut dst[..n], &src[..n]);
            assert_eq!(&dst[..n], &src[..n], "length {n}");
            assert!(dst[n..].iter().all(|&b| b == 0), "length {n}: nothing past the end");
        }
        let mut dst = [0u8; 4];
        super::copy_bytes(&mut dst, &src[..5]);
        assert_eq!(dst, [0; 4]);
    }
}
