//! The refusal table as data: every stable code with its C name, kind, status and message, for
//! bindings (C, Python) and tools, and the documents rendered from it (`docs/refusals.md`,
//! `docs/error-codes.md`, `targets/c/include/neff_codes.h`), which `tests/refusals_table.rs` holds the
//! checked-in files to. All of it comes from `schema/errors.toml`.
//!
//! Constants only: nothing here is linked into an image that does not read it.

use super::Status;

/// One published code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeRow {
    /// The stable number ([`ErrorKind::code`](crate::ErrorKind::code),
    /// [`WarningKind::code`](crate::WarningKind::code)).
    pub code: u16,
    /// The C enumerator (`NEFF_ERR_MANIFEST_ARCH_MISMATCH`), as in `targets/c/include/neff_codes.h`.
    pub c_name: &'static str,
    /// The Rust kind: `Manifest(ArchMismatch)`, `Io(TimedOut)`, `Truncated`.
    pub kind: &'static str,
    /// The runtime status an error maps to; `None` for a warning.
    pub status: Option<Status>,
    /// The message template (Markdown: placeholders name the fields).
    pub message: &'static str,
    /// What the rule rests on: `seed`, `official`, `secondary only` or `decision`.
    pub basis: &'static str,
    /// The sections of docs/format.md that state it.
    pub spec: &'static str,
}

neff_macros::refusal_table!("schema/errors.toml");

/// The row of an error code.
pub fn error_row(code: u16) -> Option<&'static CodeRow> {
    ERRORS.iter().find(|r| r.code == code)
}

/// The row of a warning code.
pub fn warning_row(code: u16) -> Option<&'static CodeRow> {
    WARNINGS.iter().find(|r| r.code == code)
}
