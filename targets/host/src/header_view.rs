//! The NEFF header as the command shows it: [`HeaderView`] (owned fields), its JSON form for
//! `info --json` ([`HeaderJson`], keys in the order of `spec/cli-contract.md`) and the
//! `header.json` that `unpack` writes and `pack` reads ([`HeaderFile`]).
//!
//! `header.json` is input (`pack` reads it): its parsers use no unchecked arithmetic.
#![deny(clippy::arithmetic_side_effects)]

use serde::{Deserialize, Serialize};

use crate::writer::{HeaderFields, TPB_PER_NODE_LEN};

/// Every field of the 1024-byte `neff_header_t`, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderView {
    /// `pkg_version`: 1 raw tar + SHA-256, 2 gzip + MD5.
    pub pkg_version: u64,
    /// `header_size`.
    pub header_size: u64,
    /// `data_size`: bytes of payload after the header.
    pub data_size: u64,
    /// `neff_version_major`.
    pub neff_version_major: u64,
    /// `neff_version_minor`.
    pub neff_version_minor: u64,
    /// `neff_build_version` up to its NUL, lossy UTF-8.
    pub build_version: String,
    /// `num_tpb`.
    pub num_tpb: u32,
    /// `hash`, as stored.
    pub hash: [u8; 32],
    /// `uuid`.
    pub uuid: [u8; 16],
    /// `name` up to its NUL, lossy UTF-8.
    pub name: String,
    /// `requested_tpb_count`.
    pub requested_tpb_count: u32,
    /// `tpb_per_node`.
    pub tpb_per_node: [u8; TPB_PER_NODE_LEN],
    /// `feature_bits`.
    pub feature_bits: u64,
    /// `lnc_size`.
    pub lnc_size: u32,
}

/// The `header` object of `neff info --json`, keys in contract order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeaderJson {
    /// `pkg_version`.
    pub pkg_version: u64,
    /// `header_size`.
    pub header_size: u64,
    /// `data_size`.
    pub data_size: u64,
    /// `"MAJOR.MINOR"`.
    pub neff_version: String,
    /// The build string.
    pub build_version: String,
    /// `num_tpb`.
    pub num_tpb: u32,
    /// 32 lowercase hex digits.
    pub uuid: String,
    /// The NEFF's name.
    pub name: String,
    /// `requested_tpb_count`.
    pub requested_tpb_count: u32,
    /// `feature_bits`.
    pub feature_bits: u64,
    /// `lnc_size`.
    pub lnc_size: u32,
}

/// `DIR/header.json`: the `info --json` header object plus what `pack` needs to rebuild the
/// same header and the same member order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeaderFile {
    /// The fields `info --json` prints.
    #[serde(flatten)]
    pub header: HeaderJson,
    /// The stored `hash`, 64 hex digits (informational: `pack` recomputes it).
    #[serde(default)]
    pub hash: String,
    /// `tpb_per_node`, all 64 entries.
    pub tpb_per_node: Vec<u8>,
    /// Member paths in tar order.
    #[serde(default)]
    pub members: Vec<String>,
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Parses exactly `N` bytes of hex.
pub fn parse_hex<const N: usize>(text: &str) -> Result<[u8; N], String> {
    let t = text.trim();
    // N is an array length of this program (16 or 32): doubling it cannot saturate.
    let digits = N.saturating_mul(2);
    let refused = || format!("expected {digits} hex digits, found {t:?}");
    if t.len() != digits {
        return Err(refused());
    }
    let hex = |c: &u8| char::from(*c).to_digit(16).ok_or_else(refused);
    let mut out = [0u8; N];
    for (b, pair) in out.iter_mut().zip(t.as_bytes().chunks_exact(2)) {
        let [high, low] = pair else { return Err(refused()) };
        // Two hex digits: at most 0xff.
        *b = u8::try_from(hex(high)? << 4 | hex(low)?).map_err(|_| refused())?;
    }
    Ok(out)
}

/// Parses `"MAJOR.MINOR"`.
pub fn parse_version(text: &str) -> Result<(u64, u64), String> {
    let (major, minor) = text.split_once('.').ok_or_else(|| format!("expected MAJOR.MINOR, found {text:?}"))?;
    let major = major.parse().map_err(|_| format!("bad major version in {text:?}"))?;
    let minor = minor.parse().map_err(|_| format!("bad minor version in {text:?}"))?;
    Ok((major, minor))
}

/// Names of the `feature_bits` the format spec knows (§2.7), lowest bit first.
pub const FEATURE_NAMES: [(u64, &str); 22] = [
    (0x2, "collective_has_offset"),
    (0x4, "custom_ops"),
    (0x8, "coalesced_ccops"),
    (0x10, "queue_set_instances"),
    (0x20, "has_functions"),
    (0x40, "dynamic_pwp"),
    (0x80, "indirect_memcpy_32b_sem_wait"),
    (0x100, "indirect_memcpy_bound_check"),
    (0x200, "DMA_desc_higher_dim"),
    (0x400, "vnc"),
    (0x800, "dve_perf_mode"),
    (0x1000, "DGE"),
    (0x2000, "POOL_RSQRT"),
    (0x4000, "remote_sem"),
    (0x8000, "DGE_cast"),
    (0x10000, "vector_DGE"),
    (0x20000, "embedding_stride32"),
    (0x100000, "SQI_no_rearm"),
    (0x200000, "hardware_DGE"),
    (0x400000, "partial_sb2sb_ccop"),
    (0x1000000, "arch_gt_39"),
    (0x2000000, "large_tensor_support"),
];

/// `feature_bits` as names; unnamed bits print as hex.
pub fn feature_names(bits: u64) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = bits;
    for (bit, name) in FEATURE_NAMES {
        if bits & bit != 0 {
            names.push(name.to_owned());
            rest &= !bit;
        }
    }
    for i in 0..64 {
        if rest & (1u64 << i) != 0 {
            names.push(format!("0x{:x}", 1u64 << i));
        }
    }
    names
}

impl HeaderView {
    /// The `info --json` header object.
    pub fn to_json(&self) -> HeaderJson {
        HeaderJson {
            pkg_version: self.pkg_version,
            header_size: self.header_size,
            data_size: self.data_size,
            neff_version: format!("{}.{}", self.neff_version_major, self.neff_version_minor),
            build_version: self.build_version.clone(),
            num_tpb: self.num_tpb,
            uuid: hex(&self.uuid),
            name: self.name.clone(),
            requested_tpb_count: self.requested_tpb_count,
            feature_bits: self.feature_bits,
            lnc_size: self.lnc_size,
        }
    }

    /// The `header.json` document, with the member order.
    pub fn to_file(&self, members: Vec<String>) -> HeaderFile {
        HeaderFile { header: self.to_json(), hash: hex(&self.hash), tpb_per_node: self.tpb_per_node.to_vec(), members }
    }

    /// `tpb_per_node` without its trailing zeros.
    pub fn tpb_per_node_used(&self) -> &[u8] {
        // An index below 64.
        let used = self.tpb_per_node.iter().rposition(|&b| b != 0).map_or(0, |i| i.saturating_add(1));
        &self.tpb_per_node[..used]
    }

    /// Human-readable lines, `key  value`.
    pub fn human_lines(&self) -> Vec<(String, String)> {
        let packaging = match self.pkg_version {
            1 => "raw tar, SHA-256",
            2 => "gzip, MD5",
            _ => "unknown",
        };
        let hash_len = if self.pkg_version == 1 { 32 } else { 16 };
        let features = feature_names(self.feature_bits);
        vec![
            ("pkg_version".into(), format!("{} ({packaging})", self.pkg_version)),
            ("header_size".into(), self.header_size.to_string()),
            ("data_size".into(), self.data_size.to_string()),
            ("neff_version".into(), format!("{}.{}", self.neff_version_major, self.neff_version_minor)),
            ("build_version".into(), format!("{:?}", self.build_version)),
            ("num_tpb".into(), self.num_tpb.to_string()),
            ("uuid".into(), hex(&self.uuid)),
            ("name".into(), self.name.clone()),
            ("requested_tpb_count".into(), self.requested_tpb_count.to_string()),
            ("tpb_per_node".into(), format!("{:?}", self.tpb_per_node_used())),
            (
                "feature_bits".into(),
                if features.is_empty() {
                    format!("0x{:x}", self.feature_bits)
                } else {
                    format!("0x{:x} ({})", self.feature_bits, features.join(", "))
                },
            ),
            ("lnc_size".into(), self.lnc_size.to_string()),
            ("hash".into(), format!("{} (stored, not verified)", hex(&self.hash[..hash_len]))),
        ]
    }
}

impl HeaderFile {
    /// The writer's header fields; `pkg_version` overrides the file's when given.
    pub fn to_fields(&self, pkg_version: Option<u64>) -> Result<HeaderFields, String> {
        let h = &self.header;
        let (major, minor) = parse_version(&h.neff_version).map_err(|e| format!("neff_version: {e}"))?;
        let uuid = parse_hex::<16>(&h.uuid).map_err(|e| format!("uuid: {e}"))?;
        if self.tpb_per_node.len() > TPB_PER_NODE_LEN {
            return Err(format!("tpb_per_node: at most {TPB_PER_NODE_LEN} entries, found {}", self.tpb_per_node.len()));
        }
        let mut tpb_per_node = [0u8; TPB_PER_NODE_LEN];
        tpb_per_node[..self.tpb_per_node.len()].copy_from_slice(&self.tpb_per_node);
        Ok(HeaderFields {
            pkg_version: pkg_version.unwrap_or(h.pkg_version),
            neff_version_major: major,
            neff_version_minor: minor,
            build_version: h.build_version.clone(),
            num_tpb: h.num_tpb,
            uuid,
            name: h.name.clone(),
            requested_tpb_count: h.requested_tpb_count,
            tpb_per_node,
            feature_bits: h.feature_bits,
            lnc_size: h.lnc_size,
        })
    }
}

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips() {
        let bytes = [0x00, 0x9c, 0x20, 0xff];
        assert_eq!(hex(&bytes), "009c20ff");
        assert_eq!(parse_hex::<4>("009C20ff"), Ok(bytes));
        assert_eq!(parse_hex::<4>(" 009c20ff\n"), Ok(bytes));
        assert_eq!(parse_hex::<4>("009c20f"), Err(r#"expected 8 hex digits, found "009c20f""#.to_owned()));
        assert_eq!(parse_hex::<4>("009c20fg"), Err(r#"expected 8 hex digits, found "009c20fg""#.to_owned()));
        // Eight bytes but not eight digits: never sliced inside a character.
        assert_eq!(parse_hex::<4>("00é20ff"), Err(r#"expected 8 hex digits, found "00é20ff""#.to_owned()));
        assert_eq!(parse_hex::<2>("+1ff"), Err(r#"expected 4 hex digits, found "+1ff""#.to_owned()));
    }

    #[test]
    fn versions_parse_major_dot_minor() {
        assert_eq!(parse_version("2.0"), Ok((2, 0)));
        assert_eq!(parse_version("1.12"), Ok((1, 12)));
        assert_eq!(parse_version("2"), Err(r#"expected MAJOR.MINOR, found "2""#.to_owned()));
        assert_eq!(parse_version("2.x"), Err(r#"bad minor version in "2.x""#.to_owned()));
        assert_eq!(parse_version("-1.0"), Err(r#"bad major version in "-1.0""#.to_owned()));
        assert_eq!(parse_version("1.2.3"), Err(r#"bad minor version in "1.2.3""#.to_owned()));
        assert_eq!(
            parse_version("18446744073709551616.0"),
            Err(r#"bad major version in "18446744073709551616.0""#.to_owned())
        );
    }

    #[test]
    fn feature_names_decode_the_real_bits() {
        assert_eq!(feature_names(0x209c00), ["vnc", "dve_perf_mode", "DGE", "DGE_cast", "hardware_DGE"]);
        assert_eq!(feature_names(0x8000_0000_0000_0400), ["vnc", "0x8000000000000000"]);
    }

    /// The small real NEFF's header, with `tpb_per_node`.
    fn sample_view(tpb_per_node: [u8; 64]) -> HeaderView {
        HeaderView {
            pkg_version: 2,
            header_size: 1024,
            data_size: 61440,
            neff_version_major: 2,
            neff_version_minor: 0,
            build_version: String::new(),
            num_tpb: 1,
            hash: [0; 32],
            uuid: [0xab; 16],
            name: "file.neff".into(),
            requested_tpb_count: 1,
            tpb_per_node,
            feature_bits: 0x209c00,
            lnc_size: 2,
        }
    }

    #[test]
    fn header_json_fields_are_refused_with_the_field_named() {
        let view = sample_view([1; 64]);
        let good = view.to_file(vec![]);
        let fields = good.to_fields(Some(1)).unwrap();
        assert_eq!((fields.pkg_version, fields.neff_version_major, fields.uuid), (1, 2, [0xab; 16]));
        assert_eq!(good.to_fields(None).unwrap().pkg_version, 2);

        let mut bad = good.clone();
        bad.header.neff_version = "2".into();
        assert_eq!(bad.to_fields(None).unwrap_err(), r#"neff_version: expected MAJOR.MINOR, found "2""#);
        let mut bad = good.clone();
        bad.header.uuid = "ab".repeat(15);
        assert_eq!(
            bad.to_fields(None).unwrap_err(),
            format!(r#"uuid: expected 32 hex digits, found "{}""#, "ab".repeat(15))
        );
        let mut bad = good.clone();
        bad.tpb_per_node.push(0);
        assert_eq!(bad.to_fields(None).unwrap_err(), "tpb_per_node: at most 64 entries, found 65");
        // Fewer entries are padded with zeros.
        let mut short = good.clone();
        short.tpb_per_node.truncate(2);
        let mut want = [0u8; 64];
        want[..2].fill(1);
        assert_eq!(short.to_fields(None).unwrap().tpb_per_node, want);
    }

    #[test]
    fn header_json_keys_follow_the_contract_order() {
        let view = sample_view([0; 64]);
        let text = serde_json::to_string(&view.to_json()).unwrap();
        let order = [
            "pkg_version",
            "header_size",
            "data_size",
            "neff_version",
            "build_version",
            "num_tpb",
            "uuid",
            "name",
            "requested_tpb_count",
            "feature_bits",
            "lnc_size",
        ];
        let positions: Vec<usize> = order.iter().map(|k| text.find(&format!("\"{k}\"")).unwrap()).collect();
        assert!(positions.windows(2).all(|w| w[0] < w[1]), "{text}");
        assert!(text.contains("\"neff_version\":\"2.0\""));
        assert!(text.contains(&format!("\"uuid\":\"{}\"", "ab".repeat(16))));
    }
}
