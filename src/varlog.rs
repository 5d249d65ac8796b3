//! A log of tagged LEB128 varints and byte strings in the top (scratch) part of an [`Arena`]:
//! what a reader must keep of a document it can join only at the end (the `neff.json` arrays
//! come in any key order), a few bytes an entry.
//!
//! The log grows down from the arena's top: each value's bytes are written in reverse, so a
//! [`Cursor`] walking down from the top reads them back in LEB128 order, oldest first. An item
//! starts with a head varint, `value << 3 | tag`; what follows the head (more varints, a
//! string) is the writer's format. The log holds no pointers: releasing the arena's top back to
//! a mark frees it.
#![deny(clippy::arithmetic_side_effects)]

use crate::arena::{Arena, Span};
use crate::error::ErrorKind;

/// The most bytes a `u128` takes as LEB128.
const MAX_VARINT: usize = 19;
/// Bits a varint's bytes carry at most (7 a byte).
const MAX_VARINT_BITS: u32 = 19 * 7;

/// LEB128 `v` into `out`, returning the byte count.
fn leb128(mut v: u128, out: &mut [u8; MAX_VARINT]) -> usize {
    let mut n = 0;
    for (b, len) in out.iter_mut().zip(1..) {
        let low = (v & 0x7f) as u8;
        v >>= 7;
        n = len;
        if v == 0 {
            *b = low;
            break;
        }
        *b = low | 0x80;
    }
    n
}

/// Appends a varint to the log.
pub fn push_varint(arena: &mut Arena<'_>, v: u128) -> Result<(), ErrorKind> {
    let mut fwd = [0u8; MAX_VARINT];
    let n = leb128(v, &mut fwd);
    let mut rev = [0u8; MAX_VARINT];
    for (dst, src) in rev.iter_mut().zip(fwd.get(..n).unwrap_or(&[]).iter().rev()) {
        *dst = *src;
    }
    let at = arena.alloc_top(n)?;
    arena.write(at, rev.get(..n).unwrap_or(&[]));
    Ok(())
}

/// Appends an item head: `value` with `tag` (below 8) in the low three bits.
pub fn push_head(arena: &mut Arena<'_>, tag: u8, value: u64) -> Result<(), ErrorKind> {
    push_varint(arena, (u128::from(value) << 3) | u128::from(tag & 7))
}

/// Appends a tagged string: its length in the head, then its bytes (in order, below it).
pub fn push_text(arena: &mut Arena<'_>, tag: u8, s: &str) -> Result<(), ErrorKind> {
    push_head(arena, tag, s.len() as u64)?;
    arena.push_str_top(s).map(|_| ())
}

/// A reader of the log, walking down from a position to the log's low end.
pub struct Cursor<'j, 'b> {
    arena: &'j Arena<'b>,
    pos: u32,
    lo: u32,
}

impl<'j, 'b> Cursor<'j, 'b> {
    /// A reader starting at `pos` (the top of what to read) that stops at `lo`.
    pub fn new(arena: &'j Arena<'b>, pos: u32, lo: u32) -> Self {
        Self { arena, pos, lo }
    }

    /// Where the next read starts.
    pub fn pos(&self) -> u32 {
        self.pos
    }

    fn byte(&mut self) -> Option<u8> {
        let at = self.pos.checked_sub(1).filter(|&a| a >= self.lo)?;
        self.pos = at;
        let [b] = self.arena.read::<1>(at);
        Some(b)
    }

    /// The next varint; `None` at the end of the log or for more than 19 bytes.
    pub fn varint(&mut self) -> Option<u128> {
        let first = self.byte()?;
        // Most are one byte (item heads, small lengths): no 128-bit shifts for those.
        if first & 0x80 == 0 {
            return Some(u128::from(first));
        }
        let mut v = u128::from(first & 0x7f);
        for shift in (7..MAX_VARINT_BITS).step_by(7) {
            let b = self.byte()?;
            v |= u128::from(b & 0x7f).checked_shl(shift)?;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    /// The next varint, if it fits a `u64`.
    pub fn u64(&mut self) -> Option<u64> {
        u64::try_from(self.varint()?).ok()
    }

    /// The next item head as `(tag, value)`.
    pub fn head(&mut self) -> Option<(u8, u64)> {
        let head = self.varint()?;
        Some(((head & 7) as u8, u64::try_from(head >> 3).ok()?))
    }

    /// The next `len` bytes, as a span of the arena.
    pub fn text(&mut self, len: u64) -> Option<Span> {
        let len = u32::try_from(len).ok()?;
        let at = self.pos.checked_sub(len).filter(|&a| a >= self.lo)?;
        self.pos = at;
        Some(Span { at, len })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::arithmetic_side_effects)]
mod tests {
    use super::*;

    #[test]
    fn what_is_pushed_reads_back_in_order() {
        let mut buf = [0u8; 256];
        let mut arena = Arena::new(&mut buf);
        let top = u32::try_from(arena.mark_top()).unwrap();
        push_head(&mut arena, 3, 300).unwrap();
        push_varint(&mut arena, u128::MAX).unwrap();
        push_text(&mut arena, 5, "sg00/def.json").unwrap();
        push_varint(&mut arena, 0).unwrap();
        let lo = u32::try_from(arena.mark_top()).unwrap();
        let mut c = Cursor::new(&arena, top, lo);
        assert_eq!(c.head(), Some((3, 300)));
        assert_eq!(c.varint(), Some(u128::MAX));
        let (tag, len) = c.head().unwrap();
        assert_eq!(tag, 5);
        let span = c.text(len).unwrap();
        assert_eq!(arena.str(span), "sg00/def.json");
        assert_eq!(c.u64(), Some(0));
        assert_eq!(c.varint(), None, "the log ends at its low end");
    }

    #[test]
    fn a_varint_takes_what_leb128_says() {
        let mut out = [0u8; MAX_VARINT];
        assert_eq!(leb128(0, &mut out), 1);
        assert_eq!(leb128(127, &mut out), 1);
        assert_eq!(leb128(128, &mut out), 2);
        assert_eq!(leb128(u128::MAX, &mut out), MAX_VARINT);
    }
}
