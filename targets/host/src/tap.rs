//! A second look at the tar stream of a pass, for what the loader does not report: every
//! member's name, size and digest (debug data and producer metadata included), and the bytes
//! of a few small members it skips (`info.json`, whose `tool_version` names the compiler).
//!
//! The loader's pass reads the inflated tar stream once. [`Tapped`] sits between that stream
//! and the core's archive: each byte the archive is handed is also copied, in order, to a
//! thread that walks the same stream with the core's own [`TarReader`], so the tar rules (PAX,
//! GNU long names, dropped and skipped members) are the core's, written once. The copies go
//! through a channel that holds at most [`CHUNKS_IN_FLIGHT`] buffers, and each member is
//! digested as it streams past; nothing is held whole except the members asked for, up to
//! [`TapOptions::capture_limit`] bytes each. No second pass over the file, and memory stays
//! flat (the member list, when asked for, grows with the number of members, as `tar -t` does).
//!
//! The loader's own checks are untouched: the tap only watches. If the tap's walk fails (it
//! cannot unless the stream is damaged, and then the loader fails too), its log says so.
// The core's `Error` is `Copy` and carries its context inline; it is passed by value here as
// in the core.
#![allow(clippy::result_large_err)]

use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::JoinHandle;

use neff::archive::{Finish, InflatedSource};
use neff::digest::Digest64;
use neff::error::StreamError;
use neff::loader::{Manifest, Observer, PayloadReport, SubgraphReport};
use neff::manifest::{Entry, IoTensor};
use neff::tar::TarReader;
use neff::{Error, ErrorKind, Stage, Warning, WarningSink};

/// Buffers in the channel to the tap's thread at most (the pass waits when it is full).
pub const CHUNKS_IN_FLIGHT: usize = 4;

/// The producer metadata member whose `tool_version` names the compiler (spec §10.1).
pub const INFO_JSON: &str = "info.json";

/// What the tap keeps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TapOptions {
    /// Keep a [`MemberRecord`] (name, size, digest) for every member.
    pub list: bool,
    /// Members whose bytes are kept, by exact name.
    pub capture: Vec<String>,
    /// The most bytes kept of a captured member; a longer one is marked cut, not kept.
    pub capture_limit: u64,
}

impl TapOptions {
    /// Keeps `info.json` (up to 1 MiB: real ones are well under 1 KiB).
    pub fn producer() -> Self {
        TapOptions { list: false, capture: vec![INFO_JSON.to_owned()], capture_limit: 1 << 20 }
    }

    /// Keeps `info.json` and a record of every member.
    pub fn members() -> Self {
        TapOptions { list: true, ..Self::producer() }
    }
}

/// One regular member of the tar stream, as the core's tar walker yields it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberRecord {
    /// Its path (one leading `./` stripped, as the core does).
    pub name: String,
    /// Its size in bytes.
    pub size: u64,
    /// XXH3-64 of its bytes (what `xxhsum -H3` prints for the member as `neff unpack` writes it).
    pub digest: u64,
    /// Where its bytes start in the tar stream (what [`crate::index::MemberIndex`] seeks to).
    pub offset: u64,
}

/// A captured member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    /// The member's path.
    pub name: String,
    /// Its bytes, or `None` when it was longer than the capture limit.
    pub bytes: Option<Vec<u8>>,
}

/// What the tap saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemberLog {
    /// Every regular member in tar order (when [`TapOptions::list`] asked for them).
    pub members: Vec<MemberRecord>,
    /// The captured members, in tar order (a later copy of a name comes after an earlier one).
    pub captured: Vec<Captured>,
    /// Bytes of tar stream the tap walked.
    pub tar_bytes: u64,
    /// The tap's walk failed here (the loader then failed too, or the tap lost the stream).
    pub error: Option<Error>,
}

impl MemberLog {
    /// The bytes of the last copy of member `name`, if captured whole.
    pub fn captured(&self, name: &str) -> Option<&[u8]> {
        self.captured.iter().rev().find(|c| c.name == name).and_then(|c| c.bytes.as_deref())
    }

    /// `tool_version` of `info.json` (the compiler that wrote the NEFF, e.g.
    /// `2.23.6484.0+3b612583`), when the member was captured and holds that string.
    pub fn tool_version(&self) -> Option<String> {
        tool_version(self.captured(INFO_JSON)?)
    }
}

/// `tool_version` of an `info.json` document, if it is a JSON object with that string.
pub fn tool_version(info_json: &[u8]) -> Option<String> {
    let doc: serde_json::Value = serde_json::from_slice(info_json).ok()?;
    doc.get("tool_version")?.as_str().map(str::to_owned)
}

/// The receiving end of the channel, as the core's tar walker reads it.
struct ChannelReader {
    chunks: Receiver<Vec<u8>>,
    recycle: SyncSender<Vec<u8>>,
    current: Vec<u8>,
    pos: usize,
    ended: bool,
    read: u64,
}

impl embedded_io::ErrorType for ChannelReader {
    type Error = StreamError;
}

impl embedded_io::BufRead for ChannelReader {
    fn fill_buf(&mut self) -> Result<&[u8], StreamError> {
        while self.pos >= self.current.len() && !self.ended {
            let done = std::mem::take(&mut self.current);
            let _ = self.recycle.try_send(done);
            self.pos = 0;
            match self.chunks.recv() {
                Ok(chunk) => self.current = chunk,
                // The pass dropped its end: the stream is over.
                Err(_) => self.ended = true,
            }
        }
        Ok(self.current.get(self.pos..).unwrap_or(&[]))
    }

    fn consume(&mut self, amt: usize) {
        let amt = amt.min(self.current.len().saturating_sub(self.pos));
        self.pos += amt;
        self.read += amt as u64;
    }
}

impl embedded_io::Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, StreamError> {
        let available = embedded_io::BufRead::fill_buf(self)?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        embedded_io::BufRead::consume(self, n);
        Ok(n)
    }
}

/// The tap's thread: the core's tar walker over the copied stream.
fn walk_copy(mut reader: ChannelReader, options: &TapOptions) -> MemberLog {
    let mut log = MemberLog::default();
    let mut ignore = |_: &Warning| {};
    let mut tar: Box<TarReader<&mut ChannelReader>> = Box::new(TarReader::new(&mut reader));
    let walked = (|| -> Result<(), Error> {
        while let Some(mut member) = tar.next_member(&mut ignore)? {
            let name = member.name().to_owned();
            let size = member.size();
            let offset = member.data_offset();
            let capture = options.capture.contains(&name);
            let mut kept = (capture && size <= options.capture_limit).then(Vec::new);
            let mut digest = Digest64::new();
            loop {
                let chunk = embedded_io::BufRead::fill_buf(&mut member)?;
                if chunk.is_empty() {
                    break;
                }
                if options.list {
                    digest.update(chunk);
                }
                if let Some(k) = kept.as_mut() {
                    k.extend_from_slice(chunk);
                }
                let n = chunk.len();
                embedded_io::BufRead::consume(&mut member, n);
            }
            if capture {
                log.captured.push(Captured { name: name.clone(), bytes: kept });
            }
            if options.list {
                log.members.push(MemberRecord { name, size, digest: digest.finish(), offset });
            }
        }
        tar.drain(&mut ignore).map(drop)
    })();
    drop(tar);
    log.error = walked.err();
    // Whatever is left (after an error) is read and dropped, so the pass never waits on us.
    while embedded_io::BufRead::fill_buf(&mut reader).is_ok_and(|b| !b.is_empty()) {
        let n = reader.current.len() - reader.pos;
        embedded_io::BufRead::consume(&mut reader, n);
    }
    log.tar_bytes = reader.read;
    log
}

/// The sending end, kept by the pass; [`TapHandle::finish`] closes it and returns the log.
pub struct TapHandle {
    thread: Option<JoinHandle<MemberLog>>,
}

impl TapHandle {
    /// Waits for the tap's walk to end (the [`Tapped`] stream must be dropped first, which
    /// closes the channel) and returns what it saw.
    pub fn finish(mut self) -> MemberLog {
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(log)) => log,
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            None => MemberLog {
                error: Some(Error::at_file(Stage::Io, 0, ErrorKind::Io(embedded_io::ErrorKind::OutOfMemory))),
                ..MemberLog::default()
            },
        }
    }
}

/// A tar stream whose bytes are also copied to a tap's thread. With no tap it only passes
/// through.
pub struct Tapped<R> {
    inner: R,
    send: Option<SyncSender<Vec<u8>>>,
    recycled: Option<Receiver<Vec<u8>>>,
    /// Bytes consumed from `inner`.
    pos: u64,
    /// Bytes copied to the tap (ahead of `pos` by what `inner` showed and was not consumed yet).
    sent: u64,
}

impl<R> Tapped<R> {
    /// `inner` untouched: no copies.
    pub fn plain(inner: R) -> Self {
        Tapped { inner, send: None, recycled: None, pos: 0, sent: 0 }
    }

    /// `inner` with a tap keeping what `options` asks for.
    pub fn with_tap(inner: R, options: TapOptions) -> (Self, TapHandle) {
        let (send, chunks) = mpsc::sync_channel(CHUNKS_IN_FLIGHT);
        let (recycle, recycled) = mpsc::sync_channel(CHUNKS_IN_FLIGHT + 2);
        let reader = ChannelReader { chunks, recycle, current: Vec::new(), pos: 0, ended: false, read: 0 };
        let thread =
            std::thread::Builder::new().name("neff-tap".into()).spawn(move || walk_copy(reader, &options)).ok();
        let tapped = match thread {
            Some(_) => Tapped { inner, send: Some(send), recycled: Some(recycled), pos: 0, sent: 0 },
            None => Tapped::plain(inner),
        };
        (tapped, TapHandle { thread })
    }
}

/// Copies `bytes` to the tap's thread; stops copying once the thread is gone.
fn copy(send: &mut Option<SyncSender<Vec<u8>>>, recycled: Option<&Receiver<Vec<u8>>>, bytes: &[u8]) {
    let Some(to) = send.as_ref() else { return };
    let mut chunk = recycled.and_then(|r| r.try_recv().ok()).unwrap_or_default();
    chunk.clear();
    chunk.extend_from_slice(bytes);
    if to.send(chunk).is_err() {
        *send = None;
    }
}

impl<R: embedded_io::ErrorType> embedded_io::ErrorType for Tapped<R> {
    type Error = R::Error;
}

impl<R: embedded_io::BufRead> embedded_io::BufRead for Tapped<R> {
    #[inline]
    fn fill_buf(&mut self) -> Result<&[u8], R::Error> {
        let Tapped { inner, send, recycled, pos, sent } = self;
        let buf = inner.fill_buf()?;
        if send.is_some() {
            let end = *pos + buf.len() as u64;
            if end > *sent {
                // Copy what was not copied yet: `inner` may show the same bytes again.
                let from = usize::try_from(*sent - *pos).unwrap_or(usize::MAX).min(buf.len());
                copy(send, recycled.as_ref(), &buf[from..]);
                *sent = end;
            }
        }
        Ok(buf)
    }

    fn consume(&mut self, amt: usize) {
        self.inner.consume(amt);
        self.pos += amt as u64;
        self.sent = self.sent.max(self.pos);
    }
}

impl<R: embedded_io::BufRead> embedded_io::Read for Tapped<R> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, R::Error> {
        let available = embedded_io::BufRead::fill_buf(self)?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        embedded_io::BufRead::consume(self, n);
        Ok(n)
    }
}

impl<R: InflatedSource> InflatedSource for Tapped<R> {
    fn finish(&mut self, sink: &mut dyn WarningSink) -> Result<Finish, Error> {
        // The archive has read the tar stream to its end: close the channel.
        self.send = None;
        self.inner.finish(sink)
    }
}

/// Two observers as one: each call goes to both, in order.
pub struct Tee<'a, A: ?Sized, B: ?Sized>(pub &'a mut A, pub &'a mut B);

impl<A: Observer + ?Sized, B: Observer + ?Sized> Observer for Tee<'_, A, B> {
    fn manifest(&mut self, member: &str, manifest: Manifest<'_>) {
        self.0.manifest(member, manifest);
        self.1.manifest(member, manifest);
    }
    fn entry(&mut self, member: &str, entry: &Entry<'_>) {
        self.0.entry(member, entry);
        self.1.entry(member, entry);
    }
    fn io_tensor(&mut self, tensor: &IoTensor<'_>) {
        self.0.io_tensor(tensor);
        self.1.io_tensor(tensor);
    }
    fn payload(&mut self, payload: &PayloadReport<'_>) {
        self.0.payload(payload);
        self.1.payload(payload);
    }
    fn subgraph(&mut self, subgraph: &SubgraphReport<'_>) {
        self.0.subgraph(subgraph);
        self.1.subgraph(subgraph);
    }
}
