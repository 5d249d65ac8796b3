//! What the header gates refuse and what they notice (`neff_header_t`, docs/format.md §2.5).

use core::fmt;

use super::Status;

/// Errors of the header gates (§2.5), in the order the runtime checks them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum HeaderError {
    /// Gate 2: fewer than 1024 bytes (`received` is the file size, or what the stream held).
    ShortFile {
        /// Bytes available.
        received: u64,
    },
    /// Loader gate (stricter than the runtime): `header_size` is not 1024.
    /// Relaxed by `OpenOptions::allow_header_size_other_than_1024`.
    HeaderSizeNot1024 {
        /// The declared header size.
        header_size: u64,
    },
    /// Gate 3: `header_size >= file_size`.
    HeaderSizePastEnd {
        /// The declared header size.
        header_size: u64,
        /// The file size.
        file_size: u64,
    },
    /// Gate 4: `neff_version_major > 2`.
    UnsupportedVersion {
        /// Major version.
        major: u64,
        /// Minor version.
        minor: u64,
    },
    /// Gate 5: a major-2 NEFF sets feature bits this runtime does not know.
    NewerFeatures {
        /// Major version.
        major: u64,
        /// Minor version.
        minor: u64,
        /// `feature_bits & 0x7FFF_FFFF_F800_0000`.
        features: u64,
    },
    /// Gate 6: `data_size > file_size - 1024` (or the stream ended before `data_size` bytes).
    DataSizePastEnd {
        /// The declared payload size.
        data_size: u64,
        /// Payload bytes actually available.
        available: u64,
    },
    /// Loader gate: `data_size == 0` (the runtime only asserts this when verifying).
    ZeroDataSize,
    /// Gate 7: `pkg_version` is neither 1 nor 2.
    UnsupportedPackager {
        /// The declared packager version.
        pkg_version: u64,
    },
}

impl HeaderError {
    /// A stable number for this error within its layer, for bindings (C, Python): fixed once
    /// given, never reused, listed in `docs/error-codes.md` ([`ErrorKind::code`](crate::ErrorKind::code)).
    pub const fn code(&self) -> u8 {
        match self {
            HeaderError::ShortFile { .. } => 1,
            HeaderError::HeaderSizeNot1024 { .. } => 2,
            HeaderError::HeaderSizePastEnd { .. } => 3,
            HeaderError::UnsupportedVersion { .. } => 4,
            HeaderError::NewerFeatures { .. } => 5,
            HeaderError::DataSizePastEnd { .. } => 6,
            HeaderError::ZeroDataSize => 7,
            HeaderError::UnsupportedPackager { .. } => 8,
        }
    }
}

impl HeaderError {
    /// The runtime status of this gate.
    pub fn status(&self) -> Status {
        match self {
            HeaderError::UnsupportedVersion { .. }
            | HeaderError::NewerFeatures { .. }
            | HeaderError::UnsupportedPackager { .. } => Status::UnsupportedNeffVersion,
            HeaderError::ShortFile { .. }
            | HeaderError::HeaderSizeNot1024 { .. }
            | HeaderError::HeaderSizePastEnd { .. }
            | HeaderError::DataSizePastEnd { .. }
            | HeaderError::ZeroDataSize => Status::Invalid,
        }
    }
}

/// Warnings of the header layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum HeaderWarning {
    /// The file holds bytes after `1024 + data_size`; they are ignored (as the runtime does).
    TrailingBytes {
        /// How many.
        count: u64,
    },
    /// `header_size` is not 1024 but was allowed; the payload is still read at 0x400, as the
    /// runtime does.
    HeaderSizeAllowed {
        /// The declared header size.
        header_size: u64,
    },
    /// The requested integrity check did not match.
    IntegrityMismatch {
        /// Which digest.
        algorithm: HashAlgorithm,
    },
}

impl HeaderWarning {
    /// A stable number for this warning within its layer, for bindings (C, Python): fixed
    /// once given, never reused ([`WarningKind::code`](crate::WarningKind::code)).
    pub const fn code(&self) -> u8 {
        match self {
            HeaderWarning::TrailingBytes { .. } => 1,
            HeaderWarning::HeaderSizeAllowed { .. } => 2,
            HeaderWarning::IntegrityMismatch { .. } => 3,
        }
    }
}

impl fmt::Display for HeaderWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            HeaderWarning::TrailingBytes { count } => {
                write!(f, "{count} bytes after the payload (past data_size) are ignored")
            }
            HeaderWarning::HeaderSizeAllowed { header_size } => {
                write!(f, "header_size 0x{header_size:x} accepted; the payload is read at 0x400 as the runtime does")
            }
            HeaderWarning::IntegrityMismatch { algorithm: HashAlgorithm::Md5 } => f.write_str("MD5 mismatch!"),
            HeaderWarning::IntegrityMismatch { algorithm: HashAlgorithm::Sha256 } => f.write_str("SHA256 mismatch!"),
        }
    }
}

/// The digest the header's `hash` holds, by `pkg_version`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum HashAlgorithm {
    /// pkg 2: MD5 of the payload, compared with `hash[0..16]`.
    Md5,
    /// pkg 1: SHA-256 of the payload, compared with `hash[0..32]`.
    Sha256,
}

impl HashAlgorithm {
    /// How many leading bytes of `hash` are compared.
    pub const fn digest_len(self) -> usize {
        match self {
            HashAlgorithm::Md5 => 16,
            HashAlgorithm::Sha256 => 32,
        }
    }
}
