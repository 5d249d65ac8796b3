//! What the gzip wrapper and the deflate stream refuse and notice.

use core::fmt;

/// Errors of the gzip layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum GzipError {
    /// A member after the first does not start with `1f 8b` (the first is sniffed).
    BadMagic {
        /// The two bytes found.
        found: [u8; 2],
    },
    /// CM is not 8 (deflate).
    UnsupportedMethod {
        /// The CM byte.
        method: u8,
    },
    /// A reserved FLG bit (5..7) is set.
    ReservedFlags {
        /// The FLG byte.
        flags: u8,
    },
    /// FHCRC does not match the header bytes.
    HeaderCrc {
        /// Stored CRC16.
        stored: u16,
        /// Computed CRC16.
        computed: u16,
    },
    /// The deflate stream is invalid.
    Inflate {
        /// The inflater's status code ([`InflateStatus::Invalid`](crate::gzip::InflateStatus::Invalid)); 1 when it stopped making
        /// progress with input left.
        status: i8,
    },
    /// The CRC-32 of the inflated bytes does not match the trailer.
    Crc {
        /// From the trailer.
        stored: u32,
        /// Over the inflated bytes.
        computed: u32,
    },
    /// ISIZE does not match the inflated length mod 2^32.
    Isize {
        /// From the trailer.
        stored: u32,
        /// Inflated length mod 2^32.
        computed: u32,
    },
}

impl GzipError {
    /// A stable number for this error within its layer, for bindings (C, Python): fixed once
    /// given, never reused, listed in `docs/error-codes.md` ([`ErrorKind::code`](crate::ErrorKind::code)).
    pub const fn code(&self) -> u8 {
        match self {
            GzipError::BadMagic { .. } => 1,
            GzipError::UnsupportedMethod { .. } => 2,
            GzipError::ReservedFlags { .. } => 3,
            GzipError::HeaderCrc { .. } => 4,
            GzipError::Inflate { .. } => 5,
            GzipError::Crc { .. } => 6,
            GzipError::Isize { .. } => 7,
        }
    }
}

impl fmt::Display for GzipError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            GzipError::BadMagic { found } => {
                write!(f, "not a gzip member: magic {:02x} {:02x}, expected 1f 8b", found[0], found[1])
            }
            GzipError::UnsupportedMethod { method } => {
                write!(f, "gzip compression method {method} is not deflate (8)")
            }
            GzipError::ReservedFlags { flags } => write!(f, "gzip header sets reserved flag bits (FLG 0x{flags:02x})"),
            GzipError::HeaderCrc { stored, computed } => {
                write!(f, "gzip header CRC mismatch (stored {stored:04x}, computed {computed:04x})")
            }
            GzipError::Inflate { status } => write!(f, "gzip decompression failed (inflate status {status})"),
            GzipError::Crc { stored, computed } => {
                write!(f, "gzip CRC-32 mismatch (trailer {stored:08x}, inflated data {computed:08x})")
            }
            GzipError::Isize { stored, computed } => {
                write!(f, "gzip ISIZE mismatch (trailer {stored}, inflated {computed} mod 2^32)")
            }
        }
    }
}

/// Warnings of the gzip layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum GzipWarning {
    /// Non-zero bytes follow the last gzip member inside `data_size` (ignored).
    TrailingData {
        /// File offset of the first non-zero byte.
        first_offset: u64,
        /// How many non-zero bytes.
        nonzero_bytes: u64,
    },
    /// The payload holds more than one gzip member; all were read as one stream.
    MultipleMembers {
        /// How many members.
        count: u32,
    },
}

impl GzipWarning {
    /// A stable number for this warning within its layer, for bindings (C, Python): fixed
    /// once given, never reused ([`WarningKind::code`](crate::WarningKind::code)).
    pub const fn code(&self) -> u8 {
        match self {
            GzipWarning::TrailingData { .. } => 1,
            GzipWarning::MultipleMembers { .. } => 2,
        }
    }
}

impl fmt::Display for GzipWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            GzipWarning::TrailingData { first_offset, nonzero_bytes } => write!(
                f,
                "{nonzero_bytes} non-zero bytes after the gzip trailer (first at byte {first_offset}) are ignored"
            ),
            GzipWarning::MultipleMembers { count } => {
                write!(f, "the payload holds {count} gzip members, read as one stream (as libarchive does)")
            }
        }
    }
}
