//! The byte source: NEFF bytes in memory (flash), or a `read` callback that fills a buffer the
//! caller lends. One reader type serves both, so the loader is linked once.

use core::cell::Cell;
use core::ffi::c_void;

use embedded_io::{BufRead, ErrorKind, ErrorType, Read};

/// Fills `buf` with up to `len` bytes of the NEFF, the next ones in order: returns how many
/// (0 at the end of the file), or a negative number if the read failed, by convention the
/// negated `errno` (`-EIO`): any value from -1 down to `PTRDIFF_MIN` is passed on as is. The
/// call then fails with status `NEFF_STATUS_FAILURE`, stage `NEFF_STAGE_IO`, code
/// `NEFF_ERR_IO_OTHER`; `neff_error_read_result()` gives the value returned and the message
/// ends with it. Returning more than `len` is an error too (`NEFF_ERR_IO_INVALID_DATA`, the
/// value in `neff_error_read_result()` as well).
pub type neff_read_fn = Option<unsafe extern "C" fn(ctx: *mut c_void, buf: *mut u8, len: usize) -> isize>;

/// Where the NEFF comes from. Either `bytes` (non-null: `len` bytes in memory, read in place)
/// or `read` with `buf` (a buffer of `buf_len` bytes the callback fills; 512 bytes is plenty,
/// more means fewer calls).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct neff_source {
    /// The whole NEFF in memory (flash), or null to read through `read`.
    pub bytes: *const u8,
    /// Bytes at `bytes`.
    pub len: usize,
    /// The callback, used when `bytes` is null.
    pub read: neff_read_fn,
    /// Passed to `read` as is.
    pub ctx: *mut c_void,
    /// The buffer `read` fills, lent for the call.
    pub buf: *mut u8,
    /// Bytes at `buf` (at least 1).
    pub buf_len: usize,
    /// The file's size if known (the header gates compare `header_size` and `data_size` with
    /// it), 0 if not. Ignored for `bytes` (its `len` is the size).
    pub file_size: u64,
}

/// The reader the archive pulls from.
pub(crate) enum Reader<'a> {
    /// The NEFF in memory: what is left of it.
    Memory(&'a [u8]),
    /// A callback and the buffer it fills.
    Callback {
        read: unsafe extern "C" fn(*mut c_void, *mut u8, usize) -> isize,
        ctx: *mut c_void,
        buf: &'a mut [u8],
        /// Where a failed read's return value is kept, for the error.
        failure: &'a Cell<isize>,
        /// Bytes of `buf` consumed.
        start: usize,
        /// Bytes of `buf` the last read filled.
        end: usize,
    },
}

impl<'a> Reader<'a> {
    /// A callback reader over `buf`.
    pub(crate) fn callback(
        read: unsafe extern "C" fn(*mut c_void, *mut u8, usize) -> isize,
        ctx: *mut c_void,
        buf: &'a mut [u8],
        failure: &'a Cell<isize>,
    ) -> Self {
        Reader::Callback { read, ctx, buf, failure, start: 0, end: 0 }
    }
}

impl ErrorType for Reader<'_> {
    type Error = ErrorKind;
}

impl BufRead for Reader<'_> {
    fn fill_buf(&mut self) -> Result<&[u8], ErrorKind> {
        match self {
            Reader::Memory(bytes) => Ok(bytes),
            Reader::Callback { read, ctx, buf, failure, start, end } => {
                if *start >= *end {
                    // SAFETY: `buf` is a live, exclusive slice of `buf.len()` bytes, so the
                    // callback may write that many bytes through the pointer; the contract of
                    // `neff_read_fn` forbids it to write more. `ctx` is the caller's own.
                    let n = unsafe { read(*ctx, buf.as_mut_ptr(), buf.len()) };
                    let Ok(filled) = usize::try_from(n) else {
                        failure.set(n);
                        return Err(ErrorKind::Other);
                    };
                    if filled > buf.len() {
                        failure.set(n);
                        return Err(ErrorKind::InvalidData);
                    }
                    let n = filled;
                    (*start, *end) = (0, n);
                }
                Ok(buf.get(*start..*end).unwrap_or_default())
            }
        }
    }

    fn consume(&mut self, amt: usize) {
        match self {
            Reader::Memory(bytes) => *bytes = bytes.get(amt..).unwrap_or_default(),
            Reader::Callback { start, end, .. } => *start = start.saturating_add(amt).min(*end),
        }
    }
}

impl Read for Reader<'_> {
    fn read(&mut self, out: &mut [u8]) -> Result<usize, ErrorKind> {
        neff::read_buffered(self, out)
    }
}
