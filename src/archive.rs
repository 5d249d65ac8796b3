//! The container as one stream: header -> gzip (or raw) -> tar (docs/format.md §1-§3).
//!
//! ```text
//! file offset 0      1024-byte neff_header_t          -> header::NeffHeader, gates
//! file offset 1024   data_size bytes of payload        -> Payload (limit + optional digest)
//!                      1f 8b ... gzip member(s)        -> gzip::Decoder (32 KiB window)
//!                      (else) raw tar                  -> gzip::Decoder in raw mode
//!                      zero padding up to data_size
//! file offset 1024+data_size   trailing bytes (warned, ignored)
//! ```
//!
//! [`Archive`] reads a NEFF forward exactly once from an `embedded_io::BufRead` source, with
//! no heap: every buffer is a field whose size is fixed by the type. Usage:
//!
//! ```
//! # fn demo(neff: &[u8]) -> neff::Result<()> {
//! use embedded_io::Read as _;
//! use neff::archive::{Archive, OpenOptions};
//! let mut sink = |w: &neff::Warning| { let _ = w; };
//! let mut archive: Archive<&[u8]> =
//!     Archive::open(neff, Some(neff.len() as u64), &OpenOptions::default(), &mut sink)?;
//! while let Some(mut member) = archive.next_member(&mut sink)? {
//!     let mut chunk = [0u8; 256];
//!     while member.read(&mut chunk)? > 0 {} // or skip it: dropping is enough
//! }
//! let finish = archive.finish(&mut sink)?;  // CRC-32/ISIZE, padding, trailing, integrity
//! # let _ = finish; Ok(()) }
//! ```
//!
//! `Archive` is large (the inflate window and state live inside it; see [`Archive`] for its
//! size); on a small target keep it in a `static` cell or a long-lived frame, not in a deep call.
//!
//! # Inflating elsewhere
//!
//! The layer under the tar walker is a [`Container`]: header gates, the payload span, gzip (or
//! raw) decoding with an [`Inflate`] of the caller's choice, and the closing checks. `Archive::open`
//! builds one inside the archive, inflating with miniz_oxide. A host can instead open a
//! `Container` with its own inflater (the `neff` command uses zlib-rs), move it to another
//! thread, and give the archive the tar stream it produces through
//! [`Archive::open_inflated`]: the same gates, the same gzip semantics (member headers, CRC-32
//! and ISIZE, further members, padding, `max_inflated`) and the same errors, computed by the
//! same code, with the inflation beside the parsing.
//!
//! **Arithmetic.** `data_size` comes from the file: every sum with it is checked or saturating
//! (on a stream nothing bounds it before the payload is read). Other offsets and counts are of
//! bytes the source really delivered, which cannot reach 2^64: they saturate.
#![deny(clippy::arithmetic_side_effects)]

use core::fmt;

use embedded_io::{BufRead, ErrorType, Read};

use crate::error::{source_error, OffsetBase, StreamError};
use crate::gzip::{Compression, Decoder, GzipWarning, Inflate, MinizInflater, DEFAULT_MAX_INFLATED};
use crate::header::{HeaderError, HeaderWarning, Integrity, NeffHeader, PayloadHasher, HEADER_SIZE};
use crate::tar::{Member, TarReader, TarWarning, DEFAULT_NAME_CAPACITY};
use crate::{Error, ErrorKind, Stage, Warning, WarningKind, WarningSink};

/// Options for [`Archive::open`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct OpenOptions {
    /// Compute MD5 (pkg 2) / SHA-256 (pkg 1) over the payload `data[0..data_size]` as it
    /// streams past and compare it with the header's `hash` (MD5 in either byte order real
    /// compilers write: docs/format.md §2.6). The outcome is in [`Finish::integrity`]; a
    /// mismatch is a warning, never an error: a caller that wants it fatal checks the outcome.
    /// Default off (the runtime verifies only when asked, too).
    pub verify_integrity: bool,
    /// Accept a `header_size` other than 1024 (with a warning). The payload is still read at
    /// offset 1024, as the runtime does. Default off.
    pub allow_header_size_other_than_1024: bool,
    /// Cap on the inflated size; beyond it the load fails with a `CapacityError` naming
    /// `max_inflated`. Default 64 GiB.
    pub max_inflated: u64,
}

impl Default for OpenOptions {
    fn default() -> Self {
        Self { verify_integrity: false, allow_header_size_other_than_1024: false, max_inflated: DEFAULT_MAX_INFLATED }
    }
}

/// What [`Archive::finish`] found at the end of the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Finish {
    /// Gzip or raw tar.
    pub compression: Compression,
    /// Gzip members read (0 for a raw tar).
    pub gzip_members: u32,
    /// Regular tar members (dropped `wavegraph-bin.json` members not counted).
    pub members: u32,
    /// Bytes of the tar stream (inflated size).
    pub inflated_bytes: u64,
    /// Payload bytes up to the end of the last gzip trailer (raw tar: the whole payload).
    pub compressed_bytes: u64,
    /// Payload bytes after that, inside `data_size` (zero padding in real NEFFs).
    pub padding_bytes: u64,
    /// File bytes after `1024 + data_size`.
    pub trailing_bytes: u64,
    /// Outcome of the optional integrity check.
    pub integrity: Integrity,
}

/// The payload span of the source: at most `data_size` bytes, fed to the integrity digest
/// as they pass (each byte exactly once, without buffering).
pub struct Payload<R> {
    src: R,
    remaining: u64,
    hasher: PayloadHasher,
    /// Bytes at the front of the source's current buffer that the digest has already seen.
    hashed_ahead: usize,
}

impl<R> fmt::Debug for Payload<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Payload").field("remaining", &self.remaining).field("hasher", &self.hasher).finish()
    }
}

impl<R: BufRead> Payload<R> {
    /// Payload bytes not consumed yet.
    pub fn remaining(&self) -> u64 {
        self.remaining
    }
}

impl<R: BufRead> ErrorType for Payload<R> {
    type Error = R::Error;
}

impl<R: BufRead> BufRead for Payload<R> {
    #[inline]
    fn fill_buf(&mut self) -> Result<&[u8], R::Error> {
        if self.remaining == 0 {
            return Ok(&[]);
        }
        let buf = self.src.fill_buf()?;
        let n = usize::try_from(self.remaining).unwrap_or(usize::MAX).min(buf.len());
        let buf = buf.get(..n).unwrap_or(&[]);
        if self.hasher.is_active() && n > self.hashed_ahead {
            self.hasher.update(buf.get(self.hashed_ahead..).unwrap_or(&[]));
            self.hashed_ahead = n;
        }
        Ok(buf)
    }

    fn consume(&mut self, amt: usize) {
        let amt = usize::try_from(self.remaining).unwrap_or(usize::MAX).min(amt);
        self.src.consume(amt);
        // `amt <= remaining`.
        self.remaining = self.remaining.saturating_sub(amt as u64);
        self.hashed_ahead = self.hashed_ahead.saturating_sub(amt);
    }
}

impl<R: BufRead> Read for Payload<R> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, R::Error> {
        crate::read_buffered(self, buf)
    }
}

/// The tar stream of a NEFF: what a [`Member`] reads from.
pub type Stream<R> = Decoder<Payload<R>>;

/// A member of an [`Archive`].
pub type ArchiveMember<'a, R> = Member<'a, Stream<R>>;

/// A tar stream that a [`Container`] produced elsewhere (another thread, another inflater),
/// read by an archive opened with [`Archive::open_inflated`].
///
/// A read that fails because the container failed returns an error whose
/// [`source`](core::error::Error::source) is the container's [`StreamError`]: the archive
/// passes it on unchanged (stage, kind, file offset), as if it had inflated the stream itself.
pub trait InflatedSource: BufRead {
    /// The container's closing figures, once the stream has ended: what [`Container::finish`]
    /// returned, with the warnings it raised replayed into `sink` in their order (or the error
    /// it returned).
    fn finish(&mut self, sink: &mut dyn WarningSink) -> Result<Finish, Error>;
}

/// A container's error, carried through `embedded_io` by an [`InflatedSource`] (whose
/// `Error` it can be) to the archive, which passes it on unchanged: it is this error's
/// [`source`](core::error::Error::source), as [`InflatedSource`] asks.
#[derive(Debug)]
pub struct Relayed(pub StreamError);

impl fmt::Display for Relayed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl core::error::Error for Relayed {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        Some(&self.0)
    }
}

impl embedded_io::Error for Relayed {
    fn kind(&self) -> embedded_io::ErrorKind {
        embedded_io::Error::kind(&self.0)
    }
}

/// What an archive over an inflated stream knows of the container that produced it.
struct Inflated<R> {
    compression: Compression,
    finish: fn(&mut R, &mut dyn WarningSink) -> Result<Finish, Error>,
}

/// Lends a sink of any type as `&mut dyn WarningSink`.
struct Forward<'s, S: ?Sized>(&'s mut S);

impl<S: WarningSink + ?Sized> WarningSink for Forward<'_, S> {
    fn warn(&mut self, warning: &Warning) {
        self.0.warn(warning);
    }
}

/// A NEFF opened as a stream of tar members.
///
/// Its tar walker has the target's name capacity ([`DEFAULT_NAME_CAPACITY`]: 1 KiB on a
/// controller, 16 KiB on a host), the one the loader reads with. With the controller's,
/// `size_of::<Archive<&[u8]>>()` would be **45 896 bytes** on x86-64 (asserted in a test): the
/// 32 KiB inflate window, miniz_oxide's `DecompressorOxide` (~10.3 KiB), the decoded header, a
/// 512-byte tar block, the name buffer, the digest state, the closing figures (with the
/// integrity outcome: the computed and stored digests, 64 bytes), and on a host the error an
/// inflate call met while its bytes are read (48 bytes; a controller's image has none). PAX
/// headers stream past.
pub struct Archive<R> {
    header: NeffHeader,
    file_size: Option<u64>,
    tar: TarReader<Stream<R>, DEFAULT_NAME_CAPACITY>,
    finished: Option<Finish>,
    /// Set by [`Archive::open_inflated`]: the tar stream comes from a container elsewhere.
    inflated: Option<Inflated<R>>,
}

// The whole container state (window, inflater, tar buffers) stays well under 64 KiB on a
// controller; a change that breaks this fails the firmware build, not a test.
#[cfg(target_os = "none")]
const _: () = assert!(core::mem::size_of::<Archive<&[u8]>>() < 48 * 1024);

impl<R> fmt::Debug for Archive<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Archive")
            .field("header", &self.header)
            .field("file_size", &self.file_size)
            .field("tar", &self.tar)
            .finish_non_exhaustive()
    }
}

/// The header field a gate failure points at.
fn gate_offset(e: &HeaderError) -> u64 {
    use crate::header::field;
    let at = match e {
        HeaderError::ShortFile { .. } | HeaderError::UnsupportedPackager { .. } => field::PKG_VERSION.start,
        HeaderError::HeaderSizeNot1024 { .. } | HeaderError::HeaderSizePastEnd { .. } => field::HEADER_SIZE.start,
        HeaderError::UnsupportedVersion { .. } => field::VERSION_MAJOR.start,
        HeaderError::NewerFeatures { .. } => field::FEATURE_BITS.start,
        HeaderError::DataSizePastEnd { .. } | HeaderError::ZeroDataSize => field::DATA_SIZE.start,
    };
    at as u64
}

fn header_error(e: HeaderError) -> Error {
    Error::at_file(Stage::Header, gate_offset(&e), ErrorKind::Header(e))
}

fn header_warning(sink: &mut (impl WarningSink + ?Sized), offset: u64, kind: HeaderWarning) {
    sink.warn(&Warning::at_file(Stage::Header, offset, WarningKind::Header(kind)));
}

/// Reads the 1024-byte header from `src`, applies the runtime's gates and raises the header
/// warnings (`header_size`, trailing bytes of a file of known size).
fn read_header<R: BufRead>(
    src: &mut R,
    file_size: Option<u64>,
    opts: &OpenOptions,
    sink: &mut (impl WarningSink + ?Sized),
) -> Result<NeffHeader, Error> {
    if let Some(size) = file_size.filter(|&s| s < HEADER_SIZE as u64) {
        return Err(header_error(HeaderError::ShortFile { received: size }));
    }
    let mut bytes = [0u8; HEADER_SIZE];
    let mut filled = 0;
    while filled < HEADER_SIZE {
        let buf = src.fill_buf().map_err(|e| source_error(filled as u64, &e))?;
        if buf.is_empty() {
            return Err(header_error(HeaderError::ShortFile { received: filled as u64 }));
        }
        // `filled < HEADER_SIZE`: the difference and the new end stay within the header.
        let n = buf.len().min(HEADER_SIZE.saturating_sub(filled));
        let end = filled.saturating_add(n);
        if let (Some(dst), Some(from)) = (bytes.get_mut(filled..end), buf.get(..n)) {
            dst.copy_from_slice(from);
        }
        src.consume(n);
        filled = end;
    }
    let header = NeffHeader::parse(&bytes);
    header.validate(file_size, opts.allow_header_size_other_than_1024).map_err(header_error)?;
    if header.header_size != HEADER_SIZE as u64 {
        let kind = HeaderWarning::HeaderSizeAllowed { header_size: header.header_size };
        header_warning(sink, crate::header::field::HEADER_SIZE.start as u64, kind);
    }
    // Saturating: on a stream (no file size) nothing has bounded `data_size` yet.
    let payload_end = (HEADER_SIZE as u64).saturating_add(header.data_size);
    if let Some(count) = file_size.map(|s| s.saturating_sub(payload_end)).filter(|&c| c > 0) {
        header_warning(sink, payload_end, HeaderWarning::TrailingBytes { count });
    }
    Ok(header)
}

/// The payload span of `src` (positioned after the header), with the integrity digest if asked.
fn payload<R>(src: R, header: &NeffHeader, opts: &OpenOptions) -> Payload<R> {
    Payload {
        src,
        remaining: header.data_size,
        hasher: PayloadHasher::for_header(header, opts.verify_integrity),
        hashed_ahead: 0,
    }
}

/// The container's closing checks, once the tar stream has been read to its end: what follows
/// the last gzip member, the padding up to `data_size`, the trailing bytes and the integrity
/// check. `members` is left 0: the tar layer counts them.
fn close<R: BufRead, I: Inflate>(
    header: &NeffHeader,
    file_size: Option<u64>,
    decoder: &mut Decoder<Payload<R>, I>,
    sink: &mut (impl WarningSink + ?Sized),
) -> Result<Finish, Error> {
    let compression = decoder.compression();
    let trailing = decoder.drain_trailing()?;
    if let Some(first_offset) = trailing.first_nonzero_offset {
        let kind = GzipWarning::TrailingData { first_offset, nonzero_bytes: trailing.nonzero_bytes };
        sink.warn(&Warning::at_file(Stage::Gzip, first_offset, WarningKind::Gzip(kind)));
    }
    let gzip_members = decoder.members();
    if gzip_members > 1 {
        let kind = GzipWarning::MultipleMembers { count: gzip_members };
        sink.warn(&Warning::at_file(Stage::Gzip, HEADER_SIZE as u64, WarningKind::Gzip(kind)));
    }
    let inflated_bytes = decoder.total_out();
    let compressed_bytes = decoder.compressed_len();
    let payload = decoder.source_mut();
    let data_size = header.data_size;
    if payload.remaining() > 0 {
        // The header field at fault, as the gate names it for a file of known size: the same
        // refusal at the same byte whatever the source.
        let e = HeaderError::DataSizePastEnd { data_size, available: data_size.saturating_sub(payload.remaining()) };
        return Err(header_error(e));
    }
    let integrity = payload.hasher.finish_in_place(header);
    if let Integrity::Mismatch { computed, .. } = integrity {
        let kind = HeaderWarning::IntegrityMismatch { algorithm: computed.algorithm() };
        header_warning(sink, crate::header::field::HASH.start as u64, kind);
    }
    // Saturating: `data_size` comes from the file.
    let payload_end = (HEADER_SIZE as u64).saturating_add(data_size);
    let trailing_bytes = match file_size {
        Some(size) => size.saturating_sub(payload_end),
        None => {
            let mut count = 0u64;
            loop {
                let buf = payload.src.fill_buf().map_err(|e| source_error(payload_end.saturating_add(count), &e))?;
                if buf.is_empty() {
                    break;
                }
                let n = buf.len();
                payload.src.consume(n);
                count = count.saturating_add(n as u64);
            }
            if count > 0 {
                header_warning(sink, payload_end, HeaderWarning::TrailingBytes { count });
            }
            count
        }
    };
    Ok(Finish {
        compression,
        gzip_members,
        members: 0,
        inflated_bytes,
        compressed_bytes,
        padding_bytes: data_size.saturating_sub(compressed_bytes),
        trailing_bytes,
        integrity,
    })
}

impl<R: BufRead> Archive<R> {
    /// Reads and gates the header, then sniffs gzip vs raw tar at offset 1024 (parsing the
    /// first gzip member header).
    ///
    /// `file_size` is the whole file's size when known. When it is `None` (a pure stream), a
    /// payload shorter than `data_size` is found while reading (`Truncated`, or
    /// `HeaderError::DataSizePastEnd` if only the padding is missing) and trailing bytes are
    /// counted by [`Archive::finish`], which drains the source.
    pub fn open(
        mut src: R,
        file_size: Option<u64>,
        opts: &OpenOptions,
        sink: &mut (impl WarningSink + ?Sized),
    ) -> Result<Self, Error> {
        let header = read_header(&mut src, file_size, opts, sink)?;
        let mut archive = Self {
            header,
            file_size,
            tar: TarReader::new(Decoder::unsniffed(payload(src, &header, opts), HEADER_SIZE as u64, opts.max_inflated)),
            finished: None,
            inflated: None,
        };
        archive.tar.stream_mut().sniff_in_place()?;
        Ok(archive)
    }

    /// The decoded header.
    pub fn header(&self) -> &NeffHeader {
        &self.header
    }

    /// Gzip or raw tar.
    pub fn compression(&self) -> Compression {
        match &self.inflated {
            Some(inflated) => inflated.compression,
            None => self.tar.stream().compression(),
        }
    }

    /// Bytes of the tar stream consumed so far.
    pub fn tar_offset(&self) -> u64 {
        self.tar.offset()
    }

    /// File offset of the next payload byte to be read; `None` when the payload is read
    /// elsewhere ([`Archive::open_inflated`]).
    pub fn file_offset(&self) -> Option<u64> {
        match self.inflated {
            Some(_) => None,
            // `consumed <= data_size`, and the payload was really read: no saturation in practice.
            None => Some((HEADER_SIZE as u64).saturating_add(self.tar.stream().consumed())),
        }
    }

    /// Yield tar members whose name is not UTF-8 instead of skipping them (with a warning):
    /// see [`TarReader::set_raw_names`]. Off by default (the loader's setting).
    pub fn set_raw_names(&mut self, yes: bool) {
        self.tar.set_raw_names(yes);
    }

    /// The path of the last tar header read ([`TarReader::last_name`]).
    pub fn last_member_name(&self) -> &str {
        self.tar.last_name()
    }

    /// The next regular tar member, or `None` after the last one (or after `finish`).
    ///
    /// The member borrows the archive; drop it (read or not) before calling again.
    pub fn next_member(
        &mut self,
        sink: &mut (impl WarningSink + ?Sized),
    ) -> Result<Option<ArchiveMember<'_, R>>, Error> {
        if self.finished.is_some() {
            return Ok(None);
        }
        self.tar.next_member(sink)
    }

    /// Walks what is left (skipping members), reads to the end of the last gzip member
    /// (verifying CRC-32 and ISIZE), checks the padding up to `data_size`, counts trailing
    /// bytes (draining the source when the file size is unknown) and settles the integrity
    /// check. Calling it again returns the same result.
    pub fn finish(&mut self, sink: &mut (impl WarningSink + ?Sized)) -> Result<Finish, Error> {
        if let Some(done) = self.finished {
            return Ok(done);
        }
        let after = self.tar.drain(sink)?;
        if after.nonzero_bytes > 0 {
            let kind = WarningKind::Tar(TarWarning::DataAfterEnd { nonzero_bytes: after.nonzero_bytes });
            // The bytes after the end were counted into the offset as they were read.
            let at = self.tar.offset().saturating_sub(after.bytes);
            sink.warn(&Warning { offset_base: OffsetBase::Archive, ..Warning::at_file(Stage::Tar, at, kind) });
        }
        let members = self.tar.members();
        let done = match &self.inflated {
            Some(inflated) => {
                let finish = inflated.finish;
                finish(&mut self.tar.stream_mut().source_mut().src, &mut Forward(sink))?
            }
            None => close(&self.header, self.file_size, self.tar.stream_mut(), sink)?,
        };
        let done = Finish { members, ..done };
        self.finished = Some(done);
        Ok(done)
    }
}

impl<R: InflatedSource> Archive<R> {
    /// An archive over `tar`, the tar stream that a container produces elsewhere (see the
    /// [module docs](self)): the container's header (gated when it opened) and compression
    /// from `opened` ([`Container::opened`]), the tar walk here, and the container's closing
    /// figures from [`InflatedSource::finish`] when [`Archive::finish`] runs.
    pub fn open_inflated(opened: Opened, tar: R) -> Self {
        // The payload limit and the integrity digest belong to the container: none here.
        let stream =
            Payload { src: tar, remaining: u64::MAX, hasher: PayloadHasher::Off { requested: false }, hashed_ahead: 0 };
        Self {
            header: opened.header,
            file_size: opened.file_size,
            // Never sniffed: a raw pass-through of what the container produced.
            tar: TarReader::new(Decoder::unsniffed(stream, 0, u64::MAX)),
            finished: None,
            inflated: Some(Inflated { compression: opened.compression, finish: R::finish }),
        }
    }
}

/// What an opened [`Container`] found, for [`Archive::open_inflated`]: only a container makes
/// one, so an archive over an inflated stream always has a gated header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opened {
    header: NeffHeader,
    file_size: Option<u64>,
    compression: Compression,
}

impl Opened {
    /// The gated header.
    pub fn header(&self) -> &NeffHeader {
        &self.header
    }
}

/// The container under the tar stream: the header (gated), the payload span up to
/// `data_size`, its gzip (or raw) decoding with the inflater `I`, and the closing checks.
///
/// It is a `BufRead` of the tar stream. Read it to its end, then call [`Container::finish`].
/// [`Archive::open`] builds the same parts inside the archive; a host that inflates in another
/// thread or with another inflater opens a `Container` there and hands the stream to
/// [`Archive::open_inflated`] (see the [module docs](self)).
pub struct Container<R, I = MinizInflater> {
    header: NeffHeader,
    file_size: Option<u64>,
    decoder: Decoder<Payload<R>, I>,
    finished: Option<Finish>,
}

impl<R, I> fmt::Debug for Container<R, I> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Container")
            .field("header", &self.header)
            .field("file_size", &self.file_size)
            .field("decoder", &self.decoder)
            .finish_non_exhaustive()
    }
}

impl<R: BufRead, I: Inflate> Container<R, I> {
    /// Reads and gates the header, then sniffs gzip vs raw tar (parsing the first gzip member
    /// header), exactly as [`Archive::open`] does, with `inflater` for the deflate data.
    pub fn open(
        mut src: R,
        file_size: Option<u64>,
        opts: &OpenOptions,
        inflater: I,
        sink: &mut (impl WarningSink + ?Sized),
    ) -> Result<Self, Error> {
        let header = read_header(&mut src, file_size, opts, sink)?;
        let payload = payload(src, &header, opts);
        let decoder = Decoder::unsniffed_with(payload, HEADER_SIZE as u64, opts.max_inflated, inflater);
        let mut container = Self { header, file_size, decoder, finished: None };
        container.decoder.sniff_in_place()?;
        Ok(container)
    }

    /// The decoded header.
    pub fn header(&self) -> &NeffHeader {
        &self.header
    }

    /// Gzip or raw tar.
    pub fn compression(&self) -> Compression {
        self.decoder.compression()
    }

    /// The gated header, file size and compression, for [`Archive::open_inflated`].
    pub fn opened(&self) -> Opened {
        Opened { header: self.header, file_size: self.file_size, compression: self.compression() }
    }

    /// Reads what is left of the tar stream (counted, not kept), then runs the closing checks:
    /// CRC-32 and ISIZE of the last member, what follows it, the padding up to `data_size`,
    /// trailing bytes and the integrity check. `members` is 0 in the result: the tar walk counts
    /// them. Calling it again returns the same result.
    pub fn finish(&mut self, sink: &mut (impl WarningSink + ?Sized)) -> Result<Finish, Error> {
        if let Some(done) = self.finished {
            return Ok(done);
        }
        loop {
            let n = self.decoder.fill_buf()?.len();
            if n == 0 {
                break;
            }
            self.decoder.consume(n);
        }
        let done = close(&self.header, self.file_size, &mut self.decoder, sink)?;
        self.finished = Some(done);
        Ok(done)
    }
}

impl<R: BufRead, I: Inflate> ErrorType for Container<R, I> {
    type Error = StreamError;
}

impl<R: BufRead, I: Inflate> BufRead for Container<R, I> {
    #[inline]
    fn fill_buf(&mut self) -> Result<&[u8], StreamError> {
        self.decoder.fill_buf()
    }

    fn consume(&mut self, amt: usize) {
        self.decoder.consume(amt);
    }
}

impl<R: BufRead, I: Inflate> Read for Container<R, I> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, StreamError> {
        self.decoder.read(buf)
    }
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::arithmetic_side_effects
)]
mod tests {
    use super::*;
    extern crate std;
    use std::vec::Vec;

    use crate::error::IgnoreWarnings;
    use crate::header::tests::header_bytes;
    use md5::Digest as _;

    #[derive(Debug)]
    struct Timeout;
    impl fmt::Display for Timeout {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("timed out")
        }
    }
    impl core::error::Error for Timeout {}
    impl embedded_io::Error for Timeout {
        fn kind(&self) -> embedded_io::ErrorKind {
            embedded_io::ErrorKind::TimedOut
        }
    }

    /// Serves `data` in 100-byte pieces, then fails instead of reporting the end.
    struct Failing<'a> {
        data: &'a [u8],
    }
    impl ErrorType for Failing<'_> {
        type Error = Timeout;
    }
    impl Read for Failing<'_> {
        fn read(&mut self, _buf: &mut [u8]) -> Result<usize, Timeout> {
            Err(Timeout)
        }
    }
    impl BufRead for Failing<'_> {
        fn fill_buf(&mut self) -> Result<&[u8], Timeout> {
            if self.data.is_empty() {
                return Err(Timeout);
            }
            Ok(&self.data[..self.data.len().min(100)])
        }
        fn consume(&mut self, amt: usize) {
            self.data = &self.data[amt..];
        }
    }

    /// A raw (uncompressed) one-member tar, hand-built.
    fn raw_tar() -> Vec<u8> {
        let mut h = [0u8; 512];
        h[..6].copy_from_slice(b"a.json");
        h[124..135].copy_from_slice(b"00000000002");
        h[156] = b'0';
        h[257..263].copy_from_slice(b"ustar\0");
        h[263..265].copy_from_slice(b"00");
        h[148..156].fill(b' ');
        let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
        h[148..156].copy_from_slice(std::format!("{sum:06o}\0 ").as_bytes());
        let mut tar = h.to_vec();
        tar.extend_from_slice(b"{}");
        tar.resize(512 * 4, 0);
        tar
    }

    #[test]
    fn source_failures_are_io_errors_with_the_file_offset() {
        let tar = raw_tar();
        let mut file = header_bytes(tar.len() as u64).to_vec();
        file.extend_from_slice(&tar);
        // Fails inside the header.
        let e = Archive::<Failing<'_>>::open(
            Failing { data: &file[..700] },
            None,
            &OpenOptions::default(),
            &mut IgnoreWarnings,
        )
        .unwrap_err();
        assert_eq!((e.stage, e.kind, e.offset), (Stage::Io, ErrorKind::Io(embedded_io::ErrorKind::TimedOut), 700));
        // Fails inside the payload, while a member is being walked.
        let mut archive: Archive<Failing<'_>> = Archive::open(
            Failing { data: &file[..1024 + 512 + 100] },
            None,
            &OpenOptions::default(),
            &mut IgnoreWarnings,
        )
        .unwrap();
        assert_eq!(archive.compression(), Compression::None);
        let member = archive.next_member(&mut IgnoreWarnings).unwrap().unwrap();
        assert_eq!(member.name(), "a.json");
        let e = archive.finish(&mut IgnoreWarnings).unwrap_err();
        assert_eq!((e.stage, e.kind), (Stage::Io, ErrorKind::Io(embedded_io::ErrorKind::TimedOut)));
        assert_eq!(e.offset, 1024 + 512 + 100);
    }

    #[test]
    fn a_raw_tar_under_pkg_2_is_read_and_finish_is_idempotent() {
        let tar = raw_tar();
        let mut file = header_bytes(tar.len() as u64).to_vec();
        file.extend_from_slice(&tar);
        let mut archive: Archive<&[u8]> =
            Archive::open(&file[..], Some(file.len() as u64), &OpenOptions::default(), &mut IgnoreWarnings).unwrap();
        assert_eq!(archive.header().pkg_version, 2);
        let mut member = archive.next_member(&mut IgnoreWarnings).unwrap().unwrap();
        let mut body = [0u8; 8];
        assert_eq!(member.read(&mut body).unwrap(), 2);
        assert_eq!(&body[..2], b"{}");
        let first = archive.finish(&mut IgnoreWarnings).unwrap();
        assert_eq!(first.compression, Compression::None);
        assert_eq!((first.members, first.inflated_bytes, first.compressed_bytes), (1, 2048, 2048));
        assert_eq!(archive.finish(&mut IgnoreWarnings).unwrap(), first);
        assert!(archive.next_member(&mut IgnoreWarnings).unwrap().is_none());
    }

    #[test]
    fn payload_digest_sees_each_byte_once_whatever_the_reads() {
        let data: Vec<u8> = (0..5000u32).map(|i| (i * 31 % 251) as u8).collect();
        let mut h = header_bytes(4000);
        let md5: [u8; 16] = md5::Md5::digest(&data[..4000]).into();
        h[172..188].copy_from_slice(&md5);
        let header = NeffHeader::parse(&h);
        let mut payload = Payload {
            src: &data[..],
            remaining: 4000,
            hasher: PayloadHasher::for_header(&header, true),
            hashed_ahead: 0,
        };
        // Peek twice, consume in odd steps, read some: the limit holds and nothing is hashed twice.
        let mut total = 0;
        let mut step = 1;
        loop {
            let n = payload.fill_buf().unwrap().len();
            let _ = payload.fill_buf().unwrap();
            if n == 0 {
                break;
            }
            let k = n.min(step);
            payload.consume(k);
            total += k;
            step = step * 3 % 997 + 1;
        }
        assert_eq!(total, 4000);
        let computed = crate::header::HashValue::new(crate::header::HashAlgorithm::Md5, &md5);
        let order = crate::header::DigestOrder::Plain;
        assert_eq!(payload.hasher.clone().finish(&header), Integrity::Match { order, computed });
    }

    /// The tar stream of a [`Container`] read in the same thread, as an [`InflatedSource`]:
    /// container errors travel as [`Relayed`].
    struct Inline<'a>(Container<Chunked<'a>>);
    impl ErrorType for Inline<'_> {
        type Error = Relayed;
    }
    impl BufRead for Inline<'_> {
        fn fill_buf(&mut self) -> Result<&[u8], Relayed> {
            self.0.fill_buf().map_err(Relayed)
        }
        fn consume(&mut self, amt: usize) {
            self.0.consume(amt);
        }
    }
    impl Read for Inline<'_> {
        fn read(&mut self, buf: &mut [u8]) -> Result<usize, Relayed> {
            self.0.read(buf).map_err(Relayed)
        }
    }
    impl InflatedSource for Inline<'_> {
        fn finish(&mut self, sink: &mut dyn WarningSink) -> Result<Finish, Error> {
            // Collected, then replayed: as a thread that sends its warnings would.
            let mut warnings = Vec::new();
            let result = self.0.finish(&mut |w: &Warning| warnings.push(*w));
            for w in &warnings {
                sink.warn(w);
            }
            result
        }
    }

    type Chunked<'a> = crate::testutil::Chunked<'a, core::convert::Infallible>;

    /// Members (name, body) and the finish figures, or the error, plus every warning.
    type Outcome = (Result<(Vec<(std::string::String, Vec<u8>)>, Finish), Error>, Vec<Warning>);

    fn walk<R: BufRead>(open: impl FnOnce(&mut Vec<Warning>) -> Result<Archive<R>, Error>) -> Outcome {
        let mut warnings = Vec::new();
        let result = open(&mut warnings).and_then(|mut archive| {
            let mut members = Vec::new();
            let mut sink = |w: &Warning| warnings.push(*w);
            while let Some(mut member) = archive.next_member(&mut sink)? {
                let mut body = Vec::new();
                let mut chunk = [0u8; 100];
                loop {
                    let n = member.read(&mut chunk)?;
                    if n == 0 {
                        break;
                    }
                    body.extend_from_slice(&chunk[..n]);
                }
                members.push((member.name().into(), body));
            }
            Ok((members, archive.finish(&mut sink)?))
        });
        (result, warnings)
    }

    fn both_paths(file: &[u8], opts: &OpenOptions) -> (Outcome, Outcome) {
        let size = Some(file.len() as u64);
        let core_path = walk(|w| Archive::open(Chunked::new(file, 777), size, opts, &mut |x: &Warning| w.push(*x)));
        let relayed = walk(|w| {
            let container = Container::open(
                Chunked::new(file, 777),
                size,
                opts,
                crate::gzip::MinizInflater::new(),
                &mut |x: &Warning| w.push(*x),
            )?;
            Ok(Archive::open_inflated(container.opened(), Inline(container)))
        });
        (core_path, relayed)
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        use std::io::Write as _;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn neff(payload: &[u8], data_size: u64) -> Vec<u8> {
        let mut file = header_bytes(data_size).to_vec();
        file.extend_from_slice(payload);
        file
    }

    #[test]
    fn an_archive_over_a_relayed_container_matches_the_archive_itself() {
        let tar = raw_tar();
        let gz = gzip(&tar);
        let mut two_members = gzip(&tar[..512]);
        two_members.extend_from_slice(&gzip(&tar[512..]));
        let mut garbage_after = gz.clone();
        garbage_after.extend_from_slice(&[0, 0, 7, 0]);
        let mut padded = gz.clone();
        padded.resize(gz.len() + 300, 0);
        let mut bad_crc = gz.clone();
        let at = bad_crc.len() - 8;
        bad_crc[at] ^= 1;
        let cases: Vec<(&str, Vec<u8>, OpenOptions)> = std::vec![
            ("gzip, zero padding", neff(&padded, padded.len() as u64), OpenOptions::default()),
            ("raw tar", neff(&tar, tar.len() as u64), OpenOptions::default()),
            ("two gzip members", neff(&two_members, two_members.len() as u64), OpenOptions::default()),
            ("garbage after the member", neff(&garbage_after, garbage_after.len() as u64), OpenOptions::default()),
            ("bad CRC-32", neff(&bad_crc, bad_crc.len() as u64), OpenOptions::default()),
            ("truncated payload", neff(&gz[..gz.len() - 20], gz.len() as u64), OpenOptions::default()),
            ("max_inflated", neff(&gz, gz.len() as u64), OpenOptions { max_inflated: 1000, ..OpenOptions::default() }),
            ("integrity", neff(&gz, gz.len() as u64), OpenOptions { verify_integrity: true, ..OpenOptions::default() }),
            (
                "trailing bytes",
                {
                    let mut f = neff(&gz, gz.len() as u64);
                    f.extend_from_slice(b"tail");
                    f
                },
                OpenOptions::default()
            ),
        ];
        let mut refused = 0;
        for (name, file, opts) in &cases {
            let (core_path, relayed) = both_paths(file, opts);
            assert_eq!(relayed, core_path, "{name}");
            refused += usize::from(core_path.0.is_err());
        }
        // The cases above exercise both outcomes, and warnings on the accepted ones.
        assert_eq!(refused, 3);
        let (two, _) = both_paths(&cases[2].1, &cases[2].2);
        assert_eq!(two.0.unwrap().1.gzip_members, 2);
        assert!(!both_paths(&cases[3].1, &cases[3].2).0 .1.is_empty(), "garbage is warned about");
    }

    #[test]
    fn an_archive_over_a_relayed_container_reports_its_compression_and_no_file_offset() {
        let gz = gzip(&raw_tar());
        let file = neff(&gz, gz.len() as u64);
        let container = Container::open(
            Chunked::new(&file, 4096),
            Some(file.len() as u64),
            &OpenOptions::default(),
            crate::gzip::MinizInflater::new(),
            &mut IgnoreWarnings,
        )
        .unwrap();
        let archive: Archive<Inline<'_>> = Archive::open_inflated(container.opened(), Inline(container));
        assert_eq!(archive.compression(), Compression::Gzip);
        assert_eq!(archive.file_offset(), None);
        assert_eq!(archive.header().data_size, gz.len() as u64);
    }
}
