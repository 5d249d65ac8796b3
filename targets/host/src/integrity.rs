//! The header hash as the command shows it (spec §2.6): the outcome of `--verify` as a line of
//! text, as the `hash` object of `info --json` and `load --json`, and as the rejection a
//! mismatch is under `--verify` (the runtime's `MD5 mismatch!` / `SHA256 mismatch!`, with
//! both values).
//!
//! The core computes the digest while the payload streams past and tries both byte orders
//! real compilers write; this module only words its [`Integrity`].

use neff::header::{field, DigestOrder, HashAlgorithm, HeaderWarning, Integrity};
use serde::Serialize;

use crate::error::CliError;
use crate::header_view::{hex, HeaderView};

/// The `hash` object of `info --json` and `load --json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HashJson {
    /// `md5` (pkg_version 2) or `sha256` (pkg_version 1).
    pub algorithm: Option<&'static str>,
    /// The header bytes a check compares, as stored: `hash[0..16]` for MD5 (32 hex digits),
    /// `hash[0..32]` for SHA-256.
    pub stored: String,
    /// `not-requested` (no `--verify`), `match`, `mismatch` or `not-applicable`.
    pub result: &'static str,
    /// On a match, how the header stores the digest: `plain` or `word-swapped`; else `null`.
    pub order: Option<&'static str>,
    /// The digest of the payload `data[0..data_size]`, in its plain order; `null` unless verified.
    pub computed: Option<String>,
}

/// The digest `pkg_version` names: what `neff_header_t` says (the gates refuse other values).
fn algorithm_of(pkg_version: u64) -> Option<HashAlgorithm> {
    match pkg_version {
        1 => Some(HashAlgorithm::Sha256),
        2 => Some(HashAlgorithm::Md5),
        _ => None,
    }
}

/// `md5` / `sha256`, as the JSON prints it.
pub fn json_name(algorithm: HashAlgorithm) -> &'static str {
    match algorithm {
        HashAlgorithm::Md5 => "md5",
        HashAlgorithm::Sha256 => "sha256",
    }
}

/// `MD5` / `SHA-256`, as the text prints it.
pub fn text_name(algorithm: HashAlgorithm) -> &'static str {
    match algorithm {
        HashAlgorithm::Md5 => "MD5",
        HashAlgorithm::Sha256 => "SHA-256",
    }
}

/// The `hash` object for `header` and the outcome of the pass.
pub fn hash_json(header: &HeaderView, integrity: &Integrity) -> HashJson {
    let (order, computed) = match integrity {
        Integrity::Match { order, computed } => (Some(order.as_str()), Some(computed.to_string())),
        Integrity::Mismatch { computed, .. } => (None, Some(computed.to_string())),
        Integrity::NotRequested | Integrity::NotApplicable => (None, None),
    };
    HashJson {
        algorithm: algorithm_of(header.pkg_version).map(json_name),
        stored: stored_hex(header),
        result: integrity.as_str(),
        order,
        computed,
    }
}

/// How a digest in `order` is stored (spec §2.6). The order only: which compiler wrote a file
/// is not known from its digest (a 2.27 file may store it plain).
fn order_text(order: DigestOrder) -> &'static str {
    match order {
        DigestOrder::Plain => "plain order (the digest's bytes as computed)",
        DigestOrder::WordSwapped => "word-swapped order (each 4-byte word of the digest reversed)",
    }
}

/// The header bytes a check compares, as stored, in hex.
fn stored_hex(header: &HeaderView) -> String {
    let len = algorithm_of(header.pkg_version).map_or(header.hash.len(), HashAlgorithm::digest_len);
    hex(header.hash.get(..len).unwrap_or(&header.hash))
}

/// The outcome in one line, with both values: e.g. `MD5 match, word-swapped order (each 4-byte
/// word of the digest reversed): payload efe9...1f47, header bcb3...f5ac`.
pub fn verify_text(header: &HeaderView, integrity: &Integrity) -> String {
    match integrity {
        Integrity::NotRequested => "not requested".to_owned(),
        Integrity::NotApplicable => "not applicable: this pkg_version names no digest".to_owned(),
        Integrity::Match { order, computed } => {
            let how = match computed.algorithm() {
                HashAlgorithm::Md5 => format!(", {}", order_text(*order)),
                HashAlgorithm::Sha256 => String::new(),
            };
            let name = text_name(computed.algorithm());
            format!("{name} match{how}: payload {computed}, header {}", stored_hex(header))
        }
        Integrity::Mismatch { computed, stored } => mismatch_text(computed, stored),
    }
}

/// `MD5 mismatch! payload ..., header ...`: the runtime's words, then both values.
fn mismatch_text(computed: &neff::header::HashValue, stored: &neff::header::HashValue) -> String {
    let algorithm = computed.algorithm();
    let runtime = HeaderWarning::IntegrityMismatch { algorithm };
    let orders = match algorithm {
        HashAlgorithm::Md5 => " (neither plain nor word-swapped)",
        HashAlgorithm::Sha256 => "",
    };
    format!("{runtime} payload {computed}, header {stored}{orders}")
}

/// Under `--verify`, a mismatch is a rejection (exit 1), as in a runtime asked to verify:
/// `header: MD5 mismatch! ... (byte 172)` and hints. `None` for any other outcome.
pub fn mismatch_error(integrity: &Integrity) -> Option<CliError> {
    let Integrity::Mismatch { computed, stored } = integrity else { return None };
    let status = neff::Status::Invalid;
    Some(CliError::Rejected {
        message: format!("header: {} (byte {})", mismatch_text(computed, stored), field::HASH.start),
        hints: vec![
            "the payload data[0..data_size] is not what was hashed when the NEFF was written: damaged or changed since"
                .to_owned(),
            format!("runtime status {} ({}) when a load is asked to verify", status.name(), status.code()),
        ],
        fault: Some(Box::new(crate::error::Fault {
            code: neff::WarningKind::Header(HeaderWarning::IntegrityMismatch { algorithm: computed.algorithm() })
                .code(),
            status,
            stage: neff::error::Stage::Header.name(),
            member: None,
            key_path: None,
            offset: Some((field::HASH.start as u64, "file")),
            reason: mismatch_text(computed, stored),
            warnings: Vec::new(),
        })),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use neff::header::HashValue;

    fn view(pkg_version: u64, hash: [u8; 32]) -> HeaderView {
        HeaderView {
            pkg_version,
            header_size: 1024,
            data_size: 10240,
            neff_version_major: 2,
            neff_version_minor: 0,
            build_version: String::new(),
            num_tpb: 1,
            hash,
            uuid: [0; 16],
            name: "file.neff".into(),
            requested_tpb_count: 1,
            tpb_per_node: [0; 64],
            feature_bits: 0,
            lnc_size: 1,
        }
    }

    /// matmul_small's MD5 and its stored form (spec §2.6).
    const MD5: [u8; 16] =
        [0xef, 0xe9, 0xb3, 0xbc, 0x98, 0x16, 0x30, 0x77, 0xb9, 0x4c, 0x8b, 0xcd, 0xac, 0xf5, 0x1f, 0x47];

    fn stored_hash() -> [u8; 32] {
        let mut hash = [0u8; 32];
        hash[..16].copy_from_slice(&neff::header::word_swapped(&MD5));
        hash
    }

    #[test]
    fn a_match_names_its_order_in_text_and_json() {
        let computed = HashValue::new(HashAlgorithm::Md5, &MD5);
        let m = Integrity::Match { order: DigestOrder::WordSwapped, computed };
        assert_eq!(
            verify_text(&view(2, stored_hash()), &m),
            "MD5 match, word-swapped order (each 4-byte word of the digest reversed): \
             payload efe9b3bc98163077b94c8bcdacf51f47, header bcb3e9ef77301698cd8b4cb9471ff5ac"
        );
        let json = serde_json::to_string(&hash_json(&view(2, stored_hash()), &m)).unwrap();
        assert_eq!(
            json,
            r#"{"algorithm":"md5","stored":"bcb3e9ef77301698cd8b4cb9471ff5ac","result":"match","order":"word-swapped","computed":"efe9b3bc98163077b94c8bcdacf51f47"}"#
        );
        let plain = Integrity::Match { order: DigestOrder::Plain, computed };
        let mut plain_hash = [0u8; 32];
        plain_hash[..16].copy_from_slice(&MD5);
        assert_eq!(
            verify_text(&view(2, plain_hash), &plain),
            "MD5 match, plain order (the digest's bytes as computed): \
             payload efe9b3bc98163077b94c8bcdacf51f47, header efe9b3bc98163077b94c8bcdacf51f47"
        );
        assert!(mismatch_error(&m).is_none());
    }

    #[test]
    fn not_requested_keeps_the_stored_value_and_nulls() {
        let json = serde_json::to_string(&hash_json(&view(2, stored_hash()), &Integrity::NotRequested)).unwrap();
        assert_eq!(
            json,
            r#"{"algorithm":"md5","stored":"bcb3e9ef77301698cd8b4cb9471ff5ac","result":"not-requested","order":null,"computed":null}"#
        );
        // pkg 1: the 32 bytes of a SHA-256.
        let h = hash_json(&view(1, [0xab; 32]), &Integrity::NotRequested);
        assert_eq!((h.algorithm, h.stored.len()), (Some("sha256"), 64));
    }

    #[test]
    fn a_mismatch_is_the_runtimes_words_with_both_values() {
        let computed = HashValue::new(HashAlgorithm::Md5, &MD5);
        let stored = HashValue::new(HashAlgorithm::Md5, &[0x11; 16]);
        let e = mismatch_error(&Integrity::Mismatch { computed, stored }).unwrap();
        assert_eq!(e.exit_code(), crate::error::EXIT_REJECTED);
        assert_eq!(
            e.to_string(),
            "header: MD5 mismatch! payload efe9b3bc98163077b94c8bcdacf51f47, \
             header 11111111111111111111111111111111 (neither plain nor word-swapped) (byte 172)"
        );
        let sha = Integrity::Mismatch {
            computed: HashValue::new(HashAlgorithm::Sha256, &[0x22; 32]),
            stored: HashValue::new(HashAlgorithm::Sha256, &[0x33; 32]),
        };
        let text = mismatch_error(&sha).unwrap().to_string();
        assert_eq!(
            text,
            format!("header: SHA256 mismatch! payload {}, header {} (byte 172)", "22".repeat(32), "33".repeat(32))
        );
        let sha_match = Integrity::Match {
            order: DigestOrder::Plain,
            computed: HashValue::new(HashAlgorithm::Sha256, &[0x33; 32]),
        };
        assert_eq!(
            verify_text(&view(1, [0x33; 32]), &sha_match),
            format!("SHA-256 match: payload {0}, header {0}", "33".repeat(32))
        );
        let json = hash_json(&view(1, [0x33; 32]), &sha);
        assert_eq!((json.result, json.order, json.computed), ("mismatch", None, Some("22".repeat(32))));
    }
}
