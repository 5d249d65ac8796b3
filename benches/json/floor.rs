//! A floor for the manifest readers, measured beside the tokenizer on the same bytes: one
//! validating pass over a whole JSON text that records where each token starts and ends (a
//! tape), then a pass that reads every value by its position on the tape (keys looked up,
//! integers converted, strings as `&str`).
//!
//! This is not the core's reader. It asks what a reader that finds a chunk's structure in one
//! pass and reads by position can reach, against the streaming tokenizer's token-at-a-time
//! state machine. To be a fair floor it validates what the tokenizer validates (the grammar,
//! escapes, surrogate pairs, UTF-8, control bytes, the depth limit, a number's length), which
//! `json.rs` checks against the tokenizer on every JSONTestSuite file before anything is timed.

use neff::json::NUMBER_CAPACITY;

/// A token's kind, in the tape word's top three bits; its start offset below.
const KIND_SHIFT: u32 = 29;
const OFFSET_MASK: u32 = (1 << KIND_SHIFT) - 1;
const OPEN_OBJECT: u32 = 1;
const OPEN_ARRAY: u32 = 2;
const CLOSE: u32 = 3;
const KEY: u32 = 4;
const STRING: u32 = 5;
const NUMBER: u32 = 6;
const LITERAL: u32 = 7;

/// The longest text the tape's offsets address.
pub const MAX_TEXT: usize = OFFSET_MASK as usize;

/// Where the text is not JSON: the byte offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Invalid(pub usize);

fn word(kind: u32, at: usize) -> u32 {
    kind << KIND_SHIFT | at as u32
}

fn whitespace_end(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\n' | b'\r' | b'\t')) {
        i += 1;
    }
    i
}

/// Eight bytes' flags: the high bit of each byte that is not printable ASCII or is `"` or `\`.
fn unplain(w: u64) -> u64 {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    const ONES: u64 = 0x0101_0101_0101_0101;
    let below_space = w.wrapping_sub(0x20 * ONES) & !w;
    let quote = (w ^ (b'"' as u64 * ONES)).wrapping_sub(ONES) & !(w ^ (b'"' as u64 * ONES));
    let backslash = (w ^ (b'\\' as u64 * ONES)).wrapping_sub(ONES) & !(w ^ (b'\\' as u64 * ONES));
    (w | below_space | quote | backslash) & HIGH
}

/// The four hex digits at `at`, as a UTF-16 code unit.
fn hex4(b: &[u8], at: usize) -> Result<u16, Invalid> {
    let digits = b.get(at..at + 4).ok_or(Invalid(at))?;
    digits.iter().try_fold(0u16, |unit, &d| Ok(unit << 4 | (char::from(d).to_digit(16).ok_or(Invalid(at))? as u16)))
}

/// The offset past the closing quote of the string whose opening quote is at `i`.
fn string_end(b: &[u8], i: usize) -> Result<usize, Invalid> {
    let mut j = i + 1;
    loop {
        // Plain text eight bytes at a time, then byte by byte from the first other byte.
        while let Some(chunk) = b.get(j..j + 8) {
            let flags = unplain(u64::from_le_bytes(chunk.try_into().unwrap()));
            if flags != 0 {
                j += (flags.trailing_zeros() / 8) as usize;
                break;
            }
            j += 8;
        }
        match *b.get(j).ok_or(Invalid(j))? {
            b'"' => return Ok(j + 1),
            b'\\' => match *b.get(j + 1).ok_or(Invalid(j))? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => j += 2,
                b'u' => {
                    let unit = hex4(b, j + 2)?;
                    j += 6;
                    if (0xDC00..0xE000).contains(&unit) {
                        return Err(Invalid(j - 6));
                    }
                    if (0xD800..0xDC00).contains(&unit) {
                        // A high surrogate needs a low one right after it.
                        if b.get(j..j + 2) != Some(b"\\u") || !(0xDC00..0xE000).contains(&hex4(b, j + 2)?) {
                            return Err(Invalid(j));
                        }
                        j += 6;
                    }
                }
                _ => return Err(Invalid(j)),
            },
            0..=0x1f => return Err(Invalid(j)),
            0x80.. => {
                let run = b.get(j..).ok_or(Invalid(j))?;
                let len = run.iter().position(|&c| c < 0x80).unwrap_or(run.len());
                std::str::from_utf8(&run[..len]).map_err(|e| Invalid(j + e.valid_up_to()))?;
                j += len;
            }
            _ => j += 1,
        }
    }
}

fn digits_end(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    i
}

/// The offset past the number that starts at `i`.
fn number_end(b: &[u8], i: usize) -> Result<usize, Invalid> {
    let mut j = i + usize::from(b.get(i) == Some(&b'-'));
    match b.get(j) {
        Some(b'0') => j += 1,
        Some(b'1'..=b'9') => j = digits_end(b, j + 1),
        _ => return Err(Invalid(j)),
    }
    if b.get(j) == Some(&b'.') {
        let end = digits_end(b, j + 1);
        if end == j + 1 {
            return Err(Invalid(end));
        }
        j = end;
    }
    if matches!(b.get(j), Some(b'e' | b'E')) {
        j += 1;
        j += usize::from(matches!(b.get(j), Some(b'+' | b'-')));
        let end = digits_end(b, j);
        if end == j {
            return Err(Invalid(end));
        }
        j = end;
    }
    Ok(j)
}

/// Checks that `b` is one JSON text with at most `depth_limit` containers open at once and
/// numbers of at most [`NUMBER_CAPACITY`] bytes (the tokenizer's limit on a number it hands
/// on), and writes its tape: a word per token (kind and start) and, after a key, string or
/// number, a word with its end.
pub fn scan(b: &[u8], depth_limit: usize, tape: &mut Vec<u32>) -> Result<(), Invalid> {
    assert!(b.len() <= MAX_TEXT && depth_limit <= 256);
    tape.clear();
    // Bit d: the container at depth d is an object.
    let mut objects = [0u64; 4];
    let mut depth = 0usize;
    let mut i = whitespace_end(b, 0);
    // `key`: a key comes next (after `{` or a member's `,`), then its `:` and the value.
    let mut key = false;
    loop {
        if key {
            if b.get(i) != Some(&b'"') {
                return Err(Invalid(i));
            }
            tape.push(word(KEY, i));
            i = string_end(b, i)?;
            tape.push(i as u32);
            i = whitespace_end(b, i);
            if b.get(i) != Some(&b':') {
                return Err(Invalid(i));
            }
            i = whitespace_end(b, i + 1);
        }
        let byte = *b.get(i).ok_or(Invalid(i))?;
        match byte {
            b'{' | b'[' => {
                if depth == depth_limit {
                    return Err(Invalid(i));
                }
                let object = byte == b'{';
                tape.push(word(if object { OPEN_OBJECT } else { OPEN_ARRAY }, i));
                let bit = 1u64 << (depth % 64);
                objects[depth / 64] = if object { objects[depth / 64] | bit } else { objects[depth / 64] & !bit };
                depth += 1;
                i = whitespace_end(b, i + 1);
                if b.get(i) != Some(if object { &b'}' } else { &b']' }) {
                    key = object;
                    continue;
                }
                tape.push(word(CLOSE, i));
                depth -= 1;
                i += 1;
            }
            b'"' => {
                tape.push(word(STRING, i));
                i = string_end(b, i)?;
                tape.push(i as u32);
            }
            b'-' | b'0'..=b'9' => {
                tape.push(word(NUMBER, i));
                let end = number_end(b, i)?;
                if end - i > NUMBER_CAPACITY {
                    return Err(Invalid(i));
                }
                i = end;
                tape.push(i as u32);
            }
            b't' | b'f' | b'n' => {
                let literal: &[u8] = match byte {
                    b't' => b"true",
                    b'f' => b"false",
                    _ => b"null",
                };
                if b.get(i..i + literal.len()) != Some(literal) {
                    return Err(Invalid(i));
                }
                tape.push(word(LITERAL, i));
                i += literal.len();
            }
            _ => return Err(Invalid(i)),
        }
        // After a value: the text's end, a `,` before the next member or element, or closes.
        loop {
            i = whitespace_end(b, i);
            if depth == 0 {
                return if i == b.len() { Ok(()) } else { Err(Invalid(i)) };
            }
            let object = objects[(depth - 1) / 64] >> ((depth - 1) % 64) & 1 == 1;
            match b.get(i) {
                Some(b',') => {
                    i = whitespace_end(b, i + 1);
                    key = object;
                    break;
                }
                Some(b'}') if object => {}
                Some(b']') if !object => {}
                _ => return Err(Invalid(i)),
            }
            tape.push(word(CLOSE, i));
            depth -= 1;
            i += 1;
        }
    }
}

/// The tape's tokens, one byte each: the bracket itself for an opening or closing one, `k` a
/// key, `s` a string, `n` a number, `l` a literal.
pub fn kinds(b: &[u8], tape: &[u32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(tape.len());
    let mut k = 0;
    while let Some(&w) = tape.get(k) {
        let (kind, at) = (w >> KIND_SHIFT, (w & OFFSET_MASK) as usize);
        out.push(match kind {
            KEY => b'k',
            STRING => b's',
            NUMBER => b'n',
            LITERAL => b'l',
            _ => b[at],
        });
        k += if matches!(kind, KEY | STRING | NUMBER) { 2 } else { 1 };
    }
    out
}

/// A DMA descriptor's and block's keys, as an engine JSON names them: the lookup a reader
/// makes for every key.
fn slot_of(key: &[u8]) -> u64 {
    match key {
        b"#comment" => 1,
        b"desc" => 2,
        b"from" => 3,
        b"from_dtype" => 4,
        b"from_off" => 5,
        b"from_sizes" => 6,
        b"from_steps" => 7,
        b"id" => 8,
        b"num_tiling_dimensions" => 9,
        b"op" => 10,
        b"queue" => 11,
        b"semaphore" => 12,
        b"to" => 13,
        b"to_dtype" => 14,
        b"to_off" => 15,
        b"to_sizes" => 16,
        b"to_steps" => 17,
        _ => 0,
    }
}

/// Reads every value of `b` by its place on `tape`: each key looked up, each integer
/// converted (a fraction or exponent as `f64`), each string taken as `&str` (its escapes, which
/// a reader would undo, left as they are). A checksum of what it read.
pub fn read_by_position(b: &[u8], tape: &[u32]) -> u64 {
    let mut sum = 0u64;
    let mut k = 0;
    while let Some(&w) = tape.get(k) {
        let (kind, at) = (w >> KIND_SHIFT, (w & OFFSET_MASK) as usize);
        if !matches!(kind, KEY | STRING | NUMBER) {
            k += 1;
            continue;
        }
        let end = tape[k + 1] as usize;
        k += 2;
        sum = sum.wrapping_add(match kind {
            KEY => slot_of(&b[at + 1..end - 1]),
            STRING => std::str::from_utf8(&b[at + 1..end - 1]).map_or(0, str::len) as u64,
            _ => {
                let text = &b[at..end];
                if text.iter().all(u8::is_ascii_digit) {
                    text.iter().fold(0u64, |v, &d| v.wrapping_mul(10).wrapping_add(u64::from(d - b'0')))
                } else {
                    std::str::from_utf8(text).ok().and_then(|t| t.parse::<f64>().ok()).map_or(0, |f| f.to_bits())
                }
            }
        });
    }
    sum
}
