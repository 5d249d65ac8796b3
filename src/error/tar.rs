//! What the tar walker refuses and notices.

use core::fmt;

/// Errors of the tar walker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TarError {
    /// The header checksum matches neither convention.
    Checksum {
        /// Stored value.
        stored: u64,
        /// Unsigned sum computed over the block.
        computed: u64,
    },
    /// A numeric header field is not octal or base-256.
    BadNumber {
        /// Field name.
        field: &'static str,
    },
    /// A base-256 field is negative or does not fit in 64 bits, or a size (ustar, base-256 or
    /// PAX) leaves no room for its padding below `u64::MAX`.
    NumberOutOfRange {
        /// Field name.
        field: &'static str,
    },
    /// A multivolume (`M`) or label (`V`) member.
    UnsupportedType {
        /// The typeflag.
        typeflag: u8,
    },
    /// A PAX record is malformed (length, separator or newline).
    BadPaxRecord,
    /// A PAX `size` value is not a decimal number.
    BadPaxSize,
    /// The member name is empty.
    EmptyName,
    /// The member name is absolute.
    AbsoluteName,
    /// The member name has a `..` component.
    ParentComponent,
    /// The member name contains a NUL byte.
    NulInName,
}

impl TarError {
    /// A stable number for this error within its layer, for bindings (C, Python): fixed once
    /// given, never reused, listed in `docs/error-codes.md` ([`ErrorKind::code`](crate::ErrorKind::code)).
    pub const fn code(&self) -> u8 {
        match self {
            TarError::Checksum { .. } => 1,
            TarError::BadNumber { .. } => 2,
            TarError::NumberOutOfRange { .. } => 3,
            TarError::UnsupportedType { .. } => 4,
            TarError::BadPaxRecord => 5,
            TarError::BadPaxSize => 6,
            TarError::EmptyName => 7,
            TarError::AbsoluteName => 8,
            TarError::ParentComponent => 9,
            TarError::NulInName => 10,
        }
    }
}

impl fmt::Display for TarError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            TarError::Checksum { stored, computed } => {
                write!(f, "tar header checksum mismatch (stored {stored:o}, computed {computed:o})")
            }
            TarError::BadNumber { field } => write!(f, "tar header field {field} is not a number"),
            TarError::NumberOutOfRange { field } => write!(f, "tar header field {field} is negative or too large"),
            TarError::UnsupportedType { typeflag } => {
                let what = match typeflag {
                    b'M' => "multivolume",
                    b'V' => "volume label",
                    _ => "unsupported",
                };
                write!(f, "{what} tar member (type '{}') is not supported", char::from(typeflag))
            }
            TarError::BadPaxRecord => f.write_str("malformed PAX extended header record"),
            TarError::BadPaxSize => f.write_str("PAX size is not a decimal number"),
            TarError::EmptyName => f.write_str("tar member has an empty name"),
            TarError::AbsoluteName => f.write_str("tar member name is an absolute path"),
            TarError::ParentComponent => f.write_str("tar member name has a '..' component"),
            TarError::NulInName => f.write_str("tar member name contains a NUL byte"),
        }
    }
}

/// Warnings of the tar walker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TarWarning {
    /// The archive ended after one zero block instead of two.
    LoneZeroBlock,
    /// The stream ended at a block boundary without any end-of-archive block.
    MissingEndOfArchive,
    /// Non-zero bytes follow the end-of-archive blocks (ignored).
    DataAfterEnd {
        /// How many non-zero bytes.
        nonzero_bytes: u64,
    },
    /// A PAX global header sets `path` or `size`; ignored, as libarchive does.
    GlobalPaxIgnored,
    /// An unknown typeflag, read as a regular member (POSIX, libarchive).
    UnknownType {
        /// The typeflag.
        typeflag: u8,
    },
    /// The header checksum only matches the historic signed-byte sum.
    SignedChecksum,
    /// A sparse member (GNU `S` or PAX `GNU.sparse.*`) was skipped; the warning names it.
    SparseSkipped,
    /// A member whose name is not UTF-8 was skipped (no manifest can name it); the warning
    /// names it, each byte that is not ASCII shown as `?`.
    NameNotUtf8,
}

impl TarWarning {
    /// A stable number for this warning within its layer, for bindings (C, Python): fixed
    /// once given, never reused ([`WarningKind::code`](crate::WarningKind::code)).
    pub const fn code(&self) -> u8 {
        match self {
            TarWarning::LoneZeroBlock => 1,
            TarWarning::MissingEndOfArchive => 2,
            TarWarning::DataAfterEnd { .. } => 3,
            TarWarning::GlobalPaxIgnored => 4,
            TarWarning::UnknownType { .. } => 5,
            TarWarning::SignedChecksum => 6,
            TarWarning::SparseSkipped => 7,
            TarWarning::NameNotUtf8 => 8,
        }
    }
}

impl fmt::Display for TarWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            TarWarning::LoneZeroBlock => f.write_str("tar archive ends with a single zero block (two expected)"),
            TarWarning::MissingEndOfArchive => f.write_str("tar archive has no end-of-archive blocks"),
            TarWarning::DataAfterEnd { nonzero_bytes } => {
                write!(f, "{nonzero_bytes} non-zero bytes after the tar end-of-archive are ignored")
            }
            TarWarning::GlobalPaxIgnored => f.write_str("PAX global header 'path'/'size' ignored (as libarchive does)"),
            TarWarning::UnknownType { typeflag } => {
                write!(f, "unknown tar member type '{}' read as a regular file", char::from(typeflag))
            }
            TarWarning::SignedChecksum => f.write_str("tar header checksum uses the historic signed sum"),
            TarWarning::SparseSkipped => f.write_str("sparse tar member skipped (not supported)"),
            TarWarning::NameNotUtf8 => {
                f.write_str("tar member skipped: its name is not UTF-8, so no manifest can name it")
            }
        }
    }
}
