//! A bounded JSON writer into a caller's buffer: it writes what fits and counts every byte, so
//! a buffer that is too small is reported with the exact size needed (a C caller lends memory;
//! it needs that number to lend enough). Strings are escaped as RFC 8259 requires.
//!
//! Not serde-json-core (the core's report writer): its `to_slice` stops at the first byte that
//! does not fit and cannot say how many were needed. The text is compact (no whitespace
//! outside strings); a host that prints it indented re-indents it.

/// A JSON text being written into `buf`.
pub(super) struct Out<'a> {
    buf: &'a mut [u8],
    /// Bytes of the whole text so far, written or not (saturating: no text comes near).
    len: usize,
}

impl<'a> Out<'a> {
    /// A writer into `buf`.
    pub(super) fn new(buf: &'a mut [u8]) -> Self {
        Self { buf, len: 0 }
    }

    /// Bytes of the whole text (what a buffer needs to hold it).
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Whether the whole text fit.
    pub(super) fn fits(&self) -> bool {
        self.len <= self.buf.len()
    }

    /// Bytes as they are.
    pub(super) fn raw(&mut self, bytes: &[u8]) {
        let end = self.len.saturating_add(bytes.len());
        if let Some(dst) = self.buf.get_mut(self.len..end) {
            dst.copy_from_slice(bytes);
        }
        self.len = end;
    }

    /// A decimal number.
    pub(super) fn u64(&mut self, mut n: u64) {
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        loop {
            at = at.saturating_sub(1);
            if let Some(d) = digits.get_mut(at) {
                *d = b'0' + (n % 10) as u8;
            }
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.raw(digits.get(at..).unwrap_or(&[]));
    }

    /// `true` or `false`.
    pub(super) fn bool(&mut self, b: bool) {
        self.raw(if b { b"true" } else { b"false" });
    }

    /// `null`.
    pub(super) fn null(&mut self) {
        self.raw(b"null");
    }

    /// A string, quoted and escaped.
    pub(super) fn str(&mut self, s: &str) {
        self.raw(b"\"");
        self.escaped(s);
        self.raw(b"\"");
    }

    /// Several texts as one string.
    pub(super) fn str_parts(&mut self, parts: &[&str]) {
        self.raw(b"\"");
        for part in parts {
            self.escaped(part);
        }
        self.raw(b"\"");
    }

    /// Bytes as a string, invalid UTF-8 sequences as U+FFFD (as Rust's lossy conversion).
    pub(super) fn lossy(&mut self, bytes: &[u8]) {
        self.raw(b"\"");
        for chunk in bytes.utf8_chunks() {
            self.escaped(chunk.valid());
            if !chunk.invalid().is_empty() {
                self.raw("\u{FFFD}".as_bytes());
            }
        }
        self.raw(b"\"");
    }

    /// Bytes as lowercase hex digits, quoted.
    pub(super) fn hex(&mut self, bytes: &[u8]) {
        self.raw(b"\"");
        for &b in bytes {
            self.raw(&[nibble(b >> 4), nibble(b & 0xf)]);
        }
        self.raw(b"\"");
    }

    /// An optional value: `null` for `None`.
    pub(super) fn opt<T>(&mut self, v: Option<T>, write: impl FnOnce(&mut Self, T)) {
        match v {
            Some(v) => write(self, v),
            None => self.null(),
        }
    }

    /// `"key":`, after a comma unless `first`.
    pub(super) fn key(&mut self, first: bool, key: &str) {
        if !first {
            self.raw(b",");
        }
        self.str(key);
        self.raw(b":");
    }

    /// The text of `s` inside a string: `"` and `\` escaped, control characters as `\n`,
    /// `\t`, ... or `\u00XX`; everything else (non-ASCII included) as it is.
    fn escaped(&mut self, s: &str) {
        let bytes = s.as_bytes();
        let mut start = 0;
        for (i, &b) in bytes.iter().enumerate() {
            let short: &[u8] = match b {
                b'"' => b"\\\"",
                b'\\' => b"\\\\",
                b'\n' => b"\\n",
                b'\r' => b"\\r",
                b'\t' => b"\\t",
                0x08 => b"\\b",
                0x0c => b"\\f",
                0..=0x1f => b"",
                _ => continue,
            };
            self.raw(bytes.get(start..i).unwrap_or(&[]));
            if short.is_empty() {
                self.raw(&[b'\\', b'u', b'0', b'0', nibble(b >> 4), nibble(b & 0xf)]);
            } else {
                self.raw(short);
            }
            start = i.saturating_add(1);
        }
        self.raw(bytes.get(start..).unwrap_or(&[]));
    }
}

/// The lowercase hex digit of `n` (below 16).
fn nibble(n: u8) -> u8 {
    if n < 10 {
        b'0' + n
    } else {
        b'a' + (n - 10)
    }
}

#[cfg(test)]
mod tests {
    use super::Out;

    #[test]
    fn the_writer_escapes_and_counts_what_does_not_fit() {
        let mut buf = [0u8; 8];
        let mut out = Out::new(&mut buf);
        out.str("a\"b\\c\n\u{1}é");
        out.lossy(b"x\xffy");
        out.u64(u64::MAX);
        let whole = "\"a\\\"b\\\\c\\n\\u0001é\"\"x\u{FFFD}y\"18446744073709551615";
        assert_eq!(out.len(), whole.len());
        assert!(!out.fits());
        assert_eq!(Some(&buf[..]), whole.as_bytes().get(..8));
    }
}
