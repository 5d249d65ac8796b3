//! What the header gates refuse and what they notice (`neff_header_t`, docs/format.md §2.5).

neff_macros::refusals!("schema/errors.toml", Header);

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
