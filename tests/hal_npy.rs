//! The `.npy` header parser: hand-built headers fed in chunks of 1, 3 and whole, malformed
//! headers, and the `.npy` members of the real NEFFs (extracted independently with
//! `flate2` + `tar`) staged into a digest-only SimDevice.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::io::Read;

use neff::digest::digest64;
use neff::error::CapacityError;
use neff::hal::{AllocRequest, Hal};
use neff::manifest::{Arch, UsageClass};
use neff::npy::{ByteOrder, DtypeKind, NpyError, NpyFeed, NpyHeader, NpyParser, NpyVersion};
use neff::sim::SimDevice;

/// A `.npy` file: magic, version, header length (u16 for v1, u32 otherwise), `dict`, `data`.
fn npy(major: u8, dict: &str, data: &[u8]) -> Vec<u8> {
    let mut out = b"\x93NUMPY".to_vec();
    out.extend([major, 0]);
    if major == 1 {
        out.extend((dict.len() as u16).to_le_bytes());
    } else {
        out.extend((dict.len() as u32).to_le_bytes());
    }
    out.extend(dict.as_bytes());
    out.extend(data);
    out
}

/// `dict` padded with spaces and a final newline so that the data starts at a multiple of
/// 64, as numpy writes it.
fn padded(dict: &str, preamble: usize) -> String {
    let total = (preamble + dict.len() + 1).div_ceil(64) * 64;
    format!("{dict}{}\n", " ".repeat(total - preamble - dict.len() - 1))
}

const CHUNKINGS: [usize; 3] = [1, 3, usize::MAX];

/// Feeds `file` in chunks of `chunk` bytes; returns the header and the bytes after it.
fn feed<const CAP: usize>(file: &[u8], chunk: usize) -> Result<(NpyHeader, Vec<u8>), NpyError> {
    let mut parser = NpyParser::<CAP>::new();
    let mut data = Vec::new();
    for part in file.chunks(chunk.min(file.len()).max(1)) {
        match parser.feed(part)? {
            NpyFeed::NeedMore => {}
            NpyFeed::Complete { header_bytes, .. } => data.extend(&part[header_bytes..]),
        }
    }
    let header = parser.finish()?;
    assert_eq!(parser.consumed(), header.data_offset);
    Ok((header, data))
}

/// The same outcome for every chunking; returns it.
fn feed_all<const CAP: usize>(file: &[u8]) -> Result<(NpyHeader, Vec<u8>), NpyError> {
    let results: Vec<_> = CHUNKINGS.iter().map(|&c| feed::<CAP>(file, c)).collect();
    for (chunk, result) in CHUNKINGS.iter().zip(&results) {
        assert_eq!(result, &results[0], "chunks of {chunk}");
    }
    results.into_iter().next().unwrap()
}

#[test]
fn nkipy_sample_header() {
    let dict = "{'descr': '<f2', 'fortran_order': False, 'shape': (128, 128, 1, 1), }";
    let header = padded(dict, 10);
    assert_eq!(header.len(), 0x76, "the sample's HEADER_LEN");
    let data: Vec<u8> = (0..32768u32).map(|i| (i * 7) as u8).collect();
    let file = npy(1, &header, &data);
    assert_eq!(&file[..10], b"\x93NUMPY\x01\x00\x76\x00");
    assert_eq!(file.len(), 32896);

    let (parsed, rest) = feed_all::<256>(&file).unwrap();
    assert_eq!(parsed.version, NpyVersion { major: 1, minor: 0 });
    assert_eq!(parsed.descr.kind, DtypeKind::Float);
    assert_eq!(parsed.descr.byte_order, ByteOrder::Little);
    assert_eq!(parsed.descr.item_size, 2);
    assert_eq!(parsed.descr.to_string(), "<f2");
    assert!(!parsed.fortran_order);
    assert_eq!(parsed.shape(), &[128, 128, 1, 1]);
    assert_eq!(parsed.data_offset, 128);
    assert_eq!(parsed.data_len(), Ok(32768));
    assert_eq!(rest, data, "every byte after the header is handed back as data");
}

#[test]
fn versions_two_and_three_use_a_u32_length() {
    for major in [2u8, 3] {
        let header = padded("{'descr': '>i8', 'fortran_order': True, 'shape': (3, 4), }", 12);
        let file = npy(major, &header, &[0u8; 96]);
        let (parsed, rest) = feed_all::<256>(&file).unwrap();
        assert_eq!(parsed.version, NpyVersion { major, minor: 0 });
        assert_eq!(parsed.descr.byte_order, ByteOrder::Big);
        assert_eq!((parsed.descr.kind, parsed.descr.item_size), (DtypeKind::Int, 8));
        assert!(parsed.fortran_order);
        assert_eq!(parsed.data_offset, 12 + header.len() as u64);
        assert_eq!(parsed.data_offset % 64, 0);
        assert_eq!(parsed.data_len(), Ok(96));
        assert_eq!(rest.len(), 96);
    }
}

#[test]
fn scalar_and_one_tuple_shapes() {
    let file = npy(1, &padded("{'descr': '<f8', 'fortran_order': False, 'shape': (), }", 10), &[0; 8]);
    let (parsed, _) = feed_all::<256>(&file).unwrap();
    assert_eq!(parsed.shape(), &[] as &[u64]);
    assert_eq!(parsed.element_count(), Ok(1));
    assert_eq!(parsed.data_len(), Ok(8));

    let file = npy(1, &padded("{'descr': '|u1', 'fortran_order': False, 'shape': (5,), }", 10), &[0; 5]);
    let (parsed, _) = feed_all::<256>(&file).unwrap();
    assert_eq!(parsed.shape(), &[5]);
    assert_eq!(parsed.descr.byte_order, ByteOrder::NotApplicable);
    assert_eq!(parsed.data_len(), Ok(5));
}

#[test]
fn other_spellings_numpy_accepts() {
    // Key order, double quotes, no trailing comma, newlines inside, Python 2 longs, zero dims.
    let dict = "{\"shape\": (2L, 0,\n 7), \"fortran_order\": False,\n\"descr\": \"<c16\"}";
    let file = npy(1, &padded(dict, 10), &[]);
    let (parsed, _) = feed_all::<256>(&file).unwrap();
    assert_eq!(parsed.shape(), &[2, 0, 7]);
    assert_eq!(parsed.descr.kind, DtypeKind::Complex);
    assert_eq!(parsed.data_len(), Ok(0));
}

#[test]
fn every_supported_descr() {
    let cases = [
        ("|b1", 1),
        ("|i1", 1),
        ("<i2", 2),
        ("<i4", 4),
        ("<i8", 8),
        ("|u1", 1),
        ("<u2", 2),
        ("<u4", 4),
        ("<u8", 8),
        ("<f2", 2),
        ("<f4", 4),
        ("<f8", 8),
        ("<c8", 8),
        ("<c16", 16),
        ("=f4", 4),
        (">u2", 2),
    ];
    for (descr, size) in cases {
        let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': (3,), }}");
        let (parsed, _) = feed_all::<256>(&npy(1, &padded(&dict, 10), &[])).unwrap();
        assert_eq!(parsed.descr.to_string(), descr);
        assert_eq!(parsed.data_len(), Ok(3 * size));
    }
}

/// A predicate on the error a malformed header must give.
type ErrorCheck = fn(&NpyError) -> bool;

#[test]
fn malformed_headers_are_refused_with_a_reason() {
    let cases: [(&str, ErrorCheck); 16] = [
        ("", |e| matches!(e, NpyError::Malformed { offset: 10, expected: "'{'" })),
        ("{'descr': '<f2', 'fortran_order': False}", |e| *e == NpyError::MissingKey { key: "shape" }),
        ("{'fortran_order': False, 'shape': ()}", |e| *e == NpyError::MissingKey { key: "descr" }),
        ("{'descr': '<f2', 'shape': ()}", |e| *e == NpyError::MissingKey { key: "fortran_order" }),
        ("{'descr': '<f2', 'descr': '<f2', 'fortran_order': False, 'shape': ()}", |e| {
            *e == NpyError::DuplicateKey { key: "descr" }
        }),
        ("{'descr': '<f2', 'fortran_order': False, 'shape': (), 'extra': 1}", |e| {
            *e == NpyError::UnknownKey { offset: 10 + 54 }
        }),
        ("{'descr': '<f2', 'fortran_order': 0, 'shape': ()}", |e| {
            matches!(e, NpyError::Malformed { expected: "True or False", .. })
        }),
        ("{'descr': '<f2', 'fortran_order': False, 'shape': (5)}", |e| {
            matches!(e, NpyError::Malformed { expected: "',' after the only dimension", .. })
        }),
        ("{'descr': '<f2', 'fortran_order': False, 'shape': (-1,)}", |e| {
            matches!(e, NpyError::Malformed { expected: "a non-negative integer", .. })
        }),
        ("{'descr': '<f2', 'fortran_order': False, 'shape': [2, 2]}", |e| {
            matches!(e, NpyError::Malformed { expected: "'(' opening the shape", .. })
        }),
        ("{'descr': '<f2', 'fortran_order': False, 'shape': (99999999999999999999,)}", |e| {
            matches!(e, NpyError::Malformed { expected: "a dimension below 2^64", .. })
        }),
        ("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': ()}", |e| {
            matches!(e, NpyError::Malformed { expected: "a quoted string", .. })
        }),
        (
            "{'descr': '<U8', 'fortran_order': False, 'shape': ()}",
            |e| matches!(e, NpyError::UnsupportedDescr { descr } if descr.as_str() == "<U8"),
        ),
        ("{'descr': '<f2' 'fortran_order': False, 'shape': ()}", |e| {
            matches!(e, NpyError::Malformed { expected: "',' or '}'", .. })
        }),
        ("{'descr': '<f2', 'fortran_order': False, 'shape': ()} x", |e| {
            matches!(e, NpyError::Malformed { expected: "only padding after the dict", .. })
        }),
        ("{'descr': '<f2, 'fortran_order': False, 'shape': ()}", |e| matches!(e, NpyError::UnsupportedDescr { .. })),
    ];
    for (dict, check) in cases {
        let err = feed_all::<256>(&npy(1, dict, &[])).unwrap_err();
        assert!(check(&err), "{dict:?} gave {err:?}");
        assert_eq!(err.status(), neff::Status::Invalid);
        assert!(err.to_string().starts_with("NUMPY "), "{err}");
    }
}

#[test]
fn bad_magic_uses_the_runtime_wording() {
    let err = feed_all::<256>(b"PK\x03\x04 not a numpy file").unwrap_err();
    assert_eq!(err, NpyError::BadMagic { found: *b"PK\x03\x04 n" });
    assert_eq!(err.to_string(), "NUMPY bad header 4b50 != 0x4e93");
    // Fewer than six bytes: still a bad magic when the prefix is wrong, else truncated.
    assert_eq!(feed_all::<256>(b"PK"), Err(NpyError::BadMagic { found: *b"PK\0\0\0\0" }));
    assert!(matches!(feed_all::<256>(b"\x93NU"), Err(NpyError::Truncated { got: 3, .. })));
    // The runtime checks only the first two bytes; we check all six.
    let err = feed_all::<256>(b"\x93NUMPZ\x01\x00\x10\x00").unwrap_err();
    assert_eq!(err, NpyError::BadMagic { found: *b"\x93NUMPZ" });
    assert!(err.to_string().contains("bad magic"), "{err}");
}

#[test]
fn unsupported_versions() {
    for (major, minor) in [(0u8, 0u8), (4, 0), (1, 1)] {
        let mut file = npy(1, "{}", &[]);
        file[6] = major;
        file[7] = minor;
        let err = feed_all::<256>(&file).unwrap_err();
        assert_eq!(err, NpyError::UnsupportedVersion { major, minor });
    }
}

#[test]
fn truncated_headers() {
    let file = npy(1, &padded("{'descr': '<f2', 'fortran_order': False, 'shape': (4,), }", 10), &[]);
    for cut in [0, 4, 8, 9, 10, 40, file.len() - 1] {
        let err = feed_all::<256>(&file[..cut]).unwrap_err();
        let NpyError::Truncated { needed, got } = err else { panic!("cut {cut}: {err:?}") };
        assert_eq!(got, cut as u64);
        assert!(needed > got);
        if cut >= 10 {
            assert_eq!(needed, file.len() as u64, "the whole header, once its length is known");
        } else {
            assert_eq!(needed, 10, "at least the version 1 preamble");
        }
    }
    assert!(feed_all::<256>(&file).is_ok());
}

#[test]
fn a_header_over_capacity_names_it() {
    let file = npy(1, &padded("{'descr': '<f2', 'fortran_order': False, 'shape': (128, 128, 1, 1), }", 10), &[]);
    let err = feed_all::<64>(&file).unwrap_err();
    assert_eq!(err, NpyError::Capacity(CapacityError { limit: "HEADER_CAP", capacity: 64 }));
    assert_eq!(err.status(), neff::Status::Resource);
    assert!(err.to_string().contains("HEADER_CAP = 64"), "{err}");
    // A v2 length field can claim up to 4 GiB; refused before buffering anything.
    let mut huge = b"\x93NUMPY\x02\x00".to_vec();
    huge.extend(u32::MAX.to_le_bytes());
    assert!(matches!(feed_all::<256>(&huge), Err(NpyError::Capacity(_))));
}

#[test]
fn errors_are_sticky_and_completion_is_idempotent() {
    let mut parser = NpyParser::<256>::new();
    let err = parser.feed(b"XXXXXX").unwrap_err();
    assert_eq!(parser.feed(b"\x93NUMPY"), Err(err));
    assert_eq!(parser.finish(), Err(err));

    let file = npy(1, &padded("{'descr': '<f2', 'fortran_order': False, 'shape': (1,), }", 10), b"ab");
    let mut parser = NpyParser::<256>::new();
    let NpyFeed::Complete { header, header_bytes } = parser.feed(&file).unwrap() else { panic!() };
    assert_eq!(header_bytes, file.len() - 2);
    assert_eq!(parser.feed(b"more data"), Ok(NpyFeed::Complete { header, header_bytes: 0 }));
}

#[test]
fn data_len_overflow_is_an_error() {
    let dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }";
    let (parsed, _) = feed_all::<256>(&npy(1, &padded(dict, 10), &[])).unwrap();
    assert_eq!(parsed.element_count(), Err(NpyError::DataLenOverflow));
    assert_eq!(parsed.data_len(), Err(NpyError::DataLenOverflow));
    let dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 536870912), }";
    let (parsed, _) = feed_all::<256>(&npy(1, &padded(dict, 10), &[])).unwrap();
    assert_eq!(parsed.element_count(), Ok(1 << 61));
    assert_eq!(parsed.data_len(), Err(NpyError::DataLenOverflow));
}

/// The `.npy` members of a NEFF, extracted with `flate2` + `tar` (not the crate's own code).
fn npy_members(neff: &[u8]) -> Vec<(String, Vec<u8>)> {
    let gz = flate2::read::GzDecoder::new(&neff[1024..]);
    let mut archive = tar::Archive::new(gz);
    let mut members = Vec::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = entry.path().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".npy") {
            let mut body = Vec::new();
            entry.read_to_end(&mut body).unwrap();
            members.push((name, body));
        }
    }
    members
}

#[test]
fn real_neff_npy_members_parse_and_stage() {
    for (neff_name, neff) in common::real_neffs() {
        let members = npy_members(&neff);
        assert_eq!(members.len(), 2, "{neff_name}: one constant per subgraph");
        let mut dev: SimDevice = SimDevice::digest_only(64 << 30, Arch::Cayman);
        for (core, (name, body)) in members.iter().enumerate() {
            let (header, data) = feed_all::<256>(body).unwrap();
            assert_eq!(header.version, NpyVersion { major: 1, minor: 0 }, "{name}");
            assert_eq!(header.descr.to_string(), "<f2", "{name}");
            assert_eq!(header.shape(), &[128, 128, 1, 1], "{name}");
            assert_eq!(header.data_offset, 128, "{name}");
            assert_eq!(header.data_offset + header.data_len().unwrap(), body.len() as u64, "{name}");

            // Stream the data into a staging region as the loader will, then adopt it.
            let staged = dev.alloc(&AllocRequest::staging(data.len() as u64, core as u8)).unwrap();
            let mut offset = 0u64;
            for chunk in data.chunks(4096) {
                dev.write(staged, offset, chunk).unwrap();
                offset += chunk.len() as u64;
            }
            let weight =
                AllocRequest { size: data.len() as u64, align: 64, usage: UsageClass::Weight, core: core as u8 };
            let adopted = dev.adopt(staged, &weight).unwrap();
            assert_eq!(dev.digest(adopted), Some(digest64(&body[128..])), "{name}");
        }
        assert_eq!(dev.bytes_in(UsageClass::Weight), 2 * 32768);
    }
}
