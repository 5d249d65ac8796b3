//! A streaming parser for NumPy `.npy` headers (format versions 1.0, 2.0 and 3.0).
//!
//! A NEFF carries constants (`var.type == "file"`) as `.npy` members; the runtime writes only
//! the array data into the variable (`docs/format.md` §9.2). The wire format:
//!
//! ```text
//! offset 0   6 bytes  magic "\x93NUMPY" (the runtime checks the u16 0x4e93 at offset 0)
//! offset 6   1 byte   major version (1, 2 or 3)
//! offset 7   1 byte   minor version (0)
//! offset 8   u16 LE   header length (version 1) | u32 LE header length (versions 2 and 3)
//! offset 10|12        the header: a Python dict literal, padded with spaces, ending in '\n'
//!                     {'descr': '<f2', 'fortran_order': False, 'shape': (128, 128, 1, 1), }
//! data_offset         the array data: product(shape) * itemsize bytes
//! ```
//!
//! The header is fed in chunks as the member streams past ([`NpyParser::feed`]); it may
//! straddle chunks. The dict is buffered in `HEADER_CAP` bytes (a header longer than that is
//! refused with a [`CapacityError`] naming `HEADER_CAP`, never truncated) and then parsed
//! strictly: exactly the keys `descr`, `fortran_order` and `shape`, as numpy requires, with
//! `descr` a simple dtype string (`b1`, `i1`..`i8`, `u1`..`u8`, `f2`, `f4`, `f8`, `c8`,
//! `c16`, or the void kind `V<n>` that ml_dtypes writes for bfloat16 and fp8). Python 2 writers' `L` suffixes on integers are accepted, as numpy does.
//!
//! **Arithmetic.** The header length is bounded by `HEADER_CAP` before anything is added to
//! it; the shape's product and the data length are checked ([`NpyError::DataLenOverflow`]);
//! dimensions are checked as they are parsed. Indices into the buffered dict and byte counts
//! of what was fed saturate, as they stay below `HEADER_CAP + 12` and the fed length.
#![deny(clippy::arithmetic_side_effects)]

use core::fmt;

pub use crate::error::NpyError;
use crate::error::{CapacityError, Text};

/// The magic that opens every `.npy` file.
pub const MAGIC: [u8; 6] = *b"\x93NUMPY";

/// The header capacity of a plain [`NpyParser`]: twice numpy's usual 128-byte preamble and
/// header, enough for any shape of a few dozen dimensions.
pub const DEFAULT_HEADER_CAP: usize = 256;

/// The most dimensions a header may hold (the runtime's `io_node_info_t` keeps 32); more is
/// a [`CapacityError`] naming `MAX_DIMS`. Fixed rather than a parameter: a smaller bound
/// would save a few hundred bytes of one header at most, and no caller wants one.
pub const MAX_DIMS_LIMIT: usize = 32;

/// Byte order of the array data, from the first character of `descr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ByteOrder {
    /// `<`
    Little,
    /// `>`: accepted and reported; the loader decides whether it can use it.
    Big,
    /// `=` (or no prefix): the writer's native order.
    Native,
    /// `|`: not applicable (one-byte types).
    NotApplicable,
}

impl ByteOrder {
    /// The `descr` prefix character.
    pub const fn as_char(self) -> char {
        match self {
            ByteOrder::Little => '<',
            ByteOrder::Big => '>',
            ByteOrder::Native => '=',
            ByteOrder::NotApplicable => '|',
        }
    }
}

/// Kind of the array's elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum DtypeKind {
    /// `b`: boolean.
    Bool,
    /// `i`: signed integer.
    Int,
    /// `u`: unsigned integer.
    UInt,
    /// `f`: IEEE float.
    Float,
    /// `c`: complex (two floats).
    Complex,
    /// `V`: raw bytes of a type NumPy has no code for (ml_dtypes writes bfloat16 as `<V2` and
    /// the fp8 types as `|V1`, §15.21).
    Void,
}

impl DtypeKind {
    /// The `descr` kind character.
    pub const fn as_char(self) -> char {
        match self {
            DtypeKind::Bool => 'b',
            DtypeKind::Int => 'i',
            DtypeKind::UInt => 'u',
            DtypeKind::Float => 'f',
            DtypeKind::Complex => 'c',
            DtypeKind::Void => 'V',
        }
    }
}

/// A parsed `descr`: `'<f2'` is little-endian float of 2 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Descr {
    /// Element kind.
    pub kind: DtypeKind,
    /// Byte order.
    pub byte_order: ByteOrder,
    /// Bytes per element.
    pub item_size: u16,
}

impl Descr {
    /// Parses a dtype string such as `<f2` or `|b1`.
    pub fn parse(descr: &[u8]) -> Result<Self, NpyError> {
        let unsupported = NpyError::UnsupportedDescr { descr: Text::from_bytes_lossy(descr) };
        let (byte_order, rest) = match descr.split_first() {
            Some((b'<', rest)) => (ByteOrder::Little, rest),
            Some((b'>', rest)) => (ByteOrder::Big, rest),
            Some((b'=', rest)) => (ByteOrder::Native, rest),
            Some((b'|', rest)) => (ByteOrder::NotApplicable, rest),
            _ => (ByteOrder::Native, descr),
        };
        let (kind, size) = match rest.split_first() {
            Some((b'b', size)) => (DtypeKind::Bool, size),
            Some((b'i', size)) => (DtypeKind::Int, size),
            Some((b'u', size)) => (DtypeKind::UInt, size),
            Some((b'f', size)) => (DtypeKind::Float, size),
            Some((b'c', size)) => (DtypeKind::Complex, size),
            Some((b'V', size)) => (DtypeKind::Void, size),
            _ => return Err(unsupported),
        };
        let item_size = match (kind, size) {
            (DtypeKind::Bool, b"1") => 1,
            (DtypeKind::Int | DtypeKind::UInt, b"1") => 1,
            (DtypeKind::Int | DtypeKind::UInt | DtypeKind::Float, b"2") => 2,
            (DtypeKind::Int | DtypeKind::UInt | DtypeKind::Float, b"4") => 4,
            (DtypeKind::Int | DtypeKind::UInt | DtypeKind::Float, b"8") => 8,
            (DtypeKind::Complex, b"8") => 8,
            (DtypeKind::Complex, b"16") => 16,
            // `V<n>` is n bytes an element, whatever n (no leading zero, never 0).
            (DtypeKind::Void, digits) => match digits {
                [b'1'..=b'9', ..] => parse_item_size(digits).ok_or(unsupported)?,
                _ => return Err(unsupported),
            },
            _ => return Err(unsupported),
        };
        Ok(Self { kind, byte_order, item_size })
    }
}

/// A decimal item size of at most [`u16::MAX`] bytes; `None` for anything else.
fn parse_item_size(digits: &[u8]) -> Option<u16> {
    digits.iter().try_fold(0u16, |n, &d| {
        let digit = d.checked_sub(b'0').filter(|d| *d <= 9)?;
        n.checked_mul(10)?.checked_add(u16::from(digit))
    })
}

impl fmt::Display for Descr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}{}", self.byte_order.as_char(), self.kind.as_char(), self.item_size)
    }
}

/// The format version from bytes 6 and 7.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct NpyVersion {
    /// 1, 2 or 3.
    pub major: u8,
    /// 0.
    pub minor: u8,
}

/// A parsed `.npy` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct NpyHeader {
    /// The format version.
    pub version: NpyVersion,
    /// The element type.
    pub descr: Descr,
    /// True when the data is in column-major (Fortran) order.
    pub fortran_order: bool,
    /// Bytes from the start of the file to the first byte of array data.
    pub data_offset: u64,
    dims: [u64; MAX_DIMS_LIMIT],
    ndim: u8,
}

impl NpyHeader {
    /// The dimensions; empty for a scalar.
    pub fn shape(&self) -> &[u64] {
        self.dims.get(..usize::from(self.ndim)).unwrap_or(&[])
    }

    /// The number of elements (1 for a scalar), or [`NpyError::DataLenOverflow`].
    pub fn element_count(&self) -> Result<u64, NpyError> {
        self.shape().iter().try_fold(1u64, |n, &d| n.checked_mul(d)).ok_or(NpyError::DataLenOverflow)
    }

    /// The array data's length in bytes: `product(shape) * item_size`, overflow checked.
    pub fn data_len(&self) -> Result<u64, NpyError> {
        self.element_count()?.checked_mul(u64::from(self.descr.item_size)).ok_or(NpyError::DataLenOverflow)
    }
}

/// What a chunk fed to [`NpyParser::feed`] gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
// `Complete` carries the header by value (no heap to box it into); the size is what the
// generic default had, where the lint did not look.
#[allow(clippy::large_enum_variant)]
pub enum NpyFeed {
    /// The whole chunk was header; feed more.
    NeedMore,
    /// The header is complete. The first `header_bytes` of this chunk were header; the
    /// rest of the chunk is array data. Once complete, every later chunk is all data
    /// (`header_bytes == 0`).
    Complete {
        /// The header.
        header: NpyHeader,
        /// How many bytes of this chunk belonged to the header.
        header_bytes: usize,
    },
}

/// Parses a `.npy` header from chunks; see the [module documentation](self).
///
/// `HEADER_CAP` bounds the dict's length in bytes, [`MAX_DIMS_LIMIT`] the number of
/// dimensions. `size_of::<NpyParser>()` with the default (256) is 584 bytes on a 64-bit host and 568 on thumbv7em: the dict buffer plus one
/// [`NpyHeader`] (272 bytes).
#[derive(Debug, Clone)]
pub struct NpyParser<const HEADER_CAP: usize = DEFAULT_HEADER_CAP> {
    preamble: [u8; 12],
    preamble_len: usize,
    dict: [u8; HEADER_CAP],
    dict_len: usize,
    header_len: Option<usize>,
    consumed: u64,
    outcome: Option<Result<NpyHeader, NpyError>>,
}

impl<const HEADER_CAP: usize> Default for NpyParser<HEADER_CAP> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const HEADER_CAP: usize> NpyParser<HEADER_CAP> {
    /// A parser at the first byte of a `.npy` file.
    pub fn new() -> Self {
        Self {
            preamble: [0; 12],
            preamble_len: 0,
            dict: [0; HEADER_CAP],
            dict_len: 0,
            header_len: None,
            consumed: 0,
            outcome: None,
        }
    }

    /// Feeds the next chunk of the file.
    ///
    /// Errors are sticky: after one, every call returns it again.
    // Not inlined: parsing the dict takes several copies of a header's 32 dimensions, stack
    // a streaming caller would otherwise hold while it refills its source.
    #[inline(never)]
    pub fn feed(&mut self, chunk: &[u8]) -> Result<NpyFeed, NpyError> {
        match self.outcome {
            Some(Ok(header)) => return Ok(NpyFeed::Complete { header, header_bytes: 0 }),
            Some(Err(e)) => return Err(e),
            None => {}
        }
        let result = self.consume(chunk);
        if let Err(e) = result {
            self.outcome = Some(Err(e));
        }
        result
    }

    /// The header, at the end of the member: [`NpyError::Truncated`] if it never completed.
    pub fn finish(&self) -> Result<NpyHeader, NpyError> {
        match self.outcome {
            Some(outcome) => outcome,
            None if self.preamble_len < MAGIC.len()
                && self.preamble.get(..self.preamble_len) != MAGIC.get(..self.preamble_len) =>
            {
                let mut found = [0u8; 6];
                found.iter_mut().zip(&self.preamble).take(self.preamble_len).for_each(|(d, s)| *d = *s);
                Err(NpyError::BadMagic { found })
            }
            None => Err(NpyError::Truncated { needed: self.needed(), got: self.consumed }),
        }
    }

    /// Bytes of the file fed so far that belonged to the header.
    pub fn consumed(&self) -> u64 {
        self.consumed
    }

    /// How many preamble bytes to gather before the next check: the magic (6), then the
    /// version (8), then the header length (10 for version 1, 12 otherwise). Checking at
    /// fixed points makes the outcome independent of how the input is chunked.
    fn preamble_target(&self) -> usize {
        match self.preamble_len {
            0..=5 => MAGIC.len(),
            6..=7 => 8,
            _ if self.preamble.get(6) == Some(&1) => 10,
            _ => 12,
        }
    }

    /// Header bytes needed: at least the shortest preamble until the header length is known.
    fn needed(&self) -> u64 {
        match self.header_len {
            Some(len) => self.preamble_len.saturating_add(len) as u64,
            None => self.preamble_target().max(10) as u64,
        }
    }

    fn consume(&mut self, chunk: &[u8]) -> Result<NpyFeed, NpyError> {
        let mut rest = chunk;
        while self.header_len.is_none() && !rest.is_empty() {
            let want = self.preamble_target().saturating_sub(self.preamble_len).min(rest.len());
            let (head, tail) = rest.split_at(want);
            // `want` is at most what the 12-byte preamble still lacks.
            // `checked_add` makes the range exactly `want` long: the copy has no length check.
            if let Some(dst) =
                self.preamble_len.checked_add(want).and_then(|end| self.preamble.get_mut(self.preamble_len..end))
            {
                dst.copy_from_slice(head);
            }
            self.preamble_len = self.preamble_len.saturating_add(want);
            self.consumed = self.consumed.saturating_add(want as u64);
            rest = tail;
            self.check_preamble()?;
        }
        if let Some(header_len) = self.header_len {
            // `dict_len <= header_len <= HEADER_CAP`.
            let want = header_len.saturating_sub(self.dict_len).min(rest.len());
            let (head, tail) = rest.split_at(want);
            if let Some(dst) = self.dict_len.checked_add(want).and_then(|end| self.dict.get_mut(self.dict_len..end)) {
                dst.copy_from_slice(head);
            }
            self.dict_len = self.dict_len.saturating_add(want);
            self.consumed = self.consumed.saturating_add(want as u64);
            rest = tail;
            if self.dict_len == header_len {
                let header = self.parse_dict()?;
                self.outcome = Some(Ok(header));
                // `rest` is a tail of `chunk`.
                let header_bytes = chunk.len().saturating_sub(rest.len());
                return Ok(NpyFeed::Complete { header, header_bytes });
            }
        }
        Ok(NpyFeed::NeedMore)
    }

    /// Checks the preamble at each of its fixed points; sets `header_len` once it is whole.
    fn check_preamble(&mut self) -> Result<(), NpyError> {
        match (self.preamble_len, self.preamble) {
            (6, [m0, m1, m2, m3, m4, m5, ..]) if [m0, m1, m2, m3, m4, m5] != MAGIC => {
                Err(NpyError::BadMagic { found: [m0, m1, m2, m3, m4, m5] })
            }
            (8, [.., major, minor, _, _, _, _]) if !matches!((major, minor), (1..=3, 0)) => {
                Err(NpyError::UnsupportedVersion { major, minor })
            }
            (10, [.., 1, _, l0, l1, _, _]) => self.set_header_len(u32::from(u16::from_le_bytes([l0, l1]))),
            (12, [.., l0, l1, l2, l3]) => self.set_header_len(u32::from_le_bytes([l0, l1, l2, l3])),
            _ => Ok(()),
        }
    }

    fn set_header_len(&mut self, len: u32) -> Result<(), NpyError> {
        let len = usize::try_from(len).ok().filter(|&len| len <= HEADER_CAP);
        let len = len.ok_or(NpyError::Capacity(CapacityError { limit: "HEADER_CAP", capacity: HEADER_CAP as u64 }))?;
        self.header_len = Some(len);
        Ok(())
    }

    fn parse_dict(&self) -> Result<NpyHeader, NpyError> {
        let version = NpyVersion {
            major: self.preamble.get(6).copied().unwrap_or(0),
            minor: self.preamble.get(7).copied().unwrap_or(0),
        };
        let preamble = self.preamble_len as u64;
        let bytes = self.dict.get(..self.dict_len).unwrap_or(&[]);
        let mut cursor = Cursor { bytes, pos: 0, base: preamble };
        // Read into the header in place (its 32 dimensions are not copied from key to key);
        // what was seen is tracked beside it.
        let placeholder = Descr { kind: DtypeKind::Void, byte_order: ByteOrder::NotApplicable, item_size: 0 };
        let mut header = NpyHeader {
            version,
            descr: placeholder,
            fortran_order: false,
            data_offset: 0,
            dims: [0; MAX_DIMS_LIMIT],
            ndim: 0,
        };
        let (mut descr, mut fortran_order, mut shape) = (false, false, false);

        cursor.skip_whitespace();
        cursor.expect(b'{', "'{'")?;
        cursor.skip_whitespace();
        while cursor.peek() != Some(b'}') {
            let key_offset = cursor.offset();
            let key = cursor.string()?;
            cursor.skip_whitespace();
            cursor.expect(b':', "':'")?;
            cursor.skip_whitespace();
            match key {
                b"descr" => {
                    header.descr = Descr::parse(cursor.string()?)?;
                    seen_once(&mut descr, "descr")?;
                }
                b"fortran_order" => {
                    header.fortran_order = match cursor.identifier() {
                        b"True" => true,
                        b"False" => false,
                        _ => return Err(cursor.malformed("True or False")),
                    };
                    seen_once(&mut fortran_order, "fortran_order")?;
                }
                b"shape" => {
                    header.ndim = cursor.shape(&mut header.dims)?;
                    seen_once(&mut shape, "shape")?;
                }
                _ => return Err(NpyError::UnknownKey { offset: key_offset }),
            }
            cursor.skip_whitespace();
            match cursor.peek() {
                Some(b',') => {
                    cursor.advance();
                    cursor.skip_whitespace();
                }
                Some(b'}') => {}
                _ => return Err(cursor.malformed("',' or '}'")),
            }
        }
        cursor.advance(); // the '}'
        cursor.skip_whitespace();
        if cursor.peek().is_some() {
            return Err(cursor.malformed("only padding after the dict"));
        }
        for (seen, key) in [(descr, "descr"), (fortran_order, "fortran_order"), (shape, "shape")] {
            if !seen {
                return Err(NpyError::MissingKey { key });
            }
        }
        // At most 12 + HEADER_CAP.
        header.data_offset = preamble.saturating_add(bytes.len() as u64);
        Ok(header)
    }
}

/// Parses a header from a slice holding at least the whole header (a whole file, say).
pub fn parse_header<const HEADER_CAP: usize>(bytes: &[u8]) -> Result<NpyHeader, NpyError> {
    let mut parser = NpyParser::<HEADER_CAP>::new();
    parser.feed(bytes)?;
    parser.finish()
}

/// Notes that `key` was read; a second time is [`NpyError::DuplicateKey`].
fn seen_once(seen: &mut bool, key: &'static str) -> Result<(), NpyError> {
    if core::mem::replace(seen, true) {
        return Err(NpyError::DuplicateKey { key });
    }
    Ok(())
}

/// A read position in the buffered dict; offsets are reported from the start of the file.
///
/// Its small steps are called, not inlined: the dict parser uses each a dozen times.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    base: u64,
}

impl<'a> Cursor<'a> {
    fn offset(&self) -> u64 {
        // The preamble length plus an index into the dict: at most 12 + HEADER_CAP.
        self.base.saturating_add(self.pos as u64)
    }

    /// Steps over one byte. `pos` never passes `bytes.len()` by more than one, so it cannot
    /// saturate.
    fn advance(&mut self) {
        self.pos = self.pos.saturating_add(1);
    }

    #[inline(never)]
    fn malformed(&self, expected: &'static str) -> NpyError {
        NpyError::Malformed { offset: self.offset(), expected }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    #[inline(never)]
    fn skip_whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.advance();
        }
    }

    #[inline(never)]
    fn expect(&mut self, byte: u8, expected: &'static str) -> Result<(), NpyError> {
        if self.peek() != Some(byte) {
            return Err(self.malformed(expected));
        }
        self.advance();
        Ok(())
    }

    /// A quoted string without escapes: `'...'` or `"..."`.
    fn string(&mut self) -> Result<&'a [u8], NpyError> {
        let quote = match self.peek() {
            Some(q @ (b'\'' | b'"')) => q,
            _ => return Err(self.malformed("a quoted string")),
        };
        let start = self.pos.saturating_add(1);
        let rest = self.bytes.get(start..).unwrap_or(&[]);
        let len = rest.iter().position(|&b| b == quote || b == b'\\' || b == b'\n');
        match len.and_then(|len| rest.get(len).map(|&b| (len, b))) {
            Some((len, b)) if b == quote => {
                self.pos = start.saturating_add(len).saturating_add(1);
                Ok(rest.get(..len).unwrap_or(&[]))
            }
            Some((len, _)) => {
                self.pos = start.saturating_add(len);
                Err(self.malformed("a string without escapes"))
            }
            None => {
                self.pos = self.bytes.len();
                Err(self.malformed("a closing quote"))
            }
        }
    }

    fn identifier(&mut self) -> &'a [u8] {
        let start = self.pos;
        while self.peek().is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_') {
            self.advance();
        }
        self.bytes.get(start..self.pos).unwrap_or(&[])
    }

    /// A non-negative integer, with Python 2's optional `L` suffix.
    fn integer(&mut self) -> Result<u64, NpyError> {
        if !self.peek().is_some_and(|b| b.is_ascii_digit()) {
            return Err(self.malformed("a non-negative integer"));
        }
        let start = self.offset();
        let mut value = 0u64;
        while let Some(digit @ b'0'..=b'9') = self.peek() {
            value = value
                .checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(digit.wrapping_sub(b'0'))))
                .ok_or(NpyError::Malformed { offset: start, expected: "a dimension below 2^64" })?;
            self.advance();
        }
        if self.peek() == Some(b'L') {
            self.advance();
        }
        Ok(value)
    }

    /// A tuple of integers: `()`, `(5,)`, `(128, 128, 1, 1)`, with an optional trailing comma.
    /// The dimensions go to the front of `dims`; returns how many.
    fn shape(&mut self, dims: &mut [u64; MAX_DIMS_LIMIT]) -> Result<u8, NpyError> {
        let mut ndim = 0usize;
        self.expect(b'(', "'(' opening the shape")?;
        self.skip_whitespace();
        if self.peek() == Some(b')') {
            self.advance();
            return Ok(0);
        }
        loop {
            let dim = self.integer()?;
            let slot = dims
                .get_mut(ndim)
                .ok_or(NpyError::Capacity(CapacityError { limit: "MAX_DIMS", capacity: MAX_DIMS_LIMIT as u64 }))?;
            *slot = dim;
            // Below MAX_DIMS_LIMIT: the slot above exists.
            ndim = ndim.saturating_add(1);
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => {
                    self.advance();
                    self.skip_whitespace();
                    if self.peek() == Some(b')') {
                        self.advance();
                        break;
                    }
                }
                // `(5)` is the integer 5 in Python, not a tuple: numpy refuses it.
                Some(b')') if ndim > 1 => {
                    self.advance();
                    break;
                }
                Some(b')') => return Err(self.malformed("',' after the only dimension")),
                _ => return Err(self.malformed("',' or ')' in the shape")),
            }
        }
        Ok(ndim as u8)
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

    fn v1(dict: &str) -> heapless::Vec<u8, 512> {
        let mut out = heapless::Vec::new();
        out.extend_from_slice(b"\x93NUMPY\x01\x00").unwrap();
        out.extend_from_slice(&(dict.len() as u16).to_le_bytes()).unwrap();
        out.extend_from_slice(dict.as_bytes()).unwrap();
        out
    }

    #[test]
    fn descr_parses_every_supported_type() {
        let cases: [(&[u8], DtypeKind, ByteOrder, u16); 12] = [
            (b"<f2", DtypeKind::Float, ByteOrder::Little, 2),
            (b"|b1", DtypeKind::Bool, ByteOrder::NotApplicable, 1),
            (b">i8", DtypeKind::Int, ByteOrder::Big, 8),
            (b"=u4", DtypeKind::UInt, ByteOrder::Native, 4),
            (b"<c16", DtypeKind::Complex, ByteOrder::Little, 16),
            (b"<c8", DtypeKind::Complex, ByteOrder::Little, 8),
            (b"|u1", DtypeKind::UInt, ByteOrder::NotApplicable, 1),
            (b"f8", DtypeKind::Float, ByteOrder::Native, 8),
            // ml_dtypes' bfloat16 and fp8 (§15.21), and any other void width.
            (b"<V2", DtypeKind::Void, ByteOrder::Little, 2),
            (b"|V1", DtypeKind::Void, ByteOrder::NotApplicable, 1),
            (b"V16", DtypeKind::Void, ByteOrder::Native, 16),
            (b"|V65535", DtypeKind::Void, ByteOrder::NotApplicable, u16::MAX),
        ];
        for (text, kind, order, size) in cases {
            let d = Descr::parse(text).unwrap();
            assert_eq!((d.kind, d.byte_order, d.item_size), (kind, order, size), "{text:?}");
        }
        let void_bad = [&b"<V"[..], b"|V0", b"|V01", b"<V2x", b"|V65536", b"<V-1"];
        for bad in [&b"<f16"[..], b"<f1", b"<c4", b"|b2", b"<U8", b"|S10", b"", b"<", b"O"].into_iter().chain(void_bad)
        {
            assert!(matches!(Descr::parse(bad), Err(NpyError::UnsupportedDescr { .. })), "{bad:?}");
        }
    }

    #[test]
    fn small_header_in_one_chunk() {
        let file = v1("{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }\n");
        let header = parse_header::<64>(&file).unwrap();
        assert_eq!(header.shape(), &[2, 3]);
        assert!(header.fortran_order);
        assert_eq!(header.data_len(), Ok(24));
        assert_eq!(header.data_offset, file.len() as u64);
    }

    #[test]
    fn sizes_are_as_documented() {
        #[cfg(target_pointer_width = "64")]
        assert_eq!(core::mem::size_of::<NpyParser>(), 584);
        assert_eq!(core::mem::size_of::<NpyHeader>(), 272);
    }

    #[test]
    fn too_many_dims_names_max_dims() {
        let dict = |n: usize| {
            let mut d = heapless::String::<512>::new();
            d.push_str("{'descr': '<i4', 'fortran_order': False, 'shape': (").unwrap();
            for i in 0..n {
                d.push_str(if i == 0 { "1" } else { ", 1" }).unwrap();
            }
            d.push_str("), }\n").unwrap();
            d
        };
        assert_eq!(parse_header::<256>(&v1(&dict(32))).map(|h| h.shape().len()), Ok(32));
        let err = parse_header::<256>(&v1(&dict(33))).unwrap_err();
        assert_eq!(err, NpyError::Capacity(CapacityError { limit: "MAX_DIMS", capacity: 32 }));
    }
}
