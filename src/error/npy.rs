//! What a `.npy` payload's header refuses.

use core::fmt;

use super::{CapacityError, Text};

/// Why a `.npy` header was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum NpyError {
    /// The file does not open with `\x93NUMPY` (the bytes seen so far, zero-padded).
    BadMagic {
        /// The first six bytes.
        found: [u8; 6],
    },
    /// A format version other than 1.0, 2.0 or 3.0.
    UnsupportedVersion {
        /// Byte 6.
        major: u8,
        /// Byte 7.
        minor: u8,
    },
    /// The header is longer than the parser's buffer, or has more dimensions than it keeps.
    Capacity(CapacityError),
    /// The input ended inside the header.
    Truncated {
        /// Header bytes needed (preamble alone until the header length is known).
        needed: u64,
        /// Bytes received.
        got: u64,
    },
    /// The header dict is not the Python literal numpy writes.
    Malformed {
        /// Byte offset from the start of the file.
        offset: u64,
        /// What the parser expected there.
        expected: &'static str,
    },
    /// One of `descr`, `fortran_order`, `shape` is missing.
    MissingKey {
        /// The key.
        key: &'static str,
    },
    /// A key appears twice.
    DuplicateKey {
        /// The key.
        key: &'static str,
    },
    /// A key other than `descr`, `fortran_order`, `shape`.
    UnknownKey {
        /// Byte offset of the key from the start of the file.
        offset: u64,
    },
    /// A `descr` outside `b1, i1..i8, u1..u8, f2, f4, f8, c8, c16, V<n>`.
    UnsupportedDescr {
        /// The descr text.
        descr: Text<16>,
    },
    /// `product(shape) * item_size` does not fit in 64 bits.
    DataLenOverflow,
}

impl NpyError {
    /// A stable number for this error within its layer, for bindings (C, Python): fixed once
    /// given, never reused, listed in `docs/error-codes.md` ([`ErrorKind::code`](crate::ErrorKind::code)).
    pub const fn code(&self) -> u8 {
        match self {
            NpyError::BadMagic { .. } => 1,
            NpyError::UnsupportedVersion { .. } => 2,
            NpyError::Capacity(..) => 3,
            NpyError::Truncated { .. } => 4,
            NpyError::Malformed { .. } => 5,
            NpyError::MissingKey { .. } => 6,
            NpyError::DuplicateKey { .. } => 7,
            NpyError::UnknownKey { .. } => 8,
            NpyError::UnsupportedDescr { .. } => 9,
            NpyError::DataLenOverflow => 10,
        }
    }
}

impl NpyError {
    /// The runtime status: a capacity is `NRT_RESOURCE`, everything else `NRT_INVALID`.
    pub fn status(&self) -> crate::Status {
        match self {
            NpyError::Capacity(_) => crate::Status::Resource,
            _ => crate::Status::Invalid,
        }
    }
}

impl fmt::Display for NpyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            NpyError::BadMagic { found: [b0, b1, ..] } if [b0, b1] != [0x93, b'N'] => {
                // The runtime's wording (spec §12A); the member name comes from the Error.
                write!(f, "NUMPY bad header {:x} != 0x4e93", u16::from_le_bytes([b0, b1]))
            }
            NpyError::BadMagic { found } => {
                write!(f, "NUMPY bad magic {found:02x?} != \\x93NUMPY")
            }
            NpyError::UnsupportedVersion { major, minor } => {
                write!(f, "NUMPY format version {major}.{minor} is not supported (1.0, 2.0, 3.0 are)")
            }
            NpyError::Capacity(e) => write!(f, "NUMPY header: {e}"),
            NpyError::Truncated { needed, got } => {
                write!(f, "NUMPY header truncated: {got} of {needed} bytes")
            }
            NpyError::Malformed { offset, expected } => {
                write!(f, "NUMPY header malformed at byte {offset}: expected {expected}")
            }
            NpyError::MissingKey { key } => write!(f, "NUMPY header has no '{key}' key"),
            NpyError::DuplicateKey { key } => write!(f, "NUMPY header repeats the '{key}' key"),
            NpyError::UnknownKey { offset } => write!(f, "NUMPY header has an unknown key at byte {offset}"),
            NpyError::UnsupportedDescr { descr } => write!(f, "NUMPY unsupported dtype descr '{descr}'"),
            NpyError::DataLenOverflow => f.write_str("NUMPY array size overflows 64 bits"),
        }
    }
}
