//! Fuzz target bodies for the core's input layers: header, gzip, tar, the whole archive, the
//! JSON tokenizer and the `.npy` header parser.
//!
//! Each body feeds arbitrary bytes to one layer and checks what must hold whatever the input:
//! no panic (the harness sees one as a crash), and the layer's documented invariants (chunking
//! never changes an outcome, a reader stops at its declared size, the two ways of opening an
//! archive agree). This file is also compiled by `tests/fuzz_replay.rs` with `#[path]`.
// The core's `Error` carries its context inline (as in the core itself).
#![allow(clippy::result_large_err)]

use std::fmt::Write as _;

use embedded_io::{BufRead, ErrorType, Read};
use neff::archive::{Archive, OpenOptions};
use neff::error::IgnoreWarnings;
use neff::gzip::Decoder;
use neff::header::{NeffHeader, HEADER_SIZE};
use neff::json::Tokenizer;
use neff::npy::{NpyFeed, NpyParser};
use neff::tar::TarReader;

/// The inflated-size cap in the bodies: big enough for every seed, small enough that a
/// decompression bomb costs milliseconds.
pub const FUZZ_MAX_INFLATED: u64 = 16 << 20;

/// A source handing out at most `chunk` bytes per `fill_buf`, to check that chunking never
/// changes an outcome.
pub struct Chunked<'a> {
    data: &'a [u8],
    chunk: usize,
}

impl<'a> Chunked<'a> {
    /// `data` in pieces of `chunk` bytes (at least 1).
    pub fn new(data: &'a [u8], chunk: usize) -> Self {
        Self { data, chunk: chunk.max(1) }
    }
}

impl ErrorType for Chunked<'_> {
    type Error = core::convert::Infallible;
}

impl Read for Chunked<'_> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Self::Error> {
        let n = self.chunk.min(buf.len()).min(self.data.len());
        let (head, tail) = self.data.split_at(n);
        buf.get_mut(..n).unwrap_or_default().copy_from_slice(head);
        self.data = tail;
        Ok(n)
    }
}

impl BufRead for Chunked<'_> {
    fn fill_buf(&mut self) -> Result<&[u8], Self::Error> {
        Ok(self.data.get(..self.chunk.min(self.data.len())).unwrap_or_default())
    }

    fn consume(&mut self, amount: usize) {
        self.data = self.data.get(amount..).unwrap_or_default();
    }
}

/// The chunk size a body uses for its second pass, taken from the input so the fuzzer explores
/// it too (1 to 16 bytes).
fn chunk_size(data: &[u8]) -> usize {
    usize::from(data.last().copied().unwrap_or(0) % 16) + 1
}

/// `header`: the 1024-byte header (zero-padded when the input is shorter) and the gates, with
/// and without a file size. An accepted header's sizes are consistent with the file.
pub fn header(data: &[u8]) {
    let mut bytes = [0u8; HEADER_SIZE];
    let n = data.len().min(HEADER_SIZE);
    bytes.get_mut(..n).unwrap_or_default().copy_from_slice(data.get(..n).unwrap_or_default());
    let header = NeffHeader::parse(&bytes);
    let file_size = data.len() as u64;
    for allow_other_sizes in [false, true] {
        match header.validate(Some(file_size), allow_other_sizes) {
            Ok(()) => {
                assert!(file_size >= HEADER_SIZE as u64);
                assert!(header.data_size > 0 && header.data_size <= file_size - HEADER_SIZE as u64);
                assert!(matches!(header.pkg_version, 1 | 2));
            }
            Err(e) => {
                let mut text = String::new();
                write!(text, "{e}").unwrap_or_default();
                assert!(!text.is_empty());
            }
        }
        let _ = header.validate(None, allow_other_sizes);
    }
    let mut text = String::new();
    write!(text, "{} {} {}", header.name(), header.build_version(), header.uuid).unwrap_or_default();
}

/// Reads `stream` to its end; the bytes read, or the error.
fn read_all<S: BufRead>(stream: &mut S) -> Result<Vec<u8>, S::Error> {
    let mut out = Vec::new();
    loop {
        let buf = stream.fill_buf()?;
        if buf.is_empty() {
            return Ok(out);
        }
        let n = buf.len();
        // Keep the copy bounded: the cap already bounds the stream.
        out.extend_from_slice(buf);
        stream.consume(n);
    }
}

/// `gzip`: the decoder (gzip, or raw when the magic is absent) read to its end, then its
/// trailing bytes drained; whole input and chunked input give the same bytes and outcome.
pub fn gzip(data: &[u8]) {
    let whole = gunzip(data);
    let chunked = gunzip_from(Chunked::new(data, chunk_size(data)));
    assert_eq!(whole, chunked, "chunking changed the gzip outcome");
}

fn gunzip(data: &[u8]) -> Result<(Vec<u8>, u64, u32), neff::Error> {
    gunzip_from(data)
}

fn gunzip_from<S: BufRead>(src: S) -> Result<(Vec<u8>, u64, u32), neff::Error> {
    let mut decoder = Decoder::sniff(src, 0, FUZZ_MAX_INFLATED)?;
    let out = read_all(&mut decoder)?;
    assert_eq!(decoder.total_out(), out.len() as u64);
    assert!(decoder.total_out() <= FUZZ_MAX_INFLATED);
    let trailing = decoder.drain_trailing()?;
    Ok((out, trailing.bytes, decoder.members()))
}

/// A member as the bodies record it: name, declared size, body read.
type Walked = Vec<(String, u64, Vec<u8>)>;

/// Reads every member's body through `read`, checking that it stops at the declared size.
fn read_member<R: Read>(member: &mut R, size: u64, remaining: impl Fn(&R) -> u64) -> Result<Vec<u8>, R::Error> {
    let mut body = Vec::new();
    let mut chunk = [0u8; 97];
    loop {
        let n = member.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(chunk.get(..n).unwrap_or_default());
    }
    assert_eq!(body.len() as u64, size, "a member body is exactly its declared size");
    assert_eq!(remaining(member), 0);
    Ok(body)
}

/// `tar`: the walker over a raw tar (or a gzip'd one), every body read, then drained. A
/// second walk that skips every body agrees on the names and the outcome.
pub fn tar(data: &[u8]) {
    let read = walk_tar(data, true);
    let skipped = walk_tar(data, false);
    match (&read, &skipped) {
        (Ok(a), Ok(b)) => {
            let names = |w: &Walked| w.iter().map(|(n, s, _)| (n.clone(), *s)).collect::<Vec<_>>();
            assert_eq!(names(a), names(b), "skipping bodies changed the member list");
        }
        // Reading a body can fail where skipping it does not only if the stream ends inside it,
        // which skipping reports too: both fail or both succeed.
        (Err(_), Err(_)) => {}
        _ => panic!("reading bodies and skipping them disagree: {read:?} vs {skipped:?}"),
    }
}

fn walk_tar(data: &[u8], read_bodies: bool) -> Result<Walked, neff::Error> {
    let stream = Decoder::sniff(data, 0, FUZZ_MAX_INFLATED)?;
    let mut reader: TarReader<_> = TarReader::new(stream);
    let mut out = Vec::new();
    while let Some(mut member) = reader.next_member(&mut IgnoreWarnings)? {
        let name = member.name().to_owned();
        let size = member.size();
        assert!(!name.is_empty() && !name.starts_with('/') && !name.split('/').any(|c| c == ".."));
        assert!(member.data_offset() >= member.header_offset());
        let body = if read_bodies { read_member(&mut member, size, |m| m.remaining())? } else { Vec::new() };
        out.push((name, size, body));
    }
    let after = reader.drain(&mut IgnoreWarnings)?;
    assert!(after.nonzero_bytes <= after.bytes);
    Ok(out)
}

/// `archive`: a whole NEFF, end to end: open, every member read, finish. Opened with its file
/// size and as a pure stream, it gives the same members and the same figures when both succeed.
pub fn archive(data: &[u8]) {
    let verify_integrity = data.get(HEADER_SIZE).is_some_and(|b| b & 1 == 1);
    let options = OpenOptions { verify_integrity, max_inflated: FUZZ_MAX_INFLATED, ..OpenOptions::default() };
    let sized = walk_archive(data, Some(data.len() as u64), &options);
    let streamed = walk_archive(data, None, &options);
    if let (Ok(a), Ok(b)) = (&sized, &streamed) {
        assert_eq!(a, b, "a sized and a streamed open disagree");
    }
}

fn walk_archive(
    data: &[u8],
    file_size: Option<u64>,
    options: &OpenOptions,
) -> Result<(Walked, neff::archive::Finish), neff::Error> {
    let mut archive: Archive<&[u8]> = Archive::open(data, file_size, options, &mut IgnoreWarnings)?;
    let mut members = Vec::new();
    while let Some(mut member) = archive.next_member(&mut IgnoreWarnings)? {
        let name = member.name().to_owned();
        let size = member.size();
        let body = read_member(&mut member, size, |m| m.remaining())?;
        members.push((name, size, body));
    }
    let finish = archive.finish(&mut IgnoreWarnings)?;
    assert_eq!(finish.members as usize, members.len());
    assert_eq!(archive.finish(&mut IgnoreWarnings)?, finish, "finish is idempotent");
    Ok((members, finish))
}

/// Every event of a document (or the fault that ended it), as text.
fn tokens<R: BufRead>(mut src: R) -> (Vec<String>, Option<String>) {
    let mut tok = Tokenizer::<64, 16>::new();
    let mut events = Vec::new();
    loop {
        match tok.next(&mut src) {
            Ok(neff::json::Event::End) => return (events, None),
            Ok(event) => events.push(format!("{event:?}")),
            Err(fault) => {
                // A spent tokenizer repeats its fault.
                assert_eq!(tok.next(&mut src).err(), Some(fault));
                return (events, Some(format!("{fault:?} {fault}")));
            }
        }
        assert!(events.len() <= 1 << 20);
    }
}

/// Skips the top-level value, then expects the end; the fault, if any.
fn skipped<R: BufRead>(mut src: R) -> Option<String> {
    let mut tok = Tokenizer::<64, 16>::new();
    let run = |tok: &mut Tokenizer<64, 16>, src: &mut R| -> Result<(), neff::json::Fault> {
        tok.skip_value(src)?;
        match tok.next(src)? {
            neff::json::Event::End => Ok(()),
            other => panic!("after skipping the top-level value, {other:?} instead of the end"),
        }
    };
    run(&mut tok, &mut src).err().map(|fault| format!("{fault:?}"))
}

/// `json`: the tokenizer over the whole input and over small chunks gives the same events and
/// the same fault; skipping the top-level value fails exactly when reading it does.
pub fn json(data: &[u8]) {
    let whole = tokens(data);
    let chunked = tokens(Chunked::new(data, chunk_size(data)));
    assert_eq!(whole, chunked, "chunking changed the tokens");
    let skip_whole = skipped(data);
    assert_eq!(skip_whole, skipped(Chunked::new(data, chunk_size(data))), "chunking changed a skip");
    // A received string can overflow the 64-byte scratch where a skipped one cannot: compare
    // only when reading did not stop on a capacity.
    let read_failed = whole.1.is_some();
    let capacity = whole.1.as_deref().is_some_and(|f| f.contains("Capacity"));
    if !capacity {
        assert_eq!(read_failed, skip_whole.is_some(), "read: {:?}, skip: {skip_whole:?}", whole.1);
    }
}

/// `npy`: the header parser over the whole input and fed in chunks gives the same outcome; an
/// accepted header's data offset is the bytes it consumed and its data length never overflows.
pub fn npy(data: &[u8]) {
    let mut whole: NpyParser = NpyParser::new();
    let first = whole.feed(data);
    let whole_result = whole.finish();
    let mut chunked: NpyParser = NpyParser::new();
    for piece in data.chunks(chunk_size(data)) {
        match chunked.feed(piece) {
            Ok(NpyFeed::NeedMore) => {}
            Ok(NpyFeed::Complete { header_bytes, .. }) => {
                assert!(header_bytes <= piece.len());
                break;
            }
            Err(_) => break,
        }
    }
    assert_eq!(whole_result, chunked.finish(), "chunking changed the .npy outcome");
    if let Ok(NpyFeed::Complete { header, header_bytes }) = first {
        assert_eq!(header.data_offset, header_bytes as u64);
        assert_eq!(whole.consumed(), header.data_offset);
        let _ = header.data_len();
        assert!(header.shape().len() <= neff::npy::MAX_DIMS_LIMIT);
    }
}
