//! Container layer against real NEFFs and archives written by GNU tar and CPython: the
//! walker must agree with the `tar` + `flate2` crates member for member, byte for byte, and
//! every damaged input must end in an error, never a panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, clippy::result_large_err)]

mod common;

use std::io::{Read as _, Write as _};

use embedded_io::{BufRead, ErrorType, Read};
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use neff::archive::{Archive, Finish, OpenOptions};
use neff::error::{CapacityError, OffsetBase};
use neff::gzip::{Compression, GzipError, GzipWarning};
use neff::header::{field, DigestOrder, HashAlgorithm, HashValue, HeaderError, HeaderWarning, Integrity};
use neff::tar::TarWarning;
use neff::{Error, ErrorKind, Stage, Warning, WarningKind};
use sha2::{Digest, Sha256};

/// `(name, size, sha256 of the body)`.
type Listing = Vec<(String, u64, [u8; 32])>;

/// A NEFF around `payload` (pkg_version 2 unless told).
fn neff(payload: &[u8], pkg_version: u64) -> Vec<u8> {
    let mut h = vec![0u8; 1024];
    h[field::PKG_VERSION].copy_from_slice(&pkg_version.to_le_bytes());
    h[field::HEADER_SIZE].copy_from_slice(&1024u64.to_le_bytes());
    h[field::DATA_SIZE].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    h[field::VERSION_MAJOR].copy_from_slice(&2u64.to_le_bytes());
    h.extend_from_slice(payload);
    h
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn fixture_tar(name: &str) -> Vec<u8> {
    let path = common::repo_root().join("tests/fixtures/tar").join(format!("{name}.tar.gz"));
    let mut out = Vec::new();
    GzDecoder::new(std::fs::File::open(&path).unwrap()).read_to_end(&mut out).unwrap();
    out
}

/// What the `tar` crate sees, with the runtime's member rules applied.
fn reference(tar: &[u8]) -> Listing {
    let mut archive = tar::Archive::new(tar);
    let mut out = Vec::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let kind = entry.header().entry_type();
        if !(kind.is_file() || kind.is_contiguous()) {
            continue;
        }
        let path = entry.path_bytes().into_owned();
        let path = String::from_utf8(path).unwrap();
        if path.ends_with('/') {
            continue;
        }
        let name = path.strip_prefix("./").unwrap_or(&path).to_string();
        if name.ends_with("wavegraph-bin.json") {
            continue;
        }
        let mut body = Vec::new();
        entry.read_to_end(&mut body).unwrap();
        out.push((name, body.len() as u64, Sha256::digest(&body).into()));
    }
    out
}

struct Walk {
    listing: Listing,
    finish: Finish,
    warnings: Vec<Warning>,
}

/// Opens, walks every member reading every body through `fill_buf`, and finishes.
fn walk_source<R: BufRead>(src: R, file_size: Option<u64>, opts: &OpenOptions) -> Result<Walk, Error> {
    let mut warnings = Vec::new();
    let mut sink = |w: &Warning| warnings.push(*w);
    let mut archive: Archive<R> = Archive::open(src, file_size, opts, &mut sink)?;
    let mut listing = Vec::new();
    while let Some(mut member) = archive.next_member(&mut sink)? {
        let mut hasher = Sha256::new();
        let mut len = 0u64;
        loop {
            let buf = member.fill_buf()?;
            if buf.is_empty() {
                break;
            }
            hasher.update(buf);
            let n = buf.len();
            len += n as u64;
            member.consume(n);
        }
        assert_eq!(len, member.size());
        listing.push((member.name().to_string(), member.size(), hasher.finalize().into()));
    }
    let finish = archive.finish(&mut sink)?;
    Ok(Walk { listing, finish, warnings })
}

/// Opens, skips every member unread (the walker still inflates through them) and finishes.
fn skim(src: &[u8], file_size: Option<u64>) -> Result<Finish, Error> {
    let mut sink = neff::error::IgnoreWarnings;
    let mut archive: Archive<&[u8]> = Archive::open(src, file_size, &OpenOptions::default(), &mut sink)?;
    while archive.next_member(&mut sink)?.is_some() {}
    archive.finish(&mut sink)
}

fn walk(bytes: &[u8], opts: &OpenOptions) -> Result<Walk, Error> {
    walk_source(bytes, Some(bytes.len() as u64), opts)
}

/// A `BufRead` over a slice that hands out varying, small chunks.
struct Chunked<'a> {
    data: &'a [u8],
    next: usize,
}

impl ErrorType for Chunked<'_> {
    type Error = core::convert::Infallible;
}
impl Read for Chunked<'_> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Self::Error> {
        let avail = self.fill_buf()?;
        let n = avail.len().min(buf.len());
        buf[..n].copy_from_slice(&avail[..n]);
        self.consume(n);
        Ok(n)
    }
}
impl BufRead for Chunked<'_> {
    fn fill_buf(&mut self) -> Result<&[u8], Self::Error> {
        Ok(&self.data[..self.data.len().min(self.next)])
    }
    fn consume(&mut self, amt: usize) {
        self.data = &self.data[amt..];
        // 1, 2, ..., 4093, then around again: every alignment gets hit.
        self.next = self.next * 7 % 4093 + 1;
    }
}

fn names(listing: &Listing) -> Vec<&str> {
    listing.iter().map(|(n, _, _)| n.as_str()).collect()
}

#[test]
fn real_neffs_match_tar_and_flate2() {
    for (name, bytes) in common::real_neffs() {
        let data_size = u64::from_le_bytes(bytes[16..24].try_into().unwrap()) as usize;
        let mut tar = Vec::new();
        GzDecoder::new(&bytes[1024..1024 + data_size]).read_to_end(&mut tar).unwrap();
        let want = reference(&tar);
        assert!(want.iter().any(|(n, _, _)| n == "neff.json"), "{name}");

        let got = walk(&bytes, &OpenOptions::default()).unwrap();
        assert_eq!(got.listing, want, "{name}");
        let f = got.finish;
        assert_eq!(f.compression, Compression::Gzip);
        assert_eq!((f.gzip_members, f.members as usize), (1, want.len()));
        assert_eq!(f.inflated_bytes, tar.len() as u64, "{name}");
        assert_eq!(f.compressed_bytes + f.padding_bytes, data_size as u64);
        assert_eq!(f.trailing_bytes, 0);
        assert_eq!(f.integrity, Integrity::NotRequested);
        // Zero padding after the gzip trailer is silent (7839 / 1156 bytes in the two files).
        assert!(f.padding_bytes > 0, "{name}");
        assert!(got.warnings.is_empty(), "{name}: {:?}", got.warnings);

        // Same result from a pure stream of unknown size, read in odd chunks.
        let streamed = walk_source(Chunked { data: &bytes, next: 1 }, None, &OpenOptions::default()).unwrap();
        assert_eq!(streamed.listing, want, "{name}");
        assert_eq!(streamed.finish, f);
    }
}

#[test]
fn every_real_neff_hash_matches_word_swapped() {
    // neff-format.md §2.6: neuronx-cc 2.23 stores the payload's MD5 with each word reversed.
    let opts = OpenOptions { verify_integrity: true, ..OpenOptions::default() };
    let neffs = common::public_neffs();
    for (name, path) in &neffs {
        let bytes = std::fs::read(path).unwrap();
        let data_size = u64::from_le_bytes(bytes[field::DATA_SIZE].try_into().unwrap()) as usize;
        let md5: [u8; 16] = md5::Md5::digest(&bytes[1024..1024 + data_size]).into();
        let computed = HashValue::new(HashAlgorithm::Md5, &md5);
        let want = Integrity::Match { order: DigestOrder::WordSwapped, computed };
        let got = walk(&bytes, &opts).unwrap();
        assert_eq!(got.finish.integrity, want, "{name}");
        assert!(got.warnings.is_empty(), "{name}: {:?}", got.warnings);
        // Streamed in odd pieces with no file size: the same digest, each byte fed once.
        let streamed = walk_source(Chunked { data: &bytes, next: 1 }, None, &opts).unwrap();
        assert_eq!(streamed.finish.integrity, want, "{name} streamed");
        println!("{name}: MD5 {computed} matches, {}", DigestOrder::WordSwapped.as_str());
    }
    if !neffs.is_empty() {
        assert!(neffs.len() >= 12, "{} real NEFFs found", neffs.len());
    }
}

#[test]
fn a_flipped_byte_in_a_real_payload_is_a_mismatch_and_only_a_warning() {
    let Some(clean) = common::fixture_bytes("public/nkipy/matmul_small.neff") else { return };
    let opts = OpenOptions { verify_integrity: true, ..OpenOptions::default() };
    let stream_end = 1024 + walk(&clean, &opts).unwrap().finish.compressed_bytes as usize;
    // One byte of the zero padding after the gzip stream (inside data_size, so hashed), and one
    // of the gzip header's MTIME (in the stream, read by nobody): the archive still loads.
    for (what, at) in [("padding", stream_end + 100), ("gzip MTIME", 1024 + 5)] {
        let mut bytes = clean.clone();
        bytes[at] ^= 0x20;
        let got = walk(&bytes, &opts).unwrap_or_else(|e| panic!("{what}: {e}"));
        let data_size = u64::from_le_bytes(bytes[field::DATA_SIZE].try_into().unwrap()) as usize;
        let md5: [u8; 16] = md5::Md5::digest(&bytes[1024..1024 + data_size]).into();
        let want = Integrity::Mismatch {
            computed: HashValue::new(HashAlgorithm::Md5, &md5),
            stored: HashValue::new(HashAlgorithm::Md5, &bytes[field::HASH][..16]),
        };
        assert_eq!(got.finish.integrity, want, "{what}");
        let header = |w: &&Warning| w.stage == Stage::Header;
        let said: Vec<String> = got.warnings.iter().filter(header).map(|w| w.to_string()).collect();
        assert_eq!(said, ["header: MD5 mismatch!"], "{what}");
        // Without the request, nothing is computed and the header says nothing (a non-zero
        // padding byte is still the gzip layer's warning, either way).
        let quiet = walk(&bytes, &OpenOptions::default()).unwrap();
        assert_eq!(quiet.finish.integrity, Integrity::NotRequested, "{what}");
        assert!(!quiet.warnings.iter().any(|w| header(&w)), "{what}: {:?}", quiet.warnings);
        assert_eq!(quiet.warnings.len() + 1, got.warnings.len(), "{what}");
    }
}

#[test]
fn integrity_matches_when_the_digest_is_right() {
    let tar = fixture_tar("ustar");
    let opts = OpenOptions { verify_integrity: true, ..OpenOptions::default() };
    // pkg 2: MD5 of the compressed payload, in both orders side by side: plain (neuronx-cc 2.0,
    // and the 2.0.21884 toolchain with a '0' x 16 tail) and word-swapped (2.18 and later).
    let plain = neff(&gzip(&tar), 2);
    let md5: [u8; 16] = md5::Md5::digest(&plain[1024..]).into();
    let computed = HashValue::new(HashAlgorithm::Md5, &md5);
    for (stored, tail, order) in
        [(md5, b'0', DigestOrder::Plain), (neff::header::word_swapped(&md5), 0, DigestOrder::WordSwapped)]
    {
        let mut bytes = plain.clone();
        bytes[field::HASH][..16].copy_from_slice(&stored);
        bytes[field::HASH][16..].fill(tail);
        let got = walk(&bytes, &opts).unwrap();
        assert_eq!(got.finish.integrity, Integrity::Match { order, computed }, "{order:?}");
        assert!(got.warnings.is_empty(), "{order:?}: {:?}", got.warnings);
        // Same through a chunked stream (the digest is fed from fill_buf, each byte once).
        let got = walk_source(Chunked { data: &bytes, next: 3 }, None, &opts).unwrap();
        assert_eq!(got.finish.integrity, Integrity::Match { order, computed }, "{order:?}");
    }

    // pkg 1: SHA-256 over a raw tar.
    let mut bytes = neff(&tar, 1);
    let sha: [u8; 32] = Sha256::digest(&bytes[1024..]).into();
    bytes[field::HASH].copy_from_slice(&sha);
    let got = walk(&bytes, &opts).unwrap();
    assert_eq!(got.finish.compression, Compression::None);
    let computed = HashValue::new(HashAlgorithm::Sha256, &sha);
    assert_eq!(got.finish.integrity, Integrity::Match { order: DigestOrder::Plain, computed });
    bytes[1024 + 600] ^= 0x55; // inside PE.bin's body: the tar still walks
    let got = walk(&bytes, &opts).unwrap();
    let damaged: [u8; 32] = Sha256::digest(&bytes[1024..]).into();
    let want = Integrity::Mismatch {
        computed: HashValue::new(HashAlgorithm::Sha256, &damaged),
        stored: HashValue::new(HashAlgorithm::Sha256, &sha),
    };
    assert_eq!(got.finish.integrity, want);
    assert!(got
        .warnings
        .iter()
        .any(|w| w.kind == WarningKind::Header(HeaderWarning::IntegrityMismatch { algorithm: HashAlgorithm::Sha256 })));
}

#[test]
fn tar_dialects_from_gnu_tar_and_python() {
    let expected = [
        "debug_info/x.dbg",
        "kelf-0.json",
        "neff.json",
        "sg00/PE.bin",
        "sg00/def.json",
        "sg00/very_long_directory_name_01/very_long_directory_name_02/very_long_directory_name_03/\
         very_long_directory_name_04/weights_with_a_long_file_name.npy",
        "sg01/empty.npy",
        "sg01/exact_block.bin",
    ];
    for dialect in ["gnu", "posix", "ustar", "python_pax"] {
        let tar = fixture_tar(dialect);
        let want = reference(&tar);
        let mut sorted: Vec<&str> = names(&want);
        sorted.sort();
        let expected: Vec<&str> =
            expected.iter().copied().filter(|n| dialect != "ustar" || !n.starts_with("debug")).collect();
        assert_eq!(sorted, expected, "{dialect}: the reference itself");
        for (payload, compression) in [(gzip(&tar), Compression::Gzip), (tar.clone(), Compression::None)] {
            let got = walk(&neff(&payload, 2), &OpenOptions::default()).unwrap();
            assert_eq!(got.listing, want, "{dialect} {compression:?}");
            assert_eq!(got.finish.compression, compression);
            assert_eq!(got.finish.inflated_bytes, tar.len() as u64);
            assert!(got.warnings.is_empty(), "{dialect}: {:?}", got.warnings);
        }
    }
}

#[test]
fn every_4k_cut_of_a_real_neff_is_an_error() {
    for (name, bytes) in common::real_neffs() {
        // matmul_large inflates to 9 MB: every 4 KiB cut of it is ~1.7 GB of inflate in a
        // debug build, so it is cut every 128 KiB; matmul_small at every 4 KiB boundary.
        let step = if bytes.len() > 100_000 { 128 << 10 } else { 4 << 10 };
        assert!(skim(&bytes, None).is_ok());
        for cut in (0..bytes.len()).step_by(step).chain([1023, 1025, bytes.len() - 1]) {
            let part = &bytes[..cut];
            let known = skim(part, Some(cut as u64));
            let e = known.err().unwrap_or_else(|| panic!("{name}: cut {cut} with its size passed"));
            assert_eq!(e.stage, Stage::Header, "{name} cut {cut}: {e}");
            let stream = skim(part, None);
            let e = stream.err().unwrap_or_else(|| panic!("{name}: cut {cut} streamed passed"));
            assert!(
                matches!(
                    e.kind,
                    ErrorKind::Truncated
                        | ErrorKind::Header(HeaderError::ShortFile { .. } | HeaderError::DataSizePastEnd { .. })
                ),
                "{name} cut {cut}: {e}"
            );
        }
    }
}

#[test]
fn flipped_bytes_in_the_gzip_member_are_errors() {
    let Some(bytes) = common::fixture_bytes("public/nkipy/matmul_small.neff") else { return };
    let clean = walk(&bytes, &OpenOptions::default()).unwrap();
    let member_end = 1024 + clean.finish.compressed_bytes as usize;
    // Header bytes 4..10 (MTIME, XFL, OS) are not checked by anyone; start after them.
    // Flips in the zero padding after the member are silent by design, so stop before it.
    let span = 1024 + 10..member_end;
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut crc_errors = 0;
    let mut benign = 0;
    for _ in 0..300 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let at = span.start + (x as usize) % span.len();
        let mut damaged = bytes.clone();
        damaged[at] ^= 1 << (x >> 61);
        match walk(&damaged, &OpenOptions::default()) {
            Err(e) => {
                if matches!(e.kind, ErrorKind::Gzip(GzipError::Crc { .. })) {
                    crc_errors += 1;
                }
            }
            // A few bits are ignored by deflate itself (the padding after a stored block's
            // header; zlib accepts these flips too): then the output must be unchanged.
            Ok(got) => {
                assert_eq!(got.listing, clean.listing, "flip at {at} changed the output without an error");
                benign += 1;
            }
        }
    }
    // Most flips break the deflate structure; some only change literals, which the CRC catches.
    assert!(crc_errors > 0);
    assert!(benign < 30, "{benign} of 300 flips went unnoticed");
}

#[test]
fn a_decompression_bomb_hits_the_cap() {
    // One 200 MB member of zeros, compressed as it is written (never held inflated).
    let size: u64 = 200_000_000;
    let mut header = tar::Header::new_ustar();
    header.set_path("bomb.bin").unwrap();
    header.set_size(size);
    header.set_cksum();
    // The default level: with flate2's zlib-rs backend (the workspace's, for the CLI), the
    // fastest level does not shrink 200 MB of zeros under a megabyte.
    let mut e = GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(header.as_bytes()).unwrap();
    let zeros = vec![0u8; 1 << 20];
    let mut left = size;
    while left > 0 {
        let n = left.min(zeros.len() as u64) as usize;
        e.write_all(&zeros[..n]).unwrap();
        left -= n as u64;
    }
    e.write_all(&[0u8; 1024]).unwrap();
    let bytes = neff(&e.finish().unwrap(), 2);
    assert!(bytes.len() < 1_000_000);
    let opts = OpenOptions { max_inflated: 16 << 20, ..OpenOptions::default() };
    let err = walk(&bytes, &opts).err().unwrap();
    assert_eq!(err.kind, ErrorKind::Capacity(CapacityError { limit: "max_inflated", capacity: 16 << 20 }));
    assert_eq!(err.member.as_str(), "bomb.bin");
    assert!(err.to_string().contains("max_inflated"), "{err}");
}

#[test]
fn header_gates_surface_through_open() {
    let tar = fixture_tar("ustar");
    let good = neff(&gzip(&tar), 2);
    let mut bad = good.clone();
    bad[field::VERSION_MAJOR].copy_from_slice(&3u64.to_le_bytes());
    let e = walk(&bad, &OpenOptions::default()).err().unwrap();
    assert_eq!(e.kind, ErrorKind::Header(HeaderError::UnsupportedVersion { major: 3, minor: 0 }));
    assert_eq!((e.stage, e.offset, e.offset_base), (Stage::Header, 24, OffsetBase::File));
    assert_eq!(e.status().code(), 10);

    let mut odd = good.clone();
    odd[field::HEADER_SIZE].copy_from_slice(&2048u64.to_le_bytes());
    let e = walk(&odd, &OpenOptions::default()).err().unwrap();
    assert_eq!(e.kind, ErrorKind::Header(HeaderError::HeaderSizeNot1024 { header_size: 2048 }));
    let opts = OpenOptions { allow_header_size_other_than_1024: true, ..OpenOptions::default() };
    let got = walk(&odd, &opts).unwrap();
    assert_eq!(got.listing, reference(&tar));
    assert_eq!(got.warnings[0].kind, WarningKind::Header(HeaderWarning::HeaderSizeAllowed { header_size: 2048 }));

    let e = walk_source(&good[..1000], None, &OpenOptions::default()).err().unwrap();
    assert_eq!(e.kind, ErrorKind::Header(HeaderError::ShortFile { received: 1000 }));
}

#[test]
fn trailing_bytes_padding_and_garbage() {
    let tar = fixture_tar("posix");
    let gz = gzip(&tar);
    let mut payload = gz.clone();
    payload.extend_from_slice(&[0u8; 300]);
    let mut bytes = neff(&payload, 2);
    bytes.extend_from_slice(b"appended after data_size");
    for file_size in [Some(bytes.len() as u64), None] {
        let got = walk_source(&bytes[..], file_size, &OpenOptions::default()).unwrap();
        assert_eq!((got.finish.padding_bytes, got.finish.trailing_bytes), (300, 24));
        let kinds: Vec<_> = got.warnings.iter().map(|w| w.kind).collect();
        assert_eq!(kinds, [WarningKind::Header(HeaderWarning::TrailingBytes { count: 24 })], "{file_size:?}");
    }

    // Non-zero data after the gzip trailer, inside data_size: a warning with its offset.
    let mut payload = gz.clone();
    payload.extend_from_slice(&[0, 0, 7, 0]);
    let got = walk(&neff(&payload, 2), &OpenOptions::default()).unwrap();
    let first_offset = 1024 + gz.len() as u64 + 2;
    assert_eq!(
        got.warnings.iter().map(|w| w.kind).collect::<Vec<_>>(),
        [WarningKind::Gzip(GzipWarning::TrailingData { first_offset, nonzero_bytes: 1 })]
    );

    // A second gzip member is read as a continuation (libarchive, gzip -d), with a warning.
    let mut payload = gz.clone();
    let extra = b"more inflated bytes after the tar end";
    payload.extend_from_slice(&gzip(extra));
    let got = walk(&neff(&payload, 2), &OpenOptions::default()).unwrap();
    assert_eq!(got.finish.gzip_members, 2);
    let kinds: Vec<_> = got.warnings.iter().map(|w| w.kind).collect();
    assert!(kinds.contains(&WarningKind::Gzip(GzipWarning::MultipleMembers { count: 2 })), "{kinds:?}");
    assert!(
        kinds.contains(&WarningKind::Tar(TarWarning::DataAfterEnd { nonzero_bytes: extra.len() as u64 })),
        "{kinds:?}"
    );

    // The source ends inside the zero padding: data_size is past the end.
    let mut payload = gz.clone();
    payload.extend_from_slice(&[0u8; 100]);
    let bytes = neff(&payload, 2);
    let e = walk_source(&bytes[..bytes.len() - 40], None, &OpenOptions::default()).err().unwrap();
    assert_eq!(
        e.kind,
        ErrorKind::Header(HeaderError::DataSizePastEnd {
            data_size: payload.len() as u64,
            available: payload.len() as u64 - 40
        })
    );
}

#[test]
fn archive_size_is_fixed_and_well_under_64k() {
    // With the firmware profile's name capacity (1024; hosted targets take a larger one): the
    // name buffer is a byte array, so the sizes differ by the capacities alone.
    let size = core::mem::size_of::<Archive<&[u8]>>() - neff::tar::DEFAULT_NAME_CAPACITY + 1024;
    println!("size_of::<Archive<&[u8]>>() = {size}");
    assert!(size < 48 * 1024, "{size}");
    #[cfg(target_pointer_width = "64")]
    assert_eq!(size, 45_896, "update the figure in Archive's doc comment");
}
