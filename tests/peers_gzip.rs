//! Go's `compress/gzip` and `compress/flate` test vectors (`../shared/fixtures/peers/gzip/`,
//! transcribed from gofrontend's `libgo`, go1.18; see its `SOURCES.md`) through the core's gzip
//! layer, [`neff::gzip::Decoder`]. Same style as `tests/peers.rs`: each test prints
//! `N of M right` (`--nocapture`) and fails listing every wrong case; a case that cannot be
//! right for a principled reason is in an explicit expected-difference list with its reason,
//! still counted, and a listed difference that agrees now is a failure.
//!
//! - `gunzipTests` (13): `nil` ⇒ the output is `raw` exactly; `ErrChecksum` ⇒ a trailer error
//!   ([`GzipError::Crc`] / [`GzipError::Isize`]); `ErrHeader` ⇒ a header error;
//!   `io.ErrUnexpectedEOF` ⇒ [`StreamKind::Truncated`].
//! - gzip `TestTruncatedStreams`: every cut (Go starts at one byte) is truncated.
//! - `TestIssue6550`: the stream is refused (Go's test: an error, not a hang).
//! - flate `TestStreams` (28 raw deflate streams): each wrapped in a gzip member whose trailer
//!   holds the CRC-32 and ISIZE of C zlib's output, and judged against zlib's verdict (the Go
//!   test names zlib as the reference): `ok` ⇒ that output, `error` ⇒ [`GzipError::Inflate`].
//! - flate `TestTruncatedStreams`: every cut of the deflate stream, behind a gzip header, is
//!   truncated.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, clippy::result_large_err)]

mod common;

use common::peers::{b64, score};

use embedded_io::BufRead as _;
use neff::error::StreamKind;
use neff::gzip::{Compression, Decoder, GzipError, DEFAULT_MAX_INFLATED};

fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len() % 2 == 0, "hex {s}");
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// What the core's gzip layer made of a byte stream.
#[derive(Debug, PartialEq)]
enum Got {
    /// Read to the end: the inflated bytes, the members read, the non-zero bytes after the last.
    Gzip { out: Vec<u8>, members: u32, trailing_nonzero: u64 },
    /// Not sniffed as gzip: passed through raw (this many bytes).
    Raw(usize),
    /// Refused.
    Err(StreamKind),
}

/// Runs `bytes` through [`Decoder`] to the end, multi-member streams included.
fn gunzip(bytes: &[u8]) -> Got {
    let mut d = match Decoder::sniff(bytes, 0, DEFAULT_MAX_INFLATED) {
        Ok(d) => d,
        Err(e) => return Got::Err(e.kind),
    };
    let mut out = Vec::new();
    loop {
        match d.fill_buf() {
            Ok([]) => break,
            Ok(buf) => {
                let n = buf.len();
                out.extend_from_slice(buf);
                d.consume(n);
            }
            Err(e) => return Got::Err(e.kind),
        }
    }
    if d.compression() == Compression::None {
        return Got::Raw(out.len());
    }
    let members = d.members();
    match d.drain_trailing() {
        Ok(t) => Got::Gzip { out, members, trailing_nonzero: t.nonzero_bytes },
        Err(e) => Got::Err(e.kind),
    }
}

fn is_header_error(kind: &StreamKind) -> bool {
    matches!(
        kind,
        StreamKind::Gzip(
            GzipError::BadMagic { .. }
                | GzipError::UnsupportedMethod { .. }
                | GzipError::ReservedFlags { .. }
                | GzipError::HeaderCrc { .. }
        )
    )
}

fn is_checksum_error(kind: &StreamKind) -> bool {
    matches!(kind, StreamKind::Gzip(GzipError::Crc { .. } | GzipError::Isize { .. }))
}

fn show(got: &Got) -> String {
    match got {
        Got::Gzip { out, members, trailing_nonzero } => {
            format!(
                "read {} bytes from {members} member(s), {trailing_nonzero} non-zero trailing bytes ignored",
                out.len()
            )
        }
        Got::Raw(n) => format!("not sniffed as gzip: {n} bytes passed through raw"),
        Got::Err(kind) => format!("refused: {kind:?}"),
    }
}

fn vectors() -> Option<serde_json::Value> {
    let bytes = common::fixture_bytes("peers/gzip/vectors.json")?;
    Some(serde_json::from_slice(&bytes).unwrap())
}

/// Prints the listed differences and how many cases read as the peer reads them, then scores
/// the suite (a listed difference counts as right; anything in `wrong` fails it).
fn tally(suite: &str, how: &str, total: usize, wrong: &[String], differences: &[String]) {
    for d in differences {
        println!("{d}");
    }
    println!("{suite}: {} of {total} {how}", total - wrong.len() - differences.len());
    score(&format!("{suite} (differences listed count as right)"), total, wrong);
}

/// Files `(id, verdict, listed)` under `wrong` or `differences`, as `tests/peers.rs` does.
fn file(
    id: &str,
    verdict: Option<String>,
    listed: &[(&str, &str)],
    wrong: &mut Vec<String>,
    differences: &mut Vec<String>,
) {
    match (verdict, listed.iter().find(|(c, _)| *c == id)) {
        (None, None) => {}
        (None, Some(_)) => wrong.push(format!("{id}: listed as a difference but agrees with Go now")),
        (Some(v), Some((_, why))) => differences.push(format!("{id}: {v} (expected difference: {why})")),
        (Some(v), None) => wrong.push(format!("{id}: {v}")),
    }
}

/// `gunzipTests` that the core reads otherwise than Go, keyed `line N` (the source line).
const GUNZIP_DIFFERENCES: &[(&str, &str)] = &[
    (
        "line 241",
        "non-gzip bytes after the last member are a TrailingData warning, not an error: \
         libarchive (the runtime's reader) ignores them too, and real NEFFs pad the member",
    ),
    (
        "line 255",
        "a lone 0x1f after the last member is trailing data (a TrailingData warning), not the \
         start of a truncated member: it is not followed by 8b, so no member starts",
    ),
];

#[test]
fn go_gunzip_tests_through_the_gzip_layer() {
    let Some(v) = vectors() else { return };
    let cases = v["gunzip_tests"].as_array().unwrap();
    assert_eq!(cases.len(), 13, "gunzipTests holds 13 vectors");
    let mut wrong = Vec::new();
    let mut differences = Vec::new();
    for case in cases {
        let id = format!("line {}", case["line"].as_u64().unwrap());
        let desc = case["desc"].as_str().unwrap();
        let got = gunzip(&b64(case["gzip_b64"].as_str().unwrap()));
        let raw = b64(case["raw_b64"].as_str().unwrap());
        let err = case["err"].as_str().unwrap();
        let ok = match (err, &got) {
            ("nil", Got::Gzip { out, trailing_nonzero: 0, .. }) => *out == raw,
            ("ErrChecksum", Got::Err(k)) => is_checksum_error(k),
            ("ErrHeader", Got::Err(k)) => is_header_error(k),
            ("io.ErrUnexpectedEOF", Got::Err(k)) => *k == StreamKind::Truncated,
            ("nil" | "ErrChecksum" | "ErrHeader" | "io.ErrUnexpectedEOF", _) => false,
            (other, _) => panic!("{id}: err {other}"),
        };
        let verdict = (!ok).then(|| format!("{desc}: Go says {err}; {}", show(&got)));
        file(&id, verdict, GUNZIP_DIFFERENCES, &mut wrong, &mut differences);
    }
    tally("Go gunzipTests", "as Go reads them", cases.len(), &wrong, &differences);
}

/// Cuts of gzip `TestTruncatedStreams`' stream that the core reads otherwise than Go.
const GZIP_TRUNCATED_DIFFERENCES: &[(&str, &str)] = &[(
    "cut 1",
    "a lone 0x1f is not sniffed as gzip (gzip needs 1f 8b): the payload is passed through \
     raw, as libarchive bids on content",
)];

#[test]
fn go_gzip_truncated_streams_through_the_gzip_layer() {
    let Some(v) = vectors() else { return };
    let data = b64(v["gzip_truncated"]["data_b64"].as_str().unwrap());
    // The whole stream reads (a check of the transcription): "foo bar" is the header's extra
    // field; the member inflates to 12 bytes.
    match gunzip(&data) {
        Got::Gzip { out, members: 1, trailing_nonzero: 0 } => assert_eq!(out.len(), 12, "{out:?}"),
        other => panic!("the whole stream: {}", show(&other)),
    }
    // gunzip_test.go: "Intentionally iterate starting with at least one byte in the stream."
    let cuts: Vec<usize> = (1..data.len() - 1).collect();
    let mut wrong = Vec::new();
    let mut differences = Vec::new();
    for &cut in &cuts {
        let got = gunzip(&data[..cut]);
        let verdict =
            (got != Got::Err(StreamKind::Truncated)).then(|| format!("Go says io.ErrUnexpectedEOF; {}", show(&got)));
        file(&format!("cut {cut}"), verdict, GZIP_TRUNCATED_DIFFERENCES, &mut wrong, &mut differences);
    }
    tally("Go gzip TestTruncatedStreams", "cuts as Go reads them", cuts.len(), &wrong, &differences);
}

#[test]
fn go_issue6550_is_refused() {
    let Some(v) = vectors() else { return };
    let file = v["issue6550"]["file"].as_str().unwrap();
    let Some(text) = common::fixture_bytes(&format!("peers/gzip/{file}")) else { return };
    let bytes = b64(std::str::from_utf8(&text).unwrap());
    // FLG is 0xa4: the core refuses the reserved bits at once. With them cleared (FEXTRA left)
    // the header, extra field and deflate data are read too, and must still be refused.
    let mut cleared = bytes.clone();
    cleared[3] &= 0x1f;
    let mut wrong = Vec::new();
    for (what, input) in [("as is", &bytes), ("reserved FLG bits cleared", &cleared)] {
        let got = gunzip(input);
        println!("Go TestIssue6550 ({what}): {}", show(&got));
        if !matches!(got, Got::Err(_)) {
            wrong.push(format!("{file} ({what}): Go's test wants an error; {}", show(&got)));
        }
    }
    score("Go TestIssue6550", 2, &wrong);
}

/// Wraps a raw deflate stream into one gzip member: a bare 10-byte header, the stream, and the
/// CRC-32 and ISIZE of `inflated`.
fn gzip_member(deflate: &[u8], inflated: &[u8]) -> Vec<u8> {
    let mut gz = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    gz.extend_from_slice(deflate);
    gz.extend_from_slice(&crc32fast::hash(inflated).to_le_bytes());
    gz.extend_from_slice(&(inflated.len() as u32).to_le_bytes());
    gz
}

/// flate `TestStreams` cases the core reads otherwise than C zlib, keyed `line N`.
const FLATE_DIFFERENCES: &[(&str, &str)] = &[];

#[test]
fn go_flate_streams_through_the_gzip_layer_against_zlib() {
    let Some(v) = vectors() else { return };
    let cases = v["flate_streams"].as_array().unwrap();
    assert_eq!(cases.len(), 28, "flate TestStreams holds 28 streams");
    let mut wrong = Vec::new();
    let mut differences = Vec::new();
    let mut go_disagrees = 0;
    for case in cases {
        let id = format!("line {}", case["line"].as_u64().unwrap());
        let desc = case["desc"].as_str().unwrap();
        let stream = unhex(case["stream_hex"].as_str().unwrap());
        let zlib = case["zlib"].as_str().unwrap();
        let want = case["want"].as_str().unwrap();
        // zlib's output where it accepts: Go's `want` (Go refuses none of what zlib accepts).
        let zlib_ok = zlib == "ok";
        assert!(zlib_ok || zlib.starts_with("error"), "{id}: zlib {zlib}");
        if zlib_ok == (want == "fail") {
            go_disagrees += 1;
        }
        let expected = if zlib_ok { unhex(want) } else { Vec::new() };
        let got = gunzip(&gzip_member(&stream, &expected));
        let ok = match &got {
            Got::Gzip { out, members: 1, trailing_nonzero: 0 } => zlib_ok && *out == expected,
            Got::Err(StreamKind::Gzip(GzipError::Inflate { .. })) => !zlib_ok,
            _ => false,
        };
        let verdict = (!ok).then(|| format!("{desc}: zlib says {zlib}; {}", show(&got)));
        file(&id, verdict, FLATE_DIFFERENCES, &mut wrong, &mut differences);
    }
    assert_eq!(go_disagrees, 0, "Go and zlib agree on every stream (as transcribed)");
    tally("Go flate TestStreams vs zlib", "as C zlib reads them", cases.len(), &wrong, &differences);
}

#[test]
fn go_flate_truncated_streams_through_the_gzip_layer() {
    let Some(v) = vectors() else { return };
    let data = b64(v["flate_truncated"]["data_b64"].as_str().unwrap());
    // The whole stream inflates to "hello, world" (a check of the transcription).
    match gunzip(&gzip_member(&data, b"hello, world")) {
        Got::Gzip { out, members: 1, trailing_nonzero: 0 } => assert_eq!(out, b"hello, world"),
        other => panic!("the whole stream: {}", show(&other)),
    }
    let cuts: Vec<usize> = (0..data.len() - 1).collect();
    let mut wrong = Vec::new();
    let header = &gzip_member(&[], &[])[..10];
    for &cut in &cuts {
        let mut gz = header.to_vec();
        gz.extend_from_slice(&data[..cut]);
        let got = gunzip(&gz);
        if got != Got::Err(StreamKind::Truncated) {
            wrong.push(format!("cut {cut}: Go says io.ErrUnexpectedEOF; {}", show(&got)));
        }
    }
    score("Go flate TestTruncatedStreams (cuts behind a gzip header)", cuts.len(), &wrong);
}
