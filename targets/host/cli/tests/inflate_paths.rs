//! The host's inflate path (zlib-rs driving the core's gzip layer, inline or in its own thread)
//! against the core's own (miniz_oxide, in the archive), over every corpus NEFF: the real
//! ones, generated sample variants, the damaged NEFFs of the CLI's tests, the malformed corpus
//! of `tests/malformed.rs`, and gzip-level cases (padding, a second member, garbage after the
//! stream, bad trailers, `max_inflated`).
//! Each must give the same outcome both ways: accepted or refused, the same error (stage,
//! member, key path, kind; the offset too, except for invalid deflate data, which two inflaters
//! may notice at different input bytes), the same warnings, payloads, digests and closing
//! figures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::result_large_err, missing_docs)]

#[path = "../../../../tests/common/mod.rs"]
mod common;
mod support;

use std::io::Write as _;

use neff::archive::{Archive, Finish, OpenOptions};
use neff::error::{ErrorKind, Stage, Warning};
use neff::gzip::GzipError;
use neff::loader::LoadOptions;
use neff::manifest::Arch;
use neff::sim::SimDevice;
use neff_host::inflate::{open_archive, Inflation};
use neff_host::sample::{MemberOrder, SampleBuilder};
use neff_host::source::InputSource;

/// A placed payload: member, bytes placed, digest, device address.
type Placed = (String, u64, u64, Option<u64>);

/// What a load gave: the payloads and closing figures, or the error; and every warning,
/// rendered.
#[derive(Debug, PartialEq)]
struct Outcome {
    result: Result<(Vec<Placed>, Finish), Refusal>,
    warnings: Vec<String>,
}

/// An error, with the offset left out where two inflaters may differ.
#[derive(Debug, PartialEq)]
struct Refusal {
    stage: Stage,
    member: String,
    key_path: String,
    kind: ErrorKind,
    offset: Option<u64>,
}

impl From<neff::Error> for Refusal {
    fn from(e: neff::Error) -> Self {
        let (kind, offset) = match e.kind {
            // zlib-rs and miniz_oxide name invalid data with different codes, at different bytes.
            ErrorKind::Gzip(GzipError::Inflate { .. }) => (ErrorKind::Gzip(GzipError::Inflate { status: 0 }), None),
            // The cap is on output: the input read when one call crosses it depends on how
            // much that call inflates (32 KiB into the window, up to 256 KiB into a buffer).
            // The bytes before it are the same: exactly `max_inflated` of them.
            kind @ ErrorKind::Capacity(neff::error::CapacityError { limit: "max_inflated", .. }) => (kind, None),
            kind => (kind, Some(e.offset)),
        };
        Refusal { stage: e.stage, member: e.member.to_string(), key_path: e.key_path.to_string(), kind, offset }
    }
}

/// Loads `archive` onto a digest-only device.
fn load<R: embedded_io::BufRead>(archive: Result<Box<Archive<R>>, neff::Error>, mut warnings: Vec<String>) -> Outcome {
    let mut device: SimDevice = SimDevice::digest_only(64 << 30, Arch::Cayman);
    let mut sink = |w: &Warning| warnings.push(w.to_string());
    let result = archive.and_then(|mut archive| {
        let (result, report) = common::recorder::run(
            &mut *archive,
            Some(&mut device),
            None,
            LoadOptions::default(),
            common::recorder::TEST_ARENA,
            &mut sink,
        );
        result?;
        let finish = archive.finish(&mut sink)?;
        let payloads = report.payloads.iter().map(|p| (p.member.to_string(), p.len, p.digest, p.address)).collect();
        Ok((payloads, finish))
    });
    Outcome { result: result.map_err(Refusal::from), warnings }
}

fn core_path(bytes: &[u8], opts: &OpenOptions) -> Outcome {
    let mut warnings = Vec::new();
    let archive = Archive::open(bytes, Some(bytes.len() as u64), opts, &mut |w: &Warning| warnings.push(w.to_string()))
        .map(Box::new);
    load(archive, warnings)
}

fn host_path(bytes: &'static [u8], opts: &OpenOptions, inflation: Inflation) -> Outcome {
    let mut warnings = Vec::new();
    let size = bytes.len() as u64;
    let archive = open_archive(InputSource::Sample(bytes), size, opts, inflation, &mut |w: &Warning| {
        warnings.push(w.to_string())
    });
    load(archive, warnings)
}

/// Runs the three paths over `(label, bytes, options)`; returns (accepted, refused).
fn compare(corpus: Vec<(String, Vec<u8>, OpenOptions)>) -> (usize, usize) {
    let (mut accepted, mut refused) = (0, 0);
    for (label, bytes, opts) in corpus {
        // The host source reads a `'static` slice (as it reads the embedded sample).
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        let want = core_path(bytes, &opts);
        // The member index's inflater (miniz_oxide keeping checkpoints) too.
        let indexing = Inflation::Indexing { recorder: Default::default(), threaded: false };
        for inflation in [Inflation::Inline, Inflation::Threaded, indexing] {
            let got = host_path(bytes, &opts, inflation.clone());
            assert_eq!(got, want, "{label}: zlib-rs ({inflation:?}) vs miniz_oxide");
        }
        if want.result.is_ok() {
            accepted += 1;
        } else {
            refused += 1;
        }
    }
    (accepted, refused)
}

fn plain(label: impl Into<String>, bytes: Vec<u8>) -> (String, Vec<u8>, OpenOptions) {
    (label.into(), bytes, OpenOptions::default())
}

/// A NEFF with `neff`'s header over `payload` (data_size set to `data_size`).
fn with_payload(neff: &[u8], payload: &[u8], data_size: usize) -> Vec<u8> {
    let mut out = neff[..1024].to_vec();
    out[16..24].copy_from_slice(&(data_size as u64).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// Cases at the gzip layer, built from `neff`'s tar stream.
fn gzip_cases(name: &str, neff: &[u8]) -> Vec<(String, Vec<u8>, OpenOptions)> {
    let mut tar = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&neff[1024..]), &mut tar).unwrap();
    let gz = gzip(&tar);
    let n = gz.len();
    let mut cases = vec![plain(format!("{name}: no padding"), with_payload(neff, &gz, n))];
    let mut padded = gz.clone();
    padded.resize(n + 4096, 0);
    cases.push(plain(format!("{name}: zero padding"), with_payload(neff, &padded, padded.len())));
    let split = tar.len() / 3 / 512 * 512;
    let mut two = gzip(&tar[..split]);
    two.extend_from_slice(&gzip(&tar[split..]));
    cases.push(plain(format!("{name}: two gzip members"), with_payload(neff, &two, two.len())));
    let mut garbage = gz.clone();
    garbage.extend_from_slice(&[0, 0, 0x1f, 0, 9, 0]);
    cases.push(plain(format!("{name}: garbage after the stream"), with_payload(neff, &garbage, garbage.len())));
    let mut lone = gz.clone();
    lone.extend_from_slice(&[0x1f, 0x00]);
    cases.push(plain(format!("{name}: a lone 1f after the stream"), with_payload(neff, &lone, lone.len())));
    let mut not_gzip = gz.clone();
    not_gzip.extend_from_slice(&[0x1f, 0x8b, 7, 0, 0, 0, 0, 0, 0, 3]);
    cases.push(plain(format!("{name}: a second member with method 7"), with_payload(neff, &not_gzip, not_gzip.len())));
    for (what, at) in [("CRC-32", n - 8), ("ISIZE", n - 2)] {
        let mut bad = gz.clone();
        bad[at] ^= 0x40;
        cases.push(plain(format!("{name}: bad {what}"), with_payload(neff, &bad, n)));
    }
    let mut bad_method = gz.clone();
    bad_method[2] = 7;
    cases.push(plain(format!("{name}: method 7"), with_payload(neff, &bad_method, n)));
    let mut reserved = gz.clone();
    reserved[3] = 0x20;
    cases.push(plain(format!("{name}: reserved flag"), with_payload(neff, &reserved, n)));
    for at in [n / 4, n / 2, n - 100] {
        let mut flipped = gz.clone();
        flipped[at] ^= 0x10;
        cases.push(plain(format!("{name}: deflate byte {at} flipped"), with_payload(neff, &flipped, n)));
    }
    for cut in [11, n / 2, n - 4] {
        cases.push(plain(format!("{name}: stream cut at {cut}"), with_payload(neff, &gz[..cut], cut)));
        cases.push(plain(format!("{name}: stream cut at {cut}, data_size whole"), with_payload(neff, &gz[..cut], n)));
    }
    cases.push(plain(format!("{name}: raw tar"), with_payload(neff, &tar, tar.len())));
    let mut trailing = with_payload(neff, &gz, n);
    trailing.extend_from_slice(b"after data_size");
    cases.push(plain(format!("{name}: bytes after data_size"), trailing));
    for cap in [tar.len() as u64, tar.len() as u64 - 1, 100_000] {
        let opts = OpenOptions { max_inflated: cap, ..OpenOptions::default() };
        cases.push((format!("{name}: max_inflated {cap}"), with_payload(neff, &gz, n), opts));
    }
    let opts = OpenOptions { verify_integrity: true, ..OpenOptions::default() };
    cases.push((format!("{name}: integrity"), neff.to_vec(), opts));
    cases
}

/// The damaged NEFFs of the CLI's own tests (`cli.rs`, `verbs.rs`, `unpack_pack.rs`): header
/// gates, damaged bytes, crafted tar members.
fn cli_test_cases() -> Vec<(String, Vec<u8>, OpenOptions)> {
    let sample = || SampleBuilder::new().build().unwrap();
    let mut cases = Vec::new();
    for (label, at, value) in [
        ("pkg_version 7", 0, 7u64),
        ("pkg_version 3", 0, 3),
        ("header_size 512", 8, 512),
        ("version 3", 24, 3),
        ("data_size past the end", 16, 1 << 40),
        ("data_size 0", 16, 0),
    ] {
        let mut bytes = sample();
        bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
        cases.push(plain(format!("cli: {label}"), bytes));
    }
    let mut bytes = sample();
    let mid = bytes.len() / 2;
    bytes[mid..mid + 32].iter_mut().for_each(|b| *b ^= 0xa5);
    cases.push(plain("cli: 32 bytes damaged mid-stream", bytes));
    let mut bytes = sample();
    bytes[5000..5064].iter_mut().for_each(|b| *b ^= 0x5a);
    cases.push(plain("cli: a corrupt deflate stream", bytes));
    cases.push(plain("cli: cut in the header", sample()[..700].to_vec()));
    let evil = ["../evil.txt", "sg00/../../evil.txt", "/tmp/neff-cli-evil.txt", "a//b", "./../evil.txt", "sg00/link"];
    for (name, flag) in evil.iter().zip([b'0', b'0', b'0', b'0', b'0', b'2']) {
        let mut tar_stream = support::raw_tar_member("kelf-0.json", b"{}", b'0');
        tar_stream.extend(support::raw_tar_member(name, b"owned", flag));
        tar_stream.extend([0u8; 1024]);
        cases.push(plain(format!("cli: crafted member {name:?}"), support::neff_around_tar(&tar_stream)));
    }
    cases
}

fn sample_variants() -> Vec<(String, Vec<u8>, OpenOptions)> {
    let builders = [
        ("sample", SampleBuilder::new()),
        ("sample, pkg 1 (raw tar)", SampleBuilder::new().pkg_version(1)),
        ("sample, sunda", SampleBuilder::new().target("sunda")),
        ("sample, mariana", SampleBuilder::new().target("mariana")),
        ("sample, one subgraph", SampleBuilder::new().subgraphs(1)),
        ("sample, manifests first", SampleBuilder::new().order(MemberOrder::ManifestsFirst)),
        ("sample, reversed", SampleBuilder::new().order(MemberOrder::Reversed)),
        ("sample, no neff.json", SampleBuilder::new().drop_member("neff.json")),
        ("sample, no sg01/Pool.bin", SampleBuilder::new().drop_member("sg01/Pool.bin")),
        ("sample, bad size", SampleBuilder::new().replace_text("sg00/def.json", "\"size\":16384", "\"size\":\"big\"")),
        ("sample, odd SP.bin", SampleBuilder::new().replace_member("sg00/SP.bin", &[0x60; 200])),
        ("sample, extra member", SampleBuilder::new().add_member("notes/readme.txt", b"hello")),
    ];
    builders.into_iter().map(|(label, b)| plain(label, b.build().unwrap())).collect()
}

#[test]
fn both_inflate_paths_agree_on_the_real_neffs_the_samples_and_gzip_cases() {
    let mut corpus = sample_variants();
    corpus.extend(cli_test_cases());
    corpus.extend(gzip_cases("sample", neff_host::SAMPLE_NEFF));
    for (name, bytes) in common::real_neffs() {
        corpus.extend(gzip_cases(name, &bytes));
        corpus.push(plain(name, bytes));
    }
    let total = corpus.len();
    let (accepted, refused) = compare(corpus);
    println!("inflate paths: {total} NEFFs, {accepted} accepted and {refused} refused alike");
    assert!(accepted >= 10 && refused >= 10, "accepted {accepted}, refused {refused}");
}

#[test]
fn both_inflate_paths_agree_on_the_malformed_corpus() {
    let Some(small) = common::fixture_bytes("public/nkipy/matmul_small.neff") else { return };
    let mut corpus = Vec::new();
    let sets = [
        ("damaged manifest", common::corpus::damaged_manifests(&small)),
        ("damaged .npy", common::corpus::damaged_npy_payloads(&small)),
        ("damaged tar", common::corpus::damaged_tar_streams(&small)),
        ("cut", common::corpus::cuts(&small)),
    ];
    for (what, set) in sets {
        corpus.extend(set.into_iter().enumerate().map(|(i, bytes)| plain(format!("{what} #{i}"), bytes)));
    }
    let total = corpus.len();
    let (accepted, refused) = compare(corpus);
    println!("inflate paths: {total} malformed NEFFs, {accepted} accepted and {refused} refused alike");
    assert!(refused > total / 2, "accepted {accepted}, refused {refused}");
}
