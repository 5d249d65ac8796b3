//! The container as one stream: header -> gzip (or raw) -> tar (neff-format.md §1-§3).
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
//! **Arithmetic.** `data_size` comes from the file: every sum with it is checked or saturating
//! (on a stream nothing bounds it before the payload is read). Other offsets and counts are of
//! bytes the source really delivered, which cannot reach 2^64: they saturate.
#![deny(clippy::arithmetic_side_effects)]

use core::fmt;

use embedded_io::{BufRead, ErrorType, Read};

use crate::error::OffsetBase;
use crate::gzip::{Compression, Decoder, GzipWarning, DEFAULT_MAX_INFLATED};
use crate::header::{HeaderError, HeaderWarning, Integrity, NeffHeader, PayloadHasher, HEADER_SIZE};
use crate::tar::{Member, TarReader, TarWarning, DEFAULT_NAME_CAPACITY, DEFAULT_PAX_CAPACITY};
use crate::{Error, ErrorKind, Stage, Warning, WarningKind, WarningSink};

/// Options for [`Archive::open`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct OpenOptions {
    /// Compute MD5 (pkg 2) / SHA-256 (pkg 1) over the payload and compare with the header's
    /// `hash`. The outcome is in [`Finish::integrity`]; a mismatch is a warning, never an error
    /// (real neuronx-cc 2.23 NEFFs do not match; neff-format.md §2.6). Default off.
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
        let available = self.fill_buf()?;
        let n = available.len().min(buf.len());
        if let (Some(dst), Some(src)) = (buf.get_mut(..n), available.get(..n)) {
            dst.copy_from_slice(src);
        }
        self.consume(n);
        Ok(n)
    }
}

/// The tar stream of a NEFF: what a [`Member`] reads from.
pub type Stream<R> = Decoder<Payload<R>>;

/// A member of an [`Archive`].
pub type ArchiveMember<'a, R> = Member<'a, Stream<R>>;

/// A NEFF opened as a stream of tar members.
///
/// `NAME` and `PAX` are the tar walker's name and PAX-header capacities. With the defaults
/// (256, 512), `size_of::<Archive<&[u8]>>()` is **45 504 bytes** on x86-64 (asserted in a
/// test): the 32 KiB inflate window, miniz_oxide's `DecompressorOxide` (~10.3 KiB), the
/// decoded header, a 512-byte tar block, the name and PAX buffers, and the digest state.
pub struct Archive<R, const NAME: usize = DEFAULT_NAME_CAPACITY, const PAX: usize = DEFAULT_PAX_CAPACITY> {
    header: NeffHeader,
    file_size: Option<u64>,
    tar: TarReader<Stream<R>, NAME, PAX>,
    finished: Option<Finish>,
}

// The whole container state (window, inflater, tar buffers) stays well under 64 KiB on every
// target; a change that breaks this fails the build, not a test.
const _: () = assert!(core::mem::size_of::<Archive<&[u8]>>() < 48 * 1024);

impl<R, const NAME: usize, const PAX: usize> fmt::Debug for Archive<R, NAME, PAX> {
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

fn io_error<E: embedded_io::Error>(offset: u64, e: &E) -> Error {
    Error::at_file(Stage::Io, offset, ErrorKind::Io(e.kind()))
}

fn header_warning(sink: &mut (impl WarningSink + ?Sized), offset: u64, kind: HeaderWarning) {
    sink.warn(&Warning::at_file(Stage::Header, offset, WarningKind::Header(kind)));
}

impl<R: BufRead, const NAME: usize, const PAX: usize> Archive<R, NAME, PAX> {
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
        if let Some(size) = file_size.filter(|&s| s < HEADER_SIZE as u64) {
            return Err(header_error(HeaderError::ShortFile { received: size }));
        }
        let mut bytes = [0u8; HEADER_SIZE];
        let mut filled = 0;
        while filled < HEADER_SIZE {
            let buf = src.fill_buf().map_err(|e| io_error(filled as u64, &e))?;
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
        let payload = Payload {
            src,
            remaining: header.data_size,
            hasher: PayloadHasher::for_header(&header, opts.verify_integrity),
            hashed_ahead: 0,
        };
        let mut archive = Self {
            header,
            file_size,
            tar: TarReader::new(Decoder::unsniffed(payload, HEADER_SIZE as u64, opts.max_inflated)),
            finished: None,
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
        self.tar.stream().compression()
    }

    /// Bytes of the tar stream consumed so far.
    pub fn tar_offset(&self) -> u64 {
        self.tar.offset()
    }

    /// File offset of the next payload byte to be read.
    pub fn file_offset(&self) -> u64 {
        // `consumed <= data_size`, and the payload was really read: no saturation in practice.
        (HEADER_SIZE as u64).saturating_add(self.tar.stream().consumed())
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
        let decoder = self.tar.stream_mut();
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
        let consumed = decoder.consumed();
        let payload = decoder.source_mut();
        let data_size = self.header.data_size;
        if payload.remaining() > 0 {
            // `remaining <= data_size`; `consumed` counts payload bytes read.
            let available = data_size.saturating_sub(payload.remaining());
            let e = HeaderError::DataSizePastEnd { data_size, available };
            let at = (HEADER_SIZE as u64).saturating_add(consumed);
            return Err(Error::at_file(Stage::Header, at, ErrorKind::Header(e)));
        }
        let hasher = core::mem::replace(&mut payload.hasher, PayloadHasher::Off { requested: false });
        let integrity = hasher.finish(&self.header);
        if let Integrity::Mismatch(algorithm) = integrity {
            header_warning(
                sink,
                crate::header::field::HASH.start as u64,
                HeaderWarning::IntegrityMismatch { algorithm },
            );
        }
        // All `data_size` bytes were read, so this is a real file offset; saturating all the same.
        let payload_end = (HEADER_SIZE as u64).saturating_add(data_size);
        let trailing_bytes = match self.file_size {
            Some(size) => size.saturating_sub(payload_end),
            None => {
                let mut count = 0u64;
                loop {
                    let buf = payload.src.fill_buf().map_err(|e| io_error(payload_end.saturating_add(count), &e))?;
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
        let done = Finish {
            compression,
            gzip_members,
            members,
            inflated_bytes,
            compressed_bytes,
            padding_bytes: data_size.saturating_sub(compressed_bytes),
            trailing_bytes,
            integrity,
        };
        self.finished = Some(done);
        Ok(done)
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
        assert_eq!(payload.hasher.clone().finish(&header), Integrity::Match(crate::header::HashAlgorithm::Md5));
    }
}
