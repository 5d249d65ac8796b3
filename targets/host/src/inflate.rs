//! Inflating on the host: zlib-rs drives the core's gzip layer, in a thread beside the parsing.
//!
//! The core inflates with miniz_oxide, the firmware's path. On a host, [`open_archive`] opens
//! the core's [`Container`] (header gates, payload span, gzip member headers, CRC-32 and ISIZE,
//! further members, padding, `max_inflated`) with [`ZlibRs`], flate2's zlib-rs backend, as its
//! inflater, and gives the tar stream to an archive opened with
//! [`Archive::open_inflated`]. Every check and every error is the core's; only the inflater
//! differs.
//!
//! For a NEFF of [`THREAD_MIN_BYTES`] or more on a host with two cores or more, unless one
//! thread was asked for ([`Inflation::for_this_host`]), the container runs in its own thread
//! and hands the tar stream over in [`CHUNK`]-byte buffers through a channel that holds at
//! most [`CHUNKS_IN_FLIGHT`] of them ([`IN_FLIGHT_BYTES`]), so memory stays bounded while
//! inflating and walking the tar (JSON parsing, payload digests) overlap. The core itself stays single-threaded.
// The core's `Error` is `Copy` and carries its context inline (no heap on firmware); it is
// passed by value here as in the core.
#![allow(clippy::result_large_err)]

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::JoinHandle;

use flate2::{Decompress, FlushDecompress, Status};
use neff::archive::{Archive, Container, Finish, InflatedSource, OpenOptions, Relayed};
use neff::error::{StreamError, StreamKind};
use neff::gzip::{Inflate, InflateStatus, WINDOW_SIZE};
use neff::{Error, Warning, WarningSink};

use crate::source::InputSource;

pub mod deflate;
pub mod parallel;

use parallel::{HostInflater, ParallelInflate, Parallelism, PARALLEL_MIN_BYTES};

/// Bytes of tar stream per buffer handed from the inflating thread to the parsing one. Each
/// hand-off may wake a thread (a system call and a context switch), so buffers larger than the
/// 64 KiB read buffer keep that cost small next to inflating them.
pub const CHUNK: usize = 256 * 1024;
/// Bytes of tar stream the inflating thread may have handed over and not yet had read back: a
/// training NEFF interleaves megabytes of manifests (parsing slower than inflating) with
/// megabytes of payloads (inflating slower than digesting), so the inflater must be able to run
/// that far ahead for the two threads to overlap. With two buffers in flight, the real training
/// NEFF's `check` gained no wall time; with 8 MiB, a third (4 MiB gained less; 16 MiB no more,
/// for 2 MiB more peak RSS).
pub const IN_FLIGHT_BYTES: usize = 8 << 20;
/// Buffers the channel holds at most (the inflating thread waits when it is full); with the one
/// being filled and the one being read, two more exist. Buffers are made as needed, so a small
/// NEFF has only as many as its tar stream fills.
pub const CHUNKS_IN_FLIGHT: usize = IN_FLIGHT_BYTES / CHUNK;
/// The file size from which inflating gets a thread of its own when two threads or more may be
/// used: a smaller NEFF is over in milliseconds, where a second thread has little to overlap and
/// each hand-off may wait for the scheduler on a busy host. Training NEFFs of 1 to 4 MiB (most
/// of a compile cache's bytes) gain from it.
pub const THREAD_MIN_BYTES: u64 = 1 << 20;

/// zlib-rs (through flate2, raw deflate) as the core's inflater. It keeps its own 32 KiB
/// history, so it writes each step's output straight into the decoder's window.
pub struct ZlibRs {
    state: Decompress,
}

impl ZlibRs {
    /// A fresh raw-deflate inflater.
    pub fn new() -> Self {
        Self { state: Decompress::new(false) }
    }
}

impl Default for ZlibRs {
    fn default() -> Self {
        Self::new()
    }
}

/// [`InflateStatus::Invalid`]'s code for data zlib-rs refuses: miniz_oxide's `Failed`, which
/// is what miniz_oxide reports for invalid deflate data.
const REFUSED: i8 = -1;

impl Inflate for ZlibRs {
    const WRITES_ANY_BUFFER: bool = true;

    fn reset(&mut self) {
        self.state.reset(false);
    }

    fn inflate(
        &mut self,
        input: &[u8],
        window: &mut [u8; WINDOW_SIZE],
        out_pos: usize,
        more_input: bool,
    ) -> (InflateStatus, usize, usize) {
        self.inflate_to(input, window.get_mut(out_pos..).unwrap_or(&mut []), more_input)
    }

    /// Its history is its own: any buffer takes the output. A buffer larger than the 32 KiB
    /// window also spares zlib-rs copying all of it into its history (only the last 32 KiB).
    fn inflate_into(
        &mut self,
        input: &[u8],
        out: &mut [u8],
        more_input: bool,
    ) -> Option<(InflateStatus, usize, usize)> {
        Some(self.inflate_to(input, out, more_input))
    }
}

impl ZlibRs {
    /// One inflate call from `input` into `output`.
    fn inflate_to(&mut self, input: &[u8], output: &mut [u8], more_input: bool) -> (InflateStatus, usize, usize) {
        let (in_before, out_before) = (self.state.total_in(), self.state.total_out());
        let status = self.state.decompress(input, output, FlushDecompress::None);
        // Both deltas are bounded by the slices passed in.
        let n_in = (self.state.total_in() - in_before) as usize;
        let n_out = (self.state.total_out() - out_before) as usize;
        let status = match status {
            Ok(Status::StreamEnd) => InflateStatus::Done,
            Ok(Status::Ok) => InflateStatus::Progress,
            // No progress was possible: with the input at its end, the stream is cut short.
            Ok(Status::BufError) if !more_input => InflateStatus::Truncated,
            Ok(Status::BufError) => InflateStatus::Progress,
            Err(_) => InflateStatus::Invalid(REFUSED),
        };
        (status, n_in, n_out)
    }
}

/// Where the container runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inflation {
    /// In the thread that walks the tar (one core).
    Inline,
    /// In a thread of its own, beside the tar walk.
    Threaded,
    /// The first gzip member inflated in parallel by worker threads ([`parallel`]) when the
    /// input is a file (else by zlib-rs), the container in the thread of the tar walk.
    Parallel(Parallelism),
    /// miniz_oxide, keeping inflate checkpoints in the recorder for a member index
    /// ([`crate::index`]); in a thread of its own when `threaded`.
    Indexing {
        /// Where the checkpoints go.
        recorder: crate::index::Recorder,
        /// The container runs in its own thread (as [`Inflation::Threaded`]).
        threaded: bool,
    },
}

/// Inflating threads asked for (`--threads`); 0: the cores available.
static THREADS: AtomicUsize = AtomicUsize::new(0);
/// The payload size from which the parallel path is taken.
static PARALLEL_MIN: AtomicU64 = AtomicU64::new(PARALLEL_MIN_BYTES);
/// Compressed bytes per parallel chunk.
static PARALLEL_CHUNK: AtomicU64 = AtomicU64::new(parallel::CHUNK_BYTES);

/// Sets the inflating threads of this process (`--threads`: 1 is the serial path), and, for
/// tests, the payload size from which the parallel path is taken and its chunk size.
pub fn configure(threads: Option<usize>, parallel_min_bytes: Option<u64>, chunk: Option<u64>) {
    if let Some(t) = threads {
        THREADS.store(t, Ordering::Relaxed);
    }
    if let Some(m) = parallel_min_bytes {
        PARALLEL_MIN.store(m, Ordering::Relaxed);
    }
    if let Some(c) = chunk {
        PARALLEL_CHUNK.store(c.max(4096), Ordering::Relaxed);
    }
}

impl Inflation {
    /// [`Inflation::Parallel`] for a NEFF of at least the parallel threshold
    /// ([`PARALLEL_MIN_BYTES`]) when two threads or more were asked for ([`configure`]; without
    /// `--threads`, only if [`parallel::PARALLEL_BY_DEFAULT`], with the cores available, at most
    /// [`parallel::DEFAULT_MAX_THREADS`]); otherwise, with two threads or more and two cores or
    /// more, [`Inflation::Threaded`] for a NEFF of [`THREAD_MIN_BYTES`] or more; else
    /// [`Inflation::Inline`].
    pub fn for_this_host(file_size: u64) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let (threads, min, chunk) = (
            THREADS.load(Ordering::Relaxed),
            PARALLEL_MIN.load(Ordering::Relaxed),
            PARALLEL_CHUNK.load(Ordering::Relaxed),
        );
        Self::choose(threads, cores, file_size, min, chunk)
    }

    /// [`Inflation::for_this_host`] with `threads` asked for (0: the default), `cores`
    /// available, a parallel threshold of `parallel_min` bytes and parallel chunks of `chunk`.
    fn choose(threads: usize, cores: usize, file_size: u64, parallel_min: u64, chunk: u64) -> Self {
        let threads = match threads {
            0 if parallel::PARALLEL_BY_DEFAULT => cores.min(parallel::DEFAULT_MAX_THREADS),
            0 => 1,
            t => t,
        };
        if threads >= 2 && file_size >= parallel_min {
            return Inflation::Parallel(Parallelism { threads, chunk });
        }
        // `--threads 1` (and the several-file verbs, whose files run side by side) keeps one.
        if threads >= 2 && cores >= 2 && file_size >= THREAD_MIN_BYTES {
            Inflation::Threaded
        } else {
            Inflation::Inline
        }
    }
}

/// The container of a NEFF read from an [`InputSource`], inflating with zlib-rs (in parallel
/// or not).
pub type HostContainer = Container<InputSource, HostInflater>;

/// Opens `source` (a NEFF of `size` bytes): the core's header gates and first gzip member
/// header run here, then the tar stream is inflated as `inflation` says.
pub fn open_archive(
    source: InputSource,
    size: u64,
    opts: &OpenOptions,
    inflation: Inflation,
    sink: &mut (impl WarningSink + ?Sized),
) -> Result<Box<Archive<HostTar>>, Error> {
    // The parallel path reads the file by offset through a handle of its own; only files have one.
    let par = match (&inflation, &source) {
        (Inflation::Parallel(par), InputSource::File(f)) => f.file().try_clone().ok().map(|file| (*par, file)),
        _ => None,
    };
    let deferred = parallel::Deferred::default();
    let inflater = match (par, &inflation) {
        (Some((par, file)), _) => {
            HostInflater::Parallel(Box::new(ParallelInflate::new(file, size, opts, par, &deferred)))
        }
        (None, Inflation::Indexing { recorder, .. }) => {
            HostInflater::Indexing(Box::new(crate::index::IndexingInflate::new(recorder.clone())))
        }
        (None, _) => HostInflater::Serial(ZlibRs::new()),
    };
    let zlib_rs_here = matches!(inflater, HostInflater::Serial(_));
    let container: Box<HostContainer> = Box::new(Container::open(source, Some(size), opts, inflater, sink)?);
    deferred.set_data_size(container.header().data_size);
    let opened = container.opened();
    let tar = match inflation {
        // zlib-rs in this thread: inflated into a buffer larger than the window.
        Inflation::Inline if zlib_rs_here => HostTar::ReadAhead(Box::new(ReadAhead::new(container))),
        // Parallel: the workers inflate; the container (marker resolution, CRC-32) runs with the
        // tar walk, as a further thread would only compete for the same cores.
        Inflation::Inline | Inflation::Parallel(_) | Inflation::Indexing { threaded: false, .. } => {
            HostTar::Inline(container)
        }
        Inflation::Threaded | Inflation::Indexing { threaded: true, .. } => {
            HostTar::Threaded(Box::new(Relay::spawn(container)))
        }
    };
    Ok(Box::new(Archive::open_inflated(opened, tar)))
}

/// The tar stream of a [`HostContainer`], read in this thread or relayed from another.
pub enum HostTar {
    /// The container itself, read in place (its window).
    Inline(Box<HostContainer>),
    /// The container read in this thread into a buffer of [`CHUNK`] bytes.
    ReadAhead(Box<ReadAhead>),
    /// The container runs in another thread.
    Threaded(Box<Relay>),
}

/// A container whose inflater writes any buffer (zlib-rs), read in [`CHUNK`]-byte steps: each
/// inflate call may then write up to 256 KiB and keep only the last 32 KiB as its history,
/// where through the 32 KiB window it copied all of its output into its history.
pub struct ReadAhead {
    container: Box<HostContainer>,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
}

impl ReadAhead {
    fn new(container: Box<HostContainer>) -> Self {
        Self { container, buf: vec![0; CHUNK], pos: 0, len: 0 }
    }

    fn fill_buf(&mut self) -> Result<&[u8], StreamError> {
        use embedded_io::Read as _;
        if self.pos >= self.len {
            self.len = self.container.read(&mut self.buf)?;
            self.pos = 0;
        }
        Ok(self.buf.get(self.pos..self.len).unwrap_or(&[]))
    }

    /// The container's closing: it reads what is left of its stream itself (the bytes still
    /// in this buffer were taken from it already).
    fn finish(&mut self, sink: &mut dyn WarningSink) -> Result<Finish, Error> {
        self.container.finish(sink)
    }
}

impl embedded_io::ErrorType for HostTar {
    type Error = Relayed;
}

impl embedded_io::BufRead for HostTar {
    #[inline]
    fn fill_buf(&mut self) -> Result<&[u8], Relayed> {
        match self {
            HostTar::Inline(container) => container.fill_buf().map_err(Relayed),
            HostTar::ReadAhead(ahead) => ahead.fill_buf().map_err(Relayed),
            HostTar::Threaded(relay) => relay.fill_buf(),
        }
    }

    fn consume(&mut self, amt: usize) {
        match self {
            HostTar::Inline(container) => container.consume(amt),
            HostTar::ReadAhead(ahead) => ahead.pos = ahead.pos.saturating_add(amt).min(ahead.len),
            HostTar::Threaded(relay) => relay.pos = relay.pos.saturating_add(amt).min(relay.current.len()),
        }
    }
}

impl embedded_io::Read for HostTar {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Relayed> {
        let available = embedded_io::BufRead::fill_buf(self)?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        embedded_io::BufRead::consume(self, n);
        Ok(n)
    }
}

impl InflatedSource for HostTar {
    fn finish(&mut self, sink: &mut dyn WarningSink) -> Result<Finish, Error> {
        match self {
            HostTar::Inline(container) => container.finish(sink),
            HostTar::ReadAhead(ahead) => ahead.finish(sink),
            HostTar::Threaded(relay) => relay.finish(sink),
        }
    }
}

/// What the inflating thread sends, in stream order.
enum Message {
    /// The next bytes of the tar stream.
    Data(Vec<u8>),
    /// The container failed; nothing follows.
    Failed(StreamError),
    /// The stream ended: the container's closing result and the warnings it raised.
    End(Box<Result<Finish, Error>>, Vec<Warning>),
}

/// The receiving end of a container running in its own thread.
pub struct Relay {
    messages: Option<Receiver<Message>>,
    /// Emptied buffers go back to the inflating thread, so no new ones are allocated.
    recycle: SyncSender<Vec<u8>>,
    current: Vec<u8>,
    pos: usize,
    failed: Option<StreamError>,
    end: Option<(Result<Finish, Error>, Vec<Warning>)>,
    thread: Option<JoinHandle<()>>,
    /// Buffers received, and spares this side mapped for the inflating thread
    /// ([`Relay::map_a_spare`]).
    received: usize,
    spares: usize,
}

/// Bytes per page of memory mapped (touching a byte of each maps the page; where pages are
/// larger, some touches are redundant).
const PAGE: usize = 4096;

impl Relay {
    /// Starts `container` in a thread of its own.
    fn spawn(container: Box<HostContainer>) -> Self {
        let (send, messages) = mpsc::sync_channel(CHUNKS_IN_FLIGHT);
        // Every buffer in existence fits: those in flight, the one being filled, the one read.
        let (recycle, recycled) = mpsc::sync_channel(CHUNKS_IN_FLIGHT + 2);
        let thread = std::thread::Builder::new()
            .name("neff-inflate".into())
            .spawn(move || pump(container, &send, &recycled))
            .ok();
        let mut relay = Relay {
            messages: Some(messages),
            recycle,
            current: Vec::new(),
            pos: 0,
            failed: None,
            end: None,
            thread,
            received: 0,
            spares: 0,
        };
        if relay.thread.is_none() {
            relay.failed =
                Some(StreamError::at_file(neff::Stage::Io, 0, StreamKind::Io(embedded_io::ErrorKind::OutOfMemory)));
        }
        relay
    }

    fn fill_buf(&mut self) -> Result<&[u8], Relayed> {
        loop {
            if let Some(e) = self.failed {
                return Err(Relayed(e));
            }
            if self.pos < self.current.len() || self.end.is_some() {
                return Ok(self.current.get(self.pos..).unwrap_or(&[]));
            }
            let read = std::mem::take(&mut self.current);
            // The thread may have stopped already; the buffer is then simply dropped.
            let _ = self.recycle.try_send(read);
            self.pos = 0;
            match self.next_message() {
                Some(Message::Data(bytes)) => {
                    self.received = self.received.saturating_add(1);
                    self.current = bytes;
                }
                Some(Message::Failed(e)) => self.failed = Some(e),
                Some(Message::End(result, warnings)) => self.end = Some((*result, warnings)),
                None => self.thread_stopped(),
            }
        }
    }

    /// The inflating thread's next message (`None`: the channel closed). While none has come,
    /// this thread maps spare buffers for it ([`Relay::map_a_spare`]) rather than sleep.
    fn next_message(&mut self) -> Option<Message> {
        loop {
            match self.messages.as_ref()?.try_recv() {
                Ok(message) => return Some(message),
                Err(mpsc::TryRecvError::Disconnected) => return None,
                Err(mpsc::TryRecvError::Empty) => {}
            }
            if !self.map_a_spare() {
                return self.messages.as_ref()?.recv().ok();
            }
        }
    }

    /// Maps a new buffer's pages here and hands it to the inflating thread as a spare, while
    /// this side waits anyway: a fresh page costs its first writer a fault (3 to 5 us on a
    /// virtual machine), and the inflater, which needs a new buffer whenever the walk lags,
    /// is on the critical path while it inflates ahead of a walk idle in payloads (the real
    /// training NEFF's first 15 MB). No more spares than buffers received (a small NEFF gets
    /// few), nor than can be in existence at once. `false` when none was made.
    fn map_a_spare(&mut self) -> bool {
        if self.spares >= self.received.min(CHUNKS_IN_FLIGHT + 2) {
            return false;
        }
        // Written with 1, not 0: a zero written to memory the allocator gave zeroed is a store
        // the compiler may drop. What a spare holds does not matter: the inflater writes the
        // bytes it sends.
        let mut spare = vec![0u8; CHUNK];
        for page in spare.chunks_mut(PAGE) {
            if let Some(byte) = page.first_mut() {
                *byte = 1;
            }
        }
        self.spares += 1;
        // A full channel or a stopped thread: the spare is dropped.
        let _ = self.recycle.try_send(spare);
        true
    }

    /// The channel closed without an end: the thread panicked, which is a bug: pass it on.
    fn thread_stopped(&mut self) {
        if let Some(Err(panic)) = self.thread.take().map(JoinHandle::join) {
            std::panic::resume_unwind(panic);
        }
        self.failed =
            Some(StreamError::at_file(neff::Stage::Io, 0, StreamKind::Io(embedded_io::ErrorKind::BrokenPipe)));
    }

    fn finish(&mut self, sink: &mut dyn WarningSink) -> Result<Finish, Error> {
        // Read to the end, should the archive not have.
        loop {
            let n = self.fill_buf().map_err(|Relayed(e)| Error::from(e))?.len();
            if n == 0 {
                break;
            }
            self.pos += n;
        }
        let (result, warnings) = self.end.as_ref().ok_or_else(|| {
            Error::at_file(neff::Stage::Io, 0, neff::ErrorKind::Io(embedded_io::ErrorKind::BrokenPipe))
        })?;
        for w in warnings {
            sink.warn(w);
        }
        *result
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        // Closing the channel stops the thread at its next send; then wait for it.
        self.messages = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The inflating thread: fills [`CHUNK`]-byte buffers from the container and sends them, then
/// the end (or the failure). Returns early when the receiver is gone.
///
/// It reads (`embedded_io::Read`) rather than borrowing the container's window: zlib-rs then
/// inflates into the buffer itself, with no copy through the window, and keeps only the last
/// 32 KiB of each call's output as its history instead of all of it.
fn pump(mut container: Box<HostContainer>, send: &SyncSender<Message>, recycled: &Receiver<Vec<u8>>) {
    use embedded_io::Read as _;
    loop {
        // A buffer is CHUNK bytes long while filled, cut to the `filled` bytes it sends (a
        // full one sent back is not written again). A new one comes zeroed from the
        // allocator (fresh pages: no memset of its own, its pages mapped as zlib-rs writes).
        let mut chunk = recycled.try_recv().unwrap_or_else(|_| vec![0; CHUNK]);
        chunk.resize(CHUNK, 0);
        let mut filled = 0;
        let mut ended = false;
        while filled < CHUNK {
            match container.read(&mut chunk[filled..]) {
                Ok(0) => {
                    ended = true;
                    break;
                }
                Ok(n) => filled += n,
                Err(e) => {
                    chunk.truncate(filled);
                    if !chunk.is_empty() && send.send(Message::Data(chunk)).is_err() {
                        return;
                    }
                    let _ = send.send(Message::Failed(e));
                    return;
                }
            }
        }
        chunk.truncate(filled);
        if !chunk.is_empty() && send.send(Message::Data(chunk)).is_err() {
            return;
        }
        if ended {
            let mut warnings = Vec::new();
            let result = container.finish(&mut |w: &Warning| warnings.push(*w));
            let _ = send.send(Message::End(Box::new(result), warnings));
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use neff::error::IgnoreWarnings;

    const MIB: u64 = 1 << 20;

    #[test]
    fn a_training_sized_neff_gets_an_inflating_thread_unless_one_thread_is_asked_for() {
        let choose =
            |threads, cores, size| Inflation::choose(threads, cores, size, PARALLEL_MIN_BYTES, parallel::CHUNK_BYTES);
        // The default on two cores: a thread of its own from 1 MiB, the parallel path from 64 MiB.
        assert_eq!(choose(0, 2, 4 * MIB), Inflation::Threaded);
        assert_eq!(choose(0, 2, MIB), Inflation::Threaded);
        assert_eq!(choose(0, 2, MIB - 1), Inflation::Inline);
        assert!(matches!(choose(0, 2, 64 * MIB), Inflation::Parallel(Parallelism { threads: 2, .. })));
        // `--threads 1` (and each file of the several-file verbs) keeps one thread at any size.
        assert_eq!(choose(1, 2, 4 * MIB), Inflation::Inline);
        assert_eq!(choose(1, 2, 400 * MIB), Inflation::Inline);
        // One core: nothing to overlap with.
        assert_eq!(choose(0, 1, 4 * MIB), Inflation::Inline);
        assert_eq!(choose(2, 1, 4 * MIB), Inflation::Inline);
        // Asked-for threads on one core still take the parallel path for big files.
        assert!(matches!(choose(2, 1, 64 * MIB), Inflation::Parallel(Parallelism { threads: 2, .. })));
    }

    #[test]
    fn the_parallel_chunk_is_the_configured_one() {
        let chosen = Inflation::choose(0, 2, 64 * MIB, PARALLEL_MIN_BYTES, 4096);
        assert!(matches!(chosen, Inflation::Parallel(Parallelism { chunk: 4096, .. })));
        assert_eq!(Inflation::choose(0, 2, 4 * MIB, PARALLEL_MIN_BYTES, 4096), Inflation::Threaded);
    }

    /// Reads all of `tar` through `fill_buf` and `consume`, as the walk does.
    fn read_all(tar: &mut HostTar) -> Vec<u8> {
        use embedded_io::BufRead as _;
        let mut all = Vec::new();
        loop {
            let bytes = tar.fill_buf().expect("the stream reads");
            if bytes.is_empty() {
                return all;
            }
            let n = bytes.len();
            all.extend_from_slice(bytes);
            tar.consume(n);
        }
    }

    /// The container of `neff`, inflating with zlib-rs.
    fn container_of(neff: &'static [u8]) -> Box<HostContainer> {
        let source = InputSource::Sample(neff);
        let size = source.size();
        let inflater = HostInflater::Serial(ZlibRs::new());
        let opened = Container::open(source, Some(size), &OpenOptions::default(), inflater, &mut IgnoreWarnings);
        Box::new(opened.unwrap())
    }

    #[test]
    fn spares_follow_the_buffers_received_and_what_maps_them_never_reaches_the_reader() {
        // A tar stream of about 40 buffers: more than can be in flight at once.
        let payload = crate::sample::pseudo_random("relay spares", 10 << 20, None);
        let neff: &'static [u8] =
            crate::sample::SampleBuilder::new().add_member("sg00/big.bin", &payload).build().unwrap().leak();
        let mut relay = Relay::spawn(container_of(neff));
        let first = relay.fill_buf().unwrap().len();
        assert_eq!(relay.received, 1);
        // As many spares as buffers received, then no more.
        while relay.map_a_spare() {}
        assert_eq!(relay.spares, 1);
        relay.pos = first;
        let mut threaded = HostTar::Threaded(Box::new(relay));
        let read = read_all(&mut threaded);
        // The spare's pages hold what this side wrote to map them: only bytes the inflater
        // wrote may reach the reader.
        let mut inline = read_all(&mut HostTar::Inline(container_of(neff)));
        inline.drain(..first);
        assert!(read == inline, "the relayed stream differs");
        let HostTar::Threaded(relay) = &threaded else { unreachable!() };
        assert!(relay.received > CHUNKS_IN_FLIGHT + 2, "{} buffers", relay.received);
        assert!(relay.spares <= CHUNKS_IN_FLIGHT + 2, "{} spares", relay.spares);
    }

    #[test]
    fn a_small_stream_gets_no_more_spares_than_buffers() {
        let mut tar = HostTar::Threaded(Box::new(Relay::spawn(container_of(crate::SAMPLE_NEFF))));
        read_all(&mut tar);
        let HostTar::Threaded(relay) = &mut tar else { unreachable!() };
        assert_eq!(relay.received, 1, "the sample's tar is one buffer");
        assert!(relay.spares <= 1, "{} spares for one buffer", relay.spares);
        while relay.map_a_spare() {}
        assert_eq!(relay.spares, 1);
    }
}
