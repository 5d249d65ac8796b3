//! The byte source every verb reads through: an `embedded_io::BufRead` over a
//! `std::io::BufReader<File>` with a fixed-size buffer, so memory stays flat whatever the size
//! of the file. It never maps or slurps the file. It counts the bytes consumed, which drives
//! the progress bar and lets errors say how far the reader got.

use std::fmt;
use std::fs::File;
use std::io::{self, BufRead as _, BufReader, Read as _};
use std::path::Path;

use crate::error::CliError;
use crate::progress::Progress;

/// Size of the read buffer (the only buffer between the file and the core).
pub const READ_BUFFER: usize = 64 * 1024;

/// An I/O error from the host, carried through the core's `embedded_io` traits.
#[derive(Debug)]
pub struct HostIoError(pub io::Error);

impl fmt::Display for HostIoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl core::error::Error for HostIoError {}

impl embedded_io::Error for HostIoError {
    fn kind(&self) -> embedded_io::ErrorKind {
        use embedded_io::ErrorKind as K;
        match self.0.kind() {
            io::ErrorKind::NotFound => K::NotFound,
            io::ErrorKind::PermissionDenied => K::PermissionDenied,
            io::ErrorKind::Interrupted => K::Interrupted,
            io::ErrorKind::InvalidData => K::InvalidData,
            io::ErrorKind::InvalidInput => K::InvalidInput,
            io::ErrorKind::OutOfMemory => K::OutOfMemory,
            io::ErrorKind::TimedOut => K::TimedOut,
            _ => K::Other,
        }
    }
}

/// A file opened for streaming, with its size (for the header's `data_size` gate).
pub struct FileSource {
    reader: BufReader<File>,
    path: std::path::PathBuf,
    size: u64,
    consumed: u64,
    progress: Progress,
}

impl FileSource {
    /// Opens `path`; a missing, unreadable or non-regular path is an `io::Error`.
    pub fn open(path: &Path) -> io::Result<Self> {
        let file = File::open(path)?;
        let meta = file.metadata()?;
        if meta.is_dir() {
            return Err(io::Error::new(io::ErrorKind::IsADirectory, "is a directory"));
        }
        Ok(Self {
            reader: BufReader::with_capacity(READ_BUFFER, file),
            path: path.to_owned(),
            size: meta.len(),
            consumed: 0,
            progress: Progress::hidden(),
        })
    }

    /// Shows progress (bytes of the file consumed) on `progress`.
    pub fn with_progress(mut self, progress: Progress) -> Self {
        self.progress = progress;
        self.progress.set_length(self.size);
        self
    }

    /// The file's size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The open file (the parallel inflater reads it by offset through a handle of its own).
    pub fn file(&self) -> &File {
        self.reader.get_ref()
    }

    /// Bytes handed to the reader so far.
    pub fn consumed(&self) -> u64 {
        self.consumed
    }

    fn advance(&mut self, n: usize) {
        self.consumed += n as u64;
        self.progress.set_position(self.consumed);
    }
}

impl embedded_io::ErrorType for FileSource {
    type Error = HostIoError;
}

impl embedded_io::Read for FileSource {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Self::Error> {
        let n = self.reader.read(buf).map_err(HostIoError)?;
        self.advance(n);
        Ok(n)
    }
}

impl embedded_io::BufRead for FileSource {
    fn fill_buf(&mut self) -> Result<&[u8], Self::Error> {
        self.reader.fill_buf().map_err(HostIoError)
    }

    fn consume(&mut self, amt: usize) {
        self.reader.consume(amt);
        self.advance(amt);
    }
}

impl io::Read for FileSource {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.reader.read(buf)?;
        self.advance(n);
        Ok(n)
    }
}

impl io::BufRead for FileSource {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.reader.fill_buf()
    }

    fn consume(&mut self, amt: usize) {
        self.reader.consume(amt);
        self.advance(amt);
    }
}

/// An input that can be read again from its start.
#[derive(Debug, Clone)]
pub enum Again {
    /// A file, by its path.
    File(std::path::PathBuf),
    /// The built-in sample.
    Sample(&'static [u8]),
}

impl Again {
    /// The input, from its start.
    pub fn open(&self) -> io::Result<InputSource> {
        match self {
            Again::File(path) => FileSource::open(path).map(InputSource::File),
            Again::Sample(bytes) => Ok(InputSource::Sample(bytes)),
        }
    }
}

/// The input of a verb: a file, or the built-in sample NEFF embedded in the binary.
pub enum InputSource {
    /// A file, read through [`FileSource`].
    File(FileSource),
    /// The built-in sample (already in memory: `&[u8]` is its own buffer).
    Sample(&'static [u8]),
    /// Any buffered reader of a known size (the Python package's `bytes` and file objects).
    Reader(Box<dyn io::BufRead + Send>, u64),
}

impl InputSource {
    /// The input's size in bytes.
    pub fn size(&self) -> u64 {
        match self {
            InputSource::File(f) => f.size(),
            InputSource::Sample(b) => b.len() as u64,
            InputSource::Reader(_, size) => *size,
        }
    }

    /// How to read the input again from its start (a file by its path, the sample), for a
    /// second look after a refusal; `None` for a reader.
    pub fn again(&self) -> Option<Again> {
        match self {
            InputSource::File(f) => Some(Again::File(f.path.clone())),
            InputSource::Sample(b) => Some(Again::Sample(b)),
            InputSource::Reader(..) => None,
        }
    }
}

impl embedded_io::ErrorType for InputSource {
    type Error = HostIoError;
}

impl embedded_io::Read for InputSource {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Self::Error> {
        io::Read::read(self, buf).map_err(HostIoError)
    }
}

impl embedded_io::BufRead for InputSource {
    fn fill_buf(&mut self) -> Result<&[u8], Self::Error> {
        io::BufRead::fill_buf(self).map_err(HostIoError)
    }

    fn consume(&mut self, amt: usize) {
        io::BufRead::consume(self, amt)
    }
}

impl io::Read for InputSource {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            InputSource::File(f) => io::Read::read(f, buf),
            InputSource::Sample(b) => io::Read::read(b, buf),
            InputSource::Reader(r, _) => r.read(buf),
        }
    }
}

impl io::BufRead for InputSource {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        match self {
            InputSource::File(f) => io::BufRead::fill_buf(f),
            InputSource::Sample(b) => io::BufRead::fill_buf(b),
            InputSource::Reader(r, _) => r.fill_buf(),
        }
    }

    fn consume(&mut self, amt: usize) {
        match self {
            InputSource::File(f) => io::BufRead::consume(f, amt),
            InputSource::Sample(b) => io::BufRead::consume(b, amt),
            InputSource::Reader(r, _) => r.consume(amt),
        }
    }
}
/// Opens FILE for streaming (exit 2 when it cannot be opened), with a progress bar labelled
/// `what` when the file is big and stderr is a terminal.
pub fn open_input(path: &Path, what: &str) -> Result<InputSource, CliError> {
    let source = FileSource::open(path).map_err(|e| CliError::path(path, &e))?;
    let progress = Progress::for_bytes(what, source.size());
    Ok(InputSource::File(source.with_progress(progress)))
}

/// Opens FILE for streaming (exit 2 when it cannot be opened) with no bar of its own: one of
/// many files read at once, whose count [`crate::progress::ItemProgress`] shows instead.
pub fn open_input_quiet(path: &Path) -> Result<InputSource, CliError> {
    Ok(InputSource::File(FileSource::open(path).map_err(|e| CliError::path(path, &e))?))
}

/// FILE, or the built-in sample NEFF when FILE is absent. Returns the source and a label.
pub fn open_input_or_sample(path: Option<&Path>, what: &str) -> Result<(InputSource, String), CliError> {
    match path {
        Some(p) => Ok((open_input(p, what)?, p.display().to_string())),
        None => Ok((InputSource::Sample(crate::SAMPLE_NEFF), "built-in sample NEFF".into())),
    }
}
