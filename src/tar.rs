//! A streaming tar walker over the inflated payload (docs/format.md §3.2, §3.3;
//! embedded-notes.md §3).
//!
//! A tar stream is a sequence of 512-byte blocks: a header block, then the member's body
//! rounded up to 512, repeated, and two all-zero blocks at the end. The header (ustar):
//!
//! ```text
//! off  len  field          off  len  field
//!   0  100  name             257    6  magic  "ustar\0" (POSIX) | "ustar " (GNU)
//! 100    8  mode             263    2  version "00"     (POSIX) | " \0"    (GNU)
//! 108    8  uid              265   32  uname
//! 116    8  gid              297   32  gname
//! 124   12  size             329    8  devmajor
//! 136   12  mtime            337    8  devminor
//! 148    8  chksum           345  155  prefix (POSIX only; GNU keeps atime/ctime there)
//! 156    1  typeflag         500   12  (padding)
//! 157  100  linkname
//! ```
//!
//! Numbers are octal ASCII ended by NUL or space; GNU writes big ones in base-256 (first byte
//! `0x80`, then big-endian; `0xFF` means negative and is refused). The checksum is the sum of
//! the 512 bytes with `chksum` counted as eight spaces; both the unsigned convention and the
//! historic signed one are accepted. Extensions read here:
//!
//! * PAX `x` (next member): records `"<len> <key>=<value>\n"`; `path` and `size` override the
//!   ustar fields, `GNU.sparse.*` marks the next member sparse (skipped, see below;
//!   `GNU.sparse.name` names it), other keys are ignored. `X` (old Solaris) is read
//!   the same way.
//! * PAX `g` (global): parsed and validated, then ignored, as libarchive (the runtime's reader)
//!   does; a global `path` or `size` gets a [`TarWarning::GlobalPaxIgnored`].
//! * GNU `L` (long name of the next member); `K` (long link name) is skipped.
//!
//! Member rules (the runtime's member table, §3.3): regular members are typeflag `0`, NUL and
//! `7`, plus unknown types (read as regular with a warning, as libarchive does); directories
//! (`5`, or a regular name ending in `/`), links, devices, FIFOs and GNU dumpdirs are skipped;
//! sparse members (GNU `S`, with its extension blocks, or PAX `GNU.sparse.*`) are skipped with
//! a [`TarWarning::SparseSkipped`] naming them (spec §3.2: no NEFF writer makes one, and
//! their holes are no bytes the loader could place); multivolume `M` and label `V` are
//! refused. One leading `./` is stripped; members whose name ends in `wavegraph-bin.json` are
//! dropped. Names that are absolute, contain a `..` component or a NUL are refused. A name
//! that is not UTF-8 is no error: no manifest (JSON text is UTF-8) can name such a member, so
//! by default it is skipped with a [`TarWarning::NameNotUtf8`] naming it; a walker told
//! [`TarReader::set_raw_names`] yields it instead, with [`Member::name_bytes`] (for tools
//! that extract every member, such as `neff unpack`).
//!
//! **End of archive.** Two zero blocks end it; one is a warning, none (the stream ends at a
//! header boundary, or inside the zero padding after the last body, as Go's reader accepts) is
//! a [`TarWarning::MissingEndOfArchive`].
//!
//! **Duplicates.** The walker keeps no list of names (that would need unbounded memory), so a
//! name that appears twice is yielded twice; the loader, which keeps the names it cares
//! about, decides (the runtime's `std::map` makes the last one win).
//!
//! **Memory.** The walker owns one header block and a name buffer of `NAME` bytes; a longer
//! name is a `CapacityError` naming `NAME`. PAX headers and GNU long names are read as they
//! stream past, the name straight into that buffer, so a PAX header of any length (sparse
//! maps, extended attributes) takes no memory of its own. Bodies are never buffered: [`Member`]
//! is a bounded reader over the stream.
//!
//! **Arithmetic.** Every size read from a header goes through checked arithmetic ending in a
//! [`TarError`] (a size must leave room for its padding below `u64::MAX`). Stream offsets and
//! byte counts saturate: they count bytes the stream really delivered, which cannot reach
//! 2^64, so the saturation never happens and an impossible wrap cannot misplace a header.
#![deny(clippy::arithmetic_side_effects)]

use core::fmt;

use embedded_io::{BufRead, ErrorType, Read};

use crate::error::{CapacityError, OffsetBase, StreamError, StreamKind, Text};
pub use crate::error::{TarError, TarWarning};
use crate::{Error, Stage, Warning, WarningKind, WarningSink};

/// Tar block size.
pub const BLOCK_SIZE: usize = 512;
const BLOCK_SIZE_U64: u64 = BLOCK_SIZE as u64;
/// Default capacity of the member name buffer: on a controller a path of up to 1 KiB (a ustar
/// name holds 255 bytes, `prefix` 155 + `/` + `name` 100; longer ones come through PAX or GNU
/// `L` records, and real models nest long directory and member names: spec §15.20); on a
/// hosted target 16 KiB, four times Linux's `PATH_MAX`.
#[cfg(target_os = "none")]
pub const DEFAULT_NAME_CAPACITY: usize = 1024;
/// Default capacity of the member name buffer (see the firmware profile's doc).
#[cfg(not(target_os = "none"))]
pub const DEFAULT_NAME_CAPACITY: usize = 16 * 1024;
/// Offset of `isextended` in an old GNU sparse (`S`) header.
const GNU_IS_EXTENDED: usize = 482;
/// Offset of `isextended` in an old GNU sparse extension block.
const GNU_EXT_IS_EXTENDED: usize = 504;
/// Members whose path ends with this are dropped, as the runtime does.
pub const DROPPED_SUFFIX: &str = "wavegraph-bin.json";

/// Byte ranges of the ustar header fields.
pub mod field {
    use core::ops::Range;
    /// `name[100]`.
    pub const NAME: Range<usize> = 0..100;
    /// `size[12]`.
    pub const SIZE: Range<usize> = 124..136;
    /// `chksum[8]`.
    pub const CHKSUM: Range<usize> = 148..156;
    /// `typeflag`.
    pub const TYPEFLAG: usize = 156;
    /// `magic[6]`.
    pub const MAGIC: Range<usize> = 257..263;
    /// `version[2]`.
    pub const VERSION: Range<usize> = 263..265;
    /// `prefix[155]` (POSIX ustar only).
    pub const PREFIX: Range<usize> = 345..500;
}

/// Where the pending long name came from (PAX wins over GNU `L`, as in libarchive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PendingName {
    None,
    Gnu,
    Pax,
}

/// What lay after the end-of-archive blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct AfterEnd {
    /// Bytes after the end-of-archive blocks.
    pub bytes: u64,
    /// Of which non-zero.
    pub nonzero_bytes: u64,
}

/// The walker. `S` is the tar stream (a [`crate::gzip::Decoder`] in a NEFF).
pub struct TarReader<S, const NAME: usize = DEFAULT_NAME_CAPACITY> {
    stream: S,
    offset: u64,
    block: [u8; BLOCK_SIZE],
    name: [u8; NAME],
    name_len: usize,
    pending_name: PendingName,
    pending_size: Option<u64>,
    pending_sparse: bool,
    raw_names: bool,
    body_remaining: u64,
    body_padding: u64,
    ended: bool,
    after_end: AfterEnd,
    members: u32,
}

impl<S, const NAME: usize> fmt::Debug for TarReader<S, NAME> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TarReader")
            .field("offset", &self.offset)
            .field("ended", &self.ended)
            .field("members", &self.members)
            .finish_non_exhaustive()
    }
}

/// One regular member: its name, size, and body as a bounded reader.
///
/// Dropping it half-read is fine: the next [`TarReader::next_member`] skips the rest.
pub struct Member<'a, S> {
    name: &'a str,
    raw_name: &'a [u8],
    size: u64,
    typeflag: u8,
    header_offset: u64,
    stream: &'a mut S,
    remaining: &'a mut u64,
    offset: &'a mut u64,
}

impl<S> fmt::Debug for Member<'_, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Member")
            .field("name", &self.name)
            .field("raw_name", &self.raw_name)
            .field("size", &self.size)
            .field("typeflag", &self.typeflag)
            .field("header_offset", &self.header_offset)
            .field("remaining", &*self.remaining)
            .finish()
    }
}

impl<'a, S> Member<'a, S> {
    /// The normalised path (one leading `./` stripped). Empty for a name that is not UTF-8,
    /// which only a walker told [`TarReader::set_raw_names`] yields: see [`Member::name_bytes`].
    ///
    /// It borrows the walker's name buffer, not the member, so the body can be read while the
    /// name is held (a caller need not copy it).
    pub fn name(&self) -> &'a str {
        self.name
    }

    /// The normalised path as the archive stores it (one leading `./` stripped); the same
    /// bytes as [`Member::name`] when the name is UTF-8.
    pub fn name_bytes(&self) -> &[u8] {
        self.raw_name
    }

    /// False for a name that is not UTF-8 (yielded only with [`TarReader::set_raw_names`]).
    pub fn name_is_utf8(&self) -> bool {
        !self.name.is_empty()
    }

    /// Body size in bytes (PAX `size` if given).
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The header's `typeflag` (`b'0'`, NUL, `b'7'`, or an unknown one read as regular, which
    /// was warned about).
    pub fn typeflag(&self) -> u8 {
        self.typeflag
    }

    /// Body bytes not read yet.
    pub fn remaining(&self) -> u64 {
        *self.remaining
    }

    /// Offset of the member's (first) header block in the tar stream.
    pub fn header_offset(&self) -> u64 {
        self.header_offset
    }

    /// Offset of the first body byte in the tar stream.
    pub fn data_offset(&self) -> u64 {
        // `remaining <= size`, and `offset` has advanced past every body byte consumed.
        let consumed = self.size.saturating_sub(*self.remaining);
        self.offset.saturating_sub(consumed)
    }
}

impl<S: BufRead<Error = StreamError>> ErrorType for Member<'_, S> {
    type Error = Error;
}

impl<S: BufRead<Error = StreamError>> BufRead for Member<'_, S> {
    #[inline]
    fn fill_buf(&mut self) -> Result<&[u8], Error> {
        if *self.remaining == 0 {
            return Ok(&[]);
        }
        let remaining = *self.remaining;
        let at = *self.offset;
        let buf = self.stream.fill_buf().map_err(|e| member_error(e, self.raw_name))?;
        if buf.is_empty() {
            let e = StreamError::at_archive(Stage::Tar, at, StreamKind::Truncated);
            return Err(member_error(e, self.raw_name));
        }
        let n = usize::try_from(remaining).unwrap_or(usize::MAX).min(buf.len());
        Ok(buf.get(..n).unwrap_or(&[]))
    }

    #[inline(never)]
    fn consume(&mut self, amt: usize) {
        let amt = (amt as u64).min(*self.remaining);
        self.stream.consume(amt as usize);
        // `amt <= remaining`; the offset counts delivered bytes (see the module docs).
        *self.remaining = self.remaining.saturating_sub(amt);
        *self.offset = self.offset.saturating_add(amt);
    }
}

impl<S: BufRead<Error = StreamError>> Read for Member<'_, S> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Error> {
        crate::read_buffered(self, buf)
    }
}

/// Zero bytes after a body of `size` bytes, up to the next block boundary.
fn padding(size: u64) -> u64 {
    // `size % 512` is below 512, so the subtraction cannot wrap.
    BLOCK_SIZE_U64.wrapping_sub(size % BLOCK_SIZE_U64) % BLOCK_SIZE_U64
}

/// `size`, checked to leave room for its padding: the body and its padding together (what is
/// skipped to reach the next header) must fit in a `u64`. A GNU base-256 or PAX size within 511
/// of `u64::MAX` is refused here, at its header, instead of wrapping later.
fn checked_size(size: u64, field: &'static str) -> Result<u64, TarError> {
    match size.checked_add(padding(size)) {
        Some(_) => Ok(size),
        None => Err(TarError::NumberOutOfRange { field }),
    }
}

fn tar_error(offset: u64, kind: TarError) -> StreamError {
    StreamError::at_archive(Stage::Tar, offset, StreamKind::Tar(kind))
}

/// The crate error for `e`, met in the member named `raw_name` (shown lossy): where the
/// stream's small error gets its member.
#[cold]
#[inline(never)]
fn member_error(e: StreamError, raw_name: &[u8]) -> Error {
    Error { member: member_text(raw_name), ..Error::from(e) }
}

fn warn(sink: &mut (impl WarningSink + ?Sized), offset: u64, kind: TarWarning) {
    warn_member(sink, offset, kind, &[]);
}

/// A member name for an error or warning: as it is when UTF-8, else lossy.
fn member_text<const N: usize>(name: &[u8]) -> Text<N> {
    match core::str::from_utf8(name) {
        Ok(text) => Text::new(text),
        Err(_) => Text::from_bytes_lossy(name),
    }
}

/// A warning about the member named `name` (shown lossy), at its header.
fn warn_member(sink: &mut (impl WarningSink + ?Sized), offset: u64, kind: TarWarning, name: &[u8]) {
    let warning = Warning {
        offset_base: OffsetBase::Archive,
        member: member_text(name),
        ..Warning::at_file(Stage::Tar, offset, WarningKind::Tar(kind))
    };
    sink.warn(&warning);
}

fn until_nul(bytes: &[u8]) -> &[u8] {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    bytes.get(..end).unwrap_or(bytes)
}

/// Parses an octal (NUL/space terminated, leading spaces allowed) or GNU base-256 field.
pub fn parse_number(bytes: &[u8], field: &'static str) -> Result<u64, TarError> {
    match bytes.first() {
        Some(&first) if first & 0x80 != 0 => {
            if first == 0xFF {
                return Err(TarError::NumberOutOfRange { field });
            }
            let mut value = u64::from(first & 0x7F);
            for &b in bytes.get(1..).unwrap_or(&[]) {
                if value >> 56 != 0 {
                    return Err(TarError::NumberOutOfRange { field });
                }
                value = (value << 8) | u64::from(b);
            }
            Ok(value)
        }
        _ => {
            let mut value: u64 = 0;
            let mut digits = bytes.iter().skip_while(|&&b| b == b' ');
            for &b in &mut digits {
                match b {
                    b'0'..=b'7' => {
                        if value >> 61 != 0 {
                            return Err(TarError::NumberOutOfRange { field });
                        }
                        value = (value << 3) | u64::from(b.wrapping_sub(b'0')); // b is '0'..='7'
                    }
                    b' ' | 0 => break,
                    _ => return Err(TarError::BadNumber { field }),
                }
            }
            // Only terminators may follow the digits.
            if digits.any(|&b| b != b' ' && b != 0) {
                return Err(TarError::BadNumber { field });
            }
            Ok(value)
        }
    }
}

/// Checks a header's checksum: `Ok(false)` for the unsigned sum, `Ok(true)` for the signed one.
fn verify_checksum(block: &[u8; BLOCK_SIZE]) -> Result<bool, TarError> {
    let stored = parse_number(block.get(field::CHKSUM).unwrap_or(&[]), "chksum")?;
    let mut unsigned: u64 = 0;
    let mut signed: i64 = 0;
    // 512 bytes: the sums stay within ±2^17, so the saturating adds are exact.
    for (i, &b) in block.iter().enumerate() {
        let b = if field::CHKSUM.contains(&i) { b' ' } else { b };
        unsigned = unsigned.saturating_add(u64::from(b));
        signed = signed.saturating_add(i64::from(b as i8));
    }
    if stored == unsigned {
        Ok(false)
    } else if i64::try_from(stored).is_ok_and(|s| s == signed) {
        Ok(true)
    } else {
        Err(TarError::Checksum { stored, computed: unsigned })
    }
}

/// Bytes of a PAX key kept to recognise it: `GNU.sparse.name` is the longest the walker
/// reads; a longer key is told apart by its `GNU.sparse.` prefix alone.
const PAX_KEY: usize = 16;

/// What a PAX record's key means to the walker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PaxKey {
    /// `path`: the next member's name.
    Path,
    /// `size`: the next member's body size.
    Size,
    /// `GNU.sparse.name`: a sparse member's real name (its `path` is a placeholder).
    SparseName,
    /// Any other `GNU.sparse.*` key: the next member is sparse.
    Sparse,
    /// Read past.
    Other,
}

impl PaxKey {
    /// The key whose first bytes are `start` (all of it when `len` fits them).
    fn of(start: &[u8], len: usize) -> Self {
        match start {
            // `start` is the whole key when it is this short.
            b"path" => PaxKey::Path,
            b"size" => PaxKey::Size,
            b"GNU.sparse.name" if len == start.len() => PaxKey::SparseName,
            _ if start.starts_with(b"GNU.sparse.") => PaxKey::Sparse,
            _ => PaxKey::Other,
        }
    }
}

/// Where a [`PaxStream`] is within a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PaxPart {
    /// The decimal record length (`digits` of them so far).
    Length { digits: usize },
    /// The key, up to `=`.
    Key,
    /// The value, up to the record's last byte (its newline).
    Value,
    /// NULs after the last record (writers pad the last block inside the declared size).
    Padding,
}

/// A PAX extended header (`"<len> <key>=<value>\n"` records), read as it streams past.
///
/// Nothing of it is buffered but the first [`PAX_KEY`] bytes of each key: a header of any
/// length (sparse maps, extended attributes) reads in fixed memory, and a `path` (or
/// `GNU.sparse.name`) value goes straight into the walker's name buffer. Errors come out as
/// the buffered reading gave them: the first record's framing or `size` error in record
/// order, and a name longer than the buffer only once the whole header is well formed.
#[derive(Debug)]
struct PaxStream {
    part: PaxPart,
    /// The record's declared length, then its bytes still to come (the newline included).
    left: usize,
    key: [u8; PAX_KEY],
    key_len: usize,
    kind: PaxKey,
    /// A `global` header's values are checked, never applied.
    global: bool,
    /// The current `size` value: its digits so far, or its error.
    size_value: Result<Option<u64>, TarError>,
    /// The last `size` record's value.
    size: Option<u64>,
    /// A `path` or `size` record was read (a global header's warning).
    path_or_size: bool,
    sparse: bool,
    /// Which record's value is the name (a sparse name wins over `path`; the last of each kind).
    name_from: Option<PaxKey>,
    /// The name's value is longer than the name buffer.
    name_overflow: bool,
    /// Whether the current value is being written as the name.
    writing_name: bool,
    /// The first error, in record order.
    error: Option<TarError>,
}

impl PaxStream {
    fn new(global: bool) -> Self {
        PaxStream {
            part: PaxPart::Length { digits: 0 },
            left: 0,
            key: [0; PAX_KEY],
            key_len: 0,
            kind: PaxKey::Other,
            global,
            size_value: Ok(None),
            size: None,
            path_or_size: false,
            sparse: false,
            name_from: None,
            name_overflow: false,
            writing_name: false,
            error: None,
        }
    }

    /// Reads `bytes`, the next part of the header; `name` and `name_len` are the walker's
    /// name buffer. After the first error the rest is read past.
    fn feed(&mut self, bytes: &[u8], name: &mut [u8], name_len: &mut usize) {
        for &b in bytes {
            if self.error.is_some() {
                return;
            }
            if let Err(e) = self.byte(b, name, name_len) {
                self.error = Some(e);
            }
        }
    }

    fn byte(&mut self, b: u8, name: &mut [u8], name_len: &mut usize) -> Result<(), TarError> {
        match self.part {
            PaxPart::Padding if b == 0 => Ok(()),
            PaxPart::Padding => Err(TarError::BadPaxRecord),
            PaxPart::Length { digits: 0 } if b == 0 => {
                self.part = PaxPart::Padding;
                Ok(())
            }
            PaxPart::Length { digits } if b.is_ascii_digit() => {
                let d = usize::from(b.wrapping_sub(b'0'));
                self.left = self.left.checked_mul(10).and_then(|l| l.checked_add(d)).ok_or(TarError::BadPaxRecord)?;
                self.part = PaxPart::Length { digits: digits.saturating_add(1) };
                Ok(())
            }
            PaxPart::Length { digits } if b == b' ' && digits > 0 => {
                // What follows the space: at least the newline.
                self.left =
                    self.left.checked_sub(digits).and_then(|l| l.checked_sub(1)).ok_or(TarError::BadPaxRecord)?;
                if self.left == 0 {
                    return Err(TarError::BadPaxRecord);
                }
                self.part = PaxPart::Key;
                self.key_len = 0;
                Ok(())
            }
            PaxPart::Length { .. } => Err(TarError::BadPaxRecord),
            PaxPart::Key | PaxPart::Value if self.left == 1 => self.end_record(b),
            PaxPart::Key => {
                self.left = self.left.saturating_sub(1);
                if b == b'=' {
                    self.start_value(name_len);
                } else {
                    if let Some(k) = self.key.get_mut(self.key_len) {
                        *k = b;
                    }
                    self.key_len = self.key_len.saturating_add(1);
                }
                Ok(())
            }
            PaxPart::Value => {
                self.left = self.left.saturating_sub(1);
                self.value_byte(b, name, name_len);
                Ok(())
            }
        }
    }

    fn start_value(&mut self, name_len: &mut usize) {
        let start = self.key.get(..self.key_len.min(PAX_KEY)).unwrap_or(&[]);
        self.kind = PaxKey::of(start, self.key_len);
        self.part = PaxPart::Value;
        self.size_value = Ok(None);
        self.writing_name = false;
        match self.kind {
            PaxKey::Path | PaxKey::Size => self.path_or_size = true,
            PaxKey::SparseName | PaxKey::Sparse => self.sparse = true,
            PaxKey::Other => {}
        }
        let names = match self.kind {
            PaxKey::SparseName => true,
            PaxKey::Path => self.name_from != Some(PaxKey::SparseName),
            _ => false,
        };
        if names && !self.global {
            self.name_from = Some(self.kind);
            self.writing_name = true;
            self.name_overflow = false;
            *name_len = 0;
        }
    }

    fn value_byte(&mut self, b: u8, name: &mut [u8], name_len: &mut usize) {
        if self.writing_name {
            match name.get_mut(*name_len) {
                Some(slot) => {
                    *slot = b;
                    *name_len = name_len.saturating_add(1);
                }
                None => self.name_overflow = true,
            }
        }
        if self.kind == PaxKey::Size {
            self.size_value = match self.size_value {
                Ok(acc) if b.is_ascii_digit() => {
                    let digit = u64::from(b.wrapping_sub(b'0'));
                    acc.unwrap_or(0)
                        .checked_mul(10)
                        .and_then(|a| a.checked_add(digit))
                        .map(Some)
                        .ok_or(TarError::NumberOutOfRange { field: "PAX size" })
                }
                Ok(_) => Err(TarError::BadPaxSize),
                Err(e) => Err(e),
            };
        }
    }

    /// The record's last byte: its newline, after a key and `=`.
    fn end_record(&mut self, b: u8) -> Result<(), TarError> {
        if b != b'\n' || self.part != PaxPart::Value {
            return Err(TarError::BadPaxRecord);
        }
        if self.kind == PaxKey::Size {
            let size = self.size_value?.ok_or(TarError::BadPaxSize)?;
            self.size = Some(checked_size(size, "PAX size")?);
        }
        self.part = PaxPart::Length { digits: 0 };
        self.left = 0;
        Ok(())
    }

    /// The header's outcome once all its bytes were read: a record cut short is malformed.
    fn finish(&self) -> Result<(), TarError> {
        match (self.error, self.part) {
            (Some(e), _) => Err(e),
            (None, PaxPart::Length { digits: 0 } | PaxPart::Padding) => Ok(()),
            (None, _) => Err(TarError::BadPaxRecord),
        }
    }
}

/// Joins `parts` into the name buffer; longer than `N` is a `CapacityError` naming `NAME`.
fn copy_name<const N: usize>(
    dst: &mut [u8; N],
    len: &mut usize,
    parts: &[&[u8]],
    offset: u64,
) -> Result<(), StreamError> {
    let total: usize = parts.iter().map(|p| p.len()).sum();
    if total > N {
        return Err(name_capacity(N, offset));
    }
    let mut at = 0usize;
    for part in parts {
        // `at + part.len() <= total <= N`; `checked_add` makes the range the part's length.
        if let Some(d) = at.checked_add(part.len()).and_then(|end| dst.get_mut(at..end)) {
            d.copy_from_slice(part);
        }
        at = at.saturating_add(part.len());
    }
    *len = total;
    Ok(())
}

/// A name longer than the walker's name buffer of `capacity` bytes, in the header at `offset`.
fn name_capacity(capacity: usize, offset: u64) -> StreamError {
    let capacity = CapacityError { limit: "NAME", capacity: capacity as u64 };
    StreamError::at_archive(Stage::Tar, offset, StreamKind::Capacity(capacity))
}

/// Bytes of the one leading `./` a member name may have (normalised away), 0 or 2.
fn dot_slash(full: &[u8]) -> usize {
    if full.starts_with(b"./") {
        2
    } else {
        0
    }
}

/// Checks a normalised member name; `Ok(None)` for a safe name that is not UTF-8.
fn validate_name(name: &[u8]) -> Result<Option<&str>, TarError> {
    if name.is_empty() {
        return Err(TarError::EmptyName);
    }
    if name.contains(&0) {
        return Err(TarError::NulInName);
    }
    if name.first() == Some(&b'/') {
        return Err(TarError::AbsoluteName);
    }
    if name.split(|&b| b == b'/').any(|c| c == b"..") {
        return Err(TarError::ParentComponent);
    }
    Ok(core::str::from_utf8(name).ok())
}

/// Fills `dst` from the stream, advancing `offset`; returns the bytes filled, fewer than
/// `dst.len()` when the stream ended first.
fn read_exact<S: BufRead<Error = StreamError>>(
    stream: &mut S,
    offset: &mut u64,
    dst: &mut [u8],
) -> Result<usize, StreamError> {
    let mut filled = 0usize;
    stream_body(stream, offset, dst.len() as u64, &mut |chunk| {
        // The chunks add up to at most `dst.len()`: the range is the chunk's length.
        if let Some(d) = filled.checked_add(chunk.len()).and_then(|end| dst.get_mut(filled..end)) {
            d.copy_from_slice(chunk);
        }
        filled = filled.saturating_add(chunk.len());
    })?;
    Ok(filled)
}

/// Skips `n` bytes; an early end is `Truncated`.
fn skip<S: BufRead<Error = StreamError>>(stream: &mut S, offset: &mut u64, n: u64) -> Result<(), StreamError> {
    if skip_up_to(stream, offset, n)? {
        Ok(())
    } else {
        Err(StreamError::at_archive(Stage::Tar, *offset, StreamKind::Truncated))
    }
}

/// Skips `n` bytes, or fewer when the stream ends first (`Ok(false)`).
fn skip_up_to<S: BufRead<Error = StreamError>>(stream: &mut S, offset: &mut u64, n: u64) -> Result<bool, StreamError> {
    stream_body(stream, offset, n, &mut |_| {})
}

/// Hands a metadata body (PAX records, a GNU long name) of `size` bytes to `f` as it streams,
/// then skips its padding; a body cut short is `Truncated` at its start.
fn read_meta_body<S: BufRead<Error = StreamError>>(
    stream: &mut S,
    offset: &mut u64,
    size: u64,
    f: &mut dyn FnMut(&[u8]),
) -> Result<(), StreamError> {
    let at = *offset;
    if !stream_body(stream, offset, size, f)? {
        return Err(StreamError::at_archive(Stage::Tar, at, StreamKind::Truncated));
    }
    skip(stream, offset, padding(size))
}

/// Hands the next `n` bytes to `f` chunk by chunk as the stream has them, or fewer when it
/// ends first (`Ok(false)`).
// Not inlined, and `f` behind `dyn`: one copy serves the block reads, the skips and the
// metadata bodies.
#[inline(never)]
fn stream_body<S: BufRead<Error = StreamError>>(
    stream: &mut S,
    offset: &mut u64,
    mut n: u64,
    f: &mut dyn FnMut(&[u8]),
) -> Result<bool, StreamError> {
    while n > 0 {
        let buf = stream.fill_buf()?;
        if buf.is_empty() {
            return Ok(false);
        }
        let k = usize::try_from(n).unwrap_or(usize::MAX).min(buf.len());
        f(buf.get(..k).unwrap_or(&[]));
        stream.consume(k);
        // `k <= n`; the offset counts delivered bytes.
        n = n.saturating_sub(k as u64);
        *offset = offset.saturating_add(k as u64);
    }
    Ok(true)
}

impl<S: BufRead<Error = StreamError>, const NAME: usize> TarReader<S, NAME> {
    /// A walker at the start of `stream`.
    pub fn new(stream: S) -> Self {
        Self {
            stream,
            offset: 0,
            block: [0; BLOCK_SIZE],
            name: [0; NAME],
            name_len: 0,
            pending_name: PendingName::None,
            pending_size: None,
            pending_sparse: false,
            raw_names: false,
            body_remaining: 0,
            body_padding: 0,
            ended: false,
            after_end: AfterEnd::default(),
            members: 0,
        }
    }

    /// Yield members whose name is not UTF-8 (see [`Member::name_bytes`]) instead of
    /// skipping them with a [`TarWarning::NameNotUtf8`]. Off by default: no manifest can name
    /// such a member, so the loader has no use for it; an extracting tool wants it.
    pub fn set_raw_names(&mut self, yes: bool) {
        self.raw_names = yes;
    }

    /// Bytes of the tar stream consumed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// True once the end of the archive was reached.
    pub fn is_ended(&self) -> bool {
        self.ended
    }

    /// Regular members yielded so far.
    pub fn members(&self) -> u32 {
        self.members
    }

    /// The path of the last header read (one leading `./` stripped), for messages once its
    /// [`Member`] is gone; empty before the first, or where it is not UTF-8.
    pub fn last_name(&self) -> &str {
        let full = self.name.get(..self.name_len).unwrap_or(&[]);
        core::str::from_utf8(full.get(dot_slash(full)..).unwrap_or(&[])).unwrap_or("")
    }

    /// The stream underneath.
    pub fn stream(&self) -> &S {
        &self.stream
    }

    /// The stream underneath, mutably (for draining after the end).
    pub fn stream_mut(&mut self) -> &mut S {
        &mut self.stream
    }

    /// Reads one block; `Ok(false)` at a clean end of stream, `Truncated` inside a block.
    fn read_block(&mut self) -> Result<bool, StreamError> {
        let at = self.offset;
        match read_exact(&mut self.stream, &mut self.offset, &mut self.block)? {
            0 => Ok(false),
            BLOCK_SIZE => Ok(true),
            _ => Err(StreamError::at_archive(Stage::Tar, at, StreamKind::Truncated)),
        }
    }

    /// Reads a PAX header's body of `size` bytes as it streams ([`PaxStream`]) and applies it
    /// to the next member: its `path` (or `GNU.sparse.name`), `size` and sparseness. A global
    /// one is checked, then ignored with a warning if it sets a path or size.
    fn read_pax(
        &mut self,
        size: u64,
        global: bool,
        header_offset: u64,
        sink: &mut (impl WarningSink + ?Sized),
    ) -> Result<(), StreamError> {
        let mut pax = PaxStream::new(global);
        let Self { stream, offset, name, name_len, .. } = self;
        let outcome =
            read_meta_body(stream, offset, size, &mut |chunk| pax.feed(chunk, name, name_len)).and_then(|()| {
                pax.finish().map_err(|e| tar_error(header_offset, e))?;
                if pax.name_overflow {
                    return Err(name_capacity(NAME, header_offset));
                }
                Ok(())
            });
        if let Err(e) = outcome {
            // The name buffer may hold part of a value: no member's name.
            *name_len = 0;
            return Err(e);
        }
        if global {
            if pax.path_or_size {
                warn(sink, header_offset, TarWarning::GlobalPaxIgnored);
            }
            return Ok(());
        }
        if let Some(size) = pax.size {
            self.pending_size = Some(size);
        }
        self.pending_sparse |= pax.sparse;
        if pax.name_from.is_some() {
            self.pending_name = PendingName::Pax;
        }
        Ok(())
    }

    /// Reads a GNU long name (`L`) of `size` bytes into the name buffer as it streams (up to
    /// its first NUL), or past it when a PAX name is pending (PAX wins, as in libarchive).
    fn read_long_name(&mut self, size: u64, header_offset: u64) -> Result<(), StreamError> {
        let keep = self.pending_name != PendingName::Pax;
        let Self { stream, offset, name, name_len, .. } = self;
        let (mut len, mut ended, mut overflow) = (0usize, !keep, false);
        let read = read_meta_body(stream, offset, size, &mut |chunk| {
            for &b in chunk {
                if ended {
                    break;
                }
                match name.get_mut(len) {
                    _ if b == 0 => ended = true,
                    Some(slot) => {
                        *slot = b;
                        len = len.saturating_add(1);
                    }
                    None => (overflow, ended) = (true, true),
                }
            }
        });
        let outcome = read.and_then(|()| if overflow { Err(name_capacity(NAME, header_offset)) } else { Ok(()) });
        if !keep {
            return outcome;
        }
        *name_len = if outcome.is_ok() { len } else { 0 };
        outcome?;
        self.pending_name = PendingName::Gnu;
        Ok(())
    }

    /// The next regular member, or `None` at the end of the archive.
    ///
    /// Skips whatever the previous member left unread, then every header that is not a
    /// regular member (directories, links, metadata) and every dropped name.
    pub fn next_member(&mut self, sink: &mut (impl WarningSink + ?Sized)) -> Result<Option<Member<'_, S>>, Error> {
        if self.ended {
            return Ok(None);
        }
        loop {
            if !self.skip_body()? {
                // The stream ended inside the padding after the last body.
                warn(sink, self.offset, TarWarning::MissingEndOfArchive);
                self.ended = true;
                return Ok(None);
            }
            let header_offset = self.offset;
            if !self.read_block()? {
                warn(sink, header_offset, TarWarning::MissingEndOfArchive);
                self.ended = true;
                return Ok(None);
            }
            if self.block.iter().all(|&b| b == 0) {
                self.end_of_archive(sink)?;
                return Ok(None);
            }
            if verify_checksum(&self.block).map_err(|e| tar_error(header_offset, e))? {
                warn(sink, header_offset, TarWarning::SignedChecksum);
            }
            let typeflag = self.block.get(field::TYPEFLAG).copied().unwrap_or(0);
            let header_size = parse_number(self.block.get(field::SIZE).unwrap_or(&[]), "size")
                .and_then(|size| checked_size(size, "size"))
                .map_err(|e| tar_error(header_offset, e))?;
            match typeflag {
                b'x' | b'X' | b'g' => {
                    self.read_pax(header_size, typeflag == b'g', header_offset, sink)?;
                    continue;
                }
                b'L' => {
                    self.read_long_name(header_size, header_offset)?;
                    continue;
                }
                b'K' => {
                    skip(&mut self.stream, &mut self.offset, header_size)?;
                    skip(&mut self.stream, &mut self.offset, padding(header_size))?;
                    continue;
                }
                b'M' | b'V' => {
                    return Err(tar_error(header_offset, TarError::UnsupportedType { typeflag }).into());
                }
                b'S' => self.pending_sparse = true,
                _ => {}
            }
            let size = self.pending_size.take().unwrap_or(header_size);
            let pending = core::mem::replace(&mut self.pending_name, PendingName::None);
            if pending == PendingName::None {
                let block = &self.block;
                let name = until_nul(block.get(field::NAME).unwrap_or(&[]));
                let prefix = until_nul(block.get(field::PREFIX).unwrap_or(&[]));
                let is_posix = block.get(field::MAGIC) == Some(b"ustar\0");
                let parts: &[&[u8]] = if is_posix && !prefix.is_empty() { &[prefix, b"/", name] } else { &[name] };
                copy_name(&mut self.name, &mut self.name_len, parts, header_offset)?;
            }
            if typeflag == b'S' {
                // Old GNU sparse: extension blocks follow while `isextended` is set.
                let mut extended = self.block.get(GNU_IS_EXTENDED).is_some_and(|&b| b != 0);
                while extended {
                    let at = self.offset;
                    if !self.read_block()? {
                        return Err(StreamError::at_archive(Stage::Tar, at, StreamKind::Truncated).into());
                    }
                    extended = self.block.get(GNU_EXT_IS_EXTENDED).is_some_and(|&b| b != 0);
                }
            }
            self.body_remaining = size;
            self.body_padding = padding(size);
            let sparse = core::mem::take(&mut self.pending_sparse);
            let full = self.name.get(..self.name_len).unwrap_or(&[]);
            let is_dir = typeflag == b'5' || full.last() == Some(&b'/');
            let regular = match typeflag {
                b'0' | 0 | b'7' | b'S' => true,
                b'1' | b'2' | b'3' | b'4' | b'5' | b'6' | b'D' => false,
                other => {
                    warn(sink, header_offset, TarWarning::UnknownType { typeflag: other });
                    true
                }
            };
            if !regular || is_dir {
                continue;
            }
            let strip = dot_slash(full);
            let normalised = full.get(strip..).unwrap_or(&[]);
            if sparse {
                warn_member(sink, header_offset, TarWarning::SparseSkipped, normalised);
                continue;
            }
            let dropped = match validate_name(normalised) {
                Ok(Some(name)) => name.ends_with(DROPPED_SUFFIX),
                Ok(None) if self.raw_names => false,
                Ok(None) => {
                    warn_member(sink, header_offset, TarWarning::NameNotUtf8, normalised);
                    continue;
                }
                Err(kind) => {
                    // Shown lossy, whatever it is: a refused name may hold a NUL or control bytes.
                    let e = Error::from(tar_error(header_offset, kind));
                    return Err(Error { member: Text::from_bytes_lossy(normalised), ..e });
                }
            };
            if dropped {
                continue;
            }
            // A count for reports: 2^32 members would take 2 TiB of headers; it saturates.
            self.members = self.members.saturating_add(1);
            let Self { stream, offset, body_remaining, name: name_buf, name_len, .. } = self;
            let raw_name = name_buf.get(strip..*name_len).unwrap_or(&[]);
            let name = core::str::from_utf8(raw_name).unwrap_or("");
            return Ok(Some(Member {
                name,
                raw_name,
                size,
                typeflag,
                header_offset,
                stream,
                remaining: body_remaining,
                offset,
            }));
        }
    }

    /// Skips what is left of the current body and its padding; `Ok(false)` when the stream
    /// ends inside the padding (a short body is `Truncated`).
    fn skip_body(&mut self) -> Result<bool, StreamError> {
        // Two skips rather than one of the sum: no addition, whatever the sizes.
        let (body, padding) = (self.body_remaining, self.body_padding);
        self.body_remaining = 0;
        self.body_padding = 0;
        skip(&mut self.stream, &mut self.offset, body)?;
        skip_up_to(&mut self.stream, &mut self.offset, padding)
    }

    /// After a first zero block: expects a second; tolerates one missing (warning).
    fn end_of_archive(&mut self, sink: &mut (impl WarningSink + ?Sized)) -> Result<(), StreamError> {
        self.ended = true;
        let second = self.offset;
        if !self.read_block()? {
            warn(sink, second, TarWarning::LoneZeroBlock);
            return Ok(());
        }
        if self.block.iter().any(|&b| b != 0) {
            warn(sink, second, TarWarning::LoneZeroBlock);
            self.after_end.bytes = self.after_end.bytes.saturating_add(BLOCK_SIZE_U64);
            let nonzero = self.block.iter().filter(|&&b| b != 0).count() as u64;
            self.after_end.nonzero_bytes = self.after_end.nonzero_bytes.saturating_add(nonzero);
        }
        Ok(())
    }

    /// Walks the rest of the archive (skipping members), then reads the stream to its end,
    /// counting what follows the end-of-archive blocks (record padding is zeros).
    pub fn drain(&mut self, sink: &mut (impl WarningSink + ?Sized)) -> Result<AfterEnd, Error> {
        while self.next_member(sink)?.is_some() {}
        loop {
            let buf = self.stream.fill_buf()?;
            if buf.is_empty() {
                return Ok(self.after_end);
            }
            let n = buf.len();
            let nonzero = buf.iter().filter(|&&b| b != 0).count() as u64;
            // Byte counts of what the stream delivered (see the module docs).
            self.after_end.nonzero_bytes = self.after_end.nonzero_bytes.saturating_add(nonzero);
            self.after_end.bytes = self.after_end.bytes.saturating_add(n as u64);
            self.stream.consume(n);
            self.offset = self.offset.saturating_add(n as u64);
        }
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
    use std::string::String;
    use std::vec::Vec;

    use crate::gzip::{Decoder, DEFAULT_MAX_INFLATED};
    use crate::ErrorKind;

    #[derive(Clone, Copy)]
    enum Magic {
        Posix,
        Gnu,
        V7,
    }

    fn header_with(name: &[u8], size: u64, typeflag: u8, magic: Magic, prefix: &[u8]) -> [u8; 512] {
        let mut h = [0u8; 512];
        h[..name.len()].copy_from_slice(name);
        h[100..107].copy_from_slice(b"0000644");
        let size_field = std::format!("{size:011o}");
        h[124..135].copy_from_slice(size_field.as_bytes());
        h[156] = typeflag;
        match magic {
            Magic::Posix => {
                h[257..263].copy_from_slice(b"ustar\0");
                h[263..265].copy_from_slice(b"00");
            }
            Magic::Gnu => {
                h[257..263].copy_from_slice(b"ustar ");
                h[263..265].copy_from_slice(b" \0");
            }
            Magic::V7 => {}
        }
        h[345..345 + prefix.len()].copy_from_slice(prefix);
        seal(&mut h);
        h
    }

    fn seal(h: &mut [u8; 512]) {
        h[148..156].fill(b' ');
        let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
        h[148..156].copy_from_slice(std::format!("{sum:06o}\0 ").as_bytes());
    }

    fn header(name: &str, size: u64, typeflag: u8) -> [u8; 512] {
        header_with(name.as_bytes(), size, typeflag, Magic::Posix, b"")
    }

    fn body(data: &[u8]) -> Vec<u8> {
        let mut v = data.to_vec();
        v.resize(data.len().div_ceil(512) * 512, 0);
        v
    }

    fn entry(name: &str, data: &[u8]) -> Vec<u8> {
        let mut v = header(name, data.len() as u64, b'0').to_vec();
        v.extend(body(data));
        v
    }

    fn pax(typeflag: u8, records: &[(&str, &str)]) -> Vec<u8> {
        let mut data = Vec::new();
        for (k, v) in records {
            let rest = std::format!(" {k}={v}\n");
            let mut len = rest.len() + 1;
            while std::format!("{len}").len() + rest.len() != len {
                len += 1;
            }
            data.extend_from_slice(std::format!("{len}{rest}").as_bytes());
        }
        let mut v = header("././@PaxHeader", data.len() as u64, typeflag).to_vec();
        v.extend(body(&data));
        v
    }

    fn end() -> Vec<u8> {
        std::vec![0u8; 1024]
    }

    type Walked = Vec<(String, Vec<u8>)>;

    /// Walks `tar`, reading every body; returns members and warnings.
    fn walk(tar: &[u8]) -> Result<(Walked, Vec<TarWarning>, AfterEnd), Error> {
        let stream = Decoder::sniff(tar, 0, DEFAULT_MAX_INFLATED)?;
        let mut reader: TarReader<_, 256> = TarReader::new(stream);
        let mut warnings = Vec::new();
        let mut sink = |w: &Warning| {
            if let WarningKind::Tar(t) = w.kind {
                warnings.push(t)
            }
        };
        let mut out = Vec::new();
        while let Some(mut m) = reader.next_member(&mut sink)? {
            let mut data = Vec::new();
            let mut buf = [0u8; 100];
            loop {
                let n = m.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                data.extend_from_slice(&buf[..n]);
            }
            assert_eq!(data.len() as u64, m.size());
            out.push((String::from(m.name()), data));
        }
        let after = reader.drain(&mut sink)?;
        Ok((out, warnings, after))
    }

    fn names(w: &Walked) -> Vec<&str> {
        w.iter().map(|(n, _)| n.as_str()).collect()
    }

    fn tar_kind(e: &Error) -> TarError {
        match e.kind {
            ErrorKind::Tar(t) => t,
            other => panic!("expected a tar error, got {other:?}"),
        }
    }

    #[test]
    fn numbers_octal_and_base_256() {
        assert_eq!(parse_number(b"00000001750\0", "size"), Ok(1000));
        assert_eq!(parse_number(b"   1750 \0\0\0\0", "size"), Ok(1000));
        assert_eq!(parse_number(b"\0\0\0\0", "size"), Ok(0));
        assert_eq!(parse_number(b"\x80\0\0\0\0\0\0\x02\x40\0\0\0", "size"), Ok(9 << 30));
        assert_eq!(parse_number(b"\xff\xff\xff\xff", "size"), Err(TarError::NumberOutOfRange { field: "size" }));
        assert_eq!(
            parse_number(b"\x80\x01\0\0\0\0\0\0\0\0\0\0", "size"),
            Err(TarError::NumberOutOfRange { field: "size" })
        );
        assert_eq!(parse_number(b"0009\0", "size"), Err(TarError::BadNumber { field: "size" }));
        assert_eq!(parse_number(b"12 34", "size"), Err(TarError::BadNumber { field: "size" }));
    }

    #[test]
    fn ustar_members_prefix_and_end() {
        let mut tar = entry("neff.json", b"{}");
        tar.extend(header_with(b"PE.bin", 3, b'0', Magic::Posix, b"sg00/deep"));
        tar.extend(body(b"abc"));
        tar.extend(end());
        tar.extend(std::vec![0u8; 4096]); // record padding
        let (w, warnings, after) = walk(&tar).unwrap();
        assert_eq!(names(&w), ["neff.json", "sg00/deep/PE.bin"]);
        assert_eq!(w[1].1, b"abc");
        assert!(warnings.is_empty());
        assert_eq!(after, AfterEnd { bytes: 4096, nonzero_bytes: 0 });
    }

    #[test]
    fn gnu_headers_do_not_join_the_prefix_area() {
        let mut tar = header_with(b"a.bin", 1, b'0', Magic::Gnu, b"\x01\x02not-a-prefix").to_vec();
        tar.extend(body(b"z"));
        tar.extend(header_with(b"v7.bin", 0, b'\0', Magic::V7, b"junk").to_vec());
        tar.extend(end());
        let (w, _, _) = walk(&tar).unwrap();
        assert_eq!(names(&w), ["a.bin", "v7.bin"]);
    }

    #[test]
    fn base_256_size_is_read() {
        let mut h = header("big.bin", 0, b'0');
        h[124..136].copy_from_slice(b"\x80\0\0\0\0\0\0\0\0\0\x02\x00");
        seal(&mut h);
        let mut tar = h.to_vec();
        tar.extend(std::vec![7u8; 512]);
        tar.extend(end());
        let (w, _, _) = walk(&tar).unwrap();
        assert_eq!(w[0].1, std::vec![7u8; 512]);
    }

    /// Regression: a GNU base-256 size within 511 of `u64::MAX` overflowed `size + padding`
    /// (a debug build panicked with "attempt to add with overflow", a release build wrapped
    /// and skipped a few bytes instead of the body). It is now refused at its header.
    #[test]
    fn base_256_size_near_u64_max_is_refused_not_wrapped() {
        // A directory's body is skipped unread: that is where `size + padding` was summed.
        for (size, typeflag) in [(u64::MAX, b'5'), (u64::MAX, b'0'), (u64::MAX - 1, b'0'), (u64::MAX - 510, b'5')] {
            let mut h = header("huge.bin", 0, typeflag);
            h[124] = 0x80;
            h[125..128].fill(0);
            h[128..136].copy_from_slice(&size.to_be_bytes());
            seal(&mut h);
            let mut tar = h.to_vec();
            tar.extend(entry("after.json", b"{}"));
            tar.extend(end());
            let e = walk(&tar).unwrap_err();
            assert_eq!(tar_kind(&e), TarError::NumberOutOfRange { field: "size" }, "{size:#x}");
            assert_eq!((e.offset_base, e.offset), (OffsetBase::Archive, 0));
        }
        // The largest size whose padded span fits is read (and then found truncated).
        let mut h = header("huge.bin", 0, b'0');
        h[124] = 0x80;
        h[125..128].fill(0);
        h[128..136].copy_from_slice(&(u64::MAX - 511).to_be_bytes());
        seal(&mut h);
        let mut tar = h.to_vec();
        tar.extend(end());
        assert_eq!(walk(&tar).unwrap_err().kind, ErrorKind::Truncated);
    }

    /// The same bound on a PAX `size` and on a skipped GNU `K` body.
    #[test]
    fn pax_and_long_link_sizes_near_u64_max_are_refused() {
        for size in ["18446744073709551615", "18446744073709551616", "99999999999999999999999"] {
            let mut tar = pax(b'x', &[("size", size)]);
            tar.extend(header("a.bin", 0, b'0'));
            tar.extend(end());
            let e = walk(&tar).unwrap_err();
            assert_eq!(tar_kind(&e), TarError::NumberOutOfRange { field: "PAX size" }, "{size}");
            let text = std::format!("{e}");
            assert!(text.contains("tar header field PAX size is negative or too large"), "{text}");
        }

        let mut k = header_with(b"././@LongLink", 0, b'K', Magic::Gnu, b"");
        k[124] = 0x80;
        k[125..128].fill(0);
        k[128..136].copy_from_slice(&(u64::MAX - 100).to_be_bytes());
        seal(&mut k);
        let mut tar = k.to_vec();
        tar.extend(end());
        assert_eq!(tar_kind(&walk(&tar).unwrap_err()), TarError::NumberOutOfRange { field: "size" });
    }

    #[test]
    fn checksums_unsigned_signed_and_bad() {
        // A high byte in the name makes the signed and unsigned sums differ.
        let mut h = header_with(b"caf\xc3\xa9", 0, b'0', Magic::Posix, b"");
        let unsigned: i64 =
            h.iter().enumerate().map(|(i, &b)| if (148..156).contains(&i) { 32 } else { i64::from(b) }).sum();
        let signed: i64 =
            h.iter().enumerate().map(|(i, &b)| if (148..156).contains(&i) { 32 } else { i64::from(b as i8) }).sum();
        assert_ne!(unsigned, signed);
        h[148..156].copy_from_slice(std::format!("{signed:06o}\0 ").as_bytes());
        let mut tar = h.to_vec();
        tar.extend(end());
        let (w, warnings, _) = walk(&tar).unwrap();
        assert_eq!(names(&w), ["café"]);
        assert_eq!(warnings, [TarWarning::SignedChecksum]);

        let mut tar = header("x", 0, b'0').to_vec();
        tar[0] = b'y';
        tar.extend(end());
        assert!(matches!(tar_kind(&walk(&tar).unwrap_err()), TarError::Checksum { .. }));
    }

    #[test]
    fn pax_path_and_size_override_the_header() {
        let long = "sg00/".repeat(30) + "weights.npy"; // 161 chars
        let mut tar = pax(b'x', &[("mtime", "1795957502.2003193"), ("path", &long), ("size", "5")]);
        tar.extend(header("truncated-name", 0, b'0')); // the PAX size (5) wins over 0
        tar.extend(body(b"12345"));
        tar.extend(entry("after.json", b"{}")); // the override applied to one member only
        tar.extend(end());
        let (w, _, _) = walk(&tar).unwrap();
        assert_eq!(names(&w), [long.as_str(), "after.json"]);
        assert_eq!(w[0].1, b"12345");
    }

    #[test]
    fn pax_global_is_ignored_with_a_warning() {
        let mut tar = pax(b'g', &[("path", "everything"), ("comment", "x")]);
        tar.extend(entry("a.json", b"1"));
        tar.extend(end());
        let (w, warnings, _) = walk(&tar).unwrap();
        assert_eq!(names(&w), ["a.json"]);
        assert_eq!(warnings, [TarWarning::GlobalPaxIgnored]);
    }

    #[test]
    fn pax_errors() {
        let mut tar = pax(b'x', &[("size", "12x")]);
        tar.extend(entry("a", b"1"));
        assert_eq!(tar_kind(&walk(&tar).unwrap_err()), TarError::BadPaxSize);

        for bad in [&b"99 path=x\n"[..], b"x path=y\n", b"11 pathxyz\n", b"10 path=xy"] {
            let mut tar = header("././@PaxHeader", bad.len() as u64, b'x').to_vec();
            tar.extend(body(bad));
            tar.extend(entry("a", b"1"));
            assert_eq!(tar_kind(&walk(&tar).unwrap_err()), TarError::BadPaxRecord, "{bad:?}");
        }

        // A malformed record wins over a name too long for the buffer, as it did when the
        // header was read whole before its name was copied.
        let mut records = pax(b'x', &[("path", &"p".repeat(300))])[512..].to_vec();
        records.truncate(records.iter().rposition(|&b| b == b'\n').unwrap() + 1);
        records.extend_from_slice(b"5 x=y\n");
        let mut tar = header("././@PaxHeader", records.len() as u64, b'x').to_vec();
        tar.extend(body(&records));
        tar.extend(entry("a", b"1"));
        assert_eq!(tar_kind(&walk(&tar).unwrap_err()), TarError::BadPaxRecord);
    }

    /// A PAX header streams past: one of any length takes no buffer, its `path` lands in the
    /// name buffer, and only a name longer than that buffer is refused (at the PAX header).
    #[test]
    fn pax_headers_of_any_length_stream_past() {
        let path = std::format!("{}/w.npy", "d".repeat(200));
        let xattr = "x".repeat(70_000);
        let mut tar =
            pax(b'x', &[("comment", &xattr), ("path", &path), ("SCHILY.xattr.user.k", &xattr), ("size", "3")]);
        tar.extend(entry("truncated", b"abc"));
        let global = pax(b'g', &[("comment", &xattr)]);
        tar.extend(&global);
        tar.extend(entry("b", b"1"));
        tar.extend(end());
        let (w, warnings, _) = walk(&tar).unwrap();
        assert_eq!(names(&w), [path.as_str(), "b"]);
        assert_eq!(w[0].1, b"abc");
        assert_eq!(warnings, [], "a global header with no path or size is no warning");

        // The last `path` wins; `GNU.sparse.name` wins over `path` in either order.
        let mut tar = pax(b'x', &[("path", "first"), ("path", "second")]);
        tar.extend(entry("ustar", b""));
        for records in [[("path", "p"), ("GNU.sparse.name", "real")], [("GNU.sparse.name", "real"), ("path", "p")]] {
            tar.extend(pax(b'x', &records));
            tar.extend(entry("placeholder", b""));
        }
        tar.extend(end());
        let stream = Decoder::sniff(&tar[..], 0, DEFAULT_MAX_INFLATED).unwrap();
        let mut reader: TarReader<_, 256> = TarReader::new(stream);
        let mut skipped = Vec::new();
        let mut sink = |w: &Warning| skipped.push((w.kind, String::from(w.member.as_str())));
        assert_eq!(reader.next_member(&mut sink).unwrap().unwrap().name(), "second");
        assert!(reader.next_member(&mut sink).unwrap().is_none());
        let sparse = WarningKind::Tar(TarWarning::SparseSkipped);
        assert_eq!(skipped[..2], [(sparse, String::from("real")), (sparse, String::from("real"))]);

        // Past the name buffer (256 in these tests): refused at the PAX header, with no name.
        let mut tar = pax(b'x', &[("path", &"p".repeat(257))]);
        tar.extend(entry("a", b"1"));
        let e = walk(&tar).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Capacity(CapacityError { limit: "NAME", capacity: 256 }));
        assert_eq!((e.offset_base, e.offset), (OffsetBase::Archive, 0));
        // 256 bytes fit.
        let mut tar = pax(b'x', &[("path", &"p".repeat(256))]);
        tar.extend(entry("a", b"1"));
        tar.extend(end());
        assert_eq!(walk(&tar).unwrap().0[0].0.len(), 256);
    }

    /// The streamed reading gives the same outcome however the header is cut into chunks.
    #[test]
    fn a_pax_stream_reads_the_same_in_any_chunks() {
        let headers: [&[u8]; 8] = [
            b"12 path=abc\n9 size=7\n",
            b"29 GNU.sparse.name=real/name\n14 path=decoy\n\0\0\0",
            b"9 size=7\n11 size=1x\n",
            b"29 size=99999999999999999999\n",
            b"12 path=abc\n\0\0x",
            b"12 path=abc\n12 path=ab",
            b"5 k=\n\0\0",
            b"011 path=a\n",
        ];
        for header in headers {
            let read = |chunk: usize| {
                let mut pax = PaxStream::new(false);
                let (mut name, mut len) = ([0u8; 64], 0);
                for part in header.chunks(chunk) {
                    pax.feed(part, &mut name, &mut len);
                }
                let out = pax.finish().map(|()| (name[..len].to_vec(), pax.size, pax.sparse));
                std::format!("{out:?}")
            };
            let whole = read(header.len());
            for chunk in [1, 2, 5] {
                assert_eq!(
                    read(chunk),
                    whole,
                    "{:?} in chunks of {chunk}",
                    std::string::String::from_utf8_lossy(header)
                );
            }
        }
        let outcome = |h: &[u8]| {
            let mut pax = PaxStream::new(false);
            let (mut name, mut len) = ([0u8; 64], 0);
            pax.feed(h, &mut name, &mut len);
            pax.finish().map(|()| (std::string::String::from_utf8_lossy(&name[..len]).into_owned(), pax.size))
        };
        assert_eq!(outcome(headers[0]), Ok((String::from("abc"), Some(7))));
        assert_eq!(outcome(headers[1]), Ok((String::from("real/name"), None)));
        assert_eq!(outcome(headers[2]), Err(TarError::BadPaxSize));
        assert_eq!(outcome(headers[3]), Err(TarError::NumberOutOfRange { field: "PAX size" }));
        assert_eq!(outcome(headers[4]), Err(TarError::BadPaxRecord), "bytes after the NUL padding");
        assert_eq!(outcome(headers[5]), Err(TarError::BadPaxRecord), "a record cut short");
        assert_eq!(outcome(headers[6]), Ok((String::new(), None)), "an empty value; then padding");
        assert_eq!(outcome(headers[7]), Ok((String::from("a"), None)), "a length with a leading zero");
    }

    #[test]
    fn gnu_long_name_and_long_link() {
        let long = "debug_info/".repeat(12) + "x.dbg";
        let mut l = header_with(b"././@LongLink", long.len() as u64 + 1, b'L', Magic::Gnu, b"").to_vec();
        let mut name = long.clone().into_bytes();
        name.push(0);
        l.extend(body(&name));
        let mut tar = l;
        tar.extend(header_with(b"debug_info/debug_info/trunc", 2, b'0', Magic::Gnu, b""));
        tar.extend(body(b"ok"));
        let mut k = header_with(b"././@LongLink", 300, b'K', Magic::Gnu, b"").to_vec();
        k.extend(body(&[b'k'; 300]));
        tar.extend(k);
        tar.extend(header_with(b"link", 0, b'2', Magic::Gnu, b""));
        tar.extend(end());
        let (w, _, _) = walk(&tar).unwrap();
        assert_eq!(names(&w), [long.as_str()]);
        assert_eq!(w[0].1, b"ok");

        // A long name past the NAME capacity.
        let mut tar = header_with(b"././@LongLink", 300, b'L', Magic::Gnu, b"").to_vec();
        tar.extend(body(&[b'n'; 300]));
        tar.extend(entry("x", b""));
        let stream = Decoder::sniff(&tar[..], 0, DEFAULT_MAX_INFLATED).unwrap();
        let mut reader: TarReader<_, 128> = TarReader::new(stream);
        let e = reader.next_member(&mut crate::error::IgnoreWarnings).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Capacity(CapacityError { limit: "NAME", capacity: 128 }));
    }

    #[test]
    fn non_regular_members_are_skipped_and_odd_ones_refused() {
        let mut tar = Vec::new();
        let mut dir = header("sg00/", 1024, b'5').to_vec(); // GNU dumpdir-style body on a directory
        dir.extend(std::vec![b'd'; 1024]);
        tar.extend(dir);
        tar.extend(header("old-style-dir/", 0, b'0'));
        tar.extend(header("sym", 0, b'2'));
        tar.extend(header("hard", 0, b'1'));
        tar.extend(header("fifo", 0, b'6'));
        tar.extend(entry("./kelf-0.json", b"{}"));
        tar.extend(entry("sg00/wavegraph-bin.json", b"dropped"));
        tar.extend(entry("sg00/contig.bin", b"c"));
        let mut unknown = header("vendor.bin", 1, b'Z').to_vec();
        unknown.extend(body(b"u"));
        tar.extend(unknown);
        tar.extend(end());
        let (w, warnings, _) = walk(&tar).unwrap();
        assert_eq!(names(&w), ["kelf-0.json", "sg00/contig.bin", "vendor.bin"]);
        assert_eq!(warnings, [TarWarning::UnknownType { typeflag: b'Z' }]);

        for t in [b'M', b'V'] {
            let mut tar = header("x", 0, t).to_vec();
            tar.extend(end());
            assert_eq!(tar_kind(&walk(&tar).unwrap_err()), TarError::UnsupportedType { typeflag: t });
        }
    }

    #[test]
    fn unsafe_names_are_refused_with_the_name_attached() {
        let cases: [(&[u8], TarError); 4] = [
            (b"/etc/passwd", TarError::AbsoluteName),
            (b"sg00/../../x", TarError::ParentComponent),
            (b"..", TarError::ParentComponent),
            (b"./", TarError::EmptyName),
        ];
        for (name, want) in cases {
            // "./" alone is a directory by its trailing slash; use typeflag 0 and no slash test.
            let mut tar = header_with(name, 0, b'0', Magic::Posix, b"").to_vec();
            tar.extend(end());
            let r = walk(&tar);
            if name == b"./" {
                assert_eq!(
                    r.unwrap(),
                    (std::vec![], std::vec![], AfterEnd::default()),
                    "./ is a directory and skipped"
                );
                continue;
            }
            let e = r.unwrap_err();
            assert_eq!(tar_kind(&e), want, "{name:?}");
            // The refused name is attached (lossy: a byte that is not UTF-8 shows as '?'), at
            // the header of the member.
            let shown: String = name.iter().map(|&b| if b.is_ascii() { b as char } else { '?' }).collect();
            assert_eq!(
                (e.member.as_str(), e.offset_base, e.offset),
                (shown.as_str(), OffsetBase::Archive, 0),
                "{name:?}"
            );
        }
        let mut tar = pax(b'x', &[("path", "a\0b")]);
        tar.extend(entry("a", b""));
        tar.extend(end());
        let e = walk(&tar).unwrap_err();
        assert_eq!(tar_kind(&e), TarError::NulInName);
        assert_eq!(e.member.as_str(), "a?b", "a NUL in a refused name is shown as '?'");
        // A refused name that is valid UTF-8 is shown lossy too, as every refused name is.
        let mut tar = entry("/données", b"");
        tar.extend(end());
        let e = walk(&tar).unwrap_err();
        assert_eq!((tar_kind(&e), e.member.as_str()), (TarError::AbsoluteName, "/donn??es"));
        let mut tar = pax(b'x', &[("path", "./")]);
        tar.extend(header("a", 0, b'0'));
        tar.extend(entry("b", b"bee"));
        tar.extend(end());
        // "./" from PAX names a directory by its trailing slash: skipped, and the walk goes on
        // to the next member.
        assert_eq!(walk(&tar).unwrap(), (std::vec![("b".into(), b"bee".to_vec())], std::vec![], AfterEnd::default()));
        // A lone "." from PAX is yielded as it is, a regular member named "." (as the runtime's
        // member map would key it), with the ustar header's size and body: the loader has no
        // use for that name, and `neff unpack` refuses it (a '.' component). The member after
        // it is read as usual, and the archive ends cleanly.
        let mut tar = pax(b'x', &[("path", ".")]);
        let pax_len = tar.len() as u64;
        tar.extend(header("a", 1, b'0'));
        tar.extend(body(b"z"));
        tar.extend(entry("b", b"bee"));
        tar.extend(end());
        let stream = Decoder::sniff(&tar[..], 0, DEFAULT_MAX_INFLATED).unwrap();
        let mut reader: TarReader<_, 256> = TarReader::new(stream);
        let mut warnings = Vec::new();
        let mut sink = |w: &Warning| warnings.push(*w);
        {
            let mut m = reader.next_member(&mut sink).unwrap().unwrap();
            assert_eq!((m.name(), m.size(), m.header_offset(), m.data_offset()), (".", 1, pax_len, pax_len + 512));
            let mut buf = [0u8; 4];
            assert_eq!(m.read(&mut buf).unwrap(), 1);
            assert_eq!(&buf[..1], b"z");
            assert_eq!(m.read(&mut buf).unwrap(), 0);
        }
        {
            let m = reader.next_member(&mut sink).unwrap().unwrap();
            assert_eq!((m.name(), m.size(), m.header_offset()), ("b", 3, pax_len + 1024));
        }
        assert!(reader.next_member(&mut sink).unwrap().is_none());
        assert_eq!(reader.members(), 2, "the PAX record is not a member");
        assert_eq!(reader.drain(&mut sink).unwrap(), AfterEnd::default());
        assert!(reader.is_ended());
        assert!(warnings.is_empty(), "{warnings:?}");
    }

    #[test]
    fn end_of_archive_variants() {
        let mut tar = entry("a", b"1");
        tar.extend([0u8; 512]);
        let (w, warnings, _) = walk(&tar).unwrap();
        assert_eq!((w.len(), warnings), (1, std::vec![TarWarning::LoneZeroBlock]));

        let tar = entry("a", b"1");
        let (_, warnings, _) = walk(&tar).unwrap();
        assert_eq!(warnings, [TarWarning::MissingEndOfArchive]);

        let mut tar = entry("a", b"1");
        tar.extend(end());
        tar.extend(b"garbage");
        let (_, _, after) = walk(&tar).unwrap();
        assert_eq!(after, AfterEnd { bytes: 7, nonzero_bytes: 7 });

        let mut tar = entry("a", b"1");
        tar.extend([0u8; 100]);
        assert_eq!(walk(&tar).unwrap_err().kind, ErrorKind::Truncated);

        // The stream ends inside the zero padding after the last body (or right after the
        // body): no end-of-archive blocks, a warning, as Go's reader reads it.
        for cut in [1, 2, 100, 511] {
            let tar = &entry("a", b"1")[..512 + cut];
            let (w, warnings, after) = walk(tar).unwrap();
            assert_eq!(w, [("a".into(), b"1".to_vec())], "cut {cut}");
            assert_eq!(
                (warnings, after),
                (std::vec![TarWarning::MissingEndOfArchive], AfterEnd::default()),
                "cut {cut}"
            );
        }
        // A body cut short stays an error.
        let tar = &entry("a", b"12")[..513];
        assert_eq!(walk(tar).unwrap_err().kind, ErrorKind::Truncated);
    }

    /// Raw names and bodies; warnings with the member each names.
    type Named = (Vec<(Vec<u8>, Vec<u8>)>, Vec<(TarWarning, String)>);

    /// Every warning with the member it names.
    fn walk_named(tar: &[u8], raw: bool) -> Result<Named, Error> {
        let stream = Decoder::sniff(tar, 0, DEFAULT_MAX_INFLATED)?;
        let mut reader: TarReader<_, 256> = TarReader::new(stream);
        reader.set_raw_names(raw);
        let mut warnings = Vec::new();
        let mut sink = |w: &Warning| {
            if let WarningKind::Tar(t) = w.kind {
                warnings.push((t, String::from(w.member.as_str())))
            }
        };
        let mut out = Vec::new();
        while let Some(mut m) = reader.next_member(&mut sink)? {
            let mut data = std::vec![0u8; m.size() as usize];
            let mut at = 0;
            while at < data.len() {
                at += m.read(&mut data[at..])?;
            }
            assert_eq!(m.name_is_utf8(), core::str::from_utf8(m.name_bytes()).is_ok());
            if m.name_is_utf8() {
                assert_eq!(m.name().as_bytes(), m.name_bytes());
            } else {
                assert_eq!(m.name(), "");
            }
            out.push((m.name_bytes().to_vec(), data));
        }
        reader.drain(&mut sink)?;
        Ok((out, warnings))
    }

    #[test]
    fn sparse_members_are_skipped_with_a_warning_naming_them() {
        // Old GNU `S` with one extension block (isextended set in the header), then a body.
        let mut s = header_with(b"sparse.bin", 600, b'S', Magic::Gnu, b"");
        s[GNU_IS_EXTENDED] = 1;
        seal(&mut s);
        let mut tar = s.to_vec();
        let mut ext = [0u8; 512];
        ext[0..4].copy_from_slice(b"0001"); // an extension block is no header: any bytes
        tar.extend(ext);
        tar.extend(body(&[b's'; 600]));
        // PAX 1.0 sparse: the real name in GNU.sparse.name, a placeholder path.
        tar.extend(pax(b'x', &[("GNU.sparse.major", "1"), ("GNU.sparse.name", "real.bin")]));
        let mut p = header("GNUSparseFile.0/real.bin", 3, b'0').to_vec();
        p.extend(body(b"map"));
        tar.extend(p);
        tar.extend(entry("after.json", b"{}"));
        tar.extend(end());
        let (w, warnings) = walk_named(&tar, false).unwrap();
        assert_eq!(w, [(b"after.json".to_vec(), b"{}".to_vec())]);
        assert_eq!(
            warnings,
            [(TarWarning::SparseSkipped, "sparse.bin".into()), (TarWarning::SparseSkipped, "real.bin".into())]
        );
        // Without its extension block the archive is cut short.
        let mut s = header_with(b"sparse.bin", 0, b'S', Magic::Gnu, b"");
        s[GNU_IS_EXTENDED] = 1;
        seal(&mut s);
        assert_eq!(walk(&s).unwrap_err().kind, ErrorKind::Truncated);
    }

    #[test]
    fn names_that_are_not_utf8_are_skipped_or_yielded_raw() {
        let mut tar = header_with(b"bad\xff.bin", 2, b'0', Magic::Posix, b"").to_vec();
        tar.extend(body(b"hi"));
        tar.extend(entry("ok.json", b"{}"));
        tar.extend(end());
        let (w, warnings) = walk_named(&tar, false).unwrap();
        assert_eq!(w, [(b"ok.json".to_vec(), b"{}".to_vec())]);
        assert_eq!(warnings, [(TarWarning::NameNotUtf8, "bad?.bin".into())]);
        let (w, warnings) = walk_named(&tar, true).unwrap();
        assert_eq!(w, [(b"bad\xff.bin".to_vec(), b"hi".to_vec()), (b"ok.json".to_vec(), b"{}".to_vec())]);
        assert!(warnings.is_empty());
        // Unsafe stays unsafe whatever the encoding.
        let mut tar = header_with(b"/\xff", 0, b'0', Magic::Posix, b"").to_vec();
        tar.extend(end());
        assert_eq!(tar_kind(&walk_named(&tar, true).unwrap_err()), TarError::AbsoluteName);
    }

    #[test]
    fn truncated_body_names_the_member() {
        let mut tar = header("sg00/PE.bin", 1000, b'0').to_vec();
        tar.extend([1u8; 600]);
        let e = walk(&tar).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Truncated);
        assert_eq!(e.member.as_str(), "sg00/PE.bin");
        assert_eq!((e.offset_base, e.offset), (OffsetBase::Archive, 512 + 600));
    }

    #[test]
    fn half_read_members_are_skipped() {
        let mut tar = entry("a", &[b'a'; 1500]);
        tar.extend(entry("b", b"bee"));
        tar.extend(end());
        let stream = Decoder::sniff(&tar[..], 0, DEFAULT_MAX_INFLATED).unwrap();
        let mut reader: TarReader<_> = TarReader::new(stream);
        let mut sink = crate::error::IgnoreWarnings;
        {
            let mut m = reader.next_member(&mut sink).unwrap().unwrap();
            let mut buf = [0u8; 10];
            m.read(&mut buf).unwrap();
            assert_eq!((m.remaining(), m.data_offset()), (1490, 512));
        }
        {
            let mut m = reader.next_member(&mut sink).unwrap().unwrap();
            assert_eq!((m.name(), m.header_offset()), ("b", 2048));
            assert_eq!(m.fill_buf().unwrap(), b"bee");
        }
        assert!(reader.next_member(&mut sink).unwrap().is_none());
        assert_eq!(reader.members(), 2);
    }
}
