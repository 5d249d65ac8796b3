//! Parallel inflate of the first gzip member of a NEFF read from a file.
//!
//! The deflate data is cut into chunks of [`Parallelism::chunk`] compressed bytes. A worker
//! thread takes chunk k: it finds the first dynamic-Huffman block start at or after the chunk's
//! offset ([`deflate::find_block`]: header, code-length code and both codes valid by zlib's
//! rules), and the first one after the next chunk's offset, where it must stop. It decodes from
//! the start with [`deflate::decode`], writing markers for bytes of the unknown 32 KiB before
//! it, until the last 32 KiB it wrote hold no marker; from that block boundary on, zlib-rs
//! inflates the rest with those 32 KiB as its dictionary, framed so that it starts on a byte
//! (empty blocks before) and must end exactly at the next chunk's start (a final block with
//! known output after). The inflater here, driven by the core's `Container` as any other,
//! takes the chunks in order, resolves their markers against the previous 32 KiB and hands the
//! bytes on; the core checks CRC-32, ISIZE and everything after the member as always.
//!
//! Memory: zlib-rs's output comes in pieces of up to 1 MiB, handed on while the chunk is still
//! being inflated (all but the last 64 KiB or more, kept until the chunk's end is checked) and
//! then reused; a worker starts chunk k only once fewer than `threads` chunks are taken and not
//! yet handed on whole, so at 2 threads about two chunks' output (some 15 MiB each) is alive.
//!
//! Anything unexpected (no block found, a chunk that does not end where the next starts,
//! invalid data, a marker before the stream's start, a chunk too big) voids the speculation:
//! the inflater then replays the serial path — a `Container` with zlib-rs on the same file,
//! fed the same reads — from the start, skips what was already handed on, and follows it, so
//! any error is the serial path's error at the same offset. To make that possible, the input
//! consumption reported to the core lags behind: up to the start of the chunk being handed on.
// The core's `Error` is `Copy` and large; passed by value as in the core.
#![allow(clippy::result_large_err)]

use std::collections::{BTreeMap, VecDeque};
use std::fs::File;
use std::io::{self, BufReader};
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread::JoinHandle;

use flate2::{Decompress, FlushDecompress, Status};
use neff::archive::{Container, OpenOptions};
use neff::error::StreamKind;
use neff::gzip::{GzipError, Inflate, InflateStatus, WINDOW_SIZE};
use neff::header::HEADER_SIZE;

use super::deflate::{self, BitWriter, Invalid, Stop, MARKER, TERMINATOR, WINDOW};
use super::ZlibRs;
use crate::source::{InputSource, READ_BUFFER};

/// Compressed bytes per chunk: each inflates to some 15 MiB on NEFFs, and the chunks in flight
/// set the memory. Smaller chunks spend more of their time before their window is known (in
/// the slower speculative decoder): 1 MiB cost 20% more CPU on the 400 MB NEFF, 4 MiB no less
/// than 2 MiB.
pub const CHUNK_BYTES: u64 = 2 << 20;
/// The file size from which the parallel path is taken: below it, threads cost more than they
/// save (measured: see `docs/benchmarks.md`, "Parallel inflate").
pub const PARALLEL_MIN_BYTES: u64 = 64 << 20;
/// Whether a big file ([`PARALLEL_MIN_BYTES`] or more) is inflated in parallel without
/// `--threads` when the host has two cores or more: on, with [`DEFAULT_MAX_THREADS`] workers
/// (`--threads 1` keeps one thread; `docs/benchmarks.md` has the figures).
pub const PARALLEL_BY_DEFAULT: bool = true;
/// Workers when `--threads` is not given (and [`PARALLEL_BY_DEFAULT`]): each holds a chunk's
/// output, so memory grows with them (two keep a load under 64 MiB; four took 99 MiB), and
/// the tar walk in its own thread bounds the gain anyway.
pub const DEFAULT_MAX_THREADS: usize = 2;
/// A chunk whose output grows past this is given up (the serial replay streams it instead).
const CHUNK_OUTPUT_MAX: usize = 48 << 20;
/// Bytes of chunk output per piece, at most: the consumer hands a chunk on piece by piece
/// while its worker still inflates it, and gives each piece back for reuse, so a chunk being
/// handed on holds only what is not handed on yet.
const PIECE_BYTES: usize = 1 << 20;
/// Output a worker keeps back until its chunk's end is checked: if the next chunk's start was
/// no block boundary, what zlib-rs made of the terminator's 75 bits (at most 258 bytes a bit)
/// is not the stream's, and must not be handed on.
const HOLD_BYTES: usize = 64 << 10;

/// How to inflate in parallel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parallelism {
    /// Worker threads.
    pub threads: usize,
    /// Compressed bytes per chunk.
    pub chunk: u64,
}

impl Parallelism {
    /// `threads` workers with [`CHUNK_BYTES`] chunks.
    pub fn new(threads: usize) -> Self {
        Self { threads, chunk: CHUNK_BYTES }
    }
}

/// Chunks handed on by the parallel path, and replays of the serial path, in this process
/// (tests check that the parallel path was taken).
static CHUNKS_HANDED: AtomicU64 = AtomicU64::new(0);
static REPLAYS: AtomicU64 = AtomicU64::new(0);

/// `(chunks handed on, serial replays)` so far in this process.
pub fn stats() -> (u64, u64) {
    (CHUNKS_HANDED.load(Ordering::Relaxed), REPLAYS.load(Ordering::Relaxed))
}

/// The core's inflater on a host: zlib-rs, or the parallel path (which falls back to zlib-rs).
pub enum HostInflater {
    /// zlib-rs, one call at a time.
    Serial(ZlibRs),
    /// The parallel path for the first member.
    Parallel(Box<ParallelInflate>),
    /// miniz_oxide, keeping checkpoints for a member index ([`crate::index`]).
    Indexing(Box<crate::index::IndexingInflate>),
}

impl Inflate for HostInflater {
    const WRITES_ANY_BUFFER: bool = true;

    fn reset(&mut self) {
        match self {
            HostInflater::Serial(z) => z.reset(),
            HostInflater::Parallel(p) => p.reset(),
            HostInflater::Indexing(i) => i.reset(),
        }
    }

    fn inflate(
        &mut self,
        input: &[u8],
        window: &mut [u8; WINDOW_SIZE],
        out_pos: usize,
        more_input: bool,
    ) -> (InflateStatus, usize, usize) {
        match self {
            HostInflater::Serial(z) => z.inflate(input, window, out_pos, more_input),
            HostInflater::Parallel(p) => p.inflate(input, window, out_pos, more_input),
            HostInflater::Indexing(i) => i.inflate(input, window, out_pos, more_input),
        }
    }

    /// zlib-rs writes a reader's buffer directly; the parallel path hands over its workers'
    /// output and the indexing path keeps miniz_oxide's history, both through the window.
    fn inflate_into(
        &mut self,
        input: &[u8],
        out: &mut [u8],
        more_input: bool,
    ) -> Option<(InflateStatus, usize, usize)> {
        match self {
            HostInflater::Serial(z) => z.inflate_into(input, out, more_input),
            HostInflater::Parallel(_) | HostInflater::Indexing(_) => None,
        }
    }
}

/// The header's `data_size`, known once the core has read the header (after the inflater was
/// made).
#[derive(Default)]
pub struct Deferred(Arc<OnceLock<u64>>);

impl Deferred {
    /// Records the header's `data_size`.
    pub fn set_data_size(&self, data_size: u64) {
        let _ = self.0.set(data_size);
    }
}

/// What the parallel path starts from.
struct Armed {
    file: File,
    file_size: u64,
    opts: OpenOptions,
    par: Parallelism,
    data_size: Arc<OnceLock<u64>>,
}

impl Armed {
    /// Where the deflate data lies, or `None` when the gzip member header is not a plain one.
    fn setup(&self) -> Option<Setup> {
        let payload = HEADER_SIZE as u64;
        let data_size = *self.data_size.get()?;
        let payload_end = payload.checked_add(data_size)?.min(self.file_size);
        let start = payload.checked_add(gzip_header_len(&self.file, payload)?)?;
        let len = payload_end.checked_sub(start)?;
        let file = Arc::new(self.file.try_clone().ok()?);
        Some(Setup { file, start, len, file_size: self.file_size, opts: self.opts, par: self.par })
    }
}

/// The file and where its deflate data lies.
#[derive(Clone)]
struct Setup {
    file: Arc<File>,
    /// File offset of the first deflate byte.
    start: u64,
    /// Deflate bytes available: up to the payload's end.
    len: u64,
    /// File offset of the payload's end (the serial path's input ends there).
    file_size: u64,
    opts: OpenOptions,
    par: Parallelism,
}

enum Mode {
    /// Not started: waits for the first call to check that the input is where it was expected.
    Armed(Armed),
    Pipeline(Box<Pipeline>),
    Shadow(Box<Shadow>),
    /// zlib-rs itself (members after the first, or the parallel path declined).
    Serial,
}

/// The parallel path as the core's inflater.
pub struct ParallelInflate {
    mode: Mode,
    serial: ZlibRs,
    resets: u32,
    /// Input bytes reported consumed in this member.
    rel_in: u64,
    /// Output bytes handed on in this member.
    out: u64,
}

impl ParallelInflate {
    /// An inflater for the NEFF in `file` (`file_size` bytes, opened with `opts`); the
    /// header's `data_size` comes through `deferred` once the core has read the header.
    pub fn new(file: File, file_size: u64, opts: &OpenOptions, par: Parallelism, deferred: &Deferred) -> Self {
        let mode = Mode::Armed(Armed { file, file_size, opts: *opts, par, data_size: Arc::clone(&deferred.0) });
        Self { mode, serial: ZlibRs::new(), resets: 0, rel_in: 0, out: 0 }
    }

    fn reset(&mut self) {
        self.resets += 1;
        self.rel_in = 0;
        self.out = 0;
        if self.resets > 1 {
            // Members after the first: zlib-rs on the core's input.
            self.mode = Mode::Serial;
        }
        self.serial.reset();
    }

    fn inflate(
        &mut self,
        input: &[u8],
        window: &mut [u8; WINDOW_SIZE],
        out_pos: usize,
        more_input: bool,
    ) -> (InflateStatus, usize, usize) {
        if let Mode::Armed(armed) = &self.mode {
            self.mode = match armed.setup().and_then(|setup| start_pipeline(setup, input)) {
                Some(p) => Mode::Pipeline(Box::new(p)),
                None => Mode::Serial,
            };
        }
        loop {
            let space = window.get_mut(out_pos..).unwrap_or(&mut []);
            match &mut self.mode {
                Mode::Armed(_) | Mode::Serial => return self.serial.inflate(input, window, out_pos, more_input),
                Mode::Pipeline(p) => match p.step(input, space, &mut self.rel_in, &mut self.out) {
                    Ok(r) => return r,
                    Err(Invalid) => {
                        self.mode = match Shadow::open(&p.setup, self.out) {
                            Some(s) => {
                                REPLAYS.fetch_add(1, Ordering::Relaxed);
                                Mode::Shadow(Box::new(s))
                            }
                            // The file cannot be read again: report invalid data.
                            None => return (InflateStatus::Invalid(-1), 0, 0),
                        };
                    }
                },
                Mode::Shadow(s) => return s.step(input, space, &mut self.rel_in, &mut self.out),
            }
        }
    }
}

/// Length of the gzip member header at `at`, or `None` if it is not a plain one.
fn gzip_header_len(file: &File, at: u64) -> Option<u64> {
    let mut head = [0u8; 10];
    file.read_exact_at(&mut head, at).ok()?;
    if head[0] != 0x1f || head[1] != 0x8b || head[2] != 8 {
        return None;
    }
    let flags = head[3];
    let mut pos = at + 10;
    let mut byte = [0u8; 2];
    if flags & 4 != 0 {
        file.read_exact_at(&mut byte, pos).ok()?;
        pos += 2 + u64::from(u16::from_le_bytes(byte));
    }
    for flag in [8u8, 16] {
        if flags & flag != 0 {
            loop {
                file.read_exact_at(&mut byte[..1], pos).ok()?;
                pos += 1;
                if byte[0] == 0 {
                    break;
                }
            }
        }
    }
    if flags & 2 != 0 {
        pos += 2;
    }
    Some(pos - at)
}

fn read_at(file: &File, at: u64, len: usize) -> io::Result<Vec<u8>> {
    let mut v = vec![0u8; len];
    file.read_exact_at(&mut v, at)?;
    Ok(v)
}

fn start_pipeline(setup: Setup, input: &[u8]) -> Option<Pipeline> {
    // The core must be at the deflate start we computed: compare what it holds.
    let n = input.len().min(256);
    if n == 0 || read_at(&setup.file, setup.start, n).ok()? != input[..n] {
        return None;
    }
    let threads = setup.par.threads.max(1);
    let chunk = setup.par.chunk.max(64);
    let shared = Arc::new(Shared {
        file: Arc::clone(&setup.file),
        start: setup.start,
        len: setup.len,
        chunk,
        piece: usize::try_from(chunk.saturating_mul(4)).unwrap_or(PIECE_BYTES).clamp(4096, PIECE_BYTES),
        next_job: AtomicU64::new(0),
        released: Mutex::new(0),
        cv: Condvar::new(),
        stop: AtomicBool::new(false),
        ahead: threads as u64,
        found: Mutex::new(BTreeMap::new()),
        pieces: Mutex::new(Vec::new()),
        symbols: Mutex::new(Vec::new()),
        pieces_made: AtomicU64::new(0),
        most_ahead: AtomicU64::new(0),
    });
    let (send, results) = mpsc::channel();
    let mut workers = Vec::new();
    for i in 0..threads {
        let mine = Arc::clone(&shared);
        let send = send.clone();
        let spawned = std::thread::Builder::new().name(format!("neff-inflate-{i}")).spawn(move || work(&mine, &send));
        match spawned {
            Ok(w) => workers.push(w),
            Err(_) => {
                // No thread to be had: stop those started (they may wait for the condition),
                // and inflate serially.
                shared.stop_all();
                for w in workers {
                    let _ = w.join();
                }
                return None;
            }
        }
    }
    Some(Pipeline {
        setup,
        shared,
        workers,
        results: Some(results),
        pending: BTreeMap::new(),
        next: 0,
        in_chunk: false,
        expect: Some(0),
        history: Vec::with_capacity(WINDOW),
        // Bytes map to themselves once and for all; each chunk rewrites only the markers' part.
        table: (0..1u32 << 16).map(|i| u8::try_from(i).unwrap_or(0)).collect(),
        current: Vec::new(),
        current_is_piece: false,
        resolved: Vec::new(),
        pos: 0,
        target_in: 0,
        ended: None,
    })
}

struct Shared {
    file: Arc<File>,
    start: u64,
    len: u64,
    chunk: u64,
    /// Capacity of an output piece.
    piece: usize,
    next_job: AtomicU64,
    /// Chunks handed on whole so far; a worker starts chunk k only when `k < released +
    /// ahead`, so at most `ahead` chunks hold output at a time (the one handed on included).
    released: Mutex<u64>,
    cv: Condvar,
    stop: AtomicBool,
    ahead: u64,
    /// The block start found from each chunk's offset: a worker's end is the next one's start.
    found: Mutex<BTreeMap<u64, Option<u64>>>,
    /// Output pieces handed back for reuse. None is freed before the pipeline ends: a freed
    /// buffer raises glibc's mmap threshold and its memory stays in the worker's arena, and a
    /// fresh one costs page faults; so the pieces made are the most ever alive at once.
    pieces: Mutex<Vec<Vec<u8>>>,
    /// Speculative parts' buffers handed back for reuse (the same reasons).
    symbols: Mutex<Vec<Vec<u16>>>,
    /// Pieces allocated (tests check that they are reused).
    pieces_made: AtomicU64,
    /// The most chunks a worker saw taken and not yet released, its own included (tests check
    /// the bound).
    most_ahead: AtomicU64,
}

impl Shared {
    /// [`find_from`] the offset of chunk `k`, computed once.
    fn start_of(&self, k: u64) -> Result<Option<u64>, Invalid> {
        if let Some(&f) = self.found.lock().map_err(|_| Invalid)?.get(&k) {
            return Ok(f);
        }
        let f = find_from(self, k * self.chunk * 8)?;
        self.found.lock().map_err(|_| Invalid)?.insert(k, f);
        Ok(f)
    }

    /// Stops the workers, waking those that wait for a chunk to be released. The flag is set
    /// under the lock they wait with: a worker between its check of the flag and its wait would
    /// otherwise miss the wake-up, wait for ever, and never be joined.
    fn stop_all(&self) {
        let released = self.released.lock();
        self.stop.store(true, Ordering::Relaxed);
        drop(released);
        self.cv.notify_all();
    }

    /// An empty piece: a reused one, else a new one of the piece's capacity (exactly: it is
    /// never grown).
    fn take_piece(&self) -> Vec<u8> {
        if let Some(mut p) = self.pieces.lock().ok().and_then(|mut p| p.pop()) {
            p.clear();
            return p;
        }
        self.pieces_made.fetch_add(1, Ordering::Relaxed);
        Vec::with_capacity(self.piece)
    }

    fn give_piece(&self, piece: Vec<u8>) {
        if let Ok(mut pieces) = self.pieces.lock() {
            pieces.push(piece);
        }
    }
}

/// What a worker sends about its chunk, in this order: the head, the output of zlib-rs in
/// pieces, the tail (or, at any point, `Err`).
enum Part {
    /// Where the chunk starts (`None`: no block start at or after the chunk's offset), and its
    /// speculative part: bytes and markers.
    Head { start: Option<u64>, symbols: Vec<u16> },
    /// A piece of the rest, inflated by zlib-rs.
    Piece(Vec<u8>),
    /// The chunk ended where the next starts (`None`: it holds the final block, and
    /// `final_len` is the deflate data's length in bytes).
    Tail { end: Option<u64>, final_len: Option<u64> },
}

type Sent = (u64, Result<Part, Invalid>);

/// A worker's buffers, kept from chunk to chunk.
#[derive(Default)]
struct Scratch {
    data: Vec<u8>,
    framed: Vec<u8>,
    dict: Vec<u8>,
}

fn work(shared: &Shared, send: &Sender<Sent>) {
    let mut scratch = Scratch::default();
    loop {
        let k = shared.next_job.fetch_add(1, Ordering::Relaxed);
        if shared.stop.load(Ordering::Relaxed) || k.saturating_mul(shared.chunk) >= shared.len {
            return;
        }
        {
            let Ok(mut released) = shared.released.lock() else { return };
            while k >= *released + shared.ahead && !shared.stop.load(Ordering::Relaxed) {
                let Ok(r) = shared.cv.wait(released) else { return };
                released = r;
            }
            shared.most_ahead.fetch_max(k + 1 - (*released).min(k), Ordering::Relaxed);
        }
        if shared.stop.load(Ordering::Relaxed) {
            return;
        }
        let mut closed = false;
        let mut out = |part: Part| {
            closed = closed || send.send((k, Ok(part))).is_err();
            !closed
        };
        let result = chunk(shared, k, &mut scratch, &mut out);
        if closed || (result.is_err() && send.send((k, Err(Invalid))).is_err()) {
            return;
        }
    }
}

/// The first block start at or after bit `from` (of the deflate data), reading as needed.
fn find_from(shared: &Shared, from: u64) -> Result<Option<u64>, Invalid> {
    // Bits a dynamic header can take, with margin: a candidate this far from the end of what
    // was read is judged on complete data, so every worker judges it alike.
    const MARGIN: u64 = 1024;
    const STEP: u64 = 256 * 1024;
    let mut lo = from / 8;
    while lo < shared.len {
        let hi = (lo + STEP + MARGIN).min(shared.len);
        let data = read_at(&shared.file, shared.start + lo, (hi - lo) as usize).map_err(|_| Invalid)?;
        let until = if hi == shared.len { hi * 8 } else { (hi - MARGIN) * 8 };
        let first = from.max(lo * 8) - lo * 8;
        if let Some(b) = deflate::find_block(&data, first, until - lo * 8) {
            return Ok(Some(lo * 8 + b));
        }
        if hi == shared.len {
            break;
        }
        lo = hi - MARGIN;
    }
    Ok(None)
}

/// Decodes chunk `k`, giving its parts to `out` (which returns `false` once nobody listens:
/// the chunk is then given up).
fn chunk(shared: &Shared, k: u64, scratch: &mut Scratch, out: &mut dyn FnMut(Part) -> bool) -> Result<(), Invalid> {
    let c = shared.chunk;
    let start = if k == 0 { Some(0) } else { shared.start_of(k)? };
    let Some(start) = start else {
        out(Part::Head { start: None, symbols: Vec::new() });
        return Ok(());
    };
    let next = (k + 1) * c * 8;
    if start >= next {
        if out(Part::Head { start: Some(start), symbols: Vec::new() }) {
            out(Part::Tail { end: Some(start), final_len: None });
        }
        return Ok(());
    }
    let end = shared.start_of(k + 1)?;
    // A chunk much bigger than asked (no block start found for long) is left to the replay.
    let stop_byte = end.map_or(shared.len, |e| e.div_ceil(8));
    let base = start / 8;
    if stop_byte - base > 32 * c + 4096 {
        return Err(Invalid);
    }
    let data = &mut scratch.data;
    data.resize((stop_byte - base) as usize, 0);
    shared.file.read_exact_at(data, shared.start + base).map_err(|_| Invalid)?;
    let local = |bit: u64| bit - base * 8;
    let mut symbols =
        shared.symbols.lock().ok().and_then(|mut s| s.pop()).unwrap_or_else(|| Vec::with_capacity(1 << 20));
    symbols.clear();
    let mut clean = start;
    if k > 0 {
        match deflate::decode(data, local(start), end.map(local), &mut symbols, true)? {
            Stop::Clean(b) => clean = b + base * 8,
            Stop::End(_) => {
                if out(Part::Head { start: Some(start), symbols }) {
                    out(Part::Tail { end, final_len: None });
                }
                return Ok(());
            }
            Stop::Final(b) => {
                if end.is_some() {
                    return Err(Invalid);
                }
                let final_len = Some((b + base * 8).div_ceil(8));
                if out(Part::Head { start: Some(start), symbols }) {
                    out(Part::Tail { end: None, final_len });
                }
                return Ok(());
            }
        }
        if symbols.len() > CHUNK_OUTPUT_MAX / 2 {
            return Err(Invalid);
        }
    }
    // Frame [clean, end) for zlib-rs: empty blocks so the data starts on a byte boundary, then
    // the data, then (unless the stream ends in it) the terminator at `end`.
    let mut w = BitWriter::default();
    w.bytes = std::mem::take(&mut scratch.framed);
    w.bytes.clear();
    let (q, r) = ((local(clean) / 8) as usize, (local(clean) % 8) as u32);
    deflate::write_aligning_prefix(&mut w, r);
    let mut from = q;
    if r > 0 {
        w.put(u32::from(data[q] >> r), 8 - r);
        from = q + 1;
    }
    let framed_at = w.bytes.len();
    match end {
        Some(e) => {
            let (p, t) = ((local(e) / 8) as usize, (local(e) % 8) as u32);
            if p < from {
                // The clean point is in the last byte: not worth framing; the replay serves.
                return Err(Invalid);
            }
            w.bytes.extend_from_slice(&data[from..p]);
            if t > 0 {
                w.put(u32::from(data[p]) & ((1 << t) - 1), t);
            }
            deflate::write_terminator(&mut w);
        }
        None => w.bytes.extend_from_slice(&data[from..]),
    }
    let mut z = Decompress::new(false);
    if !symbols.is_empty() {
        let dict = &mut scratch.dict;
        dict.clear();
        dict.extend(symbols[symbols.len().saturating_sub(WINDOW)..].iter().map(|&s| s as u8));
        z.set_dictionary(dict).map_err(|_| Invalid)?;
    }
    // The consumer resolves the speculative part while the rest is inflated.
    if !out(Part::Head { start: Some(start), symbols }) {
        return Ok(());
    }
    let result = inflate_pieces(shared, &mut z, &w.bytes, end.is_some(), out);
    scratch.framed = w.bytes;
    let Some(used) = result? else { return Ok(()) };
    let final_len = match end {
        Some(_) => None,
        None => Some(base + (from + used - framed_at) as u64),
    };
    out(Part::Tail { end, final_len });
    Ok(())
}

/// Inflates `framed` with `z` into pieces given to `out` as they fill, keeping the last
/// [`HOLD_BYTES`] or more until the end is checked: with `terminated`, it must end with
/// [`TERMINATOR`], which is dropped. Returns the framed bytes used, `None` when nobody listens.
fn inflate_pieces(
    shared: &Shared,
    z: &mut Decompress,
    framed: &[u8],
    terminated: bool,
    out: &mut dyn FnMut(Part) -> bool,
) -> Result<Option<usize>, Invalid> {
    // Full pieces not given yet (each holds the piece's capacity), and the one being filled.
    let mut held: VecDeque<Vec<u8>> = VecDeque::new();
    let mut piece = shared.take_piece();
    let mut made = 0usize;
    let give_back = |held: VecDeque<Vec<u8>>, piece: Vec<u8>| {
        for p in held.into_iter().chain([piece]) {
            shared.give_piece(p);
        }
    };
    loop {
        if piece.len() == piece.capacity() {
            made += piece.len();
            if made >= CHUNK_OUTPUT_MAX {
                give_back(held, piece);
                return Err(Invalid);
            }
            held.push_back(std::mem::replace(&mut piece, shared.take_piece()));
        }
        // Give what at least HOLD_BYTES follow.
        let mut after: usize = held.iter().map(Vec::len).sum::<usize>() + piece.len();
        while let Some(front) = held.front() {
            if after - front.len() < HOLD_BYTES {
                break;
            }
            after -= front.len();
            if !out(Part::Piece(held.pop_front().unwrap_or_default())) {
                return Ok(None);
            }
        }
        let consumed = z.total_in() as usize;
        let before = (z.total_in(), z.total_out());
        let status = z.decompress_vec(framed.get(consumed..).unwrap_or(&[]), &mut piece, FlushDecompress::None);
        let Ok(status) = status else {
            give_back(held, piece);
            return Err(Invalid);
        };
        if status == Status::StreamEnd {
            break;
        }
        if before == (z.total_in(), z.total_out()) && piece.len() < piece.capacity() {
            // Input ended before the stream did.
            give_back(held, piece);
            return Err(Invalid);
        }
    }
    let used = z.total_in() as usize;
    if terminated {
        // The terminator's bytes end the last piece, or straddle it and the full one before.
        let n = piece.len().min(TERMINATOR.len());
        let rest = TERMINATOR.len() - n;
        let ok = used == framed.len()
            && piece[piece.len() - n..] == TERMINATOR[rest..]
            && (rest == 0 || held.back().is_some_and(|h| h.len() >= rest && h[h.len() - rest..] == TERMINATOR[..rest]));
        if !ok {
            give_back(held, piece);
            return Err(Invalid);
        }
        piece.truncate(piece.len() - n);
        if let Some(h) = held.back_mut() {
            h.truncate(h.len() - rest);
        }
    }
    for p in held.into_iter().chain([piece]) {
        if p.is_empty() {
            shared.give_piece(p);
        } else if !out(Part::Piece(p)) {
            return Ok(None);
        }
    }
    Ok(Some(used))
}

struct Pipeline {
    setup: Setup,
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    results: Option<Receiver<Sent>>,
    /// Parts received before their chunk's turn.
    pending: BTreeMap<u64, VecDeque<Result<Part, Invalid>>>,
    /// The chunk being handed on, or next.
    next: u64,
    /// Whether chunk `next`'s head was taken (and its tail not yet).
    in_chunk: bool,
    /// Where the next chunk must start (`None`: the stream ended).
    expect: Option<u64>,
    /// The last 32 KiB handed on.
    history: Vec<u8>,
    /// Symbols to bytes: bytes to themselves, markers to the window's bytes.
    table: Vec<u8>,
    /// What is being handed on: a resolved speculative part, or a piece.
    current: Vec<u8>,
    current_is_piece: bool,
    /// The buffer for the next resolved speculative part.
    resolved: Vec<u8>,
    pos: usize,
    /// How far the core may be told the input is consumed.
    target_in: u64,
    /// The deflate data's length, once its end was handed on.
    ended: Option<u64>,
}

impl Pipeline {
    fn step(
        &mut self,
        input: &[u8],
        space: &mut [u8],
        rel_in: &mut u64,
        out: &mut u64,
    ) -> Result<(InflateStatus, usize, usize), Invalid> {
        loop {
            if self.pos < self.current.len() {
                let part = &self.current[self.pos..];
                let n = part.len().min(space.len());
                space[..n].copy_from_slice(&part[..n]);
                self.pos += n;
                *out += n as u64;
                let n_in = (self.target_in.saturating_sub(*rel_in)).min(input.len() as u64);
                *rel_in += n_in;
                return Ok((InflateStatus::Progress, n_in as usize, n));
            }
            if let Some(end) = self.ended {
                let n_in = end.saturating_sub(*rel_in).min(input.len() as u64);
                *rel_in += n_in;
                if *rel_in == end {
                    return Ok((InflateStatus::Done, n_in as usize, 0));
                }
                if n_in == 0 {
                    // The core's input ended before what was read here: let the replay judge.
                    return Err(Invalid);
                }
                return Ok((InflateStatus::Progress, n_in as usize, 0));
            }
            self.next_part(*out)?;
        }
    }

    /// Takes chunk `next`'s next part (waiting for it); called when all before is handed on.
    fn next_part(&mut self, out: u64) -> Result<(), Invalid> {
        let k = self.next;
        let part = loop {
            if let Some(p) = self.pending.get_mut(&k).and_then(VecDeque::pop_front) {
                break p?;
            }
            let (i, p) = self.results.as_ref().ok_or(Invalid)?.recv().map_err(|_| Invalid)?;
            self.pending.entry(i).or_default().push_back(p);
        };
        match part {
            Part::Head { start, symbols } => {
                if self.in_chunk || start != self.expect {
                    return Err(Invalid);
                }
                let Some(start) = start else { return Err(Invalid) };
                // Markers name bytes of the window before the chunk: those must exist (the
                // stream's first 32 KiB cannot reach further back than its start).
                let known = self.history.len();
                if known < WINDOW && symbols.iter().any(|&s| s >= MARKER && usize::from(s - MARKER) < WINDOW - known) {
                    return Err(Invalid);
                }
                let at = usize::from(MARKER) + WINDOW;
                self.table[at - known..at].copy_from_slice(&self.history);
                let mut resolved = std::mem::take(&mut self.resolved);
                resolved.clear();
                resolved.extend(symbols.iter().map(|&s| self.table[usize::from(s)]));
                if let Ok(mut pool) = self.shared.symbols.lock() {
                    pool.push(symbols);
                }
                self.in_chunk = true;
                self.target_in = self.target_in.max(start / 8);
                self.hand(resolved, false, out)
            }
            Part::Piece(piece) if self.in_chunk => self.hand(piece, true, out),
            Part::Tail { end, final_len } if self.in_chunk => {
                self.in_chunk = false;
                self.pending.remove(&k);
                self.next += 1;
                if let Ok(mut r) = self.shared.released.lock() {
                    *r = self.next;
                }
                self.shared.cv.notify_all();
                self.expect = end;
                if end.is_none() {
                    self.ended = Some(final_len.ok_or(Invalid)?);
                }
                CHUNKS_HANDED.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Part::Piece(_) | Part::Tail { .. } => Err(Invalid),
        }
    }

    /// Makes `part` the bytes being handed on (`out` handed on before it).
    fn hand(&mut self, part: Vec<u8>, is_piece: bool, out: u64) -> Result<(), Invalid> {
        if out.saturating_add(part.len() as u64) > self.setup.opts.max_inflated {
            // The core would stop inside this part: the replay reports it where it would.
            return Err(Invalid);
        }
        // History: the last 32 KiB of everything handed on.
        if part.len() >= WINDOW {
            self.history.clear();
            self.history.extend_from_slice(&part[part.len() - WINDOW..]);
        } else {
            self.history.extend_from_slice(&part);
            let excess = self.history.len().saturating_sub(WINDOW);
            self.history.drain(..excess);
        }
        let old = std::mem::replace(&mut self.current, part);
        if self.current_is_piece {
            self.shared.give_piece(old);
        } else {
            self.resolved = old;
        }
        self.current_is_piece = is_piece;
        self.pos = 0;
        Ok(())
    }
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        self.shared.stop_all();
        self.results = None;
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

/// What the replayed serial inflater did in the first member, call by call.
#[derive(Default)]
struct SpyLog {
    member: u32,
    out: u64,
    inp: u64,
    /// (output, input) totals after each call that wrote output.
    calls: VecDeque<(u64, u64)>,
    /// The totals when the member's deflate data ended.
    done: Option<(u64, u64)>,
    /// The output of the call that ended it (the core does not hand it on when the trailer
    /// that follows is refused).
    tail: Vec<u8>,
}

/// zlib-rs, logging its progress: the replay's inflater.
struct Spy {
    inner: ZlibRs,
    log: Arc<Mutex<SpyLog>>,
}

impl Inflate for Spy {
    fn reset(&mut self) {
        if let Ok(mut log) = self.log.lock() {
            log.member += 1;
        }
        self.inner.reset();
    }

    fn inflate(
        &mut self,
        input: &[u8],
        window: &mut [u8; WINDOW_SIZE],
        out_pos: usize,
        more_input: bool,
    ) -> (InflateStatus, usize, usize) {
        let r = self.inner.inflate(input, window, out_pos, more_input);
        if let Ok(mut log) = self.log.lock() {
            if log.member == 1 {
                log.out += r.2 as u64;
                log.inp += r.1 as u64;
                let totals = (log.out, log.inp);
                if r.2 > 0 {
                    log.calls.push_back(totals);
                }
                if r.0 == InflateStatus::Done {
                    log.done = Some(totals);
                    log.tail = window.get(out_pos..out_pos + r.2).unwrap_or(&[]).to_vec();
                }
            }
        }
        r
    }
}

/// A byte source reading a file by offset (the replay's own position, whatever the core's).
struct AtReader {
    file: Arc<File>,
    pos: u64,
}

impl io::Read for AtReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read_at(buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

fn din_of(done: Option<(u64, u64)>) -> u64 {
    done.map_or(0, |d| d.1)
}

/// The serial path replayed from the start of the file.
struct Shadow {
    container: Container<InputSource, Spy>,
    log: Arc<Mutex<SpyLog>>,
    start: u64,
    /// Output of the replay read so far.
    pos: u64,
    /// Output already handed on by the pipeline.
    skip: u64,
    /// The replay's error, once it failed (its container is not asked again).
    failed: Option<neff::error::StreamError>,
}

impl Shadow {
    fn open(setup: &Setup, skip: u64) -> Option<Self> {
        let log = Arc::new(Mutex::new(SpyLog::default()));
        let reader = BufReader::with_capacity(READ_BUFFER, AtReader { file: Arc::clone(&setup.file), pos: 0 });
        let source = InputSource::Reader(Box::new(reader), setup.file_size);
        // The core's own checks run on what is handed on; the replay only inflates.
        let opts = OpenOptions { max_inflated: u64::MAX, verify_integrity: false, ..setup.opts };
        let spy = Spy { inner: ZlibRs::new(), log: Arc::clone(&log) };
        let container = Container::open(source, Some(setup.file_size), &opts, spy, &mut |_: &neff::Warning| {}).ok()?;
        Some(Shadow { container, log, start: setup.start, pos: 0, skip, failed: None })
    }

    fn step(
        &mut self,
        input: &[u8],
        space: &mut [u8],
        rel_in: &mut u64,
        out: &mut u64,
    ) -> (InflateStatus, usize, usize) {
        use embedded_io::BufRead as _;
        loop {
            let done = self.log.lock().ok().and_then(|l| l.done);
            if let Some((dout, din)) = done {
                if self.pos >= dout && self.skip == 0 {
                    let n_in = din.saturating_sub(*rel_in).min(input.len() as u64);
                    *rel_in += n_in;
                    if *rel_in == din {
                        return (InflateStatus::Done, n_in as usize, 0);
                    }
                    if n_in == 0 {
                        return (InflateStatus::Truncated, 0, 0);
                    }
                    return (InflateStatus::Progress, n_in as usize, 0);
                }
            }
            let filled = match self.failed {
                Some(e) => Err(e),
                None => self.container.fill_buf().map(|b| b.len()),
            };
            match filled {
                Ok(0) => return (InflateStatus::Invalid(-1), 0, 0),
                Ok(len) => {
                    let mut avail = len as u64;
                    if let Some((dout, _)) = done {
                        avail = avail.min(dout.saturating_sub(self.pos));
                    }
                    if avail == 0 {
                        // The pipeline handed on more than the member holds: cannot happen.
                        return (InflateStatus::Invalid(-1), 0, 0);
                    }
                    if self.skip > 0 {
                        let n = self.skip.min(avail);
                        self.container.consume(n as usize);
                        self.skip -= n;
                        self.pos += n;
                        continue;
                    }
                    // Hand on bytes of one replayed call at a time, with its input total, so
                    // a limit the core checks on the output trips at the serial offset.
                    let (call_out, call_in) = {
                        let Ok(mut log) = self.log.lock() else { return (InflateStatus::Invalid(-1), 0, 0) };
                        while log.calls.front().is_some_and(|&(o, _)| o <= self.pos) {
                            log.calls.pop_front();
                        }
                        log.calls.front().copied().unwrap_or((u64::MAX, log.inp))
                    };
                    let n = avail.min(call_out - self.pos).min(space.len() as u64) as usize;
                    let Ok(bytes) = self.container.fill_buf() else { return (InflateStatus::Invalid(-1), 0, 0) };
                    space[..n].copy_from_slice(&bytes[..n]);
                    self.container.consume(n);
                    self.pos += n as u64;
                    *out += n as u64;
                    let n_in = call_in.saturating_sub(*rel_in).min(input.len() as u64);
                    *rel_in += n_in;
                    return (InflateStatus::Progress, n_in as usize, n);
                }
                Err(e) => {
                    self.failed = Some(e);
                    if let Some((dout, _)) = done {
                        // The member ended and what follows failed: the core here checks that
                        // itself. Hand on the rest of the member's output from the last call.
                        let Ok(log) = self.log.lock() else { return (InflateStatus::Invalid(-1), 0, 0) };
                        let left = dout.saturating_sub(self.pos);
                        let from = log.tail.len().saturating_sub(left as usize);
                        let skip = (self.skip.min(left)) as usize;
                        if skip > 0 {
                            self.skip -= skip as u64;
                            self.pos += skip as u64;
                            continue;
                        }
                        let n = (left as usize).min(space.len());
                        space[..n].copy_from_slice(&log.tail[from..from + n]);
                        self.pos += n as u64;
                        *out += n as u64;
                        let n_in = din_of(done).saturating_sub(*rel_in).min(input.len() as u64);
                        *rel_in += n_in;
                        return (InflateStatus::Progress, n_in as usize, n);
                    }
                    let status = match e.kind {
                        StreamKind::Gzip(GzipError::Inflate { status }) => InflateStatus::Invalid(status),
                        StreamKind::Truncated => InflateStatus::Truncated,
                        _ => InflateStatus::Invalid(-1),
                    };
                    // The core adds the input it is told about to its offset: bring it to the
                    // replay's, in as many calls as its buffer takes.
                    let target = e.offset.saturating_sub(self.start);
                    let n_in = target.saturating_sub(*rel_in).min(input.len() as u64);
                    *rel_in += n_in;
                    if *rel_in < target {
                        return (InflateStatus::Progress, n_in as usize, 0);
                    }
                    return (status, n_in as usize, 0);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use flate2::write::DeflateEncoder;
    use flate2::Compression;

    use super::*;

    /// Text-like bytes that compress some 4 to 1 in dynamic blocks.
    fn sample(len: usize) -> Vec<u8> {
        let words: [&[u8]; 8] = [b"tensor ", b"weight ", b"matmul ", b"bias ", b"0.125 ", b"\n", b"{\"k\": ", b"neff "];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut v = Vec::with_capacity(len + 8);
        while v.len() < len {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            v.extend_from_slice(words[(x % 8) as usize]);
            v.push((x >> 40) as u8);
        }
        v
    }

    #[test]
    fn chunks_in_flight_and_pieces_stay_bounded_behind_a_slow_consumer() {
        let data = sample(3 << 20);
        let mut e = DeflateEncoder::new(Vec::new(), Compression::new(6));
        e.write_all(&data).unwrap();
        let deflated = e.finish().unwrap();
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&deflated).unwrap();
        let len = deflated.len() as u64;
        let par = Parallelism { threads: 2, chunk: 16 << 10 };
        let setup = Setup { file: Arc::new(file), start: 0, len, file_size: len, opts: OpenOptions::default(), par };
        let mut p = start_pipeline(setup, &deflated).expect("pipeline");
        let (mut rel_in, mut out, mut got) = (0u64, 0u64, Vec::new());
        let mut space = [0u8; 4096];
        for i in 0u64.. {
            let (status, _, n) = p.step(&deflated, &mut space, &mut rel_in, &mut out).expect("served by the chunks");
            got.extend_from_slice(&space[..n]);
            if status == InflateStatus::Done {
                break;
            }
            // A consumer slower than the workers: without the bound they would run ahead.
            if i % 64 == 0 {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        assert!(got == data, "output differs");
        let chunks = p.next;
        assert!(chunks > 8, "{chunks} chunks");
        let ahead = p.shared.most_ahead.load(Ordering::Relaxed);
        assert!(ahead <= 2, "{ahead} chunks in flight with 2 threads");
        // Pieces are reused: those made are what two chunks in flight hold, not one per piece
        // handed on.
        let made = p.shared.pieces_made.load(Ordering::Relaxed);
        let handed = data.len() as u64 / p.shared.piece as u64;
        assert!(made * 4 < handed, "{made} pieces made for {handed} handed on");
    }
}
