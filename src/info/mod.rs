//! The `neff info --json` document (spec `cli-contract.md`), built once for every face: the C
//! ABI's `neff_info`, the command's `info --json` and Python's `info()` all print what
//! [`InfoLog::render`] writes.
//!
//! The document's order is not the tar's: `neff.json`, which says which KELFs make the chain,
//! comes last; vars print by `var_id` and queues by name. So what the manifests stream is
//! logged as it comes, as records in a buffer the caller lends ([`InfoLog`], an [`Observer`]
//! of a check): a manifest's entries wait until the manifest itself is read (a member read and
//! refused leaves nothing behind), and a later copy of a member is the one shown. `info.json`'s
//! bytes, which the loader skips, are kept at the top of the same buffer: the loader shows them
//! to its observer on request ([`Observer::member`]), in its own pass. Once the check succeeds,
//! the document is written from the log; the sorting takes an index of 4 bytes per var or queue
//! from the free middle of the buffer, and no other memory.
//!
//! The buffer is a [`LogBuffer`]: a controller lends a slice, whose size bounds what the log
//! holds (a buffer that is too small is [`InfoError::Work`] with the bytes needed); a host lends
//! one that grows, so a valid NEFF is never refused for its size (spec §15.20). The output
//! buffer that is too small is [`InfoError::Document`] with the document's exact size: nothing
//! is ever cut short.
//!
//! Behind the `info` feature: a controller image that prints no document links none of it.
//!
//! [`Observer`]: crate::loader::Observer
//! [`Observer::member`]: crate::loader::Observer::member

mod log;
mod out;
mod records;
mod render;

pub use log::InfoLog;

/// Memory the log is kept in: a lent slice, or (on a host) one that grows.
pub trait LogBuffer {
    /// The bytes.
    fn bytes(&self) -> &[u8];
    /// The bytes, writable.
    fn bytes_mut(&mut self) -> &mut [u8];
    /// Grows to at least `len` bytes, keeping what it holds at the front; `false` when it
    /// cannot (a lent slice never can).
    fn grow(&mut self, _len: usize) -> bool {
        false
    }
}

impl LogBuffer for &mut [u8] {
    fn bytes(&self) -> &[u8] {
        self
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        self
    }
}

/// Why the document could not be written: a buffer too small, with the bytes it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InfoError {
    /// The log's buffer (the log, `info.json` and the sorting index): the bytes it needs.
    Work {
        /// Bytes the buffer needs.
        needed: usize,
    },
    /// The output buffer: the document's size.
    Document {
        /// Bytes of the whole document.
        needed: usize,
    },
}

impl core::fmt::Display for InfoError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            InfoError::Work { needed } => write!(f, "the info log's buffer: {needed} bytes needed"),
            InfoError::Document { needed } => write!(f, "the info document's buffer: {needed} bytes needed"),
        }
    }
}
