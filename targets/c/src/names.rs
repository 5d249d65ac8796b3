//! The library's identity and the names of its values: its version (`neff_version`, the
//! `NEFF_VERSION_*` macros), the start-up check a program makes against the header it was
//! built with (`neff_init`, as zlib's `inflateInit_` checks `ZLIB_VERSION`), and the names of
//! statuses, stages and codes for logs.
//!
//! The code names come from the refusal table (`schema/errors.toml`, the core's `ERRORS` and
//! `WARNINGS`), the status and stage names from the kinds table (`schema/kinds.toml`: the
//! generated [`crate::kinds`], and `Stage::name`):
//! NUL-terminated copies are built at compile time, so a row added there is named here with no
//! edit. A table is linked only into a program that calls its function.

use core::ffi::c_char;

use crate::error::{neff_error, neff_status, store, What};
use crate::kinds::{c_stage_name, status_name, STAGES};
use crate::neff_report;
use neff::error::codes::{CodeRow, ERRORS, WARNINGS};

/// The library's major version: a program built against a header of another major version is
/// refused by `neff_init()`.
pub const NEFF_VERSION_MAJOR: u32 = 0;
/// The library's minor version: before 1.0 a change of minor version may break the ABI, and
/// `neff_init()` refuses a header of another minor version; from 1.0 on, a header newer than
/// the library.
pub const NEFF_VERSION_MINOR: u32 = 2;
/// The library's patch version.
pub const NEFF_VERSION_PATCH: u32 = 0;
/// The version as one number, `MAJOR * 10000 + MINOR * 100 + PATCH`, for `#if` tests.
pub const NEFF_VERSION_NUMBER: u32 = NEFF_VERSION_MAJOR * 10000 + NEFF_VERSION_MINOR * 100 + NEFF_VERSION_PATCH;

/// The crate's version, NUL-terminated: what `neff_version()` returns.
pub(crate) const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");

/// The library's version, `"MAJOR.MINOR.PATCH"` (NUL-terminated, static): compare it with the
/// header's `NEFF_VERSION_STRING`, or let `neff_init()` do it.
#[no_mangle]
pub extern "C" fn neff_version() -> *const c_char {
    VERSION.as_ptr().cast()
}

/// What `neff_init()` expands to: checks that the header the program was built with
/// (`major`, `minor`, `sizeof(neff_error)`, `sizeof(neff_report)`) matches this library.
/// Returns `NEFF_STATUS_OK`, or `NEFF_STATUS_VERSION_MISMATCH` with the two versions in the
/// error's message: another major version (before 1.0, another minor version), a header newer
/// than the library, or structure sizes that differ (a header for another target). Call it
/// once at start-up, through `neff_init(err)`; it keeps no state and may be called from any
/// thread.
///
/// # Safety
/// `err` is null or points to a writable `neff_error`.
#[no_mangle]
pub unsafe extern "C" fn neff_init_(
    major: u32,
    minor: u32,
    error_size: usize,
    report_size: usize,
    err: *mut neff_error,
) -> neff_status {
    let breaking = if NEFF_VERSION_MAJOR == 0 { minor != NEFF_VERSION_MINOR } else { minor > NEFF_VERSION_MINOR };
    if major != NEFF_VERSION_MAJOR || breaking {
        store(err, What::Version(major, minor));
        return neff_status::NEFF_STATUS_VERSION_MISMATCH;
    }
    if error_size != core::mem::size_of::<neff_error>() || report_size != core::mem::size_of::<neff_report>() {
        let status = neff_status::NEFF_STATUS_VERSION_MISMATCH;
        store(
            err,
            What::Argument(status, "neff_init: sizeof(neff_error) or sizeof(neff_report) differs from the library's: build against its own neff.h for this target"),
        );
        return status;
    }
    store(err, What::Nothing);
    neff_status::NEFF_STATUS_OK
}

/// A `neff_status` as C passes it: its 32 bits (any value is defined behaviour here), written
/// `neff_status` in C (`targets/c/cbindgen.toml`).
pub type StatusValue = u32;

/// A `neff_stage` as C passes it, as `StatusValue`.
pub type StageValue = u32;

/// The C name of a status (`"NEFF_STATUS_INVALID"`), NUL-terminated and static; NULL for a
/// value that is no `neff_status`.
#[no_mangle]
pub extern "C" fn neff_status_name(status: StatusValue) -> *const c_char {
    match status_name(status) {
        Some(name) => name.as_ptr(),
        None => core::ptr::null(),
    }
}

/// Bytes of room per stage name, its NUL included.
const STAGE_ROOM: usize = 16;

/// The stages' names as the core prints them (`schema/kinds.toml`), NUL-terminated.
// Indexing in a constant: an index out of range fails the build, never the program.
#[allow(clippy::indexing_slicing)]
static STAGE_NAMES: [[u8; STAGE_ROOM]; STAGES.len()] = {
    let mut out = [[0u8; STAGE_ROOM]; STAGES.len()];
    let mut i = 0;
    while i < STAGES.len() {
        out[i] = terminated(STAGES[i].name());
        i += 1;
    }
    out
};

/// `name` and a NUL in `N` bytes (a name that does not fit fails the build).
#[allow(clippy::indexing_slicing)] // const evaluation only: out of range fails the build
const fn terminated<const N: usize>(name: &str) -> [u8; N] {
    let bytes = name.as_bytes();
    assert!(bytes.len() < N, "a name longer than its room");
    let mut out = [0u8; N];
    let mut i = 0;
    while i < bytes.len() {
        out[i] = bytes[i];
        i += 1;
    }
    out
}

/// The name a stage has in messages (`"header"`, `"def.json"`; `"argument"` for
/// `NEFF_STAGE_ARGUMENT`, `"none"` for `NEFF_STAGE_NONE`), NUL-terminated and static; NULL for
/// a value that is no `neff_stage`.
#[no_mangle]
pub extern "C" fn neff_stage_name(stage: StageValue) -> *const c_char {
    if let Some(name) = c_stage_name(stage) {
        return name.as_ptr();
    }
    match STAGE_NAMES.get(stage as usize) {
        Some(name) => name.as_ptr().cast(),
        None => core::ptr::null(),
    }
}

/// Bytes of a table's names, each with its NUL.
#[allow(clippy::indexing_slicing)] // const evaluation only: out of range fails the build
const fn packed_len(rows: &[CodeRow]) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < rows.len() {
        n += rows[i].c_name.len() + 1;
        i += 1;
    }
    n
}

/// A table's C names, each followed by a NUL, in its row order.
#[allow(clippy::indexing_slicing)] // const evaluation only: out of range fails the build
const fn packed<const N: usize>(rows: &[CodeRow]) -> [u8; N] {
    let mut out = [0u8; N];
    let (mut at, mut i) = (0, 0);
    while i < rows.len() {
        let name = rows[i].c_name.as_bytes();
        let mut j = 0;
        while j < name.len() {
            out[at] = name[j];
            at += 1;
            j += 1;
        }
        at += 1;
        i += 1;
    }
    out
}

/// The error codes' C names (`neff_codes.h`), NUL-terminated, in `ERRORS` order.
static ERROR_NAMES: [u8; packed_len(ERRORS)] = packed(ERRORS);
/// The warning codes' C names, as `ERROR_NAMES`.
static WARNING_NAMES: [u8; packed_len(WARNINGS)] = packed(WARNINGS);

/// The name of `code` among `rows`, in `names` (their packed names).
fn name_of(rows: &[CodeRow], names: &'static [u8], code: u16) -> *const c_char {
    let mut at = 0usize;
    for row in rows {
        if row.code == code {
            return names.get(at..).map_or(core::ptr::null(), |name| name.as_ptr().cast());
        }
        at = at.saturating_add(row.c_name.len()).saturating_add(1);
    }
    core::ptr::null()
}

/// The C name of an error code, a `neff_error_code` as `neff_error_kind()` returns it
/// (`"NEFF_ERR_HEADER_SHORT_FILE"`), NUL-terminated and static; NULL for a number that is no
/// error code. (Warning codes are numbered apart: `neff_warning_code_name()`.)
#[no_mangle]
pub extern "C" fn neff_code_name(code: u16) -> *const c_char {
    name_of(ERRORS, &ERROR_NAMES, code)
}

/// The C name of a warning code, a `neff_warning_code` as `neff_warning.code` holds it
/// (`"NEFF_WARN_HEADER_TRAILING_BYTES"`), NUL-terminated and static; NULL for a number that is
/// no warning code.
#[no_mangle]
pub extern "C" fn neff_warning_code_name(code: u16) -> *const c_char {
    name_of(WARNINGS, &WARNING_NAMES, code)
}

/// The stage table, for the tests that hold it to the C values.
#[cfg(test)]
pub(crate) fn tests_stages() -> &'static [neff::error::Stage] {
    &STAGES
}
