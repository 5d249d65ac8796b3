//! Support shared by the core's unit tests.

use core::marker::PhantomData;

use embedded_io::{BufRead, ErrorType, Read};

/// A byte source over a slice that hands out at most `chunk` bytes at a time, so a test can
/// feed a streaming layer in awkward pieces. `E` is the error type the layer under test
/// expects from its source (the reader itself never fails).
pub(crate) struct Chunked<'a, E> {
    data: &'a [u8],
    chunk: usize,
    error: PhantomData<E>,
}

impl<'a, E> Chunked<'a, E> {
    /// `data` in pieces of `chunk` bytes (at least 1).
    pub(crate) fn new(data: &'a [u8], chunk: usize) -> Self {
        Self { data, chunk: chunk.max(1), error: PhantomData }
    }
}

impl<E: embedded_io::Error> ErrorType for Chunked<'_, E> {
    type Error = E;
}

impl<E: embedded_io::Error> Read for Chunked<'_, E> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, E> {
        let n = buf.len().min(self.chunk).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

impl<E: embedded_io::Error> BufRead for Chunked<'_, E> {
    fn fill_buf(&mut self) -> Result<&[u8], E> {
        Ok(&self.data[..self.chunk.min(self.data.len())])
    }

    fn consume(&mut self, amt: usize) {
        self.data = &self.data[amt..];
    }
}
