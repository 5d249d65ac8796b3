//! A byte source that hands out at most `chunk` bytes at a time, for tests and benches that feed
//! the streaming layers in awkward pieces.
#![allow(dead_code)]

use embedded_io::{BufRead, ErrorType, Read};

/// A `BufRead` over a slice handing out at most `chunk` bytes at a time, on fixed boundaries
/// (multiples of `chunk`), as a ring buffer would.
pub struct Chunked<'a> {
    data: &'a [u8],
    pos: usize,
    chunk: usize,
}

impl<'a> Chunked<'a> {
    /// A reader over `data` in chunks of `chunk` bytes (at least 1).
    pub fn new(data: &'a [u8], chunk: usize) -> Self {
        Self { data, pos: 0, chunk: chunk.max(1) }
    }
}

impl ErrorType for Chunked<'_> {
    type Error = core::convert::Infallible;
}

impl Read for Chunked<'_> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Self::Error> {
        let chunk = self.fill_buf()?;
        let n = chunk.len().min(buf.len());
        buf[..n].copy_from_slice(&chunk[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Chunked<'_> {
    fn fill_buf(&mut self) -> Result<&[u8], Self::Error> {
        let end = ((self.pos / self.chunk + 1) * self.chunk).min(self.data.len());
        Ok(&self.data[self.pos..end])
    }

    fn consume(&mut self, amount: usize) {
        self.pos += amount;
        assert!(self.pos <= self.data.len());
    }
}
