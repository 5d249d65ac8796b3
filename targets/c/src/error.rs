//! Errors across the boundary: the stable C enums (status, stage), the caller-lent
//! `neff_error` that keeps the whole core error, and its accessors.
//!
//! Every numeric value here is ABI: a value, once given, keeps its meaning and is never
//! renumbered or reused. The error's kind is `neff_error_code` (`neff_codes.h`), the stable
//! numbers of `docs/error-codes.md` (`ErrorKind::code()`).

use core::fmt::{self, Write};

use neff::error::{OffsetBase, Stage, Status};
use neff::hal::HalError;
use neff::{Error, ErrorKind, Warning};

/// The outcome of a call: `NEFF_STATUS_OK`, the runtime's `NRT_STATUS` the error maps to
/// (same numbers), or a misuse of the API.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum neff_status {
    /// Success (`NRT_SUCCESS`).
    NEFF_STATUS_OK = 0,
    /// `NRT_FAILURE`: a generic failure (the byte source, the device).
    NEFF_STATUS_FAILURE = 1,
    /// `NRT_INVALID`: an invalid NEFF.
    NEFF_STATUS_INVALID = 2,
    /// `NRT_RESOURCE`: out of a resource (device memory, a capacity, the arena).
    NEFF_STATUS_RESOURCE = 4,
    /// `NRT_UNSUPPORTED_NEFF_VERSION`.
    NEFF_STATUS_UNSUPPORTED_NEFF_VERSION = 10,
    /// An argument is null where it may not be, or a length is wrong: nothing was read. The
    /// error's stage is `NEFF_STAGE_ARGUMENT` and its message names the argument.
    NEFF_STATUS_BAD_ARGUMENT = 64,
    /// A buffer the call writes is too small for what it must hold: nothing was done (a load
    /// was undone, its regions released). `neff_error_needed()` gives the bytes it needs,
    /// `neff_error_available()` the bytes lent.
    NEFF_STATUS_BUFFER_TOO_SMALL = 65,
    /// `neff_init()` was given a header of another major version (or, before 1.0, another minor
    /// version), a newer header than the library, or structure sizes that differ from the
    /// library's: the program was built against another `neff.h`.
    NEFF_STATUS_VERSION_MISMATCH = 66,
}

impl From<Status> for neff_status {
    fn from(s: Status) -> Self {
        match s {
            Status::Failure => neff_status::NEFF_STATUS_FAILURE,
            Status::Invalid => neff_status::NEFF_STATUS_INVALID,
            Status::Resource => neff_status::NEFF_STATUS_RESOURCE,
            Status::UnsupportedNeffVersion => neff_status::NEFF_STATUS_UNSUPPORTED_NEFF_VERSION,
        }
    }
}

/// Where in the data path an error or warning arose.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum neff_stage {
    /// Reading the byte source.
    NEFF_STAGE_IO = 0,
    /// The 1024-byte header.
    NEFF_STAGE_HEADER = 1,
    /// The gzip wrapper and deflate stream.
    NEFF_STAGE_GZIP = 2,
    /// The tar walker.
    NEFF_STAGE_TAR = 3,
    /// `neff.json`.
    NEFF_STAGE_NEFF_JSON = 4,
    /// A KELF descriptor.
    NEFF_STAGE_KELF = 5,
    /// A subgraph's `def.json`.
    NEFF_STAGE_DEF_JSON = 6,
    /// Engine JSONs and their tables.
    NEFF_STAGE_ENGINE = 7,
    /// Raw payloads.
    NEFF_STAGE_PAYLOAD = 8,
    /// Checks across the manifest chain.
    NEFF_STAGE_CHAIN = 9,
    /// The device.
    NEFF_STAGE_HAL = 10,
    /// No stage of the data path: an argument of the call (`NEFF_STATUS_BAD_ARGUMENT`,
    /// `NEFF_STATUS_BUFFER_TOO_SMALL`).
    NEFF_STAGE_ARGUMENT = 255,
    /// No error (a `neff_error` after a call that succeeded).
    NEFF_STAGE_NONE = 254,
}

impl From<Stage> for neff_stage {
    fn from(s: Stage) -> Self {
        match s {
            Stage::Io => neff_stage::NEFF_STAGE_IO,
            Stage::Header => neff_stage::NEFF_STAGE_HEADER,
            Stage::Gzip => neff_stage::NEFF_STAGE_GZIP,
            Stage::Tar => neff_stage::NEFF_STAGE_TAR,
            Stage::NeffJson => neff_stage::NEFF_STAGE_NEFF_JSON,
            Stage::Kelf => neff_stage::NEFF_STAGE_KELF,
            Stage::DefJson => neff_stage::NEFF_STAGE_DEF_JSON,
            Stage::Engine => neff_stage::NEFF_STAGE_ENGINE,
            Stage::Payload => neff_stage::NEFF_STAGE_PAYLOAD,
            Stage::Chain => neff_stage::NEFF_STAGE_CHAIN,
            Stage::Hal => neff_stage::NEFF_STAGE_HAL,
        }
    }
}

/// What an error's offset counts from.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum neff_offset_base {
    /// No byte position: about a member or the chain as a whole (or no error).
    NEFF_OFFSET_NONE = 0,
    /// From the first byte of the file.
    NEFF_OFFSET_FILE = 1,
    /// From the first byte of the inflated tar stream.
    NEFF_OFFSET_ARCHIVE = 2,
    /// From the first byte of the member's body.
    NEFF_OFFSET_MEMBER = 3,
}

impl From<OffsetBase> for neff_offset_base {
    fn from(b: OffsetBase) -> Self {
        match b {
            OffsetBase::None => neff_offset_base::NEFF_OFFSET_NONE,
            OffsetBase::File => neff_offset_base::NEFF_OFFSET_FILE,
            OffsetBase::Archive => neff_offset_base::NEFF_OFFSET_ARCHIVE,
            OffsetBase::Member => neff_offset_base::NEFF_OFFSET_MEMBER,
        }
    }
}

/// 64-bit words in a `neff_error`.
pub const NEFF_ERROR_WORDS: usize = 40;

/// Room for one error, lent by the caller to every call that can fail (any alignment the
/// C compiler gives a `uint64_t` array is enough). Opaque: read it with the `neff_error_*`
/// accessors, and only after a `neff_*` call filled it (every such call does, success or not).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct neff_error {
    /// Opaque.
    pub opaque: [u64; NEFF_ERROR_WORDS],
}

/// What a call writes into a `neff_error`.
#[derive(Debug, Clone, Copy)]
#[repr(C)]
pub(crate) struct Slot {
    /// `MAGIC`: the slot was written by this library (read through a `u64` pointer, first).
    #[allow(dead_code)]
    magic: u64,
    pub(crate) what: What,
    /// What the read callback returned when it failed (0: it did not).
    read: isize,
}

/// What went wrong, if anything.
#[derive(Debug, Clone, Copy)]
pub(crate) enum What {
    /// Nothing: the call succeeded.
    Nothing,
    /// The core's error.
    Core(Error),
    /// A misuse of the API: the status and what was wrong.
    Argument(neff_status, &'static str),
    /// Two lent buffers share a byte (`NEFF_STATUS_BAD_ARGUMENT`): their names.
    Overlap(&'static str, &'static str),
    /// `neff_init` was given a header of another version (`NEFF_STATUS_VERSION_MISMATCH`): the
    /// header's major and minor version.
    Version(u32, u32),
    /// A lent buffer too small for what the call writes: the status, the buffer, the bytes
    /// it needs and the bytes lent.
    Short { status: neff_status, buffer: &'static str, needed: usize, available: usize },
}

/// "NEFFERR1": marks a slot this library wrote.
const MAGIC: u64 = 0x4e45_4646_4552_5231;

// The slot fits the caller's room, at an alignment a `uint64_t` array has.
const _: () = assert!(core::mem::size_of::<Slot>() <= core::mem::size_of::<neff_error>());
const _: () = assert!(core::mem::align_of::<Slot>() <= core::mem::align_of::<neff_error>());

/// Writes `what` into the caller's error, if the caller lent one (null: the caller reads only
/// the status).
pub(crate) fn store(out: *mut neff_error, what: What) {
    store_read(out, what, 0);
}

/// As `store`, with the value a failed read callback returned (0: none).
pub(crate) fn store_read(out: *mut neff_error, what: What, read: isize) {
    if out.is_null() || !out.is_aligned() {
        return;
    }
    // SAFETY: `out` is non-null and aligned for `neff_error`, whose size and alignment cover a
    // `Slot` (asserted above); the caller lent it for the call as writable `neff_error` memory.
    // `write` does not read or drop what was there, so uninitialised memory is fine.
    unsafe { out.cast::<Slot>().write(Slot { magic: MAGIC, what, read }) };
}

/// The slot in `err`, if this library wrote one there.
fn load<'a>(err: *const neff_error) -> Option<&'a What> {
    slot(err).map(|s| &s.what)
}

/// The whole slot in `err`, if this library wrote one there.
fn slot<'a>(err: *const neff_error) -> Option<&'a Slot> {
    if err.is_null() || !err.is_aligned() {
        return None;
    }
    // SAFETY: non-null and aligned; the caller's `neff_error` is at least a `u64` long, and any
    // bit pattern is a valid `u64`.
    let magic = unsafe { err.cast::<u64>().read() };
    if magic != MAGIC {
        return None;
    }
    // SAFETY: the magic says `store` wrote a whole, valid `Slot` here (a caller that copies a
    // `neff_error` copies it whole; the accessors document that they read only what a `neff_*`
    // call filled). The reference lives no longer than the caller's borrow of `err`.
    Some(unsafe { &*err.cast::<Slot>() })
}

/// The core error in `err`, if it holds one.
fn core_error<'a>(err: *const neff_error) -> Option<&'a Error> {
    match load(err)? {
        What::Core(e) => Some(e),
        _ => None,
    }
}

/// The status of the error in `err`: `NEFF_STATUS_OK` if the call succeeded (or `err` is null
/// or was never filled).
///
/// # Safety
/// `err` is null or points to a `neff_error` (filled by a `neff_*` call, or never read as one).
#[no_mangle]
pub unsafe extern "C" fn neff_error_status(err: *const neff_error) -> neff_status {
    match load(err) {
        Some(What::Core(e)) => e.status().into(),
        Some(What::Argument(status, _)) | Some(What::Short { status, .. }) => *status,
        Some(What::Overlap(..)) => neff_status::NEFF_STATUS_BAD_ARGUMENT,
        Some(What::Version(..)) => neff_status::NEFF_STATUS_VERSION_MISMATCH,
        Some(What::Nothing) | None => neff_status::NEFF_STATUS_OK,
    }
}

/// The stage the error arose in (`NEFF_STAGE_NONE` for no error).
///
/// # Safety
/// `err` is null or points to a `neff_error` (filled by a `neff_*` call, or never read as one).
#[no_mangle]
pub unsafe extern "C" fn neff_error_stage(err: *const neff_error) -> neff_stage {
    match load(err) {
        Some(What::Core(e)) => e.stage.into(),
        Some(What::Argument(..) | What::Short { .. } | What::Overlap(..) | What::Version(..)) => {
            neff_stage::NEFF_STAGE_ARGUMENT
        }
        Some(What::Nothing) | None => neff_stage::NEFF_STAGE_NONE,
    }
}

/// The error's stable code, a `neff_error_code` (`neff_codes.h`, `docs/error-codes.md`);
/// 0 for no error and for an argument error.
///
/// # Safety
/// `err` is null or points to a `neff_error` (filled by a `neff_*` call, or never read as one).
#[no_mangle]
pub unsafe extern "C" fn neff_error_kind(err: *const neff_error) -> u16 {
    core_error(err).map_or(0, |e| e.kind.code())
}

/// The byte offset of the error, counted from what `neff_error_offset_base()` says (0 when it
/// has none).
///
/// # Safety
/// `err` is null or points to a `neff_error` (filled by a `neff_*` call, or never read as one).
#[no_mangle]
pub unsafe extern "C" fn neff_error_offset(err: *const neff_error) -> u64 {
    core_error(err).and_then(Error::position).map_or(0, |(offset, _)| offset)
}

/// What `neff_error_offset()` counts from (`NEFF_OFFSET_NONE`: no byte position).
///
/// # Safety
/// `err` is null or points to a `neff_error` (filled by a `neff_*` call, or never read as one).
#[no_mangle]
pub unsafe extern "C" fn neff_error_offset_base(err: *const neff_error) -> neff_offset_base {
    core_error(err).map_or(neff_offset_base::NEFF_OFFSET_NONE, |e| e.offset_base.into())
}

/// For a buffer too small (`NEFF_STATUS_BUFFER_TOO_SMALL`, or `NEFF_STATUS_RESOURCE` from
/// `neff_info`'s work buffer): the bytes it needs; 0 for any other error.
///
/// # Safety
/// `err` is null or points to a `neff_error` (filled by a `neff_*` call, or never read as one).
#[no_mangle]
pub unsafe extern "C" fn neff_error_needed(err: *const neff_error) -> usize {
    match load(err) {
        Some(What::Short { needed, .. }) => *needed,
        _ => 0,
    }
}

/// For a buffer too small: the bytes the caller lent it; 0 for any other error.
///
/// # Safety
/// `err` is null or points to a `neff_error` (filled by a `neff_*` call, or never read as one).
#[no_mangle]
pub unsafe extern "C" fn neff_error_available(err: *const neff_error) -> usize {
    match load(err) {
        Some(What::Short { available, .. }) => *available,
        _ => 0,
    }
}

/// What the read callback returned when it failed (negative, by convention the negated
/// `errno`; or more than it was asked for): the call failed with stage `NEFF_STAGE_IO`. 0 when
/// the error did not come from the callback.
///
/// # Safety
/// `err` is null or points to a `neff_error` (filled by a `neff_*` call, or never read as one).
#[no_mangle]
pub unsafe extern "C" fn neff_error_read_result(err: *const neff_error) -> isize {
    match slot(err) {
        Some(Slot { what: What::Core(_), read, .. }) => *read,
        _ => 0,
    }
}

/// Stores `s`'s length in `*len` (if `len` is non-null) and returns its pointer.
fn text_out(s: &str, len: *mut usize) -> *const u8 {
    if !len.is_null() && len.is_aligned() {
        // SAFETY: non-null and aligned; the caller lent it as a writable `size_t`.
        unsafe { len.write(s.len()) };
    }
    s.as_ptr()
}

/// The tar member the error is about (UTF-8, not NUL-terminated: `*len` bytes; the last
/// 128 bytes of a longer path, after `…`). Empty outside a member. The pointer points into
/// `err` and lives as long as it.
///
/// # Safety
/// `err` is null or points to a `neff_error` (filled by a `neff_*` call, or never read as one). `len` is null or a writable `size_t`.
#[no_mangle]
pub unsafe extern "C" fn neff_error_member(err: *const neff_error, len: *mut usize) -> *const u8 {
    text_out(core_error(err).map_or("", |e| e.member.as_str()), len)
}

/// The JSON key path of the error (`var.x.size`), as `neff_error_member()` gives the member.
/// Empty outside a manifest.
///
/// # Safety
/// `err` is null or points to a `neff_error` (filled by a `neff_*` call, or never read as one). `len` is null or a writable `size_t`.
#[no_mangle]
pub unsafe extern "C" fn neff_error_key_path(err: *const neff_error, len: *mut usize) -> *const u8 {
    text_out(core_error(err).map_or("", |e| e.key_path.as_str()), len)
}

/// Writes as much of `f`'s output as fits in `buf[..len - 1]`, then a NUL; returns the
/// length of the whole output (as `snprintf` does: a return value >= `len` means it was cut).
fn format_into(buf: *mut u8, len: usize, f: impl FnOnce(&mut Cut<'_>) -> fmt::Result) -> usize {
    let out: &mut [u8] = if buf.is_null() || len == 0 {
        &mut []
    } else {
        // SAFETY: the caller lent `len` writable bytes at `buf` for the call (non-null here).
        unsafe { core::slice::from_raw_parts_mut(buf, len) }
    };
    let room = out.len().saturating_sub(1);
    let mut cut = Cut { out, room, written: 0, total: 0 };
    // A formatting error only comes from a `Display` impl, which the core's never return.
    let _ = f(&mut cut);
    let end = cut.written;
    if let Some(nul) = cut.out.get_mut(end) {
        *nul = 0;
    }
    cut.total
}

/// A writer that keeps what fits and counts the rest.
struct Cut<'a> {
    out: &'a mut [u8],
    /// Bytes that may be written (the NUL's byte held back).
    room: usize,
    written: usize,
    total: usize,
}

impl Write for Cut<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.total = self.total.saturating_add(s.len());
        let mut take = s.len().min(self.room.saturating_sub(self.written));
        // Cut at a character boundary, so the output stays UTF-8.
        while !s.is_char_boundary(take) {
            take = take.saturating_sub(1);
        }
        let end = self.written.saturating_add(take);
        if let (Some(dst), Some(src)) = (self.out.get_mut(self.written..end), s.as_bytes().get(..take)) {
            dst.copy_from_slice(src);
            self.written = end;
        }
        Ok(())
    }
}

/// The error's message, as the `neff` command prints it (`stage: member: key.path: message
/// (byte N)`), NUL-terminated into `buf` of `len` bytes; returns the message's whole length as
/// `snprintf` does (cut if that is `>= len`). No error: the empty string. This is the one
/// entry point that links the core's message formatting.
///
/// # Safety
/// `err` is null or points to a `neff_error` (filled by a `neff_*` call, or never read as one). `buf` is null or lends `len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn neff_error_message(err: *const neff_error, buf: *mut u8, len: usize) -> usize {
    // SAFETY: the caller's contract for `err`, as above.
    let read = unsafe { neff_error_read_result(err) };
    if read != 0 {
        if let Some(e) = core_error(err) {
            return format_into(buf, len, |w| write!(w, "{e} (the read callback returned {read})"));
        }
    }
    match load(err) {
        Some(What::Core(e)) if is_c_out_of_memory(e) => {
            // The C device says it is out of memory, not how much is free: the core's message
            // would print its figures as 0 bytes. The same line, with that part worded so.
            let mut line = [0u8; 1024];
            let n = format_into(line.as_mut_ptr(), line.len(), |w| write!(w, "{e}")).min(line.len() - 1);
            let text = core::str::from_utf8(line.get(..n).unwrap_or(&[])).unwrap_or("");
            match text.split_once(FIGURES) {
                Some((head, tail)) => {
                    format_into(buf, len, |w| write!(w, "{head}; the device did not report its free bytes{tail}"))
                }
                None => format_into(buf, len, |w| w.write_str(text)),
            }
        }
        Some(What::Core(e)) => format_into(buf, len, |w| write!(w, "{e}")),
        Some(What::Argument(_, what)) => format_into(buf, len, |w| w.write_str(what)),
        Some(What::Overlap(first, second)) => format_into(buf, len, |w| {
            write!(w, "{first} and {second} overlap: each lent buffer must share no byte with another or the source")
        }),
        Some(What::Version(major, minor)) => format_into(buf, len, |w| {
            write!(
                w,
                "neff_init: neff.h {major}.{minor} does not match the library {}: build against the library's own neff.h",
                crate::VERSION.trim_end_matches('\0')
            )
        }),
        Some(What::Short { buffer, needed, available, .. }) => {
            format_into(buf, len, |w| write!(w, "{buffer}: {needed} bytes needed, {available} lent"))
        }
        Some(What::Nothing) | None => format_into(buf, len, |_| Ok(())),
    }
}

/// The figures the core's out-of-memory message prints, as a C device's refusal leaves them.
const FIGURES: &str = ", 0 bytes free, largest free span 0 bytes";

/// Whether `e` is a C device's `NEFF_HAL_OUT_OF_MEMORY` (which reports no free figures).
fn is_c_out_of_memory(e: &Error) -> bool {
    matches!(e.kind, ErrorKind::Hal(HalError::OutOfMemory { free: 0, largest_free: 0, .. }))
}

/// A warning, as the observer's `warning` callback sees it. Its pointers live for the call
/// only.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct neff_warning {
    /// The stable code, a `neff_warning_code` (`neff_codes.h`).
    pub code: u16,
    /// Where it arose.
    pub stage: neff_stage,
    /// The byte offset, counted from `offset_base`.
    pub offset: u64,
    /// What `offset` counts from.
    pub offset_base: neff_offset_base,
    /// The member (UTF-8, `member_len` bytes, not NUL-terminated); empty outside one.
    pub member: *const u8,
    /// Bytes at `member`.
    pub member_len: usize,
    /// The JSON key path, as `member`.
    pub key_path: *const u8,
    /// Bytes at `key_path`.
    pub key_path_len: usize,
    /// The core's warning, for `neff_warning_message()`. Opaque.
    pub inner: *const core::ffi::c_void,
}

impl neff_warning {
    /// The C view of `w`; `inner` points at `w`.
    pub(crate) fn of(w: &Warning) -> Self {
        Self {
            code: w.kind.code(),
            stage: w.stage.into(),
            offset: w.offset,
            offset_base: w.offset_base.into(),
            member: w.member.as_str().as_ptr(),
            member_len: w.member.as_str().len(),
            key_path: w.key_path.as_str().as_ptr(),
            key_path_len: w.key_path.as_str().len(),
            inner: (w as *const Warning).cast(),
        }
    }
}

/// The warning's message, as the `neff` command prints it, into `buf` as
/// `neff_error_message()` writes. Call it inside the `warning` callback only (the warning
/// lives for that call).
///
/// # Safety
/// `w` is null or the `neff_warning` a `warning` callback was handed, during that call;
/// `buf` is null or lends `len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn neff_warning_message(w: *const neff_warning, buf: *mut u8, len: usize) -> usize {
    if w.is_null() || !w.is_aligned() {
        return format_into(buf, len, |_| Ok(()));
    }
    // SAFETY: non-null and aligned: the `neff_warning` the callback was handed, live for the
    // call (the documented contract).
    let inner = unsafe { (*w).inner }.cast::<Warning>();
    if inner.is_null() || !inner.is_aligned() {
        return format_into(buf, len, |_| Ok(()));
    }
    // SAFETY: `inner` is what `neff_warning::of` stored: the core's warning, alive for the
    // callback this is called from.
    let warning = unsafe { &*inner };
    format_into(buf, len, |out| write!(out, "{warning}"))
}
