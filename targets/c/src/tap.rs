//! The tar stream as the loader reads it, watched for one member the loader skips: `info.json`
//! (producer metadata, spec §10.1), whose `tool_version` is `neff info`'s `compiler_version`.
//!
//! `Tap` sits between the core's `Container` (header, gzip) and the archive's tar walk,
//! and sees each byte the walk consumes, in order. It follows the 512-byte blocks with a small
//! push-driven walker (`Walker`): header blocks, PAX `x` `path`/`size` records and GNU `L`
//! long names (the ways a member gets a name the ustar fields cannot hold), one leading `./`
//! stripped as the core does. The body of a regular member named `info.json` at the root is
//! copied to the top of the caller's work buffer; a later copy replaces an earlier one, as the
//! host command's tap keeps the last. What it cannot follow (an old GNU sparse header, a PAX
//! header over `PAX_ROOM` bytes, a size it cannot parse) ends the watch: the loader's own
//! walk, which decides what the NEFF holds, is untouched either way.

use core::cell::RefCell;

use embedded_io::{BufRead, ErrorType, Read};
use neff::archive::{Container, Finish, InflatedSource};
use neff::error::StreamError;
use neff::tar::{field, parse_number};
use neff::{Error, WarningSink};

use crate::source::Reader;

/// The member whose body is kept.
pub(crate) const INFO_JSON: &[u8] = b"info.json";

/// Bytes of a PAX extended header the walker reads (real ones are a few records).
pub(crate) const PAX_ROOM: usize = 512;

/// Bytes of a member name the walker keeps: enough to compare with `./info.json`.
const NAME_ROOM: usize = 16;

/// A container error, carried through `embedded_io` to the archive, which passes it on
/// unchanged (it is this error's `source`, as the core's `InflatedSource` asks).
#[derive(Debug)]
pub(crate) struct Relayed(StreamError);

impl core::fmt::Display for Relayed {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
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

/// Where the tap keeps `info.json`'s body: `neff_info`'s work buffer (`crate::info::Work`),
/// which the tap knows only by this, so that `info` uses the tap and not the other way round.
pub(crate) trait Keep {
    /// `info.json` starts: `size` bytes, replacing a copy kept before.
    fn begin_capture(&mut self, size: u64);
    /// The next bytes of `info.json`.
    fn capture(&mut self, bytes: &[u8]);
    /// `info.json` ended.
    fn end_capture(&mut self);
}

/// The container's tar stream, watched.
pub(crate) struct Tap<'w, 'b, 'r> {
    inner: Container<Reader<'r>>,
    walker: Walker,
    work: &'w RefCell<dyn Keep + 'b>,
}

impl<'w, 'b, 'r> Tap<'w, 'b, 'r> {
    /// Watches `inner`'s stream, keeping `info.json` in `work`.
    pub(crate) fn new(inner: Container<Reader<'r>>, work: &'w RefCell<dyn Keep + 'b>) -> Self {
        Self { inner, walker: Walker::new(), work }
    }
}

impl ErrorType for Tap<'_, '_, '_> {
    type Error = Relayed;
}

impl BufRead for Tap<'_, '_, '_> {
    fn fill_buf(&mut self) -> Result<&[u8], Relayed> {
        self.inner.fill_buf().map_err(Relayed)
    }

    fn consume(&mut self, amt: usize) {
        // The bytes being consumed are the front of what `fill_buf` returned: asking again
        // returns the same buffer without reading.
        if let Ok(bytes) = self.inner.fill_buf() {
            if let Ok(mut work) = self.work.try_borrow_mut() {
                self.walker.feed(bytes.get(..amt).unwrap_or(bytes), &mut *work);
            }
        }
        self.inner.consume(amt);
    }
}

impl Read for Tap<'_, '_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Relayed> {
        let available = self.fill_buf()?;
        let n = available.len().min(buf.len());
        if let (Some(dst), Some(src)) = (buf.get_mut(..n), available.get(..n)) {
            dst.copy_from_slice(src);
        }
        self.consume(n);
        Ok(n)
    }
}

impl InflatedSource for Tap<'_, '_, '_> {
    fn finish(&mut self, sink: &mut dyn WarningSink) -> Result<Finish, Error> {
        self.inner.finish(sink)
    }
}

/// What the bytes of the current body are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Body {
    /// Not looked at.
    Skip,
    /// A GNU `L` long name for the next member.
    LongName,
    /// PAX `x` records for the next member.
    Pax,
    /// `info.json`: copied to the work buffer.
    Keep,
}

/// Where the walker is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Filling a 512-byte header block.
    Header,
    /// In a body of `left` bytes, then `pad` bytes to the block boundary.
    Body { left: u64, pad: u64, what: Body },
    /// At the end of the archive, or lost: nothing more is looked at.
    Done,
}

/// A name as far as the walker keeps it.
#[derive(Debug, Clone, Copy)]
struct Name {
    bytes: [u8; NAME_ROOM],
    len: usize,
    /// Longer than `NAME_ROOM`: certainly not `info.json`.
    long: bool,
}

impl Name {
    const EMPTY: Self = Self { bytes: [0; NAME_ROOM], len: 0, long: false };

    fn push(&mut self, part: &[u8]) {
        let end = self.len.saturating_add(part.len());
        match self.bytes.get_mut(self.len..end) {
            Some(dst) if !self.long => {
                dst.copy_from_slice(part);
                self.len = end;
            }
            _ => self.long = true,
        }
    }

    /// Whether it is `info.json`, one leading `./` stripped.
    fn is_info_json(&self) -> bool {
        let name = self.bytes.get(..self.len).unwrap_or(&[]);
        !self.long && name.strip_prefix(b"./").unwrap_or(name) == INFO_JSON
    }
}

/// A tar walker fed bytes in stream order (see the module docs).
pub(crate) struct Walker {
    state: State,
    block: [u8; 512],
    have: usize,
    /// A name from a PAX `path` or GNU `L` for the next member; `pax` says which (PAX wins).
    pending: Option<(Name, bool)>,
    /// A size from a PAX `size` record for the next member.
    pending_size: Option<u64>,
    /// The body of the current `L` or `x` header, as far as it fits.
    extended: [u8; PAX_ROOM],
    extended_len: usize,
}

impl Walker {
    pub(crate) const fn new() -> Self {
        Self {
            state: State::Header,
            block: [0; 512],
            have: 0,
            pending: None,
            pending_size: None,
            extended: [0; PAX_ROOM],
            extended_len: 0,
        }
    }

    /// Follows `bytes`, the next bytes of the tar stream.
    pub(crate) fn feed(&mut self, mut bytes: &[u8], work: &mut dyn Keep) {
        loop {
            // A body done (an empty one too, at once): what it said takes effect.
            if let State::Body { left: 0, pad: 0, what } = self.state {
                self.state = self.body_end(what, work);
                continue;
            }
            if bytes.is_empty() {
                return;
            }
            match self.state {
                State::Done => return,
                State::Header => {
                    let take = (512 - self.have).min(bytes.len());
                    let (head, rest) = bytes.split_at(take);
                    if let Some(dst) = self.block.get_mut(self.have..self.have.saturating_add(take)) {
                        dst.copy_from_slice(head);
                    }
                    self.have = self.have.saturating_add(take);
                    bytes = rest;
                    if self.have == 512 {
                        self.have = 0;
                        self.state = self.header(work);
                    }
                }
                State::Body { left, pad, what } => {
                    if left == 0 {
                        let take = usize::try_from(pad).unwrap_or(usize::MAX).min(bytes.len());
                        bytes = bytes.get(take..).unwrap_or(&[]);
                        self.state = State::Body { left, pad: pad.saturating_sub(take as u64), what };
                        continue;
                    }
                    let take = usize::try_from(left).unwrap_or(usize::MAX).min(bytes.len());
                    let (body, rest) = bytes.split_at(take);
                    match what {
                        Body::Keep => work.capture(body),
                        Body::LongName | Body::Pax => {
                            let end = self.extended_len.saturating_add(body.len());
                            if let Some(dst) = self.extended.get_mut(self.extended_len..end) {
                                dst.copy_from_slice(body);
                                self.extended_len = end;
                            } else {
                                // Too long to read: which name or size follows is not known.
                                self.state = State::Done;
                                return;
                            }
                        }
                        Body::Skip => {}
                    }
                    bytes = rest;
                    self.state = State::Body { left: left.saturating_sub(take as u64), pad, what };
                }
            }
        }
    }

    /// A whole header block: what follows it.
    fn header(&mut self, work: &mut dyn Keep) -> State {
        let block = &self.block;
        if block.iter().all(|&b| b == 0) {
            return State::Done;
        }
        let Ok(size) = parse_number(block.get(field::SIZE).unwrap_or(&[]), "size") else { return State::Done };
        let typeflag = block.get(field::TYPEFLAG).copied().unwrap_or(0);
        let what = match typeflag {
            b'x' | b'X' => Body::Pax,
            b'L' => Body::LongName,
            // Global PAX records, GNU long link names: nothing the member's name depends on.
            b'g' | b'K' => Body::Skip,
            // Old GNU sparse: extension blocks follow, which this walker does not count.
            b'S' => return State::Done,
            _ => {
                let size = self.pending_size.take().unwrap_or(size);
                let name = match self.pending.take() {
                    Some((name, _)) => name,
                    None => {
                        let mut name = Name::EMPTY;
                        let until_nul = |b: &'_ [u8]| -> usize { b.iter().position(|&c| c == 0).unwrap_or(b.len()) };
                        let own = block.get(field::NAME).unwrap_or(&[]);
                        let own = own.get(..until_nul(own)).unwrap_or(own);
                        let prefix = block.get(field::PREFIX).unwrap_or(&[]);
                        let prefix = prefix.get(..until_nul(prefix)).unwrap_or(prefix);
                        if block.get(field::MAGIC) == Some(b"ustar\0") && !prefix.is_empty() {
                            name.push(prefix);
                            name.push(b"/");
                        }
                        name.push(own);
                        name
                    }
                };
                let regular = matches!(typeflag, b'0' | 0 | b'7');
                let keep = regular && name.is_info_json();
                if keep {
                    work.begin_capture(size);
                }
                return State::Body {
                    left: size,
                    pad: padding(size),
                    what: if keep { Body::Keep } else { Body::Skip },
                };
            }
        };
        self.extended_len = 0;
        State::Body { left: size, pad: padding(size), what }
    }

    /// After a body and its padding.
    fn body_end(&mut self, what: Body, work: &mut dyn Keep) -> State {
        let extended = self.extended.get(..self.extended_len).unwrap_or(&[]);
        match what {
            Body::Keep => work.end_capture(),
            Body::LongName => {
                // The name up to its NUL; a PAX path for the same member wins over it.
                let end = extended.iter().position(|&c| c == 0).unwrap_or(extended.len());
                if !matches!(self.pending, Some((_, true))) {
                    let mut name = Name::EMPTY;
                    name.push(extended.get(..end).unwrap_or(extended));
                    self.pending = Some((name, false));
                }
            }
            Body::Pax => {
                // Records: `LEN key=value\n`, LEN counting the whole record.
                let mut rest = extended;
                while !rest.is_empty() {
                    let Some(space) = rest.iter().position(|&c| c == b' ') else { return State::Done };
                    let Some(len) = decimal(rest.get(..space).unwrap_or(&[])) else { return State::Done };
                    let Some(record) = rest.get(space.saturating_add(1)..len) else { return State::Done };
                    rest = rest.get(len..).unwrap_or(&[]);
                    let record = record.strip_suffix(b"\n").unwrap_or(record);
                    let Some(eq) = record.iter().position(|&c| c == b'=') else { return State::Done };
                    let (key, value) =
                        (record.get(..eq).unwrap_or(&[]), record.get(eq.saturating_add(1)..).unwrap_or(&[]));
                    match key {
                        b"path" => {
                            let mut name = Name::EMPTY;
                            name.push(value);
                            self.pending = Some((name, true));
                        }
                        b"size" => match decimal(value) {
                            Some(size) => self.pending_size = Some(size as u64),
                            None => return State::Done,
                        },
                        _ => {}
                    }
                }
            }
            Body::Skip => {}
        }
        State::Header
    }
}

/// Bytes of zero padding after a body of `size` bytes, to the next 512-byte boundary.
fn padding(size: u64) -> u64 {
    (512 - size % 512) % 512
}

/// A decimal number of ASCII digits (none: `None`).
fn decimal(digits: &[u8]) -> Option<usize> {
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0usize, |n, &d| {
        d.is_ascii_digit().then_some(())?;
        n.checked_mul(10)?.checked_add(usize::from(d - b'0'))
    })
}
