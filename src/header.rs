//! The 1024-byte NEFF header (`neff_header_t`, docs/format.md §2).
//!
//! ```text
//! off   size  field                  off   size  field
//! 0x000    8  pkg_version            0x0CC   16  uuid
//! 0x008    8  header_size            0x0DC  256  name (NUL-terminated)
//! 0x010    8  data_size              0x1DC    4  requested_tpb_count
//! 0x018    8  neff_version_major     0x1E0   64  tpb_per_node
//! 0x020    8  neff_version_minor     0x220    8  feature_bits
//! 0x028  128  neff_build_version     0x228    4  lnc_size
//! 0x0A8    4  num_tpb                0x22C  468  pad
//! 0x0AC   32  hash                   0x400       data[data_size] (the payload)
//! ```
//!
//! All integers are little-endian; there is no magic number. `hash` sits at 172 and is only
//! 4-byte aligned, so every field is read by offset ([`field`]), never by transmuting.
//!
//! [`NeffHeader::validate`] applies the runtime's gates (§2.5) in the runtime's order, each a
//! distinct [`HeaderError`] with the runtime's wording and status. The optional integrity
//! check (§2.6) is a [`PayloadHasher`] fed while the payload streams past; it reports an
//! [`Integrity`] and never fails a load (a mismatch is a [`HeaderWarning`]; a caller that wants
//! it fatal says so itself, as `neff check --verify` does).
//!
//! What real compilers store (§2.6, all 62 real NEFFs): `hash[0..16]` is the MD5 of the payload
//! `data[0..data_size]` (the gzip stream with its zero padding), in one of two byte orders that
//! no header field tells apart, so both are tried ([`DigestOrder`]):
//!
//! ```text
//! MD5 of the payload               ef e9 b3 bc | 98 16 30 77 | b9 4c 8b cd | ac f5 1f 47
//! neuronx-cc 2.0   (Plain)         ef e9 b3 bc | 98 16 30 77 | b9 4c 8b cd | ac f5 1f 47
//! neuronx-cc 2.18+ (WordSwapped)   bc b3 e9 ef | 77 30 16 98 | cd 8b 4c b9 | 47 1f f5 ac
//! ```
//!
//! Every size in the header is a `u64` from the file: the gates compare them and never add to
//! them (the reader's `1024 + data_size` is checked where it is formed).
#![deny(clippy::arithmetic_side_effects)]

use core::fmt;
use core::ops::Range;

use md5::Digest as _;

pub use crate::error::{HashAlgorithm, HeaderError, HeaderWarning};

/// Size of `neff_header_t`, and the file offset where the payload starts.
pub const HEADER_SIZE: usize = 1024;

/// `feature_bits` that this loader (like runtime 2.31) understands: bits 0..=26.
pub const SUPPORTED_FEATURES: u64 = 0x7FF_FFFF;

/// `feature_bits` that refuse a major-2 NEFF (bits 27..=62; bit 63 is not tested).
pub const UNSUPPORTED_FEATURE_MASK: u64 = 0x7FFF_FFFF_F800_0000;

/// Highest `neff_version_major` the runtime accepts.
pub const MAX_VERSION_MAJOR: u64 = 2;

/// Byte ranges of each field inside the 1024-byte header (smoltcp style).
pub mod field {
    use core::ops::Range;
    /// `uint64_t pkg_version`: 1 = raw tar + SHA-256, 2 = gzip tar + MD5.
    pub const PKG_VERSION: Range<usize> = 0..8;
    /// `uint64_t header_size`: 1024 in every known file.
    pub const HEADER_SIZE: Range<usize> = 8..16;
    /// `uint64_t data_size`: bytes of payload after the header.
    pub const DATA_SIZE: Range<usize> = 16..24;
    /// `uint64_t neff_version_major`.
    pub const VERSION_MAJOR: Range<usize> = 24..32;
    /// `uint64_t neff_version_minor`.
    pub const VERSION_MINOR: Range<usize> = 32..40;
    /// `uint8_t neff_build_version[128]`, NUL-padded ASCII.
    pub const BUILD_VERSION: Range<usize> = 40..168;
    /// `uint32_t num_tpb`.
    pub const NUM_TPB: Range<usize> = 168..172;
    /// `uint8_t hash[32]`: MD5 in `[0..16]` (pkg 2) or SHA-256 (pkg 1).
    pub const HASH: Range<usize> = 172..204;
    /// `uint8_t uuid[16]`.
    pub const UUID: Range<usize> = 204..220;
    /// `char name[256]`, NUL-terminated.
    pub const NAME: Range<usize> = 220..476;
    /// `uint32_t requested_tpb_count`.
    pub const REQUESTED_TPB_COUNT: Range<usize> = 476..480;
    /// `uint8_t tpb_per_node[64]`.
    pub const TPB_PER_NODE: Range<usize> = 480..544;
    /// `uint64_t feature_bits`.
    pub const FEATURE_BITS: Range<usize> = 544..552;
    /// `uint32_t lnc_size`.
    pub const LNC_SIZE: Range<usize> = 552..556;
    /// `uint8_t pad[468]`.
    pub const PAD: Range<usize> = 556..1024;
}

const _: () = assert!(field::PAD.end == HEADER_SIZE);

/// How the stored digest's bytes are laid out (docs/format.md §2.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum DigestOrder {
    /// The digest's bytes as the algorithm defines them: neuronx-cc 2.0, and every SHA-256.
    Plain,
    /// Each 4-byte word of the MD5 digest reversed (its four state words written big-endian):
    /// neuronx-cc 2.18, 2.21 and 2.23, and `neff pack`.
    WordSwapped,
}

impl DigestOrder {
    /// `plain` or `word-swapped`, as the command and its JSON print it.
    pub const fn as_str(self) -> &'static str {
        match self {
            DigestOrder::Plain => "plain",
            DigestOrder::WordSwapped => "word-swapped",
        }
    }
}

/// An MD5 digest with each 4-byte word reversed ([`DigestOrder::WordSwapped`]). Applied twice
/// it gives the digest back.
pub fn word_swapped(md5: &[u8; 16]) -> [u8; 16] {
    let mut out = *md5;
    for word in out.chunks_exact_mut(4) {
        word.reverse();
    }
    out
}

/// A digest of the payload, as computed or as stored in the header: `algorithm` and its
/// [`digest_len`](HashAlgorithm::digest_len) bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct HashValue {
    algorithm: HashAlgorithm,
    /// Room for the longest digest; bytes past `digest_len` stay zero.
    bytes: [u8; 32],
}

impl HashValue {
    /// The first `algorithm.digest_len()` bytes of `bytes` (zero-filled when shorter).
    pub fn new(algorithm: HashAlgorithm, bytes: &[u8]) -> Self {
        let mut value = Self { algorithm, bytes: [0; 32] };
        for (dst, src) in value.bytes.iter_mut().zip(bytes.iter().take(algorithm.digest_len())) {
            *dst = *src;
        }
        value
    }

    /// Which digest.
    pub fn algorithm(&self) -> HashAlgorithm {
        self.algorithm
    }

    /// The digest's bytes (16 for MD5, 32 for SHA-256).
    pub fn as_bytes(&self) -> &[u8] {
        self.bytes.get(..self.algorithm.digest_len()).unwrap_or(&self.bytes)
    }
}

impl fmt::LowerHex for HashValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_bytes().iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Display for HashValue {
    /// Lowercase hex, as `md5sum` and `sha256sum` print a digest.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::LowerHex::fmt(self, f)
    }
}

impl fmt::Debug for HashValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}({self:x})", self.algorithm)
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for HashValue {
    /// The digest's bytes only (not the zero room after an MD5), in hex.
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "{}({=[u8]:02x})", self.algorithm, self.as_bytes());
    }
}

/// Outcome of the optional integrity check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Integrity {
    /// The check was not requested.
    NotRequested,
    /// The digest of the payload equals the header's `hash`, in `order`.
    Match {
        /// The byte order the header stores it in (always `Plain` for SHA-256).
        order: DigestOrder,
        /// The digest of the payload (in its plain order).
        computed: HashValue,
    },
    /// It does not, in any order real compilers write (reported as a warning; the load goes on).
    Mismatch {
        /// The digest of the payload (in its plain order).
        computed: HashValue,
        /// The header's `hash` bytes that were compared, as stored.
        stored: HashValue,
    },
    /// Requested, but this `pkg_version` names no digest.
    NotApplicable,
}

impl Integrity {
    /// The digest checked, when one was.
    pub fn algorithm(&self) -> Option<HashAlgorithm> {
        match self {
            Integrity::Match { computed, .. } | Integrity::Mismatch { computed, .. } => Some(computed.algorithm()),
            Integrity::NotRequested | Integrity::NotApplicable => None,
        }
    }

    /// `not-requested`, `match`, `mismatch` or `not-applicable`, as the JSON reports print it.
    pub const fn as_str(&self) -> &'static str {
        match self {
            Integrity::NotRequested => "not-requested",
            Integrity::Match { .. } => "match",
            Integrity::Mismatch { .. } => "mismatch",
            Integrity::NotApplicable => "not-applicable",
        }
    }
}

/// The NEFF UUID: 16 raw bytes, shown as 32 lowercase hex digits without dashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Uuid(pub [u8; 16]);

impl fmt::Display for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::LowerHex::fmt(self, f)
    }
}

impl fmt::LowerHex for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

/// A byte string shown as lossy UTF-8 (invalid sequences become U+FFFD).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Lossy<'a>(pub &'a [u8]);

impl fmt::Display for Lossy<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for chunk in self.0.utf8_chunks() {
            f.write_str(chunk.valid())?;
            if !chunk.invalid().is_empty() {
                f.write_str("\u{FFFD}")?;
            }
        }
        Ok(())
    }
}

/// A decoded `neff_header_t`. Parsing never fails; [`NeffHeader::validate`] applies the gates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct NeffHeader {
    /// 1 = raw tar + SHA-256, 2 = gzip tar + MD5.
    pub pkg_version: u64,
    /// Declared header size (1024 in every known file).
    pub header_size: u64,
    /// Payload bytes after the header.
    pub data_size: u64,
    /// `neff_version_major`.
    pub version_major: u64,
    /// `neff_version_minor`.
    pub version_minor: u64,
    /// Raw `neff_build_version` (see [`NeffHeader::build_version`]).
    pub build_version_raw: [u8; 128],
    /// `num_tpb`: cores needed.
    pub num_tpb: u32,
    /// Raw `hash` field.
    pub hash: [u8; 32],
    /// `uuid`.
    pub uuid: Uuid,
    /// Raw `name` (see [`NeffHeader::name`]).
    pub name_raw: [u8; 256],
    /// `requested_tpb_count`.
    pub requested_tpb_count: u32,
    /// `tpb_per_node`: one byte per kelf node.
    pub tpb_per_node: [u8; 64],
    /// `feature_bits`.
    pub feature_bits: u64,
    /// `lnc_size`: logical core size.
    pub lnc_size: u32,
    /// True when the 468 `pad` bytes are all zero (they are in every known file).
    pub pad_is_zero: bool,
}

fn array<const N: usize>(bytes: &[u8; HEADER_SIZE], range: Range<usize>) -> [u8; N] {
    let mut out = [0u8; N];
    if let Some(src) = bytes.get(range) {
        if src.len() == N {
            out.copy_from_slice(src);
        }
    }
    out
}

fn u64_at(bytes: &[u8; HEADER_SIZE], range: Range<usize>) -> u64 {
    u64::from_le_bytes(array(bytes, range))
}

fn u32_at(bytes: &[u8; HEADER_SIZE], range: Range<usize>) -> u32 {
    u32::from_le_bytes(array(bytes, range))
}

fn until_nul(bytes: &[u8]) -> &[u8] {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    bytes.get(..end).unwrap_or(bytes)
}

impl NeffHeader {
    /// Decodes the 1024 header bytes field by field.
    pub fn parse(bytes: &[u8; HEADER_SIZE]) -> Self {
        Self {
            pkg_version: u64_at(bytes, field::PKG_VERSION),
            header_size: u64_at(bytes, field::HEADER_SIZE),
            data_size: u64_at(bytes, field::DATA_SIZE),
            version_major: u64_at(bytes, field::VERSION_MAJOR),
            version_minor: u64_at(bytes, field::VERSION_MINOR),
            build_version_raw: array(bytes, field::BUILD_VERSION),
            num_tpb: u32_at(bytes, field::NUM_TPB),
            hash: array(bytes, field::HASH),
            uuid: Uuid(array(bytes, field::UUID)),
            name_raw: array(bytes, field::NAME),
            requested_tpb_count: u32_at(bytes, field::REQUESTED_TPB_COUNT),
            tpb_per_node: array(bytes, field::TPB_PER_NODE),
            feature_bits: u64_at(bytes, field::FEATURE_BITS),
            lnc_size: u32_at(bytes, field::LNC_SIZE),
            pad_is_zero: bytes.get(field::PAD).is_some_and(|p| p.iter().all(|&b| b == 0)),
        }
    }

    /// Applies the runtime gates of §2.5, in order. `file_size` is `None` for a pure stream:
    /// gates that need it (3, 6) are then left to the reader, which reports truncation.
    pub fn validate(&self, file_size: Option<u64>, allow_header_size_other_than_1024: bool) -> Result<(), HeaderError> {
        let header = HEADER_SIZE as u64;
        if let Some(file_size) = file_size {
            if file_size < header {
                return Err(HeaderError::ShortFile { received: file_size });
            }
        }
        if self.header_size != header && !allow_header_size_other_than_1024 {
            return Err(HeaderError::HeaderSizeNot1024 { header_size: self.header_size });
        }
        if let Some(file_size) = file_size {
            if self.header_size >= file_size {
                return Err(HeaderError::HeaderSizePastEnd { header_size: self.header_size, file_size });
            }
        }
        if self.version_major > MAX_VERSION_MAJOR {
            return Err(HeaderError::UnsupportedVersion { major: self.version_major, minor: self.version_minor });
        }
        let unknown_features = self.feature_bits & UNSUPPORTED_FEATURE_MASK;
        if self.version_major == 2 && unknown_features != 0 {
            return Err(HeaderError::NewerFeatures {
                major: self.version_major,
                minor: self.version_minor,
                features: unknown_features,
            });
        }
        if let Some(file_size) = file_size {
            // Gate 2 above returned for `file_size < 1024`.
            let available = file_size.saturating_sub(header);
            if self.data_size > available {
                return Err(HeaderError::DataSizePastEnd { data_size: self.data_size, available });
            }
        }
        if self.data_size == 0 {
            return Err(HeaderError::ZeroDataSize);
        }
        if !matches!(self.pkg_version, 1 | 2) {
            return Err(HeaderError::UnsupportedPackager { pkg_version: self.pkg_version });
        }
        Ok(())
    }

    /// `name` up to its first NUL.
    pub fn name_bytes(&self) -> &[u8] {
        until_nul(&self.name_raw)
    }

    /// `name` as lossy UTF-8, for display.
    pub fn name(&self) -> Lossy<'_> {
        Lossy(self.name_bytes())
    }

    /// `neff_build_version` up to its first NUL.
    pub fn build_version_bytes(&self) -> &[u8] {
        until_nul(&self.build_version_raw)
    }

    /// `neff_build_version` as lossy UTF-8, for display.
    pub fn build_version(&self) -> Lossy<'_> {
        Lossy(self.build_version_bytes())
    }

    /// The digest this `pkg_version` names, if any.
    pub fn hash_algorithm(&self) -> Option<HashAlgorithm> {
        match self.pkg_version {
            1 => Some(HashAlgorithm::Sha256),
            2 => Some(HashAlgorithm::Md5),
            _ => None,
        }
    }

    /// The stored digest bytes that are compared (`hash[0..16]` for MD5, `hash[0..32]` for SHA-256).
    pub fn expected_digest(&self, algorithm: HashAlgorithm) -> &[u8] {
        self.hash.get(..algorithm.digest_len()).unwrap_or(&self.hash)
    }
}

/// A payload digest computed while streaming (no buffering: each byte is fed once).
#[derive(Clone)]
pub enum PayloadHasher {
    /// No check requested (or none applicable).
    Off {
        /// Whether a check was requested at all.
        requested: bool,
    },
    /// pkg 2.
    Md5(md5::Md5),
    /// pkg 1.
    Sha256(sha2::Sha256),
}

impl fmt::Debug for PayloadHasher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PayloadHasher::Off { requested } => write!(f, "Off {{ requested: {requested} }}"),
            PayloadHasher::Md5(_) => f.write_str("Md5"),
            PayloadHasher::Sha256(_) => f.write_str("Sha256"),
        }
    }
}

impl PayloadHasher {
    /// The hasher for `header`, or `Off` when not requested.
    pub fn for_header(header: &NeffHeader, requested: bool) -> Self {
        match (requested, header.hash_algorithm()) {
            (true, Some(HashAlgorithm::Md5)) => PayloadHasher::Md5(md5::Md5::new()),
            (true, Some(HashAlgorithm::Sha256)) => PayloadHasher::Sha256(sha2::Sha256::new()),
            _ => PayloadHasher::Off { requested },
        }
    }

    /// True when bytes need feeding.
    pub fn is_active(&self) -> bool {
        !matches!(self, PayloadHasher::Off { .. })
    }

    /// Feeds payload bytes, in order.
    pub fn update(&mut self, bytes: &[u8]) {
        match self {
            PayloadHasher::Off { .. } => {}
            PayloadHasher::Md5(h) => h.update(bytes),
            PayloadHasher::Sha256(h) => h.update(bytes),
        }
    }

    /// Compares the digest with the header's `hash`: MD5 in either order real compilers
    /// write ([`DigestOrder`]; plain first), SHA-256 as is.
    pub fn finish(mut self, header: &NeffHeader) -> Integrity {
        self.finish_in_place(header)
    }

    /// [`PayloadHasher::finish`] where the hasher lies, leaving it `Off`: finalising by value
    /// would copy the digest state (up to 112 bytes) into another stack frame, and the
    /// firmware's stack has little room to spare.
    pub(crate) fn finish_in_place(&mut self, header: &NeffHeader) -> Integrity {
        let (computed, order) = match self {
            PayloadHasher::Off { requested: false } => return Integrity::NotRequested,
            PayloadHasher::Off { requested: true } => return Integrity::NotApplicable,
            PayloadHasher::Md5(h) => {
                let digest: [u8; 16] = h.finalize_reset().into();
                let stored = header.expected_digest(HashAlgorithm::Md5);
                let order = if stored == digest.as_slice() {
                    Some(DigestOrder::Plain)
                } else if stored == word_swapped(&digest).as_slice() {
                    Some(DigestOrder::WordSwapped)
                } else {
                    None
                };
                (HashValue::new(HashAlgorithm::Md5, &digest), order)
            }
            PayloadHasher::Sha256(h) => {
                let digest = h.finalize_reset();
                let matches = digest.as_slice() == header.expected_digest(HashAlgorithm::Sha256);
                (HashValue::new(HashAlgorithm::Sha256, &digest), matches.then_some(DigestOrder::Plain))
            }
        };
        *self = PayloadHasher::Off { requested: false };
        match order {
            Some(order) => Integrity::Match { order, computed },
            None => {
                let stored = HashValue::new(computed.algorithm(), header.expected_digest(computed.algorithm()));
                Integrity::Mismatch { computed, stored }
            }
        }
    }
}

neff_macros::refusal_messages!("schema/errors.toml", Header);

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::arithmetic_side_effects
)]
pub(crate) mod tests {
    use super::*;
    use crate::Status;

    extern crate std;
    use std::format;
    use std::string::ToString;

    /// A valid pkg-2 header for a payload of `data_size` bytes.
    pub(crate) fn header_bytes(data_size: u64) -> [u8; HEADER_SIZE] {
        let mut h = [0u8; HEADER_SIZE];
        h[field::PKG_VERSION].copy_from_slice(&2u64.to_le_bytes());
        h[field::HEADER_SIZE].copy_from_slice(&1024u64.to_le_bytes());
        h[field::DATA_SIZE].copy_from_slice(&data_size.to_le_bytes());
        h[field::VERSION_MAJOR].copy_from_slice(&2u64.to_le_bytes());
        h[field::NUM_TPB].copy_from_slice(&1u32.to_le_bytes());
        h[field::NAME][..9].copy_from_slice(b"file.neff");
        h[field::FEATURE_BITS].copy_from_slice(&0x209c00u64.to_le_bytes());
        h[field::LNC_SIZE].copy_from_slice(&2u32.to_le_bytes());
        h
    }

    fn set_u64(h: &mut [u8; HEADER_SIZE], r: Range<usize>, v: u64) {
        h[r].copy_from_slice(&v.to_le_bytes());
    }

    fn gate(h: &[u8; HEADER_SIZE], file_size: Option<u64>) -> Result<(), HeaderError> {
        NeffHeader::parse(h).validate(file_size, false)
    }

    #[test]
    fn parses_every_field_at_its_offset() {
        let mut h = header_bytes(100);
        h[field::BUILD_VERSION][..5].copy_from_slice(b"2.0.1");
        h[field::HASH][0] = 0xAB;
        h[field::HASH][31] = 0xCD;
        h[field::UUID].copy_from_slice(&[0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0, 1, 2, 3, 4, 5, 6, 0xff]);
        h[field::REQUESTED_TPB_COUNT].copy_from_slice(&7u32.to_le_bytes());
        h[field::TPB_PER_NODE][0] = 1;
        h[field::TPB_PER_NODE][63] = 9;
        set_u64(&mut h, field::VERSION_MINOR, 3);
        let p = NeffHeader::parse(&h);
        assert_eq!((p.pkg_version, p.header_size, p.data_size), (2, 1024, 100));
        assert_eq!((p.version_major, p.version_minor), (2, 3));
        assert_eq!(p.build_version().to_string(), "2.0.1");
        assert_eq!(p.num_tpb, 1);
        assert_eq!((p.hash[0], p.hash[31]), (0xAB, 0xCD));
        assert_eq!(p.uuid.to_string(), "0123456789abcdef00010203040506ff");
        assert_eq!(p.name().to_string(), "file.neff");
        assert_eq!(p.requested_tpb_count, 7);
        assert_eq!((p.tpb_per_node[0], p.tpb_per_node[63]), (1, 9));
        assert_eq!(p.feature_bits, 0x209c00);
        assert_eq!(p.lnc_size, 2);
        assert!(p.pad_is_zero);
        h[1023] = 1;
        assert!(!NeffHeader::parse(&h).pad_is_zero);
    }

    #[test]
    fn name_is_lossy_and_stops_at_nul() {
        let mut h = header_bytes(1);
        h[field::NAME][..6].copy_from_slice(b"a\xffb\0cd");
        assert_eq!(NeffHeader::parse(&h).name().to_string(), "a\u{FFFD}b");
        // A name filling all 256 bytes has no NUL and is kept whole.
        h[field::NAME].fill(b'x');
        assert_eq!(NeffHeader::parse(&h).name_bytes().len(), 256);
    }

    #[test]
    fn a_valid_header_passes() {
        let h = header_bytes(100);
        assert_eq!(gate(&h, Some(1124)), Ok(()));
        assert_eq!(gate(&h, None), Ok(()));
    }

    #[test]
    fn gate_2_short_file() {
        let e = gate(&header_bytes(1), Some(1023)).unwrap_err();
        assert_eq!(e, HeaderError::ShortFile { received: 1023 });
        assert_eq!(e.status(), Status::Invalid);
        assert_eq!(e.to_string(), "Invalid number of NEFF bytes received 3ff");
    }

    #[test]
    fn header_size_other_than_1024_is_refused_unless_allowed() {
        let mut h = header_bytes(10);
        set_u64(&mut h, field::HEADER_SIZE, 512);
        let e = gate(&h, Some(1034)).unwrap_err();
        assert_eq!(e, HeaderError::HeaderSizeNot1024 { header_size: 512 });
        assert_eq!(e.status(), Status::Invalid);
        assert_eq!(NeffHeader::parse(&h).validate(Some(1034), true), Ok(()));
    }

    #[test]
    fn gate_3_header_size_past_end_when_relaxed() {
        let mut h = header_bytes(10);
        set_u64(&mut h, field::HEADER_SIZE, 4096);
        let e = NeffHeader::parse(&h).validate(Some(2000), true).unwrap_err();
        assert_eq!(e, HeaderError::HeaderSizePastEnd { header_size: 4096, file_size: 2000 });
        assert_eq!(e.to_string(), "Invalid NEFF file size hdr sz: 1000, file sz: 7d0");
        assert_eq!(e.status(), Status::Invalid);
    }

    #[test]
    fn gate_4_major_above_2() {
        let mut h = header_bytes(10);
        set_u64(&mut h, field::VERSION_MAJOR, 3);
        set_u64(&mut h, field::VERSION_MINOR, 1);
        let e = gate(&h, Some(1034)).unwrap_err();
        assert_eq!(e, HeaderError::UnsupportedVersion { major: 3, minor: 1 });
        assert_eq!(e.status(), Status::UnsupportedNeffVersion);
        assert_eq!(e.to_string(), "NEFF version: 3.1 is not supported, accepted version range: 0.x-2.x");
    }

    #[test]
    fn gate_5_newer_features_only_for_major_2() {
        let mut h = header_bytes(10);
        set_u64(&mut h, field::FEATURE_BITS, 0x0800_0000 | 0x209c00);
        let e = gate(&h, Some(1034)).unwrap_err();
        assert_eq!(e, HeaderError::NewerFeatures { major: 2, minor: 0, features: 0x0800_0000 });
        assert_eq!(e.status(), Status::UnsupportedNeffVersion);
        let text = e.to_string();
        assert!(
            text.starts_with("This NEFF (version: 2.0, features: 0x8000000) has been compiled by a newer"),
            "{text}"
        );
        assert!(text.contains("Features supported by this Neuron Runtime: 0x7ffffff."), "{text}");
        // Bit 63 is outside the mask; major 1 is not checked at all.
        set_u64(&mut h, field::FEATURE_BITS, 1 << 63);
        assert_eq!(gate(&h, Some(1034)), Ok(()));
        set_u64(&mut h, field::FEATURE_BITS, 0x0800_0000);
        set_u64(&mut h, field::VERSION_MAJOR, 1);
        assert_eq!(gate(&h, Some(1034)), Ok(()));
    }

    #[test]
    fn gate_6_data_size_past_end_and_zero() {
        let h = header_bytes(11);
        let e = gate(&h, Some(1034)).unwrap_err();
        assert_eq!(e, HeaderError::DataSizePastEnd { data_size: 11, available: 10 });
        assert_eq!(e.to_string(), "Invalid NEFF data size(b vs a)");
        assert_eq!(e.status(), Status::Invalid);
        let e = gate(&header_bytes(0), Some(1034)).unwrap_err();
        assert_eq!(e, HeaderError::ZeroDataSize);
        assert_eq!(e.status(), Status::Invalid);
    }

    #[test]
    fn gate_7_packager() {
        for pkg in [0u64, 3, u64::MAX] {
            let mut h = header_bytes(10);
            set_u64(&mut h, field::PKG_VERSION, pkg);
            let e = gate(&h, Some(1034)).unwrap_err();
            assert_eq!(e, HeaderError::UnsupportedPackager { pkg_version: pkg });
            assert_eq!(e.status(), Status::UnsupportedNeffVersion);
            assert_eq!(e.to_string(), format!("Unsupported NEFF packager: {pkg}"));
        }
    }

    #[test]
    fn gates_run_in_the_runtime_order() {
        // Everything wrong at once: the version gate (4) wins over data size (6) and packager (7).
        let mut h = header_bytes(1 << 40);
        set_u64(&mut h, field::VERSION_MAJOR, 9);
        set_u64(&mut h, field::PKG_VERSION, 7);
        assert!(matches!(gate(&h, Some(2048)), Err(HeaderError::UnsupportedVersion { .. })));
        set_u64(&mut h, field::VERSION_MAJOR, 2);
        assert!(matches!(gate(&h, Some(2048)), Err(HeaderError::DataSizePastEnd { .. })));
        set_u64(&mut h, field::DATA_SIZE, 1);
        assert!(matches!(gate(&h, Some(2048)), Err(HeaderError::UnsupportedPackager { .. })));
    }

    /// `data_size`-byte payload `payload` under a header whose `hash` is `stored` (pkg 2: 16
    /// bytes, the tail as given; pkg 1: 32 bytes), checked after feeding `fed`.
    fn check(pkg: u64, stored: &[u8], fed: &[&[u8]]) -> Integrity {
        let mut h = header_bytes(fed.iter().map(|f| f.len() as u64).sum());
        set_u64(&mut h, field::PKG_VERSION, pkg);
        h[field::HASH][..stored.len()].copy_from_slice(stored);
        let parsed = NeffHeader::parse(&h);
        let mut hasher = PayloadHasher::for_header(&parsed, true);
        for f in fed {
            hasher.update(f);
        }
        hasher.finish(&parsed)
    }

    #[test]
    fn word_swapping_reverses_each_word_as_the_spec_example_shows() {
        // docs/format.md §2.6, NKIPY matmul_small: its MD5 and what its header stores.
        let md5: [u8; 16] =
            [0xef, 0xe9, 0xb3, 0xbc, 0x98, 0x16, 0x30, 0x77, 0xb9, 0x4c, 0x8b, 0xcd, 0xac, 0xf5, 0x1f, 0x47];
        let stored: [u8; 16] =
            [0xbc, 0xb3, 0xe9, 0xef, 0x77, 0x30, 0x16, 0x98, 0xcd, 0x8b, 0x4c, 0xb9, 0x47, 0x1f, 0xf5, 0xac];
        assert_eq!(word_swapped(&md5), stored);
        assert_eq!(word_swapped(&stored), md5);
        // The same as writing the four little-endian state words big-endian.
        let mut be = [0u8; 16];
        for (dst, src) in be.chunks_exact_mut(4).zip(md5.chunks_exact(4)) {
            dst.copy_from_slice(&u32::from_le_bytes(src.try_into().unwrap()).to_be_bytes());
        }
        assert_eq!(be, stored);
    }

    #[test]
    fn md5_matches_in_either_order_and_names_it() {
        let payload = b"payload bytes";
        let md5: [u8; 16] = md5::Md5::digest(payload).into();
        let computed = HashValue::new(HashAlgorithm::Md5, &md5);
        // The two orders side by side, each fed in pieces; the tail is never compared.
        for (stored, order) in [(md5, DigestOrder::Plain), (word_swapped(&md5), DigestOrder::WordSwapped)] {
            let mut with_tail = [b'0'; 32];
            with_tail[..16].copy_from_slice(&stored);
            assert_eq!(check(2, &with_tail, &[&payload[..4], &payload[4..]]), Integrity::Match { order, computed });
            assert_eq!(check(2, &stored, &[payload]), Integrity::Match { order, computed });
        }
        assert_eq!(computed.as_bytes(), md5.as_slice());
        assert_eq!(std::format!("{computed}"), "964ee5c7d5d3cabd4f6448d45817e27f");
        assert_eq!(Integrity::Match { order: DigestOrder::Plain, computed }.algorithm(), Some(HashAlgorithm::Md5));
    }

    #[test]
    fn md5_mismatch_carries_both_values() {
        let payload = b"payload bytes";
        let md5: [u8; 16] = md5::Md5::digest(payload).into();
        // Other bytes fed, and one byte of the stored digest changed, in either order.
        let other: [u8; 16] = md5::Md5::digest(b"payload byteS").into();
        let mut one_off = word_swapped(&md5);
        one_off[15] ^= 1;
        let mut other_words = md5;
        other_words.swap(0, 4); // neither order: words moved, not reversed
        for stored in [other, one_off, other_words] {
            let got = check(2, &stored, &[payload]);
            let want = Integrity::Mismatch {
                computed: HashValue::new(HashAlgorithm::Md5, &md5),
                stored: HashValue::new(HashAlgorithm::Md5, &stored),
            };
            assert_eq!(got, want);
            assert_eq!(got.as_str(), "mismatch");
            let Integrity::Mismatch { computed, stored: s } = got else { unreachable!() };
            assert_eq!((computed.as_bytes(), s.as_bytes()), (md5.as_slice(), stored.as_slice()));
        }
    }

    #[test]
    fn sha256_compares_32_bytes_in_the_plain_order_only() {
        let payload = b"payload bytes";
        let sha: [u8; 32] = sha2::Sha256::digest(payload).into();
        let computed = HashValue::new(HashAlgorithm::Sha256, &sha);
        assert_eq!(check(1, &sha, &[payload]), Integrity::Match { order: DigestOrder::Plain, computed });
        assert_eq!(computed.as_bytes().len(), 32);
        // The last byte counts (32 are compared), and no word order is tried for SHA-256.
        let mut last = sha;
        last[31] ^= 1;
        let mut swapped = sha;
        for word in swapped.chunks_exact_mut(4) {
            word.reverse();
        }
        for stored in [last, swapped] {
            let want = Integrity::Mismatch { computed, stored: HashValue::new(HashAlgorithm::Sha256, &stored) };
            assert_eq!(check(1, &stored, &[payload]), want);
        }
    }

    #[test]
    fn integrity_is_never_computed_unless_requested() {
        let h = NeffHeader::parse(&header_bytes(5));
        let mut off = PayloadHasher::for_header(&h, false);
        assert!(!off.is_active());
        off.update(b"bytes");
        assert_eq!(off.finish(&h), Integrity::NotRequested);
        assert_eq!(Integrity::NotRequested.algorithm(), None);
        // A packager with no digest (the gates refuse it before any load; the hasher still says so).
        let mut h = header_bytes(5);
        set_u64(&mut h, field::PKG_VERSION, 3);
        let h = NeffHeader::parse(&h);
        assert_eq!(PayloadHasher::for_header(&h, true).finish(&h), Integrity::NotApplicable);
    }

    #[test]
    fn warnings_use_the_runtime_wording() {
        assert_eq!(HeaderWarning::IntegrityMismatch { algorithm: HashAlgorithm::Md5 }.to_string(), "MD5 mismatch!");
        assert_eq!(
            HeaderWarning::IntegrityMismatch { algorithm: HashAlgorithm::Sha256 }.to_string(),
            "SHA256 mismatch!"
        );
    }
}
