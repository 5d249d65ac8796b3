//! The gzip layer (RFC 1952) over the payload, and the raw pass-through for uncompressed tars
//! (docs/format.md §3.1).
//!
//! A gzip member is:
//!
//! ```text
//! +---+---+---+---+---+---+---+---+---+---+
//! |ID1|ID2|CM |FLG|     MTIME     |XFL|OS |   ID1 ID2 = 1f 8b, CM = 8 (deflate)
//! +---+---+---+---+---+---+---+---+---+---+
//! FLG.FEXTRA   -> XLEN (u16 LE) + XLEN bytes
//! FLG.FNAME    -> NUL-terminated file name
//! FLG.FCOMMENT -> NUL-terminated comment
//! FLG.FHCRC    -> CRC16: low 16 bits of the CRC-32 of every header byte before it
//! ... raw deflate (RFC 1951) ...
//! CRC32 (u32 LE) of the inflated bytes, ISIZE (u32 LE) = inflated length mod 2^32
//! ```
//!
//! FLG bits 5..7 are reserved and must be zero. FTEXT (bit 0) is only a hint.
//!
//! [`Decoder`] parses that header itself, inflates with `miniz_oxide::inflate::core::decompress`
//! (raw deflate, no zlib header; or another [`Inflate`] implementation, such as the host's
//! zlib-rs) into a 32 KiB wrapping window that the decoder owns, and is an
//! `embedded_io::BufRead` whose `fill_buf` hands out slices of that window (zero copy). New
//! output is produced only once every produced byte has been consumed, so the decoder never
//! overwrites unread data, and the window always holds the 32 KiB history deflate needs.
//! CRC-32 and ISIZE are checked when each member ends.
//!
//! **After the member.** Both real NEFFs pad the gzip member with zero bytes up to `data_size`;
//! zero padding is accepted silently. If another `1f 8b` member follows, it is read as a
//! continuation of the same stream, as libarchive (the runtime's reader) and `gzip -d` do; the
//! member count is reported as a [`GzipWarning::MultipleMembers`] because no known producer
//! writes one. Any other non-zero byte after the last member is a
//! [`GzipWarning::TrailingData`]; libarchive ignores such bytes too, so it is not an error.
//!
//! **Raw mode.** If the payload does not start with `1f 8b`, the decoder passes the source's
//! own buffers through unchanged, whatever `pkg_version` says (libarchive also bids on content).
//!
//! **Bomb guard.** The total inflated size is capped (`max_inflated`); exceeding it is a
//! `CapacityError` naming `max_inflated`, raised before any byte past the cap is handed out.
//!
//! **Arithmetic.** The member count is checked (more than `u32::MAX` members is a
//! `CapacityError` naming `gzip members`), the inflated byte counts stay below the cap, and an
//! inflater's output must lie inside the window (else the deflate failure of [`InflateStatus`]).
//! Source offsets and the byte counts of what the stream delivered saturate: they count bytes
//! the source really handed out, which cannot reach 2^64, so the saturation never happens.
#![deny(clippy::arithmetic_side_effects)]

use core::fmt;

use embedded_io::{BufRead, ErrorType, Read};
use miniz_oxide::inflate::core::{decompress, inflate_flags, DecompressorOxide};
use miniz_oxide::inflate::TINFLStatus;

use crate::error::{source_error, CapacityError, StreamError, StreamKind};
pub use crate::error::{GzipError, GzipWarning};
use crate::Stage;
use crc32fast::Hasher as Crc32;

/// Size of the inflate window: the deflate maximum distance, a power of two.
pub const WINDOW_SIZE: usize = miniz_oxide::inflate::core::TINFL_LZ_DICT_SIZE;

/// How far one [`Inflate::inflate`] call got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InflateStatus {
    /// More input, or room for more output, is needed: call again.
    Progress,
    /// The deflate stream ended.
    Done,
    /// The input ended (`more_input` was false) before the deflate stream did.
    Truncated,
    /// The deflate data is invalid; the inflater's own status code (miniz_oxide's `TINFLStatus`,
    /// or -1, miniz_oxide's `Failed`, for data another inflater refuses).
    Invalid(i8),
}

/// A raw-deflate (RFC 1951) inflater, driven by [`Decoder`] one gzip member at a time.
pub trait Inflate {
    /// Readies the inflater for a new deflate stream (the next gzip member).
    fn reset(&mut self);

    /// Inflates from `input` into `window[out_pos..]` and returns the status, the input bytes
    /// consumed and the output bytes written at `out_pos`.
    ///
    /// `window` is the decoder's whole window: it holds the latest 32 KiB of output (the
    /// decoder restarts at `out_pos` 0 once the end is reached and every byte was read), so an
    /// inflater may keep its deflate history there, as miniz_oxide does, or keep its own.
    /// `more_input` is false once the source has ended (`input` is then empty).
    fn inflate(
        &mut self,
        input: &[u8],
        window: &mut [u8; WINDOW_SIZE],
        out_pos: usize,
        more_input: bool,
    ) -> (InflateStatus, usize, usize);

    /// Whether [`Inflate::inflate_into`] may answer: false (the default) leaves the decoder's
    /// `read` without that path at all, as a controller's image wants it.
    const WRITES_ANY_BUFFER: bool = false;

    /// Inflates from `input` into `out`, a reader's buffer rather than the window, as
    /// [`Inflate::inflate`] does into the window: for an inflater that keeps its own deflate
    /// history (zlib-rs), so that [`Decoder`]'s `read` hands the bytes over without a copy
    /// through the window. `None`, the default: this inflater needs the window (miniz_oxide).
    /// Asked only when [`Inflate::WRITES_ANY_BUFFER`].
    fn inflate_into(
        &mut self,
        _input: &[u8],
        _out: &mut [u8],
        _more_input: bool,
    ) -> Option<(InflateStatus, usize, usize)> {
        None
    }
}

/// The core's own inflater: `miniz_oxide`, whose history is the decoder's window (about
/// 10.3 KiB of state, no heap). The firmware path, and the default of [`Decoder`].
pub struct MinizInflater {
    state: DecompressorOxide,
}

impl MinizInflater {
    /// A fresh inflater.
    pub fn new() -> Self {
        Self { state: DecompressorOxide::new() }
    }
}

impl Default for MinizInflater {
    fn default() -> Self {
        Self::new()
    }
}

impl Inflate for MinizInflater {
    fn reset(&mut self) {
        self.state.init();
    }

    fn inflate(
        &mut self,
        input: &[u8],
        window: &mut [u8; WINDOW_SIZE],
        out_pos: usize,
        more_input: bool,
    ) -> (InflateStatus, usize, usize) {
        let flags = if more_input { inflate_flags::TINFL_FLAG_HAS_MORE_INPUT } else { 0 };
        let (status, n_in, n_out) = decompress(&mut self.state, input, window, out_pos, flags);
        let status = match status {
            TINFLStatus::Done => InflateStatus::Done,
            TINFLStatus::NeedsMoreInput | TINFLStatus::HasMoreOutput => InflateStatus::Progress,
            TINFLStatus::FailedCannotMakeProgress if !more_input => InflateStatus::Truncated,
            other => InflateStatus::Invalid(other as i8),
        };
        (status, n_in, n_out)
    }
}

/// Default cap on the inflated size: 64 GiB.
pub const DEFAULT_MAX_INFLATED: u64 = 64 << 30;

/// The gzip magic bytes.
pub const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

mod flag {
    pub const FHCRC: u8 = 1 << 1;
    pub const FEXTRA: u8 = 1 << 2;
    pub const FNAME: u8 = 1 << 3;
    pub const FCOMMENT: u8 = 1 << 4;
    pub const RESERVED: u8 = 0b1110_0000;
}

/// How the payload is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Compression {
    /// One or more gzip members.
    Gzip,
    /// An uncompressed tar.
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Pass-through; `pushback` holds a byte consumed while sniffing.
    Raw { pushback: bool },
    /// Inside a member's deflate data.
    Inflating,
    /// A member ended; look for another one.
    BetweenMembers,
    /// No more inflated data.
    End,
}

/// What lay after the last gzip member inside the payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Trailing {
    /// Bytes after the last member.
    pub bytes: u64,
    /// Of which non-zero.
    pub nonzero_bytes: u64,
    /// File offset of the first non-zero one.
    pub first_nonzero_offset: Option<u64>,
}

/// The payload decoder: gzip (one or more members) or raw pass-through.
///
/// `S` is the payload source, read forward once; `I` the deflate inflater (miniz_oxide by
/// default). Errors carry `Stage::Gzip` and the file offset (`base_offset` + source bytes
/// consumed), or `Stage::Io` for a failing source.
pub struct Decoder<S, I = MinizInflater> {
    src: S,
    state: State,
    base_offset: u64,
    consumed: u64,
    inflater: I,
    window: [u8; WINDOW_SIZE],
    read_pos: usize,
    write_pos: usize,
    crc: Crc32,
    member_out: u64,
    total_out: u64,
    max_inflated: u64,
    members: u32,
    end_of_members: u64,
    trailing: Trailing,
    /// An error met by the inflate call whose output is being handed out: given once every
    /// byte before it has been read, so that what a reader sees before an error does not
    /// depend on how much one call inflates (the window, or a reader's larger buffer).
    #[cfg(not(target_os = "none"))]
    held: Option<StreamError>,
}

impl<S, I> fmt::Debug for Decoder<S, I> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Decoder")
            .field("state", &self.state)
            .field("consumed", &self.consumed)
            .field("total_out", &self.total_out)
            .field("members", &self.members)
            .finish_non_exhaustive()
    }
}

impl<S: BufRead> Decoder<S> {
    /// Sniffs the first bytes of `src`: `1f 8b` starts gzip (whose first member header is
    /// parsed now, so header errors surface here), anything else is passed through raw.
    /// `base_offset` is the file offset of `src`'s first byte (1024 in a NEFF).
    pub fn sniff(src: S, base_offset: u64, max_inflated: u64) -> Result<Self, StreamError> {
        let mut decoder = Self::unsniffed(src, base_offset, max_inflated);
        decoder.sniff_in_place()?;
        Ok(decoder)
    }

    /// A decoder that has not looked at its input yet.
    pub fn unsniffed(src: S, base_offset: u64, max_inflated: u64) -> Self {
        Decoder::unsniffed_with(src, base_offset, max_inflated, MinizInflater::new())
    }
}

impl<S: BufRead, I: Inflate> Decoder<S, I> {
    /// A decoder that inflates with `inflater` and has not looked at its input yet.
    pub fn unsniffed_with(src: S, base_offset: u64, max_inflated: u64, inflater: I) -> Self {
        Self {
            src,
            state: State::Raw { pushback: false },
            base_offset,
            consumed: 0,
            inflater,
            window: [0; WINDOW_SIZE],
            read_pos: 0,
            write_pos: 0,
            crc: Crc32::new(),
            member_out: 0,
            total_out: 0,
            max_inflated,
            members: 0,
            end_of_members: 0,
            trailing: Trailing::default(),
            #[cfg(not(target_os = "none"))]
            held: None,
        }
    }

    /// Sniffs gzip vs raw tar, in place: [`Archive::open`](crate::archive::Archive::open)
    /// builds the decoder inside the archive first, so its 43 KiB never pass through the stack.
    pub fn sniff_in_place(&mut self) -> Result<(), StreamError> {
        let decoder = self;
        match decoder.peek_byte()? {
            Some(0x1f) => {
                decoder.advance(1);
                match decoder.peek_byte()? {
                    Some(0x8b) => {
                        decoder.advance(1);
                        decoder.start_member()?;
                    }
                    _ => {
                        // Not gzip after all: hand the consumed 0x1f back from the window.
                        if let Some(first) = decoder.window.first_mut() {
                            *first = 0x1f;
                        }
                        decoder.state = State::Raw { pushback: true };
                    }
                }
            }
            _ => decoder.state = State::Raw { pushback: false },
        }
        Ok(())
    }

    /// How the payload is encoded.
    pub fn compression(&self) -> Compression {
        match self.state {
            State::Raw { .. } => Compression::None,
            _ => Compression::Gzip,
        }
    }

    /// Bytes handed out so far (inflated, or passed through in raw mode).
    pub fn total_out(&self) -> u64 {
        self.total_out
    }

    /// Source bytes consumed so far.
    pub fn consumed(&self) -> u64 {
        self.consumed
    }

    /// Gzip members started so far (0 in raw mode).
    pub fn members(&self) -> u32 {
        self.members
    }

    /// Source bytes up to the end of the last gzip trailer (raw mode: everything consumed).
    pub fn compressed_len(&self) -> u64 {
        match self.state {
            State::Raw { .. } => self.consumed,
            _ => self.end_of_members,
        }
    }

    /// The source, for draining what follows.
    pub fn source_mut(&mut self) -> &mut S {
        &mut self.src
    }

    /// Reads the source to its end after the stream has ended, counting what follows the
    /// last member. Call once [`fill_buf`](BufRead::fill_buf) returned empty.
    pub fn drain_trailing(&mut self) -> Result<Trailing, StreamError> {
        loop {
            let offset = self.offset();
            let buf = self.src.fill_buf().map_err(|e| source_error(offset, &e))?;
            if buf.is_empty() {
                return Ok(self.trailing);
            }
            let n = buf.len();
            if let Some(first) = buf.iter().position(|&b| b != 0) {
                let nonzero = buf.iter().filter(|&&b| b != 0).count() as u64;
                self.trailing.nonzero_bytes = self.trailing.nonzero_bytes.saturating_add(nonzero);
                self.trailing.first_nonzero_offset.get_or_insert(offset.saturating_add(first as u64));
            }
            self.trailing.bytes = self.trailing.bytes.saturating_add(n as u64);
            self.advance(n);
        }
    }

    #[cold]
    #[inline(never)]
    fn error(&self, kind: StreamKind) -> StreamError {
        StreamError::at_file(Stage::Gzip, self.offset(), kind)
    }

    /// The file offset of the next source byte (saturating: see the module's note).
    #[inline(never)]
    fn offset(&self) -> u64 {
        self.base_offset.saturating_add(self.consumed)
    }

    fn advance(&mut self, n: usize) {
        self.src.consume(n);
        self.consumed = self.consumed.saturating_add(n as u64);
    }

    fn peek_byte(&mut self) -> Result<Option<u8>, StreamError> {
        let offset = self.offset();
        let buf = self.src.fill_buf().map_err(|e| source_error(offset, &e))?;
        Ok(buf.first().copied())
    }

    /// Reads one header byte, feeding the header CRC.
    fn header_byte(&mut self, crc: &mut Crc32) -> Result<u8, StreamError> {
        match self.peek_byte()? {
            Some(b) => {
                self.advance(1);
                crc.update(&[b]);
                Ok(b)
            }
            None => Err(self.error(StreamKind::Truncated)),
        }
    }

    /// Parses the member header after ID1 ID2 and readies the inflater.
    fn start_member(&mut self) -> Result<(), StreamError> {
        let mut crc = Crc32::new();
        crc.update(&GZIP_MAGIC);
        let method = self.header_byte(&mut crc)?;
        if method != 8 {
            return Err(self.error(StreamKind::Gzip(GzipError::UnsupportedMethod { method })));
        }
        let flags = self.header_byte(&mut crc)?;
        if flags & flag::RESERVED != 0 {
            return Err(self.error(StreamKind::Gzip(GzipError::ReservedFlags { flags })));
        }
        for _ in 0..6 {
            self.header_byte(&mut crc)?; // MTIME, XFL, OS
        }
        if flags & flag::FEXTRA != 0 {
            let lo = self.header_byte(&mut crc)?;
            let hi = self.header_byte(&mut crc)?;
            for _ in 0..u16::from_le_bytes([lo, hi]) {
                self.header_byte(&mut crc)?;
            }
        }
        for present in [flags & flag::FNAME != 0, flags & flag::FCOMMENT != 0] {
            // Skipped, never stored: no capacity limit is needed, and data_size bounds the loop.
            while present && self.header_byte(&mut crc)? != 0 {}
        }
        if flags & flag::FHCRC != 0 {
            let computed = (crc.clone().finalize() & 0xFFFF) as u16;
            let lo = self.header_byte(&mut crc)?;
            let hi = self.header_byte(&mut crc)?;
            let stored = u16::from_le_bytes([lo, hi]);
            if stored != computed {
                return Err(self.error(StreamKind::Gzip(GzipError::HeaderCrc { stored, computed })));
            }
        }
        self.inflater.reset();
        self.crc = Crc32::new();
        self.member_out = 0;
        // Empty members inflate to nothing, so the cap does not bound their count: the input does.
        self.members = self.members.checked_add(1).ok_or_else(|| {
            self.error(StreamKind::Capacity(CapacityError { limit: "gzip members", capacity: u64::from(u32::MAX) }))
        })?;
        self.state = State::Inflating;
        Ok(())
    }

    fn read_trailer_u32(&mut self) -> Result<u32, StreamError> {
        let mut ignored = Crc32::new();
        let mut bytes = [0u8; 4];
        for b in &mut bytes {
            *b = self.header_byte(&mut ignored)?;
        }
        Ok(u32::from_le_bytes(bytes))
    }

    fn finish_member(&mut self) -> Result<(), StreamError> {
        let stored_crc = self.read_trailer_u32()?;
        let computed = self.crc.clone().finalize();
        if stored_crc != computed {
            return Err(self.error(StreamKind::Gzip(GzipError::Crc { stored: stored_crc, computed })));
        }
        let stored_size = self.read_trailer_u32()?;
        let computed = (self.member_out & 0xFFFF_FFFF) as u32;
        if stored_size != computed {
            return Err(self.error(StreamKind::Gzip(GzipError::Isize { stored: stored_size, computed })));
        }
        self.end_of_members = self.consumed;
        self.state = State::BetweenMembers;
        Ok(())
    }

    /// Looks for another member after a trailer.
    fn next_member_or_end(&mut self) -> Result<(), StreamError> {
        self.state = State::End;
        if self.peek_byte()? != Some(0x1f) {
            return Ok(());
        }
        let first_offset = self.offset();
        self.advance(1);
        if self.peek_byte()? == Some(0x8b) {
            self.advance(1);
            return self.start_member();
        }
        // A lone 0x1f: trailing data, counted with the rest by `drain_trailing`.
        self.trailing = Trailing { bytes: 1, nonzero_bytes: 1, first_nonzero_offset: Some(first_offset) };
        Ok(())
    }

    /// Inflates until some output is ready or the stream ends. Only called when every byte
    /// handed out has been consumed, so the whole window is free to overwrite.
    fn inflate_more(&mut self) -> Result<(), StreamError> {
        let mut idle_rounds = 0u32;
        loop {
            match self.state {
                State::Raw { .. } | State::End => return Ok(()),
                State::BetweenMembers => {
                    self.next_member_or_end()?;
                    continue;
                }
                State::Inflating => {}
            }
            let out_pos = if self.write_pos >= WINDOW_SIZE { 0 } else { self.write_pos };
            let offset = self.offset();
            let input = self.src.fill_buf().map_err(|e| source_error(offset, &e))?;
            let more_input = !input.is_empty();
            let (status, n_in, n_out) = self.inflater.inflate(input, &mut self.window, out_pos, more_input);
            self.advance(n_in);
            // An inflater writes inside the window; one that claims more is refused as failed
            // deflate data (miniz_oxide's `Failed`) rather than trusted.
            let end = out_pos.checked_add(n_out);
            if end.and_then(|end| self.window.get(out_pos..end)).is_none() {
                return Err(self.error(StreamKind::Gzip(GzipError::Inflate { status: FAILED })));
            }
            let handed = self.count_out(n_out);
            if let Some(bytes) = self.window.get(out_pos..out_pos.saturating_add(handed)) {
                self.crc.update(bytes);
            }
            self.read_pos = out_pos;
            self.write_pos = out_pos.saturating_add(handed);
            match self.settle(status, n_in, n_out, handed, more_input, &mut idle_rounds) {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(e) => return self.hold(handed, e).map(drop),
            }
        }
    }

    /// Counts the bytes of `n_out` an inflate call wrote that are within `max_inflated` (the
    /// ones handed out, to checksum), and returns how many they are.
    fn count_out(&mut self, n_out: usize) -> usize {
        let room = self.max_inflated.saturating_sub(self.total_out);
        let handed = usize::try_from(room).map_or(n_out, |room| room.min(n_out));
        self.member_out = self.member_out.saturating_add(handed as u64);
        self.total_out = self.total_out.saturating_add(handed as u64);
        handed
    }

    /// `e`, once the `handed` bytes just inflated are read ([`Decoder::held`]); at once if
    /// there are none. A controller's image has only the window's path, whose calls are of a
    /// fixed size, and no room for holding: there `e` comes at once, the call's bytes unread.
    fn hold(&mut self, handed: usize, e: StreamError) -> Result<usize, StreamError> {
        // Kept either way: a reader that asks again is given the same error, not a later one.
        #[cfg(not(target_os = "none"))]
        {
            self.held = Some(e);
            if handed > 0 {
                return Ok(handed);
            }
        }
        let _ = handed;
        Err(e)
    }

    /// What one inflate call means: output past `max_inflated` (of `n_out` bytes, `handed`
    /// within it) refused, the member's trailer at its end, an error, or (true) output to hand
    /// over; an inflater that keeps making no progress is refused.
    fn settle(
        &mut self,
        status: InflateStatus,
        n_in: usize,
        n_out: usize,
        handed: usize,
        more_input: bool,
        idle_rounds: &mut u32,
    ) -> Result<bool, StreamError> {
        if handed < n_out {
            let capacity = CapacityError { limit: "max_inflated", capacity: self.max_inflated };
            return Err(self.error(StreamKind::Capacity(capacity)));
        }
        match status {
            InflateStatus::Done => self.finish_member()?,
            InflateStatus::Progress => {}
            InflateStatus::Truncated => return Err(self.error(StreamKind::Truncated)),
            InflateStatus::Invalid(status) => return Err(self.error(StreamKind::Gzip(GzipError::Inflate { status }))),
        }
        if n_out > 0 {
            return Ok(true);
        }
        if n_in == 0 && status != InflateStatus::Done {
            // At most 3: the decoder gives up once it passes 2.
            *idle_rounds = idle_rounds.saturating_add(1);
            if *idle_rounds > 2 {
                let kind = if more_input {
                    StreamKind::Gzip(GzipError::Inflate { status: STALLED })
                } else {
                    StreamKind::Truncated
                };
                return Err(self.error(kind));
            }
        } else {
            *idle_rounds = 0;
        }
        Ok(false)
    }

    /// Inflates into `buf` directly when the window is all read and the inflater can
    /// ([`Inflate::inflate_into`]): the bytes written, with every check and count of
    /// [`Decoder::inflate_more`]; `None` when the window path must serve the read.
    fn inflate_into(&mut self, buf: &mut [u8]) -> Result<Option<usize>, StreamError> {
        #[cfg(not(target_os = "none"))]
        if let Some(e) = self.held {
            return Err(e);
        }
        let mut idle_rounds = 0u32;
        loop {
            match self.state {
                State::Inflating => {}
                State::BetweenMembers => {
                    self.next_member_or_end()?;
                    continue;
                }
                State::Raw { .. } | State::End => return Ok(None),
            }
            let offset = self.offset();
            let input = self.src.fill_buf().map_err(|e| source_error(offset, &e))?;
            let more_input = !input.is_empty();
            let Some((status, n_in, n_out)) = self.inflater.inflate_into(input, buf, more_input) else {
                return Ok(None);
            };
            self.advance(n_in);
            if n_out > buf.len() {
                return Err(self.error(StreamKind::Gzip(GzipError::Inflate { status: FAILED })));
            }
            let handed = self.count_out(n_out);
            if let Some(bytes) = buf.get(..handed) {
                self.crc.update(bytes);
            }
            match self.settle(status, n_in, n_out, handed, more_input, &mut idle_rounds) {
                Ok(true) => return Ok(Some(handed)),
                Ok(false) => {}
                Err(e) => return self.hold(handed, e).map(Some),
            }
        }
    }
}

/// [`GzipError::Inflate`]'s status when an inflater keeps making no progress with input left
/// (miniz_oxide's `NeedsMoreInput`).
const STALLED: i8 = 1;

/// [`GzipError::Inflate`]'s status when an inflater reports output past the window: miniz_oxide's
/// `Failed`, as for data another inflater refuses.
const FAILED: i8 = -1;

impl<S: BufRead, I: Inflate> Decoder<S, I> {
    /// [`BufRead::fill_buf`] once the window is all read, or for a raw tar.
    #[inline(never)]
    fn fill_slow(&mut self) -> Result<&[u8], StreamError> {
        if let State::Raw { pushback } = self.state {
            if pushback {
                return Ok(self.window.get(..1).unwrap_or(&[]));
            }
            let offset = self.offset();
            return self.src.fill_buf().map_err(|e| source_error(offset, &e));
        }
        if self.read_pos >= self.write_pos {
            #[cfg(not(target_os = "none"))]
            if let Some(e) = self.held {
                return Err(e);
            }
            self.inflate_more()?;
        }
        Ok(self.window.get(self.read_pos..self.write_pos).unwrap_or(&[]))
    }
}

impl<S: BufRead, I: Inflate> ErrorType for Decoder<S, I> {
    type Error = StreamError;
}

impl<S: BufRead, I: Inflate> BufRead for Decoder<S, I> {
    /// Inline when the window holds bytes not read yet (each token of a manifest asks for
    /// them again); inflating more, and the raw tar, are out of line.
    #[inline]
    fn fill_buf(&mut self) -> Result<&[u8], StreamError> {
        if self.read_pos < self.write_pos && !matches!(self.state, State::Raw { .. }) {
            return Ok(self.window.get(self.read_pos..self.write_pos).unwrap_or(&[]));
        }
        self.fill_slow()
    }

    fn consume(&mut self, amt: usize) {
        if let State::Raw { pushback } = self.state {
            let mut amt = amt;
            if let (true, Some(rest)) = (pushback, amt.checked_sub(1)) {
                // The sniffed 0x1f, handed back from the window, is consumed first.
                self.state = State::Raw { pushback: false };
                self.total_out = self.total_out.saturating_add(1);
                amt = rest;
            }
            self.advance(amt);
            self.total_out = self.total_out.saturating_add(amt as u64);
            return;
        }
        self.read_pos = self.read_pos.saturating_add(amt).min(self.write_pos);
    }
}

impl<S: BufRead, I: Inflate> Read for Decoder<S, I> {
    /// Straight into `buf` when the window is all read and the inflater keeps its own history
    /// ([`Inflate::inflate_into`]); else through the window.
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, StreamError> {
        if I::WRITES_ANY_BUFFER && self.read_pos >= self.write_pos && !buf.is_empty() {
            if let Some(n) = self.inflate_into(buf)? {
                return Ok(n);
            }
        }
        crate::read_buffered(self, buf)
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
    use std::vec;
    use std::vec::Vec;

    use flate2::write::GzEncoder;
    use flate2::{Compression as Level, GzBuilder};
    use std::io::Write as _;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Level::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn read_all<S: BufRead>(d: &mut Decoder<S>) -> Result<Vec<u8>, StreamError> {
        let mut out = Vec::new();
        loop {
            let buf = d.fill_buf()?;
            if buf.is_empty() {
                return Ok(out);
            }
            let n = buf.len().min(1000);
            out.extend_from_slice(&buf[..n]);
            d.consume(n);
        }
    }

    fn data(len: usize) -> Vec<u8> {
        let mut x = 0x1234_5678u32;
        (0..len)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                if i % 3 == 0 {
                    (x & 0xff) as u8
                } else {
                    b"neff tar "[i % 9]
                }
            })
            .collect()
    }

    /// A `BufRead` that hands out at most `chunk` bytes at a time.
    type Chunked<'a> = crate::testutil::Chunked<'a, core::convert::Infallible>;

    #[test]
    fn inflates_and_verifies_in_any_chunking() {
        let plain = data(200_000);
        let gz = gzip(&plain);
        for chunk in [1, 7, 512, 4096, usize::MAX] {
            let mut d = Decoder::sniff(Chunked::new(&gz, chunk), 1024, DEFAULT_MAX_INFLATED).unwrap();
            assert_eq!(d.compression(), Compression::Gzip);
            assert_eq!(read_all(&mut d).unwrap(), plain, "chunk {chunk}");
            assert_eq!(d.total_out(), plain.len() as u64);
            assert_eq!(d.compressed_len(), gz.len() as u64);
            assert_eq!(d.drain_trailing().unwrap(), Trailing::default());
        }
    }

    #[test]
    fn header_fields_are_skipped_and_fhcrc_checked() {
        let plain = data(5000);
        let mut e = GzBuilder::new()
            .filename("file.tar")
            .comment("a comment")
            .extra(vec![1, 2, 3, 4, 5])
            .mtime(1234)
            .write(Vec::new(), Level::best());
        e.write_all(&plain).unwrap();
        let gz = e.finish().unwrap();
        let mut d = Decoder::sniff(&gz[..], 0, DEFAULT_MAX_INFLATED).unwrap();
        assert_eq!(read_all(&mut d).unwrap(), plain);

        // Hand-build an FHCRC header (flate2 does not write one): FLG = FHCRC | FNAME.
        let deflate = &gz[gz.len() - 8 - deflate_len(&gz)..];
        let mut hdr = vec![0x1f, 0x8b, 8, 0x0A, 0, 0, 0, 0, 0, 3, b'x', 0];
        let crc = crc32fast::hash(&hdr) as u16;
        hdr.extend_from_slice(&crc.to_le_bytes());
        let mut good = hdr.clone();
        good.extend_from_slice(deflate);
        let mut d = Decoder::sniff(&good[..], 0, DEFAULT_MAX_INFLATED).unwrap();
        assert_eq!(read_all(&mut d).unwrap(), plain);
        let mut bad = good.clone();
        bad[12] ^= 0xff;
        let e = Decoder::sniff(&bad[..], 0, DEFAULT_MAX_INFLATED).unwrap_err();
        assert_eq!(e.kind, StreamKind::Gzip(GzipError::HeaderCrc { stored: crc ^ 0xff, computed: crc }), "{e:?}");
        assert_eq!(e.stage, Stage::Gzip);
    }

    /// Length of the deflate data of a flate2 member with filename/comment/extra headers.
    fn deflate_len(gz: &[u8]) -> usize {
        let mut pos = 10;
        let flags = gz[3];
        if flags & flag::FEXTRA != 0 {
            pos += 2 + u16::from_le_bytes([gz[10], gz[11]]) as usize;
        }
        for f in [flag::FNAME, flag::FCOMMENT] {
            if flags & f != 0 {
                pos += gz[pos..].iter().position(|&b| b == 0).unwrap() + 1;
            }
        }
        gz.len() - 8 - pos
    }

    #[test]
    fn header_errors() {
        let gz = gzip(b"hello");
        let mut m = gz.clone();
        m[2] = 7;
        let e = Decoder::sniff(&m[..], 1024, DEFAULT_MAX_INFLATED).unwrap_err();
        assert_eq!(e.kind, StreamKind::Gzip(GzipError::UnsupportedMethod { method: 7 }));
        assert_eq!(e.offset, 1027);
        let mut m = gz.clone();
        m[3] = 0x20;
        let e = Decoder::sniff(&m[..], 1024, DEFAULT_MAX_INFLATED).unwrap_err();
        assert_eq!(e.kind, StreamKind::Gzip(GzipError::ReservedFlags { flags: 0x20 }));
        let e = Decoder::sniff(&gz[..6], 1024, DEFAULT_MAX_INFLATED).unwrap_err();
        assert_eq!(e.kind, StreamKind::Truncated);
    }

    #[test]
    fn crc_and_isize_are_verified() {
        let plain = data(70_000);
        let gz = gzip(&plain);
        let n = gz.len();
        let crc = crc32fast::hash(&plain);
        let size = plain.len() as u32;
        // Bit 0 of the CRC's first byte, bit 0 of ISIZE's third byte; each is reported after
        // its 4 bytes are read.
        let cases = [
            (n - 8, GzipError::Crc { stored: crc ^ 1, computed: crc }, n - 4),
            (n - 2, GzipError::Isize { stored: size ^ (1 << 16), computed: size }, n),
        ];
        for (at, want, offset) in cases {
            let mut m = gz.clone();
            m[at] ^= 1;
            let mut d = Decoder::sniff(&m[..], 0, DEFAULT_MAX_INFLATED).unwrap();
            let e = read_all(&mut d).unwrap_err();
            assert_eq!((e.stage, e.kind, e.offset), (Stage::Gzip, StreamKind::Gzip(want), offset as u64), "{e:?}");
        }
    }

    #[test]
    fn truncation_is_an_error() {
        let plain = data(50_000);
        let gz = gzip(&plain);
        for cut in [10, 100, gz.len() / 2, gz.len() - 9, gz.len() - 1] {
            let mut d = match Decoder::sniff(&gz[..cut], 0, DEFAULT_MAX_INFLATED) {
                Ok(d) => d,
                Err(e) => {
                    assert_eq!(e.kind, StreamKind::Truncated);
                    continue;
                }
            };
            let e = read_all(&mut d).unwrap_err();
            assert_eq!(e.kind, StreamKind::Truncated, "cut {cut}");
        }
    }

    #[test]
    fn corrupt_deflate_is_an_error() {
        let plain = data(50_000);
        let mut gz = gzip(&plain);
        gz[12] = 0xff; // a bad block type / code table right after the header
        gz[13] = 0xff;
        let e = Decoder::sniff(&gz[..], 1024, DEFAULT_MAX_INFLATED).and_then(|mut d| read_all(&mut d)).unwrap_err();
        assert_eq!(e.kind, StreamKind::Gzip(GzipError::Inflate { status: TINFLStatus::Failed as i8 }));
        assert_eq!((e.stage, e.offset_base), (Stage::Gzip, crate::error::OffsetBase::File));
        // The deflate stream opens at byte 10 with a dynamic block (RFC 1951 §3.2.7): 3 bits of
        // BFINAL and BTYPE, 5 of HLIT, 5 of HDIST, 4 of HCLEN, then HCLEN + 4 code lengths of 3
        // bits for the code-length code. Bytes 12 and 13 make those lengths 7s, a code that
        // cannot be built: the error comes once the last of them is read, after the byte that
        // holds it. (Whichever flate2 backend wrote the stream: the workspace's tests build it
        // with zlib-rs, this crate's alone with miniz_oxide.)
        assert_eq!((gz[10] >> 1) & 3, 2, "a dynamic block");
        let bits = u32::from_le_bytes([gz[10], gz[11], gz[12], 0]);
        let hclen = (bits >> 13) & 0xf;
        let header_bits = 17 + 3 * (hclen + 4);
        assert_eq!(e.offset, 1024 + 10 + u64::from(header_bits.div_ceil(8)), "{hclen}");
    }

    #[test]
    fn zero_padding_is_silent_and_garbage_is_counted() {
        let plain = data(3000);
        let mut gz = gzip(&plain);
        let member = gz.len();
        gz.extend_from_slice(&[0; 100]);
        let mut d = Decoder::sniff(&gz[..], 1024, DEFAULT_MAX_INFLATED).unwrap();
        assert_eq!(read_all(&mut d).unwrap(), plain);
        let t = d.drain_trailing().unwrap();
        assert_eq!(t, Trailing { bytes: 100, nonzero_bytes: 0, first_nonzero_offset: None });
        assert_eq!(d.compressed_len(), member as u64);

        gz[member + 10] = 5;
        gz[member + 20] = 0x1f;
        let mut d = Decoder::sniff(&gz[..], 1024, DEFAULT_MAX_INFLATED).unwrap();
        read_all(&mut d).unwrap();
        let t = d.drain_trailing().unwrap();
        assert_eq!(t.nonzero_bytes, 2);
        assert_eq!(t.first_nonzero_offset, Some(1024 + member as u64 + 10));

        // Garbage starting with a lone 0x1f right after the trailer.
        let mut g2 = gzip(&plain);
        g2.extend_from_slice(&[0x1f, 0, 0]);
        let mut d = Decoder::sniff(&g2[..], 0, DEFAULT_MAX_INFLATED).unwrap();
        assert_eq!(read_all(&mut d).unwrap(), plain);
        let t = d.drain_trailing().unwrap();
        assert_eq!((t.bytes, t.nonzero_bytes), (3, 1));
    }

    #[test]
    fn a_second_member_continues_the_stream() {
        let (a, b) = (data(40_000), data(1000));
        let mut gz = gzip(&a);
        gz.extend_from_slice(&gzip(&b));
        let mut d = Decoder::sniff(Chunked::new(&gz, 333), 0, DEFAULT_MAX_INFLATED).unwrap();
        let out = read_all(&mut d).unwrap();
        assert_eq!(out.len(), a.len() + b.len());
        assert_eq!(&out[..a.len()], &a[..]);
        assert_eq!(d.members(), 2);
    }

    #[test]
    fn raw_mode_passes_through_even_with_a_leading_1f() {
        let plain = b"\x1f\x00rest of a tar".to_vec();
        let mut d = Decoder::sniff(Chunked::new(&plain, 1), 0, DEFAULT_MAX_INFLATED).unwrap();
        assert_eq!(d.compression(), Compression::None);
        assert_eq!(read_all(&mut d).unwrap(), plain);
        assert_eq!(d.total_out(), plain.len() as u64);
        let plain = b"ustar-ish".to_vec();
        let mut d = Decoder::sniff(&plain[..], 0, DEFAULT_MAX_INFLATED).unwrap();
        assert_eq!(read_all(&mut d).unwrap(), plain);
    }

    #[test]
    fn the_inflated_size_cap_names_its_limit() {
        let plain = std::vec![0u8; 1 << 20];
        let gz = gzip(&plain);
        let mut d = Decoder::sniff(&gz[..], 0, 100_000).unwrap();
        let e = read_all(&mut d).unwrap_err();
        assert_eq!(e.kind, StreamKind::Capacity(CapacityError { limit: "max_inflated", capacity: 100_000 }));
        // Exactly at the cap is fine.
        let mut d = Decoder::sniff(&gz[..], 0, 1 << 20).unwrap();
        assert_eq!(read_all(&mut d).unwrap().len(), 1 << 20);
    }

    #[test]
    fn the_member_count_is_capped() {
        let first = gzip(b"a");
        let mut gz = first.clone();
        gz.extend_from_slice(&gzip(b"b"));
        let mut d = Decoder::sniff(&gz[..], 1024, DEFAULT_MAX_INFLATED).unwrap();
        assert_eq!(d.members(), 1);
        // As if u32::MAX - 1 empty members had come before this one: the next is one too many.
        d.members = u32::MAX;
        let e = read_all(&mut d).unwrap_err();
        let cap = CapacityError { limit: "gzip members", capacity: u64::from(u32::MAX) };
        assert_eq!(e.kind, StreamKind::Capacity(cap));
        assert_eq!(e.stage, Stage::Gzip);
        assert_eq!(d.members(), u32::MAX);
        // At the end of the second member's 10-byte header.
        assert_eq!(e.offset, 1024 + first.len() as u64 + 10);
    }

    /// An inflater that claims `n_out` bytes of output whatever the room.
    struct Boastful {
        n_out: usize,
    }

    impl Inflate for Boastful {
        fn reset(&mut self) {}

        fn inflate(
            &mut self,
            _input: &[u8],
            _window: &mut [u8; WINDOW_SIZE],
            _out_pos: usize,
            _more_input: bool,
        ) -> (InflateStatus, usize, usize) {
            (InflateStatus::Progress, 0, self.n_out)
        }
    }

    #[test]
    fn output_claimed_past_the_window_is_refused() {
        let gz = gzip(b"hello");
        for n_out in [WINDOW_SIZE + 1, usize::MAX] {
            let mut d = Decoder::unsniffed_with(&gz[..], 0, u64::MAX, Boastful { n_out });
            d.sniff_in_place().unwrap();
            let e = d.fill_buf().unwrap_err();
            assert_eq!(e.kind, StreamKind::Gzip(GzipError::Inflate { status: -1 }), "n_out {n_out}");
        }
        // A whole window is fine.
        let mut d = Decoder::unsniffed_with(&gz[..], 0, u64::MAX, Boastful { n_out: WINDOW_SIZE });
        d.sniff_in_place().unwrap();
        assert_eq!(d.fill_buf().unwrap().len(), WINDOW_SIZE);
    }

    /// flate2's raw inflater (its own 32 KiB history, as the host's zlib-rs), which writes a
    /// reader's buffer directly; it claims `boast` bytes more than it wrote, if any.
    struct OwnHistory {
        state: flate2::Decompress,
        boast: usize,
    }

    impl OwnHistory {
        fn new() -> Self {
            Self { state: flate2::Decompress::new(false), boast: 0 }
        }

        fn step(&mut self, input: &[u8], out: &mut [u8], more_input: bool) -> (InflateStatus, usize, usize) {
            let (i, o) = (self.state.total_in(), self.state.total_out());
            let status = self.state.decompress(input, out, flate2::FlushDecompress::None);
            let (n_in, n_out) = ((self.state.total_in() - i) as usize, (self.state.total_out() - o) as usize);
            let status = match status {
                Ok(flate2::Status::StreamEnd) => InflateStatus::Done,
                Ok(flate2::Status::BufError) if !more_input => InflateStatus::Truncated,
                Ok(_) => InflateStatus::Progress,
                Err(_) => InflateStatus::Invalid(-1),
            };
            (status, n_in, n_out + self.boast)
        }
    }

    impl Inflate for OwnHistory {
        const WRITES_ANY_BUFFER: bool = true;

        fn reset(&mut self) {
            self.state.reset(false);
        }

        fn inflate(
            &mut self,
            input: &[u8],
            window: &mut [u8; WINDOW_SIZE],
            out_pos: usize,
            more_input: bool,
        ) -> (InflateStatus, usize, usize) {
            self.step(input, &mut window[out_pos..], more_input)
        }

        fn inflate_into(
            &mut self,
            input: &[u8],
            out: &mut [u8],
            more_input: bool,
        ) -> Option<(InflateStatus, usize, usize)> {
            Some(self.step(input, out, more_input))
        }
    }

    /// Everything `d` gives, by `read` into buffers of `size` bytes, every third call through
    /// the window instead (`fill_buf`, then `consume` of part of it).
    fn read_mixed<S: BufRead, I: Inflate>(d: &mut Decoder<S, I>, size: usize) -> Result<Vec<u8>, StreamError> {
        let (mut out, mut buf, mut call) = (Vec::new(), vec![0u8; size], 0);
        loop {
            call += 1;
            if call % 3 == 0 {
                let window = d.fill_buf()?;
                let n = window.len().min(size.div_ceil(2));
                out.extend_from_slice(&window[..n]);
                d.consume(n);
                if n == 0 {
                    return Ok(out);
                }
                continue;
            }
            let n = d.read(&mut buf)?;
            if n == 0 {
                return Ok(out);
            }
            out.extend_from_slice(&buf[..n]);
        }
    }

    #[test]
    fn read_inflates_into_the_buffer_as_the_window_path_would() {
        let (a, b) = (data(300_000), data(5000));
        let mut gz = gzip(&a);
        let first = gz.len();
        gz.extend_from_slice(&gzip(&b));
        gz.extend_from_slice(&[0; 40]);
        let whole = [&a[..], &b[..]].concat();
        for chunk in [7, 4096, usize::MAX] {
            for size in [1, 100, WINDOW_SIZE + 1, 200_000] {
                let mut d = Decoder::unsniffed_with(Chunked::new(&gz, chunk), 1024, u64::MAX, OwnHistory::new());
                d.sniff_in_place().unwrap();
                assert_eq!(read_mixed(&mut d, size).unwrap(), whole, "chunk {chunk}, buffer {size}");
                assert_eq!((d.total_out(), d.members()), (whole.len() as u64, 2));
                assert_eq!(d.drain_trailing().unwrap(), Trailing { bytes: 40, ..Trailing::default() });
            }
        }
        // The trailer's checks, the cap and a cut stream, as through the window.
        let n = first;
        let crc = crc32fast::hash(&a);
        let mut m = gz.clone();
        m[n - 8] ^= 1;
        let mut d = Decoder::unsniffed_with(&m[..], 0, u64::MAX, OwnHistory::new());
        d.sniff_in_place().unwrap();
        let e = read_mixed(&mut d, 65_536).unwrap_err();
        let want = StreamKind::Gzip(GzipError::Crc { stored: crc ^ 1, computed: crc });
        assert_eq!((e.kind, e.offset), (want, (n - 4) as u64));
        let mut d = Decoder::unsniffed_with(&gz[..], 0, 250_000, OwnHistory::new());
        d.sniff_in_place().unwrap();
        let e = read_mixed(&mut d, 65_536).unwrap_err();
        assert_eq!(e.kind, StreamKind::Capacity(CapacityError { limit: "max_inflated", capacity: 250_000 }));
        let mut d = Decoder::unsniffed_with(&gz[..n / 2], 0, u64::MAX, OwnHistory::new());
        d.sniff_in_place().unwrap();
        assert_eq!(read_mixed(&mut d, 65_536).unwrap_err().kind, StreamKind::Truncated);
    }

    /// What `d` hands out by `read` into `size`-byte buffers before its error, and the error.
    fn read_until_error<S: BufRead, I: Inflate>(d: &mut Decoder<S, I>, size: usize) -> (Vec<u8>, StreamError) {
        let (mut out, mut buf) = (Vec::new(), vec![0u8; size]);
        loop {
            match d.read(&mut buf) {
                Ok(0) => panic!("no error after {} bytes", out.len()),
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(e) => return (out, e),
            }
        }
    }

    #[test]
    fn every_byte_before_an_error_is_handed_out_whatever_one_call_inflates() {
        let plain = data(300_000);
        let gz = gzip(&plain);
        let mut bad_crc = gz.clone();
        let at = gz.len() - 8;
        bad_crc[at] ^= 1;
        for size in [1, 4096, WINDOW_SIZE, 1 << 20] {
            // A wrong trailer: every byte first, then its error, at the trailer.
            let mut d = Decoder::unsniffed_with(&bad_crc[..], 0, u64::MAX, OwnHistory::new());
            d.sniff_in_place().unwrap();
            let (out, e) = read_until_error(&mut d, size);
            assert_eq!(out, plain, "buffer {size}");
            assert!(matches!(e.kind, StreamKind::Gzip(GzipError::Crc { .. })), "{e:?}");
            assert_eq!(e.offset, (at + 4) as u64);
            // The cap: exactly `max_inflated` bytes, then its error, and again on asking.
            let mut d = Decoder::unsniffed_with(&gz[..], 0, 123_457, OwnHistory::new());
            d.sniff_in_place().unwrap();
            let (out, e) = read_until_error(&mut d, size);
            assert_eq!(out, plain[..123_457], "buffer {size}");
            assert_eq!(e.kind, StreamKind::Capacity(CapacityError { limit: "max_inflated", capacity: 123_457 }));
            assert_eq!(d.read(&mut [0u8; 16]).unwrap_err(), e);
            assert_eq!(d.fill_buf().unwrap_err(), e);
        }
        // Through the window (miniz_oxide), the same.
        let mut d = Decoder::sniff(&bad_crc[..], 0, u64::MAX).unwrap();
        let (out, e) = read_until_error(&mut d, 1000);
        assert_eq!((out, e.offset), (plain.clone(), (at + 4) as u64));
        let mut d = Decoder::sniff(&gz[..], 0, 123_457).unwrap();
        let (out, e) = read_until_error(&mut d, 1000);
        assert_eq!(out, plain[..123_457]);
        assert_eq!(e.kind, StreamKind::Capacity(CapacityError { limit: "max_inflated", capacity: 123_457 }));
    }

    #[test]
    fn output_claimed_past_the_reader_s_buffer_is_refused() {
        let gz = gzip(&data(10_000));
        let mut d = Decoder::unsniffed_with(&gz[..], 0, u64::MAX, OwnHistory { boast: 1, ..OwnHistory::new() });
        d.sniff_in_place().unwrap();
        let e = d.read(&mut [0u8; 4096]).unwrap_err();
        assert_eq!(e.kind, StreamKind::Gzip(GzipError::Inflate { status: -1 }));
    }

    #[test]
    fn read_copies_out() {
        let plain = data(100);
        let gz = gzip(&plain);
        let mut d = Decoder::sniff(&gz[..], 0, DEFAULT_MAX_INFLATED).unwrap();
        let mut buf = [0u8; 64];
        let mut out = Vec::new();
        loop {
            let n = d.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        assert_eq!(out, plain);
    }
}
