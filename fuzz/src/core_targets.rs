//! Fuzz target bodies for the core's input layers: header, gzip, tar, the whole archive, the
//! JSON tokenizer, the `.npy` header parser, the manifest documents (with `neff.json`'s I/O
//! join) and the loader's check over a whole NEFF (raw bytes, and a real NEFF with one JSON
//! member replaced by the input).
//!
//! Each body feeds arbitrary bytes to one layer and checks what must hold whatever the input:
//! no panic (the harness sees one as a crash), and the layer's documented invariants (chunking
//! never changes an outcome, a reader stops at its declared size, the two ways of opening an
//! archive agree). This file is also compiled by `tests/fuzz_replay.rs` with `#[path]`.
// The core's `Error` carries its context inline (as in the core itself).
#![allow(clippy::result_large_err)]

use std::fmt::Write as _;
use std::io::{Read as _, Write as _};
use std::path::PathBuf;
use std::sync::OnceLock;

use embedded_io::{BufRead, ErrorType, Read};
use neff::archive::{Archive, OpenOptions};
use neff::arena::Arena;
use neff::error::IgnoreWarnings;
use neff::gzip::Decoder;
use neff::header::{NeffHeader, HEADER_SIZE};
use neff::json::Tokenizer;
use neff::loader::{JsonLines, LoadOptions, LoadReport, Loader};
use neff::manifest::{
    DefJson, Document, EngineJson, Entry, EntryAt, IoJoin, Kelf, NeffJson, DEPTH_LIMIT, STRING_SCRATCH,
};
use neff::npy::{NpyFeed, NpyParser};
use neff::tar::TarReader;
use neff::{ErrorKind, Warning};

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
    let mut scratch = [0; 64];
    let mut tok = Tokenizer::new(&mut scratch, 16);
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
    let mut scratch = [0; 64];
    let mut tok = Tokenizer::new(&mut scratch, 16);
    let run = |tok: &mut Tokenizer<'_>, src: &mut R| -> Result<(), neff::json::Fault> {
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

/// The documents the `manifest` body parses; the input's first byte picks one (modulo 4).
pub const MANIFEST_MEMBERS: [&str; 4] = ["neff.json", "kelf-0.json", "sg00/def.json", "sg00/PE.json"];

/// Parses `src` as document `D` (member `member`), counting entries and warnings; the outcome
/// as text (the error's kind and key path) so two parses can be compared.
fn parse_doc<D: Document, R: BufRead>(mut src: R, member: &str) -> Result<(u64, u32), String> {
    let mut scratch = vec![0; STRING_SCRATCH];
    let mut tok = Tokenizer::new(&mut scratch, DEPTH_LIMIT);
    let mut warnings = 0u32;
    let mut entries = 0u64;
    let mut visit = |_: Entry<'_>, _: &EntryAt<'_>| -> Result<(), neff::manifest::DocFault> {
        entries += 1;
        Ok(())
    };
    let mut sink = |w: &Warning| {
        let mut text = String::new();
        write!(text, "{w}").unwrap_or_default();
        warnings += 1;
    };
    match D::parse(&mut tok, &mut src, member, &mut sink, &mut visit) {
        Ok(_) => Ok((entries, warnings)),
        Err(e) => {
            let mut text = String::new();
            write!(text, "{e}").unwrap_or_default();
            assert!(!text.is_empty());
            Err(format!("{:?} at {}", e.kind, e.key_path.as_str()))
        }
    }
}

/// One I/O tensor of the join, owned.
type JoinedTensor = (String, String, Vec<u32>, u64);

/// `neff.json` parsed with the I/O join over an arena of `arena_size` bytes: the tensors, or
/// the error.
fn neff_io(data: &[u8], arena_size: usize) -> Result<Vec<JoinedTensor>, neff::Error> {
    let mut scratch = vec![0; STRING_SCRATCH];
    let mut tok = Tokenizer::new(&mut scratch, DEPTH_LIMIT);
    let mut buf = vec![0u8; arena_size];
    let mut arena = Arena::new(&mut buf);
    // What the caller keeps in the bottom part stays through the join.
    let kept = arena.push_str("kept").map_err(|k| neff::Error::in_member(neff::Stage::NeffJson, "neff.json", 0, k))?;
    let mut join = IoJoin::new(&arena);
    let mut visit = |e: Entry<'_>, at: &EntryAt<'_>| join.see(&mut arena, &e).map_err(|k| at.error(k));
    let mut src = data;
    NeffJson::parse(&mut tok, &mut src, "neff.json", &mut IgnoreWarnings, &mut visit)?;
    let mut io = Vec::new();
    let end = data.len() as u64;
    join.finish(&mut arena, "neff.json", end, &mut IgnoreWarnings, &mut |t| {
        io.push((t.name.to_owned(), t.dtype.to_owned(), t.shape.to_vec(), t.size));
    })?;
    assert_eq!(arena.str(kept), "kept", "the join's scratch overwrote the arena's bottom part");
    Ok(io)
}

/// `manifest`: the first byte picks the document (`neff.json`, a KELF, a `def.json`, an engine
/// JSON), the rest is parsed with the core's generated parser; whole and chunked input give the
/// same outcome. For `neff.json`, the I/O join also runs over a small and a large arena: a
/// full arena is an `ArenaFull` error, and otherwise both agree.
pub fn manifest(data: &[u8]) {
    let Some((&selector, body)) = data.split_first() else { return };
    let member = MANIFEST_MEMBERS.get(usize::from(selector % 4)).copied().unwrap_or_default();
    let run = |chunk: Option<usize>| match (selector % 4, chunk) {
        (0, None) => parse_doc::<NeffJson, _>(body, member),
        (0, Some(c)) => parse_doc::<NeffJson, _>(Chunked::new(body, c), member),
        (1, None) => parse_doc::<Kelf, _>(body, member),
        (1, Some(c)) => parse_doc::<Kelf, _>(Chunked::new(body, c), member),
        (2, None) => parse_doc::<DefJson, _>(body, member),
        (2, Some(c)) => parse_doc::<DefJson, _>(Chunked::new(body, c), member),
        (_, None) => parse_doc::<EngineJson, _>(body, member),
        (_, Some(c)) => parse_doc::<EngineJson, _>(Chunked::new(body, c), member),
    };
    let whole = run(None);
    assert_eq!(whole, run(Some(chunk_size(data))), "chunking changed the {member} outcome");
    if selector % 4 != 0 {
        return;
    }
    let large = neff_io(body, 1 << 20);
    let small = neff_io(body, 512);
    // Without the join the parse sees the same document: it fails only where the join's run did.
    if whole.is_err() {
        assert!(large.is_err(), "the join accepted what the plain parse refused: {whole:?}");
    }
    match (&small, &large) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "the arena's size changed the I/O tensors"),
        (Err(e), Ok(_)) => assert!(matches!(e.kind, ErrorKind::ArenaFull { .. }), "small arena: {e:?}"),
        (Ok(_), Err(e)) => panic!("a 512-byte arena succeeded where 1 MiB failed: {e:?}"),
        (Err(_), Err(_)) => {}
    }
    if let Ok(io) = &large {
        for (name, dtype, shape, _) in io {
            assert!(name.len() <= body.len() && dtype.len() <= body.len() && shape.len() <= body.len());
        }
    }
}

/// The arena records of the `loader_check` bodies (the lent arena is this plus the
/// tokenizer's string scratch).
pub const FUZZ_LOADER_ARENA: usize = 64 << 10;

/// `Loader::check` over `data` as a whole NEFF (header + gzip'd tar) with 64 KiB of arena
/// records; the report and a per-event JSON-lines observer are written out too. The error, if
/// any.
pub fn check_neff(data: &[u8]) -> Result<LoadReport, neff::Error> {
    let options = OpenOptions { max_inflated: FUZZ_MAX_INFLATED, ..OpenOptions::default() };
    let mut archive: Archive<&[u8]> = Archive::open(data, Some(data.len() as u64), &options, &mut IgnoreWarnings)?;
    let mut arena = vec![0u8; STRING_SCRATCH + FUZZ_LOADER_ARENA];
    let allow_legacy = data.get(HEADER_SIZE + 4).is_some_and(|b| b & 1 == 1);
    let mut loader = Loader::new(&mut arena, LoadOptions { allow_legacy, ..LoadOptions::default() });
    let mut report = LoadReport::new();
    let mut lines_buf = vec![0u8; 16 << 10];
    let mut lines = JsonLines::<&mut [u8], 512>::new(&mut lines_buf[..]);
    let mut warnings = 0u32;
    let mut sink = |w: &Warning| {
        let mut text = String::new();
        write!(text, "{w}").unwrap_or_default();
        warnings = warnings.saturating_add(1);
    };
    let result = loader.check(&mut archive, None, &mut report, &mut lines, &mut sink);
    assert!(report.arena_peak <= FUZZ_LOADER_ARENA as u64);
    assert_eq!(report.warnings, warnings);
    noted_check_agrees(data, &options, allow_legacy, &result, &report);
    let mut json = [0u8; 1024];
    let _ = report.to_json(&mut json);
    match result {
        Ok(()) => Ok(report),
        Err(e) => {
            let mut text = String::new();
            write!(text, "{e}").unwrap_or_default();
            assert!(!text.is_empty());
            Err(e)
        }
    }
}

/// A [`NullDevice`](neff::hal::NullDevice) that lends the loader a notebook of `NOTES`
/// landings: the first go there, the rest to the arena.
struct NotedNull {
    dev: neff::hal::NullDevice,
    notes: Vec<u8>,
}

impl NotedNull {
    const NOTES: usize = 5;

    fn range(&self, at: u64, len: usize) -> Result<std::ops::Range<usize>, neff::hal::HalError> {
        let start = usize::try_from(at).unwrap_or(usize::MAX);
        let end = start.checked_add(len).filter(|&e| e <= self.notes.len());
        let bad = neff::hal::HalError::OutOfBounds {
            region: neff::hal::RegionId(0),
            offset: at,
            len: len as u64,
            size: self.notes.len() as u64,
        };
        end.map(|end| start..end).ok_or(bad)
    }
}

impl neff::hal::Hal for NotedNull {
    type Error = neff::hal::HalError;
    fn arch(&self) -> neff::manifest::Arch {
        self.dev.arch()
    }
    fn alloc(&mut self, req: &neff::hal::AllocRequest) -> Result<neff::hal::RegionId, Self::Error> {
        self.dev.alloc(req)
    }
    fn write(&mut self, region: neff::hal::RegionId, offset: u64, bytes: &[u8]) -> Result<(), Self::Error> {
        self.dev.write(region, offset, bytes)
    }
    fn adopt(
        &mut self,
        staged: neff::hal::RegionId,
        req: &neff::hal::AllocRequest,
    ) -> Result<neff::hal::RegionId, Self::Error> {
        self.dev.adopt(staged, req)
    }
    fn release(&mut self, region: neff::hal::RegionId) -> Result<(), Self::Error> {
        self.dev.release(region)
    }
    fn address(&self, region: neff::hal::RegionId) -> Result<u64, Self::Error> {
        self.dev.address(region)
    }
    fn device_arch(&self) -> Option<neff::manifest::Arch> {
        self.dev.device_arch()
    }
    fn keeps_nothing(&self) -> bool {
        self.dev.keeps_nothing()
    }
    fn notebook_len(&self) -> u64 {
        self.notes.len() as u64
    }
    fn note(&mut self, at: u64, bytes: &[u8]) -> Result<(), Self::Error> {
        let range = self.range(at, bytes.len())?;
        self.notes[range].copy_from_slice(bytes);
        Ok(())
    }
    fn recall(&self, at: u64, out: &mut [u8]) -> Result<(), Self::Error> {
        out.copy_from_slice(&self.notes[self.range(at, out.len())?]);
        Ok(())
    }
}

/// The same check with a few landings in a device notebook gives the same outcome and report,
/// in no more arena (a check that ran out of arena may pass with the notebook).
fn noted_check_agrees(
    data: &[u8],
    options: &OpenOptions,
    allow_legacy: bool,
    plain: &Result<(), neff::Error>,
    plain_report: &LoadReport,
) {
    let Ok(mut archive) = Archive::<&[u8]>::open(data, Some(data.len() as u64), options, &mut IgnoreWarnings) else {
        return;
    };
    let mut arena = vec![0u8; STRING_SCRATCH + FUZZ_LOADER_ARENA];
    let mut loader = Loader::new(&mut arena, LoadOptions { allow_legacy, ..LoadOptions::default() });
    let mut report = LoadReport::new();
    let mut dev = NotedNull {
        dev: neff::hal::NullDevice::new(None),
        notes: vec![0u8; NotedNull::NOTES * neff::hal::LANDING_NOTE],
    };
    let noted = loader.load(&mut archive, &mut dev, &mut report, &mut neff::loader::NoObserver, &mut IgnoreWarnings);
    if matches!(plain, Err(e) if matches!(e.kind, ErrorKind::ArenaFull { .. })) {
        return;
    }
    match (plain, &noted) {
        (Ok(()), Ok(())) => {}
        (Err(a), Err(b)) => assert_eq!(a.kind, b.kind, "the notebook changed the error"),
        _ => panic!("the notebook changed the outcome: {plain:?} vs {noted:?}"),
    }
    assert!(report.arena_peak <= plain_report.arena_peak, "the notebook took arena");
    report.arena_peak = plain_report.arena_peak;
    assert_eq!(&report, plain_report, "the notebook changed the report");
}

/// `loader_check`: [`check_neff`] over the input.
pub fn loader_check(data: &[u8]) {
    let _ = check_neff(data);
}

/// The real NEFF the `loader_members` body rebuilds: its header and its regular members in tar
/// order, decoded once with the `tar` and `flate2` crates (independently of the core), each
/// member kept as its ustar entry (header, body, padding) ready to be concatenated.
struct BaseNeff {
    header: Vec<u8>,
    /// Each member's name and ustar entry.
    entries: Vec<(String, Vec<u8>)>,
    /// Indices (in `entries`) of the JSON members, which the input replaces.
    json: Vec<usize>,
}

/// The NEFF `loader_members` starts from: `$NEFF_FUZZ_BASE`, else `matmul_small.neff` in
/// `../shared/fixtures/public/nkipy/` beside the repository (looked for upwards from the crate
/// compiling this file, so the fuzz crate and the core's replay find the same one).
pub fn base_neff_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("NEFF_FUZZ_BASE") {
        return Some(PathBuf::from(path));
    }
    let mut dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for _ in 0..4 {
        let candidate = dir.join("../shared/fixtures/public/nkipy/matmul_small.neff");
        if candidate.exists() {
            return Some(candidate);
        }
        if !dir.pop() {
            break;
        }
    }
    None
}

fn decode_base(neff: &[u8]) -> Option<BaseNeff> {
    let header = neff.get(..HEADER_SIZE)?.to_vec();
    let gz = flate2::read::GzDecoder::new(neff.get(HEADER_SIZE..)?);
    let mut archive = tar::Archive::new(gz);
    let mut entries = Vec::new();
    for entry in archive.entries().ok()? {
        let mut entry = entry.ok()?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let name = entry.path().ok()?.to_string_lossy().into_owned();
        let mut body = Vec::new();
        entry.read_to_end(&mut body).ok()?;
        let ustar = ustar_entry(&name, &body).ok()?;
        entries.push((name, ustar));
    }
    let json: Vec<usize> =
        entries.iter().enumerate().filter(|(_, (n, _))| n.ends_with(".json")).map(|(i, _)| i).collect();
    (!json.is_empty()).then_some(BaseNeff { header, entries, json })
}

/// One ustar entry: header, `body`, padding to a 512-byte block (no end-of-archive blocks).
fn ustar_entry(name: &str, body: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut h = tar::Header::new_ustar();
    h.set_size(body.len() as u64);
    h.set_mode(0o664);
    h.set_mtime(0);
    h.set_entry_type(tar::EntryType::Regular);
    h.set_path(name)?;
    h.set_cksum();
    let mut out = Vec::with_capacity(body.len() + 1024);
    out.extend_from_slice(h.as_bytes());
    out.extend_from_slice(body);
    out.resize(out.len().div_ceil(512) * 512, 0);
    Ok(out)
}

fn base_neff() -> Option<&'static BaseNeff> {
    static BASE: OnceLock<Option<BaseNeff>> = OnceLock::new();
    BASE.get_or_init(|| decode_base(&std::fs::read(base_neff_path()?).ok()?)).as_ref()
}

/// The base NEFF with entry `replace`'s body being `body`: the tar, deflated with stored
/// blocks (the inflater has targets of its own; here the cost goes to the loader), under the
/// base's header with its `data_size` set.
fn pack_neff(base: &BaseNeff, replace: usize, body: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut tar_bytes = Vec::with_capacity(base.entries.iter().map(|(_, e)| e.len()).sum::<usize>() + 2048);
    for (i, (name, entry)) in base.entries.iter().enumerate() {
        if i == replace {
            tar_bytes.extend_from_slice(&ustar_entry(name, body)?);
        } else {
            tar_bytes.extend_from_slice(entry);
        }
    }
    tar_bytes.resize(tar_bytes.len() + 1024, 0);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::none());
    gz.write_all(&tar_bytes)?;
    let payload = gz.finish()?;
    let mut out = base.header.clone();
    out.get_mut(16..24).unwrap_or_default().copy_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&payload);
    Ok(out)
}

/// `loader_members`: a real NEFF with one JSON member's bytes replaced by the input (byte 0
/// picks the member, modulo their count), repacked (tar, gzip, header) and checked with
/// [`check_neff`]. Without the base NEFF (no `../shared`) it does nothing.
pub fn loader_members(data: &[u8]) {
    let Some(base) = base_neff() else { return };
    let Some((&selector, body)) = data.split_first() else { return };
    let pick = base.json.get(usize::from(selector) % base.json.len()).copied().unwrap_or_default();
    if let Ok(neff) = pack_neff(base, pick, body) {
        let _ = check_neff(&neff);
    }
}
