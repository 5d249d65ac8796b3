//! A small raw-deflate (RFC 1951) decoder for speculative decoding: it starts at any bit, writes
//! 16-bit symbols (a byte, or a marker naming a byte of the unknown 32 KiB before the start),
//! stops at block boundaries, and refuses everything zlib refuses (so whatever it accepts,
//! zlib-rs decodes the same way). Plus the block finder and the bit writer that frames a bit
//! range of the stream for zlib-rs.

/// The deflate window: the farthest a distance reaches back.
pub const WINDOW: usize = 32 * 1024;
/// A symbol at or above this is a marker: `symbol - MARKER` is the index of a byte in the
/// [`WINDOW`] bytes before the decoding started.
pub const MARKER: u16 = 0x8000;

/// Why decoding stopped short (any of them makes the speculation void).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Invalid;

/// An LSB-first bit reader over a byte slice, with a 64-bit buffer.
pub struct Bits<'a> {
    data: &'a [u8],
    next: usize,
    buf: u64,
    n: u32,
}

impl<'a> Bits<'a> {
    /// A reader at bit `bit` of `data`; `None` past the end.
    pub fn at(data: &'a [u8], bit: u64) -> Option<Self> {
        let byte = usize::try_from(bit / 8).ok()?;
        if byte > data.len() {
            return None;
        }
        let mut b = Bits { data, next: byte, buf: 0, n: 0 };
        let r = (bit % 8) as u32;
        if r > 0 {
            if !b.need(r) {
                return None;
            }
            b.consume(r);
        }
        Some(b)
    }

    #[inline]
    fn refill(&mut self) {
        let take = ((63 - self.n) / 8) as usize;
        if let Some(s) = self.data.get(self.next..self.next + 8) {
            let mut word = [0u8; 8];
            word.copy_from_slice(s);
            let v = u64::from_le_bytes(word) & ((1u64 << (take * 8)) - 1);
            self.buf |= v << self.n;
            self.next += take;
            self.n += take as u32 * 8;
        } else {
            while self.n <= 56 {
                let Some(&b) = self.data.get(self.next) else { break };
                self.buf |= u64::from(b) << self.n;
                self.next += 1;
                self.n += 8;
            }
        }
    }

    /// Whether `k` (<= 56) bits are available.
    #[inline]
    pub fn need(&mut self, k: u32) -> bool {
        if self.n < k {
            self.refill();
        }
        self.n >= k
    }

    #[inline]
    fn consume(&mut self, k: u32) {
        self.buf >>= k;
        self.n -= k;
    }

    /// The next `k` (<= 32) bits.
    #[inline]
    pub fn get(&mut self, k: u32) -> Result<u32, Invalid> {
        if !self.need(k) {
            return Err(Invalid);
        }
        let v = (self.buf & ((1u64 << k) - 1)) as u32;
        self.consume(k);
        Ok(v)
    }

    /// The bit position in `data`.
    pub fn pos(&self) -> u64 {
        self.next as u64 * 8 - u64::from(self.n)
    }

    fn align(&mut self) {
        let r = self.n % 8;
        self.consume(r);
    }

    /// Decodes one symbol of `h`.
    #[inline(always)]
    fn decode(&mut self, h: &Huffman) -> Result<u16, Invalid> {
        if !self.need(h.bits) {
            // Near the end of the data: a short code may still fit.
            if self.n == 0 {
                return Err(Invalid);
            }
        }
        let e = h.table[(self.buf & h.mask) as usize];
        let len = u32::from(e & 15);
        if len == 0 || len > self.n {
            return Err(Invalid);
        }
        self.consume(len);
        Ok(e >> 4)
    }
}

/// Which code a length set is for: zlib's rules differ.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The code-length code: must be complete.
    Precode,
    /// Literal/length or distance: complete, or a single code of length 1; distances may be
    /// all absent.
    Data,
}

/// A canonical Huffman code as one lookup table indexed by the next `bits` bits: each entry is
/// `symbol << 4 | length`, 0 for no code.
pub struct Huffman {
    table: Vec<u16>,
    bits: u32,
    mask: u64,
}

impl Huffman {
    fn new(lengths: &[u8], kind: Kind) -> Result<Self, Invalid> {
        let mut count = [0u32; 16];
        for &l in lengths {
            count[usize::from(l)] += 1;
        }
        count[0] = 0;
        let max = (1..16).rev().find(|&l| count[l] > 0).unwrap_or(0);
        if max == 0 {
            // zlib builds a table of invalid codes: the precode then fails on first use;
            // distances may be all absent (any distance symbol is then invalid).
            if kind == Kind::Precode {
                return Err(Invalid);
            }
            return Ok(Huffman { table: vec![0; 2], bits: 1, mask: 1 });
        }
        let mut left: i64 = 1;
        for &c in count.iter().skip(1) {
            left = left * 2 - i64::from(c);
            if left < 0 {
                return Err(Invalid);
            }
        }
        if left > 0 && (kind == Kind::Precode || max != 1) {
            return Err(Invalid);
        }
        let bits = max as u32;
        let size = 1usize << bits;
        let mut table = vec![0u16; size];
        let mut next_code = [0u32; 16];
        let mut code = 0u32;
        for l in 1..16 {
            code = (code + count[l - 1]) << 1;
            next_code[l] = code;
        }
        for (sym, &l) in lengths.iter().enumerate() {
            if l == 0 {
                continue;
            }
            let l = usize::from(l);
            let c = next_code[l];
            next_code[l] += 1;
            let rev = (c.reverse_bits() >> (32 - l)) as usize;
            let entry = ((sym as u16) << 4) | l as u16;
            let mut i = rev;
            while i < size {
                table[i] = entry;
                i += 1 << l;
            }
        }
        Ok(Huffman { table, bits, mask: (size as u64) - 1 })
    }
}

const LEN_BASE: [u16; 29] =
    [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258];
const LEN_EXTRA: [u8; 29] = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0];
const DIST_BASE: [u16; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145,
    8193, 12289, 16385, 24577,
];
const DIST_EXTRA: [u8; 30] =
    [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13];
/// The order in which the code-length code's lengths are stored.
const PRECODE_ORDER: [usize; 19] = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];

/// The header of a block, read: its kind and, for Huffman blocks, its codes.
pub enum Block {
    /// Stored: this many bytes follow, byte-aligned (the reader is past LEN/NLEN).
    Stored(u16),
    /// Fixed or dynamic Huffman codes.
    Huffman(Huffman, Huffman),
}

/// Reads a block header (BFINAL and BTYPE already read as `btype`).
fn read_codes(bits: &mut Bits<'_>, btype: u32) -> Result<Block, Invalid> {
    match btype {
        0 => {
            bits.align();
            let len = bits.get(16)?;
            let nlen = bits.get(16)?;
            if len != !nlen & 0xffff {
                return Err(Invalid);
            }
            Ok(Block::Stored(len as u16))
        }
        1 => {
            let mut l = [0u8; 288];
            l[..144].fill(8);
            l[144..256].fill(9);
            l[256..280].fill(7);
            l[280..].fill(8);
            Ok(Block::Huffman(Huffman::new(&l, Kind::Data)?, Huffman::new(&[5; 32], Kind::Data)?))
        }
        2 => dynamic_codes(bits),
        _ => Err(Invalid),
    }
}

fn dynamic_codes(bits: &mut Bits<'_>) -> Result<Block, Invalid> {
    let nlen = bits.get(5)? as usize + 257;
    let ndist = bits.get(5)? as usize + 1;
    let ncode = bits.get(4)? as usize + 4;
    if nlen > 286 || ndist > 30 {
        return Err(Invalid);
    }
    let mut pre = [0u8; 19];
    for &i in PRECODE_ORDER.iter().take(ncode) {
        pre[i] = bits.get(3)? as u8;
    }
    let pre = Huffman::new(&pre, Kind::Precode)?;
    let mut lengths = [0u8; 286 + 30];
    let total = nlen + ndist;
    let mut i = 0;
    while i < total {
        let sym = bits.decode(&pre)?;
        let (value, repeat) = match sym {
            0..=15 => (sym as u8, 1),
            16 => {
                if i == 0 {
                    return Err(Invalid);
                }
                (lengths[i - 1], 3 + bits.get(2)? as usize)
            }
            17 => (0, 3 + bits.get(3)? as usize),
            _ => (0, 11 + bits.get(7)? as usize),
        };
        if i + repeat > total {
            return Err(Invalid);
        }
        lengths[i..i + repeat].fill(value);
        i += repeat;
    }
    if lengths[256] == 0 {
        return Err(Invalid);
    }
    let lit = Huffman::new(&lengths[..nlen], Kind::Data)?;
    let dist = Huffman::new(&lengths[nlen..total], Kind::Data)?;
    Ok(Block::Huffman(lit, dist))
}

/// Whether a non-final dynamic-Huffman block starts at bit `bit` of `data`: its header, its
/// code-length code and both codes are valid by zlib's rules.
pub fn is_block_start(data: &[u8], bit: u64) -> bool {
    let Some(mut bits) = Bits::at(data, bit) else { return false };
    // BFINAL 0, BTYPE 10: the three low bits are 0b100.
    if bits.get(3) != Ok(0b100) {
        return false;
    }
    dynamic_codes(&mut bits).is_ok()
}

/// The first bit at or after `from` (and before `until`) where [`is_block_start`] holds.
pub fn find_block(data: &[u8], from: u64, until: u64) -> Option<u64> {
    let until = until.min(data.len() as u64 * 8);
    let mut bit = from;
    while bit < until {
        // Cheap filter on the 3 header bits and HLIT/HDIST before the full check.
        let byte = (bit / 8) as usize;
        let mut w = [0u8; 4];
        let end = (byte + 4).min(data.len());
        w[..end - byte].copy_from_slice(&data[byte..end]);
        let v = u32::from_le_bytes(w) >> (bit % 8);
        if v & 7 == 0b100 && (v >> 3) & 31 < 30 && (v >> 8) & 31 < 30 && is_block_start(data, bit) {
            return Some(bit);
        }
        bit += 1;
    }
    None
}

/// How a [`decode`] run ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Stop {
    /// At a block boundary where the last [`WINDOW`] symbols hold no marker (only when asked).
    Clean(u64),
    /// At the block boundary `end`.
    End(u64),
    /// After the final block, which ended at this bit.
    Final(u64),
}

/// Decodes from bit `start` of `data` into `out` (whose existing symbols are history), block by
/// block, until the block boundary `end` (if `Some`), the final block, or — with
/// `stop_when_clean` — a block boundary with no marker in the last [`WINDOW`] symbols.
pub fn decode(
    data: &[u8],
    start: u64,
    end: Option<u64>,
    out: &mut Vec<u16>,
    stop_when_clean: bool,
) -> Result<Stop, Invalid> {
    let mut bits = Bits::at(data, start).ok_or(Invalid)?;
    loop {
        let pos = bits.pos();
        if let Some(e) = end {
            if pos == e {
                return Ok(Stop::End(pos));
            }
            if pos > e {
                return Err(Invalid);
            }
        }
        // A scan of 32 Ki symbols per block (vectorized) costs little next to decoding one.
        if stop_when_clean && out.len() >= WINDOW && !out[out.len() - WINDOW..].iter().any(|&s| s >= MARKER) {
            return Ok(Stop::Clean(pos));
        }
        let last = bits.get(1)? == 1;
        let btype = bits.get(2)?;
        match read_codes(&mut bits, btype)? {
            Block::Stored(len) => {
                for _ in 0..len {
                    out.push(bits.get(8)? as u16);
                }
            }
            Block::Huffman(lit, dist) => loop {
                let sym = bits.decode(&lit)?;
                if sym < 256 {
                    out.push(sym);
                    continue;
                }
                if sym == 256 {
                    break;
                }
                let li = usize::from(sym - 257);
                if li >= 29 {
                    return Err(Invalid);
                }
                let len = usize::from(LEN_BASE[li]) + bits.get(u32::from(LEN_EXTRA[li]))? as usize;
                let di = usize::from(bits.decode(&dist)?);
                if di >= 30 {
                    return Err(Invalid);
                }
                let d = usize::from(DIST_BASE[di]) + bits.get(u32::from(DIST_EXTRA[di]))? as usize;
                let prev = out.len();
                if d > prev {
                    // Reaches before the start: markers, up to the window's reach.
                    let back = d - prev;
                    if back > WINDOW {
                        return Err(Invalid);
                    }
                    for k in 0..len {
                        let s = if k < back { MARKER + (WINDOW - back + k) as u16 } else { out[out.len() - d] };
                        out.push(s);
                    }
                } else if d >= len {
                    out.extend_from_within(prev - d..prev - d + len);
                } else {
                    // Overlapping: the pattern of `d` symbols repeats; copy it in growing runs.
                    let from = prev - d;
                    while out.len() < prev + len {
                        let n = (out.len() - from).min(prev + len - out.len());
                        out.extend_from_within(from..from + n);
                    }
                }
            },
        }
        if last {
            return Ok(Stop::Final(bits.pos()));
        }
    }
}

/// An LSB-first bit writer (deflate's order for everything but Huffman codes).
#[derive(Default)]
pub struct BitWriter {
    /// The bytes written; the last may be partial.
    pub bytes: Vec<u8>,
    bit: u32,
}

impl BitWriter {
    /// Writes the `n` low bits of `v`.
    pub fn put(&mut self, v: u32, n: u32) {
        for i in 0..n {
            if self.bit == 0 {
                self.bytes.push(0);
            }
            if (v >> i) & 1 == 1 {
                if let Some(last) = self.bytes.last_mut() {
                    *last |= 1 << self.bit;
                }
            }
            self.bit = (self.bit + 1) % 8;
        }
    }

    /// Writes a Huffman code of `n` bits (most significant first).
    pub fn code(&mut self, c: u32, n: u32) {
        self.put(c.reverse_bits() >> (32 - n), n);
    }

    /// Bits in the last byte (0: byte-aligned).
    pub fn partial(&self) -> u32 {
        self.bit
    }
}

/// Writes blocks that output nothing and take a number of bits congruent to `r` modulo 8, so
/// that deflate data starting at bit `r` of a byte can follow byte-aligned: empty fixed blocks
/// take 10 bits, and an empty dynamic block 93 + 2z bits.
pub fn write_aligning_prefix(w: &mut BitWriter, r: u32) {
    match r % 8 {
        0 => {}
        r @ (2 | 4 | 6) => {
            for _ in 0..r / 2 {
                // Non-final fixed block, then end-of-block (7 zero bits).
                w.put(0, 1);
                w.put(1, 2);
                w.put(0, 7);
            }
        }
        r => {
            // z extra single "0" length symbols: 93 + 2z ≡ r (mod 8).
            let z = match r {
                5 => 0,
                7 => 1,
                1 => 2,
                _ => 3,
            };
            w.put(0, 1);
            w.put(2, 2);
            w.put(0, 5); // 257 literal/length codes
            w.put(0, 5); // 1 distance code
            w.put(14, 4); // 18 code-length code lengths
                          // Lengths in PRECODE_ORDER: 16:0 17:3 18:1 0:2, 14 zeros, then 1:3.
            let mut pre = [0u32; 19];
            pre[1] = 3;
            pre[2] = 1;
            pre[3] = 2;
            pre[17] = 3;
            for &l in pre.iter().take(18) {
                w.put(l, 3);
            }
            // Canonical codes: 18 -> 0, 0 -> 10, 1 -> 110, 17 -> 111.
            for _ in 0..z {
                w.code(0b10, 2);
            }
            // 256 - z zeros in two runs of 18 (11..=138 each).
            w.code(0, 1);
            w.put(138 - 11, 7);
            w.code(0, 1);
            w.put(256 - z - 138 - 11, 7);
            w.code(0b110, 3); // symbol 256: length 1
            w.code(0b10, 2); // the one distance: length 0
            w.code(0, 1); // end-of-block
        }
    }
}

/// What the terminator block outputs.
pub const TERMINATOR: &[u8; 8] = b"NEFFSTOP";

/// Writes a final fixed block holding [`TERMINATOR`]: deflate data cut at a block boundary and
/// followed by it ends exactly there with that output, which is how zlib-rs is made to stop at
/// a given bit.
pub fn write_terminator(w: &mut BitWriter) {
    w.put(1, 1);
    w.put(1, 2);
    for &b in TERMINATOR {
        // Literals 0..=143: 8-bit codes from 0x30.
        w.code(0x30 + u32::from(b), 8);
    }
    w.code(0, 7);
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::DeflateEncoder;
    use flate2::Compression;
    use std::io::Write;

    fn deflate(data: &[u8], level: u32) -> Vec<u8> {
        let mut e = DeflateEncoder::new(Vec::new(), Compression::new(level));
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn inflate_flate2(data: &[u8], dict: &[u8]) -> Option<Vec<u8>> {
        let mut d = flate2::Decompress::new(false);
        if !dict.is_empty() {
            d.set_dictionary(dict).ok()?;
        }
        let mut out = Vec::with_capacity(1 << 20);
        loop {
            let before = (d.total_in(), d.total_out());
            let s = d.decompress_vec(&data[d.total_in() as usize..], &mut out, flate2::FlushDecompress::None).ok()?;
            if s == flate2::Status::StreamEnd {
                return Some(out);
            }
            if out.len() == out.capacity() {
                out.reserve(1 << 20);
            } else if before == (d.total_in(), d.total_out()) {
                return None;
            }
        }
    }

    pub(crate) fn sample(n: usize, seed: u64) -> Vec<u8> {
        // Text-like with repeats and some noise: dynamic blocks with long matches.
        let mut x = seed | 1;
        let words: [&[u8]; 6] = [b"tensor ", b"weights ", b"{\"name\": ", b"0.000 ", b"matmul_", b"\n"];
        let mut v = Vec::with_capacity(n);
        while v.len() < n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if x % 5 == 0 {
                v.push((x >> 24) as u8);
            } else {
                v.extend_from_slice(words[(x >> 32) as usize % words.len()]);
            }
        }
        v.truncate(n);
        v
    }

    #[test]
    fn decodes_whole_streams_like_flate2() {
        for (n, level) in [(0usize, 6u32), (1, 6), (5000, 1), (200_000, 6), (300_000, 9), (100_000, 0)] {
            let data = sample(n, n as u64 + 7);
            let z = deflate(&data, level);
            let mut out = Vec::new();
            let stop = decode(&z, 0, None, &mut out, false).unwrap();
            assert!(matches!(stop, Stop::Final(_)));
            let bytes: Vec<u8> = out.iter().map(|&s| s as u8).collect();
            assert_eq!(bytes, data, "n {n} level {level}");
        }
    }

    /// Every block start the finder reports from any offset is a real one, decoding from there
    /// with markers resolved against the true history gives flate2's bytes, and the first real
    /// block after an offset is found.
    #[test]
    fn finder_and_markers_match_flate2_at_every_chunk_size() {
        let data = sample(600_000, 3);
        let z = deflate(&data, 6);
        let mut starts = vec![0u64];
        let mut out = Vec::new();
        let total_bits = z.len() as u64 * 8;
        for chunk in [4096u64, 10_000, 65_536, 100_000] {
            let mut from = chunk * 8;
            while from < total_bits {
                let Some(found) = find_block(&z, from, total_bits) else { break };
                // Decode from the start up to `found`: it must land exactly there.
                out.clear();
                let s = decode(&z, 0, Some(found), &mut out, false);
                assert_eq!(s, Ok(Stop::End(found)), "false positive at bit {found}");
                let before = out.len();
                // Decode from `found` with markers, resolve, compare.
                let mut spec = Vec::new();
                let stop = decode(&z, found, None, &mut spec, false).unwrap();
                assert!(matches!(stop, Stop::Final(_)));
                let window: Vec<u8> = out[before.saturating_sub(WINDOW)..].iter().map(|&s| s as u8).collect();
                let resolved: Vec<u8> =
                    spec.iter()
                        .map(|&s| {
                            if s >= MARKER {
                                window[usize::from(s - MARKER) - (WINDOW - window.len())]
                            } else {
                                s as u8
                            }
                        })
                        .collect();
                assert_eq!(&resolved[..], &data[before..]);
                starts.push(found);
                from = found + chunk * 8;
            }
        }
        assert!(starts.len() > 4, "blocks found: {}", starts.len());
    }

    #[test]
    fn prefix_and_terminator_frame_a_bit_range_for_zlib() {
        let data = sample(2_000_000, 11);
        let z = deflate(&data, 6);
        let found = find_block(&z, z.len() as u64 * 2, z.len() as u64 * 8).expect("a block in the second quarter");
        let end = find_block(&z, found + 1, z.len() as u64 * 8).expect("a block after it");
        let mut out = Vec::new();
        decode(&z, 0, Some(found), &mut out, false).unwrap();
        let head = out.len();
        decode(&z, found, Some(end), &mut out, false).unwrap();
        let mid = out.len();
        for shift in 0..8u64 {
            // Re-frame the same range as if it started `shift` bits later in its byte: put the
            // bits through a writer.
            let mut src = Bits::at(&z, found).unwrap();
            let mut left = end - found;
            let mut body = BitWriter::default();
            write_aligning_prefix(&mut body, shift as u32);
            assert_eq!(body.partial(), shift as u32, "the prefix takes r bits modulo 8");
            while left > 0 {
                let k = left.min(16) as u32;
                body.put(src.get(k).unwrap(), k);
                left -= u64::from(k);
            }
            write_terminator(&mut body);
            let dict: Vec<u8> = data[head - WINDOW..head].to_vec();
            let got = inflate_flate2(&body.bytes, &dict).expect("zlib accepts the framing");
            assert_eq!(&got[..got.len() - 8], &data[head..mid], "shift {shift}");
            assert_eq!(&got[got.len() - 8..], TERMINATOR);
        }
    }
}
